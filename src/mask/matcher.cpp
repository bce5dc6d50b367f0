#include "grammask/matcher.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "automata/lowering.h"
#include "base/sequence_index.h"
#include "earley/earley_engine.h"
#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "mask/text_closure.h"
#include "vocab/text_slice.h"
#include "vocab/token_trie.h"
#include "vocab/vocabulary_access.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace grammask {
namespace internal {

// A DFA state is "pure" when input from it is plain DFA transitions,
// whatever its rule was called from: it calls no rule, and it does not end
// its rule, or its rule is the root and nothing calls the root (then ending
// it completes nothing, it only makes the output acceptable).
std::vector<uint8_t> pure_states(const ByteGrammar& grammar);

// The context-free part of a trie walk from a set of pure DFA states: the
// tokens the states accept on their own, and the frontier, the trie nodes
// where some path reaches a state that may end its rule or call another
// (their subtrees need the engine). `paths` holds each frontier node's
// bytes from the root, node depth bytes each, back to back.
// The allowed tokens are kept as mask words, or as a list of ids when
// there are few (most walks: a keyword, a digit), to keep thousands of
// precomputed walks small.
// A walk from states that accept all plain text (see text_slice.h) allows
// the whole text slice and walks only the trie of the other tokens:
// `slice` is then the slice's mask, and the frontier indexes that trie.
// Mask words include the slice (finish() folds it in); an id list does not.
//
// A split walk: states that differ only past kShortLength bytes (the
// positions of a string of at most 64 characters, say) share the walk of
// the tokens of at most that many bytes, `short_part`, and each walks only
// the few longer tokens itself: a walk of the long-token trie, with the
// short part attached.
struct PureWalk {
  std::vector<uint32_t> bits;    // mask words; empty when `tokens` is used
  std::vector<uint32_t> tokens;  // the allowed ids when sparse
  std::vector<uint32_t> frontier;
  std::vector<uint8_t> paths;
  const std::vector<uint32_t>* slice = nullptr;  // the vocabulary's, when allowed
  const TokenTrie* trie = nullptr;               // the trie walked (the frontier indexes it)
  size_t depth_cap = SIZE_MAX;           // the walk skipped nodes deeper than this (a short part)
  const PureWalk* short_part = nullptr;  // of a split walk; owned by the grammar or below
  std::shared_ptr<const PureWalk> owned_short_part;  // (copied with a Matcher)
  // The walk of several pure states: `bits` is the union of their walks,
  // and their frontiers are these walks' (see top_set_pure_walk).
  std::vector<const PureWalk*> state_parts;
  std::vector<std::shared_ptr<const PureWalk>> owned_state_parts;

  // Writes the mask of the allowed tokens over all of words[0, n_words).
  void write_over(uint32_t* words, size_t n_words) const {
    if (short_part != nullptr) {
      short_part->write_over(words, n_words);
      write_own_to(words);
      return;
    }
    const std::vector<uint32_t>* base = !bits.empty() ? &bits : slice;
    if (base == nullptr) {
      std::fill(words, words + n_words, 0);
    } else {
      std::copy(base->begin(), base->end(), words);
      std::fill(words + base->size(), words + n_words, 0);
    }
    if (bits.empty())
      for (uint32_t id : tokens) set_bit(words, id);
  }
  // ORs the allowed tokens into `words`.
  void write_to(uint32_t* words) const {
    if (short_part != nullptr) short_part->write_to(words);
    write_own_to(words);
  }
  bool has_frontier() const {
    return !frontier.empty() || (short_part != nullptr && !short_part->frontier.empty()) ||
           std::any_of(state_parts.begin(), state_parts.end(),
                       [](const PureWalk* part) { return part->has_frontier(); });
  }
  // Folds the slice into the mask words, once the walk is done.
  void finish() {
    if (slice == nullptr || bits.empty()) return;
    for (size_t i = 0; i < bits.size(); ++i) bits[i] |= (*slice)[i];
  }
  // Keeps the allowed tokens as an id list when they are few (a split
  // walk's long part, say), so that writing the mask costs little more
  // than writing its short part.
  void make_sparse() {
    if (slice != nullptr || bits.empty()) return;
    size_t count = 0;
    for (uint32_t word : bits) count += static_cast<size_t>(__builtin_popcount(word));
    if (count > bits.size() / 8) return;
    for (size_t i = 0; i < bits.size(); ++i)
      for (uint32_t word = bits[i]; word != 0; word &= word - 1)
        tokens.push_back(static_cast<uint32_t>(i * 32 + static_cast<size_t>(__builtin_ctz(word))));
    bits.clear();
    bits.shrink_to_fit();
  }
  // Attaches the short part of a split walk: `shared`, which the grammar's
  // tables own, or `own` when publishing it failed (the shared memory is
  // spent: `shared` is null).
  void attach_short_part(const PureWalk* shared, std::unique_ptr<PureWalk>& own) {
    if (shared == nullptr) {
      owned_short_part = std::move(own);
      shared = owned_short_part.get();
    }
    short_part = shared;
  }
  // Records trie node `node`, reached by path[1..depth], as a frontier node.
  void add_frontier(uint32_t node, const std::vector<uint8_t>& path, size_t depth) {
    frontier.push_back(node);
    paths.insert(paths.end(), path.begin() + 1, path.begin() + static_cast<ptrdiff_t>(depth) + 1);
  }
  size_t memory() const {
    size_t bytes = (bits.size() + tokens.size() + frontier.size()) * sizeof(uint32_t) +
                   paths.size() + state_parts.size() * sizeof(const PureWalk*) +
                   (owned_short_part != nullptr ? owned_short_part->memory() : 0);
    for (const auto& part : owned_state_parts) bytes += part->memory();
    return bytes;
  }

 private:
  void write_own_to(uint32_t* words) const {
    const std::vector<uint32_t>* base = !bits.empty() ? &bits : slice;
    if (base != nullptr)
      for (size_t i = 0; i < base->size(); ++i) words[i] |= (*base)[i];
    if (bits.empty())
      for (uint32_t id : tokens) set_bit(words, id);
  }
};

// Walk classes: two pure states are in one class when no path of at most
// `depth` bytes (the longest token plus one) tells them apart, counting only
// whether each step reaches no state, a pure state or an impure one. Their
// PureWalks are then identical, so walks are cached by class: the copies of
// a string body in every property of a schema share one walk. (The large
// rules that WalkClasses classes on first use are classed each on its own:
// their states share no class with another rule's.)
inline constexpr uint32_t kImpureClass = 0;
// Only the states flagged in `taking_part` (pure ones) are classed, the
// others are kImpureClass; `short_classes` receives the same at
// TextSlice::kShortLength + 1 bytes, the classes of split walks' short parts.
std::vector<uint32_t> compute_walk_classes(const ByteGrammar& grammar, size_t depth,
                                           const std::vector<uint8_t>& taking_part,
                                           uint32_t& num_classes,
                                           std::vector<uint32_t>& short_classes,
                                           uint32_t& num_short_classes);

// Local classes: the same refinement over every state, telling states apart
// also by finality and by their rule edges (a call to a rule that may derive
// nothing by its exact target). Two states in one class read the same within
// `depth` bytes as Earley items, whatever they call and complete, so the
// local walks of sets whose items agree in class and origin are equal: the
// positions of a string of at most N characters whose characters are rule
// calls share one walk while N is far.
// `short_classes`: the same at TextSlice::kShortLength + 1 bytes.
std::vector<uint32_t> compute_local_classes(const ByteGrammar& grammar, size_t depth,
                                            std::vector<uint32_t>& short_classes);
// Whether the grammar has such a chain (a state calling a rule, the state
// after the call calling it again, and so on) of more than `depth` calls,
// within a size where refining pays. Each call reads a byte at least, so
// on a shorter chain every position is within `depth` bytes of the end
// and no two share a class.
bool has_call_chains(const ByteGrammar& grammar, size_t depth);
std::vector<uint32_t> identity_classes(const ByteGrammar& grammar);
// See CompiledGrammarData::waiter_class.
constexpr uint32_t kNotWaiting = 0;
std::vector<uint32_t> waiter_classes(const ByteGrammar& grammar);
// Fills CompiledGrammarData::plain_caller and plain_callee_bytes.
void plain_callers(const ByteGrammar& grammar, const TextClosure& closure,
                   std::vector<uint32_t>& plain_caller, std::vector<ByteSet>& callee_bytes);
// Per walk class: whether its short class (compute_walk_classes) holds
// another walk class too, so that a split walk shares its short part.
std::vector<uint8_t> split_classes(const std::vector<uint32_t>& walk_class, uint32_t num_classes,
                                   const std::vector<uint32_t>& short_class,
                                   uint32_t num_short_classes);

// The PureWalk from one pure state. Gives up (returning false) once it has
// visited more than `budget` trie nodes; `visited` receives the count.
// The transitions trie walks follow: the grammar's table, and whether each
// DFA state is pure (a walk stops at an impure one, left to the Earley
// engine). Built once per CompiledGrammar.
struct PureTransitions {
  uint8_t byte_class[256] = {};
  // ByteGrammar::narrow_table() or, when that is null, wide_table().
  const uint16_t* narrow_table = nullptr;
  const uint32_t* wide_table = nullptr;
  uint32_t width = 0;             // byte classes
  const uint8_t* pure = nullptr;  // CompiledGrammarData::pure, which outlives this

  PureTransitions(const ByteGrammar& grammar, const std::vector<uint8_t>& pure_states);
};

// Nodes deeper than walk.depth_cap are skipped (a split walk's short part).
bool walk_from_state(const PureTransitions& transitions, const TokenTrie& trie,
                     size_t vocabulary_size, uint32_t start, uint64_t budget, PureWalk& walk,
                     uint64_t& visited);

// Every state reachable from a rule start, breadth-first (root rule first),
// one at a time: the precompute budget is often spent after a few dozen of
// thousands of states.
class BreadthFirstStates {
 public:
  explicit BreadthFirstStates(const ByteGrammar& grammar);
  // The next state, or kNoState once every state was returned.
  uint32_t next();

 private:
  void visit(uint32_t state);

  const ByteGrammar& grammar_;
  std::vector<uint8_t> seen_;
  std::vector<uint32_t> order_;  // found so far; order_[head_] is the next
  size_t head_ = 0;
};

// The walk classes of a CompiledGrammar's pure states. A transition never
// leaves its rule, so each rule can be classed on its own. A grammar of at
// most kEagerStates pure states is classed at compile time, in one
// refinement (copies of a fragment in different rules then share a class
// and its walks); in a larger one, so are the rules of at most
// kLazyRuleStates pure states, and each larger rule (the thousands of
// states of a bounded string or of an email format: most of the
// refinement's cost) is classed on first use, on its own: a decode that
// never enters it never pays for it. (Not past kMaxLazyRuleStates: classing
// that many takes about 20 ms, more than one mask should pay.) Ids: the
// compiled classes first, then a range per large rule, as long as its pure
// states. Thread-safe: a rule is classed once, under its once_flag, and its
// states' classes are stored last, with release, so that a reader who sees
// one sees the rest.
class WalkClasses {
 public:
  static constexpr uint32_t kEagerStates = 4096;
  static constexpr uint32_t kLazyRuleStates = 1024;
  static constexpr uint32_t kMaxLazyRuleStates = 65536;
  static constexpr uint32_t kNotYet = UINT32_MAX;

  WalkClasses(const ByteGrammar& grammar, const std::vector<uint8_t>& pure, size_t depth);

  // The class of pure state `s`, classing its rule first if needed.
  uint32_t of(uint32_t s) const {
    const uint32_t cls = class_[s].load(std::memory_order_acquire);
    return cls != kNotYet ? cls : of_new_rule(s);
  }
  // The same without classing: kNotYet where the rule is not classed yet.
  uint32_t known(uint32_t s) const { return class_[s].load(std::memory_order_acquire); }
  // Once of(s) returned: its class at kShortLength + 1 bytes, and whether
  // walks of its class are split (the short class holds another class).
  uint32_t short_of(uint32_t s) const { return short_class_[s]; }
  bool split(uint32_t cls) const { return split_[cls] != 0; }
  // Bounds of the ids (kImpureClass included).
  uint32_t num_classes() const noexcept { return num_classes_; }
  uint32_t num_short_classes() const noexcept { return num_short_classes_; }

 private:
  struct LargeRule {
    uint32_t rule;
    uint32_t class_base;  // its classes are class_base + 1, ...
    uint32_t short_base;
  };
  uint32_t of_new_rule(uint32_t s) const;
  void class_rule(const LargeRule& large) const;

  const ByteGrammar& grammar_;
  const std::vector<uint8_t>& pure_;
  const size_t depth_;
  std::unique_ptr<std::atomic<uint32_t>[]> class_;  // per state
  mutable std::vector<uint32_t> short_class_;       // per state
  mutable std::vector<uint8_t> split_;              // per class
  static constexpr uint32_t kSmallRule = UINT32_MAX;
  std::vector<uint32_t> large_index_;  // per rule: into large_, or kSmallRule
  std::vector<LargeRule> large_;
  std::unique_ptr<std::once_flag[]> classed_;  // per large rule
  uint32_t num_classes_ = 1;
  uint32_t num_short_classes_ = 1;
};

// The walk of each class, shared by every Matcher of a CompiledGrammar:
// filled at compile time within the precompute budget, then by the first
// Matcher that needs one. Slots are published with a compare-and-swap and
// never change afterwards, so readers take no lock. A class has a slot per
// TextCover: how much of the text slice the states allow is a property of
// the states, not of the class (it looks past the class's pure stretch).
class ClassWalks {
 public:
  // Memory for walks published after compiling.
  static constexpr size_t kMaxSharedBytes = size_t{64} << 20;

