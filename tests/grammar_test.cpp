// Tests of the grammar IR: factories, equality, rules, validation and the
// GBNF printer (exact output: precedence, escapes, repeat forms).
#include "grammask/grammar.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammask/gbnf.h"

namespace grammask {
namespace {

using Kind = Expr::Kind;

Expr lit(std::u32string text) {
  return Expr::literal_text(std::move(text));
}
Expr seq(std::vector<Expr> items) {
  return Expr::sequence(std::move(items));
}
Expr alt(std::vector<Expr> options) {
  return Expr::alternation(std::move(options));
}

// A grammar with rules "root" and "x" (x ::= "x"), printing `body` as root's.
std::string print_body(const Expr& body) {
  Grammar grammar;
  grammar.add_rule("root", body);
  grammar.add_rule("x", lit(U"x"));
  return to_gbnf(body, grammar);
}

// --- factories and equality ---------------------------------------------------------

TEST(GrammarExpr, Factories) {
  const Expr sequence = seq({lit(U"a"), Expr::any_char()});
  EXPECT_EQ(sequence.kind, Kind::kSequence);
  EXPECT_EQ(sequence.children.size(), 2u);

  const Expr alternation = alt({lit(U"a"), lit(U"b")});
  EXPECT_EQ(alternation.kind, Kind::kAlternation);
  EXPECT_EQ(alternation.children.size(), 2u);

  const Expr literal = lit(U"h\u00E9");
  EXPECT_EQ(literal.kind, Kind::kLiteral);
  EXPECT_EQ(literal.literal, U"h\u00E9");

  const Expr char_class = Expr::char_class({{'a', 'z'}}, true);
  EXPECT_EQ(char_class.kind, Kind::kCharClass);
  EXPECT_TRUE(char_class.negated);
  ASSERT_EQ(char_class.ranges.size(), 1u);
  EXPECT_EQ(char_class.ranges[0].last, uint32_t('z'));

  EXPECT_EQ(Expr::any_char().kind, Kind::kAnyChar);

  const Expr reference = Expr::rule_ref(3);
  EXPECT_EQ(reference.kind, Kind::kRuleRef);
  EXPECT_EQ(reference.rule, 3u);

  const Expr repeat = Expr::repeat(lit(U"a"), 2, kUnbounded);
  EXPECT_EQ(repeat.kind, Kind::kRepeat);
  EXPECT_EQ(repeat.min, 2u);
  EXPECT_EQ(repeat.max, kUnbounded);
  ASSERT_EQ(repeat.children.size(), 1u);
  EXPECT_EQ(repeat.children[0], lit(U"a"));
}

TEST(GrammarExpr, TokenAndTextTerminalFactories) {
  const Expr by_id = Expr::token_id(128009);
  EXPECT_EQ(by_id.kind, Kind::kToken);
  EXPECT_EQ(by_id.token, 128009u);
  EXPECT_TRUE(by_id.literal.empty());
  EXPECT_FALSE(by_id.negated);
  EXPECT_TRUE(Expr::token_id(5, true).negated);

  const Expr by_text = Expr::token_text(U"<|im_end|>", true);
  EXPECT_EQ(by_text.kind, Kind::kToken);
  EXPECT_EQ(by_text.literal, U"<|im_end|>");
  EXPECT_TRUE(by_text.negated);

  const Expr regex = Expr::regex(U"\\d+");
  EXPECT_EQ(regex.kind, Kind::kRegex);
  EXPECT_EQ(regex.literal, U"\\d+");
  EXPECT_FALSE(regex.lazy);
  EXPECT_TRUE(Expr::regex(U".*</think>", true).lazy);

  const Expr substring = Expr::substring(U"abc");
  EXPECT_EQ(substring.kind, Kind::kSubstring);
  EXPECT_EQ(substring.literal, U"abc");

  const Expr excluding = Expr::text_excluding({U"</think>", U"\n\n"});
  EXPECT_EQ(excluding.kind, Kind::kTextExcluding);
  ASSERT_EQ(excluding.children.size(), 2u);
  EXPECT_EQ(excluding.children[0], lit(U"</think>"));
  EXPECT_EQ(excluding.children[1], lit(U"\n\n"));
}

TEST(GrammarExpr, EqualityIsStructuralAndIgnoresLocations) {
  Expr a = seq({lit(U"a"), Expr::repeat(Expr::rule_ref(1), 0, 1)});
  Expr b = seq({lit(U"a"), Expr::repeat(Expr::rule_ref(1), 0, 1)});
  a.where = SourceLocation{3, 4, 20};
  b.children[0].where = SourceLocation{9, 9, 99};
  EXPECT_EQ(a, b);

  EXPECT_NE(lit(U"a"), lit(U"b"));
  EXPECT_NE(lit(U"a"), seq({lit(U"a")}));
  EXPECT_NE(seq({lit(U"a"), lit(U"b")}), seq({lit(U"b"), lit(U"a")}));
  EXPECT_NE(seq({lit(U"a"), lit(U"b")}), alt({lit(U"a"), lit(U"b")}));
  EXPECT_NE(Expr::char_class({{'a', 'b'}}, false), Expr::char_class({{'a', 'b'}}, true));
  EXPECT_NE(Expr::char_class({{'a', 'b'}}, false), Expr::char_class({{'a', 'c'}}, false));
  EXPECT_NE(Expr::rule_ref(1), Expr::rule_ref(2));
  EXPECT_NE(Expr::repeat(lit(U"a"), 0, 1), Expr::repeat(lit(U"a"), 0, 2));
  EXPECT_NE(Expr::repeat(lit(U"a"), 0, 1), Expr::repeat(lit(U"b"), 0, 1));
  EXPECT_EQ(Expr::any_char(), Expr::any_char());
}

TEST(GrammarExpr, EqualityOfTokenAndTextTerminals) {
  EXPECT_EQ(Expr::token_id(5), Expr::token_id(5));
  EXPECT_NE(Expr::token_id(5), Expr::token_id(6));
  EXPECT_NE(Expr::token_id(5), Expr::token_id(5, true));
  EXPECT_EQ(Expr::token_text(U"<a>"), Expr::token_text(U"<a>"));
  EXPECT_NE(Expr::token_text(U"<a>"), Expr::token_text(U"<b>"));
  EXPECT_NE(Expr::token_text(U"<a>"), Expr::token_text(U"<a>", true));
  EXPECT_NE(Expr::token_text(U"<a>"), Expr::token_id(0));
  // A token item is not the literal that spells it.
  EXPECT_NE(Expr::token_text(U"<a>"), lit(U"<a>"));
  EXPECT_EQ(Expr::regex(U"a+"), Expr::regex(U"a+"));
  EXPECT_NE(Expr::regex(U"a+"), Expr::regex(U"a+", true));
  EXPECT_NE(Expr::regex(U"a+"), Expr::regex(U"a*"));
  EXPECT_NE(Expr::regex(U"a"), Expr::substring(U"a"));
  EXPECT_NE(Expr::substring(U"ab"), Expr::substring(U"a"));
  EXPECT_EQ(Expr::text_excluding({U"a", U"b"}), Expr::text_excluding({U"a", U"b"}));
  EXPECT_NE(Expr::text_excluding({U"a", U"b"}), Expr::text_excluding({U"b", U"a"}));
  EXPECT_NE(Expr::text_excluding({U"a"}), Expr::text_excluding({U"a", U"b"}));
}

TEST(GrammarExpr, EqualityIgnoresFieldsOtherKindsUse) {
  Expr a = Expr::any_char();
  Expr b = Expr::any_char();
  b.min = 7;  // meaningless for kAnyChar
  EXPECT_EQ(a, b);
}

// --- rules ----------------------------------------------------------------------

TEST(GrammarRules, AddAndFind) {
  Grammar grammar;
  EXPECT_EQ(grammar.find_rule("root"), -1);
  EXPECT_EQ(grammar.add_rule("root", Expr::rule_ref(1)), 0u);
  EXPECT_EQ(grammar.add_rule("item", lit(U"x"), SourceLocation{2, 1, 10}), 1u);
  EXPECT_EQ(grammar.find_rule("root"), 0);
  EXPECT_EQ(grammar.find_rule("item"), 1);
  EXPECT_EQ(grammar.find_rule("ite"), -1);
  EXPECT_EQ(grammar.rules()[1].where.line, 2u);
  grammar.mutable_rules()[1].body = lit(U"y");
  EXPECT_EQ(grammar.rules()[1].body, lit(U"y"));
}

TEST(GrammarRules, GrammarEqualityComparesNamesAndBodies) {
  Grammar a, b;
  a.add_rule("root", lit(U"a"), SourceLocation{1, 1, 0});
  b.add_rule("root", lit(U"a"));
  EXPECT_EQ(a, b);
  b.add_rule("x", lit(U"x"));
  EXPECT_NE(a, b);
  Grammar c;
  c.add_rule("start", lit(U"a"));
  EXPECT_NE(a, c);
}

TEST(GrammarRules, ValidRuleNames) {
  EXPECT_TRUE(is_valid_rule_name("root"));
  EXPECT_TRUE(is_valid_rule_name("check-mate"));
  EXPECT_TRUE(is_valid_rule_name("R2D2"));
  EXPECT_FALSE(is_valid_rule_name(""));
  EXPECT_FALSE(is_valid_rule_name("a_b"));
  EXPECT_FALSE(is_valid_rule_name("a b"));
  EXPECT_FALSE(is_valid_rule_name("caf\xC3\xA9"));
}

// --- validation -----------------------------------------------------------------

Status validate_body(const Expr& body) {
  Grammar grammar;
  grammar.add_rule("root", body);
  return grammar.validate();
}

TEST(GrammarValidate, AcceptsWellFormedGrammars) {
  Grammar grammar;
  grammar.add_rule("root", seq({Expr::rule_ref(1), seq({}), Expr::any_char()}));
  grammar.add_rule("item",
                   alt({Expr::repeat(Expr::char_class({{0, kMaxCodePoint}}, true), 0, kUnbounded),
                        lit(U"\U0010FFFF")}));
  EXPECT_TRUE(grammar.validate().ok()) << grammar.validate().to_string();
  EXPECT_TRUE(Grammar().validate().ok());
}

TEST(GrammarValidate, RejectsBrokenInvariants) {
  const auto expect_invalid = [](const Status& status, const std::string& fragment) {
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(status.message().find(fragment), std::string::npos) << status.to_string();
  };
  expect_invalid(validate_body(Expr::rule_ref(1)), "out of range");
  expect_invalid(validate_body(lit(U"")), "empty literal");
  expect_invalid(validate_body(alt({})), "alternation without options");
  expect_invalid(validate_body(Expr::repeat(lit(U"a"), 3, 2)), "minimum 3 above maximum 2");
  expect_invalid(validate_body(Expr::char_class({{'z', 'a'}}, false)), "bad class range");
  expect_invalid(validate_body(Expr::char_class({{0, 0x110000}}, false)), "bad class range");
  expect_invalid(validate_body(lit(std::u32string(1, char32_t(0xD800)))), "U+D800");
  expect_invalid(validate_body(seq({lit(U"a"), lit(std::u32string(1, char32_t(0x110000)))})),
                 "U+110000");
  Expr broken_repeat = Expr::repeat(lit(U"a"), 0, 1);
  broken_repeat.children.clear();
  expect_invalid(validate_body(broken_repeat), "exactly one child");

  Grammar unnamed;
  unnamed.add_rule("", lit(U"a"));
  expect_invalid(unnamed.validate(), "empty name");
  Grammar duplicated;
  duplicated.add_rule("a", lit(U"a"));
  duplicated.add_rule("a", lit(U"b"));
  expect_invalid(duplicated.validate(), "duplicate rule name 'a'");
}

TEST(GrammarValidate, AcceptsTokenAndTextTerminals) {
  EXPECT_TRUE(validate_body(seq({Expr::token_id(0), Expr::token_id(UINT32_MAX, true),
                                 Expr::token_text(U"<|im_end|>"), Expr::token_text(U"<a>", true),
                                 Expr::token_text(U"<a<b>"), Expr::token_text(U"<a[>"),
                                 Expr::regex(U""), Expr::regex(U"(a|b)*", true),
                                 Expr::substring(U""), Expr::text_excluding({U"x", U"\n"})}))
                  .ok());
}

TEST(GrammarValidate, RejectsBadTokenAndTextTerminals) {
  const auto expect_invalid = [](const Expr& body, const std::string& fragment) {
    const Status status = validate_body(body);
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument) << status.to_string();
    EXPECT_NE(status.message().find(fragment), std::string::npos) << status.to_string();
  };
  // Token texts are written with their angle brackets, as in GBNF.
  expect_invalid(Expr::token_text(U"im_end"), "token text must be '<'");
  expect_invalid(Expr::token_text(U"<im_end"), "token text must be '<'");
  expect_invalid(Expr::token_text(U"im_end>"), "token text must be '<'");
  expect_invalid(Expr::token_text(U"<>"), "token text must be '<'");
  expect_invalid(Expr::token_text(U"<a>b>"), "token text must be '<'");
  expect_invalid(Expr::token_text(U"<a\nb>"), "token text must be '<'");
  expect_invalid(Expr::token_text(U"<a\rb>", true), "token text must be '<'");
  // GBNF reads "<[" as a token id: such a text could not be printed back.
  expect_invalid(Expr::token_text(U"<[PAD]>"), "cannot start with '<['");
  expect_invalid(Expr::token_text(U"<[>", true), "cannot start with '<['");
  expect_invalid(Expr::token_text(std::u32string(U"<\xD800>")), "U+D800");
  expect_invalid(Expr::regex(std::u32string(1, char32_t(0xDC00))), "pattern holds U+DC00");
  expect_invalid(Expr::substring(std::u32string(1, char32_t(0x110000))), "U+110000");

