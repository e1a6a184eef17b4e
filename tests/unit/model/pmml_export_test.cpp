#include "model/pmml_export.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/strings.h"

namespace tarn::model {
namespace {

// A test-only XML reader: elements, attributes and text, the five named
// entities and numeric character references; throws on malformed input.
struct Element {
  std::string tag;
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<std::unique_ptr<Element>> children;
  std::string text;

  std::string Attr(std::string_view name) const {
    for (const auto& [k, v] : attrs)
      if (k == name) return v;
    throw std::runtime_error("<" + tag + "> has no attribute " + std::string(name));
  }
  bool Has(std::string_view name) const {
    for (const auto& a : attrs)
      if (a.first == name) return true;
    return false;
  }
  std::vector<const Element*> All(std::string_view t) const {
    std::vector<const Element*> out;
    for (const auto& c : children)
      if (c->tag == t) out.push_back(c.get());
    return out;
  }
  const Element& One(std::string_view t) const {
    auto all = All(t);
    if (all.size() != 1) {
      throw std::runtime_error("<" + tag + "> has " + std::to_string(all.size()) + " <" +
                               std::string(t) + ">");
    }
    return *all[0];
  }
};

class XmlReader {
 public:
  explicit XmlReader(std::string_view s) : s_(s) {}
  std::unique_ptr<Element> Document() {
    Expect("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    auto root = Parse();
    Blank();
    if (pos_ != s_.size()) throw std::runtime_error("text after the root element");
    return root;
  }

 private:
  void Blank() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void Expect(std::string_view t) {
    if (s_.substr(pos_, t.size()) != t) {
      throw std::runtime_error("expected '" + std::string(t) + "' at " + std::to_string(pos_));
    }
    pos_ += t.size();
  }
  std::string Name() {
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                s_[pos_] == '_' || s_[pos_] == ':' || s_[pos_] == '-'))
      ++pos_;
    if (start == pos_) throw std::runtime_error("expected a name at " + std::to_string(pos_));
    return std::string(s_.substr(start, pos_ - start));
  }
  std::string Decode(std::string_view raw) {
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '<' || raw[i] == '"') throw std::runtime_error("unescaped markup");
      if (raw[i] != '&') {
        out += raw[i];
        continue;
      }
      size_t end = raw.find(';', i);
      if (end == std::string_view::npos) throw std::runtime_error("unterminated entity");
      std::string_view e = raw.substr(i + 1, end - i - 1);
      if (e == "amp")
        out += '&';
      else if (e == "lt")
        out += '<';
      else if (e == "gt")
        out += '>';
      else if (e == "quot")
        out += '"';
      else if (e == "apos")
        out += '\'';
      else if (!e.empty() && e[0] == '#')
        out += static_cast<char>(std::stoi(std::string(e.substr(1))));
      else
        throw std::runtime_error("unknown entity " + std::string(e));
      i = end;
    }
    return out;
  }
  std::unique_ptr<Element> Parse() {
    Blank();
    Expect("<");
    auto e = std::make_unique<Element>();
    e->tag = Name();
    for (;;) {
      Blank();
      if (s_.substr(pos_, 2) == "/>") {
        pos_ += 2;
        return e;
      }
      if (s_[pos_] == '>') break;
      std::string key = Name();
      Expect("=\"");
      size_t end = s_.find('"', pos_);
      if (end == std::string_view::npos) throw std::runtime_error("unterminated attribute");
      e->attrs.emplace_back(key, Decode(s_.substr(pos_, end - pos_)));
      pos_ = end + 1;
    }
    ++pos_;
    for (;;) {
      size_t lt = s_.find('<', pos_);
      if (lt == std::string_view::npos) throw std::runtime_error("unclosed <" + e->tag + ">");
      e->text += Decode(s_.substr(pos_, lt - pos_));
      pos_ = lt;
      if (s_.substr(pos_, 2) == "</") {
        pos_ += 2;
        if (Name() != e->tag) throw std::runtime_error("mismatched </...> for <" + e->tag + ">");
        Expect(">");
        return e;
      }
      e->children.push_back(Parse());
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::unique_ptr<Element> ParseXml(const std::string& xml) { return XmlReader(xml).Document(); }

double Number(const std::string& s) {
  auto v = ParseDouble(s);
  if (!v) throw std::runtime_error("not a number: " + s);
  return *v;
}

data::ColumnConfig Numeric() {
  data::ColumnConfig c;
  c.column_num = 0;
  c.column_name = "age";
  c.column_type = data::ColumnType::kNumeric;
  c.stats.mean = 40;
  c.stats.std_dev = 10;
  c.stats.woe = 0.1;
  c.binning.length = 3;
  c.binning.bin_boundary = {-INFINITY, 30, 50};
  c.binning.bin_count_neg = {30, 10, 5, 2};
  c.binning.bin_count_pos = {10, 30, 5, 2};
  c.binning.bin_pos_rate = {0.25, 0.75, 0.5, 0.5};
  c.binning.bin_count_woe = {1.0, -1.0, 0.25, 0.0};
  c.binning.bin_weighted_woe = {2.0, -2.0, 0.5, 0.0};
  return c;
}

data::ColumnConfig Categorical() {
  data::ColumnConfig c;
  c.column_num = 1;
  c.column_name = "color & <shade>";
  c.column_type = data::ColumnType::kCategorical;
  c.stats.mean = 0.5;
  c.stats.std_dev = 0.25;
  c.stats.woe = 0.3;
  c.binning.length = 2;
  c.binning.bin_category = {"red \"dark\"", "blue@^green"};
  c.binning.bin_count_neg = {8, 2, 1};
  c.binning.bin_count_pos = {2, 8, 1};
  c.binning.bin_pos_rate = {0.2, 0.8, 0.5};
  c.binning.bin_count_woe = {1.4, -1.4, 0.0};
  c.binning.bin_weighted_woe = {1.4, -1.4, 0.0};
  return c;
}

// A model over the two columns above with `hidden` tanh units (0: LR).
ModelFile Model(const std::string& norm_type, int hidden, int input_count = 2) {
  ModelFile m;
  m.columns = {Numeric(), Categorical()};
  m.norm_type = norm_type;
  m.std_dev_cut_off = 3;
  m.missing_values = {"", " ?", "null", "?"};
  m.spec.input_count = input_count;
  if (hidden > 0) m.spec.layers.push_back({input_count, hidden, Activation::kTanh, 0});
  m.spec.layers.push_back({hidden > 0 ? hidden : input_count, 1, Activation::kSigmoid, 0});
  m.params.resize(m.spec.ParameterCount());
  for (size_t i = 0; i < m.params.size(); ++i) m.params[i] = 0.1f * static_cast<float>(i) - 0.35f;
  return m;
}

PmmlOptions Options() {
  PmmlOptions o;
  o.model_name = "income0";
  o.target_name = "Target";
  o.description = "a test model";
  return o;
}

std::unique_ptr<Element> Export(const ModelFile& m) {
  auto xml = ExportPmml(m, Options());
  EXPECT_TRUE(xml.ok()) << xml.status().message();
  if (!xml.ok()) throw std::runtime_error(xml.status().message());
  return ParseXml(*xml);
}

const Element& Derived(const Element& model, const std::string& name) {
  for (const auto* d : model.One("LocalTransformations").All("DerivedField"))
    if (d->Attr("name") == name) return *d;
  throw std::runtime_error("no DerivedField " + name);
}

TEST(PmmlExportTest, DocumentHasShifusLayout) {
  auto root = Export(Model("ZSCALE", 3));
  EXPECT_EQ(root->tag, "PMML");
  EXPECT_EQ(root->Attr("version"), "4.4");
  EXPECT_EQ(root->Attr("xmlns"), "http://www.dmg.org/PMML-4_4");
  EXPECT_EQ(root->One("Header").One("Application").Attr("name"), "tarn");

  auto fields = root->One("DataDictionary").All("DataField");
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(root->One("DataDictionary").Attr("numberOfFields"), "3");
  EXPECT_EQ(fields[0]->Attr("name"), "age");
  EXPECT_EQ(fields[0]->Attr("optype"), "continuous");
  EXPECT_EQ(fields[0]->Attr("dataType"), "double");
  EXPECT_EQ(fields[1]->Attr("name"), "color & <shade>");  // escaped, and read back
  EXPECT_EQ(fields[1]->Attr("optype"), "categorical");
  EXPECT_EQ(fields[1]->Attr("dataType"), "string");
  EXPECT_EQ(fields[2]->Attr("name"), "Target");
  // The missing values, trimmed and without duplicates.
  std::vector<std::string> missing;
  for (const auto* v : fields[0]->All("Value")) {
    EXPECT_EQ(v->Attr("property"), "missing");
    missing.push_back(v->Attr("value"));
  }
  EXPECT_EQ(missing, (std::vector<std::string>{"", "?", "null"}));

  const Element& nn = root->One("NeuralNetwork");
  EXPECT_EQ(nn.Attr("modelName"), "income0");
  EXPECT_EQ(nn.Attr("functionName"), "regression");
  auto mining = nn.One("MiningSchema").All("MiningField");
  ASSERT_EQ(mining.size(), 3u);
  EXPECT_EQ(mining[0]->Attr("usageType"), "active");
  EXPECT_EQ(mining[0]->Attr("invalidValueTreatment"), "asMissing");
  EXPECT_EQ(mining[2]->Attr("name"), "Target");
  EXPECT_EQ(mining[2]->Attr("usageType"), "target");
  auto outputs = nn.One("Output").All("OutputField");
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0]->Attr("name"), "RawResult");
  EXPECT_EQ(outputs[0]->Attr("feature"), "predictedValue");
  EXPECT_EQ(outputs[1]->Attr("name"), "FinalResult");
  const Element& round = outputs[1]->One("Apply");
  EXPECT_EQ(round.Attr("function"), "round");
  EXPECT_EQ(Number(round.One("Apply").One("Constant").text), 1000);
}

