#include "stats/performance.h"

#include <algorithm>  // for stable_sort, max
#include <cmath>      // for isnan, isfinite, fabs
#include <cstdio>     // for snprintf
#include <cstdlib>    // for strtod
#include <limits>     // for numeric_limits

namespace tarn::stats {
namespace {

// Relative slack for the weighted step tests: running sums of weights drift.
constexpr double kWeightSlack = 1e-9;
// The chart curves keep a point once a rate has moved this much.
constexpr double kCurveStep = 1.0 / 300.0;

double Ratio(double num, double den) { return den > 0.0 ? num / den : 0.0; }

// Totals of a prepared record set.
struct Totals {
  long long pos = 0, neg = 0;
  double wpos = 0.0, wneg = 0.0;
  long long n() const { return pos + neg; }
  double w() const { return wpos + wneg; }
};

// The running confusion state after some records were actioned.
struct State {
  long long tp = 0, fp = 0;
  double wtp = 0.0, wfp = 0.0;
};

// Shifu keeps a bucket point's score as DecimalFormat("#.######") prints it.
double SixDecimals(double score) {
  if (!std::isfinite(score)) return score;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6f", score);
  return std::strtod(buf, nullptr);
}

// Shifu's AreaUnderCurve.calculateArea: trapezoids between successive points.
template <typename X, typename Y>
double BucketArea(const std::vector<PerformanceObject>& list, X x, Y y) {
  double area = 0.0;
  for (size_t i = 1; i < list.size(); ++i) {
    area += (y(list[i]) + y(list[i - 1])) * (x(list[i]) - x(list[i - 1])) / 2.0;
  }
  return area;
}

PerformanceObject MakeObject(const State& s, const Totals& t, double score) {
  PerformanceObject po;
  po.bin_lowest_score = SixDecimals(score);
  po.tp = static_cast<double>(s.tp);
  po.fp = static_cast<double>(s.fp);
  po.fn = static_cast<double>(t.pos - s.tp);
  po.tn = static_cast<double>(t.neg - s.fp);
  po.weighted_tp = s.wtp;
  po.weighted_fp = s.wfp;
  // Running sums drift: a class with no record left has weight exactly 0.
  po.weighted_fn = s.tp == t.pos ? 0.0 : std::max(0.0, t.wpos - s.wtp);
  po.weighted_tn = s.fp == t.neg ? 0.0 : std::max(0.0, t.wneg - s.wfp);

  const double n = static_cast<double>(t.n());
  po.action_rate = Ratio(po.tp + po.fp, n);
  po.recall = Ratio(po.tp, static_cast<double>(t.pos));
  po.precision = Ratio(po.tp, po.tp + po.fp);
  po.fpr = Ratio(po.fp, static_cast<double>(t.neg));
  po.ftpr = Ratio(po.fp, po.tp);
  po.lift_unit = Ratio(po.precision, Ratio(static_cast<double>(t.pos), n));

  po.weighted_action_rate = Ratio(s.wtp + s.wfp, t.w());
  po.weighted_recall = Ratio(s.wtp, t.wpos);
  po.weighted_precision = Ratio(s.wtp, s.wtp + s.wfp);
  po.weighted_fpr = Ratio(s.wfp, t.wneg);
  po.weighted_ftpr = Ratio(s.wfp, s.wtp);
  po.weight_lift_unit = Ratio(po.weighted_precision, Ratio(t.wpos, t.w()));
  return po;
}

// The first point of every list: nothing actioned. Shifu sets the undefined
// precision to 1 and lift and ftpr to 0.
PerformanceObject FirstObject(const Totals& t, double score) {
  PerformanceObject po = MakeObject(State{}, t, score);
  po.precision = 1.0;
  po.weighted_precision = 1.0;
  po.lift_unit = po.weight_lift_unit = 0.0;
  po.ftpr = po.weighted_ftpr = 0.0;
  return po;
}

// One bucketed list: keeps a point each time `value / denominator` reaches
// the next k / B. Exact for integer counts; weighted values get a slack.
class BucketList {
 public:
  BucketList(std::vector<PerformanceObject>* out, int buckets, double denominator, bool exact)
      : out_(out), buckets_(buckets), den_(denominator), exact_(exact) {}

