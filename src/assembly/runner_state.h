// The runner's state as a file (state.json beside status.json): what a second attempt of
// tarn's assembly ApplicationMaster needs to go on where the first one stopped, as Hadoop's
// ServiceMaster does after an AM restart: the instances (ids, identities, backups and whom
// they replaced, states, restarts, the container each runs in, its launch number, host and
// log folder), each component's target count and failures, the TF task addresses, and the
// service's own state. Written atomically on every change; a damaged file is refused with
// an error naming the field, never read in part.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "assembly/runner.h"
#include "common/status.h"

namespace tarn::assembly {

inline constexpr int kRunnerStateVersion = 1;

struct SavedInstance {
  std::string name;
  int64_t id = 0;
  bool backup = false;
  int64_t identity = 0;
  std::string replaced, replaced_by;
  InstanceState state = InstanceState::kInit;
  bool launched = false;
  // The YARN container it was launched in ("" while none was allocated yet).
  std::string container;
  bool kill_requested = false;
  bool flexed_down = false;
  bool docker = false;  // ran with YARN's Docker runtime
  int restarts = 0;
  std::optional<int> exit_code;
  std::string diagnostics;
  int64_t launch_time_ms = 0;
  std::string host;
  int64_t launch_seq = 0;
  std::string log_dir;
  bool registered = false;
};

struct SavedComponent {
  std::string name;
  int64_t desired = 0;  // the flex target
  int64_t next_id = 0;
  int failures = 0;
  std::vector<SavedInstance> instances;
};

struct RunnerState {
  std::string service;  // the service's name: a state of another service is refused
  std::string application_id;
  ServiceState state = ServiceState::kStarted;
  std::string diagnostics;
  std::optional<int> exit_code;
  int64_t launch_time_ms = 0;  // wall clock
  int64_t next_launch_seq = 1;
  bool stop_requested = false;
  std::string stop_reason;
  std::map<std::string, std::vector<std::string>> tf_addresses;  // TF job -> host:port per task
  std::vector<SavedComponent> components;
};

std::string RunnerStateJson(const RunnerState& state);
// `file` names the source in errors.
Result<RunnerState> ParseRunnerState(const std::string& text, const std::string& file);

// The inverse of ServiceStateName / InstanceStateName.
std::optional<ServiceState> ServiceStateFromName(const std::string& name);
std::optional<InstanceState> InstanceStateFromName(const std::string& name);

}  // namespace tarn::assembly
