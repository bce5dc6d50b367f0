// Vocabulary loaders (GGUF, tokenizer.json, token bytes), the token-bytes
// rule checked against the bench traces, hostile GGUF input, and the trie.
#include "grammask/vocabulary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "grammask/bitmask.h"
#include "grammask/matcher.h"
#include "vocab/text_slice.h"
#include "vocab/token_trie.h"
#include "vocab/vocabulary_access.h"

namespace grammask {
namespace {

using internal::TokenTrie;

// --- helpers -------------------------------------------------------------------

std::string shared_dir() {
  const std::string dir = GRAMMASK_SHARED_DIR;
  if (dir.empty()) return dir;
  std::ifstream probe(dir + "/bench/README.md");
  return probe ? dir : std::string();
}

#define REQUIRE_SHARED_DIR(dir)         \
  const std::string dir = shared_dir(); \
  if (dir.empty()) GTEST_SKIP() << "shared test material not available"

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

std::vector<uint32_t> read_ids(const std::string& path) {
  std::ifstream file(path);
  std::vector<uint32_t> ids;
  for (uint32_t id; file >> id;) ids.push_back(id);
  return ids;
}

// '▁' and 'Ġ' spelled in UTF-8.
const std::string kSpaceMark = "\xE2\x96\x81";
const std::string kByteLevelSpace = "\xC4\xA0";
const std::string kByteLevelNewline = "\xC4\x8A";

// Writes GGUF files for the tests: little-endian, version 3 unless told.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) {
    out_ = "GGUF";
    u32(version);
  }

  GgufWriter& counts(uint64_t tensors, uint64_t entries) {
    u64(tensors);
    u64(entries);
    return *this;
  }
  GgufWriter& key(const std::string& name, uint32_t type) {
    str(name);
    u32(type);
    return *this;
  }
  GgufWriter& string_value(const std::string& name, const std::string& value) {
    key(name, 8);
    str(value);
    return *this;
  }
  GgufWriter& u32_value(const std::string& name, uint32_t value) {
    key(name, 4);
    u32(value);
    return *this;
  }
  GgufWriter& strings(const std::string& name, const std::vector<std::string>& values) {
    key(name, 9);
    u32(8);
    u64(values.size());
    for (const std::string& value : values) str(value);
    return *this;
  }
  GgufWriter& int32s(const std::string& name, const std::vector<int32_t>& values) {
    key(name, 9);
    u32(5);
    u64(values.size());
    for (int32_t value : values) u32(static_cast<uint32_t>(value));
    return *this;
  }
  GgufWriter& raw(const std::string& bytes) {
    out_ += bytes;
    return *this;
  }

  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_ += static_cast<char>(v >> (8 * i));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_ += static_cast<char>(v >> (8 * i));
  }
  void str(const std::string& s) {
    u64(s.size());
    out_ += s;
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

// ctest runs every test in a process of its own, in parallel: the file name
// carries the test's name so that two tests never share a scratch file.
std::string temp_path(const std::string& name) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string owner = test ? std::string(test->test_suite_name()) + "." + test->name() : "none";
  // A token per process keeps concurrent runs of other checkouts apart too.
  static const std::string process = std::to_string(std::random_device{}());
  return ::testing::TempDir() + "/grammask_vocabulary_test_" + process + "_" + owner + "_" + name;
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

Result<Vocabulary> load_gguf_bytes(const std::string& bytes) {
  const std::string path = write_temp("scratch.gguf", bytes);
  Result<Vocabulary> vocab = Vocabulary::from_gguf_file(path);
  std::remove(path.c_str());
  return vocab;
}

// A small SentencePiece-style GGUF with every token type, plus metadata the
// loader must skip (a float, a string array, a nested array, a bool).
std::string small_llama_gguf() {
  GgufWriter w;
  w.counts(0, 9);
  w.string_value("general.architecture", "llama");
  w.key("general.some_float", 6).u32(0x3F800000);
  w.key("general.flag", 7).raw(std::string(1, '\1'));
  w.key("general.nested", 9).u32(9);
  w.u64(2);
  for (int i = 0; i < 2; ++i) {  // two arrays of two uint16
    w.u32(2);
    w.u64(2);
    w.raw(std::string(4, '\0'));
  }
  w.string_value("tokenizer.ggml.model", "llama");
  w.strings("tokenizer.ggml.tokens",
            {"<unk>", "<s>", "</s>", "<0x0A>", "<0x41>", kSpaceMark + "the", "A", "<|end|>",
             "[PAD]", "<user>", "th" + kSpaceMark});
  w.int32s("tokenizer.ggml.token_type", {2, 3, 3, 6, 6, 1, 1, 3, 5, 4, 1});
  w.u32_value("tokenizer.ggml.eos_token_id", 2);
  w.u32_value("tokenizer.ggml.bos_token_id", 1);
  return w.bytes();
}

// The bytes each path spells, checked node by node; returns "" if fine.
std::string check_trie(const Vocabulary& vocab) {
  const TokenTrie& trie = internal::VocabularyAccess::trie(vocab);
  const auto& nodes = trie.nodes();
  const auto& ids = trie.token_ids();
  std::ostringstream problems;
  if (nodes.size() == 0 || nodes[0].depth != 0 || nodes[0].subtree_end != nodes.size()) {
    return "bad root";
  }
  std::vector<uint32_t> stack = {0};  // open ancestors of the current node
  std::string path;                   // bytes from the root to stack.back()
  std::vector<int> last_child_byte = {-1};
  uint32_t next_token = 0;
  std::vector<int> seen(vocab.size(), 0);
  size_t longest = 0;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const TokenTrie::Node& node = nodes[i];
    if (i > 0) {
      while (nodes[stack.back()].subtree_end <= i) {
        stack.pop_back();
        path.pop_back();
        last_child_byte.pop_back();
      }
      const TokenTrie::Node& parent = nodes[stack.back()];
      if (node.depth != parent.depth + 1) problems << "node " << i << " depth\n";
      if (node.subtree_end <= i || node.subtree_end > parent.subtree_end) {
        problems << "node " << i << " subtree_end\n";
      }
      if (static_cast<int>(node.byte) <= last_child_byte.back()) {
        problems << "node " << i << " children out of byte order\n";
      }
      last_child_byte.back() = node.byte;
      stack.push_back(i);
      path.push_back(static_cast<char>(node.byte));
      last_child_byte.push_back(-1);
    }
    if (path.size() != node.depth) problems << "node " << i << " path length\n";
    const uint32_t tokens_end = trie.tokens_end(i);
    if (node.tokens_begin != next_token || tokens_end < node.tokens_begin) {
      problems << "node " << i << " token range not contiguous\n";
    }
    for (uint32_t t = node.tokens_begin; t < tokens_end && t < ids.size(); ++t) {
      const uint32_t id = ids[t];
      if (id >= vocab.size()) {
        problems << "token id " << id << " out of range\n";
        continue;
      }
      if (vocab.token_bytes(id) != path) problems << "token " << id << " bytes != path\n";
      if (t > node.tokens_begin && ids[t - 1] >= id) problems << "ids not ascending\n";
      ++seen[id];
      longest = std::max(longest, path.size());
    }
    next_token = tokens_end;
  }
  if (next_token != ids.size()) problems << "token_ids has unreferenced entries\n";
  if (longest != trie.max_depth()) problems << "max_depth\n";
  for (uint32_t id = 0; id < vocab.size(); ++id) {
    const bool eligible =
        !vocab.is_special(id) && !vocab.is_stop(id) && !vocab.token_bytes(id).empty();
    if (seen[id] != (eligible ? 1 : 0)) {
      problems << "token " << id << " appears " << seen[id] << " times\n";
      if (problems.tellp() > 2000) break;
    }
  }
  return problems.str();
}

