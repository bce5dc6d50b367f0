// The ECMA-262 -> GBNF regex translator against RE2 as the oracle: for
// random strings over each pattern's alphabet, the grammar accepts the JSON
// encoding of the string exactly when RE2 finds a match. Patterns are written
// in the syntax ECMA-262 and RE2 share, over characters where their classes
// agree (no \r, \v or Unicode spaces).
#include "regex/regex_to_gbnf.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "base/json_string.h"
#include "grammask/gbnf.h"
#include "grammask/recognizer.h"
#include "regex/char_dfa.h"
#include "regex/re2_bridge.h"
#include "schema/formats.h"

namespace grammask::internal {
namespace {

const char* const kAnyChar =
    "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n";

std::optional<Recognizer> build(const std::string& pattern, std::string* gbnf) {
  auto translated = ecma_regex_to_gbnf(pattern, "char");
  EXPECT_TRUE(translated.ok()) << pattern << ": " << translated.status().to_string();
  if (!translated.ok()) return std::nullopt;
  *gbnf = "root ::= \"\\\"\" " + (translated->gbnf.empty() ? "" : "(" + translated->gbnf + ")") +
          " \"\\\"\"\n" + kAnyChar;
  auto grammar = parse_gbnf(*gbnf);
  EXPECT_TRUE(grammar.ok()) << *gbnf << "\n" << grammar.status().to_string();
  if (!grammar.ok()) return std::nullopt;
  auto recognizer = Recognizer::create(*grammar);
  EXPECT_TRUE(recognizer.ok()) << recognizer.status().to_string();
  if (!recognizer.ok()) return std::nullopt;
  return std::move(*recognizer);
}

std::vector<std::string> split_utf8(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    size_t n = 1;
    auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0xF0)
      n = 4;
    else if (b >= 0xE0)
      n = 3;
    else if (b >= 0xC0)
      n = 2;
    out.push_back(text.substr(i, n));
    i += n;
  }
  return out;
}

struct Case {
  const char* pattern;
  const char* alphabet;  // UTF-8 characters to build strings from
};

const Case kCases[] = {
    {"abc", "abcx"},
    {"^abc$", "abcx"},
    {"^a|b$", "abx"},
    {"^(ab|cd)*$", "abcdx"},
    {"^a+b?c*$", "abcx"},
    {"^[a-c]{2,3}$", "abcd"},
    {"^x{3}$", "xy"},
    {"^(?:ab){1,2}c{0,2}$", "abc"},
    {"^[^a-c]+$", "abcxy\"\\\n"},
    {"\\d+", "12a"},
    {"^\\D\\w\\W$", "1a_ !"},
    {"^\\s*x\\s*$", " \t\nx"},
    {"^\\S+$", " a\t1"},
    {"^.*$", "ab\n\x01"},
    {"^a.c$", "abc\n\"\\"},
    {"^[\"\\\\/]+$", "\"\\/a"},
    {"^\\x41\\x42$", "ABC"},
    {"^[\\x00-\\x1f]$", "\x01\x1f\n\ta"},
    {"^\\n\\t$", "\n\ta"},
    {"\xC3\xA9+",
     "\xC3\xA9"
     "e"},
    {"^[\xC3\xA0-\xC3\xBF]{2}$",
     "\xC3\xA0\xC3\xA9"
     "a"},
    {"^\xF0\x9F\x98\x80?$",
     "\xF0\x9F\x98\x80"
     "a"},
    {"^(a|ab)(c|bcd)(d*)$", "abcd"},
    {"(a|b)*abb", "ab"},
    {"^[a-z0-9-]+(\\.[a-z0-9-]+)*$", "a1-."},
    {"^$", "a"},
    {"", "a"},
    {"a{0}", "ab"},
    {"^(?:a?){3}b$", "ab"},
    {"^[\\w.-]+@[\\w-]+\\.[a-z]{2,}$", "a.@-bc"},
    {"^\\-?\\d*\\.?\\d+$", "-1.2"},
    {"^[^\"]*$", "\"a"},
    {"x*$", "xy"},
    {"^(\\d{3})-(\\d{4})$", "12-34"},
    {"^a{2,}$", "ab"},
    {"^[a\\-z]+$", "a-zb"},
    {"^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$$", ".*+?()[]{}|^$"},
    {"ab|ba|b$|^aa", "abc"},
    {"abc|bcd|cd", "abcd"},
};

