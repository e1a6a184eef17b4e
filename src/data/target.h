// The target of a binary classification: posTags -> 1, negTags -> 0; any other
// value makes the row unusable for stats, norm and training (counted and
// reported, as Shifu skips it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tarn::data {

class TargetMapper {
 public:
  // Both lists must be non-empty (tarn handles binary classification) and
  // must not share a value. Errors name the keys under `data_set_key`
  // ("dataSet", "evals[0].dataSet").
  static Result<TargetMapper> Create(std::vector<std::string> pos_tags,
                                     std::vector<std::string> neg_tags,
                                     std::string_view data_set_key = "dataSet");
  // 1 for a positive, 0 for a negative, -1 for anything else. Values are
  // compared after trimming blanks, as Shifu does.
  int Map(std::string_view value) const;

 private:
  std::vector<std::string> pos_, neg_;
};

}  // namespace tarn::data
