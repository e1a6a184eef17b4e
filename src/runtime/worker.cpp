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
#include "runtime/messages.h"
#include "runtime/node.h"
#include "runtime/protocol.h"
#include "runtime/session.h"
#include "runtime/sparse_client.h"
#include "train/batch_loop.h"
#include "train/graph_models.h"
#include "train/graph_trainer.h"
#include "train/sampling.h"
#include "train/setup.h"
#include "train/validation.h"

namespace tarn::runtime {

namespace {

// A graph's tables on the parameter servers: each batch pulls the rows it
// touches, one message per server for all its tables.
class ServerTables : public train::TableSource {
 public:
  ServerTables(SparseTableClient* client, const std::vector<model::TableSpec>* specs)
      : client_(client), specs_(specs) {}
  Status Fetch(std::span<const Request> requests) override {
    if (requests.size() != specs_->size()) {
      return Internal("fetched " + std::to_string(requests.size()) + " of " +
                      std::to_string(specs_->size()) + " embedding tables");
    }
    std::vector<SparseTableClient::TableIds> pulls;
    for (size_t t = 0; t < requests.size(); ++t)
      pulls.push_back({(*specs_)[t].name, requests[t].ids});
    TARN_ASSIGN_OR_RETURN(auto rows, client_->PullTables(pulls));
    for (size_t t = 0; t < requests.size(); ++t) {
      // The client answers the distinct ids ascending: ids exactly, as they are asked.
      if (rows[t].ids.size() != requests[t].ids.size()) {
        return Internal("embedding table " + (*specs_)[t].name + ": asked " +
                        std::to_string(requests[t].ids.size()) + " rows, got " +
                        std::to_string(rows[t].ids.size()));
      }
      std::copy(rows[t].values.begin(), rows[t].values.end(), requests[t].out);
    }
    return Status::Ok();
  }

 private:
  SparseTableClient* client_;
  const std::vector<model::TableSpec>* specs_;
};

class Worker {
 public:
  Worker(const NodeArgs& args, Session* session) : args_(args), session_(session) {}

  Status Run() {
    msg::Report report = msg::Report::Await();
    while (true) {
      report.node = args_.node;
      report.seq = seq_;
      auto directive = msg::Call<msg::Directive>(session_->calls(), report, net::Deadline::Never());
      if (!directive.ok()) return directive.status().WithContext("reporting to the coordinator");
      seq_ = directive->seq;
      const std::string& action = directive->action;
      if (action == "finish") return Status::Ok();
      if (action == "standby") {
        report = msg::Report::Await();
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
      TARN_ASSIGN_OR_RETURN(setup_, train::TrainSetup::FromTrainParams(
                                        job_.train_params, job_.algorithm, job_.inputs));
      if (job_.graph_model.is_null()) {
        net_ = std::make_unique<model::Network>(setup_.spec);
        params_.assign(net_->ParameterCount(), 0.0f);
        state_begin_ = params_.size();
      } else {
        TARN_ASSIGN_OR_RETURN(graph_model_,
                              train::GraphModelFromJson(job_.graph_model, "the job's graphModel"));
        setup_.optimizer = train::GraphOptimizerConfig(setup_.optimizer, graph_model_);
        const model::Graph g(graph_model_.spec);
        params_.assign(g.DenseParameterCount() + g.StateCount(), 0.0f);
        state_begin_ = g.DenseParameterCount();
      }
      grad_.assign(params_.size(), 0.0f);
      job_loaded_ = true;
    }
    if (!job_loaded_) return Internal("a directive without the job");
    for (int i : d.shards) {
      if (static_cast<size_t>(i) >= job_.shard_paths.size()) {
        return InvalidArgument(std::string(msg::Directive::kName) + ": shard " + std::to_string(i) +
                               " is not one of the job's " +
                               std::to_string(job_.shard_paths.size()) + " shards");
      }
    }
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
      graph_.reset();
      data_ = std::make_unique<model::TrainingData>(std::move(loaded));
      if (!job_.graph_model.is_null()) {
        TARN_ASSIGN_OR_RETURN(
            graph_, train::GraphTrainer::Create(graph_model_.spec, *data_, job_.std_dev_cut_off,
                                                setup_.shifu_kind));
      }
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
      std::vector<net::RpcClient*> servers;
      for (auto& c : ps_) servers.push_back(c.get());
      sparse_ = std::make_unique<SparseTableClient>(servers, term_);
      server_tables_ = std::make_unique<ServerTables>(sparse_.get(), &table_specs_);
    }
    if (graph_) {
      // The tables of this bag (their rows start from its seed).
      sparse_->set_term(term_);
      TARN_ASSIGN_OR_RETURN(
          table_specs_,
          train::GraphTableSpecs(graph_->graph(), setup_.optimizer,
                                 train::InitSeed(static_cast<uint64_t>(job_.seed), bag_)));
      for (const auto& spec : table_specs_) sparse_->AddTable(spec);
      graph_->set_tables(server_tables_.get());
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
      TARN_ASSIGN_OR_RETURN(std::string reply, ps_[i]->Call(kPull, msg::Pull::Encode(term_),
                                                            net::Deadline::InMs(60000)));
      TARN_RETURN_IF_ERROR(TakeAnswer(i, reply));
    }
    KeepReceivedState();
    return Status::Ok();
  }

