// JSON Schema -> GBNF, for callers that constrain output to a schema: the
// grammar is exact or conversion fails.
//
// The converter accepts a JSON Schema (draft 2020-12; 2019-09, draft-07,
// -06 and -04 by their `$schema`, which counts at a document's root and at
// a subschema with an identifier) and writes a GBNF grammar whose language
// is exactly the JSON texts (in the chosen whitespace and key-order style)
// that the schema validates. References ($ref, $dynamicRef, $recursiveRef)
// resolve within the schema and into the documents the caller supplies
// (JsonSchemaOptions::documents, fetch_document): nothing is ever fetched
// from the network. docs/architecture.md tells how string constraints,
// references and unevaluated* keywords are converted.
//
// A keyword it cannot enforce exactly makes conversion fail with
// kUnsupported and a message naming the keyword and its JSON pointer, e.g.
//   unsupported keyword "uniqueItems" at /properties/tags: ...
// (a pointer into another document starts with its URI) unless `lenient`
// is set, in which case the keyword is dropped and a warning is recorded
// instead. String constraints whose automata would make the grammar too
// large to compile (a pattern under a large length bound) are refused the
// same way, naming maxLength or pattern: what converts compiles with the
// default CompileOptions. Where unevaluatedProperties or unevaluatedItems cannot see an
// annotation, the grammar is stricter, never looser. The grammar may reject
// some valid but unusual encodings (\u escapes of printable characters;
// under a range bound other than 0, a number whose exponent is outside
// [-4, 4] (other than 0 where a bound has over 40 digits written plainly,
// as 1e-300 has) unless its mantissa has one non-zero digit before the
// point, as in 1.5e-07; integers and multipleOf numbers in exponent form; keys out of the chosen
// order, or out of schema order where an object cannot be written in any order: see
// any_order_max_alternatives); it never accepts a text whose value the
// schema rejects.
//
// Both functions are thread-safe: any number of conversions may run at
// once. The resource bounds of JsonSchemaOptions bound one conversion.
#ifndef GRAMMASK_JSON_SCHEMA_H_
#define GRAMMASK_JSON_SCHEMA_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/grammar.h"
#include "grammask/status.h"

namespace grammask {

struct JsonSchemaOptions {
  enum class Whitespace : uint8_t {
    kCompact,   // no whitespace at all: {"a":1,"b":[1,2]}
    kFlexible,  // between tokens: nothing, a run of spaces, or a newline plus indentation,
                // each bounded so generation cannot loop on blanks (max_whitespace_run)
    kIndented,  // one fixed layout: newline + `indent` spaces per nesting level, ": ", ","
  };
  Whitespace whitespace = Whitespace::kFlexible;
  // kFlexible: longest run of spaces/tabs; after a newline, 4 more per level
  // of nesting the schema allows (16 levels where it is unbounded: $ref
  // cycles, generic values), so pretty-printed output fits at that depth.
  uint32_t max_whitespace_run = 20;
  uint32_t indent = 2;  // kIndented: spaces per level

  // Key order. kSchema: declared properties in schema order (each optional
  // one may be left out); other members (additionalProperties,
  // patternProperties) anywhere between them; required names that
  // `properties` does not list anywhere among them, each exactly once, in any
  // order. kAny: each declared property at most once, each required one
  // exactly once, in any order, other members as for kSchema. Both are exact
  // within any_order_max_alternatives.
  enum class PropertyOrder : uint8_t { kSchema, kAny };
  PropertyOrder property_order = PropertyOrder::kSchema;
  // With kAny, an object of two or more members is one AnyOrder(...) call
  // (see any_order_calls), where the Earley engine counts the members,
  // wherever the call can say it: up to kMaxAnyOrderMembers declared
  // properties, no maxProperties, minProperties at most 1 (0 when no
  // property is required). Elsewhere (and for the required names that
  // `properties` does not list, with kSchema) the order is spelled out as
  // rules, one per set of members written, up to this many member
  // alternatives per object: k members take k * 2^(k-1) (more with
  // additional members or min/maxProperties), so the default admits 9; 10
  // take 5120. An object that neither can write falls back to schema order
  // (kAny), and unlisted required names follow the listed ones in name
  // order; each with one warning naming the object's JSON pointer.
  uint32_t any_order_max_alternatives = 4096;
  // Whether kAny writes AnyOrder(...), grammask's extension of GBNF
  // (docs/GBNF.md), which other GBNF readers such as llama.cpp do not read.
  // false: the order is spelled out within any_order_max_alternatives.
  bool any_order_calls = true;

