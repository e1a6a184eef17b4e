// tarn train running a shifu-tensorflow script: the roles as an assembly::Service on the
// assembly runner (local backend), the progress lines the script sends, and the outcome.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "assembly/runner.h"
#include "assembly/yarn_master.h"
#include "cluster/local_backend.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "data/json_fields.h"
#include "net/socket.h"
#include "pipeline/shifu_tensorflow.h"

namespace tarn::pipeline {

using data::Json;

namespace {

// shifu-tensorflow's TaskExecutor listens on a local port (SOCKET_SERVER_PORT) for the
// script's progress lines ("worker_index:0,time:1.2,current_epoch:3,training_loss:...,
// valid_loss:...,valid_time:...\n"); tarn prints each one.
class ProgressListener {
 public:
  static Result<std::unique_ptr<ProgressListener>> Start() {
    TARN_ASSIGN_OR_RETURN(net::Socket s, net::ListenTcp("127.0.0.1", 0));
    auto p = std::unique_ptr<ProgressListener>(new ProgressListener(std::move(s)));
    p->accept_ = std::thread([raw = p.get()] { raw->AcceptLoop(); });
    return p;
  }
  ~ProgressListener() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      listener_.Shutdown();
      for (auto& c : conns_) c.Shutdown();
    }
    if (accept_.joinable()) accept_.join();
    for (auto& t : readers_) t.join();
  }
  int port() const { return port_; }
  int lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  explicit ProgressListener(net::Socket s) : listener_(std::move(s)) {
    port_ = net::LocalPort(listener_);
  }
  void AcceptLoop() {
    while (true) {
      auto conn = net::AcceptTcp(listener_, net::Deadline::InMs(500));
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      if (!conn.ok()) continue;
      conns_.push_back(std::move(*conn));
      net::Socket* c = &conns_.back();
      readers_.emplace_back([this, c] { ReadLoop(c); });
    }
  }
  void ReadLoop(net::Socket* c) {
    std::string pending;
    char buf[4096];
    while (true) {
      auto n = c->ReadSome(buf, sizeof(buf), net::Deadline::Never());
      if (!n.ok() || *n == 0) return;
      pending.append(buf, *n);
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        Report(pending.substr(0, nl));
        pending.erase(0, nl + 1);
      }
    }
  }
  void Report(const std::string& line) {
    std::map<std::string, std::string> f;
    for (const auto& kv : Split(line, ",")) {
      auto colon = kv.find(':');
      if (colon != std::string::npos) f[kv.substr(0, colon)] = kv.substr(colon + 1);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++lines_;
    }
    if (!f.count("worker_index") || !f.count("training_loss")) {
      TARN_LOG(kInfo) << "shifu-tensorflow: " << line;
      return;
    }
    TARN_LOG(kInfo) << "shifu-tensorflow: worker " << f["worker_index"] << " epoch "
                    << f["current_epoch"] << ": training loss " << f["training_loss"]
                    << ", valid loss " << f["valid_loss"] << " (" << f["time"] << " s training, "
                    << f["valid_time"] << " s validation)";
  }

  mutable std::mutex mu_;
  net::Socket listener_;
  int port_ = 0;
  bool stop_ = false;
  int lines_ = 0;
  std::deque<net::Socket> conns_;  // stable addresses for the readers
  std::vector<std::thread> readers_;
  std::thread accept_;
};

// Shifu's cleanModelPath: without isContinuous the old checkpoints and models are moved
// aside (<path>_<millis>), not deleted.
Status MoveAside(const std::string& path) {
  if (!PathExists(path)) return Status::Ok();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  const std::string to = path + "_" + std::to_string(ms);
  TARN_RETURN_IF_ERROR(RenamePath(path, to));
  TARN_LOG(kInfo) << "train: " << path << " moved to " << to << " (train.isContinuous is false)";
  return Status::Ok();
}

// The last `n` lines of a log, for an error message.
std::string Tail(const std::string& path, size_t n) {
  auto text = ReadFile(path);
  if (!text.ok()) return "";
  auto lines = Split(*text, "\n");
  while (!lines.empty() && Trim(lines.back()).empty()) lines.pop_back();
  const size_t from = lines.size() > n ? lines.size() - n : 0;
  std::string out;
  for (size_t i = from; i < lines.size(); ++i) out += "\n    " + lines[i];
  return out;
}

