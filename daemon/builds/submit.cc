#include "daemon/builds/submit.h"

#include <mutex>

#include "common/log.h"
#include "daemon/auth/ownership.h"
#include "daemon/builds/build_key.h"

namespace farm::builds {
namespace {

// What storing `draft` adds to its submitter's usage: the jobs it queues (not those
// answered from stored wheels) and its recipes' bytes, the required builds' included.
void AddUsage(const BuildDraft& draft, int64_t* jobs, int64_t* bytes) {
  for (const auto& j : draft.jobs) *jobs += j.reused_from == 0;
  *bytes += static_cast<int64_t>(draft.build.recipe.size());
  for (const auto& r : draft.requirements) AddUsage(r, jobs, bytes);
}

void LogStored(const BuildDraft& draft) {
  int reused = 0, merged = 0, held = 0;
  for (const auto& j : draft.jobs) {
    reused += j.reused_from > 0, merged += j.not_before_ms > 0, held += !draft.requirements.empty();
  }
  log::Info("build " + std::to_string(draft.build.id) + " of " + draft.recipe.name() +
            " submitted by " + draft.build.submitted_by + " with " +
            std::to_string(draft.jobs.size()) + " job(s), " + std::to_string(reused) +
            " answered from stored wheels, " + std::to_string(merged) +
            " waiting on identical jobs in flight" +
            (held > 0 ? ", " + std::to_string(held) + " waiting for the wheels they require" : ""));
}

}  // namespace

Status Submitter::TakeSubmission(const Principal& who) {
  return deps_.quotas ? deps_.quotas->TakeSubmission(who.name, who.role) : Status::Ok();
}

Status Submitter::CheckNames(const Principal& who, const BuildDraft& draft, bool claim) {
  const std::string& name = draft.recipe.name();
  Status s = claim ? auth::ClaimName(*deps_.names, who, name, deps_.plan.clock->NowUnixMs())
                   : auth::MayUseName(*deps_.names, who, name);
  FARM_RETURN_IF_ERROR(s);
  for (const BuildDraft& required : draft.requirements) {
    Status r = CheckNames(who, required, claim);
    if (!r.ok()) return r.WithContext(name + " requires " + required.recipe.name());
  }
  return Status::Ok();
}

Status Submitter::Store(BuildDraft* draft, store::BuildLinks* links, bool force) {
  for (BuildDraft& req : draft->requirements) {
    store::BuildLinks sub_links{.merge_in_flight = true};
    FARM_RETURN_IF_ERROR(Store(&req, &sub_links, false));
  }
  links->force = force;
  links->inputs_key = deps_.inputs_key;
  for (size_t r = 0; r < draft->requirements.size(); ++r) {
    const BuildDraft& req = draft->requirements[r];
    const farm::v1::Requirement& spec = draft->recipe.requirements(static_cast<int>(r));
    for (size_t j = 0; j < draft->jobs.size(); ++j) {
      links->requirements.push_back({.index = j,
                                     .required_job_id = req.jobs[draft->required_index[r][j]].id,
                                     .recipe_name = req.recipe.name(),
                                     .for_build = spec.for_build(),
                                     .for_validation = spec.for_validation()});
    }
  }
  FARM_RETURN_IF_ERROR(deps_.control->CreateBuildLinked(&draft->build, &draft->jobs, links));
  LogStored(*draft);
  return Status::Ok();
}

Result<int64_t> Submitter::SubmitLinked(const farm::v1::SubmitBuildRequest& req,
                                        const Principal& who, store::BuildLinks* links,
                                        audit::Entry* entry) {
  // Every recipe of the graph is checked before anything is stored.
  FARM_ASSIGN_OR_RETURN(BuildDraft draft, PlanBuild(deps_.plan, req, who.name));
  if (entry != nullptr) entry->target = "recipe " + draft.recipe.name();
  FARM_RETURN_IF_ERROR(MatchCells(&draft));
  FARM_RETURN_IF_ERROR(CheckNames(who, draft, /*claim=*/false));
  // The quota check and the store hold the principal's lock (see the header).
  std::unique_lock<std::mutex> admitted;
  if (deps_.quotas) {
    int64_t jobs = 0, bytes = 0;
    AddUsage(draft, &jobs, &bytes);
    FARM_ASSIGN_OR_RETURN(admitted, deps_.quotas->Admit(who.name, who.role, jobs, bytes));
  }
  FARM_RETURN_IF_ERROR(CheckNames(who, draft, /*claim=*/true));
  // A forced build is built even when an identical one is in flight.
  links->merge_in_flight = !req.force();
  FARM_RETURN_IF_ERROR(Store(&draft, links, req.force()));
  if (entry != nullptr) entry->done = "build " + std::to_string(draft.build.id);
  return draft.build.id;
}

Result<int64_t> Submitter::Submit(const farm::v1::SubmitBuildRequest& req, const Principal& who,
                                  audit::Entry* entry) {
  // Taken first, so that a flood of submissions is refused before any recipe is read.
  FARM_RETURN_IF_ERROR(TakeSubmission(who));
  store::BuildLinks links;
  return SubmitLinked(req, who, &links, entry);
}

Result<int64_t> ScheduleSubmitter::SubmitScheduled(const farm::v1::SubmitBuildRequest& req,
                                                   const std::string& who,
                                                   store::ScheduleRunRow* run,
                                                   int64_t next_fire_ms) {
  store::BuildLinks links{.run = *run, .next_fire_ms = next_fire_ms};
  FARM_ASSIGN_OR_RETURN(Principal creator, tokens_->PrincipalNamed(who));
  FARM_ASSIGN_OR_RETURN(int64_t id, submitter_->SubmitLinked(req, creator, &links));
  *run = *links.run;
  return id;
}

std::string ScheduleSubmitter::InputsDigest(const farm::v1::SubmitBuildRequest& req) const {
  return ScheduleInputsDigest(req);
}

}  // namespace farm::builds
