// Decimal arithmetic on digit strings and the digit-by-digit grammars for
// numeric ranges and divisibility.
#include "schema/numbers.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <numeric>
#include <unordered_map>
#include <vector>

namespace grammask::internal {
namespace {

std::string strip_leading_zeros(std::string digits) {
  size_t i = 0;
  while (i < digits.size() && digits[i] == '0') ++i;
  return digits.substr(i);
}

std::string strip_trailing_zeros(std::string digits) {
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return digits;
}

Decimal canonical(Decimal value) {
  value.int_digits = strip_leading_zeros(value.int_digits);
  value.frac_digits = strip_trailing_zeros(value.frac_digits);
  if (value.is_zero()) value.negative = false;
  return value;
}

// Compares non-negative digit strings without leading zeros.
int compare_unsigned_int(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
}

int compare_magnitude(const Decimal& a, const Decimal& b) {
  int c = compare_unsigned_int(a.int_digits, b.int_digits);
  if (c != 0) return c;
  int f = a.frac_digits.compare(b.frac_digits);
  return f < 0 ? -1 : (f == 0 ? 0 : 1);
}

// Adds 1 to a non-negative integer digit string ("" is zero).
std::string increment(const std::string& digits) {
  std::string result = digits.empty() ? "0" : digits;
  int i = static_cast<int>(result.size()) - 1;
  while (i >= 0 && result[static_cast<size_t>(i)] == '9') result[static_cast<size_t>(i--)] = '0';
  if (i < 0)
    result.insert(result.begin(), '1');
  else
    ++result[static_cast<size_t>(i)];
  return strip_leading_zeros(result);
}

// Subtracts 1 from a positive integer digit string.
std::string decrement(const std::string& digits) {
  std::string result = digits;
  int i = static_cast<int>(result.size()) - 1;
  while (i >= 0 && result[static_cast<size_t>(i)] == '0') result[static_cast<size_t>(i--)] = '9';
  if (i >= 0) --result[static_cast<size_t>(i)];
  return strip_leading_zeros(result);
}

std::string as_digits(const std::string& int_digits) {
  return int_digits.empty() ? "0" : int_digits;
}

std::string literal(const std::string& text) {
  return "\"" + text + "\"";
}

std::string digit_class(char first, char last) {
  if (first == last) return literal(std::string(1, first));
  if (first == '0' && last == '9') return "[0-9]";
  return std::string("[") + first + "-" + last + "]";
}

std::string any_digits(size_t count) {
  if (count == 0) return "";
  if (count == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(count) + "}";
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

std::string group(const std::vector<std::string>& options) {
  std::vector<std::string> nonempty;
  for (const std::string& option : options)
    if (!option.empty()) nonempty.push_back(option);
  if (nonempty.size() == 1) return nonempty[0];
  return "(" + join(nonempty, " | ") + ")";
}

// Digit strings of equal length n >= 1 in [a, b] (inner positions: leading
// zeros allowed).
std::string same_length_range(const std::string& a, const std::string& b) {
  size_t n = a.size();
  if (a == b) return literal(a);
  if (n == 1) return digit_class(a[0], b[0]);
  if (a[0] == b[0])
    return literal(std::string(1, a[0])) + " " + same_length_range(a.substr(1), b.substr(1));
  std::string rest_a = a.substr(1), rest_b = b.substr(1);
  bool a_rest_zero = rest_a.find_first_not_of('0') == std::string::npos;
  bool b_rest_nines = rest_b.find_first_not_of('9') == std::string::npos;
  std::vector<std::string> options;
  char middle_first = a_rest_zero ? a[0] : static_cast<char>(a[0] + 1);
  char middle_last = b_rest_nines ? b[0] : static_cast<char>(b[0] - 1);
  if (!a_rest_zero)
    options.push_back(literal(std::string(1, a[0])) + " " +
                      same_length_range(rest_a, std::string(n - 1, '9')));
  if (middle_first <= middle_last)
    options.push_back(digit_class(middle_first, middle_last) + " " + any_digits(n - 1));
  if (!b_rest_nines)
    options.push_back(literal(std::string(1, b[0])) + " " +
                      same_length_range(std::string(n - 1, '0'), rest_b));
  return group(options);
}

// Canonical non-negative integers in [a, b] (b = nullopt: unbounded);
// a, b without leading zeros ("" is zero).
std::string unsigned_range(const std::string& lo, const std::optional<std::string>& hi) {
  std::string a = as_digits(lo);
  std::vector<std::string> options;
  if (!hi) {
    options.push_back(same_length_range(a, std::string(a.size(), '9')));
    options.push_back("[1-9] [0-9]{" + std::to_string(a.size()) + ",}");
    return group(options);
  }
  std::string b = as_digits(*hi);
  if (a.size() == b.size()) return same_length_range(a, b);
  options.push_back(same_length_range(a, std::string(a.size(), '9')));
  size_t shortest = a.size() + 1, longest = b.size() - 1;
  if (shortest <= longest) {
    if (shortest == longest)
      options.push_back("[1-9] " + any_digits(shortest - 1));
    else
      options.push_back("[1-9] [0-9]{" + std::to_string(shortest - 1) + "," +
                        std::to_string(longest - 1) + "}");
  }
  options.push_back(same_length_range("1" + std::string(b.size() - 1, '0'), b));
  return group(options);
}

// A language of fraction digit strings: whether the empty string is in it,
// and an expression for its non-empty members ("" = none).
struct FractionLanguage {
  bool has_empty = false;
  std::string nonempty;
  bool is_empty() const { return !has_empty && nonempty.empty(); }
};

// Digit strings d with lo <(=) 0.d <(=) hi; digits without trailing zeros,
// "" meaning zero, nullopt meaning unbounded.
FractionLanguage fraction_range(const std::optional<std::string>& lo, bool lo_strict,
                                const std::optional<std::string>& hi, bool hi_strict) {
  bool lo_free = !lo || (lo->empty() && !lo_strict);
  if (lo_free && !hi) return {true, "[0-9]+"};
  if (hi && hi->empty()) {
    if (hi_strict || !lo_free) return {};
    return {true, "\"0\"+"};
  }
  if (lo && lo->empty() && lo_strict && !hi) return {false, "\"0\"* [1-9] [0-9]*"};
  FractionLanguage result;
  result.has_empty = lo_free;  // 0.<empty> = 0 <= hi (hi > 0 here)
  std::vector<std::string> options;
  int digit = 0;
  while (digit <= 9) {
    // What remains to check after choosing this first digit.
    auto next_state = [&](int c, std::optional<std::string>* next_lo, bool* lo_ok,
                          std::optional<std::string>* next_hi, bool* hi_ok) {
      *lo_ok = true, *hi_ok = true;
      if (!lo_free) {
        int l0 = lo->empty() ? 0 : (*lo)[0] - '0';
        if (c > l0)
          next_lo->reset();
        else if (c == l0)
          *next_lo = lo->empty() ? std::string() : lo->substr(1);
        else
          *lo_ok = false;
      } else {
        next_lo->reset();
      }
      if (hi) {
        int h0 = (*hi)[0] - '0';
        if (c < h0)
          next_hi->reset();
        else if (c == h0)
          *next_hi = hi->substr(1);
        else
          *hi_ok = false;
      } else {
        next_hi->reset();
      }
    };
    std::optional<std::string> first_lo, first_hi;
    bool lo_ok, hi_ok;
    next_state(digit, &first_lo, &lo_ok, &first_hi, &hi_ok);
    int last = digit;
    while (last + 1 <= 9) {
      std::optional<std::string> l2, h2;
      bool lo_ok2, hi_ok2;
      next_state(last + 1, &l2, &lo_ok2, &h2, &hi_ok2);
      if (l2 != first_lo || h2 != first_hi || lo_ok2 != lo_ok || hi_ok2 != hi_ok) break;
      ++last;
    }
    if (lo_ok && hi_ok) {
      FractionLanguage rest = fraction_range(first_lo, lo_strict, first_hi, hi_strict);
      if (!rest.is_empty()) {
        std::string head =
            digit_class(static_cast<char>('0' + digit), static_cast<char>('0' + last));
        if (rest.nonempty.empty())
          options.push_back(head);
        else if (rest.has_empty)
          options.push_back(head + " (" + rest.nonempty + ")?");
        else
          options.push_back(head + " " +
                            (rest.nonempty.find(' ') == std::string::npos
                                 ? rest.nonempty
                                 : "(" + rest.nonempty + ")"));
      }
    }
    digit = last + 1;
  }
  result.nonempty = join(options, " | ");
  return result;
}

// Text `("." digits)?` for a fraction language; nullopt if it is empty.
std::optional<std::string> fraction_text(const FractionLanguage& language) {
  if (language.is_empty()) return std::nullopt;
  if (language.nonempty.empty()) return std::string();
  std::string dotted = "\".\" (" + language.nonempty + ")";
  return language.has_empty ? "(" + dotted + ")?" : dotted;
}

std::string concat(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

// Non-negative decimals m with lo <(=) m <(=) hi (lo >= 0).
std::optional<std::string> magnitude_range(const Bound& lo, const std::optional<Bound>& hi,
                                           bool fraction_required) {
  const std::string a_int = lo.value.int_digits;
  const std::string any_fraction =
      *fraction_text(fraction_required ? fraction_range(std::string(), true, std::nullopt, false)
                                       : FractionLanguage{true, "[0-9]+"});
  std::vector<std::string> options;
  auto frac_from = [&](bool from_lo, bool to_hi) {
    std::optional<std::string> f_lo, f_hi;
    bool lo_strict = false, hi_strict = false;
    if (from_lo) f_lo = lo.value.frac_digits, lo_strict = lo.exclusive;
    if (to_hi) f_hi = hi->value.frac_digits, hi_strict = hi->exclusive;
    // A non-zero fraction: above .0 (a lower bound with digits already is).
    if (fraction_required && (!f_lo || f_lo->empty())) f_lo = std::string(), lo_strict = true;
    return fraction_text(fraction_range(f_lo, lo_strict, f_hi, hi_strict));
  };
  if (!hi) {
    if (auto frac = frac_from(true, false))
      options.push_back(concat(literal(as_digits(a_int)), *frac));
    options.push_back(concat(unsigned_range(increment(a_int), std::nullopt), any_fraction));
    return group(options);
  }
  const std::string b_int = hi->value.int_digits;
  int c = compare_unsigned_int(a_int, b_int);
  if (c > 0) return std::nullopt;
  if (c == 0) {
    auto frac = frac_from(true, true);
    if (!frac) return std::nullopt;
    return concat(literal(as_digits(a_int)), *frac);
  }
  if (auto frac = frac_from(true, false))
    options.push_back(concat(literal(as_digits(a_int)), *frac));
  std::string next = increment(a_int);
  if (compare_unsigned_int(next, b_int) < 0)
    options.push_back(concat(unsigned_range(next, decrement(b_int)), any_fraction));
  if (auto frac = frac_from(false, true))
    options.push_back(concat(literal(as_digits(b_int)), *frac));
  if (options.empty()) return std::nullopt;
  return group(options);
}

// value * 10^shift.
Decimal shifted(const Decimal& value, long long shift) {
  return *parse_decimal(value.to_string() + "e" + std::to_string(shift), 1u << 20);
}

// floor(log10(value)) for value > 0.
long long order_of(const Decimal& value) {
  if (!value.int_digits.empty()) return static_cast<long long>(value.int_digits.size()) - 1;
  return -static_cast<long long>(value.frac_digits.find_first_not_of('0')) - 1;
}

Decimal power_of_ten(long long exponent) {
  return *parse_decimal("1e" + std::to_string(exponent), 1u << 20);
}

// Exponent texts (`[eE] [-+]? [0-9]+`, leading zeros allowed) whose value
// lies in [lo, hi] (nullopt: unbounded); "" when there is none.
std::string exponent_text(std::optional<long long> lo, std::optional<long long> hi) {
  if (lo && hi && *lo > *hi) return "";
  if (!lo && !hi) return "[eE] [-+]? [0-9]+";
  std::vector<std::string> options;
  auto magnitudes = [](long long a, std::optional<long long> b) {
    return unsigned_range(std::to_string(a),
                          b ? std::optional<std::string>(std::to_string(*b)) : std::nullopt);
  };
  if (!lo || *lo < 0) {
    long long top = hi ? std::min<long long>(*hi, -1) : -1;
    std::optional<long long> bottom;
    if (lo) bottom = -*lo;
    if (!bottom || -top <= *bottom) options.push_back("\"-\" \"0\"* " + magnitudes(-top, bottom));
  }
  if ((!lo || *lo <= 0) && (!hi || *hi >= 0)) options.push_back("[-+]? \"0\"+");
  if (!hi || *hi > 0) {
    long long bottom = lo ? std::max<long long>(*lo, 1) : 1;
    options.push_back("\"+\"? \"0\"* " + magnitudes(bottom, hi));
  }
  return "[eE] " + group(options);
}

// Exponents written with any mantissa (outside it: one non-zero digit
// before the point, the scientific form serializers write), unless a bound
// has more than kAnyMantissaDigits digits as a plain decimal (1e-300): each
// of these exponents copies the range's digit grammar.
constexpr long long kAnyMantissaLow = -4, kAnyMantissaHigh = 4;
constexpr size_t kAnyMantissaDigits = 40;

std::string parenthesized(const std::string& text) {
  return text.find(' ') == std::string::npos ? text : "(" + text + ")";
}

// Texts with an exponent other than 0 whose magnitude m (the mantissa
// without sign, times 10^exponent) has lo <(=) m <(=) hi, where 0 <= lo and
// 0 < hi; "" for none. Exact; which spellings it has: see
// number_range_gbnf.
std::string exponent_forms(const Bound& lo, const std::optional<Bound>& hi) {
  const std::string zero = "\"0\" (\".\" \"0\"+)?";
  const bool zero_in = lo.value.is_zero() && !lo.exclusive;
  auto digit_count = [](const Decimal& value) {
    return value.int_digits.size() + value.frac_digits.size();
  };
  const bool long_bounds = digit_count(lo.value) > kAnyMantissaDigits ||
                           (hi && digit_count(hi->value) > kAnyMantissaDigits);
  const long long window_low = long_bounds ? 0 : kAnyMantissaLow;
  const long long window_high = long_bounds ? 0 : kAnyMantissaHigh;
  std::vector<std::string> options;
  // Exponents with any mantissa: each its own range of mantissas, exponents
  // with the same range sharing one alternative. Exponent 0 is left to the
  // caller (the range without exponent, then an optional exponent 0).
  std::vector<std::pair<std::string, std::vector<long long>>> by_mantissa;
  for (long long e = window_low; e <= window_high; ++e) {
    if (e == 0) continue;
    std::optional<Bound> mantissa_hi;
    if (hi) mantissa_hi = Bound{shifted(hi->value, -e), hi->exclusive};
    auto mantissa = magnitude_range(Bound{shifted(lo.value, -e), lo.exclusive}, mantissa_hi, false);
    if (!mantissa) continue;
    auto it = std::find_if(by_mantissa.begin(), by_mantissa.end(),
                           [&](const auto& entry) { return entry.first == *mantissa; });
    if (it == by_mantissa.end())
      by_mantissa.push_back({*mantissa, {e}});
    else
      it->second.push_back(e);
  }
  for (const auto& [mantissa, exponents] : by_mantissa) {
    std::vector<std::string> texts;
    size_t i = 0;
    while (i < exponents.size()) {
      size_t j = i;
      while (j + 1 < exponents.size() && exponents[j + 1] == exponents[j] + 1) ++j;
      texts.push_back(exponent_text(exponents[i], exponents[j]));
      i = j + 1;
    }
    options.push_back(parenthesized(mantissa) + " " + group(texts));
  }
  // Other exponents: the mantissa is in [1, 10), so the order of magnitude
  // is the exponent. Orders wholly inside the range ("free") take any
  // such mantissa; the orders of the bounds compare the digits.
  const std::string scientific = "[1-9] (\".\" [0-9]+)?";
  std::optional<long long> free_lo, free_hi;  // nullopt: unbounded
  if (!lo.value.is_zero()) {
    long long o = order_of(lo.value);
    free_lo = compare(power_of_ten(o), lo.value) == 0 && !lo.exclusive ? o : o + 1;
  }
  if (hi) free_hi = order_of(hi->value) - 1;
  auto outside_window = [&](std::optional<long long> a, std::optional<long long> b) {
    // [a, b] minus [window_low, window_high], as up to two ranges.
    std::vector<std::pair<std::optional<long long>, std::optional<long long>>> parts;
    std::optional<long long> below_hi =
        b ? std::min<long long>(*b, window_low - 1) : window_low - 1;
    if (!a || *a <= *below_hi) parts.push_back({a, below_hi});
    std::optional<long long> above_lo =
        a ? std::max<long long>(*a, window_high + 1) : window_high + 1;
    if (!b || *above_lo <= *b) parts.push_back({above_lo, b});
    return parts;
  };
  if (!free_lo || !free_hi || *free_lo <= *free_hi) {
    for (const auto& [a, b] : outside_window(free_lo, free_hi))
      options.push_back(scientific + " " + exponent_text(a, b));
  }
  std::vector<long long> edges;
  if (!lo.value.is_zero()) edges.push_back(order_of(lo.value));
  if (hi) edges.push_back(order_of(hi->value));
  if (edges.size() == 2 && edges[0] == edges[1]) edges.pop_back();
  for (long long e : edges) {
    if (e >= window_low && e <= window_high) continue;
    if ((!free_lo || e >= *free_lo) && (!free_hi || e <= *free_hi)) continue;
    Bound mantissa_lo{power_of_ten(0), false};
    Decimal scaled_lo = shifted(lo.value, -e);
    if (compare(scaled_lo, mantissa_lo.value) >= 0) mantissa_lo = Bound{scaled_lo, lo.exclusive};
    Bound mantissa_hi{power_of_ten(1), true};
    if (hi) {
      Decimal scaled_hi = shifted(hi->value, -e);
      if (compare(scaled_hi, mantissa_hi.value) < 0) mantissa_hi = Bound{scaled_hi, hi->exclusive};
    }
    if (auto mantissa = magnitude_range(mantissa_lo, mantissa_hi, false))
      options.push_back(parenthesized(*mantissa) + " " + exponent_text(e, e));
  }
  if (zero_in) {
    std::vector<std::string> texts;
    for (const auto& [a, b] : outside_window({}, {})) texts.push_back(exponent_text(a, b));
    options.push_back(zero + " " + group(texts));
  }
  return join(options, " | ");
}

// Number texts without sign, with or without exponent, whose magnitude m
// has lo <(=) m <(=) hi (lo >= 0); nullopt for none.
std::optional<std::string> magnitude_number(const Bound& lo, const std::optional<Bound>& hi) {
  if (hi && hi->value.is_zero()) {
    if (!lo.value.is_zero() || lo.exclusive || hi->exclusive) return std::nullopt;
    return "\"0\" (\".\" \"0\"+)? ([eE] [-+]? [0-9]+)?";
  }
  auto plain = magnitude_range(lo, hi, false);
  if (!plain) return std::nullopt;
  // Every magnitude (or every non-zero one) with any exponent.
  if (lo.value.is_zero() && !hi) return parenthesized(*plain) + " ([eE] [-+]? [0-9]+)?";
  std::string with_zero_exponent = parenthesized(*plain) + " (" + exponent_text(0, 0) + ")?";
  std::string others = exponent_forms(lo, hi);
  if (others.empty()) return with_zero_exponent;
  return "(" + with_zero_exponent + " | " + others + ")";
}
}  // namespace

std::string Decimal::to_string() const {
  std::string out = negative ? "-" : "";
  out += as_digits(int_digits);
  if (!frac_digits.empty()) out += "." + frac_digits;
  return out;
}

std::optional<Decimal> parse_decimal(std::string_view text, size_t max_digits) {
  size_t i = 0;
  Decimal value;
  if (i < text.size() && text[i] == '-') value.negative = true, ++i;
  std::string mantissa_int, mantissa_frac;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') mantissa_int += text[i++];
  if (mantissa_int.empty()) return std::nullopt;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') mantissa_frac += text[i++];
    if (mantissa_frac.empty()) return std::nullopt;
  }
  long long exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exp_negative = text[i++] == '-';
    if (i >= text.size()) return std::nullopt;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      exponent = std::min<long long>(exponent * 10 + (text[i++] - '0'), 1000000);
    }
    if (exp_negative) exponent = -exponent;
  }
  if (i != text.size()) return std::nullopt;
  std::string digits = mantissa_int + mantissa_frac;
  long long point = static_cast<long long>(mantissa_int.size()) + exponent;  // position of '.'
  if (point > static_cast<long long>(max_digits) || -point > static_cast<long long>(max_digits))
    return std::nullopt;
  if (point <= 0) {
    value.frac_digits = std::string(static_cast<size_t>(-point), '0') + digits;
  } else if (point >= static_cast<long long>(digits.size())) {
    value.int_digits = digits + std::string(static_cast<size_t>(point) - digits.size(), '0');
  } else {
    value.int_digits = digits.substr(0, static_cast<size_t>(point));
    value.frac_digits = digits.substr(static_cast<size_t>(point));
  }
  return canonical(value);
}

int compare(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  int c = compare_magnitude(a, b);
  return a.negative ? -c : c;
}

Decimal negate(Decimal value) {
  if (!value.is_zero()) value.negative = !value.negative;
  return value;
}

Decimal floor_decimal(const Decimal& value) {
  if (value.is_integer()) return value;
  Decimal result;
  result.negative = value.negative;
  result.int_digits = value.negative ? increment(value.int_digits) : value.int_digits;
  return canonical(result);
}

Decimal ceil_decimal(const Decimal& value) {
  if (value.is_integer()) return value;
  Decimal result;
  result.negative = value.negative;
  result.int_digits = value.negative ? value.int_digits : increment(value.int_digits);
  return canonical(result);
}

Decimal add_integer(const Decimal& integer, int delta) {
  // Works on the signed value: v + delta for delta in {-1, +1}.
  Decimal result = integer;
  bool up = (delta > 0) != integer.negative;  // magnitude grows?
  if (integer.is_zero()) {
    result.int_digits = "1";
    result.negative = delta < 0;
    return result;
  }
  result.int_digits = up ? increment(integer.int_digits) : decrement(integer.int_digits);
  return canonical(result);
}

std::optional<bool> is_multiple_of(const Decimal& value, const Decimal& divisor) {
  size_t scale = std::max(value.frac_digits.size(), divisor.frac_digits.size());
  auto scaled = [&](const Decimal& d) {
    return strip_leading_zeros(d.int_digits + d.frac_digits +
                               std::string(scale - d.frac_digits.size(), '0'));
  };
  std::string v = scaled(value), m = scaled(divisor);
  if (m.empty()) return std::nullopt;
  if (m.size() > 17) return std::nullopt;
  uint64_t modulus = std::stoull(m);
  uint64_t remainder = 0;
  for (char c : v) remainder = (remainder * 10 + static_cast<uint64_t>(c - '0')) % modulus;
  return remainder == 0;
}

std::optional<std::string> integer_range_gbnf(const std::optional<Decimal>& lo,
                                              const std::optional<Decimal>& hi) {
  if (lo && hi && compare(*lo, *hi) > 0) return std::nullopt;
  std::vector<std::string> options;
  // Negative part: magnitudes in [max(1, -hi), -lo].
  if (!lo || lo->negative) {
    std::string magnitude_lo = "1";
    if (hi && hi->negative) magnitude_lo = hi->int_digits;
    std::optional<std::string> magnitude_hi;
    if (lo) magnitude_hi = lo->int_digits;
    if (!magnitude_hi || compare_unsigned_int(magnitude_lo, *magnitude_hi) <= 0)
      options.push_back("\"-\" " + unsigned_range(magnitude_lo, magnitude_hi));
  }
  // Non-negative part: [max(0, lo), hi].
  if (!hi || !hi->negative) {
    std::string start = (lo && !lo->negative) ? lo->int_digits : std::string();
    std::optional<std::string> end;
    if (hi) end = hi->int_digits;
    options.push_back(unsigned_range(start, end));
  }
  if (options.empty()) return std::nullopt;
  return group(options);
}

std::optional<std::string> decimal_range_gbnf(const std::optional<Bound>& lo,
                                              const std::optional<Bound>& hi,
                                              bool fraction_required) {
  if (lo && hi) {
    int c = compare(lo->value, hi->value);
    if (c > 0 || (c == 0 && (lo->exclusive || hi->exclusive))) return std::nullopt;
  }
  std::vector<std::string> options;
  Decimal zero;
  // Negative numbers: magnitude in (max(0, -hi), -lo), strictly positive.
  if (!lo || lo->value.negative) {
    Bound magnitude_lo{zero, true};
    if (hi && hi->value.negative) magnitude_lo = Bound{negate(hi->value), hi->exclusive};
    std::optional<Bound> magnitude_hi;
    if (lo) magnitude_hi = Bound{negate(lo->value), lo->exclusive};
    if (auto text = magnitude_range(magnitude_lo, magnitude_hi, fraction_required))
      options.push_back("\"-\" " + *text);
  }
  // Non-negative numbers.
  bool hi_allows_nonnegative = !hi || !hi->value.negative;
  if (hi && hi->value.is_zero() && hi->exclusive) hi_allows_nonnegative = false;
  if (hi_allows_nonnegative) {
    Bound start{zero, false};
    if (lo && !lo->value.negative) start = *lo;
    if (auto text = magnitude_range(start, hi, fraction_required)) options.push_back(*text);
  }
  if (options.empty()) return std::nullopt;
  return group(options);
}

std::optional<std::string> number_range_gbnf(const std::optional<Bound>& lo,
                                             const std::optional<Bound>& hi) {
  if (lo && hi) {
    int c = compare(lo->value, hi->value);
    if (c > 0 || (c == 0 && (lo->exclusive || hi->exclusive))) return std::nullopt;
  }
  // The magnitudes of the negative texts ("-0" is 0) and of the others.
  Decimal zero;
  std::optional<std::string> negative, nonnegative;
  if (!lo || lo->value.negative || (lo->value.is_zero() && !lo->exclusive)) {
    Bound magnitude_lo{zero, false};
    if (hi && (hi->value.negative || hi->value.is_zero()))
      magnitude_lo = Bound{negate(hi->value), hi->exclusive};
    std::optional<Bound> magnitude_hi;
    if (lo) magnitude_hi = Bound{negate(lo->value), lo->exclusive};
    negative = magnitude_number(magnitude_lo, magnitude_hi);
  }
  if (!hi || !hi->value.negative) {
    Bound start{zero, false};
    if (lo && !lo->value.negative) start = *lo;
    nonnegative = magnitude_number(start, hi);
  }
  if (negative && nonnegative && *negative == *nonnegative) return "\"-\"? " + *negative;
  std::vector<std::string> options;
  if (negative) options.push_back("\"-\" " + *negative);
  if (nonnegative) options.push_back(*nonnegative);
  if (options.empty()) return std::nullopt;
  return group(options);
}

std::optional<std::string> multiple_of_gbnf(const Decimal& divisor, bool integer_only,
                                            bool allow_fraction, const std::string& prefix,
                                            size_t max_states, std::string* rules) {
  // divisor = modulus * 10^-scale; the automaton tracks
  // (digits read so far, as an integer) mod modulus and how many fraction
  // digits were read (digits past `scale` must be zeros).
  size_t scale = divisor.frac_digits.size();
  std::string modulus_digits = strip_leading_zeros(divisor.int_digits + divisor.frac_digits);
  if (modulus_digits.empty() || modulus_digits.size() > 9) return std::nullopt;
  uint64_t modulus = std::stoull(modulus_digits);
  if (modulus * (scale + 2) > max_states) return std::nullopt;
  std::vector<uint64_t> power(scale + 1, 1 % modulus);
  for (size_t k = 1; k <= scale; ++k) power[k] = (power[k - 1] * 10) % modulus;
  auto int_rule = [&](uint64_t r) { return prefix + "-i" + std::to_string(r); };
  auto frac_rule = [&](uint64_t r, size_t k) {
    return prefix + "-f" + std::to_string(r) + "-" + std::to_string(k);
  };
  // Once the digits end after k fraction digits, value * 10^scale is
  // congruent to r * 10^(scale - k).
  // Fraction states k = 0..last: k digits read, capped at last = max(scale,
  // 1) (digits past `scale` must be zeros and change nothing).
  size_t last = std::max<size_t>(scale, 1);
  auto can_end = [&](uint64_t r, size_t k) {
    return (r * power[scale - std::min(k, scale)]) % modulus == 0;
  };
  // Digit transitions from remainder r, grouping digits with one target.
  auto transitions = [&](uint64_t r, int last_digit,
                         const std::function<std::string(uint64_t)>& target) {
    std::vector<std::string> options;
    int d = 0;
    while (d <= last_digit) {
      uint64_t next = (r * 10 + static_cast<uint64_t>(d)) % modulus;
      int e = d;
      while (e + 1 <= last_digit && (r * 10 + static_cast<uint64_t>(e + 1)) % modulus == next) ++e;
      options.push_back(digit_class(static_cast<char>('0' + d), static_cast<char>('0' + e)) + " " +
                        target(next));
      d = e + 1;
    }
    return options;
  };
  auto write_rule = [&](const std::string& name, std::vector<std::string> options, bool nullable) {
    std::string body = join(options, " | ");
    if (nullable) body = "(" + body + ")?";
    *rules += name + " ::= " + body + "\n";
  };
  for (uint64_t r = 0; r < modulus; ++r) {
    std::vector<std::string> options = transitions(r, 9, int_rule);
    if (allow_fraction) options.push_back("\".\" " + frac_rule(r, 0));
    write_rule(int_rule(r), options, can_end(r, 0));
    for (size_t k = 0; k <= last; ++k) {
      std::vector<std::string> frac_options;
      if (k < scale) {
        frac_options = transitions(r, integer_only ? 0 : 9,
                                   [&](uint64_t next) { return frac_rule(next, k + 1); });
      } else {
        frac_options.push_back("\"0\" " + frac_rule(r, std::min(k + 1, last)));
      }
      write_rule(frac_rule(r, k), frac_options, k > 0 && can_end(r, k));
    }
  }
  std::vector<std::string> start;
  start.push_back(allow_fraction ? "\"0\" (\".\" " + frac_rule(0, 0) + ")?" : "\"0\"");
  for (int d = 1; d <= 9; ++d)
    start.push_back(literal(std::string(1, static_cast<char>('0' + d))) + " " +
                    int_rule(static_cast<uint64_t>(d) % modulus));
  return "(" + join(start, " | ") + ")";
}

// --- Multiples within a range ------------------------------------------------
//
// A deterministic automaton over the text of a non-negative number,
// `("0" | [1-9] [0-9]*) ("." [0-9]+)?`, symbols 0-9 and kPoint, that
// accepts the numbers within the magnitude bounds that are multiples of the
// required divisor (if any) and of none of the excluded ones. With every
// divisor written as m * 10^-s for one scale s, its state is what decides:
// the digits read mod the lcm of the m (a non-zero digit past s fraction
// digits makes the number a multiple of none), and how the text compares
// with each bound so far.

namespace {

constexpr int kPoint = 10;  // the symbol '.'
constexpr int kSymbols = 11;

enum class Rel : uint8_t { kLess, kEqual, kGreater };

// A bound on the magnitude: the integer digits ("0" for zero) and the
// fraction digits (no trailing zeros).
struct MagnitudeBound {
  std::string int_digits;
  std::string frac_digits;
  bool exclusive = false;
};

struct TextState {
  bool fraction = false;    // past the point
  bool int_closed = false;  // the integer part is "0": no digit may follow
  uint8_t count = 0;        // integer digits read (capped), or fraction digits (capped)
  Rel lo = Rel::kEqual;     // integer part: the prefix against the bound's; fraction: the value
  Rel hi = Rel::kEqual;
  bool past_scale = false;  // a non-zero fraction digit past the scale was read
  uint32_t remainder = 0;
  uint64_t key() const {
    return (uint64_t{remainder} << 24) | (uint64_t{past_scale} << 16) | (uint64_t{count} << 8) |
           (static_cast<uint64_t>(lo) << 4) | (static_cast<uint64_t>(hi) << 2) |
           (uint64_t{fraction} << 1) | uint64_t{int_closed};
  }
};

class MultipleTextAutomaton {
 public:
  // `required` (0: none) and `excluded` are divisors times 10^scale;
  // `modulus` is their lcm.
  MultipleTextAutomaton(uint64_t modulus, size_t scale, uint64_t required,
                        std::vector<uint64_t> excluded, std::optional<MagnitudeBound> lo,
                        std::optional<MagnitudeBound> hi, bool integer_only, bool allow_fraction)
      : modulus_(modulus),
        scale_(scale),
        required_(required),
        excluded_(std::move(excluded)),
        lo_(std::move(lo)),
        hi_(std::move(hi)),
        integer_only_(integer_only),
        allow_fraction_(allow_fraction) {
    size_t int_length = 1, frac_length = scale;
    for (const auto* bound : {&lo_, &hi_})
      if (*bound) {
        int_length = std::max(int_length, (*bound)->int_digits.size());
        frac_length = std::max(frac_length, (*bound)->frac_digits.size());
      }
    int_cap_ = int_length + 1;
    frac_cap_ = std::max<size_t>(frac_length, 1);
    power_.assign(scale_ + 1, 1 % modulus_);
    for (size_t k = 1; k <= scale_; ++k) power_[k] = (power_[k - 1] * 10) % modulus_;
  }

