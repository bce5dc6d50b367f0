// The NFA that lowering builds for one rule before the subset construction.
//
// States are numbers [0, num_states); edges are epsilon edges, byte range
// edges (ByteEdge) and rule edges (RuleEdge: after the rule derives some
// input, go to the target). Building appends edges in any order through
// the add_* calls into `staging`; freeze() then groups them by source state
// into flat arrays (edges of state s: [x_begin[s], x_begin[s + 1])), in the
// order they were added, and empties `staging`. Read the flat arrays only
// after freeze(), and add no edge after it. O(states + edges) to freeze, no
// allocation per state. Not thread-safe; one NFA per rule being lowered.
#ifndef GRAMMASK_SRC_AUTOMATA_NFA_H_
#define GRAMMASK_SRC_AUTOMATA_NFA_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "automata/lowering.h"

namespace grammask::internal {

// A byte range edge: bytes lo..hi lead to `target`.
struct ByteEdge {
  uint8_t lo, hi;
  uint32_t target;
};

// An NFA under construction. Fragments append edges in any order; freeze()
// then groups them by source state into flat arrays for the subset
// construction (no allocation per state).
struct Nfa {
  uint32_t num_states = 0;
  uint32_t start = 0;
  uint32_t accept = 0;
  // After freeze(), the edges of state s are [x_begin[s], x_begin[s + 1]).
  std::vector<uint32_t> epsilon_begin, epsilon;
  std::vector<uint32_t> byte_begin;
  std::vector<ByteEdge> bytes;
  std::vector<uint32_t> rule_begin;
  std::vector<RuleEdge> rules;

  uint32_t add() { return num_states++; }
  void add_epsilon(uint32_t from, uint32_t to) { staging.epsilon_edges.push_back({from, to}); }
  void add_bytes(uint32_t from, uint8_t lo, uint8_t hi, uint32_t to) {
    staging.byte_edges.push_back({from, ByteEdge{lo, hi, to}});
  }
  void add_rule(uint32_t from, uint32_t rule, uint32_t to) {
    staging.rule_edges.push_back({from, RuleEdge{rule, to}});
  }

  void freeze() {
    group_by_source(staging.epsilon_edges, epsilon_begin, epsilon);
    group_by_source(staging.byte_edges, byte_begin, bytes);
    group_by_source(staging.rule_edges, rule_begin, rules);
  }

  // The edges as added, until freeze() (which empties them): the lowering
  // lends every NFA the same ones, so that they grow once, not per rule.
  struct Staging {
    std::vector<std::pair<uint32_t, uint32_t>> epsilon_edges;
    std::vector<std::pair<uint32_t, ByteEdge>> byte_edges;
    std::vector<std::pair<uint32_t, RuleEdge>> rule_edges;
  };
  Staging staging;

 private:
  // Counting sort on the source state (stable: each state keeps its edges
  // in the order they were added). State s's edges are placed through
  // begin[s + 1], which starts at their beginning and ends at their end,
  // the next state's beginning: no copy of the offsets to fill through.
  template <typename Edge>
  void group_by_source(std::vector<std::pair<uint32_t, Edge>>& edges, std::vector<uint32_t>& begin,
                       std::vector<Edge>& out) const {
    begin.assign(num_states + 1, 0);
    for (const auto& e : edges) ++begin[e.first + 1];
    uint32_t total = 0;
    for (uint32_t s = 0; s < num_states; ++s) {
      const uint32_t count = begin[s + 1];
      begin[s + 1] = total;
      total += count;
    }
    out.resize(edges.size());
    for (const auto& e : edges) out[begin[e.first + 1]++] = e.second;
    edges.clear();
  }
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_AUTOMATA_NFA_H_
