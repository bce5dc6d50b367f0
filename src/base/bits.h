// Bit tricks on mask words shared by the vocabulary and the mask kernels.
#ifndef GRAMMASK_SRC_BASE_BITS_H_
#define GRAMMASK_SRC_BASE_BITS_H_

#include <cstdint>

namespace grammask::internal {

// The index of the lowest set bit of x. Precondition: x != 0.
inline unsigned lowest_set_bit(uint32_t x) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return static_cast<unsigned>(__builtin_ctz(x));
#else
  unsigned lane = 0;
  while (!((x >> lane) & 1u)) ++lane;
  return lane;
#endif
}

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_BASE_BITS_H_
