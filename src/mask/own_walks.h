// OwnWalks (internal): the walks one Matcher keeps for itself, those that
// its grammar's shared walk stores had no room for, within one memory budget:
// a walk that would pass it first empties the store, and every pointer it
// handed out before is then invalid (a walk larger than the budget is kept
// alone). Not thread-safe.
#ifndef GRAMMASK_SRC_MASK_OWN_WALKS_H_
#define GRAMMASK_SRC_MASK_OWN_WALKS_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "base/memory_bytes.h"
#include "mask/key_hash.h"
#include "mask/pure_walk.h"
#include "mask/text_closure.h"
#include "vocab/text_slice.h"

namespace grammask {
namespace internal {

// Walks by kind (a tag below kKinds: the kinds of key a Matcher shares
// walks under) and key.
class OwnWalks {
 public:
  // Keeps at most `max_bytes` of walks (or the one walk kept last).
  explicit OwnWalks(size_t max_bytes) : max_bytes_(max_bytes) {}
  static constexpr uint64_t kKinds = 1 + kTextCovers;

  // The walk kept under (kind, key), or nullptr.
  const PureWalk* find(uint64_t kind, const std::vector<uint64_t>& key) const {
    const Walks& walks = walks_[kind];
    auto it = walks.find(key);
    return it == walks.end() ? nullptr : &it->second;
  }
  // Keeps `walk` under (kind, key) and returns it.
  const PureWalk* keep(uint64_t kind, const std::vector<uint64_t>& key, PureWalk&& walk);

  // Heap bytes: the walks, their keys and the tables.
  size_t memory_bytes() const noexcept {
    size_t bytes = bytes_;
    for (const Walks& walks : walks_) bytes += hash_container_bytes(walks);
    return bytes;
  }

 private:
  using Walks = std::unordered_map<std::vector<uint64_t>, PureWalk, KeyHash>;
  Walks walks_[kKinds];
  size_t max_bytes_;
  size_t bytes_ = 0;  // of every walk and key kept
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_OWN_WALKS_H_
