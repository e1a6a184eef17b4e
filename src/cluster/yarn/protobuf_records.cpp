#include "cluster/yarn/protobuf_records.h"

#include <cstdio>

#include "common/strings.h"

namespace tarn::cluster::yarn {

namespace {

constexpr int64_t kContainerIdBits = 40;
constexpr int64_t kContainerIdMask = (int64_t{1} << kContainerIdBits) - 1;

std::string Pad(int64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%0*lld", width, static_cast<long long>(v));
  return buf;
}

ProtoWriter ApplicationIdWriter(const ApplicationId& id) {
  ProtoWriter w;
  w.Int(1, id.id);
  w.Int(2, id.cluster_timestamp);
  return w;
}

ProtoWriter AttemptWriter(const ApplicationAttemptId& id) {
  ProtoWriter w;
  w.Message(1, ApplicationIdWriter(id.app));
  w.Int(2, id.attempt);
  return w;
}

ProtoWriter NodeIdWriter(const NodeId& node) {
  ProtoWriter w;
  w.Bytes(1, node.host);
  w.Int(2, node.port);
  return w;
}

Result<ApplicationId> DecodeApplicationId(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "ApplicationIdProto"));
  return ApplicationId{m.Int32(1), m.Int64(2)};
}

Result<NodeId> DecodeNodeId(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "NodeIdProto"));
  return NodeId{m.String(1), m.Int32(2)};
}

Result<int32_t> DecodePriority(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "PriorityProto"));
  return m.Int32(1);
}

Result<NmToken> DecodeNmToken(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "NMTokenProto"));
  NmToken t;
  TARN_ASSIGN_OR_RETURN(t.node, DecodeNodeId(m.Bytes(1)));
  TARN_ASSIGN_OR_RETURN(t.token, DecodeToken(m.Bytes(2)));
  return t;
}

Result<std::vector<Container>> DecodeContainers(const ProtoMessage& m, int field) {
  std::vector<Container> out;
  for (std::string_view c : m.RepeatedBytes(field)) {
    TARN_ASSIGN_OR_RETURN(Container container, DecodeContainer(c));
    out.push_back(std::move(container));
  }
  return out;
}

Result<std::vector<NmToken>> DecodeNmTokens(const ProtoMessage& m, int field) {
  std::vector<NmToken> out;
  for (std::string_view t : m.RepeatedBytes(field)) {
    TARN_ASSIGN_OR_RETURN(NmToken token, DecodeNmToken(t));
    out.push_back(std::move(token));
  }
  return out;
}

// SerializedExceptionProto -> "ClassName: message (cause: ...)".
std::string DescribeException(std::string_view data) {
  auto m = ProtoMessage::Parse(data, "SerializedExceptionProto");
  if (!m.ok()) return "(undecodable exception: " + m.status().message() + ")";
  std::string text = m->String(3);
  const std::string message = m->String(1);
  if (!message.empty()) text += (text.empty() ? "" : ": ") + message;
  if (m->Has(4)) text += " (cause: " + DescribeException(m->Bytes(4)) + ")";
  return text.empty() ? "unknown error" : text;
}

Result<std::vector<ContainerFailure>> DecodeFailures(const ProtoMessage& m, int field) {
  std::vector<ContainerFailure> out;
  for (std::string_view f : m.RepeatedBytes(field)) {
    TARN_ASSIGN_OR_RETURN(ProtoMessage e, ProtoMessage::Parse(f, "ContainerExceptionMapProto"));
    ContainerFailure failure;
    TARN_ASSIGN_OR_RETURN(failure.id, DecodeContainerId(e.Bytes(1)));
    failure.message = DescribeException(e.Bytes(2));
    out.push_back(std::move(failure));
  }
  return out;
}

}  // namespace

std::string ApplicationId::ToString() const {
  return "application_" + std::to_string(cluster_timestamp) + "_" + Pad(id, 4);
}

std::string ApplicationAttemptId::ToString() const {
  return "appattempt_" + std::to_string(app.cluster_timestamp) + "_" + Pad(app.id, 4) + "_" +
         Pad(attempt, 6);
}

