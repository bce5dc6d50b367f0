#include "automata/lowering.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "base/sequence_index.h"
#include "base/utf8.h"

namespace grammask::internal {

// --- UTF-8 ranges ---------------------------------------------------------

void utf8_sequences(uint32_t first, uint32_t last, std::vector<Utf8Sequence>& out) {
  // Split until both ends share an encoded length and every continuation
  // byte spans its full range except where the ends differ; then the
  // per-byte ranges describe exactly [first, last].
  struct Pending {
    uint32_t first, last;
  };
  std::vector<Pending> todo{{first, last}};
  while (!todo.empty()) {
    auto [lo, hi] = todo.back();
    todo.pop_back();
    if (lo > hi) continue;
    bool split = false;
    for (uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
      if (lo <= boundary && hi > boundary) {
        todo.push_back({boundary + 1, hi});
        todo.push_back({lo, boundary});
        split = true;
        break;
      }
    }
    if (split) continue;
    const int n = static_cast<int>(utf8::encoded_length(lo));
    for (int i = 1; i < n && !split; ++i) {
      const uint32_t m = (1u << (6 * i)) - 1;
      if ((lo & ~m) != (hi & ~m)) {
        if ((lo & m) != 0) {
          todo.push_back({(lo | m) + 1, hi});
          todo.push_back({lo, lo | m});
          split = true;
        } else if ((hi & m) != m) {
          todo.push_back({hi & ~m, hi});
          todo.push_back({lo, (hi & ~m) - 1});
          split = true;
        }
      }
    }
    if (split) continue;
    Utf8Sequence seq;
    seq.length = static_cast<uint8_t>(n);
    utf8::encode(lo, seq.lo);
    utf8::encode(hi, seq.hi);
    out.push_back(seq);
  }
}

// --- NFA ------------------------------------------------------------------

namespace {

// Sorts [first, last): insertion sort for the few NFA targets that a run of
// byte classes usually has, std::sort past that.
void sort_small(uint32_t* first, uint32_t* last) {
  if (last - first > 16) {
    std::sort(first, last);
    return;
  }
  for (uint32_t* i = first + 1; i < last; ++i) {
    const uint32_t value = *i;
    uint32_t* j = i;
    for (; j > first && *(j - 1) > value; --j) *j = *(j - 1);
    *j = value;
  }
}

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

// Code point ranges of a class, sorted, merged, negated if asked, and
// without surrogates (which have no UTF-8 encoding).
std::vector<CodePointRange> normalized_ranges(const Expr& e) {
  std::vector<CodePointRange> r;
  if (e.kind == Expr::Kind::kAnyChar) {
    r.push_back({0, kMaxCodePoint});
  } else {
    r = e.ranges;
    std::sort(r.begin(), r.end(),
              [](const CodePointRange& a, const CodePointRange& b) { return a.first < b.first; });
    std::vector<CodePointRange> merged;
    for (const auto& x : r) {
      if (!merged.empty() && x.first <= merged.back().last + 1) {
        merged.back().last = std::max(merged.back().last, x.last);
      } else {
        merged.push_back(x);
      }
    }
    r = std::move(merged);
    if (e.negated) {
      std::vector<CodePointRange> complement;
      uint32_t next = 0;
      for (const auto& x : r) {
        if (x.first > next) complement.push_back({next, x.first - 1});
        next = x.last + 1;
      }
      if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
      r = std::move(complement);
    }
  }
  std::vector<CodePointRange> out;
  for (const auto& x : r) {
    uint32_t last = std::min(x.last, kMaxCodePoint);
    if (x.first <= 0xDFFF && last >= 0xD800) {
      if (x.first < 0xD800) out.push_back({x.first, 0xD7FF});
      if (last > 0xDFFF) out.push_back({0xE000, last});
    } else if (x.first <= last) {
      out.push_back({x.first, last});
    }
  }
  return out;
}

}  // namespace

// --- Lowering -------------------------------------------------------------

class Lowering {
  struct PendingRule {
    const Expr* body;
  };

  // Where a fragment built in tail position must end, with the fragments of
  // the rules already referenced in tail position there. Every such
  // reference continues at `end`, so one copy of the rule's body serves
  // them all (the right-linear grammar to NFA construction): a chain of
  // rules naming one another last is inlined in linear size.
  struct TailContext {
    uint32_t end;
    std::unordered_map<uint32_t, uint32_t> rule_starts;  // source rule -> fragment start
  };

  struct TailSummary {
    bool known = false;
    size_t local_size = 0;            // without the rules named in tail position
    std::vector<uint32_t> tail_refs;  // non-recursive rules named in tail position
  };

 public:
  // `inline_limit`: the largest estimated NFA size of a rule copied into
  // the places that name it.
  // Rules on a cycle of references get `cycle_inline_factor` times that.
  Lowering(const Grammar& grammar, const RecognizerOptions& options, size_t inline_limit,
           size_t cycle_inline_factor)
      : grammar_(grammar),
        options_(options),
        inline_limit_(inline_limit),
        cycle_inline_factor_(cycle_inline_factor) {}

  // Whether some rule was inlined only thanks to the cycle factor.
  bool cycle_limit_used() const { return cycle_limit_used_; }

  Result<std::shared_ptr<const ByteGrammar>> run(std::string_view root) {
    const int root_index = grammar_.find_rule(root);
    if (root_index < 0) {
      return Status(ErrorCode::kInvalidArgument,
                    "the start rule '" + std::string(root) + "' is not defined");
    }
    if (Status s = grammar_.validate(); !s.ok()) return s;
    find_recursive_rules(static_cast<uint32_t>(root_index));
    inline_size_.assign(grammar_.rules().size(), -1);
    tail_summaries_.assign(grammar_.rules().size(), TailSummary{});
    // A rule whose automaton blows up is lowered again with its parts split
    // into rules of their own (the Earley engine then carries the
    // nondeterminism). Only that rule's automaton is rebuilt: the rules
    // before it keep theirs. Each retry splits one more body, so this ends.
    start_over(static_cast<uint32_t>(root_index));
    for (int splits = 0;;) {
      const size_t blown = determinize_from(static_cast<uint32_t>(root_index));
      if (!status_.ok()) return status_;
      if (blown == kAllFit) break;
      const Expr* body = pending_[blown].body;
      if (split_bodies_.count(body) || splits >= kMaxSplitRetries) {
        return Status(ErrorCode::kLimitExceeded,
                      "a rule of the grammar needs too many automaton states even after "
                      "splitting it",
                      body->where);
      }
      split_bodies_.insert(body);
      ++splits;
      truncate_states(dfa_begin_[blown]);
      next_rule_ = blown;
    }
    // The NFAs are done with: freed before finish() allocates the transition
    // table, which may then reuse their memory instead of faulting in fresh
    // pages.
    nfas_ = {};
    nfa_staging_ = {};
    seen_stamp_ = {};
    finish();
    return std::shared_ptr<const ByteGrammar>(std::move(out_));
  }

 private:
  static constexpr size_t kAllFit = SIZE_MAX;

