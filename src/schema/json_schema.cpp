// JSON Schema -> GBNF.
//
// Pipeline: parse and index the document ($id, $anchor, base URIs), then
// normalize schemas into a disjunction of per-type clauses (each clause a
// conjunction of constraints on values of one JSON type), then emit GBNF.
// Keywords only constrain values of their own type, so a typeless schema is
// the union of its six type clauses, each carrying the keywords that apply.
// allOf/$ref intersect clauses, anyOf unions them, oneOf needs provably
// disjoint branches (or negatable ones), `not` needs a negatable operand.
// Sub-schemas below properties and items stay lazy (a set of schema nodes to
// intersect), become GBNF rules, and so recursive schemas become recursive
// rules. Whatever cannot be enforced exactly throws a Refusal that names the
// keyword and the JSON pointer of the schema holding it.
#include "grammask/json_schema.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bitset>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "grammask/gbnf.h"
#include "regex/char_dfa.h"
#include "regex/regex_to_gbnf.h"
#include "schema/formats.h"
#include "schema/numbers.h"

namespace grammask {
namespace {

using Json = nlohmann::ordered_json;
using internal::Bound;
using internal::Decimal;
using Draft = JsonSchemaOptions::Draft;

// Thrown inside the converter; caught at the API boundary. `keyword` lets
// lenient mode drop the offending keyword and try again.
struct Refusal {
  Status status;
  std::string keyword;
};

std::string display_pointer(const std::string& pointer) {
  return pointer.empty() ? "/" : pointer;
}

[[noreturn]] void refuse(const std::string& keyword, const std::string& pointer,
                         const std::string& why, ErrorCode code = ErrorCode::kUnsupported) {
  std::string message = "unsupported keyword \"" + keyword + "\" at " + display_pointer(pointer);
  if (code == ErrorCode::kLimitExceeded)
    message = "keyword \"" + keyword + "\" at " + display_pointer(pointer) + " exceeds a limit";
  if (code == ErrorCode::kSyntax)
    message = "invalid keyword \"" + keyword + "\" at " + display_pointer(pointer);
  throw Refusal{Status(code, message + ": " + why), keyword};
}

[[noreturn]] void fail(ErrorCode code, const std::string& message) {
  throw Refusal{Status(code, message), ""};
}

std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out.push_back(c);
  }
  return out;
}

constexpr const char* kSelfReference = "the schema refers to itself without consuming any input";

const Json& false_node() {
  static const Json node(false);
  return node;
}
const Json& null_value() {
  static const Json node(nullptr);
  return node;
}

// ---------------------------------------------------------------------------
// Values: JSON equality (numbers by value, objects ignoring key order).

std::optional<Decimal> number_of(const Json& value) {
  return internal::parse_decimal(value.dump());
}

bool json_equal(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) {
    auto x = number_of(a), y = number_of(b);
    return x && y && internal::compare(*x, *y) == 0;
  }
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!json_equal(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end() || !json_equal(it.value(), *other)) return false;
    }
    return true;
  }
  return a == b;
}

enum class JType : uint8_t { kNull, kBoolean, kNumber, kString, kArray, kObject };
constexpr JType kAllTypes[] = {JType::kNull,   JType::kBoolean, JType::kNumber,
                               JType::kString, JType::kArray,   JType::kObject};

JType type_of(const Json& value) {
  if (value.is_null()) return JType::kNull;
  if (value.is_boolean()) return JType::kBoolean;
  if (value.is_number()) return JType::kNumber;
  if (value.is_string()) return JType::kString;
  if (value.is_array()) return JType::kArray;
  return JType::kObject;
}

size_t code_point_length(const std::string& utf8) {
  size_t count = 0;
  for (char c : utf8)
    if ((static_cast<uint8_t>(c) & 0xC0) != 0x80) ++count;
  return count;
}

// ---------------------------------------------------------------------------
// Lazy sub-schemas and clauses.

// A conjunction of schema nodes (and negated nodes), converted on demand.
struct Sub {
  std::vector<const Json*> nodes;
  std::vector<const Json*> negated;
  // Disjunctions, each a sorted list of nodes of which one must hold (what
  // unevaluatedItems leaves to items that no `contains` matched).
  std::vector<std::vector<const Json*>> any_of;
  bool is_true() const { return nodes.empty() && negated.empty() && any_of.empty(); }
  static Sub of(const Json* node) {
    Sub sub;
    if (!(node->is_boolean() && node->get<bool>())) sub.nodes.push_back(node);
    return sub;
  }
  static Sub never() { return of(&false_node()); }
};

Sub conj(const Sub& a, const Sub& b) {
  Sub result;
  std::set_union(a.nodes.begin(), a.nodes.end(), b.nodes.begin(), b.nodes.end(),
                 std::back_inserter(result.nodes));
  std::set_union(a.negated.begin(), a.negated.end(), b.negated.begin(), b.negated.end(),
                 std::back_inserter(result.negated));
  std::set_union(a.any_of.begin(), a.any_of.end(), b.any_of.begin(), b.any_of.end(),
                 std::back_inserter(result.any_of));
  return result;
}

std::string sub_key(const Sub& sub) {
  std::string key;
  for (const Json* node : sub.nodes) key += std::to_string(reinterpret_cast<uintptr_t>(node)) + ",";
  key += "!";
  for (const Json* node : sub.negated)
    key += std::to_string(reinterpret_cast<uintptr_t>(node)) + ",";
  for (const auto& group : sub.any_of) {
    key += "|";
    for (const Json* node : group) key += std::to_string(reinterpret_cast<uintptr_t>(node)) + ",";
  }
  return key;
}

struct Sourced {
  std::string text;
  std::string pointer;
};

struct Contains {
  Sub schema;
  uint64_t min = 1;
  std::optional<uint64_t> max;
  std::string pointer;
};

// A conjunction of constraints on values of one JSON type.
struct Clause {
  JType type = JType::kNull;
  bool has_values = false;  // then only `values` (filtered by the rest) are allowed
  std::vector<const Json*> values;
  std::vector<const Json*> excluded;
  std::string values_pointer;
  // numbers
  bool integer = false;
  bool non_integer = false;     // from `not: {type: integer}`: a non-zero fraction
  bool strict_integer = false;  // draft-04: integers written without a fraction
  std::optional<Decimal> lo, hi;
  bool lo_exclusive = false, hi_exclusive = false;
  std::string range_pointer;
  std::vector<std::pair<Decimal, std::string>> multiple_of;
  // strings
  uint64_t min_length = 0;
  std::optional<uint64_t> max_length;
  std::string length_pointer;
  std::vector<Sourced> patterns;
  std::vector<Sourced> negated_patterns;  // regexes the string must not match (from `not`)
  std::vector<Sourced> formats;
  // arrays
  std::vector<Sub> prefix;
  Sub items;
  uint64_t min_items = 0;
  std::optional<uint64_t> max_items;
  std::string items_count_pointer;
  std::vector<Contains> contains;
  bool unique = false;
  std::string unique_pointer;
  size_t evaluated_prefix = 0;
  bool items_evaluated = false;
  // 2020-12: `contains` schemas whose matching items count as evaluated
  // (an annotation, also with minContains 0).
  std::vector<const Json*> contains_evaluates;
  // objects
  std::vector<std::pair<std::string, Sub>> properties;
  std::set<std::string> required;
  Sub additional;
  std::vector<std::pair<Sourced, Sub>> pattern_properties;
  Sub property_names;
  std::string property_names_pointer;
  uint64_t min_properties = 0;
  std::optional<uint64_t> max_properties;
  std::string properties_count_pointer;
  std::set<std::string> evaluated;
  bool properties_evaluated = false;

  bool unconstrained() const {
    return !has_values && excluded.empty() && !integer && !non_integer && !strict_integer && !lo &&
           !hi && multiple_of.empty() && min_length == 0 && !max_length && patterns.empty() &&
           negated_patterns.empty() && formats.empty() && prefix.empty() && items.is_true() &&
           min_items == 0 && !max_items && contains.empty() && !unique && properties.empty() &&
           required.empty() && additional.is_true() && pattern_properties.empty() &&
           property_names.is_true() && min_properties == 0 && !max_properties &&
           evaluated.empty() && !properties_evaluated && evaluated_prefix == 0 &&
           !items_evaluated && contains_evaluates.empty();
  }
};
using Disj = std::vector<Clause>;

// What a clause constrains (not where the keywords were written), so that
// equal clauses reached through different references share one rule.
std::string clause_key(const Clause& c) {
  std::string key = std::to_string(static_cast<int>(c.type));
  auto add = [&](const std::string& part) {
    key += '|';
    key += part;
  };
  auto pointers = [](const std::vector<const Json*>& values) {
    std::string out;
    for (const Json* v : values) out += std::to_string(reinterpret_cast<uintptr_t>(v)) + ",";
    return out;
  };
  auto optional_number = [](const std::optional<uint64_t>& n) {
    return n ? std::to_string(*n) : std::string("-");
  };
  add(c.has_values ? "v" + pointers(c.values) : "");
  add(pointers(c.excluded));
  add(std::string(c.integer ? "i" : "") + (c.non_integer ? "f" : "") +
      (c.strict_integer ? "s" : ""));
  add(c.lo ? (c.lo_exclusive ? ">" : ">=") + c.lo->to_string() : "");
  add(c.hi ? (c.hi_exclusive ? "<" : "<=") + c.hi->to_string() : "");
  for (const auto& [divisor, where] : c.multiple_of) add("m" + divisor.to_string());
  add(std::to_string(c.min_length) + "," + optional_number(c.max_length));
  for (const Sourced& p : c.patterns) add("p" + std::to_string(p.text.size()) + ":" + p.text);
  for (const Sourced& p : c.negated_patterns)
    add("!p" + std::to_string(p.text.size()) + ":" + p.text);
  for (const Sourced& f : c.formats) add("f" + f.text);
  for (const Sub& item : c.prefix) add("P" + sub_key(item));
  add("I" + sub_key(c.items));
  add(std::to_string(c.min_items) + "," + optional_number(c.max_items));
  for (const Contains& k : c.contains)
    add("C" + sub_key(k.schema) + std::to_string(k.min) + "," + optional_number(k.max));
  add(c.unique ? "u" : "");
  add("E" + pointers(c.contains_evaluates));
  for (const auto& [name, sub] : c.properties)
    add("p" + std::to_string(name.size()) + ":" + name + sub_key(sub));
  for (const std::string& name : c.required) add("r" + std::to_string(name.size()) + ":" + name);
  add("A" + sub_key(c.additional));
  for (const auto& [pattern, sub] : c.pattern_properties)
    add("R" + std::to_string(pattern.text.size()) + ":" + pattern.text + sub_key(sub));
  add("N" + sub_key(c.property_names));
  add(std::to_string(c.min_properties) + "," + optional_number(c.max_properties));
  return key;
}

Sub* find_property(Clause& clause, const std::string& name) {
  for (auto& [key, sub] : clause.properties)
    if (key == name) return &sub;
  return nullptr;
}
const Sub* find_property(const Clause& clause, const std::string& name) {
  for (const auto& [key, sub] : clause.properties)
    if (key == name) return &sub;
  return nullptr;
}

Disj all_types() {
  Disj result;
  result.reserve(std::size(kAllTypes));
  for (JType type : kAllTypes) {
    Clause clause;
    clause.type = type;
    result.push_back(std::move(clause));
  }
  return result;
}

// ---------------------------------------------------------------------------
// URIs (RFC 3986 reference resolution, enough for $id / $ref).

struct UriParts {
  std::string scheme, authority, path, query;
  bool has_authority = false;
};

UriParts split_uri(const std::string& uri) {
  UriParts parts;
  std::string rest = uri;
  size_t hash = rest.find('#');
  if (hash != std::string::npos) rest = rest.substr(0, hash);
  size_t colon = rest.find(':');
  size_t slash = rest.find('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon < slash) && colon > 0) {
    parts.scheme = rest.substr(0, colon);
    rest = rest.substr(colon + 1);
  }
  if (rest.rfind("//", 0) == 0) {
    parts.has_authority = true;
    size_t end = rest.find_first_of("/?", 2);
    parts.authority = rest.substr(2, end == std::string::npos ? std::string::npos : end - 2);
    rest = end == std::string::npos ? "" : rest.substr(end);
  }
  size_t question = rest.find('?');
  if (question != std::string::npos) {
    parts.query = rest.substr(question);
    rest = rest.substr(0, question);
  }
  parts.path = rest;
  return parts;
}

