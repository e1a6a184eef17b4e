// The Kerberized variant of the harness (`cluster start --kerberos`): a KDC in this JVM
// (hadoop-minikdc, Kerby's SimpleKdcServer), one keytab for the services (hadoop/localhost,
// HTTP/localhost) and one for the user (<user>@EXAMPLE.COM), and the keys that
// make HDFS and YARN secure as Hadoop's own secure tests set them (SaslDataTransferTestCase,
// TestContainerManagerSecurity): Kerberos for RPC, SPNEGO on every web endpoint (NameNode,
// DataNode, ResourceManager, NodeManagers), block access tokens, SASL data transfer with the
// test-only `ignore.secure.ports.for.testing` so that DataNodes need no privileged ports.
//
// HDFS and YARN share one service principal, hadoop/localhost: in one JVM every daemon's
// Kerberos login replaces the same static UGI login user, and an RPC server names itself by
// that user, so distinct hdfs/ and yarn/ principals would leave the NameNode answering as
// yarn/localhost to clients that expect hdfs/localhost.
//
// It writes, into the configuration folder: krb5.conf (for MIT clients: kinit, libgssapi; TCP,
// no DNS, no reverse lookups), user.keytab, and kerberos.env with the export lines a user needs.
package tarn.yarn;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.minikdc.MiniKdc;
import org.apache.hadoop.security.UserGroupInformation;

final class SecureCluster {
  private final MiniKdc kdc;
  private final String user;
  private final File serviceKeytab;
  private final File userKeytab;
  private final Path krb5Conf;
  private boolean https = false;
  private Path caPem;

  private SecureCluster(MiniKdc kdc, String user, File serviceKeytab, File userKeytab,
      Path krb5Conf) {
    this.kdc = kdc;
    this.user = user;
    this.serviceKeytab = serviceKeytab;
    this.userKeytab = userKeytab;
    this.krb5Conf = krb5Conf;
  }

  // Starts the KDC (ephemeral TCP port on localhost) and makes the principals and keytabs.
  static SecureCluster start(Path workDir, Path confDir, String user) throws Exception {
    Properties props = MiniKdc.createConf();
    props.setProperty(MiniKdc.TRANSPORT, "TCP");
    File kdcDir = workDir.resolve("kdc").toFile();
    kdcDir.mkdirs();
    MiniKdc kdc = new MiniKdc(props, kdcDir);
    kdc.start();
    File serviceKeytab = workDir.resolve("kdc/services.keytab").toFile();
    kdc.createPrincipal(serviceKeytab, "hadoop/localhost", "HTTP/localhost");
    File userKeytab = confDir.resolve("user.keytab").toFile();
    kdc.createPrincipal(userKeytab, user);
    Path krb5 = confDir.resolve("krb5.conf");
    Main.writeAtomically(krb5, mitKrb5Conf(kdc).getBytes(StandardCharsets.UTF_8));
    return new SecureCluster(kdc, user, serviceKeytab, userKeytab, krb5);
  }

  // A krb5.conf that MIT's kinit and libgssapi read as the JVM reads Kerby's: the same realm
  // and KDC, over TCP, with the host of a URL taken as written (HTTP/localhost).
  private static String mitKrb5Conf(MiniKdc kdc) {
    String realm = kdc.getRealm();
    return "[libdefaults]\n"
        + "  default_realm = " + realm + "\n"
        + "  dns_lookup_kdc = false\n"
        + "  dns_lookup_realm = false\n"
        + "  rdns = false\n"
        + "  dns_canonicalize_hostname = false\n"
        + "  udp_preference_limit = 1\n"
        + "  forwardable = true\n"
        + "  ticket_lifetime = 24h\n"
        + "[realms]\n"
        + "  " + realm + " = {\n"
        + "    kdc = 127.0.0.1:" + kdc.getPort() + "\n"
        + "  }\n";
  }

  String realm() {
    return kdc.getRealm();
  }

  String userPrincipal() {
    return user + "@" + kdc.getRealm();
  }

  // The secure keys, over what Main.clusterConf set (they replace its simple HTTP filter). They
  // also go into <work>/krb-classpath/core-site.xml, a folder on the harness's classpath
  // (`cluster start --kerberos`): code that builds its own `new Configuration()`, as YARN's
  // ContainerLocalizer does, must see a secured cluster too (else it reads DataNodes without
  // the SASL handshake they demand).
  void configure(Configuration conf, Path workDir) throws IOException {
    Configuration keys = new Configuration(false);
    secureKeys(keys);
    Configuration classpathSite = new Configuration(false);
    for (Map.Entry<String, String> e : keys) {
      conf.set(e.getKey(), e.getValue());
      classpathSite.set(e.getKey(), e.getValue(), "tarn harness (kerberos)");
      siteKeys.put(e.getKey(), e.getValue());
    }
    Path dir = workDir.resolve("krb-classpath");
    java.nio.file.Files.createDirectories(dir);
    if (https) {
      for (Map.Entry<String, String> e : httpsKeys(workDir, dir)) {
        conf.set(e.getKey(), e.getValue());
        classpathSite.set(e.getKey(), e.getValue(), "tarn harness (https)");
        siteKeys.put(e.getKey(), e.getValue());
      }
    }
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    classpathSite.writeXml(bytes);
    Main.writeAtomically(dir.resolve("core-site.xml"), bytes.toByteArray());
    UserGroupInformation.setConfiguration(conf);
  }

