#include "mask/text_closure.h"

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "automata/lowering.h"
#include "base/memory_bytes.h"
#include "base/sequence_index.h"
#include "base/utf8.h"

namespace grammask::internal {

size_t TextClosure::memory_bytes() const noexcept {
  size_t bytes = known_slots_ + heap_bytes(rule_first_bytes_) + heap_bytes(reaches_any_order_);
  for (const std::vector<Step>& steps : steps_) bytes += heap_bytes(steps);
  return bytes;
}

TextClosure::TextClosure(const ByteGrammar& grammar, size_t max_length,
                         const std::vector<uint32_t>* classes)
    : grammar_(grammar), max_length_(max_length), classes_(classes) {
  size_t slots = grammar.states().size();
  if (classes_ != nullptr) {
    slots = 0;
    for (uint32_t c : *classes_) slots = std::max<size_t>(slots, size_t{c} + 1);
  }
  known_ = std::make_unique<std::atomic<uint8_t>[]>(slots);
  known_slots_ = slots;
  for (size_t s = 0; s < slots; ++s) known_[s].store(kUnknown, std::memory_order_relaxed);
  // One byte per (byte class, next phase) in each phase: classes step alike.
  for (int phase = 0; phase < kPhases; ++phase) {
    std::vector<std::pair<uint8_t, int>> seen;  // (byte class, next phase)
    for (int b = 0; b < 256; ++b) {
      const int next = next_plain_text_phase(static_cast<Phase>(phase), static_cast<uint8_t>(b));
      if (next == kPhases) continue;
      const uint8_t cls = grammar.byte_class(static_cast<uint8_t>(b));
      if (std::find(seen.begin(), seen.end(), std::make_pair(cls, next)) != seen.end()) continue;
      seen.emplace_back(cls, next);
      steps_[phase].push_back({static_cast<uint8_t>(b), static_cast<Phase>(next)});
    }
  }
  compute_rule_first_bytes();
  compute_reaches_any_order();
}

// The proofs below follow rule edges without the members an AnyOrder item
// has written, so they could prove too much through one: its callers are
// given no cover (fewer covers only mean more walking).
void TextClosure::compute_reaches_any_order() {
  const auto& rules = grammar_.rules();
  if (grammar_.any_orders().empty()) return;
  const auto& states = grammar_.states();
  const auto& edges = grammar_.rule_edges();
  reaches_any_order_.assign(rules.size(), 0);
  // Callers of a rule that reaches one reach it too: a search backwards
  // over the calls.
  std::vector<std::pair<uint32_t, uint32_t>> calls;  // (callee, caller)
  for (const AutomatonState& state : states)
    for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end; ++e)
      calls.emplace_back(edges[e].rule, state.rule);
  std::sort(calls.begin(), calls.end());
  std::vector<uint32_t> todo;
  for (uint32_t r = 0; r < rules.size(); ++r) {
    if (rules[r].any_order == kNoAnyOrder) continue;
    reaches_any_order_[r] = 1;
    todo.push_back(r);
  }
  while (!todo.empty()) {
    const uint32_t callee = todo.back();
    todo.pop_back();
    auto it = std::lower_bound(calls.begin(), calls.end(), std::make_pair(callee, uint32_t{0}));
    for (; it != calls.end() && it->first == callee; ++it) {
      if (reaches_any_order_[it->second]) continue;
      reaches_any_order_[it->second] = 1;
      todo.push_back(it->second);
    }
  }
}

bool TextClosure::state_reaches_any_order(uint32_t state) const {
  const AutomatonState& at = grammar_.states()[state];
  if (at.in_any_order) return true;
  for (uint32_t e = at.rule_edges_begin; e < at.rule_edges_end; ++e)
    if (reaches_any_order_[grammar_.rule_edges()[e].rule]) return true;
  return false;
}

