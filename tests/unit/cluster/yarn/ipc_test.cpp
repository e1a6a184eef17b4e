#include "cluster/yarn/ipc.h"

#include <gtest/gtest.h>

#include "cluster/yarn/protobuf_wire.h"
#include "cluster/yarn/sasl.h"
#include "fake_hadoop_server.h"

namespace tarn::cluster::yarn {
namespace {

using testing::FakeCall;
using testing::FakeHadoopServer;
using testing::FakeReply;

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

std::string Hex(std::string_view s) { return HexEncode(s); }

TEST(HadoopIpc, ConnectionPreamble) {
  EXPECT_EQ(ConnectionPreamble(AuthProtocol::kSasl), Bytes({'h', 'r', 'p', 'c', 9, 0, 0xDF}));
  EXPECT_EQ(ConnectionPreamble(AuthProtocol::kNone), Bytes({'h', 'r', 'p', 'c', 9, 0, 0x00}));
}

TEST(HadoopIpc, SpecialCallIdsAreZigZagEncoded) {
  // sint32: -33 -> 65 (0x41), -3 -> 5, -4 -> 7; ordinary ids double.
  EXPECT_EQ(ZigZag32(kSaslCallId), 65u);
  EXPECT_EQ(ZigZag32(kConnectionContextCallId), 5u);
  EXPECT_EQ(ZigZag32(kPingCallId), 7u);
  EXPECT_EQ(ZigZag32(0), 0u);
  EXPECT_EQ(ZigZag32(1), 2u);
  EXPECT_EQ(ZigZag32(1000000), 2000000u);
  // rpcKind=2, rpcOp=0, callId=sint32(-33), clientId="", retryCount=sint32(-1).
  EXPECT_EQ(Hex(EncodeRpcRequestHeader(kSaslCallId, "")),
            "080210001841220028"
            "01");
  EXPECT_EQ(Hex(EncodeRpcRequestHeader(kConnectionContextCallId, "")), "08021000180522002801");
}

TEST(HadoopIpc, CallFrameAgainstHandBuiltBytes) {
  const std::string client_id = "0123456789abcdef";
  const std::string frame = EncodeCallFrame(3, client_id, "ping2", "x.Y", Bytes({0x08, 0x01}));
  const std::string expected =
      // 45 bytes follow
      Bytes({0x00, 0x00, 0x00, 0x2D}) +
      // RpcRequestHeaderProto, 26 bytes: kind 2, op 0, callId zigzag(3)=6, clientId, retry -1
      Bytes({0x1A, 0x08, 0x02, 0x10, 0x00, 0x18, 0x06, 0x22, 0x10}) + client_id +
      Bytes({0x28, 0x01}) +
      // RequestHeaderProto, 14 bytes: methodName, declaringClassProtocolName, version 1
      Bytes({0x0E, 0x0A, 0x05}) + "ping2" + Bytes({0x12, 0x03}) + "x.Y" + Bytes({0x18, 0x01}) +
      // the request message, 2 bytes
      Bytes({0x02, 0x08, 0x01});
  EXPECT_EQ(Hex(frame), Hex(expected));
}

TEST(HadoopIpc, SaslAndConnectionContextFrames) {
  // NEGOTIATE: header with call id -33 and an empty client id, then RpcSaslProto{state: 1}.
  EXPECT_EQ(Hex(EncodeSaslFrame(SaslMessage{SaslState::kNegotiate, std::nullopt, {}})),
            "0000000e"
            "0a"
            "08021000184122002801"
            "02"
            "1001");
  // Token auth: IpcConnectionContextProto has only the protocol (field 3).
  const std::string context = EncodeConnectionContextFrame("", "p.Q", "");
  EXPECT_EQ(Hex(context),
            "00000011"
            "0a"
            "08021000180522002801"
            "05"
            "1a03" +
                Hex("p.Q"));
  // SIMPLE: userInfo{effectiveUser} (field 2) before the protocol.
  const std::string simple = EncodeConnectionContextFrame("", "p.Q", "al");
  EXPECT_NE(Hex(simple).find("0b"
                             "1204"
                             "0a02" +
                             Hex("al") + "1a03" + Hex("p.Q")),
            std::string::npos);
}

TEST(HadoopIpc, ResponseHeadersAgainstHandBuiltBytes) {
  // callId is uint32 in the response: -33 arrives as 0xFFFFFFDF; status SUCCESS; body "x".
  const std::string ok =
      Bytes({0x08, 0x08, 0xDF, 0xFF, 0xFF, 0xFF, 0x0F, 0x10, 0x00, 0x03, 0x0A, 0x01, 'x'});
  auto r = ParseResponseFrame(ok);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->call_id, static_cast<uint32_t>(kSaslCallId));
  EXPECT_EQ(r->status, RpcStatus::kSuccess);
  EXPECT_EQ(r->body, Bytes({0x0A, 0x01, 'x'}));

