#include "cluster/yarn/ipc.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "cluster/yarn/protobuf_wire.h"
#include "cluster/yarn/sasl.h"
#include "common/log.h"
#include "common/strings.h"

namespace tarn::cluster::yarn {

namespace {

constexpr int kRpcKindProtocolBuffer = 2;
constexpr int kRpcFinalPacket = 0;
// Hadoop servers drop a connection idle for 2 x ipc.client.connection.maxidletime
// (10 s by default); reconnecting before that avoids racing the server's close.
constexpr auto kMaxIdle = std::chrono::seconds(9);

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    std::random_device rd;
    for (auto& c : out) c = static_cast<char>(rd());
  }
  return out;
}

bool IsConnectionFailure(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kIoError;
}

}  // namespace

std::string ConnectionPreamble(AuthProtocol auth) {
  std::string out = "hrpc";
  out.push_back(static_cast<char>(kIpcVersion));
  out.push_back(0);  // service class
  out.push_back(static_cast<char>(auth));
  return out;
}

std::string EncodeRpcRequestHeader(int32_t call_id, std::string_view client_id,
                                   int32_t retry_count) {
  ProtoWriter w;
  w.Int(1, kRpcKindProtocolBuffer);
  w.Int(2, kRpcFinalPacket);
  w.Sint32(3, call_id);
  w.Bytes(4, client_id);
  w.Sint32(5, retry_count);
  return w.Take();
}

std::string Frame(const std::vector<std::string>& messages) {
  std::string body;
  for (const auto& m : messages) {
    PutVarint(&body, m.size());
    body += m;
  }
  const auto n = static_cast<uint32_t>(body.size());
  std::string out;
  out.reserve(4 + body.size());
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((n >> shift) & 0xFF));
  return out + body;
}

std::string EncodeCallFrame(int32_t call_id, std::string_view client_id, std::string_view method,
                            std::string_view protocol, std::string_view request) {
  ProtoWriter header;
  header.Bytes(1, method);
  header.Bytes(2, protocol);
  header.Varint(3, 1);  // clientProtocolVersion
  return Frame({EncodeRpcRequestHeader(call_id, client_id), header.Take(), std::string(request)});
}

std::string EncodeSasl(const SaslMessage& message) {
  ProtoWriter w;
  w.Int(2, static_cast<int>(message.state));
  if (message.token) w.Bytes(3, *message.token);
  for (const auto& auth : message.auths) {
    ProtoWriter a;
    a.Bytes(1, auth.method);
    a.Bytes(2, auth.mechanism);
    a.Bytes(3, auth.protocol);
    a.Bytes(4, auth.server_id);
    if (auth.challenge) a.Bytes(5, *auth.challenge);
    w.Message(4, a);
  }
  return w.Take();
}

Result<SaslMessage> DecodeSasl(std::string_view data) {
  TARN_ASSIGN_OR_RETURN(ProtoMessage m, ProtoMessage::Parse(data, "RpcSaslProto"));
  if (!m.Has(2)) return Corrupt("RpcSaslProto without a state");
  SaslMessage out;
  out.state = static_cast<SaslState>(m.Int32(2));
  if (m.Has(3)) out.token = m.String(3);
  for (std::string_view a : m.RepeatedBytes(4)) {
    TARN_ASSIGN_OR_RETURN(ProtoMessage am, ProtoMessage::Parse(a, "RpcSaslProto.SaslAuth"));
    SaslAuth auth{am.String(1), am.String(2), am.String(3), am.String(4), std::nullopt};
    if (am.Has(5)) auth.challenge = am.String(5);
    out.auths.push_back(std::move(auth));
  }
  return out;
}

std::string EncodeSaslFrame(const SaslMessage& message) {
  return Frame({EncodeRpcRequestHeader(kSaslCallId, ""), EncodeSasl(message)});
}

std::string EncodeConnectionContextFrame(std::string_view client_id, std::string_view protocol,
                                         std::string_view user) {
  ProtoWriter context;
  if (!user.empty()) {
    ProtoWriter user_info;
    user_info.Bytes(1, user);
    context.Message(2, user_info);
  }
  context.Bytes(3, protocol);
  return Frame({EncodeRpcRequestHeader(kConnectionContextCallId, client_id), context.Take()});
}

