// Token masks and applying them to logits.
//
// Layout (the same as XGrammar and llguidance): an array of uint32_t words,
// mask_words(V) of them for a logits width V; bit i % 32 of word i / 32 set
// means token i is allowed (LSB first). Bits at and beyond V are ignored by
// the apply functions and should be 0.
//
// The apply functions never allocate, throw or print, and are safe to call
// concurrently on different buffers. The unqualified forms use the best
// instruction set this CPU supports (chosen once); the Isa forms exist for
// tests and benchmarks.
#ifndef GRAMMASK_BITMASK_H_
#define GRAMMASK_BITMASK_H_

#include <cstddef>
#include <cstdint>

#include "grammask/mask_words.h"

namespace grammask {

// --- applying a mask -----------------------------------------------------------

// Instruction sets with their own apply paths.
enum class Isa : uint8_t { kScalar, kAvx2, kAvx512, kNeon };

// The best Isa this build and CPU support. The CPU is asked once per
// process; later calls are a load.
Isa best_isa() noexcept;
// True if this build has the path and this CPU can run it. kScalar: always.
bool isa_supported(Isa isa) noexcept;
const char* to_string(Isa isa) noexcept;

// Sets logits[i] to -infinity for every disallowed i < n; allowed logits
// keep their values (a SIMD path may store them back unchanged). `words`
// holds mask_words(n) words. Cost: one pass over n values.
void apply_mask(float* logits, size_t n, const uint32_t* words) noexcept;
// The same on raw IEEE half (fp16) values: disallowed become 0xFC00 (-inf).
void apply_mask_fp16(uint16_t* logits, size_t n, const uint32_t* words) noexcept;
// The same on raw bfloat16 values: disallowed become 0xFF80 (-inf).
void apply_mask_bf16(uint16_t* logits, size_t n, const uint32_t* words) noexcept;

// One entry of a candidate array, laid out like llama.cpp's llama_token_data.
struct TokenCandidate {
  int32_t id;
  float logit;
  float p;
};

// Masks a candidate array by id, in place: every candidate whose id is
// disallowed, negative, or >= n_tokens (the mask's width) gets logit
// -infinity; p is not touched. Length and order are kept (llama.cpp's grammar
// sampler does the same), so an array sorted by logit may not stay sorted.
// Returns the number of allowed candidates. `words` holds mask_words(n_tokens)
// words (none are read when n_tokens is 0). Cost: one pass over the candidates.
size_t apply_mask(TokenCandidate* candidates, size_t n_candidates, const uint32_t* words,
                  size_t n_tokens) noexcept;
// Compacting alternative: removes the candidates that apply_mask would
// block, keeping the others in their order (a sorted array stays sorted);
// returns the new count. One scalar path on every CPU.
size_t filter_candidates(TokenCandidate* candidates, size_t n_candidates, const uint32_t* words,
                         size_t n_tokens) noexcept;

// The same operations on a given instruction set, with the same results on
// every Isa. If !isa_supported(isa), they run the kScalar path.
void apply_mask(Isa isa, float* logits, size_t n, const uint32_t* words) noexcept;
void apply_mask_fp16(Isa isa, uint16_t* logits, size_t n, const uint32_t* words) noexcept;
void apply_mask_bf16(Isa isa, uint16_t* logits, size_t n, const uint32_t* words) noexcept;
size_t apply_mask(Isa isa, TokenCandidate* candidates, size_t n_candidates, const uint32_t* words,
                  size_t n_tokens) noexcept;

}  // namespace grammask

#endif  // GRAMMASK_BITMASK_H_
