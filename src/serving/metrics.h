// Counters and histograms for /metrics (Prometheus text exposition format
// 0.0.4). Updates are relaxed atomic adds: no lock, no allocation.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tarn::serving {

// A histogram over fixed upper bounds (plus +Inf).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  // Appends the _bucket, _sum and _count lines of metric `name` with the
  // label text `labels` ("" or `endpoint="predict"`).
  void Render(std::string* out, const std::string& name, const std::string& labels) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

enum class Endpoint : int {
  kPredict = 0,  // POST /v1/models/{name}[/versions/{v}]:predict
  kInfer,        // POST /v2/models/{name}[/versions/{v}]/infer
  kStatus,       // GET /v1/models/{name}, /v2/models/{name}
  kMetadata,     // GET /v1/models/{name}/metadata, /v2
  kHealth,       // /v2/health/*, /v2/models/{name}/ready
  kMetrics,      // GET /metrics
  kOther,        // anything else (404s, 405s)
  kCount
};
const char* EndpointName(Endpoint e);

class ServingMetrics {
 public:
  ServingMetrics();

  // One answered request: its endpoint, HTTP status, handler latency and the
  // rows it scored.
  void Record(Endpoint endpoint, int status, double seconds, int rows);
  void RecordLoad(bool ok) { (ok ? loads_ok_ : loads_failed_).fetch_add(1, kRelaxed); }
  // One finished scan of the model base (after any loads it made).
  void RecordPoll() { polls_.fetch_add(1, kRelaxed); }
  // A request refused with 401: no bearer token (missing) or a wrong one.
  void RecordAuthRefused(bool missing) {
    (missing ? auth_missing_ : auth_invalid_).fetch_add(1, kRelaxed);
  }
  // A connection whose TLS handshake failed (plain HTTP, no client certificate, ...).
  void RecordTlsFailure() { tls_failures_.fetch_add(1, kRelaxed); }
  Histogram* batch_sizes() { return &batch_sizes_; }

  // The full exposition text. `model` names the served model; `versions`
  // lists the loaded version numbers (newest first).
  std::string Render(const std::string& model, const std::vector<int64_t>& versions) const;

 private:
  static constexpr auto kRelaxed = std::memory_order_relaxed;
  // Status codes with their own counter; the rest count as "other".
  static constexpr std::array<int, 13> kCodes = {200, 400, 401, 404, 405, 408, 411,
                                                 413, 415, 422, 500, 503, 0};
  static int CodeSlot(int status);

  std::atomic<uint64_t> requests_[static_cast<int>(Endpoint::kCount)][kCodes.size()];
  std::vector<std::unique_ptr<Histogram>> latency_;  // per endpoint
  Histogram batch_sizes_;
  std::atomic<uint64_t> rows_{0};
  std::atomic<uint64_t> loads_ok_{0}, loads_failed_{0};
  std::atomic<uint64_t> polls_{0};
  std::atomic<uint64_t> auth_missing_{0}, auth_invalid_{0};
  std::atomic<uint64_t> tls_failures_{0};
  double start_time_;  // seconds since the epoch
};

}  // namespace tarn::serving
