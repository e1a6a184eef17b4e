#include "model/graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <new>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "model/kernels.h"
#include "model/optimizer.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC sees the free() in the replaced operator delete below, inlined, pair
// with the operator new of a caller and warns, though both replacements use
// malloc and free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

// Heap allocations of the calling thread while it counts them (for the test
// that a warm workspace makes the passes allocation-free). Replacing the
// global operator new is harmless to the other tests: it only counts.
namespace {
thread_local bool counting_allocations = false;
thread_local long allocations = 0;
}  // namespace

void* operator new(std::size_t n) {
  if (counting_allocations) ++allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace tarn::model {
namespace {

// ---- building specs ----

GraphNode DenseInput(const std::string& name, int width) {
  GraphNode n;
  n.name = name;
  n.op = GraphOp::kInput;
  n.source = InputSource::kDense;
  n.width = width;
  return n;
}

GraphNode IdsInput(const std::string& name, const std::string& column) {
  GraphNode n;
  n.name = name;
  n.op = GraphOp::kInput;
  n.source = InputSource::kIds;
  n.column = column;
  return n;
}

GraphNode Node(const std::string& name, GraphOp op, std::vector<std::string> inputs) {
  GraphNode n;
  n.name = name;
  n.op = op;
  n.inputs = std::move(inputs);
  return n;
}

GraphNode Embedding(const std::string& name, const std::string& in, int64_t vocabulary, int units) {
  GraphNode n = Node(name, GraphOp::kEmbedding, {in});
  n.vocabulary = vocabulary;
  n.units = units;
  return n;
}

GraphNode Hashed(const std::string& name, const std::string& in, int64_t buckets, int units) {
  GraphNode n = Node(name, GraphOp::kHashedEmbedding, {in});
  n.buckets = buckets;
  n.units = units;
  return n;
}

GraphNode Dense(const std::string& name, const std::string& in, int units,
                Activation act = Activation::kLinear, bool use_bias = true) {
  GraphNode n = Node(name, GraphOp::kDense, {in});
  n.units = units;
  n.activation = act;
  n.use_bias = use_bias;
  return n;
}

GraphNode Act(const std::string& name, const std::string& in, Activation act) {
  GraphNode n = Node(name, GraphOp::kActivation, {in});
  n.activation = act;
  return n;
}

GraphSpec Spec(std::vector<GraphNode> nodes, LossKind loss = LossKind::kLog) {
  GraphSpec s;
  s.nodes = std::move(nodes);
  s.loss = loss;
  return s;
}

// ---- parameters and batches ----

struct Params {
  std::vector<float> dense, state;
  std::vector<std::vector<float>> tables;
  std::vector<const float*> table_ptrs;

  explicit Params(const Graph& g, uint64_t seed) {
    dense.resize(g.DenseParameterCount());
    state.resize(g.StateCount());
    std::vector<float*> out;
    for (const auto& t : g.tables()) {
      tables.emplace_back(static_cast<size_t>(t.rows) * static_cast<size_t>(t.dim));
    }
    for (auto& t : tables) out.push_back(t.data());
    g.InitParameters(dense.data(), out, seed);
    g.InitState(state.data());
  }
  GraphParams View() {
    table_ptrs.clear();
    for (auto& t : tables) table_ptrs.push_back(t.data());
    GraphParams p;
    p.dense = dense.data();
    p.tables = table_ptrs;
    p.state = state.data();
    return p;
  }
};

struct Batch {
  int rows = 0;
  std::vector<std::vector<float>> dense;
  std::vector<std::vector<int64_t>> ids;
  std::vector<float> y, w;
  std::vector<const float*> dense_ptrs;
  std::vector<const int64_t*> id_ptrs;

  GraphInputs View() {
    dense_ptrs.clear();
    id_ptrs.clear();
    for (auto& d : dense) dense_ptrs.push_back(d.data());
    for (auto& i : ids) id_ptrs.push_back(i.data());
    GraphInputs in;
    in.rows = rows;
    in.dense = dense_ptrs;
    in.ids = id_ptrs;
    return in;
  }
};

// Random rows for every input of g: dense N(0, 1) + offset, ids uniform in
// [0, vocabulary) (or large ids for a hashed embedding), y in {0, 1}, w in [0.5, 1.5].
Batch RandomBatch(const Graph& g, int rows, uint64_t seed, float offset = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  Batch b;
  b.rows = rows;
  for (size_t i : g.dense_inputs()) {
    std::vector<float> x(static_cast<size_t>(rows) * g.layout()[i].width);
    for (float& v : x) v = normal(rng) + offset;
    b.dense.push_back(std::move(x));
  }
  for (size_t i : g.id_inputs()) {
    int64_t limit = int64_t{1} << 40;  // a hashed embedding's ids: any non-negative id
    for (const GraphNode& n : g.spec().nodes) {
      if (n.op == GraphOp::kEmbedding && n.inputs[0] == g.spec().nodes[i].name) {
        limit = std::min(limit, n.vocabulary);
      }
    }
    std::uniform_int_distribution<int64_t> pick(0, limit - 1);
    std::vector<int64_t> ids(static_cast<size_t>(rows));
    for (auto& v : ids) v = pick(rng);
    b.ids.push_back(std::move(ids));
  }
  std::uniform_real_distribution<float> unit(0, 1);
  for (int r = 0; r < rows; ++r) {
    b.y.push_back(unit(rng) < 0.5f ? 0.0f : 1.0f);
    b.w.push_back(0.5f + unit(rng));
  }
  return b;
}

// Spreads every parameter so that no gradient vanishes by symmetry (biases 0, gamma 1).
void Scramble(Params* p, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  for (float& v : p->dense) v += u(rng);
  for (auto& t : p->tables) {
    for (float& v : t) v = u(rng);
  }
}

struct Gradients {
  double loss = 0;
  std::vector<float> dense;
  std::vector<std::vector<int64_t>> rows;       // per table
  std::vector<std::vector<float>> table_grads;  // per table: rows x dim
  std::vector<float> predictions;
};

Gradients Compute(const Graph& g, const GraphParams& params, Batch* b, uint64_t dropout_seed,
                  GraphWorkspace* ws) {
  Gradients out;
  out.dense.assign(g.DenseParameterCount(), 0.0f);
  out.predictions.resize(static_cast<size_t>(b->rows));
  auto r = g.ForwardBackward(params, b->View(), b->y.data(), b->w.data(), out.dense.data(), ws,
                             dropout_seed, out.predictions.data());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  out.loss = r.ok() ? *r : NAN;
  for (const SparseRows& s : ws->table_gradients) {
    out.rows.emplace_back(s.rows.begin(), s.rows.begin() + static_cast<ptrdiff_t>(s.count));
    out.table_grads.emplace_back(s.grads.begin(),
                                 s.grads.begin() + static_cast<ptrdiff_t>(s.count * s.dim));
  }
  return out;
}

double LossAt(const Graph& g, Params* p, Batch* b, uint64_t dropout_seed, GraphWorkspace* ws) {
  std::vector<float> scratch(g.DenseParameterCount());
  auto r = g.ForwardBackward(p->View(), b->View(), b->y.data(), b->w.data(), scratch.data(), ws,
                             dropout_seed);
  return r.ok() ? *r : NAN;
}

// Central differences (step h) of the engine's own (float) loss against its
// analytic gradient, for every dense parameter and every entry of every table
// row the batch touched, plus one row it did not touch (whose gradient must
// be 0 and absent from the sparse list). The tolerance (0.002 + 3% of the
// larger) catches a wrong sign or a missing term of any size that matters.
// The step trades the float loss's rounding (the SIMD exp, log and tanh are
// approximations), which grows with the graph, against the curvature's error.
void CheckGradients(const GraphSpec& spec, int rows, uint64_t dropout_seed = 0,
                    float batch_offset = 0, double h = 5e-3) {
  ASSERT_TRUE(spec.Validate().ok()) << spec.Validate().ToString();
  Graph g(spec);
  Params p(g, 11);
  Scramble(&p, 12, 0.5f);
  Batch b = RandomBatch(g, rows, 13, batch_offset);
  auto ws = g.MakeWorkspace(rows);
  Gradients an = Compute(g, p.View(), &b, dropout_seed, ws.get());
  auto close = [](double a, double fd) {
    return std::fabs(a - fd) <= 2e-3 + 3e-2 * std::max(std::fabs(a), std::fabs(fd));
  };
  double norm = 0;
  for (size_t k = 0; k < p.dense.size(); ++k) {
    const float saved = p.dense[k];
    p.dense[k] = static_cast<float>(saved + h);
    double up = LossAt(g, &p, &b, dropout_seed, ws.get());
    p.dense[k] = static_cast<float>(saved - h);
    double down = LossAt(g, &p, &b, dropout_seed, ws.get());
    p.dense[k] = saved;
    double fd = (up - down) / (2 * h);
    EXPECT_TRUE(close(an.dense[k], fd))
        << "dense parameter " << k << ": analytic " << an.dense[k] << ", numeric " << fd;
    norm += fd * fd;
  }
  for (size_t t = 0; t < p.tables.size(); ++t) {
    const int dim = g.tables()[t].dim;
    const int64_t table_rows = g.tables()[t].rows;
    ASSERT_TRUE(std::is_sorted(an.rows[t].begin(), an.rows[t].end()));
    ASSERT_EQ(std::set<int64_t>(an.rows[t].begin(), an.rows[t].end()).size(), an.rows[t].size());
    std::vector<int64_t> check = an.rows[t];
    int64_t untouched = -1;
    for (int64_t r = 0; r < table_rows && untouched < 0; ++r) {
      if (!std::binary_search(an.rows[t].begin(), an.rows[t].end(), r)) untouched = r;
    }
    if (untouched >= 0) check.push_back(untouched);
    for (size_t k = 0; k < check.size(); ++k) {
      for (int d = 0; d < dim; ++d) {
        float& v = p.tables[t][static_cast<size_t>(check[k]) * dim + d];
        const float saved = v;
        v = static_cast<float>(saved + h);
        double up = LossAt(g, &p, &b, dropout_seed, ws.get());
        v = static_cast<float>(saved - h);
        double down = LossAt(g, &p, &b, dropout_seed, ws.get());
        v = saved;
        double fd = (up - down) / (2 * h);
        double a = k < an.rows[t].size() ? an.table_grads[t][k * dim + d] : 0.0;
        EXPECT_TRUE(close(a, fd)) << "table " << t << " row " << check[k] << " dim " << d
                                  << ": analytic " << a << ", numeric " << fd;
        norm += fd * fd;
      }
    }
  }
  EXPECT_GT(std::sqrt(norm), 1e-2) << "the check saw no gradient at all";
}

// ---- gradient checks, one per op ----

TEST(GraphGradientTest, DenseWithAndWithoutBias) {
  CheckGradients(Spec({DenseInput("x", 5), Dense("h", "x", 4, Activation::kTanh),
                       Dense("h2", "h", 3, Activation::kSwish, false),
                       Dense("out", "h2", 1, Activation::kSigmoid)}),
                 24);
}

TEST(GraphGradientTest, Embedding) {
  // 40 rows over 7 ids: rows repeat, so the sparse rows must sum their batch rows.
  CheckGradients(Spec({IdsInput("a", "colA"), Embedding("emb", "a", 7, 3),
                       Dense("out", "emb", 1, Activation::kSigmoid)}),
                 40);
}

TEST(GraphGradientTest, HashedEmbedding) {
  CheckGradients(Spec({IdsInput("a", "colA"), Hashed("emb", "a", 5, 2),
                       Dense("out", "emb", 1, Activation::kSigmoid)}),
                 20);
}

TEST(GraphGradientTest, Concatenate) {
  CheckGradients(Spec({DenseInput("x", 3), IdsInput("a", "colA"), Embedding("emb", "a", 6, 2),
                       Node("cat", GraphOp::kConcatenate, {"x", "emb", "x"}),
                       Dense("out", "cat", 1, Activation::kSigmoid)}),
                 20);
}

TEST(GraphGradientTest, Add) {
  CheckGradients(
      Spec({DenseInput("x", 3), IdsInput("a", "colA"), Embedding("emb", "a", 6, 2),
            Dense("hx", "x", 2, Activation::kTanh), Node("sum", GraphOp::kAdd, {"hx", "emb", "hx"}),
            Dense("out", "sum", 1, Activation::kSigmoid)}),
      20);
}

TEST(GraphGradientTest, Multiply) {
  CheckGradients(Spec({DenseInput("x", 3), IdsInput("a", "colA"), Embedding("emb", "a", 6, 2),
                       Dense("hx", "x", 2, Activation::kTanh),
                       Node("prod", GraphOp::kMultiply, {"hx", "emb", "hx"}),
                       Dense("out", "prod", 1, Activation::kSigmoid)}),
                 20);
}

TEST(GraphGradientTest, DotIntoAnActivationOutput) {
  CheckGradients(Spec({IdsInput("a", "colA"), IdsInput("b", "colB"), Embedding("ea", "a", 5, 4),
                       Embedding("eb", "b", 4, 4), Node("dot", GraphOp::kDot, {"ea", "eb"}),
                       Act("out", "dot", Activation::kSigmoid)}),
                 20);
}

TEST(GraphGradientTest, FactorizationMachine) {
  CheckGradients(
      Spec({IdsInput("a", "colA"), IdsInput("b", "colB"), DenseInput("x", 2),
            Embedding("ea", "a", 5, 3), Hashed("eb", "b", 4, 3), Dense("ex", "x", 3),
            Node("fm", GraphOp::kFm, {"ea", "eb", "ex"}), Act("out", "fm", Activation::kSigmoid)}),
      20);
}

TEST(GraphGradientTest, CrossNetwork) {
  // Trainable nodes before the cross network, so its input gradient is checked too.
  GraphNode cross = Node("cross", GraphOp::kCross, {"in"});
  cross.layers = 3;
  CheckGradients(
      Spec({DenseInput("x", 3), IdsInput("a", "colA"), Dense("hx", "x", 2, Activation::kTanh),
            Embedding("emb", "a", 5, 2), Node("in", GraphOp::kConcatenate, {"hx", "emb"}), cross,
            Dense("out", "cross", 1, Activation::kSigmoid)}),
      20);
}

TEST(GraphGradientTest, DropoutWithItsMask) {
  GraphNode drop = Node("drop", GraphOp::kDropout, {"h"});
  drop.rate = 0.4f;
  CheckGradients(Spec({DenseInput("x", 3), Dense("h", "x", 6, Activation::kTanh), drop,
                       Dense("out", "drop", 1, Activation::kSigmoid)}),
                 20, /*dropout_seed=*/77);
}

TEST(GraphGradientTest, BatchNormOnBatchStatistics) {
  // Inputs far from 0 mean: the batch statistics' terms in the gradient matter.
  GraphNode bn = Node("bn", GraphOp::kBatchNorm, {"h"});
  CheckGradients(
      Spec({DenseInput("x", 3), Dense("h", "x", 4), bn, Act("act", "bn", Activation::kTanh),
            Dense("out", "act", 1, Activation::kSigmoid)}),
      24, 0, /*batch_offset=*/2.0f);
}

TEST(GraphGradientTest, Activations) {
  for (Activation a :
       {Activation::kTanh, Activation::kSigmoid, Activation::kSwish, Activation::kLinear}) {
    SCOPED_TRACE(ActivationName(a));
    CheckGradients(Spec({DenseInput("x", 3), Dense("h", "x", 3), Act("act", "h", a),
                         Dense("out", "act", 1, Activation::kSigmoid)}),
                   20);
  }
}

TEST(GraphGradientTest, LinearOutputWithSquaredLoss) {
  // The output is an add node: no activation, the loss's gradient goes in directly.
  CheckGradients(
      Spec({DenseInput("x", 3), IdsInput("a", "colA"), Embedding("wide", "a", 5, 1),
            Dense("deep", "x", 1, Activation::kTanh), Node("out", GraphOp::kAdd, {"wide", "deep"})},
           LossKind::kSquared),
      20);
}

// ---- WDL and DeepFM shapes ----

// Numeric x (3), categorical a (vocabulary 20), b (15) and c (large ids, hashed into 64 buckets).
GraphSpec WdlSpec() {
  return Spec({DenseInput("x", 3), IdsInput("a", "colA"), IdsInput("b", "colB"),
               IdsInput("c", "colC"), Embedding("wide_a", "a", 20, 1),
               Embedding("wide_b", "b", 15, 1), Hashed("wide_c", "c", 64, 1),
               Dense("wide_x", "x", 1), Embedding("emb_a", "a", 20, 4),
               Embedding("emb_b", "b", 15, 4), Hashed("emb_c", "c", 64, 4),
               Node("deep_in", GraphOp::kConcatenate, {"x", "emb_a", "emb_b", "emb_c"}),
               Dense("h1", "deep_in", 16, Activation::kRelu),
               Dense("h2", "h1", 8, Activation::kRelu), Dense("deep", "h2", 1),
               Node("logit", GraphOp::kAdd, {"wide_a", "wide_b", "wide_c", "wide_x", "deep"}),
               Act("out", "logit", Activation::kSigmoid)});
}

GraphSpec DeepFmSpec() {
  return Spec({DenseInput("x", 3), IdsInput("a", "colA"), IdsInput("b", "colB"),
               IdsInput("c", "colC"), Embedding("lin_a", "a", 20, 1),
               Embedding("lin_b", "b", 15, 1), Hashed("lin_c", "c", 64, 1), Dense("lin_x", "x", 1),
               Embedding("emb_a", "a", 20, 4), Embedding("emb_b", "b", 15, 4),
               Hashed("emb_c", "c", 64, 4), Dense("emb_x", "x", 4, Activation::kLinear, false),
               Node("fm", GraphOp::kFm, {"emb_a", "emb_b", "emb_c", "emb_x"}),
               Node("deep_in", GraphOp::kConcatenate, {"emb_a", "emb_b", "emb_c", "x"}),
               Dense("h1", "deep_in", 16, Activation::kRelu), Dense("deep", "h1", 1),
               Node("logit", GraphOp::kAdd, {"lin_a", "lin_b", "lin_c", "lin_x", "fm", "deep"}),
               Act("out", "logit", Activation::kSigmoid)});
}

TEST(GraphGradientTest, WdlAndDeepFmShapes) {
  // Smooth activations for the check (ReLU's kink breaks central differences).
  for (GraphSpec spec : {WdlSpec(), DeepFmSpec()}) {
    for (GraphNode& n : spec.nodes) {
      if (n.activation == Activation::kRelu) n.activation = Activation::kTanh;
    }
    CheckGradients(spec, 32, 0, 0, /*h=*/2e-2);
  }
}

// A planted signal: y ~ Bernoulli(sigmoid(logit)), logit from x, per-category
// effects of a, b and c and an a x b interaction.
struct Planted {
  Batch data;
  double bayes_loss = 0;  // the loss of the true probabilities
};

Planted PlantedData(int rows, uint64_t seed) {
  std::mt19937_64 effects(1234);  // the same effects for train and test data
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> ea(20), eb(15), ec(30), inter(16);
  std::vector<int64_t> c_ids(30);
  for (auto& v : ea) v = normal(effects);
  for (auto& v : eb) v = normal(effects);
  for (auto& v : ec) v = normal(effects);
  for (auto& v : inter) v = 1.5 * normal(effects);
  for (auto& v : c_ids) v = static_cast<int64_t>(effects() >> 2);  // large, sparse ids
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nx(0, 1);
  std::uniform_real_distribution<double> unit(0, 1);
  Planted p;
  Batch& b = p.data;
  b.rows = rows;
  b.dense.assign(1, {});
  b.ids.assign(3, {});
  for (int r = 0; r < rows; ++r) {
    float x[3] = {nx(rng), nx(rng), nx(rng)};
    int64_t a = static_cast<int64_t>(rng() % 20), bb = static_cast<int64_t>(rng() % 15);
    size_t ci = static_cast<size_t>(rng() % 30);
    double logit = 1.5 * x[0] - x[1] + ea[static_cast<size_t>(a)] + eb[static_cast<size_t>(bb)] +
                   ec[ci] + inter[static_cast<size_t>((a % 4) * 4 + bb % 4)];
    double prob = 1 / (1 + std::exp(-logit));
    float y = unit(rng) < prob ? 1.0f : 0.0f;
    b.dense[0].insert(b.dense[0].end(), x, x + 3);
    b.ids[0].push_back(a);
    b.ids[1].push_back(bb);
    b.ids[2].push_back(c_ids[ci]);
    b.y.push_back(y);
    b.w.push_back(1.0f);
    p.bayes_loss -= prob * std::log(prob) + (1 - prob) * std::log(1 - prob);
  }
  p.bayes_loss /= rows;
  return p;
}

Batch Rows(const Batch& all, const std::vector<uint32_t>& order, size_t begin, size_t end) {
  Batch b;
  b.rows = static_cast<int>(end - begin);
  b.dense.resize(all.dense.size());
  b.ids.resize(all.ids.size());
  for (size_t k = begin; k < end; ++k) {
    const size_t r = order[k];
    for (size_t d = 0; d < all.dense.size(); ++d) {
      const size_t w = all.dense[d].size() / static_cast<size_t>(all.rows);
      b.dense[d].insert(b.dense[d].end(), all.dense[d].begin() + static_cast<ptrdiff_t>(r * w),
                        all.dense[d].begin() + static_cast<ptrdiff_t>((r + 1) * w));
    }
    for (size_t i = 0; i < all.ids.size(); ++i) b.ids[i].push_back(all.ids[i][r]);
    b.y.push_back(all.y[r]);
    b.w.push_back(all.w[r]);
  }
  return b;
}

double MeanLogLoss(const std::vector<float>& p, const std::vector<float>& y) {
  double s = 0;
  for (size_t i = 0; i < p.size(); ++i) s += RowLoss(LossKind::kLog, p[i], y[i]);
  return s / static_cast<double>(p.size());
}

// Adam on the dense parameters, per-row AdaGrad on the tables' sparse rows;
// dropout seeded per batch, batch norm's moving statistics moved after each.
void TrainAndCheck(const GraphSpec& spec) {
  Graph g(spec);
  Params p(g, 5);
  Planted train = PlantedData(6000, 1);
  Planted test = PlantedData(2000, 2);
  OptimizerConfig config;
  config.kind = OptimizerKind::kAdam;
  config.learning_rate = 0.01;
  auto opt = Optimizer::Create(config, spec.UnregularizedMask());
  std::vector<std::vector<float>> adagrad;
  for (auto& t : p.tables) adagrad.emplace_back(t.size(), 0.0f);
  const int batch = 64;
  auto ws = g.MakeWorkspace(batch);
  std::vector<float> grad(g.DenseParameterCount());
  std::vector<uint32_t> order(static_cast<size_t>(train.data.rows));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::mt19937_64 shuffle(9);
  for (int epoch = 0; epoch < 12; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle);
    for (size_t s = 0; s < order.size(); s += batch) {
      Batch b = Rows(train.data, order, s, std::min(order.size(), s + batch));
      std::fill(grad.begin(), grad.end(), 0.0f);
      auto r = g.ForwardBackward(p.View(), b.View(), b.y.data(), b.w.data(), grad.data(), ws.get(),
                                 /*dropout_seed=*/1000 * static_cast<uint64_t>(epoch) + s + 1);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      g.UpdateState(*ws, p.state.data());
      const float inv = 1.0f / static_cast<float>(b.rows);
      for (float& v : grad) v *= inv;
      opt->Step(p.dense.data(), grad.data(), epoch);
      for (size_t t = 0; t < p.tables.size(); ++t) {
        const SparseRows& sr = ws->table_gradients[t];
        for (size_t k = 0; k < sr.count; ++k) {
          for (int d = 0; d < sr.dim; ++d) {
            const size_t at = static_cast<size_t>(sr.rows[k]) * sr.dim + d;
            const float gk = sr.grad(k)[d] * inv;
            adagrad[t][at] += gk * gk;
            p.tables[t][at] -= 0.05f * gk / (std::sqrt(adagrad[t][at]) + 1e-7f);
          }
        }
      }
    }
  }
  std::vector<float> pred(static_cast<size_t>(test.data.rows));
  ASSERT_TRUE(g.Predict(p.View(), test.data.View(), pred.data(), ws.get()).ok());
  double base_rate = 0;
  for (float y : train.data.y) base_rate += y;
  base_rate /= train.data.rows;
  std::vector<float> chance(pred.size(), static_cast<float>(base_rate));
  const double chance_loss = MeanLogLoss(chance, test.data.y);
  const double loss = MeanLogLoss(pred, test.data.y);
  // Most of the way from chance to the true probabilities' loss.
  EXPECT_LT(loss, test.bayes_loss + 0.35 * (chance_loss - test.bayes_loss))
      << "test log loss " << loss << ", chance " << chance_loss << ", true probabilities "
      << test.bayes_loss;
}

TEST(GraphTrainingTest, WdlLearnsAPlantedSignal) { TrainAndCheck(WdlSpec()); }

TEST(GraphTrainingTest, DeepFmLearnsAPlantedSignal) { TrainAndCheck(DeepFmSpec()); }

// DCN: a cross network beside a deep tower with batch norm and dropout; the
// test scores run on the moving statistics the training left.
GraphSpec DcnSpec() {
  GraphNode cross = Node("cross", GraphOp::kCross, {"in"});
  cross.layers = 2;
  GraphNode bn = Node("bn", GraphOp::kBatchNorm, {"h1"});
  GraphNode drop = Node("drop", GraphOp::kDropout, {"bn_act"});
  drop.rate = 0.1f;
  return Spec({DenseInput("x", 3), IdsInput("a", "colA"), IdsInput("b", "colB"),
               IdsInput("c", "colC"), Embedding("emb_a", "a", 20, 4),
               Embedding("emb_b", "b", 15, 4), Hashed("emb_c", "c", 64, 4),
               Node("in", GraphOp::kConcatenate, {"x", "emb_a", "emb_b", "emb_c"}), cross,
               Dense("h1", "in", 16), bn, Act("bn_act", "bn", Activation::kRelu), drop,
               Node("both", GraphOp::kConcatenate, {"cross", "drop"}),
               Dense("out", "both", 1, Activation::kSigmoid)});
}

TEST(GraphTrainingTest, DcnWithBatchNormAndDropoutLearnsAPlantedSignal) {
  TrainAndCheck(DcnSpec());
}

// ---- behaviour ----

TEST(GraphTest, BatchNormTrainsOnBatchStatisticsAndInfersOnMovingOnes) {
  GraphNode bn = Node("bn", GraphOp::kBatchNorm, {"x"});
  bn.momentum = 0.5f;
  Graph g(Spec({DenseInput("x", 3), bn, Dense("out", "bn", 1, Activation::kSigmoid)}));
  EXPECT_EQ(g.StateCount(), 6u);
  EXPECT_EQ(g.DenseParameterCount(), 6u + 4u);  // gamma, beta; W and b of out
  Params p(g, 3);
  Scramble(&p, 4, 0.3f);
  Batch b = RandomBatch(g, 50, 5, /*offset=*/3.0f);
  auto ws = g.MakeWorkspace(64);
  Gradients train = Compute(g, p.View(), &b, 0, ws.get());
  // Batch statistics: the mean of the normalized batch is 0, so the training
  // predictions do not depend on the offset of the inputs.
  Batch shifted = b;
  for (float& v : shifted.dense[0]) v += 10.0f;
  Gradients train_shifted = Compute(g, p.View(), &shifted, 0, ws.get());
  for (int r = 0; r < b.rows; ++r)
    EXPECT_NEAR(train.predictions[r], train_shifted.predictions[r], 1e-4);

  // Inference at the initial moving statistics (mean 0, variance 1) sees the offset.
  std::vector<float> inferred(static_cast<size_t>(b.rows));
  ASSERT_TRUE(g.Predict(p.View(), b.View(), inferred.data(), ws.get()).ok());
  double diff = 0;
  for (int r = 0; r < b.rows; ++r) diff += std::fabs(inferred[r] - train.predictions[r]);
  EXPECT_GT(diff / b.rows, 0.05);

  // One update: moving = 0.5 * moving + 0.5 * batch, for the mean and the (biased) variance.
  Compute(g, p.View(), &b, 0, ws.get());
  g.UpdateState(*ws, p.state.data());
  for (int d = 0; d < 3; ++d) {
    double mean = 0, var = 0;
    for (int r = 0; r < b.rows; ++r) mean += b.dense[0][r * 3 + d];
    mean /= b.rows;
    for (int r = 0; r < b.rows; ++r) var += std::pow(b.dense[0][r * 3 + d] - mean, 2);
    var /= b.rows;
    EXPECT_NEAR(p.state[d], 0.5 * mean, 1e-4);
    EXPECT_NEAR(p.state[3 + d], 0.5 * 1.0 + 0.5 * var, 1e-4);
  }
  // After many updates on the same batch, inference matches training.
  for (int k = 0; k < 40; ++k) {
    Compute(g, p.View(), &b, 0, ws.get());
    g.UpdateState(*ws, p.state.data());
  }
  ASSERT_TRUE(g.Predict(p.View(), b.View(), inferred.data(), ws.get()).ok());
  for (int r = 0; r < b.rows; ++r) EXPECT_NEAR(inferred[r], train.predictions[r], 1e-4);
}

TEST(GraphTest, DropoutIsDeterministicInItsSeedAndOffInInference) {
  GraphNode drop = Node("drop", GraphOp::kDropout, {"h"});
  drop.rate = 0.5f;
  Graph g(Spec({DenseInput("x", 4), Dense("h", "x", 32, Activation::kTanh), drop,
                Dense("out", "drop", 1, Activation::kSigmoid)}));
  Params p(g, 1);
  Batch b = RandomBatch(g, 40, 2);
  auto ws = g.MakeWorkspace(40);
  Gradients a = Compute(g, p.View(), &b, 99, ws.get());
  Gradients again = Compute(g, p.View(), &b, 99, ws.get());
  Gradients other = Compute(g, p.View(), &b, 100, ws.get());
  Gradients none = Compute(g, p.View(), &b, 0, ws.get());
  EXPECT_EQ(a.predictions, again.predictions);
  EXPECT_EQ(a.dense, again.dense);
  EXPECT_NE(a.predictions, other.predictions);
  EXPECT_NE(a.predictions, none.predictions);
  std::vector<float> inferred(static_cast<size_t>(b.rows));
  ASSERT_TRUE(g.Predict(p.View(), b.View(), inferred.data(), ws.get()).ok());
  for (int r = 0; r < b.rows; ++r) EXPECT_FLOAT_EQ(inferred[r], none.predictions[r]);
}

TEST(GraphTest, HashedBucketsArePinned) {
  // These values are part of every saved hashed-embedding model: never change them.
  EXPECT_EQ(HashedBucket(0, 1000), 535u);
  EXPECT_EQ(HashedBucket(1, 1000), 465u);
  EXPECT_EQ(HashedBucket(42, 1000), 413u);
  EXPECT_EQ(HashedBucket(123456789, 1 << 20), 751225u);
  EXPECT_EQ(HashedBucket(int64_t{1} << 40, 97), 7u);
  // A graph reads exactly that row.
  Graph g(Spec({IdsInput("a", "colA"), Hashed("emb", "a", 1000, 1),
                Dense("out", "emb", 1, Activation::kLinear)},
               LossKind::kSquared));
  Params p(g, 1);
  for (size_t r = 0; r < p.tables[0].size(); ++r) p.tables[0][r] = static_cast<float>(r);
  p.dense = {1.0f, 0.0f};
  Batch b;
  b.rows = 2;
  b.ids = {{42, 7}};
  std::vector<float> out(2);
  auto ws = g.MakeWorkspace(4);
  ASSERT_TRUE(g.Predict(p.View(), b.View(), out.data(), ws.get()).ok());
  EXPECT_EQ(out[0], 413.0f);
  EXPECT_EQ(out[1], 487.0f);
}

TEST(GraphTest, SameResultWhateverTheThreads) {
  Graph g(DeepFmSpec());
  Params p(g, 7);
  Batch b = RandomBatch(g, 100, 8);
  auto ws = g.MakeWorkspace(128);
  const GraphParams shared = p.View();
  Gradients serial = Compute(g, shared, &b, 5, ws.get());
  std::vector<Gradients> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Batch mine = b;
      auto own = g.MakeWorkspace(128);
      results[static_cast<size_t>(t)] = Compute(g, shared, &mine, 5, own.get());
    });
  }
  for (auto& t : threads) t.join();
  for (const Gradients& r : results) {
    EXPECT_EQ(r.loss, serial.loss);
    EXPECT_EQ(r.dense, serial.dense);
    EXPECT_EQ(r.rows, serial.rows);
    EXPECT_EQ(r.table_grads, serial.table_grads);
    EXPECT_EQ(r.predictions, serial.predictions);
  }
}

