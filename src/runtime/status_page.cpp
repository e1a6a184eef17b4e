#include "runtime/status_page.h"

#include <cstdio>

#include "common/strings.h"

namespace tarn::runtime {

namespace {

std::string Text(const data::Json& j) {
  if (j.is_string()) return EscapeMarkup(j.get<std::string>());
  if (j.is_null()) return "";
  if (j.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", j.get<double>());
    return buf;
  }
  return EscapeMarkup(j.dump());
}

}  // namespace

std::string RenderStatusPage(const data::Json& s) {
  std::string h =
      "<!doctype html><html><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"refresh\" content=\"2\"><title>tarn training</title><style>"
      "body{font:14px sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
      "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#eee}"
      ".dead{color:#b00}.running{color:#070}</style></head><body>";
  h += "<h1>tarn training: " + Text(s.value("phase", data::Json(""))) + "</h1>";
  h += "<p>bag " + Text(s.value("bag", data::Json(0))) + ", epoch " +
       Text(s.value("epoch", data::Json(0))) + " of " + Text(s.value("epochs", data::Json(0))) +
       ", " + Text(s.value("consistency", data::Json(""))) + ", generation " +
       Text(s.value("generation", data::Json(0))) + ", term " +
       Text(s.value("term", data::Json(0))) + "</p>";
  if (s.contains("error")) h += "<p class=\"dead\">" + Text(s["error"]) + "</p>";
  h += "<h2>Nodes</h2><table><tr><th>node</th><th>role</th><th>index</th><th>slot</th>"
       "<th>state</th><th>address</th><th>where</th><th>epoch</th><th>batch</th><th>exit</th></tr>";
  for (const auto& n : s.value("nodes", data::Json::array())) {
    std::string state = n.value("state", "");
    h += "<tr><td>" + Text(n.value("node", data::Json())) + "</td><td>" +
         Text(n.value("role", data::Json())) + "</td><td>" + Text(n.value("index", data::Json())) +
         "</td><td>" + Text(n.value("slot", data::Json())) + "</td><td class=\"" +
         EscapeMarkup(state) + "\">" + EscapeMarkup(state) + "</td><td>" +
         Text(n.value("address", data::Json())) + "</td><td>" +
         Text(n.value("where", data::Json())) + "</td><td>" + Text(n.value("epoch", data::Json())) +
         "</td><td>" + Text(n.value("position", data::Json())) + "</td><td>" +
         Text(n.value("exit", data::Json())) + "</td></tr>";
  }
  h += "</table><h2>Epochs</h2><table><tr><th>bag</th><th>epoch</th><th>training error</th>"
       "<th>valid error</th><th>AUC</th><th>samples/s</th><th>stale gradients</th>"
       "<th>seconds</th></tr>";
  for (const auto& e : s.value("history", data::Json::array())) {
    h += "<tr>";
    for (const char* k : {"bag", "epoch", "trainError", "validError", "auc", "samplesPerSec",
                          "staleGradients", "seconds"}) {
      h += "<td>" + Text(e.value(k, data::Json())) + "</td>";
    }
    h += "</tr>";
  }
  h += "</table></body></html>\n";
  return h;
}

}  // namespace tarn::runtime
