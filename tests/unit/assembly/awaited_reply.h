// A launcher's call to the runner (a backup's registration, a TF task's plan), answered now or
// later: the test waits a bounded time for the answer.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "assembly/runner.h"

namespace tarn::assembly {

struct AwaitedReply {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Result<std::string>> value;
  Runner::Reply Reply() {
    return [this](Result<std::string> r) {
      std::lock_guard<std::mutex> lock(mu);
      value = std::move(r);
      cv.notify_all();
    };
  }
  bool Answered() {
    std::lock_guard<std::mutex> lock(mu);
    return value.has_value();
  }
  // The answer's JSON, waiting up to 30 s for it (a test failure when none or an error comes).
  nlohmann::json Get() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return value.has_value(); });
    if (!value || !value->ok()) {
      ADD_FAILURE() << (value ? value->status().message() : "no answer");
      return nlohmann::json();
    }
    return nlohmann::json::parse(**value);
  }
};

}  // namespace tarn::assembly
