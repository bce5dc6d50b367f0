#include "grammask/matcher.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "automaton.h"
#include "earley.h"
#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "token_trie.h"

namespace grammask {
namespace internal {

struct CompiledGrammarData {
  std::shared_ptr<const ByteGrammar> grammar;
  Vocabulary vocabulary;
  uint64_t max_mask_work = 0;  // CompileOptions::max_mask_work
};

namespace {

constexpr uint32_t kUnknownId = UINT32_MAX;
// Marks an item predicted in the set itself in a structure key.
constexpr uint64_t kSelfOrigin = UINT32_MAX;
// Mask cache budget per matcher.
constexpr size_t kMaskCacheBytes = size_t{32} << 20;

struct KeyHash {
  size_t operator()(const std::vector<uint64_t>& key) const noexcept {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ key.size();
    for (uint64_t k : key) {
      h ^= k + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdULL;
    }
    return static_cast<size_t>(h ^ (h >> 32));
  }
};

}  // namespace

// Everything a Matcher owns. The mask cache is keyed by a structural id of
// the parser state: two positions whose Earley sets hold the same items with
// structurally equal origin sets have the same future, so the same mask.
class MatcherState {
 public:
  explicit MatcherState(std::shared_ptr<const CompiledGrammarData> data)
      : data_(std::move(data)), engine_(data_->grammar) {}

  const CompiledGrammarData& data() const { return *data_; }
  const std::shared_ptr<const CompiledGrammarData>& shared_data() const { return data_; }

  Status fill_mask(uint32_t* words, size_t n_words) {
    const Vocabulary& vocab = data_->vocabulary;
    const size_t needed = mask_words(vocab.size());
    if (words == nullptr || n_words < needed) {
      return Status(ErrorCode::kInvalidArgument,
                    "mask buffer too small: " + std::to_string(n_words) + " words given, " +
                        std::to_string(needed) + " needed for " + std::to_string(vocab.size()) +
                        " tokens");
    }
    std::memset(words, 0, n_words * sizeof(uint32_t));
    if (terminated()) {
      for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
      return Status();
    }
    // Inside a pure DFA stretch whose cached walk has no frontier, the mask
    // depends on the DFA states alone (an all-pure set is never accepting).
    if (top_set_pure_key()) {
      auto pure = pure_walks_.find(pure_key_);
      if (pure != pure_walks_.end() && pure->second.frontier.empty()) {
        ++hits_;
        std::copy(pure->second.bits.begin(), pure->second.bits.end(), words);
        return Status();
      }
    }
    const uint32_t id = structure_id(engine_.size());
    auto cached = mask_cache_.find(id);
    if (cached != mask_cache_.end()) {
      ++hits_;
      std::copy(cached->second.begin(), cached->second.end(), words);
      return Status();
    }
    ++misses_;
    if (!walk_trie(words)) {
      std::memset(words, 0, n_words * sizeof(uint32_t));
      return Status(ErrorCode::kLimitExceeded,
                    "mask computation exceeded the work limit (CompileOptions::max_mask_work = " +
                        std::to_string(data_->max_mask_work) + ")");
    }
    if (engine_.is_accepting())
      for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
    if ((mask_cache_.size() + 1) * needed * sizeof(uint32_t) > kMaskCacheBytes) mask_cache_.clear();
    mask_cache_.emplace(id, std::vector<uint32_t>(words, words + needed));
    return Status();
  }