// A string field of the runner's status JSON, "" when absent or not a string (the status is
// read back from HDFS: a mistyped field must not throw).
std::string StringField(const Json& object, const char* key) {
  const Json* v = data::JsonFind(object, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

// Every instance that failed, with where its log is: on this machine its last lines (the
// script's traceback); on YARN the 'tarn yarn logs' command that shows it.
std::string FailuresOf(const Json& status, const std::string& application_id) {
  std::string failures;
  if (!status.is_object() || !status.contains("components")) return failures;
  for (const auto& c : status["components"]) {
    if (!c.is_object() || !c.contains("containers")) continue;
    for (const auto& i : c["containers"]) {
      if (!i.is_object()) continue;
      if (StringField(i, "state") == "FAILED" && i.contains("exit_code") &&
          i["exit_code"].is_number_integer() && i["exit_code"].get<int>() != 0) {
        const std::string log = StringField(i, "log");
        failures += "\n  " + StringField(i, "component_instance_name") + " (" +
                    StringField(c, "name") + ") exited " +
                    std::to_string(i["exit_code"].get<int>());
        if (application_id.empty()) {
          failures += ", log " + log + ":" + Tail(log, 12);
        } else {
          const std::string log_dir = StringField(i, "log_dir");
          failures += ", log: tarn yarn logs " + application_id +
                      (log_dir.empty() ? std::string(" --container all")
                                       : " --container " + BaseName(log_dir) + " (" + log + ")");
          if (const std::string why = StringField(i, "diagnostics"); !why.empty())
            failures += "; " + why;
        }
      }
      if (!StringField(i, "replaced").empty()) {
        TARN_LOG(kInfo) << "train: " << StringField(i, "component_instance_name") << " took over "
                        << StringField(i, "replaced") << "'s task";
      }
    }
  }
  return failures;
}

Result<int> AtLeast(const Settings& s, const char* key, int lo) {
  TARN_ASSIGN_OR_RETURN(long long v, s.GetInt(key));
  if (v < lo) {
    return InvalidArgument(std::string(key) + " must be at least " + std::to_string(lo) + ", got " +
                           std::to_string(v));
  }
  return static_cast<int>(v);
}

}  // namespace

namespace {

std::string EnvOr(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The YARN half of RunShifuScript: the job's files and data staged in HDFS, the roles run
// by tarn's assembly ApplicationMaster, the model the chief uploaded downloaded into
// `final_models`.
Status RunOnYarn(const ModelSet& ms, const ScriptDecision& decision, ShifuScriptJob job,
                 const ShifuTextData& data, const std::string& work,
                 const std::string& final_models, const std::string& versions) {
  const Settings& s = ms.settings;
  TARN_ASSIGN_OR_RETURN(std::string root, assembly::YarnStagingRoot(s));
  job.job_dir = data::ChildPath(root, "shifu-tensorflow-" + std::to_string(NowMs()));
  // The job's folder in HDFS (a copy of the data) goes on every way out, except while the
  // application may still be running and reading it.
  struct JobDirCleanup {
    const std::string& dir;
    bool keep = false;
    ~JobDirCleanup() {
      if (keep) return;
      auto fs = data::FileSystemFor(dir);
      Status st = fs.ok() ? (*fs)->Delete(dir, true) : fs.status();
      if (!st.ok() && st.code() != StatusCode::kNotFound) {
        TARN_LOG(kWarn) << "train: removing " << dir << ": " << st.message();
      }
    }
  } cleanup{job.job_dir};
  TARN_ASSIGN_OR_RETURN(job.ps_memory_mb, MemoryMb(s, "shifu.ps.memory"));
  TARN_ASSIGN_OR_RETURN(job.worker_memory_mb, MemoryMb(s, "shifu.worker.memory"));
  TARN_ASSIGN_OR_RETURN(job.ps_vcores, AtLeast(s, "shifu.ps.vcores", 1));
  TARN_ASSIGN_OR_RETURN(job.worker_vcores, AtLeast(s, "shifu.worker.vcores", 1));
  const std::string files = data::ChildPath(job.job_dir, "files");
  for (const auto& [from, name] : std::vector<std::pair<std::string, std::string>>{
           {job.script, BaseName(job.script)},
           {ms.ModelConfigPath(), "ModelConfig.json"},
           {ms.ColumnConfigPath(), "ColumnConfig.json"}}) {
    const std::string to = data::ChildPath(files, name);
    TARN_RETURN_IF_ERROR(data::CopyTree(from, to).WithContext("staging " + from + " in " + to));
  }
  std::vector<std::string> uris;
  for (const auto& part : data.parts) {
    const std::string to = data::ChildPath(data::ChildPath(job.job_dir, "data"), BaseName(part));
    TARN_RETURN_IF_ERROR(data::CopyTree(part, to).WithContext("staging " + part + " in " + to));
    uris.push_back(to);
  }
  TARN_ASSIGN_OR_RETURN(job.worker_data, SplitPartsAcrossWorkers(uris, job.workers));
  // What RunShifuTask gives each role in its container.
  for (const char* k : {"TMP_MODEL_PATH", "FINAL_MODEL_PATH", "SOCKET_SERVER_PORT"}) {
    job.env.erase(k);
  }
  job.env["TRAIN_SCRIPT_PATH"] = "resources/" + BaseName(job.script);

  const std::string state_dir = JoinPath(work, "run");
  TARN_RETURN_IF_ERROR(RemoveAll(state_dir));
  TARN_RETURN_IF_ERROR(MakeDirs(state_dir));
  const assembly::ServiceFolder folder{state_dir};
  const std::string yarnfile = ShifuScriptYarnfile(job, "shifu-tensorflow");
  TARN_RETURN_IF_ERROR(WriteFileAtomic(folder.spec(), yarnfile));
  TARN_ASSIGN_OR_RETURN(assembly::Service service, assembly::ParseService(yarnfile, folder.spec()));
  TARN_LOG(kInfo) << "train: " << BaseName(job.script) << " as shifu-tensorflow runs it: " << job.ps
                  << " parameter server(s), " << job.workers << " worker(s), " << job.backups
                  << " backup(s) on " << data.parts.size() << " data file(s) (" << data.rows
                  << " rows" << (data.converted ? ", written from tarn's shards" : "") << "), "
                  << versions << "; on YARN, staged in " << job.job_dir;
  TARN_ASSIGN_OR_RETURN(auto app, assembly::SubmitYarnService(folder, service, s, {}));
  const std::string logs = "tarn yarn logs " + app.application_id + " --container all";
  TARN_LOG(kInfo) << "train: YARN application " << app.application_id
                  << " runs the roles; their logs (and the progress lines): " << logs;
  auto end = assembly::WaitYarnAppEnd(app, s, INT_MAX);
  if (!end.ok()) {
    // Not known to have ended: its files stay for it.
    cleanup.keep = true;
    return Internal(decision.script + ": following YARN application " + app.application_id + ": " +
                    end.status().message() + "; its files stay in " + job.job_dir +
                    " (remove them once it has ended: tarn yarn status " + app.application_id +
                    "; " + logs + ")");
  }
  auto status_text = assembly::YarnStatusFile(app);
  if (!status_text.ok()) {
    return Internal(decision.script + ": YARN application " + app.application_id + " ended " +
                    end->final_status + "; its status: " + status_text.status().message() + " (" +
                    logs + ")");
  }
  (void)WriteFileAtomic(JoinPath(state_dir, "status.json"), *status_text);
  const Json status = Json::parse(*status_text, nullptr, false);
  const std::string failures = FailuresOf(status, app.application_id);
  std::string state;
  int exit_code = -1;
  if (status.is_object()) {
    data::JsonFields fields(&status, JoinPath(state_dir, "status.json"), "");
    if (Status read = fields.GetString("state", &state); !read.ok()) return read;
    if (Status read = fields.GetInt("exit_code", &exit_code); !read.ok()) return read;
  }
  if (end->final_status != "SUCCEEDED" || state != "SUCCEEDED" || exit_code != 0) {
    return Internal(decision.script + ": the chief (worker 0) ended " +
                    (state.empty() ? "?" : state) + " with exit code " + std::to_string(exit_code) +
                    " (YARN application " + app.application_id + " " + end->state + " " +
                    end->final_status + (end->diagnostics.empty() ? "" : ": " + end->diagnostics) +
                    ")" + (failures.empty() ? "; " + logs : ";" + failures));
  }
  if (!failures.empty()) {
    TARN_LOG(kWarn) << "train: roles that failed on the way:" << failures;
  }
  // The chief uploaded FINAL_MODEL_PATH to <job>/model; it replaces models/ whole.
  const std::string model_uri = data::ChildPath(job.job_dir, "model");
  const std::string download = final_models + ".download";
  TARN_RETURN_IF_ERROR(RemoveAll(download));
  Status got = data::CopyTree(model_uri, download);
  if (!got.ok()) {
    return got.WithContext(decision.script + ": the chief exited 0; downloading its model " +
                           model_uri + " into " + final_models + " (" + logs + ")");
  }
  TARN_RETURN_IF_ERROR(RemoveAll(final_models));
  TARN_RETURN_IF_ERROR(RenamePath(download, final_models));
  TARN_LOG(kInfo) << "train: the chief exited 0; the script's model is in " << final_models
                  << " (from " << model_uri << ")";
  return Status::Ok();
}

// Writes a folder's files to a file system (HDFS) as `to` whole: a sibling first, then a
// rename, so that a reader sees the model complete or not at all.
Status UploadFolder(const std::string& from, const std::string& to) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(to));
  const std::string part = to + ".part";
  TARN_RETURN_IF_ERROR(fs->Delete(part, true));
  TARN_RETURN_IF_ERROR(data::CopyTree(from, part));
  TARN_RETURN_IF_ERROR(fs->Delete(to, true));
  return fs->Rename(part, to);
}

}  // namespace

