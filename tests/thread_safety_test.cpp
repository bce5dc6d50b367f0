// Thread safety: many threads share one Vocabulary and one CompiledGrammar
// while each drives its own Matchers (fill_mask, accept_token, rollback,
// forks) and batches (fill_masks on a shared ThreadPool and on temporary
// pools). Every result is compared with a reference computed on one thread
// beforehand. .ci/sanitizers runs this test under ThreadSanitizer, where it
// is the real check; in a normal build it still catches wrong masks.
//
// GRAMMASK_TEST_LIGHT=1 runs fewer threads and steps (for sanitizer builds,
// which are several times slower); the shape of the test is the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/grammask_c.h"
#include "grammask/matcher.h"
#include "grammask/structural_tag.h"
#include "grammask/vocabulary.h"

namespace grammask {
namespace {

bool light_mode() {
  const char* value = std::getenv("GRAMMASK_TEST_LIGHT");
  return value != nullptr && std::strcmp(value, "0") != 0 && value[0] != '\0';
}

struct Scale {
  int threads;
  int scripts;  // random walks in the reference
  int steps;    // longest walk
  int rounds;   // times each thread replays its share
};

Scale scale() {
  return light_mode() ? Scale{4, 8, 32, 2} : Scale{8, 16, 64, 8};
}

// JSON-like text with nesting, strings (with non-ASCII), numbers and
// keywords, so masks differ from step to step and the trie walk is real.
const char* const kGrammar = R"gbnf(
root   ::= ( value "\n" )+
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\nt] )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )?
ws     ::= [ \n]{0,3}
)gbnf";

// About 7000 tokens: single bytes, pairs, triples, words, multi-byte
// characters and their fragments, plus control and stop tokens.
Vocabulary make_vocabulary() {
  std::vector<std::string> tokens;
  for (int c = 0x20; c < 0x7F; ++c) tokens.emplace_back(1, static_cast<char>(c));
  tokens.push_back("\n");
  const std::string common = "{}[]\":, \n0123456789abcdeftrulsn-.\\";
  for (char a : common)
    for (char b : common) tokens.push_back(std::string{a, b});
  const std::string letters = "\" :,0123456789abcdef";
  for (char a : letters)
    for (char b : letters)
      for (char c : letters) tokens.push_back(std::string{a, b, c});
  for (const char* word :
       {"true", "false", "null",     "\"key\"",  "\"name\":", "\": ", "{\"", "\"}",  "[]",
        "{}",   ", ",    ",\n",      "12",       "3.5",       "-0",   "é",   "日本", "\xC3",
        "\xA9", "\xE6",  "\x97\xA5", "\xF0\x9F", "\x8E\x89",  "🎉",    "\\n", "\\\"", "  ",
        "\n  ", "tr",    "ue",       "fa",       "lse",       "nu",   "ll"}) {
    tokens.push_back(word);
  }
  const uint32_t control = static_cast<uint32_t>(tokens.size());
  tokens.push_back("<s>");
  const uint32_t stop = static_cast<uint32_t>(tokens.size());
  tokens.push_back("</s>");
  auto vocab = Vocabulary::from_token_bytes(tokens, {stop}, {control});
  EXPECT_TRUE(vocab.ok()) << vocab.status().to_string();
  return *vocab;
}

// One random walk: masks[i] is the mask before tokens[i] is accepted, and
// masks.back() the mask after the last token; forced[i] likewise.
struct Script {
  std::vector<uint32_t> tokens;
  std::vector<std::vector<uint32_t>> masks;
  std::vector<std::string> forced;
};

std::vector<uint32_t> allowed(const std::vector<uint32_t>& mask, size_t n_tokens) {
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < n_tokens; ++id)
    if (test_bit(mask.data(), id)) ids.push_back(id);
  return ids;
}