// Each state visited from a rule's start before reading a byte (through
// nullable calls) and the rules called there, then a worklist: a rule's
// bytes grow with its callees' until none changes.
void TextClosure::compute_rule_first_bytes() {
  const auto& rules = grammar_.rules();
  const auto& states = grammar_.states();
  const auto& edges = grammar_.rule_edges();
  rule_first_bytes_.assign(rules.size(), ByteSet());
  std::vector<uint32_t> callers_begin(rules.size() + 1, 0);
  std::vector<std::pair<uint32_t, uint32_t>> calls;  // (callee, caller)
  std::vector<uint32_t> todo, seen;
  std::vector<uint32_t> seen_by(states.size(), UINT32_MAX);  // the rule that last saw a state
  for (uint32_t r = 0; r < rules.size(); ++r) {
    if (rules[r].start == kNoState) continue;
    seen.assign(1, rules[r].start);
    seen_by[rules[r].start] = r;
    for (size_t i = 0; i < seen.size(); ++i) {
      const AutomatonState& state = states[seen[i]];
      rule_first_bytes_[r] |= state.scan;
      for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end; ++e) {
        calls.emplace_back(edges[e].rule, r);
        if (rules[edges[e].rule].nullable && seen_by[edges[e].target] != r) {
          seen_by[edges[e].target] = r;
          seen.push_back(edges[e].target);
        }
      }
    }
  }
  std::sort(calls.begin(), calls.end());
  calls.erase(std::unique(calls.begin(), calls.end()), calls.end());
  for (const auto& call : calls) ++callers_begin[call.first + 1];
  for (size_t r = 0; r < rules.size(); ++r) callers_begin[r + 1] += callers_begin[r];
  std::vector<uint8_t> queued(rules.size(), 1);
  for (uint32_t r = 0; r < rules.size(); ++r) todo.push_back(r);
  while (!todo.empty()) {
    const uint32_t callee = todo.back();
    todo.pop_back();
    queued[callee] = 0;
    for (uint32_t i = callers_begin[callee]; i < callers_begin[callee + 1]; ++i) {
      const uint32_t caller = calls[i].second;
      ByteSet grown = rule_first_bytes_[caller];
      grown |= rule_first_bytes_[callee];
      if (grown == rule_first_bytes_[caller]) continue;
      rule_first_bytes_[caller] = grown;
      if (!queued[caller]) {
        queued[caller] = 1;
        todo.push_back(caller);
      }
    }
  }
}

ByteSet TextClosure::first_bytes(uint32_t state) const {
  const auto& states = grammar_.states();
  const auto& edges = grammar_.rule_edges();
  if (states[state].calls_no_rule()) return states[state].scan;  // (most states)
  // (Nullable calls chain through a few states at most.)
  uint32_t seen[16] = {state};
  size_t count = 1;
  ByteSet bytes;
  for (size_t i = 0; i < count; ++i) {
    const AutomatonState& at = states[seen[i]];
    bytes |= at.scan;
    for (uint32_t e = at.rule_edges_begin; e < at.rule_edges_end; ++e) {
      bytes |= rule_first_bytes_[edges[e].rule];
      if (!grammar_.rules()[edges[e].rule].nullable ||
          std::find(seen, seen + count, edges[e].target) != seen + count)
        continue;
      if (count == std::size(seen)) {  // (no conclusion: the proofs decide)
        bytes.set_range(0, 255);
        return bytes;
      }
      seen[count++] = edges[e].target;
    }
  }
  return bytes;
}

// A depth-first proof that every plain-text string of `depth` bytes has a
// path from a configuration: a DFA state, the UTF-8 position, and the
// states to return to after the rules entered so far. For each byte a phase allows, some
// successor must again have a proof one byte shorter. Results are memoized
// per configuration as the depth proven and the depth refuted (a proof for
// a depth holds for every smaller one).
class TextClosure::Search {
 public:
  explicit Search(const TextClosure& closure) : closure_(closure) {}

  // The best cover a proof reaches (the deep one first: what it proves on
  // the way is kept for the short one).
  TextCover cover(uint32_t state) {
    // The proof recurses once per byte: past this depth, no proof for all
    // text (the walks then read a larger trie).
    constexpr size_t kMaxDepth = 512;
    Config start;
    start.state = state;
    if (closure_.max_length_ <= kMaxDepth && proves(start, closure_.max_length_)) return kAllText;
    work_ = 0;  // a fresh budget for the short proof
    if (proves(start, std::min(closure_.max_length_, TextSlice::kShortLength))) return kShortText;
    return kNoText;
  }

 private:
  static constexpr size_t kMaxReturns = 4;   // nested rule calls followed
  static constexpr size_t kMaxWork = 50000;  // successor steps per search

