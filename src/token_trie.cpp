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

// A token's first 16 bytes as two big-endian zero-padded integers, with its
// id and length. Comparing these orders 99% of real tokens and their XOR
// gives common-prefix lengths, without going back to the token bytes.
struct SortKey {
  uint64_t high;  // bytes 0-7
  uint64_t low;   // bytes 8-15
  uint32_t id;
  uint32_t length;

  static constexpr size_t kPrefixBytes = 16;

  uint8_t byte(size_t index) const {  // index < kPrefixBytes
    const uint64_t half = index < 8 ? high : low;
    return static_cast<uint8_t>(half >> (56 - 8 * (index % 8)));
  }
};

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

// Bytes the two keys' padded prefixes share (at most 16; lengths ignored).
size_t common_prefix(const SortKey& a, const SortKey& b) {
  if (const uint64_t difference = a.high ^ b.high; difference != 0) {
    return leading_zero_bits(difference) / 8;
  }
  if (const uint64_t difference = a.low ^ b.low; difference != 0) {
    return 8 + leading_zero_bits(difference) / 8;
  }
  return SortKey::kPrefixBytes;
}

// Partitions [begin, end) in place by bin_of (bins [0, kBins)), American
// flag style: counts, then cycles each element into its bin. Only the bins
// between the lowest and highest seen are visited (the bytes at one depth of
// a group of tokens span a few dozen values, not 256). Calls
// visit(bin_begin, bin_end) for each non-empty bin, in bin order.
template <size_t kBins, typename T, typename BinOf, typename Visit>
void partition_by_bin(T* begin, T* end, const BinOf& bin_of, const Visit& visit) {
  uint32_t count[kBins] = {};  // (32-bit: half the memory to clear per call)
  size_t low = kBins, high = 0;
  for (const T* element = begin; element != end; ++element) {
    const size_t bin = bin_of(*element);
    ++count[bin];
    low = std::min(low, bin);
    high = std::max(high, bin);
  }
  if (low == high) {  // one bin: nothing moves
    visit(begin, end);
    return;
  }
  T* head[kBins];
  T* tail[kBins];
  T* at = begin;
  for (size_t b = low; b <= high; ++b) {
    head[b] = at;
    at += count[b];
    tail[b] = at;
  }
  for (size_t b = low; b <= high; ++b) {
    while (head[b] != tail[b]) {
      T moving = *head[b];
      for (size_t target = bin_of(moving); target != b; target = bin_of(moving)) {
        std::swap(moving, *head[target]++);
      }
      *head[b]++ = moving;
    }
  }
  T* bin_begin = begin;
  for (size_t b = low; b <= high; ++b) {
    if (count[b] != 0) visit(bin_begin, bin_begin + count[b]);
    bin_begin += count[b];
  }
}

// Sorts [begin, end), whose keys share their first `depth` bytes: while the
// range is large, partitions it on byte `depth` and recurses; small ranges
// and ties past the prefix go to `less`.
template <typename Less>
void refine(SortKey* begin, SortKey* end, size_t depth, const Less& less) {
  constexpr ptrdiff_t kSmallRange = 48;
  if (end - begin <= kSmallRange || depth >= SortKey::kPrefixBytes) {
    std::sort(begin, end, less);
    return;
  }
  // Bin 0: tokens no longer than `depth` (they spell the shared prefix);
  // bins 1-256: the byte at `depth`.
  const auto bin_of = [depth](const SortKey& key) -> size_t {
    return key.length <= depth ? 0 : 1 + size_t{key.byte(depth)};
  };
  partition_by_bin<257>(begin, end, bin_of, [&](SortKey* bin_begin, SortKey* bin_end) {
    if (bin_end - bin_begin < 2) return;
    // Bin 0 holds equal tokens (the permutation lost their id order) or,
    // at depth 2, "X" and "X\0": `less` settles both.
    if (bin_begin->length <= depth) {
      std::sort(bin_begin, bin_end, less);
    } else {
      refine(bin_begin, bin_end, depth + 1, less);
    }
  });
}

