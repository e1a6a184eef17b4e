#include "cluster/yarn/sasl.h"

#include <gtest/gtest.h>

namespace tarn::cluster::yarn {
namespace {

// RFC 2831 section 4, the worked example (IMAP, user chris, password secret).
constexpr const char* kRfcChallenge =
    "realm=\"elwood.innosoft.com\",nonce=\"OA6MG9tEQGm2hh\",qop=\"auth\",algorithm=md5-sess,"
    "charset=utf-8";
constexpr const char* kRfcResponse =
    "charset=utf-8,username=\"chris\",realm=\"elwood.innosoft.com\",nonce=\"OA6MG9tEQGm2hh\","
    "nc=00000001,cnonce=\"OA6MHXh6VqTrRk\",digest-uri=\"imap/elwood.innosoft.com\","
    "response=d388dad90d4bbd760a152321f2143af7,qop=auth";

TEST(DigestMd5, Rfc2831WorkedExample) {
  DigestMd5Client client("chris", "secret", "imap", "elwood.innosoft.com", "OA6MHXh6VqTrRk");
  auto response = client.Respond(kRfcChallenge);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(*response, kRfcResponse);
  EXPECT_FALSE(client.complete());
  EXPECT_TRUE(client.Verify("rspauth=ea40f60335c427b5527b84dbabcdfffd").ok());
  EXPECT_TRUE(client.complete());
}

TEST(DigestMd5, WrongRspauthOrPasswordIsRefused) {
  DigestMd5Client client("chris", "secret", "imap", "elwood.innosoft.com", "OA6MHXh6VqTrRk");
  ASSERT_TRUE(client.Respond(kRfcChallenge).ok());
  Status s = client.Verify("rspauth=ea40f60335c427b5527b84dbabcdfffe");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rspauth"), std::string::npos);
  EXPECT_FALSE(client.Verify("something=else").ok());

  DigestMd5Client wrong("chris", "Secret", "imap", "elwood.innosoft.com", "OA6MHXh6VqTrRk");
  auto r = wrong.Respond(kRfcChallenge);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->find("d388dad90d4bbd760a152321f2143af7"), std::string::npos);
}

TEST(DigestMd5, HadoopTokenUsesBase64AndTheServerId) {
  Token token{std::string("\x0a\x0d\x0a\x09", 4), std::string("\x01\x02\x03", 3),
              "YARN_AM_RM_TOKEN", ""};
  DigestMd5Client client = DigestMd5Client::ForToken(token, "", "default");
  auto r = client.Respond(
      "realm=\"default\",nonce=\"abc\",qop=\"auth\",charset=utf-8,"
      "algorithm=md5-sess");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto d = ParseDigestDirectives(*r);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)["username"], "Cg0KCQ==");
  EXPECT_EQ((*d)["digest-uri"], "/default");
  EXPECT_EQ((*d)["realm"], "default");
  EXPECT_EQ((*d)["qop"], "auth");
  EXPECT_EQ((*d)["cnonce"].size(), 24u);  // 18 random bytes, base64
  // The response is the RFC's formula with the base64 password.
  const std::string ha1 = HexEncode(
      Md5(Md5("Cg0KCQ==:default:" + Base64Encode(token.password)) + ":abc:" + (*d)["cnonce"]));
  EXPECT_EQ((*d)["response"], HexEncode(Md5(ha1 + ":abc:00000001:" + (*d)["cnonce"] +
                                            ":auth:" + HexEncode(Md5("AUTHENTICATE:/default")))));
}

TEST(DigestMd5, IntegrityAndPrivacyAreRefusedClearly) {
  DigestMd5Client client("u", "p", "", "default", "c");
  auto r = client.Respond("realm=\"default\",nonce=\"n\",qop=\"auth-conf\",algorithm=md5-sess");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("hadoop.rpc.protection"), std::string::npos);
  EXPECT_TRUE(client.Respond("nonce=\"n\",qop=\"auth-int,auth\",algorithm=md5-sess").ok());
  EXPECT_FALSE(client.Respond("realm=\"x\"").ok());  // no nonce
}

TEST(DigestMd5, DirectivesWithQuotesEscapesAndRepeatedRealms) {
  auto d = ParseDigestDirectives(
      " realm=\"a\\\"b\" , realm=\"second\",nonce=\"x,y\",Algorithm=md5-sess,stale=true");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)["realm"], "a\"b");
  EXPECT_EQ((*d)["nonce"], "x,y");
  EXPECT_EQ((*d)["algorithm"], "md5-sess");
  EXPECT_EQ((*d)["stale"], "true");
  EXPECT_FALSE(ParseDigestDirectives("nonce=\"unterminated").ok());
  EXPECT_FALSE(ParseDigestDirectives("novalue,").ok());
}

TEST(DigestMd5, Base64AndHexVectors) {
  // RFC 4648 section 10.
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(std::string("\xff\xfe", 2)), "//4=");
  // RFC 1321 appendix A.5.
  EXPECT_EQ(HexEncode(Md5("")), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(HexEncode(Md5("abc")), "900150983cd24fb0d6963f7d28e17f72");
}

}  // namespace
}  // namespace tarn::cluster::yarn
