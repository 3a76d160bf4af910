// A BuildSubmitter for the runner's tests: stores a one-job build with its run the way the
// API layer does (CreateBuildLinked), and keeps the requests it was given.
#ifndef FARM_TESTS_UNIT_DAEMON_CRON_STORE_SUBMITTER_H_
#define FARM_TESTS_UNIT_DAEMON_CRON_STORE_SUBMITTER_H_

#include <string>
#include <vector>

#include "common/clock.h"
#include "daemon/builds/build_key.h"
#include "daemon/cron/runner.h"
#include "daemon/store/store.h"

namespace farm::cron {

class StoreSubmitter final : public BuildSubmitter {
 public:
  // `*store` is read at each call: tests reopen the store (a farmd restart).
  StoreSubmitter(store::Store** store, const Clock* clock) : store_(store), clock_(clock) {}
  Result<int64_t> SubmitScheduled(const farm::v1::SubmitBuildRequest& req, const std::string& who,
                                  store::ScheduleRunRow* run, int64_t next_fire_ms) override {
    if (!refuse.ok()) return refuse;
    requests.push_back(req);
    store::BuildRow build{
        .recipe_name = "r", .submitted_by = who, .created_ms = clock_->NowUnixMs()};
    std::vector<store::JobRow> jobs{store::JobRow{.cell = "c", .created_ms = clock_->NowUnixMs()}};
    store::BuildLinks links{.run = *run, .next_fire_ms = next_fire_ms};
    FARM_RETURN_IF_ERROR((*store_)->CreateBuildLinked(&build, &jobs, &links));
    *run = *links.run;
    return build.id;
  }
  std::string InputsDigest(const farm::v1::SubmitBuildRequest& req) const override {
    return builds::ScheduleInputsDigest(req);
  }
  std::vector<farm::v1::SubmitBuildRequest> requests;
  Status refuse;  // when not OK, every submit answers it (a quota, a revoked creator)

 private:
  store::Store** store_;
  const Clock* clock_;
};

}  // namespace farm::cron

#endif  // FARM_TESTS_UNIT_DAEMON_CRON_STORE_SUBMITTER_H_
