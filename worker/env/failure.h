// Why provisioning an environment failed, as the job runner reports it. Every failure of
// this component is a farm::Status whose code names its cause (the table below), so
// callers keep using Status and still tell an infrastructure failure (retried elsewhere,
// never blamed on the recipe) from a bad request:
//
//   kUpstreamUnreachable  Unavailable, DeadlineExceeded   connect, reset, 5xx, timeout
//   kChecksumMismatch     DataLoss                        sha256 or size differs
//   kDiskFull             ResourceExhausted               ENOSPC, EDQUOT, cache bound
//   kNotFoundUpstream     NotFound                        404, no such version or file
//   kInvalidRequest       InvalidArgument, FailedPrecondition   the spec or config
//   kInternal             anything else
// Pure functions; safe from any thread.
#ifndef FARM_WORKER_ENV_FAILURE_H_
#define FARM_WORKER_ENV_FAILURE_H_

#include <string>

#include "common/status.h"

namespace farm::env {

enum class ProvisionFailure {
  kNone,
  kUpstreamUnreachable,
  kChecksumMismatch,
  kDiskFull,
  kNotFoundUpstream,
  kInvalidRequest,
  kInternal,
};

// "upstream-unreachable", "checksum-mismatch", ...; "none" for kNone.
const char* ProvisionFailureName(ProvisionFailure failure);

// The cause of `status` by the table above; kNone for OK.
ProvisionFailure FailureOf(const Status& status);

// True for causes that say nothing about the recipe (retry on another worker or later).
bool IsInfrastructureFailure(ProvisionFailure failure);

// The Status for a failed system call on `path`: ResourceExhausted for ENOSPC and
// EDQUOT, Internal otherwise, with strerror(err) in the message.
Status ErrnoStatus(int err, const std::string& what, const std::string& path);

}  // namespace farm::env

#endif  // FARM_WORKER_ENV_FAILURE_H_
