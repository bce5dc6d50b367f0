#include "grammask/lazy_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "grammask/mask_words.h"

namespace grammask {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool bit(const std::vector<uint32_t>& words, uint32_t id) {
  return (words[id / 32] >> (id % 32)) & 1;
}

// Tokens for the small tests. Ids: see kIds below.
const std::vector<std::string> kTokens = {
    "a",          // 0
    "b",          // 1
    "c",          // 2
    " ",          // 3
    "<",          // 4
    "tool",       // 5
    ">",          // 6
    "<tool>",     // 7
    "<to",        // 8
    "ol>",        // 9
    "x<tool>{",   // 10
    "<tool>x",    // 11
    "{",          // 12
    "}",          // 13
    "1",          // 14
    "2",          // 15
    "ab",         // 16
    "abc",        // 17
    "bc",         // 18
    "</s>",       // 19: stop
    "<|tool|>",   // 20: control
    "<|other|>",  // 21: control
    "12}",        // 22
    "{1",         // 23
    "  {",        // 24
    "\n",         // 25
    "<tool>{1}",  // 26
    "é",          // 27
    "\xC3",       // 28
    "\xA9",       // 29
    "x",          // 30
    "oo",         // 31
    "<t",         // 32
    "l>",         // 33
};
constexpr uint32_t kStop = 19;
constexpr uint32_t kToolToken = 20;
constexpr uint32_t kOtherToken = 21;

Vocabulary small_vocab() {
  return *Vocabulary::from_token_bytes(kTokens, {kStop}, {kToolToken, kOtherToken});
}

const char* kToolGrammar = R"(root ::= "<tool>" "{" [0-9]+ "}")";

CompiledGrammar compile(const char* gbnf, const Vocabulary& vocab) {
  auto compiled = CompiledGrammar::from_gbnf(gbnf, vocab);
  EXPECT_TRUE(compiled.ok()) << compiled.status().to_string();
  return *compiled;
}

LazyMatcher make(const CompiledGrammar& grammar, const LazyTriggers& triggers) {
  auto lazy = LazyMatcher::create(grammar, triggers);
  EXPECT_TRUE(lazy.ok()) << lazy.status().to_string();
  return *lazy;
}

std::vector<uint32_t> mask_of(LazyMatcher& m, const Vocabulary& vocab) {
  std::vector<uint32_t> words(mask_words(vocab.size()));
  EXPECT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  return words;
}

// llama.cpp's lazy grammar, written the way llama.cpp writes it: std::regex
// over the bytes of the output, words escaped and joined with the anywhere
// patterns into ^[\s\S]*?(...)[\s\S]*, full patterns matched whole, trigger
// tokens first. The grammar part is a fresh Matcher fed the trigger text.
class Oracle {
 public:
  Oracle(const CompiledGrammar& grammar, const LazyTriggers& t)
      : grammar_(grammar),
        tokens_(t.tokens),
        regexes_(std::make_shared<std::vector<std::regex>>()),
        matcher_(grammar) {
    for (const std::string& p : t.full_patterns) regexes_->emplace_back(p);
    std::vector<std::string> anywhere;
    static const std::regex special(R"([.^$|()*+?\[\]{}\\])");
    for (const std::string& w : t.words) anywhere.push_back(std::regex_replace(w, special, "\\$0"));
    for (const std::string& p : t.patterns) anywhere.push_back(p);
    if (!anywhere.empty()) {
      std::string joined;
      for (size_t i = 0; i < anywhere.size(); ++i) joined += (i ? "|" : "") + anywhere[i];
      regexes_->emplace_back("^[\\s\\S]*?(" + joined + ")[\\s\\S]*");
    }
  }

  // True if `token` is taken; then the state moves past it.
  bool accept(uint32_t token) { return step(token, true); }
  bool allows(uint32_t token) const { return const_cast<Oracle*>(this)->step(token, false); }

