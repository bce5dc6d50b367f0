// Emission of string clauses: lengths, patterns, formats, negated patterns
// and excluded values, as regex translations or string automata; keys other
// than a set of names (members of Converter, declared in converter.h).
#include <algorithm>
#include <bitset>
#include <map>
#include <memory>
#include <mutex>

#include "base/utf8.h"
#include "ir/gbnf_writer.h"
#include "regex/code_point_set.h"
#include "regex/regex_to_gbnf.h"
#include "schema/converter.h"
#include "schema/gbnf_text.h"

namespace grammask::internal::schema {

std::string Converter::emit_string(const Clause& clause, const std::string& hint) {
  std::vector<Sourced> regexes = clause.patterns;
  std::vector<std::string> keywords(regexes.size(), "pattern");
  for (const Sourced& format : clause.formats) {
    internal::FormatLookup lookup = lookup_format(format.text);
    if (!lookup.supported)
      refuse("format", format.pointer, "format \"" + format.text + "\" cannot be enforced exactly");
    if (!lookup.narrowed.empty())
      warn("format \"" + format.text + "\" at " + display_pointer(format.pointer) +
           " accepts only " + lookup.narrowed);
    regexes.push_back({lookup.pattern, format.pointer});
    keywords.push_back("format");
  }
  std::optional<uint64_t> max_length = clause.max_length;
  if (!max_length && options_.default_max_length > 0 && regexes.empty()) {
    max_length = options_.default_max_length;
    warn("strings without maxLength limited to " + std::to_string(*max_length));
  }
  const bool lengths = clause.min_length > 0 || max_length.has_value();
  if (!clause.excluded.empty() && regexes.empty() && !lengths && clause.negated_patterns.empty()) {
    std::vector<std::string> names;
    for (const Json* v : clause.excluded) names.push_back(v->get<std::string>());
    return key_not_in(names, hint + "-str");
  }
  // A pattern with lookaheads goes to the automaton, which intersects them;
  // so does one with an anchor inside a branch (`(^a|b)+`), which only the
  // automaton reads.
  auto needs_automaton = [&](const std::string& text) {
    const Result<internal::RegexNode>& parsed = parsed_pattern(text);
    return parsed.ok() && (internal::has_lookahead(*parsed) || internal::has_inner_anchor(*parsed));
  };
  if (regexes.size() == 1 && clause.excluded.empty() && clause.negated_patterns.empty() &&
      !needs_automaton(regexes[0].text)) {
    // ecma_regex_to_gbnf with the parse shared with the rest of the conversion.
    const Result<internal::RegexNode>& parsed = parsed_pattern(regexes[0].text);
    auto translate = [&](uint64_t min_length,
                         std::optional<uint64_t> max_length) -> Result<internal::RegexTranslation> {
      const std::string any_char = base_rule("char");  // defined either way, as before
      if (!parsed.ok()) return parsed.status();
      return internal::regex_to_gbnf(*parsed, any_char, min_length, max_length);
    };
    auto translated = translate(0, std::nullopt);
    if (!translated.ok())
      refuse(keywords[0], regexes[0].pointer, translated.status().message(),
             translated.status().code());
    bool min_ok = clause.min_length <= translated->min_length;
    bool max_ok = !max_length || (translated->max_length && *translated->max_length <= *max_length);
    if (!min_ok || !max_ok) {
      // Intersect the lengths with the pattern where its shape allows;
      // otherwise the automaton below does it.
      translated = translate(clause.min_length, max_length);
      if (!translated.ok() && translated.status().message() == "pattern matches no string")
        return "";
    }
    if (translated.ok()) {
      std::string body = translated->gbnf;
      return add_rule(hint + "-str",
                      seq({"\"\\\"\"", body.empty() ? "" : group(body), "\"\\\"\""}));
    }
  }
  if (!regexes.empty() || !clause.negated_patterns.empty() || !clause.excluded.empty())
    return emit_string_automaton(clause, max_length, hint);
  if (clause.min_length == 0 && !max_length) return base_rule("string");
  // The character written out rather than as `char`: the repeated item is
  // an expression, which a large repetition lifts into one rule (see
  // docs/lowering.md, Repetition).
  std::string chars = counted(group(char_body()), clause.min_length, max_length, hint + "-chars");
  return add_rule(hint + "-str", seq({"\"\\\"\"", chars, "\"\\\"\""}));
}

namespace {

// The minimal automaton of a format's pattern, built once per process
// (formats are a fixed set of patterns, and determinizing some, such as
// email, takes tens of milliseconds). `build` makes it on a miss; failures
// are not kept.
Result<internal::CharDfa> format_dfa(const std::string& pattern,
                                     const std::function<Result<internal::CharDfa>()>& build) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const internal::CharDfa>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(pattern);
    if (it != cache.end()) return *it->second;
  }
  Result<internal::CharDfa> built = build();
  if (!built.ok()) return built;
  auto minimal = std::make_shared<const internal::CharDfa>(
      internal::dfa_minimize(*built, [](uint32_t l) { return l != 0; }));
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(pattern, minimal);
  return *minimal;
}

}  // namespace

