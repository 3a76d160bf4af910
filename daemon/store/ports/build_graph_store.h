// BuildGraphStore: jobs that require other jobs' wheels (recipe `requires:`): what each
// requires and consumes, and settling held jobs once their requirements end.
#ifndef FARM_DAEMON_STORE_PORTS_BUILD_GRAPH_STORE_H_
#define FARM_DAEMON_STORE_PORTS_BUILD_GRAPH_STORE_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/job_rows.h"

namespace farm::store {

// A job another job needs (recipe `requires:`), with that job's state.
struct RequirementRow {
  int64_t job_id = 0;  // the consumer
  int64_t required_job_id = 0;
  int64_t required_build_id = 0;
  std::string recipe_name;
  bool for_build = false;
  bool for_validation = false;
  int required_state = 0;  // of the required job
  int consumer_state = 0;  // of the consumer
  int64_t consumer_build_id = 0;
  std::string consumer_recipe;
};

// A wheel a job consumes: an artifact of one of its required jobs.
struct JobInputRow {
  int64_t required_job_id = 0;
  ArtifactRow artifact;
};

// The build key of a job that consumes wheels, from its key without them and the sha256 of
// each consumed wheel: farmd's rule (daemon/builds/build_key.h, KeyWithInputs), handed to
// the calls that settle held jobs so that the store keeps no rule of its own.
using InputsKeyFn =
    std::function<std::string(const std::string& key_base, std::vector<std::string> wheel_sha256s)>;

class BuildGraphStore {
 public:
  virtual ~BuildGraphStore() = default;

  // Settles held jobs whose required jobs ended: when all succeeded the job records their
  // wheels as its inputs, takes the key inputs_key(key_base, their sha256s) and is then
  // answered from a succeeded job with that key (unless forced), merged onto an identical
  // job in flight, or released to be built; when one failed or was cancelled the job fails
  // with an error naming it (and stays held, so a retry of that job releases it). Returns
  // the ids of the settled jobs.
  virtual Result<std::vector<int64_t>> ResolveHeldJobs(int64_t now_ms,
                                                       const InputsKeyFn& inputs_key) = 0;
  // The jobs `job_id` requires, in the order they were stored.
  virtual Result<std::vector<RequirementRow>> ListRequirements(int64_t job_id) = 0;
  // The jobs that require `job_id`, by id.
  virtual Result<std::vector<RequirementRow>> ListConsumers(int64_t job_id) = 0;
  // The wheels `job_id` was given (empty while it is held), by artifact id.
  virtual Result<std::vector<JobInputRow>> ListJobInputs(int64_t job_id) = 0;
  // Those of `job_ids` that require a job or are required by one, in one read: a build's
  // reply asks ListRequirements and ListConsumers only of these.
  virtual Result<std::set<int64_t>> JobsInGraph(const std::vector<int64_t>& job_ids) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_BUILD_GRAPH_STORE_H_
