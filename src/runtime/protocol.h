// The runtime's messages: their types, and helpers shared by the nodes.
//
// Control messages (registration, heartbeats, reports and directives,
// parameter-server control) are small JSON objects; gradients and
// parameters travel as binary float arrays (net/wire.h). Both kinds are
// built and checked by the structs of runtime/messages.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "data/json_fields.h"
#include "net/connection.h"
#include "net/rpc.h"
#include "runtime/job.h"

namespace tarn::runtime {

// The messages' fields, and how each is checked, are in runtime/messages.h.
enum MessageType : uint16_t {
  // To the coordinator.
  kRegister = 1,   // {role, index, node, pid, address} -> {generation, heartbeatMs, ...}
  kHeartbeat = 2,  // {node, bag, epoch, position} -> {stop}
  kReport = 3,     // a worker's report; the reply is its next directive (a long poll)
  // To a parameter server.
  kPush = 20,        // binary: term, slot, step, weight, gradient slice -> step, parameters
  kPull = 21,        // binary: term -> step, parameters
  kSlotDone = 22,    // {term, slot}: the slot trained its last batch of the epoch
  kConfigure = 30,   // {term, bag, epoch, begin, end, job, initSeed, load} (from the coordinator)
  kStartEpoch = 31,  // {term, epoch, slots}
  kCheckpoint = 32,  // {epoch, path} -> {crc}
  kGetParams = 33,   // {} -> binary parameters
  kReset = 34,       // {term}: refuse older pushes, fail waiting ones
  kShutdown = 35,    // {}
};

// The environment variable that carries the job's secret to its nodes (never
// the command line, which every user of the machine can read).
inline constexpr const char* kSecretEnv = "TARN_JOB_SECRET";
// "1" when the job's connections run TLS (tarn.cluster.tls), for the nodes it launches.
inline constexpr const char* kClusterTlsEnv = "TARN_CLUSTER_TLS";

net::ConnectionOptions ConnectionOptionsFor(const JobConfig& job);

// Dials host:port, retrying refused connections until the deadline (a node
// may start before its peer listens).
Result<std::unique_ptr<net::RpcClient>> DialRpc(const std::string& address,
                                                const std::string& secret,
                                                const net::ConnectionOptions& options, int retry_ms,
                                                net::Deadline d);

// Parameter slices: P contiguous ranges of `count` parameters, sizes within one.
std::pair<size_t, size_t> SliceRange(size_t count, int parts, int index);

}  // namespace tarn::runtime
