// A model set of the shipped Adult data (examples/income-estimation), made by
// `tarn new` and pointed at DataSet1 with ZSCALE_INDEX, for unit tests that
// run the pipeline on real rows.
#pragma once

#include <string>

#include "common/files.h"
#include "common/status.h"
#include "data/json_fields.h"
#include "pipeline/steps.h"
#include "test_util.h"

namespace tarn::testing {

// Adult's DataSet1 folder; absent in a checkout without examples/.
inline std::string AdultDataDir() {
  return SourceDir() + "/examples/income-estimation/DataStore/DataSet1";
}

// Makes the model set `set` over AdultDataDir().
inline Status MakeAdultModelSet(const std::string& set) {
  const std::string data = AdultDataDir();
  TARN_RETURN_IF_ERROR(pipeline::NewModelSet({set}));
  TARN_ASSIGN_OR_RETURN(auto text, ReadFile(set + "/ModelConfig.json"));
  data::Json mc = data::Json::parse(text);
  mc["dataSet"]["dataPath"] = data;
  mc["dataSet"]["headerPath"] = data + "/.pig_header";
  mc["dataSet"]["targetColumnName"] = "Target";
  mc["dataSet"]["posTags"] = {">50K"};
  mc["dataSet"]["negTags"] = {"<=50K"};
  mc["normalize"]["normType"] = "ZSCALE_INDEX";
  return WriteFileAtomic(set + "/ModelConfig.json", mc.dump(2));
}

}  // namespace tarn::testing
