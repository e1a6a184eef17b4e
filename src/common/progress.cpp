#include "common/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "common/strings.h"

namespace tarn {
namespace {
std::atomic<bool> g_enabled{true};
}

void Progress::SetEnabled(bool enabled) { g_enabled = enabled; }

Progress::Progress(std::string label, uint64_t total_bytes)
    : label_(std::move(label)),
      total_bytes_(total_bytes),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_),
      interactive_(::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() { Finish(); }

double Progress::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::Add(uint64_t rows, uint64_t bytes) {
  rows_ += rows;
  bytes_ += bytes;
  if (!interactive_ || !g_enabled) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200)) return;
  std::unique_lock<std::mutex> lock(draw_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  last_draw_ = now;
  Draw(false);
}

void Progress::Draw(bool final_line) {
  double secs = std::max(1e-9, ElapsedSeconds());
  uint64_t rows = rows_.load(), bytes = bytes_.load();
  char line[256];
  int n = std::snprintf(line, sizeof(line), "%s: %llu rows, %.0f rows/s, %s/s", label_.c_str(),
                        static_cast<unsigned long long>(rows), rows / secs,
                        FormatBytes(bytes / secs).c_str());
  if (!final_line && total_bytes_ > 0 && bytes > 0) {
    double frac = std::min(1.0, static_cast<double>(bytes) / total_bytes_);
    double eta = secs / frac - secs;
    std::snprintf(line + n, sizeof(line) - n, ", %.0f%%, ETA %s", frac * 100,
                  FormatDuration(eta).c_str());
  } else if (final_line) {
    std::snprintf(line + n, sizeof(line) - n, ", %s", FormatDuration(secs).c_str());
  }
  if (interactive_) {
    std::fprintf(stderr, "\r\033[K%s%s", line, final_line ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line);
  }
  std::fflush(stderr);
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(draw_mutex_);
  if (finished_) return;
  finished_ = true;
  if (g_enabled) Draw(true);
}

}  // namespace tarn
