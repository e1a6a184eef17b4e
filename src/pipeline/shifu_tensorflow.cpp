// shifu-tensorflow model sets: the rule, the pre-launch checks, the data layout and the
// service of roles (see shifu_tensorflow.h).
#include "pipeline/shifu_tensorflow.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "assembly/runner.h"
#include "assembly/tf_cluster.h"
#include "common/files.h"
#include "common/log.h"
#include "common/shell.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "data/gzip_writer.h"
#include "data/shard.h"
#include "data/text_reader.h"
#include "net/sha256.h"

namespace tarn::pipeline {

using data::Json;

const std::vector<ShifuStockScript>& ShifuStockScripts() {
  // Computed from ShifuML/shifu's `release` branch (0.12.10 at ab3c2ce1): every version of
  // each script in that branch's history, by the commit that wrote it. Facts about Shifu's
  // files, kept so that a model set holding an unedited copy is recognized.
  static const std::vector<ShifuStockScript> kScripts = {
      {"distributed_tf_keras.py",
       "939856ff4c406045bfcff5499eae8527086649a67b254557f79dea40b2abda46", "22f83853",
       "2021-03-31"},
      {"distributed_tf_keras.py",
       "575196fd2c1a8a08593e87e7f48878117618c125db295be2c8dd31ad579e4950", "c5654bd2",
       "2020-01-11"},
      {"distributed_tf_keras.py",
       "c4af7c65a312706b67a014345ccd94e819e74cabd764e4a6c4ad1da086405413", "f37bdfb3",
       "2019-11-06"},
      {"distributed_tf_keras.py",
       "929776b6533c4229addc11af3d0deaba90a42d3b8e658c4bb1dd25c7bb72a974", "76e64685",
       "2019-10-16"},
      {"distributed_tf_keras.py",
       "ceb00c1d4a869839bd0c7cdbd9662d58c530943c4c2d15b54b616355765a1cf4", "1d0af32b",
       "2019-09-29"},
      {"distributed_tf_keras.py",
       "110f5fc349d8aa425fb179d4c84750007b38a622e7f755efd617aa018020b747", "2aa3031d",
       "2019-09-29"},
      {"distributed_tf_keras.py",
       "dcce5587b47e3c05148455ea6f2894c3d6ab35e7bf0244a1cc9fa373e849e463", "8b14e47b",
       "2019-09-28"},
      {"distributed_tf_keras.py",
       "2ca67dccba4ceff2653999ff010c0d994bedd18a31d712d98c68ecb42ce2728c", "377a9b03",
       "2019-09-28"},
      {"distributed_tf_keras.py",
       "9a7294489f9575718285284d75eb6a4c70d9d85c39c228f0df7774e15b1b10bd", "85494388",
       "2019-09-28"},
      {"distributed_tf_keras.py",
       "7f2e28eab145eba8fba496fbfda49fe0ce642ca5fbc668434e9a947918f48701", "8e1137cf",
       "2019-09-28"},
      {"distributed_tf_keras.py",
       "cafda045188341de95e950119288d26ef6fb6b8696ea4403284552cba7ef6c9a", "c0cbc8e1",
       "2019-09-28"},
      {"distributed_tf_keras.py",
       "f651e3160988132735a3bbc1df2a5d319e58db6b3a6dff256df81315ab612f42", "f029cdf1",
       "2019-09-27"},
      {"distributed_tf_keras.py",
       "73a6a99040f370eaed2229f0807cbb43a9e53e7ff1e7e05361a7ed9191ae18e3", "283a7552",
       "2019-09-24"},
      {"distributed_tf_keras.py",
       "c711864d8eb1069f47b359d910e2173a21abcae14fa96043122919afac7e7909", "7d7f2bcf",
       "2019-09-23"},
      {"distributed_tf_keras.py",
       "ba88d9870c7a81815449d9b886ce27e985f57bd0a507853f8a4636f95f58cf8b", "824e5caf",
       "2019-09-23"},
      {"distributed_tf_keras.py",
       "8ae1583090d6fb4cceb2b97571bb82bcc4f26af145f44439f42567c45e4284ba", "379e64c9",
       "2019-09-22"},
      {"distributed_tf_tensor.py",
       "b0525d63615da7fc44dda01242960940e44dad6c9097f70f6bedc898fe8a794b", "f029cdf1",
       "2019-09-27"},
      {"distributed_tf_tensor.py",
       "52514499415f5edbcd65b38e3870404e16659f77e7e6f91685acc1c175f08863", "379e64c9",
       "2019-09-22"},
      {"distributed_tf_estimator.py",
       "e5ea00816391a4a3715d625cc7f5c74a2a82c83707791c87dfeace28e1767085", "f029cdf1",
       "2019-09-27"},
      {"distributed_tf_estimator.py",
       "c62005f226ddb4de9e852d32a3658c86d373bf4f7aa1bd4c4eaac54e2288da62", "379e64c9",
       "2019-09-22"},
      {"distributed_tf_keras_to_estimator.py",
       "33c3a210346d7a478ac905e1ea0b99db702c1965ae364681f34407c4b58bfe84", "379e64c9",
       "2019-09-22"},
      {"distributed_tf20_keras.py",
       "e267c358648a4dea1d8a90803e108c855956078a6ce881a5022200cfd2b47bc3", "5b06e5f8",
       "2020-06-28"},
  };
  return kScripts;
}

const ShifuStockScript* FindShifuStockScript(std::string_view contents) {
  const std::string digest = net::Sha256Hex(contents);
  for (const auto& s : ShifuStockScripts()) {
    if (s.sha256 == digest) return &s;
  }
  return nullptr;
}

Result<std::string> ShifuScriptName(const Json& params) {
  auto text_of = [&](const char* key) -> Result<std::optional<std::string>> {
    if (!params.is_object() || !params.contains(key) || params[key].is_null()) {
      return std::optional<std::string>();
    }
    if (!params[key].is_string()) {
      return InvalidArgument(std::string("train.params.") + key + " must be a string, got " +
                             params[key].dump());
    }
    return std::optional<std::string>(params[key].get<std::string>());
  };
  TARN_ASSIGN_OR_RETURN(auto version, text_of("TF.version"));
  TARN_ASSIGN_OR_RETURN(auto type, text_of("TF_type"));
  TARN_ASSIGN_OR_RETURN(auto doc_type, text_of("TF_Type"));
  if (type && doc_type && ToLower(*type) != ToLower(*doc_type)) {
    return InvalidArgument("train.params.TF_type ('" + *type + "') and TF_Type ('" + *doc_type +
                           "') disagree; keep one");
  }
  if (!type) type = doc_type;
  const std::string kind = type ? ToLower(*type) : "keras";
  if (kind.empty() || kind.find_first_of("/\\.") != std::string::npos) {
    return InvalidArgument("train.params.TF_type '" + kind +
                           "' names no script (keras, tensor, estimator, keras_to_estimator)");
  }
  // Shifu compares TF.version with the string "2.0" (CommonConstants.TF_V2).
  const bool tf2 = version && *version == "2.0";
  return std::string(tf2 ? "distributed_tf20_" : "distributed_tf_") + kind + ".py";
}

std::string ScriptDecision::Line() const {
  return "train: " + script + ": " +
         (run_script ? "running this script" : "tarn's native engine trains instead") + " (" +
         reason + ")";
}

Result<std::optional<ScriptDecision>> DecideShifuScript(const ModelSet& ms, bool distributed) {
  if (ToLower(ms.config.train.algorithm) != "tensorflow") return std::optional<ScriptDecision>();
  const std::string mode = ToLower(ms.settings.GetString("tarn.train.script"));
  if (mode != "auto" && mode != "run" && mode != "native") {
    return InvalidArgument("tarn.train.script must be auto, run or native, got '" +
                           ms.settings.GetString("tarn.train.script") + "'");
  }
  TARN_ASSIGN_OR_RETURN(std::string name, ms.InConfig(ShifuScriptName(ms.config.train.params)));
  ScriptDecision d;
  d.script = ms.Path(name);
  if (!PathExists(d.script)) {
    if (mode == "run") {
      return FailedPrecondition("tarn.train.script=run, but " + d.script +
                                " does not exist (Shifu copies its stock " + name +
                                " there on the first run; put the script to run there)");
    }
    d.reason = "the model set has no " + name +
               "; Shifu would copy its stock one there and run it, and tarn's native engine "
               "trains the network that script builds from train#params";
    return std::optional<ScriptDecision>(d);
  }
  TARN_ASSIGN_OR_RETURN(std::string contents, ReadFile(d.script));
  const ShifuStockScript* stock = FindShifuStockScript(contents);
  d.stock = stock != nullptr;
  d.edited = !d.stock;
  const std::string what =
      stock ? "byte-identical to Shifu's stock " + std::string(stock->name) + " (ShifuML/shifu " +
                  std::string(stock->commit) + ", " + std::string(stock->date) + ")"
            : "differs from every Shifu stock copy (sha256 " + net::Sha256Hex(contents) + ")";
  const std::string run_mode = ToUpper(ms.config.run_mode);
  if (mode == "native") {
    d.reason = what + "; tarn.train.script=native";
  } else if (mode == "run") {
    d.run_script = true;
    d.reason = what + "; tarn.train.script=run";
  } else if (!distributed && run_mode != "DIST" && run_mode != "MAPRED") {
    d.reason = "runMode " + run_mode + ": Shifu runs " + name +
               " only in runMode DIST or MAPRED; -Dtarn.train.script=run runs it anyway";
  } else if (stock) {
    d.reason = what +
               ": tarn's native engine trains the network it builds from train#params; "
               "-Dtarn.train.script=run runs the script";
  } else {
    d.run_script = true;
    d.reason = what + "; -Dtarn.train.script=native trains tarn's native engine instead";
  }
  return std::optional<ScriptDecision>(d);
}

namespace {

// Prints one JSON object: the Python version, the installed TensorFlow distribution's
// version, whether tf-keras is installed, and the script's SyntaxError when it does not
// compile. Runs on Python 2 as well (to say that it is Python 2).
constexpr const char* kProbe = R"(import sys, json
out = {"python": "%d.%d.%d" % tuple(sys.version_info[:3])}
try:
    import importlib.metadata as md
except ImportError:
    md = None
def installed(name):
    try:
        return md.version(name) if md else None
    except Exception:
        return None
for name in ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
             "tensorflow-macos", "tf-nightly", "tf-nightly-cpu"):
    v = installed(name)
    if v:
        out["tensorflow"] = v
        break
out["tf_keras"] = installed("tf-keras") is not None or installed("tf_keras") is not None
try:
    compile(open(sys.argv[1], "rb").read(), sys.argv[1], "exec")
except SyntaxError as e:
    out["syntax_error"] = "line %s: %s" % (e.lineno, e.msg)
print(json.dumps(out))
)";

