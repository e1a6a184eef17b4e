#include "cluster/yarn/rm_rest.h"

#include <openssl/evp.h>

#include <algorithm>  // for std::find, std::sort
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/yarn/rest_json.h"
#include "cluster/yarn/yarn_backend.h"  // for EnvironmentValue
#include "common/strings.h"             // for ParseInt, StartsWith
#include "net/http_client.h"
#include "net/kerberos.h"

namespace tarn::cluster::yarn {
namespace {

using Json = nlohmann::json;

std::string Base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

// The RM's JSON, read tolerantly (rest_json.h).
std::string Str(const Json& j, const char* key) { return JsonText(j, key); }
int64_t Int(const Json& j, const char* key) { return JsonInteger(j, key); }

double Double(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return 0;
  const Json& v = j[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    auto p = ParseDouble(v.get<std::string>());
    return p ? *p : 0;
  }
  return 0;
}

// j[outer][inner] as a list (absent or null: empty; one object: a list of one).
std::vector<Json> List(const Json& j, const char* outer, const char* inner) {
  std::vector<Json> out;
  if (!j.is_object() || !j.contains(outer) || !j[outer].is_object()) return out;
  const Json& o = j[outer];
  if (!o.contains(inner)) return out;
  const Json& v = o[inner];
  if (v.is_array()) {
    for (const auto& e : v) out.push_back(e);
  } else if (v.is_object()) {
    out.push_back(v);
  }
  return out;
}

Result<Json> ParseBody(const std::string& what, const std::string& body) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded()) {
    return IoError(what + ": the answer is not JSON: " + body.substr(0, 200));
  }
  return j;
}

AppReport ReportFromJson(const Json& a) {
  AppReport r;
  r.id = Str(a, "id");
  r.name = Str(a, "name");
  r.user = Str(a, "user");
  r.queue = Str(a, "queue");
  r.type = Str(a, "applicationType");
  r.state = Str(a, "state");
  r.final_status = Str(a, "finalStatus");
  r.diagnostics = Str(a, "diagnostics");
  r.tracking_url = Str(a, "trackingUrl");
  r.am_container_logs = Str(a, "amContainerLogs");
  r.am_host_http_address = Str(a, "amHostHttpAddress");
  r.progress = Double(a, "progress");
  r.started_ms = Int(a, "startedTime");
  r.finished_ms = Int(a, "finishedTime");
  r.running_containers = Int(a, "runningContainers");
  r.log_aggregation_status = Str(a, "logAggregationStatus");
  return r;
}

// "exception: message" of an RM error answer, or the start of the body.
Status RestError(const std::string& what, const net::ClientResponse& r) {
  Json j = Json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("RemoteException") && j["RemoteException"].is_object()) {
    const Json& e = j["RemoteException"];
    net::ClientResponse shortened = r;
    shortened.body = Str(e, "exception") + ": " + Str(e, "message");
    return net::HttpStatusError(what, shortened);
  }
  return net::HttpStatusError(what, r);
}

}  // namespace

std::string UnwrapContainerLog(const std::string& body) {
  // Hadoop 3 wraps the file: "Container: ...\n...LogLength:N\nLogContents:\n<N bytes>\nEnd of
  // LogType:..." (for every format); older NodeManagers send the bytes alone.
  const std::string length_tag = "\nLogLength:";
  const std::string contents_tag = "LogContents:\n";
  auto at = body.find(length_tag);
  auto contents = body.find(contents_tag);
  if (at == std::string::npos || contents == std::string::npos || contents < at) return body;
  auto end_of_number = body.find('\n', at + length_tag.size());
  auto n = ParseInt(body.substr(at + length_tag.size(), end_of_number - at - length_tag.size()));
  const size_t start = contents + contents_tag.size();
  if (!n || *n < 0 || start + static_cast<size_t>(*n) > body.size()) return body.substr(start);
  return body.substr(start, static_cast<size_t>(*n));
}

bool AppReport::Done() const {
  return state == "FINISHED" || state == "FAILED" || state == "KILLED";
}

