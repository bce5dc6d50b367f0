// EarleyEngine: recognition of a ByteGrammar's root rule one byte at a
// time, behind Recognizer and the mask engine (internal).
//
// The engine keeps a stack of Earley sets, set 0 for the empty input and
// one more per byte pushed. push_byte(b) succeeds when the bytes pushed so
// far followed by `b` are a prefix of a string that the root rule derives,
// unless a work bound stops it first; on failure nothing changes. pop() and
// truncate() undo pushes. is_accepting() says whether the bytes pushed are
// a whole string of the root rule; scan() holds the bytes that can be
// pushed next.
//
// Cost: a push is linear in the size of the set it builds and the
// completions that set causes, bounded by the grammar's
// max_work_per_byte() and by the caller's work deadline; unambiguous
// grammars cost linear time in the input. pop() and truncate() are O(1).
// An engine is used by one thread at a time; engines built on one
// ByteGrammar share it and may run on different threads. docs/lowering.md
// tells how the engine runs the automata.
#ifndef GRAMMASK_SRC_EARLEY_EARLEY_ENGINE_H_
#define GRAMMASK_SRC_EARLEY_EARLEY_ENGINE_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "automata/lowering.h"
#include "base/byte_set.h"
#include "base/memory_bytes.h"

namespace grammask::internal {

struct EarleyItem {
  uint32_t state;
  uint32_t origin;
};

// A set of 64-bit keys cleared in O(1) by bumping a stamp; used to
// deduplicate the items of a set under construction that outgrew the
// linear check (see EarleyEngine::kLinearDedupItems).
class StampedKeySet {
 public:
  StampedKeySet() : slots_(64) {}
  void clear() noexcept {
    count_ = 0;
    if (++stamp_ == 0) {
      for (Slot& s : slots_) s.stamp = 0;
      stamp_ = 1;
    }
  }
  // Returns true if `key` was not present (and inserts it).
  bool insert(uint64_t key) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    return insert_no_grow(key);
  }
  size_t memory_bytes() const noexcept { return heap_bytes(slots_); }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t stamp = 0;
  };
  static uint64_t mix(uint64_t k) noexcept {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  bool insert_no_grow(uint64_t key) noexcept {
    const size_t mask = slots_.size() - 1;
    for (size_t h = mix(key) & mask;; h = (h + 1) & mask) {
      Slot& s = slots_[h];
      if (s.stamp != stamp_) {
        s = {key, stamp_};
        ++count_;
        return true;
      }
      if (s.key == key) return false;
    }
  }
  void grow();

  std::vector<Slot> slots_;
  uint32_t stamp_ = 1;
  size_t count_ = 0;
};