TEST(RegexTest, MatchesRe2OnRandomStrings) {
  std::mt19937 random(12345);
  for (const Case& c : kCases) {
    std::string gbnf;
    auto recognizer = build(c.pattern, &gbnf);
    if (!recognizer) continue;
    RE2 oracle(c.pattern);
    ASSERT_TRUE(oracle.ok()) << c.pattern;
    std::vector<std::string> letters = split_utf8(c.alphabet);
    for (int round = 0; round < 400; ++round) {
      size_t length = random() % 9;
      std::string text;
      for (size_t k = 0; k < length; ++k) text += letters[random() % letters.size()];
      bool expected = RE2::PartialMatch(text, oracle);
      std::string encoded = json_quote(text);
      recognizer->reset();
      bool accepted =
          recognizer->push_bytes(encoded) == encoded.size() && recognizer->is_accepting();
      ASSERT_EQ(accepted, expected) << "pattern " << c.pattern << " text " << encoded << "\n"
                                    << gbnf;
      auto search = ecma_regex_search(c.pattern, text);
      ASSERT_TRUE(search.ok());
      ASSERT_EQ(*search, expected) << "ecma_regex_search " << c.pattern << " on " << encoded;
    }
  }
}

TEST(RegexTest, EscapedSpellingsInJsonMatchTheirCharacter) {
  std::string gbnf;
  auto recognizer = build("^a/\"$", &gbnf);
  ASSERT_TRUE(recognizer);
  for (const char* text : {"\"a/\\\"\"", "\"a\\/\\\"\""}) {
    recognizer->reset();
    std::string s = text;
    EXPECT_TRUE(recognizer->push_bytes(s) == s.size() && recognizer->is_accepting()) << s;
  }
}

TEST(RegexTest, EcmaSpecifics) {
  // `.` excludes line terminators; \s includes Unicode spaces; `$` is the end.
  EXPECT_FALSE(*ecma_regex_search("^.$", "\r"));
  EXPECT_FALSE(*ecma_regex_search("^.$", "\xE2\x80\xA8"));
  EXPECT_TRUE(*ecma_regex_search("^\\s$", "\xC2\xA0"));
  EXPECT_TRUE(*ecma_regex_search("^\\s$", "\v"));
  EXPECT_FALSE(*ecma_regex_search("^a$", "a\n"));
  // Annex B: `{` that is not a quantifier is a literal; `]` alone too.
  EXPECT_TRUE(*ecma_regex_search("^a{,2}$", "a{,2}"));
  EXPECT_TRUE(*ecma_regex_search("^\\u{1F600}$", "\xF0\x9F\x98\x80"));
  EXPECT_TRUE(*ecma_regex_search("^\\uD83D\\uDE00$", "\xF0\x9F\x98\x80"));
  EXPECT_TRUE(*ecma_regex_search("^[\\d-x]+$", "1-x"));
  EXPECT_TRUE(*ecma_regex_search("^\\cJ$", "\n"));
  // Identity escapes of punctuation, `\_` too (Annex B, Python's re).
  EXPECT_TRUE(*ecma_regex_search("^[a\\_]\\-\\_$", "_-_"));
  EXPECT_FALSE(*ecma_regex_search("^\\_$", "a"));
  EXPECT_FALSE(ecma_regex_search("^\\q$", "q").ok());
  EXPECT_TRUE(*ecma_regex_search("^(?<name>ab)+$", "abab"));
  // `[]` is the empty class in ECMA-262 (RE2 reads `[]]` differently).
  EXPECT_FALSE(*ecma_regex_search("[]]", "]"));
}

TEST(RegexTest, RefusesWhatIsNotRegularOrNotSupported) {
  for (const char* pattern :
       {"(?=a)", "(?!a)b", "(?<=a)b", "(a)\\1", "\\bword", "\\p{L}", "a^b", "(^a)*"}) {
    auto result = ecma_regex_to_gbnf(pattern, "char");
    EXPECT_FALSE(result.ok()) << pattern;
    if (!result.ok()) EXPECT_EQ(result.status().code(), ErrorCode::kUnsupported) << pattern;
  }
  for (const char* pattern : {"(", "a)", "[a", "*a", "a{2,1}", "[z-a]", "\\", "\\x4"}) {
    auto result = ecma_regex_to_gbnf(pattern, "char");
    EXPECT_FALSE(result.ok()) << pattern;
    if (!result.ok()) EXPECT_EQ(result.status().code(), ErrorCode::kSyntax) << pattern;
  }
  EXPECT_EQ(ecma_regex_to_gbnf("a{100001}", "char").status().code(), ErrorCode::kLimitExceeded);
  EXPECT_EQ(ecma_regex_to_gbnf("(a{1000}){1000}{1000}", "char").status().code(),
            ErrorCode::kLimitExceeded);
}

