// The GBNF parser: a hand-written parser over the UTF-8 text, following
// docs/GBNF.md. It builds the IR directly. Groups are kept on an explicit
// stack rather than the call stack, so hostile nesting cannot overflow it.
// Rule references are resolved to rule indices once the whole text has been
// read, because a rule may be used before it is defined.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "grammask/gbnf.h"

namespace grammask {
namespace {

const char* const kEscapeList = "\\t \\n \\r \\\\ \\\" \\[ \\] \\xHH \\uHHHH or \\UHHHHHHHH";
const char* const kClassEscapeList =
    "\\t \\n \\r \\\\ \\\" \\[ \\] \\- \\^ \\xHH \\uHHHH or \\UHHHHHHHH";

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string format_code_point(uint32_t code_point) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "U+%04X", static_cast<unsigned>(code_point));
  return buffer;
}

// A code point for an error message: 'a' when printable ASCII, else U+XXXX.
std::string describe_code_point(uint32_t code_point) {
  if (code_point > 0x20 && code_point < 0x7F) return std::string("'") + char(code_point) + "'";
  if (code_point == ' ') return "' '";
  return format_code_point(code_point);
}

// One rule name seen in the text, defined or only referenced so far.
struct Symbol {
  std::string name;
  int rule_index = -1;         // index in the grammar once defined
  size_t first_reference = 0;  // offset of the first reference, if any
  bool referenced = false;
};

// One alternation being read: the rule body (the bottom one) or an open '('.
// parse_body() keeps them on an explicit stack instead of recursing, so deep
// nesting costs heap, not call stack.
struct OpenGroup {
  size_t open = 0;              // offset of the '(' (unused for the rule body)
  size_t start = 0;             // offset where the alternation begins
  std::vector<Expr> options;    // the alternatives read so far
  uint32_t options_height = 0;  // tallest of them
  size_t sequence_start = 0;    // offset where the current alternative begins
  std::vector<Expr> items;      // the items of the current alternative
  uint32_t items_height = 0;    // tallest of them
  // An AnyOrder(...) call's group: its arguments so far, each an alternation.
  bool any_order = false;
  std::vector<Expr> arguments;
  uint32_t arguments_height = 0;
};

// The open groups of the body being read. Popped groups keep their vectors'
// capacity for the next ones (of this rule or the next), so reading a
// sequence allocates only the sequence itself.
class GroupStack {
 public:
  size_t size() const { return used_; }
  OpenGroup& back() { return slots_[used_ - 1]; }
  void push() {
    if (used_ == slots_.size()) slots_.emplace_back();
    OpenGroup& group = slots_[used_++];
    group.open = group.start = group.sequence_start = 0;
    group.options.clear();
    group.items.clear();
    group.options_height = group.items_height = 0;
    group.any_order = false;
    group.arguments.clear();
    group.arguments_height = 0;
  }
  void pop() { --used_; }
  void reset() { used_ = 0; }

 private:
  std::vector<OpenGroup> slots_;
  size_t used_ = 0;
};

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GbnfOptions& options)
      : text_(text),
        root_(options.root.empty() ? std::string_view("root") : options.root),
        options_(options) {}

  Result<Grammar> parse();

 private:
  // --- positions and errors ---
  bool at_end() const { return pos_ >= text_.size(); }
  // The byte at pos_, or '\0' at the end (check at_end() where a NUL in the
  // text would matter).
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  SourceLocation location_at(size_t offset) const;
  // Records the first error and returns false, so callers can `return fail(...)`.
  bool fail(size_t offset, std::string message);
  // The same for valid syntax that grammask does not enforce (kUnsupported).
  bool fail_unsupported(size_t offset, std::string message);
  // The same for a passed resource bound (kLimitExceeded).
  bool fail_limit(size_t offset, std::string message);
  bool nesting_too_deep(size_t offset);
  // Counts one expression node written at `offset`; false past max_symbols.
  bool count_symbol(size_t offset);
  std::string describe_char_at(size_t offset) const;

  // --- lexical helpers ---
  void skip_space(bool newlines_ok);
  bool contains_newline(size_t from, size_t to) const;
  bool at_rule_definition() const;
  std::string_view read_name();

  // --- the grammar of GBNF ---
  bool parse_rule();
  bool parse_body(Expr* out);
  bool end_alternative(OpenGroup& group);
  bool end_alternation(OpenGroup& group, Expr* out, uint32_t* height);
  bool append_item(bool nested, Expr item, uint32_t height, OpenGroup& group);
  bool parse_atom(Expr* out);
  bool parse_literal(Expr* out);
  bool read_quoted(std::u32string* code_points);
  bool parse_token_item(Expr* out);
  bool parse_token_set(size_t start, Expr* out);
  bool at_builtin_call() const;
  bool at_any_order_call() const;
  bool parse_builtin_call(Expr* out);
  bool parse_char_class(Expr* out);
  bool parse_class_char(size_t class_start, uint32_t* code_point);
  bool parse_escape(bool in_class, uint32_t* code_point);
  bool parse_bounds(uint32_t* min, uint32_t* max);
  bool parse_bound_number(uint32_t* value);

  uint32_t symbol_for(std::string_view name);
  void resolve_references(Expr& expr);

  std::string_view text_;
  std::string_view root_;
  const GbnfOptions& options_;
  size_t pos_ = 0;
  uint64_t symbol_count_ = 0;
  std::vector<size_t> line_starts_;
  mutable size_t last_line_ = 0;  // location_at's last answer
  std::vector<Symbol> symbols_;
  GroupStack open_groups_;
  // Keys view the text, which outlives the parser: no copy per reference.
  std::unordered_map<std::string_view, uint32_t> symbol_ids_;
  Grammar grammar_;
  Status error_;
};

