// Writing GBNF text (internal): the one place where a code point, a literal,
// a character class or a repetition is spelled as GBNF. The printer
// (Grammar::to_gbnf), the regex translator and the JSON Schema converter all
// write through it. Everything written for Unicode scalar values parses
// back (parse_gbnf) to the same code points; a surrogate or a value above
// U+10FFFF in a literal is written as an escape the parser refuses. Pure
// functions; cost linear in what they write.
#ifndef GRAMMASK_SRC_IR_GBNF_WRITER_H_
#define GRAMMASK_SRC_IR_GBNF_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/grammar.h"

namespace grammask::internal {

// How code points are escaped.
enum class GbnfEscapes : uint8_t {
  // For people: characters raw, except those invisible or confusing when
  // written raw (controls, format and separator characters, private use,
  // noncharacters); \t \n \r as such. Grammar::to_gbnf writes this.
  kReadable,
  // For generated grammars: printable ASCII raw in literals and only
  // [0-9A-Za-z] raw in classes, everything else as \xHH, \uHHHH or
  // \UHHHHHHHH, so the text is ASCII whatever the input.
  kAscii,
};

// Appends one code point of a literal (in_class false) or of a class.
void append_gbnf_char(std::string& out, uint32_t code_point, bool in_class, GbnfEscapes escapes);
// Appends "..." with the code points escaped.
void append_gbnf_literal(std::string& out, std::u32string_view code_points, GbnfEscapes escapes);
// Appends [...] or [^...] for the ranges, in the order given. Surrogates
// cannot be written in GBNF and never occur in UTF-8 text: they are trimmed
// off the ends of a range, and a range of surrogates only is left out.
void append_gbnf_class(std::string& out, const std::vector<CodePointRange>& ranges, bool negated,
                       GbnfEscapes escapes);
// Appends the repetition operator for {min, max} (max == kUnbounded for no
// upper bound): *, +, ?, {n}, {m,} or {m,n}.
void append_repeat_suffix(std::string& out, uint32_t min, uint32_t max);

// The kAscii forms as strings, for generated grammars. gbnf_literal reads
// UTF-8 text and writes "" (the empty literal) when it is not well-formed.
std::string gbnf_literal(std::string_view utf8_text);
std::string gbnf_char_class(const std::vector<CodePointRange>& ranges);
std::string repeat_suffix(uint32_t min, uint32_t max);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_IR_GBNF_WRITER_H_