 private:
  bool step(uint32_t token, bool commit) {
    const Vocabulary& vocab = grammar_.vocabulary();
    if (triggered_) {
      return commit ? matcher_.accept_token(token).ok() : matcher_.is_token_allowed(token);
    }
    if (terminated_) return vocab.is_stop(token);
    if (vocab.is_stop(token)) {
      if (commit) terminated_ = true;
      return true;
    }
    const std::string piece(vocab.token_bytes(token));
    if (std::find(tokens_.begin(), tokens_.end(), token) != tokens_.end()) {
      Matcher m(grammar_);
      bool ok = m.is_token_allowed(token) ? m.accept_token(token).ok() : m.accept_bytes(piece).ok();
      if (!ok) return false;
      if (commit) {
        matcher_ = m;
        triggered_ = true;
      }
      return true;
    }
    const std::string buffer = buffer_ + piece;
    for (const std::regex& re : *regexes_) {
      std::smatch match;
      if (!std::regex_match(buffer, match, re)) continue;
      size_t start = std::string::npos;
      for (size_t i = 1; i < match.size(); ++i) {
        if (match.length(i) > 0) {
          start = match.position(i);
          break;
        }
      }
      if (start == std::string::npos) start = match.position(0);
      Matcher m(grammar_);
      if (!m.accept_bytes(buffer.substr(start)).ok()) return false;
      if (commit) {
        matcher_ = m;
        triggered_ = true;
      }
      return true;
    }
    if (commit) buffer_ = buffer;
    return true;
  }

  const CompiledGrammar& grammar_;
  std::vector<uint32_t> tokens_;
  std::shared_ptr<std::vector<std::regex>> regexes_;
  Matcher matcher_;
  std::string buffer_;
  bool triggered_ = false;
  bool terminated_ = false;
};

// Checks the mask at the current state three ways: against the oracle
// replaying `history`, against is_token_allowed, and against accept_token on
// a copy (for every `copy_every`-th token).
void check_mask(LazyMatcher& m, const CompiledGrammar& grammar, const LazyTriggers& triggers,
                const std::vector<uint32_t>& history, const std::string& where,
                uint32_t copy_every = 1) {
  const Vocabulary& vocab = grammar.vocabulary();
  const std::vector<uint32_t> words = mask_of(m, vocab);
  Oracle base(grammar, triggers);
  for (uint32_t id : history) ASSERT_TRUE(base.accept(id)) << where;
  for (uint32_t id = 0; id < vocab.size(); ++id) {
    const bool expected = base.allows(id);
    bool accepted = expected;
    if (id % copy_every == 0) {
      LazyMatcher copy = m;
      accepted = copy.accept_token(id).ok();
    }
    ASSERT_EQ(bit(words, id), expected)
        << where << ": token " << id << " '" << vocab.token_bytes(id) << "'";
    ASSERT_EQ(accepted, expected) << where << ": accept_token " << id;
    ASSERT_EQ(m.is_token_allowed(id), expected) << where << ": is_token_allowed " << id;
  }
}

TEST(LazyMatcher, WordInsideOneToken) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  LazyMatcher m = make(grammar, {{"<tool>"}, {}, {}, {}});
  EXPECT_FALSE(m.is_triggered());
  EXPECT_TRUE(m.is_accepting());
  std::vector<uint32_t> words = mask_of(m, vocab);
  EXPECT_TRUE(bit(words, 0));
  EXPECT_TRUE(bit(words, kStop));
  EXPECT_TRUE(bit(words, 7));    // "<tool>": the grammar takes it
  EXPECT_FALSE(bit(words, 11));  // "<tool>x": the grammar refuses "x"
  ASSERT_TRUE(m.accept_token(0).ok());
  ASSERT_TRUE(m.accept_token(7).ok());
  EXPECT_TRUE(m.is_triggered());
  EXPECT_FALSE(m.is_accepting());
  EXPECT_EQ(m.pending_output(), "a");
  words = mask_of(m, vocab);
  EXPECT_TRUE(bit(words, 12));
  EXPECT_TRUE(bit(words, 23));
  EXPECT_FALSE(bit(words, 0));
  EXPECT_FALSE(bit(words, kStop));
  ASSERT_TRUE(m.accept_token(23).ok());
  ASSERT_TRUE(m.accept_token(22).ok());
  EXPECT_TRUE(m.is_accepting());
  words = mask_of(m, vocab);
  EXPECT_TRUE(bit(words, kStop));
  ASSERT_TRUE(m.accept_token(kStop).ok());
  EXPECT_TRUE(m.is_terminated());
  EXPECT_EQ(m.num_tokens(), 5u);
}

