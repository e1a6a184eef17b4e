#include "runtime/messages.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "net/wire.h"

namespace tarn::runtime {

std::string MessageName(uint16_t type) {
  switch (type) {
    case kRegister:
      return "kRegister";
    case kHeartbeat:
      return "kHeartbeat";
    case kReport:
      return "kReport";
    case kPush:
      return "kPush";
    case kPull:
      return "kPull";
    case kSlotDone:
      return "kSlotDone";
    case kConfigure:
      return "kConfigure";
    case kStartEpoch:
      return "kStartEpoch";
    case kCheckpoint:
      return "kCheckpoint";
    case kGetParams:
      return "kGetParams";
    case kReset:
      return "kReset";
    case kShutdown:
      return "kShutdown";
  }
  return "message type " + std::to_string(type);
}

namespace msg {
namespace {

// Bounds on what one control message may carry; the frame limit
// (tarn.net.max-message-mb) bounds the bytes, these bound the counts.
constexpr size_t kMaxListCount = size_t{1} << 20;  // slots, shards, servers
constexpr size_t kMaxStringBytes = 1 << 16;        // roles, addresses, paths, reasons

// A value as the error shows it: its JSON text, cut short when long.
std::string Shown(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

bool IntIn(const Json& v, int64_t min, int64_t max, int64_t* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    *out = v.get<int64_t>();
  } else {
    return false;
  }
  return *out >= min && *out <= max;
}

std::string IntRange(int64_t min, int64_t max) {
  if (max == INT64_MAX || max == INT_MAX) return "an integer >= " + std::to_string(min);
  return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

// Reads the fields of one message, naming the message and the field in
// every error.
class Fields {
 public:
  Fields(const char* message, const Json& j) : message_(message), j_(j) {}

  Status CheckObject() const {
    if (j_.is_object()) return Status::Ok();
    return InvalidArgument(std::string(message_) + ": must be a JSON object, got " + Shown(j_));
  }
  bool Has(const char* key) const {
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }
  Status Error(const std::string& field, const std::string& must, const Json& got) const {
    return InvalidArgument(std::string(message_) + ": field '" + field + "' must be " + must +
                           ", got " + Shown(got));
  }

  Status Int64(const char* key, int64_t* out, int64_t min = 0, int64_t max = INT64_MAX,
               const std::string& must = "") {
    TARN_ASSIGN_OR_RETURN(const Json* v, Find(key));
    if (!IntIn(*v, min, max, out)) return Error(key, must.empty() ? IntRange(min, max) : must, *v);
    return Status::Ok();
  }
  Status Int(const char* key, int* out, int min = 0, int max = INT_MAX) {
    int64_t v = 0;
    TARN_RETURN_IF_ERROR(Int64(key, &v, min, max));
    *out = static_cast<int>(v);
    return Status::Ok();
  }
  Status UInt64(const char* key, uint64_t* out, uint64_t min = 0, uint64_t max = UINT64_MAX,
                const std::string& must = "") {
    TARN_ASSIGN_OR_RETURN(const Json* v, Find(key));
    const bool ok = (v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0));
    if (ok) *out = v->get<uint64_t>();
    if (!ok || *out < min || *out > max) {
      std::string range = max == UINT64_MAX ? "an integer >= " + std::to_string(min)
                                            : "an integer in [" + std::to_string(min) + ", " +
                                                  std::to_string(max) + "]";
      return Error(key, must.empty() ? range : must, *v);
    }
    return Status::Ok();
  }
  // A figure: a number >= min, or null (how JSON writes NaN) when NaN is allowed.
  Status Double(const char* key, double* out, bool allow_nan = false,
                double min = -std::numeric_limits<double>::infinity()) {
    TARN_ASSIGN_OR_RETURN(const Json* v, Find(key));
    if (v->is_null() && allow_nan) {
      *out = std::nan("");
      return Status::Ok();
    }
    const std::string must = std::isinf(min) ? "a number" : "a number >= " + Shown(Json(min));
    if (!v->is_number()) return Error(key, must, *v);
    const double x = v->get<double>();
    if (!(x >= min)) return Error(key, must, *v);
    *out = x;
    return Status::Ok();
  }
  // A histogram: at most `max_count` numbers, each >= 0.
  Status Bins(const char* key, std::vector<double>* out, size_t max_count) {
    TARN_ASSIGN_OR_RETURN(const Json* v, Find(key));
    const std::string must = "a list of at most " + std::to_string(max_count) + " numbers >= 0";
    if (!v->is_array() || v->size() > max_count) return Error(key, must, *v);
    out->clear();
    out->reserve(v->size());
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& x = (*v)[i];
      if (!x.is_number() || !(x.get<double>() >= 0)) {
        return Error(std::string(key) + "[" + std::to_string(i) + "]", "a number >= 0", x);
      }
      out->push_back(x.get<double>());
    }
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) {
    TARN_ASSIGN_OR_RETURN(const Json* v, Find(key));
    if (!v->is_boolean()) return Error(key, "true or false", *v);
    *out = v->get<bool>();
    return Status::Ok();
  }
  Status String(const char* key, std::string* out, bool allow_empty = true) {
    TARN_ASSIGN_OR_RETURN(const Json* v, Find(key));
    if (!v->is_string()) return Error(key, "a string", *v);
    const auto& s = v->get_ref<const std::string&>();
    if (s.size() > kMaxStringBytes) {
      return Error(key, "a string of at most " + std::to_string(kMaxStringBytes) + " bytes", *v);
    }
    if (s.empty() && !allow_empty) return Error(key, "a non-empty string", *v);
    *out = s;
    return Status::Ok();
  }
  Status OneOf(const char* key, std::string* out, std::initializer_list<const char*> values) {
    TARN_RETURN_IF_ERROR(String(key, out));
    std::string all;
    for (const char* v : values) {
      if (*out == v) return Status::Ok();
      all += (all.empty() ? "" : ", ") + std::string(v);
    }
    return Error(key, "one of " + all, Json(*out));
  }
  Status IntList(const char* key, std::vector<int>* out, int min = 0) {
    TARN_ASSIGN_OR_RETURN(const Json* v, List(key));
    out->clear();
    for (size_t i = 0; i < v->size(); ++i) {
      int64_t x = 0;
      if (!IntIn((*v)[i], min, INT_MAX, &x)) {
        return Error(std::string(key) + "[" + std::to_string(i) + "]", IntRange(min, INT_MAX),
                     (*v)[i]);
      }
      out->push_back(static_cast<int>(x));
    }
    return Status::Ok();
  }
  Status StringList(const char* key, std::vector<std::string>* out) {
    TARN_ASSIGN_OR_RETURN(const Json* v, List(key));
    out->clear();
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& x = (*v)[i];
      if (!x.is_string() || x.get_ref<const std::string&>().empty() ||
          x.get_ref<const std::string&>().size() > kMaxStringBytes) {
        return Error(std::string(key) + "[" + std::to_string(i) + "]", "a non-empty string", x);
      }
      out->push_back(x.get<std::string>());
    }
    return Status::Ok();
  }
  Status Object(const char* key, Json* out) {
    TARN_ASSIGN_OR_RETURN(const Json* v, Find(key));
    if (!v->is_object()) return Error(key, "an object", *v);
    *out = *v;
    return Status::Ok();
  }

