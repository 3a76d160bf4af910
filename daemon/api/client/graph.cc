// The graph of a job (recipe `requires:`): the jobs it consumes, the wheels it was given,
// and the jobs that consume it, for show, the dashboard and the worker's assignment.
#include "daemon/api/client/client_service.h"
#include "daemon/model/convert.h"

namespace farm::api {

Result<google::protobuf::RepeatedPtrField<farm::v1::JobInput>> LoadJobInputs(
    const ServiceContext& ctx, int64_t job_id) {
  google::protobuf::RepeatedPtrField<farm::v1::JobInput> out;
  FARM_ASSIGN_OR_RETURN(auto requirements, ctx.store->ListRequirements(job_id));
  if (requirements.empty()) return out;
  FARM_ASSIGN_OR_RETURN(auto inputs, ctx.store->ListJobInputs(job_id));
  for (const store::RequirementRow& r : requirements) {
    farm::v1::JobInput* in = out.Add();
    in->set_job_id(r.required_job_id);
    in->set_build_id(r.required_build_id);
    in->set_recipe_name(r.recipe_name);
    in->set_state(static_cast<farm::v1::JobState>(r.required_state));
    in->set_for_build(r.for_build);
    in->set_for_validation(r.for_validation);
    for (const store::JobInputRow& i : inputs) {
      if (i.required_job_id == r.required_job_id) {
        *in->add_artifacts() = model::ArtifactToProto(i.artifact);
      }
    }
  }
  return out;
}

Status AddJobGraph(const ServiceContext& ctx, farm::v1::Job* job) {
  FARM_ASSIGN_OR_RETURN(*job->mutable_inputs(), LoadJobInputs(ctx, job->id()));
  FARM_ASSIGN_OR_RETURN(auto consumers, ctx.store->ListConsumers(job->id()));
  for (const store::RequirementRow& r : consumers) {
    farm::v1::JobConsumer* c = job->add_consumers();
    c->set_job_id(r.job_id);
    c->set_build_id(r.consumer_build_id);
    c->set_recipe_name(r.consumer_recipe);
    c->set_state(static_cast<farm::v1::JobState>(r.consumer_state));
  }
  return Status::Ok();
}

}  // namespace farm::api
