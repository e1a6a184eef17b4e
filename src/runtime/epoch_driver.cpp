// See epoch_driver.h. Each epoch: the servers start it, the workers train
// their slots and report, then validate and report; the figures are merged
// in slot order, and a checkpoint closes the epoch. A lost parameter server
// rolls every node back to the newest checkpoint of the bag.
#include "runtime/epoch_driver.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>

#include "common/checksum.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "data/file_system.h"
#include "data/json_fields.h"
#include "model/epoch_report.h"
#include "model/serving_version.h"
#include "runtime/messages.h"
#include "runtime/protocol.h"
#include "train/graph_models.h"
#include "train/graph_trainer.h"
#include "train/sampling.h"
#include "train/setup.h"
#include "train/validation.h"

namespace tarn::runtime {

using data::Json;
using data::OrNull;

namespace {

Status MakeDirsAnywhere(const std::string& dir) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(dir));
  return fs->MakeDirs(dir);
}

Status RemoveAnywhere(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(path));
  return fs->Delete(path, true);
}

double Seconds(CoordinatorClock::time_point since) {
  return std::chrono::duration<double>(CoordinatorClock::now() - since).count();
}

// Wall time, for the history: the gaps between epochs' ends are their whole
// cycle (training, validation, the checkpoint), on any backend.
double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool IsTrue(const Json& state, const char* key) {
  auto it = state.find(key);
  return it != state.end() && it->is_boolean() && it->get<bool>();
}

// A number the state holds, NaN for null (an error that was not finite) or none.
double NumberOr(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}

}  // namespace

Status EpochDriver::Prepare() {
  for (const auto& dir : {job_.checkpoint_dir, job_.logs_dir, job_.models_dir}) {
    TARN_RETURN_IF_ERROR(MakeDirsAnywhere(dir));
  }
  TARN_ASSIGN_OR_RETURN(auto setup, train::TrainSetup::FromTrainParams(
                                        job_.train_params, job_.algorithm, job_.inputs));
  spec_ = setup.spec;
  param_count_ = spec_.ParameterCount();
  std::string print = spec_.ToJson().dump();
  if (!job_.graph_model.is_null()) {
    TARN_ASSIGN_OR_RETURN(auto g, train::GraphModelFromJson(job_.graph_model, "job graphModel"));
    optimizer_ = train::GraphOptimizerConfig(setup.optimizer, g);
    graph_ = std::make_unique<model::Graph>(g.spec);
    param_count_ = graph_->DenseParameterCount() + graph_->StateCount();
    spec_ = model::ModelSpec();
    spec_.input_count = job_.inputs;
    description_.graph = g.spec;
    for (const auto& id : job_.id_columns) {
      TARN_ASSIGN_OR_RETURN(auto c, data::IdColumn::FromJson(id, "job idColumns"));
      description_.id_columns.push_back(std::move(c));
    }
    print = g.spec.ToJson().dump();
  }
  description_.spec = spec_;
  description_.columns = job_.columns;
  description_.norm_type = job_.norm_type;
  description_.std_dev_cut_off = job_.std_dev_cut_off;
  description_.missing_values = job_.missing_values;
  description_.model_set_columns = job_.model_set_columns;
  description_.algorithm = job_.algorithm;
  description_.seed = job_.seed;
  description_.train_params = job_.train_params;
  description_.run = {{"runMode", "DIST"},
                      {"consistency", ConsistencyName(job_.consistency)},
                      {"parameterServers", job_.ps},
                      {"workers", job_.workers}};
  if (job_.ps > static_cast<int>(param_count_)) {
    return InvalidArgument("shifu.ps.instances (" + std::to_string(job_.ps) +
                           ") exceeds the model's " + std::to_string(param_count_) + " parameters");
  }
  print += " ps=" + std::to_string(job_.ps);
  char hex[16];
  std::snprintf(hex, sizeof(hex), "%08x", Crc32c(0, print.data(), print.size()));
  fingerprint_ = hex;
  return Status::Ok();
}

void EpochDriver::ShutdownParameterServers() {
  for (auto& c : ps_clients_) {
    if (c) (void)msg::CallForStatus(*c, msg::Shutdown{}, net::Deadline::InMs(2000));
  }
}

