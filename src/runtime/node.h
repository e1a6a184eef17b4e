// The processes of a distributed job. `tarn node --role ...` runs one; the
// backends launch them. A parameter server or worker dials the coordinator,
// registers, heartbeats, and exits when the coordinator is gone.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/job.h"
#include "runtime/transport.h"

namespace tarn::runtime {

struct NodeArgs {
  std::string role;         // "ps", "worker"
  int index = 0;            // the role's index
  int node = 0;             // the coordinator's id for this launch
  std::string coordinator;  // host:port
  std::string secret;
  bool tls = false;                // tarn.cluster.tls ($TARN_CLUSTER_TLS=1 from the coordinator)
  std::string host = "127.0.0.1";  // the address this node listens on
  // How to reach the others; null means TCP with the secret.
  std::shared_ptr<Transport> transport;
  // A node running as a thread of the coordinator's process (the embedded
  // backend) returns instead of exiting the process when the job ends.
  bool embedded = false;
};

Status RunParameterServer(const NodeArgs& args);
Status RunWorker(const NodeArgs& args);

// The coordinator: launches the nodes through the job's backend, drives the
// epochs, survives node failures, checkpoints, and writes the model.
// `tarn_binary` is what the local backend executes for the nodes.
// With job.backend "embedded" the nodes run as threads of this process and
// talk over in-process connections.
Status RunCoordinator(const JobConfig& job, const std::string& secret,
                      const std::string& tarn_binary);

}  // namespace tarn::runtime