  // Whether `value`, the numerator after the current record, reaches a step.
  bool Due(double value) const { return den_ > 0.0 && next_ <= buckets_ && Reached(value, next_); }
  void Offer(double value, const PerformanceObject& po) {
    while (Due(value)) Emit(po);
  }
  // The last record brings every rate to 1; covers any drift left.
  void Finish(const PerformanceObject& po) {
    if (den_ <= 0.0) return;
    while (next_ <= buckets_) Emit(po);
  }

 private:
  bool Reached(double value, int k) const {
    const double lhs = value * buckets_;
    const double rhs = static_cast<double>(k) * den_;
    return exact_ ? lhs >= rhs : lhs >= rhs * (1.0 - kWeightSlack);
  }
  void Emit(const PerformanceObject& po) {
    out_->push_back(po);
    out_->back().bin_num = next_++;
  }

  std::vector<PerformanceObject>* out_;
  int buckets_;
  double den_;
  bool exact_;
  int next_ = 1;
};

// Exact AUCs over distinct-score points, and a thinned curve for charts.
class CurveBuilder {
 public:
  CurveBuilder(double pos, double neg, std::vector<CurvePoint>* curve)
      : pos_(pos), neg_(neg), curve_(curve) {
    curve_->push_back(CurvePoint{0.0, 0.0, 1.0, 0.0, 0.0, 0.0});
  }

  // Called after the last record of a tie group; tp and fp are cumulative.
  void Point(double tp, double fp, double score, bool last) {
    const double recall = Ratio(tp, pos_);
    const double fpr = Ratio(fp, neg_);
    // A zero-weight head leaves precision undefined: keep the previous one.
    const double precision = tp + fp > 0.0 ? tp / (tp + fp) : prev_precision_;
    if (recall - fpr > ks_) {
      ks_ = recall - fpr;
      ks_score_ = score;
    }
    roc_area_ += (fpr - prev_fpr_) * (recall + prev_recall_) / 2.0;
    pr_area_ += (recall - prev_recall_) * (precision + prev_precision_) / 2.0;
    prev_fpr_ = fpr;
    prev_recall_ = recall;
    prev_precision_ = precision;

    const double action = Ratio(tp + fp, pos_ + neg_);
    const CurvePoint& k = curve_->back();
    if (last || std::fabs(action - k.action_rate) >= kCurveStep ||
        std::fabs(recall - k.recall) >= kCurveStep || std::fabs(fpr - k.fpr) >= kCurveStep) {
      curve_->push_back(CurvePoint{action, recall, precision, fpr, Ratio(recall, action), score});
    }
  }

  double RocArea() const { return pos_ > 0.0 && neg_ > 0.0 ? roc_area_ : 0.0; }
  double PrArea() const { return pos_ > 0.0 ? pr_area_ : 0.0; }
  double Ks() const { return pos_ > 0.0 && neg_ > 0.0 ? ks_ : 0.0; }
  double KsScore() const { return ks_score_; }