// The sparse table gradient, against a plain reference built from the
// embedding node's per-row gradient: every touched row once, ascending, its
// gradient the sum of its batch rows' in batch order (bit for bit). Few ids
// (many repeats), ids hashed over 2^16 buckets (the map's keys collide),
// a batch that is not a multiple of the SIMD width, one- and 3-wide tables.
TEST(GraphTest, TableGradientsSumEachTouchedRowInBatchOrder) {
  Graph g(Spec({IdsInput("a", "a"), IdsInput("h", "h"), Embedding("few", "a", 5, 3),
                Embedding("wide", "a", 5, 1), Hashed("many", "h", int64_t{1} << 16, 3),
                Node("cat", GraphOp::kConcatenate, {"few", "wide", "many"}),
                Dense("out", "cat", 1, Activation::kSigmoid)}));
  Params p(g, 4);
  Scramble(&p, 5, 0.5f);
  auto ws = g.MakeWorkspace(300);
  for (int rows : {1, 77, 300}) {
    Batch b = RandomBatch(g, rows, static_cast<uint64_t>(rows));
    Gradients got = Compute(g, p.View(), &b, 0, ws.get());
    const int nb = kernels::AlignBatch(rows);
    for (size_t node = 0; node < g.spec().nodes.size(); ++node) {
      const int t = g.layout()[node].table;
      if (t < 0) continue;
      const int dim = g.layout()[node].width;
      std::map<int64_t, std::vector<float>> want;
      for (int r = 0; r < rows; ++r) {
        auto& sum = want[ws->table_rows[static_cast<size_t>(t)][static_cast<size_t>(r)]];
        sum.resize(static_cast<size_t>(dim), 0.0f);
        for (int d = 0; d < dim; ++d) {
          sum[static_cast<size_t>(d)] += ws->grad[node].data()[d * nb + r];
        }
      }
      std::vector<int64_t> want_rows;
      std::vector<float> want_grads;
      for (const auto& [row, sum] : want) {
        want_rows.push_back(row);
        want_grads.insert(want_grads.end(), sum.begin(), sum.end());
      }
      EXPECT_EQ(got.rows[static_cast<size_t>(t)], want_rows) << g.spec().nodes[node].name;
      EXPECT_EQ(got.table_grads[static_cast<size_t>(t)], want_grads) << g.spec().nodes[node].name;
    }
  }
}

