#include "grammask/recognizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "automata/inlining.h"
#include "automata/lowering_impl.h"
#include "counted_chain.h"
#include "earley/earley_engine.h"
#include "earley/recognizer_access.h"
#include "grammask/gbnf.h"
#include "mask/text_closure.h"
#include "vocab/text_slice.h"

namespace grammask {
namespace {

enum class Verdict { kAccept, kPrefix, kReject };

Recognizer make(const std::string& gbnf, std::string_view root = "root") {
  GbnfOptions options;
  options.root = root;
  auto grammar = parse_gbnf(gbnf, options);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string() << "\n" << gbnf;
  if (!grammar.ok()) std::abort();
  auto r = Recognizer::create(*grammar, root);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) std::abort();
  return std::move(r).value();
}

Verdict judge(Recognizer& r, std::string_view input) {
  r.reset();
  if (r.push_bytes(input) != input.size()) return Verdict::kReject;
  return r.is_accepting() ? Verdict::kAccept : Verdict::kPrefix;
}

struct Case {
  const char* grammar;
  std::vector<std::pair<std::string, Verdict>> inputs;
};

constexpr Verdict A = Verdict::kAccept;
constexpr Verdict P = Verdict::kPrefix;
constexpr Verdict R = Verdict::kReject;

void check_table(const Case& c) {
  Recognizer r = make(c.grammar);
  for (const auto& [input, expected] : c.inputs) {
    EXPECT_EQ(static_cast<int>(judge(r, input)), static_cast<int>(expected))
        << "grammar:\n"
        << c.grammar << "\ninput: '" << input << "'";
  }
}

TEST(Recognizer, MovedFromIsEmptyAndRefusesInputUntilAssigned) {
  Recognizer original = make(R"(root ::= "ab")");
  ASSERT_TRUE(original.push_byte('a'));
  Recognizer moved = std::move(original);
  EXPECT_EQ(moved.size(), 1u);
  // The moved-from object: no state, every call safe.
  EXPECT_FALSE(original.push_byte('b'));  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(original.push_bytes("ab"), 0u);
  EXPECT_EQ(original.size(), 0u);
  EXPECT_FALSE(original.is_accepting());
  EXPECT_FALSE(original.can_continue());
  EXPECT_FALSE(original.allows_byte('a'));
  EXPECT_FALSE(original.work_limit_hit());
  original.truncate(0);
  original.reset();
  Recognizer copy = original;
  EXPECT_EQ(copy.size(), 0u);
  EXPECT_FALSE(copy.push_byte('a'));
  // Assigning makes it usable again.
  original = moved;
  EXPECT_TRUE(original.push_byte('b'));
  EXPECT_TRUE(original.is_accepting());
  EXPECT_EQ(moved.size(), 1u);
}

TEST(Recognizer, LiteralsAndSequences) {
  check_table({R"(root ::= "ab" "c")", {{"abc", A}, {"ab", P}, {"", P}, {"abd", R}, {"abcc", R}}});
  check_table({R"(root ::= "")", {{"", A}, {"a", R}}});
}

TEST(Recognizer, AlternativesAndEmpty) {
  check_table({"root ::= \"a\" | \"bc\" | ", {{"", A}, {"a", A}, {"b", P}, {"bc", A}, {"c", R}}});
  check_table({"root ::= \"x\" ( | \"y\") \"z\"", {{"xz", A}, {"xyz", A}, {"xy", P}, {"xzz", R}}});
}

TEST(Recognizer, CharacterClasses) {
  check_table({"root ::= [a-c0-9]+", {{"a0b9c", A}, {"d", R}, {"", P}}});
  check_table({"root ::= [^a-c]", {{"d", A}, {"b", R}, {"\xC3\xA9", A}, {"\xC3", P}}});
  check_table({"root ::= .", {{"x", A}, {"\xF0\x9F\x8E\x89", A}, {"\xF0\x9F", P}, {"\xFF", R}}});
}

TEST(Recognizer, Repetitions) {
  check_table({R"(root ::= "a"{2,3})", {{"a", P}, {"aa", A}, {"aaa", A}, {"aaaa", R}}});
  check_table({R"(root ::= "a"{2})", {{"aa", A}, {"aaa", R}}});
  check_table({R"(root ::= "a"{2,} "b")", {{"aab", A}, {"ab", R}, {"aaaaab", A}}});
  check_table({R"(root ::= "a"{0,2} "b")", {{"b", A}, {"ab", A}, {"aab", A}, {"aaab", R}}});
  check_table(
      {R"(root ::= ("ab")? "c"*)", {{"", A}, {"ab", A}, {"abccc", A}, {"ccc", A}, {"a", P}}});
}

TEST(Recognizer, LeftRecursion) {
  const char* g = R"(
root ::= expr
expr ::= expr "+" term | term
term ::= term "*" num | num
num ::= [0-9]+
)";
  check_table({g, {{"1", A}, {"1+2*3+4", A}, {"1+", P}, {"+1", R}, {"1++2", R}, {"12*34", A}}});
}

size_t largest_earley_set(const Recognizer& r) {
  const auto& engine = grammask::internal::RecognizerAccess::engine(r);
  size_t largest = 0;
  for (size_t k = 0; k <= engine.size(); ++k)
    largest = std::max<size_t>(largest, engine.set_end(k) - engine.set_begin(k));
  return largest;
}

TEST(Recognizer, RightRecursionStaysSmall) {
  Recognizer r = make("root ::= \"a\" root | \"\"");
  const std::string input(20000, 'a');
  ASSERT_EQ(r.push_bytes(input), input.size());
  EXPECT_TRUE(r.is_accepting());
  // Leo's optimization keeps every Earley set constant-size.
  EXPECT_LE(largest_earley_set(r), 8u);
}

