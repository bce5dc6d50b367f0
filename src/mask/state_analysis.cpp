#include "mask/state_analysis.h"

#include <algorithm>
#include <cstring>

#include "base/sequence_index.h"

namespace grammask {
namespace internal {

std::vector<uint32_t> waiter_classes(const ByteGrammar& grammar) {
  const auto& states = grammar.states();
  const auto& edges = grammar.rule_edges();
  std::vector<uint32_t> classes(states.size(), kNotWaiting);
  SequenceIndex ids;  // the sorted (rule, target) pairs of a class
  ids.reset(64);
  std::vector<uint64_t> pairs;
  std::vector<uint32_t> key;
  for (size_t s = 0; s < states.size(); ++s) {
    const AutomatonState& state = states[s];
    if (state.rule_edges_begin == state.rule_edges_end) continue;
    pairs.clear();
    for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end; ++e)
      pairs.push_back((uint64_t{edges[e].rule} << 32) | edges[e].target);
    std::sort(pairs.begin(), pairs.end());
    key.clear();
    for (const uint64_t pair : pairs)
      key.insert(key.end(), {static_cast<uint32_t>(pair >> 32), static_cast<uint32_t>(pair)});
    classes[s] = ids.intern(key.data(), key.size()).first + 1;
  }
  return classes;
}

void plain_callers(const ByteGrammar& grammar, const TextClosure& closure,
                   std::vector<uint32_t>& plain_caller, std::vector<ByteSet>& callee_bytes) {
  const auto& states = grammar.states();
  plain_caller.assign(states.size(), kNotPlainCaller);
  callee_bytes.assign(1, ByteSet());  // (shared by the states that call nothing)
  for (size_t s = 0; s < states.size(); ++s) {
    const AutomatonState& state = states[s];
    // (An AnyOrder state's calls depend on what its item wrote: the engine's.)
    if (state.is_final || state.in_any_order) continue;
    if (state.calls_no_rule()) {
      plain_caller[s] = 0;
      continue;
    }
    ByteSet bytes;
    bool plain = true;
    for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end && plain; ++e) {
      const uint32_t rule = grammar.rule_edges()[e].rule;
      plain = !grammar.rules()[rule].nullable;
      bytes |= closure.rule_first_bytes(rule);
    }
    if (!plain) continue;
    plain_caller[s] = static_cast<uint32_t>(callee_bytes.size());
    callee_bytes.push_back(bytes);
  }
}

std::vector<ByteSet> rule_follow_bytes(const ByteGrammar& grammar, const TextClosure& closure) {
  const auto& states = grammar.states();
  const auto& edges = grammar.rule_edges();
  const size_t rules = grammar.rules().size();
  // Each call's target t, and past nullable callees their targets: the
  // bytes they read and their callees' first bytes go into the follow of
  // the rule called; where one may end its own rule, that rule's follow
  // does too (a dependency, propagated below).
  std::vector<ByteSet> follow(rules);
  std::vector<std::vector<uint32_t>> dependents(rules);  // S -> rules whose follow holds S's
  std::vector<uint32_t> seen(states.size(), 0), todo;
  uint32_t stamp = 0;
  for (const RuleEdge& edge : edges) {
    ++stamp;
    todo.assign(1, edge.target);
    seen[edge.target] = stamp;
    while (!todo.empty()) {
      const uint32_t t = todo.back();
      todo.pop_back();
      const AutomatonState& state = states[t];
      follow[edge.rule] |= state.scan;
      if (state.is_final && state.rule != edge.rule) dependents[state.rule].push_back(edge.rule);
      for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end; ++e) {
        follow[edge.rule] |= closure.rule_first_bytes(edges[e].rule);
        const uint32_t next = edges[e].target;
        if (grammar.rules()[edges[e].rule].nullable && seen[next] != stamp) {
          seen[next] = stamp;
          todo.push_back(next);
        }
      }
    }
  }
  std::vector<uint32_t> queue;
  std::vector<uint8_t> queued(rules, 1);
  for (uint32_t r = 0; r < rules; ++r) queue.push_back(r);
  while (!queue.empty()) {
    const uint32_t from = queue.back();
    queue.pop_back();
    queued[from] = 0;
    for (uint32_t to : dependents[from]) {
      const ByteSet before = follow[to];
      follow[to] |= follow[from];
      if (!(follow[to] == before) && !queued[to]) {
        queued[to] = 1;
        queue.push_back(to);
      }
    }
  }
  return follow;
}

