// The value family (type, enum, const, and constants excluded by `not`):
// ValueKeywords' own functions and the Converter members for its keywords.
#include <map>
#include <set>

#include "schema/converter.h"
#include "schema/keywords.h"

namespace grammask::internal::schema {

bool ValueKeywords::unconstrained() const {
  return !has_values && excluded.empty();
}

void ValueKeywords::add_key(std::string& key) const {
  add_key_part(key, has_values ? "v" + key_of_nodes(values) : "");
  add_key_part(key, key_of_nodes(excluded));
}

bool ValueKeywords::drop(const std::string& keyword) {
  if (keyword != "not" || excluded.empty()) return false;
  excluded.clear();
  return true;
}

void Converter::apply_type(Disj& d, const Keyword& k) {
  const std::string& key = k.key;
  const Json& value = k.value;
  const std::string& pointer = k.where.pointer;
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
  for (const std::string& name : names)
    if (!type_names().count(name))
      refuse(key, pointer, "unknown type \"" + name + "\"", ErrorCode::kSyntax);
  Disj kept;
  for (Clause& clause : d) {
    bool keep = false;
    for (const std::string& name : names)
      if (type_names().at(name) == clause.type) keep = true;
    if (!keep) continue;
    if (clause.type == JType::kNumber && !names.count("number")) {
      clause.integer = true;
      if (k.where.draft == Draft::kDraft4) clause.strict_integer = true;
    }
    kept.push_back(std::move(clause));
  }
  d = std::move(kept);
}

void Converter::apply_values(Disj& d, const Keyword& k) {
  const std::string& key = k.key;
  const Json& value = k.value;
  const std::string& pointer = k.where.pointer;
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
}

void Converter::intersect_values(Clause& c, const Clause& b) {
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
}

bool Converter::negate_values(const Clause& clause, const Clause& base, Disj& complement) {
  Clause stripped = clause;
  stripped.has_values = false;
  stripped.values.clear();
  stripped.excluded.clear();
  if (!stripped.unconstrained()) return false;
  if (clause.has_values) {
    if (!clause.excluded.empty()) return false;
    Clause c = base;
    c.excluded = clause.values;
    c.values_pointer = clause.values_pointer;
    complement.push_back(std::move(c));
  } else {
    Clause c = base;
    c.has_values = true;
    c.values = clause.excluded;
    complement.push_back(std::move(c));
  }
  return true;
}

bool Converter::values_accept(const Clause& c, const Json& value, bool check_values) {
  if (check_values && c.has_values) {
    bool found = false;
    for (const Json* v : c.values)
      if (json_equal(*v, value)) found = true;
    if (!found) return false;
  }
  for (const Json* v : c.excluded)
    if (json_equal(*v, value)) return false;
  return true;
}

}  // namespace grammask::internal::schema