  Expr no_strings = Expr::text_excluding({});
  expect_invalid(no_strings, "exclusion without strings");
  Expr holds_class = Expr::text_excluding({U"a"});
  holds_class.children.push_back(Expr::char_class({{'a', 'z'}}, false));
  expect_invalid(holds_class, "an exclusion holds only literals");
  Expr holds_reference = Expr::text_excluding({U"a"});
  holds_reference.children[0] = Expr::rule_ref(0);
  expect_invalid(holds_reference, "an exclusion holds only literals");
  // Its literals are checked as any literal: non-empty, scalar values.
  expect_invalid(Expr::text_excluding({U"a", U""}), "empty literal");
  expect_invalid(Expr::text_excluding({std::u32string(1, char32_t(0xD800))}), "U+D800");
}

TEST(GrammarValidate, ReportsTheLocationOfTheBadNode) {
  Expr bad = lit(U"");
  bad.where = SourceLocation{4, 7, 30};
  const Status status = validate_body(seq({lit(U"a"), bad}));
  EXPECT_EQ(status.where().line, 4u);
  EXPECT_EQ(status.where().column, 7u);
  EXPECT_NE(status.message().find("rule 'root'"), std::string::npos);
}

// --- printer --------------------------------------------------------------------

TEST(GrammarPrint, Terminals) {
  EXPECT_EQ(print_body(lit(U"abc")), "\"abc\"");
  EXPECT_EQ(print_body(seq({})), "\"\"");
  EXPECT_EQ(print_body(Expr::any_char()), ".");
  EXPECT_EQ(print_body(Expr::rule_ref(1)), "x");
  EXPECT_EQ(print_body(Expr::char_class({{'a', 'z'}, {'_', '_'}}, false)), "[a-z_]");
  EXPECT_EQ(print_body(Expr::char_class({{'0', '9'}}, true)), "[^0-9]");
  EXPECT_EQ(print_body(Expr::char_class({}, false)), "[]");
  EXPECT_EQ(print_body(Expr::char_class({}, true)), "[^]");
}

TEST(GrammarPrint, LiteralEscapes) {
  EXPECT_EQ(print_body(lit(U"\"\\\t\n\r")), R"("\"\\\t\n\r")");
  EXPECT_EQ(print_body(lit(std::u32string(U"\0\x1F\x7F\x85", 4))), R"("\x00\x1F\x7F\x85")");
  // Class metacharacters need no escape in a literal.
  EXPECT_EQ(print_body(lit(U"[]-^#|()")), "\"[]-^#|()\"");
  // Printable non-ASCII is written as UTF-8; invisible characters are escaped.
  EXPECT_EQ(print_body(lit(U"\u00E9\u3041\U0001F600")), "\"\xC3\xA9\xE3\x81\x81\xF0\x9F\x98\x80\"");
  EXPECT_EQ(print_body(lit(U"\u00A0\u2028\uFEFF\uE000\U000F0000\U0010FFFF")),
            R"("\xA0\u2028\uFEFF\uE000\U000F0000\U0010FFFF")");
}

TEST(GrammarPrint, ClassEscapes) {
  EXPECT_EQ(print_body(Expr::char_class(
                {{']', ']'}, {'[', '['}, {'-', '-'}, {'^', '^'}, {'\\', '\\'}, {'"', '"'}}, false)),
            R"([\]\[\-\^\\"])");
  EXPECT_EQ(print_body(Expr::char_class({{0, 0x1F}, {'\n', '\n'}, {0x3041, 0x309F}}, true)),
            "[^\\x00-\\x1F\\n\xE3\x81\x81-\xE3\x82\x9F]");
  EXPECT_EQ(print_body(Expr::char_class({{'-', '/'}}, false)), R"([\--/])");
}

