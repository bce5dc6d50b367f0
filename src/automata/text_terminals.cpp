// Regex, LazyRegex, Substring and TextExcluding terminals: each becomes a
// deterministic automaton over code points (src/regex), made once per
// expression, then embedded in the rule's NFA as UTF-8 byte edges.
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "automata/lowering_impl.h"
#include "base/utf8.h"
#include "regex/char_dfa.h"
#include "regex/ecma_regex.h"
#include "regex/terminal_dfas.h"

namespace grammask::internal {

struct Lowering::TextTerminal {
  Status status;  // why there is no automaton
  CharDfa dfa;
  size_t nfa_size = 0;  // the estimate for the inlining policy
};

namespace {

// Past this many states, an automaton is trimmed but not minimized (the
// minimization's table has a row per state and a column per code point
// interval).
constexpr size_t kMinimizedStates = 2048;

const char* terminal_name(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kRegex:
      return e.lazy ? "LazyRegex" : "Regex";
    case Expr::Kind::kSubstring:
      return "Substring";
    default:
      return "TextExcluding";
  }
}

Result<CharDfa> make_dfa(const Expr& e, size_t max_states) {
  switch (e.kind) {
    case Expr::Kind::kRegex: {
      std::string pattern;
      for (char32_t cp : e.literal) utf8::append(pattern, static_cast<uint32_t>(cp));
      Result<RegexNode> parsed = parse_ecma_regex(pattern);
      if (!parsed.ok()) return parsed.status();
      Result<CharDfa> whole = dfa_from_whole_regex(*parsed, max_states);
      if (!whole.ok() || !e.lazy) return whole;
      return dfa_shortest_matches(*whole);
    }
    case Expr::Kind::kSubstring:
      return dfa_substrings(e.literal, max_states);
    default: {
      std::vector<std::u32string> strings;
      strings.reserve(e.children.size());
      for (const Expr& c : e.children) strings.push_back(c.literal);
      return dfa_excluding(strings, max_states, max_states * 4);
    }
  }
}

// What a terminal spells: its kind, laziness and literals, each literal
// after its length.
std::u32string terminal_text(const Expr& e) {
  std::u32string text = {static_cast<char32_t>(e.kind), e.lazy ? U'1' : U'0'};
  auto add = [&text](const std::u32string& literal) {
    text += static_cast<char32_t>(literal.size());
    text += literal;
  };
  add(e.literal);
  for (const Expr& c : e.children) add(c.literal);
  return text;
}

}  // namespace

const Lowering::TextTerminal& Lowering::text_terminal(const Expr& e) {
  auto known = text_terminals_.find(&e);
  if (known != text_terminals_.end()) return *known->second;
  std::u32string text = terminal_text(e);
  auto same = text_terminals_by_text_.find(text);
  if (same != text_terminals_by_text_.end())
    return *text_terminals_.emplace(&e, same->second).first->second;
  auto made = std::make_shared<TextTerminal>();
  // Every code-point state becomes at least one NFA state and, once
  // determinized, at least one DFA state: half of what max_states leaves.
  const size_t left =
      options_.max_states > total_nfa_states_ ? options_.max_states - total_nfa_states_ : 0;
  const size_t budget = std::max<size_t>(left / 2, 1);
  Result<CharDfa> dfa = make_dfa(e, budget);
  const std::string name = terminal_name(e);
  if (!dfa.ok()) {
    const Status& why = dfa.status();
    std::string message = name + ": " + why.message();
    if (why.code() == ErrorCode::kLimitExceeded) {
      message += why.message().find("automaton") != std::string::npos
                     ? " (half of what RecognizerOptions::max_states leaves)"
                     : " (a fixed limit of the pattern parser, RegexLimits)";
    }
    made->status = Status(why.code(), std::move(message), e.where);
  } else {
    CharDfa& d = *dfa;
    size_t units = d.states.size();
    for (const CharDfa::State& s : d.states)
      for (const CharDfa::Edge& edge : s.edges) units += edge.chars.size();
    add_work(units);
    d = d.states.size() <= kMinimizedStates
            ? dfa_minimize(d, [](uint32_t label) { return label != 0; })
            : dfa_trim(d);
    if (dfa_is_empty(d)) {
      made->status =
          Status(ErrorCode::kUnsupported, name + ": the pattern matches no text", e.where);
    } else {
      size_t size = d.states.size() + 2;
      for (const CharDfa::State& s : d.states)
        for (const CharDfa::Edge& edge : s.edges) size += edge.chars.size();
      made->nfa_size = size;
      made->dfa = std::move(d);
    }
  }
  // Only a terminal that was built is shared: an error reports where it is
  // named.
  if (made->status.ok()) text_terminals_by_text_.emplace(std::move(text), made);
  return *text_terminals_.emplace(&e, std::move(made)).first->second;
}

// One NFA state per code-point state (a fresh one for the start, so that
// edges back to it cannot leak into what precedes the terminal) and an end
// state that the accepting states reach by epsilon edges. An edge's code
// points become UTF-8 byte range sequences; the states that read the
// continuation bytes are shared by every sequence that ends in the same
// ranges into the same target, as in build()'s character classes.
uint32_t Lowering::build_text_terminal(const Expr& e, uint32_t from, Nfa& nfa) {
  if (!status_.ok()) return from;
  const TextTerminal& terminal = text_terminal(e);
  if (!terminal.status.ok()) {
    if (status_.ok()) status_ = terminal.status;
    return from;
  }
  const CharDfa& dfa = terminal.dfa;
  if (!charge(dfa.states.size() + 1)) return from;
  const uint32_t end = nfa.add();
  const uint32_t first = nfa.num_states;
  for (size_t s = 0; s < dfa.states.size(); ++s) nfa.add();
  nfa.add_epsilon(from, first);
  // (target state, byte range) -> the state that reads the range into it.
  std::unordered_map<uint64_t, uint32_t> reader;
  std::vector<Utf8Sequence> seqs;
  size_t continuation_states = 0, byte_edges = 0;
  for (size_t s = 0; s < dfa.states.size(); ++s) {
    const uint32_t at = first + static_cast<uint32_t>(s);
    if (dfa.states[s].label != 0) nfa.add_epsilon(at, end);
    for (const CharDfa::Edge& edge : dfa.states[s].edges) {
      seqs.clear();
      for (const CodePointRange& r : edge.chars) utf8_sequences(r.first, r.last, seqs);
      for (const Utf8Sequence& seq : seqs) {
        uint32_t next = first + edge.target;
        for (int i = seq.length - 1; i >= 1; --i) {
          const uint64_t key = (uint64_t{next} << 16) | (uint64_t{seq.lo[i]} << 8) | seq.hi[i];
          auto [it, inserted] = reader.emplace(key, 0);
          if (inserted) {
            it->second = nfa.add();
            nfa.add_bytes(it->second, seq.lo[i], seq.hi[i], next);
            ++continuation_states;
            ++byte_edges;
          }
          next = it->second;
        }
        nfa.add_bytes(at, seq.lo[0], seq.hi[0], next);
        ++byte_edges;
      }
    }
  }
  charge(continuation_states);
  add_work(byte_edges);
  return end;
}

size_t Lowering::text_terminal_size(const Expr& e) {
  const TextTerminal& terminal = text_terminal(e);
  // A terminal that fails is built where it is named, once, and reports
  // its error there.
  return terminal.status.ok() ? terminal.nfa_size : kLiftProduct;
}

}  // namespace grammask::internal
