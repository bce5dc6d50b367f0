#include "vocab/text_slice.h"

#include <algorithm>

#include "base/bits.h"
#include "base/memory_bytes.h"
#include "base/sequence_index.h"
#include "base/utf8.h"
#include "grammask/mask_words.h"

namespace grammask::internal {

namespace {

// next_plain_text_phase as a table: one lookup per byte, no decoding.
struct PlainTextTable {
  uint8_t next[kPlainTextPhases + 1][256];  // (the last row: refused for good)
};

constexpr PlainTextTable make_plain_text_table() {
  constexpr uint8_t kRefused = kPlainTextPhases;
  PlainTextTable table{};
  for (auto& row : table.next)
    for (uint8_t& target : row) target = kRefused;
  auto set = [&](PlainTextPhase from, int lo, int hi, PlainTextPhase to) {
    for (int b = lo; b <= hi; ++b) table.next[from][b] = to;
  };
  for (int b = 0; b < 0x80; ++b)
    if (is_plain_text_char(static_cast<uint32_t>(b))) table.next[kBoundary][b] = kBoundary;
  set(kBoundary, 0xC2, 0xDF, kLast1);
  set(kBoundary, 0xE0, 0xE0, kAfterE0);
  set(kBoundary, 0xE1, 0xEC, kLast2);
  set(kBoundary, 0xED, 0xED, kAfterED);
  set(kBoundary, 0xEE, 0xEF, kLast2);
  set(kBoundary, 0xF0, 0xF0, kAfterF0);
  set(kBoundary, 0xF1, 0xF3, kLast3);
  set(kBoundary, 0xF4, 0xF4, kAfterF4);
  set(kLast1, 0x80, 0xBF, kBoundary);
  set(kLast2, 0x80, 0xBF, kLast1);
  set(kLast3, 0x80, 0xBF, kLast2);
  set(kAfterE0, 0xA0, 0xBF, kLast1);
  set(kAfterED, 0x80, 0x9F, kLast1);
  set(kAfterF0, 0x90, 0xBF, kLast2);
  set(kAfterF4, 0x80, 0x8F, kLast2);
  return table;
}

constexpr PlainTextTable kPlainText = make_plain_text_table();

}  // namespace

uint8_t next_plain_text_phase(PlainTextPhase phase, uint8_t byte) noexcept {
  return kPlainText.next[phase][byte];
}

size_t plain_text_chars(std::string_view bytes) noexcept {
  uint8_t phase = kBoundary;
  size_t chars = 0;
  for (const char c : bytes) {
    phase = kPlainText.next[phase][static_cast<uint8_t>(c)];
    chars += phase == kBoundary;
  }
  return phase == kBoundary ? chars : 0;
}

bool spells_plain_text(std::string_view bytes) noexcept {
  return plain_text_chars(bytes) != 0;
}

TextSlice TextSlice::build(const char* bytes, const uint32_t* offsets,
                           const std::vector<uint32_t>& member_words, size_t vocabulary_size) {
  TextSlice slice;
  const size_t words = mask_words(vocabulary_size);
  slice.words.assign(words, 0);
  slice.short_words.assign(words, 0);
  slice.tier_words.assign(kMaxTierChars, std::vector<uint32_t>(words, 0));
  std::vector<uint32_t> long_words(words, 0);
  // A word's bits are gathered in locals and stored once (stores through
  // the vectors per token would have the compiler reload their data).
  uint32_t* tiers[kMaxTierChars + 1] = {};  // tiers[n]: tier_words[n - 1]
  for (size_t n = 1; n <= kMaxTierChars; ++n) tiers[n] = slice.tier_words[n - 1].data();
  size_t max_length = 0;
  for (size_t word = 0; word < words; ++word) {
    uint32_t in_slice = 0, short_in_slice = 0, long_tokens = 0;
    for (uint32_t bits = member_words[word]; bits != 0; bits &= bits - 1) {
      const unsigned lane = lowest_set_bit(bits);
      const uint32_t id = static_cast<uint32_t>(32 * word + lane);
      const uint32_t bit = uint32_t{1} << lane;
      const std::string_view token(bytes + offsets[id], offsets[id + 1] - offsets[id]);
      if (token.size() > kShortLength) long_tokens |= bit;
      if (const size_t chars = plain_text_chars(token); chars != 0) {
        in_slice |= bit;
        max_length = std::max(max_length, token.size());
        if (chars <= kMaxTierChars) tiers[chars][word] |= bit;
        if (token.size() <= kShortLength) short_in_slice |= bit;
      }
    }
    slice.words[word] = in_slice;
    slice.short_words[word] = short_in_slice;
    long_words[word] = long_tokens;
  }
  slice.max_length = max_length;
  for (size_t n = 1; n < kMaxTierChars; ++n)
    for (size_t i = 0; i < slice.tier_words[n].size(); ++i)
      slice.tier_words[n][i] |= slice.tier_words[n - 1][i];
  // The other tries' members as bits too: no id lists to grow.
  std::vector<uint32_t> rest(words), short_rest(words), long_rest(words);
  for (size_t i = 0; i < words; ++i) {
    rest[i] = member_words[i] & ~slice.words[i];
    short_rest[i] = member_words[i] & ~slice.short_words[i];
    long_rest[i] = long_words[i] & ~slice.words[i];
  }
  slice.rest = TokenTrie::build(bytes, offsets, rest.data(), vocabulary_size);
  slice.short_rest = TokenTrie::build(bytes, offsets, short_rest.data(), vocabulary_size);
  slice.long_tokens = TokenTrie::build(bytes, offsets, long_words.data(), vocabulary_size);
  slice.long_rest = TokenTrie::build(bytes, offsets, long_rest.data(), vocabulary_size);
  return slice;
}

const AvoidingSlice* AvoidingSlices::get(const ByteSet& avoid,
                                         const std::vector<uint32_t>& slice_words,
                                         const TokenTrie& trie, const char* bytes,
                                         const uint32_t* offsets, size_t vocabulary_size) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& known : kept_)
    if (known->avoid == avoid) return known.get();
  if (std::find(declined_.begin(), declined_.end(), avoid) != declined_.end()) return nullptr;
  if (kept_.size() >= kMaxKept) return nullptr;
  // One pass over the trie, in its order: the tokens below a node whose
  // path holds an avoided byte hold it too, and are contiguous in
  // token_ids(), so a whole subtree is taken at once. (Reading each token's
  // bytes instead costs 2-3 ms for Llama 3's vocabulary.)
  bool avoided[256];
  for (int b = 0; b < 256; ++b) avoided[b] = avoid.test(static_cast<uint8_t>(b));
  const size_t words = slice_words.size();
  std::vector<uint32_t> holding(words, 0);  // tokens holding an avoided byte
  const TokenTrie::Nodes& nodes = trie.nodes();
  const std::vector<uint32_t>& ids = trie.token_ids();
  for (uint32_t i = 1; i < nodes.size();) {
    const TokenTrie::Node& node = nodes[i];
    if (!avoided[node.byte]) {
      ++i;
      continue;
    }
    for (uint32_t t = node.tokens_begin; t < nodes[node.subtree_end].tokens_begin; ++t)
      holding[ids[t] / 32] |= uint32_t{1} << (ids[t] % 32);
    i = node.subtree_end;
  }
  std::vector<uint32_t> rest(words, 0);
  for (const uint32_t id : ids) rest[id / 32] |= uint32_t{1} << (id % 32);
  std::vector<uint32_t> kept_words(words, 0);
  size_t rest_tokens = 0;
  for (size_t word = 0; word < words; ++word) {
    kept_words[word] = slice_words[word] & ~holding[word];
    rest[word] &= ~kept_words[word];
    rest_tokens += static_cast<size_t>(__builtin_popcount(rest[word]));
  }
  if (rest_tokens > trie.token_ids().size() / kMaxRestShare) {
    if (declined_.size() < kMaxDeclined) declined_.push_back(avoid);
    return nullptr;
  }
  auto made = std::make_unique<AvoidingSlice>();
  made->avoid = avoid;
  made->words = std::move(kept_words);
  made->rest = TokenTrie::build(bytes, offsets, rest.data(), vocabulary_size);
  kept_.push_back(std::move(made));
  return kept_.back().get();
}

size_t AvoidingSlices::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t bytes = heap_bytes(kept_) + heap_bytes(declined_);
  for (const auto& slice : kept_)
    bytes += sizeof(AvoidingSlice) + heap_bytes(slice->words) + slice->rest.memory_bytes();
  return bytes;
}

size_t TextSlice::memory_bytes() const {
  size_t bytes = heap_bytes(words) + heap_bytes(short_words) + heap_bytes(tier_words) +
                 rest.memory_bytes() + short_rest.memory_bytes() + long_tokens.memory_bytes() +
                 long_rest.memory_bytes() + sizeof(AvoidingSlices) + avoiding->memory_bytes();
  for (const auto& tier : tier_words) bytes += heap_bytes(tier);
  return bytes;
}

}  // namespace grammask::internal
