#include "assembly/substitute.h"

#include <gtest/gtest.h>

namespace tarn::assembly {
namespace {

TEST(AssemblySubstitute, ReplacesKnownTokensAndLeavesOthers) {
  const Tokens t = {{"SERVICE_NAME", "web"}, {"HTTPD-0_IP", "10.0.0.5"}};
  EXPECT_EQ(Substitute("run ${SERVICE_NAME} at ${HTTPD-0_IP}:80", t), "run web at 10.0.0.5:80");
  // Unknown tokens stay as written (Hadoop leaves them); so do unterminated ones.
  EXPECT_EQ(Substitute("${NOPE} $SERVICE_NAME ${SERVICE_NAME", t),
            "${NOPE} $SERVICE_NAME ${SERVICE_NAME");
  EXPECT_EQ(Substitute("${${SERVICE_NAME}}", t), "${web}");
  // One pass: a value that looks like a token is not substituted again.
  EXPECT_EQ(Substitute("${A}", {{"A", "${B}"}, {"B", "no"}}), "${B}");
  EXPECT_EQ(Substitute("", t), "");
}

Service TwoComponents() {
  Service s;
  s.name = "Tf-Job";
  Component ps;
  ps.name = "ps";
  Component worker;
  worker.name = "worker";
  worker.dependencies = {"ps"};
  worker.launch_command =
      "python train.py --name ${COMPONENT_INSTANCE_NAME} --ps ${PS-0_HOST}:${PORT} --out "
      "${OUT}/${COMPONENT_ID} --keep ${UNKNOWN}";
  worker.configuration.env = {{"OUT", "${CLUSTER_FS_URI}/user/${USER}/${SERVICE_NAME.lc}"},
                              {"PORT", "2222"}};
  ConfigFile f;
  f.type = ConfigFileType::kTemplate;
  f.dest_file = "worker.conf";
  f.properties = {{"content", "id=${COMPONENT_ID} container=${CONTAINER_ID} port=${PORT}"}};
  worker.configuration.files = {f};
  s.components = {ps, worker};
  return s;
}

TEST(AssemblySubstitute, InstanceTokensAreHadoops) {
  const Service s = TwoComponents();
  InstanceContext ctx;
  ctx.user = "Data_Sci";
  ctx.cluster_fs_uri = "hdfs://nn:8020";
  ctx.component_id = 3;
  ctx.container_id = "container_1_0001_01_000004";
  ctx.dependency_instances = {{"ps-0", {"node1.example", "10.1.1.1"}}};
  const Tokens t = InstanceTokens(s, s.components[1], ctx);
  EXPECT_EQ(t.at("SERVICE_NAME"), "Tf-Job");
  EXPECT_EQ(t.at("SERVICE_NAME.lc"), "tf-job");
  EXPECT_EQ(t.at("USER"), "data-sci");  // the registry's user name
  EXPECT_EQ(t.at("COMPONENT_NAME"), "worker");
  EXPECT_EQ(t.at("COMPONENT_NAME.lc"), "worker");
  EXPECT_EQ(t.at("COMPONENT_INSTANCE_NAME"), "worker-3");
  EXPECT_EQ(t.at("COMPONENT_ID"), "3");
  EXPECT_EQ(t.at("CONTAINER_ID"), "container_1_0001_01_000004");
  EXPECT_EQ(t.at("CLUSTER_FS_URI"), "hdfs://nn:8020");
  EXPECT_EQ(t.at("PS-0_HOST"), "node1.example");
  EXPECT_EQ(t.at("PS-0_IP"), "10.1.1.1");
}

TEST(AssemblySubstitute, EnvLaunchCommandAndFilesOfAnInstance) {
  const Service s = TwoComponents();
  InstanceContext ctx;
  ctx.user = "alice";
  ctx.cluster_fs_uri = "hdfs://nn:8020";
  ctx.component_id = 1;
  ctx.container_id = "c1";
  ctx.dependency_instances = {{"ps-0", {"node1", "10.1.1.1"}}};
  const auto r = ResolveInstance(s.components[1], InstanceTokens(s, s.components[1], ctx),
                                 {{"TF_CONFIG", "{}"}, {"PORT", "9999"}});
  EXPECT_EQ(r.env.at("OUT"), "hdfs://nn:8020/user/alice/tf-job");
  EXPECT_EQ(r.env.at("TF_CONFIG"), "{}");
  EXPECT_EQ(r.env.at("PORT"), "2222");  // the component's own env wins over tarn's
  // Every env var is a token of the launch command and the config files.
  EXPECT_EQ(r.launch_command,
            "python train.py --name worker-1 --ps node1:2222 --out "
            "hdfs://nn:8020/user/alice/tf-job/1 --keep ${UNKNOWN}");
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].properties.at("content"), "id=1 container=c1 port=2222");
  EXPECT_EQ(r.tokens.at("TF_CONFIG"), "{}");
}

}  // namespace
}  // namespace tarn::assembly
