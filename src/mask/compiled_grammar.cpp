#include "mask/compiled_grammar.h"

#include <algorithm>

#include "base/memory_bytes.h"
#include "grammask/gbnf.h"
#include "grammask/matcher.h"
#include "vocab/vocabulary_access.h"

namespace grammask {
namespace internal {
namespace {

// Rules of more pure states are left out of the precomputation.
constexpr uint32_t kPrecomputedRuleStates = 512;
// The least trie size that CompileOptions::precompute_budget counts in.
constexpr size_t kBudgetTrieNodes = size_t{1} << 17;
// The steps (state and position pairs) of the loop searches that the
// precomputation may make to decide covers, in all.
constexpr uint64_t kPrecomputeSearchSteps = uint64_t{1} << 15;

}  // namespace

bool CompiledGrammarData::walk_pure_state(uint32_t s, TextCover cover, uint64_t budget,
                                          PureWalk& walk, uint64_t& visited) const {
  visited = 0;
  // The last characters of a bounded string: the plain tokens short
  // enough are allowed and the longer ones refused, so only the tokens
  // outside the slice are walked (a tenth of the trie), and the walk is
  // still exactly the state's.
  if (cover == kNoText) {
    if (const uint32_t chars = text_closure->plain_chars(s, pure); chars != 0) {
      const TextSlice& slice = internal::VocabularyAccess::text_slice(vocabulary);
      walk.slice = &slice.tier_words[chars - 1];
      walk.trie = &slice.rest;
      return walk_from_state(*pure_transitions, slice.rest, vocabulary.size(), s, budget, walk,
                             visited);
    }
  }
  // Text that excludes some strings: the slice tokens without the bytes
  // that can leave it in bulk, and a walk of the others only.
  if (cover == kNoText) {
    if (const std::optional<ByteSet> avoid = text_closure->avoided_ascii(s, pure)) {
      const TextSlice& slice = internal::VocabularyAccess::text_slice(vocabulary);
      if (const AvoidingSlice* avoiding = slice.avoiding->get(
              *avoid, slice.words, internal::VocabularyAccess::trie(vocabulary),
              internal::VocabularyAccess::bytes(vocabulary),
              internal::VocabularyAccess::offsets(vocabulary), vocabulary.size())) {
        walk.slice = &avoiding->words;
        walk.trie = &avoiding->rest;
        return walk_from_state(*pure_transitions, avoiding->rest, vocabulary.size(), s, budget,
                               walk, visited);
      }
    }
  }
  if (walk_classes->split(walk_classes->of(s))) {
    const uint32_t short_class = walk_classes->short_of(s);
    const PureWalk* short_part = short_class_walks->find(short_class, cover);
    std::unique_ptr<PureWalk> owned;
    if (short_part == nullptr) {
      owned = std::make_unique<PureWalk>();
      const TokenTrie& trie = short_trie_for(cover, *owned);
      if (!walk_from_state(*pure_transitions, trie, vocabulary.size(), s, budget, *owned, visited))
        return false;
      budget -= visited;
      short_part = short_class_walks->publish(short_class, cover, owned);
    }
    uint64_t long_visited = 0;
    const TokenTrie& trie = long_trie_for(cover, walk);
    const bool done =
        walk_from_state(*pure_transitions, trie, vocabulary.size(), s, budget, walk, long_visited);
    visited += long_visited;
    walk.attach_short_part(short_part, owned);
    return done;
  }
  const TokenTrie& trie = trie_for(cover, walk);
  return walk_from_state(*pure_transitions, trie, vocabulary.size(), s, budget, walk, visited);
}

void CompiledGrammarData::measure_tables() {
  size_t bytes = sizeof(CompiledGrammarData) + sizeof(ByteGrammar) + grammar->memory_bytes() +
                 token_items.memory_bytes() + heap_bytes(pure) + sizeof(WalkClasses) +
                 walk_classes->memory_bytes() + heap_bytes(entered_by_rule) +
                 heap_bytes(waiter_class) + heap_bytes(plain_caller) +
                 heap_bytes(plain_callee_bytes) + sizeof(PureTransitions) + sizeof(TextClosure) +
                 text_closure->memory_bytes() + sizeof(ClassWalks) + class_walks->slot_bytes() +
                 sizeof(ClassWalks) + short_class_walks->slot_bytes() + sizeof(SharedWalks) +
                 heap_bytes(local_class) + heap_bytes(short_local_class) +
                 heap_bytes(local_key_class) + heap_bytes(context_class) + heap_bytes(rule_follow);
  table_bytes = bytes;
}

}  // namespace internal

// --- CompiledGrammar ---------------------------------------------------------

Result<CompiledGrammar> CompiledGrammar::compile(const Grammar& grammar,
                                                 const Vocabulary& vocabulary,
                                                 const CompileOptions& options) {
  auto lowered = internal::ByteGrammar::lower(grammar, options.root, options.recognizer);
  if (!lowered.ok()) return lowered.status();
  auto token_items = internal::TokenItems::resolve(**lowered, vocabulary);
  if (!token_items.ok()) return token_items.status();
  auto data = std::make_shared<internal::CompiledGrammarData>(
      std::move(lowered).value(), vocabulary, options.max_mask_work, options.max_cache_bytes,
      options.max_matcher_cache_bytes);
  data->token_items = std::move(token_items).value();
  const internal::ByteGrammar& byte_grammar = *data->grammar;
  const internal::TokenTrie& trie = internal::VocabularyAccess::trie(vocabulary);
  data->pure = internal::pure_states(byte_grammar);
  data->walk_classes =
      std::make_unique<internal::WalkClasses>(byte_grammar, data->pure, trie.max_depth() + 1);
  data->class_walks =
      std::make_unique<internal::ClassWalks>(data->walk_classes->num_classes(), data->walk_budget);
  data->short_class_walks = std::make_unique<internal::ClassWalks>(
      data->walk_classes->num_short_classes(), data->walk_budget);
  data->shared_walks = std::make_unique<internal::SharedWalks>(data->walk_budget);
  data->pure_transitions = std::make_unique<internal::PureTransitions>(byte_grammar, data->pure);
  const bool local_classes = internal::has_call_chains(byte_grammar, trie.max_depth() + 1);
  data->local_class = local_classes
                          ? internal::compute_local_classes(byte_grammar, trie.max_depth() + 1,
                                                            data->short_local_class)
                          : internal::identity_classes(byte_grammar);
  // States in one local class read alike past the longest token, so they
  // share their text cover (the positions of a long string body are then
  // proven once).
  data->text_closure = std::make_unique<internal::TextClosure>(
      byte_grammar, internal::VocabularyAccess::text_slice(vocabulary).max_length,
      local_classes ? &data->local_class : nullptr);
  // Counter positions that no token tells apart share their walks and
  // masks (the indentation of a pretty-printed document, where a
  // vocabulary's whitespace tokens are short).
  const auto alike = internal::counter_positions_alike(byte_grammar, trie);
  data->context_class = internal::identity_classes(byte_grammar);
  internal::join_labels(alike, data->context_class);
  if (local_classes) {
    data->local_key_class = data->local_class;
    internal::join_labels(alike, data->local_key_class);
  } else {
    data->local_key_class = data->context_class;
  }
  data->waiter_class = internal::waiter_classes(byte_grammar);
  data->rule_follow = internal::rule_follow_bytes(byte_grammar, *data->text_closure);
  internal::plain_callers(byte_grammar, *data->text_closure, data->plain_caller,
                          data->plain_callee_bytes);
  data->entered_by_rule.assign(byte_grammar.states().size(), 0);
  for (const internal::LoweredRule& rule : byte_grammar.rules())
    if (rule.start != internal::kNoState) data->entered_by_rule[rule.start] = 1;
  for (const internal::RuleEdge& edge : byte_grammar.rule_edges())
    data->entered_by_rule[edge.target] = 1;
  data->measure_tables();
  // Precompute the walk of every class while the budget lasts, nearest
  // states first (breadth-first from the start of every rule: the states a
  // decode reaches early and often), skipping the rules classed on first
  // use; the rest are walked on first use.
  // (A small vocabulary's trie counts as kBudgetTrieNodes: a grammar of many
  // short walks, chess moves say, needs as many node visits whatever the
  // vocabulary, and a walk of a small trie costs little.)
  const double nodes =
      static_cast<double>(std::max<size_t>(trie.nodes().size(), internal::kBudgetTrieNodes));
  const double wanted = options.precompute_budget > 0 ? options.precompute_budget * nodes : 0;
  // (The comparison keeps NaN and huge values in range.)
  uint64_t budget = wanted < 1e18 ? static_cast<uint64_t>(wanted) : uint64_t{1} << 60;
  // The loop searches that decide covers get a bound of their own: a
  // grammar whose states each search a thousand steps and fail (key
  // automata that refuse some text) spent 100 ms here. Past it, states
  // whose cover is not yet known are walked on first use.
  uint64_t search_budget = internal::kPrecomputeSearchSteps;
  internal::BreadthFirstStates nearest_first(byte_grammar);
  for (uint32_t s = nearest_first.next(); s != internal::kNoState && budget > 0;
       s = nearest_first.next()) {
    const uint32_t cls = data->walk_classes->known(s);
    if (cls == internal::kImpureClass || cls == internal::WalkClasses::kNotYet) continue;
    // (The states of a rule of many, a format's automaton or a bounded
    // string, are met one by one, each a walk of much of the trie; the
    // budget goes further on the states of keys, keywords and numbers.)
    if (data->walk_classes->pure_states_in_rule(byte_grammar.states()[s].rule) >
        internal::kPrecomputedRuleStates)
      continue;
    // (A state whose cover needs a proof search is walked on first use: the
    // searches of a large grammar's string states took seconds.)
    const std::optional<internal::TextCover> known_cover =
        data->text_closure->cover_without_proof(s, &search_budget);
    if (!known_cover) continue;
    const internal::TextCover cover = *known_cover;
    if (data->class_walks->find(cls, cover)) continue;
    auto walk = std::make_unique<internal::PureWalk>();
    uint64_t visited = 0;
    if (!data->walk_pure_state(s, cover, budget, *walk, visited)) break;
    budget -= visited;
    // (Stops when the cache is full: Matchers then walk on first use.)
    if (data->class_walks->publish(cls, cover, walk) == nullptr) break;
  }
  return CompiledGrammar(std::move(data));
}

Result<CompiledGrammar> CompiledGrammar::from_gbnf(std::string_view gbnf,
                                                   const Vocabulary& vocabulary,
                                                   const CompileOptions& options) {
  GbnfOptions parse_options = options.gbnf;
  parse_options.root = options.root;
  auto grammar = parse_gbnf(gbnf, parse_options);
  if (!grammar.ok()) return grammar.status();
  return compile(*grammar, vocabulary, options);
}

const Vocabulary& CompiledGrammar::vocabulary() const noexcept {
  return data_->vocabulary;
}
size_t CompiledGrammar::mask_words() const noexcept {
  return grammask::mask_words(data_->vocabulary.size());
}
size_t CompiledGrammar::memory_bytes() const noexcept {
  return data_->memory_bytes();
}
size_t CompiledGrammar::cache_bytes() const noexcept {
  return data_->walk_budget.used();
}

}  // namespace grammask
