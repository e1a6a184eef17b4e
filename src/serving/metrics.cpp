#include "serving/metrics.h"

#include <chrono>

#include "serving/json_reader.h"

namespace tarn::serving {

namespace {

void AppendDouble(std::string* out, double v) { AppendJsonNumber(out, v); }

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  double cur = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

void Histogram::Render(std::string* out, const std::string& name, const std::string& labels) const {
  uint64_t cumulative = 0;
  const std::string sep = labels.empty() ? "" : ",";
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    *out += name + "_bucket{" + labels + sep + "le=\"";
    if (i == bounds_.size()) {
      *out += "+Inf";
    } else {
      AppendDouble(out, bounds_[i]);
    }
    *out += "\"} " + std::to_string(cumulative) + "\n";
  }
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  *out += name + "_sum" + braces + " ";
  AppendDouble(out, sum_.load(std::memory_order_relaxed));
  *out += "\n" + name + "_count" + braces + " " + std::to_string(count()) + "\n";
}

const char* EndpointName(Endpoint e) {
  switch (e) {
    case Endpoint::kPredict:
      return "predict";
    case Endpoint::kInfer:
      return "infer";
    case Endpoint::kStatus:
      return "status";
    case Endpoint::kMetadata:
      return "metadata";
    case Endpoint::kHealth:
      return "health";
    case Endpoint::kMetrics:
      return "metrics";
    case Endpoint::kOther:
      return "other";
    case Endpoint::kCount:
      break;
  }
  return "other";
}

ServingMetrics::ServingMetrics()
    : batch_sizes_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}),
      start_time_(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                      .count()) {
  for (auto& row : requests_)
    for (auto& c : row) c.store(0);
  const std::vector<double> bounds = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                      0.025,   0.05,   0.1,     0.25,   0.5,   1,      2.5};
  for (int i = 0; i < static_cast<int>(Endpoint::kCount); ++i) {
    latency_.push_back(std::make_unique<Histogram>(bounds));
  }
}

int ServingMetrics::CodeSlot(int status) {
  for (size_t i = 0; i + 1 < kCodes.size(); ++i)
    if (kCodes[i] == status) return static_cast<int>(i);
  return static_cast<int>(kCodes.size()) - 1;
}

void ServingMetrics::Record(Endpoint endpoint, int status, double seconds, int rows) {
  const int e = static_cast<int>(endpoint);
  requests_[e][CodeSlot(status)].fetch_add(1, kRelaxed);
  latency_[e]->Observe(seconds);
  if (rows > 0 && status == 200) rows_.fetch_add(static_cast<uint64_t>(rows), kRelaxed);
}

