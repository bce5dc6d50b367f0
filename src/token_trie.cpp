#include "token_trie.h"

#include <algorithm>
#include <bitset>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "bitmask_internal.h"

namespace grammask {
namespace internal {

TokenTrie::TokenTrie() {
  nodes_.push_back(Node{1, 0, 0, 0});
  nodes_.push_back(Node{1, 0, 0, 0});  // the end marker
}

namespace {

// A token to sort: 8 of its bytes from a given offset on (the bytes before
// it are shared, or sorted already) as a big-endian zero-padded integer,
// then its length and id. Comparing (key, length_and_id) as integers orders
// tokens by their bytes, then equal tokens by id, except two tokens that
// both run past the key and agree on it: sort_items compares their bytes.
struct SortItem {
  uint64_t key;
  uint64_t length_and_id;  // length << 32 | id

  uint32_t id() const { return static_cast<uint32_t>(length_and_id); }
  size_t length() const { return static_cast<size_t>(length_and_id >> 32); }
};

constexpr size_t kKeyBytes = 8;

bool operator<(const SortItem& a, const SortItem& b) {
  return a.key < b.key || (a.key == b.key && a.length_and_id < b.length_and_id);
}

// Up to 8 bytes from p (length of them count) as a big-endian integer,
// zero-padded. Reads a whole word when the buffer allows it.
uint64_t pack_big_endian(const char* p, size_t length, const char* readable_end) {
  if (length > 8) length = 8;
#if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (readable_end - p >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    // The first `length` bytes, by a mask from a table: no branch for
    // length 0, whose shift by 64 would be undefined.
    static constexpr uint64_t kKeep[9] = {
        0,
        0xFF00000000000000u,
        0xFFFF000000000000u,
        0xFFFFFF0000000000u,
        0xFFFFFFFF00000000u,
        0xFFFFFFFFFF000000u,
        0xFFFFFFFFFFFF0000u,
        0xFFFFFFFFFFFFFF00u,
        0xFFFFFFFFFFFFFFFFu,
    };
    return __builtin_bswap64(word) & kKeep[length];
  }
#else
  (void)readable_end;
#endif
  uint64_t value = 0;
  for (size_t i = 0; i < length; ++i) {
    value |= uint64_t{static_cast<uint8_t>(p[i])} << (56 - 8 * i);
  }
  return value;
}

size_t leading_zero_bits(uint64_t x) {  // precondition: x != 0
#if defined(__GNUC__) || defined(__clang__)
  return static_cast<size_t>(__builtin_clzll(x));
#else
  size_t n = 0;
  for (; !(x >> 63); x <<= 1) ++n;
  return n;
#endif
}

size_t trailing_zero_bits(uint64_t x) {  // precondition: x != 0
#if defined(__GNUC__) || defined(__clang__)
  return static_cast<size_t>(__builtin_ctzll(x));
#else
  size_t n = 0;
  for (; !(x & 1); x >>= 1) ++n;
  return n;
#endif
}

// Ranges this small sort by insertion: cheaper than a radix pass.
constexpr size_t kSmallRange = 32;

void insertion_sort(SortItem* items, size_t count) {
  for (size_t i = 1; i < count; ++i) {
    const SortItem moving = items[i];
    size_t at = i;
    for (; at > 0 && moving < items[at - 1]; --at) items[at] = items[at - 1];
    items[at] = moving;
  }
}

// Sorts items[0, count) by (key, length_and_id): their keys agree on the
// bytes before key byte `digit` (0 is the most significant). An MSD radix
// sort, a key byte per level, through `scratch` (room for count items);
// small ranges go to insertion sort. `counts` holds 256 zeros, and does
// again on return.
void radix_sort(SortItem* items, size_t count, unsigned digit, SortItem* scratch,
                uint32_t* counts) {
  for (;;) {
    if (count <= kSmallRange) {
      insertion_sort(items, count);
      return;
    }
    if (digit == kKeyBytes) {  // equal keys: by length, then id
      std::sort(items, items + count, [](const SortItem& a, const SortItem& b) {
        return a.length_and_id < b.length_and_id;
      });
      return;
    }
    const unsigned shift = 56 - 8 * digit;
    // The byte values seen, as a bitmap: the bins to visit are a few dozen
    // of 256, and small ranges would spend more on the empty ones.
    uint64_t seen[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < count; ++i) {
      const unsigned byte = static_cast<unsigned>(items[i].key >> shift) & 0xFF;
      ++counts[byte];
      seen[byte / 64] |= uint64_t{1} << (byte % 64);
    }
    // bin_end[b]: where bin b's next item goes, then where the bin ends.
    uint32_t bin_end[256];
    uint8_t bins[256];  // the non-empty bins, ascending
    size_t bin_count = 0;
    uint32_t at = 0;
    for (unsigned word = 0; word < 4; ++word) {
      for (uint64_t bits = seen[word]; bits != 0; bits &= bits - 1) {
        const unsigned byte = 64 * word + static_cast<unsigned>(trailing_zero_bits(bits));
        bins[bin_count++] = static_cast<uint8_t>(byte);
        bin_end[byte] = at;
        at += counts[byte];
        counts[byte] = 0;
      }
    }
    if (bin_count == 1) {  // one byte value: nothing to move, on to the next
      ++digit;
      continue;
    }
    for (size_t i = 0; i < count; ++i) {
      const unsigned byte = static_cast<unsigned>(items[i].key >> shift) & 0xFF;
      scratch[bin_end[byte]++] = items[i];
    }
    std::memcpy(items, scratch, count * sizeof(SortItem));
    uint32_t bin_begin = 0;
    for (size_t i = 0; i < bin_count; ++i) {
      const uint32_t bin_size = bin_end[bins[i]] - bin_begin;
      if (bin_size > 1) radix_sort(items + bin_begin, bin_size, digit + 1, scratch, counts);
      bin_begin += bin_size;
    }
    return;
  }
}

// Builds the flat trie from tokens fed in sorted order, a sorted run at a
// time: each token opens the nodes past its common prefix with the previous
// one, and nodes deeper than that prefix are closed (their subtree_end set).
class TrieAssembler {
 public:
  TrieAssembler(const char* bytes, const uint32_t* offsets, size_t tokens, size_t longest,
                std::vector<TokenTrie::Node, UninitializedAllocator<TokenTrie::Node>>& nodes,
                std::vector<uint32_t>& token_ids)
      : bytes_(bytes), offsets_(offsets), nodes_(nodes), token_ids_(token_ids) {
    // Real vocabularies need about two nodes per token; reserving more only
    // costs address space, which is never touched.
    nodes_.reserve(tokens * 3 + 2);  // (the root and the end marker too)
    token_ids_.resize(tokens);       // written by index: the ids may be staged there first
    path_.assign(longest + 1, 0);    // path_[d]: the open node at depth d (the root at 0)
    nodes_data_ = nodes_.data();
  }

