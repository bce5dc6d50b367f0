// The tool-call formats of tool_calls.h: per format, a realistic reply is
// accepted and near misses (a wrong tool name, a missing required argument,
// text where the format allows none, a missing end delimiter) are refused,
// through compile_structural_tag and a Matcher. The vocabulary is every byte
// plus the formats' delimiters (control tokens where the models' tokenizers
// make them special, text tokens otherwise); the Llama 3 tokenizer and the
// BFCL function schemas of ../shared are used when present.
#include "grammask/tool_calls.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammask/matcher.h"
#include "grammask/structural_tag.h"
#include "grammask/vocabulary.h"

namespace grammask {
namespace {

const char* const kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Current weather",
   "parameters": {"type": "object", "properties": {
     "city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
     "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_time",
   "parameters": {"type": "object", "properties": {"tz": {"type": "string"}},
     "required": ["tz"], "additionalProperties": false}}}
])";

// Control tokens of the test vocabulary (special in the models' tokenizers).
const std::vector<std::string> kControl = {
    "<|eot_id|>", "<|eom_id|>",  "<|python_tag|>",       "</s>",          "[TOOL_CALLS]",
    "<|start|>",  "<|channel|>", "<|message|>",          "<|constrain|>", "<|end|>",
    "<|call|>",   "<|return|>",  "<｜end▁of▁sentence｜>"};
const std::vector<std::string> kStops = {"<|eot_id|>", "<|eom_id|>", "</s>",
                                         "<|call|>",   "<|return|>", "<｜end▁of▁sentence｜>"};
// Text tokens (added tokens that are not special in the models' tokenizers).
const std::vector<std::string> kText = {"<tool_call>",
                                        "</tool_call>",
                                        "<think>",
                                        "</think>",
                                        "<｜tool▁calls▁begin｜>",
                                        "<｜tool▁calls▁end｜>",
                                        "<｜tool▁call▁begin｜>",
                                        "<｜tool▁call▁end｜>",
                                        "<｜tool▁sep｜>",
                                        "{\"name\": \"",
                                        "\", \"arguments\": ",
                                        "\", \"parameters\": ",
                                        "get_weather",
                                        "Paris"};

const Vocabulary& test_vocabulary() {
  static const Vocabulary vocab = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
    std::vector<uint32_t> special, stops;
    for (const std::string& t : kControl) {
      if (std::find(kStops.begin(), kStops.end(), t) != kStops.end()) {
        stops.push_back(static_cast<uint32_t>(tokens.size()));
      }
      special.push_back(static_cast<uint32_t>(tokens.size()));
      tokens.push_back(t);
    }
    for (const std::string& t : kText) tokens.push_back(t);
    return *Vocabulary::from_token_bytes(tokens, stops, special);
  }();
  return vocab;
}

// Tokenizes `text`: a control token's spelling becomes that token, the rest
// the longest text tokens (greedy).
class Encoder {
 public:
  explicit Encoder(const Vocabulary& vocab) {
    for (uint32_t id = 0; id < vocab.size(); ++id) {
      const std::string bytes(vocab.token_bytes(id));
      if (bytes.empty()) continue;
      const TokenKind kind = vocab.kind(id);
      auto& map = kind == TokenKind::kControl ? control_ : text_;
      if (kind == TokenKind::kControl || kind == TokenKind::kNormal ||
          kind == TokenKind::kUserDefined || kind == TokenKind::kByte) {
        map.emplace(bytes, id);
        longest_ = std::max(longest_, bytes.size());
      }
    }
  }
  std::vector<uint32_t> encode(const std::string& text) const {
    std::vector<uint32_t> out;
    size_t i = 0;
    while (i < text.size()) {
      bool found = false;
      for (size_t n = std::min(longest_, text.size() - i); n > 0 && !found; --n) {
        auto c = control_.find(text.substr(i, n));
        if (c != control_.end()) {
          out.push_back(c->second);
          i += n;
          found = true;
        }
      }
      for (size_t n = std::min(longest_, text.size() - i); n > 0 && !found; --n) {
        auto t = text_.find(text.substr(i, n));
        if (t != text_.end()) {
          out.push_back(t->second);
          i += n;
          found = true;
        }
      }
      if (!found) ADD_FAILURE() << "cannot tokenize at byte " << i << " of " << text;
      if (!found) break;
    }
    return out;
  }

 private:
  std::unordered_map<std::string, uint32_t> control_, text_;
  size_t longest_ = 1;
};

std::string tag_for(const std::string& format, const ToolCallOptions& options,
                    const std::string& tools = kTools) {
  Result<std::string> tag = tool_calls_structural_tag(format, tools, options);
  EXPECT_TRUE(tag.ok()) << tag.status().to_string();
  return tag.ok() ? *tag : std::string();
}