TEST(GrammarPrint, ClassRangesTrimSurrogateEndpoints) {
  EXPECT_EQ(print_body(Expr::char_class({{0xD800, 0x10FFFF}}, false)), R"([\uE000-\U0010FFFF])");
  EXPECT_EQ(print_body(Expr::char_class({{0x41, 0xDFFF}}, false)), "[A-\xED\x9F\xBF]");
  EXPECT_EQ(print_body(Expr::char_class({{0xD800, 0xDFFF}, {'a', 'a'}}, true)), "[^a]");
}

TEST(GrammarPrint, Precedence) {
  const Expr a = lit(U"a"), b = lit(U"b"), c = lit(U"c");
  EXPECT_EQ(print_body(seq({a, b, c})), R"("a" "b" "c")");
  EXPECT_EQ(print_body(alt({a, b, c})), R"("a" | "b" | "c")");
  EXPECT_EQ(print_body(alt({seq({a, b}), c})), R"("a" "b" | "c")");
  EXPECT_EQ(print_body(seq({alt({a, b}), c})), R"(("a" | "b") "c")");
  EXPECT_EQ(print_body(seq({seq({a, b}), c})), R"(("a" "b") "c")");
  EXPECT_EQ(print_body(alt({alt({a, b}), c})), R"(("a" | "b") | "c")");
  EXPECT_EQ(print_body(alt({seq({}), a})), R"("" | "a")");
  EXPECT_EQ(print_body(Expr::repeat(seq({a, b}), 0, kUnbounded)), R"(("a" "b")*)");
  EXPECT_EQ(print_body(Expr::repeat(alt({a, b}), 1, kUnbounded)), R"(("a" | "b")+)");
  EXPECT_EQ(print_body(Expr::repeat(lit(U"ab"), 0, 1)), R"("ab"?)");
  EXPECT_EQ(print_body(Expr::repeat(Expr::repeat(a, 0, kUnbounded), 0, 1)), R"("a"*?)");
  EXPECT_EQ(print_body(seq({Expr::repeat(Expr::rule_ref(1), 0, 1), Expr::rule_ref(1)})), "x? x");
}