  // The batch-norm state as the servers answered it: async and ssp pushes
  // carry the move from it.
  void KeepReceivedState() {
    if (job_.consistency == Consistency::kSync) return;  // sync pushes carry the state itself
    received_state_.assign(params_.begin() + static_cast<ptrdiff_t>(state_begin_), params_.end());
  }

  // A push carries the batch-norm state at its places: the state this
  // worker moved (sync, where the servers average the step's), or its move
  // since the servers' answer (async, ssp, where they add it on arrival).
  void PutStateInPush() {
    const bool sync = job_.consistency == Consistency::kSync;
    for (size_t i = state_begin_; i < params_.size(); ++i) {
      grad_[i] = sync ? params_[i] : params_[i] - received_state_[i - state_begin_];
    }
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
    KeepReceivedState();
    return Status::Ok();
  }

  msg::Report Train(int64_t position) {
    auto t0 = std::chrono::steady_clock::now();
    Status st = TrainBatches(position);
    if (!st.ok()) {
      TARN_LOG(kWarn) << "worker " << args_.index << ": epoch " << epoch_ + 1
                      << " interrupted: " << st.message();
      return msg::Report::Await(st.message());
    }
    msg::EpochDoneReport r;
    r.origin = Origin();
    r.sums = sums_;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.stale = stale_;
    r.bytes = bytes_;
    return msg::Report::Of(std::move(r));
  }

  msg::ReportOrigin Origin() const { return {slot_, bag_, epoch_, term_}; }

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
      loop_ = graph_ ? std::make_unique<train::BatchLoop>(graph_.get(), config)
                     : std::make_unique<train::BatchLoop>(*net_, *data_, config);
      loop_slot_ = slot_;
      loop_batch_ = config.batch;
    }
    const int64_t batches = loop_->Batches(order_.size());
    std::fill(grad_.begin(), grad_.end(), 0.0f);
    double pending_weight = 0;
    int pending = 0;
    auto push = [&](const train::BatchGradient& g) -> Status {
      const int64_t b = g.batch;
      // Table rows go to their servers after every batch: the next batch
      // pulls them, as LOCAL reads its tables' stepped rows. In sync mode
      // every batch pushes (rows weighted 0 too), as the servers' table
      // step waits for every slot training; the last leaves that quorum.
      const bool sync = job_.consistency == Consistency::kSync;
      if (!g.tables.empty() && (g.weight > 0 || sync)) {
        std::vector<SparseTableClient::TableGrads> pushes;
        for (size_t t = 0; t < g.tables.size(); ++t) {
          pushes.push_back({table_specs_[t].name, g.tables[t].ids, g.tables[t].grads});
        }
        TARN_RETURN_IF_ERROR(
            sparse_->PushTables(slot_, epoch_, pushes, g.weight, b + 1 == batches));
      }
      for (size_t i = 0; i < g.dense.size(); ++i) grad_[i] += g.dense[i];
      pending_weight += g.weight;
      if (++pending == job_.comm_period || b + 1 == batches) {
        PutStateInPush();
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
        TARN_RETURN_IF_ERROR(
            msg::CallForStatus(*c, msg::SlotDone{term_, slot_}, net::Deadline::InMs(60000)));
      }
    }
    return Status::Ok();
  }

  msg::Report Validate() {
    Status st = PullAll();
    if (!st.ok()) return msg::Report::Await(st.message());
    msg::ValidDoneReport r;
    r.origin = Origin();
    if (graph_) {
      auto summary = graph_->Validate(params_.data(), data_->valid);
      if (!summary.ok()) return msg::Report::Await(summary.status().message());
      r.summary = std::move(*summary);
    } else {
      r.summary =
          train::Validate(*net_, params_.data(), *data_, data_->valid, setup_.shifu_kind, 1);
    }
    return msg::Report::Of(std::move(r));
  }

  NodeArgs args_;
  Session* session_;
  int64_t seq_ = 0;
  JobConfig job_;
  bool job_loaded_ = false;
  train::TrainSetup setup_;
  std::unique_ptr<model::Network> net_;
  train::GraphModel graph_model_;               // a graph job's graph
  std::unique_ptr<train::GraphTrainer> graph_;  // for data_
  std::unique_ptr<SparseTableClient> sparse_;   // the tables on ps_
  std::vector<model::TableSpec> table_specs_;   // this bag's
  std::unique_ptr<ServerTables> server_tables_;
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
  std::vector<float> params_, grad_;
  size_t state_begin_ = 0;             // params_[state_begin_..]: a graph's batch-norm state
  std::vector<float> received_state_;  // that state as the servers last answered it
  msg::ParamsAnswer answer_;           // a server's latest answer, its storage reused
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
