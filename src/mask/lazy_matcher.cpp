#include "grammask/lazy_matcher.h"

#include <algorithm>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "grammask/mask_words.h"
#include "mask/trigger_scanner.h"
#include "vocab/vocabulary_access.h"

namespace grammask {
namespace internal {

namespace {

constexpr size_t kMaxCachedStates = 65536;
constexpr size_t kMaxCachedIds = size_t{1} << 24;

Status moved_from() {
  return Status(ErrorCode::kInvalidState, "the LazyMatcher was moved from");
}

}  // namespace

// The tokens that fire from one scanner state, found by one walk of the
// token trie (plus the tokens outside it).
struct FiringSet {
  std::vector<uint32_t> firing;   // ascending; trigger tokens left out
  bool resolved = false;          // words only: `refused` is final
  std::vector<uint32_t> refused;  // firing tokens whose trigger text the grammar refuses
};

// Shared by the copies of a LazyMatcher: immutable but for the cache.
struct LazyTables {
  LazyTables(CompiledGrammar g, TriggerScanner s) : grammar(std::move(g)), scanner(std::move(s)) {}

  CompiledGrammar grammar;
  TriggerScanner scanner;
  std::vector<uint32_t> trigger_tokens;   // ascending, unique
  std::vector<uint8_t> trigger_token_ok;  // the grammar takes the token as its first input
  std::vector<uint32_t> outside_trie;     // tokens not in the trie, stop tokens excepted

  mutable std::mutex mutex;
  mutable std::unordered_map<ScanState, std::shared_ptr<const FiringSet>, ScanStateHash> cache;
  mutable size_t cached_ids = 0;

  bool is_trigger_token(uint32_t token, bool* ok) const {
    auto it = std::lower_bound(trigger_tokens.begin(), trigger_tokens.end(), token);
    if (it == trigger_tokens.end() || *it != token) return false;
    if (ok != nullptr) *ok = trigger_token_ok[it - trigger_tokens.begin()] != 0;
    return true;
  }
};

struct LazyStep {
  size_t pending_size;
  ScanState scan;
  bool stop;
};

struct LazyState {
  LazyState(std::shared_ptr<const LazyTables> t)
      : tables(std::move(t)), matcher(tables->grammar), probe(tables->grammar) {}

  std::shared_ptr<const LazyTables> tables;
  Matcher matcher;  // the grammar once triggered
  Matcher probe;    // always at the grammar's start: checks trigger texts
  std::string pending;
  std::vector<LazyStep> steps;  // the tokens before the trigger
  ScanState scan;
  bool triggered = false;
  bool terminated = false;
  // The firing tokens refused at the current output, while refused_valid.
  bool refused_valid = false;
  std::vector<uint32_t> refused_now;
  // With patterns: the start search fed the pending output, while
  // search_valid (kept up to date as tokens are appended).
  TriggerScanner::StartSearch search;
  bool search_valid = false;

  const Vocabulary& vocabulary() const { return tables->grammar.vocabulary(); }

  // True if the grammar, at its start, reads `text` (with `token`, its text
  // as a token when by_token).
  bool grammar_takes(std::string_view text) {
    if (!probe.accept_bytes(text).ok()) return false;
    (void)probe.rollback(1);
    return true;
  }

  // The text a token that fires gives the grammar, after `before`.
  std::string trigger_text(std::string_view before, std::string_view token_bytes) const {
    std::string all(before);
    all.append(token_bytes);
    const size_t start = tables->scanner.constrained_start(all);
    return all.substr(start);
  }

  // Where the text of a token that fires after the pending output starts.
  size_t start_after(std::string_view token_bytes) {
    const TriggerScanner& scanner = tables->scanner;
    if (!search_valid) {
      search = scanner.start_search();
      scanner.feed(search, pending);
      search_valid = true;
    }
    TriggerScanner::StartSearch with_token = search;
    scanner.feed(with_token, token_bytes);
    return scanner.start_of(with_token);
  }

  // The text a token that fires after the pending output gives the grammar.
  std::string text_after(std::string_view token_bytes) {
    const size_t start = start_after(token_bytes);
    if (start >= pending.size()) return std::string(token_bytes.substr(start - pending.size()));
    std::string text = pending.substr(start);
    text.append(token_bytes);
    return text;
  }

