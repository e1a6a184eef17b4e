#include "serving/token_auth.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace tarn::serving {

namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TokenAuth::TokenAuth(std::string path) : path_(std::move(path)) {}

Result<TokenAuth::Stamp> TokenAuth::StampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return InvalidArgument("token file " + path + ": " + std::strerror(errno));
  }
  Stamp stamp;
  stamp.size = static_cast<int64_t>(st.st_size);
  stamp.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  stamp.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
  stamp.inode = static_cast<uint64_t>(st.st_ino);
  stamp.world_readable = (st.st_mode & S_IROTH) != 0;
  return stamp;
}

Result<std::vector<std::string>> TokenAuth::ParseTokens(std::string_view text,
                                                        const std::string& path) {
  std::vector<std::string> tokens;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    line = Trim(line);
    if (line.empty() || line.front() == '#') continue;
    for (char ch : line) {
      // RFC 6750 tokens are visible ASCII; a space would split the header.
      if (static_cast<unsigned char>(ch) < 0x21 || static_cast<unsigned char>(ch) > 0x7e) {
        return InvalidArgument(path + ":" + std::to_string(line_no) +
                               ": a token may hold only visible ASCII characters (no spaces); "
                               "one token a line, '#' starts a comment line");
      }
    }
    tokens.emplace_back(line);
  }
  return tokens;
}

Result<std::unique_ptr<TokenAuth>> TokenAuth::Open(const std::string& path) {
  std::unique_ptr<TokenAuth> auth(new TokenAuth(path));
  auth->key_.resize(32);
  TARN_RETURN_IF_ERROR(net::RandomBytes(auth->key_.data(), auth->key_.size()));
  TARN_ASSIGN_OR_RETURN(Stamp stamp, StampOf(path));
  TARN_RETURN_IF_ERROR(auth->Load(stamp));
  if (auth->token_count() == 0) {
    return InvalidArgument("token file " + path +
                           " holds no token: every request would be refused (one token a line)");
  }
  if (stamp.world_readable) {
    TARN_LOG(kWarn) << "serve: token file " << path
                    << " can be read by every user of this machine (chmod 600 it)";
  }
  auth->next_check_ms_.store(SteadyMs() + 1000);
  return auth;
}

net::Digest TokenAuth::DigestOf(std::string_view token) const {
  return net::HmacSha256(key_, token);
}

Status TokenAuth::Load(const Stamp& stamp) {
  TARN_ASSIGN_OR_RETURN(std::string text, ReadFile(path_));
  TARN_ASSIGN_OR_RETURN(std::vector<std::string> tokens, ParseTokens(text, path_));
  auto digests = std::make_shared<Digests>();
  digests->reserve(tokens.size());
  for (const auto& t : tokens) digests->push_back(DigestOf(t));
  digests_.store(std::move(digests));
  stamp_ = stamp;
  return Status::Ok();
}

Status TokenAuth::Reload(bool force) {
  std::lock_guard<std::mutex> lock(reload_mutex_);
  const size_t before = token_count();
  auto stamp = StampOf(path_);
  Status status = stamp.status();
  if (stamp.ok()) {
    if (!force && *stamp == stamp_ && last_error_.empty()) return Status::Ok();
    status = Load(*stamp);
  }
  if (!status.ok()) {
    if (status.message() != last_error_) {
      TARN_LOG(kError) << "serve: cannot reload the token file: " << status.message() << "; the "
                       << before << " tokens read before stay in force";
      last_error_ = status.message();
    }
    return status;
  }
  last_error_.clear();
  const size_t after = token_count();
  if (after == 0) {
    TARN_LOG(kWarn) << "serve: token file " << path_
                    << " now holds no token: every request that needs one is refused";
  } else {
    TARN_LOG(kInfo) << "serve: read " << after << " token" << (after == 1 ? "" : "s") << " from "
                    << path_ << " (had " << before << ")";
  }
  return Status::Ok();
}

size_t TokenAuth::token_count() const {
  auto d = digests_.load();
  return d ? d->size() : 0;
}

TokenAuth::Verdict TokenAuth::Check(std::string_view authorization) {
  const int64_t now = SteadyMs();
  int64_t due = next_check_ms_.load(std::memory_order_relaxed);
  if (now >= due && next_check_ms_.compare_exchange_strong(due, now + 1000)) {
    (void)Reload(false);  // logged there; the old tokens stay on failure
  }
  std::string_view value = Trim(authorization);
  size_t space = value.find(' ');
  if (space == std::string_view::npos || !EqualsIgnoreCase(value.substr(0, space), "bearer")) {
    return Verdict::kMissing;
  }
  std::string_view token = Trim(value.substr(space + 1));
  if (token.empty()) return Verdict::kInvalid;
  const net::Digest presented = DigestOf(token);
  auto digests = digests_.load();
  // Every stored token is compared, so the time says nothing about which one
  // matched or how much of one did.
  bool allowed = false;
  for (const auto& d : *digests) {
    allowed |= net::ConstantTimeEqual(d.data(), presented.data(), presented.size());
  }
  return allowed ? Verdict::kAllowed : Verdict::kInvalid;
}

}  // namespace tarn::serving
