// Emission of object clauses: declared members in schema order or in any order,
// counted members, and keys that patterns or propertyNames constrain
// (members of Converter, declared in converter.h).
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "base/json_string.h"
#include "ir/gbnf_writer.h"
#include "schema/converter.h"
#include "schema/gbnf_text.h"
#include "schema/refusal.h"

namespace grammask::internal::schema {

std::string Converter::emit_members(const std::vector<Member>& all_members,
                                    const std::string& additional, uint64_t min_count,
                                    std::optional<uint64_t> max_count, const std::string& hint,
                                    uint32_t depth, const std::string& pointer,
                                    const std::string& object) {
  (void)hint;  // state rules get short names of their own
  // Non-empty member lists only: callers add the empty object themselves.
  uint64_t minimum = std::max<uint64_t>(min_count, 1);
  if (max_count && *max_count == 0) return "";
  if (max_count) check_repeat(*max_count, "maxProperties", pointer);
  check_repeat(minimum, "minProperties", pointer);
  const uint64_t budget = options_.any_order_max_alternatives;
  auto warn_once = [&](const std::string& message) {
    if (warnings_ && std::find(warnings_->begin(), warnings_->end(), message) == warnings_->end())
      warn(message);
  };
  // Listed members in schema order, required names that `properties` does
  // not list in any order (each exactly once), or all in any order.
  std::vector<Member> listed, unlisted;
  for (const Member& member : all_members) (member.listed ? listed : unlisted).push_back(member);
  if (options_.property_order == JsonSchemaOptions::PropertyOrder::kAny && all_members.size() > 1) {
    // One call where it can say it, else spelled out within the bound.
    std::string why;
    std::optional<std::string> body =
        emit_any_order_call(all_members, additional, min_count, max_count, depth, &why);
    if (body) return *body;
    body = emit_unordered({}, all_members, additional, minimum, max_count, depth, budget);
    if (body) return *body;
    warn_once("properties of " + object +
              " in schema order, not in any order: that takes more than " + std::to_string(budget) +
              " alternatives (any_order_max_alternatives), and " + why);
  }
  if (!unlisted.empty()) {
    std::optional<std::string> body =
        emit_unordered(listed, unlisted, additional, minimum, max_count, depth, budget);
    if (body) return *body;
    warn_once("required properties that \"properties\" does not list, of " + object +
              ", in name order after the listed ones: any order takes more than " +
              std::to_string(budget) + " alternatives (any_order_max_alternatives)");
  }
  // Schema order, then the unlisted required names in name order.
  const std::vector<Member>& members = all_members;
  size_t n = members.size();
  auto member_text = [&](const std::string& text, bool first) {
    return seq({first ? "" : "\",\"", inner(depth), text, after()});
  };
  uint64_t cap = std::max<uint64_t>(minimum, max_count ? *max_count : 0);
  std::string base = unique_name("o");  // short: one rule per state
  // State: (position, members so far capped at `cap`).
  std::map<std::pair<uint64_t, uint64_t>, std::string> names;
  std::map<std::pair<uint64_t, uint64_t>, bool> productive;
  auto state_name = [&](uint64_t where, uint64_t count) {
    auto key = std::make_pair(where, count);
    auto it = names.find(key);
    if (it != names.end()) return it->second;
    std::string name = base + "-" + std::to_string(where) + "-" + std::to_string(count);
    names_.insert(name);
    names[key] = name;
    return name;
  };
  auto next_count = [&](uint64_t count) -> std::optional<uint64_t> {
    if (max_count && count + 1 > *max_count) return std::nullopt;
    return std::min(count + 1, cap);
  };
  std::vector<std::pair<std::string, std::string>> pending;
  auto define_states = [&]() {
    for (auto& [name, body] : pending) {
      define_rule(name, body.empty() ? "\"\"" : body);
    }
  };
  if (!max_count && minimum == 1) {
    // Any number of members: one parse per object. Other members go right
    // after the member they follow (or first); declared ones in order.
    //   first ::= A ("," A)* after_0 | take_0
    //   take_i ::= m_i ("," A)* after_(i+1) | take_(i+1)     (the latter if m_i is optional)
    //   after_i ::= ("," m_i ("," A)*)? after_(i+1)           (no "?" if m_i is required)
    const std::string others =
        additional.empty() ? "" : group(member_text(additional, false)) + "*";
    auto after = [&](size_t i) { return base + "-a" + std::to_string(i); };
    auto take = [&](size_t i) { return base + "-t" + std::to_string(i); };
    // The first declared member that is required: none can be skipped past it.
    size_t first_required = n;
    for (size_t i = 0; i < n; ++i)
      if (members[i].required) {
        first_required = i;
        break;
      }
    for (size_t i = 0; i <= n; ++i) {
      names_.insert(after(i));
      std::string body;
      if (i < n) {
        // Member i and the other members after it, named once: both the
        // first member and a later one write it.
        const std::string member = base + "-m" + std::to_string(i);
        names_.insert(member);
        pending.emplace_back(member, seq({member_text(members[i].text, true), others}));
        std::string written = seq({"\",\"", member});
        body = seq({members[i].required ? written : group(written) + "?", after(i + 1)});
      }
      pending.emplace_back(after(i), body);
    }
    for (size_t i = 0; i < n && i <= first_required; ++i) {
      names_.insert(take(i));
      std::vector<std::string> options = {seq({base + "-m" + std::to_string(i), after(i + 1)})};
      if (!members[i].required && i + 1 < n && i + 1 <= first_required)
        options.push_back(take(i + 1));
      pending.emplace_back(take(i), alternatives(options));
    }
    std::vector<std::string> first;
    if (!additional.empty())
      first.push_back(seq({member_text(additional, true), others, after(0)}));
    if (n > 0) first.push_back(take(0));
    if (first.empty()) return "";
    define_states();
    return group(alternatives(first));
  }
  {
    // Productive states, computed from the end.
    for (int i = static_cast<int>(n); i >= 0; --i) {
      for (int64_t count = static_cast<int64_t>(cap); count >= 0; --count) {
        auto c = static_cast<uint64_t>(count);
        bool ok = false;
        if (static_cast<size_t>(i) == n && c >= minimum) ok = true;
        if (static_cast<size_t>(i) < n) {
          auto next = next_count(c);
          if (next && productive[{static_cast<uint64_t>(i) + 1, *next}]) ok = true;
          if (!members[static_cast<size_t>(i)].required &&
              productive[{static_cast<uint64_t>(i) + 1, c}])
            ok = true;
        }
        if (!additional.empty()) {
          auto next = next_count(c);
          if (next && *next != c && productive[{static_cast<uint64_t>(i), *next}]) ok = true;
        }
        productive[{static_cast<uint64_t>(i), c}] = ok;
      }
    }
    if (!productive[{0, 0}]) return "";
    for (size_t i = 0; i <= n; ++i) {
      for (uint64_t c = 0; c <= cap; ++c) {
        if (!productive[{i, c}]) continue;
        std::vector<std::string> options;
        auto next = next_count(c);
        if (next && *next == c) {
          // The count no longer changes: other members loop here, then
          // member i or not, and the next state is referenced once (not
          // once in each of two alternatives, which would double the
          // states after it written out in place).
          std::string loop = additional.empty() ? "" : group(member_text(additional, c == 0)) + "*";
          std::string body = loop;
          if (i < n) {
            std::string take = member_text(members[i].text, c == 0);
            body =
                seq({loop, members[i].required ? take : group(take) + "?", state_name(i + 1, c)});
          }
          pending.emplace_back(state_name(i, c), body);
          continue;
        }
        if (!additional.empty()) {
          auto next = next_count(c);
          if (next && productive[{i, *next}])
            options.push_back(seq({member_text(additional, c == 0), state_name(i, *next)}));
        }
        if (i < n) {
          auto next = next_count(c);
          if (next && productive[{i + 1, *next}])
            options.push_back(
                seq({member_text(members[i].text, c == 0), state_name(i + 1, *next)}));
          if (!members[i].required && productive[{i + 1, c}])
            options.push_back(state_name(i + 1, c));
        }
        bool can_end = i == n && c >= minimum;
        std::string body = alternatives(options);
        if (can_end) body = body.empty() ? "" : "(" + body + ")?";
        pending.emplace_back(state_name(i, c), body);
      }
    }
  }
  define_states();
  return state_name(0, 0);
}

// The states, as a deterministic automaton over members: Normal(i, W, c)
// after c members (capped at `cap`), with `ordered` members before i written
// or left out and the free members in W written; Skip(i, W, c) after
// leaving out ordered member i, where only a later ordered member or the end
// may come (so that a left-out member is left out at one place, and every
// object has one parse). A free member, additional ones and the next ordered
// member lead from Normal states. The automaton is the minimal one for the
// free members: two different sets W are told apart by a member in one and
// not the other, so no exact rule set with one rule per state has fewer.
// The members as one AnyOrder(...) call: the declared ones each at most
// once (exactly once if required), the other members (additional ones)
// any number of times, separated by commas. The call may match no member
// at all when none is required, so only where the object may be empty or
// has a required member; nothing counts maxProperties.
std::optional<std::string> Converter::emit_any_order_call(const std::vector<Member>& members,
                                                          const std::string& additional,
                                                          uint64_t min_count,
                                                          std::optional<uint64_t> max_count,
                                                          uint32_t depth, std::string* why) {
  const bool some_required =
      std::any_of(members.begin(), members.end(), [](const Member& m) { return m.required; });
  if (!options_.any_order_calls) {
    *why = "AnyOrder(...) is off (any_order_calls)";
    return std::nullopt;
  }
  if (max_count || min_count > 1 || (min_count == 1 && !some_required)) {
    *why = "AnyOrder(...) does not count minProperties or maxProperties";
    return std::nullopt;
  }
  if (members.size() > kMaxAnyOrderMembers) {
    *why = "AnyOrder(...) takes at most " + std::to_string(kMaxAnyOrderMembers) + " properties";
    return std::nullopt;
  }
  std::string call = "AnyOrder(\",\"";
  for (const Member& member : members) {
    const std::string text = seq({inner(depth), member.text, after()});
    call += ", " + (member.required ? text : group(text) + "?");
  }
  if (!additional.empty()) call += ", " + group(seq({inner(depth), additional, after()})) + "*";
  return call + ")";
}

std::optional<std::string> Converter::emit_unordered(const std::vector<Member>& ordered,
                                                     const std::vector<Member>& free,
                                                     const std::string& additional,
                                                     uint64_t minimum,
                                                     std::optional<uint64_t> max_count,
                                                     uint32_t depth, uint64_t budget) {
  const size_t o = ordered.size(), k = free.size();
  if (k >= 32 || (uint64_t{1} << k) > budget) return std::nullopt;
  const uint64_t cap = std::max<uint64_t>(minimum, max_count ? *max_count : 0);
  uint64_t free_required = 0;
  for (size_t j = 0; j < k; ++j)
    if (free[j].required) free_required |= uint64_t{1} << j;
  struct State {
    uint32_t i;
    bool skip;
    uint64_t written;
    uint64_t count;
    bool operator<(const State& b) const {
      return std::tie(i, skip, written, count) < std::tie(b.i, b.skip, b.written, b.count);
    }
  };
  enum class Kind : uint8_t { kAdditional, kFree, kOrdered, kSkip };
  struct Edge {
    Kind kind;
    size_t index;
    State to;
  };
  auto next_count = [&](uint64_t count) -> std::optional<uint64_t> {
    if (max_count && count + 1 > *max_count) return std::nullopt;
    return std::min(count + 1, cap);
  };
  auto can_end = [&](const State& s) {
    size_t next_ordered = s.skip ? s.i + 1 : s.i;
    return next_ordered == o && (s.written & free_required) == free_required && s.count >= minimum;
  };
  auto edges = [&](const State& s) {
    std::vector<Edge> out;
    auto next = next_count(s.count);
    size_t i = s.skip ? s.i + 1 : s.i;
    if (!s.skip) {
      if (!additional.empty() && next)
        out.push_back({Kind::kAdditional, 0, {s.i, false, s.written, *next}});
      for (size_t j = 0; j < k; ++j) {
        uint64_t bit = uint64_t{1} << j;
        if (!(s.written & bit) && next)
          out.push_back({Kind::kFree, j, {s.i, false, s.written | bit, *next}});
      }
    }
    if (i < o) {
      if (next)
        out.push_back({Kind::kOrdered, i, {static_cast<uint32_t>(i + 1), false, s.written, *next}});
      if (!ordered[i].required)
        out.push_back({Kind::kSkip, i, {static_cast<uint32_t>(i), true, s.written, s.count}});
    }
    return out;
  };
  // Which states can still end, from the start; gives up past the budget.
  std::map<State, bool> productive;
  bool over = false;
  std::function<bool(const State&)> visit = [&](const State& s) -> bool {
    auto it = productive.find(s);
    if (it != productive.end()) return it->second;
    if (over || productive.size() >= budget) {
      over = true;
      return false;
    }
    productive[s] = false;  // a self-loop (additional members, count capped) adds nothing
    bool ok = can_end(s);
    for (const Edge& e : edges(s))
      if (!(e.to.i == s.i && e.to.skip == s.skip && e.to.written == s.written &&
            e.to.count == s.count))
        ok = visit(e.to) || ok;
    if (over) return false;
    productive[s] = ok;
    return ok;
  };
  const State start{0, false, 0, 0};
  if (!visit(start)) return over ? std::nullopt : std::optional<std::string>("");
  // The rules, as edges to productive states; counted before any is defined.
  std::map<State, size_t> index;
  std::vector<State> order = {start};
  index[start] = 0;
  std::vector<std::vector<Edge>> kept;
  uint64_t alternatives_count = 0;
  for (size_t q = 0; q < order.size(); ++q) {
    State s = order[q];
    std::vector<Edge> out;
    for (const Edge& e : edges(s)) {
      if (!productive[e.to]) continue;
      out.push_back(e);
      if (index.emplace(e.to, order.size()).second) order.push_back(e.to);
    }
    alternatives_count += out.size();
    if (alternatives_count > budget) return std::nullopt;
    kept.push_back(std::move(out));
  }
  // Each member is one rule (its text is written once, not once per state).
  auto member_rule = [&](const std::string& text) {
    std::string body = seq({inner(depth), text, after()});
    return bare_name(body) ? body : unshared_rule("p", body);
  };
  std::vector<std::string> ordered_rules, free_rules;
  for (const Member& m : ordered) ordered_rules.push_back(member_rule(m.text));
  for (const Member& m : free) free_rules.push_back(member_rule(m.text));
  std::string additional_rule = additional.empty() ? "" : member_rule(additional);
  std::string base = unique_name("o");
  std::vector<std::string> names;
  for (size_t q = 0; q < order.size(); ++q) {
    // "-s": apart from unique_name's "o-2" and the ordered states' "o-2-1".
    names.push_back(base + "-s" + std::to_string(q));
    names_.insert(names.back());
  }
  for (size_t q = 0; q < order.size(); ++q) {
    const State& s = order[q];
    // Members after a comma (written once before them all), then the
    // states that leave out an ordered member.
    std::vector<std::string> members, skips;
    bool loop = false;
    for (const Edge& e : kept[q]) {
      const std::string& to = names[index[e.to]];
      switch (e.kind) {
        case Kind::kAdditional:
          if (e.to.count == s.count)
            loop = true;
          else
            members.push_back(seq({additional_rule, to}));
          break;
        case Kind::kFree:
          members.push_back(seq({free_rules[e.index], to}));
          break;
        case Kind::kOrdered:
          members.push_back(seq({ordered_rules[e.index], to}));
          break;
        case Kind::kSkip:
          skips.push_back(to);
          break;
      }
    }
    std::vector<std::string> options = skips;
    if (!members.empty()) {
      std::string written = alternatives(members);
      if (members.size() > 1 && s.count != 0) written = group(written);
      options.insert(options.begin(), seq({s.count == 0 ? "" : "\",\"", written}));
    }
    std::string body = alternatives(options);
    if (!body.empty() && (loop || can_end(s))) body = group(body) + (can_end(s) ? "?" : "");
    if (loop) body = seq({group(seq({"\",\"", additional_rule})) + "*", body});
    define_rule(names[q], body.empty() ? "\"\"" : body);
  }
  return names[0];
}

// Members with undeclared keys when patternProperties (or propertyNames
// next to declared properties) apply: one automaton over keys labels each
// key with the patterns it matches, so that its value gets all their
// schemas, or the additionalProperties schema when it matches none;
// declared names and names propertyNames rejects are left out. One
// alternative per label that occurs.
std::string Converter::other_members(const Clause& clause, const std::vector<std::string>& declared,
                                     const std::string& hint, uint32_t depth) {
  constexpr uint32_t kKey = 1u << 31;  // a key that may be written here
  constexpr size_t kMaxPatterns = 16;
  const std::string& pattern_pointer = clause.pattern_properties.empty()
                                           ? clause.property_names_pointer
                                           : clause.pattern_properties[0].first.pointer;
  if (clause.pattern_properties.size() > kMaxPatterns)
    refuse("patternProperties", pattern_pointer,
           "more than " + std::to_string(kMaxPatterns) + " patterns");
  auto limited = [&](Result<internal::CharDfa> dfa, const std::string& keyword,
                     const std::string& pointer) {
    if (!dfa.ok()) refuse(keyword, pointer, dfa.status().message(), dfa.status().code());
    return std::move(dfa).value();
  };
  internal::CharDfa keys = internal::dfa_complement(internal::dfa_words(declared), kKey);
  if (!clause.property_names.is_true()) {
    // The union of the string clauses of propertyNames.
    std::optional<internal::CharDfa> names;
    for (const Clause& c : normalize(clause.property_names)) {
      if (c.type != JType::kString) continue;
      internal::CharDfa part = string_dfa(c, c.max_length);
      names = names ? limited(internal::dfa_product(
                                  *names, part,
                                  [](uint32_t x, uint32_t y) -> uint32_t { return x | y ? 1 : 0; }),
                              "propertyNames", clause.property_names_pointer)
                    : part;
    }
    if (!names) return "";
    keys = limited(
        internal::dfa_product(keys, *names, [](uint32_t x, uint32_t y) { return y != 0 ? x : 0u; }),
        "propertyNames", clause.property_names_pointer);
  }
  for (size_t i = 0; i < clause.pattern_properties.size(); ++i) {
    const Sourced& pattern = clause.pattern_properties[i].first;
    const internal::RegexNode parsed =
        parse_pattern(pattern.text, "patternProperties", pattern.pointer);
    internal::CharDfa matches =
        limited(internal::dfa_from_regex(parsed, 1u << i), "patternProperties", pattern.pointer);
    keys = limited(internal::dfa_product(
                       keys, matches, [](uint32_t x, uint32_t y) { return x != 0 ? x | y : 0u; }),
                   "patternProperties", pattern.pointer);
    keys = internal::dfa_minimize(keys, [](uint32_t label) { return label != 0; });
  }
  std::set<uint32_t> labels;
  for (const internal::CharDfa::State& state : keys.states)
    if (state.label & kKey) labels.insert(state.label);
  std::vector<std::string> options;
  for (uint32_t label : labels) {
    const Sub value = pattern_value(clause, label & ~kKey);
    std::string value_rule = rule_for(value, hint + "-pattern-value", depth + 1);
    if (value_rule.empty()) continue;
    std::string key = dfa_rules(
        keys, [label](uint32_t l) { return l == label; }, "pk",
        clause.pattern_properties.empty() ? "propertyNames" : "patternProperties",
        clause.pattern_properties.empty() ? clause.property_names_pointer
                                          : clause.pattern_properties[0].first.pointer);
    if (key.empty()) continue;
    options.push_back(seq({"\"\\\"\"", key, colon(), value_rule}));
  }
  return alternatives(options);
}

std::string Converter::emit_object(const Clause& clause, const std::string& hint, uint32_t depth) {
  // Which keys may appear beyond the declared ones, and with what values.
  bool additional_allowed = !normalize(clause.additional).empty();
  // Declared members, then required names that were not declared.
  std::vector<std::pair<std::string, Sub>> declared = clause.properties;
  for (const std::string& name : clause.required)
    if (!find_property(clause, name)) declared.emplace_back(name, property_schema(clause, name));
  std::vector<std::string> declared_names;
  std::vector<Member> members;
  for (const auto& [name, sub] : declared) {
    declared_names.push_back(name);
    bool required = clause.required.count(name) > 0;
    bool name_ok = clause.property_names.is_true() || accepts(clause.property_names, Json(name));
    std::string value_rule = name_ok ? rule_for(sub, hint + "-" + name, depth + 1) : "";
    if (value_rule.empty()) {
      if (required) return "";
      continue;
    }
    members.push_back(
        {seq({internal::gbnf_literal(internal::json_quote(name)), colon(), value_rule}), required,
         find_property(clause, name) != nullptr});
  }
  std::string additional_member;
  if (!clause.pattern_properties.empty() ||
      (!clause.property_names.is_true() && !declared_names.empty())) {
    std::string options = other_members(clause, declared_names, hint, depth);
    if (!options.empty()) additional_member = unshared_rule("m", options);
  } else if (additional_allowed) {
    std::string additional_key;
    if (!clause.property_names.is_true())
      additional_key = emit_string_key_rule(clause.property_names, hint + "-name");
    else if (declared_names.empty())
      additional_key = base_rule("string");
    else
      additional_key = add_rule(hint + "-key", key_not_in(declared_names, hint + "-key"));
    std::string value_rule =
        additional_key.empty() ? "" : rule_for(clause.additional, hint + "-additional", depth + 1);
    // Written between every two declared members: one rule, not a copy each.
    if (!value_rule.empty())
      additional_member = unshared_rule("m", seq({additional_key, colon(), value_rule}));
  }
  if (clause.some_undeclared) {
    // At least one member with an undeclared key: one that must come, in
    // any order, besides those that may.
    if (additional_member.empty()) return "";
    members.push_back({additional_member, true, false});
  }
  bool empty_ok = clause.required.empty() && clause.min_properties == 0 && !clause.some_undeclared;
  std::string body = emit_members(
      members, additional_member, clause.min_properties, clause.max_properties, hint, depth,
      clause.properties_count_pointer, "the object at " + display_pointer(clause.members_pointer));
  if (body.empty() && !empty_ok) return "";
  return add_rule(hint + "-object", wrap_container("\"{\"", "\"}\"", body, empty_ok, depth));
}

}  // namespace grammask::internal::schema
