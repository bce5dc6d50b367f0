// Fuzz target: Vocabulary::from_tokenizer_json on arbitrary text. It either
// loads into a vocabulary that satisfies every invariant of
// vocabulary_checks.h, or fails with one of the documented error codes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "grammask/vocabulary.h"
#include "vocabulary_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto vocabulary = grammask::Vocabulary::from_tokenizer_json(text);
  if (!vocabulary.ok()) {
    const grammask::ErrorCode code = vocabulary.status().code();
    FUZZ_CHECK(code == grammask::ErrorCode::kSyntax || code == grammask::ErrorCode::kUnsupported ||
                   code == grammask::ErrorCode::kLimitExceeded ||
                   code == grammask::ErrorCode::kInvalidArgument,
               vocabulary.status().to_string());
    return 0;
  }
  grammask::fuzz::check_vocabulary(*vocabulary);
  return 0;
}
