#include "cluster/webhdfs.h"

#include <unistd.h>  // for getpid

#include <algorithm>  // for std::sort, std::min
#include <atomic>
#include <chrono>
#include <cstring>  // for memcpy
#include <nlohmann/json.hpp>
#include <random>

#include "cluster/yarn/credentials.h"  // for the job's delegation tokens
#include "common/log.h"
#include "common/strings.h"  // for StartsWith
#include "net/hadoop_conf.h"
#include "net/kerberos.h"

namespace tarn::cluster {
namespace {

using Json = nlohmann::json;

// Also a delegation token's answer there: "SecurityException: ... InvalidToken: StandbyException".
bool IsStandby(const net::ClientResponse& r) {
  return r.status == 403 && r.body.find("StandbyException") != std::string::npos;
}

// A client borrowed from the file system's pool for one call.
class ClientLease {
 public:
  explicit ClientLease(WebHdfs* fs) : fs_(fs), client_(fs->AcquireClient()) {}
  ~ClientLease() { fs_->ReleaseClient(std::move(client_)); }
  ClientLease(const ClientLease&) = delete;
  ClientLease& operator=(const ClientLease&) = delete;
  net::HttpClient* operator->() { return client_.get(); }

 private:
  WebHdfs* fs_;
  std::unique_ptr<net::HttpClient> client_;
};

Result<Json> ParseJson(const std::string& what, const std::string& body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::string start = body.substr(0, 200);
    return IoError(what + ": the NameNode's answer is not JSON: " + start);
  }
  return j;
}

data::FileStatus StatusFromJson(const Json& j, const std::string& path) {
  data::FileStatus s;
  s.path = path;
  auto slash = path.find_last_of('/');
  s.name = slash == std::string::npos ? path : path.substr(slash + 1);
  s.is_dir = j.value("type", "") == "DIRECTORY";
  s.length = j.value("length", uint64_t{0});
  s.modification_time_ms = j.value("modificationTime", int64_t{0});
  return s;
}

std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  return ".tarn-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
         std::to_string(rd() % 1000000);
}

class WebHdfsReadable : public data::ReadableFile {
 public:
  WebHdfsReadable(WebHdfs* fs, std::string path, uint64_t size)
      : fs_(fs), path_(std::move(path)), size_(size) {}

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }

  Result<size_t> Read(void* dst, size_t cap) override {
    if (buffer_pos_ == buffer_.size()) {
      if (pos_ >= size_) return size_t{0};
      const uint64_t want = std::min<uint64_t>(fs_->options().read_block_bytes, size_ - pos_);
      buffer_.clear();
      buffer_pos_ = 0;
      TARN_RETURN_IF_ERROR(Fetch(pos_, want, [this](std::string_view piece) {
        buffer_.append(piece);
        return Status::Ok();
      }));
      if (buffer_.empty()) {
        return IoError("reading " + path_ + ": no data at byte " + std::to_string(pos_) + " of " +
                       std::to_string(size_) + " (the file shrank while being read)");
      }
    }
    const size_t n = std::min(cap, buffer_.size() - buffer_pos_);
    std::memcpy(dst, buffer_.data() + buffer_pos_, n);
    buffer_pos_ += n;
    pos_ += n;
    return n;
  }

  Status ReadAt(uint64_t offset, void* dst, size_t size) override {
    if (size == 0) return Status::Ok();
    if (offset + size > size_) {
      return IoError("reading " + path_ + ": bytes " + std::to_string(offset) + ".." +
                     std::to_string(offset + size) + " are past its end (" + std::to_string(size_) +
                     " bytes)");
    }
    auto* out = static_cast<char*>(dst);
    size_t got = 0;
    TARN_RETURN_IF_ERROR(Fetch(offset, size, [&](std::string_view piece) {
      const size_t n = std::min(piece.size(), size - got);
      std::memcpy(out + got, piece.data(), n);
      got += n;
      return Status::Ok();
    }));
    if (got != size) {
      return IoError("reading " + path_ + ": got " + std::to_string(got) + " of " +
                     std::to_string(size) + " bytes at " + std::to_string(offset) +
                     " (the file shrank while being read)");
    }
    return Status::Ok();
  }

  Status Seek(uint64_t offset) override {
    if (offset > size_) {
      return InvalidArgument("seek to " + std::to_string(offset) + " past the end of " + path_);
    }
    // Keep the buffer when the new position falls inside it.
    const uint64_t buffer_start = pos_ - buffer_pos_;
    if (offset >= buffer_start && offset <= buffer_start + buffer_.size()) {
      buffer_pos_ = static_cast<size_t>(offset - buffer_start);
    } else {
      buffer_.clear();
      buffer_pos_ = 0;
    }
    pos_ = offset;
    return Status::Ok();
  }

 private:
  // OPEN [offset, offset + length), following the redirect to a DataNode. A connection failure
  // is retried (from where it stopped) up to options().retries times.
  Status Fetch(uint64_t offset, uint64_t length,
               const std::function<Status(std::string_view)>& sink) {
    uint64_t done = 0;
    Status last;
    for (int attempt = 0; attempt <= fs_->options().retries; ++attempt) {
      WebHdfs::Call call;
      call.op = "OPEN";
      call.params = {{"offset", std::to_string(offset + done)},
                     {"length", std::to_string(length - done)}};
      call.follow_redirects = true;
      call.body_sink = [&](std::string_view piece) {
        done += piece.size();
        return sink(piece);
      };
      auto r = fs_->NameNodeCall(path_, call);
      if (r.ok()) return Status::Ok();
      last = r.status();
      if (last.code() != StatusCode::kUnavailable || done >= length) break;
    }
    return last;
  }

  WebHdfs* fs_;
  std::string path_;
  uint64_t size_;
  uint64_t pos_ = 0;  // of the next byte Read() returns
  std::string buffer_;
  size_t buffer_pos_ = 0;
};

