// Invariants every loaded Vocabulary must satisfy, shared by the loader fuzz
// targets (gguf, tokenizer_json): id accessors agree with each other, the
// stop set is sorted and in range, the token trie holds exactly the text
// tokens and spells them, find_token finds them, and a mask computed over
// the vocabulary agrees with a recognizer fed each token's bytes.
#ifndef GRAMMASK_TESTS_FUZZ_VOCABULARY_CHECKS_H_
#define GRAMMASK_TESTS_FUZZ_VOCABULARY_CHECKS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "grammask/matcher.h"
#include "grammask/recognizer.h"
#include "grammask/vocabulary.h"
#include "vocab/token_trie.h"
#include "vocab/vocabulary_access.h"

namespace grammask::fuzz {

// Loading is what these targets fuzz; above this size the per-token checks
// would only slow the fuzzer down.
inline constexpr size_t kMaxCheckedTokens = 4096;

inline bool spells_text(const Vocabulary& vocabulary, uint32_t id) {
  return !vocabulary.is_special(id) && !vocabulary.is_stop(id) &&
         !vocabulary.token_bytes(id).empty();
}

inline void check_trie(const Vocabulary& vocabulary) {
  const internal::TokenTrie& trie = internal::VocabularyAccess::trie(vocabulary);
  const auto& nodes = trie.nodes();
  FUZZ_CHECK(nodes.size() != 0 && nodes[0].subtree_end == nodes.size(), "trie root");
  // Walk depth-first, keeping the path from the root, and check that every
  // token stored at a node spells that path.
  std::vector<uint32_t> seen;
  std::vector<uint32_t> open;  // the nodes on the path to the current one, root first
  std::string path;            // the bytes on the edges of that path
  for (uint32_t node = 0; node < nodes.size(); ++node) {
    // The root's subtree is everything, so only non-root nodes are closed.
    while (!open.empty() && node >= nodes[open.back()].subtree_end) {
      open.pop_back();
      path.pop_back();
    }
    if (node != 0) path.push_back(static_cast<char>(nodes[node].byte));
    FUZZ_CHECK(nodes[node].depth == path.size(), "trie depth");
    FUZZ_CHECK(nodes[node].subtree_end > node && nodes[node].subtree_end <= nodes.size(),
               "trie subtree_end");
    const uint32_t tokens_end = trie.tokens_end(node);
    FUZZ_CHECK(nodes[node].tokens_begin <= tokens_end && tokens_end <= trie.token_ids().size(),
               "trie token range");
    for (uint32_t k = nodes[node].tokens_begin; k < tokens_end; ++k) {
      const uint32_t id = trie.token_ids()[k];
      FUZZ_CHECK(vocabulary.token_bytes(id) == path,
                 "trie token " + std::to_string(id) + " is stored under " + escaped(path));
      seen.push_back(id);
    }
    open.push_back(node);
  }
  std::sort(seen.begin(), seen.end());
  FUZZ_CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end(),
             "a token twice in the trie");
  std::vector<uint32_t> expected;
  for (uint32_t id = 0; id < vocabulary.size(); ++id) {
    if (spells_text(vocabulary, id)) expected.push_back(id);
  }
  FUZZ_CHECK(seen == expected, "the trie does not hold exactly the text tokens");
}