  ProtoWriter h;
  h.Varint(1, 7);
  h.Int(2, 1);
  h.Bytes(4, "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException");
  h.Bytes(
      5,
      "Application doesn't exist in cache appattempt_1_0001_000001\n\tat org.apache.X.y(X.java:1)");
  std::string error;
  PutVarint(&error, h.data().size());
  error += h.data();
  r = ParseResponseFrame(error);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->call_id, 7u);
  EXPECT_EQ(r->status, RpcStatus::kError);
  EXPECT_TRUE(r->body.empty());
  EXPECT_EQ(DescribeRemoteError(*r),
            "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException: "
            "Application doesn't exist in cache appattempt_1_0001_000001");

  EXPECT_FALSE(ParseResponseFrame(Bytes({0x05, 0x08})).ok());                    // truncated header
  EXPECT_FALSE(ParseResponseFrame(Bytes({0x02, 0x10, 0x00})).ok());              // no callId
  EXPECT_FALSE(ParseResponseFrame(Bytes({0x04, 0x08, 0x01, 0x10, 0x07})).ok());  // status 7
}

Token TestToken(const std::string& password = "pw-bytes\x01\x02") {
  return Token{std::string("\x0a\x0d\x0a\x09\x08\x07\x10\xfb", 8), password, "YARN_AM_RM_TOKEN",
               ""};
}

