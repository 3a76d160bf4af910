// SqlStore: the Store implementation, over SQLite or PostgreSQL (sql/db.h). Internal to
// farm_store; use OpenSqliteStore() or OpenPostgresStore(). One connection guarded by a
// mutex, on either database: one writer at a time is all SQLite allows, and farmd's write
// rate (job transitions, log batches) is far below one connection's capacity.
#ifndef FARM_DAEMON_STORE_SQL_STORE_SQL_STORE_H_
#define FARM_DAEMON_STORE_SQL_STORE_SQL_STORE_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/store/mirror_store.h"
#include "daemon/store/request_store.h"
#include "daemon/store/sql/db.h"
#include "daemon/store/sql/rows.h"
#include "daemon/store/store.h"
#include "daemon/store/webhook_store.h"

namespace farm::store {

class SqlStore final : public Store, public WebhookStore, public MirrorStore, public RequestStore {
 public:
  explicit SqlStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}

  // TokenStore (sql_store/tokens.cc).
  Status InsertToken(const TokenRow& token) override;
  Result<TokenRow> FindToken(const std::string& hash) override;
  Result<int64_t> CountTokens() override;
  Result<std::vector<TokenRow>> ListTokens() override;
  Result<TokenRow> RevokeToken(const std::string& hash_prefix, int64_t now_ms) override;

  // WorkerStore (sql_store/workers.cc).
  Status UpsertWorker(const WorkerRow& worker) override;
  Result<WorkerRow> GetWorker(const std::string& id) override;
  Result<std::vector<WorkerRow>> ListWorkers() override;
  Status TouchWorker(const std::string& id, int64_t now_ms, WorkerState state) override;
  Status SetDrainRequested(const std::string& id, bool drain) override;
  Result<int> CountRunningJobs(const std::string& worker_id) override;
  Result<std::vector<JobRow>> ListRunningJobs(const std::string& worker_id) override;

  // BuildReader (sql_store/build_reader.cc).
  Result<BuildRow> GetBuild(int64_t id) override;
  Result<std::vector<BuildRow>> ListBuilds(int64_t before_id, int limit) override;
  Result<std::vector<BuildRow>> ListBuildsMatching(const BuildFilter& filter, int64_t before_id,
                                                   int limit) override;
  Result<std::vector<JobRow>> ListJobs(int64_t build_id) override;
  Result<std::map<int64_t, std::vector<JobRow>>> ListJobsOfBuilds(
      const std::vector<int64_t>& build_ids) override;
  Result<JobRow> GetJob(int64_t id) override;
  Result<std::optional<JobRow>> FindSucceededJob(const std::string& build_key) override;
  Result<std::vector<AttemptRow>> ListAttempts(int64_t job_id) override;
  Result<std::vector<JobRow>> ListPendingJobs(int limit) override;
  Result<std::map<int64_t, std::vector<AttemptRow>>> ListAttemptsOfJobs(
      const std::vector<int64_t>& job_ids) override;
  Result<std::map<int64_t, std::vector<ArtifactRow>>> ListArtifactsOfJobs(
      const std::vector<int64_t>& job_ids) override;
  Result<std::vector<JobRow>> GetJobs(const std::vector<int64_t>& ids) override;

  // BuildControl (sql_store/build_control.cc).
  Status CreateBuild(BuildRow* build, std::vector<JobRow>* jobs) override;
  Status CancelBuild(int64_t build_id, int64_t now_ms, const std::string& who) override;
  Status RetryJob(int64_t job_id, int64_t now_ms) override;
  Status CreateBuildLinked(BuildRow* build, std::vector<JobRow>* jobs, BuildLinks* links) override;
  Result<std::vector<int64_t>> ResolveMergedJobs(int64_t now_ms) override;

