// The GBNF parser: text in the format of ../docs/GBNF.md -> grammar IR.
#ifndef GRAMMASK_GBNF_H_
#define GRAMMASK_GBNF_H_

#include <string_view>

#include "grammask/grammar.h"
#include "grammask/status.h"

namespace grammask {

struct GbnfOptions {
  // The start rule that must exist (checked at parse time). Empty: "root".
  std::string_view root = "root";
};

// Parses GBNF text into a Grammar. On failure the Status has code kSyntax, a
// message saying what was expected, and the line:column of the problem.
// Never throws for malformed input. Thread-safe (no shared state).
Result<Grammar> parse_gbnf(std::string_view text, const GbnfOptions& options = {});

}  // namespace grammask

#endif  // GRAMMASK_GBNF_H_
