// The XML styles of the structural tag's `json_schema` format: Qwen3-Coder's
// `<parameter=NAME>\nVALUE\n</parameter>` arguments (raw string values,
// JSON other values, refusals, masks against the token oracle), and the
// MiniMax-M2, DeepSeek-V3.2 and GLM-4.7 spellings of the same arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/matcher.h"
#include "grammask/recognizer.h"
#include "grammask/structural_tag.h"
#include "structural_tag_checks.h"
#include "token_oracle.h"

namespace grammask {
namespace {

using testing::accepts;
using testing::error_of;

std::string xml(const std::string& schema) {
  return R"({"type":"json_schema","style":"qwen_xml","json_schema":)" + schema + "}";
}

// Qwen3-Coder's call, as its chat template writes it and as XGrammar's
// built-in tag reads it: the arguments end before "\n</function>".
std::string call(const std::string& name, const std::string& schema) {
  return R"({"type":"tag","begin":"<tool_call>\n<function=)" + name + R"(>\n","content":)" +
         xml(schema) + R"(,"end":"\n</function>\n</tool_call>"})";
}

std::string param(const std::string& name, const std::string& value) {
  return "<parameter=" + name + ">\n" + value + "\n</parameter>";
}

const char* const kWrite =
    R"({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},)"
    R"("mode":{"type":"integer"}},"required":["path","content"],"additionalProperties":false})";

TEST(QwenXmlStyle, AcceptsTheTemplatesText) {
  const std::string tag = call("write_file", kWrite);
  const std::string begin = "<tool_call>\n<function=write_file>\n";
  const std::string end = "\n</function>\n</tool_call>";
  EXPECT_TRUE(accepts(tag, begin + param("path", "/tmp/a.py") + "\n" +
                               param("content", "def f():\n    return '<b>'\n") + end));
  EXPECT_TRUE(accepts(tag, begin + param("path", "a") + "\n" + param("content", "") + "\n" +
                               param("mode", "420") + end));
  // Raw text may hold newlines, '<', JSON-looking text, and blank lines.
  EXPECT_TRUE(accepts(
      tag, begin + param("path", "\n\nx") + "\n" + param("content", "{\"a\": 1}\n</param") + end));
  // Missing required parameter, wrong order, duplicate, unknown name.
  EXPECT_FALSE(accepts(tag, begin + param("path", "a") + end));
  EXPECT_FALSE(accepts(tag, begin + param("content", "x") + "\n" + param("path", "a") + end));
  EXPECT_FALSE(accepts(tag, begin + param("path", "a") + "\n" + param("path", "a") + "\n" +
                                param("content", "x") + end));
  EXPECT_FALSE(accepts(tag, begin + param("path", "a") + "\n" + param("content", "x") + "\n" +
                                param("owner", "me") + end));
  // Integer values are JSON text: no fraction, no quotes, no blanks.
  EXPECT_FALSE(accepts(tag, begin + param("path", "a") + "\n" + param("content", "x") + "\n" +
                                param("mode", "4.5") + end));
  EXPECT_FALSE(accepts(tag, begin + param("path", "a") + "\n" + param("content", "x") + "\n" +
                                param("mode", "\"4\"") + end));
  EXPECT_FALSE(accepts(tag, begin + param("path", "a") + "\n" + param("content", "x") + "\n" +
                                param("mode", " 4") + end));
  // The newlines around values and between parameters are exact.
  EXPECT_FALSE(
      accepts(tag, begin + "<parameter=path>a\n</parameter>\n" + param("content", "x") + end));
  EXPECT_FALSE(
      accepts(tag, begin + "<parameter=path>\na</parameter>\n" + param("content", "x") + end));
  EXPECT_FALSE(accepts(tag, begin + param("path", "a") + param("content", "x") + end));
  EXPECT_FALSE(accepts(tag, begin + param("path", "a") + "\n\n" + param("content", "x") + end));
  // A raw value cannot hold the delimiters where Qwen3-Coder's parser ends
  // a value.
  EXPECT_FALSE(
      accepts(tag, begin + param("path", "a</parameter>b") + "\n" + param("content", "x") + end));
  EXPECT_FALSE(accepts(
      tag, begin + param("path", "a") + "\n" + param("content", "x\n</parameter>\ny") + end));
  EXPECT_FALSE(
      accepts(tag, begin + param("path", "a<parameter=b") + "\n" + param("content", "x") + end));
  EXPECT_FALSE(
      accepts(tag, begin + param("path", "a</function>") + "\n" + param("content", "x") + end));
  // Nor the enclosing tag's end.
  const std::string other =
      R"({"type":"tag","begin":"<call>","content":)" + xml(kWrite) + R"(,"end":"</call>"})";
  EXPECT_TRUE(accepts(
      other, "<call>" + param("path", "a</cal") + "\n" + param("content", "x") + "</call>"));
  EXPECT_FALSE(accepts(
      other, "<call>" + param("path", "a</call>") + "\n" + param("content", "x") + "</call>"));
}

TEST(QwenXmlStyle, OptionalParametersAndNoArguments) {
  const std::string schema =
      R"({"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"number"},)"
      R"("c":{"type":"array","items":{"type":"integer"}}},"additionalProperties":false})";
  const std::string tag = xml(schema);
  EXPECT_TRUE(accepts(tag, ""));
  EXPECT_TRUE(accepts(tag, param("b", "-1.5e3")));
  EXPECT_TRUE(accepts(tag, param("a", "true") + "\n" + param("c", "[1, 2]")));
  EXPECT_TRUE(accepts(tag, param("a", "false") + "\n" + param("b", "0") + "\n" + param("c", "[]")));
  EXPECT_FALSE(accepts(tag, param("a", "True")));
  EXPECT_FALSE(accepts(tag, param("c", "[1.5]")));
  EXPECT_FALSE(accepts(tag, "\n" + param("a", "true")));
  EXPECT_FALSE(accepts(tag, param("a", "true") + "\n"));
  // An object value is JSON text; enums and consts of non-strings too.
  const std::string nested =
      xml(R"({"type":"object","properties":{"o":{"type":"object","properties":)"
          R"({"k":{"type":"string"}},"required":["k"],"additionalProperties":false},)"
          R"("e":{"enum":[1,2,null]}},"required":["o","e"],"additionalProperties":false})");
  EXPECT_TRUE(accepts(nested, param("o", R"({"k": "v"})") + "\n" + param("e", "null")));
  EXPECT_FALSE(accepts(nested, param("o", R"({"k": 1})") + "\n" + param("e", "1")));
  EXPECT_FALSE(accepts(nested, param("o", R"({"k": "v"})") + "\n" + param("e", "3")));
  // Local references are followed to decide, and reach the root's $defs.
  const std::string refs =
      xml(R"({"type":"object","$defs":{"n":{"type":"integer","minimum":1}},)"
          R"("properties":{"v":{"$ref":"#/$defs/n"}},"additionalProperties":false})");
  EXPECT_TRUE(accepts(refs, param("v", "5")));
  EXPECT_FALSE(accepts(refs, param("v", "0")));
  EXPECT_FALSE(accepts(refs, param("v", "five")));
  // A reference to a string definition (pydantic's enums) is a raw string.
  const std::string unit =
      xml(R"({"type":"object","$defs":{"Unit":{"title":"Unit","type":"string",)"
          R"("enum":["celsius","fahrenheit"]},"U":{"$ref":"#/$defs/Unit"}},)"
          R"("properties":{"u":{"$ref":"#/$defs/U","description":"unit"}},)"
          R"("required":["u"],"additionalProperties":false})");
  EXPECT_TRUE(accepts(unit, param("u", "celsius")));
  EXPECT_FALSE(accepts(unit, param("u", "\"celsius\"")));
  EXPECT_FALSE(accepts(unit, param("u", "kelvin")));
  const std::string cycle = xml(R"({"type":"object","$defs":{"a":{"$ref":"#/$defs/a"}},)"
                                R"("properties":{"u":{"$ref":"#/$defs/a"}}})");
  EXPECT_NE(error_of(cycle).code(), ErrorCode::kOk);
}

TEST(QwenXmlStyle, MinPropertiesOne) {
  const std::string tag =
      xml(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},)"
          R"("minProperties":1,"additionalProperties":false})");
  EXPECT_FALSE(accepts(tag, ""));
  EXPECT_TRUE(accepts(tag, param("a", "1")));
  EXPECT_TRUE(accepts(tag, param("b", "1")));
  EXPECT_TRUE(accepts(tag, param("a", "1") + "\n" + param("b", "2")));
  const std::string extras = xml(R"({"type":"object","minProperties":1})");
  EXPECT_FALSE(accepts(extras, ""));
  EXPECT_TRUE(accepts(extras, param("x", "1")));
  EXPECT_TRUE(accepts(extras, param("x", "1") + "\n" + param("y", "2")));
  EXPECT_TRUE(accepts(xml(R"({"type":"object","additionalProperties":false})"), ""));
  EXPECT_FALSE(accepts(xml(R"({"type":"object","additionalProperties":false})"), param("x", "1")));
}