bool ContainerId::operator<(const ContainerId& o) const {
  if (attempt.app.cluster_timestamp != o.attempt.app.cluster_timestamp) {
    return attempt.app.cluster_timestamp < o.attempt.app.cluster_timestamp;
  }
  if (attempt.app.id != o.attempt.app.id) return attempt.app.id < o.attempt.app.id;
  if (attempt.attempt != o.attempt.attempt) return attempt.attempt < o.attempt.attempt;
  return id < o.id;
}

std::string ContainerId::ToString() const {
  std::string s = "container_";
  const int64_t epoch = id >> kContainerIdBits;
  if (epoch > 0) s += "e" + std::to_string(epoch) + "_";
  return s + std::to_string(attempt.app.cluster_timestamp) + "_" + Pad(attempt.app.id, 4) + "_" +
         Pad(attempt.attempt, 2) + "_" + Pad(id & kContainerIdMask, 6);
}

Result<ContainerId> ContainerId::Parse(std::string_view text) {
  const std::vector<std::string> parts = Split(text, "_");
  const auto bad = [&] {
    return InvalidArgument("not a YARN container id: '" + std::string(text) +
                           "' (expected container_[eEPOCH_]TIMESTAMP_APP_ATTEMPT_NUMBER)");
  };
  if (parts.size() < 5 || parts[0] != "container") return bad();
  size_t i = 1;
  int64_t epoch = 0;
  if (parts.size() == 6) {
    if (parts[1].size() < 2 || parts[1][0] != 'e') return bad();
    auto e = ParseInt(std::string_view(parts[1]).substr(1));
    if (!e || *e < 0) return bad();
    epoch = *e;
    i = 2;
  } else if (parts.size() != 5) {
    return bad();
  }
  auto ts = ParseInt(parts[i]);
  auto app = ParseInt(parts[i + 1]);
  auto attempt = ParseInt(parts[i + 2]);
  auto number = ParseInt(parts[i + 3]);
  if (!ts || !app || !attempt || !number || *number < 0 || *number > kContainerIdMask) {
    return bad();
  }
  ContainerId id;
  id.attempt.app.cluster_timestamp = *ts;
  id.attempt.app.id = static_cast<int32_t>(*app);
  id.attempt.attempt = static_cast<int32_t>(*attempt);
  id.id = (epoch << kContainerIdBits) | *number;
  return id;
}

std::string Resource::ToString() const {
  std::string s = "<memory:" + std::to_string(memory_mb) + ", vCores:" + std::to_string(vcores);
  for (const auto& [k, v] : others) s += ", " + k + ":" + std::to_string(v);
  return s + ">";
}

const char* ContainerExitStatusName(int32_t exit_status) {
  switch (exit_status) {
    case -1000:
      return "INVALID";
    case -100:
      return "ABORTED (released, or its node was lost)";
    case -101:
      return "DISKS_FAILED";
    case -102:
      return "PREEMPTED";
    case -103:
      return "KILLED_EXCEEDED_VMEM";
    case -104:
      return "KILLED_EXCEEDED_PMEM";
    case -105:
      return "KILLED_BY_APPMASTER";
    case -106:
      return "KILLED_BY_RESOURCEMANAGER";
    case -107:
      return "KILLED_AFTER_APP_COMPLETION";
    case -108:
      return "KILLED_BY_CONTAINER_SCHEDULER";
    case -109:
      return "KILLED_FOR_EXCESS_LOGS";
    default:
      return nullptr;
  }
}

const char* LocalResourceTypeName(LocalResourceType t) {
  switch (t) {
    case LocalResourceType::kArchive:
      return "ARCHIVE";
    case LocalResourceType::kPattern:
      return "PATTERN";
    case LocalResourceType::kFile:
      break;
  }
  return "FILE";
}

const char* LocalResourceVisibilityName(LocalResourceVisibility v) {
  switch (v) {
    case LocalResourceVisibility::kPublic:
      return "PUBLIC";
    case LocalResourceVisibility::kPrivate:
      return "PRIVATE";
    case LocalResourceVisibility::kApplication:
      break;
  }
  return "APPLICATION";
}

const char* FinalApplicationStatusName(FinalApplicationStatus status) {
  switch (status) {
    case FinalApplicationStatus::kUndefined:
      return "UNDEFINED";
    case FinalApplicationStatus::kSucceeded:
      return "SUCCEEDED";
    case FinalApplicationStatus::kFailed:
      return "FAILED";
    case FinalApplicationStatus::kKilled:
      return "KILLED";
  }
  return "UNDEFINED";
}

