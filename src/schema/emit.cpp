// Emission of clauses: the rule of a sub-schema, the expression of each
// clause (shared by equal clauses), lenient retries and constant values
// (members of Converter, declared in converter.h). The per-type emitters
// are in emit_{number,string,object,array}.cpp.
#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "base/json_string.h"
#include "ir/gbnf_writer.h"
#include "schema/converter.h"
#include "schema/gbnf_text.h"

namespace grammask::internal::schema {

// Records how many levels an emission nested below `depth` (on every way
// out of it) and restores the deepest level seen outside it. The entry is
// made up front, marked as still being emitted, so that the destructor
// allocates nothing.
struct Converter::NestingHeight {
  static constexpr uint32_t kEmitting = UINT32_MAX;
  Converter& converter;
  uint32_t& height;
  uint32_t depth;
  uint32_t outer;
  NestingHeight(Converter& c, std::unordered_map<std::string, uint32_t>& heights,
                const std::string& key, uint32_t d)
      : converter(c), height(heights[key]), depth(d), outer(c.deepest_) {
    height = kEmitting;
    converter.deepest_ = depth;
  }
  NestingHeight(const NestingHeight&) = delete;
  NestingHeight& operator=(const NestingHeight&) = delete;
  ~NestingHeight() {
    height = converter.deepest_ - depth;
    converter.deepest_ = std::max(outer, converter.deepest_);
  }
};

void Converter::reuse_nesting(const std::unordered_map<std::string, uint32_t>& heights,
                              const std::string& key, uint32_t depth) {
  auto height = heights.find(key);
  if (height == heights.end() || height->second == NestingHeight::kEmitting)
    nesting_unbounded_ = true;  // a cycle
  else
    deepest_ = std::max(deepest_, depth + height->second);
}

std::string Converter::rule_for(const Sub& sub, const std::string& hint, uint32_t depth) {
  if (depth > 64 && indented())
    fail(ErrorCode::kUnsupported,
         "the indented layout needs bounded nesting, and the schema nests deeper than 64 levels");
  if (sub.is_true()) return base_rule("value");
  std::string key = sub_key(sub) + (indented() ? "@" + std::to_string(depth) : "");
  auto it = rule_memo_.find(key);
  if (it != rule_memo_.end()) {
    handed_out_.insert(it->second);
    reuse_nesting(rule_heights_, key, depth);
    return it->second;
  }
  NestingHeight height{*this, rule_heights_, key, depth};
  const std::string& where = doc_.info(sub.nodes.empty() ? nullptr : sub.nodes[0]).pointer;
  Nesting nesting(*this, where);
  const std::string outer = emitting_;
  emitting_ = where;
  struct Restore {
    std::string& slot;
    std::string value;
    ~Restore() { slot = value; }
  } restore{emitting_, outer};
  std::string name = unique_name(hint);
  rule_memo_[key] = name;
  const Disj& d = normalize(sub);
  std::vector<std::string> options;
  std::vector<const Clause*> clauses;
  for (const Clause& clause : d) clauses.push_back(&clause);
  // String alternatives that each need an automaton (a disjunction of
  // negated pattern unions multiplies them) become one automaton, their
  // union, instead of one set of rules each.
  auto needs_automaton = [](const Clause& c) {
    return c.type == JType::kString && !c.has_values &&
           (!c.negated_patterns.empty() || !c.excluded.empty() || c.patterns.size() > 1);
  };
  if (std::count_if(clauses.begin(), clauses.end(),
                    [&](const Clause* c) { return needs_automaton(*c); }) > 1) {
    std::optional<internal::CharDfa> strings;
    std::vector<const Clause*> rest;
    for (const Clause* c : clauses) {
      const Clause& clause = *c;
      if (!needs_automaton(clause)) {
        rest.push_back(c);
        continue;
      }
      internal::CharDfa part = string_dfa(clause, clause.max_length);
      if (strings) {
        Result<internal::CharDfa> both = internal::dfa_product(
            *strings, part, [](uint32_t x, uint32_t y) -> uint32_t { return x | y ? 1 : 0; });
        const std::string& where = doc_.info(sub.nodes.empty() ? nullptr : sub.nodes[0]).pointer;
        if (!both.ok()) refuse("anyOf", where, both.status().message());
        charge_automaton(both->states.size(), "anyOf", where);
        part = internal::dfa_minimize(*both, [](uint32_t label) { return label != 0; });
      }
      strings = std::move(part);
    }
    std::string start = dfa_rules(
        *strings, [](uint32_t label) { return label != 0; }, name + "-s", "anyOf",
        doc_.info(sub.nodes.empty() ? nullptr : sub.nodes[0]).pointer);
    if (!start.empty()) options.push_back(add_rule(name + "-str", seq({"\"\\\"\"", start})));
    clauses = std::move(rest);
  }
  for (const Clause* clause : clauses) {
    std::string expr = clause_expression(*clause, d.size() == 1 ? name : "", name, depth);
    if (!expr.empty()) options.push_back(expr);
  }
  if (options.empty()) {
    define_rule(name, base_rule("never"));
    rule_memo_[key] = "";
    return "";
  }
  // A rule that would only name another one is left out, unless its name
  // was already handed out (to a recursive use).
  if (options.size() == 1 && bare_name(options[0]) && !handed_out_.count(name)) {
    rule_memo_[key] = options[0];
    return options[0];
  }
  define_rule(name, alternatives(options));
  return name;
}

// The expression for a clause, shared by every sub-schema that normalizes
// to the same clause (e.g. through different $refs to one definition).
// Objects and arrays may refer back to themselves, so their rule name is
// registered before emission: `own_rule` when the caller's rule is exactly
// this clause, else a rule of its own.
std::string Converter::clause_expression(const Clause& clause, const std::string& own_rule,
                                         const std::string& hint, uint32_t depth) {
  std::string key = clause_key(clause) + (indented() ? "@" + std::to_string(depth) : "");
  auto known = clause_memo_.find(key);
  if (known != clause_memo_.end()) {
    handed_out_.insert(known->second);
    reuse_nesting(clause_heights_, key, depth);
    return known->second;
  }
  NestingHeight height{*this, clause_heights_, key, depth};
  if (clause.type != JType::kObject && clause.type != JType::kArray) {
    std::string expr = emit_clause(clause, hint, depth);
    clause_memo_.emplace(std::move(key), expr);
    return expr;
  }
  std::string rule = own_rule.empty() ? unique_name(hint + "-alt") : own_rule;
  clause_memo_[key] = rule;
  std::string expr = emit_clause(clause, hint, depth);
  if (expr.empty()) clause_memo_[key] = "";
  if (!own_rule.empty()) {
    // The caller may leave its rule out (see rule_for): then later uses
    // name the emitted rule itself.
    if (bare_name(expr) && !handed_out_.count(own_rule)) clause_memo_[key] = expr;
    return expr;
  }
  if (!expr.empty() && bare_name(expr) && !handed_out_.count(rule)) {
    clause_memo_[key] = expr;  // no alias rule
    return expr;
  }
  define_rule(rule, expr.empty() ? base_rule("never") : expr);
  return expr.empty() ? "" : rule;
}

std::string Converter::emit_clause(const Clause& original, const std::string& hint,
                                   uint32_t depth) {
  if (!options_.lenient) return emit_clause_once(original, hint, depth);
  Clause clause = original;  // lenient mode drops what it cannot enforce
  while (true) {
    try {
      return emit_clause_once(clause, hint, depth);
    } catch (Refusal& refusal) {
      if (refusal.status.code() != ErrorCode::kUnsupported) throw;
      if (!clause.drop(refusal.keyword)) throw;
      warn("dropped: " + refusal.status.message());
    }
  }
}

std::string Converter::emit_clause_once(const Clause& clause, const std::string& hint,
                                        uint32_t depth) {
  if (clause.has_values) {
    std::vector<std::string> options;
    // Duplicates dropped: strings (most enums, some of thousands of values)
    // by a set, other values pairwise (no string equals another value).
    std::unordered_set<std::string_view> seen_strings;
    std::vector<const Json*> seen_others;
    auto seen_before = [&](const Json* v) {
      if (v->is_string()) return !seen_strings.insert(v->get_ref<const std::string&>()).second;
      for (const Json* s : seen_others)
        if (json_equal(*s, *v)) return true;
      seen_others.push_back(v);
      return false;
    };
    for (const Json* v : clause.values) {
      if (seen_before(v) || !clause_accepts(clause, *v, false)) continue;
      if (clause.strict_integer && v->is_number()) {
        auto number = number_of(*v);
        if (!number) fail(ErrorCode::kUnsupported, "number constant too large");
        options.push_back(decimal_literal(*number, false));
        continue;
      }
      options.push_back(emit_value(*v, depth));
    }
    return alternatives(options);
  }
  switch (clause.type) {
    case JType::kNull:
      return clause.excluded.empty() ? "\"null\"" : "";
    case JType::kBoolean: {
      std::vector<std::string> options;
      for (bool b : {true, false}) {
        if (clause_accepts(clause, Json(b), false)) options.push_back(b ? "\"true\"" : "\"false\"");
      }
      return alternatives(options);
    }
    case JType::kNumber:
      return emit_number(clause, hint);
    case JType::kString:
      return emit_string(clause, hint);
    case JType::kArray:
      return emit_array(clause, hint, depth);
    case JType::kObject:
      return emit_object(clause, hint, depth);
  }
  return "";
}

std::string Converter::emit_value(const Json& value, uint32_t depth) {
  switch (type_of(value)) {
    case JType::kNull:
      return "\"null\"";
    case JType::kBoolean:
      return value.get<bool>() ? "\"true\"" : "\"false\"";
    case JType::kNumber: {
      auto number = number_of(value);
      if (!number) fail(ErrorCode::kUnsupported, "number constant too large");
      return decimal_literal(*number);
    }
    case JType::kString:
      return internal::gbnf_literal(internal::json_quote(value.get_ref<const std::string&>()));
    case JType::kArray: {
      if (value.empty()) return wrap_container("\"[\"", "\"]\"", "", true, depth);
      std::string body;
      for (size_t i = 0; i < value.size(); ++i)
        body =
            seq({body, i ? "\",\"" : "", inner(depth), emit_value(value[i], depth + 1), after()});
      return group(wrap_container("\"[\"", "\"]\"", body, false, depth));
    }
    case JType::kObject: {
      if (value.empty()) return wrap_container("\"{\"", "\"}\"", "", true, depth);
      std::vector<Member> members;
      for (auto it = value.begin(); it != value.end(); ++it) {
        Member member;
        member.text = seq({internal::gbnf_literal(internal::json_quote(it.key())), colon(),
                           emit_value(it.value(), depth + 1)});
        member.required = true;
        members.push_back(std::move(member));
      }
      std::string body = emit_members(members, "", members.size(), members.size(), "const", depth,
                                      "", "an object of enum or const");
      return group(wrap_container("\"{\"", "\"}\"", body, false, depth));
    }
  }
  return "";
}

}  // namespace grammask::internal::schema
