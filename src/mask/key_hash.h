// A hash of word sequences (internal), for the hash maps keyed by parser-state
// content, and the tail such keys give the items in AnyOrder states.
#ifndef GRAMMASK_SRC_MASK_KEY_HASH_H_
#define GRAMMASK_SRC_MASK_KEY_HASH_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
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

// In a key whose other words are an Earley set's items (each a word below
// UINT64_MAX): the items in AnyOrder states follow, each as (its word, the
// members it wrote), sorted and deduplicated, after a UINT64_MAX word.
// Sorts `pairs`, which must not be empty.
inline void append_written_pairs(std::vector<std::pair<uint64_t, uint64_t>>& pairs,
                                 std::vector<uint64_t>& key) {
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  key.push_back(UINT64_MAX);
  for (const auto& [word, written] : pairs) {
    key.push_back(word);
    key.push_back(written);
  }
}

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_KEY_HASH_H_
