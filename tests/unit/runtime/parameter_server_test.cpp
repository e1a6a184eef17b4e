// A parameter server holding a graph's batch-norm state in its dense slice,
// over real TCP connections: sync mode sets the state to the mean of the
// step's pushes (each a worker's moved state), async adds each push's move.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/job.h"
#include "runtime/messages.h"
#include "runtime/node_harness.h"
#include "runtime/protocol.h"
#include "runtime/sparse_client.h"
#include "runtime/sparse_messages.h"
#include "test_util.h"

namespace tarn::runtime {
namespace {

// x (3) -> dense h (2 units) -> batch_norm -> dense out (1, sigmoid): 15
// dense parameters (h 8, gamma and beta 4, out 3), then the moving mean (2)
// and the moving variance (2).
constexpr const char* kBatchNormGraph = R"({"spec": {"loss": "log", "initializer": "xavier",
  "nodes": [{"name": "x", "op": "input", "source": "dense", "width": 3},
            {"name": "h", "op": "dense", "inputs": ["x"], "units": 2},
            {"name": "bn", "op": "batch_norm", "inputs": ["h"]},
            {"name": "out", "op": "dense", "inputs": ["bn"], "units": 1,
             "activation": "sigmoid"}]},
  "l2": null, "unregularized": []})";
constexpr size_t kDense = 15, kCount = 19;

std::vector<float> StateOf(const std::string& answer) {
  msg::ParamsAnswer a;
  EXPECT_TRUE(msg::ParamsAnswer::Decode(answer, kCount, &a).ok());
  return a.params.size() == kCount ? std::vector<float>(a.params.begin() + kDense, a.params.end())
                                   : std::vector<float>();
}

// A push of a zero dense gradient with `state` at the state's places.
std::string PushOf(int64_t term, int slot, int64_t step, double weight,
                   const std::vector<float>& state) {
  std::vector<float> gradient(kDense, 0.0f);
  gradient.insert(gradient.end(), state.begin(), state.end());
  return msg::Push::Encode(term, slot, step, weight, gradient);
}

TEST(ParameterServerTest, BatchNormStateIsTheWorkersMeanInSyncAndTheirMovesAddedInAsync) {
  testing::TempDir dir;
  ParameterServerThread ps("parameter-server-test-secret");
  auto first = ps.Dial(), second = ps.Dial();
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(second.ok()) << second.status().message();
  JobConfig job = SmallJob(dir.path());
  job.graph_model = Json::parse(kBatchNormGraph);
  auto call = [](net::RpcClient& c, uint16_t type, const std::string& payload) {
    auto r = c.Call(type, payload, net::Deadline::InMs(20000));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : std::string();
  };
  auto configure = [&](int64_t term, Consistency mode) {
    job.consistency = mode;
    msg::Configure c;
    c.term = term;
    c.begin = 0;
    c.end = kCount;
    c.job = job.ToJson();
    c.init_seed = 7;
    call(**first, kConfigure, c.ToJson().dump());
    call(**first, kStartEpoch, msg::StartEpoch{term, 0, {0, 1}}.ToJson().dump());
    return StateOf(call(**first, kPull, msg::Pull::Encode(term)));
  };
  // Its start: moving mean 0, moving variance 1.
  EXPECT_EQ(configure(1, Consistency::kSync), std::vector<float>({0, 0, 1, 1}));

  // sync: the two workers' moved states, averaged once both pushed (one
  // vote each, whatever their batches weigh), for both of them.
  const std::vector<float> moved0 = {0.1f, -0.2f, 0.9f, 1.1f}, moved1 = {0.3f, 0.4f, 0.8f, 1.3f};
  std::string answer0;
  std::thread t([&] { answer0 = call(**first, kPush, PushOf(1, 0, 0, 10, moved0)); });
  const std::string answer1 = call(**second, kPush, PushOf(1, 1, 0, 30, moved1));
  t.join();
  std::vector<float> mean;
  for (size_t i = 0; i < moved0.size(); ++i) {
    mean.push_back(static_cast<float>((double{moved0[i]} + double{moved1[i]}) / 2));
  }
  EXPECT_EQ(StateOf(answer0), mean);
  EXPECT_EQ(StateOf(answer1), mean);
  // One worker's moved state is kept exactly, as LOCAL keeps its own.
  call(**first, kSlotDone, msg::SlotDone{1, 1}.ToJson().dump());
  EXPECT_EQ(StateOf(call(**first, kPush, PushOf(1, 0, 1, 10, moved0))), moved0);

  // async: each push carries its move since the worker's last answer; the
  // server adds it on arrival.
  const std::vector<float> start = configure(2, Consistency::kAsync);
  const std::vector<float> move0 = {0.01f, 0.02f, -0.01f, 0.03f}, move1 = {-0.02f, 0.05f, 0.02f, 0};
  std::vector<float> expected = start;
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += move0[i];
  EXPECT_EQ(StateOf(call(**first, kPush, PushOf(2, 0, 0, 10, move0))), expected);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += move1[i];
  EXPECT_EQ(StateOf(call(**second, kPush, PushOf(2, 1, 1, 30, move1))), expected);
  const Status& ended = ps.Join();
  EXPECT_TRUE(ended.ok()) << ended.message();
}

