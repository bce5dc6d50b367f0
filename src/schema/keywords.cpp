#include "schema/keywords.h"

#include "schema/refusal.h"

namespace grammask::internal::schema {

void for_each_clause(Disj& d, JType type, const std::function<void(Clause&)>& change) {
  for (Clause& clause : d)
    if (clause.type == type) change(clause);
}

uint64_t non_negative_integer(const Json& value, const std::string& keyword,
                              const std::string& pointer) {
  auto number = value.is_number() ? number_of(value) : std::nullopt;
  if (!number || number->negative || !number->is_integer())
    refuse(keyword, pointer, "must be a non-negative integer", ErrorCode::kSyntax);
  if (number->int_digits.size() > 18) return UINT64_MAX / 4;
  return number->int_digits.empty() ? 0 : std::stoull(number->int_digits);
}

Decimal number_argument(const Json& value, const std::string& keyword, const std::string& pointer) {
  auto number = value.is_number() ? number_of(value) : std::nullopt;
  if (!number)
    refuse(keyword, pointer, "must be a number (with at most 400 digits)", ErrorCode::kSyntax);
  return *number;
}

}  // namespace grammask::internal::schema
