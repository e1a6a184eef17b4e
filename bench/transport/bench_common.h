// The measuring harness shared by grpc_echo and tarn_echo (bench/transport_rtt.py).
//
// A server prints "PORT <n>" on stdout once it listens on 127.0.0.1 and serves
// until it is killed. A client run opens --clients connections (one thread
// each), checks a few echoed payloads byte for byte, then makes unary calls of
// --size bytes each way back to back for --seconds, and prints one JSON line:
// calls, seconds, round trips per second (all clients together) and the 50th
// and 99th percentile latency of a call in microseconds.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace bench {

struct Options {
  std::string mode;  // "server" or "client"
  int port = 0;
  size_t size = 64;
  int clients = 1;
  double seconds = 1.0;
  int check_calls = 20;  // warm-up calls whose reply is compared byte for byte
  std::string api;       // grpc_echo server: "callback" (default) or "sync"
};

[[noreturn]] inline void Usage(const char* argv0, const std::string& why) {
  std::fprintf(
      stderr,
      "%s: %s\nusage: %s server [--api callback|sync]\n       %s client --port N --size BYTES "
      "[--clients N] [--seconds S]\n",
      argv0, why.c_str(), argv0, argv0);
  std::exit(2);
}

inline Options ParseOptions(int argc, char** argv) {
  Options o;
  if (argc < 2) Usage(argv[0], "missing mode");
  o.mode = argv[1];
  if (o.mode != "server" && o.mode != "client") Usage(argv[0], "unknown mode " + o.mode);
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) Usage(argv[0], "missing value after " + a);
    char* end = nullptr;
    const char* v = argv[++i];
    if (a == "--api") {
      o.api = v;
      continue;
    }
    double x = std::strtod(v, &end);
    if (end == v || *end != '\0' || x < 0) Usage(argv[0], "bad value '" + std::string(v) + "'");
    if (a == "--port") {
      o.port = static_cast<int>(x);
    } else if (a == "--size") {
      o.size = static_cast<size_t>(x);
    } else if (a == "--clients") {
      o.clients = std::max(1, static_cast<int>(x));
    } else if (a == "--seconds") {
      o.seconds = x;
    } else if (a == "--check-calls") {
      o.check_calls = static_cast<int>(x);
    } else {
      Usage(argv[0], "unknown option " + a);
    }
  }
  if (o.mode == "client" && o.port <= 0) Usage(argv[0], "client needs --port");
  return o;
}

inline std::string RandomPayload(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(size, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// One connection of a client run. Call sends `request` and stores the echo
// in *reply; it returns false (with a message in *error) on a failed call.
class Caller {
 public:
  virtual ~Caller() = default;
  virtual bool Call(const std::string& request, std::string* reply, std::string* error) = 0;
};
using CallerFactory = std::function<std::unique_ptr<Caller>(int client, std::string* error)>;

// Runs the client side and prints the JSON line; returns the exit status.
inline int RunClients(const Options& o, const char* transport, const CallerFactory& connect) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::vector<uint32_t>> latencies_ns(o.clients);
  std::vector<std::string> errors(o.clients);
  std::atomic<bool> stop{false};
  std::barrier start(o.clients + 1);
  std::vector<std::thread> threads;
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      std::string& error = errors[c];
      std::unique_ptr<Caller> caller = connect(c, &error);
      const std::string request = RandomPayload(o.size, 1000 + c);
      std::string reply;
      for (int i = 0; caller && i < o.check_calls; ++i) {
        if (!caller->Call(request, &reply, &error)) {
          caller.reset();
        } else if (reply != request) {
          error = "reply differs from the request";
          caller.reset();
        }
      }
      start.arrive_and_wait();
      if (!caller) return;
      auto& lat = latencies_ns[c];
      lat.reserve(1 << 16);
      while (!stop.load(std::memory_order_relaxed)) {
        auto t0 = Clock::now();
        if (!caller->Call(request, &reply, &error)) return;
        auto t1 = Clock::now();
        if (reply.size() != request.size()) {
          error = "reply of " + std::to_string(reply.size()) + " bytes";
          return;
        }
        lat.push_back(static_cast<uint32_t>(
            std::min<int64_t>(UINT32_MAX, (t1 - t0) / std::chrono::nanoseconds(1))));
      }
    });
  }
  start.arrive_and_wait();
  auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop = true;
  for (auto& t : threads) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  for (int c = 0; c < o.clients; ++c) {
    if (!errors[c].empty()) {
      std::fprintf(stderr, "%s client %d: %s\n", transport, c, errors[c].c_str());
      return 1;
    }
  }
  std::vector<uint32_t> all;
  for (const auto& l : latencies_ns) all.insert(all.end(), l.begin(), l.end());
  if (all.empty()) {
    std::fprintf(stderr, "%s: no call completed in %.2f s\n", transport, o.seconds);
    return 1;
  }
  std::sort(all.begin(), all.end());
  auto pct = [&](double q) {
    size_t i = std::min(all.size() - 1, static_cast<size_t>(q * (all.size() - 1) + 0.5));
    return all[i] / 1000.0;
  };
  std::printf(
      "{\"transport\": \"%s\", \"size\": %zu, \"clients\": %d, \"calls\": %zu, "
      "\"seconds\": %.4f, \"rtt_per_s\": %.1f, \"p50_us\": %.2f, \"p99_us\": %.2f}\n",
      transport, o.size, o.clients, all.size(), elapsed, all.size() / elapsed, pct(0.50),
      pct(0.99));
  return 0;
}

}  // namespace bench