Status RunShifuScript(const ModelSet& ms, const ScriptDecision& decision) {
  const Settings& s = ms.settings;
  const std::string backend = ToLower(s.GetString("tarn.cluster.backend"));
  const bool yarn = backend == "yarn";
  ShifuScriptJob job;
  job.script = decision.script;
  job.python = s.GetString("tarn.train.script.python");
  job.model_set = ms.dir;
  TARN_ASSIGN_OR_RETURN(std::string contents, ReadFile(job.script));
  TARN_ASSIGN_OR_RETURN(PythonFacts facts, ProbePython(job.python, job.script));
  TARN_RETURN_IF_ERROR(CheckScriptRunnable(job.script, contents, facts, job.python));

  TARN_ASSIGN_OR_RETURN(const auto columns, ms.LoadColumns());
  const auto inputs = data::SelectModelInputs(columns);
  if (inputs.columns.empty()) {
    return FailedPrecondition("no column of " + ms.ColumnConfigPath() +
                              " has finalSelect, and none is a good candidate; run 'tarn stats' "
                              "or 'tarn varsel'");
  }
  TARN_LOG(kInfo) << "train: " << inputs.rule;
  const std::string work = ms.Path("tmp/shifu-tensorflow");
  TARN_ASSIGN_OR_RETURN(auto data,
                        PrepareShifuTextData(ms, columns, JoinPath(work, "NormalizedData")));
  TARN_ASSIGN_OR_RETURN(job.ps, AtLeast(s, "shifu.ps.instances", 1));
  TARN_ASSIGN_OR_RETURN(int workers, AtLeast(s, "shifu.worker.instances", 0));
  job.workers = workers == 0 ? static_cast<int>(data.parts.size()) : workers;
  TARN_ASSIGN_OR_RETURN(job.worker_data, SplitPartsAcrossWorkers(data.parts, job.workers));
  TARN_ASSIGN_OR_RETURN(int backups, AtLeast(s, "shifu.worker.instances.backup", -1));
  job.backups = backups < 0 ? std::max(1, job.workers / 10) : backups;
  if (ms.config.train.bagging_num != 1) {
    TARN_LOG(kWarn) << "train: train.baggingNum " << ms.config.train.bagging_num
                    << ": a shifu-tensorflow script trains one model, as in Shifu";
  }

  const std::string tmp_models = ms.Path("tmp/modelsTmp");
  const std::string final_models = ms.Path("models");
  if (!ms.config.train.is_continuous) {
    TARN_RETURN_IF_ERROR(MoveAside(tmp_models));
    TARN_RETURN_IF_ERROR(MoveAside(final_models));
  }
  TARN_RETURN_IF_ERROR(MakeDirs(tmp_models));
  job.data_lists_dir = JoinPath(work, "worker-data");
  TARN_RETURN_IF_ERROR(MakeDirs(job.data_lists_dir));
  for (size_t i = 0; i < job.worker_data.size(); ++i) {
    TARN_RETURN_IF_ERROR(WriteFileAtomic(
        JoinPath(job.data_lists_dir, "worker-" + std::to_string(i) + ".data"), job.worker_data[i]));
  }

  // The env shifu-tensorflow's TaskExecutor gives the script (research12 §3.2).
  std::vector<std::string> selected, metas;
  for (const auto& c : inputs.columns) selected.push_back(std::to_string(c.column_num));
  int target = -1, weight = -1;
  for (const auto& c : columns) {
    if (c.IsTarget()) target = c.column_num;
    if (c.IsWeight()) weight = c.column_num;
    if (c.IsMeta()) metas.push_back(std::to_string(c.column_num));
  }
  job.env = {
      {"DELIMITER", "|"},
      {"TARGET_COLUMN_NUM", std::to_string(target)},
      {"WEIGHT_COLUMN_NUM", std::to_string(weight)},
      {"SELECTED_COLUMN_NUMS", Join(selected, " ")},
      {"TOTAL_TRAINING_DATA_NUMBER", std::to_string(data.rows)},
      {"WORKER_CNT", std::to_string(job.workers)},
      {"TMP_MODEL_PATH", tmp_models},
      {"FINAL_MODEL_PATH", final_models},
      {"TRAIN_SCRIPT_PATH", job.script},
  };
  if (!metas.empty()) job.env["META_COLUMN_NUM"] = Join(metas, " ");
  const std::string versions =
      "Python " + facts.python_version + ", TensorFlow " + facts.tensorflow_version;
  if (yarn) return RunOnYarn(ms, decision, job, data, work, final_models, versions);

  TARN_ASSIGN_OR_RETURN(auto progress, ProgressListener::Start());
  job.env["SOCKET_SERVER_PORT"] = std::to_string(progress->port());
  const std::string state_dir = JoinPath(work, "run");
  TARN_RETURN_IF_ERROR(RemoveAll(state_dir));
  TARN_RETURN_IF_ERROR(MakeDirs(JoinPath(state_dir, "logs")));
  TARN_LOG(kInfo) << "train: " << BaseName(job.script) << " as shifu-tensorflow runs it: " << job.ps
                  << " parameter server(s), " << job.workers << " worker(s), " << job.backups
                  << " backup(s) on " << data.parts.size() << " data file(s) (" << data.rows
                  << " rows" << (data.converted ? ", written from tarn's shards" : "") << "), "
                  << versions << "; logs in " << JoinPath(state_dir, "logs");
  auto local = cluster::MakeLocalBackend(JoinPath(state_dir, "logs"));
  assembly::RunnerOptions options;
  options.state_dir = state_dir;
  options.user = "tarn";
  options.source = job.script;
  assembly::Service service = ShifuScriptService(job, "shifu-tensorflow");
  TARN_RETURN_IF_ERROR(assembly::CheckRunnable(service, job.script, false));
  assembly::Runner runner(std::move(service), *local, options);
  TARN_RETURN_IF_ERROR(runner.Start());
  const auto state = runner.Wait();
  const int exit_code = runner.exit_code();
  const Json status = Json::parse(runner.StatusJson());
  local->Shutdown();
  const std::string failures = FailuresOf(status, "");
  if (state != assembly::ServiceState::kSucceeded || exit_code != 0) {
    return Internal(decision.script + ": the chief (worker 0) ended " +
                    assembly::ServiceStateName(state) + " with exit code " +
                    std::to_string(exit_code) + (failures.empty() ? "" : ";" + failures));
  }
  if (!failures.empty()) {
    TARN_LOG(kWarn) << "train: roles that failed on the way:" << failures;
  }
  TARN_LOG(kInfo) << "train: the chief exited 0 (" << progress->lines()
                  << " progress lines); the script's model is in " << final_models;
  return Status::Ok();
}

