// HDFS over WebHDFS, the NameNode's REST API (hadoop-hdfs WebHDFS.md): no Hadoop libraries, no
// JVM. Requests go to http://<namenode-http>/webhdfs/v1/<path>?op=...&user.name=<user>.
//
// On a secured cluster (hadoop.security.authentication=kerberos) no user.name is sent: the
// NameNode authenticates by SPNEGO with the Kerberos credential (net/kerberos.h), checked
// before the first request; or, in a YARN container, by the job's HDFS delegation token
// (delegation=, from $HADOOP_TOKEN_FILE_LOCATION). DataNodes take the delegation token the
// NameNode's redirect carries either way.
//
//  - Stat: GETFILESTATUS. List: LISTSTATUS.
//  - Read: OPEN with offset and length, following the NameNode's redirect to a DataNode; a
//    sequential reader fetches read_block_bytes per request.
//  - Write: spooled to a local temporary file, then CREATE (the NameNode answers with the
//    DataNode's address; the bytes go there in a second request, never through a redirect
//    that would resend the body) under a hidden temporary name in the same folder, then RENAME
//    over the target with renameoptions=OVERWRITE. A failed write deletes the temporary file.
//  - MKDIRS, DELETE (recursive), RENAME.
//  - HA: the NameNodes are tried in order; a connection failure or a StandbyException moves
//    on to the next, which is then tried first.
//  - Errors name the operation and the hdfs:// path, with the server's RemoteException
//    (FileNotFoundException is kNotFound, AccessControlException kPermissionDenied).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "data/file_system.h"
#include "net/http_client.h"

namespace tarn::cluster {

struct WebHdfsOptions {
  // What paths of this file system start with: "hdfs://nn:8020" (scheme and authority).
  std::string scheme_authority;
  // The NameNodes' HTTP addresses ("host:port"), tried in order.
  std::vector<std::string> namenodes;
  std::string user;              // sent as user.name; empty: none (the cluster's default web user)
  bool kerberos = false;         // SPNEGO instead of user.name
  std::string delegation_token;  // delegation=<URL string> instead of SPNEGO or user.name
  bool https = false;            // dfs.http.policy HTTPS_ONLY (namenodes are https addresses)
  size_t read_block_bytes = 8 << 20;
  int connect_timeout_ms = 10'000;
  int timeout_ms = 300'000;  // one request
  int retries = 2;           // more tries of a read whose connection failed
};

class WebHdfs : public data::FileSystem {
 public:
  explicit WebHdfs(WebHdfsOptions options);

  std::string name() const override { return options_.scheme_authority; }
  Result<data::FileStatus> Stat(const std::string& path) override;
  Result<std::vector<data::FileStatus>> List(const std::string& dir) override;
  Result<std::unique_ptr<data::ReadableFile>> OpenRead(const std::string& path) override;
  Result<std::unique_ptr<data::WritableFile>> OpenWrite(const std::string& path) override;
  Status MakeDirs(const std::string& path) override;
  Status Delete(const std::string& path, bool recursive) override;
  Status Rename(const std::string& from, const std::string& to) override;

  // GETDELEGATIONTOKEN (SPNEGO only): an HDFS delegation token (its URL string) that
  // `renewer` may renew, of kind HDFS_DELEGATION_TOKEN for `service` (HdfsTokenService).
  Result<std::string> GetDelegationToken(const std::string& renewer, const std::string& service);

  // The path inside HDFS of a URI of this file system ("hdfs://nn:8020/a/b" -> "/a/b"); a
  // plain absolute path is taken as it is.
  static Result<std::string> HdfsPathOf(const std::string& uri);
  // The URL of an operation on the NameNode at `namenode` ("host:port").
  std::string OperationUrl(const std::string& namenode, const std::string& hdfs_path,
                           const std::string& op,
                           const std::vector<std::pair<std::string, std::string>>& params) const;
  const WebHdfsOptions& options() const { return options_; }

  // Internal, for the files this file system opens.
  struct Call {
    std::string method = "GET";
    std::string op;
    std::vector<std::pair<std::string, std::string>> params;
    bool follow_redirects = false;
    std::function<Status(std::string_view)> body_sink;
  };
  Result<net::ClientResponse> NameNodeCall(const std::string& uri, const Call& call);
  Status Upload(const std::string& uri, std::FILE* spool, uint64_t size);
  std::unique_ptr<net::HttpClient> AcquireClient();
  void ReleaseClient(std::unique_ptr<net::HttpClient> client);

 private:
  WebHdfsOptions options_;
  std::atomic<size_t> active_{0};  // the NameNode that answered last
  std::mutex mu_;
  std::vector<std::unique_ptr<net::HttpClient>> idle_clients_;
};

// A WebHDFS error body ({"RemoteException":{"exception","javaClassName","message"}}) as a
// Status: "<what>: <exception>: <message>", the code from the exception.
Status WebHdfsError(const std::string& what, const net::ClientResponse& response);

// Makes hdfs:// and webhdfs:// paths reach HDFS through WebHdfs (data::RegisterFileSystem):
// hdfs://authority takes the NameNodes' HTTP addresses from the Hadoop configuration of the
// settings (data::ConfigureFileSystems), HA pairs included; webhdfs://host:port names the
// one NameNode. tarn.hdfs.user, tarn.hdfs.read-block-mb and tarn.hdfs.timeout-s set the
// user, the read block and the timeout. With hadoop.security.authentication=kerberos it uses
// SPNEGO, or, where $HADOOP_TOKEN_FILE_LOCATION holds an HDFS delegation token for the file
// system, that token. Calling it again changes nothing.
void RegisterHdfsFileSystems();

}  // namespace tarn::cluster