// The strings a string clause allows, as an automaton: the intersection
// of its patterns and formats, the complements of the patterns it must not
// match and of excluded values, and its length bounds; its values when it
// has some. Refuses (naming the keyword) past the state budget.
internal::CharDfa Converter::string_dfa(const Clause& clause, std::optional<uint64_t> max_length) {
  if (clause.has_values) {
    std::vector<std::string> words;
    for (const Json* v : clause.values)
      if (clause_accepts(clause, *v, false)) words.push_back(v->get<std::string>());
    return internal::dfa_words(words);
  }
  internal::CharDfa dfa = internal::dfa_any();
  bool any = true;  // dfa is still dfa_any(): the first part is the intersection
  auto narrow = [&](Result<internal::CharDfa> part, const std::string& keyword,
                    const std::string& pointer, size_t budget = internal::kDefaultDfaStates,
                    bool minimal = false) {
    if (!part.ok()) refuse(keyword, pointer, part.status().message(), part.status().code());
    if (any && part->states.size() <= budget) {
      // Every string and the part: the part itself, minimized.
      dfa = minimal ? *part : internal::dfa_minimize(*part, [](uint32_t l) { return l != 0; });
    } else {
      Result<internal::CharDfa> both = internal::dfa_intersection(dfa, *part, budget);
      if (!both.ok()) refuse(keyword, pointer, both.status().message(), both.status().code());
      dfa = std::move(both).value();
      // (A large product, of a format's automaton say, is minimized before
      // it becomes rules.)
      if (dfa.states.size() > internal::kDefaultDfaStates)
        dfa = internal::dfa_minimize(dfa, [](uint32_t l) { return l != 0; });
    }
    any = false;
    charge_automaton(dfa.states.size() + part->states.size(), keyword, pointer);
  };
  auto regex_dfa = [&](const std::string& text, const std::string& keyword,
                       const std::string& pointer,
                       size_t max_states = internal::kDefaultDfaStates) {
    return internal::dfa_from_regex(parse_pattern(text, keyword, pointer), 1, max_states);
  };
  // Formats are a fixed set, built once per process: they get more room
  // (e-mail's local-part bound passes 4096 states before minimization).
  constexpr size_t kFormatDfaStates = size_t{1} << 15;
  for (const Sourced& pattern : clause.patterns)
    narrow(regex_dfa(pattern.text, "pattern", pattern.pointer), "pattern", pattern.pointer);
  for (const Sourced& format : clause.formats) {
    internal::FormatLookup lookup = lookup_format(format.text);
    if (!lookup.supported)
      refuse("format", format.pointer, "format \"" + format.text + "\" cannot be enforced exactly");
    const std::string& pattern =
        max_length && !lookup.bounded.empty() ? lookup.bounded : lookup.pattern;
    narrow(
        format_dfa(pattern,
                   [&] { return regex_dfa(pattern, "format", format.pointer, kFormatDfaStates); }),
        "format", format.pointer, kFormatDfaStates, true);
  }
  for (const Sourced& negated : clause.negated_patterns) {
    Result<internal::CharDfa> matching = regex_dfa(negated.text, "not", negated.pointer);
    if (!matching.ok())
      refuse("not", negated.pointer, matching.status().message(), matching.status().code());
    narrow(internal::dfa_complement(*matching), "not", negated.pointer);
  }
  if (!clause.excluded.empty()) {
    std::vector<std::string> names;
    for (const Json* v : clause.excluded) names.push_back(v->get<std::string>());
    narrow(internal::dfa_complement(internal::dfa_words(names)), "not", clause.values_pointer);
  }
  // Bounds the strings already keep (an e-mail address is never longer
  // than 1024 characters) are dropped: intersecting with them would
  // change nothing but multiply the states.
  uint64_t min_length = clause.min_length;
  if (min_length > 0 || max_length) {
    const internal::DfaLengths lengths = internal::dfa_lengths(dfa);
    if (lengths.min >= min_length) min_length = 0;
    if (max_length && lengths.max && *lengths.max <= *max_length) max_length.reset();
  }
  // A length bound multiplies the states by the bound (maxLength 1024 on
  // an e-mail address is some ten thousand).
  constexpr size_t kLengthStates = size_t{1} << 15;
  // Each state is counted up to the bound: past the budget, refuse before
  // building most of it.
  if (max_length && static_cast<double>(dfa.states.size()) * static_cast<double>(*max_length + 1) >
                        static_cast<double>(kLengthStates))
    refuse("maxLength", clause.length_pointer,
           "the pattern's " + std::to_string(dfa.states.size()) +
               " automaton states times the length bound are more than " +
               std::to_string(kLengthStates));
  if (min_length > 0 || max_length)
    narrow(internal::dfa_length(min_length, max_length, kLengthStates),
           min_length > 0 && !max_length ? "minLength" : "maxLength", clause.length_pointer,
           kLengthStates);
  return dfa;
}

