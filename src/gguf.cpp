// Vocabulary::from_gguf_file and from_gguf: read the GGUF header and the
// tokenizer.ggml.* metadata, skipping everything else without loading it.
//
// GGUF (versions 2 and 3, little-endian): "GGUF", u32 version, u64 tensor
// count, u64 metadata count, then metadata entries (u64-length key, u32 value
// type, value). Strings are a u64 length plus bytes; arrays a u32 element
// type, a u64 count, then the elements. Tensor infos and data follow; we stop
// before them.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "grammask/vocabulary.h"

namespace grammask {
namespace {

enum GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// Size in bytes of a fixed-size value type; 0 for string, array and unknown types.
size_t fixed_size(uint32_t type) {
  switch (type) {
    case kUint8:
    case kInt8:
    case kBool:
      return 1;
    case kUint16:
    case kInt16:
      return 2;
    case kUint32:
    case kInt32:
    case kFloat32:
      return 4;
    case kUint64:
    case kInt64:
    case kFloat64:
      return 8;
    default:
      return 0;
  }
}

bool is_integer(uint32_t type) {
  return type <= kInt32 || type == kUint64 || type == kInt64;
}

bool is_signed(uint32_t type) {
  return type == kInt8 || type == kInt16 || type == kInt32 || type == kInt64;
}

constexpr uint64_t kMaxKeyLength = 65535;  // the GGUF spec's bound on key length
constexpr uint64_t kMaxTokenLength = 65535;
constexpr int kMaxArrayNesting = 8;

// Buffered sequential reader that knows the file size, so every length read
// from the file can be checked against the bytes that remain.
class GgufReader {
 public:
  Status open(const std::string& path) {
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) return Status(ErrorCode::kIo, "cannot open " + path + ": " + std::strerror(errno));
    if (!seek(0, SEEK_END)) return Status(ErrorCode::kIo, "cannot seek in " + path);
    const int64_t end = tell();
    if (end < 0 || !seek(0, SEEK_SET)) return Status(ErrorCode::kIo, "cannot seek in " + path);
    file_size_ = static_cast<uint64_t>(end);
    buffer_.resize(kBufferSize);
    data_ = buffer_.data();
    return Status();
  }

  // Reads from memory instead: the whole input is one buffer that never refills.
  void open_memory(std::string_view bytes) {
    data_ = bytes.data();
    buffer_end_ = bytes.size();
    file_size_ = bytes.size();
  }

  uint64_t position() const { return position_; }
  uint64_t remaining() const { return file_size_ - position_; }

  // Copies n bytes; false if the file ends first.
  bool read(void* destination, size_t n) {
    if (n > remaining()) return false;
    char* out = static_cast<char*>(destination);
    while (n > 0) {
      if (buffer_begin_ == buffer_end_ && !refill()) return false;
      const size_t chunk = std::min(n, buffer_end_ - buffer_begin_);
      std::memcpy(out, data_ + buffer_begin_, chunk);
      buffer_begin_ += chunk;
      position_ += chunk;
      out += chunk;
      n -= chunk;
    }
    return true;
  }

  // The next n bytes if they are already buffered (the common case), else
  // null; consumes them.
  const unsigned char* take_buffered(size_t n) {
    if (buffer_end_ - buffer_begin_ < n) return nullptr;
    const auto* bytes = reinterpret_cast<const unsigned char*>(data_ + buffer_begin_);
    buffer_begin_ += n;
    position_ += n;
    return bytes;
  }

  // Appends n bytes to `out`.
  bool append(std::string& out, size_t n) {
    if (n > remaining()) return false;
    if (const unsigned char* bytes = take_buffered(n)) {
      out.append(reinterpret_cast<const char*>(bytes), n);
      return true;
    }
    const size_t old_size = out.size();
    out.resize(old_size + n);
    return read(&out[old_size], n);
  }

  bool skip(uint64_t n) {
    if (n > remaining()) return false;
    const size_t buffered = buffer_end_ - buffer_begin_;
    if (n <= buffered) {
      buffer_begin_ += static_cast<size_t>(n);
      position_ += n;
      return true;
    }
    position_ += n;
    buffer_begin_ = buffer_end_ = 0;
    return seek(static_cast<int64_t>(position_), SEEK_SET);
  }

