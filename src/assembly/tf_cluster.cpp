#include "assembly/tf_cluster.h"

#include <algorithm>

#include "common/strings.h"

namespace tarn::assembly {
namespace {

bool IsTfJob(const std::string& name) {
  const auto& jobs = TfJobNames();
  return std::find(jobs.begin(), jobs.end(), name) != jobs.end();
}

std::string HostList(const TfCluster& cluster, const std::string& job) {
  auto it = cluster.find(job);
  return it == cluster.end() ? "" : Join(it->second, ",");
}

// The cluster as `task` sees it in TF_CONFIG: without the evaluator job, unless it is one
// (TonY's rule: an evaluator is not part of the training cluster).
data::Json ClusterJson(const TfCluster& cluster, const std::string& viewer_job) {
  data::Json j = data::Json::object();
  for (const auto& job : TfJobNames()) {
    auto it = cluster.find(job);
    if (it == cluster.end() || it->second.empty()) continue;
    if (job == "evaluator" && viewer_job != "evaluator") continue;
    j[job] = it->second;
  }
  for (const auto& [job, addresses] : cluster) {  // jobs tarn does not name, as given
    if (!IsTfJob(job) && !addresses.empty()) j[job] = addresses;
  }
  return j;
}

}  // namespace

const std::vector<std::string>& TfJobNames() {
  static const std::vector<std::string> kJobs = {"chief", "master", "ps", "worker", "evaluator"};
  return kJobs;
}

Result<std::string> TfJobOf(const Component& component, const std::string& file) {
  auto it = component.configuration.properties.find(kTfRoleProperty);
  if (it == component.configuration.properties.end()) {
    return IsTfJob(component.name) ? component.name : std::string();
  }
  if (it->second == "none") return std::string();
  if (IsTfJob(it->second)) return it->second;
  return InvalidArgument(file + ": components[" + std::to_string(component.index) +
                         "].configuration.properties." + kTfRoleProperty + ": '" + it->second +
                         "' is not a TensorFlow job (" + Join(TfJobNames(), ", ") + ", or none)");
}

Result<std::map<std::string, std::string>> TfJobs(const Service& service, const std::string& file) {
  std::map<std::string, std::string> jobs;
  for (const auto& c : service.components) {
    TARN_ASSIGN_OR_RETURN(std::string job, TfJobOf(c, file));
    if (job.empty()) continue;
    auto [it, added] = jobs.emplace(job, c.name);
    if (!added) {
      return InvalidArgument(file + ": components[" + std::to_string(c.index) + "]: component " +
                             c.name + " is TensorFlow job '" + job + "', and so is component " +
                             it->second + "; one component per job (set " + kTfRoleProperty +
                             " to none on the other)");
    }
  }
  return jobs;
}

bool IsTfChief(const TfCluster& cluster, const TfTask& task) {
  if (task.job == "chief" || task.job == "master") return task.index == 0;
  auto has = [&](const char* job) {
    auto it = cluster.find(job);
    return it != cluster.end() && !it->second.empty();
  };
  return task.job == "worker" && task.index == 0 && !has("chief") && !has("master");
}

std::string TfConfigJson(const TfCluster& cluster, const TfTask& task) {
  data::Json j = data::Json::object();
  j["cluster"] = ClusterJson(cluster, task.job);
  j["task"] = {{"type", task.job}, {"index", task.index}};
  return j.dump();
}

std::map<std::string, std::string> TfTaskEnv(const TfCluster& cluster, const TfTask& task) {
  std::map<std::string, std::string> env;
  env["TF_CONFIG"] = TfConfigJson(cluster, task);
  data::Json spec = data::Json::object();
  size_t tasks = 0;
  for (const auto& [job, addresses] : cluster) {
    if (addresses.empty()) continue;
    spec[job] = addresses;
    tasks += addresses.size();
    env[ToUpper(job) + "_HOSTS"] = Join(addresses, ",");
  }
  env["CLUSTER_SPEC"] = spec.dump();
  env["JOB_NAME"] = task.job;
  env["TASK_INDEX"] = std::to_string(task.index);
  env["TASK_NUM"] = std::to_string(tasks);
  env["IS_CHIEF"] = IsTfChief(cluster, task) ? "true" : "false";
  return env;
}

std::string TfLegacyArgs(const TfCluster& cluster, const TfTask& task) {
  std::string args;
  if (cluster.count("ps")) args += "--ps_hosts=" + HostList(cluster, "ps") + " ";
  args += "--worker_hosts=" + HostList(cluster, "worker");
  args += " --job_name=" + task.job + " --task_index=" + std::to_string(task.index);
  return args;
}

}  // namespace tarn::assembly
