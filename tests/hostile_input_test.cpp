// Hostile input: every bad input gets a clear error (code, message, position
// where there is one) and leaves the objects involved as they were. This file
// covers what the component tests do not: malformed UTF-8 in matched input
// and in vocabularies, the corners of the GGUF and tokenizer.json loaders,
// out-of-range ids, calls in the wrong state, undersized mask buffers,
// schemas that are not schemas, and noexcept functions given extreme
// arguments. (gbnf_test, vocabulary_test, matcher_test and json_schema_test
// have the basic cases.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "grammask/json_schema.h"
#include "grammask/matcher.h"
#include "grammask/recognizer.h"
#include "grammask/vocabulary.h"

namespace grammask {
namespace {

// --- helpers --------------------------------------------------------------------

::testing::AssertionResult FailsWith(const Status& status, ErrorCode code,
                                     std::string_view fragment) {
  if (status.ok()) return ::testing::AssertionFailure() << "succeeded";
  if (status.code() != code) {
    return ::testing::AssertionFailure() << "code " << to_string(status.code()) << ", wanted "
                                         << to_string(code) << ": " << status.to_string();
  }
  if (status.message().find(fragment) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message lacks '" << fragment << "': " << status.to_string();
  }
  return ::testing::AssertionSuccess();
}

// Everything observable about a Matcher, to show a refused call changed nothing.
struct MatcherView {
  size_t tokens = 0;
  bool accepting = false;
  bool terminated = false;
  std::string forced;
  std::vector<uint32_t> mask;
  friend bool operator==(const MatcherView& a, const MatcherView& b) {
    return a.tokens == b.tokens && a.accepting == b.accepting && a.terminated == b.terminated &&
           a.forced == b.forced && a.mask == b.mask;
  }
};

MatcherView view_of(Matcher& m, const CompiledGrammar& compiled) {
  MatcherView view;
  view.tokens = m.num_tokens();
  view.accepting = m.is_accepting();
  view.terminated = m.is_terminated();
  view.forced = m.forced_bytes();
  view.mask.assign(compiled.mask_words(), 0);
  EXPECT_TRUE(m.fill_mask(view.mask.data(), view.mask.size()).ok());
  return view;
}

// Token 7 is the stop token, 6 is a control token; 8-13 spell malformed
// UTF-8; 14 and 15 are the two halves of '日' (E6 97 A5).
Vocabulary hostile_vocab() {
  std::vector<std::string> tokens = {"a",
                                     "b",
                                     "ab",
                                     "é",
                                     " ",
                                     "\n",
                                     "<|ctl|>",
                                     "<|end|>",
                                     "\xFF",
                                     "\xC0\xAF",
                                     "\x80",
                                     "\xED\xA0\x80",
                                     "\xF4\x90\x80\x80",
                                     "a\xFE",
                                     "\xE6",
                                     "\x97\xA5"};
  auto vocab = Vocabulary::from_token_bytes(tokens, {7}, {6});
  EXPECT_TRUE(vocab.ok()) << vocab.status().to_string();
  return *vocab;
}

CompiledGrammar compile(std::string_view gbnf, const Vocabulary& vocab) {
  auto compiled = CompiledGrammar::from_gbnf(gbnf, vocab);
  EXPECT_TRUE(compiled.ok()) << compiled.status().to_string();
  return *compiled;
}

// ctest runs every test in a process of its own, in parallel: the file name
// carries the test's name so that two tests never share a scratch file.
std::string temp_path(const std::string& name) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string owner = test ? std::string(test->test_suite_name()) + "." + test->name() : "none";
  // A token per process keeps concurrent runs of other checkouts apart too.
  static const std::string process = std::to_string(std::random_device{}());
  return ::testing::TempDir() + "/grammask_hostile_input_test_" + process + "_" + owner + "_" +
         name;
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// The UTF-8 oracle for matched input, written from the table of
// well-formed byte sequences (Unicode 15, table 3-7) independently of the
// library: is `bytes` well-formed UTF-8 followed by at most the beginning of
// one more well-formed character?
bool is_utf8_prefix(std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const uint8_t lead = static_cast<uint8_t>(bytes[pos]);
    size_t length = 0;
    uint8_t second_low = 0x80, second_high = 0xBF;
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) second_low = 0xA0;   // no overlongs
      if (lead == 0xED) second_high = 0x9F;  // no surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) second_low = 0x90;   // no overlongs
      if (lead == 0xF4) second_high = 0x8F;  // nothing past U+10FFFF
    } else {
      return false;
    }
    for (size_t i = 1; i < length; ++i) {
      if (pos + i == bytes.size()) return true;  // a proper prefix of a character
      const uint8_t byte = static_cast<uint8_t>(bytes[pos + i]);
      const uint8_t low = i == 1 ? second_low : 0x80;
      const uint8_t high = i == 1 ? second_high : 0xBF;
      if (byte < low || byte > high) return false;
    }
    pos += length;
  }
  return true;
}

// --- malformed UTF-8 in grammars -------------------------------------------------------

TEST(HostileGrammar, MalformedUtf8ThroughEveryEntryPoint) {
  // The parser's own cases are in gbnf_test; here the error must come through
  // the layers above it with its position, and leave nothing behind.
  const Vocabulary vocab = hostile_vocab();
  const std::string bad = "root ::= \"ok\"\nx ::= \"\xE6\x97\" \"a\"\n";
  auto compiled = CompiledGrammar::from_gbnf(bad, vocab);
  ASSERT_TRUE(FailsWith(compiled.status(), ErrorCode::kSyntax, "invalid UTF-8: byte 0xE6"));
  EXPECT_EQ(compiled.status().where().line, 2u);
  EXPECT_EQ(compiled.status().where().column, 8u);
  EXPECT_EQ(compiled.status().to_string().rfind("2:8: error: invalid UTF-8", 0), 0u);
  // A lone continuation byte, a 5-byte lead, CESU-8 surrogate pairs, and NUL
  // bytes written raw inside a literal (NUL is a valid character).
  for (const std::string& text :
       {std::string("root ::= \"\x80\""), std::string("root ::= \"\xF8\x88\x80\x80\x80\""),
        std::string("root ::= \"\xED\xA0\xBD\xED\xB8\x80\""), std::string("root ::= [\xC1\xBF]")}) {
    auto result = parse_gbnf(text);
    EXPECT_TRUE(FailsWith(result.status(), ErrorCode::kSyntax, "invalid UTF-8")) << text;
    EXPECT_EQ(result.status().where().offset, 10u) << text;
  }
  auto with_nul = parse_gbnf(std::string("root ::= \"a\0b\"", 14));
  ASSERT_TRUE(with_nul.ok()) << with_nul.status().to_string();
  EXPECT_EQ(with_nul->rules()[0].body, Expr::literal_text(std::u32string(U"a\0b", 3)));
  // The JSON Schema path: a pattern with a malformed byte is not JSON.
  EXPECT_EQ(json_schema_to_grammar("{\"pattern\": \"\xC3(\"}").status().code(), ErrorCode::kSyntax);
}

// --- malformed UTF-8 in matched input --------------------------------------------------

