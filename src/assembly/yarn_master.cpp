#include "assembly/yarn_master.h"

#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "assembly/launcher.h"
#include "assembly/runner.h"
#include "assembly/runner_state.h"
#include "cluster/yarn/credentials.h"
#include "cluster/yarn/delegation_tokens.h"  // for ExtraHdfsServers
#include "cluster/yarn/rm_rest.h"
#include "cluster/yarn/staging.h"
#include "cluster/yarn/yarn_backend.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "data/json_fields.h"
#include "net/connection.h"
#include "net/hadoop_conf.h"
#include "net/hmac.h"
#include "net/rpc.h"

namespace tarn::assembly {

namespace {

using Json = nlohmann::ordered_json;

std::string HostName() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0 || !name[0]) return "localhost";
  return name;
}

std::string UserName() {
  if (const char* u = std::getenv("HADOOP_USER_NAME"); u && *u) return u;
  if (const char* u = std::getenv("USER"); u && *u) return u;
  if (passwd* pw = ::getpwuid(::getuid())) return pw->pw_name;
  return "tarn";
}

// Writes a small file in HDFS (or any file system) whole: a temporary, then a rename.
Status WriteRemote(const std::string& path, const std::string& text) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(path));
  const std::string tmp = path + ".tmp";
  TARN_RETURN_IF_ERROR(fs->WriteAll(tmp, text));
  return fs->Rename(tmp, path);
}

Result<std::string> ReadRemote(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(path));
  return fs->ReadAll(path);
}

cluster::yarn::FinalApplicationStatus FinalStatusOf(ServiceState s) {
  using cluster::yarn::FinalApplicationStatus;
  switch (s) {
    case ServiceState::kSucceeded:
      return FinalApplicationStatus::kSucceeded;
    case ServiceState::kStopped:
      return FinalApplicationStatus::kKilled;
    default:
      return FinalApplicationStatus::kFailed;
  }
}

}  // namespace