TEST(RegexTest, LargeCountedRepeatStaysSmall) {
  // Crashes other converters: counted repetition of a group.
  std::string gbnf;
  auto recognizer = build("^(?:\\S+\\s+){0,199}\\S+$", &gbnf);
  ASSERT_TRUE(recognizer);
  EXPECT_LT(gbnf.size(), 2000u);
  std::string words;
  for (int i = 0; i < 150; ++i) words += "w ";
  words += "end";
  std::string encoded = json_quote(words);
  EXPECT_TRUE(recognizer->push_bytes(encoded) == encoded.size() && recognizer->is_accepting());
}

TEST(RegexTest, LengthBounds) {
  auto t = ecma_regex_to_gbnf("^[a-z]{2,4}(x|yy)?$", "char");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->min_length, 2u);
  ASSERT_TRUE(t->max_length.has_value());
  EXPECT_EQ(*t->max_length, 6u);
  t = ecma_regex_to_gbnf("ab", "char");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->min_length, 2u);
  EXPECT_FALSE(t->max_length.has_value());
}

// --- automata over code points (regex/char_dfa.h) ---------------------------

bool accepted(const CharDfa& dfa, const std::string& text) {
  return dfa_accepts(dfa, text, [](uint32_t label) { return label != 0; });
}

// A recognizer for the JSON strings of an automaton's language; with
// `quote_as_suffix`, the automaton's rules write the closing quote
// themselves (dfa_to_gbnf's suffix) instead of the root.
std::optional<Recognizer> dfa_recognizer(const CharDfa& dfa, std::string* gbnf,
                                         bool quote_as_suffix = false) {
  std::string rules;
  int counter = 0;
  const std::string quote = "\"\\\"\"";
  std::string start = dfa_to_gbnf(
      dfa, [](uint32_t label) { return label != 0; },
      [&] { return "s" + std::to_string(counter++); },
      [&](const std::string& name, const std::string& body) {
        rules += name + " ::= " + body + "\n";
      },
      quote_as_suffix ? quote : "");
  *gbnf = "root ::= " + quote + " " + (start.empty() ? "[^\\x00-\\U0010FFFF]" : start) +
          (quote_as_suffix ? "" : " " + quote) + "\n" + rules;
  auto grammar = parse_gbnf(*gbnf);
  EXPECT_TRUE(grammar.ok()) << *gbnf << "\n" << grammar.status().to_string();
  if (!grammar.ok()) return std::nullopt;
  auto recognizer = Recognizer::create(*grammar);
  EXPECT_TRUE(recognizer.ok()) << recognizer.status().to_string();
  if (!recognizer.ok()) return std::nullopt;
  return std::move(*recognizer);
}

bool grammar_accepts(Recognizer& recognizer, const std::string& text) {
  std::string encoded = json_quote(text);
  recognizer.reset();
  return recognizer.push_bytes(encoded) == encoded.size() && recognizer.is_accepting();
}

CharDfa regex_dfa(const std::string& pattern) {
  auto parsed = parse_ecma_regex(pattern);
  EXPECT_TRUE(parsed.ok()) << pattern;
  if (!parsed.ok()) return dfa_words({});
  auto dfa = dfa_from_regex(*parsed);
  EXPECT_TRUE(dfa.ok()) << pattern << ": " << dfa.status().to_string();
  return dfa.ok() ? *dfa : dfa_words({});
}