TEST(PmmlExportTest, ZScoreIsNormContinuousClippedAtTheCutoff) {
  auto root = Export(Model("ZSCALE", 3));
  const Element& nn = root->One("NeuralNetwork");
  const Element& age = Derived(nn, "age_zscale").One("NormContinuous");
  EXPECT_EQ(age.Attr("field"), "age");
  EXPECT_EQ(age.Attr("outliers"), "asExtremeValues");
  EXPECT_EQ(Number(age.Attr("mapMissingTo")), 0);
  auto points = age.All("LinearNorm");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(Number(points[0]->Attr("orig")), 40 - 3 * 10);
  EXPECT_EQ(Number(points[0]->Attr("norm")), -3);
  EXPECT_EQ(Number(points[1]->Attr("orig")), 40 + 3 * 10);
  EXPECT_EQ(Number(points[1]->Attr("norm")), 3);

  // Categorical ZSCALE: the z-score of each bin's positive rate.
  const Element& color = Derived(nn, "color & <shade>_zscale").One("MapValues");
  EXPECT_EQ(color.One("FieldColumnPair").Attr("field"), "color & <shade>");
  std::map<std::string, double> rows;
  for (const auto* r : color.One("InlineTable").All("row")) {
    rows[r->One("origin").text] = Number(r->One("out").text);
  }
  EXPECT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows.at("red \"dark\""), (0.2 - 0.5) / 0.25);
  EXPECT_DOUBLE_EQ(rows.at("blue"), (0.8 - 0.5) / 0.25);
  EXPECT_DOUBLE_EQ(rows.at("green"), (0.8 - 0.5) / 0.25);
  EXPECT_DOUBLE_EQ(Number(color.Attr("mapMissingTo")), 0);  // the missing bin's rate, 0.5
  EXPECT_DOUBLE_EQ(Number(color.Attr("defaultValue")), 0);  // unseen: like missing

  // A column without spread normalizes to 0.
  auto flat = Model("ZSCALE", 3);
  flat.columns[0].stats.std_dev = 0;
  auto flat_root = Export(flat);
  EXPECT_EQ(Number(Derived(flat_root->One("NeuralNetwork"), "age_zscale").One("Constant").text), 0);
}

