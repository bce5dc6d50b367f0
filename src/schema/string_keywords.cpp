// The string family (minLength, maxLength, pattern, format, and patterns
// from `not`): StringKeywords' own functions and the Converter members for
// its keywords.
#include <algorithm>

#include "schema/converter.h"
#include "schema/keywords.h"

namespace grammask::internal::schema {

bool StringKeywords::unconstrained() const {
  return min_length == 0 && !max_length && patterns.empty() && negated_patterns.empty() &&
         formats.empty();
}

void StringKeywords::add_key(std::string& key) const {
  add_key_part(key, std::to_string(min_length) + "," + key_of_count(max_length));
  for (const Sourced& p : patterns)
    add_key_part(key, "p" + std::to_string(p.text.size()) + ":" + p.text);
  for (const Sourced& p : negated_patterns)
    add_key_part(key, "!p" + std::to_string(p.text.size()) + ":" + p.text);
  for (const Sourced& f : formats) add_key_part(key, "f" + f.text);
}

bool StringKeywords::drop(const std::string& keyword) {
  bool dropped = false;
  if (keyword == "pattern") {
    dropped = !patterns.empty();
    patterns.clear();
  } else if (keyword == "format") {
    dropped = !formats.empty();
    formats.clear();
  } else if (keyword == "minLength" || keyword == "maxLength") {
    dropped = min_length != 0 || max_length.has_value();
    min_length = 0, max_length.reset();
  } else if (keyword == "not") {
    dropped = !negated_patterns.empty();
    negated_patterns.clear();
  }
  return dropped;
}

void Converter::apply_length(Disj& d, const Keyword& k) {
  const std::string& key = k.key;
  const std::string& pointer = k.where.pointer;
  uint64_t n = non_negative_integer(k.value, key, pointer);
  for_each_clause(d, JType::kString, [&](Clause& c) {
    if (key == "minLength")
      c.min_length = std::max(c.min_length, n);
    else
      c.max_length = c.max_length ? std::min(*c.max_length, n) : n;
    c.length_pointer = pointer;
  });
}

void Converter::apply_pattern(Disj& d, const Keyword& k) {
  const std::string& key = k.key;
  const Json& value = k.value;
  const std::string& pointer = k.where.pointer;
  if (!value.is_string()) refuse(key, pointer, "must be a string", ErrorCode::kSyntax);
  parse_pattern(value.get<std::string>(), key, pointer);
  for_each_clause(d, JType::kString, [&](Clause& c) {
    c.patterns.push_back({value.get<std::string>(), pointer});
  });
}

void Converter::apply_format(Disj& d, const Keyword& k) {
  const Json& value = k.value;
  const std::string& pointer = k.where.pointer;
  if (!options_.assert_formats || !value.is_string()) return;
  internal::FormatLookup lookup = lookup_format(value.get<std::string>());
  if (!lookup.known) {
    warn("ignored unknown format \"" + value.get<std::string>() + "\" at " +
         display_pointer(pointer));
    return;
  }
  for_each_clause(d, JType::kString, [&](Clause& c) {
    c.formats.push_back({value.get<std::string>(), pointer});
  });
}

bool Converter::intersect_strings(Clause& c, const Clause& b) {
  c.min_length = std::max(c.min_length, b.min_length);
  if (b.max_length)
    c.max_length = c.max_length ? std::min(*c.max_length, *b.max_length) : *b.max_length;
  if (c.length_pointer.empty()) c.length_pointer = b.length_pointer;
  c.patterns.insert(c.patterns.end(), b.patterns.begin(), b.patterns.end());
  c.negated_patterns.insert(c.negated_patterns.end(), b.negated_patterns.begin(),
                            b.negated_patterns.end());
  c.formats.insert(c.formats.end(), b.formats.begin(), b.formats.end());
  if (c.max_length && c.min_length > *c.max_length) return false;
  return true;
}

bool Converter::negate_string(const Clause& clause, const Clause& base, Disj& complement) {
  // A string of another length, or one that fails a pattern (or matches a
  // pattern it had to avoid).
  for (const Sourced& pattern : clause.patterns) {
    Clause c = base;
    c.negated_patterns.push_back(pattern);
    complement.push_back(std::move(c));
  }
  for (const Sourced& format : clause.formats) {
    internal::FormatLookup lookup = lookup_format(format.text);
    if (!lookup.supported || !lookup.narrowed.empty()) return false;
    Clause c = base;
    c.negated_patterns.push_back({lookup.pattern, format.pointer});
    complement.push_back(std::move(c));
  }
  for (const Sourced& pattern : clause.negated_patterns) {
    Clause c = base;
    c.patterns.push_back(pattern);
    complement.push_back(std::move(c));
  }
  if (clause.min_length > 0) {
    Clause c = base;
    c.max_length = clause.min_length - 1;
    complement.push_back(std::move(c));
  }
  if (clause.max_length) {
    Clause c = base;
    c.min_length = *clause.max_length + 1;
    complement.push_back(std::move(c));
  }
  return true;
}

bool Converter::string_accepts(const Clause& c, const Json& value) {
  const std::string& text = value.get_ref<const std::string&>();
  size_t length = code_point_length(text);
  if (length < c.min_length || (c.max_length && length > *c.max_length)) return false;
  for (const Sourced& pattern : c.patterns) {
    auto match = pattern_searcher_.search(pattern.text, text);
    if (!match.ok()) refuse("pattern", pattern.pointer, match.status().message());
    if (!*match) return false;
  }
  for (const Sourced& pattern : c.negated_patterns) {
    auto match = pattern_searcher_.search(pattern.text, text);
    if (!match.ok()) refuse("not", pattern.pointer, match.status().message());
    if (*match) return false;
  }
  for (const Sourced& format : c.formats) {
    internal::FormatLookup lookup = lookup_format(format.text);
    if (!lookup.supported)
      refuse("format", format.pointer, "format \"" + format.text + "\" is not supported");
    auto match = pattern_searcher_.search(lookup.pattern, text);
    if (!match.ok()) refuse("format", format.pointer, match.status().message());
    if (!*match) return false;
  }
  return true;
}

}  // namespace grammask::internal::schema
