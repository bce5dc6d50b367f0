#include "mask/cached_mask.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace grammask {
namespace internal {

CachedMask::CachedMask(const uint32_t* words, size_t n_words, std::vector<uint32_t>& scratch) {
  // One pass: chunks of 16 zero words (a cache line) are skipped, as most
  // of a sparse mask is; in the others, the nonzero words are found by
  // SSE2 compares (a sparse chunk holds a word or two: visiting those
  // alone costs a quarter of compacting all 16), else by a branchless
  // compaction; and the pass gives up for a plain copy once an eighth of
  // the words are nonzero (the pairs would save less than 3/4 of the
  // words, and a dense mask, a string body's, is given up on early).
  constexpr size_t kChunk = 16;
  const size_t most_pairs = n_words / 8;
  scratch.resize(2 * most_pairs + 2 * kChunk);  // (a chunk may write past the end)
  uint32_t* out = scratch.data();
  const uint32_t* const full = out + 2 * most_pairs;
  auto compact = [&](size_t first, size_t count) {
    for (size_t k = first; k < first + count; ++k) {
      out[0] = static_cast<uint32_t>(k);
      out[1] = words[k];
      out += 2 * size_t{words[k] != 0};
    }
  };
  size_t i = 0;
  for (; i + kChunk <= n_words && out < full; i += kChunk) {
#if defined(__SSE2__)
    // Bit k: word i + k is zero. (SSE2 is baseline on x86-64.)
    uint32_t zero_words = 0;
    for (size_t q = 0; q < kChunk; q += 4) {
      const __m128i four = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words + i + q));
      const __m128i is_zero = _mm_cmpeq_epi32(four, _mm_setzero_si128());
      zero_words |= static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(is_zero))) << q;
    }
    for (uint32_t nonzero = ~zero_words & 0xFFFFu; nonzero != 0; nonzero &= nonzero - 1) {
      const size_t k = i + static_cast<size_t>(__builtin_ctz(nonzero));
      out[0] = static_cast<uint32_t>(k);
      out[1] = words[k];
      out += 2;
    }
#else
    uint32_t any = 0;
    for (size_t k = 0; k < kChunk; ++k) any |= words[i + k];
    if (any != 0) compact(i, kChunk);
#endif
  }
  if (out < full) compact(i, n_words - i);
  sparse_ = out < full;
  if (sparse_) {
    data_.assign(scratch.data(), out);
  } else {
    data_.assign(words, words + n_words);
  }
}

}  // namespace internal
}  // namespace grammask
