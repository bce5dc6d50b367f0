#include "grammask/matcher.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "automata/lowering.h"
#include "counted_chain.h"
#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "grammask/json_schema.h"
#include "mask/state_analysis.h"
#include "mask/text_closure.h"
#include "mask_oracle.h"
#include "vocab/vocabulary_access.h"

namespace grammask {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using testing::oracle_mask;

std::vector<uint32_t> allowed_ids(const std::vector<uint32_t>& words, size_t n) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < n; ++i)
    if (test_bit(words.data(), i)) ids.push_back(i);
  return ids;
}

// Random walk through the grammar: at each step compare the mask with the
// oracle, then accept a random allowed token. Returns the steps compared.
int random_walk_compare(const Grammar& grammar, const CompiledGrammar& compiled,
                        const Vocabulary& vocab, uint32_t seed, int steps, int compare_every) {
  Matcher m(compiled);
  std::mt19937 rng(seed);
  std::string text;
  std::vector<uint32_t> words(compiled.mask_words() + 1, 0xFFFFFFFF);
  int compared = 0;
  for (int step = 0; step < steps && !m.is_terminated(); ++step) {
    EXPECT_TRUE(m.fill_mask(words.data(), words.size()).ok());
    EXPECT_EQ(words.back(), 0u) << "words past the vocabulary must be zero";
    if (step % compare_every == 0) {
      auto expected = oracle_mask(grammar, vocab, text, words.size());
      if (expected != words) {
        auto got = allowed_ids(words, vocab.size());
        auto want = allowed_ids(expected, vocab.size());
        std::string diff;
        for (uint32_t id = 0, shown = 0; id < vocab.size() && shown < 8; ++id) {
          if (test_bit(words.data(), id) == test_bit(expected.data(), id)) continue;
          diff += (test_bit(words.data(), id) ? " +'" : " -'") +
                  std::string(vocab.token_bytes(id)) + "'";
          ++shown;
        }
        ADD_FAILURE() << "mask differs after '" << text << "': " << got.size() << " allowed vs "
                      << want.size()
                      << " expected; first differences (+ extra, - missing):" << diff;
        return compared;
      }
      ++compared;
    }
    auto ids = allowed_ids(words, vocab.size());
    if (ids.empty()) break;
    // Prefer non-stop tokens so walks go somewhere.
    uint32_t pick = ids[rng() % ids.size()];
    for (int tries = 0; tries < 4 && vocab.is_stop(pick); ++tries) pick = ids[rng() % ids.size()];
    EXPECT_TRUE(m.is_token_allowed(pick));
    EXPECT_TRUE(m.accept_token(pick).ok());
    if (!vocab.is_stop(pick)) text += std::string(vocab.token_bytes(pick));
  }
  return compared;
}

Vocabulary small_vocab() {
  std::vector<std::string> tokens = {
      "a", "b", "ab", "abc", "c", " ", "\n", "\"", "{", "}", "[", "]", ",", ":", "1", "12", "-",
      "é", "\xC3", "\xA9", "日本", "\xE6", "\x97\xA5", "true", "tr", "ue", "null", "x", "xy", "<s>",
      "</s>", "\"a\"", "{\"", "\":", ", ", "0", "00", "1.5", "e", "E+", "\\", "\\n", "🎉",
      "\xF0\x9F", "\x8E\x89", "b]", "c]]", "ab\n", "\"}",
      // Within the text slice's short tier (16 bytes), and longer.
      "abcdefghij", "abcabcabcabcabcabcab", "                    \"",
      // Runs of whitespace before and after brackets.
      "  ", "   ", "  [", " x", "\n  ", " ]", "] ", "[ ", "  b", "  y"};
  return *Vocabulary::from_token_bytes(tokens, {30}, {29});
}

// Masks do not depend on how much was precomputed at compile time: none,
// part (the budget runs out mid-grammar) or all.
class MasksMatchOracle : public ::testing::TestWithParam<double> {};

