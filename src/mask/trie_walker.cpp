#include "mask/trie_walker.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "grammask/bitmask.h"
#include "mask/key_hash.h"
#include "vocab/vocabulary_access.h"

namespace grammask {
namespace internal {

TrieWalker::TrieWalker(const CompiledGrammarData& data)
    : data_(&data), own_walks_(data.max_matcher_cache_bytes / 2) {
  state_sets_.reset(0);  // (so that a copy has tables to copy)
}

const PureWalk* TrieWalker::known_top_walk(EarleyEngine& engine) {
  engine_ = &engine;
  return top_set_pure_key() ? cached_pure_walk() : nullptr;
}

bool TrieWalker::walk(EarleyEngine& engine, uint32_t* words) {
  engine_ = &engine;
  return walk_trie(words);
}

inline bool TrieWalker::walk_trie(uint32_t* words) {
  EarleyEngine& engine = *engine_;
  const TokenTrie& trie = internal::VocabularyAccess::trie(data_->vocabulary);
  // Per-depth scratch. No need to clear it: a walk writes a depth's
  // entries at the node of that depth before it visits the node's
  // children, the only readers (walk_frontier, for a frontier node).
  const size_t max_depth = trie.max_depth() + 1;
  if (path_.size() != max_depth + 1) {
    fast_begin_.assign(max_depth + 1, 0);
    fast_end_.assign(max_depth + 1, 0);
    following_.assign(max_depth + 1, 0);
    follow_.assign(max_depth + 1, ByteSet());
    fast_scan_.assign(max_depth + 1, ByteSet());
    scan_ready_.assign(max_depth + 1, 0);
    path_.assign(max_depth + 1, 0);
  }
  pool_.clear();
  const uint64_t work = engine.work();
  const uint64_t deadline =
      work + data_->max_mask_work < work ? UINT64_MAX : work + data_->max_mask_work;
  engine.set_work_deadline(deadline);
  const size_t base = engine.size();
  bool within_limit;
  const PureWalk* walk = top_set_pure_walk(deadline);
  if (walk == nullptr && engine.work() <= deadline) walk = top_set_local_walk(base, deadline);
  if (walk != nullptr) {
    walk->write_to(words);
    within_limit = engine.work() <= deadline && walk_frontier(*walk, words, base, deadline);
  } else {
    within_limit = false;
  }
  engine.set_work_deadline(UINT64_MAX);
  engine.truncate(base);
  return within_limit;
}

inline bool TrieWalker::advance(const uint32_t* from_begin, const uint32_t* from_end, uint8_t byte,
                                size_t out_begin) {
  const ByteGrammar& grammar = *data_->grammar;
  // The sources usually live in pool_ itself, which push_back may move
  // (a use after free the matcher fuzzer found): read them from a copy,
  // on the stack in the usual case of at most kMaxFastItems states.
  const size_t count = static_cast<size_t>(from_end - from_begin);
  uint32_t local[kMaxFastItems];
  const uint32_t* sources = local;
  if (count <= kMaxFastItems) {
    std::copy(from_begin, from_end, local);
  } else {
    sources_.assign(from_begin, from_end);
    sources = sources_.data();
  }
  bool all_pure = true;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t source = sources[i];
    const uint32_t next = grammar.next(source, byte);
    if (next == kNoState) continue;
    if (std::find(pool_.begin() + out_begin, pool_.end(), next) != pool_.end()) continue;
    pool_.push_back(next);
    all_pure &= data_->pure[next] != 0;
  }
  return all_pure;
}

bool TrieWalker::advance_item(const EarleyItem& item, uint8_t byte, size_t out_begin) {
  return advance(&item.state, &item.state + 1, byte, out_begin);
}

inline bool TrieWalker::walk_nodes(uint32_t first, uint32_t last, uint32_t* words, size_t base,
                                   uint64_t deadline) {
  EarleyEngine& engine = *engine_;
  const auto& nodes = walk_trie_->nodes();
  const auto& ids = walk_trie_->token_ids();
  for (uint32_t i = first; i < last;) {
    engine.charge(1);
    if (engine.work() > deadline) return false;
    const TokenTrie::Node& node = nodes[i];
    const size_t depth = node.depth;
    if (depth > depth_cap_) {  // (a split walk's short part)
      i = node.subtree_end;
      continue;
    }
    const bool has_children = node.subtree_end != i + 1;
    if (engine.size() > base + depth - 1) engine.truncate(base + depth - 1);
    if (fast_end_[depth - 1] > fast_begin_[depth - 1]) {
      const bool following = following_[depth - 1] != 0;
      if (following && follow_[depth - 1].test(node.byte)) {
        // The byte may go on after the followed rule ends: the engine
        // decides this child, from the parent's set.
        for (size_t d = engine.size() - base + 1; d < depth; ++d)
          if (!engine.push_byte(path_[d])) return false;
      } else if (scan_ready_[depth - 1] && !fast_scan_[depth - 1].test(node.byte)) {
        // No state on the fast path reads it: skip it and the dead
        // siblings after it in a tight loop (most children of the root,
        // or of ' ' in whitespace, die at once).
        const ByteSet& scan = fast_scan_[depth - 1];
        const ByteSet& follow = follow_[depth - 1];
        i = skip_dead_siblings(node.subtree_end, last, depth, [&](uint8_t byte) {
          return !scan.test(byte) && !(following && follow.test(byte));
        });
        continue;
      } else {
        // The parent is on the fast path.
        pool_.resize(fast_end_[depth - 1]);
        const size_t out = pool_.size();
        Advanced advanced;
        if (following) {
          advanced = advance_followed(fast_begin_[depth - 1], fast_end_[depth - 1], node.byte);
        } else if (fast_end_[depth - 1] - fast_begin_[depth - 1] == 1) {
          // One state (inside a string or a number, most often): its
          // transition, without advance()'s copy and deduplication.
          const uint32_t next = data_->grammar->next(pool_[fast_begin_[depth - 1]], node.byte);
          if (next != kNoState) pool_.push_back(next);
          advanced = next == kNoState || data_->pure[next] ? kStaysFast : kNeedsEngine;
        } else {
          advanced = advance(pool_.data() + fast_begin_[depth - 1],
                             pool_.data() + fast_end_[depth - 1], node.byte, out)
                         ? kStaysFast
                         : kNeedsEngine;
        }
        if (pool_.size() == out) {
          // A dead child: its siblings are tested by byte from now on.
          if (!scan_ready_[depth - 1]) set_fast_scan(depth - 1);
          i = node.subtree_end;
          continue;
        }
        for (uint32_t t = node.tokens_begin, end = nodes[i + 1].tokens_begin; t < end; ++t)
          set_bit(words, ids[t]);
        fast_begin_[depth] = fast_end_[depth] = static_cast<uint32_t>(out);
        following_[depth] = kNotFollowing;
        if (has_children) {
          path_[depth] = node.byte;
          if (advanced != kNeedsEngine) {
            fast_end_[depth] = static_cast<uint32_t>(pool_.size());
            following_[depth] = following;
            if (following) follow_[depth] = follow_[depth - 1];
            scan_ready_[depth] = 0;
            if (advanced == kStaysFastWithCallers) {
              follow_[depth] |= callee_bytes_;
              following_[depth] = kFollowingCallers;
              set_fast_scan(depth);
            }
          } else {
            // Materialize the fast-path bytes in the engine, then this
            // byte (the DFA proved them, so only a work bound can refuse
            // one).
            for (size_t d = engine.size() - base + 1; d <= depth; ++d)
              if (!engine.push_byte(path_[d])) return false;
            if (cut_at_floor(i, depth)) {
              i = node.subtree_end;
              continue;
            }
            follow_from_engine(depth, out);
          }
        }
        ++i;
        continue;
      }
    }
    const ByteSet& scan = engine.scan();
    if (!scan.test(node.byte)) {
      // Skip it and the dead siblings after it in a tight loop: few of
      // a node's children survive a set's scan.
      i = skip_dead_siblings(node.subtree_end, last, depth,
                             [&](uint8_t byte) { return !scan.test(byte); });
      continue;
    }
    for (uint32_t t = node.tokens_begin, end = nodes[i + 1].tokens_begin; t < end; ++t)
      set_bit(words, ids[t]);
    if (has_children) {
      path_[depth] = node.byte;
      const size_t top = engine.size();
      const EarleyItem* first_item = engine.set_begin(top);
      const EarleyItem* last_item = engine.set_end(top);
      // (Keeping a fast-path parent's states for its other children.)
      pool_.resize(fast_end_[depth - 1]);
      const size_t out = pool_.size();
      fast_begin_[depth] = fast_end_[depth] = static_cast<uint32_t>(out);
      following_[depth] = kNotFollowing;
      bool all_pure = last_item - first_item <= kMaxFastItems;
      for (const EarleyItem* it = first_item; it != last_item && all_pure; ++it)
        all_pure &= advance_item(*it, node.byte, out);
      if (all_pure && pool_.size() > out) {
        fast_end_[depth] = static_cast<uint32_t>(pool_.size());
        scan_ready_[depth] = 0;
      } else {
        pool_.resize(out);
        // The scan bit proved the byte: only a work bound refuses it.
        if (!engine.push_byte(node.byte)) return false;
        if (local_walk_ != nullptr && engine.reached_below_floor()) {
          engine.clear_below_floor();
          if (!walk_past_floor(i, depth, words)) local_walk_->add_frontier(i, path_, depth);
          if (engine.work() > deadline) return false;
          i = node.subtree_end;
          continue;
        }
        follow_from_engine(depth, out);
      }
    }
    ++i;
  }
  return true;
}

template <typename Dead>
uint32_t TrieWalker::skip_dead_siblings(uint32_t i, uint32_t last, size_t depth, const Dead& dead) {
  EarleyEngine& engine = *engine_;
  const auto& nodes = walk_trie_->nodes();
  for (; i < last && nodes[i].depth == depth && dead(nodes[i].byte); i = nodes[i].subtree_end)
    engine.charge(1);
  return i;
}

inline TrieWalker::Advanced TrieWalker::advance_followed(uint32_t begin, uint32_t end,
                                                         uint8_t byte) {
  const ByteGrammar& grammar = *data_->grammar;
  uint32_t sources[kMaxFastItems + 1];
  const size_t count = std::min<size_t>(end - begin, kMaxFastItems + 1);
  std::copy(pool_.begin() + begin, pool_.begin() + begin + count, sources);
  const size_t out = pool_.size();
  const uint32_t followed = sources[0] == kNoState ? kNoState : grammar.next(sources[0], byte);
  pool_.push_back(followed);
  bool alive = followed != kNoState;
  bool fast = followed == kNoState || grammar.states()[followed].calls_no_rule();
  for (size_t i = 1; i < count; ++i) {
    const uint32_t next = grammar.next(sources[i], byte);
    if (next == kNoState || std::find(pool_.begin() + out + 1, pool_.end(), next) != pool_.end())
      continue;
    pool_.push_back(next);
    alive = true;
    fast &= data_->pure[next] != 0;
  }
  if (!alive) {
    pool_.resize(out);
    return kStaysFast;  // (nothing to advance)
  }
  if (fast) return kStaysFast;
  return only_plain_callers_from(out) ? kStaysFastWithCallers : kNeedsEngine;
}

bool TrieWalker::only_plain_callers_from(size_t out) {
  const auto& states = data_->grammar->states();
  callee_bytes_ = ByteSet();
  const uint32_t followed = pool_[out];
  if (followed != kNoState && !states[followed].calls_no_rule() &&
      !plain_caller(followed, callee_bytes_))
    return false;
  for (size_t i = out + 1; i < pool_.size(); ++i)
    if (!data_->pure[pool_[i]] && !plain_caller(pool_[i], callee_bytes_)) return false;
  return true;
}

inline void TrieWalker::set_fast_scan(size_t depth) {
  const auto& states = data_->grammar->states();
  ByteSet scan;
  for (uint32_t i = fast_begin_[depth]; i < fast_end_[depth]; ++i)
    if (pool_[i] != kNoState) scan |= states[pool_[i]].scan;
  fast_scan_[depth] = scan;
  scan_ready_[depth] = 1;
}

inline bool TrieWalker::plain_caller(uint32_t state, ByteSet& follow) const {
  const uint32_t at = data_->plain_caller[state];
  if (at == kNotPlainCaller) return false;
  follow |= data_->plain_callee_bytes[at];
  return true;
}

inline void TrieWalker::follow_from_engine(size_t depth, size_t out) {
  EarleyEngine& engine = *engine_;
  constexpr ptrdiff_t kMaxFollowItems = 64;
  const size_t top = engine.size();
  const EarleyItem* first_item = engine.set_begin(top);
  const EarleyItem* last_item = engine.set_end(top);
  if (last_item - first_item > kMaxFollowItems) return;
  const auto& states = data_->grammar->states();
  pool_.resize(out);
  pool_.push_back(kNoState);
  ByteSet follow;
  bool callers = false;
  for (const EarleyItem* it = first_item; it != last_item; ++it) {
    const AutomatonState& state = states[it->state];
    if (data_->pure[it->state] && !data_->entered_by_rule[it->state]) {
      if (pool_.size() - out <= kMaxFastItems &&
          std::find(pool_.begin() + out + 1, pool_.end(), it->state) == pool_.end())
        pool_.push_back(it->state);
      else
        follow |= state.scan;
    } else if (state.is_final && state.calls_no_rule() && pool_[out] == kNoState) {
      pool_[out] = it->state;
    } else if (!data_->entered_by_rule[it->state] && pool_.size() - out <= kMaxFastItems &&
               plain_caller(it->state, follow)) {
      // (Its callees' predictions are in this set too: their bytes need
      // the engine, which plain_caller added to `follow`.)
      if (std::find(pool_.begin() + out + 1, pool_.end(), it->state) == pool_.end())
        pool_.push_back(it->state);
      callers = true;
    } else {
      follow |= state.scan;
    }
  }
  if (pool_[out] == kNoState && pool_.size() == out + 1) {
    pool_.resize(out);
    return;
  }
  fast_begin_[depth] = static_cast<uint32_t>(out);
  fast_end_[depth] = static_cast<uint32_t>(pool_.size());
  following_[depth] = callers ? kFollowingCallers : kFollowing;
  scan_ready_[depth] = 0;
  if (callers) set_fast_scan(depth);
  follow_[depth] = follow;
}

inline bool TrieWalker::top_set_pure_key() {
  EarleyEngine& engine = *engine_;
  const WalkClasses& walk_classes = *data_->walk_classes;
  const std::vector<uint8_t>& pure = data_->pure;
  const size_t top = engine.size();
  const EarleyItem* first = engine.set_begin(top);
  const EarleyItem* last = engine.set_end(top);
  if (first == last || last - first > kMaxFastItems) return false;
  pure_key_.clear();
  pure_states_.clear();
  item_states_.clear();
  const auto not_yet = [&](uint32_t state) {
    return walk_classes.known(state) == WalkClasses::kNotYet;
  };
  bool unclassed = false;
  for (const EarleyItem* it = first; it != last; ++it) {
    if (!pure[it->state]) return false;
    item_states_.push_back(it->state);
    unclassed |= not_yet(it->state);
    if (std::find(pure_states_.begin(), pure_states_.end(), it->state) == pure_states_.end())
      pure_states_.push_back(it->state);
  }
  if (unclassed && pure_states_.size() > kMaxUnionStates) {
    // Classing a large rule costs about half a millisecond, which the set
    // at an object's key start, holding a state of each of a dozen rules,
    // would pay a dozen times at once: one rule is classed per mask, and
    // until all are, the set is keyed by its states (the walk of many
    // states advances them all and needs no classes).
    walk_classes.of(*std::find_if(pure_states_.begin(), pure_states_.end(), not_yet));
    unclassed = std::any_of(pure_states_.begin(), pure_states_.end(), not_yet);
  }
  if (unclassed && pure_states_.size() > kMaxUnionStates) {
    for (const uint32_t state : pure_states_) pure_key_.push_back(kStateKey | state);
  } else {
    pure_states_.clear();
    for (const uint32_t state : item_states_) {
      const uint32_t cls = walk_classes.of(state);
      if (std::find(pure_key_.begin(), pure_key_.end(), cls) != pure_key_.end()) continue;
      pure_key_.push_back(cls);
      pure_states_.push_back(state);
    }
  }
  std::sort(pure_key_.begin(), pure_key_.end());
  pure_cover_ = data_->text_closure->best_cover(item_states_.data(), item_states_.size());
  return true;
}

inline const PureWalk* TrieWalker::cached_pure_walk() {
  if (pure_key_.size() == 1) {
    if (const PureWalk* walk =
            data_->class_walks->find(static_cast<uint32_t>(pure_key_[0]), pure_cover_))
      return walk;
  }
  if (const PureWalk* walk = data_->shared_walks->find(tagged(pure_tag(), pure_key_))) return walk;
  return own_walks_.find(pure_tag(), pure_key_);
}

inline const std::vector<uint64_t>& TrieWalker::tagged(uint64_t tag,
                                                       const std::vector<uint64_t>& key) {
  tagged_key_.assign(1, tag);
  tagged_key_.insert(tagged_key_.end(), key.begin(), key.end());
  return tagged_key_;
}

inline const PureWalk* TrieWalker::share(uint64_t tag, const std::vector<uint64_t>& key,
                                         PureWalk&& walk) {
  auto owned = std::make_unique<PureWalk>(std::move(walk));
  if (const PureWalk* shared = data_->shared_walks->publish(tagged(tag, key), owned)) return shared;
  return own_walks_.keep(tag, key, std::move(*owned));
}

inline const PureWalk* TrieWalker::top_set_pure_walk(uint64_t deadline) {
  EarleyEngine& engine = *engine_;
  if (!top_set_pure_key()) return nullptr;
  if (const PureWalk* cached = cached_pure_walk()) return cached;

  PureWalk walk;
  if (pure_states_.size() == 1) {
    const uint64_t budget = deadline > engine.work() ? deadline - engine.work() : 0;
    uint64_t visited = 0;
    const bool done = data_->walk_pure_state(pure_states_[0], pure_cover_, budget, walk, visited);
    engine.charge(visited);
    if (!done || engine.work() > deadline) return nullptr;
    auto owned = std::make_unique<PureWalk>(std::move(walk));
    if (const PureWalk* shared =
            data_->class_walks->publish(static_cast<uint32_t>(pure_key_[0]), pure_cover_, owned))
      return shared;
    return own_walks_.keep(pure_tag(), pure_key_, std::move(*owned));
  }
  // A few states: an item reads a token on its own (the union of their
  // walks), and the engine decides below where one stops being pure
  // (the walks' frontiers, merged, walked from the whole set). Each
  // state's walk is its class's: shared with every set that holds the
  // class, such as the other key starts of an object type. A first visit
  // walks the trie once per state, so more states take one walk that
  // advances them all.
  if (pure_states_.size() <= kMaxUnionStates) {
    walk.bits.assign(mask_words(data_->vocabulary.size()), 0);
    for (uint32_t s : pure_states_) {
      const uint32_t cls = data_->walk_classes->of(s);
      const PureWalk* part = data_->class_walks->find(cls, pure_cover_);
      if (part == nullptr) {
        auto owned = std::make_unique<PureWalk>();
        const uint64_t budget = deadline > engine.work() ? deadline - engine.work() : 0;
        uint64_t visited = 0;
        const bool done = data_->walk_pure_state(s, pure_cover_, budget, *owned, visited);
        engine.charge(visited);
        if (!done || engine.work() > deadline) return nullptr;
        part = data_->class_walks->publish(cls, pure_cover_, owned);
        if (part == nullptr) {  // (the shared memory is spent)
          walk.owned_state_parts.push_back(std::move(owned));
          part = walk.owned_state_parts.back().get();
        }
      }
      part->write_to(walk.bits.data());
      walk.state_parts.push_back(part);
    }
    merge_frontiers(walk);
    return share(pure_tag(), pure_key_, std::move(walk));
  }
  const TokenTrie& trie = data_->trie_for(pure_cover_, walk);
  walk.bits.assign(mask_words(data_->vocabulary.size()), 0);
  if (!walk_state_sets(trie, walk, deadline)) return nullptr;
  walk.finish();
  return share(pure_tag(), pure_key_, std::move(walk));
}

inline uint32_t TrieWalker::intern_state_set(std::vector<uint32_t>& states) {
  std::sort(states.begin(), states.end());
  states.erase(std::unique(states.begin(), states.end()), states.end());
  const auto [id, inserted] = state_sets_.intern(states.data(), states.size());
  if (inserted) {
    // Steps are kept for the sets seen first, up to kMaxSetSteps (4 bytes
    // each); the steps of later sets are computed each time.
    const uint32_t width = data_->grammar->num_classes();
    if (set_steps_.size() + width <= kMaxSetSteps && set_steps_.size() == size_t{id} * width)
      set_steps_.resize(set_steps_.size() + width, kUnknownSet);
    const bool all_pure = std::all_of(states.begin(), states.end(),
                                      [&](uint32_t state) { return data_->pure[state] != 0; });
    set_kind_.push_back(!all_pure ? kImpureSet : states.size() == 1 ? kOneStateSet : kPureSet);
  }
  return id;
}

inline bool TrieWalker::walk_state_sets(const TokenTrie& trie, PureWalk& walk, uint64_t deadline) {
  EarleyEngine& engine = *engine_;
  const ByteGrammar& grammar = *data_->grammar;
  const uint32_t width = grammar.num_classes();
  const auto& nodes = trie.nodes();
  const auto& ids = trie.token_ids();
  state_sets_.reset(64);
  set_steps_.clear();
  set_kind_.clear();
  set_at_.resize(path_.size());
  set_members_.assign(pure_states_.begin(), pure_states_.end());
  set_at_[0] = intern_state_set(set_members_);
  const uint32_t n = static_cast<uint32_t>(nodes.size());
  // As in walk_from_state's loop, whether a node is alive, holds a token
  // or has children are selects rather than branches; the rare cases (a new
  // step, a set that is not pure or has come down to one state) branch.
  // The work is counted in a local and charged to the engine where it is
  // read, and the vectors' data are in locals: stores through the mask
  // words would otherwise have them reloaded at every node.
  uint64_t work = engine.work();
  uint32_t* const bits = walk.bits.data();
  uint32_t* const set_at = set_at_.data();
  uint8_t* const path = path_.data();
  const uint8_t* const byte_class = data_->pure_transitions->byte_class;
  const uint32_t* steps = set_steps_.data();
  size_t steps_size = set_steps_.size();
  const uint8_t* kind = set_kind_.data();
  for (uint32_t i = 1; i < n;) {
    if (++work > deadline) {
      engine.charge(work - engine.work());
      return false;
    }
    const TokenTrie::Node& node = nodes[i];
    const size_t depth = node.depth;
    const size_t step = size_t{set_at[depth - 1]} * width + byte_class[node.byte];
    uint32_t to = step < steps_size ? steps[step] : kUnknownSet;
    if (to == kUnknownSet) [[unlikely]] {
      to = new_set_step(step, node.byte, depth);
      steps = set_steps_.data();
      steps_size = set_steps_.size();
      kind = set_kind_.data();
    }
    const bool alive = to != kDeadSet;
    set_node_tokens(bits, ids.data(), node.tokens_begin, nodes[i + 1].tokens_begin, alive);
    path[depth] = node.byte;
    set_at[depth] = to;  // (unread unless the walk goes below)
    if (alive & (node.subtree_end != i + 1) & (kind[alive ? to : 0] != kPureSet)) [[unlikely]] {
      if (kind[to] == kImpureSet) {
        walk.add_frontier(i, path_, depth);
      } else {
        // The states have come down to one (the other keys of an object
        // have died): its plain walk below this node.
        uint64_t visited = 0;
        const bool done = walk_subtree_from_state(
            *data_->pure_transitions, trie, i + 1, node.subtree_end, depth, path,
            *state_sets_.data(to), deadline > work ? deadline - work : 0, walk, bits, visited);
        work += visited;
        if (!done || work > deadline) {
          engine.charge(work - engine.work());
          return false;
        }
      }
      i = node.subtree_end;
      continue;
    }
    i = alive ? i + 1 : node.subtree_end;
  }
  engine.charge(work - engine.work());
  return true;
}

uint32_t TrieWalker::new_set_step(size_t step, uint8_t byte, size_t depth) {
  const ByteGrammar& grammar = *data_->grammar;
  const uint32_t from = set_at_[depth - 1];
  set_members_.clear();
  for (const uint32_t *state = state_sets_.data(from), *last = state + state_sets_.size(from);
       state != last; ++state)
    if (const uint32_t next = grammar.next(*state, byte); next != kNoState)
      set_members_.push_back(next);
  const uint32_t to = set_members_.empty() ? kDeadSet : intern_state_set(set_members_);
  if (step < set_steps_.size()) set_steps_[step] = to;
  return to;
}

inline void TrieWalker::merge_frontiers(PureWalk& walk) {
  struct Entry {
    uint32_t node;
    const uint8_t* path;
  };
  std::vector<Entry> entries;
  std::vector<const PureWalk*> kept;
  for (const PureWalk* part : walk.state_parts) {
    // (Split parts, and parts that walked another trie than the first
    // merged one, such as a tier walk's, keep their own frontiers.)
    if (part->short_part != nullptr || part->frontier.empty() ||
        (walk.trie != nullptr && part->trie != walk.trie)) {
      if (part->has_frontier()) kept.push_back(part);
      continue;
    }
    walk.trie = part->trie;
    const uint8_t* path = part->paths.data();
    for (uint32_t node : part->frontier) {
      entries.push_back({node, path});
      path += walk.trie->nodes()[node].depth;
    }
  }
  walk.state_parts = std::move(kept);
  if (entries.empty()) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.node < b.node; });
  const auto& nodes = walk.trie->nodes();
  uint32_t covered_until = 0;  // the end of the last kept node's subtree
  for (const Entry& entry : entries) {
    if (entry.node < covered_until) continue;
    walk.frontier.push_back(entry.node);
    walk.paths.insert(walk.paths.end(), entry.path, entry.path + nodes[entry.node].depth);
    covered_until = nodes[entry.node].subtree_end;
  }
}

