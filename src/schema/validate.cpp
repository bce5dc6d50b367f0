// Validation of concrete values against normalized clauses, for enum/const
// filtering and property-name checks (members of Converter, declared in
// converter.h).
#include "schema/converter.h"

namespace grammask::internal::schema {

bool Converter::accepts(const Sub& sub, const Json& value) {
  for (const Clause& clause : normalize(sub))
    if (clause_accepts(clause, value, true)) return true;
  return false;
}

bool Converter::clause_accepts(const Clause& c, const Json& value, bool check_values) {
  if (type_of(value) != c.type) return false;
  if (!values_accept(c, value, check_values)) return false;
  switch (c.type) {
    case JType::kNull:
    case JType::kBoolean:
      return true;
    case JType::kNumber:
      return number_accepts(c, value);
    case JType::kString:
      return string_accepts(c, value);
    case JType::kArray:
      return array_accepts(c, value);
    case JType::kObject:
      return object_accepts(c, value);
  }
  return false;
}

}  // namespace grammask::internal::schema
