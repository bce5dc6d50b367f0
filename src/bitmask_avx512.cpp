// AVX-512 (F + BW) mask kernels. A mask word maps straight onto a k-mask
// register, so each word is one or two masked stores of -inf that write only
// the disallowed lanes and never read the logits. Built with -mavx512f
// -mavx512bw (see CMakeLists.txt); without those flags the file is empty.
#include "bitmask_internal.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__)

#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_epi32() and trip
// -Wmaybe-uninitialized when inlined; the values are fully defined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cstdint>
#include <limits>

namespace grammask {
namespace internal {
namespace {

uint32_t valid_lanes(size_t count) noexcept {
  return count >= 32 ? ~uint32_t{0} : (uint32_t{1} << count) - 1;
}

void avx512_apply_f32(float* logits, size_t n, const uint32_t* words) noexcept {
  const __m512 blocked = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (size_t base = 0; base < n; base += 32) {
    const uint32_t blocked_lanes = ~words[base / 32] & valid_lanes(n - base);
    if (blocked_lanes == 0) continue;
    _mm512_mask_storeu_ps(logits + base, static_cast<__mmask16>(blocked_lanes), blocked);
    _mm512_mask_storeu_ps(logits + base + 16, static_cast<__mmask16>(blocked_lanes >> 16), blocked);
  }
}

void avx512_apply_u16(uint16_t* logits, size_t n, const uint32_t* words,
                      uint16_t blocked_value) noexcept {
  const __m512i blocked = _mm512_set1_epi16(static_cast<short>(blocked_value));
  for (size_t base = 0; base < n; base += 32) {
    const uint32_t blocked_lanes = ~words[base / 32] & valid_lanes(n - base);
    if (blocked_lanes == 0) continue;
    _mm512_mask_storeu_epi16(logits + base, static_cast<__mmask32>(blocked_lanes), blocked);
  }
}

size_t avx512_apply_candidates(TokenCandidate* candidates, size_t n_candidates,
                               const uint32_t* words, size_t n_tokens) noexcept {
  static_assert(sizeof(TokenCandidate) == 12, "ids are gathered with a stride of 3 ints");
  size_t allowed_count = 0;
  size_t i = 0;
  if (n_tokens <= static_cast<size_t>(INT32_MAX)) {
    const __m512i id_offsets =
        _mm512_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45);
    const __m512i width = _mm512_set1_epi32(static_cast<int>(n_tokens));
    const __m512i low_five = _mm512_set1_epi32(31);
    const __m512i one = _mm512_set1_epi32(1);
    const __m512 blocked = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    for (; i + 16 <= n_candidates; i += 16) {
      int* base = reinterpret_cast<int*>(candidates + i);
      const __m512i ids = _mm512_i32gather_epi32(id_offsets, base, 4);
      // Unsigned compare: negative ids wrap above any width.
      const __mmask16 in_range = _mm512_cmplt_epu32_mask(ids, width);
      const __m512i mask_words = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), in_range,
                                                             _mm512_srli_epi32(ids, 5), words, 4);
      const __m512i bit =
          _mm512_and_si512(_mm512_srlv_epi32(mask_words, _mm512_and_si512(ids, low_five)), one);
      const __mmask16 allowed = _mm512_mask_cmpeq_epi32_mask(in_range, bit, one);
      allowed_count += static_cast<size_t>(__builtin_popcount(allowed));
      const __mmask16 blocked_lanes = static_cast<__mmask16>(~allowed);
      if (blocked_lanes != 0) {
        // The logit field sits one int after the id.
        _mm512_mask_i32scatter_ps(base + 1, blocked_lanes, id_offsets, blocked, 4);
      }
    }
  }
  return allowed_count +
         scalar_kernels().apply_candidates(candidates + i, n_candidates - i, words, n_tokens);
}

const MaskKernels kAvx512Kernels = {avx512_apply_f32, avx512_apply_u16, avx512_apply_candidates};

}  // namespace

const MaskKernels* avx512_kernels() noexcept {
  return &kAvx512Kernels;
}

}  // namespace internal
}  // namespace grammask

#else

namespace grammask {
namespace internal {
const MaskKernels* avx512_kernels() noexcept {
  return nullptr;
}
}  // namespace internal
}  // namespace grammask

#endif
