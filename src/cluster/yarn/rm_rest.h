// A client of the ResourceManager's REST API (hadoop-yarn-site ResourceManagerRest.md,
// "Cluster Writeable APIs"), for submitting tarn's ApplicationMaster and following it:
//
//   POST /ws/v1/cluster/apps/new-application      -> an application id
//   POST /ws/v1/cluster/apps                       <- the submission (AM container spec)
//   GET  /ws/v1/cluster/apps/{id}                  -> state, final status, diagnostics, ...
//   GET  /ws/v1/cluster/apps/{id}/appattempts      -> attempts: AM container, node, logs link
//   PUT  /ws/v1/cluster/apps/{id}/state            <- {"state":"KILLED"}
//   GET  /ws/v1/cluster/apps?applicationTypes=...  -> applications
//   GET  /ws/v1/cluster/apps/{id}/appattempts/{attempt}/containers -> its running containers
// and of the NodeManager's, for a container's logs while the NodeManager keeps them:
//   GET  /ws/v1/node/containers/{cid}/logs         -> the log files
//   GET  /ws/v1/node/containerlogs/{cid}/{file}    -> one file
//
// Every request names the user with ?user.name= (tarn.hdfs.user / $HADOOP_USER_NAME / the
// login user): a ResourceManager with Hadoop's simple authentication filter runs the
// application as that user; without one, as the web user (dr.who). On a secured cluster
// (hadoop.security.authentication=kerberos) every request, to the RM and to NodeManagers,
// authenticates by SPNEGO instead (net/kerberos.h) and names no user. With several RMs (HA) the
// client tries them in order and follows a standby's redirect. JSON is read tolerantly (a
// one-element list may come as an object, numbers as strings).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cluster/yarn/protobuf_records.h"  // LocalResource
#include "common/status.h"
#include "net/hadoop_conf.h"
#include "net/http_client.h"

