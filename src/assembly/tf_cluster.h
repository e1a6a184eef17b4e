// TensorFlow tasks in an assembly: which components are TensorFlow jobs, and what each task
// is told about its cluster, in the TonY and Submarine conventions:
//
//   TF_CONFIG     {"cluster": {job: ["host:port", ...]}, "task": {"type": job, "index": i}}
//                 (the evaluator job is in the cluster only for evaluators, as TonY does)
//   CLUSTER_SPEC  {job: ["host:port", ...]}, every job
//   JOB_NAME, TASK_INDEX, TASK_NUM (tasks in the cluster, every job), IS_CHIEF ("true"/"false")
//   PS_HOSTS, WORKER_HOSTS, CHIEF_HOSTS, MASTER_HOSTS, EVALUATOR_HOSTS: "host:port,host:port"
//
// The env vars are tokens of the launch command too (${WORKER_HOSTS}), so a TF 1.x script's
// `--ps_hosts=${PS_HOSTS} --worker_hosts=${WORKER_HOSTS} --job_name=${JOB_NAME}
// --task_index=${TASK_INDEX}` is written in the file; with the property tarn.tf.legacy-args
// = true tarn appends exactly those four arguments itself.
//
// Pure functions: the runner reserves the addresses and passes them in.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "assembly/spec.h"

namespace tarn::assembly {

// Component property naming its TF job (ps, worker, chief, master, evaluator), or "none" for
// a component whose name is a TF job's but that is no TF task.
inline constexpr const char* kTfRoleProperty = "tarn.tf.role";
// Component property: "true" appends --ps_hosts/--worker_hosts/--job_name/--task_index.
inline constexpr const char* kTfLegacyArgsProperty = "tarn.tf.legacy-args";

// The TF jobs tarn knows, in the order TF_CONFIG lists them.
const std::vector<std::string>& TfJobNames();

// The TF job `component` is a task of: properties["tarn.tf.role"] when set, else its name
// when that is a TF job's; "" when it is no TF task. A bad role is an error naming the field.
Result<std::string> TfJobOf(const Component& component, const std::string& file);

// Every TF component of the service: job -> component name. Two components of one job are
// an error naming the second's field.
Result<std::map<std::string, std::string>> TfJobs(const Service& service, const std::string& file);

// The addresses of each job's tasks, "host:port", by task index.
using TfCluster = std::map<std::string, std::vector<std::string>>;

struct TfTask {
  std::string job;
  int index = 0;
};

// Whether `task` is the chief: the chief (or master) task, or worker 0 when the cluster has
// neither.
bool IsTfChief(const TfCluster& cluster, const TfTask& task);

// TF_CONFIG for `task` (compact JSON).
std::string TfConfigJson(const TfCluster& cluster, const TfTask& task);

// The env vars of `task` named at the top of this file.
std::map<std::string, std::string> TfTaskEnv(const TfCluster& cluster, const TfTask& task);

// "--ps_hosts=... --worker_hosts=... --job_name=... --task_index=..." (the TF 1.x
// distributed guide's flags), for a component with tarn.tf.legacy-args true.
std::string TfLegacyArgs(const TfCluster& cluster, const TfTask& task);

}  // namespace tarn::assembly
