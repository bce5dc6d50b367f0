// Automata over code points: Thompson NFA from the regex AST, subset
// construction over code point classes, products, complement, Moore
// minimization, and GBNF with one rule per state.
#include "regex/char_dfa.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "base/sequence_index.h"
#include "base/utf8.h"
#include "regex/regex_to_gbnf.h"

namespace grammask::internal {
namespace {

constexpr uint32_t kDead = UINT32_MAX;

CodePointSet all_code_points() {
  return normalize_set({{0, kMaxCodePoint}});
}

CodePointSet union_of(const std::vector<CharDfa::Edge>& edges) {
  CodePointSet all;
  for (const CharDfa::Edge& edge : edges)
    all.insert(all.end(), edge.chars.begin(), edge.chars.end());
  return normalize_set(std::move(all));
}

Status too_many_states(size_t budget) {
  return Status(ErrorCode::kUnsupported, "the string constraint needs more than " +
                                             std::to_string(budget) + " automaton states");
}

// --- Thompson NFA --------------------------------------------------------

struct NfaState {
  std::vector<uint32_t> epsilon;
  // Epsilon edges that hold only at the start of the text (^) or only at
  // its end ($).
  std::vector<uint32_t> at_start, at_end;
  std::vector<std::pair<CodePointSet, uint32_t>> edges;
};

class NfaBuilder {
 public:
  explicit NfaBuilder(size_t budget) : budget_(budget) {}

  uint32_t add() {
    if (states_.size() >= budget_) {
      over_ = true;
      return 0;
    }
    states_.emplace_back();
    return static_cast<uint32_t>(states_.size() - 1);
  }
  void epsilon(uint32_t from, uint32_t to) {
    if (!over_) states_[from].epsilon.push_back(to);
  }
  void edge(uint32_t from, CodePointSet chars, uint32_t to) {
    if (!over_) states_[from].edges.emplace_back(std::move(chars), to);
  }

  // Adds `node` starting at `from`; returns where it ends.
  uint32_t build(const RegexNode& node, uint32_t from) {
    if (over_) return from;
    switch (node.kind) {
      case RegexNode::Kind::kEmpty:
      case RegexNode::Kind::kLookahead:  // (branch_dfa takes them apart)
      case RegexNode::Kind::kNegativeLookahead:
        return from;
      case RegexNode::Kind::kLineStart:
      case RegexNode::Kind::kLineEnd: {
        uint32_t to = add();
        if (!over_)
          (node.kind == RegexNode::Kind::kLineStart ? states_[from].at_start : states_[from].at_end)
              .push_back(to);
        return to;
      }
      case RegexNode::Kind::kChars: {
        uint32_t to = add();
        if (!over_ && !node.chars.empty()) states_[from].edges.emplace_back(node.chars, to);
        return to;
      }
      case RegexNode::Kind::kConcat: {
        uint32_t at = from;
        for (const RegexNode& child : node.children) at = build(child, at);
        return at;
      }
      case RegexNode::Kind::kAlternation: {
        uint32_t end = add();
        for (const RegexNode& child : node.children) {
          uint32_t start = add();
          epsilon(from, start);
          epsilon(build(child, start), end);
        }
        return end;
      }
      case RegexNode::Kind::kRepeat: {
        const RegexNode& child = node.children[0];
        uint32_t at = from;
        for (uint32_t i = 0; i < node.min && !over_; ++i) at = build(child, at);
        if (node.max == kUnbounded) {
          uint32_t loop = add();
          epsilon(at, loop);
          epsilon(build(child, loop), loop);
          return loop;
        }
        uint32_t end = add();
        for (uint32_t i = node.min; i < node.max && !over_; ++i) {
          epsilon(at, end);
          at = build(child, at);
        }
        epsilon(at, end);
        return end;
      }
    }
    return from;
  }

  bool over() const { return over_; }
  std::vector<NfaState>& states() { return states_; }