  std::shared_ptr<const FiringSet> firing_set() {
    const LazyTables& t = *tables;
    {
      std::lock_guard<std::mutex> lock(t.mutex);
      auto it = t.cache.find(scan);
      if (it != t.cache.end()) return it->second;
    }
    auto set = std::make_shared<FiringSet>();
    const TriggerScanner& scanner = t.scanner;
    const Vocabulary& vocab = vocabulary();
    if (!scanner.empty()) {
      const TokenTrie& trie = VocabularyAccess::trie(vocab);
      const TokenTrie::Nodes nodes = trie.nodes();
      const std::vector<uint32_t>& ids = trie.token_ids();
      std::vector<ScanState> at(trie.max_depth() + 1);
      at[0] = scan;
      uint32_t i = 1;
      while (i < nodes.size()) {
        const TokenTrie::Node& node = nodes[i];
        ScanState s = at[node.depth - 1];
        scanner.step(s, node.byte);
        at[node.depth] = s;
        if (scanner.fires_forever(s)) {
          for (uint32_t k = node.tokens_begin; k < trie.tokens_end(node.subtree_end - 1); ++k) {
            set->firing.push_back(ids[k]);
          }
          i = node.subtree_end;
          continue;
        }
        if (scanner.fires(s)) {
          for (uint32_t k = node.tokens_begin; k < trie.tokens_end(i); ++k) {
            set->firing.push_back(ids[k]);
          }
        }
        ++i;
      }
      for (uint32_t token : t.outside_trie) {
        ScanState s = scan;
        for (char c : vocab.token_bytes(token)) scanner.step(s, static_cast<uint8_t>(c));
        if (scanner.fires(s)) set->firing.push_back(token);
      }
      set->firing.erase(
          std::remove_if(set->firing.begin(), set->firing.end(),
                         [&](uint32_t id) { return t.is_trigger_token(id, nullptr); }),
          set->firing.end());
      std::sort(set->firing.begin(), set->firing.end());
    }
    if (scanner.words_only()) {
      // The trigger text lies within the Aho-Corasick state's bytes and the
      // token: it depends on this state alone.
      const std::string_view suffix =
          std::string_view(pending).substr(pending.size() - scanner.word_depth(scan));
      for (uint32_t token : set->firing) {
        if (!grammar_takes(trigger_text(suffix, vocab.token_bytes(token)))) {
          set->refused.push_back(token);
        }
      }
      set->resolved = true;
    }
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.cache.find(scan);
    if (it != t.cache.end()) return it->second;
    if (t.cache.size() < kMaxCachedStates && t.cached_ids + set->firing.size() <= kMaxCachedIds) {
      t.cached_ids += set->firing.size();
      t.cache.emplace(scan, set);
    }
    return set;
  }

  // The firing tokens the grammar refuses at the current output.
  const std::vector<uint32_t>& refused() {
    if (refused_valid) return refused_now;
    std::shared_ptr<const FiringSet> set = firing_set();
    if (set->resolved) {
      refused_now = set->refused;
    } else {
      // Grouped by where their text starts, so that the grammar reads each
      // stretch of the pending output once.
      const Vocabulary& vocab = vocabulary();
      std::vector<std::pair<size_t, uint32_t>> starts;
      for (uint32_t token : set->firing) {
        starts.emplace_back(start_after(vocab.token_bytes(token)), token);
      }
      std::sort(starts.begin(), starts.end());
      refused_now.clear();
      const size_t n = pending.size();
      for (size_t i = 0; i < starts.size();) {
        const size_t start = starts[i].first;
        size_t end = i;
        while (end < starts.size() && starts[end].first == start) ++end;
        probe.reset();
        const bool before =
            start >= n || probe.accept_bytes(std::string_view(pending).substr(start)).ok();
        for (; i < end; ++i) {
          const uint32_t token = starts[i].second;
          std::string_view bytes = vocab.token_bytes(token);
          if (start > n) bytes = bytes.substr(start - n);
          if (!before || !probe.accept_bytes(bytes).ok()) {
            refused_now.push_back(token);
          } else {
            (void)probe.rollback(1);
          }
        }
      }
      probe.reset();
      std::sort(refused_now.begin(), refused_now.end());
    }
    refused_valid = true;
    return refused_now;
  }

