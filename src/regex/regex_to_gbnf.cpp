// ECMA-262 pattern -> AST -> GBNF (JSON string bodies) and RE2 syntax.
#include "regex/regex_to_gbnf.h"

#include <re2/re2.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>

#include "base/utf8.h"

namespace grammask::internal {
namespace {

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

std::string hex(uint32_t value, int width) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%0*X", width, value);
  return buffer;
}

CodePointSet single(uint32_t cp) {
  return {{cp, cp}};
}
CodePointSet range_set(uint32_t first, uint32_t last) {
  return normalize_set({{first, last}});
}

CodePointSet union_sets(CodePointSet a, const CodePointSet& b) {
  a.insert(a.end(), b.begin(), b.end());
  return normalize_set(std::move(a));
}

CodePointSet digit_set() {
  return range_set('0', '9');
}
CodePointSet word_set() {
  return normalize_set({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
}
// ECMA-262 WhiteSpace and LineTerminator code points.
CodePointSet space_set() {
  return normalize_set({{0x09, 0x0D},
                        {0x20, 0x20},
                        {0xA0, 0xA0},
                        {0x1680, 0x1680},
                        {0x2000, 0x200A},
                        {0x2028, 0x2029},
                        {0x202F, 0x202F},
                        {0x205F, 0x205F},
                        {0x3000, 0x3000},
                        {0xFEFF, 0xFEFF}});
}
// `.`: everything but line terminators.
CodePointSet dot_set() {
  return complement_set(normalize_set({{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}}));
}

RegexNode chars_node(CodePointSet set) {
  RegexNode node;
  node.kind = RegexNode::Kind::kChars;
  node.chars = std::move(set);
  return node;
}

class RegexParser {
 public:
  RegexParser(std::u32string pattern, const RegexLimits& limits)
      : text_(std::move(pattern)), limits_(limits) {}

  Result<RegexNode> parse() {
    RegexNode node;
    Status status = parse_disjunction(&node, 0);
    if (!status.ok()) return status;
    if (pos_ < text_.size()) return error(ErrorCode::kSyntax, "unmatched ')'");
    return node;
  }

 private:
  Status error(ErrorCode code, const std::string& what) const {
    return Status(code, what + " at offset " + std::to_string(pos_));
  }
  bool at_end() const { return pos_ >= text_.size(); }
  uint32_t peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : 0xFFFFFFFFu;
  }

  Status parse_disjunction(RegexNode* out, uint32_t depth) {
    if (depth > limits_.max_depth)
      return error(ErrorCode::kLimitExceeded, "groups nested too deeply");
    std::vector<RegexNode> branches;
    while (true) {
      RegexNode branch;
      Status status = parse_alternative(&branch, depth);
      if (!status.ok()) return status;
      branches.push_back(std::move(branch));
      if (peek() != '|') break;
      ++pos_;
    }
    if (branches.size() == 1) {
      *out = std::move(branches[0]);
    } else {
      out->kind = RegexNode::Kind::kAlternation;
      out->children = std::move(branches);
    }
    return {};
  }

  Status parse_alternative(RegexNode* out, uint32_t depth) {
    std::vector<RegexNode> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      RegexNode atom;
      bool quantifiable = true;
      Status status = parse_term(&atom, &quantifiable, depth);
      if (!status.ok()) return status;
      status = parse_quantifiers(&atom, quantifiable);
      if (!status.ok()) return status;
      items.push_back(std::move(atom));
    }
    if (items.empty()) {
      out->kind = RegexNode::Kind::kEmpty;
    } else if (items.size() == 1) {
      *out = std::move(items[0]);
    } else {
      out->kind = RegexNode::Kind::kConcat;
      out->children = std::move(items);
    }
    return {};
  }

  // Reads a decimal number; false if there are no digits.
  bool read_number(uint64_t* value) {
    size_t start = pos_;
    *value = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      *value = std::min<uint64_t>(*value * 10 + (peek() - '0'), uint64_t{1} << 40);
      ++pos_;
    }
    return pos_ > start;
  }

  // Parses `{m}`, `{m,}`, `{m,n}` at pos_; restores pos_ and returns false
  // if the text is not a quantifier (Annex B: then `{` is a literal).
  bool try_braces(uint64_t* min, uint64_t* max, bool* unbounded) {
    size_t start = pos_;
    ++pos_;
    *unbounded = false;
    if (!read_number(min)) {
      pos_ = start;
      return false;
    }
    *max = *min;
    if (peek() == ',') {
      ++pos_;
      if (!read_number(max)) *unbounded = true;
    }
    if (peek() != '}') {
      pos_ = start;
      return false;
    }
    ++pos_;
    return true;
  }

