// tarn assembly validate FILE: the assembly file as tarn reads it (src/assembly/spec.h).
// tarn assembly ... --via services: the same file run by YARN's service framework, through the
// ResourceManager's /app/v1/services API (src/cluster/yarn/services_rest.h).
#include "assembly_services.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "assembly/spec.h"
#include "assembly/tf_cluster.h"
#include "cli.h"
#include "cluster/yarn/rm_rest.h"
#include "cluster/yarn/services_rest.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "net/hadoop_conf.h"
#include "pipeline/model_set.h"

namespace tarn::app {
namespace {

using cluster::yarn::ResourceManagerClient;
using cluster::yarn::ServicesClient;
using cluster::yarn::ServiceStatus;

constexpr const char* kValidateUsage =
    "usage: tarn assembly validate FILE [--json]\n"
    "Reads FILE, a YARN service spec (Hadoop's Yarnfile JSON), and checks it as Hadoop's\n"
    "ServiceApiUtil does. Prints the components in start order with their instances,\n"
    "resources, artifacts, restart policies, readiness checks and TensorFlow jobs (--json: the\n"
    "same as JSON), and the keys it ignored. A bad file exits 2 with the field's path.\n"
    "docs/ASSEMBLY.md describes the format.\n";

constexpr const char* kServicesUsage =
    "usage: tarn assembly launch --via services FILE [--timeout S] [--no-follow]\n"
    "       tarn assembly status NAME --via services [--json]\n"
    "       tarn assembly flex NAME --via services --component C N|+N|-N [--timeout S]\n"
    "       tarn assembly stop|start|destroy NAME --via services\n"
    "Runs the assembly with YARN's own service framework: the file (checked by tarn first) is\n"
    "posted to the ResourceManager's /app/v1/services API (yarn.webapp.api-service.enable).\n"
    "launch follows the service until it is STABLE (--timeout, default 300 s); flex until the\n"
    "component has N ready containers. -Dkey=value sets Hadoop keys as for every command\n"
    "(docs/ASSEMBLY.md).\n";

int Usage(const std::string& message, const char* usage) {
  std::fprintf(stderr, "tarn assembly: %s\n%s", message.c_str(), usage);
  return kExitUsage;
}

std::string ResourceText(const assembly::Resource& r) {
  std::string s = "cpus " + (r.cpus ? std::to_string(*r.cpus) : std::string("?")) + ", memory " +
                  (r.memory_mb ? std::to_string(*r.memory_mb) : std::string("?")) + " MB";
  for (const auto& [name, v] : r.additional) {
    s += ", " + name + " " + std::to_string(v.value) + v.unit;
  }
  return s;
}

void PrintService(const assembly::Service& s) {
  std::printf("assembly %s, version %s: %zu components, started in this order\n", s.name.c_str(),
              s.version.c_str(), s.components.size());
  std::printf("  lifetime: %s\n",
              s.lifetime_s ? (std::to_string(*s.lifetime_s) + " s").c_str() : "unlimited");
  for (const auto& c : s.components) {
    const int64_t n = c.number_of_containers.value_or(0);
    std::vector<std::string> instances;
    for (int64_t i = 0; i < n; ++i) instances.push_back(c.name + "-" + std::to_string(i));
    std::printf("\n  %s: %lld instance%s (%s)\n", c.name.c_str(), static_cast<long long>(n),
                n == 1 ? "" : "s", Join(instances, ", ").c_str());
    std::printf("    resource:       %s\n", ResourceText(*c.resource).c_str());
    if (c.artifact) {
      std::printf("    artifact:       %s %s\n", assembly::ArtifactTypeName(c.artifact->type),
                  c.artifact->id.c_str());
    } else {
      std::printf("    artifact:       none (the command runs as it is)\n");
    }
    std::printf("    launch_command: %s\n",
                c.launch_command.empty() ? "(the image's own)" : c.launch_command.c_str());
    std::printf("    restart_policy: %s\n", assembly::RestartPolicyName(c.restart_policy));
    if (!c.dependencies.empty()) {
      std::printf("    starts after:   %s are ready\n", Join(c.dependencies, ", ").c_str());
    }
    if (c.readiness_check) {
      std::string props;
      for (const auto& [k, v] : c.readiness_check->properties) props += " " + k + "=" + v;
      std::printf("    readiness:      %s%s\n",
                  assembly::ReadinessTypeName(c.readiness_check->type), props.c_str());
    }
    auto job = assembly::TfJobOf(c, "");
    if (job.ok() && !job->empty()) {
      std::printf("    TensorFlow job: %s (TF_CONFIG, CLUSTER_SPEC, JOB_NAME, TASK_INDEX set)\n",
                  job->c_str());
    }
    for (const auto& f : c.configuration.files) {
      std::printf("    file:           %s %s%s\n", assembly::ConfigFileTypeName(f.type),
                  f.dest_file.c_str(), f.src_file.empty() ? "" : (" from " + f.src_file).c_str());
    }
  }
}

// The ResourceManager's REST client from the Hadoop configuration and -D overrides.
Result<ResourceManagerClient> RmClient(const std::vector<std::string>& overrides) {
  TARN_ASSIGN_OR_RETURN(Settings settings, pipeline::LoadSettings("/proc/self/exe", overrides));
  TARN_ASSIGN_OR_RETURN(net::HadoopConf conf, net::HadoopConf::FromSettings(settings));
  TARN_ASSIGN_OR_RETURN(long long timeout_s, settings.GetInt("tarn.hdfs.timeout-s"));
  return ResourceManagerClient::FromConf(conf, settings.GetString("tarn.hdfs.user"),
                                         static_cast<int>(timeout_s * 1000));
}

int64_t ReadyContainers(const cluster::yarn::ServiceComponentStatus& c) {
  int64_t ready = 0;
  for (const auto& k : c.containers) ready += k.state == "READY";
  return ready;
}

std::string StatusLine(const ServiceStatus& s) {
  std::string line = s.name + " " + s.state + (s.id.empty() ? "" : " (" + s.id + ")");
  for (const auto& c : s.components) {
    line += "; " + c.name + " " + c.state + " " + std::to_string(ReadyContainers(c)) + "/" +
            std::to_string(c.number_of_containers) + " ready";
  }
  return line;
}

// Polls the service every second, printing each change, until `done` says so, the service
// ends, or timeout_s passes.
int Follow(ServicesClient& services, const std::string& name, int64_t timeout_s,
           const std::function<bool(const ServiceStatus&)>& done, const std::string& goal) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string last;
  while (true) {
    auto s = services.Get(name);
    if (s.ok()) {
      const std::string line = StatusLine(*s);
      if (line != last) std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      last = line;
      if (done(*s)) return 0;
      if (s->Done()) {
        std::fprintf(stderr, "tarn assembly: service %s ended %s before %s%s%s\n", name.c_str(),
                     s->state.c_str(), goal.c_str(), s->diagnostics.empty() ? "" : ": ",
                     s->diagnostics.c_str());
        return kExitFailure;
      }
    } else if (s.status().code() != StatusCode::kNotFound) {
      return Fail("tarn assembly", s.status());
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr, "tarn assembly: service %s not %s within %lld s (last: %s)\n",
                   name.c_str(), goal.c_str(), static_cast<long long>(timeout_s),
                   last.empty() ? "not yet known to the RM" : last.c_str());
      return kExitFailure;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

void PrintStatusJson(const ServiceStatus& s) {
  data::Json j = {{"name", s.name}, {"id", s.id}, {"state", s.state}, {"via", "services"}};
  if (!s.diagnostics.empty()) j["diagnostics"] = s.diagnostics;
  data::Json components = data::Json::array();
  for (const auto& c : s.components) {
    data::Json cj = {{"name", c.name},
                     {"state", c.state},
                     {"number_of_containers", c.number_of_containers},
                     {"ready", ReadyContainers(c)}};
    data::Json instances = data::Json::array();
    for (const auto& k : c.containers) {
      instances.push_back({{"name", k.component_instance_name},
                           {"container_id", k.id},
                           {"state", k.state},
                           {"host", k.bare_host.empty() ? k.hostname : k.bare_host},
                           {"ip", k.ip}});
    }
    cj["instances"] = instances;
    components.push_back(cj);
  }
  j["components"] = components;
  std::printf("%s\n", j.dump(2).c_str());
}

}  // namespace

int RunAssemblyValidate(const std::vector<std::string>& args) {
  bool json = false;
  std::string file;
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(kValidateUsage, stdout);
      return 0;
    }
    if (a == "--json") {
      json = true;
    } else if (StartsWith(a, "-")) {
      return Usage("unknown option " + a, kValidateUsage);
    } else if (file.empty()) {
      file = a;
    } else {
      return Usage("validate takes one FILE", kValidateUsage);
    }
  }
  if (file.empty()) return Usage("validate needs a FILE", kValidateUsage);
  auto service = assembly::LoadService(file);
  if (!service.ok()) {
    std::fprintf(stderr, "tarn assembly: error: %s\n", service.status().message().c_str());
    return kExitUsage;  // whatever is wrong, it is the file the user must change
  }
  for (const auto& w : service->warnings)
    std::fprintf(stderr, "tarn assembly: warning: %s\n", w.c_str());
  if (json) {
    std::printf("%s\n", assembly::DescribeService(*service).dump(2).c_str());
  } else {
    PrintService(*service);
  }
  return 0;
}

