// A structured access log: one JSON object per request and line, buffered
// and written by a background thread (every 200 ms, or when 256 KB are
// waiting), so a request never waits on the disk.
//
//   {"ts":"2024-05-01T12:00:00.123Z","remote":"127.0.0.1:50312","method":"POST",
//    "path":"/v1/models/income:predict","status":200,"version":3,"rows":1,
//    "bytes_in":87,"bytes_out":32,"latency_us":41,"error":"..."}
#pragma once

#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/status.h"

namespace tarn::serving {

struct AccessRecord {
  std::string_view remote, method, path;
  int status = 0;
  int64_t version = 0;  // 0: none
  int rows = 0;
  size_t bytes_in = 0, bytes_out = 0;
  int64_t latency_us = 0;
  std::string_view error;  // the error message of a 4xx/5xx
};

class AccessLog {
 public:
  // "-" is stderr; anything else a file opened for appending.
  static Result<std::unique_ptr<AccessLog>> Open(const std::string& path);
  ~AccessLog();  // flushes

  void Write(const AccessRecord& r);
  void Flush();

 private:
  AccessLog() = default;
  void Run();

  std::FILE* file_ = nullptr;
  bool owns_file_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  std::string writing_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tarn::serving
