#include "model/graph.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>

#include "model/init_random.h"
#include "model/kernels.h"
#include "model/training_data.h"

namespace tarn::model {
namespace {

bool IsEmbeddingOp(GraphOp op) {
  return op == GraphOp::kEmbedding || op == GraphOp::kHashedEmbedding;
}

bool HasActivation(GraphOp op) { return op == GraphOp::kDense || op == GraphOp::kActivation; }

// x[i] += y[i] for i < n.
inline void AddTo(float* __restrict x, const float* __restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}

// x[i] += y[i] * z[i] for i < n.
inline void AddProduct(float* __restrict x, const float* __restrict y, const float* __restrict z,
                       size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i] * z[i];
}

}  // namespace

Graph::Graph(GraphSpec spec) : spec_(std::move(spec)) {
  assert(spec_.Validate().ok());
  layout_ = spec_.Layout();
  tables_ = spec_.TableShapes();
  dense_count_ = spec_.DenseParameterCount();
  state_count_ = spec_.StateCount();
  std::map<std::string, size_t> index;
  const size_t count = spec_.nodes.size();
  inputs_.resize(count);
  needs_grad_.assign(count, false);
  input_slot_.assign(count, -1);
  for (size_t i = 0; i < count; ++i) {
    const GraphNode& n = spec_.nodes[i];
    for (const std::string& name : n.inputs) {
      size_t j = index.at(name);
      inputs_[i].push_back(j);
      if (needs_grad_[j]) needs_grad_[i] = true;
    }
    if (layout_[i].param_count > 0 || layout_[i].table >= 0) needs_grad_[i] = true;
    if (n.op == GraphOp::kInput) {
      auto& list = n.source == InputSource::kDense ? dense_inputs_ : id_inputs_;
      input_slot_[i] = static_cast<int>(list.size());
      list.push_back(i);
    }
    index[n.name] = i;
  }
}

void Graph::InitParameters(float* dense, std::span<float* const> tables, uint64_t seed) const {
  for (size_t i = 0; i < spec_.nodes.size(); ++i) {
    const GraphNode& n = spec_.nodes[i];
    const GraphNodeLayout& l = layout_[i];
    if (l.owner >= 0) continue;  // its owner's parameters are drawn once, by the owner
    if (IsEmbeddingOp(n.op) && tables.empty()) continue;
    SplitMix rng(MixSeed(seed ^ MixSeed(static_cast<uint64_t>(i) + 1)));
    float* p = dense + l.param_offset;
    const size_t width = static_cast<size_t>(l.width);
    switch (n.op) {
      case GraphOp::kDense: {
        const size_t fan_in = static_cast<size_t>(layout_[inputs_[i][0]].width);
        const size_t weights = width * fan_in;
        for (size_t k = 0; k < weights; ++k) {
          p[k] = static_cast<float>(DrawWeight(spec_.initializer, static_cast<double>(fan_in),
                                               static_cast<double>(width), rng));
        }
        std::fill(p + weights, p + l.param_count, 0.0f);
        break;
      }
      case GraphOp::kCross:
        for (int c = 0; c < n.layers; ++c) {
          float* wl = p + 2 * static_cast<size_t>(c) * width;
          for (size_t k = 0; k < width; ++k) {
            wl[k] = static_cast<float>(
                DrawWeight(spec_.initializer, static_cast<double>(width), 1.0, rng));
          }
          std::fill(wl + width, wl + 2 * width, 0.0f);
        }
        break;
      case GraphOp::kBatchNorm:
        std::fill(p, p + width, 1.0f);
        std::fill(p + width, p + 2 * width, 0.0f);
        break;
      case GraphOp::kEmbedding:
      case GraphOp::kHashedEmbedding: {
        const EmbeddingTableShape& t = tables_[static_cast<size_t>(l.table)];
        float* table = tables[static_cast<size_t>(l.table)];
        const size_t total = static_cast<size_t>(t.rows) * static_cast<size_t>(t.dim);
        for (size_t k = 0; k < total; ++k) {
          table[k] = static_cast<float>((2.0 * rng.Uniform() - 1.0) * 0.05);
        }
        break;
      }
      default:
        break;
    }
  }
}

void Graph::InitState(float* state) const {
  for (size_t i = 0; i < spec_.nodes.size(); ++i) {
    const GraphNodeLayout& l = layout_[i];
    if (l.state_count == 0) continue;
    const size_t width = static_cast<size_t>(l.width);
    std::fill(state + l.state_offset, state + l.state_offset + width, 0.0f);
    std::fill(state + l.state_offset + width, state + l.state_offset + 2 * width, 1.0f);
  }
}

