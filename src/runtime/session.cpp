#include "runtime/session.h"

#include <unistd.h>

#include <chrono>

#include "common/log.h"
#include "runtime/protocol.h"

namespace tarn::runtime {

Result<std::unique_ptr<Session>> Session::Open(const NodeArgs& args, const std::string& address) {
  std::unique_ptr<Session> s(new Session());
  s->args_ = args;
  if (!s->args_.transport) s->args_.transport = MakeTcpTransport(args.secret);
  net::ConnectionOptions o;  // control traffic: no test faults
  const auto d = net::Deadline::InMs(60000);
  TARN_ASSIGN_OR_RETURN(s->calls_, s->args_.transport->Dial(args.coordinator, o, 1000, d));
  TARN_ASSIGN_OR_RETURN(s->beats_, s->args_.transport->Dial(args.coordinator, o, 1000, d));
  data::Json reg{{"role", args.role},
                 {"index", args.index},
                 {"node", args.node},
                 {"pid", static_cast<int64_t>(::getpid())},
                 {"address", address}};
  TARN_ASSIGN_OR_RETURN(auto reply, CallJson(*s->calls_, kRegister, reg, d));
  s->heartbeat_ms_ = reply.value("heartbeatMs", 1000);
  s->max_missed_ = reply.value("maxMissedHeartbeats", 25);
  Session* self = s.get();
  s->thread_ = std::thread([self] { self->HeartbeatLoop(); });
  return s;
}

Session::~Session() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Session::HeartbeatLoop() {
  auto last_ok = std::chrono::steady_clock::now();
  const auto allowance =
      std::chrono::milliseconds(static_cast<int64_t>(heartbeat_ms_) * max_missed_);
  while (!stop_.load()) {
    data::Json beat{{"node", args_.node},
                    {"bag", progress_.bag.load()},
                    {"epoch", progress_.epoch.load()},
                    {"position", progress_.position.load()}};
    auto reply = CallJson(*beats_, kHeartbeat, beat, net::Deadline::InMs(heartbeat_ms_ * 2L));
    auto now = std::chrono::steady_clock::now();
    if (reply.ok()) {
      last_ok = now;
      if (reply->value("stop", false)) {
        if (args_.embedded) return;  // the node's own loop ends with the job
        TARN_LOG(kInfo) << args_.role << " " << args_.index << ": the coordinator ended the job";
        std::fflush(nullptr);
        ::_exit(0);
      }
    } else if (reply.status().code() == StatusCode::kUnavailable || now - last_ok > allowance) {
      if (args_.embedded) return;  // the coordinator is this process
      // The coordinator is gone: a node never outlives its job.
      TARN_LOG(kError) << args_.role << " " << args_.index
                       << ": lost the coordinator: " << reply.status().message();
      std::fflush(nullptr);
      ::_exit(3);
    }
    for (int i = 0; i < 10 && !stop_.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(heartbeat_ms_ / 10 + 1));
    }
  }
}

}  // namespace tarn::runtime