ResourceManagerClient::ResourceManagerClient(ResourceManagerOptions options)
    : options_(std::move(options)) {}

ResourceManagerClient ResourceManagerClient::FromConf(const net::HadoopConf& conf,
                                                      const std::string& user, int timeout_ms) {
  ResourceManagerOptions o;
  o.web_addresses = conf.ResourceManagerWebAddresses();
  o.user = net::HadoopUserName(user);
  o.kerberos = conf.KerberosEnabled();
  o.https = conf.YarnHttpsOnly();
  o.timeout_ms = timeout_ms;
  return ResourceManagerClient(std::move(o));
}

bool ResourceManagerClient::IsApplicationId(const std::string& id) {
  auto parts = Split(id, "_");
  if (parts.size() != 3 || parts[0] != "application") return false;
  for (size_t i = 1; i < 3; ++i) {
    if (parts[i].empty()) return false;
    for (char c : parts[i]) {
      if (c < '0' || c > '9') return false;
    }
  }
  return true;
}

std::string ResourceManagerClient::UserQuery() const {
  if (options_.kerberos || options_.user.empty()) return "";
  return "user.name=" + net::UrlEncode(options_.user);
}

net::ClientRequest ResourceManagerClient::Request(const std::string& address,
                                                  const std::string& path_and_query) const {
  net::ClientRequest req;
  req.url = (options_.https ? "https://" : "http://") + address + path_and_query;
  req.negotiate = options_.kerberos;
  req.connect_timeout_ms = options_.connect_timeout_ms;
  req.timeout_ms = options_.timeout_ms;
  return req;
}

Result<std::string> ResourceManagerClient::Call(const std::string& method, const std::string& path,
                                                const std::string& query, const std::string& body,
                                                std::vector<int> ok_statuses, int* status_out) {
  if (options_.web_addresses.empty()) {
    return FailedPrecondition(
        "no ResourceManager web address: set yarn.resourcemanager.webapp.address in "
        "$HADOOP_CONF_DIR/yarn-site.xml (or tarn.hadoop.conf-dir), or pass it with -D");
  }
  if (options_.kerberos) {
    TARN_RETURN_IF_ERROR(net::EnsureKerberosCredential().WithContext(
        "the ResourceManager's REST API (hadoop.security.authentication=kerberos)"));
  }
  const size_t n = options_.web_addresses.size();
  Status last;
  net::HttpClient client;
  for (size_t k = 0; k < n; ++k) {
    const size_t index = (active_ + k) % n;
    std::string q = query;
    if (const std::string user = UserQuery(); !user.empty()) q += (q.empty() ? "" : "&") + user;
    net::ClientRequest req =
        Request(options_.web_addresses[index], path + (q.empty() ? "" : "?" + q));
    req.method = method;
    req.headers.emplace_back("Accept", "application/json");
    if (method == "POST" || method == "PUT") {
      req.headers.emplace_back("Content-Type", "application/json");
      req.body = body;
    }
    req.follow_redirects = true;  // a standby RM redirects to the active one
    const std::string what = method + " " + req.url;
    auto r = client.Send(req);
    if (!r.ok()) {
      last = r.status();
      if (last.code() == StatusCode::kUnavailable) continue;  // another RM
      return last;
    }
    active_ = index;
    if (status_out != nullptr) *status_out = r->status;
    if (std::find(ok_statuses.begin(), ok_statuses.end(), r->status) == ok_statuses.end()) {
      return RestError(what, *r);
    }
    return std::move(r->body);
  }
  return last;
}

Result<NewApplication> ResourceManagerClient::CreateApplication() {
  TARN_ASSIGN_OR_RETURN(std::string body,
                        Call("POST", "/ws/v1/cluster/apps/new-application", "", "", {200}));
  TARN_ASSIGN_OR_RETURN(Json j, ParseBody("new-application", body));
  NewApplication a;
  a.id = Str(j, "application-id");
  if (!IsApplicationId(a.id)) {
    return IoError("new-application: the ResourceManager gave no application id: " +
                   body.substr(0, 200));
  }
  if (j.contains("maximum-resource-capability")) {
    a.max_memory_mb = Int(j["maximum-resource-capability"], "memory");
    a.max_vcores = Int(j["maximum-resource-capability"], "vCores");
  }
  return a;
}

