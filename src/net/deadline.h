// Deadlines for network calls: an absolute point on the steady clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace tarn::net {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  static Deadline Never() { return Deadline(Clock::time_point::max()); }
  static Deadline In(std::chrono::milliseconds ms) { return Deadline(Clock::now() + ms); }
  static Deadline InMs(int64_t ms) { return In(std::chrono::milliseconds(ms)); }
  explicit Deadline(Clock::time_point at) : at_(at) {}

  bool never() const { return at_ == Clock::time_point::max(); }
  bool expired() const { return !never() && Clock::now() >= at_; }
  // Milliseconds left for poll(): -1 for never, 0 when expired.
  int PollMs() const;
  // Milliseconds left, capped to fit a u32 on the wire; 0 means none.
  uint32_t WireMs() const;
  Clock::time_point at() const { return at_; }
  Deadline Sooner(Deadline other) const { return other.at_ < at_ ? other : *this; }

 private:
  Clock::time_point at_;
};

}  // namespace tarn::net