TEST(GraphTest, AWarmWorkspaceMakesThePassesAllocationFree) {
  for (const GraphSpec& spec : {DcnSpec(), DeepFmSpec()}) {
    Graph g(spec);
    Params p(g, 3);
    Batch b = RandomBatch(g, 50, 4);
    auto ws = g.MakeWorkspace(64);
    const GraphParams params = p.View();
    const GraphInputs in = b.View();
    std::vector<float> grad(g.DenseParameterCount()), out(static_cast<size_t>(b.rows));
    allocations = 0;
    counting_allocations = true;
    bool ok = true;
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      ok = ok && g.ForwardBackward(params, in, b.y.data(), b.w.data(), grad.data(), ws.get(), seed,
                                   out.data())
                     .ok();
      g.UpdateState(*ws, p.state.data());
      ok = ok && g.Predict(params, in, out.data(), ws.get()).ok();
    }
    counting_allocations = false;
    EXPECT_TRUE(ok);
    EXPECT_EQ(allocations, 0);
    EXPECT_GT(ws->table_gradients[0].count, 0u);
  }
}

TEST(GraphTest, PredictInBlocksMatchesTheTrainingPass) {
  Graph g(WdlSpec());
  Params p(g, 3);
  Batch b = RandomBatch(g, 100, 4);
  auto big = g.MakeWorkspace(100);
  Gradients train = Compute(g, p.View(), &b, 0, big.get());
  auto small = g.MakeWorkspace(16);  // 7 blocks
  std::vector<float> out(100);
  ASSERT_TRUE(g.Predict(p.View(), b.View(), out.data(), small.get()).ok());
  for (int r = 0; r < 100; ++r) EXPECT_FLOAT_EQ(out[r], train.predictions[r]);
  // A training batch must fit the workspace (batch norm needs it whole).
  std::vector<float> grad(g.DenseParameterCount());
  auto r = g.ForwardBackward(p.View(), b.View(), b.y.data(), nullptr, grad.data(), small.get(), 0);
  EXPECT_FALSE(r.ok());
}

