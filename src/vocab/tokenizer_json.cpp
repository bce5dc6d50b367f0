// Vocabulary::from_tokenizer_json: Hugging Face tokenizer.json files.
//
// Only the pieces that decide token bytes are read: model.type / vocab /
// byte_fallback / unk_token / unk_id, added_tokens, and the decoder,
// pre_tokenizer, normalizer and post_processor (to tell byte-level BPE from
// SentencePiece spelling, and to find the BOS). One strict pass over the text
// decodes model.vocab straight into a single buffer, hands the small sections
// to nlohmann::json, and validates everything else without building values:
// model.merges is most of the file. (A DOM parse of Llama 3's 9 MB file took
// 0.28 s, mostly inserting 128k keys into std::map.)
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/utf8.h"
#include "grammask/vocabulary.h"
#include "vocab/token_spelling.h"

namespace grammask {
namespace {

using nlohmann::json;

// Malformed JSON text; what() holds the message with its line and column.
class MalformedJson : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ASCII bytes that stand for themselves inside a JSON string: all but '"',
// '\\' and the control bytes below 0x20.
constexpr std::array<bool, 256> make_plain_ascii_table() {
  std::array<bool, 256> table{};
  for (int c = 0x20; c < 0x80; ++c) table[c] = c != '"' && c != '\\';
  return table;
}
constexpr std::array<bool, 256> kPlainAscii = make_plain_ascii_table();

// A strict JSON (RFC 8259) reader over one text: it decodes the strings and
// numbers its caller asks for and skips every other value, checking its syntax
// and UTF-8 as nlohmann::json would. Nesting depth costs one byte of heap per
// level, never stack.
class JsonScanner {
 public:
  explicit JsonScanner(std::string_view text)
      : begin_(text.data()), next_(text.data()), end_(text.data() + text.size()) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") next_ += 3;  // a UTF-8 byte order mark
  }

  // The next byte after whitespace, or '\0' at the end of the text.
  char peek() {
    while (next_ != end_ && is_whitespace(*next_)) ++next_;
    return next_ == end_ ? '\0' : *next_;
  }

  void expect(char c, const char* what) {
    if (peek() != c) fail(std::string("expected ") + what);
    ++next_;
  }

  void expect_end() {
    if (peek() != '\0' || next_ != end_)
      fail("expected the end of the text after the top-level value");
  }

  // Object members: after expect('{'), `while (next_member(first))` stands
  // before each member; read_member_name then appends its name to a string,
  // and the caller reads or skips its value.
  bool next_member(bool& first) {
    if (!next_item(first, '}', "',' or '}' after an object member")) return false;
    if (peek() != '"') fail("expected a member name (a string)");
    return true;
  }

  void read_member_name(std::string& name) {
    scan_string<true>(&name);
    expect(':', "':' after a member name");
  }

  // List elements: after expect('['), `while (next_element(first))` stands
  // before each element, which the caller reads or skips.
  bool next_element(bool& first) {
    return next_item(first, ']', "',' or ']' after a list element");
  }

  // Either consumes `close` (false) or, past the first item, the comma
  // before the next one (true).
  bool next_item(bool& first, char close, const char* after_item) {
    if (peek() == close) {
      ++next_;
      return false;
    }
    if (!first) expect(',', after_item);
    first = false;
    return true;
  }

  // Appends the decoded string at the cursor to `out`.
  void read_string(std::string& out) {
    if (peek() != '"') fail("expected a string");
    scan_string<true>(&out);
  }