  // Reads a little-endian unsigned integer (GGUF's byte order, whatever the host's).
  template <typename T>
  bool read_scalar(T& value) {
    static_assert(std::is_unsigned_v<T>, "GGUF header fields are unsigned");
    unsigned char copy[sizeof(T)];
    const unsigned char* raw = take_buffered(sizeof(T));
    if (raw == nullptr) {
      if (!read(copy, sizeof(T))) return false;
      raw = copy;
    }
    uint64_t bits = 0;
    for (size_t i = 0; i < sizeof(T); ++i) bits |= static_cast<uint64_t>(raw[i]) << (8 * i);
    value = static_cast<T>(bits);
    return true;
  }

 private:
  static constexpr size_t kBufferSize = 1 << 18;

  struct FileCloser {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };

  bool refill() {
    if (!file_) return false;  // in memory: everything was buffered from the start
    buffer_begin_ = 0;
    buffer_end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_.get());
    return buffer_end_ > 0;
  }
  bool seek(int64_t offset, int whence) {
    if (!file_) return false;
#ifdef _WIN32
    return _fseeki64(file_.get(), offset, whence) == 0;
#else
    return fseeko(file_.get(), static_cast<off_t>(offset), whence) == 0;
#endif
  }
  int64_t tell() {
#ifdef _WIN32
    return _ftelli64(file_.get());
#else
    return static_cast<int64_t>(ftello(file_.get()));
#endif
  }

  std::unique_ptr<std::FILE, FileCloser> file_;
  std::vector<char> buffer_;
  const char* data_ = nullptr;  // buffer_.data(), or the caller's bytes in memory mode
  size_t buffer_begin_ = 0;
  size_t buffer_end_ = 0;
  uint64_t position_ = 0;
  uint64_t file_size_ = 0;
};

// What we keep from the metadata.
struct TokenizerMetadata {
  std::string model;
  bool has_model = false;
  std::string token_text;               // all token strings, concatenated
  std::vector<uint32_t> token_offsets;  // token i = token_text[offsets[i], offsets[i+1])
  bool has_tokens = false;
  std::vector<int32_t> token_types;
  bool has_token_types = false;
  std::optional<uint32_t> bos, eos, eot, eom;
};

class GgufParser {
 public:
  explicit GgufParser(GgufReader& reader) : reader_(reader) {}

  Status parse(TokenizerMetadata& metadata) {
    char magic[4];
    if (!reader_.read(magic, 4)) return truncated("the magic");
    if (std::memcmp(magic, "GGUF", 4) != 0) {
      return Status(ErrorCode::kSyntax, "not a GGUF file (bad magic)");
    }
    uint32_t version = 0;
    if (!reader_.read_scalar(version)) return truncated("the version");
    if (version == 0x02000000u || version == 0x03000000u) {
      return Status(ErrorCode::kUnsupported, "big-endian GGUF files are not supported");
    }
    if (version != 2 && version != 3) {
      return Status(ErrorCode::kUnsupported,
                    "GGUF version " + std::to_string(version) + " is not supported (2 or 3)");
    }
    uint64_t tensor_count = 0, metadata_count = 0;
    if (!reader_.read_scalar(tensor_count) || !reader_.read_scalar(metadata_count)) {
      return truncated("the header");
    }
    // Smallest entry: 8-byte key length, 4-byte type, 1-byte value.
    if (metadata_count > reader_.remaining() / 13) {
      return Status(ErrorCode::kSyntax, "metadata count " + std::to_string(metadata_count) +
                                            " does not fit in the file");
    }
    std::string key;
    for (uint64_t entry = 0; entry < metadata_count; ++entry) {
      key.clear();
      if (Status status = read_string(key, kMaxKeyLength, "a metadata key"); !status.ok()) {
        return status;
      }
      uint32_t type = 0;
      if (!reader_.read_scalar(type)) return truncated("the type of " + key);
      if (Status status = read_entry(key, type, metadata); !status.ok()) return status;
    }
    // Tensor infos follow (not read). Each takes at least 24 bytes: a name
    // length, a dimension count, a type and an offset.
    if (tensor_count > reader_.remaining() / 24) {
      return Status(ErrorCode::kSyntax,
                    "tensor count " + std::to_string(tensor_count) + " does not fit in the file");
    }
    return Status();
  }

 private:
  Status truncated(const std::string& what) const {
    return Status(ErrorCode::kSyntax, "GGUF file truncated while reading " + what + " at offset " +
                                          std::to_string(reader_.position()));
  }
  Status wrong_type(const std::string& key, const char* expected) const {
    return Status(ErrorCode::kSyntax, "GGUF key " + key + " should be " + expected);
  }

