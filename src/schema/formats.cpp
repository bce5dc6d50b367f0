// `format` values as anchored ECMA-262 patterns, written from the RFCs the
// JSON Schema validation spec cites. Each pattern accepts only valid values;
// where the exact language is not cheaply regular (leap seconds at non-whole
// hour offsets, overall hostname length, Punycode labels) it accepts a
// subset rather than a superset.
#include "schema/formats.h"

#include <cstdio>
#include <string>

namespace grammask::internal {
namespace {

const char* const kDate =
    "[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|"
    "30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|"
    "[13579][26])00)-02-29";

std::string two_digits(int value) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "%02d", value);
  return buffer;
}

// RFC 3339 full-time. A leap second (:60) is valid only at 23:59:60 UTC; we
// accept it for offsets in whole hours (other offsets would need the local
// minutes to be tied to the offset minutes).
std::string time_pattern() {
  std::string fraction = "(?:\\.[0-9]+)?";
  std::string regular = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]" + fraction +
                        "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
  std::string leap = "23:59:60" + fraction + "(?:[Zz]|[+-]00:00)";
  for (int hours = 1; hours <= 23; ++hours) {
    leap += "|" + two_digits((23 + hours) % 24) + ":59:60" + fraction + "\\+" + two_digits(hours) +
            ":00";
    leap += "|" + two_digits(23 - hours) + ":59:60" + fraction + "-" + two_digits(hours) + ":00";
  }
  return "(?:" + regular + "|" + leap + ")";
}

const char* const kDecOctet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";

std::string ipv4_pattern() {
  std::string octet = kDecOctet;
  return "(?:" + octet + "\\.){3}" + octet;
}

std::string ipv6_pattern() {
  std::string h16 = "[0-9A-Fa-f]{1,4}";
  std::string ls32 = "(?:" + h16 + ":" + h16 + "|" + ipv4_pattern() + ")";
  auto head = [&](int max_groups) {
    // [ *max_groups( h16 ":" ) h16 ]
    if (max_groups < 0) return std::string();
    return "(?:(?:" + h16 + ":){0," + std::to_string(max_groups) + "}" + h16 + ")?";
  };
  std::string alternatives[] = {
      "(?:" + h16 + ":){6}" + ls32,
      "::(?:" + h16 + ":){5}" + ls32,
      "(?:" + h16 + ")?::(?:" + h16 + ":){4}" + ls32,
      head(1) + "::(?:" + h16 + ":){3}" + ls32,
      head(2) + "::(?:" + h16 + ":){2}" + ls32,
      head(3) + "::" + h16 + ":" + ls32,
      head(4) + "::" + ls32,
      head(5) + "::" + h16,
      head(6) + "::",
  };
  std::string out = "(?:";
  for (size_t i = 0; i < sizeof alternatives / sizeof alternatives[0]; ++i)
    out += (i ? "|" : "") + alternatives[i];
  return out + ")";
}

// A DNS label of 1..max_length letters, digits and hyphens, not starting or
// ending with a hyphen, and without "--" in positions 3-4 (reserved for
// IDNA; Punycode labels are not validated, so they are refused).
std::string label_pattern(int max_length) {
  const std::string alnum = "[A-Za-z0-9]";
  const std::string middle = "[A-Za-z0-9-]";
  std::string out = "(?:" + alnum;
  if (max_length >= 2) out += "|" + alnum + alnum;
  if (max_length >= 3) out += "|" + alnum + middle + alnum;
  if (max_length >= 4) out += "|" + alnum + middle + middle + alnum;
  if (max_length >= 5) {
    out += "|" + alnum + middle + "(?:" + alnum + middle + "|-" + alnum + ")" + middle + "{0," +
           std::to_string(max_length - 5) + "}" + alnum;
  }
  return out + ")";
}

