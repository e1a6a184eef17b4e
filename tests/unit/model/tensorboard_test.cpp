#include "model/tensorboard.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "common/files.h"
#include "test_util.h"

namespace tarn::model {
namespace {

using tensorboard::EncodeFileVersionEvent;
using tensorboard::EncodeScalarEvent;
using tensorboard::FrameRecord;
using tensorboard::MaskCrc;

std::string Hex(const std::string& s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    std::snprintf(buf, sizeof(buf), "%02x ", c);
    out += buf;
  }
  return out;
}

// ---- a tiny reader: TFRecord records, then the Event fields this writer uses ----

uint64_t LoadLe(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// The records of `file`; stops at a truncated last record. A CRC mismatch
// fails the test.
std::vector<std::string> ReadRecords(const std::string& file) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at + 12 <= file.size()) {
    uint64_t len = LoadLe(file, at, 8);
    EXPECT_EQ(LoadLe(file, at + 8, 4), MaskCrc(Crc32c(0, file.data() + at, 8))) << "at " << at;
    if (at + 12 + len + 4 > file.size()) break;
    std::string data = file.substr(at + 12, len);
    EXPECT_EQ(LoadLe(file, at + 12 + len, 4), MaskCrc(Crc32c(0, data.data(), data.size())))
        << "at " << at;
    records.push_back(data);
    at += 12 + len + 4;
  }
  return records;
}

struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::optional<std::string> file_version;
  std::string tag;
  std::optional<float> simple_value;
};