SourceLocation GbnfParser::location_at(size_t offset) const {
  // line_starts_ is sorted; the line is the last start at or before offset.
  // Offsets mostly come in reading order: the last answer's line is tried
  // first, and the search runs only when the offset is elsewhere.
  size_t line_index = last_line_;
  const bool on_last_line =
      line_index < line_starts_.size() && line_starts_[line_index] <= offset &&
      (line_index + 1 == line_starts_.size() || offset < line_starts_[line_index + 1]);
  if (!on_last_line) {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
    last_line_ = line_index;
  }
  SourceLocation where;
  where.line = static_cast<uint32_t>(line_index + 1);
  where.column = static_cast<uint32_t>(offset - line_starts_[line_index] + 1);
  where.offset = offset;
  return where;
}

bool GbnfParser::fail(size_t offset, std::string message) {
  if (error_.ok()) error_ = Status(ErrorCode::kSyntax, std::move(message), location_at(offset));
  return false;
}

bool GbnfParser::fail_unsupported(size_t offset, std::string message) {
  if (error_.ok()) {
    error_ = Status(ErrorCode::kUnsupported, std::move(message), location_at(offset));
  }
  return false;
}

bool GbnfParser::fail_limit(size_t offset, std::string message) {
  if (error_.ok()) {
    error_ = Status(ErrorCode::kLimitExceeded, std::move(message), location_at(offset));
  }
  return false;
}

bool GbnfParser::nesting_too_deep(size_t offset) {
  return fail_limit(offset, "nesting too deep: more than " + std::to_string(options_.max_nesting) +
                                " levels (GbnfOptions::max_nesting)");
}

bool GbnfParser::count_symbol(size_t offset) {
  if (++symbol_count_ <= options_.max_symbols) return true;
  return fail_limit(offset, "grammar too large: more than " + std::to_string(options_.max_symbols) +
                                " symbols (GbnfOptions::max_symbols)");
}

std::string GbnfParser::describe_char_at(size_t offset) const {
  if (offset >= text_.size()) return "the end of the text";
  if (text_[offset] == '\n') return "the end of the line";
  uint32_t code_point = static_cast<uint8_t>(text_[offset]);
  utf8::decode(text_, offset, &code_point);  // the text was validated up front
  return describe_code_point(code_point);
}

void GbnfParser::skip_space(bool newlines_ok) {
  while (!at_end()) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '#') {
      while (!at_end() && text_[pos_] != '\n') ++pos_;  // the newline itself is not comment
    } else if (c == '\n' && newlines_ok) {
      ++pos_;
    } else {
      break;
    }
  }
}

bool GbnfParser::contains_newline(size_t from, size_t to) const {
  return text_.substr(from, to - from).find('\n') != std::string_view::npos;
}

// True when the text at pos_ reads `name ::=` (a rule definition starts here).
bool GbnfParser::at_rule_definition() const {
  size_t p = pos_;
  if (p >= text_.size() || !is_name_char(text_[p])) return false;
  while (p < text_.size() && is_name_char(text_[p])) ++p;
  while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
  return text_.substr(p, 3) == "::=";
}

std::string_view GbnfParser::read_name() {
  const size_t start = pos_;
  while (!at_end() && is_name_char(text_[pos_])) ++pos_;
  return text_.substr(start, pos_ - start);
}

