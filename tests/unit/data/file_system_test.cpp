#include "data/file_system.h"

#include <gtest/gtest.h>

#include <string>

#include "../test_util.h"
#include "common/settings.h"

namespace tarn::data {
namespace {

using tarn::testing::TempDir;

// ---------------------------------------------------------------------------------------------
// Local files

TEST(LocalFileSystem, StatListReadAndSeek) {
  TempDir dir;
  dir.Write("b.txt", "bravo");
  dir.Write("a.txt", "0123456789");
  dir.Write("sub/c.txt", "c");
  auto fs = FileSystemFor(dir.path());
  ASSERT_TRUE(fs.ok());
  EXPECT_EQ((*fs)->name(), "local");

  auto st = (*fs)->Stat(dir.File("a.txt"));
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->is_dir);
  EXPECT_EQ(st->length, 10u);
  EXPECT_EQ(st->name, "a.txt");
  EXPECT_GT(st->modification_time_ms, 1000000000000);

  auto missing = (*fs)->Stat(dir.File("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.File("nope")), std::string::npos);

  auto list = (*fs)->List(dir.path());
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].name, "a.txt");
  EXPECT_EQ((*list)[1].name, "b.txt");
  EXPECT_EQ((*list)[2].name, "sub");
  EXPECT_TRUE((*list)[2].is_dir);
  EXPECT_EQ((*list)[0].path, dir.File("a.txt"));
  EXPECT_EQ((*fs)->List(dir.File("a.txt")).status().code(), StatusCode::kInvalidArgument);

  auto f = (*fs)->OpenRead("file://" + dir.File("a.txt"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->size(), 10u);
  char buf[16] = {0};
  ASSERT_TRUE((*f)->ReadAt(6, buf, 4).ok());
  EXPECT_EQ(std::string(buf, 4), "6789");
  EXPECT_FALSE((*f)->ReadAt(8, buf, 4).ok());  // past the end
  ASSERT_TRUE((*f)->Seek(3).ok());
  auto n = (*f)->Read(buf, 16);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(buf, *n), "3456789");
  EXPECT_EQ(*(*f)->Read(buf, 16), 0u);

  EXPECT_EQ((*fs)->OpenRead(dir.path()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*fs)->OpenRead(dir.File("nope")).status().code(), StatusCode::kNotFound);
}

TEST(LocalFileSystem, WritesAreAtomicAndRenameDeleteMkdirsWork) {
  TempDir dir;
  auto fs = FileSystemFor(dir.path());
  ASSERT_TRUE(fs.ok());
  const std::string target = dir.File("deep/er/out.txt");
  {
    auto w = (*fs)->OpenWrite(target);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Write("half").ok());
    // Destroyed without Commit: nothing is left.
  }
  EXPECT_FALSE(*(*fs)->Exists(target));
  auto entries = (*fs)->List(dir.File("deep/er"));
  ASSERT_TRUE(entries.ok());
  EXPECT_TRUE(entries->empty());

  ASSERT_TRUE((*fs)->WriteAll(target, "whole").ok());
  EXPECT_EQ(*(*fs)->ReadAll(target), "whole");
  ASSERT_TRUE((*fs)->WriteAll(dir.File("other.txt"), "other").ok());
  ASSERT_TRUE((*fs)->Rename(dir.File("other.txt"), target).ok());
  EXPECT_EQ(*(*fs)->ReadAll(target), "other");
  EXPECT_FALSE(*(*fs)->Exists(dir.File("other.txt")));

  ASSERT_TRUE((*fs)->MakeDirs(dir.File("x/y/z")).ok());
  EXPECT_TRUE((*fs)->Stat(dir.File("x/y/z"))->is_dir);
  ASSERT_TRUE((*fs)->Delete(dir.File("x"), true).ok());
  EXPECT_FALSE(*(*fs)->Exists(dir.File("x")));
  EXPECT_TRUE((*fs)->Delete(dir.File("never-there"), false).ok());
}