TEST(HostileInput, RecognizerAcceptsExactlyWellFormedUtf8) {
  // `.` and negated classes match any character; no byte sequence that is
  // not (a prefix of) well-formed UTF-8 may get through, whatever its shape.
  for (const char* gbnf : {"root ::= .*", "root ::= [^a]*", "root ::= [\\x00-\\U0010FFFF]*"}) {
    SCOPED_TRACE(gbnf);
    auto grammar = parse_gbnf(gbnf);
    ASSERT_TRUE(grammar.ok());
    auto made = Recognizer::create(*grammar);
    ASSERT_TRUE(made.ok());
    Recognizer& r = *made;
    // Every two-byte sequence.
    for (int first = 0; first < 256; ++first) {
      for (int second = 0; second < 256; ++second) {
        if (first == 'a' || second == 'a') continue;
        const char bytes[2] = {static_cast<char>(first), static_cast<char>(second)};
        const std::string_view input(bytes, 2);
        r.reset();
        const size_t pushed = r.push_bytes(input);
        const size_t expected = is_utf8_prefix(input) ? 2 : is_utf8_prefix(input.substr(0, 1));
        ASSERT_EQ(pushed, expected) << std::hex << first << " " << second;
        ASSERT_EQ(r.size(), pushed);
      }
    }
    // Three- and four-byte sequences around every boundary of the encoding.
    const uint8_t leads[] = {0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5};
    const uint8_t tails[] = {0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF};
    for (uint8_t lead : leads) {
      for (uint8_t second : tails) {
        for (uint8_t third : tails) {
          for (uint8_t fourth : {uint8_t{0x80}, uint8_t{0xBF}, uint8_t{0xC0}}) {
            const char bytes[4] = {static_cast<char>(lead), static_cast<char>(second),
                                   static_cast<char>(third), static_cast<char>(fourth)};
            const std::string_view input(bytes, 4);
            size_t expected = 0;
            while (expected < 4 && is_utf8_prefix(input.substr(0, expected + 1))) ++expected;
            r.reset();
            ASSERT_EQ(r.push_bytes(input), expected)
                << std::hex << +lead << " " << +second << " " << +third << " " << +fourth;
          }
        }
      }
    }
  }
}

TEST(HostileInput, RefusedBytesLeaveTheRecognizerIntact) {
  auto grammar = parse_gbnf("root ::= \"é\"+ \"!\"");
  ASSERT_TRUE(grammar.ok());
  auto made = Recognizer::create(*grammar);
  ASSERT_TRUE(made.ok());
  Recognizer& r = *made;
  ASSERT_EQ(r.push_bytes("éé\xC3"), 5u);
  for (int byte = 0; byte < 256; ++byte) {
    if (byte == 0xA9) continue;
    EXPECT_FALSE(r.push_byte(static_cast<uint8_t>(byte))) << byte;
    EXPECT_FALSE(r.work_limit_hit());
    EXPECT_EQ(r.size(), 5u);
  }
  EXPECT_TRUE(r.allows_byte(0xA9));
  EXPECT_EQ(r.push_bytes("\xA9!"), 2u);
  EXPECT_TRUE(r.is_accepting());
  // Truncating past the end is a no-op; far past it too.
  r.truncate(SIZE_MAX);
  EXPECT_EQ(r.size(), 7u);
  EXPECT_TRUE(r.is_accepting());
}

TEST(HostileInput, MatcherRefusesMalformedBytesAndTokens) {
  const Vocabulary vocab = hostile_vocab();
  const CompiledGrammar compiled = compile("root ::= .* \"\\n\"", vocab);
  Matcher m(compiled);
  ASSERT_TRUE(m.accept_token(0).ok());
  const MatcherView before = view_of(m, compiled);
  // Tokens 8-13 spell malformed UTF-8: never in a mask, always refused.
  for (uint32_t token = 8; token <= 13; ++token) {
    EXPECT_FALSE(test_bit(before.mask.data(), token)) << token;
    EXPECT_FALSE(m.is_token_allowed(token)) << token;
    EXPECT_TRUE(FailsWith(m.accept_token(token), ErrorCode::kInvalidArgument, "not allowed"))
        << token;
  }
  for (const std::string& bytes :
       {std::string("\xFF"), std::string("x\xC0\xAF"), std::string("\xED\xA0\x80"),
        std::string("ok\xE6\x97"
                    "a"),
        std::string("\xF4\x90\x80\x80"), std::string("\x80")}) {
    EXPECT_TRUE(FailsWith(m.accept_bytes(bytes), ErrorCode::kInvalidArgument, "not allowed"));
  }
  EXPECT_EQ(view_of(m, compiled), before);
  // A token ending inside a character is fine; only the right continuation follows.
  ASSERT_TRUE(test_bit(before.mask.data(), 14));
  ASSERT_TRUE(m.accept_token(14).ok());
  const MatcherView inside = view_of(m, compiled);
  EXPECT_TRUE(test_bit(inside.mask.data(), 15));  // 97 A5 completes 日
  EXPECT_TRUE(test_bit(inside.mask.data(), 10));  // 80 completes U+6000
  EXPECT_FALSE(test_bit(inside.mask.data(), 0));  // 'a' would break the character
  EXPECT_FALSE(test_bit(inside.mask.data(), 7));  // the stop token: incomplete
  EXPECT_FALSE(m.accept_bytes("\x97"
                              "a")
                   .ok());  // all or nothing
  EXPECT_EQ(view_of(m, compiled), inside);
  ASSERT_TRUE(m.accept_token(15).ok());
  ASSERT_TRUE(m.rollback(2).ok());
  EXPECT_EQ(view_of(m, compiled), before);
}

// --- GGUF files --------------------------------------------------------------------------

// A little-endian GGUF writer for the cases below.
class Gguf {
 public:
  explicit Gguf(uint64_t entries, uint32_t version = 3) {
    bytes_ = "GGUF";
    u32(version);
    u64(0);  // tensors
    u64(entries);
  }
  Gguf& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_ += static_cast<char>(v >> (8 * i));
    return *this;
  }
  Gguf& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes_ += static_cast<char>(v >> (8 * i));
    return *this;
  }
  Gguf& str(const std::string& s) {
    u64(s.size());
    bytes_ += s;
    return *this;
  }
  Gguf& key(const std::string& name, uint32_t type) { return str(name).u32(type); }
  Gguf& tokens(const std::vector<std::string>& values) {
    key("tokenizer.ggml.tokens", 9).u32(8).u64(values.size());
    for (const std::string& value : values) str(value);
    return *this;
  }
  Gguf& model(const std::string& name) { return key("tokenizer.ggml.model", 8).str(name); }
  Gguf& raw(const std::string& bytes) {
    bytes_ += bytes;
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

Result<Vocabulary> load_gguf(const std::string& bytes) {
  const std::string path = write_temp("scratch.gguf", bytes);
  Result<Vocabulary> vocab = Vocabulary::from_gguf_file(path);
  std::remove(path.c_str());
  return vocab;
}

TEST(HostileGguf, NotAFile) {
  // A directory, an empty device, and an empty file: kIo or kSyntax, never a crash.
  const std::string empty_file = write_temp("empty.gguf", "");
  for (const std::string& path : {::testing::TempDir(), std::string("/dev/null"), empty_file}) {
    const Status status = Vocabulary::from_gguf_file(path).status();
    EXPECT_TRUE(status.code() == ErrorCode::kIo || status.code() == ErrorCode::kSyntax)
        << path << ": " << status.to_string();
    EXPECT_NE(status.message().find(path), std::string::npos) << status.to_string();
  }
  std::remove(empty_file.c_str());
}

TEST(HostileGguf, KeysThatLieAboutTheirLength) {
  // A key longer than the file, and one longer than the spec allows.
  Gguf huge_key(1);
  huge_key.u64(uint64_t{1} << 62).raw("tokenizer");
  EXPECT_TRUE(FailsWith(load_gguf(huge_key.bytes()).status(), ErrorCode::kSyntax, "truncated"));
  Gguf long_key(3);
  long_key.key(std::string(70000, 'k'), 4).u32(1).model("llama").tokens({"a"});
  EXPECT_TRUE(
      FailsWith(load_gguf(long_key.bytes()).status(), ErrorCode::kLimitExceeded, "at most 65535"));
  // Keys are bytes; malformed UTF-8 in a key that is skipped does no harm.
  Gguf odd_key(3);
  odd_key.key("general.\xFF\xC0", 4).u32(1).model("llama").tokens({"a", "b"});
  auto vocab = load_gguf(odd_key.bytes());
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->size(), 2u);
}

