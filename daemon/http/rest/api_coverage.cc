#include "daemon/http/rest/api_coverage.h"

#include <boost/json.hpp>

#include "common/clock.h"
#include "daemon/coverage/atom.h"
#include "daemon/coverage/coverage.h"
#include "daemon/coverage/events.h"

namespace farm::http {

namespace json = boost::json;

namespace {

std::string Query(const Request& req, const char* key) {
  auto it = req.query.find(key);
  return it == req.query.end() ? std::string() : it->second;
}

json::object CellJson(const coverage::Cell& c) {
  json::value seconds = nullptr;
  if (c.release_to_wheel_seconds) seconds = *c.release_to_wheel_seconds;
  return json::object{{"package", c.key.package},
                      {"version", c.key.version},
                      {"torch", c.key.torch},
                      {"cuda", c.key.cuda},
                      {"python", c.key.python},
                      {"arch_list", c.key.arch_list},
                      {"platform", c.key.platform},
                      {"state", coverage::CellStateName(c.state)},
                      {"state_words", coverage::CellStateWords(c.state)},
                      {"cause", c.cause},
                      {"job_id", c.job_id},
                      {"build_id", c.build_id},
                      {"wheel", c.wheel},
                      {"built_at", FormatRfc3339(c.built_ms)},
                      {"validated_at", FormatRfc3339(c.validated_ms)},
                      {"release_to_wheel_seconds", seconds},
                      {"release_candidate", c.release_candidate}};
}

}  // namespace

Response ApiCoverage(const DashboardDeps& deps, const Request& req) {
  auto filter = coverage::MakeFilter(Query(req, "package"), Query(req, "torch"), Query(req, "cuda"),
                                     Query(req, "python"), Query(req, "arch"), Query(req, "state"));
  if (!filter.ok()) return ErrorResponse(filter.status());
  auto builds =
      coverage::ReadRecentBuilds(*deps.store, filter->package, coverage::kMaxCoverageBuilds);
  if (!builds.ok()) return ErrorResponse(builds.status());
  json::array cells;
  json::object counts;
  for (coverage::CellState s : coverage::AllCellStates()) counts[coverage::CellStateName(s)] = 0;
  for (const coverage::Cell& c : coverage::ComputeCoverage(*builds)) {
    if (!filter->Matches(c)) continue;
    counts[coverage::CellStateName(c.state)] =
        counts[coverage::CellStateName(c.state)].as_int64() + 1;
    cells.push_back(CellJson(c));
  }
  json::array states;
  for (coverage::CellState s : coverage::AllCellStates()) {
    states.push_back(
        json::object{{"name", coverage::CellStateName(s)}, {"words", coverage::CellStateWords(s)}});
  }
  return JsonOk(json::object{{"now", FormatRfc3339(deps.clock->NowUnixMs())},
                             {"cells", std::move(cells)},
                             {"counts", std::move(counts)},
                             {"states", std::move(states)},
                             {"builds_read", builds->size()}});
}

Response WheelsFeed(const DashboardDeps& deps, const std::string& public_url) {
  auto builds = coverage::ReadRecentBuilds(*deps.store, "", coverage::kMaxCoverageBuilds);
  if (!builds.ok()) return ErrorResponse(builds.status());
  std::string base = public_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  coverage::AtomFeed feed{.id = base.empty() ? "urn:farm:feed:wheels" : base + kWheelsFeedPath,
                          .title = "GPU wheel farm: wheels and failed builds",
                          .self_link = base + kWheelsFeedPath,
                          .alternate_link = base + "/#/coverage",
                          .updated_ms = deps.clock->NowUnixMs()};
  std::vector<store::RequestRow> requests;
  if (store::RequestStore* asked = store::AsRequestStore(deps.store); asked != nullptr) {
    auto rows = asked->ListRequests(0, 0, coverage::kMaxCoverageBuilds);
    if (!rows.ok()) return ErrorResponse(rows.status());
    requests = std::move(rows).value();
  }
  for (const coverage::Event& e :
       coverage::EventsWithRequests(*builds, requests, coverage::kMaxFeedEntries)) {
    feed.entries.push_back(coverage::EntryOf(e, base));
  }
  Response r = TextResponse(200, coverage::RenderAtom(feed));
  r.content_type = "application/atom+xml; charset=utf-8";
  return r;
}

}  // namespace farm::http