 private:
  double pos_, neg_;
  std::vector<CurvePoint>* curve_;
  double prev_fpr_ = 0.0, prev_recall_ = 0.0, prev_precision_ = 1.0;
  double roc_area_ = 0.0, pr_area_ = 0.0;
  double ks_ = 0.0, ks_score_ = 0.0;
};

}  // namespace

long long PrepareRecords(std::vector<ScoredRecord>* records) {
  const size_t before = records->size();
  std::erase_if(*records, [](const ScoredRecord& r) {
    return std::isnan(r.score) || (r.target != 0 && r.target != 1);
  });
  for (ScoredRecord& r : *records) {
    if (!std::isfinite(r.weight) || r.weight < 0.0) r.weight = 1.0;
  }
  std::stable_sort(records->begin(), records->end(),
                   [](const ScoredRecord& a, const ScoredRecord& b) { return a.score > b.score; });
  return static_cast<long long>(before - records->size());
}

PerformanceResult EvaluateSorted(const std::vector<ScoredRecord>& sorted,
                                 const PerformanceOptions& options) {
  PerformanceResult r;
  const int buckets = std::max(1, options.bucket_num);
  r.bucket_num = buckets;

  Totals t;
  double observed_max = 0.0, observed_min = 0.0;
  bool any_finite = false;
  for (const ScoredRecord& rec : sorted) {
    if (rec.target == 1) {
      ++t.pos;
      t.wpos += rec.weight;
    } else {
      ++t.neg;
      t.wneg += rec.weight;
    }
    if (rec.weight != 1.0) r.weighted = true;
    if (std::isfinite(rec.score)) {
      observed_max = any_finite ? std::max(observed_max, rec.score) : rec.score;
      observed_min = any_finite ? std::min(observed_min, rec.score) : rec.score;
      any_finite = true;
    }
  }
  r.total = t.n();
  r.positives = t.pos;
  r.weighted_total = t.w();
  r.weighted_positives = t.wpos;
  r.max_score = options.max_score.value_or(observed_max);
  r.min_score = options.min_score.value_or(observed_min);

  const PerformanceObject first = FirstObject(t, r.max_score);
  for (auto* list : {&r.roc, &r.pr, &r.gains, &r.weighted_roc, &r.weighted_pr, &r.weighted_gains,
                     &r.model_score_list}) {
    list->reserve(static_cast<size_t>(buckets) + 1);
    list->push_back(first);
  }

  BucketList roc(&r.roc, buckets, static_cast<double>(t.neg), true);
  BucketList pr(&r.pr, buckets, static_cast<double>(t.pos), true);
  BucketList gains(&r.gains, buckets, static_cast<double>(t.n()), true);
  BucketList wroc(&r.weighted_roc, buckets, t.wneg, false);
  BucketList wpr(&r.weighted_pr, buckets, t.wpos, false);
  BucketList wgains(&r.weighted_gains, buckets, t.w(), false);

  CurveBuilder curve(static_cast<double>(t.pos), static_cast<double>(t.neg), &r.curve);
  CurveBuilder wcurve(t.wpos, t.wneg, &r.weighted_curve);

  // model_score_list: point k holds the records scoring >= max - k·step.
  const double step = (r.max_score - r.min_score) / buckets;
  int score_bin = 1;
  double band_count = 0.0, band_weight = 0.0;
  auto emit_score_bin = [&](const State& s, double threshold) {
    PerformanceObject po = s.tp + s.fp == 0 ? first : MakeObject(s, t, 0.0);
    po.bin_lowest_score = threshold;
    po.bin_num = score_bin++;
    po.score_count = band_count;
    po.score_wgt_count = band_weight;
    band_count = band_weight = 0.0;
    r.model_score_list.push_back(po);
  };

  State s;
  PerformanceObject po;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const ScoredRecord& rec = sorted[i];
    while (score_bin < buckets && rec.score < r.max_score - score_bin * step) {
      emit_score_bin(s, r.max_score - score_bin * step);
    }
    if (rec.target == 1) {
      ++s.tp;
      s.wtp += rec.weight;
    } else {
      ++s.fp;
      s.wfp += rec.weight;
    }
    band_count += 1.0;
    band_weight += rec.weight;

    const double fp = static_cast<double>(s.fp), tp = static_cast<double>(s.tp);
    if (roc.Due(fp) || pr.Due(tp) || gains.Due(tp + fp) || wroc.Due(s.wfp) || wpr.Due(s.wtp) ||
        wgains.Due(s.wtp + s.wfp) || i + 1 == sorted.size()) {
      po = MakeObject(s, t, rec.score);
    }
    roc.Offer(fp, po);
    pr.Offer(tp, po);
    gains.Offer(tp + fp, po);
    wroc.Offer(s.wfp, po);
    wpr.Offer(s.wtp, po);
    wgains.Offer(s.wtp + s.wfp, po);

    const bool last = i + 1 == sorted.size();
    if (last || sorted[i + 1].score != rec.score) {
      curve.Point(tp, fp, rec.score, last);
      wcurve.Point(s.wtp, s.wfp, rec.score, last);
    }
  }
  if (!sorted.empty()) {
    wroc.Finish(po);
    wpr.Finish(po);
    wgains.Finish(po);
  }
  while (score_bin <= buckets) {
    emit_score_bin(s, score_bin == buckets ? r.min_score : r.max_score - score_bin * step);
  }

