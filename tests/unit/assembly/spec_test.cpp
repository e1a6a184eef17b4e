#include "assembly/spec.h"

#include <gtest/gtest.h>

#include <string>

#include "common/files.h"
#include "test_util.h"

namespace tarn::assembly {
namespace {

std::string TestData(const std::string& name) {
  return testing::SourceDir() + "/tests/unit/assembly/testdata/" + name;
}

// A valid two-component file, each test breaking one field of it.
const char* kBase = R"({
  "name": "tf-job",
  "version": "1",
  "resource": {"cpus": 1, "memory": "512"},
  "configuration": {"env": {"MODE": "service", "SHARED": "yes"},
                    "properties": {"yarn.service.x": "1"}},
  "components": [
    {"name": "ps", "number_of_containers": 1, "launch_command": "python ps.py",
     "restart_policy": "NEVER",
     "configuration": {"env": {"MODE": "component"}}},
    {"name": "worker", "number_of_containers": 2, "launch_command": "python train.py",
     "dependencies": ["ps"], "resource": {"cpus": 2, "memory": 1024,
                                          "additional": {"yarn.io/gpu": {"value": 1}}},
     "readiness_check": {"type": "PORT", "properties": {"port": "2222"}}}
  ]
})";

std::string Error(const std::string& json) {
  auto s = ParseService(json, "f.json");
  EXPECT_FALSE(s.ok()) << json;
  return s.ok() ? "" : s.status().message();
}

