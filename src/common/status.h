// Status and Result<T>: how every fallible operation that the outside world can
// break (files, configs, rows, peers) reports failure. Assertions are reserved
// for programmer errors.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tarn {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad input: a config value, a row, a flag
  kNotFound,            // a path or key that does not exist
  kIoError,             // the OS refused a read or a write
  kCorrupt,             // a file whose checksum or structure is wrong
  kUnsupported,         // a valid request tarn does not implement
  kFailedPrecondition,  // a step run before the one it needs
  kInternal,
  kDeadlineExceeded,  // a network call that ran out of time
  kUnavailable,       // a peer that is gone or not reachable
  kPermissionDenied,  // a peer that failed authentication
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Prepends context ("reading ModelConfig.json: ") to the message.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status PermissionDenied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}

// errno-aware I/O error: "open /x/y: No such file or directory".
Status ErrnoError(const std::string& what, int err);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT(runtime/explicit)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(runtime/explicit)
    assert(!status_.ok() && "Result constructed from an OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace tarn

#define TARN_CONCAT_INNER(a, b) a##b
#define TARN_CONCAT(a, b) TARN_CONCAT_INNER(a, b)

#define TARN_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::tarn::Status _tarn_status = (expr);        \
    if (!_tarn_status.ok()) return _tarn_status; \
  } while (0)

#define TARN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

#define TARN_ASSIGN_OR_RETURN(lhs, expr) \
  TARN_ASSIGN_OR_RETURN_IMPL(TARN_CONCAT(_tarn_result_, __LINE__), lhs, expr)