// The trie builder sorts a few thousand tokens directly and more through
// buckets of their first two bytes: both orders must give the same checked
// trie (shared prefixes, duplicates, zero and high bytes, tokens past the
// 16 bytes of the sort key's prefix).
TEST(TokenTrie, FewAndManyTokensBuildTheSameTrie) {
  std::mt19937 rng(7);
  const char alphabet[] = {'a', 'b', '\0', '\xff'};
  std::vector<std::string> tokens;
  for (int i = 0; i < 6000; ++i) {
    std::string token(1 + rng() % 24, 'a');
    for (char& c : token) c = alphabet[rng() % 4];
    tokens.push_back(token);
  }
  for (size_t count : {size_t{3000}, tokens.size()}) {
    SCOPED_TRACE(count);
    auto vocab = Vocabulary::from_token_bytes(
        std::vector<std::string>(tokens.begin(), tokens.begin() + static_cast<ptrdiff_t>(count)),
        {}, {});
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    EXPECT_EQ(check_trie(*vocab), "");
  }
}

// --- byte spelling -----------------------------------------------------------

TEST(TokenBytes, ByteLevelTableCoversEveryByte) {
  // Forward table built independently: printable bytes map to themselves,
  // the others to U+0100 onward in byte order.
  uint32_t shifted = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable =
        (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE);
    const uint32_t cp = printable ? static_cast<uint32_t>(byte) : shifted++;
    std::string utf8;
    if (cp < 0x80) {
      utf8 += static_cast<char>(cp);
    } else {
      utf8 += static_cast<char>(0xC0 | (cp >> 6));
      utf8 += static_cast<char>(0x80 | (cp & 0x3F));
    }
    std::string bytes;
    append_byte_level_bytes(utf8, bytes);
    ASSERT_EQ(bytes, std::string(1, static_cast<char>(byte))) << "byte " << byte;
  }
  EXPECT_EQ(shifted, 0x100u + 68);
  std::string text;
  append_byte_level_bytes(kByteLevelSpace + "hello" + kByteLevelNewline, text);
  EXPECT_EQ(text, " hello\n");
  // Characters outside the alphabet (here '日') are kept as written.
  text.clear();
  append_byte_level_bytes("\xE6\x97\xA5", text);
  EXPECT_EQ(text, "\xE6\x97\xA5");
}

TEST(TokenBytes, SentencePieceAndBytePieces) {
  std::string text;
  append_sentencepiece_bytes(kSpaceMark + "hello" + kSpaceMark + kSpaceMark, text);
  EXPECT_EQ(text, " hello  ");
  EXPECT_EQ(parse_byte_piece("<0x0A>"), std::optional<uint8_t>(0x0A));
  EXPECT_EQ(parse_byte_piece("<0xff>"), std::optional<uint8_t>(0xFF));
  EXPECT_EQ(parse_byte_piece("<0x0G>"), std::nullopt);
  EXPECT_EQ(parse_byte_piece("<0x0A"), std::nullopt);
  EXPECT_EQ(parse_byte_piece("A"), std::nullopt);
}

// --- from_token_bytes ----------------------------------------------------------

