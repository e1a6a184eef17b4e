// A Hadoop IPC server for tests, on 127.0.0.1: reads the preamble, runs the
// server side of SASL DIGEST-MD5 for one token (or accepts SIMPLE), reads the
// connection context, then answers calls through a handler. Enough to test
// tarn's IPC client and the YARN backend without a JVM. With qop auth-int or
// auth-conf offered (and chosen), everything after SUCCESS is SASL-wrapped.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/yarn/ipc.h"
#include "cluster/yarn/protobuf_wire.h"
#include "cluster/yarn/sasl.h"
#include "net/socket.h"

namespace tarn::cluster::yarn::testing {

// What a handler answers: a response message, or an exception.
struct FakeReply {
  std::string body;
  std::string exception_class;  // non-empty: an ERROR response
  std::string error_message;
  bool fatal = false;
};

struct FakeCall {
  std::string method;
  std::string protocol;
  std::string request;
};

class FakeHadoopServer {
 public:
  using Handler = std::function<FakeReply(const FakeCall&)>;

  // `token`: the token clients must authenticate with (nullopt: SIMPLE only).
  // `qop`: what the DIGEST challenge offers, as hadoop.rpc.protection would make a server.
  FakeHadoopServer(std::optional<Token> token, Handler handler, std::string qop = "auth")
      : token_(std::move(token)), handler_(std::move(handler)), qop_(std::move(qop)) {
    auto l = net::ListenTcp("127.0.0.1", 0);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    listener_ = std::move(*l);
    port_ = net::LocalPort(listener_);
    thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~FakeHadoopServer() {
    stop_ = true;
    listener_.Shutdown();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto* s : open_) s->Shutdown();
    }
    thread_.join();
    for (auto& t : connections_) t.join();
  }

