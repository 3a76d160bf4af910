// store_bench: what one job's life costs in the store, on a SQLite file or on PostgreSQL
// (docs/postgresql.md). For each of --jobs jobs, one after the other on one thread as
// farmd's handlers reach the store: submit a build of one job, lease it, append a batch
// of 20 log lines, renew the lease, complete it. Prints the median and p99 of each step in
// milliseconds and the jobs per second. Not a test; run by hand:
//   store_bench --store /tmp/x/farm.db --jobs 2000
//   store_bench --store 'postgresql:///bench?host=/tmp/pg' --jobs 2000
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <vector>

#include "common/flags.h"
#include "daemon/store/sql_store/postgres.h"
#include "daemon/store/store.h"

namespace farm::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(std::vector<int64_t> us, double p) {
  if (us.empty()) return 0;
  std::sort(us.begin(), us.end());
  return static_cast<double>(us[static_cast<size_t>(p * static_cast<double>(us.size() - 1))]) /
         1000.0;
}

Status Run(store::Store& st, int jobs) {
  std::map<std::string, std::vector<int64_t>> steps;
  auto timed = [&](const char* step, auto&& fn) -> Status {
    auto start = Clock::now();
    Status s = fn();
    steps[step].push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
    return s.WithContext(step);
  };
  FARM_RETURN_IF_ERROR(
      st.UpsertWorker({"w-bench", "bench", "caps", store::WorkerState::kIdle, 1, 1, false}));
  auto start = Clock::now();
  for (int i = 0; i < jobs; ++i) {
    const int64_t now = 1'000 + i;
    store::BuildRow b{
        .recipe_name = "bench", .recipe = "r", .submitted_by = "bench", .created_ms = now};
    std::vector<store::JobRow> rows = {
        store::JobRow{.cell = "cell " + std::to_string(i), .created_ms = now}};
    FARM_RETURN_IF_ERROR(timed("submit", [&] { return st.CreateBuild(&b, &rows); }));
    std::optional<store::JobRow> job;
    FARM_RETURN_IF_ERROR(timed("lease", [&] {
      auto r = st.AcquireJob("w-bench", now, 30'000, nullptr);
      if (r.ok()) job = r.value();
      return r.ok() && !job ? Status::Internal("no job to lease") : r.status();
    }));
    std::vector<store::LogLineRow> lines;
    for (int l = 1; l <= 20; ++l)
      lines.push_back({l, 1, "compiling unit " + std::to_string(l), now});
    FARM_RETURN_IF_ERROR(timed(
        "log batch", [&] { return st.AppendLogLines(job->id, job->attempt, lines).status(); }));
    FARM_RETURN_IF_ERROR(
        timed("heartbeat", [&] { return st.RenewLeases("w-bench", now, 30'000).status(); }));
    store::CompletionReport done{
        .job_id = job->id, .attempt = job->attempt, .worker_id = "w-bench"};
    FARM_RETURN_IF_ERROR(timed("complete", [&] { return st.CompleteAttempt(done, now).status(); }));
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("%-10s %9s %9s\n", "step", "p50 ms", "p99 ms");
  for (const char* step : {"submit", "lease", "log batch", "heartbeat", "complete"}) {
    std::printf("%-10s %9.2f %9.2f\n", step, Ms(steps[step], 0.5), Ms(steps[step], 0.99));
  }
  std::printf("%d jobs in %.1f s: %.0f jobs/s\n", jobs, seconds, jobs / seconds);
  return Status::Ok();
}

}  // namespace
}  // namespace farm::bench

int main(int argc, char** argv) {
  farm::Flags flags({{"store", "PATH|URL", "a SQLite file (created) or a postgres:// URL"},
                     {"jobs", "N", "jobs to take through their life (default 2000)"}});
  farm::Status parsed = flags.Parse(argc, argv);
  auto jobs = flags.GetInt("jobs", 2000);
  if (!parsed.ok() || flags.Get("store").empty() || !jobs.ok() || *jobs < 1) {
    std::cerr << "usage: store_bench --store PATH|URL [--jobs N]\n" << flags.Usage();
    return 2;
  }
  const std::string where = flags.Get("store");
  auto st = farm::store::IsPostgresUrl(where) ? farm::store::OpenPostgresStore(where)
                                              : farm::store::OpenSqliteStore(where);
  if (!st.ok()) {
    std::cerr << "store_bench: " << st.status().ToString() << "\n";
    return 1;
  }
  farm::Status s = farm::bench::Run(*st.value(), static_cast<int>(*jobs));
  if (!s.ok()) {
    std::cerr << "store_bench: " << s.ToString() << "\n";
    return 1;
  }
  return 0;
}