// "2.15.1" -> {2, 15}; unparsable parts are 0.
std::pair<int, int> MajorMinor(const std::string& version) {
  auto parts = Split(version, ".");
  auto at = [&](size_t i) {
    if (i >= parts.size()) return 0;
    auto v = ParseInt(parts[i]);
    return v ? static_cast<int>(*v) : 0;
  };
  return {at(0), at(1)};
}

bool AtLeast(const std::string& version, int major, int minor) {
  auto [a, b] = MajorMinor(version);
  return a > major || (a == major && b >= minor);
}

// A line's code without a trailing comment (a '#' outside quotes).
std::string_view CodeOf(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

// Whether `code` has `name` not preceded by an identifier character or a '.'.
bool HasName(std::string_view code, std::string_view name) {
  for (size_t at = code.find(name); at != std::string_view::npos; at = code.find(name, at + 1)) {
    if (at == 0) return true;
    char before = code[at - 1];
    if (!(std::isalnum(static_cast<unsigned char>(before)) || before == '_' || before == '.')) {
      return true;
    }
  }
  return false;
}

struct ApiUse {
  std::string api;
  std::string why;
  int line = 0;
  int rank = 0;  // listed by: Python 2, removed from TensorFlow, Keras 3, TF 1.x names; then line
};

}  // namespace