TEST(QwenXmlStyle, StringKeywordsApplyToTheRawText) {
  const std::string tag =
      xml(R"({"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z]+-[0-9]{2}$"},)"
          R"("note":{"type":"string","minLength":2,"maxLength":5},)"
          R"("unit":{"type":"string","enum":["celsius","fahrenheit"]},)"
          R"("day":{"type":"string","format":"date"},"tag":{"const":"v1"}},)"
          R"("required":["id"],"additionalProperties":false})");
  EXPECT_TRUE(accepts(tag, param("id", "ab-12")));
  EXPECT_FALSE(accepts(tag, param("id", "\"ab-12\"")));
  EXPECT_FALSE(accepts(tag, param("id", "ab-123")));
  EXPECT_TRUE(accepts(tag, param("id", "ab-12") + "\n" + param("note", "é<\n!")));
  EXPECT_FALSE(accepts(tag, param("id", "ab-12") + "\n" + param("note", "abcdef")));
  EXPECT_FALSE(accepts(tag, param("id", "ab-12") + "\n" + param("note", "a")));
  EXPECT_TRUE(accepts(tag, param("id", "ab-12") + "\n" + param("unit", "celsius")));
  EXPECT_FALSE(accepts(tag, param("id", "ab-12") + "\n" + param("unit", "kelvin")));
  EXPECT_TRUE(accepts(tag, param("id", "ab-12") + "\n" + param("day", "2024-02-29")));
  EXPECT_FALSE(accepts(tag, param("id", "ab-12") + "\n" + param("day", "2024-02-30x")));
  EXPECT_TRUE(accepts(tag, param("id", "ab-12") + "\n" + param("tag", "v1")));
  EXPECT_FALSE(accepts(tag, param("id", "ab-12") + "\n" + param("tag", "\"v1\"")));
  // A pattern that would allow the delimiter still cannot spell it.
  const std::string loose =
      xml(R"({"type":"object","properties":{"s":{"type":"string","pattern":"^.*$",)"
          R"("maxLength":20}},"required":["s"],"additionalProperties":false})");
  EXPECT_TRUE(accepts(loose, param("s", "<parameter")));
  EXPECT_FALSE(accepts(loose, param("s", "a</parameter>")));
}

