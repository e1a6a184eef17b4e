#include "common/shell.h"

#include <gtest/gtest.h>

namespace tarn {
namespace {

TEST(ShellQuote, AlwaysQuotesAndEscapesSingleQuotes) {
  EXPECT_EQ(ShellQuote("plain"), "'plain'");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(ShellWord, LeavesSafeWordsBareAndQuotesTheRest) {
  EXPECT_EQ(ShellWord("./tarn"), "./tarn");
  EXPECT_EQ(ShellWord("--port=0"), "--port=0");
  EXPECT_EQ(ShellWord("user@host:8020,b%2"), "user@host:8020,b%2");
  EXPECT_EQ(ShellWord(""), "''");
  EXPECT_EQ(ShellWord("a b"), "'a b'");
  EXPECT_EQ(ShellWord("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellWord("x;rm -rf /"), "'x;rm -rf /'");
  EXPECT_EQ(ShellWord("it's"), "'it'\\''s'");
}

TEST(CaptureOutput, ReturnsStdoutAndNamesAFailedCommand) {
  auto out = CaptureOutput("echo " + ShellQuote("a 'b'"), "echo");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "a 'b'\n");
  auto failed = CaptureOutput("exit 3", "the probe");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().ToString().find("the probe"), std::string::npos);
}

}  // namespace
}  // namespace tarn
