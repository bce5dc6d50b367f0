// The canonical JSON encoding of a string (internal), shared by the regex
// translator and the JSON Schema converter.
#ifndef GRAMMASK_SRC_BASE_JSON_STRING_H_
#define GRAMMASK_SRC_BASE_JSON_STRING_H_

#include <string>
#include <string_view>

namespace grammask::internal {

// The canonical JSON encoding of a string (quotes included), as
// nlohmann::json::dump writes it: UTF-8 kept raw, short escapes for
// \b \f \n \r \t, \u00xx for other control characters. Bytes are copied
// without a UTF-8 check: the caller passes well-formed text. Linear in the
// text; allocates the result.
std::string json_quote(std::string_view utf8_text);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_BASE_JSON_STRING_H_
