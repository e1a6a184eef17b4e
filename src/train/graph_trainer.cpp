#include "train/graph_trainer.h"

#include <algorithm>
#include <cctype>

#include "data/normalizer.h"
#include "model/row_slots.h"
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
        c.ids = id;
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
  std::vector<float> out;
  model::VectorParamsSink sink(&out);
  (void)WriteGraphModelFileParams(
      graph, dense_and_state, [&](size_t t, model::ParamsSink& s) { return s.Write(tables[t]); },
      sink);  // a vector sink does not fail
  return out;
}

Status WriteGraphModelFileParams(
    const model::Graph& graph, std::span<const float> dense_and_state,
    const std::function<Status(size_t table, model::ParamsSink& sink)>& write_table,
    model::ParamsSink& sink) {
  const size_t dense = graph.DenseParameterCount();
  TARN_RETURN_IF_ERROR(sink.Write(dense_and_state.first(dense)));
  for (size_t t = 0; t < graph.tables().size(); ++t) TARN_RETURN_IF_ERROR(write_table(t, sink));
  return sink.Write(dense_and_state.subspan(dense));
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

Status LocalTables::Fetch(std::span<const Request> requests) {
  if (requests.size() != tables_.size()) {
    return Internal("fetched " + std::to_string(requests.size()) + " of " +
                    std::to_string(tables_.size()) + " embedding tables");
  }
  for (size_t t = 0; t < tables_.size(); ++t) tables_[t]->Gather(requests[t].ids, requests[t].out);
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
  table.ForEachHeld(
      [&](uint64_t id, const float* row) { std::copy_n(row, dim, whole.data() + id * dim); });
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
    t->ForEachHeld([&](uint64_t id, const float* row) {
      std::copy_n(row + dim, per_row, state->data() + at + id * per_row);
    });
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

// The rows of a batch (or a validation block) as the graph takes them: the
// inputs, and per table each row's row in a compact table of the distinct
// rows the block touches (ascending global ids) with their values.
struct GraphTrainer::Rows {
  int dense_width = 0;
  std::vector<float> dense, y, w;
  std::vector<std::vector<int64_t>> ids;
  std::vector<int64_t*> id_pointers;
  std::vector<std::vector<int64_t>> rows;  // per table: global, then compact
  std::vector<int64_t*> row_pointers;
  std::vector<std::vector<uint64_t>> distinct;
  std::vector<std::vector<float>> compact;
  std::vector<TableSource::Request> requests;  // Load's, one per table
  std::vector<const float*> compact_pointers;
  model::RowSlots slots;  // the distinct rows, without a sort of the block
  std::vector<uint32_t> row_slot, slot_rank;

  Rows(const model::Graph& graph, const model::GraphFeed& feed, int block)
      : dense_width(feed.dense_width()) {
    dense.resize(static_cast<size_t>(block) * dense_width);
    y.resize(block);
    w.resize(block);
    ids.assign(feed.id_inputs(), std::vector<int64_t>(block));
    for (auto& v : ids) id_pointers.push_back(v.data());
    for (const auto& t : graph.tables()) {
      rows.emplace_back(block);
      distinct.emplace_back(block);
      compact.emplace_back(static_cast<size_t>(block) * t.dim);
    }
    for (auto& v : rows) row_pointers.push_back(v.data());
    for (auto& v : compact) compact_pointers.push_back(v.data());
    requests.resize(compact.size());
    slots.Reserve(block);
    row_slot.resize(block);
    slot_rank.resize(block);
  }

  // Where one caller's view of the block points (threads share a block).
  struct View {
    const float* dense = nullptr;
    std::vector<const int64_t*> ids, rows;
  };
  // Rows [first, first + n) of the block; their table rows when with_rows.
  model::GraphInputs Inputs(int first, int n, bool with_rows, View* v) const {
    v->dense = dense.data() + static_cast<size_t>(first) * dense_width;
    v->ids.resize(ids.size());
    v->rows.resize(rows.size());
    for (size_t k = 0; k < ids.size(); ++k) v->ids[k] = ids[k].data() + first;
    for (size_t t = 0; t < rows.size(); ++t) v->rows[t] = rows[t].data() + first;
    return {
        n, std::span<const float* const>(&v->dense, dense_width > 0 ? 1 : 0), v->ids,
        with_rows ? std::span<const int64_t* const>(v->rows) : std::span<const int64_t* const>()};
  }

  // Rows order[lo, hi) into the buffers, and their table rows into the
  // compact tables, fetched from `source`.
  Status Load(const model::TrainingData& data, const model::Graph& graph,
              const model::GraphFeed& feed, TableSource* source, const std::vector<uint32_t>& order,
              size_t lo, size_t hi) {
    const int inputs = data.inputs;
    const int n = static_cast<int>(hi - lo);
    // The order is shuffled, so each row is a cache miss: fetch ahead of the copy.
    constexpr size_t kAhead = 16;
    const size_t row_bytes = static_cast<size_t>(data.stride()) * sizeof(float);
    auto prefetch = [&](uint32_t r) {
      const char* p = reinterpret_cast<const char*>(data.row(r));
      __builtin_prefetch(p);
      __builtin_prefetch(p + row_bytes - 1);  // the row may span two lines
      if (!data.id_columns.empty()) __builtin_prefetch(data.id_row(r));
    };
    for (size_t i = lo; i < std::min(hi, lo + kAhead); ++i) prefetch(order[i]);
    for (size_t i = lo; i < hi; ++i) {
      if (i + kAhead < hi) prefetch(order[i + kAhead]);
      const float* row = data.row(order[i]);
      const int b = static_cast<int>(i - lo);
      feed.Gather(row, data.id_row(order[i]), b, dense.data(), id_pointers.data());
      y[b] = row[inputs];
      w[b] = row[inputs + 1];
    }
    if (graph.tables().empty()) return Status::Ok();
    if (!source) return Internal("a graph with embedding tables trains without a table source");
    TARN_RETURN_IF_ERROR(graph.TableRows(Inputs(0, n, false, &view), row_pointers));
    for (size_t t = 0; t < rows.size(); ++t) {
      int64_t* r = rows[t].data();
      slots.Start(static_cast<uint64_t>(graph.tables()[t].rows));
      for (int b = 0; b < n; ++b) row_slot[b] = slots.Insert(r[b]);
      const size_t k = slots.size();
      slots.Rank(distinct[t].data(), slot_rank.data());
      slots.Clear();
      for (int b = 0; b < n; ++b) r[b] = slot_rank[row_slot[b]];
      requests[t] = {std::span<const uint64_t>(distinct[t].data(), k), compact[t].data()};
    }
    return source->Fetch(requests);
  }

  model::GraphParams Params(const model::Graph& graph, const float* params) const {
    return {params, compact_pointers, params + graph.DenseParameterCount()};
  }

  View view;  // Load's and validation's
};

namespace {

// One thread's passes over slices of the batch GraphTrainer::BeginBatch loaded.
class GraphPass : public SlicePass {
 public:
  GraphPass(const model::Graph& graph, const std::unique_ptr<GraphTrainer::Rows>* batch,
            const size_t* batch_begin, int rows)
      : graph_(graph), batch_(batch), batch_begin_(batch_begin), ws_(graph.MakeWorkspace(rows)) {
    pred_.resize(rows);
    for (size_t t = 0; t < graph.tables().size(); ++t) gradient_ids_.emplace_back(rows);
    gradients_.resize(graph.tables().size());
  }

  Status Run(float* params, const std::vector<uint32_t>&, size_t lo, size_t hi, int epoch,
             const BatchLoopConfig& config, float* grad, SliceSums* sums) override {
    const GraphTrainer::Rows& b = **batch_;
    const int n = static_cast<int>(hi - lo);
    const int first = static_cast<int>(lo - *batch_begin_);
    // Dropout: the batch's masks, each row's by its place in the batch.
    TARN_ASSIGN_OR_RETURN(
        double loss,
        graph_.ForwardBackward(b.Params(graph_, params), b.Inputs(first, n, true, &view_),
                               b.y.data() + first, b.w.data() + first, grad, ws_.get(),
                               DropoutSeed(config.seed, epoch, *batch_begin_, config.slot),
                               pred_.data(), first));
    for (int i = 0; i < n; ++i) {
      sums->weight += b.w[first + i];
      sums->shifu.Add(config.shifu_kind, pred_[i], b.y[first + i]);
    }
    sums->loss += loss;
    // The tables' gradients by global row id (ascending, as the compact rows).
    for (size_t t = 0; t < gradients_.size(); ++t) {
      const model::SparseRows& g = ws_->table_gradients[t];
      for (size_t k = 0; k < g.count; ++k) {
        gradient_ids_[t][k] = b.distinct[t][static_cast<size_t>(g.rows[k])];
      }
      gradients_[t].ids = std::span<const uint64_t>(gradient_ids_[t].data(), g.count);
      gradients_[t].grads = std::span<const float>(g.grads.data(), g.count * g.dim);
    }
    // Batch norm (one slice per batch) moves its state; other graphs have none.
    graph_.UpdateState(*ws_, params + graph_.DenseParameterCount());
    return Status::Ok();
  }

  std::span<const TableGradient> tables() const override { return gradients_; }

 private:
  const model::Graph& graph_;
  const std::unique_ptr<GraphTrainer::Rows>* batch_;
  const size_t* batch_begin_;
  GraphTrainer::Rows::View view_;
  std::unique_ptr<model::GraphWorkspace> ws_;
  std::vector<float> pred_;
  std::vector<std::vector<uint64_t>> gradient_ids_;
  std::vector<TableGradient> gradients_;
};

bool HasBatchNorm(const model::GraphSpec& spec) {
  return std::any_of(spec.nodes.begin(), spec.nodes.end(),
                     [](const model::GraphNode& n) { return n.op == model::GraphOp::kBatchNorm; });
}

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

int GraphTrainer::Slices(int batch) const {
  if (HasBatchNorm(graph_->spec())) return 1;  // its statistics are the whole batch's
  return SlicesForBatch(batch);
}

Result<std::unique_ptr<SlicePass>> GraphTrainer::MakePass(int batch) {
  batch = std::max(1, batch);
  if (!batch_ || batch_rows_ < batch) {
    batch_ = std::make_unique<Rows>(*graph_, *feed_, batch);
    batch_rows_ = batch;
  }
  const int slices = Slices(batch);
  const int rows = (batch + slices - 1) / slices;
  return std::unique_ptr<SlicePass>(
      std::make_unique<GraphPass>(*graph_, &batch_, &batch_begin_, rows));
}

Status GraphTrainer::BeginBatch(const std::vector<uint32_t>& order, size_t begin, size_t end) {
  if (!batch_ || end - begin > static_cast<size_t>(batch_rows_)) {
    return Internal("a graph batch of " + std::to_string(end - begin) +
                    " rows exceeds its passes' " + std::to_string(batch_rows_));
  }
  batch_begin_ = begin;
  return batch_->Load(*data_, *graph_, *feed_, tables_, order, begin, end);
}

Result<ValidationSummary> GraphTrainer::Validate(const float* params,
                                                 const std::vector<uint32_t>& rows) {
  constexpr int kBlock = 512;
  if (!validation_) {
    validation_ = std::make_unique<Rows>(*graph_, *feed_, kBlock);
    validation_ws_ = graph_->MakeWorkspace(kBlock);
  }
  Rows& s = *validation_;
  std::vector<float> scores(rows.size());
  for (size_t begin = 0; begin < rows.size(); begin += kBlock) {
    const size_t end = std::min(rows.size(), begin + kBlock);
    const int n = static_cast<int>(end - begin);
    TARN_RETURN_IF_ERROR(s.Load(*data_, *graph_, *feed_, tables_, rows, begin, end));
    TARN_RETURN_IF_ERROR(graph_->Predict(s.Params(*graph_, params), s.Inputs(0, n, true, &s.view),
                                         scores.data() + begin, validation_ws_.get()));
  }
  return SummarizeScores(*data_, rows, scores, graph_->spec().loss, shifu_kind_);
}

}  // namespace tarn::train