std::unique_ptr<GraphWorkspace> Graph::MakeWorkspace(int max_batch) const {
  auto ws = std::make_unique<GraphWorkspace>();
  const int mb = kernels::AlignBatch(std::max(max_batch, 1));
  ws->graph = this;
  ws->max_batch = mb;
  const size_t B = static_cast<size_t>(mb);
  const size_t count = spec_.nodes.size();
  ws->value.resize(count);
  ws->grad.resize(count);
  ws->dact.resize(count);
  ws->dz.resize(count);
  ws->aux.resize(count);
  ws->aux2.resize(count);
  size_t widest = 1;
  for (size_t i = 0; i < count; ++i) {
    const GraphNode& n = spec_.nodes[i];
    const size_t width = static_cast<size_t>(layout_[i].width);
    widest = std::max(widest, width);
    if (n.op == GraphOp::kInput && n.source == InputSource::kIds) continue;
    ws->value[i] = AlignedFloats(width * B);
    if (needs_grad_[i] || i + 1 == count) ws->grad[i] = AlignedFloats(width * B);
    if (HasActivation(n.op)) {
      ws->dact[i] = AlignedFloats(width * B);
      ws->dz[i] = AlignedFloats(width * B);
    }
    switch (n.op) {
      case GraphOp::kFm:
        ws->aux[i] = AlignedFloats(static_cast<size_t>(layout_[inputs_[i][0]].width) * B);
        break;
      case GraphOp::kCross: {
        // x_1 .. x_{L-1} (x_0 is the input, x_L the output), then s_0 .. s_{L-1}.
        const size_t L = static_cast<size_t>(n.layers);
        ws->aux[i] = AlignedFloats((L - 1) * width * B + L * B);
        // Backward: the running gradient (width x B), then t (B).
        ws->aux2[i] = AlignedFloats(width * B + B);
        break;
      }
      case GraphOp::kDropout:
        ws->aux[i] = AlignedFloats(width * B);
        break;
      case GraphOp::kBatchNorm:
        ws->aux[i] = AlignedFloats(width * B);   // xhat
        ws->aux2[i] = AlignedFloats(3 * width);  // batch mean, batch variance, 1 / sqrt(var + eps)
        break;
      default:
        break;
    }
  }
  ws->ids.assign(id_inputs_.size(), std::vector<int64_t>(B, -1));
  ws->slots.Reserve(B);
  ws->row_slot.assign(B, 0);
  ws->slot_rank.assign(B, 0);
  for (const auto& t : tables_) {
    ws->table_rows.emplace_back(B, -1);
    SparseRows s;
    s.dim = t.dim;
    s.rows.assign(B, 0);
    s.grads.assign(B * static_cast<size_t>(t.dim), 0.0f);
    ws->table_gradients.push_back(std::move(s));
  }
  ws->y = AlignedFloats(B);
  ws->w = AlignedFloats(B);
  ws->ones = AlignedFloats(B);
  std::fill(ws->ones.data(), ws->ones.data() + B, 1.0f);
  ws->zeros = AlignedFloats(widest);
  ws->sink = AlignedFloats(widest);
  return ws;
}

Status Graph::CheckInputs(const GraphParams& params, const GraphInputs& in,
                          const GraphWorkspace* ws) const {
  if (!ws || ws->graph != this) {
    return InvalidArgument("graph pass: the workspace was not made by this graph");
  }
  if (in.rows < 0) return InvalidArgument("graph inputs: negative row count");
  if (in.dense.size() != dense_inputs_.size() || in.ids.size() != id_inputs_.size()) {
    return InvalidArgument("graph inputs: the graph takes " + std::to_string(dense_inputs_.size()) +
                           " dense and " + std::to_string(id_inputs_.size()) + " ids inputs, got " +
                           std::to_string(in.dense.size()) + " and " +
                           std::to_string(in.ids.size()));
  }
  for (size_t k = 0; k < in.dense.size(); ++k) {
    if (!in.dense[k] && in.rows > 0) {
      return InvalidArgument("graph inputs: input node '" + spec_.nodes[dense_inputs_[k]].name +
                             "' has no data");
    }
  }
  for (size_t k = 0; k < in.ids.size(); ++k) {
    if (!in.ids[k] && in.rows > 0) {
      return InvalidArgument("graph inputs: input node '" + spec_.nodes[id_inputs_[k]].name +
                             "' has no ids");
    }
  }
  if (params.tables.size() != tables_.size()) {
    return InvalidArgument("graph parameters: the graph has " + std::to_string(tables_.size()) +
                           " embedding tables, got " + std::to_string(params.tables.size()));
  }
  if (!in.table_rows.empty() && in.table_rows.size() != tables_.size()) {
    return InvalidArgument("graph inputs: " + std::to_string(in.table_rows.size()) +
                           " table row lists for " + std::to_string(tables_.size()) + " tables");
  }
  if ((!params.dense && dense_count_ > 0) || (!params.state && state_count_ > 0)) {
    return InvalidArgument("graph parameters: dense parameters or state missing");
  }
  return Status::Ok();
}

