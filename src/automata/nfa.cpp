// NFA building. build_nfa(i) (re)builds and freezes the NFA of lowered rule
// `i` from its IR expression, Thompson-style (terminals as UTF-8 byte
// sequences; references inlined, in tail contexts where they are last, or
// kept as rule edges), or with the split construction that lifts parts into
// rules of their own if its body is marked. Building may add lowered rules
// (source rules kept as rules, lifted parts; the table is here), which
// build_pending_nfas() builds in turn. Failures (max_states,
// max_lowering_work, nesting deeper than kMaxDepth) go to status_, after
// which the builders return at once. Repetition is in repetition.cpp.
#include <algorithm>
#include <string>

#include "automata/lowering_impl.h"
#include "base/utf8.h"

namespace grammask::internal {

namespace {

constexpr int kMaxDepth = 2000;

// Code point ranges of a class, sorted, merged, negated if asked, and
// without surrogates (which have no UTF-8 encoding).
std::vector<CodePointRange> normalized_ranges(const Expr& e) {
  std::vector<CodePointRange> r;
  if (e.kind == Expr::Kind::kAnyChar) {
    r.push_back({0, kMaxCodePoint});
  } else {
    r = e.ranges;
    std::sort(r.begin(), r.end(),
              [](const CodePointRange& a, const CodePointRange& b) { return a.first < b.first; });
    std::vector<CodePointRange> merged;
    for (const auto& x : r) {
      if (!merged.empty() && x.first <= merged.back().last + 1) {
        merged.back().last = std::max(merged.back().last, x.last);
      } else {
        merged.push_back(x);
      }
    }
    r = std::move(merged);
    if (e.negated) {
      std::vector<CodePointRange> complement;
      uint32_t next = 0;
      for (const auto& x : r) {
        if (x.first > next) complement.push_back({next, x.first - 1});
        next = x.last + 1;
      }
      if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
      r = std::move(complement);
    }
  }
  std::vector<CodePointRange> out;
  for (const auto& x : r) {
    uint32_t last = std::min(x.last, kMaxCodePoint);
    if (x.first <= 0xDFFF && last >= 0xD800) {
      if (x.first < 0xD800) out.push_back({x.first, 0xD7FF});
      if (last > 0xDFFF) out.push_back({0xE000, last});
    } else if (x.first <= last) {
      out.push_back({x.first, last});
    }
  }
  return out;
}

}  // namespace

// Builds the NFA of every pending rule that has none yet (building one may
// add more).
void Lowering::build_pending_nfas() {
  while (nfas_.size() < pending_.size() && status_.ok()) {
    nfas_.emplace_back();
    nfa_charge_.push_back(0);
    built_split_.push_back(false);
    dfa_begin_.push_back(0);
    build_nfa(static_cast<uint32_t>(nfas_.size() - 1));
  }
}

// (Re)builds the NFA of lowered rule `i`, split if its body is marked.
void Lowering::build_nfa(uint32_t i) {
  total_nfa_states_ -= nfa_charge_[i];
  const size_t charged_before = total_nfa_states_;
  building_rule_ = i;
  Nfa nfa;
  std::swap(nfa.staging, nfa_staging_);  // (lent back below, emptied)
  nfa.start = nfa.add();
  const Expr& body = *pending_[i].body;
  built_split_[i] = split_bodies_.count(&body) != 0;
  if (out_->rules_[i].token_terminal != kNoTokenTerminal) {
    nfa.accept = nfa.add();  // (unreachable: the engine completes the rule)
  } else if (out_->rules_[i].any_order != kNoAnyOrder) {
    build_any_order_nfa(i, nfa);
  } else if (built_split_[i]) {
    nfa.accept = build_split(body, nfa.start, nfa, 0);
  } else {
    TailContext tail{nfa.add(), {}, {}};
    build_context(body, nfa.start, nfa, 0, tail);
    nfa.accept = tail.end;
  }
  nfa_charge_[i] = total_nfa_states_ - charged_before;
  nfa.freeze();
  std::swap(nfa.staging, nfa_staging_);
  nfas_[i] = std::move(nfa);
}

uint32_t Lowering::lowered_rule_for_source(uint32_t source) {
  if (lowered_of_source_[source] == kNoState) {
    lowered_of_source_[source] =
        new_lowered_rule(grammar_.rules()[source].name, &grammar_.rules()[source].body);
  }
  return lowered_of_source_[source];
}

// The rule for `part` of the rule being built (a repeated part, or one
// split off): structurally equal parts share one, so that the string
// bodies of different properties call the same rule and their states
// share walk classes (and their walks).
uint32_t Lowering::lifted_rule(const Expr& part) {
  if (auto known = lifted_at_.find(&part); known != lifted_at_.end()) return known->second;
  const size_t hash = structural_hash(part);
  auto [first, last] = lifted_by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (*pending_[it->second].body == part) {
      lifted_at_.emplace(&part, it->second);
      return it->second;
    }
  }
  const uint32_t rule = new_lowered_rule(
      out_->rules_[building_rule_].name + "#" + std::to_string(out_->rules_.size()), &part);
  lifted_by_hash_.emplace(hash, rule);
  lifted_at_.emplace(&part, rule);
  return rule;
}

