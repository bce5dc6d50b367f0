// The normal form of schemas: a disjunction (Disj) of clauses, each a
// conjunction of constraints on values of one JSON type. Sub-schemas below
// properties and items stay lazy (Sub: a set of schema nodes to intersect)
// until they are converted themselves.
#ifndef GRAMMASK_SRC_SCHEMA_CLAUSE_H_
#define GRAMMASK_SRC_SCHEMA_CLAUSE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "schema/json_value.h"
#include "schema/numbers.h"

namespace grammask::internal::schema {

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

// The conjunction of a and b (each list the union of theirs, kept sorted).
Sub conj(const Sub& a, const Sub& b);

// A key equal for Subs of the same nodes (node addresses: stable for one
// conversion only).
std::string sub_key(const Sub& sub);

// A keyword's text (a pattern, a format name) and the JSON pointer of the
// schema that holds it.
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

// A clause's constraints come in keyword families, one struct each. Every
// family lists its fields once, here, and has its own functions, defined in
// its file (value_keywords.cpp, number_keywords.cpp, ...): reading its
// keywords, intersection, complement, validation of a value, the clause key
// and lenient dropping. The *_pointer fields say where keywords were
// written (for messages); they constrain nothing.
//
// Each family's functions:
//   unconstrained()  true when the family asserts nothing;
//   add_key(key)     appends what the family constrains (not where it was
//                    written) to a clause_key;
//   drop(keyword)    lenient mode: forgets what `keyword` asserted, so that
//                    the clause accepts more; false when that changes
//                    nothing (the family has no such keyword, or it asserts
//                    nothing here), so a retry always makes progress.

// enum/const, and values that `not` of a constant excludes (every type).
struct ValueKeywords {
  bool has_values = false;  // then only `values` (filtered by the rest) are allowed
  std::vector<const Json*> values;
  std::vector<const Json*> excluded;
  std::string values_pointer;

  bool unconstrained() const;
  void add_key(std::string& key) const;
  bool drop(const std::string& keyword);
};

// type integer, minimum, maximum, exclusive*, multipleOf.
struct NumberKeywords {
  bool integer = false;
  bool non_integer = false;     // from `not: {type: integer}`: a non-zero fraction
  bool strict_integer = false;  // draft-04: integers written without a fraction
  // From a draft-04 `not: {type: integer}`: the text has a fraction or an
  // exponent (1.5, 1.0, 1e2).
  bool written_non_integer = false;
  std::optional<Decimal> lo, hi;
  bool lo_exclusive = false, hi_exclusive = false;
  std::string range_pointer;
  std::vector<std::pair<Decimal, std::string>> multiple_of;
  // From `not` of multipleOf: per group, the value is not a multiple of
  // every divisor of the group together.
  std::vector<std::vector<std::pair<Decimal, std::string>>> not_multiple_of;

  bool unconstrained() const;
  void add_key(std::string& key) const;
  bool drop(const std::string& keyword);
};

// minLength, maxLength, pattern, format, and patterns from `not`.
struct StringKeywords {
  uint64_t min_length = 0;
  std::optional<uint64_t> max_length;
  std::string length_pointer;
  std::vector<Sourced> patterns;
  std::vector<Sourced> negated_patterns;  // regexes the string must not match (from `not`)
  std::vector<Sourced> formats;

  bool unconstrained() const;
  void add_key(std::string& key) const;
  bool drop(const std::string& keyword);
};

// prefixItems, items, additionalItems, minItems, maxItems, contains (with
// min/maxContains), uniqueItems; what unevaluatedItems needs to know.
struct ArrayKeywords {
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

  bool unconstrained() const;
  void add_key(std::string& key) const;
  bool drop(const std::string& keyword);
};

// properties, required, additionalProperties, patternProperties,
// propertyNames, minProperties, maxProperties; what unevaluatedProperties
// needs to know.
struct ObjectKeywords {
  std::vector<std::pair<std::string, Sub>> properties;
  std::set<std::string> required;
  Sub additional;
  std::vector<std::pair<Sourced, Sub>> pattern_properties;
  // What an intersection of objects adds for the keys that match some
  // pattern: `sub` holds when the key matches none of the patterns in
  // `patterns` (bits of pattern_properties), the additionalProperties of
  // the object those patterns came from. (Keys that match no pattern at
  // all get `additional`, which holds every such schema.)
  struct UnmatchedExtra {
    uint32_t patterns;
    Sub sub;
  };
  std::vector<UnmatchedExtra> unmatched_extras;
  // At least one member whose key `properties` does not declare: what the
  // complement of a closed object adds (an object with a key it forbids).
  bool some_undeclared = false;
  Sub property_names;
  std::string property_names_pointer;
  uint64_t min_properties = 0;
  std::optional<uint64_t> max_properties;
  std::string properties_count_pointer;
  std::string members_pointer;  // the schema of `properties` or `required`
  std::set<std::string> evaluated;
  bool properties_evaluated = false;

  bool unconstrained() const;
  void add_key(std::string& key) const;
  bool drop(const std::string& keyword);
};

// A conjunction of constraints on values of one JSON type. Keywords only
// constrain values of their own type: a clause carries the value family
// and the family of its type.
struct Clause : ValueKeywords, NumberKeywords, StringKeywords, ArrayKeywords, ObjectKeywords {
  JType type = JType::kNull;

  // True when no family asserts anything: every value of `type`.
  bool unconstrained() const {
    return ValueKeywords::unconstrained() && NumberKeywords::unconstrained() &&
           StringKeywords::unconstrained() && ArrayKeywords::unconstrained() &&
           ObjectKeywords::unconstrained();
  }
  // Lenient mode: forgets what `keyword` asserted in every family; false
  // when that changes nothing.
  bool drop(const std::string& keyword) {
    bool dropped = ValueKeywords::drop(keyword);
    dropped = NumberKeywords::drop(keyword) || dropped;
    dropped = StringKeywords::drop(keyword) || dropped;
    dropped = ArrayKeywords::drop(keyword) || dropped;
    dropped = ObjectKeywords::drop(keyword) || dropped;
    return dropped;
  }
};
using Disj = std::vector<Clause>;

// What a clause constrains (not where the keywords were written), so that
// equal clauses reached through different references share one rule: the
// type, then each family's add_key.
std::string clause_key(const Clause& c);

// Appends "|" and `part` to a clause key.
void add_key_part(std::string& key, const std::string& part);
// The addresses of `values`, comma-terminated.
std::string key_of_nodes(const std::vector<const Json*>& values);
// `n`, or "-" when absent.
std::string key_of_count(const std::optional<uint64_t>& n);

// The declared property `name` of an object clause; nullptr when the clause
// declares none of that name.
Sub* find_property(Clause& clause, const std::string& name);
const Sub* find_property(const Clause& clause, const std::string& name);

// Six unconstrained clauses, one per JSON type: the schema `true`.
Disj all_types();

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_CLAUSE_H_
