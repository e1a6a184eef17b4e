#include "runtime/embedded_backend.h"

#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/strings.h"
#include "runtime/node.h"

namespace tarn::runtime {

namespace {

class EmbeddedBackend final : public cluster::Backend {
 public:
  explicit EmbeddedBackend(std::shared_ptr<Transport> t) : transport_(std::move(t)) {}
  ~EmbeddedBackend() override { Shutdown(); }
  std::string name() const override { return "embedded"; }

  Result<int64_t> Launch(const cluster::LaunchSpec& spec) override {
    NodeArgs args;
    args.role = spec.role;
    args.index = spec.index;
    args.transport = transport_;
    args.embedded = true;
    // The command line a process would get names the node and its coordinator.
    for (size_t i = 0; i + 1 < spec.argv.size(); ++i) {
      if (spec.argv[i] == "--node")
        args.node = static_cast<int>(ParseInt(spec.argv[i + 1]).value_or(0));
      if (spec.argv[i] == "--coordinator") args.coordinator = spec.argv[i + 1];
    }
    if (args.role != "ps" && args.role != "worker") {
      return Unsupported("the embedded backend runs parameter servers and workers only, not '" +
                         args.role + "'");
    }
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t id = next_++;
    threads_.emplace_back([this, id, args] {
      Status st = args.role == "ps" ? RunParameterServer(args) : RunWorker(args);
      cluster::TaskExit e;
      e.task = id;
      e.exit_code = st.ok() ? 0 : 1;
      e.describe = "thread (" + args.role + " " + std::to_string(args.index) + ") " +
                   (st.ok() ? "exited with code 0" : "failed: " + st.message());
      std::function<void(const cluster::TaskExit&)> cb;
      {
        std::lock_guard<std::mutex> g(mu_);
        cb = on_exit_;
      }
      if (cb) cb(e);
    });
    return id;
  }

  Status Kill(int64_t) override {
    return Unsupported("an embedded node is a thread of this process and cannot be killed alone");
  }
  std::string Where(int64_t task) const override { return "thread " + std::to_string(task); }
  void OnExit(std::function<void(const cluster::TaskExit&)> callback) override {
    std::lock_guard<std::mutex> lock(mu_);
    on_exit_ = std::move(callback);
  }
  void Shutdown() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      on_exit_ = nullptr;
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

 private:
  std::shared_ptr<Transport> transport_;
  mutable std::mutex mu_;
  std::vector<std::thread> threads_;
  std::function<void(const cluster::TaskExit&)> on_exit_;
  int64_t next_ = 1;
};

}  // namespace

std::unique_ptr<cluster::Backend> MakeEmbeddedBackend(std::shared_ptr<Transport> transport) {
  return std::make_unique<EmbeddedBackend>(std::move(transport));
}

}  // namespace tarn::runtime
