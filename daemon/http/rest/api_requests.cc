#include "daemon/http/rest/api_requests.h"

#include <algorithm>
#include <charconv>

#include "common/clock.h"
#include "daemon/http/rest/api.h"
#include "daemon/requests/requests.h"

namespace farm::http {

namespace json = boost::json;

namespace {

constexpr int kRequestPage = 100;
constexpr int kRequestPageMax = 1000;

// A string field of the request's body ("" when absent or null).
Result<std::string> RequestField(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::string();
  if (!v->is_string())
    return Status::InvalidArgument(std::string("\"") + key + "\" must be a string");
  return std::string(v->as_string());
}

Result<requests::Spec> ParseSpec(const std::string& body) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec || !doc.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  const json::object& o = doc.as_object();
  requests::Spec spec;
  for (auto [key, into] : {std::pair{"package", &spec.package},
                           {"version", &spec.version},
                           {"python", &spec.python},
                           {"torch", &spec.torch},
                           {"cuda", &spec.cuda},
                           {"compute_capability", &spec.compute_capability},
                           {"platform", &spec.platform}}) {
    FARM_ASSIGN_OR_RETURN(*into, RequestField(o, key));
  }
  return spec;
}

int64_t RequestQueryInt(const Request& req, const char* key, int64_t fallback) {
  auto it = req.query.find(key);
  if (it == req.query.end()) return fallback;
  int64_t v = 0;
  auto [p, e] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return e == std::errc() && p == it->second.data() + it->second.size() ? v : fallback;
}

Response FileRequest(const DashboardDeps& deps, const Request& req) {
  requests::Filer filer{.address = req.peer};
  if (!req.authorization.empty()) {
    auto who = Caller(deps, req);
    if (!who.ok()) return ErrorResponse(who.status());
    filer.who = *who;
  }
  auto spec = ParseSpec(req.body);
  if (!spec.ok()) return ErrorResponse(spec.status());
  auto filed = deps.requests->File(filer, *spec);
  if (!filed.ok()) return ErrorResponse(filed.status());
  json::object o = RequestJson(filed->row);
  o["merged"] = filed->merged;
  Response r = JsonOk(o);
  if (!filed->merged) r.status = 201;
  return r;
}

Response ListRequests(const DashboardDeps& deps, const Request& req) {
  std::optional<requests::State> state;
  if (auto it = req.query.find("state"); it != req.query.end() && !it->second.empty()) {
    state = requests::ParseState(it->second);
    if (!state) return ErrorResponse(Status::InvalidArgument("unknown request state"));
  }
  int limit = static_cast<int>(
      std::clamp<int64_t>(RequestQueryInt(req, "limit", kRequestPage), 1, kRequestPageMax));
  auto rows =
      deps.requests->List(state, std::max<int64_t>(0, RequestQueryInt(req, "before", 0)), limit);
  if (!rows.ok()) return ErrorResponse(rows.status());
  json::array items;
  json::object counts;
  for (requests::State s : requests::kAllStates) counts[requests::StateName(s)] = 0;
  for (const auto& r : *rows) {
    items.push_back(RequestJson(r));
    counts[requests::StateName(static_cast<requests::State>(r.state))].as_int64() += 1;
  }
  int64_t next = static_cast<int>(rows->size()) == limit ? rows->back().id : 0;
  return JsonOk(json::object{{"requests", std::move(items)},
                             {"counts", std::move(counts)},
                             {"next_before", next},
                             {"now", FormatRfc3339(deps.clock->NowUnixMs())}});
}

Response DecideRequest(const DashboardDeps& deps, const Request& req, int64_t id, bool approve) {
  auto who = Caller(deps, req);
  if (!who.ok()) return ErrorResponse(who.status());
  Result<store::RequestRow> row = Status::Internal("undecided");
  if (approve) {
    row = deps.requests->Approve(*who, id);
  } else {
    boost::system::error_code ec;
    json::value doc = json::parse(req.body, ec);
    std::string reason;
    if (!ec && doc.is_object()) {
      auto r = RequestField(doc.as_object(), "reason");
      if (r.ok()) reason = *r;
    }
    row = deps.requests->Refuse(*who, id, reason);
  }
  if (!row.ok()) return ErrorResponse(row.status());
  return JsonOk(RequestJson(*row));
}

}  // namespace

json::object RequestJson(const store::RequestRow& row) {
  const auto state = static_cast<requests::State>(row.state);
  return json::object{{"id", row.id},
                      {"package", row.package},
                      {"version", row.version},
                      {"python", row.python},
                      {"torch", row.torch},
                      {"cuda", row.cuda},
                      {"compute_capability", row.compute_capability},
                      {"platform", row.platform},
                      {"state", requests::StateName(state)},
                      {"reason", row.reason},
                      {"decided_by", row.decided_by},
                      {"recipe", row.recipe_name},
                      {"arch_list", row.arch_list},
                      {"build_id", row.build_id},
                      {"job_id", row.job_id},
                      {"wheel", row.wheel},
                      {"filings", row.filings},
                      {"anonymous", row.first_by.empty()},
                      {"created", FormatRfc3339(row.created_ms)},
                      {"updated", FormatRfc3339(row.updated_ms)},
                      {"url", "/api/v1/requests/" + std::to_string(row.id)}};
}

Response DispatchRequests(const DashboardDeps& deps, const Request& req, std::string_view rest) {
  if (deps.requests == nullptr) {
    return ErrorResponse(Status::Unavailable("this farmd takes no wheel requests"));
  }
  const bool post = req.method == "POST";
  if (rest.empty()) return post ? FileRequest(deps, req) : ListRequests(deps, req);
  if (!rest.starts_with("/")) return ErrorResponse(Status::NotFound("no such request route"));
  rest.remove_prefix(1);
  size_t slash = rest.find('/');
  int64_t id = ParseId(rest.substr(0, slash));
  if (id == 0) return ErrorResponse(Status::NotFound("no such request"));
  std::string_view tail = slash == rest.npos ? std::string_view() : rest.substr(slash);
  if (tail.empty() && !post) {
    auto row = deps.requests->Get(id);
    return row.ok() ? JsonOk(RequestJson(*row)) : ErrorResponse(row.status());
  }
  if (!post) return MethodNotAllowed("POST");
  if (tail == "/approve" || tail == "/refuse")
    return DecideRequest(deps, req, id, tail == "/approve");
  return ErrorResponse(Status::NotFound("no such request route"));
}

}  // namespace farm::http
