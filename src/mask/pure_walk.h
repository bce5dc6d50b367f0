// Trie walks over pure DFA states (internal): PureWalk, the result of a walk
// that needs no Earley engine, and walk_from_state, the kernel that computes
// one from a single pure state over a token trie.
#ifndef GRAMMASK_SRC_MASK_PURE_WALK_H_
#define GRAMMASK_SRC_MASK_PURE_WALK_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "automata/lowering.h"
#include "grammask/bitmask.h"
#include "vocab/token_trie.h"

namespace grammask {
namespace internal {

// The context-free part of a trie walk from a set of pure DFA states: the
// tokens the states accept on their own, and the frontier, the trie nodes
// where some path reaches a state that may end its rule or call another
// (their subtrees need the engine). `paths` holds each frontier node's
// bytes from the root, node depth bytes each, back to back.
// The allowed tokens are kept as mask words, or as a list of ids when
// there are few (most walks: a keyword, a digit), to keep thousands of
// precomputed walks small.
// A walk from states that accept all plain text (see vocab/text_slice.h) allows
// the whole text slice and walks only the trie of the other tokens:
// `slice` is then the slice's mask, and the frontier indexes that trie.
// Mask words include the slice (finish() folds it in); an id list does not.
//
// A split walk: states that differ only past kShortLength bytes (the
// positions of a string of at most 64 characters, say) share the walk of
// the tokens of at most that many bytes, `short_part`, and each walks only
// the few longer tokens itself: a walk of the long-token trie, with the
// short part attached.
struct PureWalk {
  std::vector<uint32_t> bits;    // mask words; empty when `tokens` is used
  std::vector<uint32_t> tokens;  // the allowed ids when sparse
  std::vector<uint32_t> frontier;
  std::vector<uint8_t> paths;
  // Open frontier nodes (of a local walk): nodes whose byte only an item
  // that completed a rule started below the walk's set may read, so that
  // the node's own tokens depend on the stack too. The frontier pass
  // pushes each one's path; if the engine reads it, its tokens are allowed
  // and its subtree walked. `open_paths` like `paths`.
  std::vector<uint32_t> open_frontier;
  std::vector<uint8_t> open_paths;
  const std::vector<uint32_t>* slice = nullptr;  // the vocabulary's, when allowed
  const TokenTrie* trie = nullptr;               // the trie walked (the frontier indexes it)
  size_t depth_cap = SIZE_MAX;           // the walk skipped nodes deeper than this (a short part)
  const PureWalk* short_part = nullptr;  // of a split walk; owned by the grammar or below
  std::shared_ptr<const PureWalk> owned_short_part;  // (copied with a Matcher)
  // The walk of several pure states: `bits` is the union of their walks,
  // and their frontiers are these walks' (see TrieWalker::top_set_pure_walk).
  std::vector<const PureWalk*> state_parts;
  std::vector<std::shared_ptr<const PureWalk>> owned_state_parts;

