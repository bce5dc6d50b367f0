// The JSON Schema -> GBNF converter behind include/grammask/json_schema.h.
//
// Pipeline: parse and index the document ($id, $anchor, base URIs), then
// normalize schemas into a disjunction of per-type clauses (each clause a
// conjunction of constraints on values of one JSON type), then emit GBNF.
// Keywords only constrain values of their own type, so a typeless schema is
// the union of its six type clauses, each carrying the keywords that apply.
// allOf/$ref intersect clauses, anyOf unions them, oneOf needs provably
// disjoint branches (or negatable ones), `not` needs a negatable operand.
// Sub-schemas below properties and items stay lazy (a set of schema nodes to
// intersect), become GBNF rules, and so recursive schemas become recursive
// rules. Whatever cannot be enforced exactly throws a Refusal that names the
// keyword and the JSON pointer of the schema holding it.
//
// One Converter converts one document once; its methods are defined by
// responsibility: normalize.cpp, algebra.cpp, validate.cpp, the keyword
// families' files (*_keywords.cpp), rules.cpp, emit.cpp and
// emit_{number,string,object,array}.cpp.
#ifndef GRAMMASK_SRC_SCHEMA_CONVERTER_H_
#define GRAMMASK_SRC_SCHEMA_CONVERTER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "grammask/json_schema.h"
#include "grammask/status.h"
#include "regex/char_dfa.h"
#include "regex/ecma_regex.h"
#include "regex/re2_bridge.h"
#include "schema/clause.h"
#include "schema/document.h"
#include "schema/formats.h"
#include "schema/json_value.h"
#include "schema/refusal.h"

namespace grammask::internal::schema {

// Converts one indexed Document, once; not thread-safe. Work and output are
// bounded by the options' limits (max_rules, max_grammar_bytes,
// max_ref_expansions, max_schema_depth, max_repeat ...): past one, a
// Refusal with kLimitExceeded.
class Converter {
 public:
  Converter(Document& document, const JsonSchemaOptions& options,
            std::vector<std::string>* warnings)
      : doc_(document), options_(options), warnings_(warnings) {}

  // The GBNF text of the document: `root` first, then every rule in the
  // order it was defined. Throws a Refusal for what it cannot enforce
  // exactly (lenient mode drops such keywords with a warning instead), and
  // past the limits of the options.
  std::string convert();