  r.exact_area_under_roc = curve.RocArea();
  r.exact_area_under_pr = curve.PrArea();
  r.exact_weighted_area_under_roc = wcurve.RocArea();
  r.exact_weighted_area_under_pr = wcurve.PrArea();
  r.ks = curve.Ks();
  r.ks_score = curve.KsScore();
  r.weighted_ks = wcurve.Ks();
  r.weighted_ks_score = wcurve.KsScore();
  r.area_under_roc = BucketArea(
      r.roc, [](const PerformanceObject& p) { return p.fpr; },
      [](const PerformanceObject& p) { return p.recall; });
  r.weighted_area_under_roc = BucketArea(
      r.weighted_roc, [](const PerformanceObject& p) { return p.weighted_fpr; },
      [](const PerformanceObject& p) { return p.weighted_recall; });
  r.area_under_pr = BucketArea(
      r.pr, [](const PerformanceObject& p) { return p.recall; },
      [](const PerformanceObject& p) { return p.precision; });
  r.weighted_area_under_pr = BucketArea(
      r.weighted_pr, [](const PerformanceObject& p) { return p.weighted_recall; },
      [](const PerformanceObject& p) { return p.weighted_precision; });
  return r;
}

PerformanceResult EvaluatePerformance(std::vector<ScoredRecord> records,
                                      const PerformanceOptions& options) {
  const long long skipped = PrepareRecords(&records);
  PerformanceResult r = EvaluateSorted(records, options);
  r.skipped = skipped;
  return r;
}

PerformanceResult EvaluatePerformance(std::vector<ScoredRecord> records, int bucket_num) {
  PerformanceOptions options;
  options.bucket_num = bucket_num;
  return EvaluatePerformance(std::move(records), options);
}

// ---- JSON ----

Json PerformanceObjectToJson(const PerformanceObject& po) {
  Json j = Json::object();
  j["binNum"] = po.bin_num;
  j["binLowestScore"] = po.bin_lowest_score;
  j["actionRate"] = po.action_rate;
  j["weightedActionRate"] = po.weighted_action_rate;
  j["recall"] = po.recall;
  j["weightedRecall"] = po.weighted_recall;
  j["precision"] = po.precision;
  j["weightedPrecision"] = po.weighted_precision;
  j["fpr"] = po.fpr;
  j["weightedFpr"] = po.weighted_fpr;
  j["ftpr"] = po.ftpr;
  j["weightedFtpr"] = po.weighted_ftpr;
  j["liftUnit"] = po.lift_unit;
  j["weightLiftUnit"] = po.weight_lift_unit;
  j["scoreCount"] = po.score_count;
  j["scoreWgtCount"] = po.score_wgt_count;
  j["tp"] = po.tp;
  j["fp"] = po.fp;
  j["tn"] = po.tn;
  j["fn"] = po.fn;
  j["weightedTp"] = po.weighted_tp;
  j["weightedFp"] = po.weighted_fp;
  j["weightedTn"] = po.weighted_tn;
  j["weightedFn"] = po.weighted_fn;
  return j;
}

