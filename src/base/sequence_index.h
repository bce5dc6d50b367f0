// Sequences of 32-bit words interned by content (internal).
#ifndef GRAMMASK_SRC_BASE_SEQUENCE_INDEX_H_
#define GRAMMASK_SRC_BASE_SEQUENCE_INDEX_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace grammask::internal {

// Sequences numbered in the order they were first seen: the contents in one
// arena, the numbers in an open-addressing table (no allocation per
// sequence). Lowering interns NFA state sets with it, the class refinement
// the signatures of one round.
class SequenceIndex {
 public:
  SequenceIndex() = default;
  SequenceIndex(SequenceIndex&&) noexcept = default;
  SequenceIndex& operator=(SequenceIndex&&) noexcept = default;
  // (A Matcher's copy, its fork, copies its index of context keys.)
  SequenceIndex(const SequenceIndex& other) { *this = other; }
  SequenceIndex& operator=(const SequenceIndex& other) {
    if (this == &other) return *this;
    arena_.reset(new uint32_t[std::max<size_t>(1, other.arena_size_)]);
    std::copy(other.arena_.get(), other.arena_.get() + other.arena_size_, arena_.get());
    arena_size_ = arena_capacity_ = other.arena_size_;
    count_ = other.count_;
    slots_ = other.slots_;
    entry_capacity_ = std::max<size_t>(other.count_, slots_.size() / 2);
    begin_.reset(new uint32_t[entry_capacity_ + 1]);
    hashes_.reset(new uint64_t[std::max<size_t>(1, entry_capacity_)]);
    std::copy(other.begin_.get(), other.begin_.get() + count_ + 1, begin_.get());
    std::copy(other.hashes_.get(), other.hashes_.get() + count_, hashes_.get());
    return *this;
  }

  // Forgets every sequence, with room for `expected` of them.
  void reset(size_t expected) {
    arena_size_ = 0;
    count_ = 0;
    size_t table = 64;
    while (table < 2 * expected) table *= 2;
    slots_.assign(table, kEmpty);
    reserve_entries();
  }

  // Room for `words` words of sequences in all (left uninitialized).
  void reserve_words(size_t words) {
    if (words > arena_capacity_) grow_arena(words);
  }

  // The number of the sequence data[0, size), and whether it is new.
  std::pair<uint32_t, bool> intern(const uint32_t* data, size_t size) {
    return intern(data, size, hash(data, size));
  }
  // The same, given hash(data, size).
  std::pair<uint32_t, bool> intern(const uint32_t* data, size_t size, uint64_t h) {
    if (2 * (count() + 1) > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const uint32_t k = slots_[i];
      if (k == kEmpty) {
        // (hashes_ and begin_ have room: grow() keeps it ahead of the
        // table's load limit, so no push_back call per sequence.)
        const uint32_t k_new = count_;
        slots_[i] = k_new;
        hashes_[k_new] = h;
        append(data, size);
        begin_[k_new + 1] = static_cast<uint32_t>(arena_size_);
        count_ = k_new + 1;
        return {k_new, true};
      }
      if (hashes_[k] == h && this->size(k) == size && same_words(data, this->data(k), size))
        return {k, false};
    }
  }
  uint32_t count() const noexcept { return count_; }
  // Valid until the next intern().
  const uint32_t* data(uint32_t k) const noexcept { return arena_.get() + begin_[k]; }
  uint32_t size(uint32_t k) const noexcept { return begin_[k + 1] - begin_[k]; }

  // Two words per multiply; the last shift mixes high bits into the low
  // ones that pick the slot.
  static uint64_t hash(const uint32_t* data, size_t size) noexcept {
    constexpr uint64_t kOdd = 0x9E3779B97F4A7C15ULL;
    uint64_t h = size * kOdd;
    size_t i = 0;
    for (; i + 1 < size; i += 2) h = (h ^ two_words(data + i)) * kOdd;
    if (i < size) h = (h ^ data[i]) * kOdd;
    return h ^ (h >> 29);
  }

  // Heap bytes reserved: the arena, the entry arrays and the table.
  size_t memory_bytes() const noexcept {
    return arena_capacity_ * sizeof(uint32_t) + (entry_capacity_ + 1) * sizeof(uint32_t) +
           entry_capacity_ * sizeof(uint64_t) + slots_.capacity() * sizeof(uint32_t);
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;

  // data[0] | data[1] << 32, in one load where the machine is little-endian
  // (the compiler does not merge the two loads itself).
  static uint64_t two_words(const uint32_t* data) noexcept {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t words;
    std::memcpy(&words, data, sizeof words);
    return words;
#else
    return data[0] | uint64_t{data[1]} << 32;
#endif
  }

  // Lowering's sets are a few words each: a plain loop copies and compares
  // them, where vector::insert and memcmp cost a call as long as the work.
  // Longer ones (the refinement's signatures) go to memcpy and memcmp.
  static constexpr size_t kShort = 8;
  void append(const uint32_t* data, size_t size) {
    if (arena_size_ + size > arena_capacity_)
      grow_arena(std::max<size_t>({64, 2 * arena_capacity_, arena_size_ + size}));
    uint32_t* out = arena_.get() + arena_size_;
    if (size <= kShort) {
      for (size_t i = 0; i < size; ++i) out[i] = data[i];
    } else {
      std::memcpy(out, data, size * sizeof(uint32_t));
    }
    arena_size_ += size;
  }
  void grow_arena(size_t capacity) {
    std::unique_ptr<uint32_t[]> larger(new uint32_t[capacity]);
    std::copy(arena_.get(), arena_.get() + arena_size_, larger.get());
    arena_ = std::move(larger);
    arena_capacity_ = capacity;
  }
  static bool same_words(const uint32_t* a, const uint32_t* b, size_t size) noexcept {
    if (size > kShort) return std::memcmp(a, b, size * sizeof(uint32_t)) == 0;
    for (size_t i = 0; i < size; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }

  // Room in hashes_ and begin_ for as many sequences as the table holds
  // (half its slots).
  void reserve_entries() {
    const size_t needed = slots_.size() / 2;
    if (needed <= entry_capacity_) return;
    std::unique_ptr<uint64_t[]> hashes(new uint64_t[needed]);
    std::unique_ptr<uint32_t[]> begin(new uint32_t[needed + 1]);
    std::copy(hashes_.get(), hashes_.get() + count_, hashes.get());
    if (begin_ != nullptr) std::copy(begin_.get(), begin_.get() + count_ + 1, begin.get());
    hashes_ = std::move(hashes);
    begin_ = std::move(begin);
    entry_capacity_ = needed;
  }

  void grow() {
    slots_.assign(std::max<size_t>(64, 2 * slots_.size()), kEmpty);
    reserve_entries();
    const size_t mask = slots_.size() - 1;
    for (uint32_t k = 0; k < count(); ++k) {
      size_t i = hashes_[k] & mask;
      while (slots_[i] != kEmpty) i = (i + 1) & mask;
      slots_[i] = k;
    }
  }

  std::unique_ptr<uint32_t[]> arena_;  // (left uninitialized past arena_size_)
  size_t arena_size_ = 0, arena_capacity_ = 0;
  // Sequence k is arena_[begin_[k], begin_[k + 1]), hashed hashes_[k];
  // both have room for entry_capacity_ sequences.
  uint32_t count_ = 0;
  std::unique_ptr<uint32_t[]> begin_{new uint32_t[1]{0}};
  std::unique_ptr<uint64_t[]> hashes_;
  size_t entry_capacity_ = 0;
  std::vector<uint32_t> slots_;
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_BASE_SEQUENCE_INDEX_H_