  // Discards everything and builds the automata of all rules reachable from
  // the root afresh (split bodies split), ready to determinize from rule 0.
  void start_over(uint32_t root_index) {
    out_ = std::make_shared<ByteGrammar>();
    lowered_of_source_.assign(grammar_.rules().size(), kNoState);
    pending_.clear();
    lifted_by_hash_.clear();
    lifted_at_.clear();
    nfas_.clear();
    nfa_charge_.clear();
    built_split_.clear();
    dfa_begin_.clear();
    pending_edge_begin_.clear();
    pending_edges_.clear();
    pending_run_begin_.clear();
    pending_runs_.clear();
    pending_pred_count_.clear();
    total_nfa_states_ = 0;
    next_rule_ = 0;
    out_->root_rule_ = lowered_rule_for_source(root_index);
    out_->max_work_per_byte_ = options_.max_work_per_byte;
    build_pending_nfas();
    if (status_.ok()) compute_byte_classes();
    // Room for the automata, so that the largest arrays are not copied as
    // they grow (each copy is fresh pages to fault in): the subset
    // construction makes several times fewer states than the NFAs have, and
    // about one run per NFA state. Untouched room costs no page.
    out_->states_.reserve(total_nfa_states_ / 4);
    pending_run_begin_.reserve(total_nfa_states_ / 4 + 1);
    pending_edge_begin_.reserve(total_nfa_states_ / 4 + 1);
    pending_runs_.reserve(total_nfa_states_);
    pending_pred_count_.reserve(total_nfa_states_ / 4);
  }

  // Builds the NFA of every pending rule that has none yet (building one may
  // add more).
  void build_pending_nfas() {
    while (nfas_.size() < pending_.size() && status_.ok()) {
      nfas_.emplace_back();
      nfa_charge_.push_back(0);
      built_split_.push_back(false);
      dfa_begin_.push_back(0);
      build_nfa(static_cast<uint32_t>(nfas_.size() - 1));
    }
  }

  // (Re)builds the NFA of lowered rule `i`, split if its body is marked.
  void build_nfa(uint32_t i) {
    total_nfa_states_ -= nfa_charge_[i];
    const size_t charged_before = total_nfa_states_;
    building_rule_ = i;
    Nfa nfa;
    std::swap(nfa.staging, nfa_staging_);  // (lent back below, emptied)
    nfa.start = nfa.add();
    const Expr& body = *pending_[i].body;
    built_split_[i] = split_bodies_.count(&body) != 0;
    if (built_split_[i]) {
      nfa.accept = build_split(body, nfa.start, nfa, 0);
    } else {
      TailContext tail{nfa.add(), {}};
      build_tail(body, nfa.start, nfa, 0, tail);
      nfa.accept = tail.end;
    }
    nfa_charge_[i] = total_nfa_states_ - charged_before;
    nfa.freeze();
    std::swap(nfa.staging, nfa_staging_);
    nfas_[i] = std::move(nfa);
  }

  // Determinizes the rules from next_rule_ on, rebuilding first those whose
  // body was marked for splitting after their NFA was built. Returns the
  // rule whose automaton exceeded its budget, or kAllFit.
  size_t determinize_from(uint32_t root_index) {
    while (next_rule_ < pending_.size()) {
      const uint32_t i = next_rule_;
      if (!built_split_[i] && split_bodies_.count(pending_[i].body)) {
        build_nfa(i);
        build_pending_nfas();
        if (!status_.ok()) return kAllFit;
        if (!byte_classes_fit()) {
          // The new automata cut the bytes differently: the transition
          // tables of the rules done so far do not fit; begin again.
          start_over(root_index);
          if (!status_.ok()) return kAllFit;
          continue;
        }
      }
      dfa_begin_[i] = out_->states_.size();
      if (!determinize(i)) return i;
      if (!status_.ok()) return kAllFit;
      ++next_rule_;
    }
    return kAllFit;
  }

  void truncate_states(size_t n) {
    out_->states_.resize(n);
    if (pending_edge_begin_.size() > n) {
      pending_edges_.resize(pending_edge_begin_[n]);
      pending_edge_begin_.resize(n);
    }
    // (A rule's runs only lead to its own states, so the counts of the
    // states kept are exact, and the others zero again.)
    if (pending_pred_count_.size() > n)
      std::fill(pending_pred_count_.begin() + n, pending_pred_count_.end(), 0);
    if (pending_run_begin_.size() > n) {
      pending_runs_.resize(pending_run_begin_[n]);
      pending_run_begin_.resize(n);
    }
  }

  // Counts lowering work (automaton states built, NFA states and edges
  // visited by the subset construction); past
  // RecognizerOptions::max_lowering_work lowering fails.
  bool add_work(size_t units) {
    work_ += units;
    if (work_ > options_.max_lowering_work) work_exceeded();
    return status_.ok();
  }
  // The failure, out of add_work (which runs a few times per state).
  void work_exceeded() {
    if (!status_.ok()) return;
    status_ =
        Status(ErrorCode::kLimitExceeded, "lowering the grammar takes too much work (more than " +
                                              std::to_string(options_.max_lowering_work) +
                                              " units; see RecognizerOptions::max_lowering_work)");
  }

  // Like build(), but alternatives and repeated parts that are not plain
  // terminals become rules of their own and references are not inlined.
  uint32_t build_split(const Expr& e, uint32_t from, Nfa& nfa, int depth) {
    auto is_terminal = [](const Expr& x) {
      return x.kind == Expr::Kind::kLiteral || x.kind == Expr::Kind::kCharClass ||
             x.kind == Expr::Kind::kAnyChar;
    };
    auto reference = [&](const Expr& part, uint32_t at) {
      uint32_t rule;
      if (part.kind == Expr::Kind::kRuleRef) {
        rule = lowered_rule_for_source(part.rule);
      } else {
        rule = lifted_rule(part);
      }
      uint32_t target = nfa.add();
      nfa.add_rule(at, rule, target);
      charge(1);
      return target;
    };
    auto part = [&](const Expr& c, uint32_t at) {
      return is_terminal(c) ? build(c, at, nfa, depth + 1) : reference(c, at);
    };
    switch (e.kind) {
      case Expr::Kind::kSequence:
        return build_sequence(e, from, part);
      case Expr::Kind::kAlternation:
        return build_alternation(e, from, nfa, part);
      case Expr::Kind::kRepeat: {
        const Expr& child = e.children[0];
        if (is_terminal(child)) return build(e, from, nfa, depth + 1);
        // Repeat a reference to the child as its own rule.
        uint32_t rule = child.kind == Expr::Kind::kRuleRef ? lowered_rule_for_source(child.rule)
                                                           : lifted_rule(child);
        return build_repeat_of_rule(e, rule, from, nfa);
      }
      case Expr::Kind::kRuleRef:
        return reference(e, from);
      default:
        return build(e, from, nfa, depth + 1);
    }
  }

