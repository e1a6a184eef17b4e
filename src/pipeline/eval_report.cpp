#include "pipeline/eval_report.h"

#include <algorithm>     // for max, min, clamp
#include <charconv>      // for to_chars
#include <cmath>         // for isnan, isinf, fabs, ceil
#include <cstdio>        // for snprintf
#include <optional>      // for optional
#include <system_error>  // for errc
#include <utility>       // for pair

#include "common/files.h"
#include "common/strings.h"

namespace tarn::pipeline {

using stats::CurvePoint;
using stats::PerformanceObject;
using stats::PerformanceResult;

// ---- number formats ----

namespace {

// Appends Java's Double.toString(v) to *out without temporaries.
void AppendJavaDouble(std::string* out, double v) {
  if (std::isnan(v)) {
    *out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    *out += v > 0 ? "Infinity" : "-Infinity";
    return;
  }
  if (v == 0.0) {
    *out += std::signbit(v) ? "-0.0" : "0.0";
    return;
  }
  char buf[40];
  const double a = std::fabs(v);
  if (v < 0) *out += '-';
  if (a < 1e7 && a == std::floor(a)) {  // counts: the common case
    auto res = std::to_chars(buf, buf + sizeof(buf), static_cast<long long>(a));
    out->append(buf, res.ptr);
    *out += ".0";
    return;
  }
  // Shortest round-trip digits, as Java's algorithm gives for nearly all values.
  auto res = std::to_chars(buf, buf + sizeof(buf), a, std::chars_format::scientific);
  const char* e = std::find(buf, res.ptr, 'e');
  int exp = 0;
  std::from_chars(e + 1 + (e[1] == '+' ? 1 : 0), res.ptr, exp);
  char digits[32];
  size_t nd = 0;
  for (const char* p = buf; p < e; ++p) {
    if (*p != '.') digits[nd++] = *p;
  }
  if (a >= 1e-3 && a < 1e7) {
    if (exp >= 0) {
      const size_t int_len = static_cast<size_t>(exp) + 1;
      for (size_t i = 0; i < int_len; ++i) *out += i < nd ? digits[i] : '0';
      *out += '.';
      if (nd > int_len) {
        out->append(digits + int_len, nd - int_len);
      } else {
        *out += '0';
      }
    } else {
      *out += "0.";
      out->append(static_cast<size_t>(-exp - 1), '0');
      out->append(digits, nd);
    }
  } else {
    *out += digits[0];
    *out += '.';
    if (nd > 1) {
      out->append(digits + 1, nd - 1);
    } else {
      *out += '0';
    }
    *out += 'E';
    auto r2 = std::to_chars(buf, buf + sizeof(buf), exp);
    out->append(buf, r2.ptr);
  }
}

}  // namespace

std::string JavaDoubleString(double v) {
  std::string s;
  AppendJavaDouble(&s, v);
  return s;
}

std::string DecimalFormat4(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "\u221E" : "-\u221E";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4f", v);
  std::string s(buf);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

namespace {

std::string Shortest(double v) {
  if (!std::isfinite(v)) return JavaDoubleString(v);
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string Percent(double v, int decimals = 1) { return Fixed(v * 100.0, decimals) + "%"; }

std::string ScoreText(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// ---- SVG charts ----

struct Axis {
  double min = 0.0, max = 1.0;
  std::vector<double> ticks;
  std::string label;
  bool percent = false;  // tick labels as 0%..100%
  int decimals = 1;      // for non-percent tick labels
};

struct Series {
  std::vector<std::pair<double, double>> points;
  std::string css;  // class of the line and markers
  std::string label;
  bool right_axis = false;
  bool line = true;
  bool markers = false;
  std::vector<std::string> tips;  // one per marker
};

struct Chart {
  std::string title;
  Axis x, y;
  std::optional<Axis> y2;
  std::vector<Series> series;
};

constexpr double kWidth = 560, kHeight = 430;
constexpr double kLeft = 64, kRight = 64, kTop = 62, kBottom = 52;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

std::vector<double> UnitTicks() { return {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}; }

// A 0..top axis with 3-7 round ticks covering `max_value`.
Axis NiceAxis(double max_value, const std::string& label) {
  Axis a;
  a.label = label;
  if (!(max_value > 0.0) || !std::isfinite(max_value)) max_value = 1.0;
  double step = 0.1;
  for (double base = 0.1; base < 1e9; base *= 10) {
    bool found = false;
    for (double m : {1.0, 2.0, 5.0}) {
      if (max_value / (base * m) <= 6.0) {
        step = base * m;
        found = true;
        break;
      }
    }
    if (found) break;
  }
  a.max = std::ceil(max_value / step - 1e-9) * step;
  for (double t = 0.0; t <= a.max + step / 2; t += step) a.ticks.push_back(t);
  a.decimals = step < 1.0 ? 1 : 0;
  return a;
}

double MapX(const Axis& a, double v) {
  const double f = a.max > a.min ? (v - a.min) / (a.max - a.min) : 0.0;
  return kLeft + std::clamp(f, 0.0, 1.0) * kPlotW;
}
double MapY(const Axis& a, double v) {
  const double f = a.max > a.min ? (v - a.min) / (a.max - a.min) : 0.0;
  return kTop + kPlotH - std::clamp(f, 0.0, 1.0) * kPlotH;
}

std::string TickLabel(const Axis& a, double v) {
  return a.percent ? Fixed(v * 100.0, 0) + "%" : Fixed(v, a.decimals);
}

std::string Num(double v) { return Fixed(v, 1); }

std::string RenderChart(const Chart& c) {
  std::string s;
  s += "<svg class=\"chart\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(kHeight) +
       "\" role=\"img\" aria-label=\"" + EscapeMarkup(c.title) + "\">\n";
  s += "<title>" + EscapeMarkup(c.title) + "</title>\n";
  s += "<rect class=\"plot\" x=\"" + Num(kLeft) + "\" y=\"" + Num(kTop) + "\" width=\"" +
       Num(kPlotW) + "\" height=\"" + Num(kPlotH) + "\"/>\n";
  s += "<text class=\"ctitle\" x=\"" + Num(kWidth / 2) + "\" y=\"22\">" + EscapeMarkup(c.title) +
       "</text>\n";

  // Grid, ticks and tick labels.
  const double bottom = kTop + kPlotH, right = kLeft + kPlotW;
  for (double t : c.x.ticks) {
    const double x = MapX(c.x, t);
    s += "<line class=\"grid\" x1=\"" + Num(x) + "\" y1=\"" + Num(kTop) + "\" x2=\"" + Num(x) +
         "\" y2=\"" + Num(bottom) + "\"/>";
    s += "<line class=\"axis\" x1=\"" + Num(x) + "\" y1=\"" + Num(bottom) + "\" x2=\"" + Num(x) +
         "\" y2=\"" + Num(bottom + 5) + "\"/>";
    s += "<text class=\"tick\" x=\"" + Num(x) + "\" y=\"" + Num(bottom + 18) + "\">" +
         TickLabel(c.x, t) + "</text>\n";
  }
  for (double t : c.y.ticks) {
    const double y = MapY(c.y, t);
    s += "<line class=\"grid\" x1=\"" + Num(kLeft) + "\" y1=\"" + Num(y) + "\" x2=\"" + Num(right) +
         "\" y2=\"" + Num(y) + "\"/>";
    s += "<line class=\"axis\" x1=\"" + Num(kLeft - 5) + "\" y1=\"" + Num(y) + "\" x2=\"" +
         Num(kLeft) + "\" y2=\"" + Num(y) + "\"/>";
    s += "<text class=\"tick ty\" x=\"" + Num(kLeft - 8) + "\" y=\"" + Num(y + 4) + "\">" +
         TickLabel(c.y, t) + "</text>\n";
  }
  if (c.y2) {
    for (double t : c.y2->ticks) {
      const double y = MapY(*c.y2, t);
      s += "<line class=\"axis y2\" x1=\"" + Num(right) + "\" y1=\"" + Num(y) + "\" x2=\"" +
           Num(right + 5) + "\" y2=\"" + Num(y) + "\"/>";
      s += "<text class=\"tick ty2\" x=\"" + Num(right + 8) + "\" y=\"" + Num(y + 4) + "\">" +
           TickLabel(*c.y2, t) + "</text>\n";
    }
  }
  // Axis lines and labels.
  s += "<line class=\"axis\" x1=\"" + Num(kLeft) + "\" y1=\"" + Num(bottom) + "\" x2=\"" +
       Num(right) + "\" y2=\"" + Num(bottom) + "\"/>\n";
  s += "<line class=\"axis\" x1=\"" + Num(kLeft) + "\" y1=\"" + Num(kTop) + "\" x2=\"" +
       Num(kLeft) + "\" y2=\"" + Num(bottom) + "\"/>\n";
  s += "<text class=\"alabel\" x=\"" + Num(kLeft + kPlotW / 2) + "\" y=\"" + Num(kHeight - 10) +
       "\">" + EscapeMarkup(c.x.label) + "</text>\n";
  s += "<text class=\"alabel\" transform=\"translate(16 " + Num(kTop + kPlotH / 2) +
       ") rotate(-90)\">" + EscapeMarkup(c.y.label) + "</text>\n";
  if (c.y2) {
    s += "<line class=\"axis y2\" x1=\"" + Num(right) + "\" y1=\"" + Num(kTop) + "\" x2=\"" +
         Num(right) + "\" y2=\"" + Num(bottom) + "\"/>\n";
    s += "<text class=\"alabel y2\" transform=\"translate(" + Num(kWidth - 14) + " " +
         Num(kTop + kPlotH / 2) + ") rotate(90)\">" + EscapeMarkup(c.y2->label) + "</text>\n";
  }

  // Series, then markers on top.
  for (const Series& se : c.series) {
    const Axis& ya = se.right_axis && c.y2 ? *c.y2 : c.y;
    if (se.line && se.points.size() > 1) {
      s += "<polyline class=\"" + se.css + "\" points=\"";
      for (size_t i = 0; i < se.points.size(); ++i) {
        if (i) s += ' ';
        s += Num(MapX(c.x, se.points[i].first)) + "," + Num(MapY(ya, se.points[i].second));
      }
      s += "\"/>\n";
    }
  }
  for (const Series& se : c.series) {
    if (!se.markers) continue;
    const Axis& ya = se.right_axis && c.y2 ? *c.y2 : c.y;
    for (size_t i = 0; i < se.points.size(); ++i) {
      s += "<circle class=\"m " + se.css + "\" cx=\"" + Num(MapX(c.x, se.points[i].first)) +
           "\" cy=\"" + Num(MapY(ya, se.points[i].second)) + "\" r=\"3.2\">";
      if (i < se.tips.size()) s += "<title>" + EscapeMarkup(se.tips[i]) + "</title>";
      s += "</circle>\n";
    }
  }

  // Legend: one row under the title.
  std::vector<const Series*> legend;
  for (const Series& se : c.series) {
    if (!se.label.empty()) legend.push_back(&se);
  }
  double x = kLeft;
  for (const Series* se : legend) {
    s += "<line class=\"" + se->css + "\" x1=\"" + Num(x) + "\" y1=\"42\" x2=\"" + Num(x + 22) +
         "\" y2=\"42\"/>";
    s += "<text class=\"legend\" x=\"" + Num(x + 27) + "\" y=\"46\">" + EscapeMarkup(se->label) +
         "</text>\n";
    x += 36 + 6.2 * static_cast<double>(se->label.size());
  }
  s += "</svg>\n";
  return s;
}

// Curve points (full curve when present, else the bucket list).
template <typename FromCurve, typename FromList>
std::vector<std::pair<double, double>> CurveOr(const std::vector<CurvePoint>& curve,
                                               const std::vector<PerformanceObject>& list,
                                               FromCurve fc, FromList fl) {
  std::vector<std::pair<double, double>> pts;
  if (curve.size() > 1) {
    for (const CurvePoint& p : curve) pts.push_back(fc(p));
  } else {
    for (const PerformanceObject& po : list) pts.push_back(fl(po));
  }
  return pts;
}

std::string Tip(const PerformanceObject& po, bool weighted) {
  const std::string w = weighted ? "weighted " : "";
  return "bin " + std::to_string(po.bin_num) + ": " + w + "action rate " +
         Percent(weighted ? po.weighted_action_rate : po.action_rate) + ", " + w + "recall " +
         Percent(weighted ? po.weighted_recall : po.recall) + ", " + w + "precision " +
         Percent(weighted ? po.weighted_precision : po.precision) + ", " + w + "FPR " +
         Percent(weighted ? po.weighted_fpr : po.fpr) + ", lowest score " +
         ScoreText(po.bin_lowest_score);
}

template <typename F>
Series Markers(const std::vector<PerformanceObject>& list, const std::string& css, bool weighted,
               F f) {
  Series se;
  se.css = css;
  se.line = false;
  se.markers = true;
  for (const PerformanceObject& po : list) {
    se.points.push_back(f(po));
    se.tips.push_back(Tip(po, weighted));
  }
  return se;
}

Series Line(std::vector<std::pair<double, double>> pts, const std::string& css,
            const std::string& label) {
  Series se;
  se.points = std::move(pts);
  se.css = css;
  se.label = label;
  return se;
}

std::string AucTitle(const std::string& what, double auc, bool weighted, double wauc) {
  std::string t = what + " \u2014 exact AUC " + Fixed(auc, 4);
  if (weighted) t += " (weighted " + Fixed(wauc, 4) + ")";
  return t;
}

Chart RocChart(const PerformanceResult& r, bool weighted) {
  Chart c;
  c.title = AucTitle("ROC", r.exact_area_under_roc, weighted, r.exact_weighted_area_under_roc);
  c.x = Axis{0.0, 1.0, UnitTicks(), "False positive rate", false, 1};
  c.y = Axis{0.0, 1.0, UnitTicks(), "True positive rate (recall)", false, 1};
  c.series.push_back(Line({{0.0, 0.0}, {1.0, 1.0}}, "base", "random"));
  c.series.push_back(Line(CurveOr(
                              r.curve, r.roc,
                              [](const CurvePoint& p) {
                                return std::pair{p.fpr, p.recall};
                              },
                              [](const PerformanceObject& p) {
                                return std::pair{p.fpr, p.recall};
                              }),
                          "unit", "unit-wise"));
  if (weighted) {
    c.series.push_back(Line(CurveOr(
                                r.weighted_curve, r.weighted_roc,
                                [](const CurvePoint& p) {
                                  return std::pair{p.fpr, p.recall};
                                },
                                [](const PerformanceObject& p) {
                                  return std::pair{p.weighted_fpr, p.weighted_recall};
                                }),
                            "wtd", "weighted"));
  }
  c.series.push_back(Markers(r.roc, "unit", false, [](const PerformanceObject& p) {
    return std::pair{p.fpr, p.recall};
  }));
  return c;
}

Chart PrChart(const PerformanceResult& r, bool weighted) {
  Chart c;
  c.title =
      AucTitle("Precision-recall", r.exact_area_under_pr, weighted, r.exact_weighted_area_under_pr);
  c.x = Axis{0.0, 1.0, UnitTicks(), "Recall", false, 1};
  c.y = Axis{0.0, 1.0, UnitTicks(), "Precision", false, 1};
  const double base =
      r.total > 0 ? static_cast<double>(r.positives) / static_cast<double>(r.total) : 0.0;
  c.series.push_back(
      Line({{0.0, base}, {1.0, base}}, "base", "random (positive rate " + Percent(base) + ")"));
  c.series.push_back(Line(CurveOr(
                              r.curve, r.pr,
                              [](const CurvePoint& p) {
                                return std::pair{p.recall, p.precision};
                              },
                              [](const PerformanceObject& p) {
                                return std::pair{p.recall, p.precision};
                              }),
                          "unit", "unit-wise"));
  if (weighted) {
    c.series.push_back(Line(CurveOr(
                                r.weighted_curve, r.weighted_pr,
                                [](const CurvePoint& p) {
                                  return std::pair{p.recall, p.precision};
                                },
                                [](const PerformanceObject& p) {
                                  return std::pair{p.weighted_recall, p.weighted_precision};
                                }),
                            "wtd", "weighted"));
  }
  c.series.push_back(Markers(r.pr, "unit", false, [](const PerformanceObject& p) {
    return std::pair{p.recall, p.precision};
  }));
  return c;
}

Chart GainsChart(const PerformanceResult& r, bool weighted) {
  Chart c;
  c.title = "Gains and lift by action rate";
  c.x = Axis{0.0, 1.0, UnitTicks(), "Action rate (share of records actioned)", true, 0};
  c.y = Axis{0.0, 1.0, UnitTicks(), "Cumulative recall", true, 0};
  double max_lift = 1.0;
  std::vector<PerformanceObject> lift_points;
  for (const PerformanceObject& po : r.gains) {
    if (po.bin_num == 0) continue;
    lift_points.push_back(po);
    max_lift = std::max(max_lift, po.lift_unit);
  }
  c.y2 = NiceAxis(max_lift, "Lift");
  c.series.push_back(Line({{0.0, 0.0}, {1.0, 1.0}}, "base", "random"));
  c.series.push_back(Line(CurveOr(
                              r.curve, r.gains,
                              [](const CurvePoint& p) {
                                return std::pair{p.action_rate, p.recall};
                              },
                              [](const PerformanceObject& p) {
                                return std::pair{p.action_rate, p.recall};
                              }),
                          "unit", "recall"));
  if (weighted) {
    c.series.push_back(Line(CurveOr(
                                r.weighted_curve, r.weighted_gains,
                                [](const CurvePoint& p) {
                                  return std::pair{p.action_rate, p.recall};
                                },
                                [](const PerformanceObject& p) {
                                  return std::pair{p.weighted_action_rate, p.weighted_recall};
                                }),
                            "wtd", "weighted recall"));
  }
  Series lift = Markers(lift_points, "lift", false, [](const PerformanceObject& p) {
    return std::pair{p.action_rate, p.lift_unit};
  });
  lift.line = true;
  lift.right_axis = true;
  lift.label = "lift (right axis)";
  c.series.push_back(Markers(r.gains, "unit", false, [](const PerformanceObject& p) {
    return std::pair{p.action_rate, p.recall};
  }));
  c.series.push_back(std::move(lift));
  Series one = Line({{0.0, 1.0}, {1.0, 1.0}}, "liftbase", "");
  one.right_axis = true;
  c.series.push_back(std::move(one));
  return c;
}

// KS: the share of positives (recall) and of negatives (fpr) scoring at or
// above each score; KS is the widest gap between them.
Chart KsChart(const PerformanceResult& r) {
  Chart c;
  c.title = "KS " + Fixed(r.ks, 4) + " at score " + ScoreText(r.ks_score);
  Axis x = NiceAxis(std::max(r.max_score, 1e-9), "Score (records at or above it are actioned)");
  x.min = std::min(0.0, r.min_score);
  c.x = x;
  c.y = Axis{0.0, 1.0, UnitTicks(), "Share of the class at or above the score", true, 0};
  std::vector<std::pair<double, double>> pos, neg;
  for (size_t i = 0; i < r.curve.size(); ++i) {
    const CurvePoint& p = r.curve[i];
    const double score = i == 0 ? r.max_score : p.score;  // the first point: nothing actioned
    pos.emplace_back(score, p.recall);
    neg.emplace_back(score, p.fpr);
  }
  c.series.push_back(Line(std::move(pos), "unit", "positives (recall)"));
  c.series.push_back(Line(std::move(neg), "neg", "negatives (FPR)"));
  c.series.push_back(Line({{r.ks_score, 0.0}, {r.ks_score, 1.0}}, "ksline", "KS"));
  return c;
}

// How the scores of positives and of negatives spread over the score range:
// each class's share of records per band.
Chart ScoreDistributionChart(const std::vector<stats::ScoredRecord>& sorted, double min_score,
                             double max_score) {
  constexpr int kBands = 20;
  std::vector<double> pos(kBands, 0.0), neg(kBands, 0.0);
  double pos_total = 0.0, neg_total = 0.0;
  const double width = max_score > min_score ? (max_score - min_score) / kBands : 1.0;
  for (const stats::ScoredRecord& rec : sorted) {
    const int band =
        std::clamp(static_cast<int>(std::floor((rec.score - min_score) / width)), 0, kBands - 1);
    if (rec.target == 1) {
      pos[band] += 1.0;
      pos_total += 1.0;
    } else {
      neg[band] += 1.0;
      neg_total += 1.0;
    }
  }
  Chart c;
  c.title = "Score distribution of positives and negatives";
  Axis x = NiceAxis(std::max(max_score, 1e-9), "Score");
  x.min = std::min(0.0, min_score);
  c.x = x;
  double top = 0.0;
  for (int b = 0; b < kBands; ++b) {
    if (pos_total > 0) top = std::max(top, pos[b] / pos_total);
    if (neg_total > 0) top = std::max(top, neg[b] / neg_total);
  }
  c.y = NiceAxis(top, "Share of the class's records");
  c.y.percent = true;
  auto series = [&](const std::vector<double>& counts, double total, const std::string& css,
                    const std::string& label) {
    Series se = Line({}, css, label);
    se.markers = true;
    for (int b = 0; b < kBands; ++b) {
      const double lo = min_score + b * width;
      const double share = total > 0 ? counts[b] / total : 0.0;
      se.points.emplace_back(lo + width / 2, share);
      se.tips.push_back(label + ", score " + ScoreText(lo) + " to " + ScoreText(lo + width) + ": " +
                        Shortest(counts[b]) + " records (" + Percent(share) + ")");
    }
    return se;
  };
  c.series.push_back(series(pos, pos_total, "unit", "positives"));
  c.series.push_back(series(neg, neg_total, "neg", "negatives"));
  return c;
}

// A number from the training metadata, or a dash.
std::string MetaNumber(const data::Json& training, const char* key, int decimals) {
  auto it = training.find(key);
  if (it == training.end() || !it->is_number()) return "\u2014";
  return it->is_number_integer() ? std::to_string(it->get<long long>())
                                 : Fixed(it->get<double>(), decimals);
}

std::string MetaText(const data::Json& training, const char* key, const std::string& otherwise) {
  auto it = training.find(key);
  if (it == training.end() || it->is_null()) return otherwise;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// The model (from the first bag's file) and how it was trained.
std::string ModelSummaryHtml(const EvalReportInput& in) {
  if (in.models.empty() || in.models[0].file == nullptr) return "";
  const model::ModelFile& f = *in.models[0].file;
  const data::Json& t = f.training;
  std::string network = std::to_string(f.spec.input_count) + " inputs";
  for (const model::LayerSpec& l : f.spec.layers) {
    network += " \u2192 " + std::to_string(l.outputs) + " " + model::ActivationName(l.activation);
    if (l.dropout > 0) network += " (dropout " + ScoreText(l.dropout) + ")";
  }
  if (f.graph) {
    network += ", a graph of " + std::to_string(f.graph->nodes.size()) + " nodes:";
    for (const auto& n : f.graph->nodes) network += std::string(" ") + model::GraphOpName(n.op);
  }
  std::string h = "<h2>Model</h2>\n<table class=\"model\">\n";
  auto row = [&h](const std::string& k, const std::string& v) {
    h += "<tr><td>" + k + "</td><td>" + v + "</td></tr>\n";
  };
  row("Algorithm", EscapeMarkup(MetaText(t, "algorithm", "\u2014")) + ", " +
                       std::to_string(in.models.size()) + " bag" +
                       (in.models.size() == 1 ? "" : "s"));
  row("Network", EscapeMarkup(network));
  row("Loss / initializer",
      std::string(model::LossName(f.graph ? f.graph->loss : f.spec.loss)) + " / " +
          model::InitializerName(f.graph ? f.graph->initializer : f.spec.initializer) +
          (f.spec.input_dropout > 0 ? ", input dropout " + ScoreText(f.spec.input_dropout) : ""));
  row("Normalization",
      EscapeMarkup(f.norm_type) + ", stdDevCutOff " + ScoreText(f.std_dev_cut_off));
  std::string cols;
  for (const auto& c : f.columns) cols += (cols.empty() ? "" : ", ") + EscapeMarkup(c.column_name);
  row("Input columns", std::to_string(f.columns.size()) + "<div class=\"cols\">" + cols + "</div>");
  row("Training",
      "run mode " + EscapeMarkup(MetaText(t, "runMode", "LOCAL")) + ", " +
          MetaNumber(t, "epochs", 0) + " epochs, seed " + MetaNumber(t, "seed", 0) +
          (t.contains("trainRows") ? ", " + MetaNumber(t, "trainRows", 0) + " training rows, " +
                                         MetaNumber(t, "validRows", 0) + " validation"
                                   : ""));
  if (t.contains("params"))
    row("train#params", "<code>" + EscapeMarkup(t["params"].dump()) + "</code>");
  h += "</table>\n";

  h += "<h2>Bags</h2>\n<table class=\"gains\">\n<tr><th>Model</th><th>AUC</th><th>Exact AUC</th>"
       "<th>Epochs</th><th>Training Error</th><th>Validation Error</th><th>Training loss</th>"
       "<th>Validation loss</th></tr>\n";
  for (const EvalModelSummary& m : in.models) {
    const data::Json& mt = m.file ? m.file->training : data::Json::object();
    h += "<tr><td>" + EscapeMarkup(m.name) + "</td><td>" + Fixed(m.area_under_roc, 4) +
         "</td><td>" + Fixed(m.exact_area_under_roc, 4) + "</td><td>" +
         MetaNumber(mt, "epochs", 0) + "</td><td>" + MetaNumber(mt, "shifuTrainError", 6) +
         "</td><td>" + MetaNumber(mt, "shifuValidError", 6) + "</td><td>" +
         MetaNumber(mt, "trainError", 6) + "</td><td>" + MetaNumber(mt, "validError", 6) +
         "</td></tr>\n";
  }
  h += "</table>\n";
  return h;
}

constexpr const char* kCss = R"(
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px 32px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}
.sub{color:#666;margin:0 0 18px}
.summary{border-collapse:collapse;margin-bottom:20px}
.summary td{padding:3px 14px 3px 0}
.summary td:first-child{color:#555}
.charts{display:flex;flex-wrap:wrap;gap:18px}
.chart{width:560px;max-width:100%;height:auto;border:1px solid #ddd;border-radius:4px;background:#fff}
.plot{fill:#fcfcfd;stroke:none}
.grid{stroke:#e6e6e6;stroke-width:1}
.axis{stroke:#444;stroke-width:1}
.tick{font-size:11px;fill:#444;text-anchor:middle}
.ty{text-anchor:end}
.ty2{text-anchor:start;fill:#2a8a3a}
.y2{stroke:#2a8a3a}
text.y2{fill:#2a8a3a;stroke:none}
.alabel{font-size:12px;fill:#222;text-anchor:middle}
.ctitle{font-size:14px;font-weight:600;fill:#222;text-anchor:middle}
.legend{font-size:11px;fill:#333}
polyline,line.unit,line.wtd,line.base,line.lift,line.liftbase{fill:none}
.unit{stroke:#1f6fb4;stroke-width:2}
.wtd{stroke:#e07b00;stroke-width:2;stroke-dasharray:7 4}
.base{stroke:#999;stroke-width:1.2;stroke-dasharray:4 4}
.lift{stroke:#2a8a3a;stroke-width:1.6}
.liftbase{stroke:#2a8a3a;stroke-width:1;stroke-dasharray:2 4;opacity:.6}
.neg{stroke:#c0392b;stroke-width:2}
.ksline{stroke:#6a3d9a;stroke-width:1.4;stroke-dasharray:3 3}
line.neg,line.ksline{fill:none}
circle.m{stroke:#fff;stroke-width:1}
circle.neg{fill:#c0392b}
circle.unit{fill:#1f6fb4}
circle.lift{fill:#2a8a3a}
h2{font-size:17px;margin:26px 0 8px}
table.gains{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}
table.gains th,table.gains td{border:1px solid #ddd;padding:4px 9px;text-align:right}
table.gains th{background:#f3f5f8;font-weight:600}
table.gains tr:nth-child(even) td{background:#fafbfc}
.note{color:#777;font-size:12px;margin-top:18px;max-width:1100px}
table.model{border-collapse:collapse;font-size:13px;margin-bottom:8px}
table.model td{padding:3px 14px 3px 0;vertical-align:top}
table.model td:first-child{color:#555;white-space:nowrap}
td.cols{max-width:900px;font-size:12px;color:#333}
code{font-size:12px}
)";

}  // namespace

// ---- HTML ----

std::string RenderEvalHtml(const EvalReportInput& in) {
  const PerformanceResult& r = *in.perf;
  const bool weighted = in.has_weight_column || r.weighted;
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>Eval " + EscapeMarkup(in.eval_name) + " \u2014 " + EscapeMarkup(in.model_set_name) +
       "</title>\n";
  h += "<style>" + std::string(kCss) + "</style>\n</head>\n<body>\n";
  h += "<h1>Eval " + EscapeMarkup(in.eval_name) + "</h1>\n";
  h += "<p class=\"sub\">Model set " + EscapeMarkup(in.model_set_name) + "</p>\n";

  const long long negatives = r.total - r.positives;
  h += "<table class=\"summary\">\n";
  auto row = [&h](const std::string& k, const std::string& v) {
    h += "<tr><td>" + k + "</td><td>" + v + "</td></tr>\n";
  };
  row("Records", std::to_string(r.total) +
                     (r.skipped ? " (" + std::to_string(r.skipped) + " skipped)" : std::string()));
  row("Positives / negatives",
      std::to_string(r.positives) + " / " + std::to_string(negatives) + " (positive rate " +
          Percent(r.total ? static_cast<double>(r.positives) / static_cast<double>(r.total) : 0.0,
                  2) +
          ")");
  if (weighted) {
    row("Weighted records / positives",
        ScoreText(r.weighted_total) + " / " + ScoreText(r.weighted_positives));
  }
  row("ROC AUC", Fixed(r.area_under_roc, 4) + " (Shifu's, over " + std::to_string(r.bucket_num) +
                     " buckets; exact " + Fixed(r.exact_area_under_roc, 4) + ")" +
                     (weighted ? ", weighted " + Fixed(r.weighted_area_under_roc, 4) + " (exact " +
                                     Fixed(r.exact_weighted_area_under_roc, 4) + ")"
                               : ""));
  row("PR AUC", Fixed(r.area_under_pr, 4) + " (exact " + Fixed(r.exact_area_under_pr, 4) + ")" +
                    (weighted ? ", weighted " + Fixed(r.weighted_area_under_pr, 4) + " (exact " +
                                    Fixed(r.exact_weighted_area_under_pr, 4) + ")"
                              : ""));
  row("KS", Fixed(r.ks, 4) + " at score " + ScoreText(r.ks_score) +
                (weighted ? ", weighted " + Fixed(r.weighted_ks, 4) : ""));
  row("Score",
      EscapeMarkup(in.score_selector) + " over the models, x " + ScoreText(in.score_scale));
  h += "</table>\n";
  h += ModelSummaryHtml(in);

  h += "<div class=\"charts\">\n";
  h += RenderChart(RocChart(r, weighted));
  h += RenderChart(PrChart(r, weighted));
  h += RenderChart(GainsChart(r, weighted));
  if (r.curve.size() > 1) h += RenderChart(KsChart(r));
  if (in.sorted_records != nullptr && !in.sorted_records->empty()) {
    h += RenderChart(ScoreDistributionChart(*in.sorted_records, r.min_score, r.max_score));
  }
  h += "</div>\n";

  h += "<h2>Gains by action-rate bucket</h2>\n<table class=\"gains\">\n<tr><th>Bucket</th>"
       "<th>Action rate</th><th>Records</th><th>Recall</th><th>Precision</th><th>Lift</th>"
       "<th>FPR</th><th>TP</th><th>FP</th><th>Lowest score</th>";
  if (weighted) {
    h += "<th>W. action rate</th><th>W. recall</th><th>W. precision</th><th>W. lift</th>";
  }
  h += "</tr>\n";
  for (const PerformanceObject& po : r.gains) {
    if (po.bin_num == 0) continue;
    h += "<tr><td>" + std::to_string(po.bin_num) + "</td><td>" + Percent(po.action_rate) +
         "</td><td>" + Shortest(po.tp + po.fp) + "</td><td>" + Percent(po.recall) + "</td><td>" +
         Percent(po.precision) + "</td><td>" + Fixed(po.lift_unit, 2) + "</td><td>" +
         Percent(po.fpr) + "</td><td>" + Shortest(po.tp) + "</td><td>" + Shortest(po.fp) +
         "</td><td>" + ScoreText(po.bin_lowest_score) + "</td>";
    if (weighted) {
      h += "<td>" + Percent(po.weighted_action_rate) + "</td><td>" + Percent(po.weighted_recall) +
           "</td><td>" + Percent(po.weighted_precision) + "</td><td>" +
           Fixed(po.weight_lift_unit, 2) + "</td>";
    }
    h += "</tr>\n";
  }
  h += "</table>\n";
  h += "<p class=\"note\">Records are ranked by score, highest first; a bucket's row describes "
       "actioning every record down to its lowest score. Recall = TP/(TP+FN), precision = "
       "TP/(TP+FP), FPR = FP/(FP+TN), lift = precision / positive rate, KS = the largest "
       "recall \u2212 FPR. AUCs are Shifu's (trapezoids over the bucket points of "
       "EvalPerformance.json's roc and pr lists) beside the exact ones (trapezoids over every "
       "distinct score; tied scores form one step). Training and Validation Error are Shifu's "
       "(mean squared error by default), the losses tarn's. Hover a marker for its values. "
       "Written by tarn.</p>\n";
  h += "</body>\n</html>\n";
  return h;
}

// ---- CSV ----

std::string ShifuGainChartCsv(const std::vector<PerformanceObject>& list) {
  std::string s =
      "ActionRate,WeightedActionRate,Recall,WeightedRecall,Precision,WeightedPrecision,FPR,"
      "WeightedFPR,BinLowestScore\n";
  for (const PerformanceObject& po : list) {
    s += DecimalFormat4(po.action_rate) + "," + DecimalFormat4(po.weighted_action_rate) + "," +
         DecimalFormat4(po.recall) + "," + DecimalFormat4(po.weighted_recall) + "," +
         DecimalFormat4(po.precision) + "," + DecimalFormat4(po.weighted_precision) + "," +
         DecimalFormat4(po.fpr) + "," + DecimalFormat4(po.weighted_fpr) + "," +
         JavaDoubleString(po.bin_lowest_score) + "\n";
  }
  return s;
}

std::string GainsTableCsv(const std::vector<PerformanceObject>& gains) {
  std::string s =
      "Bucket,ActionRate,Recall,Precision,Lift,FPR,BinLowestScore,TP,FP,TN,FN,"
      "WeightedActionRate,WeightedRecall,WeightedPrecision,WeightedLift,WeightedFPR\n";
  for (const PerformanceObject& po : gains) {
    if (po.bin_num == 0) continue;
    s += std::to_string(po.bin_num) + "," + Shortest(po.action_rate) + "," + Shortest(po.recall) +
         "," + Shortest(po.precision) + "," + Shortest(po.lift_unit) + "," + Shortest(po.fpr) +
         "," + Shortest(po.bin_lowest_score) + "," + Shortest(po.tp) + "," + Shortest(po.fp) + "," +
         Shortest(po.tn) + "," + Shortest(po.fn) + "," + Shortest(po.weighted_action_rate) + "," +
         Shortest(po.weighted_recall) + "," + Shortest(po.weighted_precision) + "," +
         Shortest(po.weight_lift_unit) + "," + Shortest(po.weighted_fpr) + "\n";
  }
  return s;
}

// ---- files ----

Status WriteConfusionMatrix(const std::string& path, const std::vector<stats::ScoredRecord>& sorted,
                            double initial_score) {
  TARN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Open(path));
  std::string buf;
  buf.reserve(1 << 20);
  Status status;
  stats::ForEachConfusionRow(sorted, initial_score, [&](const stats::ConfusionRow& row) {
    if (!status.ok()) return;
    const double v[] = {row.tp,          row.fp,          row.fn,
                        row.tn,          row.weighted_tp, row.weighted_fp,
                        row.weighted_fn, row.weighted_tn, row.score};
    for (size_t i = 0; i < 9; ++i) {
      if (i) buf += '|';
      AppendJavaDouble(&buf, v[i]);
    }
    buf += '\n';
    if (buf.size() >= (1 << 20) - 512) {
      status = file.Write(buf);
      buf.clear();
    }
  });
  TARN_RETURN_IF_ERROR(status);
  TARN_RETURN_IF_ERROR(file.Write(buf));
  return file.Commit();
}

Status WriteEvalReport(const std::string& dir, const EvalReportInput& in) {
  if (in.perf == nullptr) return InvalidArgument("eval report: no performance result");
  if (in.eval_name.empty()) return InvalidArgument("eval report: empty eval name");
  TARN_RETURN_IF_ERROR(MakeDirs(dir));
  const PerformanceResult& r = *in.perf;
  auto file = [&](const std::string& name) { return JoinPath(dir, name); };
  const std::string& e = in.eval_name;

  TARN_RETURN_IF_ERROR(
      WriteFileAtomic(file("EvalPerformance.json"), stats::PerformanceToJson(r).dump(2) + "\n"));
  if (in.sorted_records != nullptr) {
    TARN_RETURN_IF_ERROR(
        WriteConfusionMatrix(file("EvalConfusionMatrix"), *in.sorted_records, in.score_scale));
  }
  TARN_RETURN_IF_ERROR(
      WriteFileAtomic(file(e + "_unit_wise_gainchart.csv"), ShifuGainChartCsv(r.gains)));
  TARN_RETURN_IF_ERROR(WriteFileAtomic(file(e + "_unit_wise_pr.csv"), ShifuGainChartCsv(r.pr)));
  TARN_RETURN_IF_ERROR(WriteFileAtomic(file(e + "_unit_wise_roc.csv"), ShifuGainChartCsv(r.roc)));
  if (in.has_weight_column) {
    TARN_RETURN_IF_ERROR(
        WriteFileAtomic(file(e + "_weighted_gainchart.csv"), ShifuGainChartCsv(r.weighted_gains)));
    TARN_RETURN_IF_ERROR(
        WriteFileAtomic(file(e + "_weighted_pr.csv"), ShifuGainChartCsv(r.weighted_pr)));
    TARN_RETURN_IF_ERROR(
        WriteFileAtomic(file(e + "_weighted_roc.csv"), ShifuGainChartCsv(r.weighted_roc)));
  }
  TARN_RETURN_IF_ERROR(WriteFileAtomic(file(e + "_modelscore_gainchart.csv"),
                                       ShifuGainChartCsv(r.model_score_list)));
  TARN_RETURN_IF_ERROR(WriteFileAtomic(file(e + "_gainchart.csv"), GainsTableCsv(r.gains)));
  TARN_RETURN_IF_ERROR(WriteFileAtomic(file(e + "_report.html"), RenderEvalHtml(in)));
  return Status::Ok();
}

}  // namespace tarn::pipeline
