// The public Matcher: a forwarding shell over MatcherState, and batched
// fill_masks.
#include "grammask/matcher.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "grammask/mask_words.h"
#include "mask/matcher_state.h"
#include "vocab/token_trie.h"
#include "vocab/vocabulary_access.h"

namespace grammask {

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
std::vector<uint32_t> Matcher::forced_tokens(
    const std::function<std::vector<uint32_t>(std::string_view)>& tokenize,
    size_t max_bytes) const {
  if (!state_) return {};
  const std::string forced = state_->forced_bytes(max_bytes);
  if (forced.empty()) return {};
  const std::vector<uint32_t> tokens = tokenize(forced);
  const Vocabulary& vocabulary = state_->data().vocabulary;
  // Tried on this matcher's own state and rolled back: a copy would copy its
  // mask cache too.
  std::vector<uint32_t> out;
  size_t spelled = 0;
  for (uint32_t token : tokens) {
    const std::string_view bytes = vocabulary.token_bytes(token);
    if (bytes.empty() || forced.compare(spelled, bytes.size(), bytes) != 0) break;
    if (!state_->accept_token(token).ok()) break;
    spelled += bytes.size();
    out.push_back(token);
  }
  if (!out.empty()) (void)state_->rollback(out.size());
  if (!out.empty()) {
    const internal::TokenTrie& trie = internal::VocabularyAccess::trie(vocabulary);
    const uint32_t node = trie.find(vocabulary.token_bytes(out.back()));
    if (node != internal::TokenTrie::kNoNode && trie.nodes()[node].subtree_end > node + 1)
      out.pop_back();
  }
  return out;
}

size_t Matcher::accept_draft(const uint32_t* tokens, size_t n_tokens) {
  if (!state_ || tokens == nullptr) return 0;
  size_t accepted = 0;
  while (accepted < n_tokens && state_->accept_token(tokens[accepted]).ok()) ++accepted;
  return accepted;
}

Status Matcher::fill_draft_masks(const uint32_t* draft, size_t n_tokens, uint32_t* words,
                                 size_t row_words) {
  if (!state_) return moved_from();
  if (draft == nullptr && n_tokens > 0)
    return Status(ErrorCode::kInvalidArgument, "fill_draft_masks: the draft is null");
  const size_t needed = mask_words(state_->data().vocabulary.size());
  if (words == nullptr || row_words < needed) {
    return Status(ErrorCode::kInvalidArgument,
                  "fill_draft_masks: rows need " + std::to_string(needed) + " words");
  }
  size_t accepted = 0;
  Status status;
  for (size_t i = 0; i <= n_tokens; ++i) {
    uint32_t* row = words + i * row_words;
    if (i > accepted) {  // after a refused draft token
      std::fill(row, row + row_words, 0u);
      continue;
    }
    status = state_->fill_mask(row, row_words);
    if (!status.ok()) break;
    if (i < n_tokens && state_->accept_token(draft[i]).ok()) ++accepted;
  }
  if (accepted > 0) (void)state_->rollback(accepted);
  return status;
}

size_t Matcher::memory_bytes() const noexcept {
  return state_ ? state_->memory_bytes() : 0;
}
size_t Matcher::mask_cache_hits() const noexcept {
  return state_ ? state_->hits() : 0;
}
size_t Matcher::mask_cache_misses() const noexcept {
  return state_ ? state_->misses() : 0;
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