std::string EncodeToken(const Token& token) {
  ProtoWriter w;
  w.Bytes(1, token.identifier);
  w.Bytes(2, token.password);
  w.Bytes(3, token.kind);
  w.Bytes(4, token.service);
  return w.Take();
}

std::string EncodeApplicationAttemptId(const ApplicationAttemptId& id) {
  return AttemptWriter(id).Take();
}

std::string EncodeContainerId(const ContainerId& id) {
  ProtoWriter w;
  w.Message(1, ApplicationIdWriter(id.attempt.app));
  w.Message(2, AttemptWriter(id.attempt));
  w.Int(3, id.id);
  return w.Take();
}

std::string EncodeResource(const Resource& resource) {
  ProtoWriter w;
  w.Int(1, resource.memory_mb);
  w.Int(2, resource.vcores);
  for (const auto& [key, value] : resource.others) {
    ProtoWriter info;
    info.Bytes(1, key);
    info.Int(2, value);
    w.Message(3, info);
  }
  return w.Take();
}

std::string EncodeContainer(const Container& c) {
  ProtoWriter w;
  w.Bytes(1, EncodeContainerId(c.id));
  w.Message(2, NodeIdWriter(c.node));
  w.Bytes(3, c.node_http_address);
  w.Bytes(4, EncodeResource(c.resource));
  ProtoWriter priority;
  priority.Int(1, c.priority);
  w.Message(5, priority);
  w.Bytes(6, EncodeToken(c.container_token));
  return w.Take();
}

std::string EncodeContainerStatus(const ContainerStatus& s) {
  ProtoWriter w;
  w.Bytes(1, EncodeContainerId(s.id));
  w.Int(2, static_cast<int>(s.state));
  w.Bytes(3, s.diagnostics);
  w.Int(4, s.exit_status);
  if (s.sub_state != ContainerSubState::kUnknown) w.Int(8, static_cast<int>(s.sub_state));
  return w.Take();
}

std::string EncodeRegisterRequest(const RegisterRequest& request) {
  ProtoWriter w;
  w.Bytes(1, request.host);
  w.Int(2, request.rpc_port);
  w.Bytes(3, request.tracking_url);
  return w.Take();
}

std::string EncodeAllocateRequest(const AllocateRequest& request) {
  ProtoWriter w;
  for (const auto& ask : request.asks) {
    ProtoWriter r;
    ProtoWriter priority;
    priority.Int(1, ask.priority);
    r.Message(1, priority);
    r.Bytes(2, ask.resource_name);
    r.Bytes(3, EncodeResource(ask.capability));
    r.Int(4, ask.num_containers);
    r.Bool(5, ask.relax_locality);
    w.Message(1, r);
  }
  for (const auto& id : request.releases) w.Bytes(2, EncodeContainerId(id));
  w.Int(4, request.response_id);
  w.Float(5, request.progress);
  return w.Take();
}

std::string EncodeFinishRequest(const FinishRequest& request) {
  ProtoWriter w;
  w.Bytes(1, request.diagnostics);
  w.Bytes(2, request.tracking_url);
  w.Int(3, static_cast<int>(request.status));
  return w.Take();
}

Result<UrlParts> ParseResourceUrl(std::string_view url) {
  UrlParts parts;
  if (StartsWith(url, "/")) {
    parts.scheme = "file";
    parts.file = std::string(url);
    return parts;
  }
  const size_t colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0) {
    return InvalidArgument("local resource '" + std::string(url) +
                           "' is not a URI (hdfs://host:port/path or file:///path)");
  }
  parts.scheme = std::string(url.substr(0, colon));
  std::string_view rest = url.substr(colon + 3);
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  parts.file = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  const size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    parts.user_info = std::string(authority.substr(0, at));
    authority = authority.substr(at + 1);
  }
  const size_t port_colon = authority.rfind(':');
  if (port_colon != std::string_view::npos && authority.find(']', port_colon) == authority.npos) {
    auto port = ParseInt(authority.substr(port_colon + 1));
    if (!port || *port <= 0 || *port > 65535) {
      return InvalidArgument("local resource '" + std::string(url) + "' has a bad port");
    }
    parts.port = static_cast<int32_t>(*port);
    authority = authority.substr(0, port_colon);
  }
  parts.host = std::string(authority);
  return parts;
}

