// Reading and validating the assembly file. The checks follow Hadoop's
// ServiceApiUtil.validateAndResolveService in its order, with its messages, each
// prefixed with the file and the field's path.
#include "assembly/spec.h"

#include <algorithm>
#include <set>
#include <utility>

#include "assembly/tf_cluster.h"
#include "common/strings.h"
#include "data/file_system.h"

namespace tarn::assembly {
namespace {

using data::Json;
using data::JsonFields;

template <typename E>
struct EnumName {
  const char* name;
  E value;
};

constexpr EnumName<ArtifactType> kArtifactTypes[] = {{"DOCKER", ArtifactType::kDocker},
                                                     {"TARBALL", ArtifactType::kTarball},
                                                     {"SERVICE", ArtifactType::kService}};
constexpr EnumName<RestartPolicy> kRestartPolicies[] = {{"ALWAYS", RestartPolicy::kAlways},
                                                        {"ON_FAILURE", RestartPolicy::kOnFailure},
                                                        {"NEVER", RestartPolicy::kNever}};
constexpr EnumName<ReadinessType> kReadinessTypes[] = {{"DEFAULT", ReadinessType::kDefault},
                                                       {"HTTP", ReadinessType::kHttp},
                                                       {"PORT", ReadinessType::kPort}};
constexpr EnumName<ConfigFileType> kConfigFileTypes[] = {
    {"XML", ConfigFileType::kXml},
    {"PROPERTIES", ConfigFileType::kProperties},
    {"JSON", ConfigFileType::kJson},
    {"YAML", ConfigFileType::kYaml},
    {"TEMPLATE", ConfigFileType::kTemplate},
    {"ENV", ConfigFileType::kEnv},
    {"HADOOP_XML", ConfigFileType::kHadoopXml},
    {"STATIC", ConfigFileType::kStatic},
    {"ARCHIVE", ConfigFileType::kArchive}};
constexpr EnumName<PlacementType> kPlacementTypes[] = {
    {"AFFINITY", PlacementType::kAffinity},
    {"ANTI_AFFINITY", PlacementType::kAntiAffinity},
    {"AFFINITY_WITH_CARDINALITY", PlacementType::kAffinityWithCardinality}};
constexpr EnumName<PlacementScope> kPlacementScopes[] = {{"NODE", PlacementScope::kNode},
                                                         {"RACK", PlacementScope::kRack}};

// YARN's resource units (ResourceInformation's unit; "" is none).
const std::set<std::string> kResourceUnits = {"",  "p", "n",  "u",  "m",  "k",  "M", "G",
                                              "T", "P", "Ki", "Mi", "Gi", "Ti", "Pi"};

template <typename E, size_t N>
const char* NameOf(const EnumName<E> (&names)[N], E value) {
  for (const auto& n : names)
    if (n.value == value) return n.name;
  return "?";
}

// Path of an element: "components" + 1 -> "components[1]".
std::string At(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}
std::string Dot(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// One read of a file: its name for messages and the warnings gathered on the way.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  Status Error(const std::string& path, const std::string& message) const {
    return InvalidArgument(file_ + ": " + path + ": " + message);
  }
  const std::string& file() const { return file_; }

  // Collects the keys `fields` did not ask for.
  void Done(const JsonFields& fields) {
    for (auto& w : fields.UnknownKeyWarnings()) warnings_.push_back(std::move(w));
  }
  std::vector<std::string> TakeWarnings() { return std::move(warnings_); }

  // An enum field, spelled exactly as Hadoop's Jackson reads it ("TARBALL").
  template <typename E, size_t N>
  Status Enum(JsonFields& fields, const std::string& path, const char* key,
              const EnumName<E> (&names)[N], const char* enum_class, E* out,
              bool* given = nullptr) {
    std::string text;
    TARN_RETURN_IF_ERROR(fields.GetString(key, &text));
    if (given) *given = !text.empty();
    if (text.empty()) return Status::Ok();
    for (const auto& n : names) {
      if (text == n.name) {
        *out = n.value;
        return Status::Ok();
      }
    }
    std::vector<std::string> accepted;
    for (const auto& n : names) accepted.push_back(n.name);
    return Error(Dot(path, key), "'" + text +
                                     "' is not one of the values accepted for Enum class " +
                                     enum_class + ": [" + Join(accepted, ", ") + "]");
  }

  // A map of strings (Hadoop's Map<String, String>: scalars are taken as their text).
  Status StringMap(JsonFields& fields, const std::string& path, const char* key,
                   std::map<std::string, std::string>* out) {
    TARN_ASSIGN_OR_RETURN(const Json* obj, fields.GetObject(key));
    if (!obj) return Status::Ok();
    for (auto it = obj->begin(); it != obj->end(); ++it) {
      if (it->is_string()) {
        (*out)[it.key()] = it->get<std::string>();
      } else if (it->is_number() || it->is_boolean()) {
        (*out)[it.key()] = it->dump();
      } else if (!it->is_null()) {
        return Error(Dot(Dot(path, key), it.key()),
                     "must be a string, got " + data::JsonTypeName(*it) + " " + it->dump());
      }
    }
    return Status::Ok();
  }

