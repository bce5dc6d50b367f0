// Structural tags (XGrammar's JSON format): each format object's language,
// its errors with JSON pointers, token-level formats against the token
// oracle, and hostile tags.
#include "grammask/structural_tag.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "grammask/matcher.h"
#include "grammask/recognizer.h"
#include "structural_tag_checks.h"
#include "token_oracle.h"

namespace grammask {
namespace {

using testing::accepts;
using testing::error_of;

const char* const kCity =
    R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"],)"
    R"("additionalProperties":false})";

std::string weather_tag(const std::string& end = R"("</function>")") {
  return std::string(R"({"type":"tag","begin":"<function=get_weather>","content":)") +
         R"({"type":"json_schema","json_schema":)" + kCity + R"(},"end":)" + end + "}";
}

TEST(StructuralTag, Primitives) {
  EXPECT_TRUE(accepts(R"({"type":"const_string","value":"yes"})", "yes"));
  EXPECT_FALSE(accepts(R"({"type":"const_string","value":"yes"})", "ye"));
  EXPECT_TRUE(accepts(R"({"type":"const_string","value":""})", ""));
  const std::string schema = std::string(R"({"type":"json_schema","json_schema":)") + kCity + "}";
  EXPECT_TRUE(accepts(schema, R"({"city": "Paris"})"));
  EXPECT_FALSE(accepts(schema, R"({"town": "Paris"})"));
  EXPECT_FALSE(accepts(schema, R"({})"));
  const std::string any_order =
      R"({"type":"json_schema","any_order":true,"json_schema":{"type":"object",)"
      R"("properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],)"
      R"("additionalProperties":false}})";
  EXPECT_TRUE(accepts(any_order, R"({"b":1,"a":2})"));
  EXPECT_FALSE(accepts(any_order, R"({"a":1,"a":2})"));
  const std::string grammar = R"({"type":"grammar","grammar":"root ::= \"yes\" | \"no\""})";
  EXPECT_TRUE(accepts(grammar, "no"));
  EXPECT_FALSE(accepts(grammar, "maybe"));
  const std::string regex = R"({"type":"regex","pattern":"[A-Z]{3}-[0-9]{4}"})";
  EXPECT_TRUE(accepts(regex, "ABC-1234"));
  EXPECT_FALSE(accepts(regex, "ABC-123"));
  const std::string any_text = R"({"type":"any_text","excludes":["<stop>"]})";
  EXPECT_TRUE(accepts(any_text, "free <sto text"));
  EXPECT_FALSE(accepts(any_text, "free <stop> text"));
  EXPECT_TRUE(accepts(R"({"type":"any_text","max_chars":3})", "aé€"));
  EXPECT_FALSE(accepts(R"({"type":"any_text","max_chars":3})", "abcd"));
}

TEST(StructuralTag, Composition) {
  const std::string a = R"({"type":"const_string","value":"a"})";
  const std::string b = R"({"type":"const_string","value":"b"})";
  const std::string seq = R"({"type":"sequence","elements":[)" + a + "," + b + "]}";
  EXPECT_TRUE(accepts(seq, "ab"));
  EXPECT_FALSE(accepts(seq, "ba"));
  const std::string alt = R"({"type":"or","elements":[)" + a + "," + b + "]}";
  EXPECT_TRUE(accepts(alt, "b"));
  EXPECT_FALSE(accepts(alt, "ab"));
  EXPECT_TRUE(accepts(R"({"type":"optional","content":)" + a + "}", ""));
  EXPECT_FALSE(accepts(R"({"type":"optional","content":)" + a + "}", "aa"));
  EXPECT_FALSE(accepts(R"({"type":"plus","content":)" + a + "}", ""));
  EXPECT_TRUE(accepts(R"({"type":"plus","content":)" + a + "}", "aaa"));
  EXPECT_TRUE(accepts(R"({"type":"star","content":)" + a + "}", ""));
  const std::string repeat = R"({"type":"repeat","min":2,"max":3,"content":)" + a + "}";
  EXPECT_FALSE(accepts(repeat, "a"));
  EXPECT_TRUE(accepts(repeat, "aaa"));
  EXPECT_FALSE(accepts(repeat, "aaaa"));
  EXPECT_TRUE(accepts(R"({"type":"repeat","min":1,"max":-1,"content":)" + a + "}", "aaaaa"));
}

