// Token substitution in an assembly file, as Hadoop's YARN services do it
// (ServiceApiConstants, ProviderUtils): ${SERVICE_NAME}, ${COMPONENT_INSTANCE_NAME}, the
// addresses of the instances a component depends on (${HTTPD-0_IP}), and every env var of the
// container (${JAVA_HOME}). A token that is not in the map is left as it is, as Hadoop leaves
// it. Pure functions: the runner gathers the facts (addresses, container ids), these put them in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "assembly/spec.h"

namespace tarn::assembly {

// Token name (without "${" and "}") -> value.
using Tokens = std::map<std::string, std::string>;

// `text` with every "${NAME}" whose NAME is in `tokens` replaced by its value, in one pass
// from left to right (a value is not substituted again); other "${...}" stay as written.
std::string Substitute(const std::string& text, const Tokens& tokens);

struct InstanceAddress {
  std::string host;  // the host name
  std::string ip;    // its address
};

// The facts about one instance and its cluster that the tokens name.
struct InstanceContext {
  std::string user;            // the user the service runs as (${USER}: lower case, '_' -> '-')
  std::string cluster_fs_uri;  // fs.defaultFS (${CLUSTER_FS_URI}); "" when there is none
  int64_t component_id = 0;    // the instance's number: worker-3 is 3 (${COMPONENT_ID})
  std::string container_id;    // ${CONTAINER_ID}
  // The instances of the components this one depends on, by instance name ("httpd-0"):
  // ${HTTPD-0_HOST} and ${HTTPD-0_IP}.
  std::map<std::string, InstanceAddress> dependency_instances;
  // More tokens of the cluster (DOMAIN, CLUSTER_ZK_QUORUM, SERVICE_HDFS_DIR ...), as given.
  Tokens extra;
};

// "<component>-<id>", Hadoop's component instance name.
std::string InstanceName(const std::string& component, int64_t component_id);

// The tokens of one instance of `component` (not yet its env vars: ResolveInstance adds them).
Tokens InstanceTokens(const Service& service, const Component& component,
                      const InstanceContext& context);

// What one instance runs, its tokens substituted.
struct ResolvedInstance {
  std::map<std::string, std::string> env;  // configuration.env, substituted
  std::string launch_command;              // substituted, env vars included as tokens
  std::vector<ConfigFile> files;           // properties substituted (TEMPLATE's content too)
  Tokens tokens;                           // everything above was substituted with
};

// Substitutes `tokens` into the component's env values; then every env var becomes a token
// too (as Hadoop's buildContainerEnvironment does) for the launch command and the config files.
// `extra_env` (tarn's own variables: TF_CONFIG ...) is added to the env before that, and loses
// to the component's own env.
ResolvedInstance ResolveInstance(const Component& component, const Tokens& tokens,
                                 const std::map<std::string, std::string>& extra_env = {});

}  // namespace tarn::assembly
