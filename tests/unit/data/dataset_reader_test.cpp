#include "data/dataset_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.h"
#include "common/progress.h"

namespace tarn::data {
namespace {

using tarn::testing::Gzip;
using tarn::testing::TempDir;

// Rows "i|cat(i)|i*0.25" for i in [from, to).
std::string Rows(int from, int to, const std::string& d = "|") {
  std::string s;
  for (int i = from; i < to; ++i) {
    s += std::to_string(i) + d + "c" + std::to_string(i % 5) + d + std::to_string(i * 0.25) + "\n";
  }
  return s;
}

struct Row {
  size_t file;
  uint64_t line;
  std::vector<std::string> fields;
  bool operator<(const Row& o) const { return std::tie(file, line) < std::tie(o.file, o.line); }
  bool operator==(const Row& o) const {
    return file == o.file && line == o.line && fields == o.fields;
  }
};

struct Collected {
  std::vector<Row> rows;  // sorted by (file, line)
  ReadSummary summary;
  Status status;
};

class Collector {
 public:
  Status operator()(int /*worker*/, const RowBatch& b) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t r = 0; r < b.size(); ++r) {
      Row row{b.file_index, b.line(r), {}};
      for (auto f : b.fields(r)) row.fields.emplace_back(f);
      EXPECT_EQ(b.fields(r).size(), b.num_columns());
      rows_.push_back(std::move(row));
    }
    return Status::Ok();
  }
  std::vector<Row> Take() {
    std::sort(rows_.begin(), rows_.end());
    return std::move(rows_);
  }

 private:
  std::mutex mu_;
  std::vector<Row> rows_;
};

Collected ReadAll(const DatasetReader& reader, ReadOptions o = {}) {
  Collector c;
  Collected out;
  auto s = reader.ForEachBatch(o, [&](int w, const RowBatch& b) { return c(w, b); });
  if (s.ok()) {
    out.summary = *s;
  } else {
    out.status = s.status();
  }
  out.rows = c.Take();
  return out;
}

