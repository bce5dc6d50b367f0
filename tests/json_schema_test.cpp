// JSON Schema -> GBNF: emitted text, acceptance through the recognizer, and
// refusals with keyword + pointer.
#include "grammask/json_schema.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "grammask/gbnf.h"
#include "grammask/matcher.h"
#include "grammask/recognizer.h"
#include "regex/ecma_regex.h"
#include "schema/numbers.h"

namespace grammask {
namespace {

JsonSchemaOptions compact() {
  JsonSchemaOptions options;
  options.whitespace = JsonSchemaOptions::Whitespace::kCompact;
  return options;
}

// Converts, parses and builds a recognizer; fails the test on any error.
class Checker {
 public:
  explicit Checker(const std::string& schema, const JsonSchemaOptions& options = compact()) {
    Result<std::string> text = json_schema_to_gbnf(schema, options, &warnings);
    if (!text.ok()) {
      ADD_FAILURE() << "conversion failed: " << text.status().to_string() << "\nschema: " << schema;
      return;
    }
    gbnf = *text;
    Result<Grammar> grammar = parse_gbnf(gbnf);
    if (!grammar.ok()) {
      ADD_FAILURE() << "GBNF does not parse: " << grammar.status().to_string() << "\n" << gbnf;
      return;
    }
    Result<Recognizer> recognizer = Recognizer::create(*grammar, "root");
    if (!recognizer.ok()) {
      ADD_FAILURE() << "recognizer: " << recognizer.status().to_string();
      return;
    }
    recognizer_.emplace(std::move(*recognizer));
  }
  bool accepts(const std::string& input) {
    if (!recognizer_) return false;
    recognizer_->reset();
    return recognizer_->push_bytes(input) == input.size() && recognizer_->is_accepting();
  }
  std::string gbnf;
  std::vector<std::string> warnings;

 private:
  std::optional<Recognizer> recognizer_;
};

void expect_language(const std::string& schema, const std::vector<std::string>& valid,
                     const std::vector<std::string>& invalid,
                     const JsonSchemaOptions& options = compact()) {
  Checker checker(schema, options);
  for (const std::string& text : valid)
    EXPECT_TRUE(checker.accepts(text)) << "should accept " << text << "\nschema " << schema << "\n"
                                       << checker.gbnf;
  for (const std::string& text : invalid)
    EXPECT_FALSE(checker.accepts(text)) << "should reject " << text << "\nschema " << schema << "\n"
                                        << checker.gbnf;
}

Status refusal(const std::string& schema, const JsonSchemaOptions& options = compact()) {
  Result<std::string> text = json_schema_to_gbnf(schema, options);
  if (text.ok()) return Status();
  return text.status();
}

TEST(JsonSchemaTest, EmitsRootRuleAndParses) {
  Result<std::string> text = json_schema_to_gbnf(R"({"type": "string"})", compact());
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_EQ(text->rfind("root ::= ", 0), 0u) << *text;
  Result<Grammar> grammar = json_schema_to_grammar(R"({"type": "integer"})");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  EXPECT_GE(grammar->find_rule("root"), 0);
}

TEST(JsonSchemaTest, JsonModeAcceptsAnyValue) {
  for (const char* schema : {"{}", "true"}) {
    expect_language(schema,
                    {"1", "-2.5e3", "\"x\"", "null", "true", "[1,[2,{}]]", R"({"a":{"b":[]}})"},
                    {"", "01", "[1,]", "{\"a\"}", "nul", "\"\\x\""});
  }
  Status status = refusal("false");
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
}

TEST(JsonSchemaTest, BadInputNeverCrashes) {
  EXPECT_EQ(refusal("{").code(), ErrorCode::kSyntax);
  EXPECT_EQ(refusal("not json").code(), ErrorCode::kSyntax);
  EXPECT_EQ(refusal("42").code(), ErrorCode::kSyntax);
  EXPECT_EQ(refusal(R"({"type": 5})").code(), ErrorCode::kSyntax);
  EXPECT_EQ(refusal(R"({"type": "strin"})").code(), ErrorCode::kSyntax);
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{\"items\":";
  deep += "{}";
  for (int i = 0; i < 100000; ++i) deep += "}";
  EXPECT_EQ(refusal(deep).code(), ErrorCode::kLimitExceeded);
  EXPECT_EQ(refusal(R"({"type": "string", "pattern": "a{1,99999999}"})").code(),
            ErrorCode::kLimitExceeded);
  EXPECT_EQ(refusal(R"({"$ref": "#"})").code(), ErrorCode::kUnsupported);
  EXPECT_EQ(refusal(R"({"$ref": "#/nowhere"})").code(), ErrorCode::kUnsupported);
  EXPECT_EQ(refusal(R"({"$ref": "http://example.com/remote.json"})").code(),
            ErrorCode::kUnsupported);
}

// Limits for untrusted schemas: each fails with kLimitExceeded, naming the
// option and the JSON pointer where it was exceeded.
TEST(JsonSchemaTest, LimitsNameTheOptionAndPointer) {
  auto expect_limit = [](const std::string& schema, const JsonSchemaOptions& options,
                         const std::vector<std::string>& parts) {
    Status status = refusal(schema, options);
    EXPECT_EQ(status.code(), ErrorCode::kLimitExceeded) << status.to_string();
    for (const std::string& part : parts)
      EXPECT_NE(status.message().find(part), std::string::npos) << status.message();
  };
  // Nesting of the document, and through a chain of references.
  JsonSchemaOptions shallow = compact();
  shallow.max_schema_depth = 8;
  std::string deep;
  for (int i = 0; i < 10; ++i) deep += R"({"properties": {"a": )";
  deep += "{}";
  for (int i = 0; i < 10; ++i) deep += "}}";
  expect_limit(deep, shallow,
               {"max_schema_depth (8)", "/properties/a/properties/a/properties/a/properties/a"});
  std::string chain = R"({"$ref": "#/$defs/d0", "$defs": {)";
  for (int i = 0; i < 40; ++i)
    chain += "\"d" + std::to_string(i) + R"(": {"properties": {"x": {"$ref": "#/$defs/d)" +
             std::to_string(i + 1) + "\"}}},";
  chain += R"("d40": {"type": "integer"}}})";
  expect_limit(chain, shallow, {"max_schema_depth (8) through references at /$defs/d"});
  EXPECT_TRUE(refusal(chain).ok());
  // The same chain needs 41 references.
  JsonSchemaOptions few_refs = compact();
  few_refs.max_ref_expansions = 10;
  expect_limit(chain, few_refs, {"\"$ref\" at /$defs/d", "max_ref_expansions (10)"});
  // Regex size.
  JsonSchemaOptions short_patterns = compact();
  short_patterns.max_pattern_length = 8;
  expect_limit(R"({"properties": {"code": {"pattern": "^[A-Z]{3}-[0-9]{4}$"}}})", short_patterns,
               {"\"pattern\" at /properties/code", "max_pattern_length (8)"});
  expect_limit(R"({"patternProperties": {"^x-[a-z0-9]+$": {}}})", short_patterns,
               {"\"patternProperties\" at /", "max_pattern_length (8)"});
  // Grammar size, with the schema being converted when it ran out.
  JsonSchemaOptions tiny = compact();
  tiny.max_grammar_bytes = 400;
  std::string values;
  for (int i = 0; i < 20; ++i) values += (i ? ", \"" : "\"") + std::string(30, 'a' + i) + "\"";
  expect_limit(R"({"type": "object", "properties": {"a": {"type": "object",
                 "properties": {"b": {"enum": [)" +
                   values + "]}}}}}",
               tiny, {"max_grammar_bytes (400) while converting /properties/a/properties/b"});
  // Names of any length convert without deep recursion (or fail on a limit).
  std::string long_name(20000, 'n');
  EXPECT_TRUE(refusal(R"({"properties": {")" + long_name + R"(": {}, "b": {}}})").ok());
  long_name.assign(200000, 'n');
  EXPECT_EQ(refusal(R"({"properties": {")" + long_name + R"(": {}, "b": {}}})").code(),
            ErrorCode::kLimitExceeded);
}

TEST(JsonSchemaTest, ErrorsNameKeywordAndPointer) {
  Status status = refusal(R"({"properties": {"tags": {"type": "array", "uniqueItems": true}}})");
  EXPECT_EQ(status.code(), ErrorCode::kUnsupported);
  EXPECT_NE(status.message().find("unsupported keyword \"uniqueItems\" at /properties/tags"),
            std::string::npos)
      << status.message();
  status = refusal(R"({"type": "string", "pattern": "(a)\\1"})");
  EXPECT_NE(status.message().find("\"pattern\""), std::string::npos) << status.message();
}

TEST(JsonSchemaTest, LenientModeDropsWithWarnings) {
  JsonSchemaOptions options = compact();
  options.lenient = true;
  Checker checker(R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})",
                  options);
  ASSERT_EQ(checker.warnings.size(), 1u);
  EXPECT_NE(checker.warnings[0].find("uniqueItems"), std::string::npos);
  EXPECT_TRUE(checker.accepts("[1,1]"));  // dropped: accepted
  EXPECT_FALSE(checker.accepts("[\"a\"]"));
}

TEST(JsonSchemaTest, LenientModeOnlyWidens) {
  JsonSchemaOptions options = compact();
  options.lenient = true;
  // A draft-04 `not: {type: integer}` with a range is refused exactly;
  // lenient mode drops the `not` (integers allowed again) instead of
  // retrying the same refusal for ever.
  Checker number(R"({"$schema": "http://json-schema.org/draft-04/schema#",
                     "type": "number", "minimum": 0, "not": {"type": "integer"}})",
                 options);
  ASSERT_FALSE(number.warnings.empty());
  EXPECT_TRUE(number.accepts("1.5"));
  EXPECT_TRUE(number.accepts("2"));
  EXPECT_FALSE(number.accepts("-1.5"));
  // Dropping patternProperties keeps the keys they matched allowed, even
  // where additionalProperties is false (the grammar must not become
  // stricter than the schema).
  Checker patterned(R"json({"type": "object", "properties": {"a": {"type": "integer"}},
                        "patternProperties": {"^x-(?![0-9])": {"type": "string"}},
                        "additionalProperties": false})json",
                    options);
  ASSERT_FALSE(patterned.warnings.empty());
  EXPECT_TRUE(patterned.accepts(R"({"a":1,"x-b":"s"})"));
  EXPECT_TRUE(patterned.accepts(R"({"a":1})"));
  EXPECT_FALSE(patterned.accepts(R"({"a":"s"})"));
  // A oneOf branch that cannot be negated: a grammar that accepts every
  // valid value (and more), instead of a refusal.
  const char* one_of = R"({"oneOf": [{"type": "array", "uniqueItems": true, "items": {"type":
                          "integer"}}, {"type": "array", "maxItems": 1}]})";
  EXPECT_EQ(refusal(one_of).code(), ErrorCode::kUnsupported);
  Checker branches(one_of, options);
  ASSERT_FALSE(branches.warnings.empty());
  EXPECT_TRUE(branches.accepts("[1,2]"));
  EXPECT_TRUE(branches.accepts("[\"a\"]"));
  EXPECT_TRUE(branches.accepts("[]"));
  // Under a negation, dropping would narrow: the negation that holds a
  // widened schema is dropped instead (here the schema accepted nothing).
  Checker twice(R"({"allOf": [{"enum": [{"foo": 1}]}, {"not": {"not": {"uniqueItems": true}}}]})",
                options);
  EXPECT_TRUE(twice.accepts(R"({"foo":1})"));
  EXPECT_FALSE(twice.accepts(R"({"foo":2})"));
}

TEST(JsonSchemaTest, Scalars) {
  expect_language(R"({"type": "null"})", {"null"}, {"nul", "0", "\"null\""});
  expect_language(R"({"type": "boolean"})", {"true", "false"}, {"1", "null"});
  expect_language(R"({"type": "integer"})",
                  {"0", "-7", "123456789012345678901234567890", "1.0", "-3.00"},
                  {"1.5", "01", "-", "1.", "+1", "1e5x"});
  expect_language(R"({"type": "number"})", {"0", "-0.5", "1e10", "2.5E-3", "12"},
                  {".5", "1.", "--1", "0x1"});
  expect_language(R"({"type": ["string", "null"]})", {"null", "\"a\""}, {"1", "true"});
}

// An anchor inside a pattern holds only at the start (^) or the end ($) of
// the string, as ECMA-262 reads it without flags.
TEST(JsonSchemaTest, AnchorsInsideAPattern) {
  expect_language(R"js({"type": "string", "pattern": "^(?:(?:^[*]|[a-z]+)\\.)*[a-z]+$"})js",
                  {R"("*.example.com")", R"("a.b")", R"("ab")"},
                  {R"("a.*.b")", R"("*.*.a")", R"("*")", R"("a.")"});
  expect_language(R"js({"type": "string", "pattern": "(^|,)ab(,|$)"})js",
                  {R"("ab")", R"("x,ab")", R"("ab,x")", R"("x,ab,y")"},
                  {R"("xab")", R"("abx")", R"("x,abx")", R"("")"});
  expect_language(R"js({"patternProperties": {"^$[a-z]*$": {"type": "integer"}}})js",
                  {R"({"":1})", R"({"a":"s"})"}, {R"({"":"s"})"});
  expect_language(
      R"js({"anyOf": [{"type": "string", "pattern": "/^[0-9]{4}$/"}, {"type": "integer"}]})js",
      {"2001"}, {R"("/2001/")", R"("2001")", R"("")"});
}

TEST(JsonSchemaTest, StringsAndEscapes) {
  expect_language(R"({"type": "string"})",
                  {R"("")", R"("a b")", R"("\"\\\/\b\f\n\r\t")", R"("\u00e9")", R"("\ud83d\ude00")",
                   "\"\xC3\xA9\"", "\"\xF0\x9F\x98\x80\""},
                  {"\"", "\"a", "\"\n\"", R"("\x")", R"("\u12")", R"("\ud83d")", R"("\ude00")"});
}

TEST(JsonSchemaTest, LengthsCountCodePoints) {
  expect_language(R"({"type": "string", "minLength": 2, "maxLength": 3})",
                  {R"("ab")", R"("a\nb")", R"("\u00e9\u00e9")", "\"\xC3\xA9\xC3\xA9\"",
                   R"("\ud83d\ude00\ud83d\ude00")", R"("abc")"},
                  {R"("a")", R"("abcd")", R"("\n")", R"("\ud83d\ude00")", "\"\xF0\x9F\x98\x80\""});
}

// Lengths and item counts past a few thousand are counted in blocks: exact
// at every boundary, and the grammar stays small for any bound.
TEST(JsonSchemaTest, LargeCountsAreExactInSmallGrammars) {
  auto quoted = [](size_t n, const std::string& unit = "a") {
    std::string s = "\"";
    for (size_t i = 0; i < n; ++i) s += unit;
    return s + "\"";
  };
  {
    Checker checker(R"({"type": "string", "minLength": 4100, "maxLength": 9000})");
    EXPECT_LT(checker.gbnf.size(), 4000u) << checker.gbnf;
    for (size_t n : {4100, 4101, 4200, 8191, 8192, 8193, 8999, 9000})
      EXPECT_TRUE(checker.accepts(quoted(n))) << n;
    for (size_t n : {0, 4095, 4096, 4099, 9001, 12000})
      EXPECT_FALSE(checker.accepts(quoted(n))) << n;
    EXPECT_TRUE(checker.accepts(quoted(9000, "\\n")));  // an escape is one character
    EXPECT_FALSE(checker.accepts(quoted(9001, "\\u00e9")));
  }
  {
    Checker checker(R"({"type": "string", "minLength": 5000})");
    EXPECT_TRUE(checker.accepts(quoted(5000)));
    EXPECT_TRUE(checker.accepts(quoted(13000)));
    EXPECT_FALSE(checker.accepts(quoted(4999)));
  }
  for (const char* huge : {R"({"type": "string", "maxLength": 4000000000})",
                           R"({"type": "string", "minLength": 100000000})",
                           R"({"type": "array", "maxItems": 2147483647})"}) {
    Result<std::string> text = json_schema_to_gbnf(huge, compact());
    ASSERT_TRUE(text.ok()) << text.status().to_string();
    EXPECT_LT(text->size(), 6000u) << *text;
  }
  Checker items(
      R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 5000})");
  auto array = [](size_t n) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) s += i ? ",7" : "7";
    return s + "]";
  };
  for (size_t n : {2, 4096, 4097, 5000}) EXPECT_TRUE(items.accepts(array(n))) << n;
  for (size_t n : {0, 1, 5001}) EXPECT_FALSE(items.accepts(array(n))) << n;
}

