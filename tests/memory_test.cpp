// memory_bytes() of the public types, and the cache budgets of
// CompileOptions: a long random replay stays within them, and the masks are
// the same whatever the budgets.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/json_schema.h"
#include "grammask/matcher.h"
#include "grammask/vocabulary.h"

namespace grammask {
namespace {

// Tokens over a JSON-friendly alphabet, 1 to 8 bytes, plus every single
// printable byte (so any JSON text can be spelled); token 0 is the stop token.
Vocabulary synthetic_vocabulary(size_t n, uint32_t seed) {
  const std::string alphabet = "{}[]:,\" \n0123456789.-+eEabcdefghijklmnopqrstuvwxyzABCXYZ_\\/";
  std::mt19937 rng(seed);
  std::vector<std::string> tokens = {"</s>"};
  for (int c = 0x20; c < 0x7F; ++c) tokens.emplace_back(1, static_cast<char>(c));
  tokens.emplace_back("\n");
  while (tokens.size() < n) {
    std::string t;
    const size_t length = 2 + rng() % 7;
    for (size_t i = 0; i < length; ++i) t += alphabet[rng() % alphabet.size()];
    tokens.push_back(t);
  }
  auto vocab = Vocabulary::from_token_bytes(tokens, {0}, {0});
  EXPECT_TRUE(vocab.ok()) << vocab.status().to_string();
  return *vocab;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Grammar schema_grammar() {
  const char* schema = R"({
    "type": "object",
    "properties": {
      "id": {"type": "integer", "minimum": 0},
      "name": {"type": "string", "maxLength": 40},
      "score": {"type": "number"},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
      "child": {"type": "object", "properties": {"on": {"type": "boolean"},
                "note": {"type": "string"}}}
    },
    "required": ["id", "name"]
  })";
  auto grammar = json_schema_to_grammar(schema);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string();
  return *grammar;
}

TEST(Memory, VocabularyHoldsAtLeastItsTokens) {
  const Vocabulary small = synthetic_vocabulary(2000, 1);
  const Vocabulary large = synthetic_vocabulary(20000, 1);
  size_t token_bytes = 0;
  for (uint32_t id = 0; id < large.size(); ++id) token_bytes += large.token_bytes(id).size();
  EXPECT_GE(large.memory_bytes(), token_bytes + large.size() * sizeof(uint32_t));
  EXPECT_GT(large.memory_bytes(), small.memory_bytes());
  // Copies share the data: the figure is the same, not doubled.
  const Vocabulary copy = large;
  EXPECT_EQ(copy.memory_bytes(), large.memory_bytes());
}

TEST(Memory, GrammarAndMatcherFigures) {
  const Vocabulary vocab = synthetic_vocabulary(5000, 2);
  CompileOptions options;
  options.precompute_budget = 0;  // nothing cached at compile time
  auto compiled = CompiledGrammar::compile(schema_grammar(), vocab, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  EXPECT_EQ(compiled->cache_bytes(), 0u);
  const size_t tables = compiled->memory_bytes();
  EXPECT_GT(tables, 0u);
  Matcher matcher(*compiled);
  const size_t fresh = matcher.memory_bytes();
  EXPECT_GT(fresh, 0u);
  std::vector<uint32_t> words(compiled->mask_words());
  ASSERT_TRUE(matcher.fill_mask(words.data(), words.size()).ok());
  ASSERT_TRUE(matcher.accept_bytes(R"({"id": 7, "name": "a)").ok());
  ASSERT_TRUE(matcher.fill_mask(words.data(), words.size()).ok());
  // The walks the masks needed are cached by the grammar and counted.
  EXPECT_GT(compiled->cache_bytes(), 0u);
  EXPECT_EQ(compiled->memory_bytes(), tables + compiled->cache_bytes());
  // The masks the matcher keeps are counted in its figure.
  EXPECT_GT(matcher.memory_bytes(), fresh);
  Matcher moved = std::move(matcher);
  EXPECT_EQ(matcher.memory_bytes(), 0u);  // NOLINT(bugprone-use-after-move): documented
  EXPECT_GT(moved.memory_bytes(), 0u);
}

// One configuration of budgets, its grammar and the matcher of the current
// sequence.
struct Budgeted {
  CompileOptions options;
  std::optional<CompiledGrammar> compiled;
  std::optional<Matcher> matcher;
  std::vector<uint32_t> words;
  size_t most_cache_bytes = 0;
  size_t most_matcher_bytes = 0;
};

// Replays random sequences with the default budgets, none, and the small
// ones given (which the default run must pass).
void replay_with_budgets(const Grammar& grammar, const Vocabulary& vocab, size_t sequences,
                         size_t max_tokens, size_t cache_budget, size_t matcher_budget) {
  std::vector<Budgeted> configs(3);
  configs[1].options.max_cache_bytes = 0;
  configs[1].options.max_matcher_cache_bytes = 0;
  configs[2].options.max_cache_bytes = cache_budget;
  configs[2].options.max_matcher_cache_bytes = matcher_budget;
  for (Budgeted& c : configs) {
    auto compiled = CompiledGrammar::compile(grammar, vocab, c.options);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    c.compiled = *compiled;
    c.matcher.emplace(*c.compiled);
    c.words.assign(compiled->mask_words(), 0);
    EXPECT_LE(c.compiled->cache_bytes(), c.options.max_cache_bytes);
  }
  const size_t tables = configs[1].compiled->memory_bytes();
  // The same sequences for all, each matcher reset between them (keeping
  // its caches); the parse alone, without masks, is what a matcher must
  // hold whatever its budget.
  Matcher parse_only(*configs[1].compiled);
  std::mt19937 rng(7);
  for (size_t seq = 0; seq < sequences; ++seq) {
    for (Budgeted& c : configs) c.matcher->reset();
    parse_only.reset();
    for (size_t step = 0; step <= max_tokens; ++step) {
      for (Budgeted& c : configs) {
        ASSERT_TRUE(c.matcher->fill_mask(c.words.data(), c.words.size()).ok());
        ASSERT_LE(c.compiled->cache_bytes(), c.options.max_cache_bytes);
        c.most_cache_bytes = std::max(c.most_cache_bytes, c.compiled->cache_bytes());
        const size_t held = c.matcher->memory_bytes() - parse_only.memory_bytes();
        c.most_matcher_bytes = std::max(c.most_matcher_bytes, held);
      }
      ASSERT_EQ(configs[1].words, configs[0].words) << "sequence " << seq << " step " << step;
      ASSERT_EQ(configs[2].words, configs[0].words) << "sequence " << seq << " step " << step;
      std::vector<uint32_t> allowed;
      for (uint32_t id = 1; id < vocab.size(); ++id)
        if (test_bit(configs[0].words.data(), id)) allowed.push_back(id);
      if (allowed.empty() || step == max_tokens) break;
      const uint32_t token = allowed[rng() % allowed.size()];
      for (Budgeted& c : configs) ASSERT_TRUE(c.matcher->accept_token(token).ok());
      ASSERT_TRUE(parse_only.accept_token(token).ok());
    }
  }
  // Nothing cached without a budget; the small budgets were reached and held.
  EXPECT_EQ(configs[1].most_cache_bytes, 0u);
  EXPECT_EQ(configs[1].compiled->memory_bytes(), tables);
  EXPECT_GT(configs[2].most_cache_bytes, configs[2].options.max_cache_bytes / 2);
  EXPECT_GT(configs[0].most_cache_bytes, configs[2].options.max_cache_bytes)
      << "the replay should need more than the small budget";
  // A matcher holds at most its budget past its parse, plus one step's
  // growth, the walk scratch and one walk larger than its half (here a few
  // KiB); unbounded, this replay makes it hold more.
  const size_t slack = 48 << 10;
  EXPECT_LE(configs[2].most_matcher_bytes, configs[2].options.max_matcher_cache_bytes + slack);
  EXPECT_LE(configs[1].most_matcher_bytes, slack);
  EXPECT_GT(configs[0].most_matcher_bytes, configs[2].options.max_matcher_cache_bytes + slack);
}

TEST(Memory, LongReplayStaysWithinTheBudgetsAndMasksAreUnchanged) {
  const Vocabulary vocab = synthetic_vocabulary(20000, 3);
  replay_with_budgets(schema_grammar(), vocab, 60, 120, 64 << 10, 128 << 10);
}

TEST(Memory, BudgetsOnTheJsonGrammar) {
  auto grammar = parse_gbnf(read_file(std::string(GRAMMASK_SOURCE_DIR) + "/grammars/json.gbnf"));
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  const Vocabulary vocab = synthetic_vocabulary(20000, 4);
  replay_with_budgets(*grammar, vocab, 40, 150, 16 << 10, 16 << 10);
}

}  // namespace
}  // namespace grammask
