// Fuzz target: the ECMA-262 -> GBNF regex translation, with RE2 as oracle.
//
// Input: a pattern, then test strings, separated by NUL bytes. For patterns
// the translator accepts, the grammar `"\"" (translation) "\""` must accept
// the JSON encoding of a string exactly when RE2 finds a match (JSON Schema
// `pattern` semantics: unanchored means "contains"), both for the pattern
// as written and wrapped as ^(?:...)$ (full match), and with length bounds
// when the translator accepts them. The oracle is RE2 on the translator's
// own RE2 rendering of the parsed pattern; where the pattern only uses
// syntax that means the same in ECMA-262 and RE2, RE2 on the raw pattern
// too, which also checks the parser. Test strings are the ones given plus
// a few drawn from the pattern's and the strings' characters.
#include <re2/re2.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_string.h"
#include "fuzz_check.h"
#include "grammask/gbnf.h"
#include "grammask/recognizer.h"
#include "regex/re2_bridge.h"
#include "regex/regex_to_gbnf.h"

namespace grammask::fuzz {
namespace {

using internal::json_quote;
using internal::regex_to_gbnf;
using internal::regex_to_re2;
using internal::RegexNode;
using internal::RegexTranslation;

constexpr size_t kMaxPatternBytes = 512;
constexpr size_t kMaxStrings = 24;
constexpr size_t kMaxStringBytes = 64;

const char* const kAnyCharRule =
    "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n";

// Splits valid UTF-8 into one string per code point; false if not valid.
bool split_code_points(std::string_view text, std::vector<std::string>* out) {
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<uint8_t>(text[i]);
    size_t length = 0;
    uint32_t code_point = 0;
    if (lead < 0x80) {
      length = 1;
      code_point = lead;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
      code_point = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      code_point = lead & 0x0F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      code_point = lead & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<uint8_t>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code_point = code_point << 6 | (next & 0x3F);
    }
    const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code_point < smallest[length] || code_point > 0x10FFFF ||
        (code_point >= 0xD800 && code_point <= 0xDFFF)) {
      return false;
    }
    if (out) out->emplace_back(text.substr(i, length));
    i += length;
  }
  return true;
}

// True if `pattern` only uses syntax that ECMA-262 and RE2 read the same
// way: no escapes but \d \D \w \W \n \t \f, \xHH and escaped punctuation; no
// (? groups but (?:; no `[` inside a class (RE2's [:alpha:]); no empty
// class (`[]`, `[^]`). `.` differs on \r, U+2028 and U+2029, which the test
// strings never contain.
bool same_in_ecma_and_re2(std::string_view pattern) {
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      if (++i >= pattern.size()) return false;
      const char e = pattern[i];
      if (e == 'x') {
        const auto hex = [](char h) {
          return (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F');
        };
        if (i + 2 >= pattern.size() || !hex(pattern[i + 1]) || !hex(pattern[i + 2])) {
          return false;
        }
        i += 2;
        continue;
      }
      if (std::string_view("dDwWntf.*+?()[]{}|^$\\/-").find(e) == std::string_view::npos) {
        return false;
      }
      continue;
    }
    if (in_class) {
      if (c == '[') return false;
      if (c == ']') in_class = false;
      continue;
    }
    if (c == '[') {
      in_class = true;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') ++i;
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') return false;
      continue;
    }
    if (c == '(' && i + 1 < pattern.size() && pattern[i + 1] == '?') {
      if (i + 2 >= pattern.size() || pattern[i + 2] != ':') return false;
    }
    // A count with a leading zero ("b{00}"): ECMA-262 reads the number,
    // RE2 reads the braces as text.
    if (c == '{') {
      for (size_t j = i + 1; j + 1 < pattern.size() && pattern[j] != '}'; ++j) {
        const bool starts_number = j == i + 1 || pattern[j - 1] == ',';
        if (starts_number && pattern[j] == '0' && pattern[j + 1] >= '0' && pattern[j + 1] <= '9')
          return false;
      }
    }
  }
  return true;
}

size_t code_point_count(std::string_view text) {
  size_t count = 0;
  for (const char c : text) count += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return count;
}