  Status parse_quantifiers(RegexNode* atom, bool quantifiable) {
    while (!at_end()) {
      uint32_t c = peek();
      uint64_t min = 0, max = 0;
      bool unbounded = false;
      if (c == '*') {
        min = 0, unbounded = true, ++pos_;
      } else if (c == '+') {
        min = 1, unbounded = true, ++pos_;
      } else if (c == '?') {
        min = 0, max = 1, ++pos_;
      } else if (c == '{') {
        if (!try_braces(&min, &max, &unbounded)) return {};
        if (!unbounded && min > max) return error(ErrorCode::kSyntax, "numbers out of order in {}");
      } else {
        return {};
      }
      if (!quantifiable) return error(ErrorCode::kSyntax, "nothing to repeat");
      uint64_t largest = unbounded ? min : max;
      if (largest > limits_.max_repeat) {
        return error(ErrorCode::kLimitExceeded, "repeat count " + std::to_string(largest) +
                                                    " exceeds the limit of " +
                                                    std::to_string(limits_.max_repeat));
      }
      if (peek() == '?') ++pos_;  // lazy: same language
      RegexNode repeat;
      repeat.kind = RegexNode::Kind::kRepeat;
      repeat.min = static_cast<uint32_t>(min);
      repeat.max = unbounded ? kUnbounded : static_cast<uint32_t>(max);
      repeat.children.push_back(std::move(*atom));
      *atom = std::move(repeat);
    }
    return {};
  }

  Status parse_term(RegexNode* out, bool* quantifiable, uint32_t depth) {
    uint32_t c = peek();
    switch (c) {
      case '^':
        ++pos_;
        out->kind = RegexNode::Kind::kLineStart;
        *quantifiable = false;
        return {};
      case '$':
        ++pos_;
        out->kind = RegexNode::Kind::kLineEnd;
        *quantifiable = false;
        return {};
      case '.':
        ++pos_;
        *out = chars_node(dot_set());
        return {};
      case '(':
        return parse_group(out, depth);
      case '[':
        return parse_class(out);
      case '\\':
        return parse_atom_escape(out, quantifiable);
      case '*':
      case '+':
      case '?':
        return error(ErrorCode::kSyntax, "nothing to repeat");
      case '{': {
        uint64_t a, b;
        bool u;
        size_t save = pos_;
        if (try_braces(&a, &b, &u)) {
          pos_ = save;
          return error(ErrorCode::kSyntax, "nothing to repeat");
        }
        ++pos_;
        *out = chars_node(single('{'));
        return {};
      }
      default:
        ++pos_;
        *out = chars_node(single(c));
        return {};
    }
  }

  Status parse_group(RegexNode* out, uint32_t depth) {
    ++pos_;  // (
    if (peek() == '?') {
      if (peek(1) == ':') {
        pos_ += 2;
      } else if (peek(1) == '<' && peek(2) != '=' && peek(2) != '!') {
        pos_ += 2;
        while (!at_end() && peek() != '>') ++pos_;
        if (at_end()) return error(ErrorCode::kSyntax, "unterminated group name");
        ++pos_;
      } else if (peek(1) == '=' || peek(1) == '!' || peek(1) == '<') {
        return error(ErrorCode::kUnsupported, "lookaround assertions are not supported");
      } else {
        return error(ErrorCode::kSyntax, "invalid group");
      }
    }
    Status status = parse_disjunction(out, depth + 1);
    if (!status.ok()) return status;
    if (peek() != ')') return error(ErrorCode::kSyntax, "missing ')'");
    ++pos_;
    return {};
  }

  Status read_hex(size_t digits, uint32_t* value) {
    *value = 0;
    for (size_t k = 0; k < digits; ++k) {
      uint32_t c = peek();
      int v = hex_value(c);
      if (v < 0) return error(ErrorCode::kSyntax, "invalid hexadecimal escape");
      *value = *value * 16 + static_cast<uint32_t>(v);
      ++pos_;
    }
    return {};
  }
  static int hex_value(uint32_t c) {
    if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
    return -1;
  }

