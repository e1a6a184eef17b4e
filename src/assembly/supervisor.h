// The local assembly supervisor: the process that `tarn assembly launch` starts
// (detached, like YARN's service ApplicationMaster) to own a service's
// instances, and the client side the other commands use to reach it.
//
// Each service has a folder <root>/<name>/ (root: tarn.assembly.dir, else
// $TARN_HOME/assembly, else ~/.tarn/assembly):
//   spec.json        the assembly file as launched (flex persists new counts in it)
//   status.json      the runner's state, rewritten atomically on every change
//   supervisor.json  {"pid", "port"} while a supervisor runs
//   control.secret   the control channel's HMAC key (mode 0600)
//   supervisor.log   the supervisor's own log
//   logs/<instance>.log, instances/<instance>/   each instance's output and folder
//
// The control channel is tarn's framed, HMAC-authenticated connection
// (net/connection.h) on 127.0.0.1 only: a peer without the secret file's
// bytes is refused before any request is read.
#pragma once

#include <string>

#include "common/settings.h"
#include "common/status.h"

namespace tarn::assembly {

// The folder holding every service's folder.
std::string AssemblyRoot(const Settings& settings);

struct ServiceFolder {
  std::string dir;
  std::string spec() const { return dir + "/spec.json"; }
  std::string status() const { return dir + "/status.json"; }
  std::string supervisor() const { return dir + "/supervisor.json"; }
  std::string secret() const { return dir + "/control.secret"; }
  std::string log() const { return dir + "/supervisor.log"; }
};

// Control requests.
enum ControlCall : uint16_t { kCallStatus = 1, kCallFlex = 2, kCallStop = 3 };

struct SupervisorOptions {
  std::string docker = "docker";  // tarn.assembly.docker
};

// Runs the service saved in `folder` until it ends; returns the process's exit
// code (the service's: 0 when it SUCCEEDED or was stopped).
int RunSupervisor(const ServiceFolder& folder, const SupervisorOptions& options);

// Whether a supervisor runs for the folder and answers on its channel.
bool SupervisorRunning(const ServiceFolder& folder);
// The supervisor's pid from supervisor.json (0 when none is recorded).
int SupervisorPid(const ServiceFolder& folder);

// One request to the folder's supervisor; its JSON answer. kUnavailable when
// no supervisor runs.
Result<std::string> CallSupervisor(const ServiceFolder& folder, ControlCall call,
                                   const std::string& payload, int timeout_ms = 10000);

// Starts `argv` (a `tarn assembly supervise ...` line) detached: its own
// session, stdin from /dev/null, output to `log`; waits until the folder's
// supervisor answers, or the process ends (an error unless it wrote status.json: a service
// may run to its end at once). The folder must hold no status.json yet. Returns its pid.
Result<int> StartDetachedSupervisor(const ServiceFolder& folder,
                                    const std::vector<std::string>& argv, int timeout_ms = 60000);

// Sets components[name].number_of_containers in the saved assembly file.
Status PersistFlex(const ServiceFolder& folder, const std::string& component, int64_t count);

}  // namespace tarn::assembly