inline void check_mask(const Vocabulary& vocabulary) {
  // Most tokens are allowed somewhere in this grammar; ASCII letters and
  // spaces only in runs, so some byte sequences are refused.
  static const char* const kGrammar =
      "root ::= (word \" \")* word?\n"
      "word ::= [a-zA-Z0-9]+ | [^ a-zA-Z0-9\\x00]\n";
  auto compiled = CompiledGrammar::from_gbnf(kGrammar, vocabulary);
  FUZZ_CHECK(compiled.ok(), compiled.status().to_string());
  auto grammar = parse_gbnf(kGrammar);
  auto recognizer = Recognizer::create(*grammar);
  FUZZ_CHECK(recognizer.ok(), recognizer.status().to_string());

  Matcher matcher(*compiled);
  std::vector<uint32_t> words(compiled->mask_words() + 1, ~uint32_t{0});
  const Status filled = matcher.fill_mask(words.data(), words.size());
  if (!filled.ok()) {
    FUZZ_CHECK(filled.code() == ErrorCode::kLimitExceeded, filled.to_string());
    return;
  }
  FUZZ_CHECK(words.back() == 0, "mask bits past the vocabulary");
  for (uint32_t id = 0; id < vocabulary.size(); ++id) {
    bool expected = false;
    if (vocabulary.is_stop(id)) {
      expected = recognizer->is_accepting();
    } else if (spells_text(vocabulary, id)) {
      const std::string_view bytes = vocabulary.token_bytes(id);
      expected = recognizer->push_bytes(bytes) == bytes.size();
      recognizer->reset();
    }
    FUZZ_CHECK(test_bit(words.data(), id) == expected,
               "mask bit of token " + std::to_string(id) + " (" +
                   escaped(vocabulary.token_bytes(id)) + ")");
    FUZZ_CHECK(matcher.is_token_allowed(id) == expected,
               "is_token_allowed of token " + std::to_string(id));
  }
}

inline void check_vocabulary(const Vocabulary& vocabulary) {
  const size_t size = vocabulary.size();
  FUZZ_CHECK(size < UINT32_MAX, "vocabulary size");
  const auto out_of_range = static_cast<uint32_t>(size);
  FUZZ_CHECK(vocabulary.token_bytes(out_of_range).empty(), "bytes of an out-of-range id");
  FUZZ_CHECK(vocabulary.kind(out_of_range) == TokenKind::kUnused, "kind of an out-of-range id");
  FUZZ_CHECK(vocabulary.is_special(out_of_range), "an out-of-range id must be special");

  const std::vector<uint32_t>& stops = vocabulary.stop_tokens();
  FUZZ_CHECK(std::is_sorted(stops.begin(), stops.end()) &&
                 std::adjacent_find(stops.begin(), stops.end()) == stops.end(),
             "stop tokens must be ascending and unique");
  for (const uint32_t id : stops) {
    FUZZ_CHECK(id < size && vocabulary.is_stop(id), "stop token " + std::to_string(id));
  }
  if (const auto bos = vocabulary.bos_token()) FUZZ_CHECK(*bos < size, "bos id out of range");
  if (size > kMaxCheckedTokens) return;

  for (uint32_t id = 0; id < size; ++id) {
    const TokenKind kind = vocabulary.kind(id);
    const std::string_view bytes = vocabulary.token_bytes(id);
    FUZZ_CHECK(kind != TokenKind::kUnused || bytes.empty(), "an unused token with bytes");
    FUZZ_CHECK(kind != TokenKind::kByte || bytes.size() == 1, "a byte token of several bytes");
    FUZZ_CHECK(
        vocabulary.is_special(id) == (kind == TokenKind::kControl || kind == TokenKind::kUnknown ||
                                      kind == TokenKind::kUnused),
        "is_special disagrees with kind");
    FUZZ_CHECK(vocabulary.is_stop(id) == std::binary_search(stops.begin(), stops.end(), id),
               "is_stop disagrees with stop_tokens");
    if (!bytes.empty() && kind != TokenKind::kUnused) {
      const auto found = vocabulary.find_token(bytes);
      FUZZ_CHECK(found && *found <= id && vocabulary.token_bytes(*found) == bytes,
                 "find_token of token " + std::to_string(id) + " (" + escaped(bytes) + ")");
    }
  }
  check_trie(vocabulary);
  check_mask(vocabulary);

  // A different stop set: the first token that spells text stops instead.
  std::vector<uint32_t> new_stops(stops.begin(), stops.end());
  for (uint32_t id = 0; id < size; ++id) {
    if (spells_text(vocabulary, id)) {
      new_stops.push_back(id);
      break;
    }
  }
  auto restopped = vocabulary.with_stop_tokens(new_stops);
  FUZZ_CHECK(restopped.ok(), restopped.status().to_string());
  FUZZ_CHECK(restopped->size() == size, "with_stop_tokens changed the size");
  check_trie(*restopped);
}

}  // namespace grammask::fuzz

#endif  // GRAMMASK_TESTS_FUZZ_VOCABULARY_CHECKS_H_