 private:
  size_t budget_;
  bool over_ = false;
  std::vector<NfaState> states_;
};

// Closes `set` over epsilon edges, and over the ^ edges if `at_start` and
// the $ edges if `at_end`. `seen` has one entry per NFA state, all false,
// and is left that way (a fresh one per call would cost the NFA's size per
// DFA state).
void close_over_epsilon(const std::vector<NfaState>& nfa, std::vector<uint32_t>& set,
                        std::vector<bool>& seen, bool at_start = false, bool at_end = false) {
  std::vector<uint32_t> stack = set;
  for (uint32_t s : set) seen[s] = true;
  auto follow = [&](const std::vector<uint32_t>& targets) {
    for (uint32_t t : targets) {
      if (seen[t]) continue;
      seen[t] = true;
      set.push_back(t);
      stack.push_back(t);
    }
  };
  while (!stack.empty()) {
    uint32_t s = stack.back();
    stack.pop_back();
    follow(nfa[s].epsilon);
    if (at_start) follow(nfa[s].at_start);
    if (at_end) follow(nfa[s].at_end);
  }
  for (uint32_t s : set) seen[s] = false;
  std::sort(set.begin(), set.end());
}

// Splits the union of `sets` into pieces on which the same members apply:
// calls visit(piece, members) for every non-empty piece, in the
// lexicographic order of the member lists (the order states are numbered
// in, so it must not change).
template <typename Visit>
void for_each_piece(const std::vector<const CodePointSet*>& sets, Visit visit) {
  std::vector<uint32_t> bounds;
  for (const CodePointSet* set : sets)
    for (const CodePointRange& range : *set) {
      bounds.push_back(range.first);
      bounds.push_back(range.last + 1);
    }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  if (bounds.size() < 2) return;
  const size_t intervals = bounds.size() - 1;
  // Every range covers whole intervals (its ends are bounds). The members of
  // each interval, as slices of one array: counted, then filled set by set,
  // so each slice is sorted.
  auto for_each_covered = [&](auto&& on_interval) {
    for (uint32_t i = 0; i < sets.size(); ++i)
      for (const CodePointRange& range : *sets[i]) {
        size_t c = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), range.first) -
                                       bounds.begin());
        for (; c < intervals && bounds[c] <= range.last; ++c) on_interval(c, i);
      }
  };
  std::vector<uint32_t> slice_start(intervals + 1, 0);
  for_each_covered([&](size_t c, uint32_t) { ++slice_start[c + 1]; });
  for (size_t c = 0; c < intervals; ++c) slice_start[c + 1] += slice_start[c];
  std::vector<uint32_t> member_of(slice_start.back());
  {
    std::vector<uint32_t> fill(slice_start.begin(), slice_start.end() - 1);
    for_each_covered([&](size_t c, uint32_t i) { member_of[fill[c]++] = i; });
  }
  auto members_begin = [&](uint32_t c) { return member_of.begin() + slice_start[c]; };
  auto members_end = [&](uint32_t c) { return member_of.begin() + slice_start[c + 1]; };
  std::vector<uint32_t> order;
  for (uint32_t c = 0; c < intervals; ++c)
    if (slice_start[c + 1] > slice_start[c]) order.push_back(c);
  // By member list, then by position (pieces are built in code point order).
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    return std::lexicographical_compare(members_begin(x), members_end(x), members_begin(y),
                                        members_end(y));
  });
  std::vector<uint32_t> members;
  for (size_t k = 0; k < order.size();) {
    const uint32_t first_interval = order[k];
    CodePointSet piece;
    size_t end = k;
    while (end < order.size() &&
           std::equal(members_begin(first_interval), members_end(first_interval),
                      members_begin(order[end]), members_end(order[end]))) {
      piece.push_back({bounds[order[end]], bounds[order[end] + 1] - 1});
      ++end;
    }
    members.assign(members_begin(first_interval), members_end(first_interval));
    visit(normalize_set(std::move(piece)), members);
    k = end;
  }
}

}  // namespace

