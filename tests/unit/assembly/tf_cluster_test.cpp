#include "assembly/tf_cluster.h"

#include <gtest/gtest.h>

namespace tarn::assembly {
namespace {

const TfCluster kPsWorkers = {{"ps", {"h1:2222"}}, {"worker", {"h2:2222", "h3:2222"}}};

data::Json Parse(const std::string& s) { return data::Json::parse(s); }

TEST(AssemblyTfCluster, TfConfigOfAWorker) {
  EXPECT_EQ(Parse(TfConfigJson(kPsWorkers, {"worker", 1})),
            Parse(R"({"cluster": {"ps": ["h1:2222"], "worker": ["h2:2222", "h3:2222"]},
                      "task": {"type": "worker", "index": 1}})"));
}

TEST(AssemblyTfCluster, ChiefIsTheChiefTaskOrWorkerZero) {
  EXPECT_TRUE(IsTfChief(kPsWorkers, {"worker", 0}));
  EXPECT_FALSE(IsTfChief(kPsWorkers, {"worker", 1}));
  EXPECT_FALSE(IsTfChief(kPsWorkers, {"ps", 0}));
  TfCluster with_chief = kPsWorkers;
  with_chief["chief"] = {"h0:2222"};
  EXPECT_TRUE(IsTfChief(with_chief, {"chief", 0}));
  EXPECT_FALSE(IsTfChief(with_chief, {"worker", 0}));
  TfCluster with_master = kPsWorkers;
  with_master["master"] = {"h0:2222"};
  EXPECT_TRUE(IsTfChief(with_master, {"master", 0}));
  EXPECT_FALSE(IsTfChief(with_master, {"worker", 0}));
}

TEST(AssemblyTfCluster, EvaluatorIsOutsideTheClusterExceptForEvaluators) {
  TfCluster c = kPsWorkers;
  c["evaluator"] = {"h9:2222"};
  const auto worker = Parse(TfConfigJson(c, {"worker", 0}));
  EXPECT_FALSE(worker["cluster"].contains("evaluator"));
  const auto evaluator = Parse(TfConfigJson(c, {"evaluator", 0}));
  EXPECT_EQ(evaluator["cluster"]["evaluator"], Parse(R"(["h9:2222"])"));
  EXPECT_EQ(evaluator["task"]["type"], "evaluator");
  // CLUSTER_SPEC keeps every job.
  EXPECT_TRUE(Parse(TfTaskEnv(c, {"worker", 0}).at("CLUSTER_SPEC")).contains("evaluator"));
}

TEST(AssemblyTfCluster, TaskEnv) {
  const auto env = TfTaskEnv(kPsWorkers, {"worker", 0});
  EXPECT_EQ(env.at("JOB_NAME"), "worker");
  EXPECT_EQ(env.at("TASK_INDEX"), "0");
  EXPECT_EQ(env.at("TASK_NUM"), "3");
  EXPECT_EQ(env.at("IS_CHIEF"), "true");
  EXPECT_EQ(env.at("PS_HOSTS"), "h1:2222");
  EXPECT_EQ(env.at("WORKER_HOSTS"), "h2:2222,h3:2222");
  EXPECT_EQ(Parse(env.at("CLUSTER_SPEC")),
            Parse(R"({"ps": ["h1:2222"], "worker": ["h2:2222", "h3:2222"]})"));
  EXPECT_EQ(Parse(env.at("TF_CONFIG"))["task"]["index"], 0);
  EXPECT_EQ(TfTaskEnv(kPsWorkers, {"ps", 0}).at("IS_CHIEF"), "false");
}

TEST(AssemblyTfCluster, LegacyArguments) {
  EXPECT_EQ(TfLegacyArgs(kPsWorkers, {"ps", 0}),
            "--ps_hosts=h1:2222 --worker_hosts=h2:2222,h3:2222 --job_name=ps --task_index=0");
  EXPECT_EQ(TfLegacyArgs({{"worker", {"a:1"}}}, {"worker", 0}),
            "--worker_hosts=a:1 --job_name=worker --task_index=0");
}

TEST(AssemblyTfCluster, JobsFromNamesAndTheRoleProperty) {
  Service s;
  Component ps, trainer, web, worker;
  ps.name = "ps";
  trainer.name = "trainer";
  trainer.configuration.properties[kTfRoleProperty] = "worker";
  web.name = "web";
  worker.name = "worker";
  worker.configuration.properties[kTfRoleProperty] = "none";  // named so, but no TF task
  s.components = {ps, trainer, web, worker};
  auto jobs = TfJobs(s, "f.json");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ(*jobs, (std::map<std::string, std::string>{{"ps", "ps"}, {"worker", "trainer"}}));
  EXPECT_EQ(*TfJobOf(web, "f.json"), "");
}

}  // namespace
}  // namespace tarn::assembly
