// Request bodies of the predict APIs -> row vectors for a Servable, and the
// scores -> response bodies.
//
// TensorFlow Serving v1 (POST /v1/models/{name}[/versions/{v}]:predict):
//   {"instances": [ROW, ...]}            -> {"predictions": [score, ...]}
//   {"inputs": {"col": [v, ...], ...}}   -> {"outputs": [score, ...]}
//   {"inputs": [[x, ...], ...]}          -> {"outputs": [score, ...]}
// where ROW is a raw record {"col": value, ...} or a normalized vector
// [x, ...] of the model's input width. "signature_name" is accepted and
// ignored (a tarn model has one signature).
//
// KServe v2 (POST /v2/models/{name}[/versions/{v}]/infer):
//   {"id": "...", "inputs": [{"name": "col", "shape": [N], "datatype": "BYTES"|"FP32"|...,
//                             "data": [...]}, ...]}                       (raw columns)
//   {"inputs": [{"name": "input", "shape": [N, W], "datatype": "FP32", "data": [...]}]}
//                                                                          (vectors)
//   -> {"model_name": ..., "model_version": "V", "id": ..., "outputs":
//       [{"name": "score", "shape": [N, 1], "datatype": "FP64", "data": [...]}]}
//
// Raw values: numbers and strings as in the data file; null, an absent
// column, or one of the model's missingOrInvalidValues is a missing value.
// A string in a numeric (N) column must parse as a number or be a missing
// value; a column the model does not read is refused unless
// ignore_unknown_columns.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "serving/json_reader.h"
#include "serving/servable.h"

namespace tarn::serving {

// Per-thread buffers reused from request to request.
struct CodecScratch {
  JsonDoc doc;
  std::vector<float> rows;  // n x servable.row_width()
  std::vector<double> scores;
  std::vector<RawValue> values;      // one record, per column
  std::vector<std::string> strings;  // unescaped strings, per column
  std::vector<uint8_t> seen;         // per column
  std::vector<uint32_t> cursors;     // columnar: per column, the next element
  std::vector<int> cursor_column;    // columnar: the column of each cursor
  std::vector<uint32_t> leaves;      // flattened tensor data
  std::string key;
  int n = 0;  // rows decoded

  // Drops buffers that grew past `bytes` (after an unusually large request).
  void Trim(size_t bytes);
};

struct DecodeOptions {
  bool ignore_unknown_columns = false;
  int max_rows = 100000;
};

enum class V1Format { kRow, kColumnar };

// Parses scratch->doc (already parsed from the body) as a v1 predict request
// for `s`; fills scratch->rows and scratch->n. InvalidArgument errors say
// what is wrong, naming the instance and column.
Status DecodeV1Predict(const Servable& s, const DecodeOptions& options, CodecScratch* scratch,
                       V1Format* format);
// The same for a v2 infer request; *id is the request's "id" ("" if none;
// a view into the body).
Status DecodeV2Infer(const Servable& s, const DecodeOptions& options, CodecScratch* scratch,
                     std::string_view* id);

// Response bodies from scratch->scores[0, n).
void EncodeV1Predict(const CodecScratch& scratch, V1Format format, std::string* out);
void EncodeV2Infer(const CodecScratch& scratch, const std::string& model_name, int64_t version,
                   std::string_view id_raw, std::string* out);

}  // namespace tarn::serving
