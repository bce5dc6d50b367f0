#include "mask/trigger_scanner.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <utility>

#include "regex/ecma_regex.h"

namespace grammask::internal {
namespace {

constexpr uint32_t kDead = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kReplacement = 0xFFFD;
constexpr size_t kMaxWordBytes = size_t{1} << 20;
constexpr size_t kMaxWordTable = size_t{1} << 23;
constexpr size_t kMaxPatternStates = 4096;
constexpr size_t kMaxFullPatterns = 32;

// Feeds one byte to an incremental UTF-8 decoder; calls emit(code point) for
// each code point it completes (an invalid byte or an interrupted sequence
// reads as U+FFFD).
template <typename Emit>
void feed_utf8(uint8_t* pending, uint8_t& len, uint8_t byte, Emit&& emit) {
  if (len > 0) {
    uint8_t lo = 0x80;
    uint8_t hi = 0xBF;
    if (len == 1) {
      switch (pending[0]) {
        case 0xE0:
          lo = 0xA0;
          break;
        case 0xED:
          hi = 0x9F;
          break;
        case 0xF0:
          lo = 0x90;
          break;
        case 0xF4:
          hi = 0x8F;
          break;
        default:
          break;
      }
    }
    if (byte >= lo && byte <= hi) {
      const uint8_t lead = pending[0];
      const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
      if (len + 1u == need) {
        uint32_t cp = lead & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07);
        for (size_t i = 1; i < len; ++i) cp = cp << 6 | (pending[i] & 0x3F);
        cp = cp << 6 | (byte & 0x3F);
        len = 0;
        emit(cp);
      } else {
        pending[len++] = byte;
      }
      return;
    }
    len = 0;
    emit(kReplacement);
  }
  if (byte < 0x80) {
    emit(byte);
  } else if (byte >= 0xC2 && byte <= 0xF4) {
    pending[0] = byte;
    len = 1;
  } else {
    emit(kReplacement);
  }
}

bool has_anchor(const RegexNode& node) {
  if (node.kind == RegexNode::Kind::kLineStart || node.kind == RegexNode::Kind::kLineEnd) {
    return true;
  }
  for (const RegexNode& child : node.children) {
    if (has_anchor(child)) return true;
  }
  return false;
}

RegexNode any_string() {
  RegexNode any_char;
  any_char.kind = RegexNode::Kind::kChars;
  any_char.chars = complement_set({});
  RegexNode repeat;
  repeat.kind = RegexNode::Kind::kRepeat;
  repeat.min = 0;
  repeat.max = kUnbounded;
  repeat.children.push_back(std::move(any_char));
  return repeat;
}

RegexNode concat(std::vector<RegexNode> parts) {
  RegexNode node;
  node.kind = RegexNode::Kind::kConcat;
  node.children = std::move(parts);
  return node;
}

Status pattern_error(const char* kind, size_t index, const std::string& pattern,
                     const Status& cause) {
  return Status(cause.code(), std::string(kind) + " " + std::to_string(index) + " (\"" + pattern +
                                  "\"): " + cause.message());
}

// Parses one pattern without anchors.
Result<RegexNode> parse_plain(const std::string& text, const char* kind, size_t index,
                              const std::string& pattern) {
  auto node = parse_ecma_regex(text);
  if (!node.ok()) return pattern_error(kind, index, pattern, node.status());
  if (has_lookahead(*node)) {
    return pattern_error(kind, index, pattern,
                         Status(ErrorCode::kUnsupported,
                                "lookahead assertions are not supported in trigger patterns"));
  }
  if (has_anchor(*node)) {
    return pattern_error(
        kind, index, pattern,
        Status(ErrorCode::kUnsupported,
               "an anchor (^ or $) inside a trigger pattern is not supported (a full pattern may "
               "start with ^ and end with $)"));
  }
  return node;
}

Result<CharDfa> whole_dfa(const RegexNode& node, const char* kind, size_t index,
                          const std::string& pattern) {
  auto dfa = dfa_from_whole_regex(node, kMaxPatternStates);
  if (!dfa.ok()) return pattern_error(kind, index, pattern, dfa.status());
  return dfa;
}

// The first capturing group of `pattern` at its top level: [open, close]
// are the indexes of its parentheses. npos/npos when the pattern has none;
// an error when the first one is nested, repeated or the pattern has a
// top-level alternation.
Status find_first_group(const std::string& pattern, size_t& open, size_t& close) {
  open = close = std::string::npos;
  int depth = 0;
  bool in_class = false;
  bool top_alternation = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      continue;
    }
    if (c == '[') {
      in_class = true;
    } else if (c == '|' && depth == 0) {
      top_alternation = true;
    } else if (c == '(') {
      const bool capturing = i + 1 >= pattern.size() || pattern[i + 1] != '?';
      const bool named = i + 2 < pattern.size() && pattern[i + 1] == '?' && pattern[i + 2] == '<' &&
                         i + 3 < pattern.size() && pattern[i + 3] != '=' && pattern[i + 3] != '!';
      if (named) {
        return Status(ErrorCode::kUnsupported, "named capturing groups are not supported");
      }
      if (capturing && open == std::string::npos) {
        if (depth != 0) {
          return Status(ErrorCode::kUnsupported,
                        "the first capturing group must be part of the pattern's top-level "
                        "sequence (not inside another group)");
        }
        open = i;
      }
      ++depth;
    } else if (c == ')') {
      --depth;
      if (depth == 0 && open != std::string::npos && close == std::string::npos) {
        close = i;
        if (i + 1 < pattern.size() &&
            std::string_view("*+?{").find(pattern[i + 1]) != std::string_view::npos) {
          return Status(ErrorCode::kUnsupported, "the first capturing group must not be repeated");
        }
      }
    }
  }
  if (top_alternation && open != std::string::npos) {
    return Status(ErrorCode::kUnsupported,
                  "a pattern with a capturing group must not have a top-level alternation (wrap "
                  "it in (?:...))");
  }
  return Status();
}

}  // namespace

