// A grammar shape shared by the lowering and mask tests: a bounded string
// written one rule per automaton state, as the JSON Schema converter writes
// a pattern intersected with maxLength.
#ifndef GRAMMASK_TESTS_COUNTED_CHAIN_H_
#define GRAMMASK_TESTS_COUNTED_CHAIN_H_

#include <string>
#include <vector>

namespace grammask::testing {

// Rules for a quote, then at most `bound` characters of [a-c é 日 本 x]
// holding an "x", then a quote: one rule per (seen an "x", length) pair,
// each naming the next ones last. `entry` reads the opening quote and
// names the first state, s0-0.
inline std::string counted_chain_gbnf(int bound, const std::string& entry) {
  auto state = [](int seen_x, int length) {
    return "s" + std::to_string(seen_x) + "-" + std::to_string(length);
  };
  std::string g = entry + " ::= \"\\\"\" " + state(0, 0) + "\n";
  for (int length = 0; length <= bound; ++length) {
    for (int seen_x = 0; seen_x < 2; ++seen_x) {
      if (seen_x == 0 && length == bound) continue;  // (a dead end: never named)
      std::vector<std::string> options;
      if (length < bound && (seen_x == 1 || length + 1 < bound))
        options.push_back("[a-c\\u00E9\\u65E5\\u672C] " + state(seen_x, length + 1));
      if (length < bound) options.push_back("\"x\" " + state(1, length + 1));
      if (seen_x == 1) options.push_back("\"\\\"\"");
      g += state(seen_x, length) + " ::=";
      for (size_t i = 0; i < options.size(); ++i) g += (i == 0 ? " " : " | ") + options[i];
      g += "\n";
    }
  }
  return g;
}

}  // namespace grammask::testing

#endif  // GRAMMASK_TESTS_COUNTED_CHAIN_H_
