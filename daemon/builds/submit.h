// Submitting a build (farmctl submit, a schedule's run): planned (plan.h), admitted,
// named, stored. Nothing is stored when any check fails.
//
// Admission (docs/limits.md, "Quotas"): a submission counts against its principal's
// quota first, so a flood is refused before any recipe is read; then the jobs it queues
// (not those answered from stored wheels) and its recipes' bytes, the required builds'
// included, must fit, checked and stored under the principal's lock so two submissions
// are not both let in on the same usage.
//
// Names (docs/security.md, "Who may change what"): every build stored, the requested one
// and each required one, is under a recipe name the principal may use: one nobody owns
// yet (it then claims it), one it owns, or any when it is an admin. The names are checked
// after every other check and claimed only once the build is admitted, so a refused build
// claims nothing.
//
// Storing: the required builds first (answered from stored wheels or merged onto
// identical jobs in flight like any build, keeping only the cells some job consumes), then
// the requested build with each job held on the jobs it requires, each build in one
// transaction (store::BuildControl::CreateBuildLinked). A crash between them leaves the
// required builds to finish alone; submitting again reuses them.
//
// Thread-safe: the dependencies are.
#ifndef FARM_DAEMON_BUILDS_SUBMIT_H_
#define FARM_DAEMON_BUILDS_SUBMIT_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "daemon/audit/audit_log.h"
#include "daemon/auth/token_authority.h"
#include "daemon/builds/plan.h"
#include "daemon/cron/runner.h"
#include "daemon/quota/quota.h"
#include "daemon/store/ports/build_control.h"
#include "daemon/store/ports/recipe_name_store.h"

namespace farm::builds {

using auth::Principal;

struct SubmitDeps {
  PlanDeps plan;
  store::BuildControl* control = nullptr;
  store::RecipeNameStore* names = nullptr;
  quota::QuotaKeeper* quotas = nullptr;  // null: nobody is limited
  // The key of a job that consumes wheels (build_key.h), for jobs whose required jobs
  // ended already.
  store::InputsKeyFn inputs_key;
};

class Submitter {
 public:
  explicit Submitter(SubmitDeps deps) : deps_(std::move(deps)) {}

  // Sets the locker of provisioned cells (PlanDeps::locker), which farmd makes once its
  // HTTP side listens. Not thread-safe: called before the first submission.
  void SetLocker(locks::EnvLocker* locker) { deps_.plan.locker = locker; }

  // Counts one submission of `who` against its quota (ResourceExhausted with when to
  // retry once it is used up); Ok when farmd keeps no quotas. Submit takes one itself;
  // creating a schedule takes one too.
  Status TakeSubmission(const Principal& who);

  // Plans `req` as submitted by `who` (plan.h) without storing anything: what submitting
  // it would queue, and which of its jobs stored wheels answer.
  Result<BuildDraft> Plan(const farm::v1::SubmitBuildRequest& req, const std::string& who) {
    return PlanBuild(deps_.plan, req, who);
  }

  // Submits `req` as `who`: takes a submission (TakeSubmission) and stores the build as
  // SubmitLinked does. Returns the build id.
  Result<int64_t> Submit(const farm::v1::SubmitBuildRequest& req, const Principal& who,
                         audit::Entry* entry);

  // Plans, admits, names and stores `req` as `who` with `links` (in-flight merging is set
  // from req.force(); a schedule run when given). PermissionDenied naming the owner of a
  // name `who` may not use; ResourceExhausted past a quota. `entry`, when given, gets the
  // recipe as its target and the build as what was done. Returns the build id.
  Result<int64_t> SubmitLinked(const farm::v1::SubmitBuildRequest& req, const Principal& who,
                               store::BuildLinks* links, audit::Entry* entry = nullptr);

 private:
  // Whether `who` may build under each name of the graph (reads only), or, with `claim`,
  // claims the names nobody owns for `who`.
  Status CheckNames(const Principal& who, const BuildDraft& draft, bool claim);
  // Stores the required builds first (depth first), then `draft` with its jobs held on
  // theirs.
  Status Store(BuildDraft* draft, store::BuildLinks* links, bool force);

  SubmitDeps deps_;
};

// The submitter the schedule runner uses (cron/runner.h): a run's build is submitted as
// the schedule's creator, with the creator's role now and within the creator's quotas (a
// refusal is recorded as the run's failure), through SubmitLinked, so build keys, reuse
// and in-flight merging apply to scheduled builds exactly as to submitted ones.
class ScheduleSubmitter final : public cron::BuildSubmitter {
 public:
  // `submitter` and `tokens` outlive this.
  ScheduleSubmitter(Submitter* submitter, auth::TokenAuthority* tokens)
      : submitter_(submitter), tokens_(tokens) {}

  Result<int64_t> SubmitScheduled(const farm::v1::SubmitBuildRequest& req, const std::string& who,
                                  store::ScheduleRunRow* run, int64_t next_fire_ms) override;
  std::string InputsDigest(const farm::v1::SubmitBuildRequest& req) const override;

 private:
  Submitter* submitter_;
  auth::TokenAuthority* tokens_;
};

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_SUBMIT_H_
