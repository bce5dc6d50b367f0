// Reading keyword values into clauses: the argument checks that several
// keyword families share.
#ifndef GRAMMASK_SRC_SCHEMA_KEYWORDS_H_
#define GRAMMASK_SRC_SCHEMA_KEYWORDS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "schema/clause.h"
#include "schema/json_value.h"
#include "schema/numbers.h"

namespace grammask::internal::schema {

// Applies `change` to the clauses of `d` of type `type`.
void for_each_clause(Disj& d, JType type, const std::function<void(Clause&)>& change);

// The value of a count keyword (minLength, maxItems...). Refuses (kSyntax,
// naming `keyword` at `pointer`) what is not a non-negative integer; values
// past 18 digits read as UINT64_MAX / 4, more than any limit allows.
uint64_t non_negative_integer(const Json& value, const std::string& keyword,
                              const std::string& pointer);

// The value of a numeric keyword (minimum, multipleOf...). Refuses (kSyntax)
// what is not a number of at most 400 digits.
Decimal number_argument(const Json& value, const std::string& keyword, const std::string& pointer);

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_KEYWORDS_H_
