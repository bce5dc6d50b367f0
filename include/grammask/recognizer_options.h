// Limits on lowering a grammar to byte automata and on the Earley work per
// byte: the options of Recognizer::create and, through
// CompileOptions::recognizer, of CompiledGrammar::compile.
#ifndef GRAMMASK_RECOGNIZER_OPTIONS_H_
#define GRAMMASK_RECOGNIZER_OPTIONS_H_

#include <cstddef>
#include <cstdint>

namespace grammask {

struct RecognizerOptions {
  // Upper bound on automaton states built by lowering (repetition expansion
  // and rule inlining count here). Past it create() fails with
  // kLimitExceeded naming this option.
  size_t max_states = 1u << 20;
  // Upper bound on the Earley work one byte may cost (items added plus items
  // examined while completing). Unambiguous grammars stay in the tens; the
  // bound stops highly ambiguous grammars (e.g. `e ::= e e | "a"`, whose
  // work per byte grows with the input) from taking unbounded time. A byte
  // over the bound is refused: Recognizer::push_byte returns false and
  // work_limit_hit() says why; Matcher calls fail with kLimitExceeded.
  uint64_t max_work_per_byte = uint64_t{1} << 20;
  // Upper bound on the work of lowering (automaton states built plus NFA
  // states and edges visited by the subset construction). It stops grammars
  // that stay small in states but are costly to determinize (a `.*`-like
  // class before a choice, inlined many times). Past it create() fails with
  // kLimitExceeded naming this option.
  //
  // A grammar that passes max_states or this bound is lowered again with
  // fewer rules copied inline (more rule calls, fewer states), up to four
  // attempts in all (plus a first one that a large grammar stops early),
  // before failing; each attempt has the whole bound.
  uint64_t max_lowering_work = uint64_t{1} << 27;
};

}  // namespace grammask

#endif  // GRAMMASK_RECOGNIZER_OPTIONS_H_
