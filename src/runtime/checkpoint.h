// Distributed checkpoints: each parameter server writes its slice (the
// parameters and the optimizer state) atomically, then the coordinator
// writes a manifest naming the slices with their checksums. The manifest is
// the commit point: a run resumes from the newest manifest whose slices all
// verify, so a half-written checkpoint is never read.
//
// Slice file, little-endian: "TARNSLCE", u32 version (1), u32 header bytes,
// header JSON {bag, epoch, begin, end, ps}, u32 + f32[] parameters,
// u32 + f32[] optimizer state, u32 CRC-32C of everything before it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "data/json_fields.h"

namespace tarn::runtime {

// Whole-file access on any file system (a local path or hdfs://): writes are
// atomic (a temporary file renamed into place).
Status WriteWhole(const std::string& path, std::string_view contents);
Result<std::string> ReadWhole(const std::string& path);
Result<std::vector<std::string>> ListNames(const std::string& dir);

struct Slice {
  int bag = 0;
  int epoch = 0;
  int ps = 0;
  size_t begin = 0, end = 0;
  std::vector<float> params;
  std::vector<float> optimizer_state;
};

// Writes atomically; returns the file's CRC-32C (of its whole content).
Result<uint32_t> WriteSlice(const std::string& path, const Slice& slice);
Result<Slice> ReadSlice(const std::string& path);
Result<uint32_t> FileCrc(const std::string& path);

struct Manifest {
  int bag = 0;
  int epoch = 0;  // epochs completed in this bag
  int64_t term = 0;
  std::string fingerprint;  // the network and slicing: resume refuses another
  struct Entry {
    std::string path;
    uint32_t crc = 0;
    size_t begin = 0, end = 0;
  };
  std::vector<Entry> slices;
  data::Json state = data::Json::object();  // best valid error, epochs without improvement
  std::string path;                         // where it was read from
};

std::string ManifestName(int bag, int epoch);
std::string SliceName(int bag, int epoch, int ps);
Status WriteManifest(const std::string& dir, const Manifest& m);
// The newest complete manifest in dir (every slice present with its
// checksum), or NotFound. Broken newer ones are skipped with a warning.
Result<Manifest> NewestManifest(const std::string& dir);
// Deletes manifests and slices older than (bag, epoch) - keep.
void PruneCheckpoints(const std::string& dir, int bag, int epoch, int keep);

}  // namespace tarn::runtime
