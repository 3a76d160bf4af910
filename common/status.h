// Status and Result<T>: how library code reports failure. Codes mirror grpc::StatusCode so
// the API layer converts with a table lookup. Exceptions never cross a library boundary.
//
//   Result<Build> r = store.GetBuild(id);
//   if (!r.ok()) return r.status();
//   Use(r.value());
#ifndef FARM_COMMON_STATUS_H_
#define FARM_COMMON_STATUS_H_

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace farm {

enum class StatusCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// Returns the upper-case name of `code` ("NOT_FOUND").
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status Unauthenticated(std::string m) {
    return {StatusCode::kUnauthenticated, std::move(m)};
  }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) {
    return {StatusCode::kDeadlineExceeded, std::move(m)};
  }
  static Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns "OK" or "CODE: message".
  std::string ToString() const;

  // Returns a copy whose message is "context: message".
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(data_); }
  // REQUIRES: !ok() for a meaningful status; returns OK when a value is held.
  Status status() const { return ok() ? Status() : std::get<Status>(data_); }
  // REQUIRES: ok().
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace farm

#define FARM_CONCAT_INNER_(a, b) a##b
#define FARM_CONCAT_(a, b) FARM_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define FARM_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::farm::Status farm_status_ = (expr);        \
    if (!farm_status_.ok()) return farm_status_; \
  } while (0)

// Declares `lhs` from a Result expression, returning its Status on failure.
#define FARM_ASSIGN_OR_RETURN(lhs, expr) \
  FARM_ASSIGN_OR_RETURN_IMPL_(FARM_CONCAT_(farm_result_, __LINE__), lhs, expr)
#define FARM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#endif  // FARM_COMMON_STATUS_H_
