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
std::string clause_key(const Clause& c);

// The declared property `name` of an object clause; nullptr when the clause
// declares none of that name.
Sub* find_property(Clause& clause, const std::string& name);
const Sub* find_property(const Clause& clause, const std::string& name);

// Six unconstrained clauses, one per JSON type: the schema `true`.
Disj all_types();

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_CLAUSE_H_
