#include "schema/drafts.h"

namespace grammask::internal::schema {

const std::set<std::string>& schema_map_keywords() {
  static const std::set<std::string> names = {"properties", "patternProperties", "$defs",
                                              "definitions", "dependentSchemas"};
  return names;
}
const std::set<std::string>& schema_array_keywords() {
  static const std::set<std::string> names = {"allOf", "anyOf", "oneOf", "prefixItems", "items"};
  return names;
}
const std::set<std::string>& schema_keywords() {
  static const std::set<std::string> names = {"not",
                                              "if",
                                              "then",
                                              "else",
                                              "items",
                                              "additionalItems",
                                              "additionalProperties",
                                              "contains",
                                              "propertyNames",
                                              "unevaluatedItems",
                                              "unevaluatedProperties",
                                              "contentSchema"};
  return names;
}

bool legacy(Draft draft) {
  return draft == Draft::kDraft7 || draft == Draft::kDraft6 || draft == Draft::kDraft4;
}

Draft draft_from_uri(const std::string& uri, Draft fallback) {
  if (uri.find("draft-04") != std::string::npos || uri.find("draft-03") != std::string::npos)
    return Draft::kDraft4;
  if (uri.find("draft-06") != std::string::npos) return Draft::kDraft6;
  if (uri.find("draft-07") != std::string::npos) return Draft::kDraft7;
  if (uri.find("2019-09") != std::string::npos) return Draft::kDraft2019_09;
  if (uri.find("2020-12") != std::string::npos) return Draft::kDraft2020_12;
  return fallback;
}

bool defined_in(const std::string& keyword, Draft draft) {
  static const std::set<std::string> since6 = {"const", "contains", "propertyNames"};
  static const std::set<std::string> since7 = {"if", "then", "else"};
  static const std::set<std::string> since2019 = {
      "dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems",
      "minContains",       "maxContains",      "$recursiveRef"};
  static const std::set<std::string> since2020 = {"prefixItems", "$dynamicRef"};
  const int level = draft == Draft::kDraft4         ? 4
                    : draft == Draft::kDraft6       ? 6
                    : draft == Draft::kDraft7       ? 7
                    : draft == Draft::kDraft2019_09 ? 2019
                                                    : 2020;
  if (since6.count(keyword)) return level >= 6;
  if (since7.count(keyword)) return level >= 7;
  if (since2019.count(keyword)) return level >= 2019;
  if (since2020.count(keyword)) return level >= 2020;
  return true;
}

const std::set<std::string>& applicator_keywords() {
  static const std::set<std::string> names = {"allOf",
                                              "anyOf",
                                              "oneOf",
                                              "not",
                                              "if",
                                              "$ref",
                                              "$dynamicRef",
                                              "$recursiveRef",
                                              "dependentSchemas",
                                              "dependencies",
                                              "dependentRequired"};
  return names;
}

const std::set<std::string>& identifier_keywords() {
  static const std::set<std::string> names = {
      "$schema", "$id",         "$anchor",     "$dynamicAnchor", "$recursiveAnchor",
      "$defs",   "definitions", "$comment",    "title",          "description",
      "default", "examples",    "$vocabulary", "then",           "else"};
  return names;
}

}  // namespace grammask::internal::schema
