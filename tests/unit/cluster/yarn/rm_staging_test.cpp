#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../../test_util.h"
#include "cluster/yarn/rm_rest.h"
#include "cluster/yarn/staging.h"
#include "cluster/yarn/yarn_backend.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "net/hadoop_conf.h"
#include "net/http_client.h"  // for ConfigureClusterTls
#include "net/http_server.h"

namespace tarn::cluster::yarn {
namespace {

using Json = nlohmann::json;
using tarn::testing::TempDir;

std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return std::string(buf, static_cast<size_t>(std::max<ssize_t>(n, 0)));
}

TEST(Staging, RootFromTheSettingOrTheDefaultFileSystem) {
  net::HadoopConf conf;
  conf.Set("fs.defaultFS", "hdfs://nn:8020/");
  EXPECT_EQ(*StagingRoot(conf, "", "alice"), "hdfs://nn:8020/user/alice/.tarn/staging");
  EXPECT_EQ(*StagingRoot(conf, "hdfs://nn:8020/tmp/stage", "alice"), "hdfs://nn:8020/tmp/stage");
  net::HadoopConf local;
  auto r = StagingRoot(local, "", "alice");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("tarn.yarn.staging-dir"), std::string::npos);
}

TEST(Staging, TheBinaryTravelsWithItsLibrariesButNotGlibc) {
  // This test binary links libcurl dynamically, as tarn does.
  auto files = TarnBinaryFiles(SelfExe());
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  ASSERT_FALSE(files->empty());
  EXPECT_EQ((*files)[0].first, "tarn");
  EXPECT_EQ((*files)[0].second, SelfExe());
  std::map<std::string, std::string> by_name(files->begin(), files->end());
  EXPECT_TRUE(by_name.count("libcurl.so.4")) << "libcurl not staged";
  for (const auto& [name, path] : *files) {
    EXPECT_FALSE(StartsWith(name, "libc.so")) << name;
    EXPECT_FALSE(StartsWith(name, "libm.so")) << name;
    EXPECT_FALSE(StartsWith(name, "ld-linux")) << name;
    EXPECT_EQ(name.find('/'), std::string::npos) << name;
    EXPECT_EQ(path[0], '/') << path;
  }
  EXPECT_EQ(StagedLibraryEnvironment().at("LD_LIBRARY_PATH"), "{{PWD}}");
  EXPECT_EQ(TarnBinaryFiles("/no/such/tarn").status().code(), StatusCode::kNotFound);
}