  // Adds items[0, count), sorted, whose keys hold their bytes from
  // key_offset on (they share the bytes before it, up to their lengths).
  void add(const SortItem* items, size_t count, size_t key_offset) {
    // The arrays through locals: the node bytes are stored as uint8_t,
    // which may alias anything, so members would be reloaded after every
    // node.
    uint32_t* const path = path_.data();
    uint32_t* const token_ids = token_ids_.data();
    size_t node_count = node_count_;
    size_t token_count = token_count_;
    size_t open_depth = open_depth_;
    const char* previous = previous_;
    TokenTrie::Node* nodes = nodes_data_;
    for (size_t i = 0; i < count; ++i) {
      const size_t length = items[i].length();
      const char* const token = bytes_ + offsets_[items[i].id()];
      const size_t limit = std::min(open_depth, length);  // (0 for the first token)
      size_t common;
      if (i == 0) {  // after another run: the bytes tell
        common = 0;
        while (common < limit && previous[common] == token[common]) ++common;
      } else if (const uint64_t difference = items[i].key ^ items[i - 1].key; difference != 0) {
        common = std::min(key_offset + leading_zero_bits(difference) / 8, limit);
      } else {
        common = std::min(key_offset + kKeyBytes, limit);
        while (common < limit && previous[common] == token[common]) ++common;
      }
      for (size_t depth = open_depth; depth > common; --depth) {
        nodes[path[depth]].subtree_end = static_cast<uint32_t>(node_count);
      }
      // Room for the new nodes, grown a chunk at a time (within the
      // reserve) so that the loop below writes through an index.
      const size_t needed = node_count + (length - common);
      if (needed > nodes_.size()) {
        nodes_.resize(std::max(needed, nodes_.size() + kNodeChunk));
        nodes = nodes_data_ = nodes_.data();
      }
      for (size_t depth = common; depth < length; ++depth, ++node_count) {
        path[depth + 1] = static_cast<uint32_t>(node_count);
        nodes[node_count] =
            TokenTrie::Node{0, static_cast<uint32_t>(token_count), static_cast<uint16_t>(depth + 1),
                            static_cast<uint8_t>(token[depth])};
      }
      // (Tokens arrive in byte order, so the ones ending at a node come
      // before any node made later: ranges follow node order.)
      token_ids[token_count++] = items[i].id();
      open_depth = length;
      previous = token;
    }
    node_count_ = node_count;
    token_count_ = token_count;
    open_depth_ = open_depth;
    previous_ = previous;
  }

