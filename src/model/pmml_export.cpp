#include "model/pmml_export.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <set>
#include <string_view>
#include <utility>

#include "common/strings.h"
#include "data/normalizer.h"
#include "model/onnx_export.h"  // for kOnnxProducerVersion (the project VERSION)

namespace tarn::model {

namespace {

using data::ColumnNormalizer;
using Kind = ColumnNormalizer::Kind;

// Shortest text that reads back as the same double.
std::string Num(double v) { return FormatDouble(v); }
// A parameter: the exact value of the float, so that the evaluator computes
// with the weights the network has.
std::string Num(float v) { return FormatDouble(static_cast<double>(v)); }

struct Attr {
  std::string_view name;
  std::string value;
};

// Indented XML, escaping text and attribute values. XML 1.0 cannot hold most
// control characters even escaped; the first such value is remembered and
// reported by status().
class XmlWriter {
 public:
  XmlWriter() { out_ = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"; }

  void Open(std::string_view tag, std::initializer_list<Attr> attrs = {}) {
    Start(tag, attrs);
    out_ += ">\n";
    open_.emplace_back(tag);
  }
  void Leaf(std::string_view tag, std::initializer_list<Attr> attrs = {}) {
    Start(tag, attrs);
    out_ += "/>\n";
  }
  void Text(std::string_view tag, std::string_view text, std::initializer_list<Attr> attrs = {}) {
    Start(tag, attrs);
    out_ += '>';
    out_ += Escape(text);
    out_ += "</";
    out_ += tag;
    out_ += ">\n";
  }
  void Close() {
    Indent(open_.size() - 1);
    out_ += "</" + open_.back() + ">\n";
    open_.pop_back();
  }

  Status status() const { return status_; }
  std::string Take() { return std::move(out_); }

 private:
  void Indent(size_t depth) { out_.append(2 * depth, ' '); }
  void Start(std::string_view tag, std::initializer_list<Attr> attrs) {
    Indent(open_.size());
    out_ += '<';
    out_ += tag;
    for (const auto& a : attrs) {
      out_ += ' ';
      out_ += a.name;
      out_ += "=\"";
      out_ += Escape(a.value);
      out_ += '"';
    }
  }
  std::string Escape(std::string_view s) {
    std::string out;
    for (char c : EscapeMarkup(s)) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '\t' || c == '\n' || c == '\r') {
        out += "&#" + std::to_string(u) + ";";  // kept as they are, also in attributes
      } else if (u < 0x20) {
        if (status_.ok()) {
          status_ =
              InvalidArgument("PMML export: '" + std::string(s) + "' holds control character " +
                              std::to_string(u) + ", which XML cannot hold");
        }
      } else {
        out += c;
      }
    }
    return out;
  }

  std::string out_;
  std::vector<std::string> open_;
  Status status_ = Status::Ok();
};

// Names already used in the document: DataDictionary, outputs and derived
// fields share one namespace in PMML.
class FieldNames {
 public:
  // `base`, or `base_2`, `base_3`... when taken.
  std::string Claim(const std::string& base) {
    std::string name = base;
    for (int i = 2; !used_.insert(name).second; ++i) name = base + "_" + std::to_string(i);
    return name;
  }

 private:
  std::set<std::string> used_;
};

// One raw input column of the document.
struct RawField {
  std::string name;
  bool categorical = false;
  std::vector<std::string> missing_values;  // trimmed, as DataField Values
};

std::vector<std::string> MissingValueList(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& v : values) {
    std::string t(Trim(v));
    if (seen.insert(t).second) out.push_back(t);
  }
  return out;
}

// ------------------------------------------------ per-column transformations
//
// One function per ColumnNormalizer::Kind; each writes the DerivedFields of one
// input column and returns the names of the network inputs they define, in
// input order. A normType that maps to an existing Kind needs nothing here.

struct ColumnContext {
  const ColumnNormalizer::Transform& t;
  const std::string& field;  // the raw DataField
  std::string prefix;        // "<column>_<normtype>"
  FieldNames* names;
  XmlWriter* xml;
};

