// Tests of the GBNF parser: every feature of docs/GBNF.md, every error with
// its line:column, parse -> print -> parse round trips (fixed, bench and
// random grammars) and robustness on garbage input.
#include "grammask/gbnf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/utf8.h"

namespace grammask {
namespace {

using Kind = Expr::Kind;

// --- helpers ------------------------------------------------------------------

std::u32string decode_all(std::string_view text) {
  std::u32string out;
  size_t pos = 0;
  while (pos < text.size()) {
    uint32_t code_point = 0;
    const size_t length = utf8::decode(text, pos, &code_point);
    if (length == 0) {
      ADD_FAILURE() << "test text is not UTF-8";
      return out;
    }
    out.push_back(static_cast<char32_t>(code_point));
    pos += length;
  }
  return out;
}

Expr lit(std::string_view utf8_text) {
  return Expr::literal_text(decode_all(utf8_text));
}
Expr cls(std::vector<CodePointRange> ranges, bool negated = false) {
  return Expr::char_class(std::move(ranges), negated);
}
Expr seq(std::vector<Expr> items) {
  return Expr::sequence(std::move(items));
}
Expr alt(std::vector<Expr> options) {
  return Expr::alternation(std::move(options));
}
Expr ref(uint32_t rule) {
  return Expr::rule_ref(rule);
}
Expr rep(Expr item, uint32_t min, uint32_t max) {
  return Expr::repeat(std::move(item), min, max);
}
Expr empty() {
  return Expr::sequence({});
}
Expr tok(uint32_t id, bool negated = false) {
  return Expr::token_id(id, negated);
}
Expr tok(std::string_view utf8_text, bool negated = false) {
  return Expr::token_text(decode_all(utf8_text), negated);
}
Expr regex(std::string_view utf8_pattern, bool lazy = false) {
  return Expr::regex(decode_all(utf8_pattern), lazy);
}
Expr substring(std::string_view utf8_text) {
  return Expr::substring(decode_all(utf8_text));
}
Expr excluding(std::vector<std::string_view> utf8_strings) {
  std::vector<std::u32string> strings;
  for (std::string_view s : utf8_strings) strings.push_back(decode_all(s));
  return Expr::text_excluding(std::move(strings));
}

Grammar parse_ok(std::string_view text, std::string_view root = "root") {
  GbnfOptions options;
  options.root = root;
  Result<Grammar> result = parse_gbnf(text, options);
  EXPECT_TRUE(result.ok()) << result.status().to_string() << "\nin:\n" << text;
  if (!result.ok()) return Grammar();
  EXPECT_TRUE(result->validate().ok()) << result->validate().to_string();
  return std::move(result).value();
}

// The body of the rule called `name` (a failure and an empty body if none).
Expr body_of(const Grammar& grammar, std::string_view name) {
  const int index = grammar.find_rule(name);
  if (index < 0) {
    ADD_FAILURE() << "no rule " << name;
    return Expr();
  }
  return grammar.rules()[index].body;
}

// The body of the only rule of a one-rule grammar `root ::= <body_text>`.
Expr parse_body(std::string_view body_text) {
  return body_of(parse_ok("root ::= " + std::string(body_text)), "root");
}

// Checks that parsing with `options` fails with `code` at line:column with a
// message containing `fragment`.
::testing::AssertionResult FailsWith(std::string_view text, const GbnfOptions& options,
                                     ErrorCode code, uint32_t line, uint32_t column,
                                     std::string_view fragment) {
  Result<Grammar> result = parse_gbnf(text, options);
  if (result.ok()) return ::testing::AssertionFailure() << "parsed without error";
  const Status& status = result.status();
  if (status.code() != code) {
    return ::testing::AssertionFailure() << "code is " << to_string(status.code()) << ", not "
                                         << to_string(code) << ": " << status.to_string();
  }
  if (status.where().line != line || status.where().column != column) {
    return ::testing::AssertionFailure()
           << "expected " << line << ":" << column << ", got " << status.to_string();
  }
  if (status.message().find(fragment) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message lacks '" << fragment << "': " << status.to_string();
  }
  return ::testing::AssertionSuccess();
}

// Checks that parsing fails with kSyntax at line:column with a message
// containing `fragment`.
::testing::AssertionResult FailsAt(std::string_view text, uint32_t line, uint32_t column,
                                   std::string_view fragment, std::string_view root = "root") {
  GbnfOptions options;
  options.root = root;
  return FailsWith(text, options, ErrorCode::kSyntax, line, column, fragment);
}

// Checks that parsing fails with kUnsupported at line:column with a message
// containing `fragment`.
::testing::AssertionResult UnsupportedAt(std::string_view text, uint32_t line, uint32_t column,
                                         std::string_view fragment) {
  return FailsWith(text, GbnfOptions(), ErrorCode::kUnsupported, line, column, fragment);
}

// Checks that parsing fails with kLimitExceeded at line:column with a
// message containing `fragment` (which should name the option).
::testing::AssertionResult LimitAt(std::string_view text, uint32_t line, uint32_t column,
                                   std::string_view fragment, const GbnfOptions& options = {}) {
  return FailsWith(text, options, ErrorCode::kLimitExceeded, line, column, fragment);
}

// parse -> print -> parse gives an equal grammar, and printing is stable.
::testing::AssertionResult RoundTrips(std::string_view text, std::string_view root = "root") {
  GbnfOptions options;
  options.root = root;
  Result<Grammar> first = parse_gbnf(text, options);
  if (!first.ok()) return ::testing::AssertionFailure() << first.status().to_string();
  const std::string printed = first->to_gbnf();
  Result<Grammar> second = parse_gbnf(printed, options);
  if (!second.ok()) {
    return ::testing::AssertionFailure()
           << "printed text does not parse: " << second.status().to_string() << "\n"
           << printed;
  }
  if (*first != *second) {
    return ::testing::AssertionFailure() << "round trip changed the grammar:\n" << printed;
  }
  if (second->to_gbnf() != printed) {
    return ::testing::AssertionFailure() << "printing is not stable:\n"
                                         << printed << "---\n"
                                         << second->to_gbnf();
  }
  return ::testing::AssertionSuccess();
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The bench grammars under GRAMMASK_SHARED_DIR/bench/cases/*/grammar.gbnf.
std::vector<std::filesystem::path> bench_grammars() {
  std::vector<std::filesystem::path> paths;
  const std::filesystem::path shared = GRAMMASK_SHARED_DIR;
  if (shared.empty()) return paths;
  std::error_code error;
  const std::filesystem::path cases = shared / "bench" / "cases";
  if (!std::filesystem::is_directory(cases, error)) return paths;
  for (const auto& entry : std::filesystem::directory_iterator(cases, error)) {
    const auto grammar = entry.path() / "grammar.gbnf";
    if (std::filesystem::is_regular_file(grammar, error)) paths.push_back(grammar);
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// --- rules and references -------------------------------------------------------

TEST(GbnfParse, SingleLiteralRule) {
  const Grammar grammar = parse_ok("root ::= \"abc\"");
  ASSERT_EQ(grammar.rules().size(), 1u);
  EXPECT_EQ(grammar.rules()[0].name, "root");
  EXPECT_EQ(grammar.rules()[0].body, lit("abc"));
}

TEST(GbnfParse, RulesInOrderOfDefinitionAndForwardReferences) {
  const Grammar grammar = parse_ok("root ::= a b\nb ::= \"x\"\na ::= \"y\" b\n");
  ASSERT_EQ(grammar.rules().size(), 3u);
  EXPECT_EQ(grammar.rules()[0].name, "root");
  EXPECT_EQ(grammar.rules()[1].name, "b");
  EXPECT_EQ(grammar.rules()[2].name, "a");
  EXPECT_EQ(grammar.rules()[0].body, seq({ref(2), ref(1)}));
  EXPECT_EQ(grammar.rules()[2].body, seq({lit("y"), ref(1)}));
}

TEST(GbnfParse, RuleNamesWithDigitsAndDashes) {
  const Grammar grammar =
      parse_ok("root ::= check-mate r2d2\ncheck-mate ::= \"#\"\nr2d2 ::= \"r\"");
  EXPECT_EQ(grammar.find_rule("check-mate"), 1);
  EXPECT_EQ(grammar.find_rule("r2d2"), 2);
  EXPECT_EQ(body_of(grammar, "root"), seq({ref(1), ref(2)}));
}

TEST(GbnfParse, RecursionIncludingLeftRecursion) {
  const Grammar grammar =
      parse_ok("root ::= root \"+\" term | term\nterm ::= [0-9] | \"(\" root \")\"");
  EXPECT_EQ(body_of(grammar, "root"), alt({seq({ref(0), lit("+"), ref(1)}), ref(1)}));
}

TEST(GbnfParse, CustomRootOption) {
  EXPECT_EQ(parse_ok("start ::= \"a\"", "start").rules().size(), 1u);
  GbnfOptions options;
  options.root = "";  // empty means "root"
  EXPECT_TRUE(parse_gbnf("root ::= \"a\"", options).ok());
  EXPECT_FALSE(parse_gbnf("start ::= \"a\"", options).ok());
}

TEST(GbnfParse, NoSpaceAroundOperatorsNeeded) {
  EXPECT_EQ(parse_body("\"a\"\"b\"|[c]"), alt({seq({lit("a"), lit("b")}), cls({{'c', 'c'}})}));
  const Grammar grammar = parse_ok("root::=x(\"*\"x)*\nx::=\"x\"");
  EXPECT_EQ(body_of(grammar, "root"), seq({ref(1), rep(seq({lit("*"), ref(1)}), 0, kUnbounded)}));
}

TEST(GbnfParse, SourceLocations) {
  const Grammar grammar = parse_ok("# header\nroot ::= \"a\"  b\n  b ::= [x]\n");
  EXPECT_EQ(grammar.rules()[0].where.line, 2u);
  EXPECT_EQ(grammar.rules()[0].where.column, 1u);
  EXPECT_EQ(grammar.rules()[1].where.line, 3u);
  EXPECT_EQ(grammar.rules()[1].where.column, 3u);
  const Expr& body = grammar.rules()[0].body;
  ASSERT_EQ(body.children.size(), 2u);
  EXPECT_EQ(body.children[0].where.column, 10u);
  EXPECT_EQ(body.children[1].where.column, 15u);
  EXPECT_EQ(body.children[1].where.offset, 9u + 14u);
}

// --- terminals ------------------------------------------------------------------

TEST(GbnfParse, LiteralEscapes) {
  EXPECT_EQ(parse_body(R"("\t\n\r\\\"\[\]")"), lit("\t\n\r\\\"[]"));
  EXPECT_EQ(parse_body(R"("\x41\x7a\x00")"), Expr::literal_text(std::u32string(U"Az\0", 3)));
  // \xHH is a code point 0-255, not a raw byte.
  EXPECT_EQ(parse_body(R"("\xFF\xe9")"), Expr::literal_text(U"\u00FF\u00E9"));
  EXPECT_EQ(parse_body(R"("\u00e9\u3042\uFFFD")"), Expr::literal_text(U"\u00E9\u3042\uFFFD"));
  EXPECT_EQ(parse_body(R"("\U0001F600\U0010FFFF\U00000041")"),
            Expr::literal_text(U"\U0001F600\U0010FFFFA"));
}

TEST(GbnfParse, NonAsciiLiteralsAsUtf8) {
  EXPECT_EQ(parse_body("\"héllo ぁ 😀\""), Expr::literal_text(U"h\u00E9llo \u3041 \U0001F600"));
}

TEST(GbnfParse, EmptyLiteralIsEmptySequence) {
  EXPECT_EQ(parse_body("\"\""), empty());
  EXPECT_EQ(parse_body("\"a\" \"\" \"b\""), seq({lit("a"), empty(), lit("b")}));
}

TEST(GbnfParse, CharacterClasses) {
  EXPECT_EQ(parse_body("[abc]"), cls({{'a', 'a'}, {'b', 'b'}, {'c', 'c'}}));
  EXPECT_EQ(parse_body("[a-z0-9_]"), cls({{'a', 'z'}, {'0', '9'}, {'_', '_'}}));
  EXPECT_EQ(parse_body(R"([^"\\\n])"), cls({{'"', '"'}, {'\\', '\\'}, {'\n', '\n'}}, true));
  // '-' first or last is itself; '^' not first is itself.
  EXPECT_EQ(parse_body("[-+]"), cls({{'-', '-'}, {'+', '+'}}));
  EXPECT_EQ(parse_body("[a-z._-]"), cls({{'a', 'z'}, {'.', '.'}, {'_', '_'}, {'-', '-'}}));
  EXPECT_EQ(parse_body("[a^]"), cls({{'a', 'a'}, {'^', '^'}}));
  EXPECT_EQ(parse_body("[--/]"), cls({{'-', '/'}}));
  EXPECT_EQ(parse_body(R"([\-\^\]\[\"])"),
            cls({{'-', '-'}, {'^', '^'}, {']', ']'}, {'[', '['}, {'"', '"'}}));
  EXPECT_EQ(parse_body(R"([\x00-\x1F\x7F])"), cls({{0, 0x1F}, {0x7F, 0x7F}}));
  EXPECT_EQ(parse_body("[\"(]"), cls({{'"', '"'}, {'(', '('}}));
  EXPECT_EQ(parse_body("[^]"), cls({}, true));
  EXPECT_EQ(parse_body("[]"), cls({}));
  EXPECT_EQ(parse_body("[a-a]"), cls({{'a', 'a'}}));
}

TEST(GbnfParse, UnicodeClasses) {
  EXPECT_EQ(parse_body("[ぁ-ゟ]"), cls({{0x3041, 0x309F}}));
  EXPECT_EQ(parse_body(R"([\u3041-\u309F])"), cls({{0x3041, 0x309F}}));
  EXPECT_EQ(parse_body("[^ぁ-ゟ一-龯]"), cls({{0x3041, 0x309F}, {0x4E00, 0x9FAF}}, true));
  EXPECT_EQ(parse_body(R"([\x80-\U0010FFFF])"), cls({{0x80, 0x10FFFF}}));
  EXPECT_EQ(parse_body("[😀-😏é]"), cls({{0x1F600, 0x1F60F}, {0xE9, 0xE9}}));
}

TEST(GbnfParse, AnyChar) {
  EXPECT_EQ(parse_body("."), Expr::any_char());
  EXPECT_EQ(parse_body(".* \".\""), seq({rep(Expr::any_char(), 0, kUnbounded), lit(".")}));
}

// --- operators ------------------------------------------------------------------

// --- token items and built-in terminals ------------------------------------------

TEST(GbnfParse, TokenItemsById) {
  const Expr item = parse_body("<[128009]>");
  EXPECT_EQ(item.kind, Kind::kToken);
  EXPECT_EQ(item.token, 128009u);
  EXPECT_TRUE(item.literal.empty());
  EXPECT_FALSE(item.negated);
  EXPECT_EQ(item, tok(128009));
  EXPECT_NE(item, tok(128008));
  EXPECT_EQ(parse_body("<[0]>"), tok(0));
  EXPECT_EQ(parse_body("<[007]>"), tok(7));
  EXPECT_EQ(parse_body("<[4294967295]>"), tok(UINT32_MAX));
  EXPECT_EQ(parse_body("!<[2]>"), tok(2, true));
}

TEST(GbnfParse, TokenItemsByText) {
  const Expr item = parse_body("<|im_end|>");
  EXPECT_EQ(item.kind, Kind::kToken);
  EXPECT_EQ(item.literal, U"<|im_end|>");  // written with its brackets
  EXPECT_FALSE(item.negated);
  EXPECT_EQ(parse_body("!<|im_end|>"), tok("<|im_end|>", true));
  EXPECT_EQ(parse_body("<think>"), tok("<think>"));
  EXPECT_EQ(parse_body("</think>"), tok("</think>"));
  // Everything up to the first '>' on the line, as written: no escapes, no
  // comments, no strings.
  EXPECT_EQ(parse_body("<a b>"), tok("<a b>"));
  EXPECT_EQ(parse_body("<#>"), tok("<#>"));
  EXPECT_EQ(parse_body(R"(<"\n>)"), tok(R"(<"\n>)"));
  EXPECT_EQ(parse_body("<a<b>"), tok("<a<b>"));
  EXPECT_EQ(parse_body("<é😀>"), tok("<é😀>"));
  // A token item is not the literal that spells it.
  EXPECT_EQ(parse_body("\"<|im_end|>\""), lit("<|im_end|>"));
  EXPECT_NE(parse_body("\"<|im_end|>\""), parse_body("<|im_end|>"));
}

TEST(GbnfParse, TokenItemsInSequencesAndRepeats) {
  EXPECT_EQ(
      parse_body("<think> (!</think>)* </think> \"\\n\""),
      seq({tok("<think>"), rep(tok("</think>", true), 0, kUnbounded), tok("</think>"), lit("\n")}));
  EXPECT_EQ(parse_body("!<|end|>*"), rep(tok("<|end|>", true), 0, kUnbounded));
  EXPECT_EQ(parse_body("<[5]>{2,3} | <x>?"), alt({rep(tok(5), 2, 3), rep(tok("<x>"), 0, 1)}));
  EXPECT_EQ(parse_body("\"a\"<[5]>\"b\"!<[6]>"), seq({lit("a"), tok(5), lit("b"), tok(6, true)}));
  const Grammar grammar = parse_ok("root ::= (\"a\"\n  !<[9]> <x>)");
  const Expr& body = grammar.rules()[0].body;
  ASSERT_EQ(body.children.size(), 3u);
  EXPECT_EQ(body.children[1].where.line, 2u);
  EXPECT_EQ(body.children[1].where.column, 3u);
  EXPECT_EQ(body.children[2].where.column, 10u);
}

TEST(GbnfParse, BuiltinTextTerminals) {
  // The argument is a GBNF literal: "\\d" is the pattern \d.
  const Expr re = parse_body(R"(Regex("\\d+"))");
  EXPECT_EQ(re.kind, Kind::kRegex);
  EXPECT_EQ(re.literal, U"\\d+");
  EXPECT_FALSE(re.lazy);
  EXPECT_EQ(parse_body(R"(LazyRegex(".*</think>"))"), regex(".*</think>", true));
  EXPECT_EQ(parse_body(R"(Regex("\"[^\"]*\""))"), regex(R"("[^"]*")"));
  EXPECT_EQ(parse_body(R"(Regex(""))"), regex(""));
  EXPECT_EQ(parse_body(R"(Substring("hello world"))"), substring("hello world"));
  EXPECT_EQ(parse_body(R"(Substring("\u00e9\t"))"), substring("é\t"));
  EXPECT_EQ(parse_body(R"(Substring(""))"), substring(""));
  EXPECT_EQ(parse_body(R"(TextExcluding("</think>") "</think>")"),
            seq({excluding({"</think>"}), lit("</think>")}));
  EXPECT_EQ(parse_body(R"(TextExcluding("\n\n", "```", "a"))"), excluding({"\n\n", "```", "a"}));
  // Spaces, line breaks and comments may surround the strings.
  EXPECT_EQ(parse_body("TextExcluding(\n  \"a\" , # first\n  \"b\"\n)"), excluding({"a", "b"}));
  EXPECT_EQ(parse_body("Regex( \"a\"\t)"), regex("a"));
  // Calls are items like any other.
  EXPECT_EQ(parse_body(R"(Regex("a")* | Substring("b"){2})"),
            alt({rep(regex("a"), 0, kUnbounded), rep(substring("b"), 2, 2)}));
  EXPECT_NE(parse_body(R"(Regex("a"))"), parse_body(R"(LazyRegex("a"))"));
  EXPECT_NE(parse_body(R"(Regex("a"))"), parse_body(R"(Substring("a"))"));
}

TEST(GbnfParse, BuiltinLocations) {
  const Grammar grammar = parse_ok("root ::= \"x\" TextExcluding(\"ab\",\n \"c\")");
  const Expr& call = grammar.rules()[0].body.children[1];
  EXPECT_EQ(call.where.column, 14u);
  ASSERT_EQ(call.children.size(), 2u);
  EXPECT_EQ(call.children[0].where.line, 1u);
  EXPECT_EQ(call.children[0].where.column, 28u);
  EXPECT_EQ(call.children[1].where.line, 2u);
  EXPECT_EQ(call.children[1].where.column, 2u);
}

TEST(GbnfParse, BuiltinNamesNeedAnAdjacentParenthesis) {
  // With a space, `Regex` is a rule reference followed by a group.
  Grammar grammar = parse_ok("root ::= Regex (\"a\")\nRegex ::= \"x\"");
  EXPECT_EQ(body_of(grammar, "root"), seq({ref(1), lit("a")}));
  grammar = parse_ok("root ::= Substring\t(\"a\" | \"b\")\nSubstring ::= \"x\"");
  EXPECT_EQ(body_of(grammar, "root"), seq({ref(1), alt({lit("a"), lit("b")})}));
  grammar = parse_ok(
      "root ::= TextExcluding | LazyRegex\nTextExcluding ::= \"x\"\n"
      "LazyRegex ::= \"y\"");
  EXPECT_EQ(body_of(grammar, "root"), alt({ref(1), ref(2)}));
  // A rule may be named like a built-in and coexist with calls.
  grammar = parse_ok("root ::= Regex(\"a\") Regex\nRegex ::= \"x\"");
  EXPECT_EQ(body_of(grammar, "root"), seq({regex("a"), ref(1)}));
  // Names are case-sensitive, and only the four names are built-ins.
  grammar = parse_ok("root ::= regex(\"a\") xRegex(\"b\")\nregex ::= \"x\"\nxRegex ::= \"y\"");
  EXPECT_EQ(body_of(grammar, "root"), seq({ref(1), lit("a"), ref(2), lit("b")}));
  // Without a definition the name is an undefined rule, as before.
  EXPECT_TRUE(FailsAt("root ::= Regex (\"a\")", 1, 10, "undefined rule 'Regex'"));
}

TEST(GbnfParse, SequenceAndAlternation) {
  EXPECT_EQ(parse_body("\"a\" \"b\" | \"c\""), alt({seq({lit("a"), lit("b")}), lit("c")}));
  EXPECT_EQ(parse_body("\"a\" (\"b\" | \"c\")"), seq({lit("a"), alt({lit("b"), lit("c")})}));
}

TEST(GbnfParse, GroupsAroundOneItemVanish) {
  EXPECT_EQ(parse_body("(((\"a\")))"), lit("a"));
  EXPECT_EQ(parse_body("( \"a\" )*"), rep(lit("a"), 0, kUnbounded));
  EXPECT_EQ(parse_body("()"), empty());
}

TEST(GbnfParse, NestedGroupsKeepTheirStructure) {
  EXPECT_EQ(parse_body("(\"a\" \"b\") \"c\""), seq({seq({lit("a"), lit("b")}), lit("c")}));
  EXPECT_EQ(parse_body("(\"a\" | \"b\") | \"c\""), alt({alt({lit("a"), lit("b")}), lit("c")}));
}

// The parser reuses the vectors of closed groups for later groups and rules:
// nothing read earlier may show up in them.
TEST(GbnfParse, GroupsAndRulesDoNotShareItems) {
  const Grammar grammar = parse_ok(
      "root ::= \"a\" (\"b\" \"c\" \"d\" | \"e\") (\"f\" | \"g\" \"h\") | \"i\"\n"
      "next ::= (\"j\" (\"k\" \"l\")) \"m\" | \"n\" \"o\"\n"
      "last ::= \"\\\"quoted\\\" text\" \"p\"\n");
  EXPECT_EQ(body_of(grammar, "root"),
            alt({seq({lit("a"), alt({seq({lit("b"), lit("c"), lit("d")}), lit("e")}),
                      alt({lit("f"), seq({lit("g"), lit("h")})})}),
                 lit("i")}));
  EXPECT_EQ(body_of(grammar, "next"),
            alt({seq({seq({lit("j"), seq({lit("k"), lit("l")})}), lit("m")}),
                 seq({lit("n"), lit("o")})}));
  EXPECT_EQ(body_of(grammar, "last"), seq({lit("\"quoted\" text"), lit("p")}));
}

TEST(GbnfParse, Repetitions) {
  EXPECT_EQ(parse_body("\"a\"*"), rep(lit("a"), 0, kUnbounded));
  EXPECT_EQ(parse_body("\"a\"+"), rep(lit("a"), 1, kUnbounded));
  EXPECT_EQ(parse_body("\"a\"?"), rep(lit("a"), 0, 1));
  EXPECT_EQ(parse_body("[0-9]{4}"), rep(cls({{'0', '9'}}), 4, 4));
  EXPECT_EQ(parse_body("[0-9]{2,}"), rep(cls({{'0', '9'}}), 2, kUnbounded));
  EXPECT_EQ(parse_body("[0-9]{2,5}"), rep(cls({{'0', '9'}}), 2, 5));
  EXPECT_EQ(parse_body("[0-9]{0,5}"), rep(cls({{'0', '9'}}), 0, 5));
  EXPECT_EQ(parse_body("[0-9]{0}"), rep(cls({{'0', '9'}}), 0, 0));
  EXPECT_EQ(parse_body("[0-9]{ 1 , 3 }"), rep(cls({{'0', '9'}}), 1, 3));
  EXPECT_EQ(parse_body(". {100000}"), rep(Expr::any_char(), 100000, 100000));
  EXPECT_EQ(parse_body("\"a\" *"), rep(lit("a"), 0, kUnbounded));
}

TEST(GbnfParse, RepeatAppliesToPrecedingItemOnly) {
  EXPECT_EQ(parse_body("\"a\" \"b\"*"), seq({lit("a"), rep(lit("b"), 0, kUnbounded)}));
  EXPECT_EQ(parse_body("(\"a\" \"b\")+"), rep(seq({lit("a"), lit("b")}), 1, kUnbounded));
  EXPECT_EQ(parse_body("\"ab\"?"), rep(lit("ab"), 0, 1));
  const Grammar grammar = parse_ok("root ::= x{2,3}\nx ::= \"x\"");
  EXPECT_EQ(body_of(grammar, "root"), rep(ref(1), 2, 3));
}

TEST(GbnfParse, StackedRepeats) {
  EXPECT_EQ(parse_body("\"a\"*?"), rep(rep(lit("a"), 0, kUnbounded), 0, 1));
  EXPECT_EQ(parse_body("\"a\"{2}{3}"), rep(rep(lit("a"), 2, 2), 3, 3));
}

TEST(GbnfParse, Comments) {
  const Grammar grammar = parse_ok(
      "# leading comment\n"
      "root ::= \"a\" # trailing \"comment\" with ( and |\n"
      "  # indented comment line\n"
      "\n"
      "b ::= (\"x\" # inside a group\n"
      "  | \"y\") #\n");
  EXPECT_EQ(body_of(grammar, "root"), lit("a"));
  EXPECT_EQ(body_of(grammar, "b"), alt({lit("x"), lit("y")}));
}

TEST(GbnfParse, HashInsideLiteralsAndClassesIsNotAComment) {
  EXPECT_EQ(parse_body("\"#\" [#]"), seq({lit("#"), cls({{'#', '#'}})}));
}

TEST(GbnfParse, EmptyAlternatives) {
  EXPECT_EQ(parse_body("\"x\" | "), alt({lit("x"), empty()}));
  EXPECT_EQ(parse_body("( | \"b\")"), alt({empty(), lit("b")}));
  EXPECT_EQ(
      parse_body("| \" \" | \"\\n\" [ \\t]{0,20}"),
      alt({empty(), lit(" "), seq({lit("\n"), rep(cls({{' ', ' '}, {'\t', '\t'}}), 0, 20)})}));
  EXPECT_EQ(parse_body(""), empty());
  // An alternative left empty at the end of a line, followed by the next rule.
  const Grammar grammar = parse_ok("root ::= \"a\" opt\nopt ::= \"b\" | \nnext ::= \"c\"\n");
  EXPECT_EQ(body_of(grammar, "opt"), alt({lit("b"), empty()}));
  EXPECT_EQ(body_of(grammar, "next"), lit("c"));
  const Grammar commented = parse_ok("root ::= \"a\" |\n# comment\n\nnext ::= \"b\"");
  EXPECT_EQ(body_of(commented, "root"), alt({lit("a"), empty()}));
}

TEST(GbnfParse, NewlineAfterBarContinuesTheRule) {
  const Grammar grammar =
      parse_ok("root ::= \"a\" |\n  \"b\" |\n\n  # comment\n  \"c\"\nx ::= \"d\"");
  EXPECT_EQ(body_of(grammar, "root"), alt({lit("a"), lit("b"), lit("c")}));
}

TEST(GbnfParse, BodyMayStartOnTheNextLine) {
  const Grammar grammar = parse_ok("root ::=\n    \"a\" |\n    \"b\"\nempty ::=\nlast ::= \"c\"");
  EXPECT_EQ(body_of(grammar, "root"), alt({lit("a"), lit("b")}));
  EXPECT_EQ(body_of(grammar, "empty"), empty());
}

TEST(GbnfParse, NewlinesInsideParentheses) {
  EXPECT_EQ(
      parse_body("\"{\" (\n    \"a\"\n    (\",\" \"a\")*\n  )? \"}\""),
      seq({lit("{"), rep(seq({lit("a"), rep(seq({lit(","), lit("a")}), 0, kUnbounded)}), 0, 1),
           lit("}")}));
}

TEST(GbnfParse, NewlineEndsTheRuleBody) {
  const Grammar grammar = parse_ok("root ::= \"a\" b\n\n   b ::= \"c\"  # done\n");
  EXPECT_EQ(body_of(grammar, "root"), seq({lit("a"), ref(1)}));
  EXPECT_EQ(body_of(grammar, "b"), lit("c"));
}

TEST(GbnfParse, CrlfLineEndings) {
  const std::string lf = "root ::= a |\n  \"b\" # c\n\na ::= (\"x\"\n \"y\")*\n";
  std::string crlf;
  for (const char c : lf) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  EXPECT_EQ(parse_ok(crlf), parse_ok(lf));
  EXPECT_TRUE(FailsAt("root ::= \"a\"\r\nroot ::= \"b\"\r\n", 2, 1, "duplicate"));
}

TEST(GbnfParse, ByteOrderMarkIsSkipped) {
  EXPECT_EQ(parse_ok("\xEF\xBB\xBFroot ::= \"a\""), parse_ok("root ::= \"a\""));
}

TEST(GbnfParse, DeepButAllowedNesting) {
  const std::string text = "root ::= " + std::string(1000, '(') + "\"a\"" + std::string(1000, ')');
  EXPECT_EQ(body_of(parse_ok(text), "root"), lit("a"));
}

// --- errors ---------------------------------------------------------------------

TEST(GbnfErrors, UndefinedRuleAtItsFirstReference) {
  EXPECT_TRUE(FailsAt("root ::= foo", 1, 10, "undefined rule 'foo'"));
  EXPECT_TRUE(
      FailsAt("root ::= a\na ::= \"x\" bar | bar\nb ::= bar baz", 2, 11, "undefined rule 'bar'"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"\nx ::= y\nz ::= x w y", 2, 7, "undefined rule 'y'"));
}

TEST(GbnfErrors, MissingStartRule) {
  EXPECT_TRUE(FailsAt("a ::= \"x\"", 1, 1, "missing start rule 'root'"));
  EXPECT_TRUE(FailsAt("", 1, 1, "missing start rule 'root'"));
  EXPECT_TRUE(FailsAt("# only a comment\n", 1, 1, "missing start rule"));
  EXPECT_TRUE(FailsAt("root ::= \"x\"", 1, 1, "missing start rule 'start'", "start"));
}

TEST(GbnfErrors, DuplicateRule) {
  EXPECT_TRUE(FailsAt("root ::= a\na ::= \"x\"\n\n  a ::= \"y\"\n", 4, 3,
                      "duplicate rule 'a': first defined on line 2"));
  EXPECT_TRUE(FailsAt("root ::= \"x\"\nroot ::= \"y\"", 2, 1, "first defined on line 1"));
}

TEST(GbnfErrors, BadEscapes) {
  EXPECT_TRUE(FailsAt(R"(root ::= "\q")", 1, 11, "bad escape '\\q'"));
  EXPECT_TRUE(FailsAt(R"(root ::= "ab\/")", 1, 13, "bad escape"));
  EXPECT_TRUE(FailsAt(R"(root ::= "\x4")", 1, 11, "expected 2 hex digits"));
  EXPECT_TRUE(FailsAt(R"(root ::= "\xZZ")", 1, 11, "expected 2 hex digits"));
  EXPECT_TRUE(FailsAt(R"(root ::= "\u12G4")", 1, 11, "expected 4 hex digits"));
  EXPECT_TRUE(FailsAt(R"(root ::= "\U0001F60")", 1, 11, "expected 8 hex digits"));
  EXPECT_TRUE(FailsAt(R"(root ::= "\U00110000")", 1, 11, "beyond"));
  EXPECT_TRUE(FailsAt(R"(root ::= "\UFFFFFFFF")", 1, 11, "beyond"));
  EXPECT_TRUE(FailsAt(R"(root ::= "\uD800")", 1, 11, "surrogate"));
  EXPECT_TRUE(FailsAt(R"(root ::= "\U0000DFFF")", 1, 11, "surrogate"));
  EXPECT_TRUE(FailsAt(R"(root ::= [\uDC00-\uDFFF])", 1, 11, "surrogate"));
  EXPECT_TRUE(FailsAt(R"(root ::= "a\-b")", 1, 12, "only allowed inside a character class"));
  EXPECT_TRUE(FailsAt(R"(root ::= "\^")", 1, 11, "only allowed inside a character class"));
  EXPECT_TRUE(FailsAt(R"(root ::= [\d])", 1, 11, "bad escape '\\d'"));
  EXPECT_TRUE(FailsAt("root ::= \"\\é\"", 1, 11, "bad escape '\\é'"));
  EXPECT_TRUE(FailsAt("root ::= \"\\", 1, 11, "bad escape"));
}

TEST(GbnfErrors, BadBounds) {
  EXPECT_TRUE(FailsAt("root ::= \"a\"{3,1}", 1, 13, "minimum 3 is greater than maximum 1"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"{}", 1, 14, "expected a number after '{'"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"{,3}", 1, 14, "expected a number after '{'"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"{-1}", 1, 14, "expected a number"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"{1,2", 1, 17, "expected '}'"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"{1 2}", 1, 16, "expected ',' or '}'"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"{1,x}", 1, 16, "expected a number or '}'"));
}

TEST(GbnfErrors, RepeatWithoutOperand) {
  EXPECT_TRUE(FailsAt("root ::= *", 1, 10, "'*' must follow a symbol or group"));
  EXPECT_TRUE(FailsAt("root ::= \"a\" | +\"b\"", 1, 16, "'+' must follow"));
  EXPECT_TRUE(FailsAt("root ::= ( ?)", 1, 12, "'?' must follow"));
  EXPECT_TRUE(FailsAt("root ::= {2}", 1, 10, "'{' must follow"));
}

TEST(GbnfErrors, UnclosedString) {
  EXPECT_TRUE(FailsAt("root ::= \"abc", 1, 10, "unclosed string: expected '\"'"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"\nx ::= \"abc\ny ::= \"d\"", 2, 7,
                      "unclosed string: expected '\"' before the end of the line"));
  EXPECT_TRUE(FailsAt("root ::= \"abc\\\"", 1, 10, "unclosed string"));
}

TEST(GbnfErrors, UnclosedClass) {
  EXPECT_TRUE(FailsAt("root ::= [abc", 1, 10, "unclosed character class: expected ']'"));
  EXPECT_TRUE(FailsAt("root ::= \"x\" [a-\n", 1, 14, "unclosed character class"));
  EXPECT_TRUE(FailsAt("root ::= [\\]", 1, 10, "unclosed character class"));
  EXPECT_TRUE(FailsAt("root ::= [^", 1, 10, "unclosed character class"));
}

TEST(GbnfErrors, UnclosedGroup) {
  EXPECT_TRUE(FailsAt("root ::= (\"a\" \"b\"", 1, 10, "unclosed group: expected ')'"));
  EXPECT_TRUE(FailsAt("root ::= \"x\" ((\"a\")\n  \"b\"\n", 1, 14, "unclosed group"));
  EXPECT_TRUE(FailsAt("root ::= (\"a\"\nnext ::= \"b\"", 1, 10, "unclosed group"));
}

TEST(GbnfErrors, UnmatchedCloseParen) {
  EXPECT_TRUE(FailsAt("root ::= \"a\")", 1, 13, "unmatched ')'"));
}

TEST(GbnfErrors, BadRange) {
  EXPECT_TRUE(FailsAt("root ::= [a-cz-a]", 1, 14, "bad range: start 'z'"));
  EXPECT_TRUE(FailsAt("root ::= [ゟ-ぁ]", 1, 11, "U+309F"));
  EXPECT_TRUE(FailsAt("root ::= [a--]", 1, 11, "bad range"));
}

TEST(GbnfErrors, InvalidUtf8Anywhere) {
  EXPECT_TRUE(FailsAt("root ::= \"\xC3\x28\"", 1, 11, "invalid UTF-8: byte 0xC3"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"\n# comment \xFF\n", 2, 11, "invalid UTF-8: byte 0xFF"));
  EXPECT_TRUE(FailsAt("root ::= [\xED\xA0\x80]", 1, 11, "invalid UTF-8"));        // a surrogate
  EXPECT_TRUE(FailsAt("root ::= \"\xC0\xAF\"", 1, 11, "invalid UTF-8"));          // overlong
  EXPECT_TRUE(FailsAt("root ::= \"\xF4\x90\x80\x80\"", 1, 11, "invalid UTF-8"));  // > U+10FFFF
  EXPECT_TRUE(FailsAt("root ::= \"\xE3\x81", 1, 11, "invalid UTF-8"));            // truncated
  EXPECT_TRUE(FailsAt("ro\x80ot ::= \"a\"", 1, 3, "invalid UTF-8: byte 0x80"));
}

TEST(GbnfErrors, MissingDefinitionOperator) {
  EXPECT_TRUE(FailsAt("root = \"a\"", 1, 6, "expected '::=' after rule name 'root'"));
  EXPECT_TRUE(FailsAt("root \"a\"", 1, 6, "expected '::='"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"\nnext\n::= \"b\"", 2, 5, "expected '::='"));
  EXPECT_TRUE(FailsAt("root :: \"a\"", 1, 6, "expected '::='"));
  EXPECT_TRUE(FailsAt("root", 1, 5, "found the end of the text"));
}

TEST(GbnfErrors, UnexpectedCharacter) {
  EXPECT_TRUE(FailsAt("root ::= \"a\" @", 1, 14, "unexpected '@'"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"\n\"b\"", 2, 1, "expected a rule name"));
  EXPECT_TRUE(FailsAt("root ::= \"a\" ::= \"b\"", 1, 14, "unexpected ':'"));
  EXPECT_TRUE(FailsAt("root ::= é", 1, 10, "unexpected U+00E9"));
  EXPECT_TRUE(FailsAt(std::string("root ::= \"a\" \0", 14), 1, 14, "unexpected U+0000"));
  EXPECT_TRUE(FailsAt("root ::= \"a\" b ::= \"c\"", 1, 14,
                      "expected a newline before the definition of rule 'b'"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"\n  \"b\" ::= \"c\"", 2, 3, "expected a rule name"));
}

TEST(GbnfErrors, TokenItems) {
  EXPECT_TRUE(FailsAt("root ::= ! \"a\"", 1, 10, "expected a token item after '!'"));
  EXPECT_TRUE(FailsAt("root ::= !\"a\"", 1, 10, "found '\"'"));
  EXPECT_TRUE(FailsAt("root ::= \"a\" !", 1, 14, "found the end of the text"));
  EXPECT_TRUE(FailsAt("root ::= !!<a>", 1, 10, "expected a token item after '!'"));
  EXPECT_TRUE(FailsAt("root ::= <[abc]>", 1, 12, "expected a token id after '<[', found 'a'"));
  EXPECT_TRUE(FailsAt("root ::= <[]>", 1, 12, "expected a token id"));
  EXPECT_TRUE(FailsAt("root ::= <[-1]>", 1, 12, "expected a token id"));
  EXPECT_TRUE(FailsAt("root ::= <[12>", 1, 14, "expected ']>' to close the token id"));
  EXPECT_TRUE(FailsAt("root ::= <[12]", 1, 14, "found ']'"));
  EXPECT_TRUE(FailsAt("root ::= <[1 2]>", 1, 13, "expected ']>'"));
  EXPECT_TRUE(
      LimitAt("root ::= <[99999999999]>", 1, 10, "token id too large: the most is 4294967295"));
  EXPECT_TRUE(LimitAt("root ::= \"a\" |\n  !<[4294967296]>", 2, 4, "token id too large"));
  EXPECT_TRUE(
      FailsAt("root ::= <|im_end", 1, 10, "unclosed token item: expected '>' on the same line"));
  EXPECT_TRUE(FailsAt("root ::= \"a\"\nx ::= <|im_end\n|>", 2, 7, "unclosed token item"));
  EXPECT_TRUE(FailsAt("root ::= !<a\r\n>", 1, 11, "unclosed token item"));
  EXPECT_TRUE(FailsAt("root ::= <>", 1, 10, "empty token item '<>'"));
  EXPECT_TRUE(FailsAt("root ::= !<>", 1, 11, "empty token item"));
  // The tail of the line after a token item is read as usual.
  EXPECT_TRUE(FailsAt("root ::= <a>>", 1, 13, "unexpected '>'"));
}

TEST(GbnfErrors, BuiltinCalls) {
  EXPECT_TRUE(
      FailsAt("root ::= Regex(", 1, 16, "Regex(...) takes one string; found the end of the text"));
  EXPECT_TRUE(FailsAt("root ::= Regex()", 1, 16, "Regex(...) takes one string; found ')'"));
  EXPECT_TRUE(FailsAt("root ::= Regex(a)", 1, 16, "takes one string; found 'a'"));
  EXPECT_TRUE(FailsAt("root ::= LazyRegex([a-z])", 1, 20, "LazyRegex(...) takes one string"));
  EXPECT_TRUE(FailsAt("root ::= Regex(\"a\", \"b\")", 1, 19,
                      "expected ')' to close Regex(...), found ','"));
  EXPECT_TRUE(
      FailsAt("root ::= Substring(\"a\" \"b\")", 1, 24, "expected ')' to close Substring(...)"));
  EXPECT_TRUE(FailsAt("root ::= Regex(\"a\"", 1, 19, "found the end of the text"));
  EXPECT_TRUE(FailsAt("root ::= Regex(\"a", 1, 16, "unclosed string"));
  EXPECT_TRUE(FailsAt("root ::= Regex(\"\\d\")", 1, 17, "bad escape '\\d'"));
  EXPECT_TRUE(FailsAt("root ::= TextExcluding()", 1, 24,
                      "TextExcluding(...) takes one or more strings; found ')'"));
  EXPECT_TRUE(FailsAt("root ::= TextExcluding(\"\")", 1, 24,
                      "TextExcluding(...) cannot exclude the empty string"));
  EXPECT_TRUE(FailsAt("root ::= TextExcluding(\"a\",\n  \"\")", 2, 3, "cannot exclude the empty"));
  EXPECT_TRUE(FailsAt("root ::= TextExcluding(\"a\",)", 1, 28, "takes one or more strings"));
  EXPECT_TRUE(FailsAt("root ::= TextExcluding(\"a\" \"b\")", 1, 28,
                      "expected ',' or ')' to close TextExcluding(...)"));
}

TEST(GbnfErrors, LookaheadIsUnsupported) {
  EXPECT_TRUE(UnsupportedAt("root ::= \"a\" (= \"b\")", 1, 14,
                            "lookahead assertions '(= ...)' are not supported"));
  EXPECT_TRUE(UnsupportedAt("root ::= (=\"b\")", 1, 10, "lookahead"));
  EXPECT_TRUE(UnsupportedAt("root ::= x\nx ::= \"a\" ( = [0-9])", 2, 11, "lookahead"));
  EXPECT_TRUE(UnsupportedAt("root ::= (\"a\" (\n  # why\n  = \"b\"))", 1, 15, "lookahead"));
  // '=' elsewhere is still a syntax error.
  EXPECT_TRUE(FailsAt("root ::= \"a\" =", 1, 14, "unexpected '='"));
  EXPECT_TRUE(FailsAt("root ::= (\"a\" =)", 1, 15, "unexpected '='"));
}

// --- resource bounds ------------------------------------------------------------

TEST(GbnfLimits, NestingTooDeep) {
  const std::string deep = "root ::= " + std::string(1001, '(') + "\"a\"" + std::string(1001, ')');
  EXPECT_TRUE(LimitAt(deep, 1, 1010, "nesting too deep: more than 1000 levels"));
  EXPECT_TRUE(LimitAt(deep, 1, 1010, "GbnfOptions::max_nesting"));
  // Far deeper than any stack allows: still a clean error.
  EXPECT_TRUE(LimitAt("root ::= " + std::string(200000, '('), 1, 1010, "nesting too deep"));
  EXPECT_TRUE(LimitAt("root ::= \"a\"" + std::string(5000, '*'), 1, 1012, "nesting too deep"));
  EXPECT_TRUE(FailsAt("root ::= " + std::string(100000, '['), 1, 10, "unclosed character class"));
  // Few parentheses, but each level adds an alternation and a sequence.
  std::string tall = "root ::= ";
  for (int i = 0; i < 600; ++i) tall += "(\"a\" | \"b\" ";
  tall += "\"c\"" + std::string(600, ')');
  const Result<Grammar> result = parse_gbnf(tall);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(result.status().message().find("nesting too deep"), std::string::npos)
      << result.status().to_string();
  // The bound is an option.
  GbnfOptions shallow;
  shallow.max_nesting = 3;
  parse_ok("root ::= (((\"a\")))");
  EXPECT_TRUE(parse_gbnf("root ::= (((\"a\")))", shallow).ok());
  EXPECT_TRUE(LimitAt("root ::= ((((\"a\"))))", 1, 13, "more than 3 levels", shallow));
  EXPECT_TRUE(LimitAt("root ::= \"a\"**\nx ::= \"b\"***", 2, 12, "max_nesting", shallow));
}

TEST(GbnfLimits, RepeatBound) {
  EXPECT_TRUE(parse_gbnf("root ::= \"a\"{100000}").ok());
  EXPECT_TRUE(LimitAt("root ::= \"a\"{100001}", 1, 14,
                      "repetition bound 100001 is too large: the limit is 100000 "
                      "(GbnfOptions::max_repeat_bound)"));
  EXPECT_TRUE(LimitAt("root ::= \"a\"{0,100001}", 1, 16, "too large"));
  EXPECT_TRUE(LimitAt("root ::= \"a\"{0,99999999999999999999999999999}", 1, 16,
                      "bound 999999999999999999999999... is too large"));
  EXPECT_TRUE(LimitAt("root ::= \"a\"{4294967295,}", 1, 14, "too large"));
  GbnfOptions options;
  options.max_repeat_bound = 10;
  EXPECT_TRUE(parse_gbnf("root ::= \"a\"{2,10} \"b\"{10,}", options).ok());
  EXPECT_TRUE(LimitAt("root ::= \"a\"{2,10} |\n  \"b\"{11}", 2, 7, "the limit is 10", options));
  // The largest bound never turns into "unbounded".
  options.max_repeat_bound = UINT32_MAX;
  EXPECT_TRUE(LimitAt("root ::= \"a\"{0,4294967295}", 1, 16, "the limit is 4294967294", options));
  const Result<Grammar> big = parse_gbnf("root ::= \"a\"{0,4294967294}", options);
  ASSERT_TRUE(big.ok()) << big.status().to_string();
  EXPECT_EQ(big->rules()[0].body.max, 4294967294u);
}

TEST(GbnfLimits, GrammarBytes) {
  GbnfOptions options;
  options.max_grammar_bytes = 12;
  EXPECT_TRUE(parse_gbnf("root ::= \"a\"", options).ok());  // exactly 12 bytes
  EXPECT_TRUE(LimitAt("root ::= \"ab\"", 1, 13,
                      "grammar too large: more than 12 bytes (GbnfOptions::max_grammar_bytes)",
                      options));
  // The position is the first byte past the bound, on whatever line that is.
  options.max_grammar_bytes = 20;
  EXPECT_TRUE(LimitAt("root ::= x\nx ::= \"abc\"\n", 2, 10, "more than 20 bytes", options));
  // The text past the bound is not read: bad UTF-8 there does not matter.
  EXPECT_TRUE(LimitAt("root ::= x\nx ::= \"abc\"\xFF", 2, 10, "max_grammar_bytes", options));
  // The default admits what the JSON Schema converter may emit (16 MiB).
  EXPECT_EQ(GbnfOptions().max_grammar_bytes, size_t{16} << 20);
  const std::string huge = "root ::= \"" + std::string((size_t{16} << 20) + 1, 'a') + "\"";
  EXPECT_TRUE(LimitAt(huge, 1, (16u << 20) + 1, "max_grammar_bytes"));
}

TEST(GbnfLimits, Rules) {
  GbnfOptions options;
  options.max_rules = 3;
  EXPECT_TRUE(parse_gbnf("root ::= a b\na ::= \"a\"\nb ::= \"b\"\n", options).ok());
  EXPECT_TRUE(LimitAt("root ::= a b\na ::= \"a\"\nb ::= c\n  c ::= \"c\"\n", 4, 3,
                      "grammar too large: more than 3 rules (GbnfOptions::max_rules)", options));
  // The default bound, with one-line rules.
  std::string many = "root ::= r0\n";
  for (int i = 0; i < 200000; ++i) many += "r" + std::to_string(i) + " ::= \"x\"\n";
  EXPECT_TRUE(LimitAt(many, 200001, 1, "more than 200000 rules"));
}

TEST(GbnfLimits, Symbols) {
  GbnfOptions options;
  options.max_symbols = 5;
  // Two literals, a repeat, a literal and the sequence of them: five nodes.
  EXPECT_TRUE(parse_gbnf("root ::= \"a\" \"b\"* \"c\"", options).ok());
  // A group around one item adds nothing; an alternation is one node.
  EXPECT_TRUE(parse_gbnf("root ::= ((\"a\") | \"b\")", options).ok());
  // The node that passes the bound is where the error points.
  EXPECT_TRUE(LimitAt("root ::= \"a\" \"b\"* \"c\" \"d\" \"e\"", 1, 27,
                      "grammar too large: more than 5 symbols (GbnfOptions::max_symbols)",
                      options));
  EXPECT_TRUE(LimitAt("root ::= \"a\" \"b\"+ \"c\"?", 1, 10, "more than 5 symbols", options));
  EXPECT_TRUE(
      LimitAt("root ::= a | b\na ::= \"1\" \"2\"\nb ::= \"3\"", 2, 7, "max_symbols", options));
  // Empty bodies and empty groups are nodes too.
  options.max_symbols = 2;
  EXPECT_TRUE(LimitAt("root ::= x\nx ::=\ny ::=\nz ::= \"a\"", 3, 6, "max_symbols", options));
  EXPECT_TRUE(LimitAt("root ::= () () ()", 1, 17, "max_symbols", options));
  // A token item and a call are one node each; each string a
  // TextExcluding holds is one more.
  options.max_symbols = 4;
  EXPECT_TRUE(parse_gbnf("root ::= <[1]> !<x> Regex(\"a\")", options).ok());
  EXPECT_TRUE(parse_gbnf("root ::= TextExcluding(\"a\", \"b\", \"c\")", options).ok());
  EXPECT_TRUE(LimitAt("root ::= TextExcluding(\"a\", \"b\", \"c\", \"d\")", 1, 39,
                      "more than 4 symbols", options));
  // The default bound, reached long before the byte bound: " ." is a node
  // in two bytes.
  std::string dots = "root ::=";
  for (int i = 0; i <= (1 << 20); ++i) dots += " .";
  EXPECT_TRUE(LimitAt(dots, 1, 10 + (2u << 20), "more than 1048576 symbols"));
}

// --- round trips ----------------------------------------------------------------

TEST(GbnfRoundTrip, FixedGrammars) {
  const char* const grammars[] = {
      "root ::= \"abc\"",
      "root ::= \"\"",
      "root ::= ",
      "root ::= \"a\" \"\" \"b\"",
      "root ::= (\"a\" \"b\") \"c\" | (\"d\" | \"e\") | \"f\"",
      "root ::= \"a\"*? \"b\"{2}{3,} (\"c\" \"d\")+ (\"e\" | \"f\"){0,7} \"\"*",
      "root ::= ( | \"b\") | ",
      R"(root ::= "\t\n\r\\\"[]-^\x00\x1F\x7F\x85\xA0\xAD é ぁ 😀 \u2028\uFEFF\uE000\U000F0000\U0010FFFF")",
      R"(root ::= [\t\n\r\\"\[\]\-\^\x00-\x1F\x7F-\xA0] [^] [] [^ぁ-ゟ] [\U00010000-\U0010FFFF])",
      R"(root ::= [\uD7FF-\uE000] [\uFFFE\uFFFF] .+)",
      "root ::= x\nx ::= x \"+\" y | y\ny ::= [0-9]+ | \"(\" x \")\"",
      "root ::= a-b 9\na-b ::= \"1\"\n9 ::= \"2\"",
      "root ::= <[0]> !<[4294967295]> <|im_end|> !<think> <a b> <\"#\\> <a<b> <a[>",
      "root ::= <think> (!</think>)* </think> (<[5]> | !<x>){2,3}",
      R"(root ::= Regex("\\d+") LazyRegex(".*</think>") Regex("") Regex("\"[^\"]*\""))",
      R"(root ::= Substring("") Substring("a\"b\\\n\u00e9") TextExcluding("</think>", "\n\n"))",
      R"(root ::= (Regex("a") | Substring("b"))* TextExcluding("x")+ "y")",
      "root ::= Regex (\"a\" | \"b\") Regex\nRegex ::= \"x\" Regex(\"x\")",
  };
  for (const char* text : grammars) EXPECT_TRUE(RoundTrips(text)) << text;
}

TEST(GbnfRoundTrip, BenchGrammars) {
  const std::vector<std::filesystem::path> paths = bench_grammars();
  if (paths.empty()) GTEST_SKIP() << "no bench grammars under GRAMMASK_SHARED_DIR";
  for (const auto& path : paths) {
    const std::string text = read_file(path);
    EXPECT_TRUE(parse_gbnf(text).ok()) << path << ": " << parse_gbnf(text).status().to_string();
    EXPECT_TRUE(RoundTrips(text)) << path;
  }
}

TEST(GbnfRoundTrip, LibraryGrammars) {
  std::vector<std::filesystem::path> paths;
  std::error_code error;
  const std::filesystem::path dir = std::filesystem::path(GRAMMASK_SOURCE_DIR) / "grammars";
  if (std::filesystem::is_directory(dir, error)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      if (entry.path().extension() == ".gbnf") paths.push_back(entry.path());
    }
  }
  if (paths.empty()) GTEST_SKIP() << "no grammars/*.gbnf";
  for (const auto& path : paths) EXPECT_TRUE(RoundTrips(read_file(path))) << path;
}

TEST(GbnfRoundTrip, BenchGrammarShapes) {
  const std::vector<std::filesystem::path> paths = bench_grammars();
  if (paths.empty()) GTEST_SKIP() << "no bench grammars under GRAMMASK_SHARED_DIR";
  for (const auto& path : paths) {
    if (path.parent_path().filename() != "json-generic") continue;
    const Grammar grammar = parse_ok(read_file(path));
    EXPECT_EQ(grammar.rules().size(), 7u);
    EXPECT_EQ(grammar.rules()[0].name, "root");
    // ws ::= | " " | "\n" [ \t]{0,20}
    EXPECT_EQ(
        body_of(grammar, "ws"),
        alt({empty(), lit(" "), seq({lit("\n"), rep(cls({{' ', ' '}, {'\t', '\t'}}), 0, 20)})}));
  }
}

// --- random grammars ------------------------------------------------------------

// Generates random grammars in the parser's canonical form: no one-child
// sequences or alternations, no empty literals.
class RandomGrammarGenerator {
 public:
  explicit RandomGrammarGenerator(uint32_t seed) : rng_(seed) {}

  Grammar grammar() {
    Grammar grammar;
    rule_count_ = 1 + below(6);
    for (uint32_t i = 0; i < rule_count_; ++i) {
      std::string name = i == 0 ? "root" : "r" + std::to_string(i);
      if (i > 0 && below(3) == 0) name += "-x" + std::to_string(below(100));
      grammar.add_rule(name, expr(0));
    }
    return grammar;
  }

 private:
  uint32_t below(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }

  uint32_t code_point() {
    static const uint32_t kSpecial[] = {
        '"',    '\\',   ']',    '[',    '-',    '^',    '\n',    '\r',    '\t',     0,
        0x1F,   0x7F,   0x85,   0xA0,   0xAD,   '#',    '|',     '(',     ')',      ' ',
        0x2028, 0xFEFF, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF, 0x3041};
    switch (below(5)) {
      case 0:
        return kSpecial[below(sizeof kSpecial / sizeof kSpecial[0])];
      case 1:
        return 0x20 + below(0x5F);  // printable ASCII
      case 2:
        return below(0x100);
      case 3: {
        const uint32_t c = below(0x10000);
        return (c >= 0xD800 && c <= 0xDFFF) ? c - 0x800 : c;
      }
      default:
        return 0x10000 + below(0x100000);
    }
  }

  std::u32string text(uint32_t max_length) {
    std::u32string out;
    const uint32_t length = below(max_length + 1);
    for (uint32_t i = 0; i < length; ++i) out.push_back(code_point());
    return out;
  }

  // Token items and built-in calls.
  Expr special_leaf() {
    switch (below(6)) {
      case 0:
        return Expr::token_id(below(3) == 0 ? UINT32_MAX - below(2) : below(200000), below(2));
      case 1: {
        // <...>: anything but '>' and line breaks, not starting with '['.
        std::u32string inner = text(4);
        for (char32_t& c : inner)
          if (c == '>' || c == '\n' || c == '\r') c = 'x';
        if (inner.empty() || inner[0] == '[') inner.insert(inner.begin(), U'|');
        return Expr::token_text(U"<" + inner + U">", below(2));
      }
      case 2:
        return Expr::regex(text(5), below(2));
      case 3:
        return Expr::substring(text(5));
      default: {
        std::vector<std::u32string> strings;
        const uint32_t count = 1 + below(3);
        for (uint32_t i = 0; i < count; ++i) {
          std::u32string s = text(3);
          if (s.empty()) s = U"a";
          strings.push_back(std::move(s));
        }
        return Expr::text_excluding(std::move(strings));
      }
    }
  }

  Expr leaf() {
    if (below(4) == 0) return special_leaf();
    switch (below(5)) {
      case 0: {
        std::u32string text;
        const uint32_t length = 1 + below(4);
        for (uint32_t i = 0; i < length; ++i) text.push_back(code_point());
        return Expr::literal_text(text);
      }
      case 1: {
        std::vector<CodePointRange> ranges;
        const uint32_t count = below(4);
        for (uint32_t i = 0; i < count; ++i) {
          uint32_t a = code_point(), b = below(2) ? a : code_point();
          // Keep surrogates off the endpoints: GBNF cannot write them.
          if (a > b) std::swap(a, b);
          ranges.push_back({a, b});
        }
        return Expr::char_class(ranges, below(2) == 0);
      }
      case 2:
        return Expr::any_char();
      case 3:
        return Expr::rule_ref(below(rule_count_));
      default:
        return Expr::sequence({});
    }
  }

  Expr expr(int depth) {
    if (depth >= 4 || below(3) == 0) return leaf();
    switch (below(3)) {
      case 0: {
        std::vector<Expr> items;
        const uint32_t count = below(2) ? 2 + below(3) : 0;
        for (uint32_t i = 0; i < count; ++i) items.push_back(expr(depth + 1));
        return Expr::sequence(std::move(items));
      }
      case 1: {
        std::vector<Expr> options;
        const uint32_t count = 2 + below(3);
        for (uint32_t i = 0; i < count; ++i) options.push_back(expr(depth + 1));
        return Expr::alternation(std::move(options));
      }
      default: {
        static const std::pair<uint32_t, uint32_t> kBounds[] = {
            {0, kUnbounded}, {1, kUnbounded}, {0, 1},  {3, 3},
            {2, kUnbounded}, {0, 0},          {2, 17}, {0, 100000}};
        const auto [min, max] = kBounds[below(sizeof kBounds / sizeof kBounds[0])];
        return Expr::repeat(expr(depth + 1), min, max);
      }
    }
  }

  std::mt19937 rng_;
  uint32_t rule_count_ = 1;
};

TEST(GbnfRoundTrip, RandomGrammars) {
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    RandomGrammarGenerator generator(seed);
    const Grammar grammar = generator.grammar();
    ASSERT_TRUE(grammar.validate().ok()) << grammar.validate().to_string();
    const std::string printed = grammar.to_gbnf();
    Result<Grammar> parsed = parse_gbnf(printed);
    ASSERT_TRUE(parsed.ok()) << "seed " << seed << ": " << parsed.status().to_string() << "\n"
                             << printed;
    ASSERT_EQ(*parsed, grammar) << "seed " << seed << ":\n"
                                << printed << "---\n"
                                << parsed->to_gbnf();
  }
}

// --- robustness -------------------------------------------------------------------

// Parsing never crashes; a failure is kSyntax (or kLimitExceeded, or
// kUnsupported for a lookahead) with a location inside the text; a success
// validates and round-trips.
void check_robust(std::string_view text) {
  Result<Grammar> result = parse_gbnf(text);
  if (!result.ok()) {
    ASSERT_TRUE(result.status().code() == ErrorCode::kSyntax ||
                result.status().code() == ErrorCode::kLimitExceeded ||
                result.status().code() == ErrorCode::kUnsupported)  // a lookahead
        << result.status().to_string();
    ASSERT_TRUE(result.status().where().known()) << result.status().to_string();
    ASSERT_LE(result.status().where().offset, text.size());
    return;
  }
  ASSERT_TRUE(result->validate().ok()) << result->validate().to_string();
  ASSERT_TRUE(RoundTrips(text)) << text;
}

TEST(GbnfRobustness, RandomBytes) {
  std::mt19937 rng(12345);
  static const char kAlphabet[] = "root ::=\"\\[]^-()|*+?{},.#\n\r\tax0é\xFF<>!";
  for (int i = 0; i < 3000; ++i) {
    const size_t length = rng() % 64;
    std::string text = i % 2 ? "root ::= " : "";
    for (size_t j = 0; j < length; ++j) {
      text +=
          i % 3 == 0 ? static_cast<char>(rng() % 256) : kAlphabet[rng() % (sizeof kAlphabet - 1)];
    }
    check_robust(text);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(GbnfRobustness, MutatedGrammars) {
  std::vector<std::string> seeds = {
      "root ::= (expr \"=\" ws term \"\\n\")+\nexpr ::= term ([-+*/] term)*\nterm ::= [0-9]+ ws\n"
      "ws ::= [ \\t\\n]*",
      "root ::= \"{\" ws ( \"\\\"\" [^\"\\\\\\x7F\\x00-\\x1F]* \"\\\"\" )? \"}\"\nws ::= | \" "
      "\"{0,20}",
      "root ::= [ぁ-ゟ]{1,3} \"\\u3042\" . | ( | \"b\" # c\n )",
      "root ::= <think> (!<[7]>)* </think> Regex(\"[a-z]+\") LazyRegex(\".*x\")\n"
      "x ::= Substring(\"abc\") TextExcluding(\"a\", \"bc\")",
  };
  for (const auto& path : bench_grammars()) seeds.push_back(read_file(path));
  static const char kInsertions[] = "\"\\[]^-()|*+?{},.#:=\n ax0<>!";
  std::mt19937 rng(777);
  for (int i = 0; i < 3000; ++i) {
    std::string text = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0:
          text.erase(at, 1 + rng() % 3);
          break;
        case 1:
          text.insert(at, 1, kInsertions[rng() % (sizeof kInsertions - 1)]);
          break;
        case 2:
          text[at] = static_cast<char>(rng() % 256);
          break;
        default:
          text.insert(at, text.substr(rng() % text.size(), rng() % 8));
          break;
      }
    }
    check_robust(text);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace grammask