std::string remove_dot_segments(const std::string& path) {
  std::vector<std::string> output;
  size_t i = 0;
  bool absolute = !path.empty() && path[0] == '/';
  std::string segment;
  std::vector<std::string> segments;
  std::string current;
  for (char c : path) {
    if (c == '/') {
      segments.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  segments.push_back(current);
  (void)i;
  (void)segment;
  for (size_t k = absolute ? 1 : 0; k < segments.size(); ++k) {
    const std::string& s = segments[k];
    if (s == ".") {
      if (k + 1 == segments.size()) output.push_back("");
    } else if (s == "..") {
      if (!output.empty()) output.pop_back();
      if (k + 1 == segments.size()) output.push_back("");
    } else {
      output.push_back(s);
    }
  }
  std::string result = absolute ? "/" : "";
  for (size_t k = 0; k < output.size(); ++k) result += (k ? "/" : "") + output[k];
  return result;
}

std::string join_uri(const UriParts& parts) {
  std::string out;
  if (!parts.scheme.empty()) out += parts.scheme + ":";
  if (parts.has_authority) out += "//" + parts.authority;
  out += parts.path + parts.query;
  return out;
}

bool has_scheme(const std::string& ref) {
  size_t colon = ref.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  for (size_t i = 0; i < colon; ++i) {
    char c = ref[i];
    bool ok = std::isalpha(static_cast<unsigned char>(c)) ||
              (i > 0 &&
               (std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'));
    if (!ok) return false;
  }
  return true;
}

std::string resolve_uri(const std::string& base, const std::string& ref) {
  std::string fragment;
  std::string reference = ref;
  size_t hash = reference.find('#');
  if (hash != std::string::npos) {
    fragment = reference.substr(hash);
    reference = reference.substr(0, hash);
  }
  std::string base_no_fragment = base.substr(0, base.find('#'));
  if (reference.empty()) return base_no_fragment + fragment;
  if (has_scheme(reference)) {
    UriParts parts = split_uri(reference);
    if (parts.has_authority || (!parts.path.empty() && parts.path[0] == '/'))
      parts.path = remove_dot_segments(parts.path);
    return join_uri(parts) + fragment;
  }
  UriParts base_parts = split_uri(base_no_fragment);
  UriParts result;
  result.scheme = base_parts.scheme;
  if (reference.rfind("//", 0) == 0) {
    UriParts parts = split_uri(reference);
    parts.scheme = base_parts.scheme;
    parts.path = remove_dot_segments(parts.path);
    return join_uri(parts) + fragment;
  }
  result.has_authority = base_parts.has_authority;
  result.authority = base_parts.authority;
  UriParts ref_parts = split_uri(reference);
  if (!ref_parts.path.empty() && ref_parts.path[0] == '/') {
    result.path = remove_dot_segments(ref_parts.path);
  } else if (ref_parts.path.empty()) {
    result.path = base_parts.path;
  } else {
    std::string merged;
    if (base_parts.has_authority && base_parts.path.empty()) {
      merged = "/" + ref_parts.path;
    } else {
      size_t last = base_parts.path.rfind('/');
      merged =
          (last == std::string::npos ? "" : base_parts.path.substr(0, last + 1)) + ref_parts.path;
    }
    result.path = remove_dot_segments(merged);
  }
  result.query = ref_parts.query;
  return join_uri(result) + fragment;
}

std::string percent_decode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// The schema document: where each node is and what its base URI is.

struct NodeInfo {
  std::string pointer;
  std::string base;
  Draft draft = Draft::kDraft2020_12;
  int scope = -1;  // the dynamic scope of a copy (see Document), else -1
};

const std::set<std::string>& schema_map_keywords() {
  static const std::set<std::string> names = {"properties", "patternProperties", "$defs",
                                              "definitions", "dependentSchemas"};
  return names;
}
const std::set<std::string>& schema_array_keywords() {
  static const std::set<std::string> names = {"allOf", "anyOf", "oneOf", "prefixItems", "items"};
  return names;
}
const std::set<std::string>& schema_keywords() {
  static const std::set<std::string> names = {"not",
                                              "if",
                                              "then",
                                              "else",
                                              "items",
                                              "additionalItems",
                                              "additionalProperties",
                                              "contains",
                                              "propertyNames",
                                              "unevaluatedItems",
                                              "unevaluatedProperties",
                                              "contentSchema"};
  return names;
}

// draft-07 and older: $ref replaces its siblings, "#name" ids are anchors.
bool legacy(Draft draft) {
  return draft == Draft::kDraft7 || draft == Draft::kDraft6 || draft == Draft::kDraft4;
}

Draft draft_from_uri(const std::string& uri, Draft fallback) {
  if (uri.find("draft-04") != std::string::npos || uri.find("draft-03") != std::string::npos)
    return Draft::kDraft4;
  if (uri.find("draft-06") != std::string::npos) return Draft::kDraft6;
  if (uri.find("draft-07") != std::string::npos) return Draft::kDraft7;
  if (uri.find("2019-09") != std::string::npos) return Draft::kDraft2019_09;
  if (uri.find("2020-12") != std::string::npos) return Draft::kDraft2020_12;
  return fallback;
}

// Keywords a draft does not define are annotations in schemas of that
// draft (validators ignore unknown keywords): a draft-04 schema's `const`
// or `if` asserts nothing.
bool defined_in(const std::string& keyword, Draft draft) {
  static const std::set<std::string> since6 = {"const", "contains", "propertyNames"};
  static const std::set<std::string> since7 = {"if", "then", "else"};
  static const std::set<std::string> since2019 = {
      "dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems",
      "minContains",       "maxContains",      "$recursiveRef"};
  static const std::set<std::string> since2020 = {"prefixItems", "$dynamicRef"};
  const int level = draft == Draft::kDraft4         ? 4
                    : draft == Draft::kDraft6       ? 6
                    : draft == Draft::kDraft7       ? 7
                    : draft == Draft::kDraft2019_09 ? 2019
                                                    : 2020;
  if (since6.count(keyword)) return level >= 6;
  if (since7.count(keyword)) return level >= 7;
  if (since2019.count(keyword)) return level >= 2019;
  if (since2020.count(keyword)) return level >= 2020;
  return true;
}

std::optional<std::string> too_deep_at(std::string_view text, uint32_t limit);

// Parses JSON text into an ordered_json through nlohmann's SAX interface:
// the same tree as Json::parse, built faster (members are collected and
// moved into each object once, instead of inserted one by one with a
// duplicate search and copies of the keys on growth). A key written twice
// keeps its first position and its last value, as Json::parse does.
// Throws std::invalid_argument with the parser's message on bad JSON.
class TreeBuilder {
 public:
  bool null() { return put(Json(nullptr)); }
  bool boolean(bool value) { return put(Json(value)); }
  bool number_integer(Json::number_integer_t value) { return put(Json(value)); }
  bool number_unsigned(Json::number_unsigned_t value) { return put(Json(value)); }
  bool number_float(Json::number_float_t value, const std::string&) { return put(Json(value)); }
  bool string(std::string& value) { return put(Json(std::move(value))); }
  bool binary(Json::binary_t&) { return false; }
  bool start_object(std::size_t) {
    frames_.emplace_back();
    frames_.back().object = true;
    return true;
  }
  bool key(std::string& name) {
    frames_.back().keys.push_back(std::move(name));
    return true;
  }
  bool end_object() {
    Frame frame = std::move(frames_.back());
    frames_.pop_back();
    Json object(Json::value_t::object);
    // The vector under the ordered map (its operator[] takes keys).
    Json::object_t::Container& members = object.get_ref<Json::object_t&>();
    members.reserve(frame.keys.size());
    const size_t n = frame.keys.size();
    std::unordered_map<std::string_view, size_t> seen;
    for (size_t i = 0; i < n; ++i) {
      // Duplicates are rare: looked for pairwise in small objects.
      size_t existing = SIZE_MAX;
      if (n <= 16) {
        for (size_t j = 0; j < members.size(); ++j)
          if (members[j].first == frame.keys[i]) existing = j;
      } else {
        auto found = seen.find(frame.keys[i]);
        if (found != seen.end()) existing = found->second;
      }
      if (existing != SIZE_MAX) {
        members[existing].second = std::move(frame.values[i]);
        continue;
      }
      members.emplace_back(std::move(frame.keys[i]), std::move(frame.values[i]));
      if (n > 16) seen.emplace(members.back().first, members.size() - 1);
    }
    return put(std::move(object));
  }
  bool start_array(std::size_t) {
    frames_.emplace_back();
    return true;
  }
  bool end_array() {
    Frame frame = std::move(frames_.back());
    frames_.pop_back();
    Json array(Json::value_t::array);
    array.get_ref<Json::array_t&>() = std::move(frame.values);
    return put(std::move(array));
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) {
    error_ = error.what();
    return false;
  }

  static Json parse(std::string_view text) {
    TreeBuilder builder;
    if (!Json::sax_parse(text.begin(), text.end(), &builder) || !builder.done_)
      throw std::invalid_argument(builder.error_.empty() ? "incomplete JSON" : builder.error_);
    return std::move(builder.root_);
  }

 private:
  struct Frame {
    bool object = false;
    std::vector<std::string> keys;
    std::vector<Json> values;
  };
  bool put(Json value) {
    if (frames_.empty()) {
      root_ = std::move(value);
      done_ = true;
    } else {
      frames_.back().values.push_back(std::move(value));
    }
    return true;
  }
  std::vector<Frame> frames_;
  // From nullptr, the noexcept constructor: TreeBuilder() stays noexcept.
  Json root_{nullptr};
  bool done_ = false;
  std::string error_;
};

// The schema and the other documents its references reach, indexed: where
// each node is, its base URI and draft, the resources ($id) and anchors.
//
// $dynamicRef: when an anchor name is defined by more than one resource,
// what a $dynamicRef to it means depends on the resources that evaluation
// went through to get there (the outermost one that defines the name
// wins). The bindings that matter, name -> anchor node, form a "scope";
// each resource is then converted as a copy per scope it is reached in,
// so that a copy's nodes (and the rules made from them) carry their
// scope. Copies are made only for such documents, and bounded by
// max_dynamic_scopes.
class Document {
 public:
  Document(Json root, const JsonSchemaOptions& options)
      : root_(std::move(root)), options_(options) {}

  void index() {
    Draft draft = options_.default_draft;
    if (root_.is_object()) {
      auto schema = root_.find("$schema");
      if (schema != root_.end() && schema->is_string())
        draft = draft_from_uri(schema->get<std::string>(), draft);
    }
    walk(root_, "", "", draft, 0, &root_);
    if (resources_.find("") == resources_.end()) resources_[""] = &root_;
    roots_.push_back(&root_);
    load_referenced_documents();
    for (const auto& [name, count] : dynamic_anchors_)
      if (count > 1) dynamic_ = true;
    if (dynamic_) index_resources();
  }

  // Where conversion starts: the root, or its copy for the scope of the
  // root resource.
  const Json* start() {
    if (!dynamic_) return &root_;
    return copy_of(&root_, extend(scope_id({}), &root_), "");
  }

  const NodeInfo& info(const Json* node) const {
    static const NodeInfo kSynthetic;
    auto it = info_.find(node);
    return it == info_.end() ? kSynthetic : it->second;
  }

  // Resolves a reference written in `from` ($ref, $dynamicRef or
  // $recursiveRef); refuses documents that were not supplied.
  const Json* resolve(const Json* from, const std::string& keyword, const std::string& ref) {
    const Json* target = resolve_static(from, keyword, ref);
    if (!dynamic_) return target;
    const NodeInfo& where = info(from);
    if (where.scope < 0)
      refuse(keyword, where.pointer, "reference from a schema outside the dynamic scopes");
    if (keyword == "$dynamicRef") {
      size_t hash = ref.find('#');
      std::string name = hash == std::string::npos ? "" : percent_decode(ref.substr(hash + 1));
      auto anchor = target->is_object() ? target->find("$dynamicAnchor") : target->end();
      if (!name.empty() && name[0] != '/' && anchor != target->end() && anchor->is_string() &&
          anchor->get<std::string>() == name) {
        const auto& bindings = scopes_[where.scope];
        auto bound = bindings.find(name);
        if (bound != bindings.end()) target = bound->second;
      }
    }
    return copy_of(target, extend(where.scope, resource_of_.at(target)), where.pointer);
  }

  bool dynamic_scopes() const { return dynamic_; }
  bool has_unevaluated() const { return has_unevaluated_; }
  bool has_recursive_anchor() const { return has_recursive_anchor_; }

 private:
  const Json* resolve_static(const Json* from, const std::string& keyword, const std::string& ref) {
    const NodeInfo& where = info(from);
    std::string target = resolve_uri(where.base, ref);
    size_t hash = target.find('#');
    std::string document = target.substr(0, hash);
    std::string fragment = hash == std::string::npos ? "" : percent_decode(target.substr(hash + 1));
    auto resource = resources_.find(document);
    if (resource == resources_.end()) {
      auto failed = unavailable_.find(document);
      refuse(keyword, where.pointer,
             "reference \"" + ref + "\" leaves the document (" + target + ")" +
                 (failed != unavailable_.end() && !failed->second.empty()
                      ? ": " + failed->second
                      : std::string(" and no such document was supplied")));
    }
    if (fragment.empty()) return resource->second;
    if (fragment[0] == '/') {
      const Json* node = resource->second;
      NodeInfo node_info = info(node);
      size_t start = 1;
      while (true) {
        size_t end = fragment.find('/', start);
        std::string token =
            fragment.substr(start, end == std::string::npos ? std::string::npos : end - start);
        std::string unescaped;
        for (size_t i = 0; i < token.size(); ++i) {
          if (token[i] == '~' && i + 1 < token.size() &&
              (token[i + 1] == '0' || token[i + 1] == '1')) {
            unescaped.push_back(token[i + 1] == '0' ? '~' : '/');
            ++i;
          } else {
            unescaped.push_back(token[i]);
          }
        }
        if (node->is_object()) {
          auto it = node->find(unescaped);
          if (it == node->end())
            refuse(keyword, where.pointer, "reference \"" + ref + "\" points nowhere");
          node = &*it;
        } else if (node->is_array()) {
          size_t index = 0;
          if (unescaped.empty() || unescaped.find_first_not_of("0123456789") != std::string::npos)
            refuse(keyword, where.pointer, "reference \"" + ref + "\" points nowhere");
          index = std::stoul(unescaped);
          if (index >= node->size())
            refuse(keyword, where.pointer, "reference \"" + ref + "\" points nowhere");
          node = &(*node)[index];
        } else {
          refuse(keyword, where.pointer, "reference \"" + ref + "\" points nowhere");
        }
        node_info.pointer += "/" + escape_pointer_token(unescaped);
        if (info_.find(node) != info_.end()) node_info = info_.at(node);
        if (end == std::string::npos) break;
        start = end + 1;
      }
      if (info_.find(node) == info_.end()) info_[node] = node_info;
      return node;
    }
    auto anchor = resources_.find(document + "#" + fragment);
    if (anchor == resources_.end())
      refuse(keyword, where.pointer, "reference \"" + ref + "\": no such anchor");
    return anchor->second;
  }

  // Reads, before conversion, every document that a reference in the
  // schema (or in a document read so far) names and that is not already
  // known: from options.documents, else options.fetch_document. A document
  // that cannot be had is remembered with the reason; only following a
  // reference into it refuses.
  void load_referenced_documents() {
    for (size_t i = 0; i < references_.size(); ++i) {
      const auto [node, keyword] = references_[i];
      auto value = node->find(keyword);
      if (value == node->end() || !value->is_string()) continue;
      const NodeInfo& where = info(node);
      std::string target = resolve_uri(where.base, value->get<std::string>());
      std::string uri = target.substr(0, target.find('#'));
      if (resources_.count(uri) || unavailable_.count(uri)) continue;
      std::optional<std::string> text;
      auto supplied = options_.documents.find(uri);
      if (supplied != options_.documents.end())
        text = supplied->second;
      else if (options_.fetch_document)
        text = options_.fetch_document(uri);
      if (!text) {
        unavailable_[uri] = "";
        continue;
      }
      if (documents_.size() >= options_.max_documents)
        refuse(keyword, where.pointer,
               "reference to \"" + uri + "\" needs more than max_documents (" +
                   std::to_string(options_.max_documents) + ") other documents",
               ErrorCode::kLimitExceeded);
      if (too_deep_at(*text, options_.max_schema_depth * 2 + 2)) {
        unavailable_[uri] = "the document nests deeper than max_schema_depth (" +
                            std::to_string(options_.max_schema_depth) + ")";
        continue;
      }
      Json parsed;
      try {
        parsed = TreeBuilder::parse(*text);
      } catch (const std::exception& e) {
        unavailable_[uri] = std::string("the document is not valid JSON: ") + e.what();
        continue;
      }
      if (!parsed.is_object() && !parsed.is_boolean()) {
        unavailable_[uri] = "the document is not a schema (an object or a boolean)";
        continue;
      }
      documents_.push_back(std::move(parsed));
      const Json& document = documents_.back();
      Draft draft = where.draft;
      if (document.is_object()) {
        auto schema = document.find("$schema");
        if (schema != document.end() && schema->is_string())
          draft = draft_from_uri(schema->get<std::string>(), draft);
      }
      resources_[uri] = &document;
      roots_.push_back(&document);
      walk(document, uri + "#", uri, draft, 0, &document);
    }
  }

  void walk(const Json& node, const std::string& pointer, std::string base, Draft draft,
            uint32_t depth, const Json* resource) {
    if (depth > options_.max_schema_depth)
      fail(ErrorCode::kLimitExceeded, "schema nested deeper than max_schema_depth (" +
                                          std::to_string(options_.max_schema_depth) + ") at " +
                                          display_pointer(pointer));
    if (!node.is_object()) {
      info_[&node] = NodeInfo{pointer, base, draft};
      return;
    }
    auto schema = node.find("$schema");
    if (schema != node.end() && schema->is_string())
      draft = draft_from_uri(schema->get<std::string>(), draft);
    bool ref_hides_siblings = legacy(draft) && node.contains("$ref");
    auto id = node.find(draft == Draft::kDraft4 ? "id" : "$id");
    if (id != node.end() && id->is_string() && !ref_hides_siblings) {
      std::string text = id->get<std::string>();
      if (legacy(draft) && !text.empty() && text[0] == '#') {
        resources_[base.substr(0, base.find('#')) + text] = &node;
      } else {
        base = resolve_uri(base, text);
        std::string document = base.substr(0, base.find('#'));
        base = document;
        resources_[document] = &node;
        resource_roots_.insert(&node);
        resource = &node;
      }
    }
    info_[&node] = NodeInfo{pointer, base, draft};
    for (const char* anchor_keyword : {"$anchor", "$dynamicAnchor"}) {
      auto anchor = node.find(anchor_keyword);
      if (anchor != node.end() && anchor->is_string()) {
        resources_[base + "#" + anchor->get<std::string>()] = &node;
        if (std::string(anchor_keyword) == "$dynamicAnchor") {
          ++dynamic_anchors_[anchor->get<std::string>()];
          resource_anchors_[resource].emplace_back(anchor->get<std::string>(), &node);
        }
      }
    }
    for (const char* reference : {"$ref", "$dynamicRef", "$recursiveRef"})
      if (node.contains(reference)) references_.emplace_back(&node, reference);
    if (node.contains("unevaluatedItems") || node.contains("unevaluatedProperties"))
      has_unevaluated_ = true;
    auto recursive = node.find("$recursiveAnchor");
    if (recursive != node.end() && recursive->is_boolean() && recursive->get<bool>())
      has_recursive_anchor_ = true;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string& key = it.key();
      const bool map =
          schema_map_keywords().count(key) || (key == "dependencies" && it->is_object());
      const bool array = !map && schema_array_keywords().count(key) && it->is_array();
      if (!map && !array && !schema_keywords().count(key)) continue;
      std::string child_pointer = pointer + "/" + escape_pointer_token(key);
      if (map) {
        if (!it->is_object()) continue;
        info_[&*it] = NodeInfo{child_pointer, base, draft};
        for (auto member = it->begin(); member != it->end(); ++member) {
          if (key == "dependencies" && member->is_array()) continue;
          walk(*member, child_pointer + "/" + escape_pointer_token(member.key()), base, draft,
               depth + 1, resource);
        }
      } else if (array) {
        info_[&*it] = NodeInfo{child_pointer, base, draft};
        for (size_t i = 0; i < it->size(); ++i)
          walk((*it)[i], child_pointer + "/" + std::to_string(i), base, draft, depth + 1, resource);
      } else if (schema_keywords().count(key)) {
        walk(*it, child_pointer, base, draft, depth + 1, resource);
      }
    }
  }

  // --- dynamic scopes ---------------------------------------------------

  using Bindings = std::map<std::string, const Json*>;

  // The resource of every node of every document (nodes outside schema
  // positions too: a reference may point anywhere).
  void index_resources() {
    for (const Json* root : roots_) {
      std::vector<std::pair<const Json*, const Json*>> stack = {{root, root}};
      while (!stack.empty()) {
        auto [node, resource] = stack.back();
        stack.pop_back();
        if (resource_roots_.count(node)) resource = node;
        resource_of_[node] = resource;
        if (node->is_object() || node->is_array())
          for (const Json& child : *node) stack.emplace_back(&child, resource);
      }
    }
  }

  int scope_id(const Bindings& bindings) {
    auto it = scope_ids_.find(bindings);
    if (it != scope_ids_.end()) return it->second;
    scopes_.push_back(bindings);
    return scope_ids_[bindings] = static_cast<int>(scopes_.size()) - 1;
  }

  // The scope after entering `resource`: its dynamic anchors bind the names
  // that no outer resource bound.
  int extend(int scope, const Json* resource) {
    auto anchors = resource_anchors_.find(resource);
    if (anchors == resource_anchors_.end()) return scope;
    Bindings bindings = scopes_[scope];
    for (const auto& [name, node] : anchors->second) bindings.emplace(name, node);
    return scope_id(bindings);
  }

  // The copy of `node` (a node of a document) seen in `scope`, made with
  // the copy of its whole resource on first use.
  const Json* copy_of(const Json* node, int scope, const std::string& pointer) {
    auto found = copies_.find({node, scope});
    if (found == copies_.end()) {
      const Json* resource = resource_of_.at(node);
      if (copy_count_ >= options_.max_dynamic_scopes)
        refuse("$dynamicRef", pointer,
               "needs more than max_dynamic_scopes (" +
                   std::to_string(options_.max_dynamic_scopes) + ") copies of schema resources",
               ErrorCode::kLimitExceeded);
      ++copy_count_;
      copied_.push_back(*resource);
      struct Pair {
        const Json* original;
        const Json* copy;
        int scope;
      };
      std::vector<Pair> stack = {{resource, &copied_.back(), scope}};
      while (!stack.empty()) {
        Pair p = stack.back();
        stack.pop_back();
        // Copies of large resources count too, not only their number.
        if (++copied_nodes_ > kMaxCopiedNodes)
          refuse("$dynamicRef", pointer,
                 "the copies of schema resources for max_dynamic_scopes (" +
                     std::to_string(options_.max_dynamic_scopes) + ") pass " +
                     std::to_string(kMaxCopiedNodes) + " JSON values",
                 ErrorCode::kLimitExceeded);
        if (p.original != resource && resource_roots_.count(p.original))
          p.scope = extend(p.scope, p.original);
        copies_.emplace(std::make_pair(p.original, p.scope), p.copy);
        auto known = info_.find(p.original);
        if (known != info_.end()) {
          NodeInfo copy_info = known->second;
          copy_info.scope = p.scope;
          info_[p.copy] = copy_info;
        }
        if (p.original->is_object()) {
          auto o = p.original->begin();
          auto c = p.copy->begin();
          for (; o != p.original->end(); ++o, ++c) stack.push_back({&*o, &*c, p.scope});
        } else if (p.original->is_array()) {
          for (size_t i = 0; i < p.original->size(); ++i)
            stack.push_back({&(*p.original)[i], &(*p.copy)[i], p.scope});
        }
      }
      found = copies_.find({node, scope});
    }
    const Json* copy = found->second;
    if (info_.find(copy) == info_.end()) {
      NodeInfo copy_info = info(node);
      copy_info.scope = scope;
      info_[copy] = copy_info;
    }
    return copy;
  }

  Json root_;
  const JsonSchemaOptions& options_;
  std::deque<Json> documents_;                                // other documents (stable addresses)
  std::vector<const Json*> roots_;                            // the schema and the other documents
  std::unordered_map<std::string, std::string> unavailable_;  // URI -> why (may be empty)
  std::vector<std::pair<const Json*, const char*>> references_;
  std::unordered_map<const Json*, NodeInfo> info_;
  std::unordered_map<std::string, const Json*> resources_;
  std::unordered_set<const Json*> resource_roots_;  // nodes with a $id (not an anchor)
  std::unordered_map<const Json*, std::vector<std::pair<std::string, const Json*>>>
      resource_anchors_;  // resource -> its $dynamicAnchors
  std::unordered_map<std::string, int> dynamic_anchors_;
  bool has_recursive_anchor_ = false;
  bool dynamic_ = false;
  bool has_unevaluated_ = false;
  std::unordered_map<const Json*, const Json*> resource_of_;
  std::vector<Bindings> scopes_;
  std::map<Bindings, int> scope_ids_;
  std::map<std::pair<const Json*, int>, const Json*> copies_;
  std::deque<Json> copied_;
  uint32_t copy_count_ = 0;
  static constexpr size_t kMaxCopiedNodes = size_t{1} << 20;
  size_t copied_nodes_ = 0;
};

// ---------------------------------------------------------------------------
// The converter: normalization, intersection, negation, validation, emission.

class Converter {
 public:
  Converter(Document& document, const JsonSchemaOptions& options,
            std::vector<std::string>* warnings)
      : doc_(document), options_(options), warnings_(warnings) {}

  std::string convert();

 private:
  // --- normalization -------------------------------------------------------
  const Disj& normalize(const Sub& sub);
  const Disj& normalize_node(const Json* node);
  // A Sub keeps its nodes sorted by address (a set); what is built from
  // them follows JSON pointer order, so the grammar does not depend on
  // where the heap put the nodes.
  bool before_in_document(const Json* a, const Json* b) const;  // JSON pointer, then scope
  std::vector<const Json*> in_document_order(std::vector<const Json*> nodes) const;
  std::vector<std::vector<const Json*>> in_document_order(
      const std::vector<std::vector<const Json*>>& groups) const;
  std::vector<Sub> negate_sub(const Sub& sub) const;
  Disj normalize_object(const Json* node);
  void apply_keyword(Disj& d, const Json* node, const std::string& key, const Json& value,
                     const NodeInfo& where);
  void apply_unevaluated(Disj& d, const Json* node, const NodeInfo& where);
  Disj intersect(const Disj& a, const Disj& b, const std::string& pointer);
  std::optional<Clause> intersect_clauses(const Clause& a, const Clause& b);
  std::optional<Disj> negate(const Disj& d);
  Sub property_schema(const Clause& clause, const std::string& name);
  static constexpr int kMaxDisjointDepth = 8;
  bool disjoint(const Disj& a, const Disj& b, int depth = 0);
  bool objects_disjoint_by_required(const Clause& x, const Clause& y, int depth);
  void with_lenience(const std::string& keyword, const std::function<void()>& action);
  void warn(const std::string& message) {
    if (warnings_) warnings_->push_back(message);
  }

  // --- validation of concrete values ---------------------------------------
  bool accepts(const Sub& sub, const Json& value);
  bool clause_accepts(const Clause& clause, const Json& value, bool check_values);

  // --- emission ------------------------------------------------------------
  std::string rule_for(const Sub& sub, const std::string& hint, uint32_t depth);
  std::string clause_expression(const Clause& clause, const std::string& own_rule,
                                const std::string& hint, uint32_t depth);
  std::string emit_clause(const Clause& clause, const std::string& hint, uint32_t depth);
  std::string emit_clause_once(const Clause& clause, const std::string& hint, uint32_t depth);
  std::string emit_number(const Clause& clause, const std::string& hint);
  std::string emit_string(const Clause& clause, const std::string& hint);
  std::string emit_string_automaton(const Clause& clause, std::optional<uint64_t> max_length,
                                    const std::string& hint);
  internal::CharDfa string_dfa(const Clause& clause, std::optional<uint64_t> max_length);
  // The rules of a string automaton: the JSON strings it leads to a label
  // passing `keep`, closing quote included (without the opening one).
  std::string dfa_rules(const internal::CharDfa& dfa, const std::function<bool(uint32_t)>& keep,
                        const std::string& hint);
  std::string other_members(const Clause& clause, const std::vector<std::string>& declared,
                            const std::string& hint, uint32_t depth);
  std::string emit_array(const Clause& clause, const std::string& hint, uint32_t depth);
  std::string emit_contains_all(const Clause& clause, const std::string& hint, uint32_t depth);
  std::string emit_object(const Clause& clause, const std::string& hint, uint32_t depth);
  std::string emit_value(const Json& value, uint32_t depth);
  std::string emit_string_key_rule(const Sub& names, const std::string& hint);
  std::string key_not_in(const std::vector<std::string>& names, const std::string& hint);
  std::string key_not_in_uncached(const std::vector<std::string>& names, const std::string& hint);

  struct Member {
    std::string text;  // key, colon and value
    bool required = false;
  };
  std::string emit_members(const std::vector<Member>& members, const std::string& additional,
                           uint64_t min_count, std::optional<uint64_t> max_count,
                           const std::string& hint, uint32_t depth, const std::string& pointer);
  std::string wrap_container(const std::string& open, const std::string& close,
                             const std::string& nonempty_body, bool allow_empty, uint32_t depth);

  std::string add_rule(const std::string& hint, const std::string& body);
  std::string unshared_rule(const std::string& hint, const std::string& body);
  std::string unique_name(const std::string& hint);
  void define_rule(const std::string& name, const std::string& body);
  std::string base_rule(const std::string& name);
  std::string char_body();
  std::string counted(const std::string& item, uint64_t lo, std::optional<uint64_t> hi,
                      const std::string& hint);
  std::string inner(uint32_t depth) const;
  std::string after() const;
  std::string colon() const;
  bool indented() const { return options_.whitespace == JsonSchemaOptions::Whitespace::kIndented; }
  internal::RegexLimits regex_limits() const {
    internal::RegexLimits limits;
    limits.max_repeat = options_.max_repeat;
    limits.max_pattern_length = options_.max_pattern_length;
    return limits;
  }
  // Parses a pattern of the schema; refuses (naming `keyword`) what the
  // translator cannot take, and patterns over max_pattern_length.
  internal::RegexNode parse_pattern(const std::string& text, const std::string& keyword,
                                    const std::string& pointer) {
    if (text.size() > options_.max_pattern_length)
      refuse(keyword, pointer,
             "pattern of " + std::to_string(text.size()) + " bytes is longer than " +
                 "max_pattern_length (" + std::to_string(options_.max_pattern_length) + ")",
             ErrorCode::kLimitExceeded);
    const Result<internal::RegexNode>& parsed = parsed_pattern(text);
    if (!parsed.ok()) refuse(keyword, pointer, parsed.status().message(), parsed.status().code());
    return *parsed;
  }
  // parse_ecma_regex(text, regex_limits()), once per pattern: a pattern is
  // checked where it is read and parsed again for its grammar or automaton,
  // and the parse compiles it with RE2 (milliseconds for a long pattern).
  const Result<internal::RegexNode>& parsed_pattern(const std::string& text) {
    auto it = parsed_patterns_.find(text);
    if (it == parsed_patterns_.end()) {
      const internal::RegexCheck check = format_patterns_.count(text) != 0
                                             ? internal::RegexCheck::kTrusted
                                             : internal::RegexCheck::kWithRe2;
      it = parsed_patterns_.emplace(text, internal::parse_ecma_regex(text, regex_limits(), check))
               .first;
    }
    return it->second;
  }
  // internal::format_pattern(format), its pattern noted as one of ours (no
  // RE2 cross-check when it is parsed: see RegexCheck).
  internal::FormatLookup lookup_format(const std::string& format) {
    internal::FormatLookup lookup = internal::format_pattern(format);
    if (lookup.supported) format_patterns_.insert(lookup.pattern);
    return lookup;
  }
  // Nesting followed through references: normalize_node and rule_for
  // recurse once per level, and a chain of $refs can be as long as the
  // document is large, so it is bounded like the document's own nesting.
  struct Nesting {
    Converter& converter;
    Nesting(Converter& c, const std::string& pointer) : converter(c) {
      if (++converter.nesting_ > converter.options_.max_schema_depth)
        fail(ErrorCode::kLimitExceeded, "schema nested deeper than max_schema_depth (" +
                                            std::to_string(converter.options_.max_schema_depth) +
                                            ") through references at " + display_pointer(pointer));
    }
    ~Nesting() { --converter.nesting_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
  };
  void count_reference(const std::string& keyword, const std::string& pointer) {
    if (++references_ > options_.max_ref_expansions)
      refuse(keyword, pointer,
             "more than max_ref_expansions (" + std::to_string(options_.max_ref_expansions) +
                 ") references followed",
             ErrorCode::kLimitExceeded);
  }
  // Bounds the time spent on string automata (a disjunction of negated
  // pattern unions can ask for thousands of them).
  void charge_automaton(size_t states, const std::string& keyword, const std::string& pointer) {
    constexpr size_t kAutomatonWork = size_t{1} << 18;
    automaton_work_ += states;
    if (automaton_work_ > kAutomatonWork)
      refuse(keyword, pointer,
             "the string constraints need more than " + std::to_string(kAutomatonWork) +
                 " automaton states in all");
  }
  void check_repeat(uint64_t count, const std::string& keyword, const std::string& pointer) const {
    if (count > options_.max_repeat)
      refuse(keyword, pointer,
             std::to_string(count) + " is above max_repeat (" +
                 std::to_string(options_.max_repeat) + ")",
             ErrorCode::kLimitExceeded);
  }

  Document& doc_;
  const JsonSchemaOptions& options_;
  std::vector<std::string>* warnings_;

  std::unordered_map<const Json*, Disj> node_memo_;
  std::unordered_set<const Json*> in_progress_;
  std::unordered_map<std::string, Disj> sub_memo_;

  std::vector<std::pair<std::string, std::string>> rules_;
  std::unordered_set<std::string> names_;
  // The last suffix unique_name() gave each base name, so that naming n
  // rules after one hint costs O(n), not O(n^2) probes.
  std::unordered_map<std::string, int> last_suffix_;
  std::unordered_map<std::string, std::string> rule_memo_;
  std::unordered_map<std::string, std::string> text_memo_;    // rule body -> name
  std::unordered_map<std::string, std::string> clause_memo_;  // clause_key -> expression
  std::map<std::vector<std::string>, std::string> key_not_in_memo_;
  size_t grammar_bytes_ = 0;
  std::set<std::string> base_rules_;
  std::string key_leave_rule_;
  std::string key_tail_rule_;
  std::unordered_set<std::string> handed_out_;  // rule names returned by the memos
  std::unordered_map<std::string, std::string> other_ascii_memo_;  // trie children -> class
  size_t automaton_work_ = 0;  // states built for string constraints so far
  uint32_t nesting_ = 0;       // active normalize_node/rule_for frames
  uint64_t references_ = 0;    // references followed so far
  std::string emitting_;       // pointer of the schema being emitted, for size errors
  std::unordered_map<std::string, Result<internal::RegexNode>> parsed_patterns_;
  std::unordered_set<std::string> format_patterns_;  // see lookup_format
  internal::EcmaRegexSearcher pattern_searcher_;     // RE2 of each pattern, for schema-time checks
};

// ---------------------------------------------------------------------------
// Normalization.

void Converter::with_lenience(const std::string& keyword, const std::function<void()>& action) {
  try {
    action();
  } catch (Refusal& refusal) {
    if (!options_.lenient || refusal.status.code() != ErrorCode::kUnsupported) throw;
    warn("dropped: " + refusal.status.message());
    (void)keyword;
  }
}

const Disj& Converter::normalize(const Sub& sub) {
  // One schema: its own normal form, without a copy.
  if (sub.nodes.size() == 1 && sub.negated.empty() && sub.any_of.empty())
    return normalize_node(sub.nodes[0]);
  std::string key = sub_key(sub);
  auto it = sub_memo_.find(key);
  if (it != sub_memo_.end()) return it->second;
  Disj result = all_types();
  for (const Json* node : in_document_order(sub.nodes))
    result = intersect(result, normalize_node(node), doc_.info(node).pointer);
  for (const Json* node : in_document_order(sub.negated)) {
    std::optional<Disj> negated = negate(normalize_node(node));
    if (!negated) refuse("not", doc_.info(node).pointer, "cannot negate this schema exactly");
    result = intersect(result, *negated, doc_.info(node).pointer);
  }
  for (const auto& group : in_document_order(sub.any_of)) {
    Disj either;
    for (const Json* node : group) {
      const Disj& one = normalize_node(node);
      either.insert(either.end(), one.begin(), one.end());
    }
    result = intersect(result, either, group.empty() ? "" : doc_.info(group[0]).pointer);
  }
  return sub_memo_.emplace(key, std::move(result)).first->second;
}

const Disj& Converter::normalize_node(const Json* node) {
  auto it = node_memo_.find(node);
  if (it != node_memo_.end()) return it->second;
  if (in_progress_.count(node)) refuse("$ref", doc_.info(node).pointer, kSelfReference);
  Nesting nesting(*this, doc_.info(node).pointer);
  in_progress_.insert(node);
  struct Leave {
    std::unordered_set<const Json*>& set;
    const Json* node;
    ~Leave() { set.erase(node); }
  } leave{in_progress_, node};
  Disj result;
  if (node->is_boolean()) {
    if (node->get<bool>()) result = all_types();
  } else if (node->is_object()) {
    result = normalize_object(node);
  } else {
    fail(ErrorCode::kSyntax, "schema at " + display_pointer(doc_.info(node).pointer) +
                                 " must be an object or a boolean");
  }
  return node_memo_.emplace(node, std::move(result)).first->second;
}

uint64_t non_negative_integer(const Json& value, const std::string& keyword,
                              const std::string& pointer) {
  auto number = value.is_number() ? number_of(value) : std::nullopt;
  if (!number || number->negative || !number->is_integer())
    refuse(keyword, pointer, "must be a non-negative integer", ErrorCode::kSyntax);
  if (number->int_digits.size() > 18) return UINT64_MAX / 4;
  return number->int_digits.empty() ? 0 : std::stoull(number->int_digits);
}

Disj Converter::normalize_object(const Json* node) {
  const NodeInfo& where = doc_.info(node);
  // draft-07: $ref replaces the whole schema.
  if (legacy(where.draft) && node->contains("$ref")) {
    const Json& ref = node->at("$ref");
    if (!ref.is_string()) refuse("$ref", where.pointer, "must be a string", ErrorCode::kSyntax);
    count_reference("$ref", where.pointer);
    const Json* target = doc_.resolve(node, "$ref", ref.get<std::string>());
    return normalize_node(target);
  }
  // Local keywords form one conjunction (they see each other, e.g.
  // additionalProperties next to properties); applicators are intersected
  // with it in document order, so that declared properties keep the order
  // in which the schema lists them ($ref first when written first).
  // A well-formed `type` narrows the clauses from the start (the keyword
  // itself still checks and applies below).
  Disj local;
  {
    auto type = node->find("type");
    std::set<JType> types;
    auto add = [&](const Json& name) {
      static const std::map<std::string, JType> kTypes = {
          {"null", JType::kNull},      {"boolean", JType::kBoolean}, {"number", JType::kNumber},
          {"integer", JType::kNumber}, {"string", JType::kString},   {"array", JType::kArray},
          {"object", JType::kObject}};
      auto known = name.is_string() ? kTypes.find(name.get<std::string>()) : kTypes.end();
      if (known == kTypes.end()) return false;
      types.insert(known->second);
      return true;
    };
    bool valid = type != node->end() && (type->is_string() || type->is_array());
    if (valid && type->is_string()) valid = add(*type);
    if (valid && type->is_array())
      for (const Json& name : *type) valid = valid && add(name);
    for (JType t : kAllTypes) {
      if (valid && !types.count(t)) continue;
      local.emplace_back();
      local.back().type = t;
    }
  }
  static const std::set<std::string> applicators = {"allOf",
                                                    "anyOf",
                                                    "oneOf",
                                                    "not",
                                                    "if",
                                                    "$ref",
                                                    "$dynamicRef",
                                                    "$recursiveRef",
                                                    "dependentSchemas",
                                                    "dependencies",
                                                    "dependentRequired"};
  static const std::set<std::string> identifiers = {
      "$schema", "$id",         "$anchor",     "$dynamicAnchor", "$recursiveAnchor",
      "$defs",   "definitions", "$comment",    "title",          "description",
      "default", "examples",    "$vocabulary", "then",           "else"};
  for (auto it = node->begin(); it != node->end(); ++it) {
    const std::string& key = it.key();
    if (applicators.count(key) || !defined_in(key, where.draft)) continue;
    with_lenience(key, [&] { apply_keyword(local, node, key, it.value(), where); });
  }
  // Object keywords that read their siblings.
  with_lenience("properties", [&] {
    for (Clause& clause : local) {
      if (clause.type != JType::kObject) continue;
      auto properties = node->find("properties");
      if (properties != node->end()) {
        if (!properties->is_object())
          refuse("properties", where.pointer, "must be an object", ErrorCode::kSyntax);
        for (auto p = properties->begin(); p != properties->end(); ++p) {
          clause.properties.emplace_back(p.key(), Sub::of(&p.value()));
          clause.evaluated.insert(p.key());
        }
      }
      auto patterns = node->find("patternProperties");
      if (patterns != node->end()) {
        if (!patterns->is_object())
          refuse("patternProperties", where.pointer, "must be an object", ErrorCode::kSyntax);
        for (auto p = patterns->begin(); p != patterns->end(); ++p) {
          parse_pattern(p.key(), "patternProperties", where.pointer);
          clause.pattern_properties.emplace_back(
              Sourced{p.key(), where.pointer + "/patternProperties"}, Sub::of(&p.value()));
          for (auto& [name, sub] : clause.properties) {
            auto match = pattern_searcher_.search(p.key(), name);
            if (!match.ok()) refuse("patternProperties", where.pointer, match.status().message());
            if (*match) sub = conj(sub, Sub::of(&p.value()));
          }
        }
      }
      auto additional = node->find("additionalProperties");
      if (additional != node->end()) {
        clause.additional = Sub::of(&additional.value());
        clause.properties_evaluated = true;
      } else if (!options_.additional_properties_default && properties != node->end() &&
                 patterns == node->end() && !node->contains("unevaluatedProperties")) {
        clause.additional = Sub::never();
      }
    }
  });
  // Array items, which also read their siblings.
  with_lenience("items", [&] {
    for (Clause& clause : local) {
      if (clause.type != JType::kArray) continue;
      auto prefix = node->find("prefixItems");
      auto items = node->find("items");
      bool legacy_items_array = items != node->end() && items->is_array();
      if (prefix != node->end() && !legacy(where.draft) && where.draft != Draft::kDraft2019_09) {
        if (!prefix->is_array())
          refuse("prefixItems", where.pointer, "must be an array", ErrorCode::kSyntax);
        for (const Json& item : *prefix) clause.prefix.push_back(Sub::of(&item));
        clause.evaluated_prefix = clause.prefix.size();
      }
      if (legacy_items_array) {
        for (const Json& item : *items) clause.prefix.push_back(Sub::of(&item));
        clause.evaluated_prefix = clause.prefix.size();
        auto additional = node->find("additionalItems");
        if (additional != node->end()) {
          clause.items = Sub::of(&additional.value());
          clause.items_evaluated = true;
        }
      } else if (items != node->end()) {
        clause.items = Sub::of(&items.value());
        clause.items_evaluated = true;
      }
    }
  });
  Disj d = all_types();
  bool local_applied = false;
  for (auto it = node->begin(); it != node->end(); ++it) {
    const std::string& key = it.key();
    const Json& value = it.value();
    if (!applicators.count(key) || !defined_in(key, where.draft)) {
      if (!local_applied && !identifiers.count(key)) {
        d = intersect(d, local, where.pointer);
        local_applied = true;
      }
      continue;
    }
    const std::string pointer = where.pointer + "/" + escape_pointer_token(key);
    with_lenience(key, [&] {
      if (key == "allOf" || key == "anyOf" || key == "oneOf") {
        if (!value.is_array() || value.empty())
          refuse(key, where.pointer, "must be a non-empty array", ErrorCode::kSyntax);
        if (key == "allOf") {
          for (const Json& branch : value) d = intersect(d, normalize_node(&branch), pointer);
          return;
        }
        std::vector<Disj> branches;
        for (const Json& branch : value)
          branches.push_back(intersect(d, normalize_node(&branch), pointer));
        if (key == "oneOf") {
          bool all_disjoint = true;
          for (size_t i = 0; i < branches.size() && all_disjoint; ++i)
            for (size_t j = i + 1; j < branches.size() && all_disjoint; ++j)
              if (!disjoint(intersect(local, branches[i], pointer), branches[j]))
                all_disjoint = false;
          if (!all_disjoint) {
            // Exactly one: branch i and not any other branch.
            Disj result;
            for (size_t i = 0; i < branches.size(); ++i) {
              Disj only = branches[i];
              for (size_t j = 0; j < branches.size() && !only.empty(); ++j) {
                if (j == i) continue;
                std::optional<Disj> others = negate(normalize_node(&value[j]));
                if (!others)
                  refuse("oneOf", where.pointer,
                         "branches may overlap and branch " + std::to_string(j) +
                             " cannot be negated exactly");
                only = intersect(only, *others, pointer);
              }
              result.insert(result.end(), only.begin(), only.end());
            }
            d = std::move(result);
            return;
          }
        }
        if (key == "anyOf" && doc_.has_unevaluated() && value.size() > 1 && value.size() <= 4) {
          // Every branch that holds evaluates, not only one: split into
          // which branches hold (the others negated, which evaluates
          // nothing), when they all negate exactly; else the union below
          // sees one branch's annotations at a time (stricter).
          try {
            std::vector<Disj> negated;
            for (const Json& branch : value) {
              std::optional<Disj> n = negate(normalize_node(&branch));
              if (!n) break;
              negated.push_back(std::move(*n));
            }
            if (negated.size() == value.size()) {
              Disj result;
              for (uint32_t held = 1; held < (1u << value.size()); ++held) {
                Disj cell = d;
                for (size_t i = 0; i < value.size() && !cell.empty(); ++i)
                  cell = intersect(cell, held & (1u << i) ? normalize_node(&value[i]) : negated[i],
                                   pointer);
                result.insert(result.end(), cell.begin(), cell.end());
              }
              if (result.size() <= 256) {
                d = std::move(result);
                return;
              }
            }
          } catch (Refusal& refusal) {
            if (refusal.status.code() != ErrorCode::kUnsupported &&
                refusal.status.code() != ErrorCode::kLimitExceeded)
              throw;
          }
        }
        Disj result;
        for (Disj& branch : branches) result.insert(result.end(), branch.begin(), branch.end());
        d = std::move(result);
      } else if (key == "not") {
        std::optional<Disj> negated = negate(normalize_node(&value));
        if (!negated) refuse("not", where.pointer, "cannot negate this schema exactly");
        d = intersect(d, *negated, pointer);
      } else if (key == "if") {
        auto then_it = node->find("then");
        auto else_it = node->find("else");
        if (then_it == node->end() && else_it == node->end()) {
          // Asserts nothing, but when the condition holds its annotations
          // count for unevaluated*: split on it when it can be negated
          // exactly (else leaving it out is stricter, never looser).
          if (!doc_.has_unevaluated()) return;
          try {
            const Disj& condition = normalize_node(&value);
            std::optional<Disj> otherwise = negate(condition);
            if (!otherwise) return;
            Disj both = condition;
            both.insert(both.end(), otherwise->begin(), otherwise->end());
            d = intersect(d, both, pointer);
          } catch (Refusal& refusal) {
            if (refusal.status.code() != ErrorCode::kUnsupported) throw;
          }
          return;
        }
        const Disj& condition = normalize_node(&value);
        Disj then_part = then_it == node->end()
                             ? condition
                             : intersect(condition, normalize_node(&*then_it), pointer);
        std::optional<Disj> otherwise = negate(condition);
        if (!otherwise) refuse("if", where.pointer, "cannot negate the condition exactly");
        Disj else_part = else_it == node->end()
                             ? *otherwise
                             : intersect(*otherwise, normalize_node(&*else_it), pointer);
        Disj both = then_part;
        both.insert(both.end(), else_part.begin(), else_part.end());
        d = intersect(d, both, pointer);
      } else if (key == "$ref" || key == "$dynamicRef" || key == "$recursiveRef") {
        if (!value.is_string()) refuse(key, where.pointer, "must be a string", ErrorCode::kSyntax);
        std::string ref = value.get<std::string>();
        if (key == "$recursiveRef" && doc_.has_recursive_anchor())
          refuse(key, where.pointer, "\"$recursiveAnchor\" scopes are not supported");
        count_reference(key, where.pointer);
        const Json* target = doc_.resolve(node, key, ref);
        d = intersect(d, normalize_node(target), pointer);
      } else if (key == "dependentRequired" || key == "dependentSchemas" || key == "dependencies") {
        if (!value.is_object()) refuse(key, where.pointer, "must be an object", ErrorCode::kSyntax);
        for (auto dep = value.begin(); dep != value.end(); ++dep) {
          const std::string& trigger = dep.key();
          Disj result;
          for (const Clause& clause : d) {
            if (clause.type != JType::kObject) {
              result.push_back(clause);
              continue;
            }
            // Either the trigger is absent...
            if (!clause.required.count(trigger)) {
              Clause absent = clause;
              Sub forbidden = conj(property_schema(absent, trigger), Sub::never());
              if (Sub* existing = find_property(absent, trigger))
                *existing = forbidden;
              else
                absent.properties.emplace_back(trigger, forbidden);
              result.push_back(std::move(absent));
            }
            // ...or present with its dependencies.
            Clause present = clause;
            present.required.insert(trigger);
            if (dep->is_array()) {
              for (const Json& name : *dep) {
                if (!name.is_string())
                  refuse(key, where.pointer, "names must be strings", ErrorCode::kSyntax);
                present.required.insert(name.get<std::string>());
              }
              result.push_back(std::move(present));
            } else {
              Disj narrowed = intersect(Disj{present}, normalize_node(&*dep), pointer);
              for (Clause& c : narrowed)
                if (c.type == JType::kObject) result.push_back(std::move(c));
            }
          }
          if (result.size() > 512)
            refuse(key, where.pointer, "too many combinations", ErrorCode::kLimitExceeded);
          d = std::move(result);
        }
      }
    });
  }
  if (!local_applied) d = intersect(d, local, where.pointer);
  if (defined_in("unevaluatedProperties", where.draft))
    with_lenience("unevaluatedProperties", [&] { apply_unevaluated(d, node, where); });
  // Drop clauses that became unsatisfiable.
  Disj kept;
  for (Clause& clause : d) {
    bool empty = false;
    if (clause.type == JType::kObject) {
      for (const std::string& name : clause.required) {
        Sub schema = property_schema(clause, name);
        if (schema.is_true()) continue;
        try {
          if (normalize(schema).empty()) empty = true;
        } catch (Refusal& refusal) {
          // A property referring back to a schema being normalized (a
          // recursive definition) looks like a cycle to this check, but
          // the property's value lies in between: not looked into.
          if (refusal.status.message().find(kSelfReference) == std::string::npos) throw;
        }
      }
    }
    if (!empty) kept.push_back(std::move(clause));
  }
  return kept;
}

void Converter::apply_unevaluated(Disj& d, const Json* node, const NodeInfo& where) {
  auto props = node->find("unevaluatedProperties");
  if (props != node->end()) {
    Sub schema = Sub::of(&props.value());
    for (Clause& clause : d) {
      if (clause.type != JType::kObject || clause.properties_evaluated) continue;
      // Names that a pattern matches are evaluated (patternProperties only
      // enter a clause from the keyword itself); `additional` covers the
      // names that neither a declared property nor a pattern takes.
      for (auto& [name, sub] : clause.properties) {
        if (clause.evaluated.count(name)) continue;
        bool matched = false;
        for (const auto& [pattern, value] : clause.pattern_properties) {
          auto match = pattern_searcher_.search(pattern.text, name);
          if (!match.ok()) refuse("unevaluatedProperties", where.pointer, match.status().message());
          matched = matched || *match;
        }
        if (!matched) sub = conj(sub, schema);
      }
      clause.additional = conj(clause.additional, schema);
      clause.properties_evaluated = true;
    }
  }
  auto items = node->find("unevaluatedItems");
  if (items != node->end()) {
    for (Clause& clause : d) {
      if (clause.type != JType::kArray || clause.items_evaluated) continue;
      // An item that some `contains` matched is evaluated: the others must
      // match unevaluatedItems.
      Sub schema = Sub::of(&items.value());
      if (!clause.contains_evaluates.empty()) {
        std::vector<const Json*> group = clause.contains_evaluates;
        group.push_back(&items.value());
        bool always = false;
        for (const Json* node : group) always = always || (node->is_boolean() && node->get<bool>());
        std::sort(group.begin(), group.end());
        group.erase(std::unique(group.begin(), group.end()), group.end());
        schema = Sub();
        if (!always) schema.any_of.push_back(std::move(group));
      }
      for (size_t i = clause.evaluated_prefix; i < clause.prefix.size(); ++i)
        clause.prefix[i] = conj(clause.prefix[i], schema);
      clause.items = conj(clause.items, schema);
      clause.items_evaluated = true;
    }
  }
}

void Converter::apply_keyword(Disj& d, const Json* node, const std::string& key, const Json& value,
                              const NodeInfo& where) {
  (void)node;
  const std::string& pointer = where.pointer;
  auto each = [&](JType type, const std::function<void(Clause&)>& change) {
    for (Clause& clause : d)
      if (clause.type == type) change(clause);
  };
  auto number_bound = [&](const Json& v) {
    auto number = v.is_number() ? number_of(v) : std::nullopt;
    if (!number)
      refuse(key, pointer, "must be a number (with at most 400 digits)", ErrorCode::kSyntax);
    return *number;
  };
  if (key == "type") {
    std::set<std::string> names;
    if (value.is_string())
      names.insert(value.get<std::string>());
    else if (value.is_array())
      for (const Json& name : value) {
        if (!name.is_string()) refuse(key, pointer, "must name types", ErrorCode::kSyntax);
        names.insert(name.get<std::string>());
      }
    else
      refuse(key, pointer, "must be a string or an array", ErrorCode::kSyntax);
    static const std::map<std::string, JType> kTypes = {
        {"null", JType::kNull},      {"boolean", JType::kBoolean}, {"number", JType::kNumber},
        {"integer", JType::kNumber}, {"string", JType::kString},   {"array", JType::kArray},
        {"object", JType::kObject}};
    for (const std::string& name : names)
      if (!kTypes.count(name))
        refuse(key, pointer, "unknown type \"" + name + "\"", ErrorCode::kSyntax);
    Disj kept;
    for (Clause& clause : d) {
      bool keep = false;
      for (const std::string& name : names)
        if (kTypes.at(name) == clause.type) keep = true;
      if (!keep) continue;
      if (clause.type == JType::kNumber && !names.count("number")) {
        clause.integer = true;
        if (where.draft == Draft::kDraft4) clause.strict_integer = true;
      }
      kept.push_back(std::move(clause));
    }
    d = std::move(kept);
  } else if (key == "enum" || key == "const") {
    std::vector<const Json*> values;
    if (key == "const") {
      values.push_back(&value);
    } else {
      if (!value.is_array()) refuse(key, pointer, "must be an array", ErrorCode::kSyntax);
      for (const Json& v : value) values.push_back(&v);
    }
    Disj kept;
    for (Clause& clause : d) {
      std::vector<const Json*> mine;
      for (const Json* v : values)
        if (type_of(*v) == clause.type) mine.push_back(v);
      if (clause.has_values) {
        std::vector<const Json*> both;
        for (const Json* v : mine)
          for (const Json* w : clause.values)
            if (json_equal(*v, *w)) {
              both.push_back(v);
              break;
            }
        mine = std::move(both);
      }
      if (mine.empty()) continue;
      clause.has_values = true;
      clause.values = std::move(mine);
      clause.values_pointer = pointer;
      kept.push_back(std::move(clause));
    }
    d = std::move(kept);
  } else if (key == "minimum" || key == "exclusiveMinimum") {
    if (value.is_boolean()) return;  // draft-04 modifier: read next to "minimum"
    Decimal bound = number_bound(value);
    bool exclusive = key == "exclusiveMinimum";
    auto modifier = node->find("exclusiveMinimum");
    if (key == "minimum" && modifier != node->end() && modifier->is_boolean() &&
        modifier->get<bool>())
      exclusive = true;
    each(JType::kNumber, [&](Clause& c) {
      int cmp = c.lo ? internal::compare(bound, *c.lo) : 1;
      if (cmp > 0 || (cmp == 0 && exclusive)) c.lo = bound, c.lo_exclusive = exclusive;
      c.range_pointer = pointer;
    });
  } else if (key == "maximum" || key == "exclusiveMaximum") {
    if (value.is_boolean()) return;
    Decimal bound = number_bound(value);
    bool exclusive = key == "exclusiveMaximum";
    auto modifier = node->find("exclusiveMaximum");
    if (key == "maximum" && modifier != node->end() && modifier->is_boolean() &&
        modifier->get<bool>())
      exclusive = true;
    each(JType::kNumber, [&](Clause& c) {
      int cmp = c.hi ? internal::compare(bound, *c.hi) : -1;
      if (cmp < 0 || (cmp == 0 && exclusive)) c.hi = bound, c.hi_exclusive = exclusive;
      c.range_pointer = pointer;
    });
  } else if (key == "multipleOf") {
    Decimal divisor = number_bound(value);
    if (divisor.negative || divisor.is_zero())
      refuse(key, pointer, "must be greater than 0", ErrorCode::kSyntax);
    each(JType::kNumber, [&](Clause& c) { c.multiple_of.emplace_back(divisor, pointer); });
  } else if (key == "minLength" || key == "maxLength") {
    uint64_t n = non_negative_integer(value, key, pointer);
    each(JType::kString, [&](Clause& c) {
      if (key == "minLength")
        c.min_length = std::max(c.min_length, n);
      else
        c.max_length = c.max_length ? std::min(*c.max_length, n) : n;
      c.length_pointer = pointer;
    });
  } else if (key == "pattern") {
    if (!value.is_string()) refuse(key, pointer, "must be a string", ErrorCode::kSyntax);
    parse_pattern(value.get<std::string>(), key, pointer);
    each(JType::kString, [&](Clause& c) {
      c.patterns.push_back({value.get<std::string>(), pointer});
    });
  } else if (key == "format") {
    if (!options_.assert_formats || !value.is_string()) return;
    internal::FormatLookup lookup = lookup_format(value.get<std::string>());
    if (!lookup.known) {
      warn("ignored unknown format \"" + value.get<std::string>() + "\" at " +
           display_pointer(pointer));
      return;
    }
    each(JType::kString, [&](Clause& c) {
      c.formats.push_back({value.get<std::string>(), pointer});
    });
  } else if (key == "minItems" || key == "maxItems") {
    uint64_t n = non_negative_integer(value, key, pointer);
    each(JType::kArray, [&](Clause& c) {
      if (key == "minItems")
        c.min_items = std::max(c.min_items, n);
      else
        c.max_items = c.max_items ? std::min(*c.max_items, n) : n;
      c.items_count_pointer = pointer;
    });
  } else if (key == "contains") {
    Contains contains;
    contains.schema = Sub::of(&value);
    contains.pointer = pointer;
    if (!legacy(where.draft)) {
      if (node->contains("minContains"))
        contains.min = non_negative_integer(node->at("minContains"), "minContains", pointer);
      if (node->contains("maxContains"))
        contains.max = non_negative_integer(node->at("maxContains"), "maxContains", pointer);
    }
    if (where.draft == Draft::kDraft2020_12)
      each(JType::kArray, [&](Clause& c) { c.contains_evaluates.push_back(&value); });
    if (contains.min == 0 && !contains.max) return;
    each(JType::kArray, [&](Clause& c) { c.contains.push_back(contains); });
  } else if (key == "uniqueItems") {
    if (!value.is_boolean()) refuse(key, pointer, "must be a boolean", ErrorCode::kSyntax);
    if (!value.get<bool>()) return;
    each(JType::kArray, [&](Clause& c) {
      c.unique = true;
      c.unique_pointer = pointer;
    });
  } else if (key == "required") {
    if (!value.is_array()) refuse(key, pointer, "must be an array", ErrorCode::kSyntax);
    each(JType::kObject, [&](Clause& c) {
      for (const Json& name : value) {
        if (!name.is_string()) refuse(key, pointer, "names must be strings", ErrorCode::kSyntax);
        c.required.insert(name.get<std::string>());
      }
    });
  } else if (key == "propertyNames") {
    each(JType::kObject, [&](Clause& c) {
      c.property_names = conj(c.property_names, Sub::of(&value));
      c.property_names_pointer = pointer;
    });
  } else if (key == "minProperties" || key == "maxProperties") {
    uint64_t n = non_negative_integer(value, key, pointer);
    each(JType::kObject, [&](Clause& c) {
      if (key == "minProperties")
        c.min_properties = std::max(c.min_properties, n);
      else
        c.max_properties = c.max_properties ? std::min(*c.max_properties, n) : n;
      c.properties_count_pointer = pointer;
    });
  }
  // Everything else is an annotation or an unknown keyword: ignored, as the
  // spec requires.
}

Sub Converter::property_schema(const Clause& clause, const std::string& name) {
  if (const Sub* declared = find_property(clause, name)) return *declared;
  Sub result;
  bool matched = false;
  for (const auto& [pattern, sub] : clause.pattern_properties) {
    auto match = pattern_searcher_.search(pattern.text, name);
    if (!match.ok()) refuse("patternProperties", pattern.pointer, match.status().message());
    if (*match) {
      result = conj(result, sub);
      matched = true;
    }
  }
  return matched ? result : clause.additional;
}

std::optional<Clause> Converter::intersect_clauses(const Clause& a, const Clause& b) {
  Clause c = a;
  // Finite values.
  if (b.has_values) {
    if (c.has_values) {
      std::vector<const Json*> both;
      for (const Json* v : c.values)
        for (const Json* w : b.values)
          if (json_equal(*v, *w)) {
            both.push_back(v);
            break;
          }
      c.values = std::move(both);
    } else {
      c.values = b.values;
      c.has_values = true;
    }
    c.values_pointer = b.values_pointer;
  }
  c.excluded.insert(c.excluded.end(), b.excluded.begin(), b.excluded.end());
  switch (a.type) {
    case JType::kNull:
    case JType::kBoolean:
      break;
    case JType::kNumber: {
      c.integer = a.integer || b.integer;
      c.non_integer = a.non_integer || b.non_integer;
      c.strict_integer = a.strict_integer || b.strict_integer;
      if (c.integer && c.non_integer) return std::nullopt;
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
      if (c.lo && c.hi) {
        int cmp = internal::compare(*c.lo, *c.hi);
        if (cmp > 0 || (cmp == 0 && (c.lo_exclusive || c.hi_exclusive))) return std::nullopt;
        if (c.integer) {
          Decimal low = internal::ceil_decimal(*c.lo), high = internal::floor_decimal(*c.hi);
          if (c.lo_exclusive && c.lo->is_integer()) low = internal::add_integer(low, 1);
          if (c.hi_exclusive && c.hi->is_integer()) high = internal::add_integer(high, -1);
          if (internal::compare(low, high) > 0) return std::nullopt;
        }
      }
      break;
    }
    case JType::kString:
      c.min_length = std::max(a.min_length, b.min_length);
      if (b.max_length)
        c.max_length = c.max_length ? std::min(*c.max_length, *b.max_length) : *b.max_length;
      if (c.length_pointer.empty()) c.length_pointer = b.length_pointer;
      c.patterns.insert(c.patterns.end(), b.patterns.begin(), b.patterns.end());
      c.negated_patterns.insert(c.negated_patterns.end(), b.negated_patterns.begin(),
                                b.negated_patterns.end());
      c.formats.insert(c.formats.end(), b.formats.begin(), b.formats.end());
      if (c.max_length && c.min_length > *c.max_length) return std::nullopt;
      break;
    case JType::kArray: {
      size_t n = std::max(a.prefix.size(), b.prefix.size());
      c.prefix.clear();
      for (size_t i = 0; i < n; ++i) {
        const Sub& x = i < a.prefix.size() ? a.prefix[i] : a.items;
        const Sub& y = i < b.prefix.size() ? b.prefix[i] : b.items;
        c.prefix.push_back(conj(x, y));
      }
      c.items = conj(a.items, b.items);
      c.min_items = std::max(a.min_items, b.min_items);
      if (b.max_items)
        c.max_items = c.max_items ? std::min(*c.max_items, *b.max_items) : *b.max_items;
      if (c.items_count_pointer.empty()) c.items_count_pointer = b.items_count_pointer;
      c.contains.insert(c.contains.end(), b.contains.begin(), b.contains.end());
      if (b.unique) c.unique = true, c.unique_pointer = b.unique_pointer;
      c.evaluated_prefix = std::max(a.evaluated_prefix, b.evaluated_prefix);
      c.items_evaluated = a.items_evaluated || b.items_evaluated;
      c.contains_evaluates.insert(c.contains_evaluates.end(), b.contains_evaluates.begin(),
                                  b.contains_evaluates.end());
      if (c.max_items && c.min_items > *c.max_items) return std::nullopt;
      break;
    }
    case JType::kObject: {
      if ((!a.pattern_properties.empty() && !b.additional.is_true()) ||
          (!b.pattern_properties.empty() && !a.additional.is_true())) {
        const std::string& where = !a.pattern_properties.empty()
                                       ? a.pattern_properties[0].first.pointer
                                       : b.pattern_properties[0].first.pointer;
        refuse("patternProperties", where, "intersection with another additionalProperties");
      }
      c.properties.clear();
      for (const auto& [name, sub] : a.properties)
        c.properties.emplace_back(name, conj(sub, property_schema(b, name)));
      for (const auto& [name, sub] : b.properties)
        if (!find_property(a, name))
          c.properties.emplace_back(name, conj(property_schema(a, name), sub));
      c.pattern_properties.insert(c.pattern_properties.end(), b.pattern_properties.begin(),
                                  b.pattern_properties.end());
      c.additional = conj(a.additional, b.additional);
      c.required.insert(b.required.begin(), b.required.end());
      c.property_names = conj(a.property_names, b.property_names);
      if (c.property_names_pointer.empty()) c.property_names_pointer = b.property_names_pointer;
      c.min_properties = std::max(a.min_properties, b.min_properties);
      if (b.max_properties)
        c.max_properties =
            c.max_properties ? std::min(*c.max_properties, *b.max_properties) : *b.max_properties;
      if (c.properties_count_pointer.empty())
        c.properties_count_pointer = b.properties_count_pointer;
      c.evaluated.insert(b.evaluated.begin(), b.evaluated.end());
      c.properties_evaluated = a.properties_evaluated || b.properties_evaluated;
      if (c.max_properties && c.min_properties > *c.max_properties) return std::nullopt;
      if (c.max_properties && c.required.size() > *c.max_properties) return std::nullopt;
      // A required property that no value may take (what negations write
      // for "absent"): nothing left.
      for (const auto& [name, sub] : c.properties) {
        if (!c.required.count(name)) continue;
        for (const Json* n : sub.nodes)
          if (n->is_boolean() && !n->get<bool>()) return std::nullopt;
      }
      break;
    }
  }
  if (c.has_values) {
    std::vector<const Json*> kept;
    for (const Json* v : c.values)
      if (clause_accepts(c, *v, false)) kept.push_back(v);
    c.values = std::move(kept);
    if (c.values.empty()) return std::nullopt;
  }
  return c;
}

Disj Converter::intersect(const Disj& a, const Disj& b, const std::string& pointer) {
  Disj result;
  result.reserve(std::max(a.size(), b.size()));
  for (const Clause& x : a)
    for (const Clause& y : b) {
      if (x.type != y.type) continue;
      if (y.unconstrained()) {
        result.push_back(x);
      } else if (x.unconstrained()) {
        result.push_back(y);
      } else if (auto c = intersect_clauses(x, y)) {
        result.push_back(std::move(*c));
      }
      if (result.size() > 1024)
        fail(ErrorCode::kLimitExceeded,
             "schema at " + display_pointer(pointer) + " expands to more than 1024 alternatives");
    }
  return result;
}

bool Converter::disjoint(const Disj& a, const Disj& b, int depth) {
  for (const Clause& x : a)
    for (const Clause& y : b) {
      if (x.type != y.type) continue;
      if (x.type == JType::kObject && depth < kMaxDisjointDepth &&
          objects_disjoint_by_required(x, y, depth))
        continue;
      if (intersect_clauses(x, y)) return false;
    }
  return true;
}

// Two object clauses are disjoint when one requires a property whose value
// the other cannot accept: both require it with disjoint schemas (the
// tagged union: {"kind": {"const": "a"}} against {"kind": {"const": "b"}}),
// or the other forbids it (not declared, additionalProperties false).
bool Converter::objects_disjoint_by_required(const Clause& x, const Clause& y, int depth) {
  for (const Clause* a : {&x, &y}) {
    const Clause* b = a == &x ? &y : &x;
    for (const std::string& name : a->required) {
      const Sub in_a = property_schema(*a, name);
      const Sub in_b = property_schema(*b, name);
      if (disjoint(normalize(in_a), normalize(in_b), depth + 1)) return true;
    }
  }
  return false;
}

bool Converter::before_in_document(const Json* a, const Json* b) const {
  const NodeInfo& x = doc_.info(a);
  const NodeInfo& y = doc_.info(b);
  return std::tie(x.pointer, x.scope) < std::tie(y.pointer, y.scope);
}

std::vector<const Json*> Converter::in_document_order(std::vector<const Json*> nodes) const {
  // (Stable: nodes outside the document, such as false_node(), keep their
  // relative order.)
  std::stable_sort(nodes.begin(), nodes.end(),
                   [&](const Json* a, const Json* b) { return before_in_document(a, b); });
  return nodes;
}

std::vector<std::vector<const Json*>> Converter::in_document_order(
    const std::vector<std::vector<const Json*>>& groups) const {
  // Each group stays sorted by address (negated groups are Sub sets); the
  // groups are ordered by their members in pointer order.
  std::vector<std::pair<std::vector<const Json*>, size_t>> keyed;
  for (size_t i = 0; i < groups.size(); ++i) keyed.emplace_back(in_document_order(groups[i]), i);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return std::lexicographical_compare(
        a.first.begin(), a.first.end(), b.first.begin(), b.first.end(),
        [&](const Json* x, const Json* y) { return before_in_document(x, y); });
  });
  std::vector<std::vector<const Json*>> ordered;
  for (const auto& [members, i] : keyed) ordered.push_back(groups[i]);
  return ordered;
}

// not (S1 and S2 ...) as a list of alternatives: one per conjunct.
std::vector<Sub> Converter::negate_sub(const Sub& sub) const {
  std::vector<Sub> alternatives;
  for (const Json* node : in_document_order(sub.nodes)) {
    Sub s;
    s.negated.push_back(node);
    alternatives.push_back(s);
  }
  for (const Json* node : in_document_order(sub.negated)) alternatives.push_back(Sub::of(node));
  for (const auto& group : in_document_order(sub.any_of)) {
    Sub none;
    none.negated = group;
    alternatives.push_back(none);
  }
  return alternatives;
}

// The complement of d among all JSON values, when each clause is simple
// enough to complement exactly.
std::optional<Disj> Converter::negate(const Disj& d) {
  Disj result = all_types();
  for (const Clause& clause : d) {
    Disj complement;
    auto add = [&](Clause c) { complement.push_back(std::move(c)); };
    for (JType type : kAllTypes) {
      if (type == clause.type) continue;
      Clause other;
      other.type = type;
      add(other);
    }
    Clause base;
    base.type = clause.type;
    if (clause.unconstrained()) {
      // nothing of this type
    } else if (clause.has_values || !clause.excluded.empty()) {
      Clause stripped = clause;
      stripped.has_values = false;
      stripped.values.clear();
      stripped.excluded.clear();
      if (!stripped.unconstrained()) return std::nullopt;
      if (clause.has_values) {
        if (!clause.excluded.empty()) return std::nullopt;
        Clause c = base;
        c.excluded = clause.values;
        c.values_pointer = clause.values_pointer;
        add(c);
      } else {
        Clause c = base;
        c.has_values = true;
        c.values = clause.excluded;
        add(c);
      }
    } else if (clause.type == JType::kNumber) {
      // Draft-04 integers exclude "1.0": their complement is not a clause.
      if (!clause.multiple_of.empty() || clause.strict_integer) return std::nullopt;
      // not (integer and range) = non-integer, or outside the range.
      if (clause.integer) {
        Clause c = base;
        c.non_integer = true;
        add(c);
      }
      if (clause.non_integer) {
        Clause c = base;
        c.integer = true;
        add(c);
      }
      if (clause.lo) {
        Clause c = base;
        c.hi = clause.lo, c.hi_exclusive = !clause.lo_exclusive;
        add(c);
      }
      if (clause.hi) {
        Clause c = base;
        c.lo = clause.hi, c.lo_exclusive = !clause.hi_exclusive;
        add(c);
      }
    } else if (clause.type == JType::kString) {
      // A string of another length, or one that fails a pattern (or
      // matches a pattern it had to avoid).
      for (const Sourced& pattern : clause.patterns) {
        Clause c = base;
        c.negated_patterns.push_back(pattern);
        add(c);
      }
      for (const Sourced& format : clause.formats) {
        internal::FormatLookup lookup = lookup_format(format.text);
        if (!lookup.supported || !lookup.narrowed.empty()) return std::nullopt;
        Clause c = base;
        c.negated_patterns.push_back({lookup.pattern, format.pointer});
        add(c);
      }
      for (const Sourced& pattern : clause.negated_patterns) {
        Clause c = base;
        c.patterns.push_back(pattern);
        add(c);
      }
      if (clause.min_length > 0) {
        Clause c = base;
        c.max_length = clause.min_length - 1;
        add(c);
      }
      if (clause.max_length) {
        Clause c = base;
        c.min_length = *clause.max_length + 1;
        add(c);
      }
    } else if (clause.type == JType::kArray) {
      Clause probe = clause;
      probe.min_items = 0, probe.max_items.reset(), probe.evaluated_prefix = 0;
      probe.items_evaluated = false, probe.prefix.clear(), probe.items = Sub(),
      probe.contains.clear(), probe.contains_evaluates.clear();
      if (!probe.unconstrained() || clause.contains.size() > 1) return std::nullopt;
      if (clause.min_items > 0) {
        Clause c = base;
        c.max_items = clause.min_items - 1;
        add(c);
      }
      if (clause.max_items) {
        Clause c = base;
        c.min_items = *clause.max_items + 1;
        add(c);
      }
      // Some prefix item violates its schema.
      for (size_t i = 0; i < clause.prefix.size(); ++i) {
        for (const Sub& violated : negate_sub(clause.prefix[i])) {
          Clause c = base;
          c.prefix.assign(i, Sub());
          c.prefix.push_back(violated);
          c.min_items = i + 1;
          add(c);
        }
      }
      // Some later item violates `items`.
      if (!clause.items.is_true()) {
        if (!clause.prefix.empty()) return std::nullopt;
        for (const Sub& violated : negate_sub(clause.items)) {
          Clause c = base;
          c.contains.push_back(Contains{violated, 1, std::nullopt, ""});
          add(c);
        }
      }
      // No item matches `contains`.
      if (!clause.contains.empty()) {
        const Contains& contains = clause.contains[0];
        std::vector<Sub> violated = negate_sub(contains.schema);
        if (contains.min != 1 || contains.max || violated.size() != 1) return std::nullopt;
        Clause c = base;
        c.items = violated[0];
        add(c);
      }
    } else if (clause.type == JType::kObject) {
      Clause probe = clause;
      probe.min_properties = 0, probe.max_properties.reset(), probe.required.clear();
      probe.evaluated.clear(), probe.properties_evaluated = false, probe.properties.clear();
      // patternProperties that allow anything only annotate (while no
      // additionalProperties depends on which names they match).
      if (probe.additional.is_true())
        probe.pattern_properties.erase(
            std::remove_if(probe.pattern_properties.begin(), probe.pattern_properties.end(),
                           [](const std::pair<Sourced, Sub>& p) { return p.second.is_true(); }),
            probe.pattern_properties.end());
      if (!probe.unconstrained()) return std::nullopt;
      for (const std::string& name : clause.required) {
        Clause c = base;
        c.properties.emplace_back(name, Sub::never());
        add(c);
      }
      // A declared property is present and violates its schema.
      for (const auto& [name, sub] : clause.properties) {
        for (const Sub& violated : negate_sub(sub)) {
          Clause c = base;
          c.properties.emplace_back(name, violated);
          c.required.insert(name);
          add(c);
        }
      }
      if (clause.min_properties > 0) {
        Clause c = base;
        c.max_properties = clause.min_properties - 1;
        add(c);
      }
      if (clause.max_properties) {
        Clause c = base;
        c.min_properties = *clause.max_properties + 1;
        add(c);
      }
    } else {
      return std::nullopt;
    }
    result = intersect(result, complement, "");
  }
  return result;
}

// ---------------------------------------------------------------------------
// Validation of concrete values against normalized clauses (for enum/const
// filtering and property-name checks).

bool Converter::accepts(const Sub& sub, const Json& value) {
  for (const Clause& clause : normalize(sub))
    if (clause_accepts(clause, value, true)) return true;
  return false;
}

bool Converter::clause_accepts(const Clause& c, const Json& value, bool check_values) {
  if (type_of(value) != c.type) return false;
  if (check_values && c.has_values) {
    bool found = false;
    for (const Json* v : c.values)
      if (json_equal(*v, value)) found = true;
    if (!found) return false;
  }
  for (const Json* v : c.excluded)
    if (json_equal(*v, value)) return false;
  switch (c.type) {
    case JType::kNull:
    case JType::kBoolean:
      return true;
    case JType::kNumber: {
      auto number = number_of(value);
      if (!number) refuse("enum", c.values_pointer, "number too large to compare");
      if (c.integer && !number->is_integer()) return false;
      if (c.non_integer && number->is_integer()) return false;
      if (c.strict_integer && !value.is_number_integer() && !value.is_number_unsigned())
        return false;
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
      return true;
    }
    case JType::kString: {
      const std::string& text = value.get_ref<const std::string&>();
      size_t length = code_point_length(text);
      if (length < c.min_length || (c.max_length && length > *c.max_length)) return false;
      for (const Sourced& pattern : c.patterns) {
        auto match = pattern_searcher_.search(pattern.text, text);
        if (!match.ok()) refuse("pattern", pattern.pointer, match.status().message());
        if (!*match) return false;
      }
      for (const Sourced& pattern : c.negated_patterns) {
        auto match = pattern_searcher_.search(pattern.text, text);
        if (!match.ok()) refuse("not", pattern.pointer, match.status().message());
        if (*match) return false;
      }
      for (const Sourced& format : c.formats) {
        internal::FormatLookup lookup = lookup_format(format.text);
        if (!lookup.supported)
          refuse("format", format.pointer, "format \"" + format.text + "\" is not supported");
        auto match = pattern_searcher_.search(lookup.pattern, text);
        if (!match.ok()) refuse("format", format.pointer, match.status().message());
        if (!*match) return false;
      }
      return true;
    }
    case JType::kArray: {
      if (value.size() < c.min_items || (c.max_items && value.size() > *c.max_items)) return false;
      for (size_t i = 0; i < value.size(); ++i)
        if (!accepts(i < c.prefix.size() ? c.prefix[i] : c.items, value[i])) return false;
      for (const Contains& contains : c.contains) {
        uint64_t count = 0;
        for (const Json& item : value)
          if (accepts(contains.schema, item)) ++count;
        if (count < contains.min || (contains.max && count > *contains.max)) return false;
      }
      if (c.unique)
        for (size_t i = 0; i < value.size(); ++i)
          for (size_t j = i + 1; j < value.size(); ++j)
            if (json_equal(value[i], value[j])) return false;
      return true;
    }
    case JType::kObject: {
      if (value.size() < c.min_properties || (c.max_properties && value.size() > *c.max_properties))
        return false;
      for (const std::string& name : c.required)
        if (!value.contains(name)) return false;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!c.property_names.is_true() && !accepts(c.property_names, Json(it.key()))) return false;
        if (!accepts(property_schema(c, it.key()), it.value())) return false;
      }
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------
// Emission helpers.

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

std::string Converter::unique_name(const std::string& hint) {
  std::string base = sanitize(hint);
  static const std::set<std::string> reserved = {
      "root", "value",   "object", "array", "string", "number", "integer", "char",
      "ws",   "boolean", "null",   "hex",   "never",  "key",    "cchar",   "integer-strict"};
  std::string name = base;
  int& suffix = last_suffix_.emplace(base, 1).first->second;
  while (names_.count(name) || reserved.count(name)) name = base + "-" + std::to_string(++suffix);
  names_.insert(name);
  return name;
}

void Converter::define_rule(const std::string& name, const std::string& body) {
  grammar_bytes_ += name.size() + body.size() + 6;
  if (grammar_bytes_ > options_.max_grammar_bytes)
    fail(ErrorCode::kLimitExceeded, "grammar exceeds max_grammar_bytes (" +
                                        std::to_string(options_.max_grammar_bytes) +
                                        ") while converting " + display_pointer(emitting_));
  if (rules_.size() + 1 > options_.max_rules)
    fail(ErrorCode::kLimitExceeded, "grammar exceeds max_rules (" +
                                        std::to_string(options_.max_rules) + ") while converting " +
                                        display_pointer(emitting_));
  rules_.emplace_back(name, body);
}

// A named rule for `body`, shared by identical bodies.
std::string Converter::add_rule(const std::string& hint, const std::string& body) {
  auto it = text_memo_.find(body);
  if (it != text_memo_.end()) return it->second;
  std::string name = unique_name(hint);
  define_rule(name, body);
  text_memo_[body] = name;
  return name;
}

// A rule for `body` that the lowering keeps as one rule wherever it is
// named. The lowering copies a small non-recursive rule into every place
// that names it other than last in a rule; for a part named so from many
// places (between every two declared members) the copies add up, so the
// rule refers to itself through an alternative that matches nothing.
std::string Converter::unshared_rule(const std::string& hint, const std::string& body) {
  const std::string key = "\x01" + body;
  auto it = text_memo_.find(key);
  if (it != text_memo_.end()) return it->second;
  std::string name = unique_name(hint);
  define_rule(name, "(" + body + ") | " + base_rule("never") + " " + name);
  text_memo_[key] = name;
  return name;
}

std::string Converter::inner(uint32_t depth) const {
  switch (options_.whitespace) {
    case JsonSchemaOptions::Whitespace::kCompact:
      return "";
    case JsonSchemaOptions::Whitespace::kFlexible:
      return "ws";
    case JsonSchemaOptions::Whitespace::kIndented:
      return "\"\\n" + std::string((depth + 1) * options_.indent, ' ') + "\"";
  }
  return "";
}
std::string Converter::after() const {
  return options_.whitespace == JsonSchemaOptions::Whitespace::kFlexible ? "ws" : "";
}
std::string Converter::colon() const {
  switch (options_.whitespace) {
    case JsonSchemaOptions::Whitespace::kCompact:
      return "\":\"";
    case JsonSchemaOptions::Whitespace::kFlexible:
      return "ws \":\" ws";
    case JsonSchemaOptions::Whitespace::kIndented:
      return "\": \"";
  }
  return "\":\"";
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

// A rule name alone (what rule_for may return instead of an alias).
bool bare_name(const std::string& expr) {
  return !expr.empty() && std::all_of(expr.begin(), expr.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::string group(const std::string& expr) {
  return "(" + expr + ")";
}

// A number written in any of its plain spellings: "-1", "-1.0", "2.50"...
std::string decimal_literal(const Decimal& number, bool integer_fraction = true) {
  std::string digits = number.int_digits.empty() ? "0" : number.int_digits;
  std::string sign = number.is_zero() ? "\"-\"? " : (number.negative ? "\"-\" " : "");
  if (number.is_integer())
    return group(sign + "\"" + digits + "\"" + (integer_fraction ? " (\".\" \"0\"+)?" : ""));
  return group(sign + "\"" + digits + "." + number.frac_digits + "\" \"0\"*");
}

// Any encoded code point; \u escapes of surrogates only as valid pairs, so
// that one decoded code point is one `char` (lengths count right).
std::string Converter::char_body() {
  base_rule("hex");
  return "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-Ce-fE-F] hex hex hex | "
         "[dD] [0-7] hex hex | [dD] [89abAB] hex hex \"\\\\u\" [dD] [c-fC-F] hex hex))";
}

// `item` (an expression, grouped) repeated lo..hi times. Past
// kPlainRepeat the count is split into blocks of kPlainRepeat items, a rule
// of its own, counted the same way: an exact and unambiguous grammar of
// logarithmic size (a length L is floor(L / block) blocks plus a rest
// shorter than a block) for any bound, where a plain {lo,hi} would copy
// the item hi times when lowered.
std::string Converter::counted(const std::string& item, uint64_t lo, std::optional<uint64_t> hi,
                               const std::string& hint) {
  constexpr uint64_t kPlainRepeat = 4096;
  auto plain = [&](uint64_t a, std::optional<uint64_t> b) -> std::string {
    if (b && *b == 0) return "";
    if (!b) return item + (a == 0 ? "*" : a == 1 ? "+" : "{" + std::to_string(a) + ",}");
    if (a == *b) return a == 1 ? item : item + "{" + std::to_string(a) + "}";
    if (a == 0 && *b == 1) return item + "?";
    return item + "{" + std::to_string(a) + "," + std::to_string(*b) + "}";
  };
  if (lo <= kPlainRepeat && (!hi || *hi <= kPlainRepeat)) return plain(lo, hi);
  const uint64_t block = kPlainRepeat;
  std::string block_rule = add_rule(hint + "-block", plain(block, block));
  const uint64_t low_blocks = lo / block;
  if (!hi) {
    return seq({counted(block_rule, low_blocks, low_blocks, hint + "-block"),
                plain(lo % block, std::nullopt)});
  }
  const uint64_t high_blocks = *hi / block;
  std::vector<std::string> options;
  if (low_blocks == high_blocks)
    return seq({counted(block_rule, high_blocks, high_blocks, hint + "-block"),
                plain(lo % block, *hi % block)});
  // floor(L / block) == low_blocks, strictly between, or == high_blocks.
  options.push_back(seq({counted(block_rule, low_blocks, low_blocks, hint + "-block"),
                         plain(lo % block, block - 1)}));
  if (high_blocks > low_blocks + 1)
    options.push_back(seq({counted(block_rule, low_blocks + 1, high_blocks - 1, hint + "-block"),
                           plain(0, block - 1)}));
  options.push_back(
      seq({counted(block_rule, high_blocks, high_blocks, hint + "-block"), plain(0, *hi % block)}));
  return group(alternatives(options));
}

// Base rules, defined on first use. In the indented layout, generic values
// (schemas that allow anything) are written compactly: an unbounded
// nesting has no fixed indentation.
std::string Converter::base_rule(const std::string& name) {
  if (base_rules_.count(name)) return name;
  base_rules_.insert(name);
  names_.insert(name);
  bool flexible = options_.whitespace == JsonSchemaOptions::Whitespace::kFlexible;
  std::string w = flexible ? "ws " : "";
  std::string body;
  if (name == "ws") {
    // Nothing, a run of blanks, or a newline and a run of blanks.
    body = "\"\\n\"? [ \\t]{0," + std::to_string(options_.max_whitespace_run) + "}";
  } else if (name == "value") {
    body = base_rule("object") + " | " + base_rule("array") + " | " + base_rule("string") + " | " +
           base_rule("number") + " | \"true\" | \"false\" | \"null\"";
  } else if (name == "object") {
    if (flexible) base_rule("ws");
    base_rule("value");
    base_rule("string");
    body = "\"{\" " + w + "(string " + w + "\":\" " + w + "value " + w + "(\",\" " + w + "string " +
           w + "\":\" " + w + "value " + w + ")*)? \"}\"";
  } else if (name == "array") {
    if (flexible) base_rule("ws");
    base_rule("value");
    body = "\"[\" " + w + "(value " + w + "(\",\" " + w + "value " + w + ")*)? \"]\"";
  } else if (name == "string") {
    base_rule("char");
    body = "\"\\\"\" char* \"\\\"\"";
  } else if (name == "char") {
    body = char_body();
  } else if (name == "cchar") {
    // Canonical encodings only (one spelling per code point), for strings
    // compared against a set of excluded names.
    body = internal::json_char_gbnf(internal::normalize_set({{0, kMaxCodePoint}}));
  } else if (name == "hex") {
    body = "[0-9a-fA-F]";
  } else if (name == "number") {
    body = "\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)?";
  } else if (name == "integer") {
    body = "\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" \"0\"+)?";
  } else if (name == "integer-strict") {
    body = "\"-\"? (\"0\" | [1-9] [0-9]*)";
  } else if (name == "never") {
    body = "[^\\x00-\\U0010FFFF]";
  }
  define_rule(name, body);
  return name;
}

std::string Converter::wrap_container(const std::string& open, const std::string& close,
                                      const std::string& nonempty_body, bool allow_empty,
                                      uint32_t depth) {
  std::vector<std::string> options;
  std::string closing_ws =
      indented() ? "\"\\n" + std::string(depth * options_.indent, ' ') + "\"" : "";
  if (allow_empty)
    options.push_back(
        seq({open, options_.whitespace == JsonSchemaOptions::Whitespace::kFlexible ? "ws" : "",
             close}));
  if (!nonempty_body.empty())
    options.push_back(seq({open, group(nonempty_body), closing_ws, close}));
  return alternatives(options);
}

// ---------------------------------------------------------------------------
// Emission of clauses.

std::string Converter::rule_for(const Sub& sub, const std::string& hint, uint32_t depth) {
  if (depth > 64 && indented())
    fail(ErrorCode::kUnsupported,
         "the indented layout needs bounded nesting, and the schema nests deeper than 64 levels");
  if (sub.is_true()) return base_rule("value");
  std::string key = sub_key(sub) + (indented() ? "@" + std::to_string(depth) : "");
  auto it = rule_memo_.find(key);
  if (it != rule_memo_.end()) {
    handed_out_.insert(it->second);
    return it->second;
  }
  const std::string& where = doc_.info(sub.nodes.empty() ? nullptr : sub.nodes[0]).pointer;
  Nesting nesting(*this, where);
  const std::string outer = emitting_;
  emitting_ = where;
  struct Restore {
    std::string& slot;
    std::string value;
    ~Restore() { slot = value; }
  } restore{emitting_, outer};
  std::string name = unique_name(hint);
  rule_memo_[key] = name;
  const Disj& d = normalize(sub);
  std::vector<std::string> options;
  std::vector<const Clause*> clauses;
  for (const Clause& clause : d) clauses.push_back(&clause);
  // String alternatives that each need an automaton (a disjunction of
  // negated pattern unions multiplies them) become one automaton, their
  // union, instead of one set of rules each.
  auto needs_automaton = [](const Clause& c) {
    return c.type == JType::kString && !c.has_values &&
           (!c.negated_patterns.empty() || !c.excluded.empty() || c.patterns.size() > 1);
  };
  if (std::count_if(clauses.begin(), clauses.end(),
                    [&](const Clause* c) { return needs_automaton(*c); }) > 1) {
    std::optional<internal::CharDfa> strings;
    std::vector<const Clause*> rest;
    for (const Clause* c : clauses) {
      const Clause& clause = *c;
      if (!needs_automaton(clause)) {
        rest.push_back(c);
        continue;
      }
      internal::CharDfa part = string_dfa(clause, clause.max_length);
      if (strings) {
        Result<internal::CharDfa> both = internal::dfa_product(
            *strings, part, [](uint32_t x, uint32_t y) -> uint32_t { return x | y ? 1 : 0; });
        const std::string& where = doc_.info(sub.nodes.empty() ? nullptr : sub.nodes[0]).pointer;
        if (!both.ok()) refuse("anyOf", where, both.status().message());
        charge_automaton(both->states.size(), "anyOf", where);
        part = internal::dfa_minimize(*both, [](uint32_t label) { return label != 0; });
      }
      strings = std::move(part);
    }
    std::string start = dfa_rules(
        *strings, [](uint32_t label) { return label != 0; }, name + "-s");
    if (!start.empty()) options.push_back(add_rule(name + "-str", seq({"\"\\\"\"", start})));
    clauses = std::move(rest);
  }
  for (const Clause* clause : clauses) {
    std::string expr = clause_expression(*clause, d.size() == 1 ? name : "", name, depth);
    if (!expr.empty()) options.push_back(expr);
  }
  if (options.empty()) {
    define_rule(name, base_rule("never"));
    rule_memo_[key] = "";
    return "";
  }
  // A rule that would only name another one is left out, unless its name
  // was already handed out (to a recursive use).
  if (options.size() == 1 && bare_name(options[0]) && !handed_out_.count(name)) {
    rule_memo_[key] = options[0];
    return options[0];
  }
  define_rule(name, alternatives(options));
  return name;
}

// The expression for a clause, shared by every sub-schema that normalizes
// to the same clause (e.g. through different $refs to one definition).
// Objects and arrays may refer back to themselves, so their rule name is
// registered before emission: `own_rule` when the caller's rule is exactly
// this clause, else a rule of its own.
std::string Converter::clause_expression(const Clause& clause, const std::string& own_rule,
                                         const std::string& hint, uint32_t depth) {
  std::string key = clause_key(clause) + (indented() ? "@" + std::to_string(depth) : "");
  auto known = clause_memo_.find(key);
  if (known != clause_memo_.end()) {
    handed_out_.insert(known->second);
    return known->second;
  }
  if (clause.type != JType::kObject && clause.type != JType::kArray) {
    std::string expr = emit_clause(clause, hint, depth);
    clause_memo_.emplace(std::move(key), expr);
    return expr;
  }
  std::string rule = own_rule.empty() ? unique_name(hint + "-alt") : own_rule;
  clause_memo_[key] = rule;
  std::string expr = emit_clause(clause, hint, depth);
  if (expr.empty()) clause_memo_[key] = "";
  if (!own_rule.empty()) {
    // The caller may leave its rule out (see rule_for): then later uses
    // name the emitted rule itself.
    if (bare_name(expr) && !handed_out_.count(own_rule)) clause_memo_[key] = expr;
    return expr;
  }
  if (!expr.empty() && bare_name(expr) && !handed_out_.count(rule)) {
    clause_memo_[key] = expr;  // no alias rule
    return expr;
  }
  define_rule(rule, expr.empty() ? base_rule("never") : expr);
  return expr.empty() ? "" : rule;
}

std::string Converter::emit_clause(const Clause& original, const std::string& hint,
                                   uint32_t depth) {
  if (!options_.lenient) return emit_clause_once(original, hint, depth);
  Clause clause = original;  // lenient mode drops what it cannot enforce
  while (true) {
    try {
      return emit_clause_once(clause, hint, depth);
    } catch (Refusal& refusal) {
      if (refusal.status.code() != ErrorCode::kUnsupported) throw;
      const std::string& k = refusal.keyword;
      bool dropped = true;
      if (k == "pattern")
        clause.patterns.clear();
      else if (k == "format")
        clause.formats.clear();
      else if (k == "multipleOf")
        clause.multiple_of.clear();
      else if (k == "minLength" || k == "maxLength")
        clause.min_length = 0, clause.max_length.reset();
      else if (k == "uniqueItems")
        clause.unique = false;
      else if (k == "contains")
        clause.contains.clear();
      else if (k == "propertyNames")
        clause.property_names = Sub();
      else if (k == "patternProperties")
        clause.pattern_properties.clear();
      else if (k == "not")
        clause.excluded.clear(), clause.negated_patterns.clear();
      else if (k == "minItems" || k == "maxItems")
        clause.min_items = 0, clause.max_items.reset();
      else if (k == "minProperties" || k == "maxProperties")
        clause.min_properties = 0, clause.max_properties.reset();
      else
        dropped = false;
      if (!dropped) throw;
      warn("dropped: " + refusal.status.message());
    }
  }
}

std::string Converter::emit_clause_once(const Clause& clause, const std::string& hint,
                                        uint32_t depth) {
  if (clause.has_values) {
    std::vector<std::string> options;
    std::vector<const Json*> seen;
    for (const Json* v : clause.values) {
      bool duplicate = false;
      for (const Json* s : seen)
        if (json_equal(*s, *v)) duplicate = true;
      if (duplicate || !clause_accepts(clause, *v, false)) continue;
      seen.push_back(v);
      if (clause.strict_integer && v->is_number()) {
        auto number = number_of(*v);
        if (!number) fail(ErrorCode::kUnsupported, "number constant too large");
        options.push_back(decimal_literal(*number, false));
        continue;
      }
      options.push_back(emit_value(*v, depth));
    }
    return alternatives(options);
  }
  switch (clause.type) {
    case JType::kNull:
      return clause.excluded.empty() ? "\"null\"" : "";
    case JType::kBoolean: {
      std::vector<std::string> options;
      for (bool b : {true, false}) {
        if (clause_accepts(clause, Json(b), false)) options.push_back(b ? "\"true\"" : "\"false\"");
      }
      return alternatives(options);
    }
    case JType::kNumber:
      return emit_number(clause, hint);
    case JType::kString:
      return emit_string(clause, hint);
    case JType::kArray:
      return emit_array(clause, hint, depth);
    case JType::kObject:
      return emit_object(clause, hint, depth);
  }
  return "";
}

std::string Converter::emit_value(const Json& value, uint32_t depth) {
  switch (type_of(value)) {
    case JType::kNull:
      return "\"null\"";
    case JType::kBoolean:
      return value.get<bool>() ? "\"true\"" : "\"false\"";
    case JType::kNumber: {
      auto number = number_of(value);
      if (!number) fail(ErrorCode::kUnsupported, "number constant too large");
      return decimal_literal(*number);
    }
    case JType::kString:
      return internal::gbnf_literal(internal::json_quote(value.get_ref<const std::string&>()));
    case JType::kArray: {
      if (value.empty()) return wrap_container("\"[\"", "\"]\"", "", true, depth);
      std::string body;
      for (size_t i = 0; i < value.size(); ++i)
        body =
            seq({body, i ? "\",\"" : "", inner(depth), emit_value(value[i], depth + 1), after()});
      return group(wrap_container("\"[\"", "\"]\"", body, false, depth));
    }
    case JType::kObject: {
      if (value.empty()) return wrap_container("\"{\"", "\"}\"", "", true, depth);
      std::vector<Member> members;
      for (auto it = value.begin(); it != value.end(); ++it) {
        Member member;
        member.text = seq({internal::gbnf_literal(internal::json_quote(it.key())), colon(),
                           emit_value(it.value(), depth + 1)});
        member.required = true;
        members.push_back(std::move(member));
      }
      std::string body =
          emit_members(members, "", members.size(), members.size(), "const", depth, "");
      return group(wrap_container("\"{\"", "\"}\"", body, false, depth));
    }
  }
  return "";
}

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

std::string Converter::emit_number(const Clause& clause, const std::string& hint) {
  if (clause.integer && clause.non_integer) return "";
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
  if (!clause.multiple_of.empty()) {
    // Multiples of several divisors are the multiples of their lcm.
    const std::string& pointer = clause.multiple_of[0].second;
    size_t scale = 0;
    for (const auto& [divisor, where] : clause.multiple_of)
      scale = std::max(scale, divisor.frac_digits.size());
    int64_t lcm = 1;
    for (const auto& [divisor, where] : clause.multiple_of) {
      auto scaled = scaled_integer(divisor, scale);
      if (!scaled || *scaled > 1000000000000LL) refuse("multipleOf", where, "divisor too large");
      lcm = lcm / std::gcd(lcm, *scaled) * *scaled;
      if (lcm > 1000000000000LL)
        refuse("multipleOf", where, "divisors with too large a common multiple");
    }
    Decimal divisor = from_scaled(lcm, scale);
    if (clause.non_integer) refuse("multipleOf", pointer, "combined with `not integer`");
    if (!clause.excluded.empty()) refuse("multipleOf", pointer, "combined with excluded values");
    bool lower_zero = clause.lo && clause.lo->is_zero() && !clause.lo_exclusive && !clause.hi;
    bool upper_zero = clause.hi && clause.hi->is_zero() && !clause.hi_exclusive && !clause.lo;
    if (bounded && !lower_zero && !upper_zero) {
      // A finite range: list the multiples when there are few.
      if (!clause.lo || !clause.hi)
        refuse("multipleOf", pointer, "combined with a one-sided range");
      size_t range_scale =
          std::max({scale, clause.lo->frac_digits.size(), clause.hi->frac_digits.size()});
      auto d = scaled_integer(divisor, range_scale), lo = scaled_integer(*clause.lo, range_scale),
           hi = scaled_integer(*clause.hi, range_scale);
      if (!d || !lo || !hi)
        refuse("multipleOf", pointer, "numbers too large to list the multiples");
      int64_t first = -floor_div(-*lo, *d), last = floor_div(*hi, *d);
      if (clause.lo_exclusive && first * *d == *lo) ++first;
      if (clause.hi_exclusive && last * *d == *hi) --last;
      if (last - first > 1000)
        refuse("multipleOf", pointer, "more than 1000 multiples in the range");
      std::vector<std::string> options;
      for (int64_t k = first; k <= last; ++k) {
        Decimal value = from_scaled(k * *d, range_scale);
        if (clause.integer && !value.is_integer()) continue;
        options.push_back(decimal_literal(value, !clause.strict_integer));
      }
      if (options.empty()) return "";
      return add_rule(hint + "-num", alternatives(options));
    }
    bool integer_only = clause.integer && !divisor.is_integer();
    std::string rules;
    std::string name = unique_name(hint + "-mult");
    auto start = internal::multiple_of_gbnf(divisor, integer_only, !clause.strict_integer, name,
                                            4096, &rules);
    if (!start)
      refuse("multipleOf", pointer, "divisor " + divisor.to_string() + " needs too many states");
    // Register the generated rules (their names share the unique prefix).
    size_t line_start = 0;
    while (line_start < rules.size()) {
      size_t end = rules.find('\n', line_start);
      std::string line = rules.substr(line_start, end - line_start);
      size_t sep = line.find(" ::= ");
      names_.insert(line.substr(0, sep));
      define_rule(line.substr(0, sep), line.substr(sep + 5));
      line_start = end + 1;
    }
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
      if (auto text = internal::decimal_range_gbnf(interval.lo, interval.hi, clause.non_integer))
        options.push_back(*text);
    }
  }
  if (options.empty()) return "";
  return add_rule(hint + "-num", alternatives(options));
}

std::string Converter::emit_string(const Clause& clause, const std::string& hint) {
  std::vector<Sourced> regexes = clause.patterns;
  std::vector<std::string> keywords(regexes.size(), "pattern");
  for (const Sourced& format : clause.formats) {
    internal::FormatLookup lookup = lookup_format(format.text);
    if (!lookup.supported)
      refuse("format", format.pointer, "format \"" + format.text + "\" cannot be enforced exactly");
    if (!lookup.narrowed.empty())
      warn("format \"" + format.text + "\" at " + display_pointer(format.pointer) +
           " accepts only " + lookup.narrowed);
    regexes.push_back({lookup.pattern, format.pointer});
    keywords.push_back("format");
  }
  std::optional<uint64_t> max_length = clause.max_length;
  if (!max_length && options_.default_max_length > 0 && regexes.empty()) {
    max_length = options_.default_max_length;
    warn("strings without maxLength limited to " + std::to_string(*max_length));
  }
  const bool lengths = clause.min_length > 0 || max_length.has_value();
  if (!clause.excluded.empty() && regexes.empty() && !lengths && clause.negated_patterns.empty()) {
    std::vector<std::string> names;
    for (const Json* v : clause.excluded) names.push_back(v->get<std::string>());
    return key_not_in(names, hint + "-str");
  }
  if (regexes.size() == 1 && clause.excluded.empty() && clause.negated_patterns.empty()) {
    // ecma_regex_to_gbnf with the parse shared with the rest of the conversion.
    const Result<internal::RegexNode>& parsed = parsed_pattern(regexes[0].text);
    auto translate = [&](uint64_t min_length,
                         std::optional<uint64_t> max_length) -> Result<internal::RegexTranslation> {
      const std::string any_char = base_rule("char");  // defined either way, as before
      if (!parsed.ok()) return parsed.status();
      return internal::regex_to_gbnf(*parsed, any_char, min_length, max_length);
    };
    auto translated = translate(0, std::nullopt);
    if (!translated.ok())
      refuse(keywords[0], regexes[0].pointer, translated.status().message(),
             translated.status().code());
    bool min_ok = clause.min_length <= translated->min_length;
    bool max_ok = !max_length || (translated->max_length && *translated->max_length <= *max_length);
    if (!min_ok || !max_ok) {
      // Intersect the lengths with the pattern where its shape allows;
      // otherwise the automaton below does it.
      translated = translate(clause.min_length, max_length);
      if (!translated.ok() && translated.status().message() == "pattern matches no string")
        return "";
    }
    if (translated.ok()) {
      std::string body = translated->gbnf;
      return add_rule(hint + "-str",
                      seq({"\"\\\"\"", body.empty() ? "" : group(body), "\"\\\"\""}));
    }
  }
  if (!regexes.empty() || !clause.negated_patterns.empty() || !clause.excluded.empty())
    return emit_string_automaton(clause, max_length, hint);
  if (clause.min_length == 0 && !max_length) return base_rule("string");
  // The character written out rather than as `char`: the lowering copies a
  // referenced rule into every repetition, but lifts a large repeated
  // expression into one rule.
  std::string chars = counted(group(char_body()), clause.min_length, max_length, hint + "-chars");
  return add_rule(hint + "-str", seq({"\"\\\"\"", chars, "\"\\\"\""}));
}

// The minimal automaton of a format's pattern, built once per process
// (formats are a fixed set of patterns, and determinizing some, such as
// email, takes tens of milliseconds). `build` makes it on a miss; failures
// are not kept.
Result<internal::CharDfa> format_dfa(const std::string& pattern,
                                     const std::function<Result<internal::CharDfa>()>& build) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const internal::CharDfa>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(pattern);
    if (it != cache.end()) return *it->second;
  }
  Result<internal::CharDfa> built = build();
  if (!built.ok()) return built;
  auto minimal = std::make_shared<const internal::CharDfa>(
      internal::dfa_minimize(*built, [](uint32_t l) { return l != 0; }));
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(pattern, minimal);
  return *minimal;
}

// The strings a string clause allows, as an automaton: the intersection
// of its patterns and formats, the complements of the patterns it must not
// match and of excluded values, and its length bounds; its values when it
// has some. Refuses (naming the keyword) past the state budget.
internal::CharDfa Converter::string_dfa(const Clause& clause, std::optional<uint64_t> max_length) {
  if (clause.has_values) {
    std::vector<std::string> words;
    for (const Json* v : clause.values)
      if (clause_accepts(clause, *v, false)) words.push_back(v->get<std::string>());
    return internal::dfa_words(words);
  }
  internal::CharDfa dfa = internal::dfa_any();
  bool any = true;  // dfa is still dfa_any(): the first part is the intersection
  auto narrow = [&](Result<internal::CharDfa> part, const std::string& keyword,
                    const std::string& pointer, size_t budget = internal::kDefaultDfaStates,
                    bool minimal = false) {
    if (!part.ok()) refuse(keyword, pointer, part.status().message(), part.status().code());
    if (any && part->states.size() <= budget) {
      // Every string and the part: the part itself, minimized.
      dfa = minimal ? *part : internal::dfa_minimize(*part, [](uint32_t l) { return l != 0; });
    } else {
      Result<internal::CharDfa> both = internal::dfa_intersection(dfa, *part, budget);
      if (!both.ok()) refuse(keyword, pointer, both.status().message(), both.status().code());
      dfa = std::move(both).value();
    }
    any = false;
    charge_automaton(dfa.states.size() + part->states.size(), keyword, pointer);
  };
  auto regex_dfa = [&](const std::string& text, const std::string& keyword,
                       const std::string& pointer) {
    return internal::dfa_from_regex(parse_pattern(text, keyword, pointer));
  };
  for (const Sourced& pattern : clause.patterns)
    narrow(regex_dfa(pattern.text, "pattern", pattern.pointer), "pattern", pattern.pointer);
  for (const Sourced& format : clause.formats) {
    internal::FormatLookup lookup = lookup_format(format.text);
    if (!lookup.supported)
      refuse("format", format.pointer, "format \"" + format.text + "\" cannot be enforced exactly");
    narrow(format_dfa(lookup.pattern,
                      [&] { return regex_dfa(lookup.pattern, "format", format.pointer); }),
           "format", format.pointer, internal::kDefaultDfaStates, true);
  }
  for (const Sourced& negated : clause.negated_patterns) {
    Result<internal::CharDfa> matching = regex_dfa(negated.text, "not", negated.pointer);
    if (!matching.ok())
      refuse("not", negated.pointer, matching.status().message(), matching.status().code());
    narrow(internal::dfa_complement(*matching), "not", negated.pointer);
  }
  if (!clause.excluded.empty()) {
    std::vector<std::string> names;
    for (const Json* v : clause.excluded) names.push_back(v->get<std::string>());
    narrow(internal::dfa_complement(internal::dfa_words(names)), "not", clause.values_pointer);
  }
  // A length bound multiplies the states by the bound (maxLength 1024 on
  // an e-mail address is some ten thousand).
  constexpr size_t kLengthStates = size_t{1} << 15;
  // Each state is counted up to the bound: past the budget, refuse before
  // building most of it.
  if (max_length && static_cast<double>(dfa.states.size()) * static_cast<double>(*max_length + 1) >
                        static_cast<double>(kLengthStates))
    refuse("maxLength", clause.length_pointer,
           "the pattern's " + std::to_string(dfa.states.size()) +
               " automaton states times the length bound are more than " +
               std::to_string(kLengthStates));
  if (clause.min_length > 0 || max_length)
    narrow(internal::dfa_length(clause.min_length, max_length, kLengthStates),
           clause.min_length > 0 && !max_length ? "minLength" : "maxLength", clause.length_pointer,
           kLengthStates);
  return dfa;
}

// GBNF for the JSON string bodies an automaton accepts with a label that
// passes `keep`: one rule per state. "" when there are none.
std::string Converter::dfa_rules(const internal::CharDfa& dfa,
                                 const std::function<bool(uint32_t)>& keep,
                                 const std::string& hint) {
  // The state rules name each other last, so the lowering inlines them into
  // plain DFA states of the caller, in linear size (as a rule call per
  // byte, a key automaton cost milliseconds per mask). Past a couple of
  // thousand states, copies at every place that names the automaton can
  // take the lowering past its state budget (one MaskBench schema went past
  // a million states): there each state stays a rule of its own.
  constexpr size_t kInlinedStates = 2048;
  const bool separate = dfa.states.size() > kInlinedStates;
  return internal::dfa_to_gbnf(
      dfa, keep, [&] { return unique_name(hint); },
      [&](const std::string& name, const std::string& body) {
        define_rule(name, separate ? "(" + body + ") | " + base_rule("never") + " " + name : body);
      },
      "\"\\\"\"");
}

// Several patterns, a pattern the string must not match, excluded values or
// lengths a pattern's shape does not allow to intersect directly.
std::string Converter::emit_string_automaton(const Clause& clause,
                                             std::optional<uint64_t> max_length,
                                             const std::string& hint) {
  std::string start = dfa_rules(
      string_dfa(clause, max_length), [](uint32_t label) { return label != 0; }, "s");
  if (start.empty()) return "";
  return add_rule(hint + "-str", seq({"\"\\\"\"", start}));
}

// Strings (canonically encoded) other than the given ones, via a trie.
std::string Converter::key_not_in(const std::vector<std::string>& names, const std::string& hint) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  auto known = key_not_in_memo_.find(sorted);
  if (known != key_not_in_memo_.end()) return known->second;
  std::string result = key_not_in_uncached(names, hint);
  key_not_in_memo_.emplace(std::move(sorted), result);
  return result;
}

std::string Converter::key_not_in_uncached(const std::vector<std::string>& names,
                                           const std::string& hint) {
  (void)hint;
  // A trie of the names, its nodes merged where their futures are equal
  // (names sharing their ends): the minimal automaton of the names, built
  // bottom-up since children come after their parents.
  // Children in a short vector (found by a linear search, sorted by code
  // point once the trie is built).
  struct Node {
    std::vector<std::pair<uint32_t, uint32_t>> children;  // code point, node
    bool terminal = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& name : names) {
    uint32_t at = 0;
    for (size_t i = 0; i < name.size();) {
      // UTF-8 from a JSON parser: valid.
      const auto b = static_cast<uint8_t>(name[i]);
      const size_t extra = b < 0x80 ? 0 : (b & 0xE0) == 0xC0 ? 1 : (b & 0xF0) == 0xE0 ? 2 : 3;
      uint32_t cp = extra == 0 ? b : extra == 1 ? (b & 0x1F) : extra == 2 ? (b & 0x0F) : (b & 0x07);
      for (size_t k = 1; k <= extra && i + k < name.size(); ++k)
        cp = (cp << 6) | (static_cast<uint8_t>(name[i + k]) & 0x3F);
      i += extra + 1;
      auto& children = trie[at].children;
      auto it =
          std::find_if(children.begin(), children.end(),
                       [cp](const std::pair<uint32_t, uint32_t>& c) { return c.first == cp; });
      if (it != children.end()) {
        at = it->second;
        continue;
      }
      trie.emplace_back();
      const auto index = static_cast<uint32_t>(trie.size() - 1);
      trie[at].children.emplace_back(cp, index);
      at = index;
    }
    trie[at].terminal = true;
  }
  for (Node& node : trie) std::sort(node.children.begin(), node.children.end());
  std::vector<uint32_t> canonical(trie.size());
  std::vector<uint32_t> representative;  // canonical id -> a node
  std::unordered_map<std::string, uint32_t> ids;
  std::string signature;
  for (size_t i = trie.size(); i-- > 0;) {
    signature.assign(1, trie[i].terminal ? '1' : '0');
    for (const auto& [cp, child] : trie[i].children) {
      const uint32_t words[2] = {cp, canonical[child]};
      signature.append(reinterpret_cast<const char*>(words), sizeof words);
    }
    auto [it, inserted] = ids.emplace(signature, static_cast<uint32_t>(ids.size()));
    if (inserted) representative.push_back(static_cast<uint32_t>(i));
    canonical[i] = it->second;
  }
  // One rule per merged state: characters that continue some name lead to
  // other states, the others leave the names, then anything (the shared
  // rule `key-tail`); states that end no name may end the key, closing
  // quote included (so that no state before it ends a rule). Every state
  // rule, `key-tail` and `key-leave` is named only last in a rule, so the
  // lowering builds each once where the key is named: the whole automaton
  // becomes plain states of the caller.
  const internal::CodePointSet shared = internal::normalize_set(
      {{0x00, 0x1F}, {'"', '"'}, {'/', '/'}, {'\\', '\\'}, {0x80, kMaxCodePoint}});
  if (key_tail_rule_.empty()) {
    key_tail_rule_ = add_rule("key-tail", base_rule("cchar") + "* \"\\\"\"");
    key_leave_rule_ = add_rule(
        "key-leave", add_rule("key-char", internal::json_char_gbnf(shared)) + " " + key_tail_rule_);
  }
  const std::string base = unique_name("k");
  std::vector<std::string> state_names(representative.size());
  for (uint32_t id = 0; id < representative.size(); ++id)
    state_names[id] = id == canonical[0] ? base : base + "s" + std::to_string(id);
  // The class gbnf_char_class writes for a set of ASCII code points (a
  // bitmap here): ranges in order, letters and digits as themselves.
  auto ascii_class = [](const std::bitset<128>& set) {
    auto write = [](std::string& out, uint32_t cp) {
      if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
        out += static_cast<char>(cp);
      } else {
        static const char kHex[] = "0123456789ABCDEF";
        out += "\\x";
        out += kHex[cp >> 4];
        out += kHex[cp & 15];
      }
    };
    std::string out = "[";
    for (uint32_t cp = 0; cp < 128;) {
      if (!set[cp]) {
        ++cp;
        continue;
      }
      uint32_t last = cp;
      while (last + 1 < 128 && set[last + 1]) ++last;
      write(out, cp);
      if (last != cp) {
        out += '-';
        write(out, last);
      }
      cp = last + 1;
    }
    return out + "]";
  };
  std::string body;
  std::string used_key;
  for (uint32_t id = 0; id < representative.size(); ++id) {
    const Node& node = trie[representative[id]];
    // Characters that need no escape and are ASCII: the common case, kept
    // off the code point set machinery.
    auto plain = [](uint32_t cp) {
      return cp >= 0x20 && cp < 0x7F && cp != '"' && cp != '\\' && cp != '/';
    };
    body.clear();
    used_key.clear();
    if (!node.terminal) body += '(';
    bool all_plain = true;
    bool first = true;
    for (const auto& [cp, child] : node.children) {
      if (!first) body += " | ";
      first = false;
      if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
        body += '[';  // what gbnf_char_class writes, without its allocations
        body += static_cast<char>(cp);
        body += ']';
      } else if (plain(cp)) {
        body += internal::gbnf_char_class({{cp, cp}});
      } else {
        body += internal::json_char_gbnf({{cp, cp}});
        all_plain = false;
      }
      body += ' ';
      body += state_names[canonical[child]];
      used_key.append(reinterpret_cast<const char*>(&cp), sizeof cp);
    }
    if (!first) body += " | ";
    // Spellings differ ("/" or "\/"), but each decodes to one code point:
    // the branches split by code point.
    if (all_plain) {
      // Nearly always: the ASCII characters no name continues with (one
      // rule per set of continuations), and the shared rest.
      auto cached = other_ascii_memo_.find(used_key);
      if (cached == other_ascii_memo_.end()) {
        // The ASCII that `shared` leaves out: 0x20-0x7F but for '"', '/'
        // and '\\', less the continuations.
        std::bitset<128> ascii;
        for (uint32_t cp = 0x20; cp < 0x80; ++cp) ascii[cp] = true;
        ascii['"'] = ascii['/'] = ascii['\\'] = false;
        for (const auto& [cp, child] : node.children) ascii[cp] = false;
        std::string leave = key_leave_rule_;
        if (ascii.any()) leave = ascii_class(ascii) + " " + key_tail_rule_ + " | " + leave;
        cached = other_ascii_memo_.emplace(used_key, add_rule("kc", leave)).first;
      }
      body += cached->second;
    } else {
      internal::CodePointSet used;
      for (const auto& [cp, child] : node.children) used.push_back({cp, cp});
      body += internal::json_char_gbnf(internal::complement_set(internal::normalize_set(used)));
      body += ' ';
      body += key_tail_rule_;
    }
    if (!node.terminal) body += " | \"\\\"\")";  // the key may end here
    names_.insert(state_names[id]);
    define_rule(state_names[id], body);
  }
  return seq({"\"\\\"\"", base});
}

