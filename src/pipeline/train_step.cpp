// tarn train: trains baggingNum networks on tmp/NormalizedData (the columns
// with finalSelect), with a deterministic validation split, checkpoints under
// tmp/modelsTmp and the final models in models/model{i}.tarn.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

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
#include "pipeline/row_context.h"
#include "pipeline/steps.h"
#include "stats/performance.h"

namespace tarn::pipeline {

namespace {

using model::TrainingData;

uint64_t Mix(uint64_t x) { return model::MixSeed(x); }

Result<TrainingData> LoadTrainingData(const ModelSet& ms, const TrainOptions& options,
                                      uint64_t seed) {
  TARN_ASSIGN_OR_RETURN(auto o, ms.TrainingData(seed, options.inputs));
  return model::LoadTrainingData(o);
}

// Mean weighted loss and a forward pass over `rows`, in parallel; Shifu's
// error of the same pass into *shifu. With `scored`, also each row's
// prediction, target (-1 unless 0 or 1) and weight.
double EvaluateLoss(const model::Network& net, const float* params, const TrainingData& d,
                    const std::vector<uint32_t>& rows, int threads, model::LossKind shifu_kind,
                    model::ShifuError* shifu, std::vector<stats::ScoredRecord>* scored = nullptr) {
  if (scored) scored->assign(rows.size(), stats::ScoredRecord{});
  if (rows.empty()) return NAN;
  constexpr int kBatch = 512;
  const size_t batches = (rows.size() + kBatch - 1) / kBatch;
  // Per-batch sums added in batch order: the same result for any thread count.
  std::vector<double> loss(batches, 0.0), weight(batches, 0.0);
  std::vector<model::ShifuError> shifu_parts(batches);
  std::vector<std::unique_ptr<model::Workspace>> ws(threads);
  std::vector<std::vector<float>> xb(threads), yb(threads), wb(threads);
  const auto kind = net.spec().loss;
  ParallelFor(threads, batches, [&](int t, size_t b) {
    if (!ws[t]) {
      ws[t] = net.MakeWorkspace(kBatch);
      xb[t].resize(kBatch * d.inputs);
      yb[t].resize(kBatch);
      wb[t].resize(kBatch);
    }
    size_t begin = b * kBatch, end = std::min(rows.size(), begin + kBatch);
    int n = static_cast<int>(end - begin);
    for (int i = 0; i < n; ++i) {
      uint32_t r = rows[begin + i];
      std::copy_n(d.row(r), d.inputs, xb[t].data() + static_cast<size_t>(i) * d.inputs);
      yb[t][i] = d.row(r)[d.inputs];
      wb[t][i] = d.row(r)[d.inputs + 1];
    }
    std::vector<float> pred(n);
    net.Predict(params, xb[t].data(), n, pred.data(), ws[t].get());
    for (int i = 0; i < n; ++i) {
      const double y = yb[t][i], l = model::RowLoss(kind, pred[i], y);
      loss[b] += wb[t][i] * l;
      weight[b] += wb[t][i];
      shifu_parts[b].Add(shifu_kind, pred[i], y);
      if (scored) (*scored)[begin + i] = {pred[i], y == 1 ? 1 : y == 0 ? 0 : -1, wb[t][i]};
    }
  });
  double total = 0, total_w = 0;
  for (size_t b = 0; b < batches; ++b) {
    total += loss[b];
    total_w += weight[b];
    shifu->Merge(shifu_parts[b]);
  }
  return total_w > 0 ? total / total_w : NAN;
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

}  // namespace

Status RunTrain(const ModelSet& ms, const TrainOptions& options) {
  const auto& tc = ms.config.train;
  std::string alg = ToLower(tc.algorithm);
  if (alg != "nn" && alg != "lr" && alg != "tensorflow") {
    return Unsupported(ms.ModelConfigPath() + ": train.algorithm '" + tc.algorithm +
                       "' is not supported by tarn yet; use NN, LR or TensorFlow");
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
  TARN_ASSIGN_OR_RETURN(const auto train_params, ms.ReadTrainParams());
  TARN_ASSIGN_OR_RETURN(auto data, LoadTrainingData(ms, options, seed));
  TARN_ASSIGN_OR_RETURN(const auto model_set_columns, ms.ColumnNames());
  TARN_ASSIGN_OR_RETURN(auto spec,
                        ms.InConfig(model::ModelSpec::FromTrainParams(train_params, data.inputs)));
  const auto opt_config = model::OptimizerConfig::FromTrainParams(train_params);
  const int batch_size = train_params.mini_batch_rows;
  const int checkpoint_interval = train_params.checkpoint_interval;
  const bool full_batch = model::IsFullBatch(opt_config.kind);
  const model::LossKind shifu_kind = model::ShifuErrorKind(train_params);
  const int threads = ms.Threads();
  model::Network net(spec);
  const std::string tmp_dir = ms.Path("tmp/modelsTmp");
  TARN_RETURN_IF_ERROR(MakeDirs(tmp_dir));
  TARN_RETURN_IF_ERROR(MakeDirs(ms.Path("models")));
  // TensorBoard logs: a fresh run starts them afresh, a resumed one appends a file.
  const std::string tensorboard_dir = ms.Path("tmp/tensorboard");
  if (tensorboard && !tc.is_continuous) {
    TARN_RETURN_IF_ERROR(RemoveAll(tensorboard_dir));
  }
  TARN_LOG(kInfo) << "train: " << tc.bagging_num << " x " << tc.algorithm << " " << spec.input_count
                  << " inputs";

  for (int bag = 0; bag < tc.bagging_num; ++bag) {
    // Rows of this bag: all training rows, or a seeded sample of them.
    std::vector<uint32_t> rows = data.train;
    std::mt19937_64 bag_rng(Mix(seed ^ (0xBA6ULL << 32) ^ static_cast<uint64_t>(bag)));
    if (tc.bagging_with_replacement) {
      size_t n = static_cast<size_t>(std::llround(tc.bagging_sample_rate * data.train.size()));
      std::uniform_int_distribution<size_t> pick(0, data.train.size() - 1);
      rows.resize(std::max<size_t>(1, n));
      for (auto& r : rows) r = data.train[pick(bag_rng)];
    } else if (tc.bagging_sample_rate < 1.0) {
      std::shuffle(rows.begin(), rows.end(), bag_rng);
      rows.resize(std::max<size_t>(
          1, static_cast<size_t>(std::llround(tc.bagging_sample_rate * rows.size()))));
      std::sort(rows.begin(), rows.end());
    }

    std::vector<float> params(spec.ParameterCount());
    net.InitParameters(params.data(), Mix(seed + 7919 * static_cast<uint64_t>(bag)));
    auto optimizer = model::Optimizer::Create(opt_config, spec);
    int start_epoch = 0;
    double best_valid = INFINITY;
    std::vector<float> best_params;
    int since_best = 0;
    if (tc.is_continuous) {
      std::string latest = NewestCheckpoint(tmp_dir, bag);
      if (!latest.empty()) {
        auto ck = model::ModelFile::Load(latest);
        if (!ck.ok()) {
          return Corrupt("cannot resume from " + latest + ": " + ck.status().message() +
                         " (delete it to resume from an older checkpoint, or set "
                         "train.isContinuous to false)");
        }
        if (ck->spec.ToJson() != spec.ToJson()) {
          return FailedPrecondition(latest +
                                    " was trained with another network or inputs; "
                                    "set train.isContinuous to false to start over");
        }
        params = ck->params;
        TARN_RETURN_IF_ERROR(optimizer->LoadState(ck->optimizer_state).WithContext(latest));
        start_epoch = ck->epoch;
        best_valid = ck->checkpoint.value("bestValid", INFINITY);
        since_best = ck->checkpoint.value("sinceBest", 0);
        TARN_LOG(kInfo) << "train: bag " << bag << " resumes from " << latest << " (epoch "
                        << start_epoch << ")";
      }
    }

    double shifu_train_err = NAN, shifu_valid_err = NAN;  // Shifu's errors of the last epoch
    auto make_file = [&](int epochs_done, double train_err, double valid_err, bool checkpoint,
                         const std::vector<float>& p) -> model::ModelFile {
      model::ModelFile f;
      f.spec = spec;
      f.columns = data.columns;
      f.norm_type = data.norm_type;
      f.std_dev_cut_off = ms.config.normalize.std_dev_cut_off;
      f.missing_values = ms.config.data_set.missing_or_invalid_values;
      f.model_set_columns = model_set_columns;
      f.training = {{"algorithm", tc.algorithm},
                    {"bag", bag},
                    {"epochs", epochs_done},
                    {"trainError", train_err},
                    {"validError", data::OrNull(valid_err)},
                    {"shifuTrainError", data::OrNull(shifu_train_err)},
                    {"shifuValidError", data::OrNull(shifu_valid_err)},
                    {"trainRows", rows.size()},
                    {"validRows", data.valid.size()},
                    {"seed", seed_setting},
                    {"params", tc.params}};
      f.params = p;
      if (checkpoint) {
        f.is_checkpoint = true;
        f.epoch = epochs_done;
        f.optimizer_state = optimizer->SaveState();
        f.checkpoint = {{"bestValid", std::isfinite(best_valid) ? best_valid : 1e300},
                        {"sinceBest", since_best}};
      }
      return f;
    };
    auto save = [&](const std::string& path, int epochs_done, double train_err, double valid_err,
                    bool checkpoint, const std::vector<float>& p) -> Status {
      return make_file(epochs_done, train_err, valid_err, checkpoint, p).Save(path);
    };

    std::unique_ptr<model::TensorBoardWriter> tb;
    if (tensorboard) {
      std::string dir = tc.bagging_num > 1 ? JoinPath(tensorboard_dir, "bag" + std::to_string(bag))
                                           : tensorboard_dir;
      TARN_ASSIGN_OR_RETURN(tb, model::TensorBoardWriter::Open(dir));
    }

    const int batch = full_batch ? static_cast<int>(rows.size()) : batch_size;
    // Each batch is cut into one contiguous slice per team member; members
    // sum their slices' gradients into their own buffers, which are then added
    // in member order: the same result for a given seed and thread count.
    // Small batches use fewer members (a slice should fill a SIMD block).
    // Below a few hundred rows a slice costs less than the hand-off, and a
    // busy machine would make members wait on each other: one member then.
    const int members = batch >= 512 ? std::max(1, std::min(threads, batch / 256)) : 1;
    SpinTeam team(members);
    const int chunk = std::min((batch + members - 1) / members, 1024);  // rows per call
    struct Member {
      std::unique_ptr<model::Workspace> ws;
      std::vector<float> grad, xb, yb, wb, pred;
      double loss = 0, weight = 0;
      model::ShifuError shifu;
    };
    std::vector<Member> team_state(members);
    for (auto& m : team_state) {
      m.ws = net.MakeWorkspace(chunk);
      m.grad.resize(params.size());
      m.xb.resize(static_cast<size_t>(chunk) * data.inputs);
      m.yb.resize(chunk);
      m.wb.resize(chunk);
      m.pred.resize(chunk);
    }
    std::vector<float> grad(params.size());
    std::vector<uint32_t> order = rows;
    // A progress bar within each epoch, on a terminal only.
    const bool interactive = ::isatty(STDERR_FILENO) == 1 && GetLogLevel() <= LogLevel::kInfo;
    auto last_draw = std::chrono::steady_clock::now();
    double train_err = NAN, valid_err = NAN;
    int epoch = start_epoch;
    for (; epoch < tc.num_train_epochs; ++epoch) {
      auto t0 = std::chrono::steady_clock::now();
      // The order of an epoch depends only on (seed, bag, epoch): a resumed
      // run sees the same batches as an uninterrupted one.
      std::mt19937_64 rng(Mix(seed ^ Mix((static_cast<uint64_t>(bag) << 32) ^ epoch)));
      if (!full_batch) {
        order = rows;
        std::shuffle(order.begin(), order.end(), rng);
      }
      double loss_sum = 0, weight_sum = 0;
      model::ShifuError shifu_train;
      for (size_t begin = 0; begin < order.size(); begin += batch) {
        const size_t end = std::min(order.size(), begin + static_cast<size_t>(batch));
        const size_t per_member = (end - begin + members - 1) / members;
        team.Run([&](int t) {
          Member& m = team_state[t];
          std::fill(m.grad.begin(), m.grad.end(), 0.0f);
          m.loss = m.weight = 0;
          m.shifu = {};
          const size_t lo = std::min(end, begin + t * per_member);
          const size_t hi = std::min(end, lo + per_member);
          for (size_t c0 = lo; c0 < hi; c0 += chunk) {
            const int n = static_cast<int>(std::min(hi, c0 + chunk) - c0);
            const int inputs = data.inputs;
            constexpr int kAhead = 16;  // rows are scattered: fetch ahead of the copy
            for (int i = 0; i < std::min(n, kAhead); ++i) {
              __builtin_prefetch(data.row(order[c0 + i]));
            }
            for (int i = 0; i < n; ++i) {
              const uint32_t r = order[c0 + i];
              if (i + kAhead < n) {
                const float* ahead = data.row(order[c0 + i + kAhead]);
                __builtin_prefetch(ahead);
                __builtin_prefetch(ahead + inputs + 1);  // the row may span two lines
              }
              // An inline loop: rows are a few dozen floats, too short for memmove.
              const float* src = data.row(r);
              float* dst = m.xb.data() + static_cast<size_t>(i) * inputs;
              for (int k = 0; k < inputs; ++k) dst[k] = src[k];
              m.yb[i] = src[inputs];
              m.wb[i] = src[inputs + 1];
              m.weight += src[inputs + 1];
            }
            const uint64_t dropout_seed =
                Mix(seed ^ Mix((static_cast<uint64_t>(epoch) << 32) ^ c0)) | 1;
            m.loss += net.ForwardBackward(params.data(), m.xb.data(), m.yb.data(), m.wb.data(), n,
                                          m.grad.data(), m.ws.get(), dropout_seed, m.pred.data());
            for (int i = 0; i < n; ++i) m.shifu.Add(shifu_kind, m.pred[i], m.yb[i]);
          }
        });
        double batch_weight = 0;
        std::copy(team_state[0].grad.begin(), team_state[0].grad.end(), grad.begin());
        for (int t = 0; t < members; ++t) {
          loss_sum += team_state[t].loss;
          batch_weight += team_state[t].weight;
          shifu_train.Merge(team_state[t].shifu);
          if (t == 0) continue;
          const float* g = team_state[t].grad.data();
          for (size_t i = 0; i < grad.size(); ++i) grad[i] += g[i];
        }
        weight_sum += batch_weight;
        if (batch_weight <= 0) continue;
        const float scale = static_cast<float>(1.0 / batch_weight);
        for (auto& g : grad) g *= scale;
        optimizer->Step(params.data(), grad.data(), epoch);
        if (interactive && (begin / batch) % 64 == 0) {
          auto now = std::chrono::steady_clock::now();
          if (now - last_draw > std::chrono::milliseconds(200)) {
            last_draw = now;
            double done = static_cast<double>(end) / order.size();
            int filled = static_cast<int>(done * 30);
            std::fprintf(stderr, "\r\033[Kepoch %d [%.*s%*s] %3.0f%%  training error %.6f",
                         epoch + 1, filled, "==============================", 30 - filled, "",
                         done * 100, weight_sum > 0 ? loss_sum / weight_sum : 0.0);
          }
        }
      }
      if (interactive) std::fprintf(stderr, "\r\033[K");
      train_err = weight_sum > 0 ? loss_sum / weight_sum : NAN;
      // samples/s counts the training passes only, not the validation pass.
      double train_secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::vector<stats::ScoredRecord> scored;  // for the validation AUC
      model::ShifuError shifu_valid;
      valid_err = EvaluateLoss(net, params.data(), data, data.valid, threads, shifu_kind,
                               &shifu_valid, tb ? &scored : nullptr);
      shifu_train_err = shifu_train.Mean();
      shifu_valid_err = shifu_valid.Mean();
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      model::EpochFigures figures;
      figures.epoch = epoch + 1;
      figures.shifu_train_error = shifu_train_err;
      figures.shifu_valid_error = shifu_valid_err;
      figures.train_loss = train_err;
      figures.valid_loss = valid_err;
      figures.samples_per_sec = order.size() / std::max(train_secs, 1e-9);
      figures.seconds = secs;
      figures.bag = tc.bagging_num > 1 ? bag : -1;
      if (!Quiet()) {
        std::printf("%s\n", model::FormatEpochLine(figures).c_str());
        std::fflush(stdout);
      }
      if (tb) {
        const int64_t step = epoch + 1;
        TARN_RETURN_IF_ERROR(tb->AddScalar("loss/train", step, train_err));
        if (std::isfinite(valid_err)) {
          TARN_RETURN_IF_ERROR(tb->AddScalar("loss/valid", step, valid_err));
          // Weighted by the weight column, as the losses are; needs both classes.
          auto perf = stats::EvaluatePerformance(std::move(scored), 1);
          if (perf.positives > 0 && perf.positives < perf.total) {
            TARN_RETURN_IF_ERROR(
                tb->AddScalar("auc/valid", step, perf.exact_weighted_area_under_roc));
          }
        }
        TARN_RETURN_IF_ERROR(tb->AddScalar("throughput/samples_per_sec", step,
                                           order.size() / std::max(train_secs, 1e-9)));
        TARN_RETURN_IF_ERROR(tb->Flush());
      }
      if (!std::isfinite(train_err)) {
        return FailedPrecondition("training diverged at epoch " + std::to_string(epoch + 1) +
                                  " (error " + FormatDouble(train_err) +
                                  "); lower train.params.LearningRate");
      }
      bool improved = std::isfinite(valid_err) && valid_err < best_valid;
      if (improved) {
        best_valid = valid_err;
        since_best = 0;
        if (patience > 0) best_params = params;
      } else {
        ++since_best;
      }
      bool last = epoch + 1 == tc.num_train_epochs;
      if (checkpoint_interval > 0 && (epoch + 1) % checkpoint_interval == 0 && !last) {
        TARN_RETURN_IF_ERROR(save(JoinPath(tmp_dir, CheckpointName(bag, epoch + 1)), epoch + 1,
                                  train_err, valid_err, true, params));
      }
      if (serving.DueAfterEpoch(epoch + 1) && !last) {
        TARN_RETURN_IF_ERROR(serving.ExportDuringTraining(
            make_file(epoch + 1, train_err, valid_err, false, params)));
      }
      if (tc.convergence_threshold > 0 && train_err < tc.convergence_threshold) {
        TARN_LOG(kInfo) << "train: training error below convergenceThreshold "
                        << tc.convergence_threshold << "; stopping";
        ++epoch;
        break;
      }
      if (patience > 0 && since_best >= patience) {
        TARN_LOG(kInfo) << "train: valid error has not improved for " << patience
                        << " epochs; stopping and keeping the best epoch";
        ++epoch;
        break;
      }
    }
    // The final checkpoint, then the model.
    TARN_RETURN_IF_ERROR(save(JoinPath(tmp_dir, CheckpointName(bag, epoch)), epoch, train_err,
                              valid_err, true, params));
    const auto& final_params = (patience > 0 && !best_params.empty()) ? best_params : params;
    std::string model_path = ms.Path("models/model" + std::to_string(bag) + ".tarn");
    TARN_RETURN_IF_ERROR(save(model_path, epoch, train_err, valid_err, false, final_params));
    if (serving.enabled()) {
      serving.BagDone(make_file(epoch, train_err, valid_err, false, final_params));
    }
    TARN_LOG(kInfo) << "train: bag " << bag << " -> " << model_path << " (valid error "
                    << FormatDouble(valid_err) << ")";
  }
  return serving.ExportFinal();
}

}  // namespace tarn::pipeline
