// Staging a YARN application's files in HDFS, where NodeManagers localize them into containers.
//
// A cluster node needs nothing but YARN: the tarn binary travels with the shared libraries it
// loads (everything but the C library's own, which every Linux node has), all as plain files
// in the container's working folder, found through LD_LIBRARY_PATH={{PWD}}
// (StagedLibraryEnvironment). Binaries and libraries are the same for many jobs, so they go to
// a shared cache folder once (named by size and modification time) and are reused; the job's
// own files go to a folder per application.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cluster/yarn/protobuf_records.h"  // LocalResource
#include "common/status.h"
#include "net/hadoop_conf.h"

namespace tarn::cluster::yarn {

// (name in the container's working folder, local path)
using StagedFile = std::pair<std::string, std::string>;

// The name under which the submitter's tarn.tls.ca-file reaches every container.
inline constexpr const char* kShippedCaFileName = "tarn-ca.pem";

// The staging root: `configured` (tarn.yarn.staging-dir) when set, else
// <fs.defaultFS>/user/<user>/.tarn/staging. Fails when fs.defaultFS is not hdfs://.
Result<std::string> StagingRoot(const net::HadoopConf& conf, const std::string& configured,
                                const std::string& user);

// The tarn binary (`binary`, or this process's own) and the shared libraries it loads that a
// node may lack: every library `ldd` lists except linux-vdso, ld-linux and glibc's libc, libm,
// libpthread, libdl, librt, libresolv and libutil.
Result<std::vector<StagedFile>> TarnBinaryFiles(const std::string& binary = "");

// The environment that makes a staged binary find its staged libraries: raw values, for the
// NodeManager to expand (AppSubmission::raw_environment).
std::map<std::string, std::string> StagedLibraryEnvironment();

// Uploads files into `dir` (HDFS, or any file system path) and returns their local resources,
// keyed by name, with the size and modification time the NodeManager checks. With a
// `cache_dir`, a file is uploaded there as <name>.<size>.<mtime> once and reused afterwards.
Result<std::map<std::string, LocalResource>> StageFiles(const std::vector<StagedFile>& files,
                                                        const std::string& dir,
                                                        const std::string& cache_dir = "");

// A local resource for a file already staged (size and timestamp from its status).
Result<LocalResource> ResourceFor(const std::string& uri,
                                  LocalResourceType type = LocalResourceType::kFile);

// Removes an application's staging folder (absent: fine).
Status RemoveStaging(const std::string& dir);

class ResourceManagerClient;  // rm_rest.h

// An ApplicationMaster to run: what StageAndSubmit stages and submits.
struct AmLaunch {
  std::string name = "tarn";
  std::string queue = "default";
  std::string type = "TARN";
  int64_t memory_mb = 512;
  int vcores = 1;
  int max_attempts = 2;
  bool keep_containers = true;
  // The AM's command; an argv[0] of "tarn" runs the staged binary (./tarn).
  std::vector<std::string> argv;
  // The job's own files, localized beside the binary (in every container the AM starts too).
  std::vector<StagedFile> files;
  std::map<std::string, std::string> environment;  // added to the AM's
  std::map<std::string, std::string> secrets;      // into the AM's credentials file
  std::string staging_root;  // StagingRoot(); the job's files go to <root>/<application id>
  // On a secured cluster, the HDFS file systems the job reads or writes beyond the staging
  // root's (its data, tarn.yarn.hdfs-servers): each gets a delegation token.
  std::vector<std::string> hdfs_uris;
  std::string binary;  // the tarn binary to stage; empty: this process's
  // Stage the submitter's core-site.xml, hdfs-site.xml and yarn-site.xml (from the
  // configuration's folder) and point HADOOP_CONF_DIR at them in the containers.
  bool ship_hadoop_conf = true;
};

struct SubmittedApp {
  std::string id;
  std::string staging_dir;                               // <root>/<id>
  std::map<std::string, LocalResource> local_resources;  // what every container gets
};

// Asks the ResourceManager for an application id, stages the tarn binary with its libraries
// (in <root>/cache, reused across jobs), the job's files and the cluster configuration (in
// <root>/<id>), and submits the AM with this environment on top of `launch.environment`:
//   LD_LIBRARY_PATH={{PWD}}            the staged libraries
//   TARN_YARN_LOCAL_RESOURCES=<json>   every staged file, for the containers the AM starts
//   TARN_YARN_SCHEDULER_ADDRESS=h:p    yarn.resourcemanager.scheduler.address
//   TARN_YARN_STAGING_DIR=<root>/<id>  where the job's files are (and outputs may go)
//   HADOOP_USER_NAME=<user>            the submitting user, for HDFS and YARN calls
//   HADOOP_CONF_DIR={{PWD}}            with ship_hadoop_conf
//   TARN_CONTAINER_CA_FILE=tarn-ca.pem with tarn.tls.ca-file (ClusterCaFile()), shipped too
Result<SubmittedApp> StageAndSubmit(ResourceManagerClient& rm, const net::HadoopConf& conf,
                                    const AmLaunch& launch);

}  // namespace tarn::cluster::yarn
