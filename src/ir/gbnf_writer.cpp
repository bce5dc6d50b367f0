#include "ir/gbnf_writer.h"

#include "base/utf8.h"

namespace grammask::internal {
namespace {

// Code points that are valid but invisible or confusing when written raw:
// C0/C1 controls, DEL, format and separator characters, private use,
// noncharacters.
bool hard_to_read(uint32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0)) return true;
  if (c == 0xAD || c == 0x034F || c == 0x061C || c == 0x180E) return true;
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return true;
  if ((c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF) return true;
  if (c >= 0xD800 && c <= 0xF8FF) return true;  // surrogates and private use
  if (c >= 0xFDD0 && c <= 0xFDEF) return true;  // noncharacters
  if ((c & 0xFFFE) == 0xFFFE) return true;      // U+xxFFFE / U+xxFFFF
  if (c >= 0xFFF0 && c <= 0xFFFB) return true;  // specials (not U+FFFD)
  if (c >= 0xE0000) return true;                // tags, plane 15/16 private use
  return c > kMaxCodePoint;
}

bool is_ascii_alnum(uint32_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// \xHH, \uHHHH or \UHHHHHHHH (upper-case digits), the shortest that holds
// the code point.
void append_hex_escape(std::string& out, uint32_t c) {
  static const char kDigits[] = "0123456789ABCDEF";
  const int digits = c <= 0xFF ? 2 : c <= 0xFFFF ? 4 : 8;
  out += '\\';
  out += digits == 2 ? 'x' : digits == 4 ? 'u' : 'U';
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kDigits[(c >> shift) & 15];
}

void append_readable(std::string& out, uint32_t c, bool in_class) {
  switch (c) {
    case '\t':
      out += "\\t";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\\':
      out += "\\\\";
      return;
    default:
      break;
  }
  if (in_class ? (c == ']' || c == '[' || c == '-' || c == '^') : c == '"') {
    out += '\\';
    out += static_cast<char>(c);
    return;
  }
  if (!hard_to_read(c)) {
    utf8::append(out, c);
    return;
  }
  append_hex_escape(out, c);
}

void append_ascii(std::string& out, uint32_t c, bool in_class) {
  if (in_class) {
    if (is_ascii_alnum(c))
      out += static_cast<char>(c);
    else
      append_hex_escape(out, c);
    return;
  }
  if (c == '"')
    out += "\\\"";
  else if (c == '\\')
    out += "\\\\";
  else if (c >= 0x20 && c < 0x7F)
    out += static_cast<char>(c);
  else
    append_hex_escape(out, c);
}

}  // namespace

void append_gbnf_char(std::string& out, uint32_t code_point, bool in_class, GbnfEscapes escapes) {
  if (escapes == GbnfEscapes::kReadable)
    append_readable(out, code_point, in_class);
  else
    append_ascii(out, code_point, in_class);
}

void append_gbnf_literal(std::string& out, std::u32string_view code_points, GbnfEscapes escapes) {
  out += '"';
  for (const char32_t c : code_points)
    append_gbnf_char(out, static_cast<uint32_t>(c), /*in_class=*/false, escapes);
  out += '"';
}

void append_gbnf_class(std::string& out, const std::vector<CodePointRange>& ranges, bool negated,
                       GbnfEscapes escapes) {
  out += negated ? "[^" : "[";
  for (CodePointRange range : ranges) {
    if (utf8::is_surrogate(range.first)) range.first = 0xE000;
    if (utf8::is_surrogate(range.last)) range.last = 0xD7FF;
    if (range.first > range.last) continue;
    append_gbnf_char(out, range.first, /*in_class=*/true, escapes);
    if (range.last != range.first) {
      out += '-';
      append_gbnf_char(out, range.last, /*in_class=*/true, escapes);
    }
  }
  out += ']';
}

void append_repeat_suffix(std::string& out, uint32_t min, uint32_t max) {
  if (min == 0 && max == kUnbounded) {
    out += '*';
  } else if (min == 1 && max == kUnbounded) {
    out += '+';
  } else if (min == 0 && max == 1) {
    out += '?';
  } else {
    out += '{';
    out += std::to_string(min);
    if (max != min) {
      out += ',';
      if (max != kUnbounded) out += std::to_string(max);
    }
    out += '}';
  }
}

std::string gbnf_literal(std::string_view utf8_text) {
  std::u32string code_points;
  if (!utf8::decode_all(utf8_text, &code_points)) code_points.clear();
  std::string out;
  append_gbnf_literal(out, code_points, GbnfEscapes::kAscii);
  return out;
}

std::string gbnf_char_class(const std::vector<CodePointRange>& ranges) {
  std::string out;
  append_gbnf_class(out, ranges, /*negated=*/false, GbnfEscapes::kAscii);
  return out;
}

std::string repeat_suffix(uint32_t min, uint32_t max) {
  std::string out;
  append_repeat_suffix(out, min, max);
  return out;
}

}  // namespace grammask::internal
