// AVX2 mask kernels. Built with -mavx2 (see CMakeLists.txt); run only after
// dispatch.cpp has checked the CPU. Without those flags the file is empty.
#include "kernels/kernels.h"

#if defined(__x86_64__) && defined(__AVX2__)

#include <immintrin.h>

#include <cstdint>
#include <limits>

namespace grammask {
namespace internal {
namespace {

// Words that allow everything or nothing are common (free text, a closed
// string): they skip the per-lane work.
constexpr uint32_t kAllAllowed = ~uint32_t{0};

void avx2_apply_f32(float* logits, size_t n, const uint32_t* words) noexcept {
  const __m256 blocked = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  // Group k of 8 lanes shifts bit 8k + lane of the word into the sign bit,
  // which is what blendv selects on: one broadcast per word, one shift per
  // 8 lanes (no and/compare).
  __m256i to_sign[4];
  for (int k = 0; k < 4; ++k)
    to_sign[k] = _mm256_sub_epi32(_mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24),
                                  _mm256_set1_epi32(8 * k));
  const size_t full_words = n / 32;
  for (size_t w = 0; w < full_words; ++w) {
    const uint32_t word = words[w];
    if (word == kAllAllowed) continue;
    float* block = logits + 32 * w;
    if (word == 0) {
      for (int k = 0; k < 4; ++k) _mm256_storeu_ps(block + 8 * k, blocked);
      continue;
    }
    const __m256i bits = _mm256_set1_epi32(static_cast<int>(word));
    for (int k = 0; k < 4; ++k) {
      const __m256i allowed = _mm256_sllv_epi32(bits, to_sign[k]);
      const __m256 values = _mm256_loadu_ps(block + 8 * k);
      _mm256_storeu_ps(block + 8 * k,
                       _mm256_blendv_ps(blocked, values, _mm256_castsi256_ps(allowed)));
    }
  }
  if (n % 32 != 0) apply_word_f32(logits + 32 * full_words, n % 32, words[full_words]);
}

void avx2_apply_u16(uint16_t* logits, size_t n, const uint32_t* words,
                    uint16_t blocked_value) noexcept {
  const __m256i blocked = _mm256_set1_epi16(static_cast<short>(blocked_value));
  const __m256i lane_bit = _mm256_setr_epi16(1 << 0, 1 << 1, 1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6,
                                             1 << 7, 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12,
                                             1 << 13, 1 << 14, static_cast<short>(1 << 15));
  const size_t full_words = n / 32;
  for (size_t w = 0; w < full_words; ++w) {
    const uint32_t word = words[w];
    if (word == kAllAllowed) continue;
    uint16_t* block = logits + 32 * w;
    auto* vectors = reinterpret_cast<__m256i*>(block);
    if (word == 0) {
      _mm256_storeu_si256(vectors, blocked);
      _mm256_storeu_si256(vectors + 1, blocked);
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      const __m256i bits = _mm256_set1_epi16(static_cast<short>(word >> (16 * k)));
      const __m256i allowed = _mm256_cmpeq_epi16(_mm256_and_si256(bits, lane_bit), lane_bit);
      const __m256i values = _mm256_loadu_si256(vectors + k);
      _mm256_storeu_si256(vectors + k, _mm256_blendv_epi8(blocked, values, allowed));
    }
  }
  if (n % 32 != 0) {
    apply_word_u16(logits + 32 * full_words, n % 32, words[full_words], blocked_value);
  }
}

// Eight candidates are 24 ints in three registers A, B, C: candidate k has
// its id at int 3k and its logit at int 3k + 1. Ids are pulled out with
// permutes (no gather); only the mask words need a gather.
size_t avx2_apply_candidates(TokenCandidate* candidates, size_t n_candidates, const uint32_t* words,
                             size_t n_tokens) noexcept {
  static_assert(sizeof(TokenCandidate) == 12, "a candidate is three 32-bit fields");
  size_t allowed_count = 0;
  size_t i = 0;
  // Signed 32-bit compares below need the width to fit in an int32.
  if (n_tokens <= static_cast<size_t>(INT32_MAX)) {
    // Ids: k = 0-2 in A lanes 0,3,6; k = 3-5 in B lanes 1,4,7; k = 6-7 in C lanes 2,5.
    const __m256i ids_from_a = _mm256_setr_epi32(0, 3, 6, 0, 0, 0, 0, 0);
    const __m256i ids_from_b = _mm256_setr_epi32(0, 0, 0, 1, 4, 7, 0, 0);
    const __m256i ids_from_c = _mm256_setr_epi32(0, 0, 0, 0, 0, 0, 2, 5);
    // Logits: k = 0-2 in A lanes 1,4,7; k = 3-4 in B lanes 2,5; k = 5-7 in C lanes 0,3,6.
    const __m256i to_a = _mm256_setr_epi32(0, 0, 0, 0, 1, 0, 0, 2);
    const __m256i to_b = _mm256_setr_epi32(0, 0, 3, 0, 0, 4, 0, 0);
    const __m256i to_c = _mm256_setr_epi32(5, 0, 0, 6, 0, 0, 7, 0);
    const __m256i logit_lanes_a = _mm256_setr_epi32(0, -1, 0, 0, -1, 0, 0, -1);
    const __m256i logit_lanes_b = _mm256_setr_epi32(0, 0, -1, 0, 0, -1, 0, 0);
    const __m256i logit_lanes_c = _mm256_setr_epi32(-1, 0, 0, -1, 0, 0, -1, 0);
    const __m256 blocked_value = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    const __m256i width = _mm256_set1_epi32(static_cast<int>(n_tokens));
    const __m256i minus_one = _mm256_set1_epi32(-1);
    const __m256i low_five = _mm256_set1_epi32(31);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i lane_index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    for (; i + 8 <= n_candidates; i += 8) {
      float* base = reinterpret_cast<float*>(candidates + i);
      const __m256 a = _mm256_loadu_ps(base);
      const __m256 b = _mm256_loadu_ps(base + 8);
      const __m256 c = _mm256_loadu_ps(base + 16);
      const __m256i ids = _mm256_blend_epi32(
          _mm256_blend_epi32(_mm256_permutevar8x32_epi32(_mm256_castps_si256(a), ids_from_a),
                             _mm256_permutevar8x32_epi32(_mm256_castps_si256(b), ids_from_b), 0x38),
          _mm256_permutevar8x32_epi32(_mm256_castps_si256(c), ids_from_c), 0xC0);
      __m256i allowed;
      const int32_t first = candidates[i].id;
      if (first >= 0 && static_cast<size_t>(first) + 8 <= n_tokens &&
          _mm256_movemask_epi8(_mm256_cmpeq_epi32(
              ids, _mm256_add_epi32(_mm256_set1_epi32(first), lane_index))) == -1) {
        // Consecutive ids (an array still in vocabulary order, the usual
        // case): their bits sit side by side in at most two mask words.
        const uint64_t pair = words[first >> 5] | uint64_t{words[(first + 7) >> 5]} << 32;
        const int bits = static_cast<int>((pair >> (first & 31)) & 0xFF);
        allowed = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(bits), lane_bit), lane_bit);
      } else {
        const __m256i in_range =
            _mm256_and_si256(_mm256_cmpgt_epi32(ids, minus_one), _mm256_cmpgt_epi32(width, ids));
        const __m256i mask_words =
            _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), reinterpret_cast<const int*>(words),
                                        _mm256_srli_epi32(ids, 5), in_range, 4);
        const __m256i bit =
            _mm256_and_si256(_mm256_srlv_epi32(mask_words, _mm256_and_si256(ids, low_five)), one);
        allowed = _mm256_and_si256(in_range, _mm256_cmpeq_epi32(bit, one));
      }
      allowed_count += static_cast<size_t>(__builtin_popcount(
          static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(allowed)))));
      const __m256i blocked = _mm256_xor_si256(allowed, minus_one);
      const auto place = [&](__m256i to, __m256i lanes) {
        return _mm256_castsi256_ps(
            _mm256_and_si256(_mm256_permutevar8x32_epi32(blocked, to), lanes));
      };
      _mm256_storeu_ps(base, _mm256_blendv_ps(a, blocked_value, place(to_a, logit_lanes_a)));
      _mm256_storeu_ps(base + 8, _mm256_blendv_ps(b, blocked_value, place(to_b, logit_lanes_b)));
      _mm256_storeu_ps(base + 16, _mm256_blendv_ps(c, blocked_value, place(to_c, logit_lanes_c)));
    }
  }
  return allowed_count +
         scalar_kernels().apply_candidates(candidates + i, n_candidates - i, words, n_tokens);
}

const MaskKernels kAvx2Kernels = {avx2_apply_f32, avx2_apply_u16, avx2_apply_candidates};

}  // namespace

const MaskKernels* avx2_kernels() noexcept {
  return &kAvx2Kernels;
}

}  // namespace internal
}  // namespace grammask

#else

namespace grammask {
namespace internal {
const MaskKernels* avx2_kernels() noexcept {
  return nullptr;
}
}  // namespace internal
}  // namespace grammask

#endif