TEST(JsonSchemaTest, TypelessSchemaIsUnionOfTypes) {
  // `minimum` applies to numbers only; strings, objects... stay free.
  expect_language(R"({"minimum": 5})", {"5", "7.5", "\"abc\"", "null", "[]", "{}"},
                  {"4", "-1", "4.99"});
  expect_language(R"({"maxLength": 2})", {"\"ab\"", "12345", "[1,2,3]"}, {"\"abc\""});
  expect_language(R"({"required": ["a"]})", {"{\"a\":1}", "1", "\"x\""}, {"{}", "{\"b\":1}"});
}

TEST(JsonSchemaTest, ObjectsInSchemaOrder) {
  const char* schema = R"({"type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
    "required": ["b"]})";
  expect_language(schema,
                  {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"a":1,"b":"x","c":true})",
                   R"({"b":"x","c":false})", R"({"b":"x","zz":[1]})", R"({"zz":1,"b":"x"})"},
                  {"{}", R"({"a":1})", R"({"a":"1","b":"x"})", R"({"b":"x","a":1})",
                   R"({"b":"x","c":1})", R"({"b":"x",})", R"({"b":"x","a":"not int"})"});
}

TEST(JsonSchemaTest, AdditionalPropertiesKeyNeverShadowsDeclared) {
  // An undeclared key may not spell a declared one: "a" must be an integer.
  expect_language(
      R"({"properties": {"a": {"type": "integer"}, "ab": {"type": "string"}}})",
      {R"({"a":1})", R"({"abc":"x"})", R"({"b":null})", R"({"":1})", R"({"a":1,"x":2})"},
      {R"({"a":"s"})", R"({"ab":1})", R"({"x":1,"a":"s"})"});
  expect_language(R"({"properties": {"a": {}}, "additionalProperties": false})",
                  {R"({"a":[1]})", "{}"}, {R"({"b":1})", R"({"a":1,"b":1})"});
  expect_language(R"({"additionalProperties": {"type": "number"}})", {R"({"x":1,"y":2.5})"},
                  {R"({"x":"1"})"});
}

// Undeclared keys get the schemas of every pattern they match, or the
// additionalProperties schema when they match none; declared names keep
// their own schema (with the patterns they match).
TEST(JsonSchemaTest, PatternProperties) {
  expect_language(R"({"patternProperties": {"^x-": {"type": "integer"}}})",
                  {"{}", R"({"x-a":1})", R"({"y":"s"})", R"({"y":"s","x-b":2})"},
                  {R"({"x-a":"s"})", R"({"y":1,"x-":"s"})"});
  expect_language(R"({"patternProperties": {"a": {"type": "integer"}, "b": {"minimum": 10}},
                     "additionalProperties": {"type": "string"}})",
                  {R"({"a":1})", R"({"b":"s"})", R"({"ab":10})", R"({"c":"s"})"},
                  {R"({"a":"s"})", R"({"b":5})", R"({"ab":5})", R"({"ab":10.5})", R"({"c":1})"});
  expect_language(R"({"properties": {"xa": {"type": "string"}},
                     "patternProperties": {"^x": {"maxLength": 2}},
                     "additionalProperties": false})",
                  {R"({"xa":"ab"})", R"({"xb":"cd","xa":"e"})", R"({"x":[1]})"},
                  {R"({"xa":"abc"})", R"({"xa":1})", R"({"y":1})", R"({"xb":"abc"})"});
  expect_language(R"({"patternProperties": {"^[a-z]+$": true}, "additionalProperties": false})",
                  {R"({"ab":1})", "{}"}, {R"({"aB":1})", R"({"":1})"});
}

// propertyNames applies to every key, declared ones included.
TEST(JsonSchemaTest, PropertyNamesWithDeclaredProperties) {
  expect_language(
      R"({"properties": {"id": {"type": "integer"}}, "propertyNames": {"maxLength": 3}})",
      {R"({"id":1})", R"({"abc":"x"})", R"({"id":2,"ab":[]})"}, {R"({"id":"s"})", R"({"abcd":1})"});
  expect_language(
      R"({"properties": {"long_name": {}}, "propertyNames": {"pattern": "^[a-z]{1,4}$"}})",
      {R"({"abc":1})"}, {R"({"long_name":1})", R"({"ABC":1})"});
}

// Many optional properties and many other keys: one parse per object (an
// ambiguous grammar would run into the recognizer's per-byte work limit).
TEST(JsonSchemaTest, LongObjectsWithOtherKeysStayUnambiguous) {
  std::string schema = R"({"type": "object", "properties": {)";
  std::string instance = "{";
  for (int i = 0; i < 40; ++i) {
    schema +=
        (i ? ", " : "") + std::string("\"p") + std::to_string(i) + "\": {\"type\": \"integer\"}";
    instance +=
        (i ? "," : "") + std::string("\"x") + std::to_string(i) + " \":" + std::to_string(i);
  }
  schema += "}}";
  instance += ",\"p39\":1}";
  expect_language(schema, {instance, R"({"p3":1,"x":2,"p7":3})", "{}"},
                  {R"({"p7":1,"p3":2})", R"({"p1":"s"})"});
}

TEST(JsonSchemaTest, AdditionalPropertiesDefaultOption) {
  JsonSchemaOptions options = compact();
  options.additional_properties_default = false;
  expect_language(R"({"properties": {"a": {"type": "integer"}}})", {R"({"a":1})", "{}"},
                  {R"({"b":1})"}, options);
}

TEST(JsonSchemaTest, AnyOrderOption) {
  JsonSchemaOptions options = compact();
  options.property_order = JsonSchemaOptions::PropertyOrder::kAny;
  expect_language(
      R"({"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a", "b"],
                     "additionalProperties": false})",
      {R"({"a":1,"b":"x"})", R"({"b":"x","a":1})"},
      {R"({"a":1})", R"({"a":1,"a":2,"b":"x"})", R"({"b":"x","a":1,"b":"y"})"}, options);
}

// Required names that `properties` does not list come anywhere among the
// other members, each exactly once, in any order.
TEST(JsonSchemaTest, UnlistedRequiredNamesInAnyOrder) {
  expect_language(R"({"required": ["b", "a"]})",
                  {R"({"b":1,"a":2})", R"({"a":1,"b":2})", R"({"x":0,"b":1,"y":0,"a":2,"z":0})"},
                  {R"({"a":1})", R"({"b":1,"b":2,"a":3})", R"({"a":1,"b":2,"a":3})", "{}"});
  expect_language(R"({"properties": {"p": {}, "q": {}}, "required": ["z", "p"]})",
                  {R"({"z":1,"p":2})", R"({"p":1,"z":2,"q":3})", R"({"p":1,"q":2,"z":3})",
                   R"({"x":1,"p":2,"z":3})"},
                  {R"({"q":1,"p":2,"z":3})", R"({"p":1,"q":2})", R"({"z":1,"p":2,"z":3})"});
  // kIndented too: one fixed layout, members in any order.
  JsonSchemaOptions indented = compact();
  indented.whitespace = JsonSchemaOptions::Whitespace::kIndented;
  expect_language(R"({"type": "object", "required": ["b", "a"]})",
                  {"{\n  \"b\": 1,\n  \"a\": 2\n}", "{\n  \"a\": 1,\n  \"b\": 2\n}"},
                  {"{\n  \"a\": 1\n}"}, indented);
}

// The any-order states of one object and the counted states of another
// get names apart: x's states are o-2-1 (position 2, count 1) and the like,
// and y's base name is o-2.
TEST(JsonSchemaTest, OrderStatesOfSeveralObjectsKeepTheirNames) {
  const char* schema = R"({"type": "object", "properties": {
      "x": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "maxProperties": 2},
      "y": {"type": "object", "required": ["r", "s"]}}})";
  expect_language(schema, {R"({"x":{"b":1},"y":{"s":1,"r":2}})", R"({"y":{"r":1,"z":0,"s":2}})"},
                  {R"({"x":{"b":1,"a":2}})", R"({"y":{"r":1}})", R"({"x":{"a":1,"b":2,"c":3}})"});
}

// One object shape for the oracle: properties p0..p(listed-1) in that
// order, required names (some of them r0, r1 ... that `properties` does not
// list), additionalProperties true or false, and property counts.
struct ObjectShape {
  size_t listed = 0;
  std::vector<std::string> required;
  size_t unlisted = 0;  // r0 ... required but not listed
  bool additional = false;
  uint64_t min_properties = 0;
  std::optional<uint64_t> max_properties;

  std::string schema() const {
    std::string out = R"({"type": "object", "properties": {)";
    for (size_t i = 0; i < listed; ++i)
      out +=
          (i ? ", " : "") + std::string("\"p") + std::to_string(i) + "\": {\"type\": \"integer\"}";
    out += "}, \"required\": [";
    // Unlisted names first and backwards: neither schema nor name order.
    std::vector<std::string> names = required;
    for (size_t i = unlisted; i-- > 0;) names.insert(names.begin(), "r" + std::to_string(i));
    for (size_t i = 0; i < names.size(); ++i) out += (i ? ", \"" : "\"") + names[i] + "\"";
    out += std::string("], \"additionalProperties\": ") + (additional ? "true" : "false");
    out += ", \"minProperties\": " + std::to_string(min_properties);
    if (max_properties) out += ", \"maxProperties\": " + std::to_string(*max_properties);
    return out + "}";
  }
  // Whether the object with these keys (values 1) is valid and, for
  // `any_order` false, has the listed ones in schema order.
  bool valid(const std::vector<std::string>& keys, bool any_order) const {
    std::map<std::string, int> seen;
    int last_listed = -1;
    for (const std::string& key : keys) {
      bool declared = key[0] == 'p' || key[0] == 'r';
      if (declared && seen[key]++) return false;       // a declared name at most once
      if (key[0] != 'p' && !additional) return false;  // others take additionalProperties
      if (key[0] == 'p') {
        int index = std::stoi(key.substr(1));
        if (!any_order && index < last_listed) return false;
        last_listed = index;
      }
    }
    for (const std::string& name : required)
      if (!seen.count(name)) return false;
    for (size_t i = 0; i < unlisted; ++i)
      if (!seen.count("r" + std::to_string(i))) return false;
    return keys.size() >= min_properties && (!max_properties || keys.size() <= *max_properties);
  }
};

// Every sequence of keys (repeats included) up to `max_length`, the other
// key "x" at most once.
void for_each_key_sequence(const std::vector<std::string>& alphabet, size_t max_length,
                           const std::function<void(const std::vector<std::string>&)>& visit) {
  std::vector<std::string> keys;
  std::function<void()> extend = [&]() {
    visit(keys);
    if (keys.size() == max_length) return;
    for (const std::string& key : alphabet) {
      if (key == "x" && std::find(keys.begin(), keys.end(), "x") != keys.end()) continue;
      keys.push_back(key);
      extend();
      keys.pop_back();
    }
  };
  extend();
}

std::string object_text(const std::vector<std::string>& keys) {
  std::string out = "{";
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ",\"" : "\"") + keys[i] + "\":1";
  return out + "}";
}

int check_against_oracle(const ObjectShape& shape, bool any_order) {
  JsonSchemaOptions options = compact();
  if (any_order) options.property_order = JsonSchemaOptions::PropertyOrder::kAny;
  std::vector<std::string> alphabet = {"x"};
  for (size_t i = 0; i < shape.listed; ++i) alphabet.push_back("p" + std::to_string(i));
  for (size_t i = 0; i < shape.unlisted; ++i) alphabet.push_back("r" + std::to_string(i));
  std::vector<std::pair<std::string, bool>> cases;
  bool any_valid = false;
  for_each_key_sequence(alphabet, alphabet.size(), [&](const std::vector<std::string>& keys) {
    cases.emplace_back(object_text(keys), shape.valid(keys, any_order));
    any_valid = any_valid || cases.back().second;
  });
  if (!any_valid) {  // no object is valid (and the schema allows only objects)
    EXPECT_EQ(refusal(shape.schema(), options).code(), ErrorCode::kInvalidArgument)
        << shape.schema();
    return 0;
  }
  Checker checker(shape.schema(), options);
  EXPECT_TRUE(checker.warnings.empty()) << shape.schema();
  for (const auto& [text, expected] : cases)
    EXPECT_EQ(checker.accepts(text), expected) << text << "\nschema " << shape.schema() << "\n"
                                               << checker.gbnf;
  return static_cast<int>(cases.size());
}