// kBase with one substring replaced.
std::string With(const std::string& from, const std::string& to) {
  std::string s = kBase;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(AssemblySpec, ReadsEveryFieldAndFillsTheServiceDefaults) {
  auto s = ParseService(kBase, "f.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->name, "tf-job");
  ASSERT_EQ(s->components.size(), 2u);
  const Component& ps = s->components[0];
  const Component& worker = s->components[1];
  EXPECT_EQ(ps.restart_policy, RestartPolicy::kNever);
  EXPECT_EQ(worker.restart_policy, RestartPolicy::kAlways);  // Hadoop's default
  // The service's resource fills in where a component has none; memory as a string or number.
  ASSERT_TRUE(ps.resource && ps.resource->cpus && ps.resource->memory_mb);
  EXPECT_EQ(*ps.resource->cpus, 1);
  EXPECT_EQ(*ps.resource->memory_mb, 512);
  EXPECT_EQ(*worker.resource->memory_mb, 1024);
  EXPECT_EQ(worker.resource->additional.at("yarn.io/gpu").value, 1);
  EXPECT_EQ(*worker.number_of_containers, 2);
  ASSERT_TRUE(worker.readiness_check);
  EXPECT_EQ(worker.readiness_check->type, ReadinessType::kPort);
  // Service configuration merged into each component; the component's own value wins.
  EXPECT_EQ(ps.configuration.env.at("MODE"), "component");
  EXPECT_EQ(ps.configuration.env.at("SHARED"), "yes");
  EXPECT_EQ(worker.configuration.env.at("MODE"), "service");
  EXPECT_EQ(worker.configuration.properties.at("yarn.service.x"), "1");
  EXPECT_FALSE(ps.artifact);  // no artifact: a command run as it is
  EXPECT_TRUE(s->warnings.empty());
}

TEST(AssemblySpec, TheHadoopExamplesParse) {
  for (const char* name : {"hello-world.json", "hello-world-gpu-placement.json",
                           "httpd-service-no-dns.json", "hbase-app.json"}) {
    auto s = LoadService(TestData(name));
    ASSERT_TRUE(s.ok()) << name << ": " << s.status().ToString();
    EXPECT_TRUE(s->warnings.empty()) << name << ": " << s->warnings.front();
  }
  auto httpd = LoadService(TestData("httpd-service-no-dns.json"));
  ASSERT_TRUE(httpd.ok());
  EXPECT_EQ(httpd->components[1].name, "httpd-proxy");
  EXPECT_EQ(httpd->components[1].dependencies, std::vector<std::string>{"httpd"});
  EXPECT_EQ(httpd->components[0].readiness_check->properties.at("url"), "http://${THIS_HOST}:8080");
  EXPECT_EQ(httpd->components[0].configuration.files[0].type, ConfigFileType::kEnv);
  EXPECT_EQ(*httpd->lifetime_s, 3600);  // "3600", a string, as Jackson coerces it
  auto gpu = LoadService(TestData("hello-world-gpu-placement.json"));
  ASSERT_TRUE(gpu.ok());
  const auto& hello = gpu->components[0];
  EXPECT_EQ(hello.resource->additional.at("yarn.io/gpu").value, 4);
  ASSERT_TRUE(hello.placement_policy);
  EXPECT_EQ(hello.placement_policy->constraints[0].type, PlacementType::kAntiAffinity);
  EXPECT_EQ(hello.placement_policy->constraints[0].target_tags[0], "hello");
}

TEST(AssemblySpec, QuickStartSleeperWithoutVersionIsRefusedAsHadoopDoes) {
  auto s = LoadService(TestData("sleeper-no-version.json"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("sleeper-no-version.json: version: Version of service "
                                      "sleeper-service is either empty or not provided"),
            std::string::npos)
      << s.status().message();
}

TEST(AssemblySpec, UnknownKeysAreIgnoredButNamed) {
  auto s = ParseService(With(R"("name": "ps", )", R"("name": "ps", "cpu": 4, )"), "f.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->warnings.size(), 1u);
  EXPECT_EQ(s->warnings[0], "f.json: unknown key 'components[0].cpu' is ignored");
}

TEST(AssemblySpec, MissingVersionNamesTheField) {
  EXPECT_EQ(Error(With(R"("version": "1",)", "")),
            "f.json: version: Version of service tf-job is either empty or not provided");
}

TEST(AssemblySpec, UnknownArtifactTypeListsTheAcceptedValues) {
  const std::string m =
      Error(With(R"("name": "ps", )", R"("name": "ps", "artifact": {"id": "x", "type": "FOO"}, )"));
  EXPECT_EQ(m,
            "f.json: components[0].artifact.type: 'FOO' is not one of the values accepted for "
            "Enum class Artifact$TypeEnum: [DOCKER, TARBALL, SERVICE]");
}

TEST(AssemblySpec, UnknownRestartPolicyIsRefused) {
  EXPECT_NE(Error(With(R"("restart_policy": "NEVER")", R"("restart_policy": "SOMETIMES")"))
                .find("components[0].restart_policy: 'SOMETIMES' is not one of the values "
                      "accepted for Enum class Component$RestartPolicyEnum: [ALWAYS, ON_FAILURE, "
                      "NEVER]"),
            std::string::npos);
}

TEST(AssemblySpec, SwaggerSpellingOfRestartPolicyIsRead) {
  auto s = ParseService(With(R"("restart_policy": "NEVER")", R"("restartPolicy": "ON_FAILURE")"),
                        "f.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->components[0].restart_policy, RestartPolicy::kOnFailure);
}

TEST(AssemblySpec, CircularDependenciesNameTheCycle) {
  const std::string m = Error(With(R"("restart_policy": "NEVER")",
                                   R"("restart_policy": "NEVER", "dependencies": ["worker"])"));
  EXPECT_EQ(m,
            "f.json: components[0].dependencies: Invalid dependencies, a cycle may exist: [ps, "
            "worker] (cycle: ps -> worker -> ps)");
}

TEST(AssemblySpec, CycleBehindAnInnocentComponentNamesOnlyTheCycle) {
  auto m = Error(R"({"name": "s", "version": "1", "resource": {"cpus": 1, "memory": "1"},
    "components": [
      {"name": "a", "number_of_containers": 1, "launch_command": "x", "dependencies": ["b"]},
      {"name": "b", "number_of_containers": 1, "launch_command": "x", "dependencies": ["c"]},
      {"name": "c", "number_of_containers": 1, "launch_command": "x", "dependencies": ["b"]},
      {"name": "d", "number_of_containers": 1, "launch_command": "x"}]})");
  EXPECT_NE(m.find("components[1].dependencies"), std::string::npos) << m;
  EXPECT_NE(m.find("(cycle: b -> c -> b)"), std::string::npos) << m;
}

TEST(AssemblySpec, MissingDependencyNamesTheField) {
  EXPECT_EQ(Error(With(R"("dependencies": ["ps"])", R"("dependencies": ["ps", "chief"])")),
            "f.json: components[1].dependencies[1]: Dependency chief for component worker is "
            "invalid, does not exist as a component");
}

TEST(AssemblySpec, ComponentsStartInLayersKeepingFileOrder) {
  auto s = ParseService(R"({"name": "s", "version": "1", "resource": {"cpus": 1, "memory": "1"},
    "components": [
      {"name": "serving", "number_of_containers": 1, "launch_command": "x",
       "dependencies": ["worker"]},
      {"name": "worker", "number_of_containers": 1, "launch_command": "x", "dependencies": ["ps"]},
      {"name": "ps", "number_of_containers": 1, "launch_command": "x"},
      {"name": "logger", "number_of_containers": 1, "launch_command": "x"}]})",
                        "f.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::vector<std::string> order;
  for (const auto& c : s->components) order.push_back(c.name);
  EXPECT_EQ(order, (std::vector<std::string>{"ps", "logger", "worker", "serving"}));
  EXPECT_EQ(s->components[0].index, 2);  // paths in messages stay those of the file
}

TEST(AssemblySpec, NameRulesAreHadoops) {
  EXPECT_EQ(Error(With(R"("name": "tf-job")", R"("name": "tf_job")")),
            "f.json: name: Invalid format: tf_job, can not use '_', as DNS hostname does not allow "
            "'_'. Use '-' Instead.");
  EXPECT_EQ(Error(With(R"("name": "tf-job")", R"("name": "TF")")),
            "f.json: name: Invalid name TF does not match the pattern [a-z][a-z0-9-]*");
  EXPECT_EQ(Error(With(R"("name": "tf-job")", R"("name": "")")),
            "f.json: name: Service name is either empty or not provided");
  EXPECT_EQ(Error(With(R"("name": "worker")", R"("name": "ps")")),
            "f.json: components[1].name: Component name collision: ps");
  EXPECT_EQ(Error(With(R"("name": "worker")", R"("name": "tf-job")")),
            "f.json: components[1].name: Component name tf-job must not be same as service name "
            "tf-job");
  EXPECT_EQ(Error(With(R"("name": "worker")", R"("name": "Worker")")),
            "f.json: components[1].name: Invalid name Worker does not match the pattern "
            "[a-z][a-z0-9-]*");
}

TEST(AssemblySpec, NoComponents) {
  EXPECT_EQ(Error(R"({"name": "s", "version": "1", "components": []})"),
            "f.json: components: No component specified for s");
}

TEST(AssemblySpec, LaunchCommandRequiredUnlessDocker) {
  EXPECT_EQ(Error(With(R"("launch_command": "python ps.py",)", "")),
            "f.json: components[0].launch_command: launch_command is required when type is not "
            "DOCKER");
  auto docker = ParseService(
      With(R"("launch_command": "python ps.py",)", R"("artifact": {"id": "tf:2"},)"), "f.json");
  ASSERT_TRUE(docker.ok()) << docker.status().ToString();
  EXPECT_EQ(docker->components[0].artifact->type, ArtifactType::kDocker);  // the default type
}

TEST(AssemblySpec, ArtifactRules) {
  EXPECT_EQ(Error(With(R"("name": "ps", )", R"("name": "ps", "artifact": {"type": "TARBALL"}, )")),
            "f.json: components[0].artifact.id: Artifact id (like docker image name) is either "
            "empty or not provided for component ps (nor at the global level)");
  ValidateOptions options;
  options.path_exists = [](const std::string& p) { return p == "hdfs:///envs/py.tgz"; };
  auto missing = ParseService(
      With(R"("name": "ps", )",
           R"("name": "ps", "artifact": {"id": "hdfs:///envs/other.tgz", "type": "TARBALL"}, )"),
      "f.json", options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "f.json: components[0].artifact.id: For component ps with TARBALL artifact, path does "
            "not exist: hdfs:///envs/other.tgz");
  EXPECT_TRUE(ParseService(With(R"("name": "ps", )",
                                R"("name": "ps", "artifact": {"id": "hdfs:///envs/py.tgz", )"
                                R"("type": "TARBALL"}, )"),
                           "f.json", options)
                  .ok());
  auto service =
      ParseService(With(R"("name": "ps", )",
                        R"("name": "ps", "artifact": {"id": "saved", "type": "SERVICE"}, )"),
                   "f.json");
  ASSERT_FALSE(service.ok());
  EXPECT_EQ(service.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(service.status().message().find("components[0].artifact.type"), std::string::npos);
}

TEST(AssemblySpec, ResourceRules) {
  EXPECT_EQ(Error(With(R"("cpus": 2, "memory": 1024,)", R"("cpus": 0, "memory": 1024,)")),
            "f.json: components[1].resource.cpus: Unacceptable no of cpus specified, either zero "
            "or negative for component worker (or at the global level)");
  EXPECT_EQ(Error(With(R"("cpus": 2, "memory": 1024,)", R"("cpus": 2,)")),
            "f.json: components[1].resource.memory: Service resource or memory not provided for "
            "component worker (nor at the global level)");
  // A default from the service is named where it was written.
  EXPECT_EQ(Error(With(R"("resource": {"cpus": 1, "memory": "512"},)",
                       R"("resource": {"memory": "512"},)")),
            "f.json: resource.cpus: Service resource or cpus not provided for component ps (nor "
            "at the global level)");
  EXPECT_EQ(Error(With(R"("resource": {"cpus": 1, "memory": "512"},)", "")),
            "f.json: components[0].resource: Resource is not provided for component ps (nor at "
            "the global level)");
  EXPECT_EQ(Error(With(R"("cpus": 2, "memory": 1024,)", R"("profile": "big",)")),
            "f.json: components[1].resource.profile: Resource profile is not supported yet. "
            "Please specify cpus/memory.");
  EXPECT_EQ(Error(With(R"("cpus": 2, "memory": 1024,)", R"("cpus": 2, "memory": "2G",)")),
            "f.json: components[1].resource.memory: must be a whole number of MB (\"2048\"), got "
            "\"2G\"");
  EXPECT_EQ(Error(With(R"("cpus": 2, "memory": 1024,)", R"("cpus": "two", "memory": 1024,)")),
            "f.json: components[1].resource.cpus must be an integer, got a string \"two\"");
  EXPECT_EQ(Error(With(R"({"value": 1})", R"({"value": 1, "unit": "X"})")),
            "f.json: components[1].resource.additional.yarn.io/gpu.unit: 'X' is not a resource "
            "unit (p n u m k M G T P Ki Mi Gi Ti Pi, or empty)");
}

TEST(AssemblySpec, NumberOfContainers) {
  EXPECT_EQ(Error(With(R"("number_of_containers": 2)", R"("number_of_containers": -1)")),
            "f.json: components[1].number_of_containers: Invalid no of containers specified for "
            "component worker (nor at the global level): -1");
  EXPECT_EQ(Error(With(R"("number_of_containers": 2,)", "")),
            "f.json: components[1].number_of_containers: Invalid no of containers specified for "
            "component worker (nor at the global level): null");
  EXPECT_TRUE(
      ParseService(With(R"("number_of_containers": 2)", R"("number_of_containers": 0)"), "f.json")
          .ok());
}

TEST(AssemblySpec, ReadinessChecks) {
  EXPECT_EQ(Error(With(R"("properties": {"port": "2222"})", R"("properties": {})")),
            "f.json: components[1].readiness_check.properties.port: Error creating readiness "
            "check java.io.IOException: port not specified");
  EXPECT_EQ(Error(With(R"("properties": {"port": "2222"})", R"("properties": {"port": 70000})")),
            "f.json: components[1].readiness_check.properties.port: Error creating readiness "
            "check java.lang.IllegalArgumentException: port 70000 is out of range");
  EXPECT_EQ(Error(With(R"("type": "PORT", "properties": {"port": "2222"})", R"("type": "HTTP")")),
            "f.json: components[1].readiness_check.properties.url: Error creating readiness "
            "check java.io.IOException: url not specified");
  EXPECT_NE(Error(With(R"("type": "PORT")", R"("type": "TCP")"))
                .find("components[1].readiness_check.type: 'TCP' is not one of the values"),
            std::string::npos);
}

TEST(AssemblySpec, ConfigFiles) {
  auto files = [](const std::string& list) {
    return With(R"("configuration": {"env": {"MODE": "component"}})",
                R"("configuration": {"files": [)" + list + "]}");
  };
  EXPECT_EQ(Error(files(R"({"dest_file": "a"})")),
            "f.json: components[0].configuration.files[0].type: File type is empty");
  EXPECT_EQ(Error(files(R"({"type": "TEMPLATE", "dest_file": "a"})")),
            "f.json: components[0].configuration.files[0]: For TEMPLATE format, either src_file "
            "must be specified in ConfigFile, or the \"content\" key must be specified in the "
            "'properties' field of ConfigFile.");
  EXPECT_EQ(Error(files(R"({"type": "PROPERTIES"})")),
            "f.json: components[0].configuration.files[0].dest_file: Dest_file is empty.");
  EXPECT_EQ(Error(files(R"({"type": "PROPERTIES", "dest_file": "a"},
                          {"type": "JSON", "dest_file": "a"})")),
            "f.json: components[0].configuration.files[1].dest_file: Duplicated ConfigFile "
            "exists: a");
  EXPECT_EQ(Error(files(R"({"type": "PROPERTIES", "dest_file": "conf/a"})")),
            "f.json: components[0].configuration.files[0].dest_file: Non-absolute dest_file has "
            "more than one path element");
  EXPECT_EQ(Error(files(R"({"type": "PROPERTIES", "dest_file": "/etc/a"})")),
            "f.json: components[0].configuration.files[0].dest_file: For component ps with no "
            "artifact, dest_file must be a relative path: /etc/a");
  auto ok = ParseService(files(R"({"type": "TEMPLATE", "dest_file": "a.conf",
                                  "properties": {"content": "x=${COMPONENT_ID}"}})"),
                         "f.json");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->components[0].configuration.files[0].field_path,
            "components[0].configuration.files[0]");
}

TEST(AssemblySpec, ServiceFilesMergeIntoComponentsWhichWin) {
  auto s = ParseService(R"({"name": "s", "version": "1", "resource": {"cpus": 1, "memory": "1"},
    "configuration": {"files": [
      {"type": "PROPERTIES", "dest_file": "app.properties", "properties": {"a": "s", "b": "s"}},
      {"type": "JSON", "dest_file": "shared.json", "properties": {"k": "v"}}]},
    "components": [
      {"name": "c", "number_of_containers": 1, "launch_command": "x",
       "configuration": {"files": [
         {"type": "PROPERTIES", "dest_file": "app.properties", "properties": {"a": "c"}}]}}]})",
                        "f.json");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const auto& files = s->components[0].configuration.files;
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].properties.at("a"), "c");
  EXPECT_EQ(files[0].properties.at("b"), "s");
  EXPECT_EQ(files[1].dest_file, "shared.json");
  EXPECT_EQ(files[1].field_path, "configuration.files[1]");
}

