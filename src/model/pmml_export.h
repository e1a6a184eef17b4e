// PMML export of trained models (`tarn export -t pmml`, Shifu's default
// export type): a PMML 4.4 document that scores raw records, because the
// normalization the model file embeds is restated as PMML transformations.
//
// The document, following Shifu's layout (ml.shifu.shifu.core.pmml):
//   Header          Application tarn, the model's source in the description
//   DataDictionary  one DataField per raw input column (numeric: continuous
//                   double, categorical: categorical string), each listing the
//                   missingOrInvalidValues as Value property="missing", then
//                   the target column (continuous double; never read)
//   the model       NeuralNetwork (functionName regression), or RegressionModel
//                   for a network without hidden layers whose output is sigmoid
//                   (normalizationMethod logit) or linear (none):
//     MiningSchema        the input columns (usageType active,
//                         invalidValueTreatment asMissing: a number that does
//                         not parse is missing, as in tarn) and the target
//     Output              RawResult (the score, 0..1 for a sigmoid output) and
//                         FinalResult = round(RawResult x scoreScale)
//     LocalTransformations  per input column the DerivedFields "<column>_<normtype>"
//                         (one-hot columns: "<column>_<normtype>_<bin>"):
//                           z-score: NormContinuous clipping at mean +- cutoff x sd
//                             (outliers asExtremeValues), missing -> 0 (the mean);
//                             Constant 0 for a column with no spread
//                           as-is: FieldRef, missing -> the mean
//                           per-bin value (WOE, positive rate, their z-scores) and
//                           one-hot: Discretize over the bin boundaries (numeric) or
//                             MapValues over the bin categories (categorical),
//                             missing -> the missing bin's value, unseen
//                             category -> the unseen value (one-hot: the missing slot)
//     NeuralInputs / NeuralLayer / NeuralOutputs (neuron ids "layer,unit", inputs
//                         "0,i", as Shifu) or RegressionTable (NumericPredictor
//                         per input)
// Activations: linear -> identity, sigmoid -> logistic, tanh, relu -> rectifier;
// leakyrelu and swish have no PMML activation function and are refused by name.
//
// Several models (bags) can go into one document: a MiningModel whose
// Segmentation averages them (multipleModelMethod average, Shifu's
// `export -t baggingpmml`), with the Output on the MiningModel.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "model/model_file.h"

namespace tarn::model {

inline constexpr const char* kPmmlVersion = "4.4";
inline constexpr const char* kPmmlNamespace = "http://www.dmg.org/PMML-4_4";
inline constexpr const char* kPmmlRawResult = "RawResult";
inline constexpr const char* kPmmlFinalResult = "FinalResult";

struct PmmlOptions {
  std::string model_name;     // the model's modelName (Shifu: model set name + bag index)
  std::string target_name;    // the target column (ModelConfig dataSet.targetColumnName)
  double score_scale = 1000;  // FinalResult = round(RawResult x score_scale)
  std::string description;    // the Header's description
};

// The PMML document (UTF-8 XML) for one model. Refuses an activation, or a
// normalization kind, that PMML cannot express (naming it), an invalid spec,
// non-finite parameters, and names with characters XML 1.0 cannot hold.
Result<std::string> ExportPmml(const ModelFile& model, const PmmlOptions& options);

// One document averaging `models` (at least one). Their input columns may
// differ; a column that two models read must have the same type and
// missing values in both.
Result<std::string> ExportBaggingPmml(const std::vector<ModelFile>& models,
                                      const PmmlOptions& options);

}  // namespace tarn::model
