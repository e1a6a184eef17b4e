// tarn varsel: sets finalSelect in ColumnConfig.json (SHIFU-COMPAT §4
// "Variable selection"): the auto-filter, then a ranking by KS, IV, MIX,
// PARETO, or by the sensitivity of a trained model (SE, ST), keeping filterNum
// columns (force-selected ones always).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "model/model_file.h"
#include "model/network.h"
#include "model/sensitivity.h"
#include "model/training_data.h"
#include "pipeline/steps.h"

namespace tarn::pipeline {

namespace {

double Ks(const data::ColumnConfig& c) { return c.stats.ks.value_or(0); }
double Iv(const data::ColumnConfig& c) { return c.stats.iv.value_or(0); }

std::vector<int> RankBy(const std::vector<data::ColumnConfig>& cols, std::vector<int> idx,
                        double (*key)(const data::ColumnConfig&)) {
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int a, int b) { return key(cols[a]) > key(cols[b]); });
  return idx;
}

// Pareto fronts on (KS, IV): the non-dominated columns first, then the next
// front, each front ordered by KS.
std::vector<int> RankPareto(const std::vector<data::ColumnConfig>& cols, std::vector<int> left) {
  std::vector<int> out;
  while (!left.empty()) {
    std::vector<int> front, rest;
    for (int a : left) {
      bool dominated = false;
      for (int b : left) {
        if (a == b) continue;
        bool ge = Ks(cols[b]) >= Ks(cols[a]) && Iv(cols[b]) >= Iv(cols[a]);
        bool gt = Ks(cols[b]) > Ks(cols[a]) || Iv(cols[b]) > Iv(cols[a]);
        if (ge && gt) {
          dominated = true;
          break;
        }
      }
      (dominated ? rest : front).push_back(a);
    }
    front = RankBy(cols, front, Ks);
    out.insert(out.end(), front.begin(), front.end());
    left = rest;
  }
  return out;
}

// MIX: alternately the best remaining by KS and the best remaining by IV.
std::vector<int> RankMix(const std::vector<data::ColumnConfig>& cols, const std::vector<int>& idx) {
  auto by_ks = RankBy(cols, idx, Ks), by_iv = RankBy(cols, idx, Iv);
  std::vector<int> out;
  std::set<int> taken;
  size_t i = 0, j = 0;
  bool ks_turn = true;
  while (out.size() < idx.size()) {
    auto& list = ks_turn ? by_ks : by_iv;
    size_t& pos = ks_turn ? i : j;
    while (pos < list.size() && taken.count(list[pos])) ++pos;
    if (pos < list.size()) {
      taken.insert(list[pos]);
      out.push_back(list[pos]);
    }
    ks_turn = !ks_turn;
  }
  return out;
}

std::string Timestamp() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return buf;
}

void PrintTable(const std::vector<data::ColumnConfig>& cols, const std::vector<int>& idx,
                const char* title) {
  std::printf("%s\n", title);
  std::printf("  %-4s %-28s %-4s %8s %8s %9s %s\n", "#", "column", "type", "KS", "IV", "missing",
              "selected");
  for (size_t r = 0; r < idx.size(); ++r) {
    const auto& c = cols[idx[r]];
    std::printf("  %-4zu %-28s %-4s %8.3f %8.4f %8.1f%% %s\n", r + 1, c.column_name.c_str(),
                c.column_type ? data::ColumnTypeName(*c.column_type) : "-", Ks(c), Iv(c),
                100.0 * c.stats.missing_percentage.value_or(0), c.final_select ? "yes" : "");
  }
}

// The N of this run's varsel/ColumnConfig.json.N and varsel/se.N.
int NextHistoryIndex(const ModelSet& ms) {
  int n = 0;
  while (PathExists(ms.Path("varsel/ColumnConfig.json." + std::to_string(n))) ||
         PathExists(ms.Path("varsel/se." + std::to_string(n)))) {
    ++n;
  }
  return n;
}

// `n`: this run's history index (NextHistoryIndex when negative).
Status SaveWithHistory(const ModelSet& ms, const std::vector<data::ColumnConfig>& cols,
                       const std::string& what, int n = -1) {
  // varsel/ColumnConfig.json.N keeps each version before it is changed.
  if (n < 0) n = NextHistoryIndex(ms);
  TARN_RETURN_IF_ERROR(ms.KeepColumnConfigVersion("varsel", n).status());
  TARN_RETURN_IF_ERROR(ms.SaveColumns(cols));
  std::string history;
  if (PathExists(ms.Path("varsel/varsel.history"))) {
    TARN_ASSIGN_OR_RETURN(history, ReadFile(ms.Path("varsel/varsel.history")));
  }
  history += Timestamp() + "\t" + std::to_string(n) + "\t" + what + "\n";
  return WriteFileAtomic(ms.Path("varsel/varsel.history"), history);
}