Status Graph::LoadBlock(const GraphInputs& in, int start, int n, int nb, GraphWorkspace* ws) const {
  for (size_t k = 0; k < dense_inputs_.size(); ++k) {
    const size_t i = dense_inputs_[k];
    const int width = layout_[i].width;
    kernels::TransposeToFeatureMajor(in.dense[k] + static_cast<size_t>(start) * width, n, width, nb,
                                     ws->value[i].data());
  }
  for (size_t k = 0; k < id_inputs_.size(); ++k) {
    int64_t* ids = ws->ids[k].data();
    std::copy(in.ids[k] + start, in.ids[k] + start + n, ids);
    std::fill(ids + n, ids + nb, int64_t{-1});
  }
  // Each table's row for each batch row (-1: a padding row, which reads zeros).
  if (!in.table_rows.empty()) {
    for (size_t t = 0; t < tables_.size(); ++t) {
      int64_t* rows = ws->table_rows[t].data();
      std::copy(in.table_rows[t] + start, in.table_rows[t] + start + n, rows);
      std::fill(rows + n, rows + nb, int64_t{-1});
    }
    return Status::Ok();
  }
  for (size_t t = 0; t < tables_.size(); ++t) {
    std::fill(ws->table_rows[t].begin() + n, ws->table_rows[t].begin() + nb, int64_t{-1});
  }
  return ResolveRows(ws->ids, start, n, ws->table_rows);
}

template <typename Ids, typename Rows>
Status Graph::ResolveRows(const Ids& ids_of_input, int start, int n, Rows& rows_of_table) const {
  for (size_t i = 0; i < spec_.nodes.size(); ++i) {
    const GraphNode& node = spec_.nodes[i];
    if (!IsEmbeddingOp(node.op)) continue;
    const int64_t* ids = &ids_of_input[static_cast<size_t>(input_slot_[inputs_[i][0]])][0];
    int64_t* rows = &rows_of_table[static_cast<size_t>(layout_[i].table)][0];
    const bool hashed = node.op == GraphOp::kHashedEmbedding;
    const int64_t limit = hashed ? INT64_MAX : node.vocabulary;
    for (int b = 0; b < n; ++b) {
      const int64_t id = ids[b];
      if (id < 0 || id >= limit) {
        return InvalidArgument(
            "node '" + node.name + "' (column " + spec_.nodes[inputs_[i][0]].column + "): row " +
            std::to_string(start + b) + " has id " + std::to_string(id) +
            (hashed ? ", a hashed embedding takes ids >= 0"
                    : ", outside the vocabulary [0, " + std::to_string(node.vocabulary) + ")"));
      }
      rows[b] = hashed ? static_cast<int64_t>(HashedBucket(id, node.buckets)) : id;
    }
  }
  return Status::Ok();
}

Status Graph::TableRows(const GraphInputs& in, std::span<int64_t* const> rows) const {
  if (in.ids.size() != id_inputs_.size() || rows.size() != tables_.size()) {
    return InvalidArgument("graph inputs: the graph takes " + std::to_string(id_inputs_.size()) +
                           " ids inputs and " + std::to_string(tables_.size()) + " tables, got " +
                           std::to_string(in.ids.size()) + " and " + std::to_string(rows.size()));
  }
  return ResolveRows(in.ids, 0, in.rows, rows);
}