  // Closes the nodes still open, the root included.
  void finish() {
    nodes_.resize(node_count_);
    const uint32_t node_count = static_cast<uint32_t>(node_count_);
    for (size_t depth = 0; depth <= open_depth_; ++depth) {
      nodes_[path_[depth]].subtree_end = node_count;
    }
    token_ids_.resize(token_count_);
    nodes_.push_back(TokenTrie::Node{node_count, static_cast<uint32_t>(token_count_), 0, 0});
  }

 private:
  const char* bytes_;
  const uint32_t* offsets_;
  std::vector<TokenTrie::Node, UninitializedAllocator<TokenTrie::Node>>& nodes_;
  TokenTrie::Node* nodes_data_;  // nodes_.data()
  std::vector<uint32_t>& token_ids_;
  std::vector<uint32_t> path_;
  static constexpr size_t kNodeChunk = 4096;
  size_t node_count_ = 1;           // nodes_ written so far (the root first); the rest is room
  size_t token_count_ = 0;          // token_ids_ written so far
  size_t open_depth_ = 0;           // length of the previous token (0: none yet)
  const char* previous_ = nullptr;  // the previous token's bytes
};

}  // namespace

TokenTrie TokenTrie::build(const char* bytes, const uint32_t* offsets, std::vector<uint32_t> ids) {
  const size_t vocabulary_size =
      ids.empty() ? 0 : size_t{*std::max_element(ids.begin(), ids.end())} + 1;
  std::vector<uint32_t> member_words((vocabulary_size + 31) / 32, 0);
  for (uint32_t id : ids) member_words[id / 32] |= uint32_t{1} << (id % 32);
  return build(bytes, offsets, member_words.data(), vocabulary_size);
}

// Cache misses and first touches of fresh pages dominate a naive build of a
// 100k-token trie. This one groups the ids by their first two bytes in the
// trie's own token_ids, then sorts one such group at a time in a small
// scratch buffer (it stays in cache, and no array as large as the
// vocabulary is touched), feeding the trie as it goes; it reads the packed
// token bytes again only for node bytes and ties past the sort keys. The
// members come as bits, so no list of ids as large as the vocabulary is
// touched either.
TokenTrie TokenTrie::build(const char* bytes, const uint32_t* offsets, const uint32_t* member_words,
                           size_t vocabulary_size) {
  const size_t words = (vocabulary_size + 31) / 32;
  // Calls visit(id, offset, length) for each member to insert, in ascending
  // order.
  const auto for_each_member = [&](const auto& visit) {
    for (size_t word = 0; word < words; ++word) {
      for (uint32_t bits = member_words[word]; bits != 0; bits &= bits - 1) {
        const uint32_t id = static_cast<uint32_t>(32 * word + lowest_set_bit(bits));
        const uint32_t offset = offsets[id];
        const size_t length = offsets[id + 1] - offset;
        if (length - 1 < kMaxTokenLength) visit(id, offset, length);  // (not empty)
      }
    }
  };
  size_t members = 0;  // (a bound: members too long or empty are skipped)
  for (size_t word = 0; word < words; ++word)
    members += std::bitset<32>(member_words[word]).count();

  // Whole-word reads may run past a token, but not past the vocabulary's bytes.
  const char* const readable_end = members == 0 ? bytes : bytes + offsets[vocabulary_size];
  // Sorts items[0, count) fully; their keys start at key_offset.
  uint32_t counts[256] = {};  // radix_sort's, zero between calls
  const auto sort_items = [&](SortItem* items, size_t count, size_t key_offset, SortItem* scratch) {
    radix_sort(items, count, 0, scratch, counts);
    // Ties the keys leave: tokens past the key that agree on it, ordered
    // by length among equal keys, so adjacent. Their bytes settle them.
    const size_t key_end = key_offset + kKeyBytes;
    for (size_t i = 1; i < count; ++i) {
      if (items[i].key != items[i - 1].key || items[i - 1].length() <= key_end) continue;
      size_t end = i + 1;
      while (end < count && items[end].key == items[i].key) ++end;
      std::sort(items + i - 1, items + end, [&](const SortItem& a, const SortItem& b) {
        const std::string_view a_rest(bytes + offsets[a.id()] + key_end, a.length() - key_end);
        const std::string_view b_rest(bytes + offsets[b.id()] + key_end, b.length() - key_end);
        const int order = a_rest.compare(b_rest);  // compares as unsigned char
        return order != 0 ? order < 0 : a.id() < b.id();
      });
      i = end;
    }
  };
  const auto item_of = [&](uint32_t id, size_t key_offset) {
    const uint32_t offset = offsets[id];
    const size_t length = offsets[id + 1] - offset;
    const uint64_t key = length > key_offset ? pack_big_endian(bytes + offset + key_offset,
                                                               length - key_offset, readable_end)
                                             : 0;
    return SortItem{key, uint64_t{length} << 32 | id};
  };

  TokenTrie trie;  // (the root only)
  size_t longest = 0;

  // A few thousand tokens (the long tokens of the text slice) sort as one run.
  constexpr size_t kFewTokens = 4096;
  if (members <= kFewTokens) {
    std::unique_ptr<SortItem[]> items(new SortItem[2 * members + 1]);
    size_t count = 0;
    for_each_member([&](uint32_t id, uint32_t, size_t length) {
      items[count++] = item_of(id, 0);
      longest = std::max(longest, length);
    });
    sort_items(items.get(), count, 0, items.get() + members);
    TrieAssembler assembler(bytes, offsets, count, longest, trie.nodes_, trie.token_ids_);
    assembler.add(items.get(), count, 0);
    assembler.finish();
  } else {
    // Groups by the first two bytes, a one-byte token joining the group of
    // its byte and 0 (it sorts first there: it is shorter), with a counting
    // sort: both passes read the ids in ascending order, so the offsets and
    // the packed bytes stream through the cache instead of being looked up
    // at random. The groups are staged in the trie's token_ids, which the
    // assembler then overwrites group by group (a group's tokens take the
    // same positions there once sorted).
    const auto group_of = [&](uint32_t offset, size_t length) -> size_t {
      const auto* token_bytes = reinterpret_cast<const uint8_t*>(bytes + offset);
      return size_t{token_bytes[0]} << 8 | (length > 1 ? token_bytes[1] : 0);
    };
    // group_start[g]: where group g starts, then (as the ids are placed)
    // where its next id goes, so that it ends as where group g + 1 starts.
    std::vector<uint32_t> group_start(256 * 256 + 1, 0);
    for_each_member([&](uint32_t, uint32_t offset, size_t length) {
      ++group_start[group_of(offset, length) + 1];
      longest = std::max(longest, length);
    });
    uint32_t largest_group = 0;
    for (size_t group = 1; group < group_start.size(); ++group) {
      largest_group = std::max(largest_group, group_start[group]);
      group_start[group] += group_start[group - 1];
    }
    TrieAssembler assembler(bytes, offsets, group_start.back(), longest, trie.nodes_,
                            trie.token_ids_);
    uint32_t* const staged = trie.token_ids_.data();
    for_each_member([&](uint32_t id, uint32_t offset, size_t length) {
      staged[group_start[group_of(offset, length)]++] = id;
    });
    // Room for the largest group and as much scratch, written before it is
    // read: a vector resized per group would clear the items it grows by.
    const std::unique_ptr<SortItem[]> items(new SortItem[2 * size_t{largest_group}]);
    SortItem* const scratch = items.get() + largest_group;
    constexpr size_t kGroupBytes = 2;
    uint32_t begin = 0;
    for (const uint32_t end : group_start) {
      if (begin == end) continue;
      const size_t size = end - begin;
      for (size_t i = 0; i < size; ++i) items[i] = item_of(staged[begin + i], kGroupBytes);
      sort_items(items.get(), size, kGroupBytes, scratch);
      assembler.add(items.get(), size, kGroupBytes);
      begin = end;
    }
    assembler.finish();
  }
  trie.max_depth_ = longest;  // (0 for no tokens)
  return trie;
}

TokenTrie TokenTrie::build(const std::vector<Entry>& entries) {
  // Ids may repeat or leave gaps here, so index entries rather than ids,
  // then map back.
  std::string bytes;
  std::vector<uint32_t> offsets = {0};
  std::vector<uint32_t> order(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return entries[a].id < entries[b].id; });
  for (uint32_t index : order) {
    bytes.append(entries[index].bytes);
    offsets.push_back(static_cast<uint32_t>(bytes.size()));
  }
  std::vector<uint32_t> positions(entries.size());
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<uint32_t>(i);
  TokenTrie trie = build(bytes.data(), offsets.data(), std::move(positions));
  for (uint32_t& id : trie.token_ids_) id = entries[order[id]].id;
  return trie;
}

uint32_t TokenTrie::find(std::string_view bytes) const noexcept {
  uint32_t node = 0;
  for (char c : bytes) {
    const uint8_t byte = static_cast<uint8_t>(c);
    uint32_t child = first_child(node);
    while (child != kNoNode && nodes_[child].byte < byte) child = next_sibling(child, node);
    if (child == kNoNode || nodes_[child].byte != byte) return kNoNode;
    node = child;
  }
  return node;
}

}  // namespace internal
}  // namespace grammask
