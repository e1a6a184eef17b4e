// tarn norm: applies normType to every candidate column that has stats and
// writes tmp/NormalizedData as binary shards (or Shifu's |-delimited gzip
// text). Output goes to a fresh folder that replaces the old one only when
// every shard is complete, so a failed run leaves the previous output intact.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>

#include "common/files.h"
#include "common/log.h"
#include "data/gzip_writer.h"
#include "data/id_column.h"
#include "data/normalizer.h"
#include "data/shard.h"
#include "model/keras_model.h"
#include "pipeline/row_context.h"
#include "pipeline/short_string_table.h"
#include "pipeline/steps.h"
#include "train/graph_models.h"

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
  // Shard records (ShardWriter::AppendRecords): the floats of a row, then its
  // ids as uint32 bit patterns, only ever copied bytewise.
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
      Recycle(pending_.begin()->second);
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

  // The float buffer of a chunk already written (empty, its memory kept), or a new one.
  // Reusing them spares every chunk the page faults of fresh memory.
  std::vector<float> TakeBuffer() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (spare_.empty()) return {};
    std::vector<float> v = std::move(spare_.back());
    spare_.pop_back();
    return v;
  }

 private:
  static constexpr size_t kMaxSpareBuffers = 4;
  void Recycle(Chunk& chunk) {
    if (chunk.floats.capacity() == 0 || spare_.size() >= kMaxSpareBuffers) return;
    chunk.floats.clear();
    spare_.push_back(std::move(chunk.floats));
  }
  WriteFn write_;
  std::mutex mutex_;
  std::map<uint64_t, Chunk> pending_;
  std::vector<std::vector<float>> spare_;
  uint64_t next_ = 0;
  Status status_;
};

// Shuffles the records of `spill` (fixed-size records, or '\n'-terminated
// lines when record_bytes is 0) with about `budget` bytes of memory: a spill
// that does not fit is first dealt into K random sub-buckets, each of which is
// then shuffled in memory; concatenating them is a uniform random order.
// emit(block, records) receives the shuffled records in order.
Status ShuffleSpill(std::FILE* spill, size_t record_bytes, size_t budget, std::mt19937_64& rng,
                    const std::string& work_dir,
                    const std::function<Status(std::string_view, uint64_t)>& emit) {
  if (std::fflush(spill) != 0 || std::fseek(spill, 0, SEEK_END) != 0) {
    return ErrnoError("cannot read a shuffle bucket in " + work_dir, errno);
  }
  const size_t size = static_cast<size_t>(std::ftell(spill));
  std::rewind(spill);
  auto read_all = [&](std::FILE* f, size_t bytes, std::string* out) -> Status {
    out->resize(bytes);
    if (bytes && std::fread(out->data(), 1, bytes, f) != bytes) {
      return ErrnoError("cannot read a shuffle bucket in " + work_dir, errno);
    }
    return Status::Ok();
  };
  // Shuffles one in-memory block and emits it.
  auto shuffle_block = [&](std::string& buf) -> Status {
    if (record_bytes > 0) {
      const size_t n = buf.size() / record_bytes;
      std::vector<char> tmp(record_bytes);
      for (size_t i = n; i > 1; --i) {  // Fisher-Yates on whole records, in place
        size_t j = std::uniform_int_distribution<size_t>(0, i - 1)(rng);
        if (j == i - 1) continue;
        char* a = buf.data() + (i - 1) * record_bytes;
        char* b = buf.data() + j * record_bytes;
        std::memcpy(tmp.data(), a, record_bytes);
        std::memcpy(a, b, record_bytes);
        std::memcpy(b, tmp.data(), record_bytes);
      }
      return emit(buf, n);
    }
    std::vector<std::string_view> lines;
    for (size_t pos = 0; pos < buf.size();) {
      size_t end = buf.find('\n', pos);
      end = end == std::string::npos ? buf.size() : end + 1;
      lines.emplace_back(buf.data() + pos, end - pos);
      pos = end;
    }
    std::shuffle(lines.begin(), lines.end(), rng);
    std::string out;
    uint64_t count = 0;
    for (auto l : lines) {
      out.append(l);
      ++count;
      if (out.size() >= (1 << 20)) {
        TARN_RETURN_IF_ERROR(emit(out, count));
        out.clear();
        count = 0;
      }
    }
    return out.empty() ? Status::Ok() : emit(out, count);
  };
  const size_t parts = std::max<size_t>(1, (size + budget - 1) / budget);
  if (parts == 1) {
    std::string buf;
    TARN_RETURN_IF_ERROR(read_all(spill, size, &buf));
    return shuffle_block(buf);
  }
  // Deal the records into `parts` sub-buckets (unlinked temporary files).
  std::vector<std::FILE*> subs(parts, nullptr);
  struct Closer {
    std::vector<std::FILE*>& files;
    ~Closer() {
      for (auto* f : files)
        if (f) std::fclose(f);
    }
  } closer{subs};
  for (size_t k = 0; k < parts; ++k) {
    std::string path = JoinPath(work_dir, "sub-" + std::to_string(k));
    subs[k] = std::fopen(path.c_str(), "w+b");
    if (!subs[k]) return ErrnoError("cannot create " + path, errno);
    ::unlink(path.c_str());
  }
  std::uniform_int_distribution<size_t> pick(0, parts - 1);
  std::string block, carry;
  std::vector<char> io(1 << 20);
  size_t got;
  while ((got = std::fread(io.data(), 1, io.size(), spill)) > 0) {
    block.assign(carry);
    block.append(io.data(), got);
    size_t pos = 0;
    while (pos < block.size()) {
      size_t end;
      if (record_bytes > 0) {
        if (block.size() - pos < record_bytes) break;
        end = pos + record_bytes;
      } else {
        size_t nl = block.find('\n', pos);
        if (nl == std::string::npos) break;
        end = nl + 1;
      }
      std::FILE* f = subs[pick(rng)];
      if (std::fwrite(block.data() + pos, 1, end - pos, f) != end - pos) {
        return ErrnoError("cannot write a shuffle sub-bucket in " + work_dir, errno);
      }
      pos = end;
    }
    carry.assign(block, pos, std::string::npos);
  }
  for (auto* f : subs) {
    std::fflush(f);
    size_t bytes = static_cast<size_t>((std::fseek(f, 0, SEEK_END), std::ftell(f)));
    std::rewind(f);
    std::string buf;
    TARN_RETURN_IF_ERROR(read_all(f, bytes, &buf));
    TARN_RETURN_IF_ERROR(shuffle_block(buf));
  }
  return Status::Ok();
}

