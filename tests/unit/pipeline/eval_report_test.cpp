#include "pipeline/eval_report.h"

#include <gtest/gtest.h>

#include <filesystem>  // for directory_iterator
#include <random>      // for mt19937_64
#include <string>      // for string
#include <vector>      // for vector

#include "common/files.h"
#include "test_util.h"

namespace tarn::pipeline {
namespace {

using stats::ScoredRecord;

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::vector<ScoredRecord> SampleRecords(size_t n, bool weighted) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<ScoredRecord> out;
  for (size_t i = 0; i < n; ++i) {
    const int target = u(rng) < 0.25 ? 1 : 0;
    const double score = std::min(1.0, u(rng) * 0.8 + (target ? 0.25 : 0.0));
    out.push_back({std::round(score * 1000.0), target, weighted ? 0.5 + u(rng) : 1.0});
  }
  return out;
}

TEST(EvalReportFormatTest, JavaDoubleString) {
  EXPECT_EQ(JavaDoubleString(0.0), "0.0");
  EXPECT_EQ(JavaDoubleString(1.0), "1.0");
  EXPECT_EQ(JavaDoubleString(1000.0), "1000.0");
  EXPECT_EQ(JavaDoubleString(0.25), "0.25");
  EXPECT_EQ(JavaDoubleString(-2.5), "-2.5");
  EXPECT_EQ(JavaDoubleString(0.001), "0.001");
  EXPECT_EQ(JavaDoubleString(123456.789), "123456.789");
  EXPECT_EQ(JavaDoubleString(9999999.0), "9999999.0");
  EXPECT_EQ(JavaDoubleString(1e7), "1.0E7");
  EXPECT_EQ(JavaDoubleString(1.5e-4), "1.5E-4");
  EXPECT_EQ(JavaDoubleString(1.25e10), "1.25E10");
  EXPECT_EQ(JavaDoubleString(12345678.9), "1.23456789E7");
  EXPECT_EQ(JavaDoubleString(0.0005), "5.0E-4");
  EXPECT_EQ(JavaDoubleString(0.1), "0.1");
  EXPECT_EQ(JavaDoubleString(1234.5), "1234.5");
  EXPECT_EQ(JavaDoubleString(-3.0), "-3.0");
  EXPECT_EQ(JavaDoubleString(28855.061039823035), "28855.061039823035");
}

TEST(EvalReportFormatTest, DecimalFormat4) {
  EXPECT_EQ(DecimalFormat4(0.0), "0");
  EXPECT_EQ(DecimalFormat4(1.0), "1");
  EXPECT_EQ(DecimalFormat4(0.5), "0.5");  // Shifu 0.12.0 writes 0.2379, not .2379
  EXPECT_EQ(DecimalFormat4(0.123456), "0.1235");
  EXPECT_EQ(DecimalFormat4(-0.00001), "0");
  EXPECT_EQ(DecimalFormat4(2.00004), "2");
  EXPECT_EQ(DecimalFormat4(12.3), "12.3");
}

TEST(EvalReportTest, WritesAllFilesAtomically) {
  testing::TempDir tmp;
  auto records = SampleRecords(2000, true);
  stats::PrepareRecords(&records);
  stats::PerformanceOptions opt;
  opt.max_score = 1000.0;
  opt.min_score = 0.0;
  auto perf = stats::EvaluateSorted(records, opt);

  EvalReportInput in;
  in.eval_name = "Eval1";
  in.model_set_name = "cancer <judgement> & co";
  in.perf = &perf;
  in.sorted_records = &records;
  in.has_weight_column = true;
  const std::string dir = tmp.File("evals/Eval1");
  ASSERT_TRUE(WriteEvalReport(dir, in).ok());

  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "Eval1_gainchart.csv", "Eval1_modelscore_gainchart.csv", "Eval1_report.html",
                       "Eval1_unit_wise_gainchart.csv", "Eval1_unit_wise_pr.csv",
                       "Eval1_unit_wise_roc.csv", "Eval1_weighted_gainchart.csv",
                       "Eval1_weighted_pr.csv", "Eval1_weighted_roc.csv", "EvalConfusionMatrix",
                       "EvalPerformance.json"}));  // and no temporary files

  // EvalPerformance.json parses and carries the AUCs.
  auto json = ReadFile(dir + "/EvalPerformance.json");
  ASSERT_TRUE(json.ok());
  auto j = data::Json::parse(*json);
  EXPECT_DOUBLE_EQ(j["areaUnderRoc"].get<double>(), perf.area_under_roc);
  EXPECT_DOUBLE_EQ(j["exactAreaUnderRoc"].get<double>(), perf.exact_area_under_roc);
  EXPECT_EQ(j["gains"].size(), 11u);

  // EvalConfusionMatrix: Shifu's nine '|' fields, first line at 1000.
  auto cm = ReadFile(dir + "/EvalConfusionMatrix");
  ASSERT_TRUE(cm.ok());
  auto lines = Lines(*cm);
  ASSERT_EQ(lines.size(), records.size() + 1);
  EXPECT_EQ(Count(lines[0], "|"), 8u);
  EXPECT_EQ(lines[0].rfind("0.0|0.0|" + JavaDoubleString(perf.positives) + "|", 0), 0u);
  EXPECT_EQ(lines[0].substr(lines[0].rfind('|') + 1), "1000.0");
  EXPECT_EQ(lines.back().substr(0, lines.back().find('|')), JavaDoubleString(perf.positives));

  // Shifu's CSV.
  auto csv = ReadFile(dir + "/Eval1_unit_wise_gainchart.csv");
  ASSERT_TRUE(csv.ok());
  auto csv_lines = Lines(*csv);
  EXPECT_EQ(csv_lines[0],
            "ActionRate,WeightedActionRate,Recall,WeightedRecall,Precision,WeightedPrecision,FPR,"
            "WeightedFPR,BinLowestScore");
  EXPECT_EQ(csv_lines.size(), 12u);
  EXPECT_EQ(csv_lines[1], "0,0,0,0,1,1,0,0,1000.0");
  EXPECT_EQ(csv_lines[11].rfind("1,1,1,1,", 0), 0u);

  auto table = ReadFile(dir + "/Eval1_gainchart.csv");
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(Lines(*table).size(), 11u);
  EXPECT_EQ(Lines(*table)[0].rfind("Bucket,ActionRate,Recall,Precision,Lift,", 0), 0u);

  // The HTML: five inline charts (ROC, PR, gains, KS, score distribution),
  // nothing fetched, exact AUCs in the titles, Shifu's and exact ones and KS
  // in the summary.
  auto html = ReadFile(dir + "/Eval1_report.html");
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(Count(*html, "<svg"), 5u);
  EXPECT_EQ(Count(*html, "</svg>"), 5u);
  EXPECT_EQ(Count(*html, "http"), 0u);
  EXPECT_EQ(Count(*html, "<script"), 0u);
  char auc[96];
  std::snprintf(auc, sizeof(auc), "exact AUC %.4f", perf.exact_area_under_roc);
  EXPECT_NE(html->find(auc), std::string::npos) << auc;
  std::snprintf(auc, sizeof(auc), "exact AUC %.4f", perf.exact_area_under_pr);
  EXPECT_NE(html->find(auc), std::string::npos) << auc;
  std::snprintf(auc, sizeof(auc), "<td>%.4f (Shifu's, over 10 buckets; exact %.4f)",
                perf.area_under_roc, perf.exact_area_under_roc);
  EXPECT_NE(html->find(auc), std::string::npos) << auc;
  std::snprintf(auc, sizeof(auc), "<td>KS</td><td>%.4f", perf.ks);
  EXPECT_NE(html->find(auc), std::string::npos) << auc;
  EXPECT_GT(perf.ks, 0.1);
  EXPECT_NE(html->find("Score distribution of positives and negatives"), std::string::npos);
  EXPECT_NE(html->find("weighted"), std::string::npos);
  EXPECT_NE(html->find("cancer &lt;judgement&gt; &amp; co"), std::string::npos);
  EXPECT_EQ(html->find("<judgement>"), std::string::npos);
  EXPECT_EQ(Count(*html, "<html"), 1u);
  EXPECT_EQ(Count(*html, "</html>"), 1u);
  EXPECT_EQ(Count(*html, "<table"), Count(*html, "</table>"));
  EXPECT_EQ(Count(*html, "<tr>"), Count(*html, "</tr>"));

  // Rewriting replaces the files and still leaves no temporaries.
  ASSERT_TRUE(WriteEvalReport(dir, in).ok());
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos);
  }
  EXPECT_EQ(files, 11u);
}