// Whether `reply` is a whole output of the format: every token accepted and
// the output complete.
class FormatChecker {
 public:
  FormatChecker(const std::string& format, ToolCallOptions options,
                const Vocabulary& vocab = test_vocabulary(), const std::string& tools = kTools)
      : encoder_(vocab) {
    const std::string tag = tag_for(format, options, tools);
    StructuralTagOptions tag_options;
    Result<CompiledGrammar> compiled = compile_structural_tag(tag, vocab, {}, tag_options);
    EXPECT_TRUE(compiled.ok()) << compiled.status().to_string() << "\n" << tag;
    if (compiled.ok()) compiled_.emplace_back(std::move(compiled).value());
  }

  bool accepts(const std::string& reply) const {
    if (compiled_.empty()) return false;
    Matcher matcher(compiled_[0]);
    for (uint32_t token : encoder_.encode(reply)) {
      if (!matcher.accept_token(token).ok()) return false;
    }
    return matcher.is_accepting();
  }

 private:
  Encoder encoder_;
  std::vector<CompiledGrammar> compiled_;
};

ToolCallOptions choice(const std::string& tool_choice, bool reasoning = false,
                       bool parallel = true) {
  ToolCallOptions options;
  options.tool_choice = tool_choice;
  options.reasoning = reasoning;
  options.parallel_tool_calls = parallel;
  return options;
}

TEST(ToolCalls, ListsTheFormats) {
  std::vector<std::string> names;
  for (const ToolCallFormatInfo& info : tool_call_formats()) {
    names.push_back(info.name);
    EXPECT_FALSE(info.models.empty()) << info.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"llama3", "llama3-python-tag", "hermes", "qwen3_coder",
                                             "mistral", "deepseek", "harmony", "minimax_m2",
                                             "deepseek_v3_2", "glm_4_7"}));
}

TEST(ToolCalls, ErrorsNameTheProblem) {
  auto error = [](const std::string& format, const std::string& tools,
                  const std::string& tool_choice = "auto") {
    Result<std::string> tag = tool_calls_structural_tag(format, tools, choice(tool_choice));
    EXPECT_FALSE(tag.ok()) << format << " " << tools;
    return tag.status();
  };
  Status s = error("qwen9", kTools);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown tool-call format \"qwen9\""), std::string::npos);
  EXPECT_NE(s.message().find("hermes"), std::string::npos);  // lists the known ones

  s = error("hermes", R"([{"type": "function", "function": {"parameters": {}}}])");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tools[0]: the function has no name"), std::string::npos);

  s = error("hermes", R"([{"type": "function", "function": {"name": "a"}},
                         {"type": "function", "function": {"name": "a"}}])");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tools[1]: duplicate function name \"a\""), std::string::npos);

  s = error("hermes", kTools, "get_wether");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(
      s.message().find("\"get_wether\", which is not among the tools (get_weather, get_time)"),
      std::string::npos);

  s = error("hermes", "[]", "required");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("\"required\" needs at least one tool"), std::string::npos);

  s = error("hermes", R"([{"type": "function", "function": {"name": "a b"}}])");
  EXPECT_NE(s.message().find("function name \"a b\""), std::string::npos);
  s = error("hermes", R"([{"type": "retrieval"}])");
  EXPECT_NE(s.message().find("tools[0]: type \"retrieval\""), std::string::npos);
  s = error("hermes", R"([{"type": "function", "function": {"name": "a", "parameters": 3}}])");
  EXPECT_NE(s.message().find("\"parameters\" of \"a\""), std::string::npos);
  s = error("hermes", R"({"name": "a"})");
  EXPECT_NE(s.message().find("expected a JSON array"), std::string::npos);
  s = error("hermes", "[{");
  EXPECT_EQ(s.code(), ErrorCode::kSyntax);
}

TEST(ToolCalls, NamedChoiceInOpenAIObjectForm) {
  const std::string object = R"({"type": "function", "function": {"name": "get_time"}})";
  Result<std::string> by_object = tool_calls_structural_tag("hermes", kTools, choice(object));
  Result<std::string> by_name = tool_calls_structural_tag("hermes", kTools, choice("get_time"));
  ASSERT_TRUE(by_object.ok()) << by_object.status().to_string();
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(*by_object, *by_name);
  auto tag = nlohmann::json::parse(*by_name);
  EXPECT_EQ(tag["type"], "structural_tag");
}

// Every format, tool_choice, reasoning and parallel setting gives a tag
// that compiles, and whose empty reply is complete only where text alone
// is allowed (auto, none) and nothing must come first.
TEST(ToolCalls, EveryCombinationCompiles) {
  for (const ToolCallFormatInfo& info : tool_call_formats()) {
    for (const char* tool_choice : {"auto", "required", "none", "get_time"}) {
      for (bool reasoning : {false, true}) {
        for (bool parallel : {true, false}) {
          SCOPED_TRACE(info.name + " " + tool_choice + (reasoning ? " reasoning" : "") +
                       (parallel ? "" : " no-parallel"));
          FormatChecker checker(info.name, choice(tool_choice, reasoning, parallel));
          const bool text_only =
              std::string(tool_choice) == "auto" || std::string(tool_choice) == "none";
          EXPECT_EQ(checker.accepts(""), text_only && !reasoning && info.name != "harmony");
        }
      }
    }
  }
}

