// The graph models `tarn train` builds: Shifu's `algorithm: WDL` (with Shifu's
// own train#params keys), DeepFM, DCN, and any Keras model.to_json() named by
// train#params#ModelGraph, each mapped onto a GraphSpec. What a mapping cannot
// do is refused by the key, the column or the Keras layer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "data/column_config.h"
#include "data/id_column.h"
#include "data/json_fields.h"
#include "model/graph_spec.h"
#include "model/keras_model.h"
#include "model/model_spec.h"
#include "model/train_params.h"

namespace tarn::train {

// The train#params keys of graph models: declared in model/train_params.h
// with every other key (beside the NN keys and the optimizer's, which graph
// models read too).
using GraphModelParams = model::GraphModelKeys;

// What the mappings know of the input columns (finalSelect, in input order).
struct GraphColumn {
  std::string name;
  int column_num = 0;
  bool has_ids = false;  // a categorical column with an id column (data/id_column.h)
  int id_count = 0;      // ids run over [0, id_count): the id column's vocabulary
  data::IdColumn ids;    // that id column, when has_ids
};

struct GraphModel {
  model::GraphSpec spec;
  // A regularization the graph sets (L2Reg, a Keras L2 factor as tarn's
  // RegularizedConstant); absent: train#params' own.
  std::optional<double> l2;
  // Nodes whose weights the regularization skips (Keras layers without a
  // regularizer); biases, gamma and beta are always skipped.
  std::vector<std::string> unregularized;
};

// {"spec": GraphSpec JSON, "l2": number or null, "unregularized": [names]}:
// a distributed job carries its graph so that no node rebuilds it.
data::Json GraphModelToJson(const GraphModel& m);
Result<GraphModel> GraphModelFromJson(const data::Json& j, const std::string& where);

// True for the algorithms and params that make a graph model.
bool IsGraphModel(const model::TrainParams& params);

// The file train#params#ModelGraph names: absolute, or relative to the model set.
std::string ModelGraphPath(const GraphModelParams& params, const std::string& model_set_dir);

// `dense_width`: the normalized measurement values (every slot but the ids);
// `model_set_columns`: every column name of ColumnConfig.json (for messages);
// `model_set_dir` resolves ModelGraph.
Result<GraphModel> BuildGraphModel(const std::string& algorithm, const model::TrainParams& params,
                                   const std::vector<GraphColumn>& columns, int dense_width,
                                   const std::vector<std::string>& model_set_columns,
                                   const std::string& model_set_dir);

// The Keras mapping alone (tested by itself): Flatten and Reshape alias their
// input; shifu_input_0 is the dense input; any other input the ids of the
// categorical input column of its name; one Dense initializer shared by every
// Dense; embeddings initialized as tarn's tables (RandomUniform +-0.05); the
// kernels and tables with a regularizer share one L2 factor, and the others
// are not regularized (as in Keras); L1 is refused.
Result<GraphModel> KerasGraphModel(const model::KerasModel& keras,
                                   const std::vector<GraphColumn>& columns,
                                   const std::vector<std::string>& model_set_columns,
                                   model::LossKind loss);

}  // namespace tarn::train
