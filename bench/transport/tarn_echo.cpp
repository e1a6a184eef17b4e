// tarn side of bench/transport_rtt.py: the same unary echo over tarn's framed
// TCP transport (src/net): an RpcServer whose handler replies with the request
// payload, and one authenticated connection per client thread, each making
// RpcClient::Call with a deadline. The job secret comes from the environment
// (TARN_BENCH_SECRET), as a real job's does; TARN_BENCH_TLS=1 runs every
// connection under TLS keyed by it (tarn.cluster.tls).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "bench_common.h"
#include "net/connection.h"
#include "net/rpc.h"

namespace {

constexpr uint16_t kEchoType = 1;

std::string Secret() {
  const char* s = std::getenv("TARN_BENCH_SECRET");
  return s && *s ? s : "tarn-transport-bench";
}

tarn::net::ConnectionOptions Options() {
  tarn::net::ConnectionOptions o;
  o.max_message_bytes = 64 << 20;
  const char* tls = std::getenv("TARN_BENCH_TLS");
  o.tls = tls && std::string(tls) == "1";
  return o;
}

int Serve() {
  auto server =
      tarn::net::RpcServer::Start("127.0.0.1", 0, Secret(), Options(),
                                  [](const tarn::net::RpcServer::Request& request,
                                     std::shared_ptr<tarn::net::RpcServer::Responder> responder) {
                                    responder->Reply(request.payload);
                                  });
  if (!server.ok()) {
    std::fprintf(stderr, "tarn_echo: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("PORT %d\n", (*server)->port());
  std::fflush(stdout);
  while (true) std::this_thread::sleep_for(std::chrono::hours(1));  // until killed
}

class TarnCaller final : public bench::Caller {
 public:
  explicit TarnCaller(std::unique_ptr<tarn::net::Connection> c)
      : client_(std::move(c), /*retry_ms=*/10000) {}

  bool Call(const std::string& request, std::string* reply, std::string* error) override {
    auto r = client_.Call(kEchoType, request, tarn::net::Deadline::InMs(10000));
    if (!r.ok()) {
      *error = r.status().ToString();
      return false;
    }
    *reply = std::move(*r);
    return true;
  }

 private:
  tarn::net::RpcClient client_;
};

}  // namespace

int main(int argc, char** argv) {
  bench::Options o = bench::ParseOptions(argc, argv);
  if (o.mode == "server") return Serve();
  return bench::RunClients(o, "tarn", [&](int, std::string* error) {
    auto c =
        tarn::net::Dial("127.0.0.1", o.port, Secret(), Options(), tarn::net::Deadline::InMs(10000));
    if (!c.ok()) {
      *error = c.status().ToString();
      return std::unique_ptr<bench::Caller>();
    }
    return std::unique_ptr<bench::Caller>(std::make_unique<TarnCaller>(std::move(*c)));
  });
}
