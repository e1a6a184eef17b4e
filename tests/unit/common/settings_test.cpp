#include "common/settings.h"

#include <gtest/gtest.h>

#include "common/files.h"
#include "test_util.h"

namespace tarn {
namespace {

TEST(SettingsTest, DeclaredDefaultsThenXmlThenOverrides) {
  Settings s;
  EXPECT_EQ(*s.GetInt("shifu.task.max-missed-heartbeats"), 25);
  ASSERT_TRUE(s.ParseXml(R"(<?xml version="1.0"?>
<configuration>
  <!-- <property><name>shifu.ps.instances</name><value>99</value></property> -->
  <property><name>shifu.ps.instances</name><value>3</value></property>
  <property><name>my.custom.key</name><value>a &amp; b</value></property>
</configuration>)",
                         "test.xml")
                  .ok());
  EXPECT_EQ(*s.GetInt("shifu.ps.instances"), 3);
  EXPECT_EQ(s.GetString("my.custom.key"), "a & b");
  EXPECT_EQ(s.UnknownKeys(), std::vector<std::string>{"my.custom.key"});
  ASSERT_TRUE(s.ApplyOverride("shifu.ps.instances=5").ok());
  EXPECT_EQ(*s.GetInt("shifu.ps.instances"), 5);
}

TEST(SettingsTest, WrongTypeNamesKeyAndExpectedType) {
  Settings s;
  Status st = s.ApplyOverride("shifu.norm.shuffle.size=many");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("shifu.norm.shuffle.size"), std::string::npos);
  EXPECT_NE(st.message().find("must be an integer"), std::string::npos);
  EXPECT_NE(st.message().find("'many'"), std::string::npos);
  EXPECT_FALSE(s.ApplyOverride("novalue").ok());
  EXPECT_FALSE(s.ApplyOverride("tarn.data.max-bad-row-ratio=NaN").ok());
}

TEST(SettingsTest, MalformedXmlNamesLine) {
  Settings s;
  Status st = s.ParseXml("<configuration>\n\n<property><name>x</name>\n", "bad.xml");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("bad.xml:3"), std::string::npos) << st.message();
  EXPECT_FALSE(s.ParseXml("just text", "plain.txt").ok());
  Status no_value =
      s.ParseXml("<configuration><property><name>k</name></property></configuration>", "nv.xml");
  EXPECT_NE(no_value.message().find("'k' has no <value>"), std::string::npos);
}

TEST(SettingsTest, ShippedXmlDocumentsEveryDeclaredSettingWithItsDefault) {
  auto text = ReadFile(testing::SourceDir() + "/conf/global-default.xml");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, Settings::DefaultXml())
      << "conf/global-default.xml is stale: regenerate it with 'tarn settings --xml'";
  Settings s;
  ASSERT_TRUE(s.ParseXml(*text, "global-default.xml").ok());
  EXPECT_TRUE(s.UnknownKeys().empty());
}

TEST(SettingsTest, ClosestSettingFindsTypos) {
  EXPECT_EQ(ClosestSetting("shifu.ps.memroy").first, "shifu.ps.memory");
  EXPECT_EQ(ClosestSetting("shifu.ps.memroy").second, 2u);
  EXPECT_EQ(ClosestSetting("TARN.THREADS").second, 0u);  // case does not count
  EXPECT_TRUE(IsHadoopKey("fs.defaultFS"));
  EXPECT_TRUE(IsHadoopKey("yarn.resourcemanager.webapp.address"));
  EXPECT_FALSE(IsHadoopKey("basic.runMode"));
  EXPECT_FALSE(IsHadoopKey("tarn.threads"));
}

}  // namespace
}  // namespace tarn
