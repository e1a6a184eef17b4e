#include "data/text_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../test_util.h"

namespace tarn::data {
namespace {

using tarn::testing::Gzip;
using tarn::testing::TempDir;

std::string MakeLines(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += std::to_string(i) + "|name" + std::to_string(i * 7 % 13) + "|" + std::to_string(i * 0.5) +
         "\n";
  }
  return s;
}

struct ReadAll {
  std::string text;
  std::vector<TextChunk> chunks;
  uint64_t compressed = 0;
};

ReadAll ReadChunks(const std::string& path, const ChunkReaderOptions& options) {
  ReadAll all;
  auto reader = ChunkReader::Open(path, options);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return all;
  TextChunk chunk;
  while (true) {
    auto more = (*reader)->Next(&chunk);
    EXPECT_TRUE(more.ok()) << more.status().message();
    if (!more.ok() || !*more) break;
    all.text += chunk.text;
    all.compressed += chunk.compressed_bytes;
    all.chunks.push_back(chunk);
  }
  return all;
}

// Every chunk is whole records ending in '\n', and first_line counts the lines before it.
void CheckChunks(const ReadAll& all) {
  uint64_t line = 1;
  for (const auto& c : all.chunks) {
    ASSERT_FALSE(c.text.empty());
    EXPECT_EQ(c.text.back(), '\n');
    EXPECT_EQ(c.first_line, line);
    for (char ch : c.text) line += ch == '\n';
  }
}

TEST(ChunkReaderTest, PlainAndGzipGiveTheSameText) {
  TempDir dir;
  const std::string text = MakeLines(5000);
  const std::string plain = dir.Write("data.txt", text);
  const std::string gz = dir.Write("data.gz", Gzip(text));
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{100}, size_t{4096}, size_t{1} << 20}) {
    for (size_t whole : {size_t{0}, size_t{64} << 20}) {
      ChunkReaderOptions o;
      o.chunk_bytes = chunk;
      o.whole_gzip_limit = whole;
      for (const auto& path : {plain, gz}) {
        ReadAll all = ReadChunks(path, o);
        EXPECT_EQ(all.text, text) << path << " chunk " << chunk;
        CheckChunks(all);
        auto reader = ChunkReader::Open(path, o);
        ASSERT_TRUE(reader.ok());
        EXPECT_EQ(all.compressed, (*reader)->total_bytes());
        EXPECT_EQ((*reader)->gzip(), path == gz);
      }
    }
  }
}

TEST(ChunkReaderTest, GzipIsRecognisedByContentNotName) {
  TempDir dir;
  const std::string text = MakeLines(10);
  const std::string a = dir.Write("looks_plain.csv", Gzip(text));
  const std::string b = dir.Write("looks_gzip.gz", text);
  EXPECT_EQ(ReadChunks(a, {}).text, text);
  EXPECT_EQ(ReadChunks(b, {}).text, text);
}

TEST(ChunkReaderTest, ChunksAreAboutChunkBytes) {
  TempDir dir;
  const std::string path = dir.Write("d", MakeLines(20000));
  ChunkReaderOptions o;
  o.chunk_bytes = 10000;
  ReadAll all = ReadChunks(path, o);
  ASSERT_GT(all.chunks.size(), 10u);
  for (size_t i = 0; i + 1 < all.chunks.size(); ++i) {
    EXPECT_LE(all.chunks[i].text.size(), 10000u);
    EXPECT_GT(all.chunks[i].text.size(), 9900u);
  }
}

