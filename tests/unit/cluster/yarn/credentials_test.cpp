#include "cluster/yarn/credentials.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cluster/yarn/sasl.h"
#include "common/files.h"
#include "test_util.h"

namespace tarn::cluster::yarn {
namespace {

// The fixtures are written by Hadoop's own Credentials class:
// tests/yarn/src/main/java/tarn/yarn/CredentialsFixture.java (see fixtures/README.md).
std::string Fixture(const std::string& name) {
  return tarn::testing::SourceDir() + "/tests/unit/cluster/yarn/fixtures/" + name;
}

std::string Hex(std::string_view s) { return HexEncode(s); }

void ExpectMatchesJson(const Credentials& c) {
  auto text = ReadFile(Fixture("credentials.json"));
  ASSERT_TRUE(text.ok());
  const auto expected = nlohmann::json::parse(*text);
  ASSERT_EQ(c.tokens.size(), expected["tokens"].size());
  for (const auto& t : expected["tokens"]) {
    const Token* token = c.FindByAlias(t["alias"].get<std::string>());
    ASSERT_NE(token, nullptr) << t["alias"];
    EXPECT_EQ(token->kind, t["kind"].get<std::string>());
    EXPECT_EQ(token->service, t["service"].get<std::string>());
    EXPECT_EQ(Base64Encode(token->identifier), t["identifier"].get<std::string>());
    EXPECT_EQ(Base64Encode(token->password), t["password"].get<std::string>());
    if (t.contains("attempt")) {
      auto attempt = DecodeTokenAttempt(token->identifier);
      ASSERT_TRUE(attempt.ok()) << attempt.status().ToString();
      EXPECT_EQ(attempt->ToString(), t["attempt"].get<std::string>());
    }
  }
  ASSERT_EQ(c.secrets.size(), expected["secrets"].size());
  for (const auto& s : expected["secrets"]) {
    bool found = false;
    for (const auto& [alias, value] : c.secrets) {
      if (alias == s["alias"].get<std::string>()) {
        EXPECT_EQ(Base64Encode(value), s["value"].get<std::string>());
        found = true;
      }
    }
    EXPECT_TRUE(found) << s["alias"];
  }
}

TEST(Credentials, WritableVersionZeroFromHadoop) {
  auto c = ReadCredentialsFile(Fixture("credentials-v0.bin"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->version, 0);
  ExpectMatchesJson(*c);
  const Token* amrm = c->FindByKind(kAmRmTokenKind);
  ASSERT_NE(amrm, nullptr);
  EXPECT_EQ(amrm->service, "");
  EXPECT_EQ(c->FindByKind(kNmTokenKind), c->FindByService("node-1.example:45454"));
  EXPECT_EQ(c->FindByKind("nope"), nullptr);
}

TEST(Credentials, ProtobufVersionOneFromHadoop) {
  auto c = ReadCredentialsFile(Fixture("credentials-v1.bin"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->version, 1);
  ExpectMatchesJson(*c);
}

TEST(Credentials, SerializeWritesHadoopsBytesExactly) {
  auto bytes = ReadFile(Fixture("credentials-v0.bin"));
  ASSERT_TRUE(bytes.ok());
  auto c = ParseCredentials(*bytes, "v0");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Hex(SerializeCredentials(*c)), Hex(*bytes));
  // Version 1 content written as version 0 is the same file (same order of entries).
  auto v1 = ReadCredentialsFile(Fixture("credentials-v1.bin"));
  ASSERT_TRUE(v1.ok());
  auto again = ParseCredentials(SerializeCredentials(*v1), "rewritten");
  ASSERT_TRUE(again.ok());
  ExpectMatchesJson(*again);
}

TEST(Credentials, DamagedFilesAreRefusedByName) {
  auto bytes = ReadFile(Fixture("credentials-v0.bin"));
  ASSERT_TRUE(bytes.ok());
  for (size_t cut : {size_t{5}, size_t{6}, size_t{40}, bytes->size() - 1}) {
    auto c = ParseCredentials(std::string_view(*bytes).substr(0, cut), "container_tokens");
    ASSERT_FALSE(c.ok()) << "cut at " << cut;
    EXPECT_EQ(c.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(c.status().message().find("container_tokens"), std::string::npos);
  }
  auto trailing = ParseCredentials(*bytes + "x", "f");
  EXPECT_FALSE(trailing.ok());
  EXPECT_FALSE(ParseCredentials("HDTX\x00", "f").ok());
  auto v9 = ParseCredentials(std::string("HDTS\x09\x00\x00", 7), "f");
  ASSERT_FALSE(v9.ok());
  EXPECT_EQ(v9.status().code(), StatusCode::kUnsupported);
  auto v1 = ReadFile(Fixture("credentials-v1.bin"));
  ASSERT_TRUE(v1.ok());
  EXPECT_FALSE(ParseCredentials(v1->substr(0, v1->size() - 3), "v1").ok());
  EXPECT_FALSE(ReadCredentialsFile(Fixture("absent.bin")).ok());
}

// The RM REST documentation's example token (ResourceManagerRest.md, Cluster Delegation Tokens
// API) and an HDFS token the Kerberized mini cluster gave (tests/yarn/cluster start --kerberos).
constexpr const char* kRmDocToken =
    "MgASY2xpZW50QEVYQU1QTEUuQ09NDHRlc3QtcmVuZXdlcgCKAUckiEZpigFHSJTKaQECFN9EMM9BzfPoDxu572EVUpzq"
    "hnSGE1JNX0RFTEVHQVRJT05fVE9LRU4A";
constexpr const char* kMiniClusterHdfsToken =
    "HgAEcm9vdAZoYWRvb3AAigGiM3Sv1IoBoleBM9QBAhSjDxAU795L5PsJ3T1O0xafjC7ViBVIREZTX0RFTEVHQVRJT05f"
    "VE9LRU4PMTI3LjAuMC4xOjM1Nzk5";

TEST(Credentials, DelegationTokensFromTheirUrlStrings) {
  auto rm = TokenFromUrlString(kRmDocToken, "doc");
  ASSERT_TRUE(rm.ok()) << rm.status().ToString();
  EXPECT_EQ(rm->kind, "RM_DELEGATION_TOKEN");
  EXPECT_EQ(rm->service, "");
  EXPECT_EQ(rm->password.size(), 20u);  // HMAC-SHA1
  auto id = ParseDelegationTokenIdentifier(rm->identifier, "doc");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->owner, "client@EXAMPLE.COM");
  EXPECT_EQ(id->renewer, "test-renewer");
  EXPECT_EQ(id->real_user, "");
  EXPECT_EQ(id->issue_date_ms, 1405067216489);
  EXPECT_EQ(id->max_date_ms, 1405672016489);  // 7 days later
  EXPECT_EQ(id->sequence_number, 1);
  EXPECT_EQ(id->master_key_id, 2);
  // Encoding again gives Hadoop's string exactly: URL-safe, unpadded.
  EXPECT_EQ(TokenToUrlString(*rm), kRmDocToken);

  auto hdfs = TokenFromUrlString(kMiniClusterHdfsToken, "hdfs");
  ASSERT_TRUE(hdfs.ok()) << hdfs.status().ToString();
  EXPECT_EQ(hdfs->kind, kHdfsDelegationTokenKind);
  EXPECT_EQ(hdfs->service, "127.0.0.1:35799");
  auto hid = ParseDelegationTokenIdentifier(hdfs->identifier, "hdfs");
  ASSERT_TRUE(hid.ok()) << hid.status().ToString();
  EXPECT_EQ(hid->owner, "root");
  EXPECT_EQ(hid->renewer, "hadoop");  // the RM principal's short name
  EXPECT_EQ(TokenToUrlString(*hdfs), kMiniClusterHdfsToken);

  // Standard base64 with padding decodes to the same token.
  std::string standard = kRmDocToken;
  for (char& c : standard) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (standard.size() % 4 != 0) standard += '=';
  auto again = TokenFromUrlString(standard, "padded");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *rm);

  // Damage is refused by name.
  auto bad = TokenFromUrlString("not*base64", "the test token");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("the test token"), std::string::npos);
  auto cut = TokenFromUrlString(std::string(kRmDocToken).substr(0, 40), "cut");
  EXPECT_FALSE(cut.ok());
}

TEST(Credentials, HadoopVLongEncoding) {
  // WritableUtils.writeVLong: one byte for -112..127, else a length byte and big-endian bytes
  // (one's complement for negatives).
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "00"},
      {127, "7f"},
      {-112, "90"},
      {128, "8f80"},
      {300, "8e012c"},
      {-113, "8770"},
      {-256, "87ff"},
      {65536, "8d010000"},
      {INT64_MAX, "887fffffffffffffff"},
      {INT64_MIN, "807fffffffffffffff"},
  };
  for (const auto& [v, hex] : cases) {
    std::string out;
    PutHadoopVLong(&out, v);
    EXPECT_EQ(Hex(out), hex) << v;
    size_t pos = 0;
    int64_t back;
    ASSERT_TRUE(GetHadoopVLong(out, &pos, &back));
    EXPECT_EQ(back, v);
    EXPECT_EQ(pos, out.size());
  }
  size_t pos = 0;
  int64_t v;
  EXPECT_FALSE(GetHadoopVLong(std::string("\x8e\x01", 2), &pos, &v));  // truncated
}

}  // namespace
}  // namespace tarn::cluster::yarn
