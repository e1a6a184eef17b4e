// tarn export: trained models and column statistics in formats other tools
// read (Shifu's `export -t TYPE`).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "pipeline/model_set.h"

namespace tarn::pipeline {

struct ExportOptions {
  // pmml | baggingpmml | onnx | columnstats | serving (case-insensitive).
  std::string type;
  // -o PATH. pmml: a folder that receives <ModelSetName>{i}.pmml for every
  // models/model{i}.tarn, or a path ending in ".pmml" when there is one model;
  // default <modelset>/pmmls/. baggingpmml: a folder that receives
  // <ModelSetName>.pmml, or a path ending in ".pmml"; default <modelset>/pmmls/.
  // onnx: a folder that receives model{i}.onnx (+ .onnx.json) for
  // every models/model{i}.tarn, or a path ending in ".onnx" when there is one
  // model; default <modelset>/onnx/. columnstats: the CSV file; default
  // <modelset>/columnstats.csv. serving: the model base folder (required).
  // A relative path is relative to the current folder.
  std::string output;
  // serving: the version number to write; 0 means one more than the newest.
  int64_t version = 0;
};

// pmml: each models/model{i}.tarn becomes <ModelSetName>{i}.pmml, a PMML 4.4
// document that scores raw records (see model/pmml_export.h): RawResult is the
// score tarn eval computes, FinalResult round(RawResult x the first eval set's
// scoreScale). baggingpmml: one <ModelSetName>.pmml whose MiningModel averages
// every model (as eval's "mean" column).
//
// onnx: each models/model{i}.tarn becomes model{i}.onnx (see
// model/onnx_export.h: input "input" float [N, inputs] of normalized values,
// output "score" float [N, 1]) and, beside it, model{i}.onnx.json describing
// the input vector: the raw columns in input order with their normalization
// (normType, stdDevCutOff, missing values, each column's width and offset and
// its ColumnConfig entry) and the name of every input. Without models:
// "run 'tarn train' first".
//
// columnstats: Shifu's ColumnStats.csv from ColumnConfig.json, one row per
// column with Shifu's header: dataSet, columnFlag, columnName, columnNum, iv,
// ks, max, mean, median, min, missingCount, missingPercentage, stdDev,
// totalCount, distinctCount, weightedIv, weightedKs, weightedWoe, woe,
// skewness, kurtosis, columnType, finalSelect, psi, unitstats, version. Values
// are printed as Shifu (Java) prints them: "null" when absent, doubles as
// Java's Double.toString ("38.58", "1.0E-4").
//
// serving: every models/model{i}.tarn, byte for byte, into a new numbered
// version folder OUTPUT/N/ with its READY marker written last (see
// model/serving_version.h), for `tarn serve --model-base OUTPUT`. Prints the
// folder. An existing version number is refused.
//
// Files are written atomically. Any other type is refused with the list of
// supported ones.
Status RunExport(const ModelSet& ms, const ExportOptions& options);

}  // namespace tarn::pipeline
