#include <chrono>
#include <ctime>

#include "common/files.h"
#include "common/log.h"
#include "pipeline/steps.h"

namespace tarn::pipeline {

Status NewModelSet(const NewOptions& options) {
  if (options.name.empty()) return InvalidArgument("tarn new: a model set NAME is required");
  const std::string& dir = options.name;
  std::string config_path = JoinPath(dir, "ModelConfig.json");
  if (PathExists(config_path)) {
    return InvalidArgument(config_path + " already exists; tarn new does not overwrite it");
  }
  std::time_t now = std::time(nullptr);
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "Created at %Y-%m-%d %H:%M:%S", std::localtime(&now));
  TARN_ASSIGN_OR_RETURN(auto config,
                        data::ModelConfig::CreateNew(BaseName(dir), options.algorithm, stamp));
  TARN_RETURN_IF_ERROR(MakeDirs(JoinPath(dir, "columns")));
  for (const char* f : {"meta.column.names", "categorical.column.names", "forceselect.column.names",
                        "forceremove.column.names", "Eval1.meta.column.names",
                        "Eval1champion.score.column.names"}) {
    std::string path = JoinPath(JoinPath(dir, "columns"), f);
    if (!PathExists(path)) TARN_RETURN_IF_ERROR(WriteFileAtomic(path, ""));
  }
  TARN_RETURN_IF_ERROR(WriteFileAtomic(config_path, config.raw.dump(2) + "\n"));
  TARN_LOG(kInfo) << "created model set " << dir << " (" << config.train.algorithm
                  << "); set dataSet.dataPath, targetColumnName, posTags and negTags in "
                  << config_path << ", then run 'tarn init'";
  return Status::Ok();
}

}  // namespace tarn::pipeline
