// Determinization. determinize(rule) appends the DFA of lowered rule `rule`,
// the subset construction of its frozen NFA over byte classes and rule
// edges, to the ByteGrammar's state table, with its runs and rule edges
// pending for finish(). Returns false once the DFA outgrows its per-rule
// budget of states or of work (the caller drops its states, splits the rule
// and retries); true otherwise, also when status_ holds a failure
// (max_states, max_lowering_work). Its work is counted in work_.
#include <algorithm>
#include <memory>

#include "automata/lowering_impl.h"
#include "base/sequence_index.h"

namespace grammask::internal {

namespace {

// The state budget of one rule's automaton: this many DFA states, or 4 per
// NFA state if more. The work budget: this many units, or this many per
// NFA state and byte edge if more (see determinize()).
constexpr size_t kMinDfaBudget = 4096;
constexpr uint64_t kMinDfaWorkBudget = uint64_t{1} << 20;
constexpr uint64_t kDfaWorkPerNfaPart = 256;

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

}  // namespace

// Closes set[0, size) (distinct NFA states) under epsilon edges, in
// place, and sorts it; returns its new size. `set` has room for every
// NFA state (each is added once).
inline uint32_t Lowering::closure(const Nfa& nfa, uint32_t* set, uint32_t size) {
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
bool Lowering::determinize(uint32_t rule) {
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
      // (Grown in steps, not by a call per state; the slack stays zero.
      // A step is at most the rule's NFA size: a grammar of thousands of
      // small rules zeroed 1024 entries per rule.)
      const size_t grown = first_id + k + std::min<size_t>(1024, nfa.num_states + 1);
      if (pending_pred_count_.size() <= first_id + k) pending_pred_count_.resize(grown);
      // (Room for the state's run and edge beginnings likewise: written
      // by index below, not pushed, a call per state; cut to size at the
      // end.)
      if (pending_run_begin_.size() <= first_id + k) {
        pending_run_begin_.resize(grown);
        pending_edge_begin_.resize(grown);
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
        if (r.hash == hash && r.size == size && std::equal(first, last, targets.data() + r.begin)) {
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

}  // namespace grammask::internal