 private:
  Result<const Json*> Find(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) {
      return InvalidArgument(std::string(message_) + ": field '" + key + "' is missing");
    }
    return &*it;
  }
  Result<const Json*> List(const char* key) const {
    TARN_ASSIGN_OR_RETURN(const Json* v, Find(key));
    if (!v->is_array()) return Error(key, "a list", *v);
    if (v->size() > kMaxListCount) {
      return Error(key, "a list of at most " + std::to_string(kMaxListCount) + " values", *v);
    }
    return v;
  }

  const char* message_;
  const Json& j_;
};

// The kind and the origin every epoch_done and valid_done report starts with.
Status ReadOrigin(Fields& f, const char* kind, std::string* read_kind, ReportOrigin* o) {
  TARN_RETURN_IF_ERROR(f.OneOf("kind", read_kind, {kind}));
  TARN_RETURN_IF_ERROR(f.Int("slot", &o->slot));
  TARN_RETURN_IF_ERROR(f.Int("bag", &o->bag));
  TARN_RETURN_IF_ERROR(f.Int("epoch", &o->epoch));
  return f.Int64("term", &o->term);
}

void WriteOrigin(const char* kind, const ReportOrigin& o, Json* j) {
  (*j)["kind"] = kind;
  (*j)["slot"] = o.slot;
  (*j)["bag"] = o.bag;
  (*j)["epoch"] = o.epoch;
  (*j)["term"] = o.term;
}

