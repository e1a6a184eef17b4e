#include "serving/access_log.h"

#include <cerrno>
#include <chrono>
#include <ctime>

#include "serving/json_reader.h"

namespace tarn::serving {

namespace {

constexpr size_t kFlushBytes = 256 * 1024;
constexpr size_t kMaxPendingBytes = 16 * 1024 * 1024;  // beyond this, lines are dropped

void AppendTimestamp(std::string* out) {
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  out->append(buf);
}

}  // namespace

Result<std::unique_ptr<AccessLog>> AccessLog::Open(const std::string& path) {
  std::unique_ptr<AccessLog> log(new AccessLog());
  if (path == "-") {
    log->file_ = stderr;
  } else {
    log->file_ = std::fopen(path.c_str(), "ae");
    if (!log->file_) return ErrnoError("open access log " + path, errno);
    log->owns_file_ = true;
  }
  log->thread_ = std::thread([l = log.get()] { l->Run(); });
  return log;
}

AccessLog::~AccessLog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (owns_file_ && file_) std::fclose(file_);
}

void AccessLog::Write(const AccessRecord& r) {
  // Built outside the lock in a per-thread buffer.
  thread_local std::string line;
  line.clear();
  line.append("{\"ts\":\"");
  AppendTimestamp(&line);
  line.append("\",\"remote\":");
  AppendJsonString(&line, r.remote);
  line.append(",\"method\":");
  AppendJsonString(&line, r.method);
  line.append(",\"path\":");
  AppendJsonString(&line, r.path.size() > 512 ? r.path.substr(0, 512) : r.path);
  line.append(",\"status\":");
  AppendJsonInt(&line, r.status);
  if (r.version > 0) {
    line.append(",\"version\":");
    AppendJsonInt(&line, r.version);
  }
  line.append(",\"rows\":");
  AppendJsonInt(&line, r.rows);
  line.append(",\"bytes_in\":");
  AppendJsonInt(&line, static_cast<int64_t>(r.bytes_in));
  line.append(",\"bytes_out\":");
  AppendJsonInt(&line, static_cast<int64_t>(r.bytes_out));
  line.append(",\"latency_us\":");
  AppendJsonInt(&line, r.latency_us);
  if (!r.error.empty()) {
    line.append(",\"error\":");
    AppendJsonString(&line, r.error.size() > 512 ? r.error.substr(0, 512) : r.error);
  }
  line.append("}\n");
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.size() > kMaxPendingBytes) return;  // the disk cannot keep up: drop
    pending_.append(line);
    wake = pending_.size() >= kFlushBytes;
  }
  if (wake) cv_.notify_one();
}

void AccessLog::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pending_.empty()) {
    std::fwrite(pending_.data(), 1, pending_.size(), file_);
    pending_.clear();
  }
  std::fflush(file_);
}

void AccessLog::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait_for(lock, std::chrono::milliseconds(200),
                 [this] { return stop_ || pending_.size() >= kFlushBytes; });
    writing_.swap(pending_);
    bool stopping = stop_;
    lock.unlock();
    if (!writing_.empty()) {
      std::fwrite(writing_.data(), 1, writing_.size(), file_);
      std::fflush(file_);
      writing_.clear();
    }
    lock.lock();
    if (stopping && pending_.empty()) break;
  }
}

}  // namespace tarn::serving