TEST(LazyMatcher, WordAcrossTokenBoundaries) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  const LazyTriggers triggers{{"<tool>"}, {}, {}, {}};
  LazyMatcher m = make(grammar, triggers);
  ASSERT_TRUE(m.accept_token(0).ok());
  ASSERT_TRUE(m.accept_token(8).ok());  // "<to"
  EXPECT_FALSE(m.is_triggered());
  check_mask(m, grammar, triggers, {0, 8}, "after a<to");
  ASSERT_TRUE(m.accept_token(9).ok());  // "ol>": the grammar reads "<tool>"
  EXPECT_TRUE(m.is_triggered());
  EXPECT_EQ(m.pending_output(), "a<to");
  // Three tokens: "<", "t", "ool>"-like spelling through "<t", "oo", "l>".
  LazyMatcher n = make(grammar, triggers);
  ASSERT_TRUE(n.accept_token(32).ok());
  ASSERT_TRUE(n.accept_token(31).ok());
  EXPECT_FALSE(n.is_triggered());
  ASSERT_TRUE(n.accept_token(33).ok());
  EXPECT_TRUE(n.is_triggered());
  ASSERT_TRUE(n.accept_token(23).ok());
  ASSERT_TRUE(n.accept_token(13).ok());
  EXPECT_TRUE(n.is_accepting());
}

TEST(LazyMatcher, WordThatIsAPrefixOfAnother) {
  const Vocabulary vocab = small_vocab();
  // "ab" fires before "abc" can complete: the grammar reads from "ab".
  const CompiledGrammar grammar = compile(R"(root ::= "ab" "c"? [12]*)", vocab);
  const LazyTriggers triggers{{"abc", "ab"}, {}, {}, {}};
  LazyMatcher m = make(grammar, triggers);
  ASSERT_TRUE(m.accept_token(0).ok());
  ASSERT_TRUE(m.accept_token(1).ok());
  EXPECT_TRUE(m.is_triggered());
  EXPECT_TRUE(m.is_accepting());
  ASSERT_TRUE(m.accept_token(2).ok());
  EXPECT_FALSE(m.accept_token(2).ok());
  // Of two words found by one token the one that starts first fires (as in
  // llama.cpp's joined pattern), whatever the list order: "abc" from 0.
  const CompiledGrammar abc = compile(R"(root ::= "abc")", vocab);
  const LazyTriggers later_first{{"bc", "abc"}, {}, {}, {}};
  LazyMatcher n = make(abc, later_first);
  EXPECT_TRUE(n.is_token_allowed(17));
  ASSERT_TRUE(n.accept_token(17).ok());
  EXPECT_TRUE(n.is_accepting());
  check_mask(n, abc, later_first, {17}, "after abc");
}

TEST(LazyMatcher, WordInsideALongerToken) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  const LazyTriggers triggers{{"<tool>"}, {}, {}, {}};
  LazyMatcher m = make(grammar, triggers);
  std::vector<uint32_t> words = mask_of(m, vocab);
  EXPECT_TRUE(bit(words, 10));   // "x<tool>{": "<tool>{" is a prefix of the grammar
  EXPECT_FALSE(bit(words, 11));  // "<tool>x": refused
  EXPECT_TRUE(bit(words, 26));   // "<tool>{1}": complete
  const Status refused = m.accept_token(11);
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(m.is_triggered());
  EXPECT_EQ(m.num_tokens(), 0u);
  ASSERT_TRUE(m.accept_token(10).ok());
  EXPECT_TRUE(m.is_triggered());
  EXPECT_EQ(m.pending_output(), "");
  ASSERT_TRUE(m.accept_token(22).ok());
  EXPECT_TRUE(m.is_accepting());
  check_mask(m, grammar, triggers, {10, 22}, "after x<tool>{12}");
}