TEST(RegexDfaTest, MatchesRe2AndTheGrammarMatchesTheDfa) {
  std::mt19937 random(777);
  for (const Case& c : kCases) {
    CharDfa dfa = regex_dfa(c.pattern);
    CharDfa complement = dfa_complement(dfa);
    std::string gbnf, complement_gbnf;
    auto recognizer = dfa_recognizer(dfa, &gbnf);
    auto complement_recognizer = dfa_recognizer(complement, &complement_gbnf);
    std::string suffixed_gbnf;
    auto suffixed = dfa_recognizer(dfa, &suffixed_gbnf, /*quote_as_suffix=*/true);
    ASSERT_TRUE(recognizer && complement_recognizer && suffixed) << c.pattern;
    RE2 oracle(c.pattern);
    std::vector<std::string> letters = split_utf8(c.alphabet);
    for (int round = 0; round < 300; ++round) {
      size_t length = random() % 9;
      std::string text;
      for (size_t k = 0; k < length; ++k) text += letters[random() % letters.size()];
      const bool expected = RE2::PartialMatch(text, oracle);
      ASSERT_EQ(accepted(dfa, text), expected) << c.pattern << " on " << json_quote(text);
      ASSERT_EQ(accepted(complement, text), !expected) << c.pattern << " on " << json_quote(text);
      ASSERT_EQ(grammar_accepts(*recognizer, text), expected)
          << c.pattern << " on " << json_quote(text) << "\n"
          << gbnf;
      ASSERT_EQ(grammar_accepts(*complement_recognizer, text), !expected)
          << "not " << c.pattern << " on " << json_quote(text) << "\n"
          << complement_gbnf;
      ASSERT_EQ(grammar_accepts(*suffixed, text), expected)
          << c.pattern << " on " << json_quote(text) << "\n"
          << suffixed_gbnf;
    }
  }
}

// Anchors inside a branch (^ holds at the start of the text only, $ at its
// end only) against RE2, whose reading without the multiline flag is
// ECMA-262's: the search automaton agrees with PartialMatch, the whole-match
// automaton with FullMatch, on random strings.
TEST(RegexDfaTest, AnchorsInsideABranch) {
  const Case cases[] = {
      {"a^b", "ab"},
      {"(^a)*b", "ab"},
      {"(?:^x|y)z", "xyz"},
      {"a$b", "ab"},
      {"x(a$|b)", "xab"},
      {"(a$)?b", "ab"},
      {"(a|^)b", "abc"},
      {"b($|c)", "abc"},
      {"x*^y", "xy"},
      {"(^|,)ab(,|$)", "ab,"},
      {"^$[a-z]*$", "ab"},
      {"/^[0-9]{2}$/", "/12"},
      {"^(?:(?:^[*]|[a-z])\\.)*[a-z]+$", "*a."},
      {"(?:a|^b)+c", "abc"},
  };
  std::mt19937 random(4242);
  for (const Case& c : cases) {
    auto parsed = parse_ecma_regex(c.pattern);
    ASSERT_TRUE(parsed.ok()) << c.pattern << ": " << parsed.status().to_string();
    auto search = dfa_from_regex(*parsed);
    ASSERT_TRUE(search.ok()) << c.pattern << ": " << search.status().to_string();
    auto whole = dfa_from_whole_regex(*parsed, kDefaultDfaStates);
    ASSERT_TRUE(whole.ok()) << c.pattern << ": " << whole.status().to_string();
    // regex_to_gbnf still refuses them; the converter takes the automaton.
    EXPECT_EQ(ecma_regex_to_gbnf(c.pattern, "char").ok(), !has_inner_anchor(*parsed)) << c.pattern;
    RE2 oracle(c.pattern);
    ASSERT_TRUE(oracle.ok()) << c.pattern;
    std::vector<std::string> letters = split_utf8(c.alphabet);
    for (int round = 0; round < 400; ++round) {
      size_t length = random() % 7;
      std::string text;
      for (size_t k = 0; k < length; ++k) text += letters[random() % letters.size()];
      ASSERT_EQ(accepted(*search, text), RE2::PartialMatch(text, oracle))
          << c.pattern << " on " << json_quote(text);
      ASSERT_EQ(accepted(*whole, text), RE2::FullMatch(text, oracle))
          << "whole " << c.pattern << " on " << json_quote(text);
    }
  }
}