  explicit ClassWalks(size_t classes)
      : slots_(std::make_unique<std::atomic<const PureWalk*>[]>(kTextCovers * classes)),
        size_(kTextCovers * classes) {
    for (size_t i = 0; i < size_; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
  }
  ~ClassWalks() {
    for (size_t i = 0; i < size_; ++i) delete slots_[i].load(std::memory_order_relaxed);
  }
  ClassWalks(const ClassWalks&) = delete;
  ClassWalks& operator=(const ClassWalks&) = delete;

  const PureWalk* find(uint32_t cls, TextCover cover) const {
    return slots_[slot(cls, cover)].load(std::memory_order_acquire);
  }

  // Publishes `walk` for `cls` (taking it) and returns the walk now in the
  // slot, which is another thread's if it was first. Returns nullptr, and
  // leaves `walk` alone, once kMaxSharedBytes are spent (unless forced, as
  // at compile time, whose budget is separate).
  const PureWalk* publish(uint32_t cls, TextCover cover, std::unique_ptr<PureWalk>& walk,
                          bool forced = false) {
    const size_t bytes = walk->memory();
    if (bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes > kMaxSharedBytes && !forced) {
      bytes_.fetch_sub(bytes, std::memory_order_relaxed);
      return nullptr;
    }
    const PureWalk* expected = nullptr;
    if (slots_[slot(cls, cover)].compare_exchange_strong(expected, walk.get(),
                                                         std::memory_order_acq_rel)) {
      return walk.release();
    }
    bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    walk.reset();
    return expected;
  }

 private:
  static size_t slot(uint32_t cls, TextCover cover) { return kTextCovers * size_t{cls} + cover; }
  std::unique_ptr<std::atomic<const PureWalk*>[]> slots_;
  size_t size_;
  std::atomic<size_t> bytes_{0};
};

struct KeyHash {
  size_t operator()(const std::vector<uint64_t>& key) const noexcept {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ key.size();
    for (uint64_t k : key) {
      h ^= k + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdULL;
    }
    return static_cast<size_t>(h ^ (h >> 32));
  }
};

// Walks keyed by parser-state content (a set of several walk classes, or a
// set's local key), shared by the Matchers of a CompiledGrammar under a
// reader-writer lock, up to ClassWalks::kMaxSharedBytes. Entries are never
// removed, so the pointers handed out stay valid as long as the grammar.
class SharedWalks {
 public:
  const PureWalk* find(const std::vector<uint64_t>& key) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = walks_.find(key);
    return it == walks_.end() ? nullptr : it->second.get();
  }

  // Publishes `walk` (taking it) and returns the walk now stored under
  // `key`, which is another thread's if it was first; nullptr, leaving
  // `walk` alone, once the memory is spent.
  const PureWalk* publish(const std::vector<uint64_t>& key, std::unique_ptr<PureWalk>& walk) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    if (auto it = walks_.find(key); it != walks_.end()) {
      walk.reset();
      return it->second.get();
    }
    const size_t bytes = walk->memory() + key.size() * sizeof(uint64_t);
    if (bytes_ + bytes > ClassWalks::kMaxSharedBytes) return nullptr;
    bytes_ += bytes;
    const PureWalk* stored = walk.get();
    walks_.emplace(key, std::move(walk));
    return stored;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::vector<uint64_t>, std::unique_ptr<const PureWalk>, KeyHash> walks_;
  size_t bytes_ = 0;
};

struct CompiledGrammarData {
  CompiledGrammarData(std::shared_ptr<const ByteGrammar> lowered, Vocabulary vocab,
                      uint64_t mask_work)
      : grammar(std::move(lowered)), vocabulary(std::move(vocab)), max_mask_work(mask_work) {}

  std::shared_ptr<const ByteGrammar> grammar;
  Vocabulary vocabulary;
  uint64_t max_mask_work = 0;  // CompileOptions::max_mask_work
  std::vector<uint8_t> pure;   // per DFA state: pure_states()
  std::unique_ptr<const WalkClasses> walk_classes;
  // Per DFA state: a rule start or the target of a rule edge, the states
  // an Earley item can enter by prediction or completion.
  std::vector<uint8_t> entered_by_rule;
  // Per DFA state: its waiter class, equal for states with the same rule
  // edges (rule, target), or kNotWaiting without any. Completing a rule
  // into a set reads no more of its items than that.
  std::vector<uint32_t> waiter_class;
  // Per DFA state: kNotPlainCaller, or where in plain_callee_bytes the
  // first bytes of the rules it calls are, for a plain caller (see
  // MatcherState::plain_caller). Computed once: the fast path asks at
  // every step through whitespace before a nested value.
  static constexpr uint32_t kNotPlainCaller = UINT32_MAX;
  std::vector<uint32_t> plain_caller;
  std::vector<ByteSet> plain_callee_bytes;
  std::unique_ptr<const PureTransitions> pure_transitions;
  std::unique_ptr<const TextClosure> text_closure;
  std::unique_ptr<ClassWalks> class_walks;
  std::unique_ptr<SharedWalks> shared_walks;

  // The short parts of split walks (see PureWalk) by short class.
  std::unique_ptr<ClassWalks> short_class_walks;

  // The trie a walk from states with text cover `cover` needs (the rest of
  // the text slice or of its short tier; `walk` then allows that part),
  // else the whole trie. Sets walk.trie.
  const TokenTrie& trie_for(TextCover cover, PureWalk& walk) const {
    const TextSlice& slice = VocabularyAccess::text_slice(vocabulary);
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
        walk.trie = &VocabularyAccess::trie(vocabulary);
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
    if (cover != kNoText) walk.trie = &VocabularyAccess::text_slice(vocabulary).rest;
    return *walk.trie;
  }
  const TokenTrie& long_trie_for(TextCover cover, PureWalk& walk) const {
    const TextSlice& slice = VocabularyAccess::text_slice(vocabulary);
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

  // walk_from_state from pure state `s`, over the trie trie_for picks; a
  // split walk when its class is split, taking the short part from
  // short_class_walks or walking it and publishing it there (`forced`: see
  // ClassWalks::publish). Gives up past `budget` nodes.
  bool walk_pure_state(uint32_t s, TextCover cover, uint64_t budget, PureWalk& walk,
                       uint64_t& visited, bool forced) const {
    visited = 0;
    // The last characters of a bounded string: the plain tokens short
    // enough are allowed and the longer ones refused, so only the tokens
    // outside the slice are walked (a tenth of the trie), and the walk is
    // still exactly the state's.
    if (cover == kNoText) {
      if (const uint32_t chars = text_closure->plain_chars(s, pure); chars != 0) {
        const TextSlice& slice = VocabularyAccess::text_slice(vocabulary);
        walk.slice = &slice.tier_words[chars - 1];
        walk.trie = &slice.rest;
        return walk_from_state(*pure_transitions, slice.rest, vocabulary.size(), s, budget, walk,
                               visited);
      }
    }
    if (walk_classes->split(walk_classes->of(s))) {
      const uint32_t short_class = walk_classes->short_of(s);
      const PureWalk* short_part = short_class_walks->find(short_class, cover);
      std::unique_ptr<PureWalk> owned;
      if (short_part == nullptr) {
        owned = std::make_unique<PureWalk>();
        const TokenTrie& trie = short_trie_for(cover, *owned);
        if (!walk_from_state(*pure_transitions, trie, vocabulary.size(), s, budget, *owned,
                             visited))
          return false;
        budget -= visited;
        short_part = short_class_walks->publish(short_class, cover, owned, forced);
      }
      uint64_t long_visited = 0;
      const TokenTrie& trie = long_trie_for(cover, walk);
      const bool done = walk_from_state(*pure_transitions, trie, vocabulary.size(), s, budget, walk,
                                        long_visited);
      visited += long_visited;
      walk.attach_short_part(short_part, owned);
      return done;
    }
    const TokenTrie& trie = trie_for(cover, walk);
    return walk_from_state(*pure_transitions, trie, vocabulary.size(), s, budget, walk, visited);
  }
};

namespace {

constexpr uint32_t kUnknownId = UINT32_MAX;
// Marks an item predicted in the set itself in a structure key.
constexpr uint64_t kSelfOrigin = UINT32_MAX;
// A context id key's first word (its depth in the low bits), and the origin
// that stands for any set at depth 0.
constexpr uint64_t kContextTag = uint64_t{1} << 63;
constexpr uint64_t kWaiterTag = uint64_t{1} << 62;
constexpr uint64_t kContextStandIn = uint64_t{UINT32_MAX} - 1;
// A set_id label that leaves its item out of the key.
constexpr uint64_t kSkipItem = UINT64_MAX;
// Mask cache budget per matcher.
constexpr size_t kMaskCacheBytes = size_t{32} << 20;
// The least trie size that CompileOptions::precompute_budget counts in.
constexpr size_t kBudgetTrieNodes = size_t{1} << 17;

}  // namespace

// A mask kept by a Matcher's mask cache: its nonzero words as (index, word)
// pairs when that is much smaller than the words themselves. The masks that miss
// every walk cache (between members, after a value, at a new nesting depth)
// allow a few hundred tokens, so an entry takes a few KB instead of the
// vocabulary's 12.8 KB (deepseek-llm), and a first visit touches that much
// less fresh memory: on a virtual machine each new page is a fault that
// costs microseconds.
class CachedMask {
 public:
  // `scratch` is working room that the caller keeps between masks.
  CachedMask(const uint32_t* words, size_t n_words, std::vector<uint32_t>& scratch) {
    // One pass: chunks of 16 zero words (a cache line) are skipped, as most
    // of a sparse mask is; in the others, the nonzero words are found by
    // SSE2 compares (a sparse chunk holds a word or two: visiting those
    // alone costs a quarter of compacting all 16), else by a branchless
    // compaction; and the pass gives up for a plain copy once an eighth of
    // the words are nonzero (the pairs would save less than 3/4 of the
    // words, and a dense mask, a string body's, is given up on early).
    constexpr size_t kChunk = 16;
    const size_t most_pairs = n_words / 8;
    scratch.resize(2 * most_pairs + 2 * kChunk);  // (a chunk may write past the end)
    uint32_t* out = scratch.data();
    const uint32_t* const full = out + 2 * most_pairs;
    auto compact = [&](size_t first, size_t count) {
      for (size_t k = first; k < first + count; ++k) {
        out[0] = static_cast<uint32_t>(k);
        out[1] = words[k];
        out += 2 * size_t{words[k] != 0};
      }
    };
    size_t i = 0;
    for (; i + kChunk <= n_words && out < full; i += kChunk) {
#if defined(__SSE2__)
      // Bit k: word i + k is zero. (SSE2 is baseline on x86-64.)
      uint32_t zero_words = 0;
      for (size_t q = 0; q < kChunk; q += 4) {
        const __m128i four = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words + i + q));
        const __m128i is_zero = _mm_cmpeq_epi32(four, _mm_setzero_si128());
        zero_words |= static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(is_zero))) << q;
      }
      for (uint32_t nonzero = ~zero_words & 0xFFFFu; nonzero != 0; nonzero &= nonzero - 1) {
        const size_t k = i + static_cast<size_t>(__builtin_ctz(nonzero));
        out[0] = static_cast<uint32_t>(k);
        out[1] = words[k];
        out += 2;
      }
#else
      uint32_t any = 0;
      for (size_t k = 0; k < kChunk; ++k) any |= words[i + k];
      if (any != 0) compact(i, kChunk);
#endif
    }
    if (out < full) compact(i, n_words - i);
    sparse_ = out < full;
    if (sparse_) {
      data_.assign(scratch.data(), out);
    } else {
      data_.assign(words, words + n_words);
    }
  }

  // Writes the mask over all of words[0, n_words) (n_words is at least the
  // count it was made from).
  void write_over(uint32_t* words, size_t n_words) const {
    if (!sparse_) {
      std::copy(data_.begin(), data_.end(), words);
      std::fill(words + data_.size(), words + n_words, 0);
      return;
    }
    std::fill(words, words + n_words, 0);
    for (size_t i = 0; i < data_.size(); i += 2) words[data_[i]] = data_[i + 1];
  }

  size_t bytes() const {
    return data_.size() * sizeof(uint32_t);
  }

 private:
  std::vector<uint32_t> data_;
  bool sparse_ = false;
};

// Everything a Matcher owns. The mask cache is keyed by a structural id of
// the parser state: two positions whose Earley sets hold the same items with
// structurally equal origin sets have the same future, so the same mask.
class MatcherState {
 public:
  using WalkCache = std::unordered_map<std::vector<uint64_t>, PureWalk, KeyHash>;

  explicit MatcherState(std::shared_ptr<const CompiledGrammarData> data)
      : data_(std::move(data)), engine_(data_->grammar) {}

  const CompiledGrammarData& data() const { return *data_; }
  const std::shared_ptr<const CompiledGrammarData>& shared_data() const { return data_; }

