#include "vocab/token_trie.h"

#include <algorithm>
#include <bitset>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "base/bits.h"

namespace grammask {
namespace internal {

TokenTrie::TokenTrie() {
  nodes_.push_back(Node{1, 0, 0, 0});
  nodes_.push_back(Node{1, 0, 0, 0});  // the end marker
}

namespace {

// A token on its way into the trie: 8 of its bytes from a key offset on as a
// big-endian zero-padded integer (each level of the sort reads its byte
// with a shift; the key is reloaded every 8 levels), its length and id.
struct PlacedToken {
  uint64_t key;
  uint32_t length;
  uint32_t id;
};

constexpr size_t kKeyBytes = 8;

// Ranges this small sort by insertion: cheaper than a radix pass.
constexpr size_t kSmallRange = 32;

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

// Writes the flat trie while it sorts the tokens, in the order a
// depth-first walk visits the nodes: an MSD radix sort a byte per level,
// where each range of tokens that share their bytes up to a depth is a
// node, split by the next byte into its children. Nothing is sorted first
// and assembled after. The split is stable and the tokens arrive in id
// order, so the tokens ending at a node come in ascending id order. The
// ranges still to visit wait on a stack, not the call stack: tokens may be
// 65535 bytes deep. Small ranges sort by insertion, and each of their
// tokens opens the nodes past its common prefix with the one before.
class TrieWriter {
 public:
  // Room for `tokens` tokens.
  TrieWriter(const char* bytes, const uint32_t* offsets, const char* readable_end, size_t tokens,
             std::vector<TokenTrie::Node, UninitializedAllocator<TokenTrie::Node>>& nodes,
             std::vector<uint32_t>& token_ids)
      : bytes_(bytes),
        offsets_(offsets),
        readable_end_(readable_end),
        nodes_(nodes),
        token_ids_(token_ids) {
    // Real vocabularies need about two nodes per token; reserving more only
    // costs address space, which is never touched.
    nodes_.reserve(tokens * 3 + 2);  // (the root and the end marker too)
    token_ids_.resize(tokens);       // written by index: the ids may be staged there first
  }

  // Before write_below: the longest token's length, and the most tokens
  // one call gets.
  void prepare(size_t longest, size_t most_tokens) {
    path_.assign(longest + 1, 0);  // path_[d]: the open node at depth d (the root at 0)
    // A pending range holds at least one token, and pending ranges do not
    // overlap. (Not zeroed: only the part used is touched.)
    pending_.reset(new Pending[std::max<size_t>(most_tokens, 1)]);
  }

  // Room in the node array for `size` bytes staged before the first node
  // is written: the nodes overwrite them, so no page is touched for them
  // alone.
  void* staging_room(size_t size) {
    State state = load();
    state.make_room((size + sizeof(TokenTrie::Node) - 1) / sizeof(TokenTrie::Node), nodes_);
    return state.nodes + node_count_;
  }

  // A token for write_below, its key from key_offset on.
  PlacedToken place(uint32_t id, size_t key_offset) const {
    PlacedToken token{0, offsets_[id + 1] - offsets_[id], id};
    token.key = key_at(token, key_offset);
    return token;
  }

  // Opens the node for `byte` at `depth` as the next node, closing the
  // open nodes at that depth or deeper: their subtrees end here.
  void open_node(size_t depth, uint8_t byte) {
    State state = load();
    state.open_node(depth, byte, nodes_);
    store(state);
  }

  // Writes the subtree below the open node at `depth`, the deepest open,
  // from tokens[0, count): they share their first `depth` bytes (and no
  // fewer than `depth` bytes are theirs), and their keys start at
  // key_offset, at most 8 bytes before `depth`. `scratch` has room for
  // `count` tokens. Both arrays are overwritten.
  void write_below(PlacedToken* tokens, PlacedToken* scratch, size_t count, size_t depth,
                   size_t key_offset);