TEST(Vocabulary, FromTokenBytes) {
  auto vocab = Vocabulary::from_token_bytes({"a", "ab", "b", "", "<eos>", "ab"}, {4}, {4});
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->size(), 6u);
  EXPECT_EQ(vocab->token_bytes(1), "ab");
  EXPECT_EQ(vocab->token_bytes(99), "");
  EXPECT_TRUE(vocab->is_special(4));
  EXPECT_FALSE(vocab->is_special(0));
  EXPECT_TRUE(vocab->is_special(99));
  EXPECT_EQ(vocab->kind(4), TokenKind::kControl);
  EXPECT_EQ(vocab->stop_tokens(), std::vector<uint32_t>{4});
  EXPECT_TRUE(vocab->is_stop(4));
  EXPECT_EQ(vocab->style(), TokenizerStyle::kRawBytes);
  EXPECT_EQ(vocab->find_token("ab"), std::optional<uint32_t>(1));  // lowest of 1 and 5
  EXPECT_EQ(vocab->find_token("<eos>"), std::optional<uint32_t>(4));
  EXPECT_EQ(vocab->find_token("zz"), std::nullopt);
  EXPECT_EQ(vocab->find_token(""), std::nullopt);
  EXPECT_EQ(check_trie(*vocab), "");
  EXPECT_EQ(internal::VocabularyAccess::trie(*vocab).token_ids().size(), 4u);  // a, ab, ab, b

  EXPECT_EQ(Vocabulary::from_token_bytes({"a"}, {1}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Vocabulary::from_token_bytes({"a"}, {}, {7}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(Vocabulary::from_token_bytes({std::string(70000, 'x')}, {}).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(Vocabulary, CopiesShareData) {
  auto vocab = Vocabulary::from_token_bytes({"x", "y"}, {});
  ASSERT_TRUE(vocab.ok());
  const Vocabulary copy = *vocab;
  EXPECT_EQ(copy.token_bytes(0).data(), vocab->token_bytes(0).data());
  EXPECT_EQ(&internal::VocabularyAccess::trie(copy), &internal::VocabularyAccess::trie(*vocab));
}

TEST(Vocabulary, WithStopTokensSharesOrRebuildsTheTrie) {
  auto vocab = Vocabulary::from_token_bytes({"a", "b", "<end>", "<s>"}, {}, {2, 3});
  ASSERT_TRUE(vocab.ok());
  // Adding a control token leaves the text tokens alone: same trie.
  auto with_end = vocab->with_stop_tokens({2});
  ASSERT_TRUE(with_end.ok());
  EXPECT_EQ(&internal::VocabularyAccess::trie(*with_end),
            &internal::VocabularyAccess::trie(*vocab));
  EXPECT_EQ(with_end->stop_tokens(), std::vector<uint32_t>{2});
  EXPECT_TRUE(vocab->stop_tokens().empty());
  // A text token that becomes a stop leaves the trie.
  auto with_b = vocab->with_stop_tokens({1, 1, 2});
  ASSERT_TRUE(with_b.ok());
  EXPECT_EQ(with_b->stop_tokens(), (std::vector<uint32_t>{1, 2}));
  EXPECT_NE(&internal::VocabularyAccess::trie(*with_b), &internal::VocabularyAccess::trie(*vocab));
  EXPECT_EQ(check_trie(*with_b), "");
  EXPECT_EQ(internal::VocabularyAccess::trie(*with_b).token_ids(), std::vector<uint32_t>{0});
  EXPECT_EQ(with_b->find_token("b"), std::optional<uint32_t>(1));  // still findable
  EXPECT_EQ(vocab->with_stop_tokens({4}).status().code(), ErrorCode::kInvalidArgument);
}

// The text slice holds exactly the trie tokens that spell whole plain-text
// characters; the rest trie holds every other trie token.
TEST(Vocabulary, TextSlicePartitionsTheTrie) {
  const std::vector<std::string> tokens = {
      "abc",  " x",   "\"",   "a\"",  "\\",           "\n",       "\x7F", "\xC3\xA9",
      "\xC3", "\xA9", "日本", "\xE6", "\xED\xA0\x80", "\xC0\xAF", "🎉",    "\xF0\x9F",
      "<s>",  "</s>", "\t",   "~",    "\x7E\x80"};
  auto vocab = Vocabulary::from_token_bytes(tokens, {17}, {16});
  ASSERT_TRUE(vocab.ok());
  const internal::TextSlice& slice = internal::VocabularyAccess::text_slice(*vocab);
  std::vector<uint32_t> in_slice, in_rest;
  for (uint32_t id = 0; id < tokens.size(); ++id)
    if (test_bit(slice.words.data(), id)) in_slice.push_back(id);
  for (uint32_t id : slice.rest.token_ids()) in_rest.push_back(id);
  std::sort(in_rest.begin(), in_rest.end());
  // Plain text: ASCII from space on (not '"', '\\', DEL), whole characters.
  EXPECT_EQ(in_slice, (std::vector<uint32_t>{0, 1, 7, 10, 14, 19}));
  // Everything else the trie holds; never the special or stop tokens.
  EXPECT_EQ(in_rest, (std::vector<uint32_t>{2, 3, 4, 5, 6, 8, 9, 11, 12, 13, 15, 18, 20}));
  // A stop-set change that rebuilds the trie rebuilds the slice with it.
  auto without_x = vocab->with_stop_tokens({1, 17});
  ASSERT_TRUE(without_x.ok());
  EXPECT_FALSE(test_bit(internal::VocabularyAccess::text_slice(*without_x).words.data(), 1));
  EXPECT_TRUE(test_bit(internal::VocabularyAccess::text_slice(*without_x).words.data(), 0));
  EXPECT_EQ(&internal::VocabularyAccess::text_slice(*vocab->with_stop_tokens({16, 17})), &slice);
}

// An avoiding slice holds the slice tokens without the avoided bytes; its
// rest trie holds every other trie token. A set that more than a quarter of
// the trie's tokens hold gets no slice (and asking again gives none).
TEST(Vocabulary, AvoidingSlicesPartitionTheTrieOrDecline) {
  std::vector<std::string> tokens = {"<a", "b>", "c", "d", "\n", "<s>", "</s>"};
  for (int i = 0; i < 16; ++i) tokens.push_back("w" + std::to_string(i));
  auto vocab = Vocabulary::from_token_bytes(tokens, {6}, {5});
  ASSERT_TRUE(vocab.ok());
  const internal::TextSlice& slice = internal::VocabularyAccess::text_slice(*vocab);
  const auto get = [&](const std::string& avoided) {
    internal::ByteSet avoid;
    for (char c : avoided) avoid.set(static_cast<uint8_t>(c));
    return slice.avoiding->get(avoid, slice.words, internal::VocabularyAccess::trie(*vocab),
                               internal::VocabularyAccess::bytes(*vocab),
                               internal::VocabularyAccess::offsets(*vocab), vocab->size());
  };
  const internal::AvoidingSlice* angle = get("<>");
  ASSERT_NE(angle, nullptr);
  std::vector<uint32_t> kept, rest(angle->rest.token_ids());
  for (uint32_t id = 0; id < tokens.size(); ++id)
    if (test_bit(angle->words.data(), id)) kept.push_back(id);
  std::sort(rest.begin(), rest.end());
  std::vector<uint32_t> expected_kept = {2, 3};
  for (uint32_t id = 7; id < tokens.size(); ++id) expected_kept.push_back(id);
  EXPECT_EQ(kept, expected_kept);
  EXPECT_EQ(rest, (std::vector<uint32_t>{0, 1, 4}));  // '\n' is not plain text
  EXPECT_EQ(get("><"), angle);                        // built once
  // 'w' is in 16 of the 21 trie tokens.
  EXPECT_EQ(get("w"), nullptr);
  EXPECT_EQ(get("w"), nullptr);
  EXPECT_EQ(get("<>"), angle);
}

// spells_plain_text reads eight ASCII bytes at a time; every byte value in
// every position of long and short strings must give the per-character
// answer.
TEST(TextSlice, PlainTextCheckAgreesWithDecoding) {
  auto reference = [](std::string_view bytes) {
    if (bytes.empty()) return false;
    for (size_t pos = 0; pos < bytes.size();) {
      uint32_t code_point = 0;
      const size_t length = utf8::decode(bytes, pos, &code_point);
      if (length == utf8::kInvalid || !internal::is_plain_text_char(code_point)) return false;
      pos += length;
    }
    return true;
  };
  size_t plain = 0;
  for (size_t length : {1, 7, 8, 9, 16, 19}) {
    for (size_t at = 0; at < length; ++at) {
      for (int value = 0; value < 256; ++value) {
        std::string text(length, 'a');
        text[at] = static_cast<char>(value);
        ASSERT_EQ(internal::spells_plain_text(text), reference(text))
            << "byte " << value << " at " << at << " of " << length;
        plain += reference(text);
      }
    }
  }
  EXPECT_GT(plain, 0u);
  std::mt19937 random(7);
  const std::string pieces[] = {"a",
                                " ",
                                "\"",
                                "\\",
                                "\x7F",
                                "\x1F",
                                "\xC3\xA9",
                                "\xE6\x97\xA5",
                                "\xF0\x9F\x8E\x89",
                                "\xC3",
                                "\xA9",
                                "\xED\xA0\x80"};
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const int count = static_cast<int>(random() % 24);
    for (int k = 0; k < count; ++k) text += pieces[random() % (random() % 4 == 0 ? 12 : 2)];
    ASSERT_EQ(internal::spells_plain_text(text), reference(text)) << text;
  }
}

TEST(Vocabulary, FromDecodedHonoursKindsAndEndMarkers) {
  DecodedVocabulary decoded;
  decoded.add_token("hi", TokenKind::kNormal);
  decoded.add_token("<|eot_id|>", TokenKind::kControl);
  decoded.add_token("<|eot_id|>", TokenKind::kUserDefined);  // not control: no stop
  decoded.add_token("junk", TokenKind::kUnused);
  decoded.add_token("<unk>", TokenKind::kUnknown);
  decoded.add_end_marker_stops = true;
  decoded.bos_id = 0;
  auto vocab = Vocabulary::from_decoded(std::move(decoded));
  ASSERT_TRUE(vocab.ok());
  EXPECT_EQ(vocab->stop_tokens(), std::vector<uint32_t>{1});
  EXPECT_EQ(vocab->token_bytes(3), "");
  EXPECT_TRUE(vocab->is_special(3));
  EXPECT_TRUE(vocab->is_special(4));
  EXPECT_FALSE(vocab->is_special(2));
  EXPECT_EQ(vocab->bos_token(), std::optional<uint32_t>(0));
  EXPECT_EQ(check_trie(*vocab), "");
}

// --- synthetic GGUF --------------------------------------------------------------

TEST(Gguf, LoadsSentencePieceTokensOfEveryType) {
  auto vocab = load_gguf_bytes(small_llama_gguf());
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->size(), 11u);
  EXPECT_EQ(vocab->style(), TokenizerStyle::kSentencePiece);
  EXPECT_EQ(vocab->token_bytes(0), "<unk>");
  EXPECT_EQ(vocab->kind(0), TokenKind::kUnknown);
  EXPECT_EQ(vocab->token_bytes(1), "<s>");
  EXPECT_EQ(vocab->kind(1), TokenKind::kControl);
  EXPECT_EQ(vocab->token_bytes(3), "\n");
  EXPECT_EQ(vocab->kind(3), TokenKind::kByte);
  EXPECT_EQ(vocab->token_bytes(4), "A");
  EXPECT_EQ(vocab->token_bytes(5), " the");
  EXPECT_EQ(vocab->token_bytes(8), "");  // unused
  EXPECT_TRUE(vocab->is_special(8));
  EXPECT_EQ(vocab->token_bytes(9), "<user>");  // user-defined: verbatim
  EXPECT_EQ(vocab->kind(9), TokenKind::kUserDefined);
  EXPECT_FALSE(vocab->is_special(9));
  EXPECT_EQ(vocab->token_bytes(10), "th ");
  // eos from metadata, and <|end|> as a control token spelled like an end marker.
  EXPECT_EQ(vocab->stop_tokens(), (std::vector<uint32_t>{2, 7}));
  EXPECT_EQ(vocab->bos_token(), std::optional<uint32_t>(1));
  // <0x41> and A share a node; find_token returns the lower id.
  EXPECT_EQ(vocab->find_token("A"), std::optional<uint32_t>(4));
  EXPECT_EQ(check_trie(*vocab), "");
}

TEST(Gguf, LoadsByteLevelTokensAndVersion2) {
  GgufWriter w(2);
  w.counts(0, 4);
  w.string_value("tokenizer.ggml.model", "gpt2");
  w.strings("tokenizer.ggml.tokens",
            {"hello", kByteLevelSpace + "world", kByteLevelNewline, "<|endoftext|>"});
  w.int32s("tokenizer.ggml.token_type", {1, 1, 1, 3});
  w.u32_value("tokenizer.ggml.eos_token_id", 3);
  auto vocab = load_gguf_bytes(w.bytes());
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->style(), TokenizerStyle::kByteLevel);
  EXPECT_EQ(vocab->token_bytes(1), " world");
  EXPECT_EQ(vocab->token_bytes(2), "\n");
  EXPECT_EQ(vocab->stop_tokens(), std::vector<uint32_t>{3});
  EXPECT_EQ(check_trie(*vocab), "");
}

TEST(Gguf, MissingTokenTypesMeansAllNormal) {
  GgufWriter w;
  w.counts(0, 2);
  w.strings("tokenizer.ggml.tokens", {"a", kSpaceMark + "b"});
  w.string_value("tokenizer.ggml.model", "llama");
  auto vocab = load_gguf_bytes(w.bytes());
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->token_bytes(1), " b");
  EXPECT_TRUE(vocab->stop_tokens().empty());
}

