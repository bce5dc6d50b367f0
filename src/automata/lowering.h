// ByteGrammar: a grammar lowered to byte automata, the input of the Earley
// engine and of the mask engine (internal).
//
// ByteGrammar::lower(grammar, root, options) turns the rules of `grammar`
// reachable from `root` into deterministic automata over bytes and rule
// edges (a transition taken after another rule derives some input). The
// root rule's automaton, rule edges expanded, accepts a byte string exactly
// when it is the UTF-8 encoding of a string that `root` derives in
// `grammar`; a token that ends inside a character is a prefix of an
// accepted path. Which source rules stay rules (the others are copied into
// the places that name them) and which parts become rules of their own
// ("name#k") is the lowering's choice: only root_rule() is fixed.
//
// Transitions and rule edges lead only to live states (states from which
// their rule can end), and rule edges name only rules that derive some
// string. Lowering is deterministic:
// the same grammar, root and options give the same automata, state numbers
// included.
//
// A ByteGrammar is immutable once lower() returns it: it is shared, through
// shared_ptr<const ByteGrammar>, by any number of engines and threads.
// docs/lowering.md tells how lowering works.
#ifndef GRAMMASK_SRC_AUTOMATA_LOWERING_H_
#define GRAMMASK_SRC_AUTOMATA_LOWERING_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_set.h"
#include "base/memory_bytes.h"
#include "grammask/grammar.h"
#include "grammask/recognizer_options.h"
#include "grammask/status.h"

namespace grammask::internal {

inline constexpr uint32_t kNoState = UINT32_MAX;

// A transition on a rule: after the rule `rule` derives some input, go to `target`.
struct RuleEdge {
  uint32_t rule;
  uint32_t target;
};

struct AutomatonState {
  uint32_t rule = 0;              // the lowered rule this state belongs to
  uint32_t rule_edges_begin = 0;  // [begin, end) into ByteGrammar::rule_edges
  uint32_t rule_edges_end = 0;
  bool is_final = false;  // the rule may end here
  bool is_tail = false;   // final with no outgoing edge at all (Leo's condition)
  // Some rule edge on this state's rule lands on a tail state: only then can
  // completing the rule have a Leo item.
  bool rule_tail_called = false;
  // The state belongs to an AnyOrder rule (LoweredRule::any_order): the
  // Earley items in it carry the members written so far
  // (EarleyEngine::members_written), which decide its rule edges and
  // whether it may end; is_final and the edges are what it may do at most.
  bool in_any_order = false;
  uint64_t waits_on = 0;  // bit (rule % 64) set for each rule edge: a quick filter
  ByteSet scan;           // bytes with a transition from here

  bool calls_no_rule() const noexcept { return rule_edges_begin == rule_edges_end; }
};

// A maximal run of byte classes on which a state goes to one target
// (kNoState included): a state has a few runs among dozens of classes.
struct ClassRun {
  uint32_t first_class;
  uint32_t target;
};

// Where a state's transitions are in ByteGrammar's transition table: the
// row at `offset` (a multiple of the number of byte classes), whose entries
// are the targets minus `base`.
struct TransitionRow {
  uint32_t offset = 0;
  uint32_t base = 0;
};

inline constexpr uint32_t kNoTokenTerminal = UINT32_MAX;
inline constexpr uint32_t kNoAnyOrder = UINT32_MAX;

// An AnyOrder expression's rule (Expr::Kind::kAnyOrder). Its automaton
// calls each member's rule and the separator's, and nothing else; each
// member counted (all but the m* ones) has a bit of its own
// (LoweredRule::member_bit).
struct AnyOrderRule {
  uint32_t separator = 0;   // the separator's rule
  uint64_t required = 0;    // members that must come: exactly once, or m+
  uint64_t once = 0;        // members that may come at most once
  bool repeatable = false;  // some member may come again (m*, m+)

