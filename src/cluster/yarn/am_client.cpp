#include "cluster/yarn/am_client.h"

#include <cstdlib>
#include <filesystem>

#include "cluster/yarn/credentials.h"
#include "net/hadoop_conf.h"

namespace tarn::cluster::yarn {

namespace {

Result<net::HadoopConf> ContainerHadoopConf() {
  return net::HadoopConf::LoadDir(net::HadoopConf::DefaultConfDir());
}

}  // namespace

Result<std::string> ResolveSchedulerAddress() {
  if (const char* env = std::getenv(kSchedulerAddressEnv); env && *env) return std::string(env);
  TARN_ASSIGN_OR_RETURN(net::HadoopConf conf, ContainerHadoopConf());
  return conf.ResourceManagerSchedulerAddress();
}

Result<Token> ReadAmRmTokenFromEnvironment() {
  const char* path = std::getenv("HADOOP_TOKEN_FILE_LOCATION");
  if (!path || !*path) {
    return FailedPrecondition(
        "HADOOP_TOKEN_FILE_LOCATION is not set: an ApplicationMaster runs in the container "
        "YARN starts for it, which has the AMRMToken in that file");
  }
  TARN_ASSIGN_OR_RETURN(Credentials credentials, ReadCredentialsFile(path));
  const Token* token = credentials.FindByKind(kAmRmTokenKind);
  if (!token) {
    return NotFound(std::string(path) + " has no " + kAmRmTokenKind + " token (" +
                    std::to_string(credentials.tokens.size()) + " tokens of other kinds)");
  }
  return *token;
}

Result<AmClientOptions> AmClientOptionsFromEnvironment() {
  AmClientOptions o;
  TARN_ASSIGN_OR_RETURN(std::string address, ResolveSchedulerAddress());
  if (!net::SplitHostPort(address, 8030, &o.scheduler_host, &o.scheduler_port)) {
    return InvalidArgument("bad ResourceManager scheduler address '" + address + "'");
  }
  // 0.0.0.0 (an unset hostname) cannot be dialed as such on every system.
  if (o.scheduler_host == "0.0.0.0") o.scheduler_host = "127.0.0.1";
  TARN_ASSIGN_OR_RETURN(o.amrm_token, ReadAmRmTokenFromEnvironment());
  // No configuration folder in the container (none shipped): Hadoop's default level.
  const std::string dir = net::HadoopConf::DefaultConfDir();
  net::HadoopConf conf;
  if (!dir.empty() && std::filesystem::is_directory(dir)) {
    TARN_ASSIGN_OR_RETURN(conf, net::HadoopConf::LoadDir(dir));
  }
  const std::string protection = conf.GetOr(kRpcProtectionKey, kDefaultRpcProtection);
  auto levels = ParseRpcProtection(protection);
  if (!levels.ok()) return levels.status().WithContext(conf.SourceOf(kRpcProtectionKey));
  o.rpc_protection = std::move(*levels);
  return o;
}

namespace {

IpcOptions IpcFor(const AmClientOptions& o) {
  IpcOptions ipc;
  ipc.host = o.scheduler_host;
  ipc.port = o.scheduler_port;
  ipc.protocol = kApplicationMasterProtocol;
  ipc.token = o.amrm_token;
  ipc.qops = o.rpc_protection;
  ipc.connect_timeout_ms = o.connect_timeout_ms;
  ipc.call_timeout_ms = o.call_timeout_ms;
  return ipc;
}

}  // namespace

AmClient::AmClient(AmClientOptions options) : ipc_(IpcFor(options)) {
  auto attempt = DecodeTokenAttempt(options.amrm_token.identifier);
  if (attempt.ok()) attempt_ = *attempt;
}

Result<RegisterResponse> AmClient::Register(const RegisterRequest& request) {
  TARN_ASSIGN_OR_RETURN(std::string response,
                        ipc_.Call("registerApplicationMaster", EncodeRegisterRequest(request)));
  return DecodeRegisterResponse(response);
}

Result<AllocateResponse> AmClient::Allocate(const AllocateRequest& request) {
  TARN_ASSIGN_OR_RETURN(std::string bytes, ipc_.Call("allocate", EncodeAllocateRequest(request)));
  TARN_ASSIGN_OR_RETURN(AllocateResponse response, DecodeAllocateResponse(bytes));
  if (response.am_rm_token) ipc_.SetToken(*response.am_rm_token);
  return response;
}

Result<bool> AmClient::Finish(const FinishRequest& request) {
  TARN_ASSIGN_OR_RETURN(std::string response,
                        ipc_.Call("finishApplicationMaster", EncodeFinishRequest(request)));
  return DecodeFinishResponse(response);
}

}  // namespace tarn::cluster::yarn