  Status fill_mask(uint32_t* words, size_t n_words) {
    const Vocabulary& vocab = data_->vocabulary;
    const size_t needed = mask_words(vocab.size());
    if (words == nullptr || n_words < needed) {
      return Status(ErrorCode::kInvalidArgument,
                    "mask buffer too small: " + std::to_string(n_words) + " words given, " +
                        std::to_string(needed) + " needed for " + std::to_string(vocab.size()) +
                        " tokens");
    }
    if (terminated()) {
      std::fill(words, words + n_words, 0);
      for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
      return Status();
    }
    // Inside a pure DFA stretch whose cached walk has no frontier, the mask
    // depends on the DFA states alone.
    if (top_set_pure_key()) {
      const PureWalk* pure = cached_pure_walk();
      if (pure != nullptr && !pure->has_frontier()) {
        ++hits_;
        pure->write_over(words, n_words);
        // Pure states of the root may end it.
        if (engine_.is_accepting())
          for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
        return Status();
      }
    }
    const size_t top = engine_.size();
    // (Sets that agree at some depth agree at depth 1: a top set whose id
    // there is new has no entry at any depth.)
    const bool seen_top = context_depths_ != 0 && context_tops_.count(context_id(top, 1)) != 0;
    for (size_t depth = 1; seen_top && depth <= kMaxContextDepth; ++depth) {
      if ((context_depths_ & (1u << depth)) == 0) continue;
      auto bounded = context_cache_.find(context_id(top, depth));
      if (bounded == context_cache_.end()) continue;
      ++hits_;
      bounded->second.write_over(words, n_words);
      if (engine_.is_accepting())
        for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
      return Status();
    }
    if (!mask_cache_.empty()) {
      auto cached = mask_cache_.find(structure_id(top));
      if (cached != mask_cache_.end()) {
        ++hits_;
        cached->second.write_over(words, n_words);
        return Status();
      }
    }
    ++misses_;
    std::fill(words, words + n_words, 0);
    engine_.start_read_log(top);
    const bool within_limit = walk_trie(words);
    engine_.stop_read_log();
    if (!within_limit) {
      std::memset(words, 0, n_words * sizeof(uint32_t));
      return Status(ErrorCode::kLimitExceeded,
                    "mask computation exceeded the work limit (CompileOptions::max_mask_work = " +
                        std::to_string(data_->max_mask_work) + ")");
    }
    // A mask that read only the few sets nearest the top is kept by its
    // context id, without the stop tokens (whether the root may end here
    // is not in that id), else by the whole stack's structure.
    const size_t depth = engine_.read_log_overflowed() ? kMaxContextDepth + 1
                                                       : context_depth(engine_.read_log(), top);
    if (depth <= kMaxContextDepth) {
      remember_mask(context_cache_, context_id(top, depth), words, needed);
      context_depths_ |= 1u << depth;
      context_tops_.insert(context_id(top, 1));
    }
    if (engine_.is_accepting())
      for (uint32_t stop : vocab.stop_tokens()) set_bit(words, stop);
    if (depth > kMaxContextDepth) remember_mask(mask_cache_, structure_id(top), words, needed);
    return Status();
  }

  bool is_token_allowed(uint32_t token) {
    const Vocabulary& vocab = data_->vocabulary;
    if (token >= vocab.size()) return false;
    if (vocab.is_stop(token)) return terminated() || engine_.is_accepting();
    if (terminated() || vocab.is_special(token)) return false;
    const std::string_view bytes = vocab.token_bytes(token);
    if (bytes.empty()) return false;
    const size_t base = engine_.size();
    bool ok = true;
    for (size_t i = 0; i < bytes.size() && ok; ++i)
      ok = engine_.push_byte(static_cast<uint8_t>(bytes[i]));
    truncate(base);
    return ok;
  }

  Status accept_token(uint32_t token) {
    const Vocabulary& vocab = data_->vocabulary;
    if (token >= vocab.size()) {
      return Status(ErrorCode::kInvalidArgument, "token id " + std::to_string(token) +
                                                     " is out of range (vocabulary has " +
                                                     std::to_string(vocab.size()) + " tokens)");
    }
    if (vocab.is_stop(token)) {
      if (!terminated() && !engine_.is_accepting()) {
        return Status(ErrorCode::kInvalidArgument,
                      "stop token " + std::to_string(token) + " refused: the output is incomplete");
      }
      if (!terminated()) terminated_at_ = token_ends_.size();
      token_ends_.push_back(engine_.size());
      return Status();
    }
    if (terminated()) {
      return Status(ErrorCode::kInvalidState,
                    "token " + std::to_string(token) + " refused: the matcher has terminated");
    }
    if (vocab.is_special(token)) {
      return Status(ErrorCode::kInvalidArgument,
                    "special token " + std::to_string(token) + " never matches grammar text");
    }
    const std::string_view bytes = vocab.token_bytes(token);
    if (bytes.empty() || !push_all(bytes)) {
      if (engine_.work_limit_hit()) return work_limit_status("token " + std::to_string(token));
      return Status(ErrorCode::kInvalidArgument,
                    "token " + std::to_string(token) + " is not allowed here");
    }
    token_ends_.push_back(engine_.size());
    return Status();
  }

  Status accept_bytes(std::string_view bytes) {
    if (terminated()) {
      return Status(ErrorCode::kInvalidState, "bytes refused: the matcher has terminated");
    }
    if (!push_all(bytes)) {
      if (engine_.work_limit_hit()) return work_limit_status("bytes");
      return Status(ErrorCode::kInvalidArgument, "bytes not allowed here");
    }
    token_ends_.push_back(engine_.size());
    return Status();
  }

  Status rollback(size_t n) {
    if (n > token_ends_.size()) {
      return Status(ErrorCode::kInvalidArgument,
                    "cannot roll back " + std::to_string(n) + " tokens: only " +
                        std::to_string(token_ends_.size()) + " accepted");
    }
    token_ends_.resize(token_ends_.size() - n);
    if (terminated_at_ != kNotTerminated && terminated_at_ >= token_ends_.size())
      terminated_at_ = kNotTerminated;
    truncate(token_ends_.empty() ? 0 : token_ends_.back());
    return Status();
  }

  void reset() {
    token_ends_.clear();
    terminated_at_ = kNotTerminated;
    truncate(0);
  }

  size_t num_tokens() const { return token_ends_.size(); }
  bool is_accepting() const { return engine_.is_accepting(); }
  bool terminated() const { return terminated_at_ != kNotTerminated; }

  std::string forced_bytes(size_t max_bytes) {
    std::string out;
    if (terminated()) return out;
    const size_t base = engine_.size();
    while (out.size() < max_bytes && !engine_.is_accepting()) {
      const ByteSet& scan = engine_.scan();
      int only = -1;
      for (int b = 0; b < 256; ++b) {
        if (!scan.test(static_cast<uint8_t>(b))) continue;
        if (only >= 0) {
          only = -2;
          break;
        }
        only = b;
      }
      if (only < 0 || !engine_.push_byte(static_cast<uint8_t>(only))) break;
      out.push_back(static_cast<char>(only));
    }
    truncate(base);
    return out;
  }

  size_t hits() const { return hits_; }
  size_t misses() const { return misses_; }

 private:
  static constexpr size_t kNotTerminated = SIZE_MAX;
  // Sets with more items than this always go through the engine.
  static constexpr ptrdiff_t kMaxFastItems = 16;
  // Pure sets of at most this many states take the union of their states'
  // walks (top_set_pure_walk).
  static constexpr size_t kMaxUnionStates = 3;

  Status work_limit_status(const std::string& what) const {
    return Status(ErrorCode::kLimitExceeded,
                  what +
                      " refused: one byte exceeded the work limit "
                      "(RecognizerOptions::max_work_per_byte = " +
                      std::to_string(data_->grammar->max_work_per_byte()) + ")");
  }

  bool push_all(std::string_view bytes) {
    const size_t base = engine_.size();
    for (char c : bytes) {
      if (!engine_.push_byte(static_cast<uint8_t>(c))) {
        truncate(base);
        return false;
      }
    }
    return true;
  }

  void truncate(size_t length) {
    engine_.truncate(length);
    if (structure_ids_.size() > length + 1) structure_ids_.resize(length + 1);
    if (context_ids_.size() > length + 1) context_ids_.resize(length + 1);
  }

  // Depth-first walk of the token trie over the Earley stack: a child whose
  // byte the current set cannot scan is skipped with its whole subtree, and
  // a leaf needs no new set at all (the scan bit already proves the token).
  //
  // Fast path: while every item of the parse sits in a "pure" state (one
  // that neither ends its rule nor calls another), the next set is just
  // those items advanced, so the walk follows plain DFA transitions on the
  // (few) states and builds no Earley sets. It falls back to the engine,
  // replaying the path's bytes, only where some state needs completion or
  // prediction; and below an engine set, it carries on the fast path the
  // items that need no engine, sending to the engine only the bytes the
  // others can read (follow_from_engine). Those items include "plain
  // callers", which call rules but cannot end their own (the whitespace
  // before a nested value): the bytes their callees may begin with go to
  // the engine, their own steps stay on the fast path (plain_caller).
  //
  // Walks from states that read all plain text allow the text slice in bulk
  // and read only the trie of the other tokens (text_slice.h).
  //
  // When the top set itself is all pure (inside a string, a number, a
  // keyword), that DFA part of the walk depends on the states alone, not on
  // where the rule was called from, so it is cached by their walk classes
  // (precomputed at compile time where the budget allowed; see PureWalk)
  // and only the frontier subtrees, where the rule may end, go through the
  // engine. Otherwise the part that stays above the top set is cached by
  // the set's local key (top_set_local_walk), and again only the frontier
  // goes through the engine with the real stack.
  //
  // Returns false when the walk would exceed CompileOptions::max_mask_work
  // (trie nodes visited plus Earley work); the mask is then incomplete.
  bool walk_trie(uint32_t* words) {
    const TokenTrie& trie = VocabularyAccess::trie(data_->vocabulary);
    // Per-depth scratch. No need to clear it: a walk writes a depth's
    // entries at the node of that depth before it visits the node's
    // children, the only readers (walk_frontier, for a frontier node).
    const size_t max_depth = trie.max_depth() + 1;
    if (path_.size() != max_depth + 1) {
      fast_begin_.assign(max_depth + 1, 0);
      fast_end_.assign(max_depth + 1, 0);
      following_.assign(max_depth + 1, 0);
      follow_.assign(max_depth + 1, ByteSet());
      fast_scan_.assign(max_depth + 1, ByteSet());
      scan_ready_.assign(max_depth + 1, 0);
      path_.assign(max_depth + 1, 0);
    }
    pool_.clear();
    const uint64_t work = engine_.work();
    const uint64_t deadline =
        work + data_->max_mask_work < work ? UINT64_MAX : work + data_->max_mask_work;
    engine_.set_work_deadline(deadline);
    const size_t base = engine_.size();
    bool within_limit;
    const PureWalk* walk = top_set_pure_walk(deadline);
    if (walk == nullptr && engine_.work() <= deadline) walk = top_set_local_walk(base, deadline);
    if (walk != nullptr) {
      walk->write_to(words);
      within_limit = engine_.work() <= deadline && walk_frontier(*walk, words, base, deadline);
    } else {
      within_limit = false;
    }
    engine_.set_work_deadline(UINT64_MAX);
    engine_.truncate(base);
    return within_limit;
  }

  // Appends the successors of [from_begin, from_end) on `byte` to pool_
  // (deduplicated from out_begin on); returns whether all are pure.
  bool advance(const uint32_t* from_begin, const uint32_t* from_end, uint8_t byte,
               size_t out_begin) {
    const ByteGrammar& grammar = *data_->grammar;
    // The sources usually live in pool_ itself, which push_back may move
    // (a use after free the matcher fuzzer found): read them from a copy,
    // on the stack in the usual case of at most kMaxFastItems states.
    const size_t count = static_cast<size_t>(from_end - from_begin);
    uint32_t local[kMaxFastItems];
    const uint32_t* sources = local;
    if (count <= kMaxFastItems) {
      std::copy(from_begin, from_end, local);
    } else {
      sources_.assign(from_begin, from_end);
      sources = sources_.data();
    }
    bool all_pure = true;
    for (size_t i = 0; i < count; ++i) {
      const uint32_t source = sources[i];
      const uint32_t next = grammar.next(source, byte);
      if (next == kNoState) continue;
      if (std::find(pool_.begin() + out_begin, pool_.end(), next) != pool_.end()) continue;
      pool_.push_back(next);
      all_pure &= data_->pure[next] != 0;
    }
    return all_pure;
  }