TEST(Recognizer, MutualRightRecursionStaysSmall) {
  Recognizer r = make("root ::= a\na ::= \"x\" b | \"x\"\nb ::= \"y\" a");
  std::string input;
  for (int i = 0; i < 5000; ++i) input += "xy";
  input += "x";
  ASSERT_EQ(r.push_bytes(input), input.size());
  EXPECT_TRUE(r.is_accepting());
  EXPECT_LE(largest_earley_set(r), 8u);
}

TEST(Recognizer, AmbiguousGrammars) {
  check_table({R"(root ::= "a"* "a"*)", {{"", A}, {"aaaa", A}, {"aab", R}}});
  check_table({"root ::= as as\nas ::= \"a\"*", {{"", A}, {"aaa", A}, {"ab", R}}});
  check_table({"root ::= e\ne ::= e e | \"a\" | \"(\" e \")\"",
               {{"aaa", A}, {"(a)(aa)", A}, {"(", P}, {")", R}}});
  // Large ambiguous input: each set stays small because the regular parts
  // are determinized.
  Recognizer r = make("root ::= as as\nas ::= \"a\"*");
  const std::string input(100000, 'a');
  EXPECT_EQ(r.push_bytes(input), input.size());
  EXPECT_TRUE(r.is_accepting());
}

TEST(Recognizer, LongOptionalChain) {
  std::string g = "root ::=";
  for (int i = 0; i < 50; ++i) g += " x?";
  g += "\nx ::= \"x\"";
  Recognizer r = make(g);
  EXPECT_EQ(judge(r, std::string(50, 'x')), A);
  EXPECT_EQ(judge(r, std::string(51, 'x')), R);
  EXPECT_EQ(judge(r, ""), A);
}

TEST(Recognizer, LargeBounds) {
  Recognizer r = make("root ::= \"x\"{0,5000} \"y\"");
  EXPECT_EQ(judge(r, std::string(5000, 'x') + "y"), A);
  EXPECT_EQ(judge(r, std::string(5001, 'x') + "y"), R);
  Recognizer group = make("root ::= (\"ab\" [0-9]){3,4000}");
  std::string in;
  for (int i = 0; i < 4000; ++i) in += "ab7";
  EXPECT_EQ(judge(group, in), A);
  EXPECT_EQ(judge(group, in + "a"), R);
  EXPECT_EQ(judge(group, "ab1ab2"), P);
}

TEST(Recognizer, UnicodeAndPartialCodePoints) {
  Recognizer r = make("root ::= [ぁ-ゟ]+ \"。\"");
  EXPECT_EQ(judge(r, "ひらがな。"), A);
  EXPECT_EQ(judge(r, "ひ"), P);
  // The first two bytes of "ら" (E3 82 89) are a valid prefix.
  EXPECT_EQ(judge(r, "ひ\xE3\x82"), P);
  EXPECT_EQ(judge(r, "ひ\xE3\x83"), R);  // E3 83 xx is katakana, outside the class
  EXPECT_EQ(judge(r, "カ"), R);
  Recognizer emoji = make("root ::= \"🎉\"");
  EXPECT_EQ(judge(emoji, "\xF0\x9F"), P);
  EXPECT_EQ(judge(emoji, "🎉"), A);
}

TEST(Recognizer, NeverAcceptsSurrogatesOrOverlongs) {
  Recognizer r = make("root ::= .*");
  EXPECT_EQ(judge(r, "\xED\xA0\x80"), R);      // U+D800 encoded
  EXPECT_EQ(judge(r, "\xC0\xAF"), R);          // overlong '/'
  EXPECT_EQ(judge(r, "\xF4\x90\x80\x80"), R);  // above U+10FFFF
  EXPECT_EQ(judge(r, "\xED\x9F\xBF"), A);      // U+D7FF
}

TEST(Recognizer, DeepNesting) {
  Recognizer r = make("root ::= \"(\" root \")\" | \"x\"");
  std::string in = std::string(3000, '(') + "x" + std::string(3000, ')');
  EXPECT_EQ(judge(r, in), A);
  EXPECT_EQ(judge(r, in.substr(0, 4000)), P);
  EXPECT_EQ(judge(r, in + ")"), R);
}

TEST(Recognizer, OtherStartRule) {
  Recognizer r = make("root ::= \"a\"\nother ::= \"b\"+", "other");
  EXPECT_EQ(judge(r, "bbb"), A);
  EXPECT_EQ(judge(r, "a"), R);
}

TEST(Recognizer, RefusesUnknownRoot) {
  auto grammar = parse_gbnf("root ::= \"a\"");
  ASSERT_TRUE(grammar.ok());
  auto r = Recognizer::create(*grammar, "nope");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
}

TEST(Recognizer, RefusedByteLeavesStateAndRollbackRestores) {
  Recognizer r = make(R"(root ::= "ab" ("c" | "d") "e")");
  ASSERT_TRUE(r.push_byte('a'));
  ASSERT_TRUE(r.push_byte('b'));
  EXPECT_FALSE(r.push_byte('x'));
  EXPECT_EQ(r.size(), 2u);
  EXPECT_TRUE(r.allows_byte('c'));
  EXPECT_TRUE(r.allows_byte('d'));
  EXPECT_FALSE(r.allows_byte('e'));
  ASSERT_TRUE(r.push_byte('c'));
  Recognizer fork = r;
  r.truncate(2);
  EXPECT_TRUE(r.push_byte('d'));
  EXPECT_TRUE(r.push_byte('e'));
  EXPECT_TRUE(r.is_accepting());
  // The fork kept its own state.
  EXPECT_EQ(fork.size(), 3u);
  EXPECT_TRUE(fork.push_byte('e'));
  EXPECT_TRUE(fork.is_accepting());
}

