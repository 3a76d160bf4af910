// Live job logs as server-sent events (/api/v1/jobs/{id}/log/stream). The socket layer sends
// the first chunk from ApiJobLogStream, then calls PollLogEvents whenever the store's
// generation moved, until `done`. Pure functions over the store; thread-safe.
#ifndef FARM_DAEMON_HTTP_REST_LOG_STREAM_H_
#define FARM_DAEMON_HTTP_REST_LOG_STREAM_H_

#include <cstdint>
#include <string>

#include "daemon/http/server/dashboard_options.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

// Lines sent per poll; the next poll continues where this one stopped.
inline constexpr int kEventsPerPoll = 500;

struct LogPoll {
  std::string chunk;      // zero or more events ("id: 7\nevent: line\ndata: {...}\n\n")
  int64_t after_seq = 0;  // the last seq sent
  bool done = false;      // the attempt ended and every line was sent ("event: end" included)
};

// Events for the lines of (job, attempt) after `after_seq`. Each "line" event carries
// {"seq","stream","text"}; the final "end" event carries {"state","attempt"}.
// On a store error returns an "error" event and done.
LogPoll PollLogEvents(const DashboardDeps& deps, int64_t job_id, int attempt, int64_t after_seq);

// Starts a stream: attempt from ?attempt= (default the job's current one), resuming after
// ?after= or the Last-Event-ID header. 404 for an unknown job.
Response ApiJobLogStream(const DashboardDeps& deps, int64_t job_id, const Request& req);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_REST_LOG_STREAM_H_