int RunYarnMaster(const YarnMasterOptions& o) {
  // SIGTERM (YARN's kill, then SIGKILL) stops the service.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto service = LoadService(o.spec);
  if (!service.ok()) {
    TARN_LOG(kError) << service.status().message();
    return 2;
  }
  auto secret = cluster::yarn::ReadSecretFromEnvironment(kAssemblySecretAlias);
  if (!secret.ok()) {
    TARN_LOG(kError) << "the AM's credentials hold no control secret: "
                     << secret.status().message();
    return 1;
  }
  const char* staging_env = std::getenv("TARN_YARN_STAGING_DIR");
  const std::string staging = staging_env ? staging_env : "";
  auto backend_options = cluster::yarn::YarnBackendOptionsFromEnvironment();
  if (!backend_options.ok()) {
    TARN_LOG(kError) << backend_options.status().message();
    return 1;
  }
  cluster::yarn::YarnBackend backend(std::move(*backend_options));
  const bool any = o.bind_host.empty() || o.bind_host == "auto";
  const std::string advertised = any ? HostName() : o.bind_host;

  std::atomic<Runner*> runner_ptr{nullptr};
  const ServiceFolder folder{"."};
  auto server = net::RpcServer::Start(
      any ? "0.0.0.0" : o.bind_host, 0, *secret, net::ConnectionOptions{},
      [&](const net::RpcServer::Request& r, std::shared_ptr<net::RpcServer::Responder> out) {
        Runner* runner = runner_ptr.load();
        if (runner == nullptr) {
          out->Fail(Unavailable("the assembly runner is starting"));
          return;
        }
        auto reply = [out](Result<std::string> answer) {
          if (answer.ok()) {
            out->Reply(std::move(*answer));
          } else {
            out->Fail(answer.status());
          }
        };
        switch (r.type) {
          case kCallStatus:
            out->Reply(runner->StatusJson());
            return;
          case kCallFlex: {
            auto flex = ParseFlexRequest(r.payload);
            if (!flex.ok()) {
              out->Fail(flex.status());
              return;
            }
            const std::string& component = flex->component;
            auto n = runner->Flex(component, flex->count);
            if (!n.ok()) {
              out->Fail(n.status());
              return;
            }
            out->Reply(Json{{"component", component}, {"number_of_containers", *n}}.dump());
            return;
          }
          case kCallStop:
            runner->Stop("stopped by 'tarn assembly stop'");
            out->Reply("{}");
            return;
          case kCallRegister:
            runner->Register(r.payload, reply);
            return;
          case kCallPlan:
            runner->Plan(r.payload, reply);
            return;
          default:
            out->Fail(InvalidArgument("unknown control request " + std::to_string(r.type)));
        }
      });
  if (!server.ok()) {
    TARN_LOG(kError) << server.status().message();
    return 1;
  }
  const std::string address = advertised + ":" + std::to_string((*server)->port());
  cluster::yarn::RegisterRequest reg;
  reg.host = advertised;
  reg.rpc_port = (*server)->port();
  auto registered = backend.Register(reg);
  if (!registered.ok()) {
    TARN_LOG(kError) << registered.status().message();
    return 1;
  }
  if (!staging.empty()) {
    Status s = WriteRemote(data::ChildPath(staging, "am.json"),
                           Json{{"host", advertised}, {"port", (*server)->port()}}.dump() + "\n");
    if (!s.ok()) {
      TARN_LOG(kWarn) << "cannot record the AM's address: " << s.message();
    }
  }
  RunnerOptions ro;
  ro.state_dir = ".";
  ro.host = advertised;
  ro.user = UserName();
  ro.source = o.spec;
  ro.docker_available = true;  // YARN's Docker runtime runs DOCKER components
  ro.remote = true;
  ro.application_id = backend.attempt().app.ToString();
  ro.attempt = backend.attempt().attempt;
  ro.launcher = {"tarn", "assembly", "launcher", "--am", address};
  if (!staging.empty()) {
    // The state first: the next attempt resumes from it; then the status the commands read.
    ro.on_change = [staging] {
      for (const char* name : {"state.json", "status.json"}) {
        auto text = ReadFile(name);
        if (!text.ok()) continue;
        const std::string remote = data::ChildPath(staging, name);
        Status s = WriteRemote(remote, *text);
        if (!s.ok()) {
          TARN_LOG(kWarn) << "copying " << name << " to " << remote << ": " << s.message();
        }
      }
    };
  }
  std::set<std::string> adopted;
  ro.adopt = [&backend, &adopted](const std::string& container, const std::string& role,
                                  int index) -> Result<int64_t> {
    TARN_ASSIGN_OR_RETURN(int64_t task, backend.Adopt(container, role, index));
    adopted.insert(container);
    return task;
  };
  // A later attempt goes on from the state the earlier one left in the staging folder.
  std::optional<RunnerState> saved;
  if (ro.attempt > 1 && !staging.empty()) {
    const std::string path = data::ChildPath(staging, "state.json");
    // Only a state that is not there starts the service over (its kept containers are
    // stopped below); a file system that does not answer now is retried, and then this attempt
    // ends without unregistering, so that YARN starts the next one with the containers kept.
    auto text = ReadRemote(path);
    for (int retry = 1; !text.ok() && text.status().code() != StatusCode::kNotFound && retry <= 5;
         ++retry) {
      TARN_LOG(kWarn) << "attempt " << ro.attempt << ": reading " << path << ": "
                      << text.status().message() << "; again in " << retry * 2 << " s";
      std::this_thread::sleep_for(std::chrono::seconds(retry * 2));
      text = ReadRemote(path);
    }
    if (!text.ok() && text.status().code() != StatusCode::kNotFound) {
      TARN_LOG(kError) << "attempt " << ro.attempt << " cannot read the earlier attempt's state "
                       << path << ": " << text.status().message()
                       << "; ending this attempt for the next one";
      (*server)->Stop();
      return 1;
    }
    if (text.ok()) {
      auto parsed = ParseRunnerState(*text, path);
      if (!parsed.ok()) {
        TARN_LOG(kError) << parsed.status().message();
        (void)backend.Unregister(cluster::yarn::FinalApplicationStatus::kFailed,
                                 "attempt " + std::to_string(ro.attempt) +
                                     " cannot go on: " + parsed.status().message());
        (*server)->Stop();
        return 1;
      }
      saved = std::move(*parsed);
    } else {
      TARN_LOG(kWarn) << "attempt " << ro.attempt << ": no state of the earlier attempt ("
                      << text.status().message() << "); the service starts over";
    }
  }
  Runner runner(*service, backend, ro);
  backend.OnFatal([&runner](const Status& s) {
    runner.Stop("the ResourceManager connection is lost: " + s.message());
  });
  Status s = saved ? runner.Resume(*saved) : runner.Start();
  // Containers of an earlier attempt that no instance of the state owns (allocated just
  // before that attempt died, or of a state that was not written): stopped, so that no
  // instance runs twice.
  for (const auto& c : backend.PreviousContainers()) {
    const std::string id = c.id.ToString();
    if (adopted.count(id)) continue;
    auto stray = backend.Adopt(id, "stray", 0);
    if (stray.ok()) {
      TARN_LOG(kWarn) << id << " of an earlier attempt belongs to no instance; stopping it";
      (void)backend.Kill(*stray);
    }
  }
  if (!s.ok()) {
    TARN_LOG(kError) << service->name << ": " << s.message();
    (void)backend.Unregister(cluster::yarn::FinalApplicationStatus::kFailed, s.message());
    (*server)->Stop();
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  runner_ptr = &runner;
  TARN_LOG(kInfo) << service->name << ": assembly ApplicationMaster, control channel " << address;
  std::thread watcher([&runner, signals] {
    int sig = 0;
    if (sigwait(&signals, &sig) == 0) {
      runner.Stop(std::string("the ApplicationMaster got signal ") + std::to_string(sig));
    }
  });
  const ServiceState end = runner.Wait();
  if (ro.on_change) ro.on_change();  // the final status in HDFS before YARN says it ended
  backend.Shutdown();
  // The channel closes before YARN hears of the end: once the application has ended, no AM
  // answers and the commands read the final status.json.
  runner_ptr = nullptr;
  (*server)->Stop();
  auto status = Json::parse(runner.StatusJson(), nullptr, false);
  const std::string diagnostics = status.is_object() ? status.value("diagnostics", "") : "";
  s = backend.Unregister(FinalStatusOf(end), diagnostics);
  if (!s.ok()) {
    TARN_LOG(kWarn) << "unregistering from YARN: " << s.message();
  }
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  TARN_LOG(kInfo) << service->name << ": ended " << ServiceStateName(end);
  return runner.exit_code();
}

std::string YarnServiceFile(const ServiceFolder& folder) { return folder.dir + "/yarn.json"; }

Result<YarnService> ReadYarnService(const ServiceFolder& folder) {
  TARN_ASSIGN_OR_RETURN(std::string text, ReadFile(YarnServiceFile(folder)));
  auto j = Json::parse(text, nullptr, false);
  YarnService app;
  data::JsonFields f(&j, YarnServiceFile(folder), "");
  if (!j.is_object() || !f.GetString("application_id", &app.application_id).ok() ||
      !f.GetString("staging_dir", &app.staging_dir).ok() || app.application_id.empty()) {
    return Corrupt(YarnServiceFile(folder) + ": not a YARN service record");
  }
  return app;
}

namespace {

Result<cluster::yarn::ResourceManagerClient> RmClient(const Settings& settings,
                                                      net::HadoopConf* conf_out = nullptr) {
  TARN_ASSIGN_OR_RETURN(auto conf, net::HadoopConf::FromSettings(settings));
  TARN_ASSIGN_OR_RETURN(long long timeout_s, settings.GetInt("tarn.hdfs.timeout-s"));
  if (conf_out) *conf_out = conf;
  return cluster::yarn::ResourceManagerClient::FromConf(conf, settings.GetString("tarn.hdfs.user"),
                                                        static_cast<int>(timeout_s * 1000));
}

}  // namespace

Result<int> AmMaxAttempts(const Service& service, const Settings& settings) {
  auto it = service.configuration.properties.find(kAmRestartMaxAttempts);
  if (it != service.configuration.properties.end()) {
    auto n = ParseInt(Trim(it->second));
    if (!n || *n < 1 || *n > 1000) {
      return InvalidArgument("service " + service.name + ": configuration.properties." +
                             kAmRestartMaxAttempts + " needs a count from 1 to 1000, got '" +
                             it->second + "'");
    }
    return static_cast<int>(*n);
  }
  TARN_ASSIGN_OR_RETURN(long long n, settings.GetInt("tarn.assembly.am-max-attempts"));
  if (n < 1 || n > 1000) {
    return InvalidArgument("tarn.assembly.am-max-attempts needs a count from 1 to 1000, got " +
                           std::to_string(n));
  }
  return static_cast<int>(n);
}

namespace {

// The secret, readable by its owner only from the moment it exists.
Status WriteSecret(const std::string& path, const std::string& secret) {
  const mode_t old = ::umask(077);
  Status s = WriteFileAtomic(path, secret);
  ::umask(old);
  return s;
}

}  // namespace

Result<std::string> YarnStagingRoot(const Settings& settings) {
  net::HadoopConf conf;
  TARN_ASSIGN_OR_RETURN(auto rm, RmClient(settings, &conf));
  return cluster::yarn::StagingRoot(conf, settings.GetString("tarn.yarn.staging-dir"),
                                    rm.options().user);
}

Result<YarnService> SubmitYarnService(const ServiceFolder& folder, const Service& service,
                                      const Settings& settings,
                                      const std::vector<std::string>& overrides, int timeout_ms) {
  (void)overrides;
  net::HadoopConf conf;
  TARN_ASSIGN_OR_RETURN(auto rm, RmClient(settings, &conf));
  TARN_ASSIGN_OR_RETURN(std::string secret, net::NewJobSecret());
  TARN_RETURN_IF_ERROR(WriteSecret(folder.secret(), secret));
  cluster::yarn::AmLaunch launch;
  launch.name = service.name;
  launch.queue = service.queue.empty() ? "default" : service.queue;
  launch.type = "TARN-ASSEMBLY";
  TARN_ASSIGN_OR_RETURN(long long am_memory, settings.GetInt("tarn.assembly.am-memory-mb"));
  launch.memory_mb = am_memory;
  launch.vcores = 1;
  // Later attempts go on from the runner's state with the containers kept, as Hadoop's
  // ServiceMaster does: the service's yarn.service.am-restart.max-attempts, else tarn's
  // default (the ResourceManager caps both at yarn.resourcemanager.am.max-attempts).
  TARN_ASSIGN_OR_RETURN(launch.max_attempts, AmMaxAttempts(service, settings));
  launch.keep_containers = true;
  const std::string host = settings.GetString("tarn.cluster.host");
  launch.argv = {
      "tarn", "assembly", "am", "--spec", "spec.json", "--host", host.empty() ? "auto" : host};
  launch.files.push_back({"spec.json", folder.spec()});
  launch.secrets[kAssemblySecretAlias] = secret;
  TARN_ASSIGN_OR_RETURN(launch.staging_root,
                        cluster::yarn::StagingRoot(
                            conf, settings.GetString("tarn.yarn.staging-dir"), rm.options().user));
  for (const auto& uri : cluster::yarn::ExtraHdfsServers(settings)) launch.hdfs_uris.push_back(uri);
  TARN_ASSIGN_OR_RETURN(auto app, cluster::yarn::StageAndSubmit(rm, conf, launch));
  YarnService out{app.id, app.staging_dir};
  TARN_RETURN_IF_ERROR(WriteFileAtomic(
      YarnServiceFile(folder),
      Json{{"application_id", out.application_id}, {"staging_dir", out.staging_dir}}.dump(2) +
          "\n"));
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    if (CallYarnMaster(folder, out, kCallStatus, "", 5000).ok()) return out;
    auto r = rm.GetApplication(app.id);
    if (r.ok() && (r->state == "FINISHED" || r->state == "FAILED" || r->state == "KILLED")) {
      if (YarnStatusFile(out).ok()) return out;  // it ran to its end already
      return FailedPrecondition("YARN application " + app.id + " ended " + r->state + " " +
                                r->final_status + " before its ApplicationMaster answered" +
                                (r->diagnostics.empty() ? "" : ": " + r->diagnostics) +
                                " ('tarn yarn logs " + app.id + "' shows its log)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return DeadlineExceeded("the ApplicationMaster of YARN application " + app.id +
                          " did not answer within " + std::to_string(timeout_ms / 1000) + " s");
}

Result<std::string> CallYarnMaster(const ServiceFolder& folder, const YarnService& app,
                                   uint16_t call, const std::string& payload, int timeout_ms) {
  // Read at every call: a later attempt of the AM records its own address there.
  auto am = ReadAmAddress(app.staging_dir);
  if (!am.ok() && am.status().code() == StatusCode::kUnavailable) {
    return Unavailable("the ApplicationMaster of " + app.application_id +
                       " has not recorded its address");
  }
  if (!am.ok()) return am.status();
  std::string host;
  int port = 0;
  TARN_RETURN_IF_ERROR(net::SplitHostPort(*am, &host, &port));
  TARN_ASSIGN_OR_RETURN(std::string secret, ReadFile(folder.secret()));
  const auto deadline = net::Deadline::InMs(timeout_ms);
  auto conn = net::Dial(host, port, secret, net::ConnectionOptions{}, deadline);
  if (!conn.ok()) {
    const std::string where = "the ApplicationMaster of " + app.application_id + " at " + host +
                              ":" + std::to_string(port);
    if (conn.status().code() == StatusCode::kPermissionDenied) {  // a wrong control.secret
      return conn.status().WithContext(where + " (with " + folder.secret() + ")");
    }
    return Unavailable(where + " does not answer: " + conn.status().message());
  }
  net::RpcClient client(std::move(*conn), 2000);
  return client.Call(call, payload, deadline);
}

Result<std::string> YarnStatusFile(const YarnService& app) {
  return ReadRemote(data::ChildPath(app.staging_dir, "status.json"));
}

Result<YarnAppState> GetYarnAppState(const YarnService& app, const Settings& settings) {
  TARN_ASSIGN_OR_RETURN(auto rm, RmClient(settings));
  TARN_ASSIGN_OR_RETURN(auto r, rm.GetApplication(app.application_id));
  return YarnAppState{r.state, r.final_status, r.diagnostics};
}

Result<YarnAppState> WaitYarnAppEnd(const YarnService& app, const Settings& settings,
                                    int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    TARN_ASSIGN_OR_RETURN(YarnAppState s, GetYarnAppState(app, settings));
    if (s.finished()) return s;
    if (std::chrono::steady_clock::now() > until) {
      return DeadlineExceeded("YARN application " + app.application_id + " is still " + s.state +
                              " after " + std::to_string(timeout_ms / 1000) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace tarn::assembly