  // Closes the nodes still open, the root included.
  void finish() {
    for (size_t open = 0; open <= open_depth_; ++open) {
      nodes_[path_[open]].subtree_end = static_cast<uint32_t>(node_count_);
    }
    nodes_.resize(node_count_);
    token_ids_.resize(token_count_);
    nodes_.push_back(TokenTrie::Node{static_cast<uint32_t>(node_count_),
                                     static_cast<uint32_t>(token_count_), 0, 0});
  }

 private:
  // The writer's progress, copied into locals while nodes are written: the
  // node bytes are stored as uint8_t, which may alias anything, so members
  // would be reloaded after every node.
  struct State {
    TokenTrie::Node* nodes;
    uint32_t* path;
    uint32_t* token_ids;
    size_t node_count;
    size_t token_count;
    size_t open_depth;
    size_t node_room;  // the node array's size: nodes past node_count are room

    // Room for n more nodes, grown a chunk at a time (within the reserve)
    // so that nodes are written through an index.
    void make_room(size_t n,
                   std::vector<TokenTrie::Node, UninitializedAllocator<TokenTrie::Node>>& vector) {
      if (node_count + n > node_room) {
        vector.resize(std::max(node_count + n, node_room + kNodeChunk));
        nodes = vector.data();
        node_room = vector.size();
      }
    }
    // Closes the open nodes at `depth` or deeper: their subtrees end here.
    void close_to(size_t depth) {
      for (; open_depth >= depth; --open_depth) {
        nodes[path[open_depth]].subtree_end = static_cast<uint32_t>(node_count);
      }
    }
    // TrieWriter::open_node on this state.
    void open_node(size_t depth, uint8_t byte,
                   std::vector<TokenTrie::Node, UninitializedAllocator<TokenTrie::Node>>& vector) {
      make_room(1, vector);
      close_to(depth);
      path[depth] = static_cast<uint32_t>(node_count);
      nodes[node_count++] = TokenTrie::Node{0, static_cast<uint32_t>(token_count),
                                            static_cast<uint16_t>(depth), byte};
      open_depth = depth;
    }
    void add_token(uint32_t id) { token_ids[token_count++] = id; }
  };
  State load() {
    return State{nodes_.data(), path_.data(), token_ids_.data(), node_count_,
                 token_count_,  open_depth_,  nodes_.size()};
  }
  void store(const State& state) {
    node_count_ = state.node_count;
    token_count_ = state.token_count;
    open_depth_ = state.open_depth;
  }

  // A child node still to write: its byte, and its tokens, in tokens or scratch.
  struct Pending {
    uint32_t begin;
    uint32_t end;
    uint16_t depth;
    uint8_t byte;
    bool in_scratch;
  };

  // The key of `token` from byte `offset` on.
  uint64_t key_at(const PlacedToken& token, size_t offset) const {
    return token.length > offset ? pack_big_endian(bytes_ + offsets_[token.id] + offset,
                                                   token.length - offset, readable_end_)
                                 : 0;
  }

  // Writes the subtree below the open node at `depth` as write_below, for
  // a few tokens, whose keys start at key_offset.
  // Takes and returns the state by value: as a local of its own, no node
  // written aliases it.
  State write_sorted(State state, PlacedToken* tokens, size_t count, size_t depth,
                     size_t key_offset) const;
  // Whether a orders before b, when their keys are equal.
  bool less_past_key(const PlacedToken& a, const PlacedToken& b, size_t key_end) const;

