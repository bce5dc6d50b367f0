// The number family (integer, minimum, maximum, exclusive*, multipleOf):
// NumberKeywords' own functions and the Converter members for its keywords.
#include "schema/converter.h"
#include "schema/keywords.h"
#include "schema/numbers.h"

namespace grammask::internal::schema {

bool NumberKeywords::unconstrained() const {
  return !integer && !non_integer && !strict_integer && !written_non_integer && !lo && !hi &&
         multiple_of.empty() && not_multiple_of.empty();
}

void NumberKeywords::add_key(std::string& key) const {
  add_key_part(key, std::string(integer ? "i" : "") + (non_integer ? "f" : "") +
                        (strict_integer ? "s" : "") + (written_non_integer ? "w" : ""));
  add_key_part(key, lo ? (lo_exclusive ? ">" : ">=") + lo->to_string() : "");
  add_key_part(key, hi ? (hi_exclusive ? "<" : "<=") + hi->to_string() : "");
  for (const auto& [divisor, where] : multiple_of) add_key_part(key, "m" + divisor.to_string());
  for (const auto& group : not_multiple_of) {
    std::string part = "!m";
    for (const auto& [divisor, where] : group) part += divisor.to_string() + ",";
    add_key_part(key, part);
  }
}

bool NumberKeywords::drop(const std::string& keyword) {
  if (keyword == "multipleOf" && !multiple_of.empty()) {
    multiple_of.clear();
    return true;
  }
  // What `not: {type: integer}` asserted: integers are allowed again.
  if (keyword == "not" && (non_integer || written_non_integer || !not_multiple_of.empty())) {
    non_integer = written_non_integer = false;
    not_multiple_of.clear();
    return true;
  }
  return false;
}

void Converter::apply_minimum(Disj& d, const Keyword& k) {
  const std::string& key = k.key;
  const Json& value = k.value;
  const std::string& pointer = k.where.pointer;
  if (value.is_boolean()) return;  // draft-04 modifier: read next to "minimum"
  Decimal bound = number_argument(value, key, pointer);
  bool exclusive = key == "exclusiveMinimum";
  auto modifier = k.node->find("exclusiveMinimum");
  if (key == "minimum" && modifier != k.node->end() && modifier->is_boolean() &&
      modifier->get<bool>())
    exclusive = true;
  for_each_clause(d, JType::kNumber, [&](Clause& c) {
    int cmp = c.lo ? internal::compare(bound, *c.lo) : 1;
    if (cmp > 0 || (cmp == 0 && exclusive)) c.lo = bound, c.lo_exclusive = exclusive;
    c.range_pointer = pointer;
  });
}

void Converter::apply_maximum(Disj& d, const Keyword& k) {
  const std::string& key = k.key;
  const Json& value = k.value;
  const std::string& pointer = k.where.pointer;
  if (value.is_boolean()) return;
  Decimal bound = number_argument(value, key, pointer);
  bool exclusive = key == "exclusiveMaximum";
  auto modifier = k.node->find("exclusiveMaximum");
  if (key == "maximum" && modifier != k.node->end() && modifier->is_boolean() &&
      modifier->get<bool>())
    exclusive = true;
  for_each_clause(d, JType::kNumber, [&](Clause& c) {
    int cmp = c.hi ? internal::compare(bound, *c.hi) : -1;
    if (cmp < 0 || (cmp == 0 && exclusive)) c.hi = bound, c.hi_exclusive = exclusive;
    c.range_pointer = pointer;
  });
}

void Converter::apply_multiple_of(Disj& d, const Keyword& k) {
  const std::string& pointer = k.where.pointer;
  Decimal divisor = number_argument(k.value, k.key, pointer);
  if (divisor.negative || divisor.is_zero())
    refuse(k.key, pointer, "must be greater than 0", ErrorCode::kSyntax);
  for_each_clause(d, JType::kNumber,
                  [&](Clause& c) { c.multiple_of.emplace_back(divisor, pointer); });
}

bool Converter::intersect_numbers(Clause& c, const Clause& b) {
  c.integer = c.integer || b.integer;
  c.non_integer = c.non_integer || b.non_integer;
  c.strict_integer = c.strict_integer || b.strict_integer;
  c.written_non_integer = c.written_non_integer || b.written_non_integer;
  if (c.integer && c.non_integer) return false;
  if (c.strict_integer && c.written_non_integer) return false;
  if (b.lo) {
    int cmp = c.lo ? internal::compare(*b.lo, *c.lo) : 1;
    if (cmp > 0 || (cmp == 0 && b.lo_exclusive)) c.lo = b.lo, c.lo_exclusive = b.lo_exclusive;
  }
  if (b.hi) {
    int cmp = c.hi ? internal::compare(*b.hi, *c.hi) : -1;
    if (cmp < 0 || (cmp == 0 && b.hi_exclusive)) c.hi = b.hi, c.hi_exclusive = b.hi_exclusive;
  }
  if (c.range_pointer.empty()) c.range_pointer = b.range_pointer;
  c.multiple_of.insert(c.multiple_of.end(), b.multiple_of.begin(), b.multiple_of.end());
  c.not_multiple_of.insert(c.not_multiple_of.end(), b.not_multiple_of.begin(),
                           b.not_multiple_of.end());
  if (c.lo && c.hi) {
    int cmp = internal::compare(*c.lo, *c.hi);
    if (cmp > 0 || (cmp == 0 && (c.lo_exclusive || c.hi_exclusive))) return false;
    if (c.integer) {
      Decimal low = internal::ceil_decimal(*c.lo), high = internal::floor_decimal(*c.hi);
      if (c.lo_exclusive && c.lo->is_integer()) low = internal::add_integer(low, 1);
      if (c.hi_exclusive && c.hi->is_integer()) high = internal::add_integer(high, -1);
      if (internal::compare(low, high) > 0) return false;
    }
  }
  return true;
}

bool Converter::negate_number(const Clause& clause, const Clause& base, Disj& complement) {
  if (clause.written_non_integer) return false;
  // not (multiple of d1 and d2 ...) = not a multiple of them together;
  // not (not a multiple of a group) = a multiple of each of its divisors.
  if (!clause.multiple_of.empty()) {
    Clause c = base;
    c.not_multiple_of.push_back(clause.multiple_of);
    complement.push_back(std::move(c));
  }
  for (const auto& group : clause.not_multiple_of) {
    Clause c = base;
    c.multiple_of = group;
    complement.push_back(std::move(c));
  }
  // not (draft-04 integer) = a text with a fraction or an exponent.
  if (clause.strict_integer) {
    Clause c = base;
    c.written_non_integer = true;
    complement.push_back(std::move(c));
  }
  // not (integer and range) = non-integer, or outside the range. (A
  // non-integer is written with a fraction: the draft-04 piece holds it.)
  if (clause.integer && !clause.strict_integer) {
    Clause c = base;
    c.non_integer = true;
    complement.push_back(std::move(c));
  }
  if (clause.non_integer) {
    Clause c = base;
    c.integer = true;
    complement.push_back(std::move(c));
  }
  if (clause.lo) {
    Clause c = base;
    c.hi = clause.lo, c.hi_exclusive = !clause.lo_exclusive;
    complement.push_back(std::move(c));
  }
  if (clause.hi) {
    Clause c = base;
    c.lo = clause.hi, c.lo_exclusive = !clause.hi_exclusive;
    complement.push_back(std::move(c));
  }
  return true;
}

bool Converter::number_accepts(const Clause& c, const Json& value) {
  auto number = number_of(value);
  if (!number) refuse("enum", c.values_pointer, "number too large to compare");
  if (c.integer && !number->is_integer()) return false;
  if (c.non_integer && number->is_integer()) return false;
  if (c.strict_integer && !value.is_number_integer() && !value.is_number_unsigned()) return false;
  if (c.written_non_integer && !value.is_number_float()) return false;
  if (c.lo) {
    int cmp = internal::compare(*number, *c.lo);
    if (cmp < 0 || (cmp == 0 && c.lo_exclusive)) return false;
  }
  if (c.hi) {
    int cmp = internal::compare(*number, *c.hi);
    if (cmp > 0 || (cmp == 0 && c.hi_exclusive)) return false;
  }
  for (const auto& [divisor, pointer] : c.multiple_of) {
    auto multiple = internal::is_multiple_of(*number, divisor);
    if (!multiple) refuse("multipleOf", pointer, "numbers too large to check exactly");
    if (!*multiple) return false;
  }
  for (const auto& group : c.not_multiple_of) {
    bool multiple_of_all = true;
    for (const auto& [divisor, pointer] : group) {
      auto multiple = internal::is_multiple_of(*number, divisor);
      if (!multiple) refuse("multipleOf", pointer, "numbers too large to check exactly");
      multiple_of_all = multiple_of_all && *multiple;
    }
    if (multiple_of_all) return false;
  }
  return true;
}

}  // namespace grammask::internal::schema