std::vector<uint8_t> pure_states(const ByteGrammar& grammar) {
  const auto& states = grammar.states();
  bool root_is_called = false;
  for (const RuleEdge& edge : grammar.rule_edges())
    root_is_called |= edge.rule == grammar.root_rule();
  std::vector<uint8_t> pure(states.size());
  for (size_t s = 0; s < states.size(); ++s) {
    const AutomatonState& state = states[s];
    pure[s] = state.calls_no_rule() && !grammar.is_token_state(static_cast<uint32_t>(s)) &&
              (!state.is_final || (state.rule == grammar.root_rule() && !root_is_called));
  }
  return pure;
}

namespace {

// The refinement behind walk and local classes. `local` (walk_part null):
// the states of call chains take part, and rule edges count as
// transitions on classes past the bytes' (one per rule); else the pure
// states flagged in `walk_part`, and impure targets are one class.
// `short_classes`, if not null, receives the classes after
// TextSlice::kShortLength + 1 rounds: those of a split walk's short part.
std::vector<uint32_t> refine_classes(const ByteGrammar& grammar, size_t depth,
                                     const std::vector<uint8_t>* walk_part, uint32_t& num_classes,
                                     std::vector<uint32_t>* short_classes = nullptr,
                                     uint32_t* num_short_classes = nullptr) {
  const bool local = walk_part == nullptr;
  const uint32_t n = static_cast<uint32_t>(grammar.states().size());
  const uint32_t byte_width = grammar.num_classes();
  const uint32_t width = byte_width + (local ? static_cast<uint32_t>(grammar.rules().size()) : 0);

  std::vector<uint32_t> cls(n, kImpureClass);
  std::vector<uint32_t> pure;  // the states taking part
  std::vector<uint32_t> class_size{0};
  if (!local) {
    for (uint32_t s = 0; s < n; ++s) {
      if (!(*walk_part)[s]) continue;
      pure.push_back(s);
      cls[s] = 1;
    }
    class_size.push_back(static_cast<uint32_t>(pure.size()));
  } else {
    // Only the states of call chains (a state calling a rule whose target
    // calls it again, and those targets) take part; every other state is a
    // class of its own, which the chains' states may refer to.
    std::vector<uint8_t> in_chain(n, 0);
    for (uint32_t s = 0; s < n; ++s) {
      const AutomatonState& state = grammar.states()[s];
      // (AnyOrder states read by what their items wrote: each its own class.)
      if (state.in_any_order) continue;
      for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end; ++e)
        if (grammar.next_call_of_same_rule(e) != ByteGrammar::kNoEdge &&
            !grammar.states()[grammar.rule_edges()[e].target].in_any_order)
          in_chain[s] = in_chain[grammar.rule_edges()[e].target] = 1;
    }
    // First split: finality, and the exact targets of calls to rules that
    // may derive nothing (such a call reads no byte, so bounding the
    // lookahead by bytes says nothing about what follows it).
    SequenceIndex initial;  // the keys below
    initial.reset(64);
    std::vector<uint32_t> initial_class;  // by key number
    std::vector<uint32_t> key;
    for (uint32_t s = 0; s < n; ++s) {
      if (!in_chain[s]) {
        cls[s] = static_cast<uint32_t>(class_size.size());
        class_size.push_back(1);
        continue;
      }
      const AutomatonState& state = grammar.states()[s];
      // (Also a rule called twice from one state: the transitions below
      // hold one target per rule.)
      key.assign(1, state.is_final ? 1u : 0u);
      const RuleEdge* first_edge = grammar.rule_edges().data() + state.rule_edges_begin;
      const RuleEdge* last_edge = grammar.rule_edges().data() + state.rule_edges_end;
      for (const RuleEdge* edge = first_edge; edge != last_edge; ++edge) {
        const bool twice = std::count_if(first_edge, last_edge, [&](const RuleEdge& other) {
                             return other.rule == edge->rule;
                           }) > 1;
        if (grammar.rules()[edge->rule].nullable || twice)
          key.insert(key.end(), {edge->rule, edge->target});
      }
      const auto [k, inserted] = initial.intern(key.data(), key.size());
      if (inserted) {
        initial_class.push_back(static_cast<uint32_t>(class_size.size()));
        class_size.push_back(0);
      }
      cls[s] = initial_class[k];
      ++class_size[cls[s]];
      pure.push_back(s);
    }
  }
  num_classes = static_cast<uint32_t>(class_size.size());
  if (pure.empty()) {
    if (short_classes != nullptr) *short_classes = cls;
    if (num_short_classes != nullptr) *num_short_classes = num_classes;
    return cls;
  }

