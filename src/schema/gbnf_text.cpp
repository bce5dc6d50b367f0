#include "schema/gbnf_text.h"

#include <algorithm>
#include <cctype>

namespace grammask::internal::schema {

std::string sanitize(const std::string& hint) {
  std::string out;
  for (char c : hint) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out.push_back(static_cast<char>(std::tolower(c)));
    else if (!out.empty() && out.back() != '-')
      out.push_back('-');
    if (out.size() >= 16) break;  // names are repeated at every use
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "r" : out;
}

std::string seq(std::initializer_list<std::string> parts) {
  std::string out;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    if (!out.empty()) out += " ";
    out += part;
  }
  return out;
}

std::string alternatives(const std::vector<std::string>& options) {
  std::vector<std::string> unique;
  for (const std::string& option : options)
    if (std::find(unique.begin(), unique.end(), option) == unique.end()) unique.push_back(option);
  std::string out;
  for (size_t i = 0; i < unique.size(); ++i) out += (i ? " | " : "") + unique[i];
  return out;
}

bool bare_name(const std::string& expr) {
  return !expr.empty() && std::all_of(expr.begin(), expr.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::string group(const std::string& expr) {
  return "(" + expr + ")";
}

std::string decimal_literal(const Decimal& number, bool integer_fraction) {
  std::string digits = number.int_digits.empty() ? "0" : number.int_digits;
  std::string sign = number.is_zero() ? "\"-\"? " : (number.negative ? "\"-\" " : "");
  if (number.is_integer())
    return group(sign + "\"" + digits + "\"" + (integer_fraction ? " (\".\" \"0\"+)?" : ""));
  return group(sign + "\"" + digits + "." + number.frac_digits + "\" \"0\"*");
}

}  // namespace grammask::internal::schema