class WebHdfsWritable : public data::WritableFile {
 public:
  WebHdfsWritable(WebHdfs* fs, std::string path, std::FILE* spool)
      : fs_(fs), path_(std::move(path)), spool_(spool) {}
  ~WebHdfsWritable() override {
    if (spool_ != nullptr) std::fclose(spool_);
  }

  const std::string& path() const override { return path_; }

  Status Write(const void* data, size_t size) override {
    if (spool_ == nullptr) return FailedPrecondition(path_ + ": write after Commit");
    if (size > 0 && std::fwrite(data, 1, size, spool_) != size) {
      return ErrnoError("spooling " + path_ + " to a temporary file", errno);
    }
    size_ += size;
    return Status::Ok();
  }

  Status Commit() override {
    if (spool_ == nullptr) return FailedPrecondition(path_ + ": Commit twice");
    if (std::fflush(spool_) != 0) return ErrnoError("spooling " + path_, errno);
    std::rewind(spool_);
    Status s = fs_->Upload(path_, spool_, size_);
    std::fclose(spool_);
    spool_ = nullptr;
    return s;
  }

 private:
  WebHdfs* fs_;
  std::string path_;
  std::FILE* spool_;
  uint64_t size_ = 0;
};

std::string ParentOf(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  return path.substr(0, slash);
}

}  // namespace

Status WebHdfsError(const std::string& what, const net::ClientResponse& response) {
  Json j = Json::parse(response.body, nullptr, false);
  if (j.is_object() && j.contains("RemoteException") && j["RemoteException"].is_object()) {
    const Json& e = j["RemoteException"];
    const std::string exception = e.value("exception", "");
    const std::string java_class = e.value("javaClassName", "");
    const std::string message =
        what + ": " + (exception.empty() ? java_class : exception) + ": " + e.value("message", "");
    if (exception == "FileNotFoundException") return NotFound(message);
    // A standby NameNode cannot check tokens: it says so through an InvalidToken.
    if (message.find("InvalidToken: StandbyException") != std::string::npos) {
      return Unavailable(message + " (a standby NameNode)");
    }
    // The NameNode wraps it in a SecurityException, a DataNode sends it as it is.
    if (exception == "InvalidToken" || java_class.find("InvalidToken") != std::string::npos ||
        message.find("SecretManager$InvalidToken") != std::string::npos) {
      return PermissionDenied(what +
                              ": HDFS refused the delegation token (forged, expired, cancelled "
                              "or past its maximum lifetime; a job past it must be submitted "
                              "again): " +
                              message.substr(what.size() + 2));
    }
    if (exception == "AccessControlException" || exception == "SecurityException") {
      return PermissionDenied(message);
    }
    if (exception == "IllegalArgumentException" || exception == "InvalidPathException") {
      return InvalidArgument(message);
    }
    if (exception == "FileAlreadyExistsException" ||
        exception == "PathIsNotEmptyDirectoryException" ||
        exception == "ParentNotDirectoryException") {
      return FailedPrecondition(message);
    }
    if (exception == "StandbyException" || exception == "RetriableException" ||
        exception == "SafeModeException") {
      return Unavailable(message);
    }
    return IoError(message);
  }
  return net::HttpStatusError(what, response);
}

