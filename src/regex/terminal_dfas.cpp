// Suffix automaton, Aho-Corasick automaton completed over all code points,
// trimming and the shortest-match cut.
#include "regex/terminal_dfas.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "base/utf8.h"

namespace grammask::internal {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

Status over_budget(const char* what, size_t budget) {
  return Status(ErrorCode::kLimitExceeded,
                std::string(what) + " more than " + std::to_string(budget) + " automaton states");
}

// Transitions of one state, sorted by code point.
using Moves = std::vector<std::pair<uint32_t, uint32_t>>;

uint32_t find_move(const Moves& moves, uint32_t cp) {
  auto it = std::lower_bound(moves.begin(), moves.end(), std::make_pair(cp, uint32_t{0}));
  return it != moves.end() && it->first == cp ? it->second : kNone;
}

void set_move(Moves& moves, uint32_t cp, uint32_t target) {
  auto it = std::lower_bound(moves.begin(), moves.end(), std::make_pair(cp, uint32_t{0}));
  if (it != moves.end() && it->first == cp)
    it->second = target;
  else
    moves.insert(it, {cp, target});
}

}  // namespace

CharDfa dfa_trim(const CharDfa& dfa) {
  const size_t n = dfa.states.size();
  std::vector<std::vector<uint32_t>> reverse(n);
  for (uint32_t s = 0; s < n; ++s)
    for (const CharDfa::Edge& e : dfa.states[s].edges) reverse[e.target].push_back(s);
  std::vector<bool> useful(n, false);
  std::vector<uint32_t> stack;
  for (uint32_t s = 0; s < n; ++s)
    if (dfa.states[s].label != 0) useful[s] = true, stack.push_back(s);
  while (!stack.empty()) {
    const uint32_t s = stack.back();
    stack.pop_back();
    for (uint32_t p : reverse[s])
      if (!useful[p]) useful[p] = true, stack.push_back(p);
  }
  CharDfa out;
  if (n == 0 || !useful[0]) {
    out.states.resize(1);
    return out;
  }
  std::vector<uint32_t> id(n, kNone);
  uint32_t count = 0;
  for (uint32_t s = 0; s < n; ++s)
    if (useful[s]) id[s] = count++;
  out.states.resize(count);
  for (uint32_t s = 0; s < n; ++s) {
    if (!useful[s]) continue;
    CharDfa::State& state = out.states[id[s]];
    state.label = dfa.states[s].label;
    for (const CharDfa::Edge& e : dfa.states[s].edges)
      if (useful[e.target]) state.edges.push_back({e.chars, id[e.target]});
  }
  return out;
}

bool dfa_is_empty(const CharDfa& dfa) {
  const CharDfa trimmed = dfa_trim(dfa);
  return trimmed.states[0].label == 0 && trimmed.states[0].edges.empty();
}

CharDfa dfa_shortest_matches(const CharDfa& dfa) {
  CharDfa cut = dfa;
  for (CharDfa::State& state : cut.states)
    if (state.label != 0) state.edges.clear();
  return dfa_trim(cut);
}

Result<CharDfa> dfa_substrings(std::u32string_view text, size_t max_states) {
  if (text.size() >= max_states / 2)
    return over_budget("the substring automaton needs", max_states);
  // The suffix automaton (Blumer et al.): state = a class of substrings
  // with the same end positions; `link` = the class of the longest suffix
  // outside the class; `length` = the longest substring of the class.
  std::vector<Moves> moves(1);
  std::vector<uint32_t> link(1, kNone), length(1, 0);
  moves.reserve(2 * text.size() + 1);
  uint32_t last = 0;
  for (char32_t c : text) {
    const auto cp = static_cast<uint32_t>(c);
    const auto cur = static_cast<uint32_t>(moves.size());
    moves.emplace_back();
    link.push_back(0);
    length.push_back(length[last] + 1);
    uint32_t p = last;
    while (p != kNone && find_move(moves[p], cp) == kNone) {
      set_move(moves[p], cp, cur);
      p = link[p];
    }
    if (p != kNone) {
      const uint32_t q = find_move(moves[p], cp);
      if (length[p] + 1 == length[q]) {
        link[cur] = q;
      } else {
        const auto clone = static_cast<uint32_t>(moves.size());
        moves.push_back(moves[q]);
        link.push_back(link[q]);
        length.push_back(length[p] + 1);
        while (p != kNone && find_move(moves[p], cp) == q) {
          set_move(moves[p], cp, clone);
          p = link[p];
        }
        link[q] = clone;
        link[cur] = clone;
      }
    }
    last = cur;
  }
  CharDfa dfa;
  dfa.states.resize(moves.size());
  for (size_t s = 0; s < moves.size(); ++s) {
    dfa.states[s].label = 1;
    for (const auto& [cp, target] : moves[s])
      if (utf8::is_scalar_value(cp)) dfa.states[s].edges.push_back({{{cp, cp}}, target});
  }
  return dfa;
}