  Status read_string(std::string& out, uint64_t max_length, const std::string& what) {
    uint64_t length = 0;
    if (!reader_.read_scalar(length)) return truncated(what);
    if (length > reader_.remaining()) return truncated(what);
    if (length > max_length) {
      return Status(ErrorCode::kLimitExceeded, what + " is " + std::to_string(length) +
                                                   " bytes long (at most " +
                                                   std::to_string(max_length) + ")");
    }
    if (!reader_.append(out, static_cast<size_t>(length))) return truncated(what);
    return Status();
  }

  // Reads one integer of the given type as a non-negative 32-bit id.
  Status read_id(const std::string& key, uint32_t type, std::optional<uint32_t>& out) {
    if (!is_integer(type)) return wrong_type(key, "an integer");
    int64_t value = 0;
    if (Status status = read_integer(type, key, value); !status.ok()) return status;
    if (value < 0 || value >= INT64_C(0xFFFFFFFF)) {
      return Status(ErrorCode::kSyntax,
                    "GGUF key " + key + " = " + std::to_string(value) + " is not a valid token id");
    }
    out = static_cast<uint32_t>(value);
    return Status();
  }

  Status read_integer(uint32_t type, const std::string& what, int64_t& value) {
    const size_t size = fixed_size(type);
    uint64_t bits = 0;
    unsigned char raw[8];
    if (!reader_.read(raw, size)) return truncated(what);
    for (size_t i = 0; i < size; ++i) bits |= static_cast<uint64_t>(raw[i]) << (8 * i);
    if (is_signed(type) && size < 8 && (bits >> (8 * size - 1)) & 1) {
      bits |= ~uint64_t{0} << (8 * size);  // sign-extend
    }
    if (type == kUint64 && bits > static_cast<uint64_t>(INT64_MAX)) {
      value = INT64_MAX;  // out of every id range anyway
    } else {
      value = static_cast<int64_t>(bits);
    }
    return Status();
  }

  // Reads an array header and checks that `count` elements of at least
  // `min_element_size` bytes fit in the rest of the file.
  Status read_array_header(const std::string& key, uint32_t& element_type, uint64_t& count) {
    if (!reader_.read_scalar(element_type) || !reader_.read_scalar(count)) return truncated(key);
    size_t min_element_size = fixed_size(element_type);
    if (element_type == kString) min_element_size = 8;
    if (element_type == kArray) min_element_size = 12;
    if (min_element_size == 0) {
      return Status(ErrorCode::kSyntax, "GGUF key " + key + " has unknown array element type " +
                                            std::to_string(element_type));
    }
    if (count > reader_.remaining() / min_element_size) {
      return Status(ErrorCode::kSyntax, "GGUF key " + key + " claims " + std::to_string(count) +
                                            " elements, more than the file holds");
    }
    return Status();
  }

  Status skip_value(const std::string& key, uint32_t type, int nesting) {
    if (const size_t size = fixed_size(type); size != 0) {
      return reader_.skip(size) ? Status() : truncated(key);
    }
    if (type == kString) {
      uint64_t length = 0;
      if (!reader_.read_scalar(length) || !reader_.skip(length)) return truncated(key);
      return Status();
    }
    if (type != kArray) {
      return Status(ErrorCode::kSyntax,
                    "GGUF key " + key + " has unknown value type " + std::to_string(type));
    }
    if (nesting >= kMaxArrayNesting) {
      return Status(ErrorCode::kLimitExceeded, "GGUF key " + key + " nests arrays too deeply");
    }
    uint32_t element_type = 0;
    uint64_t count = 0;
    if (Status status = read_array_header(key, element_type, count); !status.ok()) return status;
    if (const size_t size = fixed_size(element_type); size != 0) {
      return reader_.skip(count * size) ? Status() : truncated(key);
    }
    if (element_type == kString) {  // (BPE merges: 100k strings, skipped inline)
      for (uint64_t i = 0; i < count; ++i) {
        uint64_t length = 0;
        if (!reader_.read_scalar(length) || !reader_.skip(length)) return truncated(key);
      }
      return Status();
    }
    for (uint64_t i = 0; i < count; ++i) {
      if (Status status = skip_value(key, element_type, nesting + 1); !status.ok()) return status;
    }
    return Status();
  }