  // Reads the number at the cursor; true with its value when it is a
  // non-negative integer that fits 64 bits (how a token id must be written).
  bool read_unsigned(uint64_t& value) {
    peek();
    const bool negative = next_ != end_ && *next_ == '-';
    next_ += negative;
    if (next_ == end_ || !is_digit(*next_)) fail("expected a digit");
    value = 0;
    bool overflow = false;
    if (*next_ == '0') {
      ++next_;
    } else {
      for (; next_ != end_ && is_digit(*next_); ++next_) {
        const uint64_t digit = static_cast<uint64_t>(*next_ - '0');
        overflow |= value > (UINT64_MAX - digit) / 10;
        value = value * 10 + digit;
      }
    }
    bool integer = true;
    if (next_ != end_ && *next_ == '.') {
      integer = false;
      ++next_;
      skip_digits();
    }
    if (next_ != end_ && (*next_ == 'e' || *next_ == 'E')) {
      integer = false;
      ++next_;
      if (next_ != end_ && (*next_ == '+' || *next_ == '-')) ++next_;
      skip_digits();
    }
    return integer && !overflow && (!negative || value == 0);
  }

  // Skips one value of any kind; returns its text.
  std::string_view skip_value() {
    peek();
    const char* start = next_;
    std::vector<char> open;  // the closing bracket of each open container
    for (;;) {
      const char c = peek();
      if (c == '{' || c == '[') {
        ++next_;
        const char close = c == '{' ? '}' : ']';
        if (peek() == close) {
          ++next_;
        } else {
          open.push_back(close);
          if (close == '}') skip_member_name();
          continue;  // the first element or member value
        }
      } else {
        skip_scalar();
      }
      // After a value: close what ends here, then stop or take the next one.
      for (;;) {
        if (open.empty()) return std::string_view(start, static_cast<size_t>(next_ - start));
        const char after = peek();
        if (after == open.back()) {
          ++next_;
          open.pop_back();
        } else if (after == ',') {
          ++next_;
          if (open.back() == '}') skip_member_name();
          break;
        } else {
          fail(open.back() == '}' ? "expected ',' or '}' after an object member"
                                  : "expected ',' or ']' after a list element");
        }
      }
    }
  }

  [[noreturn]] void fail(const std::string& message) const {
    size_t line = 1;
    const char* line_start = begin_;
    for (const char* p = begin_; p < next_; ++p) {
      if (*p == '\n') {
        ++line;
        line_start = p + 1;
      }
    }
    throw MalformedJson(message + " at line " + std::to_string(line) + ", column " +
                        std::to_string(next_ - line_start + 1));
  }

 private:
  static bool is_whitespace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  void skip_digits() {
    if (next_ == end_ || !is_digit(*next_)) fail("expected a digit");
    while (next_ != end_ && is_digit(*next_)) ++next_;
  }

  void skip_member_name() {
    if (peek() != '"') fail("expected a member name (a string)");
    scan_string<false>(nullptr);
    expect(':', "':' after a member name");
  }

  void skip_literal(std::string_view literal) {
    if (static_cast<size_t>(end_ - next_) < literal.size() ||
        std::string_view(next_, literal.size()) != literal) {
      fail("expected a value");
    }
    next_ += literal.size();
  }

  void skip_scalar() {
    uint64_t ignored = 0;
    switch (peek()) {
      case '"':
        return scan_string<false>(nullptr);
      case 't':
        return skip_literal("true");
      case 'f':
        return skip_literal("false");
      case 'n':
        return skip_literal("null");
      case '-':
      case '0':
      case '1':
      case '2':
      case '3':
      case '4':
      case '5':
      case '6':
      case '7':
      case '8':
      case '9':
        read_unsigned(ignored);
        return;
      default:
        fail(next_ == end_ ? "unexpected end of the text, expected a value" : "expected a value");
    }
  }

  uint32_t hex4() {
    if (end_ - next_ < 4) fail("invalid string: '\\u' must be followed by 4 hex digits");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i, ++next_) {
      const char c = *next_;
      const int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
      if (digit < 0) fail("invalid string: '\\u' must be followed by 4 hex digits");
      value = value << 4 | static_cast<uint32_t>(digit);
    }
    return value;
  }

