#include "serving/predict_codec.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "common/strings.h"

namespace tarn::serving {

namespace {

// KServe v2 datatypes. Binary data is little-endian, as the extension says
// (and as every host tarn builds for is).
enum class DType : uint8_t {
  kBytes,
  kBool,
  kFp16,
  kFp32,
  kFp64,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUint8,
  kUint16,
  kUint32,
  kUint64
};

struct DTypeInfo {
  const char* name;
  DType type;
  int size;  // bytes per element in binary data; 0 for BYTES
};

constexpr DTypeInfo kDTypes[] = {
    {"BYTES", DType::kBytes, 0},  {"BOOL", DType::kBool, 1},     {"FP16", DType::kFp16, 2},
    {"FP32", DType::kFp32, 4},    {"FP64", DType::kFp64, 8},     {"INT8", DType::kInt8, 1},
    {"INT16", DType::kInt16, 2},  {"INT32", DType::kInt32, 4},   {"INT64", DType::kInt64, 8},
    {"UINT8", DType::kUint8, 1},  {"UINT16", DType::kUint16, 2}, {"UINT32", DType::kUint32, 4},
    {"UINT64", DType::kUint64, 8}};

const DTypeInfo* FindDType(std::string_view name) {
  for (const auto& d : kDTypes)
    if (name == std::string_view(d.name, std::char_traits<char>::length(d.name))) return &d;
  return nullptr;
}

bool IsInteger(DType t) { return t >= DType::kInt8; }

// Whether the JSON number literal `text` is an integer that fits datatype t.
bool FitsInteger(DType t, std::string_view text) {
  auto v = ParseInt(text);
  if (!v) {
    // Beyond long long: only UINT64 values up to 2^64 - 1.
    return t == DType::kUint64 && text.find_first_not_of("0123456789") == std::string_view::npos &&
           (text.size() < 20 || (text.size() == 20 && text <= "18446744073709551615"));
  }
  const long long x = *v;
  switch (t) {
    case DType::kInt8:
      return x >= -128 && x <= 127;
    case DType::kInt16:
      return x >= -32768 && x <= 32767;
    case DType::kInt32:
      return x >= INT32_MIN && x <= INT32_MAX;
    case DType::kInt64:
      return true;
    case DType::kUint8:
      return x >= 0 && x <= 255;
    case DType::kUint16:
      return x >= 0 && x <= 65535;
    case DType::kUint32:
      return x >= 0 && x <= static_cast<long long>(UINT32_MAX);
    case DType::kUint64:
      return x >= 0;
    default:
      return false;
  }
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000 | (mant << 13);  // infinity or NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: mant x 2^-24
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Element i of a fixed-size binary tensor as a double.
double BinaryNumber(DType t, const char* p, size_t i) {
  switch (t) {
    case DType::kBool:
    case DType::kUint8:
      return static_cast<uint8_t>(p[i]);
    case DType::kInt8:
      return static_cast<int8_t>(p[i]);
    case DType::kFp16:
      return HalfToFloat(Load<uint16_t>(p + 2 * i));
    case DType::kFp32:
      return Load<float>(p + 4 * i);
    case DType::kFp64:
      return Load<double>(p + 8 * i);
    case DType::kInt16:
      return Load<int16_t>(p + 2 * i);
    case DType::kInt32:
      return Load<int32_t>(p + 4 * i);
    case DType::kInt64:
      return static_cast<double>(Load<int64_t>(p + 8 * i));
    case DType::kUint16:
      return Load<uint16_t>(p + 2 * i);
    case DType::kUint32:
      return Load<uint32_t>(p + 4 * i);
    case DType::kUint64:
      return static_cast<double>(Load<uint64_t>(p + 8 * i));
    case DType::kBytes:
      break;
  }
  return 0;
}

// The text of element i of a fixed-size binary tensor, as a client would
// have written it in JSON (the shortest round-trip form), into *buf.
// Returns false for a NaN or infinite float: a missing value.
bool BinaryText(DType t, const char* p, size_t i, std::string* buf, std::string_view* text) {
  char tmp[32];
  std::to_chars_result r{tmp, std::errc()};
  switch (t) {
    case DType::kBool:
      *text = p[i] ? "true" : "false";
      return true;
    case DType::kFp16:
    case DType::kFp32: {
      float f = t == DType::kFp32 ? Load<float>(p + 4 * i) : HalfToFloat(Load<uint16_t>(p + 2 * i));
      if (!std::isfinite(f)) return false;
      r = std::to_chars(tmp, tmp + sizeof(tmp), f);
      break;
    }
    case DType::kFp64: {
      double d = Load<double>(p + 8 * i);
      if (!std::isfinite(d)) return false;
      r = std::to_chars(tmp, tmp + sizeof(tmp), d);
      break;
    }
    case DType::kInt64:
      r = std::to_chars(tmp, tmp + sizeof(tmp), Load<int64_t>(p + 8 * i));
      break;
    case DType::kUint64:
      r = std::to_chars(tmp, tmp + sizeof(tmp), Load<uint64_t>(p + 8 * i));
      break;
    default:  // the smaller integers are exact as doubles
      r = std::to_chars(tmp, tmp + sizeof(tmp), static_cast<long long>(BinaryNumber(t, p, i)));
      break;
  }
  buf->assign(tmp, static_cast<size_t>(r.ptr - tmp));
  *text = *buf;
  return true;
}

// Lists the model's columns for an "unknown column" message (at most 30).
std::string ColumnList(const Servable& s) {
  std::string out;
  const auto& cols = s.columns();
  for (size_t i = 0; i < cols.size() && i < 30; ++i) {
    if (i) out += ", ";
    out += cols[i].name;
  }
  if (cols.size() > 30) out += ", ... (" + std::to_string(cols.size()) + " in all)";
  return out;
}

std::string Quoted(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s.size() > 200 ? s.substr(0, 200) : s);
  return out;
}

std::string Where(const char* prefix, int i) {
  return std::string(prefix) + "[" + std::to_string(i) + "]";
}

// `what` is "unknown column" or "... is not a column"; says what the model
// knows, and why it may know less than the model set.
Status UnknownColumn(const Servable& s, const std::string& where, std::string_view name) {
  std::string message = where + ": unknown column " + Quoted(name) + ": ";
  if (s.knows_model_set()) {
    message += "not a column of the model set";
  } else {
    message +=
        "not read by the model (its files predate tarn recording the model set's columns: "
        "retrain to accept whole data rows, or serve with --ignore-unknown-columns)";
  }
  return InvalidArgument(message + "; the model reads: " + ColumnList(s) +
                         " (see GET /v1/models/{name}/metadata)");
}

std::string ColumnWhere(std::string_view prefix, int row, const Servable::Column& col) {
  std::string w(prefix);
  if (row >= 0) w += "[" + std::to_string(row) + "]";
  return w + ": column " + Quoted(col.name);
}

// A numeric column needs a number or one of the missing values.
bool NumberOrMissing(const Servable& s, int k, std::string_view text) {
  return !s.columns()[k].numeric || s.IsMissing(text) || ParseDouble(text);
}

Status NotANumber(const Servable& s, int k, std::string_view text, std::string_view where_prefix,
                  int row) {
  return InvalidArgument(ColumnWhere(where_prefix, row, s.columns()[k]) + " is numeric, but " +
                         Quoted(text) + " is not a number (nor a missing value)");
}

Status BoolInNumeric(const Servable& s, int k, std::string_view text, std::string_view prefix,
                     int row) {
  return InvalidArgument(ColumnWhere(prefix, row, s.columns()[k]) + " is numeric, but got " +
                         std::string(text));
}

// One raw value of column k from a JSON node.
Status ConvertValue(const Servable& s, int k, const JsonNode& v, CodecScratch* sc,
                    const std::string_view where_prefix, int row) {
  RawValue& out = sc->values[k];
  switch (v.type) {
    case JsonType::kNull:
      out.present = false;
      return Status::Ok();
    case JsonType::kNumber:
      out.text = v.text;
      out.present = !v.non_finite;  // NaN and Infinity are missing values
      return Status::Ok();
    case JsonType::kString:  // the hot path of raw records: kept inline
      out.text = JsonDoc::StringValue(v, &sc->strings[k]);
      out.present = true;
      if (!NumberOrMissing(s, k, out.text)) return NotANumber(s, k, out.text, where_prefix, row);
      return Status::Ok();
    case JsonType::kBool:
      if (s.columns()[k].numeric) return BoolInNumeric(s, k, v.text, where_prefix, row);
      out.text = v.text;
      out.present = true;
      return Status::Ok();
    default:
      return InvalidArgument(ColumnWhere(where_prefix, row, s.columns()[k]) +
                             ": expected a number, a string or null, got an " +
                             JsonTypeName(v.type));
  }
}

// One raw value of column k from element i of a binary tensor.
Status ConvertBinary(const Servable& s, const CodecScratch::Source& src, size_t i, CodecScratch* sc,
                     std::string_view where_prefix, int row) {
  const int k = src.column;
  const DType t = static_cast<DType>(src.dtype);
  RawValue& out = sc->values[k];
  if (t == DType::kBytes) {
    out.text = sc->elements[src.first + i];
    out.present = true;
    if (!NumberOrMissing(s, k, out.text)) return NotANumber(s, k, out.text, where_prefix, row);
    return Status::Ok();
  }
  out.present = BinaryText(t, src.bytes, i, &sc->strings[k], &out.text);
  if (t == DType::kBool && s.columns()[k].numeric) {
    return BoolInNumeric(s, k, out.text, where_prefix, row);
  }
  return Status::Ok();
}

void ResetRecord(const Servable& s, CodecScratch* sc) {
  const size_t c = s.columns().size();
  sc->values.assign(c, RawValue{});
  if (sc->strings.size() < c) sc->strings.resize(c);
  sc->seen.assign(c, 0);
}

Status NeedVectors(const Servable& s) {
  if (s.vector_width() > 0) return Status::Ok();
  return InvalidArgument(
      "the models of this version normalize their inputs differently: send raw records "
      "(column name -> value) instead of normalized vectors");
}

// A number that fits a finite float, stored in `out`; false otherwise.
bool ToFiniteFloat(double v, float* out) {
  if (!std::isfinite(v) || std::fabs(v) > 3.4e38) return false;
  *out = static_cast<float>(v);
  return true;
}

Status ParseVectorElement(const JsonNode& e, const std::string& where, float* out) {
  if (e.type != JsonType::kNumber) {
    return InvalidArgument(where + ": expected a number, got " +
                           (e.type == JsonType::kString ? "a string" : JsonTypeName(e.type)));
  }
  auto v = e.non_finite ? std::nullopt : ParseDouble(e.text);
  if (!v || !ToFiniteFloat(*v, out)) {
    return InvalidArgument(where + ": " + std::string(e.text) + " is not a finite float");
  }
  return Status::Ok();
}

// A normalized vector [x, ...] into one row vector.
Status DecodeVector(const Servable& s, const JsonNode& arr, CodecScratch* sc,
                    const std::string& where, float* out) {
  TARN_RETURN_IF_ERROR(NeedVectors(s));
  const int width = s.vector_width();
  if (static_cast<int>(arr.count) != width) {
    return InvalidArgument(where + ": a normalized vector has " + std::to_string(width) +
                           " numbers for this model, got " + std::to_string(arr.count) +
                           " (or send a raw record: column name -> value)");
  }
  int j = 0;
  for (uint32_t c = arr.first_child; c; c = sc->doc.node(c).next, ++j) {
    const JsonNode& e = sc->doc.node(c);
    if (e.type != JsonType::kNumber || e.non_finite) {
      return ParseVectorElement(e, where + "[" + std::to_string(j) + "]", out + j);
    }
    auto v = ParseDouble(e.text);
    if (!v || !ToFiniteFloat(*v, out + j)) {
      return ParseVectorElement(e, where + "[" + std::to_string(j) + "]", out + j);
    }
  }
  return Status::Ok();
}

// A raw record {"col": value, ...} (or {"input": [x, ...]}) into one row vector.
Status DecodeRecord(const Servable& s, const DecodeOptions& options, const JsonNode& obj,
                    CodecScratch* sc, int row, float* out) {
  ResetRecord(s, sc);
  const JsonDoc& doc = sc->doc;
  int next_column = 0;  // where the next member's column probably is
  for (uint32_t m = obj.first_child; m; m = doc.node(m).next) {
    const JsonNode& member = doc.node(m);
    std::string_view key = JsonDoc::KeyValue(member, &sc->key);
    const int k = s.FindColumn(key, next_column);
    if (k >= 0) next_column = k + 1;
    if (k < 0) {
      if (k == Servable::kIgnoredColumn) continue;
      if (key == kVectorInput && obj.count == 1 && member.type == JsonType::kArray) {
        return DecodeVector(s, member, sc, Where("instances", row) + ".input", out);
      }
      if (options.ignore_unknown_columns) continue;
      return UnknownColumn(s, Where("instances", row), key);
    }
    if (sc->seen[k]) {
      return InvalidArgument(Where("instances", row) + ": column " + Quoted(key) +
                             " is given twice");
    }
    sc->seen[k] = 1;
    TARN_RETURN_IF_ERROR(ConvertValue(s, k, member, sc, "instances", row));
  }
  s.NormalizeRecord(sc->values.data(), out);
  return Status::Ok();
}

Status CheckRows(int n, const DecodeOptions& options) {
  if (n > options.max_rows) {
    return InvalidArgument("too many rows in one request: " + std::to_string(n) + " (limit " +
                           std::to_string(options.max_rows) + ")");
  }
  return Status::Ok();
}

// [[x, ...], ...] or one vector [x, ...] (v1 columnar "inputs").
Status DecodeVectorList(const Servable& s, const DecodeOptions& options, const JsonNode& list,
                        const char* where_prefix, CodecScratch* sc) {
  const JsonDoc& doc = sc->doc;
  const int width = s.row_width();
  bool nested = list.count > 0 && doc.node(list.first_child).type == JsonType::kArray;
  if (!nested) {
    if (list.count == 0) {
      sc->n = 0;
      return Status::Ok();
    }
    sc->rows.resize(static_cast<size_t>(width));
    TARN_RETURN_IF_ERROR(DecodeVector(s, list, sc, where_prefix, sc->rows.data()));
    sc->n = 1;
    return Status::Ok();
  }
  const int n = static_cast<int>(list.count);
  TARN_RETURN_IF_ERROR(CheckRows(n, options));
  sc->rows.resize(static_cast<size_t>(n) * width);
  int i = 0;
  for (uint32_t c = list.first_child; c; c = doc.node(c).next, ++i) {
    const JsonNode& row = doc.node(c);
    if (row.type != JsonType::kArray) {
      return InvalidArgument(Where(where_prefix, i) + ": expected a list of numbers, got a " +
                             JsonTypeName(row.type));
    }
    TARN_RETURN_IF_ERROR(DecodeVector(s, row, sc, Where(where_prefix, i),
                                      sc->rows.data() + static_cast<size_t>(i) * width));
  }
  sc->n = n;
  return Status::Ok();
}

// Appends the leaves (non-array values) of `node` to sc->leaves, in order.
void Flatten(const JsonDoc& doc, const JsonNode& node, std::vector<uint32_t>* leaves) {
  if (node.type != JsonType::kArray) {
    leaves->push_back(doc.index(node));
    return;
  }
  for (uint32_t c = node.first_child; c; c = doc.node(c).next) Flatten(doc, doc.node(c), leaves);
}

// Columnar raw input: row i of each source in sc->sources.
Status DecodeColumns(const Servable& s, CodecScratch* sc, int n, const char* where_prefix) {
  const int width = s.row_width();
  sc->rows.resize(static_cast<size_t>(n) * width);
  const JsonDoc& doc = sc->doc;
  for (int i = 0; i < n; ++i) {
    ResetRecord(s, sc);
    for (const CodecScratch::Source& src : sc->sources) {
      if (src.bytes) {
        TARN_RETURN_IF_ERROR(ConvertBinary(s, src, static_cast<size_t>(i), sc, where_prefix, i));
      } else {
        const JsonNode& v = doc.node(sc->leaves[src.first + i]);
        TARN_RETURN_IF_ERROR(ConvertValue(s, src.column, v, sc, where_prefix, i));
      }
    }
    s.NormalizeRecord(sc->values.data(), sc->rows.data() + static_cast<size_t>(i) * width);
  }
  sc->n = n;
  return Status::Ok();
}

}  // namespace

void CodecScratch::Trim(size_t bytes) {
  if (rows.capacity() * sizeof(float) > bytes) std::vector<float>().swap(rows);
  if (scores.capacity() * sizeof(double) > bytes) std::vector<double>().swap(scores);
  if (leaves.capacity() * sizeof(uint32_t) > bytes) std::vector<uint32_t>().swap(leaves);
  if (elements.capacity() * sizeof(std::string_view) > bytes) {
    std::vector<std::string_view>().swap(elements);
  }
  for (auto& s : strings)
    if (s.capacity() > bytes) std::string().swap(s);
}

Status DecodeV1Predict(const Servable& s, const DecodeOptions& options, CodecScratch* sc,
                       V1Format* format) {
  const JsonDoc& doc = sc->doc;
  const JsonNode& root = doc.root();
  sc->n = 0;
  if (root.type != JsonType::kObject) {
    return InvalidArgument(
        "the request body must be a JSON object with \"instances\" (row format) or \"inputs\" "
        "(columnar format)");
  }
  const JsonNode* instances = doc.Find(root, "instances");
  const JsonNode* inputs = doc.Find(root, "inputs");
  if (instances && inputs) {
    return InvalidArgument(
        "give either \"instances\" (row format) or \"inputs\" (columnar "
        "format), not both");
  }
  if (!instances && !inputs) {
    return InvalidArgument(
        "the request has neither \"instances\" (row format) nor \"inputs\" "
        "(columnar format)");
  }
  if (const JsonNode* sig = doc.Find(root, "signature_name")) {
    if (sig->type != JsonType::kString) {
      return InvalidArgument("\"signature_name\" must be a string");
    }
    std::string_view name = JsonDoc::StringValue(*sig, &sc->key);
    if (!name.empty() && name != kDefaultSignature &&
        !(name == kNormalizedSignature && s.vector_width() > 0)) {
      return InvalidArgument(
          "signature_name " + Quoted(name) + " is not a signature of this model (" +
          kDefaultSignature +
          (s.vector_width() > 0 ? std::string(", ") + kNormalizedSignature : "") +
          "; see GET /v1/models/{name}/metadata)");
    }
  }
  const int width = s.row_width();
  if (instances) {
    *format = V1Format::kRow;
    if (instances->type != JsonType::kArray) {
      return InvalidArgument(
          "\"instances\" must be a list of raw records or normalized vectors, "
          "got " +
          std::string(JsonTypeName(instances->type)));
    }
    const int n = static_cast<int>(instances->count);
    TARN_RETURN_IF_ERROR(CheckRows(n, options));
    sc->rows.resize(static_cast<size_t>(n) * width);
    int i = 0;
    for (uint32_t c = instances->first_child; c; c = doc.node(c).next, ++i) {
      const JsonNode& inst = doc.node(c);
      float* out = sc->rows.data() + static_cast<size_t>(i) * width;
      if (inst.type == JsonType::kObject) {
        TARN_RETURN_IF_ERROR(DecodeRecord(s, options, inst, sc, i, out));
      } else if (inst.type == JsonType::kArray) {
        TARN_RETURN_IF_ERROR(DecodeVector(s, inst, sc, Where("instances", i), out));
      } else {
        return InvalidArgument(Where("instances", i) +
                               ": expected an object (a raw record) or a list of numbers (a "
                               "normalized vector), got a " +
                               JsonTypeName(inst.type));
      }
    }
    sc->n = n;
    return Status::Ok();
  }

  *format = V1Format::kColumnar;
  if (inputs->type == JsonType::kObject) {
    // {"col": [v, ...] | v, ...}, or {"input": [[x, ...], ...]}
    if (inputs->count == 0) return InvalidArgument("\"inputs\" has no columns");
    const JsonNode& first = doc.node(inputs->first_child);
    if (inputs->count == 1 && first.type == JsonType::kArray &&
        JsonDoc::KeyValue(first, &sc->key) == kVectorInput &&
        s.FindColumn(kVectorInput) == Servable::kUnknownColumn) {
      return DecodeVectorList(s, options, first, "inputs.input", sc);
    }
    sc->leaves.clear();
    sc->sources.clear();
    ResetRecord(s, sc);
    int n = -1;
    bool scalars = false, lists = false;
    for (uint32_t m = inputs->first_child; m; m = doc.node(m).next) {
      const JsonNode& member = doc.node(m);
      std::string_view key = JsonDoc::KeyValue(member, &sc->key);
      int k = s.FindColumn(key);
      if (k < 0) {
        if (k == Servable::kIgnoredColumn || options.ignore_unknown_columns) continue;
        return UnknownColumn(s, "inputs", key);
      }
      if (sc->seen[k]) return InvalidArgument("inputs: column " + Quoted(key) + " is given twice");
      sc->seen[k] = 1;
      int count;
      CodecScratch::Source src;
      src.column = k;
      src.first = static_cast<uint32_t>(sc->leaves.size());
      sc->sources.push_back(src);
      if (member.type == JsonType::kArray) {
        lists = true;
        count = static_cast<int>(member.count);
        for (uint32_t c = member.first_child; c; c = doc.node(c).next) {
          if (doc.node(c).type == JsonType::kArray || doc.node(c).type == JsonType::kObject) {
            return InvalidArgument("inputs: column " + Quoted(key) +
                                   ": expected a list of values, one per row, got a nested " +
                                   JsonTypeName(doc.node(c).type));
          }
          sc->leaves.push_back(c);
        }
      } else {
        scalars = true;
        count = 1;
        sc->leaves.push_back(m);
      }
      if (n >= 0 && count != n) {
        return InvalidArgument("inputs: column " + Quoted(key) + " has " + std::to_string(count) +
                               " values, the columns before it " + std::to_string(n) +
                               "; every column needs one value per row");
      }
      n = count;
    }
    if (scalars && lists) {
      return InvalidArgument(
          "inputs: mix of single values and lists; give every column as a "
          "list (one value per row) or every column as a single value");
    }
    if (n < 0) n = 1;  // only ignored columns: one row of missing values
    TARN_RETURN_IF_ERROR(CheckRows(n, options));
    return DecodeColumns(s, sc, n, "inputs");
  }
  if (inputs->type == JsonType::kArray) return DecodeVectorList(s, options, *inputs, "inputs", sc);
  return InvalidArgument(
      "\"inputs\" must be an object (column name -> values) or a list of "
      "normalized vectors, got " +
      std::string(JsonTypeName(inputs->type)));
}

Status DecodeV2Infer(const Servable& s, const DecodeOptions& options, std::string_view binary,
                     CodecScratch* sc, V2Request* request) {
  const JsonDoc& doc = sc->doc;
  const JsonNode& root = doc.root();
  sc->n = 0;
  *request = V2Request();
  if (root.type != JsonType::kObject) {
    return InvalidArgument("the request body must be a JSON object with \"inputs\"");
  }
  if (const JsonNode* idn = doc.Find(root, "id")) {
    if (idn->type != JsonType::kString) return InvalidArgument("\"id\" must be a string");
    request->id = idn->text;
  }
  // Binary output: "parameters": {"binary_data_output": true} for every
  // output, or per requested output "parameters": {"binary_data": ...}.
  auto get_bool = [&](const JsonNode& params, const char* key, const std::string& where,
                      bool* out) -> Status {
    if (params.type != JsonType::kObject) {
      return InvalidArgument(where + ": \"parameters\" must be an object");
    }
    const JsonNode* v = doc.Find(params, key);
    if (!v) return Status::Ok();
    if (v->type != JsonType::kBool) {
      return InvalidArgument(where + ": parameter \"" + key + "\" must be true or false");
    }
    *out = v->boolean;
    return Status::Ok();
  };
  if (const JsonNode* params = doc.Find(root, "parameters")) {
    TARN_RETURN_IF_ERROR(
        get_bool(*params, "binary_data_output", "the request", &request->binary_output));
  }
  if (const JsonNode* outputs = doc.Find(root, "outputs")) {
    if (outputs->type != JsonType::kArray) {
      return InvalidArgument("\"outputs\" must be a list of {\"name\": ...} objects");
    }
    int j = 0;
    for (uint32_t o = outputs->first_child; o; o = doc.node(o).next, ++j) {
      const JsonNode& out = doc.node(o);
      const std::string where = Where("outputs", j);
      const JsonNode* name = out.type == JsonType::kObject ? doc.Find(out, "name") : nullptr;
      if (!name || name->type != JsonType::kString) {
        return InvalidArgument(where + ": expected an object with a \"name\"");
      }
      std::string_view oname = JsonDoc::StringValue(*name, &sc->key);
      if (oname != "score") {
        return InvalidArgument(where + ": unknown output " + Quoted(oname) +
                               "; the model answers \"score\"");
      }
      if (const JsonNode* params = doc.Find(out, "parameters")) {
        TARN_RETURN_IF_ERROR(get_bool(*params, "binary_data", where, &request->binary_output));
        if (doc.Find(*params, "classification")) {
          return InvalidArgument(where + ": the classification extension is not supported");
        }
      }
    }
  }

  const JsonNode* inputs = doc.Find(root, "inputs");
  if (!inputs || inputs->type != JsonType::kArray || inputs->count == 0) {
    return InvalidArgument("\"inputs\" must be a non-empty list of tensors");
  }
  sc->leaves.clear();
  sc->sources.clear();
  sc->elements.clear();
  ResetRecord(s, sc);
  int n = -1;
  int j = 0;
  int next_column = 0;     // where the next tensor's column probably is
  size_t binary_used = 0;  // bytes of `binary` the inputs so far took
  const JsonNode* vector_data = nullptr;
  std::string_view vector_binary;
  const DTypeInfo* vector_dtype = nullptr;
  int vector_rows = 0;
  for (uint32_t t = inputs->first_child; t; t = doc.node(t).next, ++j) {
    const JsonNode& tensor = doc.node(t);
    // Built only for an error message: most requests never need it.
    auto where = [j] { return Where("inputs", j); };
    if (tensor.type != JsonType::kObject) {
      return InvalidArgument(where() +
                             ": expected a tensor object with name, shape, datatype "
                             "and data");
    }
    // The members in one pass (the first of a repeated name counts, as with Find).
    const JsonNode *name = nullptr, *shape = nullptr, *datatype = nullptr, *data = nullptr,
                   *params = nullptr;
    for (uint32_t m = tensor.first_child; m; m = doc.node(m).next) {
      const JsonNode& member = doc.node(m);
      const std::string_view key = JsonDoc::KeyValue(member, &sc->key);
      const JsonNode** slot = nullptr;
      // By length first: fixed-size compares the compiler inlines.
      switch (key.size()) {
        case 4:
          if (std::memcmp(key.data(), "name", 4) == 0) slot = &name;
          if (std::memcmp(key.data(), "data", 4) == 0) slot = &data;
          break;
        case 5:
          if (std::memcmp(key.data(), "shape", 5) == 0) slot = &shape;
          break;
        case 8:
          if (std::memcmp(key.data(), "datatype", 8) == 0) slot = &datatype;
          break;
        case 10:
          if (std::memcmp(key.data(), "parameters", 10) == 0) slot = &params;
          break;
        default:
          break;
      }
      if (slot && !*slot) *slot = &member;
    }
    if (!name || name->type != JsonType::kString) {
      return InvalidArgument(where() + ": \"name\" must be a string");
    }
    if (!shape || shape->type != JsonType::kArray) {
      return InvalidArgument(where() + ": \"shape\" must be a list of integers");
    }
    if (!datatype || datatype->type != JsonType::kString) {
      return InvalidArgument(where() + ": \"datatype\" must be a string");
    }
    // Binary tensor data: "parameters": {"binary_data_size": B} instead of "data".
    const JsonNode* binary_size = nullptr;
    if (params) {
      if (params->type != JsonType::kObject) {
        return InvalidArgument(where() + ": \"parameters\" must be an object");
      }
      binary_size = doc.Find(*params, "binary_data_size");
    }
    std::string_view tensor_binary;
    const bool is_binary = binary_size != nullptr;
    if (is_binary) {
      auto b = binary_size->type == JsonType::kNumber ? ParseInt(binary_size->text) : std::nullopt;
      if (!b || *b < 0) {
        return InvalidArgument(where() + ": \"binary_data_size\" must be a byte count");
      }
      if (data) {
        return InvalidArgument(where() +
                               ": give either \"data\" or \"binary_data_size\", not both");
      }
      if (static_cast<size_t>(*b) > binary.size() - binary_used) {
        return InvalidArgument(where() + ": binary_data_size " + std::to_string(*b) + " but only " +
                               std::to_string(binary.size() - binary_used) +
                               " bytes of binary data are left after the JSON header "
                               "(Inference-Header-Content-Length)");
      }
      tensor_binary = binary.substr(binary_used, static_cast<size_t>(*b));
      binary_used += static_cast<size_t>(*b);
    } else if (!data || data->type != JsonType::kArray) {
      return InvalidArgument(where() + ": \"data\" must be a list");
    }
    int64_t dims[2] = {0, 0};
    size_t rank = 0;
    for (uint32_t d = shape->first_child; d; d = doc.node(d).next) {
      auto v = ParseInt(doc.node(d).text);
      if (doc.node(d).type != JsonType::kNumber || !v || *v < 0 || *v > 100000000) {
        return InvalidArgument(where() + ": \"shape\" must be a list of non-negative integers");
      }
      if (rank == 2) return InvalidArgument(where() + ": \"shape\" has more than 2 dimensions");
      dims[rank++] = *v;
    }
    std::string_view tname = JsonDoc::StringValue(*name, &sc->key);
    const DTypeInfo* dtype = FindDType(datatype->text);
    if (!dtype) {
      return InvalidArgument(where() + ": unsupported datatype " + Quoted(datatype->text) +
                             " (BYTES, BOOL, FP16/32/64, INT8..64, UINT8..64)");
    }
    const bool bytes = dtype->type == DType::kBytes;
    const bool boolean = dtype->type == DType::kBool;
    const bool numeric = !bytes && !boolean;
    const int k = s.FindColumn(tname, next_column);
    if (k >= 0) next_column = k + 1;
    if (k == Servable::kIgnoredColumn) continue;  // a column of the model set the model skips
    if (k < 0) {
      // The normalized-vector form: one [N, W] tensor.
      if (rank == 2 && s.vector_width() > 0 && dims[1] == s.vector_width() && inputs->count == 1) {
        if (!numeric) {
          return InvalidArgument(where() + ": a normalized [N, " +
                                 std::to_string(s.vector_width()) + "] tensor must be numeric");
        }
        vector_data = data;
        vector_binary = tensor_binary;
        vector_dtype = dtype;
        vector_rows = static_cast<int>(dims[0]);
        continue;
      }
      if (options.ignore_unknown_columns) continue;
      std::string hint;
      if (s.vector_width() > 0) {
        hint = ", nor a normalized tensor of shape [N, " + std::to_string(s.vector_width()) + "]";
      }
      if (s.knows_model_set()) hint += ", nor a column of the model set";
      return InvalidArgument(where() + ": " + Quoted(tname) + " is not a column of the model" +
                             hint + "; the model reads: " + ColumnList(s));
    }
    if (sc->seen[k])
      return InvalidArgument(where() + ": column " + Quoted(tname) + " is given twice");
    sc->seen[k] = 1;
    if (rank == 0 || (rank == 2 && dims[1] != 1)) {
      return InvalidArgument(where() + " (" + Quoted(tname) +
                             "): a column tensor has shape [N] or "
                             "[N, 1]");
    }
    const int count = static_cast<int>(dims[0]);
    if (n >= 0 && count != n) {
      return InvalidArgument(where() + " (" + Quoted(tname) + "): " + std::to_string(count) +
                             " rows, the tensors before it " + std::to_string(n));
    }
    n = count;
    CodecScratch::Source src;
    src.column = k;
    if (is_binary) {
      src.dtype = static_cast<uint8_t>(dtype->type);
      src.bytes = tensor_binary.data();
      if (bytes) {
        // Each element: a 4-byte little-endian length, then that many bytes.
        src.first = static_cast<uint32_t>(sc->elements.size());
        size_t at = 0;
        for (int i = 0; i < count; ++i) {
          if (tensor_binary.size() - at < 4) {
            return InvalidArgument(where() + " (" + Quoted(tname) + "): the binary data ends in " +
                                   "element " + std::to_string(i) + " of " + std::to_string(count));
          }
          const uint32_t len = Load<uint32_t>(tensor_binary.data() + at);
          at += 4;
          if (tensor_binary.size() - at < len) {
            return InvalidArgument(where() + " (" + Quoted(tname) + "): element " +
                                   std::to_string(i) + " has " + std::to_string(len) +
                                   " bytes, more than the binary data left");
          }
          sc->elements.push_back(tensor_binary.substr(at, len));
          at += len;
        }
        if (at != tensor_binary.size()) {
          return InvalidArgument(where() + " (" + Quoted(tname) + "): binary_data_size " +
                                 std::to_string(tensor_binary.size()) + " but its " +
                                 std::to_string(count) + " elements take " + std::to_string(at));
        }
      } else if (tensor_binary.size() != static_cast<size_t>(count) * dtype->size) {
        return InvalidArgument(where() + " (" + Quoted(tname) + "): binary_data_size " +
                               std::to_string(tensor_binary.size()) + " but " +
                               std::to_string(count) + " " + dtype->name + " values take " +
                               std::to_string(static_cast<size_t>(count) * dtype->size));
      }
      if (src.bytes == nullptr) src.bytes = "";  // zero rows: still a binary source
      sc->sources.push_back(src);
      continue;
    }
    size_t start = sc->leaves.size();
    Flatten(doc, *data, &sc->leaves);
    if (sc->leaves.size() - start != static_cast<size_t>(count)) {
      return InvalidArgument(where() + " (" + Quoted(tname) + "): \"data\" has " +
                             std::to_string(sc->leaves.size() - start) +
                             " values but the shape says " + std::to_string(count));
    }
    const bool integer = IsInteger(dtype->type);
    for (size_t i = start; i < sc->leaves.size(); ++i) {
      const JsonNode& v = doc.node(sc->leaves[i]);
      bool ok = v.type == JsonType::kNull || (numeric && v.type == JsonType::kNumber) ||
                (boolean && v.type == JsonType::kBool) ||
                (bytes && (v.type == JsonType::kString || v.type == JsonType::kNumber));
      if (!ok) {
        return InvalidArgument(where() + " (" + Quoted(tname) + "): datatype " + dtype->name +
                               " but data[" + std::to_string(i - start) + "] is a " +
                               JsonTypeName(v.type));
      }
      if (integer && v.type == JsonType::kNumber && !FitsInteger(dtype->type, v.text)) {
        return InvalidArgument(where() + " (" + Quoted(tname) + "): data[" +
                               std::to_string(i - start) + "] = " + std::string(v.text) +
                               " does not fit " + dtype->name);
      }
    }
    src.first = static_cast<uint32_t>(start);
    sc->sources.push_back(src);
  }
  if (binary_used != binary.size()) {
    return InvalidArgument("the request has " + std::to_string(binary.size()) +
                           " bytes of binary data after its JSON header, but the inputs' "
                           "binary_data_size add up to " +
                           std::to_string(binary_used));
  }
  if (vector_dtype) {
    TARN_RETURN_IF_ERROR(CheckRows(vector_rows, options));
    const int width = s.vector_width();
    const size_t count = static_cast<size_t>(vector_rows) * width;
    sc->rows.resize(count);
    if (!vector_data) {
      if (vector_binary.size() != count * vector_dtype->size) {
        return InvalidArgument(
            "inputs[0]: binary_data_size " + std::to_string(vector_binary.size()) + " but " +
            std::to_string(vector_rows) + " x " + std::to_string(width) + " " + vector_dtype->name +
            " values take " + std::to_string(count * vector_dtype->size));
      }
      for (size_t i = 0; i < count; ++i) {
        if (!ToFiniteFloat(BinaryNumber(vector_dtype->type, vector_binary.data(), i),
                           &sc->rows[i])) {
          return InvalidArgument("inputs[0]: element " + std::to_string(i) +
                                 " is not a finite float");
        }
      }
      sc->n = vector_rows;
      return Status::Ok();
    }
    sc->leaves.clear();
    Flatten(doc, *vector_data, &sc->leaves);
    if (sc->leaves.size() != count) {
      return InvalidArgument("inputs[0]: \"data\" has " + std::to_string(sc->leaves.size()) +
                             " values but the shape says " + std::to_string(vector_rows) + " x " +
                             std::to_string(width));
    }
    for (size_t i = 0; i < sc->leaves.size(); ++i) {
      TARN_RETURN_IF_ERROR(ParseVectorElement(doc.node(sc->leaves[i]),
                                              "inputs[0].data[" + std::to_string(i) + "]",
                                              sc->rows.data() + i));
    }
    sc->n = vector_rows;
    return Status::Ok();
  }
  if (n < 0) return InvalidArgument("no input tensor names a column that the model reads");
  TARN_RETURN_IF_ERROR(CheckRows(n, options));
  return DecodeColumns(s, sc, n, "rows");
}

void EncodeV1Predict(const CodecScratch& sc, V1Format format, std::string* out) {
  // "score" is [-1, 1] in the signature: one [score] per row, as TF Serving
  // answers for such an output.
  out->clear();
  out->append(format == V1Format::kRow ? "{\"predictions\": [" : "{\"outputs\": [");
  for (int i = 0; i < sc.n; ++i) {
    out->append(i ? ", [" : "[");
    AppendJsonNumber(out, sc.scores[i]);
    out->push_back(']');
  }
  out->append("]}");
}

void EncodeV2Infer(const CodecScratch& sc, const std::string& model_name, int64_t version,
                   const V2Request& request, std::string* out, size_t* json_bytes) {
  out->clear();
  out->append("{\"model_name\": ");
  AppendJsonString(out, model_name);
  out->append(", \"model_version\": \"");
  AppendJsonInt(out, version);
  out->append("\"");
  if (!request.id.empty()) {
    out->append(", \"id\": \"");
    out->append(request.id);  // already valid JSON string content
    out->append("\"");
  }
  out->append(", \"outputs\": [{\"name\": \"score\", \"datatype\": \"FP64\", \"shape\": [");
  AppendJsonInt(out, sc.n);
  if (request.binary_output) {
    out->append(", 1], \"parameters\": {\"binary_data_size\": ");
    AppendJsonInt(out, static_cast<int64_t>(sc.n) * 8);
    out->append("}}]}");
    *json_bytes = out->size();
    out->append(reinterpret_cast<const char*>(sc.scores.data()),
                static_cast<size_t>(sc.n) * sizeof(double));
    return;
  }
  out->append(", 1], \"data\": [");
  for (int i = 0; i < sc.n; ++i) {
    if (i) out->append(", ");
    AppendJsonNumber(out, sc.scores[i]);
  }
  out->append("]}]}");
  *json_bytes = out->size();
}

}  // namespace tarn::serving