// PropertyOrder::kAny against a brute-force oracle: for up to 4 properties
// and every set of required ones, every ordering of every subset of the
// keys, with repeats and another key, is accepted iff it is valid.
TEST(JsonSchemaTest, AnyOrderMatchesOracle) {
  int checked = 0;
  for (size_t n = 1; n <= 4; ++n) {
    for (uint32_t required = 0; required < (1u << n); ++required) {
      for (int variant = 0; variant < 3; ++variant) {
        ObjectShape shape;
        shape.listed = n;
        for (size_t i = 0; i < n; ++i)
          if (required & (1u << i)) shape.required.push_back("p" + std::to_string(i));
        shape.additional = variant != 0;
        if (variant == 2) shape.min_properties = 2, shape.max_properties = 3;
        checked += check_against_oracle(shape, true);
      }
    }
  }
  // Required names that `properties` does not list are in any order too.
  for (size_t unlisted = 1; unlisted <= 2; ++unlisted) {
    ObjectShape shape;
    shape.listed = 2;
    shape.required = {"p1"};
    shape.unlisted = unlisted;
    shape.additional = true;
    checked += check_against_oracle(shape, true);
  }
  EXPECT_GT(checked, 100000);
}

// PropertyOrder::kSchema against the oracle: listed properties in schema
// order, required names that `properties` does not list anywhere, each
// exactly once.
TEST(JsonSchemaTest, SchemaOrderWithUnlistedRequiredMatchesOracle) {
  int checked = 0;
  for (size_t unlisted = 1; unlisted <= 3; ++unlisted) {
    for (uint32_t required = 0; required < 4; ++required) {
      for (int variant = 0; variant < 3; ++variant) {
        ObjectShape shape;
        shape.listed = unlisted == 3 ? 1 : 2;
        for (size_t i = 0; i < shape.listed; ++i)
          if (required & (1u << i)) shape.required.push_back("p" + std::to_string(i));
        shape.unlisted = unlisted;
        shape.additional = variant != 0;
        if (variant == 2) shape.min_properties = 2, shape.max_properties = unlisted + 1;
        checked += check_against_oracle(shape, false);
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

std::string object_schema(size_t properties, size_t required) {
  std::string schema = R"({"type": "object", "properties": {)";
  std::string names;
  for (size_t i = 0; i < properties; ++i) {
    schema +=
        (i ? ", " : "") + std::string("\"p") + std::to_string(i) + "\": {\"type\": \"integer\"}";
    if (i < required) names += (i ? ", \"p" : "\"p") + std::to_string(i) + "\"";
  }
  return schema + "}, \"required\": [" + names + "], \"additionalProperties\": false}";
}

std::string ordered_instance(const std::vector<size_t>& order) {
  std::string out = "{";
  for (size_t i = 0; i < order.size(); ++i)
    out += (i ? ",\"p" : "\"p") + std::to_string(order[i]) + "\":1";
  return out + "}";
}

// Past any_order_max_alternatives an object is one AnyOrder(...) call,
// still exact; without calls (any_order_calls false), or where the call
// cannot count minProperties or maxProperties, it falls back to schema
// order, with one warning naming it; smaller objects next to it stay in
// any order.
TEST(JsonSchemaTest, AnyOrderPastTheBoundIsACallOrFallsBackWithAWarning) {
  JsonSchemaOptions options = compact();
  options.property_order = JsonSchemaOptions::PropertyOrder::kAny;
  // 9 properties take 9 * 2^8 = 2304 alternatives, 10 take 5120: the
  // default bound (4096) lies between.
  const std::string nine = object_schema(9, 9), ten = object_schema(10, 5);
  const std::string schema = R"({"type": "object", "properties": {"small": )" + nine +
                             R"(, "args": )" + ten +
                             R"(, "again": {"$ref": "#/properties/args"}}})";
  const std::string ten_in_order = ordered_instance({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const std::string ten_swapped = ordered_instance({1, 0, 2, 3, 4, 5, 6, 7, 8, 9});
  const std::string nine_backwards = ordered_instance({8, 7, 6, 5, 4, 3, 2, 1, 0});
  {
    Checker checker(schema, options);
    EXPECT_TRUE(checker.warnings.empty()) << ::testing::PrintToString(checker.warnings);
    EXPECT_NE(checker.gbnf.find("AnyOrder("), std::string::npos);
    EXPECT_TRUE(checker.accepts(R"({"args":)" + ten_in_order + "}"));
    EXPECT_TRUE(checker.accepts(R"({"args":)" + ten_swapped + "}"));
    EXPECT_TRUE(checker.accepts(R"({"again":)" + ordered_instance({9, 4, 3, 2, 1, 0}) + "}"));
    // p0 to p4 are required; each property comes at most once.
    EXPECT_FALSE(checker.accepts(R"({"args":)" + ordered_instance({9, 3, 2, 1, 0}) + "}"));
    EXPECT_FALSE(checker.accepts(R"({"args":)" + ordered_instance({4, 3, 2, 1, 0, 3}) + "}"));
    EXPECT_TRUE(checker.accepts(R"({"small":)" + nine_backwards + "}"));
    EXPECT_FALSE(
        checker.accepts(R"({"small":)" + ordered_instance({8, 7, 6, 5, 4, 3, 2, 1, 8}) + "}"));
  }
  {
    options.any_order_calls = false;
    Checker checker(schema, options);
    ASSERT_EQ(checker.warnings.size(), 1u) << ::testing::PrintToString(checker.warnings);
    EXPECT_NE(checker.warnings[0].find("the object at /properties/args"), std::string::npos)
        << checker.warnings[0];
    EXPECT_NE(checker.warnings[0].find("schema order"), std::string::npos) << checker.warnings[0];
    EXPECT_NE(checker.warnings[0].find("any_order_max_alternatives"), std::string::npos);
    EXPECT_NE(checker.warnings[0].find("any_order_calls"), std::string::npos);
    EXPECT_EQ(checker.gbnf.find("AnyOrder("), std::string::npos);
    EXPECT_TRUE(checker.accepts(R"({"args":)" + ten_in_order + "}"));
    EXPECT_FALSE(checker.accepts(R"({"args":)" + ten_swapped + "}"));
    EXPECT_TRUE(checker.accepts(R"({"small":)" + nine_backwards + "}"));
    options.any_order_calls = true;
  }
  {
    // maxProperties is not counted by the call: schema order.
    std::string counted = object_schema(16, 0);
    counted.insert(1, R"("maxProperties": 15, )");
    Checker checker(counted, options);
    ASSERT_EQ(checker.warnings.size(), 1u) << ::testing::PrintToString(checker.warnings);
    EXPECT_NE(checker.warnings[0].find("maxProperties"), std::string::npos) << checker.warnings[0];
    EXPECT_TRUE(checker.accepts(ordered_instance({0, 1, 2, 3, 4, 5})));
    EXPECT_FALSE(checker.accepts(ordered_instance({1, 0, 2, 3, 4})));
    EXPECT_TRUE(
        checker.accepts(ordered_instance({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})));
    EXPECT_FALSE(
        checker.accepts(ordered_instance({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})));
  }

  // Small objects are calls too; where the call cannot count
  // (maxProperties), they are spelled out within the bound.
  Checker three(object_schema(3, 1), options);
  EXPECT_NE(three.gbnf.find("AnyOrder("), std::string::npos);
  EXPECT_TRUE(three.accepts(ordered_instance({2, 0, 1})));
  EXPECT_FALSE(three.accepts(ordered_instance({2, 1})));
  std::string counted_three = object_schema(3, 1);
  counted_three.insert(1, R"("maxProperties": 2, )");
  Checker spelled(counted_three, options);
  EXPECT_TRUE(spelled.warnings.empty());
  EXPECT_EQ(spelled.gbnf.find("AnyOrder("), std::string::npos);
  EXPECT_TRUE(spelled.accepts(ordered_instance({2, 0})));
  EXPECT_FALSE(spelled.accepts(ordered_instance({2, 0, 1})));

  // Without calls, the bound counts alternatives, not properties: 5
  // properties take 80, 6 take 192.
  options.any_order_calls = false;
  options.any_order_max_alternatives = 100;
  Checker five(object_schema(5, 0), options);
  EXPECT_TRUE(five.warnings.empty());
  EXPECT_TRUE(five.accepts(ordered_instance({4, 3, 2, 1, 0})));
  Checker six(object_schema(6, 0), options);
  ASSERT_EQ(six.warnings.size(), 1u);
  EXPECT_NE(six.warnings[0].find("the object at /"), std::string::npos) << six.warnings[0];
  EXPECT_TRUE(six.accepts(ordered_instance({0, 2, 5})));
  EXPECT_FALSE(six.accepts(ordered_instance({2, 0})));
}

// 30 properties in any order, with additional properties between them:
// each declared one at most once, the required ones present.
TEST(JsonSchemaTest, ThirtyPropertiesInAnyOrder) {
  JsonSchemaOptions options = compact();
  options.property_order = JsonSchemaOptions::PropertyOrder::kAny;
  std::string schema = object_schema(30, 3);
  schema.replace(schema.find(R"("additionalProperties": false)"),
                 std::string(R"("additionalProperties": false)").size(),
                 R"("additionalProperties": {"type": "string"})");
  Checker checker(schema, options);
  EXPECT_TRUE(checker.warnings.empty()) << ::testing::PrintToString(checker.warnings);
  std::vector<size_t> backwards;
  for (size_t i = 30; i-- > 0;) backwards.push_back(i);
  EXPECT_TRUE(checker.accepts(ordered_instance(backwards)));
  EXPECT_TRUE(checker.accepts(R"({"p29":1,"x":"a","p2":3,"p1":2,"y":"b","p0":0})"));
  EXPECT_FALSE(checker.accepts(R"({"p29":1,"x":"a","p2":3,"p1":2,"p29":0,"p0":0})"));
  EXPECT_FALSE(checker.accepts(R"({"p29":1,"p2":3,"p1":2})"));
  EXPECT_FALSE(checker.accepts(R"({"p2":1,"p1":2,"p0":3,"x":4})"));
}

// Past the bound, required names that `properties` does not list follow
// the listed ones in name order, with a warning.
TEST(JsonSchemaTest, UnlistedRequiredNamesFallBackToNameOrderWithAWarning) {
  std::string names, sorted;
  for (int i = 12; i >= 0; --i) {
    std::string name = "r" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    names += (names.empty() ? "\"" : ", \"") + name + "\"";
  }
  for (int i = 0; i <= 12; ++i)
    sorted += std::string(i ? "," : "") + "\"r" + (i < 10 ? "0" : "") + std::to_string(i) + "\":1";
  const std::string schema = R"({"properties": {"q": {"required": [)" + names + "]}}}";
  Checker checker(schema);  // 13 names: 2^13 states
  ASSERT_EQ(checker.warnings.size(), 1u) << ::testing::PrintToString(checker.warnings);
  EXPECT_NE(checker.warnings[0].find("the object at /properties/q"), std::string::npos)
      << checker.warnings[0];
  EXPECT_NE(checker.warnings[0].find("name order"), std::string::npos) << checker.warnings[0];
  EXPECT_TRUE(checker.accepts(R"({"q":{)" + sorted + "}}"));
  EXPECT_FALSE(checker.accepts(R"({"q":{"r01":1,"r00":1,)" + sorted.substr(16) + "}}"));
  // Three names: no warning, any order.
  Checker small(R"({"required": ["c", "b", "a"]})");
  EXPECT_TRUE(small.warnings.empty());
  EXPECT_TRUE(small.accepts(R"({"c":1,"a":2,"b":3})"));
}

// The largest any-order object within the default bound (9 properties)
// compiles with the default CompileOptions, and the matcher takes its
// members in any order.
TEST(JsonSchemaTest, AnyOrderAtTheBoundCompiles) {
  std::vector<std::string> tokens = {"{", "}",   "\"",  ",",   ":", "1",  "p",
                                     "0", "2",   "3",   "4",   "5", "6",  "7",
                                     "8", "{\"", "\":", ",\"", " ", "\n", "</s>"};
  auto vocab = Vocabulary::from_token_bytes(tokens, {20});
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  JsonSchemaOptions options;
  options.property_order = JsonSchemaOptions::PropertyOrder::kAny;
  for (size_t required : {size_t{0}, size_t{4}, size_t{9}}) {
    std::vector<std::string> warnings;
    auto text = json_schema_to_gbnf(object_schema(9, required), options, &warnings);
    ASSERT_TRUE(text.ok()) << text.status().to_string();
    EXPECT_TRUE(warnings.empty());
    auto compiled = CompiledGrammar::from_gbnf(*text, *vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    Matcher matcher(*compiled);
    ASSERT_TRUE(matcher.accept_bytes(ordered_instance({8, 7, 6, 5, 4, 3, 2, 1, 0})).ok());
    EXPECT_TRUE(matcher.is_accepting());
    std::vector<uint32_t> mask(compiled->mask_words());
    EXPECT_TRUE(matcher.fill_mask(mask.data(), mask.size()).ok());
  }
}

TEST(JsonSchemaTest, PropertyCounts) {
  expect_language(R"({"type": "object", "minProperties": 1, "maxProperties": 2})",
                  {R"({"a":1})", R"({"a":1,"b":2})"}, {"{}", R"({"a":1,"b":2,"c":3})"});
  expect_language(R"({"properties": {"a": {}, "b": {}}, "maxProperties": 1})",
                  {R"({"a":1})", R"({"b":1})", R"({"x":1})", "{}"},
                  {R"({"a":1,"b":2})", R"({"a":1,"x":1})"});
}

TEST(JsonSchemaTest, EnumAndConst) {
  expect_language(R"({"enum": [1, "a", null, [1, 2], {"k": true}]})",
                  {"1", "1.0", "\"a\"", "null", "[1,2]", "[1.0,2]", R"({"k":true})"},
                  {"2", "\"b\"", "[2,1]", R"({"k":false})", "true"});
  expect_language(R"({"const": 0})", {"0", "-0", "0.0"}, {"1", "\"0\"", "false"});
  expect_language(R"({"const": 2.5})", {"2.5", "2.50"}, {"2.4", "25"});
  // A constraint next to enum filters it.
  expect_language(R"({"enum": [1, 2, 3, "x"], "minimum": 2})", {"2", "3", "\"x\""}, {"1"});
}

// Keywords a draft does not define are annotations in its schemas.
TEST(JsonSchemaTest, KeywordsFollowTheDraft) {
  const char* draft4 = R"({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
      "properties": {"a": {"const": 1}}, "if": {"required": ["a"]}, "then": {"required": ["b"]}})";
  expect_language(draft4, {R"({"a":2})", R"({"a":1})"}, {"1"});
  const char* draft6 = R"({"$schema": "http://json-schema.org/draft-06/schema#", "type": "object",
      "properties": {"a": {"const": 1}}, "if": {"required": ["a"]}, "then": {"required": ["b"]}})";
  expect_language(draft6, {R"({"a":1})"}, {R"({"a":2})"});
  const char* draft7 = R"({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
      "properties": {"a": {"const": 1}}, "if": {"required": ["a"]}, "then": {"required": ["b"]}})";
  expect_language(draft7, {R"({"a":1,"b":0})", "{}"}, {R"({"a":1})", R"({"a":2,"b":0})"});
}

TEST(JsonSchemaTest, Draft4Integers) {
  const char* schema = R"({"$schema": "http://json-schema.org/draft-04/schema#",
    "properties": {"id": {"type": "integer", "minimum": 5, "exclusiveMinimum": true}}})";
  expect_language(schema, {R"({"id":6})", R"({"id":12345})"}, {R"({"id":5})", R"({"id":12345.0})"});
  expect_language(R"({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"})",
                  {"1"}, {"1.0"});
}

