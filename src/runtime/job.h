// A distributed training job's description: everything the coordinator and
// its nodes need, written by `tarn train` to tmp/dist/job.json and sent to
// each node in its assignment, so parameter servers and workers need no
// model set of their own. The job's secret is never part of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/column_config.h"
#include "data/json_fields.h"

namespace tarn::runtime {

using data::Json;

enum class Consistency { kSync, kAsync, kSsp };
Result<Consistency> ParseConsistency(const std::string& name);
const char* ConsistencyName(Consistency c);

struct JobConfig {
  // The model.
  std::string algorithm = "NN";
  // ModelConfig's train.params as written, for the model file's metadata; every node
  // reads it through model::TrainParams::Parse.
  Json train_params = Json::object();
  std::vector<data::ColumnConfig> columns;  // input columns, in input order
  int inputs = 0;                           // the network's input count
  std::string norm_type;
  double std_dev_cut_off = 4;
  std::vector<std::string> missing_values;
  std::vector<std::string> model_set_columns;  // every column name (ModelFile)
  // A graph model (train::GraphModelToJson; null for an MLP) and the id
  // columns its model files carry (data::IdColumn::ToJson each).
  Json graph_model;
  Json id_columns = Json::array();
  // The data.
  std::string data_dir;                  // tmp/NormalizedData
  std::vector<std::string> shard_paths;  // every shard, in order
  double valid_rate = 0.2;
  int64_t seed = 42;
  // Training.
  int epochs = 100;
  int batch_size = 128;
  int bags = 1;
  double bagging_sample_rate = 1.0;
  bool bagging_with_replacement = false;
  double convergence_threshold = 0;
  int early_stop_patience = 0;
  Consistency consistency = Consistency::kSync;
  int staleness = 2;    // ssp: how many pushes a worker may run ahead of the slowest
  int comm_period = 1;  // mini-batches of gradient per push
  bool is_continuous = false;
  bool tensorboard = true;
  // The cluster.
  int ps = 1;
  int workers = 2;
  int backups = 1;
  int heartbeat_ms = 1000;
  int max_missed_heartbeats = 25;
  bool allow_degraded = false;
  bool cluster_tls = false;  // tarn.cluster.tls: the job's TCP connections run TLS
  int max_ps_restarts = 3;
  int checkpoint_interval_ms = 1000;  // tarn.train.checkpoint-interval-ms
  std::string backend = "local";
  // Container resources (YARN): Shifu's shifu.ps.memory, shifu.worker.vcores, ...
  int64_t ps_memory_mb = 4096, worker_memory_mb = 2048;
  int ps_vcores = 2, worker_vcores = 2, worker_gpus = 0;
  std::string bind_host = "127.0.0.1";
  int status_port = 0;
  // Network.
  int retry_ms = 1000;
  int64_t max_message_bytes = 64 << 20;
  double test_drop_rate = 0;
  int test_delay_ms = 0;
  int test_crash_before_model = -1;  // tarn.train.test-crash-before-model: a bag, or -1
  // Where things go (absolute paths).
  std::string model_set_dir;
  std::string checkpoint_dir;   // tmp/modelsTmp/dist
  std::string models_dir;       // models/
  std::string tensorboard_dir;  // tmp/tensorboard
  std::string cluster_json;     // tmp/cluster.json
  std::string history_json;     // tmp/dist/history.json: the epochs' figures
  std::string logs_dir;         // logs/
  std::string serving_export_dir;
  int serving_export_every = 0;
  // Model servers (`tarn serve`) the job starts beside training
  // (shifu.serving.instances, YARN); they follow serving_export_dir and keep
  // running after training until the application is killed.
  int serving_instances = 0;

  Json ToJson() const;
  static Result<JobConfig> FromJson(const Json& j);
  static Result<JobConfig> Load(const std::string& path);
  Status Save(const std::string& path) const;
};

}  // namespace tarn::runtime
