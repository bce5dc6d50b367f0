// Fuzz target: a Matcher for a grammar with token items (<[id]>, <text>,
// !<...>) over a small fixed vocabulary, driven by the input.
//
// Input: GBNF text up to a NUL byte, then one byte per operation: accept
// the k-th allowed token, accept the k-th refused token (it must be refused
// and leave the state unchanged), accept any id, roll back, fork, reset.
// After every operation the mask is checked against TokenOracle
// (tests/token_oracle.h, a brute-force oracle that rewrites each item into a
// private-use character) and against is_token_allowed; rollback and a
// replay must reproduce the masks recorded on the way forward; a fork must
// behave like the original.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../token_oracle.h"
#include "fuzz_check.h"
#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "grammask/matcher.h"
#include "grammask/vocabulary.h"

namespace grammask::fuzz {
namespace {

using testing::TokenOracle;

constexpr size_t kMaxOperations = 64;
constexpr size_t kMaxGrammarBytes = 1024;
// Ambiguous grammars read a token in several ways at once; the oracle
// follows each way, so the walk stops once it follows this many.
constexpr size_t kMaxOraclePaths = 64;

// Control tokens 0-4 (0 also the stop token); text tokens spelling the
// control tokens' text, whole (5 "<think>", the duplicate-text pair with 1)
// and in pieces; text tokens with equal text (13 and 33 "ab"; 34 and 35
// "<x>", which the item <x> names both).
const Vocabulary& vocabulary() {
  static const Vocabulary instance = [] {
    // clang-format off
    const std::vector<std::string> tokens = {
        "<|im_end|>", "<think>", "</think>", "<tool_call>", "<|end|>", "<think>", "<",
        "|",          "im",      "_",        "end|>",       "a",       "b",       "ab",
        "abc",        " ",       "\n",       "{",           "}",       "\"",      ":",
        "1",          "x",       "</",       "think>",      "ink",     "<|",      "!",
        "?",          "\xC3",    "\xA9",     "\xC3\xA9",    "th",      "ab",
        "<x>",        "<x>"};
    // clang-format on
    auto built = Vocabulary::from_token_bytes(tokens, /*stop_ids=*/{0},
                                              /*special_ids=*/{0, 1, 2, 3, 4});
    FUZZ_CHECK(built.ok(), built.status().to_string());
    return *built;
  }();
  return instance;
}

using Mask = std::vector<uint32_t>;

std::string ids_text(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) out += " " + std::to_string(id);
  return out;
}

class Harness {
 public:
  Harness(const CompiledGrammar& compiled, TokenOracle oracle)
      : compiled_(compiled), matcher_(compiled) {
    oracles_.push_back(std::move(oracle));
    masks_.push_back(checked_mask(matcher_, "start"));
  }

  void run(InputCursor& input) {
    for (size_t step = 0; step < kMaxOperations && !input.empty(); ++step) {
      if (oracles_.back().paths() > kMaxOraclePaths || masks_.back().empty()) return;
      const uint8_t op = input.byte();
      if (op < 0x80) {
        if (const auto token = pick(op, true)) accept(*token);
      } else if (op < 0xA0) {
        if (const auto token = pick(op - 0x80, false)) accept(*token);
      } else if (op < 0xC0) {
        accept(op % vocabulary().size());
      } else if (op < 0xD0) {
        roll_back(op & 7, (op & 8) != 0);
      } else if (op < 0xE0) {
        fork(op - 0xD0);
      } else {
        reset();
      }
    }
  }

