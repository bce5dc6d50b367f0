#include "schema/json_value.h"

#include "base/utf8.h"

namespace grammask::internal::schema {

const Json& false_node() {
  static const Json node(false);
  return node;
}
const Json& null_value() {
  static const Json node(nullptr);
  return node;
}

std::optional<Decimal> number_of(const Json& value) {
  return internal::parse_decimal(value.dump());
}

bool json_equal(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) {
    auto x = number_of(a), y = number_of(b);
    return x && y && internal::compare(*x, *y) == 0;
  }
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!json_equal(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end() || !json_equal(it.value(), *other)) return false;
    }
    return true;
  }
  return a == b;
}

JType type_of(const Json& value) {
  if (value.is_null()) return JType::kNull;
  if (value.is_boolean()) return JType::kBoolean;
  if (value.is_number()) return JType::kNumber;
  if (value.is_string()) return JType::kString;
  if (value.is_array()) return JType::kArray;
  return JType::kObject;
}

const std::map<std::string, JType>& type_names() {
  static const std::map<std::string, JType> names = {
      {"null", JType::kNull},      {"boolean", JType::kBoolean}, {"number", JType::kNumber},
      {"integer", JType::kNumber}, {"string", JType::kString},   {"array", JType::kArray},
      {"object", JType::kObject}};
  return names;
}

size_t code_point_length(const std::string& utf8) {
  return utf8::count_code_points(utf8);
}

}  // namespace grammask::internal::schema