  // After a backslash: appends the escaped character when kKeep.
  template <bool kKeep>
  void scan_escape(std::string* out) {
    if (next_ == end_) fail("unexpected end of the text in a string");
    const char c = *next_++;
    char plain;
    switch (c) {
      case '"':
        plain = '"';
        break;
      case '\\':
        plain = '\\';
        break;
      case '/':
        plain = '/';
        break;
      case 'b':
        plain = '\b';
        break;
      case 'f':
        plain = '\f';
        break;
      case 'n':
        plain = '\n';
        break;
      case 'r':
        plain = '\r';
        break;
      case 't':
        plain = '\t';
        break;
      case 'u': {
        uint32_t code_point = hex4();
        if (code_point >= 0xDC00 && code_point <= 0xDFFF) {
          fail("invalid string: a low surrogate '\\u" + hex_text(code_point) +
               "' without a high one before it");
        }
        if (code_point >= 0xD800 && code_point <= 0xDBFF) {
          if (end_ - next_ < 2 || next_[0] != '\\' || next_[1] != 'u') {
            fail("invalid string: a high surrogate must be followed by '\\uDC00'..'\\uDFFF'");
          }
          next_ += 2;
          const uint32_t low = hex4();
          if (low < 0xDC00 || low > 0xDFFF) {
            fail("invalid string: a high surrogate must be followed by '\\uDC00'..'\\uDFFF'");
          }
          code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
        }
        if constexpr (kKeep) utf8::append(*out, code_point);
        return;
      }
      default:
        --next_;
        fail("invalid string: unknown escape '\\" + std::string(1, c) + "'");
    }
    if constexpr (kKeep) out->push_back(plain);
  }

  static std::string hex_text(uint32_t value) {
    char text[8];
    std::snprintf(text, sizeof text, "%04X", value);
    return text;
  }

  // At an opening quote: scans to the closing one, appending the decoded
  // text to `out` when kKeep. Runs of ASCII and well-formed UTF-8 are copied
  // whole; only escapes and errors leave the inner loop.
  template <bool kKeep>
  void scan_string(std::string* out) {
    ++next_;
    for (;;) {
      const char* run = next_;
      while (next_ != end_) {
        const auto byte = static_cast<uint8_t>(*next_);
        if (kPlainAscii[byte]) {
          ++next_;
        } else if (byte >= 0xC2 && byte <= 0xDF && end_ - next_ >= 2 &&
                   (static_cast<uint8_t>(next_[1]) & 0xC0) == 0x80) {
          next_ += 2;  // two-byte characters, such as byte-level BPE's 'Ġ', inline
        } else if (byte >= 0x80) {
          uint32_t ignored = 0;
          const size_t length =
              utf8::decode(std::string_view(next_, static_cast<size_t>(end_ - next_)), 0, &ignored);
          if (length == utf8::kInvalid) fail("invalid string: ill-formed UTF-8 byte");
          next_ += length;
        } else {
          break;
        }
      }
      if constexpr (kKeep) out->append(run, static_cast<size_t>(next_ - run));
      if (next_ == end_) fail("unexpected end of the text in a string");
      const auto byte = static_cast<uint8_t>(*next_);
      if (byte == '"') {
        ++next_;
        return;
      }
      if (byte != '\\') {
        fail("invalid string: control character U+00" + hex_text(byte).substr(2) +
             " must be escaped");
      }
      ++next_;
      scan_escape<kKeep>(out);
    }
  }

  const char* begin_;
  const char* next_;
  const char* end_;
};

// A model.vocab entry: the piece's text is pieces_text[offset, offset + length).
struct VocabPiece {
  uint64_t id;
  size_t offset;
  size_t length;
};

enum class VocabShape : uint8_t { kAbsent, kObject, kList, kOther };