// filterBy SE / ST: the sensitivity of models/model0.tarn's input columns.
struct Sensitivity {
  std::string model_path;
  std::vector<data::ColumnConfig> inputs;  // the model's input columns, in input order
  std::vector<model::ColumnSensitivity> stats;
  std::map<int, size_t> by_column_num;  // columnNum -> index into inputs and stats
  const model::ColumnSensitivity* Find(const data::ColumnConfig& c) const {
    auto it = by_column_num.find(c.column_num);
    return it == by_column_num.end() ? nullptr : &stats[it->second];
  }
};

// Trains the model sensitivity analysis needs, as Shifu's VarSelectModelProcessor
// does: one bag, in this process, on the finalSelect columns, or on every
// column still in the running when none is selected; NN halves numTrainEpochs
// from 400 epochs on (Shifu's TrainModelProcessor for varsel).
Status TrainForSensitivity(const ModelSet& ms, const std::vector<data::ColumnConfig>& cols,
                           const std::vector<int>& candidates) {
  ModelSet for_varsel = ms;
  auto& tc = for_varsel.config.train;
  tc.bagging_num = 1;
  tc.is_continuous = false;
  if (EqualsIgnoreCase(tc.algorithm, "NN") && tc.num_train_epochs >= 400) {
    tc.num_train_epochs /= 2;
  }
  for_varsel.config.run_mode = "LOCAL";
  TrainOptions options;
  for (const auto& c : cols) {
    if (c.final_select) options.inputs.push_back(c);
  }
  if (options.inputs.empty()) {
    for (int i : candidates) options.inputs.push_back(cols[i]);
  }
  if (options.inputs.empty()) {
    return FailedPrecondition("varsel found no column to train the sensitivity model on");
  }
  TARN_LOG(kInfo) << "varsel: training models/model0.tarn on " << options.inputs.size()
                  << " columns for the sensitivity analysis";
  return RunTrain(for_varsel, options);
}

Result<Sensitivity> ComputeModelSensitivity(const ModelSet& ms,
                                            const std::vector<data::ColumnConfig>& cols,
                                            const std::vector<int>& candidates,
                                            model::SensitivityKind kind) {
  const auto& alg = ms.config.train.algorithm;
  if (!EqualsIgnoreCase(alg, "NN") && !EqualsIgnoreCase(alg, "LR") &&
      !EqualsIgnoreCase(alg, "TensorFlow")) {
    return InvalidArgument(ms.ModelConfigPath() + ": varSelect.filterBy " +
                           ms.config.var_select.filter_by +
                           " needs train.algorithm NN, LR or TensorFlow, got '" + alg + "'");
  }
  Sensitivity out;
  // Only the first model, as Shifu.
  out.model_path = ms.Path("models/model0.tarn");
  TARN_ASSIGN_OR_RETURN(bool reuse, ms.settings.GetBool("shifu.varsel.se.reuse"));
  if (!reuse || !PathExists(out.model_path)) {
    TARN_RETURN_IF_ERROR(TrainForSensitivity(ms, cols, candidates));
  }
  TARN_ASSIGN_OR_RETURN(auto file, model::ModelFile::Load(out.model_path));
  if (file.graph) {
    return Unsupported(out.model_path +
                       " is a graph model; sensitivity variable selection "
                       "needs an NN model (set -Dshifu.varsel.se.reuse=false)");
  }
  TARN_ASSIGN_OR_RETURN(auto seed, ms.settings.GetInt("tarn.seed"));
  TARN_ASSIGN_OR_RETURN(auto options, ms.TrainingData(static_cast<uint64_t>(seed), file.columns));
  options.valid_rate = 0;  // every row counts, as in Shifu's mapper
  options.norm_type = file.norm_type;
  auto data = model::LoadTrainingData(options);
  if (!data.ok()) {
    return FailedPrecondition(out.model_path + " does not fit " + ms.NormalizedDataDir() + ": " +
                              data.status().message() +
                              " (train again, or set -Dshifu.varsel.se.reuse=false)");
  }
  model::Network net(file.spec);
  if (net.spec().input_count != data->inputs) {
    return FailedPrecondition(out.model_path + " has " + std::to_string(net.spec().input_count) +
                              " inputs but its columns have " + std::to_string(data->inputs) +
                              " in " + ms.NormalizedDataDir() + "; train again");
  }
  TARN_LOG(kInfo) << "varsel: sensitivity (" << ms.config.var_select.filter_by << ") of "
                  << out.model_path << " over " << data->x.size() / data->stride() << " rows, "
                  << file.columns.size() << " columns";
  out.stats = model::ComputeSensitivity(net, file.params.data(), *data, kind, ms.Threads());
  out.inputs = file.columns;
  for (size_t k = 0; k < out.inputs.size(); ++k) out.by_column_num[out.inputs[k].column_num] = k;
  return out;
}