TEST(ChunkReaderTest, ReadsEveryGzipMember) {
  TempDir dir;
  const std::string a = MakeLines(3000), b = "x|y|z\n", c = MakeLines(7);
  const std::string path = dir.Write("multi.gz", Gzip(a) + Gzip(b, 1) + Gzip(c, 9));
  for (size_t whole : {size_t{0}, size_t{64} << 20}) {
    ChunkReaderOptions o;
    o.chunk_bytes = 1000;
    o.whole_gzip_limit = whole;
    ReadAll all = ReadChunks(path, o);
    EXPECT_EQ(all.text, a + b + c);
    CheckChunks(all);
  }
  // The last member is the largest, so libdeflate can decode the first one whole from the
  // trailer's size, and zlib streams the others from where it stopped.
  const std::string path2 = dir.Write("multi2.gz", Gzip(c) + Gzip(b) + Gzip(a));
  ChunkReaderOptions o;
  o.chunk_bytes = 1000;
  o.whole_gzip_limit = 64 << 20;
  ReadAll all = ReadChunks(path2, o);
  EXPECT_EQ(all.text, c + b + a);
  CheckChunks(all);
  EXPECT_EQ(all.compressed, std::filesystem::file_size(path2));
}

TEST(ChunkReaderTest, ZeroPaddingAfterGzipIsIgnoredButGarbageIsNot) {
  TempDir dir;
  const std::string text = MakeLines(100);
  const std::string padded = dir.Write("padded.gz", Gzip(text) + std::string(1000, '\0'));
  EXPECT_EQ(ReadChunks(padded, {}).text, text);

  const std::string junk = dir.Write("junk.gz", Gzip(text) + "junk");
  auto reader = ChunkReader::Open(junk, 1 << 20);
  ASSERT_TRUE(reader.ok());
  TextChunk chunk;
  Status status;
  while (true) {
    auto more = (*reader)->Next(&chunk);
    if (!more.ok()) {
      status = more.status();
      break;
    }
    ASSERT_TRUE(*more) << "garbage not detected";
  }
  EXPECT_EQ(status.code(), StatusCode::kCorrupt);
  EXPECT_NE(status.message().find(junk), std::string::npos) << status.message();
}

Status ReadToEnd(const std::string& path, const ChunkReaderOptions& o) {
  auto reader = ChunkReader::Open(path, o);
  if (!reader.ok()) return reader.status();
  TextChunk chunk;
  while (true) {
    auto more = (*reader)->Next(&chunk);
    if (!more.ok()) return more.status();
    if (!*more) return Status::Ok();
  }
}

TEST(ChunkReaderTest, TruncatedGzipIsCorruptAndNamesTheFile) {
  TempDir dir;
  const std::string gz = Gzip(MakeLines(20000));
  for (size_t keep : {gz.size() / 2, gz.size() - 4, size_t{12}}) {
    const std::string path = dir.Write("cut.gz", gz.substr(0, keep));
    for (size_t whole : {size_t{0}, size_t{64} << 20}) {
      ChunkReaderOptions o;
      o.chunk_bytes = 4096;
      o.whole_gzip_limit = whole;
      Status s = ReadToEnd(path, o);
      EXPECT_EQ(s.code(), StatusCode::kCorrupt) << keep;
      EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
    }
  }
}

TEST(ChunkReaderTest, CorruptGzipIsCorrupt) {
  TempDir dir;
  std::string gz = Gzip(MakeLines(20000));
  for (size_t i = gz.size() / 3; i < gz.size() / 3 + 64; ++i)
    gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  const std::string path = dir.Write("bad.gz", gz);
  for (size_t whole : {size_t{0}, size_t{64} << 20}) {
    ChunkReaderOptions o;
    o.whole_gzip_limit = whole;
    Status s = ReadToEnd(path, o);
    EXPECT_EQ(s.code(), StatusCode::kCorrupt);
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  }
}

TEST(ChunkReaderTest, MissingFileIsNotFound) {
  TempDir dir;
  auto r = ChunkReader::Open(dir.File("nope.csv"), 1024);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(dir.File("nope.csv")), std::string::npos);
  auto d = ChunkReader::Open(dir.path(), 1024);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
}

TEST(ChunkReaderTest, EmptyFilesGiveNoChunks) {
  TempDir dir;
  EXPECT_TRUE(ReadChunks(dir.Write("empty", ""), {}).chunks.empty());
  EXPECT_TRUE(ReadChunks(dir.Write("empty.gz", Gzip("")), {}).chunks.empty());
}