uint32_t GbnfParser::symbol_for(std::string_view name) {
  // try_emplace: no node is built for a name already known.
  auto [it, inserted] = symbol_ids_.try_emplace(name, static_cast<uint32_t>(symbols_.size()));
  if (inserted) symbols_.push_back(Symbol{std::string(name)});
  return it->second;
}

Result<Grammar> GbnfParser::parse() {
  // Past the size bound nothing is looked at, not even to count lines.
  const bool too_large = text_.size() > options_.max_grammar_bytes;
  if (too_large) text_ = text_.substr(0, options_.max_grammar_bytes);
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
  // About a rule per line: the name table is sized once.
  symbol_ids_.reserve(line_starts_.size());
  symbols_.reserve(line_starts_.size());
  if (too_large) {
    fail_limit(text_.size(), "grammar too large: more than " +
                                 std::to_string(options_.max_grammar_bytes) +
                                 " bytes (GbnfOptions::max_grammar_bytes)");
    return error_;
  }
  const size_t bad_byte = utf8::find_invalid(text_);
  if (bad_byte != std::string_view::npos) {
    char buffer[96];
    std::snprintf(buffer, sizeof buffer,
                  "invalid UTF-8: byte 0x%02X does not begin a well-formed character",
                  static_cast<unsigned>(static_cast<uint8_t>(text_[bad_byte])));
    fail(bad_byte, buffer);
    return error_;
  }
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a byte-order mark is not content

  while (true) {
    skip_space(/*newlines_ok=*/true);
    if (at_end()) break;
    if (!parse_rule()) return error_;
  }

  // Every referenced name must be defined; report the earliest reference.
  const Symbol* undefined = nullptr;
  for (const Symbol& symbol : symbols_) {
    if (symbol.rule_index >= 0 || !symbol.referenced) continue;
    if (undefined == nullptr || symbol.first_reference < undefined->first_reference) {
      undefined = &symbol;
    }
  }
  if (undefined != nullptr) {
    fail(undefined->first_reference, "undefined rule '" + undefined->name +
                                         "': expected a definition '" + undefined->name +
                                         " ::= ...'");
    return error_;
  }
  for (Rule& rule : grammar_.mutable_rules()) {
    resolve_references(rule.body);
  }
  if (grammar_.find_rule(root_) < 0) {
    fail(0, "missing start rule '" + std::string(root_) + "': expected a definition '" +
                std::string(root_) + " ::= ...'");
    return error_;
  }
  return std::move(grammar_);
}

void GbnfParser::resolve_references(Expr& expr) {
  if (expr.kind == Expr::Kind::kRuleRef) {
    expr.rule = static_cast<uint32_t>(symbols_[expr.rule].rule_index);
  }
  for (Expr& child : expr.children) resolve_references(child);
}

bool GbnfParser::parse_rule() {
  const size_t name_start = pos_;
  if (!is_name_char(peek())) {
    return fail(pos_, "unexpected " + describe_char_at(pos_) +
                          ": expected a rule name (letters, digits, '-') to start a rule");
  }
  const std::string_view name = read_name();
  skip_space(/*newlines_ok=*/false);
  if (text_.substr(pos_, 3) != "::=") {
    return fail(pos_, "expected '::=' after rule name '" + std::string(name) + "', found " +
                          describe_char_at(pos_));
  }
  pos_ += 3;

  const uint32_t symbol_id = symbol_for(name);
  if (symbols_[symbol_id].rule_index >= 0) {
    const Rule& first = grammar_.rules()[symbols_[symbol_id].rule_index];
    return fail(name_start, "duplicate rule '" + std::string(name) + "': first defined on line " +
                                std::to_string(first.where.line));
  }
  if (grammar_.rules().size() >= options_.max_rules) {
    return fail_limit(name_start, "grammar too large: more than " +
                                      std::to_string(options_.max_rules) +
                                      " rules (GbnfOptions::max_rules)");
  }
  const SourceLocation where = location_at(name_start);
  symbols_[symbol_id].rule_index =
      static_cast<int>(grammar_.add_rule(std::string(name), Expr(), where));
  const size_t rule_index = grammar_.rules().size() - 1;

  // The body may start on the next line (`rule ::=` NEWLINE `  body`), unless
  // the next line is itself a rule definition: then the body is empty.
  const size_t gap_start = pos_;
  skip_space(/*newlines_ok=*/true);
  Expr body;
  if (contains_newline(gap_start, pos_) && at_rule_definition()) {
    if (!count_symbol(gap_start)) return false;
    body = Expr::sequence({});
    body.where = location_at(gap_start);
  } else {
    if (!parse_body(&body)) return false;
    if (!at_end() && peek() != '\n' && !at_rule_definition()) {
      if (peek() == ')') return fail(pos_, "unmatched ')': no group is open here");
      return fail(pos_, "unexpected " + describe_char_at(pos_) + ": expected the end of the line");
    }
  }
  grammar_.mutable_rules()[rule_index].body = std::move(body);
  return true;
}