void Graph::Forward(const GraphParams& params, int start, int n, int nb, bool train,
                    uint64_t dropout_seed, GraphWorkspace* ws) const {
  const size_t B = static_cast<size_t>(nb);
  for (size_t i = 0; i < spec_.nodes.size(); ++i) {
    const GraphNode& node = spec_.nodes[i];
    const GraphNodeLayout& l = layout_[i];
    const size_t width = static_cast<size_t>(l.width);
    const size_t total = width * B;
    const std::vector<size_t>& in = inputs_[i];
    float* out = ws->value[i].data();
    const float* p = params.dense ? params.dense + l.param_offset : nullptr;
    switch (node.op) {
      case GraphOp::kInput:
        break;  // loaded by LoadBlock
      case GraphOp::kEmbedding:
      case GraphOp::kHashedEmbedding: {
        const float* table = params.tables[static_cast<size_t>(l.table)];
        const int64_t* rows = ws->table_rows[static_cast<size_t>(l.table)].data();
        // Rows are scattered over tables larger than the caches: fetch a few ahead.
        constexpr size_t kAhead = 8;
        for (size_t b = 0; b < B; ++b) {
          if (b + kAhead < B && rows[b + kAhead] >= 0) {
            __builtin_prefetch(table + static_cast<size_t>(rows[b + kAhead]) * width);
          }
          if (rows[b] < 0) {
            for (size_t d = 0; d < width; ++d) out[d * B + b] = 0.0f;
            continue;
          }
          const float* r = table + static_cast<size_t>(rows[b]) * width;
          for (size_t d = 0; d < width; ++d) out[d * B + b] = r[d];
        }
        break;
      }
      case GraphOp::kDense: {
        const int K = layout_[in[0]].width;
        const float* bias = node.use_bias ? p + width * static_cast<size_t>(K) : ws->zeros.data();
        const bool want_dact = train && node.activation != Activation::kLinear;
        kernels::DenseForward(p, bias, ws->value[in[0]].data(), static_cast<int>(width), K, nb, nb,
                              node.activation, nullptr, out,
                              want_dact ? ws->dact[i].data() : nullptr);
        break;
      }
      case GraphOp::kConcatenate: {
        size_t row = 0;
        for (size_t j : in) {
          const size_t wj = static_cast<size_t>(layout_[j].width);
          std::memcpy(out + row * B, ws->value[j].data(), wj * B * sizeof(float));
          row += wj;
        }
        break;
      }
      case GraphOp::kAdd:
        std::memcpy(out, ws->value[in[0]].data(), total * sizeof(float));
        for (size_t k = 1; k < in.size(); ++k) AddTo(out, ws->value[in[k]].data(), total);
        break;
      case GraphOp::kMultiply:
        std::memcpy(out, ws->value[in[0]].data(), total * sizeof(float));
        for (size_t k = 1; k < in.size(); ++k) {
          const float* v = ws->value[in[k]].data();
          for (size_t e = 0; e < total; ++e) out[e] *= v[e];
        }
        break;
      case GraphOp::kDot: {
        const size_t d_in = static_cast<size_t>(layout_[in[0]].width);
        const float* a = ws->value[in[0]].data();
        const float* c = ws->value[in[1]].data();
        std::fill(out, out + B, 0.0f);
        for (size_t d = 0; d < d_in; ++d) AddProduct(out, a + d * B, c + d * B, B);
        break;
      }
      case GraphOp::kFm: {
        // out = 0.5 * sum_d ((sum_i v_id)^2 - sum_i v_id^2); s keeps sum_i v_id for the backward.
        const size_t dim = static_cast<size_t>(layout_[in[0]].width);
        float* s = ws->aux[i].data();
        std::fill(out, out + B, 0.0f);
        std::memcpy(s, ws->value[in[0]].data(), dim * B * sizeof(float));
        for (size_t k = 1; k < in.size(); ++k) AddTo(s, ws->value[in[k]].data(), dim * B);
        for (size_t d = 0; d < dim; ++d) {
          const float* sd = s + d * B;
          for (size_t b = 0; b < B; ++b) out[b] += sd[b] * sd[b];
          for (size_t k = 0; k < in.size(); ++k) {
            const float* vd = ws->value[in[k]].data() + d * B;
            for (size_t b = 0; b < B; ++b) out[b] -= vd[b] * vd[b];
          }
        }
        for (size_t b = 0; b < B; ++b) out[b] *= 0.5f;
        break;
      }
      case GraphOp::kCross: {
        // x_{l+1} = x_0 * s_l + b_l + x_l with s_l = w_l . x_l (per row).
        const size_t L = static_cast<size_t>(node.layers);
        const float* x0 = ws->value[in[0]].data();
        float* levels = ws->aux[i].data();
        float* s_all = levels + (L - 1) * total;
        const float* x = x0;
        for (size_t c = 0; c < L; ++c) {
          const float* w = p + 2 * c * width;
          const float* bias = w + width;
          float* s = s_all + c * B;
          std::fill(s, s + B, 0.0f);
          for (size_t d = 0; d < width; ++d) {
            const float wd = w[d];
            const float* xd = x + d * B;
            for (size_t b = 0; b < B; ++b) s[b] += wd * xd[b];
          }
          float* next = c + 1 == L ? out : levels + c * total;
          for (size_t d = 0; d < width; ++d) {
            const float bd = bias[d];
            const float* xd = x + d * B;
            const float* x0d = x0 + d * B;
            float* nd = next + d * B;
            for (size_t b = 0; b < B; ++b) nd[b] = x0d[b] * s[b] + bd + xd[b];
          }
          x = next;
        }
        break;
      }
      case GraphOp::kDropout: {
        const float* v = ws->value[in[0]].data();
        if (train && dropout_seed != 0 && node.rate > 0) {
          float* mask = ws->aux[i].data();
          kernels::DropoutMask(dropout_seed, static_cast<int>(i) + 1, start, node.rate,
                               static_cast<int>(width), n, nb, nb, mask);
          for (size_t e = 0; e < total; ++e) out[e] = v[e] * mask[e];
        } else {
          std::memcpy(out, v, total * sizeof(float));
        }
        break;
      }
      case GraphOp::kBatchNorm: {
        const float* x = ws->value[in[0]].data();
        const float* gamma = p;
        const float* beta = p + width;
        float* xhat = ws->aux[i].data();
        float* stats = ws->aux2[i].data();
        const float* moving = params.state + l.state_offset;
        for (size_t d = 0; d < width; ++d) {
          const float* xd = x + d * B;
          double mean = 0, var = 0;
          if (train) {
            for (int b = 0; b < n; ++b) mean += xd[b];
            mean /= n;
            for (int b = 0; b < n; ++b) var += (xd[b] - mean) * (xd[b] - mean);
            var /= n;
            stats[d] = static_cast<float>(mean);
            stats[width + d] = static_cast<float>(var);
          } else {
            mean = moving[d];
            var = moving[width + d];
          }
          const float mu = static_cast<float>(mean);
          const float inv = static_cast<float>(1.0 / std::sqrt(var + node.epsilon));
          stats[2 * width + d] = inv;
          float* hd = xhat + d * B;
          float* od = out + d * B;
          const float g = gamma[d], bt = beta[d];
          for (size_t b = 0; b < B; ++b) {
            hd[b] = (xd[b] - mu) * inv;
            od[b] = g * hd[b] + bt;
          }
        }
        break;
      }
      case GraphOp::kActivation:
        std::memcpy(out, ws->value[in[0]].data(), total * sizeof(float));
        kernels::ActivateInPlace(node.activation, out, train ? ws->dact[i].data() : nullptr,
                                 static_cast<ptrdiff_t>(total));
        break;
    }
  }
}

