// The audit log (docs/security.md, "Who may change what"): one record per mutation a
// client or a worker enrolment asks for (who, with which role, did what to which object,
// and whether it was allowed, failed or done), refusals included, kept in the store and
// listed to admins (farmctl audit, /api/v1/audit).
//
// A record never holds a token or a secret: the principal is a token's name, and every
// text is redacted (registered secrets, bearer tokens, farm tokens however they got
// there, credentials in URLs) and cut to one line. Calls without a valid token have no
// principal and are not recorded (farmd's log has them).
//
// Records are written by a thread of their own, in batches of one transaction, so that a
// call does not wait for its record's commit (one more commit per mutation, a durable one
// on SQLite). The record is queued after the
// action: a crash before its batch commits loses the record, never the action's effect.
// Listings call Flush first, so the record of a call that answered is listed.
//
// Thread-safe.
#ifndef FARM_DAEMON_AUDIT_AUDIT_LOG_H_
#define FARM_DAEMON_AUDIT_AUDIT_LOG_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/auth/token_authority.h"
#include "daemon/store/store.h"

namespace farm::audit {

enum class Action {
  kBuildSubmit,
  kBuildCancel,
  kJobRetry,
  kArtifactValidate,
  kBuildPublish,
  kSourceUpload,
  kScheduleCreate,
  kSchedulePause,
  kScheduleResume,
  kScheduleDelete,
  kScheduleRun,
  kTokenCreate,
  kTokenRevoke,
  kWorkerRegister,
  kWorkerDrain,
  kWorkerUndrain,
  kHostAdd,
  kHostProvision,
  kNameTransfer,
  kKeyRotate,
  kKeyRevoke,
  kCacheAdd,
  kScheduleUpdate,
  kRequestFile,
  kRequestApprove,
  kRequestRefuse,
};
// "build.submit", "name.transfer", "key.rotate", ...: the name stored and shown.
std::string_view ActionName(Action action);

enum class Outcome { kOk, kDenied, kFailed };
// "ok", "denied", "failed".
std::string_view OutcomeName(Outcome outcome);
// kOk for Ok, kDenied for PermissionDenied, kFailed for every other error.
Outcome OutcomeOf(const Status& status);

// What one mutation changes; the body of an audited call may fill in `target` once it
// knows it (a submitted recipe's name) and `done`, a note of what was done ("build 12").
struct Entry {
  Action action;
  std::string target;
  std::string done;
};

// `text` made fit for a record: redacted as above, one line, at most 500 bytes.
std::string SafeText(std::string_view text);

// Where an audited call's record goes: the AuditLog, or a test's list. Thread-safe.
class Recorder {
 public:
  virtual ~Recorder() = default;
  // Records `who` asking for `entry` with its outcome (see AuditLog::Record).
  virtual void Record(const auth::Principal& who, const Entry& entry, const Status& outcome) = 0;
};

class AuditLog final : public Recorder {
 public:
  // Starts the writer thread. `store` and `clock` outlive the object.
  AuditLog(store::Store* store, const Clock* clock);
  // Writes what is queued and stops the writer.
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Records `who` asking for `entry` with its outcome: Ok (the detail is entry.done) or
  // the refusal or error (the detail is its message). Queues the record; waits only while
  // kMaxQueued records wait already. A failed write is logged, never returned: the
  // caller's answer stands.
  void Record(const auth::Principal& who, const Entry& entry, const Status& outcome) override;

  // Returns once every record queued before the call was written (or its write failed),
  // or after 10 s.
  void Flush();

  static constexpr size_t kMaxQueued = 10000;

 private:
  void WriteLoop();

  store::Store* store_;
  const Clock* clock_;
  std::mutex mu_;
  std::condition_variable changed_;    // queue_ or written_ changed, or stopping_ was set
  std::deque<store::AuditRow> queue_;  // guarded by mu_
  int64_t queued_ = 0;                 // records ever queued; guarded by mu_
  int64_t written_ = 0;                // records ever taken and written; guarded by mu_
  bool stopping_ = false;              // guarded by mu_
  std::thread writer_;                 // last: starts once the rest is initialized
};

// Runs `body` (returning Status or Result<T>) and records its outcome in `log` (when not
// null) with `entry`, which the body may change. Returns what `body` returns.
template <typename Body>
auto Audited(Recorder* log, const auth::Principal& who, Entry& entry, Body body)
    -> decltype(body()) {
  auto result = body();
  if (log != nullptr) {
    if constexpr (std::is_same_v<decltype(result), Status>) {
      log->Record(who, entry, result);
    } else {
      log->Record(who, entry, result.status());
    }
  }
  return result;
}

}  // namespace farm::audit

#endif  // FARM_DAEMON_AUDIT_AUDIT_LOG_H_
