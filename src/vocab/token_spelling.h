// Token spelling written straight into a buffer (internal): the loaders
// decode each token where its text was read, so no token passes through a
// temporary string. Every spelling is at most as long as the text it comes
// from, so `out` may point at or before `text` in the same buffer.
#ifndef GRAMMASK_SRC_VOCAB_TOKEN_SPELLING_H_
#define GRAMMASK_SRC_VOCAB_TOKEN_SPELLING_H_

#include <cstdint>
#include <string_view>

namespace grammask::internal {

// The byte of each two-byte character with a lead from 0xC2 to 0xC5 (where
// all of the byte alphabet's non-ASCII characters lie), indexed by its two
// bytes less 0xC280; -1 where the pair is not such a character or the
// character is outside the alphabet. One lookup decodes and checks a pair.
struct BytePairTable {
  static constexpr uint32_t kFirst = 0xC280;
  static constexpr uint32_t kSize = 0xC5C0 - kFirst;
  int16_t byte_of[kSize] = {};
};
extern const BytePairTable kBytePairs;

// Writes the byte-level spelling of the one character at `in` (any UTF-8
// sequence, or a stray byte) at `out`; returns where the next one starts.
const char* write_byte_level_char(const char* in, const char* end, char*& out) noexcept;

// The bytes a byte-level BPE token spells (see append_byte_level_bytes);
// returns the end of what was written. Inline, as the loaders call it for
// every token.
inline char* write_byte_level_bytes(std::string_view token_text, char* out) noexcept {
  // Each character is read before its byte is written, and no character
  // spells more bytes than it takes: `out` may trail the text in place.
  const char* in = token_text.data();
  const char* const end = in + token_text.size();
  while (in != end) {
    const uint8_t first = static_cast<uint8_t>(*in);
    if (static_cast<uint8_t>(first - 0x21) <= 0x7E - 0x21) {  // printable ASCII is itself
      *out++ = static_cast<char>(first);
      ++in;
      continue;
    }
    // The byte alphabet's other characters are all two bytes long (U+00A1
    // to U+0143): one table lookup decodes and checks them.
    if (end - in >= 2) {
      const uint32_t pair = uint32_t{first} << 8 | static_cast<uint8_t>(in[1]);
      const uint32_t index = pair - BytePairTable::kFirst;
      if (index < BytePairTable::kSize && kBytePairs.byte_of[index] >= 0) {
        *out++ = static_cast<char>(kBytePairs.byte_of[index]);
        in += 2;
        continue;
      }
    }
    // (Through a copy: were `out` itself passed by reference, it would
    // live in memory, and every byte stored above could alias it.)
    char* rare_out = out;
    in = write_byte_level_char(in, end, rare_out);
    out = rare_out;
  }
  return out;
}
// The bytes a SentencePiece token spells (see append_sentencepiece_bytes).
char* write_sentencepiece_bytes(std::string_view token_text, char* out) noexcept;

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_VOCAB_TOKEN_SPELLING_H_
