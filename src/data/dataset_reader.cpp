#include "data/dataset_reader.h"

#include <algorithm>  // for std::min, std::max
#include <atomic>
#include <chrono>
#include <cmath>  // for std::isfinite
#include <condition_variable>
#include <cstdio>  // for snprintf
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>

#include "common/progress.h"     // for Progress
#include "common/strings.h"      // for Trim
#include "common/thread_pool.h"  // for DefaultThreadCount, ParallelFor
#include "data/file_system.h"    // for FileSystemFor
#include "data/text_reader.h"    // for ChunkReader

namespace tarn::data {
namespace {

constexpr uint64_t kEarlyAbortBadRows = 1000;

uint64_t Mix64(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t RowHash(uint64_t seed, uint64_t file_index, uint64_t line) {
  return Mix64(seed ^ Mix64(file_index * 0x100000001b3ULL ^ Mix64(line)));
}

Status CheckDelimiter(const std::string& d, const char* setting) {
  if (d.empty()) return InvalidArgument(std::string(setting) + " is empty");
  if (d.find_first_of("\"\r\n") != std::string::npos) {
    return InvalidArgument(std::string(setting) + " \"" + d +
                           "\" may not contain a double quote or a line break");
  }
  return Status::Ok();
}

// The first non-empty record of a file, or "" when it has none.
Result<std::string> ReadFirstRecord(const std::string& path, const std::string& delimiter) {
  ChunkReaderOptions options;
  options.chunk_bytes = 64 << 10;
  options.delimiter = delimiter;
  TARN_ASSIGN_OR_RETURN(auto reader, ChunkReader::Open(path, options));
  RecordParser parser(delimiter);
  TextChunk chunk;
  while (true) {
    TARN_ASSIGN_OR_RETURN(bool more, reader->Next(&chunk));
    if (!more) return std::string();
    std::string_view rest(chunk.text), record;
    uint64_t lines = 0;
    while (parser.NextRecord(&rest, &record, &lines)) {
      if (!record.empty()) return std::string(record);
    }
  }
}

std::vector<std::string> SplitHeader(const std::string& record, const std::string& delimiter) {
  RecordParser parser(delimiter);
  std::vector<std::string_view> fields;
  parser.Split(record, &fields);
  std::vector<std::string> names;
  names.reserve(fields.size());
  for (auto f : fields) {
    f = Trim(f);
    if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = Trim(f.substr(1, f.size() - 2));
    names.emplace_back(f);
  }
  return names;
}

// Skips what precedes the data at the start of a file: blank lines, then the header line (the
// first record of the first file, or a later file's first record when it repeats the header).
// Leaves *pending set while the chunk held nothing but blank lines.
void SkipHeader(const RecordParser& parser, const std::string& header_line, const std::string& text,
                size_t file_index, size_t* skip, uint64_t* first_line, bool* pending) {
  std::string_view rest(text), record;
  uint64_t lines = 0;
  while (parser.NextRecord(&rest, &record, &lines)) {
    if (!record.empty()) {
      *pending = false;
      if (file_index != 0 && record != header_line) return;
    }
    *skip = text.size() - rest.size();
    *first_line += lines;
    if (!record.empty()) return;
  }
}

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g%%", ratio * 100);
  return buf;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Open

Result<DatasetReader> DatasetReader::Open(const DataSource& source) {
  DatasetReader r;
  r.source_ = source;
  TARN_RETURN_IF_ERROR(CheckDelimiter(source.delimiter, "dataSet.dataDelimiter"));
  if (!source.header_path.empty()) {
    TARN_RETURN_IF_ERROR(CheckDelimiter(source.header_delimiter, "dataSet.headerDelimiter"));
  }

  const std::string& path = source.data_path;
  if (path.empty()) return InvalidArgument("dataSet.dataPath is empty");
  // A local path or hdfs:// (file_system.h).
  TARN_ASSIGN_OR_RETURN(auto fs, FileSystemFor(path));
  auto top = fs->Stat(path);
  if (!top.ok()) {
    if (top.status().code() == StatusCode::kNotFound) {
      return NotFound("data path " + path + " does not exist");
    }
    return top.status();
  }
  if (top->is_dir) {
    TARN_ASSIGN_OR_RETURN(auto entries, fs->List(path));
    for (const auto& e : entries) {
      if (e.name.empty() || e.name[0] == '.' || e.name[0] == '_') continue;
      if (e.is_dir) continue;  // not recursive
      r.files_.push_back(e.path);
    }
    if (r.files_.empty()) {
      return InvalidArgument("data folder " + path +
                             " has no data files (names starting with '.' or '_' are skipped)");
    }
  } else {
    r.files_.push_back(path);
  }

  if (!source.header_path.empty()) {
    TARN_ASSIGN_OR_RETURN(auto header_fs, FileSystemFor(source.header_path));
    TARN_ASSIGN_OR_RETURN(bool header_exists, header_fs->Exists(source.header_path));
    if (!header_exists) {
      return NotFound("header file " + source.header_path + " does not exist");
    }
    TARN_ASSIGN_OR_RETURN(std::string record,
                          ReadFirstRecord(source.header_path, source.header_delimiter));
    if (record.empty()) return InvalidArgument("header file " + source.header_path + " is empty");
    r.columns_ = SplitHeader(record, source.header_delimiter);
  } else {
    TARN_ASSIGN_OR_RETURN(std::string record, ReadFirstRecord(r.files_[0], source.delimiter));
    if (record.empty()) {
      return InvalidArgument("no header: the first data file " + r.files_[0] +
                             " is empty and dataSet.headerPath is not set");
    }
    r.columns_ = SplitHeader(record, source.delimiter);
    r.header_line_ = std::move(record);
  }
  r.missing_ = MissingValues(source.missing_values);
  TARN_ASSIGN_OR_RETURN(r.filter_, FilterExpression::Parse(source.filter_expression, r.columns_));
  return r;
}

int DatasetReader::ColumnIndex(std::string_view name) const {
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i] == name) return static_cast<int>(i);
  }
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (ShifuColumnName(columns_[i]) == name) return static_cast<int>(i);
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Reading

struct DatasetReader::ReadState {
  ReadState(const ReadOptions& o, const std::function<Status(int, const RowBatch&)>& f)
      : options(o), fn(f) {}

