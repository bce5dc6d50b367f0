// The GBNF parser: grammar text in the format of docs/GBNF.md -> grammar IR
// (grammar.h), with bounds for text from untrusted sources.
#ifndef GRAMMASK_GBNF_H_
#define GRAMMASK_GBNF_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grammask/grammar.h"
#include "grammask/status.h"

namespace grammask {

struct GbnfOptions {
  // The start rule that must exist; a text without it fails with kSyntax.
  // Empty: "root".
  std::string_view root = "root";

  // Resource bounds for grammars from untrusted sources. Passing one fails
  // the parse with kLimitExceeded, a message naming the option (e.g.
  // "GbnfOptions::max_rules") and the line:column where it was passed. The
  // defaults admit every grammar the JSON Schema converter emits at its own
  // defaults (JsonSchemaOptions::max_grammar_bytes and max_rules). Lowering
  // the grammar for matching has its own bounds (RecognizerOptions).
  size_t max_grammar_bytes = size_t{16} << 20;  // length of the text in bytes
  uint32_t max_rules = 200000;                  // rule definitions
  // Expression nodes in all rule bodies together: each literal, class, '.',
  // rule reference, repetition operator, and each sequence or alternation
  // of more than one item (a group around one item adds nothing).
  uint32_t max_symbols = 1u << 20;
  // Open parentheses, and the height of each rule's expression tree. The
  // code that walks the IR (printer, validate, lowering, destructor) recurses
  // that deep, so far larger values risk overflowing the call stack.
  uint32_t max_nesting = 1000;
  // Largest number accepted in {m}, {m,} and {m,n}. Lowering expands
  // bounded repetitions, so large bounds cost automaton states.
  uint32_t max_repeat_bound = 100000;
};

// Parses GBNF text into a Grammar that passes Grammar::validate(). On
// failure the Status has a message saying what was expected and the
// line:column of the problem; the code is kSyntax for malformed text
// (including text that is not UTF-8, an undefined or duplicate rule, or a
// missing start rule) and kLimitExceeded when a bound of `options` is
// passed. Never throws for malformed input; work and memory are linear in
// the text length. Thread-safe (no shared state).
Result<Grammar> parse_gbnf(std::string_view text, const GbnfOptions& options = {});

}  // namespace grammask

#endif  // GRAMMASK_GBNF_H_
