#include "stats/streaming_histogram.h"

#include <algorithm>  // for max, min, clamp, push_heap, pop_heap, make_heap
#include <bit>        // for bit_cast
#include <cassert>    // for assert
#include <cmath>      // for floor, sqrt
#include <cstdint>    // for uint32_t, uint64_t

namespace tarn::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Per-thread scratch for flushes, shared by every histogram on the thread:
// a worker may hold one histogram per column, and per-object scratch would
// multiply ~200 KB by that.
struct FlushScratch {
  std::vector<uint64_t> keys;
  std::vector<uint64_t> tmp_keys;
  std::vector<double> tmp_weights;
  std::vector<StreamingHistogram::Centroid> runs;
  std::vector<StreamingHistogram::Centroid> merged;
};

FlushScratch& Scratch() {
  thread_local FlushScratch scratch;
  return scratch;
}

// Shifu's EqualPopulationBinning.EXTRA_SMALL_BIN_PERCENTAGE.
constexpr double kExtraSmallFraction = 0.003;

// Appends `c` to `out`, adding its weight to the last centroid when the
// values are equal.
inline void AppendCollapsing(std::vector<StreamingHistogram::Centroid>& out,
                             const StreamingHistogram::Centroid& c) {
  if (!out.empty() && out.back().value == c.value) {
    out.back().weight += c.weight;
  } else {
    out.push_back(c);
  }
}

// Order-preserving map of a double onto uint64 (flip negatives entirely,
// set the sign bit of non-negatives), so integer order is numeric order.
inline uint64_t SortKey(double x) {
  const uint64_t u = std::bit_cast<uint64_t>(x);
  return (u >> 63) ? ~u : (u | (uint64_t{1} << 63));
}
inline double FromSortKey(uint64_t k) {
  return std::bit_cast<double>((k >> 63) ? (k & ~(uint64_t{1} << 63)) : ~k);
}

// LSD radix sort of `keys` (and `weights` alongside, if non-empty) by 8-bit
// digits, skipping digits on which all keys agree (the sign and exponent
// bytes of most columns). Linear and branch-free where std::sort pays
// ~12 mispredicting comparisons a value, and sorting is most of a flush.
void RadixSort(std::vector<uint64_t>& keys, std::vector<double>& weights,
               std::vector<uint64_t>& tmp_keys, std::vector<double>& tmp_weights) {
  const size_t n = keys.size();
  const bool weighted = !weights.empty();
  uint32_t counts[8][256] = {};
  for (uint64_t k : keys) {
    for (int d = 0; d < 8; ++d) ++counts[d][(k >> (8 * d)) & 0xFF];
  }
  tmp_keys.resize(n);
  if (weighted) tmp_weights.resize(n);
  for (int d = 0; d < 8; ++d) {
    const int shift = 8 * d;
    if (counts[d][(keys[0] >> shift) & 0xFF] == n) continue;
    uint32_t offset[256];
    uint32_t running = 0;
    for (int b = 0; b < 256; ++b) {
      offset[b] = running;
      running += counts[d][b];
    }
    if (weighted) {
      for (size_t i = 0; i < n; ++i) {
        const uint32_t at = offset[(keys[i] >> shift) & 0xFF]++;
        tmp_keys[at] = keys[i];
        tmp_weights[at] = weights[i];
      }
      weights.swap(tmp_weights);
    } else {
      for (size_t i = 0; i < n; ++i) tmp_keys[offset[(keys[i] >> shift) & 0xFF]++] = keys[i];
    }
    keys.swap(tmp_keys);
  }
}

// Where a cumulative target falls on Ben-Haim's trapezoid between centroids
// (p_i, m_i) and (p_{i+1}, m_{i+1}): the fraction z in [0, 1] of the way from
// p_i at which the area from p_i reaches d. Solves
// (m_{i+1} − m_i)/2 · z² + m_i · z = d in the cancellation-free form
// z = 2d / (m_i + sqrt(m_i² + 2(m_{i+1} − m_i)d)), which is also right when
// m_{i+1} == m_i, where Shifu's textbook quadratic formula divides by zero.
double TrapezoidFraction(double m_i, double m_next, double d) {
  if (d <= 0.0) return 0.0;
  const double disc = std::max(0.0, m_i * m_i + 2.0 * (m_next - m_i) * d);
  const double denom = m_i + std::sqrt(disc);
  if (!(denom > 0.0)) return 1.0;
  return std::min(1.0, 2.0 * d / denom);
}

