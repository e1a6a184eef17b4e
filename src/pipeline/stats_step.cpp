// tarn stats: two streaming passes over the training data.
//   Pass 1 builds mergeable per-column summaries in parallel (moments, a
//   bounded streaming histogram for bin boundaries, HyperLogLog, category
//   counts). Categorical bins are final after pass 1.
//   Pass 2 recounts positives and negatives per final numeric bin (Shifu's
//   SPDTI), so bin counts are exact even though boundaries are approximate.
// Memory is bounded by columns x (centroids + registers + categories), never
// by the number of rows.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "pipeline/row_context.h"
#include "pipeline/short_string_table.h"
#include "pipeline/steps.h"
#include "stats/binning.h"
#include "stats/category_binning.h"
#include "stats/hash.h"
#include "stats/hyperloglog.h"
#include "stats/metrics.h"
#include "stats/moments.h"
#include "stats/streaming_histogram.h"
#include "stats/value_counts.h"

namespace tarn::pipeline {

namespace {

struct CategoryCount {
  double pos = 0, neg = 0, wpos = 0, wneg = 0;
  void Add(int target, double w) {
    // Branch-free, as ValueCounts' Count: targets arrive in no predictable order, and a
    // choice between the fields' addresses compiled to a branch. neg follows pos, wneg wpos.
    static_assert(offsetof(CategoryCount, neg) == offsetof(CategoryCount, pos) + sizeof(double) &&
                  offsetof(CategoryCount, wneg) == offsetof(CategoryCount, wpos) + sizeof(double));
    const size_t at = (target != 1) * sizeof(double);
    char* const bytes = reinterpret_cast<char*>(this);
    *reinterpret_cast<double*>(bytes + offsetof(CategoryCount, pos) + at) += 1;
    *reinterpret_cast<double*>(bytes + offsetof(CategoryCount, wpos) + at) += w;
  }
  void Merge(const CategoryCount& o) {
    pos += o.pos;
    neg += o.neg;
    wpos += o.wpos;
    wneg += o.wneg;
  }
  double total() const { return pos + neg; }
};

// Lets the category map be searched with a string_view (no allocation per row).
// Categories are mostly short codes: hash up to 8 bytes with one multiply-mix.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    if (s.size() > 8) return std::hash<std::string_view>()(s);
    uint64_t x = 0;
    std::memcpy(&x, s.data(), s.size());
    return static_cast<size_t>(stats::Mix64(x ^ (static_cast<uint64_t>(s.size()) << 59)));
  }
};
using CategoryMap = std::unordered_map<std::string, CategoryCount, StringHash, std::equal_to<>>;

// How a numeric value enters the histogram for the binning method.
struct HistogramFeed {
  bool pos_only, neg_only, weighted;
  double WeightOf(const stats::ValueCounts::Entry& e) const {
    if (pos_only) return weighted ? e.wpos : e.pos;
    if (neg_only) return weighted ? e.wneg : e.neg;
    return weighted ? e.wpos + e.wneg : e.pos + e.neg;
  }
};

// One column's pass-1 summary in one worker.
struct ColumnSummary {
  ColumnSummary(int centroids, int hll_precision, size_t exact_cap)
      : exact(exact_cap), histogram(centroids), hll(hll_precision) {}
  stats::ValueCounts exact;  // numeric: exact counts while the column has few values
  stats::Moments moments;
  stats::StreamingHistogram histogram;
  stats::HyperLogLog hll;
  CategoryCount missing;
  CategoryMap categories;  // hashed into `hll` once at the end (HLL is idempotent)
  // Front tables for short fields: category -> its count in `categories`; numeric text ->
  // 1 + its entry in `exact`, or kMissingText for a missing or invalid value. They only skip
  // work (parsing, hashing) whose result they remember; the counts are the same. Each is
  // turned off where few probes hit (CacheGate).
  static constexpr uint32_t kMissingText = ~uint32_t{0};
  static constexpr size_t kMaxNumericTexts = 1 << 16;
  ShortStringTable<CategoryCount*> category_cache;
  ShortStringTable<uint32_t> numeric_cache;
  CacheGate category_gate;
  RepeatGate numeric_gate;
  uint64_t overflow_categories = 0;  // values of categories not admitted (folded into missing)
  CategoryCount overflow;
  // Hashes of numeric values on their way into `hll`, a thousand at a time: the registers'
  // cache lines are then fetched once a batch, not once a value (on a wide table the sketches
  // of all columns are far bigger than the cache). A register keeps the largest rank it sees,
  // so when a hash arrives does not change the sketch.
  static constexpr size_t kPendingHashes = 1024;
  std::vector<uint64_t> pending_hashes;
  void AddHash(uint64_t hash) {
    pending_hashes.push_back(hash);
    if (pending_hashes.size() >= kPendingHashes) FlushHashes();
  }
  void FlushHashes() {
    for (uint64_t h : pending_hashes) hll.AddHash(h);
    pending_hashes.clear();
  }