// Reads a rule body: alternatives of sequences of items, with groups. Stops
// at a newline outside parentheses (the caller checks what follows), at a
// stray ')', at the end of the text, or before a rule definition that
// directly follows a '|' line break.
bool GbnfParser::parse_body(Expr* out) {
  GroupStack& groups = open_groups_;
  groups.reset();
  groups.push();
  groups.back().start = groups.back().sequence_start = pos_;
  while (true) {
    const bool nested = groups.size() > 1;
    skip_space(nested);
    OpenGroup& group = groups.back();
    const char c = peek();
    const bool alternative_ends =
        at_end() || c == '|' || c == ')' || c == '\n' || (c == ',' && group.any_order);
    if (!alternative_ends) {
      if (at_rule_definition()) {
        const size_t name_start = pos_;
        const std::string name(read_name());
        if (nested) {
          return fail(group.open, "unclosed group: expected ')' to match this '(' before rule '" +
                                      name + "' is defined");
        }
        return fail(name_start, "expected a newline before the definition of rule '" + name + "'");
      }
      if (c == '(') {
        if (groups.size() > options_.max_nesting) return nesting_too_deep(pos_);
        const size_t open = pos_++;
        skip_space(/*newlines_ok=*/true);
        if (peek() == '=') {
          return fail_unsupported(
              open,
              "lookahead assertions '(= ...)' are not supported: grammask refuses them rather "
              "than enforce them approximately (docs/GBNF.md, \"Lookahead\")");
        }
        groups.push();  // invalidates `group`
        groups.back().open = open;
        groups.back().start = groups.back().sequence_start = pos_;
        continue;
      }
      if (at_any_order_call()) {
        if (groups.size() > options_.max_nesting) return nesting_too_deep(pos_);
        const size_t open = pos_;
        if (!count_symbol(open)) return false;
        read_name();
        ++pos_;  // '('
        skip_space(/*newlines_ok=*/true);
        groups.push();  // invalidates `group`
        groups.back().open = open;
        groups.back().any_order = true;
        groups.back().start = groups.back().sequence_start = pos_;
        continue;
      }
      Expr item;
      if (!parse_atom(&item)) return false;
      if (!append_item(nested, std::move(item), /*height=*/1, group)) return false;
      continue;
    }

    if (!end_alternative(group)) return false;
    if (!at_end() && c == '|') {
      ++pos_;
      // A newline right after '|' continues the rule; if the next line
      // defines a rule, the alternative after '|' is empty and the body ends.
      const size_t gap_start = pos_;
      skip_space(/*newlines_ok=*/true);
      group.sequence_start = pos_;
      if (nested || !contains_newline(gap_start, pos_) || !at_rule_definition()) continue;
      group.sequence_start = gap_start;
      if (!end_alternative(group)) return false;
    }

    Expr alternation;
    uint32_t height = 0;
    if (!end_alternation(group, &alternation, &height)) return false;
    if (!nested) {
      *out = std::move(alternation);
      return true;
    }
    if (group.any_order && (c == ',' || c == ')')) {
      group.arguments.push_back(std::move(alternation));
      group.arguments_height = std::max(group.arguments_height, height);
      group.options.clear();
      group.options_height = 0;
      ++pos_;
      if (c == ',') {
        skip_space(/*newlines_ok=*/true);
        group.start = group.sequence_start = pos_;
        continue;
      }
      if (group.arguments.size() < 2) {
        return fail(group.open,
                    "AnyOrder(...) takes a separator and at least one member, separated by ','");
      }
      Expr separator = std::move(group.arguments[0]);
      std::vector<Expr> members(std::make_move_iterator(group.arguments.begin() + 1),
                                std::make_move_iterator(group.arguments.end()));
      Expr call = Expr::any_order(std::move(separator), std::move(members));
      call.where = location_at(group.open);
      const uint32_t call_height = group.arguments_height + 1;
      if (call_height > options_.max_nesting) return nesting_too_deep(group.open);
      groups.pop();  // invalidates `group`
      if (!append_item(groups.size() > 1, std::move(call), call_height, groups.back())) {
        return false;
      }
      continue;
    }
    if (at_end() || peek() != ')') {  // inside a group only ')' or the end stop an alternative
      return fail(group.open, group.any_order ? "unclosed AnyOrder(...): expected ',' or ')'"
                                              : "unclosed group: expected ')' to match this '('");
    }
    ++pos_;
    // `( )` is the empty sequence; a group around one item is just that item.
    if (alternation.kind == Expr::Kind::kSequence && alternation.children.empty()) {
      alternation.where = location_at(group.open);
    }
    groups.pop();  // invalidates `group`
    if (!append_item(groups.size() > 1, std::move(alternation), height, groups.back())) {
      return false;
    }
  }
}