TEST(GrammarPrint, RepeatForms) {
  const Expr x = Expr::rule_ref(1);
  EXPECT_EQ(print_body(Expr::repeat(x, 0, kUnbounded)), "x*");
  EXPECT_EQ(print_body(Expr::repeat(x, 1, kUnbounded)), "x+");
  EXPECT_EQ(print_body(Expr::repeat(x, 0, 1)), "x?");
  EXPECT_EQ(print_body(Expr::repeat(x, 4, 4)), "x{4}");
  EXPECT_EQ(print_body(Expr::repeat(x, 0, 0)), "x{0}");
  EXPECT_EQ(print_body(Expr::repeat(x, 1, 1)), "x{1}");
  EXPECT_EQ(print_body(Expr::repeat(x, 2, kUnbounded)), "x{2,}");
  EXPECT_EQ(print_body(Expr::repeat(x, 2, 5)), "x{2,5}");
  EXPECT_EQ(print_body(Expr::repeat(x, 0, 5)), "x{0,5}");
  EXPECT_EQ(print_body(Expr::repeat(x, 1, 5)), "x{1,5}");
}

TEST(GrammarPrint, TokenItems) {
  EXPECT_EQ(print_body(Expr::token_id(5)), "<[5]>");
  EXPECT_EQ(print_body(Expr::token_id(5, true)), "!<[5]>");
  EXPECT_EQ(print_body(Expr::token_id(4294967295u)), "<[4294967295]>");
  EXPECT_EQ(print_body(Expr::token_text(U"<|im_end|>")), "<|im_end|>");
  EXPECT_EQ(print_body(Expr::token_text(U"<|im_end|>", true)), "!<|im_end|>");
  // The text is written as is: no escapes between the brackets.
  EXPECT_EQ(print_body(Expr::token_text(U"<a \"\\#\u00E9>")), "<a \"\\#\xC3\xA9>");
  EXPECT_EQ(print_body(seq({Expr::token_text(U"<think>"),
                            Expr::repeat(Expr::token_text(U"</think>", true), 0, kUnbounded),
                            Expr::token_text(U"</think>")})),
            "<think> !</think>* </think>");
  EXPECT_EQ(print_body(Expr::repeat(Expr::token_id(7), 2, 3)), "<[7]>{2,3}");
}