Result<PythonFacts> ProbePython(const std::string& python, const std::string& script) {
  const std::string command =
      ShellQuote(python) + " -c " + ShellQuote(kProbe) + " " + ShellQuote(script) + " 2>&1";
  auto out = CaptureOutput(command, "tarn.train.script.python '" + python + "'");
  if (!out.ok()) {
    return FailedPrecondition(out.status().message() +
                              ": set -Dtarn.train.script.python to a Python with TensorFlow");
  }
  Json j;
  try {
    j = Json::parse(std::string(Trim(*out)));
  } catch (const std::exception&) {
    return FailedPrecondition("tarn.train.script.python '" + python +
                              "' answered the probe with: " + std::string(Trim(*out)));
  }
  PythonFacts f;
  f.python_version = j.value("python", "");
  f.tensorflow_version = j.value("tensorflow", "");
  f.tf_keras = j.value("tf_keras", false);
  f.syntax_error = j.value("syntax_error", "");
  return f;
}

Status CheckScriptRunnable(const std::string& script_path, std::string_view script,
                           const PythonFacts& facts, const std::string& python) {
  const std::string found =
      "tarn.train.script.python '" + python + "' is Python " + facts.python_version +
      (facts.tensorflow_version.empty() ? " without TensorFlow"
                                        : " with TensorFlow " + facts.tensorflow_version);
  const bool py3 = !StartsWith(facts.python_version, "2.");
  if (!facts.syntax_error.empty()) {
    return FailedPrecondition(script_path + ": " + facts.syntax_error + " (" + found +
                              (py3 ? "; the script may be Python 2, which TensorFlow 2 does not "
                                     "run on)"
                                   : ")"));
  }
  if (facts.tensorflow_version.empty()) {
    return FailedPrecondition(script_path + " needs TensorFlow: " + found +
                              " (pip install tensorflow-cpu, or point tarn.train.script.python "
                              "at a Python that has it)");
  }
  const std::string& tf = facts.tensorflow_version;
  const bool tf2 = AtLeast(tf, 2, 0);
  const bool keras3 = AtLeast(tf, 2, 16) && !facts.tf_keras;
  bool compat_v1_as_tf = false;  // `import tensorflow.compat.v1 as tf`: TF 1 names are fine
  std::vector<ApiUse> uses;
  auto lines = Split(script, "\n");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view code = CodeOf(lines[i]);
    if (Trim(code).empty()) continue;
    if (code.find("tensorflow.compat.v1 as tf") != std::string_view::npos) compat_v1_as_tf = true;
    int rank = 0;
    auto use = [&](bool blocked, std::string api, std::string why) {
      if (!blocked) return;
      for (const auto& u : uses) {
        if (u.api == api) return;
      }
      uses.push_back({std::move(api), std::move(why), static_cast<int>(i + 1), rank});
    };
    const std::string py2 = "a Python 2 module; Python " + facts.python_version + " has none";
    if (py3) {
      use(HasName(code, "from StringIO import") || HasName(code, "import StringIO"), "StringIO",
          py2 + " (Python 3: io.BytesIO)");
      use(HasName(code, "from cStringIO import") || HasName(code, "import cStringIO"), "cStringIO",
          py2);
      use(HasName(code, "import cPickle"), "cPickle", py2);
      use(HasName(code, "import urllib2"), "urllib2", py2);
      use(HasName(code, "sys.maxint"), "sys.maxint", "Python 2 only (Python 3: sys.maxsize)");
      use(HasName(code, "xrange("), "xrange", "Python 2 only (Python 3: range)");
    }
    rank = 1;
    if (tf2) {
      use(HasName(code, "tf.contrib") || HasName(code, "tensorflow.contrib"), "tf.contrib",
          "removed in TensorFlow 2.0, no tf.compat form");
    }
    if (AtLeast(tf, 2, 16)) {
      use(HasName(code, "tf.estimator") || HasName(code, "tensorflow.python.estimator") ||
              HasName(code, "tf.compat.v1.estimator") || HasName(code, "tensorflow_estimator"),
          "tf.estimator", "removed in TensorFlow 2.16 (the last with it is 2.15)");
    }
    rank = 2;
    if (keras3) {
      for (const char* call : {"set_learning_phase", "manual_variable_initialization"}) {
        if (code.find(std::string("backend.") + call) != std::string_view::npos) {
          use(true, std::string("keras.backend.") + call,
              "Keras 2 only; TensorFlow " + tf +
                  "'s tf.keras is Keras 3 (pip install tf-keras, with TF_USE_LEGACY_KERAS=1)");
        }
      }
    }
    rank = 3;
    if (tf2 && !compat_v1_as_tf) {
      for (const char* v1 :
           {"tf.train.Server", "tf.train.replica_device_setter", "tf.train.SyncReplicasOptimizer",
            "tf.train.MonitoredTrainingSession", "tf.train.AdamOptimizer",
            "tf.train.GradientDescentOptimizer", "tf.train.AdagradOptimizer", "tf.train.Saver",
            "tf.placeholder", "tf.Session", "tf.ConfigProto", "tf.get_variable", "tf.gfile",
            "tf.app.run", "tf.initialize_all_variables", "tf.reset_default_graph"}) {
        if (HasName(code, v1)) {
          const std::string name(v1);
          use(true, name,
              "TensorFlow 1.x; TensorFlow 2 has it only as tf.compat.v1." + name.substr(3));
        }
      }
    }
  }
  if (uses.empty()) return Status::Ok();
  std::stable_sort(uses.begin(), uses.end(),
                   [](const ApiUse& a, const ApiUse& b) { return a.rank < b.rank; });
  std::string msg = script_path + " cannot run on " + found + ":";
  const size_t shown = std::min<size_t>(uses.size(), 6);
  for (size_t i = 0; i < shown; ++i) {
    msg += "\n  line " + std::to_string(uses[i].line) + ": " + uses[i].api + ": " + uses[i].why;
  }
  if (uses.size() > shown) msg += "\n  and " + std::to_string(uses.size() - shown) + " more";
  msg +=
      "\n(Shifu's Python 3 port is distributed_tf20_keras.py, train.params \"TF.version\": "
      "\"2.0\", which needs TensorFlow <= 2.15; -Dtarn.train.script=native trains tarn's "
      "native engine)";
  return FailedPrecondition(msg);
}