// Remembers what one column's normalizer wrote for each short raw field (up to 8 bytes: codes,
// small numbers), so that a value seen before costs one probe of a small table instead of a
// parse or a category lookup. ColumnNormalizer::Apply is a pure function of the field (and of
// whether it is missing, itself a function of the field), so the floats are the same. Where
// few probes hit, the gate turns the cache off (CacheGate).
class NormalizedValueCache {
 public:
  static constexpr size_t kMaxValues = 4096;  // per column; later new values are not kept
  explicit NormalizedValueCache(int width) : width_(static_cast<size_t>(width)) {}

  // Writes the normalized floats of `f` to out.
  void Apply(const data::ColumnNormalizer& n, std::string_view f, const data::MissingValues& m,
             float* out) {
    uint64_t bits;
    if (!gate_.on() || !PackShortString(f, &bits)) {
      n.Apply(f, m.IsMissing(f), out);
      return;
    }
    const uint32_t offset = table_.Find(bits, f.size());
    if (offset != 0) {
      const float* v = values_.data() + (offset - 1);
      for (size_t k = 0; k < width_; ++k) out[k] = v[k];
    } else {
      n.Apply(f, m.IsMissing(f), out);
      if (table_.size() < kMaxValues) {
        values_.insert(values_.end(), out, out + width_);
        table_.Insert(bits, f.size(), static_cast<uint32_t>(values_.size() - width_ + 1));
      }
    }
    if (!gate_.Count(offset != 0)) {
      table_.Clear();
      std::vector<float>().swap(values_);
    }
  }

 private:
  size_t width_;
  ShortStringTable<uint32_t> table_;  // 1 + index of the field's first float in values_
  std::vector<float> values_;
  CacheGate gate_;
};

// The columns whose text the Keras graph train#params#ModelGraph hashes with
// a Hashing layer: norm writes Keras' bins as their ids, the only place that
// sees the raw text training needs. A train#params that does not parse is
// left to `tarn train` to report.
Result<std::map<std::string, data::KerasHashing>> KerasHashedColumns(const ModelSet& ms) {
  std::map<std::string, data::KerasHashing> out;
  auto params = model::TrainParams::Parse(ms.config.train.params, ms.config.train.algorithm);
  if (!params.ok() || params->graph.model_graph.empty()) return out;
  auto keras = model::ReadKerasModel(train::ModelGraphPath(params->graph, ms.dir));
  if (!keras.ok()) {
    return keras.status().WithContext(ms.ModelConfigPath() +
                                      ": train.params.ModelGraph (norm reads its Hashing layers)");
  }
  for (auto& [column, hashing] : keras->HashedTextInputs()) out.emplace(column, hashing);
  return out;
}

}  // namespace

