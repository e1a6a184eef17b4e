// The runtime's messages as typed structs, one per message.
//
// A message is parsed once, where it arrives (at the top of its handler, or
// where a reply comes back), by FromJson or Decode, which check that every
// field is present, has its type and lies in its range, and name the message
// and the field when one does not:
//   kConfigure: field 'end' must be an integer >= begin, got "x"
// A malformed message is answered with that error; it is never read as a
// default and never stops the node. Messages are built from the same structs
// where they are sent (ToJson, Encode), so both ends agree on the fields.
//
// Control messages are JSON objects; the parameter server's push, pull and
// parameter answers are binary (net/wire.h), every count checked against
// the slice it is meant for.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "data/json_fields.h"
#include "net/rpc.h"
#include "runtime/protocol.h"
#include "train/batch_loop.h"
#include "train/validation.h"

namespace tarn::runtime {

// "kConfigure" for kConfigure; "message type 99" for a type no node knows.
std::string MessageName(uint16_t type);

namespace msg {

using data::Json;

// ---- to the coordinator ----

// A node announces itself: {role, index, node, pid, address}.
struct Register {
  static constexpr uint16_t kType = kRegister;
  static constexpr const char* kName = "kRegister";
  std::string role;  // "ps", "worker" or "serving"
  int index = 0;     // the role's index
  int node = 0;      // the coordinator's id for this launch
  int64_t pid = 0;
  std::string address;  // what the node serves on; "" for a worker
  Json ToJson() const;
  static Result<Register> FromJson(const Json& j);
};

struct RegisterReply {
  static constexpr const char* kName = "kRegister reply";
  int64_t generation = 0;
  int heartbeat_ms = 1000;
  int max_missed_heartbeats = 25;
  Json ToJson() const;
  static Result<RegisterReply> FromJson(const Json& j);
};

// {node, bag, epoch, position}: the node is alive, and where its training is.
struct Heartbeat {
  static constexpr uint16_t kType = kHeartbeat;
  static constexpr const char* kName = "kHeartbeat";
  int node = 0;
  int bag = 0, epoch = 0;
  int64_t position = 0;
  Json ToJson() const;
  static Result<Heartbeat> FromJson(const Json& j);
};

struct HeartbeatReply {
  static constexpr const char* kName = "kHeartbeat reply";
  bool stop = false;  // the job is over: the node exits
  Json ToJson() const;
  static Result<HeartbeatReply> FromJson(const Json& j);
};

// ---- a worker's reports ----

// Which epoch of which slot an epoch_done or valid_done report is about.
struct ReportOrigin {
  int slot = -1;
  int bag = 0;
  int epoch = 0;
  int64_t term = 0;
};

// epoch_done: the worker trained its slot's epoch; its training figures.
// JSON writes a NaN figure (a diverged loss) as null; it is read back as NaN,
// so the epoch driver sees the divergence instead of a type error.
struct EpochDoneReport {
  static constexpr const char* kKind = "epoch_done";
  static constexpr const char* kName = "kReport epoch_done";
  ReportOrigin origin;
  train::TrainSums sums;  // of the batches this worker trained
  double seconds = 0;
  int64_t stale = 0;    // gradients a parameter server dropped as stale
  uint64_t bytes = 0;   // to and from the parameter servers
  Json ToJson() const;  // with the kind and the origin
  static Result<EpochDoneReport> FromJson(const Json& j);
};

// valid_done: the worker validated its slot's rows; its validation summary
// (the score histograms, at most kMaxReportBins bins each).
struct ValidDoneReport {
  static constexpr const char* kKind = "valid_done";
  static constexpr const char* kName = "kReport valid_done";
  ReportOrigin origin;
  train::ValidationSummary summary;
  Json ToJson() const;
  static Result<ValidDoneReport> FromJson(const Json& j);
};

// A worker's report; the coordinator answers it with the worker's next
// Directive (a long poll). An await carries no figures (and maybe why the
// worker stopped); an epoch_done or valid_done carries its typed body.
struct Report {
  static constexpr uint16_t kType = kReport;
  static constexpr const char* kName = "kReport";
  std::string kind = "await";  // "await", "epoch_done" or "valid_done"
  int node = 0;
  int64_t seq = 0;             // the last directive the worker took
  std::string reason;          // await: why the worker stopped ("" when it simply waits)
  EpochDoneReport epoch_done;  // kind "epoch_done"
  ValidDoneReport valid_done;  // kind "valid_done"

