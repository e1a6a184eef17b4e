// Bearer-token authentication for `tarn serve` (tarn.serving.auth.token-file):
// the tokens are the lines of a file (blank lines and lines starting with '#'
// ignored), kept only as keyed SHA-256 digests and compared in constant time.
// The file is checked at most once a second (size, modification time, inode)
// and on Reload() (SIGHUP); a changed file replaces the tokens, and one that
// cannot be read or parsed keeps the old tokens and logs why.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "net/hmac.h"

namespace tarn::serving {

class TokenAuth {
 public:
  enum class Verdict { kAllowed, kMissing, kInvalid };

  // Reads the file; an unreadable file, a malformed line or a file without a
  // token is an error naming the file (and the line).
  static Result<std::unique_ptr<TokenAuth>> Open(const std::string& path);

  // The tokens of a file's text, in order; errors name path:line and never
  // repeat the token.
  static Result<std::vector<std::string>> ParseTokens(std::string_view text,
                                                      const std::string& path);

  // The value of a request's Authorization header: kAllowed for
  // "Bearer <a token of the file>", kMissing when there is no bearer token,
  // kInvalid for any other token. Thread-safe; rechecks the file at most
  // once a second.
  Verdict Check(std::string_view authorization);

  // Rereads the file now if it changed (force: even if it looks unchanged).
  // On failure the tokens read before stay in force and the error is
  // returned (and logged).
  Status Reload(bool force);

  size_t token_count() const;
  const std::string& path() const { return path_; }

 private:
  struct Stamp {
    int64_t size = -1, mtime_ns = -1, ctime_ns = -1;
    uint64_t inode = 0;
    bool world_readable = false;
    bool operator==(const Stamp&) const = default;
  };
  using Digests = std::vector<net::Digest>;

  explicit TokenAuth(std::string path);
  static Result<Stamp> StampOf(const std::string& path);
  net::Digest DigestOf(std::string_view token) const;
  // Reads, parses and installs the file; stamp_ is updated on success.
  Status Load(const Stamp& stamp);

  const std::string path_;
  std::string key_;  // random, per process: the digests say nothing outside it
  std::atomic<std::shared_ptr<const Digests>> digests_;
  std::atomic<int64_t> next_check_ms_{0};
  std::mutex reload_mutex_;  // guards the members below
  Stamp stamp_;
  std::string last_error_;  // logged once until it changes
};

}  // namespace tarn::serving