void OpenDerived(XmlWriter* xml, const std::string& name) {
  xml->Open("DerivedField", {{"name", name}, {"optype", "continuous"}, {"dataType", "double"}});
}

std::vector<std::string> WriteZScore(const ColumnContext& c) {
  const auto& t = c.t;
  std::string name = c.names->Claim(c.prefix);
  OpenDerived(c.xml, name);
  const double lo = t.mean - t.cutoff * t.std_dev, hi = t.mean + t.cutoff * t.std_dev;
  if (t.std_dev <= data::kMinZScoreStdDev || !(t.cutoff > 0)) {  // no spread, or clipped to it
    c.xml->Text("Constant", "0", {{"dataType", "double"}});
  } else if (std::isfinite(lo) && std::isfinite(hi)) {
    // Clip at mean +- cutoff x sd: the two points, extreme values beyond them.
    c.xml->Open("NormContinuous",
                {{"field", c.field}, {"mapMissingTo", "0"}, {"outliers", "asExtremeValues"}});
    c.xml->Leaf("LinearNorm", {{"orig", Num(lo)}, {"norm", Num(-t.cutoff)}});
    c.xml->Leaf("LinearNorm", {{"orig", Num(hi)}, {"norm", Num(t.cutoff)}});
    c.xml->Close();
  } else {  // an infinite cutoff: no clipping
    c.xml->Open("NormContinuous",
                {{"field", c.field}, {"mapMissingTo", "0"}, {"outliers", "asIs"}});
    c.xml->Leaf("LinearNorm", {{"orig", Num(t.mean)}, {"norm", "0"}});
    c.xml->Leaf("LinearNorm", {{"orig", Num(t.mean + t.std_dev)}, {"norm", "1"}});
    c.xml->Close();
  }
  c.xml->Close();
  return {name};
}

std::vector<std::string> WriteRaw(const ColumnContext& c) {
  std::string name = c.names->Claim(c.prefix);
  OpenDerived(c.xml, name);
  c.xml->Leaf("FieldRef", {{"field", c.field}, {"mapMissingTo", Num(c.t.mean)}});
  c.xml->Close();
  return {name};
}

// A DerivedField `name` whose value is value[b] for the bin b of the raw
// value, value[missing_bin] for a missing one and `unseen` for a category
// stats never saw.
Status WriteBinned(const ColumnContext& c, const std::string& name,
                   const std::vector<double>& value, double unseen) {
  const auto& t = c.t;
  const std::string missing = Num(value.at(t.missing_bin));
  OpenDerived(c.xml, name);
  if (t.categorical) {
    c.xml->Open("MapValues", {{"outputColumn", "out"},
                              {"dataType", "double"},
                              {"mapMissingTo", missing},
                              {"defaultValue", Num(unseen)}});
    c.xml->Leaf("FieldColumnPair", {{"field", c.field}, {"column", "origin"}});
    c.xml->Open("InlineTable");
    for (size_t b = 0; b < t.categories.size(); ++b) {
      for (const auto& category : t.categories[b]) {
        c.xml->Open("row");
        c.xml->Text("origin", category);
        c.xml->Text("out", Num(value[b]));
        c.xml->Close();
      }
    }
    c.xml->Close();
    c.xml->Close();
  } else {
    const auto& edge = t.boundaries;
    if (edge.size() > static_cast<size_t>(t.missing_bin)) {
      return Internal("PMML export: column '" + c.field + "' has " + std::to_string(edge.size()) +
                      " bin boundaries for " + std::to_string(t.missing_bin) + " bins");
    }
    // NaN is neither in a bin nor missing in PMML; tarn puts it in the missing bin.
    c.xml->Open("Discretize", {{"field", c.field},
                               {"mapMissingTo", missing},
                               {"defaultValue", missing},
                               {"dataType", "double"}});
    for (size_t b = 0; b < edge.size(); ++b) {
      const bool first = b == 0, last = b + 1 == edge.size();
      if (!first && !last && !(edge[b] < edge[b + 1])) continue;  // an empty bin
      c.xml->Open("DiscretizeBin", {{"binValue", Num(value[b])}});
      if (first && last) {
        c.xml->Leaf("Interval", {{"closure", "openOpen"}});
      } else if (first) {
        c.xml->Leaf("Interval", {{"closure", "openOpen"}, {"rightMargin", Num(edge[b + 1])}});
      } else if (last) {
        c.xml->Leaf("Interval", {{"closure", "closedOpen"}, {"leftMargin", Num(edge[b])}});
      } else {
        c.xml->Leaf("Interval", {{"closure", "closedOpen"},
                                 {"leftMargin", Num(edge[b])},
                                 {"rightMargin", Num(edge[b + 1])}});
      }
      c.xml->Close();
    }
    c.xml->Close();
  }
  c.xml->Close();
  return Status::Ok();
}