 private:
  // The mask of `matcher`, checked against the oracle and is_token_allowed;
  // empty when the matcher hit its work limit.
  Mask checked_mask(Matcher& matcher, const char* when) {
    Mask words(compiled_.mask_words() + 1, ~uint32_t{0});
    const Status status = matcher.fill_mask(words.data(), words.size());
    if (!status.ok()) {
      FUZZ_CHECK(status.code() == ErrorCode::kLimitExceeded, status.to_string());
      return {};
    }
    FUZZ_CHECK(words.back() == 0, "mask bits past the vocabulary");
    words.pop_back();
    TokenOracle& oracle = oracles_.back();
    const std::string after = std::string(when) + ", after tokens" + ids_text(tokens_);
    FUZZ_CHECK(matcher.num_tokens() == tokens_.size(), "num_tokens " + after);
    FUZZ_CHECK(matcher.is_terminated() == oracle.terminated(), "is_terminated " + after);
    if (!oracle.terminated()) {
      FUZZ_CHECK(matcher.is_accepting() == oracle.is_accepting(), "is_accepting " + after);
    }
    const Mask expected = oracle.mask(words.size());
    for (uint32_t id = 0; id < vocabulary().size(); ++id) {
      const bool want = test_bit(expected.data(), id);
      const std::string where = "token " + std::to_string(id) + " (" +
                                escaped(vocabulary().token_bytes(id)) + ") " + after +
                                (want ? ": oracle allows it" : ": oracle refuses it");
      FUZZ_CHECK(test_bit(words.data(), id) == want, "mask bit of " + where);
      FUZZ_CHECK(matcher.is_token_allowed(id) == want, "is_token_allowed of " + where);
    }
    FUZZ_CHECK(words == expected, "mask words " + after);
    return words;
  }

  static void check_same(const Mask& a, const Mask& b, const std::string& what) {
    if (a.empty() || b.empty()) return;  // a work limit was hit
    FUZZ_CHECK(a == b, what);
  }

  // The k-th (wrapping) allowed or refused token of the current mask.
  std::optional<uint32_t> pick(size_t k, bool allowed) const {
    const Mask& mask = masks_.back();
    std::vector<uint32_t> ids;
    for (uint32_t id = 0; id < vocabulary().size(); ++id)
      if (test_bit(mask.data(), id) == allowed) ids.push_back(id);
    if (ids.empty()) return std::nullopt;
    return ids[k % ids.size()];
  }

  void accept(uint32_t token) {
    if (masks_.back().empty()) return;  // a work limit was hit
    const bool allowed = test_bit(masks_.back().data(), token);
    const Status status = matcher_.accept_token(token);
    if (status.code() == ErrorCode::kLimitExceeded) return;
    FUZZ_CHECK(status.ok() == allowed, "accept_token(" + std::to_string(token) + ") after" +
                                           ids_text(tokens_) + " returned " + status.to_string() +
                                           " but the mask says " +
                                           (allowed ? "allowed" : "refused"));
    if (!status.ok()) {
      check_same(checked_mask(matcher_, "after a refused token"), masks_.back(),
                 "a refused token changed the mask");
      return;
    }
    tokens_.push_back(token);
    TokenOracle next = oracles_.back();
    next.accept(token);
    oracles_.push_back(std::move(next));
    masks_.push_back(checked_mask(matcher_, "after accept"));
  }

  void roll_back(size_t n, bool replay) {
    const size_t before = tokens_.size();
    const Status status = matcher_.rollback(n);
    if (n > before) {
      FUZZ_CHECK(!status.ok(), "rollback past the start succeeded");
      check_same(checked_mask(matcher_, "after a refused rollback"), masks_.back(),
                 "a refused rollback changed the mask");
      return;
    }
    FUZZ_CHECK(status.ok(), status.to_string());
    const std::vector<uint32_t> undone(tokens_.end() - n, tokens_.end());
    const std::vector<Mask> undone_masks(masks_.end() - n, masks_.end());
    tokens_.resize(before - n);
    oracles_.erase(oracles_.begin() + static_cast<std::ptrdiff_t>(before - n + 1), oracles_.end());
    masks_.resize(before - n + 1);
    check_same(checked_mask(matcher_, "after rollback"), masks_.back(),
               "rollback(" + std::to_string(n) + ") did not restore the mask");
    if (!replay) return;
    for (size_t i = 0; i < n; ++i) {
      const size_t count = tokens_.size();
      accept(undone[i]);
      if (tokens_.size() == count) return;  // the work limit refused it
      check_same(masks_.back(), undone_masks[i], "replay after rollback gave another mask");
    }
  }