namespace {

// The subset construction of a Thompson NFA: DFA state k is the closed NFA
// state set number k; sets holding `accept` get `label`. A set holding
// `absorbing` (a state that accepts every continuation; kNoAbsorbing for
// none) is that state's closure alone: what else the set holds cannot
// change its future, and tracking it would multiply the states (a search
// for several words goes on tracking partial matches after one matched).
// Past `max_states` DFA states, returns `over(max_states)`.
constexpr uint32_t kNoAbsorbing = UINT32_MAX;
Result<CharDfa> subset_construction(const std::vector<NfaState>& nfa, uint32_t start,
                                    uint32_t accept, uint32_t label, size_t max_states,
                                    Status (*over)(size_t), uint32_t absorbing = kNoAbsorbing) {
  CharDfa dfa;
  SequenceIndex closed_sets;
  std::vector<bool> seen(nfa.size(), false);
  std::vector<uint32_t> absorbed;
  if (absorbing != kNoAbsorbing) {
    absorbed.push_back(absorbing);
    close_over_epsilon(nfa, absorbed, seen);
  }
  // (^ and $ edges, rare, make the start state a set of its own, closed
  // over the ^ edges, and acceptance a closure over the $ edges.)
  bool anchors = false;
  for (const NfaState& state : nfa) anchors |= !state.at_start.empty() || !state.at_end.empty();
  constexpr uint32_t kStartMark = UINT32_MAX;  // (no NFA state has that number)
  std::vector<uint32_t> at_end;
  auto intern = [&](std::vector<uint32_t> set, bool is_start) -> std::optional<uint32_t> {
    close_over_epsilon(nfa, set, seen, is_start);
    if (absorbing != kNoAbsorbing && std::binary_search(set.begin(), set.end(), absorbing))
      set = absorbed;
    if (anchors && is_start) set.push_back(kStartMark);
    const auto [id, inserted] = closed_sets.intern(set.data(), set.size());
    if (!inserted) return id;
    if (id >= max_states) return std::nullopt;
    if (anchors && is_start) set.pop_back();
    bool accepting = std::binary_search(set.begin(), set.end(), accept);
    if (anchors && !accepting) {
      at_end = set;
      close_over_epsilon(nfa, at_end, seen, is_start, true);
      accepting = std::binary_search(at_end.begin(), at_end.end(), accept);
    }
    dfa.states.emplace_back();
    if (accepting) dfa.states[id].label = label;
    return id;
  };
  if (!intern({start}, true)) return over(max_states);
  std::vector<uint32_t> members;
  for (uint32_t next = 0; next < closed_sets.count(); ++next) {
    members.assign(closed_sets.data(next), closed_sets.data(next) + closed_sets.size(next));
    if (!members.empty() && members.back() == kStartMark) members.pop_back();
    std::vector<const CodePointSet*> sets;
    std::vector<uint32_t> targets;
    for (uint32_t s : members)
      for (const auto& [chars, target] : nfa[s].edges) {
        sets.push_back(&chars);
        targets.push_back(target);
      }
    bool over_budget = false;
    std::vector<CharDfa::Edge> edges;
    for_each_piece(sets, [&](CodePointSet piece, const std::vector<uint32_t>& which) {
      std::vector<uint32_t> to;
      for (uint32_t i : which) to.push_back(targets[i]);
      std::sort(to.begin(), to.end());
      to.erase(std::unique(to.begin(), to.end()), to.end());
      std::optional<uint32_t> id = intern(std::move(to), false);
      if (!id) {
        over_budget = true;
        return;
      }
      edges.push_back({std::move(piece), *id});
    });
    if (over_budget) return over(max_states);
    dfa.states[next].edges = std::move(edges);
  }
  return dfa;
}

Status too_many_states_for_whole_match(size_t budget) {
  return Status(ErrorCode::kLimitExceeded,
                "the pattern needs more than " + std::to_string(budget) + " automaton states");
}

}  // namespace

