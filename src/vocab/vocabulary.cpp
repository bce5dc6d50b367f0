// Vocabulary storage, the stop set, and the spelling helpers. The file
// loaders live in gguf.cpp and tokenizer_json.cpp; both end in from_decoded.
#include "grammask/vocabulary.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>

#include "base/bits.h"
#include "base/memory_bytes.h"
#include "base/utf8.h"
#include "grammask/mask_words.h"
#include "vocab/text_slice.h"
#include "vocab/token_spelling.h"
#include "vocab/token_trie.h"
#include "vocab/vocabulary_access.h"

namespace grammask {
namespace internal {

// Token bytes packed in one buffer: token i is bytes[offsets[i], offsets[i+1]).
struct VocabularyData {
  std::string bytes;
  std::vector<uint32_t> offsets;
  std::vector<TokenKind> kinds;
  std::optional<uint32_t> bos;
  TokenizerStyle style = TokenizerStyle::kRawBytes;

  size_t size() const noexcept { return kinds.size(); }
  std::string_view token(uint32_t id) const noexcept {
    return std::string_view(bytes).substr(offsets[id], offsets[id + 1] - offsets[id]);
  }
  // Could this token spell grammar text (before considering stop tokens)?
  bool spells_text(uint32_t id) const noexcept {
    const TokenKind kind = kinds[id];
    return (kind == TokenKind::kNormal || kind == TokenKind::kByte ||
            kind == TokenKind::kUserDefined) &&
           offsets[id + 1] != offsets[id];
  }
};

// What depends on the stop set: the ids, the trie of the remaining text
// tokens, and the tokens outside the trie that find_token must still see.
struct StopSet {
  std::vector<uint32_t> ids;
  std::shared_ptr<const TokenTrie> trie;
  std::shared_ptr<const TextSlice> text_slice;  // the trie's tokens, partitioned
  std::vector<uint32_t> outside_trie;           // non-empty bytes, not in the trie
};

}  // namespace internal

namespace {

using internal::StopSet;
using internal::TextSlice;
using internal::TokenTrie;
using internal::VocabularyData;

bool is_end_marker(std::string_view text) {
  static constexpr std::string_view kMarkers[] = {
      "<|endoftext|>",
      "<|end_of_text|>",
      "<|eot_id|>",
      "<|eom_id|>",
      "<|end|>",
      "<|im_end|>",
      "<end_of_turn>",
      "<|END_OF_TURN_TOKEN|>",
      "</s>",
      "<eos>",
      "<EOT>",
      "<end_of_utterance>",
      // gpt-oss (harmony) ends a reply with <|return|> and a tool call with
      // <|call|>; its tokenizer marks neither as EOS.
      "<|return|>",
      "<|call|>",
      // DeepSeek spells it with full-width bars and '▁'.
      "<\xEF\xBD\x9C"
      "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
  };
  return std::find(std::begin(kMarkers), std::end(kMarkers), text) != std::end(kMarkers);
}

Status check_ids(const std::vector<uint32_t>& ids, size_t size, const char* what) {
  for (uint32_t id : ids) {
    if (id >= size) {
      return Status(ErrorCode::kInvalidArgument, std::string(what) + " id " + std::to_string(id) +
                                                     " is out of range (vocabulary size " +
                                                     std::to_string(size) + ")");
    }
  }
  return Status();
}

std::shared_ptr<const StopSet> make_stop_set(
    const std::shared_ptr<const VocabularyData>& shared_data, std::vector<uint32_t> stop_ids,
    std::shared_ptr<const TokenTrie> reusable_trie,
    std::shared_ptr<const TextSlice> reusable_slice) {
  const VocabularyData& data = *shared_data;
  auto stops = std::make_shared<StopSet>();
  std::sort(stop_ids.begin(), stop_ids.end());
  stop_ids.erase(std::unique(stop_ids.begin(), stop_ids.end()), stop_ids.end());
  stops->ids = std::move(stop_ids);

  // The trie's members as mask words: no id list as large as the vocabulary.
  std::vector<uint32_t> trie_words;
  if (!reusable_trie) trie_words.assign(mask_words(data.size()), 0);
  // A mask word at a time: which of its 32 ids spell text and which have
  // other bytes, in a loop with no branches, then the stop ids' bits (they
  // are ascending) taken out. The ids outside the trie are few.
  static_assert(TokenKind::kNormal < TokenKind::kUserDefined &&
                    TokenKind::kByte < TokenKind::kUserDefined &&
                    TokenKind::kUserDefined < TokenKind::kControl &&
                    TokenKind::kUserDefined < TokenKind::kUnknown &&
                    TokenKind::kUserDefined < TokenKind::kUnused,
                "the kinds that spell text come first");
  const uint32_t* const offsets = data.offsets.data();
  const TokenKind* const kinds = data.kinds.data();
  const size_t size = data.size();
  auto next_stop = stops->ids.begin();
  for (size_t word = 0; word * 32 < size; ++word) {
    const size_t first = word * 32;
    const size_t here = std::min<size_t>(32, size - first);
    uint32_t text = 0, with_bytes = 0;
    for (size_t k = 0; k < here; ++k) {
      const bool has_bytes = offsets[first + k + 1] != offsets[first + k];
      const TokenKind kind = kinds[first + k];
      text |= uint32_t{has_bytes && kind <= TokenKind::kUserDefined} << k;
      with_bytes |= uint32_t{has_bytes && kind != TokenKind::kUnused} << k;
    }
    uint32_t stop = 0;
    for (; next_stop != stops->ids.end() && *next_stop < first + here; ++next_stop) {
      stop |= uint32_t{1} << (*next_stop - first);
    }
    const uint32_t members = text & ~stop;
    if (!reusable_trie) trie_words[word] = members;
    for (uint32_t outside = with_bytes & ~members; outside != 0; outside &= outside - 1) {
      stops->outside_trie.push_back(
          static_cast<uint32_t>(first + internal::lowest_set_bit(outside)));
    }
  }
  if (reusable_trie) {
    stops->trie = std::move(reusable_trie);
    stops->text_slice = std::move(reusable_slice);
  } else {
    stops->text_slice = std::make_shared<const TextSlice>(
        TextSlice::build(data.bytes.data(), data.offsets.data(), trie_words, data.size()));
    stops->trie = std::make_shared<const TokenTrie>(
        TokenTrie::build(data.bytes.data(), data.offsets.data(), trie_words.data(), data.size()));
  }
  return stops;
}

}  // namespace

void DecodedVocabulary::reserve(size_t tokens, size_t total_bytes) {
  bytes_.reserve(total_bytes);
  offsets_.reserve(tokens + 1);
  kinds_.reserve(tokens);
}

void DecodedVocabulary::add_token(std::string_view bytes, TokenKind kind) {
  if (kind == TokenKind::kUnused) bytes = {};
  if (bytes.size() > longest_) {
    longest_ = bytes.size();
    longest_id_ = kinds_.size();
  }
  if (bytes.size() > UINT32_MAX - bytes_.size()) {
    overflow_ = true;
  } else {
    bytes_.append(bytes);
  }
  offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
  kinds_.push_back(kind);
}

Result<Vocabulary> Vocabulary::from_decoded(DecodedVocabulary decoded) try {
  const size_t count = decoded.size();
  if (count >= UINT32_MAX) return Status(ErrorCode::kLimitExceeded, "more than 2^32-1 tokens");
  if (decoded.overflow_) {
    return Status(ErrorCode::kLimitExceeded, "token bytes exceed 4 GiB in total");
  }
  if (decoded.longest_ > TokenTrie::kMaxTokenLength) {
    return Status(ErrorCode::kInvalidArgument, "token " + std::to_string(decoded.longest_id_) +
                                                   " is " + std::to_string(decoded.longest_) +
                                                   " bytes long (at most 65535 supported)");
  }
  if (Status status = check_ids(decoded.stop_ids, count, "stop"); !status.ok()) return status;
  if (decoded.bos_id && *decoded.bos_id >= count) {
    return Status(ErrorCode::kInvalidArgument,
                  "bos id " + std::to_string(*decoded.bos_id) + " is out of range");
  }

  auto data = std::make_shared<VocabularyData>();
  data->bytes = std::move(decoded.bytes_);
  data->offsets = std::move(decoded.offsets_);
  data->kinds = std::move(decoded.kinds_);
  data->bos = decoded.bos_id;
  data->style = decoded.style;

  std::vector<uint32_t> stop_ids = std::move(decoded.stop_ids);
  if (decoded.add_end_marker_stops) {
    // Control tokens are few: memchr finds them (the kinds are bytes)
    // without a test per id.
    static_assert(sizeof(TokenKind) == 1, "kinds are scanned as bytes");
    const auto* const kinds = reinterpret_cast<const unsigned char*>(data->kinds.data());
    const auto control = static_cast<unsigned char>(TokenKind::kControl);
    const unsigned char* const end = kinds + count;
    for (const unsigned char* at = kinds; at < end; ++at) {
      at = static_cast<const unsigned char*>(
          std::memchr(at, control, static_cast<size_t>(end - at)));
      if (at == nullptr) break;
      const auto id = static_cast<uint32_t>(at - kinds);
      if (is_end_marker(data->token(id))) stop_ids.push_back(id);
    }
  }
  auto stops = make_stop_set(data, std::move(stop_ids), nullptr, nullptr);
  return Vocabulary(std::move(data), std::move(stops));
} catch (const std::bad_alloc&) {
  return Status(ErrorCode::kLimitExceeded, "out of memory while building the vocabulary");
}

Result<Vocabulary> Vocabulary::from_token_bytes(std::vector<std::string> tokens,
                                                std::vector<uint32_t> stop_ids,
                                                std::vector<uint32_t> special_ids) try {
  if (Status status = check_ids(special_ids, tokens.size(), "special"); !status.ok()) {
    return status;
  }
  std::vector<bool> special(tokens.size(), false);
  for (uint32_t id : special_ids) special[id] = true;
  DecodedVocabulary decoded;
  size_t total_bytes = 0;
  for (const std::string& token : tokens) total_bytes += token.size();
  decoded.reserve(tokens.size(), total_bytes);
  for (size_t id = 0; id < tokens.size(); ++id) {
    decoded.add_token(tokens[id], special[id] ? TokenKind::kControl : TokenKind::kNormal);
  }
  decoded.stop_ids = std::move(stop_ids);
  return from_decoded(std::move(decoded));
} catch (const std::bad_alloc&) {
  return Status(ErrorCode::kLimitExceeded, "out of memory while building the vocabulary");
}

Result<Vocabulary> Vocabulary::with_stop_tokens(std::vector<uint32_t> stop_ids) const try {
  if (Status status = check_ids(stop_ids, size(), "stop"); !status.ok()) return status;
  std::sort(stop_ids.begin(), stop_ids.end());
  stop_ids.erase(std::unique(stop_ids.begin(), stop_ids.end()), stop_ids.end());

  // The trie holds text tokens that are not stops: it only changes if a
  // text token enters or leaves the stop set.
  std::vector<uint32_t> changed;
  std::set_symmetric_difference(stop_ids.begin(), stop_ids.end(), stops_->ids.begin(),
                                stops_->ids.end(), std::back_inserter(changed));
  const bool trie_changes = std::any_of(changed.begin(), changed.end(),
                                        [&](uint32_t id) { return data_->spells_text(id); });
  auto stops = trie_changes
                   ? make_stop_set(data_, std::move(stop_ids), nullptr, nullptr)
                   : make_stop_set(data_, std::move(stop_ids), stops_->trie, stops_->text_slice);
  return Vocabulary(data_, std::move(stops));
} catch (const std::bad_alloc&) {
  return Status(ErrorCode::kLimitExceeded, "out of memory while rebuilding the token trie");
}

size_t Vocabulary::size() const noexcept {
  return data_->size();
}

std::string_view Vocabulary::token_bytes(uint32_t id) const noexcept {
  return id < data_->size() ? data_->token(id) : std::string_view();
}

TokenKind Vocabulary::kind(uint32_t id) const noexcept {
  return id < data_->size() ? data_->kinds[id] : TokenKind::kUnused;
}

bool Vocabulary::is_special(uint32_t id) const noexcept {
  const TokenKind token_kind = kind(id);
  return token_kind == TokenKind::kControl || token_kind == TokenKind::kUnknown ||
         token_kind == TokenKind::kUnused;
}

bool Vocabulary::is_stop(uint32_t id) const noexcept {
  return std::binary_search(stops_->ids.begin(), stops_->ids.end(), id);
}

const std::vector<uint32_t>& Vocabulary::stop_tokens() const noexcept {
  return stops_->ids;
}

std::optional<uint32_t> Vocabulary::bos_token() const noexcept {
  return data_->bos;
}

TokenizerStyle Vocabulary::style() const noexcept {
  return data_->style;
}

namespace internal {

const TokenTrie& VocabularyAccess::trie(const Vocabulary& vocabulary) noexcept {
  return *vocabulary.stops_->trie;
}

const TextSlice& VocabularyAccess::text_slice(const Vocabulary& vocabulary) noexcept {
  return *vocabulary.stops_->text_slice;
}

const char* VocabularyAccess::bytes(const Vocabulary& vocabulary) noexcept {
  return vocabulary.data_->bytes.data();
}

const uint32_t* VocabularyAccess::offsets(const Vocabulary& vocabulary) noexcept {
  return vocabulary.data_->offsets.data();
}

}  // namespace internal

size_t Vocabulary::memory_bytes() const {
  using internal::heap_bytes;
  size_t bytes = sizeof(VocabularyData) + heap_bytes(data_->bytes) + heap_bytes(data_->offsets) +
                 heap_bytes(data_->kinds) + sizeof(StopSet) + heap_bytes(stops_->ids) +
                 heap_bytes(stops_->outside_trie);
  if (stops_->trie) bytes += sizeof(TokenTrie) + stops_->trie->memory_bytes();
  if (stops_->text_slice) bytes += sizeof(TextSlice) + stops_->text_slice->memory_bytes();
  return bytes;
}

std::optional<uint32_t> Vocabulary::find_token(std::string_view bytes) const {
  std::optional<uint32_t> found;
  if (bytes.empty()) return found;
  const TokenTrie& token_trie = *stops_->trie;
  const uint32_t node = token_trie.find(bytes);
  if (node != TokenTrie::kNoNode) {
    const uint32_t begin = token_trie.nodes()[node].tokens_begin;
    if (begin != token_trie.tokens_end(node)) found = token_trie.token_ids()[begin];
  }
  for (uint32_t id : stops_->outside_trie) {
    if (found && id > *found) break;  // ascending: nothing lower remains
    if (data_->token(id) == bytes) return id;
  }
  return found;
}

// --- spelling helpers --------------------------------------------------------

namespace {

// GPT-2's byte-level alphabet: printable bytes stand for themselves, the 68
// others are shifted to U+0100 onward in byte order. This is the inverse:
// code point (< 0x144) -> byte, or -1.
struct ByteLevelTable {
  int16_t byte_of[0x180] = {};  // (to U+017F: every code point with a lead up to 0xC5)
};

constexpr ByteLevelTable make_byte_level_table() {
  ByteLevelTable table;
  for (int16_t& byte : table.byte_of) byte = -1;
  uint32_t shifted = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable =
        (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    table.byte_of[printable ? byte : shifted++] = static_cast<int16_t>(byte);
  }
  return table;
}

// Built at compile time: the decoder checks no initialization guard per token.
constexpr ByteLevelTable kByteLevel = make_byte_level_table();

constexpr internal::BytePairTable make_byte_pair_table() {
  using internal::BytePairTable;
  BytePairTable table;
  for (uint32_t pair = BytePairTable::kFirst; pair < BytePairTable::kFirst + BytePairTable::kSize;
       ++pair) {
    const uint32_t second = pair & 0xFF;
    int16_t byte = -1;
    if ((second & 0xC0) == 0x80)
      byte = kByteLevel.byte_of[((pair >> 8 & 0x1F) << 6) | (second & 0x3F)];
    table.byte_of[pair - BytePairTable::kFirst] = byte;
  }
  return table;
}
constexpr uint32_t kByteLevelCodePoints = 0x144;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

namespace internal {

constexpr BytePairTable kBytePairs = make_byte_pair_table();

const char* write_byte_level_char(const char* in, const char* end, char*& out) noexcept {
  const ByteLevelTable& table = kByteLevel;
  const std::string_view text(in, static_cast<size_t>(end - in));
  uint32_t code_point = 0;
  const size_t length = utf8::decode(text, 0, &code_point);
  if (length == 0) {  // not UTF-8: keep the byte
    *out++ = *in;
    return in + 1;
  }
  if (code_point < kByteLevelCodePoints && table.byte_of[code_point] >= 0) {
    *out++ = static_cast<char>(table.byte_of[code_point]);
  } else {  // outside the byte alphabet: keep the character as written
    for (size_t k = 0; k < length; ++k) *out++ = in[k];
  }
  return in + length;
}

char* write_sentencepiece_bytes(std::string_view token_text, char* out) noexcept {
  static constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // '▁' U+2581
  size_t start = 0;
  for (size_t mark; (mark = token_text.find(kSpaceMark, start)) != std::string_view::npos;) {
    std::memmove(out, token_text.data() + start, mark - start);  // (may overlap, in place)
    out += mark - start;
    *out++ = ' ';
    start = mark + kSpaceMark.size();
  }
  std::memmove(out, token_text.data() + start, token_text.size() - start);
  return out + (token_text.size() - start);
}

}  // namespace internal

void append_byte_level_bytes(std::string_view token_text, std::string& bytes) {
  const size_t old_size = bytes.size();
  bytes.resize(old_size + token_text.size());  // an upper bound
  char* const end = internal::write_byte_level_bytes(token_text, bytes.data() + old_size);
  bytes.resize(static_cast<size_t>(end - bytes.data()));
}

void append_sentencepiece_bytes(std::string_view token_text, std::string& bytes) {
  const size_t old_size = bytes.size();
  bytes.resize(old_size + token_text.size());  // an upper bound
  char* const end = internal::write_sentencepiece_bytes(token_text, bytes.data() + old_size);
  bytes.resize(static_cast<size_t>(end - bytes.data()));
}

std::optional<uint8_t> parse_byte_piece(std::string_view token_text) noexcept {
  if (token_text.size() != 6 || token_text.substr(0, 3) != "<0x" || token_text[5] != '>') {
    return std::nullopt;
  }
  const int high = hex_digit(token_text[3]);
  const int low = hex_digit(token_text[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return static_cast<uint8_t>(high * 16 + low);
}

}  // namespace grammask
