// Calls with retries: a dropped request or reply is sent again and runs once.
#include "net/rpc.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "net/wire.h"

namespace tarn::net {
namespace {

TEST(RpcTest, CallsRetriesAndDeferredAnswersRunOnce) {
  std::atomic<int> runs{0};
  std::shared_ptr<RpcServer::Responder> parked;
  std::mutex mu;
  auto server = RpcServer::Start(
      "127.0.0.1", 0, "s", ConnectionOptions{},
      [&](const RpcServer::Request& r, std::shared_ptr<RpcServer::Responder> out) {
        ++runs;
        if (r.type == 1) {
          out->Reply("echo:" + r.payload);
        } else if (r.type == 2) {
          std::lock_guard<std::mutex> lock(mu);
          parked = out;  // answered later, from another thread
        } else {
          out->Fail(InvalidArgument("type " + std::to_string(r.type) + " is unknown"));
        }
      });
  ASSERT_TRUE(server.ok());
  // A client whose messages are dropped half the time still gets one answer per call.
  ConnectionOptions lossy;
  lossy.drop_rate = 0.5;
  lossy.fault_seed = 7;
  auto c = Dial("127.0.0.1", (*server)->port(), "s", lossy, Deadline::InMs(5000));
  ASSERT_TRUE(c.ok());
  RpcClient client(std::move(*c), 10);
  for (int i = 0; i < 20; ++i) {
    auto r = client.Call(1, std::to_string(i), Deadline::InMs(10000));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r, "echo:" + std::to_string(i));
  }
  EXPECT_EQ(runs.load(), 20);  // retries of the same request did not run it again
  // An error comes back as the handler's status.
  auto bad = client.Call(9, "", Deadline::InMs(10000));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("type 9 is unknown"), std::string::npos);
  // A long poll: answered after the client has resent it several times.
  runs = 0;
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_TRUE(parked);
    parked->Reply("late");
  });
  auto r = client.Call(2, "", Deadline::InMs(10000));
  later.join();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "late");
  EXPECT_EQ(runs.load(), 1);
  // A deadline that passes returns DeadlineExceeded.
  auto timeout = client.Call(2, "", Deadline::InMs(50));
  EXPECT_EQ(timeout.status().code(), StatusCode::kDeadlineExceeded);
  (*server)->Stop();
}

TEST(RpcTest, PeersWithoutTheSecretNeverReachTheHandler) {
  std::atomic<int> runs{0};
  ConnectionOptions o;
  o.auth_timeout_ms = 300;
  auto server =
      RpcServer::Start("127.0.0.1", 0, "right", o,
                       [&](const RpcServer::Request&, std::shared_ptr<RpcServer::Responder> out) {
                         ++runs;
                         out->Reply("");
                       });
  ASSERT_TRUE(server.ok());
  auto wrong = Dial("127.0.0.1", (*server)->port(), "wrong", o, Deadline::InMs(5000));
  EXPECT_FALSE(wrong.ok());
  auto raw = ConnectTcp("127.0.0.1", (*server)->port(), Deadline::InMs(5000));
  ASSERT_TRUE(raw.ok());
  std::string junk(4096, 'A');
  (void)raw->WriteAll(junk.data(), junk.size(), Deadline::InMs(1000));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((*server)->refused() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ((*server)->refused(), 2);
  EXPECT_EQ(runs.load(), 0);
  // A client with the secret still works.
  auto right = Dial("127.0.0.1", (*server)->port(), "right", o, Deadline::InMs(5000));
  ASSERT_TRUE(right.ok());
  RpcClient client(std::move(*right), 1000);
  EXPECT_TRUE(client.Call(1, "", Deadline::InMs(5000)).ok());
  EXPECT_EQ(runs.load(), 1);
}

TEST(RpcTest, AHandlerThatThrowsFailsItsRequestAndTheServerKeepsServing) {
  auto server =
      RpcServer::Start("127.0.0.1", 0, "s", ConnectionOptions{},
                       [](const RpcServer::Request& r, std::shared_ptr<RpcServer::Responder> out) {
                         if (r.payload == "bad")
                           throw std::runtime_error("field 'x' is not a number");
                         if (r.payload == "odd") throw 7;
                         out->Reply("ok:" + r.payload);
                       });
  ASSERT_TRUE(server.ok());
  auto c = Dial("127.0.0.1", (*server)->port(), "s", ConnectionOptions{}, Deadline::InMs(5000));
  ASSERT_TRUE(c.ok());
  RpcClient client(std::move(*c), 1000);
  auto bad = client.Call(30, "bad", Deadline::InMs(5000));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("message type 30"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("field 'x' is not a number"), std::string::npos)
      << bad.status().message();
  auto odd = client.Call(31, "odd", Deadline::InMs(5000));
  EXPECT_EQ(odd.status().code(), StatusCode::kInvalidArgument);
  // The same connection, and the server, still answer.
  auto good = client.Call(30, "fine", Deadline::InMs(5000));
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(*good, "ok:fine");
}

TEST(WireTest, ShortPayloadsAreErrorsNotOverreads) {
  WireWriter w;
  w.U32(5);
  w.Str("abc");
  std::vector<float> f = {1, 2, 3};
  w.Floats(f);
  std::string bytes = w.Take();
  WireReader r(bytes);
  uint32_t v = 0;
  std::string s;
  std::vector<float> got;
  ASSERT_TRUE(r.U32(&v).ok());
  ASSERT_TRUE(r.Str(&s).ok());
  ASSERT_TRUE(r.Floats(&got).ok());
  EXPECT_EQ(v, 5u);
  EXPECT_EQ(s, "abc");
  EXPECT_EQ(got, f);
  EXPECT_TRUE(r.done());
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    WireReader t(std::string_view(bytes).substr(0, cut));
    bool ok = t.U32(&v).ok() && t.Str(&s).ok() && t.Floats(&got).ok();
    EXPECT_FALSE(ok) << "cut at " << cut;
  }
  const std::string floats_only = bytes.substr(4 + 4 + 3);  // the reader views, not owns
  WireReader limited(floats_only);
  EXPECT_FALSE(limited.Floats(&got, 2).ok());  // more values than allowed
}

}  // namespace
}  // namespace tarn::net
