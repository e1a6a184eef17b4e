#include "data/model_config.h"

#include <cmath>

#include "common/files.h"
#include "common/strings.h"
#include "data/file_system.h"

namespace tarn::data {

namespace {

// Collects the warnings of every JsonFields used while parsing.
struct Parser {
  std::string file;
  std::vector<std::string> warnings;

  void Done(const JsonFields& f) {
    auto w = f.UnknownKeyWarnings();
    warnings.insert(warnings.end(), w.begin(), w.end());
  }

  Status DataSet(const Json* obj, const std::string& path, DataSetConfig* d) {
    JsonFields f(obj, file, path);
    TARN_RETURN_IF_ERROR(f.GetString("source", &d->source));
    TARN_RETURN_IF_ERROR(f.GetString("dataPath", &d->data_path));
    TARN_RETURN_IF_ERROR(f.GetString("dataDelimiter", &d->data_delimiter));
    TARN_RETURN_IF_ERROR(f.GetString("headerPath", &d->header_path));
    TARN_RETURN_IF_ERROR(f.GetString("headerDelimiter", &d->header_delimiter));
    TARN_RETURN_IF_ERROR(f.GetString("filterExpressions", &d->filter_expressions));
    TARN_RETURN_IF_ERROR(f.GetString("weightColumnName", &d->weight_column_name));
    TARN_RETURN_IF_ERROR(f.GetString("targetColumnName", &d->target_column_name));
    TARN_RETURN_IF_ERROR(f.GetStringList("posTags", &d->pos_tags));
    TARN_RETURN_IF_ERROR(f.GetStringList("negTags", &d->neg_tags));
    TARN_RETURN_IF_ERROR(f.GetString("metaColumnNameFile", &d->meta_column_name_file));
    TARN_RETURN_IF_ERROR(
        f.GetString("categoricalColumnNameFile", &d->categorical_column_name_file));
    TARN_RETURN_IF_ERROR(f.GetString("hybridColumnNameFile", &d->hybrid_column_name_file));
    TARN_RETURN_IF_ERROR(f.GetString("validationDataPath", &d->validation_data_path));
    TARN_RETURN_IF_ERROR(
        f.GetString("validationFilterExpressions", &d->validation_filter_expressions));
    TARN_RETURN_IF_ERROR(f.GetStringList("missingOrInvalidValues", &d->missing_or_invalid_values));
    for (const char* k : {"segExpressionFile", "categoricalHashSeedConfFile", "dateColumnName",
                          "autoType", "autoTypeThreshold"})
      f.Accept(k);
    if (d->data_delimiter.empty()) {
      return InvalidArgument(file + ": " + f.Where("dataDelimiter") + " must not be empty");
    }
    if (d->header_delimiter.empty()) d->header_delimiter = d->data_delimiter;
    Done(f);
    return Status::Ok();
  }
};

Status CheckRange(const std::string& file, const char* key, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    return InvalidArgument(file + ": " + key + " must be between " + FormatDouble(lo) + " and " +
                           FormatDouble(hi) + ", got " + FormatDouble(v));
  }
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> ModelConfig::Load(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

Result<ModelConfig> ModelConfig::Parse(const std::string& text, const std::string& file) {
  ModelConfig mc;
  try {
    mc.raw = Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(file + ": not valid JSON: " + e.what());
  }
  if (!mc.raw.is_object()) return InvalidArgument(file + ": the top level must be an object");

  Parser p{file, {}};
  JsonFields top(&mc.raw, file, "");

  TARN_ASSIGN_OR_RETURN(const Json* basic, top.GetObject("basic"));
  {
    JsonFields f(basic, file, "basic");
    TARN_RETURN_IF_ERROR(f.GetString("name", &mc.name));
    TARN_RETURN_IF_ERROR(f.GetString("runMode", &mc.run_mode));
    const std::string mode = ToLower(mc.run_mode);
    if (mode == "local" || mode.empty()) {
      mc.run_mode = "LOCAL";
    } else if (mode == "mapred") {
      // Shifu's Hadoop MapReduce / Pig mode: tarn has no MapReduce; say what runs instead.
      p.warnings.push_back(
          file + ": basic.runMode " + mc.run_mode +
          " is Shifu's MapReduce mode; tarn runs each step in this process instead (streaming, "
          "on every core; hdfs:// data is read over WebHDFS), and trains on this machine. For "
          "distributed training set runMode DIST (docs/DISTRIBUTED.md)");
      mc.run_mode = "LOCAL";
    } else if (mode != "dist") {
      return InvalidArgument(file + ": basic.runMode must be LOCAL, DIST or MAPRED, got '" +
                             mc.run_mode + "'");
    }
    for (const char* k : {"author", "description", "version", "postTrainOn", "customPaths"})
      f.Accept(k);
    p.Done(f);
  }

  TARN_ASSIGN_OR_RETURN(const Json* ds, top.GetObject("dataSet"));
  TARN_RETURN_IF_ERROR(p.DataSet(ds, "dataSet", &mc.data_set));

  TARN_ASSIGN_OR_RETURN(const Json* st, top.GetObject("stats"));
  {
    JsonFields f(st, file, "stats");
    auto& s = mc.stats;
    TARN_RETURN_IF_ERROR(f.GetInt("maxNumBin", &s.max_num_bin));
    TARN_RETURN_IF_ERROR(f.GetInt("cateMaxNumBin", &s.cate_max_num_bin));
    TARN_RETURN_IF_ERROR(f.GetString("binningMethod", &s.binning_method));
    TARN_RETURN_IF_ERROR(f.GetDouble("sampleRate", &s.sample_rate));
    TARN_RETURN_IF_ERROR(f.GetBool("sampleNegOnly", &s.sample_neg_only));
    TARN_RETURN_IF_ERROR(f.GetString("binningAlgorithm", &s.binning_algorithm));
    TARN_RETURN_IF_ERROR(f.GetString("psiColumnName", &s.psi_column_name));
    TARN_RETURN_IF_ERROR(f.GetInt("cateMinCnt", &s.cate_min_cnt));
    p.Done(f);
    if (s.max_num_bin < 1 || s.max_num_bin > 10000) {
      return InvalidArgument(file + ": stats.maxNumBin must be between 1 and 10000, got " +
                             std::to_string(s.max_num_bin));
    }
    TARN_RETURN_IF_ERROR(CheckRange(file, "stats.sampleRate", s.sample_rate, 0, 1));
  }

  TARN_ASSIGN_OR_RETURN(const Json* vs, top.GetObject("varSelect"));
  {
    JsonFields f(vs, file, "varSelect");
    auto& v = mc.var_select;
    TARN_RETURN_IF_ERROR(f.GetBool("forceEnable", &v.force_enable));
    TARN_RETURN_IF_ERROR(f.GetString("candidateColumnNameFile", &v.candidate_column_name_file));
    TARN_RETURN_IF_ERROR(
        f.GetString("forceSelectColumnNameFile", &v.force_select_column_name_file));
    TARN_RETURN_IF_ERROR(
        f.GetString("forceRemoveColumnNameFile", &v.force_remove_column_name_file));
    TARN_RETURN_IF_ERROR(f.GetBool("filterEnable", &v.filter_enable));
    TARN_RETURN_IF_ERROR(f.GetInt("filterNum", &v.filter_num));
    TARN_RETURN_IF_ERROR(f.GetString("filterBy", &v.filter_by));
    TARN_RETURN_IF_ERROR(f.GetDouble("filterOutRatio", &v.filter_out_ratio));
    TARN_RETURN_IF_ERROR(f.GetBool("autoFilterEnable", &v.auto_filter_enable));
    TARN_RETURN_IF_ERROR(f.GetDouble("missingRateThreshold", &v.missing_rate_threshold));
    TARN_RETURN_IF_ERROR(f.GetDouble("correlationThreshold", &v.correlation_threshold));
    TARN_RETURN_IF_ERROR(f.GetDouble("minIvThreshold", &v.min_iv_threshold));
    TARN_RETURN_IF_ERROR(f.GetDouble("minKsThreshold", &v.min_ks_threshold));
    TARN_RETURN_IF_ERROR(f.GetString("postCorrelationMetric", &v.post_correlation_metric));
    for (const char* k : {"params", "epsilons"}) f.Accept(k);
    p.Done(f);
    TARN_RETURN_IF_ERROR(CheckRange(file, "varSelect.filterOutRatio", v.filter_out_ratio, 0, 1));
  }

  TARN_ASSIGN_OR_RETURN(const Json* nm, top.GetObject("normalize"));
  {
    JsonFields f(nm, file, "normalize");
    auto& n = mc.normalize;
    TARN_RETURN_IF_ERROR(f.GetDouble("stdDevCutOff", &n.std_dev_cut_off));
    TARN_RETURN_IF_ERROR(f.GetDouble("sampleRate", &n.sample_rate));
    TARN_RETURN_IF_ERROR(f.GetBool("sampleNegOnly", &n.sample_neg_only));
    TARN_RETURN_IF_ERROR(f.GetString("normType", &n.norm_type));
    f.Accept("isParquet");
    p.Done(f);
    TARN_RETURN_IF_ERROR(CheckRange(file, "normalize.sampleRate", n.sample_rate, 0, 1));
    if (!(n.std_dev_cut_off > 0)) {
      return InvalidArgument(file + ": normalize.stdDevCutOff must be positive, got " +
                             FormatDouble(n.std_dev_cut_off));
    }
  }

  TARN_ASSIGN_OR_RETURN(const Json* tr, top.GetObject("train"));
  {
    JsonFields f(tr, file, "train");
    auto& t = mc.train;
    TARN_RETURN_IF_ERROR(f.GetInt("baggingNum", &t.bagging_num));
    TARN_RETURN_IF_ERROR(f.GetBool("baggingWithReplacement", &t.bagging_with_replacement));
    TARN_RETURN_IF_ERROR(f.GetDouble("baggingSampleRate", &t.bagging_sample_rate));
    TARN_RETURN_IF_ERROR(f.GetDouble("validSetRate", &t.valid_set_rate));
    TARN_RETURN_IF_ERROR(f.GetInt("numTrainEpochs", &t.num_train_epochs));
    TARN_RETURN_IF_ERROR(f.GetInt("epochsPerIteration", &t.epochs_per_iteration));
    TARN_RETURN_IF_ERROR(f.GetDouble("convergenceThreshold", &t.convergence_threshold));
    TARN_RETURN_IF_ERROR(f.GetBool("isContinuous", &t.is_continuous));
    TARN_RETURN_IF_ERROR(f.GetInt("workerThreadCount", &t.worker_thread_count));
    TARN_RETURN_IF_ERROR(f.GetString("algorithm", &t.algorithm));
    TARN_ASSIGN_OR_RETURN(const Json* params, f.GetObject("params"));
    if (params) t.params = *params;
    for (const char* k : {"numKFold", "upSampleWeight", "multiClassifyMethod", "gridConfigFile",
                          "customPaths", "trainOnDisk", "fixInitInput", "stratifiedSample"})
      f.Accept(k);
    p.Done(f);
    TARN_RETURN_IF_ERROR(CheckRange(file, "train.validSetRate", t.valid_set_rate, 0, 1));
  }

  if (mc.raw.contains("evals") && !mc.raw["evals"].is_null()) {
    top.Accept("evals");
    const Json& evals = mc.raw["evals"];
    if (!evals.is_array()) {
      return InvalidArgument(file + ": evals must be a list, got " + JsonTypeName(evals));
    }
    for (size_t i = 0; i < evals.size(); ++i) {
      std::string path = "evals[" + std::to_string(i) + "]";
      JsonFields f(&evals[i], file, path);
      EvalConfig e;
      e.key = path;
      // An eval set inherits the training data set's format unless it says
      // otherwise, but not its rows, filter or weights.
      e.data_set = mc.data_set;
      e.data_set.data_path.clear();
      e.data_set.header_path.clear();
      e.data_set.filter_expressions.clear();
      e.data_set.weight_column_name.clear();
      // Blank or absent: the training set's, below.
      e.data_set.target_column_name.clear();
      e.data_set.pos_tags.clear();
      e.data_set.neg_tags.clear();
      TARN_RETURN_IF_ERROR(f.GetString("name", &e.name));
      TARN_ASSIGN_OR_RETURN(const Json* eds, f.GetObject("dataSet"));
      TARN_RETURN_IF_ERROR(p.DataSet(eds, path + ".dataSet", &e.data_set));
      DataSetConfig& eval_ds = e.data_set;
      if (Trim(eval_ds.weight_column_name).empty()) eval_ds.weight_column_name.clear();
      if (Trim(eval_ds.target_column_name).empty()) {
        eval_ds.target_column_name = mc.data_set.target_column_name;
        e.inherits_target = true;
      }
      if (eval_ds.pos_tags.empty()) {
        eval_ds.pos_tags = mc.data_set.pos_tags;
        e.inherits_pos_tags = true;
      }
      if (eval_ds.neg_tags.empty()) {
        eval_ds.neg_tags = mc.data_set.neg_tags;
        e.inherits_neg_tags = true;
      }
      TARN_RETURN_IF_ERROR(f.GetInt("performanceBucketNum", &e.performance_bucket_num));
      TARN_RETURN_IF_ERROR(f.GetString("performanceScoreSelector", &e.performance_score_selector));
      TARN_RETURN_IF_ERROR(f.GetString("scoreMetaColumnNameFile", &e.score_meta_column_name_file));
      TARN_RETURN_IF_ERROR(f.GetBool("normAllColumns", &e.norm_all_columns));
      TARN_RETURN_IF_ERROR(f.GetDouble("scoreScale", &e.score_scale));
      for (const char* k : {"customPaths", "gbtScoreConvertStrategy", "gbtConvertToProb"})
        f.Accept(k);
      p.Done(f);
      mc.evals.push_back(std::move(e));
    }
  } else {
    top.Accept("evals");
  }
  p.Done(top);
  mc.warnings = std::move(p.warnings);
  return mc;
}

Result<ModelConfig> ModelConfig::CreateNew(const std::string& name, const std::string& algorithm,
                                           const std::string& description) {
  std::string alg = ToLower(algorithm);
  Json params;
  std::string alg_name;
  if (alg == "nn") {
    alg_name = "NN";
    params = {{"Propagation", "R"},     {"LearningRate", 0.1},        {"NumHiddenLayers", 1},
              {"NumHiddenNodes", {50}}, {"ActivationFunc", {"tanh"}}, {"RegularizedConstant", 0.0}};
  } else if (alg == "lr") {
    alg_name = "LR";
    params = {{"Propagation", "R"},
              {"LearningRate", 0.1},
              {"RegularizedConstant", 0.0},
              {"L1orL2", "NONE"}};
  } else if (alg == "tensorflow") {
    alg_name = "TensorFlow";
    params = {{"LearningRate", 0.1},
              {"NumHiddenLayers", 1},
              {"NumHiddenNodes", {50}},
              {"ActivationFunc", {"relu"}},
              {"TF.alg", "DNN"},
              {"CheckpointInterval", 0},
              {"TF.optimizer", "Adam"},
              {"TF.loss", "entropy"},
              {"Propagation", "Adam"},
              {"MiniBatchs", 128},
              {"RegularizedConstant", 0.01}};
  } else {
    return InvalidArgument("tarn new: -t must be NN, LR or TENSORFLOW, got '" + algorithm + "'");
  }
  // The data set keys `shifu new` writes; an eval set has the first ones, with its own meta file.
  Json eval_set = {{"source", "LOCAL"},       {"dataPath", ""},         {"dataDelimiter", "|"},
                   {"headerPath", ""},        {"headerDelimiter", "|"}, {"filterExpressions", ""},
                   {"weightColumnName", ""},  {"targetColumnName", ""}, {"posTags", Json::array()},
                   {"negTags", Json::array()}};
  Json training_set = eval_set;
  eval_set["metaColumnNameFile"] = "columns/Eval1.meta.column.names";
  training_set["metaColumnNameFile"] = "columns/meta.column.names";
  training_set["categoricalColumnNameFile"] = "columns/categorical.column.names";
  training_set["validationDataPath"] = nullptr;
  training_set["validationFilterExpressions"] = "";
  training_set["missingOrInvalidValues"] = {"", "*", "#", "?", "null", "~"};
  Json j = {{"basic",
             {{"name", name},
              {"author", ""},
              {"description", description},
              {"version", "0.13.0"},
              {"runMode", "LOCAL"},
              {"postTrainOn", false},
              {"customPaths", Json::object()}}},
            {"dataSet", training_set},
            {"stats",
             {{"maxNumBin", 10},
              {"cateMaxNumBin", 0},
              {"binningMethod", "EqualPositive"},
              {"sampleRate", 1.0},
              {"sampleNegOnly", false},
              {"binningAlgorithm", "SPDTI"},
              {"psiColumnName", ""}}},
            {"varSelect",
             {{"forceEnable", true},
              {"candidateColumnNameFile", nullptr},
              {"forceSelectColumnNameFile", "columns/forceselect.column.names"},
              {"forceRemoveColumnNameFile", "columns/forceremove.column.names"},
              {"filterEnable", true},
              {"filterNum", 200},
              {"filterBy", "KS"},
              {"filterOutRatio", 0.05},
              {"autoFilterEnable", true},
              {"missingRateThreshold", 0.98},
              {"correlationThreshold", 1.0},
              {"minIvThreshold", 0.0},
              {"minKsThreshold", 0.0},
              {"postCorrelationMetric", "IV"},
              {"params", nullptr}}},
            {"normalize",
             {{"stdDevCutOff", 6.0},
              {"sampleRate", 1.0},
              {"sampleNegOnly", false},
              {"normType", "ZSCALE"}}},
            {"train",
             {{"baggingNum", 1},
              {"baggingWithReplacement", false},
              {"baggingSampleRate", 1.0},
              {"validSetRate", 0.2},
              {"numTrainEpochs", 200},
              {"isContinuous", false},
              {"workerThreadCount", 4},
              {"algorithm", alg_name},
              {"params", params},
              {"customPaths", Json::object()}}},
            {"evals",
             {{{"name", "Eval1"},
               {"dataSet", eval_set},
               {"performanceBucketNum", 10},
               {"performanceScoreSelector", "mean"},
               {"scoreMetaColumnNameFile", "columns/Eval1champion.score.column.names"},
               {"customPaths", Json::object()},
               {"normAllColumns", false}}}}};
  auto parsed = Parse(j.dump(), "ModelConfig.json");
  if (!parsed.ok()) return parsed.status();
  return parsed;
}

Result<std::vector<std::string>> ReadColumnNameFile(const std::string& path) {
  std::vector<std::string> names;
  if (path.empty()) return names;
  auto read = [&]() -> Result<std::string> {
    if (!IsHdfsPath(path)) return ReadFile(path);
    TARN_ASSIGN_OR_RETURN(auto fs, FileSystemFor(path));
    return fs->ReadAll(path);
  };
  auto text = read();
  if (!text.ok()) return text.status().WithContext("column name file");
  for (const auto& line : Split(*text, "\n")) {
    auto t = Trim(line);
    if (t.empty() || t.front() == '#') continue;
    for (const auto& part : Split(t, ",")) {
      auto name = Trim(part);
      if (!name.empty()) names.emplace_back(name);
    }
  }
  return names;
}

}  // namespace tarn::data