const char* const kWeatherArgs = R"({"city": "Paris", "unit": "celsius"})";

TEST(ToolCalls, Llama3Json) {
  const std::string call =
      std::string(R"({"name": "get_weather", "parameters": )") + kWeatherArgs + "}";
  FormatChecker auto_("llama3", choice("auto"));
  EXPECT_TRUE(auto_.accepts(call));
  EXPECT_TRUE(auto_.accepts("It is sunny in Paris."));
  EXPECT_TRUE(auto_.accepts("Let me check. " + call));
  EXPECT_FALSE(auto_.accepts(R"({"name": "get_wether", "parameters": {"city": "Paris"}})"));
  EXPECT_FALSE(auto_.accepts(R"({"name": "get_weather", "parameters": {"unit": "celsius"}})"));
  EXPECT_FALSE(auto_.accepts(R"({"name": "get_weather", "parameters": {"city": "Paris"})"));
  EXPECT_FALSE(auto_.accepts(call + " Done."));  // one call ends the reply
  EXPECT_FALSE(auto_.accepts(call + call));      // Llama 3.1 makes one call at a time

  FormatChecker required("llama3", choice("required"));
  EXPECT_TRUE(required.accepts(call));
  EXPECT_TRUE(required.accepts(R"({"name": "get_time", "parameters": {"tz": "CET"}})"));
  EXPECT_FALSE(required.accepts("Let me check. " + call));
  EXPECT_FALSE(required.accepts("It is sunny."));

  FormatChecker named("llama3", choice("get_time"));
  EXPECT_TRUE(named.accepts(R"({"name": "get_time", "parameters": {"tz": "CET"}})"));
  EXPECT_FALSE(named.accepts(call));

  FormatChecker none("llama3", choice("none"));
  EXPECT_TRUE(none.accepts("It is sunny."));
}

TEST(ToolCalls, Llama3PythonTag) {
  const std::string call =
      std::string(R"(<|python_tag|>{"name": "get_weather", "parameters": )") + kWeatherArgs + "}";
  FormatChecker auto_("llama3-python-tag", choice("auto"));
  EXPECT_TRUE(auto_.accepts(call));
  EXPECT_TRUE(auto_.accepts("It is sunny."));
  EXPECT_FALSE(
      auto_.accepts(R"(<|python_tag|>{"name": "get_wether", "parameters": {"city": "P"}})"));
  EXPECT_FALSE(auto_.accepts(R"(<|python_tag|>{"name": "get_weather", "parameters": {}})"));
  EXPECT_FALSE(
      auto_.accepts(R"(<|python_tag|>{"name": "get_weather", "parameters": {"city": "P"})"));
  FormatChecker required("llama3-python-tag", choice("required"));
  EXPECT_TRUE(required.accepts(call));
  EXPECT_FALSE(required.accepts(call.substr(std::string("<|python_tag|>").size())));  // no tag
  EXPECT_FALSE(required.accepts("Sure. " + call));
}

TEST(ToolCalls, HermesAndQwen) {
  auto call = [](const std::string& name, const std::string& args) {
    return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>";
  };
  const std::string weather = call("get_weather", kWeatherArgs);
  const std::string time = call("get_time", R"({"tz": "Europe/Paris"})");
  FormatChecker auto_("hermes", choice("auto"));
  EXPECT_TRUE(auto_.accepts(weather));
  EXPECT_TRUE(auto_.accepts("I will look it up.\n" + weather + "\n" + time));
  EXPECT_TRUE(auto_.accepts("No tool needed: it is 3 pm."));
  EXPECT_FALSE(auto_.accepts(call("get_wether", kWeatherArgs)));
  EXPECT_FALSE(auto_.accepts(call("get_weather", R"({"unit": "celsius"})")));
  EXPECT_FALSE(auto_.accepts(call("get_weather", R"({"city": "Paris", "wind": 1})")));
  EXPECT_FALSE(auto_.accepts(weather.substr(0, weather.size() - 12)));  // no </tool_call>

  FormatChecker single("hermes", choice("auto", false, /*parallel=*/false));
  EXPECT_TRUE(single.accepts("Checking.\n" + weather));
  EXPECT_FALSE(single.accepts(weather + "\n" + time));

  FormatChecker required("hermes", choice("required"));
  EXPECT_TRUE(required.accepts(weather + "\n" + time));
  EXPECT_FALSE(required.accepts("Sure.\n" + weather));
  EXPECT_FALSE(required.accepts("It is sunny."));

  FormatChecker named("hermes", choice("get_time"));
  EXPECT_TRUE(named.accepts(time));
  EXPECT_FALSE(named.accepts(weather));
  EXPECT_FALSE(named.accepts(time + "\n" + time));

  // Qwen 3 with reasoning: <think>...</think> and a blank line first.
  FormatChecker thinking("hermes", choice("required", /*reasoning=*/true));
  EXPECT_TRUE(thinking.accepts("<think>\nThe user wants the weather.\n</think>\n\n" + weather));
  EXPECT_FALSE(thinking.accepts(weather));
  EXPECT_FALSE(thinking.accepts("<think>\nThe user wants the weather.\n" + weather));

  FormatChecker none("hermes", choice("none", true));
  EXPECT_TRUE(none.accepts("<think>\nsmall talk\n</think>\n\nHello!"));
  EXPECT_FALSE(none.accepts("<think>\nx\n</think>\n\n<think>again"));
  EXPECT_FALSE(none.accepts("Hello!"));
}