// A grammar whose Earley work per byte grows with the input: the per-byte
// bound refuses the byte that would pass it, leaves the state unchanged and
// says why; an invalid byte is refused without blaming the bound.
TEST(Recognizer, WorkLimitRefusesAndKeepsState) {
  auto grammar = parse_gbnf(R"gm(root ::= e
e ::= e e | "a")gm");
  ASSERT_TRUE(grammar.ok());
  RecognizerOptions options;
  options.max_work_per_byte = 20000;
  auto r = Recognizer::create(*grammar, "root", options);
  ASSERT_TRUE(r.ok());
  size_t pushed = 0;
  while (pushed < 10000 && r->push_byte('a')) ++pushed;
  ASSERT_LT(pushed, 10000u) << "the bound never triggered";
  EXPECT_GT(pushed, 10u);
  EXPECT_TRUE(r->work_limit_hit());
  EXPECT_EQ(r->size(), pushed);
  EXPECT_TRUE(r->is_accepting());
  EXPECT_FALSE(r->push_byte('b'));
  EXPECT_FALSE(r->work_limit_hit());
  // After rolling back, the same byte is cheap enough again.
  r->truncate(pushed / 2);
  EXPECT_TRUE(r->push_byte('a'));
  EXPECT_FALSE(r->work_limit_hit());

  // Unambiguous grammars never come near the default bound.
  Recognizer linear = make(R"gm(root ::= ("a" | "b")* "c")gm");
  EXPECT_EQ(linear.push_bytes(std::string(100000, 'a') + "c"), 100001u);
  EXPECT_TRUE(linear.is_accepting());
}

// Grammars built to be exponential for engines that keep one stack per
// parse: nested optional chains and `(a|a)*`. Earley shares the work, so
// long inputs run to the end under the default bounds.
TEST(Recognizer, StackExponentialGrammarsStayLinear) {
  std::string chain = "root ::= ";
  for (int i = 0; i < 40; ++i) chain += "(\"a\" ";
  for (int i = 0; i < 40; ++i) chain += ")? ";
  chain += "\"a\"*";
  const char* cases[] = {R"gm(root ::= ("a" | "a")* "b")gm",
                         R"gm(root ::= (("a" | "a") ("a" | "a")?)* "b")gm"};
  for (const std::string& g : {chain + " \"b\"", std::string(cases[0]), std::string(cases[1])}) {
    Recognizer r = make(g);
    const std::string input = std::string(20000, 'a') + "b";
    EXPECT_EQ(r.push_bytes(input), input.size()) << g;
    EXPECT_FALSE(r.work_limit_hit()) << g;
    EXPECT_TRUE(r.is_accepting()) << g;
  }
  // Truly ambiguous (every split of a run of `a` is a parse, and x is left
  // recursive through y): polynomial for Earley, so the bound stops it.
  Recognizer r = make(R"gm(root ::= x* "b"
x ::= "a" | "a" | y
y ::= "a" | x "a")gm");
  const std::string input = std::string(20000, 'a') + "b";
  const size_t pushed = r.push_bytes(input);
  EXPECT_LT(pushed, input.size());
  EXPECT_TRUE(r.work_limit_hit());
  EXPECT_GT(pushed, 100u);
}

TEST(Recognizer, EmptyLanguage) {
  Recognizer r = make("root ::= \"a\" loop\nloop ::= \"b\" loop");
  EXPECT_FALSE(r.can_continue());
  EXPECT_FALSE(r.is_accepting());
  EXPECT_FALSE(r.push_byte('a'));
}

// --- property test against a brute-force reference -------------------------

// Reference semantics over code points: the set of end positions reachable
// from `pos` by `e`. Exponential in the worst case; fine for small inputs.
class Reference {
 public:
  Reference(const Grammar& g, const std::u32string& input) : g_(g), in_(input) {}

  bool accepts(uint32_t root) {
    auto ends = rule_ends(root, 0);
    return ends.count(in_.size()) > 0;
  }

 private:
  std::set<size_t> rule_ends(uint32_t rule, size_t pos) {
    auto key = std::make_pair(rule, pos);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    memo_[key] = {};  // grammars here are not left-recursive
    auto result = ends(g_.rules()[rule].body, pos);
    memo_[key] = result;
    return result;
  }

  bool in_class(const Expr& e, char32_t c) {
    if (e.kind == Expr::Kind::kAnyChar) return true;
    bool in = false;
    for (const auto& r : e.ranges) in |= c >= r.first && c <= r.last;
    return in != e.negated;
  }

