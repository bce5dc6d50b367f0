// Lazy grammars, with llama.cpp's trigger semantics: the output is free text
// until a trigger fires, and from then on a grammar constrains it.
//
//   auto lazy = LazyMatcher::create(compiled, {/*words=*/{"<tool_call>"}});
//   LazyMatcher m = *lazy;  // one per sequence: copy the one created
//   m.fill_mask(mask.data(), mask.size());
//   m.accept_token(token);
//
// docs/lazy-grammars.md states the semantics, where they differ from
// llama.cpp, and the costs.
#ifndef GRAMMASK_LAZY_MATCHER_H_
#define GRAMMASK_LAZY_MATCHER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammask/matcher.h"
#include "grammask/status.h"

namespace grammask {

namespace internal {
struct LazyState;
}  // namespace internal

// What fires the grammar (llama.cpp's common_grammar_trigger kinds).
struct LazyTriggers {
  // Fires when the output contains the word (WORD).
  std::vector<std::string> words;
  // ECMA-262 regexes over code points that fire when the output contains a
  // match (PATTERN).
  std::vector<std::string> patterns;
  // ECMA-262 regexes that fire when the whole output at a token boundary
  // matches (PATTERN_FULL); the grammar's text starts at the first
  // capturing group, or at the start of the output if there is none.
  std::vector<std::string> full_patterns;
  // Token ids that fire when sampled; their text is the grammar's first
  // input (TOKEN).
  std::vector<uint32_t> tokens;
};

// One sequence of a lazy grammar. Before the trigger every token is allowed
// except one that would fire a trigger whose text the grammar refuses; the
// output goes to a buffer. A token fires by its id (trigger tokens) or when
// the output after it contains a word or matches a pattern; the grammar then
// reads the output from the trigger's start (which may lie in earlier
// tokens) to the end of that token, and constrains the rest exactly as a
// Matcher does. A stop token before the trigger ends the output (it fires
// nothing). With no triggers at all the grammar never fires.
//
// Not thread-safe, const calls included: one LazyMatcher per sequence (copy
// one to fork or to start a sequence). Copies share the compiled grammar and
// the trigger tables, whose per-state cache is thread-safe. A moved-from
// LazyMatcher fails its calls with kInvalidState (or reports false / 0)
// until one is assigned to it.
class LazyMatcher {
 public:
  LazyMatcher(const LazyMatcher&);
  LazyMatcher& operator=(const LazyMatcher&);
  LazyMatcher(LazyMatcher&&) noexcept;
  LazyMatcher& operator=(LazyMatcher&&) noexcept;
  ~LazyMatcher();

  // Compiles the triggers against grammar.vocabulary(). Fails with
  // kInvalidArgument (an empty word, a token id out of range or a stop
  // token), kSyntax (a malformed pattern), kUnsupported (what cannot be
  // enforced exactly: lookaround, backreferences, \b, an anchor inside a
  // pattern, a pattern that matches the empty output, a full pattern whose
  // first capturing group is nested, repeated or may be empty, more than 32
  // full patterns) and kLimitExceeded (more than 1 MiB of words, their
  // automaton over 2^23 table entries, a pattern automaton over 4,096
  // states: SECURITY.md). Each message names the trigger. Cost:
  // linear in the words; the pattern automata; a check of each trigger
  // token against the grammar.
  static Result<LazyMatcher> create(const CompiledGrammar& grammar, const LazyTriggers& triggers);

  // Writes the mask as Matcher::fill_mask does, same errors. Before the
  // trigger: a fill of the mask words less the firing tokens cached for the
  // trigger scanner's state (the first visit of a state walks the token trie
  // once); with patterns, each token that would fire is also checked against
  // the grammar (its bytes, plus the grammar reading the pending output from
  // the trigger's start once per distinct start). After it:
  // Matcher::fill_mask.
  Status fill_mask(uint32_t* words, size_t n_words);
  // Appends a token. Refuses (kInvalidArgument, state unchanged) a token out
  // of range, or one that fires a trigger whose text the grammar refuses;
  // after a stop token only stop tokens (kInvalidState). After the trigger:
  // Matcher::accept_token. O(token length) before the trigger, plus the
  // grammar's reading of the trigger text when it fires.
  Status accept_token(uint32_t token);
  // True if accept_token(token) would succeed. Does not change the state.
  bool is_token_allowed(uint32_t token) const;

  // Undoes the last n accepted tokens, across the trigger too (back to
  // waiting for it, with the output as it was). kInvalidArgument if n
  // exceeds num_tokens(); then nothing changes.
  Status rollback(size_t n_tokens);
  // Back to the empty output, waiting for a trigger.
  void reset() noexcept;

  // A trigger fired (the grammar constrains the output).
  bool is_triggered() const noexcept;
  // The output may end here: always before the trigger, then when the
  // grammar's output is complete.
  bool is_accepting() const noexcept;
  // A stop token was accepted.
  bool is_terminated() const noexcept;
  size_t num_tokens() const noexcept;
  // The output before the trigger, stop tokens left out (what the words
  // and patterns are matched against); kept once triggered.
  std::string pending_output() const;

 private:
  explicit LazyMatcher(std::unique_ptr<internal::LazyState> state);
  std::unique_ptr<internal::LazyState> state_;
};

}  // namespace grammask

#endif  // GRAMMASK_LAZY_MATCHER_H_