  // JobLeases (sql_store/job_leases.cc).
  Result<std::optional<JobRow>> AcquireJob(const std::string& worker_id, int64_t now_ms,
                                           int64_t lease_ms, const PlacementFn& placeable) override;
  Result<std::vector<int64_t>> ListLeasableJobIds(int64_t now_ms, int limit) override;
  Result<std::vector<std::optional<JobRow>>> LeaseJobs(const std::vector<LeaseRequest>& requests,
                                                       int64_t now_ms, int64_t lease_ms) override;
  Result<std::vector<JobRow>> CancelRequestedJobs(const std::string& worker_id) override;
  Result<std::vector<JobRow>> RenewLeases(const std::string& worker_id, int64_t now_ms,
                                          int64_t lease_ms) override;
  Result<int> CompleteAttempt(const CompletionReport& report, int64_t now_ms) override;
  Result<std::vector<int64_t>> ExpireLeases(int64_t now_ms) override;
  Status ExtendRunningLeases(int64_t now_ms, int64_t lease_ms) override;
  Result<bool> ReattachAttempt(int64_t job_id, int attempt, const std::string& worker_id,
                               int64_t now_ms, int64_t lease_ms) override;
  Result<std::vector<int64_t>> ReleaseWorkerJobs(const std::string& worker_id,
                                                 const std::vector<int64_t>& keep,
                                                 const std::string& detail,
                                                 int64_t now_ms) override;
  Result<bool> RecordProgress(const ProgressReport& report) override;

  // ValidationJobs (sql_store/validation.cc).
  Result<JobRow> QueueValidationJob(const JobRow& job) override;
  Result<std::vector<JobRow>> ListValidationJobs(int64_t target_job_id,
                                                 int target_attempt) override;
  Result<std::vector<ArtifactRow>> ListArtifactsInValidationState(int state, int64_t after_id,
                                                                  int limit) override;
  Status SetArtifactValidationState(int64_t artifact_id, int state) override;

  // NewTorchProofs (sql_store/validation.cc).
  Result<QueuedProof> QueueNewTorchProof(const JobRow& job, const std::string& cell_key,
                                         const std::string& torch) override;
  Result<std::vector<RefusedTorch>> ListRefusedTorches(int limit) override;

  // LogStore (sql_store/logs.cc).
  using LogStore::AppendLogLines;
  Result<int64_t> AppendLogLines(int64_t job_id, int attempt, const std::vector<LogLineRow>& lines,
                                 int64_t max_bytes) override;
  Result<std::vector<LogLineRow>> GetLogLines(int64_t job_id, int attempt, int64_t after_seq,
                                              int limit) override;
  Result<int64_t> LastLogSeq(int64_t job_id, int attempt) override;

  // ArtifactStore (sql_store/artifacts.cc).
  Result<ArtifactRow> InsertArtifact(const ArtifactRow& artifact) override;
  Result<std::vector<ArtifactRow>> ListArtifacts(int64_t job_id) override;
  Result<ArtifactRow> GetArtifact(int64_t id) override;

  // JobStats (sql_store/job_stats.cc).
  Result<std::vector<int64_t>> CountJobsByState() override;
  Result<std::vector<JobRow>> ListJobsInState(int state, int64_t before_id, int limit) override;
  Result<SpanHistogram> JobSpanHistogram(JobSpan span,
                                         const std::vector<int64_t>& bounds_ms) override;
  Result<std::vector<JobTimingRow>> ListJobTimings(int limit) override;
  Result<std::vector<IndexArtifactRow>> ListIndexArtifacts(int limit) override;
  Result<std::optional<int64_t>> LastSuccessfulRunMs(const std::string& recipe_name,
                                                     const std::string& cell,
                                                     int64_t before_job_id) override;

  // ScheduleStore (sql_store/schedules.cc).
  Status InsertSchedule(ScheduleRow* schedule) override;
  Result<ScheduleRow> GetSchedule(int64_t id) override;
  Result<std::vector<ScheduleRow>> ListSchedules() override;
  Status SetSchedulePaused(int64_t id, bool paused, int64_t next_fire_ms) override;
  Status SetScheduleRequest(int64_t id, const std::string& request,
                            const std::string& source_sha256) override;
  Status DeleteSchedule(int64_t id, int64_t now_ms) override;
  Status RecordScheduleRun(ScheduleRunRow* run, int64_t next_fire_ms) override;
  Status SetWatchState(int64_t id, const std::string& state, int64_t next_fire_ms) override;
  Result<std::map<int64_t, std::vector<ScheduleRunRow>>> ListScheduleRunsOfBuilds(
      const std::vector<int64_t>& build_ids) override;
  Result<std::vector<ScheduleRunRow>> ListScheduleRuns(int64_t schedule_id, int limit) override;
  Result<std::optional<ScheduleRunRow>> LastSucceededScheduleRun(int64_t schedule_id) override;
  Result<int64_t> ActiveScheduleBuild(int64_t schedule_id) override;
  Result<int64_t> ScheduleOfBuild(int64_t build_id) override;

