// Token items (<[id]>, <text>, !<...>): matched by token id, never by bytes,
// with exact masks, checked against the brute-force oracle of
// token_oracle.h.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "grammask/matcher.h"
#include "grammask/recognizer.h"
#include "token_oracle.h"

namespace grammask {
namespace {

using grammask::testing::TokenOracle;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<uint32_t> allowed_ids(const std::vector<uint32_t>& words, size_t n) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < n; ++i)
    if (test_bit(words.data(), i)) ids.push_back(i);
  return ids;
}

// Random walks compared with the oracle at every step; returns the steps
// compared.
int walk_against_oracle(const std::string& gbnf, const Vocabulary& vocab, uint32_t seed,
                        int steps) {
  auto grammar = parse_gbnf(gbnf);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string();
  if (!grammar.ok()) return 0;
  auto compiled = CompiledGrammar::compile(*grammar, vocab);
  EXPECT_TRUE(compiled.ok()) << compiled.status().to_string();
  if (!compiled.ok()) return 0;
  Matcher m(*compiled);
  TokenOracle oracle(*grammar, vocab);
  EXPECT_TRUE(oracle.ok()) << oracle.status().to_string();
  EXPECT_TRUE(oracle.supported());
  std::mt19937 rng(seed);
  std::vector<uint32_t> words(compiled->mask_words(), 0);
  std::vector<uint32_t> history;
  int compared = 0;
  for (int step = 0; step < steps && !m.is_terminated(); ++step) {
    EXPECT_TRUE(m.fill_mask(words.data(), words.size()).ok());
    const std::vector<uint32_t> expected = oracle.mask(words.size());
    if (expected != words) {
      std::string diff;
      for (uint32_t id = 0, shown = 0; id < vocab.size() && shown < 8; ++id) {
        if (test_bit(words.data(), id) == test_bit(expected.data(), id)) continue;
        diff += (test_bit(words.data(), id) ? " +" : " -") + std::to_string(id) + "'" +
                std::string(vocab.token_bytes(id)) + "'";
        ++shown;
      }
      std::string h;
      for (uint32_t id : history) h += " " + std::to_string(id);
      ADD_FAILURE() << gbnf << "\nmask differs after tokens" << h
                    << "; first differences (+ extra, - missing):" << diff;
      return compared;
    }
    ++compared;
    const std::vector<uint32_t> ids = allowed_ids(words, vocab.size());
    if (ids.empty()) break;
    // Favour the tokens that token items read, so walks take them.
    uint32_t pick = ids[rng() % ids.size()];
    for (int tries = 0; tries < 3 && (vocab.is_stop(pick) || rng() % 2); ++tries)
      pick = ids[rng() % ids.size()];
    EXPECT_TRUE(m.is_token_allowed(pick));
    EXPECT_TRUE(m.accept_token(pick).ok()) << pick;
    oracle.accept(pick);
    history.push_back(pick);
  }
  return compared;
}

// A vocabulary with control tokens that spell what text tokens spell too.
//   0 <|im_end|> (control, stop)   1 <think> (control)   2 </think> (control)
//   3 <tool_call> (control)        4 <|end|> (control)   5 "<think>" (text)
Vocabulary chat_vocab() {
  std::vector<std::string> tokens = {
      "<|im_end|>", "<think>", "</think>", "<tool_call>", "<|end|>", "<think>", "<",
      "|",          "im",      "_",        "end|>",       "a",       "b",       "ab",
      "abc",        " ",       "\n",       "{",           "}",       "\"",      ":",
      "1",          "x",       "</",       "think>",      "ink",     "<|",      "!",
      "?",          "\xC3",    "\xA9",     "é",           "th"};
  return *Vocabulary::from_token_bytes(tokens, /*stop_ids=*/{0}, /*special_ids=*/{0, 1, 2, 3, 4});
}