  Status OptionalInt64(JsonFields& fields, const Json& obj, const char* key,
                       std::optional<int64_t>* out) {
    if (!data::JsonFind(obj, key)) {
      fields.Accept(key);
      return Status::Ok();
    }
    int64_t v = 0;
    TARN_RETURN_IF_ERROR(fields.GetInt64(key, &v));
    *out = v;
    return Status::Ok();
  }

  // A list of objects, each read by `read(element, element_path)`.
  template <typename Read>
  Status ObjectList(JsonFields& fields, const Json& obj, const std::string& path, const char* key,
                    Read read) {
    fields.Accept(key);
    const Json* list = data::JsonFind(obj, key);
    if (!list) return Status::Ok();
    const std::string where = Dot(path, key);
    if (!list->is_array()) {
      return Error(where, "must be a list, got " + data::JsonTypeName(*list) + " " + list->dump());
    }
    for (size_t i = 0; i < list->size(); ++i) {
      const Json& e = (*list)[i];
      if (!e.is_object()) {
        return Error(At(where, i),
                     "must be an object, got " + data::JsonTypeName(e) + " " + e.dump());
      }
      TARN_RETURN_IF_ERROR(read(e, At(where, i), i));
    }
    return Status::Ok();
  }

  Result<Artifact> ReadArtifact(const Json& obj, const std::string& path) {
    JsonFields f(&obj, file_, path);
    Artifact a;
    TARN_RETURN_IF_ERROR(f.GetString("id", &a.id));
    TARN_RETURN_IF_ERROR(Enum(f, path, "type", kArtifactTypes, "Artifact$TypeEnum", &a.type));
    TARN_RETURN_IF_ERROR(f.GetString("uri", &a.uri));
    Done(f);
    return a;
  }

  Result<Resource> ReadResource(const Json& obj, const std::string& path) {
    JsonFields f(&obj, file_, path);
    Resource r;
    TARN_RETURN_IF_ERROR(f.GetString("profile", &r.profile));
    if (data::JsonFind(obj, "cpus")) {
      int cpus = 0;
      TARN_RETURN_IF_ERROR(f.GetInt("cpus", &cpus));
      r.cpus = cpus;
    } else {
      f.Accept("cpus");
    }
    std::string memory;
    TARN_RETURN_IF_ERROR(f.GetString("memory", &memory));  // Hadoop: a string; a number too
    if (!memory.empty()) {
      const auto mb = ParseInt(memory);
      if (!mb || *mb < 0) {
        return Error(Dot(path, "memory"),
                     "must be a whole number of MB (\"2048\"), got \"" + memory + "\"");
      }
      r.memory_mb = *mb;
    }
    TARN_ASSIGN_OR_RETURN(const Json* additional, f.GetObject("additional"));
    if (additional) {
      for (auto it = additional->begin(); it != additional->end(); ++it) {
        const std::string where = Dot(Dot(path, "additional"), it.key());
        if (!it->is_object()) {
          return Error(where, "must be an object {\"value\": N, \"unit\": \"\"}, got " +
                                  data::JsonTypeName(*it) + " " + it->dump());
        }
        JsonFields rf(&*it, file_, where);
        ResourceValue v;
        TARN_RETURN_IF_ERROR(rf.GetInt64("value", &v.value));
        TARN_RETURN_IF_ERROR(rf.GetString("unit", &v.unit));
        rf.Accept("attributes");
        rf.Accept("tags");
        if (!kResourceUnits.count(v.unit)) {
          return Error(Dot(where, "unit"),
                       "'" + v.unit +
                           "' is not a resource unit (p n u m k M G T P Ki Mi Gi Ti Pi, "
                           "or empty)");
        }
        Done(rf);
        r.additional[it.key()] = v;
      }
    }
    Done(f);
    return r;
  }

  Result<ReadinessCheck> ReadReadiness(const Json& obj, const std::string& path) {
    JsonFields f(&obj, file_, path);
    ReadinessCheck rc;
    TARN_RETURN_IF_ERROR(
        Enum(f, path, "type", kReadinessTypes, "ReadinessCheck$TypeEnum", &rc.type));
    // "props" in Hadoop's older records, "properties" in newer ones.
    TARN_RETURN_IF_ERROR(StringMap(f, path, "props", &rc.properties));
    TARN_RETURN_IF_ERROR(StringMap(f, path, "properties", &rc.properties));
    f.Accept("artifact");  // Hadoop's record has it; nothing implements it
    Done(f);
    return rc;
  }