namespace {
// Past this estimate lowering runs out of RecognizerOptions::max_states (an
// e-mail pattern under maxLength 254 estimates 353,000 and is refused by
// the compiler) or compiles for seconds.
constexpr size_t kMaxLoweredCost = 300000;

// About how many byte-automaton states lowering makes of an automaton's
// rules: each edge's code-point ranges become UTF-8 byte sequences (one
// more state per continuation byte), and characters JSON must escape add
// the escape's bytes.
size_t lowered_cost(const internal::CharDfa& dfa) {
  size_t cost = 0;
  for (const internal::CharDfa::State& state : dfa.states) {
    cost += 1;
    for (const internal::CharDfa::Edge& edge : state.edges) {
      for (const CodePointRange& range : edge.chars) {
        cost += 1;
        if (range.last >= 0x80) cost += 2;
        if (range.last >= 0x800) cost += 3;
        if (range.last >= 0x10000) cost += 4;
        if (range.first < 0x20 || (range.first <= '"' && range.last >= '"') ||
            (range.first <= '\\' && range.last >= '\\'))
          cost += 6;
      }
    }
  }
  return cost;
}

// A hash of the automaton, so that one emitted again (the same rules, which
// the converter shares) is charged once.
uint64_t automaton_hash(const internal::CharDfa& dfa) {
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&hash](uint64_t value) { hash = (hash ^ value) * 1099511628211ull; };
  for (const internal::CharDfa::State& state : dfa.states) {
    mix(state.label);
    mix(state.edges.size());
    for (const internal::CharDfa::Edge& edge : state.edges) {
      mix(edge.target);
      for (const CodePointRange& range : edge.chars)
        mix((uint64_t{range.first} << 32) | range.last);
    }
  }
  return hash;
}
}  // namespace

// GBNF for the JSON string bodies an automaton accepts with a label that
// passes `keep`: one rule per state. "" when there are none.
std::string Converter::dfa_rules(const internal::CharDfa& dfa,
                                 const std::function<bool(uint32_t)>& keep, const std::string& hint,
                                 const std::string& keyword, const std::string& pointer) {
  // Each state becomes a rule over JSON string characters; refuse before
  // the grammar gets too large to lower (see kMaxLoweredCost).
  if (charged_automata_.insert(automaton_hash(dfa)).second) {
    emitted_automaton_cost_ += lowered_cost(dfa);
    if (emitted_automaton_cost_ > kMaxLoweredCost)
      refuse(keyword, pointer,
             "the string automata of this schema would lower to about " +
                 std::to_string(emitted_automaton_cost_) + " automaton states, more than " +
                 std::to_string(kMaxLoweredCost));
  }
  // The state rules name each other last: a right-linear grammar, one rule
  // per state.
  return internal::dfa_to_gbnf(
      dfa, keep, [&] { return unique_name(hint); },
      [&](const std::string& name, const std::string& body) { define_rule(name, body); },
      "\"\\\"\"");
}