TEST(TokenItems, LlamaCppIdSequence) {
  // The grammar of llama.cpp's token tests, over 1100 one-letter tokens.
  std::vector<std::string> tokens;
  for (int i = 0; i < 1100; ++i) tokens.push_back(std::string(1, static_cast<char>('a' + i % 26)));
  const Vocabulary vocab = *Vocabulary::from_token_bytes(tokens, {});
  auto compiled = CompiledGrammar::from_gbnf("root ::= <[1000]> !<[1001]> <[1001]>", vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  auto run = [&](std::vector<uint32_t> ids) {
    Matcher m(*compiled);
    for (uint32_t id : ids)
      if (!m.accept_token(id).ok()) return false;
    return m.is_accepting();
  };
  EXPECT_TRUE(run({1000, 5, 1001}));
  EXPECT_TRUE(run({1000, 1000, 1001}));
  EXPECT_TRUE(run({1000, 1002, 1001}));
  EXPECT_FALSE(run({1000, 1001, 1001}));
  EXPECT_FALSE(run({1001, 5, 1001}));
  EXPECT_FALSE(run({1000, 5}));
  EXPECT_FALSE(run({1000, 5, 1001, 1001}));
  // Token 1000 spells "m": text never satisfies an id item.
  EXPECT_FALSE(run({static_cast<uint32_t>('m' - 'a'), 5, 1001}));
}

TEST(TokenItems, MatchedByIdNeverByBytes) {
  const Vocabulary vocab = chat_vocab();
  auto items = CompiledGrammar::from_gbnf("root ::= \"a\" <|im_end|>", vocab);
  ASSERT_TRUE(items.ok()) << items.status().to_string();
  Matcher m(*items);
  ASSERT_TRUE(m.accept_token(11).ok());  // "a"
  // The five text tokens that spell <|im_end|> are refused.
  EXPECT_FALSE(m.is_token_allowed(6));
  EXPECT_FALSE(m.accept_token(6).ok());
  EXPECT_TRUE(m.accept_token(0).ok());  // the control token, a stop token too
  EXPECT_TRUE(m.is_accepting());
  EXPECT_FALSE(m.is_terminated());  // read by the grammar, not ending it

  // A text literal is never satisfied by the control token.
  auto text = CompiledGrammar::from_gbnf("root ::= \"<think>\" \"a\"", vocab);
  ASSERT_TRUE(text.ok());
  Matcher t(*text);
  EXPECT_FALSE(t.is_token_allowed(1));
  EXPECT_TRUE(t.is_token_allowed(5));  // the text token spelling it
  EXPECT_TRUE(t.accept_token(5).ok());
}

TEST(TokenItems, TextNamesEveryTokenWithThatText) {
  // <think> names the control token 1 and the text token 5.
  const Vocabulary vocab = chat_vocab();
  auto compiled = CompiledGrammar::from_gbnf("root ::= <think> \"a\"", vocab);
  ASSERT_TRUE(compiled.ok());
  Matcher m(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  EXPECT_EQ(allowed_ids(words, vocab.size()), (std::vector<uint32_t>{1, 5}));
}

TEST(TokenItems, UnknownNamesAndIdsAreErrorsWithPositions) {
  const Vocabulary vocab = chat_vocab();
  auto unknown = CompiledGrammar::from_gbnf("root ::= (\"a\"\n  <|nope|>)", vocab);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("<|nope|>"), std::string::npos);
  EXPECT_EQ(unknown.status().where().line, 2u);
  EXPECT_EQ(unknown.status().where().column, 3u);
  auto range = CompiledGrammar::from_gbnf("root ::= !<[33]>", vocab);
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(range.status().message().find("!<[33]>"), std::string::npos);
  EXPECT_NE(range.status().message().find("out of range"), std::string::npos);
  // Without a vocabulary the grammar is fine.
  EXPECT_TRUE(Recognizer::create(*parse_gbnf("root ::= <|nope|> !<[99999]>")).ok());
}

TEST(TokenItems, NegatedItemReadsAnyTokenButItsOwnAndStops) {
  const Vocabulary vocab = chat_vocab();
  auto compiled = CompiledGrammar::from_gbnf("root ::= (!<|end|>)* <|end|>", vocab);
  ASSERT_TRUE(compiled.ok());
  Matcher m(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  for (uint32_t id = 0; id < vocab.size(); ++id)
    EXPECT_EQ(test_bit(words.data(), id), id != 0) << id;  // all but the stop token
  for (uint32_t id : {1u, 11u, 29u, 3u, 30u}) ASSERT_TRUE(m.accept_token(id).ok()) << id;
  EXPECT_FALSE(m.is_accepting());
  EXPECT_FALSE(m.accept_token(0).ok());  // incomplete: the stop token is refused
  ASSERT_TRUE(m.accept_token(4).ok());
  EXPECT_TRUE(m.is_accepting());
  ASSERT_TRUE(m.accept_token(0).ok());
  EXPECT_TRUE(m.is_terminated());
}

TEST(TokenItems, TextAndItemReadingsOfOneTokenBothGoOn) {
  // Token 13 "ab" is text for the first branch and "any token but 2" for
  // the second: both parses stay, so both continuations are allowed.
  const Vocabulary vocab = chat_vocab();
  auto compiled = CompiledGrammar::from_gbnf("root ::= \"ab\" \"!\" | !<[2]> \"?\"", vocab);
  ASSERT_TRUE(compiled.ok());
  Matcher m(*compiled);
  ASSERT_TRUE(m.accept_token(13).ok());
  EXPECT_TRUE(m.is_token_allowed(27));  // "!"
  EXPECT_TRUE(m.is_token_allowed(28));  // "?"
  Matcher fork = m;
  ASSERT_TRUE(m.accept_token(27).ok());
  EXPECT_TRUE(m.is_accepting());
  ASSERT_TRUE(fork.accept_token(28).ok());
  EXPECT_TRUE(fork.is_accepting());
  // "a" is text before "b", or any token before "?"; never before "!".
  Matcher split(*compiled);
  ASSERT_TRUE(split.accept_token(11).ok());
  EXPECT_FALSE(split.is_accepting());
  EXPECT_TRUE(split.is_token_allowed(12));
  EXPECT_TRUE(split.is_token_allowed(28));
  EXPECT_FALSE(split.is_token_allowed(27));
}

TEST(TokenItems, RollbackForcedBytesAndCachedMasks) {
  const Vocabulary vocab = chat_vocab();
  auto compiled = CompiledGrammar::from_gbnf(
      "root ::= turn+ <|im_end|>\nturn ::= <think> \"ab\" </think> \"x\"", vocab);
  ASSERT_TRUE(compiled.ok());
  Matcher m(*compiled);
  std::vector<uint32_t> words(compiled->mask_words()), again(compiled->mask_words());
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  EXPECT_EQ(allowed_ids(words, vocab.size()), (std::vector<uint32_t>{1, 5}));
  EXPECT_EQ(m.forced_bytes(), "");  // a token item comes next, not a byte
  ASSERT_TRUE(m.accept_token(1).ok());
  EXPECT_EQ(m.forced_bytes(), "ab");
  ASSERT_TRUE(m.accept_token(13).ok());
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  EXPECT_EQ(allowed_ids(words, vocab.size()), (std::vector<uint32_t>{2}));
  ASSERT_TRUE(m.accept_token(2).ok());
  ASSERT_TRUE(m.accept_token(22).ok());
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  EXPECT_EQ(allowed_ids(words, vocab.size()), (std::vector<uint32_t>{0, 1, 5}));
  // Around the loop again, then back: the same masks.
  ASSERT_TRUE(m.accept_token(1).ok());
  ASSERT_TRUE(m.accept_token(13).ok());
  ASSERT_TRUE(m.fill_mask(again.data(), again.size()).ok());
  EXPECT_EQ(allowed_ids(again, vocab.size()), (std::vector<uint32_t>{2}));
  ASSERT_TRUE(m.rollback(2).ok());
  ASSERT_TRUE(m.fill_mask(again.data(), again.size()).ok());
  EXPECT_EQ(again, words);
  // A state seen before gives its mask from the cache.
  const size_t hits = m.mask_cache_hits();
  ASSERT_TRUE(m.accept_token(1).ok());
  ASSERT_TRUE(m.accept_token(13).ok());
  ASSERT_TRUE(m.fill_mask(again.data(), again.size()).ok());
  EXPECT_EQ(allowed_ids(again, vocab.size()), (std::vector<uint32_t>{2}));
  EXPECT_GT(m.mask_cache_hits(), hits);
  ASSERT_TRUE(m.rollback(2).ok());
  ASSERT_TRUE(m.accept_token(0).ok());
  EXPECT_TRUE(m.is_accepting());
}

TEST(TokenItems, MasksMatchOracleOnSmallVocabulary) {
  const Vocabulary vocab = chat_vocab();
  const char* grammars[] = {
      "root ::= <think> [a-z ]* </think> \"{\" \"1\"* \"}\"",
      "root ::= (!<|end|>)* <|end|>",
      "root ::= (\"a\" | <think> | !<[11]>)+ <|im_end|>",
      "root ::= \"ab\" \"!\" | !<[2]> \"?\" | <[13]> <[13]>",
      "root ::= x+ <tool_call> \"{\" x* \"}\"\nx ::= [a-c] | <think> x </think> | \" \"",
      "root ::= \"<\" \"|\" <|end|> | <|end|> \"<|\" | <think> \"é\" (!<think>)?",
      // Text constructs that read any character, beside items.
      "root ::= [^a]{0,3} <think> . !<[11]> ([^b] | TextExcluding(\"x\"))* </think>",
  };
  int compared = 0;
  for (const char* g : grammars)
    for (uint32_t seed = 1; seed <= 6; ++seed) compared += walk_against_oracle(g, vocab, seed, 25);
  EXPECT_GT(compared, 200);
}

TEST(TokenItems, MasksMatchOracleOnSharedVocabularies) {
  const std::string shared = GRAMMASK_SHARED_DIR;
  if (shared.empty() || read(shared + "/bench/README.md").empty()) GTEST_SKIP() << "no ../shared";
  std::vector<std::string> files = {"bench/vocab/gpt2.gguf", "bench/vocab/deepseek-llm.gguf",
                                    "bench/vocab/phi3.gguf", "tokenizers/llama-3/tokenizer.json",
                                    "tokenizers/phi-3-mini/tokenizer.json"};
  // Sanitizer builds (GRAMMASK_TEST_LIGHT=1): one GGUF and one
  // tokenizer.json, the oracle being slow there.
  const char* light = std::getenv("GRAMMASK_TEST_LIGHT");
  if (light != nullptr && std::string(light) == "1") files = {files[0], files[3]};
  for (const std::string& file : files) {
    const std::string path = shared + "/" + file;
    auto vocab = file.find(".gguf") != std::string::npos
                     ? Vocabulary::from_gguf_file(path)
                     : Vocabulary::from_tokenizer_json_file(path);
    ASSERT_TRUE(vocab.ok()) << file;
    const uint32_t stop = vocab->stop_tokens().front();
    const std::string s = std::to_string(stop);
    std::vector<std::string> grammars = {
        // A control token as the delimiter around free text and a number.
        "root ::= \"<a>\" [a-z ]{0,12} \"</a>\" <[" + s + "]>",
        "root ::= (!<[" + s + "]> | \"x\")* \"{\" [0-9]+ \"}\"",
        "root ::= <[" + s + "]> [a-z]+ | \"hello\" !<[100]> \" world\"",
    };
    // Control tokens by name, a stop token among them.
    if (file.find("llama-3") != std::string::npos) {
      grammars.push_back(
          "root ::= <|start_header_id|> \"assistant\" <|end_header_id|> \"\\n\\n\" [a-z ]{0,12} "
          "<|eot_id|>");
      grammars.push_back("root ::= (!<|eot_id|>)* <|eot_id|>");
    } else if (file.find("phi-3") != std::string::npos) {
      grammars.push_back("root ::= <|assistant|> [a-z ]{0,12} <|end|>");
    }
    int compared = 0;
    for (const std::string& g : grammars)
      for (uint32_t seed = 1; seed <= 2; ++seed)
        compared += walk_against_oracle(g, *vocab, seed, 8);
    EXPECT_GT(compared, 20) << file;
  }
}

}  // namespace
}  // namespace grammask
