#include "common/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/checksum.h"
#include "test_util.h"

namespace tarn {
namespace {

TEST(AtomicFileTest, UncommittedWriteLeavesOldContents) {
  testing::TempDir dir;
  std::string path = dir.Write("out.txt", "old");
  {
    auto f = AtomicFile::Open(path);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->Write("new contents").ok());
    // destroyed without Commit: a failed step
  }
  EXPECT_EQ(*ReadFile(path), "old");
  auto names = ListDirectory(dir.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 1u) << "the temporary file must be removed";
}

TEST(AtomicFileTest, CommitReplacesAndWriteAtPatches) {
  testing::TempDir dir;
  std::string path = dir.File("out.bin");
  auto f = AtomicFile::Open(path);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->Write("0000abcd").ok());
  ASSERT_TRUE(f->WriteAt(0, "12", 2).ok());
  ASSERT_TRUE(f->Write("!").ok());
  ASSERT_TRUE(f->Commit().ok());
  EXPECT_EQ(*ReadFile(path), "1200abcd!");
}

TEST(FilesTest, MissingPathIsNotFoundAndNamed) {
  auto r = ReadFile("/nonexistent/tarn/file");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/tarn/file"), std::string::npos);
}

TEST(FilesTest, ResolvePathIsRelativeToBase) {
  EXPECT_EQ(ResolvePath("/a/b", "./c/d"), "/a/b/c/d");
  EXPECT_EQ(ResolvePath("/a/b", "../c"), "/a/c");
  EXPECT_EQ(ResolvePath("/a/b", "/abs"), "/abs");
  EXPECT_EQ(ResolvePath("/a/b", "hdfs://nn/x"), "hdfs://nn/x");
}

TEST(ChecksumTest, Crc32cKnownVectors) {
  // RFC 3720 B.4 test vectors.
  std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(0, zeros.data(), zeros.size()), 0x8A9136AAu);
  std::string ff(32, '\xff');
  EXPECT_EQ(Crc32c(0, ff.data(), ff.size()), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(0, "123456789", 9), 0xE3069283u);
  // Incremental equals one-shot.
  EXPECT_EQ(Crc32c(Crc32c(0, "12345", 5), "6789", 4), 0xE3069283u);
}

TEST(FilesTest, RemoveStalePidFoldersKeepsLiveRuns) {
  testing::TempDir dir;
  // A PID that is surely gone: a child that has exited and been reaped.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const std::string prefix = dir.File("out.partial-");
  dir.Write("out.partial-" + std::to_string(child) + "/part-0", "stale");
  dir.Write("out.partial-" + std::to_string(::getpid()) + "/part-0", "running");
  dir.Write("out.partial-abc/part-0", "not a pid");
  dir.Write("out/part-0", "final");
  auto removed = RemoveStalePidFolders(prefix);
  ASSERT_TRUE(removed.ok()) << removed.status().message();
  ASSERT_EQ(removed->size(), 1u);
  EXPECT_EQ((*removed)[0], prefix + std::to_string(child));
  EXPECT_FALSE(PathExists(prefix + std::to_string(child)));
  EXPECT_TRUE(PathExists(prefix + std::to_string(::getpid())));
  EXPECT_TRUE(PathExists(prefix + "abc"));
  EXPECT_TRUE(PathExists(dir.File("out/part-0")));
  // No folder at all: nothing to do.
  EXPECT_TRUE(RemoveStalePidFolders(dir.File("absent/x.partial-"))->empty());
}

TEST(FilesTest, MakePrivateDirIsThisUsersAloneAndRefusesAPlantedLink) {
  testing::TempDir dir;
  const std::string path = dir.File("scratch");
  ASSERT_TRUE(MakePrivateDir(path).ok());
  struct stat st;
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // This user's own leftover is emptied.
  dir.Write("scratch/1/model.tarn", "old");
  ASSERT_TRUE(MakePrivateDir(path).ok());
  EXPECT_FALSE(PathExists(dir.File("scratch/1")));
  // A link (another user's plant, say) is refused and left alone, as is its target.
  dir.Write("elsewhere/keep", "theirs");
  const std::string link = dir.File("planted");
  ASSERT_EQ(::symlink(dir.File("elsewhere").c_str(), link.c_str()), 0);
  Status planted = MakePrivateDir(link);
  EXPECT_EQ(planted.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(planted.message().find(link), std::string::npos) << planted.message();
  EXPECT_TRUE(PathExists(dir.File("elsewhere/keep")));
  // A file is no folder.
  dir.Write("a-file", "x");
  EXPECT_FALSE(MakePrivateDir(dir.File("a-file")).ok());
}

}  // namespace
}  // namespace tarn