// Lookaheads right after a leading ^, against std::regex (ECMAScript, which
// has them) on ASCII strings: the automaton, the searcher and the whole-match
// automaton agree with it.
TEST(RegexDfaTest, LookaheadsAfterALeadingCaret) {
  struct LookaheadCase {
    const char* pattern;
    const char* alphabet;
  };
  const LookaheadCase cases[] = {
      {"^(?!@@)[@a-z]+$", "@ab"},      {"^(?!(ab|b)$)[a-z]*$", "abc"},
      {"^(?=.{1,3}$)[a-c]*", "abc\n"}, {"^(?!ab|ba).*", "ab\n"},
      {"^(?=a)(?!.*c$)[a-c]+", "abc"}, {"^(?!a)b|c", "abc"},
      {"^(?:(?!a)[ab]b|a)$", "ab"},    {"^(?!^x)(?=y)", "xy"},
  };
  std::mt19937 random(31);
  for (const LookaheadCase& c : cases) {
    auto parsed = parse_ecma_regex(c.pattern);
    ASSERT_TRUE(parsed.ok()) << c.pattern << ": " << parsed.status().to_string();
    EXPECT_TRUE(has_lookahead(*parsed));
    auto dfa = dfa_from_regex(*parsed);
    ASSERT_TRUE(dfa.ok()) << c.pattern << ": " << dfa.status().to_string();
    auto whole = dfa_from_whole_regex(*parsed, kDefaultDfaStates);
    ASSERT_TRUE(whole.ok()) << c.pattern << ": " << whole.status().to_string();
    const std::regex oracle(c.pattern, std::regex::ECMAScript);
    EcmaRegexSearcher searcher;
    const std::string alphabet = c.alphabet;
    for (int round = 0; round < 400; ++round) {
      std::string text;
      for (size_t k = random() % 7; k > 0; --k) text += alphabet[random() % alphabet.size()];
      const bool expected = std::regex_search(text, oracle);
      ASSERT_EQ(accepted(*dfa, text), expected) << c.pattern << " on " << json_quote(text);
      ASSERT_EQ(*searcher.search(c.pattern, text), expected)
          << c.pattern << " on " << json_quote(text);
      // A whole match: the pattern matches the whole text, lookaheads at
      // its start.
      const bool whole_expected = std::regex_match(text, oracle);
      ASSERT_EQ(accepted(*whole, text), whole_expected) << c.pattern << " on " << json_quote(text);
    }
  }
  // Anywhere else a lookahead is refused, naming where it may be.
  for (const char* pattern :
       {"a(?!b)", "(?!a)b", "^a(?!b)", "^(?!(?=a)b)c", "(^(?!a))*", "a(?=b)c", "a(?=(?=b))"}) {
    auto parsed = parse_ecma_regex(pattern);
    ASSERT_TRUE(parsed.ok()) << pattern;
    auto dfa = dfa_from_regex(*parsed);
    ASSERT_FALSE(dfa.ok()) << pattern;
    EXPECT_EQ(dfa.status().code(), ErrorCode::kUnsupported) << pattern;
  }
  EXPECT_EQ(parse_ecma_regex("(?<=a)b").status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(parse_ecma_regex("^(?!a").status().code(), ErrorCode::kSyntax);
  EXPECT_EQ(parse_ecma_regex("^(?!a)*b").status().code(), ErrorCode::kSyntax);
  // RE2 checks what is inside a lookahead too.
  EXPECT_EQ(parse_ecma_regex("^(?!a{2,1})b").status().code(), ErrorCode::kSyntax);
}

// A positive lookahead that ends a branch not anchored at its end: a search
// finds what the branch followed by the lookahead's text finds, as
// std::regex (ECMAScript) does; a whole match refuses it.
TEST(RegexDfaTest, LookaheadEndingASearch) {
  const Case cases[] = {
      {"a(?=b)", "abc"},        {"((?:[^/]*/)*)(?=\\.(yaml|json))", "/.yamljsonx"},
      {"^[a-c]+(?=c$)", "abc"}, {"x(?=y)|^z", "xyz"},
      {"^(?!b)a*(?=b)", "ab"},
  };
  std::mt19937 random(57);
  for (const Case& c : cases) {
    auto parsed = parse_ecma_regex(c.pattern);
    ASSERT_TRUE(parsed.ok()) << c.pattern << ": " << parsed.status().to_string();
    auto dfa = dfa_from_regex(*parsed);
    ASSERT_TRUE(dfa.ok()) << c.pattern << ": " << dfa.status().to_string();
    EXPECT_EQ(dfa_from_whole_regex(*parsed, kDefaultDfaStates).status().code(),
              ErrorCode::kUnsupported)
        << c.pattern;
    const std::regex oracle(c.pattern, std::regex::ECMAScript);
    const std::string alphabet = c.alphabet;
    for (int round = 0; round < 400; ++round) {
      std::string text;
      for (size_t k = random() % 9; k > 0; --k) text += alphabet[random() % alphabet.size()];
      ASSERT_EQ(accepted(*dfa, text), std::regex_search(text, oracle))
          << c.pattern << " on " << json_quote(text);
    }
  }
}

TEST(RegexDfaTest, ProductsLengthsAndWords) {
  std::mt19937 random(99);
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"^[a-c]+$", "b"}, {"^a", "c$"}, {"^(ab)*$", "^[ab]{2,5}$"}, {"x", "^[^y]*$"}};
  for (const auto& [p, q] : pairs) {
    CharDfa a = regex_dfa(p), b = regex_dfa(q);
    auto both = dfa_intersection(a, b);
    ASSERT_TRUE(both.ok());
    auto length = dfa_length(2, 4);
    ASSERT_TRUE(length.ok());
    auto bounded = dfa_intersection(*both, *length);
    ASSERT_TRUE(bounded.ok());
    auto labelled = dfa_product(a, b, [](uint32_t x, uint32_t y) { return x | (y << 1); });
    ASSERT_TRUE(labelled.ok());
    std::string gbnf;
    auto recognizer = dfa_recognizer(*bounded, &gbnf);
    ASSERT_TRUE(recognizer);
    RE2 re_p(p), re_q(q);
    for (int round = 0; round < 400; ++round) {
      size_t n = random() % 7;
      std::string text;
      for (size_t k = 0; k < n; ++k) text += "abcxy"[random() % 5];
      const bool in_p = RE2::PartialMatch(text, re_p), in_q = RE2::PartialMatch(text, re_q);
      ASSERT_EQ(accepted(*both, text), in_p && in_q) << p << " & " << q << " on " << text;
      const bool expected = in_p && in_q && n >= 2 && n <= 4;
      ASSERT_EQ(accepted(*bounded, text), expected) << p << " & " << q << " on " << text;
      ASSERT_EQ(grammar_accepts(*recognizer, text), expected) << text << "\n" << gbnf;
      for (uint32_t want : {1u, 2u, 3u})
        ASSERT_EQ(dfa_accepts(*labelled, text, [&](uint32_t label) { return label == want; }),
                  (in_p ? 1u : 0u) + (in_q ? 2u : 0u) == want)
            << text;
    }
  }
  CharDfa words = dfa_words({"ab", "a", "\xC3\xA9"});
  EXPECT_TRUE(accepted(words, "a"));
  EXPECT_TRUE(accepted(words, "ab"));
  EXPECT_TRUE(accepted(words, "\xC3\xA9"));
  EXPECT_FALSE(accepted(words, ""));
  EXPECT_FALSE(accepted(words, "abc"));
  CharDfa others = dfa_complement(words);
  EXPECT_TRUE(accepted(others, ""));
  EXPECT_TRUE(accepted(others, "b"));
  EXPECT_FALSE(accepted(others, "ab"));
  auto unbounded = dfa_length(3, std::nullopt);
  ASSERT_TRUE(unbounded.ok());
  EXPECT_FALSE(accepted(*unbounded, "ab"));
  EXPECT_TRUE(accepted(*unbounded, "abcdefg"));
}

