#include "net/kerberos.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "net/http_client.h"
#include "net/http_server.h"
#include "test_util.h"

namespace tarn::net {
namespace {

// A Kerberos set-up with no ticket anywhere: a krb5.conf of its own and a ticket cache file
// that does not exist (each test runs in a process of its own under ctest).
class NoTicket : public ::testing::Test {
 protected:
  void SetUp() override {
    conf_ = dir_.Write("krb5.conf",
                       "[libdefaults]\n  default_realm = EXAMPLE.COM\n  dns_lookup_kdc = false\n"
                       "[realms]\n  EXAMPLE.COM = {\n    kdc = 127.0.0.1:1\n  }\n");
    ::setenv("KRB5_CONFIG", conf_.c_str(), 1);
    ::setenv("KRB5CCNAME", ("FILE:" + dir_.File("no-such-cache")).c_str(), 1);
    ::unsetenv("KRB5_CLIENT_KTNAME");
    ASSERT_TRUE(ConfigureKerberos(KerberosLogin{}).ok());
  }
  tarn::testing::TempDir dir_;
  std::string conf_;
};

TEST_F(NoTicket, AMissingTicketIsAClearErrorSayingHowToRenew) {
  auto c = CheckKerberosCredential();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied);
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("no valid Kerberos ticket"), std::string::npos) << m;
  EXPECT_NE(m.find("kinit"), std::string::npos) << m;
  EXPECT_NE(m.find("tarn.kerberos.keytab"), std::string::npos) << m;
  EXPECT_NE(m.find("GSS major"), std::string::npos) << m;      // the codes, for a search
  EXPECT_NE(m.find("no-such-cache"), std::string::npos) << m;  // which cache was looked at
  EXPECT_FALSE(EnsureKerberosCredential().ok());

  // With a principal configured, the message names it.
  ASSERT_TRUE(ConfigureKerberos(KerberosLogin{"alice@EXAMPLE.COM", ""}).ok());
  auto named = CheckKerberosCredential();
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.status().message().find("kinit alice@EXAMPLE.COM"), std::string::npos)
      << named.status().message();
}

TEST_F(NoTicket, AKeytabMustExistAndNameItsPrincipal) {
  Status missing = ConfigureKerberos(KerberosLogin{"alice@EXAMPLE.COM", dir_.File("none.kt")});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("none.kt"), std::string::npos) << missing.message();
  const std::string keytab = dir_.Write("alice.kt", "");
  Status unnamed = ConfigureKerberos(KerberosLogin{"", keytab});
  ASSERT_FALSE(unnamed.ok());
  EXPECT_NE(unnamed.message().find("tarn.kerberos.principal"), std::string::npos);
  // A keytab login gets a memory cache of this process, never the user's ticket cache.
  ASSERT_TRUE(ConfigureKerberos(KerberosLogin{"alice@EXAMPLE.COM", keytab}).ok());
  EXPECT_EQ(std::string(std::getenv("KRB5CCNAME")).rfind("MEMORY:tarn-", 0), 0u);
  EXPECT_EQ(std::string(std::getenv("KRB5_CLIENT_KTNAME")), "FILE:" + keytab);
}

TEST_F(NoTicket, ASpnegoRefusalIsAnErrorNotAResponse) {
  ASSERT_TRUE(CurlHasSpnego()) << "Debian's libcurl is built with GSS-API";
  HttpServer::Options o;
  o.host = "127.0.0.1";
  o.threads = 1;
  auto server = HttpServer::Start(o, [](const HttpRequest&, HttpResponse* resp) {
    resp->status = 401;
    resp->headers.emplace_back("WWW-Authenticate", "Negotiate");
    resp->body = "Authentication required";
  });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string url =
      "http://127.0.0.1:" + std::to_string((*server)->port()) + "/webhdfs/v1/?op=LISTSTATUS";
  HttpClient client;
  ClientRequest req;
  req.url = url;
  req.negotiate = true;
  auto r = client.Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("no valid Kerberos ticket"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find(url), std::string::npos) << r.status().message();
  // Without SPNEGO the same answer is an ordinary 401 response.
  req.negotiate = false;
  auto plain = client.Send(req);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->status, 401);
  (*server)->Stop();
}

}  // namespace
}  // namespace tarn::net
