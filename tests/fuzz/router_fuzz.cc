// Fuzzes the dashboard's HTTP router with raw request targets (path and query string, as
// the socket layer receives them), methods, Accept and Authorization headers and bodies,
// over a real SQLite store that holds a running build with a log, a build of rejected
// cells under a unicode name, and a worker. Input lines: method, target, Accept,
// Authorization, then the body. Properties: nothing crashes or leaks; every status is a
// real HTTP status; JSON answers parse; HTML and JSON answers are valid UTF-8 whatever
// bytes the request carried.
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/utf8.h"
#include "daemon/auth/token_authority.h"
#include "daemon/http/router.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/store.h"
#include "farm/v1/types.pb.h"
#include "tests/fuzz/fuzz_util.h"

namespace farm::fuzz {
namespace {

class FixedClock final : public Clock {
 public:
  int64_t NowUnixMs() const override { return 1'790'000'000'000; }
  int64_t SteadyMs() const override { return 1'000'000; }
};

void Check(const Status& st, std::string_view what) { fuzz::Require(st.ok(), what, st.message()); }

// A store with the kinds of rows the routes read.
void Populate(store::Store* s, const Clock& clock) {
  store::BuildRow running;
  running.recipe_name = "attn-example";
  running.submitted_by = "fuzz";
  farm::v1::Recipe recipe;
  recipe.set_name("attn-example");
  recipe.set_version("0.1.0");
  running.recipe = recipe.SerializeAsString();
  running.rejected_cells = "py3.11 cuda12.1 12.0a: CUDA 12.1 cannot emit sm_120a\n";
  running.created_ms = clock.NowUnixMs();
  std::vector<store::JobRow> jobs(2);
  for (auto& j : jobs) {
    farm::v1::MatrixCell cell;
    cell.set_python("3.11"), cell.set_torch("2.8"), cell.set_cuda("13.0");
    cell.set_arch_list("9.0a");
    j.cell = cell.SerializeAsString();
    j.created_ms = clock.NowUnixMs();
  }
  Check(s->CreateBuild(&running, &jobs), "create build");
  auto leased = s->AcquireJob("w1", clock.NowUnixMs(), 3'600'000,
                              [](const store::JobRow&) { return std::string(); });
  Check(leased.status(), "lease");
  std::vector<store::LogLineRow> lines;
  for (int i = 1; i <= 50; ++i) {
    lines.push_back(
        {i, i % 3, "line " + std::to_string(i) + " \x1b[31mred\x1b[0m ünï", clock.NowUnixMs()});
  }
  Check(s->AppendLogLines(jobs[0].id, 1, lines).status(), "log");

  store::BuildRow rejected;
  rejected.recipe_name = "注意力-Ünïcödé-🚀";
  rejected.submitted_by = "<script>alert(1)</script>";
  rejected.rejected_cells = "py3.11 cuda12.1 12.1a: CUDA 12.1 cannot emit sm_121a\n";
  rejected.created_ms = clock.NowUnixMs();
  std::vector<store::JobRow> none;
  Check(s->CreateBuild(&rejected, &none), "create rejected build");
}

struct World {
  World() {
    auto st = store::OpenSqliteStore(fuzz::ScratchDir() + "/farm.db");
    Check(st.status(), "open store");
    store = std::move(st.value());
    auto b = store::BlobStore::Open(fuzz::ScratchDir() + "/blobs");
    Check(b.status(), "open blobs");
    blobs = std::move(b.value());
    auth = std::make_unique<auth::TokenAuthority>(store.get(), &clock);
    Populate(store.get(), clock);
    http::DashboardDeps deps;
    deps.store = store.get(), deps.blobs = blobs.get(), deps.auth = auth.get();
    deps.clock = &clock;
    router = std::make_unique<http::Router>(http::DashboardOptions{}, deps);
  }
  FixedClock clock;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<store::BlobStore> blobs;
  std::unique_ptr<auth::TokenAuthority> auth;
  std::unique_ptr<http::Router> router;
};

bool IsJson(const std::string& content_type) {
  return content_type.starts_with("application/json") ||
         content_type.starts_with("application/vnd.pypi.simple.v1+json");
}

int FuzzOne(const uint8_t* data, size_t size) {
  static World world;
  fuzz::Input in(data, size);
  std::string method(in.Line());
  std::string target(in.Line());
  http::Request req = http::MakeRequest(method, target);
  req.accept = std::string(in.Line());
  req.authorization = std::string(in.Line());
  req.body = std::string(in.Rest());
  http::Response resp = world.router->Handle(req);
  std::string what = method + " " + target;
  fuzz::Require(resp.status >= 100 && resp.status < 600, "a real HTTP status", what);
  if (IsJson(resp.content_type)) {
    boost::json::error_code ec;
    boost::json::parse(resp.body, ec);
    fuzz::Require(!ec, "a JSON answer parses", what + "\n" + resp.body);
  }
  if (IsJson(resp.content_type) || resp.content_type.starts_with("text/html")) {
    fuzz::Require(IsValidUtf8(resp.body), "a JSON or HTML answer is UTF-8", what);
  }
  if (resp.kind == http::BodyKind::kEvents) {
    (void)world.router->PollLog(resp.sse_job_id, resp.sse_attempt, resp.sse_after_seq);
  }
  return 0;
}

}  // namespace
}  // namespace farm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return farm::fuzz::FuzzOne(data, size);
}
