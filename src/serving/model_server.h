// `tarn serve`: the HTTP front of the VersionManager. Routes (see
// docs/SERVING.md):
//
//   TensorFlow Serving v1 REST
//     GET  /v1/models/{name}[/versions/{v}]            version status
//     GET  /v1/models/{name}[/versions/{v}]/metadata   signature and columns
//     POST /v1/models/{name}[/versions/{v}]:predict    scores (see predict_codec.h)
//   KServe v2 (Open Inference Protocol)
//     GET  /v2                                          server metadata
//     GET  /v2/health/live, /v2/health/ready
//     GET  /v2/models/{name}[/versions/{v}][/ready]     model metadata, readiness
//     POST /v2/models/{name}[/versions/{v}]/infer
//   GET  /metrics                                        Prometheus text
//
// With a token file (ModelServerOptions::token_file) every request needs
// "Authorization: Bearer <token>", or gets 401 with WWW-Authenticate: Bearer
// (counted in tarn_serving_auth_refused_total); the health routes
// (/v2/health/*, /v2/models/{name}[/versions/{v}]/ready) stay open when
// open_health is set. TLS is the HTTP server's (ModelServerOptions::http.tls).
//
// Every error is a JSON object {"error": "..."} with a 4xx status for what
// the client sent (400 malformed or wrong request, 404 unknown model,
// version or route, 405 wrong method, 413 body too large) and 503 while no
// version is loaded. Client data only ever selects among loaded versions; no
// path is built from it.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "net/http_server.h"
#include "serving/access_log.h"
#include "serving/metrics.h"
#include "serving/predict_codec.h"
#include "serving/token_auth.h"
#include "serving/version_manager.h"

namespace tarn::serving {

struct ModelServerOptions {
  std::string model_name = "default";
  VersionManager::Options versions;
  net::HttpServer::Options http;
  std::string access_log;  // "" none, "-" stderr, else a file
  DecodeOptions decode;
  // Bearer tokens, one a line ("": no authentication); see token_auth.h.
  std::string token_file;
  // Health routes answer without a token (for probes that carry none).
  bool open_health = true;
  // Benchmark aid: answer every request with a constant, without parsing or
  // scoring (the ceiling of the HTTP stack).
  bool constant_response = false;
};

class ModelServer {
 public:
  // Polls once (so a base folder with versions serves at once), starts the
  // poll thread and the HTTP server.
  static Result<std::unique_ptr<ModelServer>> Start(const ModelServerOptions& options);
  ~ModelServer();

  int port() const { return http_ ? http_->port() : 0; }
  bool tls() const { return http_ && http_->tls(); }
  VersionManager* versions() { return versions_.get(); }
  ServingMetrics* metrics() { return &metrics_; }
  // Rereads the token file now (SIGHUP); the old tokens stay when it fails.
  // Ok without a token file.
  Status ReloadTokens();
  // Graceful: stops accepting, finishes in-flight requests, stops polling,
  // flushes the access log. Idempotent.
  void Stop();

  // One request, without the network (the HTTP server calls this).
  void Handle(const net::HttpRequest& req, net::HttpResponse* resp);

 private:
  explicit ModelServer(const ModelServerOptions& options);

  struct Route;
  // Answers 401 for a request without (missing) or with a wrong bearer token.
  Endpoint Refuse(net::HttpResponse* resp, bool missing, std::string* error);
  Endpoint Dispatch(const net::HttpRequest& req, net::HttpResponse* resp, int64_t* version,
                    int* rows, std::string* error);

  ModelServerOptions options_;
  ServingMetrics metrics_;
  std::unique_ptr<VersionManager> versions_;
  std::unique_ptr<AccessLog> access_log_;
  std::unique_ptr<TokenAuth> auth_;
  std::unique_ptr<net::HttpServer> http_;
};

}  // namespace tarn::serving
