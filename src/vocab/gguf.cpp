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
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "grammask/vocabulary.h"
#include "vocab/token_spelling.h"

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

// A little-endian u64 from 8 bytes (compilers make this one load on x86).
uint64_t load_u64(const char* p) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return value;
}

// TokenKind from a GGUF token_type: 1 normal, 2 unknown, 3 control, 4
// user-defined, 5 unused, 6 byte; 0 (undefined) is read as normal. A table:
// this runs once per token.
constexpr TokenKind kKindOfTokenType[] = {
    TokenKind::kNormal,      TokenKind::kNormal, TokenKind::kUnknown, TokenKind::kControl,
    TokenKind::kUserDefined, TokenKind::kUnused, TokenKind::kByte,
};

std::optional<TokenKind> kind_of_token_type(int64_t type) {
  if (type < 0 || type >= static_cast<int64_t>(std::size(kKindOfTokenType))) return std::nullopt;
  return kKindOfTokenType[type];
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
    buffer_.reset(new char[kBufferSize]);  // (not zeroed: fread fills what is read)
    data_ = buffer_.get();
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

  // The bytes already buffered, refilling first when none are; consume()
  // takes some of them. For loops that read many small items without a call
  // per item.
  std::string_view buffered() {
    if (buffer_begin_ == buffer_end_ && remaining() > 0) refill();
    return std::string_view(data_ + buffer_begin_, buffer_end_ - buffer_begin_);
  }
  void consume(size_t n) {  // n <= buffered().size()
    buffer_begin_ += n;
    position_ += n;
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
  static constexpr size_t kBufferSize = 1 << 16;

  struct FileCloser {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };

  bool refill() {
    if (!file_) return false;  // in memory: everything was buffered from the start
    buffer_begin_ = 0;
    buffer_end_ = std::fread(buffer_.get(), 1, kBufferSize, file_.get());
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
  std::unique_ptr<char[]> buffer_;
  const char* data_ = nullptr;  // buffer_, or the caller's bytes in memory mode
  size_t buffer_begin_ = 0;
  size_t buffer_end_ = 0;
  uint64_t position_ = 0;
  uint64_t file_size_ = 0;
};

// What we keep from the metadata.
struct TokenizerMetadata {
  std::string model;
  bool has_model = false;
  // All token strings, packed: token i = token_text[offsets[i], offsets[i+1]).
  // They are decoded in place, and the buffers become the vocabulary's.
  std::string token_text;
  std::vector<uint32_t> token_offsets;
  bool has_tokens = false;
  std::vector<TokenKind> token_kinds;  // from token_type
  bool has_token_types = false;
  // The first token whose type has no TokenKind, and that type.
  std::optional<std::pair<size_t, int64_t>> unknown_token_type;
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
      for (uint64_t i = 0; i < count;) {
        // Within the buffer: step over lengths and texts without a call each.
        const std::string_view window = reader_.buffered();
        const char* at = window.data();
        const char* const window_end = at + window.size();
        for (; i < count && window_end - at >= 8; ++i) {
          const uint64_t length = load_u64(at);
          if (length > static_cast<uint64_t>(window_end - at - 8)) break;
          at += 8 + static_cast<size_t>(length);
        }
        reader_.consume(static_cast<size_t>(at - window.data()));
        if (i == count) break;
        uint64_t length = 0;  // across the end of the buffer
        if (!reader_.read_scalar(length) || !reader_.skip(length)) return truncated(key);
        ++i;
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
    std::vector<uint32_t>& offsets = metadata.token_offsets;
    offsets.reserve(static_cast<size_t>(count) + 1);
    offsets.push_back(0);
    // Typical tokens are short: reserving avoids regrowing (and re-touching)
    // the text. It grows by resizing a chunk at a time and is written
    // through a pointer (no call per token); the unused tail is cut at the end.
    std::string& text = metadata.token_text;
    text.reserve(
        static_cast<size_t>(std::min<uint64_t>(reader_.remaining() - 8 * count, count * 12)));
    constexpr size_t kTextChunk = size_t{1} << 16;
    // Tokens up to this long are copied as two whole words: no call to
    // memcpy per token. The text keeps that much room past its end.
    constexpr size_t kShortToken = 16;
    size_t used = 0;
    for (uint64_t i = 0; i < count;) {
      // The common case: a run of tokens whose lengths and text are all
      // buffered, read straight from the buffer.
      const std::string_view window = reader_.buffered();
      const char* at = window.data();
      const char* const window_end = at + window.size();
      for (; i < count && window_end - at >= 8; ++i) {
        const uint64_t length = load_u64(at);
        if (length > kMaxTokenLength || length > static_cast<uint64_t>(window_end - at - 8)) break;
        const size_t size = static_cast<size_t>(length);
        if (used + std::max(size, kShortToken) > text.size()) {
          text.resize(std::max(used + std::max(size, kShortToken), text.size() + kTextChunk));
        }
        const char* const source = at + 8;
        char* const destination = &text[used];
        if (size <= kShortToken &&
            window_end - source >= static_cast<std::ptrdiff_t>(kShortToken)) {
          std::memcpy(destination, source, kShortToken);  // (a fixed size: two moves)
        } else {
          std::memcpy(destination, source, size);
        }
        at = source + size;
        used += size;
        if (used >= UINT32_MAX) {
          return Status(ErrorCode::kLimitExceeded, "GGUF token text exceeds 4 GiB");
        }
        offsets.push_back(static_cast<uint32_t>(used));
      }
      reader_.consume(static_cast<size_t>(at - window.data()));
      if (i == count) break;
      // A token across the end of the buffer (or a bad length): read it
      // through the reader.
      uint64_t length = 0;
      if (!reader_.read_scalar(length) || length > reader_.remaining()) {
        return truncated("token " + std::to_string(i));
      }
      if (length > kMaxTokenLength) {
        return Status(ErrorCode::kLimitExceeded, "token " + std::to_string(i) + " is " +
                                                     std::to_string(length) +
                                                     " bytes long (at most 65535)");
      }
      const size_t size = static_cast<size_t>(length);
      if (used + size > text.size()) text.resize(std::max(used + size, text.size() + kTextChunk));
      if (!reader_.read(&text[used], size)) return truncated("token " + std::to_string(i));
      used += size;
      if (used >= UINT32_MAX) {
        return Status(ErrorCode::kLimitExceeded, "GGUF token text exceeds 4 GiB");
      }
      offsets.push_back(static_cast<uint32_t>(used));
      ++i;
    }
    text.resize(used);
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
    std::vector<TokenKind>& kinds = metadata.token_kinds;
    kinds.resize(static_cast<size_t>(count));
    const auto set_kind = [&](size_t i, int64_t value) {
      if (const std::optional<TokenKind> kind = kind_of_token_type(value)) {
        kinds[i] = *kind;
      } else {
        kinds[i] = TokenKind::kUnused;
        // Reported as the int32 the value was read as (-1 when out of range).
        if (!metadata.unknown_token_type) {
          metadata.unknown_token_type = {
              i, value < INT32_MIN || value > INT32_MAX ? -1 : static_cast<int32_t>(value)};
        }
      }
    };
    for (size_t i = 0; i < count;) {
      // The usual case: whole 32-bit values in the buffer, converted as they
      // lie there (no temporary array of types).
      const std::string_view window = reader_.buffered();
      if ((element_type == kInt32 || element_type == kUint32) && window.size() >= 4) {
        const size_t here = std::min<size_t>(count - i, window.size() / 4);
        for (size_t k = 0; k < here; ++k) {
          const auto* raw = reinterpret_cast<const unsigned char*>(window.data() + 4 * k);
          const uint32_t bits = uint32_t{raw[0]} | uint32_t{raw[1]} << 8 | uint32_t{raw[2]} << 16 |
                                uint32_t{raw[3]} << 24;
          set_kind(i + k, static_cast<int32_t>(bits));  // (uint32 too, as before)
        }
        reader_.consume(4 * here);
        i += here;
        continue;
      }
      int64_t value = 0;
      if (Status status = read_integer(element_type, key, value); !status.ok()) return status;
      set_kind(i, value);
      ++i;
    }
    return Status();
  }

  GgufReader& reader_;
};

}  // namespace

// Hands the loader's packed tokens to a DecodedVocabulary without copying them.
struct internal::DecodedVocabularyAccess {
  static void adopt(DecodedVocabulary& decoded, std::string bytes, std::vector<uint32_t> offsets,
                    std::vector<TokenKind> kinds, size_t longest, size_t longest_id) {
    decoded.bytes_ = std::move(bytes);
    decoded.offsets_ = std::move(offsets);
    decoded.kinds_ = std::move(kinds);
    decoded.longest_ = longest;
    decoded.longest_id_ = longest_id;
  }
};

namespace {

// Reads the opened file (or buffer) into `decoded`; `path` prefixes error
// messages. Each token is decoded where its text was read (a spelling is
// never longer than its text), and the buffers become the vocabulary's.
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
  if (metadata.has_token_types && metadata.token_kinds.size() != count) {
    return fail(ErrorCode::kSyntax, "tokenizer.ggml.token_type has " +
                                        std::to_string(metadata.token_kinds.size()) +
                                        " entries for " + std::to_string(count) + " tokens");
  }
  std::vector<TokenKind>& kinds = metadata.token_kinds;
  if (!metadata.has_token_types) kinds.assign(count, TokenKind::kNormal);  // absent: all normal
  // Past this token, the loop below would not get (it reports its type).
  const size_t stop_at = metadata.unknown_token_type ? metadata.unknown_token_type->first : count;

  std::string& text = metadata.token_text;
  std::vector<uint32_t>& offsets = metadata.token_offsets;
  char* const base = text.data();
  const bool byte_level = decoded.style == TokenizerStyle::kByteLevel;
  size_t written = 0;     // decoded bytes so far, all before the text still to decode
  size_t text_begin = 0;  // where token id's text starts (offsets[id] now holds its decoded start)
  size_t longest = 0, longest_id = 0;
  for (size_t id = 0; id < count; ++id) {
    if (id == stop_at) {
      return fail(ErrorCode::kSyntax, "token " + std::to_string(id) + " has unknown type " +
                                          std::to_string(metadata.unknown_token_type->second));
    }
    const size_t text_end = offsets[id + 1];
    const std::string_view token_text(base + text_begin, text_end - text_begin);
    char* const out = base + written;
    char* end = out;
    switch (kinds[id]) {
      case TokenKind::kNormal:
        end = byte_level ? internal::write_byte_level_bytes(token_text, out)
                         : internal::write_sentencepiece_bytes(token_text, out);
        break;
      case TokenKind::kByte: {
        const std::optional<uint8_t> byte = parse_byte_piece(token_text);
        if (!byte) {
          return fail(ErrorCode::kSyntax,
                      "byte token " + std::to_string(id) + " is not spelled <0xHH>");
        }
        *end++ = static_cast<char>(*byte);
        break;
      }
      case TokenKind::kUnused:  // empty bytes
        break;
      case TokenKind::kUnknown:
      case TokenKind::kControl:
      case TokenKind::kUserDefined:  // their literal text
        std::memmove(out, token_text.data(), token_text.size());
        end = out + token_text.size();
        break;
    }
    const size_t size = static_cast<size_t>(end - out);
    if (size > longest) {
      longest = size;
      longest_id = id;
    }
    written += size;
    offsets[id + 1] = static_cast<uint32_t>(written);
    text_begin = text_end;
  }
  text.resize(written);
  internal::DecodedVocabularyAccess::adopt(decoded, std::move(text), std::move(offsets),
                                           std::move(kinds), longest, longest_id);

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