std::string Converter::emit_string_key_rule(const Sub& names, const std::string& hint) {
  std::vector<std::string> options;
  for (const Clause& clause : normalize(names)) {
    if (clause.type != JType::kString) continue;
    std::string expr = emit_clause(clause, hint, 0);
    if (!expr.empty()) options.push_back(expr);
  }
  if (options.empty()) return "";
  return add_rule(hint, alternatives(options));
}

std::string Converter::emit_members(const std::vector<Member>& members,
                                    const std::string& additional, uint64_t min_count,
                                    std::optional<uint64_t> max_count, const std::string& hint,
                                    uint32_t depth, const std::string& pointer) {
  (void)hint;  // state rules get short names of their own
  // Non-empty member lists only: callers add the empty object themselves.
  uint64_t minimum = std::max<uint64_t>(min_count, 1);
  if (max_count && *max_count == 0) return "";
  size_t n = members.size();
  auto member_text = [&](const std::string& text, bool first) {
    return seq({first ? "" : "\",\"", inner(depth), text, after()});
  };
  bool any_order = options_.property_order == JsonSchemaOptions::PropertyOrder::kAny &&
                   n <= options_.any_order_max_properties && n > 1;
  uint64_t cap = std::max<uint64_t>(minimum, max_count ? *max_count : 0);
  if (max_count) check_repeat(*max_count, "maxProperties", pointer);
  check_repeat(minimum, "minProperties", pointer);
  std::string base = unique_name("o");  // short: one rule per state
  // State: (position or subset, members so far capped at `cap`).
  std::map<std::pair<uint64_t, uint64_t>, std::string> names;
  std::map<std::pair<uint64_t, uint64_t>, bool> productive;
  auto state_name = [&](uint64_t where, uint64_t count) {
    auto key = std::make_pair(where, count);
    auto it = names.find(key);
    if (it != names.end()) return it->second;
    std::string name = base + "-" + std::to_string(where) + "-" + std::to_string(count);
    names_.insert(name);
    names[key] = name;
    return name;
  };
  auto next_count = [&](uint64_t count) -> std::optional<uint64_t> {
    if (max_count && count + 1 > *max_count) return std::nullopt;
    return std::min(count + 1, cap);
  };
  std::vector<std::pair<std::string, std::string>> pending;
  // Past a few members, each state stays a rule of its own: a long member
  // list outgrows the lowering's inline budget, and each state then still
  // inlined would be a rule holding a copy of the members after it
  // (quadratic space).
  constexpr size_t kInlinedMembers = 8;
  auto define_states = [&]() {
    for (auto& [name, body] : pending) {
      std::string text = body.empty() ? "\"\"" : body;
      if (n > kInlinedMembers) text = "(" + text + ") | " + base_rule("never") + " " + name;
      define_rule(name, text);
    }
  };
  if (!any_order && !max_count && minimum == 1) {
    // Any number of members: one parse per object. Other members go right
    // after the member they follow (or first); declared ones in order.
    //   first ::= A ("," A)* after_0 | take_0
    //   take_i ::= m_i ("," A)* after_(i+1) | take_(i+1)     (the latter if m_i is optional)
    //   after_i ::= ("," m_i ("," A)*)? after_(i+1)           (no "?" if m_i is required)
    const std::string others =
        additional.empty() ? "" : group(member_text(additional, false)) + "*";
    auto after = [&](size_t i) { return base + "-a" + std::to_string(i); };
    auto take = [&](size_t i) { return base + "-t" + std::to_string(i); };
    // The first declared member that is required: none can be skipped past it.
    size_t first_required = n;
    for (size_t i = 0; i < n; ++i)
      if (members[i].required) {
        first_required = i;
        break;
      }
    for (size_t i = 0; i <= n; ++i) {
      names_.insert(after(i));
      std::string body;
      if (i < n) {
        // Member i and the other members after it, named once: both the
        // first member and a later one write it.
        const std::string member = base + "-m" + std::to_string(i);
        names_.insert(member);
        pending.emplace_back(member, seq({member_text(members[i].text, true), others}));
        std::string written = seq({"\",\"", member});
        body = seq({members[i].required ? written : group(written) + "?", after(i + 1)});
      }
      pending.emplace_back(after(i), body);
    }
    for (size_t i = 0; i < n && i <= first_required; ++i) {
      names_.insert(take(i));
      std::vector<std::string> options = {seq({base + "-m" + std::to_string(i), after(i + 1)})};
      if (!members[i].required && i + 1 < n && i + 1 <= first_required)
        options.push_back(take(i + 1));
      pending.emplace_back(take(i), alternatives(options));
    }
    std::vector<std::string> first;
    if (!additional.empty())
      first.push_back(seq({member_text(additional, true), others, after(0)}));
    if (n > 0) first.push_back(take(0));
    if (first.empty()) return "";
    define_states();
    return group(alternatives(first));
  }
  if (!any_order) {
    // Productive states, computed from the end.
    for (int i = static_cast<int>(n); i >= 0; --i) {
      for (int64_t count = static_cast<int64_t>(cap); count >= 0; --count) {
        auto c = static_cast<uint64_t>(count);
        bool ok = false;
        if (static_cast<size_t>(i) == n && c >= minimum) ok = true;
        if (static_cast<size_t>(i) < n) {
          auto next = next_count(c);
          if (next && productive[{static_cast<uint64_t>(i) + 1, *next}]) ok = true;
          if (!members[static_cast<size_t>(i)].required &&
              productive[{static_cast<uint64_t>(i) + 1, c}])
            ok = true;
        }
        if (!additional.empty()) {
          auto next = next_count(c);
          if (next && *next != c && productive[{static_cast<uint64_t>(i), *next}]) ok = true;
        }
        productive[{static_cast<uint64_t>(i), c}] = ok;
      }
    }
    if (!productive[{0, 0}]) return "";
    for (size_t i = 0; i <= n; ++i) {
      for (uint64_t c = 0; c <= cap; ++c) {
        if (!productive[{i, c}]) continue;
        std::vector<std::string> options;
        auto next = next_count(c);
        if (next && *next == c) {
          // The count no longer changes: other members loop here, then
          // member i or not, and the next state is referenced once (a
          // choice between two references to it would double its size
          // wherever the lowering inlines it).
          std::string loop = additional.empty() ? "" : group(member_text(additional, c == 0)) + "*";
          std::string body = loop;
          if (i < n) {
            std::string take = member_text(members[i].text, c == 0);
            body =
                seq({loop, members[i].required ? take : group(take) + "?", state_name(i + 1, c)});
          }
          pending.emplace_back(state_name(i, c), body);
          continue;
        }
        if (!additional.empty()) {
          auto next = next_count(c);
          if (next && productive[{i, *next}])
            options.push_back(seq({member_text(additional, c == 0), state_name(i, *next)}));
        }
        if (i < n) {
          auto next = next_count(c);
          if (next && productive[{i + 1, *next}])
            options.push_back(
                seq({member_text(members[i].text, c == 0), state_name(i + 1, *next)}));
          if (!members[i].required && productive[{i + 1, c}])
            options.push_back(state_name(i + 1, c));
        }
        bool can_end = i == n && c >= minimum;
        std::string body = alternatives(options);
        if (can_end) body = body.empty() ? "" : "(" + body + ")?";
        pending.emplace_back(state_name(i, c), body);
      }
    }
  } else {
    uint64_t all = (uint64_t{1} << n) - 1;
    uint64_t required_mask = 0;
    for (size_t i = 0; i < n; ++i)
      if (members[i].required) required_mask |= uint64_t{1} << i;
    // Productive states: iterate to a fixed point (subsets only grow).
    for (int64_t mask = static_cast<int64_t>(all); mask >= 0; --mask) {
      for (int64_t count = static_cast<int64_t>(cap); count >= 0; --count) {
        auto m = static_cast<uint64_t>(mask);
        auto c = static_cast<uint64_t>(count);
        bool ok = (m & required_mask) == required_mask && c >= minimum;
        auto next = next_count(c);
        for (size_t j = 0; j < n && !ok; ++j)
          if (!(m & (uint64_t{1} << j)) && next && productive[{m | (uint64_t{1} << j), *next}])
            ok = true;
        if (!additional.empty() && next && *next != c && productive[{m, *next}]) ok = true;
        productive[{m, c}] = ok;
      }
    }
    if (!productive[{0, 0}]) return "";
    for (uint64_t m = 0; m <= all; ++m) {
      for (uint64_t c = 0; c <= cap; ++c) {
        if (!productive[{m, c}]) continue;
        std::vector<std::string> options;
        auto next = next_count(c);
        if (!additional.empty() && next && productive[{m, *next}])
          options.push_back(seq({member_text(additional, c == 0), state_name(m, *next)}));
        for (size_t j = 0; j < n; ++j) {
          uint64_t bit = uint64_t{1} << j;
          if (!(m & bit) && next && productive[{m | bit, *next}])
            options.push_back(
                seq({member_text(members[j].text, c == 0), state_name(m | bit, *next)}));
        }
        bool can_end = (m & required_mask) == required_mask && c >= minimum;
        std::string body = alternatives(options);
        if (can_end) body = body.empty() ? "" : "(" + body + ")?";
        pending.emplace_back(state_name(m, c), body);
      }
    }
  }
  define_states();
  return state_name(0, 0);
}