uint64_t ReadVarint(const std::string& s, size_t* at) {
  uint64_t v = 0;
  for (int shift = 0; *at < s.size(); shift += 7) {
    unsigned char b = static_cast<unsigned char>(s[(*at)++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  ADD_FAILURE() << "truncated varint";
  return v;
}

// Calls fn(field, wire_type, varint_or_fixed, bytes) for each field of a message.
template <typename Fn>
void ForEachField(const std::string& msg, Fn&& fn) {
  size_t at = 0;
  while (at < msg.size()) {
    uint64_t key = ReadVarint(msg, &at);
    uint32_t field = static_cast<uint32_t>(key >> 3), type = key & 7;
    if (type == 0) {
      fn(field, type, ReadVarint(msg, &at), std::string());
    } else if (type == 1 || type == 5) {
      int n = type == 1 ? 8 : 4;
      ASSERT_LE(at + n, msg.size());
      fn(field, type, LoadLe(msg, at, n), std::string());
      at += n;
    } else if (type == 2) {
      uint64_t len = ReadVarint(msg, &at);
      ASSERT_LE(at + len, msg.size());
      fn(field, type, 0, msg.substr(at, len));
      at += len;
    } else {
      FAIL() << "wire type " << type;
    }
  }
}

Event ParseEvent(const std::string& data) {
  Event e;
  ForEachField(data, [&](uint32_t field, uint32_t, uint64_t num, const std::string& bytes) {
    if (field == 1) std::memcpy(&e.wall_time, &num, 8);
    if (field == 2) e.step = static_cast<int64_t>(num);
    if (field == 3) e.file_version = bytes;
    if (field == 5) {
      ForEachField(bytes, [&](uint32_t f, uint32_t, uint64_t, const std::string& value) {
        ASSERT_EQ(f, 1u);
        ForEachField(value, [&](uint32_t vf, uint32_t, uint64_t vnum, const std::string& vb) {
          if (vf == 1) e.tag = vb;
          if (vf == 2) {
            uint32_t bits = static_cast<uint32_t>(vnum);
            float x;
            std::memcpy(&x, &bits, 4);
            e.simple_value = x;
          }
        });
      });
    }
  });
  return e;
}

std::vector<Event> ReadEvents(const std::string& path) {
  auto file = ReadFile(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  std::vector<Event> events;
  if (!file.ok()) return events;
  for (const auto& r : ReadRecords(*file)) events.push_back(ParseEvent(r));
  return events;
}

// ---- the format, against bytes computed by hand ----

TEST(TensorBoardTest, Crc32cIsCastagnoli) {
  // The CRC-32C check value (RFC 3720): TFRecord needs Castagnoli, not zlib's CRC-32.
  EXPECT_EQ(Crc32c(0, "123456789", 9), 0xE3069283u);
}

TEST(TensorBoardTest, MaskRotatesRightBy15AndAddsTheConstant) {
  EXPECT_EQ(MaskCrc(0), 0xa282ead8u);
  EXPECT_EQ(MaskCrc(0x00008000u), 0xa282ead9u);  // bit 15 lands on bit 0
  EXPECT_EQ(MaskCrc(0x00000001u), 0xa284ead8u);  // bit 0 lands on bit 17
  EXPECT_EQ(MaskCrc(0xE3069283u), 0xc78ab0e5u);
}

TEST(TensorBoardTest, FrameRecordLayout) {
  EXPECT_EQ(Hex(FrameRecord("hello")),
            "05 00 00 00 00 00 00 00 "  // u64 length
            "ea b2 04 3e "              // masked CRC-32C of the length
            "68 65 6c 6c 6f "           // "hello"
            "bb 1f 1c 19 ");            // masked CRC-32C of the data
  EXPECT_EQ(Hex(FrameRecord("")), "00 00 00 00 00 00 00 00 29 03 98 07 d8 ea 82 a2 ");
}

TEST(TensorBoardTest, ScalarEventEncoding) {
  // wall_time 1.5 = 0x3FF8000000000000, step 3, tag "loss", simple_value 0.25 = 0x3E800000.
  EXPECT_EQ(Hex(EncodeScalarEvent(1.5, 3, "loss", 0.25f)),
            "09 00 00 00 00 00 00 f8 3f "  // Event.wall_time (field 1, fixed64)
            "10 03 "                       // Event.step (2, varint)
            "2a 0d "                       // Event.summary (5), 13 bytes
            "0a 0b "                       // Summary.value (1), 11 bytes
            "0a 04 6c 6f 73 73 "           // Value.tag (1) "loss"
            "15 00 00 80 3e ");            // Value.simple_value (2, fixed32)
  // A step past 127 takes two varint bytes; a negative one takes ten.
  EXPECT_EQ(Hex(EncodeScalarEvent(0, 300, "a", 1.0f).substr(9, 3)), "10 ac 02 ");
  EXPECT_EQ(Hex(EncodeScalarEvent(0, -1, "a", 1.0f).substr(9, 11)),
            "10 ff ff ff ff ff ff ff ff ff 01 ");
}

TEST(TensorBoardTest, FileVersionEventEncoding) {
  // wall_time 2.0 = 0x4000000000000000; a zero step is left out.
  EXPECT_EQ(Hex(EncodeFileVersionEvent(2.0, "brain.Event:2")),
            "09 00 00 00 00 00 00 00 40 "                      // Event.wall_time
            "1a 0d 62 72 61 69 6e 2e 45 76 65 6e 74 3a 32 ");  // Event.file_version (3)
}

// ---- the writer, read back ----

TEST(TensorBoardTest, WriterRoundTrip) {
  testing::TempDir tmp;
  const std::string dir = JoinPath(tmp.path(), "a/b");  // created by Open
  auto w = TensorBoardWriter::Open(dir);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::string path = (*w)->path();
  EXPECT_EQ(DirName(path), dir);
  EXPECT_EQ(BaseName(path).rfind("events.out.tfevents.", 0), 0u) << path;
  EXPECT_TRUE(BaseName(path).size() > 5 &&
              BaseName(path).substr(BaseName(path).size() - 5) == ".tarn")
      << path;

  // The file_version event is on disk at once.
  auto events = ReadEvents(path);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version, std::optional<std::string>("brain.Event:2"));
  EXPECT_GT(events[0].wall_time, 1.5e9);

  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE((*w)->AddScalar("loss/train", step, 1.0 / step).ok());
    ASSERT_TRUE((*w)->AddScalar("auc/valid", step, 0.5 + 0.1 * step, 1000.0 + step).ok());
  }
  // Buffered until Flush.
  EXPECT_EQ(ReadEvents(path).size(), 1u);
  ASSERT_TRUE((*w)->Flush().ok());
  events = ReadEvents(path);
  ASSERT_EQ(events.size(), 7u);
  for (int step = 1; step <= 3; ++step) {
    const Event& loss = events[2 * step - 1];
    const Event& auc = events[2 * step];
    EXPECT_EQ(loss.tag, "loss/train");
    EXPECT_EQ(loss.step, step);
    EXPECT_EQ(loss.simple_value, std::optional<float>(static_cast<float>(1.0 / step)));
    EXPECT_FALSE(loss.file_version.has_value());
    EXPECT_EQ(auc.tag, "auc/valid");
    EXPECT_EQ(auc.step, step);
    EXPECT_EQ(auc.wall_time, 1000.0 + step);
    EXPECT_EQ(auc.simple_value, std::optional<float>(static_cast<float>(0.5 + 0.1 * step)));
  }

  // Closing flushes what is buffered.
  ASSERT_TRUE((*w)->AddScalar("loss/train", 4, 0.125).ok());
  w->reset();
  events = ReadEvents(path);
  ASSERT_EQ(events.size(), 8u);
  EXPECT_EQ(events.back().step, 4);
  EXPECT_EQ(events.back().simple_value, std::optional<float>(0.125f));

  // A truncated last record (a crash mid-write) leaves the whole ones readable.
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(WriteFileAtomic(path, bytes->substr(0, bytes->size() - 3)).ok());
  EXPECT_EQ(ReadEvents(path).size(), 7u);
}

TEST(TensorBoardTest, TwoWritersInOneFolderGetTwoFiles) {
  testing::TempDir tmp;
  auto a = TensorBoardWriter::Open(tmp.path());
  auto b = TensorBoardWriter::Open(tmp.path());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->path(), (*b)->path());
  auto names = ListDirectory(tmp.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 2u);
}

TEST(TensorBoardTest, RejectsAnEmptyTagAndAnUnwritableFolder) {
  testing::TempDir tmp;
  auto w = TensorBoardWriter::Open(tmp.path());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->AddScalar("", 1, 1.0).code(), StatusCode::kInvalidArgument);
  std::string file = tmp.Write("plain-file", "x");
  auto bad = TensorBoardWriter::Open(JoinPath(file, "sub"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("plain-file"), std::string::npos)
      << bad.status().ToString();
}

}  // namespace
}  // namespace tarn::model
