// tarn norm: applies normType to every candidate column that has stats and
// writes tmp/NormalizedData as binary shards (or Shifu's |-delimited gzip
// text). Output goes to a fresh folder that replaces the old one only when
// every shard is complete, so a failed run leaves the previous output intact.
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>

#include "common/files.h"
#include "common/log.h"
#include "data/gzip_writer.h"
#include "data/normalizer.h"
#include "data/shard.h"
#include "pipeline/row_context.h"
#include "pipeline/steps.h"

namespace tarn::pipeline {

namespace {

std::string PartName(size_t i, const char* suffix) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "part-%05zu%s", i, suffix);
  return buf;
}

void AppendFloat(std::string* out, float v) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, p);
}

// One normalized chunk: binary rows, or text lines, for one output shard.
struct Chunk {
  size_t shard = 0;
  uint64_t rows = 0;
  std::vector<float> floats;
  std::string text;
};

// Writes chunks in input order whatever order the workers finish them in, so
// the output is the same for any thread count.
class OrderedSink {
 public:
  using WriteFn = std::function<Status(Chunk&)>;
  explicit OrderedSink(WriteFn write) : write_(std::move(write)) {}

  Status Put(uint64_t index, Chunk chunk) {
    std::lock_guard<std::mutex> lock(mutex_);
    TARN_RETURN_IF_ERROR(status_);
    pending_.emplace(index, std::move(chunk));
    while (!pending_.empty() && pending_.begin()->first == next_) {
      status_ = write_(pending_.begin()->second);
      pending_.erase(pending_.begin());
      ++next_;
      TARN_RETURN_IF_ERROR(status_);
    }
    return Status::Ok();
  }

  // Writes what is left (chunks after a gap left by batches without rows).
  Status Drain() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [index, chunk] : pending_) {
      TARN_RETURN_IF_ERROR(status_);
      status_ = write_(chunk);
    }
    pending_.clear();
    return status_;
  }

 private:
  WriteFn write_;
  std::mutex mutex_;
  std::map<uint64_t, Chunk> pending_;
  uint64_t next_ = 0;
  Status status_;
};

}  // namespace