// Draft-04 integers are written without a fraction, so `not integer` holds
// every number text with a fraction or an exponent, integral or not.
TEST(JsonSchemaTest, Draft4NotInteger) {
  const std::string draft4 = R"("$schema": "http://json-schema.org/draft-04/schema#")";
  expect_language("{" + draft4 + R"(, "not": {"type": "integer"}})",
                  {"1.0", "1.5", "-2e3", "1e2", "0.0", R"("x")", "null", "[1]"},
                  {"1", "0", "-7", "12345"});
  expect_language("{" + draft4 + R"(, "type": "number", "not": {"type": "integer", "minimum": 5}})",
                  {"1.0", "7.5", "2", "-3", "4", "5e0"}, {"5", "6", "100"});
  EXPECT_EQ(refusal("{" + draft4 + R"(, "type": "integer", "not": {"type": "integer"}})").code(),
            ErrorCode::kInvalidArgument);  // accepts no value
  const Status refused = refusal("{" + draft4 + R"(, "minimum": 0, "not": {"type": "integer"}})");
  EXPECT_EQ(refused.code(), ErrorCode::kUnsupported) << refused.to_string();
  EXPECT_NE(refused.message().find("\"not\""), std::string::npos) << refused.to_string();
}

TEST(JsonSchemaTest, IntegerRanges) {
  expect_language(R"({"type": "integer", "minimum": -15, "exclusiveMaximum": 120})",
                  {"-15", "-9", "-10", "0", "9", "10", "99", "100", "119"},
                  {"-16", "-100", "120", "1000", "-0.5"});
  expect_language(R"({"type": "integer", "minimum": 1.5, "maximum": 3.5})", {"2", "3"}, {"1", "4"});
}

TEST(JsonSchemaTest, IntegerRangesExhaustive) {
  std::mt19937 random(7);
  for (int round = 0; round < 40; ++round) {
    int lo = static_cast<int>(random() % 2400) - 1200;
    int hi = lo + static_cast<int>(random() % 1500);
    bool has_lo = random() % 4 != 0, has_hi = random() % 4 != 0;
    std::string schema = "{\"type\":\"integer\"";
    if (has_lo) schema += ",\"minimum\":" + std::to_string(lo);
    if (has_hi) schema += ",\"maximum\":" + std::to_string(hi);
    schema += "}";
    Checker checker(schema);
    for (int v = -1300; v <= 2800; v += 1 + static_cast<int>(random() % 7)) {
      bool in = (!has_lo || v >= lo) && (!has_hi || v <= hi);
      ASSERT_EQ(checker.accepts(std::to_string(v)), in) << schema << " value " << v << "\n"
                                                        << checker.gbnf;
    }
  }
}

TEST(JsonSchemaTest, DecimalRangesMatchComparison) {
  std::mt19937 random(11);
  auto random_decimal = [&]() {
    int whole = static_cast<int>(random() % 30) - 15;
    int frac = static_cast<int>(random() % 1000);
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%s%d.%03d", whole < 0 ? "-" : "", std::abs(whole), frac);
    return std::string(buffer);
  };
  for (int round = 0; round < 30; ++round) {
    std::string lo = random_decimal(), hi = random_decimal();
    if (internal::compare(*internal::parse_decimal(lo), *internal::parse_decimal(hi)) > 0)
      std::swap(lo, hi);
    bool lo_exclusive = random() % 2, hi_exclusive = random() % 2;
    std::string schema = std::string("{\"type\":\"number\",\"") +
                         (lo_exclusive ? "exclusiveMinimum" : "minimum") + "\":" + lo + ",\"" +
                         (hi_exclusive ? "exclusiveMaximum" : "maximum") + "\":" + hi + "}";
    Result<std::string> text = json_schema_to_gbnf(schema, compact());
    if (!text.ok() && lo == hi) continue;
    ASSERT_TRUE(text.ok()) << schema << ": " << text.status().to_string();
    Result<Grammar> grammar = parse_gbnf(*text);
    ASSERT_TRUE(grammar.ok()) << *text;
    auto recognizer = Recognizer::create(*grammar);
    ASSERT_TRUE(recognizer.ok());
    auto lo_value = *internal::parse_decimal(lo), hi_value = *internal::parse_decimal(hi);
    for (int k = 0; k < 300; ++k) {
      std::string candidate = random_decimal();
      if (k % 3 == 0) candidate = candidate.substr(0, candidate.size() - 1 - random() % 3);
      if (candidate.back() == '.') candidate.pop_back();
      if (k % 7 == 0 && candidate.find('.') != std::string::npos) candidate += "0";
      auto value = *internal::parse_decimal(candidate);
      int c_lo = internal::compare(value, lo_value), c_hi = internal::compare(value, hi_value);
      bool in = (lo_exclusive ? c_lo > 0 : c_lo >= 0) && (hi_exclusive ? c_hi < 0 : c_hi <= 0);
      recognizer->reset();
      bool accepted =
          recognizer->push_bytes(candidate) == candidate.size() && recognizer->is_accepting();
      ASSERT_EQ(accepted, in) << schema << " value " << candidate << "\n" << *text;
    }
  }
}

TEST(JsonSchemaTest, NumberRangesAcceptExponentForms) {
  // Python and JavaScript write these; every spelling of an in-range value
  // with a small exponent or a scientific mantissa is accepted, and no
  // spelling of a value out of range.
  expect_language(R"({"type": "number", "minimum": 0})",
                  {"0", "1e-06", "2.5e3", "1e+2", "0e0", "0.0E-5", "-0", "-0.0", "-0e3", "1E400",
                   "0.5e-10", "100.25e+0007", "12e-300"},
                  {"-1e-9", "-1", "-0.1e0", "-1e+2", "-5e-324", "1e", "1e+", "1.e2", ".5e1"});
  expect_language(R"({"type": "number", "exclusiveMinimum": 0})", {"1e-300", "0.001e-5", "3E3"},
                  {"0", "0e5", "-0", "0.000e1", "-1e-9"});
  expect_language(R"({"type": "number", "exclusiveMaximum": 0})", {"-1e-300", "-2.5E+3"},
                  {"0", "-0", "-0e1", "1e-300"});
  expect_language(R"({"type": "number", "maximum": 100})",
                  {"1e2", "100.0e0", "0.1e3", "1e+02", "1.00e2", "10e1", "1000e-1", "9.99e1",
                   "1e-300", "-1e300", "-5.5e+7", "0.01e4", "100e-0", "1e0002"},
                  {"1.01e2", "1e3", "101e0", "1001e-1", "0.1001e3", "1.0000001e2", "2e2", "1e300",
                   "1.1e+2", "0.00101e5"});
  expect_language(R"({"type": "number", "exclusiveMaximum": 100})", {"9.99e1", "99.99", "0.0999e3"},
                  {"1e2", "100.0e0", "0.1e3", "1e+2", "1.000001e2"});
  expect_language(
      R"({"type": "number", "minimum": -180, "maximum": 180})",
      {"-1.8e2", "1.8e+2", "1.79e2", "-1e-5", "1.8e2", "18e1", "-0.18e3", "180e0", "0e99",
       "-1.23456789e-300"},
      {"1.81e2", "-1.800001e2", "2e2", "1e3", "1.8e3", "-1.8e+3", "181e0", "-0.181e3", "1e300"});
  expect_language(R"({"type": "number", "exclusiveMinimum": 0.5})",
                  {"5.1e-1", "6e-1", "1e10", "50.1e-2", "0.51e0", "1.5E+300"},
                  {"5e-1", "0.5e0", "50e-2", "4.9e-1", "1e-300", "0", "5.0e-1", "0.05e1"});
  expect_language(R"({"type": "number", "minimum": 0, "maximum": 1})",
                  {"1e0", "1e-6", "0.1e1", "10e-1", "0e5", "1.0E+0", "9.99e-301", "-0"},
                  {"1.1e0", "2e-0", "1.0000001e0", "-1e-9", "1e1", "0.11e1", "10.1e-1"});
  // Bounds whose order of magnitude is far from 1.
  expect_language(R"({"type": "number", "maximum": 1e-10, "minimum": 0})",
                  {"1e-10", "9.9e-11", "1e-11", "0"}, {"1.1e-10", "2e-10", "1e-9", "0.1e-8"});
  expect_language(R"({"type": "number", "minimum": 1e20})",
                  {"1e20", "1.5e+20", "2e21", "1e100", "100000000000000000000"},
                  {"9.99e19", "1e19", "99999999999999999999", "0"});
  // A bound of more than 40 digits: exponents other than 0 only with a
  // scientific mantissa.
  expect_language(R"({"type": "number", "minimum": 1e-50, "maximum": 1.5e60})",
                  {"1e-50", "2.5e-3", "0.5", "1e-50", "1.5e60", "1.4999E+60", "7e0", "700e0"},
                  {"9.9e-51", "0", "1e-51", "1.6e60", "1e61", "-1e-50"});
  expect_language(R"({"type": "number", "minimum": 2.5e-7, "exclusiveMaximum": 3e5})",
                  {"2.5e-7", "2.6e-7", "3e-6", "2.99999e5", "1e0"},
                  {"2.4e-7", "2.5e-8", "3e5", "3.0e+5", "1e6"});
}

// Random bounds and random exponent spellings against exact comparison:
// nothing out of range is accepted, and in range every spelling with an
// exponent in [-4, 4] or a mantissa of one non-zero digit before the point.
TEST(JsonSchemaTest, ExponentFormsMatchComparison) {
  std::mt19937 random(23);
  auto digits = [&](size_t count, bool nonzero_first) {
    std::string out;
    for (size_t i = 0; i < count; ++i)
      out +=
          static_cast<char>((nonzero_first && i == 0 ? '1' + random() % 9 : '0' + random() % 10));
    return out;
  };
  auto random_bound = [&]() {
    std::string text = (random() % 3 == 0 ? "-" : "") + digits(1, true);
    if (random() % 2) text += "." + digits(1 + random() % 3, false);
    return text + "e" + std::to_string(static_cast<int>(random() % 17) - 8);
  };
  for (int round = 0; round < 40; ++round) {
    std::string lo = random_bound(), hi = random_bound();
    if (internal::compare(*internal::parse_decimal(lo), *internal::parse_decimal(hi)) > 0)
      std::swap(lo, hi);
    const int shape = static_cast<int>(random() % 4);  // both, lower only, upper only, zero
    if (shape == 3) {
      lo = "0";
      if (hi[0] == '-') hi = hi.substr(1);
    }
    bool lo_exclusive = random() % 2, hi_exclusive = random() % 2;
    std::string schema = "{\"type\":\"number\"";
    if (shape != 2)
      schema += std::string(",\"") + (lo_exclusive ? "exclusiveMinimum" : "minimum") + "\":" + lo;
    if (shape != 1)
      schema += std::string(",\"") + (hi_exclusive ? "exclusiveMaximum" : "maximum") + "\":" + hi;
    schema += "}";
    Checker checker(schema);
    auto lo_value = *internal::parse_decimal(lo), hi_value = *internal::parse_decimal(hi);
    for (int k = 0; k < 400; ++k) {
      // A mantissa near a bound's digits, or random; an exponent near the
      // bounds' orders.
      std::string mantissa;
      const int kind = static_cast<int>(random() % 3);
      if (kind == 0) {
        mantissa = digits(1, true) + (random() % 2 ? "." + digits(1 + random() % 4, false) : "");
      } else if (kind == 1) {
        mantissa = (random() % 4 ? "0" : digits(1 + random() % 3, true)) + "." +
                   digits(1 + random() % 5, false);
      } else {
        mantissa = digits(1 + random() % 3, true);
      }
      const int exponent = static_cast<int>(random() % 25) - 12;
      std::string sign = random() % 3 == 0 ? "-" : "";
      std::string candidate = sign + mantissa + (random() % 2 ? "e" : "E");
      if (exponent >= 0 && random() % 2) candidate += "+";
      if (exponent < 0) candidate += "-";
      if (random() % 5 == 0) candidate += "0";
      candidate += std::to_string(std::abs(exponent));
      auto value = *internal::parse_decimal(candidate);
      int c_lo = internal::compare(value, lo_value), c_hi = internal::compare(value, hi_value);
      bool in = (shape == 2 || (lo_exclusive ? c_lo > 0 : c_lo >= 0)) &&
                (shape == 1 || (hi_exclusive ? c_hi < 0 : c_hi <= 0));
      const bool scientific = mantissa[0] != '0' && (mantissa.size() == 1 || mantissa[1] == '.');
      const bool promised = scientific || std::abs(exponent) <= 4;
      const bool accepted = checker.accepts(candidate);
      if (!in) ASSERT_FALSE(accepted) << schema << " accepts " << candidate << "\n" << checker.gbnf;
      if (in && promised)
        ASSERT_TRUE(accepted) << schema << " rejects " << candidate << "\n" << checker.gbnf;
    }
  }
}