  void Fail(const Status& s) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (error.ok()) error = s;
    }
    stop.store(true);
    std::lock_guard<std::mutex> lock(queue_mutex);
    slot_free.notify_all();
    slot_ready.notify_all();
  }

  const ReadOptions& options;
  const std::function<Status(int, const RowBatch&)>& fn;
  size_t num_columns = 0;
  bool sampling = false;
  uint64_t sample_threshold = 0;  // keep a row when its hash is below
  std::unique_ptr<Progress> progress;

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> next_chunk{0};
  std::atomic<uint64_t> rows{0}, well_formed{0}, bad{0}, filtered{0}, sampled_out{0};
  std::atomic<uint64_t> bytes{0}, file_bytes{0}, chunks{0};

  mutable std::mutex mutex;  // guards error and reports
  Status error;
  std::vector<BadRowReport> reports;  // the first bad rows in file order

  // Pipelined mode: the reader thread and the workers meet here.
  std::mutex queue_mutex;
  std::condition_variable slot_free, slot_ready;
};

struct DatasetReader::Worker {
  explicit Worker(const std::string& delimiter) : parser(delimiter) {}
  int id = 0;
  RecordParser parser;
  SplitResult split;
  RowBatch batch;
};

struct DatasetReader::ChunkInfo {
  size_t file_index = 0;
  size_t skip = 0;          // leading bytes that are not data (blank lines, the header line)
  uint64_t first_line = 1;  // line of the first byte after them
  uint64_t chunk_in_file = 0;
  uint64_t chunk_index = 0;
  uint64_t file_bytes = 0;
};

