// ECMA-262 pattern AST -> GBNF for JSON string bodies.
#include "regex/regex_to_gbnf.h"

#include <algorithm>

#include "ir/gbnf_writer.h"

namespace grammask::internal {
namespace {

bool is_lookahead(const RegexNode& node) {
  return node.kind == RegexNode::Kind::kLookahead ||
         node.kind == RegexNode::Kind::kNegativeLookahead;
}

// Anchors and lookaheads, which only the edges of a branch may hold.
bool contains_anchor(const RegexNode& node) {
  if (node.kind == RegexNode::Kind::kLineStart || node.kind == RegexNode::Kind::kLineEnd ||
      is_lookahead(node))
    return true;
  for (const RegexNode& child : node.children)
    if (contains_anchor(child)) return true;
  return false;
}

// One top-level way to match: a body with or without anchors on each side.
struct Branch {
  bool anchored_start = false;
  bool anchored_end = false;
  std::vector<RegexNode> items;  // concatenated
  std::vector<RegexNode> lookaheads;
  std::vector<RegexNode> followed_by;  // see RegexBranch
};

std::vector<RegexNode> as_items(const RegexNode& node) {
  if (node.kind == RegexNode::Kind::kConcat) return node.children;
  if (node.kind == RegexNode::Kind::kEmpty) return {};
  return {node};
}

// Moves anchors at the edges of a branch into its flags; distributes
// alternations at the edges that contain anchors (`(^a|b)c`). Anchors left
// inside the branch are refused, unless `inner_anchors` (then they stay in
// its items, for the automata of char_dfa.h).
Status split_branches(std::vector<RegexNode> items, bool anchored_start, bool anchored_end,
                      std::vector<RegexNode> lookaheads, bool inner_anchors,
                      std::vector<Branch>* out) {
  if (out->size() > 256) return Status(ErrorCode::kLimitExceeded, "too many anchored branches");
  // ^, then lookaheads (and more ^, which change nothing there).
  size_t front = 0;
  while (front < items.size()) {
    if (items[front].kind == RegexNode::Kind::kLineStart) {
      anchored_start = true;
    } else if (is_lookahead(items[front]) && anchored_start) {
      if (has_lookahead(items[front].children[0]))
        return Status(ErrorCode::kUnsupported, "a lookahead inside a lookahead is not supported");
      lookaheads.push_back(std::move(items[front]));
    } else {
      break;
    }
    ++front;
  }
  items.erase(items.begin(), items.begin() + static_cast<long>(front));
  while (!items.empty() && items.back().kind == RegexNode::Kind::kLineEnd) {
    anchored_end = true;
    items.pop_back();
  }
  // A lookahead that ends a branch not anchored at its end (`x(?=\.json)`).
  std::vector<RegexNode> followed_by;
  if (inner_anchors && !anchored_end && !items.empty() &&
      items.back().kind == RegexNode::Kind::kLookahead) {
    if (has_lookahead(items.back().children[0]))
      return Status(ErrorCode::kUnsupported, "a lookahead inside a lookahead is not supported");
    followed_by.push_back(std::move(items.back()));
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
        Status status = split_branches(std::move(expanded), anchored_start, anchored_end,
                                       lookaheads, inner_anchors, out);
        if (!status.ok()) return status;
      }
      return {};
    }
    if (has_lookahead(items[i]))
      return Status(ErrorCode::kUnsupported,
                    "lookahead assertions are supported only right after a leading ^");
    if (!inner_anchors)
      return Status(ErrorCode::kUnsupported, "anchors inside a pattern are not supported");
  }
  out->push_back(Branch{anchored_start, anchored_end, std::move(items), std::move(lookaheads),
                        std::move(followed_by)});
  return {};
}

// The branches of a whole pattern: each top-level alternative, split as
// split_branches() does.
Status split_pattern(const RegexNode& pattern, bool inner_anchors, std::vector<Branch>* out) {
  const std::vector<RegexNode> top = pattern.kind == RegexNode::Kind::kAlternation
                                         ? pattern.children
                                         : std::vector<RegexNode>{pattern};
  for (const RegexNode& option : top) {
    Status status = split_branches(as_items(option), false, false, {}, inner_anchors, out);
    if (!status.ok()) return status;
  }
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
    case RegexNode::Kind::kLookahead:  // (split_branches refuses them here)
    case RegexNode::Kind::kNegativeLookahead:
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
    case RegexNode::Kind::kLookahead:
    case RegexNode::Kind::kNegativeLookahead:
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

}  // namespace

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
    // The others \u00XY, one piece per X: the digits Y as one class (a
    // piece per character made every automaton state's body several
    // times larger).
    std::string low_digits[2];
    for (const CodePointRange& range : controls) {
      for (uint32_t cp = range.first; cp <= range.last; ++cp) {
        bool has_short = cp == 0x08 || cp == 0x0C || cp == 0x0A || cp == 0x0D || cp == 0x09;
        if (has_short) continue;
        const uint32_t low = cp & 0xF;
        std::string& digits = low_digits[cp >> 4];
        if (low < 10) {
          digits += static_cast<char>('0' + low);
        } else {
          digits += static_cast<char>('a' + low - 10);
          digits += static_cast<char>('A' + low - 10);
        }
      }
    }
    for (int high = 0; high < 2; ++high) {
      const std::string& digits = low_digits[high];
      if (digits.empty()) continue;
      const std::string low_digit = digits.size() == 1 ? "\"" + digits + "\"" : "[" + digits + "]";
      pieces.push_back(std::string("\"\\\\u00") + static_cast<char>('0' + high) + "\" " +
                       low_digit);
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
  if (Status status = split_pattern(pattern, false, &branches); !status.ok()) return status;
  for (const Branch& branch : branches)
    if (!branch.lookaheads.empty())
      return Status(ErrorCode::kUnsupported, "lookaheads need the pattern's automaton");
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

bool has_inner_anchor(const RegexNode& pattern) {
  Result<std::vector<RegexBranch>> branches = regex_branches(pattern);
  if (!branches.ok()) return false;
  for (const RegexBranch& branch : *branches)
    if (contains_anchor(branch.body)) return true;
  return false;
}

Result<std::vector<RegexBranch>> regex_branches(const RegexNode& pattern) {
  std::vector<Branch> branches;
  if (Status status = split_pattern(pattern, true, &branches); !status.ok()) return status;
  std::vector<RegexBranch> out;
  for (Branch& branch : branches) {
    RegexBranch b;
    b.anchored_start = branch.anchored_start;
    b.anchored_end = branch.anchored_end;
    b.lookaheads = std::move(branch.lookaheads);
    b.followed_by = std::move(branch.followed_by);
    b.body.kind = RegexNode::Kind::kConcat;
    b.body.children = std::move(branch.items);
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace grammask::internal