// What a tokenizer.json holds that decides token bytes.
struct TokenizerJsonParts {
  bool top_level_is_object = false;
  bool model_is_object = false;    // false also when there is no model
  json sections = json::object();  // decoder, pre_tokenizer, normalizer, ... as present
  json model = json::object();     // type, byte_fallback, unk_token, unk_id as present
  VocabShape vocab_shape = VocabShape::kAbsent;
  bool model_has_merges = false;
  std::string pieces_text;
  std::vector<VocabPiece> pieces;
  std::string vocab_problem;  // the first malformed entry, reported once the type is known
};

constexpr std::string_view kSectionNames[] = {"added_tokens", "decoder", "normalizer",
                                              "post_processor", "pre_tokenizer"};
constexpr std::string_view kModelFieldNames[] = {"byte_fallback", "type", "unk_id", "unk_token"};

template <size_t N>
bool is_one_of(const std::string& key, const std::string_view (&names)[N]) {
  for (const std::string_view name : names) {
    if (key == name) return true;
  }
  return false;
}

// At an object: calls on_member(name) at each member, which must read or
// skip the member's value.
template <typename OnMember>
void scan_members(JsonScanner& scanner, const OnMember& on_member) {
  scanner.expect('{', "'{'");
  bool first = true;
  std::string name;
  while (scanner.next_member(first)) {
    name.clear();
    scanner.read_member_name(name);
    on_member(name);
  }
}

// A BPE vocab, {"piece": id, ...}, or a Unigram one, [["piece", score], ...].
void scan_vocab(JsonScanner& scanner, TokenizerJsonParts& parts) {
  parts.pieces.clear();
  parts.pieces_text.clear();
  parts.vocab_problem.clear();
  const auto problem = [&](std::string message) {
    if (parts.vocab_problem.empty()) parts.vocab_problem = std::move(message);
  };
  const char first_byte = scanner.peek();
  bool first = true;
  if (first_byte == '{') {
    parts.vocab_shape = VocabShape::kObject;
    scanner.expect('{', "'{'");
    while (scanner.next_member(first)) {
      // The name goes straight to pieces_text; a bad entry takes it back out.
      const size_t offset = parts.pieces_text.size();
      scanner.read_member_name(parts.pieces_text);
      const size_t length = parts.pieces_text.size() - offset;
      const char value_start = scanner.peek();
      const bool is_number = value_start == '-' || (value_start >= '0' && value_start <= '9');
      uint64_t id = 0;
      if (!is_number) scanner.skip_value();
      if (is_number && scanner.read_unsigned(id)) {
        parts.pieces.push_back({id, offset, length});
      } else {
        problem("vocab entry '" + parts.pieces_text.substr(offset) + "' has no id");
        parts.pieces_text.resize(offset);
      }
    }
  } else if (first_byte == '[') {
    parts.vocab_shape = VocabShape::kList;
    scanner.expect('[', "'['");
    while (scanner.next_element(first)) {
      // Ids are positions; the first malformed entry ends the load anyway.
      const size_t id = parts.pieces.size();
      bool has_piece = false;
      if (scanner.peek() == '[') {
        scanner.expect('[', "'['");
        bool first_in_entry = true;
        for (size_t position = 0; scanner.next_element(first_in_entry); ++position) {
          if (position == 0 && scanner.peek() == '"') {
            const size_t offset = parts.pieces_text.size();
            scanner.read_string(parts.pieces_text);
            parts.pieces.push_back({id, offset, parts.pieces_text.size() - offset});
            has_piece = true;
          } else {
            scanner.skip_value();
          }
        }
      } else {
        scanner.skip_value();
      }
      if (!has_piece)
        problem("Unigram vocab entry " + std::to_string(id) + " is not [piece, score]");
    }
  } else {
    parts.vocab_shape = VocabShape::kOther;
    scanner.skip_value();
  }
}

