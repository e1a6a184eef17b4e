#include "cluster/local_backend.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace tarn::cluster {

namespace {

class LocalBackend final : public Backend {
 public:
  explicit LocalBackend(std::string logs_dir) : logs_dir_(std::move(logs_dir)) {}
  ~LocalBackend() override { Shutdown(); }

  std::string name() const override { return "local"; }

  Result<int64_t> Launch(const LaunchSpec& spec) override {
    if (spec.argv.empty()) return InvalidArgument("a task needs a command line");
    const std::string log = logs_dir_ + "/" + spec.role + "-" + std::to_string(spec.index) + ".log";
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError("open " + log, errno);
    // Everything the child needs is prepared before fork: after it, only
    // async-signal-safe calls.
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
      std::string kv(*e);
      auto eq = kv.find('=');
      if (eq != std::string::npos && spec.env.count(kv.substr(0, eq))) continue;
      env_strings.push_back(kv);
    }
    for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = spec.argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    char banner[256];
    std::time_t now = std::time(nullptr);
    char when[64];
    std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
    int blen = std::snprintf(banner, sizeof(banner), "==== %s %s %d launched\n", when,
                             spec.role.c_str(), spec.index);
    (void)!::write(fd, banner, static_cast<size_t>(std::max(0, blen)));
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fd);
      return ErrnoError("fork", errno);
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the launcher died already
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(fd);
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t id = next_id_++;
    tasks_[id] = Task{pid, spec.role + " " + std::to_string(spec.index), false};
    waiters_.emplace_back([this, id, pid] { Wait(id, pid); });
    return id;
  }

  Status Kill(int64_t task) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tasks_.find(task);
    if (it == tasks_.end()) return NotFound("no task " + std::to_string(task));
    if (!it->second.exited) ::kill(it->second.pid, SIGKILL);
    return Status::Ok();
  }

  std::string Where(int64_t task) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tasks_.find(task);
    return it == tasks_.end() ? "?" : "pid " + std::to_string(it->second.pid);
  }

  void OnExit(std::function<void(const TaskExit&)> callback) override {
    std::lock_guard<std::mutex> lock(mu_);
    on_exit_ = std::move(callback);
  }

  void Shutdown() override {
    std::vector<std::thread> waiters;
    {
      std::lock_guard<std::mutex> lock(mu_);
      on_exit_ = nullptr;
      for (auto& [id, t] : tasks_) {
        if (!t.exited) ::kill(t.pid, SIGKILL);
      }
      waiters.swap(waiters_);
    }
    for (auto& w : waiters) w.join();
  }

 private:
  struct Task {
    pid_t pid;
    std::string what;
    bool exited;
  };

  void Wait(int64_t id, pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    TaskExit e;
    e.task = id;
    std::function<void(const TaskExit&)> cb;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& t = tasks_[id];
      t.exited = true;
      if (WIFSIGNALED(status)) {
        e.exit_code = 128 + WTERMSIG(status);
        e.describe = "pid " + std::to_string(pid) + " (" + t.what + ") killed by signal " +
                     std::to_string(WTERMSIG(status));
      } else {
        e.exit_code = WEXITSTATUS(status);
        e.describe = "pid " + std::to_string(pid) + " (" + t.what + ") exited with code " +
                     std::to_string(e.exit_code);
      }
      cb = on_exit_;
    }
    if (cb) cb(e);
  }

  std::string logs_dir_;
  mutable std::mutex mu_;
  std::map<int64_t, Task> tasks_;
  std::vector<std::thread> waiters_;
  std::function<void(const TaskExit&)> on_exit_;
  int64_t next_id_ = 1;
};

}  // namespace

std::unique_ptr<Backend> MakeLocalBackend(const std::string& logs_dir) {
  return std::make_unique<LocalBackend>(logs_dir);
}

}  // namespace tarn::cluster