// The searcher compiles each pattern once and answers as ecma_regex_search
// does, also for a pattern it cannot take (asked twice: the cached error).
TEST(RegexTest, SearcherAnswersLikeSearch) {
  EcmaRegexSearcher searcher;
  const std::vector<std::string> patterns = {"^a+$", "b", "^(x|y){2}$", "(?=a)", "[", "a{2000}"};
  const std::vector<std::string> texts = {"", "a", "aa", "ab", "xy", "xyz", "cb"};
  for (int round = 0; round < 2; ++round)
    for (const std::string& pattern : patterns)
      for (const std::string& text : texts) {
        Result<bool> expected = ecma_regex_search(pattern, text);
        Result<bool> got = searcher.search(pattern, text);
        ASSERT_EQ(got.ok(), expected.ok()) << pattern << " on " << text;
        if (expected.ok())
          EXPECT_EQ(*got, *expected) << pattern << " on " << text;
        else
          EXPECT_EQ(got.status().to_string(), expected.status().to_string()) << pattern;
      }
  EXPECT_TRUE(*searcher.search("^a+$", "aaa"));
  EXPECT_FALSE(*searcher.search("^a+$", "aab"));
}

// normalize_set returns a normalized set as it is (its fast path) and
// sorts, merges, clips and cuts out surrogates otherwise.
TEST(RegexTest, NormalizeSet) {
  using Set = CodePointSet;
  auto same = [](const Set& a, const Set& b) { return a == b; };
  const Set normalized = {{'a', 'c'}, {'x', 'x'}, {0x100, 0xD7FF}, {0xE000, 0x10FFFF}};
  EXPECT_TRUE(same(normalize_set(normalized), normalized));
  EXPECT_TRUE(same(normalize_set({}), Set{}));
  // Out of order, overlapping, adjacent.
  EXPECT_TRUE(same(normalize_set({{'x', 'z'}, {'a', 'c'}, {'b', 'f'}, {'g', 'h'}}),
                   Set{{'a', 'h'}, {'x', 'z'}}));
  // Surrogates cut out, also from a range that spans them.
  EXPECT_TRUE(same(normalize_set({{0xD000, 0xE100}}), Set{{0xD000, 0xD7FF}, {0xE000, 0xE100}}));
  EXPECT_TRUE(same(normalize_set({{0xD800, 0xDFFF}}), Set{}));
  EXPECT_TRUE(same(normalize_set({{0xDFFF, 0xE000}}), Set{{0xE000, 0xE000}}));
  // Empty and out-of-range ranges.
  EXPECT_TRUE(same(normalize_set({{'b', 'a'}, {0x110000, 0x110005}}), Set{}));
  EXPECT_TRUE(same(normalize_set({{0x10FF00, 0x120000}}), Set{{0x10FF00, 0x10FFFF}}));
}