  Status read_entry(const std::string& key, uint32_t type, TokenizerMetadata& metadata) {
    if (key == "tokenizer.ggml.model") {
      if (type != kString) return wrong_type(key, "a string");
      if (metadata.has_model) return duplicate(key);
      metadata.has_model = true;
      return read_string(metadata.model, 256, key);
    }
    if (key == "tokenizer.ggml.tokens") {
      if (metadata.has_tokens) return duplicate(key);
      metadata.has_tokens = true;
      return read_tokens(key, type, metadata);
    }
    if (key == "tokenizer.ggml.token_type") {
      if (metadata.has_token_types) return duplicate(key);
      metadata.has_token_types = true;
      return read_token_types(key, type, metadata);
    }
    if (key == "tokenizer.ggml.bos_token_id") return read_id(key, type, metadata.bos);
    if (key == "tokenizer.ggml.eos_token_id") return read_id(key, type, metadata.eos);
    if (key == "tokenizer.ggml.eot_token_id") return read_id(key, type, metadata.eot);
    if (key == "tokenizer.ggml.eom_token_id") return read_id(key, type, metadata.eom);
    return skip_value(key, type, 0);
  }

  Status duplicate(const std::string& key) const {
    return Status(ErrorCode::kSyntax, "GGUF key " + key + " appears twice");
  }

  Status read_tokens(const std::string& key, uint32_t type, TokenizerMetadata& metadata) {
    if (type != kArray) return wrong_type(key, "an array of strings");
    uint32_t element_type = 0;
    uint64_t count = 0;
    if (Status status = read_array_header(key, element_type, count); !status.ok()) return status;
    if (element_type != kString) return wrong_type(key, "an array of strings");
    if (count >= UINT32_MAX) {
      return Status(ErrorCode::kLimitExceeded, "GGUF file has too many tokens");
    }
    // Bounded by the file size (checked in read_array_header).
    metadata.token_offsets.reserve(static_cast<size_t>(count) + 1);
    // Typical tokens are short; reserving avoids regrowing (and re-touching) the text.
    metadata.token_text.reserve(
        static_cast<size_t>(std::min<uint64_t>(reader_.remaining() - 8 * count, count * 12)));
    metadata.token_offsets.push_back(0);
    for (uint64_t i = 0; i < count; ++i) {
      // Inline read_string: no per-token description string on the happy path.
      uint64_t length = 0;
      if (!reader_.read_scalar(length) || length > reader_.remaining() ||
          !(length <= kMaxTokenLength ? reader_.append(metadata.token_text, length) : false)) {
        if (length > kMaxTokenLength && length <= reader_.remaining()) {
          return Status(ErrorCode::kLimitExceeded, "token " + std::to_string(i) + " is " +
                                                       std::to_string(length) +
                                                       " bytes long (at most 65535)");
        }
        return truncated("token " + std::to_string(i));
      }
      if (metadata.token_text.size() >= UINT32_MAX) {
        return Status(ErrorCode::kLimitExceeded, "GGUF token text exceeds 4 GiB");
      }
      metadata.token_offsets.push_back(static_cast<uint32_t>(metadata.token_text.size()));
    }
    return Status();
  }

  Status read_token_types(const std::string& key, uint32_t type, TokenizerMetadata& metadata) {
    if (type != kArray) return wrong_type(key, "an array of integers");
    uint32_t element_type = 0;
    uint64_t count = 0;
    if (Status status = read_array_header(key, element_type, count); !status.ok()) return status;
    if (!is_integer(element_type)) return wrong_type(key, "an array of integers");
    if (count >= UINT32_MAX) {
      return Status(ErrorCode::kLimitExceeded, "GGUF file has too many token types");
    }
    metadata.token_types.resize(static_cast<size_t>(count));
    if (element_type == kInt32 || element_type == kUint32) {
      // The usual case: one bulk read, then fix the byte order in place.
      if (!reader_.read(metadata.token_types.data(), static_cast<size_t>(count) * 4)) {
        return truncated(key);
      }
      for (int32_t& value : metadata.token_types) {
        unsigned char raw[4];
        std::memcpy(raw, &value, 4);
        const uint32_t bits = uint32_t{raw[0]} | uint32_t{raw[1]} << 8 | uint32_t{raw[2]} << 16 |
                              uint32_t{raw[3]} << 24;
        value = static_cast<int32_t>(bits);
      }
      return Status();
    }
    for (size_t i = 0; i < count; ++i) {
      int64_t value = 0;
      if (Status status = read_integer(element_type, key, value); !status.ok()) return status;
      metadata.token_types[i] =
          value < INT32_MIN || value > INT32_MAX ? -1 : static_cast<int32_t>(value);
    }
    return Status();
  }

  GgufReader& reader_;
};

