// TrieWalker (internal): computes masks by walking the token trie over a
// parse (an EarleyEngine), reusing the walks its grammar shares and those
// it keeps itself. One per Matcher; not thread-safe. A copy walks alone,
// with copies of the walks kept.
#ifndef GRAMMASK_SRC_MASK_TRIE_WALKER_H_
#define GRAMMASK_SRC_MASK_TRIE_WALKER_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/byte_set.h"
#include "base/memory_bytes.h"
#include "base/sequence_index.h"
#include "earley/earley_engine.h"
#include "mask/compiled_grammar.h"
#include "mask/own_walks.h"
#include "mask/pure_walk.h"
#include "mask/text_closure.h"
#include "vocab/text_slice.h"
#include "vocab/token_trie.h"

namespace grammask {
namespace internal {

class TrieWalker {
 public:
  // Walks for `data`, which must outlive this.
  explicit TrieWalker(const CompiledGrammarData& data);

  // Heap bytes: the walks kept here and the walk scratch.
  size_t memory_bytes() const noexcept {
    return own_walks_.memory_bytes() + heap_bytes(fast_begin_) + heap_bytes(fast_end_) +
           heap_bytes(pool_) + heap_bytes(following_) + heap_bytes(follow_) +
           heap_bytes(fast_scan_) + heap_bytes(scan_ready_) + heap_bytes(path_) +
           heap_bytes(sources_) + heap_bytes(pure_key_) + heap_bytes(pure_states_) +
           heap_bytes(tagged_key_) + heap_bytes(local_key_) + heap_bytes(short_key_) +
           heap_bytes(item_states_) + heap_bytes(past_at_) + state_sets_.memory_bytes() +
           heap_bytes(set_steps_) + heap_bytes(set_kind_) + heap_bytes(set_at_) +
           heap_bytes(set_members_);
  }

  // When every item of `engine`'s top set is pure and the walk from their
  // states is known (shared by the grammar or kept here), that walk; else
  // nullptr. Walks no trie (but the first call inside a large rule classes
  // its states: see WalkClasses).
  const PureWalk* known_top_walk(EarleyEngine& engine);

  // ORs into `words` (mask_words(vocabulary size) of them) the tokens that
  // `engine`'s parse may read next, stop tokens aside. Leaves the engine's
  // sets as they were, charging it the work. Returns false when the walk
  // would exceed CompileOptions::max_mask_work (trie nodes visited plus
  // Earley work); the mask is then incomplete.
  bool walk(EarleyEngine& engine, uint32_t* words);

 private:
  // Sets with more items than this always go through the engine.
  static constexpr ptrdiff_t kMaxFastItems = 16;
  // Pure sets of at most this many states take the union of their states'
  // walks (top_set_pure_walk).
  static constexpr size_t kMaxUnionStates = 3;

  // walk() once engine_ is set (see docs/mask-engine.md, "Code generation").
  inline bool walk_trie(uint32_t* words);

  // Appends the successors of [from_begin, from_end) on `byte` to pool_
  // (deduplicated from out_begin on); returns whether all are pure.
  inline bool advance(const uint32_t* from_begin, const uint32_t* from_end, uint8_t byte,
                      size_t out_begin);
  // advance() for one item of an engine set. (Out of line: the engine path
  // is the cold one, and inlined it would crowd walk_nodes' loop.)
  [[gnu::noinline]] bool advance_item(const EarleyItem& item, uint8_t byte, size_t out_begin);

  // Walks trie nodes [first, last) of *walk_trie_, a run of whole subtrees
  // whose parent depth the engine or the fast path already holds.
  inline bool walk_nodes(uint32_t first, uint32_t last, uint32_t* words, size_t base,
                         uint64_t deadline);

  // The first of the siblings from node i on (nodes at `depth` before
  // `last`) whose byte is not `dead`, or the end of their run; charges a
  // work unit per node skipped, as the walk does per node visited.
  template <typename Dead>
  uint32_t skip_dead_siblings(uint32_t i, uint32_t last, size_t depth, const Dead& dead);

  // What a fast-path step made of its states (see advance_followed).
  enum Advanced { kNeedsEngine, kStaysFast, kStaysFastWithCallers };

  // advance() for a followed parent (see follow_from_engine): pool_[begin]
  // is the followed item's state or kNoState, then the pure items' states.
  // Appends the successors in the same layout, or nothing when all die.
  // Returns kNeedsEngine when one needs the engine (the followed item
  // calls a rule, a pure item ends its rule or calls one, unless they are
  // plain callers); kStaysFastWithCallers when plain callers are among the
  // successors, their callees' first bytes then in callee_bytes_.
  // (Inlined: it runs once per trie node on the fast path.)
  [[gnu::always_inline]] inline Advanced advance_followed(uint32_t begin, uint32_t end,
                                                          uint8_t byte);

