// Emission of array clauses: prefix items, counted items, contains and
// uniqueItems (members of Converter, declared in converter.h).
#include <algorithm>
#include <map>
#include <set>

#include "schema/converter.h"
#include "schema/gbnf_text.h"

namespace grammask::internal::schema {

namespace {
// Arrays that count matches of `contains` and their items: at most this
// many states (one rule each).
constexpr uint64_t kMaxCountStates = 4096;

// uniqueItems over more than 6 values, as AnyOrder(...) calls: at most
// kMaxAnyOrderValues values (AnyOrder counts 64 members), and with minItems
// 1 (one call per value, all alive at once while parsing) at most
// kMaxCertainValues.
constexpr size_t kMaxAnyOrderValues = kMaxAnyOrderMembers;
constexpr size_t kMaxCertainValues = 16;

// Whether `match_states` counts of matches times the item counts 0..last
// fit within kMaxCountStates.
bool count_states_fit(uint64_t match_states, uint64_t last) {
  return match_states <= kMaxCountStates && last < kMaxCountStates &&
         match_states * (last + 1) <= kMaxCountStates;
}
}  // namespace

// Several `contains` (from allOf, or a negated `items`), each with a
// minimum and no maximum: states count the matches of each (capped at its
// minimum) and the items (for minItems and maxItems); an item may count for
// any set of them it matches, written as the conjunction of their schemas
// with `items`.
std::string Converter::emit_contains_all(const Clause& clause, const std::string& hint,
                                         uint32_t depth) {
  const std::vector<Contains>& all = clause.contains;
  constexpr size_t kMaxContains = 4;
  constexpr uint64_t kMaxStates = 256;
  if (all.size() > kMaxContains)
    refuse("contains", all[kMaxContains].pointer,
           "more than " + std::to_string(kMaxContains) + " contains constraints on one array");
  uint64_t states = 1;
  for (const Contains& c : all) {
    if (c.max) refuse("contains", c.pointer, "maxContains next to another contains");
    states *= c.min + 1;
    if (states > kMaxStates)
      refuse(
          "contains", c.pointer,
          "minContains counts need more than " + std::to_string(kMaxStates) + " states together");
  }
  if (!clause.prefix.empty()) refuse("contains", all[0].pointer, "combined with prefixItems");
  // Items so far, capped at maxItems, else at minItems, and at least 1 so
  // that the first item shows.
  const std::optional<uint64_t> max_items = clause.max_items;
  const uint64_t last = std::max<uint64_t>(max_items ? *max_items : clause.min_items, 1);
  if (!count_states_fit(states, last))
    refuse("contains", all[0].pointer,
           "the counts of matches and of items need more than " + std::to_string(kMaxCountStates) +
               " states");
  auto item_text = [&](const std::string& rule, bool first) {
    return seq({first ? "" : "\",\"", inner(depth), rule, after()});
  };
  // One item rule per set of constraints it counts for.
  const size_t k = all.size();
  std::vector<std::string> item_rules(size_t{1} << k);
  for (size_t subset = 0; subset < item_rules.size(); ++subset) {
    Sub schema = clause.items;
    for (size_t i = 0; i < k; ++i)
      if (subset & (size_t{1} << i)) schema = conj(schema, all[i].schema);
    item_rules[subset] = rule_for(schema, hint + "-item", depth + 1);
  }
  // A state is the capped counts, as one number in mixed radix.
  auto counts_of = [&](uint64_t state) {
    std::vector<uint64_t> counts(k);
    for (size_t i = 0; i < k; ++i) {
      counts[i] = state % (all[i].min + 1);
      state /= all[i].min + 1;
    }
    return counts;
  };
  auto state_of = [&](const std::vector<uint64_t>& counts) {
    uint64_t state = 0;
    for (size_t i = k; i-- > 0;) state = state * (all[i].min + 1) + counts[i];
    return state;
  };
  const std::string base = unique_name("c");
  auto name = [&](uint64_t state, uint64_t n) {
    std::string r = base + "-" + std::to_string(state) + (n > 0 ? "-" + std::to_string(n) : "");
    names_.insert(r);
    return r;
  };
  for (uint64_t state = 0; state < states; ++state) {
    const std::vector<uint64_t> counts = counts_of(state);
    bool satisfied = true;
    for (size_t i = 0; i < k; ++i) satisfied = satisfied && counts[i] >= all[i].min;
    for (uint64_t n = 0; n <= last; ++n) {
      std::vector<std::string> options;
      const bool more = !max_items || n < *max_items;
      for (size_t subset = 0; more && subset < item_rules.size(); ++subset) {
        if (item_rules[subset].empty()) continue;
        std::vector<uint64_t> next = counts;
        for (size_t i = 0; i < k; ++i)
          if (subset & (size_t{1} << i)) next[i] = std::min(next[i] + 1, all[i].min);
        options.push_back(seq(
            {item_text(item_rules[subset], n == 0), name(state_of(next), std::min(n + 1, last))}));
      }
      std::string body = alternatives(options);
      if (satisfied && n > 0 && n >= clause.min_items)
        body = body.empty() ? "\"\"" : "(" + body + ")?";
      if (body.empty()) body = base_rule("never");
      define_rule(name(state, n), body);
    }
  }
  bool empty_ok = clause.min_items == 0;
  for (const Contains& c : all) empty_ok = empty_ok && c.min == 0;
  return add_rule(hint + "-array", wrap_container("\"[\"", "\"]\"", name(0, 0), empty_ok, depth));
}

std::string Converter::emit_array(const Clause& clause, const std::string& hint, uint32_t depth) {
  const std::string& count_pointer = clause.items_count_pointer;
  std::optional<uint64_t> max_items = clause.max_items;
  if (!max_items && options_.default_max_items > 0 && clause.contains.empty()) {
    max_items = options_.default_max_items;
    warn("arrays without maxItems limited to " + std::to_string(*max_items));
  }
  auto item_text = [&](const std::string& rule, bool first) {
    return seq({first ? "" : "\",\"", inner(depth), rule, after()});
  };
  if (clause.unique && !(max_items && *max_items <= 1)) {
    // Exact only over small finite domains: every array is a sequence of
    // distinct values, i.e. a walk over subsets; the subset's size is the
    // position, so prefixItems only narrow the values a step may add.
    const size_t k = clause.prefix.size();
    if (k > 6)
      refuse("uniqueItems", clause.unique_pointer, "combined with more than 6 prefixItems");
    std::vector<std::vector<const Json*>> domains(k + 1);  // per position; k: the rest
    bool finite = true;
    static const Json kTrue(true), kFalse(false);
    auto collect = [&](const Sub& sub, std::vector<const Json*>& domain) {
      for (const Clause& item : normalize(sub)) {
        if (item.type == JType::kNull && item.excluded.empty()) {
          domain.push_back(&null_value());
        } else if (item.type == JType::kBoolean && !item.has_values) {
          for (const Json* b : {&kTrue, &kFalse})
            if (clause_accepts(item, *b, false)) domain.push_back(b);
        } else if (item.has_values) {
          for (const Json* v : item.values)
            if (clause_accepts(item, *v, false)) domain.push_back(v);
        } else {
          finite = false;
        }
      }
    };
    for (size_t i = 0; i < k; ++i) collect(clause.prefix[i], domains[i]);
    // Past the prefix only when arrays may be longer than it.
    if (!max_items || *max_items > k) collect(clause.items, domains[k]);
    std::vector<const Json*> distinct;
    std::vector<std::vector<size_t>> allowed(k + 1);  // indices into distinct
    for (size_t p = 0; p <= k; ++p) {
      for (const Json* v : domains[p]) {
        size_t index = distinct.size();
        for (size_t d = 0; d < distinct.size(); ++d)
          if (json_equal(*distinct[d], *v)) index = d;
        if (index == distinct.size()) distinct.push_back(v);
        if (std::find(allowed[p].begin(), allowed[p].end(), index) == allowed[p].end())
          allowed[p].push_back(index);
      }
    }
    if (!finite)
      refuse("uniqueItems", clause.unique_pointer,
             "items are not drawn from a small finite set of values");
    if (!clause.contains.empty())
      refuse("contains", clause.contains[0].pointer, "combined with uniqueItems");
    size_t n = distinct.size();
    if (n > 6) {
      // More values than subsets of rules can take: each value at most once
      // in any order, as an AnyOrder(...) call (its items carry the set of
      // values written). Without prefixItems, with minItems at most 1 (then
      // one call per value that comes for sure) and maxItems, if any, no
      // bound.
      std::string why;
      if (k > 0) why = "with prefixItems";
      if (clause.min_items > 1 || (max_items && *max_items < n)) why = "with minItems or maxItems";
      if (n > (clause.min_items == 1 ? kMaxCertainValues : kMaxAnyOrderValues))
        why = "with " + std::to_string(n) + " values";
      if (!options_.any_order_calls) why = "without AnyOrder(...) (any_order_calls)";
      if (!why.empty())
        refuse("uniqueItems", clause.unique_pointer,
               "items drawn from more than 6 values need AnyOrder(...), which it is not " + why);
      std::vector<std::string> members;
      for (const Json* v : distinct)
        members.push_back(seq({inner(depth), emit_value(*v, depth + 1), after()}));
      auto call = [&](size_t certain) {
        std::string text = "AnyOrder(\",\"";
        for (size_t j = 0; j < n; ++j)
          text += ", " + (j == certain ? members[j] : group(members[j]) + "?");
        return text + ")";
      };
      std::vector<std::string> calls;
      if (clause.min_items == 0) {
        calls.push_back(call(n));
      } else {
        for (size_t j = 0; j < n; ++j) calls.push_back(call(j));
      }
      std::string body = add_rule(hint + "-set", alternatives(calls));
      return add_rule(hint + "-array",
                      wrap_container("\"[\"", "\"]\"", body, clause.min_items == 0, depth));
    }
    uint64_t all = (uint64_t{1} << n) - 1;
    std::string base = unique_name(hint + "-set");
    std::vector<std::string> values;
    for (const Json* v : distinct) values.push_back(emit_value(*v, depth + 1));
    auto popcount = [](uint64_t m) { return static_cast<uint64_t>(__builtin_popcountll(m)); };
    // The values the next item may take after the set m.
    auto next = [&](uint64_t m) -> const std::vector<size_t>& {
      return allowed[std::min<uint64_t>(popcount(m), k)];
    };
    uint64_t min_items = std::max<uint64_t>(clause.min_items, 1);
    std::map<uint64_t, bool> productive;
    for (int64_t mask = static_cast<int64_t>(all); mask >= 0; --mask) {
      auto m = static_cast<uint64_t>(mask);
      bool ok = popcount(m) >= min_items && (!max_items || popcount(m) <= *max_items);
      if (max_items && popcount(m) > *max_items) {
        productive[m] = false;
        continue;
      }
      for (size_t j : next(m))
        if (!ok && !(m & (uint64_t{1} << j)) && productive[m | (uint64_t{1} << j)]) ok = true;
      productive[m] = ok;
    }
    std::string body;
    if (productive[0]) {
      for (uint64_t m = 0; m <= all; ++m) {
        if (!productive[m]) continue;
        std::vector<std::string> options;
        for (size_t j : next(m)) {
          uint64_t bit = uint64_t{1} << j;
          if (!(m & bit) && productive[m | bit])
            options.push_back(
                seq({item_text(values[j], m == 0), base + "-" + std::to_string(m | bit)}));
        }
        bool can_end = popcount(m) >= min_items;
        std::string rule_body = alternatives(options);
        if (can_end) rule_body = rule_body.empty() ? "\"\"" : "(" + rule_body + ")?";
        names_.insert(base + "-" + std::to_string(m));
        define_rule(base + "-" + std::to_string(m), rule_body);
      }
      body = base + "-0";
    }
    bool empty_ok = clause.min_items == 0;
    if (body.empty() && !empty_ok) return "";
    return add_rule(hint + "-array", wrap_container("\"[\"", "\"]\"", body, empty_ok, depth));
  }
  if (clause.contains.size() > 1) return emit_contains_all(clause, hint, depth);
  if (!clause.contains.empty()) {
    const Contains& contains = clause.contains[0];
    if (!clause.prefix.empty()) refuse("contains", contains.pointer, "combined with prefixItems");
    Sub matching = conj(clause.items, contains.schema);
    std::string match_rule = rule_for(matching, hint + "-match", depth + 1);
    std::string other_rule;
    if (contains.max) {
      if (contains.schema.nodes.size() != 1 || !contains.schema.negated.empty() ||
          !contains.schema.any_of.empty())
        refuse("contains", contains.pointer, "maxContains needs a negatable contains schema");
      Sub negated;
      negated.negated.push_back(contains.schema.nodes[0]);
      Sub other = conj(clause.items, negated);
      try {
        other_rule = rule_for(other, hint + "-other", depth + 1);
      } catch (Refusal&) {
        refuse("contains", contains.pointer, "maxContains needs a negatable contains schema");
      }
      check_repeat(*contains.max, "maxContains", contains.pointer);
    } else {
      other_rule = rule_for(clause.items, hint + "-item", depth + 1);
    }
    check_repeat(contains.min, "minContains", contains.pointer);
    // States (matches so far, capped; items so far, capped at maxItems, else
    // at minItems, and at least 1 so that the first item shows).
    const uint64_t cap = contains.max ? *contains.max : contains.min;
    const uint64_t last = std::max<uint64_t>(max_items ? *max_items : clause.min_items, 1);
    if (!count_states_fit(cap + 1, last))
      refuse("contains", contains.pointer,
             "the counts of matches and of items need more than " +
                 std::to_string(kMaxCountStates) + " states");
    std::string base = unique_name(hint + "-contains");
    auto name = [&](uint64_t k, uint64_t n) {
      std::string r = base + "-" + std::to_string(k) + (n > 0 ? "-" + std::to_string(n) : "");
      names_.insert(r);
      return r;
    };
    std::vector<std::pair<std::string, std::string>> pending;
    for (uint64_t k = 0; k <= cap; ++k) {
      for (uint64_t n = 0; n <= last; ++n) {
        std::vector<std::string> options;
        const bool more = !max_items || n < *max_items;
        const uint64_t next = std::min(n + 1, last);
        if (more && !other_rule.empty())
          options.push_back(seq({item_text(other_rule, n == 0), name(k, next)}));
        if (more && !match_rule.empty()) {
          if (k < cap)
            options.push_back(seq({item_text(match_rule, n == 0), name(k + 1, next)}));
          else if (!contains.max)
            options.push_back(seq({item_text(match_rule, n == 0), name(k, next)}));
        }
        bool can_end = k >= contains.min && n > 0 && n >= clause.min_items;
        std::string body = alternatives(options);
        if (can_end) body = body.empty() ? "\"\"" : "(" + body + ")?";
        if (body.empty()) body = base_rule("never");
        pending.emplace_back(name(k, n), body);
      }
    }
    for (auto& [n, b] : pending) define_rule(n, b);
    bool empty_ok = contains.min == 0 && clause.min_items == 0;
    return add_rule(hint + "-array", wrap_container("\"[\"", "\"]\"", name(0, 0), empty_ok, depth));
  }
  // Positions: prefix items, then the rest with a counted repeat.
  uint64_t min_items = clause.min_items;
  size_t usable = clause.prefix.size();
  std::vector<std::string> prefix_rules;
  for (size_t i = 0; i < clause.prefix.size(); ++i) {
    if (max_items && i >= *max_items) {
      usable = i;
      break;
    }
    std::string rule = rule_for(clause.prefix[i], hint + "-" + std::to_string(i), depth + 1);
    if (rule.empty()) {
      usable = i;
      break;
    }
    prefix_rules.push_back(rule);
  }
  if (min_items > usable && usable < clause.prefix.size()) return "";
  std::string rest_rule;
  bool rest_possible = usable == clause.prefix.size() && (!max_items || *max_items > usable);
  if (rest_possible) {
    rest_rule = rule_for(clause.items, hint + "-item", depth + 1);
    if (rest_rule.empty()) rest_possible = false;
  }
  if (!rest_possible && min_items > usable) return "";
  uint64_t rest_min = min_items > usable ? min_items - usable : 0;
  std::optional<uint64_t> rest_max;
  if (max_items) rest_max = *max_items - std::min<uint64_t>(*max_items, usable);
  (void)count_pointer;
  // Items from position i on (i >= 1); none at all is allowed once
  // min_items items were written.
  std::function<std::string(size_t)> tail_from = [&](size_t i) -> std::string {
    if (i == usable) {
      if (!rest_possible || (rest_max && *rest_max == 0)) return "";
      return counted(group(item_text(rest_rule, false)), rest_min, rest_max, hint + "-items");
    }
    std::string here = seq({item_text(prefix_rules[i], false), tail_from(i + 1)});
    return i >= min_items ? group(here) + "?" : here;
  };
  // A non-empty body (the empty array is its own alternative).
  std::string body;
  if (usable > 0) {
    body = seq({item_text(prefix_rules[0], true), tail_from(1)});
  } else if (rest_possible && !(rest_max && *rest_max == 0)) {
    uint64_t more_min = rest_min > 0 ? rest_min - 1 : 0;
    std::optional<uint64_t> more_max;
    if (rest_max) more_max = *rest_max - 1;
    if (!more_max || more_min <= *more_max) {
      body = item_text(rest_rule, true);
      if (!more_max || *more_max > 0)
        body = seq({body, counted(group(item_text(rest_rule, false)), more_min, more_max,
                                  hint + "-items")});
    }
  }
  bool empty_ok = min_items == 0;
  if (body.empty() && !empty_ok) return "";
  return add_rule(hint + "-array", wrap_container("\"[\"", "\"]\"", body, empty_ok, depth));
}

}  // namespace grammask::internal::schema