// A deterministic generator seeded from the input.
class Random {
 public:
  explicit Random(std::string_view seed) {
    for (const char c : seed) state_ = (state_ ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  }
  uint64_t next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }

 private:
  uint64_t state_ = 1469598103934665603ull;
};

struct Translated {
  std::string gbnf;
  std::optional<Recognizer> recognizer;
  RegexTranslation translation;
};

// Recognizers by grammar text: the variants of one input often translate
// to the same grammar, and lowering is the expensive step.
using LoweringCache = std::map<std::string, std::optional<Recognizer>>;

// Translates `pattern`; nullopt when the translator refuses it (with a
// documented code) or the grammar is over the recognizer's state budget.
std::optional<Translated> translate(const RegexNode& parsed, uint64_t min_length,
                                    std::optional<uint64_t> max_length, LoweringCache& cache) {
  auto translation = regex_to_gbnf(parsed, "char", min_length, max_length);
  if (!translation.ok()) {
    FUZZ_CHECK(translation.status().code() == ErrorCode::kUnsupported ||
                   translation.status().code() == ErrorCode::kLimitExceeded,
               translation.status().to_string());
    return std::nullopt;
  }
  Translated out;
  out.translation = *translation;
  const std::string& body = translation->gbnf;
  out.gbnf =
      "root ::= \"\\\"\" " + (body.empty() ? "" : "(" + body + ")") + " \"\\\"\"\n" + kAnyCharRule;
  if (auto cached = cache.find(out.gbnf); cached != cache.end()) {
    if (!cached->second) return std::nullopt;
    out.recognizer = cached->second;
    return out;
  }
  auto grammar = parse_gbnf(out.gbnf);
  FUZZ_CHECK(grammar.ok(), grammar.status().to_string() + "\n" + escaped(out.gbnf));
  RecognizerOptions options;
  options.max_states = kFuzzMaxStates;
  options.max_lowering_work = kFuzzMaxLoweringWork;
  auto recognizer = Recognizer::create(*grammar, "root", options);
  if (!recognizer.ok()) {
    FUZZ_CHECK(recognizer.status().code() == ErrorCode::kLimitExceeded,
               recognizer.status().to_string());
    cache.emplace(out.gbnf, std::nullopt);
    return std::nullopt;
  }
  out.recognizer.emplace(std::move(*recognizer));
  cache.emplace(out.gbnf, out.recognizer);
  return out;
}

bool grammar_accepts(Recognizer& recognizer, std::string_view text) {
  const std::string encoded = json_quote(text);
  recognizer.reset();
  return recognizer.push_bytes(encoded) == encoded.size() && recognizer.is_accepting();
}

RE2::Options oracle_options() {
  RE2::Options options;
  options.set_log_errors(false);
  return options;
}

