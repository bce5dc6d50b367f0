#include "grammask/status.h"

namespace grammask {

const char* to_string(ErrorCode code) noexcept {
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

std::string Status::to_string() const {
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