// Several patterns, a pattern the string must not match, excluded values or
// lengths a pattern's shape does not allow to intersect directly.
std::string Converter::emit_string_automaton(const Clause& clause,
                                             std::optional<uint64_t> max_length,
                                             const std::string& hint) {
  // The refusal names what made the automaton: a length bound, else a
  // pattern, a format or the values excluded by `not`.
  std::string keyword = "not", pointer = clause.values_pointer;
  if (max_length || clause.min_length > 0) {
    keyword = max_length ? "maxLength" : "minLength";
    pointer = clause.length_pointer;
  } else if (!clause.patterns.empty()) {
    keyword = "pattern";
    pointer = clause.patterns[0].pointer;
  } else if (!clause.formats.empty()) {
    keyword = "format";
    pointer = clause.formats[0].pointer;
  }
  std::string start = dfa_rules(
      string_dfa(clause, max_length), [](uint32_t label) { return label != 0; }, "s", keyword,
      pointer);
  if (start.empty()) return "";
  return add_rule(hint + "-str", seq({"\"\\\"\"", start}));
}

// Strings (canonically encoded) other than the given ones, via a trie.
std::string Converter::key_not_in(const std::vector<std::string>& names, const std::string& hint) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  auto known = key_not_in_memo_.find(sorted);
  if (known != key_not_in_memo_.end()) return known->second;
  std::string result = key_not_in_uncached(names, hint);
  key_not_in_memo_.emplace(std::move(sorted), result);
  return result;
}

