// AVX-512 (F + BW) mask kernels. A mask word maps straight onto a k-mask
// register, so each word is one or two masked stores of -inf that write only
// the disallowed lanes and never read the logits. Built with -mavx512f
// -mavx512bw (see CMakeLists.txt); without those flags the file is empty.
#include "kernels/kernels.h"

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
    if (n - base >= 32) {
      __m512i* p = reinterpret_cast<__m512i*>(logits + base);
      _mm512_storeu_si512(p, _mm512_mask_mov_epi16(_mm512_loadu_si512(p),
                                                   static_cast<__mmask32>(blocked_lanes), blocked));
      continue;
    }
    _mm512_mask_storeu_epi16(logits + base, static_cast<__mmask32>(blocked_lanes), blocked);
  }
}

// Sixteen candidates are 48 ints in three registers A, B, C: candidate k
// has its id at int 3k and its logit at int 3k + 1. Ids are pulled out with
// two-register permutes (no gather); only the mask words need a gather.
// Logits: k = 0-4 in A lanes 1,4,...,13; k = 5-10 in B lanes 0,3,...,15;
// k = 11-15 in C lanes 2,5,...,14. kSpread maps blocked-candidate bits to
// those lane masks.
struct SpreadTables {
  uint16_t a[32];
  uint16_t b[64];
  uint16_t c[32];
};

constexpr uint16_t spread(uint32_t bits, int count, int first_lane) {
  uint32_t lanes = 0;
  for (int k = 0; k < count; ++k) {
    if ((bits >> k) & 1) lanes |= uint32_t{1} << (first_lane + 3 * k);
  }
  return static_cast<uint16_t>(lanes);
}

constexpr SpreadTables make_spread_tables() {
  SpreadTables tables{};
  for (uint32_t bits = 0; bits < 32; ++bits) {
    tables.a[bits] = spread(bits, 5, 1);
    tables.c[bits] = spread(bits, 5, 2);
  }
  for (uint32_t bits = 0; bits < 64; ++bits) tables.b[bits] = spread(bits, 6, 0);
  return tables;
}

constexpr SpreadTables kSpread = make_spread_tables();

size_t avx512_apply_candidates(TokenCandidate* candidates, size_t n_candidates,
                               const uint32_t* words, size_t n_tokens) noexcept {
  static_assert(sizeof(TokenCandidate) == 12, "a candidate is three 32-bit fields");
  size_t allowed_count = 0;
  size_t i = 0;
  if (n_tokens <= static_cast<size_t>(INT32_MAX)) {
    // Ids of k = 0-10 from A and B (B lanes numbered 16+), then k = 11-15 from C.
    const __m512i ids_from_ab =
        _mm512_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 0, 0, 0, 0, 0);
    const __m512i ids_then_c =
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17, 20, 23, 26, 29);
    const __m512i width = _mm512_set1_epi32(static_cast<int>(n_tokens));
    const __m512i low_five = _mm512_set1_epi32(31);
    const __m512i one = _mm512_set1_epi32(1);
    const __m512 blocked_value = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    const __m512i lane_index =
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (; i + 16 <= n_candidates; i += 16) {
      float* base = reinterpret_cast<float*>(candidates + i);
      const __m512 a = _mm512_loadu_ps(base);
      const __m512 b = _mm512_loadu_ps(base + 16);
      const __m512 c = _mm512_loadu_ps(base + 32);
      const __m512i ids = _mm512_permutex2var_epi32(
          _mm512_permutex2var_epi32(_mm512_castps_si512(a), ids_from_ab, _mm512_castps_si512(b)),
          ids_then_c, _mm512_castps_si512(c));
      __mmask16 allowed;
      const int32_t first = candidates[i].id;
      if (first >= 0 && static_cast<size_t>(first) + 16 <= n_tokens &&
          _mm512_cmpeq_epi32_mask(ids, _mm512_add_epi32(_mm512_set1_epi32(first), lane_index)) ==
              0xFFFF) {
        // Consecutive ids (an array still in vocabulary order, the usual
        // case): their bits sit side by side in at most two mask words.
        const uint64_t pair = words[first >> 5] | uint64_t{words[(first + 15) >> 5]} << 32;
        allowed = static_cast<__mmask16>(pair >> (first & 31));
      } else {
        // Unsigned compare: negative ids wrap above any width.
        const __mmask16 in_range = _mm512_cmplt_epu32_mask(ids, width);
        const __m512i mask_words = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), in_range,
                                                               _mm512_srli_epi32(ids, 5), words, 4);
        const __m512i bit =
            _mm512_and_si512(_mm512_srlv_epi32(mask_words, _mm512_and_si512(ids, low_five)), one);
        allowed = _mm512_mask_cmpeq_epi32_mask(in_range, bit, one);
      }
      allowed_count += static_cast<size_t>(__builtin_popcount(allowed));
      const uint32_t blocked = static_cast<uint16_t>(~allowed);
      _mm512_storeu_ps(base, _mm512_mask_mov_ps(a, kSpread.a[blocked & 31], blocked_value));
      _mm512_storeu_ps(base + 16,
                       _mm512_mask_mov_ps(b, kSpread.b[(blocked >> 5) & 63], blocked_value));
      _mm512_storeu_ps(base + 32, _mm512_mask_mov_ps(c, kSpread.c[blocked >> 11], blocked_value));
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
