// The algebra of clauses: intersection, complement and disjointness (each
// family's part in its own *_keywords.cpp), and the document order that
// makes their results independent of node addresses (members of Converter,
// declared in converter.h).
#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_set>

#include "schema/converter.h"

namespace grammask::internal::schema {

std::optional<Clause> Converter::intersect_clauses(const Clause& a, const Clause& b) {
  Clause c = a;
  intersect_values(c, b);
  bool satisfiable = true;
  switch (a.type) {
    case JType::kNull:
    case JType::kBoolean:
      break;
    case JType::kNumber:
      satisfiable = intersect_numbers(c, b);
      break;
    case JType::kString:
      satisfiable = intersect_strings(c, b);
      break;
    case JType::kArray:
      satisfiable = intersect_arrays(c, a, b);
      break;
    case JType::kObject:
      satisfiable = intersect_objects(c, a, b);
      break;
  }
  if (!satisfiable) return std::nullopt;
  if (c.has_values) {
    std::vector<const Json*> kept;
    for (const Json* v : c.values)
      if (clause_accepts(c, *v, false)) kept.push_back(v);
    c.values = std::move(kept);
    if (c.values.empty()) return std::nullopt;
  }
  return c;
}

namespace {
constexpr size_t kMaxAlternatives = 1024;
// Objects split by Converter::declaring: at most this many names in all
// (one clause per name each side lacks; past it the work multiplies
// across nested negations).
constexpr size_t kMaxSplitNames = 8;

// What a clause accepts and what it evaluates (for unevaluated*): equal
// keys, interchangeable clauses.
std::string dedup_key(const Clause& c) {
  std::string key = clause_key(c);
  add_key_part(key, "e" + std::to_string(c.properties_evaluated) +
                        std::to_string(c.items_evaluated) + std::to_string(c.evaluated_prefix));
  for (const std::string& name : c.evaluated)
    add_key_part(key, std::to_string(name.size()) + ":" + name);
  return key;
}
}  // namespace

Disj Converter::intersect(const Disj& a, const Disj& b, const std::string& pointer) {
  Disj result;
  result.reserve(std::max(a.size(), b.size()));
  // Past the bound, equal clauses are kept once (the conjunctions of
  // anyOf branches that several allOf branches share repeat each other)
  // before refusing.
  std::unordered_set<std::string> keys;
  bool deduplicating = false;
  auto add = [&](Clause c) {
    if (deduplicating && !keys.insert(dedup_key(c)).second) return;
    result.push_back(std::move(c));
    if (result.size() <= kMaxAlternatives) return;
    if (!deduplicating) {
      deduplicating = true;
      Disj unique;
      for (Clause& r : result)
        if (keys.insert(dedup_key(r)).second) unique.push_back(std::move(r));
      result = std::move(unique);
    }
    if (result.size() > kMaxAlternatives)
      fail(ErrorCode::kLimitExceeded, "schema at " + display_pointer(pointer) +
                                          " expands to more than " +
                                          std::to_string(kMaxAlternatives) + " alternatives");
  };
  for (const Clause& x : a)
    for (const Clause& y : b) {
      if (x.type != y.type) continue;
      if (y.unconstrained()) {
        add(x);
      } else if (x.unconstrained()) {
        add(y);
      } else if (undeclared_names_differ(x, y)) {
        // Split the "some undeclared key" clauses until both sides declare
        // every name either does.
        std::set<std::string> names;
        for (const Clause* side : {&x, &y})
          for (const auto& property : side->properties) names.insert(property.first);
        if (names.size() > kMaxSplitNames)
          refuse("not", x.members_pointer.empty() ? y.members_pointer : x.members_pointer,
                 "an object with a key outside a closed object's names, intersected with an "
                 "object that declares other names, " +
                     std::to_string(names.size()) + " in all (more than " +
                     std::to_string(kMaxSplitNames) + ")");
        for (const Clause& xi : declaring(x, names))
          for (const Clause& yi : declaring(y, names))
            if (auto c = intersect_clauses(xi, yi)) add(std::move(*c));
      } else if (auto c = intersect_clauses(x, y)) {
        add(std::move(*c));
      }
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
      // (Clauses intersect_clauses cannot intersect as they are count as
      // overlapping: the safe answer.)
      if (undeclared_names_differ(x, y)) return false;
      if (!intersect_clauses(x, y)) continue;
      // (Only then the automata: intersect_clauses proves most pairs apart.)
      if (x.type == JType::kString && patterns_disjoint(x, y)) continue;
      return false;
    }
  return true;
}

// Whether no string matches the patterns of both clauses (a tag such as
// ^pkg:cargo/ against ^pkg:npm/). False when it cannot tell within the
// automaton budget.
bool Converter::patterns_disjoint(const Clause& x, const Clause& y) {
  if (x.patterns.empty() || y.patterns.empty()) return false;
  std::optional<internal::CharDfa> both;
  for (const Clause* c : {&x, &y})
    for (const Sourced& pattern : c->patterns) {
      const Result<internal::RegexNode>& parsed = parsed_pattern(pattern.text);
      if (!parsed.ok()) return false;
      Result<internal::CharDfa> dfa = internal::dfa_from_regex(*parsed);
      if (!dfa.ok()) return false;
      if (!both) {
        both = std::move(*dfa);
        continue;
      }
      Result<internal::CharDfa> narrowed = internal::dfa_intersection(*both, *dfa);
      if (!narrowed.ok()) return false;
      both = std::move(*narrowed);
    }
  for (const internal::CharDfa::State& state : both->states)
    if (state.label != 0) return false;
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
      // (A property schema that leads back to a schema being normalized
      // cannot tell: the next name may.)
      const Disj* in_a = normalize_unless_in_progress(property_schema(*a, name));
      if (in_a == nullptr) continue;
      const Disj* in_b = normalize_unless_in_progress(property_schema(*b, name));
      if (in_b != nullptr && disjoint(*in_a, *in_b, depth + 1)) return true;
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
    for (JType type : kAllTypes) {
      if (type == clause.type) continue;
      Clause other;
      other.type = type;
      complement.push_back(std::move(other));
    }
    Clause base;
    base.type = clause.type;
    bool exact = true;
    if (clause.unconstrained()) {
      // nothing of this type
    } else if (clause.has_values || !clause.excluded.empty()) {
      exact = negate_values(clause, base, complement);
    } else if (clause.type == JType::kNumber) {
      exact = negate_number(clause, base, complement);
    } else if (clause.type == JType::kString) {
      exact = negate_string(clause, base, complement);
    } else if (clause.type == JType::kArray) {
      exact = negate_array(clause, base, complement);
    } else if (clause.type == JType::kObject) {
      exact = negate_object(clause, base, complement);
    } else {
      exact = false;
    }
    if (!exact) return std::nullopt;
    result = intersect(result, complement, "");
  }
  return result;
}

}  // namespace grammask::internal::schema