TEST(StructuralTag, TagEndsItsUnlimitedContent) {
  const std::string think = R"({"type":"structural_tag","format":{"type":"tag","begin":"<think>",)"
                            R"("content":{"type":"any_text"},"end":"</think>"}})";
  EXPECT_TRUE(accepts(think, "<think>a </thin b</think>"));
  // The end cannot occur inside: the first </think> ends the content.
  EXPECT_FALSE(accepts(think, "<think>a</think>b</think>"));
  EXPECT_FALSE(accepts(think, "<think>a"));
  const std::string ends =
      R"({"type":"tag","begin":"<r>","content":{"type":"any_text"},"end":["</r>","</a>"]})";
  EXPECT_TRUE(accepts(ends, "<r>x</a>"));
  EXPECT_TRUE(accepts(ends, "<r>x</r>"));
  EXPECT_FALSE(accepts(ends, "<r>x</a>y</r>"));
}

TEST(StructuralTag, TriggeredTags) {
  auto tag = [](bool at_least_one, bool stop_after_first) {
    return std::string(R"({"type":"triggered_tags","triggers":["<function="],"tags":[)") +
           weather_tag() + R"(],"at_least_one":)" + (at_least_one ? "true" : "false") +
           R"(,"stop_after_first":)" + (stop_after_first ? "true" : "false") + "}";
  };
  const std::string call = R"(<function=get_weather>{"city": "Oslo"}</function>)";
  // Free text, calls, free text again.
  EXPECT_TRUE(accepts(tag(false, false), "Let me check. " + call + " and " + call + " done"));
  EXPECT_TRUE(accepts(tag(false, false), "no call at all"));
  EXPECT_FALSE(accepts(tag(false, false), "bad <function=get_time>{}</function>"));
  EXPECT_FALSE(accepts(tag(false, false), R"(<function=get_weather>{"town": "Oslo"}</function>)"));
  // at_least_one: no leading text, at least one call.
  EXPECT_FALSE(accepts(tag(true, false), "no call at all"));
  EXPECT_FALSE(accepts(tag(true, false), "text " + call));
  EXPECT_TRUE(accepts(tag(true, false), call + " then text " + call));
  // stop_after_first: nothing after the first call.
  EXPECT_TRUE(accepts(tag(false, true), "text " + call));
  EXPECT_FALSE(accepts(tag(false, true), "text " + call + " more"));
  EXPECT_TRUE(accepts(tag(true, true), call));
  EXPECT_FALSE(accepts(tag(true, true), call + call));
}

TEST(StructuralTag, TagsWithSeparatorAndDispatch) {
  const std::string list =
      std::string(R"({"type":"tags_with_separator","separator":",","tags":[)") + weather_tag() +
      R"(],"at_least_one":true})";
  const std::string call = R"(<function=get_weather>{"city": "Oslo"}</function>)";
  EXPECT_TRUE(accepts(list, call + "," + call));
  EXPECT_FALSE(accepts(list, call + ", " + call));
  EXPECT_FALSE(accepts(list, ""));
  const std::string dispatch =
      std::string(R"({"type":"tag","begin":"<response>","content":{"type":"dispatch","rules":[)") +
      R"(["<f>",{"type":"json_schema","json_schema":)" + kCity +
      R"(}]],"loop":true},"end":"</response>"})";
  EXPECT_TRUE(
      accepts(dispatch, R"(<response>hi <f>{"city": "A"} and <f>{"city": "B"}</response>)"));
  EXPECT_FALSE(accepts(dispatch, R"(<response>hi <f>{"x": 1}</response>)"));
  const std::string once =
      std::string(R"({"type":"dispatch","loop":false,"rules":[["<f>",{"type":"const_string",)") +
      R"("value":"X"}]]})";
  EXPECT_TRUE(accepts(once, "text <f>X"));
  EXPECT_FALSE(accepts(once, "text <f>X more"));
}