TEST(QwenXmlStyle, AdditionalParameters) {
  // additionalProperties absent (true by default) or true: undeclared
  // identifiers with raw values, anywhere between the declared ones.
  const std::string tag =
      xml(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},)"
          R"("required":["b"]})");
  EXPECT_TRUE(accepts(tag, param("b", "x")));
  EXPECT_TRUE(accepts(tag, param("x1", "any") + "\n" + param("a", "1") + "\n" + param("y", "") +
                               "\n" + param("b", "x") + "\n" + param("z", "{}")));
  EXPECT_FALSE(accepts(tag, param("a", "1") + "\n" + param("a", "2") + "\n" + param("b", "x")));
  EXPECT_FALSE(accepts(tag, param("x", "1")));  // b is required
  EXPECT_FALSE(accepts(tag, param("b", "x") + "\n" + param("9z", "1")));
  EXPECT_TRUE(accepts(xml(R"({"type":"object"})"), ""));
  EXPECT_TRUE(accepts(xml(R"({"type":"object","additionalProperties":true})"),
                      param("q", "1") + "\n" + param("r", "s")));
}

TEST(QwenXmlStyle, RefusalsNameThePath) {
  struct Case {
    std::string tag;
    ErrorCode code;
    std::string where;
  };
  const std::string o = R"({"type":"object","properties":{"v":)";
  const std::string c = R"(},"additionalProperties":false})";
  const std::vector<Case> cases = {
      {xml(o + R"({"type":["string","integer"]})" + c), ErrorCode::kUnsupported,
       "/json_schema/properties/v:"},
      {xml(o + R"({"anyOf":[{"type":"string"},{"type":"null"}]})" + c), ErrorCode::kUnsupported,
       "/json_schema/properties/v:"},
      {xml(o + R"({"enum":["a",1]})" + c), ErrorCode::kUnsupported, "/json_schema/properties/v:"},
      // A reference that means something else once the parameter's schema
      // is converted on its own.
      {xml(R"({"type":"object","properties":{"v":{"type":"array","items":{"$ref":"#"}}}})"),
       ErrorCode::kUnsupported, "/json_schema/properties/v:"},
      {xml(R"({"type":"object","$defs":{"a":{"$ref":"#/properties/w"}},"properties":)"
           R"({"v":{"type":"array","items":{"$ref":"#/$defs/a"}},"w":{"type":"integer"}}})"),
       ErrorCode::kUnsupported, "/json_schema/properties/v:"},
      {xml(o + R"({"type":"array","$defs":{"a":{}}})" + c), ErrorCode::kUnsupported,
       "/json_schema/properties/v/$defs"},
      // References that would make the type check exponential give up: refused.
      {xml(R"({"type":"object","$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}]}},)"
           R"("properties":{"v":{"$ref":"#/$defs/a"}}})"),
       ErrorCode::kUnsupported, "/json_schema/properties/v:"},

      {xml(o + R"({"type":"string","contentEncoding":"base64"})" + c), ErrorCode::kUnsupported,
       "/json_schema/properties/v/contentEncoding"},
      {xml(o + R"({"type":"string","format":"no-such-format"})" + c), ErrorCode::kUnsupported,
       "/json_schema/properties/v/format"},
      {xml(o + R"({"type":"string","maxLength":100000})" + c), ErrorCode::kUnsupported,
       "/json_schema/properties/v/maxLength"},
      {xml(o + R"({"type":"array","uniqueItems":true})" + c), ErrorCode::kUnsupported,
       "/json_schema/properties/v:"},
      {xml(R"({"type":"object","properties":{},"patternProperties":{"^x":{}}})"),
       ErrorCode::kUnsupported, "/json_schema/patternProperties"},
      {xml(R"({"type":"object","properties":{},"additionalProperties":{"type":"integer"}})"),
       ErrorCode::kUnsupported, "/json_schema/additionalProperties"},
      {xml(R"({"type":"object","properties":{"a>b":{"type":"string"}}})"), ErrorCode::kUnsupported,
       "/json_schema/properties/a>b"},
      {xml(R"({"type":"object","properties":{},"required":["x"]})"), ErrorCode::kUnsupported,
       "/json_schema/required/0"},
      {xml(R"({"type":"array"})"), ErrorCode::kUnsupported, "/json_schema/type"},
      {xml(R"({"type":"object","properties":{"a":{}},"minProperties":2})"), ErrorCode::kUnsupported,
       "/json_schema/minProperties"},
      {xml(R"({"type":"object","properties":{"a":{}},"maxProperties":1})"), ErrorCode::kUnsupported,
       "/json_schema/maxProperties"},
      {xml(R"({"type":"object","additionalProperties":false,"minProperties":1})"),
       ErrorCode::kInvalidArgument, "/json_schema/minProperties"},
      {xml("true"), ErrorCode::kUnsupported, "/json_schema:"},
      {R"({"type":"json_schema","style":"cohere_xml","json_schema":)" + std::string(kWrite) + "}",
       ErrorCode::kUnsupported, "/style"},
      {R"({"type":"json_schema","style":"minimax_xml","json_schema":)"
       R"({"type":"object","properties":{"a\"b":{"type":"string"}}}})",
       ErrorCode::kUnsupported, "/json_schema/properties/a\"b"},
      {R"({"type":"json_schema","style":"glm_xml","json_schema":)"
       R"({"type":"object","properties":{"a<b":{"type":"string"}}}})",
       ErrorCode::kUnsupported, "/json_schema/properties/a<b"},
      {R"({"type":"json_schema","style":"deepseek_xml","json_schema":)"
       R"({"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"string",)"
       R"("maxLength":2}]}}}})",
       ErrorCode::kUnsupported, "/json_schema/properties/v:"},
  };
  for (const Case& test : cases) {
    Status s = error_of(R"({"type":"structural_tag","format":)" + test.tag + "}");
    EXPECT_EQ(s.code(), test.code) << test.tag << "\n" << s.to_string();
    EXPECT_NE(s.message().find("at /format" + test.where), std::string::npos) << test.tag << "\n"
                                                                              << s.message();
  }
}