  bool is_token_allowed(uint32_t token) {
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

  Status accept_token(uint32_t token) {
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

  Status accept_bytes(std::string_view bytes) {
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

  Status rollback(size_t n) {
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

  void reset() {
    token_ends_.clear();
    terminated_at_ = kNotTerminated;
    truncate(0);
  }

  size_t num_tokens() const { return token_ends_.size(); }
  bool is_accepting() const { return engine_.is_accepting(); }
  bool terminated() const { return terminated_at_ != kNotTerminated; }

  std::string forced_bytes(size_t max_bytes) {
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

  size_t hits() const { return hits_; }
  size_t misses() const { return misses_; }

 private:
  static constexpr size_t kNotTerminated = SIZE_MAX;
  // Sets with more items than this always go through the engine.
  static constexpr ptrdiff_t kMaxFastItems = 16;

  Status work_limit_status(const std::string& what) const {
    return Status(ErrorCode::kLimitExceeded,
                  what +
                      " refused: one byte exceeded the work limit "
                      "(RecognizerOptions::max_work_per_byte = " +
                      std::to_string(data_->grammar->max_work_per_byte()) + ")");
  }

  bool push_all(std::string_view bytes) {
    const size_t base = engine_.size();
    for (char c : bytes) {
      if (!engine_.push_byte(static_cast<uint8_t>(c))) {
        truncate(base);
        return false;
      }
    }
    return true;
  }

  void truncate(size_t length) {
    engine_.truncate(length);
    if (structure_ids_.size() > length + 1) structure_ids_.resize(length + 1);
  }

  // Depth-first walk of the token trie over the Earley stack: a child whose
  // byte the current set cannot scan is skipped with its whole subtree, and
  // a leaf needs no new set at all (the scan bit already proves the token).
  //
  // Fast path: while every item of the parse sits in a "pure" state (one
  // that neither ends its rule nor calls another), the next set is just
  // those items advanced, so the walk follows plain DFA transitions on the
  // (few) states and builds no Earley sets. It falls back to the engine,
  // replaying the path's bytes, only where some state needs completion or
  // prediction.
  //
  // When the top set itself is all pure (inside a string, a number, a
  // keyword), that DFA part of the walk depends on the states alone, not on
  // where the rule was called from, so it is cached by state set (see
  // PureWalk) and only the frontier subtrees, where the rule may end, go
  // through the engine.
  //
  // Returns false when the walk would exceed CompileOptions::max_mask_work
  // (trie nodes visited plus Earley work); the mask is then incomplete.
  bool walk_trie(uint32_t* words) {
    const TokenTrie& trie = data_->vocabulary.trie();
    const size_t max_depth = trie.max_depth() + 1;
    fast_begin_.assign(max_depth + 1, 0);
    fast_end_.assign(max_depth + 1, 0);
    path_.assign(max_depth + 1, 0);
    pool_.clear();
    const uint64_t work = engine_.work();
    const uint64_t deadline =
        work + data_->max_mask_work < work ? UINT64_MAX : work + data_->max_mask_work;
    engine_.set_work_deadline(deadline);
    const size_t base = engine_.size();
    bool within_limit;
    if (const PureWalk* pure = top_set_pure_walk(deadline)) {
      // std::copy, not memcpy: an empty vocabulary has no words (data() may be null).
      std::copy(pure->bits.begin(), pure->bits.end(), words);
      within_limit = engine_.work() <= deadline && walk_frontier(*pure, words, base, deadline);
    } else {
      within_limit =
          walk_nodes(1, static_cast<uint32_t>(trie.nodes().size()), words, base, deadline);
    }
    engine_.set_work_deadline(UINT64_MAX);
    engine_.truncate(base);
    return within_limit;
  }

  static bool is_pure(const AutomatonState& st) {
    return !st.is_final && st.rule_edges_begin == st.rule_edges_end;
  }

  // Appends the successors of [from_begin, from_end) on `byte` to pool_
  // (deduplicated from out_begin on); returns whether all are pure.
  bool advance(const uint32_t* from_begin, const uint32_t* from_end, uint8_t byte,
               size_t out_begin) {
    const ByteGrammar& grammar = *data_->grammar;
    // The sources usually live in pool_ itself, which push_back may move
    // (a use after free the matcher fuzzer found): read them from a copy.
    sources_.assign(from_begin, from_end);
    bool all_pure = true;
    for (const uint32_t source : sources_) {
      const uint32_t next = grammar.next(source, byte);
      if (next == kNoState) continue;
      if (std::find(pool_.begin() + out_begin, pool_.end(), next) != pool_.end()) continue;
      pool_.push_back(next);
      all_pure &= is_pure(grammar.states()[next]);
    }
    return all_pure;
  }

  // Walks trie nodes [first, last), a run of whole subtrees whose parent
  // depth the engine or the fast path already holds.
  bool walk_nodes(uint32_t first, uint32_t last, uint32_t* words, size_t base, uint64_t deadline) {
    const TokenTrie& trie = data_->vocabulary.trie();
    const auto& nodes = trie.nodes();
    const auto& ids = trie.token_ids();
    for (uint32_t i = first; i < last;) {
      engine_.charge(1);
      if (engine_.work() > deadline) return false;
      const TokenTrie::Node& node = nodes[i];
      const size_t depth = node.depth;
      const bool has_children = node.subtree_end != i + 1;
      if (engine_.size() > base + depth - 1) engine_.truncate(base + depth - 1);
      if (fast_end_[depth - 1] > fast_begin_[depth - 1]) {
        // The parent is on the fast path.
        pool_.resize(fast_end_[depth - 1]);
        const size_t out = pool_.size();
        const bool all_pure = advance(pool_.data() + fast_begin_[depth - 1],
                                      pool_.data() + fast_end_[depth - 1], node.byte, out);
        if (pool_.size() == out) {
          i = node.subtree_end;
          continue;
        }
        for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t) set_bit(words, ids[t]);
        fast_begin_[depth] = fast_end_[depth] = static_cast<uint32_t>(out);
        if (has_children) {
          path_[depth] = node.byte;
          if (all_pure) {
            fast_end_[depth] = static_cast<uint32_t>(pool_.size());
          } else {
            // Materialize the fast-path bytes in the engine, then this byte
            // (the DFA proved them, so only a work bound can refuse one).
            for (size_t d = engine_.size() - base + 1; d <= depth; ++d)
              if (!engine_.push_byte(path_[d])) return false;
          }
        }
        ++i;
        continue;
      }
      if (!engine_.scan().test(node.byte)) {
        i = node.subtree_end;
        continue;
      }
      for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t) set_bit(words, ids[t]);
      if (has_children) {
        path_[depth] = node.byte;
        const size_t top = engine_.size();
        const EarleyItem* first_item = engine_.set_begin(top);
        const EarleyItem* last_item = engine_.set_end(top);
        pool_.resize(fast_begin_[depth - 1]);
        const size_t out = pool_.size();
        fast_begin_[depth] = fast_end_[depth] = static_cast<uint32_t>(out);
        bool all_pure = last_item - first_item <= kMaxFastItems;
        for (const EarleyItem* it = first_item; it != last_item && all_pure; ++it)
          all_pure &= advance(&it->state, &it->state + 1, node.byte, out);
        if (all_pure && pool_.size() > out) {
          fast_end_[depth] = static_cast<uint32_t>(pool_.size());
        } else {
          pool_.resize(out);
          // The scan bit proved the byte: only a work bound refuses it.
          if (!engine_.push_byte(node.byte)) return false;
        }
      }
      ++i;
    }
    return true;
  }

  // The context-free part of a walk from a set of pure DFA states: the
  // tokens the states accept on their own, and the frontier, the trie nodes
  // where some path reaches a state that may end its rule or call another
  // (their subtrees need the engine). `paths` holds each frontier node's
  // bytes from the root, node depth bytes each, back to back.
  struct PureWalk {
    std::vector<uint32_t> bits;
    std::vector<uint32_t> frontier;
    std::vector<uint8_t> paths;
  };

  // The cached PureWalk of the top set when its items are all pure, else
  // nullptr. A miss walks the trie once (charged to the work bound).
  // Sets pure_key_ to the sorted DFA states of the top set and returns true
  // when they are all pure (and few enough for the fast path).
  bool top_set_pure_key() {
    const auto& states = data_->grammar->states();
    const size_t top = engine_.size();
    const EarleyItem* first = engine_.set_begin(top);
    const EarleyItem* last = engine_.set_end(top);
    if (first == last || last - first > kMaxFastItems) return false;
    pure_key_.clear();
    for (const EarleyItem* it = first; it != last; ++it) {
      if (!is_pure(states[it->state])) return false;
      pure_key_.push_back(it->state);
    }
    std::sort(pure_key_.begin(), pure_key_.end());
    pure_key_.erase(std::unique(pure_key_.begin(), pure_key_.end()), pure_key_.end());
    return true;
  }

  const PureWalk* top_set_pure_walk(uint64_t deadline) {
    if (!top_set_pure_key()) return nullptr;
    if (auto it = pure_walks_.find(pure_key_); it != pure_walks_.end()) return &it->second;

    const TokenTrie& trie = data_->vocabulary.trie();
    const auto& nodes = trie.nodes();
    const auto& ids = trie.token_ids();
    PureWalk walk;
    walk.bits.assign(mask_words(data_->vocabulary.size()), 0);
    if (pure_key_.size() == 1) {
      if (!single_state_pure_walk(static_cast<uint32_t>(pure_key_[0]), deadline, walk))
        return nullptr;
      return remember(std::move(walk));
    }
    // pool_[fast_begin_[d], fast_end_[d]): the states after the path to depth d.
    pool_.assign(pure_key_.begin(), pure_key_.end());
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
      for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t)
        set_bit(walk.bits.data(), ids[t]);
      path_[depth] = node.byte;
      if (node.subtree_end != i + 1 && !all_pure) {
        walk.frontier.push_back(i);
        walk.paths.insert(walk.paths.end(), path_.begin() + 1, path_.begin() + depth + 1);
        i = node.subtree_end;
        continue;
      }
      fast_begin_[depth] = static_cast<uint32_t>(out);
      fast_end_[depth] = static_cast<uint32_t>(pool_.size());
      ++i;
    }
    pool_.clear();
    return remember(std::move(walk));
  }

  // The common case of top_set_pure_walk (one DFA state, e.g. a string
  // body) without the state-set bookkeeping: one state per depth.
  bool single_state_pure_walk(uint32_t start, uint64_t deadline, PureWalk& walk) {
    const ByteGrammar& grammar = *data_->grammar;
    const auto& states = grammar.states();
    const TokenTrie& trie = data_->vocabulary.trie();
    const auto& nodes = trie.nodes();
    const auto& ids = trie.token_ids();
    pool_.assign(trie.max_depth() + 2, kNoState);  // pool_[d]: the state after depth d
    pool_[0] = start;
    const uint32_t n = static_cast<uint32_t>(nodes.size());
    uint64_t visited = 0;
    for (uint32_t i = 1; i < n;) {
      ++visited;
      const TokenTrie::Node& node = nodes[i];
      const size_t depth = node.depth;
      const uint32_t next = grammar.next(pool_[depth - 1], node.byte);
      if (next == kNoState) {
        i = node.subtree_end;
        continue;
      }
      for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t)
        set_bit(walk.bits.data(), ids[t]);
      path_[depth] = node.byte;
      if (node.subtree_end != i + 1 && !is_pure(states[next])) {
        walk.frontier.push_back(i);
        walk.paths.insert(walk.paths.end(), path_.begin() + 1, path_.begin() + depth + 1);
        i = node.subtree_end;
        continue;
      }
      pool_[depth] = next;
      ++i;
    }
    pool_.clear();
    // Charged once: the walk is at most one pass over the trie.
    engine_.charge(visited);
    return engine_.work() <= deadline;
  }