WebHdfs::WebHdfs(WebHdfsOptions options) : options_(std::move(options)) {
  if (options_.read_block_bytes == 0) options_.read_block_bytes = 8 << 20;
}

Result<std::string> WebHdfs::HdfsPathOf(const std::string& uri) {
  std::string path;
  auto scheme = uri.find("://");
  if (scheme == std::string::npos) {
    path = uri;
  } else {
    auto slash = uri.find('/', scheme + 3);
    path = slash == std::string::npos ? "/" : uri.substr(slash);
  }
  if (path.empty() || path[0] != '/') {
    return InvalidArgument("not an absolute HDFS path: '" + uri + "'");
  }
  // "/a//b/" -> "/a/b"
  std::string clean;
  for (char c : path) {
    if (c == '/' && !clean.empty() && clean.back() == '/') continue;
    clean += c;
  }
  if (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  return clean;
}

std::string WebHdfs::OperationUrl(
    const std::string& namenode, const std::string& hdfs_path, const std::string& op,
    const std::vector<std::pair<std::string, std::string>>& params) const {
  std::string url = (options_.https ? "https://" : "http://") + namenode + "/webhdfs/v1" +
                    net::UrlEncodePath(hdfs_path) + "?op=" + op;
  if (!options_.delegation_token.empty()) {
    url += "&delegation=" + net::UrlEncode(options_.delegation_token);
  } else if (!options_.kerberos && !options_.user.empty()) {
    url += "&user.name=" + net::UrlEncode(options_.user);
  }
  for (const auto& [k, v] : params) url += "&" + k + "=" + net::UrlEncode(v);
  return url;
}

std::unique_ptr<net::HttpClient> WebHdfs::AcquireClient() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!idle_clients_.empty()) {
    auto c = std::move(idle_clients_.back());
    idle_clients_.pop_back();
    return c;
  }
  return std::make_unique<net::HttpClient>();
}

void WebHdfs::ReleaseClient(std::unique_ptr<net::HttpClient> client) {
  if (!client) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_clients_.size() < 16) idle_clients_.push_back(std::move(client));
}

Result<net::ClientResponse> WebHdfs::NameNodeCall(const std::string& uri, const Call& call) {
  const std::string what = "WebHDFS " + call.op + " " + uri;
  if (options_.namenodes.empty()) {
    return FailedPrecondition(what +
                              ": no NameNode HTTP address is configured "
                              "(dfs.namenode.http-address; see HADOOP_CONF_DIR)");
  }
  TARN_ASSIGN_OR_RETURN(std::string hdfs_path, HdfsPathOf(uri));
  const bool spnego = options_.kerberos && options_.delegation_token.empty();
  if (spnego) TARN_RETURN_IF_ERROR(net::EnsureKerberosCredential().WithContext(what));
  const size_t n = options_.namenodes.size();
  const size_t first = active_.load() % n;
  Status last;
  for (size_t k = 0; k < n; ++k) {
    const size_t index = (first + k) % n;
    net::ClientRequest req;
    req.method = call.method;
    req.url = OperationUrl(options_.namenodes[index], hdfs_path, call.op, call.params);
    req.follow_redirects = call.follow_redirects;
    req.negotiate = spnego;
    req.connect_timeout_ms = options_.connect_timeout_ms;
    req.timeout_ms = options_.timeout_ms;
    // The sink gets a 2xx body only; an error's JSON stays in the response.
    bool delivered = false;
    if (call.body_sink) {
      req.body_sink = [&](std::string_view piece) {
        delivered = true;
        return call.body_sink(piece);
      };
    }
    ClientLease client(this);
    auto r = client->Send(req);
    if (!r.ok()) {
      last = r.status().WithContext("WebHDFS " + call.op + " " + uri);
      // Another NameNode, unless bytes already went out (the caller resumes from there).
      if (last.code() == StatusCode::kUnavailable && n > 1 && !delivered) continue;
      return last;
    }
    if (IsStandby(*r) && n > 1) {
      last = WebHdfsError(what, *r);
      // Said once per switch: the next answer that comes makes that NameNode the first tried.
      TARN_LOG(kInfo) << "WebHDFS: NameNode " << options_.namenodes[index] << " of "
                      << options_.scheme_authority << " is in standby; trying "
                      << options_.namenodes[(index + 1) % n];
      continue;
    }
    active_.store(index);
    if (r->status >= 300) return WebHdfsError(what, *r);
    return r;
  }
  return last;
}

