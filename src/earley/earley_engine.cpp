// The Earley engine: sets, items, completion with Leo's memo, roll-back.
#include "earley/earley_engine.h"

#include <algorithm>
#include <optional>

#include "automata/lowering.h"

namespace grammask {
namespace internal {

namespace {
constexpr uint64_t kCompletionTag = uint64_t{1} << 63;
constexpr EarleyItem kNoItem{kNoState, 0};

uint64_t item_key(uint32_t state, uint32_t origin) {
  return (uint64_t{state} << 32) | origin;
}
uint64_t completion_key(uint32_t rule, uint32_t origin) {
  return kCompletionTag | (uint64_t{rule} << 32) | origin;
}
}  // namespace

void StampedKeySet::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{});
  const uint32_t live = stamp_;
  count_ = 0;
  for (const Slot& s : old)
    if (s.stamp == live) insert_no_grow(s.key);
}

EarleyEngine::EarleyEngine(std::shared_ptr<const ByteGrammar> grammar)
    : grammar_(std::move(grammar)) {
  sets_.reserve(kReservedSets);
  items_.reserve(kReservedItems);
  sets_.push_back(SetInfo{{}, next_generation_++, 0, false});
  begin_set_dedup();
  add(grammar_->rules()[grammar_->root_rule()].start, 0);
  // The first set depends on the grammar alone, which lowering bounds.
  close_top_set(UINT64_MAX);
}

inline void EarleyEngine::add(uint32_t state, uint32_t origin) {
  ++work_;
  if (!hashing_) {
    const size_t begin = sets_.back().begin;
    const size_t end = items_.size();
    for (size_t i = begin; i < end; ++i)
      if (items_[i].state == state && items_[i].origin == origin) return;
    if (end - begin < kLinearDedupItems) {
      items_.push_back({state, origin});
      return;
    }
  }
  add_hashed(state, origin);
}

// add() for a set past the linear bound (or reaching it now).
void EarleyEngine::add_hashed(uint32_t state, uint32_t origin) {
  if (!hashing_) start_hashing();
  if (seen_.insert(item_key(state, origin))) items_.push_back({state, origin});
}

void EarleyEngine::add_any_order(uint32_t state, uint32_t origin, uint64_t written) {
  ++work_;
  const uint32_t begin = sets_.back().begin;
  for (auto it = written_.rbegin(); it != written_.rend() && it->item >= begin; ++it) {
    const EarleyItem& known = items_[it->item];
    if (it->members == written && known.state == state && known.origin == origin) return;
  }
  written_.push_back({static_cast<uint32_t>(items_.size()), written});
  items_.push_back({state, origin});
}

uint64_t EarleyEngine::written_at(uint32_t index) const noexcept {
  auto it = std::lower_bound(written_.begin(), written_.end(), index,
                             [](const Written& w, uint32_t i) { return w.item < i; });
  return it != written_.end() && it->item == index ? it->members : 0;
}

void EarleyEngine::advance_any_order(uint32_t index, uint32_t origin, uint32_t e) {
  const RuleEdge edge = grammar_->rule_edges()[e];
  const std::optional<uint64_t> next =
      grammar_->any_order_step(items_[index].state, edge, written_at(index));
  if (next) add_any_order(edge.target, origin, *next);
}

// True the first time the set under construction completes `rule` started
// at `origin`.
bool EarleyEngine::first_completion(uint32_t rule, uint32_t origin) {
  if (!hashing_) {
    for (uint32_t i = 0; i < num_completed_; ++i)
      if (completed_[i].rule == rule && completed_[i].origin == origin) return false;
    if (num_completed_ < kLinearDedupCompletions) {
      completed_[num_completed_++] = {rule, origin};
      return true;
    }
    start_hashing();
  }
  return seen_.insert(completion_key(rule, origin));
}

// Moves the keys of the set under construction into seen_.
void EarleyEngine::start_hashing() {
  hashing_ = true;
  seen_.clear();
  for (size_t i = sets_.back().begin; i < items_.size(); ++i)
    seen_.insert(item_key(items_[i].state, items_[i].origin));
  for (uint32_t i = 0; i < num_completed_; ++i)
    seen_.insert(completion_key(completed_[i].rule, completed_[i].origin));
}

bool EarleyEngine::push_byte(uint8_t byte) {
  const SetInfo& top = sets_.back();
  work_limit_hit_ = false;
  if (!top.scan.test(byte)) return false;
  const uint64_t per_byte = grammar_->max_work_per_byte();
  const uint64_t bound =
      work_ + per_byte < work_ ? work_deadline_ : std::min(work_ + per_byte, work_deadline_);
  const size_t from = top.begin;
  const size_t to = items_.size();
  sets_.push_back(SetInfo{{}, next_generation_++, static_cast<uint32_t>(to), false});
  begin_set_dedup();
  for (size_t i = from; i < to; ++i) {
    const uint32_t target = grammar_->next(items_[i].state, byte);
    if (target != kNoState) add(target, items_[i].origin);
  }
  if (!close_top_set(bound)) {
    pop();
    work_limit_hit_ = true;
    return false;
  }
  return true;
}

