// Token spelling written straight into a buffer (internal): the loaders
// decode each token where its text was read, so no token passes through a
// temporary string. Every spelling is at most as long as the text it comes
// from, so `out` may point at or before `text` in the same buffer.
#ifndef GRAMMASK_SRC_TOKEN_SPELLING_H_
#define GRAMMASK_SRC_TOKEN_SPELLING_H_

#include <string_view>

namespace grammask::internal {

// The bytes a byte-level BPE token spells (see append_byte_level_bytes);
// returns the end of what was written.
char* write_byte_level_bytes(std::string_view token_text, char* out) noexcept;
// The bytes a SentencePiece token spells (see append_sentencepiece_bytes).
char* write_sentencepiece_bytes(std::string_view token_text, char* out) noexcept;

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_TOKEN_SPELLING_H_