std::string ServingMetrics::Render(const std::string& model,
                                   const std::vector<int64_t>& versions) const {
  std::string out;
  out.reserve(8192);
  std::string model_label;
  AppendJsonString(&model_label, model);  // a quoted, escaped label value
  model_label = "model=" + model_label;

  out += "# HELP tarn_serving_requests_total HTTP requests answered, by endpoint and status.\n";
  out += "# TYPE tarn_serving_requests_total counter\n";
  for (int e = 0; e < static_cast<int>(Endpoint::kCount); ++e) {
    for (size_t c = 0; c < kCodes.size(); ++c) {
      uint64_t n = requests_[e][c].load(kRelaxed);
      if (n == 0 && c != 0) continue;  // always show the 200 line
      out += "tarn_serving_requests_total{endpoint=\"";
      out += EndpointName(static_cast<Endpoint>(e));
      out += "\",code=\"";
      out += kCodes[c] == 0 ? std::string("other") : std::to_string(kCodes[c]);
      out += "\"} " + std::to_string(n) + "\n";
    }
  }
  out += "# HELP tarn_serving_request_errors_total Requests answered with a 4xx or 5xx status.\n";
  out += "# TYPE tarn_serving_request_errors_total counter\n";
  for (int e = 0; e < static_cast<int>(Endpoint::kCount); ++e) {
    uint64_t client = 0, server = 0;
    for (size_t c = 0; c < kCodes.size(); ++c) {
      uint64_t n = requests_[e][c].load(kRelaxed);
      if (kCodes[c] >= 400 && kCodes[c] < 500) client += n;
      if (kCodes[c] >= 500 || kCodes[c] == 0) server += n;
    }
    std::string ep = EndpointName(static_cast<Endpoint>(e));
    out += "tarn_serving_request_errors_total{endpoint=\"" + ep + "\",class=\"4xx\"} " +
           std::to_string(client) + "\n";
    out += "tarn_serving_request_errors_total{endpoint=\"" + ep + "\",class=\"5xx\"} " +
           std::to_string(server) + "\n";
  }
  out += "# HELP tarn_serving_request_duration_seconds Time in the handler per request.\n";
  out += "# TYPE tarn_serving_request_duration_seconds histogram\n";
  for (int e = 0; e < static_cast<int>(Endpoint::kCount); ++e) {
    if (latency_[e]->count() == 0 && e != 0) continue;
    latency_[e]->Render(&out, "tarn_serving_request_duration_seconds",
                        std::string("endpoint=\"") + EndpointName(static_cast<Endpoint>(e)) + "\"");
  }
  out += "# HELP tarn_serving_batch_size Rows per network call (batched requests).\n";
  out += "# TYPE tarn_serving_batch_size histogram\n";
  batch_sizes_.Render(&out, "tarn_serving_batch_size", "");
  out += "# HELP tarn_serving_predictions_total Rows scored.\n";
  out += "# TYPE tarn_serving_predictions_total counter\n";
  out += "tarn_serving_predictions_total " + std::to_string(rows_.load(kRelaxed)) + "\n";
  out += "# HELP tarn_serving_model_version Newest loaded version (0: none).\n";
  out += "# TYPE tarn_serving_model_version gauge\n";
  out += "tarn_serving_model_version{" + model_label + "} " +
         std::to_string(versions.empty() ? 0 : versions.front()) + "\n";
  out += "# HELP tarn_serving_loaded_versions Versions loaded and served.\n";
  out += "# TYPE tarn_serving_loaded_versions gauge\n";
  out +=
      "tarn_serving_loaded_versions{" + model_label + "} " + std::to_string(versions.size()) + "\n";
  out += "# HELP tarn_serving_version_loads_total Version loads, by result.\n";
  out += "# TYPE tarn_serving_version_loads_total counter\n";
  out += "tarn_serving_version_loads_total{result=\"ok\"} " +
         std::to_string(loads_ok_.load(kRelaxed)) + "\n";
  out += "tarn_serving_version_loads_total{result=\"failed\"} " +
         std::to_string(loads_failed_.load(kRelaxed)) + "\n";
  out += "# HELP tarn_serving_polls_total Finished scans of the model base for new versions.\n";
  out += "# TYPE tarn_serving_polls_total counter\n";
  out += "tarn_serving_polls_total " + std::to_string(polls_.load(kRelaxed)) + "\n";
  out += "# HELP tarn_serving_auth_refused_total Requests refused with 401, by reason.\n";
  out += "# TYPE tarn_serving_auth_refused_total counter\n";
  out += "tarn_serving_auth_refused_total{reason=\"missing_token\"} " +
         std::to_string(auth_missing_.load(kRelaxed)) + "\n";
  out += "tarn_serving_auth_refused_total{reason=\"invalid_token\"} " +
         std::to_string(auth_invalid_.load(kRelaxed)) + "\n";
  out +=
      "# HELP tarn_serving_tls_handshake_failures_total Connections closed because their TLS "
      "handshake failed.\n";
  out += "# TYPE tarn_serving_tls_handshake_failures_total counter\n";
  out += "tarn_serving_tls_handshake_failures_total " +
         std::to_string(tls_failures_.load(kRelaxed)) + "\n";
  out += "# HELP tarn_serving_start_time_seconds When the server started (Unix time).\n";
  out += "# TYPE tarn_serving_start_time_seconds gauge\n";
  out += "tarn_serving_start_time_seconds ";
  AppendDouble(&out, start_time_);
  out += "\n";
  return out;
}

}  // namespace tarn::serving
