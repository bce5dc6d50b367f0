// The brute-force mask oracle for text grammars, shared by the tests that
// compare Matcher masks with it: a token is allowed iff a Recognizer, fed
// the text so far, accepts all of the token's bytes; a stop token iff the
// text is complete; a special token never.
#ifndef GRAMMASK_TESTS_MASK_ORACLE_H_
#define GRAMMASK_TESTS_MASK_ORACLE_H_

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/grammar.h"
#include "grammask/recognizer.h"
#include "grammask/vocabulary.h"

namespace grammask::testing {

inline std::vector<uint32_t> oracle_mask(const Grammar& grammar, const Vocabulary& vocab,
                                         const std::string& text, size_t n_words) {
  auto r = Recognizer::create(grammar, "root");
  EXPECT_TRUE(r.ok());
  std::vector<uint32_t> words(n_words, 0);
  if (!r.ok()) return words;
  EXPECT_EQ(r->push_bytes(text), text.size());
  const size_t base = r->size();
  for (uint32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.is_stop(id)) {
      if (r->is_accepting()) set_bit(words.data(), id);
      continue;
    }
    if (vocab.is_special(id)) continue;
    std::string_view bytes = vocab.token_bytes(id);
    if (bytes.empty()) continue;
    if (r->push_bytes(bytes) == bytes.size()) set_bit(words.data(), id);
    r->truncate(base);
  }
  return words;
}

}  // namespace grammask::testing

#endif  // GRAMMASK_TESTS_MASK_ORACLE_H_
