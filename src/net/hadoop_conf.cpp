#include "net/hadoop_conf.h"

#include <arpa/inet.h>  // for inet_ntop
#include <netdb.h>      // for getaddrinfo
#include <pwd.h>
#include <unistd.h>

#include <algorithm>  // for std::count
#include <charconv>
#include <cstdlib>  // for getenv

#include "common/files.h"    // for ReadFile, PathExists, IsDirectory, JoinPath
#include "common/strings.h"  // for Trim, Split, ToLower, StartsWith

namespace tarn::net {
namespace {

constexpr int kMaxSubstitutionDepth = 20;  // Hadoop's Configuration.MAX_SUBST

size_t LineOf(std::string_view text, size_t offset) {
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

void AppendUtf8(std::string* out, unsigned long cp) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// XML text with the five named entities, numeric references and CDATA sections decoded.
std::string XmlText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.substr(i, 9) == "<![CDATA[") {
      size_t end = s.find("]]>", i + 9);
      if (end == std::string_view::npos) end = s.size();
      out.append(s.substr(i + 9, end - i - 9));
      i = end + 2;
      continue;
    }
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out += '&';
      continue;
    }
    std::string_view ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp") {
      out += '&';
    } else if (ent == "lt") {
      out += '<';
    } else if (ent == "gt") {
      out += '>';
    } else if (ent == "quot") {
      out += '"';
    } else if (ent == "apos") {
      out += '\'';
    } else if (ent.size() > 1 && ent[0] == '#') {
      unsigned long cp = 0;
      const bool hex = ent[1] == 'x' || ent[1] == 'X';
      std::string_view digits = ent.substr(hex ? 2 : 1);
      auto r = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) {
        out += '&';
        continue;
      }
      AppendUtf8(&out, cp);
    } else {
      out += '&';
      continue;
    }
    i = semi;
  }
  return out;
}

// The text of the first <tag>...</tag> (or "" for <tag/>) in `block`; nullopt when absent.
std::optional<std::string> Element(std::string_view block, std::string_view tag) {
  const std::string open = "<" + std::string(tag);
  size_t at = 0;
  while ((at = block.find(open, at)) != std::string_view::npos) {
    size_t after = at + open.size();
    if (after < block.size() && (block[after] == '>' || block[after] == '/' ||
                                 block[after] == ' ' || block[after] == '\t')) {
      break;
    }
    at = after;
  }
  if (at == std::string_view::npos) return std::nullopt;
  size_t gt = block.find('>', at);
  if (gt == std::string_view::npos) return std::nullopt;
  if (block[gt - 1] == '/') return std::string();
  const std::string close = "</" + std::string(tag) + ">";
  size_t end = block.find(close, gt + 1);
  if (end == std::string_view::npos) return std::nullopt;
  return XmlText(block.substr(gt + 1, end - gt - 1));
}

std::string SystemProperty(const std::string& name) {
  if (name == "user.name") return HadoopUserName();
  if (name == "user.home") {
    const char* home = std::getenv("HOME");
    return home != nullptr ? home : "";
  }
  if (name == "java.io.tmpdir") {
    const char* tmp = std::getenv("TMPDIR");
    return tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp";
  }
  return "";
}

std::string HostOf(const std::string& address) {
  std::string host;
  int port = 0;
  if (!SplitHostPort(address, 1, &host, &port)) return address;
  return host;
}

// "0.0.0.0:9870" names every interface of the server; a client connects to `host` instead.
std::string WithHost(const std::string& address, const std::string& host) {
  std::string h;
  int port = 0;
  if (!SplitHostPort(address, 0, &h, &port) || port == 0) return address;
  if (h == "0.0.0.0" || h.empty()) h = host;
  return h + ":" + std::to_string(port);
}

}  // namespace

bool SplitHostPort(std::string_view address, int default_port, std::string* host, int* port) {
  address = Trim(address);
  std::string_view port_text;
  if (!address.empty() && address.front() == '[') {
    size_t close = address.find(']');
    if (close == std::string_view::npos) return false;
    *host = std::string(address.substr(1, close - 1));
    if (close + 1 < address.size()) {
      if (address[close + 1] != ':') return false;
      port_text = address.substr(close + 2);
    }
  } else {
    size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) {
      *host = std::string(address);
    } else {
      *host = std::string(address.substr(0, colon));
      port_text = address.substr(colon + 1);
    }
  }
  if (port_text.empty()) {
    *port = default_port;
    return true;
  }
  int p = 0;
  auto r = std::from_chars(port_text.data(), port_text.data() + port_text.size(), p);
  if (r.ec != std::errc() || r.ptr != port_text.data() + port_text.size() || p < 0 || p > 65535) {
    return false;
  }
  *port = p;
  return true;
}