void Graph::TableGradient(size_t i, int n, int nb, GraphWorkspace* ws) const {
  const size_t B = static_cast<size_t>(nb);
  const size_t t = static_cast<size_t>(layout_[i].table);
  const size_t dim = static_cast<size_t>(layout_[i].width);
  const int64_t* rows = ws->table_rows[t].data();
  SparseRows& out = ws->table_gradients[t];
  const float* g = ws->grad[i].data();
  // Each batch row's slot among the touched rows (no sort of the batch: it
  // is O(n)), then the touched rows ascending and each slot's place.
  RowSlots& slots = ws->slots;
  slots.Start(static_cast<uint64_t>(tables_[t].rows));
  uint32_t* row_slot = ws->row_slot.data();
  for (int b = 0; b < n; ++b) row_slot[b] = slots.Insert(rows[b]);
  uint32_t* rank = ws->slot_rank.data();
  out.count = slots.size();
  slots.Rank(out.rows.data(), rank);
  slots.Clear();
  std::fill(out.grads.begin(), out.grads.begin() + static_cast<ptrdiff_t>(out.count * dim), 0.0f);
  // Batch rows in order, so each row's gradient sums its batch rows in order.
  float* grads = out.grads.data();
  if (dim == 1) {
    for (int b = 0; b < n; ++b) grads[rank[row_slot[b]]] += g[b];
  } else {
    for (int b = 0; b < n; ++b) {
      float* dst = grads + rank[row_slot[b]] * dim;
      for (size_t d = 0; d < dim; ++d) dst[d] += g[d * B + b];
    }
  }
}