  // An escape after `\` (pos_ at the letter). Sets either *set (a class
  // escape) or *code_point. `in_class` changes \b and \-.
  Status parse_escape(bool in_class, CodePointSet* set, uint32_t* code_point, bool* is_set) {
    *is_set = false;
    if (at_end()) return error(ErrorCode::kSyntax, "\\ at end of pattern");
    uint32_t c = peek();
    ++pos_;
    switch (c) {
      case 'd':
        *set = digit_set();
        *is_set = true;
        return {};
      case 'D':
        *set = complement_set(digit_set());
        *is_set = true;
        return {};
      case 'w':
        *set = word_set();
        *is_set = true;
        return {};
      case 'W':
        *set = complement_set(word_set());
        *is_set = true;
        return {};
      case 's':
        *set = space_set();
        *is_set = true;
        return {};
      case 'S':
        *set = complement_set(space_set());
        *is_set = true;
        return {};
      case 'n':
        *code_point = '\n';
        return {};
      case 'r':
        *code_point = '\r';
        return {};
      case 't':
        *code_point = '\t';
        return {};
      case 'v':
        *code_point = '\v';
        return {};
      case 'f':
        *code_point = '\f';
        return {};
      case 'b':
        if (in_class) {
          *code_point = 0x08;
          return {};
        }
        return error(ErrorCode::kUnsupported, "word boundary \\b is not supported");
      case 'B':
        return error(ErrorCode::kUnsupported, "word boundary \\B is not supported");
      case '0':
        if (peek() >= '0' && peek() <= '9')
          return error(ErrorCode::kUnsupported, "octal escapes are not supported");
        *code_point = 0;
        return {};
      case 'c': {
        uint32_t letter = peek();
        if ((letter >= 'a' && letter <= 'z') || (letter >= 'A' && letter <= 'Z')) {
          ++pos_;
          *code_point = letter % 32;
          return {};
        }
        return error(ErrorCode::kUnsupported, "\\c without a control letter");
      }
      case 'x':
        return read_hex(2, code_point);
      case 'u': {
        if (peek() == '{') {
          ++pos_;
          uint32_t value = 0;
          size_t count = 0;
          while (hex_value(peek()) >= 0 && count < 8) {
            value = value * 16 + static_cast<uint32_t>(hex_value(peek()));
            ++pos_, ++count;
          }
          if (count == 0 || peek() != '}' || value > kMaxCodePoint)
            return error(ErrorCode::kSyntax, "invalid \\u{...} escape");
          ++pos_;
          *code_point = value;
          return {};
        }
        Status status = read_hex(4, code_point);
        if (!status.ok()) return status;
        if (*code_point >= 0xD800 && *code_point <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
          size_t save = pos_;
          pos_ += 2;
          uint32_t low = 0;
          if (read_hex(4, &low).ok() && low >= 0xDC00 && low <= 0xDFFF) {
            *code_point = 0x10000 + ((*code_point - 0xD800) << 10) + (low - 0xDC00);
            return {};
          }
          pos_ = save;
        }
        if (*code_point >= kSurrogateFirst && *code_point <= kSurrogateLast)
          return error(ErrorCode::kUnsupported, "lone surrogate escapes are not supported");
        return {};
      }
      case 'p':
      case 'P':
        return error(ErrorCode::kUnsupported, "Unicode property escapes are not supported");
      case 'k':
        return error(ErrorCode::kUnsupported, "backreferences are not supported");
      default:
        if (c >= '1' && c <= '9')
          return error(ErrorCode::kUnsupported, "backreferences are not supported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
          return error(ErrorCode::kUnsupported,
                       "unknown escape \\" + std::string(1, static_cast<char>(c)));
        *code_point = c;  // identity escape of punctuation
        return {};
    }
  }

  Status parse_atom_escape(RegexNode* out, bool* quantifiable) {
    ++pos_;  // backslash
    (void)quantifiable;
    CodePointSet set;
    uint32_t cp = 0;
    bool is_set = false;
    Status status = parse_escape(/*in_class=*/false, &set, &cp, &is_set);
    if (!status.ok()) return status;
    *out = chars_node(is_set ? set : normalize_set(single(cp)));
    return {};
  }

  Status parse_class(RegexNode* out) {
    ++pos_;  // [
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    CodePointSet members;
    while (true) {
      if (at_end()) return error(ErrorCode::kSyntax, "missing ']'");
      if (peek() == ']') {
        ++pos_;
        break;
      }
      CodePointSet first_set;
      uint32_t first = 0;
      bool first_is_set = false;
      Status status = parse_class_atom(&first_set, &first, &first_is_set);
      if (!status.ok()) return status;
      if (peek() == '-' && peek(1) != ']' && peek(1) != 0xFFFFFFFFu) {
        size_t save = pos_;
        ++pos_;
        CodePointSet last_set;
        uint32_t last = 0;
        bool last_is_set = false;
        status = parse_class_atom(&last_set, &last, &last_is_set);
        if (!status.ok()) return status;
        if (first_is_set || last_is_set) {
          // Annex B: `[\d-x]` means \d, '-', x.
          members = union_sets(std::move(members), first_is_set ? first_set : single(first));
          members = union_sets(std::move(members), single('-'));
          members = union_sets(std::move(members), last_is_set ? last_set : single(last));
          continue;
        }
        if (first > last) {
          pos_ = save;
          return error(ErrorCode::kSyntax, "range out of order in character class");
        }
        members = union_sets(std::move(members), {{first, last}});
        continue;
      }
      members = union_sets(std::move(members), first_is_set ? first_set : single(first));
    }
    members = normalize_set(std::move(members));
    *out = chars_node(negated ? complement_set(members) : members);
    return {};
  }

  Status parse_class_atom(CodePointSet* set, uint32_t* cp, bool* is_set) {
    *is_set = false;
    if (peek() == '\\') {
      ++pos_;
      if (peek() == '-') {
        ++pos_;
        *cp = '-';
        return {};
      }
      return parse_escape(/*in_class=*/true, set, cp, is_set);
    }
    *cp = peek();
    ++pos_;
    return {};
  }

  std::u32string text_;
  RegexLimits limits_;
  size_t pos_ = 0;
};

// Product of bounded repeat counts along any path: the expansion a
// recognizer may face.
uint64_t expansion(const RegexNode& node) {
  uint64_t inner = 1;
  for (const RegexNode& child : node.children) inner = std::max(inner, expansion(child));
  if (node.kind != RegexNode::Kind::kRepeat) return inner;
  uint64_t count = node.max == kUnbounded ? std::max<uint64_t>(node.min, 1) : node.max;
  uint64_t product = inner * std::max<uint64_t>(count, 1);
  return std::min<uint64_t>(product, uint64_t{1} << 50);
}

bool contains_anchor(const RegexNode& node) {
  if (node.kind == RegexNode::Kind::kLineStart || node.kind == RegexNode::Kind::kLineEnd)
    return true;
  for (const RegexNode& child : node.children)
    if (contains_anchor(child)) return true;
  return false;
}

bool has_large_repeat(const RegexNode& node) {
  if (node.kind == RegexNode::Kind::kRepeat &&
      ((node.max != kUnbounded && node.max > 1000) || node.min > 1000))
    return true;
  for (const RegexNode& child : node.children)
    if (has_large_repeat(child)) return true;
  return false;
}

// One top-level way to match: a body with or without anchors on each side.
struct Branch {
  bool anchored_start = false;
  bool anchored_end = false;
  std::vector<RegexNode> items;  // concatenated
};

std::vector<RegexNode> as_items(const RegexNode& node) {
  if (node.kind == RegexNode::Kind::kConcat) return node.children;
  if (node.kind == RegexNode::Kind::kEmpty) return {};
  return {node};
}

// Moves anchors at the edges of a branch into its flags; distributes
// alternations at the edges that contain anchors (`(^a|b)c`).
Status split_branches(std::vector<RegexNode> items, bool anchored_start, bool anchored_end,
                      std::vector<Branch>* out) {
  if (out->size() > 256) return Status(ErrorCode::kLimitExceeded, "too many anchored branches");
  while (!items.empty() && items.front().kind == RegexNode::Kind::kLineStart) {
    anchored_start = true;
    items.erase(items.begin());
  }
  while (!items.empty() && items.back().kind == RegexNode::Kind::kLineEnd) {
    anchored_end = true;
    items.pop_back();
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (!contains_anchor(items[i])) continue;
    bool edge = i == 0 || i + 1 == items.size();
    if (edge && (items[i].kind == RegexNode::Kind::kAlternation ||
                 items[i].kind == RegexNode::Kind::kConcat)) {
      std::vector<RegexNode> options = items[i].kind == RegexNode::Kind::kAlternation
                                           ? items[i].children
                                           : std::vector<RegexNode>{items[i]};
      for (const RegexNode& option : options) {
        std::vector<RegexNode> expanded(items.begin(), items.begin() + static_cast<long>(i));
        std::vector<RegexNode> middle = as_items(option);
        expanded.insert(expanded.end(), middle.begin(), middle.end());
        expanded.insert(expanded.end(), items.begin() + static_cast<long>(i) + 1, items.end());
        Status status = split_branches(std::move(expanded), anchored_start, anchored_end, out);
        if (!status.ok()) return status;
      }
      return {};
    }
    return Status(ErrorCode::kUnsupported, "anchors inside a pattern are not supported");
  }
  out->push_back(Branch{anchored_start, anchored_end, std::move(items)});
  return {};
}

std::string parenthesize(const std::string& expr) {
  // Already atomic: a class, a literal, a rule name, or a balanced group.
  if (expr.empty()) return expr;
  bool simple = true;
  int depth = 0;
  bool in_literal = false, in_class = false;
  for (size_t i = 0; i < expr.size(); ++i) {
    char c = expr[i];
    if (in_literal) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_literal = false;
      continue;
    }
    if (in_class) {
      if (c == '\\')
        ++i;
      else if (c == ']')
        in_class = false;
      continue;
    }
    if (c == '"')
      in_literal = true;
    else if (c == '[')
      in_class = true;
    else if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    else if (depth == 0 && (c == ' ' || c == '|'))
      simple = false;
  }
  if (simple &&
      !(expr.back() == '?' || expr.back() == '*' || expr.back() == '+' || expr.back() == '}'))
    return expr;
  return "(" + expr + ")";
}

