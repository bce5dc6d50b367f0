// Normalization: schema objects into disjunctions of clauses. Local
// keywords go through keyword_handlers() to their family's file;
// applicators and unevaluated* are here (members of Converter, declared in
// converter.h).
#include <algorithm>
#include <map>
#include <set>

#include "schema/converter.h"
#include "schema/drafts.h"

namespace grammask::internal::schema {

void Converter::with_lenience(const std::string& keyword, const std::function<void()>& action) {
  try {
    action();
  } catch (Refusal& refusal) {
    if (!options_.lenient || refusal.status.code() != ErrorCode::kUnsupported) throw;
    warn("dropped: " + refusal.status.message());
    ++widenings_;
    (void)keyword;
  }
}

const Disj& Converter::normalize_exactly(const Json* node, const std::string& keyword,
                                         const std::string& pointer) {
  const Disj& result = normalize_node(node);
  if (options_.lenient && widened_nodes_.count(node) != 0)
    refuse(keyword, pointer, "cannot negate a schema that lenient mode widened");
  return result;
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
    const std::string& pointer = doc_.info(node).pointer;
    std::optional<Disj> negated;
    with_lenience("not", [&] {
      negated = negate(normalize_exactly(node, "not", pointer));
      if (!negated) refuse("not", pointer, "cannot negate this schema exactly");
    });
    if (!negated) continue;  // (lenient mode: the conjunct is left out, which widens)
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

const Disj* Converter::normalize_unless_in_progress(const Sub& sub) {
  try {
    return &normalize(sub);
  } catch (Refusal& refusal) {
    if (refusal.status.message().find(kSelfReference) == std::string::npos) throw;
    return nullptr;
  }
}

const Disj& Converter::normalize_node(const Json* node) {
  auto it = node_memo_.find(node);
  if (it != node_memo_.end()) {
    if (widened_nodes_.count(node) != 0) ++widenings_;  // (the enclosing node is widened too)
    return it->second;
  }
  const size_t widenings_before = widenings_;
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
  if (widenings_ != widenings_before) widened_nodes_.insert(node);
  return node_memo_.emplace(node, std::move(result)).first->second;
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
  const Disj local = local_clauses(node, where);
  Disj d = all_types();
  bool local_applied = false;
  for (auto it = node->begin(); it != node->end(); ++it) {
    const std::string& key = it.key();
    const Json& value = it.value();
    if (!applicator_keywords().count(key) || !defined_in(key, where.draft)) {
      if (!local_applied && !identifier_keywords().count(key)) {
        d = intersect(d, local, where.pointer);
        local_applied = true;
      }
      continue;
    }
    const std::string pointer = where.pointer + "/" + escape_pointer_token(key);
    with_lenience(key, [&] { apply_applicator(d, local, node, key, value, where, pointer); });
  }
  if (!local_applied) d = intersect(d, local, where.pointer);
  if (defined_in("unevaluatedProperties", where.draft))
    with_lenience("unevaluatedProperties", [&] { apply_unevaluated(d, node, where); });
  return satisfiable(std::move(d));
}

Disj Converter::local_clauses(const Json* node, const NodeInfo& where) {
  // A well-formed `type` narrows the clauses from the start (the keyword
  // itself still checks and applies below).
  Disj local;
  {
    auto type = node->find("type");
    std::set<JType> types;
    auto add = [&](const Json& name) {
      auto known =
          name.is_string() ? type_names().find(name.get<std::string>()) : type_names().end();
      if (known == type_names().end()) return false;
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
  for (auto it = node->begin(); it != node->end(); ++it) {
    const std::string& key = it.key();
    if (applicator_keywords().count(key) || !defined_in(key, where.draft)) continue;
    with_lenience(key, [&] { apply_keyword(local, node, key, it.value(), where); });
  }
  // Object keywords that read their siblings.
  with_lenience("properties", [&] { apply_properties(local, node, where); });
  // Array items, which also read their siblings.
  with_lenience("items", [&] { apply_items(local, node, where); });
  return local;
}

void Converter::apply_applicator(Disj& d, const Disj& local, const Json* node,
                                 const std::string& key, const Json& value, const NodeInfo& where,
                                 const std::string& pointer) {
  if (key == "allOf" || key == "anyOf" || key == "oneOf") {
    apply_all_any_one_of(d, local, key, value, where, pointer);
  } else if (key == "not") {
    std::optional<Disj> negated = negate(normalize_exactly(&value, "not", where.pointer));
    if (!negated) refuse("not", where.pointer, "cannot negate this schema exactly");
    d = intersect(d, *negated, pointer);
  } else if (key == "if") {
    apply_conditional(d, node, value, where, pointer);
  } else if (key == "$ref" || key == "$dynamicRef" || key == "$recursiveRef") {
    apply_reference(d, node, key, value, where, pointer);
  } else if (key == "dependentRequired" || key == "dependentSchemas" || key == "dependencies") {
    apply_dependencies(d, key, value, where, pointer);
  }
}

void Converter::apply_all_any_one_of(Disj& d, const Disj& local, const std::string& key,
                                     const Json& value, const NodeInfo& where,
                                     const std::string& pointer) {
  if (!value.is_array() || value.empty())
    refuse(key, where.pointer, "must be a non-empty array", ErrorCode::kSyntax);
  if (key == "allOf") {
    for (const Json& branch : value) d = intersect(d, normalize_node(&branch), pointer);
    return;
  }
  std::vector<Disj> branches;
  for (const Json& branch : value)
    branches.push_back(intersect(d, normalize_node(&branch), pointer));
  if (key == "oneOf" && apply_overlapping_one_of(d, local, branches, value, where, pointer)) return;
  if (key == "anyOf" && doc_.has_unevaluated() && value.size() > 1 && value.size() <= 4 &&
      apply_any_of_cells(d, value, pointer))
    return;
  Disj result;
  for (Disj& branch : branches) result.insert(result.end(), branch.begin(), branch.end());
  d = std::move(result);
}

bool Converter::apply_overlapping_one_of(Disj& d, const Disj& local,
                                         const std::vector<Disj>& branches, const Json& value,
                                         const NodeInfo& where, const std::string& pointer) {
  bool all_disjoint = true;
  for (size_t i = 0; i < branches.size() && all_disjoint; ++i)
    for (size_t j = i + 1; j < branches.size() && all_disjoint; ++j)
      if (!disjoint(intersect(local, branches[i], pointer), branches[j])) all_disjoint = false;
  if (all_disjoint) return false;
  // Exactly one: each clause of branch i, less the values of its type that
  // another branch accepts. Most pairs of clauses are disjoint or one of
  // them accepts every value of the type (a branch without `type`), so a
  // branch is negated only where it overlaps a clause in part.
  std::vector<std::optional<Disj>> negated(branches.size());
  auto negation_of = [&](size_t j) -> const Disj& {
    if (!negated[j]) {
      negated[j] = negate(normalize_exactly(&value[j], "oneOf", where.pointer));
      if (!negated[j])
        refuse(
            "oneOf", where.pointer,
            "branches may overlap and branch " + std::to_string(j) + " cannot be negated exactly");
    }
    return *negated[j];
  };
  Disj result;
  for (size_t i = 0; i < branches.size(); ++i) {
    for (const Clause& clause : branches[i]) {
      Disj only{clause};
      for (size_t j = 0; j < branches.size() && !only.empty(); ++j) {
        if (j == i) continue;
        Disj others;
        for (const Clause& other : branches[j])
          if (other.type == clause.type) others.push_back(other);
        if (others.empty() || disjoint(only, others)) continue;
        if (std::any_of(others.begin(), others.end(),
                        [](const Clause& other) { return other.unconstrained(); })) {
          only.clear();
          break;
        }
        if (std::optional<Disj> rest = minus_closed_objects(only, others)) {
          only = std::move(*rest);
          continue;
        }
        only = intersect(only, negation_of(j), pointer);
      }
      result.insert(result.end(), only.begin(), only.end());
    }
  }
  d = std::move(result);
  return true;
}

namespace {
// An object clause that allows no property but those it declares.
bool closed_object(const Clause& c) {
  return c.type == JType::kObject && c.pattern_properties.empty() && c.additional.negated.empty() &&
         c.additional.any_of.empty() && c.additional.nodes.size() == 1 &&
         c.additional.nodes[0]->is_boolean() && !c.additional.nodes[0]->get<bool>();
}
}  // namespace

// x less every value of y, for closed objects whose declared properties
// share no name (or only names whose schemas are disjoint): an object of x
// with a property has one that y forbids, so of x's objects y accepts at
// most the empty one.
std::optional<Disj> Converter::minus_closed_objects(const Disj& xs, const Disj& ys) {
  for (const Clause& x : xs)
    if (!closed_object(x)) return std::nullopt;
  Disj rest = xs;
  for (const Clause& y : ys) {
    if (!closed_object(y) || !y.ValueKeywords::unconstrained()) return std::nullopt;
    // A name both declare still sets them apart when their schemas for it
    // are disjoint (a discriminating const).
    for (const Clause& x : xs)
      for (const auto& [name, schema] : x.properties) {
        const Sub* in_y = find_property(y, name);
        if (in_y == nullptr) continue;
        const Disj* a = normalize_unless_in_progress(schema);
        const Disj* b = normalize_unless_in_progress(*in_y);
        if (a == nullptr || b == nullptr || !disjoint(*a, *b, 1)) return std::nullopt;
      }
    const bool accepts_empty = y.required.empty() && y.min_properties == 0;
    if (!accepts_empty) continue;
    for (Clause& x : rest) x.min_properties = std::max<uint64_t>(x.min_properties, 1);
  }
  Disj kept;
  for (Clause& x : rest)
    if (!x.max_properties || *x.max_properties >= x.min_properties) kept.push_back(std::move(x));
  return kept;
}

bool Converter::apply_any_of_cells(Disj& d, const Json& value, const std::string& pointer) {
  // Every branch that holds evaluates, not only one: split into which
  // branches hold (the others negated, which evaluates nothing), when they
  // all negate exactly; else the union sees one branch's annotations at a
  // time (stricter).
  try {
    std::vector<Disj> negated;
    for (const Json& branch : value) {
      std::optional<Disj> n = negate(normalize_exactly(&branch, "anyOf", pointer));
      if (!n) break;
      negated.push_back(std::move(*n));
    }
    if (negated.size() == value.size()) {
      Disj result;
      for (uint32_t held = 1; held < (1u << value.size()); ++held) {
        Disj cell = d;
        for (size_t i = 0; i < value.size() && !cell.empty(); ++i)
          cell =
              intersect(cell, held & (1u << i) ? normalize_node(&value[i]) : negated[i], pointer);
        result.insert(result.end(), cell.begin(), cell.end());
      }
      if (result.size() <= 256) {
        d = std::move(result);
        return true;
      }
    }
  } catch (Refusal& refusal) {
    if (refusal.status.code() != ErrorCode::kUnsupported &&
        refusal.status.code() != ErrorCode::kLimitExceeded)
      throw;
  }
  return false;
}

void Converter::apply_conditional(Disj& d, const Json* node, const Json& value,
                                  const NodeInfo& where, const std::string& pointer) {
  auto then_it = node->find("then");
  auto else_it = node->find("else");
  if (then_it == node->end() && else_it == node->end()) {
    // Asserts nothing, but when the condition holds its annotations
    // count for unevaluated*: split on it when it can be negated
    // exactly (else leaving it out is stricter, never looser).
    if (!doc_.has_unevaluated()) return;
    try {
      const Disj& condition = normalize_exactly(&value, "if", where.pointer);
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
  const Disj& condition = normalize_exactly(&value, "if", where.pointer);
  Disj then_part =
      then_it == node->end() ? condition : intersect(condition, normalize_node(&*then_it), pointer);
  std::optional<Disj> otherwise = negate(condition);
  if (!otherwise) refuse("if", where.pointer, "cannot negate the condition exactly");
  Disj else_part = else_it == node->end()
                       ? *otherwise
                       : intersect(*otherwise, normalize_node(&*else_it), pointer);
  Disj both = then_part;
  both.insert(both.end(), else_part.begin(), else_part.end());
  d = intersect(d, both, pointer);
}

void Converter::apply_reference(Disj& d, const Json* node, const std::string& key,
                                const Json& value, const NodeInfo& where,
                                const std::string& pointer) {
  if (!value.is_string()) refuse(key, where.pointer, "must be a string", ErrorCode::kSyntax);
  std::string ref = value.get<std::string>();
  if (key == "$recursiveRef" && doc_.has_recursive_anchor())
    refuse(key, where.pointer, "\"$recursiveAnchor\" scopes are not supported");
  count_reference(key, where.pointer);
  const Json* target = doc_.resolve(node, key, ref);
  d = intersect(d, normalize_node(target), pointer);
}

void Converter::apply_dependencies(Disj& d, const std::string& key, const Json& value,
                                   const NodeInfo& where, const std::string& pointer) {
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

// Drops clauses that became unsatisfiable: a required property whose schema
// accepts no value.
Disj Converter::satisfiable(Disj d) {
  Disj kept;
  for (Clause& clause : d) {
    bool empty = false;
    if (clause.type == JType::kObject) {
      for (const std::string& name : clause.required) {
        Sub schema = property_schema(clause, name);
        if (schema.is_true()) continue;
        // (A property referring back to a schema being normalized is not
        // looked into.)
        const Disj* normal = normalize_unless_in_progress(schema);
        if (normal != nullptr && normal->empty()) empty = true;
      }
    }
    if (!empty) kept.push_back(std::move(clause));
  }
  return kept;
}

void Converter::apply_unevaluated(Disj& d, const Json* node, const NodeInfo& where) {
  apply_unevaluated_properties(d, node, where);
  apply_unevaluated_items(d, node);
}

const std::unordered_map<std::string, Converter::KeywordHandler>& Converter::keyword_handlers() {
  static const std::unordered_map<std::string, KeywordHandler> handlers = {
      // value_keywords.cpp
      {"type", &Converter::apply_type},
      {"enum", &Converter::apply_values},
      {"const", &Converter::apply_values},
      // number_keywords.cpp
      {"minimum", &Converter::apply_minimum},
      {"exclusiveMinimum", &Converter::apply_minimum},
      {"maximum", &Converter::apply_maximum},
      {"exclusiveMaximum", &Converter::apply_maximum},
      {"multipleOf", &Converter::apply_multiple_of},
      // string_keywords.cpp
      {"minLength", &Converter::apply_length},
      {"maxLength", &Converter::apply_length},
      {"pattern", &Converter::apply_pattern},
      {"format", &Converter::apply_format},
      // array_keywords.cpp
      {"minItems", &Converter::apply_item_count},
      {"maxItems", &Converter::apply_item_count},
      {"contains", &Converter::apply_contains},
      {"uniqueItems", &Converter::apply_unique_items},
      // object_keywords.cpp
      {"required", &Converter::apply_required},
      {"propertyNames", &Converter::apply_property_names},
      {"minProperties", &Converter::apply_property_count},
      {"maxProperties", &Converter::apply_property_count},
  };
  return handlers;
}

void Converter::apply_keyword(Disj& d, const Json* node, const std::string& key, const Json& value,
                              const NodeInfo& where) {
  auto handler = keyword_handlers().find(key);
  // Everything else is an annotation or an unknown keyword: ignored, as the
  // spec requires.
  if (handler == keyword_handlers().end()) return;
  (this->*handler->second)(d, Keyword{node, key, value, where});
}

}  // namespace grammask::internal::schema
