#include "assembly/launcher.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "assembly/runner.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "data/json_fields.h"
#include "net/connection.h"
#include "net/deadline.h"
#include "net/rpc.h"
#include "net/socket.h"

namespace tarn::assembly {

namespace {

using Json = nlohmann::ordered_json;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string ThisHost() {
  if (std::string nm = Env("NM_HOST"); !nm.empty()) return nm;
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0 || !name[0]) return "localhost";
  return name;
}

std::string WorkingFolder() {
  char cwd[4096];
  return ::getcwd(cwd, sizeof(cwd)) ? cwd : ".";
}

// A backup may wait for days; the call itself is retried by the RPC client.
constexpr int64_t kWaitMs = int64_t{30} * 24 * 3600 * 1000;
// How long the launcher looks for an ApplicationMaster that answers (a dead one's next attempt
// takes a while to start), from its last answer.
constexpr int64_t kFindAmMs = int64_t{10} * 60 * 1000;

// An error of the channel rather than the runner's answer: the AM is gone (or starting).
bool ChannelLost(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kIoError;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<std::string> ReadAmAddress(const std::string& staging_dir) {
  const std::string path = data::ChildPath(staging_dir, "am.json");
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(path));
  auto text = fs->ReadAll(path);
  if (!text.ok()) return Unavailable("no ApplicationMaster has recorded its address in " + path);
  auto j = Json::parse(*text, nullptr, false);
  std::string host;
  int port = 0;
  data::JsonFields f(j.is_object() ? &j : nullptr, path, "");
  if (!j.is_object() || !f.GetString("host", &host).ok() || !f.GetInt("port", &port).ok() ||
      host.empty() || port <= 0 || port > 65535) {
    return Corrupt(path + ": no host and port");
  }
  return host + ":" + std::to_string(port);
}

Status RunLauncher(const LauncherOptions& o) {
  std::string am = o.am;
  {
    std::string am_host;
    int am_port = 0;
    TARN_RETURN_IF_ERROR(net::SplitHostPort(am, &am_host, &am_port).WithContext("--am"));
  }
  const std::string host = o.host.empty() ? ThisHost() : o.host;
  const std::string dir = WorkingFolder();
  std::string log_dir = Env("LOG_DIRS");
  if (const size_t comma = log_dir.find(','); comma != std::string::npos) log_dir.resize(comma);
  if (log_dir.empty()) log_dir = dir;
  const std::string staging = Env("TARN_YARN_STAGING_DIR");

  // The AM that answers: --am first; once it is lost, the one am.json names (a later attempt
  // of the AM writes its own address there), until kFindAmMs pass without an answer.
  int64_t give_up_ms = NowMs() + kFindAmMs;
  Status last;
  const auto connect = [&](bool lost) -> Result<std::unique_ptr<net::RpcClient>> {
    while (true) {
      if (lost && !staging.empty()) {
        auto found = ReadAmAddress(staging);
        if (found.ok() && *found != am) {
          std::printf("launcher: the ApplicationMaster is now at %s\n", found->c_str());
          std::fflush(stdout);
          am = *found;
        } else if (!found.ok() && found.status().code() != StatusCode::kUnavailable) {
          last = found.status();
        }
      }
      std::string am_host;
      int am_port = 0;
      TARN_RETURN_IF_ERROR(net::SplitHostPort(am, &am_host, &am_port));
      auto conn = net::Dial(am_host, am_port, o.secret, net::ConnectionOptions{},
                            net::Deadline::InMs(lost ? 5000 : 60000));
      if (conn.ok()) return std::make_unique<net::RpcClient>(std::move(*conn), 5000);
      if (conn.status().code() == StatusCode::kPermissionDenied) return conn.status();
      last = conn.status();
      if (!lost || staging.empty() || NowMs() > give_up_ms) {
        return last.WithContext("the assembly ApplicationMaster at " + am);
      }
      lost = true;
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  };

  const Json id = {{"instance", o.instance}, {"launch", o.launch}};
  Json reg = id;
  reg["host"] = host;
  reg["log_dir"] = log_dir;
  Json plan_request = id;
  std::optional<net::Socket> reserved;
  Result<std::string> plan_text = Unavailable("no plan yet");
  bool lost = false;
  while (true) {
    TARN_ASSIGN_OR_RETURN(auto client, connect(lost));
    // Registered again with every AM it finds: a later attempt hears that it still waits.
    std::printf("launcher: %s (launch %lld) on %s registers with %s\n", o.instance.c_str(),
                static_cast<long long>(o.launch), host.c_str(), am.c_str());
    std::fflush(stdout);
    auto answer = client->Call(kCallRegister, reg.dump(), net::Deadline::InMs(kWaitMs));
    if (!answer.ok() && ChannelLost(answer.status()) && !staging.empty() && NowMs() < give_up_ms) {
      std::printf("launcher: lost the ApplicationMaster at %s (%s); looking for it\n", am.c_str(),
                  answer.status().message().c_str());
      std::fflush(stdout);
      lost = true;
      std::this_thread::sleep_for(std::chrono::seconds(1));  // a new attempt takes a while
      continue;
    }
    if (!answer.ok()) return answer.status().WithContext("registering " + o.instance);
    give_up_ms = NowMs() + kFindAmMs;
    auto r = Json::parse(*answer, nullptr, false);
    if (!r.is_object()) return Corrupt("the runner's registration answer is not JSON");
    if (r.value("tf", false) && !reserved) {
      // The task's port, held until just before the exec (TonY's reservation).
      const int want = r.value("port", 0);
      auto s = want > 0 ? net::ListenTcp(host, want, 1) : net::ListenTcp(host, 0, 1);
      if (!s.ok() && want > 0) {
        std::printf("launcher: port %d is taken on %s (%s); another one\n", want, host.c_str(),
                    s.status().message().c_str());
        s = net::ListenTcp(host, 0, 1);
      }
      if (!s.ok()) return s.status().WithContext("reserving a TF port on " + host);
      plan_request["address"] = host + ":" + std::to_string(net::LocalPort(*s));
      reserved = std::move(*s);
      std::printf("launcher: TF task index %lld at %s; waiting for the cluster\n",
                  static_cast<long long>(r.value("identity", int64_t{0})),
                  plan_request["address"].get<std::string>().c_str());
      std::fflush(stdout);
    }
    plan_text = client->Call(kCallPlan, plan_request.dump(), net::Deadline::InMs(kWaitMs));
    if (!plan_text.ok() && ChannelLost(plan_text.status()) && !staging.empty() &&
        NowMs() < give_up_ms) {
      std::printf("launcher: lost the ApplicationMaster at %s (%s); looking for it\n", am.c_str(),
                  plan_text.status().message().c_str());
      std::fflush(stdout);
      lost = true;
      std::this_thread::sleep_for(std::chrono::seconds(1));  // a new attempt takes a while
      continue;
    }
    if (!plan_text.ok()) return plan_text.status().WithContext("the plan of " + o.instance);
    client->Close();
    break;
  }
  auto plan = Json::parse(*plan_text, nullptr, false);
  if (!plan.is_object()) return Corrupt("the runner's plan is not JSON");
  std::vector<PlannedFile> files;
  const Json planned = plan.value("files", Json::array());
  for (const auto& f : planned) {
    files.push_back(PlannedFile{f.value("path", ""), f.value("content", ""), f.value("src", ""),
                                f.value("unpack", false)});
  }
  TARN_RETURN_IF_ERROR(WritePlannedFiles(files, dir, JoinPath(log_dir, "stderr")));
  ::setenv("WORK_DIR", dir.c_str(), 1);
  ::setenv("LOG_DIR", log_dir.c_str(), 1);
  // The staged tarn binary, for commands that run tarn itself (the plan's env may override).
  if (auto self = RunningExecutable(); self.ok()) ::setenv(kTarnBinEnv, self->c_str(), 1);
  const Json env = plan.value("env", Json::object());  // items() must not outlive it
  for (const auto& [k, v] : env.items()) {
    if (v.is_string()) ::setenv(k.c_str(), v.get<std::string>().c_str(), 1);
  }
  const std::string command = plan.value("command", "");
  std::printf("launcher: exec bash -c '%s'\n", command.c_str());
  std::fflush(stdout);
  reserved.reset();  // released just before the task binds it
  ::execl("/bin/bash", "bash", "-c", command.c_str(), static_cast<char*>(nullptr));
  return ErrnoError("exec /bin/bash", errno);
}

}  // namespace tarn::assembly
