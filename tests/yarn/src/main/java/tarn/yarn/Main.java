// A real HDFS and YARN on this machine for tarn's tests: one MiniDFSCluster (WebHDFS on) and
// one MiniYARNCluster in this JVM, bound to loopback with ephemeral ports. Once both are up it
// writes core-site.xml, hdfs-site.xml and yarn-site.xml of the running cluster, then
// ready.json, into --conf-dir and prints READY. It stops cleanly on SIGTERM, on end of
// standard input (when --stdin is given) or when --owner-pid exits.
//
// Usage: java -cp ... tarn.yarn.Main --conf-dir DIR --work-dir DIR [--nodemanagers N]
//            [--nm-memory-mb MB] [--nm-vcores N] [--gpus N] [--owner-pid PID] [--stdin]
//            [--kerberos [--https]] [--ha] [--services]
//            [-Dkey=value ...]
//
// --ha: HDFS as an HA nameservice (MiniDFSNNTopology.simpleHATopology: minidfs-ns with nn1 and
// nn2, shared edits in a local folder), nn2 active and nn1, the first a client tries, standby;
// fs.defaultFS is hdfs://minidfs-ns and ready.json's "ha" names both NameNodes.
//
// --services: for YARN's service framework (the RM's /app/v1/services). A ZooKeeper in this JVM
// (Hadoop's MicroZookeeperService, on loopback) for YARN's registry, which every ServiceMaster
// writes its instances to: hadoop.registry.zk.quorum names it in core-site.xml and ready.json's
// "registry". And a check that --conf-dir is on this JVM's classpath: the RM's REST layer
// (ApiServer) builds its service client on a `new YarnConfiguration()` of its own, not on the
// RM's configuration, so it finds the RM only in the yarn-site.xml written here (without it,
// yarn-default's 0.0.0.0:8032, where nothing listens, retried for 15 minutes). And each web app
// its own Guice pipeline (GuicePipelines.java: on 3.4.2 every port served the last NM's pages).
package tarn.yarn;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.MiniDFSNNTopology;
import org.apache.hadoop.registry.client.api.RegistryConstants;
import org.apache.hadoop.registry.server.services.MicroZookeeperService;
import org.apache.hadoop.registry.server.services.MicroZookeeperServiceKeys;
import org.apache.hadoop.yarn.api.records.ContainerState;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.container.Container;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import sun.misc.Signal;

public final class Main {
  private static final class Options {
    Path confDir;
    Path workDir;
    int nodeManagers = 2;
    int nmMemoryMb = 4096;
    int nmVcores = 8;
    int gpus = 0;
    long ownerPid = -1;
    boolean stdin = false;
    boolean kerberos = false;  // SecureCluster: a KDC, Kerberos RPC, SPNEGO web endpoints
    boolean https = false;     // with kerberos: HTTPS_ONLY web endpoints
    boolean ha = false;        // HDFS as an HA nameservice, its first NameNode standby
    boolean services = false;  // YARN's service framework: a registry ZooKeeper, site files
                               // on the classpath
    Map<String, String> overrides = new LinkedHashMap<>();
  }

  private static Options parse(String[] args) {
    Options o = new Options();
    for (int i = 0; i < args.length; ++i) {
      String a = args[i];
      if (a.startsWith("-D") && a.contains("=")) {
        int eq = a.indexOf('=');
        o.overrides.put(a.substring(2, eq), a.substring(eq + 1));
        continue;
      }
      if (a.equals("--stdin")) {
        o.stdin = true;
        continue;
      }
      if (a.equals("--kerberos")) {
        o.kerberos = true;
        continue;
      }
      if (a.equals("--https")) {
        o.https = true;
        continue;
      }
      if (a.equals("--ha")) {
        o.ha = true;
        continue;
      }
      if (a.equals("--services")) {
        o.services = true;
        continue;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("option " + a + " needs a value");
      }
      String v = args[++i];
      switch (a) {
        case "--conf-dir" -> o.confDir = Path.of(v).toAbsolutePath();
        case "--work-dir" -> o.workDir = Path.of(v).toAbsolutePath();
        case "--nodemanagers" -> o.nodeManagers = Integer.parseInt(v);
        case "--nm-memory-mb" -> o.nmMemoryMb = Integer.parseInt(v);
        case "--nm-vcores" -> o.nmVcores = Integer.parseInt(v);
        case "--gpus" -> o.gpus = Integer.parseInt(v);
        case "--owner-pid" -> o.ownerPid = Long.parseLong(v);
        default -> throw new IllegalArgumentException("unknown option " + a);
      }
    }
    if (o.confDir == null || o.workDir == null) {
      throw new IllegalArgumentException("--conf-dir and --work-dir are required");
    }
    if (o.https && !o.kerberos) {
      throw new IllegalArgumentException("--https needs --kerberos");
    }
    if (o.nodeManagers < 1) {
      throw new IllegalArgumentException("--nodemanagers must be at least 1");
    }
    return o;
  }

