#include "mask/state_ids.h"

#include <algorithm>

#include "mask/state_analysis.h"

namespace grammask {
namespace internal {
namespace {

constexpr uint32_t kUnknownId = UINT32_MAX;
// Marks an item predicted in the set itself in a key.
constexpr uint64_t kSelfOrigin = UINT32_MAX;
// A context id key's first word (its depth in the low bits), and the origin
// that stands for any set at depth 0.
constexpr uint64_t kContextTag = uint64_t{1} << 63;
constexpr uint64_t kWaiterTag = uint64_t{1} << 62;
constexpr uint64_t kContextStandIn = uint64_t{UINT32_MAX} - 1;
// A set_id label that leaves its item out of the key.
constexpr uint64_t kSkipItem = UINT64_MAX;

}  // namespace

size_t StateIds::context_depth(const EarleyEngine& engine, const std::vector<uint32_t>& reads,
                               size_t top) {
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
  const auto& waiter_class = *waiter_class_;
  for (const EarleyItem* it = engine.set_begin(top); it != engine.set_end(top); ++it)
    if (it->origin != top && it->origin >= lowest) reach(it->origin, 1);
  while (!chain_heap_.empty()) {
    std::pop_heap(chain_heap_.begin(), chain_heap_.end());
    const uint32_t set = chain_heap_.back();
    chain_heap_.pop_back();
    const size_t length = chain_length_[set];
    if (length >= kTooDeep) continue;  // (what lies below is too deep too)
    const uint8_t next = static_cast<uint8_t>(length + 1);
    for (const EarleyItem* it = engine.set_begin(set); it != engine.set_end(set); ++it)
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

uint32_t StateIds::context_id(const EarleyEngine& engine, size_t k, size_t d) {
  if (context_ids_.size() < k + 1) {
    ContextIds unknown;
    unknown.fill(kUnknownId);
    context_ids_.resize(k + 1, unknown);
  }
  const auto& context_class = *context_class_;
  return set_id(engine, k, d - 1, kContextTag | d,
                [&](uint32_t state) { return uint64_t{context_class[state]}; });
}

uint64_t StateIds::waiter_id(const EarleyEngine& engine, size_t s, size_t j) {
  if (j == 0) return kContextStandIn;
  uint32_t& memo = context_ids_[s][j - 1];
  if (memo == kUnknownId) {
    const auto& waiter_class = *waiter_class_;
    memo = set_id(engine, s, j - 1, kWaiterTag | j, [&](uint32_t state) {
      return waiter_class[state] == kNotWaiting ? kSkipItem : uint64_t{waiter_class[state]};
    });
  }
  return memo;
}

template <typename Label>
uint32_t StateIds::set_id(const EarleyEngine& engine, size_t s, size_t origin_depth, uint64_t tag,
                          const Label& label) {
  // (The origins first: their keys are built in context_key_ too.)
  for (const EarleyItem* it = engine.set_begin(s); it != engine.set_end(s); ++it)
    if (label(it->state) != kSkipItem && it->origin != s)
      waiter_id(engine, it->origin, origin_depth);
  const bool any_order = !engine.grammar().any_orders().empty();
  context_key_.clear();
  context_key_.push_back(tag);
  written_pairs_.clear();
  for (const EarleyItem* it = engine.set_begin(s); it != engine.set_end(s); ++it) {
    const uint64_t item_label = label(it->state);
    if (item_label == kSkipItem) continue;
    const uint64_t origin =
        it->origin == s ? kSelfOrigin : waiter_id(engine, it->origin, origin_depth);
    const uint64_t word = (item_label << 32) | origin;
    if (any_order && note_written(engine, it, word)) continue;
    context_key_.push_back(word);
  }
  std::sort(context_key_.begin() + 1, context_key_.end());
  context_key_.erase(std::unique(context_key_.begin() + 1, context_key_.end()), context_key_.end());
  if (!written_pairs_.empty()) append_written_pairs(written_pairs_, context_key_);
  return intern_context_key();
}

bool StateIds::note_written(const EarleyEngine& engine, const EarleyItem* it, uint64_t word) {
  if (!engine.grammar().states()[it->state].in_any_order) return false;
  written_pairs_.emplace_back(word, engine.members_written(it));
  return true;
}

uint32_t StateIds::intern_context_key() {
  context_words_.clear();
  for (uint64_t word : context_key_) {
    context_words_.push_back(static_cast<uint32_t>(word));
    context_words_.push_back(static_cast<uint32_t>(word >> 32));
  }
  return context_index_.intern(context_words_.data(), context_words_.size()).first;
}

uint32_t StateIds::structure_id(const EarleyEngine& engine, size_t k) {
  if (structure_ids_.size() < engine.size() + 1)
    structure_ids_.resize(engine.size() + 1, kUnknownId);
  if (structure_ids_[k] != kUnknownId) return structure_ids_[k];
  std::vector<size_t> todo{k};
  std::vector<uint64_t> key;
  const bool any_order = !engine.grammar().any_orders().empty();
  while (!todo.empty()) {
    const size_t set = todo.back();
    bool ready = true;
    for (const EarleyItem* it = engine.set_begin(set); it != engine.set_end(set); ++it) {
      if (it->origin != set && structure_ids_[it->origin] == kUnknownId) {
        todo.push_back(it->origin);
        ready = false;
      }
    }
    if (!ready) continue;
    todo.pop_back();
    if (structure_ids_[set] != kUnknownId) continue;
    key.clear();
    written_pairs_.clear();
    for (const EarleyItem* it = engine.set_begin(set); it != engine.set_end(set); ++it) {
      const uint64_t origin = it->origin == set ? kSelfOrigin : structure_ids_[it->origin];
      const uint64_t word = (uint64_t{it->state} << 32) | origin;
      if (any_order && note_written(engine, it, word)) continue;
      key.push_back(word);
    }
    std::sort(key.begin(), key.end());
    if (!written_pairs_.empty()) append_written_pairs(written_pairs_, key);
    auto [pos, inserted] = interned_.emplace(key, static_cast<uint32_t>(interned_.size()));
    if (inserted) interned_key_bytes_ += heap_bytes(pos->first);
    structure_ids_[set] = pos->second;
  }
  return structure_ids_[k];
}

}  // namespace internal
}  // namespace grammask
