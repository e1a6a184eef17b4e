// A worker: trains on the shards of the slot the coordinator gives it. Each
// mini-batch's gradient (summed over k = commPeriod batches) goes to the
// parameter servers, whose answer carries the new parameters. Directives
// come as answers to the worker's reports (a long poll), so the coordinator
// can move a slot to a backup, roll everyone back, or end the job at any
// report.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "common/files.h"
#include "common/log.h"
#include "common/thread_pool.h"
#include "data/file_system.h"
#include "model/epoch_report.h"
#include "model/model_spec.h"
#include "model/network.h"
#include "model/optimizer.h"
#include "model/training_data.h"
#include "runtime/messages.h"
#include "runtime/node.h"
#include "runtime/protocol.h"
#include "runtime/session.h"

namespace tarn::runtime {

namespace {

constexpr int kHistogramBins = 1000;  // validation scores, for the AUC

class Worker {
 public:
  Worker(const NodeArgs& args, Session* session) : args_(args), session_(session) {}

  Status Run() {
    data::Json report{{"kind", "await"}};
    while (true) {
      report["node"] = args_.node;
      report["seq"] = seq_;
      auto directive = msg::CallJsonAs<msg::Directive>(session_->calls(), kReport, report,
                                                       net::Deadline::Never());
      if (!directive.ok()) return directive.status().WithContext("reporting to the coordinator");
      seq_ = directive->seq;
      const std::string& action = directive->action;
      if (action == "finish") return Status::Ok();
      if (action == "standby") {
        report = {{"kind", "await"}};
        continue;
      }
      Status st = Apply(*directive);
      if (!st.ok()) {
        // The coordinator decides what a broken worker means; say why.
        TARN_LOG(kError) << "worker " << args_.index << ": " << st.message();
        return st;
      }
      if (action == "train") {
        report = Train(directive->position);
      } else {
        report = Validate();
      }
    }
  }

 private:
  // Takes in what a directive says: the job, the slot, the servers.
  Status Apply(const msg::Directive& d) {
    if (!d.job.is_null() && !job_loaded_) {
      TARN_ASSIGN_OR_RETURN(job_, JobConfig::FromJson(d.job));
      TARN_ASSIGN_OR_RETURN(auto spec, model::ModelSpec::FromTrainParams(
                                           job_.train_params, job_.algorithm, job_.inputs));
      net_ = std::make_unique<model::Network>(spec);
      TARN_ASSIGN_OR_RETURN(auto oc, model::OptimizerConfig::FromTrainParams(job_.train_params));
      full_batch_ = model::IsFullBatch(oc.kind);
      params_.assign(net_->ParameterCount(), 0.0f);
      grad_.assign(params_.size(), 0.0f);
      job_loaded_ = true;
    }
    if (!job_loaded_) return Internal("a directive without the job");
    slot_ = d.slot;
    bag_ = d.bag;
    epoch_ = d.epoch;
    term_ = d.term;
    const std::vector<int>& shards = d.shards;
    if (shards != shards_ || !data_) {
      model::TrainingDataOptions o;
      o.data_dir = job_.data_dir;
      o.shard_paths = job_.shard_paths;
      // Shards in HDFS are copied next to the worker first: training maps them.
      for (int i : shards) {
        if (i < 0 || static_cast<size_t>(i) >= o.shard_paths.size()) continue;
        std::string& path = o.shard_paths[i];
        if (!data::IsHdfsPath(path)) continue;
        const std::string local = JoinPath("shards", path.substr(path.rfind('/') + 1));
        TARN_RETURN_IF_ERROR(data::CopyTree(path, local));
        path = local;
      }
      o.shards = shards;
      o.selected = job_.columns;
      o.norm_type = job_.norm_type;
      o.valid_rate = job_.valid_rate;
      o.seed = static_cast<uint64_t>(job_.seed);
      o.require_train_rows = false;
      TARN_ASSIGN_OR_RETURN(auto loaded, model::LoadTrainingData(o));
      data_ = std::make_unique<model::TrainingData>(std::move(loaded));
      shards_ = shards;
      rows_bag_ = -1;
      TARN_LOG(kInfo) << "worker " << args_.index << ": slot " << slot_ << ", "
                      << data_->train.size() << " training and " << data_->valid.size()
                      << " validation rows";
    }
    const std::vector<std::string>& ps = d.ps;
    if (ps != ps_addresses_) {
      ps_.clear();
      auto options = ConnectionOptionsFor(job_);
      for (const auto& a : ps) {
        TARN_ASSIGN_OR_RETURN(auto c, session_->transport().Dial(a, options, job_.retry_ms,
                                                                 net::Deadline::InMs(30000)));
        ps_.push_back(std::move(c));
      }
      ps_addresses_ = ps;
      ranges_.clear();
      for (int i = 0; i < static_cast<int>(ps.size()); ++i) {
        ranges_.push_back(SliceRange(params_.size(), static_cast<int>(ps.size()), i));
      }
      steps_.assign(ps.size(), 0);
    }
    if (rows_bag_ != bag_) SampleBag();
    return Status::Ok();
  }

