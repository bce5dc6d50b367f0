// Vocabularies, for every caller that builds masks: the bytes each token id
// spells, which ids are special or stop generation, and the token data the
// mask engine reads. Loaders for GGUF files and tokenizer.json, and
// constructors for callers that decode a tokenizer themselves.
//
// A token's bytes are what the model's detokenizer prints for that token
// alone: byte-level BPE ('Ġ' -> ' ') is decoded through the GPT-2 byte table,
// SentencePiece '▁' becomes a space and `<0xHH>` pieces are one raw byte,
// control tokens keep their literal text (but never match grammar text).
#ifndef GRAMMASK_VOCABULARY_H_
#define GRAMMASK_VOCABULARY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammask/status.h"

namespace grammask {

namespace internal {
struct VocabularyData;
struct StopSet;
struct DecodedVocabularyAccess;
struct VocabularyAccess;
}  // namespace internal

// What a token id stands for (the GGUF token_type classes).
enum class TokenKind : uint8_t {
  kNormal,       // ordinary text; matches grammar text
  kByte,         // a SentencePiece `<0xHH>` byte-fallback piece: one raw byte
  kUserDefined,  // text added by the tokenizer's author; matches grammar text
  kControl,      // special (`<|eot_id|>`, `<s>`): never matches grammar text
  kUnknown,      // `<unk>`-like: never matches grammar text
  kUnused,       // reserved or missing id: never allowed, empty bytes
};

// How the source tokenizer spelled token text (informational).
enum class TokenizerStyle : uint8_t {
  kRawBytes,       // from_token_bytes / from_decoded: bytes given as-is
  kByteLevel,      // GPT-2 style byte-level BPE
  kSentencePiece,  // '▁' for space, `<0xHH>` byte fallback
};

// Input of Vocabulary::from_decoded: bytes and kind per token id, added in
// id order. Token bytes are packed into one buffer as they are added.
class DecodedVocabulary {
 public:
  // Appends token size(), copying its bytes. kUnused tokens keep empty bytes
  // whatever is passed.
  void add_token(std::string_view bytes, TokenKind kind);
  size_t size() const noexcept { return kinds_.size(); }
  void reserve(size_t tokens, size_t total_bytes);

  std::vector<uint32_t> stop_ids;  // any order; duplicates are dropped
  std::optional<uint32_t> bos_id;
  TokenizerStyle style = TokenizerStyle::kRawBytes;
  // Also stop on control tokens spelled like a conventional end marker
  // (`<|endoftext|>`, `<|end_of_text|>`, `<|eot_id|>`, `<|eom_id|>`,
  // `<|end|>`, `<|im_end|>`, `<end_of_turn>`, `</s>`, `<eos>`, and gpt-oss's
  // `<|return|>` and `<|call|>`, ...).
  bool add_end_marker_stops = false;

 private:
  friend class Vocabulary;
  friend struct internal::DecodedVocabularyAccess;  // the GGUF loader fills it in place
  std::string bytes_;
  std::vector<uint32_t> offsets_ = {0};  // token i is bytes_[offsets_[i], offsets_[i+1])
  std::vector<TokenKind> kinds_;
  size_t longest_ = 0;  // longest token, to report tokens over 65535 bytes
  size_t longest_id_ = 0;
  bool overflow_ = false;  // more than 4 GiB of token bytes
};

// Spelling helpers the loaders use, public for callers decoding their own
// tokenizer; each appends the bytes `token_text` spells to `out`.
// Byte-level: each character maps back through the GPT-2 byte table
// (characters outside it are kept as UTF-8). SentencePiece: '▁' (U+2581)
// becomes a space. A byte piece is exactly `<0xHH>` (hex digits, any case).
void append_byte_level_bytes(std::string_view token_text, std::string& out);
void append_sentencepiece_bytes(std::string_view token_text, std::string& out);
std::optional<uint8_t> parse_byte_piece(std::string_view token_text) noexcept;

// An immutable vocabulary. Copies are cheap (two shared pointers) and share
// the token data and trie; every const method is safe to call from many
// threads at once.
class Vocabulary {
 public:
  // Reads a GGUF file's header and its `tokenizer.ggml.*` metadata (tokens,
  // token_type, model = gpt2 | llama, eos/eot/eom/bos ids), streaming past
  // other metadata and never touching tensor data. Every count and length is
  // checked against the file size, so a corrupt or hostile file yields an
  // error (kIo, kSyntax, kUnsupported, kLimitExceeded), never a crash or an
  // oversized allocation. Default stop tokens: the eos/eot/eom ids plus
  // control tokens spelled like a conventional end marker (`<|endoftext|>`,
  // `<|end|>`, `<|eot_id|>`, `<|im_end|>`, ...), as llama.cpp collects them.
  // Cost: linear in the metadata size, the token trie and text slice
  // included (docs/performance.md has measurements).
  static Result<Vocabulary> from_gguf_file(const std::string& path);
  // The same from the bytes of a GGUF file already in memory (a mapped file,
  // a download); the bytes are only read during the call. Error messages say
  // "GGUF data" where from_gguf_file names the path.
  static Result<Vocabulary> from_gguf(std::string_view bytes);

