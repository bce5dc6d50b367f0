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

void add_key_part(std::string& key, const std::string& part) {
  key += '|';
  key += part;
}

std::string key_of_nodes(const std::vector<const Json*>& values) {
  std::string out;
  for (const Json* v : values) out += std::to_string(reinterpret_cast<uintptr_t>(v)) + ",";
  return out;
}

std::string key_of_count(const std::optional<uint64_t>& n) {
  return n ? std::to_string(*n) : std::string("-");
}

std::string clause_key(const Clause& c) {
  std::string key = std::to_string(static_cast<int>(c.type));
  c.ValueKeywords::add_key(key);
  c.NumberKeywords::add_key(key);
  c.StringKeywords::add_key(key);
  c.ArrayKeywords::add_key(key);
  c.ObjectKeywords::add_key(key);
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
