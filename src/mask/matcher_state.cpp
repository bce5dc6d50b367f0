#include "mask/matcher_state.h"

#include <algorithm>
#include <cstring>

#include "grammask/bitmask.h"

namespace grammask {
namespace internal {
namespace {

constexpr uint32_t kUnknownId = UINT32_MAX;
// Marks an item predicted in the set itself in a structure key.
constexpr uint64_t kSelfOrigin = UINT32_MAX;
// A context id key's first word (its depth in the low bits), and the origin
// that stands for any set at depth 0.
constexpr uint64_t kContextTag = uint64_t{1} << 63;
constexpr uint64_t kWaiterTag = uint64_t{1} << 62;
constexpr uint64_t kContextStandIn = uint64_t{UINT32_MAX} - 1;
// A set_id label that leaves its item out of the key.
constexpr uint64_t kSkipItem = UINT64_MAX;
// Mask cache budget per matcher.
constexpr size_t kMaskCacheBytes = size_t{32} << 20;

}  // namespace

Status MatcherState::fill_mask(uint32_t* words, size_t n_words) {
  const Vocabulary& vocab = data_->vocabulary;
  const size_t needed = mask_words(vocab.size());
  if (words == nullptr || n_words < needed) {
    return Status(ErrorCode::kInvalidArgument, "mask buffer too small: " + std::to_string(n_words) +
                                                   " words given, " + std::to_string(needed) +
                                                   " needed for " + std::to_string(vocab.size()) +
                                                   " tokens");
  }
  if (terminated()) {
    std::fill(words, words + n_words, 0);
    for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
    return Status();
  }
  // Inside a pure DFA stretch whose cached walk has no frontier, the mask
  // depends on the DFA states alone.
  if (top_set_pure_key()) {
    const PureWalk* pure = cached_pure_walk();
    if (pure != nullptr && !pure->has_frontier()) {
      ++hits_;
      pure->write_over(words, n_words);
      // Pure states of the root may end it.
      if (engine_.is_accepting())
        for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
      return Status();
    }
  }
  const size_t top = engine_.size();
  // (Sets that agree at some depth agree at depth 1: a top set whose id
  // there is new has no entry at any depth.)
  const bool seen_top = context_depths_ != 0 && context_tops_.count(context_id(top, 1)) != 0;
  for (size_t depth = 1; seen_top && depth <= kMaxContextDepth; ++depth) {
    if ((context_depths_ & (1u << depth)) == 0) continue;
    auto bounded = context_cache_.find(context_id(top, depth));
    if (bounded == context_cache_.end()) continue;
    ++hits_;
    bounded->second.write_over(words, n_words);
    if (engine_.is_accepting())
      for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
    return Status();
  }
  if (!mask_cache_.empty()) {
    auto cached = mask_cache_.find(structure_id(top));
    if (cached != mask_cache_.end()) {
      ++hits_;
      cached->second.write_over(words, n_words);
      return Status();
    }
  }
  ++misses_;
  std::fill(words, words + n_words, 0);
  engine_.start_read_log(top);
  const bool within_limit = walk_trie(words);
  engine_.stop_read_log();
  if (!within_limit) {
    std::memset(words, 0, n_words * sizeof(uint32_t));
    return Status(ErrorCode::kLimitExceeded,
                  "mask computation exceeded the work limit (CompileOptions::max_mask_work = " +
                      std::to_string(data_->max_mask_work) + ")");
  }
  // A mask that read only the few sets nearest the top is kept by its
  // context id, without the stop tokens (whether the root may end here
  // is not in that id), else by the whole stack's structure.
  const size_t depth =
      engine_.read_log_overflowed() ? kMaxContextDepth + 1 : context_depth(engine_.read_log(), top);
  if (depth <= kMaxContextDepth) {
    remember_mask(context_cache_, context_id(top, depth), words, needed);
    context_depths_ |= 1u << depth;
    context_tops_.insert(context_id(top, 1));
  }
  if (engine_.is_accepting())
    for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
  if (depth > kMaxContextDepth) remember_mask(mask_cache_, structure_id(top), words, needed);
  return Status();
}

bool MatcherState::is_token_allowed(uint32_t token) {
  const Vocabulary& vocab = data_->vocabulary;
  if (token >= vocab.size()) return false;
  if (vocab.is_stop(token)) return terminated() || engine_.is_accepting();
  if (terminated() || vocab.is_special(token)) return false;
  const std::string_view bytes = vocab.token_bytes(token);
  if (bytes.empty()) return false;
  const size_t base = engine_.size();
  bool ok = true;
  for (size_t i = 0; i < bytes.size() && ok; ++i)
    ok = engine_.push_byte(static_cast<uint8_t>(bytes[i]));
  truncate(base);
  return ok;
}

Status MatcherState::accept_token(uint32_t token) {
  const Vocabulary& vocab = data_->vocabulary;
  if (token >= vocab.size()) {
    return Status(ErrorCode::kInvalidArgument, "token id " + std::to_string(token) +
                                                   " is out of range (vocabulary has " +
                                                   std::to_string(vocab.size()) + " tokens)");
  }
  if (vocab.is_stop(token)) {
    if (!terminated() && !engine_.is_accepting()) {
      return Status(ErrorCode::kInvalidArgument,
                    "stop token " + std::to_string(token) + " refused: the output is incomplete");
    }
    if (!terminated()) terminated_at_ = token_ends_.size();
    token_ends_.push_back(engine_.size());
    return Status();
  }
  if (terminated()) {
    return Status(ErrorCode::kInvalidState,
                  "token " + std::to_string(token) + " refused: the matcher has terminated");
  }
  if (vocab.is_special(token)) {
    return Status(ErrorCode::kInvalidArgument,
                  "special token " + std::to_string(token) + " never matches grammar text");
  }
  const std::string_view bytes = vocab.token_bytes(token);
  if (bytes.empty() || !push_all(bytes)) {
    if (engine_.work_limit_hit()) return work_limit_status("token " + std::to_string(token));
    return Status(ErrorCode::kInvalidArgument,
                  "token " + std::to_string(token) + " is not allowed here");
  }
  token_ends_.push_back(engine_.size());
  return Status();
}

Status MatcherState::accept_bytes(std::string_view bytes) {
  if (terminated()) {
    return Status(ErrorCode::kInvalidState, "bytes refused: the matcher has terminated");
  }
  if (!push_all(bytes)) {
    if (engine_.work_limit_hit()) return work_limit_status("bytes");
    return Status(ErrorCode::kInvalidArgument, "bytes not allowed here");
  }
  token_ends_.push_back(engine_.size());
  return Status();
}

Status MatcherState::rollback(size_t n) {
  if (n > token_ends_.size()) {
    return Status(ErrorCode::kInvalidArgument,
                  "cannot roll back " + std::to_string(n) + " tokens: only " +
                      std::to_string(token_ends_.size()) + " accepted");
  }
  token_ends_.resize(token_ends_.size() - n);
  if (terminated_at_ != kNotTerminated && terminated_at_ >= token_ends_.size())
    terminated_at_ = kNotTerminated;
  truncate(token_ends_.empty() ? 0 : token_ends_.back());
  return Status();
}

void MatcherState::reset() {
  token_ends_.clear();
  terminated_at_ = kNotTerminated;
  truncate(0);
}

std::string MatcherState::forced_bytes(size_t max_bytes) {
  std::string out;
  if (terminated()) return out;
  const size_t base = engine_.size();
  while (out.size() < max_bytes && !engine_.is_accepting()) {
    const ByteSet& scan = engine_.scan();
    int only = -1;
    for (int b = 0; b < 256; ++b) {
      if (!scan.test(static_cast<uint8_t>(b))) continue;
      if (only >= 0) {
        only = -2;
        break;
      }
      only = b;
    }
    if (only < 0 || !engine_.push_byte(static_cast<uint8_t>(only))) break;
    out.push_back(static_cast<char>(only));
  }
  truncate(base);
  return out;
}

inline Status MatcherState::work_limit_status(const std::string& what) const {
  return Status(ErrorCode::kLimitExceeded, what +
                                               " refused: one byte exceeded the work limit "
                                               "(RecognizerOptions::max_work_per_byte = " +
                                               std::to_string(data_->grammar->max_work_per_byte()) +
                                               ")");
}

inline bool MatcherState::push_all(std::string_view bytes) {
  const size_t base = engine_.size();
  for (char c : bytes) {
    if (!engine_.push_byte(static_cast<uint8_t>(c))) {
      truncate(base);
      return false;
    }
  }
  return true;
}

inline void MatcherState::truncate(size_t length) {
  engine_.truncate(length);
  if (structure_ids_.size() > length + 1) structure_ids_.resize(length + 1);
  if (context_ids_.size() > length + 1) context_ids_.resize(length + 1);
}

inline bool MatcherState::walk_trie(uint32_t* words) {
  const TokenTrie& trie = data_->vocabulary.trie();
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
  const uint64_t work = engine_.work();
  const uint64_t deadline =
      work + data_->max_mask_work < work ? UINT64_MAX : work + data_->max_mask_work;
  engine_.set_work_deadline(deadline);
  const size_t base = engine_.size();
  bool within_limit;
  const PureWalk* walk = top_set_pure_walk(deadline);
  if (walk == nullptr && engine_.work() <= deadline) walk = top_set_local_walk(base, deadline);
  if (walk != nullptr) {
    walk->write_to(words);
    within_limit = engine_.work() <= deadline && walk_frontier(*walk, words, base, deadline);
  } else {
    within_limit = false;
  }
  engine_.set_work_deadline(UINT64_MAX);
  engine_.truncate(base);
  return within_limit;
}

inline bool MatcherState::advance(const uint32_t* from_begin, const uint32_t* from_end,
                                  uint8_t byte, size_t out_begin) {
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

inline bool MatcherState::walk_nodes(uint32_t first, uint32_t last, uint32_t* words, size_t base,
                                     uint64_t deadline) {
  const auto& nodes = walk_trie_->nodes();
  const auto& ids = walk_trie_->token_ids();
  for (uint32_t i = first; i < last;) {
    engine_.charge(1);
    if (engine_.work() > deadline) return false;
    const TokenTrie::Node& node = nodes[i];
    const size_t depth = node.depth;
    if (depth > depth_cap_) {  // (a split walk's short part)
      i = node.subtree_end;
      continue;
    }
    const bool has_children = node.subtree_end != i + 1;
    if (engine_.size() > base + depth - 1) engine_.truncate(base + depth - 1);
    if (fast_end_[depth - 1] > fast_begin_[depth - 1]) {
      const bool following = following_[depth - 1] != 0;
      if (following && follow_[depth - 1].test(node.byte)) {
        // The byte may go on after the followed rule ends: the engine
        // decides this child, from the parent's set.
        for (size_t d = engine_.size() - base + 1; d < depth; ++d)
          if (!engine_.push_byte(path_[d])) return false;
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
            follow_[depth] = follow_[depth - 1];
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
            for (size_t d = engine_.size() - base + 1; d <= depth; ++d)
              if (!engine_.push_byte(path_[d])) return false;
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
    const ByteSet& scan = engine_.scan();
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
      const size_t top = engine_.size();
      const EarleyItem* first_item = engine_.set_begin(top);
      const EarleyItem* last_item = engine_.set_end(top);
      // (Keeping a fast-path parent's states for its other children.)
      pool_.resize(fast_end_[depth - 1]);
      const size_t out = pool_.size();
      fast_begin_[depth] = fast_end_[depth] = static_cast<uint32_t>(out);
      following_[depth] = kNotFollowing;
      bool all_pure = last_item - first_item <= kMaxFastItems;
      for (const EarleyItem* it = first_item; it != last_item && all_pure; ++it)
        all_pure &= advance(&it->state, &it->state + 1, node.byte, out);
      if (all_pure && pool_.size() > out) {
        fast_end_[depth] = static_cast<uint32_t>(pool_.size());
        scan_ready_[depth] = 0;
      } else {
        pool_.resize(out);
        // The scan bit proved the byte: only a work bound refuses it.
        if (!engine_.push_byte(node.byte)) return false;
        if (cut_at_floor(i, depth)) {
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
uint32_t MatcherState::skip_dead_siblings(uint32_t i, uint32_t last, size_t depth,
                                          const Dead& dead) {
  const auto& nodes = walk_trie_->nodes();
  for (; i < last && nodes[i].depth == depth && dead(nodes[i].byte); i = nodes[i].subtree_end)
    engine_.charge(1);
  return i;
}

inline MatcherState::Advanced MatcherState::advance_followed(uint32_t begin, uint32_t end,
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

bool MatcherState::only_plain_callers_from(size_t out) {
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

inline void MatcherState::set_fast_scan(size_t depth) {
  const auto& states = data_->grammar->states();
  ByteSet scan;
  for (uint32_t i = fast_begin_[depth]; i < fast_end_[depth]; ++i)
    if (pool_[i] != kNoState) scan |= states[pool_[i]].scan;
  fast_scan_[depth] = scan;
  scan_ready_[depth] = 1;
}

inline bool MatcherState::plain_caller(uint32_t state, ByteSet& follow) const {
  const uint32_t at = data_->plain_caller[state];
  if (at == kNotPlainCaller) return false;
  follow |= data_->plain_callee_bytes[at];
  return true;
}

inline void MatcherState::follow_from_engine(size_t depth, size_t out) {
  constexpr ptrdiff_t kMaxFollowItems = 64;
  const size_t top = engine_.size();
  const EarleyItem* first_item = engine_.set_begin(top);
  const EarleyItem* last_item = engine_.set_end(top);
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

inline bool MatcherState::top_set_pure_key() {
  const WalkClasses& walk_classes = *data_->walk_classes;
  const std::vector<uint8_t>& pure = data_->pure;
  const size_t top = engine_.size();
  const EarleyItem* first = engine_.set_begin(top);
  const EarleyItem* last = engine_.set_end(top);
  if (first == last || last - first > kMaxFastItems) return false;
  pure_key_.clear();
  pure_states_.clear();
  item_states_.clear();
  for (const EarleyItem* it = first; it != last; ++it) {
    if (!pure[it->state]) return false;
    const uint32_t cls = walk_classes.of(it->state);
    item_states_.push_back(it->state);
    if (std::find(pure_key_.begin(), pure_key_.end(), cls) != pure_key_.end()) continue;
    pure_key_.push_back(cls);
    pure_states_.push_back(it->state);
  }
  std::sort(pure_key_.begin(), pure_key_.end());
  pure_cover_ = data_->text_closure->best_cover(item_states_.data(), item_states_.size());
  return true;
}

inline const PureWalk* MatcherState::cached_pure_walk() {
  if (pure_key_.size() == 1) {
    if (const PureWalk* walk =
            data_->class_walks->find(static_cast<uint32_t>(pure_key_[0]), pure_cover_))
      return walk;
  }
  if (const PureWalk* walk = data_->shared_walks->find(tagged(pure_tag(), pure_key_))) return walk;
  auto it = pure_walks_[pure_cover_].find(pure_key_);
  return it == pure_walks_[pure_cover_].end() ? nullptr : &it->second;
}

inline const std::vector<uint64_t>& MatcherState::tagged(uint64_t tag,
                                                         const std::vector<uint64_t>& key) {
  tagged_key_.assign(1, tag);
  tagged_key_.insert(tagged_key_.end(), key.begin(), key.end());
  return tagged_key_;
}

inline const PureWalk* MatcherState::share(uint64_t tag, WalkCache& cache,
                                           const std::vector<uint64_t>& key, PureWalk&& walk) {
  auto owned = std::make_unique<PureWalk>(std::move(walk));
  if (const PureWalk* shared = data_->shared_walks->publish(tagged(tag, key), owned)) return shared;
  return remember_in(cache, key, std::move(*owned));
}

inline const PureWalk* MatcherState::top_set_pure_walk(uint64_t deadline) {
  if (!top_set_pure_key()) return nullptr;
  if (const PureWalk* cached = cached_pure_walk()) return cached;

  PureWalk walk;
  if (pure_states_.size() == 1) {
    const uint64_t budget = deadline > engine_.work() ? deadline - engine_.work() : 0;
    uint64_t visited = 0;
    const bool done = data_->walk_pure_state(pure_states_[0], pure_cover_, budget, walk, visited,
                                             /*forced=*/false);
    engine_.charge(visited);
    if (!done || engine_.work() > deadline) return nullptr;
    auto owned = std::make_unique<PureWalk>(std::move(walk));
    if (const PureWalk* shared =
            data_->class_walks->publish(static_cast<uint32_t>(pure_key_[0]), pure_cover_, owned))
      return shared;
    return remember_in(pure_walks_[pure_cover_], pure_key_, std::move(*owned));
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
        const uint64_t budget = deadline > engine_.work() ? deadline - engine_.work() : 0;
        uint64_t visited = 0;
        const bool done = data_->walk_pure_state(s, pure_cover_, budget, *owned, visited,
                                                 /*forced=*/false);
        engine_.charge(visited);
        if (!done || engine_.work() > deadline) return nullptr;
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
    return share(pure_tag(), pure_walks_[pure_cover_], pure_key_, std::move(walk));
  }
  const TokenTrie& trie = data_->trie_for(pure_cover_, walk);
  const auto& nodes = trie.nodes();
  const auto& ids = trie.token_ids();
  walk.bits.assign(mask_words(data_->vocabulary.size()), 0);
  // pool_[fast_begin_[d], fast_end_[d]): the states after the path to depth d.
  pool_.assign(pure_states_.begin(), pure_states_.end());
  fast_begin_[0] = 0;
  fast_end_[0] = static_cast<uint32_t>(pool_.size());
  const uint32_t n = static_cast<uint32_t>(nodes.size());
  for (uint32_t i = 1; i < n;) {
    engine_.charge(1);
    if (engine_.work() > deadline) return nullptr;
    const TokenTrie::Node& node = nodes[i];
    const size_t depth = node.depth;
    pool_.resize(fast_end_[depth - 1]);
    const size_t out = pool_.size();
    const bool all_pure = advance(pool_.data() + fast_begin_[depth - 1],
                                  pool_.data() + fast_end_[depth - 1], node.byte, out);
    if (pool_.size() == out) {
      i = node.subtree_end;
      continue;
    }
    for (uint32_t t = node.tokens_begin, end = nodes[i + 1].tokens_begin; t < end; ++t)
      set_bit(walk.bits.data(), ids[t]);
    path_[depth] = node.byte;
    if (node.subtree_end != i + 1 && !all_pure) {
      walk.add_frontier(i, path_, depth);
      i = node.subtree_end;
      continue;
    }
    fast_begin_[depth] = static_cast<uint32_t>(out);
    fast_end_[depth] = static_cast<uint32_t>(pool_.size());
    ++i;
  }
  pool_.clear();
  walk.finish();
  return share(pure_tag(), pure_walks_[pure_cover_], pure_key_, std::move(walk));
}

inline void MatcherState::merge_frontiers(PureWalk& walk) {
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

inline const PureWalk* MatcherState::remember_in(WalkCache& cache, const std::vector<uint64_t>& key,
                                                 PureWalk&& walk) {
  const size_t bytes = walk.memory() + key.size() * sizeof(uint64_t);
  if (walk_bytes_ + bytes > kMaskCacheBytes) {
    for (WalkCache& cache : pure_walks_) cache.clear();
    local_walks_.clear();
    walk_bytes_ = 0;
  }
  walk_bytes_ += bytes;
  return &cache.emplace(key, std::move(walk)).first->second;
}

inline const PureWalk* MatcherState::top_set_local_walk(size_t base, uint64_t deadline) {
  set_key(data_->local_class, base, local_key_);
  if (const PureWalk* walk = data_->shared_walks->find(tagged(kLocalKeyTag, local_key_)))
    return walk;
  if (auto it = local_walks_.find(local_key_); it != local_walks_.end()) return &it->second;

  // An item that accepts all plain text keeps the set alive through it.
  item_states_.clear();
  for (const EarleyItem* it = engine_.set_begin(base); it != engine_.set_end(base); ++it)
    item_states_.push_back(it->state);
  const TextCover cover = data_->text_closure->best_cover(item_states_.data(), item_states_.size());
  PureWalk walk;
  if (data_->short_local_class.empty()) {
    if (!local_walk_over(data_->trie_for(cover, walk), base, deadline, walk)) return nullptr;
    return share(kLocalKeyTag, local_walks_, local_key_, std::move(walk));
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
  return share(kLocalKeyTag, local_walks_, local_key_, std::move(walk));
}

inline void MatcherState::set_key(const std::vector<uint32_t>& classes, size_t base,
                                  std::vector<uint64_t>& key) {
  key.clear();
  for (const EarleyItem* it = engine_.set_begin(base); it != engine_.set_end(base); ++it)
    key.push_back((uint64_t{classes[it->state]} << 1) | (it->origin == base ? 0 : 1));
  std::sort(key.begin(), key.end());
  key.erase(std::unique(key.begin(), key.end()), key.end());
}

inline bool MatcherState::local_walk_over(const TokenTrie& trie, size_t base, uint64_t deadline,
                                          PureWalk& walk) {
  walk_trie_ = &trie;
  depth_cap_ = walk.depth_cap;
  walk.bits.assign(mask_words(data_->vocabulary.size()), 0);
  local_walk_ = &walk;
  fast_begin_[0] = fast_end_[0] = 0;  // (the engine holds the top set)
  engine_.set_floor(base);
  engine_.clear_below_floor();
  const bool within_limit =
      walk_nodes(1, static_cast<uint32_t>(trie.nodes().size()), walk.bits.data(), base, deadline);
  engine_.set_floor(0);
  engine_.clear_below_floor();
  local_walk_ = nullptr;
  engine_.truncate(base);
  if (!within_limit) return false;
  walk.finish();
  return true;
}

inline bool MatcherState::cut_at_floor(uint32_t i, size_t depth) {
  if (local_walk_ == nullptr || !engine_.reached_below_floor()) return false;
  engine_.clear_below_floor();
  local_walk_->add_frontier(i, path_, depth);
  return true;
}

inline bool MatcherState::walk_frontier(const PureWalk& pure, uint32_t* words, size_t base,
                                        uint64_t deadline) {
  for (const PureWalk* part : pure.state_parts)
    if (!walk_frontier(*part, words, base, deadline)) return false;
  if (pure.short_part != nullptr && !walk_frontier(*pure.short_part, words, base, deadline))
    return false;
  if (pure.frontier.empty()) return true;
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
    engine_.truncate(base + common);
    for (size_t d = common; d < depth; ++d)
      if (!engine_.push_byte(path[d])) return false;
    std::copy(path, path + depth, path_.begin() + 1);
    fast_begin_[depth] = fast_end_[depth] = 0;  // the engine holds this depth
    following_[depth] = kNotFollowing;
    follow_from_engine(depth, 0);
    if (!walk_nodes(f + 1, node.subtree_end, words, base, deadline)) return false;
    engine_.truncate(base + depth);
    held = path;
    held_length = depth;
    path += depth;
  }
  return true;
}

inline void MatcherState::remember_mask(std::unordered_map<uint32_t, CachedMask>& cache,
                                        uint32_t id, const uint32_t* words, size_t n_words) {
  CachedMask entry(words, n_words, cache_scratch_);
  if (mask_cache_bytes_ + entry.bytes() > kMaskCacheBytes) {
    mask_cache_.clear();
    context_cache_.clear();
    context_tops_.clear();
    context_depths_ = 0;
    mask_cache_bytes_ = 0;
  }
  mask_cache_bytes_ += entry.bytes();
  cache.emplace(id, std::move(entry));
}

inline size_t MatcherState::context_depth(const std::vector<uint32_t>& reads, size_t top) {
  if (reads.empty()) return 1;
  const uint32_t lowest = *std::min_element(reads.begin(), reads.end());
  constexpr size_t kTooDeep = kMaxContextDepth + 1;
  if (++chain_stamp_ == 0) {  // (wrapped: forget every stamp)
    std::fill(chain_seen_.begin(), chain_seen_.end(), 0);
    chain_stamp_ = 1;
  }
  if (chain_seen_.size() < top + 1) chain_seen_.resize(top + 1, 0);
  if (chain_length_.size() < top + 1) chain_length_.resize(top + 1, 0);
  // Sets in descending order (a max-heap): origins lie below, so a set
  // is final once every set above it is done.
  chain_heap_.clear();
  auto reach = [&](uint32_t set, uint8_t length) {
    if (chain_seen_[set] != chain_stamp_) {
      chain_seen_[set] = chain_stamp_;
      chain_length_[set] = length;
      chain_heap_.push_back(set);
      std::push_heap(chain_heap_.begin(), chain_heap_.end());
    } else if (chain_length_[set] < length) {
      chain_length_[set] = length;
    }
  };
  const auto& waiter_class = data_->waiter_class;
  for (const EarleyItem* it = engine_.set_begin(top); it != engine_.set_end(top); ++it)
    if (it->origin != top && it->origin >= lowest) reach(it->origin, 1);
  while (!chain_heap_.empty()) {
    std::pop_heap(chain_heap_.begin(), chain_heap_.end());
    const uint32_t set = chain_heap_.back();
    chain_heap_.pop_back();
    const size_t length = chain_length_[set];
    if (length >= kTooDeep) continue;  // (what lies below is too deep too)
    const uint8_t next = static_cast<uint8_t>(length + 1);
    for (const EarleyItem* it = engine_.set_begin(set); it != engine_.set_end(set); ++it)
      if (waiter_class[it->state] != kNotWaiting && it->origin != set && it->origin >= lowest)
        reach(it->origin, next);
  }
  size_t depth = 1;
  for (uint32_t set : reads) {
    if (set == top) continue;
    if (chain_seen_[set] != chain_stamp_ || chain_length_[set] >= kTooDeep) return kTooDeep;
    depth = std::max<size_t>(depth, size_t{chain_length_[set]} + 1);
  }
  return depth;
}

inline uint32_t MatcherState::context_id(size_t k, size_t d) {
  if (context_ids_.size() < k + 1) {
    ContextIds unknown;
    unknown.fill(kUnknownId);
    context_ids_.resize(k + 1, unknown);
  }
  return set_id(k, d - 1, kContextTag | d, [](uint32_t state) { return uint64_t{state}; });
}

inline uint64_t MatcherState::waiter_id(size_t s, size_t j) {
  if (j == 0) return kContextStandIn;
  uint32_t& memo = context_ids_[s][j - 1];
  if (memo == kUnknownId) {
    const auto& waiter_class = data_->waiter_class;
    memo = set_id(s, j - 1, kWaiterTag | j, [&](uint32_t state) {
      return waiter_class[state] == kNotWaiting ? kSkipItem : uint64_t{waiter_class[state]};
    });
  }
  return memo;
}

template <typename Label>
uint32_t MatcherState::set_id(size_t s, size_t origin_depth, uint64_t tag, const Label& label) {
  // (The origins first: their keys are built in context_key_ too.)
  for (const EarleyItem* it = engine_.set_begin(s); it != engine_.set_end(s); ++it)
    if (label(it->state) != kSkipItem && it->origin != s) waiter_id(it->origin, origin_depth);
  context_key_.clear();
  context_key_.push_back(tag);
  for (const EarleyItem* it = engine_.set_begin(s); it != engine_.set_end(s); ++it) {
    const uint64_t item_label = label(it->state);
    if (item_label == kSkipItem) continue;
    const uint64_t origin = it->origin == s ? kSelfOrigin : waiter_id(it->origin, origin_depth);
    context_key_.push_back((item_label << 32) | origin);
  }
  return intern_context_key();
}

inline uint32_t MatcherState::intern_context_key() {
  std::sort(context_key_.begin() + 1, context_key_.end());
  context_key_.erase(std::unique(context_key_.begin() + 1, context_key_.end()), context_key_.end());
  context_words_.clear();
  for (uint64_t word : context_key_) {
    context_words_.push_back(static_cast<uint32_t>(word));
    context_words_.push_back(static_cast<uint32_t>(word >> 32));
  }
  return context_index_.intern(context_words_.data(), context_words_.size()).first;
}

inline uint32_t MatcherState::structure_id(size_t k) {
  if (structure_ids_.size() < engine_.size() + 1)
    structure_ids_.resize(engine_.size() + 1, kUnknownId);
  if (structure_ids_[k] != kUnknownId) return structure_ids_[k];
  std::vector<size_t> todo{k};
  std::vector<uint64_t> key;
  while (!todo.empty()) {
    const size_t set = todo.back();
    bool ready = true;
    for (const EarleyItem* it = engine_.set_begin(set); it != engine_.set_end(set); ++it) {
      if (it->origin != set && structure_ids_[it->origin] == kUnknownId) {
        todo.push_back(it->origin);
        ready = false;
      }
    }
    if (!ready) continue;
    todo.pop_back();
    if (structure_ids_[set] != kUnknownId) continue;
    key.clear();
    for (const EarleyItem* it = engine_.set_begin(set); it != engine_.set_end(set); ++it) {
      const uint64_t origin = it->origin == set ? kSelfOrigin : structure_ids_[it->origin];
      key.push_back((uint64_t{it->state} << 32) | origin);
    }
    std::sort(key.begin(), key.end());
    auto [pos, inserted] = interned_.emplace(key, static_cast<uint32_t>(interned_.size()));
    structure_ids_[set] = pos->second;
  }
  return structure_ids_[k];
}

}  // namespace internal
}  // namespace grammask
