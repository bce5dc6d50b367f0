// The inlining policy of the lowering: which rules stay rules (rule edges
// the Earley engine follows) and which are copied into the places that name
// them.
//
// A rule is inlined when it is not recursive (see ReferenceCycles) and its
// estimated NFA size is within the inline limit, or within the limit times
// the cycle factor for a rule on a cycle of references. The estimates are
// Lowering members (inlining.cpp); docs/lowering.md gives the reasons.
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
// frugal limit. So the cycle factor never refuses a grammar that the
// plain limits lower, and the retries at most triple the work.
inline constexpr size_t kGenerousInlineLimit = 4096;
inline constexpr size_t kFrugalInlineLimit = 2048;
inline constexpr size_t kCycleInlineFactor = 8;

// The rules of a grammar seen from a start rule through its references.
struct ReferenceCycles {
  // The targets of the back edges of a depth-first search from the root:
  // every cycle of references has one, and these stay rules.
  std::vector<bool> recursive;
  // The rules on some cycle: a strongly connected component of more than
  // one rule, or a rule naming itself.
  std::vector<bool> on_cycle;
};

// Both sets for `grammar` (one entry per rule) searched from rule `root`,
// then from every other rule in index order. `root` must be a rule of the
// grammar. O(rules + references), iterative (no recursion depth limit).
// Pure function: thread-safe.
ReferenceCycles find_reference_cycles(const Grammar& grammar, uint32_t root);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_AUTOMATA_INLINING_H_
