#include "serving/predict_codec.h"

#include <cmath>

#include "common/strings.h"

namespace tarn::serving {

namespace {

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

Status UnknownColumn(const Servable& s, const std::string& where, std::string_view name) {
  return InvalidArgument(where + ": unknown column " + Quoted(name) + "; the model reads: " +
                         ColumnList(s) + " (see GET /v1/models/{name}/metadata)");
}

// One raw value of column k from a JSON node.
Status ConvertValue(const Servable& s, int k, const JsonNode& v, CodecScratch* sc,
                    const std::string_view where_prefix, int row) {
  RawValue& out = sc->values[k];
  const Servable::Column& col = s.columns()[k];
  auto where = [&]() {
    std::string w(where_prefix);
    if (row >= 0) w += "[" + std::to_string(row) + "]";
    return w + ": column " + Quoted(col.name);
  };
  switch (v.type) {
    case JsonType::kNull:
      out.present = false;
      return Status::Ok();
    case JsonType::kNumber:
      out.text = v.text;
      out.present = true;
      return Status::Ok();
    case JsonType::kString: {
      out.text = JsonDoc::StringValue(v, &sc->strings[k]);
      out.present = true;
      if (col.numeric && !s.IsMissing(out.text) && !ParseDouble(out.text)) {
        return InvalidArgument(where() + " is numeric, but " + Quoted(out.text) +
                               " is not a number (nor a missing value)");
      }
      return Status::Ok();
    }
    case JsonType::kBool:
      if (col.numeric) {
        return InvalidArgument(where() + " is numeric, but got " + std::string(v.text));
      }
      out.text = v.text;
      out.present = true;
      return Status::Ok();
    default:
      return InvalidArgument(where() + ": expected a number, a string or null, got an " +
                             JsonTypeName(v.type));
  }
}

void ResetRecord(const Servable& s, CodecScratch* sc) {
  const size_t c = s.columns().size();
  sc->values.assign(c, RawValue{});
  if (sc->strings.size() < c) sc->strings.resize(c);
  sc->seen.assign(c, 0);
}

// A raw record {"col": value, ...} into one row vector.
Status DecodeRecord(const Servable& s, const DecodeOptions& options, const JsonNode& obj,
                    CodecScratch* sc, int row, float* out) {
  ResetRecord(s, sc);
  const JsonDoc& doc = sc->doc;
  for (uint32_t m = obj.first_child; m; m = doc.node(m).next) {
    const JsonNode& member = doc.node(m);
    std::string_view key = JsonDoc::KeyValue(member, &sc->key);
    int k = s.FindColumn(key);
    if (k < 0) {
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

Status NeedVectors(const Servable& s) {
  if (s.vector_width() > 0) return Status::Ok();
  return InvalidArgument(
      "the models of this version normalize their inputs differently: send raw records "
      "(column name -> value) instead of normalized vectors");
}

Status ParseVectorElement(const JsonNode& e, const std::string& where, float* out) {
  if (e.type != JsonType::kNumber) {
    return InvalidArgument(where + ": expected a number, got " +
                           (e.type == JsonType::kString ? "a string" : JsonTypeName(e.type)));
  }
  auto v = ParseDouble(e.text);
  if (!v || !std::isfinite(*v) || std::fabs(*v) > 3.4e38) {
    return InvalidArgument(where + ": " + std::string(e.text) + " is not a finite float");
  }
  *out = static_cast<float>(*v);
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
    if (e.type != JsonType::kNumber) {
      return ParseVectorElement(e, where + "[" + std::to_string(j) + "]", out + j);
    }
    auto v = ParseDouble(e.text);
    if (!v || !std::isfinite(*v) || std::fabs(*v) > 3.4e38) {
      return ParseVectorElement(e, where + "[" + std::to_string(j) + "]", out + j);
    }
    out[j] = static_cast<float>(*v);
  }
  return Status::Ok();
}

Status CheckRows(int n, const DecodeOptions& options) {
  if (n > options.max_rows) {
    return InvalidArgument("too many rows in one request: " + std::to_string(n) + " (limit " +
                           std::to_string(options.max_rows) + ")");
  }
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

// Columnar raw input: column j's values are sc->leaves[sc->cursors[j] + i]
// for row i, column sc->cursor_column[j].
Status DecodeColumns(const Servable& s, CodecScratch* sc, int n, const char* where_prefix) {
  const int width = s.row_width();
  sc->rows.resize(static_cast<size_t>(n) * width);
  const JsonDoc& doc = sc->doc;
  for (int i = 0; i < n; ++i) {
    ResetRecord(s, sc);
    for (size_t j = 0; j < sc->cursors.size(); ++j) {
      int k = sc->cursor_column[j];
      const JsonNode& v = doc.node(sc->leaves[sc->cursors[j] + i]);
      TARN_RETURN_IF_ERROR(ConvertValue(s, k, v, sc, where_prefix, i));
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
    // {"col": [v, ...] | v, ...}
    if (inputs->count == 0) return InvalidArgument("\"inputs\" has no columns");
    sc->leaves.clear();
    sc->cursors.clear();
    sc->cursor_column.clear();
    ResetRecord(s, sc);
    int n = -1;
    bool scalars = false, lists = false;
    for (uint32_t m = inputs->first_child; m; m = doc.node(m).next) {
      const JsonNode& member = doc.node(m);
      std::string_view key = JsonDoc::KeyValue(member, &sc->key);
      int k = s.FindColumn(key);
      if (k < 0) {
        if (options.ignore_unknown_columns) continue;
        return UnknownColumn(s, "inputs", key);
      }
      if (sc->seen[k]) return InvalidArgument("inputs: column " + Quoted(key) + " is given twice");
      sc->seen[k] = 1;
      int count;
      sc->cursors.push_back(static_cast<uint32_t>(sc->leaves.size()));
      sc->cursor_column.push_back(k);
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
  if (inputs->type == JsonType::kArray) {
    // [[x, ...], ...] or one vector [x, ...]
    bool nested = inputs->count > 0 && doc.node(inputs->first_child).type == JsonType::kArray;
    if (!nested) {
      if (inputs->count == 0) {
        sc->n = 0;
        return Status::Ok();
      }
      sc->rows.resize(static_cast<size_t>(width));
      TARN_RETURN_IF_ERROR(DecodeVector(s, *inputs, sc, "inputs", sc->rows.data()));
      sc->n = 1;
      return Status::Ok();
    }
    const int n = static_cast<int>(inputs->count);
    TARN_RETURN_IF_ERROR(CheckRows(n, options));
    sc->rows.resize(static_cast<size_t>(n) * width);
    int i = 0;
    for (uint32_t c = inputs->first_child; c; c = doc.node(c).next, ++i) {
      const JsonNode& row = doc.node(c);
      if (row.type != JsonType::kArray) {
        return InvalidArgument(Where("inputs", i) + ": expected a list of numbers, got a " +
                               JsonTypeName(row.type));
      }
      TARN_RETURN_IF_ERROR(DecodeVector(s, row, sc, Where("inputs", i),
                                        sc->rows.data() + static_cast<size_t>(i) * width));
    }
    sc->n = n;
    return Status::Ok();
  }
  return InvalidArgument(
      "\"inputs\" must be an object (column name -> values) or a list of "
      "normalized vectors, got " +
      std::string(JsonTypeName(inputs->type)));
}

Status DecodeV2Infer(const Servable& s, const DecodeOptions& options, CodecScratch* sc,
                     std::string_view* id) {
  const JsonDoc& doc = sc->doc;
  const JsonNode& root = doc.root();
  sc->n = 0;
  *id = {};
  if (root.type != JsonType::kObject) {
    return InvalidArgument("the request body must be a JSON object with \"inputs\"");
  }
  if (const JsonNode* idn = doc.Find(root, "id")) {
    if (idn->type != JsonType::kString) return InvalidArgument("\"id\" must be a string");
    *id = idn->text;
  }
  const JsonNode* inputs = doc.Find(root, "inputs");
  if (!inputs || inputs->type != JsonType::kArray || inputs->count == 0) {
    return InvalidArgument("\"inputs\" must be a non-empty list of tensors");
  }
  sc->leaves.clear();
  sc->cursors.clear();
  sc->cursor_column.clear();
  ResetRecord(s, sc);
  int n = -1;
  int j = 0;
  const JsonNode* vector_tensor = nullptr;
  int vector_rows = 0;
  for (uint32_t t = inputs->first_child; t; t = doc.node(t).next, ++j) {
    const JsonNode& tensor = doc.node(t);
    const std::string where = Where("inputs", j);
    if (tensor.type != JsonType::kObject) {
      return InvalidArgument(where +
                             ": expected a tensor object with name, shape, datatype "
                             "and data");
    }
    const JsonNode* name = doc.Find(tensor, "name");
    const JsonNode* shape = doc.Find(tensor, "shape");
    const JsonNode* datatype = doc.Find(tensor, "datatype");
    const JsonNode* data = doc.Find(tensor, "data");
    if (!name || name->type != JsonType::kString) {
      return InvalidArgument(where + ": \"name\" must be a string");
    }
    if (!shape || shape->type != JsonType::kArray) {
      return InvalidArgument(where + ": \"shape\" must be a list of integers");
    }
    if (!datatype || datatype->type != JsonType::kString) {
      return InvalidArgument(where + ": \"datatype\" must be a string");
    }
    if (!data || data->type != JsonType::kArray) {
      return InvalidArgument(where + ": \"data\" must be a list");
    }
    int64_t dims[2] = {0, 0};
    size_t rank = 0;
    for (uint32_t d = shape->first_child; d; d = doc.node(d).next) {
      auto v = ParseInt(doc.node(d).text);
      if (doc.node(d).type != JsonType::kNumber || !v || *v < 0 || *v > 100000000) {
        return InvalidArgument(where + ": \"shape\" must be a list of non-negative integers");
      }
      if (rank == 2) return InvalidArgument(where + ": \"shape\" has more than 2 dimensions");
      dims[rank++] = *v;
    }
    std::string_view tname = JsonDoc::StringValue(*name, &sc->key);
    std::string_view dtype = datatype->text;
    const bool bytes = dtype == "BYTES";
    const bool boolean = dtype == "BOOL";
    const bool numeric = dtype == "FP16" || dtype == "FP32" || dtype == "FP64" || dtype == "INT8" ||
                         dtype == "INT16" || dtype == "INT32" || dtype == "INT64" ||
                         dtype == "UINT8" || dtype == "UINT16" || dtype == "UINT32" ||
                         dtype == "UINT64";
    if (!bytes && !boolean && !numeric) {
      return InvalidArgument(where + ": unsupported datatype " + Quoted(dtype) +
                             " (BYTES, BOOL, FP16/32/64, INT8..64, UINT8..64)");
    }
    int k = s.FindColumn(tname);
    if (k < 0) {
      // The normalized-vector form: one [N, W] tensor.
      if (rank == 2 && s.vector_width() > 0 && dims[1] == s.vector_width() && inputs->count == 1) {
        if (!numeric) {
          return InvalidArgument(where + ": a normalized [N, " + std::to_string(s.vector_width()) +
                                 "] tensor must be numeric");
        }
        vector_tensor = data;
        vector_rows = static_cast<int>(dims[0]);
        continue;
      }
      if (options.ignore_unknown_columns) continue;
      std::string hint;
      if (s.vector_width() > 0) {
        hint = ", nor a normalized tensor of shape [N, " + std::to_string(s.vector_width()) + "]";
      }
      return InvalidArgument(where + ": " + Quoted(tname) + " is not a column of the model" + hint +
                             "; the model reads: " + ColumnList(s));
    }
    if (sc->seen[k])
      return InvalidArgument(where + ": column " + Quoted(tname) + " is given twice");
    sc->seen[k] = 1;
    if (rank == 0 || (rank == 2 && dims[1] != 1)) {
      return InvalidArgument(where + " (" + Quoted(tname) +
                             "): a column tensor has shape [N] or "
                             "[N, 1]");
    }
    const int count = static_cast<int>(dims[0]);
    if (n >= 0 && count != n) {
      return InvalidArgument(where + " (" + Quoted(tname) + "): " + std::to_string(count) +
                             " rows, the tensors before it " + std::to_string(n));
    }
    n = count;
    size_t start = sc->leaves.size();
    Flatten(doc, *data, &sc->leaves);
    if (sc->leaves.size() - start != static_cast<size_t>(count)) {
      return InvalidArgument(where + " (" + Quoted(tname) + "): \"data\" has " +
                             std::to_string(sc->leaves.size() - start) +
                             " values but the shape says " + std::to_string(count));
    }
    for (size_t i = start; i < sc->leaves.size(); ++i) {
      const JsonNode& v = doc.node(sc->leaves[i]);
      bool ok = v.type == JsonType::kNull || (numeric && v.type == JsonType::kNumber) ||
                (boolean && v.type == JsonType::kBool) ||
                (bytes && (v.type == JsonType::kString || v.type == JsonType::kNumber));
      if (!ok) {
        return InvalidArgument(where + " (" + Quoted(tname) + "): datatype " + std::string(dtype) +
                               " but data[" + std::to_string(i - start) + "] is a " +
                               JsonTypeName(v.type));
      }
    }
    sc->cursors.push_back(static_cast<uint32_t>(start));
    sc->cursor_column.push_back(k);
  }
  if (vector_tensor) {
    TARN_RETURN_IF_ERROR(CheckRows(vector_rows, options));
    const int width = s.vector_width();
    sc->leaves.clear();
    Flatten(doc, *vector_tensor, &sc->leaves);
    if (sc->leaves.size() != static_cast<size_t>(vector_rows) * width) {
      return InvalidArgument("inputs[0]: \"data\" has " + std::to_string(sc->leaves.size()) +
                             " values but the shape says " + std::to_string(vector_rows) + " x " +
                             std::to_string(width));
    }
    sc->rows.resize(sc->leaves.size());
    for (size_t i = 0; i < sc->leaves.size(); ++i) {
      TARN_RETURN_IF_ERROR(ParseVectorElement(doc.node(sc->leaves[i]),
                                              "inputs[0].data[" + std::to_string(i) + "]",
                                              sc->rows.data() + i));
    }
    sc->n = vector_rows;
    return Status::Ok();
  }
  if (n < 0) return InvalidArgument("no input tensor names a column of the model");
  TARN_RETURN_IF_ERROR(CheckRows(n, options));
  return DecodeColumns(s, sc, n, "rows");
}

void EncodeV1Predict(const CodecScratch& sc, V1Format format, std::string* out) {
  out->clear();
  out->append(format == V1Format::kRow ? "{\"predictions\": [" : "{\"outputs\": [");
  for (int i = 0; i < sc.n; ++i) {
    if (i) out->append(", ");
    AppendJsonNumber(out, sc.scores[i]);
  }
  out->append("]}");
}

void EncodeV2Infer(const CodecScratch& sc, const std::string& model_name, int64_t version,
                   std::string_view id_raw, std::string* out) {
  out->clear();
  out->append("{\"model_name\": ");
  AppendJsonString(out, model_name);
  out->append(", \"model_version\": \"");
  AppendJsonInt(out, version);
  out->append("\"");
  if (!id_raw.empty()) {
    out->append(", \"id\": \"");
    out->append(id_raw);  // already valid JSON string content
    out->append("\"");
  }
  out->append(", \"outputs\": [{\"name\": \"score\", \"datatype\": \"FP64\", \"shape\": [");
  AppendJsonInt(out, sc.n);
  out->append(", 1], \"data\": [");
  for (int i = 0; i < sc.n; ++i) {
    if (i) out->append(", ");
    AppendJsonNumber(out, sc.scores[i]);
  }
  out->append("]}]}");
}

}  // namespace tarn::serving