std::string ResourceManagerClient::SubmissionJson(const AppSubmission& s) {
  Json resources = Json::array();
  for (const auto& [key, r] : s.local_resources) {
    resources.push_back({{"key", key},
                         {"value",
                          {{"resource", r.url},
                           {"type", LocalResourceTypeName(r.type)},
                           {"visibility", LocalResourceVisibilityName(r.visibility)},
                           {"size", r.size},
                           {"timestamp", r.timestamp}}}});
  }
  Json env = Json::array();
  for (const auto& [k, v] : s.environment) {
    if (!s.raw_environment.count(k)) env.push_back({{"key", k}, {"value", EnvironmentValue(v)}});
  }
  for (const auto& [k, v] : s.raw_environment) env.push_back({{"key", k}, {"value", v}});
  Json spec = {{"commands", {{"command", s.command}}},
               {"local-resources", {{"entry", resources}}},
               {"environment", {{"entry", env}}}};
  if (!s.secrets.empty() || !s.tokens.empty()) {
    Json secrets = Json::array();
    for (const auto& [k, v] : s.secrets) secrets.push_back({{"key", k}, {"value", Base64(v)}});
    Json tokens = Json::array();
    for (const auto& [k, v] : s.tokens) tokens.push_back({{"key", k}, {"value", v}});
    spec["credentials"] = {
        {"tokens", tokens.empty() ? Json::object() : Json{{"entry", tokens}}},
        {"secrets", secrets.empty() ? Json::object() : Json{{"entry", secrets}}}};
  }
  Json j = {{"application-id", s.application_id},
            {"application-name", s.name},
            {"queue", s.queue},
            {"priority", s.priority},
            {"am-container-spec", spec},
            {"unmanaged-AM", false},
            {"max-app-attempts", s.max_attempts},
            {"resource", {{"memory", s.memory_mb}, {"vCores", s.vcores}}},
            {"application-type", s.type},
            {"keep-containers-across-application-attempts", s.keep_containers}};
  if (!s.tags.empty()) j["application-tags"] = {{"tag", s.tags}};
  if (s.attempt_failures_validity_interval_ms > 0) {
    j["attempt-failures-validity-interval"] = s.attempt_failures_validity_interval_ms;
  }
  return j.dump();
}

Status ResourceManagerClient::Submit(const AppSubmission& submission) {
  if (!IsApplicationId(submission.application_id)) {
    return InvalidArgument("submit: '" + submission.application_id +
                           "' is not an application id (call CreateApplication first)");
  }
  if (submission.command.empty()) return InvalidArgument("submit: the AM command is empty");
  auto r = Call("POST", "/ws/v1/cluster/apps", "", SubmissionJson(submission), {200, 202});
  if (!r.ok()) return r.status().WithContext("submitting " + submission.application_id);
  return Status::Ok();
}

Result<AppReport> ResourceManagerClient::ParseAppReport(const std::string& json) {
  TARN_ASSIGN_OR_RETURN(Json j, ParseBody("application report", json));
  if (!j.is_object() || !j.contains("app") || !j["app"].is_object()) {
    return IoError("application report: no \"app\" in " + json.substr(0, 200));
  }
  return ReportFromJson(j["app"]);
}