 private:
  struct NestingHeight;
  // --- normalization (normalize.cpp) ----------------------------------------
  // The normal form of a Sub or a schema node, memoized for the conversion.
  // Refuses a schema that reaches itself without consuming input
  // (kSelfReference) and nesting through references past max_schema_depth.
  const Disj& normalize(const Sub& sub);
  // normalize(sub), or null when `sub` leads back to a schema being
  // normalized (a recursive definition seen from inside a property or item
  // of itself, whose value lies in between): for checks that may then
  // answer "cannot tell".
  const Disj* normalize_unless_in_progress(const Sub& sub);
  const Disj& normalize_node(const Json* node);
  Disj normalize_object(const Json* node);
  // The local keywords of a schema object (those that constrain values of
  // their own type) as one conjunction, starting from the types that `type`
  // names when it is well formed.
  Disj local_clauses(const Json* node, const NodeInfo& where);
  // A local keyword, through keyword_handlers(); others are ignored.
  void apply_keyword(Disj& d, const Json* node, const std::string& key, const Json& value,
                     const NodeInfo& where);
  // An applicator (see applicator_keywords()): `d` intersected with what
  // `key` asserts. `local` is the conjunction of the local keywords.
  void apply_applicator(Disj& d, const Disj& local, const Json* node, const std::string& key,
                        const Json& value, const NodeInfo& where, const std::string& pointer);
  void apply_all_any_one_of(Disj& d, const Disj& local, const std::string& key, const Json& value,
                            const NodeInfo& where, const std::string& pointer);
  // oneOf whose branches may overlap: branch i and not any other. False
  // (and `d` untouched) when the branches are provably disjoint.
  bool apply_overlapping_one_of(Disj& d, const Disj& local, const std::vector<Disj>& branches,
                                const Json& value, const NodeInfo& where,
                                const std::string& pointer);
  // anyOf under unevaluated*: the union split by which branches hold. False
  // (and `d` untouched) when that is not possible exactly.
  bool apply_any_of_cells(Disj& d, const Json& value, const std::string& pointer);
  // if/then/else.
  void apply_conditional(Disj& d, const Json* node, const Json& value, const NodeInfo& where,
                         const std::string& pointer);
  // $ref, $dynamicRef, $recursiveRef; counts against max_ref_expansions.
  void apply_reference(Disj& d, const Json* node, const std::string& key, const Json& value,
                       const NodeInfo& where, const std::string& pointer);
  // dependentRequired, dependentSchemas, dependencies: per trigger, the
  // object clauses without it or with it and its dependencies; refuses past
  // 512 clauses.
  void apply_dependencies(Disj& d, const std::string& key, const Json& value, const NodeInfo& where,
                          const std::string& pointer);
  // unevaluatedProperties and unevaluatedItems: what the clauses of `d`
  // leave unevaluated gets their schemas (the families' parts below).
  void apply_unevaluated(Disj& d, const Json* node, const NodeInfo& where);
  // The clauses of `d` less those that a required property makes empty.
  Disj satisfiable(Disj d);
  // Runs `action`; in lenient mode a kUnsupported refusal becomes a warning
  // (and counts as a widening).
  void with_lenience(const std::string& keyword, const std::function<void()>& action);
  // normalize_node for a schema about to be negated (or used both ways, as
  // an `if`): refuses, naming `keyword`, one that lenient mode widened,
  // whose negation would be narrower than the schema's. The refusal then
  // drops the enclosing keyword instead, which widens.
  const Disj& normalize_exactly(const Json* node, const std::string& keyword,
                                const std::string& pointer);
  void warn(const std::string& message) {
    if (warnings_) warnings_->push_back(message);
  }

  // --- algebra (algebra.cpp) ------------------------------------------------
  // A Sub keeps its nodes sorted by address (a set); what is built from
  // them follows JSON pointer order, so the grammar does not depend on
  // where the heap put the nodes.
  bool before_in_document(const Json* a, const Json* b) const;  // JSON pointer, then scope
  std::vector<const Json*> in_document_order(std::vector<const Json*> nodes) const;
  std::vector<std::vector<const Json*>> in_document_order(
      const std::vector<std::vector<const Json*>>& groups) const;
  // not (S1 and S2 ...) as a list of alternatives: one per conjunct.
  std::vector<Sub> negate_sub(const Sub& sub) const;
  // The pairwise intersections of the clauses of a and b; refuses past 1024
  // clauses (naming `pointer`).
  Disj intersect(const Disj& a, const Disj& b, const std::string& pointer);
  // nullopt when the conjunction is provably empty.
  std::optional<Clause> intersect_clauses(const Clause& a, const Clause& b);
  // The complement of d among all JSON values; nullopt when some clause is
  // not simple enough to complement exactly.
  std::optional<Disj> negate(const Disj& d);
  // True when no value satisfies both (false may mean "not proven").
  static constexpr int kMaxDisjointDepth = 8;
  bool disjoint(const Disj& a, const Disj& b, int depth = 0);
  bool objects_disjoint_by_required(const Clause& x, const Clause& y, int depth);
  // Whether no string matches the patterns of both string clauses; false
  // when it cannot tell within the automaton budget.
  bool patterns_disjoint(const Clause& x, const Clause& y);
  // The clauses of xs less every value of ys, when all are closed object
  // clauses (no property but the declared ones) whose common names have
  // disjoint schemas and ys has no enum or const; else nullopt.
  std::optional<Disj> minus_closed_objects(const Disj& xs, const Disj& ys);

  // --- keyword families -----------------------------------------------------
  // Each family of Clause (see clause.h) has its functions in its own file:
  // value_keywords.cpp, number_keywords.cpp, string_keywords.cpp,
  // array_keywords.cpp, object_keywords.cpp.

