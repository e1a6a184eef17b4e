#include "net/deadline.h"

#include <algorithm>

namespace tarn::net {

int Deadline::PollMs() const {
  if (never()) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

uint32_t Deadline::WireMs() const {
  if (never()) return 0;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
  return static_cast<uint32_t>(std::clamp<int64_t>(left, 1, UINT32_MAX));
}

}  // namespace tarn::net