namespace {

// The maximumAllocation {"memory", "vCores"} of the queue named `queue` in the scheduler's
// queue tree (capacity scheduler), else the one nearest the root.
struct MaximumAllocation {
  int64_t memory_mb = 0, vcores = 0;
  int depth = -1;  // -1: none found
  bool named = false;
};

void FindMaximumAllocation(const Json& node, const std::string& queue, int depth,
                           MaximumAllocation* best) {
  if (node.is_object() && node.contains("maximumAllocation") &&
      node["maximumAllocation"].is_object()) {
    const bool named = Str(node, "queueName") == queue || Str(node, "queuePath") == queue ||
                       Str(node, "queuePath") == "root." + queue;
    const bool better =
        named ? !best->named : !best->named && (best->depth < 0 || depth < best->depth);
    if (better) {
      best->memory_mb = Int(node["maximumAllocation"], "memory");
      best->vcores = Int(node["maximumAllocation"], "vCores");
      best->depth = depth;
      best->named = named;
    }
  }
  if (!node.is_structured()) return;
  for (const auto& [key, value] : node.items()) {
    if (key != "maximumAllocation") FindMaximumAllocation(value, queue, depth + 1, best);
  }
}

}  // namespace

Result<ClusterResources> ResourceManagerClient::ParseClusterResources(
    const std::string& metrics_json, const std::string& nodes_json,
    const std::string& scheduler_json, const std::string& queue) {
  ClusterResources c;
  TARN_ASSIGN_OR_RETURN(Json metrics, ParseBody("cluster metrics", metrics_json));
  const Json m = metrics.is_object() && metrics.contains("clusterMetrics")
                     ? metrics["clusterMetrics"]
                     : Json::object();
  c.total_memory_mb = Int(m, "totalMB");
  c.total_vcores = Int(m, "totalVirtualCores");
  c.free_memory_mb = Int(m, "availableMB");
  c.free_vcores = Int(m, "availableVirtualCores");
  TARN_ASSIGN_OR_RETURN(Json nodes, ParseBody("cluster nodes", nodes_json));
  for (const Json& n : List(nodes, "nodes", "node")) {
    if (Str(n, "state") != "RUNNING") continue;
    NodeResources r;
    r.id = Str(n, "id");
    r.free_memory_mb = Int(n, "availMemoryMB");
    r.free_vcores = Int(n, "availableVirtualCores");
    r.memory_mb = r.free_memory_mb + Int(n, "usedMemoryMB");
    r.vcores = r.free_vcores + Int(n, "usedVirtualCores");
    c.nodes.push_back(r);
  }
  if (!scheduler_json.empty()) {
    TARN_ASSIGN_OR_RETURN(Json scheduler, ParseBody("scheduler", scheduler_json));
    MaximumAllocation max;
    FindMaximumAllocation(scheduler, queue, 0, &max);
    c.max_memory_mb = max.memory_mb;
    c.max_vcores = max.vcores;
  }
  return c;
}

Result<ClusterResources> ResourceManagerClient::GetClusterResources(const std::string& queue) {
  TARN_ASSIGN_OR_RETURN(std::string metrics, Call("GET", "/ws/v1/cluster/metrics", "", "", {200}));
  TARN_ASSIGN_OR_RETURN(std::string nodes, Call("GET", "/ws/v1/cluster/nodes", "", "", {200}));
  // Some schedulers (or RMs behind a proxy) do not answer /scheduler; the nodes still bound
  // the containers.
  auto scheduler = Call("GET", "/ws/v1/cluster/scheduler", "", "", {200});
  return ParseClusterResources(metrics, nodes, scheduler.ok() ? *scheduler : "", queue);
}

Result<AppReport> ResourceManagerClient::GetApplication(const std::string& id) {
  if (!IsApplicationId(id)) return InvalidArgument("'" + id + "' is not an application id");
  TARN_ASSIGN_OR_RETURN(std::string body, Call("GET", "/ws/v1/cluster/apps/" + id, "", "", {200}));
  return ParseAppReport(body);
}