// Sizes of the number rule for common bounds stay small.
TEST(JsonSchemaTest, ExponentFormsKeepNumberRulesSmall) {
  for (const char* bounds :
       {R"("minimum": 0)", R"("minimum": 0, "maximum": 1)", R"("minimum": -180, "maximum": 180)",
        R"("exclusiveMinimum": 0.5)", R"("minimum": 0, "maximum": 100)"}) {
    std::string schema = std::string("{\"type\": \"number\", ") + bounds + "}";
    Checker checker(schema);
    EXPECT_LT(checker.gbnf.size(), 2500u) << schema << "\n" << checker.gbnf;
  }
}

TEST(JsonSchemaTest, MultipleOf) {
  expect_language(R"({"type": "integer", "multipleOf": 3})", {"0", "3", "-6", "999", "12.0"},
                  {"1", "4", "1000", "1.5"});
  expect_language(R"({"type": "number", "multipleOf": 0.25})", {"0.5", "1.25", "-3", "2.750"},
                  {"0.3", "1.2", "0.125"});
  // For integers, a divisor of 1 constrains nothing: any range goes with it.
  expect_language(R"({"type": "integer", "minimum": 1, "multipleOf": 1})", {"1", "7", "100000"},
                  {"0", "-3", "1.5"});
  expect_language(R"({"type": "integer", "maximum": -2, "multipleOf": 0.5})", {"-2", "-71"},
                  {"-1", "0", "3"});
  // One-sided ranges, and ranges of too many multiples to list.
  expect_language(R"({"type": "integer", "minimum": 1, "multipleOf": 3})",
                  {"3", "9", "300000000000000000000", "6.0"}, {"0", "-3", "4", "1.5"});
  expect_language(R"({"type": "number", "multipleOf": 1, "minimum": 1})", {"1", "2.0", "12"},
                  {"0", "1.5", "-4"});
  expect_language(R"({"type": "number", "multipleOf": 11, "minimum": 100})",
                  {"110", "1001", "121.00"}, {"99", "100", "111", "-110"});
  expect_language(R"({"type": "number", "multipleOf": 0.01, "minimum": 0,
                      "maximum": 99999999999.99})",
                  {"0", "12.5", "99999999999.99", "0.10", "7.770"},
                  {"-0.01", "0.001", "100000000000", "99999999999.991"});
  expect_language(R"({"type": "number", "multipleOf": 0.5, "exclusiveMaximum": -2})",
                  {"-2.5", "-100", "-3.0"}, {"-2", "-2.25", "0", "1"});
  // `not` of multipleOf, alone, with multipleOf, and twice.
  expect_language(R"({"type": "integer", "not": {"multipleOf": 2}})", {"1", "-3", "7.0"},
                  {"2", "0", "1.5", "-4"});
  expect_language(R"({"type": "number", "multipleOf": 0.5, "not": {"multipleOf": 1},
                      "minimum": 0})",
                  {"0.5", "2.5", "10.50"}, {"1", "0", "0.25", "-0.5"});
  expect_language(R"({"type": "number", "not": {"multipleOf": 0.5}})", {"0.25", "1.3", "-0.123"},
                  {"1.5", "2", "0", "3.50"});
  expect_language(R"({"type": "number", "not": {"not": {"multipleOf": 3}}})", {"3", "-9", "0"},
                  {"1", "4.5"});
  // A divisor of more than 9 significant digits with a one-sided range is refused.
  EXPECT_EQ(json_schema_to_gbnf(R"({"type": "number", "minimum": 1, "multipleOf": 1234567891})")
                .status()
                .code(),
            ErrorCode::kUnsupported);
}

// multipleOf, and `not` of it, with every kind of range against exact
// decimal arithmetic, over plain spellings (negative zeros aside: other
// number grammars refuse them).
TEST(JsonSchemaTest, MultiplesInRangesMatchArithmetic) {
  std::mt19937 random(23);
  const std::vector<std::string> divisors = {"3", "0.25", "1.5", "11", "0.01", "7", "0.5", "4"};
  const std::vector<std::string> bounds = {"0",  "1",      "100",  "-5",    "-0.5", "2.5",
                                           "17", "-12.25", "0.01", "99.99", "-100", "3"};
  auto pick = [&](const std::vector<std::string>& from) { return from[random() % from.size()]; };
  int checked_schemas = 0;
  for (int round = 0; round < 150; ++round) {
    const std::string divisor = pick(divisors), lo = pick(bounds), hi = pick(bounds);
    const std::string excluded = pick(divisors);
    const bool has_excluded = random() % 2 == 0;
    const bool has_divisor = !has_excluded || random() % 3 != 0;
    const bool has_lo = random() % 3 != 0, has_hi = random() % 3 != 0;
    const bool lo_exclusive = random() % 2, hi_exclusive = random() % 2;
    const bool integer = random() % 2;
    std::string schema = std::string("{\"type\":\"") + (integer ? "integer" : "number") + "\"";
    if (has_divisor) schema += ",\"multipleOf\":" + divisor;
    if (has_excluded) schema += ",\"not\":{\"multipleOf\":" + excluded + "}";
    if (has_lo)
      schema += std::string(",\"") + (lo_exclusive ? "exclusiveMinimum" : "minimum") + "\":" + lo;
    if (has_hi)
      schema += std::string(",\"") + (hi_exclusive ? "exclusiveMaximum" : "maximum") + "\":" + hi;
    schema += "}";
    Result<std::string> text = json_schema_to_gbnf(schema, compact());
    if (!text.ok() && text.status().code() == ErrorCode::kInvalidArgument) continue;  // empty
    // (Divisors whose lcm needs too many states are refused, by name.)
    if (!text.ok() && has_divisor && has_excluded &&
        text.status().message().find("need too many states") != std::string::npos)
      continue;
    ASSERT_TRUE(text.ok()) << schema << ": " << text.status().to_string();
    Result<Grammar> grammar = parse_gbnf(*text);
    ASSERT_TRUE(grammar.ok()) << *text;
    auto recognizer = Recognizer::create(*grammar);
    ASSERT_TRUE(recognizer.ok());
    ++checked_schemas;
    const auto divisor_value = *internal::parse_decimal(divisor);
    const auto excluded_value = *internal::parse_decimal(excluded);
    for (int k = 0; k < 400; ++k) {
      std::string candidate = random() % 3 == 0 ? "-" : "";
      candidate += std::to_string(random() % 4 == 0 ? random() % 20 : random() % 500);
      if (random() % 2) {
        candidate += ".";
        for (int digits = 1 + random() % 4; digits > 0; --digits)
          candidate += static_cast<char>('0' + random() % 10);
      }
      if (candidate[0] == '-' && candidate.find_first_of("123456789") == std::string::npos)
        continue;
      const auto value = *internal::parse_decimal(candidate);
      bool in = (!integer || value.is_integer()) &&
                (!has_divisor || *internal::is_multiple_of(value, divisor_value)) &&
                (!has_excluded || !*internal::is_multiple_of(value, excluded_value));
      if (has_lo) {
        const int c = internal::compare(value, *internal::parse_decimal(lo));
        in = in && (lo_exclusive ? c > 0 : c >= 0);
      }
      if (has_hi) {
        const int c = internal::compare(value, *internal::parse_decimal(hi));
        in = in && (hi_exclusive ? c < 0 : c <= 0);
      }
      recognizer->reset();
      const bool accepted =
          recognizer->push_bytes(candidate) == candidate.size() && recognizer->is_accepting();
      ASSERT_EQ(accepted, in) << schema << " value " << candidate << "\n" << *text;
    }
  }
  EXPECT_GT(checked_schemas, 80);
}

TEST(JsonSchemaTest, Patterns) {
  expect_language(R"({"type": "string", "pattern": "^[a-z]+\\d{2,3}$"})",
                  {R"("ab12")", R"("x123")"},
                  {R"("ab1")", R"("AB12")", R"("ab1234")", R"("-ab12")"});
  // Unanchored: contains a match.
  expect_language(R"({"type": "string", "pattern": "o+b"})", {R"("foobar")", R"("ob")"},
                  {R"("fbar")", R"("")"});
  // Escaped characters in the instance still match the pattern.
  expect_language(R"({"type": "string", "pattern": "^a\"b\\\\c\n$"})", {R"("a\"b\\c\n")"},
                  {R"("a\"b\\c")"});
  // Alternation with per-branch anchors.
  expect_language(R"({"type": "string", "pattern": "^ab|cd$"})", {R"("abx")", R"("xcd")"},
                  {R"("xab")", R"("cdx")"});
  // Length bounds implied by the pattern are fine; others are refused.
  expect_language(R"({"type": "string", "pattern": "^[0-9]{4}$", "maxLength": 4})", {R"("2024")"},
                  {R"("202")"});
  // Fixed parts plus one repeated class: the lengths narrow the repeat.
  expect_language(R"({"type": "string", "pattern": "^[a-z]+$", "maxLength": 4})",
                  {R"("ab")", R"("abcd")"}, {R"("")", R"("abcde")", R"("aB")"});
  expect_language(
      R"({"type": "string", "pattern": "^[A-Z]-\\d*$", "minLength": 4, "maxLength": 5})",
      {R"("A-12")", R"("B-123")"}, {R"("A-1")", R"("A-1234")"});
  // A bound the format already keeps costs nothing: an e-mail address is
  // at most 380 characters (a local part of at most 64), so maxLength 1024
  // is met by every one; a shorter bound still applies.
  const std::string local64(64, 'a');
  expect_language(R"({"type": "string", "format": "email", "maxLength": 1024})",
                  {R"("joe.bloggs@example.com")", "\"" + local64 + "@example.com\""},
                  {R"("joe..bloggs@example.com")", "\"a" + local64 + "@example.com\""});
  expect_language(R"({"type": "string", "format": "hostname", "minLength": 1, "maxLength": 300})",
                  {R"("example.com")"}, {R"("")", R"("-x.com")"});
  // Other shapes go through the intersection of automata.
  expect_language(R"({"type": "string", "pattern": "[a-z]+", "maxLength": 4})",
                  {R"("a")", R"("1a2")", R"("abcd")", R"("Ab")"},
                  {R"("12")", R"("abcde")", R"("")", R"("A")"});
  expect_language(R"({"type": "string", "pattern": "^a+b+$", "maxLength": 4})",
                  {R"("ab")", R"("aabb")", R"("abbb")"}, {R"("aabbb")", R"("a")", R"("ba")"});
  expect_language(R"({"type": "string", "minLength": 2, "allOf": [{"pattern": "^[a-c]*$"},
                     {"pattern": "b"}, {"format": "hostname"}]})",
                  {R"("ab")", R"("cbc")"}, {R"("b")", R"("ac")", R"("abd")"});
  // Not matching a pattern, a format, or excluded values.
  expect_language(R"({"type": "string", "not": {"pattern": "^x-"}})",
                  {R"("a")", R"("")", R"("x")", R"("ax-")"}, {R"("x-")", R"("x-y")", "1"});
  // A number is valid against {"format": "date"}, so not against its negation.
  expect_language(R"({"not": {"format": "date"}})", {R"("2024-13-01")", R"("x")"},
                  {R"("2024-02-29")", "1"});
  expect_language(R"({"type": "string", "pattern": "^[a-z]+$", "not": {"enum": ["ab", "b"]}})",
                  {R"("a")", R"("abc")", R"("ba")"}, {R"("ab")", R"("b")", R"("")"});
}

TEST(JsonSchemaTest, Formats) {
  expect_language(R"({"format": "date"})", {R"("2024-02-29")", R"("2023-12-31")", "5"},
                  {R"("2023-02-29")", R"("2024-13-01")", R"("2024-04-31")", R"("24-01-01")"});
  // An e-mail domain: labels of at most 63 characters, as many as written
  // (the Mailbox rule bounds no length); under maxLength, a host name of at
  // most 253 characters, so the address has a bounded length.
  const std::string label63(63, 'd'), label64(64, 'd');
  std::string long_domain = label63;
  for (int i = 0; i < 4; ++i) long_domain += "." + label63;  // 319 characters
  expect_language(R"({"type": "string", "format": "email"})",
                  {"\"joe@" + label63 + ".com\"", "\"joe@" + long_domain + "\"",
                   R"("joe@a-b.example.com")", R"("joe@[127.0.0.1]")"},
                  {"\"joe@" + label64 + ".com\"", R"("joe@-ab.com")", R"("joe@ab-.com")",
                   R"("joe@ab..com")", R"("joe@ab.com.")"});
  expect_language(R"({"type": "string", "format": "email", "maxLength": 1024})",
                  {"\"joe@" + label63 + ".com\""}, {"\"joe@" + long_domain + "\""});
  expect_language(R"({"type": "string", "format": "uuid"})",
                  {R"("123e4567-e89b-12d3-a456-426614174000")"},
                  {R"("123e4567e89b12d3a456426614174000")"});
  expect_language(R"({"type": "string", "format": "ipv4"})", {R"("192.168.0.1")"},
                  {R"("256.1.1.1")", R"("01.1.1.1")"});
  expect_language(R"({"type": "string", "format": "date-time"})",
                  {R"("2024-01-01T12:00:00Z")", R"("2024-01-01T23:59:60+00:00")"},
                  {R"("2024-01-01 12:00:00Z")", R"("2024-01-01T12:00:00")"});
  JsonSchemaOptions annotation = compact();
  annotation.assert_formats = false;
  expect_language(R"({"type": "string", "format": "date"})", {R"("nope")"}, {}, annotation);
  // Narrowed formats warn.
  Checker iri(R"({"type": "string", "format": "iri"})");
  EXPECT_EQ(iri.warnings.size(), 1u);
  EXPECT_TRUE(iri.accepts(R"("http://example.com/a?b#c")"));
  EXPECT_FALSE(iri.accepts(R"("not an iri")"));
}

// format "regex": a subset of patterns that ECMA-262 and the other
// dialects validators use all accept. Every pattern it accepts must parse
// (std::regex's ECMAScript grammar, and this library's parser, which also
// compiles it with RE2); common patterns are in the subset, malformed ones
// are not.
TEST(JsonSchemaTest, LookaheadsAfterALeadingCaret) {
  // Reserved names, as schema stores write them: the pattern's automaton
  // less the strings the lookahead excludes.
  expect_language(R"json({"type": "string", "pattern": "^(?!(foo|bar)$)[a-z]+$"})json",
                  {R"("food")", R"("ba")", R"("xfoo")"}, {R"("foo")", R"("bar")", R"("")", "1"});
  expect_language(R"json({"type": "object", "additionalProperties": false,
                         "patternProperties": {"^(?!@@)[a-z@]+$": {"type": "integer"}}})json",
                  {"{}", R"({"a":1})", R"({"a@":1,"@b":2})"},
                  {R"({"@@a":1})", R"({"a":"x"})", R"({"A":1})"});
  // With length bounds and another pattern on the same string.
  expect_language(R"json({"type": "string", "pattern": "^(?=[a-z])", "maxLength": 3,
                         "allOf": [{"pattern": "^(?!.*-$)"}]})json",
                  {R"("a")", R"("a-b")", R"("abc")"}, {R"("-a")", R"("a-")", R"("abcd")"});
  // Elsewhere a lookahead is refused, naming the keyword.
  Status status = refusal(R"json({"type": "string", "pattern": "a(?!b)"})json");
  EXPECT_EQ(status.code(), ErrorCode::kUnsupported);
  EXPECT_NE(status.message().find("pattern"), std::string::npos) << status.to_string();
}

