#include "cluster/yarn/staging.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "cluster/yarn/delegation_tokens.h"
#include "cluster/yarn/rm_rest.h"
#include "cluster/yarn/yarn_backend.h"  // for ContainerCommand, LocalResourcesToJson
#include "common/files.h"               // for PathExists, JoinPath
#include "common/log.h"
#include "common/shell.h"    // for ShellQuote, CaptureOutput
#include "common/strings.h"  // for Split, Trim, StartsWith
#include "data/file_system.h"
#include "net/http_client.h"  // for ClusterCaFile

namespace tarn::cluster::yarn {
namespace {

// Libraries of glibc itself: they must match the node's loader, so the node's own are used.
bool IsSystemLibrary(const std::string& name) {
  static const char* kSystem[] = {"linux-vdso.so", "ld-linux",  "libc.so",   "libm.so",
                                  "libpthread.so", "libdl.so",  "librt.so",  "libresolv.so",
                                  "libutil.so",    "libanl.so", "libnsl.so", "libmvec.so"};
  for (const char* s : kSystem) {
    if (StartsWith(name, s)) return true;
  }
  return false;
}

std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

}  // namespace

Result<std::string> StagingRoot(const net::HadoopConf& conf, const std::string& configured,
                                const std::string& user) {
  if (!configured.empty()) return configured;
  const std::string fs = conf.DefaultFs();
  if (!StartsWith(fs, "hdfs://")) {
    return FailedPrecondition("fs.defaultFS is '" + fs +
                              "', not hdfs://: set it in core-site.xml ($HADOOP_CONF_DIR), or "
                              "set tarn.yarn.staging-dir to an hdfs:// folder");
  }
  std::string base = fs;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/user/" + net::HadoopUserName(user) + "/.tarn/staging";
}

Result<std::vector<StagedFile>> TarnBinaryFiles(const std::string& binary_in) {
  const std::string binary = binary_in.empty() ? SelfExe() : binary_in;
  if (binary.empty() || !PathExists(binary)) {
    return NotFound("the tarn binary to stage was not found ('" + binary + "')");
  }
  std::vector<StagedFile> out = {{"tarn", binary}};
  // ldd lists every library the loader would map, transitively: "name => /path (0x...)".
  auto listed = CaptureOutput("ldd " + ShellQuote(binary) + " 2>/dev/null", "ldd on " + binary);
  if (!listed.ok()) {
    if (listed.status().code() != StatusCode::kFailedPrecondition) return listed.status();
    // A static binary: "not a dynamic executable"; nothing to add.
    TARN_LOG(kDebug) << listed.status().message() << "; staging the binary alone";
    return out;
  }
  const std::string& text = *listed;
  std::set<std::string> seen;
  for (const auto& line_raw : Split(text, "\n")) {
    std::string_view line = Trim(line_raw);
    auto arrow = line.find(" => ");
    if (arrow == std::string_view::npos) continue;  // linux-vdso, ld-linux
    const std::string name(Trim(line.substr(0, arrow)));
    std::string_view rest = Trim(line.substr(arrow + 4));
    const std::string path(rest.substr(0, rest.find(" (")));
    if (path == "not found") {
      return FailedPrecondition("the tarn binary " + binary + " needs " + name +
                                ", which this machine lacks (ldd: not found)");
    }
    if (IsSystemLibrary(name) || path.empty() || path[0] != '/' || !seen.insert(name).second) {
      continue;
    }
    out.emplace_back(name, path);
  }
  return out;
}

std::map<std::string, std::string> StagedLibraryEnvironment() {
  // The NodeManager turns {{PWD}} into the container's working folder.
  return {{"LD_LIBRARY_PATH", "{{PWD}}"}};
}

Result<LocalResource> ResourceFor(const std::string& uri, LocalResourceType type) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(uri));
  TARN_ASSIGN_OR_RETURN(data::FileStatus st, fs->Stat(uri));
  if (st.is_dir && type == LocalResourceType::kFile) {
    return InvalidArgument(uri + " is a folder; a FILE local resource must be a file");
  }
  LocalResource r;
  if (data::IsHdfsPath(uri)) {
    r.url = uri;
  } else {
    r.url = "file://" + data::StripFileScheme(uri);
  }
  r.size = static_cast<int64_t>(st.length);
  r.timestamp = st.modification_time_ms;
  r.type = type;
  r.visibility = LocalResourceVisibility::kApplication;
  return r;
}

Result<std::map<std::string, LocalResource>> StageFiles(const std::vector<StagedFile>& files,
                                                        const std::string& dir,
                                                        const std::string& cache_dir) {
  std::map<std::string, LocalResource> out;
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(dir));
  TARN_RETURN_IF_ERROR(fs->MakeDirs(dir));
  std::shared_ptr<data::FileSystem> cache_fs;
  if (!cache_dir.empty()) {
    TARN_ASSIGN_OR_RETURN(cache_fs, data::FileSystemFor(cache_dir));
    TARN_RETURN_IF_ERROR(cache_fs->MakeDirs(cache_dir));
  }
  for (const auto& [name, local] : files) {
    if (name.empty() || name.find('/') != std::string::npos) {
      return InvalidArgument("staged file name '" + name + "' must be a plain file name");
    }
    if (out.count(name)) return InvalidArgument("staged file name '" + name + "' appears twice");
    struct stat st;
    if (::stat(local.c_str(), &st) != 0) return ErrnoError("cannot stat " + local, errno);
    std::string target;
    if (cache_fs) {
      target = data::ChildPath(cache_dir, name + "." + std::to_string(st.st_size) + "." +
                                              std::to_string(st.st_mtim.tv_sec));
      auto existing = cache_fs->Stat(target);
      if (existing.ok() && existing->length == static_cast<uint64_t>(st.st_size)) {
        TARN_ASSIGN_OR_RETURN(out[name], ResourceFor(target));
        continue;
      }
    } else {
      target = data::ChildPath(dir, name);
    }
    TARN_RETURN_IF_ERROR(data::CopyTree(local, target).WithContext("staging " + name));
    TARN_ASSIGN_OR_RETURN(out[name], ResourceFor(target));
  }
  return out;
}

