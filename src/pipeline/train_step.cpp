// tarn train: trains baggingNum networks on tmp/NormalizedData (the columns
// with finalSelect), with a deterministic validation split, checkpoints under
// tmp/modelsTmp and the final models in models/model{i}.tarn.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/thread_pool.h"
#include "data/normalizer.h"
#include "data/shard.h"
#include "model/epoch_report.h"
#include "model/model_file.h"
#include "model/network.h"
#include "model/optimizer.h"
#include "model/serving_version.h"
#include "model/tensorboard.h"
#include "model/training_data.h"
#include "pipeline/shifu_tensorflow.h"
#include "pipeline/steps.h"
#include "train/batch_loop.h"
#include "train/epoch_outcome.h"
#include "train/graph_models.h"
#include "train/graph_trainer.h"
#include "train/model_output.h"
#include "train/sampling.h"
#include "train/setup.h"
#include "train/validation.h"

namespace tarn::pipeline {

namespace {

using model::TrainingData;

// `columns`: ColumnConfig.json, read once by the caller.
Result<TrainingData> LoadTrainingData(const ModelSet& ms, const TrainOptions& options,
                                      const std::vector<data::ColumnConfig>& columns,
                                      uint64_t seed) {
  TARN_ASSIGN_OR_RETURN(auto o, options.inputs.empty() ? ms.TrainingDataFrom(seed, columns)
                                                       : ms.TrainingData(seed, options.inputs));
  return model::LoadTrainingData(o);
}

std::string CheckpointName(int bag, int epoch) {
  return "model" + std::to_string(bag) + "-" + std::to_string(epoch) + ".tarn";
}

// The newest checkpoint of `bag` in `dir`, or "" when there is none.
std::string NewestCheckpoint(const std::string& dir, int bag) {
  auto names = ListDirectory(dir);
  if (!names.ok()) return "";
  std::string prefix = "model" + std::to_string(bag) + "-";
  int best = -1;
  std::string path;
  for (const auto& n : *names) {
    if (!StartsWith(n, prefix) || !EndsWith(n, ".tarn")) continue;
    auto epoch = ParseInt(std::string_view(n).substr(prefix.size(), n.size() - prefix.size() - 5));
    if (epoch && *epoch > best) {
      best = static_cast<int>(*epoch);
      path = JoinPath(dir, n);
    }
  }
  return path;
}

// A graph checkpoint's extra resume state: where the dense optimizer's
// state ends in optimizer_state (the tables' per-row state follows), and
// the tables' step counters.
constexpr char kDenseStateKey[] = "denseOptimizerStateSize";
constexpr char kTableStepsKey[] = "tableSteps";

// A graph's checkpoint back into its flat vector, optimizer and tables.
Status LoadGraphCheckpoint(const model::ModelFile& ck, const train::GraphTrainer& graph,
                           model::Optimizer* optimizer, train::LocalTables* tables,
                           std::vector<float>* params) {
  const auto& g = graph.graph();
  auto dense_state = ck.checkpoint.find(kDenseStateKey);
  auto steps = ck.checkpoint.find(kTableStepsKey);
  if (dense_state == ck.checkpoint.end() || !dense_state->is_number_unsigned() ||
      steps == ck.checkpoint.end() || !steps->is_array() ||
      dense_state->get<size_t>() > ck.optimizer_state.size()) {
    return Corrupt("a graph checkpoint without its tables' state");
  }
  const size_t dense = g.DenseParameterCount();
  std::vector<std::span<const float>> values;
  size_t at = dense;
  for (const auto& t : g.tables()) {
    const size_t n = static_cast<size_t>(t.rows) * t.dim;
    values.emplace_back(ck.params.data() + at, n);
    at += n;
  }
  params->assign(ck.params.begin(), ck.params.begin() + static_cast<ptrdiff_t>(dense));
  params->insert(params->end(), ck.params.begin() + static_cast<ptrdiff_t>(at), ck.params.end());
  const size_t split = dense_state->get<size_t>();
  TARN_RETURN_IF_ERROR(optimizer->LoadState(std::vector<float>(
      ck.optimizer_state.begin(), ck.optimizer_state.begin() + static_cast<ptrdiff_t>(split))));
  std::vector<uint64_t> table_steps;
  for (const auto& s : *steps) {
    if (!s.is_number_unsigned()) return Corrupt("a graph checkpoint with bad table steps");
    table_steps.push_back(s.get<uint64_t>());
  }
  return tables->LoadState(
      values,
      std::span<const float>(ck.optimizer_state.data() + split, ck.optimizer_state.size() - split),
      table_steps);
}

// What every bag reads and none writes, so that bags can train at once.
struct BagContext {
  const ModelSet& ms;
  const data::TrainConfig& tc;
  const train::TrainSetup& setup;
  const TrainingData& data;  // shared by every bag, never copied
  const train::ModelDescription& description;
  const model::Network* net = nullptr;  // an MLP; graphs get a trainer per bag
  const std::vector<std::string>& unregularized;
  uint64_t seed = 0;
  int patience = 0;
  bool tensorboard = false;
  std::string tmp_dir, tensorboard_dir;
  int threads = 1;        // the most threads one bag's batches and validation use
  bool progress = false;  // a progress bar on the terminal (one bag at a time only)
  model::ServingExportHook* serving = nullptr;
};

// What a bag did, for the run's total.
struct BagOutcome {
  int64_t samples = 0;  // rows trained, over the epochs this run trained
};

// Trains bag `bag` from its seed (or its newest checkpoint) to its model
// file. Everything it writes is the bag's own: its checkpoints, model file and
// TensorBoard folder, so the result does not depend on what else runs.
Status TrainBag(const BagContext& c, int bag, BagOutcome* outcome) {
  const auto& tc = c.tc;
  const auto& setup = c.setup;
  const auto& data = c.data;
  const auto& spec = setup.spec;
  const uint64_t seed = c.seed;
  const std::string who = tc.bagging_num > 1 ? "train: bag " + std::to_string(bag) : "train";
  const std::vector<uint32_t> rows = train::BagRows(
      data.train, {tc.bagging_sample_rate, tc.bagging_with_replacement}, seed, bag, 0);
  std::unique_ptr<train::GraphTrainer> graph;
  if (c.description.graph) {
    TARN_ASSIGN_OR_RETURN(graph, train::GraphTrainer::Create(*c.description.graph, data,
                                                             c.ms.config.normalize.std_dev_cut_off,
                                                             setup.shifu_kind));
  }
  std::vector<float> params(graph ? graph->ParameterCount() : spec.ParameterCount());
  std::unique_ptr<model::Optimizer> optimizer;
  // A graph's tables: rows on the lazy per-row optimizer, as on parameter servers.
  std::unique_ptr<train::LocalTables> tables;
  if (graph) {
    graph->InitParameters(params.data(), train::InitSeed(seed, bag));
    optimizer = model::Optimizer::Create(
        setup.optimizer, train::GraphUnregularizedMask(graph->graph(), c.unregularized));
    TARN_ASSIGN_OR_RETURN(auto specs,
                          c.ms.InConfig(train::GraphTableSpecs(graph->graph(), setup.optimizer,
                                                               train::InitSeed(seed, bag))));
    TARN_ASSIGN_OR_RETURN(tables, train::LocalTables::Create(specs));
    graph->set_tables(tables.get());
  } else {
    c.net->InitParameters(params.data(), train::InitSeed(seed, bag));
    optimizer = model::Optimizer::Create(setup.optimizer, spec);
  }
  int start_epoch = 0;
  train::EarlyStop early_stop({tc.convergence_threshold, c.patience, who});
  std::vector<float> best_params;
  if (tc.is_continuous) {
    std::string latest = NewestCheckpoint(c.tmp_dir, bag);
    if (!latest.empty()) {
      auto ck = model::ModelFile::Load(latest);
      if (!ck.ok()) {
        return Corrupt("cannot resume from " + latest + ": " + ck.status().message() +
                       " (delete it to resume from an older checkpoint, or set "
                       "train.isContinuous to false)");
      }
      if (ck->spec.ToJson() != spec.ToJson() || ck->graph != c.description.graph) {
        return FailedPrecondition(latest +
                                  " was trained with another network or inputs; "
                                  "set train.isContinuous to false to start over");
      }
      if (graph) {
        TARN_RETURN_IF_ERROR(
            LoadGraphCheckpoint(*ck, *graph, optimizer.get(), tables.get(), &params)
                .WithContext(latest));
      } else {
        params = ck->params;
        TARN_RETURN_IF_ERROR(optimizer->LoadState(ck->optimizer_state).WithContext(latest));
      }
      start_epoch = ck->epoch;
      early_stop.RestoreState(ck->checkpoint);
      TARN_LOG(kInfo) << "train: bag " << bag << " resumes from " << latest << " (epoch "
                      << start_epoch << ")";
    }
  }

  train::ModelDescription description = c.description;
  description.run = {{"trainRows", rows.size()}, {"validRows", data.valid.size()}};
  train::TrainedSoFar so_far;
  so_far.bag = bag;
  // The model file's parameters: a graph's hold its tables whole.
  auto model_params = [&]() {
    return graph ? train::GraphModelFileParams(graph->graph(), params, tables->WholeTables())
                 : params;
  };
  auto make_file = [&](const std::vector<float>& p) {
    return train::MakeModelFile(description, so_far, p);
  };
  auto save_checkpoint = [&](const std::string& path) -> Status {
    auto f = make_file(model_params());
    f.is_checkpoint = true;
    f.epoch = so_far.epochs;
    f.optimizer_state = optimizer->SaveState();
    f.checkpoint = early_stop.SaveState();
    if (graph) {
      std::vector<uint64_t> steps;
      f.checkpoint[kDenseStateKey] = f.optimizer_state.size();
      tables->SaveState(&f.optimizer_state, &steps);
      f.checkpoint[kTableStepsKey] = steps;
    }
    return f.Save(path);
  };

  std::unique_ptr<model::TensorBoardWriter> tb;
  if (c.tensorboard) {
    std::string dir = tc.bagging_num > 1 ? JoinPath(c.tensorboard_dir, "bag" + std::to_string(bag))
                                         : c.tensorboard_dir;
    TARN_ASSIGN_OR_RETURN(tb, model::TensorBoardWriter::Open(dir));
  }

  train::BatchLoopConfig loop_config;
  loop_config.batch = setup.full_batch ? static_cast<int>(rows.size()) : setup.batch_size;
  loop_config.threads = c.threads;
  loop_config.seed = seed;
  loop_config.shifu_kind = setup.shifu_kind;
  std::unique_ptr<train::BatchLoop> loop =
      graph ? std::make_unique<train::BatchLoop>(graph.get(), loop_config)
            : std::make_unique<train::BatchLoop>(*c.net, data, loop_config);
  std::vector<uint32_t> order = rows;
  auto last_draw = std::chrono::steady_clock::now();
  int epoch = start_epoch;
  for (; epoch < tc.num_train_epochs; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    if (!setup.full_batch) {
      order = rows;
      train::ShuffleForEpoch(&order, seed, bag, epoch, 0);
    }
    train::TrainSums sums;
    auto draw = [&](int64_t batch, size_t done) {
      if (c.progress && batch % 64 == 0) {
        auto now = std::chrono::steady_clock::now();
        if (now - last_draw > std::chrono::milliseconds(200)) {
          last_draw = now;
          double fraction = static_cast<double>(done) / order.size();
          int filled = static_cast<int>(fraction * 30);
          std::fprintf(stderr, "\r\033[Kepoch %d [%.*s%*s] %3.0f%%  training error %.6f", epoch + 1,
                       filled, "==============================", 30 - filled, "", fraction * 100,
                       sums.weight > 0 ? sums.loss / sums.weight : 0.0);
        }
      }
    };
    auto step = [&](const train::BatchGradient& g) -> Status {
      if (g.weight <= 0) return Status::Ok();
      const float scale = static_cast<float>(1.0 / g.weight);
      for (auto& v : g.dense) v *= scale;
      optimizer->Step(params.data(), g.dense.data(), epoch);
      if (tables) tables->Apply(g.tables, g.weight, epoch);
      draw(g.batch, g.done);
      return Status::Ok();
    };
    TARN_RETURN_IF_ERROR(loop->RunEpoch(params.data(), order, epoch, 0, step, &sums));
    if (c.progress) std::fprintf(stderr, "\r\033[K");
    outcome->samples += sums.rows;
    // samples/s counts the training passes only, not the validation pass.
    double train_secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    train::ValidationSummary valid;
    if (graph) {
      TARN_ASSIGN_OR_RETURN(valid, graph->Validate(params.data(), data.valid));
    } else {
      valid = train::Validate(*c.net, params.data(), data, data.valid, setup.shifu_kind, c.threads);
    }
    train::EpochTotals totals;
    totals.AddSlot(sums, valid);
    const auto figures = totals.Figures(
        epoch + 1, tc.bagging_num > 1 ? bag : -1, train_secs,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    so_far.epochs = epoch + 1;
    so_far.Record(figures);
    TARN_RETURN_IF_ERROR(train::ReportEpoch(figures, totals.valid.Auc(), tb.get()));
    TARN_RETURN_IF_ERROR(train::CheckNotDiverged(epoch + 1, so_far.train_error));
    const auto verdict = early_stop.AfterEpoch(so_far.train_error, so_far.valid_error);
    if (verdict.keep_params) best_params = model_params();
    bool last = epoch + 1 == tc.num_train_epochs;
    if (setup.checkpoint_interval > 0 && (epoch + 1) % setup.checkpoint_interval == 0 && !last) {
      TARN_RETURN_IF_ERROR(save_checkpoint(JoinPath(c.tmp_dir, CheckpointName(bag, epoch + 1))));
    }
    if (c.serving->DueAfterEpoch(epoch + 1) && !last) {
      TARN_RETURN_IF_ERROR(c.serving->ExportDuringTraining(bag, make_file(model_params())));
    }
    if (verdict.stop) {
      ++epoch;
      break;
    }
  }
  // The final checkpoint, then the model.
  so_far.epochs = epoch;
  TARN_RETURN_IF_ERROR(save_checkpoint(JoinPath(c.tmp_dir, CheckpointName(bag, epoch))));
  const auto final_params = (c.patience > 0 && !best_params.empty()) ? best_params : model_params();
  std::string model_path = c.ms.Path("models/model" + std::to_string(bag) + ".tarn");
  const auto model = make_file(final_params);
  TARN_RETURN_IF_ERROR(model.Save(model_path));
  if (c.serving->enabled()) c.serving->BagDone(bag, model);
  TARN_LOG(kInfo) << "train: bag " << bag << " -> " << model_path << " (valid error "
                  << FormatDouble(so_far.valid_error) << ")";
  return Status::Ok();
}

}  // namespace

Status RunTrain(const ModelSet& ms, const TrainOptions& options) {
  const auto& tc = ms.config.train;
  if (!model::ParseAlgorithm(tc.algorithm).ok()) {
    return Unsupported(
        ms.ModelConfigPath() + ": train.algorithm '" + tc.algorithm +
        "' is not supported by tarn yet; use NN, LR, TensorFlow, WDL, DeepFM or DCN");
  }
  if (tc.bagging_num < 1) {
    return InvalidArgument(ms.ModelConfigPath() + ": train.baggingNum must be at least 1, got " +
                           std::to_string(tc.bagging_num));
  }
  if (tc.num_train_epochs < 1) {
    return InvalidArgument(ms.ModelConfigPath() +
                           ": train.numTrainEpochs must be at least 1, got " +
                           std::to_string(tc.num_train_epochs));
  }
  if (options.inputs.empty()) {
    // A shifu-tensorflow model set: Shifu's script or tarn's engine, said on every run.
    TARN_ASSIGN_OR_RETURN(auto script, DecideShifuScript(ms, options.distributed));
    if (script && script->run_script) {
      TARN_LOG(kInfo) << script->Line();
      return RunShifuScript(ms, *script);
    }
    if (script && script->edited) {
      TARN_LOG(kWarn) << script->Line();
    } else if (script) {
      TARN_LOG(kInfo) << script->Line();
    }
  }
  if (options.distributed || ToLower(ms.config.run_mode) == "dist") {
    if (!options.inputs.empty()) {
      return Unsupported("distributed training takes its inputs from finalSelect only");
    }
    return RunDistributedTrain(ms);
  }
  TARN_ASSIGN_OR_RETURN(auto seed_setting, ms.settings.GetInt("tarn.seed"));
  TARN_ASSIGN_OR_RETURN(auto patience, ms.settings.GetInt("tarn.train.early-stop-patience"));
  TARN_ASSIGN_OR_RETURN(bool tensorboard, ms.settings.GetBool("tarn.train.tensorboard"));
  const uint64_t seed = static_cast<uint64_t>(seed_setting);
  // Serving versions written while training (tarn serve follows them).
  TARN_ASSIGN_OR_RETURN(auto serving_every, ms.settings.GetInt("tarn.serving.exportEveryEpochs"));
  model::ServingExportHook serving(ms.settings.GetString("tarn.serving.exportDir"),
                                   static_cast<int>(serving_every));
  TARN_ASSIGN_OR_RETURN(const auto column_configs, ms.LoadColumns());
  const std::vector<std::string> model_set_columns = ModelSet::ColumnNames(column_configs);
  TARN_ASSIGN_OR_RETURN(auto data, LoadTrainingData(ms, options, column_configs, seed));
  // Graph models read the NN keys for their hidden layers, optimizer and loss.
  TARN_ASSIGN_OR_RETURN(const auto train_params, ms.ReadTrainParams());
  const bool is_graph = train::IsGraphModel(train_params);
  TARN_ASSIGN_OR_RETURN(auto setup,
                        ms.InConfig(train::TrainSetup::FromTrainParams(train_params, data.inputs)));
  const int threads = ms.Threads();
  train::ModelDescription description;
  std::vector<std::string> unregularized;  // graph nodes the regularization skips
  if (is_graph) {
    TARN_ASSIGN_OR_RETURN(auto model,
                          ms.InConfig(train::BuildGraphModelFor(tc.algorithm, train_params, data,
                                                                ms.config.normalize.std_dev_cut_off,
                                                                model_set_columns, ms.dir)));
    setup.optimizer = train::GraphOptimizerConfig(setup.optimizer, model);
    description.graph = model.spec;
    description.id_columns = data.id_columns;  // the Scorer recomputes them from raw records
    unregularized = model.unregularized;
    setup.spec = model::ModelSpec();
    setup.spec.input_count = data.inputs;
  }
  const auto& spec = setup.spec;
  std::unique_ptr<model::Network> net;
  if (!is_graph) net = std::make_unique<model::Network>(spec);
  description.spec = spec;
  description.columns = data.columns;
  description.norm_type = data.norm_type;
  description.std_dev_cut_off = ms.config.normalize.std_dev_cut_off;
  description.missing_values = ms.config.data_set.missing_or_invalid_values;
  description.model_set_columns = model_set_columns;
  description.algorithm = tc.algorithm;
  description.seed = seed_setting;
  description.train_params = tc.params;
  const std::string tmp_dir = ms.Path("tmp/modelsTmp");
  TARN_RETURN_IF_ERROR(MakeDirs(tmp_dir));
  TARN_RETURN_IF_ERROR(MakeDirs(ms.Path("models")));
  // TensorBoard logs: a fresh run starts them afresh, a resumed one appends a file.
  const std::string tensorboard_dir = ms.Path("tmp/tensorboard");
  if (tensorboard && !tc.is_continuous) {
    TARN_RETURN_IF_ERROR(RemoveAll(tensorboard_dir));
  }
  TARN_ASSIGN_OR_RETURN(auto parallel_setting, ms.settings.GetInt("tarn.train.parallel-bags"));
  if (parallel_setting < 0) {
    return InvalidArgument(
        "setting 'tarn.train.parallel-bags' must be 0 (one bag a core) or more, got " +
        std::to_string(parallel_setting));
  }
  // Bags at a time; the threads are split between them, so that bags in
  // parallel do not also split their batches (no more threads than cores).
  const int parallel = static_cast<int>(
      std::min<long long>(tc.bagging_num, parallel_setting > 0 ? parallel_setting : threads));
  BagContext context{
      .ms = ms,
      .tc = tc,
      .setup = setup,
      .data = data,
      .description = description,
      .net = net.get(),
      .unregularized = unregularized,
      .seed = seed,
      .patience = static_cast<int>(patience),
      .tensorboard = tensorboard,
      .tmp_dir = tmp_dir,
      .tensorboard_dir = tensorboard_dir,
      .threads = std::max(1, threads / parallel),
      .progress = parallel == 1 && ::isatty(STDERR_FILENO) == 1 && GetLogLevel() <= LogLevel::kInfo,
      .serving = &serving};
  TARN_LOG(kInfo) << "train: " << tc.bagging_num << " x " << tc.algorithm << " " << spec.input_count
                  << " inputs"
                  << (parallel > 1 ? ", " + std::to_string(parallel) + " bags at a time" : "");

  std::vector<Status> statuses(tc.bagging_num, Status::Ok());
  std::vector<BagOutcome> outcomes(tc.bagging_num);
  const auto t0 = std::chrono::steady_clock::now();
  if (parallel == 1) {
    for (int bag = 0; bag < tc.bagging_num; ++bag) {
      statuses[bag] = TrainBag(context, bag, &outcomes[bag]);
      if (!statuses[bag].ok()) break;
    }
  } else {
    // Bags start in order; after a failure no further bag starts (those
    // running finish), as the sequential run stops at its first failure.
    std::atomic<bool> failed{false};
    ThreadPool pool(parallel);
    for (int bag = 0; bag < tc.bagging_num; ++bag) {
      pool.Submit([&, bag] {
        if (failed.load()) return;
        statuses[bag] = TrainBag(context, bag, &outcomes[bag]);
        if (!statuses[bag].ok()) failed = true;
      });
    }
    pool.Wait();
  }
  for (int bag = 0; bag < tc.bagging_num; ++bag) {
    if (statuses[bag].ok()) continue;
    return tc.bagging_num > 1 ? statuses[bag].WithContext("bag " + std::to_string(bag))
                              : statuses[bag];
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t samples = 0;
  for (const auto& o : outcomes) samples += o.samples;
  // Every bag's samples over the wall time of them all: what bags in parallel gain.
  char figures[96];
  std::snprintf(figures, sizeof(figures), "%.3f s (%.0f samples/s", secs,
                secs > 0 ? samples / secs : 0.0);
  TARN_LOG(kInfo) << "train: " << tc.bagging_num << (tc.bagging_num > 1 ? " bags" : " bag")
                  << " trained " << samples << " samples in " << figures << ", " << parallel
                  << " at a time, " << context.threads
                  << (context.threads > 1 ? " threads" : " thread") << " each)";
  return serving.ExportFinal();
}

}  // namespace tarn::pipeline
