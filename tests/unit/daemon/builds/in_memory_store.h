// An in-memory implementation of the store ports the use cases of daemon/builds/ take, so
// their unit tests run without SQLite. It keeps rows in maps and gives each write the
// simplest meaning that keeps the use case's rules visible (a completion of a succeeded
// attempt makes a succeeded job, a cancel ends the build's unfinished jobs); the real
// transitions are the SQL store's and are tested in tests/unit/daemon/store/. What no
// use case calls answers Unimplemented. Every write is also remembered for the tests to
// read. Not thread-safe.
#ifndef FARM_TESTS_UNIT_DAEMON_BUILDS_IN_MEMORY_STORE_H_
#define FARM_TESTS_UNIT_DAEMON_BUILDS_IN_MEMORY_STORE_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/store/ports/artifact_store.h"
#include "daemon/store/ports/build_control.h"
#include "daemon/store/ports/build_graph_store.h"
#include "daemon/store/ports/build_reader.h"
#include "daemon/store/ports/job_leases.h"
#include "daemon/store/ports/lock_store.h"
#include "daemon/store/ports/recipe_name_store.h"
#include "daemon/store/ports/source_archive_store.h"
#include "daemon/store/ports/validation_jobs.h"
#include "daemon/store/ports/visits.h"
#include "daemon/store/ports/worker_store.h"