int RunShifuTask(const ShifuTaskOptions& o) {
  const std::string job = EnvOr("JOB_NAME"), index = EnvOr("TASK_INDEX");
  const std::string me = job + " task " + index + " (container " + EnvOr("CONTAINER_ID", "?") + ")";
  auto fail = [&](const Status& s) {
    TARN_LOG(kError) << "shifu-task: " << me << ": " << s.message();
    return 1;
  };
  if (o.command.empty()) return fail(InvalidArgument("no command to run after --"));
  if (job.empty() || index.empty()) {
    return fail(
        FailedPrecondition("JOB_NAME and TASK_INDEX are not set (tarn's launcher sets "
                           "them for a TensorFlow role)"));
  }
  char buf[4096];
  const std::string dir = ::getcwd(buf, sizeof(buf)) ? buf : ".";
  if (job == "worker") {
    // This task's files (a backup that took over a task reads the task's files).
    const std::string key = "TARN_SHIFU_DATA_" + index;
    const std::string list = EnvOr(key.c_str());
    if (list.empty()) return fail(FailedPrecondition(key + " names no data file for this task"));
    std::vector<std::string> local;
    for (const auto& uri : Split(list, ",")) {
      if (uri.empty()) continue;
      const std::string to = JoinPath(JoinPath(dir, "data"), BaseName(uri));
      Status s = data::CopyTree(uri, to);
      if (!s.ok()) return fail(s.WithContext("copying its data file " + uri));
      local.push_back(to);
    }
    ::setenv("TRAINING_DATA_PATH", Join(local, ",").c_str(), 1);
    TARN_LOG(kInfo) << "shifu-task: " << me << ": TRAINING_DATA_PATH " << Join(local, ",")
                    << " (from " << list << ")";
  }
  const std::string tmp_models = JoinPath(dir, "tmp-model");
  const std::string final_models = JoinPath(dir, "final-model");
  if (Status s = MakeDirs(tmp_models); !s.ok()) return fail(s);
  ::setenv("TMP_MODEL_PATH", tmp_models.c_str(), 1);
  ::setenv("FINAL_MODEL_PATH", final_models.c_str(), 1);
  if (std::string script = EnvOr("TRAIN_SCRIPT_PATH"); !script.empty() && script[0] != '/') {
    ::setenv("TRAIN_SCRIPT_PATH", JoinPath(dir, script).c_str(), 1);
  }
  // The script's progress lines go to this container's log, as shifu-tensorflow's task
  // executor receives them on its own host.
  auto progress = ProgressListener::Start();
  if (!progress.ok()) return fail(progress.status().WithContext("the progress listener"));
  ::setenv("SOCKET_SERVER_PORT", std::to_string((*progress)->port()).c_str(), 1);

  std::vector<std::string> args = o.command;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return fail(ErrnoError("fork", errno));
  if (pid == 0) {
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "shifu-task: exec %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return fail(ErrnoError("waitpid", errno));
  }
  const int lines = (*progress)->lines();
  progress->reset();
  if (WIFSIGNALED(status)) {
    TARN_LOG(kError) << "shifu-task: " << me << ": the script was killed by signal "
                     << WTERMSIG(status);
    return 128 + WTERMSIG(status);
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  if (code != 0) {
    TARN_LOG(kError) << "shifu-task: " << me << ": the script exited " << code;
    return code;
  }
  TARN_LOG(kInfo) << "shifu-task: " << me << ": the script exited 0 (" << lines
                  << " progress lines)";
  if (job == "worker" && index == "0" && !o.model_out.empty()) {
    auto names = ListDirectory(final_models);
    if (!names.ok() || names->empty()) {
      return fail(FailedPrecondition("the chief exited 0 but wrote no model to FINAL_MODEL_PATH " +
                                     final_models));
    }
    Status s = UploadFolder(final_models, o.model_out);
    if (!s.ok()) {
      return fail(s.WithContext("uploading the model " + final_models + " to " + o.model_out));
    }
    TARN_LOG(kInfo) << "shifu-task: " << me << ": the model " << final_models << " is in "
                    << o.model_out;
  }
  return 0;
}

}  // namespace tarn::pipeline