// Moves the expressions out into a vector of their exact size and leaves
// `from` empty with its capacity, for the next alternative: one allocation
// per sequence instead of one per doubling.
std::vector<Expr> take_all(std::vector<Expr>& from) {
  std::vector<Expr> taken;
  taken.reserve(from.size());
  std::move(from.begin(), from.end(), std::back_inserter(taken));
  from.clear();
  return taken;
}

// Closes the current alternative of `group`: its items become one option.
bool GbnfParser::end_alternative(OpenGroup& group) {
  Expr option;
  uint32_t height = group.items_height;
  if (group.items.size() == 1) {
    option = std::move(group.items[0]);
  } else {
    if (!count_symbol(group.sequence_start)) return false;
    option = Expr::sequence(take_all(group.items));
    option.where = location_at(group.sequence_start);
    ++height;
  }
  if (height > options_.max_nesting) return nesting_too_deep(group.sequence_start);
  group.items.clear();
  group.items_height = 0;
  group.options.push_back(std::move(option));
  group.options_height = std::max(group.options_height, height);
  return true;
}

// Turns the options of `group` into one expression.
bool GbnfParser::end_alternation(OpenGroup& group, Expr* out, uint32_t* height) {
  *height = group.options_height;
  if (group.options.size() == 1) {
    *out = std::move(group.options[0]);
  } else {
    if (!count_symbol(group.start)) return false;
    *out = Expr::alternation(take_all(group.options));
    out->where = location_at(group.start);
    ++*height;
  }
  if (*height > options_.max_nesting) return nesting_too_deep(group.start);
  return true;
}

// Applies the repeat operators that follow `item`, then adds it to the
// current alternative of `group`.
bool GbnfParser::append_item(bool nested, Expr item, uint32_t height, OpenGroup& group) {
  while (true) {
    skip_space(nested);
    const size_t op = pos_;
    uint32_t min = 0, max = 0;
    if (at_end()) break;
    const char c = peek();
    if (c == '*') {
      min = 0, max = kUnbounded, ++pos_;
    } else if (c == '+') {
      min = 1, max = kUnbounded, ++pos_;
    } else if (c == '?') {
      min = 0, max = 1, ++pos_;
    } else if (c == '{') {
      if (!parse_bounds(&min, &max)) return false;
    } else {
      break;
    }
    if (++height > options_.max_nesting) return nesting_too_deep(op);
    if (!count_symbol(op)) return false;
    const SourceLocation where = item.where;
    item = Expr::repeat(std::move(item), min, max);
    item.where = where;
  }
  group.items.push_back(std::move(item));
  group.items_height = std::max(group.items_height, height);
  return true;
}

// Reads one terminal or rule reference (groups are handled by parse_body).
bool GbnfParser::parse_atom(Expr* out) {
  const size_t start = pos_;
  if (!count_symbol(start)) return false;
  const char c = peek();
  if (c == '"') {
    if (!parse_literal(out)) return false;
  } else if (c == '[') {
    if (!parse_char_class(out)) return false;
  } else if (c == '.') {
    ++pos_;
    *out = Expr::any_char();
  } else if (c == '<' || c == '!') {
    if (!parse_token_item(out)) return false;
  } else if (at_builtin_call()) {
    if (!parse_builtin_call(out)) return false;
  } else if (is_name_char(c)) {
    const std::string_view name = read_name();
    const uint32_t symbol_id = symbol_for(name);
    Symbol& symbol = symbols_[symbol_id];
    if (!symbol.referenced) {
      symbol.referenced = true;
      symbol.first_reference = start;
    }
    // Holds the symbol id until resolve_references() maps it to a rule index.
    *out = Expr::rule_ref(symbol_id);
  } else if (c == '*' || c == '+' || c == '?' || c == '{') {
    return fail(pos_, std::string("'") + c + "' must follow a symbol or group it repeats");
  } else {
    return fail(pos_, "unexpected " + describe_char_at(pos_) +
                          ": expected a string, a character class, '.', a token item, a rule "
                          "name or '('");
  }
  out->where = location_at(start);
  return true;
}

