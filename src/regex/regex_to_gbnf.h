// ECMA-262 regular expressions (as used by JSON Schema `pattern`) -> GBNF
// (internal), for the JSON Schema converter.
//
// The translator writes a GBNF expression for the *JSON-encoded body* of a
// string (the text between the quotes) whose decoded value matches a parsed
// pattern (ecma_regex.h). Semantics follow JSON Schema: code points (not
// UTF-16 units), no flags, and an unanchored pattern means "contains a
// match". Pure functions.
//
// Constructs that are not regular or not expressible exactly (lookaround,
// backreferences, \b, \p{...}, anchors in the middle of a pattern) and
// patterns that match no string fail with kUnsupported; malformed patterns
// fail with kSyntax; more than 256 branches after distributing edge anchors
// fail with kLimitExceeded.
#ifndef GRAMMASK_SRC_REGEX_REGEX_TO_GBNF_H_
#define GRAMMASK_SRC_REGEX_REGEX_TO_GBNF_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/status.h"
#include "regex/code_point_set.h"
#include "regex/ecma_regex.h"

namespace grammask::internal {

// The GBNF expression matching the JSON string body of one code point of
// `set`: raw characters where JSON allows them, escapes where it requires
// them (quote, backslash, control characters), and `\/` for '/'. Only
// encodings of members are accepted. Returns "" for an empty set.
std::string json_char_gbnf(const CodePointSet& set);

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
// fail with kUnsupported, as do lookaheads (the automata of char_dfa.h take
// them).
Result<RegexTranslation> regex_to_gbnf(const RegexNode& pattern, std::string_view any_char_rule,
                                       uint64_t min_length = 0,
                                       std::optional<uint64_t> max_length = std::nullopt);

// Convenience: parse then translate.
Result<RegexTranslation> ecma_regex_to_gbnf(std::string_view pattern,
                                            std::string_view any_char_rule,
                                            const RegexLimits& limits = {}, uint64_t min_length = 0,
                                            std::optional<uint64_t> max_length = std::nullopt);

// The top-level ways a pattern can match: anchors at the edges become
// flags (`(^a|b)c` distributes), lookaheads right after a leading ^ are
// listed, and so is a positive lookahead that ends a branch not anchored at
// its end; a lookahead anywhere else is kUnsupported. Anchors inside a
// branch stay in its body: ^ holds at the start of the text, $ at its end
// (no multiline flag), as the automata of char_dfa.h read them.
struct RegexBranch {
  bool anchored_start = false;
  bool anchored_end = false;
  RegexNode body;  // a concatenation; anchors only inside
  // kLookahead and kNegativeLookahead nodes that hold at the start.
  std::vector<RegexNode> lookaheads;
  // A kLookahead that ends a branch not anchored at its end, or none: in a
  // search, `x(?=y)` finds what `xy` finds (what follows is free either
  // way); a whole match refuses it.
  std::vector<RegexNode> followed_by;
};
Result<std::vector<RegexBranch>> regex_branches(const RegexNode& pattern);
// Whether a branch of `pattern` holds an anchor inside (`(^a)*b`, `a$|b`
// is not): regex_to_gbnf refuses it, the automata take it.
bool has_inner_anchor(const RegexNode& pattern);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_REGEX_REGEX_TO_GBNF_H_
