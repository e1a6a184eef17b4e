#include "pipeline/row_context.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/thread_pool.h"

namespace tarn::pipeline {
namespace {

TEST(RowSamplerTest, KeepsAboutTheRateAndAlwaysTheSameRows) {
  RowSampler s(0.3, false, 7);
  int kept = 0;
  for (uint64_t line = 1; line <= 100000; ++line) kept += s.Keep(0, line, 0);
  EXPECT_NEAR(kept / 100000.0, 0.3, 0.01);
  RowSampler again(0.3, false, 7);
  for (uint64_t line = 1; line <= 1000; ++line)
    EXPECT_EQ(s.Keep(2, line, 1), again.Keep(2, line, 1));
  RowSampler other_seed(0.3, false, 8);
  int same = 0;
  for (uint64_t line = 1; line <= 1000; ++line)
    same += s.Keep(0, line, 0) == other_seed.Keep(0, line, 0);
  EXPECT_LT(same, 900);
}

TEST(RowSamplerTest, NegOnlyKeepsEveryPositive) {
  RowSampler s(0.1, true, 1);
  for (uint64_t line = 1; line <= 1000; ++line) EXPECT_TRUE(s.Keep(0, line, 1));
}

TEST(RowSamplerTest, BucketsAreBalanced) {
  std::vector<int> counts(4);
  for (uint64_t line = 0; line < 40000; ++line) ++counts[RowSampler::Bucket(3, 0, line, 4)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
}

TEST(OrderedLanesTest, EachLaneSeesItsChunksInOrderWhateverTheThreads) {
  for (int threads : {1, 2, 5}) {
    OrderedLanes lanes;
    std::vector<std::vector<uint64_t>> seen(lanes.lanes());
    // Chunks handed out in increasing order, as the reader does.
    ParallelFor(threads, 400, [&](int, size_t i) {
      OrderedLanes::Guard g(lanes, i);
      seen[g.lane()].push_back(i);
    });
    for (int l = 0; l < lanes.lanes(); ++l) {
      ASSERT_EQ(seen[l].size(), 100u);
      for (size_t k = 0; k < seen[l].size(); ++k) EXPECT_EQ(seen[l][k], l + 4 * k);
    }
  }
}

TEST(WeightTest, InvalidWeightsCountAsOne) {
  bool invalid = false;
  EXPECT_EQ(ParseWeight("2.5", &invalid), 2.5);
  EXPECT_FALSE(invalid);
  for (const char* bad : {"", "x", "-1", "NaN", "inf"}) {
    invalid = false;
    EXPECT_EQ(ParseWeight(bad, &invalid), 1.0) << bad;
    EXPECT_TRUE(invalid) << bad;
  }
}

}  // namespace
}  // namespace tarn::pipeline
