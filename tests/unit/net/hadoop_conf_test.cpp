#include "net/hadoop_conf.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "test_util.h"

namespace tarn::net {
namespace {

std::string Site(const std::string& properties) {
  return "<?xml version=\"1.0\"?>\n<?xml-stylesheet type=\"text/xsl\" "
         "href=\"configuration.xsl\"?>\n"
         "<configuration>\n" +
         properties + "</configuration>\n";
}

std::string Prop(const std::string& name, const std::string& value, bool final = false) {
  return "  <property>\n    <name>" + name + "</name>\n    <value>" + value + "</value>\n" +
         (final ? "    <final>true</final>\n" : "") + "  </property>\n";
}

TEST(HadoopConf, ParsesPropertiesCommentsEntitiesAndHadoopsWrittenForm) {
  HadoopConf c;
  const std::string text = Site(
      Prop("a.plain", " value with blanks ") + "<!-- " + Prop("a.commented", "no") + " -->\n" +
      Prop("a.entities", "x &amp; y &lt;z&gt; &quot;q&quot; &#65;&#x42;") +
      // Hadoop's Configuration.writeXml puts everything on one line, with <source> and <final>.
      "<property><name>a.written</name><value>w</value><final>false</final>"
      "<source>programmatically</source></property>\n"
      "<property><name>a.empty</name><value/></property>\n"
      "<property><name>a.novalue</name></property>\n" +
      Prop("a.cdata", "<![CDATA[<raw>]]>"));
  ASSERT_TRUE(c.ParseXml(text, "core-site.xml").ok());
  EXPECT_EQ(c.Get("a.plain"), "value with blanks");
  EXPECT_FALSE(c.Get("a.commented").has_value());
  EXPECT_EQ(c.Get("a.entities"), "x & y <z> \"q\" AB");
  EXPECT_EQ(c.Get("a.written"), "w");
  EXPECT_EQ(c.Get("a.empty"), "");
  EXPECT_EQ(c.GetOr("a.empty", "fallback"), "fallback");
  EXPECT_FALSE(c.Get("a.novalue").has_value());
  EXPECT_EQ(c.Get("a.cdata"), "<raw>");
  EXPECT_EQ(c.SourceOf("a.plain"), "core-site.xml:4");
}

TEST(HadoopConf, MalformedFilesFailNamingFileAndLine) {
  HadoopConf c;
  Status s = c.ParseXml("<html></html>", "x.xml");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("x.xml"), std::string::npos);

  s = c.ParseXml(Site(Prop("ok", "1") + "  <property>\n    <name>broken</name>\n"), "y.xml");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("y.xml:8"), std::string::npos) << s.message();

  s = c.ParseXml(Site("<property><value>1</value></property>\n"), "z.xml");
  EXPECT_NE(s.message().find("without <name>"), std::string::npos) << s.message();

  s = c.ParseXml(Site("<!-- never closed\n"), "w.xml");
  EXPECT_NE(s.message().find("unterminated comment"), std::string::npos) << s.message();
}

TEST(HadoopConf, ExpandsVariablesLikeHadoopsConfiguration) {
  ::setenv("TARN_HADOOP_CONF_TEST", "from-env", 1);
  HadoopConf c;
  ASSERT_TRUE(
      c.ParseXml(
           Site(Prop("base", "/data") + Prop("dir", "${base}/x") + Prop("nested", "${dir}/y") +
                Prop("env", "${env.TARN_HADOOP_CONF_TEST}") + Prop("user", "/home/${user.name}") +
                Prop("unknown", "${no.such}/z") + Prop("loop", "${loop}!")),
           "s")
          .ok());
  EXPECT_EQ(c.Get("dir"), "/data/x");
  EXPECT_EQ(c.Get("nested"), "/data/x/y");
  EXPECT_EQ(c.Get("env"), "from-env");
  EXPECT_EQ(c.Get("user"), "/home/" + HadoopUserName());
  EXPECT_EQ(c.Get("unknown"), "${no.such}/z");
  // A self-reference stops after Hadoop's 20 substitutions instead of running forever.
  auto loop = c.Get("loop");
  ASSERT_TRUE(loop.has_value());
  EXPECT_NE(loop->find("!!!!!!!!!!"), std::string::npos);
  EXPECT_EQ(c.values().at("dir"), "${base}/x");  // raw values stay unexpanded
  ::unsetenv("TARN_HADOOP_CONF_TEST");
}

