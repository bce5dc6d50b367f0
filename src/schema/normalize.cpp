// Normalization: schema objects into disjunctions of clauses, keyword by
// keyword (members of Converter, declared in converter.h).
#include <algorithm>
#include <map>
#include <set>

#include "schema/converter.h"
#include "schema/drafts.h"

namespace grammask::internal::schema {

namespace {

uint64_t non_negative_integer(const Json& value, const std::string& keyword,
                              const std::string& pointer) {
  auto number = value.is_number() ? number_of(value) : std::nullopt;
  if (!number || number->negative || !number->is_integer())
    refuse(keyword, pointer, "must be a non-negative integer", ErrorCode::kSyntax);
  if (number->int_digits.size() > 18) return UINT64_MAX / 4;
  return number->int_digits.empty() ? 0 : std::stoull(number->int_digits);
}

}  // namespace

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

void Converter::apply_properties(Disj& local, const Json* node, const NodeInfo& where) {
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

void Converter::apply_applicator(Disj& d, const Disj& local, const Json* node,
                                 const std::string& key, const Json& value, const NodeInfo& where,
                                 const std::string& pointer) {
  if (key == "allOf" || key == "anyOf" || key == "oneOf") {
    apply_all_any_one_of(d, local, key, value, where, pointer);
  } else if (key == "not") {
    std::optional<Disj> negated = negate(normalize_node(&value));
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
  // Exactly one: branch i and not any other branch.
  Disj result;
  for (size_t i = 0; i < branches.size(); ++i) {
    Disj only = branches[i];
    for (size_t j = 0; j < branches.size() && !only.empty(); ++j) {
      if (j == i) continue;
      std::optional<Disj> others = negate(normalize_node(&value[j]));
      if (!others)
        refuse(
            "oneOf", where.pointer,
            "branches may overlap and branch " + std::to_string(j) + " cannot be negated exactly");
      only = intersect(only, *others, pointer);
    }
    result.insert(result.end(), only.begin(), only.end());
  }
  d = std::move(result);
  return true;
}

bool Converter::apply_any_of_cells(Disj& d, const Json& value, const std::string& pointer) {
  // Every branch that holds evaluates, not only one: split into which
  // branches hold (the others negated, which evaluates nothing), when they
  // all negate exactly; else the union sees one branch's annotations at a
  // time (stricter).
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

}  // namespace grammask::internal::schema
