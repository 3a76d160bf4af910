#include "daemon/http/router.h"

#include <atomic>
#include <exception>
#include <future>
#include <optional>
#include <string_view>

#include "common/log.h"
#include "daemon/http/index/index_directory.h"
#include "daemon/http/index/provenance_views.h"
#include "daemon/http/index/simple_index.h"
#include "daemon/http/index/upstream_routes.h"
#include "daemon/http/metrics.h"
#include "daemon/http/rest/api.h"
#include "daemon/http/rest/api_coverage.h"
#include "daemon/http/rest/api_requests.h"
#include "daemon/http/rest/api_schedules.h"
#include "daemon/http/web/assets.h"

namespace farm::http {

namespace {

// A tool asking the farm's root for JSON gets the index directory; browsers get the page.
bool WantsJson(std::string_view accept) {
  return accept.find("application/json") != std::string_view::npos &&
         accept.find("text/html") == std::string_view::npos;
}

// Splits "12/log/stream" into 12 and "/log/stream".
std::pair<int64_t, std::string_view> SplitId(std::string_view rest) {
  size_t slash = rest.find('/');
  std::string_view id = rest.substr(0, slash);
  return {ParseId(id), slash == rest.npos ? std::string_view() : rest.substr(slash)};
}

// The part of `path` between `prefix` and `suffix` ("builds/12/cancel" around "builds/"
// and "/cancel" is "12"), or nullopt when `path` does not have both. Where the two
// overlap ("builds/cancel") the part is empty, which no id parses as.
std::optional<std::string_view> Between(std::string_view path, std::string_view prefix,
                                        std::string_view suffix) {
  if (!path.starts_with(prefix) || !path.ends_with(suffix)) return std::nullopt;
  if (path.size() < prefix.size() + suffix.size()) return std::string_view();
  return path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
}

}  // namespace

Response Router::Handle(const Request& req) noexcept {
  try {
    return Dispatch(req);
  } catch (const std::exception& e) {
    log::Error(std::string("http handler failed: ") + e.what());
  } catch (...) {
    log::Error("http handler failed");
  }
  try {
    return ErrorResponse(Status::Internal("internal error"));
  } catch (...) {
    return Response{.status = 500};
  }
}

bool Router::Defers(const Request& req) const { return IsUpstreamRequest(req); }

void Router::HandleDeferred(const Request& req, Reply reply) noexcept {
  // A reply that throws after it was called must not be called again.
  auto replied = std::make_shared<std::atomic<bool>>(false);
  Reply once = [replied, reply = std::move(reply)](Response r) {
    if (!replied->exchange(true)) reply(std::move(r));
  };
  try {
    HandleUpstreamAsync(deps_, options_.public_read, req, once);
    return;
  } catch (const std::exception& e) {
    log::Error(std::string("http handler failed: ") + e.what());
  } catch (...) {
    log::Error("http handler failed");
  }
  try {
    once(ErrorResponse(Status::Internal("internal error")));
  } catch (...) {
  }
}

LogPoll Router::PollLog(int64_t job_id, int attempt, int64_t after_seq) noexcept {
  try {
    return PollLogEvents(deps_, job_id, attempt, after_seq);
  } catch (...) {
    LogPoll p;
    p.after_seq = after_seq;
    p.done = true;
    return p;
  }
}

Status Router::Authorize(const Request& req, auth::Need need) {
  if (need == auth::Need::kViewer && options_.public_read) return Status::Ok();
  return Actor(deps_, req, need).status();
}

Response Router::Dispatch(const Request& req) {
  const std::string& path = req.path;
  if (!IsRead(req) && req.method != "POST") return MethodNotAllowed("GET, HEAD, POST");
  if (Defers(req)) {
    auto answer = std::make_shared<std::promise<Response>>();
    std::future<Response> ready = answer->get_future();
    HandleDeferred(req, [answer](Response r) { answer->set_value(std::move(r)); });
    return ready.get();
  }
  if (path == "/" && WantsJson(req.accept)) {
    if (Status s = Authorize(req, auth::Need::kViewer); !s.ok()) return ErrorResponse(s);
    return DirectoryResponse(catalog_, req);
  }
  if (path == "/install" || path == "/install.py") {
    if (Status s = Authorize(req, auth::Need::kViewer); !s.ok()) return ErrorResponse(s);
    return InstallScript(options_.web_root, req, InstallScriptKeys(deps_));
  }
  if (path == "/" || path == "/index.html") return ServeAsset(options_.web_root, "index.html");
  // Scripts and style sheets at the top level (ServeAsset refuses anything but a plain name).
  if (path.find('/', 1) == std::string::npos && (path.ends_with(".js") || path.ends_with(".css"))) {
    return ServeAsset(options_.web_root, path.substr(1));
  }
  if (path == "/healthz") return TextResponse(200, "ok\n");
  if (path == "/readyz") {
    auto n = deps_.store->CountTokens();
    return n.ok() ? TextResponse(200, "ready\n")
                  : TextResponse(503, "store unavailable: " + n.status().ToString() + "\n");
  }
  if (path == "/metrics" || path.starts_with("/api/") || path.starts_with("/files/") ||
      path.starts_with("/variants/") || path.starts_with("/feeds/") ||
      path.find("/simple") != std::string::npos) {
    bool write = !IsRead(req);
    if (write && !path.starts_with("/api/")) return MethodNotAllowed("GET, HEAD");
    // A write names its principal itself (Actor), so that a refusal is recorded.
    if (!write) {
      if (Status s = Authorize(req, auth::Need::kViewer); !s.ok()) return ErrorResponse(s);
    }
  }
  if (path == "/metrics") {
    auto text = RenderMetrics(deps_);
    if (!text.ok()) return ErrorResponse(text.status());
    Response r = TextResponse(200, std::move(text.value()));
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return r;
  }
  if (auto rest = Between(path, "/api/v1/", "")) return DispatchApi(req, *rest);
  if (path == kWheelsFeedPath) return WheelsFeed(deps_, options_.public_url);
  if (auto r = HandleVariantIndex(catalog_, variant_wheels_, req)) return std::move(*r);
  if (auto r = HandleIndex(catalog_, req)) return std::move(*r);
  return ErrorResponse(Status::NotFound("no route for " + path));
}

Response Router::DispatchApi(const Request& req, std::string_view rest) {
  if (auto build = Between(rest, "builds/", "/cancel")) {
    if (req.method != "POST") return MethodNotAllowed("POST");
    int64_t id = ParseId(*build);
    if (id == 0) return ErrorResponse(Status::InvalidArgument("bad build id"));
    auto who = Caller(deps_, req);
    if (!who.ok()) return ErrorResponse(who.status());
    return ApiCancelBuild(deps_, id, *who, options_.index_include_pending);
  }
  if (auto job = Between(rest, "jobs/", "/retry")) {
    if (req.method != "POST") return MethodNotAllowed("POST");
    int64_t id = ParseId(*job);
    if (id == 0) return ErrorResponse(Status::InvalidArgument("bad job id"));
    auto who = Caller(deps_, req);
    if (!who.ok()) return ErrorResponse(who.status());
    return ApiRetryJob(deps_, id, *who, options_.index_include_pending);
  }
  auto drained = Between(rest, "workers/", "/drain");
  auto undrained = Between(rest, "workers/", "/undrain");
  if (drained || undrained) {
    if (req.method != "POST") return MethodNotAllowed("POST");
    // Draining changes the fleet: builds::Control asks for an admin, as over gRPC.
    bool drain = drained.has_value();
    std::string id(drain ? *drained : *undrained);
    auto who = Caller(deps_, req);
    if (!who.ok()) return ErrorResponse(who.status());
    return ApiDrainWorker(deps_, *who, id, drain);
  }
  if (rest == "schedules" || rest.starts_with("schedules/")) {
    return DispatchSchedules(deps_, req, rest.substr(std::string_view("schedules").size()));
  }
  if (rest == "requests" || rest.starts_with("requests/")) {
    return DispatchRequests(deps_, req, rest.substr(std::string_view("requests").size()));
  }
  if (!IsRead(req)) return MethodNotAllowed("GET, HEAD");
  if (rest == "audit") {
    // Admins only, even where reads are public: it says who did what.
    if (Status s = Authorize(req, auth::Need::kAdmin); !s.ok()) return ErrorResponse(s);
    return ApiAudit(deps_, req);
  }
  if (rest == "overview") return ApiOverview(deps_);
  if (rest == "builds") return ApiBuilds(deps_, req);
  if (rest == "workers") return ApiWorkers(deps_);
  if (rest == "chart") return ApiChart(deps_);
  if (rest == "coverage") return ApiCoverage(deps_, req);
  if (rest == "publications") return ApiPublications(deps_, req);
  if ("/api/v1/" + std::string(rest) == kKeysPath) return ProvenanceKeysResponse(deps_);
  if (auto project = Between(rest, "projects/", "")) return ProjectOwnerResponse(deps_, *project);
  if (auto after = Between(rest, "builds/", "")) {
    auto [id, tail] = SplitId(*after);
    if (id == 0 || !tail.empty()) return ErrorResponse(Status::NotFound("no such build"));
    return ApiBuild(deps_, id, options_.index_include_pending);
  }
  if (auto after = Between(rest, "jobs/", "")) {
    auto [id, tail] = SplitId(*after);
    if (id == 0) return ErrorResponse(Status::NotFound("no such job"));
    return DispatchJob(req, id, tail);
  }
  return ErrorResponse(Status::NotFound("no API route " + std::string(rest)));
}

Response Router::DispatchJob(const Request& req, int64_t job_id, std::string_view tail) {
  if (tail.empty()) return ApiJob(deps_, job_id, options_.index_include_pending);
  if (tail == "/log") return ApiJobLog(deps_, job_id, req);
  if (tail == "/log.txt") return ApiJobLogText(deps_, job_id, req);
  if (tail == "/log/stream") return ApiJobLogStream(deps_, job_id, req);
  return ErrorResponse(Status::NotFound("no job route " + std::string(tail)));
}

}  // namespace farm::http