  Result<Configuration> ReadConfiguration(const Json& obj, const std::string& path) {
    JsonFields f(&obj, file_, path);
    Configuration c;
    TARN_RETURN_IF_ERROR(StringMap(f, path, "properties", &c.properties));
    TARN_RETURN_IF_ERROR(StringMap(f, path, "env", &c.env));
    TARN_RETURN_IF_ERROR(ObjectList(
        f, obj, path, "files", [&](const Json& e, const std::string& where, size_t) -> Status {
          JsonFields ff(&e, file_, where);
          ConfigFile cf;
          cf.field_path = where;
          bool typed = false;
          TARN_RETURN_IF_ERROR(
              Enum(ff, where, "type", kConfigFileTypes, "ConfigFile$TypeEnum", &cf.type, &typed));
          if (!typed) return Error(Dot(where, "type"), "File type is empty");
          TARN_RETURN_IF_ERROR(ff.GetString("dest_file", &cf.dest_file));
          TARN_RETURN_IF_ERROR(ff.GetString("src_file", &cf.src_file));
          TARN_RETURN_IF_ERROR(StringMap(ff, where, "properties", &cf.properties));
          Done(ff);
          c.files.push_back(std::move(cf));
          return Status::Ok();
        }));
    Done(f);
    return c;
  }

  Result<PlacementPolicy> ReadPlacement(const Json& obj, const std::string& path,
                                        const std::string& component) {
    JsonFields f(&obj, file_, path);
    PlacementPolicy p;
    TARN_RETURN_IF_ERROR(ObjectList(
        f, obj, path, "constraints",
        [&](const Json& e, const std::string& where, size_t) -> Status {
          JsonFields cf(&e, file_, where);
          PlacementConstraint pc;
          TARN_RETURN_IF_ERROR(cf.GetString("name", &pc.name));
          const std::string name = pc.name.empty() ? "" : pc.name + " ";
          bool typed = false, scoped = false;
          TARN_RETURN_IF_ERROR(Enum(cf, where, "type", kPlacementTypes,
                                    "PlacementConstraint$TypeEnum", &pc.type, &typed));
          TARN_RETURN_IF_ERROR(Enum(cf, where, "scope", kPlacementScopes,
                                    "PlacementConstraint$ScopeEnum", &pc.scope, &scoped));
          TARN_RETURN_IF_ERROR(cf.GetStringList("target_tags", &pc.target_tags));
          TARN_RETURN_IF_ERROR(cf.GetStringList("node_partitions", &pc.node_partitions));
          TARN_ASSIGN_OR_RETURN(const Json* attributes, cf.GetObject("node_attributes"));
          if (attributes) {
            JsonFields af(attributes, file_, Dot(where, "node_attributes"));
            for (auto it = attributes->begin(); it != attributes->end(); ++it) {
              TARN_RETURN_IF_ERROR(
                  af.GetStringList(it.key().c_str(), &pc.node_attributes[it.key()]));
            }
          }
          TARN_RETURN_IF_ERROR(OptionalInt64(cf, e, "min_cardinality", &pc.min_cardinality));
          TARN_RETURN_IF_ERROR(OptionalInt64(cf, e, "max_cardinality", &pc.max_cardinality));
          Done(cf);
          // ServiceApiUtil.validatePlacementPolicy's checks, with its messages.
          if (!typed) {
            return Error(Dot(where, "type"), "Type not specified for constraint " + name +
                                                 "in placement policy of component " + component +
                                                 ".");
          }
          if (!scoped) {
            return Error(Dot(where, "scope"), "Scope not specified for constraint " + name +
                                                  "in placement policy of component " + component +
                                                  ".");
          }
          if (pc.target_tags.empty()) {
            return Error(Dot(where, "target_tags"), "Tag(s) not specified for constraint " + name +
                                                        "in placement policy of component " +
                                                        component + ".");
          }
          p.constraints.push_back(std::move(pc));
          return Status::Ok();
        }));
    Done(f);
    return p;
  }