TEST(LazyMatcher, TriggerTokens) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(R"(root ::= "<|tool|>" "{" [0-9]+ "}")", vocab);
  const LazyTriggers triggers{{}, {}, {}, {kToolToken, kOtherToken}};
  LazyMatcher m = make(grammar, triggers);
  std::vector<uint32_t> words = mask_of(m, vocab);
  EXPECT_TRUE(bit(words, kToolToken));
  EXPECT_FALSE(bit(words, kOtherToken));  // the grammar refuses its text
  EXPECT_TRUE(bit(words, 7));             // no word: "<tool>" is plain text
  check_mask(m, grammar, triggers, {}, "start");
  ASSERT_TRUE(m.accept_token(7).ok());
  EXPECT_FALSE(m.is_triggered());
  ASSERT_TRUE(m.accept_token(kToolToken).ok());
  EXPECT_TRUE(m.is_triggered());
  EXPECT_EQ(m.pending_output(), "<tool>");
  check_mask(m, grammar, triggers, {7, kToolToken}, "after the trigger token");
  EXPECT_EQ(m.accept_token(kOtherToken).code(), ErrorCode::kInvalidArgument);
  // A token item in the grammar reads the trigger token too.
  const CompiledGrammar items = compile(R"(root ::= <|tool|> "{" [0-9]+ "}")", vocab);
  LazyMatcher n = make(items, {{}, {}, {}, {kToolToken}});
  EXPECT_TRUE(n.is_token_allowed(kToolToken));
  ASSERT_TRUE(n.accept_token(kToolToken).ok());
  EXPECT_TRUE(n.is_token_allowed(12));
}

TEST(LazyMatcher, PatternAnywhere) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  const LazyTriggers triggers{{}, {"<t[a-z]+>"}, {}, {}};
  LazyMatcher m = make(grammar, triggers);
  check_mask(m, grammar, triggers, {}, "start");
  ASSERT_TRUE(m.accept_token(3).ok());
  ASSERT_TRUE(m.accept_token(4).ok());
  ASSERT_TRUE(m.accept_token(5).ok());
  EXPECT_FALSE(m.is_triggered());
  check_mask(m, grammar, triggers, {3, 4, 5}, "after ' <tool'");
  ASSERT_TRUE(m.accept_token(6).ok());
  EXPECT_TRUE(m.is_triggered());
  EXPECT_TRUE(m.is_token_allowed(12));
  // After "<t", "ol>" and "l>" complete a match ("<tol>", "<tl>") that the
  // grammar refuses: masked; "oo" matches nothing yet.
  const LazyTriggers two{{"b"}, {"<t[a-z]+>"}, {}, {}};
  LazyMatcher n = make(grammar, two);
  ASSERT_TRUE(n.accept_token(32).ok());
  const std::vector<uint32_t> words = mask_of(n, vocab);
  EXPECT_FALSE(bit(words, 9));
  EXPECT_FALSE(bit(words, 33));
  EXPECT_TRUE(bit(words, 31));
  EXPECT_FALSE(bit(words, 1));  // "b" fires the word; "b" alone is refused
  check_mask(n, grammar, two, {32}, "after <t");
  // A match that began three tokens back: "<t" "oo" then "l>" gives the
  // grammar "<tool>"; one more "oo" makes it "<tooool>", refused.
  LazyMatcher p = make(grammar, triggers);
  ASSERT_TRUE(p.accept_token(32).ok());
  ASSERT_TRUE(p.accept_token(31).ok());
  EXPECT_TRUE(p.is_token_allowed(33));
  check_mask(p, grammar, triggers, {32, 31}, "after <too");
  ASSERT_TRUE(p.accept_token(31).ok());
  EXPECT_FALSE(bit(mask_of(p, vocab), 33));
  check_mask(p, grammar, triggers, {32, 31, 31}, "after <toooo");
  ASSERT_TRUE(p.rollback(1).ok());
  ASSERT_TRUE(p.accept_token(33).ok());
  EXPECT_TRUE(p.is_triggered());
}

