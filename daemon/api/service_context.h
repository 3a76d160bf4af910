// What the gRPC services share: the store, the blob store, the token authority, the clock
// and farmd's tunables. Owned by FarmServer; services hold a pointer. Thread-safe members.
#ifndef FARM_DAEMON_API_SERVICE_CONTEXT_H_
#define FARM_DAEMON_API_SERVICE_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/clock.h"
#include "common/git_policy.h"
#include "daemon/api/auth.h"
#include "daemon/audit/audit_log.h"
#include "daemon/cron/new_schedule.h"
#include "daemon/sched/fleet_cache.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/store.h"

namespace farm::cron {
class SourceResolver;
class ScheduleRunner;
}  // namespace farm::cron

namespace farm::hosts {
class HostManager;
}  // namespace farm::hosts

namespace farm::attest {
class Attestor;
}  // namespace farm::attest
namespace farm::quota {
class QuotaKeeper;
}  // namespace farm::quota
namespace farm::mirror {
class PullThroughCache;
}  // namespace farm::mirror

namespace farm::locks {
class EnvLocker;
}  // namespace farm::locks

namespace farm::api {

struct Tunables {
  int64_t lease_ms = 30000;     // a running job's lease, renewed by heartbeats
  int64_t heartbeat_ms = 2000;  // interval the workers are told to use
  int max_attempts = 3;         // default for infrastructure failures
  int64_t max_artifact_bytes = 4LL << 30;
  int64_t max_log_bytes = 64LL << 20;    // stored log text per attempt; the rest is dropped
  int64_t max_source_bytes = 8LL << 30;  // largest source archive a client may upload
  // Source archives unused this long are removed unless a schedule or an unfinished build
  // names them; 0 keeps them forever.
  int64_t source_retention_ms = 30LL * 24 * 3600 * 1000;
};

struct ServiceContext {
  store::Store* store = nullptr;
  store::BlobStore* blobs = nullptr;
  TokenAuthority* auth = nullptr;
  const Clock* clock = nullptr;
  Tunables tunables;
  std::atomic<bool>* shutting_down = nullptr;
  cron::SourceResolver* resolver = nullptr;   // git ref -> commit; null: not resolved
  git::GitPolicy git;                         // which git URLs a build may name
  cron::ScheduleRunner* schedules = nullptr;  // null: schedules are not served
  hosts::HostManager* hosts = nullptr;        // null: hosts are not served
  quota::QuotaKeeper* quotas = nullptr;       // null: nobody is limited
  attest::Attestor* attestor = nullptr;       // signs provenance; null: none is signed
  // Workers must present a client certificate farmd verified (--client-ca, mTLS).
  bool require_worker_certs = false;
  // Where every mutation is recorded (HandleMutation); null: nothing is recorded.
  audit::AuditLog* audit = nullptr;
  // The workers as build and job replies explain placement with (shared by copies).
  std::shared_ptr<sched::FleetCache> fleet_cache = std::make_shared<sched::FleetCache>();
  // Where workers fetch their environments' upstreams through farmd ("http://host:port");
  // empty when farmd serves none. Set before the gRPC API starts.
  std::string upstream_url;
  // The pull-through cache behind it, which `farmctl cache add` preloads; null: none.
  mirror::PullThroughCache* mirror = nullptr;
  // farmd's HTTP side as clients reach it (--public-url, else the dashboard's address);
  // "" without one (GetServerInfo).
  std::string http_url;
  // It serves a redist tree (--upstream-tree redist=...): workers that count on farmd for
  // toolkits can fetch them (sched::SettleProvisioning).
  bool serves_toolkits = false;
  // What schedules' upstream watches and following matrices may read (farmd's upstream
  // indexes and trees) and how often; `upstream_fetcher` null: nothing is read upstream.
  cron::WatchSettings watches;
  upstream::Fetcher* upstream_fetcher = nullptr;
  // Resolves the lock of every provisioned cell at submit; null: provisioned recipes are
  // refused.
  locks::EnvLocker* locker = nullptr;
};

// Polls `generation()` (by default `ctx.store->Generation()`) until it differs from `seen`,
// the deadline passes, shutdown starts or `cancelled()` returns true. Returns the new
// generation.
template <typename CancelFn, typename GenerationFn>
int64_t WaitForChange(const ServiceContext& ctx, int64_t seen, int64_t deadline_steady_ms,
                      CancelFn cancelled, GenerationFn generation);
template <typename CancelFn>
int64_t WaitForChange(const ServiceContext& ctx, int64_t seen, int64_t deadline_steady_ms,
                      CancelFn cancelled) {
  return WaitForChange(ctx, seen, deadline_steady_ms, cancelled,
                       [&ctx] { return ctx.store->Generation(); });
}

}  // namespace farm::api

#include <thread>

namespace farm::api {

template <typename CancelFn, typename GenerationFn>
int64_t WaitForChange(const ServiceContext& ctx, int64_t seen, int64_t deadline_steady_ms,
                      CancelFn cancelled, GenerationFn generation) {
  // Polling an atomic every 50 ms costs nothing measurable and needs no wake-up plumbing.
  for (int i = 0; i < 100000; ++i) {
    int64_t now = generation();
    if (now != seen || ctx.clock->SteadyMs() >= deadline_steady_ms || cancelled() ||
        (ctx.shutting_down && ctx.shutting_down->load())) {
      return now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return generation();
}

}  // namespace farm::api

#endif  // FARM_DAEMON_API_SERVICE_CONTEXT_H_
