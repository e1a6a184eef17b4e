#include "cluster/yarn/sasl.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

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

TEST(DigestMd5, ALevelOutsideHadoopRpcProtectionIsRefusedClearly) {
  DigestMd5Client client("u", "p", "", "default", "c");  // allows auth only, by default
  auto r = client.Respond("realm=\"default\",nonce=\"n\",qop=\"auth-conf\",algorithm=md5-sess");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("hadoop.rpc.protection"), std::string::npos);
  EXPECT_NE(r.status().message().find("auth-conf"), std::string::npos);
  EXPECT_TRUE(client.Respond("nonce=\"n\",qop=\"auth-int,auth\",algorithm=md5-sess").ok());
  EXPECT_EQ(client.qop(), SaslQop::kAuth);
  EXPECT_FALSE(client.Respond("realm=\"x\"").ok());  // no nonce

  // Privacy without 3DES among the server's ciphers cannot be done here.
  DigestMd5Client privacy("u", "p", "", "default", "c");
  privacy.SetAllowedQops({SaslQop::kAuthConf});
  auto rc4 = privacy.Respond("nonce=\"n\",qop=\"auth-conf\",cipher=\"rc4,des\"");
  ASSERT_FALSE(rc4.ok());
  EXPECT_NE(rc4.status().message().find("3des"), std::string::npos);
}

TEST(DigestMd5, TheFirstAllowedLevelTheServerOffersIsChosen) {
  const char* challenge =
      "nonce=\"n\",qop=\"auth,auth-int,auth-conf\",cipher=\"3des,rc4\",maxbuf=4096,"
      "algorithm=md5-sess";
  DigestMd5Client a("u", "p", "", "default", "c");
  a.SetAllowedQops({SaslQop::kAuthConf, SaslQop::kAuth});
  auto r = a.Respond(challenge);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(a.qop(), SaslQop::kAuthConf);
  EXPECT_EQ(a.server_maxbuf(), 4096u);
  auto d = ParseDigestDirectives(*r);
  EXPECT_EQ((*d)["qop"], "auth-conf");
  EXPECT_EQ((*d)["cipher"], "3des");

  DigestMd5Client b("u", "p", "", "default", "c");
  b.SetAllowedQops({SaslQop::kAuthInt, SaslQop::kAuthConf});
  ASSERT_TRUE(b.Respond(challenge).ok());
  EXPECT_EQ(b.qop(), SaslQop::kAuthInt);
  auto again = b.Respond(challenge);
  ASSERT_TRUE(again.ok());
  auto directives = ParseDigestDirectives(*again);
  ASSERT_TRUE(directives.ok());
  EXPECT_EQ(directives->count("cipher"), 0u);
}

TEST(DigestMd5, HadoopRpcProtectionLevels) {
  auto one = ParseRpcProtection("privacy");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<SaslQop>{SaslQop::kAuthConf});
  auto list = ParseRpcProtection(" Authentication, integrity,privacy,integrity");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<SaslQop>{SaslQop::kAuth, SaslQop::kAuthInt, SaslQop::kAuthConf}));
  auto bad = ParseRpcProtection("authentication,secret");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("hadoop.rpc.protection"), std::string::npos);
  EXPECT_NE(bad.status().message().find("secret"), std::string::npos);
  EXPECT_FALSE(ParseRpcProtection(" , ").ok());
}

// Known answers from the JDK's own DIGEST-MD5 (javax.security.sasl, the implementation Hadoop's
// servers use): its client and server ran one exchange with the RFC 2831 example's names
// (fixtures/DigestMd5Vectors.java prints them); its cnonce is given to tarn's client, which must
// compute the same response, accept the server's rspauth, wrap its messages to the same bytes
// and unwrap the server's.
struct JdkExchange {
  SaslQop qop;
  const char* challenge;
  const char* cnonce;
  const char* response;
  const char* rspauth;
  std::vector<std::pair<std::string, std::string>> client_to_server;  // plaintext, wrapped hex
  std::vector<std::pair<std::string, std::string>> server_to_client;
};

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

const JdkExchange kJdkIntegrity{
    SaslQop::kAuthInt,
    "realm=\"elwood.innosoft.com\",nonce=\"q3AETNkrnbyj1h2odIuC0xceglPYGSRnRCkz+jyC\","
    "qop=\"auth-int\",charset=utf-8,algorithm=md5-sess",
    "NCdHQUjBSkXXtuRF6CVhUwfsQ1mGY/gSAaEBdpDv",
    "02c1f85d3d576eef5157f615f58fc1c6",
    "rspauth=9fa0f41fd9c2b391229c234f0c0a84bb",
    {{"hello", "68656c6c6f759815a3065bb9493f7f000100000000"},
     {"a second message, longer than one block",
      "61207365636f6e64206d6573736167652c206c6f6e676572207468616e206f6e6520626c6f636b663c6c5c4e"
      "17520a5498000100000001"}},
    {{"reply", "7265706c79498e4a8aa02890ae10e3000100000000"},
     {"and another reply from the server",
      "616e6420616e6f74686572207265706c792066726f6d20746865207365727665722f145c0b6ba9b912280800"
      "0100000001"}}};

