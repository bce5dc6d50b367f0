#include "grammask/json_schema.h"

#include <algorithm>
#include <exception>
#include <new>

#include "grammask/gbnf.h"
#include "schema/converter.h"
#include "schema/json_text.h"

namespace grammask::internal::schema {

internal::RegexNode Converter::parse_pattern(const std::string& text, const std::string& keyword,
                                             const std::string& pointer) {
  if (text.size() > options_.max_pattern_length)
    refuse(keyword, pointer,
           "pattern of " + std::to_string(text.size()) + " bytes is longer than " +
               "max_pattern_length (" + std::to_string(options_.max_pattern_length) + ")",
           ErrorCode::kLimitExceeded);
  const Result<internal::RegexNode>& parsed = parsed_pattern(text);
  if (!parsed.ok()) refuse(keyword, pointer, parsed.status().message(), parsed.status().code());
  return *parsed;
}

const Result<internal::RegexNode>& Converter::parsed_pattern(const std::string& text) {
  auto it = parsed_patterns_.find(text);
  if (it == parsed_patterns_.end()) {
    const internal::RegexCheck check = format_patterns_.count(text) != 0
                                           ? internal::RegexCheck::kTrusted
                                           : internal::RegexCheck::kWithRe2;
    it = parsed_patterns_.emplace(text, internal::parse_ecma_regex(text, regex_limits(), check))
             .first;
  }
  return it->second;
}

internal::FormatLookup Converter::lookup_format(const std::string& format) {
  internal::FormatLookup lookup = internal::format_pattern(format);
  if (lookup.supported) format_patterns_.insert(lookup.pattern);
  return lookup;
}

void Converter::count_reference(const std::string& keyword, const std::string& pointer) {
  if (++references_ > options_.max_ref_expansions)
    refuse(keyword, pointer,
           "more than max_ref_expansions (" + std::to_string(options_.max_ref_expansions) +
               ") references followed",
           ErrorCode::kLimitExceeded);
}

void Converter::charge_automaton(size_t states, const std::string& keyword,
                                 const std::string& pointer) {
  constexpr size_t kAutomatonWork = size_t{1} << 18;
  automaton_work_ += states;
  if (automaton_work_ > kAutomatonWork)
    refuse(keyword, pointer,
           "the string constraints need more than " + std::to_string(kAutomatonWork) +
               " automaton states in all");
}

void Converter::check_repeat(uint64_t count, const std::string& keyword,
                             const std::string& pointer) const {
  if (count > options_.max_repeat)
    refuse(keyword, pointer,
           std::to_string(count) + " is above max_repeat (" + std::to_string(options_.max_repeat) +
               ")",
           ErrorCode::kLimitExceeded);
}

std::string Converter::convert() {
  const Json* start_node = doc_.start();
  Sub root = Sub::of(start_node);
  if (start_node->is_boolean() && !start_node->get<bool>())
    fail(ErrorCode::kInvalidArgument, "the schema is `false`: it accepts no value");
  std::string start = rule_for(root, "schema", 0);
  if (start.empty()) fail(ErrorCode::kInvalidArgument, "the schema accepts no value");
  // inner(), after() and colon() name `ws` without defining it; its body
  // depends on the nesting of all the rest.
  if (options_.whitespace == JsonSchemaOptions::Whitespace::kFlexible) define_rule("ws", ws_body());
  std::string text = "root ::= " + start + "\n";
  for (const auto& [name, body] : rules_) text += name + " ::= " + body + "\n";
  return text;
}

}  // namespace grammask::internal::schema

namespace grammask {

using internal::schema::Converter;
using internal::schema::display_pointer;
using internal::schema::Document;
using internal::schema::Json;
using internal::schema::parse_json;
using internal::schema::Refusal;
using internal::schema::too_deep_at;

Result<std::string> json_schema_to_gbnf(std::string_view schema_json,
                                        const JsonSchemaOptions& options,
                                        std::vector<std::string>* warnings) {
  // Schema nesting counts schemas, JSON nesting containers (a level of
  // schema is an object and the object of its "properties"): twice as many.
  if (auto where = too_deep_at(schema_json, options.max_schema_depth * 2 + 2))
    return Status(ErrorCode::kLimitExceeded, "schema nested deeper than max_schema_depth (" +
                                                 std::to_string(options.max_schema_depth) +
                                                 ") at " + display_pointer(*where));
  Json parsed;
  try {
    parsed = parse_json(schema_json);
  } catch (const std::exception& e) {
    return Status(ErrorCode::kSyntax, std::string("schema is not valid JSON: ") + e.what());
  }
  if (!parsed.is_object() && !parsed.is_boolean())
    return Status(ErrorCode::kSyntax, "a schema must be a JSON object or a boolean");
  try {
    Document document(std::move(parsed), options);
    document.index();
    Converter converter(document, options, warnings);
    return converter.convert();
  } catch (Refusal& refusal) {
    return refusal.status;
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kLimitExceeded, "out of memory while converting the schema");
  } catch (const std::exception& e) {
    return Status(ErrorCode::kUnsupported,
                  std::string("internal error while converting: ") + e.what());
  }
}

Result<Grammar> json_schema_to_grammar(std::string_view schema_json,
                                       const JsonSchemaOptions& options,
                                       std::vector<std::string>* warnings) {
  Result<std::string> text = json_schema_to_gbnf(schema_json, options, warnings);
  if (!text.ok()) return text.status();
  // The converter's own bounds already hold the text; the parser's are
  // raised to match them where the caller raised those.
  GbnfOptions parse_options;
  parse_options.max_rules = std::max(parse_options.max_rules, options.max_rules);
  parse_options.max_grammar_bytes =
      std::max(parse_options.max_grammar_bytes, options.max_grammar_bytes);
  parse_options.max_symbols = static_cast<uint32_t>(std::min<size_t>(
      UINT32_MAX, std::max<size_t>(parse_options.max_symbols, parse_options.max_grammar_bytes)));
  parse_options.max_repeat_bound = std::max(parse_options.max_repeat_bound, options.max_repeat);
  return parse_gbnf(*text, parse_options);
}

}  // namespace grammask