// Members with undeclared keys when patternProperties (or propertyNames
// next to declared properties) apply: one automaton over keys labels each
// key with the patterns it matches, so that its value gets all their
// schemas, or the additionalProperties schema when it matches none;
// declared names and names propertyNames rejects are left out. One
// alternative per label that occurs.
std::string Converter::other_members(const Clause& clause, const std::vector<std::string>& declared,
                                     const std::string& hint, uint32_t depth) {
  constexpr uint32_t kKey = 1u << 31;  // a key that may be written here
  constexpr size_t kMaxPatterns = 16;
  const std::string& pattern_pointer = clause.pattern_properties.empty()
                                           ? clause.property_names_pointer
                                           : clause.pattern_properties[0].first.pointer;
  if (clause.pattern_properties.size() > kMaxPatterns)
    refuse("patternProperties", pattern_pointer,
           "more than " + std::to_string(kMaxPatterns) + " patterns");
  auto limited = [&](Result<internal::CharDfa> dfa, const std::string& keyword,
                     const std::string& pointer) {
    if (!dfa.ok()) refuse(keyword, pointer, dfa.status().message(), dfa.status().code());
    return std::move(dfa).value();
  };
  internal::CharDfa keys = internal::dfa_complement(internal::dfa_words(declared), kKey);
  if (!clause.property_names.is_true()) {
    // The union of the string clauses of propertyNames.
    std::optional<internal::CharDfa> names;
    for (const Clause& c : normalize(clause.property_names)) {
      if (c.type != JType::kString) continue;
      internal::CharDfa part = string_dfa(c, c.max_length);
      names = names ? limited(internal::dfa_product(
                                  *names, part,
                                  [](uint32_t x, uint32_t y) -> uint32_t { return x | y ? 1 : 0; }),
                              "propertyNames", clause.property_names_pointer)
                    : part;
    }
    if (!names) return "";
    keys = limited(
        internal::dfa_product(keys, *names, [](uint32_t x, uint32_t y) { return y != 0 ? x : 0u; }),
        "propertyNames", clause.property_names_pointer);
  }
  for (size_t i = 0; i < clause.pattern_properties.size(); ++i) {
    const Sourced& pattern = clause.pattern_properties[i].first;
    const internal::RegexNode parsed =
        parse_pattern(pattern.text, "patternProperties", pattern.pointer);
    internal::CharDfa matches =
        limited(internal::dfa_from_regex(parsed, 1u << i), "patternProperties", pattern.pointer);
    keys = limited(internal::dfa_product(
                       keys, matches, [](uint32_t x, uint32_t y) { return x != 0 ? x | y : 0u; }),
                   "patternProperties", pattern.pointer);
    keys = internal::dfa_minimize(keys, [](uint32_t label) { return label != 0; });
  }
  std::set<uint32_t> labels;
  for (const internal::CharDfa::State& state : keys.states)
    if (state.label & kKey) labels.insert(state.label);
  std::vector<std::string> options;
  for (uint32_t label : labels) {
    Sub value;
    const uint32_t matched = label & ~kKey;
    if (matched == 0) {
      value = clause.additional;
    } else {
      for (size_t i = 0; i < clause.pattern_properties.size(); ++i)
        if (matched & (1u << i)) value = conj(value, clause.pattern_properties[i].second);
    }
    std::string value_rule = rule_for(value, hint + "-pattern-value", depth + 1);
    if (value_rule.empty()) continue;
    std::string key = dfa_rules(
        keys, [label](uint32_t l) { return l == label; }, "pk");
    if (key.empty()) continue;
    options.push_back(seq({"\"\\\"\"", key, colon(), value_rule}));
  }
  return alternatives(options);
}