// Shifu's mergeExtraSmallBins: a centroid lighter than `threshold` folds into
// its nearer neighbour (the next one on a tie; the next one for the first,
// the previous one for the last), scanning left to right.
std::vector<StreamingHistogram::Centroid> MergeExtraSmall(
    const std::vector<StreamingHistogram::Centroid>& in, double threshold) {
  using Centroid = StreamingHistogram::Centroid;
  if (in.size() < 2) return in;
  std::vector<Centroid> out;
  out.reserve(in.size());
  Centroid carry{0.0, 0.0};  // a light centroid on its way into the next one
  bool carrying = false;
  for (size_t i = 0; i < in.size(); ++i) {
    Centroid c = in[i];
    if (carrying) {
      const double w = c.weight + carry.weight;
      c.value = (c.value * c.weight + carry.value * carry.weight) / w;
      c.weight = w;
      carrying = false;
    }
    const bool last = i + 1 == in.size();
    if (c.weight >= threshold || (out.empty() && last)) {
      out.push_back(c);
      continue;
    }
    bool into_next;
    if (out.empty()) {
      into_next = true;
    } else if (last) {
      into_next = false;
    } else {
      into_next = !(c.value - out.back().value < in[i + 1].value - c.value);
    }
    if (into_next) {
      carry = c;
      carrying = true;
    } else {
      Centroid& p = out.back();
      const double w = p.weight + c.weight;
      p.value = (p.value * p.weight + c.value * c.weight) / w;
      p.weight = w;
    }
  }
  return out;
}

// Keeps only finite values strictly above the previous kept one.
void MakeStrictlyIncreasing(std::vector<double>& cuts) {
  size_t kept = 1;  // cuts[0] is -inf
  for (size_t i = 1; i < cuts.size(); ++i) {
    const double v = cuts[i];
    if (std::isfinite(v) && v > cuts[kept - 1]) cuts[kept++] = v;
  }
  cuts.resize(kept);
}

}  // namespace

StreamingHistogram::StreamingHistogram(int max_centroids, MergeRule rule)
    : max_centroids_(std::max(2, max_centroids)), rule_(rule) {
  assert(max_centroids >= 2 && "StreamingHistogram needs at least 2 centroids");
  // A buffer 4x the centroid budget amortises each merge pass (linear in the
  // centroid count) over many values; 2x costs ~15% more time, 1x ~40%. The
  // cap keeps a histogram under ~130 KB, as a worker holds one per column.
  buffer_capacity_ =
      std::clamp<size_t>(4 * static_cast<size_t>(std::max(2, max_centroids_)), 1024, 16384);
}

void StreamingHistogram::StartWeightedBuffer() {
  buffer_weights_.assign(buffer_values_.size(), 1.0);
  weighted_buffer_ = true;
}

void StreamingHistogram::Flush() const {
  if (buffer_values_.empty()) return;
  const size_t n = buffer_values_.size();
  FlushScratch& scratch = Scratch();
  std::vector<uint64_t>& keys = scratch.keys;
  keys.resize(n);
  for (size_t i = 0; i < n; ++i) keys[i] = SortKey(buffer_values_[i]);
  if (!weighted_buffer_) buffer_weights_.clear();
  RadixSort(keys, buffer_weights_, scratch.tmp_keys, scratch.tmp_weights);
  // Collapse equal values into one centroid each.
  std::vector<Centroid>& runs = scratch.runs;
  runs.clear();
  for (size_t i = 0; i < n; ++i) {
    AppendCollapsing(runs,
                     Centroid{FromSortKey(keys[i]), weighted_buffer_ ? buffer_weights_[i] : 1.0});
  }
  buffer_values_.clear();
  buffer_weights_.clear();
  weighted_buffer_ = false;
  min_ = std::min(min_, runs.front().value);
  max_ = std::max(max_, runs.back().value);
  MergeSorted(runs);
}

void StreamingHistogram::MergeSorted(const std::vector<Centroid>& incoming) const {
  if (incoming.empty()) return;
  std::vector<Centroid>& merged = Scratch().merged;
  merged.clear();
  merged.reserve(centroids_.size() + incoming.size());
  size_t a = 0;
  size_t b = 0;
  while (a < centroids_.size() || b < incoming.size()) {
    if (b == incoming.size() ||
        (a < centroids_.size() && centroids_[a].value <= incoming[b].value)) {
      AppendCollapsing(merged, centroids_[a++]);
    } else {
      AppendCollapsing(merged, incoming[b++]);
    }
  }
  if (merged.size() > static_cast<size_t>(max_centroids_)) {
    Trim(merged);
    exact_ = false;
  }
  centroids_.assign(merged.begin(), merged.end());
}