  // Walks trie nodes [first, last) of *walk_trie_, a run of whole subtrees
  // whose parent depth the engine or the fast path already holds.
  bool walk_nodes(uint32_t first, uint32_t last, uint32_t* words, size_t base, uint64_t deadline) {
    const auto& nodes = walk_trie_->nodes();
    const auto& ids = walk_trie_->token_ids();
    for (uint32_t i = first; i < last;) {
      engine_.charge(1);
      if (engine_.work() > deadline) return false;
      const TokenTrie::Node& node = nodes[i];
      const size_t depth = node.depth;
      if (depth > depth_cap_) {  // (a split walk's short part)
        i = node.subtree_end;
        continue;
      }
      const bool has_children = node.subtree_end != i + 1;
      if (engine_.size() > base + depth - 1) engine_.truncate(base + depth - 1);
      if (fast_end_[depth - 1] > fast_begin_[depth - 1]) {
        const bool following = following_[depth - 1] != 0;
        if (following && follow_[depth - 1].test(node.byte)) {
          // The byte may go on after the followed rule ends: the engine
          // decides this child, from the parent's set.
          for (size_t d = engine_.size() - base + 1; d < depth; ++d)
            if (!engine_.push_byte(path_[d])) return false;
        } else if (scan_ready_[depth - 1] && !fast_scan_[depth - 1].test(node.byte)) {
          // No state on the fast path reads it: skip it and the dead
          // siblings after it in a tight loop (most children of the root,
          // or of ' ' in whitespace, die at once).
          const ByteSet& scan = fast_scan_[depth - 1];
          const ByteSet& follow = follow_[depth - 1];
          i = skip_dead_siblings(node.subtree_end, last, depth, [&](uint8_t byte) {
            return !scan.test(byte) && !(following && follow.test(byte));
          });
          continue;
        } else {
          // The parent is on the fast path.
          pool_.resize(fast_end_[depth - 1]);
          const size_t out = pool_.size();
          Advanced advanced;
          if (following) {
            advanced = advance_followed(fast_begin_[depth - 1], fast_end_[depth - 1], node.byte);
          } else {
            advanced = advance(pool_.data() + fast_begin_[depth - 1],
                               pool_.data() + fast_end_[depth - 1], node.byte, out)
                           ? kStaysFast
                           : kNeedsEngine;
          }
          if (pool_.size() == out) {
            // A dead child: its siblings are tested by byte from now on.
            if (!scan_ready_[depth - 1]) set_fast_scan(depth - 1);
            i = node.subtree_end;
            continue;
          }
          for (uint32_t t = node.tokens_begin, end = nodes[i + 1].tokens_begin; t < end; ++t)
            set_bit(words, ids[t]);
          fast_begin_[depth] = fast_end_[depth] = static_cast<uint32_t>(out);
          following_[depth] = kNotFollowing;
          if (has_children) {
            path_[depth] = node.byte;
            if (advanced != kNeedsEngine) {
              fast_end_[depth] = static_cast<uint32_t>(pool_.size());
              following_[depth] = following;
              follow_[depth] = follow_[depth - 1];
              scan_ready_[depth] = 0;
              if (advanced == kStaysFastWithCallers) {
                follow_[depth] |= callee_bytes_;
                following_[depth] = kFollowingCallers;
                set_fast_scan(depth);
              }
            } else {
              // Materialize the fast-path bytes in the engine, then this
              // byte (the DFA proved them, so only a work bound can refuse
              // one).
              for (size_t d = engine_.size() - base + 1; d <= depth; ++d)
                if (!engine_.push_byte(path_[d])) return false;
              if (cut_at_floor(i, depth)) {
                i = node.subtree_end;
                continue;
              }
              follow_from_engine(depth, out);
            }
          }
          ++i;
          continue;
        }
      }
      const ByteSet& scan = engine_.scan();
      if (!scan.test(node.byte)) {
        // Skip it and the dead siblings after it in a tight loop: few of
        // a node's children survive a set's scan.
        i = skip_dead_siblings(node.subtree_end, last, depth,
                               [&](uint8_t byte) { return !scan.test(byte); });
        continue;
      }
      for (uint32_t t = node.tokens_begin, end = nodes[i + 1].tokens_begin; t < end; ++t)
        set_bit(words, ids[t]);
      if (has_children) {
        path_[depth] = node.byte;
        const size_t top = engine_.size();
        const EarleyItem* first_item = engine_.set_begin(top);
        const EarleyItem* last_item = engine_.set_end(top);
        // (Keeping a fast-path parent's states for its other children.)
        pool_.resize(fast_end_[depth - 1]);
        const size_t out = pool_.size();
        fast_begin_[depth] = fast_end_[depth] = static_cast<uint32_t>(out);
        following_[depth] = kNotFollowing;
        bool all_pure = last_item - first_item <= kMaxFastItems;
        for (const EarleyItem* it = first_item; it != last_item && all_pure; ++it)
          all_pure &= advance(&it->state, &it->state + 1, node.byte, out);
        if (all_pure && pool_.size() > out) {
          fast_end_[depth] = static_cast<uint32_t>(pool_.size());
          scan_ready_[depth] = 0;
        } else {
          pool_.resize(out);
          // The scan bit proved the byte: only a work bound refuses it.
          if (!engine_.push_byte(node.byte)) return false;
          if (cut_at_floor(i, depth)) {
            i = node.subtree_end;
            continue;
          }
          follow_from_engine(depth, out);
        }
      }
      ++i;
    }
    return true;
  }

  // The first of the siblings from node i on (nodes at `depth` before
  // `last`) whose byte is not `dead`, or the end of their run; charges a
  // work unit per node skipped, as the walk does per node visited.
  template <typename Dead>
  uint32_t skip_dead_siblings(uint32_t i, uint32_t last, size_t depth, const Dead& dead) {
    const auto& nodes = walk_trie_->nodes();
    for (; i < last && nodes[i].depth == depth && dead(nodes[i].byte); i = nodes[i].subtree_end)
      engine_.charge(1);
    return i;
  }

  // What a fast-path step made of its states (see advance_followed).
  enum Advanced { kNeedsEngine, kStaysFast, kStaysFastWithCallers };

  // advance() for a followed parent (see follow_from_engine): pool_[begin]
  // is the followed item's state or kNoState, then the pure items' states.
  // Appends the successors in the same layout, or nothing when all die.
  // Returns kNeedsEngine when one needs the engine (the followed item
  // calls a rule, a pure item ends its rule or calls one, unless they are
  // plain callers); kStaysFastWithCallers when plain callers are among the
  // successors, their callees' first bytes then in callee_bytes_.
  // (Inlined: it runs once per trie node on the fast path.)
  [[gnu::always_inline]] Advanced advance_followed(uint32_t begin, uint32_t end, uint8_t byte) {
    const ByteGrammar& grammar = *data_->grammar;
    uint32_t sources[kMaxFastItems + 1];
    const size_t count = std::min<size_t>(end - begin, kMaxFastItems + 1);
    std::copy(pool_.begin() + begin, pool_.begin() + begin + count, sources);
    const size_t out = pool_.size();
    const uint32_t followed = sources[0] == kNoState ? kNoState : grammar.next(sources[0], byte);
    pool_.push_back(followed);
    bool alive = followed != kNoState;
    bool fast = followed == kNoState || grammar.states()[followed].calls_no_rule();
    for (size_t i = 1; i < count; ++i) {
      const uint32_t next = grammar.next(sources[i], byte);
      if (next == kNoState || std::find(pool_.begin() + out + 1, pool_.end(), next) != pool_.end())
        continue;
      pool_.push_back(next);
      alive = true;
      fast &= data_->pure[next] != 0;
    }
    if (!alive) {
      pool_.resize(out);
      return kStaysFast;  // (nothing to advance)
    }
    if (fast) return kStaysFast;
    return only_plain_callers_from(out) ? kStaysFastWithCallers : kNeedsEngine;
  }

  // Whether the fast path's states from pool_[out] on (the followed item
  // first) are pure or plain callers, the latter's callees' first bytes in
  // callee_bytes_. (Out of advance_followed's hot path: rarely true.)
  [[gnu::noinline]] bool only_plain_callers_from(size_t out) {
    const auto& states = data_->grammar->states();
    callee_bytes_ = ByteSet();
    const uint32_t followed = pool_[out];
    if (followed != kNoState && !states[followed].calls_no_rule() &&
        !plain_caller(followed, callee_bytes_))
      return false;
    for (size_t i = out + 1; i < pool_.size(); ++i)
      if (!data_->pure[pool_[i]] && !plain_caller(pool_[i], callee_bytes_)) return false;
    return true;
  }

  // fast_scan_[depth]: the bytes the fast path's states at `depth` read
  // (a child on no other byte, and not one the engine follows, is dead).
  // Set for callers at once, for the others after their first dead child:
  // a node whose children all go on never pays for it.
  void set_fast_scan(size_t depth) {
    const auto& states = data_->grammar->states();
    ByteSet scan;
    for (uint32_t i = fast_begin_[depth]; i < fast_end_[depth]; ++i)
      if (pool_[i] != kNoState) scan |= states[pool_[i]].scan;
    fast_scan_[depth] = scan;
    scan_ready_[depth] = 1;
  }

  // True if an item in `state`, reached by a byte, may stay on the fast
  // path although it calls rules: it cannot end its rule, and no rule it
  // calls derives nothing. Its set then holds it and the predictions of
  // those rules, which can only read their first bytes: these are ORed into
  // `follow`, the bytes that need the engine. (Whitespace before a nested
  // value: each space is a DFA step of the caller, not an Earley set.)
  bool plain_caller(uint32_t state, ByteSet& follow) const {
    const uint32_t at = data_->plain_caller[state];
    if (at == CompiledGrammarData::kNotPlainCaller) return false;
    follow |= data_->plain_callee_bytes[at];
    return true;
  }

  // Once the engine holds the set at `depth`, the walk below may go on
  // the fast path with the items that need no engine: at most one in a
  // final state that calls no rule (the end of a number, a key that may
  // end), followed on its DFA, and pure ones that no completion or
  // prediction can have added (reached by bytes only: a declared key's
  // name beside the key automaton). Everything else in the set (the rules
  // the followed item completed into, calls in progress) can only read the
  // next byte, and ending the followed rule again further down adds the
  // same items again, so only children whose byte one of them scans need
  // the engine: follow_[depth] is that byte set. The states go to pool_
  // from offset `out`, followed item first (kNoState if none).
  void follow_from_engine(size_t depth, size_t out) {
    constexpr ptrdiff_t kMaxFollowItems = 64;
    const size_t top = engine_.size();
    const EarleyItem* first_item = engine_.set_begin(top);
    const EarleyItem* last_item = engine_.set_end(top);
    if (last_item - first_item > kMaxFollowItems) return;
    const auto& states = data_->grammar->states();
    pool_.resize(out);
    pool_.push_back(kNoState);
    ByteSet follow;
    bool callers = false;
    for (const EarleyItem* it = first_item; it != last_item; ++it) {
      const AutomatonState& state = states[it->state];
      if (data_->pure[it->state] && !data_->entered_by_rule[it->state]) {
        if (pool_.size() - out <= kMaxFastItems &&
            std::find(pool_.begin() + out + 1, pool_.end(), it->state) == pool_.end())
          pool_.push_back(it->state);
        else
          follow |= state.scan;
      } else if (state.is_final && state.calls_no_rule() && pool_[out] == kNoState) {
        pool_[out] = it->state;
      } else if (!data_->entered_by_rule[it->state] && pool_.size() - out <= kMaxFastItems &&
                 plain_caller(it->state, follow)) {
        // (Its callees' predictions are in this set too: their bytes need
        // the engine, which plain_caller added to `follow`.)
        if (std::find(pool_.begin() + out + 1, pool_.end(), it->state) == pool_.end())
          pool_.push_back(it->state);
        callers = true;
      } else {
        follow |= state.scan;
      }
    }
    if (pool_[out] == kNoState && pool_.size() == out + 1) {
      pool_.resize(out);
      return;
    }
    fast_begin_[depth] = static_cast<uint32_t>(out);
    fast_end_[depth] = static_cast<uint32_t>(pool_.size());
    following_[depth] = callers ? kFollowingCallers : kFollowing;
    scan_ready_[depth] = 0;
    if (callers) set_fast_scan(depth);
    follow_[depth] = follow;
  }

  // Sets pure_key_ to the sorted walk classes of the top set's DFA states
  // (pure_states_ to the states, pure_cover_ to how much of the text slice
  // they allow) and returns true when they are all pure (and few enough for
  // the fast path).
  bool top_set_pure_key() {
    const WalkClasses& walk_classes = *data_->walk_classes;
    const std::vector<uint8_t>& pure = data_->pure;
    const size_t top = engine_.size();
    const EarleyItem* first = engine_.set_begin(top);
    const EarleyItem* last = engine_.set_end(top);
    if (first == last || last - first > kMaxFastItems) return false;
    pure_key_.clear();
    pure_states_.clear();
    item_states_.clear();
    for (const EarleyItem* it = first; it != last; ++it) {
      if (!pure[it->state]) return false;
      const uint32_t cls = walk_classes.of(it->state);
      item_states_.push_back(it->state);
      if (std::find(pure_key_.begin(), pure_key_.end(), cls) != pure_key_.end()) continue;
      pure_key_.push_back(cls);
      pure_states_.push_back(it->state);
    }
    std::sort(pure_key_.begin(), pure_key_.end());
    pure_cover_ = data_->text_closure->best_cover(item_states_.data(), item_states_.size());
    return true;
  }

  // The walk for pure_key_ from the compile-time table or this matcher's
  // cache, or nullptr.
  const PureWalk* cached_pure_walk() {
    if (pure_key_.size() == 1) {
      if (const PureWalk* walk =
              data_->class_walks->find(static_cast<uint32_t>(pure_key_[0]), pure_cover_))
        return walk;
    }
    if (const PureWalk* walk = data_->shared_walks->find(tagged(pure_tag(), pure_key_)))
      return walk;
    auto it = pure_walks_[pure_cover_].find(pure_key_);
    return it == pure_walks_[pure_cover_].end() ? nullptr : &it->second;
  }

  // `key` with `tag` in front, to tell the kinds of keys apart in
  // SharedWalks (kept in tagged_key_).
  // (Pure keys: one tag per text cover.)
  static constexpr uint64_t kLocalKeyTag = 0, kPureKeyTag = 1,
                            kShortLocalKeyTag = kPureKeyTag + kTextCovers;
  uint64_t pure_tag() const { return kPureKeyTag + pure_cover_; }
  const std::vector<uint64_t>& tagged(uint64_t tag, const std::vector<uint64_t>& key) {
    tagged_key_.assign(1, tag);
    tagged_key_.insert(tagged_key_.end(), key.begin(), key.end());
    return tagged_key_;
  }

  // Publishes `walk` under the tagged key for the other Matchers, or keeps
  // it in `cache` when the shared memory is spent.
  const PureWalk* share(uint64_t tag, WalkCache& cache, const std::vector<uint64_t>& key,
                        PureWalk&& walk) {
    auto owned = std::make_unique<PureWalk>(std::move(walk));
    if (const PureWalk* shared = data_->shared_walks->publish(tagged(tag, key), owned))
      return shared;
    return remember_in(cache, key, std::move(*owned));
  }

