#include "daemon/quota/quota.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <utility>

#include "common/fs.h"

namespace farm::quota {
namespace {

constexpr char kRetryAfter[] = "retry after ";

std::string Window(int64_t window_ms) {
  if (window_ms == 3600 * 1000) return "hour";
  return std::to_string((window_ms + 999) / 1000) + " s";
}

std::string Bytes(int64_t n) {
  std::string exact = std::to_string(n) + " bytes";
  return n < (1 << 20) ? exact : fs::HumanBytes(n) + " (" + exact + ")";
}

int ClientRank(const std::string& role) {
  if (role == "viewer") return 1;
  if (role == "submitter") return 2;
  if (role == "admin") return 3;
  return 0;
}

const char kHowToRaise[] =
    "an admin raises it with farmctl quota set, or for every principal of the role with "
    "farmd --quota-";

}  // namespace

Policy Policy::Defaults() {
  Policy p;
  p.by_role["submitter"] =
      Limits{.submissions = 120, .queued_jobs = 2000, .stored_bytes = int64_t{100} << 30};
  return p;
}

Status ParseLimits(const std::string& spec, Limits* limits) {
  std::stringstream in(spec);
  std::string item;
  for (int i = 0; i < 16 && std::getline(in, item, ','); ++i) {
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    int64_t* field = key == "submissions"    ? &limits->submissions
                     : key == "queued-jobs"  ? &limits->queued_jobs
                     : key == "stored-bytes" ? &limits->stored_bytes
                                             : nullptr;
    if (field == nullptr) {
      return Status::InvalidArgument("unknown quota \"" + key +
                                     "\" (expected submissions, queued-jobs, stored-bytes)");
    }
    if (value == "unlimited") {
      *field = kUnlimited;
      continue;
    }
    size_t used = 0;
    int64_t n = -1;
    try {
      n = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || n < 0) {
      return Status::InvalidArgument("quota " + key +
                                     " must be a number of at least 0 or "
                                     "\"unlimited\", got \"" +
                                     value + "\"");
    }
    *field = n;
  }
  return Status::Ok();
}

std::string DescribeLimits(const Limits& l, int64_t window_ms) {
  auto one = [](int64_t v, const std::string& what) {
    return v < 0 ? "unlimited " + what : std::to_string(v) + " " + what;
  };
  return one(l.submissions, "submissions per " + Window(window_ms)) + ", " +
         one(l.queued_jobs, "queued jobs") + ", " +
         (l.stored_bytes < 0 ? "unlimited stored bytes"
                             : fs::HumanBytes(l.stored_bytes) + " stored");
}

Status Exhausted(const std::string& why, int64_t retry_after_ms) {
  if (retry_after_ms <= 0) return Status::ResourceExhausted(why);
  int64_t s = std::max<int64_t>(1, (retry_after_ms + 999) / 1000);
  return Status::ResourceExhausted(why + "; " + kRetryAfter + std::to_string(s) + " s");
}

std::optional<int64_t> RetryAfterMs(const Status& status) {
  if (status.code() != StatusCode::kResourceExhausted) return std::nullopt;
  const std::string& m = status.message();
  size_t at = m.rfind(kRetryAfter);
  if (at == std::string::npos) return std::nullopt;
  size_t digits = at + sizeof(kRetryAfter) - 1;
  size_t end = digits;
  while (end < m.size() && end - digits < 12 && m[end] >= '0' && m[end] <= '9') ++end;
  if (end == digits || m.compare(end, 2, " s") != 0) return std::nullopt;
  return std::stoll(m.substr(digits, end - digits)) * 1000;
}

QuotaKeeper::QuotaKeeper(store::Store* store, const Clock* clock, Policy policy)
    : store_(store), clock_(clock), policy_(std::move(policy)) {}

Result<std::optional<store::QuotaOverrideRow>> QuotaKeeper::OverrideOf(
    const std::string& principal) {
  {
    std::lock_guard lock(mu_);
    auto it = overrides_.find(principal);
    if (it != overrides_.end()) return it->second;
  }
  FARM_ASSIGN_OR_RETURN(auto row, store_->GetQuotaOverride(principal));
  std::lock_guard lock(mu_);
  if (overrides_.size() >= kMaxRemembered) overrides_.clear();
  overrides_[principal] = row;
  return row;
}

Result<Limits> QuotaKeeper::LimitsFor(const std::string& principal, const std::string& role) {
  Limits limits;
  auto it = policy_.by_role.find(role);
  if (it != policy_.by_role.end()) limits = it->second;
  FARM_ASSIGN_OR_RETURN(auto row, OverrideOf(principal));
  if (row) {
    for (auto [field, value] : {std::pair{&limits.submissions, row->submissions},
                                {&limits.queued_jobs, row->queued_jobs},
                                {&limits.stored_bytes, row->stored_bytes}}) {
      if (value != store::kQuotaRoleDefault) *field = value;
    }
  }
  return limits;
}

QuotaKeeper::Bucket& QuotaKeeper::Refilled(const std::string& principal, int64_t capacity) {
  const int64_t now = clock_->SteadyMs();
  if (buckets_.size() >= kMaxRemembered && !buckets_.count(principal)) buckets_.clear();
  auto [it, fresh] = buckets_.try_emplace(principal, Bucket{0, now});
  Bucket& b = it->second;
  // What was used drains at the limit's pace, and all of it within one window: so a
  // principal whose limit changes (set, lowered, or first set after unlimited use) keeps
  // what it used this window instead of starting full.
  const double rate = std::max(static_cast<double>(capacity), b.used);
  if (!fresh && now > b.at_ms) {
    b.used -= static_cast<double>(now - b.at_ms) * rate / static_cast<double>(policy_.window_ms);
  }
  b.used = std::max(b.used, 0.0);
  b.at_ms = std::max(b.at_ms, now);
  return b;
}

Status QuotaKeeper::TakeSubmission(const std::string& principal, const std::string& role) {
  FARM_ASSIGN_OR_RETURN(Limits limits, LimitsFor(principal, role));
  if (limits.submissions < 0) {
    std::lock_guard lock(mu_);
    Refilled(principal, limits.submissions).used += 1;  // counted should a limit be set
    return Status::Ok();
  }
  const std::string who = "\"" + principal + "\"";
  if (limits.submissions == 0) {
    return Exhausted("quota: " + who + " may not submit (its submissions quota is 0; " +
                         kHowToRaise + role + ")",
                     0);
  }
  std::lock_guard lock(mu_);
  Bucket& b = Refilled(principal, limits.submissions);
  const double tokens = static_cast<double>(limits.submissions) - b.used;
  if (tokens >= 1) {
    b.used += 1;
    return Status::Ok();
  }
  const double per_token_ms = static_cast<double>(policy_.window_ms) /
                              std::max(static_cast<double>(limits.submissions), b.used);
  // The epsilon keeps a rounding error of `used` from adding a millisecond (and a second).
  auto wait_ms = static_cast<int64_t>(std::ceil((1 - tokens) * per_token_ms - 1e-6));
  return Exhausted("quota: " + who + " may submit " + std::to_string(limits.submissions) +
                       " times per " + Window(policy_.window_ms) +
                       " and has used them (submissions; " + kHowToRaise + role + ")",
                   wait_ms);
}

Result<std::unique_lock<std::mutex>> QuotaKeeper::Admit(const std::string& principal,
                                                        const std::string& role, int64_t new_jobs,
                                                        int64_t new_bytes) {
  std::unique_lock held(admit_[std::hash<std::string>()(principal) % kStripes]);
  FARM_RETURN_IF_ERROR(CheckRoom(principal, role, new_jobs, new_bytes));
  return held;
}

Result<Reservation> QuotaKeeper::ReserveBytes(const std::string& principal, const std::string& role,
                                              int64_t bytes) {
  std::unique_lock held(admit_[std::hash<std::string>()(principal) % kStripes]);
  FARM_RETURN_IF_ERROR(CheckRoom(principal, role, 0, bytes));
  Reservation r;
  r.keeper_ = this;
  r.principal_ = principal;
  r.bytes_ = bytes;
  std::lock_guard lock(mu_);
  reserved_[principal] += bytes;
  return r;
}

void QuotaKeeper::Release(const std::string& principal, int64_t bytes) {
  std::lock_guard lock(mu_);
  auto it = reserved_.find(principal);
  if (it == reserved_.end()) return;
  it->second -= bytes;
  if (it->second <= 0) reserved_.erase(it);
}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this == &other) return *this;
  if (keeper_ != nullptr) keeper_->Release(principal_, bytes_);
  keeper_ = std::exchange(other.keeper_, nullptr);
  principal_ = std::move(other.principal_);
  bytes_ = other.bytes_;
  return *this;
}