std::string HadoopUserName(const std::string& explicit_user) {
  if (!explicit_user.empty()) return explicit_user;
  if (const char* env = std::getenv("HADOOP_USER_NAME"); env != nullptr && env[0] != '\0') {
    return env;
  }
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) {
    return pw->pw_name;
  }
  if (const char* env = std::getenv("USER"); env != nullptr && env[0] != '\0') return env;
  return "nobody";
}

std::string HadoopConf::DefaultConfDir(const std::string& explicit_dir) {
  if (!explicit_dir.empty()) return explicit_dir;
  if (const char* env = std::getenv("HADOOP_CONF_DIR"); env != nullptr && env[0] != '\0') {
    return env;
  }
  if (const char* home = std::getenv("HADOOP_HOME"); home != nullptr && home[0] != '\0') {
    std::string dir = JoinPath(home, "etc/hadoop");
    if (IsDirectory(dir)) return dir;
  }
  return "";
}

Result<HadoopConf> HadoopConf::FromSettings(const Settings& settings) {
  TARN_ASSIGN_OR_RETURN(HadoopConf conf,
                        LoadDir(DefaultConfDir(settings.GetString("tarn.hadoop.conf-dir"))));
  for (const auto& [k, v] : settings.values()) {
    if (StartsWith(k, "tarn.") || StartsWith(k, "shifu.")) continue;
    conf.Set(k, v);
  }
  return conf;
}

Result<HadoopConf> HadoopConf::LoadDir(const std::string& dir) {
  HadoopConf conf;
  conf.conf_dir_ = dir;
  if (dir.empty()) return conf;
  if (!IsDirectory(dir)) {
    return NotFound("Hadoop configuration folder " + dir +
                    " does not exist (HADOOP_CONF_DIR or tarn.hadoop.conf-dir)");
  }
  for (const char* name : {"core-site.xml", "hdfs-site.xml", "yarn-site.xml"}) {
    const std::string path = JoinPath(dir, name);
    if (PathExists(path)) TARN_RETURN_IF_ERROR(conf.LoadFile(path));
  }
  return conf;
}

Status HadoopConf::LoadFile(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseXml(text, path);
}

Status HadoopConf::ParseXml(const std::string& text, const std::string& source) {
  std::string_view t(text);
  if (t.find("<configuration") == std::string_view::npos) {
    return InvalidArgument(source + ": not a Hadoop configuration file (no <configuration>)");
  }
  size_t pos = 0;
  while (true) {
    size_t open = t.find("<property", pos);
    size_t comment = t.find("<!--", pos);
    if (comment != std::string_view::npos && (open == std::string_view::npos || comment < open)) {
      size_t end = t.find("-->", comment + 4);
      if (end == std::string_view::npos) {
        return InvalidArgument(source + ":" + std::to_string(LineOf(t, comment)) +
                               ": unterminated comment");
      }
      pos = end + 3;
      continue;
    }
    if (open == std::string_view::npos) break;
    const size_t after = open + 9;
    if (after < t.size() && t[after] != '>' && t[after] != ' ' && t[after] != '\n' &&
        t[after] != '\t' && t[after] != '\r') {
      pos = after;  // <properties> or another element
      continue;
    }
    const std::string where = source + ":" + std::to_string(LineOf(t, open));
    size_t close = t.find("</property>", open);
    if (close == std::string_view::npos) {
      return InvalidArgument(where + ": <property> without </property>");
    }
    std::string_view block = t.substr(open, close - open);
    auto name = Element(block, "name");
    if (!name || Trim(*name).empty()) return InvalidArgument(where + ": <property> without <name>");
    const std::string key(Trim(*name));
    auto value = Element(block, "value");
    auto is_final = Element(block, "final");
    pos = close + 11;
    if (!value) continue;  // Hadoop ignores a property without a value
    auto fin = final_.find(key);
    if (fin != final_.end() && fin->second) continue;  // an earlier file marked it final
    values_[key] = std::string(Trim(*value));
    sources_[key] = where;
    final_[key] = is_final && ToLower(Trim(*is_final)) == "true";
  }
  return Status::Ok();
}

