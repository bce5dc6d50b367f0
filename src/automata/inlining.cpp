// The inlining policy: the cycles of references (which rules must stay
// rules, which are on a cycle) and the estimated NFA sizes that decide
// whether a reference is inlined. Contract in inlining.h.
#include "automata/inlining.h"

#include <algorithm>
#include <unordered_set>

#include "automata/lowering_impl.h"

namespace grammask::internal {

namespace {

// Whether every text `e` matches is non-empty, as far as its own parts
// tell (a rule reference counts as possibly empty).
bool surely_consumes(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      return !e.literal.empty();
    case Expr::Kind::kCharClass:
    case Expr::Kind::kAnyChar:
    case Expr::Kind::kToken:
      return true;
    case Expr::Kind::kSequence:
      return std::any_of(e.children.begin(), e.children.end(), surely_consumes);
    case Expr::Kind::kAlternation:
      return !e.children.empty() &&
             std::all_of(e.children.begin(), e.children.end(), surely_consumes);
    case Expr::Kind::kRepeat:
      return e.min >= 1 && surely_consumes(e.children[0]);
    default:
      return false;
  }
}

// The references of `e`, each as (rule << 1) | whether it is a guarded
// tail reference: in tail position (the last part of a sequence, an
// alternative, an optional part, as build_tail builds them) after some part
// of the body that surely reads a character. A chain of such references
// reads a character per rule, so an automaton state of it holds a few of
// its rules, not a run of them (`("," m1)? a2` names a2 unguarded, and
// inlining a chain of those makes each state hold every later member).
// Not guarded past the estimates' depth guard.
void collect_refs(const Expr& e, bool tail, bool guarded, int depth, std::vector<uint32_t>& out) {
  if (e.kind == Expr::Kind::kRuleRef) {
    out.push_back(e.rule << 1 | (tail && guarded ? 1u : 0u));
    return;
  }
  tail = tail && depth <= 200;
  switch (e.kind) {
    case Expr::Kind::kSequence:
      for (size_t i = 0; i < e.children.size(); ++i) {
        const bool last = i + 1 == e.children.size();
        collect_refs(e.children[i], tail && last, guarded, depth + 1, out);
        guarded = guarded || (tail && !last && surely_consumes(e.children[i]));
      }
      return;
    case Expr::Kind::kAlternation:
      for (const Expr& c : e.children) collect_refs(c, tail, guarded, depth + 1, out);
      return;
    case Expr::Kind::kRepeat:
      for (const Expr& c : e.children) collect_refs(c, tail && e.max <= 1, guarded, depth + 1, out);
      return;
    default:
      for (const Expr& c : e.children) collect_refs(c, false, false, depth + 1, out);
  }
}

// The rules whose every copy lies in one tail context: named only last, by
// rules that are all in the context of one entry rule (see
// ReferenceCycles::in_tail_group). `refs` as collect_refs() makes them.
// Parents are resolved before children by an explicit stack, since a chain
// of them may be as long as the grammar.
std::vector<bool> find_tail_groups(const std::vector<std::vector<uint32_t>>& refs,
                                   const ReferenceCycles& cycles, uint32_t root) {
  const size_t n = refs.size();
  // Only the rules the root reaches name rules in the lowered grammar (a
  // pattern's automaton written in full may have states nothing enters).
  std::vector<bool> reached(n, false);
  std::vector<uint32_t> stack{root};
  reached[root] = true;
  while (!stack.empty()) {
    const uint32_t v = stack.back();
    stack.pop_back();
    for (uint32_t ref : refs[v])
      if (!reached[ref >> 1]) {
        reached[ref >> 1] = true;
        stack.push_back(ref >> 1);
      }
  }
  // The rules naming each rule, in one array (a rule naming another twice
  // is listed twice).
  std::vector<uint32_t> parent_begin(n + 1, 0), parents;
  std::vector<bool> candidate(n, true);
  for (uint32_t r = 0; r < n; ++r) {
    if (!reached[r]) continue;
    for (uint32_t ref : refs[r]) {
      ++parent_begin[(ref >> 1) + 1];
      if ((ref & 1) == 0) candidate[ref >> 1] = false;
    }
  }
  for (size_t r = 0; r < n; ++r) parent_begin[r + 1] += parent_begin[r];
  parents.resize(parent_begin[n]);
  std::vector<uint32_t> fill(parent_begin.begin(), parent_begin.end() - 1);
  for (uint32_t r = 0; r < n; ++r)
    if (reached[r])
      for (uint32_t ref : refs[r]) parents[fill[ref >> 1]++] = r;
  for (uint32_t r = 0; r < n; ++r)
    if (parent_begin[r] == parent_begin[r + 1] || cycles.on_cycle[r]) candidate[r] = false;
  // entry[r]: r itself when it is not in a group, else its group's entry.
  constexpr uint32_t kUnknown = UINT32_MAX;
  std::vector<uint32_t> entry(n, kUnknown);
  for (uint32_t r = 0; r < n; ++r) {
    if (entry[r] != kUnknown) continue;
    stack.push_back(r);
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      if (!candidate[v]) {
        entry[v] = v;
        stack.pop_back();
        continue;
      }
      // A candidate's parents are not on a cycle with it, so this ends.
      const uint32_t* first = parents.data() + parent_begin[v];
      const uint32_t* last = parents.data() + parent_begin[v + 1];
      bool ready = true;
      for (const uint32_t* p = first; p != last; ++p)
        if (entry[*p] == kUnknown) {
          stack.push_back(*p);
          ready = false;
        }
      if (!ready) continue;
      bool one = true;
      for (const uint32_t* p = first; p != last; ++p) one = one && entry[*p] == entry[*first];
      entry[v] = one ? entry[*first] : v;
      stack.pop_back();
    }
  }
  std::vector<bool> member(n, false);
  for (uint32_t r = 0; r < n; ++r) member[r] = entry[r] != r;
  return member;
}

}  // namespace