  std::set<size_t> ends(const Expr& e, size_t pos) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        if (in_.compare(pos, e.literal.size(), e.literal) == 0 &&
            pos + e.literal.size() <= in_.size())
          return {pos + e.literal.size()};
        return {};
      case Expr::Kind::kCharClass:
      case Expr::Kind::kAnyChar:
        if (pos < in_.size() && in_class(e, in_[pos])) return {pos + 1};
        return {};
      case Expr::Kind::kRuleRef:
        return rule_ends(e.rule, pos);
      case Expr::Kind::kSequence: {
        std::set<size_t> cur{pos};
        for (const Expr& c : e.children) {
          std::set<size_t> next;
          for (size_t p : cur)
            for (size_t q : ends(c, p)) next.insert(q);
          cur = std::move(next);
        }
        return cur;
      }
      case Expr::Kind::kAlternation: {
        std::set<size_t> out;
        for (const Expr& c : e.children)
          for (size_t q : ends(c, pos)) out.insert(q);
        return out;
      }
      case Expr::Kind::kRepeat: {
        std::set<size_t> out, frontier{pos};
        if (e.min == 0) out.insert(pos);
        for (uint32_t count = 1; !frontier.empty() && count <= std::min<uint32_t>(e.max, 64);
             ++count) {
          std::set<size_t> next;
          for (size_t p : frontier)
            for (size_t q : ends(e.children[0], p)) next.insert(q);
          if (count >= e.min)
            for (size_t q : next) out.insert(q);
          if (next == frontier && count >= e.min) break;
          frontier = std::move(next);
        }
        return out;
      }
    }
    return {};
  }

  const Grammar& g_;
  const std::u32string& in_;
  std::map<std::pair<uint32_t, size_t>, std::set<size_t>> memo_;
};

// Random grammars over a tiny alphabet, not left-recursive: a reference to a
// rule at or below the current one only appears after a literal.
class RandomGrammar {
 public:
  explicit RandomGrammar(uint32_t seed) : rng_(seed) {}

  std::string make_text(int rules) {
    rules_ = rules;
    std::string text;
    for (int i = 0; i < rules; ++i)
      text += "r" + std::to_string(i) + " ::= " + expr(i, 0, false) + "\n";
    return text;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  std::string atom(int rule, int depth, bool guarded) {
    switch (pick(depth > 2 ? 4 : 7)) {
      case 0:
        return "\"" + std::string(1 + pick(2), "abc"[pick(3)]) + "\"";
      case 1:
        return "[a-b]";
      case 2:
        return "[^ab]";
      case 3: {
        int target = guarded ? pick(rules_) : rule + 1 + pick(std::max(1, rules_ - rule - 1));
        if (target >= rules_) return "\"c\"";
        return "r" + std::to_string(target);
      }
      case 4:
        return "(" + expr(rule, depth + 1, guarded) + ")";
      case 5:
        return "(" + expr(rule, depth + 1, guarded) + ")" + "*?+"[pick(3)];
      default: {
        int lo = pick(3);
        int hi = lo + pick(3);
        return "(" + expr(rule, depth + 1, guarded) + "){" + std::to_string(lo) + "," +
               std::to_string(hi) + "}";
      }
    }
  }

  std::string expr(int rule, int depth, bool guarded) {
    std::string out;
    int alternatives = 1 + pick(2);
    for (int a = 0; a < alternatives; ++a) {
      if (a) out += " | ";
      bool g = guarded;
      int items = 1 + pick(3);
      for (int i = 0; i < items; ++i) {
        if (i) out += " ";
        if (pick(3) == 0) {
          out += "\"" + std::string(1, "abc"[pick(3)]) + "\"";
          g = true;
        } else {
          out += atom(rule, depth, g);
        }
      }
    }
    return out;
  }

  std::mt19937 rng_;
  int rules_ = 1;
};

std::u32string decode(const std::string& s, bool* valid) {
  std::u32string out;
  *valid = true;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) {
      *valid = false;
      return out;
    }
    char32_t cp = n == 1 ? c : c & (0xFF >> (n + 1));
    for (int k = 1; k < n; ++k) {
      unsigned char d = s[i + k];
      if ((d & 0xC0) != 0x80) {
        *valid = false;
        return out;
      }
      cp = (cp << 6) | (d & 0x3F);
    }
    static const char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      *valid = false;
      return out;
    }
    out.push_back(cp);
    i += n;
  }
  return out;
}

TEST(RecognizerProperty, AgreesWithReferenceOnRandomGrammars) {
  const std::string alphabet[] = {"a", "b", "c", "d", "é", "\xC3"};
  int compared = 0, accepted = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    RandomGrammar gen(seed);
    std::string text = gen.make_text(1 + seed % 4);
    auto grammar = parse_gbnf(text, GbnfOptions{"r0"});
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string() << "\n" << text;
    auto rec = Recognizer::create(*grammar, "r0");
    ASSERT_TRUE(rec.ok()) << rec.status().to_string();
    std::mt19937 rng(seed * 7919);
    // Random walks: extend by bytes the recognizer allows, then compare the
    // acceptance of every prefix with the reference; also try random strings.
    for (int walk = 0; walk < 20; ++walk) {
      std::string input;
      rec->reset();
      int len = std::uniform_int_distribution<int>(0, 8)(rng);
      for (int i = 0; i < len; ++i) {
        const std::string& piece = alphabet[std::uniform_int_distribution<int>(0, 5)(rng)];
        input += piece;
      }
      // Mutate: with some probability drop or replace one byte.
      if (!input.empty() && rng() % 3 == 0) input.erase(rng() % input.size(), 1);
      rec->reset();
      size_t consumed = rec->push_bytes(input);
      bool rec_accepts = consumed == input.size() && rec->is_accepting();
      bool valid = false;
      std::u32string cps = decode(input, &valid);
      bool ref_accepts = valid && Reference(*grammar, cps).accepts(0);
      EXPECT_EQ(rec_accepts, ref_accepts) << text << "input: '" << input << "'";
      ++compared;
      accepted += ref_accepts;
      // Every accepted prefix along the way must be consistent too.
      for (size_t cut = 0; cut < consumed; ++cut) {
        std::string prefix = input.substr(0, cut);
        bool pv = false;
        std::u32string pcps = decode(prefix, &pv);
        if (!pv) continue;
        rec->reset();
        ASSERT_EQ(rec->push_bytes(prefix), prefix.size());
        EXPECT_EQ(rec->is_accepting(), Reference(*grammar, pcps).accepts(0))
            << text << "prefix: '" << prefix << "'";
      }
    }
  }
  EXPECT_GT(accepted, 100) << "the random inputs should hit the languages often";
  EXPECT_GT(compared, 5000);
}

