// tarn's launcher: what a remote runner's instance runs in its container (a YARN
// container started by tarn's assembly ApplicationMaster, yarn_master.h), the
// way TonY's task executor runs a TensorFlow task:
//
//  1. it registers with the runner over the authenticated control channel (the
//     job secret from the container's credentials): its instance, its launch,
//     the host it runs on ($NM_HOST) and its log folder ($LOG_DIRS); a backup
//     waits in this call until it takes over a failed instance;
//  2. a TF task binds a port on its own host (the one its task had, when the
//     runner asks for it and it is free) and sends host:port; the runner answers
//     once every TF task of the service has an address, with TF_CONFIG and the
//     TonY variables among the environment, the command and the config files;
//  3. it writes the files into its working folder, releases the port and execs
//     `bash -c COMMAND` there with WORK_DIR, LOG_DIR and that environment.
//
// When the AM dies while the launcher waits (a backup in Register, a TF task in Plan) or
// before it answers, the launcher looks for the AM's next attempt: it re-reads am.json in
// the application's staging folder ($TARN_YARN_STAGING_DIR), which each attempt rewrites
// with its address, and registers again there (for up to 10 minutes without an answer).
#pragma once

#include <string>

#include "common/status.h"

namespace tarn::assembly {

// The alias of the job secret in the credentials of the AM and its containers.
inline constexpr const char* kAssemblySecretAlias = "tarn.job.secret";

struct LauncherOptions {
  std::string am;        // host:port of the runner's control channel
  std::string instance;  // <component>-<id>
  int64_t launch = 0;    // the launch it belongs to
  std::string secret;    // the channel's key
  std::string host;      // the host to report and bind on; empty: $NM_HOST, else the host name
};

// The host:port an AM attempt recorded in <staging_dir>/am.json (kUnavailable while none has).
Result<std::string> ReadAmAddress(const std::string& staging_dir);

// Runs the launcher; returns only on an error (a successful run execs the command).
Status RunLauncher(const LauncherOptions& options);

}  // namespace tarn::assembly