// Agrees with Expr's operator== (equal expressions hash alike).
size_t Lowering::structural_hash(const Expr& e) {
  uint64_t h = 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(e.kind) + 1);
  auto mix = [&h](uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
  };
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      for (char32_t cp : e.literal) mix(cp);
      break;
    case Expr::Kind::kCharClass:
      mix(e.negated);
      for (const CodePointRange& range : e.ranges) mix((uint64_t{range.first} << 32) | range.last);
      break;
    case Expr::Kind::kRuleRef:
      mix(e.rule);
      break;
    case Expr::Kind::kRepeat:
      mix((uint64_t{e.min} << 32) | e.max);
      break;
    case Expr::Kind::kToken:
    case Expr::Kind::kRegex:
    case Expr::Kind::kSubstring:
      mix((uint64_t{e.negated} << 33) | (uint64_t{e.lazy} << 32) | e.token);
      for (char32_t cp : e.literal) mix(cp);
      break;
    default:
      break;
  }
  for (const Expr& child : e.children) mix(structural_hash(child));
  return static_cast<size_t>(h ^ (h >> 32));
}

uint32_t Lowering::new_lowered_rule(std::string name, const Expr* body) {
  out_->rules_.push_back(LoweredRule{std::move(name), 0, false});
  pending_.push_back(PendingRule{body});
  return static_cast<uint32_t>(out_->rules_.size() - 1);
}

// The children of a sequence one after another; `part(child, at)` adds one
// child starting at `at` and returns where it ends.
template <typename Part>
uint32_t Lowering::build_sequence(const Expr& e, uint32_t from, Part part) {
  uint32_t cur = from;
  for (const Expr& c : e.children) cur = part(c, cur);
  return cur;
}

// Each alternative from a fresh start state (so a loop back to it cannot
// leak into a sibling), all joined at one end state.
template <typename Part>
uint32_t Lowering::build_alternation(const Expr& e, uint32_t from, Nfa& nfa, Part part) {
  uint32_t end = nfa.add();
  for (const Expr& c : e.children) {
    uint32_t start = nfa.add();
    nfa.add_epsilon(from, start);
    uint32_t stop = part(c, start);
    nfa.add_epsilon(stop, end);
  }
  charge(e.children.size() + 1);
  return end;
}

