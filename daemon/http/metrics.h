// Prometheus text exposition (format 0.0.4) of the farm's state, read from the store on
// every scrape: jobs and workers by state, queue-wait and build-duration histograms (from
// the counters the store keeps as jobs change: store.h kQueueWaitBoundsMs,
// kRunTimeBoundsMs), and publish failures. Pure function of the store; thread-safe.
#ifndef FARM_DAEMON_HTTP_METRICS_H_
#define FARM_DAEMON_HTTP_METRICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/http/server/dashboard_options.h"

namespace farm::http {

// On success returns the exposition text; fails only when the store does.
Result<std::string> RenderMetrics(const DashboardDeps& deps);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_METRICS_H_
