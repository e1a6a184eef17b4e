#include "cluster/yarn/aggregated_logs.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "net/sha256.h"
#include "test_util.h"

namespace tarn::cluster::yarn {
namespace {

using testing::TempDir;

// A writer of AggregatedLogFormat TFiles, built from the format's description (aggregated_logs.h),
// so that the reader is checked against bytes laid out independently of it.
std::string VLong(int64_t n) {
  std::string out;
  const auto put = [&](int64_t v) { out.push_back(static_cast<char>(v & 0xff)); };
  if (n >= -32 && n < 128) {
    put(n);
  } else if (n >= -20 * 256 && n < 20 * 256) {
    put((n >> 8) - 52);
    put(n);
  } else if (n >= -16 * 65536 && n < 16 * 65536) {
    put((n >> 16) - 88);
    put(n >> 8);
    put(n);
  } else if (n >= -8 * (int64_t{1} << 24) && n < 8 * (int64_t{1} << 24)) {
    put((n >> 24) - 112);
    put(n >> 16);
    put(n >> 8);
    put(n);
  } else {
    int len = 4;
    while (len < 8 && !(n >= -(int64_t{1} << (8 * len - 1)) && n < (int64_t{1} << (8 * len - 1)))) {
      ++len;
    }
    put(len - 129);
    for (int i = len - 1; i >= 0; --i) put(n >> (8 * i));
  }
  return out;
}
std::string TString(const std::string& s) { return VLong(static_cast<int64_t>(s.size())) + s; }
std::string Utf(const std::string& s) {
  return std::string{static_cast<char>(s.size() >> 8), static_cast<char>(s.size() & 0xff)} + s;
}
std::string BigEndian(uint64_t v, int n) {
  std::string out;
  for (int i = n - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}
const std::string kMagic = "\xd1\x11\xd3\x68\x91\xb5\xd7\xb6\x39\xdf\x41\x40\x92\xba\xe1\x50";

// A value in chunks of at most `chunk` bytes: negated lengths for all but the last.
std::string Chunked(const std::string& value, size_t chunk) {
  std::string out;
  size_t at = 0;
  while (value.size() - at > chunk) {
    out += VLong(-static_cast<int64_t>(chunk)) + value.substr(at, chunk);
    at += chunk;
  }
  return out + VLong(static_cast<int64_t>(value.size() - at)) + value.substr(at);
}

struct Record {
  std::string key;  // as written by writeUTF
  std::string value;
};
std::string ContainerValue(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string v;
  for (const auto& [name, bytes] : files)
    v += Utf(name) + Utf(std::to_string(bytes.size())) + bytes;
  return v;
}

struct Written {
  std::string bytes;
  std::vector<uint64_t> block_offsets;
};

// blocks: the records of each data block; gz: zlib-compressed blocks (as TFile's "gz").
// `name`: the compression the indexes name (default: what gz says).
Written WriteTFile(const std::vector<std::vector<Record>>& blocks, bool gz, size_t chunk = 1 << 20,
                   const std::string& name = "") {
  Written w;
  std::string& f = w.bytes;
  f = kMagic;
  struct Region {
    uint64_t offset, compressed, raw;
  };
  const auto add_block = [&](const std::string& raw, bool compress) {
    const std::string stored = compress ? testing::Zlib(raw) : raw;
    Region r{f.size(), stored.size(), raw.size()};
    f += stored;
    return r;
  };
  std::vector<Region> data;
  std::string index_entries;
  std::string first_key;
  int64_t total = 0;
  for (const auto& block : blocks) {
    std::string raw;
    for (const auto& rec : block) {
      const std::string key = Utf(rec.key);
      if (first_key.empty()) first_key = key;
      raw += VLong(static_cast<int64_t>(key.size())) + key + Chunked(rec.value, chunk);
    }
    w.block_offsets.push_back(f.size());
    data.push_back(add_block(raw, gz));
    const std::string last = Utf(block.back().key);
    const std::string entry =
        VLong(static_cast<int64_t>(last.size())) + last + VLong(static_cast<int64_t>(block.size()));
    index_entries += VLong(static_cast<int64_t>(entry.size())) + entry;
    total += static_cast<int64_t>(block.size());
  }
  const std::string compression = !name.empty() ? name : gz ? "gz" : "none";
  const Region tmeta =
      add_block(BigEndian(1, 2) + BigEndian(0, 2) + VLong(total) + TString(""), false);
  const std::string first = VLong(static_cast<int64_t>(first_key.size())) + first_key;
  const Region tindex = add_block(
      blocks.empty() ? VLong(0) : VLong(static_cast<int64_t>(first.size())) + first + index_entries,
      gz);
  std::string bcindex = TString(compression) + VLong(static_cast<int64_t>(data.size()));
  for (const auto& r : data) {
    bcindex += VLong(static_cast<int64_t>(r.offset)) + VLong(static_cast<int64_t>(r.compressed)) +
               VLong(static_cast<int64_t>(r.raw));
  }
  const Region bc = add_block(bcindex, gz);
  const uint64_t meta_index_at = f.size();
  const auto meta = [&](const std::string& name, const std::string& c, const Region& r) {
    return TString("data:" + name) + TString(c) + VLong(static_cast<int64_t>(r.offset)) +
           VLong(static_cast<int64_t>(r.compressed)) + VLong(static_cast<int64_t>(r.raw));
  };
  f += VLong(3) + meta("BCFile.index", compression, bc) + meta("TFile.index", compression, tindex) +
       meta("TFile.meta", "none", tmeta);
  f += BigEndian(meta_index_at, 8) + BigEndian(1, 2) + BigEndian(0, 2) + kMagic;
  return w;
}

std::vector<std::vector<Record>> SampleBlocks() {
  std::string big;
  for (int i = 0; i < 5000; ++i) big += "line " + std::to_string(i) + " of a long syslog\n";
  return {
      {{"VERSION", BigEndian(1, 4)},
       {"APPLICATION_ACL", Utf("VIEW_APP") + Utf("alice bob") + Utf("MODIFY_APP") + Utf(" ")},
       {"APPLICATION_OWNER", Utf("alice")},
       {"container_1700000000000_0042_01_000001",
        ContainerValue({{"stderr", "starting\n"}, {"stdout", "hello from the AM\n"}})}},
      {{"container_1700000000000_0042_01_000002",
        ContainerValue({{"prelaunch.out", "Setting up env\n"}, {"syslog", big}, {"stdout", ""}})}},
  };
}

std::unique_ptr<data::ReadableFile> OpenLocal(const std::string& path) {
  auto fs = data::FileSystemFor(path);
  EXPECT_TRUE(fs.ok()) << fs.status().ToString();
  auto f = (*fs)->OpenRead(path);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return std::move(f).value();
}

Result<std::unique_ptr<AggregatedLogReader>> OpenBytes(
    const TempDir& dir, const std::string& bytes,
    const std::string& app = "application_1700000000000_0042") {
  return AggregatedLogReader::Open(OpenLocal(dir.Write("localhost_45454", bytes)), app);
}

// Every wanted file's bytes, by "container/file".
std::map<std::string, std::string> ReadAll(AggregatedLogReader& r,
                                           const std::string& only_file = "") {
  std::map<std::string, std::string> out;
  std::string current;
  AggregatedLogVisitor v;
  v.want = [&](const std::string& c, const std::string& f, uint64_t) {
    if (!only_file.empty() && f != only_file) return false;
    current = c + "/" + f;
    out[current];
    return true;
  };
  v.bytes = [&](std::string_view piece) {
    out[current].append(piece);
    return Status::Ok();
  };
  Status s = r.Scan(v);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

class AggregatedLogsTest : public ::testing::TestWithParam<bool> {};

TEST_P(AggregatedLogsTest, ReadsContainersFilesAndReservedKeys) {
  TempDir dir;
  const auto blocks = SampleBlocks();
  // Chunks of 1000 bytes: the syslog value spans many chunks.
  auto reader = OpenBytes(dir, WriteTFile(blocks, GetParam(), 1000).bytes);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  AggregatedLogReader& r = **reader;
  EXPECT_EQ(r.compression(), GetParam() ? "gz" : "none");
  EXPECT_EQ(r.record_count(), 5);
  auto all = ReadAll(r);
  EXPECT_EQ(r.version(), 1);
  EXPECT_EQ(r.owner(), "alice");
  EXPECT_EQ(r.acls().at("VIEW_APP"), "alice bob");
  ASSERT_EQ(r.containers().size(), 2u);
  EXPECT_EQ(r.containers()[0].container_id, "container_1700000000000_0042_01_000001");
  ASSERT_EQ(r.containers()[1].files.size(), 3u);
  EXPECT_EQ(r.containers()[1].files[1].file, "syslog");
  std::string big;
  for (int i = 0; i < 5000; ++i) big += "line " + std::to_string(i) + " of a long syslog\n";
  EXPECT_EQ(r.containers()[1].files[1].length, big.size());
  EXPECT_EQ(all.at("container_1700000000000_0042_01_000001/stdout"), "hello from the AM\n");
  EXPECT_EQ(all.at("container_1700000000000_0042_01_000002/syslog"), big);
  EXPECT_EQ(all.at("container_1700000000000_0042_01_000002/stdout"), "");
  // A second scan, reading only stdout (the others skipped).
  auto only = ReadAll(r, "stdout");
  EXPECT_EQ(only.size(), 2u);
  EXPECT_EQ(only.at("container_1700000000000_0042_01_000001/stdout"), "hello from the AM\n");
}

INSTANTIATE_TEST_SUITE_P(NoneAndGz, AggregatedLogsTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "gz" : "none"; });

TEST(AggregatedLogs, ReadsAFileHadoopWrote) {
  // fixtures/README.md: Hadoop 3.5.0's NodeManager aggregated one AM container's logs.
  const std::string path =
      testing::SourceDir() + "/tests/unit/cluster/yarn/fixtures/aggregated-logs-localhost_43785";
  auto reader = AggregatedLogReader::Open(OpenLocal(path), "application_1796191228925_0001");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto all = ReadAll(**reader);
  EXPECT_EQ((*reader)->owner(), "root");
  EXPECT_EQ((*reader)->version(), 1);
  ASSERT_EQ((*reader)->containers().size(), 1u);
  const auto& c = (*reader)->containers()[0];
  EXPECT_EQ(c.container_id, "container_1796191228925_0001_01_000001");
  std::vector<std::string> names;
  for (const auto& f : c.files) names.push_back(f.file);
  EXPECT_EQ(names,
            (std::vector<std::string>{"directory.info", "launch_container.sh", "prelaunch.err",
                                      "prelaunch.out", "stderr", "stdout"}));
  EXPECT_EQ(all.at(c.container_id + "/stdout"), "hello-out\n");
  EXPECT_EQ(all.at(c.container_id + "/stderr"), "hello-err\n");
}

TEST(AggregatedLogs, VLongsOfEveryWidthRoundTrip) {
  // Lengths in each VLong width TFile writes for them (1 to 4 bytes): one chunk of each size.
  TempDir dir;
  for (size_t n : {0u, 127u, 128u, 5119u, 5120u, 1048575u, 1048576u, 3000000u}) {
    const std::string bytes(n, 'x');
    auto reader = OpenBytes(
        dir, WriteTFile({{{"container_1_0001_01_000001", ContainerValue({{"stdout", bytes}})}}},
                        false, 1 << 30)
                 .bytes);
    ASSERT_TRUE(reader.ok()) << n << ": " << reader.status().ToString();
    auto all = ReadAll(**reader);
    EXPECT_EQ(all.at("container_1_0001_01_000001/stdout").size(), n);
  }
}

TEST(AggregatedLogs, TruncatedFilesAreCorruptNamingTheFileAndOffset) {
  TempDir dir;
  const std::string full = WriteTFile(SampleBlocks(), false).bytes;
  for (size_t keep : {size_t{0}, size_t{10}, size_t{40}, full.size() / 2, full.size() - 1}) {
    auto reader = OpenBytes(dir, full.substr(0, keep));
    ASSERT_FALSE(reader.ok()) << keep;
    EXPECT_EQ(reader.status().code(), StatusCode::kCorrupt) << reader.status().ToString();
    EXPECT_NE(reader.status().message().find(dir.File("localhost_45454")), std::string::npos)
        << reader.status().ToString();
    EXPECT_NE(reader.status().message().find("offset"), std::string::npos)
        << reader.status().ToString();
  }
}

TEST(AggregatedLogs, CorruptBytesAreReportedWithTheirOffset) {
  TempDir dir;
  Written w = WriteTFile(SampleBlocks(), false);
  // The second block's key length made huge: the key would run past the block.
  std::string bad = w.bytes;
  bad[w.block_offsets[1]] = static_cast<char>(0x7f);
  auto reader = OpenBytes(dir, bad);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  Status s = (*reader)->Scan({});
  EXPECT_EQ(s.code(), StatusCode::kCorrupt) << s.ToString();
  EXPECT_NE(s.message().find("data block 1"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("offset " + std::to_string(w.block_offsets[1])), std::string::npos)
      << s.ToString();

  // A file length that is not a number.
  bad = w.bytes;
  const size_t at = bad.find(Utf(std::to_string(std::string("hello from the AM\n").size())));
  ASSERT_NE(at, std::string::npos);
  bad[at + 2] = 'x';
  reader = OpenBytes(dir, bad);
  ASSERT_TRUE(reader.ok());
  s = (*reader)->Scan({});
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("is not a number"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("/stdout"), std::string::npos) << s.ToString();

  // Damaged gz data.
  Written gz = WriteTFile(SampleBlocks(), true);
  bad = gz.bytes;
  for (size_t i = 4; i < 24; ++i) bad[gz.block_offsets[1] + i] ^= 0x55;
  reader = OpenBytes(dir, bad);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  s = (*reader)->Scan({});
  EXPECT_EQ(s.code(), StatusCode::kCorrupt) << s.ToString();
  EXPECT_NE(s.message().find("data block 1"), std::string::npos) << s.ToString();

  // Not a TFile at all.
  reader = OpenBytes(dir, std::string(200, 'z'));
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("no BCFile magic at offset 0"), std::string::npos);
}

TEST(AggregatedLogs, IndexedFormatFilesAndLzoAreRefusedByName) {
  TempDir dir;
  const std::string app = "application_1700000000000_0042";
  std::string uuid;
  const std::string hex = net::Sha256Hex(app);
  for (size_t i = 0; i < hex.size(); i += 2) {
    uuid.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  auto reader = OpenBytes(dir, uuid + std::string(500, '\0'), app);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(reader.status().message().find("IndexedFormat"), std::string::npos);

  reader = OpenBytes(dir, WriteTFile(SampleBlocks(), false, 1 << 20, "lzo").bytes, app);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), StatusCode::kUnsupported) << reader.status().ToString();
  EXPECT_NE(reader.status().message().find("lzo"), std::string::npos);
}

TEST(AggregatedLogs, FoldersFollowTheControllersAndTheBucketLayout) {
  net::HadoopConf conf;
  conf.Set("fs.defaultFS", "hdfs://nn:8020");
  auto controllers = LogAggregationControllers(conf);
  ASSERT_EQ(controllers.size(), 1u);
  EXPECT_EQ(controllers[0].name, "TFile");
  EXPECT_EQ(controllers[0].root, "hdfs://nn:8020/tmp/logs");
  EXPECT_EQ(controllers[0].suffix, "logs-tfile");
  auto dirs = AggregatedLogDirs(controllers, conf, "alice", "application_1700000000000_10042");
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[0].path,
            "hdfs://nn:8020/tmp/logs/alice/bucket-logs-tfile/0042/application_1700000000000_10042");
  EXPECT_EQ(dirs[1].path,
            "hdfs://nn:8020/tmp/logs/alice/logs-tfile/application_1700000000000_10042");
  EXPECT_EQ(dirs[2].path, "hdfs://nn:8020/tmp/logs/alice/logs/application_1700000000000_10042");

