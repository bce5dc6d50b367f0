// The text terminals Regex, LazyRegex, Substring and TextExcluding: their
// GBNF round trip, what the recognizer accepts (hand-picked cases and a
// brute-force comparison with references: RE2 for patterns, plain string
// search for the others), and the refusals of what cannot be enforced.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/gbnf.h"
#include "grammask/grammar.h"
#include "grammask/recognizer.h"
#include "regex/re2_bridge.h"

namespace grammask {
namespace {

Grammar parse(const std::string& gbnf) {
  auto grammar = parse_gbnf(gbnf);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string() << "\n" << gbnf;
  if (!grammar.ok()) std::abort();
  return std::move(grammar).value();
}

Recognizer make(const std::string& gbnf) {
  auto r = Recognizer::create(parse(gbnf));
  EXPECT_TRUE(r.ok()) << r.status().to_string() << "\n" << gbnf;
  if (!r.ok()) std::abort();
  return std::move(r).value();
}

bool accepts(Recognizer& r, std::string_view text) {
  r.reset();
  return r.push_bytes(text) == text.size() && r.is_accepting();
}

// Whether some continuation of `text` could still be accepted.
bool viable(Recognizer& r, std::string_view text) {
  r.reset();
  return r.push_bytes(text) == text.size();
}

// A GBNF string literal for `text` (quotes and backslashes escaped).
std::string gbnf_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Every string of up to `max_length` symbols of `alphabet`.
std::vector<std::string> all_strings(const std::vector<std::string>& alphabet, int max_length) {
  std::vector<std::string> out{""};
  size_t begin = 0;
  for (int length = 1; length <= max_length; ++length) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i)
      for (const std::string& symbol : alphabet) out.push_back(out[i] + symbol);
    begin = end;
  }
  return out;
}

// The reference for Regex: RE2 over the pattern anchored at both ends.
bool whole_match(const std::string& pattern, const std::string& text) {
  auto found = internal::ecma_regex_search("^(?:" + pattern + ")$", text);
  EXPECT_TRUE(found.ok()) << found.status().to_string();
  return found.ok() && *found;
}

// The byte offsets where code points start, and the end.
std::vector<size_t> boundaries(const std::string& text) {
  std::vector<size_t> out;
  for (size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) out.push_back(i);
  out.push_back(text.size());
  return out;
}

// --- GBNF round trip ----------------------------------------------------------

TEST(TextTerminals, ParsePrintParseRoundTrip) {
  const std::vector<std::string> grammars = {
      R"(root ::= Regex("\\d+\"x\"[a-z]{1,3}"))",
      R"(root ::= LazyRegex(".*</think>") "!")",
      R"(root ::= Substring("hello, \"world\" é日本"))",
      R"(root ::= TextExcluding("</think>", "a\\b", "日本") "</think>")",
      R"(root ::= (Regex("[ab]+") | Substring("xyz"))* TextExcluding("q"))",
  };
  for (const std::string& text : grammars) {
    SCOPED_TRACE(text);
    const Grammar first = parse(text);
    const std::string printed = first.to_gbnf();
    const Grammar second = parse(printed);
    ASSERT_EQ(first.rules().size(), second.rules().size());
    for (size_t i = 0; i < first.rules().size(); ++i) {
      EXPECT_EQ(first.rules()[i].name, second.rules()[i].name);
      EXPECT_TRUE(first.rules()[i].body == second.rules()[i].body) << printed;
    }
    EXPECT_EQ(second.to_gbnf(), printed);
  }
  // The parsed forms.
  const Grammar g = parse(R"(root ::= LazyRegex("\\d") Substring("ab") TextExcluding("x", "yz"))");
  const Expr& body = g.rules()[0].body;
  ASSERT_EQ(body.kind, Expr::Kind::kSequence);
  ASSERT_EQ(body.children.size(), 3u);
  EXPECT_EQ(body.children[0].kind, Expr::Kind::kRegex);
  EXPECT_TRUE(body.children[0].lazy);
  EXPECT_EQ(body.children[0].literal, U"\\d");
  EXPECT_EQ(body.children[1].kind, Expr::Kind::kSubstring);
  EXPECT_EQ(body.children[1].literal, U"ab");
  EXPECT_EQ(body.children[2].kind, Expr::Kind::kTextExcluding);
  ASSERT_EQ(body.children[2].children.size(), 2u);
  EXPECT_EQ(body.children[2].children[1].literal, U"yz");
}

// --- Regex and LazyRegex ------------------------------------------------------