namespace tarn::cluster::yarn {

struct NewApplication {
  std::string id;  // application_<cluster timestamp>_<n>
  int64_t max_memory_mb = 0;
  int64_t max_vcores = 0;
};

struct AppSubmission {
  std::string application_id;  // from NewApplication
  std::string name = "tarn";
  std::string queue = "default";
  std::string type = "TARN";  // applicationType: `tarn yarn` lists these
  std::vector<std::string> tags;
  int priority = 0;
  int max_attempts = 2;
  bool keep_containers = true;  // keep-containers-across-application-attempts
  // Attempt failures older than this do not count toward max_attempts; 0: all count.
  int64_t attempt_failures_validity_interval_ms = 0;
  int64_t memory_mb = 512;  // the AM container
  int vcores = 1;
  // The AM's command line, as the NodeManager's launch script runs it (see ContainerCommand in
  // yarn_backend.h: quoted, with stdout and stderr to <LOG_DIR>).
  std::string command;
  std::map<std::string, LocalResource> local_resources;  // name in the working folder -> source
  // The AM's environment, values as the AM must see them (escaped for the launch script here).
  std::map<std::string, std::string> environment;
  // Environment values sent as they are, for the NodeManager and the launch script to expand:
  // {{PWD}} (the container's working folder), <LOG_DIR>, $VAR. Override `environment`.
  std::map<std::string, std::string> raw_environment;
  // Secrets put in the AM container's credentials file (HADOOP_TOKEN_FILE_LOCATION) under these
  // aliases, never in its environment or command line: the job secret, say.
  std::map<std::string, std::string> secrets;
  // Tokens for the AM container's credentials file (alias -> Token URL string): the HDFS
  // delegation tokens of a secured cluster, aliased by their service as Java's clients do.
  std::vector<std::pair<std::string, std::string>> tokens;
};

struct AppReport {
  std::string id;
  std::string name;
  std::string user;
  std::string queue;
  std::string type;
  // NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED
  std::string state;
  // UNDEFINED while running; then SUCCEEDED, FAILED or KILLED
  std::string final_status;
  std::string diagnostics;
  std::string tracking_url;
  std::string am_container_logs;  // the NodeManager's log page of the current AM container
  std::string am_host_http_address;
  double progress = 0;  // percent
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  int64_t running_containers = 0;
  // What the NodeManagers report of uploading its logs to HDFS (logAggregationStatus):
  // DISABLED, NOT_START, RUNNING, RUNNING_WITH_FAILURE, SUCCEEDED, FAILED, TIME_OUT; "" from an
  // RM that does not say.
  std::string log_aggregation_status;
  // FINISHED, FAILED or KILLED: the application will not change any more.
  bool Done() const;
};

struct AppAttempt {
  int64_t id = 0;                 // 1, 2, ...
  std::string container_id;       // the AM container of this attempt
  std::string node_http_address;  // its NodeManager's web address
  std::string node_id;
  std::string logs_link;
  std::string attempt_id;  // appattempt_<cluster>_<n>_<attempt, 6 digits>
  int64_t started_ms = 0;
};

// A container of an attempt, while the RM knows it (running).
struct ContainerReport {
  std::string container_id;
  std::string node_id;            // host:port
  std::string node_http_address;  // host:port of its NodeManager's web API
  std::string state;
};

// What the cluster can run: GET /ws/v1/cluster/metrics (totals and what is free), /nodes (each
// RUNNING NodeManager) and /scheduler (the largest container the queue allows).
struct NodeResources {
  std::string id;                               // host:port
  int64_t memory_mb = 0, vcores = 0;            // the NodeManager's whole capacity
  int64_t free_memory_mb = 0, free_vcores = 0;  // not used by any container now
};

struct ClusterResources {
  int64_t total_memory_mb = 0, total_vcores = 0;
  int64_t free_memory_mb = 0, free_vcores = 0;
  // The largest container the scheduler gives the queue (yarn.scheduler.maximum-allocation-*,
  // or the queue's own maximum-allocation); 0 when the scheduler does not report it.
  int64_t max_memory_mb = 0, max_vcores = 0;
  std::vector<NodeResources> nodes;  // RUNNING NodeManagers
};

struct ContainerLogFile {
  std::string name;  // stdout, stderr, ...
  int64_t size = 0;
};

struct ResourceManagerOptions {
  std::vector<std::string> web_addresses;  // "host:port", tried in order
  std::string user;                        // user.name; empty: none
  bool kerberos = false;                   // SPNEGO instead of user.name
  bool https = false;                      // yarn.http.policy HTTPS_ONLY: RM and NM over https
  int connect_timeout_ms = 10'000;
  int timeout_ms = 60'000;
};

class ResourceManagerClient {
 public:
  explicit ResourceManagerClient(ResourceManagerOptions options);
  // The RM web addresses from the configuration; user from `user` (see HadoopUserName);
  // SPNEGO when the configuration says kerberos.
  static ResourceManagerClient FromConf(const net::HadoopConf& conf, const std::string& user,
                                        int timeout_ms = 60'000);

  Result<NewApplication> CreateApplication();
  Status Submit(const AppSubmission& submission);
  Result<AppReport> GetApplication(const std::string& id);
  Result<std::vector<AppAttempt>> GetAttempts(const std::string& id);
  // GET /ws/v1/cluster/apps/{id}/appattempts/{attempt}/containers: the attempt's containers
  // the RM still knows (those running).
  Result<std::vector<ContainerReport>> GetAttemptContainers(const std::string& id,
                                                            const AppAttempt& attempt);
  // Asks the RM to kill the application and waits (up to wait_ms) until it is done; returns
  // its report then. Killing a finished application changes nothing and is not an error.
  Result<AppReport> Kill(const std::string& id, int wait_ms = 30'000);
  // The cluster's resources as the queue sees them (see ClusterResources).
  Result<ClusterResources> GetClusterResources(const std::string& queue);
  // Applications of one type (empty: all), newest first.
  Result<std::vector<AppReport>> ListApplications(const std::string& type = "");

  // The log files of a container on a NodeManager (while it keeps them: log aggregation off,
  // or the container still running).
  Result<std::vector<ContainerLogFile>> ContainerLogFiles(const std::string& node_http_address,
                                                          const std::string& container_id);
  Result<std::string> ContainerLog(const std::string& node_http_address,
                                   const std::string& container_id, const std::string& file);

  // Polls the application every poll_ms until it is done (or timeout_ms passes, when > 0),
  // calling on_change with each report whose state, final status or diagnostics differ from
  // the previous one. Returns the final report.
  Result<AppReport> Follow(const std::string& id, int poll_ms, int64_t timeout_ms,
                           const std::function<void(const AppReport&)>& on_change = nullptr);

  const ResourceManagerOptions& options() const { return options_; }

  // The submission's JSON body (public for tests).
  static std::string SubmissionJson(const AppSubmission& submission);
  static Result<AppReport> ParseAppReport(const std::string& json);
  // The answers of /ws/v1/cluster/metrics, /nodes and /scheduler (public for tests).
  static Result<ClusterResources> ParseClusterResources(const std::string& metrics_json,
                                                        const std::string& nodes_json,
                                                        const std::string& scheduler_json,
                                                        const std::string& queue);
  // An application id's form: application_<digits>_<digits>.
  static bool IsApplicationId(const std::string& id);

  // One request to the active RM (user.name or SPNEGO, HA failover, redirects followed): its body
  // when the status is one of ok_statuses, else an error naming the request. Also the
  // transport of other RM APIs (services_rest.h).
  Result<std::string> Call(const std::string& method, const std::string& path,
                           const std::string& query, const std::string& body,
                           std::vector<int> ok_statuses, int* status_out = nullptr);

 private:
  // ?user.name=<user> with simple authentication; "" with SPNEGO.
  std::string UserQuery() const;
  net::ClientRequest Request(const std::string& address, const std::string& path_and_query) const;

  ResourceManagerOptions options_;
  size_t active_ = 0;
};

// A NodeManager's containerlogs answer without Hadoop 3's header and footer around the file.
std::string UnwrapContainerLog(const std::string& body);

}  // namespace tarn::cluster::yarn