  // A keyword of a schema object, as its handler sees it.
  struct Keyword {
    const Json* node;  // the schema object
    const std::string& key;
    const Json& value;
    const NodeInfo& where;
  };
  // Narrows the clauses of `d` by a local keyword; refuses (kSyntax) a
  // malformed value.
  using KeywordHandler = void (Converter::*)(Disj& d, const Keyword& keyword);
  // Local keyword -> its handler (apply_keyword ignores other keywords).
  static const std::unordered_map<std::string, KeywordHandler>& keyword_handlers();

  // Intersection, family by family, of `c` (a copy of `a`) with `b`; false
  // when provably empty.
  void intersect_values(Clause& c, const Clause& b);
  bool intersect_numbers(Clause& c, const Clause& b);
  bool intersect_strings(Clause& c, const Clause& b);
  bool intersect_arrays(Clause& c, const Clause& a, const Clause& b);
  bool intersect_objects(Clause& c, const Clause& a, const Clause& b);
  // Objects x and y that intersect_objects cannot intersect as they are: one
  // with some_undeclared while the other declares names it does not.
  static bool undeclared_names_differ(const Clause& x, const Clause& y);
  // `x` as clauses that together accept what it does, each with
  // some_undeclared declaring every name in `names`, or without it.
  Disj declaring(const Clause& x, const std::set<std::string>& names);

  // The complement of `clause` within its type: appends clauses (each
  // `base`, of the clause's type, narrowed) to `complement`; false when it
  // cannot be written exactly.
  bool negate_values(const Clause& clause, const Clause& base, Disj& complement);
  bool negate_number(const Clause& clause, const Clause& base, Disj& complement);
  bool negate_string(const Clause& clause, const Clause& base, Disj& complement);
  bool negate_array(const Clause& clause, const Clause& base, Disj& complement);
  bool negate_object(const Clause& clause, const Clause& base, Disj& complement);

  // Whether `value`, of the clause's type, meets the family's keywords.
  // Refuses where a check cannot be made exactly (numbers too large).
  bool values_accept(const Clause& c, const Json& value, bool check_values);
  bool number_accepts(const Clause& c, const Json& value);
  bool string_accepts(const Clause& c, const Json& value);
  bool array_accepts(const Clause& c, const Json& value);
  bool object_accepts(const Clause& c, const Json& value);

  // value_keywords.cpp
  void apply_type(Disj& d, const Keyword& k);
  void apply_values(Disj& d, const Keyword& k);  // enum, const
  // number_keywords.cpp
  void apply_minimum(Disj& d, const Keyword& k);  // minimum, exclusiveMinimum
  void apply_maximum(Disj& d, const Keyword& k);  // maximum, exclusiveMaximum
  void apply_multiple_of(Disj& d, const Keyword& k);
  // string_keywords.cpp
  void apply_length(Disj& d, const Keyword& k);  // minLength, maxLength
  void apply_pattern(Disj& d, const Keyword& k);
  void apply_format(Disj& d, const Keyword& k);
  // array_keywords.cpp
  // prefixItems, items and additionalItems (which read each other) into the
  // array clauses of `local`.
  void apply_items(Disj& local, const Json* node, const NodeInfo& where);
  void apply_item_count(Disj& d, const Keyword& k);  // minItems, maxItems
  void apply_contains(Disj& d, const Keyword& k);    // with minContains, maxContains
  void apply_unique_items(Disj& d, const Keyword& k);
  void apply_unevaluated_items(Disj& d, const Json* node);
  // object_keywords.cpp
  // properties, patternProperties and additionalProperties (which read each
  // other) into the object clauses of `local`.
  void apply_properties(Disj& local, const Json* node, const NodeInfo& where);
  void apply_required(Disj& d, const Keyword& k);
  void apply_property_names(Disj& d, const Keyword& k);
  void apply_property_count(Disj& d, const Keyword& k);  // minProperties, maxProperties
  void apply_unevaluated_properties(Disj& d, const Json* node, const NodeInfo& where);
  // The schema of property `name` in an object clause: declared, else the
  // matching patternProperties, else additionalProperties.
  Sub property_schema(const Clause& clause, const std::string& name);
  // The schema of an undeclared key that matches the patternProperties in
  // `matched` (bits): their schemas and the unmatched extras that apply,
  // or additionalProperties when it matches none.
  static Sub pattern_value(const Clause& clause, uint32_t matched);