  Result<Component> ReadComponent(const Json& obj, const std::string& path, int index) {
    JsonFields f(&obj, file_, path);
    Component c;
    c.index = index;
    TARN_RETURN_IF_ERROR(f.GetString("name", &c.name));
    TARN_RETURN_IF_ERROR(f.GetStringList("dependencies", &c.dependencies));
    TARN_ASSIGN_OR_RETURN(const Json* readiness, f.GetObject("readiness_check"));
    if (readiness) {
      TARN_ASSIGN_OR_RETURN(c.readiness_check,
                            ReadReadiness(*readiness, Dot(path, "readiness_check")));
    }
    TARN_ASSIGN_OR_RETURN(const Json* artifact, f.GetObject("artifact"));
    if (artifact) {
      TARN_ASSIGN_OR_RETURN(c.artifact, ReadArtifact(*artifact, Dot(path, "artifact")));
    }
    TARN_RETURN_IF_ERROR(f.GetString("launch_command", &c.launch_command));
    TARN_ASSIGN_OR_RETURN(const Json* resource, f.GetObject("resource"));
    if (resource) {
      TARN_ASSIGN_OR_RETURN(c.resource, ReadResource(*resource, Dot(path, "resource")));
    }
    TARN_RETURN_IF_ERROR(OptionalInt64(f, obj, "number_of_containers", &c.number_of_containers));
    TARN_RETURN_IF_ERROR(f.GetBool("run_privileged_container", &c.run_privileged_container));
    TARN_ASSIGN_OR_RETURN(const Json* placement, f.GetObject("placement_policy"));
    if (placement) {
      TARN_ASSIGN_OR_RETURN(c.placement_policy,
                            ReadPlacement(*placement, Dot(path, "placement_policy"), c.name));
    }
    TARN_ASSIGN_OR_RETURN(const Json* configuration, f.GetObject("configuration"));
    if (configuration) {
      TARN_ASSIGN_OR_RETURN(c.configuration,
                            ReadConfiguration(*configuration, Dot(path, "configuration")));
    }
    TARN_RETURN_IF_ERROR(f.GetStringList("quicklinks", &c.quicklinks));
    // Hadoop's Java record reads restart_policy; its swagger spells it restartPolicy.
    bool snake = false, camel = false;
    RestartPolicy camel_policy = RestartPolicy::kAlways;
    TARN_RETURN_IF_ERROR(Enum(f, path, "restart_policy", kRestartPolicies,
                              "Component$RestartPolicyEnum", &c.restart_policy, &snake));
    TARN_RETURN_IF_ERROR(Enum(f, path, "restartPolicy", kRestartPolicies,
                              "Component$RestartPolicyEnum", &camel_policy, &camel));
    if (snake && camel && camel_policy != c.restart_policy) {
      return Error(Dot(path, "restartPolicy"),
                   std::string("says ") + NameOf(kRestartPolicies, camel_policy) +
                       " but restart_policy says " + NameOf(kRestartPolicies, c.restart_policy));
    }
    if (camel && !snake) c.restart_policy = camel_policy;
    // What Hadoop reports back (GET) or keeps for itself: read by Hadoop, not used by tarn.
    for (const char* key : {"state", "containers", "decommissioned_instances"}) f.Accept(key);
    Done(f);
    return c;
  }

  Result<Service> ReadService(const Json& root) {
    if (!root.is_object()) {
      return InvalidArgument(file_ + ": the assembly file must hold a JSON object, got " +
                             data::JsonTypeName(root));
    }
    JsonFields f(&root, file_, "");
    Service s;
    TARN_RETURN_IF_ERROR(f.GetString("name", &s.name));
    TARN_RETURN_IF_ERROR(f.GetString("version", &s.version));
    TARN_RETURN_IF_ERROR(f.GetString("description", &s.description));
    TARN_ASSIGN_OR_RETURN(const Json* artifact, f.GetObject("artifact"));
    if (artifact) {
      TARN_ASSIGN_OR_RETURN(s.artifact, ReadArtifact(*artifact, "artifact"));
    }
    TARN_ASSIGN_OR_RETURN(const Json* resource, f.GetObject("resource"));
    if (resource) {
      TARN_ASSIGN_OR_RETURN(s.resource, ReadResource(*resource, "resource"));
    }
    TARN_RETURN_IF_ERROR(OptionalInt64(f, root, "lifetime", &s.lifetime_s));
    TARN_RETURN_IF_ERROR(f.GetString("queue", &s.queue));
    TARN_RETURN_IF_ERROR(ObjectList(
        f, root, "", "components",
        [&](const Json& e, const std::string& where, size_t i) -> Status {
          TARN_ASSIGN_OR_RETURN(Component c, ReadComponent(e, where, static_cast<int>(i)));
          s.components.push_back(std::move(c));
          return Status::Ok();
        }));
    TARN_ASSIGN_OR_RETURN(const Json* configuration, f.GetObject("configuration"));
    if (configuration) {
      TARN_ASSIGN_OR_RETURN(s.configuration, ReadConfiguration(*configuration, "configuration"));
    }
    TARN_RETURN_IF_ERROR(StringMap(f, "", "quicklinks", &s.quicklinks));
    TARN_ASSIGN_OR_RETURN(const Json* kerberos, f.GetObject("kerberos_principal"));
    if (kerberos) {
      JsonFields kf(kerberos, file_, "kerberos_principal");
      KerberosPrincipal k;
      TARN_RETURN_IF_ERROR(kf.GetString("principal_name", &k.principal_name));
      TARN_RETURN_IF_ERROR(kf.GetString("keytab", &k.keytab));
      Done(kf);
      s.kerberos_principal = k;
    }
    TARN_RETURN_IF_ERROR(f.GetString("docker_client_config", &s.docker_client_config));
    for (const char* key :
         {"id", "launch_time", "number_of_running_containers", "state", "placement_policy"}) {
      f.Accept(key);
    }
    Done(f);
    return s;
  }