Status Truncated(const char* message, const Status& wire) {
  return InvalidArgument(std::string(message) + ": " + wire.message());
}

Status CheckDone(const char* message, const net::WireReader& r) {
  if (r.done()) return Status::Ok();
  return InvalidArgument(std::string(message) + ": " + std::to_string(r.left()) +
                         " unexpected bytes at the end");
}

// A float array that must hold exactly `count` values.
Status ReadSlice(const char* message, const char* field, net::WireReader& r, size_t count,
                 std::vector<float>* out) {
  Status st = r.Floats(out, count);
  if (!st.ok()) return InvalidArgument(std::string(message) + ": " + field + ": " + st.message());
  if (out->size() != count) {
    return InvalidArgument(std::string(message) + ": " + field + " holds " +
                           std::to_string(out->size()) + " values, the slice " +
                           std::to_string(count));
  }
  return Status::Ok();
}

}  // namespace

Status CheckNesting(const char* message, const Json& j) {
  std::vector<std::pair<const Json*, int>> stack{{&j, 0}};
  while (!stack.empty()) {
    const auto [v, depth] = stack.back();
    stack.pop_back();
    if (!v->is_structured()) continue;
    if (depth >= kMaxNesting) {
      return InvalidArgument(std::string(message) + ": nested deeper than " +
                             std::to_string(kMaxNesting) + " levels");
    }
    for (const Json& child : *v) stack.push_back({&child, depth + 1});
  }
  return Status::Ok();
}

// ---- Register ----

Json Register::ToJson() const {
  return Json{{"role", role}, {"index", index}, {"node", node}, {"pid", pid}, {"address", address}};
}

Result<Register> Register::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  Register m;
  TARN_RETURN_IF_ERROR(f.OneOf("role", &m.role, {"ps", "worker", "serving"}));
  TARN_RETURN_IF_ERROR(f.Int("index", &m.index));
  TARN_RETURN_IF_ERROR(f.Int("node", &m.node));
  TARN_RETURN_IF_ERROR(f.Int64("pid", &m.pid));
  TARN_RETURN_IF_ERROR(f.String("address", &m.address));
  return m;
}

Json RegisterReply::ToJson() const {
  return Json{{"generation", generation},
              {"heartbeatMs", heartbeat_ms},
              {"maxMissedHeartbeats", max_missed_heartbeats}};
}

Result<RegisterReply> RegisterReply::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  RegisterReply m;
  TARN_RETURN_IF_ERROR(f.Int64("generation", &m.generation));
  TARN_RETURN_IF_ERROR(f.Int("heartbeatMs", &m.heartbeat_ms, 1));
  TARN_RETURN_IF_ERROR(f.Int("maxMissedHeartbeats", &m.max_missed_heartbeats, 1));
  return m;
}

// ---- Heartbeat ----

Json Heartbeat::ToJson() const {
  return Json{{"node", node}, {"bag", bag}, {"epoch", epoch}, {"position", position}};
}

Result<Heartbeat> Heartbeat::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  Heartbeat m;
  TARN_RETURN_IF_ERROR(f.Int("node", &m.node));
  TARN_RETURN_IF_ERROR(f.Int("bag", &m.bag));
  TARN_RETURN_IF_ERROR(f.Int("epoch", &m.epoch));
  TARN_RETURN_IF_ERROR(f.Int64("position", &m.position));
  return m;
}

Json HeartbeatReply::ToJson() const { return Json{{"stop", stop}}; }

Result<HeartbeatReply> HeartbeatReply::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  HeartbeatReply m;
  TARN_RETURN_IF_ERROR(f.Bool("stop", &m.stop));
  return m;
}

// ---- reports ----

Json EpochDoneReport::ToJson() const {
  Json j = Json::object();
  WriteOrigin(kKind, origin, &j);
  j["loss"] = sums.loss;
  j["weight"] = sums.weight;
  j["rows"] = sums.rows;
  j["shifuError"] = sums.shifu.sum;
  j["shifuRows"] = sums.shifu.rows;
  j["seconds"] = seconds;
  j["stale"] = stale;
  j["bytes"] = bytes;
  return j;
}