namespace {

Json ListToJson(const std::vector<PerformanceObject>& list) {
  Json a = Json::array();
  for (const PerformanceObject& po : list) a.push_back(PerformanceObjectToJson(po));
  return a;
}

// A number, or Jackson's quoted "NaN" / "Infinity" / "-Infinity"; absent or
// null keeps *out.
Status ReadNumber(const Json& obj, const char* key, const std::string& where, double* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (it->is_number()) {
    *out = it->get<double>();
    return Status::Ok();
  }
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (s == "NaN") {
      *out = std::numeric_limits<double>::quiet_NaN();
      return Status::Ok();
    }
    if (s == "Infinity" || s == "-Infinity") {
      *out = (s[0] == '-' ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
      return Status::Ok();
    }
  }
  return Corrupt(where + "." + key + ": expected a number, found " + data::JsonTypeName(*it));
}

Status ReadObject(const Json& j, const std::string& where, PerformanceObject* po) {
  if (!j.is_object()) return Corrupt(where + ": expected an object");
  double bin = 0.0;
  TARN_RETURN_IF_ERROR(ReadNumber(j, "binNum", where, &bin));
  po->bin_num = static_cast<int>(bin);
  struct Field {
    const char* key;
    double PerformanceObject::*member;
  };
  static const Field kFields[] = {
      {"binLowestScore", &PerformanceObject::bin_lowest_score},
      {"actionRate", &PerformanceObject::action_rate},
      {"weightedActionRate", &PerformanceObject::weighted_action_rate},
      {"recall", &PerformanceObject::recall},
      {"weightedRecall", &PerformanceObject::weighted_recall},
      {"precision", &PerformanceObject::precision},
      {"weightedPrecision", &PerformanceObject::weighted_precision},
      {"fpr", &PerformanceObject::fpr},
      {"weightedFpr", &PerformanceObject::weighted_fpr},
      {"ftpr", &PerformanceObject::ftpr},
      {"weightedFtpr", &PerformanceObject::weighted_ftpr},
      {"liftUnit", &PerformanceObject::lift_unit},
      {"weightLiftUnit", &PerformanceObject::weight_lift_unit},
      {"scoreCount", &PerformanceObject::score_count},
      {"scoreWgtCount", &PerformanceObject::score_wgt_count},
      {"tp", &PerformanceObject::tp},
      {"fp", &PerformanceObject::fp},
      {"tn", &PerformanceObject::tn},
      {"fn", &PerformanceObject::fn},
      {"weightedTp", &PerformanceObject::weighted_tp},
      {"weightedFp", &PerformanceObject::weighted_fp},
      {"weightedTn", &PerformanceObject::weighted_tn},
      {"weightedFn", &PerformanceObject::weighted_fn},
  };
  for (const Field& f : kFields)
    TARN_RETURN_IF_ERROR(ReadNumber(j, f.key, where, &(po->*f.member)));
  return Status::Ok();
}

Status ReadList(const Json& j, const char* key, std::vector<PerformanceObject>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return Corrupt(std::string(key) + ": expected a list");
  for (size_t i = 0; i < it->size(); ++i) {
    PerformanceObject po;
    TARN_RETURN_IF_ERROR(
        ReadObject((*it)[i], std::string(key) + "[" + std::to_string(i) + "]", &po));
    out->push_back(po);
  }
  return Status::Ok();
}

}  // namespace

