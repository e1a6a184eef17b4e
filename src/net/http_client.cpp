#include "net/http_client.h"

#include <curl/curl.h>
#include <unistd.h>  // for access

#include <algorithm>  // for std::min
#include <cerrno>
#include <cstdio>   // for SEEK_SET
#include <cstdlib>  // for getenv, realpath, free
#include <cstring>  // for memcpy
#include <mutex>

#include "common/strings.h"  // for ToLower, Trim, EqualsIgnoreCase, StartsWith
#include "net/kerberos.h"    // for SpnegoRefusedError

namespace tarn::net {
namespace {

std::string& DefaultCaFile() {
  static std::string path;
  return path;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// State shared with libcurl's callbacks during one Send().
struct Transfer {
  CURL* curl = nullptr;
  const ClientRequest* request = nullptr;
  ClientResponse* response = nullptr;
  size_t body_pos = 0;  // in request->body
  Status callback_error;
};

size_t OnWrite(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (t->request->body_sink && status >= 200 && status < 300) {
    Status s = t->request->body_sink(std::string_view(data, n));
    if (!s.ok()) {
      t->callback_error = s;
      return 0;  // aborts with CURLE_WRITE_ERROR
    }
    return n;
  }
  t->response->body.append(data, n);
  return n;
}

size_t OnRead(char* dst, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t cap = size * count;
  if (t->request->body_source) {
    auto r = t->request->body_source(dst, cap);
    if (!r.ok()) {
      t->callback_error = r.status();
      return CURL_READFUNC_ABORT;
    }
    return std::min(*r, cap);
  }
  const std::string& body = t->request->body;
  const size_t n = std::min(cap, body.size() - t->body_pos);
  std::memcpy(dst, body.data() + t->body_pos, n);
  t->body_pos += n;
  return n;
}

// libcurl rewinds the body when a redirect or an authentication round trip resends it.
int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (t->request->body_source || origin != SEEK_SET || offset < 0 ||
      static_cast<size_t>(offset) > t->request->body.size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  t->body_pos = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  if (StartsWith(line, "HTTP/")) {  // a new response (a redirect, 100 Continue, the final one)
    t->response->headers.clear();
    return n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;  // the blank line at the end
  t->response->headers.emplace_back(ToLower(Trim(line.substr(0, colon))),
                                    std::string(Trim(line.substr(colon + 1))));
  return n;
}

Status TransportError(CURLcode code, const std::string& what, const char* detail) {
  std::string message = what + ": " + curl_easy_strerror(code);
  if (detail != nullptr && detail[0] != '\0') message += " (" + std::string(detail) + ")";
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return DeadlineExceeded(message);
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
      return Unavailable(message);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return InvalidArgument(message);
    default:
      return IoError(message);
  }
}

std::string EncodeExcept(std::string_view s, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                            c == '~' || (keep_slash && c == '/');
    if (unreserved) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

struct HttpClient::Impl {
  CURL* curl = nullptr;
};

HttpClient::HttpClient() : impl_(std::make_unique<Impl>()) {
  GlobalInit();
  impl_->curl = curl_easy_init();
}

HttpClient::~HttpClient() {
  if (impl_->curl != nullptr) curl_easy_cleanup(impl_->curl);
}

std::string ClientResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

Result<ClientResponse> HttpClient::Send(const ClientRequest& request) {
  const std::string what = request.method + " " + request.url;
  CURL* curl = impl_->curl;
  if (curl == nullptr) return Internal(what + ": curl_easy_init failed");
  if (request.url.empty()) return InvalidArgument("HTTP request without a URL");
  curl_easy_reset(curl);  // keeps the connection cache

  ClientResponse response;
  Transfer transfer;
  transfer.curl = curl;
  transfer.request = &request;
  transfer.response = &response;
  char error_buffer[CURL_ERROR_SIZE] = {0};

  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max(0, request.timeout_ms)));
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, static_cast<long>(request.max_redirects));
  // A 307/308 keeps the method and body (the default); 301/302/303 too, for POST.
  curl_easy_setopt(curl, CURLOPT_POSTREDIR, static_cast<long>(CURL_REDIR_POST_ALL));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnWrite);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_READFUNCTION, OnRead);
  curl_easy_setopt(curl, CURLOPT_READDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, OnSeek);
  curl_easy_setopt(curl, CURLOPT_SEEKDATA, &transfer);
  const std::string& ca_file = request.ca_file.empty() ? DefaultCaFile() : request.ca_file;
  if (!ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file.c_str());
  if (request.negotiate) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_NEGOTIATE));
    curl_easy_setopt(curl, CURLOPT_USERPWD, ":");    // curl before 7.85 wants a (dummy) user
    curl_easy_setopt(curl, CURLOPT_COOKIEFILE, "");  // keeps hadoop.auth between requests
  }

  const bool streamed = static_cast<bool>(request.body_source);
  const curl_off_t body_size = streamed ? static_cast<curl_off_t>(request.body_size)
                                        : static_cast<curl_off_t>(request.body.size());
  const std::string& m = request.method;
  if (m == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else if (m == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (m == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, body_size);
  } else if (m == "PUT") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, body_size);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, m.c_str());
    if (streamed || !request.body.empty()) {
      curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, body_size);
    }
  }

  curl_slist* headers = nullptr;
  for (const auto& [k, v] : request.headers) {
    headers = curl_slist_append(headers, (k + ": " + v).c_str());
  }
  // No "Expect: 100-continue" round trip before a body.
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (!transfer.callback_error.ok()) return transfer.callback_error.WithContext(what);
  if (code != CURLE_OK) return TransportError(code, what, error_buffer);

  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  if (request.negotiate && response.status == 401 &&
      StartsWith(ToLower(response.Header("www-authenticate")), "negotiate")) {
    return SpnegoRefusedError(what, request.url);
  }
  char* effective = nullptr;
  if (curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK &&
      effective != nullptr) {
    response.final_url = effective;
  } else {
    response.final_url = request.url;
  }
  return response;
}

