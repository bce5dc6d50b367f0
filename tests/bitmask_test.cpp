// Mask words and applying masks: every instruction-set path this CPU runs
// must match the scalar path exactly, on random masks and odd lengths.
#include "grammask/bitmask.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace grammask {
namespace {

const Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon};
const size_t kLengths[] = {0, 1, 31, 32, 33, 63, 64, 65, 1000, 128257};

enum class Density { kRandom, kAllowAll, kAllowNone, kSparse, kDense };
const Density kDensities[] = {Density::kRandom, Density::kAllowAll, Density::kAllowNone,
                              Density::kSparse, Density::kDense};

// A mask for n tokens plus one spare word; padding bits are random on
// purpose: the apply functions must ignore bits at and beyond n.
std::vector<uint32_t> random_mask(size_t n, Density density, std::mt19937& rng) {
  std::vector<uint32_t> words(mask_words(n) + 1);
  for (uint32_t& word : words) word = rng();
  for (size_t i = 0; i < n; ++i) {
    bool allowed = true;
    switch (density) {
      case Density::kRandom:
        allowed = rng() & 1;
        break;
      case Density::kAllowAll:
        allowed = true;
        break;
      case Density::kAllowNone:
        allowed = false;
        break;
      case Density::kSparse:
        allowed = rng() % 100 == 0;
        break;
      case Density::kDense:
        allowed = rng() % 100 != 0;
        break;
    }
    if (allowed) {
      set_bit(words.data(), i);
    } else {
      clear_bit(words.data(), i);
    }
  }
  return words;
}

// n values followed by a guard zone that must stay untouched.
constexpr size_t kGuard = 40;

std::vector<float> random_logits(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-20.f, 20.f);
  std::vector<float> logits(n + kGuard);
  for (float& logit : logits) logit = value(rng);
  return logits;
}

std::vector<uint16_t> random_halves(size_t n, std::mt19937& rng) {
  std::vector<uint16_t> values(n + kGuard);
  for (uint16_t& value : values) value = static_cast<uint16_t>(rng());
  return values;
}

bool same_bits(const void* a, const void* b, size_t bytes) {
  return bytes == 0 || std::memcmp(a, b, bytes) == 0;  // empty vectors may have null data
}

// --- word helpers ---------------------------------------------------------------

TEST(MaskWords, LayoutAndHelpers) {
  EXPECT_EQ(mask_words(0), 0u);
  EXPECT_EQ(mask_words(1), 1u);
  EXPECT_EQ(mask_words(32), 1u);
  EXPECT_EQ(mask_words(33), 2u);
  EXPECT_EQ(mask_words(128256), 4008u);

  std::vector<uint32_t> words(3, 0);
  set_bit(words.data(), 0);
  set_bit(words.data(), 33);
  set_bit(words.data(), 95);
  EXPECT_EQ(words[0], 1u);
  EXPECT_EQ(words[1], 2u);  // bit i % 32 of word i / 32, LSB first
  EXPECT_EQ(words[2], 0x80000000u);
  EXPECT_TRUE(test_bit(words.data(), 33));
  EXPECT_FALSE(test_bit(words.data(), 34));
  EXPECT_EQ(count_bits(words.data(), 3), 3u);
  clear_bit(words.data(), 33);
  EXPECT_FALSE(test_bit(words.data(), 33));

  std::vector<uint32_t> all(3, 0xDEADBEEF);
  fill_allowed(all.data(), 70);
  EXPECT_EQ(all[0], 0xFFFFFFFFu);
  EXPECT_EQ(all[1], 0xFFFFFFFFu);
  EXPECT_EQ(all[2], 0x3Fu);  // padding bits cleared
  EXPECT_EQ(count_bits(all.data(), 3), 70u);
  fill_allowed(all.data(), 64);
  EXPECT_EQ(count_bits(all.data(), 2), 64u);
  fill_none(all.data(), 3);
  EXPECT_EQ(count_bits(all.data(), 3), 0u);

  std::vector<uint32_t> a = {0b1100, 0xF0F0F0F0}, b = {0b1010, 0xFF00FF00};
  std::vector<uint32_t> x = a;
  or_words(x.data(), b.data(), 2);
  EXPECT_EQ(x, (std::vector<uint32_t>{0b1110, 0xFFF0FFF0}));
  x = a;
  and_words(x.data(), b.data(), 2);
  EXPECT_EQ(x, (std::vector<uint32_t>{0b1000, 0xF000F000}));
  x = a;
  andnot_words(x.data(), b.data(), 2);
  EXPECT_EQ(x, (std::vector<uint32_t>{0b0100, 0x00F000F0}));
}