  // Each pure state's transitions as runs of byte classes with one target
  // (a state has a few distinct targets among dozens of classes): the
  // grammar's own, or for local classes a copy with the calls appended.
  std::vector<uint32_t> run_begin;
  std::vector<ClassRun> runs;
  if (local) {
    run_begin.assign(n + 1, 0);
    std::vector<uint8_t> taking_part(n, 0);
    for (uint32_t s : pure) taking_part[s] = 1;
    std::vector<RuleEdge> calls;
    for (uint32_t s = 0; s < n; ++s) {
      run_begin[s] = static_cast<uint32_t>(runs.size());
      if (!taking_part[s]) continue;
      runs.insert(runs.end(), grammar.runs_begin(s), grammar.runs_end(s));
      // Calls to rules that derive something, as transitions on class
      // byte_width + rule (a DFA state calls a rule at most once).
      const AutomatonState& state = grammar.states()[s];
      calls.assign(grammar.rule_edges().begin() + state.rule_edges_begin,
                   grammar.rule_edges().begin() + state.rule_edges_end);
      std::sort(calls.begin(), calls.end(),
                [](const RuleEdge& a, const RuleEdge& b) { return a.rule < b.rule; });
      uint32_t next_class = byte_width;  // the first class not yet covered
      for (size_t i = 0; i < calls.size(); ++i) {
        const RuleEdge& call = calls[i];
        const bool twice = (i > 0 && calls[i - 1].rule == call.rule) ||
                           (i + 1 < calls.size() && calls[i + 1].rule == call.rule);
        if (grammar.rules()[call.rule].nullable || twice) continue;  // (in the first split)
        if (byte_width + call.rule > next_class && runs.back().target != kNoState)
          runs.push_back({next_class, kNoState});
        runs.push_back({byte_width + call.rule, call.target});
        next_class = byte_width + call.rule + 1;
      }
      if (next_class < width && runs.back().target != kNoState)
        runs.push_back({next_class, kNoState});
    }
    run_begin[n] = static_cast<uint32_t>(runs.size());
  }
  auto first_run = [&](uint32_t s) {
    return local ? runs.data() + run_begin[s] : grammar.runs_begin(s);
  };
  auto last_run = [&](uint32_t s) {
    return local ? runs.data() + run_begin[s + 1] : grammar.runs_end(s);
  };

  // Pure predecessors of each pure state (impure states never change
  // class), from the runs; a predecessor may be listed more than once.
  std::vector<uint32_t> pred_begin(n + 1, 0), preds;
  auto each_pure_edge = [&](auto&& visit) {
    for (uint32_t s : pure)
      for (const ClassRun *run = first_run(s), *end = last_run(s); run != end; ++run)
        if (const uint32_t t = run->target; t != kNoState && cls[t] != kImpureClass) visit(s, t);
  };
  each_pure_edge([&](uint32_t, uint32_t t) { ++pred_begin[t + 1]; });
  for (uint32_t s = 0; s < n; ++s) pred_begin[s + 1] += pred_begin[s];
  preds.resize(pred_begin[n]);
  std::vector<uint32_t> fill(pred_begin.begin(), pred_begin.end() - 1);
  each_pure_edge([&](uint32_t s, uint32_t t) { preds[fill[t]++] = s; });
  auto target_class = [&](uint32_t t) { return t == kNoState ? UINT32_MAX : cls[t]; };
  // A state's signature: its class, then (first class, target class) for
  // each maximal run of equal target classes, so that it does not depend on
  // how the runs were cut. A round's groups are its distinct signatures.
  // (One buffer sized for the longest signature: this is the hot loop.)
  uint32_t most_runs = 0;
  for (uint32_t s : pure)
    most_runs = std::max(most_runs, static_cast<uint32_t>(last_run(s) - first_run(s)));
  std::vector<uint32_t> signature(1 + 2 * size_t{most_runs});
  // Its hash is taken while it is written (a pair per multiply; every
  // signature of the index is hashed alike), not in a second pass.
  uint64_t signature_hash = 0;
  auto write_signature = [&](uint32_t s) -> size_t {
    constexpr uint64_t kOdd = 0x9E3779B97F4A7C15ULL;
    uint32_t* out = signature.data();
    *out++ = cls[s];
    uint64_t h = (cls[s] + 1) * kOdd;
    uint32_t previous = UINT32_MAX - 1;
    const ClassRun* const end = last_run(s);
    for (const ClassRun* run = first_run(s); run != end; ++run) {
      const uint32_t c = target_class(run->target);
      if (c == previous) continue;
      // (One store for both words: their order is the machine's, the same
      // in every signature.)
      const uint64_t pair = run->first_class | uint64_t{c} << 32;
      std::memcpy(out, &pair, sizeof pair);
      out += 2;
      h = (h ^ pair) * kOdd;
      previous = c;
    }
    signature_hash = h ^ (h >> 29);
    return static_cast<size_t>(out - signature.data());
  };