  // Builds the reachable states; false past max_states.
  bool build(size_t max_states) {
    std::unordered_map<uint64_t, int32_t> index;
    auto state_of = [&](const TextState& s) -> int32_t {
      auto [it, inserted] = index.emplace(s.key(), static_cast<int32_t>(states_.size()));
      if (inserted) {
        states_.push_back(s);
        next_.push_back({});
        next_.back().fill(-1);
        accept_.push_back(accepts(s));
      }
      return it->second;
    };
    state_of(TextState{});
    for (size_t done = 0; done < states_.size(); ++done) {
      if (states_.size() > max_states) return false;
      for (int symbol = 0; symbol < kSymbols; ++symbol) {
        std::optional<TextState> target = step(states_[done], symbol, done == 0);
        if (target) {
          const int32_t t = state_of(*target);
          next_[done][symbol] = t;
        }
      }
    }
    return states_.size() <= max_states;
  }

  // Drops the states that cannot reach acceptance and merges equivalent
  // ones; false when nothing is accepted.
  bool trim_and_minimize() {
    const size_t n = states_.size();
    std::vector<std::vector<int32_t>> back(n);
    for (size_t s = 0; s < n; ++s)
      for (int32_t t : next_[s])
        if (t >= 0) back[t].push_back(static_cast<int32_t>(s));
    std::vector<bool> live(n, false);
    std::vector<int32_t> work;
    for (size_t s = 0; s < n; ++s)
      if (accept_[s]) live[s] = true, work.push_back(static_cast<int32_t>(s));
    while (!work.empty()) {
      const int32_t t = work.back();
      work.pop_back();
      for (int32_t s : back[t])
        if (!live[s]) live[s] = true, work.push_back(s);
    }
    if (!live[0]) return false;
    for (auto& row : next_)
      for (int32_t& t : row)
        if (t >= 0 && !live[t]) t = -1;
    // Moore's refinement: blocks by acceptance, then by the blocks of the
    // targets, until the number of blocks stops growing.
    std::vector<int32_t> block(n, -1);
    for (size_t s = 0; s < n; ++s)
      if (live[s]) block[s] = accept_[s] ? 1 : 0;
    size_t blocks = 0;
    for (;;) {
      std::map<std::vector<int32_t>, int32_t> signatures;
      std::vector<int32_t> refined(n, -1);
      for (size_t s = 0; s < n; ++s) {
        if (!live[s]) continue;
        std::vector<int32_t> signature{block[s]};
        for (int32_t t : next_[s]) signature.push_back(t >= 0 ? block[t] : -1);
        refined[s] = signatures.emplace(std::move(signature), signatures.size()).first->second;
      }
      block.swap(refined);
      if (signatures.size() == blocks) break;
      blocks = signatures.size();
    }
    // The minimal automaton, its start (the block of state 0) first.
    std::vector<int32_t> renumber(blocks, -1);
    std::vector<size_t> order{0};
    renumber[block[0]] = 0;
    std::vector<std::array<int32_t, kSymbols>> next;
    std::vector<bool> accept;
    for (size_t k = 0; k < order.size(); ++k) {
      const size_t s = order[k];
      std::array<int32_t, kSymbols> row;
      row.fill(-1);
      for (int symbol = 0; symbol < kSymbols; ++symbol) {
        const int32_t t = next_[s][symbol];
        if (t < 0) continue;
        if (renumber[block[t]] < 0) {
          renumber[block[t]] = static_cast<int32_t>(order.size());
          order.push_back(static_cast<size_t>(t));
        }
        row[symbol] = renumber[block[t]];
      }
      next.push_back(row);
      accept.push_back(accept_[s]);
    }
    next_ = std::move(next);
    accept_ = std::move(accept);
    return true;
  }

