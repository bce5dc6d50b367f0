// Tool-call formats of popular models, as structural tags: for callers that
// constrain a model's reply to its own tool-call syntax. The result is
// structural-tag JSON (XGrammar's format) for structural_tag.h to compile.
//
//   auto tag = tool_calls_structural_tag("hermes", tools_json, {"required"});
//   auto compiled = compile_structural_tag(*tag, vocabulary);
//
// docs/tool-calling.md ("Model formats") gives each format's syntax, the
// chat template or document it follows, and which delimiters are tokens.
// Thread-safe; no state.
#ifndef GRAMMASK_TOOL_CALLS_H_
#define GRAMMASK_TOOL_CALLS_H_

#include <string>
#include <string_view>
#include <vector>

#include "grammask/status.h"

namespace grammask {

struct ToolCallFormatInfo {
  std::string name;    // what tool_calls_structural_tag takes, e.g. "hermes"
  std::string models;  // the models that write it, e.g. "Qwen 2.5, Qwen 3, Hermes 2 Pro"
};

// The known formats, in a fixed order.
const std::vector<ToolCallFormatInfo>& tool_call_formats();

struct ToolCallOptions {
  // "auto": text, tool calls or both; "required": at least one call;
  // "none": no call; else the name of the one function to call, exactly
  // once. OpenAI's object form {"type": "function", "function": {"name":
  // ...}} (as JSON text) names a function too.
  std::string tool_choice = "auto";
  // More than one call in a reply (where the format allows several).
  bool parallel_tool_calls = true;
  // The reply starts with the model's reasoning block (`<think>...</think>`
  // or the format's own, e.g. harmony's analysis channel).
  bool reasoning = false;
  // Arguments in any order, exactly (each parameter at most once, the
  // required ones present): `"any_order": true` on every json_schema of the
  // tag: each object is an AnyOrder(...) call, or where that cannot say it
  // (over kMaxAnyOrderMembers parameters, maxProperties, minProperties
  // above 1) spelled out within JsonSchemaOptions::any_order_max_alternatives,
  // else in schema order, with a conversion warning.
  bool any_order = false;
};

// Builds {"type": "structural_tag", "format": {...}} (compact JSON) for the
// format `format` (a name of tool_call_formats()) and the OpenAI-style
// `tools_json`: an array of {"type": "function", "function": {"name",
// "description", "parameters"}} (`parameters` a JSON Schema object, true,
// or absent for any object). Fails with kSyntax on malformed JSON, and with
// kInvalidArgument naming the problem for an unknown format, a tool that
// is not a function or has no name (or a name outside [A-Za-z0-9_.-]{1,64}),
// two tools of one name, a tool_choice naming no tool, or "required"
// without tools.
Result<std::string> tool_calls_structural_tag(std::string_view format, std::string_view tools_json,
                                              const ToolCallOptions& options = {});

}  // namespace grammask

#endif  // GRAMMASK_TOOL_CALLS_H_