Result<std::vector<AppAttempt>> ResourceManagerClient::GetAttempts(const std::string& id) {
  if (!IsApplicationId(id)) return InvalidArgument("'" + id + "' is not an application id");
  TARN_ASSIGN_OR_RETURN(std::string body,
                        Call("GET", "/ws/v1/cluster/apps/" + id + "/appattempts", "", "", {200}));
  TARN_ASSIGN_OR_RETURN(Json j, ParseBody("attempts of " + id, body));
  std::vector<AppAttempt> out;
  for (const Json& a : List(j, "appAttempts", "appAttempt")) {
    AppAttempt t;
    t.id = Int(a, "id");
    t.container_id = Str(a, "containerId");
    t.node_http_address = Str(a, "nodeHttpAddress");
    t.node_id = Str(a, "nodeId");
    t.logs_link = Str(a, "logsLink");
    t.attempt_id = Str(a, "appAttemptId");
    if (t.attempt_id.empty() && t.id > 0) {  // appattempt_<cluster>_<n>_<attempt, 6 digits>
      char n[24];
      std::snprintf(n, sizeof(n), "%06lld", static_cast<long long>(t.id));
      t.attempt_id = "appattempt_" + id.substr(std::string("application_").size()) + "_" + n;
    }
    t.started_ms = Int(a, "startTime");
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(),
            [](const AppAttempt& a, const AppAttempt& b) { return a.id < b.id; });
  return out;
}

Result<std::vector<ContainerReport>> ResourceManagerClient::GetAttemptContainers(
    const std::string& id, const AppAttempt& attempt) {
  if (!IsApplicationId(id)) return InvalidArgument("'" + id + "' is not an application id");
  TARN_ASSIGN_OR_RETURN(std::string body,
                        Call("GET",
                             "/ws/v1/cluster/apps/" + id + "/appattempts/" +
                                 net::UrlEncode(attempt.attempt_id) + "/containers",
                             "", "", {200}));
  TARN_ASSIGN_OR_RETURN(Json j, ParseBody("containers of " + attempt.attempt_id, body));
  // {"containers": {"container": [...]}}, or {"container": [...]}.
  std::vector<Json> listed = List(j, "containers", "container");
  if (listed.empty() && j.is_object() && j.contains("container")) {
    listed = List(Json{{"c", j}}, "c", "container");
  }
  std::vector<ContainerReport> out;
  for (const Json& c : listed) {
    ContainerReport r;
    r.container_id = Str(c, "containerId");
    r.node_id = Str(c, "nodeId");
    if (r.node_id.empty()) r.node_id = Str(c, "assignedNodeId");
    r.node_http_address = Str(c, "nodeHttpAddress");
    for (const char* scheme : {"http://", "https://"}) {
      if (r.node_http_address.rfind(scheme, 0) == 0) {
        r.node_http_address = r.node_http_address.substr(std::strlen(scheme));
      }
    }
    while (!r.node_http_address.empty() && r.node_http_address.back() == '/') {
      r.node_http_address.pop_back();
    }
    r.state = Str(c, "containerState");
    if (!r.container_id.empty()) out.push_back(std::move(r));
  }
  return out;
}

