// Store: farmd's durable state in one SQLite file (WAL, foreign keys on; a call answers
// only once its commits are flushed, sqlite_db.h) or in PostgreSQL.
//
// Every state transition is one transaction, so a crash at any point leaves either the old or
// the new state. Rows are plain structs; nested API messages (recipe, matrix cell,
// capabilities, manifests) are stored as opaque serialized blobs the API layer owns.
// Numeric states use the values of the farm.v1 enums.
//
// Thread-safety: a Store may be called from any thread; calls are serialized internally.
#ifndef FARM_DAEMON_STORE_STORE_H_
#define FARM_DAEMON_STORE_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/owner_rows.h"
#include "daemon/store/publication_state.h"
#include "daemon/store/worker_state.h"

namespace farm::store {

// Values mirror farm.v1.JobState / BuildState / AttemptCause.
enum JobState : int {
  kJobPending = 1,
  kJobRunning = 2,
  kJobSucceeded = 3,
  kJobFailed = 4,
  kJobCancelled = 5
};
enum BuildState : int {
  kBuildQueued = 1,
  kBuildRunning = 2,
  kBuildSucceeded = 3,
  kBuildFailed = 4,
  kBuildCancelled = 5
};
enum AttemptCause : int {
  kCauseNone = 0,
  kCauseCompleted = 1,
  kCauseBuildFailed = 2,
  kCauseLostWorker = 3,
  kCauseTimedOut = 4,
  kCauseCancelled = 5,
  kCauseInfrastructure = 6,
  kCauseValidationFailed = 7
};

// Values mirror farm.v1.JobKind.
enum JobKind : int { kJobBuild = 1, kJobValidate = 2 };

// Values mirror farm.v1.ValidationState; kValidationUnknown marks artifacts stored before
// the state had a column of its own (their report has not been read yet).
enum ValidationStateValue : int {
  kValidationUnknown = -1,
  kValidationUnspecified = 0,
  kValidationNotRun = 1,
  kValidationPendingHardware = 2,
  kValidationPassed = 3,
  kValidationFailed = 4
};

bool IsTerminal(int job_state);

struct TokenRow {
  std::string hash;
  std::string name;
  std::string role;
  std::string worker_id;
  int64_t created_ms = 0;
  int64_t expires_ms = 0;  // 0: never expires
  int64_t revoked_ms = 0;  // 0: not revoked
};

struct WorkerRow {
  std::string id;
  std::string name;
  std::string capabilities;  // serialized farm.v1.Capabilities
  WorkerState state = WorkerState::kIdle;
  int64_t registered_ms = 0;
  int64_t last_heartbeat_ms = 0;
  bool drain_requested = false;
};

struct BuildRow {
  int64_t id = 0;
  std::string recipe_name;
  std::string recipe;  // serialized farm.v1.Recipe
  int state = kBuildQueued;
  int priority = 0;
  std::string submitted_by;
  std::string rejected_cells;
  int64_t created_ms = 0;
  int64_t finished_ms = 0;
  std::string source_sha256;  // the uploaded source archive it builds, "" for git
};

// Which builds a list shows; empty fields match every build.
struct BuildFilter {
  std::string recipe_name;
  std::string submitted_by;
  int state = 0;                        // a BuildState value; 0: any
  std::vector<std::string> worker_ids;  // builds with a job that ran on one of these
  bool any_worker = false;              // worker_ids applies (an unknown name matches none)
};

struct JobRow {
  int64_t id = 0;
  int64_t build_id = 0;
  std::string cell;  // serialized farm.v1.MatrixCell
  int state = kJobPending;
  int priority = 0;
  int attempt = 0;
  std::string worker_id;
  int64_t lease_expiry_ms = 0;
  bool cancel_requested = false;
  int64_t not_before_ms = 0;
  std::string error;
  std::string build_key;
  int64_t reused_from = 0;   // > 0: created succeeded with that job's artifacts
  int max_attempts = 3;      // infrastructure failures and lost workers are retried below this
  std::string cancelled_by;  // who cancelled it (a token's name), "" if nobody did
  int64_t created_ms = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  int kind = kJobBuild;
  // kJobValidate: the build job and attempt whose artifacts it validates.
  int64_t target_job_id = 0;
  int target_attempt = 0;
  std::string needs;           // serialized farm.v1.JobNeeds
  int64_t compile_mib = 0;     // one compile job of its recipe; 0: not known
  int64_t validation_mib = 0;  // GPU memory its validation script needs; 0: none
  // A job of a recipe with `requires:` (ResolveHeldJobs): kHeld/kHeldForced while its
  // required jobs have not all succeeded; its build_key is empty until then and key_base
  // is the key without the wheels it consumes.
  int held = 0;
  std::string key_base;
};

struct AttemptRow {
  int64_t job_id = 0;
  int number = 0;
  std::string worker_id;
  int cause = kCauseNone;
  std::string detail;
  int exit_code = 0;
  int64_t peak_rss_bytes = 0;
  int64_t log_acked_seq = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  int64_t cache_hits = -1;  // compile cache; -1: the build ran without it
  int64_t cache_misses = -1;
  int64_t units_done = 0;   // compile progress last reported while it ran
  int64_t units_total = 0;  // 0: only units_done is known
};

// Live figures of a running attempt from its worker's heartbeat.
struct ProgressReport {
  int64_t job_id = 0;
  int attempt = 0;
  std::string worker_id;
  int64_t units_done = 0;
  int64_t units_total = 0;
  int64_t peak_rss_bytes = 0;
};

// farm.v1.LogStream values the store writes itself.
inline constexpr int kLogStreamSystem = 3;
inline constexpr int64_t kNoLogLimit = INT64_MAX;

struct LogLineRow {
  int64_t seq = 0;
  int stream = 0;
  std::string text;
  int64_t time_ms = 0;
};

struct ArtifactRow {
  int64_t id = 0;
  int64_t job_id = 0;
  int attempt = 0;
  std::string filename;
  std::string sha256;
  int64_t size = 0;
  std::string manifest;    // serialized farm.v1.ArchManifest
  std::string validation;  // serialized farm.v1.ValidationReport
  int64_t created_ms = 0;
  int validation_state = kValidationUnspecified;  // the report's state (ValidationStateValue)
};

inline constexpr int kNotHeld = 0;
inline constexpr int kHeld = 1;
inline constexpr int kHeldForced = 2;  // built even when its key succeeded before

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

// The build key of a job that consumes wheels: sha256 over its key without them and the
// sha256 of each consumed wheel (sorted), so a new wheel gives a new key. "" when
// `key_base` is "" (the source is unknown).
std::string KeyWithInputs(const std::string& key_base, std::vector<std::string> wheel_sha256s);

// How a worker's report ends an attempt.
struct CompletionReport {
  int64_t job_id = 0;
  int attempt = 0;
  std::string worker_id;
  int cause = kCauseCompleted;
  int exit_code = 0;
  std::string detail;
  int64_t peak_rss_bytes = 0;
  int max_attempts = 1;  // infrastructure failures are retried below this
  bool retry_build_failures = false;
  int64_t retry_not_before_ms = 0;
  // Serialized farm.v1.ValidationReport of the attempt's wheels; stored with each of its
  // artifacts in the same transaction. Empty: the artifacts keep what they have. For a
  // validation job it is stored with the artifacts of its target attempt instead, and with
  // every other artifact of the same bytes (sha256) whose validation waits for hardware.
  std::string validation;
  int validation_state = kValidationUnspecified;  // the report's state
  int64_t cache_hits = -1;                        // compile cache; -1: the build ran without it
  int64_t cache_misses = -1;
  // Validation jobs (kJobValidate, each with its target, attempt and cell) queued in the
  // same transaction when the attempt succeeds: a stable-ABI build's validations in the
  // other torches of its matrix. One per target attempt and cell: a row whose cell already
  // has a validation job of that attempt (in any state) is skipped.
  std::vector<JobRow> on_success;
};

// A finished job's timing with its build's recipe, for charts. started_ms is when the
// attempt that counted started: earlier attempts and the queue between them are no build
// time.
struct JobTimingRow {
  int64_t job_id = 0;
  int64_t build_id = 0;
  std::string recipe_name;
  int state = 0;
  int64_t created_ms = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  std::string cell;  // serialized farm.v1.MatrixCell
};

// Which span of a job a histogram measures.
enum class JobSpan { kQueueWait, kRunTime };

// The histogram bounds (ms) the store keeps counters for as jobs change (migration
// 017_job_counters.sql holds the same values): /metrics' queue-wait and build-duration
// buckets.
inline const std::vector<int64_t> kQueueWaitBoundsMs = {
    1'000, 5'000, 15'000, 30'000, 60'000, 300'000, 900'000, 3'600'000, 14'400'000};
inline const std::vector<int64_t> kRunTimeBoundsMs = {30'000,    60'000,    120'000,   300'000,
                                                      600'000,   1'200'000, 1'800'000, 3'600'000,
                                                      7'200'000, 14'400'000};

// Cumulative counts of jobs whose span (ms) is <= each bound, plus the total and sum.
struct SpanHistogram {
  std::vector<int64_t> bounds_ms;
  std::vector<int64_t> cumulative;  // same length as bounds_ms
  int64_t count = 0;
  double sum_ms = 0;
};

// An artifact of a succeeded job with the job's serialized farm.v1.MatrixCell (index).
struct IndexArtifactRow {
  ArtifactRow artifact;
  std::string cell;
};

// --- schedules (sql_store/schedules.cc) ---

// A schedule: a build request fired by a cron expression. Values mirror
// farm.v1.MissedRunPolicy and farm.v1.ConcurrencyPolicy.
struct ScheduleRow {
  int64_t id = 0;
  std::string name;
  std::string recipe_name;
  std::string request;  // serialized farm.v1.SubmitBuildRequest, as submitted
  std::string cron;
  std::string time_zone;
  int missed_policy = 1;       // 1 skip, 2 run once
  int concurrency_policy = 1;  // 1 skip while the previous run's build is going, 2 allow
  bool paused = false;
  int64_t next_fire_ms = 0;
  std::string created_by;
  int64_t created_ms = 0;
  int64_t deleted_ms = 0;
  std::string source_sha256;  // the uploaded source archive it fires, "" for git
  // A watch schedule (cron ""): the serialized farm.v1.UpstreamWatch, and what it has seen
  // (daemon/cron/watch_state.h). next_fire_ms is then its next poll.
  std::string watch;
  std::string watch_state;
};

// One firing of a schedule: a build submitted, or the reason nothing was built. Values
// mirror farm.v1.ScheduleTrigger and farm.v1.ScheduleRunOutcome.
struct ScheduleRunRow {
  int64_t id = 0;
  int64_t schedule_id = 0;
  int trigger = 0;
  int outcome = 0;
  int64_t fire_ms = 0;  // the fire time answered (the request time for run-now)
  int64_t created_ms = 0;
  int64_t build_id = 0;  // > 0 when a build was submitted
  int build_state = 0;   // the build's state, filled by queries
  std::string resolved_commit;
  std::string inputs_digest;  // hash of every input; "" when the source content is unknown
  std::string detail;
  int64_t upstream_ms = 0;  // watch runs: when upstream published the change answered
  // Not a column: when non-empty, the schedule's watch_state becomes this in the
  // transaction that stores the run (a watch's change is seen exactly when it fired).
  std::string watch_state;
};

// What CreateBuildLinked stores with a build, in the same transaction.
struct BuildLinks {
  // A job (not forced, not reused) whose build key equals a pending or running job's is
  // stored waiting on that job instead of being dispatched (ResolveMergedJobs).
  bool merge_in_flight = false;
  // Recorded with the new build's id; the schedule's next fire time is set to
  // next_fire_ms when >= 0. On success run->id and run->build_id are filled in.
  std::optional<ScheduleRunRow> run;
  int64_t next_fire_ms = -1;
  // Jobs the new build's jobs require: jobs[index] is stored held (kHeld, or kHeldForced
  // when `force`) on required_job_id, and settled in the same transaction when those
  // already ended (ResolveHeldJobs).
  struct Requirement {
    size_t index = 0;
    int64_t required_job_id = 0;
    std::string recipe_name;
    bool for_build = false;
    bool for_validation = false;
  };
  std::vector<Requirement> requirements;
  bool force = false;
};

// One outbox row of the publisher (docs/publishing.md): a wheel on a GitHub release
// (kind "asset"), a file on the Hugging Face Hub ("file"), or a build's GitHub release
// ("release", artifact_id 0). States: pending, uploading, uploaded, published, failed.
struct PublicationRow {
  int64_t id = 0;
  int64_t build_id = 0;
  int64_t artifact_id = 0;
  std::string target;  // "github" or "hf"
  std::string kind;
  std::string repo;
  std::string ref;    // GitHub tag or Hub revision
  std::string path;   // path in the Hub repository
  std::string label;  // local version label applied to the published wheel
  std::string filename;
  std::string sha256;  // blob of the published bytes; "" until prepared
  int64_t size = 0;
  PublicationState state = PublicationState::kPending;
  int attempts = 0;
  int64_t not_before_ms = 0;
  std::string error;
  std::string remote_id;
  std::string remote_url;
  bool replace_remote = false;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

// An artifact of a succeeded job that the publisher has not decided on yet.
struct PublishCandidate {
  ArtifactRow artifact;
  int64_t build_id = 0;
  std::string cell;  // serialized farm.v1.MatrixCell
};

// --- provenance (sql_store/provenance.cc) ---

// One DSSE envelope farmd signed about the wheel with bytes `sha256` (docs/provenance.md):
// kind "build" or "validation", for the job and attempt that made it, signed by `keyid`.
struct ProvenanceRow {
  int64_t id = 0;
  std::string sha256;
  std::string kind;
  int64_t job_id = 0;
  int attempt = 0;
  std::string keyid;
  std::string envelope;  // one line of JSON
  int64_t created_ms = 0;
};

// --- source archives (sql_store/sources.cc) ---

// A source archive a client uploaded and farmd checked; its bytes are the blob `sha256`.
struct SourceArchiveRow {
  std::string sha256;
  int64_t size = 0;
  int64_t files = 0;
  std::string origin;       // what the client packed, for people
  std::string uploaded_by;  // the token's name
  int64_t created_ms = 0;
  int64_t last_used_ms = 0;  // upload, lookup or a build or schedule naming it
};

// --- upstream preloads (sql_store/preloads.cc) ---

// A file an admin preloaded into the pull-through cache (`farmctl cache add`): the name
// `path` of index or tree `source` is the blob `sha256`. `kind` is "index-file",
// "manifest" or "archive" (daemon/mirror/preload.h names them).
struct UpstreamPreloadRow {
  std::string source;
  std::string path;
  std::string kind;
  std::string sha256;
  int64_t size = 0;
  std::string added_by;  // the token's name
  int64_t created_ms = 0;
};

// --- quotas (sql_store/quotas.cc) ---

inline constexpr int64_t kQuotaUnlimited = -1;
inline constexpr int64_t kQuotaRoleDefault = -2;  // an override that defers to the role

// An admin's override of one principal's limits (daemon/quota/): each value a limit,
// kQuotaUnlimited, or kQuotaRoleDefault.
struct QuotaOverrideRow {
  std::string principal;  // a token name
  int64_t submissions = kQuotaRoleDefault;
  int64_t queued_jobs = kQuotaRoleDefault;
  int64_t stored_bytes = kQuotaRoleDefault;
  std::string updated_by;
  int64_t updated_ms = 0;
};

// What a principal holds now (kept as rows change, so reading it is one lookup).
struct PrincipalUsage {
  int64_t queued_jobs = 0;  // pending and running jobs of its builds
  // Its builds' recipes, log text and wheels (not the copies of reused or merged jobs),
  // and the source archives it uploaded.
  int64_t stored_bytes = 0;
};

// --- hosts (sql_store/hosts.cc) ---

// A machine farmd provisions with the playbooks. States: added, provisioning,
// provisioned, failed. Counts are the last run's PLAY RECAP for the host.
struct HostRow {
  std::string name;
  std::string address;
  std::string kind;
  std::string vars;  // serialized farm.v1.Host holding only vars
  std::string state = "added";
  int changed = 0;
  int ok = 0;
  int failed = 0;
  int unreachable = 0;
  int runs = 0;
  std::string error;
  int64_t created_ms = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
};

// One lease the dispatcher asks the store to write: job `job_id` to worker `worker_id`.
struct LeaseRequest {
  int64_t job_id = 0;
  std::string worker_id;
};

// Returns "" when `worker` may run `job`, else the reason it may not. Called inside the
// acquire transaction, so it must not call back into the Store.
using PlacementFn = std::function<std::string(const JobRow& job)>;

class Store {
 public:
  virtual ~Store() = default;

  // --- tokens ---
  virtual Status InsertToken(const TokenRow& token) = 0;
  // NotFound when no token has this hash.
  virtual Result<TokenRow> FindToken(const std::string& hash) = 0;
  virtual Result<int64_t> CountTokens() = 0;
  // Every token (worker tokens too), oldest first. Defaults answer Unimplemented.
  virtual Result<std::vector<TokenRow>> ListTokens();
  // Marks the token whose hash starts with `hash_prefix` (at least 8 hex digits) revoked
  // at now_ms. NotFound when none matches, InvalidArgument when several do or the prefix
  // is short, FailedPrecondition when it is already revoked.
  virtual Result<TokenRow> RevokeToken(const std::string& hash_prefix, int64_t now_ms);

  // --- workers ---
  virtual Status UpsertWorker(const WorkerRow& worker) = 0;
  virtual Result<WorkerRow> GetWorker(const std::string& id) = 0;
  virtual Result<std::vector<WorkerRow>> ListWorkers() = 0;
  virtual Status TouchWorker(const std::string& id, int64_t now_ms, WorkerState state) = 0;
  // Sets or clears the operator's drain request; NotFound for an unknown worker.
  virtual Status SetDrainRequested(const std::string& id, bool drain) = 0;
  // Number of jobs `worker_id` holds right now.
  virtual Result<int> CountRunningJobs(const std::string& worker_id) = 0;
  // The jobs `worker_id` holds right now, by id (at most 1000). The default answers
  // Unimplemented.
  virtual Result<std::vector<JobRow>> ListRunningJobs(const std::string& worker_id);

  // --- builds and jobs ---
  // Inserts the build and its jobs in one transaction; fills in the ids. A job with
  // reused_from > 0 is inserted succeeded, with copies of that job's artifact rows.
  virtual Status CreateBuild(BuildRow* build, std::vector<JobRow>* jobs) = 0;
  virtual Result<BuildRow> GetBuild(int64_t id) = 0;
  // Newest first, ids < before_id (0: from the newest), at most `limit`.
  virtual Result<std::vector<BuildRow>> ListBuilds(int64_t before_id, int limit) = 0;
  // ListBuilds of the builds that match every set field of `filter`. The default answers
  // Unimplemented.
  virtual Result<std::vector<BuildRow>> ListBuildsMatching(const BuildFilter& filter,
                                                           int64_t before_id, int limit);
  virtual Result<std::vector<JobRow>> ListJobs(int64_t build_id) = 0;
  // ListJobs of each of `build_ids` (a builds page), by build id; a build without jobs has
  // no entry. The default asks ListJobs once per build.
  virtual Result<std::map<int64_t, std::vector<JobRow>>> ListJobsOfBuilds(
      const std::vector<int64_t>& build_ids);
  virtual Result<JobRow> GetJob(int64_t id) = 0;
  // The newest succeeded job with this build key that has artifacts, if any.
  virtual Result<std::optional<JobRow>> FindSucceededJob(const std::string& build_key) = 0;
  virtual Result<std::vector<AttemptRow>> ListAttempts(int64_t job_id) = 0;
  // ListAttempts of each of `job_ids` (a build's reply), by job id; a job without
  // attempts has no entry. The default asks once per job.
  virtual Result<std::map<int64_t, std::vector<AttemptRow>>> ListAttemptsOfJobs(
      const std::vector<int64_t>& job_ids);
  // ListArtifacts of each of `job_ids`, by job id, the same way.
  virtual Result<std::map<int64_t, std::vector<ArtifactRow>>> ListArtifactsOfJobs(
      const std::vector<int64_t>& job_ids);
  // Pending jobs in dispatch order (priority desc, id asc), at most `limit`.
  virtual Result<std::vector<JobRow>> ListPendingJobs(int limit) = 0;

  // Leases the first pending job (priority desc, FIFO) for which `placeable` returns "":
  // starts a new attempt held by `worker_id` until now+lease_ms. nullopt when none fits.
  virtual Result<std::optional<JobRow>> AcquireJob(const std::string& worker_id, int64_t now_ms,
                                                   int64_t lease_ms,
                                                   const PlacementFn& placeable) = 0;
  // Ids of the jobs leasable at `now_ms` (pending, not-before passed, so no held job) in
  // dispatch order (priority desc, id asc), at most `limit`. Cheap: the in-memory
  // dispatcher diffs it against the jobs it already holds.
  virtual Result<std::vector<int64_t>> ListLeasableJobIds(int64_t now_ms, int limit) = 0;
  // The jobs of `ids` that exist, in no particular order.
  virtual Result<std::vector<JobRow>> GetJobs(const std::vector<int64_t>& ids) = 0;
  // Leases every request whose job is still leasable at `now_ms`, all in one transaction
  // (a new attempt held until now+lease_ms, as AcquireJob). Returns, per request in order,
  // the leased job or nullopt when it no longer was leasable (leased, cancelled, held).
  virtual Result<std::vector<std::optional<JobRow>>> LeaseJobs(
      const std::vector<LeaseRequest>& requests, int64_t now_ms, int64_t lease_ms) = 0;
  // The running jobs `worker_id` holds whose cancellation was requested (a read; what
  // RenewLeases returns, without renewing).
  virtual Result<std::vector<JobRow>> CancelRequestedJobs(const std::string& worker_id) = 0;
  // Extends the leases of the running jobs `worker_id` holds; returns the ids of those
  // whose cancellation was requested.
  virtual Result<std::vector<JobRow>> RenewLeases(const std::string& worker_id, int64_t now_ms,
                                                  int64_t lease_ms) = 0;
  // Ends the attempt. FailedPrecondition when the attempt is not the job's current one
  // or `worker_id` does not hold it; repeating the report of an ended attempt is OK.
  // Returns the job's state afterwards.
  virtual Result<int> CompleteAttempt(const CompletionReport& report, int64_t now_ms) = 0;
  // Ends every attempt whose lease expired before now: the job is requeued (cause lost
  // worker) while below its max_attempts, else failed, or cancelled when cancellation was
  // requested. Returns the affected job ids.
  virtual Result<std::vector<int64_t>> ExpireLeases(int64_t now_ms) = 0;
  // Gives every running job a full lease from now. farmd calls it at start so workers that
  // kept building while it was down have time to reconnect before their jobs are requeued.
  virtual Status ExtendRunningLeases(int64_t now_ms, int64_t lease_ms) = 0;
  // Gives `worker_id` back attempt `attempt` of a job that was requeued after its lease
  // expired but not leased to anyone since (a worker back from a network cut whose build
  // kept running). Returns false, changing nothing, when the job moved on.
  virtual Result<bool> ReattachAttempt(int64_t job_id, int attempt, const std::string& worker_id,
                                       int64_t now_ms, int64_t lease_ms) = 0;
  // Ends the attempts `worker_id` holds except the jobs in `keep`, as if their leases had
  // expired (cause lost worker, `detail`). Used when a worker restarts or stops reporting a
  // job it was given. Returns the affected job ids.
  virtual Result<std::vector<int64_t>> ReleaseWorkerJobs(const std::string& worker_id,
                                                         const std::vector<int64_t>& keep,
                                                         const std::string& detail,
                                                         int64_t now_ms) = 0;
  // Records a running attempt's live progress (units, peak RSS; the peak never falls)
  // when `worker_id` holds it; anything else is ignored. Returns whether it changed a row.
  // The default answers Unimplemented.
  virtual Result<bool> RecordProgress(const ProgressReport& report);
  // Queues a failed or cancelled job again as a new attempt with a fresh attempt budget;
  // its history stays. Jobs that failed because they require it (directly or through
  // others) are held again on it. FailedPrecondition for a job that is pending, running or
  // succeeded.
  virtual Status RetryJob(int64_t job_id, int64_t now_ms) = 0;
  // Cancels pending jobs now and asks the workers of running jobs to stop; `who` is
  // recorded with each job it cancels. FailedPrecondition, changing nothing, for a build
  // that already ended (succeeded, failed or cancelled).
  virtual Status CancelBuild(int64_t build_id, int64_t now_ms, const std::string& who) = 0;

  // --- validation jobs ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // Queues `job` (kind kJobValidate, with its build, target, cell and needs) in its build
  // without changing the build's state, unless a validation job of the same target attempt
  // and cell is pending or running: then that one is returned and nothing is stored. On
  // success returns the job as stored.
  virtual Result<JobRow> QueueValidationJob(const JobRow& job);
  // The validation jobs of one target attempt, oldest first.
  virtual Result<std::vector<JobRow>> ListValidationJobs(int64_t target_job_id, int target_attempt);
  // Artifacts whose validation_state is `state`, id > after_id ascending, at most `limit`.
  virtual Result<std::vector<ArtifactRow>> ListArtifactsInValidationState(int state,
                                                                          int64_t after_id,
                                                                          int limit);
  // Records the state of an artifact's stored report (for rows stored before the column).
  virtual Status SetArtifactValidationState(int64_t artifact_id, int state);

  // --- logs ---
  // Stores lines in seq order for the job's attempt, ignoring seqs already stored and
  // stopping at the first gap. Returns the highest seq stored without a gap.
  // Once the attempt's stored text would pass `max_bytes`, the line that crosses it is
  // replaced by one kLogStreamSystem line saying the log was truncated, and later lines are
  // acknowledged without being stored: a build printing gigabytes costs the database
  // `max_bytes`, and its worker's shipper is not held back. The worker's own
  // kLogStreamSystem lines are still stored, up to a reserve of 256 KiB past the limit.
  virtual Result<int64_t> AppendLogLines(int64_t job_id, int attempt,
                                         const std::vector<LogLineRow>& lines,
                                         int64_t max_bytes) = 0;
  Result<int64_t> AppendLogLines(int64_t job_id, int attempt,
                                 const std::vector<LogLineRow>& lines) {
    return AppendLogLines(job_id, attempt, lines, kNoLogLimit);
  }
  virtual Result<std::vector<LogLineRow>> GetLogLines(int64_t job_id, int attempt,
                                                      int64_t after_seq, int limit) = 0;
  virtual Result<int64_t> LastLogSeq(int64_t job_id, int attempt) = 0;

  // --- artifacts ---
  // Idempotent on (job, attempt, filename) when the sha256 matches; AlreadyExists otherwise.
  virtual Result<ArtifactRow> InsertArtifact(const ArtifactRow& artifact) = 0;
  virtual Result<std::vector<ArtifactRow>> ListArtifacts(int64_t job_id) = 0;
  virtual Result<ArtifactRow> GetArtifact(int64_t id) = 0;

  // --- dashboard and index queries (sql_store/queries.cc) ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // Jobs per state: element i counts jobs with state i (0..5, the farm.v1.JobState values).
  // Read from counters the store keeps as jobs change, not by counting the jobs.
  virtual Result<std::vector<int64_t>> CountJobsByState();
  // Jobs in `state`, newest id first, ids < before_id (0: from the newest), at most `limit`.
  virtual Result<std::vector<JobRow>> ListJobsInState(int state, int64_t before_id, int limit);
  // Queue wait (started - created, jobs that started and were not reused) or run time
  // (finished - started, terminal jobs that started) over all jobs. With the kept bounds
  // (kQueueWaitBoundsMs, kRunTimeBoundsMs) it reads counters the store keeps as jobs
  // change, a few rows whatever the number of jobs; other bounds count every job.
  virtual Result<SpanHistogram> JobSpanHistogram(JobSpan span,
                                                 const std::vector<int64_t>& bounds_ms);
  // Terminal build jobs that ran (validation jobs are no build time), newest finish first,
  // at most `limit`.
  virtual Result<std::vector<JobTimingRow>> ListJobTimings(int limit);
  // Artifacts of succeeded jobs (reused jobs' copies included), by artifact id.
  virtual Result<std::vector<IndexArtifactRow>> ListIndexArtifacts(int limit);
  // The run time (start to end of its counted attempt) of the newest build job before
  // `before_job_id` that succeeded by building (not reused) the same serialized cell for a
  // build of `recipe_name`; nullopt when there is none. Validation jobs never count.
  virtual Result<std::optional<int64_t>> LastSuccessfulRunMs(const std::string& recipe_name,
                                                             const std::string& cell,
                                                             int64_t before_job_id);

  // --- schedules and in-flight merges (sql_store/schedules.cc) ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // Inserts the schedule; fills in its id.
  virtual Status InsertSchedule(ScheduleRow* schedule);
  // NotFound for an unknown or deleted schedule.
  virtual Result<ScheduleRow> GetSchedule(int64_t id);
  // Schedules not deleted, by id.
  virtual Result<std::vector<ScheduleRow>> ListSchedules();
  // Pauses or resumes; a resumed schedule fires next at next_fire_ms.
  virtual Status SetSchedulePaused(int64_t id, bool paused, int64_t next_fire_ms);
  // Marks the schedule deleted; its runs and builds stay. NotFound when unknown.
  virtual Status DeleteSchedule(int64_t id, int64_t now_ms);
  // Records a run that submitted nothing and sets the next fire time when
  // next_fire_ms >= 0, in one transaction. Fills in run->id.
  virtual Status RecordScheduleRun(ScheduleRunRow* run, int64_t next_fire_ms);
  // A watch's poll that fired nothing: its state and next poll time.
  virtual Status SetWatchState(int64_t id, const std::string& state, int64_t next_fire_ms);
  // The schedule's runs, newest first, at most `limit`, with their builds' states.
  virtual Result<std::vector<ScheduleRunRow>> ListScheduleRuns(int64_t schedule_id, int limit);
  // The newest run whose build succeeded, if any.
  virtual Result<std::optional<ScheduleRunRow>> LastSucceededScheduleRun(int64_t schedule_id);
  // The build of one of the schedule's runs that is still queued or running, 0 if none.
  virtual Result<int64_t> ActiveScheduleBuild(int64_t schedule_id);
  // The id of the schedule whose run submitted `build_id`, 0 if none.
  virtual Result<int64_t> ScheduleOfBuild(int64_t build_id);
  // The schedule runs that submitted `build_ids`, by build id (each build has at most one).
  virtual Result<std::map<int64_t, std::vector<ScheduleRunRow>>> ListScheduleRunsOfBuilds(
      const std::vector<int64_t>& build_ids);
  // CreateBuild plus `links` (in-flight merges, a schedule run) in one transaction.
  virtual Status CreateBuildLinked(BuildRow* build, std::vector<JobRow>* jobs, BuildLinks* links);
  // Settles jobs waiting on another job: when that job succeeded with artifacts the
  // waiting job succeeds with copies of them (reused_from = that job); when it failed or
  // was cancelled the waiting job is released to be built itself (a failed result is
  // never reused). Returns the ids of the settled jobs.
  virtual Result<std::vector<int64_t>> ResolveMergedJobs(int64_t now_ms);

  // --- build graphs (sql_store/graph.cc) ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // Settles held jobs whose required jobs ended: when all succeeded the job records their
  // wheels as its inputs, takes the key KeyWithInputs(key_base, their sha256s) and is then
  // answered from a succeeded job with that key (unless forced), merged onto an identical
  // job in flight, or released to be built; when one failed or was cancelled the job fails
  // with an error naming it (and stays held, so a retry of that job releases it). Returns
  // the ids of the settled jobs.
  virtual Result<std::vector<int64_t>> ResolveHeldJobs(int64_t now_ms);
  // The jobs `job_id` requires, in the order they were stored.
  virtual Result<std::vector<RequirementRow>> ListRequirements(int64_t job_id);
  // The jobs that require `job_id`, by id.
  virtual Result<std::vector<RequirementRow>> ListConsumers(int64_t job_id);
  // The wheels `job_id` was given (empty while it is held), by artifact id.
  virtual Result<std::vector<JobInputRow>> ListJobInputs(int64_t job_id);
  // Those of `job_ids` that require a job or are required by one, in one read: a build's
  // reply asks ListRequirements and ListConsumers only of these. The default answers all
  // of them (each is then asked).
  virtual Result<std::set<int64_t>> JobsInGraph(const std::vector<int64_t>& job_ids);

  // --- publication outbox (sql_store/publish.cc) ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // Artifacts of succeeded jobs (the counted attempt or a reused copy) not yet marked
  // scanned, artifact id > after_id ascending, at most `limit`.
  virtual Result<std::vector<PublishCandidate>> ListPublishCandidates(int64_t after_id, int limit);
  // In one transaction: inserts `rows` with their state and error (a row whose (build,
  // artifact, target) exists is kept as it is) and marks `artifact_id` scanned with
  // `outcome` (nothing is marked for artifact_id 0).
  virtual Status EnqueuePublications(int64_t artifact_id, const std::string& outcome,
                                     const std::vector<PublicationRow>& rows, int64_t now_ms);
  // Every row of the build, by id.
  virtual Result<std::vector<PublicationRow>> ListPublications(int64_t build_id);
  // ListPublications of each of `build_ids`, by build id; a build without rows has no
  // entry. The default asks ListPublications once per build.
  virtual Result<std::map<int64_t, std::vector<PublicationRow>>> ListPublicationsOfBuilds(
      const std::vector<int64_t>& build_ids);
  // Rows to work now: "uploading" ones (a crash interrupted them) and "pending" ones whose
  // not_before has passed, by id, at most `limit`.
  virtual Result<std::vector<PublicationRow>> ListDuePublications(int64_t now_ms, int limit);
  // Stores state, attempts, not_before, error, path and remote id/url of `row` (by id).
  virtual Status UpdatePublication(const PublicationRow& row, int64_t now_ms);
  // Records the prepared (relabelled) wheel on every row of `artifact_id` that has none.
  virtual Status SetPublicationFile(int64_t artifact_id, const std::string& label,
                                    const std::string& filename, const std::string& sha256,
                                    int64_t size, int64_t now_ms);
  // Marks the build's GitHub release row and its asset rows published.
  virtual Status MarkReleasePublished(int64_t build_id, const std::string& remote_id,
                                      const std::string& remote_url, int64_t now_ms);
  // Rows of every build, failed ones first, then the most recently updated, at most
  // `limit`.
  virtual Result<std::vector<PublicationRow>> ListRecentPublications(int limit);
  // Publication rows per state ("pending", "failed", ...), over every build.
  virtual Result<std::map<std::string, int64_t>> CountPublicationsByState();
  // Puts the build's rows for `target` ("" for all) back to pending with no attempts and
  // no error; `replace` lets them overwrite remote files that differ. Returns the count.
  virtual Result<int> RequeuePublications(int64_t build_id, const std::string& target, bool replace,
                                          int64_t now_ms);

  // --- provenance (sql_store/provenance.cc) ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // Stores a signed envelope; a row of the same (sha256, kind, job, attempt) is kept as it
  // is (a repeated upload or report signs nothing twice). Returns whether it was stored.
  virtual Result<bool> InsertProvenance(const ProvenanceRow& row);
  // The envelopes about the wheel `sha256`, builds first, then by id; at most `limit`.
  virtual Result<std::vector<ProvenanceRow>> ListProvenance(const std::string& sha256, int limit);
  // Rows signed by `keyid`, id > after_id ascending, at most `limit` (re-signing).
  virtual Result<std::vector<ProvenanceRow>> ListProvenanceSignedBy(const std::string& keyid,
                                                                    int64_t after_id, int limit);
  // Replaces row `id`'s envelope and key (a re-signature of the same statement).
  virtual Status ResignProvenance(int64_t id, const std::string& keyid,
                                  const std::string& envelope);
  // The wheels farmd put into the Hub repository `repo` at revision `ref` (file rows
  // uploaded or published) whose path starts with `dir`: what its SHA256SUMS lists.
  virtual Result<std::vector<PublicationRow>> ListHubFilesUnder(const std::string& repo,
                                                                const std::string& ref,
                                                                const std::string& dir);

  // --- source archives (sql_store/sources.cc) ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // Records a checked upload; an archive already recorded only gets its last use updated.
  virtual Status RecordSourceArchive(const SourceArchiveRow& row);
  // NotFound when no such archive was recorded.
  virtual Result<SourceArchiveRow> GetSourceArchive(const std::string& sha256);
  // Marks the archive used at now_ms; NotFound when it is not recorded.
  virtual Status TouchSourceArchive(const std::string& sha256, int64_t now_ms);
  // Archives unused since before `unused_before_ms` that no schedule (not deleted), no
  // queued or running build and no artifact names, oldest use first, at most `limit`.
  virtual Result<std::vector<SourceArchiveRow>> ListCollectableSources(int64_t unused_before_ms,
                                                                       int limit);
  // Forgets the archive when it is still collectable as ListCollectableSources defines it
  // (checked in the same statement, so a build submitted meanwhile keeps it). Returns
  // whether it was forgotten; the caller then removes the blob.
  virtual Result<bool> ForgetSourceArchive(const std::string& sha256, int64_t unused_before_ms);

  // --- upstream preloads (sql_store/preloads.cc) ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // Records the preload; true when recorded now, false when the same name already holds
  // the same sha256 (nothing changes); AlreadyExists when it holds other content.
  virtual Result<bool> RecordUpstreamPreload(const UpstreamPreloadRow& row);
  // The preload at `path` of `source`; nullopt when there is none.
  virtual Result<std::optional<UpstreamPreloadRow>> GetUpstreamPreload(const std::string& source,
                                                                       const std::string& path);
  // Every preload, by source and path.
  virtual Result<std::vector<UpstreamPreloadRow>> ListUpstreamPreloads();

  // --- quotas (sql_store/quotas.cc) ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // The principal's override, nullopt when it has none.
  virtual Result<std::optional<QuotaOverrideRow>> GetQuotaOverride(const std::string& principal);
  // Stores the override; one whose three values are all kQuotaRoleDefault is removed.
  virtual Status SetQuotaOverride(const QuotaOverrideRow& row);
  // What `principal` holds now.
  virtual Result<PrincipalUsage> GetPrincipalUsage(const std::string& principal);

  // --- hosts (sql_store/hosts.cc) ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // Inserts the host; with `replace` an existing host gets the new address, kind and vars
  // (its state and last run stay). AlreadyExists for a known host without `replace`.
  virtual Status UpsertHost(const HostRow& host, bool replace);
  // NotFound for an unknown host.
  virtual Result<HostRow> GetHost(const std::string& name);
  // Every host, by name.
  virtual Result<std::vector<HostRow>> ListHosts();
  // Starts a run: state provisioning, runs + 1, started_ms, empty log and error.
  // FailedPrecondition while a run is going; NotFound for an unknown host.
  virtual Status BeginHostRun(const std::string& name, int64_t now_ms);
  // Appends output to the running run's log.
  virtual Status AppendHostLog(const std::string& name, const std::string& text);
  // Records how the run ended: state, counts, error and finished_ms from `result`.
  virtual Status FinishHostRun(const HostRow& result);
  // The last run's log ("" before any run).
  virtual Result<std::string> GetHostLog(const std::string& name);
  // Runs left "provisioning" by a farmd that stopped during them end as failed. Returns
  // how many.
  virtual Result<int> FailInterruptedHostRuns(int64_t now_ms);

  // --- recipe names and the audit log (sql_store/owners.cc) ---
  // Defaults answer Unimplemented so other Store implementations need not provide them.
  // The name's row, made with `owner` when the name has none (one statement: of two
  // callers racing for a new name exactly one gets it). Returns the row as it stands.
  virtual Result<RecipeNameRow> ClaimRecipeName(const std::string& name, const std::string& owner,
                                                int64_t now_ms);
  // nullopt for a name nobody owns.
  virtual Result<std::optional<RecipeNameRow>> GetRecipeName(const std::string& name);
  // Every owned name, by name.
  virtual Result<std::vector<RecipeNameRow>> ListRecipeNames();
  // Gives the name to `owner` (a name nobody owned is claimed for it). Returns the new row.
  virtual Result<RecipeNameRow> TransferRecipeName(const std::string& name,
                                                   const std::string& owner, int64_t now_ms);
  // Appends a record; fills in its id.
  virtual Status InsertAudit(AuditRow* row);
  virtual Result<std::vector<AuditRow>> ListAudit(const AuditFilter& filter);

  // Runs `calls`, several calls on this store and nothing slow besides (no other service's
  // lock, no network; a log line at most), as
  // one visit: other threads' calls wait until it returns, so a handler that needs several
  // reads queues for the store once instead of once per read. Calls that write each commit
  // as they would alone. Returns what `calls` returns. A store without the notion runs it.
  virtual Status Together(const std::function<Status()>& calls) { return calls(); }
  // Together, with every write of `calls` in one transaction: committed when `calls`
  // returns Ok, all undone when it does not. A call inside whose own transaction fails
  // undoes only its writes (a savepoint). For a batch of alike writes: one commit, and one
  // write of each shared page, instead of one each. A store without transactions runs the
  // calls as Together does.
  virtual Status TogetherInOneTransaction(const std::function<Status()>& calls) {
    return Together(calls);
  }

  // Monotonic counter bumped by every committed write; watchers poll it cheaply.
  virtual int64_t Generation() const = 0;

  // Monotonic counter bumped only by writes that can give an idle worker a job: a job
  // queued (submitted, requeued, retried) or a change to the set of workers placement
  // considers (registered, drain, a state placement passes over: lost, draining,
  // quarantined). Leases, logs, heartbeats, flips between idle and busy and completions that
  // end a job leave it alone, so long-polling workers are not woken by each other's progress.
  // A store that does not track it answers Generation(): more wake-ups, never fewer.
  virtual int64_t QueueGeneration() const { return Generation(); }

  // `listener` is called after every write that moves QueueGeneration, on the writing
  // thread and possibly under the store's locks: it may only signal, never call the store.
  // Set once, before the store is shared. A store without the hook never calls it (its
  // users then poll QueueGeneration).
  virtual void SetQueueListener(std::function<void()> /*listener*/) {}

  // A lock-free hint for long polls: false only when no pending job can be leased at
  // `now_ms` by anyone (none is queued, or all wait for a later not-before time), so the
  // caller may skip AcquireJob. It may answer true when none can be leased (placement is
  // not considered; it is kept up to date on writes that queue jobs). Never false while a
  // job is leasable.
  virtual bool MayHaveLeasableJob(int64_t /*now_ms*/) const { return true; }
};

// Opens (creating when missing) the SQLite database at `path` and applies the numbered
// migrations that are not yet applied, each in its own transaction.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_STORE_H_