// A file several times the loader's 64 KiB read buffer: token strings,
// their lengths, the skipped merges and the 32-bit token types all straddle
// refills somewhere, and long tokens take the path past the buffer. The
// file and the same bytes in memory must load alike, every token spelled
// as written (byte-level, decoded in place where its text was read).
TEST(Gguf, TokensStraddlingReadBuffersLoadAlike) {
  std::mt19937 random(11);
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> expected;
  for (int id = 0; id < 30000; ++id) {
    const int type = id % 97 == 0 ? 3 : id % 89 == 0 ? 5 : 1;  // some control, some unused
    const size_t length = id % 5000 == 7 ? 60000 : random() % 24;
    std::string word;
    for (size_t i = 0; i < length; ++i) word += static_cast<char>('a' + random() % 26);
    const bool spaced = type == 1 && random() % 2 == 0;
    tokens.push_back(spaced ? kByteLevelSpace + word : word);
    types.push_back(type);
    expected.push_back(type == 5 ? "" : spaced ? " " + word : word);
  }
  std::vector<std::string> merges;
  for (int i = 0; i < 40000; ++i) merges.push_back(std::string(random() % 20, 'm'));
  GgufWriter w;
  w.counts(0, 4);
  w.string_value("tokenizer.ggml.model", "gpt2");
  w.strings("tokenizer.ggml.tokens", tokens);
  w.strings("tokenizer.ggml.merges", merges);
  w.int32s("tokenizer.ggml.token_type", types);
  ASSERT_GT(w.bytes().size(), size_t{4} << 18);

  auto from_file = load_gguf_bytes(w.bytes());
  auto from_memory = Vocabulary::from_gguf(w.bytes());
  ASSERT_TRUE(from_file.ok()) << from_file.status().to_string();
  ASSERT_TRUE(from_memory.ok()) << from_memory.status().to_string();
  for (const Vocabulary* vocab : {&*from_file, &*from_memory}) {
    ASSERT_EQ(vocab->size(), tokens.size());
    for (uint32_t id = 0; id < tokens.size(); ++id) {
      ASSERT_EQ(vocab->token_bytes(id), expected[id]) << "token " << id;
      ASSERT_EQ(vocab->kind(id), types[id] == 3   ? TokenKind::kControl
                                 : types[id] == 5 ? TokenKind::kUnused
                                                  : TokenKind::kNormal)
          << "token " << id;
    }
    EXPECT_EQ(check_trie(*vocab), "");
  }
}

TEST(Gguf, EveryTruncationIsAnError) {
  const std::string full = small_llama_gguf();
  ASSERT_TRUE(load_gguf_bytes(full).ok());
  for (size_t length = 0; length < full.size(); ++length) {
    auto vocab = load_gguf_bytes(full.substr(0, length));
    ASSERT_FALSE(vocab.ok()) << "prefix of " << length << " bytes loaded";
    ASSERT_FALSE(vocab.status().message().empty());
  }
}