Script record_script(const CompiledGrammar& compiled, uint32_t seed, int steps) {
  const Vocabulary& vocab = compiled.vocabulary();
  std::mt19937 rng(seed);
  Script script;
  Matcher m(compiled);
  for (int step = 0;; ++step) {
    std::vector<uint32_t> mask(compiled.mask_words());
    EXPECT_TRUE(m.fill_mask(mask.data(), mask.size()).ok());
    script.masks.push_back(mask);
    script.forced.push_back(m.forced_bytes());
    if (step == steps || m.is_terminated()) break;
    const std::vector<uint32_t> ids = allowed(mask, vocab.size());
    if (ids.empty()) break;
    // Stop late: prefer other tokens until the last quarter of the walk.
    uint32_t pick = ids[rng() % ids.size()];
    for (int tries = 0; tries < 8 && vocab.is_stop(pick) && step < steps * 3 / 4; ++tries)
      pick = ids[rng() % ids.size()];
    EXPECT_TRUE(m.accept_token(pick).ok());
    script.tokens.push_back(pick);
  }
  return script;
}

// Failures are counted rather than reported from worker threads, with the
// first description kept for the message.
class Problems {
 public:
  void add(const std::string& what) {
    if (count_.fetch_add(1) == 0) first_ = what;
  }
  int count() const { return count_.load(); }
  const std::string& first() const { return first_; }  // after the threads joined

 private:
  std::atomic<int> count_{0};
  std::string first_;
};

// Replays `script` on a fresh Matcher: masks and forced bytes at every step,
// a rollback of a few tokens and their replay, a fork that runs ahead alone.
void replay(const CompiledGrammar& compiled, const Script& script, std::mt19937& rng,
            Problems& problems) {
  Matcher m(compiled);
  std::vector<uint32_t> mask(compiled.mask_words());
  const auto check_at = [&](Matcher& matcher, size_t position, const char* what) {
    if (!matcher.fill_mask(mask.data(), mask.size()).ok() || mask != script.masks[position]) {
      problems.add(std::string(what) + ": mask differs at step " + std::to_string(position));
    }
  };
  for (size_t i = 0; i < script.tokens.size(); ++i) {
    check_at(m, i, "replay");
    if (i % 5 == 0 && m.forced_bytes() != script.forced[i]) {
      problems.add("forced bytes differ at step " + std::to_string(i));
    }
    if (!m.is_token_allowed(script.tokens[i]) || !m.accept_token(script.tokens[i]).ok()) {
      problems.add("token refused at step " + std::to_string(i));
      return;
    }
    if (rng() % 4 == 0) {  // speculative decoding: undo a few, check, redo
      const size_t back = 1 + rng() % std::min<size_t>(i + 1, 4);
      if (!m.rollback(back).ok()) problems.add("rollback refused");
      check_at(m, i + 1 - back, "after rollback");
      for (size_t j = i + 1 - back; j <= i; ++j) {
        if (!m.accept_token(script.tokens[j]).ok()) problems.add("replay after rollback refused");
      }
    }
    if (rng() % 6 == 0) {  // a beam: the fork runs ahead, the original must not move
      Matcher fork = m;
      for (size_t j = i + 1; j < script.tokens.size() && j < i + 4; ++j) {
        if (!fork.accept_token(script.tokens[j]).ok()) problems.add("fork refused a token");
        check_at(fork, j + 1, "fork");
      }
      check_at(m, i + 1, "original after fork");
    }
  }
  check_at(m, script.tokens.size(), "replay end");
}

// A batch of matchers at random positions of random scripts, filled on
// `pool` (or a temporary pool when null) and compared row by row.
void batch(const CompiledGrammar& compiled, const std::vector<Script>& scripts, std::mt19937& rng,
           ThreadPool* pool, Problems& problems) {
  const size_t n = 2 + rng() % 6;
  const size_t row_words = compiled.mask_words() + rng() % 3;  // rows may be padded
  std::vector<Matcher> matchers;
  std::vector<std::pair<size_t, size_t>> where;  // (script, position)
  for (size_t k = 0; k < n; ++k) {
    const size_t s = rng() % scripts.size();
    const size_t position = rng() % (scripts[s].tokens.size() + 1);
    matchers.emplace_back(compiled);
    for (size_t j = 0; j < position; ++j) {
      if (!matchers.back().accept_token(scripts[s].tokens[j]).ok()) problems.add("batch setup");
    }
    where.emplace_back(s, position);
  }
  std::vector<Matcher*> pointers;
  for (Matcher& m : matchers) pointers.push_back(&m);
  std::vector<uint32_t> rows(n * row_words, 0xA5A5A5A5u);
  const Status status =
      pool != nullptr
          ? fill_masks(pointers.data(), n, rows.data(), row_words, *pool)
          : fill_masks(pointers.data(), n, rows.data(), row_words, size_t{2} + rng() % 3);
  if (!status.ok()) {
    problems.add("fill_masks failed: " + status.to_string());
    return;
  }
  for (size_t k = 0; k < n; ++k) {
    const std::vector<uint32_t>& expected = scripts[where[k].first].masks[where[k].second];
    const uint32_t* row = rows.data() + k * row_words;
    bool same = std::equal(expected.begin(), expected.end(), row);
    for (size_t w = expected.size(); w < row_words; ++w) same = same && row[w] == 0;
    if (!same) {
      problems.add(std::string(pool ? "shared" : "temporary") + " pool: row " + std::to_string(k) +
                   " differs");
    }
  }
}

