// tarn serve: answers predictions over HTTP (TensorFlow Serving v1 REST and
// KServe v2) for the newest version in a model base, following new versions
// as they appear. See docs/SERVING.md.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cli.h"
#include "commands.h"
#include "common/files.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/settings.h"
#include "common/strings.h"
#include "common/thread_pool.h"
#include "data/file_system.h"
#include "pipeline/model_set.h"
#include "serving/model_server.h"

namespace tarn::app {

namespace {

constexpr const char* kServeHelp =
    "usage: tarn serve [--model-base DIR | -m MODELSET] [--name NAME] [--port N] [--host IP]\n"
    "                  [--threads N] [options] [-Dkey=value ...]\n"
    "\n"
    "Serves predictions over HTTP: TensorFlow Serving's v1 REST API and KServe v2.\n"
    "\n"
    "  --model-base DIR   numbered version folders DIR/1, DIR/2, ... (written by\n"
    "                     'tarn export -t serving' or by training with\n"
    "                     -Dtarn.serving.exportDir=DIR); a version is served once its\n"
    "                     READY marker exists, and newer versions replace it as they come\n"
    "                     (DIR must exist; an empty one waits for the first version).\n"
    "                     DIR may be on HDFS (hdfs://NN/path, hdfs:///path on the\n"
    "                     configuration's default NameNode, webhdfs://HOST:PORT/path):\n"
    "                     complete versions are copied into a local cache, then served\n"
    "  --model-cache DIR  that cache (default: $TMPDIR/tarn-serve-cache-PID, removed at\n"
    "                     stop; not used with a local DIR)\n"
    "  -m MODELSET        serve MODELSET/models/model*.tarn (reloaded when they change);\n"
    "                     the default when --model-base is not given is -m .\n"
    "  --name NAME        the model name in URLs (default: the model set's name, or\n"
    "                     'default' with --model-base)\n"
    "  --port N           port (default tarn.serving.port, 8501; 0 picks a free one)\n"
    "  --host IP          address to listen on (default 127.0.0.1)\n"
    "  --threads N        HTTP threads (default: one per core)\n"
    "  --poll-ms N        how often to look for new versions (default 1000)\n"
    "  --version-policy P latest:N (default latest:1) or specific:V1,V2,...\n"
    "  --max-batch N      rows per network call when batching (default 64)\n"
    "  --batch-wait-us N  how long a batch waits to fill (default 0: never waits)\n"
    "  --batch-threads N  batches scored at once (default: as many as --threads)\n"
    "  --max-body-bytes N largest request body (default 4194304; larger: 413)\n"
    "  --idle-timeout-ms N  close idle or too slow connections after N ms (default 30000)\n"
    "  --access-log PATH  one JSON line per request to PATH ('-': stderr)\n"
    "  --ignore-unknown-columns  also accept raw records with names that are not\n"
    "                     columns of the model set (its other columns are always accepted)\n"
    "\n"
    "Endpoints: GET /v1/models/NAME, GET /v1/models/NAME/metadata,\n"
    "POST /v1/models/NAME[/versions/V]:predict {\"instances\": [{\"age\": 39, ...}]},\n"
    "GET /v2/health/live|ready, GET /v2/models/NAME, POST /v2/models/NAME/infer,\n"
    "GET /metrics (Prometheus). SIGTERM or Ctrl-C stops gracefully: in-flight requests\n"
    "finish. Prints 'listening on HOST:PORT' on stdout once it accepts requests.\n"
    "\n"
    "Security (docs/SERVING.md): -Dtarn.serving.tls.cert=PEM -Dtarn.serving.tls.key=PEM\n"
    "serve HTTPS only; -Dtarn.serving.tls.client-ca=PEM also requires client certificates;\n"
    "-Dtarn.serving.auth.token-file=FILE requires 'Authorization: Bearer TOKEN' (one token\n"
    "a line, reread when it changes or on SIGHUP; health routes stay open unless\n"
    "-Dtarn.serving.auth.open-health=false).\n";

int Usage(const std::string& message) {
  return UsageError("tarn serve", message, "(see 'tarn serve --help')");
}

int Fail(const Status& s) { return app::Fail("tarn", s); }

}  // namespace

int RunServeCommand(int argc, char** argv) {
  static const std::map<std::string, bool> kFlags = {
      // name -> takes a value
      {"model-base", true},
      {"model-cache", true},
      {"m", true},
      {"name", true},
      {"port", true},
      {"host", true},
      {"threads", true},
      {"poll-ms", true},
      {"version-policy", true},
      {"max-batch", true},
      {"batch-wait-us", true},
      {"batch-threads", true},
      {"access-log", true},
      {"max-body-bytes", true},
      {"idle-timeout-ms", true},
      {"ignore-unknown-columns", false},
      {"constant-response", false},  // benchmark aid: the HTTP stack's ceiling
  };
  std::vector<std::string> overrides;
  std::map<std::string, std::string> flags;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help" || a == "help") {
      std::fputs(kServeHelp, stdout);
      return 0;
    }
    if (ApplyVerbosityFlag(a)) continue;
    if (a.rfind("-D", 0) == 0 && a.size() > 2) {
      overrides.push_back(a.substr(2));
      continue;
    }
    if (a.size() < 2 || a[0] != '-') return Usage("unexpected argument '" + a + "'");
    std::string name = a.substr(a.rfind("--", 0) == 0 ? 2 : 1), value;
    auto eq = name.find('=');
    bool has_value = eq != std::string::npos;
    if (has_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto f = kFlags.find(name);
    if (f == kFlags.end()) return Usage("unknown option " + a);
    if (f->second && !has_value) {
      if (i + 1 >= argc) return Usage("option " + a + " needs a value");
      value = argv[++i];
    } else if (!f->second && has_value) {
      return Usage("option --" + name + " takes no value");
    }
    flags[name] = value;
  }
  Progress::SetEnabled(false);