// Every cycle of references must keep one rule as a rule (a rule edge
// the Earley engine follows); the others may be inlined. The kept ones are
// the targets of the back edges of a depth-first search from the root:
// every cycle has one. So `value` stays a rule in JSON, but `object` and
// `array` inline into it, and in a schema whose objects nest through a
// member, the member chain inlines into the object: their numbers and
// keys are plain DFA states instead of rule calls. The same search finds
// the rules on a cycle at all (on_cycle: a strongly connected component
// of more than one rule, or a rule naming itself; Tarjan's algorithm),
// which get a larger inline limit (see Lowering::within_limit), and the
// places that name each rule count its copies. Iterative, so deep
// grammars cannot overflow the stack.
ReferenceCycles find_reference_cycles(const Grammar& grammar, uint32_t root) {
  const size_t n = grammar.rules().size();
  std::vector<std::vector<uint32_t>> refs(n);  // (rule << 1) | guarded tail reference
  for (size_t i = 0; i < n; ++i) collect_refs(grammar.rules()[i].body, true, false, 0, refs[i]);
  ReferenceCycles cycles;
  cycles.recursive.assign(n, false);
  cycles.on_cycle.assign(n, false);
  cycles.places.assign(n, 0);
  for (const std::vector<uint32_t>& r : refs)
    for (uint32_t ref : r) ++cycles.places[ref >> 1];
  constexpr uint32_t kUnvisited = UINT32_MAX;
  std::vector<uint32_t> index(n, kUnvisited), low(n, 0);
  // on_path: on the search's current path; in_component: on Tarjan's
  // stack of rules whose component is not closed yet.
  std::vector<uint8_t> on_path(n, 0), in_component(n, 0);
  std::vector<uint32_t> component;
  struct Frame {
    uint32_t rule;
    size_t next;
  };
  std::vector<Frame> frames;
  uint32_t counter = 0;
  auto enter = [&](uint32_t rule) {
    index[rule] = low[rule] = counter++;
    on_path[rule] = in_component[rule] = 1;
    component.push_back(rule);
    frames.push_back({rule, 0});
  };
  auto search_from = [&](uint32_t start) {
    if (index[start] != kUnvisited) return;
    enter(start);
    while (!frames.empty()) {
      Frame& f = frames.back();
      const uint32_t v = f.rule;
      if (f.next < refs[v].size()) {
        const uint32_t w = refs[v][f.next++] >> 1;
        if (on_path[w]) cycles.recursive[w] = true;  // a back edge: w closes a cycle
        if (w == v) cycles.on_cycle[v] = true;
        if (index[w] == kUnvisited) {
          enter(w);
        } else if (in_component[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      on_path[v] = 0;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().rule] = std::min(low[frames.back().rule], low[v]);
      if (low[v] != index[v]) continue;
      // v roots a component: the rules above it on Tarjan's stack.
      const bool cycle = component.back() != v;
      for (;;) {
        const uint32_t w = component.back();
        component.pop_back();
        in_component[w] = 0;
        if (cycle) cycles.on_cycle[w] = true;
        if (w == v) break;
      }
    }
  };
  search_from(root);
  for (uint32_t r = 0; r < n; ++r) search_from(r);
  cycles.in_tail_group = find_tail_groups(refs, cycles, root);
  cycles.reference_begin.assign(n + 1, 0);
  for (size_t r = 0; r < n; ++r)
    cycles.reference_begin[r + 1] =
        cycles.reference_begin[r] + static_cast<uint32_t>(refs[r].size());
  cycles.references.reserve(cycles.reference_begin[n]);
  for (const std::vector<uint32_t>& r : refs)
    for (uint32_t ref : r) cycles.references.push_back(ref >> 1);
  return cycles;
}

// Estimated NFA size of `e` with its non-recursive references inlined,
// built where something follows it (so it is a tail context of its own
// where build() makes one).
size_t Lowering::estimated_size(const Expr& e, int depth) {
  if (depth > 200) return SIZE_MAX / 4;
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      return e.literal.size() * 2 + 1;
    case Expr::Kind::kCharClass:
    case Expr::Kind::kAnyChar:
      return 4 * (e.ranges.size() + 2) + 8;
    case Expr::Kind::kRuleRef:
      return inlined_here(e.rule, depth) ? inline_size(e.rule, depth + 1) : 1;
    case Expr::Kind::kRepeat: {
      if (e.max <= 1) return context_size(e, depth);
      size_t child = estimated_size(e.children[0], depth + 1);
      size_t copies = e.max == kUnbounded ? std::max<uint32_t>(e.min, 1) : e.max;
      if (child * copies > kLiftProduct) return copies + 2;
      return child * copies + 2;
    }
    case Expr::Kind::kAlternation:
      return context_size(e, depth);
    case Expr::Kind::kToken:
    case Expr::Kind::kAnyOrder:
      return 2;
    case Expr::Kind::kRegex:
    case Expr::Kind::kSubstring:
    case Expr::Kind::kTextExcluding:
      return text_terminal_size(e);
    default: {
      size_t total = 2;
      for (const Expr& c : e.children) total += estimated_size(c, depth + 1);
      return std::min(total, SIZE_MAX / 4);
    }
  }
}

// Whether a reference to `rule` is inlined (else it is a rule edge, one
// state), as the estimates see it: copied_here() for the rules that are not
// recursive, with the estimate's depth guard.
bool Lowering::inlined_here(uint32_t rule, int depth) {
  if (in_tail_group_[rule]) return true;
  return !recursive_[rule] && within_limit(rule, inline_size(rule, depth + 1));
}

// Whether `rule`, of estimated size `size`, is small enough to inline.
// Copied into every place that names it, a rule costs the places times
// its size: past copy_budget_, it stays a rule (a part named between every
// two members of a long list, an automaton named from many places).
// A rule on a cycle that stays a rule adds an Earley set link per pass
// round the cycle, so the rules on cycles get cycle_inline_factor_ times
// the limit: one link per nesting level (an object's member chain
// inlined into the object) keeps the engine's completions and the mask
// cache's context keys short.
bool Lowering::within_limit(uint32_t rule, size_t size) {
  const size_t places = places_[rule];
  if (places > 1 && size > copy_budget_ / places) return false;
  if (size <= inline_limit_) return true;
  if (!on_cycle_[rule] || size > cycle_inline_factor_ * inline_limit_) return false;
  cycle_limit_used_ = true;
  return true;
}

// Estimated size of `e` built in a tail context, without the bodies of
// the inlined rules it names in tail position: those it adds to
// `tail_refs` (they are built once per context; the caller counts them).
size_t Lowering::tail_local_size(const Expr& e, int depth, std::vector<uint32_t>& tail_refs) {
  if (depth > 200) return SIZE_MAX / 4;
  switch (e.kind) {
    case Expr::Kind::kRuleRef:
      if (!inlined_here(e.rule, depth)) return 1;
      tail_refs.push_back(e.rule);
      return 0;
    case Expr::Kind::kSequence: {
      if (e.children.empty()) return 2;
      size_t total = 2;
      for (size_t i = 0; i + 1 < e.children.size(); ++i)
        total += estimated_size(e.children[i], depth + 1);
      total += tail_local_size(e.children.back(), depth + 1, tail_refs);
      return std::min(total, SIZE_MAX / 4);
    }
    case Expr::Kind::kAlternation: {
      size_t total = 2;
      for (const Expr& c : e.children) total += tail_local_size(c, depth + 1, tail_refs);
      return std::min(total, SIZE_MAX / 4);
    }
    case Expr::Kind::kRepeat:
      if (e.max <= 1) return 2 + tail_local_size(e.children[0], depth + 1, tail_refs);
      return estimated_size(e, depth);
    default:
      return estimated_size(e, depth);
  }
}

// Estimated size of a tail context rooted at `e`.
size_t Lowering::context_size(const Expr& e, int depth) {
  std::vector<uint32_t> tail_refs;
  const size_t local = tail_local_size(e, depth, tail_refs);
  return with_shared_rules(local, tail_refs, depth);
}

// `local` plus, once each, the bodies of the rules reachable through tail
// references from `tail_refs` (and a start state for each). Stops counting
// past kLiftProduct, the largest size any decision looks at.
size_t Lowering::with_shared_rules(size_t local, const std::vector<uint32_t>& tail_refs,
                                   int depth) {
  if (tail_refs.empty()) return local;  // (the usual case: nothing to count)
  // The rules counted are those whose mark is this call's, listed on
  // shared_rule_stack_ from `base` on. A nested call (made by a summary
  // computed on first use) lists and marks its own above them and drops
  // them when done, so this call marks its rules again after one.
  if (shared_rule_mark_.size() < grammar_.rules().size())
    shared_rule_mark_.assign(grammar_.rules().size(), 0);
  const uint32_t mark = ++shared_rule_marks_;
  const size_t base = shared_rule_stack_.size();
  auto count = [&](uint32_t rule) {
    if (shared_rule_mark_[rule] == mark) return;
    shared_rule_mark_[rule] = mark;
    shared_rule_stack_.push_back(rule);
  };
  size_t total = local;
  for (uint32_t rule : tail_refs) count(rule);
  for (size_t next = base; next < shared_rule_stack_.size() && total <= kLiftProduct; ++next) {
    const uint32_t marks_before = shared_rule_marks_;
    const TailSummary& summary = tail_summary(shared_rule_stack_[next], depth + 1);
    if (shared_rule_marks_ != marks_before)
      for (size_t i = base; i < shared_rule_stack_.size(); ++i)
        shared_rule_mark_[shared_rule_stack_[i]] = mark;
    add_work(1 + summary.tail_refs.size());
    total = std::min(total + 1 + summary.local_size, SIZE_MAX / 4);
    for (uint32_t rule : summary.tail_refs) count(rule);
  }
  shared_rule_stack_.resize(base);
  return total;
}

// A rule's body in a tail context: its size without the inlined rules it
// names in tail position, and those rules (each once). Once per rule.
const Lowering::TailSummary& Lowering::tail_summary(uint32_t rule, int depth) {
  TailSummary& summary = tail_summaries_[rule];
  if (!summary.known) {
    std::vector<uint32_t> refs;
    const size_t local = tail_local_size(grammar_.rules()[rule].body, depth, refs);
    std::sort(refs.begin(), refs.end());
    refs.erase(std::unique(refs.begin(), refs.end()), refs.end());
    summary.local_size = local;
    summary.tail_refs = std::move(refs);
    summary.known = true;
  }
  return summary;
}

// The size of a rule inlined at one place: a tail context of its own.
size_t Lowering::inline_size(uint32_t rule, int depth) {
  if (inline_size_[rule] < 0) {
    const TailSummary& summary = tail_summary(rule, depth);
    inline_size_[rule] = static_cast<long long>(std::min<size_t>(
        with_shared_rules(summary.local_size, summary.tail_refs, depth), kGaveUpSize));
  }
  return static_cast<size_t>(inline_size_[rule]);
}

size_t Lowering::estimated_nfa_states(uint32_t root_index, const ReferenceCycles& cycles) {
  use_cycles(cycles);
  const size_t n = grammar_.rules().size();
  // lowered: a rule of its own; scanned: a copied rule whose references
  // were looked at (its copies name the same rules).
  std::vector<uint8_t> lowered(n, 0), scanned(n, 0);
  std::vector<uint32_t> rules{root_index}, bodies;
  lowered[root_index] = 1;
  size_t total = 0;
  while (!rules.empty()) {
    const uint32_t rule = rules.back();
    rules.pop_back();
    if (const size_t size = inline_size(rule, 0); size < kGaveUpSize) total += size;
    bodies.assign(1, rule);
    while (!bodies.empty()) {
      const uint32_t body = bodies.back();
      bodies.pop_back();
      for (uint32_t i = cycles.reference_begin[body]; i < cycles.reference_begin[body + 1]; ++i) {
        const uint32_t named = cycles.references[i];
        if (copied_here(named)) {
          if (!scanned[named]) {
            scanned[named] = 1;
            bodies.push_back(named);
          }
        } else if (!lowered[named]) {
          lowered[named] = 1;
          rules.push_back(named);
        }
      }
    }
  }
  return total;
}

bool Lowering::copied_here(uint32_t rule) {
  if (in_tail_group_[rule]) return true;
  if (recursive_[rule] && (copying_recursive_[rule] || !right_linear_cycle(rule))) return false;
  return within_limit(rule, inline_size(rule, 0));
}

bool Lowering::cycle_refs_in_tail(const Expr& e, bool tail, int depth,
                                  std::vector<uint32_t>& tail_refs) {
  if (depth > 200) return false;  // (as the size estimates: too deep to tell)
  switch (e.kind) {
    case Expr::Kind::kRuleRef:
      if (!on_cycle_[e.rule]) return true;
      if (tail) tail_refs.push_back(e.rule);
      return tail;
    case Expr::Kind::kSequence:
      for (size_t i = 0; i < e.children.size(); ++i)
        if (!cycle_refs_in_tail(e.children[i], tail && i + 1 == e.children.size(), depth + 1,
                                tail_refs))
          return false;
      return true;
    case Expr::Kind::kAlternation:
      for (const Expr& c : e.children)
        if (!cycle_refs_in_tail(c, tail, depth + 1, tail_refs)) return false;
      return true;
    case Expr::Kind::kRepeat:
      // (as build_tail: only an optional part stays in tail position)
      for (const Expr& c : e.children)
        if (!cycle_refs_in_tail(c, tail && e.max <= 1, depth + 1, tail_refs)) return false;
      return true;
    default:
      for (const Expr& c : e.children)
        if (!cycle_refs_in_tail(c, false, depth + 1, tail_refs)) return false;
      return true;
  }
}

bool Lowering::right_linear_cycle(uint32_t rule) {
  if (right_linear_cycle_[rule] < 0) {
    // Every rule reached is checked, so each of them has the answer too
    // when it is yes (what it reaches, the search reached).
    std::vector<uint32_t> seen{rule}, refs;
    std::unordered_set<uint32_t> known{rule};
    bool linear = true;
    for (size_t i = 0; i < seen.size() && linear; ++i) {
      refs.clear();
      linear = cycle_refs_in_tail(grammar_.rules()[seen[i]].body, true, 0, refs);
      for (const uint32_t r : refs)
        if (known.insert(r).second) seen.push_back(r);
    }
    if (linear) {
      for (const uint32_t r : seen) right_linear_cycle_[r] = 1;
    } else {
      right_linear_cycle_[rule] = 0;
    }
  }
  return right_linear_cycle_[rule] == 1;
}

}  // namespace grammask::internal