TEST(AssemblySpec, PlacementTargetsOnlyItself) {
  const std::string placement =
      R"("placement_policy": {"constraints": [{"type": "ANTI_AFFINITY", "scope": "NODE",
                                               "target_tags": ["ps"]}]}, )";
  EXPECT_EQ(Error(With(R"("dependencies": ["ps"], )", R"("dependencies": ["ps"], )" + placement)),
            "f.json: components[1].placement_policy.constraints[0].target_tags: Invalid target "
            "tag ps specified in placement policy of component worker. For now, target tags "
            "support self reference only. Specifying anything other than its component name is "
            "not supported. Set target tag of component worker to worker.");
  EXPECT_EQ(Error(With(R"("dependencies": ["ps"], )",
                       R"("dependencies": ["ps"], "placement_policy": {"constraints": [)"
                       R"({"name": "spread", "scope": "NODE", "target_tags": ["worker"]}]}, )")),
            "f.json: components[1].placement_policy.constraints[0].type: Type not specified for "
            "constraint spread in placement policy of component worker.");
}

TEST(AssemblySpec, TensorFlowRolesAreChecked) {
  EXPECT_EQ(Error(With(R"("configuration": {"env": {"MODE": "component"}})",
                       R"("configuration": {"properties": {"tarn.tf.role": "boss"}})")),
            "f.json: components[0].configuration.properties.tarn.tf.role: 'boss' is not a "
            "TensorFlow job (chief, master, ps, worker, evaluator, or none)");
  EXPECT_NE(Error(With(R"("configuration": {"env": {"MODE": "component"}})",
                       R"("configuration": {"properties": {"tarn.tf.role": "worker"}})"))
                .find("component worker is TensorFlow job 'worker', and so is component ps"),
            std::string::npos);
}

