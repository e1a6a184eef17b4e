// Where an ApplicationMaster finds its scheduler and token: the container's
// environment, the credentials file (a Hadoop-written fixture) and yarn-site.xml.
#include "cluster/yarn/am_client.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "cluster/yarn/credentials.h"
#include "cluster/yarn/yarn_backend.h"
#include "test_util.h"

namespace tarn::cluster::yarn {
namespace {

// Sets environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  void Set(const char* name, const std::string& value) {
    Save(name);
    ::setenv(name, value.c_str(), 1);
  }
  void Unset(const char* name) {
    Save(name);
    ::unsetenv(name);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  void Save(const char* name) {
    if (saved_.count(name)) return;
    const char* v = ::getenv(name);
    saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

std::string Fixture(const std::string& name) {
  return tarn::testing::SourceDir() + "/tests/unit/cluster/yarn/fixtures/" + name;
}

std::string YarnSite(const std::string& properties) {
  return "<?xml version=\"1.0\"?>\n<configuration>\n" + properties + "</configuration>\n";
}

TEST(AmClientEnvironment, SchedulerFromYarnSiteAndTokenFromTheCredentialsFile) {
  tarn::testing::TempDir conf;
  conf.Write("yarn-site.xml",
             YarnSite("<property><name>yarn.resourcemanager.scheduler.address</name>"
                      "<value>rm.example:18030</value></property>\n"));
  ScopedEnv env;
  env.Unset(kSchedulerAddressEnv);
  env.Set("HADOOP_CONF_DIR", conf.path());
  env.Set("HADOOP_TOKEN_FILE_LOCATION", Fixture("credentials-v0.bin"));
  auto o = AmClientOptionsFromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->scheduler_host, "rm.example");
  EXPECT_EQ(o->scheduler_port, 18030);
  EXPECT_EQ(o->amrm_token.kind, kAmRmTokenKind);
  auto attempt = DecodeTokenAttempt(o->amrm_token.identifier);
  ASSERT_TRUE(attempt.ok());
  EXPECT_EQ(attempt->ToString(), "appattempt_1700000000123_0007_000002");
  EXPECT_EQ(AmClient(*o).attempt(), *attempt);

  // The submitter's explicit address wins; a hostname alone gives YARN's port 8030.
  env.Set(kSchedulerAddressEnv, "10.0.0.5:8035");
  EXPECT_EQ(*ResolveSchedulerAddress(), "10.0.0.5:8035");
  env.Unset(kSchedulerAddressEnv);
  conf.Write("yarn-site.xml", YarnSite("<property><name>yarn.resourcemanager.hostname</name>"
                                       "<value>rm2.example</value></property>\n"));
  EXPECT_EQ(*ResolveSchedulerAddress(), "rm2.example:8030");
}

TEST(AmClientEnvironment, MissingOrWrongCredentialsAreClearErrors) {
  ScopedEnv env;
  env.Set(kSchedulerAddressEnv, "localhost:8030");
  env.Unset("HADOOP_TOKEN_FILE_LOCATION");
  auto none = AmClientOptionsFromEnvironment();
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("HADOOP_TOKEN_FILE_LOCATION"), std::string::npos);

  tarn::testing::TempDir dir;
  Credentials only_hdfs;
  only_hdfs.tokens.push_back({"hdfs", Token{"i", "p", "HDFS_DELEGATION_TOKEN", "nn:8020"}});
  env.Set("HADOOP_TOKEN_FILE_LOCATION",
          dir.Write("container_tokens", SerializeCredentials(only_hdfs)));
  auto no_amrm = AmClientOptionsFromEnvironment();
  ASSERT_FALSE(no_amrm.ok());
  EXPECT_NE(no_amrm.status().message().find("YARN_AM_RM_TOKEN"), std::string::npos);
  EXPECT_NE(no_amrm.status().message().find("container_tokens"), std::string::npos);

  env.Set("HADOOP_TOKEN_FILE_LOCATION", dir.Write("garbage", "not a token file"));
  EXPECT_FALSE(AmClientOptionsFromEnvironment().ok());
}

TEST(AmClientEnvironment, ContainersGetTheOtherTokensButNeverTheAmRmToken) {
  ScopedEnv env;
  env.Set(kSchedulerAddressEnv, "localhost:8030");
  env.Set("HADOOP_TOKEN_FILE_LOCATION", Fixture("credentials-v1.bin"));
  env.Set(kLocalResourcesEnv,
          "{\"tarn\": {\"url\": \"hdfs://nn:8020/s/tarn\", \"size\": 5, \"timestamp\": 6}}");
  tarn::testing::TempDir work;  // the AM container's working folder
  env.Set("PWD", work.path());
  env.Set("LD_LIBRARY_PATH", work.path());
  env.Set("HADOOP_CONF_DIR", "/etc/hadoop/conf");
  env.Set("HADOOP_USER_NAME", "alice");
  env.Set("TARN_CONTAINER_CA_FILE", "tarn-ca.pem");  // shipped with the job, in every folder
  auto o = YarnBackendOptionsFromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->env["TARN_CONTAINER_CA_FILE"], "tarn-ca.pem");
  // Staged libraries in the AM's folder: in each container's folder too.
  EXPECT_EQ(o->raw_env["LD_LIBRARY_PATH"], "{{PWD}}");
  EXPECT_EQ(o->raw_env.count("HADOOP_CONF_DIR"), 0u);  // the node's own configuration
  EXPECT_EQ(o->env["HADOOP_USER_NAME"], "alice");
  ASSERT_EQ(o->local_resources.count("tarn"), 1u);
  EXPECT_EQ(o->local_resources["tarn"].size, 5);
  auto forwarded = ParseCredentials(o->container_tokens, "container tokens");
  ASSERT_TRUE(forwarded.ok()) << forwarded.status().ToString();
  EXPECT_EQ(forwarded->tokens.size(), 2u);
  EXPECT_EQ(forwarded->FindByKind(kAmRmTokenKind), nullptr);
  EXPECT_NE(forwarded->FindByKind("HDFS_DELEGATION_TOKEN"), nullptr);
  EXPECT_EQ(forwarded->secrets.size(), 2u);

  env.Set(kLocalResourcesEnv, "{\"tarn\": {\"url\": \"x\"}}");
  auto bad = YarnBackendOptionsFromEnvironment();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(kLocalResourcesEnv), std::string::npos);

  // A container reads a secret the AM forwarded in its own credentials file.
  env.Set("HADOOP_TOKEN_FILE_LOCATION", work.Write("container_tokens", o->container_tokens));
  auto secret = ReadSecretFromEnvironment("tarn.job.secret");
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  EXPECT_EQ(*secret, "s3cr3t-value");
  auto missing = ReadSecretFromEnvironment("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tarn::cluster::yarn
