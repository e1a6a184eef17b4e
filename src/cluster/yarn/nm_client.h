// ContainerManagementProtocol client: the AM's calls to NodeManagers
// (startContainers, stopContainers, getContainerStatuses). Each NodeManager
// is reached at its NodeId (host:port) with the NMToken the RM issued for
// that node; the RM sends an NMToken only with the first container on a node,
// so tokens are cached here per node. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/yarn/ipc.h"
#include "cluster/yarn/protobuf_records.h"
#include "common/status.h"

namespace tarn::cluster::yarn {

class NmClient {
 public:
  explicit NmClient(int call_timeout_ms = 30000, int connect_timeout_ms = 20000,
                    std::vector<SaslQop> rpc_protection = {SaslQop::kAuth})
      : call_timeout_ms_(call_timeout_ms),
        connect_timeout_ms_(connect_timeout_ms),
        rpc_protection_(std::move(rpc_protection)) {}

  // Caches (or replaces) the token for its node.
  void AddToken(const NmToken& token);
  bool HasToken(const NodeId& node) const;

  Result<ContainersResponse> StartContainers(const NodeId& node,
                                             const std::vector<StartRequest>& requests);
  Result<ContainersResponse> StopContainers(const NodeId& node,
                                            const std::vector<ContainerId>& ids);
  Result<ContainerStatusesResponse> GetContainerStatuses(const NodeId& node,
                                                         const std::vector<ContainerId>& ids);

 private:
  Result<std::shared_ptr<IpcClient>> ClientFor(const NodeId& node);

  int call_timeout_ms_;
  int connect_timeout_ms_;
  std::vector<SaslQop> rpc_protection_;  // hadoop.rpc.protection
  mutable std::mutex mu_;
  std::map<NodeId, Token> tokens_;
  std::map<NodeId, std::shared_ptr<IpcClient>> clients_;
};

}  // namespace tarn::cluster::yarn
