#include "train/graph_trainer.h"

#include <algorithm>
#include <cctype>

#include "data/normalizer.h"
#include "model/scorer.h"
#include "model/sparse_optimizer.h"
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

// A table's name (it names checkpoint files): its node's, with any other
// character than [A-Za-z0-9_.-] as '_'.
std::string TableName(const std::string& node, size_t t) {
  std::string name = node.substr(0, 64);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') c = '_';
  }
  return name.empty() ? "table" + std::to_string(t) : name;
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

model::OptimizerConfig GraphOptimizerConfig(model::OptimizerConfig config, const GraphModel& m) {
  if (m.l2) {
    config.regularization = *m.l2;
    config.reg = model::OptimizerConfig::Reg::kL2;
  }
  return config;
}

std::vector<bool> GraphUnregularizedMask(const model::Graph& graph,
                                         const std::vector<std::string>& unregularized) {
  std::vector<bool> mask = graph.spec().UnregularizedMask();
  mask.resize(graph.DenseParameterCount(), false);
  const auto& nodes = graph.spec().nodes;
  const auto& layout = graph.layout();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (layout[i].table >= 0 || std::find(unregularized.begin(), unregularized.end(),
                                          nodes[i].name) == unregularized.end()) {
      continue;
    }
    std::fill_n(mask.begin() + static_cast<ptrdiff_t>(layout[i].param_offset),
                layout[i].param_count, true);
  }
  return mask;
}

Result<std::vector<model::TableSpec>> GraphTableSpecs(const model::Graph& graph,
                                                      const model::OptimizerConfig& dense,
                                                      uint64_t seed) {
  TARN_ASSIGN_OR_RETURN(auto optimizer, model::SparseOptimizerConfig::FromDense(dense));
  std::vector<model::TableSpec> specs;
  for (size_t t = 0; t < graph.tables().size(); ++t) {
    const auto& shape = graph.tables()[t];
    model::TableSpec s;
    s.name = TableName(shape.node, t);
    s.rows = static_cast<uint64_t>(shape.rows);
    s.dim = static_cast<uint32_t>(shape.dim);
    s.seed = seed;
    s.optimizer = optimizer;
    TARN_RETURN_IF_ERROR(s.Validate());
    specs.push_back(std::move(s));
  }
  return specs;
}

std::vector<float> GraphModelFileParams(const model::Graph& graph,
                                        std::span<const float> dense_and_state,
                                        const std::vector<std::vector<float>>& tables) {
  const size_t dense = graph.DenseParameterCount();
  std::vector<float> out(dense_and_state.begin(), dense_and_state.begin() + dense);
  for (const auto& t : tables) out.insert(out.end(), t.begin(), t.end());
  out.insert(out.end(), dense_and_state.begin() + dense, dense_and_state.end());
  return out;
}

std::vector<float> InitialTable(const model::TableSpec& spec) {
  std::vector<float> t(spec.rows * spec.dim);
  for (uint64_t r = 0; r < spec.rows; ++r) model::InitialRow(spec, r, t.data() + r * spec.dim);
  return t;
}

// LocalTables

Result<std::unique_ptr<LocalTables>> LocalTables::Create(
    const std::vector<model::TableSpec>& specs) {
  auto out = std::make_unique<LocalTables>();
  for (const auto& s : specs) {
    TARN_ASSIGN_OR_RETURN(auto t, model::EmbeddingTable::Create(s));
    out->tables_.push_back(std::move(t));
  }
  return out;
}

Status LocalTables::Fetch(size_t table, std::span<const uint64_t> ids, float* out) {
  tables_[table]->Gather(ids, out);
  return Status::Ok();
}

void LocalTables::Apply(std::span<const TableGradient> gradients, double weight, int epoch) {
  const float scale = static_cast<float>(1.0 / weight);
  for (size_t t = 0; t < tables_.size(); ++t) {
    const TableGradient& g = gradients[t];
    scaled_.assign(g.grads.begin(), g.grads.end());
    for (float& v : scaled_) v *= scale;
    tables_[t]->ApplyGradient(g.ids, scaled_.data(), epoch);
  }
}

std::vector<float> LocalTables::Whole(size_t t) const {
  const model::EmbeddingTable& table = *tables_[t];
  std::vector<float> whole = InitialTable(table.spec());
  const size_t dim = table.spec().dim;
  for (size_t i = 0; i < table.rows_held(); ++i) {
    std::copy_n(table.held_row(i), dim, whole.data() + table.held_id(i) * dim);
  }
  return whole;
}

std::vector<std::vector<float>> LocalTables::WholeTables() const {
  std::vector<std::vector<float>> out;
  for (size_t t = 0; t < tables_.size(); ++t) out.push_back(Whole(t));
  return out;
}

size_t LocalTables::StateFloats() const {
  size_t n = 0;
  for (const auto& t : tables_) n += t->spec().rows * t->state_per_row();
  return n;
}