// Builds the flat trie from tokens fed in sorted order, one at a time: each
// token opens the nodes past its common prefix with the previous one, and
// nodes deeper than that prefix are closed (their subtree_end set).
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
  }

  void add(const SortKey& key) {
    const char* const token = bytes_ + offsets_[key.id];
    size_t common = 0;
    if (open_depth_ != 0) {
      common = std::min<size_t>({common_prefix(previous_, key), previous_.length, key.length});
      if (common == SortKey::kPrefixBytes) {  // equal beyond the prefix too?
        const char* const before = bytes_ + offsets_[previous_.id];
        const size_t limit = std::min(previous_.length, key.length);
        while (common < limit && before[common] == token[common]) ++common;
      }
    }
    // The arrays through local pointers: the node bytes are stored as
    // uint8_t, which may alias anything, so members would be reloaded
    // after every node.
    const uint32_t node_count = static_cast<uint32_t>(node_count_);
    uint32_t* const path = path_.data();
    for (size_t depth = open_depth_; depth > common; --depth) {
      nodes_[path[depth]].subtree_end = node_count;
    }
    const uint32_t token_count = static_cast<uint32_t>(token_count_);
    // Room for the new nodes, grown a chunk at a time (within the reserve)
    // so that the loop below writes through an index, not push_back.
    const size_t needed = node_count + (key.length - common);
    if (needed > nodes_.size()) nodes_.resize(std::max(needed, nodes_.size() + kNodeChunk));
    TokenTrie::Node* const nodes = nodes_.data();
    uint32_t index = node_count;
    for (size_t depth = common; depth < key.length; ++depth, ++index) {
      path[depth + 1] = index;
      nodes[index] = TokenTrie::Node{0, token_count, static_cast<uint16_t>(depth + 1),
                                     static_cast<uint8_t>(token[depth])};
    }
    node_count_ = needed;
    // (Tokens arrive in byte order, so the ones ending at a node come
    // before any node made later: ranges follow node order.)
    token_ids_[token_count_++] = key.id;
    open_depth_ = key.length;
    previous_ = key;
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
  std::vector<uint32_t>& token_ids_;
  std::vector<uint32_t> path_;
  static constexpr size_t kNodeChunk = 4096;
  size_t node_count_ = 1;   // nodes_ written so far (the root first); the rest is room
  size_t token_count_ = 0;  // token_ids_ written so far
  size_t open_depth_ = 0;   // depth of the previous token (0: none yet)
  SortKey previous_{};
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
// trie's own token_ids, then sorts one such group at a time through sort
// keys in a small scratch buffer (it stays in cache, and no key array as
// large as the vocabulary is touched), feeding the trie as it goes; it reads
// the packed token bytes again only for node bytes and tokens longer than 16
// bytes. The members come as bits, so no list of ids as large as the
// vocabulary is touched either.
TokenTrie TokenTrie::build(const char* bytes, const uint32_t* offsets, const uint32_t* member_words,
                           size_t vocabulary_size) {
  const auto token = [&](uint32_t id) {
    return std::string_view(bytes + offsets[id], offsets[id + 1] - offsets[id]);
  };
  const auto length_of = [&](uint32_t id) -> size_t { return offsets[id + 1] - offsets[id]; };
  const size_t words = (vocabulary_size + 31) / 32;
  // Calls visit(id) for each member to insert, in ascending order.
  const auto for_each_id = [&](const auto& visit) {
    for (size_t word = 0; word < words; ++word) {
      for (uint32_t bits = member_words[word]; bits != 0; bits &= bits - 1) {
        const uint32_t id = static_cast<uint32_t>(32 * word + lowest_set_bit(bits));
        const size_t length = length_of(id);
        if (length != 0 && length <= kMaxTokenLength) visit(id);
      }
    }
  };
  size_t members = 0;  // (a bound: members too long or empty are skipped)
  for (size_t word = 0; word < words; ++word)
    members += std::bitset<32>(member_words[word]).count();

  // Whole-word reads may run past a token, but not past the vocabulary's bytes.
  const char* const readable_end = members == 0 ? bytes : bytes + offsets[vocabulary_size];
  const auto key_of = [&](uint32_t id) {
    const char* start = bytes + offsets[id];
    const size_t length = length_of(id);
    return SortKey{pack_big_endian(start, length, readable_end),
                   length > 8 ? pack_big_endian(start + 8, length - 8, readable_end) : 0, id,
                   static_cast<uint32_t>(length)};
  };
  const auto less = [&](const SortKey& a, const SortKey& b) {
    if (a.high != b.high) return a.high < b.high;
    if (a.low != b.low) return a.low < b.low;
    if (a.length > SortKey::kPrefixBytes && b.length > SortKey::kPrefixBytes) {
      const int order = token(a.id).compare(token(b.id));  // compares as unsigned char
      if (order != 0) return order < 0;
    } else if (a.length != b.length) {
      return a.length < b.length;  // same padded prefix: the shorter is a prefix of the longer
    }
    return a.id < b.id;
  };

  TokenTrie trie;  // (the root only)
  std::vector<SortKey> keys;
  size_t longest = 0;

  // A few thousand tokens (the long tokens of the text slice) sort directly.
  constexpr size_t kFewTokens = 4096;
  if (members <= kFewTokens) {
    keys.reserve(members);
    for_each_id([&](uint32_t id) {
      keys.push_back(key_of(id));
      longest = std::max(longest, length_of(id));
    });
    std::sort(keys.begin(), keys.end(), less);
    TrieAssembler assembler(bytes, offsets, keys.size(), longest, trie.nodes_, trie.token_ids_);
    for (const SortKey& key : keys) assembler.add(key);
    assembler.finish();
  } else {
    // Groups by the first two bytes (second-byte bin 0: one-byte tokens,
    // which sort before every longer token with the same first byte) with
    // a counting sort: both passes read the ids in ascending order, so the
    // offsets and the packed bytes stream through the cache instead of
    // being looked up at random. The groups are staged in the trie's
    // token_ids, which the assembler then overwrites group by group (a
    // group's tokens take the same positions there once sorted).
    constexpr size_t kSecondBins = 257;
    const auto group_of = [&](uint32_t id) -> size_t {
      const auto* token_bytes = reinterpret_cast<const uint8_t*>(bytes + offsets[id]);
      return token_bytes[0] * kSecondBins + (length_of(id) > 1 ? 1 + size_t{token_bytes[1]} : 0);
    };
    // group_start[g]: where group g starts, then (as the ids are placed)
    // where its next id goes, so that it ends as where group g + 1 starts.
    std::vector<uint32_t> group_start(256 * kSecondBins + 1, 0);
    for_each_id([&](uint32_t id) {
      ++group_start[group_of(id) + 1];
      longest = std::max(longest, length_of(id));
    });
    uint32_t largest_group = 0;
    for (size_t group = 1; group < group_start.size(); ++group) {
      largest_group = std::max(largest_group, group_start[group]);
      group_start[group] += group_start[group - 1];
    }
    TrieAssembler assembler(bytes, offsets, group_start.back(), longest, trie.nodes_,
                            trie.token_ids_);
    uint32_t* const staged = trie.token_ids_.data();
    for_each_id([&](uint32_t id) { staged[group_start[group_of(id)]++] = id; });
    // One buffer for the largest group, written before it is read: a
    // vector resized per group would clear the keys it grows by first.
    const std::unique_ptr<SortKey[]> group_keys(new SortKey[largest_group]);
    uint32_t begin = 0;
    for (const uint32_t end : group_start) {
      if (begin == end) continue;
      const size_t size = end - begin;
      for (size_t i = 0; i < size; ++i) group_keys[i] = key_of(staged[begin + i]);
      if (size > 1) refine(group_keys.get(), group_keys.get() + size, 2, less);
      for (size_t i = 0; i < size; ++i) assembler.add(group_keys[i]);
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