  // This bag's training rows: all of the slot's, or a seeded sample.
  void SampleBag() {
    rows_ = data_->train;
    const uint64_t seed = static_cast<uint64_t>(job_.seed);
    std::mt19937_64 rng(model::MixSeed(seed ^ (0xBA6ULL << 32) ^ static_cast<uint64_t>(bag_) ^
                                       (static_cast<uint64_t>(slot_) << 48)));
    if (job_.bagging_with_replacement && !rows_.empty()) {
      size_t n = static_cast<size_t>(std::llround(job_.bagging_sample_rate * rows_.size()));
      std::uniform_int_distribution<size_t> pick(0, rows_.size() - 1);
      std::vector<uint32_t> sample(std::max<size_t>(1, n));
      for (auto& r : sample) r = data_->train[pick(rng)];
      rows_.swap(sample);
    } else if (job_.bagging_sample_rate < 1.0 && !rows_.empty()) {
      std::shuffle(rows_.begin(), rows_.end(), rng);
      rows_.resize(std::max<size_t>(
          1, static_cast<size_t>(std::llround(job_.bagging_sample_rate * rows_.size()))));
      std::sort(rows_.begin(), rows_.end());
    }
    rows_bag_ = bag_;
  }

  Status PullAll() {
    for (size_t i = 0; i < ps_.size(); ++i) {
      TARN_ASSIGN_OR_RETURN(std::string reply, ps_[i]->Call(kPull, msg::Pull::Encode(term_),
                                                            net::Deadline::InMs(60000)));
      TARN_RETURN_IF_ERROR(TakeAnswer(i, reply));
    }
    return Status::Ok();
  }

  Status TakeAnswer(size_t i, const std::string& reply) {
    const size_t slice_size = ranges_[i].second - ranges_[i].first;
    TARN_RETURN_IF_ERROR(msg::ParamsAnswer::Decode(reply, slice_size, &answer_)
                             .WithContext("parameter server " + std::to_string(i)));
    steps_[i] = answer_.step;
    std::copy(answer_.params.begin(), answer_.params.end(),
              params_.begin() + static_cast<ptrdiff_t>(ranges_[i].first));
    if (answer_.status == msg::ParamsAnswer::kStale) ++stale_;
    return Status::Ok();
  }

  // Pushes every server's part at once and waits for all answers. In sync
  // mode they must be concurrent: a server whose step waits on this worker
  // must not wait behind another server's step that waits on a peer.
  Status PushAll(double weight) {
    const size_t n = ps_.size();
    replies_.assign(n, Result<std::string>(Unavailable("no answer")));
    auto push = [&](size_t i) {
      const auto [b, e] = ranges_[i];
      const std::string push = msg::Push::Encode(term_, slot_, steps_[i], weight,
                                                 std::span<const float>(grad_.data() + b, e - b));
      replies_[i] = ps_[i]->Call(kPush, push, net::Deadline::InMs(600000));
    };
    if (n > 1) {
      if (!callers_) callers_ = std::make_unique<ThreadPool>(static_cast<int>(n) - 1);
      for (size_t i = 1; i < n; ++i) callers_->Submit([&push, i] { push(i); });
    }
    push(0);
    if (n > 1) callers_->Wait();
    for (size_t i = 0; i < n; ++i) {
      if (!replies_[i].ok()) return replies_[i].status();
      TARN_RETURN_IF_ERROR(TakeAnswer(i, *replies_[i]));
    }
    return Status::Ok();
  }