DatasetReader MustOpen(const DataSource& s) {
  auto r = DatasetReader::Open(s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

DataSource Source(const std::string& data, const std::string& header = "") {
  DataSource s;
  s.data_path = data;
  s.header_path = header;
  return s;
}

class DatasetReaderTest : public ::testing::Test {
 protected:
  void SetUp() override { Progress::SetEnabled(false); }
  void TearDown() override { Progress::SetEnabled(true); }
  TempDir dir_;
};

TEST_F(DatasetReaderTest, GzipAndPlainGiveTheSameRows) {
  const std::string text = "id|cat|x\n" + Rows(0, 3000);
  DatasetReader plain = MustOpen(Source(dir_.Write("plain.txt", text)));
  DatasetReader gz = MustOpen(Source(dir_.Write("data.gz", Gzip(text))));
  EXPECT_EQ(plain.columns(), (std::vector<std::string>{"id", "cat", "x"}));
  EXPECT_EQ(gz.columns(), plain.columns());
  for (int threads : {1, 3}) {
    for (size_t whole : {size_t{0}, size_t{256} << 20}) {
      ReadOptions o;
      o.threads = threads;
      o.chunk_bytes = 1000;
      o.gzip_whole_file_bytes = whole;
      o.progress_label = "test read";  // output is switched off in this fixture
      Collected a = ReadAll(plain, o), b = ReadAll(gz, o);
      ASSERT_TRUE(a.status.ok()) << a.status.message();
      ASSERT_TRUE(b.status.ok()) << b.status.message();
      ASSERT_EQ(a.rows.size(), 3000u);
      EXPECT_EQ(a.rows, b.rows);
      EXPECT_EQ(a.rows[0].line, 2u);
      EXPECT_EQ(a.rows[0].fields, (std::vector<std::string>{"0", "c0", "0.000000"}));
      EXPECT_EQ(a.summary.rows, 3000u);
      EXPECT_EQ(a.summary.bytes, text.size());
      EXPECT_EQ(b.summary.file_bytes, std::filesystem::file_size(dir_.File("data.gz")));
    }
  }
}

TEST_F(DatasetReaderTest, FolderOfPartsSkipsHiddenFilesAndSubfolders) {
  const std::string folder = dir_.path() + "/parts";
  dir_.Write("parts/part-00000", Rows(0, 10));
  dir_.Write("parts/part-00001.gz", Gzip(Rows(10, 25)));
  dir_.Write("parts/part-00002", "");
  dir_.Write("parts/.pig_header", "id|cat|x\n");
  dir_.Write("parts/_SUCCESS", "");
  dir_.Write("parts/.part-00000.crc", "junk");
  dir_.Write("parts/_logs/history", "junk");
  dir_.Write("parts/sub/part-9", "junk|junk|junk\n");
  DatasetReader r = MustOpen(Source(folder, folder + "/.pig_header"));
  ASSERT_EQ(r.files().size(), 3u);
  EXPECT_EQ(r.files()[0], folder + "/part-00000");
  EXPECT_EQ(r.files()[1], folder + "/part-00001.gz");
  Collected c = ReadAll(r);
  ASSERT_TRUE(c.status.ok()) << c.status.message();
  ASSERT_EQ(c.rows.size(), 25u);
  EXPECT_EQ(c.rows[0].line, 1u);  // the header is in its own file
  EXPECT_EQ(c.rows[10].file, 1u);
  EXPECT_EQ(c.rows[10].line, 1u);
  EXPECT_EQ(c.rows[10].fields[0], "10");
}

TEST_F(DatasetReaderTest, HeaderFileIsTrimmedAndUnquoted) {
  const std::string header = dir_.Write("h", " \"id\" | cat |\"x y\"\r\n");
  DatasetReader r = MustOpen(Source(dir_.Write("d", Rows(0, 3)), header));
  EXPECT_EQ(r.columns(), (std::vector<std::string>{"id", "cat", "x y"}));
  EXPECT_EQ(r.ColumnIndex("cat"), 1);
  EXPECT_EQ(r.ColumnIndex("x y"), 2);
  EXPECT_EQ(r.ColumnIndex("x_y"), 2);  // Shifu's name for it
  EXPECT_EQ(r.ColumnIndex("nope"), -1);
  EXPECT_EQ(ReadAll(r).rows.size(), 3u);
}

TEST_F(DatasetReaderTest, HeaderDelimiterCanDiffer) {
  DataSource s = Source(dir_.Write("d.csv", "1,2\n3,4\n"), dir_.Write("h", "a|b\n"));
  s.delimiter = ",";
  s.header_delimiter = "|";
  DatasetReader r = MustOpen(s);
  EXPECT_EQ(r.columns(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ReadAll(r).rows.size(), 2u);
}

TEST_F(DatasetReaderTest, HeaderFromFirstLineIsNotData) {
  const std::string folder = dir_.path() + "/csv";
  dir_.Write("csv/a.csv", "\n\nid,cat,x\n" + Rows(0, 5, ","));
  dir_.Write("csv/b.csv", Rows(5, 8, ","));                    // Pig style: no header
  dir_.Write("csv/c.csv", "id,cat,x\r\n" + Rows(8, 10, ","));  // Spark style: repeated
  DataSource s = Source(folder);
  s.delimiter = ",";
  s.header_delimiter = "|";  // not used for a header that comes from the data
  DatasetReader r = MustOpen(s);
  EXPECT_EQ(r.columns(), (std::vector<std::string>{"id", "cat", "x"}));
  for (size_t chunk : {size_t{1}, size_t{4096}}) {
    ReadOptions o;
    o.chunk_bytes = chunk;
    o.threads = 2;
    Collected c = ReadAll(r, o);
    ASSERT_TRUE(c.status.ok()) << c.status.message();
    ASSERT_EQ(c.rows.size(), 10u);
    EXPECT_EQ(c.rows[0].line, 4u);
    EXPECT_EQ(c.rows[0].fields[0], "0");
    EXPECT_EQ(c.rows[5].line, 1u);
    EXPECT_EQ(c.rows[8].line, 2u);
    EXPECT_EQ(c.rows[8].fields[0], "8");
    EXPECT_EQ(c.summary.bad_rows, 0u);
  }
}

TEST_F(DatasetReaderTest, QuotedFieldsWithDelimitersNewlinesAndQuotes) {
  const std::string text =
      "id,text,n\r\n"
      "1,\"a,b\",2\r\n"
      "2,\"line1\nline2\",3\r\n"
      "3,\"say \"\"hi\"\"\",4\r\n"
      "4,plain,5\r\n";
  DataSource s = Source(dir_.Write("q.csv", text));
  s.delimiter = ",";
  DatasetReader r = MustOpen(s);
  for (size_t chunk : {size_t{1}, size_t{16}, size_t{1} << 20}) {
    ReadOptions o;
    o.chunk_bytes = chunk;
    o.threads = 1;
    Collected c = ReadAll(r, o);
    ASSERT_TRUE(c.status.ok()) << c.status.message();
    ASSERT_EQ(c.rows.size(), 4u);
    EXPECT_EQ(c.rows[0].fields, (std::vector<std::string>{"1", "a,b", "2"}));
    EXPECT_EQ(c.rows[1].fields, (std::vector<std::string>{"2", "line1\nline2", "3"}));
    EXPECT_EQ(c.rows[2].fields, (std::vector<std::string>{"3", "say \"hi\"", "4"}));
    EXPECT_EQ(c.rows[3].fields, (std::vector<std::string>{"4", "plain", "5"}));
    EXPECT_EQ(c.rows[1].line, 3u);
    EXPECT_EQ(c.rows[2].line, 5u);  // after the two-line record
    EXPECT_EQ(c.rows[3].line, 6u);
  }
}

TEST_F(DatasetReaderTest, WrongFieldCountsAreReportedAndFailAboveTheRatio) {
  std::string text = "a|b|c\n" + Rows(0, 500) + "1|2\n" + Rows(500, 998) + "1|2|3|4\n\n";
  const std::string path = dir_.Write("bad.txt", text);
  DatasetReader r = MustOpen(Source(path));

  ReadOptions lax;
  lax.max_bad_row_ratio = 0.01;
  lax.chunk_bytes = 512;
  lax.threads = 2;
  Collected ok = ReadAll(r, lax);
  ASSERT_TRUE(ok.status.ok()) << ok.status.message();
  EXPECT_EQ(ok.summary.rows, 998u);
  EXPECT_EQ(ok.summary.bad_rows, 2u);
  ASSERT_EQ(ok.summary.bad_row_reports.size(), 2u);
  EXPECT_EQ(ok.summary.bad_row_reports[0], path + ":502: expected 3 fields, found 2");
  EXPECT_EQ(ok.summary.bad_row_reports[1], path + ":1001: expected 3 fields, found 4");

  ReadOptions strict;  // 0.001 by default: 2 of 1000 is too many
  strict.chunk_bytes = 512;
  Collected bad = ReadAll(r, strict);
  ASSERT_FALSE(bad.status.ok());
  const std::string& m = bad.status.message();
  EXPECT_EQ(bad.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.find(path + ":502: expected 3 fields, found 2"), std::string::npos) << m;
  EXPECT_NE(m.find(path + ":1001: expected 3 fields, found 4"), std::string::npos) << m;
  EXPECT_NE(m.find("2 of 1000 rows (0.2%)"), std::string::npos) << m;
  EXPECT_NE(m.find("tarn.data.max-bad-row-ratio = 0.1%"), std::string::npos) << m;

  ReadOptions one;
  one.max_bad_row_ratio = 0.01;
  one.bad_rows_reported = 1;
  Collected first = ReadAll(r, one);
  ASSERT_EQ(first.summary.bad_row_reports.size(), 1u);
  EXPECT_EQ(first.summary.bad_row_reports[0], path + ":502: expected 3 fields, found 2");
}

TEST_F(DatasetReaderTest, AllRowsBadStopsEarly) {
  std::string text = "a|b|c\n";
  for (int i = 0; i < 20000; ++i) text += "1,2,3\n";
  DatasetReader r = MustOpen(Source(dir_.Write("wrongdelim.csv", text)));
  ReadOptions o;
  o.chunk_bytes = 4096;
  o.threads = 1;
  Collected c = ReadAll(r, o);
  ASSERT_FALSE(c.status.ok());
  EXPECT_NE(c.status.message().find("stopped early"), std::string::npos) << c.status.message();
  EXPECT_NE(c.status.message().find("wrongdelim.csv:2: expected 3 fields, found 1"),
            std::string::npos);
}

TEST_F(DatasetReaderTest, MissingOrEmptyPathsAreErrors) {
  auto missing = DatasetReader::Open(Source(dir_.File("nope")));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir_.File("nope")), std::string::npos);

  auto no_header = DatasetReader::Open(Source(dir_.Write("d", "1|2\n"), dir_.File("no_header")));
  ASSERT_FALSE(no_header.ok());
  EXPECT_EQ(no_header.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_header.status().message().find(dir_.File("no_header")), std::string::npos);

  std::filesystem::create_directories(dir_.File("empty"));
  dir_.Write("empty/_SUCCESS", "");
  auto empty = DatasetReader::Open(Source(dir_.File("empty")));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("no data files"), std::string::npos);

  auto empty_file = DatasetReader::Open(Source(dir_.Write("e", "")));
  ASSERT_FALSE(empty_file.ok());

  DataSource bad_delim = Source(dir_.Write("x", "a\n"));
  bad_delim.delimiter = "";
  EXPECT_FALSE(DatasetReader::Open(bad_delim).ok());
  bad_delim.delimiter = "\"";
  EXPECT_FALSE(DatasetReader::Open(bad_delim).ok());
}

