// Files of an eval set (Shifu's evals/<E>/), written from a PerformanceResult:
//
//   EvalPerformance.json            Shifu's PerformanceResult JSON
//   EvalConfusionMatrix             Shifu's ConfusionMatrixCalculator lines,
//                                   tp|fp|fn|tn|wtp|wfp|wfn|wtn|score, one for
//                                   "nothing actioned" and one per record
//                                   (only when the sorted records are given)
//   <E>_unit_wise_gainchart.csv     Shifu's GainChart.generateCsv of gains,
//   <E>_unit_wise_pr.csv            pr, roc and modelScoreList; the weighted_*
//   <E>_unit_wise_roc.csv           ones only when the data set has a weight
//   <E>_modelscore_gainchart.csv    column, as Shifu
//   <E>_weighted_{gainchart,pr,roc}.csv
//   <E>_gainchart.csv               tarn's gains table, lift included
//   <E>_report.html                 a self-contained page (inline SVG and CSS,
//                                   no scripts, no network): the model and its
//                                   training, each bag's AUC, KS, ROC, PR,
//                                   gain/lift, KS and score-distribution
//                                   charts and the gains table; it
//                                   replaces Shifu's Highcharts pages
//                                   <E>_gainchart.html and <E>_prroc.html
//
// Every file is written atomically.
#pragma once

#include <string>  // for string
#include <vector>  // for vector

#include "common/status.h"
#include "model/model_file.h"
#include "stats/performance.h"

namespace tarn::pipeline {

/// One bag's model, as the report describes it.
struct EvalModelSummary {
  std::string name;                        // "model0"
  const model::ModelFile* file = nullptr;  // spec, columns, training metadata
  double area_under_roc = 0.0;             // Shifu's bucketed area, this bag alone
  double exact_area_under_roc = 0.0;
};

struct EvalReportInput {
  std::string eval_name;
  std::string model_set_name;
  const stats::PerformanceResult* perf = nullptr;
  /// Records as stats::PrepareRecords leaves them (sorted, score descending).
  /// When set, EvalConfusionMatrix is written.
  const std::vector<stats::ScoredRecord>* sorted_records = nullptr;
  /// Score on EvalConfusionMatrix's first line (Shifu writes 1000).
  double score_scale = 1000.0;
  /// The eval data set names a weight column: Shifu writes the weighted CSVs
  /// only then. The report shows weighted curves when this is set or when
  /// perf->weighted.
  bool has_weight_column = false;
  /// performanceScoreSelector (mean, max, min, median): the score ranked.
  std::string score_selector = "mean";
  /// Every bag, in model order; the report summarizes the model and its
  /// training from the first and lists each bag's AUC and errors.
  std::vector<EvalModelSummary> models;
};

Status WriteEvalReport(const std::string& dir, const EvalReportInput& in);

// Pieces, exposed for tests and for `eval -confmat` / `-perf`.

/// Writes EvalConfusionMatrix to `path`, streaming.
Status WriteConfusionMatrix(const std::string& path, const std::vector<stats::ScoredRecord>& sorted,
                            double initial_score);
/// Shifu's GainChart CSV: ActionRate,WeightedActionRate,Recall,WeightedRecall,
/// Precision,WeightedPrecision,FPR,WeightedFPR,BinLowestScore; rates as
/// DecimalFormat("#.####"), the score as Java's Double.toString.
std::string ShifuGainChartCsv(const std::vector<stats::PerformanceObject>& list);
/// tarn's gains table, one row per bucket of `gains` (bin 0 excluded).
std::string GainsTableCsv(const std::vector<stats::PerformanceObject>& gains);
/// The HTML report.
std::string RenderEvalHtml(const EvalReportInput& in);

/// Java's Double.toString ("1.0", "0.25", "1.0E7", "1.0E-4").
std::string JavaDoubleString(double v);
/// Shifu's gain chart numbers: at most four decimals, no trailing zeros, a
/// leading zero (0.2379, as a real Shifu 0.12.0 run writes them).
std::string DecimalFormat4(double v);

}  // namespace tarn::pipeline