TEST(Gguf, HostileHeadersAreErrors) {
  const auto code_of = [](const std::string& bytes) {
    return load_gguf_bytes(bytes).status().code();
  };
  std::string bad_magic = small_llama_gguf();
  bad_magic[0] = 'X';
  EXPECT_EQ(code_of(bad_magic), ErrorCode::kSyntax);
  EXPECT_EQ(code_of(GgufWriter(1).counts(0, 0).bytes()), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of(GgufWriter(4).counts(0, 0).bytes()), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of(GgufWriter(0x03000000).counts(0, 0).bytes()), ErrorCode::kUnsupported);
  // Claims more entries than the file could hold.
  EXPECT_EQ(code_of(GgufWriter().counts(0, uint64_t{1} << 60).bytes()), ErrorCode::kSyntax);
  // Claims more tensors than could follow the metadata.
  std::string many_tensors = small_llama_gguf();
  many_tensors[8] = '\x7F';
  EXPECT_EQ(code_of(many_tensors), ErrorCode::kSyntax);
  // No tokenizer at all.
  EXPECT_EQ(code_of(GgufWriter().counts(0, 0).bytes()), ErrorCode::kSyntax);
  EXPECT_EQ(Vocabulary::from_gguf_file(temp_path("does-not-exist.gguf")).status().code(),
            ErrorCode::kIo);
}

TEST(Gguf, HostileValuesAreErrors) {
  const auto with_tokens = [](const std::function<void(GgufWriter&)>& extra, uint64_t entries) {
    GgufWriter w;
    w.counts(0, 2 + entries);
    w.string_value("tokenizer.ggml.model", "llama");
    w.strings("tokenizer.ggml.tokens", {"a", "b"});
    extra(w);
    return load_gguf_bytes(w.bytes());
  };
  const auto fails = [&](const std::function<void(GgufWriter&)>& extra) {
    return !with_tokens(extra, 1).ok();
  };
  EXPECT_TRUE(with_tokens([](GgufWriter&) {}, 0).ok());
  // A huge string length in a skipped entry.
  EXPECT_TRUE(fails([](GgufWriter& w) {
    w.key("general.name", 8);
    w.u64(uint64_t{1} << 62);
  }));
  // A huge array count.
  EXPECT_TRUE(fails([](GgufWriter& w) {
    w.key("general.list", 9);
    w.u32(4);
    w.u64(uint64_t{1} << 61);
  }));
  // Unknown value type and unknown array element type.
  EXPECT_TRUE(fails([](GgufWriter& w) { w.key("general.x", 13).u32(0); }));
  EXPECT_TRUE(fails([](GgufWriter& w) {
    w.key("general.x", 9);
    w.u32(77);
    w.u64(1);
  }));
  // Arrays nested deeper than any real file.
  EXPECT_TRUE(fails([](GgufWriter& w) {
    w.key("general.deep", 9);
    for (int i = 0; i < 20; ++i) {
      w.u32(9);
      w.u64(1);
    }
    w.u32(4);
    w.u64(0);
  }));
  // Wrong types for tokenizer keys.
  EXPECT_TRUE(fails([](GgufWriter& w) { w.u32_value("tokenizer.ggml.eos_token_id", 7); }));
  EXPECT_TRUE(fails([](GgufWriter& w) { w.string_value("tokenizer.ggml.eos_token_id", "2"); }));
  EXPECT_TRUE(fails([](GgufWriter& w) { w.int32s("tokenizer.ggml.token_type", {1}); }));
  EXPECT_TRUE(fails([](GgufWriter& w) { w.int32s("tokenizer.ggml.token_type", {1, 9}); }));
  EXPECT_TRUE(fails([](GgufWriter& w) { w.int32s("tokenizer.ggml.token_type", {1, 6}); }));
  EXPECT_TRUE(fails([](GgufWriter& w) { w.strings("tokenizer.ggml.token_type", {"1", "1"}); }));
  EXPECT_TRUE(fails([](GgufWriter& w) { w.strings("tokenizer.ggml.tokens", {"again"}); }));
  // tokens as an array of integers.
  {
    GgufWriter w;
    w.counts(0, 2);
    w.string_value("tokenizer.ggml.model", "llama");
    w.int32s("tokenizer.ggml.tokens", {1, 2});
    EXPECT_EQ(load_gguf_bytes(w.bytes()).status().code(), ErrorCode::kSyntax);
  }
  // A token claiming more bytes than the file has, and one too long to store.
  {
    GgufWriter w;
    w.counts(0, 1);
    w.key("tokenizer.ggml.tokens", 9);
    w.u32(8);
    w.u64(1);
    w.u64(uint64_t{1} << 40);
    EXPECT_FALSE(load_gguf_bytes(w.bytes()).ok());
  }
  {
    GgufWriter w;
    w.counts(0, 2);
    w.string_value("tokenizer.ggml.model", "llama");
    w.strings("tokenizer.ggml.tokens", {std::string(70000, 'x')});
    EXPECT_EQ(load_gguf_bytes(w.bytes()).status().code(), ErrorCode::kLimitExceeded);
  }
  // Unsupported tokenizer model.
  {
    GgufWriter w;
    w.counts(0, 2);
    w.string_value("tokenizer.ggml.model", "bert");
    w.strings("tokenizer.ggml.tokens", {"a"});
    EXPECT_EQ(load_gguf_bytes(w.bytes()).status().code(), ErrorCode::kUnsupported);
  }
}

TEST(Gguf, RandomCorruptionNeverCrashes) {
  const std::string full = small_llama_gguf();
  uint32_t state = 12345;
  const auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  for (int round = 0; round < 300; ++round) {
    std::string bytes = full;
    const int flips = 1 + static_cast<int>(next() % 4);
    for (int i = 0; i < flips; ++i) {
      bytes[next() % bytes.size()] = static_cast<char>(next());
    }
    auto vocab = load_gguf_bytes(bytes);  // ok or an error, never a crash
    if (vocab.ok()) {
      EXPECT_EQ(check_trie(*vocab), "");
    } else {
      EXPECT_FALSE(vocab.status().message().empty());
    }
  }
}

// --- synthetic tokenizer.json ------------------------------------------------------

TEST(TokenizerJson, ByteLevelBpe) {
  const std::string json = R"({
    "added_tokens": [
      {"id": 3, "content": "<|end_of_text|>", "special": true},
      {"id": 4, "content": "<tool>", "special": false}],
    "pre_tokenizer": {"type": "ByteLevel"},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"hi": 0, "\u0120there": 1, "\u010a": 2},
              "merges": ["h i"]}})";
  auto vocab = Vocabulary::from_tokenizer_json(json);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->size(), 5u);
  EXPECT_EQ(vocab->style(), TokenizerStyle::kByteLevel);
  EXPECT_EQ(vocab->token_bytes(1), " there");
  EXPECT_EQ(vocab->token_bytes(2), "\n");
  EXPECT_EQ(vocab->kind(3), TokenKind::kControl);
  EXPECT_EQ(vocab->token_bytes(4), "<tool>");
  EXPECT_EQ(vocab->kind(4), TokenKind::kUserDefined);
  EXPECT_EQ(vocab->stop_tokens(), std::vector<uint32_t>{3});
  EXPECT_EQ(check_trie(*vocab), "");
}