  auto settings = pipeline::LoadSettings(argv[0], overrides);
  if (!settings.ok()) return Fail(settings.status());
  for (const auto& k : settings->UnknownKeys()) {
    if (StartsWith(k, "tarn.serving.")) return Usage("unknown setting " + k);
  }

  serving::ModelServerOptions o;
  // Integer settings, overridden by their flags.
  auto int_option = [&](const char* flag, const char* key, long long min, long long max,
                        long long* out) -> Status {
    TARN_ASSIGN_OR_RETURN(long long v, settings->GetInt(key));
    std::string source = key;
    if (flags.count(flag)) {
      auto parsed = ParseInt(flags[flag]);
      if (!parsed) return InvalidArgument("--" + std::string(flag) + " needs an integer");
      v = *parsed;
      source = "--" + std::string(flag);
    }
    if (v < min || v > max) {
      return InvalidArgument(source + " must be between " + std::to_string(min) + " and " +
                             std::to_string(max) + ", got " + std::to_string(v));
    }
    *out = v;
    return Status::Ok();
  };
  long long port, threads, poll_ms, max_batch, wait_us, batch_threads, max_body, idle_ms;
  for (auto s :
       {int_option("port", "tarn.serving.port", 0, 65535, &port),
        int_option("threads", "tarn.serving.threads", 0, 1024, &threads),
        int_option("poll-ms", "tarn.serving.pollIntervalMs", 10, 3600 * 1000, &poll_ms),
        int_option("max-batch", "tarn.serving.maxBatchSize", 1, 65536, &max_batch),
        int_option("batch-wait-us", "tarn.serving.batchTimeoutMicros", 0, 1000000, &wait_us),
        int_option("batch-threads", "tarn.serving.batchThreads", 0, 1024, &batch_threads),
        int_option("max-body-bytes", "tarn.serving.maxBodyBytes", 1024, 1LL << 30, &max_body),
        int_option("idle-timeout-ms", "tarn.serving.idleTimeoutMs", 100, 24LL * 3600 * 1000,
                   &idle_ms)}) {
    if (!s.ok()) return Fail(s);
  }
  if (threads == 0) threads = DefaultThreadCount();
  if (batch_threads == 0) batch_threads = threads;