inline const PureWalk* TrieWalker::top_set_local_walk(size_t base, uint64_t deadline) {
  EarleyEngine& engine = *engine_;
  set_key(data_->local_key_class, base, local_key_);
  if (const PureWalk* walk = data_->shared_walks->find(tagged(kLocalKeyTag, local_key_)))
    return walk;
  if (const PureWalk* walk = own_walks_.find(kLocalKeyTag, local_key_)) return walk;

  // An item that accepts all plain text keeps the set alive through it.
  item_states_.clear();
  for (const EarleyItem* it = engine.set_begin(base); it != engine.set_end(base); ++it)
    item_states_.push_back(it->state);
  const TextCover cover = data_->text_closure->best_cover(item_states_.data(), item_states_.size());
  PureWalk walk;
  if (data_->short_local_class.empty()) {
    if (!local_walk_over(data_->trie_for(cover, walk), base, deadline, walk)) return nullptr;
    return share(kLocalKeyTag, local_key_, std::move(walk));
  }
  // A split walk: the short part is shared by the sets that agree in
  // their short local key (and cover, which says what it may take for
  // granted).
  set_key(data_->short_local_class, base, short_key_);
  const uint64_t short_tag = kShortLocalKeyTag + cover;
  const PureWalk* short_part = data_->shared_walks->find(tagged(short_tag, short_key_));
  std::unique_ptr<PureWalk> owned;
  if (short_part == nullptr) {
    owned = std::make_unique<PureWalk>();
    if (!local_walk_over(data_->short_trie_for(cover, *owned), base, deadline, *owned))
      return nullptr;
    short_part = data_->shared_walks->publish(tagged(short_tag, short_key_), owned);
  }
  walk.attach_short_part(short_part, owned);
  if (!local_walk_over(data_->long_trie_for(cover, walk), base, deadline, walk)) return nullptr;
  walk.make_sparse();
  return share(kLocalKeyTag, local_key_, std::move(walk));
}

