// Lowering: the state of one lowering of a grammar and its passes (internal
// to src/automata; the rest of the code uses ByteGrammar::lower).
//
// One Lowering lowers one grammar once, with fixed inline limits: run()
// builds the NFA of every rule reachable from the root (nfa.cpp,
// repetition.cpp, with the inlining decisions of inlining.cpp), cuts the
// bytes into classes (byte_classes.cpp), determinizes rule by rule
// (determinize.cpp), splitting a rule whose automaton outgrows its budget
// and retrying it (lowering.cpp), and assembles the ByteGrammar
// (byte_grammar.cpp). Errors: kInvalidArgument (no such root, an invalid
// grammar), kLimitExceeded (RecognizerOptions::max_states or
// max_lowering_work exceeded, nesting too deep, a rule too large even when
// split, a text terminal's automaton past its budget), and a Regex pattern's
// refusal (kSyntax, kUnsupported, kLimitExceeded; text_terminals.cpp). A
// Lowering is used once, by one thread; docs/lowering.md tells how the
// passes work.
#ifndef GRAMMASK_SRC_AUTOMATA_LOWERING_IMPL_H_
#define GRAMMASK_SRC_AUTOMATA_LOWERING_IMPL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "automata/inlining.h"
#include "automata/lowering.h"
#include "automata/nfa.h"
#include "automata/utf8_ranges.h"
#include "grammask/grammar.h"
#include "grammask/recognizer_options.h"
#include "grammask/status.h"

namespace grammask::internal {

class Lowering {
  struct PendingRule {
    const Expr* body;
  };

  // Where a fragment built in tail position must end, with the fragments of
  // the rules already referenced in tail position there. Every such
  // reference continues at `end`, so one copy of the rule's body serves
  // them all (the right-linear grammar to NFA construction): a chain of
  // rules naming one another last is inlined in linear size.
  // The bodies of rules in a tail group (ReferenceCycles::in_tail_group)
  // wait in `deferred` and are built after the context's root, at its depth:
  // a chain of thousands of them does not nest.
  struct TailContext {
    uint32_t end;
    std::unordered_map<uint32_t, uint32_t> rule_starts;   // source rule -> fragment start
    std::vector<std::pair<uint32_t, uint32_t>> deferred;  // source rule, fragment start
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
  // `copy_budget`: the largest total estimated size of the copies of a
  // rule named from several places (see Lowering::within_limit).
  // `max_copied_nfa_states`: run() stops with kLimitExceeded and
  // copies_exceeded() once its NFAs have more states (SIZE_MAX: never).
  // `max_first_nfa_states`: the same, counting only the NFAs built before
  // the first subset construction.
  Lowering(const Grammar& grammar, const RecognizerOptions& options, size_t inline_limit,
           size_t cycle_inline_factor, size_t copy_budget, size_t max_copied_nfa_states = SIZE_MAX,
           size_t max_first_nfa_states = SIZE_MAX)
      : grammar_(grammar),
        options_(options),
        inline_limit_(inline_limit),
        cycle_inline_factor_(cycle_inline_factor),
        copy_budget_(copy_budget),
        max_copied_nfa_states_(max_copied_nfa_states),
        max_first_nfa_states_(max_first_nfa_states) {}

  // Whether some rule was inlined only thanks to the cycle factor.
  bool cycle_limit_used() const { return cycle_limit_used_; }
  // Whether run() failed past RecognizerOptions::max_states.
  bool states_exceeded() const { return states_exceeded_; }
  // Whether run() stopped past `max_copied_nfa_states`.
  bool copies_exceeded() const { return copies_exceeded_; }

  // Lowers the rules reachable from rule `root_index`, whose reference
  // cycles are `cycles`, of a grammar that validates. Once per Lowering.
  Result<std::shared_ptr<const ByteGrammar>> run(uint32_t root_index,
                                                 const ReferenceCycles& cycles);
  // An estimate of the NFA states run() builds, from the size estimates
  // that decide inlining: inline_size() of every rule that stays a rule,
  // over the rules reachable from the root (a rule whose estimate gave up
  // counts nothing). One pass over the references. For a Lowering that
  // does not run(): the estimates it memoizes at depth 0 may differ past
  // the depth guard from those run() makes.
  size_t estimated_nfa_states(uint32_t root_index, const ReferenceCycles& cycles);

 private:
  static constexpr size_t kAllFit = SIZE_MAX;
  // The largest estimated size that an inlining or lifting decision looks at.
  static constexpr size_t kLiftProduct = 65536;

  // An estimate past its depth guard (inline_size's cap).
  static constexpr size_t kGaveUpSize = size_t{1} << 30;

