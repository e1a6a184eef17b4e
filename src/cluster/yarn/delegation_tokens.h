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

#include "common/status.h"
#include "net/hadoop_conf.h"

namespace tarn::cluster::yarn {

// One token per distinct HDFS file system among `uris` (hdfs:// or webhdfs://; others are
// skipped): (service, Token URL string) pairs for AppSubmission::tokens. Fails when
// yarn.resourcemanager.principal is unset (there would be no renewer) or a NameNode refuses.
Result<std::vector<std::pair<std::string, std::string>>> FetchHdfsDelegationTokens(
    const net::HadoopConf& conf, const std::vector<std::string>& uris);

}  // namespace tarn::cluster::yarn