const JdkExchange kJdkPrivacy{
    SaslQop::kAuthConf,
    "realm=\"elwood.innosoft.com\",nonce=\"dRid7P6WaCcHeR4S6d1ESWfWKZMT6jrftG/PmyX4\","
    "qop=\"auth-conf\",charset=utf-8,cipher=\"3des,rc4,des,rc4-56,rc4-40\",algorithm=md5-sess",
    "4DP6CIGqU3FxQxjAE/SpITgHR2HkY4Xr+scWB1DD",
    "6dd02b25782a7c8ab5a29df6b184ff0b",
    "rspauth=227f13c3fcaeb2795c66299495903ff2",
    {{"hello", "ddd707b5bac6741fac365c30b55f6055000100000000"},
     {"a second message, longer than one block",
      "7a659a74cbd481e39a9015cfd82e311a40d9ac5d3aa2bad7de7469fb1536cf9295c7a0320e245133b2afc480"
      "b14e913c9a22449af39cd77e000100000001"}},
    {{"reply", "41893eea16d679ce5739c5ebf921a1a0000100000000"},
     {"and another reply from the server",
      "7c18af92a870c6aeef98908d8b1c21c673d913224aecb22c56ac3209ecdb6b6dd56819d9698491a306d0d30b"
      "da6b9cdd000100000001"}}};

void CheckAgainstJdk(const JdkExchange& x) {
  DigestMd5Client client("chris", "secret", "imap", "elwood.innosoft.com", x.cnonce);
  client.SetAllowedQops({x.qop});
  auto response = client.Respond(x.challenge);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  auto d = ParseDigestDirectives(*response);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)["response"], x.response);
  EXPECT_EQ((*d)["qop"], QopName(x.qop));
  ASSERT_TRUE(client.Verify(x.rspauth).ok());
  auto layer = client.SecurityLayer();
  ASSERT_TRUE(layer.ok()) << layer.status().ToString();
  ASSERT_NE(*layer, nullptr);
  for (const auto& [plain, wrapped] : x.client_to_server) {
    auto w = (*layer)->Wrap(plain);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(HexEncode(*w), wrapped) << plain;
  }
  for (const auto& [plain, wrapped] : x.server_to_client) {
    auto u = (*layer)->Unwrap(FromHex(wrapped));
    ASSERT_TRUE(u.ok()) << u.status().ToString();
    EXPECT_EQ(*u, plain);
  }
}

TEST(DigestMd5, IntegrityMatchesTheJdk) { CheckAgainstJdk(kJdkIntegrity); }
TEST(DigestMd5, PrivacyWith3desMatchesTheJdk) { CheckAgainstJdk(kJdkPrivacy); }

// Both ends of one exchange: a client and a server layer keyed from the same H(A1).
std::pair<std::unique_ptr<DigestSecurityLayer>, std::unique_ptr<DigestSecurityLayer>> Pair(
    SaslQop qop) {
  const std::string ha1 = Md5("an exchange's H(A1)");
  auto client = DigestSecurityLayer::Create(DigestSecurityLayer::Side::kClient, ha1, qop);
  auto server = DigestSecurityLayer::Create(DigestSecurityLayer::Side::kServer, ha1, qop);
  EXPECT_TRUE(client.ok() && server.ok());
  return {std::move(*client), std::move(*server)};
}

TEST(DigestSecurityLayer, RoundTripsEverySizeBothWays) {
  for (SaslQop qop : {SaslQop::kAuthInt, SaslQop::kAuthConf}) {
    auto [client, server] = Pair(qop);
    for (size_t n = 0; n < 40; ++n) {
      const std::string m(n, static_cast<char>('a' + n % 26));
      auto to_server = server->Unwrap(*client->Wrap(m));
      ASSERT_TRUE(to_server.ok()) << QopName(qop) << " " << n << to_server.status().ToString();
      EXPECT_EQ(*to_server, m);
      auto to_client = client->Unwrap(*server->Wrap(m + "!"));
      ASSERT_TRUE(to_client.ok()) << to_client.status().ToString();
      EXPECT_EQ(*to_client, m + "!");
    }
    if (qop == SaslQop::kAuthConf) {
      const std::string sealed = *client->Wrap("secret payload");
      EXPECT_EQ(sealed.find("secret"), std::string::npos);  // encrypted, not only signed
      EXPECT_TRUE(server->Unwrap(sealed).ok());
    }
  }
}

TEST(DigestSecurityLayer, AlteredReplayedOrMiskeyedMessagesAreRefused) {
  for (SaslQop qop : {SaslQop::kAuthInt, SaslQop::kAuthConf}) {
    {
      auto [client, server] = Pair(qop);
      std::string w = *client->Wrap("transfer 10 to alice");
      w[3] ^= 1;
      auto r = server->Unwrap(w);
      ASSERT_FALSE(r.ok()) << QopName(qop);
      EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
    }
    {
      auto [client, server] = Pair(qop);
      const std::string first = *client->Wrap("one");
      ASSERT_TRUE(server->Unwrap(first).ok());
      auto replay = server->Unwrap(first);
      ASSERT_FALSE(replay.ok());
      EXPECT_NE(replay.status().message().find("sequence number"), std::string::npos);
    }
    {
      auto [client, server] = Pair(qop);
      // The client's own message back to it: the other direction's key does not match.
      EXPECT_FALSE(client->Unwrap(*client->Wrap("mine")).ok());
      EXPECT_FALSE(server->Unwrap("short").ok());
    }
  }
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
