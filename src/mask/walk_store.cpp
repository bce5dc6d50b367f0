#include "mask/walk_store.h"

namespace grammask {
namespace internal {

ClassWalks::ClassWalks(size_t classes, WalkBudget& budget)
    : slots_(std::make_unique<std::atomic<const PureWalk*>[]>(kTextCovers * classes)),
      size_(kTextCovers * classes),
      budget_(&budget) {
  for (size_t i = 0; i < size_; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
}

ClassWalks::~ClassWalks() {
  for (size_t i = 0; i < size_; ++i) delete slots_[i].load(std::memory_order_relaxed);
}

const PureWalk* ClassWalks::publish(uint32_t cls, TextCover cover,
                                    std::unique_ptr<PureWalk>& walk) {
  const size_t bytes = walk->memory();
  if (!budget_->take(bytes)) return nullptr;
  const PureWalk* expected = nullptr;
  if (slots_[slot(cls, cover)].compare_exchange_strong(expected, walk.get(),
                                                       std::memory_order_acq_rel)) {
    return walk.release();
  }
  budget_->give_back(bytes);
  walk.reset();
  return expected;
}

const PureWalk* SharedWalks::publish(const std::vector<uint64_t>& key,
                                     std::unique_ptr<PureWalk>& walk) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  if (auto it = walks_.find(key); it != walks_.end()) {
    walk.reset();
    return it->second.get();
  }
  if (!budget_->take(walk->memory() + key.size() * sizeof(uint64_t))) return nullptr;
  const PureWalk* stored = walk.get();
  walks_.emplace(key, std::move(walk));
  return stored;
}

}  // namespace internal
}  // namespace grammask
