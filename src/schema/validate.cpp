// Validation of concrete values against normalized clauses, for enum/const
// filtering and property-name checks (members of Converter, declared in
// converter.h).
#include "schema/converter.h"

namespace grammask::internal::schema {

bool Converter::accepts(const Sub& sub, const Json& value) {
  for (const Clause& clause : normalize(sub))
    if (clause_accepts(clause, value, true)) return true;
  return false;
}

bool Converter::clause_accepts(const Clause& c, const Json& value, bool check_values) {
  if (type_of(value) != c.type) return false;
  if (check_values && c.has_values) {
    bool found = false;
    for (const Json* v : c.values)
      if (json_equal(*v, value)) found = true;
    if (!found) return false;
  }
  for (const Json* v : c.excluded)
    if (json_equal(*v, value)) return false;
  switch (c.type) {
    case JType::kNull:
    case JType::kBoolean:
      return true;
    case JType::kNumber: {
      auto number = number_of(value);
      if (!number) refuse("enum", c.values_pointer, "number too large to compare");
      if (c.integer && !number->is_integer()) return false;
      if (c.non_integer && number->is_integer()) return false;
      if (c.strict_integer && !value.is_number_integer() && !value.is_number_unsigned())
        return false;
      if (c.lo) {
        int cmp = internal::compare(*number, *c.lo);
        if (cmp < 0 || (cmp == 0 && c.lo_exclusive)) return false;
      }
      if (c.hi) {
        int cmp = internal::compare(*number, *c.hi);
        if (cmp > 0 || (cmp == 0 && c.hi_exclusive)) return false;
      }
      for (const auto& [divisor, pointer] : c.multiple_of) {
        auto multiple = internal::is_multiple_of(*number, divisor);
        if (!multiple) refuse("multipleOf", pointer, "numbers too large to check exactly");
        if (!*multiple) return false;
      }
      return true;
    }
    case JType::kString: {
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
    case JType::kArray: {
      if (value.size() < c.min_items || (c.max_items && value.size() > *c.max_items)) return false;
      for (size_t i = 0; i < value.size(); ++i)
        if (!accepts(i < c.prefix.size() ? c.prefix[i] : c.items, value[i])) return false;
      for (const Contains& contains : c.contains) {
        uint64_t count = 0;
        for (const Json& item : value)
          if (accepts(contains.schema, item)) ++count;
        if (count < contains.min || (contains.max && count > *contains.max)) return false;
      }
      if (c.unique)
        for (size_t i = 0; i < value.size(); ++i)
          for (size_t j = i + 1; j < value.size(); ++j)
            if (json_equal(value[i], value[j])) return false;
      return true;
    }
    case JType::kObject: {
      if (value.size() < c.min_properties || (c.max_properties && value.size() > *c.max_properties))
        return false;
      for (const std::string& name : c.required)
        if (!value.contains(name)) return false;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!c.property_names.is_true() && !accepts(c.property_names, Json(it.key()))) return false;
        if (!accepts(property_schema(c, it.key()), it.value())) return false;
      }
      return true;
    }
  }
  return false;
}

}  // namespace grammask::internal::schema