Result<ShifuTextData> PrepareShifuTextData(const ModelSet& ms,
                                           const std::vector<data::ColumnConfig>& columns,
                                           const std::string& out_dir) {
  const std::string dir = ms.NormalizedDataDir();
  auto names = ListDirectory(dir);
  if (!names.ok()) {
    return FailedPrecondition(dir + " cannot be read (" + names.status().message() +
                              "); run 'tarn norm' first");
  }
  ShifuTextData out;
  std::vector<std::string> shards;
  for (const auto& n : *names) {
    if (n.empty() || n[0] == '.' || n[0] == '_') continue;
    if (EndsWith(n, data::kShardSuffix)) shards.push_back(JoinPath(dir, n));
    if (EndsWith(n, ".gz")) out.parts.push_back(JoinPath(dir, n));
  }
  if (shards.empty()) {
    if (out.parts.empty()) {
      return FailedPrecondition(dir + " holds no normalized data; run 'tarn norm' first");
    }
    // norm -format text wrote Shifu's layout already: count its rows.
    for (const auto& p : out.parts) {
      TARN_ASSIGN_OR_RETURN(auto reader, data::ChunkReader::Open(p, size_t{4} << 20));
      data::TextChunk chunk;
      while (true) {
        TARN_ASSIGN_OR_RETURN(bool more, reader->Next(&chunk));
        if (!more) break;
        out.rows += static_cast<uint64_t>(std::count(chunk.text.begin(), chunk.text.end(), '\n'));
      }
    }
    return out;
  }
  out.parts.clear();
  out.converted = true;
  TARN_RETURN_IF_ERROR(RemoveAll(out_dir));
  TARN_RETURN_IF_ERROR(MakeDirs(out_dir));
  int target = -1;
  std::vector<int> place(columns.size(), -1);  // column number -> its place in `columns`
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].column_num >= 0 && static_cast<size_t>(columns[i].column_num) < place.size()) {
      place[columns[i].column_num] = static_cast<int>(i);
    }
    if (columns[i].IsTarget()) target = static_cast<int>(i);
  }
  if (target < 0) {
    return FailedPrecondition(ms.ColumnConfigPath() + " has no target column; run 'tarn init'");
  }
  for (size_t s = 0; s < shards.size(); ++s) {
    TARN_ASSIGN_OR_RETURN(auto reader, data::ShardReader::Open(shards[s]));
    const auto& schema = reader->schema();
    // Each feature's field and its first float in the row.
    std::vector<std::pair<int, int>> slots;
    int offset = 0;
    for (const auto& f : schema.features) {
      if (f.column_num < 0 || static_cast<size_t>(f.column_num) >= place.size() ||
          place[f.column_num] < 0) {
        return FailedPrecondition(shards[s] + ": column " + std::to_string(f.column_num) + " (" +
                                  f.name + ") is not in " + ms.ColumnConfigPath() +
                                  "; run 'tarn norm' again");
      }
      slots.push_back({place[f.column_num], offset});
      offset += f.width;
    }
    char name[32];
    std::snprintf(name, sizeof(name), "part-%05zu.gz", s);
    const std::string path = JoinPath(out_dir, name);
    TARN_ASSIGN_OR_RETURN(auto gz, data::GzipWriter::Create(path));
    std::vector<std::string> fields(columns.size());
    std::string text;
    char num[32];
    auto append_float = [&](std::string* to, float v) {
      auto [p, ec] = std::to_chars(num, num + sizeof(num), v);
      to->append(num, p);
    };
    const int features = schema.FeatureCount();
    for (uint64_t r = 0; r < reader->rows(); ++r) {
      const float* row = reader->row(r);
      for (auto& f : fields) f.clear();
      fields[target] = row[features] > 0.5f ? "1" : "0";
      for (size_t k = 0; k < slots.size(); ++k) {
        std::string& field = fields[slots[k].first];
        for (int w = 0; w < schema.features[k].width; ++w) {
          if (w) field += ',';
          append_float(&field, row[slots[k].second + w]);
        }
      }
      for (size_t c = 0; c < fields.size(); ++c) {
        if (c) text += '|';
        text += fields[c];
      }
      text += '|';
      append_float(&text, row[features + 1]);
      text += '\n';
      if (text.size() > (1 << 20)) {
        TARN_RETURN_IF_ERROR(gz.Write(text));
        text.clear();
      }
    }
    TARN_RETURN_IF_ERROR(gz.Write(text));
    TARN_RETURN_IF_ERROR(gz.Finish());
    out.rows += reader->rows();
    out.parts.push_back(path);
  }
  return out;
}

