// Assemblies on YARN: tarn's own ApplicationMaster runs the assembly runner
// (runner.h, remote mode) over the YARN backend, each instance in a container
// of its own that runs tarn's launcher (launcher.h); and the client side of
// `tarn assembly launch --backend yarn` and the commands that follow it.
//
// The client keeps the service's local folder as on the local backend
// (supervisor.h: spec.json, control.secret) plus yarn.json {"application_id",
// "staging_dir"}. It submits `tarn assembly am` as the AM with the spec and the
// control secret in the AM's credentials (alias tarn.job.secret, as tarn's
// training AM gets its job secret); containers get the same credentials. The AM
// writes into the application's staging folder (HDFS):
//   am.json      {"host", "port"}: its control channel (the supervisor's calls,
//                and the launchers' Register and Plan), HMAC-authenticated
//   status.json  the runner's status document, rewritten on every change
//   state.json   the runner's state (runner_state.h), from which a later attempt goes on
// The other commands call the AM while it runs and read status.json after.
#pragma once

#include <string>
#include <vector>

#include "assembly/spec.h"
#include "assembly/supervisor.h"
#include "common/settings.h"
#include "common/status.h"

namespace tarn::assembly {

struct YarnMasterOptions {
  std::string spec = "spec.json";  // in the AM's working folder
  // Where the control channel listens: an address, or "auto"/empty (every interface,
  // advertised by this host's name).
  std::string bind_host;
};

// Runs in the AM container; returns the process's exit code (the service's). A later
// attempt (the ResourceManager restarts a dead AM, keeping its containers) resumes from the
// runner's state.json in the staging folder and rewrites am.json with its own address.
int RunYarnMaster(const YarnMasterOptions& options);

// The service's YARN application, from its folder's yarn.json.
struct YarnService {
  std::string application_id;
  std::string staging_dir;
};
std::string YarnServiceFile(const ServiceFolder& folder);  // <dir>/yarn.json
Result<YarnService> ReadYarnService(const ServiceFolder& folder);

// Hadoop's service key for the AM's attempts, read from the service's configuration.properties.
inline constexpr const char* kAmRestartMaxAttempts = "yarn.service.am-restart.max-attempts";
// The attempts the service's AM gets: that property, else tarn.assembly.am-max-attempts; a bad
// count is an error naming the field.
Result<int> AmMaxAttempts(const Service& service, const Settings& settings);

// Submits the service saved in `folder` (spec.json) to YARN; writes control.secret and
// yarn.json; waits (up to `timeout_ms`) until the AM answers or the application ends.
Result<YarnService> SubmitYarnService(const ServiceFolder& folder, const Service& service,
                                      const Settings& settings,
                                      const std::vector<std::string>& overrides,
                                      int timeout_ms = 180000);

// Where tarn's applications stage their files in HDFS (tarn.yarn.staging-dir, else
// <fs.defaultFS>/user/<user>/.tarn/staging), for files a service's instances localize.
Result<std::string> YarnStagingRoot(const Settings& settings);

// One control call to the service's AM (kUnavailable when it does not answer).
Result<std::string> CallYarnMaster(const ServiceFolder& folder, const YarnService& app,
                                   uint16_t call, const std::string& payload,
                                   int timeout_ms = 10000);

// The status document the AM left in HDFS.
Result<std::string> YarnStatusFile(const YarnService& app);

// The application's state at the ResourceManager (RUNNING, FINISHED, ...) and final status.
struct YarnAppState {
  std::string state, final_status, diagnostics;
  bool finished() const { return state == "FINISHED" || state == "FAILED" || state == "KILLED"; }
};
Result<YarnAppState> GetYarnAppState(const YarnService& app, const Settings& settings);

// Waits until the application has ended at the ResourceManager.
Result<YarnAppState> WaitYarnAppEnd(const YarnService& app, const Settings& settings,
                                    int timeout_ms);

}  // namespace tarn::assembly