TEST(JsonSchemaTest, RegexFormatAcceptsOnlyValidPatterns) {
  Checker checker(R"({"type": "string", "format": "regex"})");
  EXPECT_EQ(checker.warnings.size(), 1u);
  auto accepts = [&](const std::string& pattern) {
    return checker.accepts(nlohmann::json(pattern).dump());
  };
  for (const char* valid :
       {"", "abc", "^value1|value2$", "[a-z]+", "^[A-Za-z0-9_-]+$", "\\d{1,3}(\\.\\d{1,3}){3}",
        "(?:ab)*?", "a{2,}", "[^\\]]", "x|", "\\/", "^(a(b(c)))$", "^\\S+@\\S+$", "a{0,255}"})
    EXPECT_TRUE(accepts(valid)) << valid;
  for (const char* malformed :
       {"(", ")", "[", "a**", "*a", "a{2,1}", "[z-a]", "\\", "]", "{", "[]", "a|*", "^*"})
    EXPECT_FALSE(accepts(malformed)) << malformed;
  // Outside the subset, although valid somewhere: rejected.
  for (const char* outside : {"(?<n>a)", "(?=a)", "\\1", "(((())))", "\\u0041", "[b-d]"})
    EXPECT_FALSE(accepts(outside)) << outside;
  std::mt19937 random(5);
  const std::string alphabet = "ab()[]|*+?{}12,-\\^$.d:z";
  int accepted = 0;
  for (int k = 0; k < 20000; ++k) {
    std::string pattern;
    for (int n = static_cast<int>(random() % 9); n > 0; --n)
      pattern += alphabet[random() % alphabet.size()];
    if (!accepts(pattern)) continue;
    ++accepted;
    EXPECT_NO_THROW(std::regex(pattern, std::regex::ECMAScript)) << pattern;
    // (The parser refuses anchors inside a pattern as unsupported for
    // matching; that is not a syntax error.)
    const auto parsed = internal::parse_ecma_regex(pattern);
    EXPECT_TRUE(parsed.ok() || parsed.status().code() == ErrorCode::kUnsupported)
        << pattern << ": " << parsed.status().to_string();
  }
  EXPECT_GT(accepted, 1000);
}

TEST(JsonSchemaTest, Arrays) {
  expect_language(
      R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
      {"[1]", "[1,2,3]"}, {"[]", "[1,2,3,4]", "[\"a\"]", "[1,]"});
  expect_language(R"({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
                  {"[]", "[\"a\"]", "[\"a\",1]"}, {"[1]", "[\"a\",1,2]"});
  expect_language(
      R"({"prefixItems": [{"type": "string"}], "items": {"type": "boolean"}, "minItems": 2})",
      {"[\"a\",true]", "[\"a\",true,false]"}, {"[\"a\"]", "[\"a\",1]"});
  JsonSchemaOptions draft7 = compact();
  draft7.default_draft = JsonSchemaOptions::Draft::kDraft7;
  expect_language(R"({"items": [{"type": "string"}], "additionalItems": {"type": "integer"}})",
                  {"[\"a\",1,2]"}, {"[\"a\",\"b\"]"}, draft7);
}

TEST(JsonSchemaTest, ContainsAndUnique) {
  expect_language(R"({"type": "array", "contains": {"const": 5}})", {"[5]", "[1,5,2]", "[5,5]"},
                  {"[]", "[1,2]"});
  expect_language(
      R"({"type": "array", "contains": {"type": "string"}, "minContains": 2, "maxContains": 2})",
      {"[\"a\",\"b\"]", "[1,\"a\",2,\"b\"]"}, {"[\"a\"]", "[\"a\",\"b\",\"c\"]"});
  // Several contains at once; one item may count for both.
  expect_language(R"({"type": "array", "allOf": [{"contains": {"multipleOf": 2}},
                     {"contains": {"multipleOf": 3}, "minContains": 2}]})",
                  {"[2,3,9]", "[6,3]", "[1,6,9,4]"}, {"[]", "[2,4]", "[6]", "[3,9]", "[2,3]"});
  expect_language(R"({"type": "array", "items": {"type": "integer"},
                     "not": {"items": {"maximum": 5}}, "contains": {"const": 1}})",
                  {"[1,7]", "[9,1]"}, {"[1]", "[7]", "[1,2.5,7]"});
  // With minItems and maxItems: the items are counted beside the matches.
  expect_language(R"({"type": "array", "contains": {"const": 5}, "minItems": 3, "maxItems": 4})",
                  {"[5,1,2]", "[1,2,5]", "[5,5,5,5]", "[1,2,3,5]"},
                  {"[5]", "[5,1]", "[1,2,3]", "[1,2,3,4,5]", "[5,5,5,5,5]", "[]"});
  expect_language(
      R"({"type": "array", "contains": {"type": "string"}, "maxContains": 1, "maxItems": 2})",
      {"[\"a\"]", "[1,\"a\"]", "[\"a\",null]"}, {"[]", "[1]", "[\"a\",\"b\"]", "[1,2,\"a\"]"});
  expect_language(R"({"type": "array", "minItems": 2, "allOf": [{"contains": {"multipleOf": 2}},
                     {"contains": {"multipleOf": 3}}]})",
                  {"[2,3]", "[6,1]", "[1,6,7]"}, {"[6]", "[]", "[2,4]", "[3,9,1]"});
  expect_language(R"({"type": "array", "maxItems": 2, "allOf": [{"contains": {"multipleOf": 2}},
                     {"contains": {"multipleOf": 3}}]})",
                  {"[6]", "[2,3]", "[3,2]"}, {"[]", "[2,1,3]", "[2,4]", "[6,1,1]"});
  expect_language(R"({"type": "array", "items": {"enum": ["x", "y"]}, "uniqueItems": true})",
                  {"[]", "[\"x\"]", "[\"y\",\"x\"]"}, {"[\"x\",\"x\"]", "[\"x\",\"y\",\"x\"]"});
  // More than 6 values: each at most once in any order (AnyOrder).
  const std::string eight = R"("items": {"enum": ["a", "b", "c", "d", "e", "f", 1, null]})";
  const std::vector<std::string> distinct = {"[]", R"(["a"])", R"(["h"])", R"([null,"f",1])",
                                             R"(["f","e","d","c","b","a",null,1])"};
  const std::vector<std::string> repeated = {R"(["a","a"])", R"([1,"b",1])", R"(["x"])",
                                             R"([null,null])",
                                             R"(["a","b","c","d","e","f",1,null,"a"])"};
  expect_language(R"({"type": "array", "uniqueItems": true, )" + eight + "}",
                  {distinct[0], distinct[1], distinct[3], distinct[4]},
                  {distinct[2], repeated[0], repeated[1], repeated[2], repeated[3], repeated[4]});
  expect_language(R"({"type": "array", "uniqueItems": true, "minItems": 1, )" + eight + "}",
                  {distinct[1], distinct[3], distinct[4]},
                  {distinct[0], repeated[0], repeated[1], repeated[4]});
  expect_language(R"({"type": "array", "uniqueItems": true, "maxItems": 8, )" + eight + "}",
                  {distinct[4]}, {repeated[4]});
  Status counted =
      refusal(R"({"type": "array", "uniqueItems": true, "maxItems": 3, )" + eight + "}");
  EXPECT_EQ(counted.code(), ErrorCode::kUnsupported);
  EXPECT_NE(counted.message().find("uniqueItems"), std::string::npos) << counted.to_string();
  Status plain = refusal(R"({"type": "array", "uniqueItems": true, )" + eight + "}", [] {
    JsonSchemaOptions o = compact();
    o.any_order_calls = false;
    return o;
  }());
  EXPECT_EQ(plain.code(), ErrorCode::kUnsupported);
}

TEST(JsonSchemaTest, UniqueItemsWithPrefixItems) {
  // Each position has its own finite domain; values stay distinct.
  expect_language(R"({"prefixItems": [{"enum": [1, 2]}, {"enum": [2, 3]}], "items": false,
                     "uniqueItems": true})",
                  {"[]", "[1]", "[2]", "[1,2]", "[1,3]", "[2,3]"},
                  {"[2,2]", "[3]", "[1,1]", "[1,2,3]", "[2,1]"});
  expect_language(R"({"prefixItems": [{"const": "a"}], "items": {"enum": ["a", "b", "c"]},
                     "uniqueItems": true, "minItems": 2})",
                  {R"(["a","b"])", R"(["a","c","b"])"},
                  {R"(["a"])", R"(["a","a"])", R"(["b","a"])", R"(["a","b","b"])"});
  // Past the prefix, anything: not finite.
  Status status = refusal(R"({"prefixItems": [{"type": "boolean"}], "uniqueItems": true})");
  EXPECT_NE(status.message().find("\"uniqueItems\" at /"), std::string::npos) << status.message();
}

TEST(JsonSchemaTest, NegationIgnoresPatternPropertiesThatAllowAnything) {
  // patternProperties with `true` only annotate: `not` negates the rest.
  expect_language(R"({"type": "object",
                     "not": {"required": ["xx"], "patternProperties": {"x": true}}})",
                  {"{}", R"({"a":1})", R"({"x":1})"}, {R"({"xx":1})", R"({"a":1,"xx":null})"});
}

TEST(JsonSchemaTest, NotOfSeveralNumbers) {
  // Each excluded number splits only the interval that holds it (an
  // earlier split's upper part once took in 1 again after excluding 0).
  expect_language(R"({"not": {"enum": [1, 0]}})", {"2", "0.5", "-3", R"("a")"}, {"1", "0"});
  expect_language(R"({"type": "number", "not": {"enum": [3, 1, 2]}})", {"1.5", "4", "0"},
                  {"1", "2", "3"});
  expect_language(R"({"minimum": 1, "not": {"enum": [1, 5]}})", {"2", "6"}, {"1", "5", "0"});
}

TEST(JsonSchemaTest, Combinators) {
  expect_language(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})",
                  {"1", "\"a\""}, {"\"ab\"", "null"});
  expect_language(R"({"allOf": [{"minimum": 2}, {"maximum": 4}], "type": "integer"})", {"2", "4"},
                  {"1", "5"});
  expect_language(R"({"oneOf": [{"minimum": 5}, {"maximum": 10}], "type": "number"})",
                  {"4", "11", "10.5"}, {"5", "7", "10"});
  expect_language(R"({"oneOf": [{"type": "integer"}, {"type": "string"}]})", {"1", "\"s\""},
                  {"null"});
  expect_language(R"({"not": {"type": "string"}})", {"1", "null"}, {"\"a\""});
  expect_language(R"({"type": "string", "not": {"enum": ["a", "b"]}})", {"\"c\"", "\"ab\"", "\"\""},
                  {"\"a\"", "\"b\""});
  expect_language(
      R"({"if": {"minimum": 10}, "then": {"maximum": 20}, "else": {"type": "string"}, "type": ["integer", "string"]})",
      {"10", "12", "\"x\""}, {"21", "3"});
  expect_language(R"({"not": {"type": "integer"}})", {"1.5", "\"a\"", "-0.01"}, {"1", "-3", "2.0"});
  expect_language(R"({"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "type": "object"})",
                  {R"({"a":1})", R"({"b":1})"}, {R"({"a":1,"b":2})", "{}"});
  expect_language(R"({"not": {"items": {"type": "integer"}}, "type": "array"})", {"[1,\"x\"]"},
                  {"[]", "[1,2]"});
  expect_language(R"({"type": "integer", "multipleOf": 4, "minimum": 0})", {"0", "8"}, {"-4", "2"});
  expect_language(
      R"({"type": "integer", "allOf": [{"multipleOf": 2}, {"multipleOf": 3}], "minimum": -7,
                     "maximum": 13})",
      {"-6", "0", "6", "12"}, {"-12", "3", "18", "4"});
  // Overlapping pattern branches: exactly one means one matches, the other not.
  expect_language(
      R"({"oneOf": [{"type": "string", "pattern": "a"}, {"type": "string", "pattern": "b"}]})",
      {R"("a")", R"("b")", R"("xa")"}, {R"("ab")", R"("x")", "1"});
}

