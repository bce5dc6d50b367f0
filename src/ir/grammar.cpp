// The grammar IR: factories, equality, validation and the GBNF printer.
#include "grammask/grammar.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <utility>

#include "base/utf8.h"
#include "ir/gbnf_writer.h"

namespace grammask {

// --- factories ----------------------------------------------------------------

Expr Expr::sequence(std::vector<Expr> items) {
  Expr e;
  e.kind = Kind::kSequence;
  e.children = std::move(items);
  return e;
}

Expr Expr::alternation(std::vector<Expr> options) {
  Expr e;
  e.kind = Kind::kAlternation;
  e.children = std::move(options);
  return e;
}

Expr Expr::literal_text(std::u32string code_points) {
  Expr e;
  e.kind = Kind::kLiteral;
  e.literal = std::move(code_points);
  return e;
}

Expr Expr::char_class(std::vector<CodePointRange> ranges, bool negated) {
  Expr e;
  e.kind = Kind::kCharClass;
  e.ranges = std::move(ranges);
  e.negated = negated;
  return e;
}

Expr Expr::any_char() {
  Expr e;
  e.kind = Kind::kAnyChar;
  return e;
}

Expr Expr::rule_ref(uint32_t rule_index) {
  Expr e;
  e.kind = Kind::kRuleRef;
  e.rule = rule_index;
  return e;
}

Expr Expr::repeat(Expr item, uint32_t min, uint32_t max) {
  Expr e;
  e.kind = Kind::kRepeat;
  e.min = min;
  e.max = max;
  e.children.push_back(std::move(item));
  return e;
}

Expr Expr::token_id(uint32_t id, bool negated) {
  Expr e;
  e.kind = Kind::kToken;
  e.token = id;
  e.negated = negated;
  return e;
}

Expr Expr::token_text(std::u32string text, bool negated) {
  Expr e;
  e.kind = Kind::kToken;
  e.literal = std::move(text);
  e.negated = negated;
  return e;
}

Expr Expr::tokens_except(std::vector<Expr> items) {
  Expr e;
  e.kind = Kind::kToken;
  e.negated = true;
  e.token_set = true;
  e.children = std::move(items);
  return e;
}

Expr Expr::regex(std::u32string pattern, bool lazy) {
  Expr e;
  e.kind = Kind::kRegex;
  e.literal = std::move(pattern);
  e.lazy = lazy;
  return e;
}

Expr Expr::substring(std::u32string text) {
  Expr e;
  e.kind = Kind::kSubstring;
  e.literal = std::move(text);
  return e;
}

Expr Expr::text_excluding(std::vector<std::u32string> strings) {
  Expr e;
  e.kind = Kind::kTextExcluding;
  e.children.reserve(strings.size());
  for (std::u32string& s : strings) e.children.push_back(literal_text(std::move(s)));
  return e;
}

Expr Expr::any_order(Expr separator, std::vector<Expr> members) {
  Expr e;
  e.kind = Kind::kAnyOrder;
  e.children.reserve(members.size() + 1);
  e.children.push_back(std::move(separator));
  for (Expr& member : members) e.children.push_back(std::move(member));
  return e;
}

// --- equality -----------------------------------------------------------------

bool operator==(const Expr& a, const Expr& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Expr::Kind::kSequence:
    case Expr::Kind::kAlternation:
      return a.children == b.children;
    case Expr::Kind::kLiteral:
      return a.literal == b.literal;
    case Expr::Kind::kCharClass:
      return a.negated == b.negated && a.ranges == b.ranges;
    case Expr::Kind::kAnyChar:
      return true;
    case Expr::Kind::kRuleRef:
      return a.rule == b.rule;
    case Expr::Kind::kRepeat:
      return a.min == b.min && a.max == b.max && a.children == b.children;
    case Expr::Kind::kToken:
      return a.negated == b.negated && a.token_set == b.token_set && a.token == b.token &&
             a.literal == b.literal && a.children == b.children;
    case Expr::Kind::kRegex:
      return a.lazy == b.lazy && a.literal == b.literal;
    case Expr::Kind::kSubstring:
      return a.literal == b.literal;
    case Expr::Kind::kTextExcluding:
    case Expr::Kind::kAnyOrder:
      return a.children == b.children;
  }
  return false;
}

bool operator==(const Grammar& a, const Grammar& b) {
  const auto& x = a.rules();
  const auto& y = b.rules();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].name != y[i].name || x[i].body != y[i].body) return false;
  }
  return true;
}

bool is_valid_rule_name(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (const char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) return false;
  }
  return true;
}

// --- rules --------------------------------------------------------------------

int Grammar::find_rule(std::string_view name) const noexcept {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

uint32_t Grammar::add_rule(std::string name, Expr body, SourceLocation where) {
  rules_.push_back(Rule{std::move(name), std::move(body), where});
  return static_cast<uint32_t>(rules_.size() - 1);
}

// --- validation ---------------------------------------------------------------

namespace {

std::string hex_code_point(uint32_t code_point) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "U+%04X", static_cast<unsigned>(code_point));
  return buffer;
}

