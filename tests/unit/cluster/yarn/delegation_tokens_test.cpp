#include "cluster/yarn/delegation_tokens.h"

#include <gtest/gtest.h>

namespace tarn::cluster::yarn {
namespace {

// A job's file systems, each once, by the service its token will carry.
TEST(DelegationTokens, OneFileSystemPerTokenService) {
  net::HadoopConf conf;
  conf.Set("fs.defaultFS", "hdfs://prod");
  conf.Set("dfs.nameservices", "prod,backup");
  conf.Set("dfs.ha.namenodes.prod", "nn1,nn2");
  conf.Set("hadoop.security.token.service.use_ip", "false");
  const auto found = DistinctHdfsFileSystems(
      conf, {"hdfs:///user/alice/.tarn/staging", "hdfs://prod/data/train", "/local/data",
             "file:///tmp/x", "", "hdfs://archive.example:8020/evals/set1",
             "webhdfs://nn1.example:9870/raw", "hdfs://backup", "hdfs://archive.example:8020/y"});
  ASSERT_EQ(found.size(), 3u);
  // hdfs:///, hdfs://prod/ and webhdfs:// (no RPC address: the default's) are one.
  EXPECT_EQ(found[0].service, "ha-hdfs:prod");
  EXPECT_EQ(found[0].uri, "hdfs:///user/alice/.tarn/staging");
  EXPECT_EQ(found[1].service, "archive.example:8020");
  EXPECT_EQ(found[1].uri, "hdfs://archive.example:8020/evals/set1");
  EXPECT_EQ(found[2].service, "ha-hdfs:backup");
  EXPECT_EQ(found[2].uri, "hdfs://backup");
}

TEST(DelegationTokens, ExtraServersFromTheSetting) {
  Settings settings;
  EXPECT_TRUE(ExtraHdfsServers(settings).empty());
  ASSERT_TRUE(settings.ApplyOverride("tarn.yarn.hdfs-servers= hdfs://a:8020 ,,hdfs://ns2").ok());
  EXPECT_EQ(ExtraHdfsServers(settings), (std::vector<std::string>{"hdfs://a:8020", "hdfs://ns2"}));
}

}  // namespace
}  // namespace tarn::cluster::yarn
