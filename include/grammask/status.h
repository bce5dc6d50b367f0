// Errors and results, for every grammask caller. Fallible calls report
// errors through a Status or a Result<T>: bad input never makes grammask
// throw (std::bad_alloc aside) or abort. Everything here is inline; a const
// Status or Result may be read from any number of threads.
#ifndef GRAMMASK_STATUS_H_
#define GRAMMASK_STATUS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace grammask {

enum class ErrorCode : uint8_t {
  kOk = 0,
  kSyntax,           // malformed grammar / schema / input text
  kInvalidArgument,  // a caller passed something out of range
  kLimitExceeded,    // a configured resource limit was hit (the message names it)
  kIo,               // a file could not be read
  kUnsupported,      // valid input that grammask cannot enforce exactly
  kInvalidState,     // the call is not allowed in the object's current state
};

inline const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kSyntax:
      return "syntax error";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kLimitExceeded:
      return "limit exceeded";
    case ErrorCode::kIo:
      return "I/O error";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kInvalidState:
      return "invalid state";
  }
  return "unknown error";
}

// Where in a text an error was found. line and column are 1-based and count
// bytes; 0 means "unknown". offset is the 0-based byte offset.
struct SourceLocation {
  uint32_t line = 0;
  uint32_t column = 0;
  size_t offset = 0;
  bool known() const noexcept { return line != 0; }
};

// The outcome of a fallible operation: ok, or a code with a message and,
// for text inputs, the location of the problem.
class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message, SourceLocation where = {})
      : code_(code), message_(std::move(message)), where_(where) {}

  bool ok() const noexcept { return code_ == ErrorCode::kOk; }
  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  const SourceLocation& where() const noexcept { return where_; }

  // "LINE:COL: error: MESSAGE" when a location is known, else "error: MESSAGE";
  // "ok" for an ok Status. Allocates.
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  SourceLocation where_;
};

// A value or the Status explaining why there is none. Construct it from a
// value or from a Status that is not ok: one made from an ok Status holds no
// value, so ok() is false while status().ok() is true.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const noexcept { return value_.has_value(); }
  const Status& status() const noexcept { return status_; }

  // Precondition: ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

inline std::string Status::to_string() const {
  if (ok()) return "ok";
  std::string out;
  if (where_.known()) {
    out += std::to_string(where_.line);
    out += ':';
    out += std::to_string(where_.column);
    out += ": ";
  }
  out += "error: ";
  out += message_;
  return out;
}

}  // namespace grammask

#endif  // GRAMMASK_STATUS_H_
