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

TEST(GrammarPrint, OutOfRangeReferencesDoNotCrash) {
  Grammar grammar;
  EXPECT_NE(to_gbnf(Expr::rule_ref(5), grammar).find("5"), std::string::npos);
  Expr broken_repeat = Expr::repeat(lit(U"a"), 0, 1);
  broken_repeat.children.clear();
  EXPECT_FALSE(to_gbnf(broken_repeat, grammar).empty());
}

}  // namespace
}  // namespace grammask
