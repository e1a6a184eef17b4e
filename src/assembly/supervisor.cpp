#include "assembly/supervisor.h"

#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "assembly/runner.h"
#include "cluster/local_backend.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "net/connection.h"
#include "net/hmac.h"
#include "net/rpc.h"

namespace tarn::assembly {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kLoopback = "127.0.0.1";

std::string UserName() {
  if (const char* u = std::getenv("USER"); u && *u) return u;
  if (passwd* pw = ::getpwuid(::getuid())) return pw->pw_name;
  return "tarn";
}

// The secret, readable by its owner only from the moment it exists.
Status WriteSecret(const std::string& path, const std::string& secret) {
  const mode_t old = ::umask(077);
  Status s = WriteFileAtomic(path, secret);
  ::umask(old);
  return s;
}

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

std::string AssemblyRoot(const Settings& settings) {
  std::string root = settings.GetString("tarn.assembly.dir");
  if (!root.empty()) return root;
  if (const char* home = std::getenv("TARN_HOME"); home && *home) {
    return JoinPath(home, "assembly");
  }
  const char* home = std::getenv("HOME");
  return JoinPath(JoinPath(home && *home ? home : "/tmp", ".tarn"), "assembly");
}

int SupervisorPid(const ServiceFolder& folder) {
  auto text = ReadFile(folder.supervisor());
  if (!text.ok()) return 0;
  auto j = Json::parse(*text, nullptr, false);
  if (!j.is_object()) return 0;
  return j.value("pid", 0);
}

Result<std::string> CallSupervisor(const ServiceFolder& folder, ControlCall call,
                                   const std::string& payload, int timeout_ms) {
  auto text = ReadFile(folder.supervisor());
  if (!text.ok()) return Unavailable("no supervisor runs for " + folder.dir);
  auto j = Json::parse(*text, nullptr, false);
  const int pid = j.is_object() ? j.value("pid", 0) : 0;
  const int port = j.is_object() ? j.value("port", 0) : 0;
  if (pid <= 0 || port <= 0 || ::kill(pid, 0) != 0) {
    return Unavailable("no supervisor runs for " + folder.dir);
  }
  TARN_ASSIGN_OR_RETURN(std::string secret, ReadFile(folder.secret()));
  const auto deadline = net::Deadline::InMs(timeout_ms);
  auto conn = net::Dial(kLoopback, port, secret, net::ConnectionOptions{}, deadline);
  if (!conn.ok())
    return conn.status().WithContext("the supervisor (pid " + std::to_string(pid) + ")");
  net::RpcClient client(std::move(*conn), 2000);
  return client.Call(call, payload, deadline);
}

bool SupervisorRunning(const ServiceFolder& folder) {
  return CallSupervisor(folder, kCallStatus, "", 5000).ok();
}

Status PersistFlex(const ServiceFolder& folder, const std::string& component, int64_t count) {
  TARN_ASSIGN_OR_RETURN(std::string text, ReadFile(folder.spec()));
  auto j = Json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("components") || !j["components"].is_array()) {
    return Corrupt(folder.spec() + ": not an assembly file any more");
  }
  for (auto& c : j["components"]) {
    if (c.is_object() && c.value("name", "") == component) c["number_of_containers"] = count;
  }
  return WriteFileAtomic(folder.spec(), j.dump(2) + "\n");
}

Result<int> StartDetachedSupervisor(const ServiceFolder& folder,
                                    const std::vector<std::string>& argv, int timeout_ms) {
  (void)RemoveAll(folder.supervisor());
  const std::string log = folder.log();
  // Its own session: it outlives the command and its terminal, like an AM.
  TARN_ASSIGN_OR_RETURN(const pid_t pid, SpawnLogged(argv, log, /*new_session=*/true));
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      // A service can run to its end before this looks: its status.json says it ran.
      if (PathExists(folder.status())) return static_cast<int>(pid);
      std::string tail;
      auto text = ReadFile(log);
      if (text.ok()) {
        tail = text->size() > 2000 ? text->substr(text->size() - 2000) : *text;
      }
      return Internal("the supervisor exited at once (status " +
                      std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                      "): " + std::string(Trim(tail)));
    }
    if (SupervisorPid(folder) == pid && SupervisorRunning(folder)) return static_cast<int>(pid);
    SleepMs(100);
  }
  return DeadlineExceeded("the supervisor (pid " + std::to_string(pid) +
                          ") did not answer within " + std::to_string(timeout_ms / 1000) +
                          " s; see " + log);
}

