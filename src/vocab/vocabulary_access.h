// The parts of a Vocabulary that only the mask engine and tests read
// (internal): the public header keeps them private.
#ifndef GRAMMASK_SRC_VOCAB_VOCABULARY_ACCESS_H_
#define GRAMMASK_SRC_VOCAB_VOCABULARY_ACCESS_H_

#include "grammask/vocabulary.h"
#include "vocab/text_slice.h"
#include "vocab/token_trie.h"

namespace grammask::internal {

struct VocabularyAccess {
  // Every token that is not special, not a stop token and has non-empty
  // bytes, in a flat depth-first trie. Shared by the copies of a vocabulary
  // with the same trie tokens; lives as long as any of them. O(1).
  static const TokenTrie& trie(const Vocabulary& vocabulary) noexcept;
  // The trie's tokens split into those that spell only plain text and the
  // others (vocab/text_slice.h); built and shared with the trie. O(1).
  static const TextSlice& text_slice(const Vocabulary& vocabulary) noexcept;
  // The bytes of every token, packed: token id spells
  // bytes[offsets[id], offsets[id + 1]). O(1).
  static const char* bytes(const Vocabulary& vocabulary) noexcept;
  static const uint32_t* offsets(const Vocabulary& vocabulary) noexcept;
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_VOCAB_VOCABULARY_ACCESS_H_
