// Byte classes. compute_byte_classes() cuts the 256 bytes at both ends of
// every byte edge of every NFA, so that all bytes of a class lead to the
// same targets from every NFA state, and sets the ByteGrammar's byte_class_
// and num_classes_ (classes are byte ranges, numbered in byte order).
// byte_classes_fit() tells whether the NFAs, after a rule was rebuilt
// split, still respect the current cut. Both O(byte edges + 256).
#include "automata/lowering_impl.h"

namespace grammask::internal {

void Lowering::compute_byte_classes() {
  bool boundary[257] = {};
  for (const Nfa& nfa : nfas_)
    for (const ByteEdge& b : nfa.bytes) {
      boundary[b.lo] = true;
      boundary[b.hi + 1] = true;
    }
  uint32_t cls = 0;
  for (int b = 0; b < 256; ++b) {
    if (b > 0 && boundary[b]) ++cls;
    out_->byte_class_[b] = static_cast<uint8_t>(cls);
  }
  out_->num_classes_ = cls + 1;
}

// True if every byte edge of every NFA starts and ends on a boundary of
// the current byte classes.
bool Lowering::byte_classes_fit() const {
  const uint8_t* cls = out_->byte_class_;
  for (const Nfa& nfa : nfas_)
    for (const ByteEdge& b : nfa.bytes) {
      if (b.lo > 0 && cls[b.lo] == cls[b.lo - 1]) return false;
      if (b.hi < 255 && cls[b.hi] == cls[b.hi + 1]) return false;
    }
  return true;
}

}  // namespace grammask::internal