// --- rules named last in a rule: shared when inlined -------------------------

// A right-linear chain of rules shaped like the JSON Schema key automata:
// k<i> names k<i+1> and k<i+2> last, so copying each named body at each
// place would expand the DAG into a tree of Fibonacci size. k7 names k8
// both in the middle and last; root names k0 in two places that are not
// last and k5 last (k5 is also inside the k0 chain).
std::string shared_tail_chain_gbnf() {
  constexpr int kLength = 24;
  std::string g = "root ::= \"<\" k0 \">\" \"[\" k0 \"]\" k5\n";
  for (int i = 0; i < kLength; ++i) {
    const std::string k = "k" + std::to_string(i);
    if (i == 7) {
      g += k + " ::= \"m\" k8 \"n\" | \"p\" k8 | \"\"\n";
    } else {
      g += k + " ::= (\"a\" k" + std::to_string(i + 1) + " | \"b\" k" + std::to_string(i + 2) +
           " | [c-e] tail)?\n";
    }
  }
  g += "k" + std::to_string(kLength) + " ::= \"z\" | tail\n";
  g += "k" + std::to_string(kLength + 1) + " ::= \"y\" tail\n";
  g += "tail ::= [c-e]*\n";
  return g;
}

TEST(Recognizer, SharedTailChainsAreExact) {
  const std::string text = shared_tail_chain_gbnf();
  auto grammar = parse_gbnf(text);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  Recognizer r = make(text);
  const std::pair<std::string, Verdict> fixed[] = {
      {"<>[]", A},
      {"<ac>[]", A},
      {"<aaaaaaap>[]", A},
      {"<aaaaaaamn>[]", A},
      {"<aaaaaaamaan>[bb]", A},
      {"<aaaaaaama>[]", R},
      {"<aaaaaaaa>[]", R},  // k7 reads no 'a'
      {"<bbbbbbbbbbbbz>[]", A},
      {"<bbbbbbbbbbbby>[]", R},
      {"<bbbbbbbbbbbabycde>[]", A},
      {"<bb>[bb]b", A},  // k5 after "]" is k5, not k4: "b" goes to k7
      {"<>[]aap", A},
      {"<>[]aaa", R},
      {"<>[]cdedc", A},
      {"<>[", P},
  };
  for (const auto& [input, expected] : fixed)
    EXPECT_EQ(static_cast<int>(judge(r, input)), static_cast<int>(expected)) << input;
  // Random words of the chain (walks that follow the rules), some with a
  // letter dropped or added, against the reference.
  std::mt19937 rng(12345);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  auto tail = [&] {
    std::string t;
    while (pick(3) != 0) t += static_cast<char>('c' + pick(3));
    return t;
  };
  std::function<std::string(int)> word = [&](int i) -> std::string {
    if (i == 7) {
      const int choice = pick(3);
      if (choice == 0) return "m" + word(8) + "n";
      return choice == 1 ? "p" + word(8) : "";
    }
    if (i == 24) return pick(2) ? "z" : tail();
    if (i == 25) return "y" + tail();
    switch (pick(5)) {
      case 0:
        return "";
      case 1:
        return static_cast<char>('c' + pick(3)) + tail();
      case 2:
        return "b" + word(i + 2);
      default:
        return "a" + word(i + 1);
    }
  };
  int accepted = 0;
  for (int n = 0; n < 2000; ++n) {
    std::string input = "<" + word(0) + ">[" + word(0) + "]" + word(5);
    if (n % 3 == 0) {
      const size_t at = rng() % input.size();
      if (pick(2))
        input.erase(at, 1);
      else
        input.insert(at, 1, "abmnyz"[pick(6)]);
    }
    const bool expected =
        Reference(*grammar, std::u32string(input.begin(), input.end())).accepts(0);
    EXPECT_EQ(judge(r, input) == A, expected) << input;
    accepted += expected;
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_LT(accepted, 1900);
}

TEST(Lowering, SharedTailChainsBecomePlainStates) {
  auto grammar = parse_gbnf(shared_tail_chain_gbnf());
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
  ASSERT_TRUE(lowered.ok()) << lowered.status().to_string();
  // Every rule inlined into root, each copy of the chain in linear size.
  EXPECT_EQ((*lowered)->rules().size(), 1u);
  for (const internal::AutomatonState& state : (*lowered)->states())
    EXPECT_EQ(state.rule_edges_begin, state.rule_edges_end);
  EXPECT_LT((*lowered)->states().size(), 1000u);
}

// Such an automaton lowers to plain states of the rule that names it,
// however long: its state rules are named only last, all below one entry
// rule, so one copy of each is inlined whatever the inline limits say
// (thousands deep, past the depth at which nested lowering stops). The
// entry, named in three places where something follows, stays a rule.
TEST(Lowering, TailGroupsInlineWholeIntoTheirEntry) {
  constexpr int kBound = 1000;
  const std::string text =
      "root ::= \"[\" str \",\" str \",\" str \"]\"\n" + testing::counted_chain_gbnf(kBound, "str");
  auto grammar = parse_gbnf(text);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
  ASSERT_TRUE(lowered.ok()) << lowered.status().to_string();
  ASSERT_EQ((*lowered)->rules().size(), 2u);  // root and str
  EXPECT_EQ((*lowered)->rules()[1].name, "str");
  for (const internal::AutomatonState& state : (*lowered)->states())
    if (state.rule == 1) EXPECT_EQ(state.rule_edges_begin, state.rule_edges_end);
  Recognizer r = make(text);
  const std::string full(kBound - 1, 'a');
  EXPECT_EQ(judge(r, "[\"x\",\"x\",\"abx\u00E9\u65E5\"]"), A);
  EXPECT_EQ(judge(r, "[\"x\",\"x\",\"" + full + "x\"]"), A);
  EXPECT_EQ(judge(r, "[\"x\",\"x\",\"" + full + "ax\"]"), R);  // one past the bound
  EXPECT_EQ(judge(r, "[\"x\",\"x\",\"abc\"]"), R);             // no "x"
  EXPECT_EQ(judge(r, "[\"x\",\"x\",\"" + full), P);
}

// A chain whose first state two entries name (str, and quoted after "'")
// is in no group: copied per entry or kept as rules by the limits, it
// accepts the same strings. Nor is one named after a part that may read
// nothing (t names s0-0 after an optional "-"): such chains are left to
// the limits (an object's optional members, each naming the rest, would
// make every state of the whole chain hold all the members after it).
TEST(Lowering, ChainsOutsideTailGroupsAreExact) {
  const std::string text =
      "root ::= \"<\" str \">\" | \"['\" s0-0 \"]\" str | \"(\" t \")\"\n"
      "t ::= \"-\"? s0-0\n" +
      testing::counted_chain_gbnf(300, "str");
  auto grammar = parse_gbnf(text);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  const internal::ReferenceCycles cycles =
      internal::find_reference_cycles(*grammar, static_cast<uint32_t>(grammar->find_rule("root")));
  EXPECT_FALSE(cycles.in_tail_group[grammar->find_rule("s0-0")]);
  EXPECT_TRUE(cycles.in_tail_group[grammar->find_rule("s1-1")]);  // below s0-0
  Recognizer r = make(text);
  const std::string full(299, 'a');
  EXPECT_EQ(judge(r, "<\"ax\">"), A);
  EXPECT_EQ(judge(r, "['ax\"]\"" + full + "x\""), A);
  EXPECT_EQ(judge(r, "['ax\"]\"" + full + "ax\""), R);
  EXPECT_EQ(judge(r, "<\"a\">"), R);
  EXPECT_EQ(judge(r, "(-ax\")"), A);
  EXPECT_EQ(judge(r, "(ax\")"), A);
  EXPECT_EQ(judge(r, "['" + full + "x\"]\"x"), P);
}

// The rules on a cycle of references other than the one that stays a rule
// (an object's member chain, bulky with bounded whitespace, that leads back
// to the object) inline into it, past the limit other rules get: one
// Earley link per nesting level instead of one per rule of the chain.
TEST(Lowering, RulesOnACycleInlineIntoTheRuleThatStays) {
  const char* text = R"gm(
root ::= node
node ::= "{" ws "\"id\"" ws ":" ws num ws rest "}"
rest ::= "," ws "\"name\"" ws ":" ws str ws more
more ::= "," ws "\"kids\"" ws ":" ws "[" ws (node ws ("," ws node ws)*)? "]" ws
num ::= [0-9]+
str ::= "\"" [a-z]* "\""
ws ::= [ \t\n]{0,40}
)gm";
  auto grammar = parse_gbnf(text);
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
  ASSERT_TRUE(lowered.ok()) << lowered.status().to_string();
  ASSERT_EQ((*lowered)->rules().size(), 2u);  // root and node
  EXPECT_EQ((*lowered)->rules()[1].name, "node");
  Recognizer r = make(text);
  EXPECT_EQ(judge(r, R"({"id":1,"name":"a","kids":[]})"), A);
  EXPECT_EQ(judge(r, R"({ "id" : 1 , "name" : "a" , "kids" : [ {"id":2,"name":"b","kids":[]} ] })"),
            A);
  EXPECT_EQ(judge(r, R"({"id":1,"name":"a","kids":[{"id":2,"name":"b","kids":[]},]})"), R);
  EXPECT_EQ(judge(r, R"({"id":1,"name":"a","kids":[)"), P);
}

