// A client of YARN's service framework REST API (hadoop-yarn-site YarnServiceAPI.md), which
// a ResourceManager serves at /app/v1 when yarn.webapp.api-service.enable is true:
//
//   POST   /app/v1/services                              <- a service spec (the Yarnfile)
//   GET    /app/v1/services/{name}                       -> the service, its components and
//                                                           containers
//   PUT    /app/v1/services/{name}                       <- {"state": "STOPPED" | "STARTED"}
//   PUT    /app/v1/services/{name}/components/{comp}     <- {"number_of_containers": N}
//   DELETE /app/v1/services/{name}
//   GET    /app/v1/services/version
//
// The requests go through ResourceManagerClient::Call: the same RM addresses, failover and
// simple-auth user.name as tarn's own submissions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/yarn/rm_rest.h"
#include "common/status.h"

namespace tarn::cluster::yarn {

struct ServiceContainerStatus {
  std::string id;
  std::string component_instance_name;  // "<component>-<i>"
  std::string state;                    // INIT, STARTED, READY, ...
  std::string hostname;
  std::string bare_host;
  std::string ip;
};

struct ServiceComponentStatus {
  std::string name;
  std::string state;  // INIT, FLEXING, STABLE, ...
  int64_t number_of_containers = 0;
  std::string restart_policy;
  std::vector<ServiceContainerStatus> containers;
};

struct ServiceStatus {
  std::string name;
  std::string id;     // the YARN application id
  std::string state;  // ACCEPTED, STARTED, STABLE, STOPPED, FAILED, FLEX, SUCCEEDED, ...
  std::string diagnostics;
  std::vector<ServiceComponentStatus> components;
  // STOPPED, FAILED or SUCCEEDED: the service runs no more.
  bool Done() const;
  const ServiceComponentStatus* Component(const std::string& name) const;
};

class ServicesClient {
 public:
  explicit ServicesClient(ResourceManagerClient* rm) : rm_(rm) {}

  // Submits the spec (POST; Hadoop answers 202 Accepted).
  Status Create(const std::string& spec_json);
  // kNotFound when the RM knows no service of that name.
  Result<ServiceStatus> Get(const std::string& name);
  Status Flex(const std::string& name, const std::string& component, int64_t containers);
  Status Stop(const std::string& name);
  Status Start(const std::string& name);
  Status Destroy(const std::string& name);
  // The version the RM's service framework reports (a JSON object, as text).
  Result<std::string> Version();

  // GET's answer (public for tests).
  static Result<ServiceStatus> ParseStatus(const std::string& json);

 private:
  ResourceManagerClient* rm_;
};

}  // namespace tarn::cluster::yarn
