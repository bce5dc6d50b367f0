// The text slice (internal), for the mask engine: the tokens that spell
// nothing but whole characters of plain string text, as mask words, and
// tries of the other tokens, with the UTF-8 functions that define plain text.
// A mask walk from a state that accepts all plain text ORs in the slice and
// walks only the rest (docs/vocabulary.md). Which states those are is the
// mask layer's question (src/mask/text_closure.h).
#ifndef GRAMMASK_SRC_VOCAB_TEXT_SLICE_H_
#define GRAMMASK_SRC_VOCAB_TEXT_SLICE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "base/byte_set.h"
#include "vocab/token_trie.h"

namespace grammask::internal {

// Plain text characters: every code point from U+0020 on, except '"', '\\'
// and U+007F (which llama.cpp's JSON grammar leaves out of string bodies).
// Surrogates have no UTF-8 form, so they never occur.
constexpr bool is_plain_text_char(uint32_t code_point) noexcept {
  return code_point >= 0x20 && code_point != '"' && code_point != '\\' && code_point != 0x7F;
}

// The UTF-8 positions in plain text: between characters, and inside each
// kind of multi-byte sequence (where the next byte's range differs, which
// rules out overlongs, surrogates and values above U+10FFFF).
enum PlainTextPhase : uint8_t {
  kBoundary,
  kLast1,    // one continuation byte to go
  kLast2,    // two
  kLast3,    // three
  kAfterE0,  // A0..BF, then one more
  kAfterED,  // 80..9F, then one more
  kAfterF0,  // 90..BF, then two more
  kAfterF4,  // 80..8F, then two more
};
inline constexpr int kPlainTextPhases = 8;
// The phase after `byte` in `phase`, or kPlainTextPhases when plain text
// cannot go on with it.
uint8_t next_plain_text_phase(PlainTextPhase phase, uint8_t byte) noexcept;

// True if `bytes` is non-empty, well-formed UTF-8, and every character in
// it is plain text.
bool spells_plain_text(std::string_view bytes) noexcept;
// Its characters when it does, else 0.
size_t plain_text_chars(std::string_view bytes) noexcept;

// The slice tokens that contain none of the bytes of `avoid`, as mask
// words, and a trie of every other trie token: for walks from states that
// read every plain text avoiding those bytes (text that excludes a string).
struct AvoidingSlice {
  ByteSet avoid;
  std::vector<uint32_t> words;
  TokenTrie rest;
};

// AvoidingSlices built on first request and kept for the life of the
// vocabulary (its copies share them), at most kMaxKept; get() returns
// nullptr past that. A build costs a pass over the trie and a
// trie of the tokens outside the result. get() also returns nullptr when
// more than 1/kMaxRestShare of the trie's tokens would be outside it (a
// common letter avoided): that trie would cost more to build than walking
// the whole trie, and saves little of the walk. Thread-safe.
class AvoidingSlices {
 public:
  static constexpr size_t kMaxKept = 8;
  static constexpr size_t kMaxRestShare = 4;
  // `slice`, `trie`, bytes and offsets: the vocabulary's (see TextSlice::build).
  const AvoidingSlice* get(const ByteSet& avoid, const std::vector<uint32_t>& slice_words,
                           const TokenTrie& trie, const char* bytes, const uint32_t* offsets,
                           size_t vocabulary_size) const;
  // Heap bytes of the slices built so far. Thread-safe.
  size_t memory_bytes() const;

 private:
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<const AvoidingSlice>> kept_;
  // Sets found not worth a slice (see get), at most kMaxDeclined.
  static constexpr size_t kMaxDeclined = 64;
  mutable std::vector<ByteSet> declined_;
};

// The partition of a vocabulary's trie tokens: the slice as mask words, and
// a trie of every other token; the same for the short tier. Built with the
// trie.
struct TextSlice {
  static constexpr size_t kShortLength = 16;
  // Tiers by characters, for states that read every plain text of up to N
  // characters and none of N + 1 (the last characters of a bounded string).
  static constexpr size_t kMaxTierChars = 15;
  std::vector<uint32_t> words;        // bit i set <=> token i is in the slice
  std::vector<uint32_t> short_words;  // ... and at most kShortLength bytes long
  // tier_words[n - 1]: the slice tokens of at most n characters.
  std::vector<std::vector<uint32_t>> tier_words;
  TokenTrie rest;        // the trie tokens outside the slice
  TokenTrie short_rest;  // ... outside the short tier
  // The long tokens (more than kShortLength bytes), all of them and those
  // outside the slice: a walk may be split into its tokens of at most
  // kShortLength bytes, which states that look alike that far share, and
  // these few (the mask layer's split walks).
  TokenTrie long_tokens;
  TokenTrie long_rest;
  size_t max_length = 0;  // the longest slice token, in bytes
  // The slice less the tokens holding given bytes, on request.
  std::shared_ptr<const AvoidingSlices> avoiding = std::make_shared<AvoidingSlices>();

  // Heap bytes, the avoiding slices built so far included. Thread-safe.
  size_t memory_bytes() const;

  // `member_words`: the trie's tokens as mask words (mask_words(
  // vocabulary_size) of them). Token id spells bytes[offsets[id],
  // offsets[id + 1]); `vocabulary_size` sizes the mask.
  static TextSlice build(const char* bytes, const uint32_t* offsets,
                         const std::vector<uint32_t>& member_words, size_t vocabulary_size);
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_VOCAB_TEXT_SLICE_H_
