#include "stats/value_counts.h"

#include <gtest/gtest.h>

#include <vector>

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

TEST(ValueCountsTest, CountAtCountsTheEntryAddGave) {
  ValueCounts a(100), b(100);
  for (int i = 0; i < 300; ++i) {
    size_t entry = 0;
    ASSERT_TRUE(a.Add(i % 37 * 0.5, i % 4 == 0 ? 1 : 0, 1.5, &entry));
    ASSERT_TRUE(b.Add(i % 37 * 0.5, i % 4 == 0 ? 1 : 0, 1.5));
    a.CountAt(entry, i % 3 == 0 ? 1 : 0, 0.25);  // once more, through the entry
    ASSERT_TRUE(b.Add(i % 37 * 0.5, i % 3 == 0 ? 1 : 0, 0.25));
  }
  std::vector<double> order_a, order_b;
  a.ForEach([&](const ValueCounts::Entry& e) { order_a.push_back(e.value); });
  b.ForEach([&](const ValueCounts::Entry& e) { order_b.push_back(e.value); });
  EXPECT_EQ(order_a, order_b);  // same sequence of values: same table order
  auto sa = a.Sorted(), sb = b.Sorted();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].value, sb[i].value);
    EXPECT_EQ(sa[i].pos, sb[i].pos);
    EXPECT_EQ(sa[i].neg, sb[i].neg);
    EXPECT_EQ(sa[i].wpos, sb[i].wpos);
    EXPECT_EQ(sa[i].wneg, sb[i].wneg);
  }
}

TEST(ValueCountsTest, TableOrderDependsOnlyOnTheSequenceOfAdds) {
  // Values added in one order come back from ForEach in the same order in every table that
  // saw the same Adds, across growth.
  ValueCounts a(1000), b(1000);
  for (int i = 0; i < 700; ++i) {
    a.Add((i * 7919) % 701, 0, 1);
    b.Add((i * 7919) % 701, 1, 2);
  }
  std::vector<double> va, vb;
  a.ForEach([&](const ValueCounts::Entry& e) { va.push_back(e.value); });
  b.ForEach([&](const ValueCounts::Entry& e) { vb.push_back(e.value); });
  EXPECT_EQ(va, vb);
  EXPECT_EQ(va.size(), 700u);
}

}  // namespace
}  // namespace tarn::stats