// A closed object is also violated by an object with a key it does not
// declare: at least one such member, in any order.
TEST(JsonSchemaTest, NotOfAClosedObject) {
  expect_language(R"({"type": "object", "not": {"type": "object",
                     "properties": {"a": {"type": "integer"}}, "additionalProperties": false}})",
                  {R"({"b":1})", R"({"a":"s"})", R"({"a":1,"b":2})", R"({"b":2,"a":1})"},
                  {"{}", R"({"a":1})"});
  expect_language(R"({"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}},
                                 "additionalProperties": false},
                                {"type": "object", "required": ["a"]}]})",
                  {"{}", R"({"a":"s"})", R"({"a":1,"b":2})", R"({"b":1,"a":1})"},
                  {R"({"a":1})", R"({"b":1})", "1"});
  // Two such complements with different names: a key outside both name
  // sets, or a name of each outside the other's.
  expect_language(R"({"type": "object", "allOf": [
      {"not": {"type": "object", "properties": {"a": {}}, "additionalProperties": false}},
      {"not": {"type": "object", "properties": {"b": {}}, "additionalProperties": false}}]})",
                  {R"({"c":1})", R"({"a":1,"b":2})", R"({"d":1,"a":1})"},
                  {"{}", R"({"a":1})", R"({"b":1})"});
}

TEST(JsonSchemaTest, OneOfTaggedUnionIsDisjoint) {
  // Branches that both require "kind" with different constants cannot
  // overlap, even with patterns elsewhere that could not be negated.
  const char* schema = R"({"oneOf": [
      {"type": "object", "properties": {"kind": {"const": "file"}, "name": {"pattern": "a"}},
       "required": ["kind", "name"], "additionalProperties": false},
      {"type": "object", "properties": {"kind": {"const": "dir"}, "name": {"pattern": "b"}},
       "required": ["kind", "name"], "additionalProperties": false}]})";
  expect_language(
      schema, {R"({"kind":"file","name":"xa"})", R"({"kind":"dir","name":"b"})"},
      {R"({"kind":"file","name":"b"})", R"({"kind":"dir"})", R"({"kind":"x","name":"a"})"});
  // A branch that requires a property the other forbids cannot overlap it.
  expect_language(R"({"type": "object", "oneOf": [
      {"properties": {"name": {"type": "string"}}, "required": ["name"],
       "additionalProperties": false},
      {"properties": {"path": {"type": "string"}, "name": {"const": 1}}, "required": ["path"],
       "additionalProperties": false}]})",
                  {R"({"name":"x"})", R"({"path":"y"})", R"({"path":"y","name":1})"},
                  {"{}", R"({"name":"x","path":"y"})", R"({"name":1})"});
  // A required tag whose patterns share no string keeps them apart too.
  expect_language(R"json({"oneOf": [
      {"type": "object", "required": ["id"], "additionalProperties": false, "properties": {
         "id": {"type": "string", "pattern": "^pkg:cargo/.+@"},
         "os": {"type": "array", "items": {"enum": ["linux", "darwin"]}}}},
      {"type": "object", "required": ["id"], "additionalProperties": false, "properties": {
         "id": {"type": "string", "pattern": "^pkg:npm/"},
         "extra": {"type": "array", "items": {"type": "string"}}}}]})json",
                  {R"({"id":"pkg:cargo/a@1","os":["linux"]})", R"({"id":"pkg:npm/b","extra":[]})"},
                  {R"({"id":"pkg:cargo/a"})", R"({"id":"pkg:cargo/a@1","extra":[]})",
                   R"({"id":"pkg:gem/c"})", "{}"});
  // Without a shared required tag the branches overlap: exactly one of them.
  expect_language(R"({"oneOf": [
      {"type": "object", "properties": {"kind": {"const": "file"}, "name": {"pattern": "a"}}},
      {"type": "object", "properties": {"kind": {"const": "dir"}, "name": {"pattern": "b"}}}]})",
                  {R"({"kind":"file"})", R"({"name":"a"})", R"({"kind":"dir","name":"ab"})"},
                  {"{}", R"({"name":"ab"})", R"({"x":1})", "1"});
}

TEST(JsonSchemaTest, OneOfBranchesWithoutType) {
  // Branches without `type` accept every value of the other types, so
  // those values match both and none is valid; among objects, a shared
  // required tag keeps the branches apart.
  expect_language(R"({"oneOf": [
      {"properties": {"provider": {"enum": ["mastercard"]}}, "required": ["provider"],
       "additionalProperties": false},
      {"properties": {"provider": {"enum": ["visa"]}, "code": {"type": "integer"}},
       "required": ["provider", "code"], "additionalProperties": false}]})",
                  {R"({"provider":"mastercard"})", R"({"provider":"visa","code":123})"},
                  {R"("x")", "1", "null", "[]", "{}", R"({"provider":"visa"})",
                   R"({"provider":"mastercard","code":1})"});
  // Closed objects that declare no name in common: of one branch's
  // objects the other accepts only the empty one.
  expect_language(R"({"oneOf": [
      {"properties": {"key": {"type": "string", "pattern": "^[a-z]+$"}},
       "additionalProperties": false},
      {"properties": {"keys": {"type": "array", "items": {"type": "string"}}},
       "additionalProperties": false}]})",
                  {R"({"key":"a"})", R"({"keys":["a"]})", R"({"keys":[]})"},
                  {"{}", R"("s")", "1", "null", "[]", R"({"key":"a","keys":[]})", R"({"key":1})",
                   R"({"key":"A"})", R"({"other":1})"});
  // The same when the other branch does not accept the empty object.
  expect_language(R"({"oneOf": [
      {"properties": {"key": {"type": "string"}}, "additionalProperties": false},
      {"properties": {"keys": {"type": "integer"}}, "required": ["keys"],
       "additionalProperties": false}]})",
                  {"{}", R"({"key":"a"})", R"({"keys":1})"},
                  {R"({"keys":"a"})", R"({"key":"a","keys":1})", "1"});
  // A name both declare with disjoint schemas still sets them apart.
  expect_language(R"({"oneOf": [
      {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "boolean"}},
       "additionalProperties": false},
      {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "boolean"}},
       "additionalProperties": false}]})",
                  {R"({"kind":"a"})", R"({"x":true})", R"({"kind":"b","y":false})"},
                  {"{}", R"({"kind":"c"})", R"({"kind":"a","y":true})", R"({"x":1})"});
  // A typed branch beside an untyped one: the strings of both are split by
  // the length, every other value matches the untyped branch only.
  expect_language(R"({"oneOf": [{"type": "string"}, {"maxLength": 3}]})",
                  {R"("abcd")", "1", "null", "{}", "[]"}, {R"("abc")", R"("")"});
}

TEST(JsonSchemaTest, RepeatedAnyOfsCollapse) {
  // Eleven allOf branches with the same anyOf multiply to 2^11
  // conjunctions, of which three differ: equal clauses are kept once
  // before the alternatives bound applies.
  std::string branches;
  for (int i = 0; i < 11; ++i)
    branches +=
        std::string(i ? "," : "") + R"({"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]})";
  const std::string schema =
      R"({"type": "object", "$defs": {"a": {"required": ["a"]}, "b": {"required": ["b"]}},
          "allOf": [)" +
      branches + "]}";
  expect_language(schema, {R"({"a":1})", R"({"b":1})", R"({"a":1,"b":2})"}, {"{}", R"({"c":1})"});
  // Distinct conjunctions past the bound are still refused.
  std::string distinct;
  for (int i = 0; i < 11; ++i)
    distinct += std::string(i ? "," : "") + R"({"anyOf": [{"required": ["a)" + std::to_string(i) +
                R"("]}, {"required": ["b)" + std::to_string(i) + R"("]}]})";
  EXPECT_EQ(refusal(R"({"type": "object", "allOf": [)" + distinct + "]}").code(),
            ErrorCode::kLimitExceeded);
}

TEST(JsonSchemaTest, RefsAndRecursion) {
  const char* tree = R"({"$defs": {"node": {"type": "object", "properties": {
      "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["value"], "additionalProperties": false}}, "$ref": "#/$defs/node"})";
  expect_language(tree, {R"({"value":1})", R"({"value":1,"children":[{"value":2,"children":[]}]})"},
                  {R"({"value":1,"children":[{}]})", R"({"children":[]})"});
  JsonSchemaOptions draft7 = compact();
  draft7.default_draft = JsonSchemaOptions::Draft::kDraft7;
  expect_language(
      R"({"definitions": {"a": {"type": "integer"}}, "properties": {"x": {"$ref": "#/definitions/a"}}})",
      {R"({"x":1})"}, {R"({"x":"1"})"}, draft7);
  expect_language(
      R"({"$id": "http://x.test/root.json", "$defs": {"a": {"$anchor": "thing", "type": "boolean"}},
                     "items": {"$ref": "#thing"}})",
      {"[true]"}, {"[1]"});
  // A required property that refers back to its own schema is recursion
  // through input, not a cycle.
  expect_language(R"({"type": "object", "required": ["child"],
                     "properties": {"child": {"anyOf": [{"type": "null"}, {"$ref": "#"}]}}})",
                  {R"({"child":null})", R"({"child":{"child":null}})"},
                  {"{}", R"({"child":{}})", R"({"child":1})"});
  // A oneOf whose object branches require properties that refer back to
  // the oneOf: disjointness is settled by another required property.
  expect_language(R"({"$defs": {
      "resource": {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/selector"}]},
      "selector": {"oneOf": [
          {"type": "object", "required": ["ios", "android"], "additionalProperties": false,
           "properties": {"ios": {"$ref": "#/$defs/resource"},
                          "android": {"$ref": "#/$defs/resource"}}},
          {"type": "object", "required": ["ref"], "additionalProperties": false,
           "properties": {"ref": {"type": "string"}}}]}},
      "$ref": "#/$defs/resource"})",
                  {R"("red")", R"({"ref":"x"})", R"({"ios":"a","android":{"ref":"b"}})",
                   R"({"ios":{"ios":"a","android":"b"},"android":"c"})"},
                  {"{}", R"({"ios":"a"})", R"({"ref":"x","ios":"a"})", R"({"ref":1})",
                   R"({"ios":"a","android":{"ref":2}})"});
}

TEST(JsonSchemaTest, SchemaKeywordOnlyAtResourceRoots) {
  // A draft-04 `$schema` beside `id` in a subschema of a root that names no
  // dialect: not a resource root of the root's dialect (2020-12 reads
  // `$id`), so neither keyword applies and the references resolve against
  // the root, as python-jsonschema resolves them.
  expect_language(R"({"definitions": {"lemon": {
                       "$schema": "http://json-schema.org/draft-04/schema", "id": "schemata/lemon",
                       "definitions": {"ripe": {"type": "boolean"}},
                       "properties": {"ripe": {"$ref": "#/definitions/lemon/definitions/ripe"}}}},
                     "properties": {"lemon": {"$ref": "#/definitions/lemon"}}})",
                  {R"({"lemon":{"ripe":true}})", "{}"}, {R"({"lemon":{"ripe":1}})"});
  // A resource root (its `$id`) takes its `$schema`: draft-04's boolean
  // exclusiveMaximum.
  expect_language(R"({"$defs": {"old": {"$id": "http://x.test/old.json",
                       "$schema": "http://json-schema.org/draft-04/schema#",
                       "type": "integer", "maximum": 5, "exclusiveMaximum": true}},
                     "$ref": "http://x.test/old.json"})",
                  {"4", "-1"}, {"5", "6"});
}

TEST(JsonSchemaTest, ExternalDocuments) {
  JsonSchemaOptions options = compact();
  options.documents["http://x.test/defs.json"] = R"({
      "$defs": {"positive": {"type": "integer", "minimum": 1},
                "named": {"$anchor": "name", "type": "string", "maxLength": 3},
                "viaSibling": {"$ref": "other.json"}}})";
  options.documents["http://x.test/other.json"] = R"({"type": "boolean"})";
  // A document whose $id differs from where it was found: its own
  // references resolve against the $id.
  options.documents["http://x.test/moved.json"] = R"({
      "$id": "http://y.test/dir/moved.json", "items": {"$ref": "item.json"}})";
  options.documents["http://y.test/dir/item.json"] = R"({"type": "null"})";
  expect_language(R"({"$id": "http://x.test/root.json", "type": "object", "properties": {
                     "p": {"$ref": "defs.json#/$defs/positive"},
                     "n": {"$ref": "http://x.test/defs.json#name"},
                     "b": {"$ref": "defs.json#/$defs/viaSibling"},
                     "m": {"$ref": "moved.json"}}})",
                  {R"({"p":1})", R"({"n":"abc"})", R"({"b":true})", R"({"m":[null,null]})", "{}"},
                  {R"({"p":0})", R"({"p":"1"})", R"({"n":"abcd"})", R"({"b":1})", R"({"m":[1]})"},
                  options);
  // Without the documents, the same references are refused, naming the URI.
  Status status = refusal(R"({"$id": "http://x.test/root.json", "items": {"$ref": "defs.json"}})");
  EXPECT_EQ(status.code(), ErrorCode::kUnsupported);
  EXPECT_NE(status.message().find("\"$ref\" at /items"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("http://x.test/defs.json"), std::string::npos)
      << status.message();
  // A fetcher is asked once per document; a document it cannot give is
  // refused only where a reference leads into it.
  JsonSchemaOptions fetching = compact();
  std::vector<std::string> asked;
  fetching.fetch_document = [&](const std::string& uri) -> std::optional<std::string> {
    asked.push_back(uri);
    if (uri == "urn:example:int") return std::string(R"({"type": "integer"})");
    return std::nullopt;
  };
  expect_language(R"({"prefixItems": [{"$ref": "urn:example:int"}, {"$ref": "urn:example:int"}],
                     "items": false})",
                  {"[1,2]", "[3]"}, {R"(["a"])", "[1,2,3]"}, fetching);
  EXPECT_EQ(asked, std::vector<std::string>{"urn:example:int"});
  status = refusal(R"({"properties": {"a": {"$ref": "urn:example:none#/x"}}})", fetching);
  EXPECT_NE(status.message().find("\"$ref\" at /properties/a"), std::string::npos)
      << status.message();
  // Errors inside another document name it in the pointer.
  JsonSchemaOptions broken = compact();
  broken.documents["http://x.test/bad.json"] = R"({"properties": {"a": {"uniqueItems": true}}})";
  status = refusal(R"({"$ref": "http://x.test/bad.json"})", broken);
  EXPECT_NE(status.message().find("http://x.test/bad.json#/properties/a"), std::string::npos)
      << status.message();
  broken.documents["http://x.test/bad.json"] = "{not json";
  status = refusal(R"({"$ref": "http://x.test/bad.json"})", broken);
  EXPECT_NE(status.message().find("not valid JSON"), std::string::npos) << status.message();
  // Limits.
  JsonSchemaOptions limited = options;
  limited.max_documents = 1;
  status = refusal(R"({"$id": "http://x.test/root.json", "properties": {
                     "p": {"$ref": "defs.json#/$defs/positive"}, "b": {"$ref": "other.json"}}})",
                   limited);
  EXPECT_EQ(status.code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(status.message().find("max_documents"), std::string::npos) << status.message();
}