namespace {

// The automaton of `branches` (their lookaheads aside): strings that contain
// a match of one (`whole`: that are one), labelled `label`.
Result<CharDfa> branches_dfa(const std::vector<RegexBranch>& branches, bool whole, uint32_t label,
                             size_t max_states) {
  // (A whole match only needs as many NFA states as the budget; a search
  // adds the unanchored ends, which determinize to few states.)
  NfaBuilder builder(whole ? max_states : max_states * 8);
  const uint32_t start = builder.add();
  const uint32_t accept = builder.add();
  RegexNode anything;
  anything.kind = RegexNode::Kind::kRepeat;
  anything.min = 0;
  anything.max = kUnbounded;
  RegexNode any_char;
  any_char.kind = RegexNode::Kind::kChars;
  any_char.chars = all_code_points();
  anything.children.push_back(any_char);
  // After a match of a branch not anchored at its end, anything may follow:
  // one state looping on every character, shared by those branches.
  uint32_t matched = kNoAbsorbing;
  for (const RegexBranch& branch : branches) {
    if (whole && !branch.followed_by.empty())
      return Status(ErrorCode::kUnsupported,
                    "a lookahead at the end of a pattern that must match the whole text is not "
                    "supported");
    uint32_t at = builder.add();
    builder.epsilon(start, at);
    if (!whole && !branch.anchored_start) at = builder.build(anything, at);
    at = builder.build(branch.body, at);
    for (const RegexNode& lookahead : branch.followed_by)
      at = builder.build(lookahead.children[0], at);
    if (!whole && !branch.anchored_end) {
      if (matched == kNoAbsorbing) {
        matched = builder.add();
        builder.edge(matched, all_code_points(), matched);
        builder.epsilon(matched, accept);
      }
      builder.epsilon(at, matched);
      continue;
    }
    builder.epsilon(at, accept);
  }
  auto too_many = whole ? too_many_states_for_whole_match : too_many_states;
  if (builder.over()) return too_many(max_states);
  return subset_construction(builder.states(), start, accept, label, max_states, too_many, matched);
}

// branches_dfa, each branch narrowed by its lookaheads: the strings that
// start with a match of a (?=X) (X ending in $: that are one), and not with
// one of a (?!X).
Result<CharDfa> branches_dfa_with_lookaheads(const std::vector<RegexBranch>& branches, bool whole,
                                             uint32_t label, size_t max_states) {
  bool any = false;
  for (const RegexBranch& branch : branches) any = any || !branch.lookaheads.empty();
  if (!any) return branches_dfa(branches, whole, label, max_states);
  std::optional<CharDfa> all;
  for (const RegexBranch& branch : branches) {
    RegexBranch alone = branch;
    alone.lookaheads.clear();
    Result<CharDfa> dfa = branches_dfa({alone}, whole, 1, max_states);
    if (!dfa.ok()) return dfa;
    for (const RegexNode& lookahead : branch.lookaheads) {
      RegexNode from_start;
      from_start.kind = RegexNode::Kind::kConcat;
      from_start.children.resize(1);
      from_start.children[0].kind = RegexNode::Kind::kLineStart;
      from_start.children.push_back(lookahead.children[0]);
      Result<CharDfa> holds = dfa_from_regex(from_start, 1, max_states);
      if (!holds.ok()) return holds;
      if (lookahead.kind == RegexNode::Kind::kNegativeLookahead) *holds = dfa_complement(*holds);
      dfa = dfa_intersection(*dfa, *holds, max_states);
      if (!dfa.ok()) return dfa;
    }
    if (!all) {
      all = std::move(*dfa);
      continue;
    }
    Result<CharDfa> either = dfa_product(
        *all, *dfa, [](uint32_t a, uint32_t b) -> uint32_t { return a != 0 || b != 0 ? 1 : 0; },
        max_states);
    if (!either.ok()) return either;
    all = dfa_minimize(*either, [](uint32_t l) { return l != 0; });
  }
  for (CharDfa::State& state : all->states)
    if (state.label != 0) state.label = label;
  return std::move(*all);
}

}  // namespace

Result<CharDfa> dfa_from_regex(const RegexNode& pattern, uint32_t label, size_t max_states) {
  Result<std::vector<RegexBranch>> branches = regex_branches(pattern);
  if (!branches.ok()) return branches.status();
  return branches_dfa_with_lookaheads(*branches, false, label, max_states);
}

Result<CharDfa> dfa_from_whole_regex(const RegexNode& pattern, size_t max_states) {
  // Anchors at the edges of a branch change nothing when the match must
  // span the whole text; regex_branches refuses the others.
  Result<std::vector<RegexBranch>> branches = regex_branches(pattern);
  if (!branches.ok()) return branches.status();
  return branches_dfa_with_lookaheads(*branches, true, 1, max_states);
}

CharDfa dfa_any(uint32_t label) {
  CharDfa dfa;
  dfa.states.resize(1);
  dfa.states[0].label = label;
  dfa.states[0].edges.push_back({all_code_points(), 0});
  return dfa;
}

CharDfa dfa_words(const std::vector<std::string>& words, uint32_t label) {
  CharDfa dfa;
  dfa.states.resize(1);
  std::vector<std::map<uint32_t, uint32_t>> children(1);
  for (const std::string& word : words) {
    uint32_t at = 0;
    for (size_t i = 0; i < word.size();) {
      uint32_t cp = 0;
      i += utf8::decode_unchecked(word, i, &cp);
      auto it = children[at].find(cp);
      if (it == children[at].end()) {
        const auto id = static_cast<uint32_t>(dfa.states.size());
        dfa.states.emplace_back();
        children.emplace_back();
        children[at][cp] = id;
        at = id;
      } else {
        at = it->second;
      }
    }
    dfa.states[at].label = label;
  }
  for (size_t s = 0; s < children.size(); ++s)
    for (const auto& [cp, target] : children[s])
      dfa.states[s].edges.push_back({{{cp, cp}}, target});
  return dfa;
}