TEST_P(MasksMatchOracle, OnSmallVocabulary) {
  const char* grammars[] = {
      R"gm(root ::= ("a" | "b")+ "c")gm",
      R"gm(root ::= "{" ws ( str ws ":" ws val ( "," ws str ws ":" ws val )* )? "}"
str ::= "\"" [^"\\]* "\""
val ::= str | [0-9]+ | "true" | "null" | "[" ws ( val ("," ws val)* )? "]"
ws ::= [ \n]*)gm",
      R"gm(root ::= [^\x00]* "\n\n")gm",
      R"gm(root ::= ("日本" | "é" | "🎉" | "x")+)gm",
      R"gm(root ::= e
e ::= e "-" t | t
t ::= "1" | "12" | "(" e ")")gm",
      // The root may end inside a DFA stretch and go on (its final states
      // count as pure), unless something calls the root.
      R"gm(root ::= [a-c]+ ("\n" [a-c]+)*)gm",
      R"gm(root ::= "a" root | "b" [bc]* | "[" root "]")gm",
      // Equal string bodies in different rules share one walk class.
      R"gm(root ::= "{" k ":" v "," k2 ":" v "}"
k ::= "\"" [^"\\]* "\""
k2 ::= "\"" [^"\\]* "\""
v ::= "\"" [^"\\]{0,3} "\"" | [0-9]+)gm",
      // Plain-text states walk only the tokens outside the text slice;
      // a body that refuses one plain character ('x') walks them all.
      R"gm(root ::= "\"" [^"\\\x7F\x00-\x1F]* "\"" | "[" [^"\\x]* "]")gm",
      // After "a" and after "b": one walk class (one byte of pure stretch
      // before a rule call), but only the first reads all plain text (y
      // does, z does not). Their walks must not be shared.
      R"gm(root ::= "a" [^"\\\n] y "\n" | "b" [^"\\\n] z "\n"
y ::= [^"\\\n]* | "#" y
z ::= "\"" | "#" z)gm",
      // A counted string body whose characters are rule calls: the slice
      // holds until fewer characters are left than the longest token.
      R"gm(root ::= "\"" c c? c? c? c? c? c? c? c? c? "\""
c ::= [^"\\] | "\\" "n" | "\x01" c)gm",
      // Strings of at most 24 characters, unrolled and as rule calls: near
      // the end only the short tier of the slice holds, then none.
      R"gm(root ::= "\"" [^"\\]{0,24} "\"" | "[" c{0,24} "]"
c ::= [^"\\\]] | "\x01" c)gm",
      // A plain-text state inside an impure set (a recursive rule) and a
      // key that may be anything but "ab" (the JSON Schema key shape).
      R"gm(root ::= "{" k ":" root "}" | "1"
k ::= "\"" ([a] ([b] [^"\\]+ | [^b"\\] [^"\\]*)? | [^a"\\] [^"\\]*)? "\"")gm",
      // Keys whose cycles stay rules called last (what the lowering makes
      // of a large key automaton): ka reads all text through its tail
      // calls; kb does not (after "b" only "a" goes on), nor does kc,
      // whose call is not last.
      R"gm(root ::= "{\"" ka ":1}" | "[\"" kb ":1]" | "<" kc ">"
ka ::= [^"\\b] ka | "b" ([^"\\] ka | "\"") | "\""
kb ::= [^"\\b] kb | "b" ("a" kb | "\"") | "\""
kc ::= [^"\\<>] kc "." | "\"")gm",
      // Split walks: positions that differ only past the short tier's 16
      // bytes share the walk of the short tokens and walk the long ones
      // (20 and 21 bytes here) themselves. A narrow character set of at
      // most 40 characters (pure states), and between 18 and 40 characters
      // as rule calls (local walks).
      R"gm(root ::= "\"" [abc ]{0,40} "\"" | "[" c{18,40} "]"
c ::= [^"\\\]] | "\x01" c)gm",
      // After "[a", two pure items of two rules: a token is allowed when
      // either reads it, and past where one ends its rule (the "]" of
      // "b]", "c]]") the engine decides, from the whole set.
      R"gm(root ::= "[" (x | y) "]"+ | "{" (x | y | z) "}"
x ::= "a" "b" | "\x01" x
y ::= "a" "c" | "ab" "c" | "\x01" y
z ::= "a" [bc]+ | "\x01" z)gm",
      // The last characters of bounded strings: plain tokens of at most N
      // characters are allowed at once and only the others walked (é, 日本
      // and 🎉 count one character each). Plain text that goes on past
      // the bound ("l": "null" after "["), or a rule after it, makes no
      // such tier.
      R"gm(root ::= "\"" [^"\\]{0,5} "\"" | "[" [^"\\]{0,2} "l"* "\"" | "{" [^"\\]{0,3} t "\""
t ::= "é" | "")gm",
      // Keys split between two called rules (any key but one starting
      // "x-", and those): only their union reads all plain text.
      R"gm(root ::= "{\"" ka ":1}" | "{\"" kb ":2}"
ka ::= [^"\\x] kt | "x" ([^"\\-] kt | "\"") | "\"" | "\x01" ka
kb ::= "x-" kt | "\x01" kb
kt ::= [^"\\] kt | "\"")gm",
      // Whitespace before a nested value: each space is a byte step of a
      // state that calls the value's rule, kept off the engine; the bytes
      // the callee may begin with need the engine, also where the caller
      // reads them too (v may begin " x"), and where each space calls
      // another rule (p, then q: "  b"). A caller that may end its rule
      // (the spaces before "]" in w) or calls a rule deriving nothing (o,
      // o2: "  y" reads past o2) goes through the engine.
      R"gm(root ::= "[" [ \n]{0,6} v [ ]{0,3} "]" | "{" [ ]{0,4} o [ ]{0,2} v "}" | "," w "," | u
u ::= "-" (p | " " p | "  " q) "-" | ":" (" " o "x" | "  " o2 "y") ":"
v ::= "[" [ ]{0,2} v? "]" | " x" | "1" v?
o ::= "" | "e" o
o2 ::= "" | "c" o2
p ::= "a" | "1" p
q ::= "b" | "0" q
w ::= [ ]{0,3} | [ ]{0,3} v w)gm",
      // A pattern's automaton written one rule per state, as the JSON
      // Schema converter writes intersections and oneOfs of patterns
      // (strings of a-c containing "ab"): a cycle of rules named last,
      // lowered as a loop; after "[" s0 is named where " " follows.
      R"gm(root ::= "\"" s0 | "[\"" s0 " " s0
s0 ::= "a" s1 | [bc] s0
s1 ::= "a" s1 | "b" s2 | "c" s0
s2 ::= [a-c] s2 | "\"")gm",
      // A grammar of thousands of pure states whose large rules (the
      // bounded strings) are classed on first use, each on its own, while
      // the small ones are classed at compile time.
      R"gm(root ::= "[" s "]" | "{" t "}" | "\"" ( [a-c ] | "\n" ){0,6} "\""
s ::= ( [a-z ] | "\\" [n\]] ){1,150}
t ::= ( [^{}\\] | "\\" [{}x] ){0,400} ( "ab" | "c" ))gm",
  };
  CompileOptions options;
  options.precompute_budget = GetParam();
  const Vocabulary vocab = small_vocab();
  int compared = 0;
  for (const char* g : grammars) {
    auto grammar = parse_gbnf(g);
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    auto compiled = CompiledGrammar::compile(*grammar, vocab, options);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    for (uint32_t seed = 1; seed <= 20; ++seed)
      compared += random_walk_compare(*grammar, *compiled, vocab, seed, 30, 1);
  }
  EXPECT_GT(compared, 500);
}

INSTANTIATE_TEST_SUITE_P(PrecomputeBudgets, MasksMatchOracle,
                         ::testing::Values(CompileOptions{}.precompute_budget, 0.0, 0.1, 1.0));

// A bounded string written one rule per automaton state, past the inline
// limits as a whole: lowered as plain states of the rule that names it
// (a tail group), named at the root and where something follows.
TEST(Matcher, TailGroupMasksMatchOracle) {
  const std::string text =
      "root ::= str | \"[\" str \"]\"\n" + testing::counted_chain_gbnf(200, "str");
  auto grammar = parse_gbnf(text);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  const Vocabulary vocab = small_vocab();
  auto compiled = CompiledGrammar::compile(*grammar, vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  int compared = 0;
  for (uint32_t seed = 1; seed <= 30; ++seed)
    compared += random_walk_compare(*grammar, *compiled, vocab, seed, 60, 1);
  EXPECT_GT(compared, 600);
}

// Five rules of 1,202 pure states each, in a grammar of more than
// WalkClasses::kEagerStates: each rule is classed on first use, and a set
// holding a state of several such rules is walked, one rule classed per
// mask, under a key of its states until they are all classed. Masks are
// the oracle's all along.
TEST(Matcher, MasksMatchOracleWhileLargeRulesAreClassed) {
  const char* text = R"gm(root ::= "{" (a | b | c | d | e) "}"
a ::= "k" [a-c]{0,1200} "A"
b ::= "k" [a-d]{0,1200} "B"
c ::= "k" [a-e]{0,1200} "C"
d ::= "k" [a-f]{0,1200} "D"
e ::= "k" [a-g]{0,1200} "E")gm";
  auto grammar = parse_gbnf(text);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
  ASSERT_TRUE(lowered.ok());
  const std::vector<uint8_t> pure = internal::pure_states(**lowered);
  std::vector<uint32_t> pure_in_rule((*lowered)->rules().size(), 0);
  for (size_t s = 0; s < pure.size(); ++s) pure_in_rule[(*lowered)->states()[s].rule] += pure[s];
  EXPECT_EQ(std::count_if(pure_in_rule.begin(), pure_in_rule.end(),
                          [](uint32_t n) { return n > internal::WalkClasses::kLazyRuleStates; }),
            5);
  EXPECT_GT(std::count(pure.begin(), pure.end(), 1), internal::WalkClasses::kEagerStates);

  const std::vector<std::string> tokens = {"{",  "{k", "k", "a", "ab", "abc", "b", "c",
                                           "ca", "d",  "e", "f", "g",  "gf",  "A", "B",
                                           "C",  "D",  "E", "}", "A}", "E}",  "x", "</s>"};
  const Vocabulary vocab =
      *Vocabulary::from_token_bytes(tokens, {static_cast<uint32_t>(tokens.size() - 1)});
  auto compiled = CompiledGrammar::compile(*grammar, vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  // Mostly letters, so that the sets keep states of several rules.
  int compared = 0;
  std::vector<uint32_t> words(compiled->mask_words(), 0);
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    Matcher m(*compiled);
    std::mt19937 rng(seed);
    std::string so_far;
    for (int step = 0; step < 30 && !m.is_terminated(); ++step) {
      ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
      ASSERT_EQ(words, oracle_mask(*grammar, vocab, so_far, words.size())) << so_far;
      ++compared;
      std::vector<uint32_t> allowed = allowed_ids(words, vocab.size()), letters;
      for (uint32_t id : allowed)
        if (vocab.token_bytes(id).find_first_of("ABCDE}") == std::string_view::npos)
          letters.push_back(id);
      if (allowed.empty()) break;
      const std::vector<uint32_t>& pick_from =
          !letters.empty() && rng() % 10 != 0 ? letters : allowed;
      const uint32_t next = pick_from[rng() % pick_from.size()];
      ASSERT_TRUE(m.accept_token(next).ok());
      so_far += vocab.token_bytes(next);
    }
  }
  EXPECT_GT(compared, 200);
}

// A long bounded string: the search that decides whether a position reads
// all text walks to the bound before it fails, so the searches of all the
// positions together pass what compile() spends on them, and the positions
// left undecided are walked on first use. Masks are the same either way.
TEST(Matcher, MasksMatchOracleWhenCoverSearchesRunOut) {
  const Vocabulary vocab = small_vocab();
  const char* grammars[] = {
      R"gm(root ::= "\"" [^"\\\x00-\x1F]{0,400} "\"")gm",
      R"gm(root ::= "[" "\"" [^"\\\x00-\x1F]{10,300} "\"" ("," "\"" [a-c]* "\"")* "]")gm",
  };
  // Long tokens first, so that the walk goes deep into the string, to its
  // bound, and then closes it.
  const std::vector<std::string> preferred = {"abcabcabcabcabcabcab", "abcdefghij", "[", "]", "\""};
  int compared = 0;
  for (const char* text : grammars) {
    SCOPED_TRACE(text);
    auto grammar = parse_gbnf(text);
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    auto compiled = CompiledGrammar::compile(*grammar, vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    Matcher m(*compiled);
    std::string so_far;
    std::vector<uint32_t> words(compiled->mask_words());
    for (int step = 0; step < 200 && !m.is_terminated(); ++step) {
      ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
      ASSERT_EQ(words, oracle_mask(*grammar, vocab, so_far, words.size())) << so_far.size();
      ++compared;
      std::optional<uint32_t> next;
      for (const std::string& token : preferred) {
        const std::optional<uint32_t> id = vocab.find_token(token);
        if (id && test_bit(words.data(), *id)) {
          next = id;
          break;
        }
      }
      if (!next) break;
      ASSERT_TRUE(m.accept_token(*next).ok());
      so_far += std::string(vocab.token_bytes(*next));
    }
    EXPECT_TRUE(m.is_accepting()) << so_far;
  }
  EXPECT_GT(compared, 30);
}

// Grammars with the text terminals (Regex, LazyRegex, Substring,
// TextExcluding), whose automata come from code-point DFAs.
const char* const kTextTerminalGrammars[] = {
    R"gm(root ::= "<think>" TextExcluding("</think>") "</think>" Regex("[a-z]{1,8}"))gm",
    R"gm(root ::= "<" TextExcluding("e", "E") "e" Regex("[a-z]{1,3}[0-9]"))gm",
    R"gm(root ::= Substring("The quick brown fox jumps over the lazy dog; 日本語も.") "\n")gm",
    R"gm(root ::= LazyRegex(".*e") "!" | "[" Regex(".*a") "]")gm",
    R"gm(root ::= (Regex("[0-9]+(\\.[0-9]+)?") ", ")* Substring("abc日本"))gm",
    // Free text up to a tag, then JSON-like text: the exclusion's masks take
    // the slice tokens without '>' in bulk (TextClosure::avoided_ascii).
    R"gm(root ::= "<think>\n" TextExcluding("</think>", "<|") "</think>\n\n{\"a\": " [0-9]+ "}")gm",
    R"gm(root ::= (TextExcluding("\n\n") "\n\n" | "`" TextExcluding("`") "`")+)gm",
};

// Inside text that excludes "</think>", every plain character stays in the
// exclusion's states except '>' after "</think" (it leaves for what
// follows): the slice tokens without '>' are allowed in bulk.
TEST(TextClosure, ExclusionStatesAvoidOnlyTheBytesThatLeave) {
  auto grammar = parse_gbnf(R"(root ::= "<" TextExcluding("</think>") "</think>x")");
  ASSERT_TRUE(grammar.ok());
  auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
  ASSERT_TRUE(lowered.ok());
  const internal::ByteGrammar& g = **lowered;
  const std::vector<uint8_t> pure = internal::pure_states(g);
  const internal::TextClosure closure(g, 16);
  uint32_t s = g.next(g.rules()[g.root_rule()].start, '<');
  ASSERT_NE(s, internal::kNoState);
  for (const char c : std::string("ab </thin")) {
    const auto avoid = closure.avoided_ascii(s, pure);
    ASSERT_TRUE(avoid.has_value()) << c;
    for (unsigned b = 0; b < 256; ++b)
      EXPECT_EQ(avoid->test(static_cast<uint8_t>(b)), b == '>') << b;
    s = g.next(s, static_cast<uint8_t>(c));
    ASSERT_NE(s, internal::kNoState);
  }
  // After "</think>" the text is over: no such set.
  for (const char c : std::string("k>")) s = g.next(s, static_cast<uint8_t>(c));
  ASSERT_NE(s, internal::kNoState);
  EXPECT_FALSE(closure.avoided_ascii(s, pure).has_value());
}

// Rules that name one another only last, in a cycle (a pattern's
// automaton written one rule per state), lower to one automaton: no rule
// edge is left into the cycle, so masks inside it are walks of pure
// states. A cycle through a reference that is not last (t names itself
// before "!") keeps its rule edges.
TEST(Lowering, CyclesOfRulesNamedLastBecomeLoops) {
  auto rule_edges = [](const std::string& text) {
    auto grammar = parse_gbnf(text);
    EXPECT_TRUE(grammar.ok());
    auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
    EXPECT_TRUE(lowered.ok());
    size_t edges = 0;
    for (const auto& state : (*lowered)->states())
      edges += state.rule_edges_end - state.rule_edges_begin;
    return edges;
  };
  EXPECT_EQ(rule_edges(R"(root ::= "\"" s0
s0 ::= "a" s1 | [bc] s0
s1 ::= "a" s1 | "b" s2 | "c" s0
s2 ::= [a-c] s2 | "\"")"),
            0u);
  // Named where something follows (a key before its colon), too.
  EXPECT_EQ(rule_edges(R"(root ::= "{\"" s0 ":1}"
s0 ::= "a" s1 | [bc] s0
s1 ::= "a" s1 | "b" s2 | "c" s0
s2 ::= [a-c] s2 | "\"")"),
            0u);
  EXPECT_GT(rule_edges(R"(root ::= "\"" t
t ::= "a" t "!" | "b" u
u ::= "c" t | "\"")"),
            0u);
}

TEST(Matcher, TextTerminalMasksMatchOracle) {
  const Vocabulary vocab = small_vocab();
  int compared = 0;
  for (const char* text : kTextTerminalGrammars) {
    SCOPED_TRACE(text);
    auto grammar = parse_gbnf(text);
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    auto compiled = CompiledGrammar::compile(*grammar, vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    for (uint32_t seed = 1; seed <= 20; ++seed)
      compared += random_walk_compare(*grammar, *compiled, vocab, seed, 30, 1);
  }
  EXPECT_GT(compared, 300);
}

// The mask cache keys a mask by as much of the stack as its walk read (a
// context id), so one Matcher serves a mask computed at one nesting depth
// at another. These walks go on in one Matcher (reset and rollback between
// them, so its caches outlive each walk) through grammars whose masks
// depend on how deep the stack is read: the closing tokens (")A", "}]}")
// reach one, two or three levels up, and what lies there differs between
// walks. Every mask is compared with the oracle.
TEST(Matcher, MasksKeyedByTheirContextMatchOracleAcrossDepths) {
  const std::vector<std::string> tokens = {
      "a",      "b",        "(",  ")",  "[",   "]",  "A",   "B",  ")A",  ")B", "))",
      "))A",    "))B",      ")]", "])", "]]B", "{",  "}",   ",",  " ",   "\n", "\n ",
      "\"c\":", "\"c\": [", "[]", "}]", "}]}", "},", "}\n", " }", "\n}", "]}", "}],",
      "\"k\"",  ":",        "1",  "1}", "1]",  "x",  "x,",  "xA", "xB",  ",x", "<eos>"};
  const Vocabulary vocab =
      *Vocabulary::from_token_bytes(tokens, {static_cast<uint32_t>(tokens.size() - 1)});
  const char* grammars[] = {
      // What closes the nest depends on its first byte, any depth down.
      R"gm(root ::= "a" x "A" | "b" x "B"
x ::= "(" x ")" | "[" x "]" | "")gm",
      // A recursive node with a list of children, whitespace inlined (the
      // schema-tree shape): the same positions recur at every depth.
      R"gm(root ::= node
node ::= "{" ws "\"c\":" ws "[" ws ( node ws ( "," ws node ws )* )? "]" ws "}"
ws ::= [ \n]{0,2})gm",
      // Right recursion (Leo's memoized chains): what ends the list is
      // decided at its start, read through the chain of tail calls.
      R"gm(root ::= "a" l "A" | "b" l "B" | "(" root ")"
l ::= "x" | "x," l | "(" l ")")gm",
      // Two node shapes whose lists close differently, nested in each other.
      R"gm(root ::= v
v ::= "{" ws "\"k\"" ws ":" ws (v | "1") ws "}" | "[" ws ( v ws ( "," ws v ws )* )? "]"
ws ::= " "?)gm",
  };
  int compared = 0;
  for (const char* g : grammars) {
    auto grammar = parse_gbnf(g);
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    for (double budget : {CompileOptions{}.precompute_budget, 0.0}) {
      CompileOptions options;
      options.precompute_budget = budget;
      auto compiled = CompiledGrammar::compile(*grammar, vocab, options);
      ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
      Matcher m(*compiled);
      std::mt19937 rng(7);
      std::vector<uint32_t> words(compiled->mask_words() + 1, 0xFFFFFFFF);
      for (int walk = 0; walk < 40; ++walk) {
        m.reset();
        std::vector<std::string> accepted;
        for (int step = 0; step < 40 && !m.is_terminated(); ++step) {
          ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
          std::string text;
          for (const std::string& t : accepted) text += t;
          ASSERT_EQ(words, oracle_mask(*grammar, vocab, text, words.size()))
              << g << "\nafter '" << text << "'";
          ++compared;
          auto ids = allowed_ids(words, vocab.size());
          if (ids.empty()) break;
          // Prefer opening tokens early and closing ones late, so that
          // walks go deep and then close several levels at once.
          uint32_t pick = ids[rng() % ids.size()];
          for (int tries = 0; tries < 3 && step < 25 && vocab.is_stop(pick); ++tries)
            pick = ids[rng() % ids.size()];
          ASSERT_TRUE(m.accept_token(pick).ok());
          accepted.push_back(vocab.is_stop(pick) ? "" : std::string(vocab.token_bytes(pick)));
          if (step % 9 == 8 && accepted.size() > 3) {  // back off and take another way
            ASSERT_TRUE(m.rollback(2).ok());
            accepted.resize(accepted.size() - 2);
          }
          if (step % 10 == 5) {  // go on in a fork, whose caches are copies
            Matcher fork(m);
            m = fork;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 2000);

  // The same positions reached in a fixed order, each after the other in
  // one Matcher: a mask cached at one must not be served at another whose
  // stack differs only where the first mask's walk read.
  auto grammar = parse_gbnf(grammars[2]);  // (the right recursion)
  ASSERT_TRUE(grammar.ok());
  auto compiled = CompiledGrammar::compile(*grammar, vocab);
  ASSERT_TRUE(compiled.ok());
  Matcher m(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  for (const char* text : {"ax,x,", "bx,x,", "(ax,x,", "((bx,x,", "ax,(x,x", "bx,(x,x", "ax,(x,x)",
                           "bx,(x,x)", "((ax,x,x,x,", "(bx,x,x,x,"}) {
    m.reset();
    ASSERT_TRUE(m.accept_bytes(text).ok()) << text;
    ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
    EXPECT_EQ(words, oracle_mask(*grammar, vocab, text, words.size())) << text;
  }
}

// The positions of a bounded repeat differ only to a token that begins
// with more repeated bytes than the later position has left: with tokens
// of at most three spaces, [ ]{0,8} has positions 0 to 5 alike.
TEST(CounterPositions, AlikeWhileNoTokenReachesTheBound) {
  for (const auto& [spaces, alike] :
       std::vector<std::pair<std::string, size_t>>{{"   ", 5}, {" ", 7}, {"        ", 0}}) {
    const Vocabulary vocab = *Vocabulary::from_token_bytes({"{", "}", " ", spaces, "</s>"}, {4});
    auto grammar = parse_gbnf(R"(root ::= "{" [ ]{0,8} "}")");
    ASSERT_TRUE(grammar.ok());
    auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
    ASSERT_TRUE(lowered.ok());
    const internal::ByteGrammar& g = **lowered;
    const auto pairs =
        internal::counter_positions_alike(g, internal::VocabularyAccess::trie(vocab));
    EXPECT_EQ(pairs.size(), alike) << spaces.size() << " spaces";
    // Each pair is a position and the next: the first one after "{".
    uint32_t position = g.next(g.rules()[g.root_rule()].start, '{');
    for (const auto& [a, b] : pairs) {
      EXPECT_EQ(a, position);
      EXPECT_EQ(b, g.next(a, ' '));
      position = b;
    }
  }
}

// Masks at counter positions that share their context class (indentation
// of a recursive node, the schema-tree shape) match the oracle, also near
// the bound where tokens of many spaces tell positions apart.
TEST(Matcher, MasksAtAlikeCounterPositionsMatchOracle) {
  const std::vector<std::string> tokens = {
      "{",   "}",  "[",   "]",   ",",    "\"c\":", " ",        "  ",
      "   ", "\t", " \t", "\n",  "\n  ", "\n ",    "  }",      "   ]",
      " ,",  "},", "}\n", "]\n", "[]",   "\n   {", "  \"c\":", "<eos>"};
  const Vocabulary vocab =
      *Vocabulary::from_token_bytes(tokens, {static_cast<uint32_t>(tokens.size() - 1)});
  auto grammar = parse_gbnf(R"gm(root ::= node
node ::= "{" ws "\"c\":" ws "[" ws ( node ws ( "," ws node ws )* )? "]" ws "}"
ws ::= [ \t]{0,6} | "\n" [ \t]{0,9})gm");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
  ASSERT_TRUE(lowered.ok());
  EXPECT_FALSE(internal::counter_positions_alike(**lowered, internal::VocabularyAccess::trie(vocab))
                   .empty());
  int compared = 0;
  for (double budget : {CompileOptions{}.precompute_budget, 0.0}) {
    CompileOptions options;
    options.precompute_budget = budget;
    auto compiled = CompiledGrammar::compile(*grammar, vocab, options);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    for (uint32_t seed = 0; seed < 30; ++seed) {
      Matcher m(*compiled);
      std::mt19937 rng(seed);
      std::string text;
      std::vector<uint32_t> words(compiled->mask_words());
      for (int step = 0; step < 60 && !m.is_terminated(); ++step) {
        ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
        ASSERT_EQ(words, oracle_mask(*grammar, vocab, text, words.size()))
            << "after '" << text << "'";
        ++compared;
        auto ids = allowed_ids(words, vocab.size());
        if (ids.empty()) break;
        // Whitespace runs long enough to reach the bounds, then anything.
        uint32_t pick = ids[rng() % ids.size()];
        for (int tries = 0;
             tries < 4 && vocab.token_bytes(pick).find_first_of(" \t\n") == std::string_view::npos;
             ++tries)
          pick = ids[rng() % ids.size()];
        ASSERT_TRUE(m.accept_token(pick).ok());
        if (!vocab.is_stop(pick)) text += std::string(vocab.token_bytes(pick));
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

// A mask keyed by its context reads below each item's origin only as deep
// as the walk did: after the same member at a new depth of a recursive
// document, where the stacks differ further down (the first element of an
// array below one, a later element below the other), the mask is a hit.
TEST(Matcher, MasksAreSharedAcrossDepthsWhereOnlyUnreadSetsDiffer) {
  auto grammar = json_schema_to_grammar(R"({
    "$ref": "#/$defs/N",
    "$defs": {"N": {"type": "object", "additionalProperties": false,
      "required": ["a", "m", "k"],
      "properties": {
        "a": {"type": "integer"},
        "m": {"type": "object", "additionalProperties": false, "required": ["t", "n"],
              "properties": {"t": {"const": "d"}, "n": {"type": "integer"}}},
        "k": {"type": "array", "items": {"$ref": "#/$defs/N"}}}}}})");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  std::vector<std::string> tokens;
  for (int c = 0x20; c < 0x7F; ++c) tokens.emplace_back(1, static_cast<char>(c));
  tokens.emplace_back("\n");
  // (Tokens that close several levels read deeper into the stack.)
  for (const char* closing : {"},", "}]", "}}", "},\"", "}],", "}]}", "}]},"})
    tokens.emplace_back(closing);
  tokens.emplace_back("</s>");
  const Vocabulary vocab =
      *Vocabulary::from_token_bytes(tokens, {static_cast<uint32_t>(tokens.size() - 1)});
  auto compiled = CompiledGrammar::compile(*grammar, vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  // The node at depth 1, then its second child at depth 2 (a later element)
  // holding a first child at depth 3: each stops after the same "n": 3.
  const std::string node = R"({"a":1,"m":{"t":"d","n":3)";
  const std::string depth_1 = node;
  const std::string depth_2 = node + R"(}, "k":[{"a":1,"m":{"t":"d","n":1},"k":[]},)" + node;
  const std::string depth_3 = depth_2 + R"(}, "k":[)" + node;
  Matcher m(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  size_t hits_at_end = 0;
  for (const std::string& text : {depth_1, depth_2, depth_3}) {
    m.reset();
    for (char c : text) {
      ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
      ASSERT_TRUE(m.accept_token(static_cast<uint32_t>(c == '\n' ? 95 : c - 0x20)).ok()) << text;
    }
    const size_t hits = m.mask_cache_hits();
    ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
    EXPECT_EQ(words, oracle_mask(*grammar, vocab, text, words.size())) << text;
    hits_at_end += m.mask_cache_hits() - hits;
  }
  // The first is computed; the second and third are served from it.
  EXPECT_EQ(hits_at_end, 2u);
}

// Two rules with the same string body, followed by the same text, are
// different DFA states with the same future: the second body's mask is
// served from the first one's walk.
TEST(Matcher, EqualStatesShareTheirWalk) {
  const Vocabulary vocab = small_vocab();
  auto grammar = parse_gbnf(R"gm(root ::= "x" s1 "}" ("," "x" s2 "}")*
s1 ::= "\"" [a-c]* "\""
s2 ::= "\"" [a-c]* "\"")gm");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  CompileOptions options;
  options.precompute_budget = 0;  // walks happen at fill_mask, counted
  auto compiled = CompiledGrammar::compile(*grammar, vocab, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  Matcher m(*compiled);
  std::vector<uint32_t> first(compiled->mask_words()), second(compiled->mask_words());
  ASSERT_TRUE(m.accept_bytes("x\"ab").ok());
  ASSERT_TRUE(m.fill_mask(first.data(), first.size()).ok());
  const size_t hits = m.mask_cache_hits();
  ASSERT_TRUE(m.accept_bytes("c\"},x\"ab").ok());
  ASSERT_TRUE(m.fill_mask(second.data(), second.size()).ok());
  EXPECT_EQ(m.mask_cache_hits(), hits + 1);
  EXPECT_EQ(first, second);
  EXPECT_EQ(second, oracle_mask(*grammar, vocab, "x\"abc\"},x\"ab", second.size()));

  // The walk is kept with the compiled grammar: another Matcher starts
  // with it.
  Matcher other(*compiled);
  ASSERT_TRUE(other.accept_bytes("x\"b").ok());
  std::vector<uint32_t> third(compiled->mask_words());
  ASSERT_TRUE(other.fill_mask(third.data(), third.size()).ok());
  EXPECT_EQ(other.mask_cache_hits(), 1u);
  EXPECT_EQ(third, first);
}

// The mask cache keeps a mask that allows few tokens as (index, word) pairs
// and one that allows many as words. Served from the cache, both are the
// masks computed at the first visit, and both write every word of a buffer
// wider than the vocabulary.
TEST(Matcher, CachedSparseAndDenseMasksAreTheComputedOnes) {
  std::vector<std::string> tokens;
  for (char c = 'a'; c <= 'z'; ++c)
    for (char d = 'a'; d <= 'z'; ++d) tokens.push_back({c, d});
  for (const char* t : {"[", "]", ",", "q", "z", "z]", "],", "<eos>"}) tokens.push_back(t);
  const Vocabulary vocab =
      *Vocabulary::from_token_bytes(tokens, {static_cast<uint32_t>(tokens.size() - 1)});
  // After "q" or "ab" the item may end (so the mask is the engine's, kept
  // by the mask cache): "q" is followed by few tokens, "ab" by every pair
  // of letters.
  auto grammar = parse_gbnf(R"gm(root ::= v
v ::= "[" (v ("," v)*)? "]" | "q" "z"? | "ab" [a-z]*)gm");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  auto compiled = CompiledGrammar::compile(*grammar, vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  const size_t width = compiled->mask_words() + 3;
  Matcher m(*compiled);
  auto mask_after = [&](const std::string& more, const std::string& text) {
    EXPECT_TRUE(m.accept_bytes(more).ok()) << text;
    std::vector<uint32_t> words(width, 0xFFFFFFFFu);
    EXPECT_TRUE(m.fill_mask(words.data(), words.size()).ok()) << text;
    EXPECT_EQ(words, oracle_mask(*grammar, vocab, text, width)) << text;
    return words;
  };
  auto nonzero = [](const std::vector<uint32_t>& words) {
    return static_cast<size_t>(
        std::count_if(words.begin(), words.end(), [](uint32_t w) { return w != 0; }));
  };
  const std::vector<uint32_t> sparse = mask_after("[q", "[q");
  const std::vector<uint32_t> dense = mask_after(",ab", "[q,ab");
  EXPECT_LT(8 * nonzero(sparse), width);
  EXPECT_GT(2 * nonzero(dense), width);
  m.reset();
  const size_t hits = m.mask_cache_hits();
  EXPECT_EQ(mask_after("[q", "[q"), sparse);
  EXPECT_EQ(mask_after(",ab", "[q,ab"), dense);
  EXPECT_EQ(m.mask_cache_hits(), hits + 2);
}

// The transition table's rows are shared by the states whose transitions
// are alike relative to their smallest target (the 70,000 states of a
// keyword share one). A grammar with a state whose targets lie 16 bits
// apart keeps a 32-bit table (every other grammar a 16-bit one): masks from
// both agree with the oracle, before, inside and after the long stretch.
TEST(Matcher, MasksMatchOracleWithWideTransitionTable) {
  const Vocabulary vocab = small_vocab();
  const std::string long_run(70000, 'a');
  for (const std::string& text : {std::string("ab"), long_run}) {
    // (After "]", the state goes back to the first states and on to the
    // last ones.)
    auto grammar = parse_gbnf("root ::= (\"" + text + "\" \"]\")+ (\"c\" | \"x\" [a-c]* \"]\")?");
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
    ASSERT_TRUE(lowered.ok()) << lowered.status().to_string();
    const bool long_text = text.size() > 1000;
    EXPECT_EQ((*lowered)->narrow_table() == nullptr, long_text);
    EXPECT_EQ((*lowered)->wide_table() == nullptr, !long_text);
    EXPECT_GT((*lowered)->states().size(), text.size());
    EXPECT_LT((*lowered)->num_transition_rows(), 16u);
    CompileOptions options;
    options.precompute_budget = 0;  // walks happen at fill_mask
    auto compiled = CompiledGrammar::compile(*grammar, vocab, options);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    for (const std::string prefix :
         {std::string(), std::string("a"), text.substr(0, text.size() - 1), text, text + "]",
          text + "]xab", text + "]xab]", text + "]" + text}) {
      Matcher m(*compiled);
      ASSERT_TRUE(m.accept_bytes(prefix).ok()) << prefix.size();
      std::vector<uint32_t> words(compiled->mask_words());
      ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
      EXPECT_EQ(words, oracle_mask(*grammar, vocab, prefix, words.size())) << prefix.size();
    }
  }
}

TEST(Matcher, RefusesAndKeepsState) {
  const Vocabulary vocab = small_vocab();
  auto compiled = CompiledGrammar::from_gbnf(R"gm(root ::= "ab" "c")gm", vocab);
  ASSERT_TRUE(compiled.ok());
  Matcher m(*compiled);
  EXPECT_EQ(m.accept_token(1).code(), ErrorCode::kInvalidArgument);   // "b"
  EXPECT_EQ(m.accept_token(30).code(), ErrorCode::kInvalidArgument);  // stop: incomplete
  EXPECT_EQ(m.accept_token(29).code(), ErrorCode::kInvalidArgument);  // special <s>
  EXPECT_EQ(m.accept_token(9999).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(m.num_tokens(), 0u);
  ASSERT_TRUE(m.accept_token(2).ok());  // "ab"
  EXPECT_FALSE(m.is_accepting());
  EXPECT_EQ(m.forced_bytes(), "c");
  ASSERT_TRUE(m.accept_token(4).ok());  // "c"
  EXPECT_TRUE(m.is_accepting());
  EXPECT_TRUE(m.is_token_allowed(30));
  ASSERT_TRUE(m.accept_token(30).ok());
  EXPECT_TRUE(m.is_terminated());
  EXPECT_EQ(m.accept_token(0).code(), ErrorCode::kInvalidState);
  std::vector<uint32_t> words(compiled->mask_words());
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  EXPECT_EQ(allowed_ids(words, vocab.size()), std::vector<uint32_t>{30});
  EXPECT_EQ(m.fill_mask(words.data(), words.size() - 1).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(m.rollback(4).code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(m.rollback(1).ok());
  EXPECT_FALSE(m.is_terminated());
  ASSERT_TRUE(m.rollback(2).ok());
  EXPECT_EQ(m.num_tokens(), 0u);
  EXPECT_EQ(m.forced_bytes(), "abc");
}

// fill_mask past CompileOptions::max_mask_work fails (zeroed mask), and
// accept_token past the per-byte bound fails; neither changes the state.
TEST(Matcher, WorkLimitsFailCleanly) {
  const Vocabulary vocab = small_vocab();
  auto grammar = parse_gbnf(R"gm(root ::= e
e ::= e e | "a" | "ab")gm");
  ASSERT_TRUE(grammar.ok());
  CompileOptions options;
  options.max_mask_work = 3;
  auto tight = CompiledGrammar::compile(*grammar, vocab, options);
  ASSERT_TRUE(tight.ok());
  Matcher m(*tight);
  std::vector<uint32_t> words(tight->mask_words(), 0xFFFFFFFFu);
  Status status = m.fill_mask(words.data(), words.size());
  EXPECT_EQ(status.code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(status.message().find("max_mask_work"), std::string::npos) << status.to_string();
  EXPECT_TRUE(allowed_ids(words, vocab.size()).empty());
  ASSERT_TRUE(m.accept_token(0).ok());  // "a": accepting still works
  EXPECT_EQ(m.fill_mask(words.data(), words.size()).code(), ErrorCode::kLimitExceeded);

  // The same grammar with generous bounds matches the oracle afterwards.
  auto roomy = CompiledGrammar::compile(*grammar, vocab);
  ASSERT_TRUE(roomy.ok());
  Matcher ok(*roomy);
  ASSERT_TRUE(ok.accept_token(0).ok());
  ASSERT_TRUE(ok.fill_mask(words.data(), words.size()).ok());
  EXPECT_EQ(words, oracle_mask(*grammar, vocab, "a", words.size()));

  options = CompileOptions{};
  options.recognizer.max_work_per_byte = 2000;
  auto per_byte = CompiledGrammar::compile(*grammar, vocab, options);
  ASSERT_TRUE(per_byte.ok());
  Matcher slow(*per_byte);
  Status last;
  size_t accepted = 0;
  while (accepted < 5000 && (last = slow.accept_token(0)).ok()) ++accepted;
  ASSERT_LT(accepted, 5000u);
  EXPECT_EQ(last.code(), ErrorCode::kLimitExceeded) << last.to_string();
  EXPECT_EQ(slow.num_tokens(), accepted);
  EXPECT_TRUE(slow.is_accepting());
  EXPECT_FALSE(slow.is_token_allowed(0));
  ASSERT_TRUE(slow.rollback(accepted / 2).ok());
  EXPECT_TRUE(slow.accept_token(0).ok());
}

TEST(Matcher, RollbackEqualsReplayAndForksAreIndependent) {
  const Vocabulary vocab = small_vocab();
  auto compiled =
      CompiledGrammar::from_gbnf(R"gm(root ::= ("a" | "b" | "c" | "ab" | "abc")*)gm", vocab);
  ASSERT_TRUE(compiled.ok());
  std::mt19937 rng(42);
  const uint32_t choices[] = {0, 1, 2, 3, 4};
  for (int trial = 0; trial < 50; ++trial) {
    Matcher m(*compiled);
    std::vector<uint32_t> seq;
    for (int i = 0; i < 12; ++i) {
      seq.push_back(choices[rng() % 5]);
      ASSERT_TRUE(m.accept_token(seq.back()).ok());
    }
    Matcher fork = m;
    size_t back = rng() % 12;
    ASSERT_TRUE(m.rollback(back).ok());
    Matcher replay(*compiled);
    for (size_t i = 0; i + back < seq.size(); ++i) ASSERT_TRUE(replay.accept_token(seq[i]).ok());
    std::vector<uint32_t> a(compiled->mask_words()), b(compiled->mask_words());
    ASSERT_TRUE(m.fill_mask(a.data(), a.size()).ok());
    ASSERT_TRUE(replay.fill_mask(b.data(), b.size()).ok());
    EXPECT_EQ(a, b);
    EXPECT_EQ(fork.num_tokens(), 12u);
  }
}

TEST(Matcher, BatchFillEqualsSingle) {
  const Vocabulary vocab = small_vocab();
  auto compiled = CompiledGrammar::from_gbnf(R"gm(root ::= ("a" | "b" "c" | "日本")+)gm", vocab);
  ASSERT_TRUE(compiled.ok());
  std::vector<Matcher> matchers;
  for (int i = 0; i < 9; ++i) {
    matchers.emplace_back(*compiled);
    for (int j = 0; j < i; ++j)
      ASSERT_TRUE(matchers.back().accept_token(j % 2 ? 1 : 0).ok() ||
                  matchers.back().accept_token(4).ok());
  }
  std::vector<Matcher*> ptrs;
  for (auto& m : matchers) ptrs.push_back(&m);
  const size_t row = compiled->mask_words() + 3;
  std::vector<uint32_t> batch(row * matchers.size());
  ASSERT_TRUE(fill_masks(ptrs.data(), ptrs.size(), batch.data(), row, 4).ok());
  for (size_t i = 0; i < matchers.size(); ++i) {
    Matcher copy = matchers[i];
    std::vector<uint32_t> single(row);
    ASSERT_TRUE(copy.fill_mask(single.data(), row).ok());
    EXPECT_TRUE(std::equal(single.begin(), single.end(), batch.begin() + i * row)) << i;
  }
}

TEST(Matcher, ThreadPoolRunsEveryItemOnceAcrossBatches) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3u);
  for (size_t n : {0u, 1u, 7u, 1000u}) {
    std::vector<std::atomic<int>> counts(n);
    for (int batch = 0; batch < 20; ++batch)
      pool.parallel_for(n, [&](size_t i) { counts[i].fetch_add(1); });
    for (auto& c : counts) EXPECT_EQ(c.load(), 20);
  }
}

TEST(Matcher, SharedCompiledGrammarAcrossThreads) {
  const Vocabulary vocab = small_vocab();
  auto compiled = CompiledGrammar::from_gbnf(R"gm(root ::= [a-c]+ "\n\n")gm", vocab);
  ASSERT_TRUE(compiled.ok());
  auto grammar = parse_gbnf(R"gm(root ::= [a-c]+ "\n\n")gm");
  std::vector<std::thread> threads;
  std::vector<int> compared(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back(
        [&, t] { compared[t] = random_walk_compare(*grammar, *compiled, vocab, 100 + t, 40, 1); });
  for (auto& th : threads) th.join();
  for (int c : compared) EXPECT_GT(c, 0);
}

// --- the shared workload ------------------------------------------------------

struct SharedCase {
  std::string name;
  std::string gbnf;
};

std::vector<SharedCase> shared_cases(const std::string& shared) {
  std::vector<SharedCase> out;
  for (const char* c : {"arithmetic", "c-code", "chess", "free-text", "json-generic", "list-lines",
                        "schema-events", "schema-person", "schema-tree"}) {
    const std::string dir = shared + "/bench/cases/" + c;
    std::string g = read(dir + "/grammar.gbnf");
    if (g.empty()) {
      std::string schema = read(dir + "/schema.json");
      if (schema.empty()) continue;
      auto converted = json_schema_to_gbnf(schema);
      EXPECT_TRUE(converted.ok()) << c << ": " << converted.status().to_string();
      if (!converted.ok()) continue;
      g = *converted;
    }
    out.push_back({c, g});
  }
  return out;
}

std::vector<uint32_t> read_ids(const std::string& path) {
  std::vector<uint32_t> ids;
  std::istringstream in(read(path));
  uint32_t v;
  while (in >> v) ids.push_back(v);
  return ids;
}

TEST(SharedWorkload, TracesReplayAndStopAtTheEnd) {
  const std::string shared = GRAMMASK_SHARED_DIR;
  if (shared.empty() || read(shared + "/bench/README.md").empty()) GTEST_SKIP() << "no ../shared";
  for (const char* v : {"gpt2", "deepseek-llm", "phi3"}) {
    auto vocab = Vocabulary::from_gguf_file(shared + "/bench/vocab/" + v + ".gguf");
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    for (const SharedCase& c : shared_cases(shared)) {
      auto compiled = CompiledGrammar::from_gbnf(c.gbnf, *vocab);
      ASSERT_TRUE(compiled.ok()) << c.name << ": " << compiled.status().to_string();
      Matcher m(*compiled);
      std::vector<uint32_t> words(compiled->mask_words());
      const auto trace = read_ids(shared + "/bench/traces/" + v + "/" + c.name + ".ids");
      ASSERT_FALSE(trace.empty());
      size_t refused = 0;
      for (uint32_t id : trace) {
        ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
        refused += !test_bit(words.data(), id);
        ASSERT_TRUE(m.accept_token(id).ok()) << v << "/" << c.name;
      }
      ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
      for (uint32_t stop : vocab->stop_tokens()) EXPECT_TRUE(test_bit(words.data(), stop));
      EXPECT_EQ(refused, 0u) << v << "/" << c.name;
    }
  }
}

void oracle_on_vocab(const Vocabulary& vocab, const std::string& shared, int walks, int steps) {
  for (const SharedCase& c : shared_cases(shared)) {
    auto grammar = parse_gbnf(c.gbnf);
    ASSERT_TRUE(grammar.ok());
    auto compiled = CompiledGrammar::compile(*grammar, vocab);
    ASSERT_TRUE(compiled.ok());
    int compared = 0;
    for (int w = 0; w < walks; ++w)
      compared += random_walk_compare(*grammar, *compiled, vocab, 7 + w, steps, steps / 3);
    EXPECT_GT(compared, 0) << c.name;
  }
}

TEST(SharedWorkload, MasksMatchOracleOnGgufVocabularies) {
  const std::string shared = GRAMMASK_SHARED_DIR;
  if (shared.empty() || read(shared + "/bench/README.md").empty()) GTEST_SKIP() << "no ../shared";
  for (const char* v : {"gpt2", "deepseek-llm", "phi3"}) {
    auto vocab = Vocabulary::from_gguf_file(shared + "/bench/vocab/" + v + ".gguf");
    ASSERT_TRUE(vocab.ok());
    oracle_on_vocab(*vocab, shared, 1, 12);
  }
}

TEST(SharedWorkload, MasksMatchOracleWithTextTerminalsOnSharedVocabularies) {
  const std::string shared = GRAMMASK_SHARED_DIR;
  if (shared.empty() || read(shared + "/bench/README.md").empty()) GTEST_SKIP() << "no ../shared";
  for (const std::string v :
       {"bench/vocab/gpt2.gguf", "bench/vocab/deepseek-llm.gguf", "bench/vocab/phi3.gguf",
        "tokenizers/llama-3/tokenizer.json", "tokenizers/phi-3-mini/tokenizer.json"}) {
    auto vocab = v.find(".gguf") != std::string::npos
                     ? Vocabulary::from_gguf_file(shared + "/" + v)
                     : Vocabulary::from_tokenizer_json_file(shared + "/" + v);
    ASSERT_TRUE(vocab.ok()) << v;
    for (const char* text : kTextTerminalGrammars) {
      SCOPED_TRACE(v + ": " + text);
      auto grammar = parse_gbnf(text);
      ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
      auto compiled = CompiledGrammar::compile(*grammar, *vocab);
      ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
      int compared = 0;
      for (uint32_t seed = 1; seed <= 2; ++seed)
        compared += random_walk_compare(*grammar, *compiled, *vocab, seed, 24, 3);
      EXPECT_GT(compared, 1);
    }
  }
}

// Real schemas whose grammars exercise the mask engine's shortcuts: large
// key automata beside declared names, strings of at most N characters
// (too long to unroll, so one rule call per character), additional
// properties. Random walks compared with the brute-force oracle.
TEST(SharedWorkload, MasksMatchOracleOnMaskBenchSchemas) {
  const std::string shared = GRAMMASK_SHARED_DIR;
  if (shared.empty() || read(shared + "/bench/README.md").empty()) GTEST_SKIP() << "no ../shared";
  auto vocab = Vocabulary::from_gguf_file(shared + "/bench/vocab/phi3.gguf");
  ASSERT_TRUE(vocab.ok());
  for (const char* name : {"Github_ultra---o80208", "Github_medium---o6769", "Github_easy---o12607",
                           "Github_medium---o61616", "Github_medium---o9792"}) {
    const std::string text =
        read(shared + "/jsonschemabench/maskbench/data/" + std::string(name) + ".json");
    ASSERT_FALSE(text.empty()) << name;
    const auto file = nlohmann::json::parse(text);
    auto grammar = json_schema_to_grammar(file["schema"].dump());
    ASSERT_TRUE(grammar.ok()) << name << ": " << grammar.status().to_string();
    auto compiled = CompiledGrammar::compile(*grammar, *vocab);
    ASSERT_TRUE(compiled.ok()) << name << ": " << compiled.status().to_string();
    int compared = 0;
    for (uint32_t seed = 1; seed <= 3; ++seed)
      compared += random_walk_compare(*grammar, *compiled, *vocab, seed, 40, 4);
    EXPECT_GT(compared, 20) << name;
  }
}

TEST(SharedWorkload, MasksMatchOracleOnTokenizerJson) {
  const std::string shared = GRAMMASK_SHARED_DIR;
  if (shared.empty() || read(shared + "/tokenizers/README.md").empty())
    GTEST_SKIP() << "no ../shared";
  for (const char* t : {"llama-3", "phi-3-mini"}) {
    auto vocab =
        Vocabulary::from_tokenizer_json_file(shared + "/tokenizers/" + t + "/tokenizer.json");
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    oracle_on_vocab(*vocab, shared, 1, 12);
  }
}

TEST(SharedWorkload, RandomGenerationEndsAccepted) {
  const std::string shared = GRAMMASK_SHARED_DIR;
  if (shared.empty() || read(shared + "/bench/README.md").empty()) GTEST_SKIP() << "no ../shared";
  auto vocab = Vocabulary::from_gguf_file(shared + "/bench/vocab/phi3.gguf");
  ASSERT_TRUE(vocab.ok());
  for (const char* g :
       {R"gm(root ::= [a-z]{1,8} ("," [a-z]{1,8}){0,4} "\n")gm",
        R"gm(root ::= "{" ("\"k\":" [0-9]{1,3} ("," "\"k\":" [0-9]{1,3}){0,3})? "}")gm"}) {
    auto grammar = parse_gbnf(g);
    ASSERT_TRUE(grammar.ok());
    auto compiled = CompiledGrammar::compile(*grammar, *vocab);
    ASSERT_TRUE(compiled.ok());
    for (uint32_t seed = 0; seed < 10; ++seed) {
      Matcher m(*compiled);
      std::mt19937 rng(seed);
      std::vector<uint32_t> words(compiled->mask_words());
      std::string text;
      for (int step = 0; step < 200 && !m.is_terminated(); ++step) {
        ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
        auto ids = allowed_ids(words, vocab->size());
        ASSERT_FALSE(ids.empty()) << "dead end after '" << text << "'";
        uint32_t pick = ids[rng() % ids.size()];
        ASSERT_TRUE(m.accept_token(pick).ok());
        if (!vocab->is_stop(pick)) text += std::string(vocab->token_bytes(pick));
      }
      ASSERT_TRUE(m.is_terminated()) << text;
      auto r = Recognizer::create(*grammar, "root");
      EXPECT_EQ(r->push_bytes(text), text.size());
      EXPECT_TRUE(r->is_accepting()) << text;
    }
  }
}

}  // namespace
}  // namespace grammask
