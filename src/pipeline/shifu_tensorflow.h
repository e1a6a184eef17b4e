// shifu-tensorflow model sets through tarn train (docs/TRAINING.md, "shifu-tensorflow
// scripts"): which of Shifu's Python scripts the model set's training step is, the rule
// that decides whether tarn runs it or trains with its native engine (printed on every
// run), and what the script gets when it runs: shifu-tensorflow's roles (parameter
// servers, workers, backups), environment and data layout.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "assembly/spec.h"
#include "common/status.h"
#include "data/column_config.h"
#include "pipeline/model_set.h"

namespace tarn::pipeline {

// One of Shifu's stock scripts, as a file of ShifuML/shifu's `release` branch (what
// Shifu 0.12 ships in <SHIFU_HOME>/scripts/) held at one commit of that branch.
struct ShifuStockScript {
  std::string_view name;    // "distributed_tf_keras.py"
  std::string_view sha256;  // of the file's bytes, lower-case hex
  std::string_view commit;  // the ShifuML/shifu commit that wrote this version
  std::string_view date;    // that commit's date
};
// Every version of each script that tarn recognizes, newest first per script.
const std::vector<ShifuStockScript>& ShifuStockScripts();
// The stock copy whose bytes are `contents`, or null.
const ShifuStockScript* FindShifuStockScript(std::string_view contents);

// The script Shifu's TrainModelProcessor runs for these train#params:
// "distributed_tf20_" when TF.version is "2.0", else "distributed_tf_", then TF_type
// (or TF_Type, as Shifu's docs spell it) lower-cased, "keras" when absent, then ".py".
Result<std::string> ShifuScriptName(const data::Json& train_params);

// What trains a train.algorithm TensorFlow model set.
struct ScriptDecision {
  bool run_script = false;  // false: tarn's native engine
  std::string script;       // the script's path in the model set
  std::string reason;
  bool stock = false;   // the script is one of Shifu's stock copies
  bool edited = false;  // the script exists and is none of them
  // "train: <script>: <who trains> (<reason>)"
  std::string Line() const;
};
// The rule (tarn.train.script auto|run|native): nullopt when train.algorithm is not
// TensorFlow (no script is involved). auto: the script runs in runMode DIST (or
// MAPRED, or `distributed`: tarn train --yarn) unless it is byte-identical to a stock
// copy; absent or in LOCAL mode, the native engine trains. run: the script runs (an
// error when there is none). native: the native engine trains.
Result<std::optional<ScriptDecision>> DecideShifuScript(const ModelSet& ms, bool distributed);

// What the Python that will run the script has (one quick probe of it).
struct PythonFacts {
  std::string python_version;      // "3.11.7"
  std::string tensorflow_version;  // "" when no TensorFlow distribution is installed
  bool tf_keras = false;           // the tf-keras package (Keras 2 for TF >= 2.16)
  std::string syntax_error;        // "line N: message" when the script does not compile
};
Result<PythonFacts> ProbePython(const std::string& python, const std::string& script);

// Refuses, before any role starts, a script that the Python and TensorFlow found cannot
// run: Python 2 syntax or modules under Python 3, tf.contrib on TensorFlow 2,
// tf.estimator on TensorFlow >= 2.16, TF 1.x names outside tf.compat.v1 on TensorFlow 2,
// Keras 2's graph-mode calls on Keras 3. The error names the file, the line, the API and
// the versions found.
Status CheckScriptRunnable(const std::string& script_path, std::string_view script,
                           const PythonFacts& facts, const std::string& python);

// The normalized data as the script reads it (research: Shifu's norm output): gzip text
// parts, '|'-delimited, one field per ColumnConfig column in its order (the target as 0
// or 1, each selected or candidate column's normalized value, empty otherwise), then the
// weight as the last field.
struct ShifuTextData {
  std::vector<std::string> parts;  // absolute paths, one per input file
  uint64_t rows = 0;
  bool converted = false;  // written from tarn's binary shards (else norm -format text's)
};
// Uses tmp/NormalizedData's text parts when `tarn norm -format text` wrote them; else
// writes them from its binary shards into `out_dir` (tarn's own output is left as it is).
Result<ShifuTextData> PrepareShifuTextData(const ModelSet& ms,
                                           const std::vector<data::ColumnConfig>& columns,
                                           const std::string& out_dir);

// The roles and environment of one run of a script, as shifu-tensorflow's AM and task
// executors give them (research12 §3.2).
struct ShifuScriptJob {
  std::string script;     // absolute
  std::string python;     // tarn.train.script.python
  std::string model_set;  // the folder ModelConfig.json and ColumnConfig.json are copied from
  int ps = 1;
  int workers = 1;
  int backups = 1;
  // Per worker task index: its comma-separated data files (round-robin by file).
  std::vector<std::string> worker_data;
  std::string data_lists_dir;  // where worker-<i>.data files hold worker_data
  // Env every role gets (DELIMITER, column numbers, paths, SOCKET_SERVER_PORT, ...).
  std::map<std::string, std::string> env;
  // On YARN: the job's folder in HDFS (files/: the script, ModelConfig.json and
  // ColumnConfig.json; data/: the parts worker_data names; model/: what the chief uploads),
  // and each role's container size.
  std::string job_dir;
  int64_t ps_memory_mb = 0, worker_memory_mb = 0;
  int ps_vcores = 1, worker_vcores = 1;
};
// Splits `parts` round-robin across `workers` (Shifu's TrainingDataSet).
Result<std::vector<std::string>> SplitPartsAcrossWorkers(const std::vector<std::string>& parts,
                                                         int workers);
// The YARN Service the runner runs: component `ps` (job ps) and `worker` (job worker,
// tarn.backups spares), each a NEVER-restart TensorFlow task whose launch command copies
// ModelConfig.json and ColumnConfig.json into its folder, exports TASK_ID and (workers)
// TRAINING_DATA_PATH for its task index, and execs the script.
assembly::Service ShifuScriptService(const ShifuScriptJob& job, const std::string& name);

// The same roles on YARN, as the Yarnfile (JSON text) tarn's assembly ApplicationMaster
// runs: the script and the config files are STATIC files localized from job.job_dir/files,
// each worker's TRAINING_DATA_PATH files are named by TARN_SHIFU_DATA_<task index>
// (HDFS URIs), and each role runs under `tarn assembly shifu-task` (RunShifuTask), which
// gives the script what shifu-tensorflow's TaskExecutor gives it in a container.
std::string ShifuScriptYarnfile(const ShifuScriptJob& job, const std::string& name);

// `tarn assembly shifu-task [--model-out URI] -- COMMAND...`, in a YARN container: copies
// this worker's data files (TARN_SHIFU_DATA_<TASK_INDEX>) into ./data and points
// TRAINING_DATA_PATH at them, gives TMP_MODEL_PATH and FINAL_MODEL_PATH folders of the
// container and SOCKET_SERVER_PORT a listener on 127.0.0.1 whose progress lines go to the
// container's log, runs COMMAND, and when the chief (worker 0) exits 0 uploads
// FINAL_MODEL_PATH to `model_out`. Returns the process's exit code (the script's; 1 when
// the upload fails; 128+N for a signal N).
struct ShifuTaskOptions {
  std::string model_out;
  std::vector<std::string> command;
};
int RunShifuTask(const ShifuTaskOptions& options);

// Runs the model set's script (the decision said so) through the assembly runner: on the
// local backend, or (tarn.cluster.backend yarn) in YARN containers under tarn's assembly
// ApplicationMaster, the data and files staged in HDFS and the model downloaded into
// models/ after; the chief's (worker 0's) exit is the job's.
Status RunShifuScript(const ModelSet& ms, const ScriptDecision& decision);

}  // namespace tarn::pipeline
