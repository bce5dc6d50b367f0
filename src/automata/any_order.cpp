// AnyOrder expressions: each becomes a lowered rule of its own whose
// automaton only calls rules: one rule per member and one for the
// separator, never shared with another expression, so that a rule edge
// names its member. The automaton says what may come at most (any member
// after the start or a separator, the separator after a member); the Earley
// engine narrows that by the members an item has written
// (ByteGrammar::any_order_step, any_order_may_end). docs/lowering.md tells
// more.
#include <string>

#include "automata/lowering_impl.h"

namespace grammask::internal {

namespace {

// A member's count, read from the top of its expression (Expr::Kind::kAnyOrder).
struct MemberCount {
  const Expr* text;
  bool required;  // at least once
  bool once;      // at most once
  bool has_bit;   // counted: all but m*
};

MemberCount member_count(const Expr& member) {
  if (member.kind == Expr::Kind::kRepeat && member.min <= 1 &&
      (member.max == 1 || member.max == kUnbounded) && !(member.min == 1 && member.max == 1)) {
    const Expr* text = &member.children[0];
    if (member.max == 1) return {text, false, true, true};    // m?
    if (member.min == 0) return {text, false, false, false};  // m*
    return {text, true, false, true};                         // m+
  }
  return {&member, true, true, true};
}

}  // namespace

uint32_t Lowering::any_order_rule(const Expr& e) {
  if (auto known = any_order_at_.find(&e); known != any_order_at_.end()) return known->second;
  const std::string base =
      out_->rules_[building_rule_].name + "#" + std::to_string(out_->rules_.size());
  const uint32_t rule = new_lowered_rule(base, &e);
  any_order_at_.emplace(&e, rule);
  AnyOrderRule any;
  any.separator = new_lowered_rule(base + "-separator", &e.children[0]);
  int bits = 0;
  for (size_t i = 1; i < e.children.size(); ++i) {
    const MemberCount count = member_count(e.children[i]);
    const uint32_t member = new_lowered_rule(base + "-" + std::to_string(i), count.text);
    if (!count.has_bit) {
      any.repeatable = true;
      continue;
    }
    if (bits == static_cast<int>(kMaxAnyOrderMembers)) {
      if (status_.ok()) {
        status_ = Status(ErrorCode::kLimitExceeded,
                         "AnyOrder(...) counts more than " + std::to_string(kMaxAnyOrderMembers) +
                             " members (all but those written m*)",
                         e.where);
      }
      break;
    }
    const uint64_t mask = uint64_t{1} << bits;
    out_->rules_[member].member_bit = static_cast<int8_t>(bits++);
    if (count.required) any.required |= mask;
    if (count.once) any.once |= mask;
    if (!count.once) any.repeatable = true;
  }
  out_->rules_[rule].any_order = static_cast<uint32_t>(out_->any_orders_.size());
  out_->any_orders_.push_back(any);
  return rule;
}

// start -member-> after_member -separator-> after_separator -member->
// after_member; the rule may end after a member, and at its start when no
// member is required (which the engine checks in any case).
void Lowering::build_any_order_nfa(uint32_t rule, Nfa& nfa) {
  const AnyOrderRule& any = out_->any_orders_[out_->rules_[rule].any_order];
  const uint32_t after_member = nfa.add();
  const uint32_t after_separator = nfa.add();
  nfa.accept = nfa.add();
  // The member rules follow the rule itself and the separator's.
  const Expr& e = *pending_[rule].body;
  for (uint32_t m = rule + 2; m < rule + e.children.size() + 1; ++m) {
    nfa.add_rule(nfa.start, m, after_member);
    nfa.add_rule(after_separator, m, after_member);
  }
  nfa.add_rule(after_member, any.separator, after_separator);
  nfa.add_epsilon(after_member, nfa.accept);
  if (any.required == 0) nfa.add_epsilon(nfa.start, nfa.accept);
  charge(e.children.size() + 3);
}

void Lowering::check_any_order_members(const std::vector<uint8_t>& productive) {
  if (!status_.ok()) return;
  for (uint32_t r = 0; r < out_->rules_.size(); ++r) {
    if (out_->rules_[r].any_order == kNoAnyOrder) continue;
    const Expr& e = *pending_[r].body;
    // (A separator or a required member that derives no string would leave
    // items that can never end: refused rather than carried.)
    const AnyOrderRule& any = out_->any_orders_[out_->rules_[r].any_order];
    if (!productive[any.separator] && e.children.size() > 2) {
      status_ = Status(ErrorCode::kInvalidArgument,
                       "the separator of AnyOrder(...) matches no text", e.children[0].where);
      return;
    }
    for (uint32_t i = 1; i < e.children.size(); ++i) {
      const LoweredRule& member = out_->rules_[r + 1 + i];
      if (!productive[r + 1 + i] && member.member_bit >= 0 &&
          (any.required >> member.member_bit & 1)) {
        status_ = Status(ErrorCode::kInvalidArgument,
                         "a required member of AnyOrder(...) matches no text", e.children[i].where);
        return;
      }
      if (!member.nullable) continue;
      status_ = Status(ErrorCode::kInvalidArgument,
                       "a member of AnyOrder(...) matches the empty text; write it as m? for "
                       "a member that may be left out",
                       e.children[i].where);
      return;
    }
  }
}

}  // namespace grammask::internal
