#include "stats/value_counts.h"

#include <gtest/gtest.h>

namespace tarn::stats {
namespace {

TEST(ValueCountsTest, CountsPerValueAndTarget) {
  ValueCounts vc(100);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(vc.Add(i % 10, i % 3 == 0 ? 1 : 0, 2.0));
  EXPECT_TRUE(vc.Add(-0.0, 1, 1.0));  // same value as 0.0
  EXPECT_EQ(vc.size(), 10u);
  auto sorted = vc.Sorted();
  ASSERT_EQ(sorted.size(), 10u);
  EXPECT_EQ(sorted[0].value, 0.0);
  // value 0: i = 0, 10, ..., 990 -> 100 rows; positives where i % 3 == 0 -> 34, plus the -0.0 row.
  EXPECT_EQ(sorted[0].pos, 35);
  EXPECT_EQ(sorted[0].neg, 66);
  EXPECT_EQ(sorted[0].wneg, 132);
  EXPECT_EQ(sorted[9].value, 9.0);
}

TEST(ValueCountsTest, OverflowKeepsValuesForReplayThenReleases) {
  ValueCounts vc(50);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(vc.Add(i, 0, 1));
  EXPECT_FALSE(vc.Add(50.5, 1, 1));
  EXPECT_TRUE(vc.overflowed());
  EXPECT_EQ(vc.size(), 51u);
  double total = 0;
  vc.ForEach([&](const ValueCounts::Entry& e) { total += e.neg + e.pos; });
  EXPECT_EQ(total, 51);
  vc.Release();
  EXPECT_TRUE(vc.overflowed());
  EXPECT_EQ(vc.size(), 0u);
}

TEST(ValueCountsTest, MergeIsUnionAndOverflowsPastTheCap) {
  ValueCounts a(10), b(10);
  for (int i = 0; i < 6; ++i) a.Add(i, 1, 1);
  for (int i = 3; i < 9; ++i) b.Add(i, 0, 1);
  a.Merge(b);
  EXPECT_FALSE(a.overflowed());
  EXPECT_EQ(a.size(), 9u);
  auto s = a.Sorted();
  EXPECT_EQ(s[4].pos, 1);
  EXPECT_EQ(s[4].neg, 1);
  ValueCounts c(10);
  for (int i = 100; i < 105; ++i) c.Add(i, 0, 1);
  a.Merge(c);
  EXPECT_TRUE(a.overflowed());
}

}  // namespace
}  // namespace tarn::stats