// A repeat too large to copy calls its part as a rule of its own; equal
// parts in different places call one rule (so that their states read alike
// and share walks), and each place keeps its own bounds.
TEST(Lowering, EqualRepeatedPartsShareOneRule) {
  auto grammar =
      parse_gbnf(R"gm(root ::= "a" ("x" | "yz"){0,20000} "!" | "b" ("x" | "yz"){2,30000} "?")gm");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
  ASSERT_TRUE(lowered.ok()) << lowered.status().to_string();
  EXPECT_EQ((*lowered)->rules().size(), 2u);  // root and the part
  Recognizer r =
      make(R"gm(root ::= "a" ("x" | "yz"){0,20000} "!" | "b" ("x" | "yz"){2,30000} "?")gm");
  EXPECT_EQ(judge(r, "axyzx!"), A);
  EXPECT_EQ(judge(r, "a!"), A);
  EXPECT_EQ(judge(r, "bx?"), R);
  EXPECT_EQ(judge(r, "bxyz?"), A);
  EXPECT_EQ(judge(r, "axyz?"), R);
}

// `members` members "k<i>":<value>, the value a string or a number, each
// by one of four rules named by a quarter of the members: with many
// members, copying them into every place makes a large grammar, though
// the copies of each rule alone stay within the copy budget.
std::string many_members_gbnf(int members) {
  std::string g = R"(root ::= "{" m0)";
  for (int i = 1; i < members; ++i) g += R"( "," m)" + std::to_string(i);
  g += R"( "}")"
       "\n";
  for (int i = 0; i < members; ++i) {
    const std::string n = std::to_string(i), k = std::to_string(i % 4);
    g += "m" + n + R"( ::= "\"k)" + n + R"(\":" ws (str)" + k + " | num" + k + ") ws\n";
  }
  for (int k = 0; k < 4; ++k) {
    g += "str" + std::to_string(k) +
         R"( ::= "\"" ([^"\\\x00-\x1F] | "\\" ["\\/bfnrt])* "\"")"
         "\n";
    g += "num" + std::to_string(k) +
         R"( ::= "-"? ([0-9] | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?)"
         "\n";
  }
  g += R"(ws ::= [ \n]{0,8})"
       "\n";
  return g;
}