// Shifu's se report: columnNum, name, mean, rms, variance, tab-separated, by rms.
std::string SensitivityReport(const Sensitivity& s) {
  std::string text;
  for (int k : model::RankByRms(s.stats)) {
    const auto& st = s.stats[k];
    text += std::to_string(s.inputs[k].column_num) + "\t" + s.inputs[k].column_name + "\t" +
            FormatDouble(st.Mean()) + "\t" + FormatDouble(st.Rms()) + "\t" +
            FormatDouble(st.Variance()) + "\n";
  }
  return text;
}

void PrintSensitivity(const Sensitivity& s, const std::vector<data::ColumnConfig>& cols) {
  std::map<int, bool> selected;
  for (const auto& c : cols) selected[c.column_num] = c.final_select;
  std::printf("sensitivity of %s, by rms:\n", s.model_path.c_str());
  std::printf("  %-4s %-28s %12s %12s %12s %s\n", "#", "column", "mean", "rms", "variance",
              "selected");
  auto order = model::RankByRms(s.stats);
  for (size_t r = 0; r < order.size(); ++r) {
    const auto& st = s.stats[order[r]];
    const auto& c = s.inputs[order[r]];
    std::printf("  %-4zu %-28s %12.6g %12.6g %12.6g %s\n", r + 1, c.column_name.c_str(), st.Mean(),
                st.Rms(), st.Variance(), selected[c.column_num] ? "yes" : "");
  }
}

}  // namespace