bool EarleyEngine::push_token(int last_byte, size_t token_start,
                              const std::vector<uint8_t>& matches) {
  work_limit_hit_ = false;
  const uint64_t per_byte = grammar_->max_work_per_byte();
  const uint64_t bound =
      work_ + per_byte < work_ ? work_deadline_ : std::min(work_ + per_byte, work_deadline_);
  const size_t from = sets_.back().begin;
  const size_t to = items_.size();
  const bool scans = last_byte >= 0 && sets_.back().scan.test(static_cast<uint8_t>(last_byte));
  sets_.push_back(SetInfo{{}, next_generation_++, static_cast<uint32_t>(to), false});
  begin_set_dedup();
  if (scans) {
    for (size_t i = from; i < to; ++i) {
      const uint32_t target = grammar_->next(items_[i].state, static_cast<uint8_t>(last_byte));
      if (target != kNoState) add(target, items_[i].origin);
    }
  }
  // The matching items' rules all start at token_start and end here: one
  // pass over the waiters there advances every edge on one of them (a
  // complete() per rule would read the waiters once per matching item,
  // and a negated item may match along with thousands of others).
  const auto& states = grammar_->states();
  const auto& rules = grammar_->rules();
  const auto& edges = grammar_->rule_edges();
  if (token_start < floor_) below_floor_ = true;
  note_read(static_cast<uint32_t>(token_start));
  // (Index-based: add() may reallocate items_.)
  const size_t end = set_end(token_start) - items_.data();
  for (size_t i = sets_[token_start].begin; i < end; ++i) {
    const EarleyItem waiter = items_[i];
    const AutomatonState& st = states[waiter.state];
    work_ += st.rule_edges_end - st.rule_edges_begin;
    for (uint32_t e = st.rule_edges_begin; e < st.rule_edges_end; ++e) {
      const uint32_t terminal = rules[edges[e].rule].token_terminal;
      if (terminal != kNoTokenTerminal && matches[terminal]) add(edges[e].target, waiter.origin);
    }
  }
  if (items_.size() == to) {
    sets_.pop_back();
    return false;
  }
  if (!close_top_set(bound)) {
    pop();
    work_limit_hit_ = true;
    return false;
  }
  return true;
}

bool EarleyEngine::awaits_token_item(size_t k) const noexcept {
  if (grammar_->token_terminals().empty()) return false;
  for (const EarleyItem* it = set_begin(k); it != set_end(k); ++it)
    if (grammar_->is_token_state(it->state)) return true;
  return false;
}

// Closes the newest set; false if the work passed `work_bound` first (the set
// is then incomplete and must be popped).
inline bool EarleyEngine::close_top_set(uint64_t work_bound) {
  const uint32_t k = static_cast<uint32_t>(sets_.size() - 1);
  const auto& states = grammar_->states();
  const auto& rules = grammar_->rules();
  const auto& edges = grammar_->rule_edges();
  const uint32_t root = grammar_->root_rule();
  ByteSet scan;
  bool accepting = false;
  for (size_t i = sets_[k].begin; i < items_.size(); ++i) {
    if (work_ > work_bound) return false;
    const EarleyItem item = items_[i];
    const AutomatonState& st = states[item.state];
    scan |= st.scan;
    if (st.in_any_order) [[unlikely]] {
      // Its members decide what it may do (it reads no byte itself). The
      // member and separator rules are never AnyOrder rules themselves.
      const uint64_t written = written_at(static_cast<uint32_t>(i));
      if (item.origin < k && grammar_->any_order_may_end(item.state, written))
        complete(st.rule, item.origin, st.rule_tail_called);
      for (uint32_t e = st.rule_edges_begin; e < st.rule_edges_end; ++e) {
        const RuleEdge edge = edges[e];
        const std::optional<uint64_t> next = grammar_->any_order_step(item.state, edge, written);
        if (!next) continue;
        add(rules[edge.rule].start, k);
        if (rules[edge.rule].nullable) add_any_order(edge.target, item.origin, *next);
      }
      continue;
    }
    if (st.is_final) {
      if (st.rule == root && item.origin == 0) accepting = true;
      // Completions of empty derivations (origin k) happen at prediction.
      if (item.origin < k) complete(st.rule, item.origin, st.rule_tail_called);
    }
    for (uint32_t e = st.rule_edges_begin; e < st.rule_edges_end; ++e) {
      const RuleEdge edge = edges[e];
      const LoweredRule& callee = rules[edge.rule];
      if (callee.any_order == kNoAnyOrder) {
        add(callee.start, k);
      } else {
        add_any_order(callee.start, k, 0);
      }
      if (callee.nullable) add(edge.target, item.origin);
    }
  }
  sets_[k].scan = scan;
  sets_[k].accepting = accepting;
  return true;
}

