// Running a parameter server (or a coordinator) in a test: the node on its
// own thread, a stand-in for the coordinator it registers with, and a job
// small enough to configure it with. Real TCP connections on loopback.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/job.h"
#include "runtime/messages.h"
#include "runtime/node.h"
#include "runtime/protocol.h"

namespace tarn::runtime {

// A job small enough to configure a parameter server with.
inline JobConfig SmallJob(const std::string& dir) {
  JobConfig job;
  job.inputs = 3;
  job.train_params =
      Json::parse(R"({"NumHiddenLayers":1,"NumHiddenNodes":[4],"ActivationFunc":["tanh"],)"
                  R"("LearningRate":0.1,"Propagation":"B"})");
  job.ps = 1;
  job.workers = 1;
  job.backups = 0;
  job.tensorboard = false;
  job.bind_host = "127.0.0.1";
  job.data_dir = dir + "/data";
  job.checkpoint_dir = dir + "/checkpoints";
  job.models_dir = dir + "/models";
  job.tensorboard_dir = dir + "/tensorboard";
  job.cluster_json = dir + "/cluster.json";
  job.history_json = dir + "/history.json";
  job.logs_dir = dir + "/logs";
  job.model_set_dir = dir;
  return job;
}

// Runs a node on its own thread; `end` makes it return (also when an
// assertion leaves the test early), and the thread is joined.
class NodeThread {
 public:
  NodeThread(std::function<Status()> run, std::function<void()> end)
      : end_(std::move(end)), thread_([this, run] { result_ = run(); }) {}
  ~NodeThread() { Join(); }
  const Status& Join() {
    if (thread_.joinable()) {
      end_();
      thread_.join();
    }
    return result_;
  }

 private:
  std::function<void()> end_;
  Status result_ = Internal("still running");
  std::thread thread_;
};

// Stands in for the coordinator a parameter server registers with.
class FakeCoordinator {
 public:
  explicit FakeCoordinator(const std::string& secret) {
    auto s = net::RpcServer::Start(
        "127.0.0.1", 0, secret, net::ConnectionOptions{},
        [this](const net::RpcServer::Request& r, std::shared_ptr<net::RpcServer::Responder> out) {
          if (r.type == kRegister) {
            auto m = msg::Parse<msg::Register>(r.payload);
            if (!m.ok()) return out->Fail(m.status());
            {
              std::lock_guard<std::mutex> lock(mu_);
              address_ = m->address;
            }
            cv_.notify_all();
            out->Reply(msg::RegisterReply{1, 200, 25}.ToJson().dump());
          } else {
            out->Reply(msg::HeartbeatReply{false}.ToJson().dump());
          }
        });
    EXPECT_TRUE(s.ok()) << s.status().message();
    if (s.ok()) server_ = std::move(*s);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(server_->port()); }
  // The address the parameter server registered (waits for it).
  std::string Registered() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(60), [this] { return !address_.empty(); });
    return address_;
  }

 private:
  std::unique_ptr<net::RpcServer> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string address_;
};

// A parameter server on its own thread, registered with a FakeCoordinator;
// ended the way its coordinator ends it (kShutdown).
class ParameterServerThread {
 public:
  explicit ParameterServerThread(const std::string& secret)
      : secret_(secret), coordinator_(secret), ps_([this] { return Run(); }, [this] { End(); }) {}
  // A connection to it (another worker, the coordinator).
  Result<std::unique_ptr<net::RpcClient>> Dial() {
    const std::string address = coordinator_.Registered();
    if (address.empty()) return Unavailable("the parameter server never registered");
    return DialRpc(address, secret_, net::ConnectionOptions{}, 1000, net::Deadline::InMs(20000));
  }
  const Status& Join() { return ps_.Join(); }

 private:
  Status Run() {
    NodeArgs args;
    args.role = "ps";
    args.node = 1;
    args.coordinator = coordinator_.address();
    args.secret = secret_;
    args.embedded = true;  // returns instead of exiting the test's process
    return RunParameterServer(args);
  }
  void End() {
    auto c = Dial();
    if (c.ok()) (void)msg::CallForStatus(**c, msg::Shutdown{}, net::Deadline::InMs(20000));
  }

  std::string secret_;
  FakeCoordinator coordinator_;
  NodeThread ps_;
};

}  // namespace tarn::runtime
