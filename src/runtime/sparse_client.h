// A worker's (or the coordinator's) view of the job's embedding tables on
// the parameter servers: row r of a table lives on server r % P.
//
// Pull takes a batch's row ids (repeats allowed), deduplicates them, asks
// every server holding some of them at once, and returns the distinct rows
// in ascending id order. Push sums a batch's gradient rows per distinct id
// and sends every server its part at once; every server gets a push each
// step, empty when the batch touched none of its rows, so every share
// counts the same optimizer steps (Adam's bias correction) as a single
// table would. Bytes per batch depend on the distinct rows touched, never
// on the table's size.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/thread_pool.h"
#include "model/embedding_table.h"
#include "net/rpc.h"

namespace tarn::runtime {

// The distinct ids of `ids` in ascending order, and the sum of their
// gradient rows (grads is ids.size() x dim), summed in the order given.
struct SummedRows {
  std::vector<uint64_t> ids;
  std::vector<float> rows;
};
SummedRows SumRowsById(std::span<const uint64_t> ids, std::span<const float> grads, size_t dim);

// One thread at a time per client (its calls to the servers run on its own pool).
class SparseTableClient {
 public:
  // servers[i] is parameter server i (not owned; calls on one connection
  // queue, so the dense parameters may share it).
  SparseTableClient(std::vector<net::RpcClient*> servers, int64_t term);

  int servers() const { return static_cast<int>(servers_.size()); }
  void set_term(int64_t term) { term_ = term; }
  // Replaces server i's connection (after it restarted elsewhere).
  void set_server(int i, net::RpcClient* server) { servers_[static_cast<size_t>(i)] = server; }

  // Makes a table known to this client (its dimension) without telling the servers.
  void AddTable(const model::TableSpec& spec) { tables_[spec.name] = spec; }
  // Tells every server to hold its share of the table: fresh rows, or (load
  // non-empty: one path per server) the rows of its checkpoint file.
  Status Declare(const model::TableSpec& spec, const std::vector<std::string>& load = {});

  struct Rows {
    std::vector<uint64_t> ids;  // distinct, ascending
    std::vector<float> values;  // ids.size() x dim
    size_t dim = 0;
    // Row `id`'s values, or null when it was not pulled.
    const float* Find(uint64_t id) const;
  };
  Result<Rows> Pull(const std::string& table, std::span<const uint64_t> batch_ids);
  // grads: batch_ids.size() x dim gradient rows summed over the batch's
  // rows (repeats are summed); weight: the batch's total weight.
  Status Push(const std::string& table, int slot, int epoch, std::span<const uint64_t> batch_ids,
              std::span<const float> grads, double weight);

  // A batch's rows of several tables: one message per server for all of
  // them (Pull and Push are these with one table).
  struct TableIds {
    std::string table;
    std::span<const uint64_t> ids;  // repeats allowed
  };
  Result<std::vector<Rows>> PullTables(std::span<const TableIds> pulls);
  struct TableGrads {
    std::string table;
    std::span<const uint64_t> ids;  // repeats allowed
    std::span<const float> grads;   // ids.size() x dim
  };
  // One optimizer step of every table named, on every server, with the
  // batch's total weight. A table may be named once. In sync mode the
  // servers answer when the step of every slot training closes; `last`: the
  // slot's last push of the epoch (later steps do not wait for it).
  Status PushTables(int slot, int epoch, std::span<const TableGrads> pushes, double weight,
                    bool last = false);

  struct ShareCheckpoint {
    int ps = 0;
    std::string path;
    uint32_t crc = 0;
    uint64_t rows = 0, bytes = 0;
    // The snapshot's lock holds (what a push or pull may wait on): the longest, the mean.
    double longest_pause_ms = 0, mean_pause_ms = 0;
  };
  // Each server writes its share to dir/TableShareName(bag, epoch, table, ps).
  Result<std::vector<ShareCheckpoint>> Checkpoint(const std::string& table, const std::string& dir,
                                                  int bag, int epoch);

  struct Held {
    uint64_t rows = 0, bytes = 0, steps = 0;
  };
  Result<Held> HeldBy(const std::string& table, int server);

  // Bytes sent and received on the servers' connections so far.
  uint64_t bytes() const;

 private:
  Result<const model::TableSpec*> Spec(const std::string& table) const;
  // Every id below the table's rows (checked before anything is sent, so
  // that no server steps a push another refuses).
  Status CheckRows(const model::TableSpec& spec, std::span<const uint64_t> ids) const;
  // Sends payloads[i] to server i (all at once; empty payloads are not
  // sent) and returns the replies.
  std::vector<Result<std::string>> CallAll(uint16_t type, const std::vector<std::string>& payloads);

  std::vector<net::RpcClient*> servers_;
  int64_t term_;
  std::map<std::string, model::TableSpec> tables_;
  std::unique_ptr<ThreadPool> callers_;
};

}  // namespace tarn::runtime