void Graph::Backward(const GraphParams& params, int n, int nb, float* grad, uint64_t dropout_seed,
                     GraphWorkspace* ws) const {
  const size_t B = static_cast<size_t>(nb);
  const size_t last = spec_.nodes.size() - 1;
  for (size_t i = 0; i < last; ++i) {
    if (needs_grad_[i] && ws->grad[i].size() > 0) {
      std::fill(ws->grad[i].data(), ws->grad[i].data() + static_cast<size_t>(layout_[i].width) * B,
                0.0f);
    }
  }
  for (size_t i = last + 1; i-- > 0;) {
    if (!needs_grad_[i]) continue;
    const GraphNode& node = spec_.nodes[i];
    const GraphNodeLayout& l = layout_[i];
    const size_t width = static_cast<size_t>(l.width);
    const size_t total = width * B;
    const std::vector<size_t>& in = inputs_[i];
    const float* g = ws->grad[i].data();
    const float* p = params.dense + l.param_offset;
    float* gp = grad + l.param_offset;
    // Where the gradient of input k goes, or null when nothing before it learns.
    auto input_grad = [&](size_t k) -> float* {
      return needs_grad_[in[k]] ? ws->grad[in[k]].data() : nullptr;
    };
    // dLoss/dz for nodes with an activation: the output's comes from the loss.
    const float* dz = nullptr;
    if (HasActivation(node.op)) {
      if (i == last) {
        dz = ws->dz[i].data();
      } else if (node.activation == Activation::kLinear) {
        dz = g;
      } else {
        float* d = ws->dz[i].data();
        const float* da = ws->dact[i].data();
        for (size_t e = 0; e < total; ++e) d[e] = g[e] * da[e];
        dz = d;
      }
    }
    switch (node.op) {
      case GraphOp::kInput:
        break;
      case GraphOp::kEmbedding:
      case GraphOp::kHashedEmbedding:
        TableGradient(i, n, nb, ws);
        break;
      case GraphOp::kDense: {
        const int K = layout_[in[0]].width;
        const int M = static_cast<int>(width);
        float* gb = node.use_bias ? gp + width * static_cast<size_t>(K) : ws->sink.data();
        kernels::DenseBackwardWeights(dz, ws->value[in[0]].data(), M, K, nb, nb, gp, gb);
        if (float* gi = input_grad(0)) kernels::DenseBackwardDataAdd(p, dz, M, K, nb, nb, gi);
        break;
      }
      case GraphOp::kActivation:
        if (float* gi = input_grad(0)) AddTo(gi, dz, total);
        break;
      case GraphOp::kConcatenate: {
        size_t row = 0;
        for (size_t k = 0; k < in.size(); ++k) {
          const size_t wj = static_cast<size_t>(layout_[in[k]].width);
          if (float* gi = input_grad(k)) AddTo(gi, g + row * B, wj * B);
          row += wj;
        }
        break;
      }
      case GraphOp::kAdd:
        for (size_t k = 0; k < in.size(); ++k) {
          if (float* gi = input_grad(k)) AddTo(gi, g, total);
        }
        break;
      case GraphOp::kMultiply:
        for (size_t k = 0; k < in.size(); ++k) {
          float* gi = input_grad(k);
          if (!gi) continue;
          for (size_t e = 0; e < total; ++e) {
            float prod = g[e];
            for (size_t o = 0; o < in.size(); ++o) {
              if (o != k) prod *= ws->value[in[o]].data()[e];
            }
            gi[e] += prod;
          }
        }
        break;
      case GraphOp::kDot: {
        const size_t d_in = static_cast<size_t>(layout_[in[0]].width);
        for (size_t k = 0; k < 2; ++k) {
          float* gi = input_grad(k);
          if (!gi) continue;
          const float* other = ws->value[in[1 - k]].data();
          for (size_t d = 0; d < d_in; ++d) AddProduct(gi + d * B, g, other + d * B, B);
        }
        break;
      }
      case GraphOp::kFm: {
        // d out / d v_id = s_d - v_id.
        const size_t dim = static_cast<size_t>(layout_[in[0]].width);
        const float* s = ws->aux[i].data();
        for (size_t k = 0; k < in.size(); ++k) {
          float* gi = input_grad(k);
          if (!gi) continue;
          const float* v = ws->value[in[k]].data();
          for (size_t d = 0; d < dim; ++d) {
            for (size_t b = 0; b < B; ++b) {
              gi[d * B + b] += g[b] * (s[d * B + b] - v[d * B + b]);
            }
          }
        }
        break;
      }
      case GraphOp::kCross: {
        const size_t L = static_cast<size_t>(node.layers);
        const float* x0 = ws->value[in[0]].data();
        const float* levels = ws->aux[i].data();
        const float* s_all = levels + (L - 1) * total;
        float* G = ws->aux2[i].data();  // dLoss/dx_{c+1}, then dLoss/dx_c
        float* t = G + total;
        float* gi = input_grad(0);
        std::memcpy(G, g, total * sizeof(float));
        for (size_t c = L; c-- > 0;) {
          const float* x = c == 0 ? x0 : levels + (c - 1) * total;
          const float* w = p + 2 * c * width;
          float* gw = gp + 2 * c * width;
          float* gb = gw + width;
          const float* s = s_all + c * B;
          // t = G . x_0 per row: the gradient of s_c.
          std::fill(t, t + B, 0.0f);
          for (size_t d = 0; d < width; ++d) AddProduct(t, G + d * B, x0 + d * B, B);
          for (size_t d = 0; d < width; ++d) {
            const float* Gd = G + d * B;
            const float* xd = x + d * B;
            float sw = 0, sb = 0;
            for (size_t b = 0; b < B; ++b) {
              sw += t[b] * xd[b];
              sb += Gd[b];
            }
            gw[d] += sw;
            gb[d] += sb;
          }
          if (gi) {
            for (size_t d = 0; d < width; ++d) AddProduct(gi + d * B, G + d * B, s, B);
          }
          // dLoss/dx_c = G + w_c t (the residual and the path through s_c).
          for (size_t d = 0; d < width; ++d) {
            const float wd = w[d];
            float* Gd = G + d * B;
            for (size_t b = 0; b < B; ++b) Gd[b] += wd * t[b];
          }
        }
        if (gi) AddTo(gi, G, total);
        break;
      }
      case GraphOp::kDropout:
        if (float* gi = input_grad(0)) {
          if (dropout_seed != 0 && node.rate > 0) {
            AddProduct(gi, g, ws->aux[i].data(), total);
          } else {
            AddTo(gi, g, total);
          }
        }
        break;
      case GraphOp::kBatchNorm: {
        // With batch statistics over the n rows:
        //   dx = gamma * inv / n * (n g - sum g - xhat * sum(g xhat)).
        const float* xhat = ws->aux[i].data();
        const float* stats = ws->aux2[i].data();
        float* gi = input_grad(0);
        for (size_t d = 0; d < width; ++d) {
          const float* gd = g + d * B;
          const float* hd = xhat + d * B;
          double sum_g = 0, sum_gx = 0;
          for (int b = 0; b < n; ++b) {
            sum_g += gd[b];
            sum_gx += static_cast<double>(gd[b]) * hd[b];
          }
          gp[d] += static_cast<float>(sum_gx);
          gp[width + d] += static_cast<float>(sum_g);
          if (!gi) continue;
          const float scale = p[d] * stats[2 * width + d] / static_cast<float>(n);
          const float mg = static_cast<float>(sum_g);
          const float mgx = static_cast<float>(sum_gx);
          float* out = gi + d * B;
          for (int b = 0; b < n; ++b)
            out[b] += scale * (static_cast<float>(n) * gd[b] - mg - hd[b] * mgx);
        }
        break;
      }
    }
  }
}

