#include "daemon/model/lock_info.h"

#include "common/fs.h"
#include "common/lock/env_lock.h"
#include "daemon/model/convert.h"

namespace farm::model {
namespace {

constexpr int kLookBack = 50;

Result<lock::EnvLock> LoadLock(store::LockStore& locks, const std::string& digest) {
  FARM_ASSIGN_OR_RETURN(std::optional<store::LockRow> row, locks.GetLock(digest));
  if (!row) return Status::DataLoss("the lock " + digest + " is not in the store");
  return lock::ParseToml(row->text);
}

// The newest earlier build job of `recipe_name` in the cell of `job` that has a lock.
Result<std::optional<store::JobRow>> PreviousLocked(store::BuildReader& builds,
                                                    const store::JobRow& job,
                                                    const std::string& recipe_name) {
  FARM_ASSIGN_OR_RETURN(
      std::vector<store::BuildRow> earlier,
      builds.ListBuildsMatching({.recipe_name = recipe_name}, job.build_id, kLookBack));
  for (const store::BuildRow& b : earlier) {
    FARM_ASSIGN_OR_RETURN(std::vector<store::JobRow> jobs, builds.ListJobs(b.id));
    for (const store::JobRow& j : jobs) {
      if (j.kind == job.kind && j.cell == job.cell &&
          !ParseBlob<farm::v1::JobNeeds>(j.needs).lock_digest().empty()) {
        return std::optional<store::JobRow>(j);
      }
    }
  }
  return std::optional<store::JobRow>();
}

}  // namespace

Result<std::optional<farm::v1::LockInfo>> JobLockInfo(store::BuildReader& builds,
                                                      store::LockStore& locks,
                                                      const store::JobRow& job,
                                                      const std::string& recipe_name) {
  const std::string digest = ParseBlob<farm::v1::JobNeeds>(job.needs).lock_digest();
  if (digest.empty()) return std::optional<farm::v1::LockInfo>();
  FARM_ASSIGN_OR_RETURN(lock::EnvLock now, LoadLock(locks, digest));
  farm::v1::LockInfo info;
  info.set_digest(digest);
  lock::LockSummary summary = lock::Summarize(now);
  info.set_packages(summary.packages);
  info.set_bytes(summary.bytes);
  if (const lock::LockedPackage* torch = lock::Find(now, "torch")) info.set_torch(torch->version);
  FARM_ASSIGN_OR_RETURN(std::optional<store::JobRow> previous,
                        PreviousLocked(builds, job, recipe_name));
  if (previous) {
    info.set_previous_job_id(previous->id);
    const std::string before = ParseBlob<farm::v1::JobNeeds>(previous->needs).lock_digest();
    if (before != digest) {
      FARM_ASSIGN_OR_RETURN(lock::EnvLock then, LoadLock(locks, before));
      for (std::string& change : lock::Diff(then, now)) info.add_changes(std::move(change));
    }
  }
  return std::optional<farm::v1::LockInfo>(std::move(info));
}

std::string DescribeLockInfo(const farm::v1::LockInfo& info) {
  std::string out = "lock " + info.digest().substr(0, 12) + ": " + std::to_string(info.packages()) +
                    " packages, " + fs::HumanBytes(info.bytes());
  if (info.previous_job_id() == 0) return out;
  out += "; since job " + std::to_string(info.previous_job_id()) + ": ";
  if (info.changes().empty()) return out + "unchanged";
  for (int i = 0; i < info.changes_size(); ++i) out += (i ? ", " : "") + info.changes(i);
  return out;
}

}  // namespace farm::model