 private:
  std::string file_;
  std::vector<std::string> warnings_;
};

// Hadoop's Configuration.mergeFrom: the service's properties, env and files are added where
// the component has none of that key (or dest_file); a file both declare gets the service's
// properties the component lacks.
void MergeServiceConfiguration(const Configuration& service, Configuration* component) {
  for (const auto& [k, v] : service.properties) component->properties.emplace(k, v);
  for (const auto& [k, v] : service.env) component->env.emplace(k, v);
  std::vector<ConfigFile> added;
  for (const auto& sf : service.files) {
    auto same = std::find_if(component->files.begin(), component->files.end(),
                             [&](const ConfigFile& cf) { return cf.dest_file == sf.dest_file; });
    if (same != component->files.end()) {
      for (const auto& [k, v] : sf.properties) same->properties.emplace(k, v);
    } else if (std::none_of(added.begin(), added.end(),
                            [&](const ConfigFile& a) { return a.dest_file == sf.dest_file; })) {
      added.push_back(sf);
    }
  }
  for (auto& a : added) component->files.push_back(std::move(a));
}

constexpr const char* kNamePattern = "[a-z][a-z0-9-]*";

bool MatchesNamePattern(const std::string& name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
  });
}

// ServiceApiUtil.validateNameFormat (without the 63-character limit, which Hadoop applies only
// with its registry DNS enabled).
Status ValidateNameFormat(const Reader& r, const std::string& path, const std::string& name) {
  if (name.empty()) return r.Error(path, "Name can not be empty!");
  if (name.find('_') != std::string::npos) {
    return r.Error(path, "Invalid format: " + name +
                             ", can not use '_', as DNS hostname does not allow '_'. Use '-' "
                             "Instead.");
  }
  if (!MatchesNamePattern(name)) {
    return r.Error(path, "Invalid name " + name + " does not match the pattern " + kNamePattern);
  }
  return Status::Ok();
}

bool IsAbsolutePath(const std::string& p) { return !p.empty() && p[0] == '/'; }

// A relative path's number of elements ("a/b" is 2), as java.nio's Path.getNameCount.
size_t PathElements(const std::string& p) {
  size_t n = 0;
  for (const auto& part : Split(p, "/"))
    if (!part.empty()) ++n;
  return n;
}

// AbstractClientProvider.validateConfigFiles and the providers' validateConfigFile.
Status ValidateConfigFiles(const Reader& r, const Component& c, const ValidateOptions& options) {
  std::set<std::string> dests;
  for (const auto& f : c.configuration.files) {
    if (f.type == ConfigFileType::kTemplate && f.src_file.empty() &&
        !f.properties.count("content")) {
      return r.Error(f.field_path,
                     "For TEMPLATE format, either src_file must be specified in ConfigFile, or "
                     "the \"content\" key must be specified in the 'properties' field of "
                     "ConfigFile.");
    }
    if (!f.src_file.empty() && options.path_exists && !options.path_exists(f.src_file)) {
      return r.Error(Dot(f.field_path, "src_file"),
                     "Src_file does not exist for config file: " + f.src_file);
    }
    if (f.dest_file.empty()) return r.Error(Dot(f.field_path, "dest_file"), "Dest_file is empty.");
    if (!dests.insert(f.dest_file).second) {
      return r.Error(Dot(f.field_path, "dest_file"),
                     "Duplicated ConfigFile exists: " + f.dest_file);
    }
    if (!IsAbsolutePath(f.dest_file) && PathElements(f.dest_file) > 1) {
      return r.Error(Dot(f.field_path, "dest_file"),
                     "Non-absolute dest_file has more than one path element");
    }
    const bool docker = c.artifact && c.artifact->type == ArtifactType::kDocker;
    if (!docker && IsAbsolutePath(f.dest_file)) {
      const std::string kind = c.artifact ? ArtifactTypeName(c.artifact->type) : "no";
      return r.Error(Dot(f.field_path, "dest_file"), "For component " + c.name + " with " + kind +
                                                         " artifact, dest_file must be a relative "
                                                         "path: " +
                                                         f.dest_file);
    }
  }
  return Status::Ok();
}

// A readiness check's property as an int, as Hadoop's Probe.getPropertyInt reads it.
Status ReadinessInt(const Reader& r, const std::string& path, const ReadinessCheck& rc,
                    const std::string& key, bool required, std::optional<long long>* out) {
  auto it = rc.properties.find(key);
  if (it == rc.properties.end()) {
    if (!required) return Status::Ok();
    return r.Error(Dot(path, key),
                   "Error creating readiness check java.io.IOException: " + key + " not specified");
  }
  *out = ParseInt(it->second);
  if (!*out) {
    return r.Error(Dot(path, key),
                   "Error creating readiness check "
                   "java.lang.NumberFormatException: For input string: \"" +
                       it->second + "\"");
  }
  return Status::Ok();
}

// MonitorUtils.getProbe: what HttpProbe and PortProbe require of their properties.
Status ValidateReadiness(const Reader& r, const std::string& path, const ReadinessCheck& rc) {
  const std::string props = Dot(path, "properties");
  std::optional<long long> v;
  if (rc.type == ReadinessType::kHttp) {
    auto url = rc.properties.find("url");
    if (url == rc.properties.end() || url->second.empty()) {
      return r.Error(Dot(props, "url"),
                     "Error creating readiness check java.io.IOException: url not specified");
    }
    for (const char* key : {"timeout", "min.success", "max.success"}) {
      TARN_RETURN_IF_ERROR(ReadinessInt(r, props, rc, key, false, &v));
    }
  } else if (rc.type == ReadinessType::kPort) {
    TARN_RETURN_IF_ERROR(ReadinessInt(r, props, rc, "port", true, &v));
    if (*v >= 65536) {
      return r.Error(Dot(props, "port"),
                     "Error creating readiness check "
                     "java.lang.IllegalArgumentException: port " +
                         std::to_string(*v) + " is out of range");
    }
    TARN_RETURN_IF_ERROR(ReadinessInt(r, props, rc, "timeout", false, &v));
  }
  return Status::Ok();
}