// Adds the fragment for `e` starting at `from`; returns its end state.
uint32_t Lowering::build(const Expr& e, uint32_t from, Nfa& nfa, int depth) {
  if (!status_.ok()) return from;
  if (depth > kMaxDepth) {
    status_ = Status(ErrorCode::kLimitExceeded, "grammar nested too deeply to lower", e.where);
    return from;
  }
  switch (e.kind) {
    case Expr::Kind::kLiteral: {
      uint32_t cur = from;
      for (char32_t cp : e.literal) {
        uint8_t bytes[4];
        utf8::encode(static_cast<uint32_t>(cp), bytes);
        for (int i = 0; i < static_cast<int>(utf8::encoded_length(static_cast<uint32_t>(cp)));
             ++i) {
          uint32_t next = nfa.add();
          nfa.add_bytes(cur, bytes[i], bytes[i], next);
          cur = next;
        }
      }
      charge(e.literal.size());
      return cur;
    }
    case Expr::Kind::kCharClass:
    case Expr::Kind::kAnyChar: {
      const std::vector<Utf8Sequence>& seqs = utf8_sequences_of(e);
      const uint32_t end = nfa.add();
      // Sequences that end in the same byte ranges share the states that
      // read them ([E1-EC][80-BF][80-BF] and [EE-EF][80-BF][80-BF] share
      // their last two), as in a minimal automaton: the subset
      // construction would otherwise keep one DFA state per sequence.
      std::vector<Suffix>& suffixes = suffix_scratch_;
      suffixes.clear();
      auto same_suffix = [](const Suffix& x, const Utf8Sequence& s, int start) {
        if (x.bytes.length - x.start != s.length - start) return false;
        for (int k = 0; start + k < s.length; ++k)
          if (x.bytes.lo[x.start + k] != s.lo[start + k] ||
              x.bytes.hi[x.start + k] != s.hi[start + k])
            return false;
        return true;
      };
      for (const Utf8Sequence& s : seqs) {
        // The states after the first byte, shared where a suffix is known.
        uint32_t next = end;
        for (int i = s.length - 1; i >= 1; --i) {
          auto known = std::find_if(suffixes.begin(), suffixes.end(),
                                    [&](const Suffix& x) { return same_suffix(x, s, i); });
          if (known != suffixes.end()) {
            next = known->state;
            continue;
          }
          const uint32_t state = nfa.add();
          nfa.add_bytes(state, s.lo[i], s.hi[i], next);
          suffixes.push_back({s, static_cast<uint8_t>(i), state});
          next = state;
        }
        nfa.add_bytes(from, s.lo[0], s.hi[0], next);
      }
      charge(seqs.size() * 3 + 1);
      return end;
    }
    case Expr::Kind::kRuleRef: {
      if (copied_here(e.rule)) return build_in_new_context(e, from, nfa, depth);
      uint32_t target = nfa.add();
      nfa.add_rule(from, lowered_rule_for_source(e.rule), target);
      charge(1);
      return target;
    }
    case Expr::Kind::kSequence: {
      auto part = [&](const Expr& c, uint32_t at) { return build(c, at, nfa, depth + 1); };
      return build_sequence(e, from, part);
    }
    case Expr::Kind::kAlternation:
      return build_in_new_context(e, from, nfa, depth);
    case Expr::Kind::kRepeat:
      if (e.max <= 1) return build_in_new_context(e, from, nfa, depth);
      return build_repeat(e, from, nfa, depth);
    case Expr::Kind::kToken: {
      const uint32_t target = nfa.add();
      nfa.add_rule(from, token_rule(e), target);
      charge(1);
      return target;
    }
    case Expr::Kind::kAnyOrder: {
      const uint32_t target = nfa.add();
      nfa.add_rule(from, any_order_rule(e), target);
      charge(1);
      return target;
    }
    case Expr::Kind::kRegex:
    case Expr::Kind::kSubstring:
    case Expr::Kind::kTextExcluding:
      return build_text_terminal(e, from, nfa);
  }
  return from;
}

// The UTF-8 sequences of a character class, once per distinct class: a
// counted repeat builds one class many times, and a schema spells the
// same string class for each of its properties.
const std::vector<Utf8Sequence>& Lowering::utf8_sequences_of(const Expr& e) {
  const size_t hash = structural_hash(e);
  auto [first, last] = class_sequences_.equal_range(hash);
  for (auto it = first; it != last; ++it)
    if (*it->second.first == e) return it->second.second;
  auto it = class_sequences_.emplace(hash, std::make_pair(&e, std::vector<Utf8Sequence>{}));
  for (const auto& r : normalized_ranges(e)) utf8_sequences(r.first, r.last, it->second.second);
  return it->second.second;
}

// A part with tail positions, built where something follows it: a tail
// context of its own, ending at a fresh state.
uint32_t Lowering::build_in_new_context(const Expr& e, uint32_t from, Nfa& nfa, int depth) {
  TailContext tail{nfa.add(), {}, {}};
  charge(1);
  build_context(e, from, nfa, depth, tail);
  return tail.end;
}

// `e` in tail position of `tail`, then the deferred bodies of the tail
// group rules it reaches (each may defer more).
void Lowering::build_context(const Expr& e, uint32_t from, Nfa& nfa, int depth, TailContext& tail) {
  build_tail(e, from, nfa, depth, tail);
  while (!tail.deferred.empty() && status_.ok()) {
    const auto [rule, start] = tail.deferred.back();
    tail.deferred.pop_back();
    build_tail(grammar_.rules()[rule].body, start, nfa, depth + 1, tail);
  }
}