TEST(GraphTest, IdsOutsideTheVocabularyAreRefusedByNodeRowAndId) {
  Graph g(Spec({IdsInput("a", "colA"), Embedding("emb", "a", 5, 2),
                Dense("out", "emb", 1, Activation::kSigmoid)}));
  Params p(g, 1);
  Batch b;
  b.rows = 3;
  b.ids = {{1, 5, 2}};
  b.y = {0, 1, 0};
  std::vector<float> out(3), grad(g.DenseParameterCount());
  auto ws = g.MakeWorkspace(4);
  Status st = g.Predict(p.View(), b.View(), out.data(), ws.get());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'emb' (column colA): row 1 has id 5"), std::string::npos)
      << st.message();
  b.ids = {{1, -1, 2}};
  auto r = g.ForwardBackward(p.View(), b.View(), b.y.data(), nullptr, grad.data(), ws.get(), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("row 1 has id -1"), std::string::npos);
  Batch wrong;  // no ids at all
  wrong.rows = 3;
  EXPECT_FALSE(g.Predict(p.View(), wrong.View(), out.data(), ws.get()).ok());
  // A workspace of another graph (of other widths) is refused, not overrun.
  Graph other(WdlSpec());
  auto foreign = other.MakeWorkspace(4);
  b.ids = {{1, 2, 3}};
  EXPECT_TRUE(g.Predict(p.View(), b.View(), out.data(), ws.get()).ok());
  st = g.Predict(p.View(), b.View(), out.data(), foreign.get());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the workspace was not made by this graph"), std::string::npos);
}

