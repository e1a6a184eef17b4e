// The pipeline steps as library calls. apps/tarn parses argv into these
// options; tests call them directly.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/model_set.h"

namespace tarn::pipeline {

struct NewOptions {
  std::string name;              // folder to create (may be a path)
  std::string algorithm = "NN";  // NN, LR or TENSORFLOW
};
// Creates the folder with ModelConfig.json (Shifu's defaults) and the empty
// columns/*.names files. Refuses to overwrite an existing ModelConfig.json.
Status NewModelSet(const NewOptions& options);

// Writes ColumnConfig.json: one entry per header column with its flag (from
// the target, weight and column-name files) and type (N/C).
Status RunInit(const ModelSet& ms);

struct StatsOptions {
  bool correlation = false;  // -c: only compute correlation.csv
};
Status RunStats(const ModelSet& ms, const StatsOptions& options);

// Pearson correlation of the candidate columns that have stats (numeric raw
// values, missing as the mean; categorical as their bin's positive rate).
// Writes correlation.csv atomically.
Status ComputeCorrelation(const ModelSet& ms);
// Reads correlation.csv: column names and the row-major matrix.
Result<std::pair<std::vector<std::string>, std::vector<double>>> ReadCorrelation(
    const std::string& path);

struct NormOptions {
  bool shuffle = false;
  bool text_format = false;  // Shifu's |-delimited gzip layout instead of binary shards
};
Status RunNorm(const ModelSet& ms, const NormOptions& options);

struct VarselOptions {
  bool list = false;
  bool reset = false;
};
// filterBy KS, IV, MIX, PARETO rank by the column stats; SE and ST rank by the
// sensitivity of models/model0.tarn (trained first when it is missing, or
// always with shifu.varsel.se.reuse false), written to varsel/se.N and
// tmp/varselectStats/se (docs/SHIFU-COMPATIBILITY.md, "varsel by sensitivity").
Status RunVarsel(const ModelSet& ms, const VarselOptions& options);

struct TrainOptions {
  bool distributed = false;  // as basic.runMode DIST (tarn train --yarn)
  // The input columns (in-process training only); empty: the finalSelect ones.
  std::vector<data::ColumnConfig> inputs;
};
// Trains train.baggingNum networks (NN, LR or TensorFlow's DNN) on the columns
// with finalSelect, from tmp/NormalizedData, into models/model{i}.tarn;
// checkpoints in tmp/modelsTmp; train.isContinuous resumes from them.
// With basic.runMode DIST it runs a distributed job instead (parameter
// servers, workers and backups; see RunDistributedTrain).
Status RunTrain(const ModelSet& ms, const TrainOptions& options);
// runMode DIST: writes tmp/dist/job.json and runs the job's coordinator,
// which launches the nodes on tarn.cluster.backend.
Status RunDistributedTrain(const ModelSet& ms);

struct EvalOptions {
  std::string name;            // -run NAME: only this eval set
  bool score_only = false;     // -score: EvalScore only
  bool sort_by_score = false;  // -sort: EvalScore by score, highest first (Shifu's Eval.pig)
  bool norm_only = false;      // -norm: EvalNormalized (the first model's inputs) only
};
// Scores each eval set with every model in models/ and writes evals/<name>/.
Status RunEval(const ModelSet& ms, const EvalOptions& options);

}  // namespace tarn::pipeline
