#include "mask/token_items.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>

#include "grammask/mask_words.h"

namespace grammask {
namespace internal {

namespace {

bool contains(const std::vector<uint32_t>& sorted, uint32_t id) {
  return std::binary_search(sorted.begin(), sorted.end(), id);
}

Status item_error(const TokenTerminal& terminal, const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, "token item " + terminal.written + ": " + what,
                terminal.where);
}

}  // namespace

Result<TokenItems> TokenItems::resolve(const ByteGrammar& grammar, const Vocabulary& vocabulary) {
  TokenItems out;
  const auto& terminals = grammar.token_terminals();
  if (terminals.empty()) return out;
  const size_t size = vocabulary.size();
  std::unordered_map<std::string_view, std::vector<uint32_t>> ids_by_text;
  const bool by_text = std::any_of(terminals.begin(), terminals.end(), [](const TokenTerminal& t) {
    return std::any_of(t.names.begin(), t.names.end(),
                       [](const TokenTerminal::Name& n) { return !n.text.empty(); });
  });
  if (by_text) {
    for (uint32_t id = 0; id < size; ++id) {
      if (vocabulary.kind(id) == TokenKind::kUnused) continue;
      const std::string_view bytes = vocabulary.token_bytes(id);
      if (!bytes.empty()) ids_by_text[bytes].push_back(id);
    }
  }
  bool any_negated = false;
  for (const TokenTerminal& terminal : terminals) {
    Item item;
    item.negated = terminal.negated;
    any_negated |= terminal.negated;
    for (const TokenTerminal::Name& name : terminal.names) {
      if (name.text.empty()) {
        if (name.id >= size) {
          return item_error(terminal, "id " + std::to_string(name.id) +
                                          " out of range (the vocabulary has " +
                                          std::to_string(size) + " tokens)");
        }
        item.ids.push_back(name.id);
      } else {
        auto found = ids_by_text.find(name.text);
        if (found == ids_by_text.end()) {
          return item_error(terminal, terminal.names.size() > 1
                                          ? "no token of the vocabulary has the text " + name.text
                                          : "no token of the vocabulary has this text");
        }
        item.ids.insert(item.ids.end(), found->second.begin(), found->second.end());
      }
    }
    std::sort(item.ids.begin(), item.ids.end());
    item.ids.erase(std::unique(item.ids.begin(), item.ids.end()), item.ids.end());
    out.items_.push_back(std::move(item));
  }
  if (any_negated) {
    out.all_but_stops_.assign(mask_words(size), 0);
    fill_allowed(out.all_but_stops_.data(), size);
    for (uint32_t stop : vocabulary.stop_tokens()) clear_bit(out.all_but_stops_.data(), stop);
    for (uint32_t id = 0; id < size; ++id)
      if (vocabulary.kind(id) == TokenKind::kUnused) clear_bit(out.all_but_stops_.data(), id);
  }
  return out;
}

void TokenItems::matches(uint32_t token, std::vector<uint8_t>& matches) const {
  matches.assign(items_.size(), 0);
  const bool negation_reads = !all_but_stops_.empty() && test_bit(all_but_stops_.data(), token);
  for (size_t i = 0; i < items_.size(); ++i) {
    const Item& item = items_[i];
    const bool named = contains(item.ids, token);
    matches[i] = item.negated ? negation_reads && !named : named;
  }
}

bool TokenItems::awaited_reads(const EarleyEngine& engine, size_t k,
                               const std::vector<uint8_t>& matches) {
  const ByteGrammar& grammar = engine.grammar();
  for (const EarleyItem* it = engine.set_begin(k); it != engine.set_end(k); ++it) {
    const uint32_t terminal = grammar.rules()[grammar.states()[it->state].rule].token_terminal;
    if (terminal != kNoTokenTerminal && matches[terminal]) return true;
  }
  return false;
}

void TokenItems::add_awaited(const EarleyEngine& engine, size_t k, uint32_t* words) const {
  const ByteGrammar& grammar = engine.grammar();
  // Tokens every awaited negated item excludes, while one is awaited.
  std::vector<uint32_t> excluded;
  bool negated_awaited = false;
  for (const EarleyItem* it = engine.set_begin(k); it != engine.set_end(k); ++it) {
    const uint32_t terminal = grammar.rules()[grammar.states()[it->state].rule].token_terminal;
    if (terminal == kNoTokenTerminal) continue;
    const Item& item = items_[terminal];
    if (!item.negated) {
      for (uint32_t id : item.ids) set_bit(words, id);
    } else if (!negated_awaited) {
      negated_awaited = true;
      excluded = item.ids;
    } else {
      std::vector<uint32_t> both;
      std::set_intersection(excluded.begin(), excluded.end(), item.ids.begin(), item.ids.end(),
                            std::back_inserter(both));
      excluded.swap(both);
    }
  }
  if (!negated_awaited) return;
  // Keep the excluded tokens' bits as the text and the positive items set
  // them, around the union with everything a negated item reads.
  std::vector<uint8_t> kept(excluded.size());
  for (size_t i = 0; i < excluded.size(); ++i) kept[i] = test_bit(words, excluded[i]);
  for (size_t w = 0; w < all_but_stops_.size(); ++w) words[w] |= all_but_stops_[w];
  for (size_t i = 0; i < excluded.size(); ++i)
    if (!kept[i]) clear_bit(words, excluded[i]);
}

}  // namespace internal
}  // namespace grammask
