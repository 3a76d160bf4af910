// What the gRPC services share, made by FarmServer (daemon/app/server.cc): the stores, the
// token authority, the clock and farmd's tunables; the use cases (daemon/builds/) and the
// dispatcher the handlers hand requests to; the services farmd runs beside them
// (schedules, hosts, quotas, the audit log, provenance signing, the pull-through cache);
// and what workers and clients are told (the upstream URL). A pointer left null means
// farmd does not serve that part (each field says what then). Services hold a pointer.
// Thread-safe members.
#ifndef FARM_DAEMON_API_SERVICE_CONTEXT_H_
#define FARM_DAEMON_API_SERVICE_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/clock.h"
#include "common/git_policy.h"
#include "daemon/api/auth.h"
#include "daemon/audit/audit_log.h"
#include "daemon/builds/front_end_deps.h"
#include "daemon/cron/new_schedule.h"
#include "daemon/sched/fleet_cache.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/store.h"

namespace farm::cron {
class SourceResolver;
}  // namespace farm::cron

namespace farm::hosts {
class HostManager;
}  // namespace farm::hosts

namespace farm::quota {
class QuotaKeeper;
}  // namespace farm::quota
namespace farm::builds {
class Completer;
class Heartbeats;
class RecipeCache;
class Submitter;
}  // namespace farm::builds
namespace farm::sched {
class Dispatcher;
}  // namespace farm::sched

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

// The stores, the token authority, the clock, the use cases (Control, ScheduleControl),
// provenance, the audit log and the pull-through cache are FrontEndDeps', shared with the
// HTTP port.
struct ServiceContext : builds::FrontEndDeps {
  Tunables tunables;
  std::atomic<bool>* shutting_down = nullptr;
  cron::SourceResolver* resolver = nullptr;  // git ref -> commit; null: not resolved
  git::GitPolicy git;                        // which git URLs a build may name
  hosts::HostManager* hosts = nullptr;       // null: hosts are not served
  quota::QuotaKeeper* quotas = nullptr;      // null: nobody is limited
  // Workers must present a client certificate farmd verified (--client-ca, mTLS).
  bool require_worker_certs = false;
  // The workers as build and job replies explain placement with (shared by copies).
  std::shared_ptr<sched::FleetCache> fleet_cache = std::make_shared<sched::FleetCache>();
  // Where workers fetch their environments' upstreams through farmd ("http://host:port");
  // empty when farmd serves none (`mirror` is the cache behind it, which `farmctl cache
  // add` preloads). Set before the gRPC API starts.
  std::string upstream_url;
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
  // The use cases (daemon/builds/) besides Control, made by FarmServer: submitting a
  // build (submit.h), what a worker's Heartbeat (heartbeat.h) and CompleteJob
  // (completion.h) mean, the recipes of recent builds, which every lease carries, and the
  // dispatcher that hands leasable jobs to waiting AcquireJob polls (sched/dispatcher.h).
  builds::Submitter* submitter = nullptr;
  builds::Heartbeats* heartbeats = nullptr;
  builds::Completer* completer = nullptr;
  builds::RecipeCache* recipes = nullptr;
  sched::Dispatcher* dispatcher = nullptr;
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
