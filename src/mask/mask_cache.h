// MaskCache (internal): the masks one Matcher computed, kept for the parser
// states that give the same mask, within one memory budget: an entry that
// would pass it first empties the cache, and one larger than the budget is
// not kept. Not thread-safe.
#ifndef GRAMMASK_SRC_MASK_MASK_CACHE_H_
#define GRAMMASK_SRC_MASK_MASK_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "base/memory_bytes.h"
#include "mask/cached_mask.h"
#include "mask/state_ids.h"

namespace grammask {
namespace internal {

// Masks by shaped context id (StateIds::shaped_context_id), for walks that
// read at most kMaxContextDepth - 1 chain links below each item's origin,
// kept without stop tokens; and by structure id (StateIds::structure_id),
// for the others, kept whole.
class MaskCache {
 public:
  // Keeps at most `max_bytes` of masks.
  explicit MaskCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The mask kept for a top set whose context id at depth 1 is `top_id`,
  // under the shaped context id id_of(needs) of one of the shapes kept for
  // it (StateIds::item_needs), most recent first; else nullptr.
  template <typename IdOf>
  const CachedMask* find_by_shape(uint32_t top_id, const IdOf& id_of) const {
    auto shapes = shapes_.find(top_id);
    if (shapes == shapes_.end()) return nullptr;
    for (size_t i = shapes->second.size(); i-- > 0;) {
      auto bounded = by_context_.find(id_of(shapes->second[i]));
      if (bounded != by_context_.end()) return &bounded->second;
    }
    return nullptr;
  }
  // Heap bytes: the masks and the tables that find them.
  size_t memory_bytes() const noexcept {
    return bytes_ + shape_bytes_ + hash_container_bytes(by_structure_) +
           hash_container_bytes(by_context_) + hash_container_bytes(shapes_) + heap_bytes(scratch_);
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

  // Keeps words[0, n_words) by shaped context id `id`, of shape `needs`,
  // for a top set whose context id at depth 1 is `top_id`. At most
  // kMaxShapes shapes are kept per top set (the oldest is dropped).
  void remember_by_shape(uint32_t top_id, const std::vector<uint8_t>& needs, uint32_t id,
                         const uint32_t* words, size_t n_words);
  // Keeps words[0, n_words) by structure id `id`.
  void remember_by_structure(uint32_t id, const uint32_t* words, size_t n_words);

 private:
  void remember(std::unordered_map<uint32_t, CachedMask>& cache, uint32_t id, const uint32_t* words,
                size_t n_words);

  std::unordered_map<uint32_t, CachedMask> by_structure_;
  static constexpr size_t kMaxShapes = 8;
  std::unordered_map<uint32_t, CachedMask> by_context_;
  // By context id at depth 1: the shapes of the entries kept for it.
  std::unordered_map<uint32_t, std::vector<std::vector<uint8_t>>> shapes_;
  size_t shape_bytes_ = 0;  // of shapes_' vectors
  size_t max_bytes_;
  size_t bytes_ = 0;               // of both maps' masks
  std::vector<uint32_t> scratch_;  // for making entries
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_MASK_CACHE_H_
