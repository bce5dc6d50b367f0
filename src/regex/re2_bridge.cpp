#include "regex/re2_bridge.h"

#include <re2/re2.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "ir/gbnf_writer.h"
#include "regex/char_dfa.h"

namespace grammask::internal {
namespace {

std::string hex(uint32_t value, int width) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%0*X", width, value);
  return buffer;
}

std::string re2_class(const CodePointSet& set) {
  if (set.empty()) return "[^\\x{0}-\\x{10FFFF}]";
  std::string out = "[";
  for (const CodePointRange& range : set) {
    out += "\\x{" + hex(range.first, 1) + "}";
    if (range.last != range.first) out += "-\\x{" + hex(range.last, 1) + "}";
  }
  return out + "]";
}

std::string node_to_re2(const RegexNode& node) {
  switch (node.kind) {
    case RegexNode::Kind::kEmpty:
      return "(?:)";
    case RegexNode::Kind::kLineStart:
      return "^";
    case RegexNode::Kind::kLineEnd:
      return "$";
    case RegexNode::Kind::kChars:
      return re2_class(node.chars);
    case RegexNode::Kind::kConcat: {
      std::string out;
      for (const RegexNode& child : node.children) out += node_to_re2(child);
      return "(?:" + out + ")";
    }
    case RegexNode::Kind::kAlternation: {
      std::string out;
      for (size_t i = 0; i < node.children.size(); ++i) {
        if (i) out += "|";
        out += node_to_re2(node.children[i]);
      }
      return "(?:" + out + ")";
    }
    case RegexNode::Kind::kRepeat:
      return "(?:" + node_to_re2(node.children[0]) + ")" + repeat_suffix(node.min, node.max);
    case RegexNode::Kind::kLookahead:  // (RE2 has none: see regex_to_re2)
    case RegexNode::Kind::kNegativeLookahead:
      return "(?:)";
  }
  return "";
}

}  // namespace

namespace {

// Whether a repeat count times the counts of the repeats around it passes
// 1000, the most RE2 takes (it refuses `(a{1000}){1000}` as it refuses
// `a{1001}`).
bool repeats_past_re2(const RegexNode& node, uint64_t outer) {
  uint64_t here = outer;
  if (node.kind == RegexNode::Kind::kRepeat) {
    const uint64_t count = node.max != kUnbounded ? node.max : node.min;
    here = outer * std::max<uint64_t>(count, 1);
    if (here > 1000) return true;
  }
  for (const RegexNode& child : node.children)
    if (repeats_past_re2(child, here)) return true;
  return false;
}

}  // namespace

bool has_large_repeat(const RegexNode& node) {
  return repeats_past_re2(node, 1);
}

std::string regex_to_re2(const RegexNode& pattern) {
  return node_to_re2(pattern);
}

namespace {

// The RE2 that ecma_regex_search runs (the automaton for a pattern with
// lookaheads, which RE2 does not have), or why there is none.
Status compile_for_search(std::string_view pattern, std::unique_ptr<RE2>* out,
                          std::optional<CharDfa>* automaton) {
  Result<RegexNode> parsed = parse_ecma_regex(pattern);
  if (!parsed.ok()) return parsed.status();
  if (has_lookahead(*parsed)) {
    Result<CharDfa> dfa = dfa_from_regex(*parsed);
    if (!dfa.ok()) return Status(ErrorCode::kUnsupported, dfa.status().message());
    *automaton = std::move(*dfa);
    return Status();
  }
  if (has_large_repeat(*parsed))
    return Status(ErrorCode::kUnsupported, "pattern too large to evaluate");
  RE2::Options options;
  options.set_log_errors(false);
  auto re2 = std::make_unique<RE2>(regex_to_re2(*parsed), options);
  if (!re2->ok()) return Status(ErrorCode::kUnsupported, "RE2: " + re2->error());
  *out = std::move(re2);
  return Status();
}

bool partial_match(const RE2* re2, const std::optional<CharDfa>& automaton, std::string_view text) {
  if (automaton)
    return dfa_accepts(*automaton, std::string(text), [](uint32_t l) { return l != 0; });
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re2);
}

}  // namespace

Result<bool> ecma_regex_search(std::string_view pattern, std::string_view text) {
  std::unique_ptr<RE2> re2;
  std::optional<CharDfa> automaton;
  Status compiled = compile_for_search(pattern, &re2, &automaton);
  if (!compiled.ok()) return compiled;
  return partial_match(re2.get(), automaton, text);
}

struct EcmaRegexSearcher::Compiled {
  Status status;
  std::unique_ptr<RE2> re2;          // when status is ok, but for
  std::optional<CharDfa> automaton;  // a pattern with lookaheads
};

EcmaRegexSearcher::EcmaRegexSearcher() = default;
EcmaRegexSearcher::~EcmaRegexSearcher() = default;

Result<bool> EcmaRegexSearcher::search(std::string_view pattern, std::string_view text) {
  auto it = compiled_.find(pattern);
  if (it == compiled_.end()) {
    auto compiled = std::make_unique<Compiled>();
    compiled->status = compile_for_search(pattern, &compiled->re2, &compiled->automaton);
    it = compiled_.emplace(std::string(pattern), std::move(compiled)).first;
  }
  if (!it->second->status.ok()) return it->second->status;
  return partial_match(it->second->re2.get(), it->second->automaton, text);
}
}  // namespace grammask::internal
