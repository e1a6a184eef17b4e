#include "common/strings.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tarn {
namespace {

TEST(ParseDoubleTest, AcceptsWhatShifuAccepts) {
  EXPECT_EQ(*ParseDouble("42"), 42.0);
  EXPECT_EQ(*ParseDouble("-0.5"), -0.5);
  EXPECT_EQ(*ParseDouble("+3"), 3.0);
  EXPECT_EQ(*ParseDouble(" 7.25 "), 7.25);
  EXPECT_EQ(*ParseDouble(".5"), 0.5);
  EXPECT_EQ(*ParseDouble("5."), 5.0);
  EXPECT_EQ(*ParseDouble("1e3"), 1000.0);
  EXPECT_EQ(*ParseDouble("1.5E-2"), 0.015);
  EXPECT_TRUE(std::isinf(*ParseDouble("1e999")));
  EXPECT_EQ(*ParseDouble("12345678901234567890"), 12345678901234567890.0);
  EXPECT_TRUE(std::isnan(*ParseDouble("nan")));  // callers treat non-finite as missing
  for (const char* bad : {"", " ", "-", ".", "1.2.3", "12abc", "abc", "1,5", "--1", "+"}) {
    EXPECT_FALSE(ParseDouble(bad).has_value()) << bad;
  }
}

TEST(ParseDoubleTest, FastPathIsCorrectlyRounded) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200000; ++i) {
    uint64_t mantissa = rng() % 1000000000000000ULL;
    int scale = static_cast<int>(rng() % 16);
    std::string digits = std::to_string(mantissa);
    if (scale > 0) {
      while (static_cast<int>(digits.size()) <= scale) digits = "0" + digits;
      digits.insert(digits.size() - scale, ".");
    }
    double expected = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), expected);
    ASSERT_EQ(*ParseDouble(digits), expected) << digits;
  }
}

TEST(StringsTest, PackShortStringIsUniquePerLength) {
  std::set<std::pair<uint64_t, size_t>> seen;
  std::vector<std::string> values = {"",      "a",     "b",        "ab",       "ba",   "aa",
                                     "abc",   "acb",   "cba",      "aab",      "abcd", "abce",
                                     "abcde", "abdce", "12345678", "12345687", "LAX",  "LAS",
                                     "1.5",   "15.",   "0",        "00",       "000"};
  for (const auto& v : values) {
    uint64_t bits = 0;
    ASSERT_TRUE(PackShortString(v, &bits)) << v;
    EXPECT_TRUE(seen.insert({bits, v.size()}).second) << v;
  }
  uint64_t bits = 0;
  EXPECT_FALSE(PackShortString("123456789", &bits));
}

TEST(StringsTest, SplitJoinTrim) {
  EXPECT_EQ(Split("a||b|", "|"), (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_EQ(Split("a::b", "::"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Join({"x", "y"}, ", "), "x, y");
  EXPECT_EQ(Trim("\t a b \n"), "a b");
  EXPECT_TRUE(EqualsIgnoreCase("ZScale", "zscale"));
  EXPECT_EQ(FormatDouble(-INFINITY), "-Infinity");
  EXPECT_EQ(FormatDuration(75), "1m15s");
}

TEST(StringsTest, EditDistanceIgnoresCase) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("RunMode", "runmode"), 0u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
}

}  // namespace
}  // namespace tarn