  int port() const { return port_; }
  // Replaces the accepted token (an AMRMToken roll-over).
  void SetToken(const Token& token) {
    std::lock_guard<std::mutex> lock(mu_);
    token_ = token;
  }
  // Closes every open connection (the server dropping idle clients).
  void DropConnections() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto* s : open_) s->Shutdown();
  }

  int connections() const { return connections_accepted_; }
  int authentications() const { return authentications_; }
  std::vector<std::string> failures() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }
  std::vector<std::string> protocols() const {
    std::lock_guard<std::mutex> lock(mu_);
    return protocols_;
  }
  // The qop each authenticated connection chose, and every byte clients sent.
  std::vector<std::string> negotiated() const {
    std::lock_guard<std::mutex> lock(mu_);
    return negotiated_;
  }
  std::string received_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }
  int wrapped_messages() const { return wrapped_messages_; }

  // Encodes a response frame as a Hadoop server does.
  static std::string ResponseFrame(uint32_t call_id, const FakeReply& reply) {
    ProtoWriter h;
    h.Varint(1, call_id);
    const bool error = !reply.exception_class.empty();
    h.Int(2, error ? (reply.fatal ? 2 : 1) : 0);
    h.Int(3, 9);
    if (error) {
      h.Bytes(4, reply.exception_class);
      h.Bytes(5, reply.error_message);
      h.Int(6, reply.fatal ? 10 : 1);
    }
    std::vector<std::string> parts = {h.Take()};
    if (!error) parts.push_back(reply.body);
    return Frame(parts);
  }

 private:
  void Fail(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.push_back(why);
  }

  void AcceptLoop() {
    while (!stop_) {
      auto s = net::AcceptTcp(listener_, net::Deadline::InMs(200));
      if (!s.ok()) continue;
      ++connections_accepted_;
      auto socket = std::make_shared<net::Socket>(std::move(*s));
      connections_.emplace_back([this, socket] { Serve(socket.get()); });
    }
  }

  // One client connection: its socket, and its security layer once one is negotiated.
  struct Conn {
    net::Socket* socket;
    std::unique_ptr<DigestSecurityLayer> layer;
    std::string unwrapped;
  };

  bool ReadRaw(Conn& c, char* out, size_t n) {
    if (!c.socket->ReadAll(out, n, net::Deadline::InMs(10000)).ok()) return false;
    std::lock_guard<std::mutex> lock(mu_);
    received_.append(out, n);
    return true;
  }

  bool ReadRawFrame(Conn& c, std::string* payload) {
    char len[4];
    if (!ReadRaw(c, len, 4)) return false;
    const uint32_t n = (uint32_t{static_cast<uint8_t>(len[0])} << 24) |
                       (uint32_t{static_cast<uint8_t>(len[1])} << 16) |
                       (uint32_t{static_cast<uint8_t>(len[2])} << 8) | static_cast<uint8_t>(len[3]);
    payload->assign(n, '\0');
    return ReadRaw(c, payload->data(), n);
  }

  // Bytes of the client's (unwrapped) stream.
  bool Read(Conn& c, char* out, size_t n) {
    if (!c.layer) return ReadRaw(c, out, n);
    while (c.unwrapped.size() < n) {
      std::string payload;
      if (!ReadRawFrame(c, &payload)) return false;
      auto parts = Messages(payload);
      auto header = ProtoMessage::Parse(parts.at(0), "header");
      auto sasl = parts.size() == 2 ? DecodeSasl(parts[1]) : Result<SaslMessage>(Corrupt("parts"));
      if (UnZigZag32(static_cast<uint32_t>(header->Varint(3))) != kSaslCallId || !sasl.ok() ||
          sasl->state != SaslState::kWrap || !sasl->token) {
        Fail("expected a SASL WRAP frame");
        return false;
      }
      auto plain = c.layer->Unwrap(*sasl->token);
      if (!plain.ok()) {
        Fail("unwrap: " + plain.status().message());
        return false;
      }
      ++wrapped_messages_;
      c.unwrapped += *plain;
    }
    std::memcpy(out, c.unwrapped.data(), n);
    c.unwrapped.erase(0, n);
    return true;
  }

  bool ReadFrame(Conn& c, std::string* payload) {
    char len[4];
    if (!Read(c, len, 4)) return false;
    const uint32_t n = (uint32_t{static_cast<uint8_t>(len[0])} << 24) |
                       (uint32_t{static_cast<uint8_t>(len[1])} << 16) |
                       (uint32_t{static_cast<uint8_t>(len[2])} << 8) | static_cast<uint8_t>(len[3]);
    payload->assign(n, '\0');
    return Read(c, payload->data(), n);
  }

  // Splits a request frame into its varint-delimited messages.
  static std::vector<std::string> Messages(const std::string& payload) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < payload.size()) {
      uint64_t len;
      if (!GetVarint(payload, &pos, &len) || len > payload.size() - pos) break;
      out.push_back(payload.substr(pos, len));
      pos += len;
    }
    return out;
  }

  // A response frame, wrapped whole (as Hadoop's server wraps each response) after SASL.
  static bool Send(Conn& c, const std::string& frame) {
    std::string out = frame;
    if (c.layer) {
      SaslMessage wrap{SaslState::kWrap, *c.layer->Wrap(frame), {}};
      out = ResponseFrame(static_cast<uint32_t>(kSaslCallId), FakeReply{EncodeSasl(wrap)});
    }
    return c.socket->WriteAll(out.data(), out.size(), net::Deadline::InMs(10000)).ok();
  }

  bool Authenticate(Conn& s, const Token& token) {
    std::string payload;
    if (!ReadFrame(s, &payload)) return false;
    auto parts = Messages(payload);
    auto header = ProtoMessage::Parse(parts.at(0), "header");
    if (UnZigZag32(static_cast<uint32_t>(header->Varint(3))) != kSaslCallId) {
      Fail("first frame is not SASL");
      return false;
    }
    auto negotiate = DecodeSasl(parts.at(1));
    if (!negotiate.ok() || negotiate->state != SaslState::kNegotiate) {
      Fail("expected NEGOTIATE");
      return false;
    }
    const std::string nonce = "fakeNonce" + std::to_string(connections_accepted_);
    const std::string challenge = "realm=\"default\",nonce=\"" + nonce + "\",qop=\"" + qop_ +
                                  "\",charset=utf-8,cipher=\"3des,rc4\",algorithm=md5-sess";
    SaslMessage reply{SaslState::kNegotiate,
                      std::nullopt,
                      {SaslAuth{"TOKEN", "DIGEST-MD5", "", "default", challenge}}};
    FakeReply r{EncodeSasl(reply)};
    if (!Send(s, ResponseFrame(static_cast<uint32_t>(kSaslCallId), r))) return false;
    if (!ReadFrame(s, &payload)) return false;
    parts = Messages(payload);
    auto initiate = DecodeSasl(parts.at(1));
    if (!initiate.ok() || initiate->state != SaslState::kInitiate || !initiate->token ||
        initiate->auths.size() != 1 || initiate->auths[0].challenge) {
      Fail("bad INITIATE");
      return false;
    }
    auto d = ParseDigestDirectives(*initiate->token);
    const std::string user = Base64Encode(token.identifier);
    const std::string password = Base64Encode(token.password);
    const auto H = [](const std::string& s) { return Md5(s); };
    const std::string& cnonce = (*d)["cnonce"];
    const std::string qop = d->count("qop") ? (*d)["qop"] : "auth";
    const std::string ha1_raw = H(H(user + ":default:" + password) + ":" + nonce + ":" + cnonce);
    const std::string ha1 = HexEncode(ha1_raw);
    const std::string a2_suffix = qop == "auth" ? "" : ":00000000000000000000000000000000";
    const auto digest = [&](const std::string& a2) {
      return HexEncode(H(ha1 + ":" + nonce + ":" + (*d)["nc"] + ":" + cnonce + ":" + qop + ":" +
                         HexEncode(H(a2 + "/default" + a2_suffix))));
    };
    const bool offered = ("," + qop_ + ",").find("," + qop + ",") != std::string::npos;
    if ((*d)["username"] != user || (*d)["digest-uri"] != "/default" || !offered ||
        (qop == "auth-conf" && (*d)["cipher"] != "3des") ||
        (*d)["response"] != digest("AUTHENTICATE:")) {
      FakeReply fatal{"", "javax.security.sasl.SaslException",
                      "DIGEST-MD5: digest response format violation. Mismatched response.\n\tat "
                      "com.sun.security.sasl.digest.DigestMD5Server.validateClientResponse",
                      true};
      Send(s, ResponseFrame(static_cast<uint32_t>(kSaslCallId), fatal));
      Fail("digest mismatch");
      return false;
    }
    SaslMessage success{SaslState::kSuccess, "rspauth=" + digest(":"), {}};
    ++authentications_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      negotiated_.push_back(qop);
    }
    if (!Send(s,
              ResponseFrame(static_cast<uint32_t>(kSaslCallId), FakeReply{EncodeSasl(success)}))) {
      return false;
    }
    if (qop != "auth") {
      auto layer =
          DigestSecurityLayer::Create(DigestSecurityLayer::Side::kServer, ha1_raw,
                                      qop == "auth-int" ? SaslQop::kAuthInt : SaslQop::kAuthConf);
      if (!layer.ok()) return false;
      s.layer = std::move(*layer);
    }
    return true;
  }

  void Serve(net::Socket* s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_.push_back(s);
    }
    ServeConnection(s);
    std::lock_guard<std::mutex> lock(mu_);
    open_.erase(std::find(open_.begin(), open_.end(), s));
  }

  void ServeConnection(net::Socket* socket) {
    Conn s{socket, nullptr, ""};
    char preamble[7];
    if (!ReadRaw(s, preamble, 7)) return;
    if (std::string(preamble, 4) != "hrpc" || preamble[4] != 9 || preamble[5] != 0) {
      Fail("bad preamble");
      return;
    }
    std::optional<Token> token;
    {
      std::lock_guard<std::mutex> lock(mu_);
      token = token_;
    }
    const bool sasl = static_cast<uint8_t>(preamble[6]) == 0xDF;
    if (token && !sasl) {
      Fail("client did not use SASL");
      return;
    }
    if (sasl && !(token && Authenticate(s, *token))) return;
    std::string payload;
    if (!ReadFrame(s, &payload)) return;
    auto parts = Messages(payload);
    auto header = ProtoMessage::Parse(parts.at(0), "header");
    if (UnZigZag32(static_cast<uint32_t>(header->Varint(3))) != kConnectionContextCallId) {
      Fail("no connection context");
      return;
    }
    auto context = ProtoMessage::Parse(parts.at(1), "context");
    const std::string protocol = context->String(3);
    {
      std::lock_guard<std::mutex> lock(mu_);
      protocols_.push_back(protocol);
    }
    while (!stop_) {
      if (!ReadFrame(s, &payload)) return;
      parts = Messages(payload);
      if (parts.size() != 3) {
        Fail("call frame with " + std::to_string(parts.size()) + " messages");
        return;
      }
      header = ProtoMessage::Parse(parts[0], "header");
      const int32_t call_id = UnZigZag32(static_cast<uint32_t>(header->Varint(3)));
      auto request_header = ProtoMessage::Parse(parts[1], "request header");
      FakeCall call{request_header->String(1), request_header->String(2), parts[2]};
      FakeReply reply = handler_(call);
      if (!Send(s, ResponseFrame(static_cast<uint32_t>(call_id), reply)) || reply.fatal) return;
    }
  }

  std::optional<Token> token_;
  Handler handler_;
  std::string qop_;
  net::Socket listener_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::thread> connections_;
  mutable std::mutex mu_;
  std::vector<net::Socket*> open_;
  std::vector<std::string> failures_;
  std::vector<std::string> protocols_;
  std::vector<std::string> negotiated_;
  std::string received_;
  std::atomic<int> wrapped_messages_{0};
  std::atomic<int> connections_accepted_{0};
  std::atomic<int> authentications_{0};
};

}  // namespace tarn::cluster::yarn::testing
