// Writes Hadoop credentials files ("container_tokens") in both serialized formats, with
// Hadoop's own classes, as fixtures for tarn's credentials parser
// (tests/unit/cluster/yarn/credentials_test.cpp). The files are committed under
// tests/unit/cluster/yarn/fixtures/, so the unit tests need no Java.
//
// Usage: java -cp <harness classpath> tarn.yarn.CredentialsFixture OUT_DIR
// Writes OUT_DIR/credentials-v0.bin (WRITABLE, Hadoop 3's default), credentials-v1.bin
// (PROTOBUF) and credentials.json (what the files hold: aliases, kinds, services,
// base64 identifiers, passwords and secrets, and the attempt id in each YARN token).
package tarn.yarn;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;
import org.apache.hadoop.yarn.security.NMTokenIdentifier;

public final class CredentialsFixture {
  private CredentialsFixture() {}

  private static byte[] pattern(int n, int seed) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; ++i) {
      b[i] = (byte) (seed + 31 * i);
    }
    return b;
  }

  private static String b64(byte[] b) {
    return Base64.getEncoder().encodeToString(b);
  }

  private static String quote(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  private static byte[] serialize(Credentials c, Credentials.SerializedFormat format)
      throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      c.writeTokenStorageToStream(out, format);
    }
    return bytes.toByteArray();
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: CredentialsFixture OUT_DIR");
      System.exit(2);
    }
    Path out = Path.of(args[0]);
    Files.createDirectories(out);

    ApplicationId app = ApplicationId.newInstance(1700000000123L, 7);
    ApplicationAttemptId attempt = ApplicationAttemptId.newInstance(app, 2);
    Credentials credentials = new Credentials();
    Map<String, String> attempts = new TreeMap<>();

    // The AMRMToken as the ResourceManager writes it: kind YARN_AM_RM_TOKEN, empty service.
    AMRMTokenIdentifier amrm = new AMRMTokenIdentifier(attempt, 42);
    Token<AMRMTokenIdentifier> amrmToken =
        new Token<>(amrm.getBytes(), pattern(20, 3), amrm.getKind(), new Text(""));
    credentials.addToken(new Text("amrm"), amrmToken);
    attempts.put("amrm", attempt.toString());

    NMTokenIdentifier nm =
        new NMTokenIdentifier(attempt, NodeId.newInstance("node-1.example", 45454), "alice", 9);
    Token<NMTokenIdentifier> nmToken =
        new Token<>(nm.getBytes(), pattern(20, 11), nm.getKind(), new Text("node-1.example:45454"));
    credentials.addToken(new Text("node-1.example:45454"), nmToken);
    attempts.put("node-1.example:45454", attempt.toString());

    // A delegation token with a long (multi-byte vint) identifier and a service.
    Token<TokenIdentifier> hdfs = new Token<>(pattern(300, 5), pattern(16, 17),
        new Text("HDFS_DELEGATION_TOKEN"), new Text("127.0.0.1:8020"));
    credentials.addToken(new Text("hdfs-dt"), hdfs);

    credentials.addSecretKey(new Text("tarn.job.secret"),
        "s3cr3t-value".getBytes(StandardCharsets.UTF_8));
    credentials.addSecretKey(new Text("long-secret"), pattern(200, 1));

    Files.write(out.resolve("credentials-v0.bin"),
        serialize(credentials, Credentials.SerializedFormat.WRITABLE));
    Files.write(out.resolve("credentials-v1.bin"),
        serialize(credentials, Credentials.SerializedFormat.PROTOBUF));

    StringBuilder json = new StringBuilder("{\n  \"tokens\": [\n");
    boolean first = true;
    for (Text alias : tokenAliases(credentials).values()) {
      Token<? extends TokenIdentifier> t = credentials.getToken(alias);
      json.append(first ? "" : ",\n").append("    {\"alias\": ").append(quote(alias.toString()))
          .append(", \"kind\": ").append(quote(t.getKind().toString()))
          .append(", \"service\": ").append(quote(t.getService().toString()))
          .append(", \"identifier\": ").append(quote(b64(t.getIdentifier())))
          .append(", \"password\": ").append(quote(b64(t.getPassword())));
      String a = attempts.get(alias.toString());
      if (a != null) {
        json.append(", \"attempt\": ").append(quote(a));
      }
      json.append("}");
      first = false;
    }
    json.append("\n  ],\n  \"secrets\": [\n");
    first = true;
    for (Text alias : secretAliases(credentials).values()) {
      json.append(first ? "" : ",\n").append("    {\"alias\": ").append(quote(alias.toString()))
          .append(", \"value\": ").append(quote(b64(credentials.getSecretKey(alias)))).append("}");
      first = false;
    }
    json.append("\n  ]\n}\n");
    Files.writeString(out.resolve("credentials.json"), json.toString());
    System.out.println("wrote " + out.resolve("credentials-v0.bin") + ", credentials-v1.bin and "
        + "credentials.json");
  }

  private static Map<String, Text> tokenAliases(Credentials c) {
    Map<String, Text> m = new TreeMap<>();
    for (Text alias : c.getTokenMap().keySet()) {
      m.put(alias.toString(), alias);
    }
    return m;
  }

  private static Map<String, Text> secretAliases(Credentials c) {
    Map<String, Text> m = new TreeMap<>();
    for (Text alias : c.getAllSecretKeys()) {
      m.put(alias.toString(), alias);
    }
    return m;
  }
}