uint32_t TriggerScanner::CpDfa::next(uint32_t state, uint32_t cp) const noexcept {
  if (state == kDead) return kDead;
  if (cp < 128) return ascii[size_t{state} * 128 + cp];
  for (const auto& [chars, target] : other[state]) {
    if (set_contains(chars, cp)) return target;
  }
  return kDead;
}

TriggerScanner::CpDfa TriggerScanner::CpDfa::from(const CharDfa& dfa) {
  CpDfa out;
  const size_t n = dfa.states.size();
  out.ascii.assign(n * 128, kDead);
  out.other.resize(n);
  out.label.resize(n);
  for (size_t s = 0; s < n; ++s) {
    out.label[s] = dfa.states[s].label;
    for (const CharDfa::Edge& edge : dfa.states[s].edges) {
      for (uint32_t c = 0; c < 128; ++c) {
        if (set_contains(edge.chars, c)) out.ascii[s * 128 + c] = edge.target;
      }
      CodePointSet high;
      for (const CodePointRange& r : edge.chars) {
        if (r.last >= 128) high.push_back({std::max<uint32_t>(r.first, 128), r.last});
      }
      if (!high.empty()) out.other[s].emplace_back(std::move(high), edge.target);
    }
  }
  return out;
}

Result<TriggerScanner> TriggerScanner::build(const std::vector<std::string>& words,
                                             const std::vector<std::string>& patterns,
                                             const std::vector<std::string>& full_patterns) {
  TriggerScanner out;

  // Words: an Aho-Corasick automaton over the classes of the bytes they use.
  size_t total = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i].empty()) {
      return Status(ErrorCode::kInvalidArgument,
                    "trigger word " + std::to_string(i) + " is empty (it would fire at once)");
    }
    total += words[i].size();
  }
  if (total > kMaxWordBytes) {
    return Status(ErrorCode::kLimitExceeded, "trigger words: more than 1 MiB of text");
  }
  out.has_words_ = !words.empty();
  {
    bool used[256] = {};
    for (const std::string& word : words) {
      for (char c : word) used[static_cast<uint8_t>(c)] = true;
    }
    out.n_classes_ = 1;
    for (int b = 0; b < 256; ++b) {
      out.byte_class_[b] = used[b] ? static_cast<uint16_t>(out.n_classes_++) : 0;
    }
  }
  // Class 0 holds the bytes no word uses (never used when words use all 256).
  if ((total + 1) * out.n_classes_ > kMaxWordTable) {
    return Status(ErrorCode::kLimitExceeded,
                  "trigger words: the automaton would pass 8,388,608 table entries (word bytes "
                  "times distinct bytes)");
  }
  const uint32_t nc = out.n_classes_;
  std::vector<uint32_t> trie(nc, kDead);  // goto function while building
  out.ac_depth_.push_back(0);
  out.ac_longest_.push_back(0);
  for (const std::string& word : words) {
    uint32_t s = 0;
    for (char c : word) {
      const uint32_t cls = out.byte_class_[static_cast<uint8_t>(c)];
      uint32_t& t = trie[size_t{s} * nc + cls];
      if (t == kDead) {
        t = static_cast<uint32_t>(out.ac_depth_.size());
        out.ac_depth_.push_back(out.ac_depth_[s] + 1);
        out.ac_longest_.push_back(0);
        trie.resize(trie.size() + nc, kDead);
      }
      s = trie[size_t{s} * nc + cls];
    }
    out.ac_longest_[s] = static_cast<uint32_t>(word.size());
  }
  const size_t n_states = out.ac_depth_.size();
  out.ac_next_.assign(n_states * nc, 0);
  std::vector<uint32_t> fail(n_states, 0);
  std::queue<uint32_t> queue;
  for (uint32_t c = 0; c < nc; ++c) {
    const uint32_t t = trie[c];
    if (t != kDead && c != 0) {
      out.ac_next_[c] = t;
      queue.push(t);
    }
  }
  while (!queue.empty()) {
    const uint32_t s = queue.front();
    queue.pop();
    if (out.ac_longest_[s] == 0) out.ac_longest_[s] = out.ac_longest_[fail[s]];
    for (uint32_t c = 0; c < nc; ++c) {
      const uint32_t t = c == 0 ? kDead : trie[size_t{s} * nc + c];
      if (t != kDead) {
        fail[t] = out.ac_next_[size_t{fail[s]} * nc + c];
        out.ac_next_[size_t{s} * nc + c] = t;
        queue.push(t);
      } else {
        out.ac_next_[size_t{s} * nc + c] = out.ac_next_[size_t{fail[s]} * nc + c];
      }
    }
  }

  // Patterns that fire wherever they match.
  if (!patterns.empty()) {
    RegexNode alternation;
    alternation.kind = RegexNode::Kind::kAlternation;
    for (size_t i = 0; i < patterns.size(); ++i) {
      auto node = parse_plain(patterns[i], "trigger pattern", i, patterns[i]);
      if (!node.ok()) return node.status();
      auto dfa = whole_dfa(*node, "trigger pattern", i, patterns[i]);
      if (!dfa.ok()) return dfa.status();
      if (dfa->states[0].label != 0) {
        return pattern_error("trigger pattern", i, patterns[i],
                             Status(ErrorCode::kUnsupported,
                                    "it matches the empty string, so it would fire at once"));
      }
      alternation.children.push_back(std::move(*node));
    }
    auto match = whole_dfa(alternation, "trigger patterns", 0, "...");
    if (!match.ok()) return match.status();
    auto search =
        whole_dfa(concat({any_string(), alternation, any_string()}), "trigger patterns", 0, "...");
    if (!search.ok()) return search.status();
    out.anywhere_match_ = CpDfa::from(*match);
    out.anywhere_ = CpDfa::from(*search);
    out.has_anywhere_ = true;
  }

  // Full patterns: one product automaton to fire, and per pattern the two
  // halves around its first capturing group to find where the text starts.
  if (full_patterns.size() > kMaxFullPatterns) {
    return Status(ErrorCode::kUnsupported, "more than 32 full trigger patterns");
  }
  CharDfa product;
  for (size_t i = 0; i < full_patterns.size(); ++i) {
    const std::string& source = full_patterns[i];
    std::string text = source;
    if (!text.empty() && text[0] == '^') text.erase(0, 1);
    if (!text.empty() && text.back() == '$') {
      size_t backslashes = 0;
      for (size_t j = text.size() - 1; j > 0 && text[j - 1] == '\\'; --j) ++backslashes;
      if (backslashes % 2 == 0) text.pop_back();
    }
    auto node = parse_plain(text, "full trigger pattern", i, source);
    if (!node.ok()) return node.status();
    auto dfa = whole_dfa(*node, "full trigger pattern", i, source);
    if (!dfa.ok()) return dfa.status();
    if (dfa->states[0].label != 0) {
      return pattern_error(
          "full trigger pattern", i, source,
          Status(ErrorCode::kUnsupported, "it matches the empty string, so it would fire at once"));
    }
    FullPattern full;
    size_t open = 0;
    size_t close = 0;
    Status group = find_first_group(text, open, close);
    if (!group.ok()) return pattern_error("full trigger pattern", i, source, group);
    if (open != std::string::npos && close != std::string::npos) {
      auto prefix = parse_plain(text.substr(0, open), "full trigger pattern", i, source);
      if (!prefix.ok()) return prefix.status();
      auto inner =
          parse_plain(text.substr(open + 1, close - open - 1), "full trigger pattern", i, source);
      if (!inner.ok()) return inner.status();
      auto rest = parse_plain(text.substr(open), "full trigger pattern", i, source);
      if (!rest.ok()) return rest.status();
      auto inner_dfa = whole_dfa(*inner, "full trigger pattern", i, source);
      if (!inner_dfa.ok()) return inner_dfa.status();
      if (inner_dfa->states[0].label != 0) {
        return pattern_error("full trigger pattern", i, source,
                             Status(ErrorCode::kUnsupported,
                                    "its first capturing group may match the empty string"));
      }
      auto prefix_dfa = whole_dfa(*prefix, "full trigger pattern", i, source);
      if (!prefix_dfa.ok()) return prefix_dfa.status();
      auto rest_dfa = whole_dfa(*rest, "full trigger pattern", i, source);
      if (!rest_dfa.ok()) return rest_dfa.status();
      full.prefix = CpDfa::from(*prefix_dfa);
      full.rest = CpDfa::from(*rest_dfa);
      full.has_group = true;
    }
    out.full_patterns_.push_back(std::move(full));
    if (i == 0) {
      product = std::move(*dfa);
    } else {
      const uint32_t bit = uint32_t{1} << i;
      auto next = dfa_product(
          product, *dfa, [bit](uint32_t a, uint32_t b) { return a | (b != 0 ? bit : 0); },
          kMaxPatternStates);
      if (!next.ok()) return pattern_error("full trigger pattern", i, source, next.status());
      product = std::move(*next);
    }
  }
  out.full_count_ = static_cast<uint32_t>(full_patterns.size());
  if (out.full_count_ > 0) out.full_ = CpDfa::from(product);
  return out;
}