inline void TrieWalker::set_key(const std::vector<uint32_t>& classes, size_t base,
                                std::vector<uint64_t>& key) {
  EarleyEngine& engine = *engine_;
  key.clear();
  written_pairs_.clear();
  if (data_->grammar->any_orders().empty()) {
    for (const EarleyItem* it = engine.set_begin(base); it != engine.set_end(base); ++it)
      key.push_back((uint64_t{classes[it->state]} << 1) | (it->origin == base ? 0 : 1));
  } else {
    for (const EarleyItem* it = engine.set_begin(base); it != engine.set_end(base); ++it) {
      const uint64_t word = (uint64_t{classes[it->state]} << 1) | (it->origin == base ? 0 : 1);
      if (data_->grammar->states()[it->state].in_any_order) {
        written_pairs_.emplace_back(word, engine.members_written(it));
      } else {
        key.push_back(word);
      }
    }
  }
  std::sort(key.begin(), key.end());
  key.erase(std::unique(key.begin(), key.end()), key.end());
  // (Items in AnyOrder states are each their own class.)
  if (!written_pairs_.empty()) append_written_pairs(written_pairs_, key);
}

inline bool TrieWalker::local_walk_over(const TokenTrie& trie, size_t base, uint64_t deadline,
                                        PureWalk& walk) {
  EarleyEngine& engine = *engine_;
  walk_trie_ = &trie;
  depth_cap_ = walk.depth_cap;
  walk.bits.assign(mask_words(data_->vocabulary.size()), 0);
  local_walk_ = &walk;
  fast_begin_[0] = fast_end_[0] = 0;  // (the engine holds the top set)
  engine.set_floor(base);
  engine.clear_below_floor();
  const bool within_limit =
      walk_nodes(1, static_cast<uint32_t>(trie.nodes().size()), walk.bits.data(), base, deadline);
  engine.set_floor(0);
  engine.clear_below_floor();
  local_walk_ = nullptr;
  engine.truncate(base);
  if (!within_limit) return false;
  walk.finish();
  return true;
}

