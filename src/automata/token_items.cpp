// Token items: each distinct item of the grammar becomes one lowered rule
// with a single state and no transition, named as the item is written. A
// reference to it is a rule edge like any other, so determinization,
// liveness and the Earley engine's prediction need nothing new; the engine
// completes the rule when it is given a token that the item matches.
#include <string>
#include <vector>

#include "automata/lowering_impl.h"
#include "base/utf8.h"

namespace grammask::internal {

uint32_t Lowering::token_rule(const Expr& e) {
  std::vector<TokenTerminal::Name> names;
  auto name_of = [](const Expr& item) {
    return TokenTerminal::Name{item.literal.empty() ? item.token : 0, utf8::encode(item.literal)};
  };
  if (e.token_set) {
    for (const Expr& child : e.children) names.push_back(name_of(child));
  } else {
    names.push_back(name_of(e));
  }
  auto& terminals = out_->token_terminals_;
  for (const TokenTerminal& t : terminals)
    if (t.negated == e.negated && t.names == names) return t.rule;
  auto write = [](const TokenTerminal::Name& n) {
    return n.text.empty() ? "<[" + std::to_string(n.id) + "]>" : n.text;
  };
  std::string written = e.negated ? "!" : "";
  if (e.token_set) {
    written += '(';
    for (size_t i = 0; i < names.size(); ++i) written += (i > 0 ? " | " : "") + write(names[i]);
    written += ')';
  } else {
    written += write(names[0]);
  }
  const uint32_t rule = new_lowered_rule(written, &e);
  out_->rules_[rule].token_terminal = static_cast<uint32_t>(terminals.size());
  terminals.push_back(
      TokenTerminal{rule, e.negated, std::move(names), std::move(written), e.where});
  return rule;
}

}  // namespace grammask::internal