Result<std::vector<std::string>> WriteBinValue(const ColumnContext& c) {
  std::string name = c.names->Claim(c.prefix);
  TARN_RETURN_IF_ERROR(WriteBinned(c, name, c.t.bin_values, c.t.unseen_value));
  return std::vector<std::string>{name};
}

// One input per bin, missing bin last: 1 for the value's bin, else 0.
Result<std::vector<std::string>> WriteOneHot(const ColumnContext& c) {
  std::vector<std::string> inputs;
  for (int slot = 0; slot <= c.t.missing_bin; ++slot) {
    std::vector<double> value(c.t.missing_bin + 1, 0.0);
    value[slot] = 1;
    std::string name = c.names->Claim(c.prefix + "_" + std::to_string(slot));
    TARN_RETURN_IF_ERROR(WriteBinned(c, name, value, slot == c.t.missing_bin ? 1 : 0));
    inputs.push_back(std::move(name));
  }
  return inputs;
}

// (x - min) / (max - min), unclipped; a missing value is the mean's.
std::vector<std::string> WriteMaxMin(const ColumnContext& c) {
  const auto& t = c.t;
  std::string name = c.names->Claim(c.prefix);
  OpenDerived(c.xml, name);
  const double range = t.max - t.min;
  if (!(range > 1e-7)) {
    c.xml->Text("Constant", "0", {{"dataType", "double"}});
  } else {
    c.xml->Open("NormContinuous", {{"field", c.field},
                                   {"mapMissingTo", Num((t.mean - t.min) / range)},
                                   {"outliers", "asIs"}});
    c.xml->Leaf("LinearNorm", {{"orig", Num(t.min)}, {"norm", "0"}});
    c.xml->Leaf("LinearNorm", {{"orig", Num(t.max)}, {"norm", "1"}});
    c.xml->Close();
  }
  c.xml->Close();
  return {name};
}

// The *_APPEND_INDEX types' last input: the bin's index.
Result<std::string> WriteAppendedIndex(const ColumnContext& c) {
  std::vector<double> index(c.t.missing_bin + 1);
  for (size_t b = 0; b < index.size(); ++b) index[b] = static_cast<double>(b);
  std::string name = c.names->Claim(c.prefix + "_index");
  TARN_RETURN_IF_ERROR(WriteBinned(c, name, index, c.t.missing_bin));
  return name;
}

Result<std::vector<std::string>> WriteKindTransform(const ColumnContext& c) {
  switch (c.t.kind) {
    case Kind::kZScore:
      return WriteZScore(c);
    case Kind::kRaw:
      return WriteRaw(c);
    case Kind::kMaxMin:
      return WriteMaxMin(c);
    case Kind::kBinValue:
    case Kind::kDiscrete:  // Describe() gives these per-bin values too
    case Kind::kIndex:
      return WriteBinValue(c);
    case Kind::kOneHot:
      return WriteOneHot(c);
  }
  return Unsupported("PMML export: column '" + c.field + "': its normalization (" + c.prefix +
                     ") has no PMML form in tarn");
}

