#include "cluster/yarn/protobuf_wire.h"

#include <gtest/gtest.h>

#include <climits>

namespace tarn::cluster::yarn {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(ProtobufWire, VarintsAsTheProtobufDocumentationShows) {
  std::string out;
  PutVarint(&out, 1);
  PutVarint(&out, 300);
  EXPECT_EQ(out, Bytes({0x01, 0xAC, 0x02}));
  size_t pos = 0;
  uint64_t v;
  ASSERT_TRUE(GetVarint(out, &pos, &v));
  EXPECT_EQ(v, 1u);
  ASSERT_TRUE(GetVarint(out, &pos, &v));
  EXPECT_EQ(v, 300u);
  EXPECT_FALSE(GetVarint(out, &pos, &v));  // at the end
  std::string truncated = Bytes({0x80, 0x80});
  pos = 0;
  EXPECT_FALSE(GetVarint(truncated, &pos, &v));
}

TEST(ProtobufWire, NegativeInt32IsTenBytesAndZigZagIsShort) {
  ProtoWriter w;
  w.Int(4, -1);
  EXPECT_EQ(w.data(), Bytes({0x20, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
  ProtoWriter z;
  z.Sint32(3, -1);
  z.Sint32(3, 1);
  z.Sint32(3, -33);
  EXPECT_EQ(z.data(), Bytes({0x18, 0x01, 0x18, 0x02, 0x18, 0x41}));
  EXPECT_EQ(ZigZag32(INT32_MIN), 0xFFFFFFFFu);
  EXPECT_EQ(ZigZag32(INT32_MAX), 0xFFFFFFFEu);
  for (int32_t v : {0, 1, -1, -33, -3, -4, 12345, INT32_MIN, INT32_MAX}) {
    EXPECT_EQ(UnZigZag32(ZigZag32(v)), v);
  }
  for (int64_t v : {int64_t{0}, int64_t{-5}, INT64_MIN, INT64_MAX}) {
    EXPECT_EQ(UnZigZag64(ZigZag64(v)), v);
  }
}

TEST(ProtobufWire, ParsesEveryWireTypeAndKeepsTheLastSingularValue) {
  ProtoWriter inner;
  inner.Bytes(1, "x");
  ProtoWriter w;
  w.Int(1, 7);
  w.Int(1, 8);  // a repeated singular field: the last wins
  w.Fixed64(2, 0x0102030405060708ULL);
  w.Message(3, inner);
  w.Message(3, inner);
  w.Float(5, 0.5f);
  w.Int(6, -100);
  auto m = ProtoMessage::Parse(w.data(), "Test");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->Varint(1), 8u);
  EXPECT_EQ(m->Varint(2), 0x0102030405060708ULL);
  EXPECT_EQ(m->RepeatedBytes(3).size(), 2u);
  EXPECT_FLOAT_EQ(m->Float(5), 0.5f);
  EXPECT_EQ(m->Int32(6), -100);
  EXPECT_FALSE(m->Has(4));
  EXPECT_EQ(m->Int32(4, -1000), -1000);
  EXPECT_EQ(m->RepeatedVarint(1), (std::vector<uint64_t>{7, 8}));
}

TEST(ProtobufWire, PackedRepeatedVarints) {
  std::string packed;
  PutVarint(&packed, 3);
  PutVarint(&packed, 270);
  ProtoWriter w;
  w.Bytes(2, packed);
  auto m = ProtoMessage::Parse(w.data(), "Packed");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->RepeatedVarint(2), (std::vector<uint64_t>{3, 270}));
}

TEST(ProtobufWire, MalformedMessagesNameTheMessageAndField) {
  auto overrun = ProtoMessage::Parse(Bytes({0x0A, 0x05, 'a'}), "AllocateResponseProto");
  ASSERT_FALSE(overrun.ok());
  EXPECT_NE(overrun.status().message().find("AllocateResponseProto"), std::string::npos);
  EXPECT_NE(overrun.status().message().find("field 1"), std::string::npos);
  auto group = ProtoMessage::Parse(Bytes({0x0B}), "X");  // wire type 3 (groups)
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.status().message().find("wire type 3"), std::string::npos);
  EXPECT_FALSE(ProtoMessage::Parse(Bytes({0x0D, 0x01}), "X").ok());  // fixed32 cut short
  EXPECT_FALSE(ProtoMessage::Parse(Bytes({0x00}), "X").ok());        // field number 0
}

}  // namespace
}  // namespace tarn::cluster::yarn