TEST(StructuralTag, ErrorsNameThePath) {
  Status s = error_of(R"({"type":"structural_tag","format":{"type":"sequence","elements":[)"
                      R"({"type":"const_string","value":"a"},{"type":"nonsense"}]}})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("/format/elements/1/type"), std::string::npos) << s.message();
  s = error_of(R"({"type":"json_schema","json_schema":{"type":"object"},"style":"kimi_k3_xml"})");
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("/style"), std::string::npos) << s.message();
  s = error_of(R"({"type":"or","elements":[{"type":"json_schema","json_schema":)"
               R"({"type":"array","uniqueItems":true,"items":{"type":"object"}}}]})");
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("/elements/0/json_schema"), std::string::npos) << s.message();
  s = error_of(R"({"type":"any_text","max_tokens":5})");
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  s = error_of(R"({"type":"tag","begin":"<a>","content":{"type":"any_text","max_chars":4},)"
               R"("end":"</a>"})");
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("/content/max_chars"), std::string::npos) << s.message();
  s = error_of(R"({"type":"regex","pattern":"(a"})");
  EXPECT_EQ(s.code(), ErrorCode::kSyntax);
  EXPECT_NE(s.message().find("/pattern"), std::string::npos) << s.message();
  s = error_of(R"({"type":"grammar","grammar":"root ::= \"a\"\nb ::= ("})");
  EXPECT_EQ(s.code(), ErrorCode::kSyntax);
  EXPECT_NE(s.message().find("/grammar: 2:"), std::string::npos) << s.message();
  s = error_of(R"({"type":"triggered_tags","triggers":["<f="],"tags":[)" + weather_tag() + "]}");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("/tags/0/begin"), std::string::npos) << s.message();
  s = error_of(R"({"type":"triggered_tags","triggers":[""],"tags":[)" + weather_tag() + "]}");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("/triggers/0"), std::string::npos) << s.message();
  s = error_of(R"({"type":"token","token":"[TOOL_CALLS]"})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("needs a vocabulary"), std::string::npos) << s.message();
  s = error_of(R"({"type":"repeat","min":3,"max":2,"content":{"type":"any_text"}})");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  s = error_of("{\"type\": ");
  EXPECT_EQ(s.code(), ErrorCode::kSyntax);
  EXPECT_EQ(error_of("[1, 2]").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_of(R"({"type":"structural_tag"})").code(), ErrorCode::kInvalidArgument);
}

