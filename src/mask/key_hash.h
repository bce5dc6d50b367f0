// A hash of word sequences (internal), for the hash maps keyed by parser-state
// content.
#ifndef GRAMMASK_SRC_MASK_KEY_HASH_H_
#define GRAMMASK_SRC_MASK_KEY_HASH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace grammask {
namespace internal {

struct KeyHash {
  size_t operator()(const std::vector<uint64_t>& key) const noexcept {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ key.size();
    for (uint64_t k : key) {
      h ^= k + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdULL;
    }
    return static_cast<size_t>(h ^ (h >> 32));
  }
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_KEY_HASH_H_
