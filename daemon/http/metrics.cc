#include "daemon/http/metrics.h"

#include <map>
#include <sstream>

#include "daemon/mirror/pull_through.h"

namespace farm::http {

namespace {

constexpr const char* kJobStates[] = {"", "pending", "running", "succeeded", "failed", "cancelled"};

void Header(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

// The bounds are those the store keeps counters for, so a scrape reads a few rows.
Status WriteHistogram(std::ostringstream& out, const DashboardDeps& deps, store::JobSpan span,
                      const std::vector<int64_t>& bounds_ms, const char* name, const char* help) {
  FARM_ASSIGN_OR_RETURN(auto h, deps.store->JobSpanHistogram(span, bounds_ms));
  Header(out, name, "histogram", help);
  for (size_t i = 0; i < bounds_ms.size(); ++i) {
    out << name << "_bucket{le=\"" << bounds_ms[i] / 1000 << "\"} " << h.cumulative[i] << "\n";
  }
  out << name << "_bucket{le=\"+Inf\"} " << h.count << "\n";
  out << name << "_sum " << h.sum_ms / 1000.0 << "\n";
  out << name << "_count " << h.count << "\n";
  return Status::Ok();
}

// The pull-through cache's figures (no URL: an upstream's may hold its credentials).
void WriteMirror(std::ostringstream& out, const mirror::PullThroughCache& cache) {
  const mirror::MirrorStats s = cache.stats();
  const std::pair<const char*, const char*> help[] = {
      {"farm_upstream_downloads_total", "Files the pull-through cache downloaded upstream."},
      {"farm_upstream_files_served_total", "Files the pull-through cache answered."},
      {"farm_upstream_metadata_served_total", "PEP 658 metadata files it answered."},
      {"farm_upstream_pulls_refused_total",
       "Files not stored yet that it did not download for a caller who may not pull."},
      {"farm_upstream_evicted_total", "Blobs evicted to keep the cache under its bound."}};
  const int64_t counters[] = {s.downloads, s.files_served, s.metadata_served, s.pulls_refused,
                              s.evicted};
  for (size_t i = 0; i < std::size(counters); ++i) {
    Header(out, help[i].first, "counter", help[i].second);
    out << help[i].first << " " << counters[i] << "\n";
  }
  Header(out, "farm_upstream_cache_bytes", "gauge", "Bytes of the blobs downloaded upstream.");
  out << "farm_upstream_cache_bytes " << s.stored_bytes << "\n";
  Header(out, "farm_upstream_cache_max_bytes", "gauge", "The cache's bound (0: none).");
  out << "farm_upstream_cache_max_bytes " << s.max_bytes << "\n";
  Header(out, "farm_upstream_fetches", "gauge", "Upstream requests running and waiting.");
  out << "farm_upstream_fetches{state=\"running\"} " << s.fetches_running << "\n";
  out << "farm_upstream_fetches{state=\"queued\"} " << s.fetches_queued << "\n";
}

}  // namespace

Result<std::string> RenderMetrics(const DashboardDeps& deps) {
  std::ostringstream out;
  FARM_ASSIGN_OR_RETURN(auto jobs, deps.store->CountJobsByState());
  Header(out, "farm_jobs", "gauge", "Jobs by state.");
  for (int s = store::kJobPending; s <= store::kJobCancelled; ++s) {
    out << "farm_jobs{state=\"" << kJobStates[s] << "\"} " << jobs[static_cast<size_t>(s)] << "\n";
  }
  FARM_ASSIGN_OR_RETURN(auto workers, deps.store->ListWorkers());
  std::map<store::WorkerState, int64_t> by_state;
  for (const auto& w : workers) by_state[w.state]++;
  Header(out, "farm_workers", "gauge", "Workers by state.");
  for (store::WorkerState state : store::kWorkerStates) {
    out << "farm_workers{state=\"" << store::WorkerStateName(state) << "\"} " << by_state[state]
        << "\n";
  }
  FARM_RETURN_IF_ERROR(WriteHistogram(out, deps, store::JobSpan::kQueueWait,
                                      store::kQueueWaitBoundsMs, "farm_job_queue_wait_seconds",
                                      "Time from a job's creation to its first start."));
  FARM_RETURN_IF_ERROR(WriteHistogram(out, deps, store::JobSpan::kRunTime, store::kRunTimeBoundsMs,
                                      "farm_job_build_duration_seconds",
                                      "Time from a finished job's start to its end."));
  FARM_ASSIGN_OR_RETURN(auto publications, deps.store->CountPublicationsByState());
  Header(out, "farm_publications", "gauge",
         "Publication rows (GitHub assets and releases, Hub files) by state.");
  for (store::PublicationState state : store::kPublicationStates) {
    const std::string name(store::PublicationStateName(state));
    out << "farm_publications{state=\"" << name << "\"} " << publications[name] << "\n";
  }
  // Rows that ended failed; `farmctl publish` puts them back to pending, so it can fall.
  Header(out, "farm_publish_failures_total", "gauge",
         "Publications that failed and were not retried.");
  out << "farm_publish_failures_total " << publications["failed"] << "\n";
  // Wheels larger than their destination takes (docs/publishing.md, "Size limits").
  Header(out, "farm_publish_refusals_total", "gauge",
         "Publications refused before upload: the wheel is larger than the destination takes.");
  out << "farm_publish_refusals_total " << publications["refused"] << "\n";
  Header(out, "farm_store_generation", "counter", "Writes committed to the store.");
  out << "farm_store_generation " << deps.store->Generation() << "\n";
  if (deps.mirror != nullptr) WriteMirror(out, *deps.mirror);
  return out.str();
}

}  // namespace farm::http