  // The PureWalk of the top set when its items are all pure, else nullptr.
  // A miss walks the trie once (charged to the work bound).
  const PureWalk* top_set_pure_walk(uint64_t deadline) {
    if (!top_set_pure_key()) return nullptr;
    if (const PureWalk* cached = cached_pure_walk()) return cached;

    PureWalk walk;
    if (pure_states_.size() == 1) {
      const uint64_t budget = deadline > engine_.work() ? deadline - engine_.work() : 0;
      uint64_t visited = 0;
      const bool done = data_->walk_pure_state(pure_states_[0], pure_cover_, budget, walk, visited,
                                               /*forced=*/false);
      engine_.charge(visited);
      if (!done || engine_.work() > deadline) return nullptr;
      auto owned = std::make_unique<PureWalk>(std::move(walk));
      if (const PureWalk* shared =
              data_->class_walks->publish(static_cast<uint32_t>(pure_key_[0]), pure_cover_, owned))
        return shared;
      return remember_in(pure_walks_[pure_cover_], pure_key_, std::move(*owned));
    }
    // A few states: an item reads a token on its own (the union of their
    // walks), and the engine decides below where one stops being pure
    // (the walks' frontiers, merged, walked from the whole set). Each
    // state's walk is its class's: shared with every set that holds the
    // class, such as the other key starts of an object type. A first visit
    // walks the trie once per state, so more states take one walk that
    // advances them all.
    if (pure_states_.size() <= kMaxUnionStates) {
      walk.bits.assign(mask_words(data_->vocabulary.size()), 0);
      for (uint32_t s : pure_states_) {
        const uint32_t cls = data_->walk_classes->of(s);
        const PureWalk* part = data_->class_walks->find(cls, pure_cover_);
        if (part == nullptr) {
          auto owned = std::make_unique<PureWalk>();
          const uint64_t budget = deadline > engine_.work() ? deadline - engine_.work() : 0;
          uint64_t visited = 0;
          const bool done = data_->walk_pure_state(s, pure_cover_, budget, *owned, visited,
                                                   /*forced=*/false);
          engine_.charge(visited);
          if (!done || engine_.work() > deadline) return nullptr;
          part = data_->class_walks->publish(cls, pure_cover_, owned);
          if (part == nullptr) {  // (the shared memory is spent)
            walk.owned_state_parts.push_back(std::move(owned));
            part = walk.owned_state_parts.back().get();
          }
        }
        part->write_to(walk.bits.data());
        walk.state_parts.push_back(part);
      }
      merge_frontiers(walk);
      return share(pure_tag(), pure_walks_[pure_cover_], pure_key_, std::move(walk));
    }
    const TokenTrie& trie = data_->trie_for(pure_cover_, walk);
    const auto& nodes = trie.nodes();
    const auto& ids = trie.token_ids();
    walk.bits.assign(mask_words(data_->vocabulary.size()), 0);
    // pool_[fast_begin_[d], fast_end_[d]): the states after the path to depth d.
    pool_.assign(pure_states_.begin(), pure_states_.end());
    fast_begin_[0] = 0;
    fast_end_[0] = static_cast<uint32_t>(pool_.size());
    const uint32_t n = static_cast<uint32_t>(nodes.size());
    for (uint32_t i = 1; i < n;) {
      engine_.charge(1);
      if (engine_.work() > deadline) return nullptr;
      const TokenTrie::Node& node = nodes[i];
      const size_t depth = node.depth;
      pool_.resize(fast_end_[depth - 1]);
      const size_t out = pool_.size();
      const bool all_pure = advance(pool_.data() + fast_begin_[depth - 1],
                                    pool_.data() + fast_end_[depth - 1], node.byte, out);
      if (pool_.size() == out) {
        i = node.subtree_end;
        continue;
      }
      for (uint32_t t = node.tokens_begin, end = nodes[i + 1].tokens_begin; t < end; ++t)
        set_bit(walk.bits.data(), ids[t]);
      path_[depth] = node.byte;
      if (node.subtree_end != i + 1 && !all_pure) {
        walk.add_frontier(i, path_, depth);
        i = node.subtree_end;
        continue;
      }
      fast_begin_[depth] = static_cast<uint32_t>(out);
      fast_end_[depth] = static_cast<uint32_t>(pool_.size());
      ++i;
    }
    pool_.clear();
    walk.finish();
    return share(pure_tag(), pure_walks_[pure_cover_], pure_key_, std::move(walk));
  }

  // Moves the frontiers of `walk`'s unsplit state parts, which index one
  // trie, into `walk` itself, each node once and none inside another's
  // subtree: the states of a set often stop being pure at the same nodes,
  // and the engine walks each subtree from the whole set anyway.
  void merge_frontiers(PureWalk& walk) {
    struct Entry {
      uint32_t node;
      const uint8_t* path;
    };
    std::vector<Entry> entries;
    std::vector<const PureWalk*> kept;
    for (const PureWalk* part : walk.state_parts) {
      // (Split parts, and parts that walked another trie than the first
      // merged one, such as a tier walk's, keep their own frontiers.)
      if (part->short_part != nullptr || part->frontier.empty() ||
          (walk.trie != nullptr && part->trie != walk.trie)) {
        if (part->has_frontier()) kept.push_back(part);
        continue;
      }
      walk.trie = part->trie;
      const uint8_t* path = part->paths.data();
      for (uint32_t node : part->frontier) {
        entries.push_back({node, path});
        path += walk.trie->nodes()[node].depth;
      }
    }
    walk.state_parts = std::move(kept);
    if (entries.empty()) return;
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.node < b.node; });
    const auto& nodes = walk.trie->nodes();
    uint32_t covered_until = 0;  // the end of the last kept node's subtree
    for (const Entry& entry : entries) {
      if (entry.node < covered_until) continue;
      walk.frontier.push_back(entry.node);
      walk.paths.insert(walk.paths.end(), entry.path, entry.path + nodes[entry.node].depth);
      covered_until = nodes[entry.node].subtree_end;
    }
  }

  const PureWalk* remember_in(WalkCache& cache, const std::vector<uint64_t>& key, PureWalk&& walk) {
    const size_t bytes = walk.memory() + key.size() * sizeof(uint64_t);
    if (walk_bytes_ + bytes > kMaskCacheBytes) {
      for (WalkCache& cache : pure_walks_) cache.clear();
      local_walks_.clear();
      walk_bytes_ = 0;
    }
    walk_bytes_ += bytes;
    return &cache.emplace(key, std::move(walk)).first->second;
  }

  // The local part of the walk from the top set k: every token that never
  // completes a rule started before k depends on set k alone, that is on
  // its items' states and on which items started in k itself. So it is
  // cached by that local key, whatever the stack below (the nesting depth
  // of a JSON value, the enclosing expression), and the frontier holds the
  // trie nodes where a path first reads below k: only their subtrees go
  // through the engine with the real stack. A miss walks the trie with the
  // engine's floor at k, cutting paths there.
  const PureWalk* top_set_local_walk(size_t base, uint64_t deadline) {
    set_key(data_->local_class, base, local_key_);
    if (const PureWalk* walk = data_->shared_walks->find(tagged(kLocalKeyTag, local_key_)))
      return walk;
    if (auto it = local_walks_.find(local_key_); it != local_walks_.end()) return &it->second;

    // An item that accepts all plain text keeps the set alive through it.
    item_states_.clear();
    for (const EarleyItem* it = engine_.set_begin(base); it != engine_.set_end(base); ++it)
      item_states_.push_back(it->state);
    const TextCover cover =
        data_->text_closure->best_cover(item_states_.data(), item_states_.size());
    PureWalk walk;
    if (data_->short_local_class.empty()) {
      if (!local_walk_over(data_->trie_for(cover, walk), base, deadline, walk)) return nullptr;
      return share(kLocalKeyTag, local_walks_, local_key_, std::move(walk));
    }
    // A split walk: the short part is shared by the sets that agree in
    // their short local key (and cover, which says what it may take for
    // granted).
    set_key(data_->short_local_class, base, short_key_);
    const uint64_t short_tag = kShortLocalKeyTag + cover;
    const PureWalk* short_part = data_->shared_walks->find(tagged(short_tag, short_key_));
    std::unique_ptr<PureWalk> owned;
    if (short_part == nullptr) {
      owned = std::make_unique<PureWalk>();
      if (!local_walk_over(data_->short_trie_for(cover, *owned), base, deadline, *owned))
        return nullptr;
      short_part = data_->shared_walks->publish(tagged(short_tag, short_key_), owned);
    }
    walk.attach_short_part(short_part, owned);
    if (!local_walk_over(data_->long_trie_for(cover, walk), base, deadline, walk)) return nullptr;
    walk.make_sparse();
    return share(kLocalKeyTag, local_walks_, local_key_, std::move(walk));
  }

  // Sets `key` to the sorted (class, started before `base`?) pairs of set
  // base's items.
  void set_key(const std::vector<uint32_t>& classes, size_t base, std::vector<uint64_t>& key) {
    key.clear();
    for (const EarleyItem* it = engine_.set_begin(base); it != engine_.set_end(base); ++it)
      key.push_back((uint64_t{classes[it->state]} << 1) | (it->origin == base ? 0 : 1));
    std::sort(key.begin(), key.end());
    key.erase(std::unique(key.begin(), key.end()), key.end());
  }

  // The local walk from set `base` over `trie` (walk.depth_cap deep) into
  // `walk`: the engine's floor at base cuts paths that read below it.
  bool local_walk_over(const TokenTrie& trie, size_t base, uint64_t deadline, PureWalk& walk) {
    walk_trie_ = &trie;
    depth_cap_ = walk.depth_cap;
    walk.bits.assign(mask_words(data_->vocabulary.size()), 0);
    local_walk_ = &walk;
    fast_begin_[0] = fast_end_[0] = 0;  // (the engine holds the top set)
    engine_.set_floor(base);
    engine_.clear_below_floor();
    const bool within_limit =
        walk_nodes(1, static_cast<uint32_t>(trie.nodes().size()), walk.bits.data(), base, deadline);
    engine_.set_floor(0);
    engine_.clear_below_floor();
    local_walk_ = nullptr;
    engine_.truncate(base);
    if (!within_limit) return false;
    walk.finish();
    return true;
  }

  // In a local walk, turns node i into a frontier node if its push read
  // below the floor; returns true if so (the caller skips the subtree).
  bool cut_at_floor(uint32_t i, size_t depth) {
    if (local_walk_ == nullptr || !engine_.reached_below_floor()) return false;
    engine_.clear_below_floor();
    local_walk_->add_frontier(i, path_, depth);
    return true;
  }

  // Runs the engine over the frontier subtrees of `pure`, reusing the path
  // prefix shared with the previous frontier node.
  bool walk_frontier(const PureWalk& pure, uint32_t* words, size_t base, uint64_t deadline) {
    for (const PureWalk* part : pure.state_parts)
      if (!walk_frontier(*part, words, base, deadline)) return false;
    if (pure.short_part != nullptr && !walk_frontier(*pure.short_part, words, base, deadline))
      return false;
    if (pure.frontier.empty()) return true;
    walk_trie_ = pure.trie;
    depth_cap_ = pure.depth_cap;
    const auto& nodes = walk_trie_->nodes();
    const uint8_t* held = nullptr;  // the path the engine holds above base
    size_t held_length = 0;
    const uint8_t* path = pure.paths.data();
    for (uint32_t f : pure.frontier) {
      const TokenTrie::Node& node = nodes[f];
      const size_t depth = node.depth;
      size_t common = 0;
      while (common < held_length && common < depth && held[common] == path[common]) ++common;
      engine_.truncate(base + common);
      for (size_t d = common; d < depth; ++d)
        if (!engine_.push_byte(path[d])) return false;
      std::copy(path, path + depth, path_.begin() + 1);
      fast_begin_[depth] = fast_end_[depth] = 0;  // the engine holds this depth
      following_[depth] = kNotFollowing;
      follow_from_engine(depth, 0);
      if (!walk_nodes(f + 1, node.subtree_end, words, base, deadline)) return false;
      engine_.truncate(base + depth);
      held = path;
      held_length = depth;
      path += depth;
    }
    return true;
  }

  void remember_mask(std::unordered_map<uint32_t, CachedMask>& cache, uint32_t id,
                     const uint32_t* words, size_t n_words) {
    CachedMask entry(words, n_words, cache_scratch_);
    if (mask_cache_bytes_ + entry.bytes() > kMaskCacheBytes) {
      mask_cache_.clear();
      context_cache_.clear();
      context_tops_.clear();
      context_depths_ = 0;
      mask_cache_bytes_ = 0;
    }
    mask_cache_bytes_ += entry.bytes();
    cache.emplace(id, std::move(entry));
  }

  // How deep into the stack below set `top` a walk looked, as a context id
  // depth (see context_id): one more than the longest chain from `top` to a
  // set it read (`reads`, from the engine's read log). A chain steps from
  // the top set to any item's origin, and from a set below it to a
  // waiter's origin (the only items of such a set that a walk copies).
  // The longest, not the shortest: the walk may have come along any chain,
  // and a stack that agrees to depth d agrees along every chain shorter
  // than d. kMaxContextDepth + 1 when deeper.
  size_t context_depth(const std::vector<uint32_t>& reads, size_t top) {
    if (reads.empty()) return 1;
    const uint32_t lowest = *std::min_element(reads.begin(), reads.end());
    constexpr size_t kTooDeep = kMaxContextDepth + 1;
    if (++chain_stamp_ == 0) {  // (wrapped: forget every stamp)
      std::fill(chain_seen_.begin(), chain_seen_.end(), 0);
      chain_stamp_ = 1;
    }
    if (chain_seen_.size() < top + 1) chain_seen_.resize(top + 1, 0);
    if (chain_length_.size() < top + 1) chain_length_.resize(top + 1, 0);
    // Sets in descending order (a max-heap): origins lie below, so a set
    // is final once every set above it is done.
    chain_heap_.clear();
    auto reach = [&](uint32_t set, uint8_t length) {
      if (chain_seen_[set] != chain_stamp_) {
        chain_seen_[set] = chain_stamp_;
        chain_length_[set] = length;
        chain_heap_.push_back(set);
        std::push_heap(chain_heap_.begin(), chain_heap_.end());
      } else if (chain_length_[set] < length) {
        chain_length_[set] = length;
      }
    };
    const auto& waiter_class = data_->waiter_class;
    for (const EarleyItem* it = engine_.set_begin(top); it != engine_.set_end(top); ++it)
      if (it->origin != top && it->origin >= lowest) reach(it->origin, 1);
    while (!chain_heap_.empty()) {
      std::pop_heap(chain_heap_.begin(), chain_heap_.end());
      const uint32_t set = chain_heap_.back();
      chain_heap_.pop_back();
      const size_t length = chain_length_[set];
      if (length >= kTooDeep) continue;  // (what lies below is too deep too)
      const uint8_t next = static_cast<uint8_t>(length + 1);
      for (const EarleyItem* it = engine_.set_begin(set); it != engine_.set_end(set); ++it)
        if (waiter_class[it->state] != kNotWaiting && it->origin != set && it->origin >= lowest)
          reach(it->origin, next);
    }
    size_t depth = 1;
    for (uint32_t set : reads) {
      if (set == top) continue;
      if (chain_seen_[set] != chain_stamp_ || chain_length_[set] >= kTooDeep) return kTooDeep;
      depth = std::max<size_t>(depth, size_t{chain_length_[set]} + 1);
    }
    return depth;
  }

  // Context id of the top set k at depth d >= 1: its items, each origin
  // replaced by the origin set's waiter id at depth d - 1. The waiter id of
  // set s at depth j: the waiters among its items, by waiter class (the
  // rules they wait on and where each leads: all that completing into s
  // reads), each origin replaced by its set's waiter id at depth j - 1; at
  // depth 0, nothing. So two stacks whose top sets share the id at depth d
  // agree on every set within d - 1 chain links of the top (see
  // context_depth), as far as a walk can tell, and a walk that read no
  // deeper gives both the same mask, stop tokens apart: whether the root
  // ends is a question about origin 0. Waiter ids are computed once per
  // (set, depth) and kept until the set is popped.
  uint32_t context_id(size_t k, size_t d) {
    if (context_ids_.size() < k + 1) {
      ContextIds unknown;
      unknown.fill(kUnknownId);
      context_ids_.resize(k + 1, unknown);
    }
    return set_id(k, d - 1, kContextTag | d, [](uint32_t state) { return uint64_t{state}; });
  }

  uint64_t waiter_id(size_t s, size_t j) {
    if (j == 0) return kContextStandIn;
    uint32_t& memo = context_ids_[s][j - 1];
    if (memo == kUnknownId) {
      const auto& waiter_class = data_->waiter_class;
      memo = set_id(s, j - 1, kWaiterTag | j, [&](uint32_t state) {
        return waiter_class[state] == kNotWaiting ? kSkipItem : uint64_t{waiter_class[state]};
      });
    }
    return memo;
  }

  // The interned key of set s: `tag`, then for each item whose label is
  // not kSkipItem, (label, its origin's waiter id at origin_depth).
  template <typename Label>
  uint32_t set_id(size_t s, size_t origin_depth, uint64_t tag, const Label& label) {
    // (The origins first: their keys are built in context_key_ too.)
    for (const EarleyItem* it = engine_.set_begin(s); it != engine_.set_end(s); ++it)
      if (label(it->state) != kSkipItem && it->origin != s) waiter_id(it->origin, origin_depth);
    context_key_.clear();
    context_key_.push_back(tag);
    for (const EarleyItem* it = engine_.set_begin(s); it != engine_.set_end(s); ++it) {
      const uint64_t item_label = label(it->state);
      if (item_label == kSkipItem) continue;
      const uint64_t origin = it->origin == s ? kSelfOrigin : waiter_id(it->origin, origin_depth);
      context_key_.push_back((item_label << 32) | origin);
    }
    return intern_context_key();
  }

  // Sorts and dedups context_key_ past its tag word, and interns it (as
  // 32-bit words, in an index that allocates nothing per key).
  uint32_t intern_context_key() {
    std::sort(context_key_.begin() + 1, context_key_.end());
    context_key_.erase(std::unique(context_key_.begin() + 1, context_key_.end()),
                       context_key_.end());
    context_words_.clear();
    for (uint64_t word : context_key_) {
      context_words_.push_back(static_cast<uint32_t>(word));
      context_words_.push_back(static_cast<uint32_t>(word >> 32));
    }
    return context_index_.intern(context_words_.data(), context_words_.size()).first;
  }

  // Structural id of Earley set k: its items with each origin replaced by the
  // origin set's id. Computed once per set and kept until it is popped.
  uint32_t structure_id(size_t k) {
    if (structure_ids_.size() < engine_.size() + 1)
      structure_ids_.resize(engine_.size() + 1, kUnknownId);
    if (structure_ids_[k] != kUnknownId) return structure_ids_[k];
    std::vector<size_t> todo{k};
    std::vector<uint64_t> key;
    while (!todo.empty()) {
      const size_t set = todo.back();
      bool ready = true;
      for (const EarleyItem* it = engine_.set_begin(set); it != engine_.set_end(set); ++it) {
        if (it->origin != set && structure_ids_[it->origin] == kUnknownId) {
          todo.push_back(it->origin);
          ready = false;
        }
      }
      if (!ready) continue;
      todo.pop_back();
      if (structure_ids_[set] != kUnknownId) continue;
      key.clear();
      for (const EarleyItem* it = engine_.set_begin(set); it != engine_.set_end(set); ++it) {
        const uint64_t origin = it->origin == set ? kSelfOrigin : structure_ids_[it->origin];
        key.push_back((uint64_t{it->state} << 32) | origin);
      }
      std::sort(key.begin(), key.end());
      auto [pos, inserted] = interned_.emplace(key, static_cast<uint32_t>(interned_.size()));
      structure_ids_[set] = pos->second;
    }
    return structure_ids_[k];
  }

  std::shared_ptr<const CompiledGrammarData> data_;
  EarleyEngine engine_;
  std::vector<size_t> token_ends_;  // engine size after each accepted token
  size_t terminated_at_ = kNotTerminated;
  std::vector<uint32_t> structure_ids_;
  // Walk scratch, kept to avoid reallocation.
  std::vector<uint32_t> fast_begin_, fast_end_, pool_;
  // Per depth on the fast path: whether it follows one item past the end
  // of its rule, and the bytes that then need the engine (follow_from_engine);
  // with plain callers among its states, also what those states read.
  enum Following : uint8_t { kNotFollowing, kFollowing, kFollowingCallers };
  std::vector<uint8_t> following_;
  std::vector<ByteSet> follow_;
  std::vector<ByteSet> fast_scan_;
  std::vector<uint8_t> scan_ready_;  // whether fast_scan_[depth] is set
  ByteSet callee_bytes_;             // see advance_followed
  std::vector<uint8_t> path_;
  std::unordered_map<std::vector<uint64_t>, uint32_t, KeyHash> interned_;
  std::unordered_map<uint32_t, CachedMask> mask_cache_;  // by structure_id
  // Masks that read at most kMaxContextDepth sets deep, by context_id (no
  // stop tokens); bit d of context_depths_: some entry has depth d.
  static constexpr size_t kMaxContextDepth = 8;
  using ContextIds = std::array<uint32_t, kMaxContextDepth>;
  // Per set, by depth - 1; a deque, whose growth copies nothing (a vector
  // doubling would copy them all in one step).
  std::deque<ContextIds> context_ids_;
  std::unordered_map<uint32_t, CachedMask> context_cache_;
  std::unordered_set<uint32_t> context_tops_;  // the entries' context ids at depth 1
  uint32_t context_depths_ = 0;
  std::vector<uint64_t> context_key_;    // context_id's scratch
  std::vector<uint32_t> context_words_;  // ... as 32-bit words
  SequenceIndex context_index_;          // context ids by key
  // context_depth's scratch: per set, its longest chain from the top and
  // whether chain_stamp_ reached it; the sets to do.
  std::vector<uint8_t> chain_length_;
  std::vector<uint32_t> chain_seen_;
  uint32_t chain_stamp_ = 0;
  std::vector<uint32_t> chain_heap_;
  size_t mask_cache_bytes_ = 0;          // of both caches' words
  std::vector<uint32_t> cache_scratch_;  // for making entries
  std::vector<uint32_t> sources_;        // advance()'s copy of its input states
  std::vector<uint64_t> pure_key_;       // sorted walk classes of the top set
  std::vector<uint32_t> pure_states_;    // one DFA state per class of pure_key_
  std::vector<uint64_t> tagged_key_;
  TextCover pure_cover_ = kNoText;
  WalkCache pure_walks_[kTextCovers];  // by pure_cover_
  std::vector<uint64_t> local_key_;    // the top set's (local class, started here?) items
  std::vector<uint64_t> short_key_;    // ... with short local classes
  WalkCache local_walks_;
  PureWalk* local_walk_ = nullptr;        // the local walk being built, if any
  const TokenTrie* walk_trie_ = nullptr;  // the trie walk_nodes walks
  size_t depth_cap_ = SIZE_MAX;           // and the depth past which it skips nodes
  std::vector<uint32_t> item_states_;
  size_t walk_bytes_ = 0;
  size_t hits_ = 0;
  size_t misses_ = 0;
};