TEST_F(DatasetReaderTest, TruncatedGzipFailsNamingTheFile) {
  const std::string gz = Gzip("a|b|c\n" + Rows(0, 20000));
  const std::string path = dir_.Write("cut.gz", gz.substr(0, gz.size() * 2 / 3));
  DatasetReader r = MustOpen(Source(path));
  for (int threads : {1, 2}) {
    ReadOptions o;
    o.threads = threads;
    o.chunk_bytes = 4096;
    Collected c = ReadAll(r, o);
    ASSERT_FALSE(c.status.ok());
    EXPECT_EQ(c.status.code(), StatusCode::kCorrupt);
    EXPECT_NE(c.status.message().find(path), std::string::npos) << c.status.message();
  }
}

TEST_F(DatasetReaderTest, FilterExpressionSelectsRows) {
  DataSource s = Source(dir_.Write("d", "id|cat|x\n" + Rows(0, 100)));
  s.filter_expression = "id >= 10 && id < 20 || cat == 'c4' && id > 90";
  DatasetReader r = MustOpen(s);
  Collected c = ReadAll(r);
  ASSERT_TRUE(c.status.ok());
  EXPECT_EQ(c.rows.size(), 12u);  // 10..19, 94, 99
  EXPECT_EQ(c.summary.filtered_rows, 88u);
  EXPECT_EQ(c.rows.back().fields[0], "99");

  s.filter_expression = "idd > 3";
  auto bad = DatasetReader::Open(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown column 'idd'"), std::string::npos);
}

TEST_F(DatasetReaderTest, CustomMissingValuesReachTheFilter) {
  DataSource s = Source(dir_.Write("d", "id|v\n1|NA\n2|3\n3|\n"));
  s.missing_values = {"na"};
  s.filter_expression = "v == null";
  DatasetReader r = MustOpen(s);
  EXPECT_TRUE(r.missing().IsMissing("NA"));
  EXPECT_FALSE(r.missing().IsMissing(""));
  Collected c = ReadAll(r);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].fields[0], "1");
}