TEST(TextTerminals, RegexMatchesTheWholeText) {
  Recognizer r = make(R"(root ::= Regex("[a-z]+\\d{2}"))");
  EXPECT_TRUE(accepts(r, "ab12"));
  EXPECT_TRUE(accepts(r, "z00"));
  EXPECT_FALSE(accepts(r, "ab1"));
  EXPECT_TRUE(viable(r, "ab1"));
  EXPECT_FALSE(viable(r, "ab123"));
  EXPECT_FALSE(viable(r, "1ab12"));
  EXPECT_FALSE(accepts(r, ""));

  // Code points, not bytes: '.' and classes read whole characters.
  Recognizer u = make(R"(root ::= Regex("é+[日本].") "!")");
  EXPECT_TRUE(accepts(u, "ééé日🎉!"));
  EXPECT_TRUE(accepts(u, "é本a!"));
  EXPECT_FALSE(viable(u, "e日"));
  EXPECT_FALSE(accepts(u, "é日!"));  // '.' took the '!'
  EXPECT_FALSE(viable(u, "é語"));

  // ECMA-262 '.' reads no line terminator; [\s\S] reads anything.
  Recognizer dot = make(R"(root ::= Regex(".*") "|" Regex("[\\s\\S]*"))");
  EXPECT_FALSE(viable(dot, "a\nb"));
  EXPECT_TRUE(accepts(dot, "ab|a\nb\r"));

  // Anchors at the edges change nothing.
  Recognizer anchored = make(R"(root ::= Regex("^(abc|d)$"))");
  EXPECT_TRUE(accepts(anchored, "abc"));
  EXPECT_TRUE(accepts(anchored, "d"));
  EXPECT_FALSE(viable(anchored, "abcd"));
}

TEST(TextTerminals, LazyRegexStopsAtTheFirstMatch) {
  Recognizer greedy = make(R"(root ::= Regex(".*</think>"))");
  Recognizer lazy = make(R"(root ::= LazyRegex(".*</think>"))");
  for (Recognizer* r : {&greedy, &lazy}) {
    EXPECT_TRUE(accepts(*r, "</think>"));
    EXPECT_TRUE(accepts(*r, "a</think>"));
    EXPECT_TRUE(accepts(*r, "日本</thin></think>"));
    EXPECT_FALSE(accepts(*r, "a</think"));
  }
  EXPECT_TRUE(accepts(greedy, "a</think>b</think>"));
  EXPECT_FALSE(viable(lazy, "a</think>b"));
  EXPECT_FALSE(accepts(lazy, "a</think>b</think>"));

  // After the terminal, the grammar goes on where the first match ends.
  Recognizer then = make(R"(root ::= LazyRegex("a+") "b")");
  EXPECT_TRUE(accepts(then, "ab"));
  EXPECT_FALSE(viable(then, "aa"));

  // A pattern matching the empty text lazily matches only that.
  Recognizer empty = make(R"(root ::= LazyRegex("x*") "y")");
  EXPECT_TRUE(accepts(empty, "y"));
  EXPECT_FALSE(viable(empty, "x"));
}

TEST(TextTerminals, RegexAgreesWithRe2OnEveryShortString) {
  const std::vector<std::string> patterns = {
      "a*b",   "(ab|a)*c?",     "[ab]{2,3}", "a|bc|",        ".é+",   "(a|é)*b(a|b){2}",
      "[^a]*", "(?:ab)+|c{2,}", "a?b?c?é?",  "[a-c]*c[a-c]", "^a|b$", "\\w\\W?",
  };
  const std::vector<std::string> texts = all_strings({"a", "b", "c", "é"}, 5);
  for (const std::string& pattern : patterns) {
    SCOPED_TRACE(pattern);
    Recognizer greedy = make("root ::= Regex(" + gbnf_string(pattern) + ")");
    Recognizer lazy = make("root ::= LazyRegex(" + gbnf_string(pattern) + ")");
    for (const std::string& text : texts) {
      const bool whole = whole_match(pattern, text);
      EXPECT_EQ(accepts(greedy, text), whole) << "'" << text << "'";
      bool shortest = whole;
      const std::vector<size_t> cuts = boundaries(text);
      for (size_t k = 0; shortest && k + 1 < cuts.size(); ++k)
        shortest = !whole_match(pattern, text.substr(0, cuts[k]));
      EXPECT_EQ(accepts(lazy, text), shortest) << "'" << text << "'";
    }
  }
}