Result<std::vector<std::string>> SplitPartsAcrossWorkers(const std::vector<std::string>& parts,
                                                         int workers) {
  if (workers < 1) return InvalidArgument("a shifu-tensorflow job needs at least one worker");
  if (static_cast<int>(parts.size()) < workers) {
    return InvalidArgument(
        std::to_string(workers) + " workers but " + std::to_string(parts.size()) +
        " normalized data files: each worker reads whole files, as in shifu-tensorflow (set "
        "shifu.worker.instances, or write more files with -Dtarn.norm.shards=N)");
  }
  std::vector<std::vector<std::string>> lists(workers);
  for (size_t i = 0; i < parts.size(); ++i) lists[i % workers].push_back(parts[i]);
  std::vector<std::string> out;
  for (const auto& l : lists) out.push_back(Join(l, ","));
  return out;
}

// Hadoop's limit on a component's failures, which tarn's runner applies to takeovers too.
constexpr const char* kFailureThresholdProperty =
    "yarn.service.container-failure-per-component.threshold";

assembly::Service ShifuScriptService(const ShifuScriptJob& job, const std::string& name) {
  assembly::Service service;
  service.name = name;
  service.version = "1";
  service.description = "shifu-tensorflow script " + job.script;
  // The script reads ./ModelConfig.json (and Shifu localizes ColumnConfig.json beside it);
  // TASK_ID is shifu-tensorflow's name for the task index.
  const std::string prologue = "cp " + ShellQuote(JoinPath(job.model_set, "ModelConfig.json")) +
                               " " + ShellQuote(JoinPath(job.model_set, "ColumnConfig.json")) +
                               " . && export TASK_ID=\"$TASK_INDEX\" && ";
  const std::string exec = "exec " + ShellQuote(job.python) + " " + ShellQuote(job.script);
  auto component = [&](const std::string& role, int count, const std::string& command) {
    assembly::Component c;
    c.name = role;
    c.number_of_containers = count;
    c.launch_command = command;
    c.restart_policy = assembly::RestartPolicy::kNever;
    c.configuration.env = job.env;
    c.configuration.properties[assembly::kTfRoleProperty] = role;
    c.index = static_cast<int>(service.components.size());
    return c;
  };
  service.components.push_back(component("ps", job.ps, prologue + exec));
  // A worker's files by its task index: a backup that takes over a task reads that task's.
  assembly::Component worker =
      component("worker", job.workers,
                prologue + "export TRAINING_DATA_PATH=\"$(cat " + ShellQuote(job.data_lists_dir) +
                    "/worker-\"$TASK_INDEX\".data)\" && " + exec);
  worker.configuration.properties[assembly::kBackupsProperty] = std::to_string(job.backups);
  // Each backup takes over once, as shifu-tensorflow's fixed pool of backups does.
  if (job.backups > 0) {
    worker.configuration.properties[kFailureThresholdProperty] = std::to_string(job.backups);
  }
  service.components.push_back(worker);
  return service;
}