Result<EpochDoneReport> EpochDoneReport::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  EpochDoneReport r;
  std::string kind;
  TARN_RETURN_IF_ERROR(ReadOrigin(f, kKind, &kind, &r.origin));
  TARN_RETURN_IF_ERROR(f.Double("loss", &r.sums.loss, /*allow_nan=*/true));
  TARN_RETURN_IF_ERROR(f.Double("weight", &r.sums.weight, false, 0));
  TARN_RETURN_IF_ERROR(f.Int64("rows", &r.sums.rows));
  TARN_RETURN_IF_ERROR(f.Double("shifuError", &r.sums.shifu.sum, /*allow_nan=*/true));
  TARN_RETURN_IF_ERROR(f.Double("shifuRows", &r.sums.shifu.rows, false, 0));
  TARN_RETURN_IF_ERROR(f.Double("seconds", &r.seconds, false, 0));
  TARN_RETURN_IF_ERROR(f.Int64("stale", &r.stale));
  TARN_RETURN_IF_ERROR(f.UInt64("bytes", &r.bytes));
  return r;
}

Json ValidDoneReport::ToJson() const {
  Json j = Json::object();
  WriteOrigin(kKind, origin, &j);
  j["loss"] = summary.loss;
  j["weight"] = summary.weight;
  j["shifuError"] = summary.shifu.sum;
  j["shifuRows"] = summary.shifu.rows;
  j["pos"] = summary.positive;
  j["neg"] = summary.negative;
  return j;
}

Result<ValidDoneReport> ValidDoneReport::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  ValidDoneReport r;
  std::string kind;
  TARN_RETURN_IF_ERROR(ReadOrigin(f, kKind, &kind, &r.origin));
  TARN_RETURN_IF_ERROR(f.Double("loss", &r.summary.loss, /*allow_nan=*/true));
  TARN_RETURN_IF_ERROR(f.Double("weight", &r.summary.weight, false, 0));
  TARN_RETURN_IF_ERROR(f.Double("shifuError", &r.summary.shifu.sum, /*allow_nan=*/true));
  TARN_RETURN_IF_ERROR(f.Double("shifuRows", &r.summary.shifu.rows, false, 0));
  TARN_RETURN_IF_ERROR(f.Bins("pos", &r.summary.positive, kMaxReportBins));
  TARN_RETURN_IF_ERROR(f.Bins("neg", &r.summary.negative, kMaxReportBins));
  if (r.summary.positive.size() != r.summary.negative.size()) {
    return InvalidArgument(std::string(kName) + ": fields 'pos' and 'neg' differ in length (" +
                           std::to_string(r.summary.positive.size()) + " and " +
                           std::to_string(r.summary.negative.size()) + ")");
  }
  return r;
}

Report Report::Await(std::string reason) {
  Report r;
  r.kind = "await";
  r.reason = std::move(reason);
  return r;
}

Report Report::Of(EpochDoneReport done) {
  Report r;
  r.kind = EpochDoneReport::kKind;
  r.epoch_done = std::move(done);
  return r;
}

Report Report::Of(ValidDoneReport done) {
  Report r;
  r.kind = ValidDoneReport::kKind;
  r.valid_done = std::move(done);
  return r;
}

const ReportOrigin* Report::origin() const {
  if (kind == EpochDoneReport::kKind) return &epoch_done.origin;
  if (kind == ValidDoneReport::kKind) return &valid_done.origin;
  return nullptr;
}

Json Report::ToJson() const {
  Json j = kind == EpochDoneReport::kKind   ? epoch_done.ToJson()
           : kind == ValidDoneReport::kKind ? valid_done.ToJson()
                                            : Json{{"kind", kind}};
  j["node"] = node;
  j["seq"] = seq;
  if (!reason.empty()) j["reason"] = reason;
  return j;
}

Result<Report> Report::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  Report m;
  TARN_RETURN_IF_ERROR(
      f.OneOf("kind", &m.kind, {"await", EpochDoneReport::kKind, ValidDoneReport::kKind}));
  TARN_RETURN_IF_ERROR(f.Int("node", &m.node));
  TARN_RETURN_IF_ERROR(f.Int64("seq", &m.seq));
  if (f.Has("reason")) TARN_RETURN_IF_ERROR(f.String("reason", &m.reason));
  // The body, whole: a report is taken or refused as one.
  if (m.kind == EpochDoneReport::kKind) {
    TARN_ASSIGN_OR_RETURN(m.epoch_done, EpochDoneReport::FromJson(j));
  } else if (m.kind == ValidDoneReport::kKind) {
    TARN_ASSIGN_OR_RETURN(m.valid_done, ValidDoneReport::FromJson(j));
  }
  return m;
}