TEST(AssemblySpec, BadJsonAndWrongTypesNameTheFile) {
  EXPECT_NE(Error("{\"name\": ").find("f.json: not valid JSON"), std::string::npos);
  EXPECT_EQ(Error(With(R"("dependencies": ["ps"])", R"("dependencies": "ps")")),
            "f.json: components[1].dependencies must be a list of strings, got a string \"ps\"");
  EXPECT_EQ(Error(R"({"name": "s", "version": "1", "components": {"a": 1}})"),
            "f.json: components: must be a list, got an object {\"a\":1}");
}

TEST(AssemblySpec, LoadServiceNamesAMissingFile) {
  auto s = LoadService("/nonexistent/assembly.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/nonexistent/assembly.json"), std::string::npos);
}

TEST(AssemblySpec, DescribeSaysWhatWillRun) {
  auto s = ParseService(kBase, "f.json");
  ASSERT_TRUE(s.ok());
  const auto j = DescribeService(*s);
  EXPECT_EQ(j["start_order"], data::Json::parse(R"(["ps", "worker"])"));
  EXPECT_EQ(j["components"][1]["instances"], data::Json::parse(R"(["worker-0", "worker-1"])"));
  EXPECT_EQ(j["components"][1]["tf_job"], "worker");
  EXPECT_EQ(j["components"][0]["restart_policy"], "NEVER");
  EXPECT_EQ(j["components"][1]["resource"]["memory_mb"], 1024);
  EXPECT_EQ(j["lifetime_s"], "unlimited");
}

}  // namespace
}  // namespace tarn::assembly