  // Moore refinement, one round per byte of lookahead, until stable. A
  // round only re-signs the predecessors of the states whose class changed
  // in the previous one: the other members of a class still agree.
  std::vector<uint32_t> affected = pure, changed, group_of(n, 0), new_class;
  std::vector<uint8_t> marked(n, 0);
  SequenceIndex groups;
  std::vector<uint32_t> affected_in_class(class_size.size(), 0), keeper, group_size;
  auto take_short_classes = [&] {
    if (short_classes != nullptr && short_classes->empty()) *short_classes = cls;
  };
  for (size_t round = 0; round < depth && !affected.empty(); ++round) {
    if (round == TextSlice::kShortLength + 1) take_short_classes();
    groups.reset(affected.size());
    for (uint32_t s : affected) {
      const size_t size = write_signature(s);
      group_of[s] = groups.intern(signature.data(), size, signature_hash).first;
    }
    // A class whose members were all re-signed keeps its id for its largest
    // group (so that the fewest states change class and the next round
    // re-signs the fewest predecessors, as in Hopcroft's algorithm); every
    // other group becomes a new class.
    affected_in_class.resize(class_size.size(), 0);  // (all 0: reset after use)
    keeper.resize(class_size.size(), UINT32_MAX);    // (likewise)
    for (uint32_t s : affected) ++affected_in_class[cls[s]];
    group_size.assign(groups.count(), 0);
    for (uint32_t s : affected) ++group_size[group_of[s]];
    for (uint32_t g = 0; g < groups.count(); ++g) {
      const uint32_t old = groups.data(g)[0];  // the class the signature starts with
      if (affected_in_class[old] != class_size[old]) continue;
      if (keeper[old] == UINT32_MAX || group_size[g] > group_size[keeper[old]]) keeper[old] = g;
    }
    new_class.assign(groups.count(), UINT32_MAX);
    for (uint32_t g = 0; g < groups.count(); ++g) {
      const uint32_t old = groups.data(g)[0];
      if (keeper[old] == g) {
        new_class[g] = old;
      } else {
        new_class[g] = static_cast<uint32_t>(class_size.size());
        class_size.push_back(0);
      }
    }
    for (uint32_t s : affected) {  // ready for the next round
      affected_in_class[cls[s]] = 0;
      keeper[cls[s]] = UINT32_MAX;
    }
    changed.clear();
    for (uint32_t s : affected) {
      const uint32_t next = new_class[group_of[s]];
      if (next == cls[s]) continue;
      --class_size[cls[s]];
      ++class_size[next];
      changed.push_back(s);
    }
    for (uint32_t s : changed) cls[s] = new_class[group_of[s]];
    // (A state alone in its class cannot split: re-signing it would only
    // find it its class's keeper again.)
    affected.clear();
    for (uint32_t t : changed)
      for (uint32_t i = pred_begin[t]; i < pred_begin[t + 1]; ++i)
        if (const uint32_t s = preds[i]; !marked[s] && class_size[cls[s]] > 1) {
          marked[s] = 1;
          affected.push_back(s);
        }
    for (uint32_t s : affected) marked[s] = 0;
  }
  take_short_classes();  // (stable within kShortLength + 1 rounds)
  // Ids of emptied classes are left unused; renumber densely.
  std::vector<uint32_t> dense;
  auto renumber = [&](std::vector<uint32_t>& classes) {
    dense.assign(class_size.size(), UINT32_MAX);
    dense[kImpureClass] = kImpureClass;
    uint32_t count = 1;
    for (uint32_t& c : classes) {
      if (dense[c] == UINT32_MAX) dense[c] = count++;
      c = dense[c];
    }
    return count;
  };
  num_classes = renumber(cls);
  if (short_classes != nullptr) {
    const uint32_t count = renumber(*short_classes);
    if (num_short_classes != nullptr) *num_short_classes = count;
  }
  return cls;
}

}  // namespace