// Adds the fragment for `e` starting at `from` and ending at `tail.end`.
// Only the parts after which nothing follows inside `e` stay in tail
// position: the last item of a sequence, each alternative, an optional
// part; a loop's body is followed by the loop.
void Lowering::build_tail(const Expr& e, uint32_t from, Nfa& nfa, int depth, TailContext& tail) {
  if (!status_.ok()) return;
  if (depth > kMaxDepth) {
    status_ = Status(ErrorCode::kLimitExceeded, "grammar nested too deeply to lower", e.where);
    return;
  }
  switch (e.kind) {
    case Expr::Kind::kRuleRef: {
      auto known = tail.rule_starts.find(e.rule);
      if (known != tail.rule_starts.end()) {
        nfa.add_epsilon(from, known->second);
        return;
      }
      // A recursive rule on a right-linear cycle is copied too
      // (copied_here): its references in tail position in this context
      // (itself, a cycle of rules naming one another last, as a pattern's
      // automaton written one rule per state is) lead back to the copy, so
      // the cycle becomes a loop of the NFA. Its other references, and
      // those from contexts nested in the copy, stay rule edges.
      if (!copied_here(e.rule)) {
        nfa.add_rule(from, lowered_rule_for_source(e.rule), tail.end);
        return;
      }
      // A fresh start, since other references will enter it too; recorded
      // before the body is built, so that the body's references in tail
      // position to the rule itself lead back to it.
      const uint32_t start = nfa.add();
      charge(1);
      tail.rule_starts.emplace(e.rule, start);
      nfa.add_epsilon(from, start);
      if (in_tail_group_[e.rule]) {
        tail.deferred.emplace_back(e.rule, start);
        return;
      }
      const bool recursive = recursive_[e.rule];
      if (recursive) copying_recursive_[e.rule] = true;
      build_tail(grammar_.rules()[e.rule].body, start, nfa, depth + 1, tail);
      if (recursive) copying_recursive_[e.rule] = false;
      return;
    }
    case Expr::Kind::kSequence: {
      if (e.children.empty()) break;
      uint32_t cur = from;
      for (size_t i = 0; i + 1 < e.children.size(); ++i)
        cur = build(e.children[i], cur, nfa, depth + 1);
      build_tail(e.children.back(), cur, nfa, depth + 1, tail);
      return;
    }
    case Expr::Kind::kAlternation:
      // Each alternative from a fresh start, as in build_alternation().
      for (const Expr& c : e.children) {
        const uint32_t start = nfa.add();
        nfa.add_epsilon(from, start);
        build_tail(c, start, nfa, depth + 1, tail);
      }
      charge(e.children.size());
      return;
    case Expr::Kind::kRepeat:
      if (e.max > 1) break;
      if (e.min == 0) nfa.add_epsilon(from, tail.end);
      if (e.max == 1) build_tail(e.children[0], from, nfa, depth + 1, tail);
      return;
    default:
      break;
  }
  const uint32_t stop = build(e, from, nfa, depth);
  nfa.add_epsilon(stop, tail.end);
}

// Like build(), but alternatives and repeated parts that are not plain
// terminals become rules of their own and references are not inlined.
uint32_t Lowering::build_split(const Expr& e, uint32_t from, Nfa& nfa, int depth) {
  auto is_terminal = [](const Expr& x) {
    switch (x.kind) {
      case Expr::Kind::kLiteral:
      case Expr::Kind::kCharClass:
      case Expr::Kind::kAnyChar:
      case Expr::Kind::kToken:
      case Expr::Kind::kRegex:
      case Expr::Kind::kSubstring:
      case Expr::Kind::kTextExcluding:
      case Expr::Kind::kAnyOrder:
        return true;
      default:
        return false;
    }
  };
  auto reference = [&](const Expr& part, uint32_t at) {
    uint32_t rule;
    if (part.kind == Expr::Kind::kRuleRef) {
      rule = lowered_rule_for_source(part.rule);
    } else {
      rule = lifted_rule(part);
    }
    uint32_t target = nfa.add();
    nfa.add_rule(at, rule, target);
    charge(1);
    return target;
  };
  auto part = [&](const Expr& c, uint32_t at) {
    return is_terminal(c) ? build(c, at, nfa, depth + 1) : reference(c, at);
  };
  switch (e.kind) {
    case Expr::Kind::kSequence:
      return build_sequence(e, from, part);
    case Expr::Kind::kAlternation:
      return build_alternation(e, from, nfa, part);
    case Expr::Kind::kRepeat: {
      const Expr& child = e.children[0];
      if (is_terminal(child)) return build(e, from, nfa, depth + 1);
      // Repeat a reference to the child as its own rule.
      uint32_t rule = child.kind == Expr::Kind::kRuleRef ? lowered_rule_for_source(child.rule)
                                                         : lifted_rule(child);
      return build_repeat_of_rule(e, rule, from, nfa);
    }
    case Expr::Kind::kRuleRef:
      return reference(e, from);
    default:
      return build(e, from, nfa, depth + 1);
  }
}

}  // namespace grammask::internal