void StreamingHistogram::CompressByMass(std::vector<Centroid>& c) const {
  // Cut the cumulative weight into max_centroids equal slices and fold each
  // run of neighbours whose cumulative midpoints share a slice (t-digest's
  // merge with a uniform scale). Slice indices never decrease along the list,
  // so at most max_centroids remain, and a centroid weighing 2N/max or more
  // straddles whole slices and stays on its own.
  double total = 0.0;
  for (const Centroid& x : c) total += x.weight;
  const double slices = static_cast<double>(max_centroids_);
  const double max_slice = slices - 1.0;
  double cumulative = 0.0;
  double current = -1.0;
  size_t kept = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const double w = c[i].weight;
    const double slice = std::min(max_slice, std::floor((cumulative + w / 2) / total * slices));
    cumulative += w;
    if (kept > 0 && slice == current) {
      Centroid& into = c[kept - 1];
      const double merged = into.weight + w;
      into.value += (c[i].value - into.value) * (w / merged);
      into.weight = merged;
    } else {
      c[kept++] = c[i];
      current = slice;
    }
  }
  c.resize(kept);
}

void StreamingHistogram::Trim(std::vector<Centroid>& c) const {
  if (rule_ == MergeRule::kEqualMass) {
    CompressByMass(c);
    return;
  }
  // Shifu's rule: repeatedly merge the adjacent pair with the smallest gap
  // (leftmost on a tie) over a doubly linked list, with a heap of candidate
  // pairs. Heap entries go stale when either end changes; a per-node stamp,
  // renewed on every change, detects that lazily.
  const uint32_t n = static_cast<uint32_t>(c.size());
  constexpr uint32_t kNone = ~uint32_t{0};
  std::vector<uint32_t> next(n);
  std::vector<uint32_t> prev(n);
  std::vector<uint64_t> stamp(n);
  for (uint32_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : kNone;
    prev[i] = i > 0 ? i - 1 : kNone;
    stamp[i] = i;
  }
  constexpr uint64_t kDead = ~uint64_t{0};  // matches no heap entry
  uint64_t next_stamp = n;
  struct Pair {
    double gap;
    uint32_t left;
    uint32_t right;
    uint64_t left_stamp;
    uint64_t right_stamp;
  };
  // std heaps are max-heaps: "less" means merge later.
  const auto lower_priority = [](const Pair& x, const Pair& y) {
    return x.gap > y.gap || (x.gap == y.gap && x.left > y.left);
  };
  const auto make_pair = [&](uint32_t l, uint32_t r) {
    return Pair{c[r].value - c[l].value, l, r, stamp[l], stamp[r]};
  };
  std::vector<Pair> heap;
  heap.reserve(n);
  for (uint32_t i = 0; i + 1 < n; ++i) heap.push_back(make_pair(i, i + 1));
  std::make_heap(heap.begin(), heap.end(), lower_priority);
  const auto push_gap = [&](uint32_t l, uint32_t r) {
    heap.push_back(make_pair(l, r));
    std::push_heap(heap.begin(), heap.end(), lower_priority);
  };

  uint32_t alive = n;
  const uint32_t target = static_cast<uint32_t>(max_centroids_);
  while (alive > target && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower_priority);
    const Pair g = heap.back();
    heap.pop_back();
    if (stamp[g.left] != g.left_stamp || stamp[g.right] != g.right_stamp) continue;
    // Merge right into left; left keeps its slot and position.
    Centroid& l = c[g.left];
    const Centroid& r = c[g.right];
    const double w = l.weight + r.weight;
    l.value = (l.value * l.weight + r.value * r.weight) / w;
    l.weight = w;
    stamp[g.left] = next_stamp++;
    stamp[g.right] = kDead;
    const uint32_t after = next[g.right];
    next[g.left] = after;
    if (after != kNone) prev[after] = g.left;
    --alive;
    if (prev[g.left] != kNone) push_gap(prev[g.left], g.left);
    if (after != kNone) push_gap(g.left, after);
  }

  // Compact the survivors in list order. Node 0 always survives: merges
  // keep the left node.
  std::vector<Centroid> out;
  out.reserve(alive);
  for (uint32_t i = 0; i != kNone; i = next[i]) out.push_back(c[i]);
  c.swap(out);
}

void StreamingHistogram::Merge(const StreamingHistogram& other) {
  Flush();
  other.Flush();
  if (other.centroids_.empty()) return;
  total_weight_ += other.total_weight_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  exact_ = exact_ && other.exact_;
  MergeSorted(other.centroids_);
}

const std::vector<StreamingHistogram::Centroid>& StreamingHistogram::Centroids() const {
  Flush();
  return centroids_;
}