std::vector<uint32_t> compute_walk_classes(const ByteGrammar& grammar, size_t depth,
                                           const std::vector<uint8_t>& taking_part,
                                           uint32_t& num_classes,
                                           std::vector<uint32_t>& short_classes,
                                           uint32_t& num_short_classes) {
  return refine_classes(grammar, depth, &taking_part, num_classes, &short_classes,
                        &num_short_classes);
}

std::vector<uint32_t> compute_local_classes(const ByteGrammar& grammar, size_t depth,
                                            std::vector<uint32_t>& short_classes) {
  uint32_t num_classes = 0;
  return refine_classes(grammar, depth, /*walk_part=*/nullptr, num_classes, &short_classes);
}

bool has_call_chains(const ByteGrammar& grammar, size_t depth) {
  // The refinement costs about as much as lowering the states; in the large
  // schemas that have call chains (strings of up to 256 characters whose
  // characters are rule calls), it spares a trie walk per character.
  // (Lowering's own bound, RecognizerOptions::max_states, is larger.)
  constexpr size_t kMaxStates = 400000;
  if (grammar.states().size() > kMaxStates) return false;
  const auto& edges = grammar.rule_edges();
  // Chain lengths from each edge, capped past `depth`; a chain that comes
  // back to an edge it passed is long enough.
  constexpr uint32_t kUnknown = 0, kOnPath = UINT32_MAX;
  std::vector<uint32_t> length(edges.size(), kUnknown);
  std::vector<uint32_t> path;
  for (uint32_t first = 0; first < edges.size(); ++first) {
    if (length[first] != kUnknown || grammar.rules()[edges[first].rule].nullable) continue;
    path.clear();
    uint32_t e = first;
    uint32_t tail = 0;  // the length after the path
    while (true) {
      if (length[e] == kOnPath) return true;  // a cycle of calls
      if (length[e] != kUnknown) {
        tail = length[e];
        break;
      }
      length[e] = kOnPath;
      path.push_back(e);
      const uint32_t next = grammar.next_call_of_same_rule(e);
      if (next == ByteGrammar::kNoEdge) break;
      e = next;
    }
    for (size_t i = path.size(); i-- > 0;) {
      tail = std::min<uint32_t>(tail + 1, static_cast<uint32_t>(depth) + 1);
      length[path[i]] = tail;
      if (tail > depth) return true;
    }
  }
  return false;
}

std::vector<uint32_t> identity_classes(const ByteGrammar& grammar) {
  std::vector<uint32_t> identity(grammar.states().size());
  for (uint32_t s = 0; s < identity.size(); ++s) identity[s] = s;
  return identity;
}

