// A Hadoop cluster's client configuration, read as Hadoop's own tools read it: core-site.xml,
// hdfs-site.xml and yarn-site.xml from the configuration folder ($HADOOP_CONF_DIR, else
// $HADOOP_HOME/etc/hadoop), in that order, a later file overriding an earlier one unless the
// earlier value is marked <final>true</final>; then overrides (tarn's -Dkey=value).
//
// Values expand ${name} as Hadoop's Configuration does: another key, else ${env.NAME} from the
// environment, else a Java system property tarn knows (user.name, user.home, java.io.tmpdir);
// an unknown variable is left as written. The addresses tarn needs have helpers below, with
// Hadoop's defaults.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/settings.h"
#include "common/status.h"

namespace tarn::net {

class HadoopConf {
 public:
  HadoopConf() = default;

  // The folder Hadoop's tools would read: `explicit_dir` when not empty, else
  // $HADOOP_CONF_DIR, else $HADOOP_HOME/etc/hadoop when it exists, else "".
  static std::string DefaultConfDir(const std::string& explicit_dir = "");

  // As tarn runs: the folder from tarn.hadoop.conf-dir (else DefaultConfDir()), then every
  // setting that is not tarn's or Shifu's (not "tarn.*" or "shifu.*": -Dfs.defaultFS=...) as an
  // override.
  static Result<HadoopConf> FromSettings(const Settings& settings);

  // Reads the three site files of `dir`; a missing file is skipped, a malformed one fails with
  // its name and line. An empty `dir` gives an empty configuration.
  static Result<HadoopConf> LoadDir(const std::string& dir);

  // Parses one Hadoop configuration file's text (<configuration><property><name>..</name>
  // <value>..</value>[<final>true</final>]</property>...</configuration>).
  Status ParseXml(const std::string& text, const std::string& source);
  Status LoadFile(const std::string& path);

  // Sets a value over anything read (an override wins even over <final>).
  void Set(const std::string& key, const std::string& value);

  // The expanded value, or nullopt when the key is not set.
  std::optional<std::string> Get(const std::string& key) const;
  // The expanded value, or `fallback` when the key is unset or empty.
  std::string GetOr(const std::string& key, const std::string& fallback) const;
  // The raw (unexpanded) values, and which file (or "override") each came from.
  const std::map<std::string, std::string>& values() const { return values_; }
  std::string SourceOf(const std::string& key) const;
  // The folder read by LoadDir ("" when none).
  const std::string& conf_dir() const { return conf_dir_; }

  // fs.defaultFS (fs.default.name when unset), e.g. "hdfs://nn:8020"; "file:///" by default.
  std::string DefaultFs() const;
  // The NameNode HTTP addresses ("host:port") that serve WebHDFS for the file system authority
  // `authority` ("nn:8020", a nameservice id, or "" for fs.defaultFS's): every NameNode of an
  // HA nameservice in the configured order, else the one whose RPC address matches, else
  // dfs.namenode.http-address (default port 9870) on the authority's host. With
  // dfs.http.policy HTTPS_ONLY the dfs.namenode.https-address keys instead (port 9871).
  std::vector<std::string> NameNodeHttpAddresses(const std::string& authority) const;
  // yarn.resourcemanager.webapp.address (from yarn.resourcemanager.hostname, port 8088 by
  // default); every RM's for an HA pair (yarn.resourcemanager.ha.rm-ids), in order. With
  // yarn.http.policy HTTPS_ONLY yarn.resourcemanager.webapp.https.address (port 8090).
  std::vector<std::string> ResourceManagerWebAddresses() const;
  // yarn.resourcemanager.scheduler.address (port 8030 by default), for an ApplicationMaster.
  std::string ResourceManagerSchedulerAddress() const;
  // yarn.resourcemanager.address (port 8032 by default).
  std::string ResourceManagerAddress() const;

  // hadoop.security.authentication is "kerberos": SPNEGO on the web APIs, delegation tokens
  // for jobs.
  bool KerberosEnabled() const;
  // dfs.http.policy / yarn.http.policy is HTTPS_ONLY: WebHDFS, or the RM and NM web APIs, over
  // https (the *https* address keys above).
  bool HdfsHttpsOnly() const;
  bool YarnHttpsOnly() const;
  // yarn.resourcemanager.principal with _HOST as the ResourceManager's host (what Hadoop's
  // Master.getMasterPrincipal gives): the renewer of a job's delegation tokens. "" when unset.
  std::string ResourceManagerPrincipal() const;
  // The service name of an HDFS delegation token for the file system `authority` (as
  // NameNodeHttpAddresses takes it): "ha-hdfs:<ns>" for a nameservice of dfs.nameservices,
  // else the NameNode's RPC "ip:port" (hadoop.security.token.service.use_ip, default true;
  // "host:port" when false or when the host does not resolve).
  std::string HdfsTokenService(const std::string& authority) const;

 private:
  std::string Expand(const std::string& value, int depth) const;

  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> sources_;
  std::map<std::string, bool> final_;
  std::string conf_dir_;
};

// Splits "host:port"; the port is `default_port` when absent. "[::1]:80" keeps the brackets
// off the host. False when the port is not a number in 1..65535.
bool SplitHostPort(std::string_view address, int default_port, std::string* host, int* port);

// The user that requests name (?user.name=): `explicit_user` when not empty, else
// $HADOOP_USER_NAME, else the login name of this process's user.
std::string HadoopUserName(const std::string& explicit_user = "");

}  // namespace tarn::net