void HadoopConf::Set(const std::string& key, const std::string& value) {
  values_[key] = value;
  sources_[key] = "override";
}

std::string HadoopConf::SourceOf(const std::string& key) const {
  auto it = sources_.find(key);
  return it == sources_.end() ? "" : it->second;
}

std::string HadoopConf::Expand(const std::string& value, int depth) const {
  if (depth >= kMaxSubstitutionDepth || value.find("${") == std::string::npos) return value;
  std::string out;
  size_t pos = 0;
  while (pos < value.size()) {
    size_t start = value.find("${", pos);
    if (start == std::string::npos) {
      out.append(value, pos, std::string::npos);
      break;
    }
    size_t end = value.find('}', start + 2);
    if (end == std::string::npos) {
      out.append(value, pos, std::string::npos);
      break;
    }
    out.append(value, pos, start - pos);
    const std::string var = value.substr(start + 2, end - start - 2);
    std::optional<std::string> sub;
    if (auto it = values_.find(var); it != values_.end()) {
      sub = Expand(it->second, depth + 1);
    } else if (StartsWith(var, "env.")) {
      if (const char* env = std::getenv(var.c_str() + 4)) sub = env;
    } else if (std::string p = SystemProperty(var); !p.empty()) {
      sub = p;
    }
    if (sub) {
      out += *sub;
    } else {
      out.append(value, start, end - start + 1);  // unresolved: kept as written
    }
    pos = end + 1;
  }
  return out;
}

std::optional<std::string> HadoopConf::Get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return Expand(it->second, 0);
}

std::string HadoopConf::GetOr(const std::string& key, const std::string& fallback) const {
  auto v = Get(key);
  return v && !v->empty() ? *v : fallback;
}

std::string HadoopConf::DefaultFs() const {
  std::string fs = GetOr("fs.defaultFS", "");
  if (fs.empty()) fs = GetOr("fs.default.name", "file:///");
  return fs;
}

std::vector<std::string> HadoopConf::NameNodeHttpAddresses(const std::string& authority_in) const {
  std::string default_authority;
  if (const std::string fs = DefaultFs(); StartsWith(fs, "hdfs://")) {
    std::string rest = fs.substr(7);
    default_authority = rest.substr(0, rest.find('/'));
  }
  const std::string authority = authority_in.empty() ? default_authority : authority_in;
  std::vector<std::string> out;
  // dfs.http.policy HTTPS_ONLY: the NameNodes' https addresses (port 9871 by default).
  const bool https = HdfsHttpsOnly();
  const std::string http_key = https ? "dfs.namenode.https-address" : "dfs.namenode.http-address";
  const int default_port = https ? 9871 : 9870;
  if (authority.empty()) {
    std::string a = GetOr(http_key, "");
    if (!a.empty()) out.push_back(WithHost(a, "localhost"));
    return out;
  }
  const std::string host = HostOf(authority);

  // A nameservice (HA, or federation): its NameNodes, in order.
  for (const auto& ns_raw : Split(GetOr("dfs.nameservices", ""), ",")) {
    const std::string ns(Trim(ns_raw));
    if (ns.empty() || ns != authority) continue;
    const std::string ids = GetOr("dfs.ha.namenodes." + ns, "");
    if (ids.empty()) {
      std::string a = GetOr(http_key + "." + ns, "");
      if (!a.empty()) out.push_back(a);
    } else {
      for (const auto& id_raw : Split(ids, ",")) {
        const std::string id(Trim(id_raw));
        if (id.empty()) continue;
        std::string a = GetOr(http_key + "." + ns + "." + id, "");
        if (!a.empty()) out.push_back(a);
      }
    }
    if (!out.empty()) return out;
  }

  // The NameNode whose RPC address is the authority (a key with or without suffixes).
  std::string want_host;
  int want_port = 0;
  SplitHostPort(authority, 8020, &want_host, &want_port);
  const std::string rpc_prefix = "dfs.namenode.rpc-address";
  for (const auto& [key, raw] : values_) {
    if (!StartsWith(key, rpc_prefix)) continue;
    const std::string suffix = key.substr(rpc_prefix.size());
    if (!suffix.empty() && suffix[0] != '.') continue;
    std::string h;
    int p = 0;
    if (!SplitHostPort(Expand(raw, 0), 8020, &h, &p) || h != want_host || p != want_port) continue;
    std::string a = GetOr(http_key + suffix, "");
    if (!a.empty()) {
      out.push_back(WithHost(a, want_host));
      return out;
    }
  }
  // fs.defaultFS's NameNode is dfs.namenode.http-address; another one gets its port.
  std::string a = GetOr(http_key, "0.0.0.0:" + std::to_string(default_port));
  if (authority != default_authority) {
    std::string h;
    int port = 0;
    if (SplitHostPort(a, default_port, &h, &port)) a = "0.0.0.0:" + std::to_string(port);
  }
  out.push_back(WithHost(a, host));
  return out;
}