  // BuildGraphStore (sql_store/graph.cc).
  Result<std::vector<int64_t>> ResolveHeldJobs(int64_t now_ms,
                                               const InputsKeyFn& inputs_key) override;
  Result<std::vector<RequirementRow>> ListRequirements(int64_t job_id) override;
  Result<std::vector<RequirementRow>> ListConsumers(int64_t job_id) override;
  Result<std::set<int64_t>> JobsInGraph(const std::vector<int64_t>& job_ids) override;
  Result<std::vector<JobInputRow>> ListJobInputs(int64_t job_id) override;

  // PublicationStore (sql_store/publish.cc).
  Result<std::vector<PublishCandidate>> ListPublishCandidates(int64_t after_id, int limit) override;
  Status EnqueuePublications(int64_t artifact_id, const std::string& outcome,
                             const std::vector<PublicationRow>& rows, int64_t now_ms) override;
  Result<std::vector<PublicationRow>> ListPublications(int64_t build_id) override;
  Result<std::vector<PublicationRow>> ListDuePublications(int64_t now_ms, int limit) override;
  Status UpdatePublication(const PublicationRow& row, int64_t now_ms) override;
  Status SetPublicationFile(int64_t artifact_id, const std::string& label,
                            const std::string& filename, const std::string& sha256, int64_t size,
                            int64_t now_ms) override;
  Status MarkReleasePublished(int64_t build_id, const std::string& remote_id,
                              const std::string& remote_url, int64_t now_ms) override;
  Result<int> RequeuePublications(int64_t build_id, const std::string& target, bool replace,
                                  int64_t now_ms) override;
  Result<std::map<std::string, int64_t>> CountPublicationsByState() override;
  Result<std::vector<PublicationRow>> ListRecentPublications(int limit) override;
  Result<std::map<int64_t, std::vector<PublicationRow>>> ListPublicationsOfBuilds(
      const std::vector<int64_t>& build_ids) override;
  Result<std::vector<PublicationRow>> ListHubFilesUnder(const std::string& repo,
                                                        const std::string& ref,
                                                        const std::string& dir) override;

  // ProvenanceStore (sql_store/provenance.cc).
  Result<bool> InsertProvenance(const ProvenanceRow& row) override;
  Result<std::vector<ProvenanceRow>> ListProvenance(const std::string& sha256, int limit) override;
  Result<std::vector<ProvenanceRow>> ListProvenanceSignedBy(const std::string& keyid,
                                                            int64_t after_id, int limit) override;
  Status ResignProvenance(int64_t id, const std::string& keyid,
                          const std::string& envelope) override;

  // SourceArchiveStore (sql_store/sources.cc).
  Status RecordSourceArchive(const SourceArchiveRow& row) override;
  Result<SourceArchiveRow> GetSourceArchive(const std::string& sha256) override;
  Status TouchSourceArchive(const std::string& sha256, int64_t now_ms) override;
  Result<std::vector<SourceArchiveRow>> ListCollectableSources(int64_t unused_before_ms,
                                                               int limit) override;
  Result<bool> ForgetSourceArchive(const std::string& sha256, int64_t unused_before_ms) override;

  // UpstreamPreloadStore (sql_store/preloads.cc).
  Result<bool> RecordUpstreamPreload(const UpstreamPreloadRow& row) override;
  Result<std::optional<UpstreamPreloadRow>> GetUpstreamPreload(const std::string& source,
                                                               const std::string& path) override;
  Result<std::vector<UpstreamPreloadRow>> ListUpstreamPreloads() override;

  // LockStore (sql_store/locks.cc).
  Status PutLock(const LockRow& row) override;
  Result<std::optional<LockRow>> GetLock(const std::string& digest) override;