  // The value of a missing `additionalProperties`: the spec says true; false
  // is the strict style of llama.cpp and XGrammar.
  bool additional_properties_default = true;

  // When non-zero, strings without maxLength and arrays without maxItems get
  // this bound (a deliberate narrowing, reported as a warning).
  uint32_t default_max_length = 0;
  uint32_t default_max_items = 0;

  // `format` asserts (the useful default) or is only an annotation (the
  // 2020-12 default without the format-assertion vocabulary).
  bool assert_formats = true;

  // Which spelling rules apply when the schema has no `$schema`. kDraft4
  // (draft-04/03) has boolean exclusive bounds, `id`, and integers that may
  // not be written with a fraction. Keywords a draft does not define are
  // annotations there (`const` in draft-04, `if` before draft-07).
  enum class Draft : uint8_t { kDraft2020_12, kDraft2019_09, kDraft7, kDraft4, kDraft6 };
  Draft default_draft = Draft::kDraft2020_12;

  // Drop keywords that cannot be enforced exactly (one warning each)
  // instead of failing: a negation that cannot be computed is left out, a
  // dropped patternProperties takes additionalProperties with it. The
  // grammar then accepts every value the schema accepts, and more. Limits
  // (kLimitExceeded) and a too large expansion of alternatives still fail.
  bool lenient = false;

  // Documents other than the schema, for references that leave it
  // (`"$ref": "http://example.com/defs.json#/$defs/name"`, or a relative
  // reference resolved against a `$id`). grammask never reaches the network:
  // a document is found in `documents`, keyed by its absolute URI without
  // fragment, or else asked of `fetch_document` (when set), which returns
  // the JSON text or nullopt. A reference to a document found in neither
  // (the official metaschemas too, unless supplied) is refused, naming the
  // URI. Supplied documents are read as schemas: their `$id`, `$anchor` and
  // `$dynamicAnchor` count, relative references resolve against their own
  // base URI, and they follow their own `$schema` (else the draft of the
  // schema that refers to them). Only documents that some reference
  // reaches are read (fetch_document is called at most once per URI).
  std::map<std::string, std::string> documents;
  std::function<std::optional<std::string>(const std::string& uri)> fetch_document;

  // Resource bounds for schemas from untrusted clients: exceeding one fails
  // conversion with kLimitExceeded and a message naming the option and the
  // JSON pointer where it was exceeded.
  uint32_t max_schema_depth = 256;       // nesting, in the document and through $ref chains
  uint32_t max_ref_expansions = 100000;  // $ref/$dynamicRef/$recursiveRef followed in all
  uint32_t max_rules = 200000;           // rules in the emitted grammar
  size_t max_grammar_bytes = 16u << 20;  // size of the emitted text
  uint32_t max_pattern_length = 10000;   // bytes of one regex (pattern, patternProperties)
  uint32_t max_repeat = 10000;           // regex {m,n}, min/maxProperties, min/maxContains
                                         // (lengths and item counts of any size are fine)
  uint32_t max_documents = 64;           // other documents read for references
  uint32_t max_dynamic_scopes = 256;     // copies of schema resources made for $dynamicRef
                                         // (one per resource and set of bindings it is seen in;
                                         // 2^20 JSON values copied in all, whatever the count)
};

// Converts a schema to GBNF text with start rule "root". `warnings`, when
// given, receives one line per dropped keyword (lenient mode) or narrowing.
// Never throws; malformed JSON fails with kSyntax, a schema that accepts
// nothing (`false`) with kInvalidArgument, a keyword that cannot be enforced
// exactly (unless lenient) with kUnsupported, and a passed bound of
// `options` with kLimitExceeded.
Result<std::string> json_schema_to_gbnf(std::string_view schema_json,
                                        const JsonSchemaOptions& options = {},
                                        std::vector<std::string>* warnings = nullptr);

// Converts and parses: the grammar IR, ready for Recognizer::create. Fails
// as json_schema_to_gbnf does, or with kLimitExceeded when the text passes
// a bound of the GBNF parser (GbnfOptions::max_nesting, for a very deeply
// nested schema).
Result<Grammar> json_schema_to_grammar(std::string_view schema_json,
                                       const JsonSchemaOptions& options = {},
                                       std::vector<std::string>* warnings = nullptr);

}  // namespace grammask

#endif  // GRAMMASK_JSON_SCHEMA_H_
