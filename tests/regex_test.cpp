// The ECMA-262 -> GBNF regex translator against RE2 as the oracle: for
// random strings over each pattern's alphabet, the grammar accepts the JSON
// encoding of the string exactly when RE2 finds a match. Patterns are written
// in the syntax ECMA-262 and RE2 share, over characters where their classes
// agree (no \r, \v or Unicode spaces).
#include "regex_to_gbnf.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

#include <random>
#include <string>
#include <vector>

#include "grammask/gbnf.h"
#include "grammask/recognizer.h"

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

}  // namespace
}  // namespace grammask::internal
