#include "serving/token_auth.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace tarn::serving {
namespace {

using Verdict = TokenAuth::Verdict;

TEST(TokenAuthTest, ParsesOneTokenALineWithCommentsAndBlankLines) {
  auto tokens = TokenAuth::ParseTokens(
      "# serving clients\n\n  alpha-1  \r\nbeta.2/x+y=\n   # old: gamma\n\t\nlast", "t");
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  EXPECT_EQ(*tokens, (std::vector<std::string>{"alpha-1", "beta.2/x+y=", "last"}));
  auto bad = TokenAuth::ParseTokens("good\ntwo words\n", "/etc/tarn/tokens");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/etc/tarn/tokens:2:"), std::string::npos)
      << bad.status().message();
  // The error never repeats the (secret) token.
  EXPECT_EQ(bad.status().message().find("two words"), std::string::npos);
}

TEST(TokenAuthTest, AllowsOnlyTheFilesBearerTokens) {
  tarn::testing::TempDir dir;
  auto auth = TokenAuth::Open(dir.Write("tokens", "# clients\nsecret-a\nsecret-b\n"));
  ASSERT_TRUE(auth.ok()) << auth.status().message();
  TokenAuth& a = **auth;
  EXPECT_EQ(a.token_count(), 2u);
  EXPECT_EQ(a.Check("Bearer secret-a"), Verdict::kAllowed);
  EXPECT_EQ(a.Check("bearer   secret-b"), Verdict::kAllowed);  // the scheme is case-insensitive
  EXPECT_EQ(a.Check(""), Verdict::kMissing);
  EXPECT_EQ(a.Check("Basic c2VjcmV0LWE="), Verdict::kMissing);
  EXPECT_EQ(a.Check("Bearer"), Verdict::kMissing);
  EXPECT_EQ(a.Check("Bearer secret-c"), Verdict::kInvalid);
  EXPECT_EQ(a.Check("Bearer secret-"), Verdict::kInvalid);    // a prefix
  EXPECT_EQ(a.Check("Bearer secret-aa"), Verdict::kInvalid);  // longer
  EXPECT_EQ(a.Check("Bearer # clients"), Verdict::kInvalid);  // comments are no tokens
}

TEST(TokenAuthTest, ARewrittenFileReplacesTheTokensAndAFailedReloadKeepsThem) {
  tarn::testing::TempDir dir;
  const std::string path = dir.Write("tokens", "first\n");
  auto auth = TokenAuth::Open(path);
  ASSERT_TRUE(auth.ok()) << auth.status().message();
  TokenAuth& a = **auth;
  dir.Write("tokens", "second\nthird\n");
  ASSERT_TRUE(a.Reload(false).ok());
  EXPECT_EQ(a.Check("Bearer first"), Verdict::kInvalid);
  EXPECT_EQ(a.Check("Bearer third"), Verdict::kAllowed);
  // A malformed file: refused with its line, the tokens before stay.
  dir.Write("tokens", "fourth\nbad token\n");
  Status s = a.Reload(false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path + ":2:"), std::string::npos) << s.message();
  EXPECT_EQ(a.Check("Bearer second"), Verdict::kAllowed);
  EXPECT_EQ(a.Check("Bearer fourth"), Verdict::kInvalid);
  // A file that is gone: the same.
  std::filesystem::remove(path);
  EXPECT_FALSE(a.Reload(true).ok());
  EXPECT_EQ(a.Check("Bearer second"), Verdict::kAllowed);
  // Back, emptied: that is a successful read, and nobody is let in.
  dir.Write("tokens", "# revoked everyone\n");
  ASSERT_TRUE(a.Reload(false).ok());
  EXPECT_EQ(a.token_count(), 0u);
  EXPECT_EQ(a.Check("Bearer second"), Verdict::kInvalid);
}

TEST(TokenAuthTest, OpenRefusesAMissingOrEmptyFile) {
  tarn::testing::TempDir dir;
  auto missing = TokenAuth::Open(dir.File("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir.File("nope")), std::string::npos);
  auto empty = TokenAuth::Open(dir.Write("empty", "\n# nothing\n"));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("holds no token"), std::string::npos)
      << empty.status().message();
}

}  // namespace
}  // namespace tarn::serving