  private static Configuration clusterConf(Options o) {
    YarnConfiguration conf = new YarnConfiguration(new HdfsConfiguration());
    String work = o.workDir.toString();
    conf.set("hadoop.tmp.dir", work + "/tmp");
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, work + "/dfs");
    // HDFS: one DataNode, no replication, permissions off, WebHDFS on (the default).
    conf.setInt("dfs.replication", 1);
    conf.setBoolean("dfs.permissions.enabled", false);
    conf.setBoolean("dfs.webhdfs.enabled", true);
    conf.setLong("dfs.blocksize", 1L << 20);  // small blocks: reads that cross blocks in tests
    conf.setInt("dfs.namenode.fs-limits.min-block-size", 1 << 20);
    // REST callers name their user with ?user.name=; without it they act as dr.who.
    conf.set("hadoop.http.filter.initializers",
        "org.apache.hadoop.security.AuthenticationFilterInitializer");
    conf.set("hadoop.http.authentication.type", "simple");
    conf.setBoolean("hadoop.http.authentication.simple.anonymous.allowed", true);
    conf.setBoolean("ipc.client.fallback-to-simple-auth-allowed", true);
    // YARN: small containers fit; the machine's real memory is not policed.
    conf.setInt("yarn.minicluster.yarn.nodemanager.resource.memory-mb", o.nmMemoryMb);
    conf.setInt(YarnConfiguration.NM_PMEM_MB, o.nmMemoryMb);
    conf.setInt(YarnConfiguration.NM_VCORES, o.nmVcores);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, o.nmMemoryMb);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_VCORES, 1);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, o.nmVcores);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    conf.set(YarnConfiguration.NM_CONTAINER_EXECUTOR,
        "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor");
    conf.setInt(YarnConfiguration.RM_AM_MAX_ATTEMPTS, 2);
    // A nearly full disk must not mark the NodeManagers unhealthy.
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 99.9f);
    conf.setLong(YarnConfiguration.NM_MIN_PER_DISK_FREE_SPACE_MB, 64);
    // Keep container logs and work folders after an application ends, for the tests to read.
    conf.setInt(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 3600);
    // Log aggregation: when an application ends each NodeManager uploads its containers' logs
    // to HDFS, under /tmp/logs/<user>/bucket-logs-tfile/<NNNN>/<application>/<node> (the TFile
    // controller, uncompressed unless yarn.nodemanager.log-aggregation.compression-type is
    // given), where `tarn yarn logs` reads them once the NodeManager no longer serves them.
    conf.setBoolean(YarnConfiguration.LOG_AGGREGATION_ENABLED, true);
    conf.set("yarn.scheduler.capacity.resource-calculator",
        "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator");
    if (o.gpus > 0) {
      // A countable yarn.io/gpu: scheduling only, no isolation.
      conf.set("yarn.resource-types", "yarn.io/gpu");
      conf.setInt("yarn.nodemanager.resource-type.yarn.io/gpu", o.gpus);
    }
    for (Map.Entry<String, String> e : o.overrides.entrySet()) {
      conf.set(e.getKey(), e.getValue());
    }
    return conf;
  }

  // The keys of `running` whose value differs from Hadoop's defaults and that pass `keep`.
  private static Map<String, String> changedKeys(
      Configuration running, Configuration defaults, java.util.function.Predicate<String> keep) {
    Map<String, String> out = new TreeMap<>();
    for (Map.Entry<String, String> e : running) {
      String key = e.getKey();
      if (!keep.test(key)) {
        continue;
      }
      String value = running.get(key);
      if (value == null || value.equals(defaults.get(key))) {
        continue;
      }
      out.put(key, value);
    }
    return out;
  }

  static void writeAtomically(Path path, byte[] bytes) throws IOException {
    Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
    Files.write(tmp, bytes);
    Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  private static void writeSite(Path path, Map<String, String> keys) throws IOException {
    Configuration c = new Configuration(false);
    for (Map.Entry<String, String> e : keys.entrySet()) {
      c.set(e.getKey(), e.getValue(), "tarn harness");
    }
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    try (OutputStream out = bytes) {
      c.writeXml(out);
    }
    writeAtomically(path, bytes.toByteArray());
  }

  private static String json(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  public static void main(String[] args) {
    Options o;
    try {
      o = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("harness: " + e.getMessage());
      System.exit(2);
      return;
    }
    // SIGTERM and SIGINT stop the cluster on this thread, outside the JVM's shutdown (where
    // Hadoop's own shutdown hooks can no longer be removed and HDFS stops uncleanly).
    CountDownLatch stop = new CountDownLatch(1);
    for (String name : new String[] {"TERM", "INT"}) {
      Signal.handle(new Signal(name), sig -> stop.countDown());
    }
    MiniDFSCluster[] dfs = new MiniDFSCluster[1];
    MiniYARNCluster[] yarn = new MiniYARNCluster[1];
    SecureCluster[] secure = new SecureCluster[1];
    MicroZookeeperService[] registry = new MicroZookeeperService[1];
    int code = 0;
    try {
      start(o, dfs, yarn, secure, registry, stop);
      stop.await();
    } catch (Throwable t) {
      System.err.println("harness: the cluster failed to start");
      t.printStackTrace();
      code = 1;
    }
    try {
      Files.deleteIfExists(o.confDir.resolve("ready.json"));
    } catch (IOException e) {
      System.err.println("harness: removing ready.json: " + e);
    }
    long stopping = System.nanoTime();
    if (yarn[0] != null) {
      stopYarn(yarn[0], o.nodeManagers);
    }
    System.out.printf("harness: YARN stopped in %.1f s%n", (System.nanoTime() - stopping) / 1e9);
    stopping = System.nanoTime();
    try {
      if (dfs[0] != null) {
        dfs[0].shutdown();
      }
    } catch (Throwable t) {
      System.err.println("harness: stopping HDFS: " + t);
    }
    System.out.printf("harness: HDFS stopped in %.1f s%n", (System.nanoTime() - stopping) / 1e9);
    if (registry[0] != null) {
      registry[0].stop();
    }
    if (secure[0] != null) {
      secure[0].stop();
    }
    System.out.println("STOPPED");
    System.out.flush();
    System.exit(code);
  }

  // Stops the NodeManagers in parallel (each kills its containers first), waiting at most
  // 15 s: a NodeManager's log handler then waits 10 s more for log deletions scheduled hours
  // ahead, which nothing here needs. Then the ResourceManager.
  private static void stopYarn(MiniYARNCluster yarn, int nodeManagers) {
    List<Thread> stops = new ArrayList<>();
    for (int i = 0; i < nodeManagers; ++i) {
      final int index = i;
      Thread t = new Thread(() -> {
        try {
          yarn.getNodeManager(index).stop();
        } catch (Throwable e) {
          System.err.println("harness: stopping NodeManager " + index + ": " + e);
        }
      }, "tarn-harness-stop-nm-" + i);
      t.setDaemon(true);
      t.start();
      stops.add(t);
    }
    long deadline = System.nanoTime() + 15_000_000_000L;
    waitForContainersGone(yarn, nodeManagers, deadline);
    for (Thread t : stops) {  // done already unless a log handler waits out its 10 s
      try {
        t.join(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    try {
      yarn.getResourceManager().stop();
    } catch (Throwable e) {
      System.err.println("harness: stopping the ResourceManager: " + e);
    }
  }

  // Until no NodeManager has a container still running (a stopping NodeManager kills them
  // first), at least 0.5 s.
  private static void waitForContainersGone(MiniYARNCluster yarn, int nodeManagers, long deadline) {
    long earliest = System.nanoTime() + 500_000_000L;
    while (System.nanoTime() < deadline) {
      int left = 0;
      for (int i = 0; i < nodeManagers; ++i) {
        for (Container c : yarn.getNodeManager(i).getNMContext().getContainers().values()) {
          if (c.cloneAndGetContainerStatus().getState() != ContainerState.COMPLETE) {
            ++left;
          }
        }
      }
      if (left == 0 && System.nanoTime() >= earliest) {
        return;
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static final String HA_NAMESERVICE = "minidfs-ns";
  private static final String HA_ACTIVE_HTTP = "tarn.harness.ha.active-http";  // not a site key

  // The HA nameservice up: nn2 (index 1) active, nn1 standby; the client keys (nameservice,
  // NameNode ids, their RPC and web addresses as bound, the failover proxy) in `conf` (the
  // ResourceManager renews ha-hdfs: tokens with them), in `site` for hdfs-site.xml, and in
  // <work>/krb-classpath/hdfs-site.xml, for the code that reads `new Configuration()` (the
  // NodeManagers' localizers, which fetch hdfs://minidfs-ns/ resources). Returns fs.defaultFS.
  private static String startHa(MiniDFSCluster dfs, Configuration conf, Path workDir,
      Map<String, String> site) throws Exception {
    dfs.transitionToActive(1);
    org.apache.hadoop.hdfs.server.namenode.ha.HATestUtil.setFailoverConfigurations(
        dfs, conf, HA_NAMESERVICE);
    String https = conf.get("dfs.http.policy", "HTTP_ONLY");
    for (int i = 0; i < 2; ++i) {
      String suffix = "." + HA_NAMESERVICE + ".nn" + (i + 1);
      org.apache.hadoop.hdfs.server.namenode.NameNode nn = dfs.getNameNode(i);
      conf.set("dfs.namenode.rpc-address" + suffix,
          org.apache.hadoop.net.NetUtils.getHostPortString(nn.getNameNodeAddress()));
      if (nn.getHttpAddress() != null) {
        conf.set("dfs.namenode.http-address" + suffix,
            org.apache.hadoop.net.NetUtils.getHostPortString(nn.getHttpAddress()));
      }
      if (nn.getHttpsAddress() != null && https.equalsIgnoreCase("HTTPS_ONLY")) {
        conf.set("dfs.namenode.https-address" + suffix,
            org.apache.hadoop.net.NetUtils.getHostPortString(nn.getHttpsAddress()));
      }
    }
    Configuration classpathSite = new Configuration(false);
    for (Map.Entry<String, String> e : conf) {
      String k = e.getKey();
      if (k.equals("dfs.nameservices") || k.contains("." + HA_NAMESERVICE)) {
        site.put(k, conf.get(k));
        classpathSite.set(k, conf.get(k), "tarn harness (ha)");
      }
    }
    Path dir = workDir.resolve("krb-classpath");
    Files.createDirectories(dir);
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    classpathSite.writeXml(bytes);
    writeAtomically(dir.resolve("hdfs-site.xml"), bytes.toByteArray());
    String web = https.equalsIgnoreCase("HTTPS_ONLY") ? "https" : "http";
    site.put(HA_ACTIVE_HTTP, conf.get("dfs.namenode." + web + "-address." + HA_NAMESERVICE + ".nn2"));
    return "hdfs://" + HA_NAMESERVICE;
  }

  // ready.json's "ha": the nameservice and its NameNodes' addresses, the standby first.
  private static String haJson(Map<String, String> site) {
    String ns = HA_NAMESERVICE;
    StringBuilder b = new StringBuilder("{\"nameservice\": " + json(ns) + ", \"namenodes\": [");
    for (int i = 1; i <= 2; ++i) {
      String suffix = "." + ns + ".nn" + i;
      b.append(i > 1 ? ", " : "").append("{\"id\": ").append(json("nn" + i))
          .append(", \"state\": ").append(json(i == 2 ? "active" : "standby"))
          .append(", \"rpc\": ").append(json(site.getOrDefault("dfs.namenode.rpc-address" + suffix, "")))
          .append(", \"http\": ").append(json(site.getOrDefault("dfs.namenode.http-address" + suffix, "")))
          .append("}");
    }
    return b.append("]}").toString();
  }

  private static void start(Options o, MiniDFSCluster[] dfsOut, MiniYARNCluster[] yarnOut,
      SecureCluster[] secureOut, MicroZookeeperService[] registryOut, CountDownLatch stop)
      throws Exception {
    long started = System.nanoTime();
    Files.createDirectories(o.confDir);
    Files.createDirectories(o.workDir);
    Files.deleteIfExists(o.confDir.resolve("ready.json"));

    Configuration conf = clusterConf(o);
    String user = System.getProperty("user.name");
    if (o.kerberos) {
      secureOut[0] = SecureCluster.start(o.workDir, o.confDir, user);
      if (o.https) {
        secureOut[0].useHttps(o.confDir);
      }
      secureOut[0].configure(conf, o.workDir);
    }
    MiniDFSCluster.Builder builder =
        new MiniDFSCluster.Builder(conf, new File(o.workDir.toFile(), "dfs"))
            .numDataNodes(1)
            .format(true);
    if (o.ha) {
      builder.nnTopology(MiniDFSNNTopology.simpleHATopology());
    }
    MiniDFSCluster dfs = builder.build();
    dfsOut[0] = dfs;
    dfs.waitActive();
    Map<String, String> haSite = new TreeMap<>();
    String defaultFs =
        o.ha ? startHa(dfs, conf, o.workDir, haSite) : dfs.getURI().toString();
    conf.set("fs.defaultFS", defaultFs);
    FileSystem fs = o.ha ? FileSystem.get(new java.net.URI(defaultFs), conf) : dfs.getFileSystem();
    for (String dir : new String[] {"/tmp", "/user", "/user/" + user}) {
      fs.mkdirs(new org.apache.hadoop.fs.Path(dir));
      fs.setPermission(new org.apache.hadoop.fs.Path(dir), new FsPermission((short) 01777));
    }

    if (o.services) {
      MicroZookeeperService zk = new MicroZookeeperService("tarn-registry");
      Configuration zkConf = new Configuration(conf);
      zkConf.set(MicroZookeeperServiceKeys.KEY_ZKSERVICE_HOST, "localhost");
      zkConf.set(MicroZookeeperServiceKeys.KEY_ZKSERVICE_DIR,
          o.workDir.resolve("zookeeper").toString());
      registryOut[0] = zk;
      zk.init(zkConf);
      zk.start();
      conf.set(RegistryConstants.KEY_REGISTRY_ZK_QUORUM, zk.getConnectionString());
    }

    MiniYARNCluster yarn = new MiniYARNCluster("tarn", o.nodeManagers, 1, 1);
    yarnOut[0] = yarn;
    yarn.init(conf);
    yarn.start();
    if (!yarn.waitForNodeManagersToConnect(60_000)) {
      throw new IllegalStateException("the NodeManagers did not register within 60 s");
    }
    if (o.services) {
      GuicePipelines.giveEachWebAppItsOwn(yarn, o.nodeManagers);
    }

    Configuration yc = yarn.getConfig();
    Configuration hc = dfs.getConfiguration(0);
    YarnConfiguration yarnDefaults = new YarnConfiguration();
    HdfsConfiguration hdfsDefaults = new HdfsConfiguration();
    Map<String, String> core = changedKeys(yc, yarnDefaults,
        k -> !k.startsWith("yarn.") && !k.startsWith("dfs.") && !k.startsWith("hdfs."));
    core.put("fs.defaultFS", defaultFs);
    Map<String, String> hdfsSite =
        changedKeys(hc, hdfsDefaults, k -> k.startsWith("dfs.") || k.startsWith("hdfs."));
    hdfsSite.putAll(haSite);
    Map<String, String> yarnSite = changedKeys(yc, yarnDefaults, k -> k.startsWith("yarn."));
    if (secureOut[0] != null) {
      secureOut[0].addSiteKeys(core, hdfsSite, yarnSite);
    }
    writeSite(o.confDir.resolve("core-site.xml"), core);
    writeSite(o.confDir.resolve("hdfs-site.xml"), hdfsSite);
    writeSite(o.confDir.resolve("yarn-site.xml"), yarnSite);
    if (secureOut[0] != null) {
      secureOut[0].writeEnv(o.confDir);
    }
    if (o.services) {
      String seen = new YarnConfiguration().get(YarnConfiguration.RM_ADDRESS);
      String bound = yc.get(YarnConfiguration.RM_ADDRESS);
      if (!bound.equals(seen)) {
        throw new IllegalStateException("--services: " + o.confDir + " is not on the classpath: "
            + "a new YarnConfiguration() (as the RM's service API makes) reads "
            + YarnConfiguration.RM_ADDRESS + "=" + seen + ", the RM is at " + bound);
      }
    }

    List<String> nodes = new ArrayList<>();
    for (int i = 0; i < o.nodeManagers; ++i) {
      Configuration nc = yarn.getNodeManager(i).getConfig();
      org.apache.hadoop.yarn.server.nodemanager.Context context =
          yarn.getNodeManager(i).getNMContext();
      String host = context.getNodeId().getHost();
      nodes.add("{\"address\": " + json(context.getNodeId().toString()) + ", \"webapp\": "
          + json(host + ":" + context.getHttpPort()) + ", \"log_dirs\": "
          + json(nc.get(YarnConfiguration.NM_LOG_DIRS)) + ", \"local_dirs\": "
          + json(nc.get(YarnConfiguration.NM_LOCAL_DIRS)) + "}");
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    String ready = "{\n"
        + "  \"pid\": " + ProcessHandle.current().pid() + ",\n"
        + "  \"user\": " + json(user) + ",\n"
        + "  \"fs.defaultFS\": " + json(defaultFs) + ",\n"
        + "  \"dfs.namenode.http-address\": "
        + json(o.ha ? haSite.get(HA_ACTIVE_HTTP) : hc.get("dfs.namenode.http-address")) + ",\n"
        + (o.ha ? "  \"ha\": " + haJson(haSite) + ",\n" : "")
        + "  \"yarn.resourcemanager.address\": "
        + json(yc.get(YarnConfiguration.RM_ADDRESS)) + ",\n"
        + "  \"yarn.resourcemanager.scheduler.address\": "
        + json(yc.get(YarnConfiguration.RM_SCHEDULER_ADDRESS)) + ",\n"
        + "  \"yarn.resourcemanager.webapp.address\": "
        + json(yc.get(YarnConfiguration.RM_WEBAPP_ADDRESS)) + ",\n"
        + "  \"nodemanagers\": [" + String.join(", ", nodes) + "],\n"
        + (secureOut[0] != null ? "  \"kerberos\": " + secureOut[0].json(hc, yc) + ",\n" : "")
        + (registryOut[0] != null
                ? "  \"registry\": " + json(registryOut[0].getConnectionString()) + ",\n"
                : "")
        + "  \"start_seconds\": " + String.format("%.1f", seconds) + "\n"
        + "}\n";
    writeAtomically(o.confDir.resolve("ready.json"), ready.getBytes(StandardCharsets.UTF_8));
    System.out.printf("READY %.1f s%n", seconds);
    System.out.flush();

    if (o.ownerPid > 0) {
      Optional<ProcessHandle> owner = ProcessHandle.of(o.ownerPid);
      Thread watch = new Thread(() -> {
        owner.ifPresent(h -> h.onExit().join());
        System.out.println("harness: owner " + o.ownerPid + " exited; stopping");
        stop.countDown();
      }, "tarn-harness-owner");
      watch.setDaemon(true);
      watch.start();
    }
    if (o.stdin) {
      Thread in = new Thread(() -> {
        try {
          while (System.in.read() >= 0) {
            // Wait for end of input.
          }
        } catch (IOException e) {
          // A closed input stops the cluster too.
        }
        stop.countDown();
      }, "tarn-harness-stdin");
      in.setDaemon(true);
      in.start();
    }
  }
}
