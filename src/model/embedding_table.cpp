#include "model/embedding_table.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <new>
#include <unordered_set>

#include "common/checksum.h"
#include "model/training_data.h"

namespace tarn::model {

Status TableSpec::Validate() const {
  if (name.empty() || name.size() > 64 || !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
      })) {
    return InvalidArgument("embedding table name \"" + name +
                           "\" must be 1-64 characters of A-Z, a-z, 0-9, '_', '.', '-'");
  }
  if (rows == 0) return InvalidArgument("embedding table " + name + " has no rows");
  if (dim == 0 || dim > 65536) {
    return InvalidArgument("embedding table " + name + " must have a dimension in 1-65536, got " +
                           std::to_string(dim));
  }
  if (!(init_scale >= 0) || !std::isfinite(init_scale)) {
    return InvalidArgument("embedding table " + name + " needs a finite init scale >= 0");
  }
  return optimizer.Validate().WithContext("embedding table " + name);
}

Json TableSpec::ToJson() const {
  return Json{{"name", name},
              {"rows", rows},
              {"dim", dim},
              {"seed", seed},
              {"initScale", init_scale},
              {"optimizer",
               {{"kind", SparseOptimizerName(optimizer.kind)},
                {"learningRate", optimizer.learning_rate},
                {"learningDecay", optimizer.learning_decay},
                {"beta1", optimizer.beta1},
                {"beta2", optimizer.beta2},
                {"epsilon", optimizer.epsilon}}}};
}

Result<TableSpec> TableSpec::FromJson(const Json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("optimizer") || !j["optimizer"].is_object()) {
    return Corrupt(where + ": malformed embedding table spec");
  }
  TableSpec s;
  try {
    s.name = j.at("name").get<std::string>();
    s.rows = j.at("rows").get<uint64_t>();
    s.dim = j.at("dim").get<uint32_t>();
    s.seed = j.at("seed").get<uint64_t>();
    s.init_scale = j.at("initScale").get<float>();
    const Json& o = j["optimizer"];
    TARN_ASSIGN_OR_RETURN(s.optimizer.kind, ParseSparseOptimizer(o.at("kind").get<std::string>()));
    s.optimizer.learning_rate = o.at("learningRate").get<double>();
    s.optimizer.learning_decay = o.at("learningDecay").get<double>();
    s.optimizer.beta1 = o.at("beta1").get<double>();
    s.optimizer.beta2 = o.at("beta2").get<double>();
    s.optimizer.epsilon = o.at("epsilon").get<double>();
  } catch (const std::exception& e) {
    return Corrupt(where + ": malformed embedding table spec: " + e.what());
  }
  TARN_RETURN_IF_ERROR(s.Validate().WithContext(where));
  return s;
}

void InitialRow(const TableSpec& spec, uint64_t row, float* out) {
  const uint64_t table_key =
      MixSeed(spec.seed ^ MixSeed(Crc32c(0, spec.name.data(), spec.name.size())));
  const uint64_t row_key = MixSeed(table_key ^ MixSeed(row));
  for (uint32_t j = 0; j < spec.dim; ++j) {
    const double u = static_cast<double>(MixSeed(row_key + j) >> 11) * 0x1.0p-53;  // [0, 1)
    out[j] = static_cast<float>((2 * u - 1) * spec.init_scale);
  }
}

namespace {

// Zero-filled memory that the system hands out a page at a time as it is
// first written, and takes back whole when unmapped. Throws as new does.
void* MapZeroed(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

size_t PageBytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t WholePages(size_t bytes) { return (bytes + PageBytes() - 1) / PageBytes() * PageBytes(); }

}  // namespace

EmbeddingTable::EmbeddingTable(const TableSpec& spec, int part, int parts)
    : spec_(spec),
      part_(part),
      parts_(parts),
      local_rows_(LocalRows(spec.rows, part, parts)),
      optimizer_(spec.optimizer, spec.dim) {
  while ((size_t{2} << chunk_shift_) * stride() * sizeof(float) <= kChunkBytes) ++chunk_shift_;
}

uint64_t EmbeddingTable::LocalRows(uint64_t rows, int part, int parts) {
  const uint64_t p = static_cast<uint64_t>(parts);
  return rows / p + (rows % p > static_cast<uint64_t>(part) ? 1 : 0);
}

EmbeddingTable::~EmbeddingTable() {
  const size_t chunk_bytes = (size_t{1} << chunk_shift_) * stride() * sizeof(float);
  for (float* chunk : chunks_) munmap(chunk, chunk_bytes);
  if (dense_) munmap(dense_, DenseIndexBytes());
}

Result<std::unique_ptr<EmbeddingTable>> EmbeddingTable::Create(const TableSpec& spec, int part,
                                                               int parts) {
  TARN_RETURN_IF_ERROR(spec.Validate());
  if (parts < 1 || part < 0 || part >= parts) {
    return InvalidArgument("embedding table " + spec.name + ": part " + std::to_string(part) +
                           " of " + std::to_string(parts) + " does not exist");
  }
  return std::unique_ptr<EmbeddingTable>(new EmbeddingTable(spec, part, parts));
}

size_t EmbeddingTable::bytes_held() const {
  const size_t chunk_rows = size_t{1} << chunk_shift_;
  size_t bytes = 0;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const size_t rows = std::min(chunk_rows, held_ - c * chunk_rows);
    bytes += WholePages(rows * stride() * sizeof(float));
  }
  if (dense_) {
    // At most one index page per held row, and never more than the index.
    return bytes + std::min(WholePages(local_rows_ * 4), held_ * PageBytes());
  }
  return bytes + (slots_.capacity() + ids_.capacity()) * sizeof(uint64_t);
}

