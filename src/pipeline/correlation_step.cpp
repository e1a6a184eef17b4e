// tarn stats -c: the Pearson correlation matrix of the candidate columns.
// Numeric columns enter as raw values (missing -> mean), categorical ones as
// their bin's positive rate (ASIS_PR), so that categories are comparable.
#include <cstdio>

#include "common/files.h"
#include "common/log.h"
#include "data/normalizer.h"
#include "pipeline/row_context.h"
#include "pipeline/steps.h"
#include "stats/correlation.h"

namespace tarn::pipeline {

Status ComputeCorrelation(const ModelSet& ms) {
  TARN_ASSIGN_OR_RETURN(auto columns, ms.LoadColumns());
  TARN_ASSIGN_OR_RETURN(auto setup, SetupRows(ms));
  TARN_RETURN_IF_ERROR(CheckHeaderMatches(setup.reader, columns, ms.ColumnConfigPath()));
  std::vector<data::ColumnNormalizer> normalizers;
  for (const auto& c : columns) {
    if (!c.IsCandidate() || !c.HasStats()) continue;
    TARN_ASSIGN_OR_RETURN(auto n,
                          data::ColumnNormalizer::Create(c, data::NormType::kAsIsPr,
                                                         ms.config.normalize.std_dev_cut_off));
    normalizers.push_back(std::move(n));
  }
  if (normalizers.empty()) {
    return FailedPrecondition("no column has stats; run 'tarn stats' before 'tarn stats -c'");
  }
  TARN_ASSIGN_OR_RETURN(auto seed, ms.settings.GetInt("tarn.seed"));
  RowSampler sampler(ms.config.stats.sample_rate, ms.config.stats.sample_neg_only,
                     static_cast<uint64_t>(seed));
  const int threads = ms.Threads();
  const size_t n = normalizers.size();
  OrderedLanes lanes;
  std::vector<stats::CorrelationAccumulator> acc(lanes.lanes(), stats::CorrelationAccumulator(n));
  std::vector<std::vector<double>> rows(lanes.lanes(), std::vector<double>(n));
  const auto& missing = setup.reader.missing();
  TARN_ASSIGN_OR_RETURN(auto options, ms.ReadOptionsFor("stats -c"));
  options.threads = threads;
  TARN_ASSIGN_OR_RETURN(
      auto summary,
      setup.reader.ForEachBatch(options, [&](int, const data::RowBatch& batch) -> Status {
        OrderedLanes::Guard lane(lanes, batch.chunk_index);
        const int worker = lane.lane();
        auto& row = rows[worker];
        for (size_t r = 0; r < batch.size(); ++r) {
          const auto& fields = batch.fields(r);
          int t = setup.target.Map(fields[setup.target_index]);
          if (t < 0 || !sampler.Keep(batch.file_index, batch.line(r), t)) continue;
          for (size_t k = 0; k < n; ++k) {
            std::string_view f = fields[normalizers[k].column_num()];
            float v;
            normalizers[k].Apply(f, missing.IsMissing(f), &v);
            row[k] = v;
          }
          acc[worker].Add(row.data());
        }
        return Status::Ok();
      }));
  for (int w = 1; w < lanes.lanes(); ++w) acc[0].Merge(acc[w]);
  auto matrix = acc[0].Pearson();
  // Shifu's layout: a header row of names, then one row per column.
  std::string out = "";
  for (const auto& nm : normalizers) out += "," + nm.name();
  out += "\n";
  char buf[32];
  for (size_t i = 0; i < n; ++i) {
    out += normalizers[i].name();
    for (size_t j = 0; j < n; ++j) {
      std::snprintf(buf, sizeof(buf), ",%.6f", matrix[i * n + j]);
      out += buf;
    }
    out += "\n";
  }
  TARN_RETURN_IF_ERROR(WriteFileAtomic(ms.CorrelationPath(), out));
  TARN_LOG(kInfo) << "stats -c: correlation of " << n << " columns over " << summary.rows
                  << " rows -> " << ms.CorrelationPath();
  return Status::Ok();
}

// Reads correlation.csv back (used by varsel's correlation filter).
Result<std::pair<std::vector<std::string>, std::vector<double>>> ReadCorrelation(
    const std::string& path) {
  TARN_ASSIGN_OR_RETURN(auto text, ReadFile(path));
  auto lines = Split(text, "\n");
  if (lines.empty()) return Corrupt(path + ": empty");
  auto header = Split(lines[0], ",");
  if (header.empty() || !header[0].empty()) return Corrupt(path + ": line 1: bad header");
  std::vector<std::string> names(header.begin() + 1, header.end());
  size_t n = names.size();
  std::vector<double> m(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    if (i + 1 >= lines.size())
      return Corrupt(path + ": truncated after line " + std::to_string(i + 1));
    auto parts = Split(lines[i + 1], ",");
    if (parts.size() != n + 1 || parts[0] != names[i]) {
      return Corrupt(path + ": line " + std::to_string(i + 2) + ": expected " +
                     std::to_string(n + 1) + " fields starting with '" + names[i] + "'");
    }
    for (size_t j = 0; j < n; ++j) {
      auto v = ParseDouble(parts[j + 1]);
      if (!v) {
        return Corrupt(path + ": line " + std::to_string(i + 2) + ": '" + parts[j + 1] +
                       "' is not a number");
      }
      m[i * n + j] = *v;
    }
  }
  return std::make_pair(std::move(names), std::move(m));
}

}  // namespace tarn::pipeline