  // The driver, lowering.cpp.
  void use_cycles(const ReferenceCycles& cycles);
  void start_over(uint32_t root_index);
  size_t determinize_from(uint32_t root_index);
  void truncate_states(size_t n);
  // Counts lowering work (automaton states built, NFA states and edges
  // visited by the subset construction); past
  // RecognizerOptions::max_lowering_work lowering fails.
  bool add_work(size_t units) {
    work_ += units;
    if (work_ > options_.max_lowering_work) work_exceeded();
    return status_.ok();
  }
  // The failure, out of add_work (which runs a few times per state).
  // (Defined here, not in a .cpp: a call out of the file would make every
  // add_work in the subset construction's loops reload what it holds.)
  void work_exceeded() {
    if (!status_.ok()) return;
    status_ =
        Status(ErrorCode::kLimitExceeded, "lowering the grammar takes too much work (more than " +
                                              std::to_string(options_.max_lowering_work) +
                                              " units; see RecognizerOptions::max_lowering_work)");
  }
  // Counts NFA states built (and as much work); past
  // RecognizerOptions::max_states lowering fails.
  bool charge(size_t states) {
    total_nfa_states_ += states;
    add_work(states);
    if (total_nfa_states_ > options_.max_states && status_.ok()) {
      states_exceeded_ = true;
      status_ = Status(ErrorCode::kLimitExceeded,
                       "grammar too large after lowering (more than " +
                           std::to_string(options_.max_states) +
                           " automaton states; see RecognizerOptions::max_states)");
    }
    if ((total_nfa_states_ > max_copied_nfa_states_ ||
         (building_first_nfas_ && total_nfa_states_ > max_first_nfa_states_)) &&
        status_.ok()) {
      copies_exceeded_ = true;
      status_ = Status(ErrorCode::kLimitExceeded, "too many NFA states with these copies");
    }
    return status_.ok();
  }

  // NFA building, nfa.cpp.
  void build_pending_nfas();
  void build_nfa(uint32_t i);
  uint32_t lowered_rule_for_source(uint32_t source);
  uint32_t lifted_rule(const Expr& part);
  static size_t structural_hash(const Expr& e);
  uint32_t new_lowered_rule(std::string name, const Expr* body);
  uint32_t build(const Expr& e, uint32_t from, Nfa& nfa, int depth);
  const std::vector<Utf8Sequence>& utf8_sequences_of(const Expr& e);
  void build_context(const Expr& e, uint32_t from, Nfa& nfa, int depth, TailContext& tail);
  uint32_t build_in_new_context(const Expr& e, uint32_t from, Nfa& nfa, int depth);
  void build_tail(const Expr& e, uint32_t from, Nfa& nfa, int depth, TailContext& tail);
  template <typename Part>
  uint32_t build_sequence(const Expr& e, uint32_t from, Part part);
  template <typename Part>
  uint32_t build_alternation(const Expr& e, uint32_t from, Nfa& nfa, Part part);
  uint32_t build_split(const Expr& e, uint32_t from, Nfa& nfa, int depth);

  // Token items, token_items.cpp: the lowered rule that stands for one
  // token item (one per distinct item), which the Earley engine completes
  // when it is given a token that the item matches.
  uint32_t token_rule(const Expr& e);

  // AnyOrder expressions, any_order.cpp: the lowered rule of one (a rule
  // of its own per expression, with a rule per member and one for the
  // separator), and its automaton, which only calls them.
  uint32_t any_order_rule(const Expr& e);
  void build_any_order_nfa(uint32_t rule, Nfa& nfa);
  // Fails with kInvalidArgument if a member of an AnyOrder derives the
  // empty string, or its separator or a required member derives none (from
  // finish(), once `productive` rules and nullability are known).
  void check_any_order_members(const std::vector<uint8_t>& productive);

  // Regex, Substring and TextExcluding terminals, text_terminals.cpp: the
  // fragment from `from` (returns its end), and its estimated NFA size.
  uint32_t build_text_terminal(const Expr& e, uint32_t from, Nfa& nfa);
  size_t text_terminal_size(const Expr& e);
  // A terminal's code-point automaton (or why there is none), made once per
  // expression and kept in text_terminals_.
  struct TextTerminal;
  const TextTerminal& text_terminal(const Expr& e);

  // Repetition, repetition.cpp.
  struct CopyTemplate;
  uint32_t build_repeat(const Expr& e, uint32_t from, Nfa& nfa, int depth);
  uint32_t build_repeat_of_rule(const Expr& e, uint32_t rule, uint32_t from, Nfa& nfa);
  template <typename OneCopy>
  uint32_t next_copy(uint32_t at, Nfa& nfa, OneCopy& one, CopyTemplate& copy);
  template <typename OneCopy>
  uint32_t build_copies(const Expr& e, uint32_t from, Nfa& nfa, OneCopy one);

