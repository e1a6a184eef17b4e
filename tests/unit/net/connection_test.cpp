// Framed connections: the handshake, frames, limits, and the in-process pair.
#include "net/connection.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>
#include <thread>

#include "net/hmac.h"
#include "net/socket.h"
#include "net/tls.h"

namespace tarn::net {
namespace {

struct Served {
  Socket listener;
  int port = 0;
};

Served ListenLoopback() {
  Served s;
  auto l = ListenTcp("127.0.0.1", 0);
  EXPECT_TRUE(l.ok()) << l.status().message();
  s.listener = std::move(*l);
  s.port = LocalPort(s.listener);
  return s;
}

TEST(HmacTest, MatchesRfc4231TestCase2) {
  Digest d = HmacSha256("Jefe", "what do ya want for nothing?");
  const uint8_t want[] = {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24,
                          0x26, 0x08, 0x95, 0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27,
                          0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
  EXPECT_EQ(0, std::memcmp(d.data(), want, 32));
  auto a = NewJobSecret(), b = NewJobSecret();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 64u);
  EXPECT_NE(*a, *b);
}

TEST(ConnectionTest, AuthenticatedFramesRoundTrip) {
  Served s = ListenLoopback();
  ConnectionOptions o;
  std::unique_ptr<Connection> server;
  std::thread t([&] {
    auto raw = AcceptTcp(s.listener, Deadline::InMs(5000));
    ASSERT_TRUE(raw.ok());
    auto c = AuthenticateServer(std::move(*raw), "secret", o);
    ASSERT_TRUE(c.ok()) << c.status().message();
    server = std::move(*c);
  });
  auto client = Dial("127.0.0.1", s.port, "secret", o, Deadline::InMs(5000));
  t.join();
  ASSERT_TRUE(client.ok()) << client.status().message();
  ASSERT_TRUE(server);
  Message m;
  m.type = 7;
  m.id = 42;
  m.payload = std::string(100000, 'x');  // more than one write
  ASSERT_TRUE((*client)->Send(m, Deadline::InMs(5000)).ok());
  auto got = server->Receive(Deadline::InMs(5000));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->type, 7);
  EXPECT_EQ(got->id, 42u);
  EXPECT_EQ(got->payload, m.payload);
  EXPECT_GT((*client)->bytes_sent(), 100000u);
  // Nothing more to read: the deadline passes without breaking the stream.
  auto none = server->Receive(Deadline::InMs(20));
  EXPECT_EQ(none.status().code(), StatusCode::kDeadlineExceeded);
  m.payload = "again";
  ASSERT_TRUE((*client)->Send(m, Deadline::InMs(5000)).ok());
  got = server->Receive(Deadline::InMs(5000));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->payload, "again");
}

TEST(ConnectionTest, WrongSecretIsRefusedOnBothSides) {
  Served s = ListenLoopback();
  ConnectionOptions o;
  Status server_status;
  std::thread t([&] {
    auto raw = AcceptTcp(s.listener, Deadline::InMs(5000));
    ASSERT_TRUE(raw.ok());
    server_status = AuthenticateServer(std::move(*raw), "right", o).status();
  });
  auto client = Dial("127.0.0.1", s.port, "wrong", o, Deadline::InMs(5000));
  t.join();
  EXPECT_EQ(server_status.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(server_status.message().find("does not know the job secret"), std::string::npos);
  EXPECT_EQ(client.status().code(), StatusCode::kPermissionDenied);
}

TEST(ConnectionTest, GarbageAndSilentPeersAreRefused) {
  Served s = ListenLoopback();
  ConnectionOptions o;
  o.auth_timeout_ms = 200;
  for (const std::string& junk :
       {std::string(200, '\x7f'), std::string("GET / HTTP/1.1\r\n\r\n"), std::string()}) {
    Status server_status;
    std::thread t([&] {
      auto raw = AcceptTcp(s.listener, Deadline::InMs(5000));
      ASSERT_TRUE(raw.ok());
      server_status = AuthenticateServer(std::move(*raw), "secret", o).status();
    });
    auto peer = ConnectTcp("127.0.0.1", s.port, Deadline::InMs(5000));
    ASSERT_TRUE(peer.ok());
    if (!junk.empty()) (void)peer->WriteAll(junk.data(), junk.size(), Deadline::InMs(1000));
    t.join();
    EXPECT_EQ(server_status.code(), StatusCode::kPermissionDenied) << server_status.message();
  }
}

TEST(ConnectionTest, OversizedAndForeignFramesAreRefused) {
  ConnectionOptions o;
  o.max_message_bytes = 1000;
  Served s = ListenLoopback();
  std::unique_ptr<Connection> server;
  std::thread t([&] {
    auto raw = AcceptTcp(s.listener, Deadline::InMs(5000));
    ASSERT_TRUE(raw.ok());
    auto c = AuthenticateServer(std::move(*raw), "k", o);
    ASSERT_TRUE(c.ok());
    server = std::move(*c);
  });
  ConnectionOptions big;  // the sender's own limit is larger
  auto client = Dial("127.0.0.1", s.port, "k", big, Deadline::InMs(5000));
  t.join();
  ASSERT_TRUE(client.ok());
  Message m;
  m.payload = std::string(5000, 'y');
  ASSERT_TRUE((*client)->Send(m, Deadline::InMs(5000)).ok());
  auto got = server->Receive(Deadline::InMs(5000));
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("exceeds the limit"), std::string::npos);
  // A sender refuses to send above its own limit.
  Message too_big;
  too_big.payload = std::string(2000, 'z');
  EXPECT_FALSE(server->Send(too_big, Deadline::InMs(1000)).ok());
}

