// A parameter server: owns one contiguous slice of the flat parameter vector
// and its optimizer state, and applies the workers' gradients to it under
// the job's consistency mode. It also holds its share of the job's embedding
// tables (runtime/sparse_server.h), which answers the kSparse* messages.
//   sync:  a step closes when every slot still training this epoch has pushed
//          its gradient for the step; the mean of them is applied once. A
//          gradient for an older step is stale and dropped (the worker gets
//          the current parameters back).
//   async: every push is applied at once.
//   ssp:   every push is applied at once, but a worker more than `staleness`
//          pushes ahead of the slowest slot still training waits for it.
// A graph's batch-norm state (its moving means and variances, the last
// floats of the flat vector) is never stepped by the optimizer: a push
// carries, at those places, the worker's moved state (sync: the step sets
// the mean over the step's pushes, so every worker starts the next step
// from the same state, and one worker's is exactly its own) or its move
// since the parameters it last got (async, ssp: added on arrival).
// The tables' share follows the same mode and quorum (sparse_server.h).
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <map>
#include <set>

#include "common/log.h"
#include "model/graph.h"
#include "model/model_spec.h"
#include "model/network.h"
#include "model/optimizer.h"
#include "runtime/checkpoint.h"
#include "runtime/messages.h"
#include "runtime/node.h"
#include "runtime/protocol.h"
#include "runtime/session.h"
#include "runtime/sparse_messages.h"
#include "runtime/sparse_server.h"
#include "runtime/status_files.h"
#include "train/graph_models.h"
#include "train/graph_trainer.h"
#include "train/setup.h"

namespace tarn::runtime {

namespace {

using Responder = std::shared_ptr<net::RpcServer::Responder>;

class ParameterServer {
 public:
  explicit ParameterServer(int index) : index_(index), sparse_(index) {}

