// Turns a CreateScheduleRequest into the row the store keeps, for every front end that
// creates schedules (the gRPC API and the dashboard), so both accept and reject the same
// requests with the same messages. Stateless and thread-safe.
#ifndef FARM_DAEMON_CRON_NEW_SCHEDULE_H_
#define FARM_DAEMON_CRON_NEW_SCHEDULE_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "daemon/cron/upstream_watch.h"
#include "daemon/store/store.h"
#include "farm/v1/client.pb.h"

namespace farm::cron {

// On success returns the schedule `who` asked for, with its first fire time after `now_ms`
// (time zone UTC when none is given; the name defaults to the recipe's). The recipe is
// parsed with its patches and validation script; a request without a source takes the
// recipe's, which the runner resolves at each firing; the row names the uploaded source
// archive it fires (source_sha256), whose presence the caller checks. InvalidArgument for
// a bad recipe (with its YAML position), a source that is a path on the client, a cron
// expression (with the field and column) or a time zone. A request with a watch instead of
// a cron expression is checked against `watches` (CheckWatch) and first polls at once.
struct WatchSettings {
  WatchUpstreams upstreams;
  int min_poll_seconds = 60;
};
Result<store::ScheduleRow> NewScheduleRow(const farm::v1::CreateScheduleRequest& req,
                                          const std::string& who, int64_t now_ms,
                                          const WatchSettings& watches = {});

// The schedule `old` building `build` (a changed recipe, its patches, source or matrix)
// instead of what it built, checked as NewScheduleRow checks a new one. Everything else is
// kept: its name, its cron or watch and what that watch has seen (a torch release already
// seen stays seen, one that appears later fires the new recipe), its next fire time, its
// runs. InvalidArgument as for NewScheduleRow, or when the recipe's name differs.
Result<store::ScheduleRow> UpdatedScheduleRow(const store::ScheduleRow& old,
                                              const farm::v1::SubmitBuildRequest& build,
                                              int64_t now_ms, const WatchSettings& watches = {});

// When a resumed schedule fires next: its cron's next fire time after `now_ms` (times that
// passed while paused are not "missed"), or now for a watch.
Result<int64_t> ResumeFireMs(const store::ScheduleRow& row, int64_t now_ms);

}  // namespace farm::cron

#endif  // FARM_DAEMON_CRON_NEW_SCHEDULE_H_
