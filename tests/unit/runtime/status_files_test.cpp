// The coordinator's status files, written off its thread: what reaches the file system, in
// which order, and that a slow file system is never asked for stale contents.
#include "runtime/status_files.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>

#include "data/file_system.h"
#include "test_util.h"

namespace tarn::runtime {
namespace {

using tarn::testing::TempDir;

// A file system that records every committed write and, while `held`, keeps the
// first one waiting in Commit (as a WebHDFS write waits on the NameNode).
class HeldFileSystem : public data::FileSystem {
 public:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool held = true;
    bool first_waiting = false;
    std::vector<std::pair<std::string, std::string>> written;
  };

  explicit HeldFileSystem(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
  std::string name() const override { return "held"; }
  Result<data::FileStatus> Stat(const std::string& p) override { return NotFound(p); }
  Result<std::vector<data::FileStatus>> List(const std::string& p) override { return NotFound(p); }
  Result<std::unique_ptr<data::ReadableFile>> OpenRead(const std::string& p) override {
    return NotFound(p);
  }
  Result<std::unique_ptr<data::WritableFile>> OpenWrite(const std::string& p) override {
    return std::unique_ptr<data::WritableFile>(new File(p, s_));
  }
  Status MakeDirs(const std::string&) override { return Status::Ok(); }
  Status Delete(const std::string&, bool) override { return Status::Ok(); }
  Status Rename(const std::string&, const std::string&) override { return Status::Ok(); }

 private:
  class File : public data::WritableFile {
   public:
    File(std::string path, std::shared_ptr<Shared> s) : path_(std::move(path)), s_(std::move(s)) {}
    const std::string& path() const override { return path_; }
    Status Write(const void* data, size_t n) override {
      bytes_.append(static_cast<const char*>(data), n);
      return Status::Ok();
    }
    Status Commit() override {
      std::unique_lock<std::mutex> lock(s_->mu);
      if (s_->written.empty()) {
        s_->first_waiting = true;
        s_->cv.notify_all();
        s_->cv.wait(lock, [&] { return !s_->held; });
      }
      s_->written.emplace_back(path_, bytes_);
      return Status::Ok();
    }

   private:
    std::string path_, bytes_;
    std::shared_ptr<Shared> s_;
  };

  std::shared_ptr<Shared> s_;
};

TEST(StatusFiles, ASlowWriteIsFollowedOnlyByTheNewestContents) {
  auto shared = std::make_shared<HeldFileSystem::Shared>();
  data::RegisterFileSystem(
      "tarnheld", [shared](const std::string&, const std::string&, const Settings&) {
        return Result<std::shared_ptr<data::FileSystem>>(std::make_shared<HeldFileSystem>(shared));
      });
  StatusFiles files;
  files.Put("tarnheld://nn/cluster.json", "phase 1");
  {
    std::unique_lock<std::mutex> lock(shared->mu);
    shared->cv.wait(lock, [&] { return shared->first_waiting; });
  }
  // While that write waits: cluster.json twice more, and the history once.
  files.Put("tarnheld://nn/cluster.json", "phase 2");
  files.Put("tarnheld://nn/history.json", "[1]");
  files.Put("tarnheld://nn/cluster.json", "phase 3");
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->held = false;
  }
  shared->cv.notify_all();
  files.Flush();
  std::lock_guard<std::mutex> lock(shared->mu);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"tarnheld://nn/cluster.json", "phase 1"},
      {"tarnheld://nn/cluster.json", "phase 3"},
      {"tarnheld://nn/history.json", "[1]"}};
  EXPECT_EQ(shared->written, want);
}

TEST(StatusFiles, FlushAndTheEndWriteEverythingPut) {
  TempDir dir;
  {
    StatusFiles files;
    files.Put(dir.File("a.json"), "a1");
    files.Put(dir.File("sub/b.json"), "b1");
    files.Flush();
    auto fs = data::FileSystemFor(dir.path());
    ASSERT_TRUE(fs.ok());
    EXPECT_EQ(*(*fs)->ReadAll(dir.File("a.json")), "a1");
    EXPECT_EQ(*(*fs)->ReadAll(dir.File("sub/b.json")), "b1");
    files.Put(dir.File("a.json"), "a2");
  }  // the destructor writes what is still queued
  auto fs = data::FileSystemFor(dir.path());
  EXPECT_EQ(*(*fs)->ReadAll(dir.File("a.json")), "a2");
}

// A file rewritten within its interval waits for it, unless someone flushes.
TEST(StatusFiles, FlushDoesNotWaitForTheInterval) {
  TempDir dir;
  StatusFiles files(std::chrono::hours(1));
  files.Put(dir.File("cluster.json"), "1");
  files.Flush();
  files.Put(dir.File("cluster.json"), "2");  // due only in an hour
  files.Put(dir.File("cluster.json"), "3");
  files.Flush();
  auto fs = data::FileSystemFor(dir.path());
  EXPECT_EQ(*(*fs)->ReadAll(dir.File("cluster.json")), "3");
}

TEST(StatusFiles, AFailedWriteDoesNotStopTheOthers) {
  TempDir dir;
  const std::string blocker = dir.Write("file", "x");
  StatusFiles files;
  files.Put(blocker + "/under-a-file.json", "never");  // a file is no folder
  files.Put(dir.File("ok.json"), "ok");
  files.Flush();
  auto fs = data::FileSystemFor(dir.path());
  EXPECT_EQ(*(*fs)->ReadAll(dir.File("ok.json")), "ok");
  EXPECT_FALSE(data::PathExistsAnywhere(blocker + "/under-a-file.json"));
}

}  // namespace
}  // namespace tarn::runtime