namespace {

Result<ProtoWriter> LaunchContextWriter(const LaunchContext& context) {
  ProtoWriter w;
  for (const auto& [name, resource] : context.local_resources) {
    TARN_ASSIGN_OR_RETURN(UrlParts url, ParseResourceUrl(resource.url));
    ProtoWriter u;
    u.Bytes(1, url.scheme);
    if (!url.host.empty()) u.Bytes(2, url.host);
    if (url.port > 0) u.Int(3, url.port);
    u.Bytes(4, url.file);
    if (!url.user_info.empty()) u.Bytes(5, url.user_info);
    ProtoWriter r;
    r.Message(1, u);
    r.Int(2, resource.size);
    r.Int(3, resource.timestamp);
    r.Int(4, static_cast<int>(resource.type));
    r.Int(5, static_cast<int>(resource.visibility));
    ProtoWriter entry;
    entry.Bytes(1, name);
    entry.Message(2, r);
    w.Message(1, entry);
  }
  if (!context.tokens.empty()) w.Bytes(2, context.tokens);
  for (const auto& [key, value] : context.environment) {
    ProtoWriter entry;
    entry.Bytes(1, key);
    entry.Bytes(2, value);
    w.Message(4, entry);
  }
  for (const auto& command : context.commands) w.Bytes(5, command);
  return w;
}

}  // namespace

Result<std::string> EncodeStartContainersRequest(const std::vector<StartRequest>& requests) {
  ProtoWriter w;
  for (const auto& request : requests) {
    TARN_ASSIGN_OR_RETURN(ProtoWriter context, LaunchContextWriter(request.context));
    ProtoWriter r;
    r.Message(1, context);
    r.Bytes(2, EncodeToken(request.container_token));
    w.Message(1, r);
  }
  return w.Take();
}

std::string EncodeContainerIdList(const std::vector<ContainerId>& ids) {
  ProtoWriter w;
  for (const auto& id : ids) w.Bytes(1, EncodeContainerId(id));
  return w.Take();
}

Result<Token> DecodeToken(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "TokenProto"));
  return Token{m.String(1), m.String(2), m.String(3), m.String(4)};
}

Result<ApplicationAttemptId> DecodeApplicationAttemptId(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "ApplicationAttemptIdProto"));
  ApplicationAttemptId id;
  TARN_ASSIGN_OR_RETURN(id.app, DecodeApplicationId(m.Bytes(1)));
  id.attempt = m.Int32(2);
  return id;
}

Result<ContainerId> DecodeContainerId(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "ContainerIdProto"));
  ContainerId id;
  if (m.Has(2)) {
    TARN_ASSIGN_OR_RETURN(id.attempt, DecodeApplicationAttemptId(m.Bytes(2)));
  } else {
    TARN_ASSIGN_OR_RETURN(id.attempt.app, DecodeApplicationId(m.Bytes(1)));
  }
  id.id = m.Int64(3);
  return id;
}

Result<Resource> DecodeResource(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "ResourceProto"));
  Resource r;
  r.memory_mb = m.Int64(1);
  r.vcores = m.Int32(2);
  for (std::string_view info : m.RepeatedBytes(3)) {
    TARN_ASSIGN_OR_RETURN(ProtoMessage i, ProtoMessage::Parse(info, "ResourceInformationProto"));
    const std::string key = i.String(1);
    // memory-mb and vcores repeat the two fixed fields; keep only the others.
    if (key != "memory-mb" && key != "vcores") r.others[key] = i.Int64(2);
  }
  return r;
}

Result<Container> DecodeContainer(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "ContainerProto"));
  Container c;
  TARN_ASSIGN_OR_RETURN(c.id, DecodeContainerId(m.Bytes(1)));
  TARN_ASSIGN_OR_RETURN(c.node, DecodeNodeId(m.Bytes(2)));
  c.node_http_address = m.String(3);
  TARN_ASSIGN_OR_RETURN(c.resource, DecodeResource(m.Bytes(4)));
  TARN_ASSIGN_OR_RETURN(c.priority, DecodePriority(m.Bytes(5)));
  TARN_ASSIGN_OR_RETURN(c.container_token, DecodeToken(m.Bytes(6)));
  return c;
}