TEST(PmmlExportTest, WoeBinsNumbersByBoundariesAndCategoriesByTable) {
  auto root = Export(Model("WOE", 2));
  const Element& nn = root->One("NeuralNetwork");
  const Element& age = Derived(nn, "age_woe").One("Discretize");
  EXPECT_EQ(Number(age.Attr("mapMissingTo")), 0.0);  // the missing bin's WOE
  auto bins = age.All("DiscretizeBin");
  ASSERT_EQ(bins.size(), 3u);
  EXPECT_EQ(Number(bins[0]->Attr("binValue")), 1.0);
  EXPECT_FALSE(bins[0]->One("Interval").Has("leftMargin"));  // everything below 30
  EXPECT_EQ(Number(bins[0]->One("Interval").Attr("rightMargin")), 30);
  EXPECT_EQ(Number(bins[1]->Attr("binValue")), -1.0);
  EXPECT_EQ(bins[1]->One("Interval").Attr("closure"), "closedOpen");  // [30, 50)
  EXPECT_EQ(Number(bins[1]->One("Interval").Attr("leftMargin")), 30);
  EXPECT_EQ(Number(bins[1]->One("Interval").Attr("rightMargin")), 50);
  EXPECT_EQ(Number(bins[2]->Attr("binValue")), 0.25);
  EXPECT_EQ(Number(bins[2]->One("Interval").Attr("leftMargin")), 50);
  EXPECT_FALSE(bins[2]->One("Interval").Has("rightMargin"));

  const Element& color = Derived(nn, "color & <shade>_woe").One("MapValues");
  EXPECT_EQ(Number(color.Attr("defaultValue")), 0.3);  // an unseen category: the column WOE
  EXPECT_EQ(Number(color.Attr("mapMissingTo")), 0.0);
}

