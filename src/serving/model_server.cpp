#include "serving/model_server.h"

#include <chrono>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/json_fields.h"
#include "serving/request_body.h"

namespace tarn::serving {

namespace {

using data::Json;

constexpr const char* kConstantBody = "{\"predictions\": [[0.5]]}";
// Per-thread request buffers above this are released after the request.
constexpr size_t kKeepScratchBytes = 8 << 20;

void SetError(net::HttpResponse* resp, int status, const std::string& message, std::string* error) {
  resp->status = status;
  resp->content_type = "application/json";
  resp->body.clear();
  resp->body.append("{\"error\": ");
  AppendJsonString(&resp->body, message);
  resp->body.append("}");
  *error = message;
}

void SetJson(net::HttpResponse* resp, const Json& j, int status = 200) {
  resp->status = status;
  resp->content_type = "application/json";
  resp->body = j.dump(2);
}

std::string Quote(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s.size() > 200 ? s.substr(0, 200) : s);
  return out;
}

bool IsGet(const net::HttpRequest& req) { return req.method == "GET" || req.method == "HEAD"; }

// The routes a liveness or readiness probe asks: /v2/health/live|ready and
// /v2/models/{name}[/versions/{v}]/ready. They say only whether the server
// is up and has a version.
bool IsHealthPath(std::string_view path) {
  if (StartsWith(path, "/v2/health/")) return true;
  constexpr std::string_view kModels = "/v2/models/", kReady = "/ready";
  return StartsWith(path, kModels) && path.size() > kModels.size() + kReady.size() &&
         EndsWith(path, kReady);
}

// A version number from a URL segment (1..10^18), or 0.
int64_t ParseVersion(std::string_view s) {
  if (s.empty() || s.size() > 18) return 0;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string VersionList(const ServingState& state) {
  std::string out;
  for (const auto& v : state.versions) {
    if (!out.empty()) out += ", ";
    out += std::to_string(v->version());
  }
  return out.empty() ? "none" : out;
}

// The parts of /v1/models/... and /v2/models/... paths.
struct ModelPath {
  std::string_view name;
  int64_t version = 0;    // 0: not given
  std::string_view tail;  // what follows name[/versions/v], without the '/'
  std::string_view verb;  // v1 ":predict" -> "predict"
  bool bad_version = false;
  bool labels = false;
};

ModelPath SplitModelPath(std::string_view rest, bool v1) {
  ModelPath p;
  if (v1) {
    size_t colon = rest.rfind(':');
    size_t slash = rest.rfind('/');
    if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
      p.verb = rest.substr(colon + 1);
      rest = rest.substr(0, colon);
    }
  }
  size_t slash = rest.find('/');
  p.name = rest.substr(0, slash);
  rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  if (StartsWith(rest, "versions/") || rest == "versions") {
    rest.remove_prefix(rest.size() >= 9 ? 9 : rest.size());
    size_t s2 = rest.find('/');
    p.version = ParseVersion(rest.substr(0, s2));
    if (p.version == 0) p.bad_version = true;
    rest = s2 == std::string_view::npos ? std::string_view() : rest.substr(s2 + 1);
  } else if (StartsWith(rest, "labels/")) {
    p.labels = true;
  }
  p.tail = rest;
  return p;
}

}  // namespace

ModelServer::ModelServer(const ModelServerOptions& options) : options_(options) {}

ModelServer::~ModelServer() { Stop(); }

