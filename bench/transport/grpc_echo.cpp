// gRPC side of bench/transport_rtt.py: a unary Echo call over plaintext HTTP/2
// on loopback. The server uses gRPC's callback API (the one gRPC recommends
// for performance) with an inline reactor, or with --api sync the synchronous
// API and gRPC's thread pool; each client thread has its own
// channel (a local subchannel pool, so its own TCP connection) and makes
// blocking calls on a stub, each with a deadline, as tarn's RpcClient does.
// HTTP/2 settings are gRPC's defaults: an 8 MiB stream window and 16 MiB
// frames on both ends measured no better for 64 KiB and 1 MiB payloads.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <string>

#include "bench_common.h"
#include "echo.grpc.pb.h"

namespace {

constexpr int kMaxMessageBytes = 64 << 20;

class EchoService final : public tarnbench::Echo::CallbackService {
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const tarnbench::Blob* request, tarnbench::Blob* reply) override {
    reply->set_data(request->data());
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// The synchronous API: gRPC's own thread pool runs the handler.
class SyncEchoService final : public tarnbench::Echo::Service {
  grpc::Status Echo(grpc::ServerContext*, const tarnbench::Blob* request,
                    tarnbench::Blob* reply) override {
    reply->set_data(request->data());
    return grpc::Status::OK;
  }
};

int Serve(const std::string& api) {
  EchoService callback_service;
  SyncEchoService sync_service;
  if (api != "callback" && api != "sync") {
    std::fprintf(stderr, "grpc_echo: --api must be callback or sync, not '%s'\n", api.c_str());
    return 2;
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  if (api == "sync") {
    builder.RegisterService(&sync_service);
  } else {
    builder.RegisterService(&callback_service);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "grpc_echo: cannot listen on 127.0.0.1\n");
    return 1;
  }
  std::printf("PORT %d\n", port);
  std::fflush(stdout);
  server->Wait();  // until killed
  return 0;
}

class GrpcCaller final : public bench::Caller {
 public:
  explicit GrpcCaller(int port) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // one connection per client
    args.SetMaxReceiveMessageSize(kMaxMessageBytes);
    args.SetMaxSendMessageSize(kMaxMessageBytes);
    channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = tarnbench::Echo::NewStub(channel_);
  }

  bool Call(const std::string& request, std::string* reply, std::string* error) override {
    request_.set_data(request);  // a copy, as RpcClient::Call makes one
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status status = stub_->Echo(&context, request_, &reply_);
    if (!status.ok()) {
      *error = "Echo: " + status.error_message();
      return false;
    }
    reply->swap(*reply_.mutable_data());
    return true;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<tarnbench::Echo::Stub> stub_;
  tarnbench::Blob request_, reply_;
};

}  // namespace

int main(int argc, char** argv) {
  bench::Options o = bench::ParseOptions(argc, argv);
  if (o.mode == "server") return Serve(o.api.empty() ? "callback" : o.api);
  return bench::RunClients(o, "grpc", [&](int, std::string* error) {
    auto caller = std::make_unique<GrpcCaller>(o.port);
    std::string reply;
    // Connect before the clock starts.
    if (!caller->Call(std::string(), &reply, error)) return std::unique_ptr<bench::Caller>();
    return std::unique_ptr<bench::Caller>(std::move(caller));
  });
}
