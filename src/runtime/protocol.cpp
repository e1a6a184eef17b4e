#include "runtime/protocol.h"

#include <unistd.h>

#include <thread>

namespace tarn::runtime {

net::ConnectionOptions ConnectionOptionsFor(const JobConfig& job) {
  net::ConnectionOptions o;
  o.max_message_bytes = static_cast<size_t>(job.max_message_bytes);
  o.drop_rate = job.test_drop_rate;
  o.delay_ms = job.test_delay_ms;
  o.fault_seed = static_cast<uint64_t>(job.seed) ^ static_cast<uint64_t>(::getpid());
  return o;
}

Result<std::unique_ptr<net::RpcClient>> DialRpc(const std::string& address,
                                                const std::string& secret,
                                                const net::ConnectionOptions& options, int retry_ms,
                                                net::Deadline d) {
  std::string host;
  int port = 0;
  TARN_RETURN_IF_ERROR(net::SplitHostPort(address, &host, &port));
  while (true) {
    auto c = net::Dial(host, port, secret, options, d);
    if (c.ok()) return std::make_unique<net::RpcClient>(std::move(*c), retry_ms);
    // A wrong secret will not get better by retrying.
    if (c.status().code() == StatusCode::kPermissionDenied || d.expired()) {
      return c.status().WithContext("connecting to " + address);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::pair<size_t, size_t> SliceRange(size_t count, int parts, int index) {
  const size_t p = static_cast<size_t>(parts), i = static_cast<size_t>(index);
  const size_t base = count / p, extra = count % p;
  const size_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

}  // namespace tarn::runtime
