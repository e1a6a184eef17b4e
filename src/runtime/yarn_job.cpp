// tarn train on YARN: stages the normalized data and the job in HDFS,
// submits the coordinator as the ApplicationMaster through the
// ResourceManager's REST API, follows the application (printing the epochs
// as the coordinator records them in HDFS), and fetches the model.
#include "runtime/yarn_job.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "cluster/yarn/capacity.h"
#include "cluster/yarn/delegation_tokens.h"  // for ExtraHdfsServers
#include "cluster/yarn/rm_rest.h"
#include "cluster/yarn/staging.h"
#include "common/checksum.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "model/epoch_report.h"
#include "net/hadoop_conf.h"
#include "runtime/checkpoint.h"

namespace tarn::runtime {

namespace {

// The coordinator's epoch line, from its history entry.
// `bags`: the job's bag count; the line names the bag only when there are several.
std::string EpochLine(const data::Json& h, int bags) {
  auto number = [&h](const char* key) {
    auto it = h.find(key);
    return it != h.end() && it->is_number() ? it->get<double>() : NAN;
  };
  model::EpochFigures f;
  f.epoch = h.value("epoch", 0);
  f.shifu_train_error = number("shifuTrainError");
  f.shifu_valid_error = number("shifuValidError");
  f.train_loss = number("trainError");
  f.valid_loss = number("validError");
  f.samples_per_sec = h.value("samplesPerSec", 0.0);
  f.seconds = h.value("seconds", 0.0);
  f.bag = bags > 1 ? h.value("bag", 0) : -1;
  return model::FormatEpochLine(f);
}

bool Finished(const std::string& state) {
  return state == "FINISHED" || state == "FAILED" || state == "KILLED";
}

// Fails in seconds, before anything is staged, when the cluster cannot hold the job's
// containers (they would otherwise wait until the coordinator gives up on its nodes).
Status CheckClusterCanRun(cluster::yarn::ResourceManagerClient& rm, const JobConfig& job,
                          const YarnJobPaths& local, const Settings& settings) {
  using cluster::yarn::ContainerAsk;
  std::vector<ContainerAsk> asks = {
      {"ApplicationMaster (coordinator)", 1, local.am_memory_mb, local.am_vcores, "shifu.am.memory",
       "shifu.am.vcores", ""},
      {"parameter server", job.ps, job.ps_memory_mb, job.ps_vcores, "shifu.ps.memory",
       "shifu.ps.vcores", "shifu.ps.instances"},
      {"worker", job.workers + job.backups, job.worker_memory_mb, job.worker_vcores,
       "shifu.worker.memory", "shifu.worker.vcores", "shifu.worker.instances.backup"},
      {"model server", job.serving_instances, job.worker_memory_mb, job.worker_vcores,
       "shifu.worker.memory", "shifu.worker.vcores", "shifu.serving.instances"}};
  const std::string queue = settings.GetString("shifu.application.yarn.queue");
  auto cluster = rm.GetClusterResources(queue);
  if (!cluster.ok()) {
    TARN_LOG(kWarn) << "cannot read the cluster's resources (" << cluster.status().message()
                    << "); submitting without checking that its containers fit";
    return Status::Ok();
  }
  TARN_RETURN_IF_ERROR(cluster::yarn::CheckAsksFit(asks, *cluster));
  if (!cluster::yarn::AsksFit(asks, *cluster, true)) {
    TARN_LOG(kWarn) << "the cluster is busy: the job's containers ("
                    << cluster::yarn::DescribeAsks(asks) << ") wait until other applications free "
                    << "room; the cluster has " << cluster::yarn::DescribeCluster(*cluster);
  } else {
    TARN_LOG(kDebug) << "YARN: asking " << cluster::yarn::DescribeAsks(asks) << "; the cluster has "
                     << cluster::yarn::DescribeCluster(*cluster);
  }
  return Status::Ok();
}

}  // namespace

Status RunYarnJob(JobConfig job, const Settings& settings, const YarnJobPaths& local,
                  const std::string& secret) {
  TARN_ASSIGN_OR_RETURN(auto conf, net::HadoopConf::FromSettings(settings));
  TARN_ASSIGN_OR_RETURN(long long timeout_s, settings.GetInt("tarn.hdfs.timeout-s"));
  auto rm = cluster::yarn::ResourceManagerClient::FromConf(
      conf, settings.GetString("tarn.hdfs.user"), static_cast<int>(timeout_s * 1000));
  TARN_ASSIGN_OR_RETURN(std::string root,
                        cluster::yarn::StagingRoot(
                            conf, settings.GetString("tarn.yarn.staging-dir"), rm.options().user));
  // One HDFS folder per model set: its data, checkpoints (a rerun with
  // isContinuous resumes from them), model, history and event files.
  char tag[16];
  std::snprintf(tag, sizeof(tag), "%08x",
                Crc32c(0, local.model_set.data(), local.model_set.size()));
  std::string name = local.model_set.substr(local.model_set.rfind('/') + 1);
  const std::string home = data::ChildPath(data::ChildPath(root, "modelsets"), name + "-" + tag);
  TARN_RETURN_IF_ERROR(CheckClusterCanRun(rm, job, local, settings));
  const std::string data_dir = data::ChildPath(home, "NormalizedData");
  TARN_LOG(kInfo) << "staging " << local.normalized_data << " in " << data_dir;
  {
    TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(data_dir));
    TARN_RETURN_IF_ERROR(fs->Delete(data_dir, true));
  }
  TARN_RETURN_IF_ERROR(data::CopyTree(local.normalized_data, data_dir));
  for (auto& path : job.shard_paths) {
    path = data::ChildPath(data_dir, path.substr(path.rfind('/') + 1));
  }
  job.data_dir = data_dir;
  job.checkpoint_dir = data::ChildPath(home, "checkpoints");
  job.models_dir = data::ChildPath(home, "models");
  job.tensorboard_dir = data::ChildPath(home, "tensorboard");
  job.cluster_json = data::ChildPath(home, "cluster.json");
  job.history_json = data::ChildPath(home, "history.json");
  job.logs_dir = "logs";  // in the AM's container; YARN keeps container logs
  if (job.serving_instances > 0) job.serving_export_dir = data::ChildPath(home, "serving");
  if (!job.is_continuous) {
    (void)WriteWhole(job.history_json, "[]\n");
  }
  const std::string job_path = JoinPath(local.work_dir, "job-yarn.json");
  TARN_RETURN_IF_ERROR(job.Save(job_path));

