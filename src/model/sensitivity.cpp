#include "model/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "common/strings.h"
#include "common/thread_pool.h"

namespace tarn::model {

namespace {

// Rows per chunk: fixed, so the partial sums (and their order) do not depend
// on the thread count.
constexpr size_t kChunkRows = 1024;

}  // namespace

Result<SensitivityKind> ParseSensitivityKind(std::string_view name) {
  if (EqualsIgnoreCase(name, "SE")) return SensitivityKind::kScore;
  if (EqualsIgnoreCase(name, "ST")) return SensitivityKind::kTarget;
  return InvalidArgument("sensitivity kind must be SE or ST, got '" + std::string(name) + "'");
}

double ColumnSensitivity::Mean() const { return rows ? sum_abs / rows : 0; }
double ColumnSensitivity::Rms() const { return rows ? std::sqrt(sum_sq / rows) : 0; }
double ColumnSensitivity::Variance() const {
  if (!rows) return 0;
  const double mean = Mean();
  return sum_sq / rows - mean * mean;
}

std::vector<ColumnSensitivity> ComputeSensitivity(const Network& net, const float* params,
                                                  const TrainingData& data, SensitivityKind kind,
                                                  int threads) {
  const size_t columns = data.columns.size();
  const size_t rows = data.x.size() / static_cast<size_t>(data.stride());
  const size_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  const int inputs = data.inputs;
  std::vector<int> offsets(columns, 0);
  for (size_t c = 1; c < columns; ++c) offsets[c] = offsets[c - 1] + data.widths[c - 1];

  // Per chunk and column: sum |d| and sum d^2.
  std::vector<double> sum_abs(chunks * columns, 0.0), sum_sq(chunks * columns, 0.0);
  struct Scratch {
    std::unique_ptr<Workspace> ws;
    std::vector<float> x, base, perturbed;
  };
  threads = std::max(1, threads);
  std::vector<Scratch> scratch(threads);
  ParallelFor(threads, chunks, [&](int t, size_t chunk) {
    Scratch& s = scratch[t];
    if (!s.ws) {
      s.ws = net.MakeWorkspace(static_cast<int>(kChunkRows));
      s.x.resize(kChunkRows * inputs);
      s.base.resize(kChunkRows);
      s.perturbed.resize(kChunkRows);
    }
    const size_t begin = chunk * kChunkRows, end = std::min(rows, begin + kChunkRows);
    const int n = static_cast<int>(end - begin);
    for (int i = 0; i < n; ++i) {
      std::copy_n(data.row(static_cast<uint32_t>(begin + i)), inputs,
                  s.x.data() + static_cast<size_t>(i) * inputs);
    }
    net.Predict(params, s.x.data(), n, s.base.data(), s.ws.get());
    std::vector<float> saved;
    for (size_t c = 0; c < columns; ++c) {
      const int offset = offsets[c], width = data.widths[c];
      // Zero the column's inputs in place, score, then put them back.
      saved.resize(static_cast<size_t>(n) * width);
      for (int i = 0; i < n; ++i) {
        float* in = s.x.data() + static_cast<size_t>(i) * inputs + offset;
        std::copy_n(in, width, saved.data() + static_cast<size_t>(i) * width);
        std::fill_n(in, width, 0.0f);
      }
      net.Predict(params, s.x.data(), n, s.perturbed.data(), s.ws.get());
      double a = 0, q = 0;
      for (int i = 0; i < n; ++i) {
        const double reference = kind == SensitivityKind::kScore
                                     ? s.base[i]
                                     : data.row(static_cast<uint32_t>(begin + i))[inputs];
        const double d = reference - static_cast<double>(s.perturbed[i]);
        a += std::fabs(d);
        q += d * d;
        std::copy_n(saved.data() + static_cast<size_t>(i) * width, width,
                    s.x.data() + static_cast<size_t>(i) * inputs + offset);
      }
      sum_abs[chunk * columns + c] = a;
      sum_sq[chunk * columns + c] = q;
    }
  });

  std::vector<ColumnSensitivity> out(columns);
  for (size_t c = 0; c < columns; ++c) {
    out[c].column = static_cast<int>(c);
    out[c].rows = rows;
    for (size_t k = 0; k < chunks; ++k) {
      out[c].sum_abs += sum_abs[k * columns + c];
      out[c].sum_sq += sum_sq[k * columns + c];
    }
  }
  return out;
}

std::vector<int> RankByRms(const std::vector<ColumnSensitivity>& sensitivity) {
  std::vector<int> order(sensitivity.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return sensitivity[a].Rms() > sensitivity[b].Rms(); });
  return order;
}

}  // namespace tarn::model
