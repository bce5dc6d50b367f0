// Pieces of GBNF text: sequences, alternatives, groups, rule names and
// number literals. Pure functions of their arguments.
#ifndef GRAMMASK_SRC_SCHEMA_GBNF_TEXT_H_
#define GRAMMASK_SRC_SCHEMA_GBNF_TEXT_H_

#include <initializer_list>
#include <string>
#include <vector>

#include "schema/numbers.h"

namespace grammask::internal::schema {

// A rule name made from `hint`: its letters and digits in lower case, each
// run of other characters as one '-' (none at either end), at most 16
// characters; "r" when nothing is left.
std::string sanitize(const std::string& hint);

// The non-empty parts, separated by spaces.
std::string seq(std::initializer_list<std::string> parts);

// The options, duplicates left out, separated by " | ".
std::string alternatives(const std::vector<std::string>& options);

// A rule name alone (what rule_for may return instead of an alias).
bool bare_name(const std::string& expr);

// "(" expr ")".
std::string group(const std::string& expr);

// A number written in any of its plain spellings: "-1", "-1.0", "2.50"...
// (integers without a fraction unless `integer_fraction`).
std::string decimal_literal(const Decimal& number, bool integer_fraction = true);

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_GBNF_TEXT_H_
