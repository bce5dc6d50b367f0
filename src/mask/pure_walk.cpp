#include "mask/pure_walk.h"

#include <limits>

namespace grammask {
namespace internal {

PureTransitions::PureTransitions(const ByteGrammar& grammar,
                                 const std::vector<uint8_t>& pure_states)
    : pure(pure_states.data()) {
  for (int b = 0; b < 256; ++b) byte_class[b] = grammar.byte_class(static_cast<uint8_t>(b));
  narrow_table = grammar.narrow_table();
  wide_table = grammar.wide_table();
  width = grammar.num_classes();
}

namespace {

// Moves the ids of `walk` into `words` mask words and returns them. (Out of
// line: a walk switches at most once, and inlined it would crowd the walk
// loop.)
[[gnu::noinline]] uint32_t* make_dense(PureWalk& walk, size_t words) {
  walk.bits.assign(words, 0);
  uint32_t* bits = walk.bits.data();
  for (uint32_t id : walk.tokens) set_bit(bits, id);
  walk.tokens.clear();
  return bits;
}

// walk_from_state over a transition table of `Entry`s, whose largest value
// means no transition.
template <typename Entry>
bool walk_from_state_in(const Entry* table, const PureTransitions& transitions,
                        const TokenTrie& trie, size_t vocabulary_size, uint32_t start,
                        uint64_t budget, PureWalk& walk, uint64_t& visited) {
  constexpr Entry kNone = std::numeric_limits<Entry>::max();
  const TokenTrie::Node* nodes = trie.nodes().data();
  const uint32_t* ids = trie.token_ids().data();
  const uint8_t* pure = transitions.pure;
  const size_t width = transitions.width;
  const size_t depth_cap = walk.depth_cap;
  const uint8_t* byte_class = transitions.byte_class;
  const size_t words = mask_words(vocabulary_size);
  // A list at most 1/8 the words' size; on top of the slice's words, one
  // that costs little next to copying them.
  const size_t max_sparse = walk.slice != nullptr ? words / 64 : words / 8;
  // Mask words only once the list outgrows max_sparse: most walks (a
  // keyword, a digit) never need them.
  walk.bits.clear();
  walk.tokens.clear();
  walk.frontier.clear();
  walk.paths.clear();
  uint32_t* bits = nullptr;
  std::vector<size_t> row_at(trie.max_depth() + 2, 0);  // the row after depth d
  std::vector<uint8_t> path(trie.max_depth() + 2, 0);
  row_at[0] = start * width;
  const uint32_t n = static_cast<uint32_t>(trie.nodes().size());
  uint32_t i = 1;
  uint64_t count = 0;
  while (i < n) {
    if (++count > budget) {
      visited = count;
      return false;
    }
    const TokenTrie::Node& node = nodes[i];
    const size_t depth = node.depth;
    const uint32_t next = table[row_at[depth - 1] + byte_class[node.byte]];
    if (next == kNone) {
      i = node.subtree_end;
      continue;
    }
    for (uint32_t t = node.tokens_begin, end = nodes[i + 1].tokens_begin; t < end; ++t) {
      if (bits != nullptr) {
        set_bit(bits, ids[t]);
        continue;
      }
      walk.tokens.push_back(ids[t]);
      if (walk.tokens.size() > max_sparse) bits = make_dense(walk, words);
    }
    if (node.subtree_end == i + 1 || depth >= depth_cap) {
      i = node.subtree_end;
      continue;
    }
    path[depth] = node.byte;
    if (!pure[next]) {
      walk.add_frontier(i, path, depth);
      i = node.subtree_end;
      continue;
    }
    row_at[depth] = next * width;
    ++i;
  }
  visited = count;
  if (bits != nullptr) {
    walk.tokens.shrink_to_fit();
    walk.finish();
  }
  return true;
}

}  // namespace

bool walk_from_state(const PureTransitions& transitions, const TokenTrie& trie,
                     size_t vocabulary_size, uint32_t start, uint64_t budget, PureWalk& walk,
                     uint64_t& visited) {
  if (transitions.narrow_table != nullptr)
    return walk_from_state_in(transitions.narrow_table, transitions, trie, vocabulary_size, start,
                              budget, walk, visited);
  return walk_from_state_in(transitions.wide_table, transitions, trie, vocabulary_size, start,
                            budget, walk, visited);
}

}  // namespace internal
}  // namespace grammask
