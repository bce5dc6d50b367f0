// The driver of the lowering: ByteGrammar::lower's attempts with the
// inline limits, and one Lowering's run: the NFAs, the byte classes, the
// subset construction rule by rule with the split-and-retry of a rule that
// outgrows its budget, and the tables. The passes are in their own files
// (see lowering_impl.h); docs/lowering.md tells how they work.
#include "automata/lowering.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "automata/inlining.h"
#include "automata/lowering_impl.h"

namespace grammask::internal {

namespace {

constexpr int kMaxSplitRetries = 256;

}  // namespace

void Lowering::use_cycles(const ReferenceCycles& cycles) {
  recursive_ = cycles.recursive;
  copying_recursive_.assign(recursive_.size(), false);
  right_linear_cycle_.assign(recursive_.size(), -1);
  on_cycle_ = cycles.on_cycle;
  places_ = cycles.places;
  // A large grammar (a smaller copy budget) leaves its tail groups to the
  // inline limits: inlined whole there, they made MaskBench's slowest masks
  // slower (docs/lowering.md).
  if (copy_budget_ >= kCopyBudget)
    in_tail_group_ = cycles.in_tail_group;
  else
    in_tail_group_.assign(grammar_.rules().size(), false);
  inline_size_.assign(grammar_.rules().size(), -1);
  tail_summaries_.assign(grammar_.rules().size(), TailSummary{});
}

Result<std::shared_ptr<const ByteGrammar>> Lowering::run(uint32_t root_index,
                                                         const ReferenceCycles& cycles) {
  use_cycles(cycles);
  // A rule whose automaton blows up is lowered again with its parts split
  // into rules of their own (the Earley engine then carries the
  // nondeterminism). Only that rule's automaton is rebuilt: the rules
  // before it keep theirs. Each retry splits one more body, so this ends.
  start_over(root_index);
  for (int splits = 0;;) {
    const size_t blown = determinize_from(root_index);
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
  if (!status_.ok()) return status_;
  return std::shared_ptr<const ByteGrammar>(std::move(out_));
}

// Discards everything and builds the automata of all rules reachable from
// the root afresh (split bodies split), ready to determinize from rule 0.
void Lowering::start_over(uint32_t root_index) {
  out_ = std::make_shared<ByteGrammar>();
  lowered_of_source_.assign(grammar_.rules().size(), kNoState);
  pending_.clear();
  lifted_by_hash_.clear();
  lifted_at_.clear();
  any_order_at_.clear();
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
  building_first_nfas_ = true;
  build_pending_nfas();
  building_first_nfas_ = false;
  if (status_.ok()) compute_byte_classes();
  // Room for the automata, so that the largest arrays are not copied as
  // they grow (each copy is fresh pages to fault in): the subset
  // construction makes fewer states than the NFAs have (a third of them in
  // MaskBench's largest grammars), and about one run per NFA state.
  // Untouched room costs no page.
  out_->states_.reserve(total_nfa_states_ / 2);
  pending_run_begin_.reserve(total_nfa_states_ / 2 + 1);
  pending_edge_begin_.reserve(total_nfa_states_ / 2 + 1);
  pending_runs_.reserve(total_nfa_states_);
  pending_pred_count_.reserve(total_nfa_states_ / 2);
}

// Determinizes the rules from next_rule_ on, rebuilding first those whose
// body was marked for splitting after their NFA was built. Returns the
// rule whose automaton exceeded its budget, or kAllFit.
size_t Lowering::determinize_from(uint32_t root_index) {
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

void Lowering::truncate_states(size_t n) {
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

Result<std::shared_ptr<const ByteGrammar>> ByteGrammar::lower(const Grammar& grammar,
                                                              std::string_view root,
                                                              const RecognizerOptions& options) {
  // Copying more rules inline makes fewer rule calls (faster masks) but
  // more states. Rules on cycles get the generous limit times
  // kCycleInlineFactor (see Lowering::within_limit), the others the
  // generous limit, all within the copy budget: kCopyBudget, or
  // kLargeGrammarCopyBudget for a grammar whose NFAs pass
  // kCopiedNfaStates with the first (at once where the size estimates put
  // them past kSurelyLargeEstimate). A grammar that this takes past
  // RecognizerOptions::max_states (or max_lowering_work) is lowered again
  // without the factor, if it changed anything, then with the frugal
  // limit, then, if that is still past max_states, with no copies of
  // rules named from several places (inlining.h); a large grammar past
  // max_states, or whose NFAs pass half of it, goes to the last at once.
  const int root_index = grammar.find_rule(root);
  if (root_index < 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "the start rule '" + std::string(root) + "' is not defined");
  }
  if (Status s = grammar.validate(); !s.ok()) return s;
  const auto root_rule = static_cast<uint32_t>(root_index);
  const ReferenceCycles cycles = find_reference_cycles(grammar, root_rule);
  size_t copy_budget = kCopyBudget;
  auto first = std::make_unique<Lowering>(grammar, options, kGenerousInlineLimit,
                                          kCycleInlineFactor, copy_budget, kCopiedNfaStates);
  // (Estimated by a Lowering of its own: estimates memoized at another
  // depth than run() asks for them may differ past the depth guard.)
  const bool surely_large =
      Lowering(grammar, options, kGenerousInlineLimit, kCycleInlineFactor, copy_budget)
          .estimated_nfa_states(root_rule, cycles) > kSurelyLargeEstimate;
  auto lowered = surely_large ? Result<std::shared_ptr<const ByteGrammar>>(Status(
                                    ErrorCode::kLimitExceeded, "estimated past the copies' bound"))
                              : first->run(root_rule, cycles);
  if (surely_large || first->copies_exceeded()) {
    copy_budget = kLargeGrammarCopyBudget;
    first = std::make_unique<Lowering>(grammar, options, kGenerousInlineLimit, kCycleInlineFactor,
                                       copy_budget, SIZE_MAX, options.max_states / 2);
    lowered = first->run(root_rule, cycles);
  }
  if (lowered.ok() || lowered.status().code() != ErrorCode::kLimitExceeded) return lowered;
  // A large grammar past max_states is past it by its copies, which
  // smaller inline limits do not remove: straight to no copies. So is one
  // whose NFAs alone pass half of max_states (its DFA states would mostly
  // take it past: MaskBench's largest grammars that lower with copies make
  // at most 460k NFA states, and one that made 941k failed).
  if (copy_budget == kLargeGrammarCopyBudget &&
      (first->states_exceeded() || first->copies_exceeded()))
    return Lowering(grammar, options, kFrugalInlineLimit, 1, 0).run(root_rule, cycles);
  if (first->cycle_limit_used()) {
    lowered =
        Lowering(grammar, options, kGenerousInlineLimit, 1, copy_budget).run(root_rule, cycles);
    if (lowered.ok() || lowered.status().code() != ErrorCode::kLimitExceeded) return lowered;
  }
  Lowering frugal(grammar, options, kFrugalInlineLimit, 1, copy_budget);
  lowered = frugal.run(root_rule, cycles);
  if (lowered.ok() || !frugal.states_exceeded()) return lowered;
  return Lowering(grammar, options, kFrugalInlineLimit, 1, 0).run(root_rule, cycles);
}

}  // namespace grammask::internal