Result<data::FileStatus> WebHdfs::Stat(const std::string& path) {
  Call call;
  call.op = "GETFILESTATUS";
  TARN_ASSIGN_OR_RETURN(auto r, NameNodeCall(path, call));
  TARN_ASSIGN_OR_RETURN(Json j, ParseJson("WebHDFS GETFILESTATUS " + path, r.body));
  if (!j.contains("FileStatus") || !j["FileStatus"].is_object()) {
    return IoError("WebHDFS GETFILESTATUS " + path + ": no FileStatus in the answer");
  }
  return StatusFromJson(j["FileStatus"], path);
}

Result<std::vector<data::FileStatus>> WebHdfs::List(const std::string& dir) {
  Call call;
  call.op = "LISTSTATUS";
  TARN_ASSIGN_OR_RETURN(auto r, NameNodeCall(dir, call));
  const std::string what = "WebHDFS LISTSTATUS " + dir;
  TARN_ASSIGN_OR_RETURN(Json j, ParseJson(what, r.body));
  const Json* list = nullptr;
  if (j.contains("FileStatuses") && j["FileStatuses"].is_object() &&
      j["FileStatuses"].contains("FileStatus")) {
    list = &j["FileStatuses"]["FileStatus"];
  }
  if (list == nullptr || !list->is_array())
    return IoError(what + ": no FileStatuses in the answer");
  std::vector<data::FileStatus> out;
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  for (const Json& e : *list) {
    const std::string suffix = e.value("pathSuffix", "");
    if (suffix.empty()) {  // LISTSTATUS of a file lists the file itself
      return InvalidArgument(dir + " is a file, not a folder");
    }
    out.push_back(StatusFromJson(e, base + "/" + suffix));
  }
  std::sort(out.begin(), out.end(),
            [](const data::FileStatus& a, const data::FileStatus& b) { return a.name < b.name; });
  return out;
}

Result<std::unique_ptr<data::ReadableFile>> WebHdfs::OpenRead(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(data::FileStatus st, Stat(path));
  if (st.is_dir) return InvalidArgument(path + " is a folder, not a file");
  return std::unique_ptr<data::ReadableFile>(new WebHdfsReadable(this, path, st.length));
}

Result<std::unique_ptr<data::WritableFile>> WebHdfs::OpenWrite(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string hdfs_path, HdfsPathOf(path));
  if (hdfs_path == "/") return InvalidArgument("cannot write to the root folder " + path);
  std::FILE* spool = std::tmpfile();
  if (spool == nullptr) return ErrnoError("creating a temporary file to spool " + path, errno);
  return std::unique_ptr<data::WritableFile>(new WebHdfsWritable(this, path, spool));
}