Status RunNorm(const ModelSet& ms, const NormOptions& options) {
  const auto& nc = ms.config.normalize;
  TARN_ASSIGN_OR_RETURN(auto norm_type, data::ParseNormType(nc.norm_type));
  TARN_ASSIGN_OR_RETURN(auto columns, ms.LoadColumns());
  TARN_ASSIGN_OR_RETURN(auto setup, SetupRows(ms));
  TARN_RETURN_IF_ERROR(CheckHeaderMatches(setup.reader, columns, ms.ColumnConfigPath()));
  TARN_ASSIGN_OR_RETURN(auto seed, ms.settings.GetInt("tarn.seed"));

  std::vector<data::ColumnNormalizer> normalizers;
  std::vector<int> feature_of_column(columns.size(), -1);
  data::ShardSchema schema;
  schema.norm_type = data::NormTypeName(norm_type);
  schema.target_name = ms.config.data_set.target_column_name;
  for (const auto& c : columns) {
    if (!c.IsCandidate() || !c.HasStats()) continue;
    TARN_ASSIGN_OR_RETURN(auto n, data::ColumnNormalizer::Create(c, norm_type, nc.std_dev_cut_off));
    feature_of_column[c.column_num] = static_cast<int>(normalizers.size());
    schema.features.push_back({c.column_name, c.column_num, n.width()});
    normalizers.push_back(std::move(n));
  }
  if (normalizers.empty()) {
    return FailedPrecondition("no candidate column has stats; run 'tarn stats' before 'tarn norm'");
  }
  const int floats_per_row = schema.FloatsPerRow();
  const int threads = ms.Threads();

  // Where rows go: one shard per input file, a fixed number of shards, or
  // (shuffle) buckets chosen by a seeded hash that are shuffled afterwards.
  size_t shard_count = setup.reader.files().size();
  TARN_ASSIGN_OR_RETURN(auto fixed_shards, ms.settings.GetInt("tarn.norm.shards"));
  if (options.shuffle) {
    TARN_ASSIGN_OR_RETURN(auto n, ms.settings.GetInt("shifu.norm.shuffle.size"));
    if (n < 0) return InvalidArgument("setting 'shifu.norm.shuffle.size' must be >= 0");
    shard_count = n > 0 ? static_cast<size_t>(n) : static_cast<size_t>(threads);
  } else if (fixed_shards > 0) {
    shard_count = static_cast<size_t>(fixed_shards);
  }

  const std::string final_dir = ms.NormalizedDataDir();
  const std::string work_dir = final_dir + ".partial-" + std::to_string(::getpid());
  TARN_RETURN_IF_ERROR(RemoveAll(work_dir));
  TARN_RETURN_IF_ERROR(MakeDirs(work_dir));
  struct Cleanup {
    std::string dir;
    bool keep = false;
    ~Cleanup() {
      if (!keep) (void)RemoveAll(dir);
    }
  } cleanup{work_dir};

  const bool text = options.text_format;
  const char* suffix = text ? ".gz" : data::kShardSuffix;
  // Shuffled runs spill each bucket to a plain file first.
  std::vector<std::optional<data::ShardWriter>> shard_writers(shard_count);
  std::vector<std::optional<data::GzipWriter>> text_writers(shard_count);
  std::vector<std::FILE*> spills(shard_count, nullptr);
  struct SpillCloser {
    std::vector<std::FILE*>* files;
    ~SpillCloser() {
      for (auto* f : *files)
        if (f) std::fclose(f);
    }
  } spill_closer{&spills};

  auto write_chunk = [&](Chunk& chunk) -> Status {
    size_t s = chunk.shard;
    if (options.shuffle) {
      if (!spills[s]) {
        std::string path = JoinPath(work_dir, "bucket-" + std::to_string(s));
        spills[s] = std::fopen(path.c_str(), "w+b");
        if (!spills[s]) return ErrnoError("cannot create " + path, errno);
      }
      const void* data = text ? static_cast<const void*>(chunk.text.data())
                              : static_cast<const void*>(chunk.floats.data());
      size_t bytes = text ? chunk.text.size() : chunk.floats.size() * sizeof(float);
      if (std::fwrite(data, 1, bytes, spills[s]) != bytes) {
        return ErrnoError("cannot write shuffle bucket in " + work_dir, errno);
      }
      return Status::Ok();
    }
    std::string path = JoinPath(work_dir, PartName(s, suffix));
    if (text) {
      if (!text_writers[s]) {
        TARN_ASSIGN_OR_RETURN(text_writers[s], data::GzipWriter::Create(path));
      }
      return text_writers[s]->Write(chunk.text);
    }
    if (!shard_writers[s]) {
      TARN_ASSIGN_OR_RETURN(shard_writers[s], data::ShardWriter::Create(path, schema));
    }
    return shard_writers[s]->Append(chunk.floats.data(), chunk.rows);
  };
  OrderedSink sink(write_chunk);

  RowSampler sampler(nc.sample_rate, nc.sample_neg_only, static_cast<uint64_t>(seed));
  const uint64_t shuffle_seed = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ULL + 1;
  std::vector<RowCounters> counters(threads);
  const auto& missing = setup.reader.missing();
  TARN_ASSIGN_OR_RETURN(auto read, ms.ReadOptionsFor("norm"));
  read.threads = threads;

  auto summary =
      setup.reader.ForEachBatch(read, [&](int worker, const data::RowBatch& batch) -> Status {
        auto& cnt = counters[worker];
        // Shuffled output: one chunk per bucket; otherwise one chunk.
        size_t parts = options.shuffle ? shard_count : 1;
        std::vector<Chunk> out(parts);
        if (!text) {
          for (auto& c : out)
            c.floats.reserve(batch.size() * floats_per_row / parts + floats_per_row);
        }
        std::vector<float> row(floats_per_row);
        for (size_t r = 0; r < batch.size(); ++r) {
          const auto& fields = batch.fields(r);
          int t = setup.target.Map(fields[setup.target_index]);
          if (t < 0) {
            cnt.AddInvalidTarget(fields[setup.target_index]);
            continue;
          }
          if (!sampler.Keep(batch.file_index, batch.line(r), t)) continue;
          bool bad_weight = false;
          double w =
              setup.weight_index >= 0 ? ParseWeight(fields[setup.weight_index], &bad_weight) : 1.0;
          cnt.invalid_weight += bad_weight;
          ++cnt.rows;
          size_t part = 0;
          if (options.shuffle) {
            part = RowSampler::Bucket(shuffle_seed, batch.file_index, batch.line(r), shard_count);
          }
          Chunk& c = out[part];
          ++c.rows;
          // Binary rows are normalized straight into the chunk's buffer.
          float* row_out = row.data();
          if (!text) {
            c.floats.resize(c.floats.size() + floats_per_row);
            row_out = c.floats.data() + c.floats.size() - floats_per_row;
          }
          float* p = row_out;
          for (const auto& n : normalizers) {
            std::string_view f = fields[n.column_num()];
            n.Apply(f, missing.IsMissing(f), p);
            p += n.width();
          }
          p[0] = static_cast<float>(t);
          p[1] = static_cast<float>(w);
          if (!text) continue;
          // Shifu's text layout: every column in ColumnConfig order (target,
          // normalized features, raw meta, empty otherwise), then the weight.
          for (size_t col = 0; col < columns.size(); ++col) {
            if (col) c.text += '|';
            int fi = feature_of_column[col];
            if (columns[col].IsTarget()) {
              c.text += static_cast<char>('0' + t);
            } else if (fi >= 0) {
              const float* v = row.data();
              for (int k = 0; k < fi; ++k) v += normalizers[k].width();
              for (int k = 0; k < normalizers[fi].width(); ++k) {
                if (k) c.text += ',';
                AppendFloat(&c.text, v[k]);
              }
            } else if (columns[col].IsMeta()) {
              c.text.append(fields[col]);
            }
          }
          c.text += '|';
          AppendFloat(&c.text, static_cast<float>(w));
          c.text += '\n';
        }
        if (options.shuffle) {
          // All buckets of a chunk go through the sink in one ordered unit.
          // Sink index chunk * parts + bucket keeps input order within buckets.
          for (size_t b = 0; b < parts; ++b) out[b].shard = b;
          for (size_t b = 0; b < parts; ++b) {
            TARN_RETURN_IF_ERROR(sink.Put(batch.chunk_index * parts + b, std::move(out[b])));
          }
          return Status::Ok();
        }
        out[0].shard = fixed_shards > 0 ? static_cast<size_t>(batch.chunk_index % shard_count)
                                        : batch.file_index;
        return sink.Put(batch.chunk_index, std::move(out[0]));
      });
  if (!summary.ok()) return summary.status();
  TARN_RETURN_IF_ERROR(sink.Drain());
  for (int w = 1; w < threads; ++w) counters[0].Merge(counters[w]);
  const RowCounters& rc = counters[0];
  if (rc.rows == 0) return NoUsableRows(ms, rc);
  rc.Report(ms, "norm");

  size_t written = 0;
  if (options.shuffle) {
    // Each bucket is shuffled in memory (one bucket at a time) and written.
    for (size_t s = 0; s < shard_count; ++s) {
      std::string path = JoinPath(work_dir, PartName(s, suffix));
      std::mt19937_64 rng(shuffle_seed + s);
      if (text) {
        std::string all;
        if (spills[s]) {
          std::fflush(spills[s]);
          std::rewind(spills[s]);
          char buf[1 << 16];
          size_t got;
          while ((got = std::fread(buf, 1, sizeof(buf), spills[s])) > 0) all.append(buf, got);
        }
        std::vector<std::string_view> lines;
        for (size_t pos = 0; pos < all.size();) {
          size_t end = all.find('\n', pos);
          lines.emplace_back(all.data() + pos, end - pos + 1);
          pos = end + 1;
        }
        std::shuffle(lines.begin(), lines.end(), rng);
        TARN_ASSIGN_OR_RETURN(auto gz, data::GzipWriter::Create(path));
        for (auto l : lines) TARN_RETURN_IF_ERROR(gz.Write(l));
        TARN_RETURN_IF_ERROR(gz.Finish());
      } else {
        std::vector<float> all;
        if (spills[s]) {
          long bytes = (std::fseek(spills[s], 0, SEEK_END), std::ftell(spills[s]));
          std::rewind(spills[s]);
          all.resize(static_cast<size_t>(bytes) / sizeof(float));
          if (std::fread(all.data(), sizeof(float), all.size(), spills[s]) != all.size()) {
            return ErrnoError("cannot read shuffle bucket in " + work_dir, errno);
          }
        }
        uint64_t rows = all.size() / floats_per_row;
        // Fisher-Yates over row indexes, then one gathered write.
        std::vector<uint64_t> order(rows);
        for (uint64_t i = 0; i < rows; ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<float> shuffled(all.size());
        for (uint64_t i = 0; i < rows; ++i) {
          std::copy_n(all.begin() + order[i] * floats_per_row, floats_per_row,
                      shuffled.begin() + i * floats_per_row);
        }
        TARN_ASSIGN_OR_RETURN(auto writer, data::ShardWriter::Create(path, schema));
        TARN_RETURN_IF_ERROR(writer.Append(shuffled.data(), rows));
        TARN_RETURN_IF_ERROR(writer.Finish());
      }
      if (spills[s]) {
        std::fclose(spills[s]);
        spills[s] = nullptr;
      }
      TARN_RETURN_IF_ERROR(RemoveAll(JoinPath(work_dir, "bucket-" + std::to_string(s))));
      ++written;
    }
  } else {
    for (size_t s = 0; s < shard_count; ++s) {
      if (text) {
        if (!text_writers[s]) {
          TARN_ASSIGN_OR_RETURN(text_writers[s],
                                data::GzipWriter::Create(JoinPath(work_dir, PartName(s, suffix))));
        }
        TARN_RETURN_IF_ERROR(text_writers[s]->Finish());
      } else {
        if (!shard_writers[s]) {
          TARN_ASSIGN_OR_RETURN(
              shard_writers[s],
              data::ShardWriter::Create(JoinPath(work_dir, PartName(s, suffix)), schema));
        }
        TARN_RETURN_IF_ERROR(shard_writers[s]->Finish());
      }
      ++written;
    }
  }
  if (text) {
    std::vector<std::string> names;
    for (const auto& c : columns) names.push_back(c.column_name);
    names.push_back("weight");
    TARN_RETURN_IF_ERROR(
        WriteFileAtomic(JoinPath(work_dir, ".pig_header"), Join(names, "|") + "\n"));
  }
  TARN_RETURN_IF_ERROR(MakeDirs(DirName(final_dir)));
  TARN_RETURN_IF_ERROR(RenamePath(work_dir, final_dir));
  cleanup.keep = true;
  TARN_LOG(kInfo) << "norm: " << rc.rows << " rows x " << schema.FeatureCount() << " features ("
                  << schema.norm_type << ") -> " << written << (text ? " gzip text" : " binary")
                  << " shard" << (written == 1 ? "" : "s") << " in " << final_dir << " ("
                  << FormatDuration(summary->seconds) << ")";
  return Status::Ok();
}

}  // namespace tarn::pipeline
