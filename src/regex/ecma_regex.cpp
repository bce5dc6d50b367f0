#include "regex/ecma_regex.h"

#include <re2/re2.h>

#include <algorithm>
#include <string>

#include "base/utf8.h"
#include "regex/re2_bridge.h"

namespace grammask::internal {
namespace {

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

CodePointSet single(uint32_t cp) {
  return {{cp, cp}};
}
CodePointSet range_set(uint32_t first, uint32_t last) {
  return normalize_set({{first, last}});
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
        if (peek(1) == '?' && (peek(2) == '=' || peek(2) == '!')) {
          *quantifiable = false;
          return parse_lookahead(out, depth);
        }
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
      } else if (peek(1) == '<') {
        return error(ErrorCode::kUnsupported, "lookbehind assertions are not supported");
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

  // (?=...) or (?!...), pos_ at the '('.
  Status parse_lookahead(RegexNode* out, uint32_t depth) {
    const bool negative = peek(2) == '!';
    pos_ += 3;
    RegexNode body;
    Status status = parse_disjunction(&body, depth + 1);
    if (!status.ok()) return status;
    if (peek() != ')') return error(ErrorCode::kSyntax, "missing ')'");
    ++pos_;
    out->kind = negative ? RegexNode::Kind::kNegativeLookahead : RegexNode::Kind::kLookahead;
    out->children.push_back(std::move(body));
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
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
          return error(ErrorCode::kUnsupported,
                       "unknown escape \\" + std::string(1, static_cast<char>(c)));
        // An identity escape of anything else, `\_` included: ECMA-262 without
        // the u flag (Annex B) and Python's re read it as the character.
        *code_point = c;
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

// `node` with each lookahead made empty; the lookaheads' bodies (without
// their own lookaheads) are appended to `bodies`.
RegexNode without_lookaheads(const RegexNode& node, std::vector<RegexNode>* bodies) {
  if (node.kind == RegexNode::Kind::kLookahead ||
      node.kind == RegexNode::Kind::kNegativeLookahead) {
    bodies->push_back(without_lookaheads(node.children[0], bodies));
    return RegexNode{};
  }
  RegexNode copy = node;
  for (RegexNode& child : copy.children) child = without_lookaheads(child, bodies);
  return copy;
}

}  // namespace

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
    // RE2 has no lookaheads: it checks the pattern without them and each
    // lookahead's body on its own.
    std::vector<RegexNode> parts;
    parts.push_back(without_lookaheads(*parsed, &parts));
    for (const RegexNode& part : parts) {
      RE2::Options options;
      options.set_log_errors(false);
      RE2 re2(regex_to_re2(part), options);
      if (!re2.ok()) return Status(ErrorCode::kSyntax, "RE2 rejects the pattern: " + re2.error());
    }
  }
  return parsed;
}

bool has_lookahead(const RegexNode& node) {
  if (node.kind == RegexNode::Kind::kLookahead || node.kind == RegexNode::Kind::kNegativeLookahead)
    return true;
  for (const RegexNode& child : node.children)
    if (has_lookahead(child)) return true;
  return false;
}

}  // namespace grammask::internal