void EpochDriver::SlotDropped(int slot) {
  for (auto& c : ps_clients_) {
    (void)msg::CallForStatus(*c, msg::SlotDone{s_.term, slot}, net::Deadline::InMs(10000));
  }
}

Status EpochDriver::RestartPsLocked(std::unique_lock<std::mutex>& lock, int index) {
  if (++ps_restarts_ > job_.max_ps_restarts) {
    return FailedPrecondition("parameter server " + std::to_string(index) + " failed " +
                              std::to_string(ps_restarts_) + " times (tarn.train.max-ps-restarts)");
  }
  ++s_.term;
  // The live servers stop taking pushes of the old term; waiting workers
  // get an error and report back for their next directive.
  lock.unlock();
  for (size_t i = 0; i < ps_clients_.size(); ++i) {
    if (static_cast<int>(i) == index || !ps_clients_[i]) continue;
    (void)msg::CallForStatus(*ps_clients_[i], msg::Reset{s_.term}, net::Deadline::InMs(10000));
  }
  lock.lock();
  TARN_ASSIGN_OR_RETURN(int id, membership_.LaunchLocked("ps", index));
  s_.ps_node[index] = id;
  TARN_LOG(kInfo) << "relaunched parameter server " << index;
  TARN_RETURN_IF_ERROR(membership_.WaitRegisteredLocked(lock, {id}, std::chrono::seconds(60)));
  lock.unlock();
  Status st = ConnectPs(index);
  if (st.ok()) {
    committer_->Settle();  // what the lost server never wrote is dropped
    auto m = NewestManifest(job_.checkpoint_dir);
    if (!m.ok() || m->bag != s_.bag) {
      st =
          FailedPrecondition("no checkpoint of bag " + std::to_string(s_.bag) + " to roll back to");
    } else {
      st = ConfigurePs(&*m);
      if (st.ok()) st = RestoreState(*m);
      if (st.ok()) {
        TARN_LOG(kInfo) << "rolled back to the checkpoint after epoch " << m->epoch << " ("
                        << m->path << ")";
      }
    }
  }
  lock.lock();
  return st;
}

Status EpochDriver::ConnectPs(int index) {
  std::string address;
  {
    std::lock_guard<std::mutex> lock(s_.mu);
    address = s_.nodes[s_.ps_node[index]].address;
  }
  net::ConnectionOptions o;
  o.max_message_bytes = static_cast<size_t>(job_.max_message_bytes);
  TARN_ASSIGN_OR_RETURN(
      auto c, membership_.transport().Dial(address, o, job_.retry_ms, net::Deadline::InMs(30000)));
  if (ps_clients_.size() <= static_cast<size_t>(index)) ps_clients_.resize(index + 1);
  ps_clients_[index] = std::move(c);
  if (tables_) tables_->set_server(index, ps_clients_[index].get());
  return Status::Ok();
}

template <typename Message>
Status EpochDriver::CallPs(int i, const Message& m, std::string* reply) {
  auto r = ps_clients_[i]->Call(Message::kType, m.ToJson().dump(), net::Deadline::InMs(120000));
  if (!r.ok()) return r.status().WithContext("parameter server " + std::to_string(i));
  if (reply) *reply = std::move(*r);
  return Status::Ok();
}

// Initializes (m == nullptr) or loads every server's slice.
Status EpochDriver::ConfigurePs(const Manifest* m) {
  if (m && m->fingerprint != fingerprint_) {
    return FailedPrecondition(m->path +
                              " was written for another network or number of parameter "
                              "servers; set train.isContinuous to false to start over");
  }
  for (int i = 0; i < job_.ps; ++i) {
    auto [b, e] = SliceRange(param_count_, job_.ps, i);
    msg::Configure c;
    c.term = s_.term;
    c.bag = s_.bag;
    c.epoch = s_.epoch;
    c.begin = b;
    c.end = e;
    c.job = server_job_json_;
    c.init_seed = train::InitSeed(static_cast<uint64_t>(job_.seed), s_.bag);
    c.load = m ? m->slices[i].path : "";
    TARN_RETURN_IF_ERROR(CallPs(i, c));
  }
  if (!graph_) return Status::Ok();
  // The tables: every server its share, fresh or (rolling back, resuming)
  // the rows of its checkpoint file, so a restarted server reads only its rows.
  TARN_ASSIGN_OR_RETURN(
      table_specs_,
      train::GraphTableSpecs(*graph_, optimizer_,
                             train::InitSeed(static_cast<uint64_t>(job_.seed), s_.bag)));
  tables_->set_term(s_.term);
  for (const auto& spec : table_specs_) {
    std::vector<std::string> load;
    for (int i = 0; m && i < job_.ps; ++i) {
      auto e = std::find_if(m->tables.begin(), m->tables.end(), [&](const Manifest::TableEntry& t) {
        return t.table == spec.name && t.ps == i;
      });
      if (e == m->tables.end()) {
        return FailedPrecondition(m->path + " has no share of embedding table " + spec.name +
                                  " for parameter server " + std::to_string(i));
      }
      load.push_back(e->path);
    }
    TARN_RETURN_IF_ERROR(tables_->Declare(spec, load));
  }
  return Status::Ok();
}

