// tarn train with tarn.cluster.backend=yarn: the job runs as a YARN
// application whose ApplicationMaster is tarn's coordinator (see
// docs/YARN.md). The call returns when the application ends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/settings.h"
#include "common/status.h"
#include "runtime/job.h"

namespace tarn::runtime {

// The credentials-file alias under which the AM receives the job's secret.
inline constexpr const char* kYarnSecretAlias = "tarn.job.secret";

struct YarnJobPaths {
  std::string model_set;        // the local model set (names the HDFS folder)
  std::string normalized_data;  // staged to HDFS
  std::string work_dir;         // tmp/dist: job-yarn.json
  std::string tmp_dir;          // tmp/: cluster.json, history, tensorboard come back here
  std::string models_dir;       // models/: the trained models come back here
  // The model set's data paths (training, validation and eval sets): on a secured cluster
  // the job gets a delegation token for each HDFS among them.
  std::vector<std::string> data_paths;
  int64_t am_memory_mb = 1024;
  int am_vcores = 1;
};

Status RunYarnJob(JobConfig job, const Settings& settings, const YarnJobPaths& local,
                  const std::string& secret);

}  // namespace tarn::runtime