  // Moves the exact table's values into the streaming summaries (when the
  // column has too many values to stay exact).
  void ReplayExact(const HistogramFeed& feed) {
    if (exact.size() == 0) {
      exact.Release();
      return;
    }
    exact.ForEach([&](const stats::ValueCounts::Entry& e) {
      moments.AddRepeated(e.value, static_cast<uint64_t>(e.neg + e.pos), e.wneg + e.wpos);
      double w = feed.WeightOf(e);
      if (w > 0) histogram.Add(e.value, w);
      hll.AddHash(stats::Mix64(std::bit_cast<uint64_t>(e.value + 0.0)));
    });
    exact.Release();
    numeric_cache.Clear();
  }

  void Merge(ColumnSummary& o) {
    FlushHashes();
    o.FlushHashes();
    moments.Merge(o.moments);
    histogram.Merge(o.histogram);
    hll.Merge(o.hll);
    missing.Merge(o.missing);
    overflow.Merge(o.overflow);
    for (auto& [k, v] : o.categories) categories[k].Merge(v);
  }
};

struct StatColumn {
  size_t header_index;  // field index in a row
  size_t config_index;  // index into ColumnConfig
  bool categorical;
};

std::vector<double> ToDoubles(const std::vector<long long>& v) {
  return std::vector<double>(v.begin(), v.end());
}

void FillMetrics(data::ColumnConfig& c) {
  auto& b = c.binning;
  auto& s = c.stats;
  auto neg = ToDoubles(b.bin_count_neg), pos = ToDoubles(b.bin_count_pos);
  auto m = stats::ComputeBinMetrics(neg, pos);
  s.ks = m.ks;
  s.iv = m.iv;
  s.woe = m.woe;
  b.bin_count_woe = m.bin_woe;
  auto wm = stats::ComputeBinMetrics(b.bin_weighted_neg, b.bin_weighted_pos);
  s.weighted_ks = wm.ks;
  s.weighted_iv = wm.iv;
  s.weighted_woe = wm.woe;
  b.bin_weighted_woe = wm.bin_woe;
  b.bin_pos_rate = stats::PositiveRates(neg, pos);
}

}  // namespace