// A grammar whose copies of shared rules would pass the copy bound keeps
// them as rules (and lowers to far fewer states); a small one copies them.
// Both are exact.
TEST(Lowering, LargeGrammarsKeepSharedPartsAsRules) {
  auto rule_named = [](const internal::ByteGrammar& g, const std::string& name) {
    for (const internal::LoweredRule& rule : g.rules())
      if (rule.name == name) return true;
    return false;
  };
  for (const int members : {4, 3000}) {
    const std::string text = many_members_gbnf(members);
    auto grammar = parse_gbnf(text);
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
    ASSERT_TRUE(lowered.ok()) << lowered.status().to_string();
    EXPECT_EQ(rule_named(**lowered, "str0"), members > 4) << members;
    EXPECT_EQ(rule_named(**lowered, "num3"), members > 4) << members;
    Recognizer r = make(text);
    std::string object = "{";
    for (int i = 0; i < members; ++i) {
      if (i > 0) object += ",";
      object += "\"k" + std::to_string(i) + "\":" +
                (i % 3 == 0   ? " \"a\\\"b\""
                 : i % 3 == 1 ? "-1.5e+3 "
                              : "0");
    }
    EXPECT_EQ(judge(r, object + "}"), A) << members;
    EXPECT_EQ(judge(r, object), P) << members;
    EXPECT_EQ(judge(r, object + ",}"), R) << members;
    std::string bad = object;
    bad.replace(bad.find("-1.5"), 4, "01.5");  // a number with a leading zero
    EXPECT_EQ(judge(r, bad + "}"), R) << members;
  }
}

// A grammar whose copies of shared rules the size estimates put far past
// the copy bound goes to the large-grammar budget without a first attempt:
// it is past the bound indeed. A small grammar is estimated far under it.
TEST(Lowering, EstimatesTellLargeGrammarsApart) {
  for (const int places : {2, 160}) {
    // Each of 16 words of 40 letters named `places` times, 16 to a rule.
    std::string text = "root ::=";
    for (int i = 0; i < places; ++i) text += " a" + std::to_string(i);
    text += "\n";
    for (int i = 0; i < places; ++i) {
      text += "a" + std::to_string(i) + " ::=";
      for (int k = 0; k < 16; ++k) text += " w" + std::to_string(k);
      text += "\n";
    }
    for (int k = 0; k < 16; ++k)
      text += "w" + std::to_string(k) +
              R"( ::= "\"" [a-z]{40} "\"")"
              "\n";
    auto grammar = parse_gbnf(text);
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    const auto root = static_cast<uint32_t>(grammar->find_rule("root"));
    const internal::ReferenceCycles cycles = internal::find_reference_cycles(*grammar, root);
    const RecognizerOptions options;  // (a Lowering keeps a reference)
    internal::Lowering estimating(*grammar, options, internal::kGenerousInlineLimit,
                                  internal::kCycleInlineFactor, internal::kCopyBudget);
    const size_t estimate = estimating.estimated_nfa_states(root, cycles);
    internal::Lowering attempt(*grammar, options, internal::kGenerousInlineLimit,
                               internal::kCycleInlineFactor, internal::kCopyBudget,
                               internal::kCopiedNfaStates);
    const bool lowered = attempt.run(root, cycles).ok();
    if (places == 2) {
      EXPECT_LT(estimate, internal::kCopiedNfaStates / 4);
      EXPECT_TRUE(lowered);
    } else {
      EXPECT_GT(estimate, internal::kSurelyLargeEstimate);
      EXPECT_FALSE(lowered);
      EXPECT_TRUE(attempt.copies_exceeded());
    }
    auto large = internal::ByteGrammar::lower(*grammar, "root", {});
    ASSERT_TRUE(large.ok()) << large.status().to_string();
    Recognizer r = make(text);
    std::string words;
    for (int i = 0; i < places * 16; ++i) words += "\"" + std::string(40, 'a' + i % 26) + "\"";
    EXPECT_EQ(judge(r, words), A) << places;
    EXPECT_EQ(judge(r, words.substr(0, words.size() - 2) + "\""), R) << places;
  }
}