TEST(TextTerminals, RegexInsideLargerGrammars) {
  // Named from several places (inlined in each), repeated, alternated.
  Recognizer r = make(R"(
root ::= num "-" num ("," (word | num))*
num  ::= Regex("0|[1-9][0-9]*")
word ::= Regex("[a-zé]{2,4}")
)");
  EXPECT_TRUE(accepts(r, "0-12"));
  EXPECT_TRUE(accepts(r, "10-0,abc,7,éé"));
  EXPECT_FALSE(viable(r, "01"));
  EXPECT_FALSE(accepts(r, "1-2,a"));
  EXPECT_FALSE(viable(r, "1-2,abcde"));
  // A lookahead right after a leading ^ holds at the start of the text.
  Recognizer reserved = make(R"(root ::= Regex("^(?!(if|else)$)[a-z]+"))");
  EXPECT_TRUE(accepts(reserved, "iff"));
  EXPECT_TRUE(accepts(reserved, "el"));
  EXPECT_FALSE(accepts(reserved, "if"));
  EXPECT_FALSE(accepts(reserved, "else"));
  EXPECT_TRUE(viable(reserved, "else"));
}

// Where a pattern cannot be enforced the error names the terminal and sits
// at its position in the grammar.
TEST(TextTerminals, UnenforceablePatternsFailAtTheirPosition) {
  struct Case {
    const char* pattern;
    ErrorCode code;
  };
  const std::vector<Case> cases = {
      {"(?=a)a", ErrorCode::kUnsupported},
      {"a(?!b)", ErrorCode::kUnsupported},
      {"(a)\\\\1", ErrorCode::kUnsupported},
      {"\\\\bfoo", ErrorCode::kUnsupported},
      {"\\\\p{L}", ErrorCode::kUnsupported},
      {"a^b", ErrorCode::kUnsupported},
      {"a[", ErrorCode::kSyntax},
      {"a{100000}", ErrorCode::kLimitExceeded},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pattern);
    const std::string gbnf =
        "root ::= \"x\" | r\nr ::= \"y\" Regex(\"" + std::string(c.pattern) + "\")";
    auto made = Recognizer::create(parse(gbnf));
    ASSERT_FALSE(made.ok());
    EXPECT_EQ(made.status().code(), c.code) << made.status().to_string();
    EXPECT_EQ(made.status().where().line, 2u);
    EXPECT_EQ(made.status().where().column, 11u);
    EXPECT_NE(made.status().message().find("Regex"), std::string::npos);
  }
  // A pattern that matches no text at all is refused too.
  auto never = Recognizer::create(parse(R"(root ::= "a" LazyRegex("[^\\s\\S]"))"));
  ASSERT_FALSE(never.ok());
  EXPECT_EQ(never.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(never.status().message().find("matches no text"), std::string::npos);
  EXPECT_EQ(never.status().where().column, 14u);
}

// --- Substring ----------------------------------------------------------------

TEST(TextTerminals, SubstringAcceptsExactlyTheSubstrings) {
  Recognizer r = make(R"(root ::= Substring("hello"))");
  for (const char* yes : {"", "h", "ell", "hello", "lo", "o", "ll"}) EXPECT_TRUE(accepts(r, yes));
  for (const char* no : {"hlo", "hellox", "ol", "eh", "lll"}) EXPECT_FALSE(accepts(r, no));
  EXPECT_FALSE(viable(r, "hlo"));

  Recognizer u = make(R"(root ::= "[" Substring("日本語のテキスト") "]")");
  EXPECT_TRUE(accepts(u, "[本語の]"));
  EXPECT_TRUE(accepts(u, "[]"));
  EXPECT_FALSE(viable(u, "[日語"));
  // A token may end inside a character: the first byte of 語 is a prefix.
  EXPECT_TRUE(viable(u, "[本\xE8"));
  EXPECT_FALSE(viable(u, "[本\xE3\x81"));
}

TEST(TextTerminals, SubstringAgreesWithStringSearch) {
  const std::vector<std::string> sources = {"abcabé", "aab", "éaéb", "cccc"};
  const std::vector<std::string> texts = all_strings({"a", "b", "c", "é"}, 5);
  for (const std::string& source : sources) {
    SCOPED_TRACE(source);
    Recognizer r = make("root ::= Substring(" + gbnf_string(source) + ") \";\"");
    for (const std::string& text : texts)
      EXPECT_EQ(accepts(r, text + ";"), source.find(text) != std::string::npos) << text;
  }
}

// --- TextExcluding ------------------------------------------------------------