  void Handle(const net::RpcServer::Request& r, Responder out) {
    if (IsSparseMessage(r.type)) {  // embedding tables: their own lock, never the dense one
      sparse_.Handle(r, std::move(out));
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    Status st = Dispatch(r, out);
    if (!st.ok()) out->Fail(st);
  }

  bool shutdown() const { return shutdown_.load(); }

 private:
  // Every message is parsed whole before any state changes: a malformed one
  // is refused with the field it got wrong and leaves the server as it was.
  Status Dispatch(const net::RpcServer::Request& r, const Responder& out) {
    switch (r.type) {
      case kPush:
        return Push(r.payload, out);
      case kPull: {
        TARN_ASSIGN_OR_RETURN(auto m, msg::Pull::Decode(r.payload));
        if (m.term != term_) return Unavailable("stale term");
        out->Reply(Answer(msg::ParamsAnswer::kApplied));
        return Status::Ok();
      }
      case kGetParams:
        TARN_RETURN_IF_ERROR(msg::Parse<msg::GetParams>(r.payload).status());
        out->Reply(msg::Params::Encode(params_));
        return Status::Ok();
      case kConfigure: {
        TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::Configure>(r.payload));
        TARN_RETURN_IF_ERROR(Configure(m));
        break;
      }
      case kReset: {
        TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::Reset>(r.payload));
        term_ = m.term;
        FailWaiting("the job rolled back to its last checkpoint");
        // The tables' share takes the new term too: an old-term push that
        // arrives after this is refused at once, not held for a step that
        // never closes.
        sparse_.Reset(m.term, "the job rolled back to its last checkpoint");
        break;
      }
      case kStartEpoch: {
        TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::StartEpoch>(r.payload));
        if (m.term != term_) return FailedPrecondition("stale term");
        epoch_ = m.epoch;
        active_.clear();
        clock_.clear();
        for (int s : m.slots) {
          active_.insert(s);
          clock_[s] = 0;
        }
        ResetStep();
        sparse_.StartEpoch(m.slots);
        break;
      }
      case kSlotDone: {
        TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::SlotDone>(r.payload));
        if (m.term != term_) return Unavailable("stale term");
        active_.erase(m.slot);
        sparse_.SlotDone(m.slot);
        if (mode_ == Consistency::kSync) MaybeCloseStep();
        if (mode_ == Consistency::kSsp) ReleaseBlocked();
        break;
      }
      case kCheckpoint: {
        TARN_ASSIGN_OR_RETURN(auto m, msg::Parse<msg::Checkpoint>(r.payload));
        if (!optimizer_) return FailedPrecondition("kCheckpoint before kConfigure");
        Slice s;
        s.bag = bag_;
        s.epoch = m.epoch;
        s.ps = index_;
        s.begin = begin_;
        s.end = end_;
        s.params = params_;
        s.optimizer_state = optimizer_->SaveState();
        // The previous slice's write failing fails this checkpoint (its
        // manifest was never committed); the file itself is written behind,
        // so that a slow file system (HDFS) does not hold up the next epoch.
        TARN_RETURN_IF_ERROR(slice_files_.TakeFailure());
        EncodedSlice encoded = EncodeSlice(s);
        const msg::CheckpointReply reply{encoded.crc, encoded.bytes.size()};
        slice_files_.Put(m.path, std::move(encoded.bytes));
        out->Reply(reply.ToJson().dump());
        return Status::Ok();
      }
      case kShutdown:
        TARN_RETURN_IF_ERROR(msg::Parse<msg::Shutdown>(r.payload).status());
        shutdown_ = true;
        break;
      default:
        return InvalidArgument("the parameter server does not take " + MessageName(r.type));
    }
    out->Reply("{}");
    return Status::Ok();
  }

  // Everything that can fail (the job, the network, the slice file) comes
  // first: a configuration that fails leaves the server as it was.
  Status Configure(const msg::Configure& m) {
    TARN_ASSIGN_OR_RETURN(auto job, JobConfig::FromJson(m.job));
    TARN_ASSIGN_OR_RETURN(auto setup, train::TrainSetup::FromTrainParams(
                                          job.train_params, job.algorithm, job.inputs));
    const auto& spec = setup.spec;
    // A graph model's flat vector: its dense parameters, then its (empty) state.
    std::unique_ptr<model::Graph> graph;
    std::vector<bool> unregularized;
    if (!job.graph_model.is_null()) {
      TARN_ASSIGN_OR_RETURN(auto g, train::GraphModelFromJson(job.graph_model, "kConfigure: job"));
      setup.optimizer = train::GraphOptimizerConfig(setup.optimizer, g);
      graph = std::make_unique<model::Graph>(g.spec);
      unregularized = train::GraphUnregularizedMask(*graph, g.unregularized);
      unregularized.resize(graph->DenseParameterCount() + graph->StateCount(), true);
    }
    const size_t count =
        graph ? graph->DenseParameterCount() + graph->StateCount() : spec.ParameterCount();
    if (m.end > count) {
      return InvalidArgument("kConfigure: field 'end' must be at most the network's " +
                             std::to_string(count) + " parameters, got " + std::to_string(m.end));
    }
    const size_t begin = static_cast<size_t>(m.begin), end = static_cast<size_t>(m.end);
    auto optimizer =
        graph ? model::Optimizer::Create(
                    setup.optimizer,
                    std::vector<bool>(unregularized.begin() + static_cast<ptrdiff_t>(begin),
                                      unregularized.begin() + static_cast<ptrdiff_t>(end)))
              : model::Optimizer::CreateForRange(setup.optimizer, spec, begin, end);
    std::vector<float> params;
    if (m.load.empty()) {
      // The same initialization as single-machine training, cut to this slice.
      std::vector<float> all(count);
      if (graph) {
        graph->InitParameters(all.data(), {}, m.init_seed);  // tables: their rows lazily
        graph->InitState(all.data() + graph->DenseParameterCount());
      } else {
        model::Network net(spec);
        net.InitParameters(all.data(), m.init_seed);
      }
      params.assign(all.begin() + static_cast<ptrdiff_t>(begin),
                    all.begin() + static_cast<ptrdiff_t>(end));
    } else {
      TARN_ASSIGN_OR_RETURN(auto slice, ReadSlice(m.load));
      if (slice.begin != begin || slice.end != end) {
        return FailedPrecondition(m.load + " holds parameters " + std::to_string(slice.begin) +
                                  "-" + std::to_string(slice.end) + ", not this server's slice");
      }
      params = std::move(slice.params);
      TARN_RETURN_IF_ERROR(optimizer->LoadState(slice.optimizer_state).WithContext(m.load));
    }
    FailWaiting("the parameter server was reconfigured");
    sparse_.FailWaiting("the parameter server was reconfigured");
    sparse_.SetConsistency(job.consistency);
    term_ = m.term;
    bag_ = m.bag;
    begin_ = begin;
    end_ = end;
    // The slice's first batch-norm state float (its size when it holds none).
    state_begin_ =
        graph ? std::clamp(graph->DenseParameterCount(), begin, end) - begin : end - begin;
    mode_ = job.consistency;
    staleness_ = job.staleness;
    optimizer_ = std::move(optimizer);
    params_ = std::move(params);
    epoch_ = m.epoch;
    step_ = 0;
    ResetStep();
    TARN_LOG(kInfo) << "ps " << index_ << ": term " << term_ << ", bag " << bag_ << ", parameters "
                    << begin_ << "-" << end_
                    << (m.load.empty() ? " initialized" : " from " + m.load);
    return Status::Ok();
  }

  std::string Answer(uint8_t status) { return msg::ParamsAnswer::Encode(status, step_, params_); }

  Status Push(const std::string& payload, const Responder& out) {
    TARN_RETURN_IF_ERROR(msg::Push::Decode(payload, params_.size(), &push_));
    if (push_.term != term_) return Unavailable("stale term");
    if (!optimizer_) return FailedPrecondition("kPush before kConfigure");
    const std::vector<float>& grad = push_.gradient;
    const double weight = push_.weight;
    const int s = push_.slot;
    if (mode_ == Consistency::kSync) {
      if (push_.step < step_) {  // stale: the step closed without it
        ++stale_;
        out->Reply(Answer(msg::ParamsAnswer::kStale));
        return Status::Ok();
      }
      if (!pushed_.insert(s).second) {  // a retry or a takeover: counted once
        waiting_.push_back(out);
        return Status::Ok();
      }
      for (size_t i = 0; i < grad.size(); ++i) sum_[i] += grad[i];
      sum_weight_ += weight;
      ++state_pushes_;
      waiting_.push_back(out);
      MaybeCloseStep();
      return Status::Ok();
    }
    Apply(grad.data(), weight, 1);
    ++step_;
    if (mode_ == Consistency::kAsync) {
      out->Reply(Answer(msg::ParamsAnswer::kApplied));
      return Status::Ok();
    }
    ++clock_[s];
    blocked_.push_back({s, out});
    ReleaseBlocked();
    return Status::Ok();
  }

  // One step: the mean gradient of the dense parameters (none for rows
  // weighted 0), and the state the pushes carry at its places (sync: their
  // sum over `state_pushes` pushes; a batch moves the state whatever its
  // rows weigh, as in LOCAL).
  void Apply(const float* grad_sum, double weight, int64_t state_pushes) {
    if (weight > 0) {
      mean_.resize(params_.size());
      const float scale = static_cast<float>(1.0 / weight);
      for (size_t i = 0; i < state_begin_; ++i) mean_[i] = grad_sum[i] * scale;
      std::fill(mean_.begin() + static_cast<ptrdiff_t>(state_begin_), mean_.end(), 0.0f);
      optimizer_->Step(params_.data(), mean_.data(), epoch_);
    }
    for (size_t i = state_begin_; i < params_.size(); ++i) {
      params_[i] = mode_ == Consistency::kSync
                       ? static_cast<float>(sum_[i] / static_cast<double>(state_pushes))
                       : params_[i] + grad_sum[i];
    }
  }

  void MaybeCloseStep() {
    if (pushed_.empty()) return;
    for (int s : active_) {
      if (!pushed_.count(s)) return;
    }
    std::vector<float> sum(sum_.begin(), sum_.end());
    Apply(sum.data(), sum_weight_, state_pushes_);
    ++step_;
    std::string answer = Answer(msg::ParamsAnswer::kApplied);
    for (auto& w : waiting_) w->Reply(answer);
    waiting_.clear();
    ResetStep();
  }

  void ReleaseBlocked() {
    int64_t slowest = INT64_MAX;
    for (int s : active_) slowest = std::min(slowest, clock_[s]);
    std::vector<Blocked> still;
    for (auto& b : blocked_) {
      if (slowest == INT64_MAX || clock_[b.slot] - slowest <= staleness_) {
        b.out->Reply(Answer(msg::ParamsAnswer::kApplied));
      } else {
        still.push_back(b);
      }
    }
    blocked_.swap(still);
  }

  void ResetStep() {
    pushed_.clear();
    sum_.assign(params_.size(), 0.0);
    sum_weight_ = 0;
    state_pushes_ = 0;
  }

  void FailWaiting(const std::string& why) {
    for (auto& w : waiting_) w->Fail(Unavailable(why));
    for (auto& b : blocked_) b.out->Fail(Unavailable(why));
    waiting_.clear();
    blocked_.clear();
    ResetStep();
  }

  struct Blocked {
    int slot;
    Responder out;
  };

  std::mutex mu_;
  const int index_;
  int64_t term_ = -1;
  int bag_ = 0, epoch_ = 0;
  size_t begin_ = 0, end_ = 0;
  size_t state_begin_ = 0;  // the slice's batch-norm state: [state_begin_, size)
  Consistency mode_ = Consistency::kSync;
  int staleness_ = 0;
  std::vector<float> params_, mean_;
  msg::Push push_;  // the latest push, its gradient's storage reused
  std::unique_ptr<model::Optimizer> optimizer_;
  int64_t step_ = 0, stale_ = 0;
  std::set<int> active_, pushed_;
  std::vector<double> sum_;
  double sum_weight_ = 0;
  int64_t state_pushes_ = 0;  // pushes counted in the step (each carries a moved state)
  std::vector<Responder> waiting_;
  std::map<int, int64_t> clock_;
  std::vector<Blocked> blocked_;
  std::atomic<bool> shutdown_{false};
  SparseShard sparse_;
  StatusFiles slice_files_;  // checkpoint slices, written off the message loop (last: first to go)
};

}  // namespace

