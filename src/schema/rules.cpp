// The rule table: rule names, definitions under the size limits, shared
// and base rules, and the whitespace layout (members of Converter, declared
// in converter.h).
#include <set>

#include "ir/gbnf_writer.h"
#include "regex/code_point_set.h"
#include "regex/regex_to_gbnf.h"
#include "schema/converter.h"
#include "schema/gbnf_text.h"

namespace grammask::internal::schema {

std::string Converter::unique_name(const std::string& hint) {
  std::string base = sanitize(hint);
  static const std::set<std::string> reserved = {
      "root", "value",   "object", "array", "string", "number", "integer", "char",
      "ws",   "boolean", "null",   "hex",   "never",  "key",    "cchar",   "integer-strict"};
  std::string name = base;
  int& suffix = last_suffix_.emplace(base, 1).first->second;
  while (names_.count(name) || reserved.count(name)) name = base + "-" + std::to_string(++suffix);
  names_.insert(name);
  return name;
}

void Converter::define_rule(const std::string& name, const std::string& body) {
  grammar_bytes_ += name.size() + body.size() + 6;
  if (grammar_bytes_ > options_.max_grammar_bytes)
    fail(ErrorCode::kLimitExceeded, "grammar exceeds max_grammar_bytes (" +
                                        std::to_string(options_.max_grammar_bytes) +
                                        ") while converting " + display_pointer(emitting_));
  if (rules_.size() + 1 > options_.max_rules)
    fail(ErrorCode::kLimitExceeded, "grammar exceeds max_rules (" +
                                        std::to_string(options_.max_rules) + ") while converting " +
                                        display_pointer(emitting_));
  rules_.emplace_back(name, body);
}

// A named rule for `body`, shared by identical bodies.
std::string Converter::add_rule(const std::string& hint, const std::string& body) {
  auto it = text_memo_.find(body);
  if (it != text_memo_.end()) return it->second;
  std::string name = unique_name(hint);
  define_rule(name, body);
  text_memo_[body] = name;
  return name;
}

// A named rule for `body` of its own, not shared with add_rule's rules:
// a part named from many places (between every two declared members).
std::string Converter::unshared_rule(const std::string& hint, const std::string& body) {
  const std::string key = "\x01" + body;
  auto it = text_memo_.find(key);
  if (it != text_memo_.end()) return it->second;
  std::string name = unique_name(hint);
  define_rule(name, body);
  text_memo_[key] = name;
  return name;
}

std::string Converter::inner(uint32_t depth) const {
  switch (options_.whitespace) {
    case JsonSchemaOptions::Whitespace::kCompact:
      return "";
    case JsonSchemaOptions::Whitespace::kFlexible:
      return "ws";
    case JsonSchemaOptions::Whitespace::kIndented:
      return "\"\\n" + std::string((depth + 1) * options_.indent, ' ') + "\"";
  }
  return "";
}
std::string Converter::after() const {
  return options_.whitespace == JsonSchemaOptions::Whitespace::kFlexible ? "ws" : "";
}
std::string Converter::colon() const {
  switch (options_.whitespace) {
    case JsonSchemaOptions::Whitespace::kCompact:
      return "\":\"";
    case JsonSchemaOptions::Whitespace::kFlexible:
      return "ws \":\" ws";
    case JsonSchemaOptions::Whitespace::kIndented:
      return "\": \"";
  }
  return "\":\"";
}

// Any encoded code point; \u escapes of surrogates only as valid pairs, so
// that one decoded code point is one `char` (lengths count right).
std::string Converter::char_body() {
  base_rule("hex");
  return "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-Ce-fE-F] hex hex hex | "
         "[dD] [0-7] hex hex | [dD] [89abAB] hex hex \"\\\\u\" [dD] [c-fC-F] hex hex))";
}

// Nothing, a run of blanks, or a newline and a run of blanks that may be
// longer by kIndentPerLevel for each level of nesting the grammar allows
// (kUnboundedLevels where a cycle or a generic value nests without bound),
// so that pretty-printed JSON at any depth it allows fits, and every run
// is still bounded.
std::string Converter::ws_body() const {
  constexpr uint64_t kIndentPerLevel = 4, kUnboundedLevels = 16;
  const uint64_t levels = nesting_unbounded_ ? kUnboundedLevels : deepest_;
  const uint64_t run = options_.max_whitespace_run;
  const std::string blanks = "[ \\t]{0," + std::to_string(run) + "}";
  if (levels == 0) return "\"\\n\"? " + blanks;
  return blanks + " | \"\\n\" [ \\t]{0," + std::to_string(run + kIndentPerLevel * levels) + "}";
}

// `item` (an expression, grouped) repeated lo..hi times. Past
// kPlainRepeat the count is split into blocks of kPlainRepeat items, a rule
// of its own, counted the same way: an exact and unambiguous grammar of
// logarithmic size (a length L is floor(L / block) blocks plus a rest
// shorter than a block) for any bound, where a plain {lo,hi} would copy
// the item hi times when lowered.
std::string Converter::counted(const std::string& item, uint64_t lo, std::optional<uint64_t> hi,
                               const std::string& hint) {
  constexpr uint64_t kPlainRepeat = 4096;
  // Bounds up to kPlainRepeat fit the writer's 32-bit counts.
  auto plain = [&](uint64_t a, std::optional<uint64_t> b) -> std::string {
    if (b && *b == 0) return "";
    if (b && a == 1 && *b == 1) return item;
    return item + internal::repeat_suffix(static_cast<uint32_t>(a),
                                          b ? static_cast<uint32_t>(*b) : kUnbounded);
  };
  if (lo <= kPlainRepeat && (!hi || *hi <= kPlainRepeat)) return plain(lo, hi);
  const uint64_t block = kPlainRepeat;
  std::string block_rule = add_rule(hint + "-block", plain(block, block));
  const uint64_t low_blocks = lo / block;
  if (!hi) {
    return seq({counted(block_rule, low_blocks, low_blocks, hint + "-block"),
                plain(lo % block, std::nullopt)});
  }
  const uint64_t high_blocks = *hi / block;
  std::vector<std::string> options;
  if (low_blocks == high_blocks)
    return seq({counted(block_rule, high_blocks, high_blocks, hint + "-block"),
                plain(lo % block, *hi % block)});
  // floor(L / block) == low_blocks, strictly between, or == high_blocks.
  options.push_back(seq({counted(block_rule, low_blocks, low_blocks, hint + "-block"),
                         plain(lo % block, block - 1)}));
  if (high_blocks > low_blocks + 1)
    options.push_back(seq({counted(block_rule, low_blocks + 1, high_blocks - 1, hint + "-block"),
                           plain(0, block - 1)}));
  options.push_back(
      seq({counted(block_rule, high_blocks, high_blocks, hint + "-block"), plain(0, *hi % block)}));
  return group(alternatives(options));
}

// Base rules, defined on first use. In the indented layout, generic values
// (schemas that allow anything) are written compactly: an unbounded
// nesting has no fixed indentation.
std::string Converter::base_rule(const std::string& name) {
  if (base_rules_.count(name)) return name;
  base_rules_.insert(name);
  names_.insert(name);
  bool flexible = options_.whitespace == JsonSchemaOptions::Whitespace::kFlexible;
  std::string w = flexible ? "ws " : "";
  std::string body;
  if (name == "ws") {
    return name;  // defined last, by convert(): see ws_body
  } else if (name == "value") {
    body = base_rule("object") + " | " + base_rule("array") + " | " + base_rule("string") + " | " +
           base_rule("number") + " | \"true\" | \"false\" | \"null\"";
  } else if (name == "object") {
    nesting_unbounded_ = true;
    if (flexible) base_rule("ws");
    base_rule("value");
    base_rule("string");
    body = "\"{\" " + w + "(string " + w + "\":\" " + w + "value " + w + "(\",\" " + w + "string " +
           w + "\":\" " + w + "value " + w + ")*)? \"}\"";
  } else if (name == "array") {
    nesting_unbounded_ = true;
    if (flexible) base_rule("ws");
    base_rule("value");
    body = "\"[\" " + w + "(value " + w + "(\",\" " + w + "value " + w + ")*)? \"]\"";
  } else if (name == "string") {
    base_rule("char");
    body = "\"\\\"\" char* \"\\\"\"";
  } else if (name == "char") {
    body = char_body();
  } else if (name == "cchar") {
    // Canonical encodings only (one spelling per code point), for strings
    // compared against a set of excluded names.
    body = internal::json_char_gbnf(internal::normalize_set({{0, kMaxCodePoint}}));
  } else if (name == "hex") {
    body = "[0-9a-fA-F]";
  } else if (name == "number") {
    body = "\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)?";
  } else if (name == "integer") {
    body = "\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" \"0\"+)?";
  } else if (name == "integer-strict") {
    body = "\"-\"? (\"0\" | [1-9] [0-9]*)";
  } else if (name == "never") {
    body = "[^\\x00-\\U0010FFFF]";
  }
  define_rule(name, body);
  return name;
}

std::string Converter::wrap_container(const std::string& open, const std::string& close,
                                      const std::string& nonempty_body, bool allow_empty,
                                      uint32_t depth) {
  deepest_ = std::max(deepest_, depth + 1);
  std::vector<std::string> options;
  std::string closing_ws =
      indented() ? "\"\\n" + std::string(depth * options_.indent, ' ') + "\"" : "";
  if (allow_empty)
    options.push_back(
        seq({open, options_.whitespace == JsonSchemaOptions::Whitespace::kFlexible ? "ws" : "",
             close}));
  if (!nonempty_body.empty())
    options.push_back(seq({open, group(nonempty_body), closing_ws, close}));
  return alternatives(options);
}

}  // namespace grammask::internal::schema
