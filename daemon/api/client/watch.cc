// WatchBuild: streams the build on every change and, when asked, every log line of its
// jobs in order. Ends once the build is terminal and every line has been sent.
#include <map>

#include "daemon/api/client/client_service.h"
#include "daemon/model/convert.h"

namespace farm::api {

using model::LogLineToProto;
namespace {

struct LogCursor {
  int attempt = 0;
  int64_t seq = 0;
};

bool IsBuildTerminal(int state) {
  return state == store::kBuildSucceeded || state == store::kBuildFailed ||
         state == store::kBuildCancelled;
}

// A summary that changes whenever anything a watcher shows changes.
std::string Fingerprint(const farm::v1::Build& b) {
  std::string s = std::to_string(b.state());
  for (const auto& j : b.jobs()) {
    s += "|" + std::to_string(j.state()) + "," + std::to_string(j.attempt()) + "," +
         std::to_string(j.artifacts_size()) + "," + j.waiting_reason();
    for (const auto& [worker, why] : j.unplaceable_reasons()) s += "," + worker + "=" + why;
    for (const auto& a : j.attempts()) {
      if (a.number() != j.attempt()) continue;
      s += "," + std::to_string(a.units_done()) + "/" + std::to_string(a.units_total()) + "," +
           std::to_string(a.peak_rss_bytes());
    }
  }
  return s;
}

// Sends new lines of every job; returns false when the client is gone.
Result<bool> SendLogs(const ServiceContext& ctx, const farm::v1::Build& build,
                      std::map<int64_t, LogCursor>* cursors,
                      grpc::ServerWriter<farm::v1::BuildEvent>* out, bool* sent_any) {
  for (const auto& job : build.jobs()) {
    if (job.attempt() == 0) continue;
    LogCursor& c = (*cursors)[job.id()];
    if (c.attempt != job.attempt()) c = LogCursor{job.attempt(), 0};
    FARM_ASSIGN_OR_RETURN(auto lines, ctx.store->GetLogLines(job.id(), c.attempt, c.seq, 1000));
    for (const auto& l : lines) {
      farm::v1::BuildEvent ev;
      *ev.mutable_log() = LogLineToProto(job.id(), c.attempt, l);
      if (!out->Write(ev)) return false;
      c.seq = l.seq;
      *sent_any = true;
    }
  }
  return true;
}

}  // namespace

grpc::Status ClientService::WatchBuild(grpc::ServerContext* call,
                                       const farm::v1::WatchBuildRequest* req,
                                       grpc::ServerWriter<farm::v1::BuildEvent>* out) {
  auto who = AuthorizeCall(*ctx_->auth, *call, Need::kViewer);
  if (!who.ok()) return ToGrpc(who.status());
  std::map<int64_t, LogCursor> cursors;
  std::string last_fingerprint;
  // A watch lasts at most a day; clients re-watch after that.
  int64_t deadline = ctx_->clock->SteadyMs() + 24LL * 3600 * 1000;
  for (int round = 0; round < 10'000'000 && !call->IsCancelled(); ++round) {
    int64_t seen = ctx_->store->Generation();
    auto build = LoadBuild(*ctx_, req->build_id());
    if (!build.ok()) return ToGrpc(build.status());
    std::string fp = Fingerprint(build.value());
    bool sent_logs = false;
    if (req->include_logs()) {
      auto alive = SendLogs(*ctx_, build.value(), &cursors, out, &sent_logs);
      if (!alive.ok()) return ToGrpc(alive.status());
      if (!alive.value()) return grpc::Status::CANCELLED;
    }
    if (fp != last_fingerprint) {
      farm::v1::BuildEvent ev;
      *ev.mutable_build() = build.value();
      if (!out->Write(ev)) return grpc::Status::CANCELLED;
      last_fingerprint = fp;
    }
    // Workers send every line before completing a job, so once a loaded build is
    // terminal and a pass found no new line, nothing more will come.
    if (IsBuildTerminal(build->state()) && !sent_logs) break;
    if (ctx_->clock->SteadyMs() > deadline) break;
    if (!sent_logs) {
      WaitForChange(*ctx_, seen, ctx_->clock->SteadyMs() + 1000,
                    [call] { return call->IsCancelled(); });
    }
  }
  return grpc::Status::OK;
}

}  // namespace farm::api
