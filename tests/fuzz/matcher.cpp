// Fuzz target: a Matcher over a small fixed vocabulary, driven by the input.
//
// Input: one byte choosing a built-in grammar (even) or saying that GBNF
// text follows up to a NUL byte (odd); then one byte per operation: accept
// a token (any id, or the k-th allowed one), roll back, fork, jump forward
// through forced_bytes, accept raw bytes, reset. After every operation the
// mask is checked against a brute-force oracle (a Recognizer fed the output
// so far plus each token's bytes) and against is_token_allowed; refused
// operations must leave the state unchanged; rollback and a fresh replay
// must reproduce the masks recorded on the way forward; a fork must behave
// like the original.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "grammask/matcher.h"
#include "grammask/recognizer.h"
#include "grammask/vocabulary.h"

namespace grammask::fuzz {
namespace {

constexpr uint32_t kStop = 0;     // "</s>"
constexpr uint32_t kControl = 1;  // "<ctl>": special, never matches text
constexpr size_t kMaxOperations = 64;
constexpr int64_t kRawBytes = -1;
constexpr size_t kMaxGrammarBytes = 1024;

// Short tokens that overlap; é, 日本 and 😀 whole and split across tokens;
// 0xFF (never valid UTF-8); an empty token; a duplicate ("a"); a second
// stop token ("<eos>").
const std::vector<std::string>& token_texts() {
  // clang-format off
  static const std::vector<std::string> texts = {
      "</s>", "<ctl>", "", "a", "b", "c", "ab", "abc", "ba", " ", "\n", "0", "1", "12", "-", "+",
      "(", ")", "\"", "{", "}", "[", "]", ",", ":", "true", "false", "null", "\": ", "{\"",
      "\xC3\xA9", "\xC3", "\xA9", "\xE6\x97\xA5\xE6\x9C\xAC", "\xE6\x97", "\xF0\x9F\x98\x80",
      "\xF0\x9F", "\x98\x80", "\xFF", "x", "xy", "  ", "a b", ".", "e", "\\", "\\n", "a", "ab\"",
      "<eos>", "1.5", "\t"};
  // clang-format on
  return texts;
}

const Vocabulary& vocabulary() {
  static const Vocabulary instance = [] {
    const auto eos = std::find(token_texts().begin(), token_texts().end(), "<eos>");
    const auto second_stop = static_cast<uint32_t>(eos - token_texts().begin());
    auto built = Vocabulary::from_token_bytes(token_texts(), {kStop, second_stop}, {kControl});
    FUZZ_CHECK(built.ok(), built.status().to_string());
    return *built;
  }();
  return instance;
}

const char* const kGrammars[] = {
    // Left recursion, precedence.
    "root ::= expr\n"
    "expr ::= expr [-+] term | term\n"
    "term ::= \"(\" expr \")\" | [0-9]+ (\".\" [0-9]+)?\n",
    // Small JSON.
    "root ::= value\n"
    "value ::= object | array | string | number | \"true\" | \"false\" | \"null\"\n"
    "object ::= \"{\" ws (string \":\" ws value (\",\" ws string \":\" ws value)*)? \"}\"\n"
    "array ::= \"[\" ws (value ws (\",\" ws value ws)*)? \"]\"\n"
    "string ::= \"\\\"\" ([^\"\\\\\\x00-\\x1F] | \"\\\\\" [\"\\\\nt])* \"\\\"\" ws\n"
    "number ::= \"-\"? [0-9]+ (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)? ws\n"
    "ws ::= [ \\t\\n]{0,3}\n",
    // Ambiguous, and long optional chains.
    "root ::= \"a\"* \"a\"* (\"b\" | \"ab\")?\n",
    "root ::= \"a\"? \"a\"? \"a\"? \"a\"? \"a\"? \"b\"? \"c\"\n",
    // Non-ASCII classes, negated classes, any character.
    "root ::= ([\\u00E0-\\u00FF] | [\\u65E5-\\u672C] | \"\\U0001F600\" | [a-c])* \"\\n\"?\n",
    "root ::= [^a]{2,5} | . \"x\"\n",
    // Counted repetition, empty alternatives, right recursion.
    "root ::= (\"ab\"{2,4} | \"x\"){1,3} | item\n"
    "item ::= | \"c\" item\n",
    "root ::= \"true\" | \"false\" | \"null\" | \"{\\\"\" [a-z]* \"\\\": \" [0-9]{1,3} \"}\"\n",
};
constexpr size_t kGrammarCount = sizeof(kGrammars) / sizeof(kGrammars[0]);

bool holds_token_item(const Expr& e) {
  if (e.kind == Expr::Kind::kToken) return true;
  for (const Expr& c : e.children)
    if (holds_token_item(c)) return true;
  return false;
}

using Mask = std::vector<uint32_t>;

class Harness {
 public:
  Harness(const CompiledGrammar& compiled, Recognizer oracle)
      : compiled_(compiled), matcher_(compiled), oracle_(std::move(oracle)) {
    masks_.push_back(checked_mask(matcher_, "start"));
  }