  // One rule per state that reads on (a state that only accepts is the
  // end of the transitions into it); returns the start rule's name.
  std::string write_rules(const std::string& prefix, std::string* rules) const {
    auto name = [&](int32_t s) { return prefix + "-" + std::to_string(s); };
    auto reads_on = [&](int32_t s) {
      for (int32_t t : next_[s])
        if (t >= 0) return true;
      return false;
    };
    for (size_t s = 0; s < next_.size(); ++s) {
      if (!reads_on(static_cast<int32_t>(s)) && s != 0) continue;
      std::vector<std::string> options;
      auto option = [&](const std::string& symbols, int32_t target) {
        options.push_back(reads_on(target) ? symbols + " " + name(target) : symbols);
      };
      for (int d = 0; d <= 9;) {
        const int32_t t = next_[s][d];
        int e = d;
        while (e + 1 <= 9 && next_[s][e + 1] == t) ++e;
        if (t >= 0) option(digit_class(static_cast<char>('0' + d), static_cast<char>('0' + e)), t);
        d = e + 1;
      }
      if (next_[s][kPoint] >= 0) option("\".\"", next_[s][kPoint]);
      std::string body = join(options, " | ");
      if (accept_[s]) body = "(" + body + ")?";
      *rules += name(static_cast<int32_t>(s)) + " ::= " + body + "\n";
    }
    return name(0);
  }

