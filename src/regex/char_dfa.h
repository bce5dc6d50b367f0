// Deterministic automata over code points, for the string constraints that a
// regex translated piece by piece cannot express: several patterns on one
// string, a pattern with length bounds, a string that must not match a
// pattern, and the keys of patternProperties (which patterns a key matches
// decides its value's schema, and keys matching none fall to
// additionalProperties).
//
// States carry a label: 0 is "not accepting"; products combine the labels of
// their operands (a bitmask of matched patterns, say). The constructions that
// can blow up (from a regex, length bounds, products) take a state budget and
// fail with kUnsupported past it; the others grow at most linearly in their
// input. Internal, for the JSON Schema converter; no shared state.
#ifndef GRAMMASK_SRC_REGEX_CHAR_DFA_H_
#define GRAMMASK_SRC_REGEX_CHAR_DFA_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "grammask/status.h"
#include "regex/ecma_regex.h"

namespace grammask::internal {

struct CharDfa {
  struct Edge {
    CodePointSet chars;  // disjoint from the other edges of the state
    uint32_t target = 0;
  };
  struct State {
    std::vector<Edge> edges;  // code points without an edge lead nowhere
    uint32_t label = 0;
  };
  std::vector<State> states;  // state 0 is the start
};

constexpr size_t kDefaultDfaStates = 4096;

// Strings in which the pattern finds a match (JSON Schema semantics: an
// unanchored pattern means "contains"); accepting states get `label`.
Result<CharDfa> dfa_from_regex(const RegexNode& pattern, uint32_t label = 1,
                               size_t max_states = kDefaultDfaStates);
// Strings that the pattern matches as a whole (anchored at both ends,
// whatever its own anchors say), labelled 1. Fails as regex_branches does
// (a lookahead not right after a leading ^ is kUnsupported), and with kLimitExceeded when
// the Thompson NFA or the DFA would pass `max_states` states (checked as
// they grow: memory and time stay linear in the budget).
Result<CharDfa> dfa_from_whole_regex(const RegexNode& pattern, size_t max_states);
// Every string, with `label`.
CharDfa dfa_any(uint32_t label = 1);
// Exactly the given strings (UTF-8), with `label`.
CharDfa dfa_words(const std::vector<std::string>& words, uint32_t label = 1);
// Strings of min..max code points (max: none for unbounded). Fails past
// the budget (a bound needs one state per count).
Result<CharDfa> dfa_length(uint64_t min, std::optional<uint64_t> max,
                           size_t max_states = kDefaultDfaStates);

// Runs both automata side by side; a state's label is combine(a, b), with 0
// for an operand that has left its automaton.
Result<CharDfa> dfa_product(const CharDfa& a, const CharDfa& b,
                            const std::function<uint32_t(uint32_t, uint32_t)>& combine,
                            size_t max_states = kDefaultDfaStates);
Result<CharDfa> dfa_intersection(const CharDfa& a, const CharDfa& b,
                                 size_t max_states = kDefaultDfaStates);
// The strings `a` does not accept, labelled `label`.
CharDfa dfa_complement(const CharDfa& a, uint32_t label = 1);
// The smallest equivalent automaton (equal labels, equal futures), without
// states from which no label in `keep` is reachable.
CharDfa dfa_minimize(const CharDfa& a, const std::function<bool(uint32_t)>& keep);

// The lengths in code points of the strings with a nonzero label: the
// shortest, and the longest unless they are unbounded (a cycle on the way
// to a label). `none` when no string has one. O(states + edges).
struct DfaLengths {
  bool none = true;
  uint64_t min = 0;
  std::optional<uint64_t> max;
};
DfaLengths dfa_lengths(const CharDfa& dfa);

// True if the decoded string (UTF-8) ends in a state whose label passes
// `keep` (tests and schema-time checks).
bool dfa_accepts(const CharDfa& dfa, const std::string& utf8,
                 const std::function<bool(uint32_t)>& keep);

// GBNF for the JSON-encoded bodies (between the quotes) of the strings the
// automaton leads to a label passing `keep`, each followed by `suffix` (a
// GBNF expression; empty for none): one rule per state, named by
// `new_rule(hint)` and written with `define(name, body)`. Returns the start
// rule, or "" when no string qualifies.
std::string dfa_to_gbnf(const CharDfa& dfa, const std::function<bool(uint32_t)>& keep,
                        const std::function<std::string()>& new_rule,
                        const std::function<void(const std::string&, const std::string&)>& define,
                        const std::string& suffix = "");

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_REGEX_CHAR_DFA_H_
