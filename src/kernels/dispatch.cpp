// The run-time choice of instruction set and the public apply functions of
// include/grammask/bitmask.h.
#include <initializer_list>

#include "kernels/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace grammask {
namespace internal {
namespace {

constexpr uint16_t kFp16NegativeInfinity = 0xFC00;
constexpr uint16_t kBf16NegativeInfinity = 0xFF80;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GRAMMASK_X86_CPU_CHECKS 1

// CPUID leaf 1, ECX bit 29. Asked directly because clang before 16 has no
// "f16c" for __builtin_cpu_supports.
bool cpu_has_f16c() noexcept {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

bool cpu_has(Isa isa) noexcept {
  switch (isa) {
    case Isa::kScalar:
      return true;
#ifdef GRAMMASK_X86_CPU_CHECKS
    case Isa::kAvx2:
      __builtin_cpu_init();
      // The AVX2 file is built with -mavx2 -mfma -mf16c: require all three.
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case Isa::kAvx512:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
#endif
    case Isa::kNeon:
      return neon_kernels() != nullptr;  // NEON is part of every AArch64 CPU
    default:
      return false;
  }
}

const MaskKernels* built_kernels(Isa isa) noexcept {
  switch (isa) {
    case Isa::kScalar:
      return &scalar_kernels();
    case Isa::kAvx2:
      return avx2_kernels();
    case Isa::kAvx512:
      return avx512_kernels();
    case Isa::kNeon:
      return neon_kernels();
  }
  return nullptr;
}

const MaskKernels& kernels(Isa isa) noexcept {
  return isa_supported(isa) ? *built_kernels(isa) : scalar_kernels();
}

const MaskKernels& best_kernels() noexcept {
  static const MaskKernels& best = kernels(best_isa());
  return best;
}

}  // namespace

}  // namespace internal

using internal::MaskKernels;

Isa best_isa() noexcept {
  static const Isa best = [] {
    for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kNeon}) {
      if (isa_supported(isa)) return isa;
    }
    return Isa::kScalar;
  }();
  return best;
}

bool isa_supported(Isa isa) noexcept {
  // Asked once per ISA: CPUID is slow, and in a virtual machine it traps to
  // the hypervisor (microseconds, more than applying a whole mask).
  static const bool supported[] = {
      internal::built_kernels(Isa::kScalar) != nullptr && internal::cpu_has(Isa::kScalar),
      internal::built_kernels(Isa::kAvx2) != nullptr && internal::cpu_has(Isa::kAvx2),
      internal::built_kernels(Isa::kAvx512) != nullptr && internal::cpu_has(Isa::kAvx512),
      internal::built_kernels(Isa::kNeon) != nullptr && internal::cpu_has(Isa::kNeon)};
  const size_t index = static_cast<size_t>(isa);
  return index < sizeof supported / sizeof supported[0] && supported[index];
}

const char* to_string(Isa isa) noexcept {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kNeon:
      return "neon";
  }
  return "unknown";
}

void apply_mask(float* logits, size_t n, const uint32_t* words) noexcept {
  internal::best_kernels().apply_f32(logits, n, words);
}
void apply_mask_fp16(uint16_t* logits, size_t n, const uint32_t* words) noexcept {
  internal::best_kernels().apply_u16(logits, n, words, internal::kFp16NegativeInfinity);
}
void apply_mask_bf16(uint16_t* logits, size_t n, const uint32_t* words) noexcept {
  internal::best_kernels().apply_u16(logits, n, words, internal::kBf16NegativeInfinity);
}
size_t apply_mask(TokenCandidate* candidates, size_t n_candidates, const uint32_t* words,
                  size_t n_tokens) noexcept {
  return internal::best_kernels().apply_candidates(candidates, n_candidates, words, n_tokens);
}

void apply_mask(Isa isa, float* logits, size_t n, const uint32_t* words) noexcept {
  internal::kernels(isa).apply_f32(logits, n, words);
}
void apply_mask_fp16(Isa isa, uint16_t* logits, size_t n, const uint32_t* words) noexcept {
  internal::kernels(isa).apply_u16(logits, n, words, internal::kFp16NegativeInfinity);
}
void apply_mask_bf16(Isa isa, uint16_t* logits, size_t n, const uint32_t* words) noexcept {
  internal::kernels(isa).apply_u16(logits, n, words, internal::kBf16NegativeInfinity);
}
size_t apply_mask(Isa isa, TokenCandidate* candidates, size_t n_candidates, const uint32_t* words,
                  size_t n_tokens) noexcept {
  return internal::kernels(isa).apply_candidates(candidates, n_candidates, words, n_tokens);
}

size_t filter_candidates(TokenCandidate* candidates, size_t n_candidates, const uint32_t* words,
                         size_t n_tokens) noexcept {
  size_t kept = 0;
  for (size_t i = 0; i < n_candidates; ++i) {
    if (internal::candidate_allowed(candidates[i].id, words, n_tokens)) {
      candidates[kept++] = candidates[i];
    }
  }
  return kept;
}

}  // namespace grammask
