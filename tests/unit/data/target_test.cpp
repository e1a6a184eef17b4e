#include "data/target.h"

#include <gtest/gtest.h>

namespace tarn::data {
namespace {

TEST(TargetMapperTest, MapsTagsAndRejectsOthers) {
  auto m = TargetMapper::Create({"M", "1"}, {"B"});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->Map("M"), 1);
  EXPECT_EQ(m->Map(" 1 "), 1);
  EXPECT_EQ(m->Map("B"), 0);
  EXPECT_EQ(m->Map("X"), -1);
  EXPECT_EQ(m->Map(""), -1);
}

TEST(TargetMapperTest, BadTagListsAreErrors) {
  EXPECT_FALSE(TargetMapper::Create({}, {"B"}).ok());
  auto both = TargetMapper::Create({"A"}, {"A"});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("'A' is in both"), std::string::npos);
}

}  // namespace
}  // namespace tarn::data