TEST(StructuralTag, DeepNestingIsRefusedCleanly) {
  auto nested = [](int depth) {
    std::string tag = R"({"type":"const_string","value":"x"})";
    for (int i = 0; i < depth; ++i) tag = R"({"type":"optional","content":)" + tag + "}";
    return tag;
  };
  // Past the format bound (64 by default), and past the JSON bound (512).
  Status s = error_of(nested(100));
  EXPECT_EQ(s.code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(s.message().find("max_depth"), std::string::npos) << s.message();
  s = error_of(nested(5000));
  EXPECT_EQ(s.code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(s.message().find("nested deeper than 512"), std::string::npos);
  EXPECT_TRUE(error_of(nested(60)).ok());
}

TEST(StructuralTag, PrintsGbnfThatParsesBack) {
  const std::string tag =
      std::string(R"({"type":"sequence","elements":[{"type":"tag","begin":{"type":"token",)") +
      R"("token":"<|think|>"},"content":{"type":"any_tokens","exclude_tokens":[7]},)" +
      R"("end":{"type":"token","token":"<|/think|>"}},{"type":"triggered_tags",)" +
      R"("triggers":["<function="],"tags":[)" + weather_tag() + "]}]}";
  auto grammar = structural_tag_to_grammar(tag);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  const std::string text = grammar->to_gbnf();
  EXPECT_NE(text.find("!(<[7]> | <|/think|>)"), std::string::npos) << text;
  auto again = parse_gbnf(text);
  ASSERT_TRUE(again.ok()) << again.status().to_string() << "\n" << text;
  EXPECT_EQ(*again, *grammar);
}

// Token-level formats over a small vocabulary with special tokens.
Vocabulary special_vocabulary() {
  std::vector<std::string> tokens = {
      "</s>", "<|call|>", "<|end|>", "<|think|>", "<|/think|>", "[CALL]", "a", "b", "{",  "}",
      "\"",   ":",        "1",       " ",         "<f>",        "<f",     ">", "x", "ab", "}</f>"};
  return *Vocabulary::from_token_bytes(tokens, /*stop_ids=*/{0},
                                       /*special_ids=*/{0, 1, 2, 3, 4, 5});
}

// Runs token ids; true when all were accepted and the output is complete.
bool accepts_ids(const CompiledGrammar& compiled, const std::vector<uint32_t>& ids) {
  Matcher m(compiled);
  for (uint32_t id : ids)
    if (!m.accept_token(id).ok()) return false;
  return m.is_accepting() || m.is_terminated();
}

TEST(StructuralTag, TokenLevelFormats) {
  const Vocabulary vocab = special_vocabulary();
  const std::string tag =
      R"({"type":"sequence","elements":[)"
      R"({"type":"tag","begin":{"type":"token","token":"<|think|>"},)"
      R"("content":{"type":"any_tokens"},"end":{"type":"token","token":"<|/think|>"}},)"
      R"({"type":"token_triggered_tags","trigger_tokens":["<|call|>"],"tags":[)"
      R"({"begin":{"type":"token","token":"<|call|>"},"content":{"type":"json_schema",)"
      R"("json_schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],)"
      R"("additionalProperties":false}},"end":{"type":"token","token":"<|end|>"}}],)"
      R"("exclude_tokens":[5]}]})";
  auto compiled = compile_structural_tag(tag, vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  // <|think|> a b <|/think|> x <|call|> {"a":1} <|end|> b </s>
  const std::vector<uint32_t> call = {1, 8, 10, 6, 10, 11, 12, 9, 2};
  std::vector<uint32_t> ok = {3, 6, 7, 4, 17};
  ok.insert(ok.end(), call.begin(), call.end());
  ok.push_back(7);
  EXPECT_TRUE(accepts_ids(*compiled, ok));
  ok.push_back(0);
  EXPECT_TRUE(accepts_ids(*compiled, ok));
  // The free region after the think block reads any token but the trigger
  // and the excluded [CALL]; the call needs "a".
  EXPECT_TRUE(accepts_ids(*compiled, {3, 6, 4, 4, 3}));
  EXPECT_FALSE(accepts_ids(*compiled, {3, 4, 5}));
  EXPECT_FALSE(accepts_ids(*compiled, {3, 4, 1, 8, 9, 2}));
  EXPECT_FALSE(accepts_ids(*compiled, {6, 3, 4}));  // must begin with <|think|>
  // [CALL] is not of the form <...>: resolved by the vocabulary to its id.
  auto named = compile_structural_tag(R"({"type":"token","token":"[CALL]"})", vocab);
  ASSERT_TRUE(named.ok()) << named.status().to_string();
  EXPECT_TRUE(accepts_ids(*named, {5}));
  EXPECT_FALSE(accepts_ids(*named, {6}));
  EXPECT_EQ(compile_structural_tag(R"({"type":"token","token":"<|nope|>"})", vocab).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(compile_structural_tag(R"({"type":"token","token":99})", vocab).status().code(),
            ErrorCode::kInvalidArgument);
  auto dispatch = compile_structural_tag(
      R"({"type":"token_dispatch","rules":[["<|call|>",{"type":"const_string","value":"ab"}]],)"
      R"("loop":false})",
      vocab);
  ASSERT_TRUE(dispatch.ok()) << dispatch.status().to_string();
  EXPECT_TRUE(accepts_ids(*dispatch, {6, 7, 1, 18}));
  EXPECT_TRUE(accepts_ids(*dispatch, {6, 7, 1, 6, 7}));
  EXPECT_FALSE(accepts_ids(*dispatch, {6, 1, 18, 6}));
  auto one =
      compile_structural_tag(R"({"type":"exclude_token","exclude_tokens":[6,"<|end|>"]})", vocab);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_TRUE(accepts_ids(*one, {7}));
  EXPECT_TRUE(accepts_ids(*one, {3}));
  EXPECT_FALSE(accepts_ids(*one, {6}));
  EXPECT_FALSE(accepts_ids(*one, {2}));
  EXPECT_FALSE(accepts_ids(*one, {7, 7}));
}

// Masks of tags with free text, triggers and tool JSON against the
// brute-force token oracle, on random walks.
TEST(StructuralTag, MasksMatchTheOracle) {
  const Vocabulary vocab = special_vocabulary();
  const std::vector<std::string> tags = {
      std::string(R"({"type":"triggered_tags","triggers":["<f"],"tags":[{"begin":"<f>",)") +
          R"("content":{"type":"json_schema","json_schema":{"type":"object","properties":)" +
          R"({"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}},)" +
          R"("end":"</f>"}],"excludes":["x"]})",
      R"({"type":"sequence","elements":[{"type":"tag","begin":{"type":"token","token":"<|think|>"},)"
      R"("content":{"type":"any_text"},"end":{"type":"token","token":"<|/think|>"}},)"
      R"({"type":"token_triggered_tags","trigger_tokens":["<|call|>"],"tags":[{"begin":)"
      R"({"type":"token","token":"<|call|>"},"content":{"type":"any_text","excludes":["}"]},)"
      R"("end":{"type":"token","token":"<|end|>"}}]}]})",
      R"({"type":"tag","begin":"<f>","content":{"type":"dispatch","rules":[["ab",)"
      R"({"type":"const_string","value":"1"}]]},"end":"}</f>"})",
  };
  for (size_t t = 0; t < tags.size(); ++t) {
    StructuralTagOptions options;
    options.vocabulary = &vocab;
    auto grammar = structural_tag_to_grammar(tags[t], options);
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    auto compiled = CompiledGrammar::compile(*grammar, vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    testing::TokenOracle oracle(*grammar, vocab);
    ASSERT_TRUE(oracle.ok()) << oracle.status().to_string();
    ASSERT_TRUE(oracle.supported()) << tags[t];
    for (uint32_t seed = 0; seed < 20; ++seed) {
      Matcher m(*compiled);
      testing::TokenOracle walk = oracle;
      std::mt19937 rng(seed * 31 + t);
      std::vector<uint32_t> words(compiled->mask_words());
      for (int step = 0; step < 24 && !m.is_terminated(); ++step) {
        ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
        ASSERT_EQ(words, walk.mask(words.size()))
            << tags[t] << " seed " << seed << " step " << step;
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
}

TEST(StructuralTag, ThousandTools) {
  std::string tags;
  for (int i = 0; i < 1000; ++i) {
    if (i > 0) tags += ",";
    tags += R"({"begin":"<function=f)" + std::to_string(i) +
            R"(>","content":{"type":"json_schema","json_schema":{"type":"object",)"
            R"("properties":{"n":{"type":"integer"}},"required":["n"]}},"end":"</function>"})";
  }
  const std::string tag =
      R"({"type":"triggered_tags","triggers":["<function="],"tags":[)" + tags + "]}";
  const Vocabulary vocab = special_vocabulary();
  auto compiled = compile_structural_tag(tag, vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  EXPECT_TRUE(accepts(tag, R"(hi <function=f999>{"n": 3}</function>)"));
  EXPECT_FALSE(accepts(tag, R"(hi <function=f1000>{"n": 3}</function>)"));
  // A trigger that is a prefix of another: both dispatch.
  const std::string prefixes =
      R"({"type":"triggered_tags","triggers":["<f","<fn"],"tags":[)"
      R"({"begin":"<fn>","content":{"type":"const_string","value":"1"},"end":"</fn>"},)"
      R"({"begin":"<f>","content":{"type":"const_string","value":"2"},"end":"</f>"}]})";
  EXPECT_TRUE(accepts(prefixes, "a<fn>1</fn>b<f>2</f>"));
  EXPECT_FALSE(accepts(prefixes, "a<fn>2</fn>"));
  // One refused tool schema refuses the whole tag, naming it.
  const std::string refused =
      R"({"type":"triggered_tags","triggers":["<f"],"tags":[)"
      R"({"begin":"<f>","content":{"type":"const_string","value":"1"},"end":"</f>"},)"
      R"({"begin":"<f2>","content":{"type":"json_schema","json_schema":{"type":"array",)"
      R"("uniqueItems":true,"items":{"type":"object"}}},"end":"</f>"}]})";
  const Status s = error_of(refused);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("/tags/1/content/json_schema"), std::string::npos) << s.message();
}

TEST(TokenSet, ParsesPrintsAndMasks) {
  auto grammar = parse_gbnf("root ::= !( <[6]> | <|end|> ) !()");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  EXPECT_EQ(grammar->to_gbnf(), "root ::= !(<[6]> | <|end|>) !()\n");
  EXPECT_EQ(parse_gbnf("root ::= !(<[6]> <[7]>)").status().code(), ErrorCode::kSyntax);
  EXPECT_EQ(parse_gbnf("root ::= !(\"a\")").status().code(), ErrorCode::kSyntax);
  const Vocabulary vocab = special_vocabulary();
  auto compiled = CompiledGrammar::compile(*grammar, vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  Matcher m(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  EXPECT_FALSE(test_bit(words.data(), 6));
  EXPECT_FALSE(test_bit(words.data(), 2));
  EXPECT_FALSE(test_bit(words.data(), 0));  // a stop token is never read by a negation
  EXPECT_TRUE(test_bit(words.data(), 7));
  EXPECT_TRUE(test_bit(words.data(), 3));
  ASSERT_TRUE(m.accept_token(7).ok());
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  EXPECT_TRUE(test_bit(words.data(), 6));  // !() reads any token
  EXPECT_FALSE(test_bit(words.data(), 0));
  auto unknown = CompiledGrammar::from_gbnf("root ::= !(<[6]> | <|nope|>)", vocab);
  EXPECT_EQ(unknown.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("<|nope|>"), std::string::npos)
      << unknown.status().message();
}

}  // namespace
}  // namespace grammask

namespace grammask {
namespace {

TEST(StructuralTag, AnyOrderFallbackIsReportedWithThePath) {
  std::string properties;
  for (int i = 0; i < 12; ++i)
    properties +=
        std::string(i ? "," : "") + "\"p" + std::to_string(i) + "\":{\"type\":\"integer\"}";
  const std::string tag =
      R"({"type":"sequence","elements":[{"type":"const_string","value":"x"},)"
      R"({"type":"json_schema","any_order":true,"json_schema":{"type":"object",)"
      R"("maxProperties":12,"properties":{)" +
      properties + R"(},"additionalProperties":false}}]})";
  // (Without maxProperties, 12 properties are in any order: AnyOrder(...).)
  std::vector<std::string> warnings;
  auto grammar = structural_tag_to_grammar(tag, {}, &warnings);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("structural tag at /elements/1/json_schema: ", 0), 0u) << warnings[0];
  EXPECT_NE(warnings[0].find("schema order"), std::string::npos) << warnings[0];
  // The object is then in schema order: p0 first.
  EXPECT_TRUE(accepts(tag, R"(x{"p0":0,"p1":1,"p2":2,"p3":3,"p4":4,"p5":5,"p6":6,"p7":7,)"
                           R"("p8":8,"p9":9,"p10":10,"p11":11})"));
  EXPECT_FALSE(accepts(tag, R"(x{"p1":1,"p0":0,"p2":2,"p3":3,"p4":4,"p5":5,"p6":6,"p7":7,)"
                            R"("p8":8,"p9":9,"p10":10,"p11":11})"));
}

}  // namespace
}  // namespace grammask
