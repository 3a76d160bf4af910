// What both of farmd's front ends, the gRPC API (api/ServiceContext) and the HTTP port
// (http/DashboardDeps), are handed by FarmServer: the stores, the token authority and the
// clock, the services farmd runs beside them, and the use cases they share. One struct, so
// that a dependency both need is added once. Plain pointers to objects FarmServer owns,
// which outlive both front ends and are each thread-safe; a null service is one farmd does
// not run (each field says what then).
#ifndef FARM_DAEMON_BUILDS_FRONT_END_DEPS_H_
#define FARM_DAEMON_BUILDS_FRONT_END_DEPS_H_

#include "common/clock.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/store.h"

namespace farm::auth {
class TokenAuthority;
}  // namespace farm::auth
namespace farm::attest {
class Attestor;
}  // namespace farm::attest
namespace farm::audit {
class AuditLog;
}  // namespace farm::audit
namespace farm::mirror {
class PullThroughCache;
class InternalAccess;
}  // namespace farm::mirror

namespace farm::requests {
class Requests;
}  // namespace farm::requests

namespace farm::builds {

class Control;
class ScheduleControl;

struct FrontEndDeps {
  store::Store* store = nullptr;
  store::BlobStore* blobs = nullptr;
  auth::TokenAuthority* auth = nullptr;
  const Clock* clock = nullptr;
  // Signs the wheels' provenance and keeps the farm's keys; null: none is signed or kept.
  attest::Attestor* attestor = nullptr;
  // Where every mutation is recorded; null: nothing is recorded.
  audit::AuditLog* audit = nullptr;
  // The pull-through cache of the upstreams workers provision from; null where farmd
  // serves none.
  mirror::PullThroughCache* mirror = nullptr;
  // The secret farmd's own processes use /upstream/ with (mirror/internal_access.h); null:
  // none is accepted.
  const mirror::InternalAccess* internal = nullptr;
  // Cancel, retry, drain and revalidate (control.h); null where none is made (those calls
  // answer 503).
  Control* control = nullptr;
  // Create, update, pause, resume, delete and run schedules (schedule_control.h); null
  // where none is made (those calls answer 503).
  ScheduleControl* schedule_control = nullptr;
  // Wheel requests (requests/requests.h); null where none is made (those calls answer 503).
  requests::Requests* requests = nullptr;
};

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_FRONT_END_DEPS_H_