// ServiceApiUtil.validateComponent.
Status ValidateComponent(const Reader& r, const Component& c, bool artifact_from_service,
                         bool resource_from_service, const ValidateOptions& options) {
  const std::string path = At("components", c.index);
  const std::string artifact_path = artifact_from_service ? "artifact" : Dot(path, "artifact");
  const std::string resource_path = resource_from_service ? "resource" : Dot(path, "resource");
  TARN_RETURN_IF_ERROR(ValidateNameFormat(r, Dot(path, "name"), c.name));
  if (c.artifact && c.artifact->type != ArtifactType::kService) {
    if (c.artifact->id.empty()) {
      return r.Error(Dot(artifact_path, "id"),
                     "Artifact id (like docker image name) is either empty or not provided for "
                     "component " +
                         c.name + " (nor at the global level)");
    }
    if (c.artifact->type == ArtifactType::kTarball && options.path_exists &&
        !options.path_exists(c.artifact->id)) {
      return r.Error(Dot(artifact_path, "id"),
                     "For component " + c.name +
                         " with TARBALL artifact, path does not exist: " + c.artifact->id);
    }
  }
  if (c.launch_command.empty() && (!c.artifact || c.artifact->type != ArtifactType::kDocker)) {
    return r.Error(Dot(path, "launch_command"),
                   "launch_command is required when type is not DOCKER");
  }
  if (!c.resource) {
    return r.Error(Dot(path, "resource"), "Resource is not provided for component " + c.name +
                                              " (nor at the global level)");
  }
  const Resource& res = *c.resource;
  if (!res.profile.empty() && (res.cpus || res.memory_mb)) {
    return r.Error(Dot(resource_path, "profile"),
                   "Cannot specify cpus/memory along with profile for component " + c.name);
  }
  if (!res.profile.empty()) {
    return r.Error(Dot(resource_path, "profile"),
                   "Resource profile is not supported yet. Please specify cpus/memory.");
  }
  if (!res.memory_mb) {
    return r.Error(Dot(resource_path, "memory"),
                   "Service resource or memory not provided for component " + c.name +
                       " (nor at the global level)");
  }
  if (!res.cpus) {
    return r.Error(Dot(resource_path, "cpus"),
                   "Service resource or cpus not provided for component " + c.name +
                       " (nor at the global level)");
  }
  if (*res.cpus <= 0) {
    return r.Error(Dot(resource_path, "cpus"),
                   "Unacceptable no of cpus specified, either zero or negative for component " +
                       c.name + " (or at the global level)");
  }
  if (!c.number_of_containers || *c.number_of_containers < 0) {
    return r.Error(Dot(path, "number_of_containers"),
                   "Invalid no of containers specified for component " + c.name +
                       " (nor at the global level): " +
                       (c.number_of_containers ? std::to_string(*c.number_of_containers) : "null"));
  }
  TARN_RETURN_IF_ERROR(ValidateConfigFiles(r, c, options));
  if (c.readiness_check) {
    TARN_RETURN_IF_ERROR(ValidateReadiness(r, Dot(path, "readiness_check"), *c.readiness_check));
  }
  return Status::Ok();
}

// ServiceApiUtil.validatePlacementPolicy: target tags may name only the component itself.
Status ValidatePlacement(const Reader& r, const Component& c) {
  if (!c.placement_policy) return Status::Ok();
  for (size_t i = 0; i < c.placement_policy->constraints.size(); ++i) {
    for (const auto& tag : c.placement_policy->constraints[i].target_tags) {
      if (tag == c.name) continue;
      return r.Error(
          Dot(At(Dot(At("components", c.index), "placement_policy.constraints"), i), "target_tags"),
          "Invalid target tag " + tag + " specified in placement policy of component " + c.name +
              ". For now, target tags support self reference only. Specifying "
              "anything other than its component name is not supported. Set target "
              "tag of component " +
              c.name + " to " + c.name + ".");
    }
  }
  return Status::Ok();
}

// A dependency cycle among `remaining` (which has no component whose dependencies are all
// sorted): followed from the first until a component repeats.
std::vector<std::string> FindCycle(const std::vector<const Component*>& remaining) {
  std::map<std::string, const Component*> by_name;
  for (const auto* c : remaining) by_name[c->name] = c;
  std::vector<std::string> walk;
  const Component* at = remaining.front();
  while (std::find(walk.begin(), walk.end(), at->name) == walk.end()) {
    walk.push_back(at->name);
    for (const auto& d : at->dependencies) {
      if (by_name.count(d)) {
        at = by_name[d];
        break;
      }
    }
  }
  std::vector<std::string> cycle(std::find(walk.begin(), walk.end(), at->name), walk.end());
  cycle.push_back(at->name);
  return cycle;
}

