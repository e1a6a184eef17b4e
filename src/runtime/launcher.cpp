#include "runtime/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "common/strings.h"
#include "runtime/protocol.h"

namespace tarn::runtime {

Result<std::string> SelfExecutable() {
  std::vector<char> buf(4096);
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return ErrnoError("readlink /proc/self/exe", errno);
  return std::string(buf.data(), static_cast<size_t>(n));
}

Status RunCoordinatorProcess(const std::string& tarn_binary, const std::string& job_path,
                             const std::string& secret, const std::string& log_path) {
  int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return ErrnoError("open " + log_path, errno);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    ::close(log);
    return ErrnoError("pipe", errno);
  }
  std::vector<std::string> args = {tarn_binary, "node", "--role", "coordinator", "--job", job_path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string env_secret = std::string(kSecretEnv) + "=" + secret;
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork", errno);
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::putenv(env_secret.data());
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  // Everything goes to the log; with -q only warnings and errors reach the terminal.
  const bool quiet = Quiet();
  std::string line;  // quiet: the line being relayed
  auto relay = [&](std::string_view text) {
    if (!quiet) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      return;
    }
    for (char c : text) {
      line.push_back(c);
      if (c != '\n') continue;
      if (StartsWith(line, "warning: ") || StartsWith(line, "error: ") ||
          StartsWith(line, "tarn: ")) {
        std::fwrite(line.data(), 1, line.size(), stdout);
      }
      line.clear();
    }
  };
  char buf[4096];
  while (true) {
    ssize_t n = ::read(pipe_fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    relay(std::string_view(buf, static_cast<size_t>(n)));
    std::fflush(stdout);
    (void)!::write(log, buf, static_cast<size_t>(n));
  }
  if (!line.empty()) relay("\n");
  ::close(pipe_fds[0]);
  ::close(log);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return Unavailable("the coordinator (pid " + std::to_string(pid) + ") was killed by signal " +
                       std::to_string(WTERMSIG(status)) +
                       "; its last checkpoint is complete: set train.isContinuous to true and "
                       "rerun 'tarn train' to resume");
  }
  if (WEXITSTATUS(status) != 0) {
    return Internal("distributed training failed (the coordinator exited with code " +
                    std::to_string(WEXITSTATUS(status)) + "; see " + log_path + ")");
  }
  return Status::Ok();
}

}  // namespace tarn::runtime