  // --- validation of concrete values (validate.cpp) --------------------------
  bool accepts(const Sub& sub, const Json& value);
  // `check_values` false: the clause's own enum/const list is not consulted.
  bool clause_accepts(const Clause& clause, const Json& value, bool check_values);

  // --- emission of clauses (emit.cpp) ----------------------------------------
  // Emitters return a GBNF expression (often a rule name) for the values a
  // clause allows, or "" when it allows none; they define the rules they
  // need as they go, and refuse what they cannot enforce exactly. `hint`
  // names new rules; `depth` is the nesting, for the indented layout.
  //
  // The rule (or expression) for a Sub, memoized by its nodes.
  std::string rule_for(const Sub& sub, const std::string& hint, uint32_t depth);
  // Memoized by clause_key (for `own_rule` see the definition).
  std::string clause_expression(const Clause& clause, const std::string& own_rule,
                                const std::string& hint, uint32_t depth);
  // emit_clause_once; in lenient mode, again without each keyword it refuses.
  std::string emit_clause(const Clause& clause, const std::string& hint, uint32_t depth);
  std::string emit_clause_once(const Clause& clause, const std::string& hint, uint32_t depth);
  // Exactly `value` (numbers in any of their plain spellings).
  std::string emit_value(const Json& value, uint32_t depth);

  // --- numbers (emit_number.cpp) ---------------------------------------------
  std::string emit_number(const Clause& clause, const std::string& hint);

  // --- strings (emit_string.cpp) ---------------------------------------------
  std::string emit_string(const Clause& clause, const std::string& hint);
  std::string emit_string_automaton(const Clause& clause, std::optional<uint64_t> max_length,
                                    const std::string& hint);
  // The strings a string clause allows (with `max_length` for its own), as
  // an automaton; refuses past the state budgets.
  internal::CharDfa string_dfa(const Clause& clause, std::optional<uint64_t> max_length);
  // The rules of a string automaton: the JSON strings it leads to a label
  // passing `keep`, closing quote included (without the opening one).
  // Charges the automaton's estimated lowered size to the schema's budget
  // (refusing `keyword` at `pointer` past it).
  std::string dfa_rules(const internal::CharDfa& dfa, const std::function<bool(uint32_t)>& keep,
                        const std::string& hint, const std::string& keyword,
                        const std::string& pointer);
  // A rule for the keys a propertyNames schema accepts; "" when none.
  std::string emit_string_key_rule(const Sub& names, const std::string& hint);
  // JSON strings (canonically encoded) other than `names`, memoized by the
  // set of names; linear in their total length.
  std::string key_not_in(const std::vector<std::string>& names, const std::string& hint);
  std::string key_not_in_uncached(const std::vector<std::string>& names, const std::string& hint);

