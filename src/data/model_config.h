// ModelConfig.json: Shifu's model set configuration (SHIFU-COMPAT §2). Field
// defaults are Shifu's Java defaults. The parsed JSON is kept so that keys
// tarn does not use (e.g. varSelect.params) survive a rewrite unchanged.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "data/json_fields.h"

namespace tarn::data {

struct DataSetConfig {
  std::string source = "LOCAL";
  std::string data_path;
  std::string data_delimiter = "|";
  std::string header_path;
  std::string header_delimiter = "|";
  std::string filter_expressions;
  std::string weight_column_name;
  std::string target_column_name;
  std::vector<std::string> pos_tags;
  std::vector<std::string> neg_tags;
  std::string meta_column_name_file;
  std::string categorical_column_name_file;
  std::string hybrid_column_name_file;
  std::string validation_data_path;
  std::string validation_filter_expressions;
  std::vector<std::string> missing_or_invalid_values = {"", "*", "#", "?", "null", "~"};
};

struct StatsConfig {
  int max_num_bin = 10;
  int cate_max_num_bin = 0;
  std::string binning_method = "EqualPositive";
  double sample_rate = 1.0;
  bool sample_neg_only = false;
  std::string binning_algorithm = "SPDTI";
  std::string psi_column_name;
  int cate_min_cnt = 0;
};

struct VarSelectConfig {
  bool force_enable = true;
  std::string candidate_column_name_file;
  std::string force_select_column_name_file;
  std::string force_remove_column_name_file;
  bool filter_enable = true;
  int filter_num = -1;
  std::string filter_by = "KS";
  double filter_out_ratio = 0.05;
  bool auto_filter_enable = true;
  double missing_rate_threshold = 0.98;
  double correlation_threshold = 1.0;
  double min_iv_threshold = 0.0;
  double min_ks_threshold = 0.0;
  std::string post_correlation_metric = "IV";
};

struct NormalizeConfig {
  double std_dev_cut_off = 6.0;
  double sample_rate = 1.0;
  bool sample_neg_only = false;
  std::string norm_type = "ZSCALE";
};

struct TrainConfig {
  int bagging_num = 1;
  bool bagging_with_replacement = false;
  double bagging_sample_rate = 1.0;
  double valid_set_rate = 0.2;
  int num_train_epochs = 100;
  int epochs_per_iteration = 1;
  double convergence_threshold = 0.0;
  bool is_continuous = false;
  int worker_thread_count = 4;
  std::string algorithm = "NN";
  Json params = Json::object();
};

struct EvalConfig {
  std::string name;
  // Where the set is in ModelConfig.json ("evals[0]"), for messages.
  std::string key;
  // The eval set's own format keys, else the training set's. Its own
  // weightColumnName only (none: every row weighs 1, as Shifu); a blank
  // targetColumnName or empty posTags / negTags take the training set's
  // (Shifu's ModelConfig.getTargetColumnName / getPosTags(EvalConfig)).
  DataSetConfig data_set;
  bool inherits_target = false, inherits_pos_tags = false, inherits_neg_tags = false;
  int performance_bucket_num = 10;
  std::string performance_score_selector = "mean";
  std::string score_meta_column_name_file;
  bool norm_all_columns = false;
  double score_scale = 1000;
};

struct ModelConfig {
  std::string name;
  std::string run_mode = "LOCAL";
  DataSetConfig data_set;
  StatsConfig stats;
  VarSelectConfig var_select;
  NormalizeConfig normalize;
  TrainConfig train;
  std::vector<EvalConfig> evals;

  Json raw;                           // the file as read (or as created by New)
  std::vector<std::string> warnings;  // unknown keys and similar

  // Reads and validates `path`; errors name the file, the key and the
  // expected type.
  static Result<ModelConfig> Load(const std::string& path);
  static Result<ModelConfig> Parse(const std::string& text, const std::string& file_name);
  // What `tarn new NAME -t ALG` writes: Shifu's `new` defaults. `algorithm` is
  // NN, LR or TENSORFLOW (case-insensitive).
  static Result<ModelConfig> CreateNew(const std::string& name, const std::string& algorithm,
                                       const std::string& description);

  bool IsBinaryClassification() const {
    return !data_set.pos_tags.empty() && !data_set.neg_tags.empty();
  }
};

// Reads a Shifu column-name file (one name per line; blank lines and lines
// starting with '#' skipped; names trimmed; a line may hold several names
// separated by ',' as Shifu allows). An empty `path` gives an empty list; a
// path that does not exist is an error naming it.
Result<std::vector<std::string>> ReadColumnNameFile(const std::string& path);

}  // namespace tarn::data