TEST(LazyMatcher, FullPatternsWithACaptureGroup) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(R"(root ::= "{" [0-9]+ "}")", vocab);
  // Fires only when the whole output is blanks then "{"; the grammar reads
  // from the group.
  const LazyTriggers triggers{{}, {}, {"\\s*(\\{[\\s\\S]*)"}, {}};
  LazyMatcher m = make(grammar, triggers);
  check_mask(m, grammar, triggers, {}, "start");
  ASSERT_TRUE(m.accept_token(3).ok());
  ASSERT_TRUE(m.accept_token(24).ok());  // "  {"
  EXPECT_TRUE(m.is_triggered());
  EXPECT_EQ(m.pending_output(), " ");
  check_mask(m, grammar, triggers, {3, 24}, "after '   {'");
  // Text before the braces: never fires.
  LazyMatcher n = make(grammar, triggers);
  ASSERT_TRUE(n.accept_token(0).ok());
  ASSERT_TRUE(n.accept_token(12).ok());
  EXPECT_FALSE(n.is_triggered());
  check_mask(n, grammar, triggers, {0, 12}, "after a{");
  // A lazy prefix: the group starts at the first <tool>.
  const CompiledGrammar tool = compile(kToolGrammar, vocab);
  const LazyTriggers lazy_prefix{{}, {}, {"^[\\s\\S]*?(<tool>)[\\s\\S]*$"}, {}};
  LazyMatcher t = make(tool, lazy_prefix);
  ASSERT_TRUE(t.accept_token(0).ok());
  ASSERT_TRUE(t.accept_token(8).ok());
  check_mask(t, tool, lazy_prefix, {0, 8}, "after a<to");
  ASSERT_TRUE(t.accept_token(9).ok());
  EXPECT_TRUE(t.is_triggered());
  check_mask(t, tool, lazy_prefix, {0, 8, 9}, "after a<tool>");
}

TEST(LazyMatcher, StopTokensBeforeTheTrigger) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  LazyMatcher m = make(grammar, {{"<tool>"}, {}, {}, {}});
  ASSERT_TRUE(m.accept_token(0).ok());
  EXPECT_TRUE(m.is_token_allowed(kStop));
  ASSERT_TRUE(m.accept_token(kStop).ok());
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.is_triggered());
  const std::vector<uint32_t> words = mask_of(m, vocab);
  for (uint32_t id = 0; id < vocab.size(); ++id) EXPECT_EQ(bit(words, id), id == kStop) << id;
  EXPECT_EQ(m.accept_token(7).code(), ErrorCode::kInvalidState);
  ASSERT_TRUE(m.accept_token(kStop).ok());
  EXPECT_EQ(m.num_tokens(), 3u);
  ASSERT_TRUE(m.rollback(2).ok());
  EXPECT_FALSE(m.is_terminated());
  ASSERT_TRUE(m.accept_token(7).ok());
  EXPECT_TRUE(m.is_triggered());
}