TEST(PmmlExportTest, OneHotHasOneInputPerBinAndAsIsKeepsTheNumber) {
  // ONEHOT: 4 slots for age (3 bins + missing), 3 for color.
  auto root = Export(Model("ONEHOT", 2, 7));
  const Element& nn = root->One("NeuralNetwork");
  auto inputs = nn.One("NeuralInputs").All("NeuralInput");
  ASSERT_EQ(inputs.size(), 7u);
  EXPECT_EQ(inputs[0]->One("DerivedField").One("FieldRef").Attr("field"), "age_onehot_0");
  EXPECT_EQ(inputs[3]->One("DerivedField").One("FieldRef").Attr("field"), "age_onehot_3");
  EXPECT_EQ(inputs[4]->One("DerivedField").One("FieldRef").Attr("field"),
            "color & <shade>_onehot_0");
  const Element& age1 = Derived(nn, "age_onehot_1").One("Discretize");
  std::vector<double> values;
  for (const auto* b : age1.All("DiscretizeBin")) values.push_back(Number(b->Attr("binValue")));
  EXPECT_EQ(values, (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(Number(age1.Attr("mapMissingTo")), 0);
  EXPECT_EQ(Number(Derived(nn, "age_onehot_3").One("Discretize").Attr("mapMissingTo")), 1);
  // An unseen category takes the missing slot.
  EXPECT_EQ(Number(Derived(nn, "color & <shade>_onehot_2").One("MapValues").Attr("defaultValue")),
            1);
  EXPECT_EQ(Number(Derived(nn, "color & <shade>_onehot_0").One("MapValues").Attr("defaultValue")),
            0);

  auto asis = Export(Model("ASIS_WOE", 2));
  const Element& ref = Derived(asis->One("NeuralNetwork"), "age_asis_woe").One("FieldRef");
  EXPECT_EQ(ref.Attr("field"), "age");
  EXPECT_EQ(Number(ref.Attr("mapMissingTo")), 40);
}

TEST(PmmlExportTest, NeuronsCarryTheExactWeights) {
  ModelFile m = Model("ZSCALE", 3);
  m.params[1] = 0.1f;  // not a short decimal as a double
  auto root = Export(m);
  const Element& nn = root->One("NeuralNetwork");
  EXPECT_EQ(nn.One("NeuralInputs").Attr("numberOfInputs"), "2");
  auto layers = nn.All("NeuralLayer");
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0]->Attr("activationFunction"), "tanh");
  EXPECT_EQ(layers[1]->Attr("activationFunction"), "logistic");
  auto neurons = layers[0]->All("Neuron");
  ASSERT_EQ(neurons.size(), 3u);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(neurons[j]->Attr("id"), "1," + std::to_string(j));
    EXPECT_EQ(Number(neurons[j]->Attr("bias")), m.params[m.spec.BiasOffset(0) + j]);
    auto con = neurons[j]->All("Con");
    ASSERT_EQ(con.size(), 2u);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(con[k]->Attr("from"), "0," + std::to_string(k));
      // Read back as a double, the weight is exactly the float.
      EXPECT_EQ(Number(con[k]->Attr("weight")),
                static_cast<double>(m.params[m.spec.WeightOffset(0) + j * 2 + k]));
    }
  }
  EXPECT_EQ(layers[1]->One("Neuron").Attr("id"), "2,0");
  EXPECT_EQ(layers[1]->One("Neuron").All("Con").size(), 3u);
  const Element& out = nn.One("NeuralOutputs").One("NeuralOutput");
  EXPECT_EQ(out.Attr("outputNeuron"), "2,0");
  EXPECT_EQ(out.One("DerivedField").One("FieldRef").Attr("field"), "Target");
}