TEST(QwenXmlStyle, RawTextAutomataAreBounded) {
  std::string properties;
  for (int i = 0; i < 20; ++i) {
    properties += std::string(i ? "," : "") + "\"p" + std::to_string(i) +
                  R"(":{"type":"string","maxLength":400})";
  }
  StructuralTagOptions options;
  options.json_schema.max_rules = 50000;
  auto grammar = structural_tag_to_grammar(
      xml(R"({"type":"object","properties":{)" + properties + "}}"), options);
  ASSERT_FALSE(grammar.ok());
  EXPECT_EQ(grammar.status().code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(grammar.status().message().find("/json_schema/properties/p4"), std::string::npos)
      << grammar.status().message();
}

// Masks of a Qwen3-Coder call against the brute-force token oracle, on
// random walks over a vocabulary of the delimiters' pieces.
TEST(QwenXmlStyle, MasksMatchTheOracle) {
  const std::vector<std::string> tokens = {"</s>",
                                           "<tool_call>\n<function=f>\n",
                                           "\n</function>\n</tool_call>",
                                           "<parameter=",
                                           "n>\n",
                                           "s>\n",
                                           "\n</parameter>",
                                           "</parameter>",
                                           "\n",
                                           "<",
                                           "/",
                                           "1",
                                           "2",
                                           ".",
                                           "a",
                                           "b",
                                           "ab",
                                           ">",
                                           "=",
                                           "parameter",
                                           "</",
                                           "-",
                                           "x"};
  const Vocabulary vocab = *Vocabulary::from_token_bytes(tokens, /*stop_ids=*/{0});
  const std::string tag = call(
      "f",
      R"({"type":"object","properties":{"n":{"type":"integer"},)"
      R"("s":{"type":"string","maxLength":4}},"required":["s"],"additionalProperties":false})");
  auto grammar = structural_tag_to_grammar(tag);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  auto compiled = CompiledGrammar::compile(*grammar, vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  testing::TokenOracle oracle(*grammar, vocab);
  ASSERT_TRUE(oracle.ok()) << oracle.status().to_string();
  ASSERT_TRUE(oracle.supported());
  for (uint32_t seed = 0; seed < 30; ++seed) {
    Matcher m(*compiled);
    testing::TokenOracle walk = oracle;
    std::mt19937 rng(seed);
    std::vector<uint32_t> words(compiled->mask_words());
    for (int step = 0; step < 30 && !m.is_terminated(); ++step) {
      ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
      ASSERT_EQ(words, walk.mask(words.size())) << "seed " << seed << " step " << step;
      std::vector<uint32_t> allowed;
      for (uint32_t id = 0; id < vocab.size(); ++id)
        if (test_bit(words.data(), id)) allowed.push_back(id);
      if (allowed.empty()) break;
      const uint32_t pick = allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.accept_token(pick).ok());
      walk.accept(pick);
    }
  }
}

