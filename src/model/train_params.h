// TrainParams: ModelConfig.json's train#params, typed, read and checked in one
// place.
//
// Every key is declared once, in the table in train_params.cpp, with Shifu's
// spelling, its type, default, bounds, the algorithms that read it and a doc
// line; docs/TRAINING.md's key table is generated from it (`tarn settings
// --train-params`) and a unit test fails when the doc is stale. The model
// spec, the optimizer, Shifu's error figure, the mini-batch size and the
// checkpoint interval all read this struct, never the JSON.
//
// Parse rules:
//   - a key the algorithm reads must have its type and lie within its bounds,
//     else an error naming it: "train.params.LearningRate must be a positive
//     number, got -1" (numbers given as strings, "0.1", are accepted, as Shifu
//     parses them with Double.valueOf);
//   - NumHiddenNodes must list NumHiddenLayers sizes and ActivationFunc one or
//     NumHiddenLayers names;
//   - an unknown key is a warning naming the closest known key, never an error
//     (Shifu ignores such keys); a key Shifu reads but tarn does not, or one
//     read only by another algorithm, is a note.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/model_spec.h"
#include "model/optimizer.h"

namespace tarn::model {

// train.algorithm, for the algorithms tarn trains.
enum class Algorithm { kNN, kLR, kTensorFlow, kWDL, kDeepFM, kDCN };
// "NN", "LR", "TensorFlow", "WDL", "DeepFM", "DCN", case-insensitive; anything
// else is Unsupported.
Result<Algorithm> ParseAlgorithm(std::string_view name);
const char* AlgorithmName(Algorithm a);

// The graph models' keys (WDL, DeepFM, DCN; ModelGraph for NN and TensorFlow),
// read by src/train/graph_models.h.
struct GraphModelKeys {
  // NumEmbedColumnIds: the columns embedded in the deep part (columnNum
  // integers as Shifu, or names); absent: every categorical input with ids.
  std::optional<std::vector<data::Json>> embed_columns;
  int embed_outputs = 8;     // NumEmbedOuputs (sic, Shifu's spelling): the embedding width
  bool wide = true;          // wideEnable
  bool deep = true;          // deepEnable
  bool embed = true;         // embedEnable: embeddings feed the deep part
  bool wide_dense = true;    // wideDenseEnable: the numeric inputs feed the wide part too
  std::optional<double> l2;  // L2Reg: replaces RegularizedConstant (L2) for WDL, DeepFM, DCN
  int cross_layers = 3;      // NumCrossLayers (DCN)
  std::string model_graph;   // ModelGraph: a model.to_json() file, relative to the model set
};

struct TrainParams {
  // Parse fills every field the algorithm reads, from the table's defaults
  // and then from the given keys; fields the algorithm does not read stay as
  // below (an LR has no hidden layer).
  Algorithm algorithm = Algorithm::kNN;
  // Hidden layers (NN, TensorFlow): NumHiddenLayers, and one size
  // (NumHiddenNodes) and one activation (ActivationFunc) per layer.
  int hidden_layers = 0;
  std::vector<int> hidden_nodes;
  std::vector<Activation> hidden_activations;
  Activation output_activation = Activation::kSigmoid;
  std::optional<LossKind> loss;     // Loss, when given
  std::optional<LossKind> tf_loss;  // TF.loss (TensorFlow), when given
  double dropout_rate = 0;
  Initializer weight_initializer = Initializer::kXavier;
  OptimizerKind propagation = OptimizerKind::kAdam;
  double learning_rate = 0;
  double learning_decay = 0;
  double momentum = 0;
  double adam_beta1 = 0;
  double adam_beta2 = 0;
  double regularized_constant = 0;
  OptimizerConfig::Reg regularization = OptimizerConfig::Reg::kL2;
  int mini_batch_rows = 0;      // MiniBatchs
  int checkpoint_interval = 0;  // CheckpointInterval; 0: only at the end
  // WDL, DeepFM, DCN and ModelGraph. A ModelGraph defines every layer itself:
  // the hidden-layer keys are then not read (hidden_nodes stays empty).
  GraphModelKeys graph;

  // Unknown keys (with the closest known one), without the file's name.
  std::vector<std::string> warnings;
  // Keys that are known but not used here: Shifu's keys tarn does not read,
  // or keys of another algorithm.
  std::vector<std::string> notes;

  // The loss tarn trains with: Loss, else TF.loss (TensorFlow), else log.
  LossKind TrainingLoss() const;

  // `params` is train.params (null counts as {}); `algorithm` train.algorithm.
  static Result<TrainParams> Parse(const data::Json& params, std::string_view algorithm);
};

enum class TrainParamType { kInt, kNumber, kBool, kString, kIntList, kStringList, kColumnList };
// Which values a number (or each number of a list) may take.
enum class TrainParamBound { kAny, kPositive, kNonNegative, kUnitInterval /* [0, 1) */ };
// Bits of TrainParamDecl::algorithms.
inline constexpr unsigned kReadByNN = 1, kReadByLR = 2, kReadByTensorFlow = 4, kReadByWDL = 8,
                          kReadByDeepFM = 16, kReadByDCN = 32;

struct TrainParamDecl {
  const char* name;  // Shifu's spelling, matched exactly
  TrainParamType type;
  const char* default_json;  // the value when absent, as JSON; "" for none
  TrainParamBound bound;
  unsigned algorithms;  // kReadBy* bits: who reads the key
  // False for a key Shifu reads that tarn accepts and does not use.
  bool read_by_tarn;
  const char* doc;
  // Stores a checked value into the struct (null when !read_by_tarn).
  Status (*store)(const data::Json& value, TrainParams* out);
};

const std::vector<TrainParamDecl>& DeclaredTrainParams();
const TrainParamDecl* FindTrainParam(std::string_view name);

// The Markdown table of every key (docs/TRAINING.md holds a copy).
std::string TrainParamsMarkdown();

}  // namespace tarn::model
