// Exact decimal arithmetic and digit grammars for JSON Schema numeric
// keywords: ranges (minimum, maximum, exclusive*) and multipleOf.
#ifndef GRAMMASK_SRC_SCHEMA_NUMBERS_H_
#define GRAMMASK_SRC_SCHEMA_NUMBERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace grammask::internal {

// A finite decimal: (negative ? -1 : 1) * int_digits.frac_digits.
// Canonical: no leading zeros in int_digits ("" is zero), no trailing zeros
// in frac_digits, and zero is never negative.
struct Decimal {
  bool negative = false;
  std::string int_digits;
  std::string frac_digits;

  bool is_zero() const { return int_digits.empty() && frac_digits.empty(); }
  bool is_integer() const { return frac_digits.empty(); }
  std::string to_string() const;
};

// Parses JSON number text ("-12.5e3"). nullopt when malformed or when the
// exponent would need more than `max_digits` digits.
std::optional<Decimal> parse_decimal(std::string_view text, size_t max_digits = 400);

int compare(const Decimal& a, const Decimal& b);
Decimal negate(Decimal value);
Decimal floor_decimal(const Decimal& value);
Decimal ceil_decimal(const Decimal& value);
Decimal add_integer(const Decimal& integer, int delta);  // integer +- 1

// True/false if `value` is an integer multiple of `divisor` (> 0); nullopt
// when the numbers are too large for the exact check.
std::optional<bool> is_multiple_of(const Decimal& value, const Decimal& divisor);

// A bound of a range; nullopt in the callers means unbounded.
struct Bound {
  Decimal value;
  bool exclusive = false;
};

// GBNF for integers in [lo, hi] written canonically ("-12", "0"), both
// bounds inclusive integers. nullopt when the range is empty.
std::optional<std::string> integer_range_gbnf(const std::optional<Decimal>& lo,
                                              const std::optional<Decimal>& hi);

// GBNF for decimals (`-? int ("." digits)?`, no exponent) whose value lies
// between the bounds; only non-integers (a non-zero fraction digit) when
// `fraction_required`. nullopt when the range is empty.
std::optional<std::string> decimal_range_gbnf(const std::optional<Bound>& lo,
                                              const std::optional<Bound>& hi,
                                              bool fraction_required = false);

// GBNF for JSON numbers (`-? int frac? exp?`) whose value lies between the
// bounds; nullopt when the range is empty. Exact: it never accepts a value
// out of range. It accepts every text without exponent in range ("-0" too)
// and, with an exponent: any mantissa when the exponent is within
// [-4, 4] (only 0 when a bound has over 40 digits written without
// exponent); any exponent when the range is only bounded by 0 (minimum 0,
// exclusiveMaximum 0...) or not at all; otherwise a mantissa with one
// non-zero digit before the point (1.5e-7, 2e+21: what serializers write).
std::optional<std::string> number_range_gbnf(const std::optional<Bound>& lo,
                                             const std::optional<Bound>& hi);

// Rules for non-negative numbers that are multiples of `divisor` (> 0):
// `int frac?` without sign or exponent (a multiple's negation is one too);
// integers only (fraction all zeros) when `integer_only`; no fraction at all
// unless `allow_fraction`. Appends rule
// definitions named `prefix`-... to *rules and returns the start
// expression; nullopt when the automaton would exceed max_states.
std::optional<std::string> multiple_of_gbnf(const Decimal& divisor, bool integer_only,
                                            bool allow_fraction, const std::string& prefix,
                                            size_t max_states, std::string* rules);

// Rules for the numbers between the bounds (signed, either may be absent)
// that are multiples of `divisor` (> 0) if given and of none of
// `excluded_divisors` (each > 0), written `-? int frac?` without exponent
// ("-0" and trailing zeros included); fraction all zeros when
// `integer_only`, none unless `allow_fraction`. One automaton over the text
// tracks the remainder and the comparison with each bound, minimized and
// written one rule per state named `prefix`-... into *rules. Returns the
// start expression; nullopt when no number qualifies, or with *too_large
// set when the automaton would pass max_states states (divisors whose
// digits have an lcm past 10^9, bounds of more than 40 digits).
std::optional<std::string> multiple_in_range_gbnf(const std::optional<Decimal>& divisor,
                                                  const std::vector<Decimal>& excluded_divisors,
                                                  const std::optional<Bound>& lo,
                                                  const std::optional<Bound>& hi, bool integer_only,
                                                  bool allow_fraction, const std::string& prefix,
                                                  size_t max_states, std::string* rules,
                                                  bool* too_large);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_SCHEMA_NUMBERS_H_
