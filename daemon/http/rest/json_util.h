// JSON helpers shared by the API and index handlers: farm.v1 messages to Boost.JSON values
// and row -> object conversions with timings computed against a given "now". Pure functions.
#ifndef FARM_DAEMON_HTTP_REST_JSON_UTIL_H_
#define FARM_DAEMON_HTTP_REST_JSON_UTIL_H_

#include <google/protobuf/message.h>

#include <boost/json.hpp>
#include <string>

#include "daemon/store/store.h"

namespace farm::http {

// Prints `msg` with proto field names and default values, then parses it into a value.
boost::json::value ProtoToJson(const google::protobuf::Message& msg);

// Name of a farm.v1.JobState / BuildState / AttemptCause / ValidationState value.
std::string JobStateName(int state);
std::string BuildStateName(int state);
std::string CauseName(int cause);

// A job row as the page shows it: cell, state, times, waited_ms and ran_ms as of now_ms,
// and its kind ("build" or "validation", with the job and attempt a validation validates).
boost::json::object JobJson(const store::JobRow& job, int64_t now_ms);
// Job counts by state: {"total": n, "validation": n, "JOB_PENDING": n, ...}; "validation"
// counts the validation jobs among them.
boost::json::object CountJobs(const std::vector<store::JobRow>& jobs);
// A build row without its jobs.
boost::json::object BuildJson(const store::BuildRow& build);
// One publication row for the dashboard: target, kind, repo, ref, path, file, state,
// attempts, the (redacted) error and the remote URL.
boost::json::object PublicationJson(const store::PublicationRow& row);
// Rows per state ({"published": 2, "failed": 1}) and the first failure's error.
boost::json::object PublishingSummary(const std::vector<store::PublicationRow>& rows);
// A worker row with capabilities summarised (GPUs, toolkits) and heartbeat age.
boost::json::object WorkerJson(const store::WorkerRow& worker, int64_t now_ms);

// One log line for the API and the event stream: seq, stream, text, time_ms, level, and
// phase when the line starts one (model/job_log.h reads them).
boost::json::object LogLineJson(const store::LogLineRow& line);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_REST_JSON_UTIL_H_
