// tarn assembly launch|status|flex|stop|start|destroy|list: YARN service assembly files
// (Hadoop's "Yarnfile") run on this machine, in the shape of `yarn app -launch|-status|...`.
// A launch starts a detached supervisor (`tarn assembly supervise`, src/assembly/supervisor.h)
// that owns the instances; the other commands talk to it over its authenticated loopback
// channel, or read the state it left in the service's folder once it has ended.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "assembly/launcher.h"
#include "assembly/runner.h"
#include "assembly/spec.h"
#include "assembly/supervisor.h"
#include "assembly/yarn_master.h"
#include "assembly_services.h"
#include "cli.h"
#include "cluster/yarn/credentials.h"  // for ReadSecretFromEnvironment
#include "cluster/yarn/staging.h"      // for RemoveStaging
#include "commands.h"
#include "common/files.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/strings.h"
#include "pipeline/model_set.h"         // for LoadSettings
#include "pipeline/shifu_tensorflow.h"  // for RunShifuTask
#include "runtime/launcher.h"           // for SelfExecutable

namespace tarn::app {
namespace {

using assembly::ServiceFolder;
using Json = nlohmann::ordered_json;

// Hadoop's LauncherExitCodes, which `yarn app` returns for these cases.
constexpr int kExitNotFound = 44;              // EXIT_NOT_FOUND
constexpr int kExitCommandArgumentError = 40;  // EXIT_COMMAND_ARGUMENT_ERROR

constexpr const char* kAssemblyUsage =
    "usage: tarn assembly validate FILE [--json]\n"
    "                                   what tarn will run, or the first error with its field\n"
    "       tarn assembly launch FILE [--name NAME] [--backend local|yarn]\n"
    "                                   validate FILE and run it on this machine: a detached\n"
    "                                   supervisor owns its instances (prints its folder);\n"
    "                                   --backend yarn: on YARN, tarn's ApplicationMaster\n"
    "                                   runs them in containers (HADOOP_CONF_DIR)\n"
    "       tarn assembly status NAME [--json]\n"
    "                                   the service's and each instance's state, host, ports,\n"
    "                                   restarts, exit code, runtime and log\n"
    "       tarn assembly flex NAME --component C N|+N|-N\n"
    "                                   set (or change by) a component's instance count\n"
    "       tarn assembly stop NAME     kill its instances; the saved spec stays\n"
    "       tarn assembly start NAME    run a stopped or ended service again\n"
    "       tarn assembly destroy NAME  remove a service that does not run\n"
    "       tarn assembly list          every service with its state\n"
    "options: -Dkey=value (tarn.assembly.dir, tarn.assembly.docker, tarn.assembly.am-memory-mb,\n"
    "tarn.assembly.am-max-attempts, tarn.cluster.host), -v, -q\n"
    "Exit status as 'yarn app': 0 done, 44 no such service, 40 stop of a service that\n"
    "is not running, 1 a failure, 2 a bad file or usage.\n"
    "With --via services, launch|status|flex|stop|start|destroy go to YARN's own service\n"
    "framework instead ('tarn assembly launch --via services --help'). See docs/ASSEMBLY.md.\n";

int Usage(const std::string& message) {
  std::fprintf(stderr, "tarn assembly: %s\n%s", message.c_str(), kAssemblyUsage);
  return kExitUsage;
}

int Fail(const Status& s) { return app::Fail("tarn assembly", s); }

int NotFoundExit(const std::string& name) {
  std::fprintf(stderr, "tarn assembly: Service %s not found\n", name.c_str());
  return kExitNotFound;
}

std::vector<std::string> SuperviseArgv(const std::string& dir,
                                       const std::vector<std::string>& overrides) {
  auto self = runtime::SelfExecutable();
  std::vector<std::string> argv = {self.ok() ? *self : "tarn", "assembly", "supervise", "--dir",
                                   dir};
  for (const auto& o : overrides) argv.push_back("-D" + o);
  return argv;
}

int Spawn(const ServiceFolder& folder, const std::string& name,
          const std::vector<std::string>& overrides) {
  auto pid = assembly::StartDetachedSupervisor(folder, SuperviseArgv(folder.dir, overrides));
  if (!pid.ok()) return Fail(pid.status());
  std::printf("Service %s started: supervisor pid %d, folder %s\n", name.c_str(), *pid,
              folder.dir.c_str());
  return 0;
}

bool OnYarn(const ServiceFolder& folder) { return PathExists(assembly::YarnServiceFile(folder)); }

int SubmitToYarn(const ServiceFolder& folder, const assembly::Service& service,
                 const Settings& settings, const std::vector<std::string>& overrides) {
  auto app = assembly::SubmitYarnService(folder, service, settings, overrides);
  if (!app.ok()) return Fail(app.status());
  std::printf("Service %s submitted: YARN application %s, folder %s\n", service.name.c_str(),
              app->application_id.c_str(), folder.dir.c_str());
  return 0;
}

int Launch(const std::string& root, const std::string& file, const std::string& name_override,
           const Settings& settings, const std::vector<std::string>& overrides,
           const std::string& backend) {
  auto text = ReadFile(file);
  if (!text.ok()) return Fail(text.status());
  std::string spec_text = *text;
  if (!name_override.empty()) {
    // The name given wins over the file's, as `yarn app -launch NAME FILE`; it is
    // validated with the rest.
    auto j = Json::parse(spec_text, nullptr, false);
    if (j.is_object()) {
      j["name"] = name_override;
      spec_text = j.dump(2) + "\n";
    }
  }
  auto service = assembly::ParseService(spec_text, file);
  if (!service.ok()) return Fail(service.status());
  const std::string docker = settings.GetString("tarn.assembly.docker");
  const bool yarn = backend == "yarn";
  // On YARN the NodeManagers' Docker runtime runs DOCKER components.
  Status runnable = assembly::CheckRunnable(
      *service, file,
      yarn || (assembly::NeedsDocker(*service) && assembly::DockerAvailable(docker)));
  if (!runnable.ok()) return Fail(runnable);
  ServiceFolder folder{JoinPath(root, service->name)};
  if (PathExists(folder.dir)) {
    const bool running = assembly::SupervisorRunning(folder);
    std::fprintf(stderr,
                 "tarn assembly: Failed to create service %s, because it already exists%s\n",
                 service->name.c_str(),
                 running ? " (it is running)."
                         : ". Start it with 'tarn assembly start', or destroy it first.");
    return kExitFailure;
  }
  Status s = MakeDirs(folder.dir);
  if (s.ok()) s = WriteFileAtomic(folder.spec(), spec_text);
  if (!s.ok()) return Fail(s);
  if (yarn) {
    const int rc = SubmitToYarn(folder, *service, settings, overrides);
    if (rc != 0 && !OnYarn(folder)) (void)RemoveAll(folder.dir);  // nothing was submitted
    return rc;
  }
  return Spawn(folder, service->name, overrides);
}

// One control call to whoever runs the service: its YARN ApplicationMaster or its supervisor.
Result<std::string> CallService(const ServiceFolder& folder, uint16_t call,
                                const std::string& payload, int timeout_ms = 10000) {
  if (OnYarn(folder)) {
    TARN_ASSIGN_OR_RETURN(auto app, assembly::ReadYarnService(folder));
    return assembly::CallYarnMaster(folder, app, call, payload, timeout_ms);
  }
  return assembly::CallSupervisor(folder, static_cast<assembly::ControlCall>(call), payload,
                                  timeout_ms);
}

bool Running(const ServiceFolder& folder) {
  return CallService(folder, assembly::kCallStatus, "", 5000).ok();
}

// With `settings`, a status.json that an AM left unfinished (it died, and YARN gave it no
// further attempt) is completed with the application's end at the ResourceManager.
Result<std::string> CurrentStatus(const ServiceFolder& folder, const Settings* settings = nullptr) {
  if (OnYarn(folder)) {
    auto live = CallService(folder, assembly::kCallStatus, "");
    if (live.ok()) return live;
    TARN_ASSIGN_OR_RETURN(auto app, assembly::ReadYarnService(folder));
    auto text = assembly::YarnStatusFile(app);
    if (!text.ok() || settings == nullptr) return text;
    auto j = Json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("state") || !j["state"].is_string()) return text;
    const std::string state = j["state"].get<std::string>();
    if (state == "SUCCEEDED" || state == "FAILED" || state == "STOPPED") return text;
    auto rm = assembly::GetYarnAppState(app, *settings);
    if (!rm.ok() || !rm->finished()) return text;
    j["state"] = rm->final_status == "SUCCEEDED" ? "SUCCEEDED"
                 : rm->final_status == "KILLED"  ? "STOPPED"
                                                 : "FAILED";
    j["diagnostics"] = "YARN application " + app.application_id + " ended " + rm->state + " " +
                       rm->final_status + " without an ApplicationMaster recording its end" +
                       (rm->diagnostics.empty() ? "" : ": " + rm->diagnostics);
    return j.dump(2) + "\n";
  }
  auto live = assembly::CallSupervisor(folder, assembly::kCallStatus, "");
  if (live.ok()) return live;
  return ReadFile(folder.status());
}

std::string Cell(const Json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "-";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

void PrintStatus(const Json& s) {
  std::printf("service %s (version %s): %s", Cell(s, "name").c_str(), Cell(s, "version").c_str(),
              Cell(s, "state").c_str());
  if (s.contains("exit_code")) std::printf(", exit code %s", Cell(s, "exit_code").c_str());
  if (s.contains("application_id")) {
    std::printf(", YARN application %s", Cell(s, "application_id").c_str());
  }
  std::printf("\n");
  if (s.contains("diagnostics")) std::printf("  %s\n", Cell(s, "diagnostics").c_str());
  std::printf("%-12s %-16s %-20s %-9s %-10s %-14s %-8s %-5s %s\n", "COMPONENT", "INSTANCE", "STATE",
              "RUNTIME", "HOST", "PORTS", "RESTARTS", "EXIT", "LOG");
  for (const auto& c : s.value("components", Json::array())) {
    const std::string comp = c.value("name", "") + " (" + c.value("state", "") + ")";
    bool first = true;
    for (const auto& i : c.value("containers", Json::array())) {
      std::vector<std::string> ports;
      for (const auto& p : i.value("ports", Json::array())) ports.push_back(p.dump());
      std::string name = i.value("component_instance_name", "");
      if (i.value("backup", false)) name += " (backup)";
      if (i.contains("replaced")) name += " (for " + i["replaced"].get<std::string>() + ")";
      std::printf("%-12s %-16s %-20s %-9s %-10s %-14s %-8s %-5s %s\n",
                  first ? c.value("name", "").c_str() : "", name.c_str(), Cell(i, "state").c_str(),
                  Cell(i, "runtime").c_str(), Cell(i, "host").c_str(),
                  ports.empty() ? "-" : Join(ports, ",").c_str(), Cell(i, "restarts").c_str(),
                  Cell(i, "exit_code").c_str(), Cell(i, "log").c_str());
      if (i.contains("image")) {
        std::string where = "image " + Cell(i, "image");
        if (i.contains("container_name")) where += ", container " + Cell(i, "container_name");
        std::printf("%-12s %-16s in a Docker container: %s\n", "", "", where.c_str());
      }
      first = false;
    }
    if (first) std::printf("%-12s (no instances)\n", comp.c_str());
  }
}

int StatusCommand(const ServiceFolder& folder, const std::string& name, bool json,
                  const Settings& settings) {
  if (!PathExists(folder.dir)) return NotFoundExit(name);
  auto text = CurrentStatus(folder, &settings);
  if (!text.ok()) return Fail(text.status());
  if (json) {
    std::fputs(text->c_str(), stdout);
    return 0;
  }
  auto j = Json::parse(*text, nullptr, false);
  if (!j.is_object()) return Fail(Corrupt(folder.status() + " is not JSON"));
  PrintStatus(j);
  return 0;
}

std::string StateOf(const ServiceFolder& folder) {
  auto text = CurrentStatus(folder);
  if (!text.ok()) return "SAVED";  // launched never got as far as a status
  auto j = Json::parse(*text, nullptr, false);
  return j.is_object() ? j.value("state", "?") : "?";
}

int Flex(const ServiceFolder& folder, const std::string& name, const std::string& component,
         const std::string& count) {
  if (!PathExists(folder.dir)) return NotFoundExit(name);
  auto parsed = assembly::ParseFlexCount(count);
  if (!parsed.ok()) return Usage(parsed.status().message());
  const bool yarn = OnYarn(folder);
  if (!yarn && !Running(folder)) {
    std::fprintf(stderr,
                 "tarn assembly: %s is at %s state, flex can only be invoked when service is "
                 "running\n",
                 name.c_str(), StateOf(folder).c_str());
    return kExitFailure;
  }
  auto answer = CallService(folder, assembly::kCallFlex,
                            Json{{"component", component}, {"count", count}}.dump());
  if (!answer.ok() && yarn && answer.status().code() == StatusCode::kUnavailable) {
    std::fprintf(stderr,
                 "tarn assembly: %s is at %s state, flex can only be invoked when service is "
                 "running\n",
                 name.c_str(), StateOf(folder).c_str());
    return kExitFailure;
  }
  if (!answer.ok()) {
    if (answer.status().code() == StatusCode::kNotFound) {
      std::fprintf(stderr, "tarn assembly: %s\n", answer.status().message().c_str());
      return kExitNotFound;
    }
    return Fail(answer.status());
  }
  auto j = Json::parse(*answer, nullptr, false);
  if (OnYarn(folder) && j.is_object()) {  // the supervisor saves it itself
    Status p = assembly::PersistFlex(folder, component, j.value("number_of_containers", 0));
    if (!p.ok()) std::fprintf(stderr, "tarn assembly: saving the count: %s\n", p.message().c_str());
  }
  std::printf("Service %s: component %s flexed to %s instances\n", name.c_str(), component.c_str(),
              j.is_object() ? Cell(j, "number_of_containers").c_str() : "?");
  return 0;
}

bool WaitUntilGone(int pid, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    if (pid <= 0 || ::kill(pid, 0) != 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

int Stop(const ServiceFolder& folder, const std::string& name, const Settings& settings) {
  if (!PathExists(folder.dir)) return NotFoundExit(name);
  if (OnYarn(folder)) {
    auto app = assembly::ReadYarnService(folder);
    if (!app.ok()) return Fail(app.status());
    if (!Running(folder)) {
      std::fprintf(stderr, "tarn assembly: Service %s is not running (%s)\n", name.c_str(),
                   StateOf(folder).c_str());
      return kExitCommandArgumentError;
    }
    auto answer = CallService(folder, assembly::kCallStop, "");
    if (!answer.ok()) return Fail(answer.status());
    auto end = assembly::WaitYarnAppEnd(*app, settings, 120000);
    if (!end.ok()) return Fail(end.status());
    std::printf("Stopped service %s (YARN application %s %s)\n", name.c_str(),
                app->application_id.c_str(), end->final_status.c_str());
    return 0;
  }
  const int pid = assembly::SupervisorPid(folder);
  if (!assembly::SupervisorRunning(folder)) {
    std::fprintf(stderr, "tarn assembly: Service %s is not running (%s)\n", name.c_str(),
                 StateOf(folder).c_str());
    return kExitCommandArgumentError;
  }
  auto answer = assembly::CallSupervisor(folder, assembly::kCallStop, "");
  if (!answer.ok()) return Fail(answer.status());
  if (!WaitUntilGone(pid, 60000)) {
    return Fail(DeadlineExceeded("the supervisor (pid " + std::to_string(pid) +
                                 ") did not end within 60 s; see " + folder.log()));
  }
  std::printf("Stopped service %s\n", name.c_str());
  return 0;
}

int Start(const ServiceFolder& folder, const std::string& name, const Settings& settings,
          const std::vector<std::string>& overrides) {
  if (!PathExists(folder.spec())) return NotFoundExit(name);
  if (Running(folder)) {
    std::fprintf(stderr, "tarn assembly: Service %s is already running\n", name.c_str());
    return kExitFailure;
  }
  // A fresh run of the saved spec: the instances start from <component>-0 again; the last
  // run's folders and status are kept as *.previous (the one before is dropped).
  for (const char* stale : {"instances", "logs", "status.json"}) {
    const std::string path = JoinPath(folder.dir, stale);
    if (!PathExists(path)) continue;
    const std::string previous = path + ".previous";
    Status s = RemoveAll(previous);
    if (s.ok()) s = RenamePath(path, previous);
    if (!s.ok()) return Fail(s);
  }
  if (OnYarn(folder)) {  // a new application runs the saved spec
    auto service = assembly::LoadService(folder.spec());
    if (!service.ok()) return Fail(service.status());
    return SubmitToYarn(folder, *service, settings, overrides);
  }
  return Spawn(folder, name, overrides);
}

int Destroy(const ServiceFolder& folder, const std::string& name, const Settings& settings) {
  if (!PathExists(folder.dir)) return NotFoundExit(name);
  if (OnYarn(folder)) {
    auto app = assembly::ReadYarnService(folder);
    if (!app.ok()) return Fail(app.status());
    auto state = assembly::GetYarnAppState(*app, settings);
    if (Running(folder) || (state.ok() && !state->finished())) {
      std::fprintf(stderr,
                   "tarn assembly: Failed to destroy service %s, because it is still running.\n",
                   name.c_str());
      return kExitFailure;
    }
    Status removed = cluster::yarn::RemoveStaging(app->staging_dir);
    if (!removed.ok()) return Fail(removed);
  }
  if (assembly::SupervisorRunning(folder)) {
    std::fprintf(stderr,
                 "tarn assembly: Failed to destroy service %s, because it is still running.\n",
                 name.c_str());
    return kExitFailure;
  }
  Status s = RemoveAll(folder.dir);
  if (!s.ok()) return Fail(s);
  std::printf("Successfully destroyed service %s\n", name.c_str());
  return 0;
}

int List(const std::string& root) {
  // PID: the supervisor's on this machine; on YARN the application's id.
  std::printf("%-24s %-10s %-8s %s\n", "SERVICE", "STATE", "PID/APP", "FOLDER");
  auto names = ListDirectory(root);
  if (!names.ok()) return 0;  // no service yet
  for (const auto& n : *names) {
    ServiceFolder folder{JoinPath(root, n)};
    if (!PathExists(folder.spec())) continue;
    std::string where = "-";
    if (OnYarn(folder)) {
      auto app = assembly::ReadYarnService(folder);
      where = app.ok() ? app->application_id : "?";
    } else if (assembly::SupervisorRunning(folder)) {
      where = std::to_string(assembly::SupervisorPid(folder));
    }
    std::printf("%-24s %-10s %-8s %s\n", n.c_str(), StateOf(folder).c_str(), where.c_str(),
                folder.dir.c_str());
  }
  return 0;
}

}  // namespace

int RunAssemblyCommand(int argc, char** argv) {
  // argv: tarn assembly SUBCOMMAND [ARG] [options]
  const std::vector<std::string> words(argv + 2, argv + argc);
  if (!words.empty() && words[0] == "validate") {
    return RunAssemblyValidate({words.begin() + 1, words.end()});
  }
  // In a YARN container of `tarn train --yarn`'s shifu-tensorflow roles: what
  // shifu-tensorflow's task executor does around the script (pipeline/shifu_tensorflow.h).
  if (!words.empty() && words[0] == "shifu-task") {
    pipeline::ShifuTaskOptions o;
    size_t i = 1;
    for (; i < words.size() && words[i] != "--"; ++i) {
      if (words[i] == "--model-out" && i + 1 < words.size()) {
        o.model_out = words[++i];
      } else if (!ApplyVerbosityFlag(words[i])) {
        return Usage("shifu-task: unknown option " + words[i] +
                     " (usage: shifu-task [--model-out URI] -- COMMAND...)");
      }
    }
    if (i < words.size()) o.command.assign(words.begin() + i + 1, words.end());
    auto settings = pipeline::LoadSettings(argv[0], {});  // the file systems (HDFS)
    if (!settings.ok()) return Fail(settings.status());
    return pipeline::RunShifuTask(o);
  }
  if (std::find(words.begin(), words.end(), "--via") != words.end()) {
    return RunAssemblyViaServices(words);
  }
  std::vector<std::string> positional, overrides;
  std::string name_override, component, dir, backend = "local", host, spec = "spec.json", am,
                                             instance, launch;
  bool json = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help" || a == "help") {
      std::printf("%s", kAssemblyUsage);
      return 0;
    } else if (a.rfind("-D", 0) == 0 && a.size() > 2) {
      overrides.push_back(a.substr(2));
    } else if (ApplyVerbosityFlag(a)) {
    } else if (a == "--json") {
      json = true;
    } else if (a == "--name" || a == "--component" || a == "--dir" || a == "--backend" ||
               a == "--host" || a == "--spec" || a == "--am" || a == "--instance" ||
               a == "--launch") {
      if (i + 1 >= argc) return Usage("option " + a + " needs a value");
      std::string* target = a == "--name"        ? &name_override
                            : a == "--component" ? &component
                            : a == "--dir"       ? &dir
                            : a == "--backend"   ? &backend
                            : a == "--host"      ? &host
                            : a == "--spec"      ? &spec
                            : a == "--am"        ? &am
                            : a == "--instance"  ? &instance
                                                 : &launch;
      *target = argv[++i];
    } else if (a.size() > 1 && a[0] == '-' && !(a[1] >= '0' && a[1] <= '9')) {
      return Usage("unknown option " + a);
    } else {
      positional.push_back(a);  // "-1" is a flex count
    }
  }
  if (positional.empty()) return Usage("which command?");
  const std::string sub = positional[0];
  auto settings = pipeline::LoadSettings(argv[0], overrides);
  if (!settings.ok()) return Fail(settings.status());
  if (sub == "launcher") {  // in a container of a service on YARN (launcher.h)
    assembly::LauncherOptions o;
    o.am = am;
    o.instance = instance;
    auto n = ParseInt(launch);
    if (am.empty() || instance.empty() || !n) {
      return Usage("launcher needs --am HOST:PORT --instance NAME --launch N");
    }
    o.launch = *n;
    auto secret = cluster::yarn::ReadSecretFromEnvironment(assembly::kAssemblySecretAlias);
    if (!secret.ok()) return Fail(secret.status().WithContext("the container's credentials"));
    o.secret = *secret;
    return Fail(assembly::RunLauncher(o));  // returns only on an error
  }
  if (sub == "am") {  // the ApplicationMaster of a service on YARN (yarn_master.h)
    assembly::YarnMasterOptions o;
    o.spec = spec;
    o.bind_host = host;
    return assembly::RunYarnMaster(o);
  }
  if (sub == "supervise") {
    if (dir.empty()) return Usage("supervise needs --dir");
    assembly::SupervisorOptions o;
    o.docker = settings->GetString("tarn.assembly.docker");
    return assembly::RunSupervisor(ServiceFolder{dir}, o);
  }
  const std::string root = assembly::AssemblyRoot(*settings);
  if (sub == "list") {
    if (positional.size() != 1) return Usage("list takes no argument");
    return List(root);
  }
  if (positional.size() < 2) return Usage(sub + " needs " + (sub == "launch" ? "FILE" : "NAME"));
  if (sub == "launch") {
    if (positional.size() != 2) return Usage("launch takes one FILE");
    if (backend != "local" && backend != "yarn") {
      return Usage("--backend is local or yarn, not '" + backend + "'");
    }
    return Launch(root, positional[1], name_override, *settings, overrides, backend);
  }
  if (!name_override.empty()) return Usage("--name is an option of launch");
  if (backend != "local") return Usage("--backend is an option of launch");
  const std::string name = positional[1];
  if (name.find('/') != std::string::npos || name.empty() || name[0] == '.') {
    return Usage("'" + name + "' is not a service name");
  }
  ServiceFolder folder{JoinPath(root, name)};
  if (sub == "flex") {
    if (component.empty() || positional.size() != 3) {
      return Usage("usage: tarn assembly flex NAME --component C N|+N|-N");
    }
    return Flex(folder, name, component, positional[2]);
  }
  if (positional.size() != 2) return Usage(sub + " takes one NAME");
  if (json && sub != "status") return Usage("--json is an option of status");
  if (sub == "status") return StatusCommand(folder, name, json, *settings);
  if (sub == "stop") return Stop(folder, name, *settings);
  if (sub == "start") return Start(folder, name, *settings, overrides);
  if (sub == "destroy") return Destroy(folder, name, *settings);
  return Usage("unknown command '" + sub + "'");
}

}  // namespace tarn::app