std::string Converter::emit_object(const Clause& clause, const std::string& hint, uint32_t depth) {
  // Which keys may appear beyond the declared ones, and with what values.
  bool additional_allowed = !normalize(clause.additional).empty();
  // Declared members, then required names that were not declared.
  std::vector<std::pair<std::string, Sub>> declared = clause.properties;
  for (const std::string& name : clause.required)
    if (!find_property(clause, name)) declared.emplace_back(name, property_schema(clause, name));
  std::vector<std::string> declared_names;
  std::vector<Member> members;
  for (const auto& [name, sub] : declared) {
    declared_names.push_back(name);
    bool required = clause.required.count(name) > 0;
    bool name_ok = clause.property_names.is_true() || accepts(clause.property_names, Json(name));
    std::string value_rule = name_ok ? rule_for(sub, hint + "-" + name, depth + 1) : "";
    if (value_rule.empty()) {
      if (required) return "";
      continue;
    }
    members.push_back(
        {seq({internal::gbnf_literal(internal::json_quote(name)), colon(), value_rule}), required});
  }
  std::string additional_member;
  if (!clause.pattern_properties.empty() ||
      (!clause.property_names.is_true() && !declared_names.empty())) {
    std::string options = other_members(clause, declared_names, hint, depth);
    if (!options.empty()) additional_member = unshared_rule("m", options);
  } else if (additional_allowed) {
    std::string additional_key;
    if (!clause.property_names.is_true())
      additional_key = emit_string_key_rule(clause.property_names, hint + "-name");
    else if (declared_names.empty())
      additional_key = base_rule("string");
    else
      additional_key = add_rule(hint + "-key", key_not_in(declared_names, hint + "-key"));
    std::string value_rule =
        additional_key.empty() ? "" : rule_for(clause.additional, hint + "-additional", depth + 1);
    // Written between every two declared members: one rule, not a copy each.
    if (!value_rule.empty())
      additional_member = unshared_rule("m", seq({additional_key, colon(), value_rule}));
  }
  bool empty_ok = clause.required.empty() && clause.min_properties == 0;
  std::string body =
      emit_members(members, additional_member, clause.min_properties, clause.max_properties, hint,
                   depth, clause.properties_count_pointer);
  if (body.empty() && !empty_ok) return "";
  return add_rule(hint + "-object", wrap_container("\"{\"", "\"}\"", body, empty_ok, depth));
}

