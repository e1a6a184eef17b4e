// What every data step does with a row before its own work: map the target,
// read the weight, and apply the step's deterministic sampling.
#pragma once

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/strings.h"
#include "data/column_config.h"
#include "data/dataset_reader.h"
#include "data/target.h"
#include "pipeline/model_set.h"

namespace tarn::pipeline {

// Deterministic keep/drop for sampleRate / sampleNegOnly: depends only on the
// seed, the file and the line, so passes and thread counts agree.
class RowSampler {
 public:
  RowSampler(double rate, bool neg_only, uint64_t seed)
      : rate_(rate), neg_only_(neg_only), seed_(seed) {}
  bool Keep(size_t file_index, uint64_t line, int target) const {
    if (rate_ >= 1.0) return true;
    if (neg_only_ && target == 1) return true;
    uint64_t h = Mix(seed_ ^ Mix((static_cast<uint64_t>(file_index) << 40) ^ line));
    return static_cast<double>(h >> 11) * 0x1.0p-53 < rate_;
  }
  // A bucket in [0, n) for a row, for shuffling rows across shards.
  static size_t Bucket(uint64_t seed, size_t file_index, uint64_t line, size_t n) {
    uint64_t h = Mix(seed ^ Mix((static_cast<uint64_t>(file_index) << 40) ^ line));
    return static_cast<size_t>(h % n);
  }

 private:
  static uint64_t Mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  double rate_;
  bool neg_only_;
  uint64_t seed_;
};

// Shifu's weight handling: a missing, unparsable, negative or non-finite
// weight counts as 1 (and is counted so the user hears about it).
inline double ParseWeight(std::string_view field, bool* invalid) {
  auto v = ParseDouble(field);
  if (!v || !std::isfinite(*v) || *v < 0) {
    *invalid = true;
    return 1.0;
  }
  return *v;
}

// A deterministic parallel reduction. Chunk i of a read is folded into lane
// i % lanes, and each lane takes its chunks in increasing order, so merging the
// lanes in order gives the same bits whatever the thread count or timing.
// Workers block only when two chunks of one lane are in flight at once.
class OrderedLanes {
 public:
  static constexpr int kDefaultLanes = 4;
  explicit OrderedLanes(int lanes = kDefaultLanes) : next_(lanes) {
    for (int i = 0; i < lanes; ++i) next_[i] = static_cast<uint64_t>(i);
  }
  int lanes() const { return static_cast<int>(next_.size()); }

  // Holds chunk `index`'s lane for the guard's lifetime.
  class Guard {
   public:
    Guard(OrderedLanes& lanes, uint64_t index) : lanes_(lanes), index_(index) {
      lane_ = static_cast<int>(index % lanes.next_.size());
      std::unique_lock<std::mutex> lock(lanes_.mutex_);
      lanes_.cv_.wait(lock, [&] { return lanes_.next_[lane_] == index_; });
    }
    ~Guard() {
      {
        std::lock_guard<std::mutex> lock(lanes_.mutex_);
        lanes_.next_[lane_] = index_ + lanes_.next_.size();
      }
      lanes_.cv_.notify_all();
    }
    int lane() const { return lane_; }

   private:
    OrderedLanes& lanes_;
    uint64_t index_;
    int lane_;
  };

 private:
  std::vector<uint64_t> next_;  // the next chunk index each lane accepts
  std::mutex mutex_;
  std::condition_variable cv_;
};

// Rows skipped or adjusted, merged over workers.
struct RowCounters {
  uint64_t rows = 0, invalid_target = 0, invalid_weight = 0;
  std::set<std::string> invalid_target_samples;
  void Merge(const RowCounters& o);
  // Counts a row whose target is neither a positive nor a negative tag.
  void AddInvalidTarget(std::string_view value);
  // Warns about skipped rows and invalid weights.
  void Report(const ModelSet& ms, const char* step) const;
  // The same for another data set (an eval set), its keys named from `key`
  // ("evals[0].dataSet").
  void Report(const data::DataSetConfig& ds, const std::string& key, const char* step) const;
};

// The setup shared by the passes of stats, norm and correlation.
struct RowSetup {
  data::DatasetReader reader;
  data::TargetMapper target;
  int target_index = -1;
  int weight_index = -1;
};

Result<RowSetup> SetupRows(const ModelSet& ms);
// ColumnConfig.json must describe the same columns as the data header.
Status CheckHeaderMatches(const data::DatasetReader& reader,
                          const std::vector<data::ColumnConfig>& columns,
                          const std::string& column_config_path);
// The error when no row has a usable target.
Status NoUsableRows(const ModelSet& ms, const RowCounters& c);
Status NoUsableRows(const data::DataSetConfig& ds, const std::string& key, const RowCounters& c);

}  // namespace tarn::pipeline
