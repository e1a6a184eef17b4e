// The binary messages of embedding tables sharded by row over the parameter
// servers (kept apart from the dense parameters' messages in protocol.h).
// Row r of a table lives on server r % P of the job's P servers.
//
// Payloads, little-endian (net/wire.h; str = u32 length + bytes, ids = u32
// count + u64[count], floats = u32 count + f32[count]):
//   kSparseDeclare    i64 term, table spec (EncodeTableSpec), u32 part,
//                     u32 parts, str load path ("" = fresh rows)
//                     -> u64 rows held
//   kSparsePull       i64 term, u32 tables, per table: str name, ids
//                     -> per table: u64 table steps, floats rows
//   kSparsePush       i64 term, u32 slot, u32 epoch, f64 weight (>= 0),
//                     u8 last (1: the slot's last push of the epoch), u32
//                     tables, per table: str name, ids (distinct), floats
//                     gradient rows (summed over the batch; the server
//                     divides by weight); each table named once -> u32
//                     tables pushed. A batch sends one pull and one push per
//                     server for all the tables it touches; every table of a
//                     push is checked before any is stepped. In sync mode
//                     the answer comes when the step closes (sparse_server.h).
//   kSparseCheckpoint i64 term, str table, str path, u32 bag, u32 epoch
//                     -> u32 crc, u64 rows, u64 bytes, f64 longest and
//                     f64 mean lock hold of the snapshot (ms)
//   kSparseHeld       str table -> u64 rows held, u64 bytes held, u64 steps
// Every count is checked against the bytes left in the message, every id
// against the table's rows and the server's share; a bad message is
// answered with an error and changes nothing.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "model/embedding_table.h"
#include "net/wire.h"

namespace tarn::runtime {

enum SparseMessageType : uint16_t {
  kSparseDeclare = 40,
  kSparsePull = 41,
  kSparsePush = 42,
  kSparseCheckpoint = 43,
  kSparseHeld = 44,
};

inline bool IsSparseMessage(uint16_t type) { return type >= kSparseDeclare && type <= kSparseHeld; }

void EncodeTableSpec(const model::TableSpec& spec, net::WireWriter* w);
Status DecodeTableSpec(net::WireReader* r, model::TableSpec* spec);

// Row ids: u32 count + u64[count]; the count is bounded by the bytes left.
void EncodeIds(std::span<const uint64_t> ids, net::WireWriter* w);
Status DecodeIds(net::WireReader* r, std::vector<uint64_t>* ids);

}  // namespace tarn::runtime
