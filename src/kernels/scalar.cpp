// The scalar mask kernels: every build has them, and the SIMD kernels use
// apply_word_* for their tails.
#include <cstring>
#include <limits>

#include "kernels/kernels.h"

namespace grammask {
namespace internal {
namespace {

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();
constexpr uint32_t kNegativeInfinityBits = 0xFF800000;

uint32_t valid_lanes(size_t count) noexcept {
  return count >= 32 ? ~uint32_t{0} : (uint32_t{1} << count) - 1;
}

void scalar_apply_f32(float* logits, size_t n, const uint32_t* words) noexcept {
  for (size_t base = 0; base < n; base += 32) {
    apply_word_f32(logits + base, n - base < 32 ? n - base : 32, words[base / 32]);
  }
}

void scalar_apply_u16(uint16_t* logits, size_t n, const uint32_t* words,
                      uint16_t blocked) noexcept {
  for (size_t base = 0; base < n; base += 32) {
    apply_word_u16(logits + base, n - base < 32 ? n - base : 32, words[base / 32], blocked);
  }
}

size_t scalar_apply_candidates(TokenCandidate* candidates, size_t n_candidates,
                               const uint32_t* words, size_t n_tokens) noexcept {
  if (n_tokens == 0) {  // nothing is allowed, and `words` may be empty
    for (size_t i = 0; i < n_candidates; ++i) candidates[i].logit = kNegativeInfinity;
    return 0;
  }
  size_t allowed = 0;
  for (size_t i = 0; i < n_candidates; ++i) {
    // Branch-free: with a mixed mask a branch would mispredict half the time.
    // A negative id converts to a huge one and fails the range check.
    const size_t id = static_cast<uint32_t>(candidates[i].id);
    const bool in_range = id < n_tokens;
    const uint32_t word = words[in_range ? id >> 5 : 0];
    const uint32_t ok = static_cast<uint32_t>(in_range) & (word >> (id & 31));
    allowed += ok & 1u;
    uint32_t bits;
    std::memcpy(&bits, &candidates[i].logit, sizeof(bits));
    bits = (ok & 1u) ? bits : kNegativeInfinityBits;
    std::memcpy(&candidates[i].logit, &bits, sizeof(bits));
  }
  return allowed;
}

const MaskKernels kScalarKernels = {scalar_apply_f32, scalar_apply_u16, scalar_apply_candidates};

}  // namespace

const MaskKernels& scalar_kernels() noexcept {
  return kScalarKernels;
}

// One store per blocked lane: cheap for the common near-full words. Words
// that block everything (closed vocabularies) are a plain fill.
void apply_word_f32(float* logits, size_t count, uint32_t word) noexcept {
  uint32_t blocked = ~word & valid_lanes(count);
  if (blocked == valid_lanes(count)) {
    for (size_t lane = 0; lane < count; ++lane) logits[lane] = kNegativeInfinity;
    return;
  }
  while (blocked != 0) {
    const unsigned lane = lowest_set_bit(blocked);
    logits[lane] = kNegativeInfinity;
    blocked &= blocked - 1;
  }
}

void apply_word_u16(uint16_t* logits, size_t count, uint32_t word,
                    uint16_t blocked_value) noexcept {
  uint32_t blocked = ~word & valid_lanes(count);
  if (blocked == valid_lanes(count)) {
    for (size_t lane = 0; lane < count; ++lane) logits[lane] = blocked_value;
    return;
  }
  while (blocked != 0) {
    const unsigned lane = lowest_set_bit(blocked);
    logits[lane] = blocked_value;
    blocked &= blocked - 1;
  }
}

}  // namespace internal
}  // namespace grammask
