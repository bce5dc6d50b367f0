// The bridge to RE2 (internal): a parsed ECMA pattern in RE2 syntax, and
// searches with RE2 under JSON Schema semantics. The only user of RE2 in
// grammask.
#ifndef GRAMMASK_SRC_REGEX_RE2_BRIDGE_H_
#define GRAMMASK_SRC_REGEX_RE2_BRIDGE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "grammask/status.h"
#include "regex/ecma_regex.h"

namespace grammask::internal {

// True if a repeat count of `node`, times the counts of the repeats around
// it, is above 1000, the most RE2 accepts.
bool has_large_repeat(const RegexNode& node);

// The same language in RE2 syntax (UTF-8 mode), used to validate patterns
// and to test concrete strings. Anchors are kept as written; RE2 has no
// lookaheads, which become empty groups (check has_lookahead first).
std::string regex_to_re2(const RegexNode& pattern);

// True if the decoded string `text` (UTF-8) matches the ECMA pattern under
// JSON Schema semantics (search, not full match). Fails as parse_ecma_regex
// does, and with kUnsupported when RE2 cannot evaluate the pattern (a repeat
// count above 1000, or an RE2 compile error). A pattern with lookaheads runs
// on its automaton (char_dfa.h) instead, and fails as dfa_from_regex does. Compiles with RE2 each
// call: meant for schema-time checks.
Result<bool> ecma_regex_search(std::string_view pattern, std::string_view text);

// ecma_regex_search with each pattern parsed and compiled once, for a schema
// that checks many names and values against the same few patterns. Same
// results, errors included; a pattern's failure is kept and returned again.
// Memory grows with the distinct patterns seen. Not thread-safe: one
// searcher per thread.
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

#endif  // GRAMMASK_SRC_REGEX_RE2_BRIDGE_H_