Status EpochDriver::Checkpoint(int epochs_done) {
  Manifest m;
  m.bag = s_.bag;
  m.epoch = epochs_done;
  m.term = s_.term;
  m.fingerprint = fingerprint_;
  m.state = SaveState();
  std::vector<uint64_t> slice_bytes;
  for (int i = 0; i < job_.ps; ++i) {
    const std::string path = JoinPath(job_.checkpoint_dir, SliceName(s_.bag, epochs_done, i));
    std::string reply;
    TARN_RETURN_IF_ERROR(CallPs(i, msg::Checkpoint{epochs_done, path}, &reply));
    TARN_ASSIGN_OR_RETURN(auto answer, msg::Parse<msg::CheckpointReply>(reply));
    auto [b, e] = SliceRange(param_count_, job_.ps, i);
    m.slices.push_back({path, answer.crc, b, e});
    slice_bytes.push_back(answer.bytes);
  }
  for (const auto& spec : table_specs_) {
    TARN_ASSIGN_OR_RETURN(auto shares,
                          tables_->Checkpoint(spec.name, job_.checkpoint_dir, s_.bag, epochs_done));
    for (const auto& share : shares)
      m.tables.push_back({spec.name, share.ps, share.path, share.crc});
  }
  // Early stopping's best epoch: written (by the committer, before the
  // manifest) with the first checkpoint after it, named by the later ones.
  std::string best_bytes;
  if (!best_params_.empty()) {
    if (best_submitted_ != best_epoch_) {
      EncodedSlice encoded = EncodeBestParams(s_.bag, best_epoch_, best_params_);
      best_crc_ = encoded.crc;
      best_bytes = std::move(encoded.bytes);
      best_submitted_ = best_epoch_;
    }
    m.best = Manifest::Best{JoinPath(job_.checkpoint_dir, BestParamsName(s_.bag, best_epoch_)),
                            best_crc_, best_epoch_};
  }
  if (final_) final_manifest_ = m;
  committer_->Submit(std::move(m), std::move(slice_bytes), std::move(best_bytes));
  last_checkpoint_ = CoordinatorClock::now();
  return Status::Ok();
}

Status EpochDriver::WaitCheckpointsCommitted() {
  // A server lost before it wrote its slice shows as an event (its exit or
  // missed heartbeats) well before the deadline: then roll back.
  const auto deadline = CoordinatorClock::now() + std::chrono::minutes(5);
  while (true) {
    Status st = committer_->Drain(std::chrono::milliseconds(500));
    if (st.ok() || st.code() != StatusCode::kDeadlineExceeded) return st;
    {
      std::lock_guard<std::mutex> lock(s_.mu);
      if (!s_.events.empty() || !s_.fatal.ok()) {
        return Unavailable("a parameter server was lost before its checkpoint slice was written");
      }
    }
    if (CoordinatorClock::now() >= deadline) return st;
  }
}

Result<std::vector<float>> EpochDriver::GatherDense() {
  std::vector<float> all(param_count_);
  for (int i = 0; i < job_.ps; ++i) {
    std::string reply;
    TARN_RETURN_IF_ERROR(CallPs(i, msg::GetParams{}, &reply));
    auto [b, e] = SliceRange(param_count_, job_.ps, i);
    TARN_ASSIGN_OR_RETURN(auto slice, msg::Params::Decode(reply, e - b));
    std::copy(slice.begin(), slice.end(), all.begin() + static_cast<ptrdiff_t>(b));
  }
  return all;
}