// A roll back (kReset) raises the term of the server's embedding tables too:
// a worker's push of the old term that arrives after it is refused at once
// ("stale term"), not held for a sync step whose other slot never pushes
// (it used to wait for the client's deadline). Until the tables are
// declared again under the new term, the new term gets no rows at all.
TEST(ParameterServerTest, AResetRefusesTablePushesOfTheOldTermAtOnce) {
  testing::TempDir dir;
  ParameterServerThread ps("parameter-server-test-secret");
  auto coordinator = ps.Dial(), worker = ps.Dial();
  ASSERT_TRUE(coordinator.ok()) << coordinator.status().message();
  ASSERT_TRUE(worker.ok()) << worker.status().message();
  JobConfig job = SmallJob(dir.path());
  job.consistency = Consistency::kSync;
  auto call = [](net::RpcClient& c, uint16_t type, const std::string& payload) {
    return c.Call(type, payload, net::Deadline::InMs(20000));
  };
  msg::Configure c;
  c.term = 1;
  c.begin = 0;
  c.end = 1;
  c.job = job.ToJson();
  c.init_seed = 7;
  ASSERT_TRUE(call(**coordinator, kConfigure, c.ToJson().dump()).ok());
  // Two slots train: a sync step closes only once both pushed.
  ASSERT_TRUE(call(**coordinator, kStartEpoch, msg::StartEpoch{1, 0, {0, 1}}.ToJson().dump()).ok());
  model::TableSpec spec;
  spec.name = "users";
  spec.rows = 100;
  spec.dim = 4;
  spec.seed = 42;
  spec.optimizer.kind = model::SparseOptimizerKind::kAdam;
  spec.optimizer.learning_rate = 0.01;
  SparseTableClient tables({coordinator->get()}, 1);
  ASSERT_TRUE(tables.Declare(spec).ok());
  const auto before = tables.Pull("users", std::vector<uint64_t>{3});
  ASSERT_TRUE(before.ok()) << before.status().message();

  ASSERT_TRUE(call(**coordinator, kReset, msg::Reset{2}.ToJson().dump()).ok());
  // Slot 0's worker has not heard of the roll back: its push of term 1.
  net::WireWriter w;
  w.I64(1);
  w.U32(0);    // slot
  w.U32(0);    // epoch
  w.F64(1.0);  // weight
  w.U8(0);     // not the slot's last push
  w.U32(1);    // one table
  w.Str("users");
  EncodeIds(std::vector<uint64_t>{3}, &w);
  w.Floats(std::vector<float>{0.5f, -0.5f, 0.25f, 1.0f});
  auto pushed = call(**worker, kSparsePush, w.Take());
  ASSERT_FALSE(pushed.ok());
  EXPECT_NE(pushed.status().message().find("stale term"), std::string::npos)
      << pushed.status().message();
  auto pulled = tables.Pull("users", std::vector<uint64_t>{3});
  ASSERT_FALSE(pulled.ok());
  EXPECT_NE(pulled.status().message().find("stale term"), std::string::npos)
      << pulled.status().message();
  // The new term: no table until it is declared again (never the old rows).
  tables.set_term(2);
  pulled = tables.Pull("users", std::vector<uint64_t>{3});
  ASSERT_FALSE(pulled.ok());
  EXPECT_NE(pulled.status().message().find("no embedding table users"), std::string::npos)
      << pulled.status().message();
  ASSERT_TRUE(tables.Declare(spec).ok());
  pulled = tables.Pull("users", std::vector<uint64_t>{3});
  ASSERT_TRUE(pulled.ok()) << pulled.status().message();
  EXPECT_EQ(pulled->values, before->values);  // declared fresh again: its initial rows
  coordinator->reset();
  worker->reset();
  const Status& ended = ps.Join();
  EXPECT_TRUE(ended.ok()) << ended.message();
}

}  // namespace
}  // namespace tarn::runtime
