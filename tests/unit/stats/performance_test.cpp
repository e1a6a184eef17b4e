#include "stats/performance.h"

#include <gtest/gtest.h>

#include <random>  // for mt19937_64
#include <string>  // for string
#include <vector>  // for vector

namespace tarn::stats {
namespace {

std::vector<ScoredRecord> Records(const std::vector<std::pair<double, int>>& st) {
  std::vector<ScoredRecord> out;
  for (const auto& [score, target] : st) out.push_back({score, target, 1.0});
  return out;
}

// O(n^2) Mann-Whitney reference: sum over (positive, negative) pairs of
// w_p·w_n·[1 if the positive scores higher, 1/2 if tied], over Σw_p·Σw_n.
double MannWhitney(const std::vector<ScoredRecord>& records, bool weighted) {
  double num = 0.0, wp = 0.0, wn = 0.0;
  for (const ScoredRecord& r : records) (r.target == 1 ? wp : wn) += weighted ? r.weight : 1.0;
  for (const ScoredRecord& p : records) {
    if (p.target != 1) continue;
    for (const ScoredRecord& n : records) {
      if (n.target != 0) continue;
      const double w = weighted ? p.weight * n.weight : 1.0;
      if (p.score > n.score) num += w;
      if (p.score == n.score) num += 0.5 * w;
    }
  }
  return num / (wp * wn);
}

std::vector<ScoredRecord> RandomRecords(size_t n, uint64_t seed, bool ties) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<ScoredRecord> out;
  for (size_t i = 0; i < n; ++i) {
    const int target = u(rng) < 0.3 ? 1 : 0;
    // A weakly informative score: positives are shifted up.
    double score = u(rng) + (target ? 0.35 : 0.0);
    if (ties) score = std::round(score * 20.0) / 20.0;
    out.push_back({score * 1000.0, target, 0.1 + 3.0 * u(rng)});
  }
  return out;
}

TEST(PerformanceAucTest, PerfectRankingIsOne) {
  auto r = EvaluatePerformance(Records({{0.9, 1}, {0.8, 1}, {0.3, 0}, {0.1, 0}}), 10);
  EXPECT_DOUBLE_EQ(r.exact_area_under_roc, 1.0);
  EXPECT_DOUBLE_EQ(r.exact_weighted_area_under_roc, 1.0);
  // PR: (0,1) (0.5,1) (1,1) then recall stays 1 while precision falls: area 1.
  EXPECT_DOUBLE_EQ(r.exact_area_under_pr, 1.0);
}

TEST(PerformanceAucTest, ReversedRankingIsZero) {
  auto r = EvaluatePerformance(Records({{0.9, 0}, {0.8, 0}, {0.3, 1}, {0.1, 1}}), 10);
  EXPECT_DOUBLE_EQ(r.exact_area_under_roc, 0.0);
  // PR: (0,1) (0,0) (0,0) (0.5,1/3) (1,1/2): 0.5·(0+1/3)/2 + 0.5·(1/3+1/2)/2.
  EXPECT_NEAR(r.exact_area_under_pr, 0.25 * (1.0 / 3.0) + 0.25 * (5.0 / 6.0), 1e-12);
}

TEST(PerformanceAucTest, AllTiesIsOneHalf) {
  auto r = EvaluatePerformance(Records({{5, 1}, {5, 0}, {5, 0}, {5, 1}, {5, 0}}), 10);
  EXPECT_DOUBLE_EQ(r.exact_area_under_roc, 0.5);
  // One step from (0, 1) to (recall 1, precision 2/5): (1 + 0.4) / 2.
  EXPECT_DOUBLE_EQ(r.exact_area_under_pr, 0.7);
}

// Six records, P = N = 3, with one tie between a positive and a negative:
//   0.9 P | 0.8 N | 0.7 P, 0.7 N (tied) | 0.5 P | 0.2 N
// Mann-Whitney: 0.9 beats all 3 negatives (3); 0.7 ties 0.7 and beats 0.2
// (1.5); 0.5 beats 0.2 (1). U = 5.5, AUC = 5.5 / 9 = 11/18.
// ROC points (fpr, tpr): (0,0) (0,1/3) (1/3,1/3) (2/3,2/3) (2/3,1) (1,1);
// trapezoids 0 + 1/9 + 1/6 + 0 + 1/3 = 11/18.
// PR points (recall, precision): (0,1) (1/3,1) (1/3,1/2) (2/3,1/2) (1,3/5)
// (1,1/2); trapezoids 1/3 + 0 + 1/6 + 11/60 + 0 = 41/60.
std::vector<ScoredRecord> SixRecords() {
  return Records({{0.5, 1}, {0.9, 1}, {0.7, 0}, {0.2, 0}, {0.8, 0}, {0.7, 1}});
}

TEST(PerformanceAucTest, SixRecordsByHand) {
  auto r = EvaluatePerformance(SixRecords(), 10);
  EXPECT_NEAR(r.exact_area_under_roc, 11.0 / 18.0, 1e-12);
  EXPECT_NEAR(r.exact_area_under_pr, 41.0 / 60.0, 1e-12);
  EXPECT_NEAR(r.exact_weighted_area_under_roc, 11.0 / 18.0, 1e-12);
  EXPECT_NEAR(r.exact_weighted_area_under_pr, 41.0 / 60.0, 1e-12);
  EXPECT_EQ(r.total, 6);
  EXPECT_EQ(r.positives, 3);
  // The tie order does not change the AUC.
  auto records = SixRecords();
  std::swap(records[2], records[5]);
  EXPECT_NEAR(EvaluatePerformance(records, 10).exact_area_under_roc, 11.0 / 18.0, 1e-12);
}

// The six records with the 0.8 negative weighted 3: Σw_n = 5, Σw_p = 3.
// Weighted U: 0.9 beats 3 + 1 + 1 = 5; 0.7 ties (0.5) and beats 0.2 (1);
// 0.5 beats 0.2 (1). 7.5 / 15 = 0.5, while unweighted stays 11/18.
TEST(PerformanceAucTest, WeightsChangeTheAuc) {
  auto records = SixRecords();
  for (auto& rec : records) {
    if (rec.score == 0.8) rec.weight = 3.0;
  }
  auto r = EvaluatePerformance(records, 10);
  EXPECT_TRUE(r.weighted);
  EXPECT_NEAR(r.exact_area_under_roc, 11.0 / 18.0, 1e-12);
  EXPECT_NEAR(r.exact_weighted_area_under_roc, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(r.weighted_total, 8.0);
  EXPECT_DOUBLE_EQ(r.weighted_positives, 3.0);
}

TEST(PerformanceAucTest, EqualsMannWhitneyOnRandomData) {
  for (bool ties : {false, true}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      auto records = RandomRecords(700, seed, ties);
      auto r = EvaluatePerformance(records, 10);
      EXPECT_NEAR(r.exact_area_under_roc, MannWhitney(records, false), 1e-10) << seed << ties;
      EXPECT_NEAR(r.exact_weighted_area_under_roc, MannWhitney(records, true), 1e-10)
          << seed << ties;
      EXPECT_GT(r.exact_area_under_roc, 0.6);
      EXPECT_LT(r.exact_area_under_roc, 1.0);
    }
  }
}

// Shifu's areaUnderRoc / areaUnderPr: trapezoids over the bucket points only.
// The six records sorted (ties keep input order): 0.9 P, 0.8 N, 0.7 N, 0.7 P,
// 0.5 P, 0.2 N. Two buckets, P = N = 3:
//   roc: (0,0), fp reaches 2 >= 1.5 at 0.7 N (tp 1): (2/3, 1/3), then (1, 1):
//        (0 + 1/3)·(2/3)/2 + (1/3 + 1)·(1/3)/2 = 1/9 + 2/9 = 1/3
//   pr:  (0,1), tp reaches 2 at 0.7 P (fp 2): (2/3, 1/2), then 0.5 P: (1, 3/5):
//        (1 + 1/2)·(2/3)/2 + (1/2 + 3/5)·(1/3)/2 = 1/2 + 11/60 = 41/60
TEST(PerformanceAucTest, ShifusAreasAreTrapezoidsOverTheBucketPoints) {
  auto r = EvaluatePerformance(SixRecords(), 2);
  ASSERT_EQ(r.roc.size(), 3u);
  EXPECT_NEAR(r.roc[1].fpr, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.roc[1].recall, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.area_under_roc, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.weighted_area_under_roc, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.area_under_pr, 41.0 / 60.0, 1e-12);
  EXPECT_NEAR(r.exact_area_under_roc, 11.0 / 18.0, 1e-12);  // the same records, every point
  // Three buckets: a point at every negative, (1/3,1/3) (2/3,1/3) (1,1), so
  // 1/18 + 2/18 + 4/18; the rise before the first negative is still cut.
  auto fine = EvaluatePerformance(SixRecords(), 3);
  EXPECT_NEAR(fine.area_under_roc, 7.0 / 18.0, 1e-12);
}

// A strong model's ROC rises inside the first bucket: Shifu's area lies well
// below the exact one (cancer-judgement: 0.9345 against 0.977).
TEST(PerformanceAucTest, CoarseBucketsUnderstateAStrongModel) {
  std::vector<ScoredRecord> records;
  for (int i = 0; i < 1000; ++i) {
    const int target = i % 3 == 0 ? 1 : 0;
    // Positives mostly above negatives, a few below.
    const double score = target ? (i % 90 == 0 ? 100 + i % 7 : 900 + i % 97) : 50 + (i % 800);
    records.push_back({score, target, 1.0});
  }
  auto r = EvaluatePerformance(records, 10);
  EXPECT_GT(r.exact_area_under_roc, 0.95);
  EXPECT_LT(r.area_under_roc, r.exact_area_under_roc - 0.03);
  double area = 0.0;
  for (size_t i = 1; i < r.roc.size(); ++i) {
    area += (r.roc[i].recall + r.roc[i - 1].recall) * (r.roc[i].fpr - r.roc[i - 1].fpr) / 2;
  }
  EXPECT_NEAR(r.area_under_roc, area, 1e-12);
}

// KS = max(recall - fpr) over distinct scores. 0.9 P, 0.8 P, 0.7 N, 0.6 N,
// 0.5 P, 0.4 N: 1/3, 2/3, 1/3, 0, 1/3, 0; the widest gap is after 0.8.
TEST(PerformanceAucTest, KsIsTheWidestGapBetweenTheClasses) {
  auto records = Records({{0.9, 1}, {0.8, 1}, {0.7, 0}, {0.6, 0}, {0.5, 1}, {0.4, 0}});
  records[4].weight = 5.0;  // weighted: recall after 0.8 is 2/7, after 0.5 is 1
  auto r = EvaluatePerformance(records, 10);
  EXPECT_NEAR(r.ks, 2.0 / 3.0, 1e-12);
  EXPECT_EQ(r.ks_score, 0.8);
  EXPECT_NEAR(r.weighted_ks, 1.0 / 3.0, 1e-12);  // 1 - 2/3 after 0.5
  EXPECT_EQ(r.weighted_ks_score, 0.5);
}

TEST(PerformanceAucTest, BucketScoresHaveSixDecimalsAsShifu) {
  auto r = EvaluatePerformance(Records({{912.34567891, 1}, {12.5000004, 0}}), 1);
  ASSERT_EQ(r.gains.size(), 2u);
  EXPECT_EQ(r.gains[1].bin_lowest_score, 12.5);
  EXPECT_EQ(r.pr[1].bin_lowest_score, 912.345679);
}

TEST(PerformanceAucTest, DegenerateClassesGiveZero) {
  auto r = EvaluatePerformance(Records({{0.9, 1}, {0.1, 1}}), 10);
  EXPECT_EQ(r.area_under_roc, 0.0);
  EXPECT_EQ(r.roc.size(), 1u);  // fpr is undefined: only the first point
  EXPECT_EQ(r.pr.size(), 11u);
  auto empty = EvaluatePerformance({}, 10);
  EXPECT_EQ(empty.area_under_roc, 0.0);
  EXPECT_EQ(empty.gains.size(), 1u);
  EXPECT_EQ(empty.model_score_list.size(), 11u);
}

void ExpectMonotone(const std::vector<PerformanceObject>& list, double PerformanceObject::*f,
                    const char* what) {
  for (size_t i = 1; i < list.size(); ++i) {
    EXPECT_LE(list[i - 1].*f, list[i].*f) << what << " at " << i;
  }
}

TEST(PerformanceBucketsTest, CountsAndMonotoneFields) {
  auto records = RandomRecords(1000, 7, true);
  auto r = EvaluatePerformance(records, 10);
  for (const auto* list : {&r.roc, &r.pr, &r.gains, &r.weighted_roc, &r.weighted_pr,
                           &r.weighted_gains, &r.model_score_list}) {
    ASSERT_EQ(list->size(), 11u);
    for (size_t k = 0; k < list->size(); ++k) EXPECT_EQ((*list)[k].bin_num, static_cast<int>(k));
    ExpectMonotone(*list, &PerformanceObject::action_rate, "action_rate");
    ExpectMonotone(*list, &PerformanceObject::recall, "recall");
    ExpectMonotone(*list, &PerformanceObject::fpr, "fpr");
    ExpectMonotone(*list, &PerformanceObject::tp, "tp");
    ExpectMonotone(*list, &PerformanceObject::weighted_fp, "weighted_fp");
    EXPECT_EQ(list->front().tp, 0.0);
    EXPECT_EQ(list->front().precision, 1.0);
  }
  // The last point: every record (gains, scores), every positive (pr), every
  // negative (roc).
  EXPECT_EQ(r.gains.back().tp + r.gains.back().fp, 1000.0);
  EXPECT_EQ(r.model_score_list.back().tp + r.model_score_list.back().fp, 1000.0);
  EXPECT_NEAR(r.weighted_gains.back().weighted_action_rate, 1.0, 1e-12);
  EXPECT_EQ(r.pr.back().recall, 1.0);
  EXPECT_EQ(r.roc.back().fpr, 1.0);
  EXPECT_NEAR(r.weighted_pr.back().weighted_recall, 1.0, 1e-12);
  EXPECT_NEAR(r.weighted_roc.back().weighted_fpr, 1.0, 1e-12);
  // Each list's point k is the first record at which its rate reaches k/10.
  for (int k = 1; k <= 10; ++k) {
    EXPECT_GE(r.roc[k].fpr, k / 10.0 - 1e-12);
    EXPECT_GE(r.pr[k].recall, k / 10.0 - 1e-12);
    EXPECT_DOUBLE_EQ(r.gains[k].action_rate, k / 10.0);  // 1000 records: exact
    EXPECT_GE(r.weighted_roc[k].weighted_fpr, k / 10.0 - 1e-9);
    EXPECT_GE(r.weighted_pr[k].weighted_recall, k / 10.0 - 1e-9);
    EXPECT_GE(r.weighted_gains[k].weighted_action_rate, k / 10.0 - 1e-9);
    // Scores fall along every list.
    EXPECT_GE(r.gains[k - 1].bin_lowest_score, r.gains[k].bin_lowest_score);
    // One record earlier the rate was below the step.
    const auto& prev = r.pr[k];
    EXPECT_LT((prev.tp - 1) / (prev.tp + prev.fn), k / 10.0 + 1e-12);
  }
  // Lift of the first decile above 1 for an informative score.
  EXPECT_GT(r.gains[1].lift_unit, 1.2);
  EXPECT_NEAR(r.gains[10].lift_unit, 1.0, 1e-12);
}

TEST(PerformanceBucketsTest, ExactStepsAndMultipleCrossings) {
  // Ten records, ten buckets: gains point k is record k (Shifu's float test
  // 3/10 >= 3·0.1 would miss it).
  std::vector<ScoredRecord> ten;
  for (int i = 0; i < 10; ++i) ten.push_back({100.0 - i, i % 2, 1.0});
  auto r = EvaluatePerformance(ten, 10);
  for (int k = 0; k <= 10; ++k) EXPECT_EQ(r.gains[k].tp + r.gains[k].fp, k) << k;
  // Three records, ten buckets: each step crossed still gets its point.
  auto three = EvaluatePerformance(Records({{3, 1}, {2, 0}, {1, 1}}), 10);
  ASSERT_EQ(three.gains.size(), 11u);
  EXPECT_EQ(three.gains[3].tp + three.gains[3].fp, 1.0);  // 1/3 >= 0.3
  EXPECT_EQ(three.gains[4].tp + three.gains[4].fp, 2.0);
  ASSERT_EQ(three.roc.size(), 11u);
  EXPECT_EQ(three.roc[1].fp, 1.0);
  EXPECT_EQ(three.roc[10].fp, 1.0);
}

TEST(PerformanceBucketsTest, ModelScoreList) {
  auto records = RandomRecords(500, 11, false);
  PerformanceOptions opt;
  opt.bucket_num = 5;
  opt.max_score = 1400.0;
  opt.min_score = 0.0;
  auto r = EvaluatePerformance(records, opt);
  ASSERT_EQ(r.model_score_list.size(), 6u);
  double count = 0.0, weight = 0.0, expect_weight = 0.0;
  for (const auto& rec : records) expect_weight += rec.weight;
  for (size_t k = 1; k < r.model_score_list.size(); ++k) {
    const auto& po = r.model_score_list[k];
    EXPECT_DOUBLE_EQ(po.bin_lowest_score, 1400.0 - 280.0 * static_cast<double>(k));
    count += po.score_count;
    weight += po.score_wgt_count;
    // Point k actions exactly the records scoring at or above its threshold.
    double above = 0.0;
    for (const auto& rec : records) above += rec.score >= po.bin_lowest_score ? 1.0 : 0.0;
    EXPECT_EQ(po.tp + po.fp, above) << k;
  }
  EXPECT_EQ(count, 500.0);
  EXPECT_NEAR(weight, expect_weight, 1e-9);
  EXPECT_EQ(r.model_score_list[0].bin_lowest_score, 1400.0);
}

TEST(PerformanceBucketsTest, UnitWeightsMatchUnweighted) {
  auto records = RandomRecords(600, 5, true);
  for (auto& rec : records) rec.weight = 1.0;
  auto r = EvaluatePerformance(records, 20);
  EXPECT_FALSE(r.weighted);
  EXPECT_DOUBLE_EQ(r.area_under_roc, r.weighted_area_under_roc);
  EXPECT_DOUBLE_EQ(r.area_under_pr, r.weighted_area_under_pr);
  EXPECT_DOUBLE_EQ(r.exact_area_under_roc, r.exact_weighted_area_under_roc);
  EXPECT_DOUBLE_EQ(r.exact_area_under_pr, r.exact_weighted_area_under_pr);
  const std::vector<
      std::pair<const std::vector<PerformanceObject>*, const std::vector<PerformanceObject>*>>
      pairs = {{&r.roc, &r.weighted_roc}, {&r.pr, &r.weighted_pr}, {&r.gains, &r.weighted_gains}};
  for (const auto& [a, b] : pairs) {
    ASSERT_EQ(a->size(), b->size());
    for (size_t i = 0; i < a->size(); ++i) {
      const auto& x = (*a)[i];
      const auto& y = (*b)[i];
      EXPECT_EQ(x.tp, y.tp);
      EXPECT_EQ(x.fp, y.fp);
      EXPECT_DOUBLE_EQ(x.recall, y.weighted_recall);
      EXPECT_DOUBLE_EQ(x.fpr, y.weighted_fpr);
      EXPECT_DOUBLE_EQ(x.action_rate, y.weighted_action_rate);
      EXPECT_DOUBLE_EQ(x.precision, y.weighted_precision);
      EXPECT_DOUBLE_EQ(x.lift_unit, y.weight_lift_unit);
      EXPECT_DOUBLE_EQ(x.weighted_tp, x.tp);
    }
  }
}

TEST(PerformanceBucketsTest, PrepareDropsBadRecordsAndFixesWeights) {
  std::vector<ScoredRecord> records = {{0.5, 1, -2.0},
                                       {std::nan(""), 1, 1.0},
                                       {0.7, 2, 1.0},
                                       {0.9, 0, std::numeric_limits<double>::infinity()},
                                       {0.5, 0, 2.0}};
  const long long skipped = PrepareRecords(&records);
  EXPECT_EQ(skipped, 2);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].score, 0.9);
  EXPECT_EQ(records[0].weight, 1.0);
  EXPECT_EQ(records[1].target, 1);  // ties keep input order
  EXPECT_EQ(records[1].weight, 1.0);
  EXPECT_EQ(records[2].weight, 2.0);
}

