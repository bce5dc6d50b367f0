#include "mask/matcher_state.h"

#include <algorithm>
#include <cstring>

#include "grammask/bitmask.h"

namespace grammask {
namespace internal {

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
  if (const PureWalk* pure = walker_.known_top_walk(engine_);
      pure != nullptr && !pure->has_frontier()) {
    ++hits_;
    pure->write_over(words, n_words);
    // Pure states of the root may end it.
    if (engine_.is_accepting())
      for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
    return Status();
  }
  // The masks and the ids that key them share half the matcher's budget:
  // past it, both start over.
  if (masks_.memory_bytes() + ids_.memory_bytes() > data_->max_matcher_cache_bytes / 2) {
    masks_.clear();
    ids_.clear();
  }
  const size_t top = engine_.size();
  const uint32_t top_id = ids_.context_id(engine_, top, 1);
  if (const CachedMask* bounded =
          masks_.find_by_shape(top_id, [&](const std::vector<uint8_t>& needs) {
            return ids_.shaped_context_id(engine_, top, needs);
          })) {
    ++hits_;
    bounded->write_over(words, n_words);
    if (engine_.is_accepting())
      for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
    return Status();
  }
  if (masks_.has_structure_entries()) {
    if (const CachedMask* cached = masks_.find_by_structure(ids_.structure_id(engine_, top))) {
      ++hits_;
      cached->write_over(words, n_words);
      return Status();
    }
  }
  ++misses_;
  std::fill(words, words + n_words, 0);
  engine_.start_read_log(top);
  // (Where no byte can come next, as before a token item, no text token
  // can either: the mask is the items' tokens alone, without a walk.)
  const bool within_limit = engine_.scan().empty() || walker_.walk(engine_, words);
  engine_.stop_read_log();
  if (!within_limit) {
    std::memset(words, 0, n_words * sizeof(uint32_t));
    return Status(ErrorCode::kLimitExceeded,
                  "mask computation exceeded the work limit (CompileOptions::max_mask_work = " +
                      std::to_string(data_->max_mask_work) + ")");
  }
  // The tokens that token items read depend on the top set's states alone,
  // which every id below keys: cached with the rest of the mask.
  if (!data_->token_items.empty()) data_->token_items.add_awaited(engine_, top, words);
  // A mask that read only the few sets nearest the top is kept by its
  // shaped context id, without the stop tokens (whether the root may end
  // here is not in that id), else by the whole stack's structure.
  const bool shaped =
      !engine_.read_log_overflowed() && ids_.item_needs(engine_, engine_.read_log(), top, needs_);
  if (shaped)
    masks_.remember_by_shape(top_id, needs_, ids_.shaped_context_id(engine_, top, needs_), words,
                             needed);
  if (engine_.is_accepting())
    for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
  if (!shaped) masks_.remember_by_structure(ids_.structure_id(engine_, top), words, needed);
  return Status();
}

bool MatcherState::is_token_allowed(uint32_t token) {
  const Vocabulary& vocab = data_->vocabulary;
  if (token >= vocab.size()) return false;
  if (!terminated() && token_item_reads(token)) return true;
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
  if (!terminated() && token_item_reads(token)) {
    if (!push_token_item(token)) {
      if (engine_.work_limit_hit()) return work_limit_status("token " + std::to_string(token));
      return Status(ErrorCode::kInvalidArgument,
                    "token " + std::to_string(token) + " is not allowed here");
    }
    token_ends_.push_back(engine_.size());
    return Status();
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
  // (Where a token item may come next, no byte is forced.)
  while (out.size() < max_bytes && !engine_.is_accepting() &&
         !engine_.awaits_token_item(engine_.size())) {
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

bool MatcherState::token_item_reads(uint32_t token) {
  if (data_->token_items.empty()) return false;
  data_->token_items.matches(token, token_matches_);
  return TokenItems::awaited_reads(engine_, engine_.size(), token_matches_);
}

// Pushes `token` where some awaited token item reads it (token_matches_
// holds its matches): the items' completions, together with the parses
// that read the token's bytes as text, if it spells text here.
bool MatcherState::push_token_item(uint32_t token) {
  const Vocabulary& vocab = data_->vocabulary;
  const size_t base = engine_.size();
  const std::string_view bytes = vocab.is_special(token) || vocab.is_stop(token)
                                     ? std::string_view()
                                     : vocab.token_bytes(token);
  if (!bytes.empty()) {
    bool text = true;
    for (size_t i = 0; i + 1 < bytes.size() && text; ++i)
      text = engine_.push_byte(static_cast<uint8_t>(bytes[i]));
    if (text && engine_.push_token(static_cast<uint8_t>(bytes.back()), base, token_matches_))
      return true;
    truncate(base);
    if (engine_.work_limit_hit()) return false;
  }
  return engine_.push_token(-1, base, token_matches_);
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
  ids_.truncate(length);
}

}  // namespace internal
}  // namespace grammask