Status Graph::Predict(const GraphParams& params, const GraphInputs& in, float* out,
                      GraphWorkspace* ws) const {
  TARN_RETURN_IF_ERROR(CheckInputs(params, in, ws));
  const size_t last = spec_.nodes.size() - 1;
  for (int start = 0; start < in.rows; start += ws->max_batch) {
    const int n = std::min(ws->max_batch, in.rows - start);
    const int nb = kernels::AlignBatch(n);
    TARN_RETURN_IF_ERROR(LoadBlock(in, start, n, nb, ws));
    Forward(params, start, n, nb, false, 0, ws);
    std::memcpy(out + start, ws->value[last].data(), static_cast<size_t>(n) * sizeof(float));
  }
  return Status::Ok();
}

Result<double> Graph::ForwardBackward(const GraphParams& params, const GraphInputs& in,
                                      const float* y, const float* w, float* grad,
                                      GraphWorkspace* ws, uint64_t dropout_seed, float* predictions,
                                      int first_row) const {
  TARN_RETURN_IF_ERROR(CheckInputs(params, in, ws));
  if (!y && in.rows > 0) return InvalidArgument("graph training pass: no targets");
  const int n = in.rows;
  if (n > ws->max_batch) {
    return InvalidArgument("a training batch of " + std::to_string(n) +
                           " rows exceeds the workspace's " + std::to_string(ws->max_batch) +
                           " (batch norm needs the whole batch in one pass)");
  }
  for (auto& t : ws->table_gradients) t.count = 0;
  ws->has_batch_statistics = false;
  if (n == 0) return 0.0;
  const int nb = kernels::AlignBatch(n);
  TARN_RETURN_IF_ERROR(LoadBlock(in, 0, n, nb, ws));
  Forward(params, first_row, n, nb, true, dropout_seed, ws);
  ws->has_batch_statistics = true;

  const size_t last = spec_.nodes.size() - 1;
  const GraphNode& out = spec_.nodes[last];
  float* yb = ws->y.data();
  float* wb = ws->w.data();
  std::memcpy(yb, y, static_cast<size_t>(n) * sizeof(float));
  if (w) {
    std::memcpy(wb, w, static_cast<size_t>(n) * sizeof(float));
  } else {
    std::fill(wb, wb + n, 1.0f);
  }
  std::fill(yb + n, yb + nb, 0.0f);
  std::fill(wb + n, wb + nb, 0.0f);
  const float* p = ws->value[last].data();
  double loss = 0;
  if (HasActivation(out.op)) {
    const bool linear = out.activation == Activation::kLinear;
    loss = kernels::OutputLossGrad(spec_.loss, out.activation, p,
                                   linear ? ws->ones.data() : ws->dact[last].data(), yb, wb, nb,
                                   ws->dz[last].data());
  } else {
    loss = kernels::OutputLossGrad(spec_.loss, Activation::kLinear, p, ws->ones.data(), yb, wb, nb,
                                   ws->grad[last].data());
  }
  if (predictions) std::memcpy(predictions, p, static_cast<size_t>(n) * sizeof(float));
  if (ws->sink.size() > 0) std::fill(ws->sink.data(), ws->sink.data() + ws->sink.size(), 0.0f);
  Backward(params, n, nb, grad, dropout_seed, ws);
  return loss;
}

