// AnyOrder(...): GBNF syntax and errors, the language it recognizes (against
// grammars that spell every order out, and against a direct count of the
// members), and masks against the brute-force oracle run on those spelled
// out grammars.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "grammask/grammar.h"
#include "grammask/matcher.h"
#include "grammask/recognizer.h"
#include "mask_oracle.h"

namespace grammask {
namespace {

enum class Verdict { kReject, kPrefix, kAccept };

Verdict verdict_of(Recognizer& r, const std::string& text) {
  r.reset();
  if (r.push_bytes(text) != text.size()) return Verdict::kReject;
  return r.is_accepting() ? Verdict::kAccept : Verdict::kPrefix;
}

Recognizer recognizer_for(const Grammar& grammar) {
  auto r = Recognizer::create(grammar, "root");
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return std::move(r).value();
}

Verdict verdict_of(const Grammar& grammar, const std::string& text) {
  Recognizer r = recognizer_for(grammar);
  return verdict_of(r, text);
}

Grammar parse(const std::string& text) {
  auto grammar = parse_gbnf(text);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string() << "\n" << text;
  return grammar.ok() ? *grammar : Grammar();
}

// Every string over `alphabet` of at most `length` characters.
std::vector<std::string> all_strings(const std::string& alphabet, size_t length) {
  std::vector<std::string> out{""};
  for (size_t begin = 0, n = 0; n < length; ++n) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i)
      for (char c : alphabet) out.push_back(out[i] + c);
    begin = end;
  }
  return out;
}

// A member of a test AnyOrder: its GBNF text and whether it must come.
struct Member {
  std::string gbnf;  // a GBNF expression, e.g. "\"ab\"" or "x"
  bool required;
};

// The same language written out: an alternation of every sequence of
// distinct members (each optional one present or not), in every order,
// separated by `separator`. For few members only.
std::string spelled_out(const std::string& separator, const std::vector<Member>& members) {
  std::vector<std::string> options;
  const size_t n = members.size();
  for (uint32_t subset = 0; subset < (1u << n); ++subset) {
    bool ok = true;
    std::vector<size_t> chosen;
    for (size_t i = 0; i < n; ++i) {
      if (subset >> i & 1) {
        chosen.push_back(i);
      } else if (members[i].required) {
        ok = false;
      }
    }
    if (!ok) continue;
    do {
      std::string seq;
      for (size_t k = 0; k < chosen.size(); ++k)
        seq += (k > 0 ? " " + separator + " " : "") + members[chosen[k]].gbnf;
      options.push_back(seq.empty() ? "\"\"" : "(" + seq + ")");
    } while (std::next_permutation(chosen.begin(), chosen.end()));
  }
  std::string out;
  for (size_t i = 0; i < options.size(); ++i) out += (i > 0 ? " | " : "") + options[i];
  return "(" + out + ")";
}

std::string any_order_call(const std::string& separator, const std::vector<Member>& members) {
  std::string out = "AnyOrder(" + separator;
  // (An optional member's whole text is grouped: "k" v? is a member whose v
  // is optional.)
  for (const Member& m : members) out += ", " + (m.required ? m.gbnf : "(" + m.gbnf + ")?");
  return out + ")";
}

TEST(AnyOrder, PrintsAndParsesBack) {
  const Grammar grammar = parse(
      "root ::= \"{\" AnyOrder(\",\" ws, kv, (\"b\" | \"c\")?, \"d\"*, \"e\"+) \"}\"\n"
      "kv ::= \"k\" AnyOrder(\"\", \"x\", \"y\")\n"
      "ws ::= \" \"?\n");
  const std::string printed = grammar.to_gbnf();
  EXPECT_NE(printed.find("AnyOrder(\",\" ws, kv, (\"b\" | \"c\")?, \"d\"*, \"e\"+)"),
            std::string::npos)
      << printed;
  auto again = parse_gbnf(printed);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(*again, grammar);
  // A space before '(' makes a rule reference, as for the other calls.
  auto reference = parse_gbnf("root ::= AnyOrder (\"a\")\nAnyOrder ::= \"b\"\n");
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  EXPECT_EQ(reference->rules()[0].body.kind, Expr::Kind::kSequence);
}

