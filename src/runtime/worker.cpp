// A worker: trains on the shards of the slot the coordinator gives it. Each
// mini-batch's gradient (summed over k = commPeriod batches) goes to the
// parameter servers, whose answer carries the new parameters. Directives
// come as answers to the worker's reports (a long poll), so the coordinator
// can move a slot to a backup, roll everyone back, or end the job at any
// report.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/files.h"
#include "common/log.h"
#include "common/thread_pool.h"
#include "data/file_system.h"
#include "model/network.h"
#include "model/training_data.h"
#include "net/wire.h"
#include "runtime/node.h"
#include "runtime/protocol.h"
#include "runtime/session.h"
#include "runtime/worker_reports.h"
#include "train/batch_loop.h"
#include "train/sampling.h"
#include "train/setup.h"
#include "train/validation.h"

namespace tarn::runtime {

namespace {

class Worker {
 public:
  Worker(const NodeArgs& args, Session* session) : args_(args), session_(session) {}

  Status Run() {
    data::Json report{{"kind", "await"}};
    while (true) {
      report["node"] = args_.node;
      report["seq"] = seq_;
      auto directive = CallJson(session_->calls(), kReport, report, net::Deadline::Never());
      if (!directive.ok()) return directive.status().WithContext("reporting to the coordinator");
      seq_ = directive->value("seq", seq_);
      const std::string action = directive->value("action", "");
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
        report = Train(directive->value("position", int64_t{0}));
      } else if (action == "validate") {
        report = Validate();
      } else {
        return Internal("unknown directive '" + action + "'");
      }
    }
  }

 private:
  // Takes in what a directive says: the job, the slot, the servers.
  Status Apply(const data::Json& d) {
    if (d.contains("job") && !job_loaded_) {
      TARN_ASSIGN_OR_RETURN(job_, JobConfig::FromJson(d["job"]));
      TARN_ASSIGN_OR_RETURN(setup_, train::TrainSetup::FromTrainParams(
                                        job_.train_params, job_.algorithm, job_.inputs));
      net_ = std::make_unique<model::Network>(setup_.spec);
      params_.assign(net_->ParameterCount(), 0.0f);
      grad_.assign(params_.size(), 0.0f);
      job_loaded_ = true;
    }
    if (!job_loaded_) return Internal("a directive without the job");
    slot_ = d.value("slot", -1);
    bag_ = d.value("bag", 0);
    epoch_ = d.value("epoch", 0);
    term_ = d.value("term", int64_t{0});
    auto shards = d.value("shards", std::vector<int>{});
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
      loop_.reset();  // it reads the rows it was made with
      data_ = std::make_unique<model::TrainingData>(std::move(loaded));
      shards_ = shards;
      rows_bag_ = -1;
      TARN_LOG(kInfo) << "worker " << args_.index << ": slot " << slot_ << ", "
                      << data_->train.size() << " training and " << data_->valid.size()
                      << " validation rows";
    }
    auto ps = d.value("ps", std::vector<std::string>{});
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
    rows_ = train::BagRows(data_->train, {job_.bagging_sample_rate, job_.bagging_with_replacement},
                           static_cast<uint64_t>(job_.seed), bag_, slot_);
    rows_bag_ = bag_;
  }

  Status PullAll() {
    for (size_t i = 0; i < ps_.size(); ++i) {
      net::WireWriter w;
      w.I64(term_);
      TARN_ASSIGN_OR_RETURN(std::string reply,
                            ps_[i]->Call(kPull, w.str(), net::Deadline::InMs(60000)));
      TARN_RETURN_IF_ERROR(TakeAnswer(i, reply));
    }
    return Status::Ok();
  }

  Status TakeAnswer(size_t i, const std::string& reply) {
    net::WireReader r(reply);
    uint8_t status = 0;
    TARN_RETURN_IF_ERROR(r.U8(&status));
    TARN_RETURN_IF_ERROR(r.I64(&steps_[i]));
    TARN_RETURN_IF_ERROR(r.Floats(&slice_, params_.size()));
    if (slice_.size() != ranges_[i].second - ranges_[i].first) {
      return Corrupt("parameter server " + std::to_string(i) + " answered the wrong slice size");
    }
    std::copy(slice_.begin(), slice_.end(),
              params_.begin() + static_cast<ptrdiff_t>(ranges_[i].first));
    if (status == 1) ++stale_;
    return Status::Ok();
  }