TEST(ThreadSafety, SharedGrammarAndVocabularyPrivateMatchers) {
  const Scale s = scale();
  const Vocabulary vocabulary = make_vocabulary();
  auto made = CompiledGrammar::from_gbnf(kGrammar, vocabulary);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  const CompiledGrammar compiled = *made;

  // The reference, on this thread only.
  std::vector<Script> scripts;
  size_t total_steps = 0;
  for (int i = 0; i < s.scripts; ++i) {
    scripts.push_back(record_script(compiled, 1000 + static_cast<uint32_t>(i), s.steps));
    total_steps += scripts.back().tokens.size();
  }
  ASSERT_GE(total_steps, static_cast<size_t>(s.scripts * s.steps / 2)) << "walks too short";

  // The threads share a second compile of the grammar with nothing
  // precomputed, so that they race to publish the walks they compute.
  CompileOptions lazy;
  lazy.precompute_budget = 0;
  auto lazy_made = CompiledGrammar::from_gbnf(kGrammar, vocabulary, lazy);
  ASSERT_TRUE(lazy_made.ok()) << lazy_made.status().to_string();
  const CompiledGrammar shared = *lazy_made;

  ThreadPool shared_pool(3);
  Problems problems;
  std::atomic<int> masks_compared{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < s.threads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(77 + t));
      // Copies share the data: reference counts are touched from every thread.
      const CompiledGrammar local = shared;
      const Vocabulary vocab = local.vocabulary();
      for (int round = 0; round < s.rounds; ++round) {
        for (size_t i = static_cast<size_t>(t) % scripts.size(); i < scripts.size();
             i += static_cast<size_t>(s.threads)) {
          replay(local, scripts[i], rng, problems);
          masks_compared.fetch_add(static_cast<int>(scripts[i].tokens.size()) + 1);
        }
        if (t % 2 == 0) {
          batch(local, scripts, rng, &shared_pool, problems);
        } else {
          batch(local, scripts, rng, nullptr, problems);
        }
        // Read-only vocabulary calls, and a derived vocabulary built
        // concurrently from the shared data.
        if (vocab.find_token("true") != vocabulary.find_token("true")) problems.add("find_token");
        // Memory figures read while other threads publish walks.
        const size_t cached = local.cache_bytes();
        if (cached > lazy.max_cache_bytes || local.memory_bytes() < cached ||
            vocab.memory_bytes() != vocabulary.memory_bytes())
          problems.add("memory_bytes");
        auto with_stops = vocab.with_stop_tokens({vocab.stop_tokens()[0], 0});
        if (!with_stops.ok() || !with_stops->is_stop(0)) problems.add("with_stop_tokens");
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(problems.count(), 0) << problems.first();
  EXPECT_GE(masks_compared.load(), static_cast<int>(total_steps));
}

TEST(ThreadSafety, CacheBudgetHoldsWhileThreadsPublish) {
  // A budget of a few walks: threads race to take what is left of it.
  const Scale s = scale();
  const Vocabulary vocabulary = make_vocabulary();
  auto reference = CompiledGrammar::from_gbnf(kGrammar, vocabulary);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  std::vector<Script> scripts;
  for (int i = 0; i < s.threads; ++i)
    scripts.push_back(record_script(*reference, 3000 + static_cast<uint32_t>(i), s.steps));
  CompileOptions small;
  small.precompute_budget = 0;
  small.max_cache_bytes = 8 << 10;
  auto shared = CompiledGrammar::from_gbnf(kGrammar, vocabulary, small);
  ASSERT_TRUE(shared.ok()) << shared.status().to_string();
  Problems problems;
  std::vector<std::thread> threads;
  for (int t = 0; t < s.threads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(500 + t));
      for (int round = 0; round < s.rounds; ++round) {
        replay(*shared, scripts[static_cast<size_t>(t)], rng, problems);
        if (shared->cache_bytes() > small.max_cache_bytes) problems.add("cache_bytes");
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(problems.count(), 0) << problems.first();
  EXPECT_LE(shared->cache_bytes(), small.max_cache_bytes);
  EXPECT_GT(shared->cache_bytes(), 0u);
}

TEST(ThreadSafety, RulesClassedOnFirstUseAcrossThreads) {
  // A bounded string of thousands of automaton states, whose walk classes
  // are computed by the first mask that needs them: every thread enters it
  // at its second step, on one shared compile, so they race to compute
  // them (under TSan, the check that the classes are published safely).
  const char* const grammar = R"gbnf(
root  ::= "<" ( [^<>\\\x00-\x1F] | "\\" [<>n] ){0,600} ">" ( "\n" [a-f0-9]+ )?
)gbnf";
  const Scale s = scale();
  const Vocabulary vocabulary = make_vocabulary();
  auto reference = CompiledGrammar::from_gbnf(grammar, vocabulary);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  std::vector<Script> scripts;
  for (int i = 0; i < s.threads; ++i)
    scripts.push_back(record_script(*reference, 2000 + static_cast<uint32_t>(i), s.steps));
  CompileOptions lazy;
  lazy.precompute_budget = 0;
  for (int round = 0; round < s.rounds; ++round) {
    auto shared = CompiledGrammar::from_gbnf(grammar, vocabulary, lazy);
    ASSERT_TRUE(shared.ok()) << shared.status().to_string();
    Problems problems;
    std::vector<std::thread> threads;
    for (int t = 0; t < s.threads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(static_cast<uint32_t>(300 + t + round));
        replay(*shared, scripts[static_cast<size_t>(t)], rng, problems);
      });
    }
    for (std::thread& thread : threads) thread.join();
    ASSERT_EQ(problems.count(), 0) << problems.first();
  }
}