TEST(LazyMatcher, RollbackAcrossTheTrigger) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  const LazyTriggers triggers{{"<tool>"}, {}, {}, {}};
  LazyMatcher m = make(grammar, triggers);
  for (uint32_t id : {0u, 8u, 9u, 12u, 14u}) ASSERT_TRUE(m.accept_token(id).ok()) << id;
  EXPECT_TRUE(m.is_triggered());
  EXPECT_EQ(m.num_tokens(), 5u);
  EXPECT_EQ(m.rollback(6).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(m.num_tokens(), 5u);
  ASSERT_TRUE(m.rollback(1).ok());
  EXPECT_TRUE(m.is_triggered());
  check_mask(m, grammar, triggers, {0, 8, 9, 12}, "rolled back inside the grammar");
  ASSERT_TRUE(m.rollback(2).ok());
  EXPECT_FALSE(m.is_triggered());
  EXPECT_EQ(m.num_tokens(), 2u);
  EXPECT_EQ(m.pending_output(), "a<to");
  check_mask(m, grammar, triggers, {0, 8}, "rolled back across the trigger");
  ASSERT_TRUE(m.accept_token(9).ok());
  EXPECT_TRUE(m.is_triggered());
  ASSERT_TRUE(m.rollback(3).ok());
  EXPECT_EQ(m.pending_output(), "");
  check_mask(m, grammar, triggers, {}, "rolled back to the start");
  ASSERT_TRUE(m.accept_token(26).ok());
  EXPECT_TRUE(m.is_accepting());
  m.reset();
  EXPECT_FALSE(m.is_triggered());
  EXPECT_EQ(m.num_tokens(), 0u);
}

// Random walks over the small vocabulary, the mask checked at every step.
TEST(LazyMatcher, MasksMatchBruteForceOnRandomWalks) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar =
      compile(R"(root ::= ("<tool>" | "<|tool|>" | "ab") ("{" [0-9]+ "}" | "c")+)", vocab);
  const std::vector<LazyTriggers> configs = {
      {{"<tool>"}, {}, {}, {}},
      {{"<tool>", "ab", "b"}, {}, {}, {kToolToken}},
      {{}, {"<t(o|x)+l>", "a[bc]"}, {}, {}},
      {{"<tool>"}, {"c+b"}, {"[ \\n]*(<\\|tool\\|>)[\\s\\S]*"}, {kOtherToken}},
      {{}, {}, {"[\\s\\S]*?(ab)[\\s\\S]*", "\\s*(<tool>\\{)[\\s\\S]*"}, {}},
  };
  std::mt19937 rng(7);
  for (size_t c = 0; c < configs.size(); ++c) {
    for (int walk = 0; walk < 6; ++walk) {
      LazyMatcher m = make(grammar, configs[c]);
      std::vector<uint32_t> history;
      for (int step = 0; step < 8 && !m.is_terminated(); ++step) {
        const std::string where = "config " + std::to_string(c) + " walk " + std::to_string(walk) +
                                  " step " + std::to_string(step);
        check_mask(m, grammar, configs[c], history, where);
        if (HasFatalFailure()) return;
        const std::vector<uint32_t> words = mask_of(m, vocab);
        std::vector<uint32_t> allowed;
        for (uint32_t id = 0; id < vocab.size(); ++id) {
          if (bit(words, id) && (id != kStop || step > 5)) allowed.push_back(id);
        }
        if (allowed.empty()) break;
        const uint32_t pick = allowed[rng() % allowed.size()];
        ASSERT_TRUE(m.accept_token(pick).ok()) << where;
        history.push_back(pick);
      }
    }
  }
}

TEST(LazyMatcher, NoTriggersNeverFires) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  LazyMatcher m = make(grammar, {});
  for (uint32_t id : {7u, 26u, 10u, kToolToken}) ASSERT_TRUE(m.accept_token(id).ok());
  EXPECT_FALSE(m.is_triggered());
  const std::vector<uint32_t> words = mask_of(m, vocab);
  for (uint32_t id = 0; id < vocab.size(); ++id) EXPECT_TRUE(bit(words, id)) << id;
}