  // QuotaStore (sql_store/quotas.cc).
  Result<std::optional<QuotaOverrideRow>> GetQuotaOverride(const std::string& principal) override;
  Status SetQuotaOverride(const QuotaOverrideRow& row) override;
  Result<PrincipalUsage> GetPrincipalUsage(const std::string& principal) override;

  // HostStore (sql_store/hosts.cc).
  Status UpsertHost(const HostRow& host, bool replace) override;
  Result<HostRow> GetHost(const std::string& name) override;
  Result<std::vector<HostRow>> ListHosts() override;
  Status BeginHostRun(const std::string& name, int64_t now_ms) override;
  Status AppendHostLog(const std::string& name, const std::string& text) override;
  Status FinishHostRun(const HostRow& result) override;
  Result<std::string> GetHostLog(const std::string& name) override;
  Result<int> FailInterruptedHostRuns(int64_t now_ms) override;

  // RecipeNameStore (sql_store/recipe_names.cc).
  Result<RecipeNameRow> ClaimRecipeName(const std::string& name, const std::string& owner,
                                        int64_t now_ms) override;
  Result<std::optional<RecipeNameRow>> GetRecipeName(const std::string& name) override;
  Result<std::vector<RecipeNameRow>> ListRecipeNames() override;
  Result<RecipeNameRow> TransferRecipeName(const std::string& name, const std::string& owner,
                                           int64_t now_ms) override;

  // ProjectNameStore (sql_store/recipe_names.cc).
  Result<ProjectNameRow> ClaimProjectName(const std::string& name, const std::string& owner,
                                          int64_t now_ms) override;
  Result<std::optional<ProjectNameRow>> GetProjectName(const std::string& name) override;
  Result<std::vector<ProjectNameRow>> ListProjectNames() override;
  Result<ProjectNameRow> TransferProjectName(const std::string& name, const std::string& owner,
                                             int64_t now_ms) override;

  // AuditStore (sql_store/audit.cc).
  Status InsertAudit(AuditRow* row) override;
  Result<std::vector<AuditRow>> ListAudit(const AuditFilter& filter) override;

  // WebhookStore (sql_store/webhooks.cc).
  Result<int64_t> RegisterWebhookTarget(const std::string& target, int64_t now_ms) override;
  Result<int> EnqueueWebhookDeliveries(const std::vector<WebhookDeliveryRow>& rows,
                                       int64_t now_ms) override;
  Result<std::vector<WebhookDeliveryRow>> ListDueWebhookDeliveries(int64_t now_ms,
                                                                   int limit) override;
  Status UpdateWebhookDelivery(const WebhookDeliveryRow& row, int64_t now_ms) override;
  Result<std::vector<WebhookDeliveryRow>> ListWebhookDeliveries(int limit) override;

  // MirrorStore (sql_store/mirror.cc).
  Result<bool> RecordMirrorFile(const MirrorBlobRow& blob, const std::string& filename,
                                const std::string& metadata) override;
  Status TouchMirrorBlobs(const std::vector<std::pair<std::string, int64_t>>& uses) override;
  Result<std::vector<MirrorFileRow>> ListMirrorFiles() override;
  Result<int64_t> MirrorBytes() override;
  Result<std::vector<MirrorBlobRow>> ListMirrorBlobsByUse(int limit) override;
  Result<std::optional<std::string>> GetMirrorMetadata(const std::string& sha256) override;
  Result<bool> ForgetMirrorBlob(const std::string& sha256) override;

  // RequestStore (sql_store/requests.cc).
  Result<std::pair<RequestRow, bool>> FileRequest(const RequestRow& row,
                                                  const RequestFiling& filing,
                                                  const FilingLimit& limit) override;
  Result<bool> MoveRequest(int from_state, const RequestRow& to) override;
  Result<RequestRow> GetRequest(int64_t id) override;
  Result<std::vector<RequestRow>> ListRequests(int state, int64_t before_id, int limit) override;
  Result<std::vector<RequestFiling>> ListRequestFilings(int64_t id, int limit) override;