TEST(PmmlExportTest, NetworkWithoutHiddenLayersIsARegressionModel) {
  ModelFile m = Model("WOE", 0);
  auto root = Export(m);
  EXPECT_TRUE(root->All("NeuralNetwork").empty());
  const Element& lr = root->One("RegressionModel");
  EXPECT_EQ(lr.Attr("normalizationMethod"), "logit");
  const Element& table = lr.One("RegressionTable");
  EXPECT_EQ(Number(table.Attr("intercept")), static_cast<double>(m.params[2]));
  auto predictors = table.All("NumericPredictor");
  ASSERT_EQ(predictors.size(), 2u);
  EXPECT_EQ(predictors[0]->Attr("name"), "age_woe");
  EXPECT_EQ(Number(predictors[1]->Attr("coefficient")), static_cast<double>(m.params[1]));

  m.spec.layers[0].activation = Activation::kLinear;
  EXPECT_EQ(Export(m)->One("RegressionModel").Attr("normalizationMethod"), "none");
  m.spec.layers[0].activation = Activation::kTanh;  // only a network can say tanh
  EXPECT_EQ(Export(m)->One("NeuralNetwork").One("NeuralLayer").Attr("activationFunction"), "tanh");
}

TEST(PmmlExportTest, RefusesWhatPmmlCannotSay) {
  for (Activation a : {Activation::kLeakyRelu, Activation::kSwish}) {
    ModelFile m = Model("ZSCALE", 3);
    m.spec.layers[0].activation = a;
    auto xml = ExportPmml(m, Options());
    ASSERT_FALSE(xml.ok());
    EXPECT_NE(xml.status().message().find(ActivationName(a)), std::string::npos)
        << xml.status().message();
    EXPECT_NE(xml.status().message().find("layer 0"), std::string::npos);
  }
  ModelFile m = Model("ZSCALE", 3);
  m.columns[0].column_name = "bad\x01name";
  auto xml = ExportPmml(m, Options());
  ASSERT_FALSE(xml.ok());
  EXPECT_NE(xml.status().message().find("control character"), std::string::npos);

  m = Model("ZSCALE", 3);
  m.params[4] = NAN;
  xml = ExportPmml(m, Options());
  ASSERT_FALSE(xml.ok());
  EXPECT_NE(xml.status().message().find("not finite"), std::string::npos);

  m = Model("NO_SUCH_NORM", 3);
  xml = ExportPmml(m, Options());
  ASSERT_FALSE(xml.ok());
  EXPECT_NE(xml.status().message().find("NO_SUCH_NORM"), std::string::npos);
}