std::string styled(const std::string& style, const std::string& schema) {
  return R"({"type":"json_schema","style":")" + style + R"(","json_schema":)" + schema + "}";
}

const char* const kSearch =
    R"({"type":"object","properties":{"q":{"type":"string","maxLength":8},"n":{"type":"integer"},)"
    R"("tags":{"type":"array","items":{"type":"string"}}},"required":["q"],)"
    R"("additionalProperties":false})";

TEST(MiniMaxXmlStyle, EveryParameterEndsItsLine) {
  auto p = [](const std::string& name, const std::string& value) {
    return "<parameter name=\"" + name + "\">" + value + "</parameter>\n";
  };
  const std::string tag = styled("minimax_xml", kSearch);
  EXPECT_TRUE(accepts(tag, p("q", "a b\nc")));
  EXPECT_TRUE(accepts(tag, p("q", "x") + p("n", "-3") + p("tags", R"(["a", "b"])")));
  EXPECT_FALSE(accepts(tag, "<parameter name=\"q\">x</parameter>"));  // no newline after it
  EXPECT_FALSE(accepts(tag, p("n", "3") + p("q", "x")));              // schema order
  EXPECT_FALSE(accepts(tag, p("q", "123456789")));                    // maxLength on the raw text
  EXPECT_FALSE(accepts(tag, p("q", "\"x\"") + p("n", "\"3\"")));
  EXPECT_FALSE(accepts(tag, p("q", "x<parameter name=")));
  EXPECT_FALSE(accepts(tag, ""));
  // Undeclared parameters where the schema allows them.
  const std::string open = styled("minimax_xml", R"({"type":"object"})");
  EXPECT_TRUE(accepts(open, ""));
  EXPECT_TRUE(accepts(open, p("k", "v") + p("k2", "{}")));
  EXPECT_FALSE(accepts(open, p("k", "v") + "\n"));
}

TEST(DeepSeekXmlStyle, StringAttributeFollowsTheValue) {
  const std::string dsml = "｜DSML｜";
  auto p = [&](const std::string& name, bool string, const std::string& value) {
    return "<" + dsml + "parameter name=\"" + name + "\" string=\"" + (string ? "true" : "false") +
           "\">" + value + "</" + dsml + "parameter>\n";
  };
  const std::string tag = styled("deepseek_xml", kSearch);
  EXPECT_TRUE(accepts(tag, p("q", true, "x")));
  EXPECT_TRUE(accepts(tag, p("q", true, "") + p("n", false, "7") + p("tags", false, "[]")));
  EXPECT_FALSE(accepts(tag, p("q", false, "x")));
  EXPECT_FALSE(accepts(tag, p("q", true, "x") + p("n", true, "7")));
  EXPECT_FALSE(accepts(tag, p("q", true, "x") + p("tags", false, "[1]")));
  // With no parameter the style writes the template's blank line.
  const std::string optional =
      styled("deepseek_xml", R"({"type":"object","properties":{"n":{"type":"integer"}},)"
                             R"("additionalProperties":false})");
  EXPECT_TRUE(accepts(optional, "\n"));
  EXPECT_FALSE(accepts(optional, ""));
  EXPECT_TRUE(accepts(optional, p("n", false, "1")));
  EXPECT_FALSE(accepts(optional, p("n", false, "1") + "\n"));
  EXPECT_TRUE(
      accepts(styled("deepseek_xml", R"({"type":"object","additionalProperties":false})"), "\n"));
  const std::string open = styled("deepseek_xml", R"({"type":"object"})");
  EXPECT_TRUE(accepts(open, "\n"));
  EXPECT_TRUE(accepts(open, p("extra", true, "text")));
  EXPECT_FALSE(accepts(open, p("extra", true, "text") + "\n"));
}