  void fork(size_t k) {
    Matcher copy = matcher_;
    check_same(checked_mask(copy, "fork"), masks_.back(), "a fork has another mask");
    const auto token = pick(k, true);
    if (!token) return;
    // The fork moves on; the original must not notice, then follows.
    const Status forked = copy.accept_token(*token);
    if (forked.code() == ErrorCode::kLimitExceeded) return;
    FUZZ_CHECK(forked.ok(), "an allowed token refused by a fork: " + forked.to_string());
    check_same(checked_mask(matcher_, "original after fork"), masks_.back(),
               "accepting on a fork changed the original");
    const size_t before = tokens_.size();
    accept(*token);
    if (tokens_.size() == before) return;  // the work limit refused it
    FUZZ_CHECK(copy.is_terminated() == matcher_.is_terminated(), "fork: is_terminated");
    Mask forked_mask(compiled_.mask_words(), 0);
    if (copy.fill_mask(forked_mask.data(), forked_mask.size()).ok()) {
      check_same(forked_mask, masks_.back(), "the fork and the original disagree");
    }
    if (k % 2 == 0)
      matcher_ = std::move(copy);
    else
      matcher_ = copy;
    check_same(checked_mask(matcher_, "after assigning the fork"), masks_.back(),
               "assigning the fork changed the mask");
  }

  void reset() {
    matcher_.reset();
    tokens_.clear();
    oracles_.erase(oracles_.begin() + 1, oracles_.end());
    masks_.resize(1);
    check_same(checked_mask(matcher_, "after reset"), masks_.front(), "reset: another mask");
  }

  const CompiledGrammar& compiled_;
  Matcher matcher_;
  std::vector<uint32_t> tokens_;      // the tokens accepted so far
  std::vector<TokenOracle> oracles_;  // oracles_[i]: after the first i tokens
  std::vector<Mask> masks_;           // masks_[i]: the mask after the first i tokens
};

}  // namespace
}  // namespace grammask::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace grammask;
  fuzz::InputCursor input(data, size);
  const std::string_view text = input.until('\0');
  if (text.size() > fuzz::kMaxGrammarBytes) return 0;
  auto grammar = parse_gbnf(text);
  if (!grammar.ok()) {
    const ErrorCode code = grammar.status().code();
    FUZZ_CHECK(code == ErrorCode::kSyntax || code == ErrorCode::kLimitExceeded ||
                   code == ErrorCode::kUnsupported,
               grammar.status().to_string());
    return 0;
  }
  CompileOptions options;
  options.recognizer.max_states = fuzz::kFuzzMaxStates;
  options.recognizer.max_lowering_work = fuzz::kFuzzMaxLoweringWork;
  auto compiled = CompiledGrammar::compile(*grammar, fuzz::vocabulary(), options);
  if (!compiled.ok()) {
    const Status& why = compiled.status();
    // An unknown token name or an id past the vocabulary, at the item.
    const bool item = why.code() == ErrorCode::kInvalidArgument &&
                      why.message().find("token item ") != std::string::npos &&
                      why.where().line > 0;
    // A Regex or LazyRegex pattern is read when lowered.
    const bool pattern =
        why.message().find("Regex: ") != std::string::npos &&
        (why.code() == ErrorCode::kSyntax || why.code() == ErrorCode::kUnsupported);
    FUZZ_CHECK(
        why.code() == ErrorCode::kLimitExceeded || item || pattern || fuzz::any_order_refusal(why),
        why.to_string());
    return 0;
  }
  testing::TokenOracle oracle(*grammar, fuzz::vocabulary(), options.recognizer);
  // The rewritten grammars are other grammars: they may pass the limits.
  if (!oracle.ok()) {
    FUZZ_CHECK(oracle.status().code() == ErrorCode::kLimitExceeded, oracle.status().to_string());
    return 0;
  }
  if (!oracle.supported()) return 0;
  fuzz::Harness harness(*compiled, std::move(oracle));
  harness.run(input);
  return 0;
}
