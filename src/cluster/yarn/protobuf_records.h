// YARN's records and the ApplicationMasterProtocol / ContainerManagementProtocol
// messages as plain structs, with hand-written encoders and decoders on the
// wire codec (protobuf_wire.h). Field numbers: protos/yarn.proto and
// protos/hadoop_ipc.proto.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/yarn/protobuf_wire.h"
#include "common/status.h"

namespace tarn::cluster::yarn {

// A Hadoop security token (TokenProto; the Writable Token of a credentials file).
struct Token {
  std::string identifier;  // bytes
  std::string password;    // bytes
  std::string kind;        // "YARN_AM_RM_TOKEN", "NMToken", "ContainerToken"...
  std::string service;     // "host:port", often empty for the AMRMToken
  bool operator==(const Token&) const = default;
};

struct ApplicationId {
  int32_t id = 0;
  int64_t cluster_timestamp = 0;
  bool operator==(const ApplicationId&) const = default;
  std::string ToString() const;  // application_1700000000000_0001
};

struct ApplicationAttemptId {
  ApplicationId app;
  int32_t attempt = 0;
  bool operator==(const ApplicationAttemptId&) const = default;
  std::string ToString() const;  // appattempt_1700000000000_0001_000001
};

struct ContainerId {
  ApplicationAttemptId attempt;
  int64_t id = 0;  // low 40 bits: the sequence number; above: the RM epoch
  bool operator==(const ContainerId&) const = default;
  bool operator<(const ContainerId& o) const;
  // container_1700000000000_0001_01_000002, or container_e17_... with an epoch.
  std::string ToString() const;
  static Result<ContainerId> Parse(std::string_view text);
};

struct NodeId {
  std::string host;
  int32_t port = 0;
  bool operator==(const NodeId&) const = default;
  bool operator<(const NodeId& o) const { return host != o.host ? host < o.host : port < o.port; }
  std::string ToString() const { return host + ":" + std::to_string(port); }
};

inline constexpr const char* kGpuResource = "yarn.io/gpu";

struct Resource {
  int64_t memory_mb = 0;
  int32_t vcores = 0;
  std::map<std::string, int64_t> others;  // resource_value_map: "yarn.io/gpu" -> count
  bool operator==(const Resource&) const = default;
  std::string ToString() const;  // "<memory:512, vCores:1, yarn.io/gpu:1>"
};

struct Container {
  ContainerId id;
  NodeId node;
  std::string node_http_address;
  Resource resource;
  int32_t priority = 0;
  Token container_token;
};

enum class ContainerState { kNew = 1, kRunning = 2, kComplete = 3, kScheduled = 4 };

// ContainerSubStateProto: what the NodeManager is doing with a container.
enum class ContainerSubState {
  kUnknown = 0,
  kScheduled = 1,  // new, localizing, waiting for resources
  kRunning = 2,    // the process runs
  kPaused = 3,
  kCompleting = 4,
  kDone = 5,
};

struct ContainerStatus {
  ContainerId id;
  ContainerState state = ContainerState::kNew;
  std::string diagnostics;
  int32_t exit_status = -1000;  // ContainerExitStatus: 0, or negative YARN codes, or the process's
  ContainerSubState sub_state = ContainerSubState::kUnknown;  // from NodeManagers of Hadoop 3
};

// YARN's reserved ContainerExitStatus values, or nullptr for a process exit code.
const char* ContainerExitStatusName(int32_t exit_status);

struct NmToken {
  NodeId node;
  Token token;
};

struct ResourceRequest {
  int32_t priority = 0;
  std::string resource_name = "*";
  Resource capability;
  int32_t num_containers = 0;
  bool relax_locality = true;
};

enum class FinalApplicationStatus { kUndefined = 0, kSucceeded = 1, kFailed = 2, kKilled = 3 };
const char* FinalApplicationStatusName(FinalApplicationStatus status);

enum class AmCommand { kNone = 0, kResync = 1, kShutdown = 2 };

struct RegisterRequest {
  std::string host;
  int32_t rpc_port = 0;
  std::string tracking_url;
};

struct RegisterResponse {
  Resource maximum_capability;
  std::string queue;
  std::vector<Container> containers_from_previous_attempts;
  std::vector<NmToken> nm_tokens_from_previous_attempts;
};

struct AllocateRequest {
  std::vector<ResourceRequest> asks;
  std::vector<ContainerId> releases;
  int32_t response_id = 0;
  float progress = 0;
};

struct AllocateResponse {
  AmCommand am_command = AmCommand::kNone;
  int32_t response_id = 0;
  std::vector<Container> allocated;
  std::vector<ContainerStatus> completed;
  std::optional<Resource> limit;
  int32_t num_cluster_nodes = 0;
  std::vector<NmToken> nm_tokens;
  std::optional<Token> am_rm_token;
  std::vector<Container> containers_from_previous_attempts;
};

struct FinishRequest {
  FinalApplicationStatus status = FinalApplicationStatus::kUndefined;
  std::string diagnostics;
  std::string tracking_url;
};

enum class LocalResourceType { kArchive = 1, kFile = 2, kPattern = 3 };
enum class LocalResourceVisibility { kPublic = 1, kPrivate = 2, kApplication = 3 };
// The names YARN's REST API and tarn's resource lists use: "FILE", "APPLICATION", ...
const char* LocalResourceTypeName(LocalResourceType t);
const char* LocalResourceVisibilityName(LocalResourceVisibility v);

// A file the NodeManager copies into the container's working folder before
// starting it. `url` is a Hadoop path URI (hdfs://nn:8020/x, file:///x).
struct LocalResource {
  std::string url;
  int64_t size = 0;
  int64_t timestamp = 0;  // the source's modification time, ms: must match
  LocalResourceType type = LocalResourceType::kFile;
  LocalResourceVisibility visibility = LocalResourceVisibility::kApplication;
};

struct LaunchContext {
  std::map<std::string, LocalResource> local_resources;  // name in the working folder -> source
  std::map<std::string, std::string> environment;
  std::vector<std::string> commands;  // joined by the NM with spaces and run by bash
  std::string tokens;                 // a credentials file's bytes, or empty
};

struct StartRequest {
  LaunchContext context;
  Token container_token;
};

// A failed per-container request of startContainers / stopContainers / getContainerStatuses.
struct ContainerFailure {
  ContainerId id;
  std::string message;  // the NM's exception: "ClassName: message"
};

struct ContainersResponse {
  std::vector<ContainerId> succeeded;
  std::vector<ContainerFailure> failed;
};

struct ContainerStatusesResponse {
  std::vector<ContainerStatus> statuses;
  std::vector<ContainerFailure> failed;
};

// Encoders: the request messages.
std::string EncodeToken(const Token& token);
std::string EncodeApplicationAttemptId(const ApplicationAttemptId& id);
std::string EncodeContainerId(const ContainerId& id);
std::string EncodeResource(const Resource& resource);
std::string EncodeContainer(const Container& container);
std::string EncodeContainerStatus(const ContainerStatus& status);
std::string EncodeRegisterRequest(const RegisterRequest& request);
std::string EncodeAllocateRequest(const AllocateRequest& request);
std::string EncodeFinishRequest(const FinishRequest& request);
// Fails only on a local resource whose URL cannot be parsed.
Result<std::string> EncodeStartContainersRequest(const std::vector<StartRequest>& requests);
std::string EncodeContainerIdList(const std::vector<ContainerId>& ids);  // stop / statuses

// Decoders: the response messages (and the records inside them).
Result<Token> DecodeToken(std::string_view data);
Result<ApplicationAttemptId> DecodeApplicationAttemptId(std::string_view data);
Result<ContainerId> DecodeContainerId(std::string_view data);
Result<Resource> DecodeResource(std::string_view data);
Result<Container> DecodeContainer(std::string_view data);
Result<ContainerStatus> DecodeContainerStatus(std::string_view data);
Result<RegisterResponse> DecodeRegisterResponse(std::string_view data);
Result<AllocateResponse> DecodeAllocateResponse(std::string_view data);
Result<bool> DecodeFinishResponse(std::string_view data);  // isUnregistered
Result<ContainersResponse> DecodeContainersResponse(std::string_view data, bool is_start);
Result<ContainerStatusesResponse> DecodeContainerStatusesResponse(std::string_view data);
// The attempt an AMRMToken or NMToken identifier belongs to (field 1 of both).
Result<ApplicationAttemptId> DecodeTokenAttempt(std::string_view identifier);

// Parses "scheme://[user@]host[:port]/path" into URLProto's fields; a bare
// absolute path is file://. Invalid URLs give InvalidArgument.
struct UrlParts {
  std::string scheme, host, file, user_info;
  int32_t port = -1;
};
Result<UrlParts> ParseResourceUrl(std::string_view url);

}  // namespace tarn::cluster::yarn