// Leo's memo: (set generation, rule) -> topmost item. Entries are only a
// cache (recomputable): the table starts small, doubles while half full up
// to kMaxCapacity slots, and a full table is then cleared in O(1) by a
// stamp bump.
class LeoMemo {
 public:
  LeoMemo() : slots_(kInitialCapacity) {}
  size_t memory_bytes() const noexcept { return heap_bytes(slots_); }
  // Returns the memoized item, or nullptr.
  const EarleyItem* find(uint64_t key) const noexcept {
    const size_t mask = slots_.size() - 1;
    for (size_t h = slot_of(key);; h = (h + 1) & mask) {
      const Slot& s = slots_[h];
      if (s.stamp != stamp_) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  void put(uint64_t key, EarleyItem value) {
    if (count_ * 2 >= slots_.size()) {
      if (slots_.size() < kMaxCapacity) {
        grow();
      } else {
        if (++stamp_ == 0) {
          for (Slot& s : slots_) s.stamp = 0;
          stamp_ = 1;
        }
        count_ = 0;
      }
    }
    insert(key, value);
  }

 private:
  static constexpr size_t kInitialCapacity = 1u << 8;
  static constexpr size_t kMaxCapacity = 1u << 14;
  struct Slot {
    uint64_t key = 0;
    EarleyItem value{0, 0};
    uint32_t stamp = 0;
  };
  size_t slot_of(uint64_t key) const noexcept {
    key *= 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>(key >> shift_);
  }
  void insert(uint64_t key, EarleyItem value) noexcept {
    const size_t mask = slots_.size() - 1;
    for (size_t h = slot_of(key);; h = (h + 1) & mask) {
      Slot& s = slots_[h];
      if (s.stamp != stamp_) {
        s = {key, value, stamp_};
        ++count_;
        return;
      }
      if (s.key == key) {
        s.value = value;
        return;
      }
    }
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    --shift_;
    const uint32_t old_stamp = stamp_;
    stamp_ = 1;
    count_ = 0;
    for (const Slot& s : old)
      if (s.stamp == old_stamp) insert(s.key, s.value);
  }
  std::vector<Slot> slots_;
  unsigned shift_ = 64 - 8;  // 64 - log2(slots_.size())
  uint32_t stamp_ = 1;
  size_t count_ = 0;
};

class EarleyEngine {
 public:
  // Builds set 0 (the root rule's start, closed), with no work bound: its
  // size depends on the grammar alone, which lowering bounds.
  explicit EarleyEngine(std::shared_ptr<const ByteGrammar> grammar);

  // Pushes one byte if some item can scan it and the closure stays within the
  // work bounds; O(size of the new set). On false nothing changed, and
  // work_limit_hit() tells whether a bound (not the byte) was the reason.
  bool push_byte(uint8_t byte);
  bool work_limit_hit() const noexcept { return work_limit_hit_; }

  // Pushes the last set of a token that token items may read: one new set
  // holding the items that scan `last_byte` from the newest set (none when
  // last_byte < 0) and the completions of the token items awaited in set
  // `token_start` for which matches[item] is nonzero (indexed like
  // ByteGrammar::token_terminals()). The token's earlier bytes, if any, are
  // pushed before with push_byte. Fails like push_byte, also when the new
  // set would be empty. Precondition: token_start <= size().
  bool push_token(int last_byte, size_t token_start, const std::vector<uint8_t>& matches);
  // Whether some item of set k waits for a token item (the start state of
  // a token item's rule). O(items of the set).
  bool awaits_token_item(size_t k) const noexcept;

  // Work units spent so far (items added plus waiters examined), for callers
  // that bound a whole computation, such as a mask's trie walk: pushes fail
  // once work() would pass the deadline. charge() adds the caller's own work.
  uint64_t work() const noexcept { return work_; }
  void charge(uint64_t units) noexcept { work_ += units; }
  void set_work_deadline(uint64_t deadline) noexcept { work_deadline_ = deadline; }

  // Context tracking for walks that must not depend on what lies below set
  // `floor`: reached_below_floor() turns true once a push reads a set under
  // the floor (completing a rule started there, or a Leo item from there),
  // and stays true until cleared. The default floor, 0, never trips.
  void set_floor(size_t floor) noexcept { floor_ = floor; }
  bool reached_below_floor() const noexcept { return below_floor_; }
  void clear_below_floor() noexcept { below_floor_ = false; }
  // Read log, for caches keyed by how much of the stack a computation
  // depends on: while on, each set under `below` that a push reads (the
  // waiters of a rule started there, a Leo chain link there, or the origin
  // of a memoized Leo item, which stands for the chain below it) is listed
  // once in read_log(), up to kMaxLoggedReads sets; past that,
  // read_log_overflowed() (a computation that reads that much of the stack
  // is not worth keying by it).
  static constexpr size_t kMaxLoggedReads = 16;
  void start_read_log(size_t below) {
    log_below_ = below;
    read_log_.clear();
    read_log_overflowed_ = false;
  }
  void stop_read_log() noexcept { log_below_ = 0; }
  const std::vector<uint32_t>& read_log() const noexcept { return read_log_; }

  // Heap bytes reserved for the sets, their items and the engine's tables.
  size_t memory_bytes() const noexcept {
    return heap_bytes(items_) + heap_bytes(written_) + heap_bytes(sets_) + seen_.memory_bytes() +
           leo_memo_.memory_bytes() + heap_bytes(read_log_);
  }
  bool read_log_overflowed() const noexcept { return read_log_overflowed_; }
  // Pops the newest set. Precondition: size() > 0.
  void pop() noexcept;
  // Keeps the first `length` bytes pushed; no-op if length >= size().
  void truncate(size_t length) noexcept;
  // The number of bytes pushed.
  size_t size() const noexcept { return sets_.size() - 1; }

  // Whether the bytes pushed form a string of the root rule.
  bool is_accepting() const noexcept { return sets_.back().accepting; }
  // The bytes that some item of the newest set can read: push_byte() fails
  // at once for any other byte.
  const ByteSet& scan() const noexcept { return sets_.back().scan; }

  const ByteGrammar& grammar() const noexcept { return *grammar_; }
  const std::shared_ptr<const ByteGrammar>& shared_grammar() const noexcept { return grammar_; }

  // The members written by an item in an AnyOrder state (a bit per member,
  // ByteGrammar::any_order_step); 0 for any other item. Part of the item's
  // identity: two items that differ only here are two items.
  // O(log items in AnyOrder states).
  uint64_t members_written(const EarleyItem* it) const noexcept {
    if (!grammar_->states()[it->state].in_any_order) return 0;
    return written_at(static_cast<uint32_t>(it - items_.data()));
  }

  // The items of set k (0 <= k <= size()).
  const EarleyItem* set_begin(size_t k) const noexcept { return items_.data() + sets_[k].begin; }
  const EarleyItem* set_end(size_t k) const noexcept {
    return items_.data() + (k + 1 < sets_.size() ? sets_[k + 1].begin : items_.size());
  }

 private:
  // 48 bytes (the field order avoids padding): one per byte of input.
  struct SetInfo {
    ByteSet scan;
    uint64_t generation;  // unique per built set: keys the Leo memo
    uint32_t begin;       // first item in items_
    bool accepting;
  };
  // Initial capacities: outputs up to a few thousand bytes never move the
  // sets or items to a larger buffer (a copy that also first-touches every
  // page of the new one); only the pages actually reached are touched.
  static constexpr size_t kReservedSets = 4096;
  static constexpr size_t kReservedItems = 4 * kReservedSets;

  // Defined in recognizer.cpp, its only user, with the common case inline.
  inline void add(uint32_t state, uint32_t origin);
  void add_hashed(uint32_t state, uint32_t origin);
  // add() for a state in an AnyOrder rule (ByteGrammar's in_any_order),
  // which carries `written`.
  void add_any_order(uint32_t state, uint32_t origin, uint64_t written);
  uint64_t written_at(uint32_t index) const noexcept;
  // Advances the AnyOrder item at `index` (with origin `origin`) over rule
  // edge `e`, if the members it wrote leave the edge open.
  void advance_any_order(uint32_t index, uint32_t origin, uint32_t e);
  void drop_written_past(size_t items) noexcept {
    while (!written_.empty() && written_.back().item >= items) written_.pop_back();
  }
  // Starts deduplicating a new set (the newest in sets_).
  void begin_set_dedup() noexcept {
    hashing_ = false;
    num_completed_ = 0;
  }
  bool first_completion(uint32_t rule, uint32_t origin);
  void start_hashing();
  // (Inlined into push_byte, its hot caller: most sets hold an item or two,
  // so a call's overhead is a large part of closing one.)
  [[gnu::always_inline]] inline bool close_top_set(uint64_t work_bound);
  // `tail_called`: AutomatonState::rule_tail_called of the completed rule.
  void complete(uint32_t rule, uint32_t origin, bool tail_called);
  EarleyItem leo_item(uint32_t set, uint32_t rule);
  EarleyItem unique_tail_waiter(uint32_t set, uint32_t rule, bool* found) const;

  std::shared_ptr<const ByteGrammar> grammar_;
  std::vector<EarleyItem> items_;
  // The members written by each item in an AnyOrder state, by item index
  // (ascending): few items are, so the others carry nothing.
  struct Written {
    uint32_t item;
    uint64_t members;
  };
  std::vector<Written> written_;
  std::vector<SetInfo> sets_;
  // Deduplication of the set under construction. Most sets hold a few
  // items, so while it stays within kLinearDedupItems items and
  // kLinearDedupCompletions completions a linear scan of the set itself
  // (and of completed_) beats hashing and touches no other memory; past
  // either bound its keys move to seen_ (hashing_).
  static constexpr size_t kLinearDedupItems = 16;
  static constexpr size_t kLinearDedupCompletions = 8;
  StampedKeySet seen_;
  bool hashing_ = false;
  uint32_t num_completed_ = 0;
  struct Completion {
    uint32_t rule;
    uint32_t origin;
  };
  Completion completed_[kLinearDedupCompletions];
  LeoMemo leo_memo_;
  uint64_t next_generation_ = 0;
  uint64_t work_ = 0;
  uint64_t work_deadline_ = UINT64_MAX;
  bool work_limit_hit_ = false;
  size_t floor_ = 0;
  bool below_floor_ = false;
  size_t log_below_ = 0;
  std::vector<uint32_t> read_log_;
  bool read_log_overflowed_ = false;

  void note_read(uint32_t set) {
    if (set >= log_below_ || read_log_overflowed_) return;
    if (std::find(read_log_.begin(), read_log_.end(), set) != read_log_.end()) return;
    if (read_log_.size() == kMaxLoggedReads) {
      read_log_overflowed_ = true;
      return;
    }
    read_log_.push_back(set);
  }
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_EARLEY_EARLEY_ENGINE_H_