std::string ShifuScriptYarnfile(const ShifuScriptJob& job, const std::string& name) {
  const std::string files = data::ChildPath(job.job_dir, "files");
  const std::string script = BaseName(job.script);
  Json config_files = Json::array();
  for (const std::string& f :
       {script, std::string("ModelConfig.json"), std::string("ColumnConfig.json")}) {
    config_files.push_back(
        {{"type", "STATIC"}, {"dest_file", f}, {"src_file", data::ChildPath(files, f)}});
  }
  // The launcher writes STATIC files under resources/; the script reads ./ModelConfig.json.
  const std::string prologue =
      "cp resources/ModelConfig.json resources/ColumnConfig.json . && "
      "export TASK_ID=\"$TASK_INDEX\" && exec ./tarn assembly shifu-task ";
  const std::string command =
      "-- " + ShellQuote(job.python) + " " + ShellQuote("resources/" + script);
  auto component = [&](const std::string& role, int count, int64_t memory_mb, int vcores,
                       const std::string& launch) {
    Json env = Json::object();
    for (const auto& [k, v] : job.env) env[k] = v;
    Json c = {{"name", role},
              {"number_of_containers", count},
              {"restart_policy", "NEVER"},
              {"launch_command", launch},
              {"resource", {{"cpus", vcores}, {"memory", std::to_string(memory_mb)}}},
              {"configuration",
               {{"properties", {{assembly::kTfRoleProperty, role}}},
                {"env", env},
                {"files", config_files}}}};
    return c;
  };
  Json ps = component("ps", job.ps, job.ps_memory_mb, job.ps_vcores, prologue + command);
  Json worker = component("worker", job.workers, job.worker_memory_mb, job.worker_vcores,
                          prologue + "--model-out " +
                              ShellQuote(data::ChildPath(job.job_dir, "model")) + " " + command);
  // A worker's files by its task index: a backup that takes over a task reads that task's.
  for (size_t i = 0; i < job.worker_data.size(); ++i) {
    worker["configuration"]["env"]["TARN_SHIFU_DATA_" + std::to_string(i)] = job.worker_data[i];
  }
  worker["configuration"]["properties"][assembly::kBackupsProperty] = std::to_string(job.backups);
  if (job.backups > 0) {
    worker["configuration"]["properties"][kFailureThresholdProperty] = std::to_string(job.backups);
  }
  Json spec = {{"name", name},
               {"version", "1"},
               {"description", "shifu-tensorflow script " + job.script},
               {"components", Json::array({ps, worker})}};
  return spec.dump(2) + "\n";
}

}  // namespace tarn::pipeline
