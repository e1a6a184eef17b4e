// A parameter server holding a graph's batch-norm state in its dense slice,
// over real TCP connections: sync mode sets the state to the mean of the
// step's pushes (each a worker's moved state), async adds each push's move.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/job.h"
#include "runtime/messages.h"
#include "runtime/node_harness.h"
#include "runtime/protocol.h"
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

}  // namespace
}  // namespace tarn::runtime