TEST(TokenizerJson, SentencePieceBpeWithGapsAndByteFallback) {
  const std::string json = R"({
    "added_tokens": [{"id": 0, "content": "<unk>", "special": true},
                     {"id": 9, "content": "<|end|>", "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
    "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"}]},
    "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
              "vocab": {"<unk>": 0, "<0x0A>": 1, "\u2581a": 2, "b": 3}}})";
  auto vocab = Vocabulary::from_tokenizer_json(json);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->size(), 10u);
  EXPECT_EQ(vocab->style(), TokenizerStyle::kSentencePiece);
  EXPECT_EQ(vocab->token_bytes(1), "\n");
  EXPECT_EQ(vocab->kind(1), TokenKind::kByte);
  EXPECT_EQ(vocab->token_bytes(2), " a");
  EXPECT_EQ(vocab->kind(5), TokenKind::kUnused);  // a gap
  EXPECT_EQ(vocab->stop_tokens(), std::vector<uint32_t>{9});
  EXPECT_EQ(check_trie(*vocab), "");
}

// Non-special added tokens print through the decoder as Hugging Face
// decodes them: Gemma 3's runs of '\u2581' are spaces, so a grammar without
// spaces refuses them; byte-level text is decoded when every character is in
// the byte alphabet, and kept as written otherwise.
TEST(TokenizerJson, NonSpecialAddedTokensPrintThroughTheDecoder) {
  const std::string sentencepiece = R"({
    "added_tokens": [{"id": 0, "content": "<unk>", "special": true},
                     {"id": 3, "content": "\u2581\u2581", "special": false},
                     {"id": 4, "content": "\u2581\u2581\u2581", "special": false},
                     {"id": 5, "content": "<start_of_image>", "special": false},
                     {"id": 6, "content": "\u2581\u2581", "special": true}],
    "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"}]},
    "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
              "vocab": {"<unk>": 0, "a": 1, "\u2581a": 2}}})";
  auto vocab = Vocabulary::from_tokenizer_json(sentencepiece);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->token_bytes(3), "  ");
  EXPECT_EQ(vocab->token_bytes(4), "   ");
  EXPECT_EQ(vocab->kind(3), TokenKind::kUserDefined);
  EXPECT_EQ(vocab->token_bytes(5), "<start_of_image>");
  EXPECT_EQ(vocab->token_bytes(6), "\xE2\x96\x81\xE2\x96\x81");  // special: its text, never read
  EXPECT_EQ(check_trie(*vocab), "");
  auto compiled = CompiledGrammar::from_gbnf("root ::= [^ ]*", *vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  Matcher m(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  EXPECT_TRUE(test_bit(words.data(), 1));
  EXPECT_FALSE(test_bit(words.data(), 2));  // " a"
  EXPECT_FALSE(test_bit(words.data(), 3));  // two spaces
  EXPECT_FALSE(test_bit(words.data(), 4));

  const std::string byte_level = R"({
    "added_tokens": [{"id": 2, "content": "\u0120hi", "special": false},
                     {"id": 3, "content": "<\uff5ctool\u2581sep\uff5c>", "special": false},
                     {"id": 4, "content": "\u0120\uff5c", "special": false}],
    "pre_tokenizer": {"type": "ByteLevel"},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"hi": 0, "\u0120there": 1}, "merges": []}})";
  vocab = Vocabulary::from_tokenizer_json(byte_level);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->token_bytes(2), " hi");
  EXPECT_EQ(vocab->token_bytes(3), "<\xEF\xBD\x9Ctool\xE2\x96\x81sep\xEF\xBD\x9C>");
  EXPECT_EQ(vocab->token_bytes(4), "\xC4\xA0\xEF\xBD\x9C");  // one character outside: as written
  EXPECT_EQ(check_trie(*vocab), "");
}

// Older files without model.type load by the model's shape, as Hugging
// Face reads them; a shape that is neither BPE nor Unigram is refused.
TEST(TokenizerJson, ModelWithoutTypeLoadsByItsShape) {
  auto bpe = Vocabulary::from_tokenizer_json(R"({
    "decoder": {"type": "ByteLevel"},
    "model": {"vocab": {"hi": 0, "\u0120there": 1}, "merges": ["h i"]}})");
  ASSERT_TRUE(bpe.ok()) << bpe.status().to_string();
  EXPECT_EQ(bpe->token_bytes(1), " there");
  auto unigram = Vocabulary::from_tokenizer_json(R"({
    "decoder": {"type": "Metaspace"},
    "model": {"unk_id": 0, "vocab": [["<unk>", 0.0], ["\u2581a", -1.5]]}})");
  ASSERT_TRUE(unigram.ok()) << unigram.status().to_string();
  EXPECT_EQ(unigram->token_bytes(1), " a");
  EXPECT_EQ(unigram->kind(0), TokenKind::kUnknown);
  auto word_piece = Vocabulary::from_tokenizer_json(R"({
    "model": {"vocab": {"hi": 0}, "continuing_subword_prefix": "##"}})");
  EXPECT_EQ(word_piece.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(word_piece.status().message().find("no type"), std::string::npos)
      << word_piece.status().message();
}

// Added tokens at sparse ids far past the vocab list load: ids are ids.
TEST(TokenizerJson, AddedTokensAtSparseIdsLoad) {
  auto vocab = Vocabulary::from_tokenizer_json(R"({
    "added_tokens": [{"id": 250000, "content": "<|far|>", "special": true},
                     {"id": 200000, "content": "<tool>", "special": false}],
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"hi": 0, "\u0120there": 1}, "merges": []}})");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->size(), 250001u);
  EXPECT_EQ(vocab->kind(250000), TokenKind::kControl);
  EXPECT_EQ(vocab->token_bytes(200000), "<tool>");
  EXPECT_EQ(vocab->kind(100000), TokenKind::kUnused);
  EXPECT_EQ(vocab->find_token("<tool>"), std::optional<uint32_t>(200000));
}

// gpt-oss ends a reply with <|return|> and a tool call with <|call|>, which
// its tokenizer does not mark as EOS: both stop by default; with_stop_tokens
// changes the set.
TEST(TokenizerJson, HarmonyEndTokensStop) {
  auto vocab = Vocabulary::from_tokenizer_json(R"({
    "added_tokens": [{"id": 2, "content": "<|return|>", "special": true},
                     {"id": 3, "content": "<|call|>", "special": true},
                     {"id": 4, "content": "<|channel|>", "special": true}],
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"hi": 0, "\u0120there": 1}, "merges": []}})");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->stop_tokens(), (std::vector<uint32_t>{2, 3}));
  auto only_return = vocab->with_stop_tokens({2});
  ASSERT_TRUE(only_return.ok());
  EXPECT_EQ(only_return->stop_tokens(), std::vector<uint32_t>{2});
}

TEST(TokenizerJson, Unigram) {
  const std::string json = R"({
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581"},
    "decoder": {"type": "Metaspace", "replacement": "\u2581"},
    "model": {"type": "Unigram", "unk_id": 0,
              "vocab": [["<unk>", 0.0], ["\u2581x", -1.0], ["y", -2.0]]}})";
  auto vocab = Vocabulary::from_tokenizer_json(json);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->size(), 3u);
  EXPECT_EQ(vocab->kind(0), TokenKind::kUnknown);
  EXPECT_EQ(vocab->token_bytes(1), " x");
}