std::set<std::pair<size_t, uint64_t>> SampledKeys(const DatasetReader& r, int threads, size_t chunk,
                                                  uint64_t seed) {
  ReadOptions o;
  o.threads = threads;
  o.chunk_bytes = chunk;
  o.sample_rate = 0.3;
  o.seed = seed;
  std::set<std::pair<size_t, uint64_t>> keys;
  for (const auto& row : ReadAll(r, o).rows) keys.insert({row.file, row.line});
  return keys;
}

TEST_F(DatasetReaderTest, SamplingIsDeterministicWhateverTheThreadsAndChunks) {
  const std::string folder = dir_.path() + "/s";
  dir_.Write("s/p0", "id|cat|x\n" + Rows(0, 4000));
  dir_.Write("s/p1.gz", Gzip(Rows(4000, 10000)));
  DatasetReader r = MustOpen(Source(folder));
  const auto base = SampledKeys(r, 1, 1 << 20, 42);
  EXPECT_GT(base.size(), 2700u);
  EXPECT_LT(base.size(), 3300u);
  EXPECT_EQ(SampledKeys(r, 2, 300, 42), base);
  EXPECT_EQ(SampledKeys(r, 4, 5000, 42), base);
  EXPECT_NE(SampledKeys(r, 1, 1 << 20, 43), base);

  ReadOptions o;
  o.sample_rate = 0.3;
  Collected c = ReadAll(r, o);
  EXPECT_EQ(c.summary.rows + c.summary.sampled_out_rows, 10000u);
  o.sample_rate = 0;
  EXPECT_EQ(ReadAll(r, o).rows.size(), 0u);
}