TEST(Isa, BestIsSupported) {
  EXPECT_TRUE(isa_supported(Isa::kScalar));
  EXPECT_TRUE(isa_supported(best_isa()));
  for (Isa isa : kAllIsas) {
    EXPECT_STRNE(to_string(isa), "unknown");
    std::printf("[ INFO     ] %s: %s%s\n", to_string(isa),
                isa_supported(isa) ? "supported" : "not supported",
                isa == best_isa() ? " (best)" : "");
  }
}

// --- the scalar path against the definition ---------------------------------------

TEST(ApplyMask, ScalarMatchesTheDefinition) {
  std::mt19937 rng(1);
  for (size_t n : kLengths) {
    const std::vector<uint32_t> words = random_mask(n, Density::kRandom, rng);
    std::vector<float> logits = random_logits(n, rng);
    const std::vector<float> before = logits;
    apply_mask(Isa::kScalar, logits.data(), n, words.data());
    for (size_t i = 0; i < n + kGuard; ++i) {
      if (i < n && !test_bit(words.data(), i)) {
        ASSERT_TRUE(std::isinf(logits[i]) && logits[i] < 0) << "n=" << n << " i=" << i;
      } else {
        ASSERT_EQ(logits[i], before[i]) << "n=" << n << " i=" << i;
      }
    }
    std::vector<uint16_t> fp16 = random_halves(n, rng), bf16 = fp16;
    const std::vector<uint16_t> halves = fp16;
    apply_mask_fp16(Isa::kScalar, fp16.data(), n, words.data());
    apply_mask_bf16(Isa::kScalar, bf16.data(), n, words.data());
    for (size_t i = 0; i < n + kGuard; ++i) {
      const bool blocked = i < n && !test_bit(words.data(), i);
      ASSERT_EQ(fp16[i], blocked ? 0xFC00 : halves[i]);
      ASSERT_EQ(bf16[i], blocked ? 0xFF80 : halves[i]);
    }
  }
}

// --- every ISA against scalar -------------------------------------------------------

class EveryIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << to_string(GetParam()) << " not supported here";
  }
};

TEST_P(EveryIsa, Fp32MatchesScalar) {
  std::mt19937 rng(2);
  for (size_t n : kLengths) {
    for (Density density : kDensities) {
      const std::vector<uint32_t> words = random_mask(n, density, rng);
      std::vector<float> expected = random_logits(n, rng);
      std::vector<float> actual = expected;
      apply_mask(Isa::kScalar, expected.data(), n, words.data());
      apply_mask(GetParam(), actual.data(), n, words.data());
      ASSERT_TRUE(same_bits(expected.data(), actual.data(), expected.size() * sizeof(float)))
          << "n=" << n << " density=" << static_cast<int>(density);
    }
  }
}

TEST_P(EveryIsa, Fp16AndBf16MatchScalar) {
  std::mt19937 rng(3);
  for (size_t n : kLengths) {
    for (Density density : kDensities) {
      const std::vector<uint32_t> words = random_mask(n, density, rng);
      const std::vector<uint16_t> original = random_halves(n, rng);
      std::vector<uint16_t> expected = original, actual = original;
      apply_mask_fp16(Isa::kScalar, expected.data(), n, words.data());
      apply_mask_fp16(GetParam(), actual.data(), n, words.data());
      ASSERT_EQ(expected, actual) << "fp16 n=" << n << " density=" << static_cast<int>(density);
      expected = original;
      actual = original;
      apply_mask_bf16(Isa::kScalar, expected.data(), n, words.data());
      apply_mask_bf16(GetParam(), actual.data(), n, words.data());
      ASSERT_EQ(expected, actual) << "bf16 n=" << n << " density=" << static_cast<int>(density);
    }
  }
}

