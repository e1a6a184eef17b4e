// tarn eval: scores each eval set with every model in models/ and writes
// Shifu's EvalScore, EvalPerformance.json, the confusion matrix, a gain chart
// CSV and an HTML report under evals/<name>/.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "model/scorer.h"
#include "pipeline/eval_report.h"
#include "pipeline/row_context.h"
#include "pipeline/steps.h"
#include "stats/performance.h"

namespace tarn::pipeline {

namespace {

struct ScoredRow {
  int target;
  double weight;
  std::string tag;            // the target field, trimmed, as EvalScore writes it
  std::string weight_text;    // the weight field as read, or "1.0" without a weight column
  std::vector<float> scores;  // one per model
  std::vector<std::string> meta;
  std::vector<float> normalized;  // -norm: the first model's inputs
  std::vector<uint32_t> ids;      // -norm: a graph model's ids
};

Result<std::vector<model::Scorer>> LoadModels(const ModelSet& ms) {
  std::vector<std::pair<int, std::string>> found;
  auto names = ListDirectory(ms.Path("models"));
  if (names.ok()) {
    for (const auto& n : *names) {
      if (!StartsWith(n, "model") || !EndsWith(n, ".tarn")) continue;
      auto idx = ParseInt(std::string_view(n).substr(5, n.size() - 10));
      if (idx) found.emplace_back(static_cast<int>(*idx), ms.Path("models/" + n));
    }
  }
  if (found.empty()) {
    return FailedPrecondition("no models/model*.tarn in " + ms.dir + "; run 'tarn train' first");
  }
  std::sort(found.begin(), found.end());
  std::vector<model::Scorer> scorers;
  for (const auto& [idx, path] : found) {
    TARN_ASSIGN_OR_RETURN(auto file, model::ModelFile::Load(path));
    TARN_ASSIGN_OR_RETURN(auto scorer, model::Scorer::Create(std::move(file)));
    scorers.push_back(std::move(scorer));
  }
  return scorers;
}

double Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

Status EvalOne(const ModelSet& ms, const data::EvalConfig& ev,
               const std::vector<model::Scorer>& scorers, const EvalOptions& options) {
  TARN_ASSIGN_OR_RETURN(auto reader, data::DatasetReader::Open(ms.SourceFor(ev.data_set)));
  const auto& ds = ev.data_set;
  const std::string key = ev.key + ".dataSet";
  const std::string config = ms.ModelConfigPath();
  auto target_or = data::TargetMapper::Create(ds.pos_tags, ds.neg_tags, key);
  if (!target_or.ok()) {
    return target_or.status().WithContext(
        "eval " + ev.name +
        (ev.inherits_pos_tags || ev.inherits_neg_tags ? " (empty tags are dataSet's)" : ""));
  }
  const data::TargetMapper target = std::move(*target_or);
  int target_index = reader.ColumnIndex(ds.target_column_name);
  if (target_index < 0) {
    return InvalidArgument(config + ": " + key + ".targetColumnName '" + ds.target_column_name +
                           "'" + (ev.inherits_target ? " (blank, so dataSet's)" : "") +
                           " is not a column of eval " + ev.name + "'s data header");
  }
  int weight_index = ds.weight_column_name.empty() ? -1 : reader.ColumnIndex(ds.weight_column_name);
  if (!ds.weight_column_name.empty() && weight_index < 0) {
    return InvalidArgument(config + ": " + key + ".weightColumnName '" + ds.weight_column_name +
                           "' is not a column of eval " + ev.name + "'s data header");
  }
  // Each model's input columns, found in the eval header by name.
  std::vector<std::vector<int>> inputs(scorers.size());
  for (size_t m = 0; m < scorers.size(); ++m) {
    for (const auto& name : scorers[m].input_columns()) {
      int idx = reader.ColumnIndex(name);
      if (idx < 0) {
        return InvalidArgument("eval " + ev.name + ": model input column '" + name +
                               "' is not in the eval data header");
      }
      inputs[m].push_back(idx);
    }
  }
  std::vector<std::string> meta_names;
  std::vector<int> meta_index;
  if (!ev.score_meta_column_name_file.empty()) {
    std::string path = ms.ConfigPath(ev.score_meta_column_name_file);
    if (data::PathExistsAnywhere(path)) {
      TARN_ASSIGN_OR_RETURN(meta_names, data::ReadColumnNameFile(path));
      for (const auto& n : meta_names) {
        int idx = reader.ColumnIndex(n);
        if (idx < 0) return InvalidArgument(path + ": column '" + n + "' is not in the eval data");
        meta_index.push_back(idx);
      }
    }
  }

  const int threads = ms.Threads();
  // Per worker, one workspace per model: a graph's workspace fits that graph only.
  std::vector<std::vector<std::unique_ptr<model::ScoreWorkspace>>> workspaces(threads);
  for (auto& w : workspaces) w.resize(scorers.size());
  std::mutex mutex;
  std::map<uint64_t, std::vector<ScoredRow>> chunks;  // in input order
  RowCounters total;
  TARN_ASSIGN_OR_RETURN(auto options_read, ms.ReadOptionsFor("eval " + ev.name));
  options_read.threads = threads;
  TARN_ASSIGN_OR_RETURN(
      auto summary,
      reader.ForEachBatch(options_read, [&](int worker, const data::RowBatch& batch) -> Status {
        std::vector<ScoredRow> out;
        RowCounters cnt;
        std::vector<uint32_t> kept;
        for (size_t r = 0; r < batch.size(); ++r) {
          int t = target.Map(batch.field(r, target_index));
          if (t < 0) {
            cnt.AddInvalidTarget(batch.field(r, target_index));
            continue;
          }
          bool bad = false;
          double w = weight_index >= 0 ? ParseWeight(batch.field(r, weight_index), &bad) : 1.0;
          cnt.invalid_weight += bad;
          ++cnt.rows;
          ScoredRow row{t,
                        w,
                        std::string(Trim(batch.field(r, target_index))),
                        weight_index >= 0 ? std::string(batch.field(r, weight_index)) : "1.0",
                        std::vector<float>(scorers.size()),
                        {}};
          for (int mi : meta_index) row.meta.emplace_back(batch.field(r, mi));
          out.push_back(std::move(row));
          kept.push_back(static_cast<uint32_t>(r));
        }
        std::vector<float> x, scores(kept.size());
        std::vector<uint32_t> ids;
        std::vector<std::string_view> raw;
        for (size_t m = 0; m < scorers.size(); ++m) {
          const int width = scorers[m].input_width();
          const int id_width = scorers[m].id_count();
          x.resize(kept.size() * width);
          ids.resize(kept.size() * id_width);
          for (size_t i = 0; i < kept.size(); ++i) {
            raw.clear();
            for (int idx : inputs[m]) raw.push_back(batch.field(kept[i], idx));
            scorers[m].Normalize(raw, x.data() + i * width);
            scorers[m].Ids(raw, ids.data() + i * id_width);
          }
          auto& ws = workspaces[worker][m];
          if (!ws) ws = scorers[m].MakeWorkspace(1024);
          for (size_t b = 0; b < kept.size(); b += 1024) {
            int n = static_cast<int>(std::min<size_t>(1024, kept.size() - b));
            scorers[m].Score(x.data() + b * width, ids.data() + b * id_width, n, scores.data() + b,
                             ws.get());
          }
          for (size_t i = 0; i < kept.size(); ++i) out[i].scores[m] = scores[i];
          if (m == 0 && options.norm_only) {
            const bool graph = scorers[m].file().graph.has_value();
            for (size_t i = 0; i < kept.size(); ++i) {
              out[i].normalized.assign(x.data() + i * width, x.data() + (i + 1) * width);
              if (graph) {
                out[i].ids.assign(ids.data() + i * id_width, ids.data() + (i + 1) * id_width);
              }
            }
          }
        }
        std::lock_guard<std::mutex> lock(mutex);
        total.Merge(cnt);
        chunks.emplace(batch.chunk_index, std::move(out));
        return Status::Ok();
      }));
  (void)summary;
  std::vector<ScoredRow> rows;
  for (auto& [idx, v] : chunks)
    for (auto& r : v) rows.push_back(std::move(r));
  if (rows.empty()) return NoUsableRows(ds, key, total).WithContext("eval " + ev.name);
  total.Report(ds, key, ("eval " + ev.name).c_str());

  // The score each row is ranked by: mean, max, min or median over the models.
  std::string selector = ToLower(ev.performance_score_selector);
  auto pick = [&](const ScoredRow& r, double* mean, double* mx, double* mn, double* med) {
    double sum = 0;
    *mx = -INFINITY;
    *mn = INFINITY;
    for (float s : r.scores) {
      sum += s;
      *mx = std::max<double>(*mx, s);
      *mn = std::min<double>(*mn, s);
    }
    *mean = sum / r.scores.size();
    *med = Median(r.scores);
  };
  std::vector<double> selected(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    double mean, mx, mn, med;
    pick(rows[i], &mean, &mx, &mn, &med);
    selected[i] = selector == "max"      ? mx
                  : selector == "min"    ? mn
                  : selector == "median" ? med
                                         : mean;
  }
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (options.sort_by_score) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return selected[a] > selected[b]; });
  }

  const std::string dir = ms.Path("evals/" + ev.name);
  TARN_RETURN_IF_ERROR(MakeDirs(dir));
  if (options.norm_only) {
    // Shifu's EvalNormalized: target, weight and the normalized inputs, in input order;
    // a graph model's ids follow, one "<column>#id" per id column.
    std::string text = "target|weight";
    const auto& file = scorers[0].file();
    TARN_ASSIGN_OR_RETURN(auto norm, data::ParseNormType(file.norm_type));
    for (const auto& c : file.columns) {
      TARN_ASSIGN_OR_RETURN(auto n, data::ColumnNormalizer::Create(c, norm, file.std_dev_cut_off));
      for (int k = 0; k < n.width(); ++k) text += "|" + c.column_name;
    }
    if (file.graph) {
      for (const auto& id : file.id_columns) text += "|" + id.name + "#id";
    }
    text += "\n";
    char buf[32];
    for (const auto& r : rows) {
      text += std::to_string(r.target) + "|" + FormatDouble(r.weight);
      for (float v : r.normalized) {
        std::snprintf(buf, sizeof(buf), "|%.9g", v);
        text += buf;
      }
      for (uint32_t id : r.ids) text += "|" + std::to_string(id);
      text += "\n";
    }
    TARN_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "EvalNormalized"), text));
    TARN_LOG(kInfo) << "eval " << ev.name << ": " << rows.size() << " rows normalized -> "
                    << JoinPath(dir, "EvalNormalized");
    return Status::Ok();
  }
  // EvalScore as Shifu's EvalScoreUDF writes it: the target column (raw tags),
  // the weight column (raw values; "weight" and 1.0 without one), then
  // mean|max|min|median|model0.. (scores x scoreScale, Java's Double.toString)
  // and the meta columns.
  std::string text =
      ds.target_column_name + "|" +
      (ds.weight_column_name.empty() ? std::string("weight") : ds.weight_column_name) +
      "|mean|max|min|median";
  for (size_t m = 0; m < scorers.size(); ++m) text += "|model" + std::to_string(m);
  for (const auto& n : meta_names) text += "|" + n;
  text += "\n";
  const double scale = ev.score_scale;
  for (size_t i : order) {
    const auto& r = rows[i];
    double mean, mx, mn, med;
    pick(r, &mean, &mx, &mn, &med);
    text += r.tag + "|" + r.weight_text + "|" + JavaDoubleString(mean * scale) + "|" +
            JavaDoubleString(mx * scale) + "|" + JavaDoubleString(mn * scale) + "|" +
            JavaDoubleString(med * scale);
    for (float s : r.scores) text += "|" + JavaDoubleString(static_cast<double>(s) * scale);
    for (const auto& m : r.meta) text += "|" + m;
    text += "\n";
  }
  TARN_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "EvalScore"), text));
  if (options.score_only) {
    TARN_LOG(kInfo) << "eval " << ev.name << ": " << rows.size() << " rows scored -> "
                    << JoinPath(dir, "EvalScore");
    return Status::Ok();
  }
  std::vector<stats::ScoredRecord> records;
  records.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    records.push_back({selected[i] * scale, rows[i].target, rows[i].weight});
  }
  stats::PrepareRecords(&records);  // sorted by score, descending, as Shifu's eval
  stats::PerformanceOptions popts;
  popts.bucket_num = ev.performance_bucket_num;
  popts.max_score = scale;
  popts.min_score = 0;
  auto perf = stats::EvaluateSorted(records, popts);
  EvalReportInput in;
  in.eval_name = ev.name;
  in.model_set_name = ms.config.name;
  in.perf = &perf;
  in.sorted_records = &records;  // EvalConfusionMatrix
  in.score_scale = scale;
  in.has_weight_column = !ds.weight_column_name.empty();
  in.score_selector = selector;
  // Each bag on its own, for the report.
  for (size_t m = 0; m < scorers.size(); ++m) {
    std::vector<stats::ScoredRecord> bag;
    bag.reserve(rows.size());
    for (const auto& r : rows) bag.push_back({r.scores[m] * scale, r.target, r.weight});
    auto bag_perf = stats::EvaluatePerformance(std::move(bag), popts);
    in.models.push_back({"model" + std::to_string(m), &scorers[m].file(), bag_perf.area_under_roc,
                         bag_perf.exact_area_under_roc});
  }
  TARN_RETURN_IF_ERROR(WriteEvalReport(dir, in));
  if (!Quiet()) {
    std::printf(
        "eval %s: %zu rows, AUC %.4f (Shifu's, %d buckets; exact %.4f), weighted %.4f (exact "
        "%.4f), "
        "PR AUC %.4f (exact %.4f) -> %s\n",
        ev.name.c_str(), rows.size(), perf.area_under_roc, perf.bucket_num,
        perf.exact_area_under_roc, perf.weighted_area_under_roc, perf.exact_weighted_area_under_roc,
        perf.area_under_pr, perf.exact_area_under_pr, dir.c_str());
  }
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace

Status RunEval(const ModelSet& ms, const EvalOptions& options) {
  if (ms.config.evals.empty()) {
    return FailedPrecondition(ms.ModelConfigPath() + " lists no eval sets (evals)");
  }
  TARN_ASSIGN_OR_RETURN(auto scorers, LoadModels(ms));
  bool any = false;
  for (const auto& ev : ms.config.evals) {
    if (!options.name.empty() && ev.name != options.name) continue;
    any = true;
    if (ev.data_set.data_path.empty()) {
      return InvalidArgument(ms.ModelConfigPath() + ": " + ev.key + ".dataSet.dataPath of eval " +
                             ev.name + " is empty");
    }
    TARN_RETURN_IF_ERROR(EvalOne(ms, ev, scorers, options));
  }
  if (!any) return NotFound("no eval set named '" + options.name + "' in " + ms.ModelConfigPath());
  return Status::Ok();
}

}  // namespace tarn::pipeline
