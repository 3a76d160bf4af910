#include "worker/env/failure.h"

#include <cerrno>
#include <cstring>

namespace farm::env {

const char* ProvisionFailureName(ProvisionFailure failure) {
  switch (failure) {
    case ProvisionFailure::kNone:
      return "none";
    case ProvisionFailure::kUpstreamUnreachable:
      return "upstream-unreachable";
    case ProvisionFailure::kChecksumMismatch:
      return "checksum-mismatch";
    case ProvisionFailure::kDiskFull:
      return "disk-full";
    case ProvisionFailure::kNotFoundUpstream:
      return "not-found-upstream";
    case ProvisionFailure::kInvalidRequest:
      return "invalid-request";
    case ProvisionFailure::kInternal:
      return "internal";
  }
  return "internal";
}

ProvisionFailure FailureOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return ProvisionFailure::kNone;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return ProvisionFailure::kUpstreamUnreachable;
    case StatusCode::kDataLoss:
      return ProvisionFailure::kChecksumMismatch;
    case StatusCode::kResourceExhausted:
      return ProvisionFailure::kDiskFull;
    case StatusCode::kNotFound:
      return ProvisionFailure::kNotFoundUpstream;
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
      return ProvisionFailure::kInvalidRequest;
    default:
      return ProvisionFailure::kInternal;
  }
}

bool IsInfrastructureFailure(ProvisionFailure failure) {
  return failure == ProvisionFailure::kUpstreamUnreachable ||
         failure == ProvisionFailure::kChecksumMismatch || failure == ProvisionFailure::kDiskFull ||
         failure == ProvisionFailure::kInternal;
}

Status ErrnoStatus(int err, const std::string& what, const std::string& path) {
  std::string message = what + " " + path + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return Status::ResourceExhausted(message);
  return Status::Internal(message);
}

}  // namespace farm::env