Result<ClientResponse> HttpClient::Get(const std::string& url) {
  ClientRequest r;
  r.url = url;
  return Send(r);
}

Result<ClientResponse> HttpClient::Delete(const std::string& url) {
  ClientRequest r;
  r.method = "DELETE";
  r.url = url;
  return Send(r);
}

Result<ClientResponse> HttpClient::Put(const std::string& url, std::string body,
                                       const std::string& content_type) {
  ClientRequest r;
  r.method = "PUT";
  r.url = url;
  r.body = std::move(body);
  r.headers.emplace_back("Content-Type", content_type);
  return Send(r);
}

Result<ClientResponse> HttpClient::Post(const std::string& url, std::string body,
                                        const std::string& content_type) {
  ClientRequest r;
  r.method = "POST";
  r.url = url;
  r.body = std::move(body);
  r.headers.emplace_back("Content-Type", content_type);
  return Send(r);
}

Status ConfigureClusterTls(const Settings& settings) {
  std::string what = "tarn.tls.ca-file";
  std::string path = settings.GetString(what);
  if (path.empty()) {
    const char* shipped = std::getenv(kContainerCaFileEnv);
    if (shipped != nullptr && *shipped != '\0') {
      what = std::string("$") + kContainerCaFileEnv + " (the CA file shipped with the job)";
      path = shipped;
    }
  }
  if (path.empty()) {
    DefaultCaFile().clear();
    return Status::Ok();
  }
  if (::access(path.c_str(), R_OK) != 0) return ErrnoError(what + " " + path, errno);
  // Absolute: a later chdir must not lose it.
  char* real = ::realpath(path.c_str(), nullptr);
  if (real != nullptr) {
    path = real;
    std::free(real);
  }
  DefaultCaFile() = path;
  return Status::Ok();
}

const std::string& ClusterCaFile() { return DefaultCaFile(); }

Status HttpStatusError(const std::string& what, const ClientResponse& response) {
  std::string message = what + ": HTTP " + std::to_string(response.status);
  std::string body(Trim(response.body));
  if (!body.empty()) {
    if (body.size() > 400) body = body.substr(0, 400) + "...";
    message += ": " + body;
  }
  switch (response.status) {
    case 400:
      return InvalidArgument(message);
    case 401:
    case 403:
      return PermissionDenied(message);
    case 404:
      return NotFound(message);
    case 408:
    case 504:
      return DeadlineExceeded(message);
    case 503:
      return Unavailable(message);
    default:
      return IoError(message);
  }
}

std::string UrlEncode(std::string_view s) { return EncodeExcept(s, false); }
std::string UrlEncodePath(std::string_view path) { return EncodeExcept(path, true); }

}  // namespace tarn::net
