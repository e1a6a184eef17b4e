#include "cluster/yarn/delegation_tokens.h"

#include <chrono>
#include <ctime>

#include "cluster/webhdfs.h"
#include "cluster/yarn/credentials.h"
#include "common/log.h"
#include "common/strings.h"  // for StartsWith, Split, Trim
#include "data/file_system.h"

namespace tarn::cluster::yarn {
namespace {

std::string UtcTime(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace

std::vector<JobFileSystem> DistinctHdfsFileSystems(const net::HadoopConf& conf,
                                                   const std::vector<std::string>& uris) {
  std::vector<JobFileSystem> out;
  for (const std::string& uri : uris) {
    const bool hdfs = StartsWith(uri, "hdfs://");
    if (!hdfs && !StartsWith(uri, "webhdfs://")) continue;
    const size_t start = uri.find("://") + 3;
    const std::string authority = uri.substr(start, uri.find('/', start) - start);
    // webhdfs://host:http-port names no RPC address: such a token is the default NameNode's.
    const std::string service = conf.HdfsTokenService(hdfs ? authority : "");
    bool seen = false;
    for (const JobFileSystem& fs : out) seen = seen || fs.service == service;
    if (!seen) out.push_back({service, uri});
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> FetchHdfsDelegationTokens(
    const net::HadoopConf& conf, const std::vector<std::string>& uris) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string renewer = conf.ResourceManagerPrincipal();
  for (const JobFileSystem& job_fs : DistinctHdfsFileSystems(conf, uris)) {
    if (renewer.empty()) {
      return FailedPrecondition(
          "hadoop.security.authentication is kerberos but yarn.resourcemanager.principal is "
          "not set (yarn-site.xml): the job's HDFS delegation tokens need the ResourceManager "
          "as their renewer");
    }
    const std::string& service = job_fs.service;
    TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(job_fs.uri));
    auto* webhdfs = dynamic_cast<WebHdfs*>(fs.get());
    if (webhdfs == nullptr) return Internal(job_fs.uri + ": not a WebHDFS file system");
    // Its errors name the file system (WebHDFS GETDELEGATIONTOKEN hdfs://...).
    TARN_ASSIGN_OR_RETURN(std::string token, webhdfs->GetDelegationToken(renewer, service));
    auto decoded = TokenFromUrlString(token, "the delegation token of " + service);
    if (decoded.ok()) {
      auto id = ParseDelegationTokenIdentifier(decoded->identifier, service);
      if (id.ok()) {
        TARN_LOG(kInfo) << "HDFS delegation token for " << service << " (owner " << id->owner
                        << ", renewer " << id->renewer << "): renewed by the ResourceManager "
                        << "until " << UtcTime(id->max_date_ms)
                        << ", its maximum lifetime; the job must end before";
      }
    }
    out.emplace_back(service, std::move(token));
  }
  return out;
}

std::vector<std::string> ExtraHdfsServers(const Settings& settings) {
  std::vector<std::string> out;
  for (const auto& raw : Split(settings.GetString("tarn.yarn.hdfs-servers"), ",")) {
    const std::string uri(Trim(raw));
    if (!uri.empty()) out.push_back(uri);
  }
  return out;
}

}  // namespace tarn::cluster::yarn
