// What people ask of schedules: create one, change what it builds, pause, resume, delete,
// run it now. The gRPC API (farmctl schedules) and the REST API (the dashboard's
// #/schedules page) both call these, so each rule is written once (docs/schedules.md,
// docs/security.md "Who may change what", docs/limits.md "Quotas"):
//   - the role: a submitter;
//   - the owner: a schedule is changed only by its creator or an admin, and a new
//     schedule's recipe name must be one its creator may use (it then claims it);
//   - the rate: creating a schedule and running one now each take a submission from the
//     principal's quota, as submitting a build does;
//   - the record: every request by a known principal leaves one audit record with its
//     outcome, refusals included.
// A front end authenticates the caller and turns the answer into its own format.
//
// Thread-safe: the dependencies are.
#ifndef FARM_DAEMON_BUILDS_SCHEDULE_CONTROL_H_
#define FARM_DAEMON_BUILDS_SCHEDULE_CONTROL_H_

#include <cstdint>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/audit/audit_log.h"
#include "daemon/auth/token_authority.h"
#include "daemon/builds/sources.h"
#include "daemon/builds/submit.h"
#include "daemon/cron/new_schedule.h"
#include "daemon/cron/runner.h"
#include "daemon/store/ports/recipe_name_store.h"
#include "daemon/store/ports/schedule_store.h"
#include "farm/v1/client.pb.h"

namespace farm::builds {

struct ScheduleControlDeps {
  store::ScheduleStore* schedules = nullptr;
  store::RecipeNameStore* names = nullptr;
  Submitter* submitter = nullptr;          // takes the submissions (quotas)
  cron::ScheduleRunner* runner = nullptr;  // null: RunNow answers Unavailable
  SourceDeps sources;                      // a schedule's uploaded source archive
  cron::WatchSettings watches;             // what upstream watches may read
  const Clock* clock = nullptr;
  audit::Recorder* audit = nullptr;  // null: nothing is recorded
};

class ScheduleControl {
 public:
  explicit ScheduleControl(ScheduleControlDeps deps) : deps_(std::move(deps)) {}

  // Stores the schedule `req` asks for, owned by `who`. InvalidArgument for a malformed
  // request (cron::NewScheduleRow), ResourceExhausted past the quota, PermissionDenied for
  // a recipe name another principal owns.
  Result<store::ScheduleRow> Create(const Principal& who,
                                    const farm::v1::CreateScheduleRequest& req);
  // Makes schedule `id` build `build` from now on (cron::UpdatedScheduleRow).
  Result<store::ScheduleRow> Update(const Principal& who, int64_t id,
                                    const farm::v1::SubmitBuildRequest& build);
  // Pauses schedule `id`, or resumes it (`paused` false): a resumed schedule's next fire
  // time is the first one from now, so the times that passed while it was paused are not
  // missed runs. Returns the schedule as stored now.
  Result<store::ScheduleRow> SetPaused(const Principal& who, int64_t id, bool paused);
  // Deletes schedule `id`; its runs and builds stay recorded.
  Status Delete(const Principal& who, int64_t id);
  // Fires schedule `id` now (cron::ScheduleRunner::RunNow; `force` builds even when every
  // input is unchanged). Returns the run recorded.
  Result<store::ScheduleRunRow> RunNow(const Principal& who, int64_t id, bool force);

 private:
  ScheduleControlDeps deps_;
};

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_SCHEDULE_CONTROL_H_
