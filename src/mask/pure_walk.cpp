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
  rows = grammar.transition_rows();
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

// walk_from_state's loop over a transition table of `Entry`s, whose
// largest value means no transition. Its state (the trie position, the row
// of the state at each depth, the path) lives here, so that the loop can
// start with an id list and go on with mask words once the list outgrows
// max_sparse: most walks (a keyword, a digit) never need the words, and
// the loop that has them carries no list (the long walks of a whole trie
// run it with their state in registers).
template <typename Entry>
class WalkLoop {
  static constexpr Entry kNone = std::numeric_limits<Entry>::max();

 public:
  // The walk of nodes [first, last), below a node at `depth` that the path
  // path[1..depth] leads to, from `start` (the whole trie: 1, its size, 0).
  WalkLoop(const Entry* table, const PureTransitions& transitions, const TokenTrie& trie,
           size_t depth_cap, uint32_t start, uint32_t first, uint32_t last, size_t depth,
           const uint8_t* path)
      : table_(table),
        nodes_(trie.nodes().data()),
        ids_(trie.token_ids().data()),
        pure_(transitions.pure),
        rows_(transitions.rows),
        byte_class_(transitions.byte_class),
        depth_cap_(depth_cap),
        n_(last),
        row_at_(trie.max_depth() + 2),
        path_(trie.max_depth() + 2, 0),
        i_(first) {
    row_at_[depth] = rows_[start];
    if (depth > 0) std::copy(path + 1, path + depth + 1, path_.begin() + 1);  // (path may be null)
  }

  // Walks on from node i_ until the walk ends (true), the id list of
  // `walk` outgrows max_sparse (false, i_ at the next node), or the budget
  // runs out (false, over_budget()).
  bool run_sparse(PureWalk& walk, size_t max_sparse, uint64_t budget) {
    const TokenTrie::Node* const nodes = nodes_;
    TransitionRow* const row_at = row_at_.data();
    uint32_t i = i_;
    uint64_t count = count_;
    bool done = true;
    while (i < n_) {
      if (++count > budget) {
        over_budget_ = true;
        done = false;
        break;
      }
      const TokenTrie::Node& node = nodes[i];
      const size_t depth = node.depth;
      const TransitionRow row = row_at[depth - 1];
      const Entry entry = table_[row.offset + byte_class_[node.byte]];
      if (entry == kNone) {
        i = node.subtree_end;
        continue;
      }
      const uint32_t next = row.base + entry;
      for (uint32_t t = node.tokens_begin, end = nodes[i + 1].tokens_begin; t < end; ++t)
        walk.tokens.push_back(ids_[t]);
      if (node.subtree_end == i + 1 || depth >= depth_cap_) {
        i = node.subtree_end;
      } else {
        path_[depth] = node.byte;
        if (!pure_[next]) {
          walk.add_frontier(i, path_, depth);
          i = node.subtree_end;
        } else {
          row_at[depth] = rows_[next];
          ++i;
        }
      }
      if (walk.tokens.size() > max_sparse) {
        done = false;
        break;
      }
    }
    i_ = i;
    count_ = count;
    return done;
  }

  // The same into mask words, to the end (true) or the budget (false).
  // Whether a node is alive, holds a token or has children follows no
  // pattern in a trie walked in order, so these are selects rather than
  // branches: a mispredicted branch costs more than the node's other work.
  bool run_dense(PureWalk& walk, uint32_t* bits, uint64_t budget) {
    const TokenTrie::Node* const nodes = nodes_;
    const uint32_t* const ids = ids_;
    TransitionRow* const row_at = row_at_.data();
    uint32_t i = i_;
    uint64_t count = count_;
    bool done = true;
    while (i < n_) {
      if (++count > budget) {
        over_budget_ = true;
        done = false;
        break;
      }
      const TokenTrie::Node& node = nodes[i];
      const size_t depth = node.depth;
      const TransitionRow row = row_at[depth - 1];
      const Entry entry = table_[row.offset + byte_class_[node.byte]];
      const bool alive = entry != kNone;
      const uint32_t next = alive ? row.base + entry : 0;
      set_node_tokens(bits, ids, node.tokens_begin, nodes[i + 1].tokens_begin, alive);
      const bool goes_on = alive && depth < depth_cap_;
      path_[depth] = node.byte;
      row_at[depth] = rows_[next];  // (unread unless the walk goes below)
      if (goes_on && !pure_[next] && node.subtree_end != i + 1) [[unlikely]] {
        walk.add_frontier(i, path_, depth);
        i = node.subtree_end;
        continue;
      }
      i = goes_on ? i + 1 : node.subtree_end;
    }
    i_ = i;
    count_ = count;
    return done;
  }
  bool over_budget() const { return over_budget_; }
  uint64_t visited() const { return count_; }

 private:
  const Entry* table_;
  const TokenTrie::Node* nodes_;
  const uint32_t* ids_;
  const uint8_t* pure_;
  const TransitionRow* rows_;
  const uint8_t* byte_class_;
  size_t depth_cap_;
  uint32_t n_;
  std::vector<TransitionRow> row_at_;  // the row after depth d
  std::vector<uint8_t> path_;
  uint32_t i_;
  uint64_t count_ = 0;
  bool over_budget_ = false;
};

template <typename Entry>
bool walk_from_state_in(const Entry* table, const PureTransitions& transitions,
                        const TokenTrie& trie, size_t vocabulary_size, uint32_t start,
                        uint64_t budget, PureWalk& walk, uint64_t& visited) {
  const size_t words = mask_words(vocabulary_size);
  // A list at most 1/8 the words' size; on top of the slice's words, one
  // that costs little next to copying them.
  const size_t max_sparse = walk.slice != nullptr ? words / 64 : words / 8;
  walk.bits.clear();
  walk.tokens.clear();
  walk.frontier.clear();
  walk.paths.clear();
  WalkLoop<Entry> loop(table, transitions, trie, walk.depth_cap, start, 1,
                       static_cast<uint32_t>(trie.nodes().size()), 0, nullptr);
  bool done = loop.run_sparse(walk, max_sparse, budget);
  if (!done && !loop.over_budget()) done = loop.run_dense(walk, make_dense(walk, words), budget);
  visited = loop.visited();
  if (!done) return false;
  if (!walk.bits.empty()) {
    walk.tokens.shrink_to_fit();
    walk.finish();
  }
  return true;
}

template <typename Entry>
bool walk_subtree_in(const Entry* table, const PureTransitions& transitions, const TokenTrie& trie,
                     uint32_t first, uint32_t last, size_t depth, const uint8_t* path,
                     uint32_t start, uint64_t budget, PureWalk& walk, uint32_t* bits,
                     uint64_t& visited) {
  WalkLoop<Entry> loop(table, transitions, trie, walk.depth_cap, start, first, last, depth, path);
  const bool done = loop.run_dense(walk, bits, budget);
  visited = loop.visited();
  return done;
}

}  // namespace

bool walk_subtree_from_state(const PureTransitions& transitions, const TokenTrie& trie,
                             uint32_t first, uint32_t last, size_t depth, const uint8_t* path,
                             uint32_t start, uint64_t budget, PureWalk& walk, uint32_t* bits,
                             uint64_t& visited) {
  if (transitions.narrow_table != nullptr)
    return walk_subtree_in(transitions.narrow_table, transitions, trie, first, last, depth, path,
                           start, budget, walk, bits, visited);
  return walk_subtree_in(transitions.wide_table, transitions, trie, first, last, depth, path, start,
                         budget, walk, bits, visited);
}

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
