// Reading JSON text into the converter's tree, with a nesting check that
// runs before the tree is built.
#ifndef GRAMMASK_SRC_SCHEMA_JSON_TEXT_H_
#define GRAMMASK_SRC_SCHEMA_JSON_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schema/json_value.h"

namespace grammask::internal::schema {

// The tree of `text`: the same tree as Json::parse, built faster (members
// are collected and moved into each object once). A key written twice keeps
// its first position and its last value, as Json::parse does. Throws
// std::invalid_argument with the parser's message on bad JSON.
Json parse_json(std::string_view text);

// Where `text` nests deeper than `limit` containers (nlohmann's parser
// recurses once per level): the JSON pointer of the first container too
// deep, or nullopt when the text stays within the limit. One pass over the
// text; a second one, tracking keys, only when the limit is passed.
std::optional<std::string> too_deep_at(std::string_view text, uint32_t limit);

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_JSON_TEXT_H_