namespace {

// Whether states a and b agree in everything but their transitions.
bool same_but_transitions(const ByteGrammar& grammar, uint32_t a, uint32_t b) {
  const AutomatonState& x = grammar.states()[a];
  const AutomatonState& y = grammar.states()[b];
  if (x.rule != y.rule || x.is_final != y.is_final || x.is_tail != y.is_tail || x.in_any_order ||
      y.in_any_order ||
      x.rule_edges_end - x.rule_edges_begin != y.rule_edges_end - y.rule_edges_begin)
    return false;
  const auto& edges = grammar.rule_edges();
  for (uint32_t i = 0; i < x.rule_edges_end - x.rule_edges_begin; ++i) {
    const RuleEdge& e = edges[x.rule_edges_begin + i];
    const RuleEdge& f = edges[y.rule_edges_begin + i];
    if (e.rule != f.rule || e.target != f.target) return false;
  }
  return true;
}

// Whether s -> t is a counter's link: t goes alike on every byte class
// where s does not go to t, and on those where it does, to one state
// (`after`, kNoState for none) other than t. O(runs of s and t).
bool counter_link(const ByteGrammar& grammar, uint32_t s, uint32_t t, uint32_t& after) {
  const uint32_t width = grammar.num_classes();
  const ClassRun *a = grammar.runs_begin(s), *a_last = grammar.runs_end(s);
  const ClassRun *b = grammar.runs_begin(t), *b_last = grammar.runs_end(t);
  after = t;  // (t: not seen yet)
  for (uint32_t c = 0; c < width;) {
    const uint32_t a_end = a + 1 != a_last ? (a + 1)->first_class : width;
    const uint32_t b_end = b + 1 != b_last ? (b + 1)->first_class : width;
    if (a->target == t) {
      if (after == t) after = b->target;
      if (b->target != after || after == t) return false;
    } else if (a->target != b->target) {
      return false;
    }
    c = std::min(a_end, b_end);
    if (c == a_end) ++a;
    if (c == b_end) ++b;
  }
  return true;
}

// The bytes on which `s` goes to `t`; class_begin[c]: the first byte of
// byte class c (classes are ranges of bytes numbered in byte order), and
// class_begin[num_classes] = 256.
ByteSet bytes_to(const ByteGrammar& grammar, uint32_t s, uint32_t t,
                 const std::vector<uint32_t>& class_begin) {
  ByteSet bytes;
  const ClassRun* end = grammar.runs_end(s);
  for (const ClassRun* run = grammar.runs_begin(s); run != end; ++run) {
    if (run->target != t) continue;
    const uint32_t last = run + 1 != end ? (run + 1)->first_class : grammar.num_classes();
    bytes.set_range(static_cast<uint8_t>(class_begin[run->first_class]),
                    static_cast<uint8_t>(class_begin[last] - 1));
  }
  return bytes;
}

// The longest run of bytes of `bytes` that a token of `trie` begins with,
// or a number past `cap` when that is longer.
uint32_t longest_leading_run(const TokenTrie& trie, const ByteSet& bytes, uint32_t cap) {
  const auto nodes = trie.nodes();
  uint32_t longest = 0;
  for (uint32_t i = 1; i < nodes.size() && longest <= cap;) {
    if (!bytes.test(nodes[i].byte)) {
      i = nodes[i].subtree_end;  // (its subtree leaves the run at its first byte)
      continue;
    }
    longest = std::max<uint32_t>(longest, nodes[i].depth);
    ++i;  // its children continue the run
  }
  return longest;
}

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> counter_positions_alike(const ByteGrammar& grammar,
                                                                   const TokenTrie& trie) {
  const uint32_t n = static_cast<uint32_t>(grammar.states().size());
  // A cheap guess first: next[s], the first state s goes to that agrees
  // with it in all but transitions, on byte class first_class[s]. Guesses
  // on one class chain into counters; ahead[s] bounds s's links.
  std::vector<uint32_t> next(n, kNoState);
  std::vector<uint16_t> first_class(n, 0);
  for (uint32_t s = 0; s < n; ++s) {
    if (grammar.is_token_state(s) || grammar.states()[s].in_any_order) continue;
    const ClassRun* end = grammar.runs_end(s);
    for (const ClassRun* run = grammar.runs_begin(s); run != end; ++run) {
      const uint32_t t = run->target;
      if (t == kNoState || t == s || !same_but_transitions(grammar, s, t)) continue;
      next[s] = t;
      first_class[s] = static_cast<uint16_t>(run->first_class);
      break;
    }
  }
  auto chained = [&](uint32_t s) {
    const uint32_t t = next[s];
    return next[t] != kNoState && first_class[t] == first_class[s];
  };
  constexpr uint32_t kUnknown = UINT32_MAX, kOnPath = UINT32_MAX - 1;
  std::vector<uint32_t> ahead(n, kUnknown);
  std::vector<uint8_t> has_before(n, 0);
  std::vector<uint32_t> path;
  for (uint32_t first = 0; first < n; ++first) {
    if (next[first] == kNoState) continue;
    if (chained(first)) has_before[next[first]] = 1;
    if (ahead[first] != kUnknown) continue;
    path.clear();
    uint32_t s = first;
    uint32_t tail = 0;
    while (true) {
      if (ahead[s] == kOnPath) {  // (a cycle: no counter)
        tail = 0;
        break;
      }
      if (ahead[s] != kUnknown) {
        tail = ahead[s];
        break;
      }
      ahead[s] = kOnPath;
      path.push_back(s);
      if (!chained(s)) break;
      s = next[s];
    }
    for (size_t i = path.size(); i-- > 0;) ahead[path[i]] = ++tail;
  }

  // Then each counter from its first position, where a join is possible:
  // positions s and t = next[s] agree to every token when the R + 1 links
  // from s are a counter's (R: the longest run of L bytes a token begins
  // with), since a token's run from t then ends within them. The run of
  // the guessed class alone bounds R from below, and rules out most
  // guesses before their L is known.
  std::vector<uint32_t> class_begin(grammar.num_classes() + 1, 256);
  for (uint32_t byte = 256; byte-- > 0;)
    class_begin[grammar.byte_class(static_cast<uint8_t>(byte))] = byte;
  std::vector<uint32_t> class_run(grammar.num_classes(), kUnknown);
  std::vector<uint32_t> most_ahead(grammar.num_classes(), 0);  // (runs past it are alike)
  for (uint32_t s = 0; s < n; ++s)
    if (next[s] != kNoState && !has_before[s])
      most_ahead[first_class[s]] = std::max(most_ahead[first_class[s]], ahead[s]);
  std::vector<std::pair<uint32_t, uint32_t>> alike;
  std::vector<ByteSet> sets;
  std::vector<uint32_t> runs;  // per set
  std::vector<uint32_t> positions;
  for (uint32_t head = 0; head < n; ++head) {
    if (next[head] == kNoState || has_before[head] || ahead[head] < 2) continue;
    uint32_t& lower = class_run[first_class[head]];
    if (lower == kUnknown) {
      ByteSet bytes;
      bytes.set_range(static_cast<uint8_t>(class_begin[first_class[head]]),
                      static_cast<uint8_t>(class_begin[first_class[head] + 1] - 1));
      lower = longest_leading_run(trie, bytes, most_ahead[first_class[head]]);
    }
    if (ahead[head] < lower + 1) continue;
    const ByteSet bytes = bytes_to(grammar, head, next[head], class_begin);
    size_t set = std::find(sets.begin(), sets.end(), bytes) - sets.begin();
    if (set == sets.size()) {
      sets.push_back(bytes);
      runs.push_back(longest_leading_run(trie, bytes, n));
    }
    const uint32_t run = runs[set];
    if (ahead[head] < run + 1) continue;
    // The links that are a counter's indeed, over one L.
    positions.assign(1, head);
    for (uint32_t s = head; positions.size() <= ahead[head];) {
      uint32_t after = kNoState;
      if (!counter_link(grammar, s, next[s], after)) break;
      positions.push_back(next[s]);
      const ClassRun* end = grammar.runs_end(s);
      const bool same_set = after != kNoState && next[next[s]] == after &&
                            std::none_of(grammar.runs_begin(s), end, [&](const ClassRun& other) {
                              return other.target == after;
                            });
      if (!same_set) break;
      s = next[s];
    }
    const size_t links = positions.size() - 1;
    for (size_t i = 0; i + run + 1 <= links; ++i)
      alike.emplace_back(positions[i], positions[i + 1]);
  }
  return alike;
}

void join_labels(const std::vector<std::pair<uint32_t, uint32_t>>& alike,
                 std::vector<uint32_t>& labels) {
  if (alike.empty()) return;
  uint32_t count = 0;
  for (uint32_t label : labels) count = std::max(count, label + 1);
  std::vector<uint32_t> parent(count);
  for (uint32_t i = 0; i < count; ++i) parent[i] = i;
  auto find = [&](uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& [s, t] : alike) {
    const uint32_t a = find(labels[s]), b = find(labels[t]);
    parent[std::max(a, b)] = std::min(a, b);
  }
  for (uint32_t& label : labels) label = find(label);
}

std::vector<uint8_t> split_classes(const std::vector<uint32_t>& walk_class, uint32_t num_classes,
                                   const std::vector<uint32_t>& short_class,
                                   uint32_t num_short_classes) {
  // A short class's first walk class, then whether it has another.
  std::vector<uint32_t> first(num_short_classes, kImpureClass);
  std::vector<uint8_t> shared(num_short_classes, 0);
  for (size_t s = 0; s < walk_class.size(); ++s) {
    const uint32_t cls = walk_class[s];
    if (cls == kImpureClass) continue;
    uint32_t& seen = first[short_class[s]];
    if (seen == kImpureClass)
      seen = cls;
    else if (seen != cls)
      shared[short_class[s]] = 1;
  }
  std::vector<uint8_t> split(num_classes, 0);
  for (size_t s = 0; s < walk_class.size(); ++s)
    if (walk_class[s] != kImpureClass) split[walk_class[s]] = shared[short_class[s]];
  return split;
}

BreadthFirstStates::BreadthFirstStates(const ByteGrammar& grammar)
    : grammar_(grammar), seen_(grammar.states().size(), 0) {
  visit(grammar.rules()[grammar.root_rule()].start);
  for (const LoweredRule& rule : grammar.rules()) visit(rule.start);
}

void BreadthFirstStates::visit(uint32_t state) {
  if (state == kNoState || seen_[state]) return;
  seen_[state] = 1;
  order_.push_back(state);
}

uint32_t BreadthFirstStates::next() {
  if (head_ == order_.size()) return kNoState;
  const uint32_t s = order_[head_++];
  for (const ClassRun* run = grammar_.runs_begin(s); run != grammar_.runs_end(s); ++run)
    visit(run->target);
  const AutomatonState& state = grammar_.states()[s];
  for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end; ++e)
    visit(grammar_.rule_edges()[e].target);
  return s;
}

