#include "daemon/audit/audit_log.h"

#include <array>
#include <chrono>
#include <regex>
#include <utility>

#include "common/log.h"

namespace farm::audit {
namespace {

constexpr size_t kMaxText = 500;

// One name per Action, in declaration order.
constexpr std::array<std::pair<Action, std::string_view>, 26> kActionNames = {{
    {Action::kBuildSubmit, "build.submit"},
    {Action::kBuildCancel, "build.cancel"},
    {Action::kJobRetry, "job.retry"},
    {Action::kArtifactValidate, "artifact.validate"},
    {Action::kBuildPublish, "build.publish"},
    {Action::kSourceUpload, "source.upload"},
    {Action::kScheduleCreate, "schedule.create"},
    {Action::kSchedulePause, "schedule.pause"},
    {Action::kScheduleResume, "schedule.resume"},
    {Action::kScheduleDelete, "schedule.delete"},
    {Action::kScheduleRun, "schedule.run"},
    {Action::kTokenCreate, "token.create"},
    {Action::kTokenRevoke, "token.revoke"},
    {Action::kWorkerRegister, "worker.register"},
    {Action::kWorkerDrain, "worker.drain"},
    {Action::kWorkerUndrain, "worker.undrain"},
    {Action::kHostAdd, "host.add"},
    {Action::kHostProvision, "host.provision"},
    {Action::kNameTransfer, "name.transfer"},
    {Action::kKeyRotate, "key.rotate"},
    {Action::kKeyRevoke, "key.revoke"},
    {Action::kCacheAdd, "cache.add"},
    {Action::kScheduleUpdate, "schedule.update"},
    {Action::kRequestFile, "request.file"},
    {Action::kRequestApprove, "request.approve"},
    {Action::kRequestRefuse, "request.refuse"},
}};

}  // namespace

std::string_view ActionName(Action action) {
  for (const auto& [a, name] : kActionNames) {
    if (a == action) return name;
  }
  return "unknown";
}

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kDenied:
      return "denied";
    case Outcome::kFailed:
      return "failed";
  }
  return "failed";
}

Outcome OutcomeOf(const Status& status) {
  if (status.ok()) return Outcome::kOk;
  return status.code() == StatusCode::kPermissionDenied ? Outcome::kDenied : Outcome::kFailed;
}

std::string SafeText(std::string_view text) {
  // Farm tokens ("farm_sub_<hex>") from before this process started are not registered
  // secrets; credentials in URLs ("https://user:secret@host/") are nobody's secret yet.
  static const std::regex kFarmToken(R"(farm_[a-z]{3}_[0-9a-f]{8,})");
  static const std::regex kUserInfo(R"(([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@)");
  std::string out = std::regex_replace(log::Redact(text), kFarmToken, "[REDACTED]");
  out = std::regex_replace(out, kUserInfo, "$1[REDACTED]@");
  for (char& c : out) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (out.size() > kMaxText) out = out.substr(0, kMaxText - 3) + "...";
  return out;
}

AuditLog::AuditLog(store::Store* store, const Clock* clock)
    : store_(store), clock_(clock), writer_([this] { WriteLoop(); }) {}

AuditLog::~AuditLog() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  writer_.join();
}

void AuditLog::Record(const auth::Principal& who, const Entry& entry, const Status& outcome) {
  store::AuditRow row{.time_ms = clock_->NowUnixMs(),
                      .principal = SafeText(who.name),
                      .role = who.role,
                      .action = std::string(ActionName(entry.action)),
                      .target = SafeText(entry.target),
                      .outcome = std::string(OutcomeName(OutcomeOf(outcome))),
                      .detail = SafeText(outcome.ok() ? entry.done : outcome.message())};
  std::unique_lock lock(mu_);
  // Backpressure rather than loss: a flood waits for the writer instead of growing memory.
  changed_.wait(lock, [this] { return queue_.size() < kMaxQueued || stopping_; });
  queue_.push_back(std::move(row));
  ++queued_;
  changed_.notify_all();
}

void AuditLog::Flush() {
  std::unique_lock lock(mu_);
  const int64_t target = queued_;
  changed_.wait_for(lock, std::chrono::seconds(10), [&] { return written_ >= target; });
}

void AuditLog::WriteLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    changed_.wait(lock, [this] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;  // stopping, and everything is written
    std::deque<store::AuditRow> batch;
    batch.swap(queue_);
    changed_.notify_all();  // room in the queue
    lock.unlock();
    // One commit for the batch; a row that fails undoes only itself (a savepoint).
    Status s = store_->TogetherInOneTransaction([&]() -> Status {
      for (auto& row : batch) {
        if (Status one = store_->InsertAudit(&row); !one.ok()) {
          log::Error("audit record of " + row.action + " " + row.target + " by " + row.principal +
                     " (" + row.outcome + ") not stored: " + one.ToString());
        }
      }
      return Status::Ok();
    });
    if (!s.ok()) {
      log::Error(std::to_string(batch.size()) + " audit record(s) not stored: " + s.ToString());
    }
    lock.lock();
    written_ += static_cast<int64_t>(batch.size());
    changed_.notify_all();
  }
}

}  // namespace farm::audit
