// The per-instruction-set kernels behind include/grammask/bitmask.h
// (internal). Each ISA lives in its own file, compiled with that ISA's
// flags; dispatch.cpp picks one at run time after checking the CPU. Every
// kernel has the contract of the bitmask.h function it implements
// (docs/architecture.md, "The mask kernels").
#ifndef GRAMMASK_SRC_KERNELS_KERNELS_H_
#define GRAMMASK_SRC_KERNELS_KERNELS_H_

#include <cstddef>
#include <cstdint>

#include "base/bits.h"
#include "grammask/bitmask.h"

namespace grammask {
namespace internal {

struct MaskKernels {
  void (*apply_f32)(float* logits, size_t n, const uint32_t* words) noexcept;
  // Writes `blocked` (the format's -inf) over disallowed 16-bit values.
  void (*apply_u16)(uint16_t* logits, size_t n, const uint32_t* words, uint16_t blocked) noexcept;
  size_t (*apply_candidates)(TokenCandidate* candidates, size_t n_candidates, const uint32_t* words,
                             size_t n_tokens) noexcept;
};

// Always available.
const MaskKernels& scalar_kernels() noexcept;
// Null when this build has no such path (the file was compiled without the
// ISA's flags, or for another architecture). The CPU check is the caller's.
const MaskKernels* avx2_kernels() noexcept;
const MaskKernels* avx512_kernels() noexcept;
const MaskKernels* neon_kernels() noexcept;

// Scalar functions for the last partial word of the AVX2 and NEON paths:
// apply one word's bits to `count` (<= 32) values.
void apply_word_f32(float* logits, size_t count, uint32_t word) noexcept;
void apply_word_u16(uint16_t* logits, size_t count, uint32_t word, uint16_t blocked) noexcept;
// Is the candidate's id allowed by a mask of width n_tokens?
inline bool candidate_allowed(int32_t id, const uint32_t* words, size_t n_tokens) noexcept {
  return id >= 0 && static_cast<size_t>(id) < n_tokens && test_bit(words, static_cast<size_t>(id));
}

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_KERNELS_KERNELS_H_