// DeepSeek's string attribute tells a raw string from JSON text, so a value
// that may be a string or another type (pydantic's Optional[str]) is read
// either way: string="true" with the schema's string part as raw text,
// string="false" with any valid JSON value.
TEST(DeepSeekXmlStyle, MixedTypesByTheStringAttribute) {
  const std::string tag = styled(
      "deepseek_xml",
      R"({"type":"object","$defs":{"Unit":{"type":"string","enum":["c","f"]}},"properties":{)"
      R"("name":{"anyOf":[{"type":"string","maxLength":5},{"type":"null"}],"default":null},)"
      R"("unit":{"anyOf":[{"$ref":"#/$defs/Unit"},{"type":"null"}]},)"
      R"("n":{"type":["string","integer"],"pattern":"^[a-z]+$","minimum":0}},)"
      R"("additionalProperties":false})");
  auto p = [](const std::string& name, bool string, const std::string& value) {
    return "<｜DSML｜parameter name=\"" + name + "\" string=\"" + (string ? "true" : "false") +
           "\">" + value + "</｜DSML｜parameter>\n";
  };
  EXPECT_TRUE(accepts(tag, p("name", true, "abc")));
  EXPECT_TRUE(accepts(tag, p("name", false, "null")));
  EXPECT_TRUE(accepts(tag, p("name", false, "\"abc\"")));  // a JSON string is valid too
  EXPECT_FALSE(accepts(tag, p("name", true, "abcdef")));   // maxLength
  EXPECT_FALSE(accepts(tag, p("name", false, "5")));
  EXPECT_FALSE(accepts(tag, p("name", false, "abc")));  // not JSON
  EXPECT_TRUE(accepts(tag, p("unit", true, "c")));
  EXPECT_FALSE(accepts(tag, p("unit", true, "x")));
  EXPECT_TRUE(accepts(tag, p("unit", false, "null")));
  EXPECT_TRUE(accepts(tag, p("n", true, "abc")));
  EXPECT_TRUE(accepts(tag, p("n", true, "null")));  // a string the pattern allows
  EXPECT_FALSE(accepts(tag, p("n", true, "ABC")));
  EXPECT_TRUE(accepts(tag, p("n", false, "7")));
  EXPECT_FALSE(accepts(tag, p("n", false, "-1")));
  // The other styles cannot tell "null" the string from null: refused.
  EXPECT_EQ(error_of(R"({"type":"structural_tag","format":)" +
                     styled("minimax_xml", R"({"type":"object","properties":{"v":)"
                                           R"({"anyOf":[{"type":"string"},{"type":"null"}]}}})") +
                     "}")
                .code(),
            ErrorCode::kUnsupported);
}

TEST(GlmXmlStyle, KeysAndValuesBackToBack) {
  auto p = [](const std::string& name, const std::string& value) {
    return "<arg_key>" + name + "</arg_key><arg_value>" + value + "</arg_value>";
  };
  const std::string tag = styled("glm_xml", kSearch);
  EXPECT_TRUE(accepts(tag, p("q", "x")));
  EXPECT_TRUE(accepts(tag, p("q", "<b>") + p("n", "0") + p("tags", R"(["x"])")));
  EXPECT_FALSE(accepts(tag, p("q", "x") + "\n" + p("n", "0")));
  EXPECT_FALSE(accepts(tag, p("q", "x<arg_key>")));
  EXPECT_FALSE(accepts(tag, p("q", "x") + p("n", "zero")));
  EXPECT_FALSE(accepts(tag, p("q", "x") + p("q", "y")));
}