// ---- Directive ----

Json Directive::ToJson() const {
  Json j{{"action", action}, {"seq", seq}};
  if (has_slot()) {
    j["slot"] = slot;
    j["bag"] = bag;
    j["epoch"] = epoch;
    j["term"] = term;
    j["position"] = position;
    j["ps"] = ps;
    j["shards"] = shards;
    if (!job.is_null()) j["job"] = job;
  }
  return j;
}

Result<Directive> Directive::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  Directive m;
  TARN_RETURN_IF_ERROR(f.OneOf("action", &m.action, {"train", "validate", "standby", "finish"}));
  TARN_RETURN_IF_ERROR(f.Int64("seq", &m.seq));
  if (!m.has_slot()) return m;
  TARN_RETURN_IF_ERROR(f.Int("slot", &m.slot));
  TARN_RETURN_IF_ERROR(f.Int("bag", &m.bag));
  TARN_RETURN_IF_ERROR(f.Int("epoch", &m.epoch));
  TARN_RETURN_IF_ERROR(f.Int64("term", &m.term));
  TARN_RETURN_IF_ERROR(f.Int64("position", &m.position));
  TARN_RETURN_IF_ERROR(f.StringList("ps", &m.ps));
  if (m.ps.empty()) return f.Error("ps", "a list of at least one address", j.at("ps"));
  TARN_RETURN_IF_ERROR(f.IntList("shards", &m.shards));
  if (f.Has("job")) TARN_RETURN_IF_ERROR(f.Object("job", &m.job));
  return m;
}

// ---- parameter server control ----

Json Configure::ToJson() const {
  return Json{{"term", term}, {"bag", bag}, {"epoch", epoch},        {"begin", begin},
              {"end", end},   {"job", job}, {"initSeed", init_seed}, {"load", load}};
}

Result<Configure> Configure::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  Configure m;
  TARN_RETURN_IF_ERROR(f.Int64("term", &m.term));
  TARN_RETURN_IF_ERROR(f.Int("bag", &m.bag));
  TARN_RETURN_IF_ERROR(f.Int("epoch", &m.epoch));
  TARN_RETURN_IF_ERROR(f.UInt64("begin", &m.begin));
  TARN_RETURN_IF_ERROR(f.UInt64("end", &m.end, m.begin + 1, UINT64_MAX, "an integer > begin"));
  TARN_RETURN_IF_ERROR(f.Object("job", &m.job));
  TARN_RETURN_IF_ERROR(f.UInt64("initSeed", &m.init_seed));
  TARN_RETURN_IF_ERROR(f.String("load", &m.load));
  return m;
}

Json StartEpoch::ToJson() const { return Json{{"term", term}, {"epoch", epoch}, {"slots", slots}}; }

Result<StartEpoch> StartEpoch::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  StartEpoch m;
  TARN_RETURN_IF_ERROR(f.Int64("term", &m.term));
  TARN_RETURN_IF_ERROR(f.Int("epoch", &m.epoch));
  TARN_RETURN_IF_ERROR(f.IntList("slots", &m.slots));
  return m;
}

Json SlotDone::ToJson() const { return Json{{"term", term}, {"slot", slot}}; }

Result<SlotDone> SlotDone::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  SlotDone m;
  TARN_RETURN_IF_ERROR(f.Int64("term", &m.term));
  TARN_RETURN_IF_ERROR(f.Int("slot", &m.slot));
  return m;
}

Json Checkpoint::ToJson() const { return Json{{"epoch", epoch}, {"path", path}}; }

Result<Checkpoint> Checkpoint::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  Checkpoint m;
  TARN_RETURN_IF_ERROR(f.Int("epoch", &m.epoch));
  TARN_RETURN_IF_ERROR(f.String("path", &m.path, /*allow_empty=*/false));
  return m;
}

Json CheckpointReply::ToJson() const { return Json{{"crc", crc}, {"bytes", bytes}}; }

Result<CheckpointReply> CheckpointReply::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  uint64_t crc = 0;
  TARN_RETURN_IF_ERROR(f.UInt64("crc", &crc, 0, UINT32_MAX));
  CheckpointReply m;
  m.crc = static_cast<uint32_t>(crc);
  TARN_RETURN_IF_ERROR(f.UInt64("bytes", &m.bytes, 1, UINT64_MAX));
  return m;
}