bool StreamingHistogram::IsExact() const {
  Flush();
  return exact_;
}

double StreamingHistogram::Min() const {
  Flush();
  return min_;
}

double StreamingHistogram::Max() const {
  Flush();
  return max_;
}

std::vector<double> StreamingHistogram::Boundaries(int num_bins) const {
  Flush();
  std::vector<double> cuts{-kInf};
  const std::vector<Centroid>& c = centroids_;
  if (c.empty() || num_bins <= 1) return cuts;
  double total = 0.0;
  for (const Centroid& x : c) total += x.weight;
  const double per_bin = total / num_bins;

  if (exact_) {
    if (c.size() <= static_cast<size_t>(num_bins)) {
      for (size_t i = 1; i < c.size(); ++i) cuts.push_back(c[i].value);
      return cuts;
    }
    // A cut at c[m].value leaves below[m] = Σ_{i<m} weight below it; pick the
    // m in [1, size) whose below[m] is closest to each target. Targets rise,
    // so m only moves forward.
    size_t m = 1;
    double below = c[0].weight;  // below[m]
    for (int j = 1; j < num_bins; ++j) {
      const double t = j * per_bin;
      while (m + 1 < c.size() && below + c[m].weight <= t) {
        below += c[m].weight;
        ++m;
      }
      // below[m] <= t < below[m + 1] here, unless m was clamped at either end.
      if (m + 1 < c.size() && (below + c[m].weight) - t < t - below) {
        cuts.push_back(c[m + 1].value);
      } else {
        cuts.push_back(c[m].value);
      }
    }
    MakeStrictlyIncreasing(cuts);
    return cuts;
  }

  const std::vector<Centroid> h = MergeExtraSmall(c, per_bin * kExtraSmallFraction);
  if (h.size() <= static_cast<size_t>(num_bins)) {
    for (size_t i = 0; i + 1 < h.size(); ++i) cuts.push_back((h[i].value + h[i + 1].value) / 2);
    MakeStrictlyIncreasing(cuts);
    return cuts;
  }
  // half_sum[i] = Σ_{k<i} m_k + m_i/2: the cumulative weight at centroid i.
  std::vector<double> half_sum(h.size());
  double running = 0.0;
  for (size_t i = 0; i < h.size(); ++i) {
    half_sum[i] = running + h[i].weight / 2;
    running += h[i].weight;
  }
  const size_t last = h.size() - 1;
  size_t pos = 0;
  bool have_previous = false;
  for (int j = 1; j < num_bins; ++j) {
    const double t = j * per_bin;
    size_t i = pos;
    while (i < last && half_sum[i + 1] < t) ++i;
    if (i == last) break;                     // beyond the last centroid: no more cuts
    if (have_previous && i == pos) continue;  // one cut per centroid pair
    const double d = t - half_sum[i];
    double cut;
    if (d < 0) {  // before the first centroid's midpoint
      cut = (h[i].value + h[i + 1].value) / 2;
    } else {
      const double z = TrapezoidFraction(h[i].weight, h[i + 1].weight, d);
      cut = h[i].value + (h[i + 1].value - h[i].value) * z;
    }
    cuts.push_back(cut);
    pos = i;
    have_previous = true;
  }
  MakeStrictlyIncreasing(cuts);
  return cuts;
}

double StreamingHistogram::Quantile(double q) const {
  Flush();
  const std::vector<Centroid>& c = centroids_;
  if (c.empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  double total = 0.0;
  for (const Centroid& x : c) total += x.weight;
  const double t = q * total;

  if (exact_) {
    double cumulative = 0.0;
    for (const Centroid& x : c) {
      cumulative += x.weight;
      if (cumulative >= t) return x.value;
    }
    return c.back().value;
  }

  double running = 0.0;
  for (size_t i = 0; i < c.size(); ++i) {
    const double half = running + c[i].weight / 2;
    if (t <= half) {
      if (i == 0) {  // between the minimum and the first centroid
        return half > 0 ? min_ + (c[0].value - min_) * (t / half) : c[0].value;
      }
      const double prev_half = running - c[i - 1].weight / 2;
      const double z = TrapezoidFraction(c[i - 1].weight, c[i].weight, t - prev_half);
      return c[i - 1].value + (c[i].value - c[i - 1].value) * z;
    }
    running += c[i].weight;
  }
  // Between the last centroid and the maximum.
  const double last_half = total - c.back().weight / 2;
  const double rest = total - last_half;
  return rest > 0 ? c.back().value + (max_ - c.back().value) * ((t - last_half) / rest)
                  : c.back().value;
}

}  // namespace tarn::stats