  conf.Set("yarn.log-aggregation.file-formats", "IndexedFormat,TFile");
  conf.Set("yarn.log-aggregation.file-controller.IndexedFormat.class",
           "org.apache.hadoop.yarn.logaggregation.filecontroller.ifile."
           "LogAggregationIndexedFileController");
  conf.Set("yarn.log-aggregation.TFile.remote-app-log-dir", "hdfs://other:8020/agg");
  conf.Set("yarn.log-aggregation.TFile.remote-app-log-dir-suffix", "mine");
  controllers = LogAggregationControllers(conf);
  ASSERT_EQ(controllers.size(), 2u);
  EXPECT_TRUE(controllers[0].indexed);
  EXPECT_EQ(controllers[0].suffix, "logs-indexedformat");
  EXPECT_EQ(controllers[1].root, "hdfs://other:8020/agg");
  dirs = AggregatedLogDirs(controllers, conf, "bob", "application_1_7");
  EXPECT_EQ(dirs[2].path, "hdfs://other:8020/agg/bob/bucket-mine/0007/application_1_7");

  EXPECT_EQ(NodeOfLogFileName("localhost_45454"), "localhost:45454");
  EXPECT_EQ(NodeOfLogFileName("node_1.example_8041_1700000000123"), "node_1.example:8041");
  EXPECT_EQ(NodeOfLogFileName("odd"), "odd");
}

TEST(AggregatedLogs, FindsTheNodeFilesOfTheFirstFolderThatHasAny) {
  TempDir dir;
  net::HadoopConf conf;
  conf.Set("fs.defaultFS", "file:///");
  conf.Set("yarn.nodemanager.remote-app-log-dir", dir.File("logs"));
  const std::string app = "application_1700000000000_0003";
  auto missing = FindAggregatedLogs(conf, "alice", app);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("bucket-logs-tfile/0003/" + app), std::string::npos)
      << missing.status().ToString();