Result<CharDfa> dfa_excluding(const std::vector<std::u32string>& strings, size_t max_states,
                              size_t max_edges) {
  size_t total = 1;
  for (const std::u32string& s : strings) {
    if (s.empty()) return dfa_trim(CharDfa{{CharDfa::State{}}});
    total += s.size();
    if (total > max_states) return over_budget("the excluded strings need", max_states);
  }
  // The trie of the strings; `ends` marks a whole string.
  std::unordered_map<uint64_t, uint32_t> child_of;  // (node << 21 | cp) -> node
  std::vector<bool> ends(1, false);
  std::vector<Moves> children(1);
  for (const std::u32string& s : strings) {
    uint32_t at = 0;
    for (char32_t c : s) {
      const auto cp = static_cast<uint32_t>(c) & 0x1FFFFF;
      const uint64_t key = (uint64_t{at} << 21) | cp;
      auto [it, inserted] = child_of.emplace(key, static_cast<uint32_t>(ends.size()));
      if (inserted) {
        children[at].emplace_back(cp, it->second);
        ends.push_back(false);
        children.emplace_back();
      }
      at = it->second;
    }
    ends[at] = true;
  }
  child_of.clear();
  const auto nodes = static_cast<uint32_t>(ends.size());
  for (Moves& m : children) std::sort(m.begin(), m.end());
  // Breadth first: `fail` is the longest proper suffix that is a trie node;
  // a node is dead when it or a suffix of it is a whole string (or it lies
  // below such a node, where no live state leads); `moves` are the
  // transitions that lead elsewhere than the root (a live node's children,
  // then its fail node's moves on the other code points).
  std::vector<uint32_t> fail(nodes, 0), order{0};
  std::vector<bool> dead(ends);
  std::vector<Moves> moves(nodes);
  size_t edges = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const uint32_t s = order[k];
    if (dead[s]) {
      for (const auto& [cp, t] : children[s]) dead[t] = true, order.push_back(t);
      continue;
    }
    if (s == 0) {
      moves[0] = children[0];
    } else {
      const Moves& inherited = moves[fail[s]];
      Moves& own = moves[s];
      own.reserve(children[s].size() + inherited.size());
      auto a = children[s].begin();
      auto b = inherited.begin();
      while (a != children[s].end() || b != inherited.end()) {
        if (b == inherited.end() || (a != children[s].end() && a->first <= b->first)) {
          if (b != inherited.end() && b->first == a->first) ++b;
          own.push_back(*a++);
        } else {
          own.push_back(*b++);
        }
      }
    }
    edges += moves[s].size();
    if (edges > max_edges)
      return Status(ErrorCode::kLimitExceeded, "the excluded strings need more than " +
                                                   std::to_string(max_edges) + " automaton edges");
    for (const auto& [cp, t] : children[s]) {
      if (s != 0) {
        const uint32_t f = find_move(moves[fail[s]], cp);
        fail[t] = f == kNone ? 0 : f;
      }
      if (dead[fail[t]]) dead[t] = true;
      order.push_back(t);
    }
  }
  std::vector<uint32_t> id(nodes, kNone);
  uint32_t count = 0;
  for (uint32_t s : order)
    if (!dead[s]) id[s] = count++;
  CharDfa dfa;
  dfa.states.resize(count);
  for (uint32_t s : order) {
    if (dead[s]) continue;
    CharDfa::State& state = dfa.states[id[s]];
    state.label = 1;
    CodePointSet named;
    for (const auto& [cp, t] : moves[s]) {
      if (!utf8::is_scalar_value(cp)) continue;
      named.push_back({cp, cp});
      if (!dead[t]) state.edges.push_back({{{cp, cp}}, id[t]});
    }
    CodePointSet others = complement_set(normalize_set(std::move(named)));
    if (!others.empty()) state.edges.push_back({std::move(others), 0});
    moves[s].clear();
    moves[s].shrink_to_fit();
  }
  return dfa;
}

}  // namespace grammask::internal
