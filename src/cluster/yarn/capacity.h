// Whether a job's containers can run on a YARN cluster, decided before anything is staged:
// a container larger than the scheduler allows is refused by the ResourceManager, and a job
// whose containers cannot all be placed on the cluster's NodeManagers at once waits for
// them forever (distributed training needs every worker). Both are reported in seconds,
// with what was asked, what the cluster can give and which settings to lower.
#pragma once

#include <string>
#include <vector>

#include "cluster/yarn/rm_rest.h"
#include "common/status.h"

namespace tarn::cluster::yarn {

// `count` containers of one shape, and the settings that size them.
struct ContainerAsk {
  std::string role;  // "ApplicationMaster", "parameter server", "worker"
  int count = 1;
  int64_t memory_mb = 0;
  int64_t vcores = 0;
  std::string memory_setting, vcores_setting, count_setting;  // "" when none
};

// Whether every container can run at once on the nodes' whole capacity, or on what is free
// on them now when `free_only` (an exhaustive placement, largest containers first).
bool AsksFit(const std::vector<ContainerAsk>& asks, const ClusterResources& cluster,
             bool free_only);

// "1 ApplicationMaster of 4096 MB, 1 vcores; 3 workers of 2048 MB, 2 vcores (10240 MB, ...)"
std::string DescribeAsks(const std::vector<ContainerAsk>& asks);
// "2 running nodes of 4096 MB, 8 vcores (8192 MB, 16 vcores in all, 8192 MB, 16 vcores free),
//  at most 4096 MB, 8 vcores per container"
std::string DescribeCluster(const ClusterResources& cluster);

// kFailedPrecondition when a container is larger than the cluster allows (or than its
// largest node) or the containers cannot all fit on the nodes; the message says what was
// asked, what the cluster can give and which settings to lower. Ok otherwise (they may
// still wait for other applications' containers: see AsksFit with free_only).
Status CheckAsksFit(const std::vector<ContainerAsk>& asks, const ClusterResources& cluster);

}  // namespace tarn::cluster::yarn