bool GbnfParser::parse_literal(Expr* out) {
  std::u32string code_points;
  if (!read_quoted(&code_points)) return false;
  *out = code_points.empty() ? Expr::sequence({}) : Expr::literal_text(std::move(code_points));
  return true;
}

// Reads a quoted string at pos_ (on its opening '"') with GBNF's escapes.
bool GbnfParser::read_quoted(std::u32string* code_points) {
  const size_t open = pos_;
  ++pos_;
  // At most one code point per byte up to the closing quote (or the line's
  // end): reserved at once rather than regrown every few characters.
  size_t end = pos_;
  while (end < text_.size() && text_[end] != '"' && text_[end] != '\n')
    end += text_[end] == '\\' && end + 1 < text_.size() && text_[end + 1] != '\n' ? 2 : 1;
  code_points->reserve(end - pos_);
  while (true) {
    if (at_end() || peek() == '\n') {
      return fail(open, "unclosed string: expected '\"' before " + describe_char_at(pos_));
    }
    const char c = peek();
    if (c == '"') {
      ++pos_;
      return true;
    }
    uint32_t code_point = 0;
    if (c == '\\') {
      if (!parse_escape(/*in_class=*/false, &code_point)) return false;
    } else {
      pos_ += utf8::decode(text_, pos_, &code_point);  // valid: checked up front
    }
    code_points->push_back(static_cast<char32_t>(code_point));
  }
}

// <[id]>, <text> and their negations !<[id]>, !<text> (pos_ on '<' or '!').
bool GbnfParser::parse_token_item(Expr* out) {
  const size_t start = pos_;
  bool negated = false;
  if (peek() == '!') {
    negated = true;
    ++pos_;
    if (peek() == '(') return parse_token_set(start, out);
    if (peek() != '<') {
      return fail(start,
                  "expected a token item after '!' ('!<[id]>', '!<text>' or '!(<a> | <b>)'), "
                  "found " +
                      describe_char_at(pos_));
    }
  }
  const size_t open = pos_;
  if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '[') {
    pos_ += 2;
    if (!is_digit(peek())) {
      return fail(pos_, "expected a token id after '<[', found " + describe_char_at(pos_));
    }
    uint64_t id = 0;
    while (is_digit(peek())) {
      id = id * 10 + static_cast<uint64_t>(peek() - '0');
      if (id > UINT32_MAX) {
        return fail_limit(open, "token id too large: the most is " + std::to_string(UINT32_MAX));
      }
      ++pos_;
    }
    if (peek() != ']' || pos_ + 1 >= text_.size() || text_[pos_ + 1] != '>') {
      return fail(pos_, "expected ']>' to close the token id, found " + describe_char_at(pos_));
    }
    pos_ += 2;
    *out = Expr::token_id(static_cast<uint32_t>(id), negated);
    return true;
  }
  size_t close = pos_ + 1;
  while (close < text_.size() && text_[close] != '>' && text_[close] != '\n' &&
         text_[close] != '\r')
    ++close;
  if (close >= text_.size() || text_[close] != '>') {
    return fail(open, "unclosed token item: expected '>' on the same line");
  }
  if (close == open + 1) return fail(open, "empty token item '<>': expected a token's text");
  std::u32string text;
  for (size_t at = open; at <= close;) {
    uint32_t code_point = 0;
    at += utf8::decode(text_, at, &code_point);  // valid: checked up front
    text.push_back(static_cast<char32_t>(code_point));
  }
  pos_ = close + 1;
  *out = Expr::token_text(std::move(text), negated);
  return true;
}

// !( <a> | <[5]> ... ), pos_ on '('; the empty set !() is any token.
bool GbnfParser::parse_token_set(size_t start, Expr* out) {
  ++pos_;
  std::vector<Expr> items;
  skip_space(/*newlines_ok=*/true);
  while (peek() != ')') {
    if (!items.empty()) {
      if (peek() != '|') {
        return fail(pos_, "expected '|' or ')' in the token set, found " + describe_char_at(pos_));
      }
      ++pos_;
      skip_space(/*newlines_ok=*/true);
    }
    if (peek() != '<') {
      return fail(pos_, "expected a token item ('<[id]>' or '<text>') in the token set, found " +
                            describe_char_at(pos_));
    }
    Expr item;
    const size_t item_start = pos_;
    if (!parse_token_item(&item)) return false;
    item.where = location_at(item_start);
    items.push_back(std::move(item));
    skip_space(/*newlines_ok=*/true);
  }
  ++pos_;
  *out = Expr::tokens_except(std::move(items));
  out->where = location_at(start);
  return true;
}