// Reads the opened file (or buffer) into `decoded`; `path` prefixes error
// messages. Separate from from_gguf_file so the raw metadata is freed before
// the trie is built (fresh pages are costly).
Status decode_gguf(GgufReader& reader, const std::string& path, DecodedVocabulary& decoded) {
  TokenizerMetadata metadata;
  if (Status status = GgufParser(reader).parse(metadata); !status.ok()) {
    return Status(status.code(), path + ": " + status.message());
  }
  const auto fail = [&](ErrorCode code, const std::string& message) {
    return Status(code, path + ": " + message);
  };
  if (!metadata.has_tokens) return fail(ErrorCode::kSyntax, "no tokenizer.ggml.tokens");
  if (!metadata.has_model) return fail(ErrorCode::kSyntax, "no tokenizer.ggml.model");

  if (metadata.model == "gpt2") {
    decoded.style = TokenizerStyle::kByteLevel;
  } else if (metadata.model == "llama") {
    decoded.style = TokenizerStyle::kSentencePiece;
  } else {
    return fail(ErrorCode::kUnsupported,
                "tokenizer model '" + metadata.model + "' is not supported (gpt2 or llama)");
  }
  const size_t count = metadata.token_offsets.size() - 1;
  if (metadata.has_token_types && metadata.token_types.size() != count) {
    return fail(ErrorCode::kSyntax, "tokenizer.ggml.token_type has " +
                                        std::to_string(metadata.token_types.size()) +
                                        " entries for " + std::to_string(count) + " tokens");
  }

  decoded.reserve(count, metadata.token_text.size());
  std::string bytes;  // scratch, reused so decoding does not allocate per token
  for (size_t id = 0; id < count; ++id) {
    const std::string_view text =
        std::string_view(metadata.token_text)
            .substr(metadata.token_offsets[id],
                    metadata.token_offsets[id + 1] - metadata.token_offsets[id]);
    // token_type: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
    // 6 byte; 0 (undefined) is read as normal. Absent means all normal.
    const int32_t type = metadata.has_token_types ? metadata.token_types[id] : 1;
    switch (type) {
      case 0:
      case 1:
        bytes.clear();
        if (decoded.style == TokenizerStyle::kByteLevel) {
          append_byte_level_bytes(text, bytes);
        } else {
          append_sentencepiece_bytes(text, bytes);
        }
        decoded.add_token(bytes, TokenKind::kNormal);
        break;
      case 2:
        decoded.add_token(text, TokenKind::kUnknown);
        break;
      case 3:
        decoded.add_token(text, TokenKind::kControl);
        break;
      case 4:
        decoded.add_token(text, TokenKind::kUserDefined);
        break;
      case 5:
        decoded.add_token({}, TokenKind::kUnused);
        break;
      case 6: {
        const std::optional<uint8_t> byte = parse_byte_piece(text);
        if (!byte) {
          return fail(ErrorCode::kSyntax,
                      "byte token " + std::to_string(id) + " is not spelled <0xHH>");
        }
        const char raw = static_cast<char>(*byte);
        decoded.add_token(std::string_view(&raw, 1), TokenKind::kByte);
        break;
      }
      default:
        return fail(ErrorCode::kSyntax,
                    "token " + std::to_string(id) + " has unknown type " + std::to_string(type));
    }
  }

  for (const auto& [name, id] : {std::pair{"eos", metadata.eos}, std::pair{"eot", metadata.eot},
                                 std::pair{"eom", metadata.eom}}) {
    if (!id) continue;
    if (*id >= count) {
      return fail(ErrorCode::kSyntax, std::string("tokenizer.ggml.") + name + "_token_id " +
                                          std::to_string(*id) + " is out of range");
    }
    decoded.stop_ids.push_back(*id);
  }
  if (metadata.bos && *metadata.bos < count) decoded.bos_id = metadata.bos;
  decoded.add_end_marker_stops = true;
  return Status();
}

}  // namespace

Result<Vocabulary> Vocabulary::from_gguf_file(const std::string& path) try {
  DecodedVocabulary decoded;
  {
    GgufReader reader;
    if (Status status = reader.open(path); !status.ok()) return status;
    if (Status status = decode_gguf(reader, path, decoded); !status.ok()) return status;
  }
  return from_decoded(std::move(decoded));
} catch (const std::bad_alloc&) {
  return Status(ErrorCode::kLimitExceeded, path + ": out of memory while reading the vocabulary");
}

Result<Vocabulary> Vocabulary::from_gguf(std::string_view bytes) try {
  DecodedVocabulary decoded;
  GgufReader reader;
  reader.open_memory(bytes);
  if (Status status = decode_gguf(reader, "GGUF data", decoded); !status.ok()) return status;
  return from_decoded(std::move(decoded));
} catch (const std::bad_alloc&) {
  return Status(ErrorCode::kLimitExceeded, "GGUF data: out of memory while reading the vocabulary");
}

}  // namespace grammask