Status invalid(const Rule& rule, const Expr& expr, const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, "rule '" + rule.name + "': " + what, expr.where);
}

Status check_scalar_values(const Rule& rule, const Expr& expr, const std::u32string& text,
                           const char* what) {
  for (const char32_t c : text) {
    if (!utf8::is_scalar_value(c)) {
      return invalid(rule, expr,
                     std::string(what) + " holds " + hex_code_point(c) + ", not a character");
    }
  }
  return Status();
}

Status validate_expr(const Expr& expr, const Rule& rule, size_t rule_count) {
  switch (expr.kind) {
    case Expr::Kind::kSequence:
      break;
    case Expr::Kind::kAlternation:
      if (expr.children.empty()) return invalid(rule, expr, "alternation without options");
      break;
    case Expr::Kind::kLiteral:
      if (expr.literal.empty()) return invalid(rule, expr, "empty literal");
      if (Status s = check_scalar_values(rule, expr, expr.literal, "literal"); !s.ok()) return s;
      break;
    case Expr::Kind::kCharClass:
      for (const CodePointRange& range : expr.ranges) {
        if (range.first > range.last || range.last > kMaxCodePoint) {
          return invalid(
              rule, expr,
              "bad class range " + hex_code_point(range.first) + "-" + hex_code_point(range.last));
        }
      }
      break;
    case Expr::Kind::kAnyChar:
      break;
    case Expr::Kind::kRuleRef:
      if (expr.rule >= rule_count) {
        return invalid(rule, expr,
                       "reference to rule index " + std::to_string(expr.rule) + " out of range (" +
                           std::to_string(rule_count) + " rules)");
      }
      break;
    case Expr::Kind::kRepeat:
      if (expr.children.size() != 1) return invalid(rule, expr, "repeat needs exactly one child");
      if (expr.min > expr.max) {
        return invalid(rule, expr,
                       "repeat minimum " + std::to_string(expr.min) + " above maximum " +
                           std::to_string(expr.max));
      }
      break;
    case Expr::Kind::kToken:
      if (expr.token_set) {
        if (!expr.negated) return invalid(rule, expr, "a token set must be negated");
        for (const Expr& child : expr.children) {
          if (child.kind != Expr::Kind::kToken || child.negated || child.token_set) {
            return invalid(rule, expr, "a token set holds only plain token items");
          }
        }
      } else if (!expr.children.empty()) {
        return invalid(rule, expr, "a token item has no children unless it is a set");
      }
      if (!expr.literal.empty()) {
        const std::u32string& t = expr.literal;
        const bool bracketed = t.size() >= 3 && t.front() == U'<' && t.back() == U'>' &&
                               t.find(U'>') == t.size() - 1 && t.find(U'\n') == t.npos &&
                               t.find(U'\r') == t.npos;
        if (!bracketed) {
          return invalid(rule, expr,
                         "token text must be '<', at least one character other than '>' and "
                         "line breaks, then '>'");
        }
        // GBNF reads "<[" as the start of a token id: such a text would not
        // print to GBNF that parses back to it.
        if (t[1] == U'[') {
          return invalid(rule, expr,
                         "token text cannot start with '<[' (GBNF writes '<[id]>' for a token id)");
        }
        if (Status s = check_scalar_values(rule, expr, t, "token text"); !s.ok()) return s;
      }
      break;
    case Expr::Kind::kRegex:
      if (Status s = check_scalar_values(rule, expr, expr.literal, "pattern"); !s.ok()) return s;
      break;
    case Expr::Kind::kSubstring:
      if (Status s = check_scalar_values(rule, expr, expr.literal, "substring text"); !s.ok())
        return s;
      break;
    case Expr::Kind::kTextExcluding:
      if (expr.children.empty()) return invalid(rule, expr, "exclusion without strings");
      for (const Expr& child : expr.children) {
        if (child.kind != Expr::Kind::kLiteral) {
          return invalid(rule, expr, "an exclusion holds only literals");
        }
      }
      break;
    case Expr::Kind::kAnyOrder:
      if (expr.children.size() < 2)
        return invalid(rule, expr, "AnyOrder needs a separator and at least one member");
      break;
  }
  for (const Expr& child : expr.children) {
    Status status = validate_expr(child, rule, rule_count);
    if (!status.ok()) return status;
  }
  return Status();
}

}  // namespace

Status Grammar::validate() const {
  std::unordered_map<std::string_view, size_t> seen;
  for (size_t i = 0; i < rules_.size(); ++i) {
    const Rule& rule = rules_[i];
    if (rule.name.empty()) {
      return Status(ErrorCode::kInvalidArgument, "rule " + std::to_string(i) + " has an empty name",
                    rule.where);
    }
    auto [it, inserted] = seen.emplace(rule.name, i);
    if (!inserted) {
      return Status(ErrorCode::kInvalidArgument,
                    "duplicate rule name '" + rule.name + "' (rules " + std::to_string(it->second) +
                        " and " + std::to_string(i) + ")",
                    rule.where);
    }
  }
  for (const Rule& rule : rules_) {
    Status status = validate_expr(rule.body, rule, rules_.size());
    if (!status.ok()) return status;
  }
  return Status();
}