TEST(EvalReportTest, UnweightedWithoutRecords) {
  testing::TempDir tmp;
  auto perf = stats::EvaluatePerformance(SampleRecords(300, false), 5);
  EvalReportInput in;
  in.eval_name = "E";
  in.model_set_name = "m";
  in.perf = &perf;
  ASSERT_TRUE(WriteEvalReport(tmp.path(), in).ok());
  EXPECT_FALSE(PathExists(tmp.File("EvalConfusionMatrix")));
  EXPECT_FALSE(PathExists(tmp.File("E_weighted_roc.csv")));
  EXPECT_TRUE(PathExists(tmp.File("E_unit_wise_roc.csv")));
  auto html = ReadFile(tmp.File("E_report.html"));
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(Count(*html, "<svg"), 4u);  // no score distribution without the records
  EXPECT_EQ(html->find("weighted"), std::string::npos);       // no weighted series or columns
  EXPECT_EQ(Count(*html, "<tr><td>"), 5u + 6u);               // 5 buckets + 6 summary rows
  EXPECT_EQ(html->find("<h2>Bags</h2>"), std::string::npos);  // no models given
}

TEST(EvalReportTest, ReportFromJsonWithoutCurves) {
  // A report rendered from EvalPerformance.json alone (no full curves) uses
  // the bucket points.
  auto perf = stats::EvaluatePerformance(SampleRecords(500, false), 10);
  auto back = stats::PerformanceFromJson(stats::PerformanceToJson(perf));
  ASSERT_TRUE(back.ok());
  EvalReportInput in;
  in.eval_name = "E";
  in.model_set_name = "m";
  in.perf = &*back;
  const std::string html = RenderEvalHtml(in);
  EXPECT_EQ(Count(html, "<svg"), 3u);
  EXPECT_GE(Count(html, "<polyline"), 6u);
}