Status RunVarsel(const ModelSet& ms, const VarselOptions& options) {
  const auto& vc = ms.config.var_select;
  TARN_ASSIGN_OR_RETURN(auto cols, ms.LoadColumns());
  std::vector<int> all;
  for (size_t i = 0; i < cols.size(); ++i) all.push_back(static_cast<int>(i));

  if (options.list) {
    std::vector<int> selected;
    for (int i : all)
      if (cols[i].final_select) selected.push_back(i);
    PrintTable(cols, RankBy(cols, selected, Ks),
               ("selected columns (" + std::to_string(selected.size()) + "), by KS:").c_str());
    auto by_iv = RankBy(cols, selected, Iv);
    std::printf("top by IV:");
    for (size_t r = 0; r < by_iv.size() && r < 5; ++r) {
      std::printf("%s %s (%.3f)", r ? "," : "", cols[by_iv[r]].column_name.c_str(),
                  Iv(cols[by_iv[r]]));
    }
    std::printf("\n");
    return Status::Ok();
  }
  if (options.reset) {
    for (auto& c : cols) c.final_select = false;
    TARN_RETURN_IF_ERROR(SaveWithHistory(ms, cols, "reset"));
    TARN_LOG(kInfo) << "varsel -reset: finalSelect cleared for every column";
    return Status::Ok();
  }

  bool any_stats = false;
  for (const auto& c : cols) any_stats |= c.IsCandidate() && c.HasStats();
  if (!any_stats)
    return FailedPrecondition("no column has stats; run 'tarn stats' before 'tarn varsel'");

  std::vector<int> force, pool;
  std::map<std::string, int> dropped;  // reason -> count
  const bool candidate_flags = data::HasCandidateFlags(cols);
  for (int i : all) {
    const auto& c = cols[i];
    if (c.IsForceSelect() && vc.force_enable) {
      if (!c.HasStats()) {
        return FailedPrecondition("force-selected column '" + c.column_name + "' has no stats");
      }
      force.push_back(i);
    } else if (c.IsGoodCandidate(candidate_flags)) {
      pool.push_back(i);
    } else if (c.IsCandidate() && candidate_flags && !c.IsForceSelect() &&
               c.column_flag != data::ColumnFlag::kCandidate) {
      ++dropped["not flagged Candidate while other columns are"];
    } else if (c.IsCandidate()) {
      ++dropped["KS or IV is 0 (no signal)"];
    }
  }

  std::string by = ToLower(vc.filter_by);
  const bool by_sensitivity = by == "se" || by == "st";
  std::optional<Sensitivity> sensitivity;
  const int history_index = NextHistoryIndex(ms);
  if (by_sensitivity) {
    // Before the auto-filter, so that postCorrelationMetric SE can use it.
    std::vector<int> candidates = force;
    candidates.insert(candidates.end(), pool.begin(), pool.end());
    std::sort(candidates.begin(), candidates.end());
    TARN_ASSIGN_OR_RETURN(auto kind, model::ParseSensitivityKind(vc.filter_by));
    TARN_ASSIGN_OR_RETURN(sensitivity, ComputeModelSensitivity(ms, cols, candidates, kind));
    const std::string report = SensitivityReport(*sensitivity);
    const int n = history_index;
    TARN_RETURN_IF_ERROR(MakeDirs(ms.Path("varsel")));
    TARN_RETURN_IF_ERROR(MakeDirs(ms.Path("tmp/varselectStats")));
    TARN_RETURN_IF_ERROR(WriteFileAtomic(ms.Path("varsel/se." + std::to_string(n)), report));
    TARN_RETURN_IF_ERROR(WriteFileAtomic(ms.Path("tmp/varselectStats/se"), report));
    if (!vc.filter_enable) {
      // Shifu only reports when filterEnable is false.
      PrintSensitivity(*sensitivity, cols);
      TARN_LOG(kInfo) << "varsel: varSelect.filterEnable is false; sensitivity report in "
                      << ms.Path("varsel/se." + std::to_string(n)) << ", finalSelect unchanged";
      return Status::Ok();
    }
  }

  if (vc.auto_filter_enable) {
    std::vector<int> kept;
    for (int i : pool) {
      const auto& c = cols[i];
      if (c.stats.missing_percentage.value_or(0) >= vc.missing_rate_threshold) {
        ++dropped["missing rate >= missingRateThreshold"];
      } else if (Iv(c) < vc.min_iv_threshold) {
        ++dropped["IV < minIvThreshold"];
      } else if (Ks(c) < vc.min_ks_threshold) {
        ++dropped["KS < minKsThreshold"];
      } else {
        kept.push_back(i);
      }
    }
    pool = kept;
    if (vc.correlation_threshold < 1.0) {
      if (!PathExists(ms.CorrelationPath())) {
        TARN_ASSIGN_OR_RETURN(bool compute, ms.settings.GetBool("tarn.varsel.correlation"));
        if (!compute) {
          return FailedPrecondition("varSelect.correlationThreshold is below 1 but " +
                                    ms.CorrelationPath() + " is missing; run 'tarn stats -c'");
        }
        TARN_RETURN_IF_ERROR(ComputeCorrelation(ms));
      }
      TARN_ASSIGN_OR_RETURN(auto corr, ReadCorrelation(ms.CorrelationPath()));
      const auto& [names, matrix] = corr;
      std::map<std::string, size_t> pos;
      for (size_t k = 0; k < names.size(); ++k) pos[names[k]] = k;
      bool by_ks = EqualsIgnoreCase(vc.post_correlation_metric, "KS");
      // SE: the pair's column with the smaller sensitivity rms goes (Shifu), when
      // both have one; otherwise IV decides.
      bool by_se = sensitivity && EqualsIgnoreCase(vc.post_correlation_metric, "SE");
      // Walk pairs from the most correlated down; drop the weaker of each pair
      // that is still in, so a column is never dropped for a partner already gone.
      std::vector<std::tuple<double, int, int>> pairs;
      std::vector<int> in = pool;
      in.insert(in.end(), force.begin(), force.end());
      for (size_t a = 0; a < in.size(); ++a) {
        for (size_t b = a + 1; b < in.size(); ++b) {
          auto pa = pos.find(cols[in[a]].column_name), pb = pos.find(cols[in[b]].column_name);
          if (pa == pos.end() || pb == pos.end()) continue;
          double r = std::fabs(matrix[pa->second * names.size() + pb->second]);
          if (r > vc.correlation_threshold) pairs.emplace_back(r, in[a], in[b]);
        }
      }
      std::sort(pairs.begin(), pairs.end(),
                [](const auto& x, const auto& y) { return std::get<0>(x) > std::get<0>(y); });
      std::set<int> removed;
      for (const auto& [r, a, b] : pairs) {
        if (removed.count(a) || removed.count(b)) continue;
        bool a_forced = cols[a].IsForceSelect(), b_forced = cols[b].IsForceSelect();
        if (a_forced && b_forced) continue;
        double ma = by_ks ? Ks(cols[a]) : Iv(cols[a]), mb = by_ks ? Ks(cols[b]) : Iv(cols[b]);
        const auto *sa = by_se ? sensitivity->Find(cols[a]) : nullptr,
                   *sb = by_se ? sensitivity->Find(cols[b]) : nullptr;
        if (sa && sb) {
          ma = sa->Rms();
          mb = sb->Rms();
        }
        int loser = a_forced ? b : b_forced ? a : (ma >= mb ? b : a);
        removed.insert(loser);
        ++dropped["correlation > correlationThreshold"];
      }
      std::vector<int> kept2;
      for (int i : pool)
        if (!removed.count(i)) kept2.push_back(i);
      pool = kept2;
    }
  }

  std::vector<int> ranked;
  if (by_sensitivity) {
    // The pool's columns by the model's rms; a column the model does not read
    // cannot be ranked and is left out.
    std::map<int, int> pool_by_num;
    for (int i : pool) pool_by_num[cols[i].column_num] = i;
    for (int k : model::RankByRms(sensitivity->stats)) {
      auto it = pool_by_num.find(sensitivity->inputs[k].column_num);
      if (it == pool_by_num.end()) continue;
      ranked.push_back(it->second);
      pool_by_num.erase(it);
    }
    if (!pool_by_num.empty()) {
      dropped["not an input of " + sensitivity->model_path] += pool_by_num.size();
    }
  } else if (by == "ks") {
    ranked = RankBy(cols, pool, Ks);
  } else if (by == "iv") {
    ranked = RankBy(cols, pool, Iv);
  } else if (by == "mix") {
    ranked = RankMix(cols, pool);
  } else if (by == "pareto") {
    ranked = RankPareto(cols, pool);
  } else if (by == "sr" || by == "voted" || by == "fi") {
    return Unsupported("varSelect.filterBy " + vc.filter_by +
                       " is not supported by tarn; use KS, IV, MIX, PARETO, SE or ST");
  } else {
    return InvalidArgument(ms.ModelConfigPath() +
                           ": varSelect.filterBy must be KS, IV, MIX, PARETO, SE or ST, got '" +
                           vc.filter_by + "'");
  }
  // What filterOutRatio applies to (with SE/ST, as Shifu's reducer: the model's inputs).
  const size_t inputs = by_sensitivity ? sensitivity->inputs.size() : ranked.size() + force.size();

  size_t budget = ranked.size();
  if (vc.filter_enable) {
    // In float, as Shifu's VarSelectReducer: (int) (inputs * (1.0f - filterOutRatio)).
    const float kept_share = 1.0f - static_cast<float>(vc.filter_out_ratio);
    budget = vc.filter_num > 0 ? static_cast<size_t>(vc.filter_num)
             : by_sensitivity
                 ? static_cast<size_t>(static_cast<float>(inputs) * kept_share)
                 : static_cast<size_t>(std::floor(inputs * (1.0 - vc.filter_out_ratio)));
    budget = budget > force.size() ? budget - force.size() : 0;
  }
  for (auto& c : cols) c.final_select = false;
  for (int i : force) cols[i].final_select = true;
  std::vector<int> chosen = force;
  for (size_t r = 0; r < ranked.size() && r < budget; ++r) {
    cols[ranked[r]].final_select = true;
    chosen.push_back(ranked[r]);
  }
  if (chosen.empty()) {
    return FailedPrecondition("varsel selected no column: every candidate was filtered out");
  }
  std::string what = "filterBy=" + vc.filter_by + " selected=" + std::to_string(chosen.size());
  TARN_RETURN_IF_ERROR(SaveWithHistory(ms, cols, what, history_index));
  if (sensitivity) PrintSensitivity(*sensitivity, cols);
  std::string reasons;
  for (const auto& [why, n] : dropped) reasons += "; " + std::to_string(n) + " dropped: " + why;
  TARN_LOG(kInfo) << "varsel: " << chosen.size() << " columns selected by " << vc.filter_by << " ("
                  << force.size() << " force-selected)" << reasons;
  return Status::Ok();
}

}  // namespace tarn::pipeline