Result<RpcResponse> ParseResponseFrame(std::string_view payload) {
  size_t pos = 0;
  uint64_t len;
  if (!GetVarint(payload, &pos, &len) || len > payload.size() - pos) {
    return Corrupt("IPC response: truncated RpcResponseHeaderProto");
  }
  TARN_ASSIGN_OR_RETURN(ProtoMessage h,
                        ProtoMessage::Parse(payload.substr(pos, len), "RpcResponseHeaderProto"));
  pos += len;
  if (!h.Has(1) || !h.Has(2)) return Corrupt("IPC response header without callId or status");
  RpcResponse r;
  r.call_id = static_cast<uint32_t>(h.Varint(1));
  const auto status = h.Int32(2);
  if (status < 0 || status > 2) {
    return Corrupt("IPC response header: unknown status " + std::to_string(status));
  }
  r.status = static_cast<RpcStatus>(status);
  r.exception_class = h.String(4);
  r.error_message = h.String(5);
  r.error_detail = h.Int32(6);
  if (r.status == RpcStatus::kSuccess && pos < payload.size()) {
    if (!GetVarint(payload, &pos, &len) || len > payload.size() - pos) {
      return Corrupt("IPC response: truncated response message");
    }
    r.body = std::string(payload.substr(pos, len));
  }
  return r;
}

std::string DescribeRemoteError(const RpcResponse& response) {
  // Java servers often send the stack trace: keep the lines before the first "\tat ".
  std::string message;
  for (const auto& line : Split(response.error_message, "\n")) {
    if (StartsWith(line, "\tat ") || StartsWith(Trim(line), "at ")) break;
    if (!message.empty()) message += " ";
    message += std::string(Trim(line));
    if (message.size() > 2000) break;
  }
  std::string out = response.exception_class.empty() ? "remote error" : response.exception_class;
  if (!message.empty()) out += ": " + message;
  return out;
}

IpcClient::IpcClient(IpcOptions options)
    : options_(std::move(options)), client_id_(RandomBytes(16)) {}

IpcClient::~IpcClient() { Close(); }

void IpcClient::SetToken(const Token& token) {
  std::lock_guard<std::mutex> lock(mu_);
  options_.token = token;
  socket_.Close();  // the next call authenticates with the new token
}

void IpcClient::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  socket_.Close();
}

std::string IpcClient::last_exception_class() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_exception_class_;
}

namespace {

// One length-prefixed frame's payload from `read`.
template <typename Read>
Result<std::string> ReadFramePayload(Read&& read, size_t limit, const std::string& from) {
  unsigned char len_bytes[4];
  TARN_RETURN_IF_ERROR(read(reinterpret_cast<char*>(len_bytes), 4));
  const uint32_t len = (uint32_t{len_bytes[0]} << 24) | (uint32_t{len_bytes[1]} << 16) |
                       (uint32_t{len_bytes[2]} << 8) | uint32_t{len_bytes[3]};
  if (len > limit) {
    return Corrupt("IPC response of " + std::to_string(len) + " bytes from " + from +
                   " exceeds the limit of " + std::to_string(limit));
  }
  std::string payload(len, '\0');
  TARN_RETURN_IF_ERROR(read(payload.data(), len));
  return payload;
}

}  // namespace

Result<RpcResponse> IpcClient::ReadResponseLocked(net::Deadline deadline) {
  TARN_ASSIGN_OR_RETURN(
      std::string payload,
      ReadFramePayload([&](char* out, size_t n) { return ReadLocked(out, n, deadline); },
                       options_.max_response_bytes, address()));
  return ParseResponseFrame(payload);
}

Status IpcClient::WriteLocked(std::string_view bytes, net::Deadline deadline) {
  if (!layer_) return socket_.WriteAll(bytes.data(), bytes.size(), deadline);
  std::string frames;
  for (size_t pos = 0; pos < bytes.size(); pos += wrap_chunk_bytes_) {
    TARN_ASSIGN_OR_RETURN(std::string token, layer_->Wrap(bytes.substr(pos, wrap_chunk_bytes_)));
    frames += EncodeSaslFrame(SaslMessage{SaslState::kWrap, std::move(token), {}});
  }
  return socket_.WriteAll(frames.data(), frames.size(), deadline);
}