Result<CharDfa> dfa_length(uint64_t min, std::optional<uint64_t> max, size_t max_states) {
  const uint64_t last = max ? *max : min;
  if (last + 1 > max_states) return too_many_states(max_states);
  CharDfa dfa;
  dfa.states.resize(static_cast<size_t>(last) + 1);
  for (uint64_t k = 0; k <= last; ++k) {
    CharDfa::State& state = dfa.states[static_cast<size_t>(k)];
    state.label = k >= min ? 1 : 0;
    if (k < last)
      state.edges.push_back({all_code_points(), static_cast<uint32_t>(k + 1)});
    else if (!max)
      state.edges.push_back({all_code_points(), static_cast<uint32_t>(k)});
  }
  return dfa;
}

Result<CharDfa> dfa_product(const CharDfa& a, const CharDfa& b,
                            const std::function<uint32_t(uint32_t, uint32_t)>& combine,
                            size_t max_states) {
  CharDfa dfa;
  std::unordered_map<uint64_t, uint32_t> ids;  // (x, y) -> product state
  std::vector<std::pair<uint32_t, uint32_t>> pending;
  auto intern = [&](uint32_t x, uint32_t y) -> std::optional<uint32_t> {
    const uint64_t key = (uint64_t{x} << 32) | y;
    auto it = ids.find(key);
    if (it != ids.end()) return it->second;
    if (dfa.states.size() >= max_states) return std::nullopt;
    const auto id = static_cast<uint32_t>(dfa.states.size());
    ids.emplace(key, id);
    dfa.states.emplace_back();
    dfa.states[id].label =
        combine(x == kDead ? 0 : a.states[x].label, y == kDead ? 0 : b.states[y].label);
    pending.emplace_back(x, y);
    return id;
  };
  if (a.states.empty() || b.states.empty()) {
    dfa.states.resize(1);
    return dfa;
  }
  intern(0, 0);
  for (size_t next = 0; next < pending.size(); ++next) {
    const auto [x, y] = pending[next];
    static const std::vector<CharDfa::Edge> kNone;
    const std::vector<CharDfa::Edge>& ea = x == kDead ? kNone : a.states[x].edges;
    const std::vector<CharDfa::Edge>& eb = y == kDead ? kNone : b.states[y].edges;
    std::vector<const CodePointSet*> sets;
    for (const CharDfa::Edge& e : ea) sets.push_back(&e.chars);
    for (const CharDfa::Edge& e : eb) sets.push_back(&e.chars);
    bool over = false;
    std::vector<CharDfa::Edge> edges;
    for_each_piece(sets, [&](CodePointSet piece, const std::vector<uint32_t>& which) {
      uint32_t tx = kDead, ty = kDead;
      for (uint32_t i : which) {
        if (i < ea.size())
          tx = ea[i].target;
        else
          ty = eb[i - ea.size()].target;
      }
      std::optional<uint32_t> id = intern(tx, ty);
      if (!id) {
        over = true;
        return;
      }
      edges.push_back({std::move(piece), *id});
    });
    if (over) return too_many_states(max_states);
    dfa.states[next].edges = std::move(edges);
  }
  return dfa;
}

Result<CharDfa> dfa_intersection(const CharDfa& a, const CharDfa& b, size_t max_states) {
  Result<CharDfa> product = dfa_product(
      a, b, [](uint32_t x, uint32_t y) -> uint32_t { return x != 0 && y != 0 ? 1 : 0; },
      max_states);
  if (!product.ok()) return product;
  return dfa_minimize(*product, [](uint32_t label) { return label != 0; });
}

