// tarn yarn status|kill|logs|list: the applications tarn started on a YARN cluster, through the
// ResourceManager's REST API (src/cluster/yarn/rm_rest.h). The cluster comes from
// $HADOOP_CONF_DIR (or -Dtarn.hadoop.conf-dir=DIR), with any Hadoop key overridable by -D.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli.h"
#include "cluster/yarn/aggregated_logs.h"
#include "cluster/yarn/delegation_tokens.h"  // for ExtraHdfsServers
#include "cluster/yarn/rm_rest.h"
#include "cluster/yarn/staging.h"
#include "commands.h"
#include "common/files.h"  // for BaseName
#include "common/log.h"
#include "common/settings.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "net/hadoop_conf.h"
#include "net/kerberos.h"        // for ConfigureKerberos
#include "pipeline/model_set.h"  // for LoadSettings

namespace tarn::app {
namespace {

using cluster::yarn::AppReport;
using cluster::yarn::ResourceManagerClient;

constexpr const char* kYarnUsage =
    "usage: tarn yarn status APP_ID     state, final status, diagnostics, attempts\n"
    "       tarn yarn kill APP_ID       kill it and wait until YARN has (exit 0 when it ends)\n"
    "       tarn yarn logs APP_ID [--attempt N] [--container ID|all] [--file NAME|all] [--list]\n"
    "                                   a container's stdout and stderr (the AM container of the\n"
    "                                   last attempt unless --attempt or --container), as\n"
    "                                   'yarn logs' prints them: from its NodeManager while the\n"
    "                                   application runs, from the aggregated logs in HDFS once\n"
    "                                   it is done; --list: the containers, nodes and files\n"
    "       tarn yarn list              tarn's applications, newest first\n"
    "       tarn yarn submit [--name N] [--queue Q] [--memory MB] [--vcores N]\n"
    "                [--max-attempts N] [--file PATH[#NAME]]... [--env KEY=VALUE]...\n"
    "                [--secret KEY=VALUE]... [--wait] [--timeout S] -- COMMAND [ARG...]\n"
    "                                   stage tarn (with its libraries) and the files in HDFS\n"
    "                                   and run COMMAND as the ApplicationMaster ('tarn ...'\n"
    "                                   runs the staged binary); prints the application id;\n"
    "                                   --wait follows it and exits 0 only when it SUCCEEDED\n"
    "options: -Dkey=value (tarn.hadoop.conf-dir, tarn.hdfs.user, or any Hadoop key such as\n"
    "         yarn.resourcemanager.webapp.address), -v, -q\n"
    "The cluster's addresses come from $HADOOP_CONF_DIR/yarn-site.xml (see docs/YARN.md).\n";

int Usage(const std::string& message) {
  std::fprintf(stderr, "tarn yarn: %s\n%s", message.c_str(), kYarnUsage);
  return kExitUsage;
}

int Fail(const Status& s) { return app::Fail("tarn yarn", s); }

std::string Time(int64_t ms) {
  if (ms <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

int Status(ResourceManagerClient& rm, const std::string& id, const std::string& staging_root) {
  auto app = rm.GetApplication(id);
  if (!app.ok()) return Fail(app.status());
  const AppReport& a = *app;
  std::printf("application   %s\n", a.id.c_str());
  std::printf("name          %s (type %s, queue %s, user %s)\n", a.name.c_str(), a.type.c_str(),
              a.queue.c_str(), a.user.c_str());
  std::printf("state         %s\n", a.state.c_str());
  std::printf("final status  %s\n", a.final_status.c_str());
  std::printf("progress      %.0f%%\n", a.progress);
  std::printf("started       %s\n", Time(a.started_ms).c_str());
  std::printf("finished      %s\n", Time(a.finished_ms).c_str());
  if (!a.tracking_url.empty()) std::printf("tracking URL  %s\n", a.tracking_url.c_str());
  if (!a.Done()) std::printf("containers    %lld\n", static_cast<long long>(a.running_containers));
  auto attempts = rm.GetAttempts(id);
  if (attempts.ok()) {
    for (const auto& t : *attempts) {
      std::printf("attempt %-5lld %s on %s (started %s)\n", static_cast<long long>(t.id),
                  t.container_id.empty() ? "-" : t.container_id.c_str(),
                  t.node_http_address.empty() ? "-" : t.node_http_address.c_str(),
                  Time(t.started_ms).c_str());
    }
  }
  if (!a.diagnostics.empty()) std::printf("diagnostics   %s\n", a.diagnostics.c_str());
  // Model servers a training job left running (its coordinator records them).
  if (!staging_root.empty() && !a.Done()) {
    auto servers = data::FileSystemFor(staging_root);
    if (servers.ok()) {
      auto text =
          (*servers)->ReadAll(data::ChildPath(data::ChildPath(staging_root, id), "serving.json"));
      auto j = text.ok() ? data::Json::parse(*text, nullptr, false) : data::Json();
      if (j.is_object()) {
        for (const auto& s : j.value("servers", data::Json::array())) {
          std::printf("model server  http://%s/\n", s.get<std::string>().c_str());
        }
      }
    }
  }
  return 0;
}

int Kill(ResourceManagerClient& rm, const std::string& id) {
  auto app = rm.Kill(id);
  if (!app.ok()) return Fail(app.status());
  std::printf("%s: %s (final status %s)\n", id.c_str(), app->state.c_str(),
              app->final_status.c_str());
  return 0;
}

struct LogsOptions {
  long long attempt = 0;  // 0: the last
  std::string container;  // "": the AM container of the attempt; "all": every container
  std::string file;       // "": stdout and stderr; "all": every file
  bool list = false;      // the containers and their files, no contents
  int64_t wait_s = 0;     // tarn.yarn.logs-wait-s
};

bool WantedFile(const std::string& only_file, const std::string& name) {
  return only_file == "all" ||
         (only_file.empty() ? (name == "stdout" || name == "stderr") : name == only_file);
}

// A log file's header, as `yarn logs` prints one.
std::string LogHeader(const std::string& container, const std::string& node, const char* type,
                      const std::string& file, uint64_t length, int64_t modified_ms) {
  const std::string first = "Container: " + container + " on " + node;
  std::string h = first + "\nLogAggregationType: " + type + "\n" + std::string(first.size(), '=') +
                  "\nLogType:" + file + "\n";
  if (modified_ms > 0) h += "LogLastModifiedTime:" + Time(modified_ms) + "\n";
  return h + "LogLength:" + std::to_string(length) + "\nLogContents:\n";
}

std::string LogFooter(const std::string& file, bool ended_with_newline) {
  return std::string(ended_with_newline ? "" : "\n") + "End of LogType:" + file + "\n\n";
}

struct NodeTarget {
  std::string container_id;
  std::string node_http_address;
  std::string node;  // host:port of the NodeManager, when known
};

// The containers to read from their NodeManagers: the chosen attempt's AM container, or the
// one named, or (all) every container the RM lists for the attempts.
Result<std::vector<NodeTarget>> NodeTargets(ResourceManagerClient& rm, const std::string& id,
                                            const std::vector<cluster::yarn::AppAttempt>& attempts,
                                            const cluster::yarn::AppAttempt& chosen,
                                            const LogsOptions& o) {
  std::vector<NodeTarget> out;
  if (o.container.empty() && !o.list) {
    if (chosen.container_id.empty() || chosen.node_http_address.empty()) {
      return NotFound("attempt " + std::to_string(chosen.id) + " of " + id +
                      " names no AM container or node");
    }
    out.push_back({chosen.container_id, chosen.node_http_address, chosen.node_id});
    return out;
  }
  std::map<std::string, NodeTarget> found;
  for (const auto& t : attempts) {
    if (!t.container_id.empty() && !t.node_http_address.empty()) {
      found[t.container_id] = {t.container_id, t.node_http_address, t.node_id};
    }
    auto listed = rm.GetAttemptContainers(id, t);
    if (!listed.ok()) continue;  // an older RM, or a finished attempt: the AM container only
    for (const auto& c : *listed) {
      if (!c.node_http_address.empty()) {
        found[c.container_id] = {c.container_id, c.node_http_address, c.node_id};
      }
    }
  }
  for (auto& [cid, target] : found) {
    if (o.container.empty() || o.container == "all" || o.container == cid) {
      out.push_back(target);
    }
  }
  if (out.empty()) {
    return NotFound(o.container.empty() || o.container == "all"
                        ? id + " has no running container the ResourceManager knows of"
                        : "the ResourceManager knows no running container " + o.container + " of " +
                              id);
  }
  return out;
}

// Reads every target from its NodeManager, then prints (nothing when one fails).
tarn::Status PrintFromNodeManagers(ResourceManagerClient& rm,
                                   const std::vector<NodeTarget>& targets, const LogsOptions& o) {
  std::string out;
  for (const auto& t : targets) {
    const std::string node = t.node.empty() ? t.node_http_address : t.node;
    auto files = rm.ContainerLogFiles(t.node_http_address, t.container_id);
    if (!files.ok()) {
      return files.status().WithContext("the NodeManager " + t.node_http_address +
                                        " does not serve the logs of " + t.container_id);
    }
    std::sort(files->begin(), files->end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    if (o.list) out += "Container: " + t.container_id + " on " + node + " (NodeManager)\n";
    bool any = false;
    for (const auto& f : *files) {
      if (!WantedFile(o.list && o.file.empty() ? "all" : o.file, f.name)) continue;
      any = true;
      if (o.list) {
        out += "  " + f.name + " (" + std::to_string(f.size) + " bytes)\n";
        continue;
      }
      auto text = rm.ContainerLog(t.node_http_address, t.container_id, f.name);
      if (!text.ok()) return text.status();
      out += LogHeader(t.container_id, node, "LOCAL", f.name, text->size(), 0) + *text +
             LogFooter(f.name, text->empty() || text->back() == '\n');
    }
    if (!any && !o.list && o.container != "all") {
      return NotFound(o.file.empty() || o.list
                          ? t.container_id + " has no log files"
                          : t.container_id + " has no log file '" + o.file + "'");
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return Status::Ok();
}

// Reads the application's aggregated logs from HDFS and prints the chosen containers' files
// as they come. kNotFound when there are none, or none of the chosen container.
tarn::Status PrintAggregated(const net::HadoopConf& conf, const std::string& owner,
                             const std::string& id, const std::string& am_container,
                             const LogsOptions& o) {
  TARN_ASSIGN_OR_RETURN(auto nodes, cluster::yarn::FindAggregatedLogs(conf, owner, id));
  // --list: every container unless one is named.
  const std::string want_container = !o.container.empty() ? o.container
                                     : o.list             ? "all"
                                                          : am_container;
  std::vector<std::string> seen;
  bool matched = false, printed = false;
  for (const auto& n : nodes) {
    TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(n.path));
    TARN_ASSIGN_OR_RETURN(auto file, fs->OpenRead(n.path));
    TARN_ASSIGN_OR_RETURN(auto reader,
                          cluster::yarn::AggregatedLogReader::Open(std::move(file), id));
    std::string current, listed_container;
    uint64_t left = 0;
    bool newline = true;
    cluster::yarn::AggregatedLogVisitor v;
    v.want = [&](const std::string& container, const std::string& name, uint64_t length) {
      if (want_container != "all" && container != want_container) return false;
      matched = true;
      if (o.list) {
        if (listed_container != container) {
          std::printf("Container: %s on %s (aggregated, %s)\n", container.c_str(), n.node.c_str(),
                      n.path.c_str());
          listed_container = container;
        }
        if (WantedFile(o.file.empty() ? "all" : o.file, name)) {
          std::printf("  %s (%llu bytes)\n", name.c_str(), static_cast<unsigned long long>(length));
        }
        return false;
      }
      if (!WantedFile(o.file, name)) return false;
      printed = true;
      std::fputs(
          LogHeader(container, n.node, "AGGREGATED", name, length, n.modification_time_ms).c_str(),
          stdout);
      current = name;
      left = length;
      newline = true;
      if (length == 0) std::fputs(LogFooter(name, true).c_str(), stdout);
      return length > 0;
    };
    v.bytes = [&](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      left -= piece.size();
      newline = piece.back() == '\n';
      if (left == 0) std::fputs(LogFooter(current, newline).c_str(), stdout);
      return Status::Ok();
    };
    TARN_RETURN_IF_ERROR(reader->Scan(v));
    for (const auto& c : reader->containers()) seen.push_back(c.container_id);
  }
  if (!matched) {
    return NotFound("the aggregated logs of " + id + " hold no container " + want_container +
                    " (they hold " + (seen.empty() ? std::string("none") : Join(seen, ", ")) + ")");
  }
  std::fflush(stdout);
  if (!printed && !o.list && want_container != "all") {
    return NotFound("the aggregated logs of " + want_container + " hold no " +
                    (o.file.empty() ? std::string("stdout or stderr") : "file '" + o.file + "'"));
  }
  return Status::Ok();
}

// tarn yarn logs: from the NodeManagers while the application runs, from its aggregated logs in
// HDFS once it is done (or when a NodeManager cannot serve a file).
int Logs(ResourceManagerClient& rm, const net::HadoopConf& conf, const std::string& id,
         const LogsOptions& o) {
  auto app = rm.GetApplication(id);
  if (!app.ok()) return Fail(app.status());
  auto attempts = rm.GetAttempts(id);
  if (!attempts.ok()) return Fail(attempts.status());
  if (attempts->empty()) {
    return Fail(NotFound(id + " has no attempt yet (its AM container has not been started)"));
  }
  const cluster::yarn::AppAttempt* chosen = &attempts->back();
  if (o.attempt > 0) {
    chosen = nullptr;
    for (const auto& t : *attempts) {
      if (t.id == o.attempt) chosen = &t;
    }
    if (chosen == nullptr) {
      return Fail(NotFound(id + " has no attempt " + std::to_string(o.attempt)));
    }
  }
  // A finished application's NodeManagers upload its logs, then stop serving them.
  const auto uploading = [](const AppReport& a) {
    return a.log_aggregation_status == "NOT_START" || a.log_aggregation_status == "RUNNING";
  };
  if (app->Done() && uploading(*app)) {
    TARN_LOG(kInfo) << id << ": waiting (up to " << o.wait_s
                    << " s, tarn.yarn.logs-wait-s) for its NodeManagers to upload its logs";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.wait_s);
    while (uploading(*app) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      auto again = rm.GetApplication(id);
      if (!again.ok()) return Fail(again.status());
      app = std::move(again);
    }
  }
  const bool aggregation = app->log_aggregation_status != "DISABLED";
  TARN_LOG(kDebug) << id << ": " << app->state << ", log aggregation "
                   << (app->log_aggregation_status.empty() ? "(not reported)"
                                                           : app->log_aggregation_status);
  auto from_nodes = [&]() -> tarn::Status {
    TARN_ASSIGN_OR_RETURN(auto targets, NodeTargets(rm, id, *attempts, *chosen, o));
    return PrintFromNodeManagers(rm, targets, o);
  };
  if (app->Done() && aggregation) {
    tarn::Status hdfs = PrintAggregated(conf, app->user, id, chosen->container_id, o);
    if (hdfs.ok()) return 0;
    if (hdfs.code() != StatusCode::kNotFound) return Fail(hdfs);
    tarn::Status nodes = from_nodes();  // aggregation failed or was off for this application
    if (nodes.ok()) return 0;
    return Fail(tarn::Status(hdfs.code(), hdfs.message() + "; and " + nodes.message()));
  }
  tarn::Status nodes = from_nodes();
  if (nodes.ok()) return 0;
  if (!aggregation) {
    return Fail(
        nodes.WithContext("log aggregation is off (yarn.log-aggregation-enable), so once "
                          "a NodeManager drops a container's logs nothing else has them"));
  }
  TARN_LOG(kInfo) << nodes.message() << "; reading the aggregated logs in HDFS instead";
  tarn::Status hdfs = PrintAggregated(conf, app->user, id, chosen->container_id, o);
  if (hdfs.ok()) return 0;
  return Fail(tarn::Status(nodes.code(), nodes.message() + "; and " + hdfs.message()));
}

struct SubmitOptions {
  cluster::yarn::AmLaunch launch;
  bool wait = false;
  long long timeout_s = 0;
};

int Submit(ResourceManagerClient& rm, const net::HadoopConf& conf, const Settings& settings,
           SubmitOptions o) {
  auto root = cluster::yarn::StagingRoot(conf, settings.GetString("tarn.yarn.staging-dir"),
                                         rm.options().user);
  if (!root.ok()) return Fail(root.status());
  o.launch.staging_root = *root;
  o.launch.hdfs_uris = cluster::yarn::ExtraHdfsServers(settings);
  auto app = cluster::yarn::StageAndSubmit(rm, conf, o.launch);
  if (!app.ok()) return Fail(app.status());
  std::printf("%s\n", app->id.c_str());
  std::fflush(stdout);
  TARN_LOG(kInfo) << "submitted " << app->id << " (files in " << app->staging_dir << ")";
  if (!o.wait) return 0;
  auto done = rm.Follow(app->id, 1000, o.timeout_s * 1000, [](const AppReport& r) {
    TARN_LOG(kInfo) << r.id << ": " << r.state
                    << (r.final_status.empty() || r.final_status == "UNDEFINED"
                            ? ""
                            : " (" + r.final_status + ")");
  });
  if (!done.ok()) return Fail(done.status());
  std::printf("%s %s %s\n", done->id.c_str(), done->state.c_str(), done->final_status.c_str());
  if (done->final_status != "SUCCEEDED" && !done->diagnostics.empty()) {
    std::fprintf(stderr, "diagnostics: %s\n", done->diagnostics.c_str());
  }
  return done->final_status == "SUCCEEDED" ? 0 : 1;
}

// "KEY=VALUE" into map; false when there is no '='.
bool AddPair(const std::string& kv, std::map<std::string, std::string>* out) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  (*out)[kv.substr(0, eq)] = kv.substr(eq + 1);
  return true;
}

int List(ResourceManagerClient& rm) {
  auto apps = rm.ListApplications("TARN");
  if (!apps.ok()) return Fail(apps.status());
  std::printf("%-32s %-10s %-10s %-20s %s\n", "APPLICATION", "STATE", "FINAL", "STARTED", "NAME");
  for (const auto& a : *apps) {
    std::printf("%-32s %-10s %-10s %-20s %s\n", a.id.c_str(), a.state.c_str(),
                a.final_status.c_str(), Time(a.started_ms).c_str(), a.name.c_str());
  }
  return 0;
}

}  // namespace

int RunYarnCommand(int argc, char** argv) {
  // argv: tarn yarn SUBCOMMAND [APP_ID] [options]
  std::vector<std::string> positional, overrides;
  long long attempt = 0;
  std::string file;
  LogsOptions logs;
  SubmitOptions submit;
  bool submit_options = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {  // the rest is the ApplicationMaster's command
      submit.launch.argv.assign(argv + i + 1, argv + argc);
      break;
    }
    if (a == "--wait") {
      submit.wait = submit_options = true;
      continue;
    }
    if (a == "--name" || a == "--queue" || a == "--memory" || a == "--vcores" ||
        a == "--max-attempts" || a == "--env" || a == "--secret" || a == "--timeout") {
      if (i + 1 >= argc) return Usage("option " + a + " needs a value");
      const std::string v = argv[++i];
      submit_options = true;
      std::optional<long long> n;
      if (a == "--memory" || a == "--vcores" || a == "--max-attempts" || a == "--timeout") {
        n = ParseInt(v);
        if (!n || *n < (a == "--timeout" ? 0 : 1)) {
          return Usage(a + " needs a positive number, got '" + v + "'");
        }
      }
      if (a == "--name") submit.launch.name = v;
      if (a == "--queue") submit.launch.queue = v;
      if (a == "--memory") submit.launch.memory_mb = *n;
      if (a == "--vcores") submit.launch.vcores = static_cast<int>(*n);
      if (a == "--max-attempts") submit.launch.max_attempts = static_cast<int>(*n);
      if (a == "--timeout") submit.timeout_s = *n;
      if (a == "--env" && !AddPair(v, &submit.launch.environment)) {
        return Usage("--env needs KEY=VALUE, got '" + v + "'");
      }
      if (a == "--secret" && !AddPair(v, &submit.launch.secrets)) {
        return Usage("--secret needs KEY=VALUE, got '" + v + "'");
      }
      continue;
    }
    if (a == "-h" || a == "--help" || a == "help") {
      std::printf("%s", kYarnUsage);
      return 0;
    } else if (a.rfind("-D", 0) == 0 && a.size() > 2) {
      overrides.push_back(a.substr(2));
    } else if (ApplyVerbosityFlag(a)) {
    } else if (a == "--list") {
      logs.list = true;
    } else if (a == "--container") {
      if (i + 1 >= argc) return Usage("option " + a + " needs a value");
      logs.container = argv[++i];
      if (logs.container != "all" && logs.container.rfind("container_", 0) != 0) {
        return Usage("--container needs a container id (container_...) or 'all', got '" +
                     logs.container + "'");
      }
    } else if (a == "--attempt" || a == "--file") {
      if (i + 1 >= argc) return Usage("option " + a + " needs a value");
      const std::string v = argv[++i];
      if (a == "--file") {
        file = v;
        // submit: PATH[#NAME] (as Hadoop's -files)
        auto hash = v.find('#');
        std::string path = v.substr(0, hash);
        std::string name = hash == std::string::npos ? BaseName(path) : v.substr(hash + 1);
        submit.launch.files.emplace_back(name, path);
      } else {
        auto n = ParseInt(v);
        if (!n || *n < 1) return Usage("--attempt needs a positive number, got '" + v + "'");
        attempt = *n;
      }
    } else if (!a.empty() && a[0] == '-') {
      return Usage("unknown option " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty()) return Usage("which command?");
  const std::string sub = positional[0];
  const bool needs_id = sub == "status" || sub == "kill" || sub == "logs";
  if (!needs_id && sub != "list" && sub != "submit") {
    return Usage("unknown command '" + sub + "'");
  }
  if (needs_id && positional.size() != 2) return Usage(sub + " needs one APP_ID");
  if (!needs_id && positional.size() != 1) return Usage(sub + " takes no APP_ID");
  if (attempt > 0 && sub != "logs") return Usage("--attempt is an option of 'tarn yarn logs'");
  if ((logs.list || !logs.container.empty()) && sub != "logs") {
    return Usage("--container and --list are options of 'tarn yarn logs'");
  }
  if (!file.empty() && sub != "logs" && sub != "submit") {
    return Usage("--file is an option of 'tarn yarn logs' and 'tarn yarn submit'");
  }
  if (sub == "submit" && submit.launch.argv.empty()) {
    return Usage("submit needs the ApplicationMaster's command after --");
  }
  if (sub != "submit" && (submit_options || !submit.launch.argv.empty())) {
    return Usage("the options after '" + sub + "' belong to 'tarn yarn submit'");
  }
  const std::string id = needs_id ? positional[1] : "";
  if (needs_id && !ResourceManagerClient::IsApplicationId(id)) {
    return Usage("'" + id + "' is not an application id (application_<cluster>_<number>)");
  }

  auto settings = pipeline::LoadSettings(argv[0], overrides);
  if (!settings.ok()) return Fail(settings.status());
  if (tarn::Status k = net::ConfigureKerberos(*settings); !k.ok()) return Fail(k);
  if (tarn::Status t = net::ConfigureClusterTls(*settings); !t.ok()) return Fail(t);
  auto conf = net::HadoopConf::FromSettings(*settings);
  if (!conf.ok()) return Fail(conf.status());
  auto timeout = settings->GetInt("tarn.hdfs.timeout-s");
  if (!timeout.ok()) return Fail(timeout.status());
  ResourceManagerClient rm = ResourceManagerClient::FromConf(
      *conf, settings->GetString("tarn.hdfs.user"), static_cast<int>(*timeout * 1000));
  TARN_LOG(kDebug) << "ResourceManager at " << Join(rm.options().web_addresses, ", ") << " as user "
                   << rm.options().user;

  if (sub == "status") {
    auto root = cluster::yarn::StagingRoot(*conf, settings->GetString("tarn.yarn.staging-dir"),
                                           rm.options().user);
    return Status(rm, id, root.ok() ? *root : "");
  }
  if (sub == "kill") return Kill(rm, id);
  if (sub == "logs") {
    auto wait_s = settings->GetInt("tarn.yarn.logs-wait-s");
    if (!wait_s.ok()) return Fail(wait_s.status());
    logs.attempt = attempt;
    logs.file = file;
    logs.wait_s = std::max<int64_t>(0, *wait_s);
    return Logs(rm, *conf, id, logs);
  }
  if (sub == "submit") return Submit(rm, *conf, *settings, std::move(submit));
  return List(rm);
}

}  // namespace tarn::app
