// Token masks: a grammar compiled against a vocabulary, and the per-sequence
// Matcher that an inference engine drives in its sampling loop.
//
//   auto compiled = CompiledGrammar::from_gbnf(text, vocabulary);
//   Matcher m(*compiled);
//   std::vector<uint32_t> mask(mask_words(n_logits));
//   for (;;) {
//     m.fill_mask(mask.data(), mask.size());
//     apply_mask(logits, n_logits, mask.data());
//     uint32_t token = sample(logits);
//     m.accept_token(token);
//     if (m.is_terminated()) break;
//   }
#ifndef GRAMMASK_MATCHER_H_
#define GRAMMASK_MATCHER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammask/gbnf.h"
#include "grammask/grammar.h"
#include "grammask/recognizer.h"
#include "grammask/status.h"
#include "grammask/thread_pool.h"
#include "grammask/vocabulary.h"

namespace grammask {

namespace internal {
struct CompiledGrammarData;
class MatcherState;
}  // namespace internal

struct CompileOptions {
  std::string root = "root";     // start rule
  RecognizerOptions recognizer;  // lowering and per-byte work limits
  // Bounds for parsing the text given to from_gbnf (untrusted grammars:
  // GbnfOptions::max_rules etc.). Its `root` is not used: `root` above names
  // the start rule. compile() does not parse and ignores it.
  GbnfOptions gbnf;
  // Upper bound on the work of one mask computation (token-trie nodes
  // visited plus Earley work; see RecognizerOptions::max_work_per_byte).
  // Past it fill_mask fails with kLimitExceeded instead of computing a
  // mask. Ordinary grammars stay far below the default on a 150k vocabulary.
  uint64_t max_mask_work = uint64_t{1} << 25;
  // How much of the token-trie walking inside rules (a string body, a
  // number, a keyword) compile() does ahead of time, in walks of the whole
  // trie, a trie of fewer than 131,072 nodes counting as that many; 0: none.
  // Masks at the states it reaches are copies from the first step on; the
  // others are walked by the first fill_mask that needs them. Masks are the
  // same either way.
  double precompute_budget = 0.25;
  // Memory for the token-trie walks a CompiledGrammar caches for all its
  // Matchers and copies, those precomputed here included (precomputing
  // stops when it is spent): past it, a Matcher keeps the walks it makes
  // for itself. CompiledGrammar::cache_bytes() never exceeds it.
  size_t max_cache_bytes = size_t{64} << 20;
  // Memory each Matcher of the grammar may keep for itself: half for the
  // masks it computed, half for walks the grammar had no room to cache. A
  // mask or walk that would pass its half first empties it (a single walk
  // larger than its half is still kept alone; such a mask is not kept).
  size_t max_matcher_cache_bytes = size_t{64} << 20;
  // The budgets change how often masks are recomputed, never the masks.
};

// A grammar lowered to byte automata plus the vocabulary it masks; copies
// share the data. Thread-safe: any number of Matchers on any threads may
// share one. Its Matchers share through it the token-trie walks they
// compute, up to CompileOptions::max_cache_bytes per CompiledGrammar in all
// (copies included).
class CompiledGrammar {
 public:
  // Token items are resolved here: an id past the vocabulary, or a text
  // that no token has, fails with kInvalidArgument naming the item and its
  // line:column. Lowering's errors as for Recognizer::create. Cost: lowering
  // and analysing the grammar (about linear in its lowered size), plus the
  // walks of CompileOptions::precompute_budget, plus a pass over the
  // vocabulary when a token item names a token by its text.
  static Result<CompiledGrammar> compile(const Grammar& grammar, const Vocabulary& vocabulary,
                                         const CompileOptions& options = {});
  // parse_gbnf (with options.gbnf, root options.root) + compile. Syntax
  // errors carry line:column; a bound of options.gbnf passed fails with
  // kLimitExceeded naming it.
  static Result<CompiledGrammar> from_gbnf(std::string_view gbnf, const Vocabulary& vocabulary,
                                           const CompileOptions& options = {});

  const Vocabulary& vocabulary() const noexcept;
  // Words a mask must have at least: mask_words(vocabulary().size()).
  size_t mask_words() const noexcept;

  // Heap bytes of the compiled grammar, shared by its copies: its tables
  // (fixed once compiled) plus cache_bytes(), without the vocabulary
  // (Vocabulary::memory_bytes). Thread-safe; O(1).
  size_t memory_bytes() const noexcept;
  // The bytes of token-trie walks it caches now for its Matchers: at most
  // CompileOptions::max_cache_bytes. Thread-safe; O(1).
  size_t cache_bytes() const noexcept;

 private:
  friend class Matcher;
  explicit CompiledGrammar(std::shared_ptr<const internal::CompiledGrammarData> data)
      : data_(std::move(data)) {}
  std::shared_ptr<const internal::CompiledGrammarData> data_;
};

// The state of one sequence being decoded. Not thread-safe: use one Matcher
// per sequence (copy one to fork a beam); many Matchers may share one
// CompiledGrammar across threads. Besides its parse, a Matcher keeps masks
// it computed and walks its grammar had no room to share, within
// CompileOptions::max_matcher_cache_bytes; a copy starts with copies of both.
//
// A moved-from Matcher holds no state: its calls do not crash but fail
// (fill_mask, accept_token, accept_bytes and rollback with kInvalidState)
// or report nothing (is_token_allowed, is_accepting, is_terminated: false;
// num_tokens and the cache counters: 0; forced_bytes: empty); reset() does
// nothing, and a copy of it is moved-from too. Assigning a Matcher to it
// makes it usable again.
class Matcher {
 public:
  explicit Matcher(const CompiledGrammar& grammar);
  Matcher(const Matcher&);  // fork: independent state, shared grammar
  Matcher& operator=(const Matcher&);
  Matcher(Matcher&&) noexcept;
  Matcher& operator=(Matcher&&) noexcept;
  ~Matcher();