  const char* bytes_;
  const uint32_t* offsets_;
  const char* readable_end_;
  std::vector<TokenTrie::Node, UninitializedAllocator<TokenTrie::Node>>& nodes_;
  std::vector<uint32_t>& token_ids_;
  std::vector<uint32_t> path_;
  std::unique_ptr<Pending[]> pending_;
  uint32_t counts_[257] = {};  // per digit in write_below, zero between its passes
  static constexpr size_t kNodeChunk = 4096;
  size_t node_count_ = 1;   // nodes_ written so far (the root first); the rest is room
  size_t token_count_ = 0;  // token_ids_ written so far
  size_t open_depth_ = 0;   // the depth of the last node opened
};

void TrieWriter::write_below(PlacedToken* tokens, PlacedToken* scratch, size_t count, size_t depth,
                             size_t key_offset) {
  Pending* const pending = pending_.get();
  size_t pending_count = 0;
  State state = load();
  Pending range{0, static_cast<uint32_t>(count), static_cast<uint16_t>(depth), 0, false};
  for (;;) {
    // The children of the open node at `depth` from range's tokens.
    for (;;) {
      PlacedToken* const from = range.in_scratch ? scratch : tokens;
      const size_t size = range.end - range.begin;
      const size_t key_byte = (depth - key_offset) % kKeyBytes;
      if (key_byte == 0 && depth != key_offset) {  // past the keys: the next 8 bytes
        for (uint32_t i = range.begin; i < range.end; ++i) from[i].key = key_at(from[i], depth);
      }
      if (size <= kSmallRange) {
        state = write_sorted(state, from + range.begin, size, depth, depth - key_byte);
        break;
      }
      const unsigned shift = static_cast<unsigned>(56 - 8 * key_byte);
      // A token that ends here reads as byte 0 (keys are zero-padded): it
      // shares bin 0 with the tokens whose next byte is 0, and comes first.
      const auto byte_of = [shift](const PlacedToken& token) -> unsigned {
        return static_cast<unsigned>(token.key >> shift) & 0xFF;
      };
      // The bytes seen, as a bitmap: the bins to visit are a few dozen of
      // 256, and smaller ranges would spend more on the empty ones.
      uint64_t seen[4] = {0, 0, 0, 0};
      for (uint32_t i = range.begin; i < range.end; ++i) {
        const unsigned byte = byte_of(from[i]);
        ++counts_[byte];
        seen[byte / 64] |= uint64_t{1} << (byte % 64);
      }
      // bin_next[b]: where byte b's next token goes. bins: the bytes seen,
      // ascending, with where each bin begins.
      uint32_t bin_next[256];
      uint8_t bins[256];
      uint32_t bin_begin[257];
      size_t bin_count = 0;
      uint32_t at = range.begin;
      for (unsigned word = 0; word < 4; ++word) {
        for (uint64_t bits = seen[word]; bits != 0; bits &= bits - 1) {
          const unsigned byte = 64 * word + static_cast<unsigned>(trailing_zero_bits(bits));
          bins[bin_count] = static_cast<uint8_t>(byte);
          bin_begin[bin_count++] = at;
          bin_next[byte] = at;
          at += counts_[byte];
          counts_[byte] = 0;
        }
      }
      bin_begin[bin_count] = at;
      if (bin_count == 1 && bins[0] != 0) {  // one next byte: one child, nothing to move
        ++depth;
        state.open_node(depth, bins[0], nodes_);
        continue;
      }
      PlacedToken* const to = range.in_scratch ? tokens : scratch;
      for (uint32_t i = range.begin; i < range.end; ++i) {
        to[bin_next[byte_of(from[i])]++] = from[i];
      }
      // The tokens ending here, in id order, leave the first bin, if it is
      // byte 0's.
      uint32_t first_bin_end = bin_begin[1];
      if (bins[0] == 0) {
        first_bin_end = bin_begin[0];
        for (uint32_t i = bin_begin[0]; i < bin_begin[1]; ++i) {
          if (to[i].length == depth) {
            state.add_token(to[i].id);
          } else {
            to[first_bin_end++] = to[i];
          }
        }
      }
      // The children, last first, so that the first is taken first.
      const auto add_pending = [&](uint32_t begin, uint32_t end, uint8_t byte) {
        pending[pending_count++] =
            Pending{begin, end, static_cast<uint16_t>(depth + 1), byte, !range.in_scratch};
      };
      for (size_t bin = bin_count - 1; bin > 0; --bin) {
        add_pending(bin_begin[bin], bin_begin[bin + 1], bins[bin]);
      }
      if (first_bin_end != bin_begin[0]) add_pending(bin_begin[0], first_bin_end, bins[0]);
      break;
    }
    if (pending_count == 0) break;
    range = pending[--pending_count];
    depth = range.depth;
    state.open_node(depth, range.byte, nodes_);
  }
  store(state);
}

bool TrieWriter::less_past_key(const PlacedToken& a, const PlacedToken& b, size_t key_end) const {
  if (a.length > key_end && b.length > key_end) {
    const std::string_view a_rest(bytes_ + offsets_[a.id] + key_end, a.length - key_end);
    const std::string_view b_rest(bytes_ + offsets_[b.id] + key_end, b.length - key_end);
    const int order = a_rest.compare(b_rest);  // compares as unsigned char
    if (order != 0) return order < 0;
  }
  return a.length < b.length;  // (a prefix first)
}

TrieWriter::State TrieWriter::write_sorted(State state, PlacedToken* tokens, size_t count,
                                           size_t depth, size_t key_offset) const {
  const char* const bytes = bytes_;
  const uint32_t* const offsets = offsets_;
  // By insertion, stable: equal tokens stay in id order.
  const size_t key_end = key_offset + kKeyBytes;
  for (size_t i = 1; i < count; ++i) {
    const PlacedToken moving = tokens[i];
    size_t at = i;
    for (; at > 0; --at) {
      const PlacedToken& before = tokens[at - 1];
      if (moving.key > before.key ||
          (moving.key == before.key && !less_past_key(moving, before, key_end))) {
        break;
      }
      tokens[at] = before;
    }
    tokens[at] = moving;
  }
  // Each token opens the nodes past its common prefix with the one before.
  for (size_t i = 0; i < count; ++i) {
    const PlacedToken& token = tokens[i];
    size_t common = depth;
    if (i != 0) {
      const PlacedToken& previous = tokens[i - 1];
      const size_t limit = std::min<size_t>(previous.length, token.length);
      if (const uint64_t difference = token.key ^ previous.key; difference != 0) {
        common = std::min(key_offset + leading_zero_bits(difference) / 8, limit);
      } else {
        common = std::min(key_end, limit);
        const char* const a = bytes + offsets[token.id];
        const char* const b = bytes + offsets[previous.id];
        while (common < limit && a[common] == b[common]) ++common;
      }
    }
    if (common < token.length) {
      state.make_room(token.length - common, nodes_);
      state.close_to(common + 1);
      // The new nodes form a chain.
      TokenTrie::Node* const nodes = state.nodes;
      uint32_t* const path = state.path;
      const auto tokens_begin = static_cast<uint32_t>(state.token_count);
      const auto* const token_bytes = reinterpret_cast<const uint8_t*>(bytes + offsets[token.id]);
      size_t node = state.node_count;
      for (size_t next = common; next < token.length; ++next, ++node) {
        path[next + 1] = static_cast<uint32_t>(node);
        nodes[node] =
            TokenTrie::Node{0, tokens_begin, static_cast<uint16_t>(next + 1), token_bytes[next]};
      }
      state.node_count = node;
      state.open_depth = token.length;
    }
    state.add_token(token.id);
  }
  return state;
}

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
// vocabulary is touched), writing the group's nodes as it sorts; it reads
// the packed token bytes again only for keys past 8 bytes and for the
// bytes of a node chain that a single token leads to. The members come as
// bits, so no list of ids as large as the vocabulary is touched either.
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
  TokenTrie trie;  // (the root only)
  size_t longest = 0;

