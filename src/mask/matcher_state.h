// MatcherState (internal): everything one Matcher owns: the Earley engine
// over its output and its accepted tokens, the set ids and mask cache that
// answer a parser state seen before, and the trie walker that computes a
// mask otherwise. Not thread-safe; copying it forks the sequence.
#ifndef GRAMMASK_SRC_MASK_MATCHER_STATE_H_
#define GRAMMASK_SRC_MASK_MATCHER_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "earley/earley_engine.h"
#include "grammask/status.h"
#include "mask/compiled_grammar.h"
#include "mask/mask_cache.h"
#include "mask/state_ids.h"
#include "mask/trie_walker.h"

namespace grammask {
namespace internal {

// The state behind one Matcher (matcher.h).
class MatcherState {
 public:
  explicit MatcherState(std::shared_ptr<const CompiledGrammarData> data)
      : data_(std::move(data)),
        engine_(data_->grammar),
        ids_(data_->waiter_class, data_->context_class),
        masks_(data_->max_matcher_cache_bytes / 2),
        walker_(*data_) {}

  const CompiledGrammarData& data() const { return *data_; }
  const std::shared_ptr<const CompiledGrammarData>& shared_data() const { return data_; }

  // The operations of Matcher (matcher.h), with its contracts, except that
  // fill_mask(nullptr, 0) fails even with an empty vocabulary.
  Status fill_mask(uint32_t* words, size_t n_words);
  bool is_token_allowed(uint32_t token);
  Status accept_token(uint32_t token);
  Status accept_bytes(std::string_view bytes);
  Status rollback(size_t n);
  void reset();
  size_t num_tokens() const { return token_ends_.size(); }
  bool is_accepting() const { return engine_.is_accepting(); }
  bool terminated() const { return terminated_at_ != kNotTerminated; }
  std::string forced_bytes(size_t max_bytes);

  // Heap bytes it holds (Matcher::memory_bytes).
  size_t memory_bytes() const noexcept {
    return sizeof(MatcherState) + engine_.memory_bytes() + heap_bytes(token_ends_) +
           ids_.memory_bytes() + masks_.memory_bytes() + walker_.memory_bytes() +
           heap_bytes(token_matches_);
  }

  // Masks answered from a cache, and masks computed.
  size_t hits() const { return hits_; }
  size_t misses() const { return misses_; }

 private:
  static constexpr size_t kNotTerminated = SIZE_MAX;

  inline Status work_limit_status(const std::string& what) const;

  inline bool push_all(std::string_view bytes);
  // Whether a token item awaited here reads `token` (fills token_matches_).
  bool token_item_reads(uint32_t token);
  bool push_token_item(uint32_t token);

  inline void truncate(size_t length);

  std::shared_ptr<const CompiledGrammarData> data_;
  EarleyEngine engine_;
  std::vector<size_t> token_ends_;  // engine size after each accepted token
  size_t terminated_at_ = kNotTerminated;
  StateIds ids_;
  MaskCache masks_;
  TrieWalker walker_;
  size_t hits_ = 0;
  size_t misses_ = 0;
  std::vector<uint8_t> token_matches_;  // (scratch of token_item_reads)
  std::vector<uint8_t> needs_;          // (scratch of fill_mask)
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_MATCHER_STATE_H_