namespace farm::builds::testing {

class InMemoryStore final : public store::BuildReader,
                            public store::BuildControl,
                            public store::JobLeases,
                            public store::ArtifactStore,
                            public store::ValidationJobs,
                            public store::WorkerStore,
                            public store::RecipeNameStore,
                            public store::BuildGraphStore,
                            public store::SourceArchiveStore,
                            public store::LockStore,
                            public store::Visits {
 public:
  // Rows the tests set up; ids are kept as given.
  std::map<int64_t, store::BuildRow> builds;
  std::map<int64_t, store::JobRow> jobs;
  std::map<int64_t, std::vector<store::AttemptRow>> attempts;  // by job id
  std::map<int64_t, store::ArtifactRow> artifacts;
  std::map<std::string, store::WorkerRow> workers;
  std::map<std::string, store::RecipeNameRow> names;
  std::map<std::string, store::SourceArchiveRow> sources;
  std::map<std::string, store::LockRow> lock_rows;  // by digest
  // What was written.
  std::vector<store::CompletionReport> completions;
  std::vector<store::BuildLinks> links;         // of each CreateBuildLinked, in order
  int held_resolutions = 0;                     // ResolveHeldJobs calls
  int visits = 0;                               // Together calls
  std::vector<store::ProgressReport> progress;  // recorded, in order
  int worker_touches = 0;                       // TouchWorker calls

  // A build of `recipe_name` by `who` with one build job (a succeeded one when `succeeded`).
  // Returns the job's id; the build's id is the same.
  int64_t AddBuild(const std::string& recipe_name, const std::string& who, bool succeeded);
  // Attempt `number` of `job_id` leased to `worker_id` (the job then runs it).
  void Lease(int64_t job_id, int number, const std::string& worker_id);
  // A wheel of attempt `attempt` of `job_id`; returns its id.
  int64_t AddArtifact(int64_t job_id, int attempt, const std::string& sha256);

  // BuildReader.
  Result<store::BuildRow> GetBuild(int64_t id) override;
  Result<std::vector<store::BuildRow>> ListBuilds(int64_t before_id, int limit) override;
  Result<std::vector<store::BuildRow>> ListBuildsMatching(const store::BuildFilter& filter,
                                                          int64_t before_id, int limit) override;
  Result<std::vector<store::JobRow>> ListJobs(int64_t build_id) override;
  Result<std::map<int64_t, std::vector<store::JobRow>>> ListJobsOfBuilds(
      const std::vector<int64_t>& build_ids) override;
  Result<store::JobRow> GetJob(int64_t id) override;
  Result<std::optional<store::JobRow>> FindSucceededJob(const std::string& build_key) override;
  Result<std::vector<store::AttemptRow>> ListAttempts(int64_t job_id) override;
  Result<std::map<int64_t, std::vector<store::AttemptRow>>> ListAttemptsOfJobs(
      const std::vector<int64_t>& job_ids) override;
  Result<std::map<int64_t, std::vector<store::ArtifactRow>>> ListArtifactsOfJobs(
      const std::vector<int64_t>& job_ids) override;
  Result<std::vector<store::JobRow>> ListPendingJobs(int limit) override;
  Result<std::vector<store::JobRow>> GetJobs(const std::vector<int64_t>& ids) override;

  // BuildControl.
  Status CreateBuild(store::BuildRow* build, std::vector<store::JobRow>* jobs) override;
  Status CreateBuildLinked(store::BuildRow* build, std::vector<store::JobRow>* jobs,
                           store::BuildLinks* links) override;
  Result<std::vector<int64_t>> ResolveMergedJobs(int64_t now_ms) override;
  Status RetryJob(int64_t job_id, int64_t now_ms) override;
  Status CancelBuild(int64_t build_id, int64_t now_ms, const std::string& who) override;

  // JobLeases.
  Result<std::optional<store::JobRow>> AcquireJob(const std::string& worker_id, int64_t now_ms,
                                                  int64_t lease_ms,
                                                  const store::PlacementFn& placeable) override;
  Result<std::vector<int64_t>> ListLeasableJobIds(int64_t now_ms, int limit) override;
  Result<std::vector<std::optional<store::JobRow>>> LeaseJobs(
      const std::vector<store::LeaseRequest>& requests, int64_t now_ms, int64_t lease_ms) override;
  Result<std::vector<store::JobRow>> CancelRequestedJobs(const std::string& worker_id) override;
  Result<std::vector<store::JobRow>> RenewLeases(const std::string& worker_id, int64_t now_ms,
                                                 int64_t lease_ms) override;
  Result<int> CompleteAttempt(const store::CompletionReport& report, int64_t now_ms) override;
  Result<std::vector<int64_t>> ExpireLeases(int64_t now_ms) override;
  Status ExtendRunningLeases(int64_t now_ms, int64_t lease_ms) override;
  Result<bool> ReattachAttempt(int64_t job_id, int attempt, const std::string& worker_id,
                               int64_t now_ms, int64_t lease_ms) override;
  Result<std::vector<int64_t>> ReleaseWorkerJobs(const std::string& worker_id,
                                                 const std::vector<int64_t>& keep,
                                                 const std::string& detail,
                                                 int64_t now_ms) override;
  Result<bool> RecordProgress(const store::ProgressReport& report) override;

  // ArtifactStore.
  Result<store::ArtifactRow> InsertArtifact(const store::ArtifactRow& artifact) override;
  Result<std::vector<store::ArtifactRow>> ListArtifacts(int64_t job_id) override;
  Result<store::ArtifactRow> GetArtifact(int64_t id) override;

  // ValidationJobs.
  Result<store::JobRow> QueueValidationJob(const store::JobRow& job) override;
  Result<std::vector<store::JobRow>> ListValidationJobs(int64_t target_job_id,
                                                        int target_attempt) override;
  Result<std::vector<store::ArtifactRow>> ListArtifactsInValidationState(int state,
                                                                         int64_t after_id,
                                                                         int limit) override;
  Status SetArtifactValidationState(int64_t artifact_id, int state) override;

  // WorkerStore.
  Status UpsertWorker(const store::WorkerRow& worker) override;
  Result<store::WorkerRow> GetWorker(const std::string& id) override;
  Result<std::vector<store::WorkerRow>> ListWorkers() override;
  Status TouchWorker(const std::string& id, int64_t now_ms, store::WorkerState state) override;
  Status SetDrainRequested(const std::string& id, bool drain) override;
  Result<int> CountRunningJobs(const std::string& worker_id) override;
  Result<std::vector<store::JobRow>> ListRunningJobs(const std::string& worker_id) override;

  // RecipeNameStore.
  Result<store::RecipeNameRow> ClaimRecipeName(const std::string& name, const std::string& owner,
                                               int64_t now_ms) override;
  Result<std::optional<store::RecipeNameRow>> GetRecipeName(const std::string& name) override;
  Result<std::vector<store::RecipeNameRow>> ListRecipeNames() override;
  Result<store::RecipeNameRow> TransferRecipeName(const std::string& name, const std::string& owner,
                                                  int64_t now_ms) override;

  // BuildGraphStore.
  Result<std::vector<int64_t>> ResolveHeldJobs(int64_t now_ms,
                                               const store::InputsKeyFn& inputs_key) override;
  Result<std::vector<store::RequirementRow>> ListRequirements(int64_t job_id) override;
  Result<std::vector<store::RequirementRow>> ListConsumers(int64_t job_id) override;
  Result<std::vector<store::JobInputRow>> ListJobInputs(int64_t job_id) override;
  Result<std::set<int64_t>> JobsInGraph(const std::vector<int64_t>& job_ids) override;

  // LockStore.
  Status PutLock(const store::LockRow& row) override;
  Result<std::optional<store::LockRow>> GetLock(const std::string& digest) override;

  // SourceArchiveStore.
  Status RecordSourceArchive(const store::SourceArchiveRow& row) override;
  Result<store::SourceArchiveRow> GetSourceArchive(const std::string& sha256) override;
  Status TouchSourceArchive(const std::string& sha256, int64_t now_ms) override;
  Result<std::vector<store::SourceArchiveRow>> ListCollectableSources(int64_t unused_before_ms,
                                                                      int limit) override;
  Result<bool> ForgetSourceArchive(const std::string& sha256, int64_t unused_before_ms) override;

  // Visits.
  Status Together(const std::function<Status()>& calls) override;
  Status TogetherInOneTransaction(const std::function<Status()>& calls) override;

 private:
  int64_t next_id_ = 1000;  // ids of rows written by the code under test
};

}  // namespace farm::builds::testing

#endif  // FARM_TESTS_UNIT_DAEMON_BUILDS_IN_MEMORY_STORE_H_