// Vocab keys written every way JSON allows (short escapes, \u escapes,
// surrogate pairs, raw UTF-8) decode to what nlohmann::json reads from them.
TEST(TokenizerJson, KeysDecodeAsJsonDefinesThem) {
  std::mt19937 rng(20261125);
  const auto random_code_point = [&]() -> uint32_t {
    switch (rng() % 4) {
      case 0:
        return rng() % 0x80;  // ASCII, control bytes, '"' and '\' included
      case 1:
        return 0x80 + rng() % (0x800 - 0x80);
      case 2: {
        const uint32_t c = 0x800 + rng() % (0x10000 - 0x800);
        return utf8::is_surrogate(c) ? 0x2581 : c;
      }
      default:
        return 0x10000 + rng() % (0x110000 - 0x10000);
    }
  };
  nlohmann::json vocab_json = nlohmann::json::object();
  std::vector<std::string> keys;
  while (keys.size() < 3000) {
    std::u32string code_points(1 + rng() % 6, U'\0');
    for (char32_t& c : code_points) c = random_code_point();
    std::string key = utf8::encode(code_points);
    if (vocab_json.contains(key)) continue;
    vocab_json[key] = keys.size();
    keys.push_back(std::move(key));
  }
  nlohmann::json document = {{"decoder", {{"type", "Metaspace"}}},
                             {"model", {{"type", "BPE"}, {"vocab", vocab_json}}}};
  for (const bool ensure_ascii : {false, true}) {
    const std::string text = document.dump(ensure_ascii ? 2 : -1, ' ', ensure_ascii);
    auto vocab = Vocabulary::from_tokenizer_json(text);
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    ASSERT_EQ(vocab->size(), keys.size());
    for (size_t id = 0; id < keys.size(); ++id) {
      std::string expected;
      append_sentencepiece_bytes(keys[id], expected);
      ASSERT_EQ(vocab->token_bytes(static_cast<uint32_t>(id)), expected)
          << "id " << id << ", ensure_ascii " << ensure_ascii;
    }
  }
  // Escapes nlohmann does not write: '\/', lower-case hex.
  auto vocab = Vocabulary::from_tokenizer_json(
      R"({"decoder": {"type": "Metaspace"}, "model": {"type": "BPE", "vocab": )"
      R"({"\/\u00e9\u00C9\ud83d\ude00\b\f\r\t": 0}, "merges": [["a", "\/"]]}})");
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->token_bytes(0), "/\xC3\xA9\xC3\x89\xF0\x9F\x98\x80\b\f\r\t");
}

// Malformed text anywhere, in the parts that are only skipped (merges) too,
// is a syntax error that says where it is.
TEST(TokenizerJson, MalformedTextIsAnErrorWithItsPosition) {
  const auto status_of = [](const std::string& vocab, const std::string& merges) {
    return Vocabulary::from_tokenizer_json(
               "{\"decoder\": {\"type\": \"Metaspace\"},\n\"model\": {\"type\": \"BPE\",\n"
               "\"vocab\": {" +
               vocab + "},\n\"merges\": [" + merges + "]}}")
        .status();
  };
  ASSERT_TRUE(status_of(R"("a": 0)", R"("a b", ["a", "b"], 1e5, -0.5, true, null, {})").ok());
  const std::pair<std::string, std::string> bad_texts[] = {
      {R"("\uDC00": 0)", ""},             // a low surrogate alone
      {R"("\uD800x": 0)", ""},            // a high surrogate alone
      {R"("\uD800\u0041": 0)", ""},       // a high surrogate, then not a low one
      {R"("\x": 0)", ""},                 // no such escape
      {R"("\u12G4": 0)", ""},             // not hex
      {"\"a\x01\": 0", ""},               // a raw control byte
      {R"("a": 0,)", ""},                 // a trailing comma
      {R"("a" 0)", ""},                   // no colon
      {R"("a": 0)", R"("a b",)"},         // a trailing comma in merges
      {R"("a": 0)", R"("a b" "c d")"},    // no comma in merges
      {R"("a": 0)", R"(01)"},             // a leading zero
      {R"("a": 0)", R"(1.)"},             // no digits after the point
      {R"("a": 0)", R"(tru)"},            // a broken literal
      {R"("a": 0)", "\"\xC0\xAF\""},      // an overlong UTF-8 form
      {R"("a": 0)", "\"\xED\xA0\x80\""},  // an encoded surrogate
      {R"("a": 0)", R"({"a" 1})"},        // no colon in a skipped object
  };
  for (const auto& [vocab, merges] : bad_texts) {
    const Status status = status_of(vocab, merges);
    EXPECT_EQ(status.code(), ErrorCode::kSyntax) << vocab << " / " << merges;
    // Line 3 holds the vocab, line 4 the merges.
    const std::string line = merges.empty() ? "line 3, column " : "line 4, column ";
    EXPECT_NE(status.message().find(line), std::string::npos) << status.to_string();
  }
}

TEST(TokenizerJson, BadInputIsAnError) {
  const auto code_of = [](const std::string& json) {
    return Vocabulary::from_tokenizer_json(json).status().code();
  };
  EXPECT_EQ(code_of("{"), ErrorCode::kSyntax);
  EXPECT_EQ(code_of("[]"), ErrorCode::kSyntax);
  EXPECT_EQ(code_of(R"({"model": 3})"), ErrorCode::kSyntax);
  EXPECT_EQ(code_of(R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})"),
            ErrorCode::kUnsupported);
  // BPE without any hint of how tokens spell text.
  EXPECT_EQ(code_of(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})"), ErrorCode::kUnsupported);
  const std::string byte_level = R"("decoder": {"type": "ByteLevel"}, )";
  EXPECT_EQ(code_of("{" + byte_level + R"("model": {"type": "BPE", "vocab": {"a": 4000000000}}})"),
            ErrorCode::kSyntax);
  EXPECT_EQ(code_of("{" + byte_level + R"("model": {"type": "BPE", "vocab": {"a": -1}}})"),
            ErrorCode::kSyntax);
  EXPECT_EQ(code_of("{" + byte_level + R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}})"),
            ErrorCode::kSyntax);
  EXPECT_EQ(code_of("{" + byte_level + R"("model": {"type": "BPE", "vocab": {"a": "x"}}})"),
            ErrorCode::kSyntax);
  EXPECT_EQ(code_of("{" + byte_level +
                    R"("added_tokens": [{"id": 1}], "model": {"type": "BPE", "vocab": {}}})"),
            ErrorCode::kSyntax);
  EXPECT_EQ(Vocabulary::from_tokenizer_json_file(temp_path("missing.json")).status().code(),
            ErrorCode::kIo);
}

// --- the real vocabularies -------------------------------------------------------

struct GgufCase {
  const char* name;
  size_t size;
  std::vector<uint32_t> stops;
  TokenizerStyle style;
};

