// The object family (properties, required, additionalProperties,
// patternProperties, propertyNames, minProperties, maxProperties):
// ObjectKeywords' own functions and the Converter members for its keywords.
#include <algorithm>
#include <set>

#include "schema/converter.h"
#include "schema/keywords.h"

namespace grammask::internal::schema {

bool ObjectKeywords::unconstrained() const {
  return properties.empty() && required.empty() && additional.is_true() &&
         pattern_properties.empty() && unmatched_extras.empty() && !some_undeclared &&
         property_names.is_true() && min_properties == 0 && !max_properties && evaluated.empty() &&
         !properties_evaluated;
}

void ObjectKeywords::add_key(std::string& key) const {
  for (const auto& [name, sub] : properties)
    add_key_part(key, "p" + std::to_string(name.size()) + ":" + name + sub_key(sub));
  for (const std::string& name : required)
    add_key_part(key, "r" + std::to_string(name.size()) + ":" + name);
  add_key_part(key, "A" + sub_key(additional));
  for (const auto& [pattern, sub] : pattern_properties)
    add_key_part(key,
                 "R" + std::to_string(pattern.text.size()) + ":" + pattern.text + sub_key(sub));
  for (const UnmatchedExtra& extra : unmatched_extras)
    add_key_part(key, "X" + std::to_string(extra.patterns) + sub_key(extra.sub));
  if (some_undeclared) add_key_part(key, "U");
  add_key_part(key, "N" + sub_key(property_names));
  add_key_part(key, std::to_string(min_properties) + "," + key_of_count(max_properties));
}

bool ObjectKeywords::drop(const std::string& keyword) {
  bool dropped = false;
  if (keyword == "propertyNames") {
    dropped = !property_names.is_true();
    property_names = Sub();
  } else if (keyword == "patternProperties") {
    // The keys the patterns matched must stay allowed, with any value:
    // whatever additionalProperties said of the other keys no longer
    // applies to them, so it goes too.
    dropped = !pattern_properties.empty() || !additional.is_true();
    pattern_properties.clear();
    unmatched_extras.clear();
    additional = Sub();
  } else if (keyword == "minProperties" || keyword == "maxProperties") {
    dropped = min_properties != 0 || max_properties.has_value();
    min_properties = 0, max_properties.reset();
  }
  return dropped;
}

void Converter::apply_properties(Disj& local, const Json* node, const NodeInfo& where) {
  for (Clause& clause : local) {
    if (clause.type != JType::kObject) continue;
    auto properties = node->find("properties");
    if (properties != node->end()) {
      if (!properties->is_object())
        refuse("properties", where.pointer, "must be an object", ErrorCode::kSyntax);
      if (clause.members_pointer.empty()) clause.members_pointer = where.pointer;
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

void Converter::apply_unevaluated_properties(Disj& d, const Json* node, const NodeInfo& where) {
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
}

void Converter::apply_required(Disj& d, const Keyword& k) {
  const std::string& key = k.key;
  const Json& value = k.value;
  const std::string& pointer = k.where.pointer;
  if (!value.is_array()) refuse(key, pointer, "must be an array", ErrorCode::kSyntax);
  for_each_clause(d, JType::kObject, [&](Clause& c) {
    if (c.members_pointer.empty()) c.members_pointer = pointer;
    for (const Json& name : value) {
      if (!name.is_string()) refuse(key, pointer, "names must be strings", ErrorCode::kSyntax);
      c.required.insert(name.get<std::string>());
    }
  });
}

void Converter::apply_property_names(Disj& d, const Keyword& k) {
  for_each_clause(d, JType::kObject, [&](Clause& c) {
    c.property_names = conj(c.property_names, Sub::of(&k.value));
    c.property_names_pointer = k.where.pointer;
  });
}

void Converter::apply_property_count(Disj& d, const Keyword& k) {
  const std::string& key = k.key;
  const std::string& pointer = k.where.pointer;
  uint64_t n = non_negative_integer(k.value, key, pointer);
  for_each_clause(d, JType::kObject, [&](Clause& c) {
    if (key == "minProperties")
      c.min_properties = std::max(c.min_properties, n);
    else
      c.max_properties = c.max_properties ? std::min(*c.max_properties, n) : n;
    c.properties_count_pointer = pointer;
  });
}

Sub Converter::property_schema(const Clause& clause, const std::string& name) {
  if (const Sub* declared = find_property(clause, name)) return *declared;
  // (Patterns past the 32nd share the last bit: only intersections, which
  // refuse more than 32 patterns, add extras that read the bits.)
  uint32_t matched = 0;
  for (size_t i = 0; i < clause.pattern_properties.size(); ++i) {
    const Sourced& pattern = clause.pattern_properties[i].first;
    auto match = pattern_searcher_.search(pattern.text, name);
    if (!match.ok()) refuse("patternProperties", pattern.pointer, match.status().message());
    if (*match) matched |= uint32_t{1} << std::min<size_t>(i, 31);
  }
  return pattern_value(clause, matched);
}

Sub Converter::pattern_value(const Clause& clause, uint32_t matched) {
  if (matched == 0) return clause.additional;
  Sub result;
  for (size_t i = 0; i < clause.pattern_properties.size(); ++i)
    if (matched & (uint32_t{1} << std::min<size_t>(i, 31)))
      result = conj(result, clause.pattern_properties[i].second);
  for (const Clause::UnmatchedExtra& extra : clause.unmatched_extras)
    if ((matched & extra.patterns) == 0) result = conj(result, extra.sub);
  return result;
}

namespace {
std::set<std::string> declared_names(const Clause& c) {
  std::set<std::string> names;
  for (const auto& property : c.properties) names.insert(property.first);
  return names;
}
}  // namespace

bool Converter::undeclared_names_differ(const Clause& x, const Clause& y) {
  if (x.type != JType::kObject || (!x.some_undeclared && !y.some_undeclared)) return false;
  const std::set<std::string> in_x = declared_names(x), in_y = declared_names(y);
  const bool y_within_x = std::includes(in_x.begin(), in_x.end(), in_y.begin(), in_y.end());
  const bool x_within_y = std::includes(in_y.begin(), in_y.end(), in_x.begin(), in_x.end());
  return (x.some_undeclared && !y_within_x) || (y.some_undeclared && !x_within_y);
}

Disj Converter::declaring(const Clause& x, const std::set<std::string>& names) {
  if (!x.some_undeclared) return {x};
  // Some key outside the declared names S: some key outside S and
  // `names`, or one of the names outside S present.
  Disj result;
  Clause wider = x;
  for (const std::string& name : names) {
    if (find_property(x, name)) continue;
    wider.properties.emplace_back(name, property_schema(x, name));
    Clause present = x;
    present.some_undeclared = false;
    present.required.insert(name);
    result.push_back(std::move(present));
  }
  result.insert(result.begin(), std::move(wider));
  return result;
}

bool Converter::intersect_objects(Clause& c, const Clause& a, const Clause& b) {
  // A key that matches a pattern of one object and none of the other's
  // gets the other's additionalProperties too: an extra for the keys
  // that match none of the other's patterns. (Past 32 patterns the bits
  // run out; other_members refuses more than 16 anyway.)
  const size_t shift = a.pattern_properties.size();
  const bool b_extra = !a.pattern_properties.empty() && !b.additional.is_true();
  const bool a_extra = !b.pattern_properties.empty() && !a.additional.is_true();
  const bool extras =
      a_extra || b_extra || !a.unmatched_extras.empty() || !b.unmatched_extras.empty();
  if (extras && shift + b.pattern_properties.size() > 32) {
    const auto& patterns =
        b.pattern_properties.empty() ? a.pattern_properties : b.pattern_properties;
    refuse("patternProperties", patterns[0].first.pointer,
           "intersection of objects with more than 32 patterns in all");
  }
  auto bits = [](size_t first, size_t count) {
    uint32_t mask = 0;
    for (size_t i = first; i < first + count; ++i) mask |= uint32_t{1} << i;
    return mask;
  };
  for (const Clause::UnmatchedExtra& extra : b.unmatched_extras)
    c.unmatched_extras.push_back({extra.patterns << shift, extra.sub});
  if (b_extra)
    c.unmatched_extras.push_back({bits(shift, b.pattern_properties.size()), b.additional});
  if (a_extra) c.unmatched_extras.push_back({bits(0, shift), a.additional});
  // "Some key outside the declared names" stays one flag only while the
  // declared names stay the flagged sides' own.
  if (a.some_undeclared || b.some_undeclared) {
    if (undeclared_names_differ(a, b))
      refuse("not", a.members_pointer.empty() ? b.members_pointer : a.members_pointer,
             "an object with a key outside a closed object's names, intersected with an object "
             "that declares other names");
    c.some_undeclared = true;
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
  if (c.properties_count_pointer.empty()) c.properties_count_pointer = b.properties_count_pointer;
  if (c.members_pointer.empty()) c.members_pointer = b.members_pointer;
  c.evaluated.insert(b.evaluated.begin(), b.evaluated.end());
  c.properties_evaluated = a.properties_evaluated || b.properties_evaluated;
  if (c.max_properties && c.min_properties > *c.max_properties) return false;
  if (c.max_properties && c.required.size() > *c.max_properties) return false;
  // A required property that no value may take (what negations write for
  // "absent"): nothing left.
  for (const auto& [name, sub] : c.properties) {
    if (!c.required.count(name)) continue;
    for (const Json* n : sub.nodes)
      if (n->is_boolean() && !n->get<bool>()) return false;
  }
  return true;
}

bool Converter::negate_object(const Clause& clause, const Clause& base, Disj& complement) {
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
  // A closed object (no key but the declared ones) is also violated by an
  // object with some other key.
  const bool closed =
      std::any_of(probe.additional.nodes.begin(), probe.additional.nodes.end(),
                  [](const Json* node) { return node->is_boolean() && !node->get<bool>(); });
  if (closed) probe.additional = Sub();
  if (!probe.unconstrained()) return false;
  if (closed) {
    Clause c = base;
    for (const auto& property : clause.properties) c.properties.emplace_back(property.first, Sub());
    c.some_undeclared = true;
    complement.push_back(std::move(c));
  }
  for (const std::string& name : clause.required) {
    Clause c = base;
    c.properties.emplace_back(name, Sub::never());
    complement.push_back(std::move(c));
  }
  // A declared property is present and violates its schema.
  for (const auto& [name, sub] : clause.properties) {
    for (const Sub& violated : negate_sub(sub)) {
      Clause c = base;
      c.properties.emplace_back(name, violated);
      c.required.insert(name);
      complement.push_back(std::move(c));
    }
  }
  if (clause.min_properties > 0) {
    Clause c = base;
    c.max_properties = clause.min_properties - 1;
    complement.push_back(std::move(c));
  }
  if (clause.max_properties) {
    Clause c = base;
    c.min_properties = *clause.max_properties + 1;
    complement.push_back(std::move(c));
  }
  return true;
}

bool Converter::object_accepts(const Clause& c, const Json& value) {
  if (value.size() < c.min_properties || (c.max_properties && value.size() > *c.max_properties))
    return false;
  for (const std::string& name : c.required)
    if (!value.contains(name)) return false;
  if (c.some_undeclared &&
      std::all_of(value.items().begin(), value.items().end(),
                  [&](const auto& member) { return find_property(c, member.key()) != nullptr; }))
    return false;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!c.property_names.is_true() && !accepts(c.property_names, Json(it.key()))) return false;
    if (!accepts(property_schema(c, it.key()), it.value())) return false;
  }
  return true;
}

}  // namespace grammask::internal::schema