  // Pushes every server's part at once and waits for all answers. In sync
  // mode they must be concurrent: a server whose step waits on this worker
  // must not wait behind another server's step that waits on a peer.
  Status PushAll(double weight) {
    const size_t n = ps_.size();
    replies_.assign(n, Result<std::string>(Unavailable("no answer")));
    auto push = [&](size_t i) {
      net::WireWriter w;
      w.I64(term_);
      w.U32(static_cast<uint32_t>(slot_));
      w.I64(steps_[i]);
      w.F64(weight);
      const auto [b, e] = ranges_[i];
      w.Floats(std::span<const float>(grad_.data() + b, e - b));
      replies_[i] = ps_[i]->Call(kPush, w.str(), net::Deadline::InMs(600000));
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
    EpochDoneReport r;
    r.origin = Origin();
    r.sums = sums_;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.stale = stale_;
    r.bytes = bytes_;
    return r.ToJson();
  }

  ReportOrigin Origin() const { return {slot_, bag_, epoch_, term_}; }

  uint64_t PsBytes() const {
    uint64_t b = 0;
    for (const auto& c : ps_) b += c->bytes();
    return b;
  }

  // Trains the epoch from batch `position` with the training core, pushing
  // the gradient of every commPeriod batches to the parameter servers.
  Status TrainBatches(int64_t position) {
    const uint64_t bytes0 = PsBytes();
    sums_ = {};
    stale_ = 0;
    auto& progress = session_->progress();
    progress.bag = bag_;
    progress.epoch = epoch_;
    TARN_RETURN_IF_ERROR(PullAll());
    const uint64_t seed = static_cast<uint64_t>(job_.seed);
    order_ = rows_;
    if (!setup_.full_batch) train::ShuffleForEpoch(&order_, seed, bag_, epoch_, slot_);
    train::BatchLoopConfig config;
    config.batch =
        setup_.full_batch ? std::max<int>(1, static_cast<int>(order_.size())) : job_.batch_size;
    config.seed = seed;
    config.slot = slot_;
    config.shifu_kind = setup_.shifu_kind;
    if (!loop_ || loop_slot_ != slot_ || loop_batch_ != config.batch) {
      loop_ = std::make_unique<train::BatchLoop>(*net_, *data_, config);
      loop_slot_ = slot_;
      loop_batch_ = config.batch;
    }
    const int64_t batches = loop_->Batches(order_.size());
    std::fill(grad_.begin(), grad_.end(), 0.0f);
    double pending_weight = 0;
    int pending = 0;
    auto push = [&](std::span<float> grad, double weight, int64_t b, size_t) -> Status {
      for (size_t i = 0; i < grad.size(); ++i) grad_[i] += grad[i];
      pending_weight += weight;
      if (++pending == job_.comm_period || b + 1 == batches) {
        TARN_RETURN_IF_ERROR(PushAll(pending_weight));
        pending_weight = 0;
        pending = 0;
        std::fill(grad_.begin(), grad_.end(), 0.0f);
      }
      progress.position = b + 1;
      return Status::Ok();
    };
    // PushAll writes the new parameters into params_, which the next batch reads.
    TARN_RETURN_IF_ERROR(loop_->RunEpoch(params_.data(), order_, epoch_, position, push, &sums_));
    bytes_ = PsBytes() - bytes0;
    if (job_.consistency != Consistency::kAsync) {
      for (auto& c : ps_) {
        data::Json done{{"term", term_}, {"slot", slot_}};
        TARN_RETURN_IF_ERROR(c->Call(kSlotDone, done.dump(), net::Deadline::InMs(60000)).status());
      }
    }
    return Status::Ok();
  }

  data::Json Validate() {
    Status st = PullAll();
    if (!st.ok()) return {{"kind", "await"}, {"reason", st.message()}};
    ValidDoneReport r;
    r.origin = Origin();
    r.summary = train::Validate(*net_, params_.data(), *data_, data_->valid, setup_.shifu_kind, 1);
    return r.ToJson();
  }

  NodeArgs args_;
  Session* session_;
  int64_t seq_ = 0;
  JobConfig job_;
  bool job_loaded_ = false;
  train::TrainSetup setup_;
  std::unique_ptr<model::Network> net_;
  std::unique_ptr<model::TrainingData> data_;
  std::unique_ptr<train::BatchLoop> loop_;  // for data_, loop_slot_ and loop_batch_
  int loop_slot_ = -1, loop_batch_ = 0;
  std::vector<int> shards_;
  std::vector<std::string> ps_addresses_;
  std::vector<std::unique_ptr<net::RpcClient>> ps_;
  std::unique_ptr<ThreadPool> callers_;  // pushes to servers 1..P-1, beside server 0's
  std::vector<Result<std::string>> replies_;
  std::vector<std::pair<size_t, size_t>> ranges_;
  std::vector<int64_t> steps_;
  std::vector<float> params_, grad_, slice_;
  std::vector<uint32_t> rows_, order_;
  int rows_bag_ = -1;
  int slot_ = -1, bag_ = 0, epoch_ = 0;
  int64_t term_ = 0;
  train::TrainSums sums_;  // of this epoch's batches
  int64_t stale_ = 0;
  uint64_t bytes_ = 0;  // to and from the parameter servers in the epoch's training
};

}  // namespace

Status RunWorker(const NodeArgs& args) {
  TARN_ASSIGN_OR_RETURN(auto session, Session::Open(args, ""));
  Worker w(args, session.get());
  return w.Run();
}

}  // namespace tarn::runtime
