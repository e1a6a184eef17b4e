#include "train/graph_trainer.h"

#include <algorithm>

#include "data/normalizer.h"
#include "model/scorer.h"
#include "train/sampling.h"

namespace tarn::train {

namespace {

// The input columns' normalization, as the Scorer rebuilds it from the model file.
Result<std::vector<data::ColumnNormalizer>> Normalizers(const model::TrainingData& data,
                                                        double std_dev_cut_off) {
  TARN_ASSIGN_OR_RETURN(auto norm, data::ParseNormType(data.norm_type));
  std::vector<data::ColumnNormalizer> normalizers;
  for (size_t k = 0; k < data.columns.size(); ++k) {
    TARN_ASSIGN_OR_RETURN(auto n,
                          data::ColumnNormalizer::Create(data.columns[k], norm, std_dev_cut_off));
    if (n.width() != data.widths[k]) {
      return FailedPrecondition("column '" + data.columns[k].column_name + "' normalizes to " +
                                std::to_string(n.width()) + " values but the data holds " +
                                std::to_string(data.widths[k]) + "; rerun 'tarn norm'");
    }
    normalizers.push_back(std::move(n));
  }
  return normalizers;
}

}  // namespace

Result<GraphModel> BuildGraphModelFor(const std::string& algorithm,
                                      const model::TrainParams& params,
                                      const model::TrainingData& data, double std_dev_cut_off,
                                      const std::vector<std::string>& model_set_columns,
                                      const std::string& model_set_dir) {
  TARN_ASSIGN_OR_RETURN(auto normalizers, Normalizers(data, std_dev_cut_off));
  std::vector<GraphColumn> columns;
  int dense_width = 0;
  for (size_t k = 0; k < normalizers.size(); ++k) {
    const auto& n = normalizers[k];
    GraphColumn c;
    c.name = n.name();
    c.column_num = n.column_num();
    for (const auto& id : data.id_columns) {
      if (id.name == n.name() && id.column_num == n.column_num()) {
        c.has_ids = data.columns[k].IsCategorical();
        c.id_count = static_cast<int>(id.vocabulary);
      }
    }
    dense_width += n.width() - static_cast<int>(n.index_slots().size());
    columns.push_back(std::move(c));
  }
  return BuildGraphModel(algorithm, params, columns, dense_width, model_set_columns, model_set_dir);
}

Result<GraphTrainer> GraphTrainer::Create(const model::GraphSpec& spec,
                                          const model::TrainingData& data, double std_dev_cut_off,
                                          int batch, uint64_t seed, model::LossKind shifu_kind) {
  TARN_ASSIGN_OR_RETURN(auto normalizers, Normalizers(data, std_dev_cut_off));
  GraphTrainer t;
  TARN_ASSIGN_OR_RETURN(auto feed, model::MakeGraphFeed(spec, normalizers, data.id_columns));
  t.feed_ = std::make_unique<model::GraphFeed>(std::move(feed));
  t.data_ = &data;
  t.graph_ = std::make_unique<model::Graph>(spec);
  t.trainable_ = t.graph_->DenseParameterCount();
  for (const auto& s : t.graph_->tables()) {
    t.table_offset_.push_back(t.trainable_);
    t.trainable_ += static_cast<size_t>(s.rows) * s.dim;
  }
  t.batch_ = std::max(1, batch);
  t.seed_ = seed;
  t.shifu_kind_ = shifu_kind;
  const int block = std::max(t.batch_, 512);  // validation blocks too
  t.ws_ = t.graph_->MakeWorkspace(block);
  t.dense_.resize(static_cast<size_t>(block) * t.feed_->dense_width());
  t.y_.resize(block);
  t.w_.resize(block);
  t.pred_.resize(block);
  t.ids_.assign(t.feed_->id_inputs(), std::vector<int64_t>(block));
  for (auto& v : t.ids_) t.id_pointers_.push_back(v.data());
  t.grad_.resize(t.trainable_);
  return t;
}

std::vector<bool> GraphTrainer::UnregularizedMask(
    const std::vector<std::string>& unregularized) const {
  std::vector<bool> mask = graph_->spec().UnregularizedMask();
  mask.resize(trainable_, false);
  const auto& nodes = graph_->spec().nodes;
  const auto& layout = graph_->layout();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (std::find(unregularized.begin(), unregularized.end(), nodes[i].name) ==
        unregularized.end()) {
      continue;
    }
    size_t begin = layout[i].param_offset, count = layout[i].param_count;
    if (layout[i].table >= 0) {
      const auto& t = graph_->tables()[layout[i].table];
      begin = table_offset_[layout[i].table];
      count = static_cast<size_t>(t.rows) * t.dim;
    }
    std::fill_n(mask.begin() + static_cast<ptrdiff_t>(begin), count, true);
  }
  return mask;
}

