#include "mask/mask_cache.h"

#include <algorithm>
#include <utility>

namespace grammask {
namespace internal {

void MaskCache::clear() {
  by_structure_ = {};
  by_context_ = {};
  shapes_ = {};
  shape_bytes_ = 0;
  bytes_ = 0;
}

void MaskCache::remember_by_shape(uint32_t top_id, const std::vector<uint8_t>& needs, uint32_t id,
                                  const uint32_t* words, size_t n_words) {
  remember(by_context_, id, words, n_words);
  auto& shapes = shapes_[top_id];
  if (std::find(shapes.begin(), shapes.end(), needs) != shapes.end()) return;
  if (shapes.size() == kMaxShapes) {
    shape_bytes_ -= heap_bytes(shapes.front());
    shapes.erase(shapes.begin());
  }
  shapes.push_back(needs);
  shape_bytes_ += heap_bytes(shapes.back()) + sizeof(std::vector<uint8_t>);
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
