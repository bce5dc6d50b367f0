// Mask words: the token-mask layout shared by every grammask API, and the
// inline helpers an engine uses on it in its sampling loop.
//
// A mask over V tokens is an array of mask_words(V) uint32_t words; bit
// i % 32 of word i / 32 set means token i is allowed (LSB first, the layout
// of XGrammar and llguidance). Every function here is inline, constant time
// per word, allocates nothing and is safe on distinct buffers from any
// thread; indexes are not checked (the caller sizes the buffer).
#ifndef GRAMMASK_MASK_WORDS_H_
#define GRAMMASK_MASK_WORDS_H_

#include <cstddef>
#include <cstdint>

namespace grammask {

// Words needed for n_tokens bits: ceil(n_tokens / 32).
constexpr size_t mask_words(size_t n_tokens) noexcept {
  return (n_tokens + 31) / 32;
}

inline bool test_bit(const uint32_t* words, size_t token) noexcept {
  return (words[token >> 5] >> (token & 31)) & 1u;
}
inline void set_bit(uint32_t* words, size_t token) noexcept {
  words[token >> 5] |= uint32_t{1} << (token & 31);
}
inline void clear_bit(uint32_t* words, size_t token) noexcept {
  words[token >> 5] &= ~(uint32_t{1} << (token & 31));
}

// Sets the words to allow exactly tokens [0, n_tokens) (padding bits 0), or none.
inline void fill_allowed(uint32_t* words, size_t n_tokens) noexcept {
  const size_t full = n_tokens / 32;
  for (size_t i = 0; i < full; ++i) words[i] = ~uint32_t{0};
  if (n_tokens % 32 != 0) words[full] = (uint32_t{1} << (n_tokens % 32)) - 1;
}
inline void fill_none(uint32_t* words, size_t n_words) noexcept {
  for (size_t i = 0; i < n_words; ++i) words[i] = 0;
}

// Number of set bits in n_words words.
inline size_t count_bits(const uint32_t* words, size_t n_words) noexcept {
  size_t count = 0;
  for (size_t i = 0; i < n_words; ++i) {
#if defined(__GNUC__) || defined(__clang__)
    count += static_cast<size_t>(__builtin_popcount(words[i]));
#else
    uint32_t w = words[i];
    w = w - ((w >> 1) & 0x55555555u);
    w = (w & 0x33333333u) + ((w >> 2) & 0x33333333u);
    count += (((w + (w >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
#endif
  }
  return count;
}

// dst = dst | src, dst & src, dst & ~src, word by word (the compiler vectorizes these).
inline void or_words(uint32_t* dst, const uint32_t* src, size_t n_words) noexcept {
  for (size_t i = 0; i < n_words; ++i) dst[i] |= src[i];
}
inline void and_words(uint32_t* dst, const uint32_t* src, size_t n_words) noexcept {
  for (size_t i = 0; i < n_words; ++i) dst[i] &= src[i];
}
inline void andnot_words(uint32_t* dst, const uint32_t* src, size_t n_words) noexcept {
  for (size_t i = 0; i < n_words; ++i) dst[i] &= ~src[i];
}

}  // namespace grammask

#endif  // GRAMMASK_MASK_WORDS_H_