void scan_model(JsonScanner& scanner, TokenizerJsonParts& parts) {
  parts.model = json::object();
  parts.vocab_shape = VocabShape::kAbsent;
  parts.model_has_merges = false;
  parts.model_is_object = scanner.peek() == '{';
  if (!parts.model_is_object) {
    scanner.skip_value();
    return;
  }
  scan_members(scanner, [&](const std::string& name) {
    if (name == "vocab") {
      scan_vocab(scanner, parts);
    } else if (is_one_of(name, kModelFieldNames)) {
      parts.model[name] = json::parse(scanner.skip_value());
    } else if (name == "merges") {
      scanner.skip_value();
      parts.model_has_merges = true;  // (its shape names a BPE model without a type)
    } else {
      scanner.skip_value();  // dropout, ...
    }
  });
}

// Later duplicates of a member replace earlier ones, as in nlohmann::json.
TokenizerJsonParts scan_tokenizer_json(std::string_view text) {
  TokenizerJsonParts parts;
  JsonScanner scanner(text);
  parts.top_level_is_object = scanner.peek() == '{';
  if (!parts.top_level_is_object) {
    scanner.skip_value();
    scanner.expect_end();
    return parts;
  }
  scan_members(scanner, [&](const std::string& name) {
    if (name == "model") {
      scan_model(scanner, parts);
    } else if (is_one_of(name, kSectionNames)) {
      parts.sections[name] = json::parse(scanner.skip_value());
    } else {
      scanner.skip_value();
    }
  });
  scanner.expect_end();
  return parts;
}
const json* member(const json& object, const char* name) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

std::string string_member(const json& object, const char* name) {
  const json* value = member(object, name);
  return value && value->is_string() ? value->get<std::string>() : std::string();
}

// Does `node`, or any component nested in it (Sequence steps), satisfy `test`?
template <typename Test>
bool any_component(const json& node, const Test& test, int depth = 0) {
  if (depth > 16) return false;
  if (node.is_object()) {
    if (test(node)) return true;
    for (const auto& item : node.items()) {
      if (item.value().is_array() && any_component(item.value(), test, depth + 1)) return true;
    }
  } else if (node.is_array()) {
    for (const json& element : node) {
      if (any_component(element, test, depth + 1)) return true;
    }
  }
  return false;
}

bool has_type(const json& node, const char* type) {
  return any_component(node, [&](const json& c) { return string_member(c, "type") == type; });
}

// The bytes a non-special added token prints, as Hugging Face decodes it:
// through the byte-level alphabet when every character of it is in the
// alphabet (else its own UTF-8 bytes), or with each '\u2581' a space.
std::string_view added_token_bytes(const std::string& content, TokenizerStyle style,
                                   std::string& spelled) {
  spelled.assign(content);
  if (style == TokenizerStyle::kByteLevel) {
    for (size_t i = 0; i < content.size();) {
      const uint8_t first = static_cast<uint8_t>(content[i]);
      if (first >= 0x21 && first <= 0x7E) {
        ++i;
        continue;
      }
      const uint32_t pair = i + 1 < content.size()
                                ? (uint32_t{first} << 8 | static_cast<uint8_t>(content[i + 1]))
                                : 0;
      const uint32_t index = pair - internal::BytePairTable::kFirst;
      if (index >= internal::BytePairTable::kSize || internal::kBytePairs.byte_of[index] < 0)
        return content;  // a character outside the alphabet: the text as it is
      i += 2;
    }
    char* end = internal::write_byte_level_bytes(content, spelled.data());
    spelled.resize(static_cast<size_t>(end - spelled.data()));
  } else if (style == TokenizerStyle::kSentencePiece) {
    char* end = internal::write_sentencepiece_bytes(content, spelled.data());
    spelled.resize(static_cast<size_t>(end - spelled.data()));
  }
  return spelled;
}

constexpr const char* kSpaceMark = "\xE2\x96\x81";  // '▁'

// A Replace step whose pattern is the literal `from` and content is `to`.
bool has_replace(const json& node, const std::string& from, const std::string& to) {
  return any_component(node, [&](const json& c) {
    if (string_member(c, "type") != "Replace") return false;
    const json* pattern = member(c, "pattern");
    return pattern && string_member(*pattern, "String") == from &&
           string_member(c, "content") == to;
  });
}

