// Token items: each distinct item of the grammar becomes one lowered rule
// with a single state and no transition, named as the item is written. A
// reference to it is a rule edge like any other, so determinization,
// liveness and the Earley engine's prediction need nothing new; the engine
// completes the rule when it is given a token that the item matches.
#include <string>

#include "automata/lowering_impl.h"
#include "base/utf8.h"

namespace grammask::internal {

uint32_t Lowering::token_rule(const Expr& e) {
  const std::string text = utf8::encode(e.literal);
  auto& terminals = out_->token_terminals_;
  for (const TokenTerminal& t : terminals)
    if (t.negated == e.negated && t.text == text && (!text.empty() || t.id == e.token))
      return t.rule;
  std::string name = e.negated ? "!" : "";
  name += text.empty() ? "<[" + std::to_string(e.token) + "]>" : text;
  const uint32_t rule = new_lowered_rule(std::move(name), &e);
  out_->rules_[rule].token_terminal = static_cast<uint32_t>(terminals.size());
  terminals.push_back(TokenTerminal{rule, e.negated, e.token, text, e.where});
  return rule;
}

}  // namespace grammask::internal