TEST(HostileGguf, WrongValueTypesForTokenizerKeys) {
  const auto load_with = [](const std::function<void(Gguf&)>& extra) {
    Gguf w(3);
    w.model("llama").tokens({"a", "b", "</s>"});
    extra(w);
    return load_gguf(w.bytes()).status();
  };
  ASSERT_TRUE(load_with([](Gguf& w) { w.key("general.x", 4).u32(0); }).ok());
  // model as a number; tokens' element type as integers was covered elsewhere.
  EXPECT_FALSE(load_with([](Gguf& w) { w.key("tokenizer.ggml.model", 4).u32(1); }).ok());
  // eos as a float, as a negative int32, as an id far out of range, as an array.
  EXPECT_TRUE(
      FailsWith(load_with([](Gguf& w) { w.key("tokenizer.ggml.eos_token_id", 6).u32(0x3F800000); }),
                ErrorCode::kSyntax, "tokenizer.ggml.eos_token_id"));
  EXPECT_TRUE(
      FailsWith(load_with([](Gguf& w) { w.key("tokenizer.ggml.eos_token_id", 5).u32(0xFFFFFFFF); }),
                ErrorCode::kSyntax, "not a valid token id"));
  EXPECT_FALSE(load_with([](Gguf& w) {
                 w.key("tokenizer.ggml.eos_token_id", 10).u64(uint64_t{1} << 63);
               }).ok());
  EXPECT_FALSE(load_with([](Gguf& w) {
                 w.key("tokenizer.ggml.bos_token_id", 9).u32(4).u64(1).u32(0);
               }).ok());
  // token_type as an array of strings was covered; as a plain integer here.
  EXPECT_FALSE(load_with([](Gguf& w) { w.key("tokenizer.ggml.token_type", 5).u32(1); }).ok());
  // A bool that is neither 0 nor 1 in a skipped key is skipped like any byte.
  EXPECT_TRUE(load_with([](Gguf& w) { w.key("general.flag", 7).raw("\x07"); }).ok());
}

TEST(HostileGguf, CountsAndLengthsPastTheEnd) {
  // The token array claims more strings than follow.
  Gguf short_array(2);
  short_array.model("llama").key("tokenizer.ggml.tokens", 9).u32(8).u64(3).str("a").str("b");
  EXPECT_TRUE(FailsWith(load_gguf(short_array.bytes()).status(), ErrorCode::kSyntax, ""));
  // A string whose length runs one byte past the end of the file.
  Gguf past_end(2);
  past_end.model("llama").key("tokenizer.ggml.tokens", 9).u32(8).u64(1).u64(4).raw("abc");
  EXPECT_TRUE(FailsWith(load_gguf(past_end.bytes()).status(), ErrorCode::kSyntax, "truncated"));
  // A metadata count one higher than the entries present.
  Gguf extra_entry(3);
  extra_entry.model("llama").tokens({"a"});
  EXPECT_FALSE(load_gguf(extra_entry.bytes()).ok());
  // Huge counts in nested arrays of a skipped key.
  Gguf nested(3);
  nested.key("general.nested", 9).u32(9).u64(1).u32(8).u64(uint64_t{1} << 60);
  nested.model("llama").tokens({"a"});
  EXPECT_FALSE(load_gguf(nested.bytes()).ok());
  // Fewer entries than present: the rest is not read (it would be tensor info).
  Gguf fewer(2);
  fewer.model("llama").tokens({"a"}).raw(std::string(64, '\xFF'));
  EXPECT_TRUE(load_gguf(fewer.bytes()).ok());
}

TEST(HostileGguf, EmptyAndMalformedTokens) {
  // No tokens at all: an error or an empty vocabulary, never a crash; an
  // empty vocabulary compiles and masks (nothing is allowed).
  Gguf none(2);
  none.model("gpt2").tokens({});
  auto empty = load_gguf(none.bytes());
  if (empty.ok()) {
    EXPECT_EQ(empty->size(), 0u);
  } else {
    EXPECT_FALSE(empty.status().message().empty());
  }
  // Token strings with malformed UTF-8, in both spellings: they load as the
  // bytes they spell, and a grammar never lets the malformed ones through.
  for (const char* model : {"gpt2", "llama"}) {
    SCOPED_TRACE(model);
    Gguf w(2);
    w.model(model).tokens({"ok", "\xFF", "\xC3", "\xE2\x96", "\xF0\x9F\x98", "\xC0\x80", "x"});
    auto vocab = load_gguf(w.bytes());
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    ASSERT_EQ(vocab->size(), 7u);
    auto compiled = CompiledGrammar::from_gbnf("root ::= .*", *vocab);
    ASSERT_TRUE(compiled.ok());
    Matcher m(*compiled);
    std::vector<uint32_t> mask(compiled->mask_words());
    ASSERT_TRUE(m.fill_mask(mask.data(), mask.size()).ok());
    for (uint32_t id = 0; id < vocab->size(); ++id) {
      const std::string_view bytes = vocab->token_bytes(id);
      EXPECT_EQ(test_bit(mask.data(), id), !bytes.empty() && is_utf8_prefix(bytes))
          << "token " << id;
    }
  }
}

// --- tokenizer.json ------------------------------------------------------------------------

const char* const kSmallTokenizerJson = R"({
  "added_tokens": [{"id": 3, "content": "<|endoftext|>", "special": true}],
  "pre_tokenizer": {"type": "ByteLevel"},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})";

TEST(HostileTokenizerJson, EveryTruncationIsAnError) {
  const std::string full = kSmallTokenizerJson;
  ASSERT_TRUE(Vocabulary::from_tokenizer_json(full).ok());
  for (size_t length = 0; length < full.size(); ++length) {
    const Status status = Vocabulary::from_tokenizer_json(full.substr(0, length)).status();
    ASSERT_EQ(status.code(), ErrorCode::kSyntax) << length << ": " << status.to_string();
    ASSERT_NE(status.message().find("tokenizer.json"), std::string::npos);
  }
}