  struct Config {
    uint32_t state = 0;
    uint8_t phase = kBoundary;
    uint8_t returns = 0;
    uint32_t stack[kMaxReturns] = {};  // unused entries stay 0
    friend bool operator==(const Config& a, const Config& b) {
      return a.state == b.state && a.phase == b.phase && a.returns == b.returns &&
             std::equal(a.stack, a.stack + a.returns, b.stack);
    }
  };
  struct ConfigHash {
    size_t operator()(const Config& c) const noexcept {
      uint64_t h = (uint64_t{c.state} << 8) ^ (uint64_t{c.phase} << 4) ^ c.returns;
      for (uint8_t i = 0; i < c.returns; ++i) h = (h ^ c.stack[i]) * 0x9E3779B97F4A7C15ULL;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  struct Known {
    size_t proven = 0;
    size_t refuted = SIZE_MAX;
  };
  // Known answers by configuration, open addressing: a proof looks up every
  // configuration it meets (tens of thousands through a chain of calls),
  // which a node-based map made most of its cost.
  class KnownTable {
   public:
    const Known* find(const Config& config) const {
      if (slots_.empty()) return nullptr;
      for (size_t i = ConfigHash()(config) & (slots_.size() - 1);;
           i = (i + 1) & (slots_.size() - 1)) {
        const Slot& slot = slots_[i];
        if (slot.config.state == kEmpty) return nullptr;
        if (slot.config == config) return &slot.known;
      }
    }
    Known& operator[](const Config& config) {
      if (2 * (count_ + 1) > slots_.size()) grow();
      for (size_t i = ConfigHash()(config) & (slots_.size() - 1);;
           i = (i + 1) & (slots_.size() - 1)) {
        Slot& slot = slots_[i];
        if (slot.config.state == kEmpty) {
          slot.config = config;
          ++count_;
          return slot.known;
        }
        if (slot.config == config) return slot.known;
      }
    }

   private:
    static constexpr uint32_t kEmpty = UINT32_MAX;  // (no state has this id)
    struct Slot {
      Config config;
      Known known;
    };
    void grow() {
      std::vector<Slot> old(std::max<size_t>(64, 2 * slots_.size()));
      old.swap(slots_);
      for (Slot& slot : slots_) slot.config.state = kEmpty;
      count_ = 0;
      for (const Slot& slot : old)
        if (slot.config.state != kEmpty) (*this)[slot.config] = slot.known;
    }
    std::vector<Slot> slots_;
    size_t count_ = 0;
  };
  // Scratch per recursion level, reused across the search.
  struct Level {
    std::vector<Config> here, next;
    std::vector<size_t> next_begin;
  };

  bool proves(const Config& config, size_t depth) {
    // A state known to read all text on its own does so whatever the
    // rules entered around it.
    if (depth == 0 ||
        closure_.known_at(config.state).load(std::memory_order_relaxed) == known(kAllText))
      return true;
    if (const Known* known = known_.find(config)) {
      if (known->proven >= depth) return true;
      if (known->refuted <= depth) return false;
    }
    // The successors on each byte first: most refutations are a byte with
    // none, found without going deeper.
    // (A deque: deeper levels are added without moving this one.)
    const size_t index = std::min<size_t>(closure_.max_length_, 512) - depth;
    if (levels_.size() <= index) levels_.resize(index + 1);
    Level& level = levels_[index];
    expand(config, level.here);
    const std::vector<Step>& steps = closure_.steps_[config.phase];
    level.next.clear();
    level.next_begin.assign(1, 0);
    bool all = true;
    for (const Step& step : steps) {
      if (++work_ > kMaxWork) return false;  // unproven; not memoized
      for (const Config& c : level.here) {
        const uint32_t t = closure_.grammar_.next(c.state, step.byte);
        if (t == kNoState) continue;
        Config successor = c;
        successor.state = t;
        successor.phase = step.next;
        level.next.push_back(successor);
      }
      if (level.next.size() == level.next_begin.back()) {
        all = false;
        break;
      }
      level.next_begin.push_back(level.next.size());
    }
    for (size_t i = 0; all && i < steps.size(); ++i) {
      bool some = false;
      for (size_t j = level.next_begin[i]; j < level.next_begin[i + 1] && !some; ++j) {
        const Config successor = level.next[j];  // (deeper levels reuse other scratch)
        some = proves(successor, depth - 1);
      }
      all = some;
    }
    Known& known = known_[config];
    if (all) {
      known.proven = std::max(known.proven, depth);
    } else if (work_ <= kMaxWork) {
      known.refuted = std::min(known.refuted, depth);
    }
    return all;
  }

  // The configurations reachable without reading a byte: entering a called
  // rule (and skipping a nullable one), and returning from an entered rule
  // at one of its final states. The item's own rule never ends: what
  // follows it depends on the stack below.
  void expand(const Config& config, std::vector<Config>& out) const {
    const ByteGrammar& grammar = closure_.grammar_;
    out.assign(1, config);
    auto add = [&](const Config& d) {
      if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    };
    for (size_t i = 0; i < out.size(); ++i) {
      const Config c = out[i];
      const AutomatonState& state = grammar.states()[c.state];
      for (uint32_t e = state.rule_edges_begin; e < state.rule_edges_end; ++e) {
        const RuleEdge& edge = grammar.rule_edges()[e];
        if (grammar.rules()[edge.rule].nullable) {
          Config skip = c;
          skip.state = edge.target;
          add(skip);
        }
        if (grammar.states()[edge.target].is_tail) {
          // A tail call: returning to the target ends this rule at once, so
          // the callee's ends are this rule's ends (no frame: the chains of
          // state rules of a large key automaton stay within the bound).
          Config enter = c;
          enter.state = grammar.rules()[edge.rule].start;
          add(enter);
        } else if (c.returns < kMaxReturns) {
          Config enter = c;
          enter.stack[enter.returns++] = edge.target;
          enter.state = grammar.rules()[edge.rule].start;
          add(enter);
        }
      }
      if (state.is_final && c.returns > 0) {
        Config back = c;
        back.state = back.stack[--back.returns];
        back.stack[back.returns] = 0;
        add(back);
      }
    }
  }

  const TextClosure& closure_;
  KnownTable known_;
  std::deque<Level> levels_;
  size_t work_ = 0;
};

namespace {

// A (DFA state, UTF-8 position) pair as one key (positions fit in 3 bits).
uint64_t pair_key(uint32_t state, int phase) {
  return (uint64_t{state} << 3) | static_cast<uint64_t>(phase);
}

}  // namespace

bool TextClosure::loops_on_all_text(uint32_t state, uint64_t* visited) const {
  // A search over the (state, UTF-8 position) pairs reachable by plain
  // text, where a state also stands for the starts of the rules it calls
  // last (an Earley item predicts them: a large key automaton, whose cycles
  // the lowering cut into such rules). Returns from called rules are not
  // followed, nor is the end of the item's own rule: fewer paths, so a
  // proof still holds. When it succeeds, every state it met between
  // characters reads all text too and is remembered as such: the key
  // automaton of a large object is searched once, not once per key
  // position.
  constexpr size_t kMaxPairs = size_t{1} << 16;
  constexpr size_t kMaxSources = 16;
  const auto& states = grammar_.states();
  std::vector<uint32_t> sources;
  auto close = [&](uint32_t s) {  // s and the starts of the rules it calls last
    sources.assign(1, s);
    for (size_t i = 0; i < sources.size() && sources.size() <= kMaxSources; ++i) {
      const AutomatonState& at = states[sources[i]];
      for (uint32_t e = at.rule_edges_begin; e < at.rule_edges_end; ++e) {
        const RuleEdge& edge = grammar_.rule_edges()[e];
        if (!states[edge.target].is_tail) continue;
        const uint32_t start = grammar_.rules()[edge.rule].start;
        if (std::find(sources.begin(), sources.end(), start) == sources.end())
          sources.push_back(start);
      }
    }
  };
  std::unordered_set<uint64_t> seen{pair_key(state, kBoundary)};
  std::vector<std::pair<uint32_t, Phase>> todo{{state, kBoundary}};
  std::vector<uint32_t> between_characters{state};
  struct Count {  // (every return counts what the search visited)
    uint64_t* visited;
    const std::unordered_set<uint64_t>& seen;
    ~Count() {
      if (visited != nullptr) *visited += seen.size();
    }
  } count{visited, seen};
  while (!todo.empty()) {
    const auto [s, phase] = todo.back();
    todo.pop_back();
    close(s);
    for (const Step& step : steps_[phase]) {
      bool some = false;
      for (uint32_t u : sources) {
        const uint32_t t = grammar_.next(u, step.byte);
        if (t == kNoState) continue;
        some = true;
        if (step.next == kBoundary &&
            known_at(t).load(std::memory_order_relaxed) == known(kAllText))
          continue;
        if (!seen.insert(pair_key(t, step.next)).second) continue;
        if (seen.size() > kMaxPairs) return false;
        todo.push_back({t, step.next});
        if (step.next == kBoundary) between_characters.push_back(t);
      }
      if (!some) return false;  // a text this state refuses
    }
  }
  for (uint32_t s : between_characters)
    known_at(s).store(known(kAllText), std::memory_order_relaxed);
  return true;
}

std::optional<TextCover> TextClosure::cover_by_dead_end(uint32_t state) const {
  const auto& states = grammar_.states();
  // Reading nothing but one call to a rule that derives something (a key
  // inside a member): the text is that rule's, and its ends matter (the
  // caller goes on after them). Else the state's own rule never ends in
  // the proof, so its final states do not matter.
  bool entered = false;
  if (!states[state].calls_no_rule()) {
    const AutomatonState& caller = states[state];
    if (caller.rule_edges_end - caller.rule_edges_begin != 1 || !caller.scan.empty()) return {};
    const LoweredRule& callee =
        grammar_.rules()[grammar_.rule_edges()[caller.rule_edges_begin].rule];
    if (callee.nullable) return {};
    state = callee.start;
    entered = true;
  }
  // Breadth-first over (state, UTF-8 position): the first step with no
  // successor is the shortest refused string. Depth is in bytes, as in the
  // proof.
  constexpr size_t kMaxPairs = size_t{1} << 16;
  std::unordered_set<uint64_t> seen{pair_key(state, kBoundary)};
  std::vector<std::pair<uint32_t, Phase>> level{{state, kBoundary}}, next;
  for (size_t depth = 0; depth < max_length_ && !level.empty(); ++depth) {
    next.clear();
    for (const auto& [s, phase] : level) {
      const AutomatonState& at = states[s];
      if (!at.calls_no_rule() || (entered && at.is_final)) return {};
      for (const Step& step : steps_[phase]) {
        const uint32_t t = grammar_.next(s, step.byte);
        if (t == kNoState) return depth < TextSlice::kShortLength ? kNoText : kShortText;
        if (!seen.insert(pair_key(t, step.next)).second) continue;
        if (seen.size() > kMaxPairs) return {};
        next.push_back({t, step.next});
      }
    }
    level.swap(next);
  }
  return kAllText;
}

template <typename Visit>
bool TextClosure::follow_one_char(uint32_t state, Visit visit) const {
  std::vector<std::pair<uint32_t, Phase>> inside{{state, kBoundary}};
  while (!inside.empty()) {
    const auto [at, phase] = inside.back();
    inside.pop_back();
    for (const Step& step : steps_[phase]) {
      const uint32_t t = grammar_.next(at, step.byte);
      const bool ends = step.next == kBoundary;
      if (!visit(t, ends)) return false;
      if (t != kNoState && !ends) inside.push_back({t, step.next});
    }
  }
  return true;
}

bool TextClosure::reads_any_one_char(uint32_t rule) const {
  const uint32_t start = grammar_.rules()[rule].start;
  return start != kNoState && follow_one_char(start, [&](uint32_t t, bool ends) {
           return t != kNoState && (!ends || grammar_.states()[t].is_final);
         });
}

bool TextClosure::chain_reads_all_text(uint32_t state) const {
  // Rule edges looked at, bounded: a state with many calls and a vocabulary
  // with a very long token would otherwise cost their product (no proof
  // then; the deep search below may still find one).
  constexpr size_t kMaxWork = size_t{1} << 16;
  size_t work = 0;
  const ByteGrammar& grammar = grammar_;
  const AutomatonState& first = grammar.states()[state];
  for (uint32_t e = first.rule_edges_begin; e < first.rule_edges_end; ++e) {
    size_t calls = 1;
    for (uint32_t link = e; calls < max_length_; ++calls) {
      const AutomatonState& next = grammar.states()[grammar.rule_edges()[link].target];
      work += 1 + next.rule_edges_end - next.rule_edges_begin;
      if (work > kMaxWork) return false;
      link = grammar.next_call_of_same_rule(link);
      if (link == ByteGrammar::kNoEdge) break;
    }
    if (calls >= max_length_ && reads_any_one_char(grammar.rule_edges()[e].rule)) return true;
  }
  return false;
}

bool TextClosure::scans_all_ascii_text(const ByteSet& scan) {
  for (unsigned b = 0x20; b < 0x7F; ++b)
    if (is_plain_text_char(b) && !scan.test(static_cast<uint8_t>(b))) return false;
  return true;
}

bool TextClosure::calls_into_a_union(uint32_t state) const {
  const AutomatonState& at = grammar_.states()[state];
  const size_t calls = at.rule_edges_end - at.rule_edges_begin;
  return calls >= 2 || (calls == 1 && !at.scan.empty());
}

bool TextClosure::union_reads_all_text(uint32_t state) const {
  // Sets of states with their UTF-8 position, first the state and the
  // starts of the rules it calls (and they call, and so on: an Earley item
  // predicts them all); on each step the states that read the byte, closed
  // the same way. A set with no successor is a text no state reads.
  // Returns from called rules are not followed, nor is the end of the
  // item's own rule: fewer paths, so a proof still holds. Bounded: a large
  // key automaton is a few thousand sets.
  constexpr size_t kMaxSetSize = 32;
  constexpr uint32_t kMaxSets = 8192;
  constexpr size_t kMaxWork = size_t{1} << 18;
  const auto& states = grammar_.states();
  std::vector<uint32_t> set{state}, key, current;
  auto close = [&]() {
    for (size_t i = 0; i < set.size(); ++i) {
      if (set.size() > kMaxSetSize) return false;
      const AutomatonState& at = states[set[i]];
      for (uint32_t e = at.rule_edges_begin; e < at.rule_edges_end; ++e) {
        const uint32_t start = grammar_.rules()[grammar_.rule_edges()[e].rule].start;
        if (start != kNoState && std::find(set.begin(), set.end(), start) == set.end())
          set.push_back(start);
      }
    }
    std::sort(set.begin(), set.end());
    return true;
  };
  if (!close()) return false;
  SequenceIndex sets;
  sets.reset(1024);
  key.assign(1, kBoundary);
  key.insert(key.end(), set.begin(), set.end());
  sets.intern(key.data(), key.size());
  size_t work = 0;
  for (uint32_t k = 0; k < sets.count(); ++k) {
    current.assign(sets.data(k), sets.data(k) + sets.size(k));  // (interning moves the arena)
    for (const Step& step : steps_[current[0]]) {
      set.clear();
      for (size_t i = 1; i < current.size(); ++i) {
        const uint32_t t = grammar_.next(current[i], step.byte);
        if (t != kNoState && std::find(set.begin(), set.end(), t) == set.end()) set.push_back(t);
      }
      work += current.size();
      if (set.empty() || work > kMaxWork || !close()) return false;
      if (step.next == kBoundary && std::any_of(set.begin(), set.end(), [&](uint32_t t) {
            return known_at(t).load(std::memory_order_relaxed) == known(kAllText);
          }))
        continue;  // one of them reads the rest on its own
      key.assign(1, step.next);
      key.insert(key.end(), set.begin(), set.end());
      sets.intern(key.data(), key.size());
      if (sets.count() > kMaxSets) return false;
    }
  }
  return true;
}

uint32_t TextClosure::plain_chars(uint32_t state, const std::vector<uint8_t>& pure) const {
  // Level by level, the states after n characters: each must read every
  // plain character (its bytes through pure states), until a level where
  // none reads any. One that reads some but not all ends it.
  constexpr size_t kMaxLevelStates = 64;
  std::vector<uint32_t> level{state}, next;
  for (uint32_t n = 0; n <= TextSlice::kMaxTierChars; ++n) {
    bool reads = false, refuses = false;
    next.clear();
    for (const uint32_t s : level) {
      if (!pure[s]) return 0;
      const bool alike = follow_one_char(s, [&](uint32_t t, bool ends) {
        if (t == kNoState) {
          refuses = true;
        } else {
          reads = true;
          if (!pure[t]) return false;
          if (ends && std::find(next.begin(), next.end(), t) == next.end()) next.push_back(t);
        }
        return !(reads && refuses);
      });
      if (!alike) return 0;
    }
    if (!reads) return n;  // (0 when the state reads no plain text at all)
    if (next.size() > kMaxLevelStates) return 0;
    level.swap(next);
  }
  return 0;  // every plain text of kMaxTierChars + 1 characters: not a tier
}

std::optional<ByteSet> TextClosure::avoided_ascii(uint32_t state,
                                                  const std::vector<uint8_t>& pure) const {
  // The core: `state` and the states that plain characters lead to from the
  // core and that lead back to `state`. Every character read in the core
  // must stay in it, or be an ASCII byte (with its byte class) put in X.
  constexpr size_t kMaxCore = 32;
  constexpr size_t kMaxBackSearch = 32;
  // Steps of all the searches together. An exclusion's core takes a few
  // thousand; the automata of large patterns can take hundreds of
  // thousands to fail, which would cost a mask more than the walk it saves.
  constexpr size_t kMaxWork = size_t{1} << 15;
  size_t work = 0;
  // Calls on_char(first byte, target or kNoState) for every plain character
  // from `at` (one per byte class and phase), through pure states.
  auto chars_from = [&](uint32_t at, auto on_char) {
    struct Node {
      uint32_t at;
      Phase phase;
      uint8_t first;
    };
    std::vector<Node> stack{{at, kBoundary, 0}};
    while (!stack.empty()) {
      const Node node = stack.back();
      stack.pop_back();
      work += steps_[node.phase].size();
      for (const Step& step : steps_[node.phase]) {
        const uint8_t first = node.phase == kBoundary ? step.byte : node.first;
        const uint32_t t = grammar_.next(node.at, step.byte);
        const bool ok = t != kNoState && pure[t];
        if (step.next == kBoundary || !ok) {
          on_char(first, ok ? t : kNoState);
        } else {
          stack.push_back({t, step.next, first});
        }
      }
    }
  };
  // A core state reads all but at most kMaxAvoidedBytes plain ASCII
  // characters (it would have to avoid the others): most states do not, and
  // neither they nor what lies past them need a search.
  auto reads_most_ascii = [&](uint32_t s) {
    const ByteSet& scan = grammar_.states()[s].scan;
    size_t unread = 0;
    for (unsigned b = 0x20; b < 0x7F; ++b)
      unread += is_plain_text_char(b) && !scan.test(static_cast<uint8_t>(b));
    return unread <= kMaxAvoidedBytes;
  };
  // Whether `from` leads back to `state` by plain characters, through such
  // states.
  auto search_back = [&](uint32_t from) {
    std::vector<uint32_t> seen{from};
    for (size_t i = 0; i < seen.size() && seen.size() <= kMaxBackSearch && work <= kMaxWork; ++i) {
      bool found = false;
      chars_from(seen[i], [&](uint8_t, uint32_t t) {
        if (t == state) found = true;
        if (t != kNoState && seen.size() <= kMaxBackSearch &&
            std::find(seen.begin(), seen.end(), t) == seen.end() && reads_most_ascii(t))
          seen.push_back(t);
      });
      if (found) return true;
    }
    return false;
  };
  // The answers are kept: many characters lead to one target, and searching
  // again for each made this a millisecond per state on large pattern
  // automata.
  std::vector<std::pair<uint32_t, bool>> answers;
  auto leads_back = [&](uint32_t from) {
    for (const auto& [target, answer] : answers)
      if (target == from) return answer;
    const bool answer = search_back(from);
    answers.emplace_back(from, answer);
    return answer;
  };
  if (!pure[state] || !reads_most_ascii(state)) return std::nullopt;
  std::vector<uint32_t> core{state};
  ByteSet avoid;
  size_t avoided = 0;
  for (size_t i = 0; i < core.size(); ++i) {
    bool failed = false;
    chars_from(core[i], [&](uint8_t first, uint32_t t) {
      if (failed) return;
      if (t != kNoState && std::find(core.begin(), core.end(), t) != core.end()) return;
      // (A byte already avoided needs no search: it stays avoided.)
      if (t != kNoState && core.size() < kMaxCore && !avoid.test(first) && reads_most_ascii(t) &&
          leads_back(t)) {
        core.push_back(t);
        return;
      }
      if (first >= 0x80) {
        failed = true;
        return;
      }
      const uint8_t cls = grammar_.byte_class(first);
      for (unsigned b = 0; b < 0x80; ++b) {
        if (grammar_.byte_class(static_cast<uint8_t>(b)) != cls ||
            avoid.test(static_cast<uint8_t>(b)))
          continue;
        avoid.set(static_cast<uint8_t>(b));
        ++avoided;
      }
      failed = avoided > kMaxAvoidedBytes;  // (no use searching on)
    });
    if (failed || avoided > kMaxAvoidedBytes || work > kMaxWork) return std::nullopt;
  }
  return avoid;
}

TextCover TextClosure::cover(uint32_t state) const {
  return best_cover(&state, 1);
}

std::optional<TextCover> TextClosure::cover_without_proof(uint32_t state,
                                                          uint64_t* search_budget) const {
  const uint8_t answer = known_at(state).load(std::memory_order_relaxed);
  if (answer != kUnknown) return static_cast<TextCover>(answer - 1);
  auto loop_search = [&] {
    if (search_budget == nullptr) return loops_on_all_text(state);
    if (*search_budget == 0) return false;
    uint64_t visited = 0;
    const bool loops = loops_on_all_text(state, &visited);
    *search_budget -= std::min(*search_budget, visited);
    return loops;
  };
  std::optional<TextCover> decided;
  if (reaches_any_order(state) || !scans_all_ascii_text(first_bytes(state))) {
    decided = kNoText;
  } else if (loop_search() || chain_reads_all_text(state)) {
    decided = kAllText;
  } else {
    decided = cover_by_dead_end(state);
  }
  if (decided) known_at(state).store(known(*decided), std::memory_order_relaxed);
  return decided;
}

TextCover TextClosure::best_cover(const uint32_t* states, size_t count) const {
  // Known answers and the cheap loop search first: one string body among
  // the items spares deep searches from the others. A set of many new
  // states searches a few of them per call (each search is bounded; the
  // others stay unknown, so a later mask tries them): a hostile grammar
  // cannot make one mask run thousands of searches.
  constexpr int kMaxSearches = 8;
  int searches = 0;
  TextCover best = kNoText;
  bool unknown = false;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t state = states[i];
    if (reaches_any_order(state)) continue;
    const uint8_t answer = known_at(state).load(std::memory_order_relaxed);
    if (answer != kUnknown) {
      best = std::max(best, static_cast<TextCover>(answer - 1));
      if (best == kAllText) return best;
      continue;
    }
    if (!scans_all_ascii_text(first_bytes(state))) {
      known_at(state).store(known(kNoText), std::memory_order_relaxed);  // most states, at once
      continue;
    }
    if (searches < kMaxSearches) {
      ++searches;
      if (loops_on_all_text(state)) return kAllText;  // (remembered by the search)
    }
    unknown = true;
  }
  // The deep proofs from the last items first: a set adds the items that
  // entered a string body's rules last, and a proof from them follows the
  // fewest calls (from the item that called the body, a search of
  // MaskBench's long string bodies took a millisecond at every position).
  for (size_t n = 0; n < count && unknown && best != kAllText && searches < 2 * kMaxSearches; ++n) {
    const size_t i = count - 1 - n;
    if (known_at(states[i]).load(std::memory_order_relaxed) != kUnknown) continue;
    ++searches;
    const std::optional<TextCover> decided = chain_reads_all_text(states[i])
                                                 ? std::optional<TextCover>(kAllText)
                                                 : cover_by_dead_end(states[i]);
    TextCover cover;
    if (decided) {
      cover = *decided;
    } else if (calls_into_a_union(states[i]) && union_reads_all_text(states[i])) {
      cover = kAllText;
    } else {
      cover = Search(*this).cover(states[i]);
    }
    known_at(states[i]).store(known(cover), std::memory_order_relaxed);
    best = std::max(best, cover);
  }
  return best;
}

}  // namespace grammask::internal
