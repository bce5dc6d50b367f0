#include "mask/mask_cache.h"

#include <utility>

namespace grammask {
namespace internal {

void MaskCache::clear() {
  by_structure_ = {};
  by_context_ = {};
  context_tops_ = {};
  context_depths_ = 0;
  bytes_ = 0;
}

void MaskCache::remember_by_context(uint32_t id, size_t depth, uint32_t top_id,
                                    const uint32_t* words, size_t n_words) {
  remember(by_context_, id, words, n_words);
  context_depths_ |= 1u << depth;
  context_tops_.insert(top_id);
}

void MaskCache::remember_by_structure(uint32_t id, const uint32_t* words, size_t n_words) {
  remember(by_structure_, id, words, n_words);
}

void MaskCache::remember(std::unordered_map<uint32_t, CachedMask>& cache, uint32_t id,
                         const uint32_t* words, size_t n_words) {
  CachedMask entry(words, n_words, scratch_);
  if (entry.bytes() > max_bytes_) return;
  if (bytes_ + entry.bytes() > max_bytes_) clear();
  bytes_ += entry.bytes();
  cache.emplace(id, std::move(entry));
}

}  // namespace internal
}  // namespace grammask