  o.http.host = flags.count("host") ? flags["host"] : settings->GetString("tarn.serving.host");
  o.http.port = static_cast<int>(port);
  o.http.threads = static_cast<int>(threads);
  o.http.max_body_bytes = static_cast<size_t>(max_body);
  o.http.idle_timeout_ms = static_cast<int>(idle_ms);
  o.versions.poll_interval_ms = static_cast<int>(poll_ms);
  o.versions.batch.max_batch_rows = static_cast<int>(max_batch);
  o.versions.batch.max_wait_us = static_cast<int>(wait_us);
  o.versions.batch.max_concurrent = static_cast<int>(batch_threads);
  auto policy = serving::VersionPolicy::Parse(
      flags.count("version-policy") ? flags["version-policy"]
                                    : settings->GetString("tarn.serving.versionPolicy"));
  if (!policy.ok()) return Fail(policy.status());
  o.versions.policy = *policy;
  o.access_log = flags.count("access-log") ? flags["access-log"]
                                           : settings->GetString("tarn.serving.accessLog");
  auto ignore = settings->GetBool("tarn.serving.ignoreUnknownColumns");
  if (!ignore.ok()) return Fail(ignore.status());
  o.decode.ignore_unknown_columns = *ignore || flags.count("ignore-unknown-columns") > 0;
  o.constant_response = flags.count("constant-response") > 0;
  o.http.tls.cert_file = settings->GetString("tarn.serving.tls.cert");
  o.http.tls.key_file = settings->GetString("tarn.serving.tls.key");
  o.http.tls.client_ca_file = settings->GetString("tarn.serving.tls.client-ca");
  o.http.tls.origin = "tarn.serving.tls";
  if (!o.http.tls.client_ca_file.empty() && !o.http.tls.enabled()) {
    return Usage("tarn.serving.tls.client-ca needs tarn.serving.tls.cert and tarn.serving.tls.key");
  }
  if (o.http.tls.enabled() && (o.http.tls.cert_file.empty() || o.http.tls.key_file.empty())) {
    return Usage("TLS needs both tarn.serving.tls.cert and tarn.serving.tls.key");
  }
  for (std::string* file :
       {&o.http.tls.cert_file, &o.http.tls.key_file, &o.http.tls.client_ca_file}) {
    if (!file->empty()) *file = ResolvePath(".", *file);
  }
  o.token_file = settings->GetString("tarn.serving.auth.token-file");
  if (!o.token_file.empty()) o.token_file = ResolvePath(".", o.token_file);
  auto open_health = settings->GetBool("tarn.serving.auth.open-health");
  if (!open_health.ok()) return Fail(open_health.status());
  o.open_health = *open_health;