 private:
  static Rel compare_digit(int digit, char bound_digit) {
    const int b = bound_digit - '0';
    return digit < b ? Rel::kLess : digit > b ? Rel::kGreater : Rel::kEqual;
  }

  // The integer part's relation to `bound` once it ends with `count` digits.
  static Rel int_relation(const MagnitudeBound& bound, size_t count, Rel prefix) {
    if (count < bound.int_digits.size()) return Rel::kLess;
    if (count > bound.int_digits.size()) return Rel::kGreater;
    return prefix;
  }

  // The value's relation to `bound` when the text ends here.
  static Rel final_relation(const MagnitudeBound& bound, Rel so_far, size_t frac_read) {
    if (so_far != Rel::kEqual) return so_far;
    return frac_read < bound.frac_digits.size() ? Rel::kLess : Rel::kEqual;
  }

  bool in_range(Rel lo, Rel hi) const {
    if (lo_ && !(lo == Rel::kGreater || (lo == Rel::kEqual && !lo_->exclusive))) return false;
    if (hi_ && !(hi == Rel::kLess || (hi == Rel::kEqual && !hi_->exclusive))) return false;
    return true;
  }

  bool accepts(const TextState& s) const {
    if (!s.fraction && s.count == 0) return false;  // nothing read
    if (s.fraction && s.count == 0) return false;   // a point needs a digit after it
    const size_t frac_read = s.fraction ? s.count : 0;
    if (!s.past_scale) {
      // The value times 10^scale, mod the lcm.
      const size_t padding = scale_ - std::min(frac_read, scale_);
      const uint64_t scaled = (s.remainder * power_[padding]) % modulus_;
      if (required_ != 0 && scaled % required_ != 0) return false;
      for (uint64_t divisor : excluded_)
        if (scaled % divisor == 0) return false;
    }
    Rel lo = Rel::kGreater, hi = Rel::kLess;
    if (s.fraction) {
      if (lo_) lo = final_relation(*lo_, s.lo, frac_read);
      if (hi_) hi = final_relation(*hi_, s.hi, frac_read);
    } else {
      if (lo_) lo = final_relation(*lo_, int_relation(*lo_, s.count, s.lo), 0);
      if (hi_) hi = final_relation(*hi_, int_relation(*hi_, s.count, s.hi), 0);
    }
    return in_range(lo, hi);
  }