// Checks one translation of `parsed` against RE2 on every string.
void check_translation(std::string_view pattern, const RegexNode& parsed,
                       const std::vector<std::string>& strings, uint64_t min_length,
                       std::optional<uint64_t> max_length, bool raw_oracle, LoweringCache& cache) {
  auto translated = translate(parsed, min_length, max_length, cache);
  if (!translated) return;
  const RE2 rendered(regex_to_re2(parsed), oracle_options());
  if (!rendered.ok()) return;  // e.g. repeat counts over RE2's 1000
  std::optional<RE2> raw;
  if (raw_oracle) {
    raw.emplace(std::string(pattern), oracle_options());
    if (!raw->ok()) raw.reset();
  }
  const RegexTranslation& translation = translated->translation;
  for (const std::string& text : strings) {
    const re2::StringPiece piece(text.data(), text.size());
    const size_t length = code_point_count(text);
    const bool in_bounds =
        length >= min_length && (!max_length.has_value() || length <= *max_length);
    const bool expected = RE2::PartialMatch(piece, rendered) && in_bounds;
    const bool accepted = grammar_accepts(*translated->recognizer, text);
    const std::string context =
        "pattern " + escaped(pattern) + " lengths [" + std::to_string(min_length) + ", " +
        (max_length ? std::to_string(*max_length) : "inf") + "] text " + escaped(text) +
        "\nRE2: " + escaped(rendered.pattern()) + "\nGBNF:\n" + escaped(translated->gbnf);
    FUZZ_CHECK(accepted == expected, "grammar says " + std::to_string(accepted) + ", RE2 says " +
                                         std::to_string(expected) + ": " + context);
    if (raw) {
      const bool raw_expected = RE2::PartialMatch(piece, *raw) && in_bounds;
      FUZZ_CHECK(accepted == raw_expected,
                 "RE2 on the raw pattern says " + std::to_string(raw_expected) + ": " + context);
    }
    if (accepted) {
      FUZZ_CHECK(length >= translation.min_length &&
                     (!translation.max_length || length <= *translation.max_length),
                 "accepted text outside the reported lengths: " + context);
    }
  }
}

}  // namespace
}  // namespace grammask::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace grammask;
  using namespace grammask::fuzz;
  InputCursor input(data, size);
  const std::string pattern(input.until('\0'));
  if (pattern.size() > kMaxPatternBytes) return 0;

  auto parsed = internal::parse_ecma_regex(pattern);
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.status().code() == ErrorCode::kSyntax ||
                   parsed.status().code() == ErrorCode::kUnsupported ||
                   parsed.status().code() == ErrorCode::kLimitExceeded,
               parsed.status().to_string());
    return 0;
  }

  // The strings given, then random ones over the characters seen. No \r,
  // U+2028 or U+2029: `.` treats them differently in ECMA-262 and RE2.
  std::vector<std::string> strings;
  std::vector<std::string> alphabet = {"a", "0", " ", "\n", "\"", "\\", "/", "\x01", "\xC3\xA9"};
  split_code_points(pattern, &alphabet);
  while (!input.empty() && strings.size() < kMaxStrings / 2) {
    const std::string_view text = input.until('\0');
    if (text.size() <= kMaxStringBytes && split_code_points(text, &alphabet)) {
      strings.emplace_back(text);
    }
  }
  strings.emplace_back();
  Random random(std::string_view(reinterpret_cast<const char*>(data), size));
  while (strings.size() < kMaxStrings) {
    std::string text;
    for (size_t n = random.below(9); n > 0; --n) text += alphabet[random.below(alphabet.size())];
    strings.push_back(text);
  }
  for (std::string& text : strings) {
    for (const char* bad : {"\r", "\xE2\x80\xA8", "\xE2\x80\xA9"}) {
      for (size_t at; (at = text.find(bad)) != std::string::npos;) text.erase(at, std::strlen(bad));
    }
  }

  const bool raw_oracle = same_in_ecma_and_re2(pattern);
  LoweringCache cache;
  check_translation(pattern, *parsed, strings, 0, std::nullopt, raw_oracle, cache);

  // Full match: the pattern wrapped in anchors.
  const std::string anchored = "^(?:" + pattern + ")$";
  if (auto full = internal::parse_ecma_regex(anchored); full.ok()) {
    check_translation(anchored, *full, strings, 0, std::nullopt, raw_oracle, cache);
    // Length bounds, as minLength/maxLength put them next to a pattern.
    const uint64_t min_length = random.below(4);
    const std::optional<uint64_t> max_length =
        random.below(3) == 0 ? std::nullopt : std::optional<uint64_t>(min_length + random.below(6));
    check_translation(anchored, *full, strings, min_length, max_length, raw_oracle, cache);
  }
  check_translation(pattern, *parsed, strings, random.below(3), std::nullopt, raw_oracle, cache);

  // ecma_regex_search is the same oracle the converter uses at schema time.
  // (RE2 has no lookaheads; regex_test checks those against std::regex.)
  if (internal::has_lookahead(*parsed)) return 0;
  if (auto search = internal::ecma_regex_search(pattern, strings.front()); search.ok()) {
    const RE2 rendered(internal::regex_to_re2(*parsed), oracle_options());
    if (rendered.ok()) {
      FUZZ_CHECK(*search == RE2::PartialMatch(strings.front(), rendered), "ecma_regex_search");
    }
  }
  return 0;
}