TEST(Staging, StagesFilesWithSizeAndTimestampAndReusesTheCache) {
  TempDir dir;
  const std::string a = dir.Write("src/a.bin", "aaaa");
  const std::string b = dir.Write("src/b.txt", "bb");
  const std::string stage = dir.File("stage/app1");
  const std::string cache = dir.File("stage/cache");
  auto staged = StageFiles({{"tarn", a}, {"job.txt", b}}, stage, cache);
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  ASSERT_EQ(staged->size(), 2u);
  const LocalResource& r = staged->at("tarn");
  EXPECT_TRUE(StartsWith(r.url, "file://" + cache + "/tarn.4.")) << r.url;
  EXPECT_EQ(r.size, 4);
  auto fs = data::FileSystemFor(cache);
  auto st = (*fs)->Stat(data::StripFileScheme(r.url));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(r.timestamp, st->modification_time_ms);  // what the NodeManager checks
  EXPECT_EQ(r.type, LocalResourceType::kFile);

  // The same file again: the cached copy is reused, not written again (its old time stays).
  const std::string cached = data::StripFileScheme(r.url);
  std::filesystem::last_write_time(
      cached, std::filesystem::last_write_time(cached) - std::chrono::hours(24));
  auto aged = (*fs)->Stat(cached);
  ASSERT_TRUE(aged.ok());
  ASSERT_NE(aged->modification_time_ms, r.timestamp);
  auto again = StageFiles({{"tarn", a}}, dir.File("stage/app2"), cache);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->at("tarn").url, r.url);
  EXPECT_EQ(again->at("tarn").timestamp, aged->modification_time_ms);

  // Without a cache the file lands in the folder under its own name.
  auto plain = StageFiles({{"job.txt", b}}, dir.File("stage/app3"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->at("job.txt").url, "file://" + dir.File("stage/app3/job.txt"));
  EXPECT_EQ(*(*fs)->ReadAll(dir.File("stage/app3/job.txt")), "bb");

  EXPECT_EQ(StageFiles({{"x/y", b}}, stage).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StageFiles({{"j", b}, {"j", a}}, stage).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(StageFiles({{"gone", dir.File("nope")}}, stage).ok());
  ASSERT_TRUE(RemoveStaging(dir.File("stage/app3")).ok());
  EXPECT_FALSE(*(*fs)->Exists(dir.File("stage/app3")));
}

// StageAndSubmit against a fake ResourceManager, staging into a local folder.
TEST(Staging, StageAndSubmitSendsTheStagedFilesAndTheAmEnvironment) {
  std::mutex mu;
  std::vector<net::HttpRequest> requests;
  auto server = net::HttpServer::Start(
      net::HttpServer::Options{}, [&](const net::HttpRequest& req, net::HttpResponse* resp) {
        std::lock_guard<std::mutex> l(mu);
        requests.push_back(req);
        if (req.path == "/ws/v1/cluster/apps/new-application") {
          resp->body = R"({"application-id":"application_1700000000000_0042",)"
                       R"("maximum-resource-capability":{"memory":4096,"vCores":8}})";
        } else if (req.path == "/ws/v1/cluster/apps") {
          resp->status = 202;
          resp->body = "";
        } else {
          resp->status = 404;
        }
      });
  ASSERT_TRUE(server.ok());
  const std::string rm_address = "127.0.0.1:" + std::to_string((*server)->port());

  TempDir dir;
  dir.Write("conf/core-site.xml", "<configuration/>");
  dir.Write("conf/yarn-site.xml", "<configuration/>");
  const std::string job = dir.Write("job.json", "{}");
  auto conf = net::HadoopConf::LoadDir(dir.File("conf"));
  ASSERT_TRUE(conf.ok());
  conf->Set("yarn.resourcemanager.webapp.address", rm_address);
  conf->Set("yarn.resourcemanager.scheduler.address", "rm.example:8030");
  ResourceManagerClient rm = ResourceManagerClient::FromConf(*conf, "alice");

  AmLaunch launch;
  launch.name = "train";
  launch.memory_mb = 1024;
  launch.argv = {"tarn", "train", "--model set"};
  launch.files = {{"job.json", job}};
  launch.environment["TARN_JOB"] = "x y";
  launch.secrets["tarn.job.secret"] = "k";
  launch.staging_root = dir.File("staging");
  launch.binary = SelfExe();
  auto app = StageAndSubmit(rm, *conf, launch);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ(app->id, "application_1700000000000_0042");
  EXPECT_EQ(app->staging_dir, dir.File("staging") + "/application_1700000000000_0042");
  for (const char* name : {"tarn", "libcurl.so.4", "job.json", "core-site.xml", "yarn-site.xml"}) {
    EXPECT_TRUE(app->local_resources.count(name)) << name;
  }
  EXPECT_FALSE(app->local_resources.count("hdfs-site.xml"));  // not in the conf folder
  EXPECT_TRUE(
      StartsWith(app->local_resources.at("tarn").url, "file://" + dir.File("staging/cache/tarn.")));
  EXPECT_EQ(app->local_resources.at("job.json").url, "file://" + app->staging_dir + "/job.json");

  Json body;
  {
    std::lock_guard<std::mutex> l(mu);
    ASSERT_EQ(requests.size(), 2u);
    body = Json::parse(requests[1].body);
  }
  EXPECT_EQ(body["application-name"], "train");
  EXPECT_EQ(body["resource"]["memory"], 1024);
  EXPECT_EQ(body["max-app-attempts"], 2);
  EXPECT_EQ(body["keep-containers-across-application-attempts"], true);
  const Json& spec = body["am-container-spec"];
  EXPECT_EQ(spec["commands"]["command"], ContainerCommand({"./tarn", "train", "--model set"}));
  EXPECT_EQ(spec["local-resources"]["entry"].size(), app->local_resources.size());
  std::map<std::string, std::string> env;
  for (const auto& e : spec["environment"]["entry"]) env[e["key"]] = e["value"];
  EXPECT_EQ(env["LD_LIBRARY_PATH"], "{{PWD}}");
  EXPECT_EQ(env["HADOOP_CONF_DIR"], "{{PWD}}");
  EXPECT_EQ(env["HADOOP_USER_NAME"], "alice");
  EXPECT_EQ(env["TARN_YARN_SCHEDULER_ADDRESS"], "rm.example:8030");
  EXPECT_EQ(env["TARN_YARN_STAGING_DIR"], app->staging_dir);
  EXPECT_EQ(env["TARN_JOB"], "x y");
  // The containers the AM starts get the same files: the AM reads them from its environment.
  auto resources = ParseLocalResourcesJson(LocalResourcesToJson(app->local_resources));
  ASSERT_TRUE(resources.ok());
  EXPECT_EQ(env[kLocalResourcesEnv], EnvironmentValue(LocalResourcesToJson(app->local_resources)));
  EXPECT_EQ(spec["credentials"]["secrets"]["entry"][0]["key"], "tarn.job.secret");

  // Too big for the cluster: refused before anything is staged for it.
  launch.memory_mb = 100000;
  auto big = StageAndSubmit(rm, *conf, launch);
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.status().message().find("4096 MB"), std::string::npos);

  // No CA file configured: none shipped. With tarn.tls.ca-file, it travels with the job and
  // the containers are told where it is.
  EXPECT_FALSE(app->local_resources.count(kShippedCaFileName));
  EXPECT_EQ(env.count(net::kContainerCaFileEnv), 0u);
  const std::string ca = dir.Write("cluster-ca.pem", "-----BEGIN CERTIFICATE-----\n");
  Settings settings;
  ASSERT_TRUE(settings.ApplyOverride("tarn.tls.ca-file=" + ca).ok());
  ASSERT_TRUE(net::ConfigureClusterTls(settings).ok());
  launch.memory_mb = 1024;
  auto with_ca = StageAndSubmit(rm, *conf, launch);
  ASSERT_TRUE(net::ConfigureClusterTls(Settings()).ok());
  ASSERT_TRUE(with_ca.ok()) << with_ca.status().ToString();
  ASSERT_TRUE(with_ca->local_resources.count(kShippedCaFileName));
  EXPECT_EQ(with_ca->local_resources.at(kShippedCaFileName).url,
            "file://" + with_ca->staging_dir + "/" + kShippedCaFileName);
  {
    std::lock_guard<std::mutex> l(mu);
    body = Json::parse(requests.back().body);
  }
  env.clear();
  for (const auto& e : body["am-container-spec"]["environment"]["entry"]) {
    env[e["key"]] = e["value"];
  }
  EXPECT_EQ(env[net::kContainerCaFileEnv], kShippedCaFileName);
}

}  // namespace
}  // namespace tarn::cluster::yarn