  std::optional<TextState> step(const TextState& s, int symbol, bool start) const {
    TextState t = s;
    if (symbol == kPoint) {
      if (s.fraction || start || !allow_fraction_) return std::nullopt;
      t.fraction = true;
      t.int_closed = false;
      t.count = 0;
      if (lo_) t.lo = int_relation(*lo_, s.count, s.lo);
      if (hi_) t.hi = int_relation(*hi_, s.count, s.hi);
      if (hi_ && t.hi == Rel::kGreater) return std::nullopt;
      return t;
    }
    const int digit = symbol;
    if (!s.fraction) {
      if (s.int_closed) return std::nullopt;
      if (start && digit == 0) t.int_closed = true;
      // The digit's place in the bounds' integer parts, when as long.
      const size_t at = s.count;
      auto advance = [&](const std::optional<MagnitudeBound>& bound, Rel prefix) {
        if (!bound) return prefix;
        if (at >= bound->int_digits.size()) return Rel::kGreater;
        if (prefix != Rel::kEqual) return prefix;
        return compare_digit(digit, bound->int_digits[at]);
      };
      t.lo = advance(lo_, s.lo);
      t.hi = advance(hi_, s.hi);
      t.count = static_cast<uint8_t>(std::min<size_t>(s.count + 1, int_cap_));
      // Longer than the upper bound's integer part: too large already.
      if (hi_ && t.count > hi_->int_digits.size()) return std::nullopt;
      t.remainder =
          static_cast<uint32_t>((s.remainder * 10 + static_cast<uint64_t>(digit)) % modulus_);
      return t;
    }
    // A fraction digit: for integers only 0; past the scale, a non-zero
    // digit leaves no multiple of any divisor.
    if (integer_only_ && digit != 0) return std::nullopt;
    if (s.count >= scale_ && digit != 0) {
      if (required_ != 0) return std::nullopt;
      t.past_scale = true;
      t.remainder = 0;
    }
    auto advance = [&](const std::optional<MagnitudeBound>& bound, Rel so_far) {
      if (!bound || so_far != Rel::kEqual) return so_far;
      const char bound_digit =
          s.count < bound->frac_digits.size() ? bound->frac_digits[s.count] : '0';
      return compare_digit(digit, bound_digit);
    };
    t.lo = advance(lo_, s.lo);
    t.hi = advance(hi_, s.hi);
    if (hi_ && t.hi == Rel::kGreater) return std::nullopt;
    if (s.count < scale_ && !t.past_scale)
      t.remainder =
          static_cast<uint32_t>((s.remainder * 10 + static_cast<uint64_t>(digit)) % modulus_);
    t.count = static_cast<uint8_t>(std::min<size_t>(s.count + 1, frac_cap_));
    return t;
  }

