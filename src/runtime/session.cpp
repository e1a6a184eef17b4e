#include "runtime/session.h"

#include <unistd.h>

#include <chrono>

#include "common/log.h"
#include "runtime/messages.h"

namespace tarn::runtime {

Result<std::unique_ptr<Session>> Session::Open(const NodeArgs& args, const std::string& address) {
  std::unique_ptr<Session> s(new Session());
  s->args_ = args;
  if (!s->args_.transport) s->args_.transport = MakeTcpTransport(args.secret, args.tls);
  net::ConnectionOptions o;  // control traffic: no test faults
  const auto d = net::Deadline::InMs(60000);
  TARN_ASSIGN_OR_RETURN(s->calls_, s->args_.transport->Dial(args.coordinator, o, 1000, d));
  TARN_ASSIGN_OR_RETURN(s->beats_, s->args_.transport->Dial(args.coordinator, o, 1000, d));
  msg::Register reg;
  reg.role = args.role;
  reg.index = args.index;
  reg.node = args.node;
  reg.pid = static_cast<int64_t>(::getpid());
  reg.address = address;
  TARN_ASSIGN_OR_RETURN(auto reply, msg::Call<msg::RegisterReply>(*s->calls_, reg, d));
  s->heartbeat_ms_ = reply.heartbeat_ms;
  s->max_missed_ = reply.max_missed_heartbeats;
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
    msg::Heartbeat beat;
    beat.node = args_.node;
    beat.bag = progress_.bag.load();
    beat.epoch = progress_.epoch.load();
    beat.position = progress_.position.load();
    auto reply =
        msg::Call<msg::HeartbeatReply>(*beats_, beat, net::Deadline::InMs(heartbeat_ms_ * 2L));
    auto now = std::chrono::steady_clock::now();
    if (reply.ok()) {
      last_ok = now;
      if (reply->stop) {
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
