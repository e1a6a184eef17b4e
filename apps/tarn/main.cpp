// tarn: the command-line front end. Parses arguments into the pipeline's
// option structs and nothing else.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cli.h"
#include "cluster/webhdfs.h"
#include "commands.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/strings.h"
#include "model/train_params.h"
#include "net/http_client.h"  // for ConfigureClusterTls
#include "net/kerberos.h"     // for ConfigureKerberos
#include "pipeline/export_step.h"
#include "pipeline/steps.h"

namespace {

using tarn::Status;

constexpr const char* kVersion = "0.1.0";

struct Command {
  const char* name;
  const char* summary;
  const char* usage;
  const char* details;
  std::vector<std::string> flags;  // the command's own options, without dashes
};

const Command kCommands[] = {
    {"new",
     "create a model set folder with Shifu's default ModelConfig.json",
     "tarn new NAME [-t NN|LR|TENSORFLOW]",
     "  -t ALG        algorithm whose train params are written (default NN)\n"
     "Creates NAME/ModelConfig.json and empty NAME/columns/*.names files. Then set\n"
     "dataSet.dataPath, targetColumnName, posTags and negTags, and run 'tarn init'.\n",
     {"t"}},
    {"init",
     "write ColumnConfig.json from the data header",
     "tarn init [-m DIR]",
     "Reads the header (dataSet.headerPath, or the first line of the first data file),\n"
     "flags the target, weight, meta, force-select and force-remove columns, and types\n"
     "each column N or C: from categoricalColumnNameFile when it lists any, else a column\n"
     "is numeric when >= tarn.init.numeric-ratio (0.95) of its non-missing values among\n"
     "the first tarn.init.type-sample-rows (10000) rows parse as numbers; NaN, Infinity and\n"
     "1e999 are missing values (counted per column). The weight column is numeric and gets\n"
     "stats, never a training input. A rerun keeps the previous ColumnConfig.json as\n"
     "init/ColumnConfig.json.N.\n",
     {}},
    {"stats",
     "compute column statistics and bins (one or two streaming passes)",
     "tarn stats [-c] [-m DIR]",
     "  -c            compute the Pearson correlation matrix into correlation.csv\n"
     "Writes columnStats and columnBinning of ColumnConfig.json (the previous file is\n"
     "kept as tmp/ColumnConfig.json): bins by stats.binningMethod and maxNumBin /\n"
     "cateMaxNumBin, KS, IV, WOE (and weighted), mean, stdDev, skewness, kurtosis,\n"
     "percentiles and distinct counts.\n",
     {"c"}},
    {"norm",
     "normalize the training data into tmp/NormalizedData",
     "tarn norm [-shuffle] [-format binary|text] [-m DIR]",
     "  -shuffle      shuffle rows across shifu.norm.shuffle.size shards (seeded by tarn.seed)\n"
     "  -format F     binary (default): checksummed float32 shards (part-NNNNN.tshard);\n"
     "                text: Shifu's |-delimited gzip layout (part-NNNNN.gz + .pig_header)\n"
     "Applies normalize.normType to every candidate column with stats. Shifu's types:\n"
     "  ZSCALE|ZSCORE, OLD_ZSCALE|OLD_ZSCORE     numeric z-score; categorical positive rate\n"
     "                                           (z-scored; OLD_: as is)\n"
     "  WOE, WEIGHT_WOE                          the bin's WOE (count or weighted)\n"
     "  WOE_ZSCALE|WOE_ZSCORE, WEIGHT_WOE_ZSCALE|WEIGHT_WOE_ZSCORE   z-scored WOE\n"
     "  HYBRID, WEIGHT_HYBRID                    numeric z-score, categorical WOE\n"
     "  ONEHOT, ZSCALE_ONEHOT                    one value per bin (ZSCALE_: categorical only)\n"
     "  ASIS_WOE, ASIS_PR                        numeric raw; categorical WOE or positive rate\n"
     "  DISCRETE_ZSCALE|DISCRETE_ZSCORE          numeric bin's lower boundary, z-scored\n"
     "  ZSCALE_INDEX|ZSCORE_INDEX, ZSCALE_ORDINAL, WOE_INDEX, WOE_ZSCALE_INDEX, MAXMIN_INDEX\n"
     "                                           numeric as named; categorical: the category's\n"
     "                                           index (unseen and missing: the category count)\n"
     "  INDEX                                    every column as its bin index\n"
     "  ZSCALE_APPEND_INDEX|ZSCORE_APPEND_INDEX, WOE_APPEND_INDEX, WOE_ZSCALE_APPEND_INDEX\n"
     "                                           the value, then the bin index\n"
     "Shards mark index values (indexSlots), for models that embed them.\n",
     {"shuffle", "format"}},
    {"varsel",
     "select the columns to train on (sets finalSelect)",
     "tarn varsel [-list] [-reset] [-m DIR]",
     "  -list         print the selected columns with their KS and IV\n"
     "  -reset        clear finalSelect on every column\n"
     "Auto-filter (missingRateThreshold, minIvThreshold, minKsThreshold,\n"
     "correlationThreshold), then rank by varSelect.filterBy (KS, IV, MIX, PARETO, SE, ST) and\n"
     "keep filterNum columns (or all but filterOutRatio). Each run keeps the previous\n"
     "ColumnConfig.json under varsel/ and appends to varsel/varsel.history.\n"
     "SE and ST rank by sensitivity, as Shifu: every row of tmp/NormalizedData is scored by\n"
     "models/model0.tarn with all inputs and with each column's inputs set to 0 (its\n"
     "normalized mean); d = full score - perturbed score (SE) or target - perturbed score\n"
     "(ST), and columns are ranked by rms = sqrt(mean d^2), largest first. The model is\n"
     "trained first (one bag, on the finalSelect columns or else every candidate) when it is\n"
     "missing, or every time with -Dshifu.varsel.se.reuse=false. Writes varsel/se.N and\n"
     "tmp/varselectStats/se (columnNum, name, mean |d|, rms, variance; sorted by rms); with\n"
     "filterEnable false it only writes the report. postCorrelationMetric SE keeps the\n"
     "correlated column with the larger rms.\n",
     {"list", "reset"}},
    {"train",
     "train the networks on the normalized data (models/model{i}.tarn)",
     "tarn train [--yarn] [-m DIR]",
     "Trains train.baggingNum networks (algorithm NN, LR or TensorFlow; train.params as in\n"
     "Shifu: NumHiddenLayers, NumHiddenNodes, ActivationFunc, Propagation, LearningRate,\n"
     "MiniBatchs, RegularizedConstant, ...) on the columns with finalSelect, or, when no\n"
     "column has finalSelect, on every good candidate (stats, KS > 0, IV > 0), as Shifu does.\n"
     "Prints one line per epoch; checkpoints every CheckpointInterval epochs and at the end in\n"
     "tmp/modelsTmp; train.isContinuous: true resumes from the newest checkpoint.\n"
     "  --yarn        train on YARN (runMode DIST, tarn.cluster.backend=yarn; docs/YARN.md)\n"
     "With basic.runMode DIST: a coordinator, shifu.ps.instances parameter servers, one worker\n"
     "per normalized file and backups (docs/DISTRIBUTED.md).\n",
     {"yarn"}},
    {"eval",
     "score the eval sets and measure the models",
     "tarn eval [-run NAME] [-score] [-sort] [-m DIR]",
     "  -run NAME     only the eval set NAME (default: all of ModelConfig.json's evals)\n"
     "  -score        only write EvalScore\n"
     "  -sort         EvalScore rows by score, highest first (default: input order;\n"
     "                -nosort is accepted)\n"
     "  -norm         only write EvalNormalized: the first model's normalized inputs\n"
     "Writes evals/NAME/EvalScore (the target's tags, the weight, mean/max/min/median, each\n"
     "model's score, meta columns; scores x scoreScale; rows in input order),\n"
     "EvalPerformance.json (Shifu's bucketed AUCs, the exact ones as exact*, roc, pr and\n"
     "gains lists), EvalConfusionMatrix, gain chart CSVs and an HTML report.\n",
     {"run", "score", "sort", "nosort", "norm"}},
    {"export",
     "export the models (PMML, ONNX, serving versions) or the column stats",
     "tarn export -t pmml|baggingpmml|onnx|columnstats|serving [-o PATH] [--version N] "
     "[-m DIR]",
     "  -t TYPE       pmml: each models/model{i}.tarn as pmmls/<ModelSetName>{i}.pmml,\n"
     "                scoring raw records (the normalization as PMML transformations);\n"
     "                baggingpmml: one pmmls/<ModelSetName>.pmml averaging every model;\n"
     "                onnx: each models/model{i}.tarn as onnx/model{i}.onnx (input: the\n"
     "                normalized vector, described in model{i}.onnx.json);\n"
     "                columnstats: the column statistics as columnstats.csv\n"
     "                serving: every models/model{i}.tarn as a new numbered version\n"
     "                folder PATH/N/ for 'tarn serve --model-base PATH' (-o is required)\n"
     "  -o PATH       where to write (default as above, in the model set)\n"
     "  --version N   serving: the version number (default: one more than the newest)\n",
     {"t", "o", "version"}},
    {"serve",
     "serve predictions over HTTP (TensorFlow Serving v1 REST, KServe v2)",
     "tarn serve [--model-base DIR | -m MODELSET] [--name NAME] [--port N] [--host IP]",
     "See 'tarn serve --help' for every option and docs/SERVING.md for the API.\n",
     {}},
    {"node",
     "run one node of a distributed training job (what 'tarn train' launches)",
     "tarn node --role coordinator|ps|worker|serving ...",
     "Started by the backends for basic.runMode DIST; see 'tarn node --help' and\n"
     "docs/DISTRIBUTED.md. The job's secret comes in $TARN_JOB_SECRET.\n",
     {}},
    {"yarn",
     "follow, kill or read the logs of tarn's applications on YARN",
     "tarn yarn status|kill|logs APP_ID | tarn yarn list",
     "See 'tarn yarn --help' and docs/YARN.md.\n",
     {}},
    {"assembly",
     "run a YARN service assembly file (Yarnfile) on this machine",
     "tarn assembly launch|status|flex|stop|start|destroy|list ...",
     "See 'tarn assembly --help' and docs/ASSEMBLY.md.\n",
     {}},
    {"keras",
     "describe a Keras model.to_json() file as tarn reads it",
     "tarn keras describe FILE",
     "See 'tarn keras --help' and docs/TRAINING.md (Keras models).\n",
     {}},
    {"settings",
     "list every job setting with its value and meaning",
     "tarn settings [--xml | --train-params] [-Dkey=value ...]",
     "  --xml           print conf/global-default.xml (the documented defaults)\n"
     "  --train-params  print the table of ModelConfig's train#params keys (docs/TRAINING.md)\n",
     {"xml", "train-params"}},
};

void PrintMainHelp() {
  std::printf(
      "tarn %s: a Shifu-compatible ML pipeline for tabular data\n\n"
      "usage: tarn COMMAND [options] [-m DIR] [-Dkey=value ...]\n\n"
      "commands:\n",
      kVersion);
  for (const auto& c : kCommands) std::printf("  %-10s %s\n", c.name, c.summary);
  std::printf(
      "\noptions for every command:\n"
      "  -m DIR        the model set folder (default: the current folder)\n"
      "  -Dkey=value   override a setting of conf/global-default.xml (see 'tarn settings')\n"
      "  -v, -q        more output, or only warnings and errors (no progress, no epochs)\n"
      "  -h, --help    this help, or 'tarn COMMAND --help'\n"
      "  --version     print the version\n\n"
      "Exit status: 0 done, 1 a failure while running, 2 a usage or configuration error.\n\n"
      "A typical run: tarn new income && cd income && (edit ModelConfig.json) &&\n"
      "tarn init && tarn stats && tarn norm && tarn varsel && tarn train && tarn eval\n");
}

const Command* FindCommand(const std::string& name) {
  for (const auto& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

void PrintCommandHelp(const Command& c) {
  std::printf("usage: %s\n\n%s\n%s\ncommon options: -m DIR, -Dkey=value, -v, -q\n", c.usage,
              c.summary, c.details);
}

int Fail(const Status& s) { return tarn::app::Fail("tarn", s); }

int Usage(const std::string& message) {
  return tarn::app::UsageError("tarn", message, "(see 'tarn --help')");
}

// "-shuffle" and "--shuffle" are the same flag (Shifu uses one dash).
std::string FlagName(const std::string& arg) {
  if (arg.rfind("--", 0) == 0) return arg.substr(2);
  if (arg.rfind("-", 0) == 0) return arg.substr(1);
  return "";
}

int PrintSettings(const tarn::Settings& s, bool xml) {
  if (xml) {
    std::fputs(tarn::Settings::DefaultXml().c_str(), stdout);
    return 0;
  }
  for (const auto& d : tarn::DeclaredSettings()) {
    std::printf("%s = %s\n    %s\n", d.name, s.GetString(d.name).c_str(), d.doc);
  }
  for (const auto& k : s.UnknownKeys()) {
    std::printf("%s = %s\n    (not used by tarn)\n", k.c_str(), s.GetString(k).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Chunk buffers of a few MB are allocated and freed for every chunk. Served
  // from fresh mmaps, each would be zeroed by the kernel again (a quarter of
  // the CPU time of a pass); kept in the heap they are reused.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  tarn::cluster::RegisterHdfsFileSystems();  // hdfs:// paths, for every command
  if (argc > 1 && std::strcmp(argv[1], "serve") == 0) return tarn::app::RunServeCommand(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "node") == 0) return tarn::app::RunNodeCommand(argc, argv);
  if (argc > 2 && std::strcmp(argv[1], "yarn") == 0 && std::strcmp(argv[2], "am-selftest") == 0) {
    return tarn::app::RunYarnAmSelftest(argc, argv);
  }
  if (argc > 1 && std::strcmp(argv[1], "yarn") == 0) return tarn::app::RunYarnCommand(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "keras") == 0) return tarn::app::RunKerasCommand(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "assembly") == 0) {
    return tarn::app::RunAssemblyCommand(argc, argv);
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command, model_dir = ".";
  std::vector<std::string> overrides, positional;
  std::map<std::string, std::string> flags;     // flag -> value ("" for switches)
  std::map<std::string, std::string> spelling;  // flag -> as given ("--bogus")
  bool help = false;

  static const std::map<std::string, bool> kTakesValue = {
      {"t", true}, {"format", true}, {"m", true}, {"run", true}, {"o", true}, {"version", true}};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help" || a == "help") {
      help = true;
    } else if (a == "--version" && command.empty()) {
      std::printf("tarn %s\n", kVersion);
      return 0;
    } else if (a.rfind("-D", 0) == 0 && a.size() > 2) {
      overrides.push_back(a.substr(2));
    } else if (tarn::app::ApplyVerbosityFlag(a)) {
    } else if (a.size() > 1 && a[0] == '-') {
      std::string name = FlagName(a), value;
      auto eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else if (kTakesValue.count(name)) {
        if (i + 1 >= args.size()) return Usage("option " + a + " needs a value");
        value = args[++i];
      }
      if (name == "m") {
        model_dir = value;
      } else {
        flags[name] = value;
        spelling[name] = a.substr(0, a.find('='));
      }
    } else if (command.empty()) {
      command = a;
    } else {
      positional.push_back(a);
    }
  }

  if (command.empty()) {
    PrintMainHelp();
    return help ? 0 : 2;
  }
  const Command* cmd = FindCommand(command);
  if (!cmd) return Usage("unknown command '" + command + "'");
  if (help) {
    PrintCommandHelp(*cmd);
    return 0;
  }
  for (const auto& [flag, value] : flags) {
    if (std::find(cmd->flags.begin(), cmd->flags.end(), flag) == cmd->flags.end()) {
      return Usage("'tarn " + command + "' has no option " + spelling[flag] +
                   (cmd->flags.empty() ? std::string()
                                       : " (its options: -" + tarn::Join(cmd->flags, ", -") + ")"));
    }
  }

  if (command == "train" && flags.count("yarn")) overrides.push_back("tarn.cluster.backend=yarn");
  auto settings = tarn::pipeline::LoadSettings(argv[0], overrides);
  if (!settings.ok()) return Fail(settings.status());
  // Before any thread: a keytab login changes the environment (KRB5CCNAME).
  if (Status k = tarn::net::ConfigureKerberos(*settings); !k.ok()) return Fail(k);
  if (Status t = tarn::net::ConfigureClusterTls(*settings); !t.ok()) return Fail(t);

  if (command == "settings") {
    if (flags.count("train-params")) {
      std::fputs(tarn::model::TrainParamsMarkdown().c_str(), stdout);
      return 0;
    }
    return PrintSettings(*settings, flags.count("xml") > 0);
  }
  if (command == "new") {
    if (positional.size() != 1) return Usage("usage: tarn new NAME [-t NN|LR|TENSORFLOW]");
    tarn::pipeline::NewOptions o;
    o.name = positional[0];
    if (flags.count("t")) o.algorithm = flags["t"];
    Status s = tarn::pipeline::NewModelSet(o);
    return s.ok() ? 0 : Fail(s);
  }
  if (!positional.empty()) return Usage("unexpected argument '" + positional[0] + "'");

  auto ms = tarn::pipeline::OpenModelSet(model_dir, *settings);
  if (!ms.ok()) return Fail(ms.status());
  Status s;
  if (command == "init") {
    s = tarn::pipeline::RunInit(*ms);
  } else if (command == "stats") {
    tarn::pipeline::StatsOptions o;
    o.correlation = flags.count("c") > 0;
    s = tarn::pipeline::RunStats(*ms, o);
  } else if (command == "norm") {
    tarn::pipeline::NormOptions o;
    o.shuffle = flags.count("shuffle") > 0;
    if (flags.count("format")) {
      std::string f = tarn::ToLower(flags["format"]);
      if (f != "text" && f != "binary") {
        return Usage("-format must be binary or text, got '" + flags["format"] + "'");
      }
      o.text_format = f == "text";
    }
    s = tarn::pipeline::RunNorm(*ms, o);
  } else if (command == "train") {
    tarn::pipeline::TrainOptions o;
    o.distributed = flags.count("yarn") > 0;
    s = tarn::pipeline::RunTrain(*ms, o);
  } else if (command == "eval") {
    tarn::pipeline::EvalOptions o;
    if (flags.count("run")) o.name = flags["run"];
    o.score_only = flags.count("score") > 0;
    // Input order is the default; -nosort (Shifu's flag for it) is accepted.
    o.sort_by_score = flags.count("sort") > 0;
    o.norm_only = flags.count("norm") > 0;
    s = tarn::pipeline::RunEval(*ms, o);
  } else if (command == "export") {
    tarn::pipeline::ExportOptions o;
    if (!flags.count("t"))
      return Usage("tarn export needs -t pmml, baggingpmml, onnx, columnstats or serving");
    o.type = flags["t"];
    if (flags.count("o")) o.output = flags["o"];
    if (flags.count("version")) {
      auto v = tarn::ParseInt(flags["version"]);
      if (!v || *v < 1) return Usage("--version needs a positive integer");
      o.version = *v;
    }
    s = tarn::pipeline::RunExport(*ms, o);
  } else if (command == "varsel") {
    tarn::pipeline::VarselOptions o;
    o.list = flags.count("list") > 0;
    o.reset = flags.count("reset") > 0;
    s = tarn::pipeline::RunVarsel(*ms, o);
  }
  return s.ok() ? 0 : Fail(s);
}