TEST(GrammarPrint, TextTerminals) {
  EXPECT_EQ(print_body(Expr::regex(U"\\d+")), R"(Regex("\\d+"))");
  EXPECT_EQ(print_body(Expr::regex(U".*</think>", true)), R"(LazyRegex(".*</think>"))");
  EXPECT_EQ(print_body(Expr::regex(U"\"[^\"]*\"")), R"(Regex("\"[^\"]*\""))");
  EXPECT_EQ(print_body(Expr::regex(U"")), R"(Regex(""))");
  EXPECT_EQ(print_body(Expr::substring(U"a\nb")), R"(Substring("a\nb"))");
  EXPECT_EQ(print_body(Expr::substring(U"")), R"(Substring(""))");
  EXPECT_EQ(print_body(Expr::text_excluding({U"a", U"b"})), R"(TextExcluding("a", "b"))");
  EXPECT_EQ(print_body(Expr::text_excluding({U"</think>"})), R"(TextExcluding("</think>"))");
  EXPECT_EQ(print_body(Expr::repeat(Expr::regex(U"a"), 0, kUnbounded)), R"(Regex("a")*)");
  EXPECT_EQ(print_body(alt({Expr::substring(U"x"), Expr::rule_ref(1)})), R"(Substring("x") | x)");
}