std::string repeat_suffix(uint32_t min, uint32_t max) {
  if (min == 0 && max == kUnbounded) return "*";
  if (min == 1 && max == kUnbounded) return "+";
  if (min == 0 && max == 1) return "?";
  if (max == kUnbounded) return "{" + std::to_string(min) + ",}";
  if (min == max) return "{" + std::to_string(min) + "}";
  return "{" + std::to_string(min) + "," + std::to_string(max) + "}";
}

std::string join_alternatives(const std::vector<std::string>& options) {
  bool has_empty = false;
  std::vector<std::string> nonempty;
  for (const std::string& option : options) {
    if (option.empty())
      has_empty = true;
    else if (std::find(nonempty.begin(), nonempty.end(), option) == nonempty.end())
      nonempty.push_back(option);
  }
  if (nonempty.empty()) return "";
  std::string joined;
  for (size_t i = 0; i < nonempty.size(); ++i) {
    if (i) joined += " | ";
    joined += nonempty[i];
  }
  if (has_empty) return "(" + joined + ")?";
  return nonempty.size() == 1 ? joined : "(" + joined + ")";
}

// Returns "" for the empty string; "!" marks an empty language.
constexpr const char* kNever = "!";

std::string node_to_gbnf(const RegexNode& node) {
  switch (node.kind) {
    case RegexNode::Kind::kEmpty:
    case RegexNode::Kind::kLineStart:
    case RegexNode::Kind::kLineEnd:
      return "";
    case RegexNode::Kind::kChars: {
      std::string expr = json_char_gbnf(node.chars);
      return expr.empty() ? kNever : expr;
    }
    case RegexNode::Kind::kConcat: {
      std::string joined;
      for (const RegexNode& child : node.children) {
        std::string part = node_to_gbnf(child);
        if (part == kNever) return kNever;
        if (part.empty()) continue;
        if (!joined.empty()) joined += " ";
        joined += parenthesize(part);
      }
      return joined;
    }
    case RegexNode::Kind::kAlternation: {
      std::vector<std::string> options;
      for (const RegexNode& child : node.children) {
        std::string part = node_to_gbnf(child);
        if (part != kNever) options.push_back(part);
      }
      if (options.empty()) return kNever;
      return join_alternatives(options);
    }
    case RegexNode::Kind::kRepeat: {
      std::string part = node_to_gbnf(node.children[0]);
      if (part == kNever) return node.min == 0 ? "" : kNever;
      if (part.empty() || node.max == 0) return "";
      return parenthesize(part) + repeat_suffix(node.min, node.max);
    }
  }
  return kNever;
}

