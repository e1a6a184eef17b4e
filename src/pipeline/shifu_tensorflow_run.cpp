// tarn train running a shifu-tensorflow script: the roles as an assembly::Service on the
// assembly runner (local backend), the progress lines the script sends, and the outcome.
#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "assembly/runner.h"
#include "cluster/local_backend.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
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

Result<int> AtLeast(const Settings& s, const char* key, int lo) {
  TARN_ASSIGN_OR_RETURN(long long v, s.GetInt(key));
  if (v < lo) {
    return InvalidArgument(std::string(key) + " must be at least " + std::to_string(lo) + ", got " +
                           std::to_string(v));
  }
  return static_cast<int>(v);
}

}  // namespace

Status RunShifuScript(const ModelSet& ms, const ScriptDecision& decision) {
  const Settings& s = ms.settings;
  const std::string backend = ToLower(s.GetString("tarn.cluster.backend"));
  if (backend == "yarn") {
    return Unsupported(
        decision.script +
        ": tarn runs shifu-tensorflow scripts on this machine only so far (on YARN the "
        "script's data, model folders and progress socket would have to reach its containers: "
        "not built yet); -Dtarn.cluster.backend=local "
        "runs it here, -Dtarn.train.script=native trains tarn's native engine on YARN");
  }
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
  TARN_ASSIGN_OR_RETURN(auto progress, ProgressListener::Start());
  job.env = {
      {"DELIMITER", "|"},
      {"TARGET_COLUMN_NUM", std::to_string(target)},
      {"WEIGHT_COLUMN_NUM", std::to_string(weight)},
      {"SELECTED_COLUMN_NUMS", Join(selected, " ")},
      {"TOTAL_TRAINING_DATA_NUMBER", std::to_string(data.rows)},
      {"WORKER_CNT", std::to_string(job.workers)},
      {"TMP_MODEL_PATH", tmp_models},
      {"FINAL_MODEL_PATH", final_models},
      {"SOCKET_SERVER_PORT", std::to_string(progress->port())},
      {"TRAIN_SCRIPT_PATH", job.script},
  };
  if (!metas.empty()) job.env["META_COLUMN_NUM"] = Join(metas, " ");

  const std::string state_dir = JoinPath(work, "run");
  TARN_RETURN_IF_ERROR(RemoveAll(state_dir));
  TARN_RETURN_IF_ERROR(MakeDirs(JoinPath(state_dir, "logs")));
  TARN_LOG(kInfo) << "train: " << BaseName(job.script) << " as shifu-tensorflow runs it: " << job.ps
                  << " parameter server(s), " << job.workers << " worker(s), " << job.backups
                  << " backup(s) on " << data.parts.size() << " data file(s) (" << data.rows
                  << " rows" << (data.converted ? ", written from tarn's shards" : "")
                  << "), Python " << facts.python_version << ", TensorFlow "
                  << facts.tensorflow_version << "; logs in " << JoinPath(state_dir, "logs");
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
  // Every instance that failed, with its log's last lines (the script's traceback).
  std::string failures;
  for (const auto& c : status["components"]) {
    for (const auto& i : c["containers"]) {
      if (i["state"] == "FAILED" && i["exit_code"].is_number() && i["exit_code"] != 0) {
        const std::string log = i.value("log", "");
        failures += "\n  " + i.value("component_instance_name", "") + " (" + c.value("name", "") +
                    ") exited " + std::to_string(i["exit_code"].get<int>()) + ", log " + log + ":" +
                    Tail(log, 12);
      }
      if (i.contains("replaced")) {
        TARN_LOG(kInfo) << "train: " << i.value("component_instance_name", "") << " took over "
                        << i.value("replaced", "") << "'s task";
      }
    }
  }
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

}  // namespace tarn::pipeline
