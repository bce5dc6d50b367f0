// The trigger scanner of a lazy grammar (internal): which output fires a
// trigger word or pattern, read one byte at a time in O(1) per byte, and
// where the constrained text starts once one fires. docs/lazy-grammars.md
// explains the automata. Immutable after build(): safe to share across
// threads.
#ifndef GRAMMASK_SRC_MASK_TRIGGER_SCANNER_H_
#define GRAMMASK_SRC_MASK_TRIGGER_SCANNER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammask/status.h"
#include "regex/char_dfa.h"

namespace grammask::internal {

// Where the scanner stands after some output. Equal states have equal
// futures: the key of the per-state caches.
struct ScanState {
  uint32_t words = 0;     // Aho-Corasick state
  uint32_t anywhere = 0;  // DFA of "contains a pattern match" (sticky when accepting)
  uint32_t full = 0;      // product DFA of the full patterns (label: bit i = pattern i)
  uint8_t fired_word = 0;
  uint8_t pending_len = 0;  // bytes of an unfinished UTF-8 sequence
  uint8_t pending[3] = {0, 0, 0};

  bool operator==(const ScanState& o) const noexcept {
    return words == o.words && anywhere == o.anywhere && full == o.full &&
           fired_word == o.fired_word && pending_len == o.pending_len &&
           pending[0] == o.pending[0] && pending[1] == o.pending[1] && pending[2] == o.pending[2];
  }
};

struct ScanStateHash {
  size_t operator()(const ScanState& s) const noexcept {
    uint64_t h = s.words * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t{s.anywhere} << 32 | s.full) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= (uint64_t{s.fired_word} | uint64_t{s.pending_len} << 8 | uint64_t{s.pending[0]} << 16 |
          uint64_t{s.pending[1]} << 24 | uint64_t{s.pending[2]} << 32) +
         (h << 6) + (h >> 2);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

class TriggerScanner {
 public:
  // Compiles the triggers. kInvalidArgument: an empty word. kSyntax /
  // kUnsupported: a pattern the regex parser refuses (lookaround,
  // backreferences, \b), an anchor inside a pattern (other than a full
  // pattern's leading ^ and trailing $), a pattern that matches the empty
  // output, a full pattern whose first capturing group is not a plain part of
  // its top-level sequence or may be empty, more than 32 full patterns.
  // kLimitExceeded: more than 1 MiB of words or 2^23 entries in their
  // automaton's table, or a pattern automaton over 4,096 states.
  static Result<TriggerScanner> build(const std::vector<std::string>& words,
                                      const std::vector<std::string>& patterns,
                                      const std::vector<std::string>& full_patterns);

  bool empty() const noexcept { return !has_words_ && !has_anywhere_ && full_count_ == 0; }
  // True when only words are set: the constrained text of a token that fires
  // then depends on the state and the token alone.
  bool words_only() const noexcept { return !has_anywhere_ && full_count_ == 0; }

  ScanState start() const noexcept { return ScanState{}; }
  // Reads one byte.
  void step(ScanState& s, uint8_t byte) const noexcept;
  // True if output that leaves the scanner in `s` at a token boundary fires
  // a word or pattern.
  bool fires(const ScanState& s) const noexcept;
  // True if every extension of `s` fires too (a word or anywhere pattern
  // matched).
  bool fires_forever(const ScanState& s) const noexcept;
  // The bytes of `s`'s Aho-Corasick state: the longest suffix of the output
  // that is a prefix of a word.
  size_t word_depth(const ScanState& s) const noexcept { return ac_depth_[s.words]; }

  // The search for where the constrained text starts, fed the output one
  // piece at a time: feed() the output before a token once, then copy the
  // search and feed() each token. O(bytes x active pattern states).
  struct StartSearch {
    size_t offset = 0;  // bytes fed
    uint32_t words = 0;
    size_t word_found = std::string::npos;  // earliest start of a word match
    uint32_t full = 0;                      // state of the full patterns' product
    uint8_t pending[3] = {0, 0, 0};
    uint8_t pending_len = 0;
    size_t pending_start = 0;
    // Per automaton, (state, earliest start in bytes that reached it).
    std::vector<std::pair<uint32_t, size_t>> anywhere;
    size_t anywhere_found = std::string::npos;
    std::vector<uint32_t> prefix;  // per full pattern: the part before its group
    std::vector<std::vector<std::pair<uint32_t, size_t>>> rest;
  };
  StartSearch start_search() const;
  void feed(StartSearch& search, std::string_view bytes) const;
  // Where the constrained text starts in the output fed so far, which fires
  // (fires(state after it)): the first capturing group of the first full
  // pattern that matches it whole, else the earliest start of a word or
  // anywhere-pattern match.
  size_t start_of(const StartSearch& search) const;
  // start_of after feeding `text` to a new search.
  size_t constrained_start(std::string_view text) const;

 private:
  struct CpDfa {
    std::vector<uint32_t> ascii;  // [state * 128 + c] -> target or kDead
    std::vector<std::vector<std::pair<CodePointSet, uint32_t>>> other;  // per state, non-ASCII
    std::vector<uint32_t> label;
    uint32_t next(uint32_t state, uint32_t cp) const noexcept;
    static CpDfa from(const CharDfa& dfa);
  };
  struct FullPattern {
    CpDfa prefix;  // the part before the first capturing group (whole match)
    CpDfa rest;    // the group and what follows it (whole match)
    bool has_group = false;
  };

  void step_code_point(ScanState& s, uint32_t cp) const noexcept;
  void code_point(StartSearch& search, uint32_t cp, size_t start) const;

  bool has_words_ = false;
  bool has_anywhere_ = false;
  uint32_t full_count_ = 0;
  // Aho-Corasick over byte classes of the word bytes.
  uint16_t byte_class_[256] = {};
  uint32_t n_classes_ = 1;
  std::vector<uint32_t> ac_next_;  // [state * n_classes_ + class]
  std::vector<uint32_t> ac_depth_;
  std::vector<uint32_t> ac_longest_;  // longest word that is a suffix of the state; 0: none
  CpDfa anywhere_;                    // [\s\S]*(p1|p2|...)[\s\S]*
  CpDfa anywhere_match_;              // (p1|p2|...) as a whole
  CpDfa full_;                        // product of the full patterns
  std::vector<FullPattern> full_patterns_;
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_MASK_TRIGGER_SCANNER_H_