struct Lengths {
  uint64_t min = 0;
  std::optional<uint64_t> max = 0;
};

Lengths node_lengths(const RegexNode& node) {
  constexpr uint64_t kCap = uint64_t{1} << 40;
  switch (node.kind) {
    case RegexNode::Kind::kEmpty:
    case RegexNode::Kind::kLineStart:
    case RegexNode::Kind::kLineEnd:
      return {0, 0};
    case RegexNode::Kind::kChars:
      return {1, 1};
    case RegexNode::Kind::kConcat: {
      Lengths total{0, 0};
      for (const RegexNode& child : node.children) {
        Lengths part = node_lengths(child);
        total.min = std::min(kCap, total.min + part.min);
        if (total.max && part.max)
          total.max = std::min(kCap, *total.max + *part.max);
        else
          total.max.reset();
      }
      return total;
    }
    case RegexNode::Kind::kAlternation: {
      Lengths result{UINT64_MAX, 0};
      for (const RegexNode& child : node.children) {
        Lengths part = node_lengths(child);
        result.min = std::min(result.min, part.min);
        if (result.max && part.max)
          result.max = std::max(*result.max, *part.max);
        else
          result.max.reset();
      }
      return result;
    }
    case RegexNode::Kind::kRepeat: {
      Lengths part = node_lengths(node.children[0]);
      Lengths result;
      result.min = std::min(kCap, part.min * node.min);
      if (node.max == kUnbounded) {
        if (part.max && *part.max == 0)
          result.max = 0;
        else
          result.max.reset();
      } else if (part.max) {
        result.max = std::min(kCap, *part.max * node.max);
      } else {
        result.max = node.max == 0 ? std::optional<uint64_t>(0) : std::nullopt;
      }
      return result;
    }
  }
  return {};
}

std::string re2_class(const CodePointSet& set) {
  if (set.empty()) return "[^\\x{0}-\\x{10FFFF}]";
  std::string out = "[";
  for (const CodePointRange& range : set) {
    out += "\\x{" + hex(range.first, 1) + "}";
    if (range.last != range.first) out += "-\\x{" + hex(range.last, 1) + "}";
  }
  return out + "]";
}

std::string node_to_re2(const RegexNode& node) {
  switch (node.kind) {
    case RegexNode::Kind::kEmpty:
      return "(?:)";
    case RegexNode::Kind::kLineStart:
      return "^";
    case RegexNode::Kind::kLineEnd:
      return "$";
    case RegexNode::Kind::kChars:
      return re2_class(node.chars);
    case RegexNode::Kind::kConcat: {
      std::string out;
      for (const RegexNode& child : node.children) out += node_to_re2(child);
      return "(?:" + out + ")";
    }
    case RegexNode::Kind::kAlternation: {
      std::string out;
      for (size_t i = 0; i < node.children.size(); ++i) {
        if (i) out += "|";
        out += node_to_re2(node.children[i]);
      }
      return "(?:" + out + ")";
    }
    case RegexNode::Kind::kRepeat:
      return "(?:" + node_to_re2(node.children[0]) + ")" + repeat_suffix(node.min, node.max);
  }
  return "";
}

}  // namespace

namespace {

// True when `ranges` already is a CodePointSet (sorted, disjoint, not
// adjacent, within range, no surrogates): normalize_set would return it
// unchanged. Ranges that end right below the surrogates and begin right
// after them stay apart in a normalized set too.
bool is_normalized(const CodePointSet& ranges) {
  for (size_t i = 0; i < ranges.size(); ++i) {
    const CodePointRange& range = ranges[i];
    if (range.first > range.last || range.last > kMaxCodePoint) return false;
    if (range.first <= kSurrogateLast && range.last >= kSurrogateFirst) return false;
    if (i > 0 && range.first <= ranges[i - 1].last + 1) return false;
  }
  return true;
}

}  // namespace