  uint64_t modulus_;
  size_t scale_;
  uint64_t required_;
  std::vector<uint64_t> excluded_;
  std::optional<MagnitudeBound> lo_, hi_;
  bool integer_only_, allow_fraction_;
  size_t int_cap_ = 0, frac_cap_ = 0;
  std::vector<uint64_t> power_;  // 10^k mod modulus, k = 0..scale
  std::vector<TextState> states_;
  std::vector<std::array<int32_t, kSymbols>> next_;
  std::vector<bool> accept_;
};

MagnitudeBound magnitude_of(const Bound& bound) {
  return {bound.value.int_digits.empty() ? "0" : bound.value.int_digits, bound.value.frac_digits,
          bound.exclusive};
}

}  // namespace

std::optional<std::string> multiple_in_range_gbnf(const std::optional<Decimal>& divisor,
                                                  const std::vector<Decimal>& excluded_divisors,
                                                  const std::optional<Bound>& lo,
                                                  const std::optional<Bound>& hi, bool integer_only,
                                                  bool allow_fraction, const std::string& prefix,
                                                  size_t max_states, std::string* rules,
                                                  bool* too_large) {
  *too_large = false;
  // Every divisor as m * 10^-scale for one scale; the state tracks the
  // digits mod the lcm of the m.
  size_t scale = divisor ? divisor->frac_digits.size() : 0;
  for (const Decimal& d : excluded_divisors) scale = std::max(scale, d.frac_digits.size());
  constexpr uint64_t kMaxModulus = 1000000000;
  auto scaled = [&](const Decimal& d) -> uint64_t {
    const std::string digits = strip_leading_zeros(d.int_digits + d.frac_digits +
                                                   std::string(scale - d.frac_digits.size(), '0'));
    if (digits.empty() || digits.size() > 9) return 0;
    return std::stoull(digits);
  };
  uint64_t modulus = 1, required = 0;
  std::vector<uint64_t> excluded;
  auto include = [&](uint64_t m) {
    if (m == 0) return false;
    modulus = modulus / std::gcd(modulus, m) * m;
    return modulus <= kMaxModulus;
  };
  bool fits = true;
  if (divisor) fits = include(required = scaled(*divisor));
  for (const Decimal& d : excluded_divisors) {
    excluded.push_back(scaled(d));
    fits = fits && include(excluded.back());
  }
  if (!fits) {
    *too_large = true;
    return std::nullopt;
  }
  if (lo && hi) {
    const int c = compare(lo->value, hi->value);
    if (c > 0 || (c == 0 && (lo->exclusive || hi->exclusive))) return std::nullopt;
  }
  const bool bounds_too_long =
      (lo && lo->value.int_digits.size() + lo->value.frac_digits.size() > 40) ||
      (hi && hi->value.int_digits.size() + hi->value.frac_digits.size() > 40);
  if (bounds_too_long) {
    *too_large = true;
    return std::nullopt;
  }
  // Each sign's magnitudes: the non-negative values [max(lo, 0), hi], the
  // negative ones as magnitudes [max(-hi, 0), -lo]. A lower bound of 0,
  // inclusive, bounds nothing.
  struct Side {
    const char* sign;
    const char* suffix;
    bool present;
    std::optional<MagnitudeBound> lo, hi;
  };
  Side positive{"", "-p", !hi || !hi->value.negative, std::nullopt, std::nullopt};
  if (hi && hi->value.is_zero() && hi->exclusive) positive.present = false;
  if (lo && !lo->value.negative && !(lo->value.is_zero() && !lo->exclusive))
    positive.lo = magnitude_of(*lo);
  if (hi) positive.hi = magnitude_of(*hi);
  Side negative{"\"-\" ", "-n",
                !lo || lo->value.negative || (lo->value.is_zero() && !lo->exclusive), std::nullopt,
                std::nullopt};
  if (hi && (hi->value.negative || (hi->value.is_zero() && hi->exclusive)))
    negative.lo = magnitude_of(Bound{negate(hi->value), hi->exclusive});
  if (lo) negative.hi = magnitude_of(Bound{negate(lo->value), lo->exclusive});
  std::vector<std::string> options;
  for (const Side* side : {&negative, &positive}) {
    if (!side->present) continue;
    MultipleTextAutomaton automaton(modulus, scale, required, excluded, side->lo, side->hi,
                                    integer_only, allow_fraction);
    if (!automaton.build(max_states)) {
      *too_large = true;
      return std::nullopt;
    }
    if (!automaton.trim_and_minimize()) continue;
    options.push_back(side->sign + automaton.write_rules(prefix + side->suffix, rules));
  }
  if (options.empty()) return std::nullopt;
  return group(options);
}

}  // namespace grammask::internal