  // Visits, and what spans every area (sql_store.h, job_leases.cc).
  Status Together(const std::function<Status()>& calls) override {
    Locked lock(this);
    return calls();
  }
  Status TogetherInOneTransaction(const std::function<Status()>& calls) override;
  void SetQueueListener(std::function<void()> listener) override {
    queue_listener_ = std::move(listener);
  }
  int64_t Generation() const override { return generation_.load(); }
  int64_t QueueGeneration() const override { return queue_generation_.load(); }
  bool MayHaveLeasableJob(int64_t now_ms) const override;

 private:
  // The histogram of the kept bounds, from job_span_buckets (sql_store/job_stats.cc).
  Result<SpanHistogram> KeptHistogram(JobSpan span);

  // Holds mu_. On release it waits, outside mu_, until every commit made so far is on disk
  // (Db::WaitDurable): a call that wrote answers only once its write is durable, and a call
  // that read never answers with a commit a power loss could still take back. Callers that
  // release together share one flush. Within Together the thread holds mu_ already: the
  // calls' own Locked then do nothing, and the outer one waits for the disk once.
  class Locked {
   public:
    explicit Locked(SqlStore* store) : store_(store), outer_(holder_) {
      if (holder_ == store) return;
      lock_ = std::unique_lock(store->mu_);
      holder_ = store;
    }
    ~Locked() {
      if (!lock_.owns_lock()) return;
      holder_ = outer_;
      store_->db_->Checkpoint();  // the call's statements are closed by now
      int64_t ticket = store_->db_->CommitTicket();
      lock_.unlock();
      store_->db_->WaitDurable(ticket);
    }
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;

   private:
    inline static thread_local const SqlStore* holder_ = nullptr;  // whose mu_ is held
    SqlStore* store_;
    const SqlStore* outer_;  // the store this thread held before, if another
    std::unique_lock<std::mutex> lock_;
  };

  // FileRequest's quota check; requires mu_ and the transaction.
  Status CheckFilingLimit(const RequestFiling& filing, const FilingLimit& limit);

  // Owned names (recipe_names, project_names: one shape, owners.cc).
  Result<RecipeNameRow> ClaimOwnedName(const char* table, const std::string& name,
                                       const std::string& owner, int64_t now_ms);
  Result<std::optional<RecipeNameRow>> GetOwnedName(const char* table, const std::string& name);
  Result<std::vector<RecipeNameRow>> ListOwnedNames(const char* table);
  Result<RecipeNameRow> TransferOwnedName(const char* table, const std::string& name,
                                          const std::string& owner, int64_t now_ms);

  // Helpers below require mu_ held.
  Result<std::vector<JobRow>> QueryJobs(const std::string& where, int64_t arg, int limit);
  Result<JobRow> GetJobLocked(int64_t id);
  Result<std::vector<JobRow>> CancelRequestedLocked(const std::string& worker_id);
  Status RefreshBuildState(int64_t build_id, int64_t now_ms);
  Status EndAttempt(const JobRow& job, int cause, int exit_code, const std::string& detail,
                    int64_t peak_rss, int64_t now_ms);
  Status SetJobTerminal(int64_t job_id, int state, const std::string& error, int64_t now_ms);
  Status Requeue(int64_t job_id, int64_t not_before_ms);
  Status InsertJob(JobRow* job);
  // `job` stored as a new pending job (no attempt, not reused, no build key).
  Result<JobRow> InsertPendingJob(const JobRow& job);
  Status InsertBuildRow(BuildRow* build);
  Status LoseJobs(const std::vector<JobRow>& jobs, const std::string& detail, int64_t now_ms);
  // Stores an attempt's validation report with the artifacts it is about (see
  // CompletionReport::validation).
  Status StoreValidation(const JobRow& job, const CompletionReport& r);
  // Queues validation job `job` unless one of its target attempt and cell exists already:
  // open (pending or running) ones only, or with `any_state` any. Returns the job queued
  // (*inserted true) or found. Call inside a transaction.
  Result<JobRow> QueueValidationLocked(const JobRow& job, bool any_state, bool* inserted);
  Status InsertScheduleRunLocked(ScheduleRunRow* run, int64_t next_fire_ms);
  Status MergeOntoLeader(JobRow* job, int64_t now_ms);
  // `job_id` succeeds with copies of the counted attempt's artifacts of `from_job_id`.
  Status SucceedFrom(int64_t job_id, int64_t from_job_id, int64_t now_ms);
  // Build graphs (sql_store/graph.cc).
  Status HoldOnRequirements(std::vector<JobRow>* jobs, const BuildLinks& links);
  Result<std::vector<int64_t>> ResolveHeldLocked(int64_t now_ms, int64_t build_id,
                                                 const InputsKeyFn& inputs_key);
  Status ReleaseWithInputs(JobRow job, int64_t now_ms, const InputsKeyFn& inputs_key);
  Status ReholdConsumers(int64_t job_id, int64_t now_ms);
  void Bump() { generation_.fetch_add(1); }
  // Runs `s`, a write, and bumps the generation when it changed a row; returns whether it
  // did.
  Result<bool> RunWrite(Stmt& s);
  // Runs `s`, a write that must change a row, and bumps the generation; NotFound with
  // `not_found` when it changed none.
  Status RunWriteOfOne(Stmt& s, const std::string& not_found);
  // For writes that may make a job leasable (see Store::QueueGeneration); implies Bump().
  // The hint is refreshed first: a poller that sees the new generation sees the new hint.
  void BumpQueue() {
    RefreshQueueHint();
    queue_generation_.fetch_add(1);
    Bump();
    if (queue_listener_) queue_listener_();
  }
  // Writes the lease of `job` (pending, read in this transaction) to `worker_id`; updates
  // `job` to the new attempt. Requires mu_ held and a transaction open.
  Status WriteLease(JobRow* job, const std::string& worker_id, int64_t now_ms, int64_t lease_ms);
  // Recounts the pending jobs and their earliest not-before time for MayHaveLeasableJob.
  void RefreshQueueHint();