std::string Converter::key_not_in_uncached(const std::vector<std::string>& names,
                                           const std::string& hint) {
  (void)hint;
  // A trie of the names, its nodes merged where their futures are equal
  // (names sharing their ends): the minimal automaton of the names, built
  // bottom-up since children come after their parents.
  // Children in a short vector (found by a linear search, sorted by code
  // point once the trie is built).
  struct Node {
    std::vector<std::pair<uint32_t, uint32_t>> children;  // code point, node
    bool terminal = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& name : names) {
    uint32_t at = 0;
    for (size_t i = 0; i < name.size();) {
      uint32_t cp = 0;
      i += utf8::decode_unchecked(name, i, &cp);  // UTF-8 from a JSON parser: valid
      auto& children = trie[at].children;
      auto it =
          std::find_if(children.begin(), children.end(),
                       [cp](const std::pair<uint32_t, uint32_t>& c) { return c.first == cp; });
      if (it != children.end()) {
        at = it->second;
        continue;
      }
      trie.emplace_back();
      const auto index = static_cast<uint32_t>(trie.size() - 1);
      trie[at].children.emplace_back(cp, index);
      at = index;
    }
    trie[at].terminal = true;
  }
  for (Node& node : trie) std::sort(node.children.begin(), node.children.end());
  std::vector<uint32_t> canonical(trie.size());
  std::vector<uint32_t> representative;  // canonical id -> a node
  std::unordered_map<std::string, uint32_t> ids;
  std::string signature;
  for (size_t i = trie.size(); i-- > 0;) {
    signature.assign(1, trie[i].terminal ? '1' : '0');
    for (const auto& [cp, child] : trie[i].children) {
      const uint32_t words[2] = {cp, canonical[child]};
      signature.append(reinterpret_cast<const char*>(words), sizeof words);
    }
    auto [it, inserted] = ids.emplace(signature, static_cast<uint32_t>(ids.size()));
    if (inserted) representative.push_back(static_cast<uint32_t>(i));
    canonical[i] = it->second;
  }
  // One rule per merged state: characters that continue some name lead to
  // other states, the others leave the names, then anything (the shared
  // rule `key-tail`); states that end no name may end the key, closing
  // quote included (so that no state before it ends a rule). Every state
  // rule, `key-tail` and `key-leave` is named only last in a rule: a
  // right-linear grammar, the automaton one rule per state.
  const internal::CodePointSet shared = internal::normalize_set(
      {{0x00, 0x1F}, {'"', '"'}, {'/', '/'}, {'\\', '\\'}, {0x80, kMaxCodePoint}});
  if (key_tail_rule_.empty()) {
    key_tail_rule_ = add_rule("key-tail", base_rule("cchar") + "* \"\\\"\"");
    key_leave_rule_ = add_rule(
        "key-leave", add_rule("key-char", internal::json_char_gbnf(shared)) + " " + key_tail_rule_);
  }
  const std::string base = unique_name("k");
  std::vector<std::string> state_names(representative.size());
  for (uint32_t id = 0; id < representative.size(); ++id)
    state_names[id] = id == canonical[0] ? base : base + "s" + std::to_string(id);
  // The GBNF class of a set of ASCII code points (a bitmap here).
  auto ascii_class = [](const std::bitset<128>& set) {
    std::vector<CodePointRange> ranges;
    for (uint32_t cp = 0; cp < 128; ++cp) {
      if (!set[cp]) continue;
      if (!ranges.empty() && ranges.back().last + 1 == cp)
        ranges.back().last = cp;
      else
        ranges.push_back({cp, cp});
    }
    return internal::gbnf_char_class(ranges);
  };
  std::string body;
  std::string used_key;
  for (uint32_t id = 0; id < representative.size(); ++id) {
    const Node& node = trie[representative[id]];
    // Characters that need no escape and are ASCII: the common case, kept
    // off the code point set machinery.
    auto plain = [](uint32_t cp) {
      return cp >= 0x20 && cp < 0x7F && cp != '"' && cp != '\\' && cp != '/';
    };
    body.clear();
    used_key.clear();
    if (!node.terminal) body += '(';
    bool all_plain = true;
    bool first = true;
    for (const auto& [cp, child] : node.children) {
      if (!first) body += " | ";
      first = false;
      if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
        body += '[';  // what gbnf_char_class writes, without its allocations
        body += static_cast<char>(cp);
        body += ']';
      } else if (plain(cp)) {
        body += internal::gbnf_char_class({{cp, cp}});
      } else {
        body += internal::json_char_gbnf({{cp, cp}});
        all_plain = false;
      }
      body += ' ';
      body += state_names[canonical[child]];
      used_key.append(reinterpret_cast<const char*>(&cp), sizeof cp);
    }
    if (!first) body += " | ";
    // Spellings differ ("/" or "\/"), but each decodes to one code point:
    // the branches split by code point.
    if (all_plain) {
      // Nearly always: the ASCII characters no name continues with (one
      // rule per set of continuations), and the shared rest.
      auto cached = other_ascii_memo_.find(used_key);
      if (cached == other_ascii_memo_.end()) {
        // The ASCII that `shared` leaves out: 0x20-0x7F but for '"', '/'
        // and '\\', less the continuations.
        std::bitset<128> ascii;
        for (uint32_t cp = 0x20; cp < 0x80; ++cp) ascii[cp] = true;
        ascii['"'] = ascii['/'] = ascii['\\'] = false;
        for (const auto& [cp, child] : node.children) ascii[cp] = false;
        std::string leave = key_leave_rule_;
        if (ascii.any()) leave = ascii_class(ascii) + " " + key_tail_rule_ + " | " + leave;
        cached = other_ascii_memo_.emplace(used_key, add_rule("kc", leave)).first;
      }
      body += cached->second;
    } else {
      internal::CodePointSet used;
      for (const auto& [cp, child] : node.children) used.push_back({cp, cp});
      body += internal::json_char_gbnf(internal::complement_set(internal::normalize_set(used)));
      body += ' ';
      body += key_tail_rule_;
    }
    if (!node.terminal) body += " | \"\\\"\")";  // the key may end here
    names_.insert(state_names[id]);
    define_rule(state_names[id], body);
  }
  return seq({"\"\\\"\"", base});
}

std::string Converter::emit_string_key_rule(const Sub& names, const std::string& hint) {
  std::vector<std::string> options;
  for (const Clause& clause : normalize(names)) {
    if (clause.type != JType::kString) continue;
    std::string expr = emit_clause(clause, hint, 0);
    if (!expr.empty()) options.push_back(expr);
  }
  if (options.empty()) return "";
  return add_rule(hint, alternatives(options));
}

}  // namespace grammask::internal::schema
