// Numbered serving versions: the folder layout that `tarn export -t serving`
// and training (-Dtarn.serving.exportDir) write and `tarn serve` polls.
//
//   BASE/
//     1/
//       model0.tarn          one file per bag, ModelFile format
//       model1.tarn
//       READY                completion marker, written last and atomically
//     2/ ...
//
// A version folder is complete only when its marker file `READY`
// (kServingReadyMarker) exists. The marker is a small JSON object:
//   {"format": 1, "version": N, "models": ["model0.tarn", ...],
//    "bytes": [size0, ...], "created": "2024-...Z"}
// Readers load exactly the files it names and check their sizes, so a
// folder being written (no marker yet) or one whose files were changed
// afterwards is never served. Folder names that are not positive decimal
// integers are ignored.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/model_file.h"

namespace tarn::model {

inline constexpr const char* kServingReadyMarker = "READY";
inline constexpr int kServingVersionFormat = 1;

// Writes BASE/N/ with the model file(s) and, last, the atomic completion
// marker. N = newest existing version + 1 when version <= 0 (a concurrent
// writer that takes the same number makes this one move on to the next).
// An explicit version that already exists is refused. Creates BASE when
// missing. Returns the version written. Multiple models are the bags of one
// model set; a server answers with their mean, like `tarn eval`.
Result<int64_t> WriteServingVersion(const ModelFile& model, const std::string& base_dir,
                                    int64_t version = 0);
Result<int64_t> WriteServingVersion(const std::vector<const ModelFile*>& models,
                                    const std::string& base_dir, int64_t version = 0);
// Copies existing model files (e.g. a model set's models/model*.tarn) into a
// new version, byte for byte, after checking that each one loads.
Result<int64_t> WriteServingVersionFromFiles(const std::vector<std::string>& model_paths,
                                             const std::string& base_dir, int64_t version = 0);

// WriteServingVersion for any file system: a local base is written in place; a remote one
// (hdfs://, webhdfs://) gets the version written in a local staging folder first and copied
// into BASE/N with the marker last, N one more than the newest numbered folder there. One
// writer per remote base is assumed (two could take the same number).
Result<int64_t> PublishServingVersion(const std::vector<const ModelFile*>& models,
                                      const std::string& base);
// WriteServingVersionFromFiles for any file system, in the same way (an explicit version
// that exists remotely is refused).
Result<int64_t> PublishServingVersionFromFiles(const std::vector<std::string>& model_paths,
                                               const std::string& base, int64_t version = 0);

struct ServingVersionEntry {
  int64_t version = 0;
  std::string dir;        // BASE/N
  bool complete = false;  // the marker exists
};

// The numbered folders under base_dir, ascending by version. A missing base
// folder is an empty list, not an error.
Result<std::vector<ServingVersionEntry>> ListServingVersions(const std::string& base_dir);

// Copies a version folder between file systems (local, HDFS), its READY marker last: a reader
// that sees the marker sees every file it describes.
Status CopyServingVersion(const std::string& from, const std::string& to);

// The version a folder name stands for ("12" -> 12); 0 for any other name.
int64_t ServingVersionOfName(const std::string& name);

struct ServingVersionManifest {
  int64_t version = 0;
  std::vector<std::string> model_paths;  // absolute or base-relative paths of the model files
};

// Reads and checks the marker of the version folder `dir`: every model file
// it names exists, has the recorded size and lies inside `dir`. Errors name
// the folder and the file.
Result<ServingVersionManifest> ReadServingVersion(const std::string& dir);

// What training exports for serving (tarn.serving.exportDir and
// tarn.serving.exportEveryEpochs). Bags train one after another; a version
// written during training holds the finished bags' final models plus the
// current state of the bag in training, and the version written at the end
// holds every bag's final model (the same files as models/).
class ServingExportHook {
 public:
  // An empty `dir` disables every export. every_epochs <= 0: only the final.
  ServingExportHook(std::string dir, int every_epochs)
      : dir_(std::move(dir)), every_epochs_(every_epochs) {}

  bool enabled() const { return !dir_.empty(); }
  // Whether to export after `epochs_done` epochs of a bag.
  bool DueAfterEpoch(int epochs_done) const {
    return enabled() && every_epochs_ > 0 && epochs_done % every_epochs_ == 0;
  }
  // Writes a version: the finished bags, `current` for bag `bag` (in training) and the
  // latest snapshot of every other bag in training, in bag order. Bags training in parallel
  // may call it and BagDone at once.
  Status ExportDuringTraining(int bag, ModelFile current);
  // Records bag `bag`'s final model (the versions list the bags in bag order).
  void BagDone(int bag, ModelFile final_model);
  // Writes the version of every finished bag (no-op when disabled).
  Status ExportFinal();
  int64_t last_version() const { return last_version_; }

 private:
  Status Write(const std::vector<const ModelFile*>& models, const char* what);

  std::string dir_;
  int every_epochs_ = 0;
  std::mutex mutex_;
  std::vector<std::pair<int, ModelFile>> finished_;  // by bag
  std::map<int, ModelFile> training_;                // bag -> its latest exported snapshot
  int64_t last_version_ = 0;
};

// The model files of a model set's models/ folder (models/model{i}.tarn, in
// bag order). Error when there are none.
Result<std::vector<std::string>> ListModelFiles(const std::string& models_dir);

}  // namespace tarn::model