Status EmbeddingTable::CheckIds(std::span<const uint64_t> ids, bool distinct) const {
  std::unordered_set<uint64_t> seen;
  if (distinct) seen.reserve(ids.size());
  for (uint64_t id : ids) {
    if (id >= spec_.rows) {
      return InvalidArgument("row " + std::to_string(id) + " is outside embedding table " +
                             spec_.name + " of " + std::to_string(spec_.rows) + " rows");
    }
    if (!Owns(id)) {
      return InvalidArgument("row " + std::to_string(id) + " of embedding table " + spec_.name +
                             " belongs to server " + std::to_string(id % uint64_t(parts_)) +
                             ", not " + std::to_string(part_));
    }
    if (distinct && !seen.insert(id).second) {
      return InvalidArgument("row " + std::to_string(id) + " of embedding table " + spec_.name +
                             " appears twice in one push");
    }
  }
  return Status::Ok();
}

uint64_t& EmbeddingTable::SlotOf(uint64_t id) {
  const size_t mask = slots_.size() - 1;
  for (size_t i = static_cast<size_t>(MixSeed(id)) & mask;; i = (i + 1) & mask) {
    uint64_t& slot = slots_[i];
    if (slot == 0 || ids_[slot - 1] == id) return slot;
  }
}

void EmbeddingTable::GrowIndex() {
  const uint64_t grown_bytes = (std::max<size_t>(16, slots_.size() * 2) + ids_.capacity()) * 8;
  if (local_rows_ < UINT32_MAX && grown_bytes >= local_rows_ * 4) {
    // The dense index costs no more: move there, and drop the hashed one.
    dense_ = static_cast<uint32_t*>(MapZeroed(DenseIndexBytes()));
    for (size_t i = 0; i < held_; ++i) {
      dense_[ids_[i] / static_cast<uint64_t>(parts_)] = static_cast<uint32_t>(i + 1);
    }
    std::vector<uint64_t>().swap(slots_);
    std::vector<uint64_t>().swap(ids_);
    return;
  }
  std::vector<uint64_t> old = std::move(slots_);
  slots_.assign(std::max<size_t>(16, old.size() * 2), 0);
  for (uint64_t slot : old) {
    if (slot != 0) SlotOf(ids_[slot - 1]) = slot;
  }
}

float* EmbeddingTable::NewRow(uint64_t id) {
  if ((held_ >> chunk_shift_) == chunks_.size()) {
    chunks_.push_back(
        static_cast<float*>(MapZeroed((size_t{1} << chunk_shift_) * stride() * sizeof(float))));
  }
  float* row = Slot(held_++);
  InitialRow(spec_, id, row);
  std::fill(row + spec_.dim, row + stride(), 0.0f);
  return row;
}

float* EmbeddingTable::Touch(uint64_t id) {
  if (dense_) {
    uint32_t& entry = dense_[id / static_cast<uint64_t>(parts_)];
    if (entry != 0) return Slot(entry - 1);
    float* row = NewRow(id);
    entry = static_cast<uint32_t>(held_);
    return row;
  }
  if ((held_ + 1) * 10 > slots_.size() * 7) {
    GrowIndex();
    if (dense_) return Touch(id);
  }
  uint64_t& slot = SlotOf(id);
  if (slot != 0) return Slot(slot - 1);
  float* row = NewRow(id);
  ids_.push_back(id);
  slot = ids_.size();
  return row;
}

void EmbeddingTable::Gather(std::span<const uint64_t> ids, float* out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    std::memcpy(out + i * spec_.dim, Touch(ids[i]), spec_.dim * sizeof(float));
  }
}

void EmbeddingTable::ApplyGradient(std::span<const uint64_t> ids, const float* grad, int epoch) {
  touched_rows_.resize(ids.size());
  touched_states_.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    touched_rows_[i] = Touch(ids[i]);
    touched_states_[i] = touched_rows_[i] + spec_.dim;
  }
  optimizer_.Step(touched_rows_, touched_states_, grad, epoch);
}

Status EmbeddingTable::Restore(uint64_t id, const float* values_and_state) {
  TARN_RETURN_IF_ERROR(CheckIds(std::span<const uint64_t>(&id, 1), false));
  std::memcpy(Touch(id), values_and_state, stride() * sizeof(float));
  return Status::Ok();
}

}  // namespace tarn::model
