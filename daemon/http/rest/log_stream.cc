#include "daemon/http/rest/log_stream.h"

#include <boost/json.hpp>

#include "daemon/http/rest/api.h"
#include "daemon/http/rest/json_util.h"

namespace farm::http {

namespace json = boost::json;

namespace {

std::string Event(const std::string& name, const json::value& data, int64_t id) {
  std::string out;
  if (id > 0) out += "id: " + std::to_string(id) + "\n";
  out += "event: " + name + "\ndata: " + json::serialize(data) + "\n\n";
  return out;
}

// True when the attempt has ended: nothing more will be appended to its log.
Result<bool> AttemptEnded(const DashboardDeps& deps, const store::JobRow& job, int attempt) {
  if (store::IsTerminal(job.state) || attempt < job.attempt) return true;
  FARM_ASSIGN_OR_RETURN(auto attempts, deps.store->ListAttempts(job.id));
  for (const auto& a : attempts) {
    if (a.number == attempt) return a.finished_ms > 0;
  }
  return false;  // not started yet: lines may still come
}

int64_t ParseSeq(const std::string& s) {
  int64_t v = ParseId(s);
  return v > 0 ? v : 0;
}

}  // namespace

LogPoll PollLogEvents(const DashboardDeps& deps, int64_t job_id, int attempt, int64_t after_seq) {
  LogPoll out;
  out.after_seq = after_seq;
  // Read the job's state before the lines: lines stored after an ended attempt cannot exist,
  // so "ended and fewer lines than a page" means every line was sent.
  auto job = deps.store->GetJob(job_id);
  if (!job.ok()) {
    out.chunk = Event("error", json::object{{"message", job.status().ToString()}}, 0);
    out.done = true;
    return out;
  }
  auto ended = AttemptEnded(deps, *job, attempt);
  auto lines = deps.store->GetLogLines(job_id, attempt, after_seq, kEventsPerPoll);
  if (!ended.ok() || !lines.ok()) {
    Status s = ended.ok() ? lines.status() : ended.status();
    out.chunk = Event("error", json::object{{"message", s.ToString()}}, 0);
    out.done = true;
    return out;
  }
  for (const auto& l : *lines) {
    out.chunk += Event("line", LogLineJson(l), l.seq);
    out.after_seq = l.seq;
  }
  if (*ended && static_cast<int>(lines->size()) < kEventsPerPoll) {
    out.chunk +=
        Event("end", json::object{{"state", JobStateName(job->state)}, {"attempt", attempt}}, 0);
    out.done = true;
  }
  return out;
}

Response ApiJobLogStream(const DashboardDeps& deps, int64_t job_id, const Request& req) {
  auto job = deps.store->GetJob(job_id);
  if (!job.ok()) return ErrorResponse(job.status());
  int attempt = job->attempt;
  if (auto it = req.query.find("attempt"); it != req.query.end()) {
    attempt = static_cast<int>(ParseSeq(it->second));
  }
  int64_t after = ParseSeq(req.last_event_id);
  if (auto it = req.query.find("after"); it != req.query.end() && after == 0) {
    after = ParseSeq(it->second);
  }
  LogPoll first = PollLogEvents(deps, job_id, attempt, after);
  Response r;
  r.content_type = "text/event-stream";
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.kind = BodyKind::kEvents;
  // Reconnect after 1 s when the connection drops; the browser sends Last-Event-ID.
  r.body = "retry: 1000\n\n" + first.chunk;
  r.sse_job_id = job_id;
  r.sse_attempt = attempt;
  r.sse_after_seq = first.after_seq;
  if (first.done) r.kind = BodyKind::kString;  // nothing left to follow: a plain body
  return r;
}

}  // namespace farm::http