TEST(LazyMatcher, RefusesTriggersItCannotEnforce) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  auto code = [&](const LazyTriggers& t) {
    return LazyMatcher::create(grammar, t).status().code();
  };
  EXPECT_EQ(code({{""}, {}, {}, {}}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code({{"a", ""}, {}, {}, {}}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code({{}, {}, {}, {1000}}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code({{}, {}, {}, {kStop}}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code({{}, {"a(?=b)"}, {}, {}}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({{}, {"(a)\\1"}, {}, {}}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({{}, {"\\bab"}, {}, {}}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({{}, {"^ab"}, {}, {}}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({{}, {"a*"}, {}, {}}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({{}, {"(ab"}, {}, {}}), ErrorCode::kSyntax);
  EXPECT_EQ(code({{}, {}, {"[\\s\\S]*"}, {}}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({{}, {}, {"a((b)c)"}, {}}), ErrorCode::kOk);
  // The shape of llama.cpp's Hermes-style full pattern.
  EXPECT_EQ(code({{},
                  {},
                  {"(?:<think>[\\s\\S]*?</think>\\s*)?\\s*((?:<tool_call>|<function))[\\s\\S]*"},
                  {}}),
            ErrorCode::kOk);
  EXPECT_EQ(code({{}, {}, {"(?:a(b))c"}, {}}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({{}, {}, {"a(b)*"}, {}}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({{}, {}, {"a(b?)c"}, {}}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({{}, {}, {"(a)|(b)"}, {}}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({{}, {}, {"a$b"}, {}}), ErrorCode::kUnsupported);
  // Too much word text, or a word table too large (many distinct bytes).
  EXPECT_EQ(code({{std::string((1 << 20) + 1, 'a')}, {}, {}, {}}), ErrorCode::kLimitExceeded);
  std::string wide;
  for (int i = 0; i < 50000; ++i) wide += static_cast<char>(1 + i % 250);
  EXPECT_EQ(code({{wide}, {}, {}, {}}), ErrorCode::kLimitExceeded);
  std::vector<std::string> many_full(33, "ab");
  EXPECT_EQ(code({{}, {}, many_full, {}}), ErrorCode::kUnsupported);
  const Status empty_word = LazyMatcher::create(grammar, {{"a", ""}, {}, {}, {}}).status();
  EXPECT_NE(empty_word.message().find("trigger word 1"), std::string::npos) << empty_word.message();
}

TEST(LazyMatcher, AThousandTriggerWords) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  LazyTriggers triggers;
  for (int i = 0; i < 1000; ++i) triggers.words.push_back("w" + std::to_string(i) + "<");
  triggers.words.push_back("<tool>");
  LazyMatcher m = make(grammar, triggers);
  check_mask(m, grammar, triggers, {}, "start");
  ASSERT_TRUE(m.accept_token(8).ok());
  ASSERT_TRUE(m.accept_token(9).ok());
  EXPECT_TRUE(m.is_triggered());
}

TEST(LazyMatcher, NonAsciiOutputAndPatterns) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(R"(root ::= "é" [a-c]+)", vocab);
  // "é" split over two byte tokens fires the pattern once complete.
  const LazyTriggers triggers{{}, {"[é]"}, {}, {}};
  LazyMatcher m = make(grammar, triggers);
  ASSERT_TRUE(m.accept_token(28).ok());
  EXPECT_FALSE(m.is_triggered());
  ASSERT_TRUE(m.accept_token(29).ok());
  EXPECT_TRUE(m.is_triggered());
  ASSERT_TRUE(m.accept_token(0).ok());
  EXPECT_TRUE(m.is_accepting());
}

TEST(LazyMatcher, CopiesShareTablesAcrossThreads) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  const LazyMatcher proto = make(grammar, {{"<tool>", "ab"}, {"c+b"}, {}, {kToolToken}});
  const std::vector<std::vector<uint32_t>> walks = {
      {0, 1, 2, 8, 9, 12, 14, 13}, {2, 2, 1, 7, 23, 22}, {32, 31, 33, 22}, {3, 24, 10, 14, 13}};
  // Reference masks, one thread.
  std::vector<std::vector<std::vector<uint32_t>>> expected(walks.size());
  for (size_t w = 0; w < walks.size(); ++w) {
    LazyMatcher m = proto;
    for (uint32_t id : walks[w]) {
      expected[w].push_back(mask_of(m, vocab));
      if (!m.accept_token(id).ok()) break;
    }
  }
  LazyMatcher fresh = make(grammar, {{"<tool>", "ab"}, {"c+b"}, {}, {kToolToken}});
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        const size_t w = (t + round) % walks.size();
        LazyMatcher m = fresh;  // copies share one cache, filled concurrently
        for (size_t k = 0; k < expected[w].size(); ++k) {
          std::vector<uint32_t> words(mask_words(vocab.size()));
          if (!m.fill_mask(words.data(), words.size()).ok() || words != expected[w][k]) {
            ++failures[t];
          }
          if (!m.accept_token(walks[w][k]).ok()) break;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(LazyMatcher, MovedFromFailsCleanly) {
  const Vocabulary vocab = small_vocab();
  const CompiledGrammar grammar = compile(kToolGrammar, vocab);
  LazyMatcher m = make(grammar, {{"<tool>"}, {}, {}, {}});
  LazyMatcher other = std::move(m);
  std::vector<uint32_t> words(mask_words(vocab.size()));
  EXPECT_EQ(m.fill_mask(words.data(), words.size()).code(), ErrorCode::kInvalidState);  // NOLINT
  EXPECT_EQ(m.accept_token(0).code(), ErrorCode::kInvalidState);
  EXPECT_FALSE(m.is_token_allowed(0));
  EXPECT_EQ(m.num_tokens(), 0u);
  EXPECT_EQ(other.fill_mask(words.data(), 0).code(), ErrorCode::kInvalidArgument);
  m = other;
  EXPECT_TRUE(m.accept_token(7).ok());
}

// A real vocabulary: masks against the oracle before and after a trigger.
TEST(LazyMatcher, SharedVocabularyMatchesTheOracle) {
  const std::string shared = GRAMMASK_SHARED_DIR;
  if (shared.empty() || read(shared + "/bench/README.md").empty()) GTEST_SKIP() << "no ../shared";
  auto vocab = Vocabulary::from_gguf_file(shared + "/bench/vocab/gpt2.gguf");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  const CompiledGrammar grammar = compile(
      R"(root ::= "<tool_call>" ws "{" ws "\"name\"" ws ":" ws "\"" [a-z_]+ "\"" ws "}" ws "</tool_call>"
ws ::= [ \n]*)",
      *vocab);
  const std::vector<LazyTriggers> configs = {
      {{"<tool_call>"}, {}, {}, {}},
      {{}, {"<tool_[a-z]+>"}, {"\\s*(<tool_call>)[\\s\\S]*"}, {}},
  };
  const std::string text = "Ok <tool_call>{\"name\": \"get_x\"}";
  for (const LazyTriggers& triggers : configs) {
    LazyMatcher m = make(grammar, triggers);
    std::vector<uint32_t> history;
    // Greedy tokenization of `text` by the longest token that the mask allows.
    size_t at = 0;
    int steps = 0;
    while (at < text.size() && steps < 12) {
      check_mask(m, grammar, triggers, history, "at byte " + std::to_string(at), 64);
      if (HasFatalFailure()) return;
      ++steps;
      uint32_t best = 0;
      size_t best_len = 0;
      for (uint32_t id = 0; id < vocab->size(); ++id) {
        const std::string_view b = vocab->token_bytes(id);
        if (b.size() > best_len && !vocab->is_special(id) && text.compare(at, b.size(), b) == 0 &&
            m.is_token_allowed(id)) {
          best = id;
          best_len = b.size();
        }
      }
      ASSERT_GT(best_len, 0u);
      ASSERT_TRUE(m.accept_token(best).ok());
      history.push_back(best);
      at += best_len;
    }
    EXPECT_TRUE(m.is_triggered());
  }
}

}  // namespace
}  // namespace grammask
