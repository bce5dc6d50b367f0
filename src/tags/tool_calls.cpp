// OpenAI-style tools -> the structural tag of a model's tool-call format.
// docs/tool-calling.md ("Model formats") cites the chat template or document
// each format follows and says why a delimiter is a token or text.
#include "grammask/tool_calls.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace grammask {
namespace {

using Json = nlohmann::ordered_json;

struct Tool {
  std::string name;
  // A JSON Schema, behind a pointer: a Json member would give Tool a move
  // constructor that may throw (nlohmann's checks) inside noexcept.
  std::shared_ptr<const Json> parameters;
};

enum class Choice { kAuto, kRequired, kNone, kNamed };

// What every format builder gets: the tools the reply may call (only the
// named one for Choice::kNamed) and the options.
struct Request {
  std::vector<Tool> tools;
  Choice choice = Choice::kAuto;
  bool parallel = true;
  bool reasoning = false;
  // Strings the free text after the reasoning block may not contain.
  std::vector<std::string> excludes;
};

Json const_string(const std::string& value) {
  return Json{{"type", "const_string"}, {"value", value}};
}
Json token(const std::string& text) {
  return Json{{"type", "token"}, {"token", text}};
}
Json any_text() {
  return Json{{"type", "any_text"}};
}
// Free text of the reply (after the reasoning block).
Json free_text(const Request& r) {
  Json text = any_text();
  if (!r.excludes.empty()) text["excludes"] = r.excludes;
  return text;
}
Json schema(const Json& parameters) {
  return Json{{"type", "json_schema"}, {"json_schema", parameters}};
}
Json sequence(Json elements) {
  if (elements.size() == 1) return std::move(elements[0]);
  return Json{{"type", "sequence"}, {"elements", std::move(elements)}};
}
Json one_of(Json elements) {
  if (elements.size() == 1) return std::move(elements[0]);
  return Json{{"type", "or"}, {"elements", std::move(elements)}};
}
Json tag(Json begin, Json content, Json end) {
  return Json{{"type", "tag"},
              {"begin", std::move(begin)},
              {"content", std::move(content)},
              {"end", std::move(end)}};
}
Json triggered_tags(const Request& r, const std::string& trigger, Json tags, bool at_least_one,
                    bool stop_after_first) {
  Json format{{"type", "triggered_tags"},
              {"triggers", Json::array({trigger})},
              {"tags", std::move(tags)},
              {"at_least_one", at_least_one},
              {"stop_after_first", stop_after_first}};
  if (!r.excludes.empty()) format["excludes"] = r.excludes;
  return format;
}
Json tags_with_separator(Json tags, const std::string& separator, bool stop_after_first) {
  return Json{{"type", "tags_with_separator"},
              {"tags", std::move(tags)},
              {"separator", separator},
              {"at_least_one", true},
              {"stop_after_first", stop_after_first}};
}

// `<think>` free text `</think>`, then `after`: the blank line Qwen 3's,
// DeepSeek-R1's and MiniMax-M2's templates write after it. `opened_by_prompt`:
// the template's generation prompt already holds `<think>` (DeepSeek-R1,
// DeepSeek-V3.2, MiniMax-M2, GLM-4.7).
Json think_block(bool opened_by_prompt, const std::string& after = "\n\n") {
  Json block = tag(opened_by_prompt ? "" : "<think>", any_text(), "</think>");
  if (after.empty()) return block;
  return sequence(Json::array({std::move(block), const_string(after)}));
}

// Calls written as tags (`begin` JSON `end`) among free text: auto lets text
// and calls mix, required and named allow only calls; none, or no tool,
// free text alone.
Json text_triggered_calls(const Request& r, const std::string& trigger, Json tags,
                          const std::string& separator) {
  if (tags.empty()) return free_text(r);
  switch (r.choice) {
    case Choice::kAuto:
      return triggered_tags(r, trigger, std::move(tags), false, !r.parallel);
    case Choice::kRequired:
      return r.parallel ? tags_with_separator(std::move(tags), separator, false)
                        : one_of(std::move(tags));
    case Choice::kNamed:
      return std::move(tags[0]);
    case Choice::kNone:
      break;
  }
  return free_text(r);
}

// The body after the optional reasoning block: free text for "none" (and
// for "auto" without tools), else `calls`.
Json with_reasoning(const Request& r, Json reasoning, Json body) {
  if (!r.reasoning) return body;
  Json elements = reasoning["type"] == "sequence" ? std::move(reasoning["elements"])
                                                  : Json::array({std::move(reasoning)});
  elements.push_back(std::move(body));
  return sequence(std::move(elements));
}

// Llama 3.1/3.2/3.3 JSON tool calls (llama.cpp common/chat.cpp,
// common_chat_params_init_llama_3_1_tool_calls): one call per reply.
Json llama3(const Request& r) {
  Json tags = Json::array();
  for (const Tool& tool : r.tools) {
    tags.push_back(
        tag("{\"name\": \"" + tool.name + "\", \"parameters\": ", schema(*tool.parameters), "}"));
  }
  Request single = r;
  single.parallel = false;
  Json body = text_triggered_calls(single, "{\"name\": ", std::move(tags), "");
  return with_reasoning(r, think_block(false), std::move(body));
}

// Llama 3.x with the <|python_tag|> control token before the JSON call.
Json llama3_python_tag(const Request& r) {
  Json calls = Json::array();
  for (const Tool& tool : r.tools) {
    calls.push_back(
        sequence(Json::array({const_string("{\"name\": \"" + tool.name + "\", \"parameters\": "),
                              schema(*tool.parameters), const_string("}")})));
  }
  Json body = free_text(r);
  if (r.choice != Choice::kNone && !calls.empty()) {
    Json call = sequence(Json::array({token("<|python_tag|>"), one_of(std::move(calls))}));
    body = r.choice == Choice::kAuto ? one_of(Json::array({free_text(r), std::move(call)}))
                                     : std::move(call);
  }
  return with_reasoning(r, think_block(false), std::move(body));
}

// Hermes 2 Pro, Qwen 2.5, Qwen 3: <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>
// (their chat templates; llama.cpp common_chat_params_init_hermes_2_pro).
Json hermes(const Request& r) {
  Json tags = Json::array();
  for (const Tool& tool : r.tools) {
    tags.push_back(tag("<tool_call>\n{\"name\": \"" + tool.name + "\", \"arguments\": ",
                       schema(*tool.parameters), "}\n</tool_call>"));
  }
  Json body = text_triggered_calls(r, "<tool_call>", std::move(tags), "\n");
  return with_reasoning(r, think_block(false), std::move(body));
}

const Json* member(const Json& value, const char* key);
const std::string* string_member(const Json& value, const char* key);

// A tool's arguments in one of the XML styles of the json_schema format.
Json xml_arguments(const Json& parameters, const char* style) {
  return Json{{"type", "json_schema"}, {"json_schema", parameters}, {"style", style}};
}

// Qwen3-Coder: <tool_call>\n<function=NAME>\n, then per argument
// <parameter=KEY>\nVALUE\n</parameter>\n, then </function>\n</tool_call>
// (its chat template; XGrammar's qwen_coder built-in tag). The arguments
// are the "qwen_xml" style, whose parameters are joined by "\n": the last
// one's newline is written here, only when there is one.
Json qwen_arguments(const Json& parameters) {
  Json arguments = xml_arguments(parameters, "qwen_xml");
  const Json* required = member(parameters, "required");
  const Json* min = member(parameters, "minProperties");
  const bool nonempty = (required != nullptr && required->is_array() && !required->empty()) ||
                        (min != nullptr && min->is_number_integer() && min->get<int64_t>() > 0);
  if (nonempty) return sequence(Json::array({std::move(arguments), const_string("\n")}));
  const Json* properties = member(parameters, "properties");
  const Json* additional = member(parameters, "additionalProperties");
  const bool declared = properties != nullptr && properties->is_object() && !properties->empty();
  if (!declared && additional != nullptr && additional->is_boolean() && !additional->get<bool>())
    return const_string("");  // no argument can be written
  // None or at least one: the latter is the schema with minProperties 1.
  arguments["json_schema"]["minProperties"] = 1;
  return one_of(Json::array(
      {const_string(""), sequence(Json::array({std::move(arguments), const_string("\n")}))}));
}

Json qwen3_coder(const Request& r) {
  Json tags = Json::array();
  for (const Tool& tool : r.tools) {
    tags.push_back(tag("<tool_call>\n<function=" + tool.name + ">\n",
                       qwen_arguments(*tool.parameters), "</function>\n</tool_call>"));
  }
  Json body = text_triggered_calls(r, "<tool_call>", std::move(tags), "\n");
  return with_reasoning(r, think_block(false), std::move(body));
}

// All of a reply's calls inside one block, `open` calls `close`: for auto
// after free text, the block opened by `trigger`; for required and named the
// block alone, after `lead`.
Json call_block(const Request& r, const std::string& trigger, const std::string& open, Json calls,
                const std::string& close, const std::string& lead) {
  if (calls.empty() || r.choice == Choice::kNone) return free_text(r);
  const bool single = !r.parallel || r.choice == Choice::kNamed;
  Json block = tag(open, tags_with_separator(std::move(calls), "", single), close);
  if (r.choice == Choice::kAuto)
    return triggered_tags(r, trigger, Json::array({std::move(block)}), false, true);
  return sequence(Json::array({const_string(lead), std::move(block)}));
}

// MiniMax-M2 (its chat template, as in llama.cpp's models/templates): after
// the text, "\n<minimax:tool_call>\n", each call `<invoke name="NAME">\n`
// arguments `</invoke>\n`, then `</minimax:tool_call>`; the generation
// prompt opens `<think>\n`, and the reasoning ends "\n</think>\n\n".
Json minimax_m2(const Request& r) {
  Json calls = Json::array();
  for (const Tool& tool : r.tools) {
    calls.push_back(tag("<invoke name=\"" + tool.name + "\">\n",
                        xml_arguments(*tool.parameters, "minimax_xml"), "</invoke>\n"));
  }
  Json body = call_block(r, "<minimax:tool_call>", "<minimax:tool_call>\n", std::move(calls),
                         "</minimax:tool_call>", "\n");
  return with_reasoning(r, think_block(true), std::move(body));
}

// DeepSeek-V3.2 (its chat template, as in llama.cpp's models/templates):
// after the text, "\n\n<｜DSML｜function_calls>", each call
// "\n<｜DSML｜invoke name=\"NAME\">\n" arguments "\n</｜DSML｜invoke>", then
// "\n</｜DSML｜function_calls>"; the generation prompt opens `<think>`, and
// the text follows `</think>` directly.
Json deepseek_v3_2(const Request& r) {
  const std::string dsml = "｜DSML｜";
  Json calls = Json::array();
  for (const Tool& tool : r.tools) {
    // The "deepseek_xml" style writes a "\n" after every parameter, so its
    // last one is the "\n" before </｜DSML｜invoke>.
    calls.push_back(tag("\n<" + dsml + "invoke name=\"" + tool.name + "\">\n",
                        xml_arguments(*tool.parameters, "deepseek_xml"), "</" + dsml + "invoke>"));
  }
  Json body = call_block(r, "<" + dsml + "function_calls>", "<" + dsml + "function_calls>",
                         std::move(calls), "\n</" + dsml + "function_calls>", "\n\n");
  return with_reasoning(r, think_block(true, ""), std::move(body));
}

// GLM-4.7 and GLM-5 (their chat templates): `<tool_call>NAME`, then
// `<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>` per argument, then
// `</tool_call>`, with nothing between calls; the generation prompt opens
// `<think>`, and the text follows `</think>` directly.
Json glm_4_7(const Request& r) {
  Json tags = Json::array();
  for (const Tool& tool : r.tools) {
    tags.push_back(
        tag("<tool_call>" + tool.name, xml_arguments(*tool.parameters, "glm_xml"), "</tool_call>"));
  }
  Json body = text_triggered_calls(r, "<tool_call>", std::move(tags), "");
  return with_reasoning(r, think_block(true, ""), std::move(body));
}

// Mistral Nemo / Mistral v3 tokenizers: the [TOOL_CALLS] control token, then
// a JSON array of calls (llama.cpp common_chat_params_init_mistral_nemo).
Json mistral(const Request& r) {
  Json body = free_text(r);
  if (r.choice != Choice::kNone && !r.tools.empty()) {
    Json items = Json::array();
    for (const Tool& tool : r.tools) {
      items.push_back(Json{{"type", "object"},
                           {"properties",
                            {{"name", {{"type", "string"}, {"const", tool.name}}},
                             {"arguments", *tool.parameters},
                             {"id", {{"type", "string"}, {"pattern", "^[a-zA-Z0-9]{9}$"}}}}},
                           {"required", Json::array({"name", "arguments"})},
                           {"additionalProperties", false}});
    }
    Json array{{"type", "array"},
               {"items", items.size() == 1 ? items[0] : Json{{"anyOf", items}}},
               {"minItems", 1}};
    if (!r.parallel || r.choice == Choice::kNamed) array["maxItems"] = 1;
    Json calls = sequence(Json::array({token("[TOOL_CALLS]"), schema(array)}));
    body = r.choice == Choice::kAuto ? one_of(Json::array({free_text(r), std::move(calls)}))
                                     : std::move(calls);
  }
  return with_reasoning(r, think_block(false), std::move(body));
}

// DeepSeek V3 and R1 (their tokenizer_config.json chat templates; llama.cpp
// common_chat_params_init_deepseek_r1).
Json deepseek(const Request& r) {
  const std::string calls_begin = "<｜tool▁calls▁begin｜>";
  const std::string calls_end = "<｜tool▁calls▁end｜>";
  const std::string call_begin = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>";
  const std::string call_end = "\n```<｜tool▁call▁end｜>";
  Json body = free_text(r);
  if (r.choice == Choice::kNamed) {
    body = tag(calls_begin + call_begin + r.tools[0].name + "\n```json\n",
               schema(*r.tools[0].parameters), call_end + calls_end);
  } else if (r.choice != Choice::kNone && !r.tools.empty()) {
    Json tags = Json::array();
    for (const Tool& tool : r.tools) {
      tags.push_back(
          tag(call_begin + tool.name + "\n```json\n", schema(*tool.parameters), call_end));
    }
    Json calls =
        tag(calls_begin, tags_with_separator(std::move(tags), "\n", !r.parallel), calls_end);
    body = r.choice == Choice::kAuto
               ? triggered_tags(r, calls_begin, Json::array({std::move(calls)}), false, true)
               : std::move(calls);
  }
  return with_reasoning(r, think_block(true), std::move(body));
}

// gpt-oss harmony (openai/harmony docs, gpt-oss chat_template.jinja): every
// delimiter is a control token; a reply ends at <|call|> or <|return|>.
Json harmony(const Request& r) {
  const Json specials = Json::array({"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>",
                                     "<|end|>", "<|call|>", "<|return|>"});
  auto message = [&](const std::string& channel, const std::string& end) {
    return sequence(
        Json::array({token("<|channel|>"), const_string(channel),
                     tag(token("<|message|>"),
                         Json{{"type", "any_tokens"}, {"exclude_tokens", specials}}, token(end))}));
  };
  Json calls = Json::array();
  for (const Tool& tool : r.tools) {
    calls.push_back(sequence(Json::array(
        {token("<|channel|>"), const_string("commentary to=functions." + tool.name + " "),
         token("<|constrain|>"), const_string("json"), token("<|message|>"),
         schema(*tool.parameters), token("<|call|>")})));
  }
  Json body = message("final", "<|return|>");
  if (r.choice == Choice::kAuto) {
    calls.push_back(std::move(body));
    body = one_of(std::move(calls));
  } else if (r.choice != Choice::kNone) {
    body = one_of(std::move(calls));
  }
  Json analysis = sequence(
      Json::array({message("analysis", "<|end|>"), token("<|start|>"), const_string("assistant")}));
  return with_reasoning(r, std::move(analysis), std::move(body));
}

struct Format {
  ToolCallFormatInfo info;
  Json (*build)(const Request&);
};

const std::vector<Format>& formats() {
  static const std::vector<Format> kFormats = {
      {{"llama3", "Llama 3.1, 3.2, 3.3 (JSON tool calls)"}, llama3},
      {{"llama3-python-tag", "Llama 3.1, 3.2, 3.3 (<|python_tag|> then a JSON call)"},
       llama3_python_tag},
      {{"hermes", "Qwen 2.5, Qwen 3, Hermes 2 Pro and 3 (<tool_call> JSON </tool_call>)"}, hermes},
      {{"qwen3_coder", "Qwen3-Coder (<tool_call> <function=NAME> <parameter=KEY> ...)"},
       qwen3_coder},
      {{"mistral", "Mistral Nemo, Mistral 7B v0.3, Mistral Small ([TOOL_CALLS] JSON array)"},
       mistral},
      {{"deepseek", "DeepSeek V3, DeepSeek R1 (<｜tool▁calls▁begin｜> ...)"}, deepseek},
      {{"harmony", "gpt-oss (harmony channels)"}, harmony},
      {{"minimax_m2",
        "MiniMax-M2, M2.5 (<minimax:tool_call> <invoke name=...> <parameter name=...>)"},
       minimax_m2},
      {{"deepseek_v3_2", "DeepSeek-V3.2 (<｜DSML｜function_calls> <｜DSML｜invoke name=...>)"},
       deepseek_v3_2},
      {{"glm_4_7", "GLM-4.7, GLM-5 (<tool_call>NAME<arg_key>KEY</arg_key><arg_value>...)"},
       glm_4_7},
  };
  return kFormats;
}

// Sets "any_order" on every json_schema format inside `format`. Walks the
// containers directly, as member() does: the library never throws.
void set_any_order(Json& format) {
  if (auto* items = format.get_ptr<Json::array_t*>()) {
    for (Json& item : *items) set_any_order(item);
    return;
  }
  auto* members = format.get_ptr<Json::object_t*>();
  if (members == nullptr) return;
  const std::string* type = string_member(format, "type");
  if (type != nullptr && *type == "json_schema") {
    for (auto& [name, value] : *members) {
      if (name == "any_order") {
        value = true;
        return;
      }
    }
    members->emplace("any_order", true);
    return;  // (the schema itself is not a format)
  }
  for (auto& [name, value] : *members) set_any_order(value);
}

Status invalid(std::string message) {
  return Status(ErrorCode::kInvalidArgument, std::move(message));
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// The member `key` of `value`, or null. Walks the members directly: nlohmann's
// iterators and operator[] have throwing paths, and the library never throws.
const Json* member(const Json& value, const char* key) {
  const auto* members = value.get_ptr<const Json::object_t*>();
  if (members == nullptr) return nullptr;
  for (const auto& [name, item] : *members) {
    if (name == key) return &item;
  }
  return nullptr;
}

const std::string* string_member(const Json& value, const char* key) {
  const Json* item = member(value, key);
  return item == nullptr ? nullptr : item->get_ptr<const std::string*>();
}

Status read_tools(std::string_view tools_json, std::vector<Tool>& out) {
  Json tools = Json::parse(tools_json.begin(), tools_json.end(), nullptr, false);
  if (tools.is_discarded()) return Status(ErrorCode::kSyntax, "tools: malformed JSON");
  const auto* list = tools.get_ptr<const Json::array_t*>();
  if (list == nullptr) return invalid("tools: expected a JSON array of tools");
  std::set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& tool = (*list)[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!tool.is_object()) return invalid(where + ": expected an object");
    const Json* type = member(tool, "type");
    const std::string* type_name = type == nullptr ? nullptr : type->get_ptr<const std::string*>();
    if (type != nullptr && (type_name == nullptr || *type_name != "function")) {
      return invalid(where + ": type " +
                     type->dump(-1, ' ', false, Json::error_handler_t::replace) +
                     " is not \"function\"");
    }
    const Json* function = member(tool, "function");
    if (function == nullptr || !function->is_object()) {
      return invalid(where + ": no \"function\" object");
    }
    const std::string* name = string_member(*function, "name");
    if (name == nullptr) return invalid(where + ": the function has no name");
    Tool parsed;
    parsed.name = *name;
    if (!valid_name(parsed.name)) {
      return invalid(where + ": function name \"" + parsed.name +
                     "\" is not 1 to 64 of [A-Za-z0-9_.-]");
    }
    if (!names.insert(parsed.name).second) {
      return invalid(where + ": duplicate function name \"" + parsed.name + "\"");
    }
    const Json* parameters = member(*function, "parameters");
    const bool* flag = parameters == nullptr ? nullptr : parameters->get_ptr<const bool*>();
    if (parameters == nullptr || (flag != nullptr && *flag)) {
      parsed.parameters = std::make_shared<const Json>(Json{{"type", "object"}});
    } else if (parameters->is_object()) {
      parsed.parameters = std::make_shared<const Json>(*parameters);
    } else {
      return invalid(where + ": \"parameters\" of \"" + parsed.name +
                     "\" is not a JSON Schema object");
    }
    out.push_back(std::move(parsed));
  }
  return Status();
}

// "auto", "required", "none", a name, or {"type": "function", "function": {"name": ...}}.
Status read_choice(const std::string& text, Request& r) {
  if (text == "auto" || text.empty()) {
    r.choice = Choice::kAuto;
    return Status();
  }
  if (text == "required" || text == "none") {
    r.choice = text == "required" ? Choice::kRequired : Choice::kNone;
    if (r.choice == Choice::kRequired && r.tools.empty()) {
      return invalid("tool_choice \"required\" needs at least one tool");
    }
    return Status();
  }
  std::string name = text;
  if (!text.empty() && text[0] == '{') {
    Json choice = Json::parse(text, nullptr, false);
    if (choice.is_discarded()) return Status(ErrorCode::kSyntax, "tool_choice: malformed JSON");
    const Json* function = member(choice, "function");
    const std::string* chosen = function == nullptr ? nullptr : string_member(*function, "name");
    if (chosen == nullptr) {
      return invalid(
          "tool_choice: expected {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    name = *chosen;
  }
  for (Tool& tool : r.tools) {
    if (tool.name == name) {
      Tool chosen = std::move(tool);
      r.tools.clear();
      r.tools.push_back(std::move(chosen));
      r.choice = Choice::kNamed;
      return Status();
    }
  }
  std::string known;
  for (const Tool& tool : r.tools) known += (known.empty() ? "" : ", ") + tool.name;
  return invalid("tool_choice names \"" + name + "\", which is not among the tools (" +
                 (known.empty() ? "none given" : known) + ")");
}

}  // namespace

const std::vector<ToolCallFormatInfo>& tool_call_formats() {
  static const std::vector<ToolCallFormatInfo> kInfo = [] {
    std::vector<ToolCallFormatInfo> info;
    for (const Format& format : formats()) info.push_back(format.info);
    return info;
  }();
  return kInfo;
}

Result<std::string> tool_calls_structural_tag(std::string_view format, std::string_view tools_json,
                                              const ToolCallOptions& options) {
  const Format* chosen = nullptr;
  std::string known;
  for (const Format& f : formats()) {
    if (f.info.name == format) chosen = &f;
    known += (known.empty() ? "" : ", ") + f.info.name;
  }
  if (chosen == nullptr) {
    return invalid("unknown tool-call format \"" + std::string(format) + "\" (known: " + known +
                   ")");
  }
  Request request;
  request.parallel = options.parallel_tool_calls;
  request.reasoning = options.reasoning;
  // After a <think> block the reply's text may not open another (XGrammar's
  // built-in styles do the same); harmony's channels need no such rule.
  if (options.reasoning && chosen->build != harmony) request.excludes = {"<think>", "</think>"};
  Status status = read_tools(tools_json, request.tools);
  if (!status.ok()) return status;
  status = read_choice(options.tool_choice, request);
  if (!status.ok()) return status;
  Json tag{{"type", "structural_tag"}, {"format", chosen->build(request)}};
  if (options.any_order) set_any_order(tag["format"]);
  return tag.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace grammask