Json Reset::ToJson() const { return Json{{"term", term}}; }

Result<Reset> Reset::FromJson(const Json& j) {
  Fields f(kName, j);
  TARN_RETURN_IF_ERROR(f.CheckObject());
  Reset m;
  TARN_RETURN_IF_ERROR(f.Int64("term", &m.term));
  return m;
}

Json GetParams::ToJson() const { return Json::object(); }

Result<GetParams> GetParams::FromJson(const Json& j) {
  TARN_RETURN_IF_ERROR(Fields(kName, j).CheckObject());
  return GetParams{};
}

Json Shutdown::ToJson() const { return Json::object(); }

Result<Shutdown> Shutdown::FromJson(const Json& j) {
  TARN_RETURN_IF_ERROR(Fields(kName, j).CheckObject());
  return Shutdown{};
}

// ---- binary ----

std::string Push::Encode(int64_t term, int slot, int64_t step, double weight,
                         std::span<const float> gradient) {
  net::WireWriter w;
  w.I64(term);
  w.U32(static_cast<uint32_t>(slot));
  w.I64(step);
  w.F64(weight);
  w.Floats(gradient);
  return w.Take();
}

Status Push::Decode(std::string_view payload, size_t slice_size, Push* out) {
  constexpr const char* kMessage = "kPush";
  net::WireReader r(payload);
  uint32_t slot = 0;
  Status st = r.I64(&out->term);
  if (st.ok()) st = r.U32(&slot);
  if (st.ok()) st = r.I64(&out->step);
  if (st.ok()) st = r.F64(&out->weight);
  if (!st.ok()) return Truncated(kMessage, st);
  if (slot > static_cast<uint32_t>(INT_MAX)) {
    return InvalidArgument("kPush: slot " + std::to_string(slot) + " is out of range");
  }
  out->slot = static_cast<int>(slot);
  if (!std::isfinite(out->weight) || out->weight < 0) {
    return InvalidArgument("kPush: weight must be a finite number >= 0, got " +
                           std::to_string(out->weight));
  }
  TARN_RETURN_IF_ERROR(ReadSlice(kMessage, "gradient", r, slice_size, &out->gradient));
  return CheckDone(kMessage, r);
}

std::string Pull::Encode(int64_t term) {
  net::WireWriter w;
  w.I64(term);
  return w.Take();
}

Result<Pull> Pull::Decode(std::string_view payload) {
  net::WireReader r(payload);
  Pull m;
  Status st = r.I64(&m.term);
  if (!st.ok()) return Truncated("kPull", st);
  TARN_RETURN_IF_ERROR(CheckDone("kPull", r));
  return m;
}

std::string ParamsAnswer::Encode(uint8_t status, int64_t step, std::span<const float> params) {
  net::WireWriter w;
  w.U8(status);
  w.I64(step);
  w.Floats(params);
  return w.Take();
}

Status ParamsAnswer::Decode(std::string_view payload, size_t slice_size, ParamsAnswer* out) {
  constexpr const char* kMessage = "parameter server answer";
  net::WireReader r(payload);
  Status st = r.U8(&out->status);
  if (st.ok()) st = r.I64(&out->step);
  if (!st.ok()) return Truncated(kMessage, st);
  if (out->status != kApplied && out->status != kStale) {
    return InvalidArgument(std::string(kMessage) + ": status " + std::to_string(out->status) +
                           " is neither applied (0) nor stale (1)");
  }
  TARN_RETURN_IF_ERROR(ReadSlice(kMessage, "parameters", r, slice_size, &out->params));
  return CheckDone(kMessage, r);
}

std::string Params::Encode(std::span<const float> params) {
  net::WireWriter w;
  w.Floats(params);
  return w.Take();
}

Result<std::vector<float>> Params::Decode(std::string_view payload, size_t slice_size) {
  constexpr const char* kMessage = "kGetParams reply";
  net::WireReader r(payload);
  std::vector<float> params;
  TARN_RETURN_IF_ERROR(ReadSlice(kMessage, "parameters", r, slice_size, &params));
  TARN_RETURN_IF_ERROR(CheckDone(kMessage, r));
  return params;
}

}  // namespace msg
}  // namespace tarn::runtime