// Several `contains` (from allOf, or a negated `items`), each with a
// minimum and no maximum: states count the matches of each (capped at its
// minimum); an item may count for any set of them it matches, written as
// the conjunction of their schemas with `items`.
std::string Converter::emit_contains_all(const Clause& clause, const std::string& hint,
                                         uint32_t depth) {
  const std::vector<Contains>& all = clause.contains;
  constexpr size_t kMaxContains = 4;
  constexpr uint64_t kMaxStates = 256;
  if (all.size() > kMaxContains)
    refuse("contains", all[kMaxContains].pointer,
           "more than " + std::to_string(kMaxContains) + " contains constraints on one array");
  uint64_t states = 1;
  for (const Contains& c : all) {
    if (c.max) refuse("contains", c.pointer, "maxContains next to another contains");
    states *= c.min + 1;
    if (states > kMaxStates)
      refuse(
          "contains", c.pointer,
          "minContains counts need more than " + std::to_string(kMaxStates) + " states together");
  }
  if (!clause.prefix.empty()) refuse("contains", all[0].pointer, "combined with prefixItems");
  if (clause.max_items || clause.min_items > 0)
    refuse("contains", all[0].pointer, "combined with minItems/maxItems");
  auto item_text = [&](const std::string& rule, bool first) {
    return seq({first ? "" : "\",\"", inner(depth), rule, after()});
  };
  // One item rule per set of constraints it counts for.
  const size_t k = all.size();
  std::vector<std::string> item_rules(size_t{1} << k);
  for (size_t subset = 0; subset < item_rules.size(); ++subset) {
    Sub schema = clause.items;
    for (size_t i = 0; i < k; ++i)
      if (subset & (size_t{1} << i)) schema = conj(schema, all[i].schema);
    item_rules[subset] = rule_for(schema, hint + "-item", depth + 1);
  }
  // A state is the capped counts, as one number in mixed radix.
  auto counts_of = [&](uint64_t state) {
    std::vector<uint64_t> counts(k);
    for (size_t i = 0; i < k; ++i) {
      counts[i] = state % (all[i].min + 1);
      state /= all[i].min + 1;
    }
    return counts;
  };
  auto state_of = [&](const std::vector<uint64_t>& counts) {
    uint64_t state = 0;
    for (size_t i = k; i-- > 0;) state = state * (all[i].min + 1) + counts[i];
    return state;
  };
  const std::string base = unique_name("c");
  auto name = [&](uint64_t state, bool started) {
    std::string n = base + "-" + std::to_string(state) + (started ? "s" : "");
    names_.insert(n);
    return n;
  };
  for (uint64_t state = 0; state < states; ++state) {
    const std::vector<uint64_t> counts = counts_of(state);
    bool satisfied = true;
    for (size_t i = 0; i < k; ++i) satisfied = satisfied && counts[i] >= all[i].min;
    for (bool started : {false, true}) {
      std::vector<std::string> options;
      for (size_t subset = 0; subset < item_rules.size(); ++subset) {
        if (item_rules[subset].empty()) continue;
        std::vector<uint64_t> next = counts;
        for (size_t i = 0; i < k; ++i)
          if (subset & (size_t{1} << i)) next[i] = std::min(next[i] + 1, all[i].min);
        options.push_back(
            seq({item_text(item_rules[subset], !started), name(state_of(next), true)}));
      }
      std::string body = alternatives(options);
      if (satisfied && started) body = body.empty() ? "\"\"" : "(" + body + ")?";
      if (body.empty()) body = base_rule("never");
      define_rule(name(state, started), body);
    }
  }
  bool empty_ok = true;
  for (const Contains& c : all) empty_ok = empty_ok && c.min == 0;
  return add_rule(hint + "-array",
                  wrap_container("\"[\"", "\"]\"", name(0, false), empty_ok, depth));
}

