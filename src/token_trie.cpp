#include "token_trie.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

namespace grammask {
namespace internal {

TokenTrie::TokenTrie() {
  nodes_.push_back(Node{1, 0, 0, 0, 0});
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
    word = __builtin_bswap64(word);
    return length == 0 ? 0 : word & (~uint64_t{0} << (8 * (8 - length)));
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

// Sorts [begin, end), whose keys share their first `depth` bytes: while the
// range is large, partitions it in place on byte `depth` (American flag
// sort) and recurses; small ranges and ties past the prefix go to `less`.
template <typename Less>
void refine(SortKey* begin, SortKey* end, size_t depth, const Less& less) {
  constexpr ptrdiff_t kSmallRange = 48;
  if (end - begin <= kSmallRange || depth >= SortKey::kPrefixBytes) {
    std::sort(begin, end, less);
    return;
  }
  // Bin 0: tokens no longer than `depth` (they spell the shared prefix);
  // bins 1-256: the byte at `depth`.
  constexpr size_t kBins = 257;
  const auto bin_of = [depth](const SortKey& key) -> size_t {
    return key.length <= depth ? 0 : 1 + size_t{key.byte(depth)};
  };
  size_t count[kBins] = {};
  for (const SortKey* key = begin; key != end; ++key) ++count[bin_of(*key)];
  SortKey* head[kBins];
  SortKey* tail[kBins];
  SortKey* at = begin;
  for (size_t b = 0; b < kBins; ++b) {
    head[b] = at;
    at += count[b];
    tail[b] = at;
  }
  for (size_t b = 0; b < kBins; ++b) {
    while (head[b] != tail[b]) {
      SortKey moving = *head[b];
      for (size_t target = bin_of(moving); target != b; target = bin_of(moving)) {
        std::swap(moving, *head[target]++);
      }
      *head[b]++ = moving;
    }
  }
  SortKey* bin_begin = begin;
  for (size_t b = 0; b < kBins; ++b) {
    SortKey* const bin_end = bin_begin + count[b];
    if (count[b] > 1) {
      // Bin 0 holds equal tokens (the permutation lost their id order) or,
      // at depth 2, "X" and "X\0": `less` settles both.
      if (b == 0) {
        std::sort(bin_begin, bin_end, less);
      } else {
        refine(bin_begin, bin_end, depth + 1, less);
      }
    }
    bin_begin = bin_end;
  }
}

}  // namespace

// Cache misses and first touches of fresh pages dominate a naive build of a
// 100k-token trie. This one builds sort keys straight into their bucket
// (first two bytes), sorts the small buckets, and reads the packed token
// bytes again only for tokens longer than 16 bytes.
TokenTrie TokenTrie::build(const char* bytes, const uint32_t* offsets, std::vector<uint32_t> ids) {
  const auto token = [&](uint32_t id) {
    return std::string_view(bytes + offsets[id], offsets[id + 1] - offsets[id]);
  };
  ids.erase(std::remove_if(ids.begin(), ids.end(),
                           [&](uint32_t id) {
                             const size_t length = offsets[id + 1] - offsets[id];
                             return length == 0 || length > kMaxTokenLength;
                           }),
            ids.end());

  // Whole-word reads may run past a token, but not past the last one.
  uint32_t readable = 0;
  for (uint32_t id : ids) readable = std::max(readable, offsets[id + 1]);
  const char* const readable_end = bytes + readable;
  const auto key_of = [&](uint32_t id) {
    const char* start = bytes + offsets[id];
    const size_t length = offsets[id + 1] - offsets[id];
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
  // The trie from the keys in sorted order, in one pass.
  const auto assemble = [&](const std::vector<SortKey>& sorted) {
    TokenTrie trie;
    std::vector<Node>& nodes = trie.nodes_;
    // Real vocabularies need about two nodes per token; reserving more only
    // costs address space, which is never touched.
    nodes.reserve(sorted.size() * 3 + 1);
    trie.token_ids_.reserve(sorted.size());

    // path[d] = index of the open node at depth d on the path to the previous
    // token; nodes leave the path (and get their subtree_end) once the sorted
    // order has moved past their prefix.
    std::vector<uint32_t> path = {0};
    const SortKey* previous = nullptr;
    for (const SortKey& key : sorted) {
      size_t common = 0;
      if (previous != nullptr) {
        common = std::min<size_t>({common_prefix(*previous, key), previous->length, key.length});
        if (common == SortKey::kPrefixBytes) {  // equal beyond the prefix too?
          const std::string_view before = token(previous->id);
          const std::string_view current = token(key.id);
          const size_t limit = std::min(before.size(), current.size());
          while (common < limit && before[common] == current[common]) ++common;
        }
      }

      while (path.size() > common + 1) {
        nodes[path.back()].subtree_end = static_cast<uint32_t>(nodes.size());
        path.pop_back();
      }
      const uint32_t token_count = static_cast<uint32_t>(trie.token_ids_.size());
      for (size_t depth = common; depth < key.length; ++depth) {
        path.push_back(static_cast<uint32_t>(nodes.size()));
        Node& node = nodes.emplace_back();  // filled in place: no temporary to copy
        node.subtree_end = 0;
        node.tokens_begin = token_count;
        node.tokens_end = token_count;
        node.depth = static_cast<uint16_t>(depth + 1);
        node.byte = depth < SortKey::kPrefixBytes
                        ? key.byte(depth)
                        : static_cast<uint8_t>(bytes[offsets[key.id] + depth]);
      }
      trie.token_ids_.push_back(key.id);
      nodes[path.back()].tokens_end = token_count + 1;
      trie.max_depth_ = std::max<size_t>(trie.max_depth_, key.length);
      previous = &key;
    }
    for (uint32_t open : path) nodes[open].subtree_end = static_cast<uint32_t>(nodes.size());
    return trie;
  };
  std::vector<SortKey> keys(ids.size());
  // A few thousand tokens (the long tokens of the text slice) sort directly:
  // the buckets' fixed cost (a 256 KB table) would dominate.
  constexpr size_t kFewTokens = 4096;
  if (ids.size() <= kFewTokens) {
    for (size_t i = 0; i < ids.size(); ++i) keys[i] = key_of(ids[i]);
    std::sort(keys.begin(), keys.end(), less);
    return assemble(keys);
  }

  // Bucket = first two bytes (a lone byte pairs with 0; the sort below puts
  // "A" before "A\0"). Filling buckets in id order keeps equal tokens by id.
  constexpr size_t kBuckets = 1 << 16;
  const auto bucket_of = [&](uint32_t id) {
    const char* b = bytes + offsets[id];
    const size_t second = offsets[id + 1] - offsets[id] > 1 ? static_cast<uint8_t>(b[1]) : 0u;
    return static_cast<size_t>(static_cast<uint8_t>(b[0])) << 8 | second;
  };
  std::vector<uint32_t> bucket_start(kBuckets + 1, 0);
  for (uint32_t id : ids) ++bucket_start[bucket_of(id) + 1];
  for (size_t b = 0; b < kBuckets; ++b) bucket_start[b + 1] += bucket_start[b];
  {
    std::vector<uint32_t> next(bucket_start.begin(), bucket_start.end() - 1);
    for (uint32_t id : ids) keys[next[bucket_of(id)]++] = key_of(id);
  }
  ids = {};
  for (size_t b = 0; b < kBuckets; ++b) {
    if (bucket_start[b + 1] - bucket_start[b] > 1) {
      refine(keys.data() + bucket_start[b], keys.data() + bucket_start[b + 1], 2, less);
    }
  }

  return assemble(keys);
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