int RunSupervisor(const ServiceFolder& folder, const SupervisorOptions& options) {
  // SIGTERM and SIGINT stop the service (its instances are killed, it ends
  // STOPPED); blocked here so that every thread leaves them to the watcher.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto service = LoadService(folder.spec());
  if (!service.ok()) {
    TARN_LOG(kError) << service.status().message();
    return 2;
  }
  auto secret = net::NewJobSecret();
  if (!secret.ok()) {
    TARN_LOG(kError) << secret.status().message();
    return 1;
  }
  Status s = WriteSecret(folder.secret(), *secret);
  if (!s.ok()) {
    TARN_LOG(kError) << s.message();
    return 1;
  }
  const std::string logs = JoinPath(folder.dir, "logs");
  s = MakeDirs(logs);
  if (!s.ok()) {
    TARN_LOG(kError) << s.message();
    return 1;
  }
  auto backend = cluster::MakeLocalBackend(logs);
  RunnerOptions ro;
  if (auto self = RunningExecutable(); self.ok()) ro.tarn_binary = *self;
  ro.state_dir = folder.dir;
  ro.user = UserName();
  ro.source = folder.spec();
  ro.docker = options.docker;
  ro.docker_available = NeedsDocker(*service) && DockerAvailable(options.docker);
  Runner runner(*service, *backend, ro);
  const std::string name = service->name;

  auto server = net::RpcServer::Start(
      kLoopback, 0, *secret, net::ConnectionOptions{},
      [&](const net::RpcServer::Request& r, std::shared_ptr<net::RpcServer::Responder> out) {
        if (r.type == kCallStatus) {
          out->Reply(runner.StatusJson());
        } else if (r.type == kCallFlex) {
          auto flex = ParseFlexRequest(r.payload);
          if (!flex.ok()) {
            out->Fail(flex.status());
            return;
          }
          const std::string& component = flex->component;
          auto n = runner.Flex(component, flex->count);
          if (!n.ok()) {
            out->Fail(n.status());
            return;
          }
          Status p = PersistFlex(folder, component, *n);
          if (!p.ok()) {
            TARN_LOG(kWarn) << "saving the flexed count: " << p.message();
          }
          out->Reply(Json{{"component", component}, {"number_of_containers", *n}}.dump());
        } else if (r.type == kCallStop) {
          runner.Stop("stopped by 'tarn assembly stop'");
          out->Reply("{}");
        } else {
          out->Fail(InvalidArgument("unknown control request " + std::to_string(r.type)));
        }
      });
  if (!server.ok()) {
    TARN_LOG(kError) << server.status().message();
    return 1;
  }
  s = runner.Start();
  if (!s.ok()) {
    TARN_LOG(kError) << name << ": " << s.message();
    (*server)->Stop();
    return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  s = WriteFileAtomic(
      folder.supervisor(),
      Json{{"pid", static_cast<int>(::getpid())}, {"port", (*server)->port()}}.dump() + "\n");
  if (!s.ok()) {
    TARN_LOG(kError) << s.message();
    runner.Stop("the supervisor could not record its address");
  }
  TARN_LOG(kInfo) << name << ": supervisor pid " << ::getpid() << ", control port "
                  << (*server)->port();
  std::thread watcher([&runner, signals] {
    int sig = 0;
    // After the end this only wakes the thread (Stop is then a no-op).
    if (sigwait(&signals, &sig) == 0) {
      runner.Stop(std::string("the supervisor got signal ") + std::to_string(sig));
    }
  });
  const ServiceState end = runner.Wait();
  (void)RemoveAll(folder.supervisor());
  (*server)->Stop();
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  backend->Shutdown();
  TARN_LOG(kInfo) << name << ": ended " << ServiceStateName(end);
  return runner.exit_code();
}

}  // namespace tarn::assembly