Status IpcClient::ReadLocked(char* out, size_t n, net::Deadline deadline) {
  if (!layer_) return socket_.ReadAll(out, n, deadline);
  while (unwrapped_.size() < n) {
    TARN_ASSIGN_OR_RETURN(
        std::string payload,
        ReadFramePayload([&](char* o, size_t k) { return socket_.ReadAll(o, k, deadline); },
                         options_.max_response_bytes, address()));
    TARN_ASSIGN_OR_RETURN(RpcResponse r, ParseResponseFrame(payload));
    if (r.status != RpcStatus::kSuccess) {
      return PermissionDenied("SASL " + std::string(QopName(layer_->qop())) + " connection to " +
                              address() + ": " + DescribeRemoteError(r));
    }
    if (r.call_id != static_cast<uint32_t>(kSaslCallId)) {
      return Corrupt("SASL " + std::string(QopName(layer_->qop())) + ": " + address() +
                     " sent an unwrapped response (call id " + std::to_string(r.call_id) + ")");
    }
    TARN_ASSIGN_OR_RETURN(SaslMessage m, DecodeSasl(r.body));
    if (m.state != SaslState::kWrap || !m.token) {
      return Corrupt("SASL: expected WRAP from " + address() + ", got state " +
                     std::to_string(static_cast<int>(m.state)));
    }
    TARN_ASSIGN_OR_RETURN(std::string plain, layer_->Unwrap(*m.token));
    if (unwrapped_.size() + plain.size() > options_.max_response_bytes + 4) {
      return Corrupt("IPC: unwrapped data from " + address() + " exceeds the response limit");
    }
    unwrapped_ += plain;
  }
  std::memcpy(out, unwrapped_.data(), n);
  unwrapped_.erase(0, n);
  return Status::Ok();
}

Status IpcClient::AuthenticateLocked(net::Deadline deadline) {
  const auto send = [&](const SaslMessage& m) {
    const std::string frame = EncodeSaslFrame(m);
    return socket_.WriteAll(frame.data(), frame.size(), deadline);
  };
  const auto receive = [&]() -> Result<SaslMessage> {
    TARN_ASSIGN_OR_RETURN(RpcResponse r, ReadResponseLocked(deadline));
    if (r.status != RpcStatus::kSuccess) {
      return PermissionDenied("SASL authentication to " + address() +
                              " failed: " + DescribeRemoteError(r));
    }
    if (r.call_id != static_cast<uint32_t>(kSaslCallId)) {
      return Corrupt("SASL: unexpected call id " + std::to_string(r.call_id) + " from " +
                     address());
    }
    return DecodeSasl(r.body);
  };

  TARN_RETURN_IF_ERROR(send(SaslMessage{SaslState::kNegotiate, std::nullopt, {}}));
  TARN_ASSIGN_OR_RETURN(SaslMessage reply, receive());
  if (reply.state == SaslState::kSuccess) return Status::Ok();  // the server needs no auth
  if (reply.state != SaslState::kNegotiate) {
    return Corrupt("SASL: expected NEGOTIATE from " + address() + ", got state " +
                   std::to_string(static_cast<int>(reply.state)));
  }
  const SaslAuth* chosen = nullptr;
  std::string offered;
  for (const auto& auth : reply.auths) {
    offered += (offered.empty() ? "" : ", ") + auth.method + "/" + auth.mechanism;
    if (auth.method == "TOKEN" && auth.mechanism == "DIGEST-MD5") chosen = &auth;
  }
  if (!chosen) {
    return Unsupported("SASL: " + address() + " offers " + offered +
                       "; tarn authenticates with TOKEN/DIGEST-MD5 only");
  }
  DigestMd5Client digest =
      DigestMd5Client::ForToken(*options_.token, chosen->protocol, chosen->server_id);
  digest.SetAllowedQops(options_.qops);
  // The security layer starts after SUCCESS; the SASL frames themselves travel plain.
  const auto start_layer = [&]() -> Status {
    TARN_ASSIGN_OR_RETURN(layer_, digest.SecurityLayer());
    if (layer_) {
      // Room for the layer's padding, MAC and trailer within the server's maxbuf.
      wrap_chunk_bytes_ = std::max<size_t>(digest.server_maxbuf(), 1024) - 32;
      TARN_LOG(kDebug) << "IPC to " << address() << ": SASL qop " << QopName(layer_->qop());
    }
    return Status::Ok();
  };
  SaslAuth selected = *chosen;
  selected.challenge.reset();
  SaslMessage initiate{SaslState::kInitiate, std::string(), {selected}};
  bool responded = false;
  if (chosen->challenge) {
    TARN_ASSIGN_OR_RETURN(std::string response, digest.Respond(*chosen->challenge));
    initiate.token = std::move(response);
    responded = true;
  }
  TARN_RETURN_IF_ERROR(send(initiate));
  for (int round = 0; round < 4; ++round) {
    TARN_ASSIGN_OR_RETURN(SaslMessage m, receive());
    if (m.state == SaslState::kSuccess) {
      if (m.token && !m.token->empty()) {
        TARN_RETURN_IF_ERROR(digest.Verify(*m.token));
      } else if (responded && !digest.complete()) {
        return PermissionDenied("SASL: " + address() + " sent SUCCESS without rspauth");
      }
      return digest.complete() ? start_layer() : Status::Ok();
    }
    if (m.state != SaslState::kChallenge || !m.token) {
      return Corrupt("SASL: unexpected state " + std::to_string(static_cast<int>(m.state)) +
                     " from " + address());
    }
    if (responded) {
      TARN_RETURN_IF_ERROR(digest.Verify(*m.token));  // rspauth sent as a challenge
      TARN_RETURN_IF_ERROR(send(SaslMessage{SaslState::kResponse, std::string(), {}}));
      continue;
    }
    TARN_ASSIGN_OR_RETURN(std::string response, digest.Respond(*m.token));
    responded = true;
    TARN_RETURN_IF_ERROR(send(SaslMessage{SaslState::kResponse, std::move(response), {}}));
  }
  return Corrupt("SASL: no SUCCESS from " + address() + " after 4 rounds");
}

