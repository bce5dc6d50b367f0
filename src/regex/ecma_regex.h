// ECMA-262 regular expressions as JSON Schema uses them (`pattern`,
// `patternProperties`): code points, not UTF-16 units, and no flags, parsed
// into a small AST over code-point sets (internal).
//
// parse_ecma_regex fails with kSyntax on a malformed pattern (or one that is
// not UTF-8, or that RE2 refuses), kUnsupported on constructs that are not
// regular or not expressible exactly (lookbehind, backreferences, \b,
// \p{...}), and kLimitExceeded past RegexLimits. Lookaheads parse; the
// automata take them only right after a leading ^ (see regex_branches). Cost: linear in the
// pattern, plus an RE2 compile with RegexCheck::kWithRe2. Pure functions.
#ifndef GRAMMASK_SRC_REGEX_ECMA_REGEX_H_
#define GRAMMASK_SRC_REGEX_ECMA_REGEX_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "grammask/status.h"
#include "regex/code_point_set.h"

namespace grammask::internal {

struct RegexNode {
  enum class Kind : uint8_t {
    kEmpty,              // matches the empty string
    kChars,              // one code point of `chars`
    kConcat,             // children in order
    kAlternation,        // one of children
    kRepeat,             // children[0] repeated min..max times (max may be kUnbounded)
    kLineStart,          // ^
    kLineEnd,            // $
    kLookahead,          // (?=children[0]): it matches here (consumes nothing)
    kNegativeLookahead,  // (?!children[0]): it does not match here
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
// what RE2 refuses although our parser took it (skipped for patterns with a
// repeat count above 1000, which RE2 cannot take). kTrusted skips the RE2
// compile, which costs more than the parse, for patterns this library writes
// itself; the tests check those with RE2.
enum class RegexCheck { kWithRe2, kTrusted };

// Whether the pattern has a lookahead anywhere.
bool has_lookahead(const RegexNode& node);

// Parses an ECMA-262 pattern (JSON Schema dialect: code points, no flags).
Result<RegexNode> parse_ecma_regex(std::string_view pattern, const RegexLimits& limits = {},
                                   RegexCheck check = RegexCheck::kWithRe2);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_REGEX_ECMA_REGEX_H_