  cluster::yarn::AmLaunch launch;
  launch.name = settings.GetString("shifu.application.name");
  launch.queue = settings.GetString("shifu.application.yarn.queue");
  launch.memory_mb = local.am_memory_mb;
  launch.vcores = local.am_vcores;
  launch.max_attempts = 2;
  launch.keep_containers = true;
  launch.argv = {"tarn", "node", "--role", "coordinator", "--job", "job.json"};
  launch.files.push_back({"job.json", job_path});
  launch.secrets[kYarnSecretAlias] = secret;
  TARN_ASSIGN_OR_RETURN(launch.staging_root,
                        cluster::yarn::StagingRoot(
                            conf, settings.GetString("tarn.yarn.staging-dir"), rm.options().user));
  launch.hdfs_uris = local.data_paths;
  for (const auto& uri : cluster::yarn::ExtraHdfsServers(settings)) launch.hdfs_uris.push_back(uri);
  TARN_ASSIGN_OR_RETURN(auto app, cluster::yarn::StageAndSubmit(rm, conf, launch));
  std::printf("submitted YARN application %s\n", app.id.c_str());
  std::fflush(stdout);

  // Follow: the application's state from the RM, the epochs from HDFS.
  size_t printed = 0;
  cluster::yarn::AppReport report;
  std::string last_state;
  while (true) {
    auto r = rm.GetApplication(app.id);
    if (r.ok()) {
      report = *r;
      if (report.state != last_state) {
        TARN_LOG(kInfo) << app.id << ": " << report.state;
        last_state = report.state;
      }
    }
    auto history = ReadWhole(job.history_json);
    if (history.ok()) {
      data::Json h = data::Json::parse(*history, nullptr, false);
      if (h.is_array()) {
        if (h.size() < printed) printed = 0;  // a second attempt rewrote it
        for (; printed < h.size(); ++printed) {
          if (!Quiet()) std::printf("%s\n", EpochLine(h[printed], job.bags).c_str());
        }
        std::fflush(stdout);
      }
    }
    if (r.ok() && Finished(report.state)) break;
    if (job.serving_instances > 0) {
      // Training is over when the coordinator says it only serves now.
      auto c = ReadWhole(job.cluster_json);
      data::Json cj = c.ok() ? data::Json::parse(*c, nullptr, false) : data::Json();
      if (cj.is_object() && cj.value("phase", "") == "serving") {
        (void)data::CopyTree(job.cluster_json, JoinPath(local.tmp_dir, "cluster.json"));
        TARN_RETURN_IF_ERROR(data::CopyTree(job.models_dir, local.models_dir));
        for (const auto& n : cj.value("nodes", data::Json::array())) {
          if (n.value("role", "") == "serving" && n.value("state", "") == "running") {
            std::printf("model server: http://%s/v1/models/default\n",
                        n.value("address", "").c_str());
          }
        }
        std::printf(
            "YARN application %s: training done, model servers running; stop them "
            "with 'tarn yarn kill %s'\n",
            app.id.c_str(), app.id.c_str());
        std::fflush(stdout);
        return Status::Ok();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
  std::printf("YARN application %s: %s %s\n", app.id.c_str(), report.state.c_str(),
              report.final_status.c_str());
  std::fflush(stdout);
  // What a local run leaves behind, fetched from HDFS.
  (void)data::CopyTree(job.cluster_json, JoinPath(local.tmp_dir, "cluster.json"));
  (void)data::CopyTree(job.history_json, JoinPath(local.tmp_dir, "dist/history.json"));
  (void)data::CopyTree(job.tensorboard_dir, JoinPath(local.tmp_dir, "tensorboard"));
  if (report.final_status != "SUCCEEDED") {
    return FailedPrecondition("YARN application " + app.id + " ended " + report.state + " " +
                              report.final_status +
                              (report.diagnostics.empty() ? "" : ": " + report.diagnostics) +
                              " ('tarn yarn logs " + app.id + "' shows the coordinator's log)");
  }
  TARN_RETURN_IF_ERROR(data::CopyTree(job.models_dir, local.models_dir));
  TARN_LOG(kInfo) << "models of " << app.id << " -> " << local.models_dir;
  return Status::Ok();
}

}  // namespace tarn::runtime
