#include "runtime/worker_reports.h"

#include <string>
#include <vector>

namespace tarn::runtime {

namespace {

using data::Json;

template <typename T>
Status Read(const Json& j, const char* kind, const char* field, T* out) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_number()) {
    return InvalidArgument(std::string(kind) + " report: field '" + field +
                           "' is missing or not a number");
  }
  *out = it->get<T>();
  return Status::Ok();
}

Status ReadBins(const Json& j, const char* kind, const char* field, std::vector<double>* out) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_array()) {
    return InvalidArgument(std::string(kind) + " report: field '" + field +
                           "' is missing or not an array");
  }
  out->clear();
  for (const auto& v : *it) {
    if (!v.is_number()) {
      return InvalidArgument(std::string(kind) + " report: field '" + field +
                             "' holds a value that is not a number");
    }
    out->push_back(v.get<double>());
  }
  return Status::Ok();
}

void WriteOrigin(const char* kind, const ReportOrigin& o, Json* j) {
  (*j)["kind"] = kind;
  (*j)["slot"] = o.slot;
  (*j)["bag"] = o.bag;
  (*j)["epoch"] = o.epoch;
  (*j)["term"] = o.term;
}

Status ReadOrigin(const Json& j, const char* kind, ReportOrigin* o) {
  if (!j.is_object() || j.value("kind", "") != kind) {
    return InvalidArgument(std::string("not a ") + kind + " report: field 'kind'");
  }
  TARN_RETURN_IF_ERROR(Read(j, kind, "slot", &o->slot));
  TARN_RETURN_IF_ERROR(Read(j, kind, "bag", &o->bag));
  TARN_RETURN_IF_ERROR(Read(j, kind, "epoch", &o->epoch));
  return Read(j, kind, "term", &o->term);
}

}  // namespace

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
  EpochDoneReport r;
  TARN_RETURN_IF_ERROR(ReadOrigin(j, kKind, &r.origin));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "loss", &r.sums.loss));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "weight", &r.sums.weight));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "rows", &r.sums.rows));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "shifuError", &r.sums.shifu.sum));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "shifuRows", &r.sums.shifu.rows));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "seconds", &r.seconds));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "stale", &r.stale));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "bytes", &r.bytes));
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
  ValidDoneReport r;
  TARN_RETURN_IF_ERROR(ReadOrigin(j, kKind, &r.origin));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "loss", &r.summary.loss));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "weight", &r.summary.weight));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "shifuError", &r.summary.shifu.sum));
  TARN_RETURN_IF_ERROR(Read(j, kKind, "shifuRows", &r.summary.shifu.rows));
  TARN_RETURN_IF_ERROR(ReadBins(j, kKind, "pos", &r.summary.positive));
  TARN_RETURN_IF_ERROR(ReadBins(j, kKind, "neg", &r.summary.negative));
  if (r.summary.positive.size() != r.summary.negative.size()) {
    return InvalidArgument("valid_done report: fields 'pos' and 'neg' differ in length");
  }
  return r;
}

}  // namespace tarn::runtime