Result<std::vector<float>> EpochDriver::GatherParams() {
  TARN_ASSIGN_OR_RETURN(auto dense_and_state, GatherDense());
  if (!graph_) return dense_and_state;
  std::vector<float> all;
  model::VectorParamsSink sink(&all);
  TARN_RETURN_IF_ERROR(WriteParams(dense_and_state, sink));
  return all;
}

Status EpochDriver::WriteParams(std::span<const float> dense_and_state, model::ParamsSink& sink) {
  if (!graph_) return sink.Write(dense_and_state);
  const std::string dir = data::ChildPath(job_.checkpoint_dir, "model-tables");
  TARN_RETURN_IF_ERROR(MakeDirsAnywhere(dir));
  auto write_table = [&](size_t t, model::ParamsSink& out) -> Status {
    const model::TableSpec& spec = table_specs_[t];
    TARN_ASSIGN_OR_RETURN(auto shares, tables_->Checkpoint(spec.name, dir, s_.bag, s_.epoch));
    std::vector<std::string> paths(static_cast<size_t>(job_.ps));
    for (const auto& share : shares) {
      if (share.ps < 0 || share.ps >= job_.ps) {
        return Internal("a share of table " + spec.name + " from server " +
                        std::to_string(share.ps));
      }
      paths[static_cast<size_t>(share.ps)] = share.path;
    }
    // Merged a chunk at a time; a bad checksum fails the write.
    Status written = WriteTableFromShares(spec, paths, out);
    for (const auto& path : paths) (void)RemoveAnywhere(path);
    return written;
  };
  return train::WriteGraphModelFileParams(*graph_, dense_and_state, write_table, sink);
}

Json EpochDriver::SaveState() const {
  Json state = early_stop_.SaveState();
  state["final"] = final_;
  // The model file's metadata, should the model be written from this checkpoint.
  state["soFar"] = {{"trainError", OrNull(so_far_.train_error)},
                    {"validError", OrNull(so_far_.valid_error)},
                    {"shifuTrainError", OrNull(so_far_.shifu_train_error)},
                    {"shifuValidError", OrNull(so_far_.shifu_valid_error)}};
  return state;
}

Status EpochDriver::RestoreState(const Manifest& m) {
  std::vector<float> best;
  if (m.best) {
    TARN_ASSIGN_OR_RETURN(Slice slice, ReadSlice(m.best->path));
    best = std::move(slice.params);
  }
  std::lock_guard<std::mutex> g(s_.mu);
  s_.epoch = m.epoch;
  early_stop_.RestoreState(m.state);
  final_ = IsTrue(m.state, "final");
  final_manifest_.reset();
  if (final_) final_manifest_ = m;
  const Json so_far = m.state.value("soFar", Json::object());
  if (so_far.is_object()) {
    so_far_.train_error = NumberOr(so_far, "trainError");
    so_far_.valid_error = NumberOr(so_far, "validError");
    so_far_.shifu_train_error = NumberOr(so_far, "shifuTrainError");
    so_far_.shifu_valid_error = NumberOr(so_far, "shifuValidError");
  }
  best_params_ = std::move(best);
  best_epoch_ = best_submitted_ = m.best ? m.best->epoch : -1;
  best_crc_ = m.best ? m.best->crc : 0;
  return Status::Ok();
}

Result<bool> EpochDriver::OutputsWritten(const Manifest& m) const {
  const std::string model = JoinPath(job_.models_dir, "model" + std::to_string(m.bag) + ".tarn");
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(model));
  if (!fs->Stat(model).ok()) return false;
  // A manifest of an older tarn records neither; its bag's model is there.
  return IsTrue(m.state, "outputsWritten") || !m.state.contains("soFar");
}

Status EpochDriver::MarkOutputsWritten() {
  if (!final_manifest_) return Status::Ok();
  final_manifest_->state["outputsWritten"] = true;
  return WriteManifest(job_.checkpoint_dir, *final_manifest_);
}