std::string Converter::emit_array(const Clause& clause, const std::string& hint, uint32_t depth) {
  const std::string& count_pointer = clause.items_count_pointer;
  std::optional<uint64_t> max_items = clause.max_items;
  if (!max_items && options_.default_max_items > 0 && clause.contains.empty()) {
    max_items = options_.default_max_items;
    warn("arrays without maxItems limited to " + std::to_string(*max_items));
  }
  auto item_text = [&](const std::string& rule, bool first) {
    return seq({first ? "" : "\",\"", inner(depth), rule, after()});
  };
  if (clause.unique && !(max_items && *max_items <= 1)) {
    // Exact only over small finite domains: every array is a sequence of
    // distinct values, i.e. a walk over subsets; the subset's size is the
    // position, so prefixItems only narrow the values a step may add.
    const size_t k = clause.prefix.size();
    if (k > 6)
      refuse("uniqueItems", clause.unique_pointer, "combined with more than 6 prefixItems");
    std::vector<std::vector<const Json*>> domains(k + 1);  // per position; k: the rest
    bool finite = true;
    static const Json kTrue(true), kFalse(false);
    auto collect = [&](const Sub& sub, std::vector<const Json*>& domain) {
      for (const Clause& item : normalize(sub)) {
        if (item.type == JType::kNull && item.excluded.empty()) {
          domain.push_back(&null_value());
        } else if (item.type == JType::kBoolean && !item.has_values) {
          for (const Json* b : {&kTrue, &kFalse})
            if (clause_accepts(item, *b, false)) domain.push_back(b);
        } else if (item.has_values) {
          for (const Json* v : item.values)
            if (clause_accepts(item, *v, false)) domain.push_back(v);
        } else {
          finite = false;
        }
      }
    };
    for (size_t i = 0; i < k; ++i) collect(clause.prefix[i], domains[i]);
    // Past the prefix only when arrays may be longer than it.
    if (!max_items || *max_items > k) collect(clause.items, domains[k]);
    std::vector<const Json*> distinct;
    std::vector<std::vector<size_t>> allowed(k + 1);  // indices into distinct
    for (size_t p = 0; p <= k; ++p) {
      for (const Json* v : domains[p]) {
        size_t index = distinct.size();
        for (size_t d = 0; d < distinct.size(); ++d)
          if (json_equal(*distinct[d], *v)) index = d;
        if (index == distinct.size()) distinct.push_back(v);
        if (std::find(allowed[p].begin(), allowed[p].end(), index) == allowed[p].end())
          allowed[p].push_back(index);
      }
    }
    if (!finite || distinct.size() > 6)
      refuse("uniqueItems", clause.unique_pointer,
             "items are not drawn from a small finite set of values");
    if (!clause.contains.empty())
      refuse("contains", clause.contains[0].pointer, "combined with uniqueItems");
    size_t n = distinct.size();
    uint64_t all = (uint64_t{1} << n) - 1;
    std::string base = unique_name(hint + "-set");
    std::vector<std::string> values;
    for (const Json* v : distinct) values.push_back(emit_value(*v, depth + 1));
    auto popcount = [](uint64_t m) { return static_cast<uint64_t>(__builtin_popcountll(m)); };
    // The values the next item may take after the set m.
    auto next = [&](uint64_t m) -> const std::vector<size_t>& {
      return allowed[std::min<uint64_t>(popcount(m), k)];
    };
    uint64_t min_items = std::max<uint64_t>(clause.min_items, 1);
    std::map<uint64_t, bool> productive;
    for (int64_t mask = static_cast<int64_t>(all); mask >= 0; --mask) {
      auto m = static_cast<uint64_t>(mask);
      bool ok = popcount(m) >= min_items && (!max_items || popcount(m) <= *max_items);
      if (max_items && popcount(m) > *max_items) {
        productive[m] = false;
        continue;
      }
      for (size_t j : next(m))
        if (!ok && !(m & (uint64_t{1} << j)) && productive[m | (uint64_t{1} << j)]) ok = true;
      productive[m] = ok;
    }
    std::string body;
    if (productive[0]) {
      for (uint64_t m = 0; m <= all; ++m) {
        if (!productive[m]) continue;
        std::vector<std::string> options;
        for (size_t j : next(m)) {
          uint64_t bit = uint64_t{1} << j;
          if (!(m & bit) && productive[m | bit])
            options.push_back(
                seq({item_text(values[j], m == 0), base + "-" + std::to_string(m | bit)}));
        }
        bool can_end = popcount(m) >= min_items;
        std::string rule_body = alternatives(options);
        if (can_end) rule_body = rule_body.empty() ? "\"\"" : "(" + rule_body + ")?";
        names_.insert(base + "-" + std::to_string(m));
        define_rule(base + "-" + std::to_string(m), rule_body);
      }
      body = base + "-0";
    }
    bool empty_ok = clause.min_items == 0;
    if (body.empty() && !empty_ok) return "";
    return add_rule(hint + "-array", wrap_container("\"[\"", "\"]\"", body, empty_ok, depth));
  }
  if (clause.contains.size() > 1) return emit_contains_all(clause, hint, depth);
  if (!clause.contains.empty()) {
    const Contains& contains = clause.contains[0];
    if (!clause.prefix.empty()) refuse("contains", contains.pointer, "combined with prefixItems");
    if (max_items || clause.min_items > contains.min)
      refuse("contains", contains.pointer, "combined with minItems/maxItems");
    Sub matching = conj(clause.items, contains.schema);
    std::string match_rule = rule_for(matching, hint + "-match", depth + 1);
    std::string other_rule;
    if (contains.max) {
      if (contains.schema.nodes.size() != 1 || !contains.schema.negated.empty() ||
          !contains.schema.any_of.empty())
        refuse("contains", contains.pointer, "maxContains needs a negatable contains schema");
      Sub negated;
      negated.negated.push_back(contains.schema.nodes[0]);
      Sub other = conj(clause.items, negated);
      try {
        other_rule = rule_for(other, hint + "-other", depth + 1);
      } catch (Refusal&) {
        refuse("contains", contains.pointer, "maxContains needs a negatable contains schema");
      }
      check_repeat(*contains.max, "maxContains", contains.pointer);
    } else {
      other_rule = rule_for(clause.items, hint + "-item", depth + 1);
    }
    check_repeat(contains.min, "minContains", contains.pointer);
    // States (matches so far, capped; whether an item was written).
    uint64_t cap = contains.max ? *contains.max : contains.min;
    std::string base = unique_name(hint + "-contains");
    auto name = [&](uint64_t k, bool started) {
      std::string n = base + "-" + std::to_string(k) + (started ? "s" : "");
      names_.insert(n);
      return n;
    };
    std::vector<std::pair<std::string, std::string>> pending;
    for (uint64_t k = 0; k <= cap; ++k) {
      for (bool started : {false, true}) {
        std::vector<std::string> options;
        if (!other_rule.empty())
          options.push_back(seq({item_text(other_rule, !started), name(k, true)}));
        if (!match_rule.empty()) {
          if (k < cap)
            options.push_back(seq({item_text(match_rule, !started), name(k + 1, true)}));
          else if (!contains.max)
            options.push_back(seq({item_text(match_rule, !started), name(k, true)}));
        }
        bool can_end = k >= contains.min && started;
        std::string body = alternatives(options);
        if (can_end) body = body.empty() ? "\"\"" : "(" + body + ")?";
        if (body.empty()) body = base_rule("never");
        pending.emplace_back(name(k, started), body);
      }
    }
    for (auto& [n, b] : pending) define_rule(n, b);
    bool empty_ok = contains.min == 0;
    return add_rule(hint + "-array",
                    wrap_container("\"[\"", "\"]\"", name(0, false), empty_ok, depth));
  }
  // Positions: prefix items, then the rest with a counted repeat.
  uint64_t min_items = clause.min_items;
  size_t usable = clause.prefix.size();
  std::vector<std::string> prefix_rules;
  for (size_t i = 0; i < clause.prefix.size(); ++i) {
    if (max_items && i >= *max_items) {
      usable = i;
      break;
    }
    std::string rule = rule_for(clause.prefix[i], hint + "-" + std::to_string(i), depth + 1);
    if (rule.empty()) {
      usable = i;
      break;
    }
    prefix_rules.push_back(rule);
  }
  if (min_items > usable && usable < clause.prefix.size()) return "";
  std::string rest_rule;
  bool rest_possible = usable == clause.prefix.size() && (!max_items || *max_items > usable);
  if (rest_possible) {
    rest_rule = rule_for(clause.items, hint + "-item", depth + 1);
    if (rest_rule.empty()) rest_possible = false;
  }
  if (!rest_possible && min_items > usable) return "";
  uint64_t rest_min = min_items > usable ? min_items - usable : 0;
  std::optional<uint64_t> rest_max;
  if (max_items) rest_max = *max_items - std::min<uint64_t>(*max_items, usable);
  (void)count_pointer;
  // Items from position i on (i >= 1); none at all is allowed once
  // min_items items were written.
  std::function<std::string(size_t)> tail_from = [&](size_t i) -> std::string {
    if (i == usable) {
      if (!rest_possible || (rest_max && *rest_max == 0)) return "";
      return counted(group(item_text(rest_rule, false)), rest_min, rest_max, hint + "-items");
    }
    std::string here = seq({item_text(prefix_rules[i], false), tail_from(i + 1)});
    return i >= min_items ? group(here) + "?" : here;
  };
  // A non-empty body (the empty array is its own alternative).
  std::string body;
  if (usable > 0) {
    body = seq({item_text(prefix_rules[0], true), tail_from(1)});
  } else if (rest_possible && !(rest_max && *rest_max == 0)) {
    uint64_t more_min = rest_min > 0 ? rest_min - 1 : 0;
    std::optional<uint64_t> more_max;
    if (rest_max) more_max = *rest_max - 1;
    if (!more_max || more_min <= *more_max) {
      body = item_text(rest_rule, true);
      if (!more_max || *more_max > 0)
        body = seq({body, counted(group(item_text(rest_rule, false)), more_min, more_max,
                                  hint + "-items")});
    }
  }
  bool empty_ok = min_items == 0;
  if (body.empty() && !empty_ok) return "";
  return add_rule(hint + "-array", wrap_container("\"[\"", "\"]\"", body, empty_ok, depth));
}

