#include "runtime/sparse_client.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "data/file_system.h"
#include "net/wire.h"
#include "runtime/checkpoint.h"
#include "runtime/sparse_messages.h"

namespace tarn::runtime {

namespace {

constexpr int kCallMs = 600000;

size_t ServerOf(uint64_t row, size_t servers) { return static_cast<size_t>(row % servers); }

}  // namespace

SummedRows SumRowsById(std::span<const uint64_t> ids, std::span<const float> grads, size_t dim) {
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
  SummedRows out;
  for (size_t k : order) {
    const float* g = grads.empty() ? nullptr : grads.data() + k * dim;
    if (out.ids.empty() || out.ids.back() != ids[k]) {
      out.ids.push_back(ids[k]);
      if (g) out.rows.insert(out.rows.end(), g, g + dim);
      continue;
    }
    if (!g) continue;
    float* sum = out.rows.data() + (out.ids.size() - 1) * dim;
    for (size_t j = 0; j < dim; ++j) sum[j] += g[j];
  }
  return out;
}

SparseTableClient::SparseTableClient(std::vector<net::RpcClient*> servers, int64_t term)
    : servers_(std::move(servers)), term_(term) {}

Result<const model::TableSpec*> SparseTableClient::Spec(const std::string& table) const {
  auto it = tables_.find(table);
  if (it == tables_.end()) return NotFound("no embedding table " + table + " was declared");
  return &it->second;
}

Status SparseTableClient::CheckRows(const model::TableSpec& spec,
                                    std::span<const uint64_t> ids) const {
  for (uint64_t id : ids) {
    if (id >= spec.rows) {
      return InvalidArgument("row " + std::to_string(id) + " of table " + spec.name +
                             " is outside its " + std::to_string(spec.rows) + " rows");
    }
  }
  return Status::Ok();
}

std::vector<Result<std::string>> SparseTableClient::CallAll(
    uint16_t type, const std::vector<std::string>& payloads) {
  const size_t n = servers_.size();
  std::vector<Result<std::string>> replies(n, Result<std::string>(std::string()));
  auto call = [&](size_t i) {
    if (!payloads[i].empty()) {
      replies[i] = servers_[i]->Call(type, payloads[i], net::Deadline::InMs(kCallMs));
    }
  };
  // A pool of n - 1 callers; this thread calls the first server.
  if (n > 1 && !callers_) callers_ = std::make_unique<ThreadPool>(static_cast<int>(n) - 1);
  for (size_t i = 1; i < n; ++i) callers_->Submit([&call, i] { call(i); });
  if (n > 0) call(0);
  if (n > 1) callers_->Wait();
  for (size_t i = 0; i < n; ++i) {
    if (!replies[i].ok()) {
      replies[i] = replies[i].status().WithContext("parameter server " + std::to_string(i));
    }
  }
  return replies;
}

Status SparseTableClient::Declare(const model::TableSpec& spec,
                                  const std::vector<std::string>& load) {
  TARN_RETURN_IF_ERROR(spec.Validate());
  if (!load.empty() && load.size() != servers_.size()) {
    return InvalidArgument("table " + spec.name + ": " + std::to_string(load.size()) +
                           " checkpoint files for " + std::to_string(servers_.size()) + " servers");
  }
  std::vector<std::string> payloads(servers_.size());
  for (size_t i = 0; i < servers_.size(); ++i) {
    net::WireWriter w;
    w.I64(term_);
    EncodeTableSpec(spec, &w);
    w.U32(static_cast<uint32_t>(i));
    w.U32(static_cast<uint32_t>(servers_.size()));
    w.Str(load.empty() ? std::string() : load[i]);
    payloads[i] = w.Take();
  }
  for (auto& reply : CallAll(kSparseDeclare, payloads)) TARN_RETURN_IF_ERROR(reply.status());
  AddTable(spec);
  return Status::Ok();
}

const float* SparseTableClient::Rows::Find(uint64_t id) const {
  auto it = std::lower_bound(ids.begin(), ids.end(), id);
  if (it == ids.end() || *it != id) return nullptr;
  return values.data() + static_cast<size_t>(it - ids.begin()) * dim;
}

Result<SparseTableClient::Rows> SparseTableClient::Pull(const std::string& table,
                                                        std::span<const uint64_t> batch_ids) {
  const TableIds one{table, batch_ids};
  TARN_ASSIGN_OR_RETURN(auto rows, PullTables(std::span<const TableIds>(&one, 1)));
  return std::move(rows[0]);
}

Status SparseTableClient::Push(const std::string& table, int slot, int epoch,
                               std::span<const uint64_t> batch_ids, std::span<const float> grads,
                               double weight) {
  const TableGrads one{table, batch_ids, grads};
  return PushTables(slot, epoch, std::span<const TableGrads>(&one, 1), weight);
}

Result<std::vector<SparseTableClient::Rows>> SparseTableClient::PullTables(
    std::span<const TableIds> pulls) {
  const size_t n = servers_.size();
  std::vector<Rows> out(pulls.size());
  // part[t][i]: table t's distinct ids on server i, ascending.
  std::vector<std::vector<std::vector<uint64_t>>> part(pulls.size());
  std::vector<net::WireWriter> writers(n);
  for (auto& w : writers) {
    w.I64(term_);
    w.U32(static_cast<uint32_t>(pulls.size()));
  }
  for (size_t t = 0; t < pulls.size(); ++t) {
    TARN_ASSIGN_OR_RETURN(const model::TableSpec* spec, Spec(pulls[t].table));
    TARN_RETURN_IF_ERROR(CheckRows(*spec, pulls[t].ids));
    out[t].dim = spec->dim;
    out[t].ids = SumRowsById(pulls[t].ids, {}, 0).ids;
    part[t].resize(n);
    for (uint64_t id : out[t].ids) part[t][ServerOf(id, n)].push_back(id);
    for (size_t i = 0; i < n; ++i) {
      writers[i].Str(pulls[t].table);
      EncodeIds(part[t][i], &writers[i]);
    }
  }
  // Servers none of whose rows the batch touched are not asked.
  std::vector<std::string> payloads(n);
  for (size_t i = 0; i < n; ++i) {
    bool touched = false;
    for (const auto& p : part) touched = touched || !p[i].empty();
    if (touched) payloads[i] = writers[i].Take();
  }
  auto replies = CallAll(kSparsePull, payloads);
  std::vector<std::vector<std::vector<float>>> values(pulls.size(),
                                                      std::vector<std::vector<float>>(n));
  for (size_t i = 0; i < n; ++i) {
    if (payloads[i].empty()) continue;
    TARN_RETURN_IF_ERROR(replies[i].status());
    net::WireReader r(*replies[i]);
    for (size_t t = 0; t < pulls.size(); ++t) {
      uint64_t steps = 0;
      TARN_RETURN_IF_ERROR(r.U64(&steps));
      TARN_RETURN_IF_ERROR(r.Floats(&values[t][i]));
      if (values[t][i].size() != part[t][i].size() * out[t].dim) {
        return Corrupt("parameter server " + std::to_string(i) + " answered " +
                       std::to_string(values[t][i].size()) + " values for " +
                       std::to_string(part[t][i].size()) + " rows of table " + pulls[t].table);
      }
    }
  }
  // Back in ascending id order: each server's ids are an ascending subsequence.
  for (size_t t = 0; t < pulls.size(); ++t) {
    Rows& rows = out[t];
    rows.values.resize(rows.ids.size() * rows.dim);
    std::vector<size_t> next(n, 0);
    for (size_t k = 0; k < rows.ids.size(); ++k) {
      const size_t i = ServerOf(rows.ids[k], n);
      std::memcpy(rows.values.data() + k * rows.dim, values[t][i].data() + next[i]++ * rows.dim,
                  rows.dim * sizeof(float));
    }
  }
  return out;
}

Status SparseTableClient::PushTables(int slot, int epoch, std::span<const TableGrads> pushes,
                                     double weight, bool last) {
  const size_t n = servers_.size();
  std::vector<net::WireWriter> writers(n);
  for (auto& w : writers) {
    w.I64(term_);
    w.U32(static_cast<uint32_t>(slot));
    w.U32(static_cast<uint32_t>(epoch));
    w.F64(weight);
    w.U8(last ? 1 : 0);
    w.U32(static_cast<uint32_t>(pushes.size()));
  }
  for (const auto& push : pushes) {
    TARN_ASSIGN_OR_RETURN(const model::TableSpec* spec, Spec(push.table));
    TARN_RETURN_IF_ERROR(CheckRows(*spec, push.ids));
    if (push.grads.size() != push.ids.size() * spec->dim) {
      return InvalidArgument("push of " + std::to_string(push.grads.size()) +
                             " gradient values for " + std::to_string(push.ids.size()) +
                             " rows of table " + push.table);
    }
    const SummedRows summed = SumRowsById(push.ids, push.grads, spec->dim);
    std::vector<std::vector<uint64_t>> ids(n);
    std::vector<std::vector<float>> rows(n);
    for (size_t k = 0; k < summed.ids.size(); ++k) {
      const size_t i = ServerOf(summed.ids[k], n);
      ids[i].push_back(summed.ids[k]);
      const float* g = summed.rows.data() + k * spec->dim;
      rows[i].insert(rows[i].end(), g, g + spec->dim);
    }
    // Every server gets every table, empty when the batch touched none of
    // its rows: each share counts the same steps.
    for (size_t i = 0; i < n; ++i) {
      writers[i].Str(push.table);
      EncodeIds(ids[i], &writers[i]);
      writers[i].Floats(rows[i]);
    }
  }
  std::vector<std::string> payloads(n);
  for (size_t i = 0; i < n; ++i) payloads[i] = writers[i].Take();
  for (auto& reply : CallAll(kSparsePush, payloads)) TARN_RETURN_IF_ERROR(reply.status());
  return Status::Ok();
}

Result<std::vector<SparseTableClient::ShareCheckpoint>> SparseTableClient::Checkpoint(
    const std::string& table, const std::string& dir, int bag, int epoch) {
  const size_t n = servers_.size();
  std::vector<ShareCheckpoint> out(n);
  std::vector<std::string> payloads(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].ps = static_cast<int>(i);
    out[i].path = data::ChildPath(dir, TableShareName(bag, epoch, table, static_cast<int>(i)));
    net::WireWriter w;
    w.I64(term_);
    w.Str(table);
    w.Str(out[i].path);
    w.U32(static_cast<uint32_t>(bag));
    w.U32(static_cast<uint32_t>(epoch));
    payloads[i] = w.Take();
  }
  auto replies = CallAll(kSparseCheckpoint, payloads);
  for (size_t i = 0; i < n; ++i) {
    TARN_RETURN_IF_ERROR(replies[i].status());
    net::WireReader r(*replies[i]);
    TARN_RETURN_IF_ERROR(r.U32(&out[i].crc));
    TARN_RETURN_IF_ERROR(r.U64(&out[i].rows));
    TARN_RETURN_IF_ERROR(r.U64(&out[i].bytes));
    TARN_RETURN_IF_ERROR(r.F64(&out[i].longest_pause_ms));
    TARN_RETURN_IF_ERROR(r.F64(&out[i].mean_pause_ms));
  }
  return out;
}

Result<SparseTableClient::Held> SparseTableClient::HeldBy(const std::string& table, int server) {
  if (server < 0 || server >= servers()) {
    return InvalidArgument("no parameter server " + std::to_string(server));
  }
  net::WireWriter w;
  w.Str(table);
  TARN_ASSIGN_OR_RETURN(std::string reply, servers_[static_cast<size_t>(server)]->Call(
                                               kSparseHeld, w.str(), net::Deadline::InMs(kCallMs)));
  net::WireReader r(reply);
  Held h;
  TARN_RETURN_IF_ERROR(r.U64(&h.rows));
  TARN_RETURN_IF_ERROR(r.U64(&h.bytes));
  TARN_RETURN_IF_ERROR(r.U64(&h.steps));
  return h;
}

uint64_t SparseTableClient::bytes() const {
  uint64_t total = 0;
  for (const auto* s : servers_) total += s->bytes();
  return total;
}

}  // namespace tarn::runtime