  std::string name;
  std::string temporary_cache;  // removed at stop
  if (flags.count("model-base") && data::IsHdfsPath(flags["model-base"])) {
    // A remote base: its versions are copied into a local cache that the manager polls.
    const std::string& remote = flags["model-base"];
    auto fs = data::FileSystemFor(remote);
    if (!fs.ok()) return Fail(fs.status().WithContext("--model-base " + remote));
    std::string cache = flags.count("model-cache")
                            ? flags["model-cache"]
                            : settings->GetString("tarn.serving.modelCacheDir");
    if (cache.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      const std::string prefix =
          JoinPath(tmp && *tmp ? tmp : "/tmp", std::string("tarn-serve-cache-"));
      (void)RemoveStalePidFolders(prefix);  // caches of servers that were killed
      cache = prefix + std::to_string(::getpid());
      temporary_cache = cache;
    }
    cache = ResolvePath(".", cache);
    // The temporary cache is under a shared folder: made private, never one found there.
    if (Status made = temporary_cache.empty() ? MakeDirs(cache) : MakePrivateDir(cache);
        !made.ok()) {
      return Fail(made.WithContext("--model-cache " + cache));
    }
    o.versions.remote_base = remote;
    o.versions.base_dir = cache;
    name = "default";
  } else if (flags.count("model-base")) {
    o.versions.base_dir = ResolvePath(".", flags["model-base"]);
    // A typo here would otherwise wait forever for versions that never come.
    if (!PathExists(o.versions.base_dir)) {
      const std::string& given = flags["model-base"];
      const std::string where =
          given == o.versions.base_dir ? given : given + " (" + o.versions.base_dir + ")";
      return Fail(InvalidArgument("--model-base " + where +
                                  " does not exist: create it, or write a version with 'tarn "
                                  "export -t serving -o " +
                                  given + "'"));
    }
    if (!IsDirectory(o.versions.base_dir)) {
      return Fail(InvalidArgument("--model-base " + flags["model-base"] + " is not a folder"));
    }
    name = "default";
  } else if (!o.constant_response) {
    std::string dir = flags.count("m") ? flags["m"] : ".";
    auto ms = pipeline::OpenModelSet(dir, *settings);
    if (!ms.ok()) {
      return Fail(Status(ms.status().code(), ms.status().message() +
                                                 " (give --model-base DIR for numbered "
                                                 "serving versions)"));
    }
    o.versions.base_dir = ms->Path("models");
    o.versions.flat = true;
    name = !ms->config.name.empty() ? ms->config.name : BaseName(ms->dir);
  }
  if (flags.count("model-cache") && o.versions.remote_base.empty()) {
    // A warning, not an error: one command line serves a local or an HDFS base.
    TARN_LOG(kWarn) << "serve: --model-cache is not used: a local model base is served in place";
  }
  if (flags.count("name")) name = flags["name"];
  if (name.empty()) name = "default";
  o.model_name = name;

  // SIGTERM / SIGINT are taken by sigwait below; every thread the server
  // starts inherits this mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);  // rereads the token file
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = serving::ModelServer::Start(o);
  if (!server.ok()) {
    if (!temporary_cache.empty()) (void)RemoveAll(temporary_cache);
    return Fail(server.status());
  }
  const std::string where = o.http.host + ":" + std::to_string((*server)->port());
  TARN_LOG(kInfo) << "serve: model '" << name << "' from "
                  << (o.constant_response ? std::string("(constant responses)")
                      : o.versions.remote_base.empty()
                          ? o.versions.base_dir
                          : o.versions.remote_base + " (cached in " + o.versions.base_dir + ")")
                  << (o.versions.flat ? " (model set models/)" : "") << ", policy "
                  << o.versions.policy.ToString() << ", " << threads << " threads, on "
                  << ((*server)->tls() ? "https://" : "http://") << where
                  << ((*server)->tls() && !o.http.tls.client_ca_file.empty()
                          ? " (client certificates required)"
                          : "")
                  << (o.token_file.empty() ? "" : ", bearer tokens from " + o.token_file);
  if (!o.constant_response && (*server)->versions()->state()->versions.empty()) {
    TARN_LOG(kWarn) << "serve: no version is loaded yet; waiting for one in "
                    << (o.versions.remote_base.empty() ? o.versions.base_dir
                                                       : o.versions.remote_base);
  }
  std::printf("listening on %s\n", where.c_str());
  std::fflush(stdout);

  int sig = 0;
  while (sigwait(&stop_signals, &sig) == 0 && sig == SIGHUP) {
    TARN_LOG(kInfo) << "serve: SIGHUP: rereading the token file";
    (void)(*server)->ReloadTokens();  // a failure is logged; the old tokens stay
  }
  TARN_LOG(kInfo) << "serve: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
                  << ": finishing in-flight requests and stopping";
  (*server)->Stop();
  if (!temporary_cache.empty()) (void)RemoveAll(temporary_cache);
  TARN_LOG(kInfo) << "serve: stopped";
  return 0;
}

}  // namespace tarn::app