const std::vector<GgufCase>& gguf_cases() {
  static const std::vector<GgufCase> cases = {
      {"gpt2", 50257, {50256}, TokenizerStyle::kByteLevel},
      {"deepseek-llm", 102400, {100001}, TokenizerStyle::kByteLevel},
      {"phi3", 32064, {32000, 32007}, TokenizerStyle::kSentencePiece},
  };
  return cases;
}

TEST(SharedVocabularies, GgufFilesLoad) {
  REQUIRE_SHARED_DIR(shared);
  for (const GgufCase& c : gguf_cases()) {
    SCOPED_TRACE(c.name);
    auto vocab = Vocabulary::from_gguf_file(shared + "/bench/vocab/" + c.name + ".gguf");
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    EXPECT_EQ(vocab->size(), c.size);
    EXPECT_EQ(vocab->stop_tokens(), c.stops);
    EXPECT_EQ(vocab->style(), c.style);
    EXPECT_EQ(check_trie(*vocab), "");
  }
}

TEST(SharedVocabularies, TraceTokensSpellTheCaseText) {
  REQUIRE_SHARED_DIR(shared);
  const std::vector<std::string> cases = {"arithmetic",    "c-code",        "chess",
                                          "free-text",     "json-generic",  "list-lines",
                                          "schema-events", "schema-person", "schema-tree"};
  int checked = 0;
  for (const GgufCase& c : gguf_cases()) {
    auto vocab = Vocabulary::from_gguf_file(shared + "/bench/vocab/" + c.name + ".gguf");
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    for (const std::string& name : cases) {
      SCOPED_TRACE(std::string(c.name) + "/" + name);
      const std::vector<uint32_t> ids =
          read_ids(shared + "/bench/traces/" + c.name + "/" + name + ".ids");
      const std::string text = read_file(shared + "/bench/cases/" + name + "/text.txt");
      ASSERT_FALSE(ids.empty());
      ASSERT_FALSE(text.empty());
      std::string spelled;
      for (uint32_t id : ids) {
        ASSERT_LT(id, vocab->size());
        EXPECT_FALSE(vocab->is_special(id)) << "trace token " << id;
        spelled += vocab->token_bytes(id);
      }
      EXPECT_EQ(spelled, text);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 27);
}

TEST(SharedVocabularies, Phi3StopOverride) {
  REQUIRE_SHARED_DIR(shared);
  auto vocab = Vocabulary::from_gguf_file(shared + "/bench/vocab/phi3.gguf");
  ASSERT_TRUE(vocab.ok());
  EXPECT_EQ(vocab->find_token("<|end|>"), std::optional<uint32_t>(32007));
  auto only_end = vocab->with_stop_tokens({32007});
  ASSERT_TRUE(only_end.ok());
  EXPECT_EQ(only_end->stop_tokens(), std::vector<uint32_t>{32007});
  EXPECT_EQ(&internal::VocabularyAccess::trie(*only_end),
            &internal::VocabularyAccess::trie(*vocab));  // control tokens: trie unchanged
}

// The loader against a plain DOM parse of the same file: every vocab entry
// and added token of both shared tokenizer.json files.
TEST(SharedVocabularies, TokenizerJsonMatchesADomParse) {
  REQUIRE_SHARED_DIR(shared);
  for (const std::string name : {"llama-3", "phi-3-mini"}) {
    const std::string text = read_file(shared + "/tokenizers/" + name + "/tokenizer.json");
    const nlohmann::json document = nlohmann::json::parse(text);
    auto vocab = Vocabulary::from_tokenizer_json(text);
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    const nlohmann::json& model = document["model"];
    const bool byte_fallback = model.value("byte_fallback", false);
    std::set<uint32_t> added_ids;
    for (const nlohmann::json& token : document["added_tokens"]) {
      const uint32_t id = token["id"].get<uint32_t>();
      added_ids.insert(id);
      EXPECT_EQ(vocab->token_bytes(id), token["content"].get<std::string>()) << name << " " << id;
      EXPECT_EQ(vocab->is_special(id), token["special"].get<bool>()) << name << " " << id;
    }
    size_t checked = 0;
    for (const auto& entry : model["vocab"].items()) {
      const uint32_t id = entry.value().get<uint32_t>();
      if (added_ids.count(id)) continue;
      std::string expected;
      if (const auto byte = parse_byte_piece(entry.key()); byte_fallback && byte) {
        expected.assign(1, static_cast<char>(*byte));
      } else if (vocab->style() == TokenizerStyle::kByteLevel) {
        append_byte_level_bytes(entry.key(), expected);
      } else {
        append_sentencepiece_bytes(entry.key(), expected);
      }
      ASSERT_EQ(vocab->token_bytes(id), expected) << name << " " << id;
      ++checked;
    }
    EXPECT_GT(checked, 30000u) << name;
  }
}

TEST(SharedVocabularies, TokenizerJsonFilesLoad) {
  REQUIRE_SHARED_DIR(shared);
  {
    auto vocab =
        Vocabulary::from_tokenizer_json_file(shared + "/tokenizers/llama-3/tokenizer.json");
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    EXPECT_EQ(vocab->size(), 128256u);
    EXPECT_EQ(vocab->style(), TokenizerStyle::kByteLevel);
    EXPECT_EQ(vocab->stop_tokens(), (std::vector<uint32_t>{128001, 128009}));
    EXPECT_EQ(vocab->token_bytes(128009), "<|eot_id|>");
    EXPECT_EQ(vocab->bos_token(), std::optional<uint32_t>(128000));
    EXPECT_TRUE(vocab->is_special(128000));
    EXPECT_TRUE(vocab->find_token(" the").has_value());
    EXPECT_EQ(internal::VocabularyAccess::trie(*vocab).token_ids().size(), 128000u);
    EXPECT_EQ(check_trie(*vocab), "");
  }
  {
    auto vocab =
        Vocabulary::from_tokenizer_json_file(shared + "/tokenizers/phi-3-mini/tokenizer.json");
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    EXPECT_EQ(vocab->size(), 32011u);
    EXPECT_EQ(vocab->style(), TokenizerStyle::kSentencePiece);
    EXPECT_EQ(vocab->stop_tokens(), (std::vector<uint32_t>{32000, 32007}));
    EXPECT_EQ(vocab->find_token("\n"), std::optional<uint32_t>(13));  // <0x0A>
    EXPECT_EQ(vocab->kind(13), TokenKind::kByte);
    EXPECT_EQ(vocab->kind(2), TokenKind::kUserDefined);  // </s> is not special there
    EXPECT_EQ(check_trie(*vocab), "");

    // The same tokenizer as the phi3 GGUF: the same bytes for every shared id.
    auto gguf = Vocabulary::from_gguf_file(shared + "/bench/vocab/phi3.gguf");
    ASSERT_TRUE(gguf.ok());
    int differences = 0;
    for (uint32_t id = 0; id < vocab->size(); ++id) {
      if (vocab->token_bytes(id) != gguf->token_bytes(id)) ++differences;
    }
    EXPECT_EQ(differences, 0);
  }
}

}  // namespace
}  // namespace grammask
