// What every tarn command shares on the command line: exit statuses, error lines and the
// -v / -q switches, so that `tarn X` behaves the same for every X.
#pragma once

#include <string>

#include "common/status.h"

namespace tarn::app {

inline constexpr int kExitFailure = 1;  // the step ran and failed (I/O, a peer, the cluster)
inline constexpr int kExitUsage = 2;    // bad arguments or configuration: nothing was run

// kExitUsage for what the user must change (kInvalidArgument: a flag, a setting, a config
// value; kUnsupported: a choice tarn does not implement), kExitFailure for the rest.
int ExitCodeFor(const Status& status);

// Prints "<who>: error: <message>" to stderr; returns ExitCodeFor(status).
int Fail(const std::string& who, const Status& status);

// Prints "<who>: <message>" and `hint` (a line such as "(see 'tarn --help')") to stderr;
// returns kExitUsage.
int UsageError(const std::string& who, const std::string& message, const std::string& hint);

// -v / --verbose (debug lines) and -q / --quiet (warnings and errors only, no progress and
// no per-epoch lines): applies the switch and returns true when `arg` is one of them.
bool ApplyVerbosityFlag(const std::string& arg);

}  // namespace tarn::app