WalkClasses::WalkClasses(const ByteGrammar& grammar, const std::vector<uint8_t>& pure, size_t depth)
    : grammar_(grammar), pure_(pure), depth_(depth) {
  const auto& states = grammar.states();
  const size_t n = states.size();
  pure_in_rule_.assign(grammar.rules().size(), 0);
  size_t total_pure = 0;
  for (size_t s = 0; s < n; ++s) {
    pure_in_rule_[states[s].rule] += pure[s];
    total_pure += pure[s];
  }
  const uint32_t largest_now = total_pure <= kEagerStates ? UINT32_MAX : kLazyRuleStates;
  const auto later = [&](uint32_t rule) {
    return pure_in_rule_[rule] > largest_now && pure_in_rule_[rule] <= kMaxLazyRuleStates;
  };
  std::vector<uint8_t> now(n);
  for (size_t s = 0; s < n; ++s) now[s] = pure[s] && !later(states[s].rule);
  std::vector<uint32_t> classes =
      compute_walk_classes(grammar, depth, now, num_classes_, short_class_, num_short_classes_);
  split_ = split_classes(classes, num_classes_, short_class_, num_short_classes_);
  large_index_.assign(pure_in_rule_.size(), kSmallRule);
  for (uint32_t r = 0; r < pure_in_rule_.size(); ++r) {
    if (!later(r)) continue;
    large_index_[r] = static_cast<uint32_t>(large_.size());
    large_.push_back({r, num_classes_ - 1, num_short_classes_ - 1});
    num_classes_ += pure_in_rule_[r];
    num_short_classes_ += pure_in_rule_[r];
  }
  split_.resize(num_classes_, 0);
  classed_ = std::make_unique<std::once_flag[]>(large_.size());
  class_ = std::make_unique<std::atomic<uint32_t>[]>(n);
  for (size_t s = 0; s < n; ++s)
    class_[s].store(now[s]    ? classes[s]
                    : pure[s] ? kNotYet
                              : kImpureClass,
                    std::memory_order_relaxed);
}

