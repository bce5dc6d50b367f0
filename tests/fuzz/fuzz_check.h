// Helpers shared by the fuzz targets: an invariant check that aborts (so
// libFuzzer records the input and the replay test fails), and a cursor that
// hands out the fuzz input piece by piece.
#ifndef GRAMMASK_TESTS_FUZZ_FUZZ_CHECK_H_
#define GRAMMASK_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "grammask/status.h"

// Aborts with a message when `condition` is false. Active in every build
// type: the fuzz targets are test code, their checks are the point.
#define FUZZ_CHECK(condition, message)                                                     \
  do {                                                                                     \
    if (!(condition)) {                                                                    \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n  %s\n", __FILE__, __LINE__, \
                   #condition, std::string(message).c_str());                              \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

namespace grammask::fuzz {

// Whether `why`, a refusal to lower a grammar that parsed, is one of
// AnyOrder(...)'s: a member that matches the empty text, or a required
// member or separator that matches none (kInvalidArgument, at its place).
inline bool any_order_refusal(const Status& why) {
  return why.code() == ErrorCode::kInvalidArgument &&
         why.message().find("AnyOrder(...)") != std::string::npos && why.where().line > 0;
}

// RecognizerOptions::max_states and max_lowering_work for the targets that
// lower fuzzed grammars. Adversarial grammars can be costly to lower while
// small in states; these bounds keep every input well under the per-input
// timeout: 2^22 units are some 30 ms of lowering in a Release build and about
// 20 times that under ASan, and an input may lower up to eight times (strict
// and lenient schema conversion, each in up to four attempts with fewer rules
// inlined): under 5 s. Hitting one must be a clean kLimitExceeded.
inline constexpr size_t kFuzzMaxStates = 1u << 13;
inline constexpr uint64_t kFuzzMaxLoweringWork = uint64_t{1} << 22;

// Reads the input front to back; past the end every read yields zeros / empty.
class InputCursor {
 public:
  InputCursor(const uint8_t* data, size_t size)
      : text_(reinterpret_cast<const char*>(data), size) {}

  bool empty() const { return position_ >= text_.size(); }
  size_t remaining() const { return text_.size() - position_; }

  uint8_t byte() { return empty() ? 0 : static_cast<uint8_t>(text_[position_++]); }

  // The bytes up to the next `separator` (consumed, not returned), or the rest.
  std::string_view until(char separator) {
    const size_t end = text_.find(separator, position_);
    const std::string_view piece = text_.substr(
        position_, end == std::string_view::npos ? std::string_view::npos : end - position_);
    position_ = end == std::string_view::npos ? text_.size() : end + 1;
    return piece;
  }

  std::string_view rest() {
    const std::string_view piece = text_.substr(position_);
    position_ = text_.size();
    return piece;
  }

 private:
  std::string_view text_;
  size_t position_ = 0;
};

// Printable form of bytes for failure messages.
inline std::string escaped(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7F && byte != '\\') {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", byte);
      out += hex;
    }
  }
  return out;
}

}  // namespace grammask::fuzz

#endif  // GRAMMASK_TESTS_FUZZ_FUZZ_CHECK_H_