Status EpochDriver::Train() {
  job_json_ = job_.ToJson();
  membership_.set_job_json(job_json_);
  // The servers read no column stats: a wide column's bins are megabytes of
  // JSON that every server would parse at every configure (roll backs too).
  server_job_json_ = Json::object();
  for (const auto& [key, value] : job_json_.items()) {
    server_job_json_[key] = key == "columns" ? Json::array() : value;
  }
  std::unique_lock<std::mutex> lock(s_.mu);
  std::vector<int> first;
  for (auto& [id, n] : s_.nodes) {
    if (n.role == "ps" || n.slot >= 0) first.push_back(id);
  }
  TARN_RETURN_IF_ERROR(membership_.WaitRegisteredLocked(lock, first, std::chrono::seconds(120)));
  lock.unlock();
  for (int i = 0; i < job_.ps; ++i) {
    TARN_RETURN_IF_ERROR(ConnectPs(i));
  }
  if (graph_) {
    std::vector<net::RpcClient*> servers;
    for (auto& c : ps_clients_) servers.push_back(c.get());
    tables_ = std::make_unique<SparseTableClient>(servers, s_.term);
  }
  int start_bag = 0;
  std::optional<Manifest> resume;
  if (job_.is_continuous) {
    auto m = NewestManifest(job_.checkpoint_dir);
    // A resumed job keeps its epochs' history up to its checkpoint (the
    // epochs after it are trained again).
    auto old = ReadWhole(job_.history_json);
    if (old.ok()) {
      Json h = Json::parse(*old, nullptr, false);
      if (h.is_array()) {
        for (const auto& e : h) {
          int bag = 0, epoch = 0;
          if (const Json* b = data::JsonFind(e, "bag")) data::JsonAsInt(*b, &bag);
          if (const Json* x = data::JsonFind(e, "epoch")) data::JsonAsInt(*x, &epoch);
          if (!m.ok() || bag < m->bag || (bag == m->bag && epoch <= m->epoch)) {
            s_.history.push_back(e);
          }
        }
      }
    }
    if (m.ok()) {
      // "final": the manifest's bag trained its last epoch (a hand-edited
      // manifest with another type there resumes the bag). A finished bag
      // whose model was not written (the coordinator was lost in between)
      // is taken up again to write it from this checkpoint.
      bool done = false;
      if (IsTrue(m->state, "final")) {
        TARN_ASSIGN_OR_RETURN(done, OutputsWritten(*m));
      }
      start_bag = m->bag + (done ? 1 : 0);
      if (!done) resume = *m;
    }
  } else {
    TARN_RETURN_IF_ERROR(RemoveAnywhere(job_.checkpoint_dir));
    TARN_RETURN_IF_ERROR(MakeDirsAnywhere(job_.checkpoint_dir));
  }
  // The history reaches its file before each manifest: a resume keeps the
  // epochs up to its checkpoint and trains the others again, none twice or lost.
  committer_ = std::make_unique<CheckpointCommitter>(job_.checkpoint_dir, /*keep=*/2,
                                                     [this] { status_.files().Flush(); });
  for (int bag = start_bag; bag < job_.bags; ++bag) {
    lock.lock();
    s_.bag = bag;
    s_.epoch = 0;
    early_stop_.Reset();
    final_ = false;
    final_manifest_.reset();
    best_params_.clear();
    best_epoch_ = best_submitted_ = -1;
    ++s_.term;
    lock.unlock();
    if (resume && resume->bag == bag) {
      TARN_RETURN_IF_ERROR(ConfigurePs(&*resume));
      TARN_RETURN_IF_ERROR(RestoreState(*resume));
      committer_->Resumed(*resume);
      if (final_) {
        TARN_LOG(kInfo) << "bag " << bag << " trained its last epoch (" << s_.epoch
                        << ") but its model was not written: writing it from " << resume->path;
      } else {
        TARN_LOG(kInfo) << "resuming bag " << bag << " after epoch " << s_.epoch << " from "
                        << resume->path;
      }
    } else {
      TARN_RETURN_IF_ERROR(ConfigurePs(nullptr));
      // The bag's first checkpoint is committed before it trains: a roll
      // back always has one to go to.
      TARN_RETURN_IF_ERROR(Checkpoint(0));
      TARN_RETURN_IF_ERROR(WaitCheckpointsCommitted());
    }
    // A finished bag (resumed, or rolled back to its last checkpoint while
    // its model was written) trains no more: early stopping may have ended
    // it before numTrainEpochs.
    if (!final_) TARN_RETURN_IF_ERROR(OpenTensorBoard());
    while (true) {
      int epochs = s_.epoch;
      if (!final_) {
        TARN_ASSIGN_OR_RETURN(epochs, TrainBag());
        if (job_.test_crash_before_model == bag) {
          TARN_LOG(kWarn) << "tarn.train.test-crash-before-model: the coordinator stops after "
                             "bag "
                          << bag << "'s last checkpoint";
          ::kill(::getpid(), SIGKILL);
        }
      }
      Status written = WriteModel(epochs);
      if (written.ok()) break;
      TARN_RETURN_IF_ERROR(RecoverFromPsFailure(written).status());
    }
    TARN_RETURN_IF_ERROR(MarkOutputsWritten());
  }
  return Status::Ok();
}

