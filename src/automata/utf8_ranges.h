// UTF-8 range sequences: the byte-level spelling of a range of code points.
//
// utf8_sequences(first, last, out) appends to `out` byte range sequences
// whose union is exactly the UTF-8 encodings of the code points in
// [first, last]: each sequence is 1-4 (lo, hi) byte ranges, one per byte,
// and every byte string of a sequence's ranges encodes one code point of
// the range. The sequences are disjoint and in ascending order. Needs first <= last (else appends
// nothing); the range must contain no surrogate (D800-DFFF, which has no
// encoding) and end at most at U+10FFFF. Linear in the number of sequences
// (at most a few dozen). Pure function: thread-safe.
#ifndef GRAMMASK_SRC_AUTOMATA_UTF8_RANGES_H_
#define GRAMMASK_SRC_AUTOMATA_UTF8_RANGES_H_

#include <cstdint>
#include <vector>

namespace grammask::internal {

// The UTF-8 encodings of the code points in [first, last] as a list of byte
// range sequences: each element is 1-4 (lo, hi) pairs, one per byte.
struct Utf8Sequence {
  uint8_t length = 0;
  uint8_t lo[4] = {};
  uint8_t hi[4] = {};
};
void utf8_sequences(uint32_t first, uint32_t last, std::vector<Utf8Sequence>& out);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_AUTOMATA_UTF8_RANGES_H_
