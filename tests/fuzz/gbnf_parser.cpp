// Fuzz target: the GBNF parser on arbitrary bytes. A failure is kSyntax,
// kLimitExceeded or, for a lookahead '(= ...)', kUnsupported. Whatever
// parses must print (to_gbnf) to text that parses back to an equal grammar
// and prints the same, and must lower to a recognizer or fail with a limit
// (or, for a Regex pattern, with the pattern's refusal).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "grammask/gbnf.h"
#include "grammask/recognizer.h"

using grammask::fuzz::escaped;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto grammar = grammask::parse_gbnf(text);
  if (!grammar.ok()) {
    const grammask::ErrorCode code = grammar.status().code();
    FUZZ_CHECK(code == grammask::ErrorCode::kSyntax ||
                   code == grammask::ErrorCode::kLimitExceeded ||
                   (code == grammask::ErrorCode::kUnsupported &&
                    grammar.status().message().find("lookahead") != std::string::npos),
               grammar.status().to_string());
    FUZZ_CHECK(grammar.status().where().known() && grammar.status().where().offset <= text.size(),
               "error without a location in the text: " + grammar.status().to_string());
    return 0;
  }
  FUZZ_CHECK(grammar->validate().ok(), grammar->validate().to_string());

  const std::string printed = grammar->to_gbnf();
  auto reparsed = grammask::parse_gbnf(printed);
  FUZZ_CHECK(reparsed.ok(), reparsed.status().to_string() + "\nprinted:\n" + escaped(printed));
  const std::string reprinted = reparsed->to_gbnf();
  FUZZ_CHECK(reprinted == printed,
             "printed:\n" + escaped(printed) + "\nreprinted:\n" + escaped(reprinted));
  FUZZ_CHECK(*reparsed == *grammar, "reparsed grammar differs:\n" + escaped(printed));

  grammask::RecognizerOptions options;
  options.max_states = grammask::fuzz::kFuzzMaxStates;
  options.max_lowering_work = grammask::fuzz::kFuzzMaxLoweringWork;
  auto recognizer = grammask::Recognizer::create(*grammar, "root", options);
  if (!recognizer.ok()) {
    // Beside the limits, only a Regex or LazyRegex pattern may be refused
    // (not ECMA-262, not enforceable exactly, or matching no text), or an
    // AnyOrder(...) member or separator.
    const grammask::Status& why = recognizer.status();
    const bool pattern = why.message().find("Regex: ") != std::string::npos &&
                         (why.code() == grammask::ErrorCode::kSyntax ||
                          why.code() == grammask::ErrorCode::kUnsupported);
    FUZZ_CHECK(why.code() == grammask::ErrorCode::kLimitExceeded || pattern ||
                   grammask::fuzz::any_order_refusal(why),
               why.to_string());
    return 0;
  }
  // Feed the grammar its own text: arbitrary bytes, some of them accepted.
  const size_t accepted = recognizer->push_bytes(text.substr(0, 256));
  FUZZ_CHECK(recognizer->size() == accepted, "size after push_bytes");
  recognizer->truncate(accepted / 2);
  FUZZ_CHECK(recognizer->size() == accepted / 2, "size after truncate");
  return 0;
}
