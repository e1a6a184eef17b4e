#include "cluster/yarn/services_rest.h"

#include <nlohmann/json.hpp>

#include "cluster/yarn/rest_json.h"
#include "net/http_client.h"

namespace tarn::cluster::yarn {
namespace {

using Json = nlohmann::json;

std::string Str(const Json& j, const char* key) { return JsonText(j, key); }

std::string ServicePath(const std::string& name) {
  return "/app/v1/services/" + net::UrlEncode(name);
}

}  // namespace

bool ServiceStatus::Done() const {
  return state == "STOPPED" || state == "FAILED" || state == "SUCCEEDED";
}

const ServiceComponentStatus* ServiceStatus::Component(const std::string& component) const {
  for (const auto& c : components)
    if (c.name == component) return &c;
  return nullptr;
}

Result<ServiceStatus> ServicesClient::ParseStatus(const std::string& json) {
  Json j = Json::parse(json, nullptr, false);
  if (!j.is_object()) {
    return Corrupt("the service framework's answer is not a JSON object: " + json.substr(0, 200));
  }
  ServiceStatus s;
  s.name = Str(j, "name");
  s.id = Str(j, "id");
  s.state = Str(j, "state");
  s.diagnostics = Str(j, "diagnostics");
  if (j.contains("components") && j["components"].is_array()) {
    for (const auto& c : j["components"]) {
      ServiceComponentStatus cs;
      cs.name = Str(c, "name");
      cs.state = Str(c, "state");
      cs.restart_policy = Str(c, "restart_policy");
      cs.number_of_containers = JsonInteger(c, "number_of_containers");
      if (c.contains("containers") && c["containers"].is_array()) {
        for (const auto& k : c["containers"]) {
          ServiceContainerStatus ks;
          ks.id = Str(k, "id");
          ks.component_instance_name = Str(k, "component_instance_name");
          ks.state = Str(k, "state");
          ks.hostname = Str(k, "hostname");
          ks.bare_host = Str(k, "bare_host");
          ks.ip = Str(k, "ip");
          cs.containers.push_back(std::move(ks));
        }
      }
      s.components.push_back(std::move(cs));
    }
  }
  return s;
}

Status ServicesClient::Create(const std::string& spec_json) {
  return rm_->Call("POST", "/app/v1/services", "", spec_json, {200, 201, 202}).status();
}

Result<ServiceStatus> ServicesClient::Get(const std::string& name) {
  TARN_ASSIGN_OR_RETURN(std::string body, rm_->Call("GET", ServicePath(name), "", "", {200}));
  return ParseStatus(body);
}

Status ServicesClient::Flex(const std::string& name, const std::string& component,
                            int64_t containers) {
  const Json body = {{"name", component}, {"number_of_containers", containers}};
  return rm_
      ->Call("PUT", ServicePath(name) + "/components/" + net::UrlEncode(component), "", body.dump(),
             {200, 202})
      .status();
}

Status ServicesClient::Stop(const std::string& name) {
  return rm_->Call("PUT", ServicePath(name), "", Json{{"state", "STOPPED"}}.dump(), {200, 202})
      .status();
}

Status ServicesClient::Start(const std::string& name) {
  return rm_->Call("PUT", ServicePath(name), "", Json{{"state", "STARTED"}}.dump(), {200, 202})
      .status();
}

Status ServicesClient::Destroy(const std::string& name) {
  return rm_->Call("DELETE", ServicePath(name), "", "", {200, 202, 204}).status();
}

Result<std::string> ServicesClient::Version() {
  return rm_->Call("GET", "/app/v1/services/version", "", "", {200});
}

}  // namespace tarn::cluster::yarn
