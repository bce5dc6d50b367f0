// URI references (RFC 3986), as far as $id and $ref need them.
#ifndef GRAMMASK_SRC_SCHEMA_URI_H_
#define GRAMMASK_SRC_SCHEMA_URI_H_

#include <string>

namespace grammask::internal::schema {

// `ref` resolved against `base` (RFC 3986 section 5.2, with dot segments
// removed); the fragment of `ref` is kept, the one of `base` dropped.
std::string resolve_uri(const std::string& base, const std::string& ref);

// `text` with its %XX escapes decoded (malformed escapes stay as written).
std::string percent_decode(const std::string& text);

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_URI_H_
