// Hadoop IPC client (RPC version 9, protobuf engine) over TCP.
//
// Connection: the 7-byte preamble "hrpc", version 9, service class 0, auth
// protocol (0xDF SASL / 0x00 none); with a token, the SASL exchange (call id
// -33: NEGOTIATE, INITIATE with the DIGEST-MD5 response, SUCCESS with
// rspauth); then the connection context (call id -3, the protocol name).
// With qop auth-int or auth-conf (hadoop.rpc.protection integrity, privacy)
// every byte after SUCCESS, connection context included, travels wrapped: the
// frame stream is cut into chunks, each sent as a SASL WRAP message (call id
// -33) whose token is the chunk wrapped; the server's responses come the same
// way and their unwrapped tokens, joined, are the ordinary response stream.
// Every frame is a 4-byte big-endian length followed by varint-delimited
// messages: RpcRequestHeaderProto (callId is sint32: zigzag), then for a call
// RequestHeaderProto{method, protocol, version 1} and the request. A response
// is RpcResponseHeaderProto (callId uint32) and, on SUCCESS, the response.
// ERROR and FATAL become a Status carrying the server's exception class and
// message. Field numbers: protos/hadoop_ipc.proto.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/yarn/protobuf_records.h"
#include "cluster/yarn/sasl.h"
#include "common/status.h"
#include "net/socket.h"

namespace tarn::cluster::yarn {

inline constexpr int32_t kSaslCallId = -33;
inline constexpr int32_t kConnectionContextCallId = -3;
inline constexpr int32_t kPingCallId = -4;
inline constexpr uint8_t kIpcVersion = 9;

inline constexpr const char* kApplicationMasterProtocol =
    "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";
inline constexpr const char* kContainerManagementProtocol =
    "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB";

enum class AuthProtocol : uint8_t { kNone = 0x00, kSasl = 0xDF };

enum class SaslState {
  kSuccess = 0,
  kNegotiate = 1,
  kInitiate = 2,
  kChallenge = 3,
  kResponse = 4,
  kWrap = 5
};

struct SaslAuth {
  std::string method;     // "TOKEN"
  std::string mechanism;  // "DIGEST-MD5"
  std::string protocol;
  std::string server_id;
  std::optional<std::string> challenge;
};

struct SaslMessage {
  SaslState state = SaslState::kNegotiate;
  std::optional<std::string> token;
  std::vector<SaslAuth> auths;
};

enum class RpcStatus { kSuccess = 0, kError = 1, kFatal = 2 };

struct RpcResponse {
  uint32_t call_id = 0;  // a negative request id comes back as 2^32 + id
  RpcStatus status = RpcStatus::kSuccess;
  std::string exception_class;
  std::string error_message;
  int32_t error_detail = 0;
  std::string body;  // the response message (SUCCESS only)
};

// Wire pieces, exposed for tests.
std::string ConnectionPreamble(AuthProtocol auth);
std::string EncodeRpcRequestHeader(int32_t call_id, std::string_view client_id,
                                   int32_t retry_count = -1);
// 4-byte big-endian length, then each message with its varint length.
std::string Frame(const std::vector<std::string>& messages);
std::string EncodeCallFrame(int32_t call_id, std::string_view client_id, std::string_view method,
                            std::string_view protocol, std::string_view request);
std::string EncodeSasl(const SaslMessage& message);
Result<SaslMessage> DecodeSasl(std::string_view data);
std::string EncodeSaslFrame(const SaslMessage& message);
// `user` empty: token authentication (no userInfo); else SIMPLE as that user.
std::string EncodeConnectionContextFrame(std::string_view client_id, std::string_view protocol,
                                         std::string_view user);
// Parses a response frame's payload (what follows the 4-byte length).
Result<RpcResponse> ParseResponseFrame(std::string_view payload);
// "class: first line of the message" for an ERROR/FATAL response (stack traces cut).
std::string DescribeRemoteError(const RpcResponse& response);

struct IpcOptions {
  std::string host;
  int port = 0;
  std::string protocol;        // kApplicationMasterProtocol, kContainerManagementProtocol
  std::optional<Token> token;  // SASL DIGEST-MD5 with this token; without: SIMPLE as `user`
  std::string user;            // SIMPLE authentication only
  // hadoop.rpc.protection's levels, in preference order: the first the server offers is used.
  std::vector<SaslQop> qops = {SaslQop::kAuth};
  int connect_timeout_ms = 20000;
  int call_timeout_ms = 60000;
  size_t max_response_bytes = 128 << 20;  // ipc.maximum.response.length
};

// One connection to one server and protocol; calls are serialized. A call on
// a lost connection (or before the first) connects first; a call that fails
// on the connection (not with a server ERROR) is retried once on a new one.
// Thread-safe.
class IpcClient {
 public:
  explicit IpcClient(IpcOptions options);
  ~IpcClient();
  IpcClient(const IpcClient&) = delete;
  IpcClient& operator=(const IpcClient&) = delete;

  // Calls `method` with an encoded request; returns the encoded response.
  Result<std::string> Call(const std::string& method, std::string_view request);
  // A rolled-over token (a new AMRMToken): the next connection uses it.
  void SetToken(const Token& token);
  void Close();

  // The exception class of the last call's ERROR response ("" otherwise), to
  // tell e.g. ApplicationMasterNotRegisteredException from other failures.
  std::string last_exception_class() const;
  std::string address() const { return options_.host + ":" + std::to_string(options_.port); }

 private:
  Status ConnectLocked();
  Status AuthenticateLocked(net::Deadline deadline);
  Result<RpcResponse> ReadResponseLocked(net::Deadline deadline);
  // Through the security layer once one is negotiated, else straight to the socket.
  Status WriteLocked(std::string_view bytes, net::Deadline deadline);
  Status ReadLocked(char* out, size_t n, net::Deadline deadline);
  Result<std::string> CallOnceLocked(const std::string& method, std::string_view request,
                                     bool* connection_failed);

  IpcOptions options_;
  mutable std::mutex mu_;
  net::Socket socket_;
  std::unique_ptr<DigestSecurityLayer> layer_;  // auth-int, auth-conf
  size_t wrap_chunk_bytes_ = 0;                 // the most plaintext one WRAP token carries
  std::string unwrapped_;                       // received, unwrapped, not yet read
  std::string client_id_;                       // 16 random bytes, fixed for the client's life
  int32_t next_call_id_ = 0;
  std::chrono::steady_clock::time_point last_used_;
  std::string last_exception_class_;
};

}  // namespace tarn::cluster::yarn
