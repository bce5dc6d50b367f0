// Structural tags: XGrammar's JSON format for outputs that mix free text,
// tagged regions, JSON arguments and special tokens (tool calls, reasoning),
// compiled to one grammask Grammar, so masks, rollback, forks, batches and
// forced bytes work as for any grammar.
//
//   auto compiled = compile_structural_tag(R"({"type": "structural_tag", "format": {
//       "type": "triggered_tags", "triggers": ["<tool_call>"],
//       "tags": [{"begin": "<tool_call>", "content": {"type": "json_schema",
//                 "json_schema": {...}}, "end": "</tool_call>"}]}})", vocabulary);
//
// Every format object of XGrammar's reference is read (docs/tool-calling.md
// lists them with the grammar each becomes). What grammask cannot enforce
// exactly is refused, never loosened: the XML argument styles of
// `json_schema` other than `qwen_xml`, `minimax_xml`, `deepseek_xml` and
// `glm_xml` (exact as docs/tool-calling.md describes, or refused),
// `max_tokens` of `any_text`, `max_chars` together with excluded strings.
// Errors name the JSON pointer of the offending format object, e.g.
// `/format/elements/1/json_schema: unsupported keyword ...`:
// kSyntax for text that is not JSON, kInvalidArgument for a field of the
// wrong type or value, kUnsupported for what is refused, kLimitExceeded for
// a bound of the options; a schema's or a grammar's own error keeps its code.
//
// Thread-safe: any number of conversions may run at once.
#ifndef GRAMMASK_STRUCTURAL_TAG_H_
#define GRAMMASK_STRUCTURAL_TAG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/gbnf.h"
#include "grammask/grammar.h"
#include "grammask/json_schema.h"
#include "grammask/matcher.h"
#include "grammask/status.h"
#include "grammask/vocabulary.h"

namespace grammask {

struct StructuralTagOptions {
  // For every `json_schema` format (its `any_order` sets property_order).
  JsonSchemaOptions json_schema;
  // Bounds for the GBNF text of every `grammar` format.
  GbnfOptions gbnf;
  // Resolves token names that GBNF cannot write as <text> (e.g.
  // "[TOOL_CALLS]") to ids, and checks the others exist. Without it such a
  // name fails with kInvalidArgument. Not owned; used during the call only.
  const Vocabulary* vocabulary = nullptr;
  // Nesting of format objects; deeper fails with kLimitExceeded.
  uint32_t max_depth = 64;
  // Largest `min`/`max` of `repeat` and `max_tokens` of `any_tokens`.
  uint32_t max_repeat = 10000;
};

// Converts a structural tag, `{"type": "structural_tag", "format": {...}}`
// or a bare format object, to a grammar whose start rule is "root".
// `warnings`, when given, receives the schema converter's warnings (e.g. an
// object too large for any order, written in schema order), each prefixed
// by the JSON pointer of its `json_schema`. Cost: linear in the tag, plus
// the conversion of each schema and grammar in it.
Result<Grammar> structural_tag_to_grammar(std::string_view tag_json,
                                          const StructuralTagOptions& options = {},
                                          std::vector<std::string>* warnings = nullptr);

// The same grammar as GBNF text.
Result<std::string> structural_tag_to_gbnf(std::string_view tag_json,
                                           const StructuralTagOptions& options = {},
                                           std::vector<std::string>* warnings = nullptr);

// Converts with `vocabulary` resolving token names, then compiles
// (CompiledGrammar::compile with root "root"; options.root is ignored).
Result<CompiledGrammar> compile_structural_tag(std::string_view tag_json,
                                               const Vocabulary& vocabulary,
                                               const CompileOptions& compile_options = {},
                                               StructuralTagOptions tag_options = {});

}  // namespace grammask

#endif  // GRAMMASK_STRUCTURAL_TAG_H_