// This bag's TensorBoard writer (a fresh job clears the old logs once).
Status EpochDriver::OpenTensorBoard() {
  if (!job_.tensorboard) return Status::Ok();
  std::string dir = job_.bags > 1 ? JoinPath(job_.tensorboard_dir, "bag" + std::to_string(s_.bag))
                                  : job_.tensorboard_dir;
  if (!job_.is_continuous && s_.bag == 0) {
    TARN_RETURN_IF_ERROR(RemoveAnywhere(job_.tensorboard_dir));
  }
  // Event files are appended to: on HDFS they are written here and copied.
  tensorboard_local_ = data::IsHdfsPath(dir)
                           ? JoinPath("tensorboard", dir.substr(job_.tensorboard_dir.size()))
                           : dir;
  tensorboard_remote_ = data::IsHdfsPath(dir) ? dir : "";
  TARN_ASSIGN_OR_RETURN(tensorboard_, model::TensorBoardWriter::Open(tensorboard_local_));
  return Status::Ok();
}

// The event files as they are now, queued for their copy in HDFS: the
// writer appends to them while the copy is made.
Status EpochDriver::PutTensorBoardCopy() {
  if (!tensorboard_ || tensorboard_remote_.empty()) return Status::Ok();
  TARN_ASSIGN_OR_RETURN(auto fs, data::FileSystemFor(tensorboard_local_));
  TARN_ASSIGN_OR_RETURN(auto entries, fs->List(tensorboard_local_));
  for (const auto& e : entries) {
    if (e.is_dir) continue;
    TARN_ASSIGN_OR_RETURN(std::string bytes, fs->ReadAll(e.path));
    status_.files().Put(data::ChildPath(tensorboard_remote_, e.name), std::move(bytes));
  }
  return Status::Ok();
}

// A call to a parameter server failed. When the server is lost (its exit
// or missed heartbeats arrive shortly), handle that as during training:
// relaunch it and roll back; true then. Any other failure stands.
Result<bool> EpochDriver::RecoverFromPsFailure(const Status& failure) {
  if (failure.code() != StatusCode::kUnavailable &&
      failure.code() != StatusCode::kDeadlineExceeded) {
    return failure;
  }
  std::unique_lock<std::mutex> lock(s_.mu);
  const auto deadline = CoordinatorClock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(job_.heartbeat_ms) *
                                                  job_.max_missed_heartbeats) +
                        std::chrono::seconds(5);
  while (s_.events.empty() && s_.fatal.ok() && CoordinatorClock::now() < deadline) {
    s_.cv.wait_for(lock, std::chrono::milliseconds(100));
  }
  if (s_.events.empty()) return failure;
  TARN_ASSIGN_OR_RETURN(bool rolled, membership_.HandleEvents(lock));
  if (!rolled) return failure;
  return true;
}

// Runs the epochs of the current bag, its checkpoints committed; returns
// the epochs completed.
Result<int> EpochDriver::TrainBag() {
  while (true) {
    TARN_ASSIGN_OR_RETURN(int epochs, TrainEpochs());
    Status committed = WaitCheckpointsCommitted();
    if (committed.ok()) return epochs;
    TARN_RETURN_IF_ERROR(RecoverFromPsFailure(committed).status());
  }
}