Status RemoveStaging(const std::string& dir) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(dir));
  return fs->Delete(dir, true);
}

Result<SubmittedApp> StageAndSubmit(ResourceManagerClient& rm, const net::HadoopConf& conf,
                                    const AmLaunch& launch) {
  if (launch.argv.empty()) return InvalidArgument("the ApplicationMaster command is empty");
  if (launch.staging_root.empty()) return InvalidArgument("no staging folder (StagingRoot)");
  TARN_ASSIGN_OR_RETURN(NewApplication app, rm.CreateApplication());
  SubmittedApp out;
  out.id = app.id;
  out.staging_dir = data::ChildPath(launch.staging_root, app.id);
  if (app.max_memory_mb > 0 && launch.memory_mb > app.max_memory_mb) {
    return InvalidArgument("the ApplicationMaster asks for " + std::to_string(launch.memory_mb) +
                           " MB; the cluster allows at most " + std::to_string(app.max_memory_mb) +
                           " MB per container");
  }

  // A secured cluster: the containers reach HDFS with delegation tokens only.
  std::vector<std::pair<std::string, std::string>> tokens;
  if (conf.KerberosEnabled()) {
    std::vector<std::string> uris = {launch.staging_root};
    uris.insert(uris.end(), launch.hdfs_uris.begin(), launch.hdfs_uris.end());
    TARN_ASSIGN_OR_RETURN(tokens, FetchHdfsDelegationTokens(conf, uris));
  }

  TARN_ASSIGN_OR_RETURN(std::vector<StagedFile> binary, TarnBinaryFiles(launch.binary));
  TARN_ASSIGN_OR_RETURN(
      out.local_resources,
      StageFiles(binary, out.staging_dir, data::ChildPath(launch.staging_root, "cache")));
  std::vector<StagedFile> job_files = launch.files;
  // The CA the submitter trusts for the cluster's https endpoints, for every container.
  const std::string& ca_file = net::ClusterCaFile();
  if (!ca_file.empty()) job_files.emplace_back(kShippedCaFileName, ca_file);
  if (launch.ship_hadoop_conf && !conf.conf_dir().empty()) {
    for (const char* name : {"core-site.xml", "hdfs-site.xml", "yarn-site.xml"}) {
      const std::string path = JoinPath(conf.conf_dir(), name);
      if (PathExists(path)) job_files.emplace_back(name, path);
    }
  }
  TARN_ASSIGN_OR_RETURN(auto job_resources, StageFiles(job_files, out.staging_dir));
  for (auto& [name, r] : job_resources) {
    if (out.local_resources.count(name)) {
      return InvalidArgument("job file '" + name + "' has the name of a staged binary or library");
    }
    out.local_resources[name] = r;
  }

  AppSubmission s;
  s.application_id = app.id;
  s.name = launch.name;
  s.queue = launch.queue;
  s.type = launch.type;
  s.memory_mb = launch.memory_mb;
  s.vcores = launch.vcores;
  s.max_attempts = launch.max_attempts;
  s.keep_containers = launch.keep_containers;
  s.local_resources = out.local_resources;
  s.secrets = launch.secrets;
  s.tokens = std::move(tokens);
  s.raw_environment = StagedLibraryEnvironment();
  s.environment[kLocalResourcesEnv] = LocalResourcesToJson(out.local_resources);
  s.environment[kSchedulerAddressEnv] = conf.ResourceManagerSchedulerAddress();
  s.environment["TARN_YARN_STAGING_DIR"] = out.staging_dir;
  s.environment["HADOOP_USER_NAME"] = rm.options().user;
  if (!ca_file.empty()) s.environment[net::kContainerCaFileEnv] = kShippedCaFileName;
  if (launch.ship_hadoop_conf && !conf.conf_dir().empty()) {
    s.raw_environment["HADOOP_CONF_DIR"] = "{{PWD}}";
  }
  for (const auto& [k, v] : launch.environment) {
    s.environment[k] = v;
    s.raw_environment.erase(k);
  }
  std::vector<std::string> argv = launch.argv;
  if (argv[0] == "tarn") argv[0] = "./tarn";
  s.command = ContainerCommand(argv);
  Status submitted = rm.Submit(s);
  if (!submitted.ok()) {
    Status cleanup = RemoveStaging(out.staging_dir);
    (void)cleanup;  // the submission's error is the one to report
    return submitted;
  }
  return out;
}

}  // namespace tarn::cluster::yarn