// RFC 1123 host names: labels of at most 63 characters, at most 253 in
// all. The overall bound is enforced by a few shapes, each "at most k labels
// of at most m characters" with k * (m + 1) - 1 <= 253, so every shape fits.
// Few shapes keep the automaton small (the label length and count counters
// are shared by all shapes); the price is a subset: a name mixing long and
// many labels (say five labels, one of 63 characters) is refused.
std::string hostname_pattern() {
  struct Shape {
    int max_labels, max_label;
  };
  const Shape shapes[] = {{3, 63}, {4, 62}, {8, 30}, {16, 14}, {32, 6}, {127, 1}};
  std::string out = "(?:";
  for (const Shape& shape : shapes) {
    const std::string label = label_pattern(shape.max_label);
    out += (out.size() > 3 ? "|" : "") + label + "(?:\\." + label + "){0," +
           std::to_string(shape.max_labels - 1) + "}";
  }
  return out + ")";
}

// RFC 5321 mailbox: dot-atom or quoted local part; a domain name or an
// address literal. The "Mailbox" rule (4.1.2), which the validation spec
// cites, bounds neither a label nor the domain; the labels are kept to RFC
// 1123's 63 characters. `bounded`: the local part is at most 64 characters
// (RFC 5321 4.5.3.1.1), a dot-atom by the lookahead that
// bounded_email_format() puts first, a quoted one by its count of
// characters (at most 62, an escaped pair counting once), and the domain is
// an RFC 1123 host name (at most 253 characters), so that every address has
// a bounded length (a maxLength past it is dropped, not multiplied in).
// Unbounded, the domain's length is not counted (the host name's shapes
// take the format's automaton from 833 states to 2,733).
std::string email_pattern(bool bounded) {
  std::string atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
  std::string dot_atom = atext + "+(?:\\." + atext + "+)*";
  std::string quoted =
      std::string("\"(?:[ !#-\\[\\]-~]|\\\\[ -~])") + (bounded ? "{0,62}" : "*") + "\"";
  const std::string label = label_pattern(63);
  const std::string name = bounded ? hostname_pattern() : label + "(?:\\." + label + ")*";
  std::string domain = name + "|\\[" + ipv4_pattern() + "\\]|\\[IPv6:" + ipv6_pattern() + "\\]";
  return "(?:" + dot_atom + "|" + quoted + ")@(?:" + domain + ")";
}

// RFC 3986 pieces.
const char* const kUnreserved = "A-Za-z0-9\\-._~";
const char* const kSubDelims = "!$&'()*+,;=";

std::string pchar() {
  return std::string("(?:[") + kUnreserved + kSubDelims + ":@]|%[0-9A-Fa-f]{2})";
}

std::string authority() {
  std::string userinfo = std::string("(?:[") + kUnreserved + kSubDelims + ":]|%[0-9A-Fa-f]{2})*";
  std::string reg_name = std::string("(?:[") + kUnreserved + kSubDelims + "]|%[0-9A-Fa-f]{2})*";
  std::string ip_future = std::string("v[0-9A-Fa-f]+\\.[") + kUnreserved + kSubDelims + ":]+";
  std::string host = "(?:\\[(?:" + ipv6_pattern() + "|" + ip_future + ")\\]|" + ipv4_pattern() +
                     "|" + reg_name + ")";
  return "(?:" + userinfo + "@)?" + host + "(?::[0-9]*)?";
}

std::string uri_tail() {
  std::string query = "(?:" + pchar() + "|[/?])*";
  return "(?:\\?" + query + ")?(?:#" + query + ")?";
}

std::string uri_pattern() {
  std::string segment = pchar() + "*";
  std::string segment_nz = pchar() + "+";
  std::string hier = "(?://" + authority() + "(?:/" + segment + ")*|/(?:" + segment_nz + "(?:/" +
                     segment + ")*)?|" + segment_nz + "(?:/" + segment + ")*|)";
  return "[A-Za-z][A-Za-z0-9+\\-.]*:" + hier + uri_tail();
}