inline bool TrieWalker::cut_at_floor(uint32_t i, size_t depth) {
  EarleyEngine& engine = *engine_;
  if (local_walk_ == nullptr || !engine.reached_below_floor()) return false;
  engine.clear_below_floor();
  local_walk_->add_frontier(i, path_, depth);
  return true;
}

bool TrieWalker::walk_past_floor(uint32_t i, size_t depth, uint32_t* words) {
  EarleyEngine& engine = *engine_;
  const ByteGrammar& grammar = *data_->grammar;
  const auto& states = grammar.states();
  const auto& nodes = walk_trie_->nodes();
  const uint8_t byte = nodes[i].byte;
  const size_t before = engine.size() - 1;  // the set node i's push read
  // The one DFA state the set's items reach on the byte (the end of a
  // number, a key that may end): a caller, or several, go to the engine.
  uint32_t followed = kNoState;
  for (const EarleyItem* it = engine.set_begin(before); it != engine.set_end(before); ++it) {
    const uint32_t next = grammar.next(it->state, byte);
    if (next == kNoState || next == followed) continue;
    if (followed != kNoState || !states[next].calls_no_rule() || states[next].in_any_order ||
        grammar.is_token_state(next))
      return false;
    followed = next;
  }
  if (followed == kNoState) return false;
  const ByteSet& after = data_->rule_follow[states[followed].rule];
  if (past_at_.size() < path_.size()) past_at_.resize(path_.size());
  past_at_[depth] = followed;
  const uint32_t* ids = walk_trie_->token_ids().data();
  const uint32_t end = nodes[i].subtree_end;
  uint64_t visited = 0;
  for (uint32_t n = i + 1; n < end;) {
    const TokenTrie::Node& node = nodes[n];
    const size_t d = node.depth;
    ++visited;
    const uint32_t parent = past_at_[d - 1];
    if (d > depth_cap_ || (!states[parent].scan.test(node.byte) && !after.test(node.byte))) {
      n = node.subtree_end;  // (no item reads it)
      continue;
    }
    path_[d] = node.byte;
    if (after.test(node.byte)) {  // (an item that completed may read it: the stack decides)
      local_walk_->add_open_frontier(n, path_, d);
      n = node.subtree_end;
      continue;
    }
    const uint32_t next = grammar.next(parent, node.byte);
    for (uint32_t t = node.tokens_begin, last = nodes[n + 1].tokens_begin; t < last; ++t)
      set_bit(words, ids[t]);
    if (!states[next].calls_no_rule() || states[next].in_any_order ||
        grammar.is_token_state(next)) {
      local_walk_->add_frontier(n, path_, d);  // (its callees' items: the engine's)
      n = node.subtree_end;
      continue;
    }
    past_at_[d] = next;
    ++n;
  }
  engine.charge(visited);
  return true;
}

