// Which states of a lowered grammar read all plain text (internal): the
// grammar side of the text slice (vocab/text_slice.h). A mask walk from such
// a state allows the slice in bulk and walks only the other tokens.
#ifndef GRAMMASK_SRC_MASK_TEXT_CLOSURE_H_
#define GRAMMASK_SRC_MASK_TEXT_CLOSURE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "base/byte_set.h"
#include "vocab/text_slice.h"

namespace grammask::internal {

class ByteGrammar;

// How much of the slice a state's walk may take for granted.
enum TextCover : uint8_t {
  kNoText,     // none: the walk reads the whole trie
  kShortText,  // the slice tokens of at most TextSlice::kShortLength bytes
  kAllText,    // every slice token
};
inline constexpr int kTextCovers = 3;

// Which states of a lowered grammar read every string of plain text up to
// the longest slice token (or the short tier's): from an Earley item in
// such a state no such slice token can be refused.
class TextClosure {
 public:
  // `max_length`: the longest slice token, in bytes. `classes`, if not
  // null, maps each state to a class of states that read alike as Earley
  // items for more than max_length bytes (the mask layer's
  // local classes), which then share their answers; it must outlive the
  // closure.
  TextClosure(const ByteGrammar& grammar, size_t max_length,
              const std::vector<uint32_t>* classes = nullptr);

  // kAllText if an Earley item in `state` reads every plain-text string of
  // up to max_length bytes, by byte transitions or through the rules it
  // calls (a string body of at most N characters, each one a rule call,
  // say), without ending its own rule; kShortText if it does up to
  // kShortLength bytes; else kNoText. Answers are kept per state.
  // Thread-safe.
  TextCover cover(uint32_t state) const;
  // The best cover among states[0, count): the items of one Earley set.
  TextCover best_cover(const uint32_t* states, size_t count) const;
  // cover(state) when it is known or decided without a depth-first proof
  // (the bounded loop, chain and dead-end checks); else none. Compile-time
  // precomputation asks this, leaving the states that need a proof to their
  // first use. With `search_budget`, the loop search runs only while
  // *search_budget is not zero and its steps are taken from it (a caller
  // asking for many states bounds their searches in all). Thread-safe.
  std::optional<TextCover> cover_without_proof(uint32_t state,
                                               uint64_t* search_budget = nullptr) const;
  // N in [1, TextSlice::kMaxTierChars] if an Earley item in `state` reads
  // every plain-text string of up to N characters and none of N + 1, by
  // byte transitions through states that `pure` holds (a rule neither ends
  // nor begins in them); else 0. Then a plain token is allowed exactly when
  // it has at most N characters, and only the other tokens need a walk.
  uint32_t plain_chars(uint32_t state, const std::vector<uint8_t>& pure) const;
  // A set X of at most kMaxAvoidedBytes ASCII bytes such that from
  // `state` every plain text whose characters are not in X reads through
  // pure states without end (as text excluding "</think>" does with
  // X = {'>'}): then every slice token avoiding X is allowed, and only the
  // other tokens need a walk. nullopt if no such set is found (bounded
  // search). Read-only; thread-safe.
  static constexpr size_t kMaxAvoidedBytes = 8;
  std::optional<ByteSet> avoided_ascii(uint32_t state, const std::vector<uint8_t>& pure) const;
  // A superset of the bytes that can begin a non-empty derivation of `rule`.
  const ByteSet& rule_first_bytes(uint32_t rule) const { return rule_first_bytes_[rule]; }

  // Heap bytes of the tables.
  size_t memory_bytes() const noexcept;

 private:
  using Phase = PlainTextPhase;
  static constexpr int kPhases = kPlainTextPhases;
  struct Step {
    uint8_t byte;  // one byte per (byte class, next phase): classes step alike
    Phase next;
  };
  class Search;

  // Every plain-text string of any length, by byte transitions and calls
  // made last (a string body, a key automaton): a cheap search that tries
  // first. Adds the (state, position) pairs it visited to *visited.
  bool loops_on_all_text(uint32_t state, uint64_t* visited = nullptr) const;
  // Every plain-text string of up to max_length bytes, through a chain of
  // at least that many calls to one rule that reads any one plain
  // character (a long string body whose characters are rule calls): a
  // check that costs one step per call, where the deep proof would follow
  // each character's bytes into the rule at every position.
  bool chain_reads_all_text(uint32_t state) const;
  // Whether `rule` reads every plain character and can end right after it.
  bool reads_any_one_char(uint32_t rule) const;
  // Reads every plain character from `state` at a character boundary, byte
  // by byte: visit(t, ends) for the state t each byte leads to (kNoState
  // when it is refused; `ends`: the byte ends the character). Returns false
  // as soon as a visit does.
  template <typename Visit>
  bool follow_one_char(uint32_t state, Visit visit) const;
  // Whether `scan` holds every plain ASCII character: the bytes an item can
  // read first need it (most states fail here).
  static bool scans_all_ascii_text(const ByteSet& scan);
  // The bytes an item in `state` can read first: its own, those that begin
  // the rules it calls, and those of the targets of nullable calls.
  ByteSet first_bytes(uint32_t state) const;
  // rule_first_bytes_: a fixpoint over the calls made before reading
  // anything.
  void compute_rule_first_bytes();
  // reaches_any_order_; and whether an item in `state` may enter an AnyOrder
  // rule (or is in one), whose items the proofs cannot follow exactly.
  void compute_reaches_any_order();
  bool reaches_any_order(uint32_t state) const {
    return !reaches_any_order_.empty() && state_reaches_any_order(state);
  }
  bool state_reaches_any_order(uint32_t state) const;
  // The cover of `state` when plain text from it only walks byte
  // transitions (after entering the one rule it calls, if it reads nothing
  // else): then a breadth-first search for the shortest string it refuses
  // decides it, without the deep proof. nullopt otherwise.
  std::optional<TextCover> cover_by_dead_end(uint32_t state) const;
  // Every plain-text string of any length, in one of the rules an item in
  // `state` calls (or they call): a search over sets of states, for text
  // that only their union reads (an object's other keys split between an
  // additional-key automaton and a pattern's).
  bool union_reads_all_text(uint32_t state) const;
  // Whether text from `state` may go on in several places at once (it
  // calls two rules, or one and reads bytes itself): the only states that
  // search is tried on, as it costs milliseconds when it fails late.
  bool calls_into_a_union(uint32_t state) const;

  const ByteGrammar& grammar_;
  size_t max_length_;
  std::vector<Step> steps_[kPhases];
  // Per state (or class of states): kUnknown or the cover + 1 (computing
  // one twice is harmless).
  static constexpr uint8_t kUnknown = 0;
  static uint8_t known(TextCover cover) { return static_cast<uint8_t>(cover + 1); }
  std::atomic<uint8_t>& known_at(uint32_t state) const {
    return known_[classes_ != nullptr ? (*classes_)[state] : state];
  }
  const std::vector<uint32_t>* classes_;
  std::unique_ptr<std::atomic<uint8_t>[]> known_;
  size_t known_slots_ = 0;
  std::vector<ByteSet> rule_first_bytes_;
  // Per rule: it is an AnyOrder rule or calls one, directly or not (empty
  // when the grammar has none).
  std::vector<uint8_t> reaches_any_order_;
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_MASK_TEXT_CLOSURE_H_
