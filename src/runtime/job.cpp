#include "runtime/job.h"

#include "common/files.h"
#include "common/strings.h"

namespace tarn::runtime {

Result<Consistency> ParseConsistency(const std::string& name) {
  std::string s = ToLower(name);
  if (s == "sync") return Consistency::kSync;
  if (s == "async") return Consistency::kAsync;
  if (s == "ssp") return Consistency::kSsp;
  return InvalidArgument("consistency mode '" + name + "' is not one of sync, async, ssp");
}

const char* ConsistencyName(Consistency c) {
  switch (c) {
    case Consistency::kSync:
      return "sync";
    case Consistency::kAsync:
      return "async";
    case Consistency::kSsp:
      return "ssp";
  }
  return "?";
}

Json JobConfig::ToJson() const {
  return Json{
      {"algorithm", algorithm},
      {"trainParams", train_params},
      {"columns", data::ColumnConfigsToJson(columns)},
      {"inputs", inputs},
      {"normType", norm_type},
      {"stdDevCutOff", std_dev_cut_off},
      {"missingValues", missing_values},
      {"modelSetColumns", model_set_columns},
      {"graphModel", graph_model},
      {"idColumns", id_columns},
      {"dataDir", data_dir},
      {"shards", shard_paths},
      {"validRate", valid_rate},
      {"seed", seed},
      {"epochs", epochs},
      {"batchSize", batch_size},
      {"bags", bags},
      {"baggingSampleRate", bagging_sample_rate},
      {"baggingWithReplacement", bagging_with_replacement},
      {"convergenceThreshold", convergence_threshold},
      {"earlyStopPatience", early_stop_patience},
      {"consistency", ConsistencyName(consistency)},
      {"staleness", staleness},
      {"commPeriod", comm_period},
      {"isContinuous", is_continuous},
      {"tensorboard", tensorboard},
      {"ps", ps},
      {"workers", workers},
      {"backups", backups},
      {"heartbeatMs", heartbeat_ms},
      {"maxMissedHeartbeats", max_missed_heartbeats},
      {"allowDegraded", allow_degraded},
      {"clusterTls", cluster_tls},
      {"maxPsRestarts", max_ps_restarts},
      {"checkpointIntervalMs", checkpoint_interval_ms},
      {"backend", backend},
      {"psMemoryMb", ps_memory_mb},
      {"workerMemoryMb", worker_memory_mb},
      {"psVcores", ps_vcores},
      {"workerVcores", worker_vcores},
      {"workerGpus", worker_gpus},
      {"bindHost", bind_host},
      {"statusPort", status_port},
      {"retryMs", retry_ms},
      {"maxMessageBytes", max_message_bytes},
      {"testDropRate", test_drop_rate},
      {"testDelayMs", test_delay_ms},
      {"testCrashBeforeModel", test_crash_before_model},
      {"modelSetDir", model_set_dir},
      {"checkpointDir", checkpoint_dir},
      {"modelsDir", models_dir},
      {"tensorboardDir", tensorboard_dir},
      {"clusterJson", cluster_json},
      {"historyJson", history_json},
      {"logsDir", logs_dir},
      {"servingExportDir", serving_export_dir},
      {"servingExportEvery", serving_export_every},
      {"servingInstances", serving_instances},
  };
}

Result<JobConfig> JobConfig::FromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("job description is not a JSON object");
  JobConfig c;
  try {
    c.algorithm = j.at("algorithm").get<std::string>();
    c.train_params = j.at("trainParams");
    TARN_ASSIGN_OR_RETURN(c.columns,
                          data::ParseColumnConfigs(j.at("columns").dump(), "job columns"));
    c.inputs = j.at("inputs").get<int>();
    c.norm_type = j.at("normType").get<std::string>();
    c.std_dev_cut_off = j.at("stdDevCutOff").get<double>();
    c.missing_values = j.at("missingValues").get<std::vector<std::string>>();
    c.model_set_columns = j.value("modelSetColumns", Json::array()).get<std::vector<std::string>>();
    c.graph_model = j.value("graphModel", Json());
    c.id_columns = j.value("idColumns", Json::array());
    c.data_dir = j.at("dataDir").get<std::string>();
    c.shard_paths = j.at("shards").get<std::vector<std::string>>();
    c.valid_rate = j.at("validRate").get<double>();
    c.seed = j.at("seed").get<int64_t>();
    c.epochs = j.at("epochs").get<int>();
    c.batch_size = j.at("batchSize").get<int>();
    c.bags = j.at("bags").get<int>();
    c.bagging_sample_rate = j.at("baggingSampleRate").get<double>();
    c.bagging_with_replacement = j.at("baggingWithReplacement").get<bool>();
    c.convergence_threshold = j.at("convergenceThreshold").get<double>();
    c.early_stop_patience = j.at("earlyStopPatience").get<int>();
    TARN_ASSIGN_OR_RETURN(c.consistency, ParseConsistency(j.at("consistency").get<std::string>()));
    c.staleness = j.at("staleness").get<int>();
    c.comm_period = j.at("commPeriod").get<int>();
    c.is_continuous = j.at("isContinuous").get<bool>();
    c.tensorboard = j.at("tensorboard").get<bool>();
    c.ps = j.at("ps").get<int>();
    c.workers = j.at("workers").get<int>();
    c.backups = j.at("backups").get<int>();
    c.heartbeat_ms = j.at("heartbeatMs").get<int>();
    c.max_missed_heartbeats = j.at("maxMissedHeartbeats").get<int>();
    c.allow_degraded = j.at("allowDegraded").get<bool>();
    c.cluster_tls = j.value("clusterTls", false);
    c.max_ps_restarts = j.at("maxPsRestarts").get<int>();
    c.checkpoint_interval_ms = j.value("checkpointIntervalMs", 1000);
    c.backend = j.at("backend").get<std::string>();
    c.ps_memory_mb = j.at("psMemoryMb").get<int64_t>();
    c.worker_memory_mb = j.at("workerMemoryMb").get<int64_t>();
    c.ps_vcores = j.at("psVcores").get<int>();
    c.worker_vcores = j.at("workerVcores").get<int>();
    c.worker_gpus = j.at("workerGpus").get<int>();
    c.bind_host = j.at("bindHost").get<std::string>();
    c.status_port = j.at("statusPort").get<int>();
    c.retry_ms = j.at("retryMs").get<int>();
    c.max_message_bytes = j.at("maxMessageBytes").get<int64_t>();
    c.test_drop_rate = j.at("testDropRate").get<double>();
    c.test_delay_ms = j.at("testDelayMs").get<int>();
    c.test_crash_before_model = j.at("testCrashBeforeModel").get<int>();
    c.model_set_dir = j.at("modelSetDir").get<std::string>();
    c.checkpoint_dir = j.at("checkpointDir").get<std::string>();
    c.models_dir = j.at("modelsDir").get<std::string>();
    c.tensorboard_dir = j.at("tensorboardDir").get<std::string>();
    c.cluster_json = j.at("clusterJson").get<std::string>();
    c.history_json = j.at("historyJson").get<std::string>();
    c.logs_dir = j.at("logsDir").get<std::string>();
    c.serving_export_dir = j.at("servingExportDir").get<std::string>();
    c.serving_export_every = j.at("servingExportEvery").get<int>();
    c.serving_instances = j.value("servingInstances", 0);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("job description: ") + e.what());
  }
  if (c.inputs < 1 || c.ps < 1 || c.workers < 1 || c.backups < 0 || c.epochs < 1 ||
      c.batch_size < 1 || c.comm_period < 1 || c.staleness < 0 || c.heartbeat_ms < 1 ||
      c.max_missed_heartbeats < 1) {
    return InvalidArgument("job description has an out-of-range count");
  }
  return c;
}

Result<JobConfig> JobConfig::Load(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) return Corrupt(path + " is not valid JSON");
  auto c = FromJson(j);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

Status JobConfig::Save(const std::string& path) const {
  return WriteFileAtomic(path, ToJson().dump(2) + "\n");
}

}  // namespace tarn::runtime