std::vector<uint32_t> waiter_classes(const ByteGrammar& grammar) {
  const auto& states = grammar.states();
  const auto& edges = grammar.rule_edges();
  std::vector<uint32_t> classes(states.size(), kNotWaiting);
  std::unordered_map<std::vector<uint64_t>, uint32_t, KeyHash> ids;
  std::vector<uint64_t> key;
  for (size_t s = 0; s < states.size(); ++s) {
    const AutomatonState& state = states[s];
    if (state.rule_edges_begin == state.rule_edges_end) continue;
    key.clear();
    for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end; ++e)
      key.push_back((uint64_t{edges[e].rule} << 32) | edges[e].target);
    std::sort(key.begin(), key.end());
    classes[s] = ids.emplace(key, static_cast<uint32_t>(ids.size() + 1)).first->second;
  }
  return classes;
}

void plain_callers(const ByteGrammar& grammar, const TextClosure& closure,
                   std::vector<uint32_t>& plain_caller, std::vector<ByteSet>& callee_bytes) {
  const auto& states = grammar.states();
  plain_caller.assign(states.size(), CompiledGrammarData::kNotPlainCaller);
  callee_bytes.assign(1, ByteSet());  // (shared by the states that call nothing)
  for (size_t s = 0; s < states.size(); ++s) {
    const AutomatonState& state = states[s];
    if (state.is_final) continue;
    if (state.calls_no_rule()) {
      plain_caller[s] = 0;
      continue;
    }
    ByteSet bytes;
    bool plain = true;
    for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end && plain; ++e) {
      const uint32_t rule = grammar.rule_edges()[e].rule;
      plain = !grammar.rules()[rule].nullable;
      bytes |= closure.rule_first_bytes(rule);
    }
    if (!plain) continue;
    plain_caller[s] = static_cast<uint32_t>(callee_bytes.size());
    callee_bytes.push_back(bytes);
  }
}

std::vector<uint8_t> pure_states(const ByteGrammar& grammar) {
  const auto& states = grammar.states();
  bool root_is_called = false;
  for (const RuleEdge& edge : grammar.rule_edges())
    root_is_called |= edge.rule == grammar.root_rule();
  std::vector<uint8_t> pure(states.size());
  for (size_t s = 0; s < states.size(); ++s) {
    const AutomatonState& state = states[s];
    pure[s] = state.calls_no_rule() &&
              (!state.is_final || (state.rule == grammar.root_rule() && !root_is_called));
  }
  return pure;
}

namespace {

// The refinement behind walk and local classes. `local` (walk_part null):
// the states of call chains take part, and rule edges count as
// transitions on classes past the bytes' (one per rule); else the pure
// states flagged in `walk_part`, and impure targets are one class.
// `short_classes`, if not null, receives the classes after
// TextSlice::kShortLength + 1 rounds: those of a split walk's short part.
std::vector<uint32_t> refine_classes(const ByteGrammar& grammar, size_t depth,
                                     const std::vector<uint8_t>* walk_part, uint32_t& num_classes,
                                     std::vector<uint32_t>* short_classes = nullptr,
                                     uint32_t* num_short_classes = nullptr) {
  const bool local = walk_part == nullptr;
  const uint32_t n = static_cast<uint32_t>(grammar.states().size());
  const uint32_t byte_width = grammar.num_classes();
  const uint32_t width = byte_width + (local ? static_cast<uint32_t>(grammar.rules().size()) : 0);

  std::vector<uint32_t> cls(n, kImpureClass);
  std::vector<uint32_t> pure;  // the states taking part
  std::vector<uint32_t> class_size{0};
  if (!local) {
    for (uint32_t s = 0; s < n; ++s) {
      if (!(*walk_part)[s]) continue;
      pure.push_back(s);
      cls[s] = 1;
    }
    class_size.push_back(static_cast<uint32_t>(pure.size()));
  } else {
    // Only the states of call chains (a state calling a rule whose target
    // calls it again, and those targets) take part; every other state is a
    // class of its own, which the chains' states may refer to.
    std::vector<uint8_t> in_chain(n, 0);
    for (uint32_t s = 0; s < n; ++s) {
      const AutomatonState& state = grammar.states()[s];
      for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end; ++e)
        if (grammar.next_call_of_same_rule(e) != ByteGrammar::kNoEdge)
          in_chain[s] = in_chain[grammar.rule_edges()[e].target] = 1;
    }
    // First split: finality, and the exact targets of calls to rules that
    // may derive nothing (such a call reads no byte, so bounding the
    // lookahead by bytes says nothing about what follows it).
    SequenceIndex initial;  // the keys below
    initial.reset(64);
    std::vector<uint32_t> initial_class;  // by key number
    std::vector<uint32_t> key;
    for (uint32_t s = 0; s < n; ++s) {
      if (!in_chain[s]) {
        cls[s] = static_cast<uint32_t>(class_size.size());
        class_size.push_back(1);
        continue;
      }
      const AutomatonState& state = grammar.states()[s];
      // (Also a rule called twice from one state: the transitions below
      // hold one target per rule.)
      key.assign(1, state.is_final ? 1u : 0u);
      const RuleEdge* first_edge = grammar.rule_edges().data() + state.rule_edges_begin;
      const RuleEdge* last_edge = grammar.rule_edges().data() + state.rule_edges_end;
      for (const RuleEdge* edge = first_edge; edge != last_edge; ++edge) {
        const bool twice = std::count_if(first_edge, last_edge, [&](const RuleEdge& other) {
                             return other.rule == edge->rule;
                           }) > 1;
        if (grammar.rules()[edge->rule].nullable || twice)
          key.insert(key.end(), {edge->rule, edge->target});
      }
      const auto [k, inserted] = initial.intern(key.data(), key.size());
      if (inserted) {
        initial_class.push_back(static_cast<uint32_t>(class_size.size()));
        class_size.push_back(0);
      }
      cls[s] = initial_class[k];
      ++class_size[cls[s]];
      pure.push_back(s);
    }
  }
  num_classes = static_cast<uint32_t>(class_size.size());
  if (pure.empty()) {
    if (short_classes != nullptr) *short_classes = cls;
    if (num_short_classes != nullptr) *num_short_classes = num_classes;
    return cls;
  }

