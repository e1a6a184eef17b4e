#include "common/settings.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "common/files.h"
#include "common/strings.h"

namespace tarn {

namespace {

const std::vector<SettingDecl> kSettings = {
    // Shifu's keys (conf/global-default.xml of shifu-tensorflow), same meaning.
    {"shifu.task.heartbeat-interval", SettingType::kInt, "1000",
     "Milliseconds between heartbeats of a training node to the coordinator."},
    {"shifu.task.max-missed-heartbeats", SettingType::kInt, "25",
     "Heartbeats a node may miss before the coordinator declares it dead."},
    {"shifu.am.memory", SettingType::kString, "4g", "Memory of the YARN ApplicationMaster."},
    {"shifu.am.vcores", SettingType::kInt, "1", "Virtual cores of the YARN ApplicationMaster."},
    {"shifu.ps.memory", SettingType::kString, "4g", "Memory of each parameter server."},
    {"shifu.ps.vcores", SettingType::kInt, "2", "Virtual cores of each parameter server."},
    {"shifu.ps.instances", SettingType::kInt, "1", "Number of parameter servers."},
    {"shifu.worker.memory", SettingType::kString, "2g", "Memory of each worker."},
    {"shifu.worker.vcores", SettingType::kInt, "2", "Virtual cores of each worker."},
    {"shifu.serving.instances", SettingType::kInt, "0",
     "Model servers (tarn serve) a YARN training job starts beside training; they load each "
     "version training exports and keep serving after training until 'tarn yarn kill'."},
    {"shifu.worker.gpus", SettingType::kInt, "0",
     "GPUs (yarn.io/gpu) asked for each worker container on YARN."},
    {"shifu.worker.instances", SettingType::kInt, "0",
     "Number of workers; 0 means one per file in tmp/NormalizedData, as Shifu does."},
    {"shifu.worker.instances.backup", SettingType::kInt, "-1",
     "Number of backup workers; -1 means max(1, workers/10), as Shifu does."},
    {"shifu.application.yarn.queue", SettingType::kString, "default", "YARN queue."},
    {"shifu.application.name", SettingType::kString, "tarn", "YARN application name."},
    {"shifu.application.timeout", SettingType::kInt, "0",
     "Milliseconds before a YARN application is killed; 0 means never."},
    {"shifu.norm.shuffle.size", SettingType::kInt, "0",
     "Shards written by 'tarn norm -shuffle'; 0 means one per core."},
    {"shifu.max.category.size", SettingType::kInt, "10000",
     "Most distinct categories kept per categorical column in stats; the rest fold into the "
     "missing bin."},
    {"shifu.varsel.se.reuse", SettingType::kBool, "true",
     "varsel with filterBy SE or ST ranks the columns with the existing models/model0.tarn "
     "and trains one first only when it is missing; false trains a fresh one every time, "
     "which is Shifu's default."},
    // tarn's own keys.
    {"tarn.threads", SettingType::kInt, "0",
     "Worker threads for data steps and training; 0: every core this process may run on."},
    {"tarn.seed", SettingType::kInt, "42",
     "Seed for sampling and shuffling, so that every step is repeatable."},
    {"tarn.data.max-bad-row-ratio", SettingType::kDouble, "0.001",
     "Largest share of rows with a wrong field count before a step fails (0.001 = 0.1%)."},
    {"tarn.data.bad-rows-reported", SettingType::kInt, "5",
     "How many bad rows are reported with file and line."},
    {"tarn.data.chunk-bytes", SettingType::kInt, "1048576",
     "Bytes of text parsed per task; rows are split across threads in chunks this size."},
    {"tarn.data.gzip-whole-file-mb", SettingType::kInt, "128",
     "A gzip file whose compressed and decompressed sizes fit in this many MB is decompressed "
     "whole (libdeflate, faster); larger files, or all when 0, stream through zlib."},
    {"tarn.init.type-sample-rows", SettingType::kInt, "10000",
     "Rows sampled by 'tarn init' to tell numeric from categorical columns."},
    {"tarn.init.numeric-ratio", SettingType::kDouble, "0.95",
     "A column is numeric when at least this share of its sampled non-missing values parse as "
     "numbers."},
    {"tarn.stats.histogram-centroids", SettingType::kInt, "0",
     "Centroids per column histogram; 0 means min(maxNumBin*100, 10000), as Shifu does."},
    {"tarn.stats.exact-values-mb", SettingType::kInt, "64",
     "Memory for exact per-value counts of numeric columns. A column whose distinct values fit "
     "gets exact bins, moments and distinct count without a second pass over the data."},
    {"tarn.stats.hll-precision", SettingType::kInt, "14",
     "HyperLogLog precision p (2^p registers) for distinctCount; 14 gives about 0.8% error."},
    {"tarn.norm.shards", SettingType::kInt, "0",
     "Shards written by 'tarn norm' without -shuffle; 0 means one per input data file."},
    {"tarn.norm.id-hash-seed", SettingType::kInt, "0",
     "Seed of the hash that turns a categorical column with ColumnConfig hashSeed > 0 into "
     "bucket ids (docs/TRAINING.md, 'Id columns'); recorded in the shards and the model."},
    {"tarn.norm.shuffle.buffer-mb", SettingType::kInt, "64",
     "Memory for the shuffle's in-memory buckets before they spill to disk."},
    {"tarn.train.early-stop-patience", SettingType::kInt, "0",
     "Stop training a model when its validation error has not improved for this many epochs, "
     "and keep its best epoch; 0 trains every epoch of numTrainEpochs."},
    {"tarn.train.parallel-bags", SettingType::kInt, "0",
     "LOCAL training: how many of baggingNum's bags train at once, each on its own thread "
     "(every bag's model is the same as when they train one after another). 0: one bag a "
     "thread of tarn.threads (all cores the process may use), at most baggingNum; 1: one bag "
     "after another. The threads are shared out, so bags in parallel do not also split their "
     "batches."},
    {"tarn.train.consistency", SettingType::kString, "sync",
     "runMode DIST: how parameter servers apply gradients. sync: a step closes when every "
     "worker slot has pushed its gradient for it (stale ones are dropped); async: each push is "
     "applied at once; ssp: at once, but a worker more than tarn.train.staleness pushes ahead "
     "of the slowest waits."},
    {"tarn.train.staleness", SettingType::kInt, "2",
     "runMode DIST with consistency ssp: how many pushes a worker may run ahead of the "
     "slowest."},
    {"tarn.train.comm-period", SettingType::kInt, "1",
     "runMode DIST: mini-batches whose gradients a worker sums before each push (k)."},
    {"tarn.train.allow-degraded", SettingType::kBool, "false",
     "runMode DIST: when a worker dies and no backup is left, continue without its shards "
     "instead of failing the job."},
    {"tarn.train.max-ps-restarts", SettingType::kInt, "3",
     "runMode DIST: parameter server failures survived (each restart rolls back to the last "
     "checkpoint) before the job fails."},
    {"tarn.train.checkpoint-interval-ms", SettingType::kInt, "1000",
     "runMode DIST: the least time between two checkpoints. An epoch that ends sooner after "
     "the last checkpoint takes none (a bag's first and last epochs always do), so a job of "
     "very short epochs does not spend its time writing files; a failure then retrains at most "
     "this much. 0: a checkpoint after every epoch."},
    {"tarn.train.script", SettingType::kString, "auto",
     "train.algorithm TensorFlow with Shifu's script in the model set (distributed_tf_keras.py, "
     "or the one TF_type / TF.version name): who trains. auto: the script runs (runMode DIST) "
     "unless it is byte-identical to one of Shifu's stock copies, which tarn's native engine "
     "replaces; run: the script runs; native: tarn's native engine trains (docs/TRAINING.md, "
     "'shifu-tensorflow scripts')."},
    {"tarn.train.script.python", SettingType::kString, "python3",
     "The Python that runs a shifu-tensorflow script (Shifu's $PYTHON_HOME/bin/python): a "
     "command on PATH or a path."},
    {"tarn.cluster.backend", SettingType::kString, "local",
     "runMode DIST: where the nodes run. local: child processes of the coordinator on this "
     "machine, over authenticated TCP; embedded: threads of one process, over in-process "
     "connections; yarn: a YARN application whose ApplicationMaster is the coordinator "
     "(HADOOP_CONF_DIR names the cluster)."},
    {"tarn.cluster.host", SettingType::kString, "",
     "runMode DIST: the address the coordinator and parameter servers listen on. Empty: "
     "127.0.0.1 on one machine; on YARN 'auto'. auto: every address, advertised by the "
     "node's host name."},
    {"tarn.cluster.tls", SettingType::kBool, "false",
     "runMode DIST: encrypt the job's TCP connections (coordinator, parameter servers, "
     "workers) with TLS 1.2+ keyed by the job's secret (a pre-shared key: no certificates), "
     "the secret's HMAC handshake running inside it. The embedded backend has no sockets."},
    {"tarn.cluster.status-port", SettingType::kInt, "0",
     "runMode DIST: the port of the coordinator's status page (HTML at /, JSON at "
     "/status.json); 0 picks a free one, written to tmp/cluster.json."},
    {"tarn.assembly.dir", SettingType::kString, "",
     "tarn assembly: the folder holding each service's folder (saved spec, status.json, logs, "
     "instance folders). Empty: $TARN_HOME/assembly, else ~/.tarn/assembly."},
    {"tarn.assembly.docker", SettingType::kString, "docker",
     "tarn assembly: the Docker client that runs DOCKER artifacts on this machine; a launch "
     "with a DOCKER component is refused when 'CLIENT info' does not answer."},
    {"tarn.assembly.am-memory-mb", SettingType::kInt, "512",
     "tarn assembly launch --backend yarn: the memory (MB) of the assembly's ApplicationMaster "
     "container, which runs tarn's runner (the components ask for their own resources)."},
    {"tarn.assembly.am-max-attempts", SettingType::kInt, "20",
     "tarn assembly launch --backend yarn: the attempts of the assembly's ApplicationMaster "
     "unless the service's configuration.properties sets yarn.service.am-restart.max-attempts "
     "(Hadoop's default, 20, as here). A later attempt keeps the running containers and goes "
     "on from the runner's state; the ResourceManager caps the count at "
     "yarn.resourcemanager.am.max-attempts."},
    {"tarn.net.retry-ms", SettingType::kInt, "1000",
     "Milliseconds a node waits for an answer before it sends a request again (a retried "
     "request runs once)."},
    {"tarn.net.max-message-mb", SettingType::kInt, "64",
     "Largest message a node accepts, in MiB; larger ones are refused unread."},
    {"tarn.net.test-drop-rate", SettingType::kDouble, "0",
     "For tests: the probability that a node silently drops a message it sends to a "
     "parameter server (the request is retried)."},
    {"tarn.net.test-delay-ms", SettingType::kInt, "0",
     "For tests: milliseconds every message to a parameter server is delayed."},
    {"tarn.train.test-crash-before-model", SettingType::kInt, "-1",
     "For tests: runMode DIST's coordinator kills itself (SIGKILL) right after bag N's last "
     "checkpoint is committed, before the bag's model file is written: a coordinator lost "
     "there (a resume writes the model from that checkpoint). -1: never."},
    {"tarn.train.tensorboard", SettingType::kBool, "true",
     "Write TensorBoard event files (loss/train, loss/valid, auc/valid, "
     "throughput/samples_per_sec per epoch) under tmp/tensorboard/, one folder per bag when "
     "baggingNum > 1."},
    {"tarn.varsel.correlation", SettingType::kBool, "true",
     "Let varsel compute the correlation matrix itself when correlationThreshold < 1 and "
     "correlation.csv is missing."},
    // Hadoop: HDFS paths and YARN (docs/YARN.md). Hadoop's own keys (fs.defaultFS,
    // dfs.namenode.http-address, yarn.resourcemanager.webapp.address, ...) may also be given
    // with -D; they override the cluster's configuration files.
    {"tarn.hadoop.conf-dir", SettingType::kString, "",
     "Folder of the cluster's core-site.xml, hdfs-site.xml and yarn-site.xml; empty means "
     "$HADOOP_CONF_DIR, else $HADOOP_HOME/etc/hadoop."},
    {"tarn.hdfs.user", SettingType::kString, "",
     "User named to WebHDFS and the ResourceManager (user.name=); empty means "
     "$HADOOP_USER_NAME, else the login user. Not sent on a Kerberized cluster, where the "
     "user is the Kerberos principal's short name."},
    {"tarn.kerberos.principal", SettingType::kString, "",
     "Kerberos principal tarn authenticates as on a secured cluster "
     "(hadoop.security.authentication=kerberos), e.g. alice@EXAMPLE.COM; with "
     "tarn.kerberos.keytab tarn logs in from the keytab itself (no kinit), else it must be "
     "the principal of the ticket cache; empty: whatever the ticket cache holds."},
    {"tarn.kerberos.keytab", SettingType::kString, "",
     "Keytab of tarn.kerberos.principal: tarn gets and renews its tickets from it in a "
     "memory cache of its own (the user's ticket cache is left alone); empty: the ticket "
     "cache after kinit."},
    {"tarn.tls.ca-file", SettingType::kString, "",
     "PEM CA certificates tarn trusts for a cluster's https endpoints (dfs.http.policy or "
     "yarn.http.policy HTTPS_ONLY); empty: the system's CAs. Certificates are always "
     "verified."},
    {"tarn.hdfs.read-block-mb", SettingType::kInt, "8",
     "MB fetched per WebHDFS read request when streaming an hdfs:// file."},
    {"tarn.hdfs.timeout-s", SettingType::kInt, "300",
     "Seconds one WebHDFS or ResourceManager request may take."},
    {"tarn.yarn.staging-dir", SettingType::kString, "",
     "HDFS folder where a YARN submission stages the tarn binary and the job's files (one "
     "sub-folder per application); empty means /user/<user>/.tarn/staging on fs.defaultFS."},
    {"tarn.yarn.logs-wait-s", SettingType::kInt, "60",
     "How long `tarn yarn logs` waits, for a finished application whose NodeManagers are still "
     "uploading its logs to HDFS (log aggregation), before it reads what is there."},
    {"tarn.yarn.hdfs-servers", SettingType::kString, "",
     "On a secured cluster: more HDFS file systems a YARN job gets delegation tokens for, "
     "beyond the staging folder's and those its paths name (a comma list of hdfs://nameservice "
     "or hdfs://host:port, as MapReduce's mapreduce.job.hdfs-servers); empty: none."},
    // Serving (tarn serve, and training that feeds it); see docs/SERVING.md.
    {"tarn.serving.exportDir", SettingType::kString, "",
     "When set, 'tarn train' writes a new numbered serving version (DIR/N/ with a READY "
     "marker) every tarn.serving.exportEveryEpochs epochs and at the end of training, so a "
     "running 'tarn serve --model-base DIR' follows training. DIR may be a local folder or "
     "hdfs://... (each version is copied there with its marker last)."},
    {"tarn.serving.exportEveryEpochs", SettingType::kInt, "0",
     "With tarn.serving.exportDir: also export a version every N epochs during training; 0 "
     "exports only the finished models."},
    {"tarn.serving.host", SettingType::kString, "127.0.0.1",
     "Address 'tarn serve' listens on (a numeric IP; 0.0.0.0 for every interface)."},
    {"tarn.serving.port", SettingType::kInt, "8501",
     "Port of 'tarn serve' (TensorFlow Serving's REST port by default)."},
    {"tarn.serving.threads", SettingType::kInt, "0",
     "HTTP threads of 'tarn serve' (each runs its own event loop and answers requests); 0 "
     "means one per core."},
    {"tarn.serving.modelCacheDir", SettingType::kString, "",
     "With 'tarn serve --model-base hdfs://...': the local folder the versions it serves are "
     "copied into (kept across restarts, so cached versions are not fetched again); empty: "
     "$TMPDIR/tarn-serve-cache-<pid>, removed when the server stops."},
    {"tarn.serving.pollIntervalMs", SettingType::kInt, "1000",
     "How often 'tarn serve' looks for new versions in the model base."},
    {"tarn.serving.versionPolicy", SettingType::kString, "latest:1",
     "Versions 'tarn serve' keeps loaded: latest:N (the newest N that load) or specific:V1,V2."},
    {"tarn.serving.maxBatchSize", SettingType::kInt, "64",
     "Most rows one network call scores; concurrent smaller requests are batched up to it."},
    {"tarn.serving.batchTimeoutMicros", SettingType::kInt, "0",
     "How long a batch may wait for more requests to fill it; 0 never waits (requests that "
     "arrive while the scoring threads are busy still share a batch)."},
    {"tarn.serving.batchThreads", SettingType::kInt, "0",
     "Batches scored at the same time; 0 means as many as HTTP threads."},
    {"tarn.serving.maxBodyBytes", SettingType::kInt, "4194304",
     "Largest request body 'tarn serve' accepts; larger ones get 413."},
    {"tarn.serving.idleTimeoutMs", SettingType::kInt, "30000",
     "An idle keep-alive connection, or a request that takes longer to arrive, is closed "
     "after this many milliseconds."},
    {"tarn.serving.accessLog", SettingType::kString, "",
     "Where 'tarn serve' writes its access log (one JSON object per request): a file, '-' for "
     "stderr, or empty for none."},
    {"tarn.serving.ignoreUnknownColumns", SettingType::kBool, "false",
     "Let raw records carry names that are not columns of the model set (else such a request "
     "gets 400; the model set's other columns, such as the target, are always accepted)."},
    {"tarn.serving.tls.cert", SettingType::kString, "",
     "PEM certificate (then any intermediates) of 'tarn serve'; with tarn.serving.tls.key it "
     "serves HTTPS only (TLS 1.2 or newer); empty serves plain HTTP."},
    {"tarn.serving.tls.key", SettingType::kString, "",
     "PEM private key (unencrypted) of tarn.serving.tls.cert; it must match the certificate."},
    {"tarn.serving.tls.client-ca", SettingType::kString, "",
     "PEM CA certificates: when set, 'tarn serve' accepts only TLS clients with a certificate "
     "signed by one of them (refused in the handshake); empty asks for no client certificate."},
    {"tarn.serving.auth.token-file", SettingType::kString, "",
     "File of bearer tokens, one a line ('#' comment lines and blank lines ignored): every "
     "request must carry 'Authorization: Bearer <token>' or gets 401. A changed file is reread "
     "without a restart (requests look at it at most once a second) and on SIGHUP; empty means "
     "no authentication."},
    {"tarn.serving.auth.open-health", SettingType::kBool, "true",
     "With tarn.serving.auth.token-file: /v2/health/live, /v2/health/ready and "
     "/v2/models/NAME/ready answer without a token, for probes that carry none (they say only "
     "whether the server is up and has a model); false closes them too."},
};

}  // namespace

const std::vector<SettingDecl>& DeclaredSettings() { return kSettings; }

const SettingDecl* FindSetting(const std::string& name) {
  for (const auto& d : kSettings)
    if (name == d.name) return &d;
  return nullptr;
}

std::pair<std::string, size_t> ClosestSetting(const std::string& name) {
  std::vector<std::string_view> names;
  for (const auto& d : kSettings) names.emplace_back(d.name);
  return ClosestName(name, names);
}

bool IsHadoopKey(const std::string& name) {
  for (const char* prefix : {"fs.", "dfs.", "yarn.", "hadoop.", "ipc.", "mapreduce.", "mapred.",
                             "io.", "ha.", "net.topology."}) {
    if (StartsWith(name, prefix)) return true;
  }
  return false;
}

const char* SettingTypeName(SettingType type) {
  switch (type) {
    case SettingType::kInt:
      return "an integer";
    case SettingType::kDouble:
      return "a number";
    case SettingType::kBool:
      return "true or false";
    case SettingType::kString:
      return "a string";
  }
  return "?";
}

namespace {

Status CheckType(const SettingDecl& d, const std::string& value, const std::string& source) {
  bool ok = true;
  switch (d.type) {
    case SettingType::kInt:
      ok = ParseInt(value).has_value();
      break;
    case SettingType::kDouble: {
      auto v = ParseDouble(value);
      ok = v.has_value() && std::isfinite(*v);
      break;
    }
    case SettingType::kBool: {
      auto l = ToLower(Trim(value));
      ok = l == "true" || l == "false";
      break;
    }
    case SettingType::kString:
      break;
  }
  if (!ok) {
    return InvalidArgument(source + ": setting '" + d.name + "' must be " +
                           SettingTypeName(d.type) + ", got '" + value + "'");
  }
  return Status::Ok();
}

std::string XmlUnescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    static const std::pair<const char*, char> kEntities[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    bool matched = false;
    for (auto [ent, ch] : kEntities) {
      if (s.substr(i, std::strlen(ent)) == ent) {
        out += ch;
        i += std::strlen(ent) - 1;
        matched = true;
        break;
      }
    }
    if (!matched) out += '&';
  }
  return out;
}

// Text between <tag> and </tag> inside `block`, or nullopt.
std::optional<std::string> ElementText(std::string_view block, const std::string& tag) {
  auto open = block.find("<" + tag + ">");
  if (open == std::string_view::npos) return std::nullopt;
  open += tag.size() + 2;
  auto close = block.find("</" + tag + ">", open);
  if (close == std::string_view::npos) return std::nullopt;
  return XmlUnescape(Trim(block.substr(open, close - open)));
}

size_t LineOf(std::string_view text, size_t offset) {
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

}  // namespace

Settings::Settings() {
  for (const auto& d : kSettings) {
    values_[d.name] = d.default_value;
    sources_[d.name] = "default";
  }
}

Status Settings::Set(const std::string& key, const std::string& value, const std::string& source) {
  if (key.empty()) return InvalidArgument(source + ": empty setting name");
  if (const SettingDecl* d = FindSetting(key)) TARN_RETURN_IF_ERROR(CheckType(*d, value, source));
  values_[key] = value;
  sources_[key] = source;
  return Status::Ok();
}

Status Settings::LoadXml(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseXml(text, path);
}

Status Settings::ParseXml(const std::string& text, const std::string& source_name) {
  std::string_view t(text);
  if (t.find("<configuration") == std::string_view::npos) {
    return InvalidArgument(source_name + ": not a Hadoop configuration file (no <configuration>)");
  }
  size_t pos = 0;
  while (true) {
    // Skip comments so that a commented-out property is not read.
    size_t comment = t.find("<!--", pos);
    size_t open = t.find("<property>", pos);
    if (open == std::string_view::npos) break;
    if (comment != std::string_view::npos && comment < open) {
      size_t end = t.find("-->", comment);
      if (end == std::string_view::npos) {
        return InvalidArgument(source_name + ":" + std::to_string(LineOf(t, comment)) +
                               ": unterminated comment");
      }
      pos = end + 3;
      continue;
    }
    size_t close = t.find("</property>", open);
    if (close == std::string_view::npos) {
      return InvalidArgument(source_name + ":" + std::to_string(LineOf(t, open)) +
                             ": <property> without </property>");
    }
    std::string_view block = t.substr(open, close - open);
    auto name = ElementText(block, "name");
    auto value = ElementText(block, "value");
    std::string where = source_name + ":" + std::to_string(LineOf(t, open));
    if (!name || name->empty()) return InvalidArgument(where + ": <property> without <name>");
    if (!value) return InvalidArgument(where + ": property '" + *name + "' has no <value>");
    TARN_RETURN_IF_ERROR(Set(*name, *value, where));
    pos = close + 11;
  }
  return Status::Ok();
}

Status Settings::ApplyOverride(const std::string& kv) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("-D" + kv + ": expected -Dkey=value");
  }
  return Set(kv.substr(0, eq), kv.substr(eq + 1), "-D" + kv.substr(0, eq));
}