Status DatasetReader::ProcessChunk(ReadState& state, Worker& worker, std::string& text,
                                   const ChunkInfo& info) const {
  char* data = text.data();
  size_t size = text.size();
  const uint64_t line = info.first_line;
  const size_t ncols = state.num_columns;

  data += info.skip;
  size -= info.skip;

  SplitResult& split = worker.split;
  split.Clear();
  worker.parser.SplitChunk(data, size, line, ncols, &split);

  if (!split.bad.empty()) {
    const int keep = std::max(0, state.options.bad_rows_reported);
    std::lock_guard<std::mutex> lock(state.mutex);
    for (const auto& b : split.bad) {
      BadRowReport r{info.file_index, b.line, b.num_fields, b.num_lines};
      auto key = [](const BadRowReport& x) { return std::make_tuple(x.file, x.line); };
      auto it = std::upper_bound(state.reports.begin(), state.reports.end(), r,
                                 [&](const auto& a, const auto& c) { return key(a) < key(c); });
      if (static_cast<int>(it - state.reports.begin()) >= keep) break;  // sorted: later are later
      state.reports.insert(it, r);
      if (static_cast<int>(state.reports.size()) > keep) state.reports.pop_back();
    }
  }

  // Sampling and filtering, compacting the kept rows to the front.
  const size_t well_formed = split.lines.size();
  size_t kept = well_formed;
  uint64_t sampled_out = 0, filtered = 0;
  if (state.sampling || !filter_.empty()) {
    std::string_view* f = split.fields.data();
    uint64_t* lines = split.lines.data();
    kept = 0;
    for (size_t r = 0; r < well_formed; ++r) {
      if (state.sampling &&
          RowHash(state.options.seed, info.file_index, lines[r]) >= state.sample_threshold) {
        ++sampled_out;
        continue;
      }
      if (!filter_.empty() &&
          !filter_.Matches(std::span<const std::string_view>(f + r * ncols, ncols), missing_)) {
        ++filtered;
        continue;
      }
      if (kept != r) {
        std::copy(f + r * ncols, f + (r + 1) * ncols, f + kept * ncols);
        lines[kept] = lines[r];
      }
      ++kept;
    }
  }

  RowBatch& batch = worker.batch;
  batch.file_index = info.file_index;
  batch.chunk_index = info.chunk_index;
  batch.chunk_in_file = info.chunk_in_file;
  batch.fields_ = split.fields.data();
  batch.lines_ = split.lines.data();
  batch.size_ = kept;
  batch.num_columns_ = ncols;
  batch.file_ = &files_[info.file_index];

  const uint64_t bad_total = state.bad.fetch_add(split.bad.size()) + split.bad.size();
  const uint64_t good_total = state.well_formed.fetch_add(well_formed) + well_formed;
  state.rows.fetch_add(kept);
  state.sampled_out.fetch_add(sampled_out);
  state.filtered.fetch_add(filtered);
  state.bytes.fetch_add(text.size());
  state.file_bytes.fetch_add(info.file_bytes);
  state.chunks.fetch_add(1);
  if (state.progress) state.progress->Add(well_formed + split.bad.size(), info.file_bytes);

  if (good_total == 0 && bad_total >= kEarlyAbortBadRows) {
    return BadRowsError(state, bad_total, bad_total, true);
  }
  return state.fn(worker.id, batch);
}

std::string DatasetReader::ReportString(const BadRowReport& r) const {
  std::string s = files_[r.file] + ":" + std::to_string(r.line) + ": expected " +
                  std::to_string(columns_.size()) + " fields, found " + std::to_string(r.found);
  if (r.lines > 1) s += " (a record of " + std::to_string(r.lines) + " lines)";
  return s;
}

Status DatasetReader::BadRowsError(const ReadState& state, uint64_t bad, uint64_t total,
                                   bool early) const {
  const double ratio = total ? static_cast<double>(bad) / static_cast<double>(total) : 0.0;
  std::string msg = source_.data_path + ": " + std::to_string(bad) + " of " +
                    std::to_string(total) + " rows (" + Percent(ratio) +
                    ") have the wrong number of fields, more than tarn.data.max-bad-row-ratio = " +
                    Percent(state.options.max_bad_row_ratio) + " allows";
  if (early) msg += " (every row so far, so the read stopped early)";
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    for (const auto& r : state.reports) msg += "\n  " + ReportString(r);
    if (bad > state.reports.size()) {
      msg += "\n  ... and " + std::to_string(bad - state.reports.size()) + " more";
    }
  }
  msg += "\nCheck dataSet.dataDelimiter (\"" + source_.delimiter + "\") and the header (" +
         std::to_string(columns_.size()) + " columns), or raise tarn.data.max-bad-row-ratio.";
  return InvalidArgument(msg);
}