// A server thread's AuthenticateServer and a Dial, with options each.
struct HandshakeResult {
  Result<std::unique_ptr<Connection>> server = Internal("not run");
  Result<std::unique_ptr<Connection>> client = Internal("not run");
};

HandshakeResult Handshake(const std::string& server_secret, const ConnectionOptions& server_o,
                          const std::string& client_secret, const ConnectionOptions& client_o) {
  Served s = ListenLoopback();
  HandshakeResult r;
  std::thread t([&] {
    auto raw = AcceptTcp(s.listener, Deadline::InMs(5000));
    if (raw.ok()) r.server = AuthenticateServer(std::move(*raw), server_secret, server_o);
  });
  r.client = Dial("127.0.0.1", s.port, client_secret, client_o, Deadline::InMs(5000));
  t.join();
  return r;
}

ConnectionOptions Tls(bool on) {
  ConnectionOptions o;
  o.tls = on;
  o.auth_timeout_ms = 1500;
  return o;
}

TEST(ConnectionTlsTest, FramesRoundTripBothWaysWhileTheOtherSideSends) {
  auto r = Handshake("secret", Tls(true), "secret", Tls(true));
  ASSERT_TRUE(r.server.ok()) << r.server.status().message();
  ASSERT_TRUE(r.client.ok()) << r.client.status().message();
  Connection& server = **r.server;
  Connection& client = **r.client;
  // One thread sends while another receives on the same connection, both ways at once.
  constexpr int kMessages = 200;
  std::thread echo([&] {
    for (int i = 0; i < kMessages; ++i) {
      auto m = server.Receive(Deadline::InMs(10000));
      ASSERT_TRUE(m.ok()) << m.status().message();
      m->flags = kFlagReply;
      ASSERT_TRUE(server.Send(*m, Deadline::InMs(10000)).ok());
    }
  });
  std::thread sender([&] {
    for (int i = 0; i < kMessages; ++i) {
      Message m;
      m.id = static_cast<uint64_t>(i);
      m.payload = std::string(i % 7 == 0 ? 70000 : 10 + i, static_cast<char>('a' + i % 26));
      ASSERT_TRUE(client.Send(m, Deadline::InMs(10000)).ok());
    }
  });
  for (int i = 0; i < kMessages; ++i) {
    auto m = client.Receive(Deadline::InMs(10000));
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(m->id, static_cast<uint64_t>(i));
    EXPECT_EQ(m->payload.size(), i % 7 == 0 ? 70000u : static_cast<size_t>(10 + i));
    EXPECT_EQ(m->payload[0], static_cast<char>('a' + i % 26));
  }
  sender.join();
  echo.join();
  // A wait with nothing to read passes its deadline and leaves the stream usable.
  EXPECT_EQ(server.Receive(Deadline::InMs(20)).status().code(), StatusCode::kDeadlineExceeded);
  client.Close();
  EXPECT_FALSE(server.Receive(Deadline::InMs(5000)).ok());
}

