// The coordinator of a distributed job, in three parts over one shared state
// (coordinator_state.h):
//   - membership (membership.h): launches the parameter servers, workers,
//     backups and model servers through the backend, takes their
//     registrations, heartbeats and reports, and turns every failure into an
//     event; a backup takes a lost worker's slot over;
//   - the epoch driver (epoch_driver.h): bags, epochs, the parameter
//     servers, checkpoints and roll back, model files and serving exports;
//   - the status page (status_page.h): tmp/cluster.json and the HTTP page.
// Workers report, and the answer to each report is the worker's next
// directive (train from a position, validate, stand by, finish). The
// coordinator itself: its children die with it, and `tarn train` with
// isContinuous resumes from the newest complete checkpoint.
#include <chrono>
#include <cstdlib>

#include "cluster/yarn/yarn_backend.h"
#include "common/log.h"
#include "data/file_system.h"
#include "runtime/checkpoint.h"
#include "runtime/coordinator_state.h"
#include "runtime/epoch_driver.h"
#include "runtime/membership.h"
#include "runtime/node.h"
#include "runtime/status_page.h"
#include "runtime/transport.h"

namespace tarn::runtime {

namespace {

using data::Json;

class Coordinator {
 public:
  Coordinator(JobConfig job, std::string secret, std::string binary)
      : job_(std::move(job)),
        membership_(&job_, &state_, std::move(secret), std::move(binary)),
        status_(job_, &state_, membership_),
        driver_(&job_, &state_, &membership_, &status_) {}

  Status Run() {
    TARN_RETURN_IF_ERROR(Setup());
    Status st = driver_.Train();
    if (st.ok() && job_.serving_instances > 0) {
      StopTraining();
      KeepServing();
    }
    Finish(st);
    return st;
  }

 private:
  Status Setup() {
    TARN_RETURN_IF_ERROR(driver_.Prepare());
    Membership::Hooks hooks;
    hooks.restart_ps = [this](std::unique_lock<std::mutex>& lock, int index) {
      return driver_.RestartPsLocked(lock, index);
    };
    hooks.slot_dropped = [this](int slot) { driver_.SlotDropped(slot); };
    hooks.cluster_changed = [this] { status_.WriteClusterLocked(); };
    TARN_RETURN_IF_ERROR(membership_.Start(std::move(hooks)));
    TARN_RETURN_IF_ERROR(status_.Start());
    if (auto* yarn = membership_.yarn()) {
      cluster::yarn::RegisterRequest reg;
      reg.host = job_.bind_host == "auto" ? HostName() : job_.bind_host;
      reg.tracking_url = status_.StatusUrl();
      TARN_RETURN_IF_ERROR(yarn->Register(reg).status().WithContext("registering the AM"));
      if (yarn->attempt().attempt > 1) {
        // A second attempt continues from the first one's newest checkpoint.
        job_.is_continuous = true;
        TARN_LOG(kInfo) << "application attempt " << yarn->attempt().attempt
                        << ": resuming from the checkpoint in " << job_.checkpoint_dir;
      }
    }
    TARN_LOG(kInfo) << "coordinator on " << membership_.address() << "; status page http://"
                    << job_.bind_host << ":" << status_.port() << "/";
    return membership_.LaunchAll();
  }

  // Ends the workers and parameter servers, not the model servers.
  void StopTraining() {
    membership_.FinishWorkers();
    driver_.ShutdownParameterServers();
  }

  // Training is over; the model servers stay until the application is killed.
  void KeepServing() {
    std::unique_lock<std::mutex> lock(state_.mu);
    state_.phase = "serving";
    Json servers = Json::array();
    for (const auto& [id, n] : state_.nodes) {
      if (n.role == "serving" && n.state == NodeState::kRunning) servers.push_back(n.address);
    }
    status_.WriteClusterLocked();
    const char* staging = std::getenv("TARN_YARN_STAGING_DIR");
    if (staging && *staging) {
      Status st = WriteWhole(data::ChildPath(staging, "serving.json"),
                             Json{{"servers", servers}}.dump() + "\n");
      if (!st.ok()) {
        TARN_LOG(kWarn) << "cannot record the model servers: " << st.message();
      }
    }
    TARN_LOG(kInfo) << "training done; " << servers.size()
                    << " model server(s) keep serving until the application is killed";
    while (state_.fatal.ok()) state_.cv.wait_for(lock, std::chrono::seconds(1));
  }

  void Finish(const Status& result) {
    {
      std::lock_guard<std::mutex> lock(state_.mu);
      state_.finished = true;
      state_.phase = result.ok() ? "succeeded" : "failed";
      state_.status_message = result.ok() ? "" : result.message();
    }
    StopTraining();
    membership_.Shutdown();
    // The final cluster.json and history are in place before YARN says the job ended.
    status_.files().Flush();
    if (auto* yarn = membership_.yarn()) {
      Status st = yarn->Unregister(result.ok() ? cluster::yarn::FinalApplicationStatus::kSucceeded
                                               : cluster::yarn::FinalApplicationStatus::kFailed,
                                   result.ok() ? "" : result.message(), status_.StatusUrl());
      if (!st.ok()) {
        TARN_LOG(kWarn) << "unregistering from YARN: " << st.message();
      }
    }
  }

  // Declared in the order they are made; destroyed in reverse: the driver's
  // connections first, the status page, then membership stops the nodes.
  JobConfig job_;
  ClusterState state_;
  Membership membership_;
  StatusPage status_;
  EpochDriver driver_;
};

}  // namespace

Status RunCoordinator(const JobConfig& job, const std::string& secret,
                      const std::string& tarn_binary) {
  Coordinator c(job, secret, tarn_binary);
  return c.Run();
}

}  // namespace tarn::runtime
