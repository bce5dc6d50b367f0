// MaskCache (internal): the masks one Matcher computed, kept for the parser
// states that give the same mask, within one memory budget: an entry that
// would pass it first empties the cache, and one larger than the budget is
// not kept. Not thread-safe.
#ifndef GRAMMASK_SRC_MASK_MASK_CACHE_H_
#define GRAMMASK_SRC_MASK_MASK_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/memory_bytes.h"
#include "mask/cached_mask.h"
#include "mask/state_ids.h"

namespace grammask {
namespace internal {

// Masks by context id (StateIds::context_id), for walks that read at most
// kMaxContextDepth sets below the top, kept without stop tokens; and by
// structure id (StateIds::structure_id), for the others, kept whole.
class MaskCache {
 public:
  // Keeps at most `max_bytes` of masks.
  explicit MaskCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The mask kept for a top set whose context id at depth d is id_at(d), if
  // one was kept at some depth, shallowest first; else nullptr. Calls
  // id_at(1) first, then id_at(d) only for depths that hold entries.
  template <typename IdAt>
  const CachedMask* find_by_context(const IdAt& id_at) const {
    // (Sets that agree at some depth agree at depth 1: a top set whose id
    // there is new has no entry at any depth.)
    const bool seen_top = context_depths_ != 0 && context_tops_.count(id_at(1)) != 0;
    for (size_t depth = 1; seen_top && depth <= kMaxContextDepth; ++depth) {
      if ((context_depths_ & (1u << depth)) == 0) continue;
      auto bounded = by_context_.find(id_at(depth));
      if (bounded == by_context_.end()) continue;
      return &bounded->second;
    }
    return nullptr;
  }
  // Heap bytes: the masks and the tables that find them.
  size_t memory_bytes() const noexcept {
    return bytes_ + hash_container_bytes(by_structure_) + hash_container_bytes(by_context_) +
           hash_container_bytes(context_tops_) + heap_bytes(scratch_);
  }

  // Drops every mask kept.
  void clear();

  // Whether any mask is kept by structure id (else there is no need to
  // compute one).
  bool has_structure_entries() const { return !by_structure_.empty(); }
  // The mask kept for structure id `id`, or nullptr.
  const CachedMask* find_by_structure(uint32_t id) const {
    auto cached = by_structure_.find(id);
    return cached == by_structure_.end() ? nullptr : &cached->second;
  }

  // Keeps words[0, n_words) by context id `id` at `depth` (1 to
  // kMaxContextDepth); `top_id` is the set's context id at depth 1.
  void remember_by_context(uint32_t id, size_t depth, uint32_t top_id, const uint32_t* words,
                           size_t n_words);
  // Keeps words[0, n_words) by structure id `id`.
  void remember_by_structure(uint32_t id, const uint32_t* words, size_t n_words);

 private:
  void remember(std::unordered_map<uint32_t, CachedMask>& cache, uint32_t id, const uint32_t* words,
                size_t n_words);

  std::unordered_map<uint32_t, CachedMask> by_structure_;
  std::unordered_map<uint32_t, CachedMask> by_context_;
  std::unordered_set<uint32_t> context_tops_;  // the entries' context ids at depth 1
  uint32_t context_depths_ = 0;                // bit d: some entry has depth d
  size_t max_bytes_;
  size_t bytes_ = 0;               // of both maps' masks
  std::vector<uint32_t> scratch_;  // for making entries
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_MASK_CACHE_H_