Result<std::vector<std::string>> WriteColumnTransform(const ColumnContext& c) {
  TARN_ASSIGN_OR_RETURN(auto inputs, WriteKindTransform(c));
  if (c.t.append_index) {
    TARN_ASSIGN_OR_RETURN(auto index, WriteAppendedIndex(c));
    inputs.push_back(std::move(index));
  }
  return inputs;
}

// ------------------------------------------------------------- the model

Result<const char*> PmmlActivation(Activation a, size_t layer) {
  switch (a) {
    case Activation::kLinear:
      return "identity";
    case Activation::kSigmoid:
      return "logistic";
    case Activation::kTanh:
      return "tanh";
    case Activation::kRelu:
      return "rectifier";
    case Activation::kLeakyRelu:
    case Activation::kSwish:
      break;
  }
  return Unsupported(std::string("PMML export: activation '") + ActivationName(a) + "' (layer " +
                     std::to_string(layer) +
                     ") has no PMML activation function; PMML knows identity, logistic, tanh "
                     "and rectifier (export it with -t onnx instead)");
}

// A network without hidden layers and a sigmoid or linear output is Shifu's LR.
bool IsRegression(const ModelSpec& spec) {
  return spec.layers.size() == 1 && (spec.layers[0].activation == Activation::kSigmoid ||
                                     spec.layers[0].activation == Activation::kLinear);
}

struct Document {
  std::vector<RawField> fields;  // the raw inputs, in first-use order
  std::string target;
  FieldNames names;  // DataDictionary + outputs
};

Status AddRawFields(const ModelFile& model, Document* doc) {
  const auto missing = MissingValueList(model.missing_values);
  for (const auto& column : model.columns) {
    RawField f{column.column_name, column.IsCategorical(), missing};
    auto it = std::find_if(doc->fields.begin(), doc->fields.end(),
                           [&](const RawField& g) { return g.name == f.name; });
    if (it == doc->fields.end()) {
      doc->fields.push_back(std::move(f));
    } else if (it->categorical != f.categorical || it->missing_values != f.missing_values) {
      return InvalidArgument("PMML export: column '" + f.name +
                             "' has a different type or missing values in two models");
    }
  }
  return Status::Ok();
}

void WriteHeader(const PmmlOptions& options, XmlWriter* xml) {
  xml->Open("PMML", {{"xmlns", kPmmlNamespace}, {"version", kPmmlVersion}});
  xml->Open("Header", {{"copyright", ""}, {"description", options.description}});
  xml->Leaf("Application", {{"name", "tarn"}, {"version", kOnnxProducerVersion}});
  xml->Close();
}

void WriteDataDictionary(Document* doc, XmlWriter* xml) {
  xml->Open("DataDictionary", {{"numberOfFields", std::to_string(doc->fields.size() + 1)}});
  for (const auto& f : doc->fields) {
    doc->names.Claim(f.name);
    xml->Open("DataField", {{"name", f.name},
                            {"optype", f.categorical ? "categorical" : "continuous"},
                            {"dataType", f.categorical ? "string" : "double"}});
    for (const auto& v : f.missing_values)
      xml->Leaf("Value", {{"value", v}, {"property", "missing"}});
    xml->Close();
  }
  // The target is never read; a continuous field because the model is a regression.
  doc->target = doc->names.Claim(doc->target);
  xml->Leaf("DataField", {{"name", doc->target}, {"optype", "continuous"}, {"dataType", "double"}});
  xml->Close();
}

void WriteMiningSchema(const std::vector<std::string>& inputs, const std::string& target,
                       XmlWriter* xml) {
  xml->Open("MiningSchema");
  for (const auto& name : inputs) {
    xml->Leaf("MiningField",
              {{"name", name}, {"usageType", "active"}, {"invalidValueTreatment", "asMissing"}});
  }
  xml->Leaf("MiningField", {{"name", target}, {"usageType", "target"}});
  xml->Close();
}

