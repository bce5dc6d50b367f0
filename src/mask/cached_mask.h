// CachedMask (internal): one mask as a Matcher's mask cache keeps it, sparse
// when few of its words are nonzero.
#ifndef GRAMMASK_SRC_MASK_CACHED_MASK_H_
#define GRAMMASK_SRC_MASK_CACHED_MASK_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace grammask {
namespace internal {

// A copy of a mask: its nonzero words as (index, word) pairs when fewer than
// an eighth of its words are nonzero, else all its words. Making one reads
// the mask once; writing it back costs O(words).
class CachedMask {
 public:
  // `scratch` is working room that the caller keeps between masks.
  CachedMask(const uint32_t* words, size_t n_words, std::vector<uint32_t>& scratch);

  // Writes the mask over all of words[0, n_words) (n_words is at least the
  // count it was made from).
  void write_over(uint32_t* words, size_t n_words) const {
    if (!sparse_) {
      std::copy(data_.begin(), data_.end(), words);
      std::fill(words + data_.size(), words + n_words, 0);
      return;
    }
    std::fill(words, words + n_words, 0);
    for (size_t i = 0; i < data_.size(); i += 2) words[data_[i]] = data_[i + 1];
  }

  size_t bytes() const { return data_.size() * sizeof(uint32_t); }

 private:
  std::vector<uint32_t> data_;
  bool sparse_ = false;
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_CACHED_MASK_H_
