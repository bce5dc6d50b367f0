// NEON mask kernels for AArch64 (where NEON is always present). On other
// architectures the file is empty. Candidate arrays use the scalar kernel:
// NEON has no gather, and per-id work is dominated by the mask lookups.
#include "kernels/kernels.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include <arm_neon.h>

#include <cstdint>
#include <limits>

namespace grammask {
namespace internal {
namespace {

constexpr uint32_t kAllAllowed = ~uint32_t{0};

void neon_apply_f32(float* logits, size_t n, const uint32_t* words) noexcept {
  const float32x4_t blocked = vdupq_n_f32(-std::numeric_limits<float>::infinity());
  static const uint32_t kLaneBits[4] = {1, 2, 4, 8};
  const uint32x4_t lane_bit = vld1q_u32(kLaneBits);
  const size_t full_words = n / 32;
  for (size_t w = 0; w < full_words; ++w) {
    const uint32_t word = words[w];
    if (word == kAllAllowed) continue;
    float* block = logits + 32 * w;
    for (int k = 0; k < 8; ++k) {
      const uint32x4_t allowed = vtstq_u32(vdupq_n_u32(word >> (4 * k)), lane_bit);
      vst1q_f32(block + 4 * k, vbslq_f32(allowed, vld1q_f32(block + 4 * k), blocked));
    }
  }
  if (n % 32 != 0) apply_word_f32(logits + 32 * full_words, n % 32, words[full_words]);
}

void neon_apply_u16(uint16_t* logits, size_t n, const uint32_t* words,
                    uint16_t blocked_value) noexcept {
  const uint16x8_t blocked = vdupq_n_u16(blocked_value);
  static const uint16_t kLaneBits[8] = {1, 2, 4, 8, 16, 32, 64, 128};
  const uint16x8_t lane_bit = vld1q_u16(kLaneBits);
  const size_t full_words = n / 32;
  for (size_t w = 0; w < full_words; ++w) {
    const uint32_t word = words[w];
    if (word == kAllAllowed) continue;
    uint16_t* block = logits + 32 * w;
    for (int k = 0; k < 4; ++k) {
      const uint16x8_t bits = vdupq_n_u16(static_cast<uint16_t>((word >> (8 * k)) & 0xFF));
      const uint16x8_t allowed = vtstq_u16(bits, lane_bit);
      vst1q_u16(block + 8 * k, vbslq_u16(allowed, vld1q_u16(block + 8 * k), blocked));
    }
  }
  if (n % 32 != 0) {
    apply_word_u16(logits + 32 * full_words, n % 32, words[full_words], blocked_value);
  }
}

size_t neon_apply_candidates(TokenCandidate* candidates, size_t n_candidates, const uint32_t* words,
                             size_t n_tokens) noexcept {
  return scalar_kernels().apply_candidates(candidates, n_candidates, words, n_tokens);
}

// Function addresses only: constant-initialized, usable from any static initializer.
const MaskKernels kNeonKernels = {neon_apply_f32, neon_apply_u16, neon_apply_candidates};

}  // namespace

const MaskKernels* neon_kernels() noexcept {
  return &kNeonKernels;
}

}  // namespace internal
}  // namespace grammask

#else

namespace grammask {
namespace internal {
const MaskKernels* neon_kernels() noexcept {
  return nullptr;
}
}  // namespace internal
}  // namespace grammask

#endif