Reservation::~Reservation() {
  if (keeper_ != nullptr) keeper_->Release(principal_, bytes_);
}

Status QuotaKeeper::CheckRoom(const std::string& principal, const std::string& role,
                              int64_t new_jobs, int64_t new_bytes) {
  FARM_ASSIGN_OR_RETURN(Limits limits, LimitsFor(principal, role));
  if (limits.queued_jobs < 0 && limits.stored_bytes < 0) return Status::Ok();
  const std::string who = "\"" + principal + "\"";
  if (limits.queued_jobs >= 0 && new_jobs > limits.queued_jobs) {
    return Exhausted("quota: this submission queues " + std::to_string(new_jobs) +
                         " jobs, more than the " + std::to_string(limits.queued_jobs) + " " + who +
                         " may have queued at once (queued-jobs; " + kHowToRaise + role +
                         "); narrow the matrix",
                     0);
  }
  FARM_ASSIGN_OR_RETURN(store::PrincipalUsage usage, store_->GetPrincipalUsage(principal));
  {
    std::lock_guard lock(mu_);
    auto it = reserved_.find(principal);
    if (it != reserved_.end()) usage.stored_bytes += it->second;
  }
  if (limits.queued_jobs >= 0 && usage.queued_jobs + new_jobs > limits.queued_jobs) {
    // A guess, not a promise: jobs end as workers finish them.
    constexpr int64_t kQueueRetryMs = 60 * 1000;
    return Exhausted("quota: " + who + " has " + std::to_string(usage.queued_jobs) +
                         " jobs pending or running and this submission adds " +
                         std::to_string(new_jobs) + ", over its limit of " +
                         std::to_string(limits.queued_jobs) + " queued jobs (queued-jobs; " +
                         kHowToRaise + role + "); submit again once some have ended",
                     kQueueRetryMs);
  }
  if (limits.stored_bytes >= 0 && usage.stored_bytes + new_bytes > limits.stored_bytes) {
    return Exhausted("quota: " + who + " holds " + Bytes(usage.stored_bytes) +
                         " (its builds' recipes, logs and wheels, its source archives and "
                         "uploads in progress) and this adds " +
                         Bytes(new_bytes) + ", over its limit of " + Bytes(limits.stored_bytes) +
                         " (stored-bytes; " + kHowToRaise + role +
                         "); waiting frees nothing but source archives unused for the "
                         "retention period",
                     0);
  }
  return Status::Ok();
}