DfaLengths dfa_lengths(const CharDfa& dfa) {
  DfaLengths lengths;
  const size_t n = dfa.states.size();
  if (n == 0) return lengths;
  // Reachable from the start, by breadth: the first accepting state met
  // gives the shortest length.
  std::vector<uint64_t> depth(n, UINT64_MAX);
  std::vector<uint32_t> order{0};
  depth[0] = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t s = order[i];
    if (dfa.states[s].label != 0 && lengths.none) {
      lengths.none = false;
      lengths.min = depth[s];
    }
    for (const CharDfa::Edge& e : dfa.states[s].edges) {
      if (e.chars.empty() || depth[e.target] != UINT64_MAX) continue;
      depth[e.target] = depth[s] + 1;
      order.push_back(e.target);
    }
  }
  if (lengths.none) return lengths;
  // Useful: reachable and leading to a label. The longest string is the
  // longest path through useful states, unbounded on a cycle among them.
  std::vector<std::vector<uint32_t>> sources(n);
  for (uint32_t s : order)
    for (const CharDfa::Edge& e : dfa.states[s].edges)
      if (!e.chars.empty()) sources[e.target].push_back(s);
  std::vector<bool> useful(n, false);
  std::vector<uint32_t> work;
  for (uint32_t s : order)
    if (dfa.states[s].label != 0) {
      useful[s] = true;
      work.push_back(s);
    }
  while (!work.empty()) {
    const uint32_t t = work.back();
    work.pop_back();
    for (uint32_t s : sources[t])
      if (!useful[s]) {
        useful[s] = true;
        work.push_back(s);
      }
  }
  // Kahn's order over the useful states; states left over lie on a cycle.
  std::vector<uint32_t> pending(n, 0);
  for (uint32_t s : order)
    if (useful[s])
      for (const CharDfa::Edge& e : dfa.states[s].edges)
        if (!e.chars.empty() && useful[e.target]) ++pending[e.target];
  std::vector<uint64_t> longest(n, 0);
  std::vector<uint32_t> ready;
  if (pending[0] == 0) ready.push_back(0);
  size_t done = 0, total = 0;
  for (uint32_t s : order) total += useful[s] ? 1 : 0;
  uint64_t max = 0;
  while (!ready.empty()) {
    const uint32_t s = ready.back();
    ready.pop_back();
    ++done;
    if (dfa.states[s].label != 0) max = std::max(max, longest[s]);
    for (const CharDfa::Edge& e : dfa.states[s].edges) {
      if (e.chars.empty() || !useful[e.target]) continue;
      longest[e.target] = std::max(longest[e.target], longest[s] + 1);
      if (--pending[e.target] == 0) ready.push_back(e.target);
    }
  }
  if (done == total) lengths.max = max;
  return lengths;
}

CharDfa dfa_complement(const CharDfa& a, uint32_t label) {
  CharDfa dfa = a;
  const auto sink = static_cast<uint32_t>(dfa.states.size());
  dfa.states.emplace_back();
  dfa.states[sink].edges.push_back({all_code_points(), sink});
  for (uint32_t s = 0; s < sink; ++s) {
    CodePointSet missing = complement_set(union_of(dfa.states[s].edges));
    if (!missing.empty()) dfa.states[s].edges.push_back({std::move(missing), sink});
  }
  for (CharDfa::State& state : dfa.states) state.label = state.label == 0 ? label : 0;
  dfa.states[sink].label = label;
  return dfa;
}