TEST(ToolCalls, Qwen3Coder) {
  auto param = [](const std::string& name, const std::string& value) {
    return "<parameter=" + name + ">\n" + value + "\n</parameter>\n";
  };
  auto call = [](const std::string& name, const std::string& args) {
    return "<tool_call>\n<function=" + name + ">\n" + args + "</function>\n</tool_call>";
  };
  const std::string weather =
      call("get_weather", param("city", "Paris") + param("unit", "celsius"));
  const std::string time = call("get_time", param("tz", "Europe/Paris"));
  FormatChecker auto_("qwen3_coder", choice("auto"));
  EXPECT_TRUE(auto_.accepts(weather));
  EXPECT_TRUE(auto_.accepts(call("get_weather", param("city", "New York\nNY"))));
  EXPECT_TRUE(auto_.accepts("I will look it up.\n\n" + weather + "\n" + time));
  EXPECT_TRUE(auto_.accepts("No tool needed."));
  EXPECT_FALSE(auto_.accepts(call("get_wether", param("city", "Paris"))));
  EXPECT_FALSE(auto_.accepts(call("get_weather", param("unit", "celsius"))));
  EXPECT_FALSE(
      auto_.accepts(call("get_weather", param("city", "Paris") + param("unit", "kelvin"))));
  EXPECT_FALSE(auto_.accepts(call("get_weather", param("city", "Paris") + param("wind", "1"))));
  EXPECT_FALSE(auto_.accepts(call("get_weather", param("unit", "celsius") + param("city", "P"))));
  EXPECT_FALSE(auto_.accepts(call("get_weather", param("city", "Paris") + "\n")));
  EXPECT_FALSE(
      auto_.accepts("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>"
                    "</function>\n</tool_call>"));
  EXPECT_FALSE(auto_.accepts(weather.substr(0, weather.size() - 12)));  // no </tool_call>

  FormatChecker required("qwen3_coder", choice("required", false, /*parallel=*/false));
  EXPECT_TRUE(required.accepts(time));
  EXPECT_FALSE(required.accepts(weather + "\n" + time));
  EXPECT_FALSE(required.accepts("Sure.\n\n" + time));

  // No parameters: nothing between the function's lines; optional ones
  // may all be left out; no schema: any parameters.
  const std::string tools = R"([
    {"type": "function", "function": {"name": "ping",
     "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}},
    {"type": "function", "function": {"name": "list",
     "parameters": {"type": "object", "properties": {"limit": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "free"}}])";
  FormatChecker few("qwen3_coder", choice("required"), test_vocabulary(), tools);
  EXPECT_TRUE(few.accepts(call("ping", "")));
  EXPECT_FALSE(few.accepts(call("ping", "\n")));
  EXPECT_FALSE(few.accepts(call("ping", param("x", "1"))));
  EXPECT_TRUE(few.accepts(call("list", "")));
  EXPECT_TRUE(few.accepts(call("list", param("limit", "10"))));
  EXPECT_FALSE(few.accepts(call("list", param("limit", "ten"))));
  EXPECT_FALSE(few.accepts(call("list", "\n")));
  EXPECT_TRUE(few.accepts(call("free", "")));
  EXPECT_TRUE(few.accepts(call("free", param("x", "1") + param("y", "two"))));
}

TEST(ToolCalls, Mistral) {
  const std::string weather = std::string(R"({"name": "get_weather", "arguments": )") +
                              kWeatherArgs + R"(, "id": "a1B2c3D4e"})";
  const std::string time = R"({"name": "get_time", "arguments": {"tz": "UTC"}})";
  FormatChecker auto_("mistral", choice("auto"));
  EXPECT_TRUE(auto_.accepts("[TOOL_CALLS][" + weather + ", " + time + "]"));
  EXPECT_TRUE(auto_.accepts("Bonjour !"));
  EXPECT_FALSE(
      auto_.accepts(R"([TOOL_CALLS][{"name": "get_wether", "arguments": {"city": "P"}}])"));
  EXPECT_FALSE(auto_.accepts(R"([TOOL_CALLS][{"name": "get_weather", "arguments": {}}])"));
  EXPECT_FALSE(auto_.accepts("[TOOL_CALLS][" + weather));  // no closing bracket
  EXPECT_FALSE(auto_.accepts("[TOOL_CALLS][]"));
  EXPECT_FALSE(auto_.accepts(R"([TOOL_CALLS][{"name": "get_time", "arguments": {"tz": "UTC"},
                                 "id": "short"}])"));

  FormatChecker required("mistral", choice("required", false, /*parallel=*/false));
  EXPECT_TRUE(required.accepts("[TOOL_CALLS][" + time + "]"));
  EXPECT_FALSE(required.accepts("[TOOL_CALLS][" + weather + ", " + time + "]"));
  EXPECT_FALSE(required.accepts("Sure. [TOOL_CALLS][" + time + "]"));
  EXPECT_FALSE(required.accepts("Bonjour !"));
}

TEST(ToolCalls, DeepSeek) {
  auto call = [](const std::string& name, const std::string& args) {
    return "<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n" + args +
           "\n```<｜tool▁call▁end｜>";
  };
  const std::string weather = call("get_weather", kWeatherArgs);
  const std::string time = call("get_time", R"({"tz": "Asia/Shanghai"})");
  const std::string begin = "<｜tool▁calls▁begin｜>", end = "<｜tool▁calls▁end｜>";
  FormatChecker auto_("deepseek", choice("auto"));
  EXPECT_TRUE(auto_.accepts(begin + weather + "\n" + time + end));
  EXPECT_TRUE(auto_.accepts("Let me check." + begin + weather + end));
  EXPECT_TRUE(auto_.accepts("It is sunny."));
  EXPECT_FALSE(auto_.accepts(begin + call("get_wether", kWeatherArgs) + end));
  EXPECT_FALSE(auto_.accepts(begin + call("get_weather", R"({"unit": "celsius"})") + end));
  EXPECT_FALSE(auto_.accepts(begin + weather));                  // no <｜tool▁calls▁end｜>
  EXPECT_FALSE(auto_.accepts(begin + weather + end + "Done."));  // nothing after the calls

  FormatChecker required("deepseek", choice("required", false, /*parallel=*/false));
  EXPECT_TRUE(required.accepts(begin + time + end));
  EXPECT_FALSE(required.accepts(begin + weather + "\n" + time + end));
  EXPECT_FALSE(required.accepts("Sure." + begin + time + end));

  // R1: the template's generation prompt opens <think>\n, so the reply
  // starts inside the reasoning.
  FormatChecker r1("deepseek", choice("get_time", /*reasoning=*/true));
  EXPECT_TRUE(r1.accepts("The user asks the time.\n</think>\n\n" + begin + time + end));
  EXPECT_FALSE(r1.accepts(begin + time + end));
  EXPECT_FALSE(r1.accepts("Hmm.\n</think>\n\n" + begin + weather + end));
}

// MiniMax-M2's template: parameters each followed by "\n", a string value
// raw, other values JSON; the calls of a reply in one block.
TEST(ToolCalls, MiniMaxM2) {
  auto param = [](const std::string& name, const std::string& value) {
    return "<parameter name=\"" + name + "\">" + value + "</parameter>\n";
  };
  auto invoke = [](const std::string& name, const std::string& args) {
    return "<invoke name=\"" + name + "\">\n" + args + "</invoke>\n";
  };
  auto block = [](const std::string& calls) {
    return "<minimax:tool_call>\n" + calls + "</minimax:tool_call>";
  };
  const std::string weather =
      invoke("get_weather", param("city", "Paris") + param("unit", "celsius"));
  const std::string time = invoke("get_time", param("tz", "Europe/Paris"));
  FormatChecker auto_("minimax_m2", choice("auto"));
  EXPECT_TRUE(auto_.accepts(block(weather)));
  EXPECT_TRUE(auto_.accepts("Let me look.\n" + block(weather + time)));
  EXPECT_TRUE(auto_.accepts("It is sunny."));
  EXPECT_TRUE(auto_.accepts(block(invoke("get_weather", param("city", "New York\nNY")))));
  EXPECT_FALSE(auto_.accepts(block(invoke("get_wether", param("city", "Paris")))));
  EXPECT_FALSE(auto_.accepts(block(invoke("get_weather", param("unit", "celsius")))));
  EXPECT_FALSE(auto_.accepts(
      block(invoke("get_weather", param("city", "Paris") + param("unit", "kelvin")))));
  EXPECT_FALSE(auto_.accepts(block(invoke("get_weather", param("city", "a</parameter>b")))));
  EXPECT_FALSE(auto_.accepts(block(invoke("get_weather", param("city", "a</invoke>")))));
  // The template's newlines are exact.
  EXPECT_FALSE(
      auto_.accepts(block("<invoke name=\"get_time\"><parameter name=\"tz\">UTC"
                          "</parameter>\n</invoke>\n")));
  EXPECT_FALSE(auto_.accepts(
      block("<invoke name=\"get_time\">\n<parameter name=\"tz\">UTC</parameter></invoke>\n")));
  EXPECT_FALSE(auto_.accepts(block(weather) + block(time)));  // one block per reply
  EXPECT_FALSE(auto_.accepts(block(weather) + " Done."));

  FormatChecker required("minimax_m2", choice("required", /*reasoning=*/true));
  EXPECT_TRUE(required.accepts("The user wants the time.\n</think>\n\n\n" + block(time)));
  EXPECT_FALSE(required.accepts("The user wants the time.\n</think>\n\n" + block(time)));
  EXPECT_FALSE(required.accepts("\n" + block(time)));

  FormatChecker single("minimax_m2", choice("auto", false, /*parallel=*/false));
  EXPECT_TRUE(single.accepts(block(time)));
  EXPECT_FALSE(single.accepts(block(time + weather)));
}

// DeepSeek-V3.2's template: DSML parameters with a string attribute, raw
// strings (string="true") and JSON others (string="false").
TEST(ToolCalls, DeepSeekV32) {
  const std::string dsml = "｜DSML｜";
  auto param = [&](const std::string& name, bool string, const std::string& value) {
    return "<" + dsml + "parameter name=\"" + name + "\" string=\"" + (string ? "true" : "false") +
           "\">" + value + "</" + dsml + "parameter>";
  };
  auto invoke = [&](const std::string& name, const std::string& args) {
    return "\n<" + dsml + "invoke name=\"" + name + "\">\n" + args + "\n</" + dsml + "invoke>";
  };
  auto block = [&](const std::string& calls) {
    return "<" + dsml + "function_calls>" + calls + "\n</" + dsml + "function_calls>";
  };
  const std::string tools = R"([
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
     "properties": {"query": {"type": "string"}, "limit": {"type": "integer"},
                    "filters": {"type": "array", "items": {"type": "string"}}},
     "required": ["query"], "additionalProperties": false}}},
    {"type": "function", "function": {"name": "ping",
     "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}}])";
  const std::string search = invoke("search", param("query", true, "grammask \"exact\"") + "\n" +
                                                  param("limit", false, "5") + "\n" +
                                                  param("filters", false, R"(["c++", "docs"])"));
  const std::string ping = invoke("ping", "");
  FormatChecker auto_("deepseek_v3_2", choice("auto"), test_vocabulary(), tools);
  EXPECT_TRUE(auto_.accepts("Searching.\n\n" + block(search)));
  EXPECT_TRUE(auto_.accepts(block(search + ping)));
  EXPECT_TRUE(auto_.accepts("No tool needed."));
  EXPECT_TRUE(auto_.accepts(block(invoke("search", param("query", true, "x")))));
  // The string attribute follows the value's type.
  EXPECT_FALSE(auto_.accepts(block(invoke("search", param("query", false, "x")))));
  EXPECT_FALSE(auto_.accepts(block(invoke("search", param("query", false, "\"x\"")))));
  EXPECT_FALSE(auto_.accepts(
      block(invoke("search", param("query", true, "x") + "\n" + param("limit", true, "5")))));
  EXPECT_FALSE(auto_.accepts(
      block(invoke("search", param("query", true, "x") + "\n" + param("limit", false, "5.5")))));
  EXPECT_FALSE(auto_.accepts(block(invoke("search", param("limit", false, "5")))));
  EXPECT_FALSE(
      auto_.accepts(block(invoke("search", param("query", true, "a</" + dsml + "invoke>")))));
  // No arguments: the template's blank line, and nothing else.
  EXPECT_FALSE(auto_.accepts(block("\n<" + dsml + "invoke name=\"ping\">\n</" + dsml + "invoke>")));
  EXPECT_FALSE(auto_.accepts(block(search) + "Done."));

  FormatChecker thinking("deepseek_v3_2", choice("required", /*reasoning=*/true), test_vocabulary(),
                         tools);
  EXPECT_TRUE(thinking.accepts("Need a search.</think>\n\n" + block(ping)));
  EXPECT_FALSE(thinking.accepts("\n\n" + block(ping)));
  EXPECT_FALSE(thinking.accepts("Need a search.</think>" + block(ping)));
}

// GLM-4.7's template: `<tool_call>NAME` then key and value tags with
// nothing between, calls back to back.
TEST(ToolCalls, Glm47) {
  auto arg = [](const std::string& key, const std::string& value) {
    return "<arg_key>" + key + "</arg_key><arg_value>" + value + "</arg_value>";
  };
  auto call = [](const std::string& name, const std::string& args) {
    return "<tool_call>" + name + args + "</tool_call>";
  };
  const std::string weather = call("get_weather", arg("city", "Paris") + arg("unit", "celsius"));
  const std::string time = call("get_time", arg("tz", "Asia/Shanghai"));
  FormatChecker auto_("glm_4_7", choice("auto"));
  EXPECT_TRUE(auto_.accepts(weather));
  EXPECT_TRUE(auto_.accepts("Checking both." + weather + time));
  EXPECT_TRUE(auto_.accepts("Nothing to call."));
  EXPECT_FALSE(auto_.accepts(call("get_weather", arg("unit", "celsius"))));
  EXPECT_FALSE(auto_.accepts(call("get_weather", arg("city", "a</arg_value>"))));
  EXPECT_FALSE(auto_.accepts(call("get_weather", arg("city", "Paris") + arg("city", "Rome"))));
  EXPECT_FALSE(auto_.accepts(call("get_wether", arg("city", "Paris"))));
  EXPECT_FALSE(auto_.accepts(
      "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
      "</tool_call>"));  // GLM-4.5's newlines

  FormatChecker thinking("glm_4_7", choice("get_time", /*reasoning=*/true));
  EXPECT_TRUE(thinking.accepts("Time zone lookup.</think>" + time));
  EXPECT_FALSE(thinking.accepts("Time zone lookup.</think>" + weather));
  EXPECT_FALSE(thinking.accepts(time));
}

// any_order: every json_schema of the tag reads its arguments in any order,
// each at most once, the required ones present.
TEST(ToolCalls, AnyOrderArguments) {
  ToolCallOptions options = choice("required");
  options.any_order = true;
  FormatChecker hermes("hermes", options);
  auto call = [](const std::string& args) {
    return "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + args + "}\n</tool_call>";
  };
  EXPECT_TRUE(hermes.accepts(call(R"({"unit": "celsius", "city": "Paris"})")));
  EXPECT_TRUE(hermes.accepts(call(R"({"city": "Paris", "unit": "celsius"})")));
  EXPECT_FALSE(hermes.accepts(call(R"({"unit": "celsius"})")));
  EXPECT_FALSE(hermes.accepts(call(R"({"city": "Paris", "city": "Rome"})")));
  FormatChecker schema_order("hermes", choice("required"));
  EXPECT_FALSE(schema_order.accepts(call(R"({"unit": "celsius", "city": "Paris"})")));

  FormatChecker glm("glm_4_7", options);
  auto arg = [](const std::string& key, const std::string& value) {
    return "<arg_key>" + key + "</arg_key><arg_value>" + value + "</arg_value>";
  };
  EXPECT_TRUE(glm.accepts("<tool_call>get_weather" + arg("unit", "celsius") + arg("city", "Paris") +
                          "</tool_call>"));
  EXPECT_FALSE(glm.accepts("<tool_call>get_weather" + arg("unit", "celsius") +
                           arg("unit", "celsius") + arg("city", "Paris") + "</tool_call>"));
  Result<std::string> tag = tool_calls_structural_tag("qwen3_coder", kTools, options);
  ASSERT_TRUE(tag.ok());
  EXPECT_NE(tag->find("\"any_order\":true"), std::string::npos);

  // A tool of 20 parameters (an AnyOrder(...) call), two of them required.
  std::string properties, reversed;
  for (int i = 0; i < 20; ++i) {
    properties +=
        std::string(i ? ", " : "") + "\"p" + std::to_string(i) + "\": {\"type\": \"integer\"}";
    reversed = "\"p" + std::to_string(i) + "\": " + std::to_string(i) + (i ? ", " : "") + reversed;
  }
  const std::string wide_tools =
      R"([{"type": "function", "function": {"name": "wide", "parameters": {"type": "object", )"
      R"("properties": {)" +
      properties + R"(}, "required": ["p3", "p17"], "additionalProperties": false}}}])";
  FormatChecker wide("hermes", options, test_vocabulary(), wide_tools);
  auto wide_call = [](const std::string& args) {
    return "<tool_call>\n{\"name\": \"wide\", \"arguments\": " + args + "}\n</tool_call>";
  };
  EXPECT_TRUE(wide.accepts(wide_call("{" + reversed + "}")));
  EXPECT_TRUE(wide.accepts(wide_call(R"({"p17": 1, "p9": 2, "p3": 3})")));
  EXPECT_FALSE(wide.accepts(wide_call(R"({"p17": 1, "p9": 2})")));
  EXPECT_FALSE(wide.accepts(wide_call(R"({"p17": 1, "p3": 2, "p9": 3, "p17": 4})")));
}

