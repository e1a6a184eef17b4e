#include "runtime/sparse_server.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "common/log.h"
#include "runtime/checkpoint.h"
#include "runtime/sparse_client.h"
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
      Push(r.payload, std::move(out));  // answered now, or when its step closes
      return;
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
    if (term != term_) {
      FailWaitingLocked("the embedding tables were declared again (a roll back or a new bag)");
      tables_.clear();
    }
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

Result<SparseShard::PendingPush> SparseShard::DecodePush(const std::string& payload, int* slot,
                                                         bool* last, int64_t* term,
                                                         std::vector<std::string>* names_out) {
  net::WireReader r(payload);
  uint32_t slot_number = 0, epoch = 0;
  uint8_t last_flag = 0;
  PendingPush push;
  TARN_RETURN_IF_ERROR(r.I64(term));
  TARN_RETURN_IF_ERROR(r.U32(&slot_number));
  TARN_RETURN_IF_ERROR(r.U32(&epoch));
  TARN_RETURN_IF_ERROR(r.F64(&push.weight));
  TARN_RETURN_IF_ERROR(r.U8(&last_flag));
  TARN_ASSIGN_OR_RETURN(uint32_t count, DecodeTableCount(&r, 12));
  std::vector<std::string> names(count);
  push.ids.resize(count);
  push.grads.resize(count);
  for (uint32_t t = 0; t < count; ++t) {
    TARN_RETURN_IF_ERROR(r.Str(&names[t]));
    TARN_RETURN_IF_ERROR(DecodeIds(&r, &push.ids[t]));
    TARN_RETURN_IF_ERROR(r.Floats(&push.grads[t]));
  }
  TARN_RETURN_IF_ERROR(CheckDone(r, "push"));
  if (slot_number > static_cast<uint32_t>(INT_MAX) || epoch > static_cast<uint32_t>(INT_MAX)) {
    return InvalidArgument("push with slot " + std::to_string(slot_number) + " and epoch " +
                           std::to_string(epoch));
  }
  if (last_flag > 1) return InvalidArgument("push with last " + std::to_string(last_flag));
  // Weight 0 (a batch of rows weighted 0) steps nothing; in sync mode it
  // still counts as the slot's push for the step.
  if (!std::isfinite(push.weight) || push.weight < 0) {
    return InvalidArgument("push with weight " + std::to_string(push.weight));
  }
  *slot = static_cast<int>(slot_number);
  *last = last_flag == 1;
  push.epoch = static_cast<int>(epoch);
  *names_out = std::move(names);
  return push;
}

Status SparseShard::FindPushTablesLocked(const std::vector<std::string>& names, int64_t term,
                                         PendingPush* push) {
  // Every table checked before any is stepped: a bad push changes nothing.
  push->tables.resize(names.size());
  for (size_t t = 0; t < names.size(); ++t) {
    TARN_ASSIGN_OR_RETURN(push->tables[t], Find(names[t], term));
    for (size_t u = 0; u < t; ++u) {
      if (names[u] == names[t]) return InvalidArgument("push names table " + names[t] + " twice");
    }
    const size_t dim = push->tables[t]->spec().dim;
    if (push->grads[t].size() != push->ids[t].size() * dim) {
      return InvalidArgument("push of " + std::to_string(push->grads[t].size()) +
                             " gradient values for " + std::to_string(push->ids[t].size()) +
                             " rows of table " + names[t] + " (dimension " + std::to_string(dim) +
                             ")");
    }
    TARN_RETURN_IF_ERROR(push->tables[t]->CheckIds(push->ids[t], true));
  }
  return Status::Ok();
}