  // Caches `walk` under pure_key_, within the cache budget.
  const PureWalk* remember(PureWalk&& walk) {
    const size_t bytes = walk.bits.size() * sizeof(uint32_t) + walk.frontier.size() * 4 +
                         walk.paths.size() + pure_key_.size() * 4;
    if (pure_walk_bytes_ + bytes > kMaskCacheBytes) {
      pure_walks_.clear();
      pure_walk_bytes_ = 0;
    }
    pure_walk_bytes_ += bytes;
    return &pure_walks_.emplace(pure_key_, std::move(walk)).first->second;
  }

  // Runs the engine over the frontier subtrees of `pure`, reusing the path
  // prefix shared with the previous frontier node.
  bool walk_frontier(const PureWalk& pure, uint32_t* words, size_t base, uint64_t deadline) {
    const auto& nodes = data_->vocabulary.trie().nodes();
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
      if (!walk_nodes(f + 1, node.subtree_end, words, base, deadline)) return false;
      engine_.truncate(base + depth);
      held = path;
      held_length = depth;
      path += depth;
    }
    return true;
  }

  // Structural id of Earley set k: its items with each origin replaced by the
  // origin set's id. Computed once per set and kept until it is popped.
  uint32_t structure_id(size_t k) {
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

  std::shared_ptr<const CompiledGrammarData> data_;
  EarleyEngine engine_;
  std::vector<size_t> token_ends_;  // engine size after each accepted token
  size_t terminated_at_ = kNotTerminated;
  std::vector<uint32_t> structure_ids_;
  // Walk scratch, kept to avoid reallocation.
  std::vector<uint32_t> fast_begin_, fast_end_, pool_;
  std::vector<uint8_t> path_;
  std::unordered_map<std::vector<uint64_t>, uint32_t, KeyHash> interned_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> mask_cache_;
  std::vector<uint32_t> sources_;  // advance()'s copy of its input states
  std::vector<uint64_t> pure_key_;
  std::unordered_map<std::vector<uint64_t>, PureWalk, KeyHash> pure_walks_;
  size_t pure_walk_bytes_ = 0;
  size_t hits_ = 0;
  size_t misses_ = 0;
};

}  // namespace internal

// --- CompiledGrammar ---------------------------------------------------------

Result<CompiledGrammar> CompiledGrammar::compile(const Grammar& grammar,
                                                 const Vocabulary& vocabulary,
                                                 const CompileOptions& options) {
  auto lowered = internal::ByteGrammar::lower(grammar, options.root, options.recognizer);
  if (!lowered.ok()) return lowered.status();
  auto data = std::make_shared<internal::CompiledGrammarData>(
      internal::CompiledGrammarData{std::move(lowered).value(), vocabulary, options.max_mask_work});
  return CompiledGrammar(std::move(data));
}

Result<CompiledGrammar> CompiledGrammar::from_gbnf(std::string_view gbnf,
                                                   const Vocabulary& vocabulary,
                                                   const CompileOptions& options) {
  GbnfOptions parse_options = options.gbnf;
  parse_options.root = options.root;
  auto grammar = parse_gbnf(gbnf, parse_options);
  if (!grammar.ok()) return grammar.status();
  return compile(*grammar, vocabulary, options);
}

const Vocabulary& CompiledGrammar::vocabulary() const noexcept {
  return data_->vocabulary;
}
size_t CompiledGrammar::mask_words() const noexcept {
  return grammask::mask_words(data_->vocabulary.size());
}

// --- Matcher -------------------------------------------------------------------

Matcher::Matcher(const CompiledGrammar& grammar)
    : state_(std::make_unique<internal::MatcherState>(grammar.data_)) {}
namespace {
// What the calls of a moved-from Matcher return.
Status moved_from() {
  return Status(ErrorCode::kInvalidState, "this Matcher was moved from and holds no state");
}
}  // namespace

Matcher::Matcher(const Matcher& other)
    : state_(other.state_ ? std::make_unique<internal::MatcherState>(*other.state_) : nullptr) {}
Matcher& Matcher::operator=(const Matcher& other) {
  if (this != &other)
    state_ = other.state_ ? std::make_unique<internal::MatcherState>(*other.state_) : nullptr;
  return *this;
}
Matcher::Matcher(Matcher&&) noexcept = default;
Matcher& Matcher::operator=(Matcher&&) noexcept = default;
Matcher::~Matcher() = default;

Status Matcher::fill_mask(uint32_t* words, size_t n_words) {
  if (!state_) return moved_from();
  // An empty vocabulary needs no words, so no buffer either.
  if (n_words == 0 && state_->data().vocabulary.size() == 0) return Status();
  return state_->fill_mask(words, n_words);
}
Status Matcher::accept_token(uint32_t token) {
  if (!state_) return moved_from();
  return state_->accept_token(token);
}
bool Matcher::is_token_allowed(uint32_t token) const {
  return state_ && state_->is_token_allowed(token);
}
Status Matcher::accept_bytes(std::string_view bytes) {
  if (!state_) return moved_from();
  return state_->accept_bytes(bytes);
}
Status Matcher::rollback(size_t n_tokens) {
  if (!state_) return moved_from();
  return state_->rollback(n_tokens);
}
void Matcher::reset() noexcept {
  if (state_) state_->reset();
}
size_t Matcher::num_tokens() const noexcept {
  return state_ ? state_->num_tokens() : 0;
}
bool Matcher::is_accepting() const noexcept {
  return state_ && state_->is_accepting();
}
bool Matcher::is_terminated() const noexcept {
  return state_ && state_->terminated();
}
std::string Matcher::forced_bytes(size_t max_bytes) const {
  return state_ ? state_->forced_bytes(max_bytes) : std::string();
}
size_t Matcher::mask_cache_hits() const noexcept {
  return state_ ? state_->hits() : 0;
}
size_t Matcher::mask_cache_misses() const noexcept {
  return state_ ? state_->misses() : 0;
}

struct ThreadPool::Impl {
  std::mutex batch_mutex;  // one batch at a time
  std::mutex mutex;
  std::condition_variable wake, done;
  std::vector<std::thread> workers;
  const std::function<void(size_t)>* task = nullptr;
  size_t n = 0;
  std::atomic<size_t> next{0};
  size_t generation = 0;
  size_t busy = 0;
  bool stopping = false;

