// The one UTF-8 codec of grammask (internal): decoding, strict or for
// text known to be valid, validation and encoding.
//
// "Well-formed" follows the Unicode standard (table 3-7): no overlong forms,
// no encoded surrogates, nothing above U+10FFFF, no truncated sequences.
#ifndef GRAMMASK_SRC_BASE_UTF8_H_
#define GRAMMASK_SRC_BASE_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grammask {
namespace utf8 {

inline constexpr size_t kInvalid = 0;

// True for U+D800..U+DFFF, which are not characters and have no UTF-8 form.
inline constexpr bool is_surrogate(uint32_t code_point) noexcept {
  return code_point >= 0xD800 && code_point <= 0xDFFF;
}

// True for the code points that may appear in text: <= U+10FFFF, no surrogates.
inline constexpr bool is_scalar_value(uint32_t code_point) noexcept {
  return code_point <= 0x10FFFF && !is_surrogate(code_point);
}

// Number of bytes UTF-8 uses for `code_point` (1-4; 4 for anything larger).
inline constexpr size_t encoded_length(uint32_t code_point) noexcept {
  return code_point < 0x80 ? 1 : code_point < 0x800 ? 2 : code_point < 0x10000 ? 3 : 4;
}

// Decodes the code point starting at text[pos]. Returns the number of bytes it
// uses (1-4) and stores the code point, or returns kInvalid (0) and leaves
// `code_point` untouched when the bytes there are not well-formed UTF-8 or
// pos is past the end.
inline size_t decode(std::string_view text, size_t pos, uint32_t* code_point) noexcept {
  if (pos >= text.size()) return kInvalid;
  const auto byte_at = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t lead = byte_at(0);
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  }
  size_t length;
  uint32_t value;
  // The allowed range of the second byte rules out overlongs, surrogates and
  // values above U+10FFFF in one check.
  uint8_t second_min = 0x80, second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    value = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    value = lead & 0x0F;
    if (lead == 0xE0) second_min = 0xA0;
    if (lead == 0xED) second_max = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    value = lead & 0x07;
    if (lead == 0xF0) second_min = 0x90;
    if (lead == 0xF4) second_max = 0x8F;
  } else {
    return kInvalid;  // a continuation byte, C0/C1 (overlong) or F5..FF
  }
  if (text.size() - pos < length) return kInvalid;
  for (size_t i = 1; i < length; ++i) {
    const uint8_t byte = byte_at(i);
    const uint8_t min = i == 1 ? second_min : 0x80;
    const uint8_t max = i == 1 ? second_max : 0xBF;
    if (byte < min || byte > max) return kInvalid;
    value = (value << 6) | (byte & 0x3F);
  }
  *code_point = value;
  return length;
}

// Offset of the first byte of `text` that does not start a well-formed
// sequence, or std::string_view::npos when the whole text is valid UTF-8.
inline size_t find_invalid(std::string_view text) noexcept {
  uint32_t ignored = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {  // ASCII fast path
      ++pos;
      continue;
    }
    const size_t length = decode(text, pos, &ignored);
    if (length == kInvalid) return pos;
    pos += length;
  }
  return std::string_view::npos;
}

// Writes the UTF-8 form of `code_point` to out[0..3] and returns its length
// (encoded_length). No check: a surrogate is written like any other value and
// a value above U+10FFFF as four bytes of its low 21 bits.
inline size_t encode(uint32_t code_point, uint8_t* out) noexcept {
  if (code_point < 0x80) {
    out[0] = static_cast<uint8_t>(code_point);
    return 1;
  }
  if (code_point < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (code_point >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (code_point & 0x3F));
    return 2;
  }
  if (code_point < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (code_point >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((code_point >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (code_point & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | ((code_point >> 18) & 0x07));
  out[1] = static_cast<uint8_t>(0x80 | ((code_point >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((code_point >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (code_point & 0x3F));
  return 4;
}

// The number of code points of well-formed `text`: its bytes that are not
// continuation bytes (ill-formed text is counted the same way).
inline size_t count_code_points(std::string_view text) noexcept {
  size_t count = 0;
  for (const char c : text)
    if ((static_cast<uint8_t>(c) & 0xC0) != 0x80) ++count;
  return count;
}

// Appends the UTF-8 encoding of `code_point`. Surrogates are encoded like any
// other value (callers that need well-formed output check is_scalar_value);
// values above U+10FFFF are replaced by U+FFFD.
inline void append(std::string& out, uint32_t code_point) {
  if (code_point > 0x10FFFF) code_point = 0xFFFD;
  uint8_t bytes[4];
  out.append(reinterpret_cast<const char*>(bytes), encode(code_point, bytes));
}

// Decodes all of `text` into `out` (cleared first). Returns false, with
// `out` holding the code points before the first ill-formed sequence, when
// `text` is not well-formed UTF-8.
inline bool decode_all(std::string_view text, std::u32string* out) {
  out->clear();
  for (size_t pos = 0; pos < text.size();) {
    uint32_t code_point = 0;
    const size_t length = decode(text, pos, &code_point);
    if (length == kInvalid) return false;
    out->push_back(static_cast<char32_t>(code_point));
    pos += length;
  }
  return true;
}

// Decodes the code point at text[pos], for text already known to be
// well-formed (a parsed JSON string, a checked pattern): no validation.
// Returns the bytes it spans (1-4), never 0 while pos < text.size(); a
// sequence cut short by the end of `text` yields the bits it has.
inline size_t decode_unchecked(std::string_view text, size_t pos, uint32_t* code_point) noexcept {
  const auto lead = static_cast<uint8_t>(text[pos]);
  const size_t extra = lead < 0x80 ? 0 : (lead & 0xE0) == 0xC0 ? 1 : (lead & 0xF0) == 0xE0 ? 2 : 3;
  uint32_t value = extra == 0   ? lead
                   : extra == 1 ? (lead & 0x1F)
                   : extra == 2 ? (lead & 0x0F)
                                : (lead & 0x07);
  for (size_t k = 1; k <= extra && pos + k < text.size(); ++k)
    value = (value << 6) | (static_cast<uint8_t>(text[pos + k]) & 0x3F);
  *code_point = value;
  return extra + 1;
}

// The UTF-8 encoding of a code-point string (see append for odd values).
inline std::string encode(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (const char32_t code_point : code_points) append(out, static_cast<uint32_t>(code_point));
  return out;
}

}  // namespace utf8
}  // namespace grammask

#endif  // GRAMMASK_SRC_BASE_UTF8_H_
