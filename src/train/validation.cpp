#include "train/validation.h"

#include <algorithm>
#include <cmath>

#include "common/thread_pool.h"

namespace tarn::train {

void ValidationSummary::Merge(const ValidationSummary& other) {
  loss += other.loss;
  weight += other.weight;
  shifu.Merge(other.shifu);
  positive.resize(std::max(positive.size(), other.positive.size()));
  negative.resize(std::max(negative.size(), other.negative.size()));
  for (size_t i = 0; i < other.positive.size(); ++i) positive[i] += other.positive[i];
  for (size_t i = 0; i < other.negative.size(); ++i) negative[i] += other.negative[i];
}

double ValidationSummary::MeanLoss() const { return weight > 0 ? loss / weight : NAN; }

double ValidationSummary::Auc() const {
  double total_pos = 0, total_neg = 0;
  for (double p : positive) total_pos += p;
  for (double n : negative) total_neg += n;
  if (total_pos <= 0 || total_neg <= 0 || positive.size() != negative.size()) return NAN;
  double tp = 0, fp = 0, area = 0;
  for (size_t i = positive.size(); i-- > 0;) {  // from the highest scores down
    const double tp2 = tp + positive[i], fp2 = fp + negative[i];
    area += (fp2 - fp) * (tp + tp2) / 2;
    tp = tp2;
    fp = fp2;
  }
  return area / (total_pos * total_neg);
}

namespace {

void AddScoreBins(const model::TrainingData& data, const std::vector<uint32_t>& rows,
                  const std::vector<float>& scores, ValidationSummary* summary) {
  const int inputs = data.inputs;
  summary->positive.assign(kScoreBins, 0.0);
  summary->negative.assign(kScoreBins, 0.0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const float* r = data.row(rows[i]);
    const int bin = std::clamp(static_cast<int>(scores[i] * kScoreBins), 0, kScoreBins - 1);
    (r[inputs] >= 0.5f ? summary->positive : summary->negative)[bin] += r[inputs + 1];
  }
}

}  // namespace

ValidationSummary Validate(const model::Network& net, const float* params,
                           const model::TrainingData& data, const std::vector<uint32_t>& rows,
                           model::LossKind shifu_kind, int threads) {
  ValidationSummary summary;
  if (rows.empty()) return summary;
  constexpr int kBlock = 512;
  const size_t blocks = (rows.size() + kBlock - 1) / kBlock;
  // Per-block sums added in block order: the same result for any thread count.
  std::vector<double> loss(blocks, 0.0), weight(blocks, 0.0);
  std::vector<model::ShifuError> shifu(blocks);
  std::vector<float> scores(rows.size());
  std::vector<std::unique_ptr<model::Workspace>> ws(threads);
  std::vector<std::vector<float>> xb(threads);
  const auto kind = net.spec().loss;
  const int inputs = data.inputs;
  ParallelFor(threads, blocks, [&](int t, size_t b) {
    if (!ws[t]) {
      ws[t] = net.MakeWorkspace(kBlock);
      xb[t].resize(static_cast<size_t>(kBlock) * inputs);
    }
    const size_t begin = b * kBlock, end = std::min(rows.size(), begin + kBlock);
    const int n = static_cast<int>(end - begin);
    for (int i = 0; i < n; ++i) {
      std::copy_n(data.row(rows[begin + i]), inputs,
                  xb[t].data() + static_cast<size_t>(i) * inputs);
    }
    net.Predict(params, xb[t].data(), n, scores.data() + begin, ws[t].get());
    for (int i = 0; i < n; ++i) {
      const float* r = data.row(rows[begin + i]);
      const double p = scores[begin + i], y = r[inputs], w = r[inputs + 1];
      loss[b] += w * model::RowLoss(kind, p, y);
      weight[b] += w;
      shifu[b].Add(shifu_kind, p, y);
    }
  });
  for (size_t b = 0; b < blocks; ++b) {
    summary.loss += loss[b];
    summary.weight += weight[b];
    summary.shifu.Merge(shifu[b]);
  }
  AddScoreBins(data, rows, scores, &summary);
  return summary;
}

ValidationSummary SummarizeScores(const model::TrainingData& data,
                                  const std::vector<uint32_t>& rows,
                                  const std::vector<float>& scores, model::LossKind loss,
                                  model::LossKind shifu_kind) {
  ValidationSummary summary;
  if (rows.empty()) return summary;
  const int inputs = data.inputs;
  for (size_t i = 0; i < rows.size(); ++i) {
    const float* r = data.row(rows[i]);
    const double p = scores[i], y = r[inputs], w = r[inputs + 1];
    summary.loss += w * model::RowLoss(loss, p, y);
    summary.weight += w;
    summary.shifu.Add(shifu_kind, p, y);
  }
  AddScoreBins(data, rows, scores, &summary);
  return summary;
}

}  // namespace tarn::train