  void run(InputCursor& input) {
    for (size_t step = 0; step < kMaxOperations && !input.empty(); ++step) {
      const uint8_t op = input.byte();
      if (op < 0x80) {
        accept(op % vocabulary().size());
      } else if (op < 0xC0) {
        accept_allowed(op - 0x80);
      } else if (op < 0xD0) {
        roll_back(op & 7, (op & 8) != 0);
      } else if (op < 0xE0) {
        fork(op - 0xD0);
      } else if (op < 0xE8) {
        jump_forward();
      } else if (op < 0xF8) {
        std::string bytes;
        for (int n = 1 + (op & 3); n > 0 && !input.empty(); --n) {
          bytes.push_back(static_cast<char>(input.byte()));
        }
        accept_raw(bytes);
      } else {
        reset();
      }
    }
    replay_fresh();
  }

 private:
  // The output so far, as the oracle sees it.
  std::string text() const {
    std::string out;
    for (const std::string& unit : units_) out += unit;
    return out;
  }
  bool terminated() const { return stops_in_history_ > 0; }

  // The mask of `matcher`, checked against the oracle and is_token_allowed.
  Mask checked_mask(Matcher& matcher, const char* when) {
    Mask words(compiled_.mask_words() + 1, ~uint32_t{0});
    const Status status = matcher.fill_mask(words.data(), words.size());
    if (!status.ok()) {
      FUZZ_CHECK(status.code() == ErrorCode::kLimitExceeded, status.to_string());
      return {};
    }
    FUZZ_CHECK(words.back() == 0, "mask bits past the vocabulary");
    FUZZ_CHECK(matcher.num_tokens() == units_.size(), std::string("num_tokens ") + when);
    FUZZ_CHECK(matcher.is_terminated() == terminated(), std::string("is_terminated ") + when);

    const std::string output = text();
    oracle_.reset();
    const bool valid = oracle_.push_bytes(output) == output.size();
    FUZZ_CHECK(valid, "the accepted output is not a valid prefix: " + escaped(output));
    const bool accepting = oracle_.is_accepting();
    if (!terminated()) {
      FUZZ_CHECK(matcher.is_accepting() == accepting, std::string("is_accepting ") + when);
    }
    const size_t base = oracle_.size();
    for (uint32_t id = 0; id < vocabulary().size(); ++id) {
      bool expected = false;
      if (vocabulary().is_stop(id)) {
        expected = terminated() || accepting;
      } else if (!terminated() && !vocabulary().is_special(id)) {
        const std::string_view bytes = vocabulary().token_bytes(id);
        expected = !bytes.empty() && oracle_.push_bytes(bytes) == bytes.size();
        oracle_.truncate(base);
      }
      const std::string where = std::string(when) + ": token " + std::to_string(id) + " (" +
                                escaped(vocabulary().token_bytes(id)) + ") after " +
                                escaped(output);
      FUZZ_CHECK(test_bit(words.data(), id) == expected, "mask bit " + where);
      FUZZ_CHECK(matcher.is_token_allowed(id) == expected, "is_token_allowed " + where);
    }
    words.pop_back();
    return words;
  }

  // Masks are equal, unless one of them hit the work limit (empty).
  static void check_same(const Mask& a, const Mask& b, const std::string& what) {
    if (a.empty() || b.empty()) return;
    FUZZ_CHECK(a == b, what);
  }

  // `token`: the token that added `unit`, or kRawBytes for accept_bytes.
  void record(std::string unit, int64_t token) {
    const bool is_stop = token != kRawBytes && vocabulary().is_stop(static_cast<uint32_t>(token));
    units_.push_back(std::move(unit));
    unit_tokens_.push_back(token);
    if (is_stop) ++stops_in_history_;
    masks_.push_back(checked_mask(matcher_, "after accept"));
  }