  // HTTPS_ONLY web endpoints (`cluster start --kerberos --https`): a self-signed RSA-2048
  // SHA-256 certificate for localhost and 127.0.0.1 (Hadoop's KeyStoreTestUtil makes RSA-1024
  // SHA-1 ones, which Debian 12's OpenSSL refuses), JKS stores, ssl-server.xml and
  // ssl-client.xml on the classpath, and the certificate as ca.pem in the configuration folder
  // for clients (tarn.tls.ca-file, curl --cacert).
  void useHttps(Path confDir) {
    https = true;
    caPem = confDir.resolve("ca.pem");
  }

  private List<Map.Entry<String, String>> httpsKeys(Path workDir, Path classpathDir)
      throws IOException {
    Path tls = workDir.resolve("tls");
    java.nio.file.Files.createDirectories(tls);
    String keystore = tls.resolve("server.jks").toString();
    String truststore = tls.resolve("trust.jks").toString();
    String keytool = System.getProperty("java.home") + "/bin/keytool";
    run(keytool, "-genkeypair", "-alias", "server", "-keyalg", "RSA", "-keysize", "2048",
        "-sigalg", "SHA256withRSA", "-dname", "CN=localhost", "-ext",
        "SAN=dns:localhost,ip:127.0.0.1", "-validity", "30", "-storetype", "JKS", "-keystore",
        keystore, "-storepass", "serverP", "-keypass", "serverP");
    run(keytool, "-exportcert", "-rfc", "-alias", "server", "-keystore", keystore, "-storepass",
        "serverP", "-file", caPem.toString());
    run(keytool, "-importcert", "-noprompt", "-alias", "server", "-file", caPem.toString(),
        "-storetype", "JKS", "-keystore", truststore, "-storepass", "trustP");
    Configuration server = new Configuration(false);
    server.set("ssl.server.keystore.location", keystore);
    server.set("ssl.server.keystore.password", "serverP");
    server.set("ssl.server.keystore.keypassword", "serverP");
    server.set("ssl.server.keystore.type", "jks");
    server.set("ssl.server.truststore.location", truststore);
    server.set("ssl.server.truststore.password", "trustP");
    server.set("ssl.server.truststore.type", "jks");
    Configuration client = new Configuration(false);
    client.set("ssl.client.truststore.location", truststore);
    client.set("ssl.client.truststore.password", "trustP");
    client.set("ssl.client.truststore.type", "jks");
    for (Object[] f : new Object[][] {{"ssl-server.xml", server}, {"ssl-client.xml", client}}) {
      java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
      ((Configuration) f[1]).writeXml(bytes);
      Main.writeAtomically(classpathDir.resolve((String) f[0]), bytes.toByteArray());
    }
    List<Map.Entry<String, String>> keys = new ArrayList<>();
    keys.add(Map.entry("dfs.http.policy", "HTTPS_ONLY"));
    keys.add(Map.entry("yarn.http.policy", "HTTPS_ONLY"));
    keys.add(Map.entry("dfs.namenode.https-address", "localhost:0"));
    keys.add(Map.entry("dfs.datanode.https.address", "localhost:0"));
    keys.add(Map.entry("hadoop.ssl.server.conf", "ssl-server.xml"));
    keys.add(Map.entry("hadoop.ssl.client.conf", "ssl-client.xml"));
    return keys;
  }

  private static void run(String... command) throws IOException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    try {
      if (p.waitFor() != 0) {
        throw new IOException(String.join(" ", command) + " failed: " + out);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted: " + String.join(" ", command));
    }
  }

  // The keys the site files must carry although the classpath's core-site.xml now makes them
  // look like defaults.
  void addSiteKeys(Map<String, String> core, Map<String, String> hdfs, Map<String, String> yarn) {
    for (Map.Entry<String, String> e : siteKeys.entrySet()) {
      String k = e.getKey();
      Map<String, String> target =
          k.startsWith("dfs.") ? hdfs : k.startsWith("yarn.") ? yarn : core;
      target.putIfAbsent(k, e.getValue());  // the running cluster's bound address wins
    }
  }