TEST(RegexDfaTest, StateBudget) {
  auto parsed = parse_ecma_regex("(a|b)*a(a|b){12}");
  ASSERT_TRUE(parsed.ok());
  auto dfa = dfa_from_regex(*parsed, 1, 1000);  // 2^13 subsets
  EXPECT_EQ(dfa.status().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(dfa_length(0, 100000, 1000).ok());
  // Minimization merges equivalent states: (a|b)* ends up one state.
  CharDfa loop = regex_dfa("^(a|b)*$");
  CharDfa min = dfa_minimize(loop, [](uint32_t label) { return label != 0; });
  EXPECT_EQ(min.states.size(), 1u);
  CharDfa nothing = dfa_minimize(regex_dfa("^[^\\s\\S]$"), [](uint32_t l) { return l != 0; });
  EXPECT_TRUE(nothing.states[0].edges.empty());
  EXPECT_EQ(nothing.states[0].label, 0u);
}

// A search for one of several words stops tracking partial matches once
// one matched: its automaton grows with the words, not with their product.
TEST(RegexDfaTest, SearchForSeveralWordsStaysSmall) {
  CharDfa words = regex_dfa("nightly|beta|devedition|release|esr|unbranded-release");
  EXPECT_LT(words.states.size(), 100u);
  const RE2 oracle("nightly|beta|devedition|release|esr|unbranded-release");
  std::mt19937 random(3);
  const std::string letters = "nightlybetadevreleasur-";
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    if (round % 3 == 0) text = "xnightly";
    for (size_t k = random() % 16; k > 0; --k) text += letters[random() % letters.size()];
    if (round % 5 == 0) text += "esr";
    ASSERT_EQ(accepted(words, text), RE2::PartialMatch(text, oracle)) << text;
  }
}

TEST(RegexDfaTest, LengthsOfTheAcceptedStrings) {
  auto lengths = [](const char* pattern) { return dfa_lengths(regex_dfa(pattern)); };
  DfaLengths fixed = lengths("^(ab|c)d$");
  EXPECT_FALSE(fixed.none);
  EXPECT_EQ(fixed.min, 2u);
  EXPECT_EQ(fixed.max, std::optional<uint64_t>(3));
  DfaLengths loop = lengths("^a(b|c)*d$");
  EXPECT_EQ(loop.min, 2u);
  EXPECT_FALSE(loop.max.has_value());
  // A cycle that leads to no accepting state leaves the bound finite.
  DfaLengths dead_loop = lengths("^(?:ab|x+[^\\s\\S])$");
  EXPECT_EQ(dead_loop.max, std::optional<uint64_t>(2));
  EXPECT_EQ(lengths("^$").max, std::optional<uint64_t>(0));
  EXPECT_TRUE(lengths("^[^\\s\\S]$").none);
  EXPECT_FALSE(lengths("abc").max.has_value());  // unanchored: anything around
}