// ServiceApiUtil.sortByDependencies: layers of components whose dependencies are all in
// earlier layers, each in file order.
Status SortByDependencies(const Reader& r, std::vector<Component>* components) {
  std::vector<Component> sorted;
  std::set<std::string> done;
  std::vector<Component> remaining = std::move(*components);
  while (!remaining.empty()) {
    std::vector<Component> layer, rest;
    for (auto& c : remaining) {
      const bool ready = std::all_of(c.dependencies.begin(), c.dependencies.end(),
                                     [&](const std::string& d) { return done.count(d) > 0; });
      (ready ? layer : rest).push_back(std::move(c));
    }
    if (layer.empty()) {
      std::vector<const Component*> left;
      std::vector<std::string> names;
      for (const auto& c : rest) {
        left.push_back(&c);
        names.push_back(c.name);
      }
      const auto cycle = FindCycle(left);
      const Component* first = nullptr;
      for (const auto* c : left)
        if (c->name == cycle.front()) first = c;
      return r.Error(Dot(At("components", first->index), "dependencies"),
                     "Invalid dependencies, a cycle may exist: [" + Join(names, ", ") +
                         "] (cycle: " + Join(cycle, " -> ") + ")");
    }
    for (auto& c : layer) {
      done.insert(c.name);
      sorted.push_back(std::move(c));
    }
    remaining = std::move(rest);
  }
  *components = std::move(sorted);
  return Status::Ok();
}

// tarn's own rules: the TensorFlow roles (tf_cluster.h) and tarn.tf.legacy-args.
Status ValidateTarnProperties(const Reader& r, const Service& s) {
  TARN_RETURN_IF_ERROR(TfJobs(s, r.file()).status());
  for (const auto& c : s.components) {
    auto it = c.configuration.properties.find(kTfLegacyArgsProperty);
    if (it != c.configuration.properties.end() && it->second != "true" && it->second != "false") {
      return r.Error(Dot(At("components", c.index),
                         std::string("configuration.properties.") + kTfLegacyArgsProperty),
                     "must be true or false, got '" + it->second + "'");
    }
  }
  return Status::Ok();
}

// ServiceApiUtil.validateAndResolveService, in its order.
Status Validate(const Reader& r, const ValidateOptions& options, Service* s) {
  if (s->name.empty()) return r.Error("name", "Service name is either empty or not provided");
  if (s->version.empty()) {
    return r.Error("version", "Version of service " + s->name + " is either empty or not provided");
  }
  TARN_RETURN_IF_ERROR(ValidateNameFormat(r, "name", s->name));
  if (s->components.empty()) return r.Error("components", "No component specified for " + s->name);
  if (!s->docker_client_config.empty() && options.path_exists &&
      !options.path_exists(s->docker_client_config)) {
    return r.Error("docker_client_config",
                   "The supplied Docker client config does not exist: " + s->docker_client_config);
  }
  // First pass: names, SERVICE artifacts, the service's configuration merged in.
  std::set<std::string> names;
  for (auto& c : s->components) {
    const std::string path = At("components", c.index);
    if (c.name == s->name) {
      return r.Error(Dot(path, "name"),
                     "Component name " + c.name + " must not be same as service name " + s->name);
    }
    if (!names.insert(c.name).second) {
      return r.Error(Dot(path, "name"), "Component name collision: " + c.name);
    }
    if (c.artifact && c.artifact->type == ArtifactType::kService) {
      if (c.artifact->id.empty()) {
        return r.Error(Dot(path, "artifact.id"),
                       "Artifact id (like docker image name) is either empty or not provided");
      }
      // Hadoop imports the named saved service's components here; tarn has no saved services.
      return Unsupported(r.file() + ": " + Dot(path, "artifact.type") +
                         ": SERVICE artifacts (importing the saved service '" + c.artifact->id +
                         "') are not supported by tarn; list its components in this file");
    }
    MergeServiceConfiguration(s->configuration, &c.configuration);
  }
  // Second pass: the service's artifact and resource as defaults, dependencies, each component.
  const bool global_artifact = s->artifact && s->artifact->type != ArtifactType::kService;
  for (auto& c : s->components) {
    const bool artifact_from_service = !c.artifact && global_artifact;
    if (artifact_from_service) c.artifact = s->artifact;
    const bool resource_from_service = !c.resource && s->resource;
    if (resource_from_service) c.resource = s->resource;
    for (size_t d = 0; d < c.dependencies.size(); ++d) {
      if (!names.count(c.dependencies[d])) {
        return r.Error(At(Dot(At("components", c.index), "dependencies"), d),
                       "Dependency " + c.dependencies[d] + " for component " + c.name +
                           " is invalid, does not exist as a component");
      }
    }
    TARN_RETURN_IF_ERROR(
        ValidateComponent(r, c, artifact_from_service, resource_from_service, options));
  }
  for (const auto& c : s->components) TARN_RETURN_IF_ERROR(ValidatePlacement(r, c));
  TARN_RETURN_IF_ERROR(SortByDependencies(r, &s->components));
  return ValidateTarnProperties(r, *s);
}

