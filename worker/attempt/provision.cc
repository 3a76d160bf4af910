// The provisioning step of an attempt whose lease carries its cell's environment
// (docs/environments.md): the worker makes it, or clones its cached snapshot, into the
// job's workspace, saying what it does in the job's log.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "common/lock/env_lock.h"
#include "worker/attempt/attempt_context.h"
#include "worker/env/failure.h"

namespace farm::agent {
namespace {

std::string Mb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// "Python 3.12 + torch 2.11.0+cu130 + CUDA 13.0, locked: 33 packages, 4.5 GiB (lock 3f2a9c41d0e2)"
std::string Describe(const farm::v1::ProvisionSpec& spec) {
  std::string out = "Python " + spec.python();
  Result<lock::EnvLock> locked = lock::ParseToml(spec.lock());
  if (!locked.ok()) return out;  // the provisioner says why
  if (const lock::LockedPackage* torch = lock::Find(*locked, "torch")) {
    out += " + torch " + torch->version;
    if (!spec.torch_index().empty()) out += " (release candidate, from " + spec.torch_index() + ")";
  }
  if (!spec.cuda().empty()) out += " + CUDA " + spec.cuda();
  return out + ", locked: " + lock::DescribeSummary(lock::Summarize(*locked)) + " (lock " +
         lock::Digest(*locked).substr(0, 12) + ")";
}

}  // namespace

std::optional<std::string> DownloadTally::Add(const env::ProvisionProgress& p) {
  if (p.done < 0) return "";  // not a download: said as it is
  Seen& seen = downloads_[std::string(env::ProvisionPhaseName(p.phase)) + p.message];
  bytes_ += std::max<int64_t>(0, p.done - seen.done);
  seen.done = std::max(seen.done, p.done);
  if (p.total > 0) return " (" + Mb(p.done) + " of " + Mb(p.total) + ")";
  // An index page without sizes: the download's end is not known, so its lines come at
  // doubling sizes, not one per block.
  if (p.done < seen.next_line) return std::nullopt;
  seen.next_line = std::max<int64_t>(2 * p.done, kFirstLineBytes);
  return " (" + Mb(p.done) + " so far)";
}

Result<env::ProvisionedEnv> AttemptContext::ProvisionEnvironment(LogShipper& log,
                                                                 const std::string& ws) {
  auto system = [&log, this](const std::string& text) {
    log.Append(farm::v1::SYSTEM, "farm: " + text);
  };
  if (deps_.environments == nullptr) {
    return Status::FailedPrecondition("this worker does not provision environments");
  }
  const farm::v1::ProvisionSpec& spec = job_.environment();
  system("provisions " + Describe(spec) + ", " + deps_.environments->SourceText());
  DownloadTally tally;
  int64_t started = deps_.clock->SteadyMs();
  auto made =
      deps_.environments->Provision(spec, settings_.caps, ws, [&](const env::ProvisionProgress& p) {
        std::string line =
            std::string("provision ") + env::ProvisionPhaseName(p.phase) + ": " + p.message;
        if (std::optional<std::string> said = tally.Add(p)) system(line + *said);
      });
  if (!made.ok()) return made.status();
  // What the provisioner counted (blobs it skipped as already cached are not downloads).
  const int64_t fetched = made->downloaded_bytes;
  const env::PhaseTimes& t = made->times;
  int64_t total_ms = deps_.clock->SteadyMs() - started;
  if (made->snapshot_built) {
    system("environment ready in " + std::to_string(total_ms) + " ms: built snapshot " +
           made->key.substr(0, 12) + ", " + Mb(fetched) + " downloaded (Python " +
           (made->python_from_archive ? "from its archive" : "of the host") + " " +
           std::to_string(t.python_ms) + " ms, toolkit " +
           (spec.cuda().empty()         ? "none"
            : made->toolkit_from_redist ? "from redist archives"
                                        : "of the host") +
           " " + std::to_string(t.toolkit_ms) + " ms, packages " + std::to_string(t.snapshot_ms) +
           " ms, clone " + std::to_string(t.clone_ms) + " ms)");
  } else {
    system("environment ready in " + std::to_string(total_ms) + " ms: cached snapshot " +
           made->key.substr(0, 12) + ", " +
           (fetched > 0 ? Mb(fetched) + " downloaded" : std::string("nothing downloaded")) +
           " (clone " + std::to_string(t.clone_ms) + " ms)");
  }
  for (const std::string& note : made->notes) system("provision note: " + note);
  return made;
}

Outcome AttemptContext::ProvisioningOutcome(const Status& status) const {
  env::ProvisionFailure cause = env::FailureOf(status);
  std::string detail = std::string("provisioning failed (") + env::ProvisionFailureName(cause) +
                       "): " + status.message();
  // A spec the provisioner refuses is the recipe's; anything about the network, the
  // upstream's bytes or this worker's disk is retried elsewhere or later.
  if (cause == env::ProvisionFailure::kInvalidRequest) {
    return {farm::v1::CAUSE_BUILD_FAILED, detail, -1, 0};
  }
  return {farm::v1::CAUSE_INFRASTRUCTURE, detail, -1, 0};
}

}  // namespace farm::agent
