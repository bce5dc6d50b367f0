// The grammar IR: the value type that parse_gbnf (gbnf.h) and the JSON
// Schema converter (json_schema.h) produce, that callers may build or edit
// directly, and that Recognizer::create and CompiledGrammar::compile take.
// Text terminals are Unicode code points, matched over their UTF-8 bytes;
// token items are matched by token id, never by bytes, once a vocabulary
// resolves them (CompiledGrammar::compile).
#ifndef GRAMMASK_GRAMMAR_H_
#define GRAMMASK_GRAMMAR_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/status.h"

namespace grammask {

// Largest Unicode scalar value.
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
// Repeat::max value meaning "no upper bound".
inline constexpr uint32_t kUnbounded = UINT32_MAX;

// An inclusive range of code points.
struct CodePointRange {
  uint32_t first = 0;
  uint32_t last = 0;
  friend bool operator==(const CodePointRange& a, const CodePointRange& b) {
    return a.first == b.first && a.last == b.last;
  }
};

// One node of a rule body: a tagged struct whose `kind` says which fields
// hold it. Nothing is checked on construction; Grammar::validate() checks
// the invariants noted per kind.
struct Expr {
  enum class Kind : uint8_t {
    kSequence,     // children in order; empty = the empty string
    kAlternation,  // one of children (at least one child)
    kLiteral,      // the code points in `literal` (non-empty)
    kCharClass,    // one code point in `ranges`, or not in them if `negated`
    kAnyChar,      // `.`: any one code point
    kRuleRef,      // the rule with index `rule`
    kRepeat,       // children[0] repeated min..max times (max may be kUnbounded)
    // One token of the vocabulary, matched by id: `token` when `literal` is
    // empty, else every token whose text is `literal` (written with its
    // angle brackets, as "<|im_end|>"). With `negated`, any one token but
    // those, whatever its bytes. With `token_set`, `children` name the
    // tokens instead (each a kToken by id or text, neither negated nor a
    // set); only a negated set is valid, and the empty one is any token.
    kToken,
    // Text that the ECMA-262 pattern `literal` matches as a whole (no
    // flags; code points). With `lazy`, only texts none of whose proper
    // prefixes the pattern also matches: the shortest matches.
    kRegex,
    // Any substring of `literal`, the empty string included.
    kSubstring,
    // Any text that contains none of children, which are non-empty
    // kLiteral nodes, as a substring (the empty text included).
    kTextExcluding,
    // Members in any order: children[0] is the separator, written between
    // two members; each later child is a member. A member whose top is a
    // kRepeat 0..1 (written m?) comes at most once, 0..unbounded (m*) any
    // number of times, 1..unbounded (m+) at least once; any other member
    // exactly once. A member's text (without that count) must not derive
    // the empty string, and at most kMaxAnyOrderMembers members may be
    // counted (all but the m* ones); lowering checks both.
    kAnyOrder,
  };

  Kind kind = Kind::kSequence;
  bool negated = false;                // kCharClass, kToken
  bool lazy = false;                   // kRegex
  bool token_set = false;              // kToken: the tokens are `children`
  uint32_t rule = 0;                   // kRuleRef: index into Grammar::rules()
  uint32_t token = 0;                  // kToken by id
  uint32_t min = 0;                    // kRepeat
  uint32_t max = 0;                    // kRepeat
  std::u32string literal;              // kLiteral, kToken by text, kRegex, kSubstring
  std::vector<CodePointRange> ranges;  // kCharClass, as written (may overlap)
  std::vector<Expr> children;          // kSequence, kAlternation, kRepeat, kTextExcluding,
                                       // kToken set
  SourceLocation where;                // where it was written, if parsed

  static Expr sequence(std::vector<Expr> items);
  static Expr alternation(std::vector<Expr> options);
  static Expr literal_text(std::u32string code_points);
  static Expr char_class(std::vector<CodePointRange> ranges, bool negated);
  static Expr any_char();
  static Expr rule_ref(uint32_t rule_index);
  static Expr repeat(Expr item, uint32_t min, uint32_t max);
  static Expr token_id(uint32_t id, bool negated = false);
  static Expr token_text(std::u32string text, bool negated = false);
  // Any one token but `items` (token_id/token_text items): written
  // !(<[1]> | <|eot_id|>) in GBNF; no items: any token, !().
  static Expr tokens_except(std::vector<Expr> items);
  static Expr regex(std::u32string pattern, bool lazy = false);
  static Expr substring(std::u32string text);
  static Expr text_excluding(std::vector<std::u32string> strings);
  static Expr any_order(Expr separator, std::vector<Expr> members);
};

// The most members of one kAnyOrder expression whose count is bounded
// below or above (all but the m* ones).
inline constexpr uint32_t kMaxAnyOrderMembers = 64;

// Structural equality: same kinds and the fields that matter for each kind,
// recursively. `where` is ignored.
bool operator==(const Expr& a, const Expr& b);
inline bool operator!=(const Expr& a, const Expr& b) {
  return !(a == b);
}

// True when `name` is a GBNF rule name: one or more ASCII letters, digits or
// '-'. to_gbnf() output parses back only when every rule name is one.
bool is_valid_rule_name(std::string_view name) noexcept;

struct Rule {
  std::string name;
  Expr body;
  SourceLocation where;
};

// A set of named rules. Rules are referenced by index; names are unique.
// Thread-safety: a const Grammar may be read from any number of threads.
class Grammar {
 public:
  Grammar() = default;

  const std::vector<Rule>& rules() const noexcept { return rules_; }
  std::vector<Rule>& mutable_rules() noexcept { return rules_; }

  // Index of the first rule called `name`, or -1. O(number of rules).
  int find_rule(std::string_view name) const noexcept;

  // Appends a rule and returns its index. Checks nothing: the caller keeps
  // names unique (validate() reports duplicates).
  uint32_t add_rule(std::string name, Expr body, SourceLocation where = {});

  // Checks the invariants the recognizer relies on: unique non-empty names,
  // references in range, non-empty literals of Unicode scalar values (no
  // surrogates), non-empty alternations, repeats with one child and
  // min <= max, class ranges with first <= last <= kMaxCodePoint, token
  // texts of the form <...> (no other '>', no line break, not starting with
  // "<[", which GBNF reads as an id), regex patterns and substring texts of
  // scalar values, exclusions of at least one non-empty literal, any-order
  // expressions with a separator and at least one member. Regex
  // patterns are parsed when the grammar is lowered, not here. The first
  // violation fails with kInvalidArgument, naming the rule, at the node's
  // `where`. Cost: linear in the grammar size; recursion as deep as the
  // deepest expression.
  Status validate() const;

  // Writes the grammar as GBNF text, rules in index order, one per line.
  // parse_gbnf() reads it back to an equal grammar when the grammar is valid,
  // its names are GBNF names and it is in the parser's canonical form (no
  // one-child sequences or alternations; parse_gbnf() never makes them).
  // Class ranges that start or end inside the surrogates D800-DFFF are
  // printed trimmed to the scalar values they cover. Cost: linear in the
  // output.
  std::string to_gbnf() const;

 private:
  std::vector<Rule> rules_;
};

// Equal when both have the same rules (names and bodies) in the same order;
// source locations are ignored.
bool operator==(const Grammar& a, const Grammar& b);
inline bool operator!=(const Grammar& a, const Grammar& b) {
  return !(a == b);
}

// Writes one expression as GBNF, as it would appear as a rule body (rule
// references by name from `grammar`).
std::string to_gbnf(const Expr& expr, const Grammar& grammar);

}  // namespace grammask

#endif  // GRAMMASK_GRAMMAR_H_
