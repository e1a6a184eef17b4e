// A gzip file written atomically (temporary file, rename on Finish).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/files.h"
#include "common/status.h"

namespace tarn::data {

class GzipWriter {
 public:
  static Result<GzipWriter> Create(const std::string& path, int level = 6);
  GzipWriter(GzipWriter&&) noexcept;
  GzipWriter& operator=(GzipWriter&&) noexcept;
  ~GzipWriter();

  Status Write(std::string_view data);
  Status Finish();

 private:
  struct State;
  GzipWriter(AtomicFile file, std::unique_ptr<State> state);
  Status Deflate(int flush);

  AtomicFile file_;
  std::unique_ptr<State> state_;
};

}  // namespace tarn::data