TEST(PerformanceBucketsTest, CurveIsThinnedAndEndsAtOne) {
  auto r = EvaluatePerformance(RandomRecords(20000, 3, false), 10);
  EXPECT_LE(r.curve.size(), 1000u);
  EXPECT_GE(r.curve.size(), 100u);
  EXPECT_EQ(r.curve.front().recall, 0.0);
  EXPECT_DOUBLE_EQ(r.curve.back().recall, 1.0);
  EXPECT_DOUBLE_EQ(r.curve.back().fpr, 1.0);
  EXPECT_DOUBLE_EQ(r.weighted_curve.back().action_rate, 1.0);
}

TEST(PerformanceConfusionTest, RowsAsShifu) {
  std::vector<ScoredRecord> records = {{0.9, 1, 2.0}, {0.4, 0, 0.5}};
  std::vector<ConfusionRow> rows;
  ForEachConfusionRow(records, 1000.0, [&](const ConfusionRow& row) { rows.push_back(row); });
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].fn, 1.0);
  EXPECT_EQ(rows[0].tn, 1.0);
  EXPECT_EQ(rows[0].weighted_fn, 2.0);
  EXPECT_EQ(rows[0].score, 1000.0);
  EXPECT_EQ(rows[1].tp, 1.0);
  EXPECT_EQ(rows[1].fn, 0.0);
  EXPECT_EQ(rows[1].weighted_tp, 2.0);
  EXPECT_EQ(rows[1].score, 0.9);
  EXPECT_EQ(rows[2].fp, 1.0);
  EXPECT_EQ(rows[2].weighted_tn, 0.0);
}