  Status fill_mask(uint32_t* words, size_t n_words) {
    if (triggered) return matcher.fill_mask(words, n_words);
    const Vocabulary& vocab = vocabulary();
    const size_t need = grammask::mask_words(vocab.size());
    if (n_words == 0 && need == 0) return Status();
    if (words == nullptr || n_words < need) {
      return Status(ErrorCode::kInvalidArgument,
                    "mask buffer too small: " + std::to_string(n_words) + " words, need " +
                        std::to_string(need));
    }
    std::fill(words, words + n_words, 0u);
    if (terminated) {
      for (uint32_t id : vocab.stop_tokens()) words[id / 32] |= uint32_t{1} << (id % 32);
      return Status();
    }
    const size_t full_words = vocab.size() / 32;
    std::fill(words, words + full_words, ~uint32_t{0});
    if (vocab.size() % 32 != 0) words[full_words] = (uint32_t{1} << (vocab.size() % 32)) - 1;
    for (uint32_t id : refused()) words[id / 32] &= ~(uint32_t{1} << (id % 32));
    for (size_t k = 0; k < tables->trigger_tokens.size(); ++k) {
      const uint32_t id = tables->trigger_tokens[k];
      if (tables->trigger_token_ok[k] == 0) words[id / 32] &= ~(uint32_t{1} << (id % 32));
    }
    return Status();
  }

  // Whether `token` is taken before the trigger; with commit, takes it.
  Status accept_before_trigger(uint32_t token, bool commit) {
    const Vocabulary& vocab = vocabulary();
    if (token >= vocab.size()) {
      return Status(ErrorCode::kInvalidArgument,
                    "token " + std::to_string(token) + " is out of range");
    }
    const bool stop = vocab.is_stop(token);
    if (terminated && !stop) {
      return Status(ErrorCode::kInvalidState, "only stop tokens may follow a stop token");
    }
    if (stop) {
      if (commit) {
        steps.push_back({pending.size(), scan, true});
        terminated = true;
        refused_valid = false;
      }
      return Status();
    }
    bool ok = false;
    if (tables->is_trigger_token(token, &ok)) {
      if (!ok) {
        return Status(ErrorCode::kInvalidArgument,
                      "trigger token " + std::to_string(token) +
                          " is not allowed: the grammar refuses it as its first input");
      }
      if (commit) {
        matcher.reset();
        Status s = matcher.is_token_allowed(token) ? matcher.accept_token(token)
                                                   : matcher.accept_bytes(vocab.token_bytes(token));
        if (!s.ok()) {
          matcher.reset();
          return s;
        }
        triggered = true;
      }
      return Status();
    }
    const TriggerScanner& scanner = tables->scanner;
    const std::string_view bytes = vocab.token_bytes(token);
    ScanState next = scan;
    for (char c : bytes) scanner.step(next, static_cast<uint8_t>(c));
    if (!scanner.fires(next)) {
      if (commit) {
        steps.push_back({pending.size(), scan, false});
        pending.append(bytes);
        scan = next;
        refused_valid = false;
        if (search_valid) scanner.feed(search, bytes);
      }
      return Status();
    }
    const std::string text = text_after(bytes);
    if (!commit) {
      if (grammar_takes(text)) return Status();
    } else {
      matcher.reset();
      Status s = matcher.accept_bytes(text);
      if (s.ok()) {
        triggered = true;
        return Status();
      }
      matcher.reset();
      if (s.code() == ErrorCode::kLimitExceeded) return s;
    }
    return Status(ErrorCode::kInvalidArgument,
                  "token " + std::to_string(token) +
                      " is not allowed: it fires the trigger and the grammar refuses the text "
                      "from the trigger on");
  }

  size_t num_tokens() const { return steps.size() + (triggered ? matcher.num_tokens() : 0); }

  Status rollback(size_t n) {
    if (n > num_tokens()) {
      return Status(ErrorCode::kInvalidArgument, "cannot roll back " + std::to_string(n) +
                                                     " tokens: only " +
                                                     std::to_string(num_tokens()) + " accepted");
    }
    if (triggered) {
      const size_t inside = matcher.num_tokens();
      if (n < inside) return matcher.rollback(n);
      n -= inside;
      matcher.reset();
      triggered = false;
    }
    if (n > 0) {
      const LazyStep& first = steps[steps.size() - n];
      pending.resize(first.pending_size);
      scan = first.scan;
      steps.resize(steps.size() - n);
    }
    terminated = !steps.empty() && steps.back().stop;
    refused_valid = false;
    search_valid = false;
    return Status();
  }

