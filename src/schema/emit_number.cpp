// Emission of number clauses: ranges, exclusions and multipleOf (a member
// of Converter, declared in converter.h).
#include <algorithm>
#include <numeric>

#include "schema/converter.h"
#include "schema/gbnf_text.h"
#include "schema/numbers.h"

namespace grammask::internal::schema {

namespace {

// value * 10^scale as an integer, when it fits comfortably in 63 bits.
std::optional<int64_t> scaled_integer(const Decimal& value, size_t scale) {
  if (value.frac_digits.size() > scale) return std::nullopt;
  std::string digits =
      value.int_digits + value.frac_digits + std::string(scale - value.frac_digits.size(), '0');
  size_t start = digits.find_first_not_of('0');
  digits = start == std::string::npos ? "0" : digits.substr(start);
  if (digits.size() > 17) return std::nullopt;
  int64_t magnitude = std::stoll(digits);
  return value.negative ? -magnitude : magnitude;
}

Decimal from_scaled(int64_t value, size_t scale) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  if (digits.size() <= scale) digits = std::string(scale - digits.size() + 1, '0') + digits;
  std::string text = (value < 0 ? "-" : "") + digits.substr(0, digits.size() - scale);
  if (scale > 0) text += "." + digits.substr(digits.size() - scale);
  return *internal::parse_decimal(text);
}

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

}  // namespace

// For an integer, multipleOf d holds whatever its value when 1 is a
// multiple of d (d = 1, 0.5, 0.25, ...): the keyword then constrains
// nothing, and any range may go with it.
static bool multiple_of_every_integer(const Clause& clause) {
  if (!clause.integer) return false;
  for (const auto& [divisor, where] : clause.multiple_of) {
    const size_t scale = divisor.frac_digits.size();
    if (scale > 18) return false;
    auto scaled = scaled_integer(divisor, scale);
    int64_t unit = 1;
    for (size_t i = 0; i < scale; ++i) unit *= 10;
    if (!scaled || *scaled <= 0 || unit % *scaled != 0) return false;
  }
  return true;
}

// The least common multiple of `divisors` (written with the scale of the
// longest fraction); refuses past 10^12 at that scale.
static Decimal lcm_of(const std::vector<std::pair<Decimal, std::string>>& divisors) {
  size_t scale = 0;
  for (const auto& [divisor, where] : divisors) scale = std::max(scale, divisor.frac_digits.size());
  int64_t lcm = 1;
  for (const auto& [divisor, where] : divisors) {
    auto scaled = scaled_integer(divisor, scale);
    if (!scaled || *scaled > 1000000000000LL) refuse("multipleOf", where, "divisor too large");
    lcm = lcm / std::gcd(lcm, *scaled) * *scaled;
    if (lcm > 1000000000000LL)
      refuse("multipleOf", where, "divisors with too large a common multiple");
  }
  return from_scaled(lcm, scale);
}

