#include "text_slice.h"

#include <algorithm>
#include <unordered_set>

#include "automaton.h"
#include "grammask/bitmask.h"
#include "utf8.h"

namespace grammask::internal {

bool spells_plain_text(std::string_view bytes) noexcept {
  if (bytes.empty()) return false;
  for (size_t pos = 0; pos < bytes.size();) {
    uint32_t code_point = 0;
    const size_t length = utf8::decode(bytes, pos, &code_point);
    if (length == utf8::kInvalid || !is_plain_text_char(code_point)) return false;
    pos += length;
  }
  return true;
}

TextSlice TextSlice::build(const char* bytes, const uint32_t* offsets,
                           const std::vector<uint32_t>& ids, size_t vocabulary_size) {
  TextSlice slice;
  slice.words.assign(mask_words(vocabulary_size), 0);
  std::vector<uint32_t> rest;
  for (uint32_t id : ids) {
    const std::string_view token(bytes + offsets[id], offsets[id + 1] - offsets[id]);
    if (spells_plain_text(token)) {
      set_bit(slice.words.data(), id);
    } else {
      rest.push_back(id);
    }
  }
  slice.rest = TokenTrie::build(bytes, offsets, std::move(rest));
  return slice;
}

TextClosure::TextClosure(const ByteGrammar& grammar) : grammar_(grammar) {
  // The next phase after each byte, per phase (kBoundary when the byte
  // completes a character); -1: not allowed there.
  auto next_phase = [](Phase phase, uint8_t b) -> int {
    const bool continuation = b >= 0x80 && b <= 0xBF;
    switch (phase) {
      case kBoundary:
        if (b < 0x80) return is_plain_text_char(b) ? kBoundary : -1;
        if (b >= 0xC2 && b <= 0xDF) return kLast1;
        if (b == 0xE0) return kAfterE0;
        if (b == 0xED) return kAfterED;
        if (b >= 0xE1 && b <= 0xEF) return kLast2;
        if (b == 0xF0) return kAfterF0;
        if (b >= 0xF1 && b <= 0xF3) return kLast3;
        if (b == 0xF4) return kAfterF4;
        return -1;
      case kLast1:
        return continuation ? kBoundary : -1;
      case kLast2:
        return continuation ? kLast1 : -1;
      case kLast3:
        return continuation ? kLast2 : -1;
      case kAfterE0:
        return b >= 0xA0 && b <= 0xBF ? kLast1 : -1;
      case kAfterED:
        return b >= 0x80 && b <= 0x9F ? kLast1 : -1;
      case kAfterF0:
        return b >= 0x90 && b <= 0xBF ? kLast2 : -1;
      case kAfterF4:
        return b >= 0x80 && b <= 0x8F ? kLast2 : -1;
    }
    return -1;
  };
  for (int phase = 0; phase < kPhases; ++phase) {
    std::vector<std::pair<uint8_t, int>> seen;  // (byte class, next phase)
    for (int b = 0; b < 256; ++b) {
      const int next = next_phase(static_cast<Phase>(phase), static_cast<uint8_t>(b));
      if (next < 0) continue;
      const uint8_t cls = grammar.byte_class(static_cast<uint8_t>(b));
      if (std::find(seen.begin(), seen.end(), std::make_pair(cls, next)) != seen.end()) continue;
      seen.emplace_back(cls, next);
      steps_[phase].push_back({static_cast<uint8_t>(b), static_cast<Phase>(next)});
    }
  }
}

bool TextClosure::accepts_all_text(uint32_t state) const {
  // Past this many pairs the answer is "no": a state that accepts all text
  // is inside a small loop (a string body), not a large automaton.
  constexpr size_t kMaxPairs = 4096;
  auto key = [](uint32_t s, int phase) {
    return (uint64_t{s} << 3) | static_cast<uint64_t>(phase);
  };
  std::unordered_set<uint64_t> seen{key(state, kBoundary)};
  std::vector<std::pair<uint32_t, Phase>> todo{{state, kBoundary}};
  while (!todo.empty()) {
    const auto [s, phase] = todo.back();
    todo.pop_back();
    for (const Step& step : steps_[phase]) {
      const uint32_t t = grammar_.next(s, step.byte);
      if (t == kNoState) return false;
      if (!seen.insert(key(t, step.next)).second) continue;
      if (seen.size() > kMaxPairs) return false;
      todo.push_back({t, step.next});
    }
  }
  return true;
}

}  // namespace grammask::internal
