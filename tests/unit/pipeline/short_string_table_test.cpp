#include "pipeline/short_string_table.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/strings.h"

namespace tarn::pipeline {
namespace {

// Numbers that share their first characters ("44.5000" .. "44.5999"), the keys that used to
// pile up in one probe chain: every one is found with its own value, and absent ones are not.
TEST(ShortStringTableTest, FindsEveryKeyOfACommonPrefix) {
  ShortStringTable<uint32_t> table;
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "44.5%03d", i);
    keys.emplace_back(buf);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    uint64_t bits = 0;
    ASSERT_TRUE(PackShortString(keys[i], &bits));
    ASSERT_EQ(table.Find(bits, keys[i].size()), 0u);
    table.Insert(bits, keys[i].size(), static_cast<uint32_t>(i + 1));
  }
  EXPECT_EQ(table.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    uint64_t bits = 0;
    PackShortString(keys[i], &bits);
    EXPECT_EQ(table.Find(bits, keys[i].size()), i + 1) << keys[i];
  }
  uint64_t bits = 0;
  PackShortString("44.6000", &bits);
  EXPECT_EQ(table.Find(bits, 7), 0u);
  PackShortString("44.500", &bits);  // a prefix of a key, one byte shorter
  EXPECT_EQ(table.Find(bits, 6), 0u);
  table.Clear();
  EXPECT_EQ(table.size(), 0u);
  PackShortString(keys[0], &bits);
  EXPECT_EQ(table.Find(bits, keys[0].size()), 0u);
}

TEST(CacheGateTest, StaysOnWhileHalfTheProbesHit) {
  CacheGate gate;
  for (uint32_t i = 0; i < 10 * CacheGate::kWindow; ++i) EXPECT_TRUE(gate.Count(i % 2 == 0));
  EXPECT_TRUE(gate.on());
}

TEST(CacheGateTest, TurnsOffForGoodAfterAPoorWindow) {
  CacheGate gate;
  uint32_t probes = 0;
  while (gate.Count(probes % 4 == 0)) ++probes;  // a quarter of the probes hit
  EXPECT_EQ(probes + 1, CacheGate::kWindow);     // off at the end of the first window
  EXPECT_FALSE(gate.on());
}

TEST(CacheGateTest, GivesAFillingCacheAnotherWindow) {
  CacheGate gate;
  // The first window hits 40% (new values miss while the cache fills), the second 80%.
  for (uint32_t i = 0; i < CacheGate::kWindow; ++i) EXPECT_TRUE(gate.Count(i % 5 < 2));
  EXPECT_TRUE(gate.on());
  for (uint32_t i = 0; i < CacheGate::kWindow; ++i) EXPECT_TRUE(gate.Count(i % 5 != 0));
  // A poor window that does not improve on the one before turns it off.
  uint32_t probes = 0;
  while (gate.Count(probes % 5 < 2)) ++probes;
  EXPECT_EQ(probes + 1, CacheGate::kWindow);
  EXPECT_FALSE(gate.on());
}

TEST(RepeatGateTest, TurnsOffAfterAPoorWindowAndBackOnAfterAGoodOne) {
  RepeatGate gate;
  // A column's first window, while its cache fills: a quarter of the values repeat.
  uint32_t values = 0;
  while (!gate.Count(values % 4 == 0)) ++values;
  EXPECT_EQ(values + 1, RepeatGate::kWindow);  // off at the end of the first window
  EXPECT_FALSE(gate.on());
  // Then nearly every value repeats (counted from the owner's own table, the cache off).
  for (uint32_t i = 0; i + 1 < RepeatGate::kWindow; ++i) {
    EXPECT_FALSE(gate.Count(i % 8 != 0));
    EXPECT_FALSE(gate.on());  // judged only at the window's end
  }
  EXPECT_FALSE(gate.Count(true));  // turning on is not reported as turning off
  EXPECT_TRUE(gate.on());
}

TEST(RepeatGateTest, StaysOffWhileFewValuesRepeat) {
  RepeatGate gate;
  uint32_t turned_off = 0;
  for (uint32_t i = 0; i < 10 * RepeatGate::kWindow; ++i) turned_off += gate.Count(i % 3 == 0);
  EXPECT_EQ(turned_off, 1u);
  EXPECT_FALSE(gate.on());
}

}  // namespace
}  // namespace tarn::pipeline
