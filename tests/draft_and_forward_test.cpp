// Token-level APIs for engines: jump-forward tokens (Matcher::forced_tokens)
// and speculative decoding (accept_draft, fill_draft_masks), checked
// against the same steps taken one by one.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/matcher.h"

namespace grammask {
namespace {

const std::vector<std::string> kTokens = {"</s>", "{",  "\"",    "key",   "\":",  " ", "1",
                                          "2",    "}",  "{\"",   "ke",    "k",    "e", "y",
                                          ":",    "12", "\"key", "<|x|>", "\": ", "a"};

Vocabulary vocabulary() {
  return *Vocabulary::from_token_bytes(kTokens, /*stop_ids=*/{0}, /*special_ids=*/{0, 17});
}

// Greedy longest-match tokenization over the text tokens.
std::vector<uint32_t> greedy(std::string_view text) {
  std::vector<uint32_t> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t best = 0;
    uint32_t best_id = 0;
    for (uint32_t id = 1; id < kTokens.size(); ++id) {
      if (id == 17) continue;
      const std::string& t = kTokens[id];
      if (t.size() > best && text.compare(at, t.size(), t) == 0) {
        best = t.size();
        best_id = id;
      }
    }
    if (best == 0) return out;
    out.push_back(best_id);
    at += best;
  }
  return out;
}

TEST(ForcedTokens, SplitsTheForcedTextAndKeepsTheLastTokenThatCouldGrow) {
  const Vocabulary vocab = vocabulary();
  auto compiled = CompiledGrammar::from_gbnf("root ::= \"{\\\"key\\\": \" [0-9]+ \"}\"", vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  Matcher m(*compiled);
  EXPECT_EQ(m.forced_bytes(), "{\"key\": ");
  // greedy: {" key ": then " " -- "\": " is one token: {" + key + ": ... the
  // last token, "\": ", extends no token, so all are kept.
  const std::vector<uint32_t> tokens = m.forced_tokens(greedy);
  std::string spelled;
  for (uint32_t t : tokens) spelled += kTokens[t];
  EXPECT_EQ(spelled, "{\"key\": ");
  // The state is unchanged and the tokens are accepted in order.
  EXPECT_EQ(m.num_tokens(), 0u);
  for (uint32_t t : tokens) EXPECT_TRUE(m.accept_token(t).ok());
  // Nothing is forced inside the number.
  EXPECT_TRUE(m.forced_tokens(greedy).empty());
}

TEST(ForcedTokens, DropsALastTokenThatALongerTokenExtends) {
  const Vocabulary vocab = vocabulary();
  // Forced "k": the token "k" is a prefix of "ke" and "key": left to sampling.
  auto compiled = CompiledGrammar::from_gbnf("root ::= \"{k\" [ey]+", vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  Matcher m(*compiled);
  EXPECT_EQ(m.forced_bytes(), "{k");
  const std::vector<uint32_t> tokens = m.forced_tokens(greedy);
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(kTokens[tokens[0]], "{");
}

TEST(ForcedTokens, KeepsOnlyTokensThatSpellTheTextAndAreAllowed) {
  const Vocabulary vocab = vocabulary();
  auto compiled = CompiledGrammar::from_gbnf("root ::= \"{\\\"key\\\": 1}\"", vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  Matcher m(*compiled);
  // A tokenizer that returns a control token, or text that differs.
  auto control = [](std::string_view) { return std::vector<uint32_t>{1, 17, 2}; };
  const std::vector<uint32_t> first = m.forced_tokens(control);
  EXPECT_EQ(first, std::vector<uint32_t>{});  // "{" alone could grow into "{\""
  auto wrong = [](std::string_view) { return std::vector<uint32_t>{9, 19}; };
  // The tokens before the first that is not the text ("a"); "{\"" extends no token.
  EXPECT_EQ(m.forced_tokens(wrong), std::vector<uint32_t>{9});
  auto right = [](std::string_view) { return std::vector<uint32_t>{9, 3, 18, 6, 8}; };
  EXPECT_EQ(m.forced_tokens(right), (std::vector<uint32_t>{9, 3, 18, 6, 8}));
  ASSERT_TRUE(m.accept_token(9).ok());
  EXPECT_EQ(m.forced_tokens(right), std::vector<uint32_t>{});  // no longer a prefix of the text
}

// Random drafts over a JSON-like grammar: the draft masks equal masks taken
// step by step on a copy, and the state is unchanged.
TEST(SpeculativeDecoding, DraftMasksEqualStepByStepMasks) {
  const Vocabulary vocab = vocabulary();
  auto compiled =
      CompiledGrammar::from_gbnf("root ::= \"{\" (\"\\\"key\\\":\" \" \"? [0-9]+)? \"}\"", vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  const size_t w = compiled->mask_words();
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Matcher m(*compiled);
    // A valid prefix first.
    const int prefix = static_cast<int>(rng() % 3);
    const std::vector<uint32_t> valid = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < prefix; ++i) ASSERT_TRUE(m.accept_token(valid[i]).ok());
    std::vector<uint32_t> draft;
    const size_t k = rng() % 6;
    for (size_t i = 0; i < k; ++i)
      draft.push_back(rng() % 2 ? valid[std::min<size_t>(prefix + i, valid.size() - 1)]
                                : static_cast<uint32_t>(rng() % kTokens.size()));
    std::vector<uint32_t> rows((k + 1) * w, 0xFFFFFFFFu);
    std::vector<uint32_t> before(w);
    ASSERT_TRUE(m.fill_mask(before.data(), w).ok());
    ASSERT_TRUE(m.fill_draft_masks(draft.data(), k, rows.data(), w).ok());
    // Step by step on a copy.
    Matcher step(m);
    bool refused = false;
    for (size_t i = 0; i <= k; ++i) {
      std::vector<uint32_t> expected(w, 0);
      if (!refused) ASSERT_TRUE(step.fill_mask(expected.data(), w).ok());
      EXPECT_EQ(std::vector<uint32_t>(rows.begin() + i * w, rows.begin() + (i + 1) * w), expected)
          << "trial " << trial << " row " << i;
      if (i < k && !refused) refused = !step.accept_token(draft[i]).ok();
    }
    // Unchanged state: same mask, same token count.
    std::vector<uint32_t> after(w);
    ASSERT_TRUE(m.fill_mask(after.data(), w).ok());
    EXPECT_EQ(after, before);
    EXPECT_EQ(m.num_tokens(), static_cast<size_t>(prefix));
    // accept_draft takes the same tokens the rows say were accepted.
    Matcher copy(m);
    size_t expected_accepted = 0;
    while (expected_accepted < k && copy.accept_token(draft[expected_accepted]).ok())
      ++expected_accepted;
    EXPECT_EQ(m.accept_draft(draft.data(), k), expected_accepted);
    EXPECT_EQ(m.num_tokens(), prefix + expected_accepted);
    ASSERT_TRUE(m.rollback(expected_accepted).ok());
    ASSERT_TRUE(m.fill_mask(after.data(), w).ok());
    EXPECT_EQ(after, before);
  }
}

TEST(SpeculativeDecoding, RefusesShortRows) {
  const Vocabulary vocab = vocabulary();
  auto compiled = CompiledGrammar::from_gbnf("root ::= \"{}\"", vocab);
  ASSERT_TRUE(compiled.ok());
  Matcher m(*compiled);
  const uint32_t draft[1] = {1};
  std::vector<uint32_t> rows(2 * compiled->mask_words());
  EXPECT_EQ(m.fill_draft_masks(draft, 1, rows.data(), 0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(m.fill_draft_masks(nullptr, 1, rows.data(), compiled->mask_words()).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(m.accept_draft(nullptr, 3), 0u);
  Matcher moved(std::move(m));
  EXPECT_EQ(m.fill_draft_masks(draft, 1, rows.data(), 1).code(), ErrorCode::kInvalidState);
  EXPECT_TRUE(m.forced_tokens(greedy).empty());
}

}  // namespace
}  // namespace grammask