TEST_F(DatasetReaderTest, ChunkIndexFollowsFileOrder) {
  const std::string folder = dir_.path() + "/o";
  dir_.Write("o/a", "id|cat|x\n" + Rows(0, 2000));
  dir_.Write("o/b.gz", Gzip(Rows(2000, 3000)));
  dir_.Write("o/c", Rows(3000, 5000));
  DatasetReader r = MustOpen(Source(folder));
  for (int threads : {1, 2, 4}) {
    ReadOptions o;
    o.threads = threads;
    o.chunk_bytes = 700;
    std::mutex mu;
    std::map<uint64_t, std::tuple<size_t, uint64_t, uint64_t, size_t>> chunks;
    std::atomic<int> busy[4] = {};
    auto s = r.ForEachBatch(o, [&](int worker, const RowBatch& b) -> Status {
      EXPECT_GE(worker, 0);
      EXPECT_LT(worker, threads);
      EXPECT_EQ(busy[worker].fetch_add(1), 0) << "worker " << worker << " used twice at once";
      {
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_TRUE(
            chunks
                .emplace(b.chunk_index, std::make_tuple(b.file_index, b.chunk_in_file,
                                                        b.empty() ? 0 : b.line(0), b.size()))
                .second);
      }
      busy[worker].fetch_sub(1);
      return Status::Ok();
    });
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->chunks, chunks.size());
    uint64_t expect_index = 0;
    size_t last_file = 0;
    uint64_t last_line = 0, next_in_file = 0, rows = 0;
    for (const auto& [index, info] : chunks) {
      const auto& [file, in_file, first_line, size] = info;
      EXPECT_EQ(index, expect_index++);
      if (file != last_file) {
        EXPECT_EQ(file, last_file + 1);
        last_file = file;
        last_line = 0;
        next_in_file = 0;
      }
      EXPECT_EQ(in_file, next_in_file++);
      EXPECT_GT(first_line, last_line);
      last_line = first_line;
      rows += size;
    }
    EXPECT_EQ(rows, 5000u);
  }
}

