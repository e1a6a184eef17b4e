#include "cluster/yarn/capacity.h"

#include <algorithm>
#include <map>

#include "common/strings.h"

namespace tarn::cluster::yarn {

namespace {

std::string Shape(int64_t memory_mb, int64_t vcores) {
  return std::to_string(memory_mb) + " MB, " + std::to_string(vcores) + " vcores";
}

std::string Plural(int n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

using ResourcePairs = std::vector<std::pair<int64_t, int64_t>>;  // (memory, vcores) left per node

// Places containers[next..] on `room`, trying every node for each (largest containers first,
// nodes with the same room left tried once), until `*budget` steps are spent.
bool Place(const ResourcePairs& containers, size_t next, ResourcePairs& room, bool ignore_memory,
           bool ignore_vcores, int64_t* budget) {
  if (next == containers.size()) return true;
  if (--*budget < 0) return true;  // undecided: do not refuse a job that might fit
  const auto [memory, vcores] = containers[next];
  for (size_t i = 0; i < room.size(); ++i) {
    auto& [free_memory, free_vcores] = room[i];
    if ((!ignore_memory && memory > free_memory) || (!ignore_vcores && vcores > free_vcores)) {
      continue;
    }
    bool same_as_tried = false;
    for (size_t j = 0; j < i && !same_as_tried; ++j) same_as_tried = room[j] == room[i];
    if (same_as_tried) continue;
    free_memory -= memory;
    free_vcores -= vcores;
    const bool placed = Place(containers, next + 1, room, ignore_memory, ignore_vcores, budget);
    free_memory += memory;
    free_vcores += vcores;
    if (placed) return true;
  }
  return false;
}

// Whether every container of `asks` can run on `room` at once; a resource with `ignore_*`
// set does not constrain. The search is exact for the few containers of a training job; one
// too large to decide within its budget counts as fitting.
bool Pack(const std::vector<ContainerAsk>& asks, ResourcePairs room, bool ignore_memory,
          bool ignore_vcores) {
  ResourcePairs containers;
  for (const auto& a : asks)
    for (int i = 0; i < a.count; ++i) containers.emplace_back(a.memory_mb, a.vcores);
  std::sort(containers.begin(), containers.end(), std::greater<>());
  int64_t budget = 200000;
  return Place(containers, 0, room, ignore_memory, ignore_vcores, &budget);
}

ResourcePairs Room(const ClusterResources& cluster, bool free_only) {
  ResourcePairs room;
  for (const auto& n : cluster.nodes) {
    room.emplace_back(free_only ? n.free_memory_mb : n.memory_mb,
                      free_only ? n.free_vcores : n.vcores);
  }
  return room;
}

// The settings of `asks` that a shortage of memory (or vcores) calls to lower.
std::vector<std::string> SettingsToLower(const std::vector<ContainerAsk>& asks, bool memory,
                                         bool vcores) {
  std::vector<std::string> out;
  auto add = [&](const std::string& s) {
    if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  std::vector<ContainerAsk> by_size = asks;
  std::sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) {
    return a.memory_mb * a.count > b.memory_mb * b.count;
  });
  for (const auto& a : by_size) {
    if (a.count <= 0) continue;
    if (memory) add(a.memory_setting);
    if (vcores) add(a.vcores_setting);
  }
  return out;
}

}  // namespace

bool AsksFit(const std::vector<ContainerAsk>& asks, const ClusterResources& cluster,
             bool free_only) {
  return Pack(asks, Room(cluster, free_only), false, false);
}

std::string DescribeAsks(const std::vector<ContainerAsk>& asks) {
  std::vector<std::string> parts;
  int64_t memory = 0, vcores = 0;
  int containers = 0;
  for (const auto& a : asks) {
    if (a.count <= 0) continue;
    parts.push_back(Plural(a.count, a.role) + " of " + Shape(a.memory_mb, a.vcores));
    memory += a.memory_mb * a.count;
    vcores += a.vcores * a.count;
    containers += a.count;
  }
  return Join(parts, "; ") + " (" + Plural(containers, "container") + ", " + Shape(memory, vcores) +
         " in all)";
}

std::string DescribeCluster(const ClusterResources& cluster) {
  // Nodes grouped by capacity: "2 running nodes of 4096 MB, 8 vcores".
  std::map<std::pair<int64_t, int64_t>, int, std::greater<>> groups;
  for (const auto& n : cluster.nodes) ++groups[{n.memory_mb, n.vcores}];
  std::vector<std::string> parts;
  for (const auto& [shape, count] : groups) {
    parts.push_back(std::to_string(count) + " of " + Shape(shape.first, shape.second));
  }
  std::string out = cluster.nodes.empty()
                        ? std::string("no running NodeManager")
                        : Plural(static_cast<int>(cluster.nodes.size()), "running node") + " (" +
                              Join(parts, ", ") + ")";
  out += "; " + Shape(cluster.total_memory_mb, cluster.total_vcores) + " in all, " +
         Shape(cluster.free_memory_mb, cluster.free_vcores) + " free now";
  if (cluster.max_memory_mb > 0) {
    out += "; at most " + Shape(cluster.max_memory_mb, cluster.max_vcores) + " per container";
  }
  return out;
}

Status CheckAsksFit(const std::vector<ContainerAsk>& asks, const ClusterResources& cluster) {
  const std::string summary =
      "asked " + DescribeAsks(asks) + "; the cluster has " + DescribeCluster(cluster);
  if (cluster.nodes.empty()) {
    return FailedPrecondition("YARN cannot run the job: " + summary +
                              " (is a NodeManager running and healthy?)");
  }
  // The largest container the cluster can give: the scheduler's limit, and its largest node.
  int64_t node_memory = 0, node_vcores = 0;
  for (const auto& n : cluster.nodes) {
    node_memory = std::max(node_memory, n.memory_mb);
    node_vcores = std::max(node_vcores, n.vcores);
  }
  const int64_t max_memory =
      cluster.max_memory_mb > 0 ? std::min(cluster.max_memory_mb, node_memory) : node_memory;
  const int64_t max_vcores =
      cluster.max_vcores > 0 ? std::min(cluster.max_vcores, node_vcores) : node_vcores;
  std::vector<std::string> too_large;
  for (const auto& a : asks) {
    if (a.count <= 0) continue;
    if (a.memory_mb > max_memory) {
      too_large.push_back("each " + a.role + " asks " + std::to_string(a.memory_mb) +
                          " MB, more than the " + std::to_string(max_memory) +
                          " MB of the largest container" +
                          (a.memory_setting.empty() ? "" : ": lower " + a.memory_setting));
    }
    if (a.vcores > max_vcores) {
      too_large.push_back("each " + a.role + " asks " + std::to_string(a.vcores) +
                          " vcores, more than the " + std::to_string(max_vcores) +
                          " of the largest container" +
                          (a.vcores_setting.empty() ? "" : ": lower " + a.vcores_setting));
    }
  }
  if (!too_large.empty()) {
    return FailedPrecondition("YARN cannot run the job: " + Join(too_large, "; ") + " (" + summary +
                              ")");
  }
  const auto room = Room(cluster, false);
  if (Pack(asks, room, false, false)) return Status::Ok();
  const bool memory_short = !Pack(asks, room, false, true);
  const bool vcores_short = !Pack(asks, room, true, false);
  std::vector<std::string> lower =
      SettingsToLower(asks, memory_short || !vcores_short, vcores_short);
  std::vector<std::string> counts;
  for (const auto& a : asks) {
    if (!a.count_setting.empty() && a.count > 0) counts.push_back(a.count_setting);
  }
  std::string advice;
  if (!lower.empty()) {
    advice = ". Lower " + Join(lower, ", ") + " with -D (e.g. -D" + lower.front() + "=" +
             (memory_short || !vcores_short ? "1g" : "1") + ")";
  }
  if (!counts.empty()) {
    advice += (advice.empty() ? ". Ask" : ", or ask") + std::string(" for fewer containers (") +
              Join(counts, ", ") + ")";
  }
  return FailedPrecondition(
      "YARN cannot run the job: its containers do not fit on the cluster's nodes all at once, "
      "so they would wait for each other forever; " +
      summary + advice);
}

}  // namespace tarn::cluster::yarn