TEST(HadoopIpc, ClientAuthenticatesWithDigestMd5AndCalls) {
  int calls = 0;
  FakeHadoopServer server(TestToken(), [&](const FakeCall& call) {
    ++calls;
    EXPECT_EQ(call.protocol, kApplicationMasterProtocol);
    if (call.method == "fail") {
      return FakeReply{"", "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException",
                       "Invalid resource request, requested memory < 0\n\tat org.a.B.c(B.java:3)"};
    }
    return FakeReply{"echo:" + call.method + ":" + call.request};
  });
  IpcOptions o;
  o.host = "127.0.0.1";
  o.port = server.port();
  o.protocol = kApplicationMasterProtocol;
  o.token = TestToken();
  IpcClient client(o);
  auto r = client.Call("allocate", "req1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "echo:allocate:req1");
  r = client.Call("allocate", "req2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "echo:allocate:req2");
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(server.authentications(), 1);

  auto e = client.Call("fail", "");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(client.last_exception_class(),
            "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException");
  EXPECT_NE(e.status().message().find("requested memory < 0"), std::string::npos);
  EXPECT_EQ(e.status().message().find("B.java"), std::string::npos);
  // An ERROR leaves the connection open.
  ASSERT_TRUE(client.Call("allocate", "req3").ok());
  EXPECT_EQ(client.last_exception_class(), "");
  EXPECT_EQ(server.connections(), 1);

  // The server drops the connection: the next call reconnects and authenticates again.
  server.DropConnections();
  r = client.Call("allocate", "req4");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "echo:allocate:req4");
  EXPECT_EQ(server.connections(), 2);
  EXPECT_EQ(server.authentications(), 2);
  EXPECT_EQ(calls, 5);
  EXPECT_TRUE(server.failures().empty());
  ASSERT_EQ(server.protocols().size(), 2u);
  EXPECT_EQ(server.protocols()[0], kApplicationMasterProtocol);
}

TEST(HadoopIpc, WrongTokenPasswordIsPermissionDenied) {
  FakeHadoopServer server(TestToken(), [](const FakeCall&) { return FakeReply{"x"}; });
  IpcOptions o;
  o.host = "127.0.0.1";
  o.port = server.port();
  o.protocol = kContainerManagementProtocol;
  o.token = TestToken("another password");
  IpcClient client(o);
  auto r = client.Call("startContainers", "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("Mismatched response"), std::string::npos);
  EXPECT_NE(r.status().message().find("127.0.0.1"), std::string::npos);
  EXPECT_EQ(server.authentications(), 0);
}

TEST(HadoopIpc, RolledOverTokenIsUsedForTheNextConnection) {
  FakeHadoopServer server(TestToken(), [](const FakeCall&) { return FakeReply{"ok"}; });
  IpcOptions o;
  o.host = "127.0.0.1";
  o.port = server.port();
  o.protocol = kApplicationMasterProtocol;
  o.token = TestToken();
  IpcClient client(o);
  ASSERT_TRUE(client.Call("allocate", "").ok());
  Token rolled = TestToken("new key");
  server.SetToken(rolled);
  client.SetToken(rolled);
  auto r = client.Call("allocate", "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(server.authentications(), 2);
}

IpcOptions WrappedClientOptions(int port, std::vector<SaslQop> qops) {
  IpcOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.protocol = kContainerManagementProtocol;
  o.token = TestToken();
  o.qops = std::move(qops);
  return o;
}

// The WRAP framing end to end: the connection context and every call and response go through
// the negotiated layer, large messages span several WRAP tokens, and the stream survives a
// reconnect (fresh keys and sequence numbers).
TEST(HadoopIpc, IntegrityAndPrivacyWrapEveryFrameAfterSasl) {
  for (const char* level : {"integrity", "privacy"}) {
    const SaslQop qop = (*ParseRpcProtection(level))[0];
    const std::string secret_request = "request-marker-" + std::string(level);
    const std::string big(200000, 'z');  // larger than one 64 KiB WRAP token
    FakeHadoopServer server(
        TestToken(),
        [&](const FakeCall& call) {
          EXPECT_EQ(call.protocol, kContainerManagementProtocol);
          if (call.method == "big") return FakeReply{big + call.request};
          if (call.method == "fail") return FakeReply{"", "java.io.IOException", "no such node"};
          return FakeReply{"reply-to:" + call.request};
        },
        QopName(qop));
    IpcClient client(WrappedClientOptions(server.port(), {qop}));
    auto r = client.Call("startContainers", secret_request);
    ASSERT_TRUE(r.ok()) << level << ": " << r.status().ToString();
    EXPECT_EQ(*r, "reply-to:" + secret_request);
    auto b = client.Call("big", big);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(*b, big + big);
    auto e = client.Call("fail", "");  // an ERROR, wrapped too, keeps the connection
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().message().find("no such node"), std::string::npos);
    ASSERT_TRUE(client.Call("startContainers", "after").ok());
    server.DropConnections();
    r = client.Call("startContainers", "again");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, "reply-to:again");

    EXPECT_TRUE(server.failures().empty()) << server.failures()[0];
    EXPECT_EQ(server.negotiated(), (std::vector<std::string>{QopName(qop), QopName(qop)}));
    // Context + 5 calls, the 200 kB request in 4 tokens: at least 9 wrapped messages.
    EXPECT_GE(server.wrapped_messages(), 9);
    ASSERT_EQ(server.protocols().size(), 2u);
    const std::string wire = server.received_bytes();
    // Privacy hides the protocol, method and request; integrity sends them in the clear.
    EXPECT_EQ(wire.find(secret_request) == std::string::npos, qop == SaslQop::kAuthConf);
    EXPECT_EQ(wire.find("startContainers") == std::string::npos, qop == SaslQop::kAuthConf);
  }
}

TEST(HadoopIpc, ALevelTheServerDoesNotOfferIsRefusedNamingTheSetting) {
  FakeHadoopServer server(
      TestToken(), [](const FakeCall&) { return FakeReply{"x"}; }, "auth-conf");
  IpcClient client(WrappedClientOptions(server.port(), {SaslQop::kAuth, SaslQop::kAuthInt}));
  auto r = client.Call("startContainers", "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("hadoop.rpc.protection"), std::string::npos);
  EXPECT_EQ(server.authentications(), 0);

  // A list on both sides: the client's first level that the server offers.
  FakeHadoopServer mixed(
      TestToken(), [](const FakeCall&) { return FakeReply{"ok"}; }, "auth-conf,auth-int,auth");
  IpcClient listed(WrappedClientOptions(mixed.port(), {SaslQop::kAuthInt, SaslQop::kAuth}));
  ASSERT_TRUE(listed.Call("startContainers", "").ok());
  EXPECT_EQ(mixed.negotiated(), std::vector<std::string>{"auth-int"});
}

TEST(HadoopIpc, UnreachableServerIsAnErrorNamingTheAddress) {
  net::Socket unused;
  {
    auto l = net::ListenTcp("127.0.0.1", 0);
    ASSERT_TRUE(l.ok());
    unused = std::move(*l);
  }
  const int port = net::LocalPort(unused);
  unused.Close();  // nothing listens there now
  IpcOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.protocol = kApplicationMasterProtocol;
  o.token = TestToken();
  o.connect_timeout_ms = 2000;
  IpcClient client(o);
  auto r = client.Call("allocate", "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos);
}

}  // namespace
}  // namespace tarn::cluster::yarn