  // The inlining policy, inlining.cpp.
  size_t estimated_size(const Expr& e, int depth);
  bool inlined_here(uint32_t rule, int depth);
  bool within_limit(uint32_t rule, size_t size);
  size_t tail_local_size(const Expr& e, int depth, std::vector<uint32_t>& tail_refs);
  size_t context_size(const Expr& e, int depth);
  size_t with_shared_rules(size_t local, const std::vector<uint32_t>& tail_refs, int depth);
  const TailSummary& tail_summary(uint32_t rule, int depth);
  size_t inline_size(uint32_t rule, int depth);
  // Whether a reference to `rule` copies its body here (else it is a rule
  // edge): the rule is in a tail group, or it is within the inline limits
  // and either not recursive, or on a right-linear cycle whose copy is not
  // already being built around this place (build_tail links the copy's
  // references in tail position back to it).
  bool copied_here(uint32_t rule);
  // Whether the rules on cycles that `rule` leads to by references in tail
  // position name rules on cycles only in tail position (a pattern's
  // automaton written one rule per state): then a copy of `rule` holds the
  // whole cycle as a loop, with no rule edge left into it.
  bool right_linear_cycle(uint32_t rule);
  bool cycle_refs_in_tail(const Expr& e, bool tail, int depth, std::vector<uint32_t>& tail_refs);

  // Byte classes, byte_classes.cpp.
  void compute_byte_classes();
  bool byte_classes_fit() const;

  // The subset construction, determinize.cpp.
  uint32_t closure(const Nfa& nfa, uint32_t* set, uint32_t size);
  bool determinize(uint32_t rule);

  // The ByteGrammar's tables, byte_grammar.cpp.
  void finish();

  const Grammar& grammar_;
  const RecognizerOptions& options_;
  const size_t inline_limit_;
  const size_t cycle_inline_factor_;
  const size_t copy_budget_;
  const size_t max_copied_nfa_states_;
  const size_t max_first_nfa_states_;
  bool building_first_nfas_ = false;  // (start_over's NFAs, before any DFA state)
  bool cycle_limit_used_ = false;
  bool states_exceeded_ = false;
  bool copies_exceeded_ = false;
  Status status_;
  std::shared_ptr<ByteGrammar> out_;
  std::vector<bool> recursive_;      // (see find_reference_cycles())
  std::vector<bool> on_cycle_;       // (likewise)
  std::vector<uint32_t> places_;     // (see ReferenceCycles::places)
  std::vector<bool> in_tail_group_;  // (see ReferenceCycles::in_tail_group)
  // The recursive rules whose copies are being built (build_tail): a
  // context nested inside one does not copy the rule again.
  std::vector<bool> copying_recursive_;
  std::vector<int8_t> right_linear_cycle_;  // per rule: -1 unknown, else the answer
  std::vector<long long> inline_size_;
  std::vector<TailSummary> tail_summaries_;
  // with_shared_rules' marks (a rule is counted by the call whose number
  // it holds) and the rules each call in progress counted.
  std::vector<uint32_t> shared_rule_mark_;
  std::vector<uint32_t> shared_rule_stack_;
  uint32_t shared_rule_marks_ = 0;
  std::vector<uint32_t> lowered_of_source_;
  std::vector<PendingRule> pending_;
  std::set<const Expr*> split_bodies_;
  // lifted_rule's rules, by structural hash and by the part's address.
  std::unordered_multimap<size_t, uint32_t> lifted_by_hash_;
  std::unordered_map<const Expr*, uint32_t> lifted_at_;
  std::unordered_map<const Expr*, uint32_t> any_order_at_;  // any_order_rule's rules
  std::vector<Nfa> nfas_;
  Nfa::Staging nfa_staging_;  // (see Nfa::staging)
  // A class (one of those equal to it) and its UTF-8 sequences, by
  // structural hash.
  std::unordered_multimap<size_t, std::pair<const Expr*, std::vector<Utf8Sequence>>>
      class_sequences_;
  std::unordered_map<const Expr*, std::shared_ptr<const TextTerminal>> text_terminals_;
  // The terminals built without error, by what they spell (kind and
  // literals): equal terminals written in many places (the excluded strings
  // of every raw value of a tool-call tag) share one automaton.
  std::unordered_map<std::u32string, std::shared_ptr<const TextTerminal>> text_terminals_by_text_;
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

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_AUTOMATA_LOWERING_IMPL_H_