  // --- objects (emit_object.cpp) ---------------------------------------------
  struct Member {
    std::string text;  // key, colon and value
    bool required = false;
    bool listed = true;  // in `properties` (else a required name only)
  };
  std::string emit_object(const Clause& clause, const std::string& hint, uint32_t depth);
  // Members with undeclared keys where patternProperties (or propertyNames
  // next to declared properties) apply: one alternative per set of patterns
  // a key may match.
  std::string other_members(const Clause& clause, const std::vector<std::string>& declared,
                            const std::string& hint, uint32_t depth);
  // The non-empty member lists of an object: `members` (listed ones in
  // order and required names in any order, or all in any order per
  // options), `additional` members between them, min_count to max_count
  // members in all; "" when there are none. `object` names the object
  // ("the object at /properties/x") in the warning when an order falls back.
  std::string emit_members(const std::vector<Member>& members, const std::string& additional,
                           uint64_t min_count, std::optional<uint64_t> max_count,
                           const std::string& hint, uint32_t depth, const std::string& pointer,
                           const std::string& object);
  // `ordered` members in their order (each optional one may be left out),
  // `free` members each at most once (required ones exactly once) anywhere,
  // `additional` ones anywhere: one rule per state (position in `ordered`,
  // set of free members written, members so far). nullopt, with nothing
  // defined, when the rules would hold more than `budget` alternatives.
  std::optional<std::string> emit_any_order_call(const std::vector<Member>& members,
                                                 const std::string& additional, uint64_t min_count,
                                                 std::optional<uint64_t> max_count, uint32_t depth,
                                                 std::string* why);
  std::optional<std::string> emit_unordered(const std::vector<Member>& ordered,
                                            const std::vector<Member>& free,
                                            const std::string& additional, uint64_t minimum,
                                            std::optional<uint64_t> max_count, uint32_t depth,
                                            uint64_t budget);

  // --- arrays (emit_array.cpp) -----------------------------------------------
  std::string emit_array(const Clause& clause, const std::string& hint, uint32_t depth);
  // Several `contains`, each with a minimum and no maximum.
  std::string emit_contains_all(const Clause& clause, const std::string& hint, uint32_t depth);

  // --- the rule table and layout (rules.cpp) ---------------------------------
  // A named rule for `body`, shared by identical bodies.
  std::string add_rule(const std::string& hint, const std::string& body);
  // A named rule for `body`, shared only with other unshared_rule bodies.
  std::string unshared_rule(const std::string& hint, const std::string& body);
  // A rule name made from `hint`, unused so far and not a base rule's.
  std::string unique_name(const std::string& hint);
  // Refuses past max_grammar_bytes and max_rules.
  void define_rule(const std::string& name, const std::string& body);
  // The base rule `name` (value, string, number, ws, never...), defined on
  // first use.
  std::string base_rule(const std::string& name);
  // One encoded code point of a JSON string (surrogate escapes only as
  // valid pairs).
  std::string char_body();
  // `item` repeated lo..hi times, in size logarithmic in the bounds.
  std::string counted(const std::string& item, uint64_t lo, std::optional<uint64_t> hi,
                      const std::string& hint);
  // `open`, the body and `close` in the layout; the empty container too
  // when `allow_empty`.
  std::string wrap_container(const std::string& open, const std::string& close,
                             const std::string& nonempty_body, bool allow_empty, uint32_t depth);
  // The layout's whitespace before a member or item at `depth`, after it,
  // and around a colon.
  std::string inner(uint32_t depth) const;
  std::string after() const;
  std::string colon() const;
  // The flexible layout's `ws`, defined last: its run after a newline grows
  // with the deepest nesting the grammar allows (see deepest_).
  std::string ws_body() const;
  // A memoized rule or expression (of `heights`, by memo key) reused at
  // `depth`: what it nests counts from there; one still being emitted is a
  // cycle, which nests without bound.
  void reuse_nesting(const std::unordered_map<std::string, uint32_t>& heights,
                     const std::string& key, uint32_t depth);
  bool indented() const { return options_.whitespace == JsonSchemaOptions::Whitespace::kIndented; }