  // Whether the fast path's states from pool_[out] on (the followed item
  // first) are pure or plain callers, the latter's callees' first bytes in
  // callee_bytes_. (Out of advance_followed's hot path: rarely true.)
  [[gnu::noinline]] bool only_plain_callers_from(size_t out);

  // fast_scan_[depth]: the bytes the fast path's states at `depth` read
  // (a child on no other byte, and not one the engine follows, is dead).
  // Set for callers at once, for the others after their first dead child:
  // a node whose children all go on never pays for it.
  inline void set_fast_scan(size_t depth);

  // True if an item in `state`, reached by a byte, may stay on the fast
  // path although it calls rules: it cannot end its rule, and no rule it
  // calls derives nothing. Its set then holds it and the predictions of
  // those rules, which can only read their first bytes: these are ORed into
  // `follow`, the bytes that need the engine. (Whitespace before a nested
  // value: each space is a DFA step of the caller, not an Earley set.)
  inline bool plain_caller(uint32_t state, ByteSet& follow) const;

  // Once the engine holds the set at `depth`, the walk below may go on
  // the fast path with the items that need no engine: at most one in a
  // final state that calls no rule (the end of a number, a key that may
  // end), followed on its DFA, and pure ones that no completion or
  // prediction can have added (reached by bytes only: a declared key's
  // name beside the key automaton). Everything else in the set (the rules
  // the followed item completed into, calls in progress) can only read the
  // next byte, and ending the followed rule again further down adds the
  // same items again, so only children whose byte one of them scans need
  // the engine: follow_[depth] is that byte set. The states go to pool_
  // from offset `out`, followed item first (kNoState if none).
  inline void follow_from_engine(size_t depth, size_t out);

  // Sets pure_key_ to the sorted walk classes of the top set's DFA states
  // (pure_states_ to the states, pure_cover_ to how much of the text slice
  // they allow) and returns true when they are all pure (and few enough for
  // the fast path). More than kMaxUnionStates states, some of a rule not
  // classed yet, are keyed by kStateKey | state instead.
  inline bool top_set_pure_key();
  static constexpr uint64_t kStateKey = uint64_t{1} << 32;

  // The walk for pure_key_ from the compile-time table or this matcher's
  // cache, or nullptr.
  inline const PureWalk* cached_pure_walk();

  // `key` with `tag` in front, to tell the kinds of keys apart in
  // SharedWalks (kept in tagged_key_).
  // (Pure keys: one tag per text cover.)
  static constexpr uint64_t kLocalKeyTag = 0, kPureKeyTag = 1,
                            kShortLocalKeyTag = kPureKeyTag + kTextCovers;
  static_assert(kShortLocalKeyTag == OwnWalks::kKinds, "own walks are kept by tag");
  uint64_t pure_tag() const { return kPureKeyTag + pure_cover_; }
  inline const std::vector<uint64_t>& tagged(uint64_t tag, const std::vector<uint64_t>& key);

  // Publishes `walk` under the tagged key for the other Matchers, or keeps
  // it in own_walks_ (under `tag`) when the shared memory is spent.
  inline const PureWalk* share(uint64_t tag, const std::vector<uint64_t>& key, PureWalk&& walk);

  // The PureWalk of the top set when its items are all pure, else nullptr.
  // A miss walks the trie once (charged to the work bound).
  inline const PureWalk* top_set_pure_walk(uint64_t deadline);

  // The walk from the pure states pure_states_ (more than kMaxUnionStates)
  // over `trie` into `walk` (its mask words allocated): a walk of the
  // subsets of those states' DFA, built as the walk reaches them, so that a
  // node whose parent's set was seen before costs one lookup. Returns false
  // past `deadline`.
  inline bool walk_state_sets(const TokenTrie& trie, PureWalk& walk, uint64_t deadline);
  // The number of the set `states` (sorted and deduplicated here), a new
  // one with unknown steps and its kind if first seen.
  inline uint32_t intern_state_set(std::vector<uint32_t>& states);
  // The set that set_at_[depth - 1] steps to on `byte`, kept at
  // set_steps_[step] if the set has steps kept. (Out of line: most steps
  // are known.)
  [[gnu::noinline]] uint32_t new_set_step(size_t step, uint8_t byte, size_t depth);

  // Moves the frontiers of `walk`'s unsplit state parts, which index one
  // trie, into `walk` itself, each node once and none inside another's
  // subtree: the states of a set often stop being pure at the same nodes,
  // and the engine walks each subtree from the whole set anyway.
  inline void merge_frontiers(PureWalk& walk);