  void accept(uint32_t token) {
    const bool allowed = matcher_.is_token_allowed(token);
    const Status status = matcher_.accept_token(token);
    if (status.code() == ErrorCode::kLimitExceeded) return;
    FUZZ_CHECK(status.ok() == allowed, "accept_token(" + std::to_string(token) + ") returned " +
                                           status.to_string() + " but is_token_allowed said " +
                                           (allowed ? "yes" : "no"));
    if (!status.ok()) {
      check_same(checked_mask(matcher_, "after a refused token"), masks_.back(),
                 "a refused token changed the mask");
      return;
    }
    const bool is_stop = vocabulary().is_stop(token);
    record(is_stop ? std::string() : std::string(vocabulary().token_bytes(token)), token);
  }

  // The k-th allowed token of the current mask (wrapping), if any: keeps
  // walks going deep instead of mostly hitting refused ids.
  std::optional<uint32_t> allowed_token(size_t k) const {
    const Mask& mask = masks_.back();
    if (mask.empty()) return std::nullopt;
    std::vector<uint32_t> allowed;
    for (uint32_t id = 0; id < vocabulary().size(); ++id) {
      if (test_bit(mask.data(), id)) allowed.push_back(id);
    }
    if (allowed.empty()) return std::nullopt;
    return allowed[k % allowed.size()];
  }

  void accept_allowed(size_t k) {
    if (const auto token = allowed_token(k)) accept(*token);
  }

  void roll_back(size_t n, bool replay) {
    const size_t before = units_.size();
    const Status status = matcher_.rollback(n);
    if (n > before) {
      FUZZ_CHECK(!status.ok(), "rollback past the start succeeded");
      check_same(checked_mask(matcher_, "after a refused rollback"), masks_.back(),
                 "a refused rollback changed the mask");
      return;
    }
    FUZZ_CHECK(status.ok(), status.to_string());
    std::vector<std::string> undone(units_.end() - n, units_.end());
    const std::vector<int64_t> undone_tokens(unit_tokens_.end() - n, unit_tokens_.end());
    const std::vector<Mask> undone_masks(masks_.end() - n, masks_.end());
    for (size_t i = 0; i < n; ++i) {
      if (unit_tokens_.back() != kRawBytes &&
          vocabulary().is_stop(static_cast<uint32_t>(unit_tokens_.back()))) {
        --stops_in_history_;
      }
      units_.pop_back();
      unit_tokens_.pop_back();
      masks_.pop_back();
    }
    check_same(checked_mask(matcher_, "after rollback"), masks_.back(),
               "rollback(" + std::to_string(n) + ") did not restore the mask");
    if (!replay) return;
    // The same units again must give the same masks as the first time.
    for (size_t i = 0; i < n; ++i) {
      const Status again = accept_unit(matcher_, undone[i], undone_tokens[i]);
      FUZZ_CHECK(again.ok(), "replay after rollback: " + again.to_string());
      record(undone[i], undone_tokens[i]);
      check_same(masks_.back(), undone_masks[i], "replay after rollback gave another mask");
    }
  }

  static Status accept_unit(Matcher& matcher, const std::string& unit, int64_t token) {
    return token == kRawBytes ? matcher.accept_bytes(unit)
                              : matcher.accept_token(static_cast<uint32_t>(token));
  }

  void fork(size_t k) {
    Matcher copy = matcher_;
    check_same(checked_mask(copy, "fork"), masks_.back(), "a fork has another mask");
    const auto token = allowed_token(k);
    if (!token) return;
    // The fork moves on; the original must not notice, then follows.
    const Status forked = copy.accept_token(*token);
    if (forked.code() == ErrorCode::kLimitExceeded) return;
    FUZZ_CHECK(forked.ok(), "an allowed token refused by a fork: " + forked.to_string());
    check_same(checked_mask(matcher_, "original after fork"), masks_.back(),
               "accepting on a fork changed the original");
    const size_t before = units_.size();
    accept(*token);
    if (units_.size() == before) return;  // the work limit refused it
    Mask forked_mask(compiled_.mask_words(), 0);
    if (copy.fill_mask(forked_mask.data(), forked_mask.size()).ok()) {
      check_same(forked_mask, masks_.back(), "the fork and the original disagree");
    }
    if (k % 2 == 0)
      matcher_ = std::move(copy);  // same state: nothing may change
    else
      matcher_ = copy;
    check_same(checked_mask(matcher_, "after assigning the fork"), masks_.back(),
               "assigning the fork changed the mask");
  }