  // Only a file still being uploaded: not found yet, and it says so.
  dir.Write("logs/alice/bucket-logs-tfile/0003/" + app + "/nm1_8041.tmp", "partial");
  missing = FindAggregatedLogs(conf, "alice", app);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("still uploading"), std::string::npos);

  // Hadoop 2's layout is found too.
  dir.Write("logs/alice/logs/" + app + "/nm2_8041", "x");
  auto found = FindAggregatedLogs(conf, "alice", app);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].node, "nm2:8041");

  // The bucket layout comes first.
  dir.Write("logs/alice/bucket-logs-tfile/0003/" + app + "/nm1_8041", "y");
  dir.Write("logs/alice/bucket-logs-tfile/0003/" + app + "/nm3_8041", "z");
  found = FindAggregatedLogs(conf, "alice", app);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].node, "nm1:8041");
  EXPECT_EQ((*found)[1].length, 1u);

  // An IndexedFormat controller's folder is refused by name.
  conf.Set("yarn.log-aggregation.file-formats", "IndexedFormat");
  dir.Write("logs/alice/bucket-logs-indexedformat/0003/" + app + "/nm1_8041", "y");
  auto refused = FindAggregatedLogs(conf, "alice", app);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(refused.status().message().find("LogAggregationIndexedFileController"),
            std::string::npos);
}

}  // namespace
}  // namespace tarn::cluster::yarn
