// The token trie: every token that can spell grammar text, stored flat in
// depth-first order so the mask engine walks it with a loop, skipping a
// rejected subtree by jumping to its subtree_end.
#ifndef GRAMMASK_SRC_VOCAB_TOKEN_TRIE_H_
#define GRAMMASK_SRC_VOCAB_TOKEN_TRIE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

namespace grammask {
namespace internal {

// An allocator whose resize() leaves new elements of trivial types
// uninitialized: the trie's node array grows ahead of the nodes written
// into it, and zeroing that room first would write it twice.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* element) noexcept {
    ::new (static_cast<void*>(element)) U;  // default-initialized: left as it is
  }
  template <typename U, typename... Args>
  void construct(U* element, Args&&... args) {
    ::new (static_cast<void*>(element)) U(std::forward<Args>(args)...);
  }
};

class TokenTrie {
 public:
  // 12 bytes: the walks read nodes in order, so every byte counts.
  struct Node {
    uint32_t subtree_end;   // index one past the last node of this node's subtree
    uint32_t tokens_begin;  // the tokens whose bytes end here are token_ids()[tokens_begin,
                            // tokens_begin of the next node): see tokens_end()
    uint16_t depth;         // bytes from the root (root = 0)
    uint8_t byte;           // the byte on the edge into this node (unused at the root)
  };

  // The nodes, in an array whose element past the last is an end marker
  // (its tokens_begin is token_ids().size()), so that node i's tokens end
  // at nodes[i + 1].tokens_begin for every node.
  class Nodes {
   public:
    Nodes(const Node* data, size_t size) : data_(data), size_(size) {}
    const Node* data() const noexcept { return data_; }
    size_t size() const noexcept { return size_; }
    const Node& operator[](size_t i) const noexcept { return data_[i]; }
    const Node* begin() const noexcept { return data_; }
    const Node* end() const noexcept { return data_ + size_; }

   private:
    const Node* data_;
    size_t size_;
  };

  // A token to insert: its id and its bytes.
  struct Entry {
    std::string_view bytes;
    uint32_t id;
  };

  // Node depths are 16-bit; longer tokens cannot be stored.
  static constexpr size_t kMaxTokenLength = 0xFFFF;

  // An empty trie: just the root.
  TokenTrie();

  // Builds the trie over tokens packed in one buffer: token id spells
  // bytes[offsets[id], offsets[id + 1]). `ids` lists the tokens to insert in
  // ascending order. Tokens with empty bytes or longer than kMaxTokenLength
  // are skipped (the caller validates). Cost: linear in the tokens' bytes;
  // memory: the output plus working room linear in the tokens and a fixed
  // table (docs/vocabulary.md tells how the build sorts).
  static TokenTrie build(const char* bytes, const uint32_t* offsets, std::vector<uint32_t> ids);
  // The same for the tokens whose bit is set in member_words (bit id % 32 of
  // word id / 32, ids below vocabulary_size; offsets[vocabulary_size] ends
  // the readable bytes).
  static TokenTrie build(const char* bytes, const uint32_t* offsets, const uint32_t* member_words,
                         size_t vocabulary_size);

  // The same from (bytes, id) pairs in any order; several ids may share
  // bytes. Convenient for tests; copies the bytes first.
  static TokenTrie build(const std::vector<Entry>& entries);

  // nodes()[0] is the root; depth-first, children in byte order.
  Nodes nodes() const noexcept { return Nodes(nodes_.data(), nodes_.size() - 1); }
  // One past the last index into token_ids() of the tokens ending at `node`.
  uint32_t tokens_end(uint32_t node) const noexcept { return nodes_[node + 1].tokens_begin; }
  // Token ids grouped by the node where their bytes end, in node order; ids
  // sharing a node are ascending.
  const std::vector<uint32_t>& token_ids() const noexcept { return token_ids_; }
  // Length in bytes of the longest token (0 for an empty trie).
  size_t max_depth() const noexcept { return max_depth_; }

  // Walk helpers. Children of `node` are node+1, then each next sibling is
  // the previous child's subtree_end, until node's subtree_end.
  uint32_t first_child(uint32_t node) const noexcept {
    return node + 1 < nodes_[node].subtree_end ? node + 1 : kNoNode;
  }
  uint32_t next_sibling(uint32_t node, uint32_t parent) const noexcept {
    const uint32_t next = nodes_[node].subtree_end;
    return next < nodes_[parent].subtree_end ? next : kNoNode;
  }
  static constexpr uint32_t kNoNode = UINT32_MAX;

  // The node reached by spelling `bytes` from the root, or kNoNode. O(len * fan-out).
  uint32_t find(std::string_view bytes) const noexcept;

  // Heap bytes: the nodes and the token ids.
  size_t memory_bytes() const noexcept {
    return nodes_.capacity() * sizeof(Node) + token_ids_.capacity() * sizeof(uint32_t);
  }

 private:
  // The nodes, then the end marker.
  std::vector<Node, UninitializedAllocator<Node>> nodes_;
  std::vector<uint32_t> token_ids_;
  size_t max_depth_ = 0;
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_VOCAB_TOKEN_TRIE_H_