std::string Converter::emit_number(const Clause& clause, const std::string& hint) {
  if (clause.integer && clause.non_integer) return "";
  if (clause.written_non_integer) {
    // Only alone: with a range or other number keywords the grammar would
    // have to intersect the spellings with the range's.
    if (clause.integer || clause.non_integer || clause.lo || clause.hi ||
        !clause.multiple_of.empty() || !clause.not_multiple_of.empty() || !clause.excluded.empty())
      refuse("not", clause.range_pointer,
             "a draft-04 `not: {type: integer}` combined with other number keywords");
    return add_rule(hint + "-num",
                    "\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+ ([eE] [-+]? [0-9]+)? | [eE] [-+]? "
                    "[0-9]+)");
  }
  bool bounded = clause.lo || clause.hi;
  // Exclusions (from `not` of a constant) split the range into intervals.
  struct Interval {
    std::optional<Bound> lo, hi;
  };
  std::vector<Interval> intervals(1);
  if (clause.lo) intervals[0].lo = Bound{*clause.lo, clause.lo_exclusive};
  if (clause.hi) intervals[0].hi = Bound{*clause.hi, clause.hi_exclusive};
  for (const Json* excluded : clause.excluded) {
    auto v = number_of(*excluded);
    if (!v) refuse("not", clause.values_pointer, "number too large");
    // Only the interval that holds v splits (the others stay whole: an
    // interval past v must not be widened to start at it).
    std::vector<Interval> next;
    for (const Interval& interval : intervals) {
      const bool above_lo =
          !interval.lo || internal::compare(*v, interval.lo->value) > 0 ||
          (internal::compare(*v, interval.lo->value) == 0 && !interval.lo->exclusive);
      const bool below_hi =
          !interval.hi || internal::compare(*v, interval.hi->value) < 0 ||
          (internal::compare(*v, interval.hi->value) == 0 && !interval.hi->exclusive);
      if (!above_lo || !below_hi) {
        next.push_back(interval);
        continue;
      }
      next.push_back({interval.lo, Bound{*v, true}});
      next.push_back({Bound{*v, true}, interval.hi});
    }
    intervals = std::move(next);
    bounded = true;
  }
  // Registers generated rules (their names share a unique prefix).
  auto define_generated = [&](const std::string& rules) {
    size_t line_start = 0;
    while (line_start < rules.size()) {
      size_t end = rules.find('\n', line_start);
      std::string line = rules.substr(line_start, end - line_start);
      size_t sep = line.find(" ::= ");
      names_.insert(line.substr(0, sep));
      define_rule(line.substr(0, sep), line.substr(sep + 5));
      line_start = end + 1;
    }
  };
  std::optional<Bound> lo, hi;
  if (clause.lo) lo = Bound{*clause.lo, clause.lo_exclusive};
  if (clause.hi) hi = Bound{*clause.hi, clause.hi_exclusive};
  // Multiples within a range through one automaton over the text; refused
  // when it grows too large.
  auto multiples_in_range = [&](const std::optional<Decimal>& divisor,
                                const std::vector<Decimal>& excluded, bool integer_only,
                                const std::string& pointer) -> std::string {
    std::string rules;
    bool too_large = false;
    auto start = internal::multiple_in_range_gbnf(
        divisor, excluded, lo, hi, integer_only, !clause.strict_integer,
        unique_name(hint + "-mult"), 4096, &rules, &too_large);
    if (too_large)
      refuse("multipleOf", pointer, "the multiples in this range need too many states");
    if (!start) return "";
    define_generated(rules);
    return add_rule(hint + "-num", *start);
  };
  if (!clause.not_multiple_of.empty()) {
    const std::string& pointer = clause.not_multiple_of[0][0].second;
    if (clause.non_integer || clause.written_non_integer)
      refuse("not", pointer, "a multipleOf combined with `not integer`");
    if (!clause.excluded.empty())
      refuse("not", pointer, "a multipleOf combined with excluded values");
    std::optional<Decimal> divisor;
    if (!clause.multiple_of.empty()) divisor = lcm_of(clause.multiple_of);
    std::vector<Decimal> excluded;
    for (const auto& group : clause.not_multiple_of) excluded.push_back(lcm_of(group));
    return multiples_in_range(divisor, excluded, clause.integer, pointer);
  }
  if (!clause.multiple_of.empty() && !multiple_of_every_integer(clause)) {
    // Multiples of several divisors are the multiples of their lcm.
    const std::string& pointer = clause.multiple_of[0].second;
    const Decimal divisor = lcm_of(clause.multiple_of);
    if (clause.non_integer) refuse("multipleOf", pointer, "combined with `not integer`");
    if (!clause.excluded.empty()) refuse("multipleOf", pointer, "combined with excluded values");
    bool lower_zero = clause.lo && clause.lo->is_zero() && !clause.lo_exclusive && !clause.hi;
    bool upper_zero = clause.hi && clause.hi->is_zero() && !clause.hi_exclusive && !clause.lo;
    const bool integer_only = clause.integer && !divisor.is_integer();
    if (bounded && !lower_zero && !upper_zero) {
      // A finite range with few multiples: list them.
      if (clause.lo && clause.hi) {
        const size_t range_scale =
            std::max({divisor.frac_digits.size(), clause.lo->frac_digits.size(),
                      clause.hi->frac_digits.size()});
        auto d = scaled_integer(divisor, range_scale),
             lo_scaled = scaled_integer(*clause.lo, range_scale),
             hi_scaled = scaled_integer(*clause.hi, range_scale);
        if (d && lo_scaled && hi_scaled) {
          int64_t first = -floor_div(-*lo_scaled, *d), last = floor_div(*hi_scaled, *d);
          if (clause.lo_exclusive && first * *d == *lo_scaled) ++first;
          if (clause.hi_exclusive && last * *d == *hi_scaled) --last;
          if (last - first <= 1000) {
            std::vector<std::string> options;
            for (int64_t k = first; k <= last; ++k) {
              Decimal value = from_scaled(k * *d, range_scale);
              if (clause.integer && !value.is_integer()) continue;
              options.push_back(decimal_literal(value, !clause.strict_integer));
            }
            if (options.empty()) return "";
            return add_rule(hint + "-num", alternatives(options));
          }
        }
      }
      // Otherwise one automaton over the text decides both.
      return multiples_in_range(divisor, {}, integer_only, pointer);
    }
    std::string rules;
    std::string name = unique_name(hint + "-mult");
    auto start = internal::multiple_of_gbnf(divisor, integer_only, !clause.strict_integer, name,
                                            4096, &rules);
    if (!start)
      refuse("multipleOf", pointer, "divisor " + divisor.to_string() + " needs too many states");
    define_generated(rules);
    std::string unsigned_part = *start;
    if (lower_zero)
      define_rule(name, unsigned_part);
    else if (upper_zero)
      define_rule(name, "\"-\" " + unsigned_part + " | \"0\"" +
                            (clause.strict_integer ? "" : " (\".\" \"0\"+)?"));
    else
      define_rule(name, "\"-\"? " + unsigned_part);
    return name;
  }
  if (!bounded && clause.non_integer)
    return add_rule(hint + "-num", "\"-\"? (\"0\" | [1-9] [0-9]*) \".\" [0-9]* [1-9] [0-9]*");
  if (!bounded)
    return base_rule(clause.strict_integer ? "integer-strict"
                                           : (clause.integer ? "integer" : "number"));
  std::vector<std::string> options;
  for (const Interval& interval : intervals) {
    if (clause.integer) {
      std::optional<Decimal> lo, hi;
      if (interval.lo) {
        lo = internal::ceil_decimal(interval.lo->value);
        if (interval.lo->exclusive && interval.lo->value.is_integer())
          lo = internal::add_integer(*lo, 1);
      }
      if (interval.hi) {
        hi = internal::floor_decimal(interval.hi->value);
        if (interval.hi->exclusive && interval.hi->value.is_integer())
          hi = internal::add_integer(*hi, -1);
      }
      if (auto text = internal::integer_range_gbnf(lo, hi))
        options.push_back(group(*text) + (clause.strict_integer ? "" : " (\".\" \"0\"+)?"));
    } else {
      auto text = clause.non_integer ? internal::decimal_range_gbnf(interval.lo, interval.hi, true)
                                     : internal::number_range_gbnf(interval.lo, interval.hi);
      if (text) options.push_back(*text);
    }
  }
  if (options.empty()) return "";
  return add_rule(hint + "-num", alternatives(options));
}

}  // namespace grammask::internal::schema
