// Refusals: how the converter reports a schema it cannot convert exactly.
// A refusal names the keyword and the JSON pointer of the schema that holds
// it; the public entry points turn it into their returned Status.
#ifndef GRAMMASK_SRC_SCHEMA_REFUSAL_H_
#define GRAMMASK_SRC_SCHEMA_REFUSAL_H_

#include <string>

#include "grammask/status.h"

namespace grammask::internal::schema {

// Thrown inside the converter; caught at the API boundary. `keyword` lets
// lenient mode drop the offending keyword and try again ("" when none).
struct Refusal {
  Status status;
  std::string keyword;
};

// A JSON pointer as messages show it: "/" for the root's empty pointer.
std::string display_pointer(const std::string& pointer);

// Throws a Refusal with status `code`, naming `keyword` at `pointer`, with
// `why` appended. The message reads "invalid keyword" for kSyntax, "...
// exceeds a limit" for kLimitExceeded, else "unsupported keyword".
[[noreturn]] void refuse(const std::string& keyword, const std::string& pointer,
                         const std::string& why, ErrorCode code = ErrorCode::kUnsupported);

// Throws a Refusal with `message` and no keyword (lenient mode keeps it).
[[noreturn]] void fail(ErrorCode code, const std::string& message);

// `token` escaped as one JSON pointer token (RFC 6901: "~" as "~0", "/" as
// "~1").
std::string escape_pointer_token(const std::string& token);

// The reason given for a schema that reaches itself through references
// without consuming input; callers match on it.
inline constexpr const char* kSelfReference =
    "the schema refers to itself without consuming any input";

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_REFUSAL_H_
