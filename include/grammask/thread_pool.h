// A fixed pool of worker threads for batched work, such as fill_masks
// (matcher.h) over many Matchers.
#ifndef GRAMMASK_THREAD_POOL_H_
#define GRAMMASK_THREAD_POOL_H_

#include <cstddef>
#include <functional>
#include <memory>

namespace grammask {

// A fixed set of worker threads for batched mask computation, started once
// and reused by every fill_masks call that is given it. Thread-safe: calls
// from several threads on one pool run one batch at a time, in turn.
class ThreadPool {
 public:
  // threads == 0: hardware concurrency. The calling thread also works, so a
  // pool of n threads starts n - 1 workers; if the system refuses to start
  // some, the pool runs with those that started (size() says how many).
  explicit ThreadPool(size_t threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  size_t size() const noexcept;

  // Runs task(i) once for each i in [0, n), on the calling thread and the
  // workers, in no set order, and returns when all have run. `task` must not
  // throw. A task may call parallel_for on the same pool: that inner call
  // runs its items on the calling thread, in order. No allocation.
  void parallel_for(size_t n, const std::function<void(size_t)>& task);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grammask

#endif  // GRAMMASK_THREAD_POOL_H_