Status DatasetReader::ReadWholeFile(ReadState& state, Worker& worker, size_t file_index,
                                    size_t gzip_limit) const {
  ChunkReaderOptions options;
  options.chunk_bytes = state.options.chunk_bytes;
  options.delimiter = source_.delimiter;
  options.whole_gzip_limit = gzip_limit;
  TARN_ASSIGN_OR_RETURN(auto reader, ChunkReader::Open(files_[file_index], options));
  TextChunk chunk;
  bool header_pending = !header_line_.empty();
  for (uint64_t n = 0; !state.stop.load(std::memory_order_relaxed); ++n) {
    TARN_ASSIGN_OR_RETURN(bool more, reader->Next(&chunk));
    if (!more) break;
    ChunkInfo info;
    info.file_index = file_index;
    info.first_line = chunk.first_line;
    if (header_pending) {
      SkipHeader(worker.parser, header_line_, chunk.text, file_index, &info.skip, &info.first_line,
                 &header_pending);
    }
    info.chunk_in_file = n;
    info.chunk_index = state.next_chunk.fetch_add(1);
    info.file_bytes = chunk.compressed_bytes;
    TARN_RETURN_IF_ERROR(ProcessChunk(state, worker, chunk.text, info));
  }
  return Status::Ok();
}

void DatasetReader::RunPipelined(ReadState& state, std::vector<Worker>& workers) const {
  struct Slot {
    TextChunk chunk;
    ChunkInfo info;
  };
  const size_t threads = workers.size();
  std::vector<Slot> slots(2 * threads);
  std::deque<Slot*> free_slots, ready;
  for (auto& s : slots) free_slots.push_back(&s);
  bool reader_done = false;

  std::thread reader_thread([&] {
    ChunkReaderOptions options;
    options.chunk_bytes = state.options.chunk_bytes;
    options.delimiter = source_.delimiter;
    options.whole_gzip_limit = state.options.gzip_whole_file_bytes;
    RecordParser parser(source_.delimiter);
    for (size_t fi = 0; fi < files_.size() && !state.stop.load(); ++fi) {
      bool header_pending = !header_line_.empty();
      auto reader = ChunkReader::Open(files_[fi], options);
      if (!reader.ok()) {
        state.Fail(reader.status());
        break;
      }
      for (uint64_t n = 0;; ++n) {
        Slot* slot = nullptr;
        {
          std::unique_lock<std::mutex> lock(state.queue_mutex);
          state.slot_free.wait(lock, [&] { return state.stop.load() || !free_slots.empty(); });
          if (state.stop.load()) break;
          slot = free_slots.front();
          free_slots.pop_front();
        }
        auto more = (*reader)->Next(&slot->chunk);
        if (!more.ok() || !*more) {
          {
            std::lock_guard<std::mutex> lock(state.queue_mutex);
            free_slots.push_back(slot);
          }
          if (!more.ok()) state.Fail(more.status());
          break;
        }
        slot->info = ChunkInfo();
        slot->info.file_index = fi;
        slot->info.first_line = slot->chunk.first_line;
        if (header_pending) {
          SkipHeader(parser, header_line_, slot->chunk.text, fi, &slot->info.skip,
                     &slot->info.first_line, &header_pending);
        }
        slot->info.chunk_in_file = n;
        slot->info.chunk_index = state.next_chunk.fetch_add(1);
        slot->info.file_bytes = slot->chunk.compressed_bytes;
        {
          std::lock_guard<std::mutex> lock(state.queue_mutex);
          ready.push_back(slot);
        }
        state.slot_ready.notify_one();
      }
    }
    {
      std::lock_guard<std::mutex> lock(state.queue_mutex);
      reader_done = true;
    }
    state.slot_ready.notify_all();
  });

  auto work = [&](Worker& worker) {
    while (true) {
      Slot* slot = nullptr;
      {
        std::unique_lock<std::mutex> lock(state.queue_mutex);
        state.slot_ready.wait(lock,
                              [&] { return state.stop.load() || !ready.empty() || reader_done; });
        if (state.stop.load() || ready.empty()) return;
        slot = ready.front();
        ready.pop_front();
      }
      Status s = ProcessChunk(state, worker, slot->chunk.text, slot->info);
      {
        std::lock_guard<std::mutex> lock(state.queue_mutex);
        free_slots.push_back(slot);
      }
      state.slot_free.notify_one();
      if (!s.ok()) {
        state.Fail(s);
        return;
      }
    }
  };
  std::vector<std::thread> helpers;
  for (size_t w = 1; w < threads; ++w) helpers.emplace_back(work, std::ref(workers[w]));
  work(workers[0]);
  for (auto& t : helpers) t.join();
  reader_thread.join();
}

