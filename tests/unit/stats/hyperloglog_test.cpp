#include "stats/hyperloglog.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "stats/hash.h"

namespace tarn::stats {
namespace {

// Reference values from the xxHash library (XXH64).
TEST(StatsHashTest, Hash64MatchesXxh64) {
  EXPECT_EQ(Hash64(""), 0xef46db3751d8e999ULL);
  EXPECT_EQ(Hash64("", 42), 0x98b1582b0977e704ULL);
  EXPECT_EQ(Hash64("a"), 0xd24ec4f1a98c6e5bULL);
  EXPECT_EQ(Hash64("a", 42), 0x88e4fe59adf7b0ccULL);
  EXPECT_EQ(Hash64("abc"), 0x44bc2cf5ad770999ULL);
  EXPECT_EQ(Hash64("abc", 42), 0x13c1d910702770e6ULL);
  EXPECT_EQ(Hash64("hello world"), 0x45ab6734b21e6968ULL);
  EXPECT_EQ(Hash64("hello world", 42), 0x69c2b68f9d9352a1ULL);
  // 46 bytes: the 32-byte stripe loop, an 8-byte word, a 4-byte word, 2 bytes.
  EXPECT_EQ(Hash64("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"), 0xb35e125dd4555e6dULL);
  EXPECT_EQ(Hash64("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", 42), 0x97426a2ededcb5a0ULL);
}

TEST(StatsHashTest, Mix64Scrambles) {
  EXPECT_EQ(Mix64(0), 0xe220a8397b1dcdafULL);  // SplitMix64's first output for seed 0
  EXPECT_NE(Mix64(0), Mix64(1));
  // Neighbouring inputs differ in about half their output bits. (Inputs go
  // through a vector: GCC 12 at -O3 -march=native on AVX-512 miscompiles
  // this popcount sum over a constant-trip Mix64 loop.)
  std::vector<uint64_t> flips;
  for (uint64_t i = 0; i < 1000; ++i) flips.push_back(Mix64(i) ^ Mix64(i + 1));
  long total = 0;
  for (uint64_t f : flips) total += std::popcount(f);
  EXPECT_NEAR(total / 1000.0, 32.0, 2.0);
}

TEST(HllTest, EmptyIsZero) {
  HyperLogLog h;
  EXPECT_EQ(h.Estimate(), 0u);
  EXPECT_EQ(h.precision(), 14);
  EXPECT_EQ(h.registers().size(), 16384u);
}

TEST(HllTest, SmallCardinalitiesAreNearlyExact) {
  HyperLogLog h(14);
  for (int n = 1; n <= 100; ++n) {
    h.Add("value-" + std::to_string(n));
    // Duplicates never move the estimate.
    h.Add("value-" + std::to_string(n / 2 + 1));
    const auto estimate = static_cast<int64_t>(h.Estimate());
    EXPECT_LE(std::llabs(estimate - n), 2) << "n=" << n;
  }
}

TEST(HllTest, HundredThousandWithinThreePercent) {
  HyperLogLog h(14);
  for (int i = 0; i < 100000; ++i) {
    const std::string v = std::to_string(i);
    h.Add(v);
    h.Add(v);
  }
  EXPECT_NEAR(static_cast<double>(h.Estimate()), 100000.0, 3000.0);
}

// Raw HyperLogLog is biased between 2.5m and 5m registers, where HLL++ uses
// empirical tables; the improved estimator needs none. Check each range at
// p = 12 (σ = 1.04/64 ≈ 1.6%) within 4σ.
TEST(HllTest, AccurateAcrossRanges) {
  for (uint64_t n : {500ULL, 4096ULL, 10000ULL, 15000ULL, 20000ULL, 100000ULL, 1000000ULL}) {
    HyperLogLog h(12);
    for (uint64_t i = 0; i < n; ++i) h.AddHash(Mix64(i * 0x9E3779B97F4A7C15ULL + n));
    EXPECT_NEAR(static_cast<double>(h.Estimate()), static_cast<double>(n), 0.065 * n) << n;
  }
}

TEST(HllTest, LowAndHighPrecision) {
  HyperLogLog low(HyperLogLog::kMinPrecision);
  HyperLogLog high(HyperLogLog::kMaxPrecision);
  for (uint64_t i = 0; i < 50000; ++i) {
    low.AddHash(Mix64(i));
    high.AddHash(Mix64(i));
  }
  EXPECT_EQ(low.registers().size(), 16u);
  EXPECT_NEAR(static_cast<double>(low.Estimate()), 50000.0, 50000.0 * 0.8);  // σ = 26%
  EXPECT_NEAR(static_cast<double>(high.Estimate()), 50000.0, 50000.0 * 0.01);
}

TEST(HllTest, MergeEqualsUnion) {
  HyperLogLog a(14), b(14), all(14);
  for (int i = 0; i < 60000; ++i) {
    const std::string v = "k" + std::to_string(i);
    if (i < 40000) a.Add(v);
    if (i >= 25000) b.Add(v);  // 15000 in both
    all.Add(v);
  }
  HyperLogLog merged = a;
  merged.Merge(b);
  EXPECT_EQ(merged.registers(), all.registers());
  EXPECT_EQ(merged.Estimate(), all.Estimate());
  EXPECT_NEAR(static_cast<double>(merged.Estimate()), 60000.0, 1800.0);
  EXPECT_LT(a.Estimate(), merged.Estimate());
}

// Reducing a p = 14 sketch to p = 10 gives exactly the p = 10 sketch of the
// same hashes; merging sketches of different precisions works at the lower.
TEST(HllTest, ReduceAndMergeAcrossPrecisions) {
  HyperLogLog fine(14), coarse(10), other(10);
  for (uint64_t i = 0; i < 30000; ++i) {
    fine.AddHash(Mix64(i));
    coarse.AddHash(Mix64(i));
  }
  for (uint64_t i = 20000; i < 50000; ++i) other.AddHash(Mix64(i));
  const HyperLogLog reduced = fine.Reduced(10);
  EXPECT_EQ(reduced.precision(), 10);
  EXPECT_EQ(reduced.registers(), coarse.registers());
  EXPECT_EQ(fine.Reduced(14).registers(), fine.registers());

  HyperLogLog a = fine;  // more precise side folds down first
  a.Merge(other);
  HyperLogLog b = other;  // less precise side reduces the other one
  b.Merge(fine);
  HyperLogLog expected(10);
  for (uint64_t i = 0; i < 50000; ++i) expected.AddHash(Mix64(i));
  EXPECT_EQ(a.precision(), 10);
  EXPECT_EQ(a.registers(), expected.registers());
  EXPECT_EQ(b.registers(), expected.registers());
}

}  // namespace
}  // namespace tarn::stats
