// CompiledGrammarData (internal): what CompiledGrammar::compile builds and
// every Matcher of the grammar reads. Immutable once compiled, except for
// the walk stores, which are thread-safe.
#ifndef GRAMMASK_SRC_MASK_COMPILED_GRAMMAR_H_
#define GRAMMASK_SRC_MASK_COMPILED_GRAMMAR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "automata/lowering.h"
#include "base/byte_set.h"
#include "grammask/vocabulary.h"
#include "mask/pure_walk.h"
#include "mask/state_analysis.h"
#include "mask/text_closure.h"
#include "mask/token_items.h"
#include "mask/walk_store.h"
#include "vocab/text_slice.h"
#include "vocab/token_trie.h"
#include "vocab/vocabulary_access.h"

namespace grammask {
namespace internal {

struct CompiledGrammarData {
  CompiledGrammarData(std::shared_ptr<const ByteGrammar> lowered, Vocabulary vocab,
                      uint64_t mask_work, size_t cache_bytes, size_t matcher_cache_bytes)
      : grammar(std::move(lowered)),
        vocabulary(std::move(vocab)),
        max_mask_work(mask_work),
        max_matcher_cache_bytes(matcher_cache_bytes),
        walk_budget(cache_bytes) {}

  std::shared_ptr<const ByteGrammar> grammar;
  Vocabulary vocabulary;
  uint64_t max_mask_work = 0;          // CompileOptions::max_mask_work
  size_t max_matcher_cache_bytes = 0;  // CompileOptions::max_matcher_cache_bytes
  TokenItems token_items;              // the grammar's token items, resolved
  std::vector<uint8_t> pure;           // per DFA state: pure_states()
  std::unique_ptr<const WalkClasses> walk_classes;
  // Per DFA state: a rule start or the target of a rule edge, the states
  // an Earley item can enter by prediction or completion.
  std::vector<uint8_t> entered_by_rule;
  // Per DFA state: its waiter class, equal for states with the same rule
  // edges (rule, target), or kNotWaiting without any. Completing a rule
  // into a set reads no more of its items than that.
  std::vector<uint32_t> waiter_class;
  // Per rule: the bytes that may come right after it ends
  // (rule_follow_bytes), which tell where a local walk past a completion
  // needs the stack.
  std::vector<ByteSet> rule_follow;
  // Per DFA state: kNotPlainCaller, or where in plain_callee_bytes the
  // first bytes of the rules it calls are, for a plain caller (see
  // TrieWalker::plain_caller). Computed once: the fast path asks at
  // every step through whitespace before a nested value.
  std::vector<uint32_t> plain_caller;
  std::vector<ByteSet> plain_callee_bytes;
  std::unique_ptr<const PureTransitions> pure_transitions;
  std::unique_ptr<const TextClosure> text_closure;
  // The walk stores, which draw on one budget.
  WalkBudget walk_budget;
  std::unique_ptr<ClassWalks> class_walks;
  std::unique_ptr<SharedWalks> shared_walks;

  // The short parts of split walks (see PureWalk) by short class.
  std::unique_ptr<ClassWalks> short_class_walks;

  // The trie a walk from states with text cover `cover` needs (the rest of
  // the text slice or of its short tier; `walk` then allows that part),
  // else the whole trie. Sets walk.trie.
  const TokenTrie& trie_for(TextCover cover, PureWalk& walk) const {
    const TextSlice& slice = internal::VocabularyAccess::text_slice(vocabulary);
    switch (cover) {
      case kAllText:
        walk.slice = &slice.words;
        walk.trie = &slice.rest;
        break;
      case kShortText:
        walk.slice = &slice.short_words;
        walk.trie = &slice.short_rest;
        break;
      case kNoText:
        walk.trie = &internal::VocabularyAccess::trie(vocabulary);
        break;
    }
    return *walk.trie;
  }
  // The same for the two parts of a split walk: the tokens of at most
  // kShortLength bytes (walked to that depth), and the longer ones.
  const TokenTrie& short_trie_for(TextCover cover, PureWalk& walk) const {
    walk.depth_cap = TextSlice::kShortLength;
    trie_for(cover, walk);
    // (The rest of the whole slice has the same short tokens as the rest of
    // its short tier, and fewer long ones to skip.)
    if (cover != kNoText) walk.trie = &internal::VocabularyAccess::text_slice(vocabulary).rest;
    return *walk.trie;
  }
  const TokenTrie& long_trie_for(TextCover cover, PureWalk& walk) const {
    const TextSlice& slice = internal::VocabularyAccess::text_slice(vocabulary);
    walk.trie = cover == kAllText ? &slice.long_rest : &slice.long_tokens;
    return *walk.trie;
  }
  // Per DFA state: its local class (compute_local_classes) where the
  // grammar calls one rule in a chain (a repeat too large to unroll, such as
  // a string of at most N characters), else the state itself; and its local
  // class at kShortLength + 1 bytes, for split local walks (empty when the
  // local classes are the states).
  std::vector<uint32_t> local_class;
  std::vector<uint32_t> short_local_class;
  // The labels that key what a set's items do from the next token on:
  // local_class (for local walks) and the states themselves (for context
  // ids), with the positions of counters that no token tells apart joined
  // (join_counter_positions).
  std::vector<uint32_t> local_key_class;
  std::vector<uint32_t> context_class;

  // walk_from_state from pure state `s`, over the trie trie_for picks; a
  // split walk when its class is split, taking the short part from
  // short_class_walks or walking it and publishing it there. Gives up past
  // `budget` nodes.
  bool walk_pure_state(uint32_t s, TextCover cover, uint64_t budget, PureWalk& walk,
                       uint64_t& visited) const;

  // Heap bytes of everything above but the vocabulary and the walks
  // (walk_budget.used()): set once compiled.
  size_t table_bytes = 0;
  size_t memory_bytes() const { return table_bytes + walk_budget.used(); }
  // Computes table_bytes (once every table is built, before any Matcher).
  void measure_tables();
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_COMPILED_GRAMMAR_H_