  std::mutex mu_;
  std::unique_ptr<Db> db_;
  std::atomic<int64_t> generation_{0};
  std::atomic<int64_t> queue_generation_{0};
  std::function<void()> queue_listener_;  // set before the store is shared
  // MayHaveLeasableJob's inputs; pending_jobs_: 1 when any job is pending, 0 when none,
  // < 0 when unknown (after open or a failed read).
  std::atomic<int64_t> pending_jobs_{-1};
  std::atomic<int64_t> earliest_pending_ms_{0};
};

// A job that waits on another job (a merge or a requirement) has this not_before_ms, so
// AcquireJob never leases it and MayHaveLeasableJob ignores it.
inline constexpr int64_t kWaitingNotBefore = std::numeric_limits<int64_t>::max();

// Column list shared by job queries, in JobFromRow order.
extern const char kJobColumns[];
JobRow JobFromRow(const Stmt& s);
// The same for artifact queries.
const char* ArtifactColumns();
ArtifactRow ArtifactFromStmt(const Stmt& s);

// The rows of `select` (a SELECT ending in "WHERE <column> IN") for every id of `ids`,
// grouped by `key`: one query per 500 ids rather than one per id, at most 100,000 rows
// per id. The caller holds the store's mutex.
template <typename Row>
Result<std::map<int64_t, std::vector<Row>>> SelectByIds(Db& db, const std::string& select,
                                                        const std::string& order,
                                                        const std::vector<int64_t>& ids,
                                                        Row (*from_row)(const Stmt&),
                                                        int64_t Row::*key) {
  constexpr size_t kIdsPerQuery = 500;
  constexpr int64_t kMaxRowsPerId = 100000;
  std::map<int64_t, std::vector<Row>> out;
  for (size_t at = 0; at < ids.size(); at += kIdsPerQuery) {
    size_t n = std::min(kIdsPerQuery, ids.size() - at);
    std::string marks(2 * n - 1, ',');
    for (size_t i = 0; i < n; ++i) marks[2 * i] = '?';
    FARM_ASSIGN_OR_RETURN(auto s, db.Prepare(select + " (" + marks + ") ORDER BY " + order));
    for (size_t i = 0; i < n; ++i) s->Bind(ids[at + i]);
    FARM_RETURN_IF_ERROR(
        ForEachRow(*s, kMaxRowsPerId * static_cast<int64_t>(n), [&](const Stmt& r) {
          Row value = from_row(r);
          out[value.*key].push_back(std::move(value));
        }));
  }
  return out;
}

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_SQL_STORE_SQL_STORE_H_