Status RunStats(const ModelSet& ms, const StatsOptions& options) {
  if (options.correlation) return ComputeCorrelation(ms);
  const auto& sc = ms.config.stats;
  TARN_ASSIGN_OR_RETURN(auto columns, ms.LoadColumns());
  TARN_ASSIGN_OR_RETURN(auto setup, SetupRows(ms));
  TARN_RETURN_IF_ERROR(CheckHeaderMatches(setup.reader, columns, ms.ColumnConfigPath()));
  TARN_ASSIGN_OR_RETURN(auto method, stats::ParseBinningMethod(sc.binning_method));
  if (!EqualsIgnoreCase(sc.binning_algorithm, "SPDTI") &&
      !EqualsIgnoreCase(sc.binning_algorithm, "SPDT") && !sc.binning_algorithm.empty()) {
    TARN_LOG(kWarn) << "stats.binningAlgorithm " << sc.binning_algorithm
                    << " is computed with tarn's streaming histogram and exact recount (SPDTI)";
  }
  TARN_ASSIGN_OR_RETURN(auto centroid_setting,
                        ms.settings.GetInt("tarn.stats.histogram-centroids"));
  TARN_ASSIGN_OR_RETURN(auto hll_precision, ms.settings.GetInt("tarn.stats.hll-precision"));
  TARN_ASSIGN_OR_RETURN(auto max_categories, ms.settings.GetInt("shifu.max.category.size"));
  TARN_ASSIGN_OR_RETURN(auto seed, ms.settings.GetInt("tarn.seed"));
  if (hll_precision < 4 || hll_precision > 18) {
    return InvalidArgument("setting 'tarn.stats.hll-precision' must be between 4 and 18");
  }
  int centroids = centroid_setting > 0 ? static_cast<int>(centroid_setting)
                                       : std::min(sc.max_num_bin * 100, 10000);
  const bool weighted_bins = stats::UsesWeights(method);
  const bool pos_only = stats::CountsPositivesOnly(method);
  const bool neg_only = stats::CountsNegativesOnly(method);
  const size_t per_worker_category_cap =
      static_cast<size_t>(std::max<long long>(1, max_categories)) * 4;
  const HistogramFeed feed{pos_only, neg_only, weighted_bins};

  std::vector<StatColumn> stat_columns;
  for (size_t i = 0; i < columns.size(); ++i) {
    const auto& c = columns[i];
    // The weight column gets stats too, as in Shifu (it stays out of training: not a candidate).
    if (!(c.IsCandidate() || c.IsWeight()) || !c.column_type) continue;
    stat_columns.push_back({i, i, c.IsCategorical()});
  }
  if (stat_columns.empty()) {
    return FailedPrecondition(
        "no candidate columns to compute stats for (every column is the "
        "target, weight, meta or force-removed)");
  }
  const int threads = ms.Threads();
  RowSampler sampler(sc.sample_rate, sc.sample_neg_only, static_cast<uint64_t>(seed));
  const auto& missing = setup.reader.missing();

  // ---- Pass 1: summaries.
  // Per-lane state (see OrderedLanes): results do not depend on threads or timing.
  OrderedLanes lanes1;
  const int n_lanes = lanes1.lanes();
  // Exact value tables share a memory budget (about 80 bytes a value).
  TARN_ASSIGN_OR_RETURN(auto exact_mb, ms.settings.GetInt("tarn.stats.exact-values-mb"));
  size_t n_numeric = 0;
  for (const auto& c : stat_columns) n_numeric += !c.categorical;
  const size_t exact_cap =
      n_numeric == 0
          ? 0
          : std::min<size_t>(100000, static_cast<size_t>(std::max<long long>(0, exact_mb)) *
                                         (1 << 20) / 80 / n_numeric / n_lanes);
  std::vector<std::vector<ColumnSummary>> summaries(n_lanes);
  for (auto& s : summaries) {
    s.reserve(stat_columns.size());
    for (size_t k = 0; k < stat_columns.size(); ++k) {
      s.emplace_back(centroids, static_cast<int>(hll_precision), exact_cap);
    }
  }
  std::vector<RowCounters> counters(n_lanes);
  struct UsableRow {
    uint32_t index;  // row in the batch
    int target;
    double weight;
  };
  std::vector<std::vector<UsableRow>> lane_rows(n_lanes);
  TARN_ASSIGN_OR_RETURN(auto read1, ms.ReadOptionsFor("stats"));
  read1.threads = threads;
  TARN_ASSIGN_OR_RETURN(
      auto summary1,
      setup.reader.ForEachBatch(read1, [&](int, const data::RowBatch& batch) -> Status {
        OrderedLanes::Guard lane(lanes1, batch.chunk_index);
        auto& mine = summaries[lane.lane()];
        auto& cnt = counters[lane.lane()];
        auto& rows = lane_rows[lane.lane()];
        // Over blocks of rows: row by row, target, sampling and weight; then column by column,
        // so that one column's state stays hot and its type is decided once, and the block's
        // field views, just loaded by the row loop, stay in cache across the columns (a
        // chunk's views are several MB: read chunk-wide first, they were fetched again per
        // block). Per column, rows keep their order, so the sums are the same.
        // A block holds at most kBlockFields views (512 KiB), so wide rows make short blocks.
        constexpr size_t kBlockRows = 1024, kBlockFields = 32768;
        const size_t block_rows =
            std::clamp<size_t>(kBlockFields / batch.num_columns(), 16, kBlockRows);
        struct ParsedValue {
          double value, weight;
          int target;
        };
        ParsedValue values[kBlockRows];
        for (size_t b0 = 0; b0 < batch.size(); b0 += block_rows) {
          rows.clear();
          for (size_t r = b0, end = std::min(batch.size(), b0 + block_rows); r < end; ++r) {
            std::string_view target = batch.field(r, setup.target_index);
            int t = setup.target.Map(target);
            if (t < 0) {
              cnt.AddInvalidTarget(target);
              continue;
            }
            if (!sampler.Keep(batch.file_index, batch.line(r), t)) continue;
            bool bad_weight = false;
            double w = setup.weight_index >= 0
                           ? ParseWeight(batch.field(r, setup.weight_index), &bad_weight)
                           : 1.0;
            cnt.invalid_weight += bad_weight;
            rows.push_back({static_cast<uint32_t>(r), t, w});
          }
          cnt.rows += rows.size();
          const std::span<const UsableRow> block(rows);
          for (size_t k = 0; k < stat_columns.size(); ++k) {
            const size_t col = stat_columns[k].header_index;
            auto& s = mine[k];
            if (stat_columns[k].categorical) {
              for (const auto& row : block) {
                std::string_view f = batch.field(row.index, col);
                if (missing.IsMissing(f)) {
                  s.missing.Add(row.target, row.weight);
                  continue;
                }
                uint64_t bits = 0;
                bool short_key = s.category_gate.on() && PackShortString(f, &bits);
                if (short_key) {
                  if (CategoryCount* c = s.category_cache.Find(bits, f.size())) {
                    c->Add(row.target, row.weight);
                    s.category_gate.Count(true);
                    continue;
                  }
                  if (!s.category_gate.Count(false)) {
                    s.category_cache.Clear();
                    short_key = false;
                  }
                }
                auto it = s.categories.find(f);
                if (it != s.categories.end()) {
                  it->second.Add(row.target, row.weight);
                  if (short_key) s.category_cache.Insert(bits, f.size(), &it->second);
                } else if (s.categories.size() < per_worker_category_cap) {
                  CategoryCount& c =
                      s.categories.emplace(std::string(f), CategoryCount()).first->second;
                  c.Add(row.target, row.weight);
                  if (short_key) s.category_cache.Insert(bits, f.size(), &c);
                } else {
                  s.hll.Add(f);  // only surplus values are hashed per row
                  ++s.overflow_categories;
                  s.overflow.Add(row.target, row.weight);
                }
              }
              continue;
            }
            // While the column is exact: row by row, through the short-text cache.
            size_t i = 0;
            for (; i < block.size() && !s.exact.overflowed(); ++i) {
              const UsableRow& row = block[i];
              std::string_view f = batch.field(row.index, col);
              uint64_t bits = 0;
              const bool short_key = s.numeric_gate.on() && PackShortString(f, &bits);
              if (short_key) {
                const uint32_t known = s.numeric_cache.Find(bits, f.size());
                if (known != 0) {
                  if (known == ColumnSummary::kMissingText) {
                    s.missing.Add(row.target, row.weight);
                  } else {
                    s.exact.CountAt(known - 1, row.target, row.weight);
                  }
                  s.numeric_gate.Count(true);
                  continue;
                }
              }
              const bool remember =
                  short_key && s.numeric_cache.size() < ColumnSummary::kMaxNumericTexts;
              // Repeats are judged with the cache on or off: a missing value repeats (the
              // cache would know its text), a number repeats when the exact table knew it.
              bool repeat = true;
              auto v = missing.IsMissing(f) ? std::nullopt : ParseDouble(f);
              if (!v || !std::isfinite(*v)) {  // invalid numbers count as missing, as in Shifu
                s.missing.Add(row.target, row.weight);
                if (remember) s.numeric_cache.Insert(bits, f.size(), ColumnSummary::kMissingText);
              } else {
                // On overflow the table already holds this value: replay it all.
                const size_t before = s.exact.size();
                size_t entry = 0;
                if (!s.exact.Add(*v, row.target, row.weight, &entry)) {
                  s.ReplayExact(feed);
                  continue;
                }
                repeat = s.exact.size() == before;
                if (remember) {
                  s.numeric_cache.Insert(bits, f.size(), static_cast<uint32_t>(entry + 1));
                }
              }
              if (s.numeric_gate.Count(repeat)) s.numeric_cache.Clear();
            }
            if (i == block.size()) continue;
            // Too many values to stay exact: the rest of the block is parsed first, then fed
            // to each summary in its own loop, in row order. (In one loop the sketch's
            // register misses of hundreds of columns waited behind the moments' divisions.)
            size_t n = 0;
            for (; i < block.size(); ++i) {
              const UsableRow& row = block[i];
              std::string_view f = batch.field(row.index, col);
              std::optional<double> v;
              if (!missing.IsMissing(f)) v = ParseDouble(f);
              if (!v || !std::isfinite(*v)) {  // invalid numbers count as missing, as in Shifu
                s.missing.Add(row.target, row.weight);
                continue;
              }
              values[n] = {*v, row.weight, row.target};
              ++n;
            }
            // Distinct numbers, not spellings ("1" and "1.0" are one value);
            // hashing the bits is also cheaper than hashing the text.
            for (size_t j = 0; j < n; ++j) {
              s.AddHash(stats::Mix64(std::bit_cast<uint64_t>(values[j].value + 0.0)));
            }
            for (size_t j = 0; j < n; ++j) s.moments.Add(values[j].value, values[j].weight);
            for (size_t j = 0; j < n; ++j) {
              const int t = values[j].target;
              if (!(pos_only && t != 1) && !(neg_only && t != 0)) {
                s.histogram.Add(values[j].value, weighted_bins ? values[j].weight : 1.0);
              }
            }
          }
        }
        return Status::Ok();
      }));
  // A numeric column stays exact when every lane stayed exact and the union
  // of their values fits the cap; otherwise every lane replays its table.
  std::vector<char> exact_column(stat_columns.size(), 0);
  for (size_t k = 0; k < stat_columns.size(); ++k) {
    if (stat_columns[k].categorical) continue;
    stats::ValueCounts merged(exact_cap);
    for (int w = 0; w < n_lanes && !merged.overflowed(); ++w) merged.Merge(summaries[w][k].exact);
    if (!merged.overflowed()) {
      exact_column[k] = 1;
      summaries[0][k].exact = std::move(merged);
      for (int w = 1; w < n_lanes; ++w) summaries[w][k].exact.Release();
    } else {
      for (int w = 0; w < n_lanes; ++w) summaries[w][k].ReplayExact(feed);
    }
  }
  for (int w = 1; w < n_lanes; ++w) {
    counters[0].Merge(counters[w]);
    for (size_t k = 0; k < stat_columns.size(); ++k) summaries[0][k].Merge(summaries[w][k]);
  }
  // Exact columns: moments and histogram from the sorted values (deterministic order).
  std::vector<std::vector<stats::ValueCounts::Entry>> exact_values(stat_columns.size());
  for (size_t k = 0; k < stat_columns.size(); ++k) {
    if (!exact_column[k]) continue;
    auto& s = summaries[0][k];
    exact_values[k] = s.exact.Sorted();
    for (const auto& e : exact_values[k]) {
      s.moments.AddRepeated(e.value, static_cast<uint64_t>(e.neg + e.pos), e.wneg + e.wpos);
      double w = feed.WeightOf(e);
      if (w > 0) s.histogram.Add(e.value, w);
    }
    s.exact.Release();
  }
  for (auto& s : summaries[0]) {
    s.FlushHashes();
    for (const auto& [name, cnt] : s.categories) s.hll.Add(name);
  }
  summaries.resize(1);
  const RowCounters& rc = counters[0];
  if (rc.rows == 0) return NoUsableRows(ms, rc);
  rc.Report(ms, "stats");

  // ---- Bins from the summaries.
  const int max_bins = sc.max_num_bin;
  std::vector<std::vector<double>> boundaries(stat_columns.size());
  std::vector<std::unordered_map<std::string, int>> category_bins(stat_columns.size());
  for (size_t k = 0; k < stat_columns.size(); ++k) {
    auto& c = columns[stat_columns[k].config_index];
    auto& s = summaries[0][k];
    auto& b = c.binning;
    b = data::ColumnBinning();
    c.stats = data::ColumnStats();
    if (!stat_columns[k].categorical) {
      if (stats::IsEqualInterval(method)) {
        boundaries[k] = s.moments.count
                            ? stats::EqualIntervalBoundaries(s.moments.min, s.moments.max, max_bins)
                            : std::vector<double>{-INFINITY};
      } else {
        boundaries[k] = s.histogram.TotalWeight() > 0 ? s.histogram.Boundaries(max_bins)
                                                      : std::vector<double>{-INFINITY};
      }
      b.bin_boundary = boundaries[k];
      b.length = static_cast<int>(boundaries[k].size());
      continue;
    }
    // Categorical: keep the most frequent categories, fold rare ones (below
    // cateMinCnt, or beyond shifu.max.category.size) into the missing bin.
    std::vector<std::pair<std::string, CategoryCount>> cats(s.categories.begin(),
                                                            s.categories.end());
    std::sort(cats.begin(), cats.end(), [](const auto& a, const auto& b) {
      return a.second.total() != b.second.total() ? a.second.total() > b.second.total()
                                                  : a.first < b.first;
    });
    CategoryCount folded = s.overflow;
    size_t keep = 0;
    for (auto& [name, cnt] : cats) {
      if (keep < static_cast<size_t>(max_categories) && cnt.total() >= sc.cate_min_cnt) {
        cats[keep++] = {name, cnt};
      } else {
        folded.Merge(cnt);
      }
    }
    if (keep < cats.size()) {
      TARN_LOG(kWarn) << "column '" << c.column_name << "': " << (cats.size() - keep)
                      << " rare or surplus categories folded into the missing bin";
    }
    cats.resize(keep);
    // Bins in order of positive rate, so that KS over the bins is the KS of the
    // column used as a score (the order of the categories is otherwise arbitrary).
    std::stable_sort(cats.begin(), cats.end(), [](const auto& a, const auto& b) {
      return a.second.pos * b.second.total() < b.second.pos * a.second.total();
    });
    std::vector<stats::CategoryStats> cs;
    for (const auto& [name, cnt] : cats) cs.push_back({name, cnt.pos, cnt.neg, cnt.wpos, cnt.wneg});
    auto groups = stats::MergeCategoriesByPositiveRate(cs, sc.cate_max_num_bin);
    for (size_t g = 0; g < groups.size(); ++g) {
      std::vector<std::string> names;
      CategoryCount sum;
      for (size_t idx : groups[g]) {
        names.push_back(cats[idx].first);
        sum.Merge(cats[idx].second);
        category_bins[k][cats[idx].first] = static_cast<int>(g);
      }
      b.bin_category.push_back(stats::MergedCategoryName(names));
      b.bin_count_pos.push_back(std::llround(sum.pos));
      b.bin_count_neg.push_back(std::llround(sum.neg));
      b.bin_weighted_pos.push_back(sum.wpos);
      b.bin_weighted_neg.push_back(sum.wneg);
    }
    CategoryCount miss = s.missing;
    miss.Merge(folded);
    b.bin_count_pos.push_back(std::llround(miss.pos));
    b.bin_count_neg.push_back(std::llround(miss.neg));
    b.bin_weighted_pos.push_back(miss.wpos);
    b.bin_weighted_neg.push_back(miss.wneg);
    b.length = static_cast<int>(groups.size());
  }

  // ---- Pass 2: exact positive/negative counts per numeric bin.
  std::vector<size_t> numeric_k;
  for (size_t k = 0; k < stat_columns.size(); ++k)
    if (!stat_columns[k].categorical && !exact_column[k]) numeric_k.push_back(k);
  // counts[lane][k] = 4 x (bins+1): neg, pos, wneg, wpos
  OrderedLanes lanes2;
  std::vector<std::vector<std::vector<double>>> counts(
      n_lanes, std::vector<std::vector<double>>(stat_columns.size()));
  for (auto& per_worker : counts)
    for (size_t k : numeric_k) per_worker[k].assign(4 * (boundaries[k].size() + 1), 0.0);
  // Exact columns are counted from their value tables, without a second pass.
  for (size_t k = 0; k < stat_columns.size(); ++k) {
    if (!exact_column[k]) continue;
    size_t stride = boundaries[k].size() + 1;
    counts[0][k].assign(4 * stride, 0.0);
    for (int w = 1; w < n_lanes; ++w) counts[w][k].assign(4 * stride, 0.0);
    double* out = counts[0][k].data();
    for (const auto& e : exact_values[k]) {
      size_t bin = stats::FindNumericBin(boundaries[k], e.value);
      out[bin] += e.neg;
      out[stride + bin] += e.pos;
      out[2 * stride + bin] += e.wneg;
      out[3 * stride + bin] += e.wpos;
    }
    // Missing values go to the missing bin.
    const auto& miss = summaries[0][k].missing;
    out[stride - 1] += miss.neg;
    out[2 * stride - 1] += miss.pos;
    out[3 * stride - 1] += miss.wneg;
    out[4 * stride - 1] += miss.wpos;
  }
  double pass2_seconds = 0;
  if (!numeric_k.empty()) {
    TARN_ASSIGN_OR_RETURN(
        auto read2,
        ms.ReadOptionsFor("stats recount of " + std::to_string(numeric_k.size()) + " columns"));
    read2.threads = threads;
    TARN_ASSIGN_OR_RETURN(
        auto summary2,
        setup.reader.ForEachBatch(read2, [&](int, const data::RowBatch& batch) -> Status {
          OrderedLanes::Guard lane(lanes2, batch.chunk_index);
          auto& mine = counts[lane.lane()];
          for (size_t r = 0; r < batch.size(); ++r) {
            const auto& fields = batch.fields(r);
            int t = setup.target.Map(fields[setup.target_index]);
            if (t < 0 || !sampler.Keep(batch.file_index, batch.line(r), t)) continue;
            bool bad_weight = false;
            double w = setup.weight_index >= 0
                           ? ParseWeight(fields[setup.weight_index], &bad_weight)
                           : 1.0;
            for (size_t k : numeric_k) {
              const auto& bounds = boundaries[k];
              std::string_view f = fields[stat_columns[k].header_index];
              size_t bin = bounds.size();  // the missing bin
              if (!missing.IsMissing(f)) {
                auto v = ParseDouble(f);
                if (v && std::isfinite(*v)) bin = stats::FindNumericBin(bounds, *v);
              }
              size_t stride = bounds.size() + 1;
              double* out = mine[k].data();
              out[(t == 1 ? stride : 0) + bin] += 1;
              out[(t == 1 ? 3 : 2) * stride + bin] += w;
            }
          }
          return Status::Ok();
        }));
    pass2_seconds = summary2.seconds;
  }

  // ---- Final stats per column.
  for (size_t k = 0; k < stat_columns.size(); ++k) {
    auto& c = columns[stat_columns[k].config_index];
    auto& s = summaries[0][k];
    auto& b = c.binning;
    auto& st = c.stats;
    if (!stat_columns[k].categorical) {
      size_t stride = boundaries[k].size() + 1;
      std::vector<double> sum(4 * stride, 0.0);
      for (int w = 0; w < n_lanes; ++w)
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += counts[w][k][i];
      for (size_t i = 0; i < stride; ++i) {
        b.bin_count_neg.push_back(std::llround(sum[i]));
        b.bin_count_pos.push_back(std::llround(sum[stride + i]));
        b.bin_weighted_neg.push_back(sum[2 * stride + i]);
        b.bin_weighted_pos.push_back(sum[3 * stride + i]);
      }
      const auto& m = s.moments;
      if (m.count > 0) {
        st.min = m.min;
        st.max = m.max;
        st.mean = m.Mean();
        st.std_dev = m.SampleStdDev();
        st.skewness = m.Skewness();
        st.kurtosis = m.Kurtosis();
        std::vector<double> bin_totals;
        for (size_t i = 0; i + 1 < stride; ++i) bin_totals.push_back(sum[i] + sum[stride + i]);
        st.median = stats::PercentileFromBins(boundaries[k], bin_totals, m.min, m.max, 0.5);
        st.p25 = stats::PercentileFromBins(boundaries[k], bin_totals, m.min, m.max, 0.25);
        st.p75 = stats::PercentileFromBins(boundaries[k], bin_totals, m.min, m.max, 0.75);
      } else {
        // No valid value at all: z-scores become 0 and WOE carries the signal.
        st.mean = 0.0;
        st.std_dev = 0.0;
      }
      st.valid_num_count = static_cast<long long>(m.count);
      st.missing_count = static_cast<long long>(rc.rows - m.count);
    } else {
      // Categorical mean and sd are over the bins' positive rates, weighted by
      // the bins' counts (missing bin included), as Shifu does.
      auto rates = stats::PositiveRates(ToDoubles(b.bin_count_neg), ToDoubles(b.bin_count_pos));
      double n = 0, sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
      for (size_t i = 0; i < rates.size(); ++i) {
        double cnt = static_cast<double>(b.bin_count_neg[i] + b.bin_count_pos[i]);
        if (cnt <= 0) continue;
        n += cnt;
        sum += cnt * rates[i];
        sq += cnt * rates[i] * rates[i];
        lo = std::min(lo, rates[i]);
        hi = std::max(hi, rates[i]);
      }
      double mean = n > 0 ? sum / n : 0;
      st.mean = mean;
      st.std_dev = n > 1 ? std::sqrt(std::max(0.0, (sq - n * mean * mean) / (n - 1))) : 0.0;
      if (n > 0) {
        st.min = lo;
        st.max = hi;
      }
      uint64_t non_missing = 0;
      for (const auto& [name, cnt] : s.categories)
        non_missing += static_cast<uint64_t>(cnt.total());
      non_missing += static_cast<uint64_t>(s.overflow.total());
      st.valid_num_count = static_cast<long long>(non_missing);
      st.missing_count = static_cast<long long>(s.missing.total());
    }
    st.total_count = static_cast<long long>(rc.rows);
    st.missing_percentage =
        rc.rows ? static_cast<double>(*st.missing_count) / static_cast<double>(rc.rows) : 0.0;
    // Categories and few-valued numbers are counted exactly; the rest by HyperLogLog.
    if (exact_column[k]) {
      st.distinct_count = static_cast<long long>(exact_values[k].size());
    } else if (stat_columns[k].categorical && s.overflow.total() == 0) {
      st.distinct_count = static_cast<long long>(s.categories.size());
    } else {
      st.distinct_count = static_cast<long long>(s.hll.Estimate());
    }
    FillMetrics(c);
  }

  // Keep the previous ColumnConfig.json as Shifu does, then replace it.
  TARN_RETURN_IF_ERROR(MakeDirs(ms.Path("tmp")));
  if (PathExists(ms.ColumnConfigPath())) {
    TARN_ASSIGN_OR_RETURN(auto previous, ReadFile(ms.ColumnConfigPath()));
    TARN_RETURN_IF_ERROR(WriteFileAtomic(ms.Path("tmp/ColumnConfig.json"), previous));
  }
  TARN_RETURN_IF_ERROR(ms.SaveColumns(columns));
  TARN_LOG(kInfo) << "stats: " << rc.rows << " rows, " << stat_columns.size() << " columns ("
                  << FormatDuration(summary1.seconds) << " + " << FormatDuration(pass2_seconds)
                  << ") -> " << ms.ColumnConfigPath();
  return Status::Ok();
}

}  // namespace tarn::pipeline
