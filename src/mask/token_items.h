// TokenItems (internal): a grammar's token items (ByteGrammar::
// token_terminals()) resolved against a vocabulary, and the token-level half
// of masks and acceptance: which items read a token, and which tokens the
// items awaited at an Earley set read. Stop tokens keep their meaning: a
// positive item that names one reads it; a negated item never does, nor
// an unused id.
// Immutable once resolved; thread-safe to share.
#ifndef GRAMMASK_SRC_MASK_TOKEN_ITEMS_H_
#define GRAMMASK_SRC_MASK_TOKEN_ITEMS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "automata/lowering.h"
#include "base/memory_bytes.h"
#include "earley/earley_engine.h"
#include "grammask/status.h"
#include "grammask/vocabulary.h"

namespace grammask {
namespace internal {

class TokenItems {
 public:
  TokenItems() = default;

  // Resolves every token item of `grammar`: an id must be below
  // vocabulary.size(); a text names every token whose bytes are exactly it
  // (unused ids excepted). Fails with kInvalidArgument naming the item and
  // its line:column for an unknown text or an id out of range. Cost: linear
  // in the vocabulary when some item is named by its text, else in the items.
  static Result<TokenItems> resolve(const ByteGrammar& grammar, const Vocabulary& vocabulary);

  bool empty() const noexcept { return items_.empty(); }

  // Sets matches[i] (resized to the number of items) to 1 when item i reads
  // `token`, else 0. O(items x log ids).
  void matches(uint32_t token, std::vector<uint8_t>& matches) const;

  // Whether some item awaited in set k of `engine` reads a token whose
  // matches() are `matches`. O(items of the set).
  // Heap bytes of the resolved items.
  size_t memory_bytes() const noexcept {
    size_t bytes = heap_bytes(items_) + heap_bytes(all_but_stops_);
    for (const Item& item : items_) bytes += heap_bytes(item.ids);
    return bytes;
  }

  static bool awaited_reads(const EarleyEngine& engine, size_t k,
                            const std::vector<uint8_t>& matches);

  // Sets in `words` the bits of the tokens that the items awaited in set k
  // read. O(mask words) with a negated item awaited, else O(ids named).
  void add_awaited(const EarleyEngine& engine, size_t k, uint32_t* words) const;

 private:
  struct Item {
    bool negated = false;
    std::vector<uint32_t> ids;  // sorted, unique
  };
  std::vector<Item> items_;
  // Every token but the stop tokens and unused ids, as mask words, when
  // some item is negated: what a negated item reads but its own exceptions.
  std::vector<uint32_t> all_but_stops_;
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_TOKEN_ITEMS_H_