// The UTF-8 sequences of a character class share the states that read
// their common tails, so the automaton is minimal: a start, one state per
// number of continuation bytes still due (1-3), one per restricted second
// byte (after E0, ED, F0 and F4), the state before "!" and the end. Built
// one chain per sequence, the subset construction kept one state per tail.
TEST(Lowering, CharacterClassSequencesShareTheirTails) {
  auto grammar = parse_gbnf(R"gm(root ::= [^"\\\x00-\x1F] "!")gm");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
  ASSERT_TRUE(lowered.ok()) << lowered.status().to_string();
  EXPECT_EQ((*lowered)->states().size(), 10u);
  Recognizer r = make(R"gm(root ::= [^"\\\x00-\x1F] "!")gm");
  for (const char* text : {"a!", "\xC3\xA9!", "\xE0\xA4\x85!", "\xED\x9F\xBF!", "\xEE\x80\x80!",
                           "\xF0\x9F\x8E\x89!", "\xF4\x8F\xBF\xBF!"})
    EXPECT_EQ(judge(r, text), A) << text;
  for (const char* text : {"\"!", "\x1F!", "\xE0\x80\x80!", "\xED\xA0\x80!", "\xF4\x90\x80\x80!"})
    EXPECT_EQ(judge(r, text), R) << text;
}

// The text cover of the state `grammar` reaches after reading `prefix`,
// with slice tokens of at most `max_length` bytes.
internal::TextCover cover_after(const std::string& grammar_text, const std::string& prefix,
                                size_t max_length) {
  auto grammar = parse_gbnf(grammar_text);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string();
  if (!grammar.ok()) return internal::kNoText;
  auto lowered = internal::ByteGrammar::lower(*grammar, "root", {});
  EXPECT_TRUE(lowered.ok()) << lowered.status().to_string();
  if (!lowered.ok()) return internal::kNoText;
  const internal::ByteGrammar& g = **lowered;
  uint32_t state = g.rules()[g.root_rule()].start;
  for (size_t i = 0; i < prefix.size() && state != internal::kNoState; ++i)
    state = g.next(state, static_cast<uint8_t>(prefix[i]));
  EXPECT_NE(state, internal::kNoState);
  if (state == internal::kNoState) return internal::kNoText;
  return internal::TextClosure(g, max_length).cover(state);
}

// Keys split between two rules called from one state (any key but one
// starting "x-", and those; "\x01" keeps each a rule of its own, being no
// plain text), as a schema's additional and pattern keys:
// only their union reads every plain text, which the text cover proves
// through a search over sets of states. (A longest token of 600 bytes is
// past the deep proof's reach, so nothing else can prove it.)
TEST(TextCover, UnionOfCalledKeyRulesReadsAllText) {
  const char* keys = R"gm(
ka ::= [^"\\x] kt | "x" ([^"\\-] kt | "\"") | "\"" | "\x01" ka
kb ::= "x-" kt | "\x01" kb
kt ::= [^"\\] kt | "\"")gm";
  auto cover_after_key_quote = [&](const std::string& root) {
    return cover_after(root + keys, "{\"", 600);
  };
  EXPECT_EQ(cover_after_key_quote(R"gm(root ::= "{\"" ka ":1}" | "{\"" kb ":2}")gm"),
            internal::kAllText);
  EXPECT_EQ(cover_after_key_quote(R"gm(root ::= "{\"" ka ":1}")gm"), internal::kNoText);
}

// A long string body whose characters are calls to one rule (a repeat too
// large to copy): every position with at least max_length calls left reads
// all plain text, by the chain of calls; a character rule that refuses one
// plain character ("x") reads no such text, however long the chain.
TEST(TextCover, CallChainOfOneCharacterRuleReadsAllText) {
  auto cover_after_quote = [](const char* character) {
    return cover_after(std::string(R"gm(root ::= "\"" c{0,3000} "\""
c ::= )gm") + character,
                       "\"", 128);
  };
  EXPECT_EQ(cover_after_quote(R"gm([^"\\] | "\\" ["\\nt])gm"), internal::kAllText);
  EXPECT_EQ(cover_after_quote(R"gm([^"\\x] | "\\" ["\\nt])gm"), internal::kNoText);
}

// An item that reads text only past a nullable call (an optional prefix
// rule, then the body): the bytes it can read first, which rule out most
// states before any proof, include those of the call's target, so the
// body is still proven.
TEST(TextCover, TextPastANullableCallIsStillProven) {
  auto cover_after_quote = [](const char* body) {
    return cover_after(std::string(R"gm(root ::= "\"" prefix body
prefix ::= "" | "\x01" prefix
body ::= )gm") + body,
                       "\"", 64);
  };
  EXPECT_EQ(cover_after_quote(R"gm([^"\\] body | "\"")gm"), internal::kAllText);
  EXPECT_EQ(cover_after_quote(R"gm([^"\\x] body | "\"")gm"), internal::kNoText);
}

// --- the shared workload: every grammar case accepts its text ---------------

TEST(SharedBench, GrammarCasesAcceptTheirText) {
  const std::string shared = GRAMMASK_SHARED_DIR;
  if (shared.empty()) GTEST_SKIP() << "GRAMMASK_SHARED_DIR not set";
  const char* cases[] = {"arithmetic", "c-code",       "chess",
                         "free-text",  "json-generic", "list-lines"};
  int checked = 0;
  for (const char* c : cases) {
    std::ifstream g(shared + "/bench/cases/" + c + "/grammar.gbnf", std::ios::binary);
    std::ifstream t(shared + "/bench/cases/" + c + "/text.txt", std::ios::binary);
    if (!g || !t) continue;
    std::stringstream gs, ts;
    gs << g.rdbuf();
    ts << t.rdbuf();
    Recognizer r = make(gs.str());
    const std::string text = ts.str();
    EXPECT_EQ(r.push_bytes(text), text.size()) << c;
    EXPECT_TRUE(r.is_accepting()) << c;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no bench cases under " << shared;
}

}  // namespace
}  // namespace grammask
