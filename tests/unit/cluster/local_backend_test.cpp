// The local backend: child processes, their logs, exits and kills.
#include "cluster/local_backend.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "common/files.h"
#include "test_util.h"

namespace tarn::cluster {
namespace {

TEST(LocalBackendTest, LaunchesLogsReportsExitsAndKills) {
  tarn::testing::TempDir logs;
  auto backend = MakeLocalBackend(logs.path());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<TaskExit> exits;
  backend->OnExit([&](const TaskExit& e) {
    std::lock_guard<std::mutex> lock(mu);
    exits.push_back(e);
    cv.notify_all();
  });
  LaunchSpec ok;
  ok.role = "worker";
  ok.index = 3;
  ok.argv = {"/bin/sh", "-c", "echo hello $TARN_TEST_VALUE; exit 4"};
  ok.env["TARN_TEST_VALUE"] = "from-env";
  auto a = backend->Launch(ok);
  ASSERT_TRUE(a.ok()) << a.status().message();
  LaunchSpec sleeper;
  sleeper.role = "ps";
  sleeper.argv = {"/bin/sleep", "30"};
  auto b = backend->Launch(sleeper);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(backend->Where(*b).find("pid "), std::string::npos);
  ASSERT_TRUE(backend->Kill(*b).ok());
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return exits.size() == 2; }));
  for (const auto& e : exits) {
    if (e.task == *a) {
      EXPECT_EQ(e.exit_code, 4);
    } else {
      EXPECT_EQ(e.exit_code, 128 + 9);
      EXPECT_NE(e.describe.find("killed by signal 9"), std::string::npos);
    }
  }
  auto log = ReadFile(logs.File("worker-3.log"));
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("hello from-env"), std::string::npos);
  EXPECT_NE(log->find("worker 3 launched"), std::string::npos);
  EXPECT_FALSE(backend->Launch(LaunchSpec{}).ok());
}

}  // namespace
}  // namespace tarn::cluster
