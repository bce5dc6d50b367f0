// Fuzz target: the GBNF parser on arbitrary bytes. A failure is kSyntax,
// kLimitExceeded or, for a lookahead '(= ...)', kUnsupported. Whatever
// parses must print (to_gbnf) to text that parses back to an equal grammar
// and prints the same, and must lower to a recognizer or fail with
// kLimitExceeded, or with kSyntax or kUnsupported when it holds a text
// terminal (a Regex(...) pattern, read when lowered, may be malformed or use
// syntax grammask does not enforce).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "grammask/gbnf.h"
#include "grammask/recognizer.h"

using grammask::fuzz::escaped;

namespace {

// Whether `e` holds a Regex/LazyRegex, Substring or TextExcluding terminal:
// lowering reads them (a regex pattern can be refused with kUnsupported).
bool has_text_terminal(const grammask::Expr& e) {
  using Kind = grammask::Expr::Kind;
  if (e.kind == Kind::kRegex || e.kind == Kind::kSubstring || e.kind == Kind::kTextExcluding)
    return true;
  for (const grammask::Expr& child : e.children)
    if (has_text_terminal(child)) return true;
  return false;
}

bool has_text_terminal(const grammask::Grammar& grammar) {
  for (const grammask::Rule& rule : grammar.rules())
    if (has_text_terminal(rule.body)) return true;
  return false;
}

}  // namespace

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
    const grammask::ErrorCode code = recognizer.status().code();
    // A regex pattern is read when lowered: malformed (kSyntax) or using
    // syntax grammask does not enforce (kUnsupported).
    FUZZ_CHECK(
        code == grammask::ErrorCode::kLimitExceeded ||
            ((code == grammask::ErrorCode::kUnsupported || code == grammask::ErrorCode::kSyntax) &&
             has_text_terminal(*grammar)),
        recognizer.status().to_string());
    return 0;
  }
  // Feed the grammar its own text: arbitrary bytes, some of them accepted.
  const size_t accepted = recognizer->push_bytes(text.substr(0, 256));
  FUZZ_CHECK(recognizer->size() == accepted, "size after push_bytes");
  recognizer->truncate(accepted / 2);
  FUZZ_CHECK(recognizer->size() == accepted / 2, "size after truncate");
  return 0;
}
