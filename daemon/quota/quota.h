// Per-principal quotas (docs/limits.md, "Quotas"): what one client token's principal (its
// name, as builds record their submitter) may make the farm do and hold.
//   - submissions per window (an hour by default): a token bucket holding at most the
//     limit, refilled evenly over the window; SubmitBuild, CreateSchedule and
//     RunScheduleNow each take one;
//   - queued jobs: the pending and running jobs of its builds, with the new build's;
//   - stored bytes: its builds' recipes, log text and wheels, and the source archives it
//     uploaded, with what the new build or upload adds.
// Limits come from the principal's role (farmd flags), unless an admin set an override for
// the principal (farmctl quota set). By default admins and workers are not limited.
//
// A refusal is ResourceExhausted and says why and, when waiting helps, when to retry: its
// message then ends in "retry after N s" (RetryAfterMs reads it back, and the API layer
// turns it into gRPC's RetryInfo).
//
// Thread-safe.
#ifndef FARM_DAEMON_QUOTA_QUOTA_H_
#define FARM_DAEMON_QUOTA_QUOTA_H_

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/store/store.h"

namespace farm::quota {

inline constexpr int64_t kUnlimited = store::kQuotaUnlimited;

struct Limits {
  int64_t submissions = kUnlimited;  // per window
  int64_t queued_jobs = kUnlimited;
  int64_t stored_bytes = kUnlimited;
};

struct Policy {
  int64_t window_ms = 3600 * 1000;
  std::map<std::string, Limits> by_role;  // a role not named here is not limited

  // Submitters: 120 submissions an hour, 2,000 queued jobs, 100 GiB stored.
  static Policy Defaults();
};

// Reads "submissions=120,queued-jobs=2000,stored-bytes=107374182400" into `limits` (the
// keys given replace theirs; "unlimited" lifts one). InvalidArgument names what is wrong.
Status ParseLimits(const std::string& spec, Limits* limits);
// The same in words: "120 submissions per hour, 2000 queued jobs, 100 GiB stored".
std::string DescribeLimits(const Limits& limits, int64_t window_ms);

// A refusal over a quota; with retry_after_ms > 0 its message ends in "retry after N s"
// (N rounded up).
Status Exhausted(const std::string& why, int64_t retry_after_ms);
// The delay a refusal names, nullopt when it names none.
std::optional<int64_t> RetryAfterMs(const Status& status);

// What GetQuota shows.
struct QuotaView {
  Limits limits;  // in force
  std::optional<store::QuotaOverrideRow> override_row;
  store::PrincipalUsage usage;
  double submissions_left = 0;  // in the bucket now; the limit when unlimited
};

class QuotaKeeper;

// Bytes an upload in progress counts against its principal until it is recorded (then
// the store counts them) or given up: released when destroyed.
class Reservation {
 public:
  Reservation() = default;
  Reservation(Reservation&& other) noexcept { *this = std::move(other); }
  Reservation& operator=(Reservation&& other) noexcept;
  ~Reservation();

 private:
  friend class QuotaKeeper;
  QuotaKeeper* keeper_ = nullptr;
  std::string principal_;
  int64_t bytes_ = 0;
};

class QuotaKeeper {
 public:
  QuotaKeeper(store::Store* store, const Clock* clock, Policy policy);

  const Policy& policy() const { return policy_; }

  // Limits in force for `principal`, whose token has `role`.
  Result<Limits> LimitsFor(const std::string& principal, const std::string& role);

  // Takes one submission from the principal's bucket, or refuses (ResourceExhausted, with
  // when the next is accepted).
  Status TakeSubmission(const std::string& principal, const std::string& role);

  // Checks that `new_jobs` more queued jobs and `new_bytes` more stored bytes fit the
  // principal's limits. On success returns a lock the caller holds until it has stored
  // what it checked, so that two submissions of one principal cannot both pass on the same
  // usage. Refusals say what the principal holds.
  Result<std::unique_lock<std::mutex>> Admit(const std::string& principal, const std::string& role,
                                             int64_t new_jobs, int64_t new_bytes);

  // Admit for an upload of `bytes` that takes a while: instead of a lock, the bytes count
  // against the principal (in Admit and ReserveBytes) while the reservation lives.
  Result<Reservation> ReserveBytes(const std::string& principal, const std::string& role,
                                   int64_t bytes);

  // The role of `principal` for submissions made without its token (a schedule's
  // creator): the strongest client role of its live tokens, "submitter" when it has none.
  Result<std::string> RoleOf(const std::string& principal);

  Result<QuotaView> View(const std::string& principal, const std::string& role);
  // Stores an admin's override (kQuotaRoleDefault in every field removes it).
  Status SetOverride(const store::QuotaOverrideRow& row);

 private:
  friend class Reservation;
  // The usage check of Admit and ReserveBytes; requires the principal's admit_ stripe.
  Status CheckRoom(const std::string& principal, const std::string& role, int64_t new_jobs,
                   int64_t new_bytes);
  void Release(const std::string& principal, int64_t bytes);

  // What a principal used of its submissions, draining to 0 (the limit minus it is what
  // it has left).
  struct Bucket {
    double used = 0;
    int64_t at_ms = 0;
  };
  Result<std::optional<store::QuotaOverrideRow>> OverrideOf(const std::string& principal);
  // The bucket drained to now at the pace of `capacity` (a negative one: unlimited);
  // requires mu_.
  Bucket& Refilled(const std::string& principal, int64_t capacity);

  static constexpr size_t kMaxRemembered = 100'000;  // principals; beyond, start afresh
  static constexpr size_t kStripes = 64;

  store::Store* store_;
  const Clock* clock_;
  const Policy policy_;
  std::mutex mu_;  // guards buckets_, overrides_ and reserved_
  std::unordered_map<std::string, Bucket> buckets_;
  std::unordered_map<std::string, std::optional<store::QuotaOverrideRow>> overrides_;
  std::unordered_map<std::string, int64_t> reserved_;  // bytes of uploads in progress
  std::array<std::mutex, kStripes> admit_;             // Admit's locks, by hash of the principal
};

}  // namespace farm::quota

#endif  // FARM_DAEMON_QUOTA_QUOTA_H_