  // Whether a member may still come after those in `written`.
  bool more_after(uint64_t written) const noexcept { return repeatable || (once & ~written) != 0; }
};

struct LoweredRule {
  std::string name;       // source rule name, or "name#k" for a lifted part
  uint32_t start = 0;     // start state
  bool nullable = false;  // derives the empty string
  // For the rule that stands for a token item: its index in
  // ByteGrammar::token_terminals(). Such a rule has one state, its start,
  // with no transition: the engine completes it when given a token the
  // item matches (EarleyEngine::push_token).
  uint32_t token_terminal = kNoTokenTerminal;
  // For an AnyOrder expression's rule: its index in ByteGrammar::any_orders().
  uint32_t any_order = kNoAnyOrder;
  // For a member's rule of an AnyOrder: the member's bit (0 to 63), or -1
  // (an m* member, or not a member).
  int8_t member_bit = -1;
};

// A token item of the grammar (Expr::Kind::kToken), not yet resolved
// against a vocabulary.
struct TokenTerminal {
  struct Name {
    uint32_t id = 0;   // the token id, when `text` is empty
    std::string text;  // the token's text (UTF-8, brackets included)
    friend bool operator==(const Name& a, const Name& b) {
      return a.id == b.id && a.text == b.text;
    }
  };
  uint32_t rule = 0;        // the lowered rule that stands for it
  bool negated = false;     // any token but the named ones
  std::vector<Name> names;  // one, or a negated set's (none: any token)
  std::string written;      // the item as GBNF writes it
  SourceLocation where;     // where the first such item was written
};

// The immutable result of lowering. Shared by recognizers and matchers.
class ByteGrammar {
 public:
  // Lowers the rules of `grammar` reachable from the rule named `root`.
  // Errors: kInvalidArgument if `root` names no rule; grammar.validate()'s
  // status if that fails; kLimitExceeded if the automata need more than
  // options.max_states states or more than options.max_lowering_work work
  // units (bounds that apply to each of at most four attempts with fewer
  // rules copied inline; a large grammar's first attempt stops early and
  // does not count), if the grammar nests expressions too deeply, or if
  // a rule still blows up once split into rules of its own (the status
  // names its source position). Cost: time and memory proportional to the
  // work units spent, which the options bound (at the defaults, at most
  // about a second per attempt). Thread-safe: reads `grammar` and
  // `options` only.
  static Result<std::shared_ptr<const ByteGrammar>> lower(const Grammar& grammar,
                                                          std::string_view root,
                                                          const RecognizerOptions& options);

  // Unless noted, the accessors below are O(1), never fail, and only read.
  uint32_t root_rule() const noexcept { return root_rule_; }
  // Indexed by rule number (RuleEdge::rule, AutomatonState::rule); states()
  // by state number (kNoState is none).
  const std::vector<LoweredRule>& rules() const noexcept { return rules_; }
  const std::vector<AutomatonState>& states() const noexcept { return states_; }
  const std::vector<RuleEdge>& rule_edges() const noexcept { return rule_edges_; }
  // The distinct token items, in the order lowering met them.
  const std::vector<TokenTerminal>& token_terminals() const noexcept { return token_terminals_; }
  // The AnyOrder rules, indexed by LoweredRule::any_order.
  const std::vector<AnyOrderRule>& any_orders() const noexcept { return any_orders_; }
  // The members written after an item in AnyOrder state `state` with
  // members `written` takes rule edge `edge` (its separator or a member),
  // or nullopt when the edge is closed to it: a member that came already
  // and may come once, or the separator when no member may come next.
  // Precondition: states()[state].in_any_order. O(1).
  std::optional<uint64_t> any_order_step(uint32_t state, const RuleEdge& edge,
                                         uint64_t written) const noexcept {
    const AnyOrderRule& any = any_orders_[rules_[states_[state].rule].any_order];
    if (edge.rule == any.separator) {
      if (!any.more_after(written)) return std::nullopt;
      return written;
    }
    const int bit = rules_[edge.rule].member_bit;
    if (bit < 0) return written;
    const uint64_t mask = uint64_t{1} << bit;
    if (written & any.once & mask) return std::nullopt;
    return written | mask;
  }
  // Whether an item in AnyOrder state `state` with members `written` may end
  // its rule. O(1).
  bool any_order_may_end(uint32_t state, uint64_t written) const noexcept {
    const AnyOrderRule& any = any_orders_[rules_[states_[state].rule].any_order];
    return states_[state].is_final && (written & any.required) == any.required;
  }
  // Whether `state` is the start (and only state) of a token item's rule.
  bool is_token_state(uint32_t state) const noexcept {
    return !token_terminals_.empty() &&
           rules_[states_[state].rule].token_terminal != kNoTokenTerminal;
  }
  // Bytes in one class have the same transitions from every state; a class
  // is a range of bytes, and classes are numbered in byte order.
  uint32_t num_classes() const noexcept { return num_classes_; }
  uint8_t byte_class(uint8_t b) const noexcept { return byte_class_[b]; }
  // RecognizerOptions::max_work_per_byte, kept with the grammar so that every
  // engine built on it enforces the same bound.
  uint64_t max_work_per_byte() const noexcept { return max_work_per_byte_; }

