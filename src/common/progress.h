// Progress of a long step. On a terminal it redraws one line (rows/s, percent,
// ETA) at most a few times a second; otherwise it prints one summary line when
// the step finishes, so logs stay readable.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace tarn {

class Progress {
 public:
  // `total_bytes` may be 0 when unknown (no percent or ETA then).
  Progress(std::string label, uint64_t total_bytes);
  ~Progress();

  // Thread-safe; cheap enough to call once per chunk.
  void Add(uint64_t rows, uint64_t bytes);
  // Prints the summary line (or finishes the terminal line).
  void Finish();
  uint64_t rows() const { return rows_.load(); }
  double ElapsedSeconds() const;

  // Tests and non-interactive callers can silence all output.
  static void SetEnabled(bool enabled);

 private:
  void Draw(bool final_line);

  std::string label_;
  uint64_t total_bytes_;
  std::atomic<uint64_t> rows_{0};
  std::atomic<uint64_t> bytes_{0};
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex draw_mutex_;
  bool interactive_;
  bool finished_ = false;
};

}  // namespace tarn