Status WebHdfs::Upload(const std::string& uri, std::FILE* spool, uint64_t size) {
  const std::string parent = ParentOf(uri);
  const std::string name = uri.substr(parent.size() + 1);
  const std::string temp = parent + "/." + name + TempSuffix();
  const std::string what = "writing " + uri;

  // 1. CREATE on the NameNode: where the bytes go.
  Call create;
  create.method = "PUT";
  create.op = "CREATE";
  create.params = {{"overwrite", "true"}, {"noredirect", "true"}};
  TARN_ASSIGN_OR_RETURN(auto r, NameNodeCall(temp, create));
  std::string location = r.Header("location");
  if (location.empty()) {
    Json j = Json::parse(r.body, nullptr, false);
    if (j.is_object() && j.contains("Location") && j["Location"].is_string()) {
      location = j["Location"].get<std::string>();
    }
  }
  if (location.empty()) {
    return IoError(what + ": WebHDFS CREATE gave no DataNode location (HTTP " +
                   std::to_string(r.status) + ")");
  }

  // 2. The bytes to the DataNode.
  net::ClientRequest put;
  put.method = "PUT";
  put.url = location;
  put.headers.emplace_back("Content-Type", "application/octet-stream");
  put.body_size = static_cast<int64_t>(size);
  put.body_source = [&](char* dst, size_t cap) -> Result<size_t> {
    size_t n = std::fread(dst, 1, cap, spool);
    if (n == 0 && std::ferror(spool)) return ErrnoError("reading the spool of " + uri, errno);
    return n;
  };
  put.connect_timeout_ms = options_.connect_timeout_ms;
  put.timeout_ms = options_.timeout_ms;
  Status uploaded;
  {
    ClientLease client(this);
    auto sent = client->Send(put);
    if (!sent.ok()) {
      uploaded = sent.status().WithContext(what);
    } else if (sent->status != 201 && sent->status != 200) {
      uploaded = WebHdfsError(what + ": DataNode PUT", *sent);
    }
  }

  // 3. Into place.
  if (uploaded.ok()) uploaded = Rename(temp, uri);
  if (!uploaded.ok()) {
    Status cleanup = Delete(temp, false);
    (void)cleanup;  // the write's own error is the one to report
  }
  return uploaded;
}

Status WebHdfs::MakeDirs(const std::string& path) {
  Call call;
  call.method = "PUT";
  call.op = "MKDIRS";
  TARN_ASSIGN_OR_RETURN(auto r, NameNodeCall(path, call));
  Json j = Json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.value("boolean", false)) {
    return IoError("WebHDFS MKDIRS " + path + ": the NameNode refused (" + r.body + ")");
  }
  return Status::Ok();
}

Status WebHdfs::Delete(const std::string& path, bool recursive) {
  Call call;
  call.method = "DELETE";
  call.op = "DELETE";
  call.params = {{"recursive", recursive ? "true" : "false"}};
  auto r = NameNodeCall(path, call);
  if (!r.ok()) return r.status();
  // {"boolean": false} when it did not exist: fine.
  return Status::Ok();
}

Status WebHdfs::Rename(const std::string& from, const std::string& to) {
  TARN_ASSIGN_OR_RETURN(std::string to_path, HdfsPathOf(to));
  Call call;
  call.method = "PUT";
  call.op = "RENAME";
  call.params = {{"destination", to_path}, {"renameoptions", "OVERWRITE"}};
  TARN_ASSIGN_OR_RETURN(auto r, NameNodeCall(from, call));
  // With rename options the NameNode throws on failure; an old one answers {"boolean": false}.
  Json j = Json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("boolean") && !j.value("boolean", true)) {
    return IoError("WebHDFS RENAME " + from + " to " + to + ": the NameNode refused");
  }
  return Status::Ok();
}

Result<std::string> WebHdfs::GetDelegationToken(const std::string& renewer,
                                                const std::string& service) {
  const std::string what = "WebHDFS GETDELEGATIONTOKEN " + options_.scheme_authority;
  if (!options_.kerberos || !options_.delegation_token.empty()) {
    return FailedPrecondition(what +
                              ": a delegation token is given only to a Kerberos (SPNEGO) "
                              "login; this file system uses " +
                              (options_.kerberos ? "a delegation token" : "simple authentication"));
  }
  Call call;
  call.op = "GETDELEGATIONTOKEN";
  call.params = {
      {"renewer", renewer}, {"service", service}, {"kind", yarn::kHdfsDelegationTokenKind}};
  TARN_ASSIGN_OR_RETURN(auto r, NameNodeCall(options_.scheme_authority + "/", call));
  TARN_ASSIGN_OR_RETURN(Json j, ParseJson(what, r.body));
  if (!j.contains("Token") || !j["Token"].is_object() || !j["Token"].contains("urlString") ||
      !j["Token"]["urlString"].is_string()) {
    return IoError(what + ": no Token.urlString in the answer: " + r.body.substr(0, 200));
  }
  return j["Token"]["urlString"].get<std::string>();
}