  // Every cycle of references must keep one rule as a rule (a rule edge
  // the Earley engine follows); the others may be inlined. The kept ones are
  // the targets of the back edges of a depth-first search from the root:
  // every cycle has one. So `value` stays a rule in JSON, but `object` and
  // `array` inline into it, and in a schema whose objects nest through a
  // member, the member chain inlines into the object: their numbers and
  // keys are plain DFA states instead of rule calls. The same search finds
  // the rules on a cycle at all (on_cycle_: a strongly connected component
  // of more than one rule, or a rule naming itself; Tarjan's algorithm),
  // which get a larger inline limit (see within_limit). Iterative, so deep
  // grammars cannot overflow the stack.
  void find_recursive_rules(uint32_t root) {
    const size_t n = grammar_.rules().size();
    std::vector<std::vector<uint32_t>> refs(n);
    for (size_t i = 0; i < n; ++i) collect_refs(grammar_.rules()[i].body, refs[i]);
    recursive_.assign(n, false);
    on_cycle_.assign(n, false);
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
          const uint32_t w = refs[v][f.next++];
          if (on_path[w]) recursive_[w] = true;  // a back edge: w closes a cycle
          if (w == v) on_cycle_[v] = true;
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
          if (cycle) on_cycle_[w] = true;
          if (w == v) break;
        }
      }
    };
    search_from(root);
    for (uint32_t r = 0; r < n; ++r) search_from(r);
  }

  static void collect_refs(const Expr& e, std::vector<uint32_t>& out) {
    if (e.kind == Expr::Kind::kRuleRef) out.push_back(e.rule);
    for (const Expr& c : e.children) collect_refs(c, out);
  }

  // Estimated NFA size of `e` with its non-recursive references inlined,
  // built where something follows it (so it is a tail context of its own
  // where build() makes one).
  size_t estimated_size(const Expr& e, int depth) {
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
      default: {
        size_t total = 2;
        for (const Expr& c : e.children) total += estimated_size(c, depth + 1);
        return std::min(total, SIZE_MAX / 4);
      }
    }
  }

  // Whether a reference to `rule` is inlined (else it is a rule edge, one
  // state). should_inline() with the estimate's depth guard.
  bool inlined_here(uint32_t rule, int depth) {
    return !recursive_[rule] && within_limit(rule, inline_size(rule, depth + 1));
  }

  // Whether `rule`, of estimated size `size`, is small enough to inline.
  // A rule on a cycle that stays a rule adds an Earley set link per pass
  // round the cycle, so the rules on cycles get cycle_inline_factor_ times
  // the limit: one link per nesting level (an object's member chain
  // inlined into the object) keeps the engine's completions and the mask
  // cache's context keys short.
  bool within_limit(uint32_t rule, size_t size) {
    if (size <= inline_limit_) return true;
    if (!on_cycle_[rule] || size > cycle_inline_factor_ * inline_limit_) return false;
    cycle_limit_used_ = true;
    return true;
  }

  // Estimated size of `e` built in a tail context, without the bodies of
  // the inlined rules it names in tail position: those it adds to
  // `tail_refs` (they are built once per context; the caller counts them).
  size_t tail_local_size(const Expr& e, int depth, std::vector<uint32_t>& tail_refs) {
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
  size_t context_size(const Expr& e, int depth) {
    std::vector<uint32_t> tail_refs;
    const size_t local = tail_local_size(e, depth, tail_refs);
    return with_shared_rules(local, tail_refs, depth);
  }

  // `local` plus, once each, the bodies of the rules reachable through tail
  // references from `tail_refs` (and a start state for each). Stops counting
  // past kLiftProduct, the largest size any decision looks at.
  size_t with_shared_rules(size_t local, const std::vector<uint32_t>& tail_refs, int depth) {
    if (tail_refs.empty()) return local;  // (the usual case: no set to allocate)
    size_t total = local;
    std::unordered_set<uint32_t> counted(tail_refs.begin(), tail_refs.end());
    std::vector<uint32_t> pending(counted.begin(), counted.end());
    while (!pending.empty() && total <= kLiftProduct) {
      const uint32_t rule = pending.back();
      pending.pop_back();
      const TailSummary& summary = tail_summary(rule, depth + 1);
      add_work(1 + summary.tail_refs.size());
      total = std::min(total + 1 + summary.local_size, SIZE_MAX / 4);
      for (uint32_t next : summary.tail_refs)
        if (counted.insert(next).second) pending.push_back(next);
    }
    return total;
  }

  // A rule's body in a tail context: its size without the inlined rules it
  // names in tail position, and those rules (each once). Once per rule.
  const TailSummary& tail_summary(uint32_t rule, int depth) {
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
  size_t inline_size(uint32_t rule, int depth) {
    if (inline_size_[rule] < 0) {
      const TailSummary& summary = tail_summary(rule, depth);
      inline_size_[rule] = static_cast<long long>(std::min<size_t>(
          with_shared_rules(summary.local_size, summary.tail_refs, depth), 1u << 30));
    }
    return static_cast<size_t>(inline_size_[rule]);
  }

  bool should_inline(uint32_t rule) {
    return !recursive_[rule] && within_limit(rule, inline_size(rule, 0));
  }

  uint32_t lowered_rule_for_source(uint32_t source) {
    if (lowered_of_source_[source] == kNoState) {
      lowered_of_source_[source] =
          new_lowered_rule(grammar_.rules()[source].name, &grammar_.rules()[source].body);
    }
    return lowered_of_source_[source];
  }

  // The rule for `part` of the rule being built (a repeated part, or one
  // split off): structurally equal parts share one, so that the string
  // bodies of different properties call the same rule and their states
  // share walk classes (and their walks).
  uint32_t lifted_rule(const Expr& part) {
    if (auto known = lifted_at_.find(&part); known != lifted_at_.end()) return known->second;
    const size_t hash = structural_hash(part);
    auto [first, last] = lifted_by_hash_.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      if (*pending_[it->second].body == part) {
        lifted_at_.emplace(&part, it->second);
        return it->second;
      }
    }
    const uint32_t rule = new_lowered_rule(
        out_->rules_[building_rule_].name + "#" + std::to_string(out_->rules_.size()), &part);
    lifted_by_hash_.emplace(hash, rule);
    lifted_at_.emplace(&part, rule);
    return rule;
  }

  // Agrees with Expr's operator== (equal expressions hash alike).
  static size_t structural_hash(const Expr& e) {
    uint64_t h = 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(e.kind) + 1);
    auto mix = [&h](uint64_t v) {
      h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdULL;
    };
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        for (char32_t cp : e.literal) mix(cp);
        break;
      case Expr::Kind::kCharClass:
        mix(e.negated);
        for (const CodePointRange& range : e.ranges)
          mix((uint64_t{range.first} << 32) | range.last);
        break;
      case Expr::Kind::kRuleRef:
        mix(e.rule);
        break;
      case Expr::Kind::kRepeat:
        mix((uint64_t{e.min} << 32) | e.max);
        break;
      default:
        break;
    }
    for (const Expr& child : e.children) mix(structural_hash(child));
    return static_cast<size_t>(h ^ (h >> 32));
  }

  uint32_t new_lowered_rule(std::string name, const Expr* body) {
    out_->rules_.push_back(LoweredRule{std::move(name), 0, false});
    pending_.push_back(PendingRule{body});
    return static_cast<uint32_t>(out_->rules_.size() - 1);
  }

  bool charge(size_t states) {
    total_nfa_states_ += states;
    add_work(states);
    if (total_nfa_states_ > options_.max_states && status_.ok()) {
      status_ = Status(ErrorCode::kLimitExceeded,
                       "grammar too large after lowering (more than " +
                           std::to_string(options_.max_states) +
                           " automaton states; see RecognizerOptions::max_states)");
    }
    return status_.ok();
  }

  // Adds the fragment for `e` starting at `from`; returns its end state.
  uint32_t build(const Expr& e, uint32_t from, Nfa& nfa, int depth) {
    if (!status_.ok()) return from;
    if (depth > kMaxDepth) {
      status_ = Status(ErrorCode::kLimitExceeded, "grammar nested too deeply to lower", e.where);
      return from;
    }
    switch (e.kind) {
      case Expr::Kind::kLiteral: {
        uint32_t cur = from;
        for (char32_t cp : e.literal) {
          uint8_t bytes[4];
          utf8::encode(static_cast<uint32_t>(cp), bytes);
          for (int i = 0; i < static_cast<int>(utf8::encoded_length(static_cast<uint32_t>(cp)));
               ++i) {
            uint32_t next = nfa.add();
            nfa.add_bytes(cur, bytes[i], bytes[i], next);
            cur = next;
          }
        }
        charge(e.literal.size());
        return cur;
      }
      case Expr::Kind::kCharClass:
      case Expr::Kind::kAnyChar: {
        const std::vector<Utf8Sequence>& seqs = utf8_sequences_of(e);
        const uint32_t end = nfa.add();
        // Sequences that end in the same byte ranges share the states that
        // read them ([E1-EC][80-BF][80-BF] and [EE-EF][80-BF][80-BF] share
        // their last two), as in a minimal automaton: the subset
        // construction would otherwise keep one DFA state per sequence.
        std::vector<Suffix>& suffixes = suffix_scratch_;
        suffixes.clear();
        auto same_suffix = [](const Suffix& x, const Utf8Sequence& s, int start) {
          if (x.bytes.length - x.start != s.length - start) return false;
          for (int k = 0; start + k < s.length; ++k)
            if (x.bytes.lo[x.start + k] != s.lo[start + k] ||
                x.bytes.hi[x.start + k] != s.hi[start + k])
              return false;
          return true;
        };
        for (const Utf8Sequence& s : seqs) {
          // The states after the first byte, shared where a suffix is known.
          uint32_t next = end;
          for (int i = s.length - 1; i >= 1; --i) {
            auto known = std::find_if(suffixes.begin(), suffixes.end(),
                                      [&](const Suffix& x) { return same_suffix(x, s, i); });
            if (known != suffixes.end()) {
              next = known->state;
              continue;
            }
            const uint32_t state = nfa.add();
            nfa.add_bytes(state, s.lo[i], s.hi[i], next);
            suffixes.push_back({s, static_cast<uint8_t>(i), state});
            next = state;
          }
          nfa.add_bytes(from, s.lo[0], s.hi[0], next);
        }
        charge(seqs.size() * 3 + 1);
        return end;
      }
      case Expr::Kind::kRuleRef: {
        if (should_inline(e.rule)) return build_in_new_context(e, from, nfa, depth);
        uint32_t target = nfa.add();
        nfa.add_rule(from, lowered_rule_for_source(e.rule), target);
        charge(1);
        return target;
      }
      case Expr::Kind::kSequence: {
        auto part = [&](const Expr& c, uint32_t at) { return build(c, at, nfa, depth + 1); };
        return build_sequence(e, from, part);
      }
      case Expr::Kind::kAlternation:
        return build_in_new_context(e, from, nfa, depth);
      case Expr::Kind::kRepeat:
        if (e.max <= 1) return build_in_new_context(e, from, nfa, depth);
        return build_repeat(e, from, nfa, depth);
    }
    return from;
  }

  // The UTF-8 sequences of a character class, once per distinct class: a
  // counted repeat builds one class many times, and a schema spells the
  // same string class for each of its properties.
  const std::vector<Utf8Sequence>& utf8_sequences_of(const Expr& e) {
    const size_t hash = structural_hash(e);
    auto [first, last] = class_sequences_.equal_range(hash);
    for (auto it = first; it != last; ++it)
      if (*it->second.first == e) return it->second.second;
    auto it = class_sequences_.emplace(hash, std::make_pair(&e, std::vector<Utf8Sequence>{}));
    for (const auto& r : normalized_ranges(e)) utf8_sequences(r.first, r.last, it->second.second);
    return it->second.second;
  }

  // A part with tail positions, built where something follows it: a tail
  // context of its own, ending at a fresh state.
  uint32_t build_in_new_context(const Expr& e, uint32_t from, Nfa& nfa, int depth) {
    TailContext tail{nfa.add(), {}};
    charge(1);
    build_tail(e, from, nfa, depth, tail);
    return tail.end;
  }

  // Adds the fragment for `e` starting at `from` and ending at `tail.end`.
  // Only the parts after which nothing follows inside `e` stay in tail
  // position: the last item of a sequence, each alternative, an optional
  // part; a loop's body is followed by the loop.
  void build_tail(const Expr& e, uint32_t from, Nfa& nfa, int depth, TailContext& tail) {
    if (!status_.ok()) return;
    if (depth > kMaxDepth) {
      status_ = Status(ErrorCode::kLimitExceeded, "grammar nested too deeply to lower", e.where);
      return;
    }
    switch (e.kind) {
      case Expr::Kind::kRuleRef: {
        if (!should_inline(e.rule)) {
          nfa.add_rule(from, lowered_rule_for_source(e.rule), tail.end);
          return;
        }
        auto known = tail.rule_starts.find(e.rule);
        if (known != tail.rule_starts.end()) {
          nfa.add_epsilon(from, known->second);
          return;
        }
        // A fresh start, since other references will enter it too; recorded
        // before the body is built (a non-recursive body cannot name the
        // rule again, but nothing here relies on it).
        const uint32_t start = nfa.add();
        charge(1);
        tail.rule_starts.emplace(e.rule, start);
        nfa.add_epsilon(from, start);
        build_tail(grammar_.rules()[e.rule].body, start, nfa, depth + 1, tail);
        return;
      }
      case Expr::Kind::kSequence: {
        if (e.children.empty()) break;
        uint32_t cur = from;
        for (size_t i = 0; i + 1 < e.children.size(); ++i)
          cur = build(e.children[i], cur, nfa, depth + 1);
        build_tail(e.children.back(), cur, nfa, depth + 1, tail);
        return;
      }
      case Expr::Kind::kAlternation:
        // Each alternative from a fresh start, as in build_alternation().
        for (const Expr& c : e.children) {
          const uint32_t start = nfa.add();
          nfa.add_epsilon(from, start);
          build_tail(c, start, nfa, depth + 1, tail);
        }
        charge(e.children.size());
        return;
      case Expr::Kind::kRepeat:
        if (e.max > 1) break;
        if (e.min == 0) nfa.add_epsilon(from, tail.end);
        if (e.max == 1) build_tail(e.children[0], from, nfa, depth + 1, tail);
        return;
      default:
        break;
    }
    const uint32_t stop = build(e, from, nfa, depth);
    nfa.add_epsilon(stop, tail.end);
  }

  // The children of a sequence one after another; `part(child, at)` adds one
  // child starting at `at` and returns where it ends.
  template <typename Part>
  uint32_t build_sequence(const Expr& e, uint32_t from, Part part) {
    uint32_t cur = from;
    for (const Expr& c : e.children) cur = part(c, cur);
    return cur;
  }

  // Each alternative from a fresh start state (so a loop back to it cannot
  // leak into a sibling), all joined at one end state.
  template <typename Part>
  uint32_t build_alternation(const Expr& e, uint32_t from, Nfa& nfa, Part part) {
    uint32_t end = nfa.add();
    for (const Expr& c : e.children) {
      uint32_t start = nfa.add();
      nfa.add_epsilon(from, start);
      uint32_t stop = part(c, start);
      nfa.add_epsilon(stop, end);
    }
    charge(e.children.size() + 1);
    return end;
  }

  uint32_t build_repeat(const Expr& e, uint32_t from, Nfa& nfa, int depth) {
    const Expr& child = e.children[0];
    const size_t copies = e.max == kUnbounded ? std::max<uint32_t>(e.min, 1) : e.max;
    // A large repeat of a large part repeats a reference to the part, lifted
    // into a rule of its own, instead of copying the part `copies` times.
    if (copies > 1 && child.kind != Expr::Kind::kRuleRef &&
        estimated_size(child, depth) * copies > kLiftProduct) {
      uint32_t rule = lifted_rule(child);
      return build_repeat_of_rule(e, rule, from, nfa);
    }
    return build_copies(e, from, nfa,
                        [&](uint32_t at) { return build(child, at, nfa, depth + 1); });
  }

  uint32_t build_repeat_of_rule(const Expr& e, uint32_t rule, uint32_t from, Nfa& nfa) {
    return build_copies(e, from, nfa, [&](uint32_t at) {
      uint32_t target = nfa.add();
      nfa.add_rule(at, rule, target);
      charge(1);
      return target;
    });
  }

  // The first copy of a repeated part as one() built it: the states it
  // made and its edges in the staging lists. The next copies are stamped out
  // from it, renumbered, instead of built again from the expression (a
  // string of at most 100 characters builds its character 100 times). A
  // copy's edges only join its entry and the states it made, so the stamp
  // is the very NFA that building again would give.
  struct CopyTemplate {
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
  uint32_t next_copy(uint32_t at, Nfa& nfa, OneCopy& one, CopyTemplate& copy) {
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
  uint32_t build_copies(const Expr& e, uint32_t from, Nfa& nfa, OneCopy one) {
    CopyTemplate copy;
    uint32_t cur = from;
    for (uint32_t i = 0; i < e.min && status_.ok(); ++i) cur = next_copy(cur, nfa, one, copy);
    if (e.max == kUnbounded) {
      uint32_t loop = nfa.add();
      nfa.add_epsilon(cur, loop);
      uint32_t end = next_copy(loop, nfa, one, copy);
      nfa.add_epsilon(end, loop);
      return loop;
    }
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

  void compute_byte_classes() {
    bool boundary[257] = {};
    for (const Nfa& nfa : nfas_)
      for (const ByteEdge& b : nfa.bytes) {
        boundary[b.lo] = true;
        boundary[b.hi + 1] = true;
      }
    uint32_t cls = 0;
    for (int b = 0; b < 256; ++b) {
      if (b > 0 && boundary[b]) ++cls;
      out_->byte_class_[b] = static_cast<uint8_t>(cls);
    }
    out_->num_classes_ = cls + 1;
  }

  // True if every byte edge of every NFA starts and ends on a boundary of
  // the current byte classes.
  bool byte_classes_fit() const {
    const uint8_t* cls = out_->byte_class_;
    for (const Nfa& nfa : nfas_)
      for (const ByteEdge& b : nfa.bytes) {
        if (b.lo > 0 && cls[b.lo] == cls[b.lo - 1]) return false;
        if (b.hi < 255 && cls[b.hi] == cls[b.hi + 1]) return false;
      }
    return true;
  }

  // Closes set[0, size) (distinct NFA states) under epsilon edges, in
  // place, and sorts it; returns its new size. `set` has room for every
  // NFA state (each is added once).
  uint32_t closure(const Nfa& nfa, uint32_t* set, uint32_t size) {
    // Stamped marks: no per-call clearing of an NFA-sized array.
    if (seen_stamp_.size() < nfa.num_states) seen_stamp_.resize(nfa.num_states, 0);
    if (++stamp_ == 0) {
      std::fill(seen_stamp_.begin(), seen_stamp_.end(), 0);
      stamp_ = 1;
    }
    for (uint32_t k = 0; k < size; ++k) seen_stamp_[set[k]] = stamp_;
    // The set is its own worklist (no stack to copy it to): each state is
    // appended once and visited when the scan reaches it.
    size_t visited = 0;
    for (uint32_t k = 0; k < size; ++k) {
      const uint32_t s = set[k];
      const uint32_t first = nfa.epsilon_begin[s], last = nfa.epsilon_begin[s + 1];
      visited += 1 + last - first;
      for (uint32_t i = first; i < last; ++i)
        if (const uint32_t t = nfa.epsilon[i]; seen_stamp_[t] != stamp_) {
          seen_stamp_[t] = stamp_;
          set[size++] = t;
        }
    }
    sort_small(set, set + size);
    add_work(visited + size);
    return size;
  }

  // Subset construction for lowered rule `rule`; DFA states are appended to
  // the global state table. Each DFA state is stepped once per run of byte
  // classes that its NFA edges treat alike (not once per class), and the
  // closure of a set of NFA targets is computed once per rule.
  // Returns false if the automaton outgrew its budget (the caller splits the
  // rule and retries); true otherwise, also when status_ says lowering failed.
  bool determinize(uint32_t rule) {
    const Nfa& nfa = nfas_[rule];
    const uint32_t classes = out_->num_classes_;
    const uint8_t* byte_class = out_->byte_class_;
    // DFA state first_id + k is kernel number k: the states of a closed NFA
    // state set that read a byte, call a rule or accept. The others only
    // lead by epsilon edges to states already in the set, so closed sets
    // with one kernel behave alike and are one DFA state (fewer states, and
    // shorter sets to hash and compare).
    const uint32_t first_id = static_cast<uint32_t>(out_->states_.size());
    in_kernel_.resize(nfa.num_states);
    for (uint32_t s = 0; s < nfa.num_states; ++s)
      in_kernel_[s] = s == nfa.accept || nfa.byte_begin[s] != nfa.byte_begin[s + 1] ||
                      nfa.rule_begin[s] != nfa.rule_begin[s + 1];
    SequenceIndex kernels;
    // (Room for sets of a few NFA states per state up front: growing the
    // arena by doubling copies it each time.)
    kernels.reserve_words(4 * static_cast<size_t>(nfa.num_states));
    // The DFA state reached from each set of NFA targets of a byte, before
    // closure: sets of one target by the target, larger ones interned.
    single_target_state_.assign(nfa.num_states, kNoState);
    SequenceIndex target_sets;
    std::vector<uint32_t> target_state;
    // Interns the kernel of the closed set[0, closed_size), written over it.
    auto intern = [&](uint32_t* set, uint32_t closed_size) -> uint32_t {
      add_work(closed_size);
      uint32_t size = 0;
      for (uint32_t i = 0; i < closed_size; ++i)
        if (in_kernel_[set[i]]) set[size++] = set[i];
      auto [k, inserted] = kernels.intern(set, size);
      if (inserted) {
        // (Built in place, not copied in.)
        AutomatonState& st = out_->states_.emplace_back();
        st.rule = rule;
        st.is_final = std::binary_search(set, set + size, nfa.accept);
        // (Grown in steps, not by a call per state; the slack stays zero.)
        if (pending_pred_count_.size() <= first_id + k)
          pending_pred_count_.resize(first_id + k + 1024);
        // (Room for the state's run and edge beginnings likewise: written
        // by index below, not pushed, a call per state; cut to size at the
        // end.)
        if (pending_run_begin_.size() <= first_id + k) {
          pending_run_begin_.resize(first_id + k + 1024);
          pending_edge_begin_.resize(first_id + k + 1024);
        }
      }
      return first_id + k;
    };
    // A set being closed: room for every NFA state, left uninitialized (a
    // set only touches the few entries it uses).
    const std::unique_ptr<uint32_t[]> scratch(new uint32_t[nfa.num_states]);
    scratch[0] = nfa.start;
    out_->rules_[rule].start = intern(scratch.get(), closure(nfa, scratch.get(), 1));
    const size_t budget = std::max<size_t>(kMinDfaBudget, 4 * static_cast<size_t>(nfa.num_states));
    // Work is budgeted too: few states can still each close over a large
    // part of the NFA (a union of `\S+a\S+b`-like searches), quadratic work
    // that splitting turns into small automata the Earley engine combines.
    // The bundled and benchmark rules spend under 100 units per NFA state
    // and edge. A rule that is split already gets no work budget: nothing
    // is left to split, and max_lowering_work still bounds it.
    const uint64_t work_budget =
        built_split_[rule]
            ? UINT64_MAX
            : work_ + std::max<uint64_t>(kMinDfaWorkBudget,
                                         kDfaWorkPerNfaPart * (nfa.num_states + nfa.bytes.size()));
    struct ClassEdge {
      uint32_t first, end;  // byte classes [first, end)
      uint32_t target;
    };
    struct Run {  // a run's distinct NFA targets, resolved to a DFA state
      uint64_t hash;
      uint32_t begin, size;  // in `targets`
      uint32_t state;
    };
    // A DFA state's class edges: at most one per byte edge of the NFA, so
    // one buffer of that many, left uninitialized (a state only touches the
    // few entries it uses).
    const std::unique_ptr<ClassEdge[]> edges(new ClassEdge[std::max<size_t>(nfa.bytes.size(), 1)]);
    // Where runs of classes begin, ascending. Cut points are classes 0..256,
    // so fixed arrays hold them: a bitmap sorts them, and run_at gives the
    // run that begins at a cut (an edge's runs without a search).
    uint64_t cut_bits[5];
    const uint32_t cut_words = classes / 64 + 1;  // (the words cuts 0..classes use)
    uint32_t cuts[257], run_at[257];
    // The NFA targets of run k: targets[target_begin[k], target_begin[k + 1]).
    // span_delta[k]: edges whose runs begin at k less those that end there.
    int32_t span_delta[257];
    uint32_t target_begin[257];
    std::vector<uint32_t> targets;
    std::vector<Run> resolved;
    std::vector<RuleEdge> by_rule;  // (rule, NFA target), sorted per DFA state
    for (uint32_t done = 0; done < kernels.count(); ++done) {
      if (kernels.count() > budget || work_ > work_budget) return false;
      if (!status_.ok()) return true;
      // (States are stepped in the order they were made, so the runs and
      // rule edges of state first_id + done come next.)
      pending_run_begin_[first_id + done] = static_cast<uint32_t>(pending_runs_.size());
      pending_edge_begin_[first_id + done] = static_cast<uint32_t>(pending_edges_.size());
      bool state_has_run = false;
      uint32_t last_run_target = 0;
      auto add_run = [&](uint32_t first_class, uint32_t target) {
        if (state_has_run && last_run_target == target) return;  // (keeps runs maximal)
        state_has_run = true;
        last_run_target = target;
        // (Field by field, as the class edges below.)
        ClassRun& added = pending_runs_.emplace_back();
        added.first_class = first_class;
        added.target = target;
        if (target != kNoState) ++pending_pred_count_[target];
      };
      // The state's rule edges, after its runs: one per rule, to the state
      // of the rule's NFA targets.
      auto add_rule_edges = [&] {
        std::sort(by_rule.begin(), by_rule.end(), [](const RuleEdge& a, const RuleEdge& b) {
          return a.rule != b.rule ? a.rule < b.rule : a.target < b.target;
        });
        for (size_t i = 0; i < by_rule.size();) {
          const uint32_t r = by_rule[i].rule;
          uint32_t targets_of_rule = 0;
          for (; i < by_rule.size() && by_rule[i].rule == r; ++i)
            if (targets_of_rule == 0 || scratch[targets_of_rule - 1] != by_rule[i].target)
              scratch[targets_of_rule++] = by_rule[i].target;
          const uint32_t t = intern(scratch.get(), closure(nfa, scratch.get(), targets_of_rule));
          pending_edges_.push_back({r, t});
        }
      };
      uint32_t num_edges = 0;
      // Whether the edges, as gathered, are in class order and overlap
      // nowhere (half the states): then each is a run of its own.
      bool in_order_disjoint = true;
      uint32_t last_end = 0;
      by_rule.clear();
      // (All the words, a fixed size the compiler clears in place: a
      // variable count is a call to memset per state.)
      std::fill(std::begin(cut_bits), std::end(cut_bits), 0);
      const uint32_t* set = kernels.data(done);
      const uint32_t set_size = kernels.size(done);
      for (uint32_t i = 0; i < set_size; ++i) {
        const uint32_t s = set[i];
        for (uint32_t b = nfa.byte_begin[s]; b < nfa.byte_begin[s + 1]; ++b) {
          const ByteEdge& e = nfa.bytes[b];
          const uint32_t first = byte_class[e.lo], end = byte_class[e.hi] + 1u;
          // (Field by field: a pushed temporary was spilled as two words
          // and reloaded as one, which stalls store forwarding.)
          ClassEdge& added = edges[num_edges++];
          added.first = first;
          added.end = end;
          added.target = e.target;
          in_order_disjoint &= first >= last_end;
          last_end = end;
          cut_bits[first >> 6] |= uint64_t{1} << (first & 63);
          cut_bits[end >> 6] |= uint64_t{1} << (end & 63);
        }
        // (Most NFA states call no rule: no empty insert for them.)
        if (nfa.rule_begin[s] != nfa.rule_begin[s + 1])
          by_rule.insert(by_rule.end(), nfa.rules.begin() + nfa.rule_begin[s],
                         nfa.rules.begin() + nfa.rule_begin[s + 1]);
      }
      add_work(set_size + num_edges + by_rule.size());
      // The DFA state of one NFA target (most runs): by direct lookup,
      // without hashing the set.
      auto single_target = [&](uint32_t target) {
        uint32_t& known = single_target_state_[target];
        if (known == kNoState) {
          scratch[0] = target;
          known = intern(scratch.get(), closure(nfa, scratch.get(), 1));
        }
        return known;
      };
      if (in_order_disjoint) {
        // The runs the cuts below would give: each edge, and the gaps
        // between edges without a target (in the same order, so the same
        // states are made in the same order).
        uint32_t covered = 0;  // classes [0, covered) have their runs
        for (uint32_t i = 0; i < num_edges; ++i) {
          const ClassEdge& e = edges[i];
          if (e.first > covered) add_run(covered, kNoState);
          add_work(1);
          add_run(e.first, single_target(e.target));
          covered = e.end;
        }
        if (covered < classes) add_run(covered, kNoState);
        add_rule_edges();
        continue;
      }
      uint32_t num_cuts = 0;
      for (uint32_t w = 0; w < cut_words; ++w)
        for (uint64_t bits = cut_bits[w]; bits != 0; bits &= bits - 1) {
          const uint32_t c = w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits));
          run_at[c] = num_cuts;
          span_delta[num_cuts] = 0;  // (cleared here rather than by a memset call)
          cuts[num_cuts++] = c;
        }
      const uint32_t runs = num_cuts == 0 ? 0 : num_cuts - 1;
      // Each edge's target goes to every run it spans. The runs' sizes come
      // from where edges begin and end (not a count per run spanned), so
      // that all runs share one array.
      for (uint32_t i = 0; i < num_edges; ++i) {
        ++span_delta[run_at[edges[i].first]];
        --span_delta[run_at[edges[i].end]];
      }
      // Run k is filled through target_begin[k + 1], which starts at the
      // run's beginning and ends at its end, the next run's beginning: no
      // second array of fill positions.
      target_begin[0] = 0;
      uint32_t total_targets = 0;
      int32_t spanning = 0;
      for (uint32_t k = 0; k < runs; ++k) {
        target_begin[k + 1] = total_targets;
        spanning += span_delta[k];
        total_targets += static_cast<uint32_t>(spanning);
      }
      if (targets.size() < total_targets) targets.resize(total_targets);
      for (uint32_t i = 0; i < num_edges; ++i) {
        const ClassEdge& e = edges[i];
        for (uint32_t k = run_at[e.first], end = run_at[e.end]; k < end; ++k)
          targets[target_begin[k + 1]++] = e.target;
      }
      resolved.clear();
      if (num_cuts == 0 || cuts[0] > 0) add_run(0, kNoState);
      for (uint32_t k = 0; k < runs; ++k) {
        uint32_t* const first = targets.data() + target_begin[k];
        uint32_t* last = targets.data() + target_begin[k + 1];
        if (first == last) {
          add_run(cuts[k], kNoState);
          continue;
        }
        sort_small(first, last);
        last = std::unique(first, last);
        const uint32_t size = static_cast<uint32_t>(last - first);
        add_work(size);
        if (size == 1) {
          add_run(cuts[k], single_target(*first));
          continue;
        }
        const uint64_t hash = SequenceIndex::hash(first, size);
        uint32_t t = kNoState;
        for (const Run& r : resolved)
          if (r.hash == hash && r.size == size &&
              std::equal(first, last, targets.data() + r.begin)) {
            t = r.state;
            break;
          }
        if (t == kNoState) {
          // The same NFA targets from another DFA state: no closure again.
          auto [k_targets, inserted] = target_sets.intern(first, size, hash);
          if (inserted) {
            std::copy(first, last, scratch.get());
            target_state.push_back(intern(scratch.get(), closure(nfa, scratch.get(), size)));
          }
          t = target_state[k_targets];
          resolved.push_back({hash, target_begin[k], size, t});
        }
        add_run(cuts[k], t);
      }
      if (num_cuts != 0 && cuts[num_cuts - 1] < classes) add_run(cuts[num_cuts - 1], kNoState);
      add_rule_edges();
    }
    pending_run_begin_.resize(first_id + kernels.count());
    pending_edge_begin_.resize(first_id + kernels.count());
    charge(kernels.count());
    return true;
  }

  // Prunes states that cannot reach the end of their rule, computes
  // nullability, scan sets, tails and the rules that some call site follows
  // with a tail, and packs the rule edges.
  void finish() {
    auto& states = out_->states_;
    auto& rules = out_->rules_;
    const uint32_t classes = out_->num_classes_;
    const size_t n = states.size();
    // Rule edges indexed by target and by rule, for the two worklists below
    // (each state and edge is visited a constant number of times, so long
    // counted chains do not make this quadratic).
    struct Edge {
      uint32_t source, rule, target;
    };
    std::vector<uint32_t>& edge_begin = pending_edge_begin_;
    edge_begin.push_back(static_cast<uint32_t>(pending_edges_.size()));
    std::vector<Edge> rule_edges;
    rule_edges.reserve(pending_edges_.size());
    for (size_t s = 0; s < n; ++s)
      for (uint32_t i = edge_begin[s]; i < edge_begin[s + 1]; ++i)
        rule_edges.push_back(
            {static_cast<uint32_t>(s), pending_edges_[i].rule, pending_edges_[i].target});
    auto index_by = [&](size_t buckets, auto key) {
      std::vector<uint32_t> begin(buckets + 1, 0), order(rule_edges.size());
      for (const Edge& e : rule_edges) ++begin[key(e) + 1];
      for (size_t i = 0; i < buckets; ++i) begin[i + 1] += begin[i];
      std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
      for (uint32_t i = 0; i < rule_edges.size(); ++i) order[fill[key(rule_edges[i])]++] = i;
      return std::make_pair(std::move(begin), std::move(order));
    };
    const auto [by_target_begin, by_target] = index_by(n, [](const Edge& e) { return e.target; });
    const auto [by_rule_begin, by_rule] =
        index_by(rules.size(), [](const Edge& e) { return e.rule; });
    // The rules that start at each state, as chains (first_rule_at, then
    // next_rule_at_same_start), in rule order: one word per state instead
    // of a vector each.
    constexpr uint32_t kNoRule = UINT32_MAX;
    std::vector<uint32_t> first_rule_at(n, kNoRule), next_rule_at_same_start(rules.size());
    for (uint32_t r = static_cast<uint32_t>(rules.size()); r-- > 0;) {
      next_rule_at_same_start[r] = first_rule_at[rules[r].start];
      first_rule_at[rules[r].start] = r;
    }

    // Each state's transitions as runs of byte classes with one target (a
    // state has a few distinct targets among dozens of classes), as
    // determinize() made them: the passes below go over runs, and the
    // transition table is written once at the end.
    std::vector<ClassRun>& runs = pending_runs_;
    std::vector<uint32_t>& run_begin = pending_run_begin_;
    run_begin.push_back(static_cast<uint32_t>(runs.size()));

    // Live states reach a final state; productive rules have a live start.
    // Backward propagation over byte edges and productive rule edges.
    // (The runs into each state were counted as determinize() made them,
    // which saves a pass over all runs here.)
    std::vector<uint32_t>& pred_begin = pending_pred_count_;
    pred_begin.resize(n);
    uint32_t total_preds = 0;
    for (size_t t = 0; t < n; ++t) {
      const uint32_t count = pred_begin[t];
      pred_begin[t] = total_preds;
      total_preds += count;
    }
    pred_begin.push_back(total_preds);
    std::vector<uint32_t> preds(total_preds);
    {
      std::vector<uint32_t> fill(pred_begin.begin(), pred_begin.end() - 1);
      for (size_t s = 0; s < n; ++s)
        for (uint32_t r = run_begin[s]; r < run_begin[s + 1]; ++r)
          if (runs[r].target != kNoState) preds[fill[runs[r].target]++] = static_cast<uint32_t>(s);
    }
    std::vector<uint8_t> live(n, 0);  // (bytes, not bits: read per run below)
    std::vector<uint8_t> productive(rules.size(), 0);
    std::vector<uint32_t> work;
    auto make_live = [&](uint32_t s) {
      if (!live[s]) {
        live[s] = 1;
        work.push_back(s);
      }
    };
    for (uint32_t s = 0; s < n; ++s)
      if (states[s].is_final) make_live(s);
    while (!work.empty()) {
      const uint32_t t = work.back();
      work.pop_back();
      for (uint32_t i = pred_begin[t]; i < pred_begin[t + 1]; ++i) make_live(preds[i]);
      for (uint32_t i = by_target_begin[t]; i < by_target_begin[t + 1]; ++i) {
        const Edge& e = rule_edges[by_target[i]];
        if (productive[e.rule]) make_live(e.source);
      }
      for (uint32_t r = first_rule_at[t]; r != kNoRule; r = next_rule_at_same_start[r]) {
        if (productive[r]) continue;
        productive[r] = 1;
        for (uint32_t i = by_rule_begin[r]; i < by_rule_begin[r + 1]; ++i) {
          const Edge& e = rule_edges[by_rule[i]];
          if (live[e.target]) make_live(e.source);
        }
      }
    }
    // One pass over the states: dead targets dropped, the transition table
    // and scan sets written, the runs merged again (maximal after pruning,
    // for the passes of compile(); in place, as a state's runs only move
    // down, and then moved out, not copied: a copy costs a second array's
    // page faults), and the rule edges packed. A class is a range of bytes
    // (compute_byte_classes), so a run of classes is one too.
    std::vector<uint32_t> first_byte(classes + 1, 256);
    for (int b = 255; b >= 0; --b) first_byte[out_->byte_class_[b]] = static_cast<uint32_t>(b);
    // bytes_from[c]: the bytes of classes c and up, so that a run's bytes
    // are two masks (no loop over the words a range touches).
    std::vector<ByteSet> bytes_from(classes + 1);
    for (uint32_t c = 0; c < classes; ++c) bytes_from[c].set_range(first_byte[c], 255);
    auto settle_states = [&](auto& table, auto no_state) {
      table.assign(n * classes, no_state);
      uint32_t kept = 0;
      for (size_t s = 0; s < n; ++s) {
        AutomatonState& st = states[s];
        auto* row = table.data() + s * classes;
        const uint32_t first = run_begin[s], last = run_begin[s + 1];
        run_begin[s] = kept;
        // (The next run is read before this one is written back, and the
        // scan set and the last kept target stay in locals: the writes to
        // runs would otherwise make the compiler reload them.)
        ByteSet scan;
        uint32_t kept_target = 0;
        ClassRun run = runs[first];
        for (uint32_t r = first; r < last; ++r) {
          const ClassRun next = r + 1 < last ? runs[r + 1] : ClassRun{classes, kNoState};
          if (run.target != kNoState && !live[run.target]) run.target = kNoState;
          if (run.target != kNoState) {
            // (A plain loop: runs span a few classes, where std::fill's
            // setup costs more than the stores.)
            const auto target = static_cast<decltype(no_state)>(run.target);
            for (uint32_t c = run.first_class; c < next.first_class; ++c) row[c] = target;
            const ByteSet &from = bytes_from[run.first_class], &past = bytes_from[next.first_class];
            for (int w = 0; w < 4; ++w) scan.bits[w] |= from.bits[w] & ~past.bits[w];
          }
          if (r == first || run.target != kept_target) {
            runs[kept++] = run;
            kept_target = run.target;
          }
          run = next;
        }
        st.scan = scan;
        st.rule_edges_begin = static_cast<uint32_t>(out_->rule_edges_.size());
        for (uint32_t i = edge_begin[s]; i < edge_begin[s + 1]; ++i) {
          const RuleEdge& r = pending_edges_[i];
          if (!productive[r.rule] || !live[r.target]) continue;
          out_->rule_edges_.push_back(r);
          st.waits_on |= uint64_t{1} << (r.rule & 63);
        }
        st.rule_edges_end = static_cast<uint32_t>(out_->rule_edges_.size());
        st.is_tail = st.is_final && st.scan.empty() && st.calls_no_rule();
      }
      run_begin[n] = kept;
      run_begin.resize(n + 1);
      runs.resize(kept);
    };
    if (n < ByteGrammar::kNarrowNoState) {
      settle_states(out_->narrow_next_, ByteGrammar::kNarrowNoState);
    } else {
      settle_states(out_->wide_next_, kNoState);
    }
    // Nullable rules: the start state reaches a final state through nullable
    // rule edges only. Backward propagation over (still present) rule edges.
    std::vector<uint8_t> nullable_state(n, 0);
    auto make_nullable = [&](uint32_t s) {
      if (!nullable_state[s]) {
        nullable_state[s] = 1;
        work.push_back(s);
      }
    };
    auto edge_present = [&](const Edge& e) { return productive[e.rule] && live[e.target]; };
    for (uint32_t s = 0; s < n; ++s)
      if (states[s].is_final) make_nullable(s);
    while (!work.empty()) {
      const uint32_t t = work.back();
      work.pop_back();
      for (uint32_t i = by_target_begin[t]; i < by_target_begin[t + 1]; ++i) {
        const Edge& e = rule_edges[by_target[i]];
        if (edge_present(e) && rules[e.rule].nullable) make_nullable(e.source);
      }
      for (uint32_t r = first_rule_at[t]; r != kNoRule; r = next_rule_at_same_start[r]) {
        if (rules[r].nullable) continue;
        rules[r].nullable = true;
        for (uint32_t i = by_rule_begin[r]; i < by_rule_begin[r + 1]; ++i) {
          const Edge& e = rule_edges[by_rule[i]];
          if (edge_present(e) && nullable_state[e.target]) make_nullable(e.source);
        }
      }
    }
    std::vector<uint8_t> tail_called(rules.size(), 0);
    for (const RuleEdge& edge : out_->rule_edges_)
      if (states[edge.target].is_tail) tail_called[edge.rule] = 1;
    for (AutomatonState& st : states) st.rule_tail_called = tail_called[st.rule];
    out_->runs_ = std::move(runs);
    out_->run_begin_ = std::move(run_begin);
  }

  static constexpr size_t kLiftProduct = 65536;
  static constexpr size_t kMinDfaBudget = 4096;
  static constexpr uint64_t kMinDfaWorkBudget = uint64_t{1} << 20;
  static constexpr uint64_t kDfaWorkPerNfaPart = 256;
  static constexpr int kMaxSplitRetries = 256;
  static constexpr int kMaxDepth = 2000;

  const Grammar& grammar_;
  const RecognizerOptions& options_;
  const size_t inline_limit_;
  const size_t cycle_inline_factor_;
  bool cycle_limit_used_ = false;
  Status status_;
  std::shared_ptr<ByteGrammar> out_;
  std::vector<bool> recursive_;
  std::vector<bool> on_cycle_;
  std::vector<long long> inline_size_;
  std::vector<TailSummary> tail_summaries_;
  std::vector<uint32_t> lowered_of_source_;
  std::vector<PendingRule> pending_;
  std::set<const Expr*> split_bodies_;
  // lifted_rule's rules, by structural hash and by the part's address.
  std::unordered_multimap<size_t, uint32_t> lifted_by_hash_;
  std::unordered_map<const Expr*, uint32_t> lifted_at_;
  std::vector<Nfa> nfas_;
  Nfa::Staging nfa_staging_;  // (see Nfa::staging)
  // A class (one of those equal to it) and its UTF-8 sequences, by
  // structural hash.
  std::unordered_multimap<size_t, std::pair<const Expr*, std::vector<Utf8Sequence>>>
      class_sequences_;
  std::vector<size_t> nfa_charge_;  // states each rule's NFA charged
  std::vector<bool> built_split_;   // whether each rule's NFA was built split
  std::vector<size_t> dfa_begin_;   // first DFA state of each determinized rule
  size_t next_rule_ = 0;            // the next rule to determinize
  uint64_t work_ = 0;
  // The shared tails of a character class's UTF-8 sequences (see build()).
  struct Suffix {
    Utf8Sequence bytes;  // the ranges of positions [start, length)
    uint8_t start;
    uint32_t state;  // reads them, then is at the class's end
  };
  std::vector<Suffix> suffix_scratch_;
  // Rule edges of the states stepped so far: state s's are
  // pending_edges_[pending_edge_begin_[s], pending_edge_begin_[s + 1]).
  std::vector<uint32_t> pending_edge_begin_;
  std::vector<RuleEdge> pending_edges_;
  // Transitions of the states stepped so far, as runs (see finish()).
  std::vector<uint32_t> pending_run_begin_;
  std::vector<ClassRun> pending_runs_;
  // Runs into each state made so far (kNoState's not counted), with zeros
  // past the last state.
  std::vector<uint32_t> pending_pred_count_;
  std::vector<uint32_t> seen_stamp_;
  uint32_t stamp_ = 0;
  std::vector<uint32_t> single_target_state_;  // (see determinize())
  std::vector<uint8_t> in_kernel_;             // (likewise)
  uint32_t building_rule_ = 0;
  size_t total_nfa_states_ = 0;
};