std::vector<std::string> HadoopConf::ResourceManagerWebAddresses() const {
  std::vector<std::string> out;
  // yarn.http.policy HTTPS_ONLY: the https web addresses (port 8090 by default).
  const bool https = YarnHttpsOnly();
  const std::string web_key =
      https ? "yarn.resourcemanager.webapp.https.address" : "yarn.resourcemanager.webapp.address";
  const std::string web_port = https ? "8090" : "8088";
  const bool ha = ToLower(GetOr("yarn.resourcemanager.ha.enabled", "false")) == "true";
  const std::string ids = GetOr("yarn.resourcemanager.ha.rm-ids", "");
  if (ha && !ids.empty()) {
    for (const auto& id_raw : Split(ids, ",")) {
      const std::string id(Trim(id_raw));
      if (id.empty()) continue;
      std::string a = GetOr(web_key + "." + id, "");
      if (a.empty()) {
        std::string h = GetOr("yarn.resourcemanager.hostname." + id, "");
        if (!h.empty()) a = h + ":" + web_port;
      }
      if (!a.empty()) out.push_back(a);
    }
    if (!out.empty()) return out;
  }
  const std::string host = GetOr("yarn.resourcemanager.hostname", "0.0.0.0");
  std::string a = GetOr(web_key, host + ":" + web_port);
  out.push_back(WithHost(a, host == "0.0.0.0" ? "localhost" : host));
  return out;
}

std::string HadoopConf::ResourceManagerSchedulerAddress() const {
  const std::string host = GetOr("yarn.resourcemanager.hostname", "0.0.0.0");
  std::string a = GetOr("yarn.resourcemanager.scheduler.address", host + ":8030");
  return WithHost(a, host == "0.0.0.0" ? "localhost" : host);
}

std::string HadoopConf::ResourceManagerAddress() const {
  const std::string host = GetOr("yarn.resourcemanager.hostname", "0.0.0.0");
  std::string a = GetOr("yarn.resourcemanager.address", host + ":8032");
  return WithHost(a, host == "0.0.0.0" ? "localhost" : host);
}

bool HadoopConf::HdfsHttpsOnly() const {
  return ToLower(GetOr("dfs.http.policy", "HTTP_ONLY")) == "https_only";
}

bool HadoopConf::YarnHttpsOnly() const {
  return ToLower(GetOr("yarn.http.policy", "HTTP_ONLY")) == "https_only";
}

bool HadoopConf::KerberosEnabled() const {
  return ToLower(GetOr("hadoop.security.authentication", "simple")) == "kerberos";
}

std::string HadoopConf::ResourceManagerPrincipal() const {
  std::string principal = GetOr("yarn.resourcemanager.principal", "");
  const auto at = principal.find("_HOST");
  if (at != std::string::npos) {
    std::string host;
    int port = 0;
    SplitHostPort(ResourceManagerAddress(), 8032, &host, &port);
    principal.replace(at, 5, ToLower(host));
  }
  return principal;
}

std::string HadoopConf::HdfsTokenService(const std::string& authority_in) const {
  std::string authority = authority_in;
  if (authority.empty()) {
    const std::string fs = DefaultFs();
    if (StartsWith(fs, "hdfs://")) authority = fs.substr(7, fs.find('/', 7) - 7);
  }
  for (const auto& ns_raw : Split(GetOr("dfs.nameservices", ""), ",")) {
    if (Trim(ns_raw) == authority) return "ha-hdfs:" + authority;
  }
  std::string host;
  int port = 0;
  if (!SplitHostPort(authority, 8020, &host, &port)) return authority;
  if (ToLower(GetOr("hadoop.security.token.service.use_ip", "true")) == "true") {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0 && found != nullptr) {
      char ip[INET_ADDRSTRLEN] = {0};
      const auto* in = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
      if (inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip)) != nullptr) host = ip;
      freeaddrinfo(found);
    }
  }
  return host + ":" + std::to_string(port);
}

}  // namespace tarn::net