uint32_t WalkClasses::of_new_rule(uint32_t s) const {
  const LargeRule& large = large_[large_index_[grammar_.states()[s].rule]];
  std::call_once(classed_[&large - large_.data()], [&] { class_rule(large); });
  return class_[s].load(std::memory_order_acquire);
}

void WalkClasses::class_rule(const LargeRule& large) const {
  const auto& states = grammar_.states();
  const size_t n = states.size();
  std::vector<uint8_t> part(n);
  for (size_t s = 0; s < n; ++s) part[s] = pure_[s] && states[s].rule == large.rule;
  uint32_t num_classes = 0, num_short_classes = 0;
  std::vector<uint32_t> short_classes;
  const std::vector<uint32_t> classes =
      compute_walk_classes(grammar_, depth_, part, num_classes, short_classes, num_short_classes);
  const std::vector<uint8_t> split =
      split_classes(classes, num_classes, short_classes, num_short_classes);
  for (uint32_t c = 1; c < num_classes; ++c) split_[large.class_base + c] = split[c];
  for (size_t s = 0; s < n; ++s)
    if (part[s]) short_class_[s] = large.short_base + short_classes[s];
  for (size_t s = 0; s < n; ++s)
    if (part[s]) class_[s].store(large.class_base + classes[s], std::memory_order_release);
}

}  // namespace internal
}  // namespace grammask