namespace {

// The built-in terminals written as calls, Name("..."), and how many
// strings each takes.
struct Builtin {
  std::string_view name;
  bool many;  // one or more strings, else exactly one
};
constexpr Builtin kBuiltins[] = {
    {"Regex", false}, {"LazyRegex", false}, {"Substring", false}, {"TextExcluding", true}};

const Builtin* builtin_named(std::string_view name) {
  for (const Builtin& b : kBuiltins)
    if (b.name == name) return &b;
  return nullptr;
}

}  // namespace

// A built-in's name written right before '(' (no space): "Regex (" stays
// a rule reference followed by a group, as in older GBNF.
bool GbnfParser::at_builtin_call() const {
  size_t p = pos_;
  while (p < text_.size() && is_name_char(text_[p])) ++p;
  if (p >= text_.size() || text_[p] != '(') return false;
  return builtin_named(text_.substr(pos_, p - pos_)) != nullptr;
}

// "AnyOrder(" with no space: its arguments are expressions, which
// parse_body reads as a group.
bool GbnfParser::at_any_order_call() const {
  constexpr std::string_view kName = "AnyOrder(";
  return text_.substr(pos_, kName.size()) == kName;
}

bool GbnfParser::parse_builtin_call(Expr* out) {
  const std::string_view name = read_name();
  const Builtin& builtin = *builtin_named(name);
  ++pos_;  // '('
  std::vector<std::u32string> strings;
  std::vector<size_t> string_starts;
  while (true) {
    skip_space(/*newlines_ok=*/true);
    if (peek() != '"') {
      return fail(pos_, std::string(name) + "(...) takes " +
                            (builtin.many ? "one or more strings" : "one string") + "; found " +
                            describe_char_at(pos_));
    }
    const size_t string_start = pos_;
    std::u32string value;
    if (!read_quoted(&value)) return false;
    if (builtin.many && value.empty()) {
      return fail(string_start, std::string(name) + "(...) cannot exclude the empty string");
    }
    // Each excluded string is a literal node of its own (the call itself was
    // counted by parse_atom), so GbnfOptions::max_symbols bounds them too.
    if (builtin.many && !count_symbol(string_start)) return false;
    strings.push_back(std::move(value));
    string_starts.push_back(string_start);
    skip_space(/*newlines_ok=*/true);
    if (peek() == ')') break;
    if (peek() != ',' || !builtin.many) {
      return fail(pos_, std::string("expected ") + (builtin.many ? "',' or " : "") +
                            "')' to close " + std::string(name) + "(...), found " +
                            describe_char_at(pos_));
    }
    ++pos_;
  }
  ++pos_;  // ')'
  if (name == "Regex" || name == "LazyRegex") {
    *out = Expr::regex(std::move(strings[0]), name == "LazyRegex");
  } else if (name == "Substring") {
    *out = Expr::substring(std::move(strings[0]));
  } else {
    *out = Expr::text_excluding(std::move(strings));
  }
  for (size_t i = 0; i < out->children.size(); ++i)
    out->children[i].where = location_at(string_starts[i]);
  return true;
}

bool GbnfParser::parse_char_class(Expr* out) {
  const size_t open = pos_;
  ++pos_;
  bool negated = false;
  if (peek() == '^') {
    negated = true;
    ++pos_;
  }
  std::vector<CodePointRange> ranges;
  ranges.reserve(8);  // (most classes: one allocation, not one per doubling)
  while (true) {
    if (!at_end() && peek() == ']') {
      ++pos_;
      break;
    }
    const size_t item_start = pos_;
    CodePointRange range;
    if (!parse_class_char(open, &range.first)) return false;
    range.last = range.first;
    // '-' makes a range unless it is the last character before ']'.
    if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
      ++pos_;
      if (!parse_class_char(open, &range.last)) return false;
      if (range.first > range.last) {
        return fail(item_start, "bad range: start " + describe_code_point(range.first) + " (" +
                                    format_code_point(range.first) + ") is above end " +
                                    describe_code_point(range.last) + " (" +
                                    format_code_point(range.last) + ")");
      }
    }
    ranges.push_back(range);
  }
  *out = Expr::char_class(std::move(ranges), negated);
  return true;
}

bool GbnfParser::parse_class_char(size_t class_start, uint32_t* code_point) {
  if (at_end() || peek() == '\n') {
    return fail(class_start,
                "unclosed character class: expected ']' before " + describe_char_at(pos_));
  }
  if (peek() == '\\') return parse_escape(/*in_class=*/true, code_point);
  pos_ += utf8::decode(text_, pos_, code_point);  // valid: checked up front
  return true;
}