TEST(JsonSchemaTest, DynamicRefFollowsTheDynamicScope) {
  // A generic list whose item type each user binds with its own
  // $dynamicAnchor: the outermost binding on the way to the list wins.
  const char* lists = R"({"$id": "https://x.test/root", "type": "object", "properties": {
      "strings": {"$ref": "strings"}, "ints": {"$ref": "ints"}, "any": {"$ref": "list"}},
    "$defs": {
      "list": {"$id": "list", "type": "array", "items": {"$dynamicRef": "#item"},
               "$defs": {"item": {"$dynamicAnchor": "item"}}},
      "strings": {"$id": "strings", "$ref": "list",
                  "$defs": {"item": {"$dynamicAnchor": "item", "type": "string"}}},
      "ints": {"$id": "ints", "$ref": "list",
               "$defs": {"item": {"$dynamicAnchor": "item", "type": "integer"}}}}})";
  expect_language(lists,
                  {R"({"strings":["a"],"ints":[1],"any":[1,"a",null]})", R"({"strings":[]})"},
                  {R"({"strings":[1]})", R"({"ints":["a"]})", R"({"ints":[1.5]})"});
  // The root binds the name first: every list below takes its items.
  const char* rooted = R"({"$id": "https://x.test/root", "$dynamicAnchor": "item",
      "type": ["boolean", "array"], "items": {"$ref": "strings"},
    "$defs": {
      "list": {"$id": "list", "type": "array", "items": {"$dynamicRef": "#item"},
               "$defs": {"item": {"$dynamicAnchor": "item"}}},
      "strings": {"$id": "strings", "$ref": "list",
                  "$defs": {"item": {"$dynamicAnchor": "item", "type": "string"}}}}})";
  expect_language(rooted, {"true", "[[true]]", "[[[[false]]]]", "[[],[]]"},
                  {R"([["a"]])", "[[1]]", "[true]", "[[[false]],[]]"});
  // Copies per scope are bounded.
  JsonSchemaOptions limited = compact();
  limited.max_dynamic_scopes = 2;
  Status status = refusal(lists, limited);
  EXPECT_EQ(status.code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(status.message().find("max_dynamic_scopes"), std::string::npos) << status.message();
}

TEST(JsonSchemaTest, UnevaluatedProperties) {
  expect_language(
      R"({"allOf": [{"properties": {"a": {}}}], "properties": {"b": {}}, "unevaluatedProperties": false})",
      {R"({"a":1,"b":2})", "{}"}, {R"({"c":1})"});
}

TEST(JsonSchemaTest, UnevaluatedSeesContainsPatternsAndConditions) {
  // 2020-12: items that a `contains` matched are evaluated (minContains 0
  // too); the others must match unevaluatedItems.
  expect_language(R"({"allOf": [{"contains": {"multipleOf": 2}}, {"contains": {"multipleOf": 3}}],
                     "unevaluatedItems": {"multipleOf": 5}})",
                  {"[2,3,4,5,6]", "[6]", "[2,3]"}, {"[2,3,7]", "[2]", "[2,3,5.5]"});
  expect_language(
      R"({"contains": {"type": "string"}, "minContains": 0, "unevaluatedItems": false})",
      {"[]", R"(["a","b"])"}, {"[1]", R"(["a",1])"});
  // In 2019-09 contains does not evaluate items.
  expect_language(R"({"$schema": "https://json-schema.org/draft/2019-09/schema",
                     "contains": {"type": "string"}, "unevaluatedItems": false})",
                  {}, {R"(["a"])"});
  // What `not` leaves is no annotation: its contains evaluates nothing.
  expect_language(R"({"anyOf": [{"type": "null"}, {"not": {"items": {"type": "string"}}}],
                     "unevaluatedItems": false})",
                  {"null"}, {"[1]", R"(["a"])", "[]"});
  // Objects with patternProperties intersected with another object's
  // additionalProperties: a key that one object's patterns match and the
  // other's do not gets that other's additionalProperties too.
  expect_language(
      R"({"allOf": [
                     {"patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": false},
                     {"patternProperties": {"b$": {"type": "integer"}},
                      "additionalProperties": {"type": "string"}}]})",
      {"{}", R"({"ab":1})", R"({"ab":1,"acb":2})"},
      {R"({"ab":"x"})", R"({"ax":1})", R"({"ax":"s"})", R"({"xb":1})", R"({"xx":"s"})"});
  expect_language(R"({"allOf": [{"patternProperties": {"^x-": {"type": "number"}}},
                                {"additionalProperties": {"maximum": 5}}]})",
                  {"{}", R"({"x-a":3})", R"({"k":"s"})", R"({"k":5,"x-b":-1})"},
                  {R"({"x-a":7})", R"({"x-a":"s"})", R"({"k":9})"});
  expect_language(R"({"allOf": [{"properties": {"id": {}}, "additionalProperties": false},
                                {"patternProperties": {"^x-": {"type": "string"}}}]})",
                  {"{}", R"({"id":1})"}, {R"({"x-a":"s"})", R"({"id":1,"x-a":"s"})"});
  // Three objects: the extras of an intersection carry into the next.
  expect_language(R"({"allOf": [{"patternProperties": {"^a": {"type": "integer"}}},
                                {"patternProperties": {"^b": {"type": "integer"}},
                                 "additionalProperties": {"minimum": 0}},
                                {"patternProperties": {"^c": {}}, "additionalProperties": false}]})",
                  {"{}", R"({"c":"s"})", R"({"cb":"s"})", R"({"c":1})"},
                  {R"({"ca":-1})", R"({"a":1})", R"({"b":1})", R"({"x":1})", R"({"cb":-1})"});
  // Names a pattern matches are evaluated.
  expect_language(R"({"properties": {"foo": {"type": "string"}},
                     "allOf": [{"patternProperties": {"^bar": {"type": "string"}}}],
                     "unevaluatedProperties": false})",
                  {R"({"foo":"a","bar":"b","barx":"c"})", "{}"},
                  {R"({"baz":"a"})", R"({"bar":1})", R"({"foo":"a","x":1})"});
  // Every anyOf branch that holds evaluates its properties.
  expect_language(
      R"({"properties": {"foo": {"type": "string"}}, "anyOf": [
                     {"properties": {"bar": {"const": "bar"}}, "required": ["bar"]},
                     {"properties": {"baz": {"const": "baz"}}, "required": ["baz"]}],
                     "unevaluatedProperties": false})",
      {R"({"foo":"f","bar":"bar","baz":"baz"})", R"({"bar":"bar"})", R"({"baz":"baz"})"},
      {R"({"bar":"bar","baz":"x"})", R"({"bar":"bar","qux":1})", R"({"foo":"f"})"});
  // An `if` without then/else still evaluates when it holds.
  expect_language(R"({"if": {"prefixItems": [{"const": "a"}]}, "unevaluatedItems": false})",
                  {"[]", R"(["a"])"}, {R"(["b"])", R"(["a","a"])"});
}

TEST(JsonSchemaTest, DuplicateKeysKeepTheLastValue) {
  // As nlohmann::json reads them: the first position, the last value.
  expect_language(R"({"type": "string", "maxLength": 2, "type": "integer"})", {"1"}, {R"("a")"});
  std::string many = R"({"type": "object", "additionalProperties": false, "properties": {)";
  for (int i = 0; i < 20; ++i) many += "\"p" + std::to_string(i) + "\": {\"type\": \"string\"}, ";
  many += R"("p3": {"type": "integer"}}})";
  expect_language(many, {R"({"p3":1})", R"({"p19":"a"})"}, {R"({"p3":"a"})", R"({"q":1})"});
}

TEST(JsonSchemaTest, FlexibleWhitespaceDefinesWs) {
  // No generic value is emitted here, yet members are separated by `ws`.
  JsonSchemaOptions flexible;
  expect_language(
      R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false})",
      {"{\"a\": 1}", "{}"}, {"{\"b\":1}"}, flexible);
}

TEST(JsonSchemaTest, WhitespaceStyles) {
  const char* schema =
      R"({"properties": {"a": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"]})";
  JsonSchemaOptions flexible;  // default
  expect_language(
      schema, {"{\"a\":[1,2]}", "{ \"a\" : [ 1 , 2 ] }", "{\n  \"a\": [\n    1,\n    2\n  ]\n}"},
      {"{\"a\":[1,2]} x", std::string("{") + std::string(30, ' ') + "\"a\":[]}"}, flexible);
  JsonSchemaOptions indented;
  indented.whitespace = JsonSchemaOptions::Whitespace::kIndented;
  expect_language(schema, {"{\n  \"a\": [\n    1,\n    2\n  ]\n}", "{\n  \"a\": []\n}"},
                  {"{\"a\":[1,2]}", "{ \"a\": [1, 2] }"}, indented);
}

// Pretty-printed JSON nests as deep as the schema allows; every run of
// blanks stays bounded.
nlohmann::json nested_value(int depth) {
  nlohmann::json value = {{"leaf", 1.5}, {"list", {1, 2}}};
  for (int level = 0; level < depth; ++level) value = {{"child", value}, {"n", level}};
  return value;
}

TEST(JsonSchemaTest, FlexibleWhitespaceGrowsWithNesting) {
  JsonSchemaOptions flexible;  // default
  const std::string deep2 = nested_value(15).dump(2), deep4 = nested_value(15).dump(4),
                    tabs = nested_value(15).dump(1, '\t');
  // A schema nesting exactly as deep, without generic values.
  std::string strict = R"({"type": "object", "additionalProperties": false, "properties": {
      "leaf": {"type": "number"}, "list": {"type": "array", "items": {"type": "integer"}}}})";
  for (int level = 0; level < 15; ++level)
    strict = R"({"type": "object", "additionalProperties": false, "properties": {"child": )" +
             strict + R"(, "n": {"type": "integer"}}})";
  // A recursive schema and a generic one: nesting without bound.
  const std::string recursive = R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"child": {"$ref": "#/$defs/node"}, "n": {"type": "integer"}}}}})";
  for (const std::string& schema : {strict, recursive, std::string("{}")}) {
    Checker checker(schema, flexible);
    EXPECT_TRUE(checker.accepts(deep2)) << schema;
    EXPECT_TRUE(checker.accepts(deep4)) << schema;
    EXPECT_TRUE(checker.accepts(tabs)) << schema;
    // Runaway whitespace: long runs after a newline or without one.
    EXPECT_FALSE(checker.accepts("{\n" + std::string(300, ' ') + "\"n\": 1}")) << schema;
    EXPECT_FALSE(checker.accepts("{" + std::string(21, ' ') + "\"n\": 1}")) << schema;
    EXPECT_FALSE(checker.accepts("{\"n\":" + std::string(21, '\t') + "1}")) << schema;
  }
  // The strict schema nests 17 levels: runs after a newline up to
  // 20 + 4 * 17 blanks, and no more.
  Checker strict_checker(strict, flexible);
  EXPECT_TRUE(strict_checker.accepts("{\n" + std::string(88, ' ') + "\"n\": 1}"));
  EXPECT_FALSE(strict_checker.accepts("{\n" + std::string(89, ' ') + "\"n\": 1}"));
  // Unbounded nesting counts as 16 levels: 20 + 4 * 16 blanks.
  for (const std::string& schema : {recursive, std::string("{}")}) {
    Checker checker(schema, flexible);
    EXPECT_TRUE(checker.accepts("{\n" + std::string(84, ' ') + "\"n\": 1}")) << schema;
    EXPECT_FALSE(checker.accepts("{\n" + std::string(85, ' ') + "\"n\": 1}")) << schema;
  }
  // A flat schema keeps the old bound.
  expect_language(
      R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false})",
      {"{\n" + std::string(24, ' ') + "\"a\": 1}"}, {"{\n" + std::string(25, ' ') + "\"a\": 1}"},
      flexible);
}

// The subschemas that constrain one value are merged in JSON pointer order,
// not in the order the heap placed them: properties declared by several
// subschemas come out in the same order on every conversion. (Here the
// document lists "properties" before "allOf", so the parser allocates the
// later pointers first.)
TEST(JsonSchemaTest, MergedSubschemasFollowPointerOrder) {
  const std::string schema = R"({
    "properties": {"x": {"properties": {"c": {"type": "integer"}}}},
    "allOf": [
      {"properties": {"x": {"properties": {"b": {"type": "integer"}}}}},
      {"properties": {"x": {"properties": {"a": {"type": "integer"}}}}}
    ]})";
  std::string first;
  std::vector<std::string> heap_noise;
  for (int round = 0; round < 20; ++round) {
    heap_noise.emplace_back(static_cast<size_t>(round) * 97 + 13, 'x');
    Result<std::string> text = json_schema_to_gbnf(schema, compact());
    ASSERT_TRUE(text.ok()) << text.status().to_string();
    if (round == 0) first = *text;
    EXPECT_EQ(*text, first) << "round " << round;
  }
  const size_t a = first.find("\\\"a\\\""), b = first.find("\\\"b\\\""),
               c = first.find("\\\"c\\\"");
  ASSERT_NE(a, std::string::npos) << first;
  ASSERT_NE(b, std::string::npos) << first;
  ASSERT_NE(c, std::string::npos) << first;
  EXPECT_LT(b, a) << first;  // /allOf/0 before /allOf/1
  EXPECT_LT(a, c) << first;  // /allOf/... before /properties
}

}  // namespace
}  // namespace grammask
