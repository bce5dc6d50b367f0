// Fuzz target: JSON Schema -> GBNF on arbitrary bytes, strict and lenient.
// Whatever converts must parse as GBNF (to the same grammar that
// json_schema_to_grammar returns) and lower to a recognizer; a schema that
// converts strictly must convert to the same text when lenient.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "grammask/gbnf.h"
#include "grammask/json_schema.h"
#include "grammask/recognizer.h"

using grammask::ErrorCode;
using grammask::JsonSchemaOptions;
using grammask::fuzz::escaped;

namespace {

// Options picked from a hash of the input, so that plain schema files work
// as seeds and every input still exercises one fixed combination.
JsonSchemaOptions options_for(std::string_view input) {
  uint32_t hash = 2166136261u;  // FNV-1a
  for (const char c : input) hash = (hash ^ static_cast<uint8_t>(c)) * 16777619u;
  JsonSchemaOptions options;
  options.whitespace = static_cast<JsonSchemaOptions::Whitespace>(hash % 3);
  options.property_order = static_cast<JsonSchemaOptions::PropertyOrder>((hash >> 2) % 2);
  options.additional_properties_default = (hash >> 3) % 2 == 0;
  options.assert_formats = (hash >> 4) % 4 != 0;
  options.default_draft = static_cast<JsonSchemaOptions::Draft>((hash >> 6) % 4);
  options.max_whitespace_run = 1 + (hash >> 8) % 8;
  // Smaller bounds than the defaults keep each input fast under the
  // sanitizers; exceeding them must be a clean kLimitExceeded.
  options.max_rules = 20000;
  options.max_grammar_bytes = 1u << 20;
  options.max_repeat = 1000;
  return options;
}

bool documented_failure(ErrorCode code) {
  return code == ErrorCode::kSyntax || code == ErrorCode::kUnsupported ||
         code == ErrorCode::kInvalidArgument || code == ErrorCode::kLimitExceeded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view schema(reinterpret_cast<const char*>(data), size);
  JsonSchemaOptions options = options_for(schema);

  std::string strict_text;
  for (const bool lenient : {false, true}) {
    options.lenient = lenient;
    std::vector<std::string> warnings;
    auto gbnf = grammask::json_schema_to_gbnf(schema, options, &warnings);
    auto grammar = grammask::json_schema_to_grammar(schema, options);
    FUZZ_CHECK(gbnf.ok() == grammar.ok(),
               "json_schema_to_gbnf and _to_grammar disagree: " +
                   (gbnf.ok() ? grammar.status() : gbnf.status()).to_string());
    if (!gbnf.ok()) {
      FUZZ_CHECK(documented_failure(gbnf.status().code()), gbnf.status().to_string());
      FUZZ_CHECK(!gbnf.status().message().empty(), "an error without a message");
      continue;
    }
    if (!lenient) {
      strict_text = *gbnf;
    } else if (!strict_text.empty()) {
      FUZZ_CHECK(*gbnf == strict_text, "lenient conversion differs from the strict one");
    }
    auto parsed = grammask::parse_gbnf(*gbnf);
    FUZZ_CHECK(parsed.ok(), parsed.status().to_string() + "\ngrammar:\n" + escaped(*gbnf));
    FUZZ_CHECK(*parsed == *grammar, "json_schema_to_grammar differs from parsing the text");

    grammask::RecognizerOptions recognizer_options;
    recognizer_options.max_states = grammask::fuzz::kFuzzMaxStates;
    recognizer_options.max_lowering_work = grammask::fuzz::kFuzzMaxLoweringWork;
    auto recognizer = grammask::Recognizer::create(*parsed, "root", recognizer_options);
    if (!recognizer.ok()) {
      FUZZ_CHECK(recognizer.status().code() == ErrorCode::kLimitExceeded,
                 recognizer.status().to_string());
      continue;
    }
    // The schema is JSON too: some prefix of it is often a valid prefix.
    const size_t accepted = recognizer->push_bytes(schema.substr(0, 256));
    FUZZ_CHECK(recognizer->size() == accepted, "size after push_bytes");
  }
  return 0;
}
