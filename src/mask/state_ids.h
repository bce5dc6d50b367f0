// StateIds (internal): ids of the Earley sets of one parse that say when two
// parser states give the same mask. Equal ids mean equal masks; ids are
// interned per StateIds, so they compare only within one Matcher. Not
// thread-safe.
#ifndef GRAMMASK_SRC_MASK_STATE_IDS_H_
#define GRAMMASK_SRC_MASK_STATE_IDS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/memory_bytes.h"
#include "base/sequence_index.h"
#include "earley/earley_engine.h"
#include "mask/key_hash.h"

namespace grammask {
namespace internal {

// The deepest context id (StateIds::context_id) there is.
inline constexpr size_t kMaxContextDepth = 8;

// Ids of the sets of one EarleyEngine's parse, each computed once and kept
// until truncate() pops its set. Every call must pass the same engine (or a
// copy of it, after a copy of this).
class StateIds {
 public:
  // `waiter_class` and `context_class`: CompiledGrammarData's, which must
  // outlive this.
  StateIds(const std::vector<uint32_t>& waiter_class, const std::vector<uint32_t>& context_class)
      : waiter_class_(&waiter_class), context_class_(&context_class) {}

  // Structural id of Earley set k: its items with each origin replaced by the
  // origin set's id. Two stacks whose top sets have one structural id have
  // the same future, so the same mask.
  uint32_t structure_id(const EarleyEngine& engine, size_t k);

  // Context id of the top set k at depth d, 1 <= d <= kMaxContextDepth:
  // its items by context class (states that no token tells apart share
  // one), each origin replaced by the origin set's waiter id at depth
  // d - 1. The waiter id of set s at depth j: the waiters among its items,
  // by waiter class (the rules they wait on and where each leads: all that
  // completing into s reads), each origin replaced by its set's waiter id
  // at depth j - 1; at depth 0, nothing. So two stacks whose top sets share
  // the id at depth d agree on every set within d - 1 chain links of the
  // top (see context_depth), as far as a walk can tell, and a walk that
  // read no deeper gives both the same mask, stop tokens apart: whether the
  // root ends is a question about origin 0.
  uint32_t context_id(const EarleyEngine& engine, size_t k, size_t d);

  // How deep into the stack below set `top` a walk looked, item by item:
  // needs[i], for the i-th item of `top` in shape order (by context class,
  // then whether it started in `top`), is 0 when the walk read nothing
  // reachable from the item's origin, else one more than the longest chain
  // from the origin to a set it read (`reads`, from the engine's read log).
  // A chain steps from a set to a waiter's origin (the only items of such a
  // set that a walk copies). The longest, not the shortest: the walk may
  // have come along any chain. Returns false when a need passes
  // kMaxContextDepth - 1.
  bool item_needs(const EarleyEngine& engine, const std::vector<uint32_t>& reads, size_t top,
                  std::vector<uint8_t>& needs);
  // The context id of top set k shaped by `needs` (as item_needs gives
  // them): its items by context class, each origin replaced by its waiter
  // id at the item's need (nothing at 0). Two stacks whose top sets share
  // a shaped id agree on every set that a walk reading no more than
  // `needs` reads, so the walk gives both the same mask, stop tokens apart.
  uint32_t shaped_context_id(const EarleyEngine& engine, size_t k,
                             const std::vector<uint8_t>& needs);

  // Forgets the ids of the sets past `length` (the engine was truncated to
  // it).
  // Heap bytes of the ids and the interned keys. O(1).
  size_t memory_bytes() const noexcept {
    return heap_bytes(structure_ids_) + hash_container_bytes(interned_) + interned_key_bytes_ +
           context_ids_.size() * sizeof(ContextIds) + heap_bytes(context_key_) +
           heap_bytes(context_words_) + context_index_.memory_bytes() + heap_bytes(chain_length_) +
           heap_bytes(chain_seen_) + heap_bytes(read_seen_) + heap_bytes(chain_sets_) +
           heap_bytes(shape_order_);
  }

  // Forgets every id: ids computed from now on are new, and no id handed
  // out before may be compared with them (the caller drops what it keyed by
  // them).
  void clear() {
    structure_ids_ = {};
    interned_ = {};
    interned_key_bytes_ = 0;
    context_ids_ = {};
    context_index_ = SequenceIndex();
  }

  void truncate(size_t length) {
    if (structure_ids_.size() > length + 1) structure_ids_.resize(length + 1);
    if (context_ids_.size() > length + 1) context_ids_.resize(length + 1);
  }

 private:
  uint64_t waiter_id(const EarleyEngine& engine, size_t s, size_t j);
  // The interned key of set s: `tag`, then for each item whose label is
  // not kSkipItem, (label, its origin's waiter id at origin_depth).
  template <typename Label>
  uint32_t set_id(const EarleyEngine& engine, size_t s, size_t origin_depth, uint64_t tag,
                  const Label& label);
  // Fills shape_order_ with the items of set k in shape order.
  void order_items(const EarleyEngine& engine, size_t k);
  // Interns context_key_ (as 32-bit words, in an index that allocates
  // nothing per key).
  uint32_t intern_context_key();
  // For an item in an AnyOrder state: adds (word, its members written) to
  // written_pairs_ and returns true; else false. (Out of line: the key
  // loops of grammars without AnyOrder stay as small as they were.)
  [[gnu::noinline]] bool note_written(const EarleyEngine& engine, const EarleyItem* it,
                                      uint64_t word);

  const std::vector<uint32_t>* waiter_class_;
  const std::vector<uint32_t>* context_class_;
  std::vector<uint32_t> structure_ids_;  // per set
  std::unordered_map<std::vector<uint64_t>, uint32_t, KeyHash> interned_;
  size_t interned_key_bytes_ = 0;  // of interned_'s keys
  // Waiter ids per set, by depth - 1; a deque, whose growth copies nothing
  // (a vector doubling would copy them all in one step).
  using ContextIds = std::array<uint32_t, kMaxContextDepth>;
  std::deque<ContextIds> context_ids_;
  std::vector<uint64_t> context_key_;                         // context_id's scratch
  std::vector<std::pair<uint64_t, uint64_t>> written_pairs_;  // (item word, members written)
  std::vector<uint32_t> context_words_;                       // ... as 32-bit words
  SequenceIndex context_index_;                               // context ids by key
  // item_needs' scratch: per set, its need and whether chain_stamp_
  // reached it (or marked it read); the sets reached.
  std::vector<uint8_t> chain_length_;
  std::vector<uint32_t> chain_seen_;
  std::vector<uint32_t> read_seen_;
  uint32_t chain_stamp_ = 0;
  std::vector<uint32_t> chain_sets_;
  std::vector<std::pair<uint64_t, const EarleyItem*>> shape_order_;  // (label, item)
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_STATE_IDS_H_