TEST(ToolCalls, Harmony) {
  const std::string weather =
      std::string("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>") +
      kWeatherArgs + "<|call|>";
  const std::string analysis =
      "<|channel|>analysis<|message|>Need the weather tool.<|end|><|start|>assistant";
  const std::string final_answer = "<|channel|>final<|message|>It is sunny.<|return|>";
  FormatChecker auto_("harmony", choice("auto", /*reasoning=*/true));
  EXPECT_TRUE(auto_.accepts(analysis + weather));
  EXPECT_TRUE(auto_.accepts(analysis + final_answer));
  EXPECT_FALSE(auto_.accepts(weather));  // the analysis comes first
  EXPECT_FALSE(auto_.accepts(
      analysis + "<|channel|>commentary to=functions.get_wether <|constrain|>json<|message|>" +
      kWeatherArgs + "<|call|>"));
  EXPECT_FALSE(auto_.accepts(analysis +
                             "<|channel|>commentary to=functions.get_weather <|constrain|>json"
                             "<|message|>{\"unit\": \"celsius\"}<|call|>"));
  EXPECT_FALSE(auto_.accepts(analysis + weather.substr(0, weather.size() - 8)));  // no <|call|>
  // A message cannot hold a delimiter token.
  EXPECT_FALSE(auto_.accepts(analysis + "<|channel|>final<|message|>a <|channel|> b<|return|>"));

  FormatChecker required("harmony", choice("required"));
  EXPECT_TRUE(required.accepts(weather));
  EXPECT_FALSE(required.accepts(final_answer));
  EXPECT_FALSE(required.accepts(analysis + weather));

  FormatChecker none("harmony", choice("none"));
  EXPECT_TRUE(none.accepts(final_answer));
  EXPECT_FALSE(none.accepts(weather));
}

