// The public Matcher: a forwarding shell over MatcherState, and batched
// fill_masks.
#include "grammask/matcher.h"

#include <algorithm>
#include <thread>

#include "mask/matcher_state.h"

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
