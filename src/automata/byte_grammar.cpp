// The ByteGrammar's tables. finish() runs once, after every rule is
// determinized: it drops the transitions and rule edges into states that
// cannot reach the end of their rule and the calls of rules that derive
// nothing, then writes the transition table (shared rows of 16-bit entries
// when every entry fits, else 32), the maximal runs, scan sets, packed rule
// edges, nullability, tails and rule_tail_called. Linear in runs, rule edges
// and distinct rows x classes; fails (status_) only past 2^32 table entries.
#include <algorithm>
#include <vector>

#include "automata/lowering_impl.h"

namespace grammask::internal {

// Prunes states that cannot reach the end of their rule, computes
// nullability, scan sets, tails and the rules that some call site follows
// with a tail, and packs the rule edges.
void Lowering::finish() {
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
  // A token item's rule ends when the engine is given a matching token.
  for (const TokenTerminal& terminal : out_->token_terminals_)
    make_live(rules[terminal.rule].start);
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
  // One pass over the states: dead targets dropped, the runs merged again
  // (maximal after pruning, for the passes of compile(); in place, as a
  // state's runs only move down, and then moved out, not copied: a copy
  // costs a second array's page faults), the scan sets written, the rule
  // edges packed, and each state given its row of the transition table. A
  // class is a range of bytes (compute_byte_classes), so a run of classes
  // is one too.
  std::vector<uint32_t> first_byte(classes + 1, 256);
  for (int b = 255; b >= 0; --b) first_byte[out_->byte_class_[b]] = static_cast<uint32_t>(b);
  // bytes_from[c]: the bytes of classes c and up, so that a run's bytes
  // are two masks (no loop over the words a range touches).
  std::vector<ByteSet> bytes_from(classes + 1);
  for (uint32_t c = 0; c < classes; ++c) bytes_from[c].set_range(first_byte[c], 255);
  // Rows are shared: a state's row holds its targets minus its smallest
  // one, and states whose maximal runs agree on classes and on those
  // differences share a row (the states of a keyword, of copies of one
  // automaton). Open addressing on a hash of the runs; each row keeps the
  // state that made it, whose runs (settled, so no longer moved) and base
  // tell it apart from a collision.
  std::vector<TransitionRow>& rows_of = out_->transition_rows_;
  rows_of.resize(n);
  std::vector<uint32_t> row_maker;  // per row, the state that made it
  std::vector<uint64_t> row_hash;
  std::vector<uint32_t> slots(1024, kNoState);
  uint32_t largest_entry = 0;
  auto run_delta = [](const ClassRun& run, uint32_t base) {
    return run.target == kNoState ? kNoState : run.target - base;
  };
  auto same_row = [&](uint32_t a_begin, uint32_t a_end, uint32_t a_base, uint32_t b) {
    const uint32_t b_begin = run_begin[b], b_end = run_begin[b + 1];
    if (a_end - a_begin != b_end - b_begin) return false;
    const uint32_t b_base = rows_of[b].base;
    for (uint32_t i = 0; i < a_end - a_begin; ++i) {
      const ClassRun &x = runs[a_begin + i], &y = runs[b_begin + i];
      if (x.first_class != y.first_class || run_delta(x, a_base) != run_delta(y, b_base))
        return false;
    }
    return true;
  };
  auto find_row = [&](uint32_t state, uint32_t begin, uint32_t end, uint32_t base) {
    uint64_t h = end - begin;
    for (uint32_t r = begin; r < end; ++r)
      h = (h + (uint64_t{runs[r].first_class} << 32 | run_delta(runs[r], base))) *
          0x9E3779B97F4A7C15ull;
    h ^= h >> 32;
    size_t mask = slots.size() - 1;
    for (size_t at = h & mask;; at = (at + 1) & mask) {
      const uint32_t row = slots[at];
      if (row == kNoState) {
        slots[at] = static_cast<uint32_t>(row_maker.size());
        row_maker.push_back(state);
        row_hash.push_back(h);
        if (row_maker.size() * 2 > slots.size()) {
          slots.assign(slots.size() * 2, kNoState);
          mask = slots.size() - 1;
          for (uint32_t i = 0; i < row_maker.size(); ++i) {
            size_t to = row_hash[i] & mask;
            while (slots[to] != kNoState) to = (to + 1) & mask;
            slots[to] = i;
          }
        }
        return static_cast<uint32_t>(row_maker.size() - 1);
      }
      if (row_hash[row] == h && same_row(begin, end, base, row_maker[row])) return row;
    }
  };
  uint32_t kept = 0;
  for (size_t s = 0; s < n; ++s) {
    AutomatonState& st = states[s];
    const uint32_t first = run_begin[s], last = run_begin[s + 1];
    run_begin[s] = kept;
    // (The next run is read before this one is written back, and the
    // scan set and the last kept target stay in locals: the writes to
    // runs would otherwise make the compiler reload them.)
    ByteSet scan;
    uint32_t kept_target = 0, base = kNoState, top = 0;
    ClassRun run = runs[first];
    for (uint32_t r = first; r < last; ++r) {
      const ClassRun next = r + 1 < last ? runs[r + 1] : ClassRun{classes, kNoState};
      if (run.target != kNoState && !live[run.target]) run.target = kNoState;
      if (run.target != kNoState) {
        base = std::min(base, run.target);
        top = std::max(top, run.target);
        const ByteSet &from = bytes_from[run.first_class], &past = bytes_from[next.first_class];
        for (int w = 0; w < 4; ++w) scan.bits[w] |= from.bits[w] & ~past.bits[w];
      }
      if (r == first || run.target != kept_target) {
        runs[kept++] = run;
        kept_target = run.target;
      }
      run = next;
    }
    if (base == kNoState) base = 0;
    largest_entry = std::max(largest_entry, top - std::min(top, base));
    rows_of[s].base = base;
    rows_of[s].offset = find_row(static_cast<uint32_t>(s), run_begin[s], kept, base);
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
  // (Offsets are 32 bits: only a max_states far past its default could
  // make that many distinct rows.)
  if (row_maker.size() * classes > UINT32_MAX) {
    status_ = Status(ErrorCode::kLimitExceeded,
                     "grammar too large after lowering (more distinct transition rows than "
                     "32-bit offsets address; see RecognizerOptions::max_states)");
    return;
  }
  // The table: each row written once, from the runs of the state that made it.
  auto write_rows = [&](auto& table, auto no_state) {
    using Entry = decltype(no_state);
    table.assign(row_maker.size() * classes, no_state);
    for (size_t row = 0; row < row_maker.size(); ++row) {
      const uint32_t maker = row_maker[row];
      Entry* entries = table.data() + row * classes;
      for (uint32_t r = run_begin[maker]; r < run_begin[maker + 1]; ++r) {
        if (runs[r].target == kNoState) continue;
        const uint32_t end_class = r + 1 < run_begin[maker + 1] ? runs[r + 1].first_class : classes;
        const auto entry = static_cast<Entry>(runs[r].target - rows_of[maker].base);
        for (uint32_t c = runs[r].first_class; c < end_class; ++c) entries[c] = entry;
      }
    }
  };
  if (largest_entry < ByteGrammar::kNarrowNoState) {
    write_rows(out_->narrow_next_, ByteGrammar::kNarrowNoState);
  } else {
    write_rows(out_->wide_next_, kNoState);
  }
  for (TransitionRow& row : rows_of) row.offset *= classes;
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
  for (AutomatonState& st : states) {
    st.rule_tail_called = tail_called[st.rule];
    st.in_any_order = rules[st.rule].any_order != kNoAnyOrder;
  }
  out_->runs_ = std::move(runs);
  out_->run_begin_ = std::move(run_begin);
  if (!out_->any_orders_.empty()) check_any_order_members(productive);
}

}  // namespace grammask::internal