  void reset() {
    matcher.reset();
    pending.clear();
    steps.clear();
    scan = ScanState{};
    triggered = false;
    terminated = false;
    refused_valid = false;
    search_valid = false;
  }
};

}  // namespace internal

Result<LazyMatcher> LazyMatcher::create(const CompiledGrammar& grammar,
                                        const LazyTriggers& triggers) {
  auto scanner =
      internal::TriggerScanner::build(triggers.words, triggers.patterns, triggers.full_patterns);
  if (!scanner.ok()) return scanner.status();
  auto tables = std::make_shared<internal::LazyTables>(grammar, std::move(*scanner));
  const Vocabulary& vocab = grammar.vocabulary();
  std::vector<uint32_t> tokens = triggers.tokens;
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  Matcher probe(grammar);
  for (uint32_t token : tokens) {
    if (token >= vocab.size()) {
      return Status(ErrorCode::kInvalidArgument, "trigger token " + std::to_string(token) +
                                                     " is out of range (vocabulary of " +
                                                     std::to_string(vocab.size()) + " tokens)");
    }
    if (vocab.is_stop(token)) {
      return Status(ErrorCode::kInvalidArgument,
                    "trigger token " + std::to_string(token) + " is a stop token");
    }
    bool ok = probe.is_token_allowed(token);
    if (!ok && probe.accept_bytes(vocab.token_bytes(token)).ok()) {
      ok = true;
      (void)probe.rollback(1);
    }
    tables->trigger_token_ok.push_back(ok ? 1 : 0);
  }
  tables->trigger_tokens = std::move(tokens);
  const internal::TokenTrie& trie = internal::VocabularyAccess::trie(vocab);
  std::vector<uint8_t> in_trie(vocab.size(), 0);
  for (uint32_t id : trie.token_ids()) in_trie[id] = 1;
  for (uint32_t id = 0; id < vocab.size(); ++id) {
    if (in_trie[id] == 0 && !vocab.is_stop(id) && !vocab.token_bytes(id).empty()) {
      tables->outside_trie.push_back(id);
    }
  }
  return LazyMatcher(std::make_unique<internal::LazyState>(std::move(tables)));
}

LazyMatcher::LazyMatcher(std::unique_ptr<internal::LazyState> state) : state_(std::move(state)) {}
LazyMatcher::LazyMatcher(const LazyMatcher& other)
    : state_(other.state_ ? std::make_unique<internal::LazyState>(*other.state_) : nullptr) {}
LazyMatcher& LazyMatcher::operator=(const LazyMatcher& other) {
  if (this != &other) {
    state_ = other.state_ ? std::make_unique<internal::LazyState>(*other.state_) : nullptr;
  }
  return *this;
}
LazyMatcher::LazyMatcher(LazyMatcher&&) noexcept = default;
LazyMatcher& LazyMatcher::operator=(LazyMatcher&&) noexcept = default;
LazyMatcher::~LazyMatcher() = default;

Status LazyMatcher::fill_mask(uint32_t* words, size_t n_words) {
  if (!state_) return internal::moved_from();
  return state_->fill_mask(words, n_words);
}

Status LazyMatcher::accept_token(uint32_t token) {
  if (!state_) return internal::moved_from();
  if (state_->triggered) return state_->matcher.accept_token(token);
  return state_->accept_before_trigger(token, true);
}

bool LazyMatcher::is_token_allowed(uint32_t token) const {
  if (!state_) return false;
  if (state_->triggered) return state_->matcher.is_token_allowed(token);
  return state_->accept_before_trigger(token, false).ok();
}

Status LazyMatcher::rollback(size_t n_tokens) {
  if (!state_) return internal::moved_from();
  return state_->rollback(n_tokens);
}

void LazyMatcher::reset() noexcept {
  if (state_) state_->reset();
}

bool LazyMatcher::is_triggered() const noexcept {
  return state_ && state_->triggered;
}
bool LazyMatcher::is_accepting() const noexcept {
  if (!state_) return false;
  return state_->triggered ? state_->matcher.is_accepting() : true;
}
bool LazyMatcher::is_terminated() const noexcept {
  if (!state_) return false;
  return state_->triggered ? state_->matcher.is_terminated() : state_->terminated;
}
size_t LazyMatcher::num_tokens() const noexcept {
  return state_ ? state_->num_tokens() : 0;
}
std::string LazyMatcher::pending_output() const {
  return state_ ? state_->pending : std::string();
}

}  // namespace grammask