TEST(PmmlExportTest, TabsAndNewlinesSurviveInAttributes) {
  ModelFile m = Model("ZSCALE", 3);
  m.columns[1].binning.bin_category = {"a\tb", "c\nd"};
  auto root = Export(m);
  std::vector<std::string> origins;
  for (const auto* r : Derived(root->One("NeuralNetwork"), "color & <shade>_zscale")
                           .One("MapValues")
                           .One("InlineTable")
                           .All("row"))
    origins.push_back(r->One("origin").text);
  EXPECT_EQ(origins, (std::vector<std::string>{"a\tb", "c\nd"}));
}

TEST(PmmlExportTest, BaggingAveragesSegmentsOverTheUnionOfColumns) {
  ModelFile a = Model("ZSCALE", 3);
  ModelFile b = Model("ZSCALE", 2, 1);
  b.columns = {Categorical()};
  b.spec.input_count = 1;
  b.spec.layers[0].inputs = 1;
  b.params.assign(b.spec.ParameterCount(), 0.5f);
  PmmlOptions o = Options();
  o.model_name = "income";
  auto xml = ExportBaggingPmml({a, b}, o);
  ASSERT_TRUE(xml.ok()) << xml.status().message();
  auto root = ParseXml(*xml);
  EXPECT_EQ(root->One("DataDictionary").All("DataField").size(), 3u);
  const Element& mining = root->One("MiningModel");
  EXPECT_EQ(mining.One("MiningSchema").All("MiningField").size(), 3u);
  EXPECT_EQ(mining.One("Output").All("OutputField").size(), 2u);
  const Element& seg = mining.One("Segmentation");
  EXPECT_EQ(seg.Attr("multipleModelMethod"), "average");
  auto segments = seg.All("Segment");
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0]->All("True").size(), 1u);
  EXPECT_EQ(segments[0]->One("NeuralNetwork").Attr("modelName"), "income0");
  EXPECT_EQ(segments[1]->One("NeuralNetwork").Attr("modelName"), "income1");
  EXPECT_TRUE(segments[1]->One("NeuralNetwork").All("Output").empty());
  EXPECT_EQ(segments[1]->One("NeuralNetwork").One("MiningSchema").All("MiningField").size(), 2u);

  b.columns[0].column_type = data::ColumnType::kNumeric;  // the same name, another type
  b.columns[0].column_name = "age";
  auto clash = ExportBaggingPmml({a, b}, o);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("'age'"), std::string::npos);
  EXPECT_FALSE(ExportBaggingPmml({}, o).ok());
}

TEST(PmmlExportTest, DerivedNamesNeverCollideWithRawOnes) {
  ModelFile m = Model("ZSCALE", 3);
  m.columns[1].column_name = "age_zscale";  // a raw column named like age's derived field
  auto root = Export(m);
  const Element& nn = root->One("NeuralNetwork");
  std::set<std::string> names;
  for (const auto* f : root->One("DataDictionary").All("DataField")) names.insert(f->Attr("name"));
  for (const auto* d : nn.One("LocalTransformations").All("DerivedField")) {
    EXPECT_TRUE(names.insert(d->Attr("name")).second) << d->Attr("name");
  }
  EXPECT_EQ(Derived(nn, "age_zscale_2").One("NormContinuous").Attr("field"), "age");
}

}  // namespace
}  // namespace tarn::model
