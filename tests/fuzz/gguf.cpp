// Fuzz target: Vocabulary::from_gguf on arbitrary bytes. A file either
// loads into a vocabulary that satisfies every invariant of
// vocabulary_checks.h, or fails with one of the documented error codes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "grammask/vocabulary.h"
#include "vocabulary_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto vocabulary = grammask::Vocabulary::from_gguf(bytes);
  if (!vocabulary.ok()) {
    const grammask::ErrorCode code = vocabulary.status().code();
    FUZZ_CHECK(code == grammask::ErrorCode::kSyntax || code == grammask::ErrorCode::kUnsupported ||
                   code == grammask::ErrorCode::kLimitExceeded ||
                   code == grammask::ErrorCode::kInvalidArgument,
               vocabulary.status().to_string());
    return 0;
  }
  // Every token takes at least its 8-byte length field in the file.
  FUZZ_CHECK(vocabulary->size() <= size / 8, "more tokens than the file can hold");
  grammask::fuzz::check_vocabulary(*vocabulary);
  return 0;
}