Result<ReadSummary> DatasetReader::ForEachBatch(
    const ReadOptions& options,
    const std::function<Status(int worker, const RowBatch& batch)>& fn) const {
  if (!(options.sample_rate >= 0) || !std::isfinite(options.sample_rate)) {
    return InvalidArgument("sample rate must be a number in [0, 1], not " +
                           std::to_string(options.sample_rate));
  }
  if (!(options.max_bad_row_ratio >= 0)) {
    return InvalidArgument("tarn.data.max-bad-row-ratio must be >= 0");
  }
  const auto start = std::chrono::steady_clock::now();
  ReadOptions opts = options;
  opts.chunk_bytes = std::clamp<size_t>(opts.chunk_bytes, 1, size_t{1} << 30);
  const int threads = opts.threads > 0 ? opts.threads : DefaultThreadCount();

  ReadState state(opts, fn);
  state.num_columns = columns_.size();
  if (opts.sample_rate < 1.0) {
    state.sampling = true;
    state.sample_threshold = static_cast<uint64_t>(opts.sample_rate * 18446744073709551616.0);
  }
  if (!opts.progress_label.empty()) {
    uint64_t total = 0;
    for (const auto& f : files_) {
      auto fs = FileSystemFor(f);
      if (!fs.ok()) continue;
      auto st = (*fs)->Stat(f);
      if (st.ok()) total += st->length;
    }
    state.progress = std::make_unique<Progress>(opts.progress_label, total);
  }

  std::vector<Worker> workers;
  workers.reserve(static_cast<size_t>(threads));
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back(source_.delimiter);
    workers.back().id = w;
  }

  if (opts.parallel_files && threads > 1 && files_.size() >= static_cast<size_t>(threads)) {
    const size_t limit = opts.gzip_whole_file_bytes / static_cast<size_t>(threads);
    ParallelFor(threads, files_.size(), [&](int w, size_t fi) {
      if (state.stop.load()) return;
      Status s = ReadWholeFile(state, workers[static_cast<size_t>(w)], fi, limit);
      if (!s.ok()) state.Fail(s);
    });
  } else if (threads == 1) {
    for (size_t fi = 0; fi < files_.size() && !state.stop.load(); ++fi) {
      Status s = ReadWholeFile(state, workers[0], fi, opts.gzip_whole_file_bytes);
      if (!s.ok()) state.Fail(s);
    }
  } else {
    RunPipelined(state, workers);
  }
  if (state.progress) state.progress->Finish();
  if (!state.error.ok()) return state.error;

  ReadSummary summary;
  summary.rows = state.rows.load();
  summary.bad_rows = state.bad.load();
  summary.filtered_rows = state.filtered.load();
  summary.sampled_out_rows = state.sampled_out.load();
  summary.bytes = state.bytes.load();
  summary.file_bytes = state.file_bytes.load();
  summary.chunks = state.chunks.load();
  for (const auto& r : state.reports) summary.bad_row_reports.push_back(ReportString(r));
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const uint64_t total = state.well_formed.load() + summary.bad_rows;
  if (summary.bad_rows > 0 &&
      static_cast<double>(summary.bad_rows) > opts.max_bad_row_ratio * static_cast<double>(total)) {
    return BadRowsError(state, summary.bad_rows, total, false);
  }
  return summary;
}

}  // namespace tarn::data
