#include "schema/clause.h"

#include <algorithm>
#include <iterator>

namespace grammask::internal::schema {

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

}  // namespace grammask::internal::schema
