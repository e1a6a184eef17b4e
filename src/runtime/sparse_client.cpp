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
  TARN_ASSIGN_OR_RETURN(const model::TableSpec* spec, Spec(table));
  Rows rows;
  rows.dim = spec->dim;
  rows.ids = SumRowsById(batch_ids, {}, 0).ids;
  const size_t n = servers_.size();
  std::vector<std::vector<uint64_t>> part(n);
  for (uint64_t id : rows.ids) part[ServerOf(id, n)].push_back(id);
  std::vector<std::string> payloads(n);
  for (size_t i = 0; i < n; ++i) {
    if (part[i].empty()) continue;
    net::WireWriter w;
    w.I64(term_);
    w.Str(table);
    EncodeIds(part[i], &w);
    payloads[i] = w.Take();
  }
  auto replies = CallAll(kSparsePull, payloads);
  std::vector<std::vector<float>> values(n);
  for (size_t i = 0; i < n; ++i) {
    if (part[i].empty()) continue;
    TARN_RETURN_IF_ERROR(replies[i].status());
    net::WireReader r(*replies[i]);
    uint64_t steps = 0;
    TARN_RETURN_IF_ERROR(r.U64(&steps));
    TARN_RETURN_IF_ERROR(r.Floats(&values[i]));
    if (values[i].size() != part[i].size() * rows.dim) {
      return Corrupt("parameter server " + std::to_string(i) + " answered " +
                     std::to_string(values[i].size()) + " values for " +
                     std::to_string(part[i].size()) + " rows of table " + table);
    }
  }
  // Back in ascending id order: each server's ids are an ascending subsequence.
  rows.values.resize(rows.ids.size() * rows.dim);
  std::vector<size_t> next(n, 0);
  for (size_t k = 0; k < rows.ids.size(); ++k) {
    const size_t i = ServerOf(rows.ids[k], n);
    std::memcpy(rows.values.data() + k * rows.dim, values[i].data() + next[i]++ * rows.dim,
                rows.dim * sizeof(float));
  }
  return rows;
}

Status SparseTableClient::Push(const std::string& table, int slot, int epoch,
                               std::span<const uint64_t> batch_ids, std::span<const float> grads,
                               double weight) {
  TARN_ASSIGN_OR_RETURN(const model::TableSpec* spec, Spec(table));
  if (grads.size() != batch_ids.size() * spec->dim) {
    return InvalidArgument("push of " + std::to_string(grads.size()) + " gradient values for " +
                           std::to_string(batch_ids.size()) + " rows of table " + table);
  }
  const SummedRows summed = SumRowsById(batch_ids, grads, spec->dim);
  const size_t n = servers_.size();
  std::vector<std::vector<uint64_t>> ids(n);
  std::vector<std::vector<float>> rows(n);
  for (size_t k = 0; k < summed.ids.size(); ++k) {
    const size_t i = ServerOf(summed.ids[k], n);
    ids[i].push_back(summed.ids[k]);
    const float* g = summed.rows.data() + k * spec->dim;
    rows[i].insert(rows[i].end(), g, g + spec->dim);
  }
  std::vector<std::string> payloads(n);
  for (size_t i = 0; i < n; ++i) {
    net::WireWriter w;
    w.I64(term_);
    w.U32(static_cast<uint32_t>(slot));
    w.U32(static_cast<uint32_t>(epoch));
    w.Str(table);
    w.F64(weight);
    EncodeIds(ids[i], &w);
    w.Floats(rows[i]);
    payloads[i] = w.Take();
  }
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
