// The walks a CompiledGrammar shares between its Matchers (internal):
// ClassWalks, by walk class and text cover; SharedWalks, by parser-state key.
// Both are thread-safe and only grow: a walk they hand out stays valid as long
// as the store. All the stores of one grammar draw on one WalkBudget.
#ifndef GRAMMASK_SRC_MASK_WALK_STORE_H_
#define GRAMMASK_SRC_MASK_WALK_STORE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "mask/key_hash.h"
#include "mask/pure_walk.h"
#include "mask/text_closure.h"
#include "vocab/text_slice.h"

namespace grammask {
namespace internal {

// The memory the walk stores of one CompiledGrammar may take, whatever the
// store (CompileOptions::max_cache_bytes). Thread-safe.
class WalkBudget {
 public:
  explicit WalkBudget(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Takes `bytes` and returns true if they fit in what is left; else takes
  // nothing and returns false.
  bool take(size_t bytes) {
    size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > max_bytes_ - used) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  // Returns `bytes` taken before.
  void give_back(size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  // The bytes taken now.
  size_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const size_t max_bytes_;
  std::atomic<size_t> used_{0};
};

// The walk of each class, shared by every Matcher of a CompiledGrammar:
// filled at compile time within the precompute budget, then by the first
// Matcher that needs one. Slots are published with a compare-and-swap and
// never change afterwards, so readers take no lock. A class has a slot per
// TextCover: how much of the text slice the states allow is a property of
// the states, not of the class (it looks past the class's pure stretch).
class ClassWalks {
 public:
  // Slots for classes [0, classes), drawing on `budget`, which must outlive
  // the store.
  ClassWalks(size_t classes, WalkBudget& budget);

  ~ClassWalks();

  ClassWalks(const ClassWalks&) = delete;
  ClassWalks& operator=(const ClassWalks&) = delete;

  const PureWalk* find(uint32_t cls, TextCover cover) const {
    return slots_[slot(cls, cover)].load(std::memory_order_acquire);
  }

  // Publishes `walk` for `cls` (taking it) and returns the walk now in the
  // slot, which is another thread's if it was first. Returns nullptr, and
  // leaves `walk` alone, when the budget has no room for it.
  const PureWalk* publish(uint32_t cls, TextCover cover, std::unique_ptr<PureWalk>& walk);
  // Heap bytes of the slots (the walks are counted by the budget).
  size_t slot_bytes() const noexcept { return size_ * sizeof(std::atomic<const PureWalk*>); }

 private:
  static size_t slot(uint32_t cls, TextCover cover) { return kTextCovers * size_t{cls} + cover; }
  std::unique_ptr<std::atomic<const PureWalk*>[]> slots_;
  size_t size_;
  WalkBudget* budget_;
};

// Walks keyed by parser-state content (a set of several walk classes, or a
// set's local key), shared by the Matchers of a CompiledGrammar under a
// reader-writer lock, within its WalkBudget. Entries are never removed, so
// the pointers handed out stay valid as long as the grammar.
class SharedWalks {
 public:
  // Draws on `budget`, which must outlive the store.
  explicit SharedWalks(WalkBudget& budget) : budget_(&budget) {}

  const PureWalk* find(const std::vector<uint64_t>& key) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = walks_.find(key);
    return it == walks_.end() ? nullptr : it->second.get();
  }

  // Publishes `walk` (taking it) and returns the walk now stored under
  // `key`, which is another thread's if it was first; nullptr, leaving
  // `walk` alone, when the budget has no room for it (and its key).
  const PureWalk* publish(const std::vector<uint64_t>& key, std::unique_ptr<PureWalk>& walk);

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::vector<uint64_t>, std::unique_ptr<const PureWalk>, KeyHash> walks_;
  WalkBudget* budget_;
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_WALK_STORE_H_
