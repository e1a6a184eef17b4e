#include "runtime/transport.h"

#include <unistd.h>

#include <map>
#include <mutex>
#include <thread>

#include "runtime/protocol.h"

namespace tarn::runtime {

std::string HostName() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0 || !name[0]) return "localhost";
  return name;
}

namespace {

class TcpTransport final : public Transport {
 public:
  TcpTransport(std::string secret, bool tls) : secret_(std::move(secret)), tls_(tls) {}
  bool in_process() const override { return false; }

  Result<std::shared_ptr<net::RpcServer>> Serve(const std::string& host,
                                                const net::ConnectionOptions& options,
                                                net::RpcServer::Handler handler,
                                                std::string* address) override {
    // "auto": every interface, advertised by this machine's host name.
    const bool any = host == "auto";
    TARN_ASSIGN_OR_RETURN(auto server, net::RpcServer::Start(any ? "0.0.0.0" : host, 0, secret_,
                                                             WithTls(options), std::move(handler)));
    *address = (any ? HostName() : host) + ":" + std::to_string(server->port());
    return std::shared_ptr<net::RpcServer>(std::move(server));
  }

  Result<std::unique_ptr<net::RpcClient>> Dial(const std::string& address,
                                               const net::ConnectionOptions& options, int retry_ms,
                                               net::Deadline d) override {
    return DialRpc(address, secret_, WithTls(options), retry_ms, d);
  }

 private:
  net::ConnectionOptions WithTls(net::ConnectionOptions o) const {
    o.tls = tls_;
    return o;
  }

  std::string secret_;
  bool tls_;
};

class InProcessTransport final : public Transport {
 public:
  bool in_process() const override { return true; }

  Result<std::shared_ptr<net::RpcServer>> Serve(const std::string&, const net::ConnectionOptions&,
                                                net::RpcServer::Handler handler,
                                                std::string* address) override {
    std::shared_ptr<net::RpcServer> server = net::RpcServer::StartInProcess(std::move(handler));
    std::lock_guard<std::mutex> lock(mu_);
    *address = "inproc:" + std::to_string(next_++);
    servers_[*address] = server;
    return server;
  }

  Result<std::unique_ptr<net::RpcClient>> Dial(const std::string& address,
                                               const net::ConnectionOptions& options, int retry_ms,
                                               net::Deadline d) override {
    while (true) {
      std::shared_ptr<net::RpcServer> server;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = servers_.find(address);
        if (it != servers_.end()) server = it->second.lock();
      }
      if (server) {
        auto pair = net::InProcessPair(options, address);
        server->Serve(std::move(pair.b));
        return std::make_unique<net::RpcClient>(std::move(pair.a), retry_ms);
      }
      if (d.expired()) return Unavailable("nothing serves " + address + " in this process");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<net::RpcServer>> servers_;
  int next_ = 1;
};

}  // namespace

std::shared_ptr<Transport> MakeTcpTransport(const std::string& secret, bool tls) {
  return std::make_shared<TcpTransport>(secret, tls);
}

std::shared_ptr<Transport> MakeInProcessTransport() {
  return std::make_shared<InProcessTransport>();
}

}  // namespace tarn::runtime
