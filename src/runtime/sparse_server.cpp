#include "runtime/sparse_server.h"

#include <chrono>
#include <cmath>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "common/log.h"
#include "runtime/checkpoint.h"
#include "runtime/sparse_messages.h"

namespace tarn::runtime {

namespace {

// Row positions (EmbeddingTable::positions) copied per lock hold while a
// checkpoint snapshots a share: pushes and pulls wait at most one range's copy.
constexpr size_t kSnapshotChunkRows = 4096;

Status CheckDone(const net::WireReader& r, const char* what) {
  if (!r.done()) return InvalidArgument(std::string(what) + " message has trailing bytes");
  return Status::Ok();
}

// A message's table count, bounded by the bytes left (each table's entry
// takes at least `min_entry` bytes).
Result<uint32_t> DecodeTableCount(net::WireReader* r, size_t min_entry) {
  uint32_t count = 0;
  TARN_RETURN_IF_ERROR(r->U32(&count));
  if (count > r->left() / min_entry) {
    return InvalidArgument("a message claims " + std::to_string(count) + " tables but holds " +
                           std::to_string(r->left()) + " bytes");
  }
  return count;
}

}  // namespace

void SparseShard::Handle(const net::RpcServer::Request& r,
                         std::shared_ptr<net::RpcServer::Responder> out) {
  Result<std::string> reply = InvalidArgument("unknown message type " + std::to_string(r.type));
  switch (r.type) {
    case kSparseDeclare:
      reply = Declare(r.payload);
      break;
    case kSparsePull:
      reply = Pull(r.payload);
      break;
    case kSparsePush:
      reply = Push(r.payload);
      break;
    case kSparseCheckpoint:
      reply = Checkpoint(r.payload);
      break;
    case kSparseHeld:
      reply = Held(r.payload);
      break;
  }
  if (reply.ok()) {
    out->Reply(std::move(*reply));
  } else {
    out->Fail(reply.status());
  }
}

Result<std::shared_ptr<model::EmbeddingTable>> SparseShard::Find(const std::string& name,
                                                                 int64_t term) {
  if (term != term_) return Unavailable("stale term");
  auto it = tables_.find(name);
  if (it == tables_.end()) {
    return NotFound("parameter server " + std::to_string(ps_) + " has no embedding table " + name);
  }
  return it->second;
}

Result<std::string> SparseShard::Declare(const std::string& payload) {
  net::WireReader r(payload);
  int64_t term = 0;
  model::TableSpec spec;
  uint32_t part = 0, parts = 0;
  std::string load;
  TARN_RETURN_IF_ERROR(r.I64(&term));
  TARN_RETURN_IF_ERROR(DecodeTableSpec(&r, &spec));
  TARN_RETURN_IF_ERROR(r.U32(&part));
  TARN_RETURN_IF_ERROR(r.U32(&parts));
  TARN_RETURN_IF_ERROR(r.Str(&load));
  TARN_RETURN_IF_ERROR(CheckDone(r, "declare"));
  if (static_cast<int>(part) != ps_) {
    return InvalidArgument("parameter server " + std::to_string(ps_) + " was sent part " +
                           std::to_string(part) + " of table " + spec.name);
  }
  TARN_ASSIGN_OR_RETURN(auto created, model::EmbeddingTable::Create(spec, static_cast<int>(part),
                                                                    static_cast<int>(parts)));
  std::shared_ptr<model::EmbeddingTable> table = std::move(created);
  std::unique_ptr<TableShareReader> reader;
  if (!load.empty()) {
    // The header first: a file for another share is refused before any
    // table is dropped.
    TARN_ASSIGN_OR_RETURN(reader, TableShareReader::Open(load));
    const TableShare& share = reader->header();
    if (!(share.spec == spec) || share.part != static_cast<int>(part) ||
        share.parts != static_cast<int>(parts) || share.state_per_row != table->state_per_row()) {
      return FailedPrecondition(load + " holds part " + std::to_string(share.part) + " of " +
                                std::to_string(share.parts) + " of table " + share.spec.name +
                                " (" + share.spec.ToJson().dump() + "), not part " +
                                std::to_string(part) + " of " + std::to_string(parts) + " of " +
                                spec.ToJson().dump());
    }
  }
  {
    // A declare of a newer term (a roll back, a new bag) drops the tables of
    // the older one before it reads its file, so that a share is never held
    // twice; until every table is declared again, pulls and pushes of the
    // new term are refused ("no embedding table"), and the old term's are
    // stale, so no worker gets the old rows.
    std::lock_guard<std::mutex> lock(mu_);
    if (term != term_) tables_.clear();
    tables_.erase(spec.name);
    term_ = term;
  }
#ifdef __GLIBC__
  // The rows' chunks and dense index are unmapped as the tables go; a hashed
  // index's heap pages go back to the system here, before the file is read.
  malloc_trim(0);
#endif
  if (reader) {
    // Streamed outside the lock, a chunk at a time: the others keep training.
    TARN_RETURN_IF_ERROR(reader->ForEachRow(
        [&](uint64_t id, const float* row) { return table->Restore(id, row).WithContext(load); }));
    table->set_steps(reader->header().steps);
    reader.reset();
#ifdef __GLIBC__
    malloc_trim(0);  // the file's read buffers
#endif
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (term != term_) return Unavailable("stale term: a newer declare arrived meanwhile");
  tables_[spec.name] = table;
  TARN_LOG(kInfo) << "ps " << ps_ << ": embedding table " << spec.name << " (" << spec.rows << " x "
                  << spec.dim << "), part " << part << " of " << parts << ", "
                  << (load.empty() ? "fresh"
                                   : std::to_string(table->rows_held()) + " rows from " + load);
  net::WireWriter w;
  w.U64(table->rows_held());
  return w.Take();
}

Result<std::string> SparseShard::Pull(const std::string& payload) {
  net::WireReader r(payload);
  int64_t term = 0;
  TARN_RETURN_IF_ERROR(r.I64(&term));
  TARN_ASSIGN_OR_RETURN(uint32_t count, DecodeTableCount(&r, 8));
  std::vector<std::string> names(count);
  std::vector<std::vector<uint64_t>> ids(count);
  for (uint32_t t = 0; t < count; ++t) {
    TARN_RETURN_IF_ERROR(r.Str(&names[t]));
    TARN_RETURN_IF_ERROR(DecodeIds(&r, &ids[t]));
  }
  TARN_RETURN_IF_ERROR(CheckDone(r, "pull"));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<model::EmbeddingTable>> tables(count);
  for (uint32_t t = 0; t < count; ++t) {
    TARN_ASSIGN_OR_RETURN(tables[t], Find(names[t], term));
    TARN_RETURN_IF_ERROR(tables[t]->CheckIds(ids[t], false));
  }
  net::WireWriter w;
  std::string& out = w.str();
  for (uint32_t t = 0; t < count; ++t) {
    const size_t dim = tables[t]->spec().dim;
    w.U64(tables[t]->steps());
    w.U32(static_cast<uint32_t>(ids[t].size() * dim));
    const size_t at = out.size();
    out.resize(at + ids[t].size() * dim * sizeof(float));
    tables[t]->Gather(ids[t], reinterpret_cast<float*>(out.data() + at));
  }
  return w.Take();
}

Result<std::string> SparseShard::Push(const std::string& payload) {
  net::WireReader r(payload);
  int64_t term = 0;
  uint32_t slot = 0, epoch = 0;
  double weight = 0;
  TARN_RETURN_IF_ERROR(r.I64(&term));
  TARN_RETURN_IF_ERROR(r.U32(&slot));
  TARN_RETURN_IF_ERROR(r.U32(&epoch));
  TARN_RETURN_IF_ERROR(r.F64(&weight));
  TARN_ASSIGN_OR_RETURN(uint32_t count, DecodeTableCount(&r, 12));
  std::vector<std::string> names(count);
  std::vector<std::vector<uint64_t>> ids(count);
  std::vector<std::vector<float>> grads(count);
  for (uint32_t t = 0; t < count; ++t) {
    TARN_RETURN_IF_ERROR(r.Str(&names[t]));
    TARN_RETURN_IF_ERROR(DecodeIds(&r, &ids[t]));
    TARN_RETURN_IF_ERROR(r.Floats(&grads[t]));
  }
  TARN_RETURN_IF_ERROR(CheckDone(r, "push"));
  if (!std::isfinite(weight) || weight <= 0) {
    return InvalidArgument("push with weight " + std::to_string(weight));
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Every table checked before any is stepped: a bad push changes nothing.
  std::vector<std::shared_ptr<model::EmbeddingTable>> tables(count);
  for (uint32_t t = 0; t < count; ++t) {
    TARN_ASSIGN_OR_RETURN(tables[t], Find(names[t], term));
    for (uint32_t u = 0; u < t; ++u) {
      if (names[u] == names[t]) return InvalidArgument("push names table " + names[t] + " twice");
    }
    const size_t dim = tables[t]->spec().dim;
    if (grads[t].size() != ids[t].size() * dim) {
      return InvalidArgument("push of " + std::to_string(grads[t].size()) +
                             " gradient values for " + std::to_string(ids[t].size()) +
                             " rows of table " + names[t] + " (dimension " + std::to_string(dim) +
                             ")");
    }
    TARN_RETURN_IF_ERROR(tables[t]->CheckIds(ids[t], true));
  }
  // The mean gradient, scaled as the dense parameters are.
  const float scale = static_cast<float>(1.0 / weight);
  for (uint32_t t = 0; t < count; ++t) {
    for (float& g : grads[t]) g *= scale;
    tables[t]->ApplyGradient(ids[t], grads[t].data(), static_cast<int>(epoch));
  }
  net::WireWriter w;
  w.U32(count);
  return w.Take();
}

Result<std::string> SparseShard::Checkpoint(const std::string& payload) {
  net::WireReader r(payload);
  int64_t term = 0;
  std::string name, path;
  uint32_t bag = 0, epoch = 0;
  TARN_RETURN_IF_ERROR(r.I64(&term));
  TARN_RETURN_IF_ERROR(r.Str(&name));
  TARN_RETURN_IF_ERROR(r.Str(&path));
  TARN_RETURN_IF_ERROR(r.U32(&bag));
  TARN_RETURN_IF_ERROR(r.U32(&epoch));
  TARN_RETURN_IF_ERROR(CheckDone(r, "checkpoint"));
  std::unique_ptr<TableShareWriter> writer;
  std::shared_ptr<model::EmbeddingTable> table;
  // Rows are copied a chunk per lock hold and written out between holds, so
  // training goes on meanwhile and the file is never built in memory. Rows
  // created during the snapshot are included; a row is never torn, but rows
  // copied in different chunks may be from different steps (the coordinator
  // checkpoints at an epoch's end, when no pushes arrive). Should the share
  // move to its dense index meanwhile (rows created), its rows' order
  // changed, and the file starts again.
  double longest_ms = 0, total_ms = 0;
  int holds = 0;
  for (bool moved = true; moved;) {
    moved = false;
    bool dense = false;
    uint64_t steps = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      TARN_ASSIGN_OR_RETURN(table, Find(name, term));
      steps = table->steps();
      dense = table->indexed_densely();
    }
    TARN_ASSIGN_OR_RETURN(writer, TableShareWriter::Open(path, *table, static_cast<int>(bag),
                                                         static_cast<int>(epoch), steps));
    for (size_t begin = 0;; begin += kSnapshotChunkRows) {
      size_t end = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        const auto t0 = std::chrono::steady_clock::now();  // the hold, which others wait on
        moved = table->indexed_densely() != dense;
        if (moved) break;
        end = std::min(table->positions(), begin + kSnapshotChunkRows);
        table->ForEachHeld(begin, end,
                           [&](uint64_t id, const float* row) { writer->Add(id, row); });
        const double held_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        longest_ms = std::max(longest_ms, held_ms);
        total_ms += held_ms;
        ++holds;
      }
      TARN_RETURN_IF_ERROR(writer->Flush());
      if (end < begin + kSnapshotChunkRows) break;
    }
  }
  uint64_t bytes = 0;
  TARN_ASSIGN_OR_RETURN(uint32_t crc, writer->Finish(&bytes));
  net::WireWriter w;
  w.U32(crc);
  w.U64(writer->rows());
  w.U64(bytes);
  w.F64(longest_ms);
  w.F64(total_ms / holds);
  return w.Take();
}

Result<std::string> SparseShard::Held(const std::string& payload) {
  net::WireReader r(payload);
  std::string name;
  TARN_RETURN_IF_ERROR(r.Str(&name));
  TARN_RETURN_IF_ERROR(CheckDone(r, "held"));
  std::lock_guard<std::mutex> lock(mu_);
  TARN_ASSIGN_OR_RETURN(auto table, Find(name, term_));
  net::WireWriter w;
  w.U64(table->rows_held());
  w.U64(table->bytes_held());
  w.U64(table->steps());
  return w.Take();
}

}  // namespace tarn::runtime