  void jump_forward() {
    const std::string forced = matcher_.forced_bytes(64);
    if (forced.empty()) return;
    FUZZ_CHECK(!terminated(), "forced bytes after termination");
    // Each forced byte must be the only byte the oracle allows there, and
    // the output must not be complete before it.
    oracle_.reset();
    const std::string output = text();
    FUZZ_CHECK(oracle_.push_bytes(output) == output.size(), "oracle replay");
    for (const char c : forced) {
      FUZZ_CHECK(!oracle_.is_accepting(), "forced bytes past a complete output");
      for (int b = 0; b < 256; ++b) {
        FUZZ_CHECK(oracle_.allows_byte(static_cast<uint8_t>(b)) == (b == static_cast<uint8_t>(c)),
                   "forced byte " + escaped(std::string(1, c)) + " is not the only way on after " +
                       escaped(output));
      }
      FUZZ_CHECK(oracle_.push_byte(static_cast<uint8_t>(c)), "forced byte refused");
    }
    accept_raw(forced);
  }

  void accept_raw(const std::string& bytes) {
    oracle_.reset();
    const std::string output = text();
    oracle_.push_bytes(output);
    const bool expected = !terminated() && oracle_.push_bytes(bytes) == bytes.size();
    const Status status = matcher_.accept_bytes(bytes);
    if (status.code() == ErrorCode::kLimitExceeded) return;
    FUZZ_CHECK(status.ok() == expected, "accept_bytes(" + escaped(bytes) + ") after " +
                                            escaped(output) + ": " + status.to_string());
    if (terminated()) {
      FUZZ_CHECK(status.code() == ErrorCode::kInvalidState, "bytes after termination");
    }
    if (!status.ok()) {
      check_same(checked_mask(matcher_, "after refused bytes"), masks_.back(),
                 "refused bytes changed the mask");
      return;
    }
    record(bytes, kRawBytes);
  }

  void reset() {
    matcher_.reset();
    units_.clear();
    unit_tokens_.clear();
    stops_in_history_ = 0;
    masks_.resize(1);
    check_same(checked_mask(matcher_, "after reset"), masks_.front(), "reset: another mask");
  }

  // A fresh matcher fed the whole history sees the masks recorded so far.
  void replay_fresh() {
    Matcher fresh(compiled_);
    Mask words(compiled_.mask_words(), 0);
    for (size_t i = 0; i <= units_.size(); ++i) {
      if (fresh.fill_mask(words.data(), words.size()).ok()) {
        check_same(words, masks_[i],
                   "a fresh replay gave another mask at unit " + std::to_string(i));
      }
      if (i == units_.size()) break;
      const Status status = accept_unit(fresh, units_[i], unit_tokens_[i]);
      FUZZ_CHECK(status.ok(), "fresh replay: " + status.to_string());
    }
  }

  const CompiledGrammar& compiled_;
  Matcher matcher_;
  Recognizer oracle_;
  std::vector<std::string> units_;    // what each accepted token or byte string added
  std::vector<int64_t> unit_tokens_;  // the token of each unit, or kRawBytes
  size_t stops_in_history_ = 0;
  std::vector<Mask> masks_;  // masks_[i]: the mask after the first i units
};

}  // namespace
}  // namespace grammask::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace grammask;
  fuzz::InputCursor input(data, size);
  const uint8_t selector = input.byte();
  std::string_view text;
  if (selector % 2 == 0) {
    text = fuzz::kGrammars[(selector / 2) % fuzz::kGrammarCount];
  } else {
    text = input.until('\0');
    if (text.size() > fuzz::kMaxGrammarBytes) return 0;
  }
  auto grammar = parse_gbnf(text);
  if (!grammar.ok()) return 0;
  // The byte-level oracle knows nothing of token items (matched by id,
  // never by bytes): the token_items target checks those grammars.
  for (const Rule& rule : grammar->rules())
    if (fuzz::holds_token_item(rule.body)) return 0;

  CompileOptions options;
  options.recognizer.max_states = fuzz::kFuzzMaxStates;
  options.recognizer.max_lowering_work = fuzz::kFuzzMaxLoweringWork;
  auto compiled = CompiledGrammar::compile(*grammar, fuzz::vocabulary(), options);
  auto oracle = Recognizer::create(*grammar, "root", options.recognizer);
  FUZZ_CHECK(compiled.ok() == oracle.ok(), "compile and Recognizer::create disagree");
  if (!compiled.ok()) {
    // Beside the limits, only a Regex or LazyRegex pattern may be refused,
    // or an AnyOrder(...) member or separator.
    const Status& why = compiled.status();
    const bool pattern =
        why.message().find("Regex: ") != std::string::npos &&
        (why.code() == ErrorCode::kSyntax || why.code() == ErrorCode::kUnsupported);
    FUZZ_CHECK(why.code() == ErrorCode::kLimitExceeded || pattern || fuzz::any_order_refusal(why),
               why.to_string());
    return 0;
  }
  fuzz::Harness harness(*compiled, std::move(*oracle));
  harness.run(input);
  return 0;
}