  private final Map<String, String> siteKeys = new TreeMap<>();

  private void secureKeys(Configuration conf) {
    String realm = kdc.getRealm();
    String keytab = serviceKeytab.getAbsolutePath();
    String hdfs = "hadoop/localhost@" + realm;
    String yarn = hdfs;
    String http = "HTTP/localhost@" + realm;
    conf.set("hadoop.security.authentication", "kerberos");
    conf.setBoolean("ipc.client.fallback-to-simple-auth-allowed", false);
    // Short names of principals that are no local users still need groups.
    conf.set("hadoop.user.group.static.mapping.overrides",
        "hadoop=supergroup;HTTP=supergroup;" + user + "=supergroup");
    // SPNEGO on every web endpoint, anonymous requests refused.
    conf.set("hadoop.http.filter.initializers",
        "org.apache.hadoop.security.AuthenticationFilterInitializer");
    conf.set("hadoop.http.authentication.type", "kerberos");
    conf.setBoolean("hadoop.http.authentication.simple.anonymous.allowed", false);
    conf.set("hadoop.http.authentication.kerberos.principal", http);
    conf.set("hadoop.http.authentication.kerberos.keytab", keytab);
    // HDFS.
    conf.set("dfs.namenode.kerberos.principal", hdfs);
    conf.set("dfs.namenode.keytab.file", keytab);
    conf.set("dfs.datanode.kerberos.principal", hdfs);
    conf.set("dfs.datanode.keytab.file", keytab);
    conf.set("dfs.web.authentication.kerberos.principal", http);
    conf.set("dfs.web.authentication.kerberos.keytab", keytab);
    conf.set("dfs.namenode.kerberos.internal.spnego.principal", http);
    conf.setBoolean("dfs.block.access.token.enable", true);
    conf.set("dfs.data.transfer.protection", "authentication");
    conf.setBoolean("ignore.secure.ports.for.testing", true);
    // YARN: the RM is the delegation tokens' renewer.
    conf.set("yarn.resourcemanager.principal", yarn);
    conf.set("yarn.resourcemanager.keytab", keytab);
    conf.set("yarn.nodemanager.principal", yarn);
    conf.set("yarn.nodemanager.keytab", keytab);
    conf.set("yarn.resourcemanager.webapp.spnego-principal", http);
    conf.set("yarn.resourcemanager.webapp.spnego-keytab-file", keytab);
    conf.set("yarn.nodemanager.webapp.spnego-principal", http);
    conf.set("yarn.nodemanager.webapp.spnego-keytab-file", keytab);
  }

  // kerberos.env: what `cluster start --kerberos` prints after HADOOP_CONF_DIR.
  void writeEnv(Path confDir) throws IOException {
    String env = "export KRB5_CONFIG=" + krb5Conf + "\n"
        + "export TARN_KERBEROS_PRINCIPAL=" + userPrincipal() + "\n"
        + "export TARN_KERBEROS_KEYTAB=" + userKeytab.getAbsolutePath() + "\n"
        + "# then: kinit -kt \"$TARN_KERBEROS_KEYTAB\" \"$TARN_KERBEROS_PRINCIPAL\", or pass tarn\n"
        + "#   -Dtarn.kerberos.principal=\"$TARN_KERBEROS_PRINCIPAL\""
        + " -Dtarn.kerberos.keytab=\"$TARN_KERBEROS_KEYTAB\"\n"
        + (https ? "export TARN_TLS_CA_FILE=" + caPem + "\n"
                + "# HTTPS_ONLY: pass tarn -Dtarn.tls.ca-file=\"$TARN_TLS_CA_FILE\"\n"
                 : "");
    Main.writeAtomically(confDir.resolve("kerberos.env"), env.getBytes(StandardCharsets.UTF_8));
  }

  // For ready.json (with HTTPS_ONLY, the https addresses clients must use).
  String json(Configuration hdfs, Configuration yarn) {
    String tls = !https ? "" : ", \"https\": true, \"ca_file\": \"" + caPem
        + "\", \"dfs.namenode.https-address\": \"" + hdfs.get("dfs.namenode.https-address")
        + "\", \"yarn.resourcemanager.webapp.https.address\": \""
        + yarn.get("yarn.resourcemanager.webapp.https.address") + "\"";
    return "{\"realm\": \"" + kdc.getRealm() + "\", \"kdc_port\": " + kdc.getPort() + tls
        + ", \"principal\": \"" + userPrincipal() + "\", \"keytab\": \""
        + userKeytab.getAbsolutePath() + "\", \"krb5_conf\": \"" + krb5Conf + "\"}";
  }

  void stop() {
    kdc.stop();
  }
}
