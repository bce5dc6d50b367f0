// ECMA-262 regular expressions (as used by JSON Schema `pattern`) -> GBNF.
//
// The translator parses a pattern into a small AST over code point sets,
// then writes a GBNF expression for the *JSON-encoded body* of a string
// (the text between the quotes) whose decoded value matches the pattern.
// Semantics follow JSON Schema: code points (not UTF-16 units), no flags,
// and an unanchored pattern means "contains a match".
//
// Constructs that are not regular or not expressible exactly (lookaround,
// backreferences, \b, \p{...}, anchors in the middle of a pattern) fail with
// kUnsupported; malformed patterns fail with kSyntax.
#ifndef GRAMMASK_SRC_REGEX_REGEX_TO_GBNF_H_
#define GRAMMASK_SRC_REGEX_REGEX_TO_GBNF_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/grammar.h"
#include "grammask/status.h"

namespace grammask::internal {

// A set of code points: sorted, disjoint, non-adjacent ranges. Surrogates
// (U+D800..U+DFFF) are never members: they cannot occur in decoded text.
using CodePointSet = std::vector<CodePointRange>;

CodePointSet normalize_set(CodePointSet ranges);
CodePointSet complement_set(const CodePointSet& set);
CodePointSet intersect_sets(const CodePointSet& a, const CodePointSet& b);
bool set_contains(const CodePointSet& set, uint32_t code_point);

struct RegexNode {
  enum class Kind : uint8_t {
    kEmpty,        // matches the empty string
    kChars,        // one code point of `chars`
    kConcat,       // children in order
    kAlternation,  // one of children
    kRepeat,       // children[0] repeated min..max times (max may be kUnbounded)
    kLineStart,    // ^
    kLineEnd,      // $
  };
  Kind kind = Kind::kEmpty;
  CodePointSet chars;
  std::vector<RegexNode> children;
  uint32_t min = 0;
  uint32_t max = 0;
};

struct RegexLimits {
  uint32_t max_repeat = 10000;           // largest {m,n} bound accepted
  uint64_t max_nested_repeat = 1000000;  // product of nested bounds
  uint32_t max_depth = 200;              // group nesting
  size_t max_pattern_length = 100000;
};

// Whether parse_ecma_regex also compiles the pattern with RE2, to refuse
// what RE2 refuses although our parser took it. kTrusted skips that (it
// costs more than the parse: milliseconds for a format's long pattern) for
// patterns this library writes itself, which the tests check with RE2.
enum class RegexCheck { kWithRe2, kTrusted };

// Parses an ECMA-262 pattern (JSON Schema dialect: code points, no flags).
Result<RegexNode> parse_ecma_regex(std::string_view pattern, const RegexLimits& limits = {},
                                   RegexCheck check = RegexCheck::kWithRe2);

// The GBNF expression matching the JSON string body of one code point of
// `set`: raw characters where JSON allows them, escapes where it requires
// them (quote, backslash, control characters), and `\/` for '/'. Only
// encodings of members are accepted. Returns "" for an empty set.
std::string json_char_gbnf(const CodePointSet& set);

// A GBNF character class like `[a-z\x2d]` for the raw code points of `set`
// (caller guarantees the set is non-empty).
std::string gbnf_char_class(const CodePointSet& set);

// Writes `text` as a GBNF string literal (with the quotes).
std::string gbnf_literal(std::string_view utf8_text);

// The canonical JSON encoding of a string (quotes included), as
// nlohmann::json::dump writes it: UTF-8 kept raw, short escapes for
// \b \f \n \r \t, \u00xx for other control characters.
std::string json_quote(std::string_view utf8_text);

struct RegexTranslation {
  std::string gbnf;                    // expression for the JSON string body
  uint64_t min_length = 0;             // in code points of the decoded string
  std::optional<uint64_t> max_length;  // nullopt: unbounded
};

// Translates a parsed pattern into a GBNF expression for string bodies that
// contain a match (or fully match, where anchored). `any_char_rule` names a
// rule matching one encoded code point of any kind, used for the unanchored
// ends. With length bounds (code points of the decoded string) the result
// is the intersection, computed exactly for anchored patterns made of
// fixed-length parts and one repeated character class; other combinations
// fail with kUnsupported.
Result<RegexTranslation> regex_to_gbnf(const RegexNode& pattern, std::string_view any_char_rule,
                                       uint64_t min_length = 0,
                                       std::optional<uint64_t> max_length = std::nullopt);

// Convenience: parse then translate.
Result<RegexTranslation> ecma_regex_to_gbnf(std::string_view pattern,
                                            std::string_view any_char_rule,
                                            const RegexLimits& limits = {}, uint64_t min_length = 0,
                                            std::optional<uint64_t> max_length = std::nullopt);

// The top-level ways a pattern can match: anchors at the edges become
// flags (`(^a|b)c` distributes); an anchor anywhere else is kUnsupported.
struct RegexBranch {
  bool anchored_start = false;
  bool anchored_end = false;
  RegexNode body;  // a concatenation without anchors
};
Result<std::vector<RegexBranch>> regex_branches(const RegexNode& pattern);

// The same language in RE2 syntax (UTF-8 mode), used to validate patterns
// and to test concrete strings. Anchors are kept as written.
std::string regex_to_re2(const RegexNode& pattern);

// True if the decoded string `text` (UTF-8) matches the ECMA pattern under
// JSON Schema semantics (search, not full match). Fails when the pattern is
// unsupported. Compiles with RE2 each call: meant for schema-time checks.
Result<bool> ecma_regex_search(std::string_view pattern, std::string_view text);

// ecma_regex_search with each pattern parsed and compiled once: a schema
// checks many names and values against the same few patterns, and a long
// pattern takes milliseconds to compile. Same results, errors included.
class EcmaRegexSearcher {
 public:
  EcmaRegexSearcher();
  ~EcmaRegexSearcher();
  EcmaRegexSearcher(const EcmaRegexSearcher&) = delete;
  EcmaRegexSearcher& operator=(const EcmaRegexSearcher&) = delete;

  Result<bool> search(std::string_view pattern, std::string_view text);

 private:
  struct Compiled;
  std::map<std::string, std::unique_ptr<Compiled>, std::less<>> compiled_;
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_REGEX_REGEX_TO_GBNF_H_
