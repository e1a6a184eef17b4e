// Binary-classification performance of a scored data set, as Shifu's eval
// computes it (ConfusionMatrix.bufferedComputeConfusionMatrixAndPerformance,
// PerformanceEvaluator.setPerformanceObject): records sorted by score,
// descending, are taken one at a time as "actioned", each moving one count from
// FN to TP (a positive) or from TN to FP (a negative), unweighted and weighted,
// and an operating point is kept each time a rate crosses the next 1/B step.
//
// Lists (B = bucket_num; each starts with the "nothing actioned" point, binNum 0):
//   roc            by fpr             (Shifu's FPRList)
//   pr             by recall          (catchRateList)
//   gains          by action rate     (gainList, records actioned / records)
//   weighted_*     the same by the weighted rates
//   model_score_list  by score: max − k·(max − min)/B, k = 1..B
//
// Differences from Shifu, where Shifu has evident bugs:
//  - Shifu adds one shared object to several lists and then overwrites its
//    binNum; here each list holds its own copy with its own bin number.
//  - A record that crosses several steps at once (few records, heavy weights)
//    makes Shifu emit one point and then further points at later records; here
//    the same point is kept once per step crossed, so every list whose
//    denominator is non-zero has exactly B + 1 entries.
//  - Shifu compares rate >= k·(1/B) in floating point, which misses exact
//    steps (0.3 < 3·0.1); here the unweighted tests are exact integer tests and
//    the weighted ones allow a 1e-9 relative slack.
//
// AUCs. areaUnderRoc, weightedAreaUnderRoc, areaUnderPr and
// weightedAreaUnderPr are Shifu's (AreaUnderCurve.ofRoc / ofWeightedRoc /
// ofPr / ofWeightedPr): trapezoids over the B + 1 points of the roc,
// weightedRoc, pr and weightedPr lists (fpr / recall, recall / precision).
// They depend on B and lie below the true area where the curve bends inside
// a bucket (a good model's ROC rises steeply before fpr 1/B). tarn also
// writes the exact areas (exactAreaUnderRoc, exactWeightedAreaUnderRoc,
// exactAreaUnderPr, exactWeightedAreaUnderPr): trapezoids over every
// distinct-score point of the full curve, tied scores taken as one step, so
// the exact ROC AUC equals the Mann-Whitney U / (P·N) (ties count one half).
// Both PR curves start at (recall 0, precision 1), Shifu's first point.
//
// binLowestScore of the roc, pr and gains lists is the score rounded to six
// decimals, as Shifu's ConfusionMatrix stores it (DecimalFormat "#.######").
//
// More differences from Shifu:
//  - Ratios with a zero denominator (Shifu's NaN / Infinity) are 0, except the
//    first point's precision, which is 1 as in Shifu.
//  - model_score_list: Shifu keeps the record at which the score first drops
//    to a step (that record included); here point k counts the records with
//    score >= max − k·step, its binLowestScore is that threshold, and
//    scoreCount/scoreWgtCount count the records of that score band.
#pragma once

#include <optional>  // for optional
#include <string>    // for string
#include <vector>    // for vector

#include "common/status.h"
#include "data/json_fields.h"

namespace tarn::stats {

using data::Json;

/// Version string written into EvalPerformance.json (Shifu's Constants.version).
inline constexpr const char* kPerformanceVersion = "0.13.0";

struct ScoredRecord {
  double score = 0.0;
  int target = 0;  // 1 positive, 0 negative
  double weight = 1.0;
};

/// One operating point; field names follow Shifu's PerformanceObject.
struct PerformanceObject {
  int bin_num = 0;
  double bin_lowest_score = 0.0;                         // score of the last record actioned
  double action_rate = 0.0, weighted_action_rate = 0.0;  // (tp + fp) / total
  double recall = 0.0, weighted_recall = 0.0;            // tp / (tp + fn)
  double precision = 0.0, weighted_precision = 0.0;      // tp / (tp + fp)
  double fpr = 0.0, weighted_fpr = 0.0;                  // fp / (fp + tn)
  double ftpr = 0.0, weighted_ftpr = 0.0;                // fp / tp
  double lift_unit = 0.0, weight_lift_unit = 0.0;        // precision / (positives / total)
  double score_count = 0.0, score_wgt_count = 0.0;       // model_score_list only
  double tp = 0.0, fp = 0.0, tn = 0.0, fn = 0.0;
  double weighted_tp = 0.0, weighted_fp = 0.0, weighted_tn = 0.0, weighted_fn = 0.0;
};

/// A point of the full (thinned) curve, for charts; not part of Shifu's JSON.
struct CurvePoint {
  double action_rate = 0.0, recall = 0.0, precision = 0.0, fpr = 0.0, lift = 0.0, score = 0.0;
};

struct PerformanceResult {
  int bucket_num = 0;
  // Shifu's: trapezoids over the bucket lists (see the top of this file).
  double area_under_roc = 0.0, weighted_area_under_roc = 0.0;
  double area_under_pr = 0.0, weighted_area_under_pr = 0.0;
  // Exact, over every distinct score.
  double exact_area_under_roc = 0.0, exact_weighted_area_under_roc = 0.0;
  double exact_area_under_pr = 0.0, exact_weighted_area_under_pr = 0.0;
  // Kolmogorov-Smirnov: the largest recall - fpr over every distinct score,
  // and the lowest score actioned there (not in the JSON; the curves only).
  double ks = 0.0, weighted_ks = 0.0;
  double ks_score = 0.0, weighted_ks_score = 0.0;
  std::vector<PerformanceObject> roc, pr, gains;
  std::vector<PerformanceObject> weighted_roc, weighted_pr, weighted_gains;
  std::vector<PerformanceObject> model_score_list;
  double mape = 0.0, rmse = 0.0;  // Shifu's linear-target fields; 0 here