  void run_items() {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) (*task)(i);
  }

  void worker_loop() {
    size_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping) return;
      seen = generation;
      ++busy;
      lock.unlock();
      run_items();
      lock.lock();
      if (--busy == 0) done.notify_all();
    }
  }
};

ThreadPool::ThreadPool(size_t threads) : impl_(std::make_unique<Impl>()) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  try {
    for (size_t t = 1; t < threads; ++t)
      impl_->workers.emplace_back([this] { impl_->worker_loop(); });
  } catch (const std::system_error&) {
    // The system refused a thread: run with the workers that did start (the
    // calling thread always works too), rather than end the process.
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  for (std::thread& t : impl_->workers) t.join();
}

size_t ThreadPool::size() const noexcept {
  return impl_->workers.size() + 1;
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t)>& task) {
  std::lock_guard<std::mutex> batch(impl_->batch_mutex);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->task = &task;
    impl_->n = n;
    impl_->next.store(0);
    ++impl_->generation;
  }
  impl_->wake.notify_all();
  impl_->run_items();
  std::unique_lock<std::mutex> lock(impl_->mutex);
  // Every item is claimed; wait for the workers still finishing theirs.
  impl_->done.wait(lock, [&] { return impl_->busy == 0; });
  impl_->task = nullptr;
}

Status fill_masks(Matcher* const* matchers, size_t n_matchers, uint32_t* words, size_t row_words,
                  ThreadPool& pool) {
  std::vector<Status> results(n_matchers);
  pool.parallel_for(n_matchers, [&](size_t i) {
    results[i] = matchers[i]->fill_mask(words + i * row_words, row_words);
  });
  for (const Status& s : results)
    if (!s.ok()) return s;
  return Status();
}

Status fill_masks(Matcher* const* matchers, size_t n_matchers, uint32_t* words, size_t row_words,
                  size_t threads) {
  if (n_matchers == 0) return Status();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  ThreadPool pool(std::min(threads, n_matchers));
  return fill_masks(matchers, n_matchers, words, row_words, pool);
}

}  // namespace grammask
