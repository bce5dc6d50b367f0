#include "schema/refusal.h"

namespace grammask::internal::schema {

std::string display_pointer(const std::string& pointer) {
  return pointer.empty() ? "/" : pointer;
}

[[noreturn]] void refuse(const std::string& keyword, const std::string& pointer,
                         const std::string& why, ErrorCode code) {
  std::string message = "unsupported keyword \"" + keyword + "\" at " + display_pointer(pointer);
  if (code == ErrorCode::kLimitExceeded)
    message = "keyword \"" + keyword + "\" at " + display_pointer(pointer) + " exceeds a limit";
  if (code == ErrorCode::kSyntax)
    message = "invalid keyword \"" + keyword + "\" at " + display_pointer(pointer);
  throw Refusal{Status(code, message + ": " + why), keyword};
}

[[noreturn]] void fail(ErrorCode code, const std::string& message) {
  throw Refusal{Status(code, message), ""};
}

std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out.push_back(c);
  }
  return out;
}

}  // namespace grammask::internal::schema
