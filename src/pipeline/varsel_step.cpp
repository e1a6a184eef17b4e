// tarn varsel: sets finalSelect in ColumnConfig.json (SHIFU-COMPAT §4
// "Variable selection"): the auto-filter, then a ranking by KS, IV, MIX or
// PARETO, keeping filterNum columns (force-selected ones always).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
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

Status SaveWithHistory(const ModelSet& ms, const std::vector<data::ColumnConfig>& cols,
                       const std::string& what) {
  // varsel/ColumnConfig.json.N keeps each version before it is changed.
  TARN_RETURN_IF_ERROR(MakeDirs(ms.Path("varsel")));
  int n = 0;
  while (PathExists(ms.Path("varsel/ColumnConfig.json." + std::to_string(n)))) ++n;
  TARN_ASSIGN_OR_RETURN(auto previous, ReadFile(ms.ColumnConfigPath()));
  TARN_RETURN_IF_ERROR(
      WriteFileAtomic(ms.Path("varsel/ColumnConfig.json." + std::to_string(n)), previous));
  TARN_RETURN_IF_ERROR(ms.SaveColumns(cols));
  std::string history;
  if (PathExists(ms.Path("varsel/varsel.history"))) {
    TARN_ASSIGN_OR_RETURN(history, ReadFile(ms.Path("varsel/varsel.history")));
  }
  history += Timestamp() + "\t" + std::to_string(n) + "\t" + what + "\n";
  return WriteFileAtomic(ms.Path("varsel/varsel.history"), history);
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
  std::string by = ToLower(vc.filter_by);
  if (by == "ks") {
    ranked = RankBy(cols, pool, Ks);
  } else if (by == "iv") {
    ranked = RankBy(cols, pool, Iv);
  } else if (by == "mix") {
    ranked = RankMix(cols, pool);
  } else if (by == "pareto") {
    ranked = RankPareto(cols, pool);
  } else if (by == "se" || by == "st" || by == "sr" || by == "voted") {
    return Unsupported("varSelect.filterBy " + vc.filter_by +
                       " needs a trained model (sensitivity analysis), which tarn does not do "
                       "yet; use KS, IV, MIX or PARETO");
  } else {
    return InvalidArgument(ms.ModelConfigPath() +
                           ": varSelect.filterBy must be KS, IV, MIX or "
                           "PARETO, got '" +
                           vc.filter_by + "'");
  }

  size_t budget = ranked.size();
  if (vc.filter_enable) {
    size_t inputs = ranked.size() + force.size();
    budget = vc.filter_num > 0
                 ? static_cast<size_t>(vc.filter_num)
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
  TARN_RETURN_IF_ERROR(SaveWithHistory(ms, cols, what));
  std::string reasons;
  for (const auto& [why, n] : dropped) reasons += "; " + std::to_string(n) + " dropped: " + why;
  TARN_LOG(kInfo) << "varsel: " << chosen.size() << " columns selected by " << vc.filter_by << " ("
                  << force.size() << " force-selected)" << reasons;
  return Status::Ok();
}

}  // namespace tarn::pipeline
