// Fuzz target: structural tag -> Grammar on arbitrary bytes. Whatever
// converts must be a valid grammar that prints to GBNF parsing back to the
// same grammar, and compile (or fail cleanly with kLimitExceeded) against a
// small vocabulary with special tokens; the first masks must be computable.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "grammask/gbnf.h"
#include "grammask/matcher.h"
#include "grammask/structural_tag.h"

using grammask::ErrorCode;
using grammask::fuzz::escaped;

namespace {

const grammask::Vocabulary& vocabulary() {
  static const grammask::Vocabulary vocab = *grammask::Vocabulary::from_token_bytes(
      {"</s>", "<|call|>", "<|end|>", "<|think|>", "[CALL]",      "a", "b", "{",
       "}",    "\"",       ":",       "1",         " ",           "<", ">", "<f>",
       "</f>", "x",        "ab",      "\n",        "<tool_call>", "é"},
      /*stop_ids=*/{0}, /*special_ids=*/{0, 1, 2, 3, 4});
  return vocab;
}

bool documented_failure(ErrorCode code) {
  return code == ErrorCode::kSyntax || code == ErrorCode::kUnsupported ||
         code == ErrorCode::kInvalidArgument || code == ErrorCode::kLimitExceeded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view tag(reinterpret_cast<const char*>(data), size);
  grammask::StructuralTagOptions options;
  options.vocabulary = &vocabulary();
  options.max_depth = 32;
  options.max_repeat = 100;
  options.json_schema.max_rules = 20000;
  options.json_schema.max_grammar_bytes = 1u << 20;
  options.json_schema.max_repeat = 1000;
  auto grammar = grammask::structural_tag_to_grammar(tag, options);
  if (!grammar.ok()) {
    FUZZ_CHECK(documented_failure(grammar.status().code()), grammar.status().to_string());
    FUZZ_CHECK(grammar.status().message().rfind("structural tag", 0) == 0,
               "an error that does not say where: " + grammar.status().to_string());
    return 0;
  }
  FUZZ_CHECK(grammar->validate().ok(), grammar->validate().to_string());
  const std::string text = grammar->to_gbnf();
  auto parsed = grammask::parse_gbnf(text);
  FUZZ_CHECK(parsed.ok(), parsed.status().to_string() + "\ngrammar:\n" + escaped(text));
  FUZZ_CHECK(*parsed == *grammar, "the printed grammar parses to another one:\n" + escaped(text));

  grammask::CompileOptions compile_options;
  compile_options.recognizer.max_states = grammask::fuzz::kFuzzMaxStates;
  compile_options.recognizer.max_lowering_work = grammask::fuzz::kFuzzMaxLoweringWork;
  auto compiled = grammask::CompiledGrammar::compile(*grammar, vocabulary(), compile_options);
  if (!compiled.ok()) {
    FUZZ_CHECK(compiled.status().code() == ErrorCode::kLimitExceeded ||
                   compiled.status().code() == ErrorCode::kUnsupported ||
                   grammask::fuzz::any_order_refusal(compiled.status()),
               compiled.status().to_string() + "\ngrammar:\n" + escaped(text));
    return 0;
  }
  // A few steps: the first allowed token each time.
  grammask::Matcher matcher(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  for (int step = 0; step < 8 && !matcher.is_terminated(); ++step) {
    const grammask::Status s = matcher.fill_mask(words.data(), words.size());
    if (!s.ok()) {
      FUZZ_CHECK(s.code() == ErrorCode::kLimitExceeded, s.to_string());
      break;
    }
    uint32_t pick = UINT32_MAX;
    for (uint32_t id = 0; id < vocabulary().size() && pick == UINT32_MAX; ++id)
      if (words[id / 32] >> (id % 32) & 1) pick = id;
    if (pick == UINT32_MAX) break;
    FUZZ_CHECK(matcher.is_token_allowed(pick), "a token of the mask is not allowed");
    FUZZ_CHECK(matcher.accept_token(pick).ok(), "a token of the mask is refused");
  }
  return 0;
}
