#include "net/rpc.h"

#include <sys/socket.h>

#include <map>
#include <set>

#include "common/log.h"
#include "net/wire.h"

namespace tarn::net {

std::string EncodeError(const Status& s) {
  WireWriter w;
  w.U32(static_cast<uint32_t>(s.code()));
  w.Str(s.message());
  return w.Take();
}

Status DecodeError(std::string_view payload) {
  WireReader r(payload);
  uint32_t code = 0;
  std::string message;
  if (!r.U32(&code).ok() || !r.Str(&message).ok() || code == 0 ||
      code > static_cast<uint32_t>(StatusCode::kPermissionDenied)) {
    return Internal("malformed error reply");
  }
  return Status(static_cast<StatusCode>(code), message);
}

RpcClient::RpcClient(std::unique_ptr<Connection> connection, int retry_ms)
    : connection_(std::move(connection)), retry_ms_(std::max(1, retry_ms)) {}

RpcClient::~RpcClient() { Close(); }

void RpcClient::Close() {
  if (connection_) connection_->Close();
}

Result<std::string> RpcClient::Call(uint16_t type, std::string_view payload, Deadline d) {
  std::lock_guard<std::mutex> lock(mu_);
  Message request;
  request.type = type;
  request.id = next_id_++;
  request.deadline_ms = d.WireMs();
  request.payload.assign(payload);
  TARN_RETURN_IF_ERROR(connection_->Send(request, d));
  while (true) {
    auto reply = connection_->Receive(d.Sooner(Deadline::InMs(retry_ms_)));
    if (reply.ok()) {
      // A late answer to an earlier, already retried call: skip it.
      if (reply->id != request.id || !(reply->flags & kFlagReply)) continue;
      if (reply->flags & kFlagError) return DecodeError(reply->payload);
      return std::move(reply->payload);
    }
    if (reply.status().code() != StatusCode::kDeadlineExceeded) {
      return Unavailable(reply.status().message());
    }
    if (d.expired()) {
      return DeadlineExceeded("no answer from " + connection_->peer() + " to message type " +
                              std::to_string(type) + " in time");
    }
    request.deadline_ms = d.WireMs();
    TARN_RETURN_IF_ERROR(connection_->Send(request, d));  // the same id: runs once
  }
}

namespace {

// What a connection remembers to answer repeated requests.
struct ReplyCache {
  std::mutex mu;
  std::set<uint64_t> in_progress;
  std::map<uint64_t, Message> done;  // the latest replies by id
  static constexpr size_t kKeep = 16;
};

class ConnectionResponder final : public RpcServer::Responder {
 public:
  ConnectionResponder(std::weak_ptr<Connection> c, std::shared_ptr<ReplyCache> cache, uint64_t id,
                      uint16_t type)
      : c_(std::move(c)), cache_(std::move(cache)), id_(id), type_(type) {}
  void Reply(std::string payload) override { Finish(std::move(payload), 0); }
  void Fail(const Status& status) override { Finish(EncodeError(status), kFlagError); }

