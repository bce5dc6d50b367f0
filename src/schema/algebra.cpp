// The algebra of clauses: intersection, complement, disjointness, and the
// document order that makes their results independent of node addresses
// (members of Converter, declared in converter.h).
#include <algorithm>
#include <tuple>

#include "schema/converter.h"

namespace grammask::internal::schema {

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

}  // namespace grammask::internal::schema