TEST(EvalReportTest, SummarizesTheModelAndEachBag) {
  auto perf = stats::EvaluatePerformance(SampleRecords(400, false), 10);
  model::ModelFile f0;
  f0.spec.input_count = 2;
  f0.spec.layers = {{2, 7, model::Activation::kTanh, 0.0f}, {7, 1, model::Activation::kSigmoid, 0}};
  f0.norm_type = "ZSCORE";
  f0.columns.resize(2);
  f0.columns[0].column_name = "Age";
  f0.columns[1].column_name = "Work<Class>";
  f0.training = {{"algorithm", "NN"},
                 {"epochs", 12},
                 {"seed", 7},
                 {"trainError", 0.3123456},
                 {"validError", 0.33},
                 {"shifuTrainError", 0.0987654},
                 {"shifuValidError", 0.1},
                 {"params", {{"LearningRate", 0.1}}}};
  model::ModelFile f1 = f0;
  f1.training["epochs"] = 9;
  EvalReportInput in;
  in.eval_name = "E";
  in.model_set_name = "m";
  in.perf = &perf;
  in.models = {{"model0", &f0, 0.81, 0.85}, {"model1", &f1, 0.79, 0.8312}};
  const std::string html = RenderEvalHtml(in);
  EXPECT_NE(html.find("2 inputs \u2192 7 tanh \u2192 1 sigmoid"), std::string::npos);
  EXPECT_NE(html.find("NN, 2 bags"), std::string::npos);
  EXPECT_NE(html.find("ZSCORE"), std::string::npos);
  EXPECT_NE(html.find("Age, Work&lt;Class&gt;"), std::string::npos);
  EXPECT_NE(html.find("12 epochs, seed 7"), std::string::npos);
  EXPECT_NE(html.find("LearningRate"), std::string::npos);
  // One row per bag: Shifu's and the exact AUC, epochs, Shifu's errors, tarn's losses.
  EXPECT_NE(html.find("<tr><td>model0</td><td>0.8100</td><td>0.8500</td><td>12</td>"
                      "<td>0.098765</td><td>0.100000</td><td>0.312346</td><td>0.330000</td></tr>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><td>model1</td><td>0.7900</td><td>0.8312</td><td>9</td>"),
            std::string::npos);
  EXPECT_EQ(Count(html, "<table"), Count(html, "</table>"));
}

TEST(EvalReportTest, RejectsMissingInput) {
  testing::TempDir tmp;
  EvalReportInput in;
  in.eval_name = "E";
  EXPECT_FALSE(WriteEvalReport(tmp.path(), in).ok());
}

}  // namespace
}  // namespace tarn::pipeline