TEST(HadoopConf, LaterFilesOverrideUnlessFinalAndOverridesWinAlways) {
  tarn::testing::TempDir dir;
  dir.Write("core-site.xml", Site(Prop("fs.defaultFS", "hdfs://nn1:8020") +
                                  Prop("locked", "core", true) + Prop("shared", "core")));
  dir.Write("hdfs-site.xml", Site(Prop("locked", "hdfs") + Prop("shared", "hdfs")));
  dir.Write("yarn-site.xml", Site(Prop("shared", "yarn")));
  auto c = HadoopConf::LoadDir(dir.path());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->conf_dir(), dir.path());
  EXPECT_EQ(c->DefaultFs(), "hdfs://nn1:8020");
  EXPECT_EQ(c->Get("locked"), "core");
  EXPECT_EQ(c->Get("shared"), "yarn");
  c->Set("locked", "override");
  EXPECT_EQ(c->Get("locked"), "override");
  EXPECT_EQ(c->SourceOf("locked"), "override");

  auto missing = HadoopConf::LoadDir(dir.File("absent"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("HADOOP_CONF_DIR"), std::string::npos);

  auto none = HadoopConf::LoadDir("");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->DefaultFs(), "file:///");

  dir.Write("yarn-site.xml", "<configuration><property><name>x</name>");
  auto broken = HadoopConf::LoadDir(dir.path());
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find(dir.File("yarn-site.xml")), std::string::npos);
}