// Random walks of `steps` tokens from 25 seeds, each mask compared with the
// brute-force token oracle's; returns the tokens accepted. The stop token
// (id 0) is picked only where nothing else is allowed, and ids below
// `favored` twice as often as the others, so walks go deep into the
// arguments.
size_t walk_against_oracle(const std::string& tag, const Vocabulary& vocab, int steps,
                           uint32_t favored) {
  auto grammar = structural_tag_to_grammar(tag);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string();
  if (!grammar.ok()) return 0;
  auto compiled = CompiledGrammar::compile(*grammar, vocab);
  EXPECT_TRUE(compiled.ok()) << compiled.status().to_string();
  testing::TokenOracle oracle(*grammar, vocab);
  EXPECT_TRUE(oracle.ok()) << oracle.status().to_string();
  if (!compiled.ok() || !oracle.ok() || !oracle.supported()) {
    ADD_FAILURE() << "no compiled grammar or oracle";
    return 0;
  }
  size_t accepted_steps = 0;
  for (uint32_t seed = 0; seed < 25; ++seed) {
    Matcher m(*compiled);
    testing::TokenOracle walk = oracle;
    std::mt19937 rng(seed);
    std::vector<uint32_t> words(compiled->mask_words());
    for (int step = 0; step < steps && !m.is_terminated(); ++step) {
      if (!m.fill_mask(words.data(), words.size()).ok() || words != walk.mask(words.size())) {
        ADD_FAILURE() << "mask differs from the oracle's: seed " << seed << " step " << step;
        return accepted_steps;
      }
      std::vector<uint32_t> allowed;
      for (uint32_t id = 1; id < vocab.size(); ++id) {
        if (!test_bit(words.data(), id)) continue;
        allowed.push_back(id);
        if (id < favored) allowed.push_back(id);
      }
      if (allowed.empty() && test_bit(words.data(), 0)) allowed.push_back(0);
      if (allowed.empty()) break;
      const uint32_t pick = allowed[rng() % allowed.size()];
      if (!m.accept_token(pick).ok()) {
        ADD_FAILURE() << "an allowed token was refused: seed " << seed << " step " << step;
        return accepted_steps;
      }
      walk.accept(pick);
      ++accepted_steps;
    }
  }
  return accepted_steps;
}

// Masks of the three styles against the brute-force token oracle.
TEST(XmlStyles, MasksMatchTheOracle) {
  std::vector<std::string> tokens = {"</s>",
                                     "<parameter name=\"",
                                     "\">",
                                     "</parameter>",
                                     "<｜DSML｜parameter name=\"",
                                     "\" string=\"",
                                     "true",
                                     "false",
                                     "</｜DSML｜parameter>",
                                     "｜",
                                     "<arg_key>",
                                     "</arg_key>",
                                     "<arg_value>",
                                     "</arg_value>",
                                     "q",
                                     "n",
                                     "\n",
                                     "<",
                                     "/",
                                     "1",
                                     "-",
                                     "[",
                                     "]",
                                     "\"",
                                     "x",
                                     "xx",
                                     ">",
                                     "tags"};
  // And every printable ASCII byte, so that every delimiter can also be
  // spelled in pieces.
  for (char c = ' '; c <= '~'; ++c) {
    if (std::find(tokens.begin(), tokens.end(), std::string(1, c)) == tokens.end())
      tokens.emplace_back(1, c);
  }
  const Vocabulary vocab = *Vocabulary::from_token_bytes(tokens, /*stop_ids=*/{0});
  for (const char* style : {"minimax_xml", "deepseek_xml", "glm_xml"}) {
    SCOPED_TRACE(style);
    EXPECT_GT(walk_against_oracle(styled(style, kSearch), vocab, 25, 1), 200u);
  }
}

