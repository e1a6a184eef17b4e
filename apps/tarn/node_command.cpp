// tarn node: runs one process of a distributed job (the command line the
// backends launch). The role shows in the command line; the job's secret
// comes in the environment (TARN_JOB_SECRET), never on it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli.h"
#include "cluster/yarn/credentials.h"
#include "commands.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "net/http_client.h"  // for ConfigureClusterTls
#include "net/socket.h"
#include "runtime/job.h"
#include "runtime/launcher.h"
#include "runtime/node.h"
#include "runtime/protocol.h"
#include "runtime/session.h"
#include "runtime/yarn_job.h"

namespace tarn::app {

namespace {

int NodeUsage(const std::string& why) {
  std::fprintf(stderr,
               "tarn node: %s\n"
               "usage: tarn node --role coordinator --job JOB.json\n"
               "       tarn node --role ps|worker --index I --node N --coordinator HOST:PORT "
               "[--host ADDR]\n"
               "       tarn node --role serving --index I --node N --coordinator HOST:PORT "
               "--model-base DIR [--host ADDR]\n"
               "Runs one node of a distributed training job; 'tarn train' with runMode DIST "
               "starts them.\nThe job secret is read from $%s.\n",
               why.c_str(), runtime::kSecretEnv);
  return kExitUsage;
}

// A model server started by the coordinator (on YARN, beside training): it
// registers its address and serves the job's serving versions with
// `tarn serve --model-base` (which copies them from HDFS into its container's
// folder, serving/version_mirror.h) until it is stopped.
int RunServingNode(const runtime::NodeArgs& args, const std::string& model_base) {
  const bool any = args.host == "auto";
  const std::string bind = any ? "0.0.0.0" : args.host;
  int port = 0;
  {
    auto probe = net::ListenTcp(bind, 0);  // a free port, then given to the server
    if (!probe.ok()) return NodeUsage(probe.status().message());
    port = net::LocalPort(*probe);
  }
  const std::string address = (any ? runtime::HostName() : args.host) + ":" + std::to_string(port);
  auto session = runtime::Session::Open(args, address);
  if (!session.ok()) {
    std::fprintf(stderr, "tarn: error: %s\n", session.status().message().c_str());
    return 1;
  }
  std::vector<std::string> serve = {"tarn",   "serve", "--model-base", model_base,
                                    "--host", bind,    "--port",       std::to_string(port)};
  if (data::IsHdfsPath(model_base)) {
    serve.insert(serve.end(), {"--model-cache", "serving-base"});
  }
  std::vector<char*> argv;
  for (auto& a : serve) argv.push_back(a.data());
  argv.push_back(nullptr);
  return RunServeCommand(static_cast<int>(serve.size()), argv.data());
}

}  // namespace

int RunNodeCommand(int argc, char** argv) {
  runtime::NodeArgs args;
  std::string job_path, model_base;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help" || a == "help") {
      NodeUsage("one node of a distributed job");
      return 0;
    }
    if (ApplyVerbosityFlag(a)) continue;
    if (i + 1 >= argc) return NodeUsage("option " + a + " needs a value");
    std::string v = argv[++i];
    if (a == "--role") {
      args.role = v;
    } else if (a == "--index" || a == "--node") {
      auto n = ParseInt(v);
      if (!n || *n < 0) return NodeUsage(a + " needs a non-negative integer");
      (a == "--index" ? args.index : args.node) = static_cast<int>(*n);
    } else if (a == "--coordinator") {
      args.coordinator = v;
    } else if (a == "--host") {
      args.host = v;
    } else if (a == "--job") {
      job_path = v;
    } else if (a == "--model-base") {
      model_base = v;
    } else {
      return NodeUsage("unknown option " + a);
    }
  }
  const char* secret = std::getenv(runtime::kSecretEnv);
  if (secret && *secret) {
    args.secret = secret;
  } else {
    // A YARN ApplicationMaster gets it in its container's credentials file.
    auto from_yarn = cluster::yarn::ReadSecretFromEnvironment(runtime::kYarnSecretAlias);
    if (!from_yarn.ok()) {
      return NodeUsage(std::string("$") + runtime::kSecretEnv +
                       " is not set and the container credentials have no job secret");
    }
    args.secret = *from_yarn;
  }
  if (const char* tls = std::getenv(runtime::kClusterTlsEnv)) args.tls = std::string(tls) == "1";
  // A node reads no settings: in a YARN container the CA file shipped with the job (if any)
  // verifies HDFS's https endpoints.
  if (Status ca = net::ConfigureClusterTls(Settings()); !ca.ok()) {
    std::fprintf(stderr, "tarn: error: %s\n", ca.message().c_str());
    return 1;
  }
  Status st;
  if (args.role == "coordinator") {
    if (job_path.empty()) return NodeUsage("the coordinator needs --job");
    auto job = runtime::JobConfig::Load(job_path);
    if (!job.ok()) {
      st = job.status();
    } else {
      auto self = runtime::SelfExecutable();
      st = self.ok() ? runtime::RunCoordinator(*job, args.secret, *self) : self.status();
    }
  } else if (args.role == "serving") {
    if (args.coordinator.empty() || model_base.empty()) {
      return NodeUsage("a serving node needs --coordinator and --model-base");
    }
    return RunServingNode(args, model_base);
  } else if (args.role == "ps" || args.role == "worker") {
    if (args.coordinator.empty()) return NodeUsage("--coordinator is required");
    st = args.role == "ps" ? runtime::RunParameterServer(args) : runtime::RunWorker(args);
  } else {
    return NodeUsage("--role must be coordinator, ps or worker");
  }
  if (!st.ok()) {
    std::fprintf(stderr, "tarn: error: %s\n", st.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace tarn::app