Json PerformanceToJson(const PerformanceResult& r) {
  Json j = Json::object();
  j["version"] = kPerformanceVersion;
  j["areaUnderRoc"] = r.area_under_roc;
  j["weightedAreaUnderRoc"] = r.weighted_area_under_roc;
  j["areaUnderPr"] = r.area_under_pr;
  j["weightedAreaUnderPr"] = r.weighted_area_under_pr;
  j["exactAreaUnderRoc"] = r.exact_area_under_roc;
  j["exactWeightedAreaUnderRoc"] = r.exact_weighted_area_under_roc;
  j["exactAreaUnderPr"] = r.exact_area_under_pr;
  j["exactWeightedAreaUnderPr"] = r.exact_weighted_area_under_pr;
  j["pr"] = ListToJson(r.pr);
  j["weightedPr"] = ListToJson(r.weighted_pr);
  j["roc"] = ListToJson(r.roc);
  j["weightedRoc"] = ListToJson(r.weighted_roc);
  j["gains"] = ListToJson(r.gains);
  j["weightedGains"] = ListToJson(r.weighted_gains);
  j["modelScoreList"] = ListToJson(r.model_score_list);
  j["mape"] = r.mape;
  j["rmse"] = r.rmse;
  return j;
}

Result<PerformanceResult> PerformanceFromJson(const Json& j) {
  if (!j.is_object()) return Corrupt("EvalPerformance.json: expected an object");
  PerformanceResult r;
  const std::string where = "EvalPerformance.json";
  TARN_RETURN_IF_ERROR(ReadNumber(j, "areaUnderRoc", where, &r.area_under_roc));
  TARN_RETURN_IF_ERROR(ReadNumber(j, "weightedAreaUnderRoc", where, &r.weighted_area_under_roc));
  TARN_RETURN_IF_ERROR(ReadNumber(j, "areaUnderPr", where, &r.area_under_pr));
  TARN_RETURN_IF_ERROR(ReadNumber(j, "weightedAreaUnderPr", where, &r.weighted_area_under_pr));
  // tarn's exact areas; Shifu's file has none: they stay 0 then.
  TARN_RETURN_IF_ERROR(ReadNumber(j, "exactAreaUnderRoc", where, &r.exact_area_under_roc));
  TARN_RETURN_IF_ERROR(
      ReadNumber(j, "exactWeightedAreaUnderRoc", where, &r.exact_weighted_area_under_roc));
  TARN_RETURN_IF_ERROR(ReadNumber(j, "exactAreaUnderPr", where, &r.exact_area_under_pr));
  TARN_RETURN_IF_ERROR(
      ReadNumber(j, "exactWeightedAreaUnderPr", where, &r.exact_weighted_area_under_pr));
  TARN_RETURN_IF_ERROR(ReadNumber(j, "mape", where, &r.mape));
  TARN_RETURN_IF_ERROR(ReadNumber(j, "rmse", where, &r.rmse));
  TARN_RETURN_IF_ERROR(ReadList(j, "pr", &r.pr));
  TARN_RETURN_IF_ERROR(ReadList(j, "weightedPr", &r.weighted_pr));
  TARN_RETURN_IF_ERROR(ReadList(j, "roc", &r.roc));
  TARN_RETURN_IF_ERROR(ReadList(j, "weightedRoc", &r.weighted_roc));
  TARN_RETURN_IF_ERROR(ReadList(j, "gains", &r.gains));
  TARN_RETURN_IF_ERROR(ReadList(j, "weightedGains", &r.weighted_gains));
  TARN_RETURN_IF_ERROR(ReadList(j, "modelScoreList", &r.model_score_list));

  r.bucket_num = r.gains.empty() ? 0 : static_cast<int>(r.gains.size()) - 1;
  if (!r.gains.empty()) {
    const PerformanceObject& f = r.gains.front();
    r.positives = static_cast<long long>(f.tp + f.fn);
    r.total = static_cast<long long>(f.tp + f.fn + f.fp + f.tn);
    r.weighted_positives = f.weighted_tp + f.weighted_fn;
    r.weighted_total = r.weighted_positives + f.weighted_fp + f.weighted_tn;
    r.weighted = r.weighted_total != static_cast<double>(r.total);
    r.max_score = f.bin_lowest_score;
  }
  if (!r.model_score_list.empty()) r.min_score = r.model_score_list.back().bin_lowest_score;
  return r;
}

}  // namespace tarn::stats
