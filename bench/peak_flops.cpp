// The machine's fp32 peak, measured: a loop of independent fused multiply-adds on the widest
// vector unit the CPU has (AVX-512F, else AVX2 + FMA), on 1 thread and on N threads at once.
// Built and run by bench/_common.py (peak_flops); not part of tarn.
//
//   peak_flops [--threads N] [--seconds S]     prints one JSON object
//
// The peak is GFLOP per second of each thread's own CPU time (CLOCK_THREAD_CPUTIME_ID), summed
// over the threads: on a shared machine wall time only tells how much of the cores this process
// got; the per-wall-second rates are printed beside it.
//
// Each thread keeps kAccumulators vector accumulators in flight, enough to cover the FMA
// latency (4-5 cycles) on two FMA ports; each FMA is 2 FLOP per lane.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kAccumulators = 12;
constexpr long kInnerIterations = 1 << 16;

using Clock = std::chrono::steady_clock;

// Runs FMA blocks until `seconds` have passed; returns the FLOP done. `sink` keeps the
// accumulators alive so the compiler cannot drop the loop.
__attribute__((target("avx512f"))) double FmaLoopAvx512(double seconds, float* sink) {
  __m512 acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512 mul = _mm512_set1_ps(0.999999f);
  const __m512 add = _mm512_set1_ps(1e-7f);
  double flop = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  do {
    for (long it = 0; it < kInnerIterations; ++it) {
#pragma GCC unroll 16  // the accumulators stay in registers only when unrolled
      for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm512_fmadd_ps(acc[i], mul, add);
    }
    flop += 2.0 * 16 * kAccumulators * kInnerIterations;
  } while (Clock::now() < end);
  __m512 total = acc[0];
  for (int i = 1; i < kAccumulators; ++i) total = _mm512_add_ps(total, acc[i]);
  *sink = _mm512_reduce_add_ps(total);
  return flop;
}

__attribute__((target("avx2,fma"))) double FmaLoopAvx2(double seconds, float* sink) {
  __m256 acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm256_set1_ps(1.0f + i * 1e-3f);
  const __m256 mul = _mm256_set1_ps(0.999999f);
  const __m256 add = _mm256_set1_ps(1e-7f);
  double flop = 0;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  do {
    for (long it = 0; it < kInnerIterations; ++it) {
#pragma GCC unroll 16  // the accumulators stay in registers only when unrolled
      for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm256_fmadd_ps(acc[i], mul, add);
    }
    flop += 2.0 * 8 * kAccumulators * kInnerIterations;
  } while (Clock::now() < end);
  __m256 total = acc[0];
  for (int i = 1; i < kAccumulators; ++i) total = _mm256_add_ps(total, acc[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, total);
  float s = 0;
  for (float v : lanes) s += v;
  *sink = s;
  return flop;
}

struct Isa {
  const char* name;
  int vector_bits;
  double (*loop)(double, float*);
};

Isa DetectIsa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512f", 512, FmaLoopAvx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {"avx2+fma", 256, FmaLoopAvx2};
  return {nullptr, 0, nullptr};
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Rate {
  double per_wall_s = 0;  // GFLOP per second of wall time, summed over the threads
  double per_cpu_s = 0;   // GFLOP per second each thread was on a core, summed: what the
                          // cores do while they run, whatever else shares the machine
};

// The rates of `threads` threads running the loop at the same time.
Rate MeasureGflops(const Isa& isa, int threads, double seconds) {
  std::vector<Rate> rates(threads);
  std::vector<float> sinks(threads);
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }  // start together, so the threads overlap
      const auto start = Clock::now();
      const double cpu_start = ThreadCpuSeconds();
      const double flop = isa.loop(seconds, &sinks[t]);
      rates[t].per_cpu_s = flop / (ThreadCpuSeconds() - cpu_start) / 1e9;
      rates[t].per_wall_s =
          flop / std::chrono::duration<double>(Clock::now() - start).count() / 1e9;
    });
  }
  for (auto& th : pool) th.join();
  Rate sum;
  for (const Rate& r : rates) {
    sum.per_wall_s += r.per_wall_s;
    sum.per_cpu_s += r.per_cpu_s;
  }
  if (sinks[0] == 12345.678f) std::fputs("", stderr);  // uses the result
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  double seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: peak_flops [--threads N] [--seconds S]\n");
      return 2;
    }
  }
  if (threads < 1 || seconds <= 0) {
    std::fprintf(stderr, "peak_flops: --threads must be >= 1 and --seconds > 0\n");
    return 2;
  }
  const Isa isa = DetectIsa();
  if (!isa.loop) {
    std::fprintf(stderr, "peak_flops: the CPU has neither AVX-512F nor AVX2 + FMA\n");
    return 1;
  }
  // Best of three tries per thread count: another job on the machine only ever lowers a try.
  auto best = [&](int n) {
    Rate b;
    for (int k = 0; k < 3; ++k) {
      const Rate r = MeasureGflops(isa, n, seconds / 3);
      b.per_wall_s = std::max(b.per_wall_s, r.per_wall_s);
      b.per_cpu_s = std::max(b.per_cpu_s, r.per_cpu_s);
    }
    return b;
  };
  const Rate one = best(1);
  const Rate all = threads > 1 ? best(threads) : one;
  std::printf(
      "{\"isa\": \"%s\", \"vector_bits\": %d, \"accumulators\": %d, \"threads\": %d, "
      "\"gflops_1_thread\": %.2f, \"gflops_all_threads\": %.2f, "
      "\"gflops_1_thread_wall\": %.2f, \"gflops_all_threads_wall\": %.2f, "
      "\"seconds_per_try\": %.3f}\n",
      isa.name, isa.vector_bits, kAccumulators, threads, one.per_cpu_s, all.per_cpu_s,
      one.per_wall_s, all.per_wall_s, seconds / 3);
  return 0;
}
