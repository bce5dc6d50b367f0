// UTF-8 range sequences: splits a range of code points where the encoded
// length changes and where continuation bytes stop spanning their full
// range, so that each piece is a product of per-byte ranges. Contract in
// utf8_ranges.h.
#include "automata/utf8_ranges.h"

#include "base/utf8.h"

namespace grammask::internal {

void utf8_sequences(uint32_t first, uint32_t last, std::vector<Utf8Sequence>& out) {
  // Split until both ends share an encoded length and every continuation
  // byte spans its full range except where the ends differ; then the
  // per-byte ranges describe exactly [first, last].
  struct Pending {
    uint32_t first, last;
  };
  std::vector<Pending> todo{{first, last}};
  while (!todo.empty()) {
    auto [lo, hi] = todo.back();
    todo.pop_back();
    if (lo > hi) continue;
    bool split = false;
    for (uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
      if (lo <= boundary && hi > boundary) {
        todo.push_back({boundary + 1, hi});
        todo.push_back({lo, boundary});
        split = true;
        break;
      }
    }
    if (split) continue;
    const int n = static_cast<int>(utf8::encoded_length(lo));
    for (int i = 1; i < n && !split; ++i) {
      const uint32_t m = (1u << (6 * i)) - 1;
      if ((lo & ~m) != (hi & ~m)) {
        if ((lo & m) != 0) {
          todo.push_back({(lo | m) + 1, hi});
          todo.push_back({lo, lo | m});
          split = true;
        } else if ((hi & m) != m) {
          todo.push_back({hi & ~m, hi});
          todo.push_back({lo, (hi & ~m) - 1});
          split = true;
        }
      }
    }
    if (split) continue;
    Utf8Sequence seq;
    seq.length = static_cast<uint8_t>(n);
    utf8::encode(lo, seq.lo);
    utf8::encode(hi, seq.hi);
    out.push_back(seq);
  }
}

}  // namespace grammask::internal