Result<std::unique_ptr<ModelServer>> ModelServer::Start(const ModelServerOptions& options) {
  if (options.model_name.empty() || options.model_name.find('/') != std::string::npos ||
      options.model_name.find(':') != std::string::npos) {
    return InvalidArgument("model name '" + options.model_name +
                           "' must be non-empty without '/' or ':'");
  }
  std::unique_ptr<ModelServer> server(new ModelServer(options));
  if (!options.access_log.empty()) {
    TARN_ASSIGN_OR_RETURN(server->access_log_, AccessLog::Open(options.access_log));
  }
  if (!options.token_file.empty()) {
    TARN_ASSIGN_OR_RETURN(server->auth_, TokenAuth::Open(options.token_file));
  }
  VersionManager::Options vo = options.versions;
  vo.metrics = &server->metrics_;
  server->versions_ = std::make_unique<VersionManager>(vo);
  if (!options.constant_response) {
    server->versions_->PollOnce();
    server->versions_->Start();
  }
  ModelServer* self = server.get();
  net::HttpServer::Options http_options = options.http;
  http_options.on_tls_failure = [self](const std::string&) { self->metrics_.RecordTlsFailure(); };
  auto http = net::HttpServer::Start(
      http_options,
      [self](const net::HttpRequest& req, net::HttpResponse* resp) { self->Handle(req, resp); });
  if (!http.ok()) {
    server->versions_->Stop();
    return http.status();
  }
  server->http_ = std::move(*http);
  return server;
}

void ModelServer::Stop() {
  if (http_) http_->Stop();
  if (versions_) versions_->Stop();
  if (access_log_) access_log_->Flush();
}

Status ModelServer::ReloadTokens() { return auth_ ? auth_->Reload(true) : Status::Ok(); }

