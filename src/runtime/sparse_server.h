// A parameter server's share of the job's embedding tables: the rows r with
// r % P == this server's part, with their optimizer state, created on first
// touch. It answers the kSparse* messages (runtime/sparse_messages.h).
//
// Pushes are applied on arrival, in every consistency mode (the dense step
// barrier of sync mode is not applied to sparse rows): each push is one
// optimizer step of the table share.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "model/embedding_table.h"
#include "net/rpc.h"

namespace tarn::runtime {

class SparseShard {
 public:
  explicit SparseShard(int ps) : ps_(ps) {}
  // Answers one kSparse* message (may run on several connections' threads).
  void Handle(const net::RpcServer::Request& r, std::shared_ptr<net::RpcServer::Responder> out);

 private:
  Result<std::string> Declare(const std::string& payload);
  Result<std::string> Pull(const std::string& payload);
  Result<std::string> Push(const std::string& payload);
  Result<std::string> Checkpoint(const std::string& payload);
  Result<std::string> Held(const std::string& payload);
  // The named table, under mu_.
  Result<std::shared_ptr<model::EmbeddingTable>> Find(const std::string& name, int64_t term);

  const int ps_;
  std::mutex mu_;  // guards the tables, their rows, and term_
  int64_t term_ = -1;
  std::map<std::string, std::shared_ptr<model::EmbeddingTable>> tables_;
};

}  // namespace tarn::runtime
