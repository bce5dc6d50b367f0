// A set of bytes as 256 bits: what an Earley set can scan next.
#ifndef GRAMMASK_SRC_BASE_BYTE_SET_H_
#define GRAMMASK_SRC_BASE_BYTE_SET_H_

#include <cstdint>

namespace grammask::internal {

struct ByteSet {
  uint64_t bits[4] = {0, 0, 0, 0};

  bool test(uint8_t b) const noexcept { return (bits[b >> 6] >> (b & 63)) & 1; }
  void set(uint8_t b) noexcept { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  // Sets [first, last]; nothing if first > last.
  void set_range(uint8_t first, uint8_t last) noexcept {
    for (unsigned word = first >> 6; first <= last && word <= static_cast<unsigned>(last >> 6);
         ++word) {
      const unsigned lo = word == static_cast<unsigned>(first >> 6) ? first & 63 : 0;
      const unsigned hi = word == static_cast<unsigned>(last >> 6) ? last & 63 : 63;
      bits[word] |= (~uint64_t{0} >> (63 - hi)) & (~uint64_t{0} << lo);
    }
  }
  bool empty() const noexcept { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  ByteSet& operator|=(const ByteSet& o) noexcept {
    for (int i = 0; i < 4; ++i) bits[i] |= o.bits[i];
    return *this;
  }
  friend bool operator==(const ByteSet& a, const ByteSet& b) noexcept {
    return a.bits[0] == b.bits[0] && a.bits[1] == b.bits[1] && a.bits[2] == b.bits[2] &&
           a.bits[3] == b.bits[3];
  }
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_BASE_BYTE_SET_H_