TEST_F(DatasetReaderTest, ParallelFilesReadEveryRowOnce) {
  const std::string folder = dir_.path() + "/pf";
  dir_.Write("pf/.pig_header", "id|cat|x\n");
  for (int i = 0; i < 6; ++i) {
    const std::string rows = Rows(i * 1000, (i + 1) * 1000);
    dir_.Write("pf/part-" + std::to_string(i) + (i % 2 ? ".gz" : ""), i % 2 ? Gzip(rows) : rows);
  }
  DatasetReader r = MustOpen(Source(folder, folder + "/.pig_header"));
  ReadOptions o;
  o.threads = 3;
  o.chunk_bytes = 2048;
  o.parallel_files = true;
  Collector c;
  std::mutex mu;
  std::set<uint64_t> indexes;
  auto s = r.ForEachBatch(o, [&](int w, const RowBatch& b) {
    {
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_TRUE(indexes.insert(b.chunk_index).second);
    }
    return c(w, b);
  });
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto rows = c.Take();
  ASSERT_EQ(rows.size(), 6000u);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].fields[0], std::to_string(i));
  EXPECT_EQ(*indexes.rbegin(), indexes.size() - 1);
}

TEST_F(DatasetReaderTest, CallbackErrorStopsTheRead) {
  DatasetReader r = MustOpen(Source(dir_.Write("d", "id|cat|x\n" + Rows(0, 20000))));
  for (int threads : {1, 2}) {
    ReadOptions o;
    o.threads = threads;
    o.chunk_bytes = 1000;
    std::atomic<int> calls{0};
    auto s = r.ForEachBatch(o, [&](int, const RowBatch& b) -> Status {
      ++calls;
      if (b.chunk_index == 3) return InvalidArgument("stop here");
      return Status::Ok();
    });
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().message(), "stop here");
    EXPECT_LT(calls.load(), 100);
  }
}

TEST_F(DatasetReaderTest, EveryChunkIsDeliveredEvenWhenEmpty) {
  DataSource s = Source(dir_.Write("d", "id|cat|x\n" + Rows(0, 1000)));
  s.filter_expression = "id < 0";
  DatasetReader r = MustOpen(s);
  ReadOptions o;
  o.chunk_bytes = 500;
  o.threads = 2;
  std::atomic<uint64_t> calls{0};
  auto sum = r.ForEachBatch(o, [&](int, const RowBatch& b) {
    EXPECT_TRUE(b.empty());
    ++calls;
    return Status::Ok();
  });
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->rows, 0u);
  EXPECT_EQ(sum->filtered_rows, 1000u);
  EXPECT_EQ(calls.load(), sum->chunks);
  EXPECT_GT(calls.load(), 10u);
}

TEST_F(DatasetReaderTest, MultiCharDelimiter) {
  DataSource s = Source(dir_.Write("d", "a||b\n1||\"x||y\"\n2||z\n"));
  s.delimiter = "||";
  DatasetReader r = MustOpen(s);
  EXPECT_EQ(r.columns(), (std::vector<std::string>{"a", "b"}));
  Collected c = ReadAll(r);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].fields[1], "x||y");
}

TEST_F(DatasetReaderTest, ReadsFlightsSample) {
  const std::string path = tarn::testing::SharedDir() + "/datasets/flights_3m.csv.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
  DataSource s = Source(path);
  s.delimiter = ",";
  DatasetReader r = MustOpen(s);
  ASSERT_EQ(r.columns().size(), 8u);
  EXPECT_EQ(r.columns()[7], "delayed15");
  ReadOptions o;
  o.threads = 2;
  o.sample_rate = 0.01;
  std::atomic<uint64_t> positives{0};
  const int target = r.ColumnIndex("delayed15");
  auto sum = r.ForEachBatch(o, [&](int, const RowBatch& b) {
    for (size_t i = 0; i < b.size(); ++i) positives += b.field(i, target) == "1";
    return Status::Ok();
  });
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  EXPECT_EQ(sum->rows + sum->sampled_out_rows, 3000000u);
  EXPECT_EQ(sum->bad_rows, 0u);
  const double rate = static_cast<double>(positives.load()) / static_cast<double>(sum->rows);
  EXPECT_GT(rate, 0.17);
  EXPECT_LT(rate, 0.23);
}

}  // namespace
}  // namespace tarn::data