TEST(HostileTokenizerJson, MalformedText) {
  const auto status_of = [](const std::string& json) {
    return Vocabulary::from_tokenizer_json(json).status();
  };
  // Malformed UTF-8 inside a string: the parser's message has the position.
  EXPECT_TRUE(FailsWith(status_of(R"({"model": {"type": "BPE", "vocab": {")"
                                  "\xC3\x28"
                                  R"(": 0}}, "decoder": {"type": "ByteLevel"}})"),
                        ErrorCode::kSyntax, "ill-formed UTF-8"));
  // Nesting far deeper than any stack: an error, not a crash.
  EXPECT_EQ(status_of(std::string(200000, '[')).code(), ErrorCode::kSyntax);
  EXPECT_EQ(status_of(std::string(200000, '[') + std::string(200000, ']')).code(),
            ErrorCode::kSyntax);
  std::string deep_model = R"({"decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", )"
                           R"("vocab": {"a": 0}, "x": )";
  deep_model += std::string(100000, '[') + std::string(100000, ']') + "}}";
  EXPECT_TRUE(Vocabulary::from_tokenizer_json(deep_model).ok());
  // Trailing garbage, NUL bytes, an empty text.
  EXPECT_EQ(status_of(std::string(kSmallTokenizerJson) + " {}").code(), ErrorCode::kSyntax);
  EXPECT_EQ(status_of(std::string("{\0}", 3)).code(), ErrorCode::kSyntax);
  EXPECT_EQ(status_of("").code(), ErrorCode::kSyntax);
  // A directory instead of a file.
  const Status dir = Vocabulary::from_tokenizer_json_file(::testing::TempDir()).status();
  EXPECT_TRUE(dir.code() == ErrorCode::kIo || dir.code() == ErrorCode::kSyntax) << dir.to_string();
}

TEST(HostileTokenizerJson, WrongShapes) {
  const std::string byte_level = R"("decoder": {"type": "ByteLevel"}, )";
  const auto code_of = [&](const std::string& rest) {
    return Vocabulary::from_tokenizer_json("{" + byte_level + rest + "}").status().code();
  };
  // Added tokens: not a list, an id far beyond the vocabulary, a fractional
  // id, content that is not a string.
  EXPECT_EQ(code_of(R"("added_tokens": {}, "model": {"type": "BPE", "vocab": {"a": 0}})"),
            ErrorCode::kSyntax);
  EXPECT_EQ(code_of(R"("added_tokens": [{"id": 4000000000, "content": "x"}], )"
                    R"("model": {"type": "BPE", "vocab": {"a": 0}})"),
            ErrorCode::kSyntax);
  EXPECT_EQ(code_of(R"("added_tokens": [{"id": 1.5, "content": "x"}], )"
                    R"("model": {"type": "BPE", "vocab": {"a": 0}})"),
            ErrorCode::kSyntax);
  EXPECT_EQ(code_of(R"("added_tokens": [{"id": 1, "content": 7}], )"
                    R"("model": {"type": "BPE", "vocab": {"a": 0}})"),
            ErrorCode::kSyntax);
  // A BPE vocab that is a list, a Unigram vocab that is an object or holds
  // malformed entries, a model type that is not a string.
  EXPECT_EQ(code_of(R"("model": {"type": "BPE", "vocab": [["a", 0]]})"), ErrorCode::kSyntax);
  EXPECT_EQ(code_of(R"("model": {"type": "Unigram", "vocab": {"a": 0}})"), ErrorCode::kSyntax);
  EXPECT_EQ(code_of(R"("model": {"type": "Unigram", "vocab": [["a", 0], []]})"),
            ErrorCode::kSyntax);
  EXPECT_EQ(code_of(R"("model": {"type": "Unigram", "vocab": [[1, 0]]})"), ErrorCode::kSyntax);
  EXPECT_EQ(code_of(R"("model": {"type": "Unigram", "vocab": ["a"]})"), ErrorCode::kSyntax);
  EXPECT_EQ(code_of(R"("model": {"type": 5, "vocab": {"a": 0}})"), ErrorCode::kUnsupported);
  // Ids that leave a large gap but within the bound: unused ids, allowed.
  auto gappy = Vocabulary::from_tokenizer_json(
      "{" + byte_level + R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1000}}})");
  ASSERT_TRUE(gappy.ok()) << gappy.status().to_string();
  EXPECT_EQ(gappy->size(), 1001u);
  EXPECT_EQ(gappy->kind(500), TokenKind::kUnused);
  // An unk_id out of range is ignored, not trusted.
  auto unigram = Vocabulary::from_tokenizer_json(
      R"({"model": {"type": "Unigram", "unk_id": 99, "vocab": [["a", 0], ["b", -1]]}})");
  ASSERT_TRUE(unigram.ok()) << unigram.status().to_string();
  EXPECT_EQ(unigram->size(), 2u);
}

// --- ids out of range, calls in the wrong state ------------------------------------------

TEST(HostileCalls, TokenIdsOutOfRange) {
  const Vocabulary vocab = hostile_vocab();
  const uint32_t size = static_cast<uint32_t>(vocab.size());
  for (uint32_t id : {size, size + 1, uint32_t{1} << 31, UINT32_MAX - 1, UINT32_MAX}) {
    EXPECT_EQ(vocab.token_bytes(id), "");
    EXPECT_EQ(vocab.kind(id), TokenKind::kUnused);
    EXPECT_TRUE(vocab.is_special(id));
    EXPECT_FALSE(vocab.is_stop(id));
    EXPECT_EQ(vocab.with_stop_tokens({7, id}).status().code(), ErrorCode::kInvalidArgument);
  }
  const CompiledGrammar compiled = compile("root ::= [a-b]+", vocab);
  Matcher m(compiled);
  ASSERT_TRUE(m.accept_token(0).ok());
  const MatcherView before = view_of(m, compiled);
  for (uint32_t id : {size, UINT32_MAX}) {
    EXPECT_FALSE(m.is_token_allowed(id));
    EXPECT_TRUE(FailsWith(m.accept_token(id), ErrorCode::kInvalidArgument, "out of range"));
    EXPECT_NE(m.accept_token(id).message().find(std::to_string(id)), std::string::npos);
  }
  EXPECT_EQ(view_of(m, compiled), before);
}

TEST(HostileCalls, AfterTermination) {
  const Vocabulary vocab = hostile_vocab();
  const CompiledGrammar compiled = compile("root ::= \"a\"+", vocab);
  Matcher m(compiled);
  ASSERT_TRUE(m.accept_token(0).ok());
  ASSERT_TRUE(m.accept_token(7).ok());
  ASSERT_TRUE(m.is_terminated());
  const MatcherView before = view_of(m, compiled);
  EXPECT_EQ(before.forced, "");
  EXPECT_TRUE(FailsWith(m.accept_bytes("a"), ErrorCode::kInvalidState, "terminated"));
  EXPECT_TRUE(FailsWith(m.accept_bytes(""), ErrorCode::kInvalidState, "terminated"));
  EXPECT_TRUE(FailsWith(m.accept_token(6), ErrorCode::kInvalidState, "terminated"));
  EXPECT_TRUE(FailsWith(m.accept_token(8), ErrorCode::kInvalidState, "terminated"));
  EXPECT_FALSE(m.is_token_allowed(0));
  EXPECT_EQ(view_of(m, compiled), before);
  // Stop tokens stay allowed and count as tokens; rolling them back revives it.
  ASSERT_TRUE(m.accept_token(7).ok());
  EXPECT_EQ(m.num_tokens(), 3u);
  ASSERT_TRUE(m.rollback(2).ok());
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.accept_token(0).ok());
}