  // Target of `state` on `byte`, or kNoState. O(1).
  uint32_t next(uint32_t state, uint8_t byte) const noexcept {
    const TransitionRow row = transition_rows_[state];
    const size_t at = row.offset + byte_class_[byte];
    if (narrow_next_.empty()) {
      const uint32_t entry = wide_next_[at];
      return entry == kNoState ? kNoState : row.base + entry;
    }
    const uint16_t entry = narrow_next_[at];
    return entry == kNarrowNoState ? kNoState : row.base + entry;
  }
  // The call of rule edge `edge`'s rule from the edge's target: the next
  // link of a call chain (a string body whose characters are calls), or
  // kNoEdge. O(rule edges of the target).
  static constexpr uint32_t kNoEdge = UINT32_MAX;
  uint32_t next_call_of_same_rule(uint32_t edge) const noexcept {
    const AutomatonState& target = states_[rule_edges_[edge].target];
    for (uint32_t e = target.rule_edges_begin; e < target.rule_edges_end; ++e)
      if (rule_edges_[e].rule == rule_edges_[edge].rule) return e;
    return kNoEdge;
  }
  // The transition table, for loops that read it directly (the trie
  // walks): rows of num_classes() entries, shared by every state whose
  // transitions are the same relative to its row's base (the states of a
  // keyword share one row, whatever they are followed by); see
  // transition_rows(). Entries are of 16 bits, kNarrowNoState where there
  // is no transition, while every entry fits in them (almost every
  // grammar); else narrow_table() is null, and wide_table() has entries of
  // 32 bits, kNoState where none.
  static constexpr uint16_t kNarrowNoState = UINT16_MAX;
  const uint16_t* narrow_table() const noexcept {
    return narrow_next_.empty() ? nullptr : narrow_next_.data();
  }
  const uint32_t* wide_table() const noexcept {
    return wide_next_.empty() ? nullptr : wide_next_.data();
  }
  // Per state, its row of the transition table: the target of state s on a
  // byte of class c is transition_rows()[s].base + the entry at
  // transition_rows()[s].offset + c, unless the entry is the no-state value.
  const TransitionRow* transition_rows() const noexcept { return transition_rows_.data(); }
  // The number of distinct rows of the transition table.
  size_t num_transition_rows() const noexcept {
    return (narrow_next_.size() + wide_next_.size()) / num_classes_;
  }
  // The same transitions as runs: [runs_begin, runs_end), in class order
  // from class 0, consecutive runs with different targets.
  const ClassRun* runs_begin(uint32_t state) const noexcept {
    return runs_.data() + run_begin_[state];
  }
  const ClassRun* runs_end(uint32_t state) const noexcept {
    return runs_.data() + run_begin_[state + 1];
  }

  // Heap bytes of the tables and rules.
  size_t memory_bytes() const noexcept {
    size_t bytes = heap_bytes(narrow_next_) + heap_bytes(wide_next_) +
                   heap_bytes(transition_rows_) + heap_bytes(run_begin_) + heap_bytes(runs_) +
                   heap_bytes(states_) + heap_bytes(rule_edges_) + heap_bytes(rules_) +
                   heap_bytes(token_terminals_) + heap_bytes(any_orders_);
    for (const LoweredRule& rule : rules_) bytes += heap_bytes(rule.name);
    for (const TokenTerminal& terminal : token_terminals_) {
      bytes += heap_bytes(terminal.names) + heap_bytes(terminal.written);
      for (const TokenTerminal::Name& name : terminal.names) bytes += heap_bytes(name.text);
    }
    return bytes;
  }

 private:
  friend class Lowering;
  uint32_t root_rule_ = 0;
  uint64_t max_work_per_byte_ = 0;
  uint32_t num_classes_ = 1;
  uint8_t byte_class_[256] = {};
  // The transition table (one of the two; see narrow_table()) and each
  // state's row of it.
  std::vector<uint16_t> narrow_next_;
  std::vector<uint32_t> wide_next_;
  std::vector<TransitionRow> transition_rows_;
  std::vector<uint32_t> run_begin_;  // states + 1
  std::vector<ClassRun> runs_;
  std::vector<AutomatonState> states_;
  std::vector<RuleEdge> rule_edges_;
  std::vector<LoweredRule> rules_;
  std::vector<TokenTerminal> token_terminals_;
  std::vector<AnyOrderRule> any_orders_;
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_AUTOMATA_LOWERING_H_