Json ResourceJson(const Resource& r) {
  Json j = Json::object();
  j["cpus"] = r.cpus ? Json(*r.cpus) : Json();
  j["memory_mb"] = r.memory_mb ? Json(*r.memory_mb) : Json();
  if (!r.additional.empty()) {
    Json a = Json::object();
    for (const auto& [name, v] : r.additional) a[name] = {{"value", v.value}, {"unit", v.unit}};
    j["additional"] = a;
  }
  return j;
}

}  // namespace

const char* ArtifactTypeName(ArtifactType type) { return NameOf(kArtifactTypes, type); }
const char* RestartPolicyName(RestartPolicy policy) { return NameOf(kRestartPolicies, policy); }
const char* ReadinessTypeName(ReadinessType type) { return NameOf(kReadinessTypes, type); }
const char* ConfigFileTypeName(ConfigFileType type) { return NameOf(kConfigFileTypes, type); }
const char* PlacementTypeName(PlacementType type) { return NameOf(kPlacementTypes, type); }
const char* PlacementScopeName(PlacementScope scope) { return NameOf(kPlacementScopes, scope); }

const Component* Service::FindComponent(const std::string& component_name) const {
  for (const auto& c : components)
    if (c.name == component_name) return &c;
  return nullptr;
}

Result<Service> ParseService(const std::string& json_text, const std::string& file) {
  return ParseService(json_text, file, ValidateOptions{});
}

Result<Service> ParseService(const std::string& json_text, const std::string& file,
                             const ValidateOptions& options) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    return InvalidArgument(file + ": not valid JSON: " + e.what());
  }
  Reader reader(file);
  TARN_ASSIGN_OR_RETURN(Service service, reader.ReadService(root));
  service.warnings = reader.TakeWarnings();
  TARN_RETURN_IF_ERROR(Validate(reader, options, &service));
  return service;
}

Result<Service> LoadService(const std::string& path) {
  return LoadService(path, ValidateOptions{});
}

Result<Service> LoadService(const std::string& path, const ValidateOptions& options) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(path));
  TARN_ASSIGN_OR_RETURN(std::string text, fs->ReadAll(path));
  return ParseService(text, path, options);
}

Json DescribeService(const Service& service) {
  Json j = Json::object();
  j["name"] = service.name;
  j["version"] = service.version;
  if (!service.description.empty()) j["description"] = service.description;
  j["lifetime_s"] = service.lifetime_s ? Json(*service.lifetime_s) : Json("unlimited");
  if (!service.queue.empty()) j["queue"] = service.queue;
  Json order = Json::array();
  for (const auto& c : service.components) order.push_back(c.name);
  j["start_order"] = order;
  Json components = Json::array();
  for (const auto& c : service.components) {
    Json cj = Json::object();
    cj["name"] = c.name;
    cj["number_of_containers"] = c.number_of_containers.value_or(0);
    Json instances = Json::array();
    for (int64_t i = 0; i < c.number_of_containers.value_or(0); ++i) {
      instances.push_back(c.name + "-" + std::to_string(i));
    }
    cj["instances"] = instances;
    if (c.artifact) {
      cj["artifact"] = {{"type", ArtifactTypeName(c.artifact->type)}, {"id", c.artifact->id}};
    } else {
      cj["artifact"] = nullptr;  // a command run as it is, natively
    }
    cj["launch_command"] = c.launch_command;
    cj["resource"] = c.resource ? ResourceJson(*c.resource) : Json();
    cj["restart_policy"] = RestartPolicyName(c.restart_policy);
    cj["dependencies"] = c.dependencies;
    if (c.readiness_check) {
      cj["readiness_check"] = {{"type", ReadinessTypeName(c.readiness_check->type)},
                               {"properties", c.readiness_check->properties}};
    } else {
      cj["readiness_check"] = {{"type", "DEFAULT"}};
    }
    auto job = TfJobOf(c, "");
    cj["tf_job"] = job.ok() && !job->empty() ? Json(*job) : Json();
    if (!c.configuration.env.empty()) cj["env"] = c.configuration.env;
    if (!c.configuration.properties.empty()) cj["properties"] = c.configuration.properties;
    if (!c.configuration.files.empty()) {
      Json files = Json::array();
      for (const auto& f : c.configuration.files) {
        Json fj = {{"type", ConfigFileTypeName(f.type)}, {"dest_file", f.dest_file}};
        if (!f.src_file.empty()) fj["src_file"] = f.src_file;
        files.push_back(fj);
      }
      cj["files"] = files;
    }
    if (c.run_privileged_container) cj["run_privileged_container"] = true;
    components.push_back(cj);
  }
  j["components"] = components;
  j["warnings"] = service.warnings;
  return j;
}

}  // namespace tarn::assembly
