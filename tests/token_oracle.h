// A brute-force mask oracle for grammars with token items (<[id]>, <text>,
// !<...>), shared by token_items_test and the token_items fuzz target. It
// knows nothing of the engine: it rewrites each token item into a
// private-use character and spells every token in each way it may be read.
#ifndef GRAMMASK_TESTS_TOKEN_ORACLE_H_
#define GRAMMASK_TESTS_TOKEN_ORACLE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/grammar.h"
#include "grammask/recognizer.h"
#include "grammask/recognizer_options.h"
#include "grammask/vocabulary.h"

namespace grammask::testing {

inline std::string utf8_of(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

inline std::string utf8_of(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) out += utf8_of(c);
  return out;
}

// The brute-force oracle for grammars with token items. Item k becomes the
// character base + k in two rewritten grammars whose bases have different
// first bytes (U+10FF00 and U+EFF00): text that spells part of a marker in
// one cannot do so in the other, so a text spelling must work in both,
// which holds exactly when the original grammar reads it as text. Text
// constructs that could read a marker character (`.`, character classes,
// TextExcluding) have the marker ranges taken out; a grammar whose
// literals name a marker character, or whose Regex pattern may match one,
// is not supported (supported() is false and mask() is meaningless).
//
// Copyable: a copy is a snapshot that goes on independently.
class TokenOracle {
 public:
  static constexpr char32_t kHighBase = U'\U0010FF00';
  static constexpr char32_t kLowBase = U'\U000EFF00';
  static constexpr uint32_t kMaxItems = 0x80;

  TokenOracle(const Grammar& grammar, const Vocabulary& vocab,
              const RecognizerOptions& options = {})
      : vocab_(&vocab) {
    Grammar high = grammar, low = grammar;
    for (Rule& rule : high.mutable_rules()) rewrite(rule.body, kHighBase);
    for (Rule& rule : low.mutable_rules()) rewrite(rule.body, kLowBase);
    if (item_list_.size() >= kMaxItems) supported_ = false;
    auto h = Recognizer::create(high, "root", options);
    auto l = Recognizer::create(low, "root", options);
    if (!h.ok() || !l.ok()) {
      status_ = h.ok() ? l.status() : h.status();
      return;
    }
    paths_.push_back({std::move(*h), std::move(*l)});
  }

  // Whether both rewritten grammars lowered (status() says why not).
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Whether the grammar is one the oracle decides exactly (see above).
  bool supported() const { return supported_; }
  // The number of ways the tokens so far are read (grows with ambiguity).
  size_t paths() const { return paths_.size(); }
  bool terminated() const { return terminated_; }

  // The mask after the tokens accepted so far.
  std::vector<uint32_t> mask(size_t n_words) {
    std::vector<uint32_t> words(n_words, 0);
    for (uint32_t id = 0; id < vocab_->size(); ++id)
      if (read(id, nullptr)) set_bit(words.data(), id);
    if (!terminated_)
      for (const Path& p : paths_)
        if (p.high.is_accepting())
          for (uint32_t stop : vocab_->stop_tokens()) set_bit(words.data(), stop);
    if (terminated_)
      for (uint32_t stop : vocab_->stop_tokens()) set_bit(words.data(), stop);
    return words;
  }

  // Whether the output so far is complete (some path accepts).
  bool is_accepting() const {
    for (const Path& p : paths_)
      if (p.high.is_accepting()) return true;
    return false;
  }

  // Accepts `id`, which the mask allows.
  void accept(uint32_t id) {
    std::vector<Path> next;
    if (!read(id, &next)) {
      terminated_ = true;  // a stop token ending a complete output
      return;
    }
    paths_ = std::move(next);
  }

 private:
  struct Path {
    Recognizer high, low;
  };

  static bool is_marker(char32_t c) {
    return (c >= kHighBase && c < kHighBase + kMaxItems) ||
           (c >= kLowBase && c < kLowBase + kMaxItems);
  }

  // `ranges` less the marker ranges.
  static std::vector<CodePointRange> without_markers(const std::vector<CodePointRange>& ranges) {
    std::vector<CodePointRange> out;
    for (CodePointRange r : ranges) {
      std::vector<CodePointRange> pieces = {r};
      for (const char32_t base : {kHighBase, kLowBase}) {
        std::vector<CodePointRange> kept;
        for (const CodePointRange& p : pieces) {
          if (p.last < base || p.first > base + kMaxItems - 1) {
            kept.push_back(p);
            continue;
          }
          if (p.first < base) kept.push_back({p.first, base - 1});
          if (p.last > base + kMaxItems - 1) kept.push_back({base + kMaxItems, p.last});
        }
        pieces = std::move(kept);
      }
      out.insert(out.end(), pieces.begin(), pieces.end());
    }
    return out;
  }

  static std::vector<CodePointRange> marker_ranges() {
    return {{kLowBase, kLowBase + kMaxItems - 1}, {kHighBase, kHighBase + kMaxItems - 1}};
  }

