// Repetition. build_repeat(e, from, ...) adds the fragment for a repeat `e`
// (max > 1) starting at `from` and returns its end state: min copies, then
// a loop or max - min nested optional copies. The first copy is built from
// the expression and the others stamped from it (the same NFA as building
// each); a large repeat of a large part repeats a call of the part, lifted
// into a rule of its own. build_repeat_of_rule() repeats a call of a rule.
#include <algorithm>

#include "automata/lowering_impl.h"

namespace grammask::internal {

// The first copy of a repeated part as one() built it: the states it
// made and its edges in the staging lists. The next copies are stamped out
// from it, renumbered, instead of built again from the expression (a
// string of at most 100 characters builds its character 100 times). A
// copy's edges only join its entry and the states it made, so the stamp
// is the very NFA that building again would give.
struct Lowering::CopyTemplate {
  bool recorded = false;
  bool stampable = false;
  uint32_t entry = 0;                         // the state the copy was built from
  uint32_t first_state = 0, end_state = 0;    // the states it made: [first, end)
  uint32_t exit = 0;                          // where it ended
  size_t first_epsilon = 0, end_epsilon = 0;  // its edges in the staging lists
  size_t first_byte = 0, end_byte = 0;
  size_t first_rule = 0, end_rule = 0;
  size_t charged = 0;  // the states it charged
};

// Builds one copy at `at` with one(), or stamps it from `copy` once that
// holds the first one.
template <typename OneCopy>
uint32_t Lowering::next_copy(uint32_t at, Nfa& nfa, OneCopy& one, CopyTemplate& copy) {
  const Nfa::Staging& staged = nfa.staging;
  if (!copy.recorded) {
    copy.recorded = true;
    copy.entry = at;
    copy.first_state = nfa.num_states;
    copy.first_epsilon = staged.epsilon_edges.size();
    copy.first_byte = staged.byte_edges.size();
    copy.first_rule = staged.rule_edges.size();
    const size_t charged_before = total_nfa_states_;
    copy.exit = one(at);
    copy.end_state = nfa.num_states;
    copy.end_epsilon = staged.epsilon_edges.size();
    copy.end_byte = staged.byte_edges.size();
    copy.end_rule = staged.rule_edges.size();
    copy.charged = total_nfa_states_ - charged_before;
    auto inside = [&](uint32_t s) {
      return s == copy.entry || (s >= copy.first_state && s < copy.end_state);
    };
    bool joined = inside(copy.exit);
    for (size_t i = copy.first_epsilon; joined && i < copy.end_epsilon; ++i)
      joined = inside(staged.epsilon_edges[i].first) && inside(staged.epsilon_edges[i].second);
    for (size_t i = copy.first_byte; joined && i < copy.end_byte; ++i)
      joined = inside(staged.byte_edges[i].first) && inside(staged.byte_edges[i].second.target);
    for (size_t i = copy.first_rule; joined && i < copy.end_rule; ++i)
      joined = inside(staged.rule_edges[i].first) && inside(staged.rule_edges[i].second.target);
    copy.stampable = joined && status_.ok();
    return copy.exit;
  }
  if (!copy.stampable) return one(at);
  const uint32_t base = nfa.num_states;
  auto renumber = [&](uint32_t s) { return s == copy.entry ? at : s - copy.first_state + base; };
  nfa.num_states += copy.end_state - copy.first_state;
  // The edges, appended as the add_* calls would, but with the lists
  // grown once per copy and written by index (a push is a call each).
  Nfa::Staging& staging = nfa.staging;
  auto stamp = [&](auto& list, size_t first, size_t end, auto renumbered) {
    const size_t at_end = list.size();
    list.resize(at_end + (end - first));
    for (size_t i = first; i < end; ++i) list[at_end + (i - first)] = renumbered(list[i]);
  };
  stamp(staging.epsilon_edges, copy.first_epsilon, copy.end_epsilon,
        [&](const std::pair<uint32_t, uint32_t>& e) {
          return std::make_pair(renumber(e.first), renumber(e.second));
        });
  stamp(staging.byte_edges, copy.first_byte, copy.end_byte,
        [&](const std::pair<uint32_t, ByteEdge>& e) {
          return std::make_pair(renumber(e.first),
                                ByteEdge{e.second.lo, e.second.hi, renumber(e.second.target)});
        });
  stamp(staging.rule_edges, copy.first_rule, copy.end_rule,
        [&](const std::pair<uint32_t, RuleEdge>& e) {
          return std::make_pair(renumber(e.first),
                                RuleEdge{e.second.rule, renumber(e.second.target)});
        });
  charge(copy.charged);
  return renumber(copy.exit);
}

// The min..max copies of a repeat; `one(at)` adds one copy starting at `at`
// and returns where it ends.
template <typename OneCopy>
uint32_t Lowering::build_copies(const Expr& e, uint32_t from, Nfa& nfa, OneCopy one) {
  CopyTemplate copy;
  uint32_t cur = from;
  if (e.max == kUnbounded) {
    // x{n,}: n - 1 copies, then one that loops (x+ is one copy of x, not
    // x x*); x*: one loop that may also be left before reading x.
    const uint32_t before = e.min > 0 ? e.min - 1 : 0;
    for (uint32_t i = 0; i < before && status_.ok(); ++i) cur = next_copy(cur, nfa, one, copy);
    uint32_t loop = nfa.add();
    nfa.add_epsilon(cur, loop);
    uint32_t end = next_copy(loop, nfa, one, copy);
    nfa.add_epsilon(end, loop);
    return e.min > 0 ? end : loop;
  }
  for (uint32_t i = 0; i < e.min && status_.ok(); ++i) cur = next_copy(cur, nfa, one, copy);
  // Nested optional copies: after each copy either stop or read one more,
  // which keeps the subset construction linear in the bound.
  uint32_t end = nfa.add();
  for (uint32_t i = e.min; i < e.max && status_.ok(); ++i) {
    nfa.add_epsilon(cur, end);
    cur = next_copy(cur, nfa, one, copy);
  }
  nfa.add_epsilon(cur, end);
  charge(2);
  return end;
}

uint32_t Lowering::build_repeat(const Expr& e, uint32_t from, Nfa& nfa, int depth) {
  const Expr& child = e.children[0];
  const size_t copies = e.max == kUnbounded ? std::max<uint32_t>(e.min, 1) : e.max;
  // A large repeat of a large part repeats a reference to the part, lifted
  // into a rule of its own, instead of copying the part `copies` times.
  if (copies > 1 && child.kind != Expr::Kind::kRuleRef &&
      estimated_size(child, depth) * copies > kLiftProduct) {
    uint32_t rule = lifted_rule(child);
    return build_repeat_of_rule(e, rule, from, nfa);
  }
  return build_copies(e, from, nfa, [&](uint32_t at) { return build(child, at, nfa, depth + 1); });
}

uint32_t Lowering::build_repeat_of_rule(const Expr& e, uint32_t rule, uint32_t from, Nfa& nfa) {
  return build_copies(e, from, nfa, [&](uint32_t at) {
    uint32_t target = nfa.add();
    nfa.add_rule(at, rule, target);
    charge(1);
    return target;
  });
}

}  // namespace grammask::internal
