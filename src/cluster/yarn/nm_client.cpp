#include "cluster/yarn/nm_client.h"

namespace tarn::cluster::yarn {

void NmClient::AddToken(const NmToken& token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tokens_.find(token.node);
  if (it != tokens_.end() && it->second == token.token) return;
  tokens_[token.node] = token.token;
  clients_.erase(token.node);  // the next call connects with the new token
}

bool NmClient::HasToken(const NodeId& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  return tokens_.count(node) > 0;
}

Result<std::shared_ptr<IpcClient>> NmClient::ClientFor(const NodeId& node) {
  std::lock_guard<std::mutex> lock(mu_);
  auto client = clients_.find(node);
  if (client != clients_.end()) return client->second;
  auto token = tokens_.find(node);
  if (token == tokens_.end()) {
    return FailedPrecondition("no NMToken for NodeManager " + node.ToString() +
                              " (the ResourceManager sends one with the first container there)");
  }
  IpcOptions o;
  o.host = node.host;
  o.port = node.port;
  o.protocol = kContainerManagementProtocol;
  o.token = token->second;
  o.call_timeout_ms = call_timeout_ms_;
  o.connect_timeout_ms = connect_timeout_ms_;
  o.qops = rpc_protection_;
  auto ipc = std::make_shared<IpcClient>(o);
  clients_[node] = ipc;
  return ipc;
}

Result<ContainersResponse> NmClient::StartContainers(const NodeId& node,
                                                     const std::vector<StartRequest>& requests) {
  TARN_ASSIGN_OR_RETURN(std::string request, EncodeStartContainersRequest(requests));
  TARN_ASSIGN_OR_RETURN(auto ipc, ClientFor(node));
  TARN_ASSIGN_OR_RETURN(std::string response, ipc->Call("startContainers", request));
  return DecodeContainersResponse(response, /*is_start=*/true);
}

Result<ContainersResponse> NmClient::StopContainers(const NodeId& node,
                                                    const std::vector<ContainerId>& ids) {
  TARN_ASSIGN_OR_RETURN(auto ipc, ClientFor(node));
  TARN_ASSIGN_OR_RETURN(std::string response,
                        ipc->Call("stopContainers", EncodeContainerIdList(ids)));
  return DecodeContainersResponse(response, /*is_start=*/false);
}

Result<ContainerStatusesResponse> NmClient::GetContainerStatuses(
    const NodeId& node, const std::vector<ContainerId>& ids) {
  TARN_ASSIGN_OR_RETURN(auto ipc, ClientFor(node));
  TARN_ASSIGN_OR_RETURN(std::string response,
                        ipc->Call("getContainerStatuses", EncodeContainerIdList(ids)));
  return DecodeContainerStatusesResponse(response);
}

}  // namespace tarn::cluster::yarn