  // A few thousand tokens (the long tokens of the text slice) sort as one run.
  constexpr size_t kFewTokens = 4096;
  if (members <= kFewTokens) {
    const std::unique_ptr<PlacedToken[]> tokens(new PlacedToken[2 * members + 1]);
    TrieWriter writer(bytes, offsets, readable_end, members, trie.nodes_, trie.token_ids_);
    size_t count = 0;
    for_each_member([&](uint32_t id, uint32_t, size_t length) {
      tokens[count++] = writer.place(id, 0);
      longest = std::max(longest, length);
    });
    writer.prepare(longest, count);
    writer.write_below(tokens.get(), tokens.get() + members, count, 0, 0);
    writer.finish();
  } else {
    // Groups by the first two bytes, a one-byte token joining the group of
    // its byte and 0 (it comes first there: it ends a byte earlier), with
    // a counting sort. The first pass reads the ids in ascending order, so
    // the offsets and the packed bytes stream through the cache instead of
    // being looked up at random, and notes each member's id and group in
    // the node array's room, where the second pass finds them. The groups
    // are staged in the trie's token_ids, which the writer then overwrites
    // group by group (a group's tokens take the same positions there in
    // the trie).
    TrieWriter writer(bytes, offsets, readable_end, members, trie.nodes_, trie.token_ids_);
    auto* const member_ids = static_cast<uint32_t*>(
        writer.staging_room(members * (sizeof(uint32_t) + sizeof(uint16_t))));
    auto* const member_groups = reinterpret_cast<uint16_t*>(member_ids + members);
    // group_start[g]: where group g starts, then (as the ids are placed)
    // where its next id goes, so that it ends as where group g + 1 starts.
    std::vector<uint32_t> group_start(256 * 256 + 1, 0);
    size_t count = 0;
    for_each_member([&](uint32_t id, uint32_t offset, size_t length) {
      const auto* token_bytes = reinterpret_cast<const uint8_t*>(bytes + offset);
      const auto group =
          static_cast<uint16_t>(token_bytes[0] << 8 | (length > 1 ? token_bytes[1] : 0));
      ++group_start[group + 1];
      member_ids[count] = id;
      member_groups[count++] = group;
      longest = std::max(longest, length);
    });
    uint32_t largest_group = 0;
    for (size_t group = 1; group < group_start.size(); ++group) {
      largest_group = std::max(largest_group, group_start[group]);
      group_start[group] += group_start[group - 1];
    }
    writer.prepare(longest, largest_group);
    uint32_t* const staged = trie.token_ids_.data();
    for (size_t i = 0; i < count; ++i) staged[group_start[member_groups[i]]++] = member_ids[i];
    // Room for the largest group and as much scratch, written before it is
    // read: a vector resized per group would clear the tokens it grows by.
    const std::unique_ptr<PlacedToken[]> tokens(new PlacedToken[2 * size_t{largest_group}]);
    PlacedToken* const scratch = tokens.get() + largest_group;
    uint32_t begin = 0;
    size_t open_first_byte = 256;  // none yet
    for (size_t group = 0; group < 256 * 256; ++group) {
      const uint32_t end = group_start[group];
      if (begin == end) continue;
      const size_t size = end - begin;
      const size_t first_byte = group >> 8;
      const auto second_byte = static_cast<uint8_t>(group);
      if (first_byte != open_first_byte) {
        writer.open_node(1, static_cast<uint8_t>(first_byte));
        open_first_byte = first_byte;
      }
      // Group (b, 0) may hold the one-byte token b: its keys start at the
      // second byte, and its tokens go below b's node.
      const size_t depth = second_byte == 0 ? 1 : 2;
      if (depth == 2) writer.open_node(2, second_byte);
      for (size_t i = 0; i < size; ++i) tokens[i] = writer.place(staged[begin + i], depth);
      writer.write_below(tokens.get(), scratch, size, depth, depth);
      begin = end;
    }
    writer.finish();
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