std::string Converter::convert() {
  const Json* start_node = doc_.start();
  Sub root = Sub::of(start_node);
  if (start_node->is_boolean() && !start_node->get<bool>())
    fail(ErrorCode::kInvalidArgument, "the schema is `false`: it accepts no value");
  std::string start = rule_for(root, "schema", 0);
  if (start.empty()) fail(ErrorCode::kInvalidArgument, "the schema accepts no value");
  // inner(), after() and colon() name `ws` without defining it.
  if (options_.whitespace == JsonSchemaOptions::Whitespace::kFlexible) base_rule("ws");
  // In a large grammar the copies of the small base rules that the lowering
  // makes at every use (whitespace alone is some forty states) outgrow its
  // state budget; there they stay single rules, at the price of a rule call
  // per use while masking.
  constexpr size_t kLargeGrammarBytes = 256 << 10;
  if (grammar_bytes_ > kLargeGrammarBytes) {
    const std::string never = base_rule("never");
    for (auto& [name, body] : rules_)
      if (name == "ws" || name == "string" || name == "number" || name == "integer")
        body = "(" + body + ") | " + never + " " + name;
  }
  std::string text = "root ::= " + start + "\n";
  for (const auto& [name, body] : rules_) text += name + " ::= " + body + "\n";
  return text;
}

// Where text nests deeper than `limit` before nlohmann builds it (its
// parser recurses): the JSON pointer of the first container too deep, or
// nullopt when the text stays within the limit.
std::optional<std::string> too_deep_at(std::string_view text, uint32_t limit) {
  // Nearly always within the limit: first only the depth, without keys.
  {
    bool in_string = false;
    size_t depth = 0;
    bool over = false;
    for (size_t i = 0; i < text.size() && !over; ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        over = ++depth > limit;
      } else if ((c == '}' || c == ']') && depth > 0) {
        --depth;
      }
    }
    if (!over) return std::nullopt;
  }
  struct Frame {
    bool array;
    size_t index = 0;
    std::string key;
  };
  std::vector<Frame> frames;
  bool in_string = false, expect_key = false;
  std::string string;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        if (i + 1 < text.size()) string.push_back(text[++i]);
      } else if (c == '"') {
        in_string = false;
        if (expect_key && !frames.empty() && !frames.back().array) frames.back().key = string;
        expect_key = false;
      } else {
        string.push_back(c);
      }
    } else if (c == '"') {
      in_string = true;
      string.clear();
    } else if (c == '{' || c == '[') {
      frames.push_back(Frame{c == '[', 0, ""});
      expect_key = c == '{';
      if (frames.size() > limit) {
        std::string pointer;
        for (size_t f = 0; f + 1 < frames.size(); ++f)
          pointer += "/" + (frames[f].array ? std::to_string(frames[f].index)
                                            : escape_pointer_token(frames[f].key));
        return pointer;
      }
    } else if (c == '}' || c == ']') {
      if (!frames.empty()) frames.pop_back();
    } else if (c == ',' && !frames.empty()) {
      if (frames.back().array)
        ++frames.back().index;
      else
        expect_key = true;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::string> json_schema_to_gbnf(std::string_view schema_json,
                                        const JsonSchemaOptions& options,
                                        std::vector<std::string>* warnings) {
  // Schema nesting counts schemas, JSON nesting containers (a level of
  // schema is an object and the object of its "properties"): twice as many.
  if (auto where = too_deep_at(schema_json, options.max_schema_depth * 2 + 2))
    return Status(ErrorCode::kLimitExceeded, "schema nested deeper than max_schema_depth (" +
                                                 std::to_string(options.max_schema_depth) +
                                                 ") at " + display_pointer(*where));
  Json parsed;
  try {
    parsed = TreeBuilder::parse(schema_json);
  } catch (const std::exception& e) {
    return Status(ErrorCode::kSyntax, std::string("schema is not valid JSON: ") + e.what());
  }
  if (!parsed.is_object() && !parsed.is_boolean())
    return Status(ErrorCode::kSyntax, "a schema must be a JSON object or a boolean");
  try {
    Document document(std::move(parsed), options);
    document.index();
    Converter converter(document, options, warnings);
    return converter.convert();
  } catch (Refusal& refusal) {
    return refusal.status;
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kLimitExceeded, "out of memory while converting the schema");
  } catch (const std::exception& e) {
    return Status(ErrorCode::kUnsupported,
                  std::string("internal error while converting: ") + e.what());
  }
}

Result<Grammar> json_schema_to_grammar(std::string_view schema_json,
                                       const JsonSchemaOptions& options,
                                       std::vector<std::string>* warnings) {
  Result<std::string> text = json_schema_to_gbnf(schema_json, options, warnings);
  if (!text.ok()) return text.status();
  // The converter's own bounds already hold the text; the parser's are
  // raised to match them where the caller raised those.
  GbnfOptions parse_options;
  parse_options.max_rules = std::max(parse_options.max_rules, options.max_rules);
  parse_options.max_grammar_bytes =
      std::max(parse_options.max_grammar_bytes, options.max_grammar_bytes);
  parse_options.max_symbols = static_cast<uint32_t>(std::min<size_t>(
      UINT32_MAX, std::max<size_t>(parse_options.max_symbols, parse_options.max_grammar_bytes)));
  parse_options.max_repeat_bound = std::max(parse_options.max_repeat_bound, options.max_repeat);
  return parse_gbnf(*text, parse_options);
}

}  // namespace grammask