CharDfa dfa_minimize(const CharDfa& a, const std::function<bool(uint32_t)>& keep) {
  const size_t n = a.states.size();
  // States from which a kept label is reachable.
  std::vector<std::vector<uint32_t>> reverse(n);
  for (uint32_t s = 0; s < n; ++s)
    for (const CharDfa::Edge& e : a.states[s].edges) reverse[e.target].push_back(s);
  std::vector<bool> useful(n, false);
  std::vector<uint32_t> stack;
  for (uint32_t s = 0; s < n; ++s)
    if (keep(a.states[s].label)) useful[s] = true, stack.push_back(s);
  while (!stack.empty()) {
    uint32_t s = stack.back();
    stack.pop_back();
    for (uint32_t p : reverse[s])
      if (!useful[p]) useful[p] = true, stack.push_back(p);
  }
  CharDfa empty;
  empty.states.resize(1);
  if (n == 0 || !useful[0]) return empty;
  // The code point intervals on which every edge is constant: columns of
  // a dense transition table.
  std::vector<uint32_t> bounds;
  for (uint32_t s = 0; s < n; ++s) {
    if (!useful[s]) continue;
    for (const CharDfa::Edge& e : a.states[s].edges)
      for (const CodePointRange& r : e.chars)
        bounds.push_back(r.first), bounds.push_back(r.last + 1);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  const size_t columns = bounds.empty() ? 0 : bounds.size() - 1;
  auto column_of = [&](uint32_t cp) {
    return static_cast<size_t>(std::upper_bound(bounds.begin(), bounds.end(), cp) -
                               bounds.begin()) -
           1;
  };
  std::vector<uint32_t> table(n * columns, kDead);
  for (uint32_t s = 0; s < n; ++s) {
    if (!useful[s]) continue;
    for (const CharDfa::Edge& e : a.states[s].edges) {
      if (!useful[e.target]) continue;
      for (const CodePointRange& r : e.chars)
        for (size_t c = column_of(r.first); c < columns && bounds[c] <= r.last; ++c)
          table[s * columns + c] = e.target;
    }
  }
  // Moore refinement: start from the kept labels, split by the block each
  // column leads to, until the partition stops changing.
  std::vector<uint32_t> block(n, 0);
  size_t blocks = 0;
  {
    std::map<uint32_t, uint32_t> by_label;
    for (uint32_t s = 0; s < n; ++s) {
      if (!useful[s]) continue;
      uint32_t label = keep(a.states[s].label) ? a.states[s].label : 0;
      block[s] = by_label.emplace(label, static_cast<uint32_t>(by_label.size())).first->second;
    }
    blocks = by_label.size();
  }
  // Refinement costs a pass per distinguishing length: past a few thousand
  // states (a length bound times a pattern, already minimal but for the
  // counting) only the useless states go.
  constexpr size_t kRefinedStates = 2048;
  size_t useful_count = static_cast<size_t>(std::count(useful.begin(), useful.end(), true));
  if (useful_count > kRefinedStates) {
    blocks = 0;
    for (uint32_t s = 0; s < n; ++s)
      if (useful[s]) block[s] = static_cast<uint32_t>(blocks++);
  }
  // Hopcroft's refinement (the same coarsest partition as splitting by
  // signatures until nothing changes, without a pass per length): blocks
  // are split by the states that step into a splitter block on a column.
  // The dead state (index n) is a block of its own.
  if (useful_count <= kRefinedStates) {
    const uint32_t dead = static_cast<uint32_t>(n);
    std::vector<uint32_t> of(n + 1, kDead);  // state -> block
    std::vector<std::vector<uint32_t>> members;
    for (uint32_t s = 0; s < n; ++s) {
      if (!useful[s]) continue;
      if (block[s] >= members.size()) members.resize(block[s] + 1);
      members[block[s]].push_back(s);
      of[s] = block[s];
    }
    of[dead] = static_cast<uint32_t>(members.size());
    members.push_back({dead});
    // Predecessors per column, as offsets into one array.
    std::vector<uint32_t> start((n + 1) * columns + 1, 0);
    auto target = [&](uint32_t s, size_t c) -> uint32_t {
      if (s == dead) return dead;
      uint32_t t = table[s * columns + c];
      return t == kDead ? dead : t;
    };
    std::vector<uint32_t> states;
    for (uint32_t s = 0; s <= n; ++s)
      if (s == dead || useful[s]) states.push_back(s);
    for (uint32_t s : states)
      for (size_t c = 0; c < columns; ++c) ++start[target(s, c) * columns + c + 1];
    for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    std::vector<uint32_t> preds(start.back());
    {
      std::vector<uint32_t> fill(start.begin(), start.end() - 1);
      for (uint32_t s : states)
        for (size_t c = 0; c < columns; ++c) preds[fill[target(s, c) * columns + c]++] = s;
    }
    std::vector<uint32_t> work;
    std::vector<bool> waiting(members.size(), false);
    for (uint32_t b = 0; b < members.size(); ++b) work.push_back(b), waiting[b] = true;
    std::vector<bool> marked(n + 1, false);
    std::vector<uint32_t> count;
    std::vector<uint32_t> touched, hit, splitter;
    while (!work.empty()) {
      const uint32_t a = work.back();
      work.pop_back();
      waiting[a] = false;
      splitter = members[a];
      for (size_t c = 0; c < columns; ++c) {
        hit.clear();
        touched.clear();
        count.resize(members.size(), 0);
        for (uint32_t t : splitter)
          for (uint32_t i = start[t * columns + c]; i < start[t * columns + c + 1]; ++i) {
            const uint32_t s = preds[i];
            if (marked[s]) continue;
            marked[s] = true;
            hit.push_back(s);
            if (count[of[s]]++ == 0) touched.push_back(of[s]);
          }
        for (uint32_t b : touched) {
          if (count[b] < members[b].size()) {
            const auto fresh = static_cast<uint32_t>(members.size());
            std::vector<uint32_t> in, out;
            for (uint32_t s : members[b]) (marked[s] ? in : out).push_back(s);
            members[b] = std::move(out);
            for (uint32_t s : in) of[s] = fresh;
            members.push_back(std::move(in));
            waiting.push_back(false);
            count.push_back(0);
            if (waiting[b] || members[fresh].size() <= members[b].size()) {
              work.push_back(fresh), waiting[fresh] = true;
            } else {
              work.push_back(b), waiting[b] = true;
            }
          }
          count[b] = 0;
        }
        for (uint32_t s : hit) marked[s] = false;
      }
    }
    for (uint32_t s = 0; s < n; ++s)
      if (useful[s]) block[s] = of[s];
    blocks = members.size();
  }
  // Renumber with the start first.
  std::vector<uint32_t> order(blocks, kDead);
  std::vector<uint32_t> representative;
  auto number = [&](uint32_t s) {
    if (order[block[s]] == kDead) {
      order[block[s]] = static_cast<uint32_t>(representative.size());
      representative.push_back(s);
    }
  };
  number(0);
  for (uint32_t s = 0; s < n; ++s)
    if (useful[s]) number(s);
  CharDfa out;
  out.states.resize(representative.size());
  for (size_t i = 0; i < representative.size(); ++i) {
    const uint32_t s = representative[i];
    out.states[i].label = keep(a.states[s].label) ? a.states[s].label : 0;
    std::map<uint32_t, CodePointSet> by_target;
    for (size_t c = 0; c < columns; ++c) {
      uint32_t t = table[s * columns + c];
      if (t != kDead) by_target[order[block[t]]].push_back({bounds[c], bounds[c + 1] - 1});
    }
    for (auto& [target, set] : by_target)
      out.states[i].edges.push_back({normalize_set(std::move(set)), target});
  }
  return out;
}

bool dfa_accepts(const CharDfa& dfa, const std::string& text,
                 const std::function<bool(uint32_t)>& keep) {
  if (dfa.states.empty()) return false;
  uint32_t at = 0;
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    i += utf8::decode_unchecked(text, i, &cp);
    uint32_t next = kDead;
    for (const CharDfa::Edge& e : dfa.states[at].edges)
      if (set_contains(e.chars, cp)) next = e.target;
    if (next == kDead) return false;
    at = next;
  }
  return keep(dfa.states[at].label);
}

