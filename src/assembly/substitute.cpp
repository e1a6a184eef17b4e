#include "assembly/substitute.h"

#include "common/strings.h"

namespace tarn::assembly {
namespace {

// Hadoop's registry user name (RegistryUtils.currentUser): lower case, '_' as '-'.
std::string RegistryUser(const std::string& user) {
  std::string u = ToLower(user);
  for (auto& ch : u)
    if (ch == '_') ch = '-';
  return u;
}

}  // namespace

std::string Substitute(const std::string& text, const Tokens& tokens) {
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find("${", at);
    if (open == std::string::npos) break;
    const size_t close = text.find('}', open + 2);
    if (close == std::string::npos) break;
    out.append(text, at, open - at);
    auto it = tokens.find(text.substr(open + 2, close - open - 2));
    if (it != tokens.end()) {
      out += it->second;
      at = close + 1;
    } else {
      // Not a token: keep "${" and look again after it (it may open a token further on).
      out += "${";
      at = open + 2;
    }
  }
  out.append(text, at, std::string::npos);
  return out;
}

std::string InstanceName(const std::string& component, int64_t component_id) {
  return component + "-" + std::to_string(component_id);
}

Tokens InstanceTokens(const Service& service, const Component& component,
                      const InstanceContext& context) {
  Tokens t = context.extra;
  t["SERVICE_NAME"] = service.name;
  t["SERVICE_NAME.lc"] = ToLower(service.name);
  if (!context.user.empty()) t["USER"] = RegistryUser(context.user);
  if (!context.cluster_fs_uri.empty()) t["CLUSTER_FS_URI"] = context.cluster_fs_uri;
  t["COMPONENT_NAME"] = component.name;
  t["COMPONENT_NAME.lc"] = ToLower(component.name);
  t["COMPONENT_INSTANCE_NAME"] = InstanceName(component.name, context.component_id);
  t["COMPONENT_ID"] = std::to_string(context.component_id);
  if (!context.container_id.empty()) t["CONTAINER_ID"] = context.container_id;
  for (const auto& [instance, address] : context.dependency_instances) {
    const std::string upper = ToUpper(instance);
    t[upper + "_HOST"] = address.host;
    t[upper + "_IP"] = address.ip;
  }
  return t;
}

ResolvedInstance ResolveInstance(const Component& component, const Tokens& tokens,
                                 const std::map<std::string, std::string>& extra_env) {
  ResolvedInstance r;
  r.tokens = tokens;
  r.env = extra_env;
  for (const auto& [name, value] : component.configuration.env) {
    r.env[name] = Substitute(value, tokens);
  }
  for (const auto& [name, value] : r.env) r.tokens[name] = value;
  r.launch_command = Substitute(component.launch_command, r.tokens);
  r.files = component.configuration.files;
  for (auto& f : r.files) {
    for (auto& [key, value] : f.properties) value = Substitute(value, r.tokens);
  }
  return r;
}

}  // namespace tarn::assembly
