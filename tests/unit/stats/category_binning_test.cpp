#include "stats/category_binning.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tarn::stats {
namespace {

using Groups = std::vector<std::vector<size_t>>;

CategoryStats Cat(std::string v, double pos, double neg) {
  return CategoryStats{std::move(v), pos, neg, pos * 2, neg * 2};
}

// The plain O(K²) procedure (sort by rate, rescan every pair each round),
// as Shifu's AutoDynamicBinning runs it, to check the heap version against.
Groups Reference(const std::vector<CategoryStats>& cats, int max_bins) {
  std::vector<size_t> order(cats.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rate = [&](size_t i) {
    const double n = cats[i].count_pos + cats[i].count_neg;
    return n > 0 ? cats[i].count_pos / n : 0.0;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return rate(a) < rate(b); });
  double total = 0;
  for (const auto& c : cats) total += c.count_pos + c.count_neg;
  struct G {
    double pos, neg;
    std::vector<size_t> idx;
  };
  std::vector<G> gs;
  for (size_t i : order) gs.push_back({cats[i].count_pos, cats[i].count_neg, {i}});
  auto info = [&](double pos, double neg) {
    const double n = pos + neg;
    const double pr = (pos + 1e-6) / n, nr = (neg + 1e-6) / n;
    return -(n / total) * (pr * std::log2(pr) + nr * std::log2(nr));
  };
  while (gs.size() > static_cast<size_t>(max_bins)) {
    size_t best = 1;
    double best_cost = INFINITY;
    for (size_t p = 1; p < gs.size(); ++p) {
      const G& a = gs[p - 1];
      const G& b = gs[p];
      const double cost =
          info(a.pos + b.pos, a.neg + b.neg) - info(a.pos, a.neg) - info(b.pos, b.neg);
      if (cost < best_cost) {
        best_cost = cost;
        best = p;
      }
    }
    G& a = gs[best - 1];
    a.pos += gs[best].pos;
    a.neg += gs[best].neg;
    a.idx.insert(a.idx.end(), gs[best].idx.begin(), gs[best].idx.end());
    gs.erase(gs.begin() + static_cast<std::ptrdiff_t>(best));
  }
  Groups out;
  for (auto& g : gs) out.push_back(g.idx);
  return out;
}

TEST(CategoryBinningTest, NoMergeKeepsInputOrder) {
  const std::vector<CategoryStats> cats{Cat("b", 9, 1), Cat("a", 1, 9), Cat("c", 5, 5)};
  const Groups identity{{0}, {1}, {2}};
  EXPECT_EQ(MergeCategoriesByPositiveRate(cats, 0), identity);
  EXPECT_EQ(MergeCategoriesByPositiveRate(cats, -1), identity);
  EXPECT_EQ(MergeCategoriesByPositiveRate(cats, 3), identity);
  EXPECT_EQ(MergeCategoriesByPositiveRate(cats, 10), identity);
  EXPECT_TRUE(MergeCategoriesByPositiveRate({}, 2).empty());
}

// A 10/90 (rate .10), B 50/50 (.50), C 12/88 (.12), D 90/10 (.90); N = 400.
// Sorted: A, C, B, D. Information cost of merging neighbours (bits, weighted
// by share of rows): A+C 0.00037, C+B 0.0642, B+D 0.0734, so A and C merge
// first. Then {A,C}+B costs 0.0963 (rate .24 over 300 rows) and B+D 0.0734
// (rate .70 over 200 rows): B and D merge.
TEST(CategoryBinningTest, HandComputedMerges) {
  const std::vector<CategoryStats> cats{Cat("A", 10, 90), Cat("B", 50, 50), Cat("C", 12, 88),
                                        Cat("D", 90, 10)};
  EXPECT_EQ(MergeCategoriesByPositiveRate(cats, 3), (Groups{{0, 2}, {1}, {3}}));
  EXPECT_EQ(MergeCategoriesByPositiveRate(cats, 2), (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(MergeCategoriesByPositiveRate(cats, 1), (Groups{{0, 2, 1, 3}}));
  const auto groups = MergeCategoriesByPositiveRate(cats, 2);
  EXPECT_EQ(MergedCategoryName(cats, groups[0]), "A@^C");
  EXPECT_EQ(MergedCategoryName(cats, groups[1]), "B@^D");
}

TEST(CategoryBinningTest, MatchesReferenceOnRandomInputs) {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> count(0, 200);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<CategoryStats> cats;
    const int k = 5 + trial * 3;
    for (int i = 0; i < k; ++i) {
      double pos = count(rng), neg = count(rng);
      if (pos + neg == 0) neg = 1;
      if (i % 7 == 3) pos = cats.empty() ? pos : cats.back().count_pos;  // rate ties
      if (i % 7 == 3) neg = cats.empty() ? neg : cats.back().count_neg;
      cats.push_back(Cat("v" + std::to_string(i), pos, neg));
    }
    for (int max_bins : {1, 2, 4, 10}) {
      if (k <= max_bins) continue;
      EXPECT_EQ(MergeCategoriesByPositiveRate(cats, max_bins), Reference(cats, max_bins))
          << "trial " << trial << " max_bins " << max_bins;
    }
  }
}

TEST(CategoryBinningTest, ManyCategoriesPartitionInRateOrder) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> count(1, 1000);
  std::vector<CategoryStats> cats;
  for (int i = 0; i < 10000; ++i) cats.push_back(Cat(std::to_string(i), count(rng), count(rng)));
  const auto groups = MergeCategoriesByPositiveRate(cats, 10);
  ASSERT_EQ(groups.size(), 10u);
  std::vector<int> seen(cats.size(), 0);
  double previous_rate = -1;
  for (const auto& g : groups) {
    ASSERT_FALSE(g.empty());
    for (size_t i : g) {
      ++seen[i];
      const double rate = cats[i].count_pos / (cats[i].count_pos + cats[i].count_neg);
      EXPECT_GE(rate, previous_rate);
      previous_rate = rate;
    }
  }
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(CategoryBinningTest, NamesJoinAndSplit) {
  EXPECT_EQ(MergedCategoryName(std::vector<std::string>{"US", "CA", "MX"}), "US@^CA@^MX");
  EXPECT_EQ(MergedCategoryName(std::vector<std::string>{"solo"}), "solo");
  EXPECT_EQ(MergedCategoryName(std::vector<std::string>{}), "");
  EXPECT_EQ(SplitMergedCategoryName("US@^CA@^MX"), (std::vector<std::string>{"US", "CA", "MX"}));
  EXPECT_EQ(SplitMergedCategoryName("solo"), (std::vector<std::string>{"solo"}));
  EXPECT_EQ(SplitMergedCategoryName("a@b^c"), (std::vector<std::string>{"a@b^c"}));
}

}  // namespace
}  // namespace tarn::stats
