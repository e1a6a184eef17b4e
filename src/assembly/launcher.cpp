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
// takes a while to start), from the moment it lost the one it had.
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
  // of the AM writes its own address there), until kFindAmMs pass without an answer. A backup
  // may have waited in its call for days before that: the time counts from the loss.
  int64_t give_up_ms = 0;
  bool lost = false;
  Status last;
  const auto connect = [&](bool after_loss) -> Result<std::unique_ptr<net::RpcClient>> {
    while (true) {
      if (after_loss && !staging.empty()) {
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
                            net::Deadline::InMs(after_loss ? 5000 : 60000));
      if (conn.ok()) return std::make_unique<net::RpcClient>(std::move(*conn), 5000);
      if (conn.status().code() == StatusCode::kPermissionDenied) return conn.status();
      last = conn.status();
      if (!after_loss || staging.empty() || NowMs() > give_up_ms) {
        return last.WithContext("the assembly ApplicationMaster at " + am);
      }
      after_loss = true;
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
  // True when `why` is the loss of the AM and another attempt may still be found: then it
  // says so, waits a moment (a new attempt takes a while) and the caller connects again.
  const auto look_for_am = [&](const Status& why) {
    if (!ChannelLost(why) || staging.empty()) return false;
    if (!lost) {
      give_up_ms = NowMs() + kFindAmMs;
    } else if (NowMs() >= give_up_ms) {
      return false;
    }
    std::printf("launcher: lost the ApplicationMaster at %s (%s); looking for it\n", am.c_str(),
                why.message().c_str());
    std::fflush(stdout);
    lost = true;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return true;
  };
  while (true) {
    auto connected = connect(lost);
    // No AM at the address it was given (it died before this container started): its next
    // attempt is looked for as after a loss.
    if (!connected.ok() && !lost && look_for_am(connected.status())) continue;
    if (!connected.ok()) return connected.status();
    auto client = std::move(*connected);
    // Registered again with every AM it finds: a later attempt hears that it still waits.
    std::printf("launcher: %s (launch %lld) on %s registers with %s\n", o.instance.c_str(),
                static_cast<long long>(o.launch), host.c_str(), am.c_str());
    std::fflush(stdout);
    auto answer = client->Call(kCallRegister, reg.dump(), net::Deadline::InMs(kWaitMs));
    if (!answer.ok() && look_for_am(answer.status())) continue;
    if (!answer.ok()) return answer.status().WithContext("registering " + o.instance);
    lost = false;  // an AM answered: a later loss gets its own kFindAmMs
    auto r = Json::parse(*answer, nullptr, false);
    if (!r.is_object()) return Corrupt("the runner's registration answer is not JSON");
    data::JsonFields answered(&r, "the runner's registration answer", "");
    bool tf = false;
    int want = 0;
    int64_t identity = 0;
    TARN_RETURN_IF_ERROR(answered.GetBool("tf", &tf));
    TARN_RETURN_IF_ERROR(answered.GetInt("port", &want));
    TARN_RETURN_IF_ERROR(answered.GetInt64("identity", &identity));
    if (tf && !reserved) {
      // The task's port, held until just before the exec (TonY's reservation).
      auto s = want > 0 ? net::ListenTcp(host, want, 1) : net::ListenTcp(host, 0, 1);
      if (!s.ok() && want > 0) {
        std::printf("launcher: port %d is taken on %s (%s); another one\n", want, host.c_str(),
                    s.status().message().c_str());
        s = net::ListenTcp(host, 0, 1);
      }
      if (!s.ok()) return s.status().WithContext("reserving a TF port on " + host);
      const std::string address = host + ":" + std::to_string(net::LocalPort(*s));
      plan_request["address"] = address;
      reserved = std::move(*s);
      std::printf("launcher: TF task index %lld at %s; waiting for the cluster\n",
                  static_cast<long long>(identity), address.c_str());
      std::fflush(stdout);
    }
    plan_text = client->Call(kCallPlan, plan_request.dump(), net::Deadline::InMs(kWaitMs));
    if (!plan_text.ok() && look_for_am(plan_text.status())) continue;
    if (!plan_text.ok()) return plan_text.status().WithContext("the plan of " + o.instance);
    client->Close();
    break;
  }
  auto plan = Json::parse(*plan_text, nullptr, false);
  if (!plan.is_object()) return Corrupt("the runner's plan is not JSON");
  const char* kPlan = "the runner's plan";
  data::JsonFields planned(&plan, kPlan, "");
  std::string command;
  TARN_RETURN_IF_ERROR(planned.GetString("command", &command));
  TARN_ASSIGN_OR_RETURN(const Json* env, planned.GetObject("env"));
  std::vector<PlannedFile> files;
  if (const Json* list = data::JsonFind(plan, "files"); list != nullptr && !list->is_null()) {
    if (!list->is_array()) return InvalidArgument(std::string(kPlan) + ": files must be a list");
    for (size_t i = 0; i < list->size(); ++i) {
      const Json& item = (*list)[i];
      if (!item.is_object()) {
        return InvalidArgument(std::string(kPlan) + ": files[" + std::to_string(i) +
                               "] must be an object");
      }
      data::JsonFields f(&item, kPlan, "files[" + std::to_string(i) + "]");
      PlannedFile file;
      TARN_RETURN_IF_ERROR(f.GetString("path", &file.path));
      TARN_RETURN_IF_ERROR(f.GetString("content", &file.content));
      TARN_RETURN_IF_ERROR(f.GetString("src", &file.src));
      TARN_RETURN_IF_ERROR(f.GetBool("unpack", &file.unpack));
      files.push_back(std::move(file));
    }
  }
  TARN_RETURN_IF_ERROR(WritePlannedFiles(files, dir, JoinPath(log_dir, "stderr")));
  ::setenv("WORK_DIR", dir.c_str(), 1);
  ::setenv("LOG_DIR", log_dir.c_str(), 1);
  // The staged tarn binary, for commands that run tarn itself (the plan's env may override).
  if (auto self = RunningExecutable(); self.ok()) ::setenv(kTarnBinEnv, self->c_str(), 1);
  if (env != nullptr) {
    for (const auto& [k, v] : env->items()) {
      if (v.is_string()) ::setenv(k.c_str(), v.get<std::string>().c_str(), 1);
    }
  }
  std::printf("launcher: exec bash -c '%s'\n", command.c_str());
  std::fflush(stdout);
  reserved.reset();  // released just before the task binds it
  ::execl("/bin/bash", "bash", "-c", command.c_str(), static_cast<char*>(nullptr));
  return ErrnoError("exec /bin/bash", errno);
}

}  // namespace tarn::assembly