  static Report Await(std::string reason = "");
  static Report Of(EpochDoneReport r);
  static Report Of(ValidDoneReport r);
  // Whose epoch an epoch_done or valid_done is about; nullptr for an await.
  const ReportOrigin* origin() const;
  Json ToJson() const;
  static Result<Report> FromJson(const Json& j);
};

// The coordinator's answer to a report: {action, seq, ...}.
struct Directive {
  static constexpr const char* kName = "kReport reply (directive)";
  std::string action;  // "train", "validate", "standby" or "finish"
  int64_t seq = 0;
  // train and validate: the slot and what to do with it.
  int slot = -1, bag = 0, epoch = 0;
  int64_t term = 0;
  int64_t position = 0;         // the batch to start training from
  std::vector<std::string> ps;  // the parameter servers' addresses, by index
  std::vector<int> shards;      // the slot's shards
  Json job;                     // the job description (JobConfig::ToJson); null when left out
  bool has_slot() const { return action == "train" || action == "validate"; }
  Json ToJson() const;
  static Result<Directive> FromJson(const Json& j);
};

// ---- to a parameter server (control) ----

// {term, bag, epoch, begin, end, job, initSeed, load}: take slice [begin, end)
// of the bag's parameters, initialized from initSeed or loaded from `load`.
struct Configure {
  static constexpr uint16_t kType = kConfigure;
  static constexpr const char* kName = "kConfigure";
  int64_t term = 0;
  int bag = 0, epoch = 0;
  uint64_t begin = 0, end = 0;
  Json job;  // JobConfig::ToJson(), checked by JobConfig::FromJson
  uint64_t init_seed = 0;
  std::string load;  // a slice file, or "" to initialize
  Json ToJson() const;
  static Result<Configure> FromJson(const Json& j);
};

// {term, epoch, slots}: the slots that train this epoch.
struct StartEpoch {
  static constexpr uint16_t kType = kStartEpoch;
  static constexpr const char* kName = "kStartEpoch";
  int64_t term = 0;
  int epoch = 0;
  std::vector<int> slots;
  Json ToJson() const;
  static Result<StartEpoch> FromJson(const Json& j);
};

// {term, slot}: the slot trained its last batch of the epoch.
struct SlotDone {
  static constexpr uint16_t kType = kSlotDone;
  static constexpr const char* kName = "kSlotDone";
  int64_t term = 0;
  int slot = 0;
  Json ToJson() const;
  static Result<SlotDone> FromJson(const Json& j);
};

// {epoch, path}: write the slice and its optimizer state to path. The server
// answers once it holds a copy, with the file's checksum and size, and writes
// the file in the background: the coordinator commits the checkpoint when
// the file is there with that size.
struct Checkpoint {
  static constexpr uint16_t kType = kCheckpoint;
  static constexpr const char* kName = "kCheckpoint";
  int epoch = 0;
  std::string path;
  Json ToJson() const;
  static Result<Checkpoint> FromJson(const Json& j);
};

struct CheckpointReply {
  static constexpr const char* kName = "kCheckpoint reply";
  uint32_t crc = 0;    // CRC-32C of the slice file
  uint64_t bytes = 0;  // its size
  Json ToJson() const;
  static Result<CheckpointReply> FromJson(const Json& j);
};

// {term}: refuse pushes of older terms, fail the waiting ones.
struct Reset {
  static constexpr uint16_t kType = kReset;
  static constexpr const char* kName = "kReset";
  int64_t term = 0;
  Json ToJson() const;
  static Result<Reset> FromJson(const Json& j);
};

// {}: answered with the slice's parameters (Params).
struct GetParams {
  static constexpr uint16_t kType = kGetParams;
  static constexpr const char* kName = "kGetParams";
  Json ToJson() const;
  static Result<GetParams> FromJson(const Json& j);
};

// {}: the parameter server exits after answering.
struct Shutdown {
  static constexpr uint16_t kType = kShutdown;
  static constexpr const char* kName = "kShutdown";
  Json ToJson() const;
  static Result<Shutdown> FromJson(const Json& j);
};

// ---- to a parameter server (binary) ----

// term, slot, step, weight, gradient: the slot's summed gradient for the
// server's slice, with the samples' total weight. At a graph's batch-norm
// state (the vector's last floats) it holds the worker's moved state (sync)
// or its move since the last answer (async, ssp), not a gradient.
struct Push {
  int64_t term = 0;
  int slot = 0;
  int64_t step = 0;
  double weight = 0;
  std::vector<float> gradient;
  static std::string Encode(int64_t term, int slot, int64_t step, double weight,
                            std::span<const float> gradient);
  // `slice_size`: the receiving server's slice; the gradient must have exactly
  // that many values. Reuses out->gradient's storage.
  static Status Decode(std::string_view payload, size_t slice_size, Push* out);
};

// term: the current parameters, please.
struct Pull {
  int64_t term = 0;
  static std::string Encode(int64_t term);
  static Result<Pull> Decode(std::string_view payload);
};

// The answer to a push or a pull: status, the server's step, its parameters.
struct ParamsAnswer {
  static constexpr uint8_t kApplied = 0;  // applied (or pending in sync mode)
  static constexpr uint8_t kStale = 1;    // the step closed without it: dropped
  uint8_t status = kApplied;
  int64_t step = 0;
  std::vector<float> params;
  static std::string Encode(uint8_t status, int64_t step, std::span<const float> params);
  // `slice_size`: the slice the caller asked; reuses out->params' storage.
  static Status Decode(std::string_view payload, size_t slice_size, ParamsAnswer* out);
};

// The answer to GetParams: the slice's parameters.
struct Params {
  static std::string Encode(std::span<const float> params);
  static Result<std::vector<float>> Decode(std::string_view payload, size_t slice_size);
};

// ---- parsing and calling ----

// The most score bins a valid_done report may carry per class.
inline constexpr size_t kMaxReportBins = size_t{1} << 20;

// Refuses JSON nested deeper than any message is (kMaxNesting levels).
// nlohmann parses without recursion but prints and copies with it, so a
// deeply nested value could overflow the stack of whoever shows it.
inline constexpr int kMaxNesting = 64;
Status CheckNesting(const char* message, const Json& j);

// Parses a JSON payload as message M.
template <typename M>
Result<M> Parse(std::string_view payload) {
  Json j = Json::parse(payload, nullptr, false);
  if (j.is_discarded()) return InvalidArgument(std::string(M::kName) + ": not valid JSON");
  TARN_RETURN_IF_ERROR(CheckNesting(M::kName, j));
  return M::FromJson(j);
}

// Sends `request` (a JSON object) as message `type` and parses the reply as Reply.
template <typename Reply>
Result<Reply> CallJsonAs(net::RpcClient& client, uint16_t type, const Json& request,
                         net::Deadline d) {
  TARN_ASSIGN_OR_RETURN(std::string reply, client.Call(type, request.dump(), d));
  return Parse<Reply>(reply);
}

// Sends a message struct and parses the reply as Reply.
template <typename Reply, typename Request>
Result<Reply> Call(net::RpcClient& client, const Request& request, net::Deadline d) {
  return CallJsonAs<Reply>(client, Request::kType, request.ToJson(), d);
}

// Sends a message whose reply carries nothing.
template <typename Request>
Status CallForStatus(net::RpcClient& client, const Request& request, net::Deadline d) {
  return client.Call(Request::kType, request.ToJson().dump(), d).status();
}

}  // namespace msg
}  // namespace tarn::runtime