  // Writes the mask of the allowed tokens over all of words[0, n_words).
  void write_over(uint32_t* words, size_t n_words) const {
    if (short_part != nullptr) {
      short_part->write_over(words, n_words);
      write_own_to(words);
      return;
    }
    const std::vector<uint32_t>* base = !bits.empty() ? &bits : slice;
    if (base == nullptr) {
      std::fill(words, words + n_words, 0);
    } else {
      std::copy(base->begin(), base->end(), words);
      std::fill(words + base->size(), words + n_words, 0);
    }
    if (bits.empty())
      for (uint32_t id : tokens) set_bit(words, id);
  }
  // ORs the allowed tokens into `words`.
  void write_to(uint32_t* words) const {
    if (short_part != nullptr) short_part->write_to(words);
    write_own_to(words);
  }
  bool has_frontier() const {
    return !frontier.empty() || !open_frontier.empty() ||
           (short_part != nullptr && short_part->has_frontier()) ||
           std::any_of(state_parts.begin(), state_parts.end(),
                       [](const PureWalk* part) { return part->has_frontier(); });
  }
  // Folds the slice into the mask words, once the walk is done.
  void finish() {
    if (slice == nullptr || bits.empty()) return;
    for (size_t i = 0; i < bits.size(); ++i) bits[i] |= (*slice)[i];
  }
  // Keeps the allowed tokens as an id list when they are few (a split
  // walk's long part, say), so that writing the mask costs little more
  // than writing its short part.
  void make_sparse() {
    if (slice != nullptr || bits.empty()) return;
    size_t count = 0;
    for (uint32_t word : bits) count += static_cast<size_t>(__builtin_popcount(word));
    if (count > bits.size() / 8) return;
    for (size_t i = 0; i < bits.size(); ++i)
      for (uint32_t word = bits[i]; word != 0; word &= word - 1)
        tokens.push_back(static_cast<uint32_t>(i * 32 + static_cast<size_t>(__builtin_ctz(word))));
    bits.clear();
    bits.shrink_to_fit();
  }
  // Attaches the short part of a split walk: `shared`, which the grammar's
  // tables own, or `own` when publishing it failed (the shared memory is
  // spent: `shared` is null).
  void attach_short_part(const PureWalk* shared, std::unique_ptr<PureWalk>& own) {
    if (shared == nullptr) {
      owned_short_part = std::move(own);
      shared = owned_short_part.get();
    }
    short_part = shared;
  }
  // Records trie node `node`, reached by path[1..depth], as a frontier node.
  // (Out of line: it runs once per frontier node, and inlined it would
  // crowd the walk loops that call it.)
  [[gnu::noinline]] void add_frontier(uint32_t node, const std::vector<uint8_t>& path,
                                      size_t depth) {
    frontier.push_back(node);
    paths.insert(paths.end(), path.begin() + 1, path.begin() + static_cast<ptrdiff_t>(depth) + 1);
  }
  // Records node `node`, reached by path[1..depth], as an open frontier node.
  [[gnu::noinline]] void add_open_frontier(uint32_t node, const std::vector<uint8_t>& path,
                                           size_t depth) {
    open_frontier.push_back(node);
    open_paths.insert(open_paths.end(), path.begin() + 1,
                      path.begin() + static_cast<ptrdiff_t>(depth) + 1);
  }
  size_t memory() const {
    size_t bytes =
        (bits.size() + tokens.size() + frontier.size() + open_frontier.size()) * sizeof(uint32_t) +
        paths.size() + open_paths.size() + state_parts.size() * sizeof(const PureWalk*) +
        (owned_short_part != nullptr ? owned_short_part->memory() : 0);
    for (const auto& part : owned_state_parts) bytes += part->memory();
    return bytes;
  }

 private:
  void write_own_to(uint32_t* words) const {
    const std::vector<uint32_t>* base = !bits.empty() ? &bits : slice;
    if (base != nullptr)
      for (size_t i = 0; i < base->size(); ++i) words[i] |= (*base)[i];
    if (bits.empty())
      for (uint32_t id : tokens) set_bit(words, id);
  }
};

// Sets in mask words `bits` the tokens ids[first, end) of a trie node if
// `alive`. Whether a node holds a token follows no pattern in a trie walked
// in order, so the usual zero or one token is a select, not a branch.
// `ids` must not be empty.
inline void set_node_tokens(uint32_t* bits, const uint32_t* ids, uint32_t first, uint32_t end,
                            bool alive) {
  // (ids[0] stands in when the node holds no token: the bit set is 0.)
  const uint32_t id = ids[first < end ? first : 0];
  bits[id >> 5] |= static_cast<uint32_t>(alive && first < end) << (id & 31);
  if (alive && end - first > 1) [[unlikely]]
    for (uint32_t t = first + 1; t < end; ++t) set_bit(bits, ids[t]);
}

// The transitions trie walks follow: the grammar's table, and whether each
// DFA state is pure (a walk stops at an impure one, left to the Earley
// engine). Built once per CompiledGrammar.
struct PureTransitions {
  uint8_t byte_class[256] = {};
  // ByteGrammar::narrow_table() or, when that is null, wide_table(), and
  // each state's row of it.
  const uint16_t* narrow_table = nullptr;
  const uint32_t* wide_table = nullptr;
  const TransitionRow* rows = nullptr;
  const uint8_t* pure = nullptr;  // CompiledGrammarData::pure, which outlives this

  PureTransitions(const ByteGrammar& grammar, const std::vector<uint8_t>& pure_states);
};

// The PureWalk from one pure state. Gives up (returning false) once it has
// visited more than `budget` trie nodes; `visited` receives the count.
// Nodes deeper than walk.depth_cap are skipped (a split walk's short part).
bool walk_from_state(const PureTransitions& transitions, const TokenTrie& trie,
                     size_t vocabulary_size, uint32_t start, uint64_t budget, PureWalk& walk,
                     uint64_t& visited);

// walk_from_state below one trie node: walks nodes [first, last), the
// subtree of a node at `depth` reached by path[1..depth], from pure state
// `start`, setting the allowed tokens in the mask words `bits` and adding
// the frontier nodes (with their paths from the root) to `walk`. Gives up
// (false) past `budget` nodes; `visited` receives the count.
bool walk_subtree_from_state(const PureTransitions& transitions, const TokenTrie& trie,
                             uint32_t first, uint32_t last, size_t depth, const uint8_t* path,
                             uint32_t start, uint64_t budget, PureWalk& walk, uint32_t* bits,
                             uint64_t& visited);

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_PURE_WALK_H_
