#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>

namespace tarn {
namespace {

TEST(SpinTeamTest, EveryMemberRunsEveryRound) {
  for (int threads : {1, 2, 3}) {
    SpinTeam team(threads);
    EXPECT_EQ(team.size(), threads);
    std::vector<long> sums(threads, 0);
    for (int round = 1; round <= 2000; ++round) {
      team.Run([&](int m) { sums[m] += round; });
    }
    for (long s : sums) EXPECT_EQ(s, 2000L * 2001 / 2);
  }
}

TEST(ParallelForTest, CoversEveryIndexOnce) {
  std::vector<std::atomic<int>> hits(1000);
  ParallelFor(3, hits.size(), [&](int, size_t i) { hits[i]++; });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

}  // namespace
}  // namespace tarn