  // The local part of the walk from the top set k: every token that never
  // completes a rule started before k depends on set k alone, that is on
  // its items' states and on which items started in k itself. So it is
  // cached by that local key, whatever the stack below (the nesting depth
  // of a JSON value, the enclosing expression), and the frontier holds the
  // trie nodes where a path first reads below k: only their subtrees go
  // through the engine with the real stack. A miss walks the trie with the
  // engine's floor at k, cutting paths there.
  inline const PureWalk* top_set_local_walk(size_t base, uint64_t deadline);

  // Sets `key` to the sorted (class, started before `base`?) pairs of set
  // base's items.
  inline void set_key(const std::vector<uint32_t>& classes, size_t base,
                      std::vector<uint64_t>& key);

  // The local walk from set `base` over `trie` (walk.depth_cap deep) into
  // `walk`: the engine's floor at base cuts paths that read below it.
  inline bool local_walk_over(const TokenTrie& trie, size_t base, uint64_t deadline,
                              PureWalk& walk);

  // In a local walk, turns node i into a frontier node if its push read
  // below the floor; returns true if so (the caller skips the subtree).
  inline bool cut_at_floor(uint32_t i, size_t depth);
  // In a local walk, where the push of node i (at `depth`, just pushed)
  // read below the floor: when the items of the set before it reach one
  // DFA state on i's byte, and it calls no rule, walks i's subtree on that
  // state's transitions into `words`. A child whose byte the follow of its
  // rule holds becomes an open frontier node (an item that completed below
  // may read it), one that reaches a caller a frontier node. Returns false
  // (nothing done) otherwise.
  bool walk_past_floor(uint32_t i, size_t depth, uint32_t* words);

  // Runs the engine over the frontier subtrees of `pure`, reusing the path
  // prefix shared with the previous frontier node.
  inline bool walk_frontier(const PureWalk& pure, uint32_t* words, size_t base, uint64_t deadline);

  const CompiledGrammarData* data_;
  EarleyEngine* engine_ = nullptr;  // the engine of the current call
  OwnWalks own_walks_;
  // Walk scratch, kept to avoid reallocation.
  std::vector<uint32_t> fast_begin_, fast_end_, pool_;
  // Per depth on the fast path: whether it follows one item past the end
  // of its rule, and the bytes that then need the engine (follow_from_engine);
  // with plain callers among its states, also what those states read.
  enum Following : uint8_t { kNotFollowing, kFollowing, kFollowingCallers };
  std::vector<uint8_t> following_;
  std::vector<ByteSet> follow_;
  std::vector<ByteSet> fast_scan_;
  std::vector<uint8_t> scan_ready_;  // whether fast_scan_[depth] is set
  ByteSet callee_bytes_;             // see advance_followed
  std::vector<uint8_t> path_;
  std::vector<uint32_t> sources_;      // advance()'s copy of its input states
  std::vector<uint64_t> pure_key_;     // sorted walk classes of the top set
  std::vector<uint32_t> pure_states_;  // one DFA state per class of pure_key_
  std::vector<uint64_t> tagged_key_;
  TextCover pure_cover_ = kNoText;
  std::vector<uint64_t> local_key_;  // the top set's (local class, started here?) items
  std::vector<uint64_t> short_key_;  // ... with short local classes
  std::vector<std::pair<uint64_t, uint64_t>> written_pairs_;  // set_key's scratch
  PureWalk* local_walk_ = nullptr;                            // the local walk being built, if any
  const TokenTrie* walk_trie_ = nullptr;                      // the trie walk_nodes walks
  size_t depth_cap_ = SIZE_MAX;  // and the depth past which it skips nodes
  std::vector<uint32_t> item_states_;
  std::vector<uint32_t> past_at_;  // walk_past_floor's DFA state per depth
  // walk_state_sets' scratch: the sets seen, their steps (set * byte
  // classes + class: the next set, kUnknownSet or kDeadSet), the kind of
  // each (a set of one pure state walks on in walk_subtree_from_state; one
  // that is not all pure is a frontier), the set at each depth of the path,
  // and a set being built.
  static constexpr uint32_t kUnknownSet = UINT32_MAX, kDeadSet = UINT32_MAX - 1;
  static constexpr size_t kMaxSetSteps = size_t{1} << 18;
  SequenceIndex state_sets_;
  std::vector<uint32_t> set_steps_;
  enum SetKind : uint8_t { kPureSet, kOneStateSet, kImpureSet };
  std::vector<uint8_t> set_kind_;
  std::vector<uint32_t> set_at_;
  std::vector<uint32_t> set_members_;
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_TRIE_WALKER_H_