TEST(FileSystemPaths, SchemesAndChildren) {
  EXPECT_TRUE(IsHdfsPath("hdfs://nn:8020/a"));
  EXPECT_TRUE(IsHdfsPath("webhdfs://nn:9870/a"));
  EXPECT_FALSE(IsHdfsPath("/hdfs/a"));
  EXPECT_EQ(StripFileScheme("file:///tmp/a"), "/tmp/a");
  EXPECT_EQ(StripFileScheme("file:/tmp/a"), "/tmp/a");
  EXPECT_EQ(StripFileScheme("file://localhost/tmp/a"), "/tmp/a");
  EXPECT_EQ(StripFileScheme("/tmp/a"), "/tmp/a");
  EXPECT_EQ(ChildPath("/a/b", "c"), "/a/b/c");
  EXPECT_EQ(ChildPath("hdfs://nn:8020/a", "c"), "hdfs://nn:8020/a/c");
  EXPECT_EQ(ChildPath("hdfs://nn:8020/", "c"), "hdfs://nn:8020/c");

  auto bad = FileSystemFor("s3://bucket/key");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(bad.status().message().find("s3://bucket/key"), std::string::npos);
}

TEST(CopyTree, CopiesAFolderTreeWithAFilter) {
  TempDir dir;
  dir.Write("src/a.txt", "a");
  dir.Write("src/sub/b.txt", "bb");
  dir.Write("src/skip/c.txt", "c");
  ASSERT_TRUE(CopyTree(dir.File("src"), dir.File("dst"), [](const std::string& rel) {
                return rel != "skip";
              }).ok());
  auto fs = FileSystemFor(dir.path());
  EXPECT_EQ(*(*fs)->ReadAll(dir.File("dst/a.txt")), "a");
  EXPECT_EQ(*(*fs)->ReadAll(dir.File("dst/sub/b.txt")), "bb");
  EXPECT_FALSE(*(*fs)->Exists(dir.File("dst/skip")));
  EXPECT_EQ(CopyTree(dir.File("absent"), dir.File("x")).code(), StatusCode::kNotFound);
}

// A scheme's file systems come from its registered factory, one per scheme://authority, made
// again after ConfigureFileSystems; an unregistered scheme names the path.
TEST(FileSystemRegistry, RegisteredSchemesReachTheirFactory) {
  int made = 0;
  std::string made_for, setting;
  RegisterFileSystem("Tarntest", [&](const std::string& scheme_authority, const std::string& path,
                                     const Settings& settings) {
    ++made;
    made_for = scheme_authority + " " + path;
    setting = settings.GetString("tarn.hdfs.user");
    return Result<std::shared_ptr<FileSystem>>(FileSystemFor("/"));
  });
  auto a = FileSystemFor("tarntest://one:1/x");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(made_for, "tarntest://one:1 tarntest://one:1/x");
  ASSERT_TRUE(FileSystemFor("TARNTEST://one:1/y").ok());  // schemes are case-insensitive
  ASSERT_TRUE(FileSystemFor("tarntest://one:1/z").ok());
  EXPECT_EQ(made, 1);
  ASSERT_TRUE(FileSystemFor("tarntest://two:2/z").ok());
  EXPECT_EQ(made, 2);

  Settings settings;
  ASSERT_TRUE(settings.ApplyOverride("tarn.hdfs.user=someone").ok());
  ConfigureFileSystems(settings);
  ASSERT_TRUE(FileSystemFor("tarntest://one:1/x").ok());
  EXPECT_EQ(made, 3);
  EXPECT_EQ(setting, "someone");
  ConfigureFileSystems(Settings());

  RegisterFileSystem("tarntest",
                     [](const std::string& scheme_authority, const std::string&,
                        const Settings&) -> Result<std::shared_ptr<FileSystem>> {
                       return FailedPrecondition(scheme_authority + " is down");
                     });
  auto down = FileSystemFor("tarntest://one:1/x");
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().message(), "tarntest://one:1 is down");
}

}  // namespace
}  // namespace tarn::data
