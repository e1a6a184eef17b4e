#include "cluster/yarn/capacity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster/yarn/rm_rest.h"

namespace tarn::cluster::yarn {
namespace {

// Two NodeManagers of 4096 MB and 8 vcores, as tests/yarn/cluster starts them.
ClusterResources MiniCluster(int64_t used_mb_on_first = 0) {
  ClusterResources c;
  c.nodes = {{"n1:1", 4096, 8, 4096 - used_mb_on_first, 8}, {"n2:1", 4096, 8, 4096, 8}};
  c.total_memory_mb = 8192;
  c.total_vcores = 16;
  c.free_memory_mb = 8192 - used_mb_on_first;
  c.free_vcores = 16;
  c.max_memory_mb = 4096;
  c.max_vcores = 8;
  return c;
}

// What tarn train asks by default: a 4g AM, a 4g parameter server, 2 + 1 workers of 2g.
std::vector<ContainerAsk> DefaultAsks(int64_t ps_mb = 4096) {
  return {
      {"ApplicationMaster", 1, 4096, 1, "shifu.am.memory", "shifu.am.vcores", ""},
      {"parameter server", 1, ps_mb, 2, "shifu.ps.memory", "shifu.ps.vcores", "shifu.ps.instances"},
      {"worker", 3, 2048, 2, "shifu.worker.memory", "shifu.worker.vcores",
       "shifu.worker.instances.backup"}};
}

TEST(Capacity, TarnsDefaultsDoNotFitTheMiniClusterAndTheMessageSaysWhatToLower) {
  const auto asks = DefaultAsks();
  EXPECT_FALSE(AsksFit(asks, MiniCluster(), false));
  Status s = CheckAsksFit(asks, MiniCluster());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  const std::string& m = s.message();
  EXPECT_NE(m.find("3 workers of 2048 MB, 2 vcores"), std::string::npos) << m;
  EXPECT_NE(m.find("5 containers, 14336 MB, 9 vcores in all"), std::string::npos) << m;
  EXPECT_NE(m.find("2 running nodes (2 of 4096 MB, 8 vcores)"), std::string::npos) << m;
  EXPECT_NE(m.find("at most 4096 MB, 8 vcores per container"), std::string::npos) << m;
  EXPECT_NE(m.find("shifu.worker.memory"), std::string::npos) << m;
  EXPECT_NE(m.find("shifu.ps.memory"), std::string::npos) << m;
  EXPECT_EQ(m.find("vcores, more than"), std::string::npos) << m;  // memory is what is short
}

TEST(Capacity, SmallContainersFitAndABusyClusterOnlyDelaysThem) {
  std::vector<ContainerAsk> asks = {{"ApplicationMaster", 1, 256, 1, "", "", ""},
                                    {"parameter server", 1, 256, 1, "", "", ""},
                                    {"worker", 3, 256, 1, "", "", ""}};
  EXPECT_TRUE(CheckAsksFit(asks, MiniCluster()).ok());
  EXPECT_TRUE(AsksFit(asks, MiniCluster(), true));
  // The same job on a cluster another application nearly fills: it fits, but not now.
  auto busy = MiniCluster(4096);
  busy.nodes[1].free_memory_mb = 512;
  EXPECT_TRUE(CheckAsksFit(asks, busy).ok());
  EXPECT_FALSE(AsksFit(asks, busy, true));
}

TEST(Capacity, FindsAPlacementFirstFitMisses) {
  // Two nodes of 12 GB: 5+4+3 GB on each fits, but placing the largest first, each on the
  // first node with room, leaves a 3 GB container with no room.
  ClusterResources c;
  c.nodes = {{"a:1", 12288, 8, 12288, 8}, {"b:1", 12288, 8, 12288, 8}};
  std::vector<ContainerAsk> asks = {
      {"a", 2, 5120, 1, "", "", ""}, {"b", 2, 4096, 1, "", "", ""}, {"c", 2, 3072, 1, "", "", ""}};
  EXPECT_TRUE(AsksFit(asks, c, false));
  EXPECT_TRUE(CheckAsksFit(asks, c).ok());
  asks[2].count = 3;  // one more: 27 GB on 24
  EXPECT_FALSE(CheckAsksFit(asks, c).ok());
}

TEST(Capacity, AContainerLargerThanTheClusterAllowsNamesItsSetting) {
  Status s = CheckAsksFit(DefaultAsks(8192), MiniCluster());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("each parameter server asks 8192 MB, more than the 4096 MB of the "
                             "largest container: lower shifu.ps.memory"),
            std::string::npos)
      << s.message();
  // A node smaller than the scheduler's limit bounds the container too.
  auto c = MiniCluster();
  c.max_memory_mb = 16384;
  EXPECT_FALSE(CheckAsksFit(DefaultAsks(8192), c).ok());
}

TEST(Capacity, TooFewVcoresNamesTheVcoreSettings) {
  std::vector<ContainerAsk> asks = {{"worker", 5, 256, 4, "shifu.worker.memory",
                                     "shifu.worker.vcores", "shifu.worker.instances"}};
  Status s = CheckAsksFit(asks, MiniCluster());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Lower shifu.worker.vcores"), std::string::npos) << s.message();
}

TEST(Capacity, NoRunningNodeIsReported) {
  ClusterResources c;
  Status s = CheckAsksFit(DefaultAsks(), c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no running NodeManager"), std::string::npos) << s.message();
}

TEST(Capacity, ParsesTheResourceManagersAnswers) {
  const std::string metrics =
      R"({"clusterMetrics":{"totalMB":8192,"availableMB":7936,"totalVirtualCores":16,)"
      R"("availableVirtualCores":15,"activeNodes":2}})";
  const std::string nodes =
      R"({"nodes":{"node":[{"id":"h:1","state":"RUNNING","usedMemoryMB":256,)"
      R"("availMemoryMB":3840,"usedVirtualCores":1,"availableVirtualCores":7},)"
      R"({"id":"h:2","state":"LOST","usedMemoryMB":0,"availMemoryMB":4096},)"
      R"({"id":"h:3","state":"RUNNING","usedMemoryMB":"0","availMemoryMB":"4096",)"
      R"("usedVirtualCores":0,"availableVirtualCores":8}]}})";
  const std::string scheduler =
      R"({"scheduler":{"schedulerInfo":{"type":"capacityScheduler","queueName":"root",)"
      R"("maximumAllocation":{"memory":8192,"vCores":16},"queues":{"queue":[)"
      R"({"queueName":"default","maximumAllocation":{"memory":4096,"vCores":8}},)"
      R"({"queueName":"other","maximumAllocation":{"memory":1024,"vCores":1}}]}}}})";
  auto c = ResourceManagerClient::ParseClusterResources(metrics, nodes, scheduler, "default");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->total_memory_mb, 8192);
  EXPECT_EQ(c->free_memory_mb, 7936);
  EXPECT_EQ(c->free_vcores, 15);
  ASSERT_EQ(c->nodes.size(), 2u);  // the LOST node cannot run anything
  EXPECT_EQ(c->nodes[0].memory_mb, 4096);
  EXPECT_EQ(c->nodes[0].free_memory_mb, 3840);
  EXPECT_EQ(c->nodes[1].vcores, 8);
  EXPECT_EQ(c->max_memory_mb, 4096);  // the queue's own limit
  EXPECT_EQ(c->max_vcores, 8);
  // Another queue's limit, and the root's when the queue is not listed.
  EXPECT_EQ(ResourceManagerClient::ParseClusterResources(metrics, nodes, scheduler, "other")
                ->max_memory_mb,
            1024);
  EXPECT_EQ(ResourceManagerClient::ParseClusterResources(metrics, nodes, scheduler, "nope")
                ->max_memory_mb,
            8192);
  // No scheduler answer, no nodes: nothing invented.
  auto bare = ResourceManagerClient::ParseClusterResources(metrics, R"({"nodes":null})", "", "q");
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(bare->nodes.empty());
  EXPECT_EQ(bare->max_memory_mb, 0);
  EXPECT_FALSE(ResourceManagerClient::ParseClusterResources("<html>", nodes, "", "q").ok());
}

}  // namespace
}  // namespace tarn::cluster::yarn