Result<std::shared_ptr<const ByteGrammar>> ByteGrammar::lower(const Grammar& grammar,
                                                              std::string_view root,
                                                              const RecognizerOptions& options) {
  // Copying more rules inline makes fewer rule calls (faster masks) but
  // more states. Rules on cycles get the generous limit times
  // kCycleInlineFactor (see within_limit), the others the generous limit;
  // a grammar that this takes past RecognizerOptions::max_states (or
  // max_lowering_work) is lowered again without the factor, if it changed
  // anything, then with the frugal limit, so the limits never refuse a
  // grammar that lowered before. The retries at most triple the work.
  constexpr size_t kGenerousInlineLimit = 4096, kFrugalInlineLimit = 2048;
  constexpr size_t kCycleInlineFactor = 8;
  Lowering first(grammar, options, kGenerousInlineLimit, kCycleInlineFactor);
  auto lowered = first.run(root);
  if (lowered.ok() || lowered.status().code() != ErrorCode::kLimitExceeded) return lowered;
  if (first.cycle_limit_used()) {
    lowered = Lowering(grammar, options, kGenerousInlineLimit, 1).run(root);
    if (lowered.ok() || lowered.status().code() != ErrorCode::kLimitExceeded) return lowered;
  }
  return Lowering(grammar, options, kFrugalInlineLimit, 1).run(root);
}

}  // namespace grammask::internal