Result<std::string> QuotaKeeper::RoleOf(const std::string& principal) {
  FARM_ASSIGN_OR_RETURN(auto tokens, store_->ListTokens());
  const int64_t now = clock_->NowUnixMs();
  std::string best = "submitter";
  int best_rank = 0;
  for (const auto& t : tokens) {
    bool live = t.revoked_ms == 0 && (t.expires_ms == 0 || t.expires_ms > now);
    if (t.name == principal && live && ClientRank(t.role) > best_rank) {
      best = t.role;
      best_rank = ClientRank(t.role);
    }
  }
  return best;
}

Result<QuotaView> QuotaKeeper::View(const std::string& principal, const std::string& role) {
  QuotaView view;
  FARM_ASSIGN_OR_RETURN(view.limits, LimitsFor(principal, role));
  FARM_ASSIGN_OR_RETURN(view.override_row, OverrideOf(principal));
  FARM_ASSIGN_OR_RETURN(view.usage, store_->GetPrincipalUsage(principal));
  if (view.limits.submissions < 0) {
    view.submissions_left = -1;
  } else {
    std::lock_guard lock(mu_);
    double used = Refilled(principal, view.limits.submissions).used;
    view.submissions_left = std::max(0.0, static_cast<double>(view.limits.submissions) - used);
  }
  return view;
}

Status QuotaKeeper::SetOverride(const store::QuotaOverrideRow& row) {
  FARM_RETURN_IF_ERROR(store_->SetQuotaOverride(row));
  std::lock_guard lock(mu_);
  overrides_.erase(row.principal);  // read again from the store at the next use
  return Status::Ok();
}

}  // namespace farm::quota
