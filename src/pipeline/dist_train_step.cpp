// tarn train with basic.runMode DIST: describes the job (tmp/dist/job.json)
// and runs its coordinator, which launches the parameter servers, workers
// and backups (see src/runtime/).
#include <algorithm>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "model/graph.h"
#include "model/optimizer.h"
#include "model/training_data.h"
#include "net/hmac.h"
#include "pipeline/steps.h"
#include "runtime/job.h"
#include "runtime/launcher.h"
#include "runtime/node.h"
#include "runtime/yarn_job.h"
#include "train/graph_models.h"
#include "train/graph_trainer.h"
#include "train/setup.h"

namespace tarn::pipeline {

// "4g", "2048m", "512" (MiB) -> MiB.
Result<int64_t> MemoryMb(const Settings& s, const char* key) {
  std::string v = ToLower(s.GetString(key));
  int64_t scale = 1;
  if (!v.empty() && (v.back() == 'g' || v.back() == 'm')) {
    scale = v.back() == 'g' ? 1024 : 1;
    v.pop_back();
  }
  auto n = ParseInt(v);
  if (!n || *n <= 0) {
    return InvalidArgument(std::string(key) + " must be a size like 2g or 2048m, got '" +
                           s.GetString(key) + "'");
  }
  return *n * scale;
}

Result<runtime::JobConfig> DescribeDistributedJob(const ModelSet& ms) {
  const auto& tc = ms.config.train;
  runtime::JobConfig job;
  job.algorithm = tc.algorithm;
  job.train_params = tc.params;
  const auto& s = ms.settings;
  TARN_ASSIGN_OR_RETURN(job.seed, s.GetInt("tarn.seed"));
  // ColumnConfig.json read once: the inputs and every column's name.
  TARN_ASSIGN_OR_RETURN(const auto column_configs, ms.LoadColumns());
  TARN_ASSIGN_OR_RETURN(auto o,
                        ms.TrainingDataFrom(static_cast<uint64_t>(job.seed), column_configs));
  TARN_ASSIGN_OR_RETURN(job.inputs, model::InputWidth(o));
  job.columns = o.selected;
  job.norm_type = ms.config.normalize.norm_type;
  job.std_dev_cut_off = ms.config.normalize.std_dev_cut_off;
  job.missing_values = ms.config.data_set.missing_or_invalid_values;
  job.model_set_columns = ModelSet::ColumnNames(column_configs);
  job.data_dir = o.data_dir;
  job.shard_paths = o.shard_paths;
  job.valid_rate = tc.valid_set_rate;
  job.epochs = tc.num_train_epochs;
  TARN_ASSIGN_OR_RETURN(const auto train_params, ms.ReadTrainParams());
  job.batch_size = train_params.mini_batch_rows;
  job.bags = tc.bagging_num;
  job.bagging_sample_rate = tc.bagging_sample_rate;
  job.bagging_with_replacement = tc.bagging_with_replacement;
  job.convergence_threshold = tc.convergence_threshold;
  job.is_continuous = tc.is_continuous;
  TARN_ASSIGN_OR_RETURN(auto patience, s.GetInt("tarn.train.early-stop-patience"));
  job.early_stop_patience = static_cast<int>(patience);
  TARN_ASSIGN_OR_RETURN(job.tensorboard, s.GetBool("tarn.train.tensorboard"));
  auto consistency = runtime::ParseConsistency(s.GetString("tarn.train.consistency"));
  if (!consistency.ok()) return consistency.status().WithContext("tarn.train.consistency");
  job.consistency = *consistency;
  // Checked here, before any node starts, so that a bad value names the file.
  TARN_ASSIGN_OR_RETURN(auto setup,
                        ms.InConfig(train::TrainSetup::FromTrainParams(train_params, job.inputs)));
  if (train::IsGraphModel(train_params)) {
    // The graph is built here once, from the shards' schema; every node reads it from the job.
    auto schema_options = o;
    schema_options.schema_only = true;
    TARN_ASSIGN_OR_RETURN(auto schema, model::LoadTrainingData(schema_options));
    TARN_ASSIGN_OR_RETURN(auto graph, ms.InConfig(train::BuildGraphModelFor(
                                          tc.algorithm, train_params, schema, job.std_dev_cut_off,
                                          job.model_set_columns, ms.dir)));
    const model::Graph g(graph.spec);
    // The tables' optimizer (refused for Propagations without a lazy form) before any node starts.
    TARN_ASSIGN_OR_RETURN(auto specs,
                          ms.InConfig(train::GraphTableSpecs(
                              g, train::GraphOptimizerConfig(setup.optimizer, graph), 0)));
    (void)specs;
    job.graph_model = train::GraphModelToJson(graph);
    for (const auto& id : schema.id_columns) job.id_columns.push_back(id.ToJson());
  }
  if (setup.full_batch && job.consistency != runtime::Consistency::kSync) {
    return InvalidArgument(ms.ModelConfigPath() + ": train.params.Propagation " +
                           model::PropagationName(setup.optimizer.kind) +
                           " needs the whole epoch's gradient: use tarn.train.consistency=sync");
  }
  auto get_int = [&](const char* key, int lo) -> Result<int> {
    TARN_ASSIGN_OR_RETURN(long long v, s.GetInt(key));
    if (v < lo) {
      return InvalidArgument(std::string(key) + " must be at least " + std::to_string(lo) +
                             ", got " + std::to_string(v));
    }
    return static_cast<int>(v);
  };
  TARN_ASSIGN_OR_RETURN(job.staleness, get_int("tarn.train.staleness", 0));
  TARN_ASSIGN_OR_RETURN(job.comm_period, get_int("tarn.train.comm-period", 1));
  TARN_ASSIGN_OR_RETURN(job.ps, get_int("shifu.ps.instances", 1));
  TARN_ASSIGN_OR_RETURN(int workers, get_int("shifu.worker.instances", 0));
  const int files = static_cast<int>(job.shard_paths.size());
  job.workers = workers == 0 ? files : workers;
  if (job.workers > files) {
    return InvalidArgument("shifu.worker.instances (" + std::to_string(job.workers) +
                           ") exceeds the " + std::to_string(files) + " files in " + job.data_dir +
                           "; a worker trains on whole files: write more with "
                           "-Dtarn.norm.shards=N (or shifu.norm.shuffle.size with norm -shuffle)");
  }
  TARN_ASSIGN_OR_RETURN(int backups, get_int("shifu.worker.instances.backup", -1));
  job.backups = backups < 0 ? std::max(1, job.workers / 10) : backups;
  TARN_ASSIGN_OR_RETURN(job.heartbeat_ms, get_int("shifu.task.heartbeat-interval", 1));
  TARN_ASSIGN_OR_RETURN(job.max_missed_heartbeats, get_int("shifu.task.max-missed-heartbeats", 1));
  TARN_ASSIGN_OR_RETURN(job.allow_degraded, s.GetBool("tarn.train.allow-degraded"));
  TARN_ASSIGN_OR_RETURN(job.cluster_tls, s.GetBool("tarn.cluster.tls"));
  TARN_ASSIGN_OR_RETURN(job.max_ps_restarts, get_int("tarn.train.max-ps-restarts", 0));
  TARN_ASSIGN_OR_RETURN(job.checkpoint_interval_ms,
                        get_int("tarn.train.checkpoint-interval-ms", 0));
  job.backend = ToLower(s.GetString("tarn.cluster.backend"));
  TARN_ASSIGN_OR_RETURN(job.ps_memory_mb, MemoryMb(s, "shifu.ps.memory"));
  TARN_ASSIGN_OR_RETURN(job.worker_memory_mb, MemoryMb(s, "shifu.worker.memory"));
  TARN_ASSIGN_OR_RETURN(job.ps_vcores, get_int("shifu.ps.vcores", 1));
  TARN_ASSIGN_OR_RETURN(job.worker_vcores, get_int("shifu.worker.vcores", 1));
  TARN_ASSIGN_OR_RETURN(job.worker_gpus, get_int("shifu.worker.gpus", 0));
  job.bind_host = s.GetString("tarn.cluster.host");
  if (job.bind_host.empty()) job.bind_host = job.backend == "yarn" ? "auto" : "127.0.0.1";
  TARN_ASSIGN_OR_RETURN(job.status_port, get_int("tarn.cluster.status-port", 0));
  TARN_ASSIGN_OR_RETURN(job.retry_ms, get_int("tarn.net.retry-ms", 1));
  TARN_ASSIGN_OR_RETURN(int max_mb, get_int("tarn.net.max-message-mb", 1));
  job.max_message_bytes = static_cast<int64_t>(max_mb) << 20;
  TARN_ASSIGN_OR_RETURN(job.test_drop_rate, s.GetDouble("tarn.net.test-drop-rate"));
  if (job.test_drop_rate < 0 || job.test_drop_rate >= 1) {
    return InvalidArgument("tarn.net.test-drop-rate must be in [0, 1)");
  }
  TARN_ASSIGN_OR_RETURN(job.test_delay_ms, get_int("tarn.net.test-delay-ms", 0));
  TARN_ASSIGN_OR_RETURN(job.test_crash_before_model,
                        get_int("tarn.train.test-crash-before-model", -1));
  job.model_set_dir = ms.dir;
  job.checkpoint_dir = ms.Path("tmp/modelsTmp/dist");
  job.models_dir = ms.Path("models");
  job.tensorboard_dir = ms.Path("tmp/tensorboard");
  job.cluster_json = ms.Path("tmp/cluster.json");
  job.history_json = ms.Path("tmp/dist/history.json");
  job.logs_dir = ms.Path("logs");
  job.serving_export_dir = s.GetString("tarn.serving.exportDir");
  if (!job.serving_export_dir.empty()) {
    job.serving_export_dir = ResolvePath(ms.dir, job.serving_export_dir);
  }
  TARN_ASSIGN_OR_RETURN(job.serving_export_every, get_int("tarn.serving.exportEveryEpochs", 0));
  TARN_ASSIGN_OR_RETURN(job.serving_instances, get_int("shifu.serving.instances", 0));
  if (job.serving_instances > 0 && job.backend != "yarn") {
    return InvalidArgument(
        "shifu.serving.instances starts model servers in YARN containers "
        "(tarn.cluster.backend=yarn); on one machine run 'tarn serve'");
  }
  return job;
}

Status RunDistributedTrain(const ModelSet& ms) {
  TARN_ASSIGN_OR_RETURN(auto job, DescribeDistributedJob(ms));
  TARN_RETURN_IF_ERROR(MakeDirs(ms.Path("tmp/dist")));
  TARN_RETURN_IF_ERROR(MakeDirs(job.logs_dir));
  const std::string job_path = ms.Path("tmp/dist/job.json");
  TARN_RETURN_IF_ERROR(job.Save(job_path));
  TARN_ASSIGN_OR_RETURN(std::string secret, net::NewJobSecret());
  TARN_ASSIGN_OR_RETURN(std::string self, runtime::SelfExecutable());
  TARN_LOG(kInfo) << "train: runMode DIST, " << job.ps << " parameter server(s), " << job.workers
                  << " worker(s), " << job.backups << " backup(s), "
                  << runtime::ConsistencyName(job.consistency) << "; logs in " << job.logs_dir;
  if (job.backend == "embedded") return runtime::RunCoordinator(job, secret, self);
  if (job.backend == "yarn") {
    runtime::YarnJobPaths local;
    local.model_set = ms.dir;
    local.normalized_data = ms.NormalizedDataDir();
    local.work_dir = ms.Path("tmp/dist");
    local.tmp_dir = ms.Path("tmp");
    local.models_dir = job.models_dir;
    local.data_paths = {ms.ConfigPath(ms.config.data_set.data_path),
                        ms.ConfigPath(ms.config.data_set.validation_data_path)};
    for (const auto& eval : ms.config.evals) {
      local.data_paths.push_back(ms.ConfigPath(eval.data_set.data_path));
    }
    TARN_ASSIGN_OR_RETURN(local.am_memory_mb, MemoryMb(ms.settings, "shifu.am.memory"));
    TARN_ASSIGN_OR_RETURN(long long am_vcores, ms.settings.GetInt("shifu.am.vcores"));
    local.am_vcores = static_cast<int>(am_vcores);
    return runtime::RunYarnJob(job, ms.settings, local, secret);
  }
  return runtime::RunCoordinatorProcess(self, job_path, secret,
                                        JoinPath(job.logs_dir, "coordinator.log"));
}

}  // namespace tarn::pipeline
