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

Result<data::Json> ParseJsonPayload(const std::string& payload, const char* what) {
  data::Json j = data::Json::parse(payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Corrupt(std::string("malformed ") + what + " message (not a JSON object)");
  }
  return j;
}

Result<data::Json> CallJson(net::RpcClient& client, uint16_t type, const data::Json& request,
                            net::Deadline d) {
  TARN_ASSIGN_OR_RETURN(std::string reply, client.Call(type, request.dump(), d));
  return ParseJsonPayload(reply, "reply");
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
