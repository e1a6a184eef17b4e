// Request bodies of the predict APIs -> row vectors for a Servable, and the
// scores -> response bodies.
//
// TensorFlow Serving v1 (POST /v1/models/{name}[/versions/{v}]:predict):
//   {"instances": [ROW, ...]}            -> {"predictions": [[score], ...]}
//   {"inputs": {"col": [v, ...], ...}}   -> {"outputs": [[score], ...]}
//   {"inputs": [[x, ...], ...]}          -> {"outputs": [[score], ...]}
// where ROW is a raw record {"col": value, ...} or a normalized vector
// [x, ...] (also {"input": [x, ...]}) of the model's input width. The answers
// have the shape the metadata's signature declares for "score": [-1, 1].
// "signature_name" must be one that the metadata lists (or empty).
//
// KServe v2 (POST /v2/models/{name}[/versions/{v}]/infer):
//   {"id": "...", "inputs": [{"name": "col", "shape": [N], "datatype": "BYTES"|"FP32"|...,
//                             "data": [...]}, ...]}                       (raw columns)
//   {"inputs": [{"name": "input", "shape": [N, W], "datatype": "FP32", "data": [...]}]}
//                                                                          (vectors)
//   -> {"model_name": ..., "model_version": "V", "id": ..., "outputs":
//       [{"name": "score", "shape": [N, 1], "datatype": "FP64", "data": [...]}]}
// with the binary tensor data extension: an input with "parameters":
// {"binary_data_size": B} has no "data"; its B bytes follow the JSON header
// (in input order; BYTES elements each a 4-byte little-endian length and the
// bytes). "outputs": [{"name": "score", "parameters": {"binary_data": true}}]
// or "parameters": {"binary_data_output": true} asks for the scores as
// little-endian FP64 after the JSON answer, which then says
// "binary_data_size" instead of "data".
//
// Raw values: numbers and strings as in the data file; null, NaN, Infinity,
// an absent column, or one of the model's missingOrInvalidValues is a
// missing value. A string in a numeric (N) column must parse as a number or
// be a missing value. Columns of the model set that the model does not read
// (the target, weight, meta and unselected columns) are accepted and
// ignored; other names are refused unless ignore_unknown_columns.
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
  // Columnar input: where the values of each given column are.
  struct Source {
    int column = 0;               // into servable.columns()
    uint32_t first = 0;           // JSON: into leaves; binary BYTES: into elements
    const char* bytes = nullptr;  // binary: the tensor's data (else null)
    uint8_t dtype = 0;            // binary: the datatype (predict_codec.cpp)
  };
  std::vector<Source> sources;
  std::vector<uint32_t> leaves;            // flattened JSON tensor data
  std::vector<std::string_view> elements;  // binary BYTES elements
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

struct V2Request {
  std::string_view id;         // the request's "id", raw JSON string content ("" if none)
  bool binary_output = false;  // answer the scores as binary tensor data
};
// The same for a v2 infer request. `binary` is the binary tensor data that
// followed the JSON header ("" when none).
Status DecodeV2Infer(const Servable& s, const DecodeOptions& options, std::string_view binary,
                     CodecScratch* scratch, V2Request* request);

// The signature names a v1 request may give (TF Serving's metadata lists
// them): "serving_default" (raw columns) and, when the version takes
// normalized vectors, "normalized".
inline constexpr const char* kDefaultSignature = "serving_default";
inline constexpr const char* kNormalizedSignature = "normalized";
// The name of the normalized-vector input in signatures and requests.
inline constexpr const char* kVectorInput = "input";

// Response bodies from scratch->scores[0, n). A v2 answer with binary
// output is the JSON header then the data; *json_bytes is the header's
// length (the whole body otherwise).
void EncodeV1Predict(const CodecScratch& scratch, V1Format format, std::string* out);
void EncodeV2Infer(const CodecScratch& scratch, const std::string& model_name, int64_t version,
                   const V2Request& request, std::string* out, size_t* json_bytes);

}  // namespace tarn::serving