CodePointSet normalize_set(CodePointSet ranges) {
  // Most sets handed in are normalized already (pieces of automaton edges):
  // they are returned without the three copies below.
  if (is_normalized(ranges)) return ranges;
  CodePointSet cleaned;
  for (CodePointRange range : ranges) {
    if (range.first > range.last) continue;
    range.last = std::min(range.last, kMaxCodePoint);
    if (range.first > kMaxCodePoint) continue;
    // Cut out surrogates.
    if (range.first <= kSurrogateLast && range.last >= kSurrogateFirst) {
      if (range.first < kSurrogateFirst) cleaned.push_back({range.first, kSurrogateFirst - 1});
      if (range.last > kSurrogateLast) cleaned.push_back({kSurrogateLast + 1, range.last});
      continue;
    }
    cleaned.push_back(range);
  }
  std::sort(cleaned.begin(), cleaned.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.first < b.first; });
  CodePointSet merged;
  for (const CodePointRange& range : cleaned) {
    if (!merged.empty() && range.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, range.last);
    } else if (!merged.empty() && merged.back().last == kSurrogateFirst - 1 &&
               range.first == kSurrogateLast + 1) {
      merged.back().last = range.last;  // adjacent across the surrogate gap
    } else {
      merged.push_back(range);
    }
  }
  // Re-split any range that now spans the surrogate gap: keep the invariant
  // that members are never surrogates.
  CodePointSet result;
  for (const CodePointRange& range : merged) {
    if (range.first < kSurrogateFirst && range.last > kSurrogateLast) {
      result.push_back({range.first, kSurrogateFirst - 1});
      result.push_back({kSurrogateLast + 1, range.last});
    } else {
      result.push_back(range);
    }
  }
  return result;
}

CodePointSet complement_set(const CodePointSet& set) {
  CodePointSet result;
  uint32_t next = 0;
  for (const CodePointRange& range : set) {
    if (range.first > next) result.push_back({next, range.first - 1});
    next = range.last + 1;
  }
  if (next <= kMaxCodePoint) result.push_back({next, kMaxCodePoint});
  return normalize_set(std::move(result));
}

CodePointSet intersect_sets(const CodePointSet& a, const CodePointSet& b) {
  CodePointSet result;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    uint32_t first = std::max(a[i].first, b[j].first);
    uint32_t last = std::min(a[i].last, b[j].last);
    if (first <= last) result.push_back({first, last});
    if (a[i].last < b[j].last)
      ++i;
    else
      ++j;
  }
  return normalize_set(std::move(result));
}

bool set_contains(const CodePointSet& set, uint32_t code_point) {
  for (const CodePointRange& range : set)
    if (code_point >= range.first && code_point <= range.last) return true;
  return false;
}

std::string gbnf_char_class(const CodePointSet& set) {
  auto write = [](uint32_t cp) {
    if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))
      return std::string(1, static_cast<char>(cp));
    if (cp < 0x100) return "\\x" + hex(cp, 2);
    if (cp < 0x10000) return "\\u" + hex(cp, 4);
    return "\\U" + hex(cp, 8);
  };
  std::string out = "[";
  for (const CodePointRange& range : set) {
    out += write(range.first);
    if (range.last != range.first) out += "-" + write(range.last);
  }
  return out + "]";
}

std::string gbnf_literal(std::string_view utf8_text) {
  std::u32string code_points;
  if (!utf8::decode_all(utf8_text, &code_points)) code_points.clear();
  std::string out = "\"";
  for (char32_t cp : code_points) {
    if (cp == '"')
      out += "\\\"";
    else if (cp == '\\')
      out += "\\\\";
    else if (cp >= 0x20 && cp < 0x7F)
      out.push_back(static_cast<char>(cp));
    else if (cp < 0x100)
      out += "\\x" + hex(cp, 2);
    else if (cp < 0x10000)
      out += "\\u" + hex(cp, 4);
    else
      out += "\\U" + hex(cp, 8);
  }
  return out + "\"";
}

std::string json_quote(std::string_view utf8_text) {
  std::string out = "\"";
  for (char c : utf8_text) {
    auto byte = static_cast<uint8_t>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", byte);
          out += buffer;
        } else {
          out.push_back(c);
        }
    }
  }
  return out + "\"";
}