TEST(GrammarPrint, WholeGrammarOneRulePerLine) {
  Grammar grammar;
  grammar.add_rule("root", seq({Expr::rule_ref(1), lit(U"\n")}));
  grammar.add_rule("item", Expr::repeat(Expr::char_class({{'\n', '\n'}}, true), 1, kUnbounded));
  EXPECT_EQ(grammar.to_gbnf(), "root ::= item \"\\n\"\nitem ::= [^\\n]+\n");
  EXPECT_EQ(Grammar().to_gbnf(), "");
}

TEST(GrammarPrint, PrintedTextParsesBackEqual) {
  Grammar grammar;
  grammar.add_rule("root",
                   alt({seq({lit(U"a\"b\\"), Expr::repeat(Expr::rule_ref(1), 2, 9)}), seq({}),
                        Expr::repeat(alt({lit(U"\u3042"), Expr::any_char()}), 0, kUnbounded)}));
  grammar.add_rule("n-1", Expr::char_class({{'-', '-'}, {'0', '9'}, {']', '^'}}, true));
  Result<Grammar> parsed = parse_gbnf(grammar.to_gbnf());
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string() << "\n" << grammar.to_gbnf();
  EXPECT_EQ(*parsed, grammar);
}

TEST(GrammarPrint, TokenAndTextTerminalsParseBackEqual) {
  Grammar grammar;
  grammar.add_rule(
      "root",
      seq({Expr::token_text(U"<think>"),
           Expr::repeat(Expr::token_text(U"</think>", true), 0, kUnbounded),
           Expr::token_text(U"</think>"), Expr::token_id(0), Expr::token_id(4294967295u, true),
           alt({Expr::regex(U"\\d+(\\.\\d*)?"), Expr::regex(U".*\n", true), Expr::rule_ref(1)}),
           Expr::substring(U"say \"hi\"\t\u00E9"),
           Expr::text_excluding({U"</think>", U"\n\n", U"\\"}), Expr::token_text(U"<a<b>")}));
  // A rule named like a built-in: its references print without '(' after them.
  grammar.add_rule("Regex", lit(U"r"));
  grammar.add_rule("x", seq({Expr::rule_ref(1), alt({lit(U"a"), lit(U"b")})}));
  ASSERT_TRUE(grammar.validate().ok()) << grammar.validate().to_string();
  const std::string printed = grammar.to_gbnf();
  EXPECT_NE(printed.find("Regex (\"a\" | \"b\")"), std::string::npos) << printed;
  Result<Grammar> parsed = parse_gbnf(printed);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string() << "\n" << printed;
  EXPECT_EQ(*parsed, grammar) << printed;
  EXPECT_EQ(parsed->to_gbnf(), printed);
}

TEST(GrammarPrint, OutOfRangeReferencesDoNotCrash) {
  Grammar grammar;
  EXPECT_NE(to_gbnf(Expr::rule_ref(5), grammar).find("5"), std::string::npos);
  Expr broken_repeat = Expr::repeat(lit(U"a"), 0, 1);
  broken_repeat.children.clear();
  EXPECT_FALSE(to_gbnf(broken_repeat, grammar).empty());
}

}  // namespace
}  // namespace grammask
