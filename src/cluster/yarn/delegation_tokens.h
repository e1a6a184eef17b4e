// HDFS delegation tokens for a job on a secured cluster (hadoop.security.authentication=
// kerberos): what lets its containers, which have no Kerberos credential, reach HDFS.
//
// At submission the client, logged in by Kerberos, asks each NameNode the job touches for a
// token (WebHDFS GETDELEGATIONTOKEN over SPNEGO) whose renewer is the ResourceManager
// (yarn.resourcemanager.principal), of kind HDFS_DELEGATION_TOKEN for the NameNode's RPC
// service ("ip:port", or "ha-hdfs:<nameservice>" for HA), exactly what Java's
// DistributedFileSystem.addDelegationTokens puts in a job's credentials. The tokens go into
// the application's credentials (RM REST credentials.tokens, aliased by service): the
// NodeManagers localize the job's files with them, the RM renews them every renew interval
// until their maximum lifetime and cancels them when the application ends, and the AM hands
// them to every container it starts, where WebHdfs sends them as delegation=.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/settings.h"
#include "common/status.h"
#include "net/hadoop_conf.h"

namespace tarn::cluster::yarn {

// An HDFS file system a job touches, once per token service.
struct JobFileSystem {
  std::string service;  // the token's service (HadoopConf::HdfsTokenService)
  std::string uri;      // a path on it (the first one named), to reach its NameNodes
};

// The distinct HDFS file systems among `uris` (hdfs:// or webhdfs://; local paths and other
// schemes are skipped), by token service, in the order first named: hdfs:///a and
// hdfs://<fs.defaultFS authority>/b are one; an HA nameservice is one whatever NameNode
// answers. A webhdfs://host:http-port path names no RPC address: it counts as the default
// file system's.
std::vector<JobFileSystem> DistinctHdfsFileSystems(const net::HadoopConf& conf,
                                                   const std::vector<std::string>& uris);

// One token per file system of DistinctHdfsFileSystems(uris): (service, Token URL string)
// pairs for AppSubmission::tokens. Fails when yarn.resourcemanager.principal is unset (there
// would be no renewer) or a NameNode refuses, naming the file system.
Result<std::vector<std::pair<std::string, std::string>>> FetchHdfsDelegationTokens(
    const net::HadoopConf& conf, const std::vector<std::string>& uris);

// tarn.yarn.hdfs-servers: the file systems, beyond the job's own paths, that a job gets
// tokens for (a comma list, as MapReduce's mapreduce.job.hdfs-servers), blanks dropped.
std::vector<std::string> ExtraHdfsServers(const Settings& settings);

}  // namespace tarn::cluster::yarn