TEST(GraphTest, ParameterLayoutAndCounts) {
  GraphNode cross = Node("cross", GraphOp::kCross, {"cat"});
  cross.layers = 2;
  GraphSpec spec = Spec({DenseInput("x", 3), IdsInput("a", "colA"), Embedding("emb", "a", 10, 2),
                         Node("cat", GraphOp::kConcatenate, {"x", "emb"}), cross,
                         Node("bn", GraphOp::kBatchNorm, {"cross"}),
                         Dense("out", "bn", 1, Activation::kSigmoid, false)});
  ASSERT_TRUE(spec.Validate().ok());
  auto layout = spec.Layout();
  EXPECT_EQ(layout[3].width, 5);
  EXPECT_EQ(layout[4].param_offset, 0u);
  EXPECT_EQ(layout[4].param_count, 2u * 2u * 5u);  // w_l, b_l per cross layer
  EXPECT_EQ(layout[5].param_offset, 20u);
  EXPECT_EQ(layout[5].param_count, 10u);  // gamma, beta
  EXPECT_EQ(layout[6].param_offset, 30u);
  EXPECT_EQ(layout[6].param_count, 5u);  // no bias
  EXPECT_EQ(spec.DenseParameterCount(), 35u);
  EXPECT_EQ(spec.ParameterCount(), 35u + 20u);
  EXPECT_EQ(spec.TableShapes(), (std::vector<EmbeddingTableShape>{{"emb", 10, 2}}));
  std::vector<bool> mask = spec.UnregularizedMask();
  std::vector<bool> expected(35, false);
  for (int k = 5; k < 10; ++k) expected[k] = true;   // b_0
  for (int k = 15; k < 30; ++k) expected[k] = true;  // b_1, gamma, beta
  EXPECT_EQ(mask, expected);
  Graph g(spec);
  // The gather (2), the concatenation (5), cross (5 per float per layer), batch norm, dense.
  EXPECT_DOUBLE_EQ(g.ForwardFlopsPerRow(), 2 + 5 + 5.0 * 5 * 2 + 4.0 * 5 + 2.0 * 5);
  // Initialization is deterministic in the seed and within U(+-0.05) for tables.
  Params a(g, 1), again(g, 1), other(g, 2);
  EXPECT_EQ(a.dense, again.dense);
  EXPECT_EQ(a.tables, again.tables);
  EXPECT_NE(a.tables, other.tables);
  for (float v : a.tables[0]) EXPECT_LE(std::fabs(v), 0.05f);
  for (int k = 20; k < 25; ++k) EXPECT_EQ(a.dense[k], 1.0f);  // gamma
  EXPECT_EQ(a.state, (std::vector<float>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
}

// A Keras layer called on two tensors: two dense nodes, one block of W and b, whose gradient
// sums both calls' (the check perturbs each shared parameter once, moving both nodes).
GraphSpec SharedDenseSpec() {
  GraphNode tower_b = Dense("tower_b", "eb", 3, Activation::kTanh);
  tower_b.shares = "tower_a";
  return Spec({IdsInput("a", "colA"), IdsInput("b", "colB"), Embedding("ea", "a", 6, 4),
               Embedding("eb", "b", 5, 4), Dense("tower_a", "ea", 3, Activation::kTanh), tower_b,
               Node("both", GraphOp::kConcatenate, {"tower_a", "tower_b"}),
               Dense("out", "both", 1, Activation::kSigmoid)});
}

TEST(GraphGradientTest, SharedDenseSumsTheGradientsOfItsCalls) {
  CheckGradients(SharedDenseSpec(), 24);
}

TEST(GraphTest, ASharedDenseUsesItsOwnersParameters) {
  GraphSpec spec = SharedDenseSpec();
  ASSERT_TRUE(spec.Validate().ok()) << spec.Validate().ToString();
  auto layout = spec.Layout();
  EXPECT_EQ(layout[5].owner, 4);
  EXPECT_EQ(layout[5].param_offset, layout[4].param_offset);
  EXPECT_EQ(layout[5].param_count, 4u * 3u + 3u);
  EXPECT_EQ(layout[7].param_offset, 15u);  // the next block follows the one shared block
  EXPECT_EQ(spec.DenseParameterCount(), 15u + 6u + 1u);
  Graph g(spec);
  Params p(g, 3);
  // Both calls read the one W (3 x 4) and b of tower_a: the score by hand for rows 0 of ea and eb.
  for (int d = 0; d < 4; ++d) {
    p.tables[0][static_cast<size_t>(d)] = 0.1f * static_cast<float>(d + 1);
    p.tables[1][static_cast<size_t>(d)] = -0.2f * static_cast<float>(d);
  }
  auto tower = [&](const std::vector<float>& table, int m) {
    double z = p.dense[12 + static_cast<size_t>(m)];
    for (int k = 0; k < 4; ++k) z += p.dense[static_cast<size_t>(m * 4 + k)] * table[k];
    return std::tanh(z);
  };
  double z = p.dense[15 + 6];
  for (int m = 0; m < 3; ++m) {
    z += p.dense[15 + static_cast<size_t>(m)] * tower(p.tables[0], m) +
         p.dense[18 + static_cast<size_t>(m)] * tower(p.tables[1], m);
  }
  auto ws = g.MakeWorkspace(1);
  const int64_t zero = 0;
  const int64_t* const ids[] = {&zero, &zero};
  GraphInputs in{1, {}, std::span<const int64_t* const>(ids, 2)};
  float score = 0;
  ASSERT_TRUE(g.Predict(p.View(), in, &score, ws.get()).ok());
  EXPECT_NEAR(score, 1.0 / (1.0 + std::exp(-z)), 1e-6);
  GraphSpec round = *GraphSpec::FromJson(spec.ToJson(), "graph.json");
  EXPECT_EQ(round, spec);
  EXPECT_EQ(spec.ToJson()["nodes"][5]["shares"], "tower_a");
}

// ---- the spec as JSON ----

TEST(GraphSpecTest, JsonRoundTrip) {
  GraphSpec spec = DeepFmSpec();
  GraphNode cross = Node("cross", GraphOp::kCross, {"deep_in"});
  cross.layers = 2;
  GraphNode drop = Node("drop", GraphOp::kDropout, {"cross"});
  drop.rate = 0.25f;
  GraphNode bn = Node("bn", GraphOp::kBatchNorm, {"drop"});
  bn.momentum = 0.9f;
  GraphNode mul = Node("mul", GraphOp::kMultiply, {"emb_a", "emb_b"});
  GraphNode dot = Node("dot", GraphOp::kDot, {"mul", "emb_c"});
  spec.nodes.insert(spec.nodes.end() - 2, {cross, drop, bn, Dense("bn_out", "bn", 1), mul, dot});
  spec.nodes[spec.nodes.size() - 2].inputs.push_back("bn_out");
  spec.nodes[spec.nodes.size() - 2].inputs.push_back("dot");
  spec.initializer = Initializer::kHe;
  ASSERT_TRUE(spec.Validate().ok()) << spec.Validate().ToString();
  Json j = spec.ToJson();
  auto back = GraphSpec::FromJson(j, "graph.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, spec);
  EXPECT_EQ(j["nodes"][0].dump(), R"({"name":"x","op":"input","source":"dense","width":3})");
  EXPECT_EQ(j["nodes"][1].dump(), R"({"name":"a","op":"input","source":"ids","column":"colA"})");
}

void ExpectRefused(const std::string& json, const std::string& fragment) {
  auto r = GraphSpec::FromJson(Json::parse(json), "graph.json");
  ASSERT_FALSE(r.ok()) << json;
  EXPECT_NE(r.status().message().find(fragment), std::string::npos)
      << "got: " << r.status().message() << "\nwanted: " << fragment;
}

TEST(GraphSpecTest, BadSpecsAreRefusedByNodeAndField) {
  const std::string x = R"({"name":"x","op":"input","source":"dense","width":3})";
  const std::string a = R"({"name":"a","op":"input","source":"ids","column":"colA"})";
  const std::string out = R"({"name":"out","op":"dense","inputs":["x"],"units":1})";
  auto graph = [](std::vector<std::string> nodes) {
    std::string s = R"({"loss":"log","nodes":[)";
    for (size_t i = 0; i < nodes.size(); ++i) s += (i ? "," : "") + nodes[i];
    return s + "]}";
  };
  ExpectRefused(graph({x, x, out}),
                "graph.json: node 'x' (nodes[1]): name is already used by nodes[0]");
  ExpectRefused(graph({x, R"({"name":"out","op":"dense","inputs":["y"],"units":1})"}),
                "node 'out' (nodes[1]): inputs names 'y', which is not a node listed before it");
  ExpectRefused(graph({R"({"name":"out","op":"dense","inputs":["x"],"units":1})", x}),
                "node 'out' (nodes[0]): inputs names 'x'");
  ExpectRefused(
      graph({a, R"({"name":"emb","op":"embedding","inputs":["a"],"vocabulary":0,"units":2})",
             R"({"name":"out","op":"dense","inputs":["emb"],"units":1})"}),
      "node 'emb' (nodes[1]): vocabulary must be a positive integer, got 0");
  ExpectRefused(
      graph({a, R"({"name":"emb","op":"embedding","inputs":["a"],"vocabulary":"ten","units":2})",
             R"({"name":"out","op":"dense","inputs":["emb"],"units":1})"}),
      "node 'emb' (nodes[1]): vocabulary must be an integer, got \"ten\"");
  ExpectRefused(
      graph({x, R"({"name":"emb","op":"embedding","inputs":["x"],"vocabulary":4,"units":2})",
             R"({"name":"out","op":"dense","inputs":["emb"],"units":1})"}),
      "node 'emb' (nodes[1]): inputs must name an input node of source ids, got 'x'");
  ExpectRefused(graph({a, R"({"name":"out","op":"dense","inputs":["a"],"units":1})"}),
                "node 'out' (nodes[1]): inputs names 'a', an ids input");
  ExpectRefused(graph({x, R"({"name":"h","op":"dense","inputs":["x"],"units":2})",
                       R"({"name":"s","op":"add","inputs":["x","h"]})",
                       R"({"name":"out","op":"dense","inputs":["s"],"units":1})"}),
                "node 's' (nodes[2]): inputs must have equal widths, got 'x' of 3 and 'h' of 2");
  ExpectRefused(graph({x, R"({"name":"d","op":"dot","inputs":["x"]})"}),
                "node 'd' (nodes[1]): inputs must list 2 node(s), got 1");
  ExpectRefused(
      graph({x, R"({"name":"out","op":"dense","inputs":["x"],"units":2})"}),
      "node 'out' (nodes[1]): the output (the last node) must be a float of width 1, got width 2");
  ExpectRefused(graph({x, R"({"name":"h","op":"dense","inputs":["x"],"units":2})", out}),
                "node 'h' (nodes[1]): is used by no node");
  ExpectRefused(graph({x, R"({"name":"d","op":"dropout","inputs":["x"],"rate":1})", out}),
                "node 'd' (nodes[1]): rate must lie in [0, 1)");
  ExpectRefused(graph({x, R"({"name":"c","op":"cross","inputs":["x"],"layers":0})", out}),
                "node 'c' (nodes[1]): layers must be a positive integer, got 0");
  ExpectRefused(graph({x, R"({"name":"h","op":"dense","inputs":["x"],"units":3})",
                       R"({"name":"h2","op":"dense","inputs":["h"],"units":3,"shares":"x"})", out}),
                "node 'h2' (nodes[2]): shares must name a dense node listed before it");
  ExpectRefused(
      graph({x, R"({"name":"h","op":"dense","inputs":["x"],"units":2})",
             R"({"name":"h2","op":"dense","inputs":["h"],"units":2,"shares":"h"})",
             R"({"name":"out","op":"dense","inputs":["h2"],"units":1})"}),
      "node 'h2' (nodes[2]): shares 'h' has other parameters: 2 units over an input of width 3, "
      "against 2 over 2");
  ExpectRefused(graph({x, R"({"name":"b","op":"batch_norm","inputs":["x"],"epsilon":0})", out}),
                "node 'b' (nodes[1]): epsilon must be a positive number");
  ExpectRefused(graph({x, R"({"name":"out","op":"dense","inputs":["x"],"unit":1})"}),
                "node 'out' (nodes[1]): field 'unit' is not one of op dense's (valid: name, op, "
                "inputs, units, activation, use_bias, shares)");
  ExpectRefused(graph({x, R"({"name":"out","op":"dense","inputs":["x"],"units":1,"rate":0.1})"}),
                "node 'out' (nodes[1]): field 'rate' is not one of op dense's");
  ExpectRefused(graph({x, R"({"name":"out","op":"conv","inputs":["x"]})"}),
                "node 'out' (nodes[1]): op: unknown op 'conv'");
  ExpectRefused(
      graph({x, R"({"name":"out","op":"dense","inputs":["x"],"units":1,"activation":"elu"})"}),
      "node 'out' (nodes[1]): activation: unknown activation 'elu'");
  ExpectRefused(graph({R"({"name":"x","op":"input","source":"csv","width":3})", out}),
                "node 'x' (nodes[0]): source must be \"dense\" or \"ids\", got \"csv\"");
  ExpectRefused(graph({R"({"name":"x","op":"input","source":"dense"})", out}),
                "node 'x' (nodes[0]): width must be an integer, but it is missing");
  ExpectRefused(graph({x, R"({"name":"out","op":"dense","inputs":["x"],"units":1.5})"}),
                "node 'out' (nodes[1]): units must be an integer, got 1.5");
  ExpectRefused(R"({"nodes":[]})", "graph.json: the graph has no nodes");
  ExpectRefused(R"({"loss":"hinge","nodes":[]})", "graph.json: loss: unknown loss 'hinge'");
  ExpectRefused(R"({"node":[]})", "graph.json: unknown field 'node'");
}

}  // namespace
}  // namespace tarn::model
