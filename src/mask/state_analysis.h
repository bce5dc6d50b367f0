// Compile-time analyses of a ByteGrammar's DFA states (internal): which
// states are pure, the walk and local classes that tell when two states'
// trie walks are equal, waiter classes, plain callers, and the order in
// which compiling precomputes walks. Pure functions of the grammar, except
// WalkClasses, which classes large rules on first use (thread-safe).
#ifndef GRAMMASK_SRC_MASK_STATE_ANALYSIS_H_
#define GRAMMASK_SRC_MASK_STATE_ANALYSIS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "automata/lowering.h"
#include "base/byte_set.h"
#include "base/memory_bytes.h"
#include "mask/text_closure.h"
#include "vocab/text_slice.h"
#include "vocab/token_trie.h"

namespace grammask {
namespace internal {

// A DFA state is "pure" when input from it is plain DFA transitions,
// whatever its rule was called from: it calls no rule, it is not a token
// item's state (tokens, not bytes, move on from there), and it does not end
// its rule, or its rule is the root and nothing calls the root (then ending
// it completes nothing, it only makes the output acceptable).
std::vector<uint8_t> pure_states(const ByteGrammar& grammar);

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
// Counter positions that no token tells apart. A counter is a chain of states
// s0 -L-> s1 -L-> ... a bounded repeat of a set L of bytes (the indentation
// [ \t]{0,84}) whose states agree in rule, finality, rule edges and every
// transition off L. Two consecutive positions s, t agree on every token
// when the R + 1 links from s are the counter's, R being the longest run of
// L bytes that a token of `trie` begins with: the token's run from t ends
// within them, and off L both go alike. Returns such pairs (s, t): a walk
// or a mask from the first byte of a token is the same from either. Finds
// a counter where the first state a position goes to (in byte order) that
// agrees with it is the next position; misses others, never joins wrongly.
// O(transition runs), plus a trie walk per class that starts a counter.
std::vector<std::pair<uint32_t, uint32_t>> counter_positions_alike(const ByteGrammar& grammar,
                                                                   const TokenTrie& trie);
// Joins the labels of each pair of states in `alike` (union-find; each
// joined group takes its smallest label).
void join_labels(const std::vector<std::pair<uint32_t, uint32_t>>& alike,
                 std::vector<uint32_t>& labels);
// Per rule, the bytes that may come right after it ends: those its callers'
// targets read, or read through the rules they call (first bytes, and past
// the ones that may derive nothing), and, where a target may end its own
// rule, what may follow that one. An over-approximation (every caller, any
// stack): a byte outside it is read by nobody after the rule completes.
std::vector<ByteSet> rule_follow_bytes(const ByteGrammar& grammar, const TextClosure& closure);
// See CompiledGrammarData::waiter_class.
constexpr uint32_t kNotWaiting = 0;
std::vector<uint32_t> waiter_classes(const ByteGrammar& grammar);
// Fills CompiledGrammarData::plain_caller and plain_callee_bytes: per DFA
// state, kNotPlainCaller or the index of the first bytes of the rules it
// calls in callee_bytes.
inline constexpr uint32_t kNotPlainCaller = UINT32_MAX;
void plain_callers(const ByteGrammar& grammar, const TextClosure& closure,
                   std::vector<uint32_t>& plain_caller, std::vector<ByteSet>& callee_bytes);
// Per walk class: whether its short class (compute_walk_classes) holds
// another walk class too, so that a split walk shares its short part.
std::vector<uint8_t> split_classes(const std::vector<uint32_t>& walk_class, uint32_t num_classes,
                                   const std::vector<uint32_t>& short_class,
                                   uint32_t num_short_classes);

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
// never enters it never pays for it. Rules of more than kMaxLazyRuleStates
// pure states are classed at compile time. Ids: the compiled classes first,
// then a range per large rule, as long as its pure states. Thread-safe: a rule is classed once,
// under its once_flag, and its states' classes are stored last, with release, so that a reader who
// sees one sees the rest.
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
  // How many pure states rule `rule` has.
  uint32_t pure_states_in_rule(uint32_t rule) const { return pure_in_rule_[rule]; }
  // Bounds of the ids (kImpureClass included).
  uint32_t num_classes() const noexcept { return num_classes_; }
  uint32_t num_short_classes() const noexcept { return num_short_classes_; }
  // Heap bytes of the tables. Call it where no rule is being classed.
  size_t memory_bytes() const noexcept {
    return grammar_.states().size() * sizeof(uint32_t) + heap_bytes(short_class_) +
           heap_bytes(split_) + heap_bytes(large_index_) + heap_bytes(large_) +
           heap_bytes(pure_in_rule_) + large_.size() * sizeof(std::once_flag);
  }

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
  std::vector<uint32_t> pure_in_rule_;  // per rule
  std::vector<uint32_t> large_index_;   // per rule: into large_, or kSmallRule
  std::vector<LargeRule> large_;
  std::unique_ptr<std::once_flag[]> classed_;  // per large rule
  uint32_t num_classes_ = 1;
  uint32_t num_short_classes_ = 1;
};

}  // namespace internal
}  // namespace grammask

#endif  // GRAMMASK_SRC_MASK_STATE_ANALYSIS_H_
