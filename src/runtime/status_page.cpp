#include "runtime/status_page.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/files.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "runtime/membership.h"
#include "runtime/transport.h"

namespace tarn::runtime {

using data::Json;

namespace {

std::string Text(const data::Json& j) {
  if (j.is_string()) return EscapeMarkup(j.get<std::string>());
  if (j.is_null()) return "";
  if (j.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", j.get<double>());
    return buf;
  }
  return EscapeMarkup(j.dump());
}

}  // namespace

std::string RenderStatusPage(const data::Json& s) {
  std::string h =
      "<!doctype html><html><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"refresh\" content=\"2\"><title>tarn training</title><style>"
      "body{font:14px sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
      "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#eee}"
      ".dead{color:#b00}.running{color:#070}</style></head><body>";
  h += "<h1>tarn training: " + Text(s.value("phase", data::Json(""))) + "</h1>";
  h += "<p>bag " + Text(s.value("bag", data::Json(0))) + ", epoch " +
       Text(s.value("epoch", data::Json(0))) + " of " + Text(s.value("epochs", data::Json(0))) +
       ", " + Text(s.value("consistency", data::Json(""))) + ", generation " +
       Text(s.value("generation", data::Json(0))) + ", term " +
       Text(s.value("term", data::Json(0))) + "</p>";
  if (s.contains("error")) h += "<p class=\"dead\">" + Text(s["error"]) + "</p>";
  h += "<h2>Nodes</h2><table><tr><th>node</th><th>role</th><th>index</th><th>slot</th>"
       "<th>state</th><th>address</th><th>where</th><th>epoch</th><th>batch</th><th>exit</th></tr>";
  for (const auto& n : s.value("nodes", data::Json::array())) {
    std::string state = n.value("state", "");
    h += "<tr><td>" + Text(n.value("node", data::Json())) + "</td><td>" +
         Text(n.value("role", data::Json())) + "</td><td>" + Text(n.value("index", data::Json())) +
         "</td><td>" + Text(n.value("slot", data::Json())) + "</td><td class=\"" +
         EscapeMarkup(state) + "\">" + EscapeMarkup(state) + "</td><td>" +
         Text(n.value("address", data::Json())) + "</td><td>" +
         Text(n.value("where", data::Json())) + "</td><td>" + Text(n.value("epoch", data::Json())) +
         "</td><td>" + Text(n.value("position", data::Json())) + "</td><td>" +
         Text(n.value("exit", data::Json())) + "</td></tr>";
  }
  h += "</table><h2>Epochs</h2><table><tr><th>bag</th><th>epoch</th><th>training error</th>"
       "<th>valid error</th><th>AUC</th><th>samples/s</th><th>stale gradients</th>"
       "<th>seconds</th></tr>";
  for (const auto& e : s.value("history", data::Json::array())) {
    h += "<tr>";
    for (const char* k : {"bag", "epoch", "trainError", "validError", "auc", "samplesPerSec",
                          "staleGradients", "seconds"}) {
      h += "<td>" + Text(e.value(k, data::Json())) + "</td>";
    }
    h += "</tr>";
  }
  h += "</table></body></html>\n";
  return h;
}

// In HDFS each file is rewritten at most once a second (`tarn train` on YARN
// polls the history once a second); local files as often as they change.
StatusPage::StatusPage(const JobConfig& job, ClusterState* state, const Membership& membership)
    : job_(job),
      s_(*state),
      membership_(membership),
      files_(data::IsHdfsPath(job.cluster_json) ? std::chrono::seconds(1)
                                                : StatusFiles::Clock::duration::zero()) {}

Status StatusPage::Start() {
  net::HttpServer::Options http;
  http.host = job_.bind_host == "auto" ? "0.0.0.0" : job_.bind_host;
  http.port = job_.status_port;
  http.threads = 1;
  auto server = net::HttpServer::Start(
      http, [this](const net::HttpRequest& q, net::HttpResponse* a) { ServeStatus(q, a); });
  if (!server.ok()) return server.status().WithContext("coordinator status page");
  http_ = std::move(*server);
  return Status::Ok();
}

void StatusPage::Stop() {
  if (http_) http_->Stop();
}

std::string StatusPage::StatusUrl() const {
  if (!http_) return "";
  const std::string host = job_.bind_host == "auto" ? HostName() : job_.bind_host;
  return "http://" + host + ":" + std::to_string(http_->port()) + "/";
}

Json StatusPage::ClusterJsonLocked() const {
  Json nodes = Json::array();
  for (const auto& [id, n] : s_.nodes) {
    // A node that ended cleanly at the end of the job exited; any other end is a death.
    const bool clean = s_.finished && n.exit_code == 0;
    const char* state = n.state == NodeState::kLaunching ? "launching"
                        : n.state == NodeState::kRunning ? "running"
                        : clean                          ? "exited"
                                                         : "dead";
    Json j{{"node", id},
           {"role", n.role == "worker" && n.slot < 0 ? "backup" : n.role},
           {"index", n.index},
           {"state", state},
           {"address", n.address},
           {"pid", n.pid},
           {"where", n.task >= 0 ? membership_.backend().Where(n.task) : ""},
           {"epoch", n.epoch + 1},
           {"position", n.position}};
    if (n.role == "worker") j["slot"] = n.slot;
    if (!n.exit.empty()) j["exit"] = n.exit;
    nodes.push_back(j);
  }
  Json j{{"generation", s_.generation},
         {"term", s_.term},
         {"phase", s_.phase},
         {"bag", s_.bag},
         {"epoch", std::min(s_.epoch + 1, job_.epochs)},
         {"epochs", job_.epochs},
         {"consistency", ConsistencyName(job_.consistency)},
         {"coordinator",
          {{"address", membership_.address()},
           {"pid", static_cast<int64_t>(::getpid())},
           {"status", StatusUrl()}}},
         {"nodes", nodes}};
  if (!s_.status_message.empty()) j["error"] = s_.status_message;
  return j;
}

void StatusPage::WriteClusterLocked() {
  s_.dirty = false;
  files_.Put(job_.cluster_json, ClusterJsonLocked().dump(2) + "\n");
}

void StatusPage::ServeStatus(const net::HttpRequest& q, net::HttpResponse* a) {
  std::lock_guard<std::mutex> lock(s_.mu);
  Json j = ClusterJsonLocked();
  j["history"] = s_.history;
  if (q.path == "/status.json" || q.path == "/api/status") {
    a->body = j.dump(2);
  } else if (q.path == "/" || q.path == "/index.html") {
    a->content_type = "text/html; charset=utf-8";
    a->body = RenderStatusPage(j);
  } else {
    a->status = 404;
    a->body = Json{{"error", "no page " + q.path + "; try / or /status.json"}}.dump();
  }
}

}  // namespace tarn::runtime
