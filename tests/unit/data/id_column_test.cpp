#include "data/id_column.h"

#include <gtest/gtest.h>

namespace tarn::data {
namespace {

// The hash is part of the data format: ids written by one tarn must be the
// ids of the next. These values were computed outside tarn from the
// definition in id_column.h; a change here breaks every hashed model.
TEST(IdColumnTest, CategoryHashIsPinned) {
  EXPECT_EQ(CategoryHash64("", 0), 0xf52a15e9a9b5e89bULL);
  EXPECT_EQ(CategoryHash64("Private", 0), 0x44c259e2b43553f3ULL);
  EXPECT_EQ(CategoryHash64("Private", 1), 0x240fdf99cbf7b4e1ULL);
  EXPECT_EQ(CategoryHash64("United-States", 0), 0xb400d094ad446dc6ULL);
  EXPECT_EQ(CategoryHash64("Z\xc3\xbcrich", 0), 0xc65e9341af283a5dULL);  // UTF-8 bytes
  EXPECT_EQ(CategoryHash64("a", 12345), 0x5d0a981177982990ULL);
}

ColumnConfig Categorical(int hash_seed) {
  ColumnConfig c;
  c.column_num = 3;
  c.column_name = "workclass";
  c.column_type = ColumnType::kCategorical;
  c.hash_seed = hash_seed;
  c.binning.length = 3;
  c.binning.bin_category = {"Private", "Self-emp@^Federal-gov", "Local-gov"};
  return c;
}

TEST(IdColumnTest, HashedIdsAreTheHashModBucketsAndMissingIsLast) {
  ColumnConfig c = Categorical(1000);
  auto id = IdColumnFor(c, /*index_normtype=*/true, /*hash_seed=*/0);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->kind, IdKind::kHash);  // hashSeed wins over the index normType
  EXPECT_EQ(id->vocabulary, 1001u);
  auto e = IdEncoder::Create(c, *id);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->Id("Private", false), 651u);  // 0x44c259e2b43553f3 mod 1000
  EXPECT_EQ(e->Id("United-States", false), 614u);
  EXPECT_EQ(e->Id("never-seen-by-stats", false), CategoryHash64("never-seen-by-stats", 0) % 1000);
  EXPECT_EQ(e->Id("?", true), 1000u);

  auto seeded = IdColumnFor(c, false, 1);
  auto s = IdEncoder::Create(c, *seeded);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->Id("Private", false), 417u);  // 0x240fdf99cbf7b4e1 mod 1000
}

TEST(IdColumnTest, IndexIdsAreTheCategoryGroupAndUnseenOrMissingIsLast) {
  ColumnConfig c = Categorical(0);
  EXPECT_FALSE(IdColumnFor(c, /*index_normtype=*/false, 0).has_value());
  auto id = IdColumnFor(c, true, 0);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->kind, IdKind::kIndex);
  EXPECT_EQ(id->vocabulary, 4u);
  auto e = IdEncoder::Create(c, *id);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->Id("Private", false), 0u);
  EXPECT_EQ(e->Id("Federal-gov", false), 1u);  // a merged group
  EXPECT_EQ(e->Id("Local-gov", false), 2u);
  EXPECT_EQ(e->Id("Never-worked", false), 3u);  // unseen: the missing bin, as Shifu's WDL
  EXPECT_EQ(e->Id("", true), 3u);

  ColumnConfig numeric = c;
  numeric.column_type = ColumnType::kNumeric;
  numeric.hash_seed = 10;
  EXPECT_FALSE(IdColumnFor(numeric, true, 0).has_value());  // ids are for categorical columns
}

TEST(IdColumnTest, EncoderRefusesCategoriesThatDoNotMatch) {
  ColumnConfig c = Categorical(0);
  IdColumn id = *IdColumnFor(c, true, 0);
  c.binning.bin_category.push_back("State-gov");  // stats rerun after norm
  auto e = IdEncoder::Create(c, id);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("'workclass' has vocabulary 4"), std::string::npos)
      << e.status().message();
  ColumnConfig other = Categorical(0);
  other.column_name = "education";
  EXPECT_FALSE(IdEncoder::Create(other, id).ok());
}

TEST(IdColumnTest, JsonRoundTripAndBadEntriesNamed) {
  IdColumn hashed{"merchant", 7, IdKind::kHash, 65537, 42};
  auto back = IdColumn::FromJson(hashed.ToJson(), "f");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, hashed);
  EXPECT_EQ(hashed.ToJson().at("buckets"), 65536);
  IdColumn index{"color", 2, IdKind::kIndex, 5};
  EXPECT_EQ(*IdColumn::FromJson(index.ToJson(), "f"), index);

  Json bad = hashed.ToJson();
  bad["kind"] = "onehot";
  auto r = IdColumn::FromJson(bad, "part-00000.tshard: idColumns");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("part-00000.tshard: idColumns: id column 'merchant'"),
            std::string::npos)
      << r.status().message();
  bad = hashed.ToJson();
  bad["vocabulary"] = 0;
  EXPECT_FALSE(IdColumn::FromJson(bad, "f").ok());
  bad = hashed.ToJson();
  bad["buckets"] = 3;
  EXPECT_FALSE(IdColumn::FromJson(bad, "f").ok());
}

}  // namespace
}  // namespace tarn::data