TEST(ToolCalls, GenericThinkBlockWithAnyFormat) {
  const std::string think = "<think>\nWeather question.\n</think>\n\n";
  FormatChecker llama("llama3", choice("required", /*reasoning=*/true));
  EXPECT_TRUE(llama.accepts(think + R"({"name": "get_time", "parameters": {"tz": "UTC"}})"));
  EXPECT_FALSE(llama.accepts(R"({"name": "get_time", "parameters": {"tz": "UTC"}})"));
  FormatChecker mistral("mistral", choice("auto", /*reasoning=*/true));
  EXPECT_TRUE(
      mistral.accepts(think + R"([TOOL_CALLS][{"name": "get_time", "arguments": {"tz": "UTC"}}])"));
  EXPECT_TRUE(mistral.accepts(think + "Il fait beau."));
  EXPECT_FALSE(mistral.accepts("Il fait beau."));
}

// BFCL "multiple" schemas (JSONSchemaBench): each is an anyOf of
// {"function.name": parameters}; the test instances are calls.
TEST(ToolCalls, BfclMultipleFunctionsInHermesFormat) {
  const std::string path =
      std::string(GRAMMASK_SHARED_DIR) + "/jsonschemabench/maskbench/data/BFCL_multiple_1.json";
  std::ifstream in(path);
  if (std::string(GRAMMASK_SHARED_DIR).empty() || !in) GTEST_SKIP() << "no " << path;
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json file = nlohmann::json::parse(text.str());
  nlohmann::json tools = nlohmann::json::array();
  for (const auto& option : file["schema"]["anyOf"]) {
    for (const auto& [name, parameters] : option["properties"].items()) {
      tools.push_back(
          {{"type", "function"}, {"function", {{"name", name}, {"parameters", parameters}}}});
    }
  }
  ASSERT_EQ(tools.size(), 3u);
  FormatChecker checker("hermes", choice("required"), test_vocabulary(), tools.dump());
  size_t valid = 0;
  for (const auto& test : file["tests"]) {
    for (const auto& [name, arguments] : test["data"].items()) {
      const std::string call = "<tool_call>\n{\"name\": \"" + name +
                               "\", \"arguments\": " + arguments.dump() + "}\n</tool_call>";
      EXPECT_EQ(checker.accepts(call), test["valid"].get<bool>()) << call;
      valid += test["valid"].get<bool>();
    }
  }
  EXPECT_GT(valid, 0u);
  EXPECT_FALSE(checker.accepts(
      "<tool_call>\n{\"name\": \"math.circle_area\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_TRUE(checker.accepts(
      "<tool_call>\n{\"name\": \"math.circle_area\", \"arguments\": {\"radius\": 2.5}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"math.triangle_area_base_height\", "
      "\"arguments\": {\"base\": 3, \"height\": 4}}\n</tool_call>"));
}

