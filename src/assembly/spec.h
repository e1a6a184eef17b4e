// The assembly file: Hadoop's YARN Service spec (the "Yarnfile" JSON of
// YarnServiceAPI.md, Hadoop 3.x), as tarn reads it. A file Hadoop accepts is
// accepted unchanged (unknown keys are ignored, as Hadoop's JSON reader does);
// a bad one is refused with the path of the field ("components[1].resource.cpus").
// The records mirror Hadoop's api/records with snake_case names.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/json_fields.h"

namespace tarn::assembly {

enum class ArtifactType { kDocker, kTarball, kService };   // Hadoop's default is DOCKER
enum class RestartPolicy { kAlways, kOnFailure, kNever };  // default ALWAYS
enum class ReadinessType { kDefault, kHttp, kPort };

struct Artifact {
  std::string id;  // the image, the tarball's URI, or a saved service's name
  ArtifactType type = ArtifactType::kDocker;
  std::string uri;
};

struct ResourceValue {
  int64_t value = 0;
  std::string unit;  // "" or one of p n u m k M G T P Ki Mi Gi Ti Pi
};

struct Resource {
  std::optional<int> cpus;
  std::optional<int64_t>
      memory_mb;  // a JSON string of MB in Hadoop ("2048"); a number is taken too
  std::map<std::string, ResourceValue> additional;  // "yarn.io/gpu": {value: 1}
  std::string profile;                              // refused, as Hadoop does
};

struct ReadinessCheck {
  ReadinessType type = ReadinessType::kDefault;
  std::map<std::string, std::string> properties;  // HTTP: url, timeout...; PORT: port, timeout
};

enum class ConfigFileType {
  kXml,
  kProperties,
  kJson,
  kYaml,
  kTemplate,
  kEnv,
  kHadoopXml,
  kStatic,
  kArchive
};

struct ConfigFile {
  ConfigFileType type = ConfigFileType::kProperties;
  std::string dest_file;
  std::string src_file;
  std::map<std::string, std::string> properties;
  // Where the file was declared ("components[1].configuration.files[0]", or
  // "configuration.files[0]" for one merged in from the service), for messages.
  std::string field_path;
};

struct Configuration {
  std::map<std::string, std::string>
      properties;                          // for the AM: yarn.service.*, docker.network, tarn.*
  std::map<std::string, std::string> env;  // exported into each container, after substitution
  std::vector<ConfigFile> files;
};

enum class PlacementType { kAffinity, kAntiAffinity, kAffinityWithCardinality };
enum class PlacementScope { kNode, kRack };

struct PlacementConstraint {
  std::string name;
  PlacementType type = PlacementType::kAntiAffinity;
  PlacementScope scope = PlacementScope::kNode;
  std::vector<std::string> target_tags;  // the component's own name only, as Hadoop allows
  std::map<std::string, std::vector<std::string>> node_attributes;
  std::vector<std::string> node_partitions;
  std::optional<int64_t> min_cardinality;
  std::optional<int64_t> max_cardinality;
};

struct PlacementPolicy {
  std::vector<PlacementConstraint> constraints;
};

struct KerberosPrincipal {
  std::string principal_name;
  std::string keytab;
};

struct Component {
  std::string name;
  std::optional<int64_t> number_of_containers;
  std::optional<Artifact> artifact;  // else the service's
  std::string launch_command;        // required unless the artifact is DOCKER
  std::optional<Resource> resource;  // else the service's
  std::vector<std::string> dependencies;
  std::optional<ReadinessCheck> readiness_check;
  RestartPolicy restart_policy = RestartPolicy::kAlways;
  bool run_privileged_container = false;
  Configuration configuration;  // the service's configuration merged in; the component's wins
  std::optional<PlacementPolicy> placement_policy;
  std::vector<std::string> quicklinks;  // names of the service's quicklinks
  int index = 0;                        // its place in the file: components[index]
};

struct Service {
  std::string name;
  std::string version;
  std::string description;
  std::optional<Artifact> artifact;   // default for components
  std::optional<Resource> resource;   // default for components
  std::optional<int64_t> lifetime_s;  // unset: unlimited
  std::string queue;
  std::vector<Component> components;  // in dependency order after ParseService
  Configuration configuration;
  std::map<std::string, std::string> quicklinks;  // name -> URL (with tokens)
  std::optional<KerberosPrincipal> kerberos_principal;
  std::string docker_client_config;
  // Keys neither Hadoop's records nor tarn know ("f.json: unknown key 'components[0].cpu'
  // is ignored"): ignored, as Hadoop ignores them, but said.
  std::vector<std::string> warnings;

  // The component of that name, or nullptr.
  const Component* FindComponent(const std::string& component_name) const;
};

const char* ArtifactTypeName(ArtifactType type);      // "DOCKER", "TARBALL", "SERVICE"
const char* RestartPolicyName(RestartPolicy policy);  // "ALWAYS", "ON_FAILURE", "NEVER"
const char* ReadinessTypeName(ReadinessType type);    // "DEFAULT", "HTTP", "PORT"
const char* ConfigFileTypeName(ConfigFileType type);  // "XML", ..., "HADOOP_XML", ...
const char* PlacementTypeName(PlacementType type);
const char* PlacementScopeName(PlacementScope scope);

struct ValidateOptions {
  // Whether a path exists: a TARBALL artifact's id and a config file's src_file are checked
  // with it, as Hadoop checks them on the cluster's file system. Unset: not checked here (the
  // runner finds out when it localizes them).
  std::function<bool(const std::string& path)> path_exists;
};

// Reads and validates an assembly file as Hadoop's ServiceApiUtil does; `file`
// names the file in messages. Errors name the field's path.
Result<Service> ParseService(const std::string& json_text, const std::string& file);
Result<Service> ParseService(const std::string& json_text, const std::string& file,
                             const ValidateOptions& options);
Result<Service> LoadService(const std::string& path);
Result<Service> LoadService(const std::string& path, const ValidateOptions& options);

// What tarn will run, as JSON: the components in start order with their instances, resources,
// artifacts, restart policies, readiness checks, dependencies and TensorFlow roles (what
// `tarn assembly validate --json` prints).
data::Json DescribeService(const Service& service);

}  // namespace tarn::assembly
