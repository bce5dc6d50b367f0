// Vocabulary::from_tokenizer_json: Hugging Face tokenizer.json files.
//
// Only the pieces that decide token bytes are read: model.type / vocab /
// byte_fallback / unk_token, added_tokens, and the decoder, pre_tokenizer and
// normalizer (to tell byte-level BPE from SentencePiece spelling). The merges
// list, the bulk of the file, is dropped while parsing.
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unordered_map>

#include "grammask/vocabulary.h"

namespace grammask {
namespace {

using nlohmann::json;

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
  // Drop model.merges (hundreds of thousands of strings) as it is parsed.
  const json::parser_callback_t drop_merges = [](int depth, json::parse_event_t event,
                                                 json& parsed) {
    return !(event == json::parse_event_t::key && depth == 2 && parsed == "merges");
  };
  const json root = json::parse(text.begin(), text.end(), drop_merges);
  if (!root.is_object()) return syntax("the top level is not an object");
  const json* model = member(root, "model");
  if (!model || !model->is_object()) return syntax("no model object");

  const json null_json;
  const json* decoder = member(root, "decoder");
  const json* pre_tokenizer = member(root, "pre_tokenizer");
  const json* normalizer = member(root, "normalizer");
  if (!decoder) decoder = &null_json;
  if (!pre_tokenizer) pre_tokenizer = &null_json;
  if (!normalizer) normalizer = &null_json;

  const std::string model_type = string_member(*model, "type");
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
  const json* byte_fallback = member(*model, "byte_fallback");
  const bool bytes_fall_back =
      (byte_fallback && byte_fallback->is_boolean() && byte_fallback->get<bool>()) ||
      has_type(*decoder, "ByteFallback");

  // Gather (id, text) pairs first so the size is known before allocating.
  const json* vocab = member(*model, "vocab");
  const json* added = member(root, "added_tokens");
  if (!vocab) return syntax("no model.vocab");
  if (added && !added->is_array() && !added->is_null()) return syntax("added_tokens is not a list");
  const size_t added_count = added && added->is_array() ? added->size() : 0;
  const size_t entry_count = vocab->size() + added_count;
  // Ids may leave gaps, but a hostile id must not force a huge allocation.
  const uint64_t id_limit = 2 * static_cast<uint64_t>(entry_count) + 1024;

  std::vector<std::pair<uint32_t, const std::string*>> pieces;
  pieces.reserve(vocab->size());
  uint64_t size = 0;
  const auto check_id = [&](uint64_t id, const std::string& what) -> Status {
    if (id >= id_limit) {
      return syntax(what + " has id " + std::to_string(id) + ", far beyond the " +
                    std::to_string(entry_count) + " tokens listed");
    }
    size = std::max(size, id + 1);
    return Status();
  };
  if (model_type == "BPE") {
    if (!vocab->is_object()) return syntax("model.vocab is not an object");
    for (const auto& item : vocab->items()) {
      uint64_t id = 0;
      if (!read_id(item.value(), id)) return syntax("vocab entry '" + item.key() + "' has no id");
      if (Status status = check_id(id, "vocab entry '" + item.key() + "'"); !status.ok()) {
        return status;
      }
      pieces.emplace_back(static_cast<uint32_t>(id), &item.key());
    }
  } else {  // Unigram: a list of [piece, score]; the id is the position.
    if (!vocab->is_array()) return syntax("model.vocab is not a list");
    for (const json& entry : *vocab) {
      if (!entry.is_array() || entry.empty() || !entry[0].is_string()) {
        return syntax("Unigram vocab entry " + std::to_string(pieces.size()) +
                      " is not [piece, score]");
      }
      pieces.emplace_back(static_cast<uint32_t>(pieces.size()),
                          &entry[0].get_ref<const std::string&>());
    }
    size = pieces.size();
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
    if (Status status = check_id(id, "added token"); !status.ok()) return status;
    added_tokens.push_back({static_cast<uint32_t>(id), &content->get_ref<const std::string&>(),
                            special && special->is_boolean() && special->get<bool>()});
  }

  // Ids can come in any order: place every token, then add them in id order.
  std::vector<TokenKind> kinds(size, TokenKind::kUnused);
  std::vector<std::string> token_bytes(size);
  const std::string unknown_piece = string_member(*model, "unk_token");
  for (const auto& [id, text] : pieces) {
    if (kinds[id] != TokenKind::kUnused) {
      return syntax("id " + std::to_string(id) + " is given to two vocab entries");
    }
    std::optional<uint8_t> byte;
    if (bytes_fall_back && (byte = parse_byte_piece(*text))) {
      kinds[id] = TokenKind::kByte;
      token_bytes[id].assign(1, static_cast<char>(*byte));
    } else if (!unknown_piece.empty() && *text == unknown_piece) {
      kinds[id] = TokenKind::kUnknown;
      token_bytes[id] = *text;
    } else {
      kinds[id] = TokenKind::kNormal;
      if (decoded.style == TokenizerStyle::kByteLevel) {
        append_byte_level_bytes(*text, token_bytes[id]);
      } else {
        append_sentencepiece_bytes(*text, token_bytes[id]);
      }
    }
  }
  if (model_type == "Unigram") {
    if (const json* unknown_id = member(*model, "unk_id")) {
      uint64_t id = 0;
      if (read_id(*unknown_id, id) && id < size) kinds[id] = TokenKind::kUnknown;
    }
  }
  // Added tokens print their content verbatim and override the vocab entry.
  std::unordered_map<std::string, uint32_t> special_ids;
  for (const AddedToken& token : added_tokens) {
    kinds[token.id] = token.special ? TokenKind::kControl : TokenKind::kUserDefined;
    token_bytes[token.id] = *token.content;
    if (token.special) special_ids.emplace(*token.content, token.id);
  }
  for (size_t id = 0; id < size; ++id) decoded.add_token(token_bytes[id], kinds[id]);
  if (const json* post_processor = member(root, "post_processor")) {
    decoded.bos_id = template_bos(*post_processor, special_ids);
  }
  decoded.add_end_marker_stops = true;
  return from_decoded(std::move(decoded));
} catch (const json::exception& error) {
  return syntax(error.what());
} catch (const std::bad_alloc&) {
  return Status(ErrorCode::kLimitExceeded, "tokenizer.json: out of memory");
}

Result<Vocabulary> Vocabulary::from_tokenizer_json_file(const std::string& path) try {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status(ErrorCode::kIo, "cannot open " + path);
  std::ostringstream contents;
  contents << file.rdbuf();
  if (!file.good() && !file.eof()) return Status(ErrorCode::kIo, "cannot read " + path);
  Result<Vocabulary> vocabulary = from_tokenizer_json(contents.str());
  if (!vocabulary.ok()) {
    return Status(vocabulary.status().code(), path + ": " + vocabulary.status().message());
  }
  return vocabulary;
} catch (const std::bad_alloc&) {
  return Status(ErrorCode::kLimitExceeded, path + ": out of memory");
}

}  // namespace grammask