Result<long long> Settings::GetInt(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return NotFound("setting '" + key + "' is not set");
  auto v = ParseInt(it->second);
  if (!v) {
    return InvalidArgument(sources_.at(key) + ": setting '" + key + "' must be an integer, got '" +
                           it->second + "'");
  }
  return *v;
}

Result<double> Settings::GetDouble(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return NotFound("setting '" + key + "' is not set");
  auto v = ParseDouble(it->second);
  if (!v || !std::isfinite(*v)) {
    return InvalidArgument(sources_.at(key) + ": setting '" + key + "' must be a number, got '" +
                           it->second + "'");
  }
  return *v;
}

Result<bool> Settings::GetBool(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return NotFound("setting '" + key + "' is not set");
  auto l = ToLower(Trim(it->second));
  if (l == "true") return true;
  if (l == "false") return false;
  return InvalidArgument(sources_.at(key) + ": setting '" + key + "' must be true or false, got '" +
                         it->second + "'");
}

std::string Settings::GetString(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? std::string() : it->second;
}

std::vector<std::string> Settings::UnknownKeys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : values_)
    if (!FindSetting(k)) out.push_back(k);
  return out;
}

std::string Settings::DefaultXml() {
  std::string out =
      "<?xml version=\"1.0\"?>\n"
      "<!-- tarn's job settings, with their defaults. Shifu's keys keep Shifu's meaning.\n"
      "     Override any of them for one command with -Dkey=value.\n"
      "     This file is generated from src/common/settings.cpp (tarn settings --xml). -->\n"
      "<configuration>\n";
  for (const auto& d : kSettings) {
    out += "  <property>\n    <name>" + EscapeMarkup(d.name) + "</name>\n    <value>" +
           EscapeMarkup(d.default_value) + "</value>\n    <description>" + EscapeMarkup(d.doc) +
           "</description>\n  </property>\n";
  }
  out += "</configuration>\n";
  return out;
}

}  // namespace tarn