// any_order: each declared parameter at most once, in any order, the
// required ones present; past the converter's bound, schema order and a
// warning.
TEST(XmlStyles, AnyOrderIsExact) {
  auto any = [](const std::string& style, const std::string& schema) {
    return R"({"type":"json_schema","style":")" + style + R"(","any_order":true,"json_schema":)" +
           schema + "}";
  };
  const std::string tag = any("qwen_xml", kWrite);
  EXPECT_TRUE(accepts(tag, param("path", "a") + "\n" + param("content", "x")));
  EXPECT_TRUE(accepts(tag, param("content", "x") + "\n" + param("path", "a")));
  EXPECT_TRUE(
      accepts(tag, param("mode", "7") + "\n" + param("content", "x") + "\n" + param("path", "a")));
  EXPECT_FALSE(accepts(tag, param("content", "x")));  // path is required
  EXPECT_FALSE(accepts(tag, param("content", "x") + "\n" + param("path", "a") + "\n" +
                                param("content", "y")));                   // twice
  EXPECT_FALSE(accepts(tag, param("content", "x") + param("path", "a")));  // no separator
  EXPECT_FALSE(accepts(tag, "\n" + param("content", "x") + "\n" + param("path", "a")));
  // GLM: back to back; undeclared parameters anywhere, declared ones once.
  auto glm = [](const std::string& k, const std::string& v) {
    return "<arg_key>" + k + "</arg_key><arg_value>" + v + "</arg_value>";
  };
  const std::string open = any(
      "glm_xml", R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},)"
                 R"("required":["a"]})");
  EXPECT_TRUE(accepts(open, glm("x", "1") + glm("b", "s") + glm("y", "2") + glm("a", "3")));
  EXPECT_FALSE(accepts(open, glm("a", "1") + glm("a", "2")));
  EXPECT_FALSE(accepts(open, glm("b", "s")));
  EXPECT_FALSE(accepts(open, glm("b", "s") + glm("a", "x")));
  // DeepSeek: the blank line when nothing is written, in any order too.
  const std::string optional =
      any("deepseek_xml", R"({"type":"object","properties":{"n":{"type":"integer"},)"
                          R"("s":{"type":"string"}},"additionalProperties":false})");
  auto ds = [](const std::string& k, bool string, const std::string& v) {
    return "<｜DSML｜parameter name=\"" + k + "\" string=\"" + (string ? "true" : "false") + "\">" +
           v + "</｜DSML｜parameter>\n";
  };
  EXPECT_TRUE(accepts(optional, "\n"));
  EXPECT_TRUE(accepts(optional, ds("s", true, "x") + ds("n", false, "1")));
  EXPECT_FALSE(accepts(optional, ds("s", true, "x") + ds("s", true, "y")));
  EXPECT_FALSE(accepts(optional, ""));

  // Ten parameters pass the default bound (5,120 alternatives): one
  // AnyOrder(...) call, still exact; without calls, schema order, with a
  // warning naming the object.
  std::string properties;
  for (int i = 0; i < 10; ++i)
    properties += std::string(i ? "," : "") + "\"p" + std::to_string(i) + R"(":{"type":"integer"})";
  const std::string wide =
      any("qwen_xml", R"({"type":"object","properties":{)" + properties +
                          R"(},"required":["p3"],"additionalProperties":false})");
  std::vector<std::string> warnings;
  auto grammar = structural_tag_to_grammar(wide, {}, &warnings);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  EXPECT_TRUE(accepts(wide, param("p3", "1") + "\n" + param("p1", "2")));
  EXPECT_TRUE(accepts(wide, param("p1", "2") + "\n" + param("p0", "1") + "\n" + param("p3", "1")));
  EXPECT_FALSE(accepts(wide, param("p1", "2") + "\n" + param("p0", "1")));  // p3 is required
  EXPECT_FALSE(accepts(wide, param("p3", "2") + "\n" + param("p3", "1")));
  StructuralTagOptions no_calls;
  no_calls.json_schema.any_order_calls = false;
  auto ordered = structural_tag_to_grammar(wide, no_calls, &warnings);
  ASSERT_TRUE(ordered.ok()) << ordered.status().to_string();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("/json_schema: parameters in schema order"), std::string::npos)
      << warnings[0];
  Result<Recognizer> recognizer = Recognizer::create(*ordered);
  ASSERT_TRUE(recognizer.ok()) << recognizer.status().to_string();
  const std::string swapped = param("p3", "2") + "\n" + param("p0", "1");
  EXPECT_LT(recognizer->push_bytes(swapped), swapped.size());
  StructuralTagOptions lifted;
  lifted.json_schema.any_order_max_alternatives = 6000;
  warnings.clear();
  auto unordered = structural_tag_to_grammar(wide, lifted, &warnings);
  ASSERT_TRUE(unordered.ok()) << unordered.status().to_string();
  EXPECT_TRUE(warnings.empty());
}

// Masks of an any-order XML object against the brute-force token oracle.
TEST(XmlStyles, AnyOrderMasksMatchTheOracle) {
  std::vector<std::string> tokens = {"</s>", "<arg_key>", "</arg_key><arg_value>", "</arg_value>"};
  for (char c = ' '; c <= '~'; ++c) tokens.emplace_back(1, c);
  const Vocabulary vocab = *Vocabulary::from_token_bytes(tokens, /*stop_ids=*/{0});
  const std::string tag =
      R"({"type":"json_schema","style":"glm_xml","any_order":true,"json_schema":)"
      R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string","maxLength":2},)"
      R"("c":{"type":"boolean"}},"required":["a","c"]}})";
  // The delimiters (ids 1 to 3) twice as likely as a byte.
  EXPECT_GT(walk_against_oracle(tag, vocab, 40, 4), 300u);
  // Twelve parameters: one AnyOrder(...) call.
  std::string properties;
  for (char name = 'a'; name < 'a' + 12; ++name)
    properties += std::string(name > 'a' ? "," : "") + "\"" + name + R"(":{"type":"integer"})";
  const std::string wide =
      R"({"type":"json_schema","style":"glm_xml","any_order":true,"json_schema":)"
      R"({"type":"object","properties":{)" +
      properties + R"(},"required":["b","k"],"additionalProperties":false}})";
  EXPECT_GT(walk_against_oracle(wide, vocab, 40, 4), 300u);
}

}  // namespace
}  // namespace grammask