TEST_P(EveryIsa, UnalignedBuffersMatchScalar) {
  std::mt19937 rng(4);
  const size_t n = 1000;
  const std::vector<uint32_t> words = random_mask(n, Density::kRandom, rng);
  for (size_t offset = 1; offset < 4; ++offset) {
    std::vector<float> expected = random_logits(n + offset, rng), actual = expected;
    apply_mask(Isa::kScalar, expected.data() + offset, n, words.data());
    apply_mask(GetParam(), actual.data() + offset, n, words.data());
    ASSERT_TRUE(same_bits(expected.data(), actual.data(), expected.size() * sizeof(float)));
    std::vector<uint16_t> halves = random_halves(n + offset, rng), other = halves;
    apply_mask_bf16(Isa::kScalar, halves.data() + offset, n, words.data());
    apply_mask_bf16(GetParam(), other.data() + offset, n, words.data());
    ASSERT_EQ(halves, other);
  }
}

std::vector<TokenCandidate> random_candidates(size_t count, size_t n_tokens, std::mt19937& rng) {
  std::vector<TokenCandidate> candidates(count);
  // Mostly valid ids, some negative or beyond the mask, in any order.
  std::uniform_int_distribution<int64_t> id(-5, static_cast<int64_t>(n_tokens) + 40);
  for (TokenCandidate& candidate : candidates) {
    candidate.id = static_cast<int32_t>(id(rng));
    candidate.logit = static_cast<float>(rng() % 1000) / 10.f;
    candidate.p = 0.25f;
  }
  return candidates;
}

TEST_P(EveryIsa, CandidatesMatchScalar) {
  std::mt19937 rng(5);
  for (size_t n : kLengths) {
    for (Density density : kDensities) {
      const std::vector<uint32_t> words = random_mask(n, density, rng);
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16},
                           size_t{17}, size_t{1000}}) {
        const std::vector<TokenCandidate> original = random_candidates(count, n, rng);
        std::vector<TokenCandidate> expected = original, actual = original;
        const size_t expected_allowed =
            apply_mask(Isa::kScalar, expected.data(), expected.size(), words.data(), n);
        const size_t actual_allowed =
            apply_mask(GetParam(), actual.data(), actual.size(), words.data(), n);
        ASSERT_EQ(expected_allowed, actual_allowed) << "n=" << n << " count=" << count;
        ASSERT_TRUE(
            same_bits(expected.data(), actual.data(), expected.size() * sizeof(TokenCandidate)))
            << "n=" << n << " count=" << count;
        // The scalar result against the definition.
        size_t allowed = 0;
        for (size_t i = 0; i < count; ++i) {
          const int32_t id = original[i].id;
          const bool ok = id >= 0 && static_cast<size_t>(id) < n &&
                          test_bit(words.data(), static_cast<size_t>(id));
          allowed += ok;
          ASSERT_EQ(expected[i].id, id);
          ASSERT_EQ(expected[i].p, original[i].p);
          if (ok) {
            ASSERT_EQ(expected[i].logit, original[i].logit);
          } else {
            ASSERT_EQ(expected[i].logit, -std::numeric_limits<float>::infinity());
          }
        }
        ASSERT_EQ(allowed, expected_allowed);
      }
    }
  }
}