Result<int> EpochDriver::TrainEpochs() {
  // Not past a bag's last epoch: early stopping may end it before
  // numTrainEpochs, and a roll back to its last checkpoint trains nothing.
  while (!final_ && s_.epoch < job_.epochs) {
    std::unique_lock<std::mutex> lock(s_.mu);
    // Start the epoch on the servers, then release the workers.
    std::vector<int> active;
    for (size_t s = 0; s < s_.slots.size(); ++s) {
      s_.slots[s].trained = s_.slots[s].validated = false;
      if (!s_.slots[s].dropped) active.push_back(static_cast<int>(s));
    }
    s_.phase = "train";
    lock.unlock();
    Status started = Status::Ok();
    for (int i = 0; i < job_.ps && started.ok(); ++i) {
      started = CallPs(i, msg::StartEpoch{s_.term, s_.epoch, active});
    }
    if (!started.ok()) {
      TARN_RETURN_IF_ERROR(RecoverFromPsFailure(started).status());
      continue;
    }
    lock.lock();
    const auto t0 = CoordinatorClock::now();
    for (int s : active)
      membership_.DirectLocked(s_.nodes[s_.slots[s].holder],
                               membership_.SlotDirective("train", s, 0));
    status_.WriteClusterLocked();
    TARN_ASSIGN_OR_RETURN(bool rolled, WaitSlots(lock, &SlotState::trained));
    if (rolled) continue;
    const double train_secs = Seconds(t0);
    s_.phase = "validate";
    for (size_t s = 0; s < s_.slots.size(); ++s) {
      if (!s_.slots[s].dropped) {
        membership_.DirectLocked(s_.nodes[s_.slots[s].holder],
                                 membership_.SlotDirective("validate", static_cast<int>(s), 0));
      }
    }
    TARN_ASSIGN_OR_RETURN(rolled, WaitSlots(lock, &SlotState::validated));
    if (rolled) continue;
    const double secs = Seconds(t0);
    // The epoch's figures: the slots' reports merged in slot order.
    train::EpochTotals totals;
    double stale = 0, bytes = 0;
    for (const auto& s : s_.slots) {
      if (s.dropped) continue;
      totals.AddSlot(s.train_report.sums, s.valid_report.summary);
      stale += static_cast<double>(s.train_report.stale);
      bytes += static_cast<double>(s.train_report.bytes);
    }
    s_.phase = "checkpoint";
    lock.unlock();
    const double rows = static_cast<double>(totals.train.rows);
    const double auc = totals.valid.Auc();
    const auto figures =
        totals.Figures(s_.epoch + 1, job_.bags > 1 ? s_.bag : -1, train_secs, secs);
    const double samples_per_sec = figures.samples_per_sec;
    const double train_err = figures.train_loss, valid_err = figures.valid_loss;
    {
      std::lock_guard<std::mutex> g(s_.mu);
      s_.history.push_back({{"bag", s_.bag},
                            {"epoch", s_.epoch + 1},
                            {"trainError", train_err},
                            {"validError", OrNull(valid_err)},
                            {"shifuTrainError", OrNull(figures.shifu_train_error)},
                            {"shifuValidError", OrNull(figures.shifu_valid_error)},
                            {"auc", OrNull(auc)},
                            {"samplesPerSec", samples_per_sec},
                            {"staleGradients", stale},
                            {"bytesPerSample", rows > 0 ? bytes / rows : 0.0},
                            {"seconds", secs},
                            {"trainSeconds", train_secs},
                            {"endedAt", UnixSeconds()}});
      // The history survives the job, for benchmarks and post-mortems.
      status_.files().Put(job_.history_json, s_.history.dump(1) + "\n");
    }
    TARN_RETURN_IF_ERROR(train::ReportEpoch(figures, auc, tensorboard_.get()));
    TARN_RETURN_IF_ERROR(PutTensorBoardCopy());
    TARN_RETURN_IF_ERROR(train::CheckNotDiverged(s_.epoch + 1, train_err));
    const auto verdict = early_stop_.AfterEpoch(train_err, valid_err);
    if (verdict.keep_params) {
      auto best = GatherParams();
      if (!best.ok()) {
        TARN_RETURN_IF_ERROR(RecoverFromPsFailure(best.status()).status());
        continue;
      }
      best_params_ = std::move(*best);
      best_epoch_ = s_.epoch + 1;
    }
    so_far_.Record(figures);
    const bool stop = verdict.stop;
    {
      std::lock_guard<std::mutex> g(s_.mu);
      ++s_.epoch;
      final_ = stop || s_.epoch == job_.epochs;
    }
    const bool due = final_ || CoordinatorClock::now() - last_checkpoint_ >=
                                   std::chrono::milliseconds(job_.checkpoint_interval_ms);
    Status checkpointed = due ? Checkpoint(s_.epoch) : Status::Ok();
    if (!checkpointed.ok()) {
      TARN_RETURN_IF_ERROR(RecoverFromPsFailure(checkpointed).status());
      continue;
    }
    if (!job_.serving_export_dir.empty() && job_.serving_export_every > 0 &&
        s_.epoch % job_.serving_export_every == 0 && !final_) {
      auto params = GatherParams();
      if (!params.ok()) {
        TARN_RETURN_IF_ERROR(RecoverFromPsFailure(params.status()).status());
        continue;
      }
      auto version = ExportServing(MakeModel(*params, s_.epoch));
      if (!version.ok()) return version.status();
      TARN_LOG(kInfo) << "exported serving version " << *version << " to "
                      << job_.serving_export_dir;
    }
    if (stop) break;
  }
  return s_.epoch;
}

