#include "grammask/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace grammask {
namespace {
// The pool whose batch this thread is running, if any: a parallel_for on
// that pool from inside one of its tasks runs inline instead of waiting for
// the batch it is part of.
thread_local const void* running_pool = nullptr;
}  // namespace

struct ThreadPool::Impl {
  std::mutex batch_mutex;  // one batch at a time
  std::mutex mutex;
  std::condition_variable wake, done;
  std::vector<std::thread> workers;
  const std::function<void(size_t)>* task = nullptr;
  size_t n = 0;
  std::atomic<size_t> next{0};
  size_t generation = 0;
  size_t busy = 0;
  // Whether the batch of `generation` still takes workers: a worker that
  // wakes after its batch closed must not read task and n, which the next
  // batch may be writing, nor claim that batch's items for the old task.
  bool open = false;
  bool stopping = false;

  void run_items() {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) (*task)(i);
  }

  void worker_loop() {
    running_pool = this;
    size_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping) return;
      seen = generation;
      if (!open) continue;
      ++busy;
      lock.unlock();
      run_items();
      lock.lock();
      if (--busy == 0) done.notify_all();
    }
  }
};

ThreadPool::ThreadPool(size_t threads) : impl_(std::make_unique<Impl>()) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  try {
    for (size_t t = 1; t < threads; ++t)
      impl_->workers.emplace_back([this] { impl_->worker_loop(); });
  } catch (const std::system_error&) {
    // The system refused a thread: run with the workers that did start (the
    // calling thread always works too), rather than end the process.
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  for (std::thread& t : impl_->workers) t.join();
}

size_t ThreadPool::size() const noexcept {
  return impl_->workers.size() + 1;
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t)>& task) {
  if (running_pool == impl_.get()) {  // called from one of this pool's tasks
    for (size_t i = 0; i < n; ++i) task(i);
    return;
  }
  std::lock_guard<std::mutex> batch(impl_->batch_mutex);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->task = &task;
    impl_->n = n;
    impl_->next.store(0);
    ++impl_->generation;
    impl_->open = true;
  }
  impl_->wake.notify_all();
  const void* outer = running_pool;
  running_pool = impl_.get();
  impl_->run_items();
  running_pool = outer;
  std::unique_lock<std::mutex> lock(impl_->mutex);
  // Every item is claimed; wait for the workers still finishing theirs.
  impl_->done.wait(lock, [&] { return impl_->busy == 0; });
  impl_->open = false;
  impl_->task = nullptr;
}

}  // namespace grammask