TEST(RegexDfaTest, MinimizationIsExactAndMinimal) {
  auto keep = [](uint32_t label) { return label != 0; };
  // "The fourth character from the end is a": 16 states at least, and a
  // product of the automaton with itself minimizes back to 16.
  CharDfa fourth = regex_dfa("^[ab]*a[ab]{3}$");
  auto doubled = dfa_product(fourth, fourth, [](uint32_t x, uint32_t y) { return x & y; });
  ASSERT_TRUE(doubled.ok());
  CharDfa min = dfa_minimize(*doubled, keep);
  EXPECT_EQ(min.states.size(), 16u);
  // A length bound splits states one length at a time: 0..40 is 41 states.
  auto bounded = dfa_intersection(regex_dfa("^[ab]*$"), *dfa_length(0, 40));
  ASSERT_TRUE(bounded.ok());
  EXPECT_EQ(bounded->states.size(), 41u);
  // Several labels are kept apart, and every language is unchanged.
  CharDfa x = regex_dfa("^(ab|ba)*$"), y = regex_dfa("a{2,5}");
  auto labelled = dfa_product(x, y, [](uint32_t p, uint32_t q) { return p | (q << 1); });
  ASSERT_TRUE(labelled.ok());
  CharDfa labelled_min = dfa_minimize(*labelled, keep);
  EXPECT_LT(labelled_min.states.size(), labelled->states.size());
  std::mt19937 random(7);
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    const int length = static_cast<int>(random() % 12);
    for (int k = 0; k < length; ++k) text.push_back("abc"[random() % 3]);
    EXPECT_EQ(dfa_accepts(min, text, keep), dfa_accepts(*doubled, text, keep)) << text;
    for (uint32_t want = 1; want <= 3; ++want) {
      auto is = [want](uint32_t label) { return label == want; };
      EXPECT_EQ(dfa_accepts(labelled_min, text, is), dfa_accepts(*labelled, text, is)) << text;
    }
  }
}

// The JSON Schema converter parses its own format patterns without the
// RE2 cross-check (RegexCheck::kTrusted), so here each must pass it, and
// parse to the same tree either way.
TEST(FormatPatterns, PassTheRe2CrossCheck) {
  const char* const formats[] = {"date",
                                 "time",
                                 "date-time",
                                 "duration",
                                 "uuid",
                                 "ipv4",
                                 "ipv6",
                                 "hostname",
                                 "email",
                                 "uri",
                                 "uri-reference",
                                 "json-pointer",
                                 "relative-json-pointer",
                                 "uri-template",
                                 "idn-hostname",
                                 "idn-email",
                                 "iri",
                                 "iri-reference"};
  for (const char* format : formats) {
    const FormatLookup lookup = format_pattern(format);
    ASSERT_TRUE(lookup.known && lookup.supported) << format;
    auto checked = parse_ecma_regex(lookup.pattern, {}, RegexCheck::kWithRe2);
    ASSERT_TRUE(checked.ok()) << format << ": " << checked.status().to_string();
    auto trusted = parse_ecma_regex(lookup.pattern, {}, RegexCheck::kTrusted);
    ASSERT_TRUE(trusted.ok()) << format;
    EXPECT_EQ(regex_to_re2(*checked), regex_to_re2(*trusted)) << format;
    RE2 re2(regex_to_re2(*checked));
    EXPECT_TRUE(re2.ok()) << format << ": " << re2.error();
  }
  // Past RE2's bound on repeat counts (1000, nested counts multiplied) the
  // check does not ask RE2, which would refuse the pattern for its size:
  // grammask's own bounds decide (RegexLimits here, max_states when lowered).
  EXPECT_TRUE(has_large_repeat(*parse_ecma_regex("(a{999}){999}", {}, RegexCheck::kTrusted)));
  EXPECT_TRUE(parse_ecma_regex("(a{999}){999}", {}, RegexCheck::kWithRe2).ok());
  EXPECT_FALSE(has_large_repeat(*parse_ecma_regex("(a{10}){100}", {}, RegexCheck::kTrusted)));
}

}  // namespace
}  // namespace grammask::internal
