// How the nodes of a job reach each other: authenticated TCP between
// processes, or in-process connections when the whole job runs inside one
// process (the embedded backend). The runtime's code is the same for both.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "net/rpc.h"

namespace tarn::runtime {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual bool in_process() const = 0;
  // Starts serving; *address is what peers pass to Dial.
  virtual Result<std::shared_ptr<net::RpcServer>> Serve(const std::string& host,
                                                        const net::ConnectionOptions& options,
                                                        net::RpcServer::Handler handler,
                                                        std::string* address) = 0;
  // Connects (retrying until the deadline while the peer is not there yet).
  virtual Result<std::unique_ptr<net::RpcClient>> Dial(const std::string& address,
                                                       const net::ConnectionOptions& options,
                                                       int retry_ms, net::Deadline d) = 0;
};

// TCP; a host of "auto" listens on every interface and advertises HostName().
// `tls` (tarn.cluster.tls): every connection runs TLS keyed by the secret.
std::shared_ptr<Transport> MakeTcpTransport(const std::string& secret, bool tls);
std::string HostName();
std::shared_ptr<Transport> MakeInProcessTransport();

}  // namespace tarn::runtime
