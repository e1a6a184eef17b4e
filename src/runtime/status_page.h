// The coordinator's status page: tmp/cluster.json (the nodes, the phase,
// the epoch) and the HTTP page, a small self-contained HTML page (no scripts
// or external assets; it refreshes itself) built from the same JSON plus the
// per-epoch history.
#pragma once

#include <memory>
#include <string>

#include "data/json_fields.h"
#include "net/http_server.h"
#include "runtime/coordinator_state.h"
#include "runtime/job.h"
#include "runtime/status_files.h"

namespace tarn::runtime {

class Membership;

std::string RenderStatusPage(const data::Json& status);

class StatusPage {
 public:
  StatusPage(const JobConfig& job, ClusterState* state, const Membership& membership);
  ~StatusPage() { Stop(); }

  /// Serves the page on tarn.cluster.status-port.
  Status Start();
  void Stop();
  int port() const { return http_ ? http_->port() : 0; }
  /// The page's address; "" before Start.
  std::string StatusUrl() const;
  /// Queues cluster.json for writing (the state's lock held).
  void WriteClusterLocked();
  /// The writer of cluster.json and the coordinator's other status files.
  StatusFiles& files() { return files_; }

 private:
  data::Json ClusterJsonLocked() const;
  void ServeStatus(const net::HttpRequest& q, net::HttpResponse* a);

  const JobConfig& job_;
  ClusterState& s_;
  const Membership& membership_;
  std::unique_ptr<net::HttpServer> http_;
  StatusFiles files_;
};

}  // namespace tarn::runtime