TEST(ChunkReaderTest, CutsNeverFallInsideQuotedFields) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text +=
        std::to_string(i) + ",\"multi\nline " + std::to_string(i) + "\n, \"\"quoted\"\"\",end\n";
  }
  const std::string path = dir.Write("q.csv", text);
  const std::string gz = dir.Write("q.csv.gz", Gzip(text));
  for (size_t chunk : {size_t{1}, size_t{5}, size_t{37}, size_t{1000}}) {
    for (const auto& p : {path, gz}) {
      ChunkReaderOptions o;
      o.chunk_bytes = chunk;
      o.delimiter = ",";
      ReadAll all = ReadChunks(p, o);
      EXPECT_EQ(all.text, text);
      CheckChunks(all);
      RecordParser parser(",");
      size_t records = 0;
      for (const auto& c : all.chunks) {
        std::string_view rest(c.text), rec;
        uint64_t lines = 0;
        while (parser.NextRecord(&rest, &rec, &lines)) {
          std::vector<std::string_view> fields;
          parser.Split(rec, &fields);
          ASSERT_EQ(fields.size(), 3u) << rec;
          EXPECT_EQ(lines, 3u);
          ++records;
        }
      }
      EXPECT_EQ(records, 300u);
    }
  }
}

TEST(ChunkReaderTest, QuoteParityWithoutDelimiter) {
  TempDir dir;
  const std::string text = "a,\"x\ny\"\nb,c\n";
  ChunkReaderOptions o;
  o.chunk_bytes = 1;
  ReadAll all = ReadChunks(dir.Write("p", text), o);
  ASSERT_EQ(all.chunks.size(), 2u);
  EXPECT_EQ(all.chunks[0].text, "a,\"x\ny\"\n");
  EXPECT_EQ(all.chunks[1].first_line, 3u);
}

TEST(ChunkReaderTest, FinalNewlineAddedAndCrLfKept) {
  TempDir dir;
  EXPECT_EQ(ReadChunks(dir.Write("a", "x|1\ny|2"), {}).text, "x|1\ny|2\n");
  EXPECT_EQ(ReadChunks(dir.Write("b", "x|1\r\ny|2\r\n"), {}).text, "x|1\r\ny|2\r\n");
}

TEST(ChunkReaderTest, ByteOrderMarkIsDropped) {
  TempDir dir;
  ChunkReaderOptions o;
  o.chunk_bytes = 2;
  EXPECT_EQ(ReadChunks(dir.Write("bom", "\xEF\xBB\xBFh1,h2\n1,2\n"), o).text, "h1,h2\n1,2\n");
  EXPECT_EQ(ReadChunks(dir.Write("bom.gz", Gzip("\xEF\xBB\xBFh\n")), o).text, "h\n");
}

TEST(ChunkReaderTest, UnclosedQuoteFailsInsteadOfSwallowingTheFile) {
  TempDir dir;
  std::string text = "a,b\n\"never closed,x\n";
  for (int i = 0; i < 1000; ++i) text += "1,2\n";
  ChunkReaderOptions o;
  o.chunk_bytes = 64;
  o.delimiter = ",";
  o.max_record_bytes = 1000;
  Status s = ReadToEnd(dir.Write("u.csv", text), o);
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("u.csv:2:"), std::string::npos) << s.message();
}

TEST(ChunkReaderTest, RecordLongerThanChunkIsKeptWhole) {
  TempDir dir;
  const std::string longrec(100000, 'x');
  const std::string text = "a\n" + longrec + "\nb\n";
  ChunkReaderOptions o;
  o.chunk_bytes = 10;
  ReadAll all = ReadChunks(dir.Write("l", text), o);
  EXPECT_EQ(all.text, text);
  CheckChunks(all);
}

}  // namespace
}  // namespace tarn::data