std::string json_char_gbnf(const CodePointSet& set) {
  // The usual class ([0-9], [A-Za-z]) needs no escape: it is its own body.
  const bool needs_escapes = std::any_of(set.begin(), set.end(), [](const CodePointRange& range) {
    auto holds = [&](uint32_t cp) { return range.first <= cp && cp <= range.last; };
    return range.first < 0x20 || holds('"') || holds('\\') || holds('/');
  });
  if (!needs_escapes) return set.empty() ? "" : gbnf_char_class(set);
  std::vector<std::string> pieces;
  static const CodePointSet kRawChars =
      complement_set(normalize_set({{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
  CodePointSet raw = intersect_sets(set, kRawChars);
  if (!raw.empty()) pieces.push_back(gbnf_char_class(raw));
  if (set_contains(set, '"')) pieces.push_back("\"\\\\\\\"\"");
  if (set_contains(set, '\\')) pieces.push_back("\"\\\\\\\\\"");
  if (set_contains(set, '/')) pieces.push_back("\"\\\\/\"");
  static const struct {
    uint32_t cp;
    char letter;
  } kShort[] = {{0x08, 'b'}, {0x0C, 'f'}, {0x0A, 'n'}, {0x0D, 'r'}, {0x09, 't'}};
  for (const auto& entry : kShort)
    if (set_contains(set, entry.cp)) pieces.push_back(std::string("\"\\\\") + entry.letter + "\"");
  CodePointSet controls = intersect_sets(set, {{0x00, 0x1F}});
  uint32_t control_count = 0;
  for (const CodePointRange& range : controls) control_count += range.last - range.first + 1;
  if (control_count == 32) {
    pieces.push_back("\"\\\\u00\" [01] [0-9a-fA-F]");
  } else {
    for (const CodePointRange& range : controls) {
      for (uint32_t cp = range.first; cp <= range.last; ++cp) {
        bool has_short = cp == 0x08 || cp == 0x0C || cp == 0x0A || cp == 0x0D || cp == 0x09;
        if (has_short) continue;
        uint32_t low = cp & 0xF;
        std::string low_digit = low < 10 ? std::string("\"") + static_cast<char>('0' + low) + "\""
                                         : std::string("[") + static_cast<char>('a' + low - 10) +
                                               static_cast<char>('A' + low - 10) + "]";
        pieces.push_back(std::string("\"\\\\u00") + static_cast<char>('0' + (cp >> 4)) + "\" " +
                         low_digit);
      }
    }
  }
  if (pieces.empty()) return "";
  if (pieces.size() == 1) return pieces[0];
  std::string joined = "(";
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i) joined += " | ";
    joined += pieces[i];
  }
  return joined + ")";
}

Result<RegexNode> parse_ecma_regex(std::string_view pattern, const RegexLimits& limits,
                                   RegexCheck check) {
  if (pattern.size() > limits.max_pattern_length)
    return Status(ErrorCode::kLimitExceeded, "pattern is too long");
  std::u32string code_points;
  if (!utf8::decode_all(pattern, &code_points))
    return Status(ErrorCode::kSyntax, "pattern is not valid UTF-8");
  Result<RegexNode> parsed = RegexParser(std::move(code_points), limits).parse();
  if (!parsed.ok()) return parsed;
  if (expansion(*parsed) > limits.max_nested_repeat)
    return Status(ErrorCode::kLimitExceeded, "nested repeat counts multiply beyond the limit of " +
                                                 std::to_string(limits.max_nested_repeat));
  // RE2 double-checks what we parsed (it refuses counts above 1000, which
  // we handle ourselves).
  if (check == RegexCheck::kWithRe2 && !has_large_repeat(*parsed)) {
    RE2::Options options;
    options.set_log_errors(false);
    RE2 re2(regex_to_re2(*parsed), options);
    if (!re2.ok()) return Status(ErrorCode::kSyntax, "RE2 rejects the pattern: " + re2.error());
  }
  return parsed;
}

namespace {

// Narrows a fully anchored branch to decoded lengths in [min, max]: exact
// when the branch is fixed-length parts plus one repeated single character
// (`[a-z]+`, `\d{2,}`), the usual shape next to minLength/maxLength.
// Returns false when the branch cannot be narrowed exactly; sets *empty
// when no string of the branch fits.
bool narrow_branch(std::vector<RegexNode>* items, uint64_t min_length,
                   std::optional<uint64_t> max_length, bool* empty) {
  *empty = false;
  RegexNode body;
  body.kind = RegexNode::Kind::kConcat;
  body.children = *items;
  Lengths lengths = node_lengths(body);
  if (lengths.min >= min_length && (!max_length || (lengths.max && *lengths.max <= *max_length)))
    return true;
  if ((max_length && lengths.min > *max_length) || (lengths.max && *lengths.max < min_length)) {
    *empty = true;
    return true;
  }
  size_t variable = items->size();
  uint64_t fixed = 0;
  for (size_t i = 0; i < items->size(); ++i) {
    Lengths part = node_lengths((*items)[i]);
    if (part.max && *part.max == part.min) {
      fixed += part.min;
      continue;
    }
    if (variable != items->size()) return false;  // two variable parts
    variable = i;
  }
  if (variable == items->size()) return false;
  RegexNode& repeat = (*items)[variable];
  if (repeat.kind != RegexNode::Kind::kRepeat || repeat.children[0].kind != RegexNode::Kind::kChars)
    return false;
  uint64_t lo = repeat.min;
  uint64_t hi = repeat.max == kUnbounded ? UINT64_MAX : repeat.max;
  if (min_length > fixed) lo = std::max(lo, min_length - fixed);
  if (max_length) {
    if (*max_length < fixed) {
      *empty = true;
      return true;
    }
    hi = std::min(hi, *max_length - fixed);
  }
  if (lo > hi) {
    *empty = true;
    return true;
  }
  if (hi != UINT64_MAX && hi > 100000) return false;
  repeat.min = static_cast<uint32_t>(lo);
  repeat.max = hi == UINT64_MAX ? kUnbounded : static_cast<uint32_t>(hi);
  return true;
}

}  // namespace

Result<RegexTranslation> regex_to_gbnf(const RegexNode& pattern, std::string_view any_char_rule,
                                       uint64_t min_length, std::optional<uint64_t> max_length) {
  std::vector<Branch> branches;
  std::vector<RegexNode> top = pattern.kind == RegexNode::Kind::kAlternation
                                   ? pattern.children
                                   : std::vector<RegexNode>{pattern};
  for (const RegexNode& option : top) {
    Status status = split_branches(as_items(option), false, false, &branches);
    if (!status.ok()) return status;
  }
  bool bounded = min_length > 0 || max_length.has_value();
  RegexTranslation result;
  result.min_length = UINT64_MAX;
  result.max_length = 0;
  std::vector<std::string> options;
  std::string any = std::string(any_char_rule) + "*";
  for (Branch& branch : branches) {
    if (bounded) {
      bool anchored = branch.anchored_start && branch.anchored_end;
      if (!anchored) {
        RegexNode body;
        body.kind = RegexNode::Kind::kConcat;
        body.children = branch.items;
        if (max_length || node_lengths(body).min < min_length)
          return Status(ErrorCode::kUnsupported,
                        "length bounds on a pattern that is not anchored at both ends");
      } else {
        bool empty = false;
        if (!narrow_branch(&branch.items, min_length, max_length, &empty))
          return Status(ErrorCode::kUnsupported,
                        "length bounds on a pattern with more than one variable-length part");
        if (empty) continue;
      }
    }
    RegexNode body;
    body.kind = RegexNode::Kind::kConcat;
    body.children = branch.items;
    std::string text = node_to_gbnf(body);
    if (text == kNever) continue;
    Lengths lengths = node_lengths(body);
    if (!branch.anchored_start || !branch.anchored_end) lengths.max.reset();
    result.min_length = std::min(result.min_length, lengths.min);
    if (result.max_length && lengths.max)
      result.max_length = std::max(*result.max_length, *lengths.max);
    else
      result.max_length.reset();
    std::string joined;
    if (!branch.anchored_start) joined = any;
    if (!text.empty()) joined += (joined.empty() ? "" : " ") + parenthesize(text);
    if (!branch.anchored_end && !(joined == any && !branch.anchored_start))
      joined += (joined.empty() ? "" : " ") + any;
    options.push_back(joined);
  }
  if (options.empty()) return Status(ErrorCode::kUnsupported, "pattern matches no string");
  result.gbnf = join_alternatives(options);
  return result;
}

Result<RegexTranslation> ecma_regex_to_gbnf(std::string_view pattern,
                                            std::string_view any_char_rule,
                                            const RegexLimits& limits, uint64_t min_length,
                                            std::optional<uint64_t> max_length) {
  Result<RegexNode> parsed = parse_ecma_regex(pattern, limits);
  if (!parsed.ok()) return parsed.status();
  return regex_to_gbnf(*parsed, any_char_rule, min_length, max_length);
}

Result<std::vector<RegexBranch>> regex_branches(const RegexNode& pattern) {
  std::vector<Branch> branches;
  std::vector<RegexNode> top = pattern.kind == RegexNode::Kind::kAlternation
                                   ? pattern.children
                                   : std::vector<RegexNode>{pattern};
  for (const RegexNode& option : top) {
    Status status = split_branches(as_items(option), false, false, &branches);
    if (!status.ok()) return status;
  }
  std::vector<RegexBranch> out;
  for (Branch& branch : branches) {
    RegexBranch b;
    b.anchored_start = branch.anchored_start;
    b.anchored_end = branch.anchored_end;
    b.body.kind = RegexNode::Kind::kConcat;
    b.body.children = std::move(branch.items);
    out.push_back(std::move(b));
  }
  return out;
}

std::string regex_to_re2(const RegexNode& pattern) {
  return node_to_re2(pattern);
}

namespace {

// The RE2 that ecma_regex_search runs, or why there is none.
Status compile_for_search(std::string_view pattern, std::unique_ptr<RE2>* out) {
  Result<RegexNode> parsed = parse_ecma_regex(pattern);
  if (!parsed.ok()) return parsed.status();
  if (has_large_repeat(*parsed))
    return Status(ErrorCode::kUnsupported, "pattern too large to evaluate");
  RE2::Options options;
  options.set_log_errors(false);
  auto re2 = std::make_unique<RE2>(regex_to_re2(*parsed), options);
  if (!re2->ok()) return Status(ErrorCode::kUnsupported, "RE2: " + re2->error());
  *out = std::move(re2);
  return Status();
}

bool partial_match(const RE2& re2, std::string_view text) {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re2);
}

}  // namespace

Result<bool> ecma_regex_search(std::string_view pattern, std::string_view text) {
  std::unique_ptr<RE2> re2;
  Status compiled = compile_for_search(pattern, &re2);
  if (!compiled.ok()) return compiled;
  return partial_match(*re2, text);
}

struct EcmaRegexSearcher::Compiled {
  Status status;
  std::unique_ptr<RE2> re2;  // when status is ok
};

EcmaRegexSearcher::EcmaRegexSearcher() = default;
EcmaRegexSearcher::~EcmaRegexSearcher() = default;

Result<bool> EcmaRegexSearcher::search(std::string_view pattern, std::string_view text) {
  auto it = compiled_.find(pattern);
  if (it == compiled_.end()) {
    auto compiled = std::make_unique<Compiled>();
    compiled->status = compile_for_search(pattern, &compiled->re2);
    it = compiled_.emplace(std::string(pattern), std::move(compiled)).first;
  }
  if (!it->second->status.ok()) return it->second->status;
  return partial_match(*it->second->re2, text);
}

}  // namespace grammask::internal
