// One loaded serving version: the models (bags) of a version folder, the
// normalization each one embeds, and the batcher that scores their rows.
//
// A request's rows are first normalized by the request thread into "row
// vectors": the concatenation of one normalized input per normalization
// group (bags trained on the same columns with the same normalization share a
// group, so usually there is exactly one), each followed by the group's
// integer ids when its models read id columns (graph models). An id travels
// in a float slot bit for bit (memcpy, never converted), so none is rounded. Score() then runs the
// networks on those rows, batching concurrent small requests, and answers the mean of the bags'
// scores for each row: what `tarn eval` reports as "mean".
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "data/id_column.h"
#include "data/normalizer.h"
#include "data/record_parser.h"
#include "model/scorer.h"
#include "serving/metrics.h"

namespace tarn::serving {

struct BatchOptions {
  int max_batch_rows = 64;  // rows per network call; larger requests run alone
  int max_wait_us = 0;      // how long a batch may wait to fill (0: never waits)
  int max_concurrent = 2;   // batches running at once (a leader thread each)
};

// The value of one raw column in one record.
struct RawValue {
  std::string_view text;  // the raw text (a JSON number's literal, a string's value)
  bool present = false;   // false: the column is absent or null (a missing value)
};

class Servable {
 public:
  struct Column {
    std::string name;
    bool numeric = false;  // strictly numeric: strings must parse as numbers
    std::string type;      // "N", "C", "H" or ""
  };

  // Loads the model files of one version. Every file must load and describe
  // a valid network.
  static Result<std::shared_ptr<Servable>> Load(int64_t version,
                                                const std::vector<std::string>& model_paths,
                                                const BatchOptions& batch);

  Servable(const Servable&) = delete;
  Servable& operator=(const Servable&) = delete;
  ~Servable();

  int64_t version() const { return version_; }
  const std::vector<std::string>& model_paths() const { return paths_; }
  int bags() const { return static_cast<int>(bags_.size()); }
  // The raw columns any bag reads, in first-seen order.
  const std::vector<Column>& columns() const { return columns_; }
  // The other columns of the model set (target, weight, meta, unselected):
  // a raw record may carry them; their values are ignored.
  const std::vector<std::string>& ignored_columns() const { return ignored_columns_; }
  // Whether the model files list every column of their model set (files
  // written before tarn recorded them do not; then only columns() are known).
  bool knows_model_set() const { return knows_model_set_; }
  static constexpr int kUnknownColumn = -1;
  static constexpr int kIgnoredColumn = -2;
  // Index into columns(), kIgnoredColumn for one of ignored_columns(), or
  // kUnknownColumn.
  int FindColumn(std::string_view name) const;
  // The same, trying columns()[hint] first: clients mostly send the columns
  // in the model's order, and then the hash look-up is skipped.
  int FindColumn(std::string_view name, int hint) const {
    if (hint >= 0 && static_cast<size_t>(hint) < columns_.size() && columns_[hint].name == name) {
      return hint;
    }
    return FindColumn(name);
  }
  // Floats per row vector (see above).
  int row_width() const { return row_width_; }
  // The width of an already-normalized input vector, or -1 when the bags
  // normalize differently or read ids, which a normalized vector lacks (then
  // only raw records are accepted).
  int vector_width() const {
    return groups_.size() == 1 && groups_[0].id_encoders.empty() ? row_width_ : -1;
  }
  // The names of the vector's elements (a one-hot column repeats its name).
  const std::vector<std::string>& vector_names() const { return vector_names_; }
  const model::ModelFile& first_model() const { return bags_[0].scorer->file(); }
  // Whether a present raw text is one of the (first) model's missing values.
  bool IsMissing(std::string_view text) const { return groups_[0].missing->IsMissing(text); }
  // values[k]: the value of columns()[k]. Writes row_width() floats.
  void NormalizeRecord(const RawValue* values, float* out) const;
  // vec: vector_width() floats (requires vector_width() > 0).
  void FromVector(const float* vec, float* out) const;

  // Scores n row vectors (n x row_width() floats) into out[n] (the mean over
  // the bags). Thread-safe; batches with concurrent callers.
  void Score(const float* rows, int n, double* out) const;

  // Every batch that runs adds its row count here (for /metrics); may be null.
  void set_batch_histogram(Histogram* h) { batch_sizes_ = h; }

 private:
  Servable() = default;

  struct Group {                    // one normalization shared by some bags
    std::vector<int> column_index;  // into columns_, per input column
    std::vector<data::ColumnNormalizer> normalizers;
    std::unique_ptr<data::MissingValues> missing;
    // The ids its models read (model::Scorer::Ids) and the column (into
    // columns_) each reads; they follow the normalized values in the row.
    std::vector<data::IdEncoder> id_encoders;
    std::vector<int> id_column_index;
    int offset = 0;  // in the row vector
    int width = 0;   // normalized values
    int stride() const { return width + static_cast<int>(id_encoders.size()); }
  };
  struct Bag {
    std::unique_ptr<model::Scorer> scorer;
    int group = 0;
  };
  struct Task {
    const float* rows;
    int n;
    double* out;
    bool done = false;
  };
  struct Scratch;

  // Runs the networks on rows [0, n) (n <= max_batch_rows).
  void RunBatch(const float* rows, int n, double* out, Scratch* s) const;
  Scratch* AcquireScratch() const;
  void ReleaseScratch(Scratch* s) const;

  int64_t version_ = 0;
  std::vector<std::string> paths_;
  std::vector<Bag> bags_;
  std::vector<Group> groups_;
  std::vector<Column> columns_;
  std::vector<std::string> ignored_columns_;
  bool knows_model_set_ = false;
  std::unordered_map<std::string_view, int> column_index_;  // views into the two above
  std::vector<std::string> vector_names_;
  int row_width_ = 0;
  BatchOptions batch_;
  Histogram* batch_sizes_ = nullptr;

  // Batching state.
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::vector<Task*> queue_;  // FIFO: taken from queue_head_
  mutable size_t queue_head_ = 0;
  mutable int queued_rows_ = 0;
  mutable int running_ = 0;
  mutable bool collecting_ = false;  // a leader is waiting for its batch to fill
  mutable std::vector<std::unique_ptr<Scratch>> free_scratch_;
};

}  // namespace tarn::serving