int RunAssemblyViaServices(const std::vector<std::string>& args) {
  std::vector<std::string> positional, overrides;
  bool json = false, follow = true, via = false;
  int64_t timeout_s = 300;
  std::string component, count;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    std::string v;
    if (a == "-h" || a == "--help") {
      std::fputs(kServicesUsage, stdout);
      return 0;
    } else if (a == "--via") {
      if (!value(&v) || v != "services") return Usage("--via takes 'services'", kServicesUsage);
      via = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--no-follow") {
      follow = false;
    } else if (a == "--timeout") {
      if (!value(&v) || !ParseInt(v) || *ParseInt(v) <= 0) {
        return Usage("--timeout takes a number of seconds", kServicesUsage);
      }
      timeout_s = *ParseInt(v);
    } else if (a == "--component") {
      if (!value(&component) || !value(&count)) {
        return Usage("--component takes a component and a count", kServicesUsage);
      }
    } else if (StartsWith(a, "-D") && a.find('=') != std::string::npos) {
      overrides.push_back(a.substr(2));
    } else if (ApplyVerbosityFlag(a)) {
    } else if (StartsWith(a, "-")) {
      return Usage("unknown option " + a, kServicesUsage);
    } else {
      positional.push_back(a);
    }
  }
  if (!via) return Usage("expected --via services", kServicesUsage);
  if (positional.size() != 2)
    return Usage("expected a command and one FILE or NAME", kServicesUsage);
  const std::string sub = positional[0], target = positional[1];
  if (sub == "flex" && component.empty())
    return Usage("flex needs --component C N", kServicesUsage);
  if (sub != "flex" && !component.empty()) return Usage("--component is flex's", kServicesUsage);

  auto rm = RmClient(overrides);
  if (!rm.ok()) return Fail("tarn assembly", rm.status());
  ServicesClient services(&*rm);

  if (sub == "launch") {
    auto text = ReadFile(target);
    if (!text.ok()) return Fail("tarn assembly", text.status());
    auto service = assembly::ParseService(*text, target);  // tarn's checks before Hadoop's
    if (!service.ok()) {
      std::fprintf(stderr, "tarn assembly: error: %s\n", service.status().message().c_str());
      return kExitUsage;
    }
    for (const auto& w : service->warnings) {
      std::fprintf(stderr, "tarn assembly: warning: %s\n", w.c_str());
    }
    Status posted = services.Create(*text);  // the file as written: Hadoop reads it itself
    if (!posted.ok()) return Fail("tarn assembly", posted);
    std::printf("submitted service %s to YARN's service framework\n", service->name.c_str());
    if (!follow) return 0;
    return Follow(
        services, service->name, timeout_s,
        [](const ServiceStatus& s) { return s.state == "STABLE"; }, "STABLE");
  }
  if (sub == "status") {
    auto s = services.Get(target);
    if (!s.ok()) return Fail("tarn assembly", s.status());
    if (json) {
      PrintStatusJson(*s);
    } else {
      std::printf("%s\n", StatusLine(*s).c_str());
    }
    return 0;
  }
  if (sub == "flex") {
    auto before = services.Get(target);
    if (!before.ok()) return Fail("tarn assembly", before.status());
    const auto* c = before->Component(component);
    if (!c) {
      std::fprintf(stderr, "tarn assembly: %s does not exist !\n", component.c_str());
      return kExitUsage;
    }
    const bool relative = !count.empty() && (count[0] == '+' || count[0] == '-');
    auto n = ParseInt(relative && count[0] == '+' ? count.substr(1) : count);
    if (!n) return Usage("flex's count must be N, +N or -N, got " + count, kServicesUsage);
    int64_t wanted = relative ? c->number_of_containers + *n : *n;
    if (wanted < 0) {
      std::fprintf(stderr, "tarn assembly: warning: %s would have %lld containers; flexing to 0\n",
                   component.c_str(), static_cast<long long>(wanted));
      wanted = 0;
    }
    Status flexed = services.Flex(target, component, wanted);
    if (!flexed.ok()) return Fail("tarn assembly", flexed);
    std::printf("flexing %s of %s to %lld\n", component.c_str(), target.c_str(),
                static_cast<long long>(wanted));
    if (!follow) return 0;
    return Follow(
        services, target, timeout_s,
        [&](const ServiceStatus& s) {
          const auto* now = s.Component(component);
          return now && now->number_of_containers == wanted &&
                 static_cast<int64_t>(now->containers.size()) == wanted &&
                 ReadyContainers(*now) == wanted;
        },
        component + " at " + std::to_string(wanted) + " ready containers");
  }
  Status done;
  if (sub == "stop") {
    done = services.Stop(target);
  } else if (sub == "start") {
    done = services.Start(target);
  } else if (sub == "destroy") {
    done = services.Destroy(target);
  } else {
    return Usage("unknown command '" + sub + "'", kServicesUsage);
  }
  if (!done.ok()) return Fail("tarn assembly", done);
  std::printf("%s: %s done\n", target.c_str(), sub.c_str());
  return 0;
}

}  // namespace tarn::app
