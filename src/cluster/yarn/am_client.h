// ApplicationMasterProtocol client: the AM's calls to the ResourceManager's
// scheduler address (registerApplicationMaster, allocate,
// finishApplicationMaster), authenticated with the AMRMToken by DIGEST-MD5.
// The RM enforces token authentication for these calls even on clusters with
// security off.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cluster/yarn/ipc.h"
#include "cluster/yarn/protobuf_records.h"
#include "common/status.h"

namespace tarn::cluster::yarn {

// The environment variable a submitter may set to the RM scheduler address
// (host:port); otherwise it comes from yarn-site.xml.
inline constexpr const char* kSchedulerAddressEnv = "TARN_YARN_SCHEDULER_ADDRESS";

struct AmClientOptions {
  std::string scheduler_host;
  int scheduler_port = 8030;
  Token amrm_token;
  // hadoop.rpc.protection, for the scheduler and the NodeManagers alike.
  std::vector<SaslQop> rpc_protection = {SaslQop::kAuth};
  int connect_timeout_ms = 20000;
  int call_timeout_ms = 60000;
};

// Where the AM finds the scheduler: $TARN_YARN_SCHEDULER_ADDRESS, else
// yarn.resourcemanager.scheduler.address of $HADOOP_CONF_DIR/yarn-site.xml,
// else yarn.resourcemanager.hostname:8030 (YARN's default port).
Result<std::string> ResolveSchedulerAddress();

// The AMRMToken (by kind YARN_AM_RM_TOKEN) from the container's credentials
// file, $HADOOP_TOKEN_FILE_LOCATION.
Result<Token> ReadAmRmTokenFromEnvironment();

// Both of the above, and hadoop.rpc.protection from $HADOOP_CONF_DIR's core-site.xml
// (authentication when unset): what an AM running in its container needs.
Result<AmClientOptions> AmClientOptionsFromEnvironment();

class AmClient {
 public:
  explicit AmClient(AmClientOptions options);

  Result<RegisterResponse> Register(const RegisterRequest& request);
  // A rolled-over AMRMToken in the response is used from the next connection.
  Result<AllocateResponse> Allocate(const AllocateRequest& request);
  // One finishApplicationMaster call; true once the RM has unregistered the
  // attempt (callers repeat until then, as Hadoop's own AMs do).
  Result<bool> Finish(const FinishRequest& request);

  // The exception class of the last failed call ("" when none): e.g.
  // org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException.
  std::string last_exception_class() const { return ipc_.last_exception_class(); }
  std::string address() const { return ipc_.address(); }
  // The attempt the AMRMToken was issued for (empty ids when undecodable).
  const ApplicationAttemptId& attempt() const { return attempt_; }
  void Close() { ipc_.Close(); }

 private:
  IpcClient ipc_;
  ApplicationAttemptId attempt_;
};

// Exception classes the AM reacts to.
inline constexpr const char* kNotRegisteredException =
    "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException";
inline constexpr const char* kInvalidRequestException =
    "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException";

}  // namespace tarn::cluster::yarn
