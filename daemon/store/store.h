// Store: farmd's durable state in one SQLite file (WAL, foreign keys on; a call answers
// only once its commits are flushed, sql/db.h) or in PostgreSQL.
//
// Every state transition is one transaction, so a crash at any point leaves either the old or
// the new state. Rows are plain structs; nested API messages (recipe, matrix cell,
// capabilities, manifests) are stored as opaque serialized blobs the API layer owns.
// Numeric states use the values of the farm.v1 enums.
//
// The calls are grouped into narrow interfaces, one per area, under ports/ (each with its
// rows); a component that needs one area can take that port alone. Store is all of them
// plus what spans every area: batching calls into one visit or transaction (Visits), and
// the counters that tell watchers something changed.
//
// Thread-safety: a Store may be called from any thread; calls are serialized internally.
#ifndef FARM_DAEMON_STORE_STORE_H_
#define FARM_DAEMON_STORE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "daemon/store/ports/artifact_store.h"
#include "daemon/store/ports/audit_store.h"
#include "daemon/store/ports/build_control.h"
#include "daemon/store/ports/build_graph_store.h"
#include "daemon/store/ports/build_reader.h"
#include "daemon/store/ports/host_store.h"
#include "daemon/store/ports/job_leases.h"
#include "daemon/store/ports/job_stats.h"
#include "daemon/store/ports/lock_store.h"
#include "daemon/store/ports/log_store.h"
#include "daemon/store/ports/new_torch_proofs.h"
#include "daemon/store/ports/project_name_store.h"
#include "daemon/store/ports/provenance_store.h"
#include "daemon/store/ports/publication_store.h"
#include "daemon/store/ports/quota_store.h"
#include "daemon/store/ports/recipe_name_store.h"
#include "daemon/store/ports/schedule_store.h"
#include "daemon/store/ports/source_archive_store.h"
#include "daemon/store/ports/token_store.h"
#include "daemon/store/ports/upstream_preload_store.h"
#include "daemon/store/ports/validation_jobs.h"
#include "daemon/store/ports/visits.h"
#include "daemon/store/ports/worker_store.h"

namespace farm::store {

class Store : public TokenStore,
              public WorkerStore,
              public BuildReader,
              public BuildControl,
              public JobLeases,
              public ValidationJobs,
              public NewTorchProofs,
              public LogStore,
              public ArtifactStore,
              public JobStats,
              public ScheduleStore,
              public BuildGraphStore,
              public PublicationStore,
              public ProvenanceStore,
              public SourceArchiveStore,
              public UpstreamPreloadStore,
              public LockStore,
              public QuotaStore,
              public HostStore,
              public RecipeNameStore,
              public ProjectNameStore,
              public AuditStore,
              public Visits {
 public:
  ~Store() override = default;

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