inline bool TrieWalker::walk_frontier(const PureWalk& pure, uint32_t* words, size_t base,
                                      uint64_t deadline) {
  EarleyEngine& engine = *engine_;
  for (const PureWalk* part : pure.state_parts)
    if (!walk_frontier(*part, words, base, deadline)) return false;
  if (pure.short_part != nullptr && !walk_frontier(*pure.short_part, words, base, deadline))
    return false;
  if (pure.frontier.empty() && pure.open_frontier.empty()) return true;
  walk_trie_ = pure.trie;
  depth_cap_ = pure.depth_cap;
  const auto& nodes = walk_trie_->nodes();
  const uint8_t* held = nullptr;  // the path the engine holds above base
  size_t held_length = 0;
  const uint8_t* path = pure.paths.data();
  for (uint32_t f : pure.frontier) {
    const TokenTrie::Node& node = nodes[f];
    const size_t depth = node.depth;
    size_t common = 0;
    while (common < held_length && common < depth && held[common] == path[common]) ++common;
    engine.truncate(base + common);
    for (size_t d = common; d < depth; ++d)
      if (!engine.push_byte(path[d])) return false;
    std::copy(path, path + depth, path_.begin() + 1);
    fast_begin_[depth] = fast_end_[depth] = 0;  // the engine holds this depth
    following_[depth] = kNotFollowing;
    follow_from_engine(depth, 0);
    if (!walk_nodes(f + 1, node.subtree_end, words, base, deadline)) return false;
    engine.truncate(base + depth);
    held = path;
    held_length = depth;
    path += depth;
  }
  // Open nodes: their own tokens too, where the engine reads their path.
  const uint32_t* ids = walk_trie_->token_ids().data();
  path = pure.open_paths.data();
  for (uint32_t f : pure.open_frontier) {
    const TokenTrie::Node& node = nodes[f];
    const size_t depth = node.depth;
    engine.truncate(base);
    bool read = true;
    for (size_t d = 0; d < depth && read; ++d) read = engine.push_byte(path[d]);
    if (!read && engine.work_limit_hit()) return false;
    if (read) {
      for (uint32_t t = node.tokens_begin, last = nodes[f + 1].tokens_begin; t < last; ++t)
        set_bit(words, ids[t]);
      if (node.subtree_end != f + 1) {
        std::copy(path, path + depth, path_.begin() + 1);
        fast_begin_[depth] = fast_end_[depth] = 0;
        following_[depth] = kNotFollowing;
        follow_from_engine(depth, 0);
        if (!walk_nodes(f + 1, node.subtree_end, words, base, deadline)) return false;
      }
    }
    path += depth;
  }
  engine.truncate(base);
  return true;
}

}  // namespace internal
}  // namespace grammask