void Graph::UpdateState(const GraphWorkspace& ws, float* state) const {
  if (!ws.has_batch_statistics) return;
  for (size_t i = 0; i < spec_.nodes.size(); ++i) {
    const GraphNode& node = spec_.nodes[i];
    if (node.op != GraphOp::kBatchNorm) continue;
    const size_t width = static_cast<size_t>(layout_[i].width);
    const float* stats = ws.aux2[i].data();
    float* moving = state + layout_[i].state_offset;
    const float m = node.momentum;
    for (size_t k = 0; k < 2 * width; ++k) moving[k] = m * moving[k] + (1.0f - m) * stats[k];
  }
}

double Graph::ForwardFlopsPerRow() const {
  double f = 0;
  for (size_t i = 0; i < spec_.nodes.size(); ++i) {
    const GraphNode& node = spec_.nodes[i];
    const double width = layout_[i].width;
    const double first = inputs_[i].empty() ? 0 : layout_[inputs_[i][0]].width;
    const double k = static_cast<double>(inputs_[i].size());
    switch (node.op) {
      case GraphOp::kInput:
        break;
      case GraphOp::kDense:
        f += 2.0 * first * width;
        break;
      case GraphOp::kDot:
        f += 2.0 * first;
        break;
      case GraphOp::kFm:
        f += 3.0 * k * first;  // the sum, the squares, the squared sum
        break;
      case GraphOp::kCross:
        f += 5.0 * width * node.layers;  // the dot product (2) and x0 * s + b + x (3)
        break;
      case GraphOp::kBatchNorm:
        f += 4.0 * width;
        break;
      case GraphOp::kAdd:
      case GraphOp::kMultiply:
        f += (k - 1) * width;
        break;
      default:
        f += width;  // gathers, copies, masks, activations
        break;
    }
  }
  return f;
}

}  // namespace tarn::model