TEST(AnyOrder, SyntaxAndLoweringErrorsNameTheirPlace) {
  struct Case {
    std::string gbnf;
    ErrorCode code;
    std::string where;  // line:column
    std::string words;  // part of the message
  };
  std::string sixty_five = "root ::= AnyOrder(\",\"";
  for (int i = 0; i < 65; ++i) sixty_five += ", \"k" + std::to_string(i) + "\"?";
  sixty_five += ")\n";
  const Case cases[] = {
      {"root ::= \"x\" AnyOrder(\",\", \"a\"\n", ErrorCode::kSyntax, "1:14", "unclosed AnyOrder"},
      {"root ::= AnyOrder(\",\")\n", ErrorCode::kSyntax, "1:10", "at least one member"},
      {"root ::= AnyOrder(\",\", (\"a\" , \"b\"))\n", ErrorCode::kSyntax, "1:29", "unexpected"},
      {"root ::= AnyOrder(\",\", \"a\", \"x\"? \"y\"?)\n", ErrorCode::kInvalidArgument, "1:29",
       "empty text"},
      {"root ::= AnyOrder(\",\", \"a\", n)\nn ::= \"q\" n\n", ErrorCode::kInvalidArgument, "1:29",
       "required member"},
      {"root ::= AnyOrder(n, \"a\", \"b\")\nn ::= \"q\" n\n", ErrorCode::kInvalidArgument, "1:19",
       "separator"},
      {sixty_five, ErrorCode::kLimitExceeded, "1:10", "more than 64 members"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.gbnf);
    Status status;
    auto grammar = parse_gbnf(c.gbnf);
    if (!grammar.ok()) {
      status = grammar.status();
    } else {
      auto r = Recognizer::create(*grammar, "root");
      ASSERT_FALSE(r.ok());
      status = r.status();
    }
    EXPECT_EQ(status.code(), c.code) << status.to_string();
    EXPECT_NE(status.to_string().find(c.where), std::string::npos) << status.to_string();
    EXPECT_NE(status.to_string().find(c.words), std::string::npos) << status.to_string();
  }
}

// Exactly-once and optional members, against the grammar that spells out
// every order: overlapping members, an empty separator (where one text
// has several parses) and a separator that is a rule.
TEST(AnyOrder, RecognizesWhatTheSpelledOutGrammarDoes) {
  struct Case {
    std::string separator;
    std::vector<Member> members;
    std::string rules;  // more rules the members name
  };
  const Case cases[] = {
      {"\",\"", {{"\"a\"", true}, {"\"b\"", false}, {"\"c\"", true}}, ""},
      {"\",\"", {{"\"a\"", false}, {"\"ab\"", false}, {"\"b\"", false}}, ""},
      {"\"\"", {{"\"a\"", true}, {"\"ab\"", false}, {"\"b\"", false}, {"\"c\"", false}}, ""},
      {"sep",
       {{"\"a\" c", true}, {"\"b\"", false}, {"c", false}},
       "sep ::= \",\" | \",,\"\nc ::= \"c\" | \"ca\"\n"},
      {"\",\"", {{"\"a\"", false}, {"(\"a\" | \"b\")", false}}, ""},
  };
  for (const Case& c : cases) {
    const std::string any =
        "root ::= \"[\" " + any_order_call(c.separator, c.members) + " \"]\"\n" + c.rules;
    const std::string spelled =
        "root ::= \"[\" " + spelled_out(c.separator, c.members) + " \"]\"\n" + c.rules;
    SCOPED_TRACE(any);
    Recognizer a = recognizer_for(parse(any)), b = recognizer_for(parse(spelled));
    int accepted = 0;
    for (const std::string& body : all_strings("abc,", 6)) {
      for (const std::string& text : {"[" + body, "[" + body + "]"}) {
        const Verdict want = verdict_of(b, text);
        ASSERT_EQ(verdict_of(a, text), want) << "on '" << text << "'";
        accepted += want == Verdict::kAccept;
      }
    }
    EXPECT_GT(accepted, 3);
  }
}

// m* and m+ members, against counting the members of a text directly.
TEST(AnyOrder, CountsRepeatedMembers) {
  // a exactly once, b at most once, c any number of times, d at least once.
  Recognizer recognizer = recognizer_for(
      parse("root ::= \"[\" AnyOrder(\",\", \"a\", \"b\"?, \"c\"*, \"d\"+) \"]\"\n"));
  auto verdict = [](const std::string& text) {
    // Members are single letters between commas.
    if (text.empty() || text[0] != '[') return Verdict::kReject;
    const bool closed = text.back() == ']';
    const std::string body = text.substr(1, text.size() - 1 - (closed ? 1 : 0));
    if (body.find(']') != std::string::npos) return Verdict::kReject;
    std::map<char, int> count;
    for (size_t i = 0; i < body.size(); ++i) {
      const bool member_place = i % 2 == 0;
      if (member_place != (body[i] != ',')) return Verdict::kReject;
      if (member_place) ++count[body[i]];
    }
    if (count['a'] > 1 || count['b'] > 1) return Verdict::kReject;
    const bool ends_on_member = !body.empty() && body.back() != ',';
    const bool complete = ends_on_member && count['a'] == 1 && count['d'] >= 1;
    if (closed) return complete ? Verdict::kAccept : Verdict::kReject;
    // An open text goes on unless it ends on a comma after which no member
    // may come (never here: c may always come).
    return Verdict::kPrefix;
  };
  int accepted = 0;
  for (const std::string& body : all_strings("abcd,", 7)) {
    for (const std::string& text : {"[" + body, "[" + body + "]"}) {
      const Verdict want = verdict(text);
      ASSERT_EQ(verdict_of(recognizer, text), want) << "on '" << text << "'";
      accepted += want == Verdict::kAccept;
    }
  }
  EXPECT_GT(accepted, 20);
}