Status RunNorm(const ModelSet& ms, const NormOptions& options) {
  const auto& nc = ms.config.normalize;
  TARN_ASSIGN_OR_RETURN(auto norm_type, data::ParseNormType(nc.norm_type));
  TARN_ASSIGN_OR_RETURN(auto columns, ms.LoadColumns());
  TARN_ASSIGN_OR_RETURN(auto setup, SetupRows(ms));
  TARN_RETURN_IF_ERROR(CheckHeaderMatches(setup.reader, columns, ms.ColumnConfigPath()));
  TARN_ASSIGN_OR_RETURN(auto seed, ms.settings.GetInt("tarn.seed"));
  TARN_ASSIGN_OR_RETURN(auto id_hash_seed, ms.settings.GetInt("tarn.norm.id-hash-seed"));
  TARN_ASSIGN_OR_RETURN(const auto keras_hashed, KerasHashedColumns(ms));

  std::vector<data::ColumnNormalizer> normalizers;
  std::vector<int> feature_of_column(columns.size(), -1);
  // Id columns (data/id_column.h) and the normalizer whose raw field each reads.
  std::vector<data::IdEncoder> id_encoders;
  std::vector<size_t> id_normalizer;
  data::ShardSchema schema;
  schema.norm_type = data::NormTypeName(norm_type);
  schema.target_name = ms.config.data_set.target_column_name;
  for (const auto& c : columns) {
    if (!c.IsCandidate() || !c.HasStats()) continue;
    TARN_ASSIGN_OR_RETURN(auto n, data::ColumnNormalizer::Create(c, norm_type, nc.std_dev_cut_off));
    feature_of_column[c.column_num] = static_cast<int>(normalizers.size());
    schema.features.push_back({c.column_name, c.column_num, n.width(), n.index_slots(),
                               n.index_slots().empty() ? 0 : n.index_count()});
    auto hashed = keras_hashed.find(c.column_name);
    if (hashed != keras_hashed.end() && !c.IsCategorical()) {
      return InvalidArgument(ms.ModelConfigPath() + ": train.params.ModelGraph hashes column '" +
                             c.column_name +
                             "', which is not categorical (Hashing reads a category's text)");
    }
    if (auto id =
            data::IdColumnFor(c, !n.index_slots().empty(), static_cast<uint64_t>(id_hash_seed),
                              hashed == keras_hashed.end() ? nullptr : &hashed->second)) {
      TARN_ASSIGN_OR_RETURN(auto encoder, data::IdEncoder::Create(c, *id));
      schema.id_columns.push_back(*id);
      id_encoders.push_back(std::move(encoder));
      id_normalizer.push_back(normalizers.size());
    }
    normalizers.push_back(std::move(n));
  }
  if (normalizers.empty()) {
    return FailedPrecondition("no candidate column has stats; run 'tarn stats' before 'tarn norm'");
  }
  const int floats_per_row = schema.FloatsPerRow();
  const int record_words = floats_per_row + schema.IdsPerRow();  // 32-bit words per record
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
  const std::string partial_prefix = final_dir + ".partial-";
  TARN_ASSIGN_OR_RETURN(auto stale, RemoveStalePidFolders(partial_prefix));
  for (const auto& dir : stale)
    TARN_LOG(kInfo) << "norm: removed " << dir << " (an interrupted run's)";
  const std::string work_dir = partial_prefix + std::to_string(::getpid());
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
    return shard_writers[s]->AppendRecords(chunk.floats.data(), chunk.rows);
  };
  OrderedSink sink(write_chunk);

  RowSampler sampler(nc.sample_rate, nc.sample_neg_only, static_cast<uint64_t>(seed));
  const uint64_t shuffle_seed = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ULL + 1;
  std::vector<RowCounters> counters(threads);
  const auto& missing = setup.reader.missing();
  std::vector<std::vector<NormalizedValueCache>> caches(threads);  // [worker][normalizer]
  for (auto& per_worker : caches)
    for (const auto& n : normalizers) per_worker.emplace_back(n.width());
  TARN_ASSIGN_OR_RETURN(auto read, ms.ReadOptionsFor("norm"));
  read.threads = threads;
  std::vector<std::vector<uint32_t>> row_ids(threads, std::vector<uint32_t>(id_encoders.size()));

  auto summary =
      setup.reader.ForEachBatch(read, [&](int worker, const data::RowBatch& batch) -> Status {
        auto& cnt = counters[worker];
        auto& cache = caches[worker];
        // Shuffled output: one chunk per bucket; otherwise one chunk.
        size_t parts = options.shuffle ? shard_count : 1;
        std::vector<Chunk> out(parts);
        if (!text) {
          for (auto& c : out) {
            c.floats = sink.TakeBuffer();
            c.floats.reserve(batch.size() * record_words / parts + record_words);
          }
        }
        std::vector<float> row(record_words);
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
            c.floats.resize(c.floats.size() + record_words);
            row_out = c.floats.data() + c.floats.size() - record_words;
          }
          float* p = row_out;
          for (size_t k = 0; k < normalizers.size(); ++k) {
            const auto& n = normalizers[k];
            cache[k].Apply(n, fields[n.column_num()], missing, p);
            p += n.width();
          }
          p[0] = static_cast<float>(t);
          p[1] = static_cast<float>(w);
          std::vector<uint32_t>& ids = row_ids[worker];
          for (size_t k = 0; k < id_encoders.size(); ++k) {
            std::string_view f = fields[normalizers[id_normalizer[k]].column_num()];
            ids[k] = id_encoders[k].Id(f, missing.IsMissing(f));
          }
          if (!ids.empty()) std::memcpy(p + 2, ids.data(), ids.size() * sizeof(uint32_t));
          if (!text) continue;
          // Shifu's text layout: every column in ColumnConfig order (target,
          // normalized features, raw meta and weight, empty otherwise), then
          // the weight.
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
            } else if (columns[col].IsMeta() || columns[col].IsWeight()) {
              c.text.append(fields[col]);
            }
          }
          for (uint32_t id : ids) {  // the id columns, as integers, before the weight
            c.text += '|';
            c.text += std::to_string(id);
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
    // Each bucket is shuffled in at most about tarn.norm.shuffle.buffer-mb of
    // memory (split further when it is bigger) and written as one shard.
    TARN_ASSIGN_OR_RETURN(auto buffer_mb, ms.settings.GetInt("tarn.norm.shuffle.buffer-mb"));
    const size_t budget = static_cast<size_t>(std::max<long long>(1, buffer_mb)) << 20;
    const size_t record_bytes = text ? 0 : record_words * sizeof(float);
    for (size_t s = 0; s < shard_count; ++s) {
      std::string path = JoinPath(work_dir, PartName(s, suffix));
      std::mt19937_64 rng(shuffle_seed + s);
      std::optional<data::GzipWriter> gz;
      std::optional<data::ShardWriter> writer;
      if (text) {
        TARN_ASSIGN_OR_RETURN(gz, data::GzipWriter::Create(path));
      } else {
        TARN_ASSIGN_OR_RETURN(writer, data::ShardWriter::Create(path, schema));
      }
      auto emit = [&](std::string_view block, uint64_t records) -> Status {
        if (text) return gz->Write(block);
        return writer->AppendRecords(block.data(), records);
      };
      if (spills[s]) {
        TARN_RETURN_IF_ERROR(ShuffleSpill(spills[s], record_bytes, budget, rng, work_dir, emit));
        std::fclose(spills[s]);
        spills[s] = nullptr;
      }
      TARN_RETURN_IF_ERROR(text ? gz->Finish() : writer->Finish());
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
    for (const auto& id : schema.id_columns) names.push_back(id.name + "#id");
    names.push_back("weight");
    TARN_RETURN_IF_ERROR(
        WriteFileAtomic(JoinPath(work_dir, ".pig_header"), Join(names, "|") + "\n"));
  }
  TARN_RETURN_IF_ERROR(MakeDirs(DirName(final_dir)));
  TARN_RETURN_IF_ERROR(RenamePath(work_dir, final_dir));
  cleanup.keep = true;
  std::string id_note;
  if (!schema.id_columns.empty()) {
    id_note = " + " + std::to_string(schema.id_columns.size()) + " id column" +
              (schema.id_columns.size() == 1 ? "" : "s");
  }
  TARN_LOG(kInfo) << "norm: " << rc.rows << " rows x " << schema.FeatureCount() << " features ("
                  << schema.norm_type << ")" << id_note << " -> " << written
                  << (text ? " gzip text" : " binary") << " shard" << (written == 1 ? "" : "s")
                  << " in " << final_dir << " (" << FormatDuration(summary->seconds) << ")";
  return Status::Ok();
}

}  // namespace tarn::pipeline
