#include "stats/category_binning.h"

#include <algorithm>  // for stable_sort, push_heap, pop_heap, make_heap
#include <cmath>      // for log2
#include <cstdint>    // for uint64_t
#include <numeric>    // for iota

namespace tarn::stats {
namespace {

// Shifu's AutoDynamicBinning.EPS, which keeps log2 finite for pure groups.
constexpr double kEps = 1e-6;

struct Group {
  double pos = 0.0;
  double neg = 0.0;
  size_t first = 0;  // range [first, last) in the sorted order
  size_t last = 0;
};

double Information(double pos, double neg, double total_count) {
  const double n = pos + neg;
  if (n <= 0.0) return 0.0;
  const double pr = (pos + kEps) / n;
  const double nr = (neg + kEps) / n;
  return -(n / total_count) * (pr * std::log2(pr) + nr * std::log2(nr));
}

double PositiveRate(const CategoryStats& c) {
  const double n = c.count_pos + c.count_neg;
  return n > 0.0 ? c.count_pos / n : 0.0;
}

}  // namespace

std::vector<std::vector<size_t>> MergeCategoriesByPositiveRate(
    const std::vector<CategoryStats>& categories, int max_bins) {
  const size_t k = categories.size();
  std::vector<std::vector<size_t>> groups;
  if (max_bins <= 0 || k <= static_cast<size_t>(max_bins)) {
    groups.reserve(k);
    for (size_t i = 0; i < k; ++i) groups.push_back({i});
    return groups;
  }

  std::vector<size_t> order(k);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return PositiveRate(categories[a]) < PositiveRate(categories[b]);
  });

  double total = 0.0;
  for (const CategoryStats& c : categories) total += c.count_pos + c.count_neg;
  if (total <= 0.0) total = 1.0;  // all empty: every cost is 0 anyway

  // Groups form a linked list over slots 0..k-1 (slot = sorted position of
  // the group's first category); a merge keeps the left slot.
  std::vector<Group> g(k);
  std::vector<double> info(k);
  std::vector<size_t> next(k);
  std::vector<size_t> prev(k);
  std::vector<uint64_t> stamp(k);
  constexpr size_t kNone = static_cast<size_t>(-1);
  for (size_t s = 0; s < k; ++s) {
    const CategoryStats& c = categories[order[s]];
    g[s] = Group{c.count_pos, c.count_neg, s, s + 1};
    info[s] = Information(c.count_pos, c.count_neg, total);
    next[s] = s + 1 < k ? s + 1 : kNone;
    prev[s] = s > 0 ? s - 1 : kNone;
    stamp[s] = s;
  }
  uint64_t next_stamp = k;
  constexpr uint64_t kDead = ~uint64_t{0};

  struct Candidate {
    double cost;  // information increase if left and right merge
    size_t left;
    size_t right;
    uint64_t left_stamp;
    uint64_t right_stamp;
  };
  const auto lower_priority = [](const Candidate& x, const Candidate& y) {
    return x.cost > y.cost || (x.cost == y.cost && x.left > y.left);
  };
  const auto candidate = [&](size_t l, size_t r) {
    const double merged = Information(g[l].pos + g[r].pos, g[l].neg + g[r].neg, total);
    return Candidate{merged - info[l] - info[r], l, r, stamp[l], stamp[r]};
  };
  std::vector<Candidate> heap;
  heap.reserve(2 * k);
  for (size_t s = 0; s + 1 < k; ++s) heap.push_back(candidate(s, s + 1));
  std::make_heap(heap.begin(), heap.end(), lower_priority);

  size_t alive = k;
  const size_t target = static_cast<size_t>(max_bins);
  while (alive > target && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower_priority);
    const Candidate best = heap.back();
    heap.pop_back();
    if (stamp[best.left] != best.left_stamp || stamp[best.right] != best.right_stamp) continue;
    const size_t l = best.left;
    const size_t r = best.right;
    g[l].pos += g[r].pos;
    g[l].neg += g[r].neg;
    g[l].last = g[r].last;
    info[l] = Information(g[l].pos, g[l].neg, total);
    stamp[l] = next_stamp++;
    stamp[r] = kDead;
    next[l] = next[r];
    if (next[l] != kNone) prev[next[l]] = l;
    --alive;
    for (const size_t pair_left : {prev[l], l}) {
      if (pair_left == kNone || next[pair_left] == kNone) continue;
      heap.push_back(candidate(pair_left, next[pair_left]));
      std::push_heap(heap.begin(), heap.end(), lower_priority);
    }
  }

  groups.reserve(alive);
  for (size_t s = 0; s != kNone; s = next[s]) {
    groups.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(g[s].first),
                        order.begin() + static_cast<std::ptrdiff_t>(g[s].last));
  }
  return groups;
}

std::string MergedCategoryName(const std::vector<std::string>& values) {
  std::string name;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) name += kCategoryGroupDelimiter;
    name += values[i];
  }
  return name;
}

std::string MergedCategoryName(const std::vector<CategoryStats>& categories,
                               const std::vector<size_t>& group) {
  std::string name;
  for (size_t i = 0; i < group.size(); ++i) {
    if (i > 0) name += kCategoryGroupDelimiter;
    name += categories[group[i]].value;
  }
  return name;
}

std::vector<std::string> SplitMergedCategoryName(std::string_view name) {
  std::vector<std::string> values;
  size_t start = 0;
  while (true) {
    const size_t at = name.find(kCategoryGroupDelimiter, start);
    if (at == std::string_view::npos) {
      values.emplace_back(name.substr(start));
      return values;
    }
    values.emplace_back(name.substr(start, at - start));
    start = at + kCategoryGroupDelimiter.size();
  }
}

}  // namespace tarn::stats
