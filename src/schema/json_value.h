// JSON values as the converter sees them: the tree type, the six JSON
// types, and equality as JSON Schema defines it (numbers by value, objects
// ignoring key order).
#ifndef GRAMMASK_SRC_SCHEMA_JSON_VALUE_H_
#define GRAMMASK_SRC_SCHEMA_JSON_VALUE_H_

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "schema/numbers.h"

namespace grammask::internal::schema {

using Json = nlohmann::ordered_json;

// The schema `false` and the value null, at fixed addresses outside every
// document (a Sub may name them as nodes).
const Json& false_node();
const Json& null_value();

// The exact value of a number; nullopt when written out it would need more
// than 400 digits.
std::optional<Decimal> number_of(const Json& value);

// Equality of JSON Schema's `const`, `enum` and `uniqueItems`: numbers
// compare by value (1 == 1.0), objects ignore key order. Cost: linear in
// the sizes of the values, but quadratic in an object's member count (keys
// are looked up one by one).
bool json_equal(const Json& a, const Json& b);

enum class JType : uint8_t { kNull, kBoolean, kNumber, kString, kArray, kObject };
inline constexpr JType kAllTypes[] = {JType::kNull,   JType::kBoolean, JType::kNumber,
                                      JType::kString, JType::kArray,   JType::kObject};

JType type_of(const Json& value);

// The names that the keyword `type` takes, each with its JSON type
// ("integer" is kNumber).
const std::map<std::string, JType>& type_names();

// The number of code points of valid UTF-8 text (what minLength counts).
size_t code_point_length(const std::string& utf8);

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_JSON_VALUE_H_