TEST(HostileCalls, RollbackPastTheStart) {
  const Vocabulary vocab = hostile_vocab();
  const CompiledGrammar compiled = compile("root ::= [ab]+ \"\\n\"", vocab);
  Matcher fresh(compiled);
  const MatcherView empty = view_of(fresh, compiled);
  EXPECT_TRUE(FailsWith(fresh.rollback(1), ErrorCode::kInvalidArgument, "only 0 accepted"));
  EXPECT_TRUE(fresh.rollback(0).ok());
  EXPECT_EQ(view_of(fresh, compiled), empty);
  Matcher m(compiled);
  ASSERT_TRUE(m.accept_token(2).ok());
  ASSERT_TRUE(m.accept_bytes("ba").ok());
  const MatcherView before = view_of(m, compiled);
  for (size_t n : {size_t{3}, size_t{1} << 40, SIZE_MAX}) {
    EXPECT_TRUE(FailsWith(m.rollback(n), ErrorCode::kInvalidArgument, "only 2 accepted"));
    EXPECT_EQ(view_of(m, compiled), before);
  }
  ASSERT_TRUE(m.rollback(2).ok());
  EXPECT_EQ(view_of(m, compiled), empty);
  m.reset();
  EXPECT_EQ(view_of(m, compiled), empty);
}

