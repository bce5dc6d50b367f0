// The inlining policy of the lowering: which rules stay rules (rule edges
// the Earley engine follows) and which are copied into the places that name
// them.
//
// A rule is inlined when it is not recursive (see ReferenceCycles), its
// estimated NFA size is within the inline limit, or within the limit times
// the cycle factor for a rule on a cycle of references, and, for a rule
// that several places name, its copies are within the copy budget: the
// number of places times its estimated size. So a grammar need not mark
// the rules to keep whole: a part named between every two members of a
// long list, the states of a large automaton named from many places, the
// whitespace of a huge grammar stay rules by their size and places. A rule
// in a tail group (ReferenceCycles::in_tail_group) is always inlined. The
// estimates are Lowering members (inlining.cpp); docs/lowering.md gives
// the reasons.
#ifndef GRAMMASK_SRC_AUTOMATA_INLINING_H_
#define GRAMMASK_SRC_AUTOMATA_INLINING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "grammask/grammar.h"

namespace grammask::internal {

// The inline limits that ByteGrammar::lower tries, in order: the generous
// limit with the cycle factor; if that exceeds a RecognizerOptions limit
// and the factor inlined some rule, the generous limit alone; then the
// frugal limit; all with the copy budget. Then, if the frugal limit goes
// past RecognizerOptions::max_states, the frugal limit with a copy budget
// of zero: every rule named from more than one place stays a rule, so
// copies cannot multiply the states (a large automaton written as one
// rule per state, each copied into every state rule that stays a rule and
// reaches it, is the case the places alone do not see). So the cycle
// factor never refuses a grammar that the plain limits lower, and the
// retries at most quadruple the work.
inline constexpr size_t kGenerousInlineLimit = 4096;
inline constexpr size_t kFrugalInlineLimit = 2048;
inline constexpr size_t kCycleInlineFactor = 8;
// The largest estimated size of all the copies of a rule named from
// several places (places times its size); one past it stays a rule.
inline constexpr size_t kCopyBudget = size_t{1} << 17;
// A grammar whose NFAs pass kCopiedNfaStates with kCopyBudget is lowered
// with kLargeGrammarCopyBudget instead: its shared parts (a string body
// named by hundreds of properties) stay rules, which costs masks a rule
// call there but keeps lowering time and memory near linear in the
// grammar's text.
inline constexpr size_t kCopiedNfaStates = size_t{1} << 17;
inline constexpr size_t kLargeGrammarCopyBudget = size_t{1} << 10;
// A grammar whose NFAs the size estimates put past this many states with
// kCopyBudget is lowered with kLargeGrammarCopyBudget at once, without
// first building NFAs up to kCopiedNfaStates (which takes longer than the
// whole large-grammar lowering of most such grammars). The estimates err
// both ways, so this is far above kCopiedNfaStates: over MaskBench, the
// grammars that fit estimate at most 288k states, and 243 of the 424 that
// do not estimate more than this.
inline constexpr size_t kSurelyLargeEstimate = size_t{1} << 19;

// The rules of a grammar seen from a start rule through its references.
struct ReferenceCycles {
  // The targets of the back edges of a depth-first search from the root:
  // every cycle of references has one, and these stay rules.
  std::vector<bool> recursive;
  // The rules on some cycle: a strongly connected component of more than
  // one rule, or a rule naming itself.
  std::vector<bool> on_cycle;
  // How many places (references in the bodies of all the rules) name each
  // rule: the copies of a rule inlined everywhere.
  std::vector<uint32_t> places;
  // The rules that are not on a cycle, are named only in tail position (see
  // build_tail) after a part that surely reads a character, and whose
  // namers all belong to the tail context of one entry rule (itself not in
  // a group): the states of an automaton written one rule per state, below
  // the rule that starts it. Every copy of the entry holds one copy of
  // each, whatever their sizes, so they are always inlined and only the
  // entry meets the inline limits.
  std::vector<bool> in_tail_group;
  // The rules each rule names: rule r's are
  // references[reference_begin[r], reference_begin[r + 1]), in the order
  // its body names them (a rule named twice is listed twice).
  std::vector<uint32_t> reference_begin, references;
};

// Both sets and the places for `grammar` (one entry per rule) searched from rule `root`,
// then from every other rule in index order. `root` must be a rule of the
// grammar. O(rules + references), iterative (no recursion depth limit).
// Pure function: thread-safe.
ReferenceCycles find_reference_cycles(const Grammar& grammar, uint32_t root);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_AUTOMATA_INLINING_H_