void LocalTables::SaveState(std::vector<float>* state, std::vector<uint64_t>* steps) const {
  for (const auto& t : tables_) {
    const size_t dim = t->spec().dim, per_row = t->state_per_row();
    const size_t at = state->size();
    state->resize(at + t->spec().rows * per_row, 0.0f);
    for (size_t i = 0; i < t->rows_held(); ++i) {
      std::copy_n(t->held_row(i) + dim, per_row, state->data() + at + t->held_id(i) * per_row);
    }
    steps->push_back(t->steps());
  }
}

Status LocalTables::LoadState(const std::vector<std::span<const float>>& values,
                              std::span<const float> state, const std::vector<uint64_t>& steps) {
  if (values.size() != tables_.size() || steps.size() != tables_.size() ||
      state.size() != StateFloats()) {
    return Corrupt("the checkpoint's embedding tables do not match the model's");
  }
  size_t at = 0;
  for (size_t k = 0; k < tables_.size(); ++k) {
    model::EmbeddingTable& t = *tables_[k];
    const size_t dim = t.spec().dim, per_row = t.state_per_row();
    std::vector<float> fresh(dim), row(dim + per_row);
    for (uint64_t r = 0; r < t.spec().rows; ++r) {
      const float* v = values[k].data() + r * dim;
      const float* s = state.data() + at + r * per_row;
      model::InitialRow(t.spec(), r, fresh.data());
      const bool moved = !std::equal(v, v + dim, fresh.data()) ||
                         std::any_of(s, s + per_row, [](float x) { return x != 0.0f; });
      if (!moved) continue;
      std::copy_n(v, dim, row.data());
      std::copy_n(s, per_row, row.data() + dim);
      TARN_RETURN_IF_ERROR(t.Restore(r, row.data()));
    }
    at += t.spec().rows * per_row;
    t.set_steps(steps[k]);
  }
  return Status::Ok();
}

// GraphTrainer

struct GraphTrainer::Scratch {
  std::unique_ptr<model::GraphWorkspace> ws;
  std::vector<float> dense, y, w, pred;
  std::vector<std::vector<int64_t>> ids;
  std::vector<int64_t*> id_pointers;
  // Per table: each row's table row (global, then compact), the distinct
  // rows (ascending) and their values, and the gradient's global ids.
  std::vector<std::vector<int64_t>> rows;
  std::vector<int64_t*> row_pointers;
  std::vector<std::vector<uint64_t>> distinct, gradient_ids;
  std::vector<std::vector<float>> compact;
  std::vector<const float*> compact_pointers;
  std::vector<TableGradient> gradients;

  Scratch(const model::Graph& graph, const model::GraphFeed& feed, int block) {
    ws = graph.MakeWorkspace(block);
    dense.resize(static_cast<size_t>(block) * feed.dense_width());
    y.resize(block);
    w.resize(block);
    pred.resize(block);
    ids.assign(feed.id_inputs(), std::vector<int64_t>(block));
    for (auto& v : ids) id_pointers.push_back(v.data());
    for (const auto& t : graph.tables()) {
      rows.emplace_back(block);
      distinct.emplace_back();
      distinct.back().reserve(block);
      gradient_ids.emplace_back(block);
      compact.emplace_back(static_cast<size_t>(block) * t.dim);
    }
    for (auto& v : rows) row_pointers.push_back(v.data());
    for (auto& v : compact) compact_pointers.push_back(v.data());
    gradients.resize(graph.tables().size());
  }

  model::GraphInputs Inputs(int n, const model::GraphFeed& feed, bool with_rows) {
    dense_pointer = dense.data();
    return {n, std::span<const float* const>(&dense_pointer, feed.dense_width() > 0 ? 1 : 0),
            std::span<const int64_t* const>(const_cast<const int64_t* const*>(id_pointers.data()),
                                            id_pointers.size()),
            with_rows
                ? std::span<const int64_t* const>(
                      const_cast<const int64_t* const*>(row_pointers.data()), row_pointers.size())
                : std::span<const int64_t* const>()};
  }

  // Rows order[lo, hi) into the buffers, and their table rows into the
  // compact tables, fetched from `source`.
  Status Load(const model::TrainingData& data, const model::Graph& graph,
              const model::GraphFeed& feed, TableSource* source, const std::vector<uint32_t>& order,
              size_t lo, size_t hi) {
    const int inputs = data.inputs;
    const int n = static_cast<int>(hi - lo);
    for (size_t i = lo; i < hi; ++i) {
      const float* row = data.row(order[i]);
      const int b = static_cast<int>(i - lo);
      feed.Gather(row, data.id_row(order[i]), b, dense.data(), id_pointers.data());
      y[b] = row[inputs];
      w[b] = row[inputs + 1];
    }
    if (graph.tables().empty()) return Status::Ok();
    if (!source) return Internal("a graph with embedding tables trains without a table source");
    TARN_RETURN_IF_ERROR(graph.TableRows(Inputs(n, feed, false), row_pointers));
    for (size_t t = 0; t < rows.size(); ++t) {
      int64_t* r = rows[t].data();
      auto& d = distinct[t];
      d.assign(r, r + n);
      std::sort(d.begin(), d.end());
      d.erase(std::unique(d.begin(), d.end()), d.end());
      for (int b = 0; b < n; ++b) {
        r[b] = std::lower_bound(d.begin(), d.end(), static_cast<uint64_t>(r[b])) - d.begin();
      }
      TARN_RETURN_IF_ERROR(source->Fetch(t, d, compact[t].data()));
    }
    return Status::Ok();
  }