void WriteOutput(const PmmlOptions& options, Document* doc, XmlWriter* xml) {
  const std::string raw = doc->names.Claim(kPmmlRawResult);
  const std::string final_result = doc->names.Claim(kPmmlFinalResult);
  xml->Open("Output");
  xml->Leaf("OutputField", {{"name", raw},
                            {"optype", "continuous"},
                            {"dataType", "double"},
                            {"feature", "predictedValue"}});
  xml->Open("OutputField", {{"name", final_result},
                            {"optype", "continuous"},
                            {"dataType", "double"},
                            {"feature", "transformedValue"}});
  xml->Open("Apply", {{"function", "round"}});
  xml->Open("Apply", {{"function", "*"}});
  xml->Leaf("FieldRef", {{"field", raw}});
  xml->Text("Constant", Num(options.score_scale), {{"dataType", "double"}});
  xml->Close();
  xml->Close();
  xml->Close();
  xml->Close();
}

// One NeuralNetwork or RegressionModel element; `with_output` puts the Output
// on it (false for a segment: the MiningModel has it).
Status WriteModel(const ModelFile& model, const PmmlOptions& options, bool with_output,
                  Document* doc, XmlWriter* xml) {
  const ModelSpec& spec = model.spec;
  TARN_RETURN_IF_ERROR(spec.ValidateParameters(model.params, "PMML export"));
  std::vector<const char*> activations;
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    TARN_ASSIGN_OR_RETURN(auto a, PmmlActivation(spec.layers[l].activation, l));
    activations.push_back(a);
  }
  TARN_ASSIGN_OR_RETURN(auto norm, data::ParseNormType(model.norm_type));
  const std::string norm_name = ToLower(data::NormTypeName(norm));
  std::vector<ColumnNormalizer> normalizers;
  std::vector<std::string> raw_inputs;
  for (const auto& column : model.columns) {
    TARN_ASSIGN_OR_RETURN(auto n, ColumnNormalizer::Create(column, norm, model.std_dev_cut_off));
    normalizers.push_back(std::move(n));
    raw_inputs.push_back(column.column_name);
  }

  const bool regression = IsRegression(spec);
  if (regression) {
    xml->Open("RegressionModel",
              {{"modelName", options.model_name},
               {"functionName", "regression"},
               {"algorithmName", "LogisticRegression"},
               {"normalizationMethod",
                spec.layers[0].activation == Activation::kSigmoid ? "logit" : "none"}});
  } else {
    xml->Open("NeuralNetwork", {{"modelName", options.model_name},
                                {"functionName", "regression"},
                                {"activationFunction", activations[0]}});
  }
  WriteMiningSchema(raw_inputs, doc->target, xml);
  if (with_output) WriteOutput(options, doc, xml);

  // Derived names are local to the model, after the document's own.
  FieldNames names = doc->names;
  std::vector<std::string> inputs;
  xml->Open("LocalTransformations");
  for (const auto& n : normalizers) {
    const auto t = n.Describe();
    ColumnContext c{t, n.name(), n.name() + "_" + norm_name, &names, xml};
    TARN_ASSIGN_OR_RETURN(auto defined, WriteColumnTransform(c));
    inputs.insert(inputs.end(), defined.begin(), defined.end());
  }
  xml->Close();
  if (inputs.size() != static_cast<size_t>(spec.input_count)) {
    return Internal("PMML export: the columns normalize to " + std::to_string(inputs.size()) +
                    " values for a network of " + std::to_string(spec.input_count) + " inputs");
  }

  const float* params = model.params.data();
  if (regression) {
    xml->Open("RegressionTable", {{"intercept", Num(params[spec.BiasOffset(0)])}});
    for (size_t i = 0; i < inputs.size(); ++i) {
      xml->Leaf("NumericPredictor",
                {{"name", inputs[i]}, {"coefficient", Num(params[spec.WeightOffset(0) + i])}});
    }
    xml->Close();
    xml->Close();
    return Status::Ok();
  }

  xml->Open("NeuralInputs", {{"numberOfInputs", std::to_string(inputs.size())}});
  for (size_t i = 0; i < inputs.size(); ++i) {
    xml->Open("NeuralInput", {{"id", "0," + std::to_string(i)}});
    xml->Open("DerivedField", {{"optype", "continuous"}, {"dataType", "double"}});
    xml->Leaf("FieldRef", {{"field", inputs[i]}});
    xml->Close();
    xml->Close();
  }
  xml->Close();
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    const LayerSpec& layer = spec.layers[l];
    const float* w = params + spec.WeightOffset(l);
    const float* b = params + spec.BiasOffset(l);
    xml->Open("NeuralLayer", {{"numberOfNeurons", std::to_string(layer.outputs)},
                              {"activationFunction", activations[l]}});
    for (int j = 0; j < layer.outputs; ++j) {
      xml->Open("Neuron",
                {{"id", std::to_string(l + 1) + "," + std::to_string(j)}, {"bias", Num(b[j])}});
      for (int k = 0; k < layer.inputs; ++k) {
        xml->Leaf("Con", {{"from", std::to_string(l) + "," + std::to_string(k)},
                          {"weight", Num(w[static_cast<size_t>(j) * layer.inputs + k])}});
      }
      xml->Close();
    }
    xml->Close();
  }
  xml->Open("NeuralOutputs", {{"numberOfOutputs", "1"}});
  xml->Open("NeuralOutput", {{"outputNeuron", std::to_string(spec.layers.size()) + ",0"}});
  xml->Open("DerivedField", {{"optype", "continuous"}, {"dataType", "double"}});
  xml->Leaf("FieldRef", {{"field", doc->target}});
  xml->Close();
  xml->Close();
  xml->Close();
  xml->Close();
  return Status::Ok();
}