void ModelServer::Handle(const net::HttpRequest& req, net::HttpResponse* resp) {
  TokenAuth::Verdict verdict = TokenAuth::Verdict::kAllowed;
  if (auth_ && !(options_.open_health && IsHealthPath(req.path))) {
    verdict = auth_->Check(req.Header("authorization"));
  }
  if (options_.constant_response && verdict == TokenAuth::Verdict::kAllowed) {
    resp->body.assign(kConstantBody);
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  thread_local std::string error;
  error.clear();
  int64_t version = 0;
  int rows = 0;
  Endpoint endpoint = verdict == TokenAuth::Verdict::kAllowed
                          ? Dispatch(req, resp, &version, &rows, &error)
                          : Refuse(resp, verdict == TokenAuth::Verdict::kMissing, &error);
  auto t1 = std::chrono::steady_clock::now();
  double secs = std::chrono::duration<double>(t1 - t0).count();
  metrics_.Record(endpoint, resp->status, secs, rows);
  if (access_log_) {
    AccessRecord r;
    r.remote = req.remote;
    r.method = req.method;
    r.path = req.path;
    r.status = resp->status;
    r.version = version;
    r.rows = rows;
    r.bytes_in = req.body.size();
    r.bytes_out = resp->body.size();
    r.latency_us = std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count();
    r.error = error;
    access_log_->Write(r);
  }
}

Endpoint ModelServer::Refuse(net::HttpResponse* resp, bool missing, std::string* error) {
  metrics_.RecordAuthRefused(missing);
  SetError(resp, 401,
           missing ? "this server needs an 'Authorization: Bearer <token>' header"
                   : "the bearer token is not valid here",
           error);
  // RFC 6750: a request without credentials gets the bare challenge.
  resp->headers.emplace_back(
      "WWW-Authenticate",
      missing ? "Bearer realm=\"tarn\"" : "Bearer realm=\"tarn\", error=\"invalid_token\"");
  return Endpoint::kOther;
}

Endpoint ModelServer::Dispatch(const net::HttpRequest& req, net::HttpResponse* resp,
                               int64_t* version_out, int* rows_out, std::string* error) {
  const std::string& path = req.path;
  const std::string& name = options_.model_name;
  auto method_not_allowed = [&](const char* allowed, Endpoint e) {
    resp->headers.emplace_back("Allow", allowed);
    SetError(resp, 405, req.method + " is not allowed on " + path + " (use " + allowed + ")",
             error);
    return e;
  };

  if (path == "/metrics") {
    if (!IsGet(req)) return method_not_allowed("GET", Endpoint::kMetrics);
    auto state = versions_->state();
    std::vector<int64_t> loaded;
    for (const auto& v : state->versions) loaded.push_back(v->version());
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    resp->body = metrics_.Render(name, loaded);
    return Endpoint::kMetrics;
  }

  const bool v1 = StartsWith(path, "/v1/models/");
  const bool v2 = StartsWith(path, "/v2/models/");
  if (path == "/v2" || path == "/v2/") {
    if (!IsGet(req)) return method_not_allowed("GET", Endpoint::kMetadata);
    SetJson(resp, Json{{"name", "tarn"},
                       {"version", "0.1.0"},
                       {"extensions", Json::array({"binary_tensor_data"})}});
    return Endpoint::kMetadata;
  }
  if (path == "/v2/health/live") {
    if (!IsGet(req)) return method_not_allowed("GET", Endpoint::kHealth);
    SetJson(resp, Json{{"live", true}});
    return Endpoint::kHealth;
  }
  if (path == "/v2/health/ready") {
    if (!IsGet(req)) return method_not_allowed("GET", Endpoint::kHealth);
    bool ready = versions_->state()->newest() != nullptr;
    SetJson(resp, Json{{"ready", ready}}, ready ? 200 : 503);
    return Endpoint::kHealth;
  }
  if (!v1 && !v2) {
    SetError(resp, 404,
             "no such endpoint: " + path +
                 " (tarn serves /v1/models/{name}[:predict], /v2/models/{name}[/infer], "
                 "/v2/health/{live,ready} and /metrics)",
             error);
    return Endpoint::kOther;
  }

  ModelPath mp = SplitModelPath(std::string_view(path).substr(11), v1);
  // The endpoint, for metrics, from the shape of the path alone.
  Endpoint endpoint = Endpoint::kStatus;
  if (v1 && !mp.verb.empty()) endpoint = Endpoint::kPredict;
  if (v2 && mp.tail == "infer") endpoint = Endpoint::kInfer;
  if ((v1 && mp.tail == "metadata") || (v2 && mp.tail.empty())) endpoint = Endpoint::kMetadata;
  if (v2 && mp.tail == "ready") endpoint = Endpoint::kHealth;

  if (mp.name != name) {
    SetError(resp, 404,
             "model " + Quote(mp.name) + " is not served here; this server serves " + Quote(name),
             error);
    return endpoint;
  }
  if (mp.labels) {
    SetError(resp, 400, "version labels are not supported; use /versions/{number}", error);
    return endpoint;
  }
  if (mp.bad_version) {
    SetError(resp, 400, "the version in " + path + " must be a positive integer", error);
    return endpoint;
  }

  auto state = versions_->state();
  const Servable* servable = nullptr;
  auto pick = [&]() -> bool {
    if (mp.version > 0) {
      servable = state->Find(mp.version);
      if (!servable) {
        SetError(resp, 404,
                 "version " + std::to_string(mp.version) + " of model " + Quote(name) +
                     " is not loaded (loaded: " + VersionList(*state) + ")",
                 error);
        return false;
      }
    } else {
      servable = state->newest();
      if (!servable) {
        SetError(
            resp, 503,
            "model " + Quote(name) + " has no version loaded yet (see GET /v1/models/" + name + ")",
            error);
        return false;
      }
    }
    *version_out = servable->version();
    return true;
  };

  // Scoring.
  if (endpoint == Endpoint::kPredict || endpoint == Endpoint::kInfer) {
    if (v1 && mp.verb != "predict") {
      if (mp.verb == "classify" || mp.verb == "regress") {
        SetError(resp, 400,
                 ":" + std::string(mp.verb) + " is not supported: a tarn model answers :predict",
                 error);
      } else {
        SetError(resp, 404, "unknown method :" + std::string(mp.verb) + " (use :predict)", error);
      }
      return endpoint;
    }
    if (!mp.tail.empty() && v1) {
      SetError(resp, 404, "no such endpoint: " + path, error);
      return endpoint;
    }
    if (req.method != "POST") return method_not_allowed("POST", endpoint);
    if (!pick()) return endpoint;
    thread_local CodecScratch sc;
    thread_local std::string inflated;  // a compressed body, inflated
    // A large body's buffer is not kept for the thread's next request, on every path.
    struct TrimInflated {
      ~TrimInflated() {
        if (inflated.capacity() > kKeepScratchBytes) std::string().swap(inflated);
      }
    } trim_inflated;
    RequestBody body;
    int body_status = 400;
    Status decoded =
        DecodeRequestBody(req, endpoint == Endpoint::kInfer, options_.http.max_body_bytes,
                          &inflated, &body, &body_status);
    if (!decoded.ok()) {
      SetError(resp, body_status, decoded.message(), error);
      return endpoint;
    }
    if (body.json.empty()) {
      SetError(resp, 400, "empty request body: send a JSON object", error);
      return endpoint;
    }
    if (!sc.doc.Parse(body.json)) {
      std::string message = sc.doc.error();
      if (endpoint == Endpoint::kInfer && req.Header("inference-header-content-length").empty() &&
          body.json.find('\0') != std::string_view::npos) {
        message += " (binary tensor data needs an Inference-Header-Content-Length header)";
      }
      SetError(resp, 400, message, error);
      sc.doc.Trim(kKeepScratchBytes);
      return endpoint;
    }
    Status s;
    V1Format format = V1Format::kRow;
    V2Request v2;
    if (endpoint == Endpoint::kPredict) {
      s = DecodeV1Predict(*servable, options_.decode, &sc, &format);
    } else {
      s = DecodeV2Infer(*servable, options_.decode, body.binary, &sc, &v2);
    }
    if (!s.ok()) {
      SetError(resp, 400, s.message(), error);
    } else {
      sc.scores.resize(static_cast<size_t>(sc.n));
      servable->Score(sc.rows.data(), sc.n, sc.scores.data());
      *rows_out = sc.n;
      if (endpoint == Endpoint::kPredict) {
        EncodeV1Predict(sc, format, &resp->body);
      } else {
        size_t json_bytes = 0;
        EncodeV2Infer(sc, name, servable->version(), v2, &resp->body, &json_bytes);
        if (v2.binary_output) {
          resp->content_type = "application/octet-stream";
          resp->headers.emplace_back("Inference-Header-Content-Length", std::to_string(json_bytes));
        }
      }
      resp->headers.emplace_back("X-Model-Version", std::to_string(servable->version()));
    }
    sc.doc.Trim(kKeepScratchBytes);
    sc.Trim(kKeepScratchBytes);
    return endpoint;
  }

  if (!IsGet(req)) return method_not_allowed("GET", endpoint);

  // v1 status: GET /v1/models/{name}[/versions/{v}]
  if (v1 && mp.tail.empty()) {
    Json list = Json::array();
    for (const auto& st : versions_->Statuses()) {
      if (mp.version > 0 && st.version != mp.version) continue;
      list.push_back(
          {{"version", std::to_string(st.version)},
           {"state", st.state},
           {"status",
            {{"error_code", st.error.empty() ? "OK" : "UNKNOWN"}, {"error_message", st.error}}}});
    }
    if (mp.version > 0 && list.empty()) {
      SetError(resp, 404,
               "version " + std::to_string(mp.version) + " of model " + Quote(name) +
                   " is not known (loaded: " + VersionList(*state) + ")",
               error);
      return endpoint;
    }
    SetJson(resp, Json{{"model_version_status", list}});
    return endpoint;
  }
  // v2 readiness: GET /v2/models/{name}[/versions/{v}]/ready
  if (v2 && mp.tail == "ready") {
    bool ready = mp.version > 0 ? state->Find(mp.version) != nullptr : state->newest() != nullptr;
    SetJson(resp, Json{{"name", name}, {"ready", ready}}, ready ? 200 : 503);
    return endpoint;
  }
  if (!((v1 && mp.tail == "metadata") || (v2 && mp.tail.empty()))) {
    SetError(resp, 404, "no such endpoint: " + path, error);
    return Endpoint::kOther;
  }
  if (!pick()) return endpoint;
  const model::ModelFile& first = servable->first_model();
  Json columns = Json::array();
  for (const auto& c : servable->columns()) {
    columns.push_back({{"name", c.name}, {"type", c.type}});
  }
  Json models = Json::array();
  for (const auto& p : servable->model_paths()) models.push_back(BaseName(p));
  if (v1) {
    // TF Serving's TensorInfo: dtype, shape ("-1": any number of rows), name.
    auto tensor = [](const char* dtype, std::vector<int> dims, const std::string& tensor_name) {
      Json dim = Json::array();
      for (int d : dims) dim.push_back({{"size", std::to_string(d)}, {"name", ""}});
      return Json{{"dtype", dtype},
                  {"tensor_shape", {{"dim", dim}, {"unknown_rank", false}}},
                  {"name", tensor_name}};
    };
    const Json outputs = {{"score", tensor("DT_DOUBLE", {-1, 1}, "score")}};
    // serving_default: one [-1] input per raw column, what {"instances":
    // [{"col": v, ...}]} and {"inputs": {"col": [...]}} give.
    Json raw_inputs = Json::object();
    for (const auto& c : servable->columns()) {
      raw_inputs[c.name] = tensor(c.numeric ? "DT_DOUBLE" : "DT_STRING", {-1}, c.name);
    }
    Json signatures = {{kDefaultSignature,
                        {{"inputs", raw_inputs},
                         {"outputs", outputs},
                         {"method_name", "tensorflow/serving/predict"}}}};
    if (servable->vector_width() > 0) {
      signatures[kNormalizedSignature] = {
          {"inputs",
           {{kVectorInput, tensor("DT_FLOAT", {-1, servable->vector_width()}, kVectorInput)}}},
          {"outputs", outputs},
          {"method_name", "tensorflow/serving/predict"}};
    }
    SetJson(resp, Json{{"model_spec",
                        {{"name", name},
                         {"signature_name", ""},
                         {"version", std::to_string(servable->version())}}},
                       {"metadata", {{"signature_def", {{"signature_def", signatures}}}}},
                       {"tarn",
                        {{"columns", columns},
                         {"ignoredColumns", servable->ignored_columns()},
                         {"vectorWidth", servable->vector_width()},
                         {"vectorNames", servable->vector_names()},
                         {"normType", first.norm_type},
                         {"missingValues", first.missing_values},
                         {"models", models},
                         {"training", first.training},
                         {"score",
                          "the mean of the models' scores (tarn eval's \"mean\", before "
                          "evals.scoreScale)"}}}});
    return endpoint;
  }
  Json inputs = Json::array();
  for (const auto& c : servable->columns()) {
    inputs.push_back({{"name", c.name},
                      {"datatype", c.numeric ? "FP64" : "BYTES"},
                      {"shape", Json::array({-1})}});
  }
  Json versions = Json::array();
  for (const auto& v : state->versions) versions.push_back(std::to_string(v->version()));
  Json meta = {
      {"name", name},
      {"versions", versions},
      {"platform", "tarn"},
      {"inputs", inputs},
      {"outputs",
       Json::array({{{"name", "score"}, {"datatype", "FP64"}, {"shape", Json::array({-1, 1})}}})}};
  if (servable->vector_width() > 0) {
    meta["parameters"] = {
        {"normalized_input",
         {{"name", "input"}, {"datatype", "FP32"}, {"shape", {-1, servable->vector_width()}}}}};
  }
  SetJson(resp, meta);
  return endpoint;
}

}  // namespace tarn::serving
