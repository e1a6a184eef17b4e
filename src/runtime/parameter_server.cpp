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
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <map>
#include <set>

#include "common/log.h"
#include "model/model_spec.h"
#include "model/network.h"
#include "model/optimizer.h"
#include "net/wire.h"
#include "runtime/checkpoint.h"
#include "runtime/node.h"
#include "runtime/protocol.h"
#include "runtime/session.h"
#include "runtime/sparse_messages.h"
#include "runtime/sparse_server.h"
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
    Status st;
    switch (r.type) {
      case kPush:
        st = Push(r.payload, out);
        break;
      case kPull:
        st = Pull(r.payload, out);
        break;
      case kGetParams: {
        net::WireWriter w;
        w.Floats(params_);
        out->Reply(w.Take());
        break;
      }
      case kSlotDone:
      case kConfigure:
      case kStartEpoch:
      case kCheckpoint:
      case kReset:
      case kShutdown:
        st = Control(r.type, r.payload, out);
        break;
      default:
        st = InvalidArgument("unknown message type " + std::to_string(r.type));
    }
    if (!st.ok()) out->Fail(st);
  }

  bool shutdown() const { return shutdown_.load(); }

 private:
  Status Control(uint16_t type, const std::string& payload, const Responder& out) {
    TARN_ASSIGN_OR_RETURN(auto j, ParseJsonPayload(payload, "parameter server control"));
    switch (type) {
      case kConfigure:
        TARN_RETURN_IF_ERROR(Configure(j));
        break;
      case kReset:
        term_ = j.value("term", term_);
        FailWaiting("the job rolled back to its last checkpoint");
        break;
      case kStartEpoch: {
        if (j.value("term", int64_t{-1}) != term_) return FailedPrecondition("stale term");
        epoch_ = j.value("epoch", 0);
        active_.clear();
        clock_.clear();
        for (int s : j.value("slots", std::vector<int>{})) {
          active_.insert(s);
          clock_[s] = 0;
        }
        ResetStep();
        break;
      }
      case kSlotDone: {
        if (j.value("term", int64_t{-1}) != term_) return Unavailable("stale term");
        active_.erase(j.value("slot", -1));
        if (mode_ == Consistency::kSync) MaybeCloseStep();
        if (mode_ == Consistency::kSsp) ReleaseBlocked();
        break;
      }
      case kCheckpoint: {
        Slice s;
        s.bag = bag_;
        s.epoch = j.value("epoch", 0);
        s.ps = index_;
        s.begin = begin_;
        s.end = end_;
        s.params = params_;
        s.optimizer_state = optimizer_->SaveState();
        TARN_ASSIGN_OR_RETURN(uint32_t crc, WriteSlice(j.value("path", ""), s));
        out->Reply(data::Json{{"crc", crc}}.dump());
        return Status::Ok();
      }
      case kShutdown:
        shutdown_ = true;
        break;
    }
    out->Reply("{}");
    return Status::Ok();
  }

  Status Configure(const data::Json& j) {
    TARN_ASSIGN_OR_RETURN(auto job, JobConfig::FromJson(j.value("job", data::Json())));
    TARN_ASSIGN_OR_RETURN(auto setup, train::TrainSetup::FromTrainParams(
                                          job.train_params, job.algorithm, job.inputs));
    const auto& spec = setup.spec;
    FailWaiting("the parameter server was reconfigured");
    term_ = j.value("term", int64_t{0});
    bag_ = j.value("bag", 0);
    begin_ = j.value("begin", size_t{0});
    end_ = j.value("end", size_t{0});
    mode_ = job.consistency;
    staleness_ = job.staleness;
    optimizer_ = model::Optimizer::CreateForRange(setup.optimizer, spec, begin_, end_);
    const std::string load = j.value("load", "");
    if (load.empty()) {
      // The same initialization as single-machine training, cut to this slice.
      model::Network net(spec);
      std::vector<float> all(spec.ParameterCount());
      net.InitParameters(all.data(), static_cast<uint64_t>(j.value("initSeed", uint64_t{0})));
      params_.assign(all.begin() + static_cast<ptrdiff_t>(begin_),
                     all.begin() + static_cast<ptrdiff_t>(end_));
    } else {
      TARN_ASSIGN_OR_RETURN(auto slice, ReadSlice(load));
      if (slice.begin != begin_ || slice.end != end_) {
        return FailedPrecondition(load + " holds parameters " + std::to_string(slice.begin) + "-" +
                                  std::to_string(slice.end) + ", not this server's slice");
      }
      params_ = std::move(slice.params);
      TARN_RETURN_IF_ERROR(optimizer_->LoadState(slice.optimizer_state).WithContext(load));
    }
    epoch_ = j.value("epoch", 0);
    step_ = 0;
    ResetStep();
    TARN_LOG(kInfo) << "ps " << index_ << ": term " << term_ << ", bag " << bag_ << ", parameters "
                    << begin_ << "-" << end_ << (load.empty() ? " initialized" : " from " + load);
    return Status::Ok();
  }

  Status Pull(const std::string& payload, const Responder& out) {
    net::WireReader r(payload);
    int64_t term = 0;
    TARN_RETURN_IF_ERROR(r.I64(&term));
    if (term != term_) return Unavailable("stale term");
    out->Reply(Answer(0));
    return Status::Ok();
  }

  // status 0: applied (or pending), 1: stale, dropped.
  std::string Answer(uint8_t status) {
    net::WireWriter w;
    w.U8(status);
    w.I64(step_);
    w.Floats(params_);
    return w.Take();
  }

  Status Push(const std::string& payload, const Responder& out) {
    net::WireReader r(payload);
    int64_t term = 0, step = 0;
    uint32_t slot = 0;
    double weight = 0;
    TARN_RETURN_IF_ERROR(r.I64(&term));
    TARN_RETURN_IF_ERROR(r.U32(&slot));
    TARN_RETURN_IF_ERROR(r.I64(&step));
    TARN_RETURN_IF_ERROR(r.F64(&weight));
    TARN_RETURN_IF_ERROR(r.Floats(&grad_, params_.size()));
    if (term != term_) return Unavailable("stale term");
    if (grad_.size() != params_.size() || !std::isfinite(weight) || weight < 0) {
      return InvalidArgument("push of " + std::to_string(grad_.size()) + " values for a slice of " +
                             std::to_string(params_.size()));
    }
    const int s = static_cast<int>(slot);
    if (mode_ == Consistency::kSync) {
      if (step < step_) {  // stale: the step closed without it
        ++stale_;
        out->Reply(Answer(1));
        return Status::Ok();
      }
      if (!pushed_.insert(s).second) {  // a retry or a takeover: counted once
        waiting_.push_back(out);
        return Status::Ok();
      }
      for (size_t i = 0; i < grad_.size(); ++i) sum_[i] += grad_[i];
      sum_weight_ += weight;
      waiting_.push_back(out);
      MaybeCloseStep();
      return Status::Ok();
    }
    Apply(grad_.data(), weight);
    ++step_;
    if (mode_ == Consistency::kAsync) {
      out->Reply(Answer(0));
      return Status::Ok();
    }
    ++clock_[s];
    blocked_.push_back({s, out});
    ReleaseBlocked();
    return Status::Ok();
  }

  void Apply(const float* grad_sum, double weight) {
    if (weight <= 0) return;
    mean_.resize(params_.size());
    const float scale = static_cast<float>(1.0 / weight);
    for (size_t i = 0; i < mean_.size(); ++i) mean_[i] = grad_sum[i] * scale;
    optimizer_->Step(params_.data(), mean_.data(), epoch_);
  }

  void MaybeCloseStep() {
    if (pushed_.empty()) return;
    for (int s : active_) {
      if (!pushed_.count(s)) return;
    }
    std::vector<float> sum(sum_.begin(), sum_.end());
    Apply(sum.data(), sum_weight_);
    ++step_;
    std::string answer = Answer(0);
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
        b.out->Reply(Answer(0));
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
  Consistency mode_ = Consistency::kSync;
  int staleness_ = 0;
  std::vector<float> params_, grad_, mean_;
  std::unique_ptr<model::Optimizer> optimizer_;
  int64_t step_ = 0, stale_ = 0;
  std::set<int> active_, pushed_;
  std::vector<double> sum_;
  double sum_weight_ = 0;
  std::vector<Responder> waiting_;
  std::map<int, int64_t> clock_;
  std::vector<Blocked> blocked_;
  std::atomic<bool> shutdown_{false};
  SparseShard sparse_;
};

}  // namespace

Status RunParameterServer(const NodeArgs& node) {
  NodeArgs args = node;
  if (!args.transport) args.transport = MakeTcpTransport(args.secret);
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