Result<std::string> Finish(XmlWriter* xml) {
  xml->Close();  // PMML
  TARN_RETURN_IF_ERROR(xml->status());
  return xml->Take();
}

}  // namespace

Result<std::string> ExportPmml(const ModelFile& model, const PmmlOptions& options) {
  Document doc;
  doc.target = options.target_name;
  TARN_RETURN_IF_ERROR(AddRawFields(model, &doc));
  XmlWriter xml;
  WriteHeader(options, &xml);
  WriteDataDictionary(&doc, &xml);
  TARN_RETURN_IF_ERROR(WriteModel(model, options, true, &doc, &xml));
  return Finish(&xml);
}

Result<std::string> ExportBaggingPmml(const std::vector<ModelFile>& models,
                                      const PmmlOptions& options) {
  if (models.empty()) return InvalidArgument("PMML export: no model to average");
  Document doc;
  doc.target = options.target_name;
  for (const auto& m : models) TARN_RETURN_IF_ERROR(AddRawFields(m, &doc));
  XmlWriter xml;
  WriteHeader(options, &xml);
  WriteDataDictionary(&doc, &xml);
  xml.Open("MiningModel", {{"modelName", options.model_name}, {"functionName", "regression"}});
  std::vector<std::string> all_inputs;
  for (const auto& f : doc.fields) all_inputs.push_back(f.name);
  WriteMiningSchema(all_inputs, doc.target, &xml);
  WriteOutput(options, &doc, &xml);
  xml.Open("Segmentation", {{"multipleModelMethod", "average"}});
  for (size_t i = 0; i < models.size(); ++i) {
    xml.Open("Segment", {{"id", std::to_string(i)}});
    xml.Leaf("True");
    PmmlOptions segment = options;
    segment.model_name = options.model_name + std::to_string(i);
    TARN_RETURN_IF_ERROR(WriteModel(models[i], segment, false, &doc, &xml));
    xml.Close();
  }
  xml.Close();
  xml.Close();
  return Finish(&xml);
}

}  // namespace tarn::model