// The Llama 3 tokenizer of ../shared (Meta-Llama-3's special tokens): the
// JSON calls are text; <|python_tag|> came with Llama 3.1 (id 128010, a
// reserved token in 3.0), so that format names the missing token.
TEST(ToolCalls, Llama3Tokenizer) {
  const std::string path = std::string(GRAMMASK_SHARED_DIR) + "/tokenizers/llama-3/tokenizer.json";
  if (std::string(GRAMMASK_SHARED_DIR).empty() || !std::ifstream(path)) {
    GTEST_SKIP() << "no " << path;
  }
  Result<Vocabulary> vocab = Vocabulary::from_tokenizer_json_file(path);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  const std::string args = R"({"city": "Paris", "unit": "celsius"})";
  FormatChecker json_calls("llama3", choice("auto"), *vocab);
  EXPECT_TRUE(json_calls.accepts(R"({"name": "get_weather", "parameters": )" + args + "}"));
  EXPECT_TRUE(json_calls.accepts("The weather in Paris is sunny."));
  EXPECT_FALSE(json_calls.accepts(R"({"name": "get_weather", "parameters": {"unit": "celsius"}})"));
  EXPECT_FALSE(json_calls.accepts(R"({"name": "get_weather", "parameters": )" + args));

  FormatChecker hermes("hermes", choice("get_time", /*reasoning=*/true), *vocab);
  EXPECT_TRUE(
      hermes.accepts("<think>\nTime zone first.\n</think>\n\n<tool_call>\n{\"name\": \"get_time\", "
                     "\"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>"));
  EXPECT_FALSE(
      hermes.accepts("<think>\nTime zone first.\n</think>\n\n<tool_call>\n{\"name\": \"get_time\", "
                     "\"arguments\": {\"tz\": \"UTC\"}}\n"));

  Result<CompiledGrammar> tagged =
      compile_structural_tag(tag_for("llama3-python-tag", choice("required")), *vocab);
  ASSERT_FALSE(tagged.ok());
  EXPECT_NE(tagged.status().message().find("<|python_tag|>"), std::string::npos)
      << tagged.status().to_string();
}

}  // namespace
}  // namespace grammask
