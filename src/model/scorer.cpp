#include "model/scorer.h"

namespace tarn::model {

Result<GraphFeed> MakeGraphFeed(const GraphSpec& graph,
                                const std::vector<data::ColumnNormalizer>& normalizers,
                                const std::vector<data::IdColumn>& id_columns) {
  std::vector<FeedColumn> columns;
  for (const auto& n : normalizers) {
    FeedColumn c{n.name(), n.width(), n.index_slots()};
    for (size_t k = 0; k < id_columns.size(); ++k) {
      if (id_columns[k].name == n.name() && id_columns[k].column_num == n.column_num()) {
        c.id_column = static_cast<int>(k);
        c.vocabulary = id_columns[k].vocabulary;
      }
    }
    columns.push_back(std::move(c));
  }
  return GraphFeed::Create(graph, columns);
}

Result<Scorer> Scorer::Create(ModelFile file) {
  Scorer s;
  TARN_ASSIGN_OR_RETURN(auto norm, data::ParseNormType(file.norm_type));
  for (const auto& c : file.columns) {
    TARN_ASSIGN_OR_RETURN(auto n, data::ColumnNormalizer::Create(c, norm, file.std_dev_cut_off));
    s.input_columns_.push_back(c.column_name);
    s.normalizers_.push_back(std::move(n));
  }
  for (const auto& id : file.id_columns) {
    TARN_ASSIGN_OR_RETURN(const data::ColumnConfig* column, InputColumnOf(file, id));
    TARN_ASSIGN_OR_RETURN(auto encoder, data::IdEncoder::Create(*column, id));
    s.id_encoders_.push_back(std::move(encoder));
    s.id_input_.push_back(static_cast<size_t>(column - file.columns.data()));
  }
  s.missing_ = std::make_unique<data::MissingValues>(file.missing_values);
  s.file_ = std::move(file);
  if (s.file_.graph) {
    TARN_ASSIGN_OR_RETURN(auto feed,
                          MakeGraphFeed(*s.file_.graph, s.normalizers_, s.file_.id_columns));
    s.feed_ = std::make_unique<GraphFeed>(std::move(feed));
    s.graph_ = std::make_unique<Graph>(*s.file_.graph);
    const float* p = s.file_.params.data() + s.graph_->DenseParameterCount();
    for (const auto& t : s.graph_->tables()) {
      s.tables_.push_back(p);
      p += static_cast<size_t>(t.rows) * t.dim;
    }
  } else {
    s.network_ = std::make_unique<Network>(s.file_.spec);
  }
  return s;
}

void Scorer::Normalize(std::span<const std::string_view> raw, float* out) const {
  for (size_t k = 0; k < normalizers_.size(); ++k) {
    normalizers_[k].Apply(raw[k], missing_->IsMissing(raw[k]), out);
    out += normalizers_[k].width();
  }
}

void Scorer::Ids(std::span<const std::string_view> raw, uint32_t* out) const {
  for (size_t k = 0; k < id_encoders_.size(); ++k) {
    const std::string_view field = raw[id_input_[k]];
    out[k] = id_encoders_[k].Id(field, missing_->IsMissing(field));
  }
}

std::unique_ptr<ScoreWorkspace> Scorer::MakeWorkspace(int max_batch) const {
  auto ws = std::make_unique<ScoreWorkspace>();
  ws->max_batch = max_batch;
  if (network_) {
    ws->network = network_->MakeWorkspace(max_batch);
    return ws;
  }
  ws->graph = graph_->MakeWorkspace(max_batch);
  ws->dense.resize(static_cast<size_t>(max_batch) * feed_->dense_width());
  ws->ids.assign(feed_->id_inputs(), std::vector<int64_t>(max_batch));
  for (auto& v : ws->ids) ws->id_pointers.push_back(v.data());
  return ws;
}

void Scorer::Score(const float* x, const uint32_t* ids, int batch, float* out,
                   ScoreWorkspace* ws) const {
  if (network_) {
    network_->Predict(file_.params.data(), x, batch, out, ws->network.get());
    return;
  }
  const int max_batch = ws->max_batch;
  const int width = input_width();
  const size_t id_width = id_encoders_.size();
  const float* dense = ws->dense.data();
  const float* const dense_inputs[] = {dense};
  const size_t state = file_.params.size() - graph_->StateCount();
  GraphParams params{file_.params.data(), tables_, file_.params.data() + state};
  for (int b = 0; b < batch; b += max_batch) {
    const int n = std::min(max_batch, batch - b);
    for (int i = 0; i < n; ++i) {
      const size_t r = static_cast<size_t>(b + i);
      feed_->Gather(x + r * width, ids + r * id_width, i, ws->dense.data(), ws->id_pointers.data());
    }
    const int64_t* const* id_inputs = const_cast<const int64_t* const*>(ws->id_pointers.data());
    GraphInputs in{n, std::span<const float* const>(dense_inputs, feed_->dense_width() > 0 ? 1 : 0),
                   std::span<const int64_t* const>(id_inputs, ws->id_pointers.size())};
    // Cannot fail: the feed was checked against the graph when the model was
    // loaded, and an encoder's ids lie in [0, vocabulary) <= the table's rows.
    (void)graph_->Predict(params, in, out + b, ws->graph.get());
  }
}

}  // namespace tarn::model