Result<AppReport> ResourceManagerClient::Kill(const std::string& id, int wait_ms) {
  if (!IsApplicationId(id)) return InvalidArgument("'" + id + "' is not an application id");
  // 202 while the kill is under way; 200 with the current state when it is already final.
  TARN_ASSIGN_OR_RETURN(std::string body, Call("PUT", "/ws/v1/cluster/apps/" + id + "/state", "",
                                               R"({"state":"KILLED"})", {200, 202}));
  (void)body;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (true) {
    TARN_ASSIGN_OR_RETURN(AppReport r, GetApplication(id));
    if (r.Done()) return r;
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceeded("killing " + id + ": still " + r.state + " after " +
                              std::to_string(wait_ms / 1000) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Result<AppReport> ResourceManagerClient::Follow(
    const std::string& id, int poll_ms, int64_t timeout_ms,
    const std::function<void(const AppReport&)>& on_change) {
  const auto start = std::chrono::steady_clock::now();
  AppReport previous;
  bool first = true;
  int failures = 0;
  while (true) {
    auto r = GetApplication(id);
    if (!r.ok()) {
      // A ResourceManager restarting (or failing over) is unavailable for a while.
      if (r.status().code() != StatusCode::kUnavailable || ++failures > 30) return r.status();
    } else {
      failures = 0;
      if (on_change &&
          (first || r->state != previous.state || r->final_status != previous.final_status ||
           r->diagnostics != previous.diagnostics)) {
        on_change(*r);
      }
      first = false;
      previous = *r;
      if (r->Done()) return r;
    }
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
    if (timeout_ms > 0 && elapsed >= timeout_ms) {
      return DeadlineExceeded(id + " is still " + (first ? "unknown" : previous.state) + " after " +
                              std::to_string(timeout_ms / 1000) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::max(poll_ms, 10)));
  }
}

Result<std::vector<AppReport>> ResourceManagerClient::ListApplications(const std::string& type) {
  const std::string query = type.empty() ? "" : "applicationTypes=" + net::UrlEncode(type);
  TARN_ASSIGN_OR_RETURN(std::string body, Call("GET", "/ws/v1/cluster/apps", query, "", {200}));
  TARN_ASSIGN_OR_RETURN(Json j, ParseBody("applications", body));
  std::vector<AppReport> out;
  for (const Json& a : List(j, "apps", "app")) out.push_back(ReportFromJson(a));
  std::sort(out.begin(), out.end(), [](const AppReport& a, const AppReport& b) {
    return a.started_ms != b.started_ms ? a.started_ms > b.started_ms : a.id > b.id;
  });
  return out;
}

Result<std::vector<ContainerLogFile>> ResourceManagerClient::ContainerLogFiles(
    const std::string& node_http_address, const std::string& container_id) {
  net::HttpClient client;
  std::string path = "/ws/v1/node/containers/" + net::UrlEncode(container_id) + "/logs";
  if (const std::string user = UserQuery(); !user.empty()) path += "?" + user;
  net::ClientRequest req = Request(node_http_address, path);
  const std::string url = req.url;
  req.headers.emplace_back("Accept", "application/json");
  TARN_ASSIGN_OR_RETURN(auto r, client.Send(req));
  if (r.status != 200) return RestError("GET " + url, r);
  TARN_ASSIGN_OR_RETURN(Json j, ParseBody("GET " + url, r.body));
  // [{"containerLogInfo": [{"fileName", "fileSize", ...}], "logAggregationType": "LOCAL"}, ...]
  // or {"containerLogsInfo": {...}} (Hadoop 3.5), or a list of such objects.
  std::vector<Json> groups;
  auto add = [&groups](const Json& g) {
    if (g.is_object() && g.contains("containerLogsInfo")) {
      const Json& inner = g["containerLogsInfo"];
      if (inner.is_array()) {
        for (const auto& e : inner) groups.push_back(e);
      } else {
        groups.push_back(inner);
      }
    } else {
      groups.push_back(g);
    }
  };
  if (j.is_array()) {
    for (const auto& g : j) add(g);
  } else {
    add(j);
  }
  std::vector<ContainerLogFile> out;
  for (const Json& g : groups) {
    if (!g.is_object() || !g.contains("containerLogInfo")) continue;
    const Json& infos = g["containerLogInfo"];
    std::vector<Json> list;
    if (infos.is_array()) {
      for (const auto& i : infos) list.push_back(i);
    } else if (infos.is_object()) {
      list.push_back(infos);
    }
    for (const Json& i : list) {
      ContainerLogFile f;
      f.name = Str(i, "fileName");
      f.size = Int(i, "fileSize");
      if (!f.name.empty()) out.push_back(std::move(f));
    }
  }
  return out;
}

Result<std::string> ResourceManagerClient::ContainerLog(const std::string& node_http_address,
                                                        const std::string& container_id,
                                                        const std::string& file) {
  net::HttpClient client;
  std::string path =
      "/ws/v1/node/containerlogs/" + net::UrlEncode(container_id) + "/" + net::UrlEncode(file);
  if (const std::string user = UserQuery(); !user.empty()) path += "?" + user;
  net::ClientRequest req = Request(node_http_address, path);
  const std::string url = req.url;
  req.headers.emplace_back("Accept", "text/plain");
  TARN_ASSIGN_OR_RETURN(auto r, client.Send(req));
  if (r.status != 200) return RestError("GET " + url, r);
  return UnwrapContainerLog(r.body);
}

}  // namespace tarn::cluster::yarn