  // Each pure state's transitions as runs of byte classes with one target
  // (a state has a few distinct targets among dozens of classes): the
  // grammar's own, or for local classes a copy with the calls appended.
  std::vector<uint32_t> run_begin;
  std::vector<ClassRun> runs;
  if (local) {
    run_begin.assign(n + 1, 0);
    std::vector<uint8_t> taking_part(n, 0);
    for (uint32_t s : pure) taking_part[s] = 1;
    std::vector<RuleEdge> calls;
    for (uint32_t s = 0; s < n; ++s) {
      run_begin[s] = static_cast<uint32_t>(runs.size());
      if (!taking_part[s]) continue;
      runs.insert(runs.end(), grammar.runs_begin(s), grammar.runs_end(s));
      // Calls to rules that derive something, as transitions on class
      // byte_width + rule (a DFA state calls a rule at most once).
      const AutomatonState& state = grammar.states()[s];
      calls.assign(grammar.rule_edges().begin() + state.rule_edges_begin,
                   grammar.rule_edges().begin() + state.rule_edges_end);
      std::sort(calls.begin(), calls.end(),
                [](const RuleEdge& a, const RuleEdge& b) { return a.rule < b.rule; });
      uint32_t next_class = byte_width;  // the first class not yet covered
      for (size_t i = 0; i < calls.size(); ++i) {
        const RuleEdge& call = calls[i];
        const bool twice = (i > 0 && calls[i - 1].rule == call.rule) ||
                           (i + 1 < calls.size() && calls[i + 1].rule == call.rule);
        if (grammar.rules()[call.rule].nullable || twice) continue;  // (in the first split)
        if (byte_width + call.rule > next_class && runs.back().target != kNoState)
          runs.push_back({next_class, kNoState});
        runs.push_back({byte_width + call.rule, call.target});
        next_class = byte_width + call.rule + 1;
      }
      if (next_class < width && runs.back().target != kNoState)
        runs.push_back({next_class, kNoState});
    }
    run_begin[n] = static_cast<uint32_t>(runs.size());
  }
  auto first_run = [&](uint32_t s) {
    return local ? runs.data() + run_begin[s] : grammar.runs_begin(s);
  };
  auto last_run = [&](uint32_t s) {
    return local ? runs.data() + run_begin[s + 1] : grammar.runs_end(s);
  };

  // Pure predecessors of each pure state (impure states never change
  // class), from the runs; a predecessor may be listed more than once.
  std::vector<uint32_t> pred_begin(n + 1, 0), preds;
  auto each_pure_edge = [&](auto&& visit) {
    for (uint32_t s : pure)
      for (const ClassRun *run = first_run(s), *end = last_run(s); run != end; ++run)
        if (const uint32_t t = run->target; t != kNoState && cls[t] != kImpureClass) visit(s, t);
  };
  each_pure_edge([&](uint32_t, uint32_t t) { ++pred_begin[t + 1]; });
  for (uint32_t s = 0; s < n; ++s) pred_begin[s + 1] += pred_begin[s];
  preds.resize(pred_begin[n]);
  std::vector<uint32_t> fill(pred_begin.begin(), pred_begin.end() - 1);
  each_pure_edge([&](uint32_t s, uint32_t t) { preds[fill[t]++] = s; });
  auto target_class = [&](uint32_t t) { return t == kNoState ? UINT32_MAX : cls[t]; };
  // A state's signature: its class, then (first class, target class) for
  // each maximal run of equal target classes, so that it does not depend on
  // how the runs were cut. A round's groups are its distinct signatures.
  // (One buffer sized for the longest signature: this is the hot loop.)
  uint32_t most_runs = 0;
  for (uint32_t s : pure)
    most_runs = std::max(most_runs, static_cast<uint32_t>(last_run(s) - first_run(s)));
  std::vector<uint32_t> signature(1 + 2 * size_t{most_runs});
  // Its hash is taken while it is written (a pair per multiply; every
  // signature of the index is hashed alike), not in a second pass.
  uint64_t signature_hash = 0;
  auto write_signature = [&](uint32_t s) -> size_t {
    constexpr uint64_t kOdd = 0x9E3779B97F4A7C15ULL;
    uint32_t* out = signature.data();
    *out++ = cls[s];
    uint64_t h = (cls[s] + 1) * kOdd;
    uint32_t previous = UINT32_MAX - 1;
    const ClassRun* const end = last_run(s);
    for (const ClassRun* run = first_run(s); run != end; ++run) {
      const uint32_t c = target_class(run->target);
      if (c == previous) continue;
      // (One store for both words: their order is the machine's, the same
      // in every signature.)
      const uint64_t pair = run->first_class | uint64_t{c} << 32;
      std::memcpy(out, &pair, sizeof pair);
      out += 2;
      h = (h ^ pair) * kOdd;
      previous = c;
    }
    signature_hash = h ^ (h >> 29);
    return static_cast<size_t>(out - signature.data());
  };

  // Moore refinement, one round per byte of lookahead, until stable. A
  // round only re-signs the predecessors of the states whose class changed
  // in the previous one: the other members of a class still agree.
  std::vector<uint32_t> affected = pure, changed, group_of(n, 0), new_class;
  std::vector<uint8_t> marked(n, 0);
  SequenceIndex groups;
  std::vector<uint32_t> affected_in_class(class_size.size(), 0), keeper, group_size;
  auto take_short_classes = [&] {
    if (short_classes != nullptr && short_classes->empty()) *short_classes = cls;
  };
  for (size_t round = 0; round < depth && !affected.empty(); ++round) {
    if (round == TextSlice::kShortLength + 1) take_short_classes();
    groups.reset(affected.size());
    for (uint32_t s : affected) {
      const size_t size = write_signature(s);
      group_of[s] = groups.intern(signature.data(), size, signature_hash).first;
    }
    // A class whose members were all re-signed keeps its id for its largest
    // group (so that the fewest states change class and the next round
    // re-signs the fewest predecessors, as in Hopcroft's algorithm); every
    // other group becomes a new class.
    affected_in_class.resize(class_size.size(), 0);  // (all 0: reset after use)
    keeper.resize(class_size.size(), UINT32_MAX);    // (likewise)
    for (uint32_t s : affected) ++affected_in_class[cls[s]];
    group_size.assign(groups.count(), 0);
    for (uint32_t s : affected) ++group_size[group_of[s]];
    for (uint32_t g = 0; g < groups.count(); ++g) {
      const uint32_t old = groups.data(g)[0];  // the class the signature starts with
      if (affected_in_class[old] != class_size[old]) continue;
      if (keeper[old] == UINT32_MAX || group_size[g] > group_size[keeper[old]]) keeper[old] = g;
    }
    new_class.assign(groups.count(), UINT32_MAX);
    for (uint32_t g = 0; g < groups.count(); ++g) {
      const uint32_t old = groups.data(g)[0];
      if (keeper[old] == g) {
        new_class[g] = old;
      } else {
        new_class[g] = static_cast<uint32_t>(class_size.size());
        class_size.push_back(0);
      }
    }
    for (uint32_t s : affected) {  // ready for the next round
      affected_in_class[cls[s]] = 0;
      keeper[cls[s]] = UINT32_MAX;
    }
    changed.clear();
    for (uint32_t s : affected) {
      const uint32_t next = new_class[group_of[s]];
      if (next == cls[s]) continue;
      --class_size[cls[s]];
      ++class_size[next];
      changed.push_back(s);
    }
    for (uint32_t s : changed) cls[s] = new_class[group_of[s]];
    // (A state alone in its class cannot split: re-signing it would only
    // find it its class's keeper again.)
    affected.clear();
    for (uint32_t t : changed)
      for (uint32_t i = pred_begin[t]; i < pred_begin[t + 1]; ++i)
        if (const uint32_t s = preds[i]; !marked[s] && class_size[cls[s]] > 1) {
          marked[s] = 1;
          affected.push_back(s);
        }
    for (uint32_t s : affected) marked[s] = 0;
  }
  take_short_classes();  // (stable within kShortLength + 1 rounds)
  // Ids of emptied classes are left unused; renumber densely.
  std::vector<uint32_t> dense;
  auto renumber = [&](std::vector<uint32_t>& classes) {
    dense.assign(class_size.size(), UINT32_MAX);
    dense[kImpureClass] = kImpureClass;
    uint32_t count = 1;
    for (uint32_t& c : classes) {
      if (dense[c] == UINT32_MAX) dense[c] = count++;
      c = dense[c];
    }
    return count;
  };
  num_classes = renumber(cls);
  if (short_classes != nullptr) {
    const uint32_t count = renumber(*short_classes);
    if (num_short_classes != nullptr) *num_short_classes = count;
  }
  return cls;
}

}  // namespace

std::vector<uint32_t> compute_walk_classes(const ByteGrammar& grammar, size_t depth,
                                           const std::vector<uint8_t>& taking_part,
                                           uint32_t& num_classes,
                                           std::vector<uint32_t>& short_classes,
                                           uint32_t& num_short_classes) {
  return refine_classes(grammar, depth, &taking_part, num_classes, &short_classes,
                        &num_short_classes);
}

std::vector<uint32_t> compute_local_classes(const ByteGrammar& grammar, size_t depth,
                                            std::vector<uint32_t>& short_classes) {
  uint32_t num_classes = 0;
  return refine_classes(grammar, depth, /*walk_part=*/nullptr, num_classes, &short_classes);
}

bool has_call_chains(const ByteGrammar& grammar, size_t depth) {
  // The refinement costs about as much as lowering the states; in the large
  // schemas that have call chains (strings of up to 256 characters whose
  // characters are rule calls), it spares a trie walk per character.
  // (Lowering's own bound, RecognizerOptions::max_states, is larger.)
  constexpr size_t kMaxStates = 400000;
  if (grammar.states().size() > kMaxStates) return false;
  const auto& edges = grammar.rule_edges();
  // Chain lengths from each edge, capped past `depth`; a chain that comes
  // back to an edge it passed is long enough.
  constexpr uint32_t kUnknown = 0, kOnPath = UINT32_MAX;
  std::vector<uint32_t> length(edges.size(), kUnknown);
  std::vector<uint32_t> path;
  for (uint32_t first = 0; first < edges.size(); ++first) {
    if (length[first] != kUnknown || grammar.rules()[edges[first].rule].nullable) continue;
    path.clear();
    uint32_t e = first;
    uint32_t tail = 0;  // the length after the path
    while (true) {
      if (length[e] == kOnPath) return true;  // a cycle of calls
      if (length[e] != kUnknown) {
        tail = length[e];
        break;
      }
      length[e] = kOnPath;
      path.push_back(e);
      const uint32_t next = grammar.next_call_of_same_rule(e);
      if (next == ByteGrammar::kNoEdge) break;
      e = next;
    }
    for (size_t i = path.size(); i-- > 0;) {
      tail = std::min<uint32_t>(tail + 1, static_cast<uint32_t>(depth) + 1);
      length[path[i]] = tail;
      if (tail > depth) return true;
    }
  }
  return false;
}

std::vector<uint32_t> identity_classes(const ByteGrammar& grammar) {
  std::vector<uint32_t> identity(grammar.states().size());
  for (uint32_t s = 0; s < identity.size(); ++s) identity[s] = s;
  return identity;
}

std::vector<uint8_t> split_classes(const std::vector<uint32_t>& walk_class, uint32_t num_classes,
                                   const std::vector<uint32_t>& short_class,
                                   uint32_t num_short_classes) {
  // A short class's first walk class, then whether it has another.
  std::vector<uint32_t> first(num_short_classes, kImpureClass);
  std::vector<uint8_t> shared(num_short_classes, 0);
  for (size_t s = 0; s < walk_class.size(); ++s) {
    const uint32_t cls = walk_class[s];
    if (cls == kImpureClass) continue;
    uint32_t& seen = first[short_class[s]];
    if (seen == kImpureClass)
      seen = cls;
    else if (seen != cls)
      shared[short_class[s]] = 1;
  }
  std::vector<uint8_t> split(num_classes, 0);
  for (size_t s = 0; s < walk_class.size(); ++s)
    if (walk_class[s] != kImpureClass) split[walk_class[s]] = shared[short_class[s]];
  return split;
}

BreadthFirstStates::BreadthFirstStates(const ByteGrammar& grammar)
    : grammar_(grammar), seen_(grammar.states().size(), 0) {
  visit(grammar.rules()[grammar.root_rule()].start);
  for (const LoweredRule& rule : grammar.rules()) visit(rule.start);
}

void BreadthFirstStates::visit(uint32_t state) {
  if (state == kNoState || seen_[state]) return;
  seen_[state] = 1;
  order_.push_back(state);
}

uint32_t BreadthFirstStates::next() {
  if (head_ == order_.size()) return kNoState;
  const uint32_t s = order_[head_++];
  for (const ClassRun* run = grammar_.runs_begin(s); run != grammar_.runs_end(s); ++run)
    visit(run->target);
  const AutomatonState& state = grammar_.states()[s];
  for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end; ++e)
    visit(grammar_.rule_edges()[e].target);
  return s;
}

PureTransitions::PureTransitions(const ByteGrammar& grammar,
                                 const std::vector<uint8_t>& pure_states)
    : pure(pure_states.data()) {
  for (int b = 0; b < 256; ++b) byte_class[b] = grammar.byte_class(static_cast<uint8_t>(b));
  narrow_table = grammar.narrow_table();
  wide_table = grammar.wide_table();
  width = grammar.num_classes();
}