TEST(HostileCalls, MaskBufferTooSmall) {
  const Vocabulary vocab = hostile_vocab();  // 16 tokens: one word
  const CompiledGrammar compiled = compile("root ::= \"a\" [ab]*", vocab);
  Matcher m(compiled);
  ASSERT_TRUE(m.accept_token(0).ok());
  const MatcherView before = view_of(m, compiled);
  uint32_t sentinel = 0xDEADBEEF;
  EXPECT_TRUE(FailsWith(m.fill_mask(&sentinel, 0), ErrorCode::kInvalidArgument, "too small"));
  EXPECT_EQ(sentinel, 0xDEADBEEF);  // nothing written
  EXPECT_TRUE(FailsWith(m.fill_mask(nullptr, 0), ErrorCode::kInvalidArgument, "too small"));
  EXPECT_TRUE(FailsWith(m.fill_mask(nullptr, 4), ErrorCode::kInvalidArgument, ""));
  EXPECT_EQ(view_of(m, compiled), before);

  // Batches: a row too narrow fails the call; a wide row is fine.
  Matcher second(compiled);
  Matcher* matchers[] = {&m, &second};
  std::vector<uint32_t> rows(8, 0xDEADBEEF);
  EXPECT_EQ(fill_masks(matchers, 2, rows.data(), 0, 2).code(), ErrorCode::kInvalidArgument);
  ThreadPool pool(2);
  EXPECT_EQ(fill_masks(matchers, 2, rows.data(), 0, pool).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(fill_masks(matchers, 0, nullptr, 0, pool).ok());
  EXPECT_TRUE(fill_masks(matchers, 0, nullptr, 0, 3).ok());
  ASSERT_TRUE(fill_masks(matchers, 2, rows.data(), 4, pool).ok());
  EXPECT_EQ(rows[0], before.mask[0]);
  EXPECT_EQ(rows[1], 0u);  // padding words are zeroed
  EXPECT_EQ(view_of(m, compiled), before);
  // An empty vocabulary needs no words at all.
  auto nothing = Vocabulary::from_token_bytes({}, {});
  ASSERT_TRUE(nothing.ok());
  const CompiledGrammar on_nothing = compile("root ::= \"a\"", *nothing);
  EXPECT_EQ(on_nothing.mask_words(), 0u);
  Matcher idle(on_nothing);
  uint32_t word = 0xDEADBEEF;
  EXPECT_TRUE(idle.fill_mask(&word, 1).ok());
  EXPECT_EQ(word, 0u);
  EXPECT_EQ(idle.accept_token(0).code(), ErrorCode::kInvalidArgument);
}

TEST(HostileCalls, EmptyVocabularyNeedsNoBuffer) {
  auto nothing = Vocabulary::from_token_bytes({}, {});
  ASSERT_TRUE(nothing.ok());
  const CompiledGrammar compiled = compile("root ::= \"a\"", *nothing);
  ASSERT_EQ(compiled.mask_words(), 0u);
  Matcher m(compiled);
  EXPECT_TRUE(m.fill_mask(nullptr, 0).ok());
  EXPECT_EQ(m.fill_mask(nullptr, 1).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(m.accept_bytes("a").ok());
  EXPECT_TRUE(m.fill_mask(nullptr, 0).ok());
  Matcher second(compiled);
  Matcher* matchers[] = {&m, &second};
  EXPECT_TRUE(fill_masks(matchers, 2, nullptr, 0, 2).ok());
  ThreadPool pool(2);
  EXPECT_TRUE(fill_masks(matchers, 2, nullptr, 0, pool).ok());
}

TEST(HostileCalls, MovedFromMatcher) {
  const Vocabulary vocab = hostile_vocab();
  const CompiledGrammar compiled = compile("root ::= \"a\" [ab]*", vocab);
  Matcher m(compiled);
  ASSERT_TRUE(m.accept_token(0).ok());
  Matcher taken = std::move(m);
  // Every call on the moved-from object fails or reports nothing.
  std::vector<uint32_t> mask(compiled.mask_words(), 0xDEADBEEF);
  EXPECT_TRUE(FailsWith(m.fill_mask(mask.data(), mask.size()), ErrorCode::kInvalidState,  // NOLINT
                        "moved from"));
  EXPECT_EQ(mask[0], 0xDEADBEEF);
  EXPECT_EQ(m.fill_mask(nullptr, 0).code(), ErrorCode::kInvalidState);     // NOLINT
  EXPECT_EQ(m.accept_token(1).code(), ErrorCode::kInvalidState);           // NOLINT
  EXPECT_EQ(m.accept_token(UINT32_MAX).code(), ErrorCode::kInvalidState);  // NOLINT
  EXPECT_EQ(m.accept_bytes("b").code(), ErrorCode::kInvalidState);         // NOLINT
  EXPECT_EQ(m.rollback(0).code(), ErrorCode::kInvalidState);               // NOLINT
  EXPECT_EQ(m.rollback(SIZE_MAX).code(), ErrorCode::kInvalidState);        // NOLINT
  EXPECT_FALSE(m.is_token_allowed(1));                                     // NOLINT
  EXPECT_FALSE(m.is_accepting());                                          // NOLINT
  EXPECT_FALSE(m.is_terminated());                                         // NOLINT
  EXPECT_EQ(m.num_tokens(), 0u);                                           // NOLINT
  EXPECT_EQ(m.forced_bytes(), "");                                         // NOLINT
  EXPECT_EQ(m.mask_cache_hits(), 0u);                                      // NOLINT
  EXPECT_EQ(m.mask_cache_misses(), 0u);                                    // NOLINT
  m.reset();                                                               // NOLINT
  // Copies of it are moved-from too; batches report the state error.
  Matcher copy(m);  // NOLINT
  EXPECT_EQ(copy.accept_token(1).code(), ErrorCode::kInvalidState);
  Matcher assigned(compiled);
  assigned = copy;
  EXPECT_EQ(assigned.num_tokens(), 0u);
  EXPECT_EQ(assigned.accept_token(0).code(), ErrorCode::kInvalidState);
  Matcher* matchers[] = {&taken, &m};
  std::vector<uint32_t> rows(2 * compiled.mask_words(), 0);
  EXPECT_EQ(fill_masks(matchers, 2, rows.data(), compiled.mask_words(), 2).code(),
            ErrorCode::kInvalidState);
  // The Matcher it moved into carries on; assigning makes the old one usable.
  EXPECT_EQ(taken.num_tokens(), 1u);
  EXPECT_TRUE(taken.accept_token(1).ok());
  m = taken;  // NOLINT
  EXPECT_EQ(m.num_tokens(), 2u);
  EXPECT_TRUE(m.fill_mask(mask.data(), mask.size()).ok());
  EXPECT_TRUE(m.is_accepting());
}

TEST(HostileCalls, FromGbnfTakesParseLimits) {
  const Vocabulary vocab = hostile_vocab();
  const std::string_view three_rules = "start ::= x y\nx ::= \"a\"\ny ::= \"b\"";
  CompileOptions options;
  options.root = "start";
  ASSERT_TRUE(CompiledGrammar::from_gbnf(three_rules, vocab, options).ok());
  options.gbnf.max_rules = 2;
  EXPECT_TRUE(FailsWith(CompiledGrammar::from_gbnf(three_rules, vocab, options).status(),
                        ErrorCode::kLimitExceeded, "GbnfOptions::max_rules"));
  options.gbnf = GbnfOptions();
  options.gbnf.max_grammar_bytes = 10;
  EXPECT_TRUE(FailsWith(CompiledGrammar::from_gbnf(three_rules, vocab, options).status(),
                        ErrorCode::kLimitExceeded, "GbnfOptions::max_grammar_bytes"));
  // The start rule comes from CompileOptions::root, not from options.gbnf.
  options.gbnf = GbnfOptions();
  options.gbnf.root = "x";
  EXPECT_TRUE(CompiledGrammar::from_gbnf(three_rules, vocab, options).ok());
  options.root = "nowhere";
  EXPECT_FALSE(CompiledGrammar::from_gbnf(three_rules, vocab, options).ok());
}

// --- schemas that are not schemas -------------------------------------------------------

TEST(HostileSchema, NotJsonOrNotASchema) {
  const auto status_of = [](std::string_view schema) {
    return json_schema_to_grammar(schema).status();
  };
  // Not JSON: the message says so, with the parser's line and column.
  for (std::string_view text :
       {std::string_view(""), std::string_view("{} {}"), std::string_view("{\"a\": }"),
        std::string_view("NaN"), std::string_view("{\"type\": \"object\"} x"),
        std::string_view("\xEF\xBB"), std::string_view("{\"const\": \"\xC3\x28\"}"),
        std::string_view("{\"a\":\0}", 7)}) {
    const Status status = status_of(text);
    EXPECT_TRUE(FailsWith(status, ErrorCode::kSyntax, "not valid JSON")) << text;
    EXPECT_NE(status.message().find("column"), std::string::npos) << status.to_string();
    EXPECT_EQ(json_schema_to_gbnf(text).status().code(), ErrorCode::kSyntax);
  }
  // JSON, but neither an object nor a boolean.
  for (std::string_view text : {"[]", "null", "\"object\"", "1.5", "-0", "[{}]"}) {
    EXPECT_TRUE(FailsWith(status_of(text), ErrorCode::kSyntax, "object or a boolean")) << text;
  }
  // Keywords of the wrong type name the keyword and where it is.
  EXPECT_TRUE(FailsWith(status_of(R"({"properties": {"a": {"items": 5}}})"), ErrorCode::kSyntax,
                        "/properties/a/items must be an object or a boolean"));
  EXPECT_TRUE(FailsWith(status_of(R"({"required": [1]})"), ErrorCode::kSyntax, "\"required\""));
  EXPECT_TRUE(FailsWith(status_of(R"({"maxLength": 1.5})"), ErrorCode::kSyntax, "\"maxLength\""));
  // Nesting far past the bound, whether or not the text is complete JSON.
  const std::string deep_open(100000, '[');
  EXPECT_NE(status_of(deep_open).code(), ErrorCode::kOk);
  EXPECT_NE(status_of(deep_open + std::string(100000, ']')).code(), ErrorCode::kOk);
  // And the converter still works afterwards (no state kept between calls).
  auto good = json_schema_to_grammar(R"({"type": "boolean"})");
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  auto recognizer = Recognizer::create(*good);
  ASSERT_TRUE(recognizer.ok());
  EXPECT_EQ(recognizer->push_bytes("true"), 4u);
  EXPECT_TRUE(recognizer->is_accepting());
}

TEST(HostileSchema, NegatedPatternUnionsStayBounded) {
  // allOf of three negated conjunctions of negated pattern unions: 3^6
  // branches, each a string automaton, too large a grammar in all. Saying so
  // must take seconds, not the hours a quadratic rule-naming loop once took.
  const auto union_not = [](const std::string& a, const std::string& b, const std::string& c) {
    return R"({"not": {"anyOf": [{"pattern": ")" + a + R"("}, {"pattern": ")" + b +
           R"("}, {"pattern": ")" + c + R"("}]}})";
  };
  std::string terms;
  for (const char letter : {'q', 'r', 's'}) {
    const std::string l(1, letter);
    terms += R"({"not": {"allOf": [)" + union_not("^x{3}$", l + "7", "7" + l) + ", " +
             union_not("^[a-z]+$", "\\\\d{2}", "[xy]") + ", " + union_not("^[0-9]", "5.*6", "zz") +
             "]}}, ";
  }
  const std::string schema =
      R"({"type": "string", "allOf": [)" + terms + R"({"minLength": 4}, {"maxLength": 24}]})";
  const auto start = std::chrono::steady_clock::now();
  const Status status = json_schema_to_gbnf(schema).status();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Converted, or refused for size (kLimitExceeded, or kUnsupported when an
  // automaton would pass its state bound): either way quickly.
  EXPECT_TRUE(status.ok() || status.code() == ErrorCode::kLimitExceeded ||
              status.code() == ErrorCode::kUnsupported)
      << status.to_string();
  EXPECT_LT(seconds, 120.0) << "conversion took " << seconds << " s";
}

// --- grammars that are slow to lower ------------------------------------------------------