bool GbnfParser::parse_escape(bool in_class, uint32_t* code_point) {
  const size_t backslash = pos_;
  ++pos_;
  if (at_end() || peek() == '\n') {
    return fail(backslash, "bad escape: '\\' at " + describe_char_at(pos_) + "; expected " +
                               (in_class ? kClassEscapeList : kEscapeList));
  }
  const char c = text_[pos_];
  int hex_digits = 0;
  switch (c) {
    case 't':
      *code_point = '\t';
      break;
    case 'n':
      *code_point = '\n';
      break;
    case 'r':
      *code_point = '\r';
      break;
    case '\\':
    case '"':
    case '[':
    case ']':
      *code_point = static_cast<uint8_t>(c);
      break;
    case '-':
    case '^':
      if (!in_class) {
        return fail(backslash, std::string("bad escape '\\") + c +
                                   "': only allowed inside a character class; expected " +
                                   kEscapeList);
      }
      *code_point = static_cast<uint8_t>(c);
      break;
    case 'x':
      hex_digits = 2;
      break;
    case 'u':
      hex_digits = 4;
      break;
    case 'U':
      hex_digits = 8;
      break;
    default: {
      uint32_t escaped = static_cast<uint8_t>(c);
      const size_t length = utf8::decode(text_, pos_, &escaped);
      return fail(backslash, "bad escape '\\" + std::string(text_.substr(pos_, length)) +
                                 "'; expected " + (in_class ? kClassEscapeList : kEscapeList));
    }
  }
  ++pos_;
  if (hex_digits == 0) return true;

  uint32_t value = 0;
  for (int i = 0; i < hex_digits; ++i) {
    const int digit = hex_value(peek());
    if (digit < 0) {
      return fail(backslash, std::string("bad escape '\\") + c + "': expected " +
                                 std::to_string(hex_digits) + " hex digits");
    }
    value = value * 16 + static_cast<uint32_t>(digit);
    ++pos_;
  }
  if (value > kMaxCodePoint) {
    return fail(backslash, "bad escape: " + format_code_point(value) +
                               " is beyond the last code point U+10FFFF");
  }
  if (utf8::is_surrogate(value)) {
    return fail(backslash, "bad escape: " + format_code_point(value) +
                               " is a surrogate (D800-DFFF), not a character");
  }
  *code_point = value;
  return true;
}

bool GbnfParser::parse_bounds(uint32_t* min, uint32_t* max) {
  const size_t open = pos_;
  ++pos_;
  const auto skip_blanks = [this] {
    while (peek() == ' ' || peek() == '\t') ++pos_;
  };
  skip_blanks();
  if (!is_digit(peek())) {
    return fail(pos_, "expected a number after '{', found " + describe_char_at(pos_));
  }
  if (!parse_bound_number(min)) return false;
  skip_blanks();
  if (peek() == '}') {
    *max = *min;
  } else if (peek() == ',') {
    ++pos_;
    skip_blanks();
    if (peek() == '}') {
      *max = kUnbounded;
    } else if (is_digit(peek())) {
      if (!parse_bound_number(max)) return false;
      skip_blanks();
    } else {
      return fail(pos_, "expected a number or '}' after ',', found " + describe_char_at(pos_));
    }
    if (peek() != '}') return fail(pos_, "expected '}', found " + describe_char_at(pos_));
  } else {
    return fail(pos_, "expected ',' or '}' in repetition bounds, found " + describe_char_at(pos_));
  }
  ++pos_;
  if (*min > *max) {
    return fail(open, "bad repetition bounds: minimum " + std::to_string(*min) +
                          " is greater than maximum " + std::to_string(*max));
  }
  return true;
}

bool GbnfParser::parse_bound_number(uint32_t* value) {
  const size_t start = pos_;
  // kUnbounded itself means "no upper bound", so it is never a count.
  const uint64_t limit = std::min<uint32_t>(options_.max_repeat_bound, kUnbounded - 1);
  uint64_t number = 0;
  while (is_digit(peek())) {
    // Saturate: anything past the limit is an error anyway.
    if (number <= limit) number = number * 10 + static_cast<uint64_t>(peek() - '0');
    ++pos_;
  }
  if (number > limit) {
    std::string digits(text_.substr(start, std::min<size_t>(pos_ - start, 24)));
    if (pos_ - start > 24) digits += "...";
    return fail_limit(start, "repetition bound " + digits + " is too large: the limit is " +
                                 std::to_string(limit) + " (GbnfOptions::max_repeat_bound)");
  }
  *value = static_cast<uint32_t>(number);
  return true;
}

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text, const GbnfOptions& options) {
  GbnfParser parser(text, options);
  return parser.parse();
}

}  // namespace grammask
