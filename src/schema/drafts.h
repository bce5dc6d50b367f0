// What each JSON Schema draft defines: which keywords hold sub-schemas, and
// which keywords exist in which draft.
#ifndef GRAMMASK_SRC_SCHEMA_DRAFTS_H_
#define GRAMMASK_SRC_SCHEMA_DRAFTS_H_

#include <set>
#include <string>

#include "grammask/json_schema.h"

namespace grammask::internal::schema {

using Draft = JsonSchemaOptions::Draft;

// Keywords whose value maps names to sub-schemas ("properties", "$defs"...).
const std::set<std::string>& schema_map_keywords();
// Keywords whose value may be an array of sub-schemas ("allOf", "items"...).
const std::set<std::string>& schema_array_keywords();
// Keywords whose value is one sub-schema ("not", "if", "items"...).
const std::set<std::string>& schema_keywords();

// draft-07 and older: $ref replaces its siblings, "#name" ids are anchors.
bool legacy(Draft draft);

// The draft a $schema URI names; `fallback` for URIs of no known draft.
Draft draft_from_uri(const std::string& uri, Draft fallback);

// Keywords a draft does not define are annotations in schemas of that
// draft (validators ignore unknown keywords): a draft-04 schema's `const`
// or `if` asserts nothing. True for the keywords of every draft, and for
// keywords of no draft.
bool defined_in(const std::string& keyword, Draft draft);

// Keywords that combine whole schemas (allOf, not, if, $ref, dependencies
// ...): intersected with the conjunction of the other keywords in the order
// they are written.
const std::set<std::string>& applicator_keywords();

// Keywords that assert nothing where they are written (identifiers,
// annotations, and then/else, which `if` reads): the conjunction of the
// local keywords takes its place at the first keyword that is neither an
// applicator nor one of these.
const std::set<std::string>& identifier_keywords();

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_DRAFTS_H_
