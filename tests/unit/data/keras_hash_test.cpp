#include "data/keras_hash.h"

#include <gtest/gtest.h>

#include <string>

#include "data/id_column.h"

namespace tarn::data {
namespace {

// Computed with TensorFlow 2.21: tf.fingerprint(method="farmhash64") for the
// fingerprint, tf.strings.to_hash_bucket_strong(num_buckets=2^63 - 1,
// key=[7, 7]) for SipHash, one string per length class of the algorithm
// (0, 1-3, 4-7, 8-16, 17-32, 33-64, over 64 with one and several blocks).
struct Pinned {
  std::string text;
  uint64_t fingerprint;
  uint64_t siphash_mod;  // SipHash24(text, 7, 7) mod (2^63 - 1)
};
const Pinned kPinned[] = {
    {"", 0x9ae16a3b2f90404fULL, 4673399734692642358ULL},
    {"a", 0xb3454265b6df75e3ULL, 4886863274070914166ULL},
    {"Pri", 0x62694ca30b941b3eULL, 1875575019114108443ULL},
    {"Priv", 0x3e9e88e283a28751ULL, 4070971815923665223ULL},
    {"Private", 0x9aeb0b6a127a7e13ULL, 4013923470312487398ULL},
    {"Self-emp", 0x46c0e78b30464b57ULL, 714452340071172101ULL},
    {"Self-emp-not-inc", 0x1002b178b0f22285ULL, 7723662574980649241ULL},
    {"Married-civ-spouse", 0x840ac9641f874981ULL, 4652860900727838447ULL},
    {"Z\xc3\xbcrich", 0x3b6dac5a541cf4bbULL, 6474397370215748314ULL},  // UTF-8 bytes
    {std::string(32, 'x'), 0xb30b9baccc74dc05ULL, 8286023451370800405ULL},
    {std::string(33, 'y'), 0x777f79e52d060efeULL, 5106195011231190819ULL},
    {std::string(64, 'z'), 0x41756d0f401a218ULL, 8444895832617697314ULL},
    {std::string(65, 'w'), 0xad68852f3c9c3280ULL, 6024073130777501453ULL},
};

TEST(KerasHashTest, FarmHashAndSipHashArePinnedToTensorFlow) {
  for (const auto& p : kPinned) {
    EXPECT_EQ(FarmHashFingerprint64(p.text), p.fingerprint) << "'" << p.text << "'";
    EXPECT_EQ(SipHash24(p.text, 7, 7) % ((uint64_t{1} << 63) - 1), p.siphash_mod)
        << "'" << p.text << "'";
  }
  std::string blocks;
  for (int i = 0; i < 43; ++i) blocks += "abc";
  blocks.resize(129);  // three 64-byte steps, the last overlapping
  EXPECT_EQ(FarmHashFingerprint64(blocks), 0xc642f3deed2b6fa8ULL);
  EXPECT_EQ(SipHash24(blocks, 7, 7) % ((uint64_t{1} << 63) - 1), 3767638731773312395ULL);
}

// Bins as keras.layers.Hashing (Keras 3.15) gave them for these options.
TEST(KerasHashTest, BinsAreKerasHashingLayers) {
  const KerasHashing plain{10, std::nullopt, std::nullopt};
  EXPECT_EQ(plain.Bin("?"), 5u);
  EXPECT_EQ(plain.Bin("Private"), 1u);
  EXPECT_EQ(plain.Bin(""), 3u);
  EXPECT_EQ(plain.Bin("State-gov"), 3u);
  // A mask value is bin 0; the others hash into 1..num_bins-1 with the salt's key.
  const KerasHashing salted{8, std::array<uint64_t, 2>{3, 0x123456789ULL}, "?"};
  EXPECT_EQ(salted.Bin("?"), 0u);
  EXPECT_EQ(salted.Bin("Private"), 2u);
  EXPECT_EQ(salted.Bin(""), 3u);
  EXPECT_EQ(salted.Bin("State-gov"), 5u);
  // One bin leaves no room for a mask: everything is 0.
  const KerasHashing one{1, std::nullopt, "?"};
  EXPECT_EQ(one.Bin("?"), 0u);
  EXPECT_EQ(one.Bin("Private"), 0u);
}

// A Keras-hashed id column hashes every text, a missing marker too, and
// keeps its options through the shard header and the model file.
TEST(KerasHashTest, KerasHashedIdColumn) {
  ColumnConfig c;
  c.column_num = 1;
  c.column_name = "workclass";
  c.column_type = ColumnType::kCategorical;
  c.hash_seed = 100;  // the graph's Hashing wins over tarn's own hash
  const KerasHashing hashing{10, std::nullopt, std::nullopt};
  auto id = IdColumnFor(c, /*index_normtype=*/true, 0, &hashing);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->kind, IdKind::kKerasHash);
  EXPECT_EQ(id->vocabulary, 10u);
  EXPECT_FALSE(id->HasMissingId());
  auto e = IdEncoder::Create(c, *id);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->Id("?", /*missing=*/true), 5u);  // hashed as Keras hashes "?"
  EXPECT_EQ(e->Id("Private", false), 1u);

  IdColumn salted = *id;
  salted.keras = {8, std::array<uint64_t, 2>{3, 0xffffffffffffffffULL}, "?"};
  salted.vocabulary = 8;
  for (const IdColumn& column : {*id, salted}) {
    auto back = IdColumn::FromJson(column.ToJson(), "f");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, column);
  }
  Json bad = salted.ToJson();
  bad["vocabulary"] = 9;
  auto r = IdColumn::FromJson(bad, "part-00000.tshard: idColumns");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'workclass' has 8 bins but vocabulary 9"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace tarn::data
