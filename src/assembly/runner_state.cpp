#include "assembly/runner_state.h"

#include <nlohmann/json.hpp>

#include "data/json_fields.h"

namespace tarn::assembly {

namespace {

using Json = nlohmann::ordered_json;

Json OptionalInt(const std::optional<int>& v) { return v ? Json(*v) : Json(nullptr); }

// Reads the fields of one object; the first error is kept and names the field.
class Reader {
 public:
  Reader(const Json& j, const std::string& file, const std::string& path)
      : j_(j), file_(file), path_(path), fields_(&j, file, path) {}

  // A key the file must have (JsonFields alone keeps the default for an absent one).
  bool Need(const char* key) {
    if (!status_.ok()) return false;
    if (!j_.contains(key)) status_ = Corrupt(file_ + ": " + Where(key) + " is missing");
    return status_.ok();
  }
  void String(const char* key, std::string* out) {
    if (Need(key)) Keep(fields_.GetString(key, out));
  }
  void Int64(const char* key, int64_t* out) {
    if (Need(key)) Keep(fields_.GetInt64(key, out));
  }
  void Int(const char* key, int* out) {
    if (Need(key)) Keep(fields_.GetInt(key, out));
  }
  void Bool(const char* key, bool* out) {
    if (Need(key)) Keep(fields_.GetBool(key, out));
  }
  void OptInt(const char* key, std::optional<int>* out) {
    if (!Need(key) || j_[key].is_null()) return;
    int v = 0;
    Keep(fields_.GetInt(key, &v));
    if (status_.ok()) *out = v;
  }
  const Json* Array(const char* key) {
    if (!Need(key)) return nullptr;
    if (!j_[key].is_array()) {
      status_ = Corrupt(file_ + ": " + Where(key) + " must be a list, got " +
                        data::JsonTypeName(j_[key]));
      return nullptr;
    }
    return &j_[key];
  }
  const Json* Object(const char* key) {
    if (!Need(key)) return nullptr;
    if (!j_[key].is_object()) {
      status_ = Corrupt(file_ + ": " + Where(key) + " must be an object, got " +
                        data::JsonTypeName(j_[key]));
      return nullptr;
    }
    return &j_[key];
  }
  void Fail(const char* key, const std::string& why) {
    if (status_.ok()) status_ = Corrupt(file_ + ": " + Where(key) + " " + why);
  }
  std::string Where(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  const Status& status() const { return status_; }

 private:
  void Keep(Status s) {
    if (status_.ok() && !s.ok()) status_ = Corrupt(s.message());
  }
  const Json& j_;
  std::string file_, path_;
  data::JsonFields fields_;
  Status status_;
};

}  // namespace

std::optional<ServiceState> ServiceStateFromName(const std::string& name) {
  for (ServiceState s : {ServiceState::kAccepted, ServiceState::kStarted, ServiceState::kStable,
                         ServiceState::kSucceeded, ServiceState::kFailed, ServiceState::kStopped}) {
    if (name == ServiceStateName(s)) return s;
  }
  return std::nullopt;
}

std::optional<InstanceState> InstanceStateFromName(const std::string& name) {
  for (InstanceState s :
       {InstanceState::kInit, InstanceState::kRunningButUnready, InstanceState::kReady,
        InstanceState::kSucceeded, InstanceState::kFailed, InstanceState::kStopped}) {
    if (name == InstanceStateName(s)) return s;
  }
  return std::nullopt;
}

std::string RunnerStateJson(const RunnerState& s) {
  Json j;
  j["version"] = kRunnerStateVersion;
  j["service"] = s.service;
  j["application_id"] = s.application_id;
  j["state"] = ServiceStateName(s.state);
  j["diagnostics"] = s.diagnostics;
  j["exit_code"] = OptionalInt(s.exit_code);
  j["launch_time"] = s.launch_time_ms;
  j["next_launch"] = s.next_launch_seq;
  j["stop_requested"] = s.stop_requested;
  j["stop_reason"] = s.stop_reason;
  Json tf = Json::object();
  for (const auto& [job, addresses] : s.tf_addresses) tf[job] = addresses;
  j["tf_addresses"] = tf;
  Json comps = Json::array();
  for (const auto& c : s.components) {
    Json jc;
    jc["name"] = c.name;
    jc["desired"] = c.desired;
    jc["next_id"] = c.next_id;
    jc["failures"] = c.failures;
    Json instances = Json::array();
    for (const auto& i : c.instances) {
      instances.push_back({{"name", i.name},
                           {"id", i.id},
                           {"backup", i.backup},
                           {"identity", i.identity},
                           {"replaced", i.replaced},
                           {"replaced_by", i.replaced_by},
                           {"state", InstanceStateName(i.state)},
                           {"launched", i.launched},
                           {"container", i.container},
                           {"kill_requested", i.kill_requested},
                           {"flexed_down", i.flexed_down},
                           {"docker", i.docker},
                           {"restarts", i.restarts},
                           {"exit_code", OptionalInt(i.exit_code)},
                           {"diagnostics", i.diagnostics},
                           {"launch_time", i.launch_time_ms},
                           {"host", i.host},
                           {"launch", i.launch_seq},
                           {"log_dir", i.log_dir},
                           {"registered", i.registered}});
    }
    jc["instances"] = instances;
    comps.push_back(jc);
  }
  j["components"] = comps;
  return j.dump(1) + "\n";
}

Result<RunnerState> ParseRunnerState(const std::string& text, const std::string& file) {
  auto j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) return Corrupt(file + ": not JSON (a damaged or cut off state file)");
  if (!j.is_object()) return Corrupt(file + ": a runner state is a JSON object");
  RunnerState s;
  Reader r(j, file, "");
  int version = 0;
  r.Int("version", &version);
  if (r.status().ok() && version != kRunnerStateVersion) {
    r.Fail("version", "is " + std::to_string(version) + "; this tarn reads version " +
                          std::to_string(kRunnerStateVersion));
  }
  std::string state;
  r.String("service", &s.service);
  r.String("application_id", &s.application_id);
  r.String("state", &state);
  if (r.status().ok()) {
    auto parsed = ServiceStateFromName(state);
    if (!parsed) r.Fail("state", "is not a service state: '" + state + "'");
    if (parsed) s.state = *parsed;
  }
  r.String("diagnostics", &s.diagnostics);
  r.OptInt("exit_code", &s.exit_code);
  r.Int64("launch_time", &s.launch_time_ms);
  r.Int64("next_launch", &s.next_launch_seq);
  r.Bool("stop_requested", &s.stop_requested);
  r.String("stop_reason", &s.stop_reason);
  if (const Json* tf = r.Object("tf_addresses")) {
    for (const auto& [job, addresses] : tf->items()) {
      auto& out = s.tf_addresses[job];
      bool strings = addresses.is_array();
      for (const auto& a : strings ? addresses : Json::array()) {
        strings = strings && a.is_string();
        if (a.is_string()) out.push_back(a.get<std::string>());
      }
      if (!strings) {
        r.Fail("tf_addresses", "." + job + " must be a list of host:port strings");
        break;
      }
    }
  }
  const Json* comps = r.Array("components");
  TARN_RETURN_IF_ERROR(r.status());
  for (size_t ci = 0; ci < comps->size(); ++ci) {
    const Json& jc = (*comps)[ci];
    const std::string path = "components[" + std::to_string(ci) + "]";
    if (!jc.is_object()) return Corrupt(file + ": " + path + " must be an object");
    Reader rc(jc, file, path);
    SavedComponent c;
    rc.String("name", &c.name);
    rc.Int64("desired", &c.desired);
    rc.Int64("next_id", &c.next_id);
    rc.Int("failures", &c.failures);
    const Json* instances = rc.Array("instances");
    TARN_RETURN_IF_ERROR(rc.status());
    for (size_t ii = 0; ii < instances->size(); ++ii) {
      const Json& ji = (*instances)[ii];
      const std::string ipath = path + ".instances[" + std::to_string(ii) + "]";
      if (!ji.is_object()) return Corrupt(file + ": " + ipath + " must be an object");
      Reader ri(ji, file, ipath);
      SavedInstance i;
      std::string istate;
      ri.String("name", &i.name);
      ri.Int64("id", &i.id);
      ri.Bool("backup", &i.backup);
      ri.Int64("identity", &i.identity);
      ri.String("replaced", &i.replaced);
      ri.String("replaced_by", &i.replaced_by);
      ri.String("state", &istate);
      if (ri.status().ok()) {
        auto parsed = InstanceStateFromName(istate);
        if (!parsed) ri.Fail("state", "is not an instance state: '" + istate + "'");
        if (parsed) i.state = *parsed;
      }
      ri.Bool("launched", &i.launched);
      ri.String("container", &i.container);
      ri.Bool("kill_requested", &i.kill_requested);
      ri.Bool("flexed_down", &i.flexed_down);
      ri.Bool("docker", &i.docker);
      ri.Int("restarts", &i.restarts);
      ri.OptInt("exit_code", &i.exit_code);
      ri.String("diagnostics", &i.diagnostics);
      ri.Int64("launch_time", &i.launch_time_ms);
      ri.String("host", &i.host);
      ri.Int64("launch", &i.launch_seq);
      ri.String("log_dir", &i.log_dir);
      ri.Bool("registered", &i.registered);
      TARN_RETURN_IF_ERROR(ri.status());
      if (i.name != c.name + "-" + std::to_string(i.id)) {
        return Corrupt(file + ": " + ipath + ".name '" + i.name + "' is not instance " +
                       std::to_string(i.id) + " of " + c.name);
      }
      if (i.id >= c.next_id) {
        return Corrupt(file + ": " + ipath + ".id " + std::to_string(i.id) +
                       " is not below the component's next_id " + std::to_string(c.next_id));
      }
      c.instances.push_back(std::move(i));
    }
    s.components.push_back(std::move(c));
  }
  return s;
}

}  // namespace tarn::assembly