Result<ContainerStatus> DecodeContainerStatus(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "ContainerStatusProto"));
  ContainerStatus s;
  TARN_ASSIGN_OR_RETURN(s.id, DecodeContainerId(m.Bytes(1)));
  s.state = static_cast<ContainerState>(m.Int32(2, 1));
  s.diagnostics = m.Has(3) ? m.String(3) : "N/A";
  s.exit_status = m.Int32(4, -1000);
  s.sub_state = static_cast<ContainerSubState>(m.Int32(8, 0));
  return s;
}

Result<RegisterResponse> DecodeRegisterResponse(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m,
                        ProtoMessage::Parse(data, "RegisterApplicationMasterResponseProto"));
  RegisterResponse r;
  TARN_ASSIGN_OR_RETURN(r.maximum_capability, DecodeResource(m.Bytes(1)));
  TARN_ASSIGN_OR_RETURN(r.containers_from_previous_attempts, DecodeContainers(m, 4));
  r.queue = m.String(5);
  TARN_ASSIGN_OR_RETURN(r.nm_tokens_from_previous_attempts, DecodeNmTokens(m, 6));
  return r;
}

Result<AllocateResponse> DecodeAllocateResponse(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "AllocateResponseProto"));
  AllocateResponse r;
  if (m.Has(1)) r.am_command = static_cast<AmCommand>(m.Int32(1));
  r.response_id = m.Int32(2);
  TARN_ASSIGN_OR_RETURN(r.allocated, DecodeContainers(m, 3));
  for (std::string_view s : m.RepeatedBytes(4)) {
    TARN_ASSIGN_OR_RETURN(ContainerStatus status, DecodeContainerStatus(s));
    r.completed.push_back(std::move(status));
  }
  if (m.Has(5)) {
    TARN_ASSIGN_OR_RETURN(r.limit, DecodeResource(m.Bytes(5)));
  }
  r.num_cluster_nodes = m.Int32(7);
  TARN_ASSIGN_OR_RETURN(r.nm_tokens, DecodeNmTokens(m, 9));
  if (m.Has(12)) {
    TARN_ASSIGN_OR_RETURN(r.am_rm_token, DecodeToken(m.Bytes(12)));
  }
  TARN_ASSIGN_OR_RETURN(r.containers_from_previous_attempts, DecodeContainers(m, 17));
  return r;
}

Result<bool> DecodeFinishResponse(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m,
                        ProtoMessage::Parse(data, "FinishApplicationMasterResponseProto"));
  return m.Bool(1);
}

Result<ContainersResponse> DecodeContainersResponse(std::string_view data, bool is_start) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m,
                        ProtoMessage::Parse(data, is_start ? "StartContainersResponseProto"
                                                           : "StopContainersResponseProto"));
  // startContainers: succeeded 2, failed 3; stopContainers: succeeded 1, failed 2.
  const int succeeded_field = is_start ? 2 : 1;
  ContainersResponse r;
  for (std::string_view id : m.RepeatedBytes(succeeded_field)) {
    TARN_ASSIGN_OR_RETURN(ContainerId cid, DecodeContainerId(id));
    r.succeeded.push_back(cid);
  }
  TARN_ASSIGN_OR_RETURN(r.failed, DecodeFailures(m, succeeded_field + 1));
  return r;
}

Result<ContainerStatusesResponse> DecodeContainerStatusesResponse(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m,
                        ProtoMessage::Parse(data, "GetContainerStatusesResponseProto"));
  ContainerStatusesResponse r;
  for (std::string_view s : m.RepeatedBytes(1)) {
    TARN_ASSIGN_OR_RETURN(ContainerStatus status, DecodeContainerStatus(s));
    r.statuses.push_back(std::move(status));
  }
  TARN_ASSIGN_OR_RETURN(r.failed, DecodeFailures(m, 2));
  return r;
}

Result<ApplicationAttemptId> DecodeTokenAttempt(std::string_view identifier) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(identifier, "token identifier"));
  if (!m.Has(1)) return Corrupt("token identifier has no application attempt id (field 1)");
  return DecodeApplicationAttemptId(m.Bytes(1));
}

}  // namespace tarn::cluster::yarn