  // At most a few hundred points of the full curves, at distinct scores.
  std::vector<CurvePoint> curve, weighted_curve;

  long long total = 0, positives = 0;
  double weighted_total = 0.0, weighted_positives = 0.0;
  long long skipped = 0;                    // records dropped: NaN score or target not 0/1
  bool weighted = false;                    // some weight differs from 1
  double max_score = 0.0, min_score = 0.0;  // the model_score_list range
};

struct PerformanceOptions {
  int bucket_num = 10;  // Shifu's performanceBucketNum; values < 1 count as 1
  /// Range of the model_score_list thresholds and the score of the first
  /// point. Shifu uses [0, scoreScale]; unset means the observed max / min.
  std::optional<double> max_score, min_score;
};

/// Drops records with a NaN score or a target other than 0/1 (returns how
/// many), sets negative or non-finite weights to 1 (as Shifu's eval does) and
/// sorts by score descending; tied scores keep their input order.
long long PrepareRecords(std::vector<ScoredRecord>* records);

/// Evaluates records already passed through PrepareRecords.
PerformanceResult EvaluateSorted(const std::vector<ScoredRecord>& sorted,
                                 const PerformanceOptions& options);

/// PrepareRecords then EvaluateSorted.
PerformanceResult EvaluatePerformance(std::vector<ScoredRecord> records,
                                      const PerformanceOptions& options);
PerformanceResult EvaluatePerformance(std::vector<ScoredRecord> records, int bucket_num);

/// One line of Shifu's EvalConfusionMatrix.
struct ConfusionRow {
  double tp = 0.0, fp = 0.0, fn = 0.0, tn = 0.0;
  double weighted_tp = 0.0, weighted_fp = 0.0, weighted_fn = 0.0, weighted_tn = 0.0;
  double score = 0.0;
};

/// Shifu's ConfusionMatrixCalculator: the initial row (nothing actioned, with
/// `initial_score`; Shifu writes 1000), then one row per record of `sorted`.
template <typename Fn>
void ForEachConfusionRow(const std::vector<ScoredRecord>& sorted, double initial_score, Fn&& fn);

/// EvalPerformance.json, with Shifu's field names and order.
Json PerformanceToJson(const PerformanceResult& r);
Json PerformanceObjectToJson(const PerformanceObject& po);
/// Reads EvalPerformance.json back (Shifu's or tarn's); the curves stay empty.
Result<PerformanceResult> PerformanceFromJson(const Json& j);

// ---- implementation ----

template <typename Fn>
void ForEachConfusionRow(const std::vector<ScoredRecord>& sorted, double initial_score, Fn&& fn) {
  ConfusionRow row;
  for (const ScoredRecord& r : sorted) {
    if (r.target == 1) {
      row.fn += 1.0;
      row.weighted_fn += r.weight;
    } else {
      row.tn += 1.0;
      row.weighted_tn += r.weight;
    }
  }
  row.score = initial_score;
  fn(static_cast<const ConfusionRow&>(row));
  for (const ScoredRecord& r : sorted) {
    if (r.target == 1) {
      row.tp += 1.0;
      row.fn -= 1.0;
      row.weighted_tp += r.weight;
      row.weighted_fn -= r.weight;
    } else {
      row.fp += 1.0;
      row.tn -= 1.0;
      row.weighted_fp += r.weight;
      row.weighted_tn -= r.weight;
    }
    // Running sums drift: a class with no record left has weight exactly 0.
    if (row.fn == 0.0 || row.weighted_fn < 0.0) row.weighted_fn = 0.0;
    if (row.tn == 0.0 || row.weighted_tn < 0.0) row.weighted_tn = 0.0;
    row.score = r.score;
    fn(static_cast<const ConfusionRow&>(row));
  }
}

}  // namespace tarn::stats