namespace {

// The HDFS delegation token for `service` in this YARN container's credentials file, as a URL
// string; "" outside a container or when it holds none. A token near its maximum lifetime is
// warned about once: nothing renews it past that.
Result<std::string> ContainerDelegationToken(const std::string& service) {
  const char* path = std::getenv("HADOOP_TOKEN_FILE_LOCATION");
  if (path == nullptr || *path == '\0') return std::string();
  TARN_ASSIGN_OR_RETURN(yarn::Credentials c, yarn::ReadCredentialsFile(path));
  const yarn::Token* token = nullptr;
  const yarn::Token* only = nullptr;  // a single NameNode's token, whatever its service says
  int hdfs_tokens = 0;
  for (const auto& [alias, t] : c.tokens) {
    if (t.kind != yarn::kHdfsDelegationTokenKind) continue;
    ++hdfs_tokens;
    only = &t;
    if (token == nullptr && (t.service == service || alias == service)) token = &t;
  }
  if (token == nullptr && hdfs_tokens == 1) token = only;
  if (token == nullptr) {
    if (hdfs_tokens > 1) {
      TARN_LOG(kWarn) << "the job's credentials (" << path << ") hold no HDFS delegation token "
                      << "for " << service << ", only " << hdfs_tokens << " of other "
                      << "NameNodes: name it in tarn.yarn.hdfs-servers at submission";
    }
    return std::string();
  }
  auto id = yarn::ParseDelegationTokenIdentifier(token->identifier, path);
  if (id.ok()) {
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    const int64_t left_s = (id->max_date_ms - now_ms) / 1000;
    static std::once_flag warned;
    if (left_s < 24 * 3600) {
      std::call_once(warned, [&] {
        TARN_LOG(kWarn) << "the job's HDFS delegation token for " << service << " ends in "
                        << std::max<int64_t>(left_s, 0) / 60
                        << " min (its maximum lifetime, dfs.namenode.delegation.token."
                           "max-lifetime): HDFS refuses it after that";
      });
    }
  }
  return yarn::TokenToUrlString(*token);
}

Result<std::shared_ptr<data::FileSystem>> MakeWebHdfs(const std::string& scheme_authority,
                                                      const std::string& path,
                                                      const Settings& settings) {
  WebHdfsOptions o;
  o.scheme_authority = scheme_authority;
  TARN_ASSIGN_OR_RETURN(auto hadoop, net::HadoopConf::FromSettings(settings));
  const std::string authority = scheme_authority.substr(scheme_authority.find("://") + 3);
  if (StartsWith(scheme_authority, "webhdfs://")) {
    if (authority.empty()) {
      return InvalidArgument(path + ": a webhdfs:// path needs the NameNode's host:port");
    }
    o.namenodes = {authority};
  } else {
    o.namenodes = hadoop.NameNodeHttpAddresses(authority);
  }
  if (o.namenodes.empty()) {
    return FailedPrecondition(
        path +
        ": no NameNode address: set fs.defaultFS and dfs.namenode.http-address in "
        "$HADOOP_CONF_DIR (or tarn.hadoop.conf-dir), or pass them with -D");
  }
  o.user = net::HadoopUserName(settings.GetString("tarn.hdfs.user"));
  o.https = hadoop.HdfsHttpsOnly();
  if (hadoop.KerberosEnabled()) {
    o.kerberos = true;
    if (!net::CurlHasSpnego()) {
      return FailedPrecondition(path +
                                ": hadoop.security.authentication is kerberos, but this "
                                "libcurl has no SPNEGO (GSS-API)");
    }
    const std::string service =
        hadoop.HdfsTokenService(StartsWith(scheme_authority, "webhdfs://") ? "" : authority);
    TARN_ASSIGN_OR_RETURN(o.delegation_token, ContainerDelegationToken(service));
  }
  auto block = settings.GetInt("tarn.hdfs.read-block-mb");
  o.read_block_bytes = static_cast<size_t>(block.ok() && *block > 0 ? *block : 8) << 20;
  auto timeout = settings.GetInt("tarn.hdfs.timeout-s");
  o.timeout_ms = static_cast<int>((timeout.ok() && *timeout > 0 ? *timeout : 300) * 1000);
  return std::shared_ptr<data::FileSystem>(std::make_shared<WebHdfs>(std::move(o)));
}

}  // namespace

void RegisterHdfsFileSystems() {
  data::RegisterFileSystem("hdfs", MakeWebHdfs);
  data::RegisterFileSystem("webhdfs", MakeWebHdfs);
}

}  // namespace tarn::cluster