TEST(ConnectionTlsTest, APeerWithoutTheSecretOrWithoutTlsIsRefused) {
  auto wrong = Handshake("secret", Tls(true), "another", Tls(true));
  ASSERT_FALSE(wrong.client.ok());
  EXPECT_EQ(wrong.client.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(wrong.client.status().message().find("TLS handshake"), std::string::npos);
  ASSERT_FALSE(wrong.server.ok());
  EXPECT_EQ(wrong.server.status().code(), StatusCode::kPermissionDenied);

  auto plain_client = Handshake("secret", Tls(true), "secret", Tls(false));
  EXPECT_FALSE(plain_client.client.ok());
  EXPECT_FALSE(plain_client.server.ok());
  auto plain_server = Handshake("secret", Tls(false), "secret", Tls(true));
  EXPECT_FALSE(plain_server.client.ok());
  EXPECT_FALSE(plain_server.server.ok());
}

TEST(ConnectionTlsTest, PskStreamNegotiatesTls13WithTheSameKeyOnly) {
  for (const char* client_key : {"the job's key", "another key"}) {
    Served s = ListenLoopback();
    Result<std::unique_ptr<TlsPskStream>> server = Internal("not run");
    std::thread t([&] {
      auto raw = AcceptTcp(s.listener, Deadline::InMs(5000));
      ASSERT_TRUE(raw.ok());
      server = TlsPskStream::Handshake(std::move(*raw), TlsPskStream::Side::kServer,
                                       "the job's key", Deadline::InMs(5000));
    });
    auto raw = ConnectTcp("127.0.0.1", s.port, Deadline::InMs(5000));
    ASSERT_TRUE(raw.ok());
    auto client = TlsPskStream::Handshake(std::move(*raw), TlsPskStream::Side::kClient, client_key,
                                          Deadline::InMs(5000));
    t.join();
    if (std::string(client_key) != "the job's key") {
      EXPECT_EQ(client.status().code(), StatusCode::kPermissionDenied);
      EXPECT_EQ(server.status().code(), StatusCode::kPermissionDenied);
      continue;
    }
    ASSERT_TRUE(client.ok()) << client.status().message();
    ASSERT_TRUE(server.ok()) << server.status().message();
    EXPECT_EQ((*client)->Description().rfind("TLSv1.3 ", 0), 0u) << (*client)->Description();
    ASSERT_TRUE((*client)->WriteAll("ping", 4, Deadline::InMs(5000)).ok());
    char got[4];
    ASSERT_TRUE((*server)->ReadAll(got, 4, Deadline::InMs(5000)).ok());
    EXPECT_EQ(std::string(got, 4), "ping");
  }
}

TEST(ConnectionTlsTest, TheClientSpeaksTlsFirst) {
  // What a TLS client puts on the wire first is a TLS handshake record, not tarn's handshake.
  Served s = ListenLoopback();
  std::string first(5, '\0');
  std::thread t([&] {
    auto raw = AcceptTcp(s.listener, Deadline::InMs(5000));
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(raw->ReadAll(first.data(), first.size(), Deadline::InMs(5000)).ok());
  });
  auto client = Dial("127.0.0.1", s.port, "secret", Tls(true), Deadline::InMs(3000));
  t.join();
  EXPECT_FALSE(client.ok());
  EXPECT_EQ(first[0], 0x16);  // handshake
  EXPECT_EQ(first[1], 0x03);  // TLS major version
}

TEST(ConnectionTest, InProcessPairCarriesMessagesAndCloses) {
  ConnectionOptions o;
  auto p = InProcessPair(o, "test");
  Message m;
  m.type = 3;
  m.payload = "hello";
  ASSERT_TRUE(p.a->Send(m, Deadline::Never()).ok());
  auto got = p.b->Receive(Deadline::InMs(1000));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->payload, "hello");
  EXPECT_EQ(p.b->Receive(Deadline::InMs(10)).status().code(), StatusCode::kDeadlineExceeded);
  std::thread t([&] { p.a->Close(); });
  EXPECT_EQ(p.b->Receive(Deadline::Never()).status().code(), StatusCode::kUnavailable);
  t.join();
}

TEST(SocketTest, SplitHostPortNamesBadAddresses) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(SplitHostPort("127.0.0.1:8080", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8080);
  ASSERT_TRUE(SplitHostPort("[::1]:9", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_FALSE(SplitHostPort("nohost", &host, &port).ok());
  EXPECT_FALSE(SplitHostPort("h:99999", &host, &port).ok());
}

}  // namespace
}  // namespace tarn::net