Status IpcClient::ConnectLocked() {
  socket_.Close();
  layer_.reset();
  unwrapped_.clear();
  const auto deadline = net::Deadline::InMs(options_.connect_timeout_ms);
  auto s = net::ConnectTcp(options_.host, options_.port, deadline);
  if (!s.ok()) return s.status().WithContext("connecting to " + address());
  socket_ = std::move(*s);
  const bool sasl = options_.token.has_value();
  const std::string preamble = ConnectionPreamble(sasl ? AuthProtocol::kSasl : AuthProtocol::kNone);
  Status st = socket_.WriteAll(preamble.data(), preamble.size(), deadline);
  if (st.ok() && sasl) st = AuthenticateLocked(deadline);
  if (st.ok()) {
    const std::string context =
        EncodeConnectionContextFrame(client_id_, options_.protocol, sasl ? "" : options_.user);
    st = WriteLocked(context, deadline);
  }
  if (!st.ok()) {
    socket_.Close();
    return st.WithContext("connecting to " + options_.protocol + " at " + address());
  }
  return Status::Ok();
}

Result<std::string> IpcClient::CallOnceLocked(const std::string& method, std::string_view request,
                                              bool* connection_failed) {
  *connection_failed = false;
  if (socket_.open() && std::chrono::steady_clock::now() - last_used_ > kMaxIdle) {
    socket_.Close();
  }
  if (!socket_.open()) {
    Status st = ConnectLocked();
    if (!st.ok()) {
      *connection_failed = IsConnectionFailure(st);
      return st;
    }
  }
  const int32_t call_id = next_call_id_;
  next_call_id_ = (next_call_id_ + 1) & 0x7FFFFFFF;
  const auto deadline = net::Deadline::InMs(options_.call_timeout_ms);
  const std::string frame =
      EncodeCallFrame(call_id, client_id_, method, options_.protocol, request);
  Status st = WriteLocked(frame, deadline);
  Result<RpcResponse> r = st.ok() ? ReadResponseLocked(deadline) : Result<RpcResponse>(st);
  if (!r.ok()) {
    socket_.Close();
    *connection_failed = IsConnectionFailure(r.status());
    return r.status().WithContext(method + " on " + address());
  }
  if (r->call_id != static_cast<uint32_t>(call_id)) {
    socket_.Close();
    return Corrupt(method + " on " + address() + ": response for call " +
                   std::to_string(r->call_id) + ", expected " + std::to_string(call_id));
  }
  if (r->status != RpcStatus::kSuccess) {
    last_exception_class_ = r->exception_class;
    if (r->status == RpcStatus::kFatal) socket_.Close();
    const StatusCode code = r->exception_class.find("AccessControl") != std::string::npos ||
                                    r->exception_class.find("InvalidToken") != std::string::npos
                                ? StatusCode::kPermissionDenied
                                : StatusCode::kFailedPrecondition;
    return Status(code, method + " on " + address() + ": " + DescribeRemoteError(*r));
  }
  last_used_ = std::chrono::steady_clock::now();
  return std::move(r->body);
}

Result<std::string> IpcClient::Call(const std::string& method, std::string_view request) {
  std::lock_guard<std::mutex> lock(mu_);
  last_exception_class_.clear();
  bool connection_failed = false;
  auto r = CallOnceLocked(method, request, &connection_failed);
  if (!r.ok() && connection_failed) {
    TARN_LOG(kDebug) << "IPC " << method << " on " << address() << " failed ("
                     << r.status().message() << "); retrying on a new connection";
    r = CallOnceLocked(method, request, &connection_failed);
  }
  return r;
}

}  // namespace tarn::cluster::yarn