TEST(HadoopConf, ConfDirComesFromTheArgumentThenTheEnvironment) {
  const char* old = std::getenv("HADOOP_CONF_DIR");
  std::string saved = old ? old : "";
  ::setenv("HADOOP_CONF_DIR", "/etc/from-env", 1);
  EXPECT_EQ(HadoopConf::DefaultConfDir("/explicit"), "/explicit");
  EXPECT_EQ(HadoopConf::DefaultConfDir(), "/etc/from-env");
  if (old) {
    ::setenv("HADOOP_CONF_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("HADOOP_CONF_DIR");
  }
}

TEST(HadoopConf, NameNodeHttpAddressForASingleNameNode) {
  HadoopConf c;
  c.Set("fs.defaultFS", "hdfs://localhost:35837");
  c.Set("dfs.namenode.rpc-address", "localhost:35837");
  c.Set("dfs.namenode.http-address", "localhost:37303");
  EXPECT_EQ(c.NameNodeHttpAddresses(""), std::vector<std::string>{"localhost:37303"});
  EXPECT_EQ(c.NameNodeHttpAddresses("localhost:35837"),
            std::vector<std::string>{"localhost:37303"});
  // Another NameNode: its host with the configured HTTP port.
  EXPECT_EQ(c.NameNodeHttpAddresses("other:8020"), std::vector<std::string>{"other:37303"});

  HadoopConf defaults;  // nothing configured: Hadoop's 9870 on the authority's host
  EXPECT_EQ(defaults.NameNodeHttpAddresses("nn.example:8020"),
            std::vector<std::string>{"nn.example:9870"});
  EXPECT_TRUE(defaults.NameNodeHttpAddresses("").empty());

  HadoopConf wildcard;  // a server-side 0.0.0.0 means the NameNode's own host
  wildcard.Set("fs.defaultFS", "hdfs://nn.example:8020");
  wildcard.Set("dfs.namenode.http-address", "0.0.0.0:50070");
  EXPECT_EQ(wildcard.NameNodeHttpAddresses(""), std::vector<std::string>{"nn.example:50070"});
}

TEST(HadoopConf, NameNodeHttpAddressesOfAnHaNameservice) {
  HadoopConf c;
  c.Set("fs.defaultFS", "hdfs://prod");
  c.Set("dfs.nameservices", "prod, other");
  c.Set("dfs.ha.namenodes.prod", "nn1,nn2");
  c.Set("dfs.namenode.rpc-address.prod.nn1", "a.example:8020");
  c.Set("dfs.namenode.rpc-address.prod.nn2", "b.example:8020");
  c.Set("dfs.namenode.http-address.prod.nn1", "a.example:9870");
  c.Set("dfs.namenode.http-address.prod.nn2", "b.example:9870");
  const std::vector<std::string> both = {"a.example:9870", "b.example:9870"};
  EXPECT_EQ(c.NameNodeHttpAddresses(""), both);
  EXPECT_EQ(c.NameNodeHttpAddresses("prod"), both);
  // One NameNode of it named by its RPC address.
  EXPECT_EQ(c.NameNodeHttpAddresses("b.example:8020"), std::vector<std::string>{"b.example:9870"});
}

TEST(HadoopConf, ResourceManagerAddresses) {
  HadoopConf defaults;
  EXPECT_EQ(defaults.ResourceManagerWebAddresses(), std::vector<std::string>{"localhost:8088"});
  EXPECT_EQ(defaults.ResourceManagerSchedulerAddress(), "localhost:8030");
  EXPECT_EQ(defaults.ResourceManagerAddress(), "localhost:8032");

  HadoopConf host;
  host.Set("yarn.resourcemanager.hostname", "rm.example");
  EXPECT_EQ(host.ResourceManagerWebAddresses(), std::vector<std::string>{"rm.example:8088"});
  EXPECT_EQ(host.ResourceManagerSchedulerAddress(), "rm.example:8030");

  HadoopConf mini;  // as the test harness writes it
  mini.Set("yarn.resourcemanager.webapp.address", "localhost:46581");
  mini.Set("yarn.resourcemanager.scheduler.address", "localhost:39781");
  mini.Set("yarn.resourcemanager.address", "localhost:46035");
  EXPECT_EQ(mini.ResourceManagerWebAddresses(), std::vector<std::string>{"localhost:46581"});
  EXPECT_EQ(mini.ResourceManagerSchedulerAddress(), "localhost:39781");
  EXPECT_EQ(mini.ResourceManagerAddress(), "localhost:46035");

  HadoopConf ha;
  ha.Set("yarn.resourcemanager.ha.enabled", "true");
  ha.Set("yarn.resourcemanager.ha.rm-ids", "rm1,rm2");
  ha.Set("yarn.resourcemanager.hostname.rm1", "r1.example");
  ha.Set("yarn.resourcemanager.webapp.address.rm2", "r2.example:9000");
  EXPECT_EQ(ha.ResourceManagerWebAddresses(),
            (std::vector<std::string>{"r1.example:8088", "r2.example:9000"}));
}

TEST(HadoopConf, HttpsOnlyPoliciesUseTheHttpsAddresses) {
  HadoopConf c;
  c.Set("fs.defaultFS", "hdfs://nn.example:8020");
  c.Set("dfs.namenode.http-address", "nn.example:9870");
  c.Set("yarn.resourcemanager.hostname", "rm.example");
  EXPECT_FALSE(c.HdfsHttpsOnly());
  c.Set("dfs.http.policy", "HTTPS_ONLY");
  c.Set("yarn.http.policy", "HTTPS_ONLY");
  EXPECT_TRUE(c.HdfsHttpsOnly() && c.YarnHttpsOnly());
  EXPECT_EQ(c.NameNodeHttpAddresses(""), std::vector<std::string>{"nn.example:9871"});
  EXPECT_EQ(c.ResourceManagerWebAddresses(), std::vector<std::string>{"rm.example:8090"});
  c.Set("dfs.namenode.https-address", "nn.example:50470");
  c.Set("yarn.resourcemanager.webapp.https.address", "rm.example:8443");
  EXPECT_EQ(c.NameNodeHttpAddresses(""), std::vector<std::string>{"nn.example:50470"});
  EXPECT_EQ(c.ResourceManagerWebAddresses(), std::vector<std::string>{"rm.example:8443"});
}

TEST(HadoopConf, SecurityKeys) {
  HadoopConf simple;
  EXPECT_FALSE(simple.KerberosEnabled());
  EXPECT_EQ(simple.ResourceManagerPrincipal(), "");

  HadoopConf secure;
  secure.Set("hadoop.security.authentication", "Kerberos");
  secure.Set("yarn.resourcemanager.address", "RM.Example:8032");
  secure.Set("yarn.resourcemanager.principal", "yarn/_HOST@EXAMPLE.COM");
  EXPECT_TRUE(secure.KerberosEnabled());
  // _HOST is the RM's host, lower-cased, as Hadoop's SecurityUtil.getServerPrincipal does.
  EXPECT_EQ(secure.ResourceManagerPrincipal(), "yarn/rm.example@EXAMPLE.COM");

  // A token's service: the NameNode's RPC ip:port, or ha-hdfs:<ns> for a nameservice.
  HadoopConf c;
  c.Set("fs.defaultFS", "hdfs://localhost:8020");
  c.Set("dfs.nameservices", "prod");
  EXPECT_EQ(c.HdfsTokenService(""), "127.0.0.1:8020");
  EXPECT_EQ(c.HdfsTokenService("localhost:9000"), "127.0.0.1:9000");
  EXPECT_EQ(c.HdfsTokenService("prod"), "ha-hdfs:prod");
  c.Set("hadoop.security.token.service.use_ip", "false");
  EXPECT_EQ(c.HdfsTokenService("localhost:9000"), "localhost:9000");
}

TEST(HadoopConf, SplitHostPort) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(SplitHostPort("nn:8020", 1, &host, &port));
  EXPECT_EQ(host, "nn");
  EXPECT_EQ(port, 8020);
  ASSERT_TRUE(SplitHostPort("nn", 9870, &host, &port));
  EXPECT_EQ(port, 9870);
  ASSERT_TRUE(SplitHostPort("[::1]:80", 1, &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 80);
  EXPECT_FALSE(SplitHostPort("nn:port", 1, &host, &port));
  EXPECT_FALSE(SplitHostPort("nn:70000", 1, &host, &port));
}

TEST(HadoopConf, UserNameComesFromTheArgumentThenHadoopUserName) {
  EXPECT_EQ(HadoopUserName("alice"), "alice");
  const char* old = std::getenv("HADOOP_USER_NAME");
  std::string saved = old ? old : "";
  ::setenv("HADOOP_USER_NAME", "bob", 1);
  EXPECT_EQ(HadoopUserName(), "bob");
  ::unsetenv("HADOOP_USER_NAME");
  EXPECT_FALSE(HadoopUserName().empty());
  if (old) ::setenv("HADOOP_USER_NAME", saved.c_str(), 1);
}

}  // namespace
}  // namespace tarn::net