void SparseShard::Push(const std::string& payload, Responder out) {
  int slot = 0;
  bool last = false;
  int64_t term = 0;
  std::vector<std::string> names;
  auto push = DecodePush(payload, &slot, &last, &term, &names);  // outside the lock
  if (!push.ok()) return out->Fail(push.status());
  std::unique_lock<std::mutex> lock(mu_);
  Status found = FindPushTablesLocked(names, term, &*push);
  if (!found.ok()) return out->Fail(found);
  net::WireWriter w;
  w.U32(static_cast<uint32_t>(push->tables.size()));
  if (mode_ != Consistency::kSync) {
    // Applied on arrival: the mean gradient, scaled as the dense parameters are.
    if (push->weight > 0) {
      const float scale = static_cast<float>(1.0 / push->weight);
      for (size_t t = 0; t < push->tables.size(); ++t) {
        for (float& g : push->grads[t]) g *= scale;
        push->tables[t]->ApplyGradient(push->ids[t], push->grads[t].data(), push->epoch);
      }
    }
    lock.unlock();
    return out->Reply(w.Take());
  }
  // A slot's last push of the epoch: later steps do not wait for it (its
  // dense push may wait on a slot that still has batches to go).
  if (last) quorum_.erase(slot);
  // A second push of a slot for the same step (a backup that took the slot
  // over and trains the batch again) is counted once, as a dense push is.
  const auto tables = static_cast<uint32_t>(push->tables.size());
  if (!pending_.count(slot)) pending_.emplace(slot, std::move(*push));
  waiting_.push_back({std::move(out), tables});
  MaybeCloseStepLocked();
}

void SparseShard::MaybeCloseStepLocked() {
  if (pending_.empty()) return;
  for (int s : quorum_) {
    if (!pending_.count(s)) return;
  }
  // Per table, in the order the slots name them: the pushes' rows summed per
  // row id in slot order, divided by the step's total weight: one step.
  double weight = 0;
  for (const auto& [slot, p] : pending_) weight += p.weight;
  const int epoch = pending_.begin()->second.epoch;
  std::vector<const model::EmbeddingTable*> done;
  // Rows weighted 0 step nothing, as LOCAL skips such a batch.
  if (weight <= 0) pending_.clear();
  for (const auto& [first_slot, first] : pending_) {
    for (const auto& table : first.tables) {
      if (std::find(done.begin(), done.end(), table.get()) != done.end()) continue;
      done.push_back(table.get());
      std::vector<uint64_t> ids;
      std::vector<float> grads;
      for (const auto& [slot, p] : pending_) {
        for (size_t t = 0; t < p.tables.size(); ++t) {
          if (p.tables[t] != table) continue;
          ids.insert(ids.end(), p.ids[t].begin(), p.ids[t].end());
          grads.insert(grads.end(), p.grads[t].begin(), p.grads[t].end());
        }
      }
      SummedRows summed = SumRowsById(ids, grads, table->spec().dim);
      const float scale = static_cast<float>(1.0 / weight);
      for (float& g : summed.rows) g *= scale;
      table->ApplyGradient(summed.ids, summed.rows.data(), epoch);
    }
  }
  for (auto& [out, tables] : waiting_) {
    net::WireWriter w;
    w.U32(tables);
    out->Reply(w.Take());
  }
  waiting_.clear();
  pending_.clear();
}

void SparseShard::SetConsistency(Consistency mode) {
  std::lock_guard<std::mutex> lock(mu_);
  mode_ = mode;
}

void SparseShard::StartEpoch(const std::vector<int>& slots) {
  std::lock_guard<std::mutex> lock(mu_);
  FailWaitingLocked("a new epoch started");
  quorum_ = std::set<int>(slots.begin(), slots.end());
}

void SparseShard::SlotDone(int slot) {
  std::lock_guard<std::mutex> lock(mu_);
  quorum_.erase(slot);
  MaybeCloseStepLocked();
}

void SparseShard::FailWaiting(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  FailWaitingLocked(why);
}

void SparseShard::Reset(int64_t term, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (term <= term_) return;
    FailWaitingLocked(why);
    tables_.clear();
    term_ = term;
  }
#ifdef __GLIBC__
  malloc_trim(0);  // as a declare of a new term does once it dropped the old tables
#endif
}

void SparseShard::FailWaitingLocked(const std::string& why) {
  for (auto& [out, tables] : waiting_) out->Fail(Unavailable(why));
  waiting_.clear();
  pending_.clear();
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