Status RunParameterServer(const NodeArgs& node) {
  NodeArgs args = node;
  if (!args.transport) {
    args.transport = MakeTcpTransport(args.secret, args.tls);
#ifdef __GLIBC__
    // A server process of its own: one malloc arena for its connections'
    // threads (their work is serialized by the shares' locks anyway), so the
    // messages' freed buffers are reused across threads, not kept per thread;
    // and a fixed mmap threshold, so that large blocks (an open-addressing
    // row index as it grows, large messages) go back to the system when
    // freed instead of staying in the heap (glibc raises the threshold to
    // each freed block's size otherwise).
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
  }
  ParameterServer ps(args.index);
  net::ConnectionOptions options;
  options.max_message_bytes = size_t{1} << 30;  // the slice limit is the job's, checked per push
  std::string address;
  auto server = args.transport->Serve(
      args.host, options,
      [&ps](const net::RpcServer::Request& r, std::shared_ptr<net::RpcServer::Responder> out) {
        ps.Handle(r, std::move(out));
      },
      &address);
  if (!server.ok()) {
    return server.status().WithContext("parameter server " + std::to_string(args.index));
  }
  TARN_ASSIGN_OR_RETURN(auto session, Session::Open(args, address));
  TARN_LOG(kInfo) << "ps " << args.index << " serving on " << address;
  while (!ps.shutdown()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the reply go out
  (*server)->Stop();
  return Status::Ok();
}

}  // namespace tarn::runtime