 private:
  void Finish(std::string payload, uint32_t flags) {
    Message m;
    m.type = type_;
    m.id = id_;
    m.flags = kFlagReply | flags;
    m.payload = std::move(payload);
    {
      std::lock_guard<std::mutex> lock(cache_->mu);
      if (!cache_->in_progress.erase(id_)) return;  // answered already
      cache_->done[id_] = m;
      while (cache_->done.size() > ReplyCache::kKeep) cache_->done.erase(cache_->done.begin());
    }
    if (auto c = c_.lock()) (void)c->Send(m, Deadline::InMs(30000));
  }
  std::weak_ptr<Connection> c_;
  std::shared_ptr<ReplyCache> cache_;
  uint64_t id_;
  uint16_t type_;
};

Status HandlerFailure(const RpcServer::Request& r, const std::string& what) {
  TARN_LOG(kWarn) << "message type " << r.type << " from " << r.peer << " failed: " << what;
  return InvalidArgument("message type " + std::to_string(r.type) +
                         " could not be handled: " + what);
}

}  // namespace

Result<std::unique_ptr<RpcServer>> RpcServer::Start(const std::string& host, int port,
                                                    const std::string& secret,
                                                    const ConnectionOptions& options,
                                                    Handler handler,
                                                    DisconnectHandler on_disconnect) {
  std::unique_ptr<RpcServer> s(new RpcServer());
  TARN_ASSIGN_OR_RETURN(s->listener_, ListenTcp(host, port));
  s->port_ = LocalPort(s->listener_);
  s->secret_ = secret;
  s->options_ = options;
  s->handler_ = std::move(handler);
  s->on_disconnect_ = std::move(on_disconnect);
  RpcServer* self = s.get();
  s->accept_thread_ = std::thread([self] { self->AcceptLoop(); });
  return s;
}

std::unique_ptr<RpcServer> RpcServer::StartInProcess(Handler handler,
                                                     DisconnectHandler on_disconnect) {
  std::unique_ptr<RpcServer> s(new RpcServer());
  s->handler_ = std::move(handler);
  s->on_disconnect_ = std::move(on_disconnect);
  return s;
}

RpcServer::~RpcServer() { Stop(); }

void RpcServer::AcceptLoop() {
  while (!stopping_.load()) {
    auto s = AcceptTcp(listener_, Deadline::InMs(200));
    if (!s.ok()) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.load()) break;
    uint64_t id = next_connection_++;
    raw_fds_.push_back(s->fd());
    threads_.emplace_back(
        [this, id, raw = std::move(*s)]() mutable { ConnectionLoop(id, nullptr, std::move(raw)); });
  }
}

void RpcServer::Serve(std::unique_ptr<Connection> connection) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_.load()) return;
  uint64_t id = next_connection_++;
  std::shared_ptr<Connection> c(std::move(connection));
  threads_.emplace_back([this, id, c] { ConnectionLoop(id, c, Socket()); });
}

void RpcServer::ConnectionLoop(uint64_t id, std::shared_ptr<Connection> c, Socket raw) {
  if (!c) {
    const int fd = raw.fd();
    auto authed = AuthenticateServer(std::move(raw), secret_, options_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::erase(raw_fds_, fd);
    }
    if (!authed.ok()) {
      refused_.fetch_add(1);
      if (!stopping_.load()) {
        TARN_LOG(kWarn) << "refused a connection: " << authed.status().message();
      }
      return;
    }
    c = std::shared_ptr<Connection>(std::move(*authed));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_.load()) return;
    connections_.push_back(c);
  }
  auto cache = std::make_shared<ReplyCache>();
  while (true) {
    auto m = c->Receive(Deadline::Never());
    if (!m.ok()) break;
    if (m->flags & kFlagReply) continue;  // servers do not expect replies
    {
      std::lock_guard<std::mutex> lock(cache->mu);
      auto done = cache->done.find(m->id);
      if (done != cache->done.end()) {  // a retry of an answered request
        Message again = done->second;
        (void)c->Send(again, Deadline::InMs(30000));
        continue;
      }
      if (!cache->in_progress.insert(m->id).second) continue;  // still being worked on
    }
    Request request;
    request.type = m->type;
    request.payload = std::move(m->payload);
    request.connection = id;
    request.peer = c->peer();
    auto responder = std::make_shared<ConnectionResponder>(c, cache, m->id, m->type);
    // A handler that throws on a malformed request fails that request; the
    // server, and every other connection, keeps serving.
    try {
      handler_(request, responder);
    } catch (const std::exception& e) {
      responder->Fail(HandlerFailure(request, e.what()));
    } catch (...) {
      responder->Fail(HandlerFailure(request, "unknown exception"));
    }
  }
  c->Close();
  if (on_disconnect_ && !stopping_.load()) on_disconnect_(id);
}

void RpcServer::Stop() {
  if (stopping_.exchange(true)) {
    if (accept_thread_.joinable()) accept_thread_.join();
    return;
  }
  listener_.Shutdown();
  if (accept_thread_.joinable()) accept_thread_.join();
  std::list<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : connections_) {
      if (auto c = w.lock()) c->Close();
    }
    for (int fd : raw_fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  listener_.Close();
}

}  // namespace tarn::net
