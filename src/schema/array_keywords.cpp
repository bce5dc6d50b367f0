// The array family (prefixItems, items, additionalItems, minItems,
// maxItems, contains, uniqueItems): ArrayKeywords' own functions and the
// Converter members for its keywords.
#include <algorithm>

#include "schema/converter.h"
#include "schema/keywords.h"

namespace grammask::internal::schema {

bool ArrayKeywords::unconstrained() const {
  return prefix.empty() && items.is_true() && min_items == 0 && !max_items && contains.empty() &&
         !unique && evaluated_prefix == 0 && !items_evaluated && contains_evaluates.empty();
}

void ArrayKeywords::add_key(std::string& key) const {
  for (const Sub& item : prefix) add_key_part(key, "P" + sub_key(item));
  add_key_part(key, "I" + sub_key(items));
  add_key_part(key, std::to_string(min_items) + "," + key_of_count(max_items));
  for (const Contains& k : contains)
    add_key_part(key, "C" + sub_key(k.schema) + std::to_string(k.min) + "," + key_of_count(k.max));
  add_key_part(key, unique ? "u" : "");
  add_key_part(key, "E" + key_of_nodes(contains_evaluates));
}

bool ArrayKeywords::drop(const std::string& keyword) {
  bool dropped = false;
  if (keyword == "uniqueItems") {
    dropped = unique;
    unique = false;
  } else if (keyword == "contains") {
    dropped = !contains.empty();
    contains.clear();
  } else if (keyword == "minItems" || keyword == "maxItems") {
    dropped = min_items != 0 || max_items.has_value();
    min_items = 0, max_items.reset();
  }
  return dropped;
}

void Converter::apply_items(Disj& local, const Json* node, const NodeInfo& where) {
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
}

void Converter::apply_unevaluated_items(Disj& d, const Json* node) {
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

void Converter::apply_item_count(Disj& d, const Keyword& k) {
  const std::string& key = k.key;
  const std::string& pointer = k.where.pointer;
  uint64_t n = non_negative_integer(k.value, key, pointer);
  for_each_clause(d, JType::kArray, [&](Clause& c) {
    if (key == "minItems")
      c.min_items = std::max(c.min_items, n);
    else
      c.max_items = c.max_items ? std::min(*c.max_items, n) : n;
    c.items_count_pointer = pointer;
  });
}

void Converter::apply_contains(Disj& d, const Keyword& k) {
  const Json* node = k.node;
  const Json& value = k.value;
  const std::string& pointer = k.where.pointer;
  Contains contains;
  contains.schema = Sub::of(&value);
  contains.pointer = pointer;
  if (!legacy(k.where.draft)) {
    if (node->contains("minContains"))
      contains.min = non_negative_integer(node->at("minContains"), "minContains", pointer);
    if (node->contains("maxContains"))
      contains.max = non_negative_integer(node->at("maxContains"), "maxContains", pointer);
  }
  if (k.where.draft == Draft::kDraft2020_12)
    for_each_clause(d, JType::kArray, [&](Clause& c) { c.contains_evaluates.push_back(&value); });
  if (contains.min == 0 && !contains.max) return;
  for_each_clause(d, JType::kArray, [&](Clause& c) { c.contains.push_back(contains); });
}

void Converter::apply_unique_items(Disj& d, const Keyword& k) {
  const Json& value = k.value;
  const std::string& pointer = k.where.pointer;
  if (!value.is_boolean()) refuse(k.key, pointer, "must be a boolean", ErrorCode::kSyntax);
  if (!value.get<bool>()) return;
  for_each_clause(d, JType::kArray, [&](Clause& c) {
    c.unique = true;
    c.unique_pointer = pointer;
  });
}

bool Converter::intersect_arrays(Clause& c, const Clause& a, const Clause& b) {
  size_t n = std::max(a.prefix.size(), b.prefix.size());
  c.prefix.clear();
  for (size_t i = 0; i < n; ++i) {
    const Sub& x = i < a.prefix.size() ? a.prefix[i] : a.items;
    const Sub& y = i < b.prefix.size() ? b.prefix[i] : b.items;
    c.prefix.push_back(conj(x, y));
  }
  c.items = conj(a.items, b.items);
  c.min_items = std::max(a.min_items, b.min_items);
  if (b.max_items) c.max_items = c.max_items ? std::min(*c.max_items, *b.max_items) : *b.max_items;
  if (c.items_count_pointer.empty()) c.items_count_pointer = b.items_count_pointer;
  c.contains.insert(c.contains.end(), b.contains.begin(), b.contains.end());
  if (b.unique) c.unique = true, c.unique_pointer = b.unique_pointer;
  c.evaluated_prefix = std::max(a.evaluated_prefix, b.evaluated_prefix);
  c.items_evaluated = a.items_evaluated || b.items_evaluated;
  c.contains_evaluates.insert(c.contains_evaluates.end(), b.contains_evaluates.begin(),
                              b.contains_evaluates.end());
  if (c.max_items && c.min_items > *c.max_items) return false;
  return true;
}

bool Converter::negate_array(const Clause& clause, const Clause& base, Disj& complement) {
  Clause probe = clause;
  probe.min_items = 0, probe.max_items.reset(), probe.evaluated_prefix = 0;
  probe.items_evaluated = false, probe.prefix.clear(), probe.items = Sub(), probe.contains.clear(),
  probe.contains_evaluates.clear();
  if (!probe.unconstrained() || clause.contains.size() > 1) return false;
  if (clause.min_items > 0) {
    Clause c = base;
    c.max_items = clause.min_items - 1;
    complement.push_back(std::move(c));
  }
  if (clause.max_items) {
    Clause c = base;
    c.min_items = *clause.max_items + 1;
    complement.push_back(std::move(c));
  }
  // Some prefix item violates its schema.
  for (size_t i = 0; i < clause.prefix.size(); ++i) {
    for (const Sub& violated : negate_sub(clause.prefix[i])) {
      Clause c = base;
      c.prefix.assign(i, Sub());
      c.prefix.push_back(violated);
      c.min_items = i + 1;
      complement.push_back(std::move(c));
    }
  }
  // Some later item violates `items`.
  if (!clause.items.is_true()) {
    if (!clause.prefix.empty()) return false;
    for (const Sub& violated : negate_sub(clause.items)) {
      Clause c = base;
      c.contains.push_back(Contains{violated, 1, std::nullopt, ""});
      complement.push_back(std::move(c));
    }
  }
  // No item matches `contains`.
  if (!clause.contains.empty()) {
    const Contains& contains = clause.contains[0];
    std::vector<Sub> violated = negate_sub(contains.schema);
    if (contains.min != 1 || contains.max || violated.size() != 1) return false;
    Clause c = base;
    c.items = violated[0];
    complement.push_back(std::move(c));
  }
  return true;
}

bool Converter::array_accepts(const Clause& c, const Json& value) {
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

}  // namespace grammask::internal::schema