std::string dfa_to_gbnf(const CharDfa& dfa, const std::function<bool(uint32_t)>& keep,
                        const std::function<std::string()>& new_rule,
                        const std::function<void(const std::string&, const std::string&)>& define,
                        const std::string& suffix) {
  const CharDfa min = dfa_minimize(dfa, keep);
  const bool accepts_something = min.states[0].label != 0 || !min.states[0].edges.empty();
  if (!accepts_something) return "";
  std::vector<std::string> names;
  for (size_t i = 0; i < min.states.size(); ++i) names.push_back(new_rule());
  for (size_t i = 0; i < min.states.size(); ++i) {
    const CharDfa::State& state = min.states[i];
    // Self-loops as a repetition, so a state that only loops needs no
    // recursion (`[a-z]*` stays one rule).
    CodePointSet self;
    std::vector<std::string> onward;
    for (const CharDfa::Edge& e : state.edges) {
      if (e.target == i)
        self.insert(self.end(), e.chars.begin(), e.chars.end());
      else
        onward.push_back(json_char_gbnf(e.chars) + " " + names[e.target]);
    }
    // With a suffix, a string that may end here continues with it (so the
    // states before it end nothing: a caller that names the automaton
    // need not complete it at every character).
    if (state.label != 0 && !suffix.empty()) onward.push_back(suffix);
    std::string body;
    if (!self.empty()) body = "(" + json_char_gbnf(normalize_set(std::move(self))) + ")*";
    if (!onward.empty()) {
      std::string choice;
      for (size_t k = 0; k < onward.size(); ++k) choice += (k ? " | " : "") + onward[k];
      choice = "(" + choice + ")";
      if (state.label != 0 && suffix.empty()) choice += "?";
      body += (body.empty() ? "" : " ") + choice;
    }
    define(names[i], body.empty() ? "\"\"" : body);
  }
  return names[0];
}

}  // namespace grammask::internal