// Waits until every active slot has `flag`, handling failures meanwhile.
// True when a parameter server failure rolled the job back.
Result<bool> EpochDriver::WaitSlots(std::unique_lock<std::mutex>& lock, bool SlotState::*flag) {
  while (true) {
    if (!s_.fatal.ok()) return s_.fatal;
    if (!s_.events.empty()) {
      TARN_ASSIGN_OR_RETURN(bool rolled, membership_.HandleEvents(lock));
      if (rolled) return true;
    }
    bool all = true;
    for (const auto& s : s_.slots) all = all && (s.dropped || s.*flag);
    if (all) return false;
    if (s_.dirty) status_.WriteClusterLocked();
    s_.cv.wait_for(lock, std::chrono::milliseconds(200));
  }
}

model::ModelFile EpochDriver::MakeModel(const std::vector<float>& params, int epochs) const {
  train::TrainedSoFar s = so_far_;
  s.bag = s_.bag;
  s.epochs = epochs;
  return train::MakeModelFile(description_, s, params);
}

Status EpochDriver::WriteModel(int epochs) {
  const std::string path = JoinPath(job_.models_dir, "model" + std::to_string(s_.bag) + ".tarn");
  // On HDFS: written here, then copied whole.
  const std::string written =
      data::IsHdfsPath(path) ? "model" + std::to_string(s_.bag) + ".tarn" : path;
  if (job_.early_stop_patience > 0 && !best_params_.empty()) {
    TARN_RETURN_IF_ERROR(MakeModel(best_params_, epochs).Save(written));
  } else {
    // The parameters go to the file as they are gathered: a graph's tables
    // stream from the servers' shares, and the model is never whole here.
    TARN_ASSIGN_OR_RETURN(auto dense_and_state, GatherDense());
    TARN_RETURN_IF_ERROR(MakeModel({}, epochs).SaveStreaming(written, [&](model::ParamsSink& sink) {
      return WriteParams(dense_and_state, sink);
    }));
  }
  if (written != path) TARN_RETURN_IF_ERROR(data::CopyTree(written, path));
  TARN_LOG(kInfo) << "bag " << s_.bag << " -> " << path;
  if (!job_.serving_export_dir.empty()) {
    TARN_ASSIGN_OR_RETURN(auto model, model::ModelFile::Load(written));
    TARN_ASSIGN_OR_RETURN(auto v, ExportServing(model));
    TARN_LOG(kInfo) << "exported serving version " << v << " to " << job_.serving_export_dir;
  }
  return Status::Ok();
}

// A new serving version, locally in place or on HDFS with its marker last.
Result<int64_t> EpochDriver::ExportServing(const model::ModelFile& model) {
  return model::PublishServingVersion({&model}, job_.serving_export_dir);
}

}  // namespace tarn::runtime
