// Regex, Substring and TextExcluding terminals: each becomes an automaton
// over code points, embedded in the rule's NFA as UTF-8 byte edges.
#include "automata/lowering_impl.h"

namespace grammask::internal {

uint32_t Lowering::build_text_terminal(const Expr& e, uint32_t from, Nfa& /*nfa*/) {
  if (status_.ok()) {
    status_ = Status(ErrorCode::kUnsupported, "this terminal is not lowered yet", e.where);
  }
  return from;
}

size_t Lowering::text_terminal_size(const Expr& e) {
  return e.literal.size() * 4 + 8;
}

}  // namespace grammask::internal