void TriggerScanner::step_code_point(ScanState& s, uint32_t cp) const noexcept {
  if (has_anywhere_) s.anywhere = anywhere_.next(s.anywhere, cp);
  if (full_count_ > 0) s.full = full_.next(s.full, cp);
}

void TriggerScanner::step(ScanState& s, uint8_t byte) const noexcept {
  if (has_words_) {
    s.words = ac_next_[size_t{s.words} * n_classes_ + byte_class_[byte]];
    if (ac_longest_[s.words] != 0) s.fired_word = 1;
  }
  if (has_anywhere_ || full_count_ > 0) {
    feed_utf8(s.pending, s.pending_len, byte, [&](uint32_t cp) { step_code_point(s, cp); });
  }
}

bool TriggerScanner::fires_forever(const ScanState& s) const noexcept {
  return s.fired_word != 0 ||
         (has_anywhere_ && s.anywhere != kDead && anywhere_.label[s.anywhere] != 0);
}

bool TriggerScanner::fires(const ScanState& s) const noexcept {
  if (fires_forever(s)) return true;
  return full_count_ > 0 && s.pending_len == 0 && s.full != kDead && full_.label[s.full] != 0;
}

namespace {

using Starts = std::vector<std::pair<uint32_t, size_t>>;

// Adds a start at state 0 unless an earlier one is there.
void add_start(Starts& active, size_t at) {
  for (const auto& entry : active) {
    if (entry.first == 0) return;
  }
  active.emplace_back(0, at);
}

// Steps every state; where two starts meet in one state the earlier stays
// (their futures are the same).
template <typename Dfa>
void step_starts(const Dfa& dfa, Starts& active, uint32_t cp) {
  size_t out = 0;
  for (size_t i = 0; i < active.size(); ++i) {
    const uint32_t t = dfa.next(active[i].first, cp);
    if (t != kDead) active[out++] = {t, active[i].second};
  }
  active.resize(out);
  if (active.size() > 1) {
    std::sort(active.begin(), active.end());
    active.erase(std::unique(active.begin(), active.end(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }),
                 active.end());
  }
}

template <typename Dfa>
size_t accepted_start(const Dfa& dfa, const Starts& active) {
  size_t found = std::string::npos;
  for (const auto& [state, start] : active) {
    if (dfa.label[state] != 0) found = std::min(found, start);
  }
  return found;
}

}  // namespace

