// Code-point automata for the grammar's text terminals: the shortest
// matches of a regex (LazyRegex), the substrings of a text (Substring) and
// the texts that contain none of some strings (TextExcluding). The whole
// match of a regex (Regex) is dfa_from_whole_regex in char_dfa.h.
//
// Accepting states are labelled 1. Each construction checks its size
// against its budget before building what the budget bounds and fails with
// kLimitExceeded past it; within it, time and memory are linear in the
// states and edges made. Pure functions.
#ifndef GRAMMASK_SRC_REGEX_TERMINAL_DFAS_H_
#define GRAMMASK_SRC_REGEX_TERMINAL_DFAS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/status.h"
#include "regex/char_dfa.h"

namespace grammask::internal {

// The automaton without the states from which no accepting state is
// reachable, renumbered in order (the start stays state 0; an automaton that
// accepts nothing becomes one state without edges). Linear.
CharDfa dfa_trim(const CharDfa& dfa);

// True if the automaton accepts no string at all (after dfa_trim: its only
// state rejects and has no edge). Linear.
bool dfa_is_empty(const CharDfa& dfa);

// The strings `dfa` accepts none of whose proper prefixes it also accepts:
// every edge out of an accepting state is dropped, then the automaton is
// trimmed. Linear.
CharDfa dfa_shortest_matches(const CharDfa& dfa);

// Every substring of `text`, the empty one included (a suffix automaton:
// at most 2 |text| states, all accepting, one code point per edge). Fails
// with kLimitExceeded, before building anything, when 2 |text| exceeds
// `max_states`. Code points that are not scalar values get no edge.
Result<CharDfa> dfa_substrings(std::u32string_view text, size_t max_states);

// Every string that contains none of `strings` as a substring, the empty
// string included (an Aho-Corasick automaton completed over all code
// points: a state is the longest suffix read that is a proper prefix of one
// of the strings; every state accepts). An empty member excludes every
// string. Fails with kLimitExceeded, before building the trie, when the
// strings' total length plus one exceeds `max_states`, and while building
// once the explicit transitions (code points that lead elsewhere than the
// start) exceed `max_edges`.
Result<CharDfa> dfa_excluding(const std::vector<std::u32string>& strings, size_t max_states,
                              size_t max_edges);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_REGEX_TERMINAL_DFAS_H_
