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
constexpr uint64_t kShapedTag = uint64_t{3} << 61;
constexpr uint64_t kContextStandIn = uint64_t{UINT32_MAX} - 1;
// A set_id label that leaves its item out of the key.
constexpr uint64_t kSkipItem = UINT64_MAX;

}  // namespace

void StateIds::order_items(const EarleyEngine& engine, size_t k) {
  const auto& context_class = *context_class_;
  shape_order_.clear();
  for (const EarleyItem* it = engine.set_begin(k); it != engine.set_end(k); ++it)
    shape_order_.emplace_back((uint64_t{context_class[it->state]} << 1) | (it->origin == k), it);
  std::stable_sort(shape_order_.begin(), shape_order_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

bool StateIds::item_needs(const EarleyEngine& engine, const std::vector<uint32_t>& reads,
                          size_t top, std::vector<uint8_t>& needs) {
  order_items(engine, top);
  needs.assign(shape_order_.size(), 0);
  if (reads.empty()) return true;
  const uint32_t lowest = *std::min_element(reads.begin(), reads.end());
  constexpr uint8_t kTooDeep = kMaxContextDepth;
  if (++chain_stamp_ == 0) {  // (wrapped: forget every stamp)
    std::fill(chain_seen_.begin(), chain_seen_.end(), 0);
    std::fill(read_seen_.begin(), read_seen_.end(), 0);
    chain_stamp_ = 1;
  }
  if (chain_seen_.size() < top + 1) {
    chain_seen_.resize(top + 1, 0);
    read_seen_.resize(top + 1, 0);
    chain_length_.resize(top + 1, 0);
  }
  for (uint32_t set : reads) read_seen_[set] = chain_stamp_;
  // The sets reachable from the items' origins (not below the lowest read),
  // then each one's need, lowest first: its origins lie below it.
  chain_sets_.clear();
  auto reach = [&](uint32_t set) {
    if (set < lowest || chain_seen_[set] == chain_stamp_) return;
    chain_seen_[set] = chain_stamp_;
    chain_sets_.push_back(set);
  };
  for (const auto& [label, it] : shape_order_)
    if (it->origin != top) reach(it->origin);
  const auto& waiter_class = *waiter_class_;
  for (size_t i = 0; i < chain_sets_.size(); ++i) {
    const uint32_t set = chain_sets_[i];
    for (const EarleyItem* it = engine.set_begin(set); it != engine.set_end(set); ++it)
      if (waiter_class[it->state] != kNotWaiting && it->origin != set) reach(it->origin);
  }
  std::sort(chain_sets_.begin(), chain_sets_.end());
  for (uint32_t set : chain_sets_) {
    uint8_t need = read_seen_[set] == chain_stamp_ ? 1 : 0;
    for (const EarleyItem* it = engine.set_begin(set); it != engine.set_end(set); ++it) {
      if (waiter_class[it->state] == kNotWaiting || it->origin == set || it->origin < lowest)
        continue;
      const uint8_t below = chain_length_[it->origin];
      if (below != 0) need = std::max<uint8_t>(need, std::min<uint8_t>(below + 1, kTooDeep));
    }
    chain_length_[set] = need;
  }
  for (size_t i = 0; i < shape_order_.size(); ++i) {
    const EarleyItem* it = shape_order_[i].second;
    if (it->origin == top || it->origin < lowest) continue;
    needs[i] = chain_length_[it->origin];
    if (needs[i] >= kTooDeep) return false;
  }
  return true;
}

uint32_t StateIds::shaped_context_id(const EarleyEngine& engine, size_t k,
                                     const std::vector<uint8_t>& needs) {
  if (context_ids_.size() < k + 1) {
    ContextIds unknown;
    unknown.fill(kUnknownId);
    context_ids_.resize(k + 1, unknown);
  }
  order_items(engine, k);
  // (The origins first: their keys are built in context_key_ too.)
  for (size_t i = 0; i < shape_order_.size() && i < needs.size(); ++i)
    if (shape_order_[i].second->origin != k)
      waiter_id(engine, shape_order_[i].second->origin, needs[i]);
  const bool any_order = !engine.grammar().any_orders().empty();
  context_key_.clear();
  context_key_.push_back(kShapedTag);
  written_pairs_.clear();
  for (size_t i = 0; i < shape_order_.size(); ++i) {
    const EarleyItem* it = shape_order_[i].second;
    const size_t need = i < needs.size() ? needs[i] : 0;
    const uint64_t origin = it->origin == k ? kSelfOrigin : waiter_id(engine, it->origin, need);
    const uint64_t word = ((shape_order_[i].first >> 1) << 32) | origin;
    if (any_order && note_written(engine, it, word)) continue;
    context_key_.push_back(word);
  }
  std::sort(context_key_.begin() + 1, context_key_.end());
  context_key_.erase(std::unique(context_key_.begin() + 1, context_key_.end()), context_key_.end());
  if (!written_pairs_.empty()) append_written_pairs(written_pairs_, context_key_);
  return intern_context_key();
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