  data::Json Train(int64_t position) {
    auto t0 = std::chrono::steady_clock::now();
    Status st = TrainBatches(position);
    if (!st.ok()) {
      TARN_LOG(kWarn) << "worker " << args_.index << ": epoch " << epoch_ + 1
                      << " interrupted: " << st.message();
      return {{"kind", "await"}, {"reason", st.message()}};
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return {{"kind", "epoch_done"},    {"slot", slot_},         {"bag", bag_},
            {"epoch", epoch_},         {"term", term_},         {"loss", loss_},
            {"weight", weight_},       {"rows", rows_trained_}, {"seconds", secs},
            {"stale", stale_},         {"bytes", bytes_},       {"shifuError", shifu_.sum},
            {"shifuRows", shifu_.rows}};
  }

  uint64_t PsBytes() const {
    uint64_t b = 0;
    for (const auto& c : ps_) b += c->bytes();
    return b;
  }

  Status TrainBatches(int64_t position) {
    const uint64_t bytes0 = PsBytes();
    loss_ = weight_ = 0;
    shifu_ = {};
    rows_trained_ = 0;
    stale_ = 0;
    auto& progress = session_->progress();
    progress.bag = bag_;
    progress.epoch = epoch_;
    TARN_RETURN_IF_ERROR(PullAll());
    const uint64_t seed = static_cast<uint64_t>(job_.seed);
    order_ = rows_;
    std::mt19937_64 rng(model::MixSeed(
        seed ^ model::MixSeed((static_cast<uint64_t>(bag_) << 32) ^ static_cast<uint64_t>(epoch_) ^
                              (static_cast<uint64_t>(slot_) << 48))));
    std::shuffle(order_.begin(), order_.end(), rng);
    const int batch =
        full_batch_ ? std::max<int>(1, static_cast<int>(order_.size())) : job_.batch_size;
    const int64_t batches = (static_cast<int64_t>(order_.size()) + batch - 1) / batch;
    const int inputs = data_->inputs;
    constexpr int kChunk = 1024;
    if (!ws_) ws_ = net_->MakeWorkspace(kChunk);
    xb_.resize(static_cast<size_t>(kChunk) * inputs);
    yb_.resize(kChunk);
    wb_.resize(kChunk);
    pred_.resize(kChunk);
    const model::LossKind shifu_kind = model::ShifuErrorKind(job_.train_params);
    std::fill(grad_.begin(), grad_.end(), 0.0f);
    double pending_weight = 0;
    int pending = 0;
    for (int64_t b = std::max<int64_t>(0, position); b < batches; ++b) {
      const size_t begin = static_cast<size_t>(b) * batch;
      const size_t end = std::min(order_.size(), begin + batch);
      for (size_t c0 = begin; c0 < end; c0 += kChunk) {
        const int n = static_cast<int>(std::min(end, c0 + kChunk) - c0);
        for (int i = 0; i < n; ++i) {
          const float* src = data_->row(order_[c0 + i]);
          std::copy_n(src, inputs, xb_.data() + static_cast<size_t>(i) * inputs);
          yb_[i] = src[inputs];
          wb_[i] = src[inputs + 1];
          pending_weight += src[inputs + 1];
        }
        const uint64_t dropout_seed =
            model::MixSeed(seed ^ model::MixSeed((static_cast<uint64_t>(epoch_) << 32) ^ c0 ^
                                                 (static_cast<uint64_t>(slot_) << 56))) |
            1;
        loss_ += net_->ForwardBackward(params_.data(), xb_.data(), yb_.data(), wb_.data(), n,
                                       grad_.data(), ws_.get(), dropout_seed, pred_.data());
        for (int i = 0; i < n; ++i) shifu_.Add(shifu_kind, pred_[i], yb_[i]);
      }
      rows_trained_ += static_cast<int64_t>(end - begin);
      if (++pending == job_.comm_period || b + 1 == batches) {
        TARN_RETURN_IF_ERROR(PushAll(pending_weight));
        weight_ += pending_weight;
        pending_weight = 0;
        pending = 0;
        std::fill(grad_.begin(), grad_.end(), 0.0f);
      }
      progress.position = b + 1;
    }
    bytes_ = PsBytes() - bytes0;
    if (job_.consistency != Consistency::kAsync) {
      for (auto& c : ps_) {
        TARN_RETURN_IF_ERROR(
            msg::CallForStatus(*c, msg::SlotDone{term_, slot_}, net::Deadline::InMs(60000)));
      }
    }
    return Status::Ok();
  }

  data::Json Validate() {
    Status st = PullAll();
    if (!st.ok()) return {{"kind", "await"}, {"reason", st.message()}};
    std::vector<double> pos(kHistogramBins, 0.0), neg(kHistogramBins, 0.0);
    double loss = 0, weight = 0;
    const auto& rows = data_->valid;
    const int inputs = data_->inputs;
    constexpr int kChunk = 1024;
    if (!ws_) ws_ = net_->MakeWorkspace(kChunk);
    xb_.resize(static_cast<size_t>(kChunk) * inputs);
    std::vector<float> pred(kChunk);
    const auto kind = net_->spec().loss;
    const model::LossKind shifu_kind = model::ShifuErrorKind(job_.train_params);
    model::ShifuError shifu;
    for (size_t c0 = 0; c0 < rows.size(); c0 += kChunk) {
      const int n = static_cast<int>(std::min(rows.size(), c0 + kChunk) - c0);
      for (int i = 0; i < n; ++i) {
        std::copy_n(data_->row(rows[c0 + i]), inputs, xb_.data() + static_cast<size_t>(i) * inputs);
      }
      net_->Predict(params_.data(), xb_.data(), n, pred.data(), ws_.get());
      for (int i = 0; i < n; ++i) {
        const float* r = data_->row(rows[c0 + i]);
        const double y = r[inputs], w = r[inputs + 1];
        loss += w * model::RowLoss(kind, pred[i], y);
        weight += w;
        shifu.Add(shifu_kind, pred[i], y);
        int bin = std::clamp(static_cast<int>(pred[i] * kHistogramBins), 0, kHistogramBins - 1);
        (y >= 0.5 ? pos : neg)[bin] += w;
      }
    }
    return {{"kind", "valid_done"},
            {"slot", slot_},
            {"bag", bag_},
            {"epoch", epoch_},
            {"term", term_},
            {"loss", loss},
            {"weight", weight},
            {"pos", pos},
            {"neg", neg},
            {"shifuError", shifu.sum},
            {"shifuRows", shifu.rows}};
  }

  NodeArgs args_;
  Session* session_;
  int64_t seq_ = 0;
  JobConfig job_;
  bool job_loaded_ = false, full_batch_ = false;
  std::unique_ptr<model::Network> net_;
  std::unique_ptr<model::Workspace> ws_;
  std::unique_ptr<model::TrainingData> data_;
  std::vector<int> shards_;
  std::vector<std::string> ps_addresses_;
  std::vector<std::unique_ptr<net::RpcClient>> ps_;
  std::unique_ptr<ThreadPool> callers_;  // pushes to servers 1..P-1, beside server 0's
  std::vector<Result<std::string>> replies_;
  std::vector<std::pair<size_t, size_t>> ranges_;
  std::vector<int64_t> steps_;
  std::vector<float> params_, grad_, xb_, yb_, wb_, pred_;
  msg::ParamsAnswer answer_;  // a server's latest answer, its storage reused
  std::vector<uint32_t> rows_, order_;
  int rows_bag_ = -1;
  int slot_ = -1, bag_ = 0, epoch_ = 0;
  int64_t term_ = 0;
  double loss_ = 0, weight_ = 0;
  model::ShifuError shifu_;  // Shifu's training error of this epoch
  int64_t rows_trained_ = 0, stale_ = 0;
  uint64_t bytes_ = 0;  // to and from the parameter servers in the epoch's training
};

}  // namespace

Status RunWorker(const NodeArgs& args) {
  TARN_ASSIGN_OR_RETURN(auto session, Session::Open(args, ""));
  Worker w(args, session.get());
  return w.Run();
}

}  // namespace tarn::runtime
