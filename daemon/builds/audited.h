// The one shape of a use case that changes something (control.h, schedule_control.h): the
// principal's role is checked, the body runs, and the outcome is recorded in the audit log,
// refusals included (audit::Audited).
#ifndef FARM_DAEMON_BUILDS_AUDITED_H_
#define FARM_DAEMON_BUILDS_AUDITED_H_

#include "daemon/audit/audit_log.h"
#include "daemon/auth/token_authority.h"

namespace farm::builds {

// Runs `body` as `who` when `who`'s role satisfies `need`, and records the outcome in
// `log` (null: nothing is recorded). Returns what `body` returns, or the refusal.
template <typename Body>
auto AuditedAs(audit::Recorder* log, const auth::Principal& who, auth::Need need,
               audit::Entry& entry, Body body) -> decltype(body()) {
  return audit::Audited(log, who, entry, [&]() -> decltype(body()) {
    FARM_RETURN_IF_ERROR(auth::TokenAuthority::CheckRole(who, need));
    return body();
  });
}

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_AUDITED_H_