// Grammars whose automata stay far below max_states but whose subset
// construction once took seconds (found by fuzzing): lowering either
// finishes or fails with kLimitExceeded naming max_lowering_work; a small
// bound refuses them. Never a timing assertion: the work bound is the
// guarantee.
std::vector<std::pair<std::string, std::string>> slow_to_lower_grammars() {
  std::vector<std::pair<std::string, std::string>> out;
  // The C-like grammar with its line comment able to span lines.
  std::ifstream file(std::string(GRAMMASK_SOURCE_DIR) + "/grammars/c-like.gbnf");
  std::string c_like((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(c_like.empty());
  const size_t at = c_like.find("[^\\n]*");
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) c_like.replace(at, 6, "[^$n]*");
  out.emplace_back("c-like with [^$n]*", c_like);
  // A regex-like choice of non-blank runs, as the JSON Schema converter
  // writes it (\S as a class of most of Unicode, escapes spelled out).
  auto pattern = json_schema_to_gbnf(
      R"({"type": "string", "pattern": "\\S+a\\S+b|\\S+c\\S+d|\\S+e\\S+f|\\S+g\\S+h"})");
  EXPECT_TRUE(pattern.ok()) << pattern.status().to_string();
  if (pattern.ok()) out.emplace_back("pattern \\S+a\\S+b|...", *pattern);
  // Five such searches, two sharing a prefix (found by fuzzing in CI).
  auto five = json_schema_to_gbnf(
      R"({"type": "string", "pattern": "\\S+a\\S+b|\\S++d|\\S+e\\S+fc\\S+d|\\S+e\\S+f|\\S+g\\S+h"})");
  EXPECT_TRUE(five.ok()) << five.status().to_string();
  if (five.ok()) out.emplace_back("pattern \\S+a\\S+b|\\S++d|...", *five);
  return out;
}

TEST(HostileGrammar, SlowToLowerGrammarsFinishOrHitTheWorkBound) {
  for (const auto& [name, text] : slow_to_lower_grammars()) {
    SCOPED_TRACE(name);
    auto grammar = parse_gbnf(text);
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    auto made = Recognizer::create(*grammar);
    if (!made.ok()) {
      EXPECT_TRUE(FailsWith(made.status(), ErrorCode::kLimitExceeded,
                            "RecognizerOptions::max_lowering_work"));
    }
    RecognizerOptions small;
    small.max_lowering_work = 100000;
    EXPECT_TRUE(FailsWith(Recognizer::create(*grammar, "root", small).status(),
                          ErrorCode::kLimitExceeded, "RecognizerOptions::max_lowering_work"));
    CompileOptions options;
    options.recognizer.max_lowering_work = 100000;
    EXPECT_TRUE(FailsWith(CompiledGrammar::from_gbnf(text, hostile_vocab(), options).status(),
                          ErrorCode::kLimitExceeded, "RecognizerOptions::max_lowering_work"));
  }
}

TEST(HostileGrammar, SlowToLowerPatternsSplitBeforeTheWorkGrows) {
  // A rule whose subset construction outgrows a work budget linear in its
  // NFA is split like one that outgrows its state budget, so the unions of
  // searches lower in under 7 million units (more than 48 and 134 million
  // when only states were budgeted: the second failed at the default
  // bound).
  RecognizerOptions bounded;
  bounded.max_lowering_work = uint64_t{1} << 24;
  const auto grammars = slow_to_lower_grammars();
  ASSERT_EQ(grammars.size(), 3u);
  for (size_t i = 1; i < grammars.size(); ++i) {
    SCOPED_TRACE(grammars[i].first);
    auto grammar = parse_gbnf(grammars[i].second);
    ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
    auto made = Recognizer::create(*grammar, "root", bounded);
    EXPECT_TRUE(made.ok()) << made.status().to_string();
  }
}

TEST(HostileGrammar, SlowToLowerGrammarsStayCorrect) {
  // With room enough, the rules split while lowering still accept exactly
  // their language.
  RecognizerOptions roomy;
  roomy.max_lowering_work = uint64_t{1} << 32;
  const auto grammars = slow_to_lower_grammars();
  ASSERT_EQ(grammars.size(), 3u);
  auto c_like = parse_gbnf(grammars[0].second);
  ASSERT_TRUE(c_like.ok());
  auto c = Recognizer::create(*c_like, "root", roomy);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const std::string program =
      "// a remark\nint main(void) {\n  int x = 1; /* block */\n  return x + 2;\n}\n"
      "// two\nrows, 1 remark\n";  // the line comment may not hold 'n' or '$'; '\n' it may
  EXPECT_EQ(c->push_bytes(program), program.size());
  EXPECT_TRUE(c->is_accepting());
  c->reset();
  EXPECT_EQ(c->push_bytes("int x = ;"), 8u);
  // The unions of \S+ searches: texts each must accept and reject.
  struct PatternCase {
    size_t index;  // in slow_to_lower_grammars()
    std::vector<std::string_view> accepted, rejected;
  };
  const std::vector<PatternCase> pattern_cases = {
      {1,
       {"\"xaxb\"", "\" q xay\\\"b. \"", "\"\xC3\xA9g\xE6\x97\xA5h\""},
       {"\"xaxc\"", "\"ab\"", "\"x a xb\""}},
      {2,
       {"\"xaxb\"",
        "\"xd\"",         // \S++d: non-blanks, then d
        "\" ?e?fc?d \"",  // \S+e\S+fc\S+d
        "\"\xC3\xA9g\xE6\x97\xA5h\""},
       {"\"d d  d\"",  // no non-blank before a d
        "\"xaxc\"", "\"x e xf\""}},
  };
  for (const PatternCase& test : pattern_cases) {
    SCOPED_TRACE(grammars[test.index].first);
    auto grammar = parse_gbnf(grammars[test.index].second);
    ASSERT_TRUE(grammar.ok());
    auto r = Recognizer::create(*grammar, "root", roomy);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const auto accepts = [&](std::string_view text) {
      r->reset();
      return r->push_bytes(text) == text.size() && r->is_accepting();
    };
    for (std::string_view text : test.accepted) EXPECT_TRUE(accepts(text)) << text;
    for (std::string_view text : test.rejected) EXPECT_FALSE(accepts(text)) << text;
  }
}

// --- text terminals past the limits ------------------------------------------------

// Regex, Substring and TextExcluding terminals whose automata would be huge
// stop at a limit, named in the message, before building them; those within
// the limits lower and are exact.
TEST(HostileGrammar, TextTerminalsEndWithinTheLimits) {
  auto create = [](const std::string& gbnf) {
    auto grammar = parse_gbnf(gbnf);
    EXPECT_TRUE(grammar.ok()) << grammar.status().to_string();
    if (!grammar.ok()) return Result<Recognizer>(grammar.status());
    return Recognizer::create(*grammar);
  };
  // A suffix automaton of 1 MB of text needs up to 2 million states.
  std::string text;
  std::mt19937 rng(3);
  while (text.size() < (size_t{1} << 20)) text += static_cast<char>('a' + rng() % 26);
  EXPECT_TRUE(FailsWith(create("root ::= Substring(\"" + text + "\")").status(),
                        ErrorCode::kLimitExceeded, "RecognizerOptions::max_states"));
  // Counted repeats: past RegexLimits::max_repeat, and products of nested
  // bounds (a million states) past what max_states leaves for one terminal.
  EXPECT_TRUE(FailsWith(create(R"(root ::= Regex("a{100000}"))").status(),
                        ErrorCode::kLimitExceeded, "RegexLimits"));
  EXPECT_TRUE(FailsWith(create(R"(root ::= Regex("(a{1001}){999}"))").status(),
                        ErrorCode::kLimitExceeded, "RecognizerOptions::max_states"));
  EXPECT_TRUE(FailsWith(create(R"(root ::= LazyRegex("(?:[a-z]{1001}){999}x"))").status(),
                        ErrorCode::kLimitExceeded, "RecognizerOptions::max_states"));
  // Counts of at most 1000 whose product passes 1000 (RE2's limit, so only
  // grammask's own bounds apply): a million states.
  EXPECT_TRUE(FailsWith(create(R"(root ::= Regex("(a{1000}){1000}"))").status(),
                        ErrorCode::kLimitExceeded, "RecognizerOptions::max_states"));
  // 10,000 strings whose automaton is small (four digits after 'w'): exact.
  std::string words;
  for (int i = 0; i < 10000; ++i) {
    char word[8];
    std::snprintf(word, sizeof word, "w%04d", i);
    words += std::string(words.empty() ? "" : ", ") + "\"" + word + "\"";
  }
  auto small = create("root ::= TextExcluding(" + words + ") \";\"");
  ASSERT_TRUE(small.ok()) << small.status().to_string();
  const auto accepts = [&](std::string_view input) {
    small->reset();
    return small->push_bytes(input) == input.size() && small->is_accepting();
  };
  EXPECT_TRUE(accepts("w123 w12x w;"));
  EXPECT_FALSE(accepts("ww0123;"));
  EXPECT_FALSE(accepts("w9999;"));
  // 10,000 strings of two characters with distinct first characters: every
  // state needs an edge per first character (10^8 in all).
  std::string pairs;
  for (uint32_t i = 0; i < 10000; ++i) {
    std::string pair;
    const uint32_t cp = 0x4E00 + i;
    pair += static_cast<char>(0xE0 | (cp >> 12));
    pair += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    pair += static_cast<char>(0x80 | (cp & 0x3F));
    pair += 'x';
    pairs += std::string(pairs.empty() ? "" : ", ") + "\"" + pair + "\"";
  }
  EXPECT_TRUE(FailsWith(create("root ::= TextExcluding(" + pairs + ")").status(),
                        ErrorCode::kLimitExceeded, "RecognizerOptions::max_states"));
}

// 10,000 token items in one alternation, by id and by text: each is a
// rule of its own, so every set that awaits them holds 10,000 items. They
// compile and mask exactly, or stop at a work bound; never a hang.
TEST(HostileGrammar, TenThousandTokenItems) {
  std::vector<std::string> tokens;
  std::vector<uint32_t> control;
  for (uint32_t i = 0; i < 10001; ++i) {
    tokens.push_back("<t" + std::to_string(i) + ">");
    control.push_back(i);
  }
  tokens.push_back("x");
  const Vocabulary vocab = *Vocabulary::from_token_bytes(tokens, {}, control);
  for (const bool by_text : {false, true}) {
    std::string gbnf = "root ::= (";
    for (uint32_t i = 0; i < 10000; ++i)
      gbnf += (i ? " | " : "") + (by_text ? tokens[i] : "<[" + std::to_string(i) + "]>");
    gbnf += ") \"x\"";
    auto compiled = CompiledGrammar::from_gbnf(gbnf, vocab);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    Matcher m(*compiled);
    std::vector<uint32_t> words(compiled->mask_words());
    ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
    size_t allowed = 0;
    for (uint32_t id = 0; id < vocab.size(); ++id) allowed += test_bit(words.data(), id);
    EXPECT_EQ(allowed, 10000u);
    EXPECT_FALSE(test_bit(words.data(), 10000));
    ASSERT_TRUE(m.accept_token(9999).ok());
    ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
    EXPECT_TRUE(test_bit(words.data(), 10001));
    EXPECT_FALSE(test_bit(words.data(), 9999));
  }
  // The same items negated: together they read every token.
  std::string negated = "root ::= (";
  for (uint32_t i = 0; i < 10000; ++i) negated += (i ? " | !<[" : "!<[") + std::to_string(i) + "]>";
  negated += ") \"x\"";
  auto compiled = CompiledGrammar::from_gbnf(negated, vocab);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  Matcher m(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  for (uint32_t id = 0; id < vocab.size(); ++id) EXPECT_TRUE(test_bit(words.data(), id)) << id;
  ASSERT_TRUE(m.accept_token(10001).ok());  // "x", read as any token
  ASSERT_TRUE(m.fill_mask(words.data(), words.size()).ok());
  for (uint32_t id = 0; id < vocab.size(); ++id) EXPECT_EQ(test_bit(words.data(), id), id == 10001);
}

// --- noexcept functions with extreme arguments -------------------------------------------

TEST(HostileNoexcept, ExtremeArgumentsNeverThrowOrCrash) {
  // Functions documented noexcept, driven with the worst arguments they
  // can get; the test passing means nothing threw (that would terminate).
  for (int code = 0; code < 256; ++code) {
    const char* name = to_string(static_cast<ErrorCode>(code));
    ASSERT_NE(name, nullptr);
    EXPECT_GT(std::strlen(name), 0u);
  }
  for (std::string_view piece :
       {std::string_view(""), std::string_view("<"), std::string_view("<0x"),
        std::string_view("<0x0"), std::string_view("<0x0A"), std::string_view("<0xGG>"),
        std::string_view("<0x0A>>"), std::string_view("<0x\0\0>", 6), std::string_view("\xFF")}) {
    EXPECT_EQ(parse_byte_piece(piece), std::nullopt) << piece;
  }
  const std::string long_piece(1 << 20, '<');
  EXPECT_EQ(parse_byte_piece(long_piece), std::nullopt);
  EXPECT_FALSE(is_valid_rule_name(""));
  EXPECT_FALSE(is_valid_rule_name(std::string_view("a\0b", 3)));
  EXPECT_FALSE(is_valid_rule_name("\xFF"));
  EXPECT_TRUE(is_valid_rule_name(std::string(1 << 16, 'r')));
  auto grammar = parse_gbnf("root ::= \"a\"");
  ASSERT_TRUE(grammar.ok());
  EXPECT_EQ(grammar->find_rule(""), -1);
  EXPECT_EQ(grammar->find_rule(long_piece), -1);
  EXPECT_EQ(grammar->find_rule(std::string_view("root\0", 5)), -1);
  auto made = Recognizer::create(*grammar);
  ASSERT_TRUE(made.ok());
  Recognizer r = std::move(*made);
  for (int byte = 0; byte < 256; ++byte) {
    EXPECT_EQ(r.allows_byte(static_cast<uint8_t>(byte)), byte == 'a');
  }
  r.truncate(SIZE_MAX);
  r.reset();
  r.reset();
  EXPECT_EQ(r.size(), 0u);
  Recognizer moved = std::move(r);
  EXPECT_EQ(moved.push_bytes("a"), 1u);
  EXPECT_TRUE(moved.is_accepting());
  const Vocabulary vocab = hostile_vocab();
  EXPECT_EQ(vocab.find_token(""), std::nullopt);
  EXPECT_EQ(vocab.find_token(long_piece), std::nullopt);
  EXPECT_EQ(vocab.find_token("\xFF"), std::optional<uint32_t>(8));
  const CompiledGrammar compiled = compile("root ::= \"a\"", vocab);
  Matcher m(compiled);
  m.reset();
  Matcher moved_matcher = std::move(m);
  moved_matcher.reset();
  EXPECT_EQ(moved_matcher.num_tokens(), 0u);
  EXPECT_FALSE(moved_matcher.is_terminated());
}

}  // namespace
}  // namespace grammask