  // --- patterns, formats and budgets (converter.cpp) -------------------------
  internal::RegexLimits regex_limits() const {
    internal::RegexLimits limits;
    limits.max_repeat = options_.max_repeat;
    limits.max_pattern_length = options_.max_pattern_length;
    return limits;
  }
  // Parses a pattern of the schema; refuses (naming `keyword`) what the
  // translator cannot take, and patterns over max_pattern_length.
  internal::RegexNode parse_pattern(const std::string& text, const std::string& keyword,
                                    const std::string& pointer);
  // parse_ecma_regex(text, regex_limits()), once per pattern: a pattern is
  // checked where it is read and parsed again for its grammar or automaton,
  // and the parse compiles it with RE2 (milliseconds for a long pattern).
  const Result<internal::RegexNode>& parsed_pattern(const std::string& text);
  // internal::format_pattern(format), its pattern noted as one of ours (no
  // RE2 cross-check when it is parsed: see RegexCheck).
  internal::FormatLookup lookup_format(const std::string& format);
  // Nesting followed through references: normalize_node and rule_for
  // recurse once per level, and a chain of $refs can be as long as the
  // document is large, so it is bounded like the document's own nesting.
  struct Nesting {
    Converter& converter;
    Nesting(Converter& c, const std::string& pointer) : converter(c) {
      if (++converter.nesting_ > converter.options_.max_schema_depth)
        fail(ErrorCode::kLimitExceeded, "schema nested deeper than max_schema_depth (" +
                                            std::to_string(converter.options_.max_schema_depth) +
                                            ") through references at " + display_pointer(pointer));
    }
    ~Nesting() { --converter.nesting_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
  };
  // Refuses past max_ref_expansions references followed.
  void count_reference(const std::string& keyword, const std::string& pointer);
  // Bounds the time spent on string automata (a disjunction of negated
  // pattern unions can ask for thousands of them).
  void charge_automaton(size_t states, const std::string& keyword, const std::string& pointer);
  // Refuses a repetition count above max_repeat.
  void check_repeat(uint64_t count, const std::string& keyword, const std::string& pointer) const;

  Document& doc_;
  const JsonSchemaOptions& options_;
  std::vector<std::string>* warnings_;

  std::unordered_map<const Json*, Disj> node_memo_;
  // Lenient mode: keywords dropped so far, and the nodes whose normal form
  // lost one (on the way, or in a node they refer to).
  size_t widenings_ = 0;
  std::unordered_set<const Json*> widened_nodes_;
  std::unordered_set<const Json*> in_progress_;
  std::unordered_map<std::string, Disj> sub_memo_;

  std::vector<std::pair<std::string, std::string>> rules_;
  std::unordered_set<std::string> names_;
  // The last suffix unique_name() gave each base name, so that naming n
  // rules after one hint costs O(n), not O(n^2) probes.
  std::unordered_map<std::string, int> last_suffix_;
  std::unordered_map<std::string, std::string> rule_memo_;
  std::unordered_map<std::string, std::string> text_memo_;    // rule body -> name
  std::unordered_map<std::string, std::string> clause_memo_;  // clause_key -> expression
  std::map<std::vector<std::string>, std::string> key_not_in_memo_;
  size_t grammar_bytes_ = 0;
  std::set<std::string> base_rules_;
  std::string key_leave_rule_;
  std::string key_tail_rule_;
  std::unordered_set<std::string> handed_out_;  // rule names returned by the memos
  // Nesting, for the flexible layout's whitespace: the deepest container
  // level emitted (members of a container at depth d are at level d + 1),
  // whether a cycle or a generic value nests without bound, and how many
  // levels each memoized rule and clause expression nests below its own.
  uint32_t deepest_ = 0;
  bool nesting_unbounded_ = false;
  std::unordered_map<std::string, uint32_t> rule_heights_, clause_heights_;
  std::unordered_map<std::string, std::string> other_ascii_memo_;  // trie children -> class
  size_t automaton_work_ = 0;          // states built for string constraints so far
  size_t emitted_automaton_cost_ = 0;  // lowered_cost of the automata written by dfa_rules
  std::unordered_set<uint64_t> charged_automata_;  // their hashes
  uint32_t nesting_ = 0;                           // active normalize_node/rule_for frames
  uint64_t references_ = 0;                        // references followed so far
  std::string emitting_;  // pointer of the schema being emitted, for size errors
  std::unordered_map<std::string, Result<internal::RegexNode>> parsed_patterns_;
  std::unordered_set<std::string> format_patterns_;  // see lookup_format
  internal::EcmaRegexSearcher pattern_searcher_;     // RE2 of each pattern, for schema-time checks
};

}  // namespace grammask::internal::schema

#endif  // GRAMMASK_SRC_SCHEMA_CONVERTER_H_