// After every member that may come once has come, the separator is refused.
TEST(AnyOrder, RefusesTheSeparatorWhenNoMemberIsLeft) {
  const Grammar grammar = parse("root ::= \"{\" AnyOrder(\",\", \"a\", \"b\"?) \"}\"\n");
  EXPECT_EQ(verdict_of(grammar, "{a,b"), Verdict::kPrefix);
  EXPECT_EQ(verdict_of(grammar, "{a,b,"), Verdict::kReject);
  EXPECT_EQ(verdict_of(grammar, "{b,"), Verdict::kPrefix);
  EXPECT_EQ(verdict_of(grammar, "{b}"), Verdict::kReject);
  EXPECT_EQ(verdict_of(grammar, "{b,a}"), Verdict::kAccept);
}

Vocabulary object_vocab() {
  std::vector<std::string> tokens = {
      "{", "}", ",", ":", " ", "\"", "1", "12", "{\"", "\":", "\",", ", ", ",\"", "}}", "},", "a",
      "b", "c", "d", "e", "\"a\"", "\"b", "\"c\":", "\"d", "e\"", ":1", "1,", "1}", "}\n", "{}",
      "ab", "cd", "\"a\":", ": {", "\n", "</s>", "\"e\":", "\"b\":1", "x", "\"x\"",
      // Tokens across a separator and the next key: whether the key may
      // come depends on the members written before the separator.
      ",\"a\":", ", \"b\"", ",\"c\":1", ",\"d\":12}", "1,\"a\"", "2, \"c"};
  return *Vocabulary::from_token_bytes(tokens, {35}, {});
}

using testing::oracle_mask;

// Masks of a nested JSON-like object whose keys come in any order, compared
// with the oracle run on the grammar that spells every order out. One
// Matcher walks many times (reset between walks), so its caches serve
// masks computed at other depths and with other members written; other
// walks each have a new Matcher, served by the walks the compiled grammar
// shares between Matchers.
TEST(AnyOrder, MasksMatchOracleOnTheSpelledOutGrammar) {
  const std::vector<Member> members = {{"\"\\\"a\\\":\" v", true},
                                       {"\"\\\"b\\\":\" v", false},
                                       {"\"\\\"c\\\":\" v", false},
                                       {"\"\\\"d\\\":\" v", true}};
  const std::string rules =
      "v ::= \"1\" | \"12\" | o\n"
      "ws ::= \" \"?\n";
  const std::string any =
      "root ::= o\no ::= \"{\" " + any_order_call("\",\" ws", members) + " \"}\"\n" + rules;
  const std::string spelled =
      "root ::= o\no ::= \"{\" " + spelled_out("\",\" ws", members) + " \"}\"\n" + rules;
  const Grammar a = parse(any), b = parse(spelled);
  const Vocabulary vocab = object_vocab();
  for (double budget : {CompileOptions{}.precompute_budget, 0.0}) {
    CompileOptions options;
    options.precompute_budget = budget;
    auto compiled = CompiledGrammar::compile(a, vocab, options);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    Matcher kept(*compiled);
    std::vector<uint32_t> words(compiled->mask_words(), 0);
    int compared = 0, ended = 0;
    for (uint32_t seed = 1; seed <= 60; ++seed) {
      // Odd walks in one Matcher, even ones each in a new one, which
      // finds only the walks the compiled grammar shares.
      std::optional<Matcher> fresh;
      Matcher& m = seed % 2 ? kept : fresh.emplace(*compiled);
      m.reset();
      std::mt19937 rng(seed);
      std::string text;
      for (int step = 0; step < 40 && !m.is_terminated(); ++step) {
        ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
        const auto want = oracle_mask(b, vocab, text, words.size());
        ASSERT_EQ(words, want) << "after '" << text << "'";
        ++compared;
        std::vector<uint32_t> allowed;
        for (uint32_t id = 0; id < vocab.size(); ++id)
          if (test_bit(words.data(), id)) allowed.push_back(id);
        ASSERT_FALSE(allowed.empty()) << "after '" << text << "'";
        // Nested objects are entered rarely, so that walks end.
        uint32_t pick = allowed[rng() % allowed.size()];
        for (int tries = 0; tries < 3 && vocab.token_bytes(pick).find('{') != std::string::npos;
             ++tries)
          pick = allowed[rng() % allowed.size()];
        ASSERT_TRUE(m.accept_token(pick).ok());
        if (!vocab.is_stop(pick)) text += std::string(vocab.token_bytes(pick));
      }
      ended += m.is_terminated();
    }
    EXPECT_GT(compared, 600);
    EXPECT_GT(ended, 5);
  }
}

}  // namespace
}  // namespace grammask