  // Writes the allowed-token mask: bit i%32 of words[i/32] is set iff token i
  // may come next. Stop tokens are allowed when the output so far is
  // complete, or where a token item naming one may come next (docs/GBNF.md,
  // "Token items"); after a stop token only stop tokens are. Words past the
  // vocabulary are zeroed. Fails with kInvalidArgument (writing nothing) if
  // n_words < mask_words() or words is null (with an empty vocabulary,
  // fill_mask(nullptr, 0) succeeds and writes nothing), and with
  // kLimitExceeded (all words zero) if the computation would pass
  // CompileOptions::max_mask_work. Cost: O(n_words) when the mask is known:
  // computed by this Matcher at an equivalent parser state (a cache hit), or
  // fixed by DFA states whose walk this Matcher or its grammar holds; else a
  // walk of the token trie, bounded by CompileOptions::max_mask_work.
  Status fill_mask(uint32_t* words, size_t n_words);

  // Appends a token. Refuses (kInvalidArgument, state unchanged) a token
  // that is not allowed, out of range, or any token after termination except
  // a stop token (kInvalidState). A stop token terminates the matcher,
  // unless a token item that names it reads it as grammar input. A token
  // that spells text and that a token item reads keeps both readings.
  // kLimitExceeded (state unchanged) if a byte would pass
  // RecognizerOptions::max_work_per_byte.
  Status accept_token(uint32_t token);
  // True if accept_token(token) would succeed (false also when it would fail
  // with kLimitExceeded). O(token length).
  bool is_token_allowed(uint32_t token) const;
  // Appends raw bytes (e.g. a jump-forward string); all or nothing. Errors
  // as for accept_token.
  Status accept_bytes(std::string_view bytes);

  // Undoes the last n accepted tokens (accept_bytes counts as one token).
  // kInvalidArgument if n exceeds num_tokens(); then nothing changes.
  Status rollback(size_t n_tokens);
  void reset() noexcept;

  size_t num_tokens() const noexcept;
  // The output so far is a complete sentence of the grammar.
  bool is_accepting() const noexcept;
  // A stop token was accepted.
  bool is_terminated() const noexcept;
  // The bytes that are the only way forward from here (jump-forward
  // decoding), stopping where the output could also end or branch, or where
  // a token item may come next. Empty if there is no forced continuation.
  // Does not change the state.
  std::string forced_bytes(size_t max_bytes = 4096) const;

  // Jump-forward as tokens: the forced continuation (forced_bytes) split
  // by `tokenize` (the engine's tokenizer, text to ids), cut to the longest
  // prefix of those tokens that spells a prefix of the forced bytes and that
  // this matcher accepts in order, less its last token if a longer token of
  // the vocabulary begins with that token's bytes (text still to come could
  // merge with it; llguidance's rule for fast-forward tokens). Empty if
  // nothing is forced. The first token starts where the last accepted one
  // ended: merges across that boundary are not looked for. Does not change
  // the state. Cost: forced_bytes, one tokenize call, O(bytes) more.
  std::vector<uint32_t> forced_tokens(
      const std::function<std::vector<uint32_t>(std::string_view)>& tokenize,
      size_t max_bytes = 4096) const;

  // Speculative decoding. accept_draft appends draft tokens in order until
  // one is refused and returns how many it appended (each one token for
  // rollback); the state is after the last of them.
  size_t accept_draft(const uint32_t* tokens, size_t n_tokens);
  // The verifier's masks: row i (row_words words, at words + i * row_words)
  // for i = 0..n_tokens is the mask after the first i draft tokens; the
  // rows after a draft token this matcher refuses are zero. The state is
  // the same after the call (its caches may have grown). Errors as
  // fill_mask (kInvalidArgument if row_words < mask_words()).
  Status fill_draft_masks(const uint32_t* draft, size_t n_tokens, uint32_t* words,
                          size_t row_words);

  // Heap bytes this Matcher holds: its parse and the masks and walks it
  // keeps, not its CompiledGrammar (0 when moved-from). O(parser states
  // seen).
  size_t memory_bytes() const noexcept;

  // Statistics of this matcher's mask cache (for benchmarks and tests).
  size_t mask_cache_hits() const noexcept;
  size_t mask_cache_misses() const noexcept;

 private:
  std::unique_ptr<internal::MatcherState> state_;
};

// Fills row i of `words` (rows of `row_words` words) with the mask of
// matchers[i] on `pool`. Each Matcher is touched by exactly one thread.
// Fails if row_words is too small for any matcher; rows of matchers that
// failed are left unspecified.
Status fill_masks(Matcher* const* matchers, size_t n_matchers, uint32_t* words, size_t row_words,
                  ThreadPool& pool);
// The same on a temporary pool of `threads` threads (0: hardware
// concurrency), started and joined within the call.
Status fill_masks(Matcher* const* matchers, size_t n_matchers, uint32_t* words, size_t row_words,
                  size_t threads = 0);

}  // namespace grammask

#endif  // GRAMMASK_MATCHER_H_