TEST(TextTerminals, TextExcludingRefusesTheStrings) {
  Recognizer r = make(R"(root ::= TextExcluding("</think>"))");
  for (const char* yes : {"", "a</thin", "<</think", "</think<", "日本 🎉", "</thinK>"})
    EXPECT_TRUE(accepts(r, yes)) << yes;
  EXPECT_FALSE(viable(r, "a</think>"));
  EXPECT_FALSE(viable(r, "<</think>"));

  Recognizer two = make(R"(root ::= TextExcluding("ab", "b"))");
  EXPECT_TRUE(accepts(two, "aaa"));
  EXPECT_TRUE(accepts(two, "ca"));
  EXPECT_FALSE(viable(two, "b"));
  EXPECT_FALSE(viable(two, "cab"));

  Recognizer wide = make(R"(root ::= TextExcluding("日本") "!")");
  EXPECT_FALSE(accepts(wide, "日日本!"));
  EXPECT_TRUE(accepts(wide, "本日!"));
  EXPECT_TRUE(accepts(wide, "日\xF0\x9F\x8E\x89本!"));
  EXPECT_FALSE(viable(wide, "x日本"));

  // The thinking block of a reasoning model.
  Recognizer think =
      make(R"(root ::= "<think>" TextExcluding("</think>") "</think>" Regex("[a-z]{1,8}"))");
  EXPECT_TRUE(accepts(think, "<think>a < b </thin</think>hello"));
  EXPECT_TRUE(accepts(think, "<think></think>x"));
  EXPECT_FALSE(viable(think, "<think>a</think>b</think>"));
  EXPECT_FALSE(viable(think, "<think></think>abcdefghi"));
}

TEST(TextTerminals, TextExcludingAgreesWithStringSearch) {
  const std::vector<std::vector<std::string>> sets = {
      {"ab"}, {"aa", "bc"}, {"é", "ab", "bab"}, {"abc", "b"}, {"aba", "bab", "c"}, {"éé", "aéa"}};
  const std::vector<std::string> texts = all_strings({"a", "b", "c", "é"}, 6);
  for (const auto& set : sets) {
    std::string args;
    for (const std::string& s : set) args += (args.empty() ? "" : ", ") + gbnf_string(s);
    SCOPED_TRACE(args);
    Recognizer r = make("root ::= TextExcluding(" + args + ") \";\"");
    for (const std::string& text : texts) {
      bool clean = true;
      for (const std::string& s : set) clean = clean && text.find(s) == std::string::npos;
      EXPECT_EQ(accepts(r, text + ";"), clean) << text;
    }
  }
}

// Random longer texts over a slightly larger alphabet, for all four.
TEST(TextTerminals, RandomTextsAgreeWithReferences) {
  std::mt19937 rng(12345);
  const std::vector<std::string> alphabet = {"a", "b", "<", "/", ">", "é", "日"};
  const std::string pattern = "(a|<[^>]*>)*b?";
  Recognizer regex = make("root ::= Regex(" + gbnf_string(pattern) + ")");
  const std::string source = "a<b>/a>é日a<b";
  Recognizer sub = make("root ::= Substring(" + gbnf_string(source) + ")");
  Recognizer excl = make(R"(root ::= TextExcluding("<b>", "é日", "//"))");
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    const int length = static_cast<int>(rng() % 10);
    for (int k = 0; k < length; ++k) text += alphabet[rng() % alphabet.size()];
    EXPECT_EQ(accepts(regex, text), whole_match(pattern, text)) << text;
    EXPECT_EQ(accepts(sub, text), source.find(text) != std::string::npos) << text;
    const bool clean = text.find("<b>") == std::string::npos &&
                       text.find("é日") == std::string::npos &&
                       text.find("//") == std::string::npos;
    EXPECT_EQ(accepts(excl, text), clean) << text;
  }
}

// Smaller limits reach the terminals' own budgets.
TEST(TextTerminals, BudgetsFollowMaxStates) {
  RecognizerOptions small;
  small.max_states = 64;
  auto sub = Recognizer::create(parse(R"(root ::= Substring("the quick brown fox jumps"))"), "root",
                                small);
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(sub.status().message().find("RecognizerOptions::max_states"), std::string::npos)
      << sub.status().to_string();
  auto regex = Recognizer::create(parse(R"(root ::= Regex("[a-z]{100}"))"), "root", small);
  ASSERT_FALSE(regex.ok());
  EXPECT_EQ(regex.status().code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(regex.status().message().find("RecognizerOptions::max_states"), std::string::npos)
      << regex.status().to_string();
  // Within the default limits both lower.
  EXPECT_TRUE(Recognizer::create(parse(R"(root ::= Regex("[a-z]{100}"))")).ok());
}

}  // namespace
}  // namespace grammask