TriggerScanner::StartSearch TriggerScanner::start_search() const {
  StartSearch search;
  search.prefix.assign(full_patterns_.size(), 0);
  search.rest.resize(full_patterns_.size());
  return search;
}

void TriggerScanner::code_point(StartSearch& search, uint32_t cp, size_t start) const {
  if (has_anywhere_) {
    add_start(search.anywhere, start);
    step_starts(anywhere_match_, search.anywhere, cp);
    search.anywhere_found =
        std::min(search.anywhere_found, accepted_start(anywhere_match_, search.anywhere));
  }
  if (full_count_ > 0) {
    search.full = full_.next(search.full, cp);
    for (size_t i = 0; i < full_patterns_.size(); ++i) {
      const FullPattern& full = full_patterns_[i];
      if (!full.has_group) continue;
      uint32_t& prefix = search.prefix[i];
      if (prefix != kDead && full.prefix.label[prefix] != 0) add_start(search.rest[i], start);
      prefix = full.prefix.next(prefix, cp);
      step_starts(full.rest, search.rest[i], cp);
    }
  }
}

void TriggerScanner::feed(StartSearch& search, std::string_view bytes) const {
  for (char c : bytes) {
    const uint8_t byte = static_cast<uint8_t>(c);
    const size_t pos = search.offset++;
    if (has_words_) {
      search.words = ac_next_[size_t{search.words} * n_classes_ + byte_class_[byte]];
      const uint32_t longest = ac_longest_[search.words];
      if (longest != 0) search.word_found = std::min<size_t>(search.word_found, pos + 1 - longest);
    }
    if (!has_anywhere_ && full_count_ == 0) continue;
    size_t start = search.pending_len == 0 ? pos : search.pending_start;
    feed_utf8(search.pending, search.pending_len, byte, [&](uint32_t cp) {
      code_point(search, cp, start);
      start = pos;  // a byte read again after an interrupted sequence starts here
    });
    if (search.pending_len == 1) search.pending_start = pos;
  }
}

size_t TriggerScanner::start_of(const StartSearch& search) const {
  if (full_count_ > 0 && search.pending_len == 0 && search.full != kDead &&
      full_.label[search.full] != 0) {
    const uint32_t bits = full_.label[search.full];
    for (uint32_t i = 0; i < full_count_; ++i) {
      if ((bits >> i & 1) == 0) continue;
      const FullPattern& full = full_patterns_[i];
      if (!full.has_group) return 0;
      const size_t start = accepted_start(full.rest, search.rest[i]);
      return start == std::string::npos ? 0 : start;
    }
  }
  const size_t start = std::min(search.word_found, search.anywhere_found);
  return start == std::string::npos ? 0 : start;
}

size_t TriggerScanner::constrained_start(std::string_view text) const {
  StartSearch search = start_search();
  feed(search, text);
  return start_of(search);
}

}  // namespace grammask::internal