WalkClasses::WalkClasses(const ByteGrammar& grammar, const std::vector<uint8_t>& pure, size_t depth)
    : grammar_(grammar), pure_(pure), depth_(depth) {
  const auto& states = grammar.states();
  const size_t n = states.size();
  std::vector<uint32_t> pure_in_rule(grammar.rules().size(), 0);
  size_t total_pure = 0;
  for (size_t s = 0; s < n; ++s) {
    pure_in_rule[states[s].rule] += pure[s];
    total_pure += pure[s];
  }
  const uint32_t largest_now = total_pure <= kEagerStates ? UINT32_MAX : kLazyRuleStates;
  const auto later = [&](uint32_t rule) {
    return pure_in_rule[rule] > largest_now && pure_in_rule[rule] <= kMaxLazyRuleStates;
  };
  std::vector<uint8_t> now(n);
  for (size_t s = 0; s < n; ++s) now[s] = pure[s] && !later(states[s].rule);
  std::vector<uint32_t> classes =
      compute_walk_classes(grammar, depth, now, num_classes_, short_class_, num_short_classes_);
  split_ = split_classes(classes, num_classes_, short_class_, num_short_classes_);
  large_index_.assign(pure_in_rule.size(), kSmallRule);
  for (uint32_t r = 0; r < pure_in_rule.size(); ++r) {
    if (!later(r)) continue;
    large_index_[r] = static_cast<uint32_t>(large_.size());
    large_.push_back({r, num_classes_ - 1, num_short_classes_ - 1});
    num_classes_ += pure_in_rule[r];
    num_short_classes_ += pure_in_rule[r];
  }
  split_.resize(num_classes_, 0);
  classed_ = std::make_unique<std::once_flag[]>(large_.size());
  class_ = std::make_unique<std::atomic<uint32_t>[]>(n);
  for (size_t s = 0; s < n; ++s)
    class_[s].store(now[s]    ? classes[s]
                    : pure[s] ? kNotYet
                              : kImpureClass,
                    std::memory_order_relaxed);
}

uint32_t WalkClasses::of_new_rule(uint32_t s) const {
  const LargeRule& large = large_[large_index_[grammar_.states()[s].rule]];
  std::call_once(classed_[&large - large_.data()], [&] { class_rule(large); });
  return class_[s].load(std::memory_order_acquire);
}

void WalkClasses::class_rule(const LargeRule& large) const {
  const auto& states = grammar_.states();
  const size_t n = states.size();
  std::vector<uint8_t> part(n);
  for (size_t s = 0; s < n; ++s) part[s] = pure_[s] && states[s].rule == large.rule;
  uint32_t num_classes = 0, num_short_classes = 0;
  std::vector<uint32_t> short_classes;
  const std::vector<uint32_t> classes =
      compute_walk_classes(grammar_, depth_, part, num_classes, short_classes, num_short_classes);
  const std::vector<uint8_t> split =
      split_classes(classes, num_classes, short_classes, num_short_classes);
  for (uint32_t c = 1; c < num_classes; ++c) split_[large.class_base + c] = split[c];
  for (size_t s = 0; s < n; ++s)
    if (part[s]) short_class_[s] = large.short_base + short_classes[s];
  for (size_t s = 0; s < n; ++s)
    if (part[s]) class_[s].store(large.class_base + classes[s], std::memory_order_release);
}

namespace {

// walk_from_state over a transition table of `Entry`s, whose largest value
// means no transition.
template <typename Entry>
bool walk_from_state_in(const Entry* table, const PureTransitions& transitions,
                        const TokenTrie& trie, size_t vocabulary_size, uint32_t start,
                        uint64_t budget, PureWalk& walk, uint64_t& visited) {
  constexpr Entry kNone = std::numeric_limits<Entry>::max();
  const TokenTrie::Node* nodes = trie.nodes().data();
  const uint32_t* ids = trie.token_ids().data();
  const uint8_t* pure = transitions.pure;
  const size_t width = transitions.width;
  const size_t depth_cap = walk.depth_cap;
  const uint8_t* byte_class = transitions.byte_class;
  const size_t words = mask_words(vocabulary_size);
  // A list at most 1/8 the words' size; on top of the slice's words, one
  // that costs little next to copying them.
  const size_t max_sparse = walk.slice != nullptr ? words / 64 : words / 8;
  // Mask words only once the list outgrows max_sparse: most walks (a
  // keyword, a digit) never need them.
  walk.bits.clear();
  walk.tokens.clear();
  walk.frontier.clear();
  walk.paths.clear();
  uint32_t* bits = nullptr;
  std::vector<size_t> row_at(trie.max_depth() + 2, 0);  // the row after depth d
  std::vector<uint8_t> path(trie.max_depth() + 2, 0);
  row_at[0] = start * width;
  const uint32_t n = static_cast<uint32_t>(trie.nodes().size());
  uint32_t i = 1;
  uint64_t count = 0;
  while (i < n) {
    if (++count > budget) {
      visited = count;
      return false;
    }
    const TokenTrie::Node& node = nodes[i];
    const size_t depth = node.depth;
    const uint32_t next = table[row_at[depth - 1] + byte_class[node.byte]];
    if (next == kNone) {
      i = node.subtree_end;
      continue;
    }
    for (uint32_t t = node.tokens_begin, end = nodes[i + 1].tokens_begin; t < end; ++t) {
      if (bits != nullptr) {
        set_bit(bits, ids[t]);
        continue;
      }
      walk.tokens.push_back(ids[t]);
      if (walk.tokens.size() > max_sparse) {
        walk.bits.assign(words, 0);
        bits = walk.bits.data();
        for (uint32_t id : walk.tokens) set_bit(bits, id);
        walk.tokens.clear();
      }
    }
    if (node.subtree_end == i + 1 || depth >= depth_cap) {
      i = node.subtree_end;
      continue;
    }
    path[depth] = node.byte;
    if (!pure[next]) {
      walk.add_frontier(i, path, depth);
      i = node.subtree_end;
      continue;
    }
    row_at[depth] = next * width;
    ++i;
  }
  visited = count;
  if (bits != nullptr) {
    walk.tokens.shrink_to_fit();
    walk.finish();
  }
  return true;
}

}  // namespace

bool walk_from_state(const PureTransitions& transitions, const TokenTrie& trie,
                     size_t vocabulary_size, uint32_t start, uint64_t budget, PureWalk& walk,
                     uint64_t& visited) {
  if (transitions.narrow_table != nullptr)
    return walk_from_state_in(transitions.narrow_table, transitions, trie, vocabulary_size, start,
                              budget, walk, visited);
  return walk_from_state_in(transitions.wide_table, transitions, trie, vocabulary_size, start,
                            budget, walk, visited);
}

}  // namespace internal

// --- CompiledGrammar ---------------------------------------------------------

Result<CompiledGrammar> CompiledGrammar::compile(const Grammar& grammar,
                                                 const Vocabulary& vocabulary,
                                                 const CompileOptions& options) {
  auto lowered = internal::ByteGrammar::lower(grammar, options.root, options.recognizer);
  if (!lowered.ok()) return lowered.status();
  auto data = std::make_shared<internal::CompiledGrammarData>(std::move(lowered).value(),
                                                              vocabulary, options.max_mask_work);
  const internal::ByteGrammar& byte_grammar = *data->grammar;
  const internal::TokenTrie& trie = internal::VocabularyAccess::trie(vocabulary);
  data->pure = internal::pure_states(byte_grammar);
  data->walk_classes =
      std::make_unique<internal::WalkClasses>(byte_grammar, data->pure, trie.max_depth() + 1);
  data->class_walks = std::make_unique<internal::ClassWalks>(data->walk_classes->num_classes());
  data->short_class_walks =
      std::make_unique<internal::ClassWalks>(data->walk_classes->num_short_classes());
  data->shared_walks = std::make_unique<internal::SharedWalks>();
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
  data->waiter_class = internal::waiter_classes(byte_grammar);
  internal::plain_callers(byte_grammar, *data->text_closure, data->plain_caller,
                          data->plain_callee_bytes);
  data->entered_by_rule.assign(byte_grammar.states().size(), 0);
  for (const internal::LoweredRule& rule : byte_grammar.rules())
    if (rule.start != internal::kNoState) data->entered_by_rule[rule.start] = 1;
  for (const internal::RuleEdge& edge : byte_grammar.rule_edges())
    data->entered_by_rule[edge.target] = 1;
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
  internal::BreadthFirstStates nearest_first(byte_grammar);
  for (uint32_t s = nearest_first.next(); s != internal::kNoState && budget > 0;
       s = nearest_first.next()) {
    const uint32_t cls = data->walk_classes->known(s);
    if (cls == internal::kImpureClass || cls == internal::WalkClasses::kNotYet) continue;
    const internal::TextCover cover = data->text_closure->cover(s);
    if (data->class_walks->find(cls, cover)) continue;
    auto walk = std::make_unique<internal::PureWalk>();
    uint64_t visited = 0;
    if (!data->walk_pure_state(s, cover, budget, *walk, visited, /*forced=*/true)) break;
    budget -= visited;
    data->class_walks->publish(cls, cover, walk, /*forced=*/true);
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

// --- Matcher -------------------------------------------------------------------

Matcher::Matcher(const CompiledGrammar& grammar)
    : state_(std::make_unique<internal::MatcherState>(grammar.data_)) {}
namespace {
// What the calls of a moved-from Matcher return.
Status moved_from() {
  return Status(ErrorCode::kInvalidState, "this Matcher was moved from and holds no state");
}
}  // namespace

Matcher::Matcher(const Matcher& other)
    : state_(other.state_ ? std::make_unique<internal::MatcherState>(*other.state_) : nullptr) {}
Matcher& Matcher::operator=(const Matcher& other) {
  if (this != &other)
    state_ = other.state_ ? std::make_unique<internal::MatcherState>(*other.state_) : nullptr;
  return *this;
}
Matcher::Matcher(Matcher&&) noexcept = default;
Matcher& Matcher::operator=(Matcher&&) noexcept = default;
Matcher::~Matcher() = default;

Status Matcher::fill_mask(uint32_t* words, size_t n_words) {
  if (!state_) return moved_from();
  // An empty vocabulary needs no words, so no buffer either.
  if (n_words == 0 && state_->data().vocabulary.size() == 0) return Status();
  return state_->fill_mask(words, n_words);
}
Status Matcher::accept_token(uint32_t token) {
  if (!state_) return moved_from();
  return state_->accept_token(token);
}
bool Matcher::is_token_allowed(uint32_t token) const {
  return state_ && state_->is_token_allowed(token);
}
Status Matcher::accept_bytes(std::string_view bytes) {
  if (!state_) return moved_from();
  return state_->accept_bytes(bytes);
}
Status Matcher::rollback(size_t n_tokens) {
  if (!state_) return moved_from();
  return state_->rollback(n_tokens);
}
void Matcher::reset() noexcept {
  if (state_) state_->reset();
}
size_t Matcher::num_tokens() const noexcept {
  return state_ ? state_->num_tokens() : 0;
}
bool Matcher::is_accepting() const noexcept {
  return state_ && state_->is_accepting();
}
bool Matcher::is_terminated() const noexcept {
  return state_ && state_->terminated();
}
std::string Matcher::forced_bytes(size_t max_bytes) const {
  return state_ ? state_->forced_bytes(max_bytes) : std::string();
}
size_t Matcher::mask_cache_hits() const noexcept {
  return state_ ? state_->hits() : 0;
}
size_t Matcher::mask_cache_misses() const noexcept {
  return state_ ? state_->misses() : 0;
}

struct ThreadPool::Impl {
  std::mutex batch_mutex;  // one batch at a time
  std::mutex mutex;
  std::condition_variable wake, done;
  std::vector<std::thread> workers;
  const std::function<void(size_t)>* task = nullptr;
  size_t n = 0;
  std::atomic<size_t> next{0};
  size_t generation = 0;
  size_t busy = 0;
  bool stopping = false;

  void run_items() {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) (*task)(i);
  }

  void worker_loop() {
    size_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping) return;
      seen = generation;
      ++busy;
      lock.unlock();
      run_items();
      lock.lock();
      if (--busy == 0) done.notify_all();
    }
  }
};

ThreadPool::ThreadPool(size_t threads) : impl_(std::make_unique<Impl>()) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  try {
    for (size_t t = 1; t < threads; ++t)
      impl_->workers.emplace_back([this] { impl_->worker_loop(); });
  } catch (const std::system_error&) {
    // The system refused a thread: run with the workers that did start (the
    // calling thread always works too), rather than end the process.
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  for (std::thread& t : impl_->workers) t.join();
}

size_t ThreadPool::size() const noexcept {
  return impl_->workers.size() + 1;
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t)>& task) {
  std::lock_guard<std::mutex> batch(impl_->batch_mutex);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->task = &task;
    impl_->n = n;
    impl_->next.store(0);
    ++impl_->generation;
  }
  impl_->wake.notify_all();
  impl_->run_items();
  std::unique_lock<std::mutex> lock(impl_->mutex);
  // Every item is claimed; wait for the workers still finishing theirs.
  impl_->done.wait(lock, [&] { return impl_->busy == 0; });
  impl_->task = nullptr;
}

Status fill_masks(Matcher* const* matchers, size_t n_matchers, uint32_t* words, size_t row_words,
                  ThreadPool& pool) {
  std::vector<Status> results(n_matchers);
  pool.parallel_for(n_matchers, [&](size_t i) {
    results[i] = matchers[i]->fill_mask(words + i * row_words, row_words);
  });
  for (const Status& s : results)
    if (!s.ok()) return s;
  return Status();
}

Status fill_masks(Matcher* const* matchers, size_t n_matchers, uint32_t* words, size_t row_words,
                  size_t threads) {
  if (n_matchers == 0) return Status();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  ThreadPool pool(std::min(threads, n_matchers));
  return fill_masks(matchers, n_matchers, words, row_words, pool);
}

}  // namespace grammask