TEST(PerformanceJsonTest, ShifuFieldNamesAndRoundTrip) {
  auto r = EvaluatePerformance(SixRecords(), 4);
  Json j = PerformanceToJson(r);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "version", "areaUnderRoc", "weightedAreaUnderRoc", "areaUnderPr",
                      "weightedAreaUnderPr", "exactAreaUnderRoc", "exactWeightedAreaUnderRoc",
                      "exactAreaUnderPr", "exactWeightedAreaUnderPr", "pr", "weightedPr", "roc",
                      "weightedRoc", "gains", "weightedGains", "modelScoreList", "mape", "rmse"}));
  EXPECT_EQ(j["version"], "0.13.0");
  const Json& po = j["gains"][1];
  std::vector<std::string> po_keys;
  for (auto it = po.begin(); it != po.end(); ++it) po_keys.push_back(it.key());
  EXPECT_EQ(po_keys, (std::vector<std::string>{"binNum",     "binLowestScore",
                                               "actionRate", "weightedActionRate",
                                               "recall",     "weightedRecall",
                                               "precision",  "weightedPrecision",
                                               "fpr",        "weightedFpr",
                                               "ftpr",       "weightedFtpr",
                                               "liftUnit",   "weightLiftUnit",
                                               "scoreCount", "scoreWgtCount",
                                               "tp",         "fp",
                                               "tn",         "fn",
                                               "weightedTp", "weightedFp",
                                               "weightedTn", "weightedFn"}));
  EXPECT_EQ(j["gains"].size(), 5u);
  EXPECT_EQ(po["binNum"], 1);

  auto back = PerformanceFromJson(Json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_DOUBLE_EQ(back->area_under_roc, r.area_under_roc);
  EXPECT_DOUBLE_EQ(back->exact_area_under_roc, r.exact_area_under_roc);
  EXPECT_EQ(back->gains.size(), r.gains.size());
  EXPECT_EQ(back->total, 6);
  EXPECT_EQ(back->positives, 3);
  EXPECT_EQ(back->bucket_num, 4);
  EXPECT_DOUBLE_EQ(back->pr[2].recall, r.pr[2].recall);
  EXPECT_EQ(PerformanceToJson(*back).dump(), j.dump());

  // Jackson writes NaN as a quoted string; it reads back.
  Json shifu = j;
  shifu["roc"][0]["fpr"] = "NaN";
  auto nan = PerformanceFromJson(shifu);
  ASSERT_TRUE(nan.ok());
  EXPECT_TRUE(std::isnan(nan->roc[0].fpr));
  shifu["roc"][0]["fpr"] = Json::array();
  EXPECT_FALSE(PerformanceFromJson(shifu).ok());
}

}  // namespace
}  // namespace tarn::stats