  // Whether an ECMA-262 pattern may match a marker character: conservative
  // (any `.`, negated class, escape of a class or a code point, or a
  // character at or above U+E0000).
  static bool pattern_may_match_marker(const std::u32string& pattern) {
    for (size_t i = 0; i < pattern.size(); ++i) {
      const char32_t c = pattern[i];
      if (c == U'.' || c >= 0xE0000) return true;
      if (c == U'[' && i + 1 < pattern.size() && pattern[i + 1] == U'^') return true;
      if (c == U'\\' && i + 1 < pattern.size()) {
        const char32_t e = pattern[++i];
        if (e == U'S' || e == U'W' || e == U'D' || e == U'p' || e == U'P' || e == U'u' ||
            e == U'x' || e == U'c')
          return true;
      }
    }
    return false;
  }

  void rewrite(Expr& e, char32_t base) {
    switch (e.kind) {
      case Expr::Kind::kToken: {
        // Sets are told apart by their printed form.
        std::u32string name = e.literal;
        if (e.token_set) {
          name = U"!(";
          for (const Expr& member : e.children)
            name += member.literal.empty() ? U"#" + std::u32string(1, char32_t(member.token)) + U"|"
                                           : member.literal + U"|";
        }
        const auto key = std::make_tuple(e.negated, e.token, name);
        auto [it, added] = items_.emplace(key, static_cast<uint32_t>(items_.size()));
        if (added) item_list_.push_back(e);
        e = Expr::literal_text(std::u32string(1, base + it->second));
        return;
      }
      case Expr::Kind::kLiteral:
      case Expr::Kind::kSubstring:
        for (char32_t c : e.literal)
          if (is_marker(c)) supported_ = false;
        return;
      case Expr::Kind::kAnyChar:
        e = Expr::char_class(marker_ranges(), /*negated=*/true);
        return;
      case Expr::Kind::kCharClass:
        if (e.negated) {
          for (const CodePointRange& r : marker_ranges()) e.ranges.push_back(r);
        } else {
          e.ranges = without_markers(e.ranges);
          // A class left empty reads nothing; a character no text here
          // holds stands in for it (a marker the items do not use).
          if (e.ranges.empty()) e = Expr::literal_text(std::u32string(1, base + kMaxItems - 1));
        }
        return;
      case Expr::Kind::kRegex:
        if (pattern_may_match_marker(e.literal)) supported_ = false;
        return;
      case Expr::Kind::kTextExcluding:
        for (Expr& c : e.children)
          for (char32_t ch : c.literal)
            if (is_marker(ch)) supported_ = false;
        for (char32_t k = 0; k < kMaxItems; ++k)
          e.children.push_back(Expr::literal_text(std::u32string(1, base + k)));
        return;
      default:
        for (Expr& c : e.children) rewrite(c, base);
    }
  }

  bool names(const Expr& item, uint32_t id) const {
    return item.literal.empty() ? item.token == id
                                : vocab_->kind(id) != TokenKind::kUnused &&
                                      vocab_->token_bytes(id) == utf8_of(item.literal);
  }

  bool item_reads(const Expr& item, uint32_t id) const {
    bool named = false;
    if (item.token_set) {
      for (const Expr& member : item.children) named = named || names(member, id);
    } else {
      named = names(item, id);
    }
    if (!item.negated) return named;
    return !named && !vocab_->is_stop(id) && vocab_->kind(id) != TokenKind::kUnused;
  }

  // Whether some path reads token `id` in some way; with `next`, also
  // every path after it, there.
  bool read(uint32_t id, std::vector<Path>* next) {
    if (terminated_) return false;
    bool any = false;
    std::vector<std::pair<std::string, std::string>> spellings;
    if (!vocab_->is_special(id) && !vocab_->is_stop(id) && !vocab_->token_bytes(id).empty()) {
      const std::string text(vocab_->token_bytes(id));
      spellings.push_back({text, text});
    }
    for (size_t k = 0; k < item_list_.size(); ++k)
      if (item_reads(item_list_[k], id))
        spellings.push_back({utf8_of(kHighBase + static_cast<char32_t>(k)),
                             utf8_of(kLowBase + static_cast<char32_t>(k))});
    for (Path& p : paths_) {
      const size_t high_base = p.high.size(), low_base = p.low.size();
      for (const auto& [high, low] : spellings) {
        const bool reads =
            p.high.push_bytes(high) == high.size() && p.low.push_bytes(low) == low.size();
        if (reads && next != nullptr) next->push_back(p);
        p.high.truncate(high_base);
        p.low.truncate(low_base);
        any |= reads;
        if (any && next == nullptr) return true;
      }
    }
    return any;
  }

  const Vocabulary* vocab_;
  Status status_;
  bool supported_ = true;
  std::map<std::tuple<bool, uint32_t, std::u32string>, uint32_t> items_;
  std::vector<Expr> item_list_;
  std::vector<Path> paths_;
  bool terminated_ = false;
};

}  // namespace grammask::testing

#endif  // GRAMMASK_TESTS_TOKEN_ORACLE_H_