  // Reads a Hugging Face tokenizer.json (BPE or Unigram model). Byte-level vs
  // SentencePiece spelling is decided from the model, decoder, pre_tokenizer
  // and normalizer sections; WordPiece and unrecognised setups are
  // kUnsupported. `added_tokens` with special=true are control tokens, the
  // others user-defined text spelled as the decoder prints them (a
  // SentencePiece '\u2581' is a space; byte-level text is decoded when all
  // its characters are in the byte alphabet). Default stop tokens: special added
  // tokens spelled like a conventional end marker (`<|end_of_text|>`,
  // `<|eot_id|>`, `<|endoftext|>`, `<|end|>`, `</s>`, ...). The file has no
  // eos field (that lives in tokenizer_config.json): use with_stop_tokens to
  // change the set. The whole text is checked as strict JSON (RFC 8259,
  // well-formed UTF-8); syntax errors give their line and column. Cost: linear
  // in the file size (one pass; no values are built for the parts it skips,
  // such as the merges), the token trie included. Errors: kIo (the _file
  // form: cannot open or read), kSyntax, kUnsupported, kLimitExceeded (out of
  // memory), and those of from_decoded.
  static Result<Vocabulary> from_tokenizer_json_file(const std::string& path);
  static Result<Vocabulary> from_tokenizer_json(std::string_view json);

  // A vocabulary whose token i spells tokens[i]. Ids in special_ids are
  // control tokens, the others kNormal; stop_ids become stop_tokens(). Fails
  // as from_decoded does, and with kInvalidArgument if a special id is out of
  // range.
  static Result<Vocabulary> from_token_bytes(std::vector<std::string> tokens,
                                             std::vector<uint32_t> stop_ids,
                                             std::vector<uint32_t> special_ids = {});

  // The general form, for callers that decoded a tokenizer themselves (and
  // what the loaders above build). Fails with kInvalidArgument on an
  // out-of-range stop or bos id or a token longer than 65535 bytes, and with
  // kLimitExceeded for 2^32 - 1 tokens or more, more than 4 GiB of token bytes
  // or when memory runs out. Cost: linear in the tokens' bytes (the token
  // trie is built here).
  static Result<Vocabulary> from_decoded(DecodedVocabulary decoded);

  // Number of token ids (the tokenizer's size; a model's logits may be wider).
  size_t size() const noexcept;
  // The bytes token `id` spells; empty for unused or out-of-range ids. The
  // view lives as long as any Vocabulary sharing this data. O(1).
  std::string_view token_bytes(uint32_t id) const noexcept;
  // kUnused for out-of-range ids. O(1).
  TokenKind kind(uint32_t id) const noexcept;
  // True if the token can never match grammar text: control, unknown,
  // unused, or out of range. Stop tokens are handled separately. O(1).
  bool is_special(uint32_t id) const noexcept;
  // True if `id` is one of stop_tokens(). O(log of their count).
  bool is_stop(uint32_t id) const noexcept;
  // Ids that end generation, ascending and unique. None of them is in the token
  // trie.
  const std::vector<uint32_t>& stop_tokens() const noexcept;
  // The beginning-of-text id named by the source, if any.
  std::optional<uint32_t> bos_token() const noexcept;
  TokenizerStyle style() const noexcept;

  // A copy with a different stop set, sharing the token data (e.g. adding
  // Phi-3's `<|end|>`). The trie is shared too unless the change adds or
  // removes a token that spells grammar text, in which case it is rebuilt
  // (linear in the vocabulary). Fails with kInvalidArgument if an id is out
  // of range, kLimitExceeded if memory runs out.
  Result<Vocabulary> with_stop_tokens(std::vector<uint32_t> stop_ids) const;

  // The lowest id whose bytes are exactly `bytes`, or nullopt (always for
  // empty bytes). Cost: a trie descent, O(length x fan-out), then a scan of
  // the special and stop tokens. Unused ids never match.
  std::optional<uint32_t> find_token(std::string_view bytes) const;

  // Heap bytes this vocabulary holds, shared with its copies: the token
  // bytes and kinds, the token trie, the token sets masks are built from
  // (with those the mask engine added since, at most a few). Thread-safe.
  // O(1).
  size_t memory_bytes() const;

 private:
  friend struct internal::VocabularyAccess;  // the trie and text slice, for the mask engine
  Vocabulary(std::shared_ptr<const internal::VocabularyData> data,
             std::shared_ptr<const internal::StopSet> stops)
      : data_(std::move(data)), stops_(std::move(stops)) {}

  std::shared_ptr<const internal::VocabularyData> data_;
  std::shared_ptr<const internal::StopSet> stops_;  // stop ids and the trie they imply
};

}  // namespace grammask

#endif  // GRAMMASK_VOCABULARY_H_