void EarleyEngine::complete(uint32_t rule, uint32_t origin, bool tail_called) {
  if (!first_completion(rule, origin)) return;
  if (origin < floor_) below_floor_ = true;
  note_read(origin);
  // (Without a tail call site the memo would only ever hold kNoItem for it.)
  const EarleyItem topmost = tail_called ? leo_item(origin, rule) : kNoItem;
  if (topmost.state != kNoState) {
    if (topmost.origin < floor_) below_floor_ = true;
    add(topmost.state, topmost.origin);
    return;
  }
  const auto& states = grammar_->states();
  const auto& edges = grammar_->rule_edges();
  // Index-based: add() may reallocate items_.
  const size_t end = set_end(origin) - items_.data();
  work_ += end - sets_[origin].begin;
  const uint64_t rule_bit = uint64_t{1} << (rule & 63);
  for (size_t i = sets_[origin].begin; i < end; ++i) {
    const EarleyItem waiter = items_[i];
    const AutomatonState& st = states[waiter.state];
    if (!(st.waits_on & rule_bit)) continue;
    for (uint32_t e = st.rule_edges_begin; e < st.rule_edges_end; ++e) {
      if (edges[e].rule != rule) continue;
      if (st.in_any_order) [[unlikely]] {
        advance_any_order(static_cast<uint32_t>(i), waiter.origin, e);
      } else {
        add(edges[e].target, waiter.origin);
      }
    }
  }
}

// The single item of `set` waiting on `rule`, advanced over it, when there is
// exactly one and the advance lands on a tail state.
EarleyItem EarleyEngine::unique_tail_waiter(uint32_t set, uint32_t rule, bool* found) const {
  const auto& states = grammar_->states();
  const auto& edges = grammar_->rule_edges();
  EarleyItem candidate = kNoItem;
  int count = 0;
  const uint64_t rule_bit = uint64_t{1} << (rule & 63);
  for (const EarleyItem* it = set_begin(set); it != set_end(set) && count < 2; ++it) {
    const AutomatonState& st = states[it->state];
    if (!(st.waits_on & rule_bit)) continue;
    if (st.in_any_order) {  // (its members decide: no Leo item through it)
      count = 2;
      break;
    }
    for (uint32_t e = st.rule_edges_begin; e < st.rule_edges_end; ++e)
      if (edges[e].rule == rule) {
        ++count;
        candidate = {edges[e].target, it->origin};
      }
  }
  *found = count == 1 && states[candidate.state].is_tail;
  return candidate;
}

// Leo's topmost item for completing `rule` started at `set`: the completed
// item at the top of a deterministic chain of tail positions, or kNoItem.
EarleyItem EarleyEngine::leo_item(uint32_t set, uint32_t rule) {
  const auto& states = grammar_->states();
  const uint64_t num_rules = grammar_->rules().size();
  auto key_of = [&](uint32_t s, uint32_t r) { return sets_[s].generation * num_rules + r; };

  struct Link {
    uint64_t key;
    EarleyItem candidate;
  };
  std::vector<Link> chain;
  EarleyItem deeper = kNoItem;
  uint32_t s = set, r = rule;
  for (;;) {
    if (s < floor_) below_floor_ = true;
    note_read(s);
    const uint64_t key = key_of(s, r);
    if (const EarleyItem* memo = leo_memo_.find(key)) {
      deeper = *memo;
      if (deeper.state != kNoState) note_read(deeper.origin);
      break;
    }
    bool found = false;
    const EarleyItem candidate = unique_tail_waiter(s, r, &found);
    work_ += set_end(s) - set_begin(s);
    if (!found) {
      leo_memo_.put(key, kNoItem);
      break;
    }
    for (const Link& l : chain)
      if (l.key == key_of(candidate.origin, states[candidate.state].rule)) return kNoItem;  // cycle
    chain.push_back({key, candidate});
    // The accepting item must stay visible, so the chain stops at it.
    if (states[candidate.state].rule == grammar_->root_rule() && candidate.origin == 0) break;
    s = candidate.origin;
    r = states[candidate.state].rule;
  }
  for (size_t j = chain.size(); j-- > 0;) {
    const EarleyItem value = deeper.state != kNoState ? deeper : chain[j].candidate;
    leo_memo_.put(chain[j].key, value);
    deeper = value;
  }
  return deeper;
}

void EarleyEngine::pop() noexcept {
  items_.resize(sets_.back().begin);
  drop_written_past(items_.size());
  sets_.pop_back();
}

void EarleyEngine::truncate(size_t length) noexcept {
  if (length >= size()) return;
  items_.resize(sets_[length + 1].begin);
  drop_written_past(items_.size());
  sets_.resize(length + 1);
}

}  // namespace internal
}  // namespace grammask