// The id of the special token the single-sequence template starts with, if any.
std::optional<uint32_t> template_bos(const json& post_processor,
                                     const std::unordered_map<std::string, uint32_t>& ids) {
  std::optional<uint32_t> bos;
  any_component(post_processor, [&](const json& c) {
    if (string_member(c, "type") != "TemplateProcessing") return false;
    const json* single = member(c, "single");
    if (!single || !single->is_array() || single->empty()) return false;
    const json* special = member(single->front(), "SpecialToken");
    if (!special) return false;
    const auto it = ids.find(string_member(*special, "id"));
    if (it != ids.end()) bos = it->second;
    return true;
  });
  return bos;
}

Status syntax(const std::string& message) {
  return Status(ErrorCode::kSyntax, "tokenizer.json: " + message);
}

// Reads a non-negative integer id; false if `value` is not one.
bool read_id(const json& value, uint64_t& id) {
  if (value.is_number_unsigned()) {
    id = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    id = static_cast<uint64_t>(value.get<int64_t>());
    return true;
  }
  return false;
}

}  // namespace

Result<Vocabulary> Vocabulary::from_tokenizer_json(std::string_view text) try {
  TokenizerJsonParts parts = scan_tokenizer_json(text);
  if (!parts.top_level_is_object) return syntax("the top level is not an object");
  if (!parts.model_is_object) return syntax("no model object");
  const json& model = parts.model;

  const json null_json;
  const json* decoder = member(parts.sections, "decoder");
  const json* pre_tokenizer = member(parts.sections, "pre_tokenizer");
  const json* normalizer = member(parts.sections, "normalizer");
  if (!decoder) decoder = &null_json;
  if (!pre_tokenizer) pre_tokenizer = &null_json;
  if (!normalizer) normalizer = &null_json;

  std::string model_type = string_member(model, "type");
  if (model_type.empty() && member(model, "type") == nullptr) {
    // Older files leave the type out and Hugging Face reads the model by
    // its shape: a list of [piece, score] is Unigram, a vocab object with
    // merges is BPE (WordPiece's and WordLevel's have none).
    if (parts.vocab_shape == VocabShape::kList) {
      model_type = "Unigram";
    } else if (parts.vocab_shape == VocabShape::kObject && parts.model_has_merges) {
      model_type = "BPE";
    } else {
      return Status(ErrorCode::kUnsupported,
                    "tokenizer.json: the model has no type and its shape is neither BPE (a vocab "
                    "object and merges) nor Unigram (a vocab list)");
    }
  }
  if (model_type != "BPE" && model_type != "Unigram") {
    return Status(ErrorCode::kUnsupported,
                  "tokenizer.json: model type '" + model_type +
                      "' is not supported (BPE or Unigram): its pieces do not spell text alone");
  }

  // Byte-level BPE puts a ByteLevel step in the pre-tokenizer or decoder;
  // SentencePiece spells spaces as '▁' (Metaspace, or Replace steps).
  DecodedVocabulary decoded;
  if (has_type(*pre_tokenizer, "ByteLevel") || has_type(*decoder, "ByteLevel")) {
    decoded.style = TokenizerStyle::kByteLevel;
  } else if (has_type(*decoder, "Metaspace") || has_type(*pre_tokenizer, "Metaspace") ||
             has_replace(*decoder, kSpaceMark, " ") || has_replace(*normalizer, " ", kSpaceMark) ||
             model_type == "Unigram") {
    decoded.style = TokenizerStyle::kSentencePiece;
  } else {
    return Status(ErrorCode::kUnsupported,
                  "tokenizer.json: cannot tell how tokens spell text (no ByteLevel or "
                  "SentencePiece '\xE2\x96\x81' handling in the decoder or pre_tokenizer)");
  }
  const json* byte_fallback = member(model, "byte_fallback");
  const bool bytes_fall_back =
      (byte_fallback && byte_fallback->is_boolean() && byte_fallback->get<bool>()) ||
      has_type(*decoder, "ByteFallback");

  const json* added = member(parts.sections, "added_tokens");
  if (parts.vocab_shape == VocabShape::kAbsent) return syntax("no model.vocab");
  if (added && !added->is_array() && !added->is_null()) return syntax("added_tokens is not a list");
  const bool unigram = model_type == "Unigram";
  if (!unigram && parts.vocab_shape != VocabShape::kObject) {
    return syntax("model.vocab is not an object");
  }
  if (unigram && parts.vocab_shape != VocabShape::kList) return syntax("model.vocab is not a list");
  if (!parts.vocab_problem.empty()) return syntax(parts.vocab_problem);

  const size_t added_count = added && added->is_array() ? added->size() : 0;
  const size_t entry_count = parts.pieces.size() + added_count;
  // Ids may leave gaps (added tokens at sparse ids far past the vocab list
  // load), but a hostile id must not force a huge allocation: below 2^21
  // ids (some 10 MiB of token table) or twice the entries, whichever is more.
  const uint64_t id_limit =
      std::max<uint64_t>(uint64_t{1} << 21, 2 * static_cast<uint64_t>(entry_count) + 1024);
  uint64_t size = 0;
  // `describe` names the entry, only when there is an error to report.
  const auto check_id = [&](uint64_t id, const auto& describe) -> Status {
    if (id >= id_limit) {
      return syntax(describe() + " has id " + std::to_string(id) + ", far beyond the " +
                    std::to_string(entry_count) + " tokens listed");
    }
    size = std::max(size, id + 1);
    return Status();
  };
  const auto piece_text = [&](const VocabPiece& piece) {
    return std::string_view(parts.pieces_text).substr(piece.offset, piece.length);
  };
  for (const VocabPiece& piece : parts.pieces) {
    const auto describe = [&] { return "vocab entry '" + std::string(piece_text(piece)) + "'"; };
    if (Status status = check_id(piece.id, describe); !status.ok()) return status;
  }
  struct AddedToken {
    uint32_t id;
    const std::string* content;
    bool special;
  };
  std::vector<AddedToken> added_tokens;
  added_tokens.reserve(added_count);
  for (size_t i = 0; i < added_count; ++i) {
    const json& token = (*added)[i];
    const json* id_json = member(token, "id");
    const json* content = member(token, "content");
    const json* special = member(token, "special");
    uint64_t id = 0;
    if (!id_json || !read_id(*id_json, id) || !content || !content->is_string()) {
      return syntax("added_tokens[" + std::to_string(i) + "] needs an id and a content string");
    }
    const auto describe = [] { return std::string("added token"); };
    if (Status status = check_id(id, describe); !status.ok()) return status;
    added_tokens.push_back({static_cast<uint32_t>(id), &content->get_ref<const std::string&>(),
                            special && special->is_boolean() && special->get<bool>()});
  }

  // Ids can come in any order: index both lists by id, then add tokens in id order.
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> piece_of_id(size, kNone);
  for (size_t i = 0; i < parts.pieces.size(); ++i) {
    const uint64_t id = parts.pieces[i].id;
    if (piece_of_id[id] != kNone) {
      return syntax("id " + std::to_string(id) + " is given to two vocab entries");
    }
    piece_of_id[id] = static_cast<uint32_t>(i);
  }
  std::vector<uint32_t> added_of_id(size, kNone);  // added tokens override vocab entries
  for (size_t i = 0; i < added_tokens.size(); ++i) {
    added_of_id[added_tokens[i].id] = static_cast<uint32_t>(i);
  }
  std::optional<uint64_t> unknown_id;
  if (const json* unk_id = member(model, "unk_id"); unk_id && unigram) {
    if (uint64_t id = 0; read_id(*unk_id, id)) unknown_id = id;
  }
  const std::string unknown_piece = string_member(model, "unk_token");
  decoded.reserve(size, parts.pieces_text.size());
  std::string spelled;  // (scratch of added_token_bytes)
  for (uint32_t id = 0; id < size; ++id) {
    if (added_of_id[id] != kNone) {
      const AddedToken& token = added_tokens[added_of_id[id]];
      if (token.special) {
        decoded.add_token(*token.content, TokenKind::kControl);
      } else {
        // A non-special added token prints through the decoder, as the
        // pieces do: Gemma's "\u2581\u2581" is two spaces.
        decoded.add_token(added_token_bytes(*token.content, decoded.style, spelled),
                          TokenKind::kUserDefined);
      }
      continue;
    }
    if (piece_of_id[id] == kNone) {
      decoded.add_token({}, TokenKind::kUnused);
      continue;
    }
    const VocabPiece& piece = parts.pieces[piece_of_id[id]];
    std::string_view bytes = piece_text(piece);
    TokenKind kind = TokenKind::kNormal;
    char byte_of_piece = 0;
    if (std::optional<uint8_t> byte; bytes_fall_back && (byte = parse_byte_piece(bytes))) {
      kind = TokenKind::kByte;
      byte_of_piece = static_cast<char>(*byte);
      bytes = std::string_view(&byte_of_piece, 1);
    } else if (!unknown_piece.empty() && bytes == unknown_piece) {
      kind = TokenKind::kUnknown;
    } else {
      // Spelled in place: a spelling is never longer than its text, and
      // every piece is read once.
      char* start = &parts.pieces_text[piece.offset];
      char* end = decoded.style == TokenizerStyle::kByteLevel
                      ? internal::write_byte_level_bytes(bytes, start)
                      : internal::write_sentencepiece_bytes(bytes, start);
      bytes = std::string_view(start, static_cast<size_t>(end - start));
    }
    if (unknown_id == id) kind = TokenKind::kUnknown;
    decoded.add_token(bytes, kind);
  }
  std::unordered_map<std::string, uint32_t> special_ids;
  for (const AddedToken& token : added_tokens) {
    if (token.special) special_ids.emplace(*token.content, token.id);
  }
  if (const json* post_processor = member(parts.sections, "post_processor")) {
    decoded.bos_id = template_bos(*post_processor, special_ids);
  }
  decoded.add_end_marker_stops = true;
  return from_decoded(std::move(decoded));
} catch (const MalformedJson& error) {
  return syntax(error.what());
} catch (const json::exception& error) {
  return syntax(error.what());
} catch (const std::bad_alloc&) {
  return Status(ErrorCode::kLimitExceeded, "tokenizer.json: out of memory");
}

Result<Vocabulary> Vocabulary::from_tokenizer_json_file(const std::string& path) try {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file) return Status(ErrorCode::kIo, "cannot open " + path);
  std::string contents;
  if (std::fseek(file.get(), 0, SEEK_END) == 0) {
    // Only a hint: a directory, for one, reports a huge size and then fails to read.
    if (const long size = std::ftell(file.get()); size > 0 && size < (1L << 32)) {
      contents.reserve(static_cast<size_t>(size));
    }
    std::rewind(file.get());
  }
  char chunk[1 << 16];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, file.get())) > 0;)
    contents.append(chunk, n);
  if (std::ferror(file.get())) return Status(ErrorCode::kIo, "cannot read " + path);
  Result<Vocabulary> vocabulary = from_tokenizer_json(contents);
  if (!vocabulary.ok()) {
    return Status(vocabulary.status().code(), path + ": " + vocabulary.status().message());
  }
  return vocabulary;
} catch (const std::bad_alloc&) {
  return Status(ErrorCode::kLimitExceeded, path + ": out of memory");
}

}  // namespace grammask