std::string relative_ref_pattern() {
  std::string segment = pchar() + "*";
  std::string segment_nz = pchar() + "+";
  std::string segment_nz_nc =
      std::string("(?:[") + kUnreserved + kSubDelims + "@]|%[0-9A-Fa-f]{2})+";
  std::string part = "(?://" + authority() + "(?:/" + segment + ")*|/(?:" + segment_nz + "(?:/" +
                     segment + ")*)?|" + segment_nz_nc + "(?:/" + segment + ")*|)";
  return part + uri_tail();
}

// RFC 3339 Appendix A durations.
std::string duration_pattern() {
  std::string second = "[0-9]+S";
  std::string minute = "[0-9]+M(?:" + second + ")?";
  std::string hour = "[0-9]+H(?:" + minute + ")?";
  std::string time = "T(?:" + hour + "|" + minute + "|" + second + ")";
  std::string day = "[0-9]+D";
  std::string month = "[0-9]+M(?:" + day + ")?";
  std::string year = "[0-9]+Y(?:" + month + ")?";
  std::string date = "(?:" + day + "|" + month + "|" + year + ")(?:" + time + ")?";
  return "P(?:" + date + "|" + time + "|[0-9]+W)";
}

// RFC 6570 URI templates (all levels).
std::string uri_template_pattern() {
  std::string pct = "%[0-9A-Fa-f]{2}";
  std::string ucschar =
      "\\u00A0-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFEF\\u{10000}-\\u{1FFFD}\\u{20000}-\\u{2FFFD}"
      "\\u{30000}-\\u{3FFFD}\\u{40000}-\\u{4FFFD}\\u{50000}-\\u{5FFFD}\\u{60000}-\\u{6FFFD}"
      "\\u{70000}-\\u{7FFFD}\\u{80000}-\\u{8FFFD}\\u{90000}-\\u{9FFFD}\\u{A0000}-\\u{AFFFD}"
      "\\u{B0000}-\\u{BFFFD}\\u{C0000}-\\u{CFFFD}\\u{D0000}-\\u{DFFFD}\\u{E1000}-\\u{EFFFD}";
  std::string iprivate = "\\uE000-\\uF8FF\\u{F0000}-\\u{FFFFD}\\u{100000}-\\u{10FFFD}";
  std::string literal = "(?:[!#$&(-;=?-\\[\\]_a-z~" + ucschar + iprivate + "]|" + pct + ")";
  std::string varchar = "(?:[A-Za-z0-9_]|" + pct + ")";
  std::string varname = varchar + "(?:\\.?" + varchar + ")*";
  std::string varspec = varname + "(?::[1-9][0-9]{0,3}|\\*)?";
  std::string expression = "\\{[+#./;?&=,!@|]?" + varspec + "(?:," + varspec + ")*\\}";
  return "(?:" + literal + "|" + expression + ")*";
}

// Regular expressions of a subset that ECMA-262 (with or without the u
// flag) and the other dialects validators use (Python's re, Rust's regex)
// all accept: literal characters other than syntax characters and
// controls; escapes of syntax characters, `/`, the class escapes and the
// control escapes; `.`; classes of such characters, escapes and the ranges
// a-z, A-Z, 0-9, possibly negated, possibly ending in `-`; `^`, `$`, `\b`,
// `\B`; the quantifiers `*`, `+`, `?`, {n}, {n,}, {n,m} with n a digit and
// m one to three digits, m >= n (each possibly lazy) after anything but an
// assertion; groups `(...)` and `(?:...)` nested up to kRegexGroupDepth
// deep; alternation. Each is a valid pattern there, so the format accepts
// only valid patterns; it rejects the rest (lookaround, named groups,
// backreferences, Unicode escapes, ranges other than those three).
constexpr int kRegexGroupDepth = 3;