TEST(ThreadSafety, ConcurrentCompilationFromOneVocabulary) {
  // Compiling is read-only on the vocabulary: several threads compile
  // different grammars against it at once and get the same masks as a
  // grammar compiled alone.
  const Scale s = scale();
  const Vocabulary vocabulary = make_vocabulary();
  // (The last two: the vocabulary's shared slice less '>' for text that
  // excludes a tag, built by whichever thread asks first; token items.)
  const char* const grammars[] = {kGrammar,
                                  "root ::= [a-f]+ \"\\n\"",
                                  "root ::= (\"true\" | \"false\") (\",\" ws)?\nws ::= \" \"?",
                                  "root ::= \"日本\"* \"é\" [0-9]{1,3}",
                                  "root ::= TextExcluding(\"</t>\") \"</t>\"",
                                  "root ::= (!<[5]>)* <[5]>"};
  std::vector<std::vector<uint32_t>> expected;
  for (const char* gbnf : grammars) {
    auto compiled = CompiledGrammar::from_gbnf(gbnf, vocabulary);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    Matcher m(*compiled);
    expected.emplace_back(compiled->mask_words());
    ASSERT_TRUE(m.fill_mask(expected.back().data(), expected.back().size()).ok());
  }
  Problems problems;
  std::vector<std::thread> threads;
  for (int t = 0; t < s.threads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2 * s.rounds; ++round) {
        const size_t g = static_cast<size_t>(t + round) % std::size(grammars);
        auto compiled = CompiledGrammar::from_gbnf(grammars[g], vocabulary);
        if (!compiled.ok()) {
          problems.add("compile failed");
          continue;
        }
        Matcher m(*compiled);
        std::vector<uint32_t> mask(compiled->mask_words());
        if (!m.fill_mask(mask.data(), mask.size()).ok() || mask != expected[g]) {
          problems.add("mask of grammar " + std::to_string(g) + " differs");
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(problems.count(), 0) << problems.first();
}

// Structural tags convert and compile on many threads at once (each
// conversion imports schemas and resolves token names on its own), and the
// C API's error message is per thread.
TEST(ThreadSafety, ConcurrentStructuralTagsAndCApiErrors) {
  const Scale s = scale();
  const Vocabulary vocabulary = make_vocabulary();
  const std::string tag =
      R"({"type":"triggered_tags","triggers":["<f"],"tags":[{"begin":"<f>","content":)"
      R"({"type":"json_schema","json_schema":{"type":"object","properties":{"a":)"
      R"({"type":"integer"}},"required":["a"]}},"end":"</f>"}]})";
  auto reference = compile_structural_tag(tag, vocabulary);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  std::vector<uint32_t> expected(reference->mask_words());
  Matcher first(*reference);
  ASSERT_TRUE(first.fill_mask(expected.data(), expected.size()).ok());
  Problems problems;
  std::vector<std::thread> threads;
  for (int t = 0; t < s.threads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < s.rounds; ++round) {
        auto compiled = compile_structural_tag(tag, vocabulary);
        std::vector<uint32_t> mask(expected.size());
        if (!compiled.ok()) {
          problems.add("structural tag failed to compile");
        } else if (Matcher m(*compiled);
                   !m.fill_mask(mask.data(), mask.size()).ok() || mask != expected) {
          problems.add("structural tag mask differs");
        }
        // A failure's message is readable on the thread that failed.
        const std::string bad = "root ::= \"" + std::to_string(t) + "\" (";
        gm_vocabulary* none = nullptr;
        const char* empty[1] = {"x"};
        const size_t length[1] = {1};
        if (gm_vocabulary_from_tokens(empty, length, nullptr, 1, nullptr, 0, &none) != GM_OK) {
          problems.add("C vocabulary failed");
          continue;
        }
        gm_grammar* grammar = nullptr;
        if (gm_grammar_from_gbnf(none, bad.data(), bad.size(), &grammar) != GM_SYNTAX ||
            std::strstr(gm_last_error(), "1:") == nullptr) {
          problems.add("C API error message missing");
        }
        gm_vocabulary_free(none);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(problems.count(), 0) << problems.first();
}

// Back-to-back batches on one pool: every item of every batch runs exactly
// once, with its own batch's task, however late a worker wakes for a batch
// that has already finished (it must not join the next one with the old
// task, nor read the batch's size while the next batch writes it).
TEST(ThreadSafety, ThreadPoolRunsEachItemOnceAcrossBackToBackBatches) {
  ThreadPool pool(4);
  const int batches = light_mode() ? 2000 : 20000;
  std::vector<std::atomic<int>> runs(8);
  int wrong = 0;
  for (int batch = 0; batch < batches; ++batch) {
    const size_t n = 1 + static_cast<size_t>(batch % 8);
    for (auto& count : runs) count.store(0);
    std::atomic<int> foreign{0};
    const int expected_batch = batch;
    pool.parallel_for(n, [&, expected_batch](size_t i) {
      if (expected_batch != batch || i >= n) foreign.fetch_add(1);
      runs[i].fetch_add(1);
    });
    for (size_t i = 0; i < runs.size(); ++i)
      if (runs[i].load() != (i < n ? 1 : 0)) ++wrong;
    if (foreign.load() != 0) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
}

// A task that calls parallel_for on its own pool gets the inner items run
// on its thread, instead of waiting forever for the batch it is part of.
TEST(ThreadSafety, ThreadPoolTaskMayCallParallelForOnItsPool) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> runs(4 * 5);
  pool.parallel_for(
      4, [&](size_t i) { pool.parallel_for(5, [&](size_t j) { runs[5 * i + j].fetch_add(1); }); });
  for (size_t k = 0; k < runs.size(); ++k) EXPECT_EQ(runs[k].load(), 1) << k;
  // The pool still runs ordinary batches afterwards.
  std::atomic<int> total{0};
  pool.parallel_for(100, [&](size_t) { total.fetch_add(1); });
  EXPECT_EQ(total.load(), 100);
}

}  // namespace
}  // namespace grammask