  model::GraphParams Params(const model::Graph& graph, const float* params) {
    return {params, compact_pointers, params + graph.DenseParameterCount()};
  }

  // The last pass's table gradients by global row id.
  void TakeGradients() {
    for (size_t t = 0; t < gradients.size(); ++t) {
      const model::SparseRows& g = ws->table_gradients[t];
      for (size_t k = 0; k < g.count; ++k) {
        gradient_ids[t][k] = distinct[t][static_cast<size_t>(g.rows[k])];
      }
      gradients[t].ids = std::span<const uint64_t>(gradient_ids[t].data(), g.count);
      gradients[t].grads = std::span<const float>(g.grads.data(), g.count * g.dim);
    }
  }

 private:
  const float* dense_pointer = nullptr;
};

namespace {

class GraphPass : public SlicePass {
 public:
  GraphPass(const model::TrainingData& data, const model::Graph& graph,
            const model::GraphFeed& feed, TableSource* const* source, int batch)
      : data_(data), graph_(graph), feed_(feed), source_(source), s_(graph, feed, batch) {}

  Status Run(float* params, const std::vector<uint32_t>& order, size_t lo, size_t hi, int epoch,
             const BatchLoopConfig& config, float* grad, SliceSums* sums) override {
    const int n = static_cast<int>(hi - lo);
    TARN_RETURN_IF_ERROR(s_.Load(data_, graph_, feed_, *source_, order, lo, hi));
    TARN_ASSIGN_OR_RETURN(
        double loss,
        graph_.ForwardBackward(s_.Params(graph_, params), s_.Inputs(n, feed_, true), s_.y.data(),
                               s_.w.data(), grad, s_.ws.get(),
                               DropoutSeed(config.seed, epoch, lo, config.slot), s_.pred.data()));
    for (int i = 0; i < n; ++i) {
      sums->weight += s_.w[i];
      sums->shifu.Add(config.shifu_kind, s_.pred[i], s_.y[i]);
    }
    sums->loss += loss;
    s_.TakeGradients();
    graph_.UpdateState(*s_.ws, params + graph_.DenseParameterCount());
    return Status::Ok();
  }

  std::span<const TableGradient> tables() const override { return s_.gradients; }

 private:
  const model::TrainingData& data_;
  const model::Graph& graph_;
  const model::GraphFeed& feed_;
  TableSource* const* source_;
  GraphTrainer::Scratch s_;
};

}  // namespace

GraphTrainer::~GraphTrainer() = default;

Result<std::unique_ptr<GraphTrainer>> GraphTrainer::Create(const model::GraphSpec& spec,
                                                           const model::TrainingData& data,
                                                           double std_dev_cut_off,
                                                           model::LossKind shifu_kind) {
  TARN_ASSIGN_OR_RETURN(auto normalizers, Normalizers(data, std_dev_cut_off));
  std::unique_ptr<GraphTrainer> t(new GraphTrainer());
  TARN_ASSIGN_OR_RETURN(auto feed, model::MakeGraphFeed(spec, normalizers, data.id_columns));
  t->feed_ = std::make_unique<model::GraphFeed>(std::move(feed));
  t->data_ = &data;
  t->graph_ = std::make_unique<model::Graph>(spec);
  t->shifu_kind_ = shifu_kind;
  return t;
}

void GraphTrainer::InitParameters(float* params, uint64_t seed) const {
  graph_->InitParameters(params, {}, seed);
  graph_->InitState(params + DenseCount());
}

Result<std::unique_ptr<SlicePass>> GraphTrainer::MakePass(int batch) {
  return std::unique_ptr<SlicePass>(
      std::make_unique<GraphPass>(*data_, *graph_, *feed_, &tables_, std::max(1, batch)));
}

Result<ValidationSummary> GraphTrainer::Validate(const float* params,
                                                 const std::vector<uint32_t>& rows) {
  constexpr int kBlock = 512;
  if (!validation_) validation_ = std::make_unique<Scratch>(*graph_, *feed_, kBlock);
  Scratch& s = *validation_;
  std::vector<float> scores(rows.size());
  for (size_t begin = 0; begin < rows.size(); begin += kBlock) {
    const size_t end = std::min(rows.size(), begin + kBlock);
    const int n = static_cast<int>(end - begin);
    TARN_RETURN_IF_ERROR(s.Load(*data_, *graph_, *feed_, tables_, rows, begin, end));
    TARN_RETURN_IF_ERROR(graph_->Predict(s.Params(*graph_, params), s.Inputs(n, *feed_, true),
                                         scores.data() + begin, s.ws.get()));
  }
  return SummarizeScores(*data_, rows, scores, graph_->spec().loss, shifu_kind_);
}

}  // namespace tarn::train