std::string regex_subset_pattern() {
  const std::string plain = "[^\\\\^$.|?*+()\\[\\]{}\\x00-\\x1F]";
  const std::string escape = "\\\\[dDwWsSnrtfv.\\\\^$|?*+()\\[\\]{}/]";
  const std::string class_item =
      "(?:[^\\\\\\]\\[^\\-\\x00-\\x1F]|\\\\[dDwWsSnrtfv\\\\\\]\\[\\-^.]|a-z|A-Z|0-9)";
  const std::string char_class = "\\[\\^?" + class_item + "+-?\\]";
  std::string bounded = "\\{[0-9],[1-9][0-9]{1,2}\\}";
  for (char n = '0'; n <= '9'; ++n) bounded += std::string("|\\{") + n + ",[" + n + "-9]\\}";
  const std::string quantifier = "(?:[*+?]|\\{[0-9]{1,3},?\\}|" + bounded + ")\\??";
  const std::string assertion = "(?:\\^|\\$|\\\\[bB])";
  std::string disjunction;  // at the current depth
  for (int depth = 0; depth <= kRegexGroupDepth; ++depth) {
    std::string atom = plain + "|" + escape + "|\\.|" + char_class;
    if (depth > 0) atom += "|\\((?:\\?:)?" + disjunction + "\\)";
    const std::string term = "(?:" + assertion + "|(?:" + atom + ")(?:" + quantifier + ")?)";
    // (Alternatives may be empty: any sequence of terms and bars.)
    disjunction = "(?:" + term + "|\\|)*";
  }
  return disjunction;
}

std::string anchored(const std::string& pattern) {
  return "^(?:" + pattern + ")$";
}

// The anchored e-mail pattern with a bounded local part (a dot-atom one
// bounded by a lookahead first).
std::string bounded_email_format() {
  return "^(?=[^@\"]{1,64}@|\")(?:" + email_pattern(true) + ")$";
}

}  // namespace

FormatLookup format_pattern(std::string_view format) {
  FormatLookup result;
  result.known = true;
  if (format == "date") {
    result.pattern = anchored(kDate);
  } else if (format == "time") {
    result.pattern = anchored(time_pattern());
  } else if (format == "date-time") {
    result.pattern = anchored(std::string("(?:") + kDate + ")[Tt]" + time_pattern());
  } else if (format == "duration") {
    result.pattern = anchored(duration_pattern());
  } else if (format == "uuid") {
    result.pattern =
        anchored("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
  } else if (format == "ipv4") {
    result.pattern = anchored(ipv4_pattern());
  } else if (format == "ipv6") {
    result.pattern = anchored(ipv6_pattern());
  } else if (format == "hostname") {
    result.pattern = anchored(hostname_pattern());
  } else if (format == "email") {
    result.pattern = anchored(email_pattern(false));
    result.bounded = bounded_email_format();
  } else if (format == "uri") {
    result.pattern = anchored(uri_pattern());
  } else if (format == "uri-reference") {
    result.pattern = anchored("(?:" + uri_pattern() + ")|(?:" + relative_ref_pattern() + ")");
  } else if (format == "json-pointer") {
    result.pattern = anchored("(?:/(?:[^~/]|~[01])*)*");
  } else if (format == "relative-json-pointer") {
    result.pattern = anchored("(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^~/]|~[01])*)*)");
  } else if (format == "uri-template") {
    result.pattern = anchored(uri_template_pattern());
  } else if (format == "idn-hostname") {
    result.pattern = anchored(hostname_pattern());
    result.narrowed = "ASCII host names";
  } else if (format == "idn-email") {
    result.pattern = anchored(email_pattern(false));
    result.bounded = bounded_email_format();
    result.narrowed = "ASCII addresses";
  } else if (format == "iri") {
    result.pattern = anchored(uri_pattern());
    result.narrowed = "ASCII IRIs (URIs)";
  } else if (format == "iri-reference") {
    result.pattern = anchored("(?:" + uri_pattern() + ")|(?:" + relative_ref_pattern() + ")");
    result.narrowed = "ASCII IRI references (URI references)";
  } else if (format == "regex") {
    result.pattern = anchored(regex_subset_pattern());
    result.narrowed =
        "patterns of a common subset (no lookaround, named groups, backreferences or Unicode "
        "escapes; groups nested at most " +
        std::to_string(kRegexGroupDepth) + " deep)";
  } else {
    result.known = false;
  }
  return result;
}

}  // namespace grammask::internal