void GraphTrainer::InitParameters(float* params, uint64_t seed) const {
  std::vector<float*> tables;
  for (size_t off : table_offset_) tables.push_back(params + off);
  graph_->InitParameters(params, tables, seed);
  graph_->InitState(params + trainable_);
}

model::GraphParams GraphTrainer::Params(const float* params) const {
  tables_.clear();
  for (size_t off : table_offset_) tables_.push_back(params + off);
  return {params, tables_, params + trainable_};
}

void GraphTrainer::Gather(const std::vector<uint32_t>& order, size_t lo, size_t hi) const {
  const int inputs = data_->inputs;
  for (size_t i = lo; i < hi; ++i) {
    const float* row = data_->row(order[i]);
    const int b = static_cast<int>(i - lo);
    feed_->Gather(row, data_->id_row(order[i]), b, dense_.data(), id_pointers_.data());
    y_[b] = row[inputs];
    w_[b] = row[inputs + 1];
  }
}

void GraphTrainer::ApplyGradient(float* params, double weight, int epoch,
                                 model::Optimizer* optimizer) {
  std::fill(grad_.begin() + static_cast<ptrdiff_t>(graph_->DenseParameterCount()), grad_.end(),
            0.0f);
  for (size_t t = 0; t < table_offset_.size(); ++t) {
    const model::SparseRows& g = ws_->table_gradients[t];
    for (size_t k = 0; k < g.count; ++k) {
      std::copy_n(g.grad(k), g.dim, grad_.data() + table_offset_[t] + g.rows[k] * g.dim);
    }
  }
  const float scale = static_cast<float>(1.0 / weight);
  for (auto& v : grad_) v *= scale;
  optimizer->Step(params, grad_.data(), epoch);
}

Status GraphTrainer::RunEpoch(std::vector<float>* params, const std::vector<uint32_t>& order,
                              int epoch, model::Optimizer* optimizer, const Progress& progress,
                              TrainSums* sums) {
  const size_t batch = static_cast<size_t>(batch_);
  for (size_t begin = 0; begin < order.size(); begin += batch) {
    const size_t end = std::min(order.size(), begin + batch);
    const int n = static_cast<int>(end - begin);
    Gather(order, begin, end);
    const float* const dense[] = {dense_.data()};
    const int64_t* const* ids = const_cast<const int64_t* const*>(id_pointers_.data());
    model::GraphInputs in{n, std::span<const float* const>(dense, feed_->dense_width() > 0 ? 1 : 0),
                          std::span<const int64_t* const>(ids, id_pointers_.size())};
    std::fill_n(grad_.begin(), graph_->DenseParameterCount(), 0.0f);
    TARN_ASSIGN_OR_RETURN(
        double loss,
        graph_->ForwardBackward(Params(params->data()), in, y_.data(), w_.data(), grad_.data(),
                                ws_.get(), DropoutSeed(seed_, epoch, begin, 0), pred_.data()));
    double weight = 0;
    for (int i = 0; i < n; ++i) {
      weight += w_[i];
      sums->shifu.Add(shifu_kind_, pred_[i], y_[i]);
    }
    sums->loss += loss;
    sums->weight += weight;
    sums->rows += n;
    if (weight > 0) ApplyGradient(params->data(), weight, epoch, optimizer);
    graph_->UpdateState(*ws_, params->data() + trainable_);
    if (progress) progress(static_cast<int64_t>(begin / batch), end, *sums);
  }
  return Status::Ok();
}

ValidationSummary GraphTrainer::Validate(const std::vector<float>& params,
                                         const std::vector<uint32_t>& rows) const {
  std::vector<float> scores(rows.size());
  const size_t block = y_.size();
  for (size_t begin = 0; begin < rows.size(); begin += block) {
    const size_t end = std::min(rows.size(), begin + block);
    Gather(rows, begin, end);
    const float* const dense[] = {dense_.data()};
    const int64_t* const* ids = const_cast<const int64_t* const*>(id_pointers_.data());
    model::GraphInputs in{static_cast<int>(end - begin),
                          std::span<const float* const>(dense, feed_->dense_width() > 0 ? 1 : 0),
                          std::span<const int64_t* const>(ids, id_pointers_.size())};
    // The ids were checked against the tables when the trainer was made.
    (void)graph_->Predict(Params(params.data()), in, scores.data() + begin, ws_.get());
  }
  return SummarizeScores(*data_, rows, scores, graph_->spec().loss, shifu_kind_);
}

}  // namespace tarn::train
