// Applying a mask to logits, per instruction set, at 32k and 128k tokens.
// Arguments: isa (0 scalar, 1 avx2, 2 avx512, 3 neon), tokens, percent allowed.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "grammask/bitmask.h"

namespace {

using grammask::Isa;

std::vector<uint32_t> make_mask(size_t n, int percent_allowed) {
  std::mt19937 rng(42);
  std::vector<uint32_t> words(grammask::mask_words(n), 0);
  for (size_t i = 0; i < n; ++i) {
    if (static_cast<int>(rng() % 100) < percent_allowed) grammask::set_bit(words.data(), i);
  }
  return words;
}

bool skip_unsupported(benchmark::State& state, Isa isa) {
  if (grammask::isa_supported(isa)) return false;
  state.SkipWithError("instruction set not supported on this CPU or build");
  return true;
}

void label(benchmark::State& state, Isa isa, size_t n) {
  state.SetLabel(grammask::to_string(isa));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_ApplyFp32(benchmark::State& state) {
  const Isa isa = static_cast<Isa>(state.range(0));
  const size_t n = static_cast<size_t>(state.range(1));
  if (skip_unsupported(state, isa)) return;
  const std::vector<uint32_t> words = make_mask(n, static_cast<int>(state.range(2)));
  std::vector<float> logits(n, 1.0f);
  for (auto _ : state) {
    grammask::apply_mask(isa, logits.data(), n, words.data());
    benchmark::ClobberMemory();
  }
  label(state, isa, n);
}

void BM_ApplyBf16(benchmark::State& state) {
  const Isa isa = static_cast<Isa>(state.range(0));
  const size_t n = static_cast<size_t>(state.range(1));
  if (skip_unsupported(state, isa)) return;
  const std::vector<uint32_t> words = make_mask(n, static_cast<int>(state.range(2)));
  std::vector<uint16_t> logits(n, 0x3F80);
  for (auto _ : state) {
    grammask::apply_mask_bf16(isa, logits.data(), n, words.data());
    benchmark::ClobberMemory();
  }
  label(state, isa, n);
}

void BM_ApplyFp16(benchmark::State& state) {
  const Isa isa = static_cast<Isa>(state.range(0));
  const size_t n = static_cast<size_t>(state.range(1));
  if (skip_unsupported(state, isa)) return;
  const std::vector<uint32_t> words = make_mask(n, static_cast<int>(state.range(2)));
  std::vector<uint16_t> logits(n, 0x3C00);
  for (auto _ : state) {
    grammask::apply_mask_fp16(isa, logits.data(), n, words.data());
    benchmark::ClobberMemory();
  }
  label(state, isa, n);
}

// Every token as a candidate, in vocabulary order (llama.cpp's array before
// any sampler sorts it) or shuffled (as after a sort by logit).
void apply_candidates(benchmark::State& state, bool shuffled) {
  const Isa isa = static_cast<Isa>(state.range(0));
  const size_t n = static_cast<size_t>(state.range(1));
  if (skip_unsupported(state, isa)) return;
  const std::vector<uint32_t> words = make_mask(n, static_cast<int>(state.range(2)));
  std::vector<grammask::TokenCandidate> candidates(n);
  for (size_t i = 0; i < n; ++i) candidates[i] = {static_cast<int32_t>(i), 1.0f, 0.0f};
  if (shuffled) std::shuffle(candidates.begin(), candidates.end(), std::mt19937(7));
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        grammask::apply_mask(isa, candidates.data(), candidates.size(), words.data(), n));
    benchmark::ClobberMemory();
  }
  label(state, isa, n);
}

void BM_ApplyCandidatesInOrder(benchmark::State& state) {
  apply_candidates(state, false);
}
void BM_ApplyCandidatesShuffled(benchmark::State& state) {
  apply_candidates(state, true);
}

void IsaSizesDensities(benchmark::internal::Benchmark* bench) {
  for (int isa = 0; isa <= 3; ++isa) {
    for (int n : {32000, 128256}) {
      for (int percent : {50, 99}) bench->Args({isa, n, percent});
    }
  }
  bench->ArgNames({"isa", "tokens", "allowed%"});
}

BENCHMARK(BM_ApplyFp32)->Apply(IsaSizesDensities);
BENCHMARK(BM_ApplyBf16)->Apply(IsaSizesDensities);
BENCHMARK(BM_ApplyFp16)->Apply(IsaSizesDensities);
BENCHMARK(BM_ApplyCandidatesInOrder)->Apply(IsaSizesDensities);
BENCHMARK(BM_ApplyCandidatesShuffled)->Apply(IsaSizesDensities);

}  // namespace