// --- printer ------------------------------------------------------------------

namespace {

// Where an expression is printed; decides whether it needs parentheses.
enum class Position {
  kRuleBody,      // the whole right-hand side of a rule
  kAlternative,   // one option of an alternation
  kSequenceItem,  // one item of a sequence
  kRepeated,      // the operand of * + ? {m,n}
};

void print_expr(const Expr& expr, const Grammar& grammar, Position position, std::string& out) {
  switch (expr.kind) {
    case Expr::Kind::kSequence: {
      if (expr.children.empty()) {
        out += "\"\"";
        return;
      }
      // A nested sequence keeps its parentheses so that it parses back as a
      // nested sequence rather than being flattened into its parent.
      const bool parenthesize =
          position == Position::kSequenceItem || position == Position::kRepeated;
      if (parenthesize) out += '(';
      for (size_t i = 0; i < expr.children.size(); ++i) {
        if (i > 0) out += ' ';
        print_expr(expr.children[i], grammar, Position::kSequenceItem, out);
      }
      if (parenthesize) out += ')';
      return;
    }
    case Expr::Kind::kAlternation: {
      const bool parenthesize = position != Position::kRuleBody;
      if (parenthesize) out += '(';
      for (size_t i = 0; i < expr.children.size(); ++i) {
        if (i > 0) out += " | ";
        print_expr(expr.children[i], grammar, Position::kAlternative, out);
      }
      if (parenthesize) out += ')';
      return;
    }
    case Expr::Kind::kLiteral:
      internal::append_gbnf_literal(out, expr.literal, internal::GbnfEscapes::kReadable);
      return;
    case Expr::Kind::kCharClass:
      internal::append_gbnf_class(out, expr.ranges, expr.negated, internal::GbnfEscapes::kReadable);
      return;
    case Expr::Kind::kAnyChar:
      out += '.';
      return;
    case Expr::Kind::kRuleRef:
      if (expr.rule < grammar.rules().size()) {
        out += grammar.rules()[expr.rule].name;
      } else {
        out += "<undefined-rule-" + std::to_string(expr.rule) + ">";
      }
      return;
    case Expr::Kind::kRepeat:
      if (expr.children.empty()) {
        out += "<repeat-without-item>";
        return;
      }
      // An operand that is itself a repeat needs no parentheses: `x*?`
      // parses as (x*)?.
      print_expr(expr.children[0], grammar, Position::kRepeated, out);
      internal::append_repeat_suffix(out, expr.min, expr.max);
      return;
    case Expr::Kind::kToken:
      if (expr.negated) out += '!';
      if (expr.token_set) {
        out += '(';
        for (size_t i = 0; i < expr.children.size(); ++i) {
          if (i > 0) out += " | ";
          print_expr(expr.children[i], grammar, Position::kAlternative, out);
        }
        out += ')';
        return;
      }
      if (expr.literal.empty()) {
        out += "<[" + std::to_string(expr.token) + "]>";
      } else {
        out += utf8::encode(expr.literal);
      }
      return;
    case Expr::Kind::kRegex:
      out += expr.lazy ? "LazyRegex(" : "Regex(";
      internal::append_gbnf_literal(out, expr.literal, internal::GbnfEscapes::kReadable);
      out += ')';
      return;
    case Expr::Kind::kSubstring:
      out += "Substring(";
      internal::append_gbnf_literal(out, expr.literal, internal::GbnfEscapes::kReadable);
      out += ')';
      return;
    case Expr::Kind::kTextExcluding:
      out += "TextExcluding(";
      for (size_t i = 0; i < expr.children.size(); ++i) {
        if (i > 0) out += ", ";
        internal::append_gbnf_literal(out, expr.children[i].literal,
                                      internal::GbnfEscapes::kReadable);
      }
      out += ')';
      return;
    case Expr::Kind::kAnyOrder:
      // (Arguments end at ',' or ')', so each prints as a rule body.)
      out += "AnyOrder(";
      for (size_t i = 0; i < expr.children.size(); ++i) {
        if (i > 0) out += ", ";
        print_expr(expr.children[i], grammar, Position::kRuleBody, out);
      }
      out += ')';
      return;
  }
}

}  // namespace

std::string to_gbnf(const Expr& expr, const Grammar& grammar) {
  std::string out;
  print_expr(expr, grammar, Position::kRuleBody, out);
  return out;
}

std::string Grammar::to_gbnf() const {
  std::string out;
  for (const Rule& rule : rules_) {
    out += rule.name;
    out += " ::= ";
    print_expr(rule.body, *this, Position::kRuleBody, out);
    out += '\n';
  }
  return out;
}

}  // namespace grammask