// Arrays in vocabulary order take a gather-free path in the SIMD kernels:
// cover runs starting anywhere in a word, runs crossing the mask's end, and
// runs broken by a stray id.
TEST_P(EveryIsa, CandidatesInVocabularyOrderMatchScalar) {
  std::mt19937 rng(8);
  for (size_t n : kLengths) {
    const std::vector<uint32_t> words = random_mask(n, Density::kRandom, rng);
    for (int32_t start : {0, 1, 5, 17, 31, 33}) {
      for (size_t count : {size_t{0}, size_t{9}, size_t{16}, size_t{40}, n + 20}) {
        std::vector<TokenCandidate> original(count);
        for (size_t i = 0; i < count; ++i) {
          original[i] = {start + static_cast<int32_t>(i), static_cast<float>(i), 0.5f};
        }
        if (count > 20) original[count / 2].id = static_cast<int32_t>(rng() % (n + 1));
        std::vector<TokenCandidate> expected = original, actual = original;
        const size_t expected_allowed =
            apply_mask(Isa::kScalar, expected.data(), expected.size(), words.data(), n);
        const size_t actual_allowed =
            apply_mask(GetParam(), actual.data(), actual.size(), words.data(), n);
        ASSERT_EQ(expected_allowed, actual_allowed) << "n=" << n << " start=" << start;
        ASSERT_TRUE(
            same_bits(expected.data(), actual.data(), expected.size() * sizeof(TokenCandidate)))
            << "n=" << n << " start=" << start << " count=" << count;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, EveryIsa, ::testing::ValuesIn(kAllIsas),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(to_string(info.param));
                         });

// --- dispatch and the compacting form ------------------------------------------------

TEST(ApplyMask, DefaultDispatchMatchesScalar) {
  std::mt19937 rng(6);
  const size_t n = 128257;
  const std::vector<uint32_t> words = random_mask(n, Density::kRandom, rng);
  std::vector<float> expected = random_logits(n, rng), actual = expected;
  apply_mask(Isa::kScalar, expected.data(), n, words.data());
  apply_mask(actual.data(), n, words.data());
  EXPECT_TRUE(same_bits(expected.data(), actual.data(), expected.size() * sizeof(float)));
  std::vector<uint16_t> halves = random_halves(n, rng), other = halves;
  apply_mask_fp16(Isa::kScalar, halves.data(), n, words.data());
  apply_mask_fp16(other.data(), n, words.data());
  EXPECT_EQ(halves, other);
  halves = random_halves(n, rng);
  other = halves;
  apply_mask_bf16(Isa::kScalar, halves.data(), n, words.data());
  apply_mask_bf16(other.data(), n, words.data());
  EXPECT_EQ(halves, other);
  std::vector<TokenCandidate> a = random_candidates(5000, n, rng), b = a;
  EXPECT_EQ(apply_mask(Isa::kScalar, a.data(), a.size(), words.data(), n),
            apply_mask(b.data(), b.size(), words.data(), n));
  EXPECT_TRUE(same_bits(a.data(), b.data(), a.size() * sizeof(TokenCandidate)));
}

TEST(ApplyMask, FilterCandidatesKeepsAllowedInOrder) {
  std::mt19937 rng(7);
  const size_t n = 1000;
  const std::vector<uint32_t> words = random_mask(n, Density::kRandom, rng);
  std::vector<TokenCandidate> candidates = random_candidates(3000, n, rng);
  // Sorted by logit, as an earlier sampler may leave them.
  std::sort(candidates.begin(), candidates.end(),
            [](const TokenCandidate& a, const TokenCandidate& b) { return a.logit > b.logit; });
  std::vector<TokenCandidate> expected;
  for (const TokenCandidate& c : candidates) {
    if (c.id >= 0 && static_cast<size_t>(c.id) < n && test_bit(words.data(), c.id)) {
      expected.push_back(c);
    }
  }
  const size_t kept = filter_candidates(candidates.data(), candidates.size(), words.data(), n);
  ASSERT_EQ(kept, expected.size());
  EXPECT_TRUE(same_bits(candidates.data(), expected.data(), kept * sizeof(TokenCandidate)));
  EXPECT_TRUE(std::is_sorted(
      candidates.begin(), candidates.begin() + kept,
      [](const TokenCandidate& a, const TokenCandidate& b) { return a.logit > b.logit; }));
}

}  // namespace
}  // namespace grammask
