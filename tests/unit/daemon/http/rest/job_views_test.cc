// The dashboard's release-engineer views over a real store: why a job waits, whether a
// build is blocked, progress and expected time, why a job failed, the wheels of a build,
// the builds list's filters and the publications across builds.
#include "daemon/http/rest/job_views.h"

#include "farm/v1/types.pb.h"
#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

namespace json = boost::json;

class JobViewsTest : public HttpFixture {
 protected:
  // A worker "gpu-box" (id w1, the fixture's Start leases to it) with CUDA 13.0, Python 3.11
  // and torch 2.8.
  void AddWorker(const std::string& id = "w1", const std::string& name = "gpu-box",
                 store::WorkerState state = store::WorkerState::kIdle) {
    farm::v1::Capabilities caps;
    caps.set_platform("linux_x86_64");
    auto* py = caps.add_pythons();
    py->set_version("3.11");
    py->set_torch_version("2.8.0");
    caps.add_toolkits()->set_version("13.0");
    ASSERT_OK(store_->UpsertWorker(
        {id, name, caps.SerializeAsString(), state, clock_.NowUnixMs(), clock_.NowUnixMs()}));
  }
  void Log(int64_t job, std::vector<std::pair<int, std::string>> lines) {
    std::vector<store::LogLineRow> rows;
    int64_t seq = 0;
    for (auto& [stream, text] : lines) rows.push_back({++seq, stream, text, clock_.NowUnixMs()});
    ASSERT_OK(store_->AppendLogLines(job, 1, rows).status());
  }
  json::value Build(Router& r, int64_t id) {
    return Json(Get(r, "/api/v1/builds/" + std::to_string(id)));
  }
  json::value Job(Router& r, int64_t id) {
    return Json(Get(r, "/api/v1/jobs/" + std::to_string(id)));
  }
  // Two build jobs of one cell of `build`: the first ran 90 s and made wheels for cc 12.0,
  // the second waits; then a validation job of the first, which needs a cc 12.0 GPU.
  void BuildThenQueueValidation(store::BuildRow* build, std::vector<store::JobRow>* jobs,
                                int64_t* validation) {
    farm::v1::MatrixCell cell;
    cell.set_python("3.11"), cell.set_torch("2.8"), cell.set_cuda("13.0");
    cell.set_arch_list("12.0a");
    for (auto& j : *jobs) j.cell = cell.SerializeAsString(), j.created_ms = clock_.NowUnixMs();
    ASSERT_OK(store_->CreateBuild(build, jobs));
    Start((*jobs)[0].id);
    clock_.Advance(90'000);
    Finish((*jobs)[0].id);
    farm::v1::JobNeeds needs;
    needs.add_gpu_ccs("12.0");
    auto queued = store_->QueueValidationJob({.build_id = build->id,
                                              .cell = cell.SerializeAsString(),
                                              .created_ms = clock_.NowUnixMs(),
                                              .kind = store::kJobValidate,
                                              .target_job_id = (*jobs)[0].id,
                                              .target_attempt = 1,
                                              .needs = needs.SerializeAsString()});
    ASSERT_OK(queued.status());
    *validation = queued->id;
  }
  // A worker "rtx-\u00e9" (id w-rtx) with an RTX 5090 (cc 12.0) leases job `validation`.
  void RtxWorkerTakes(int64_t validation) {
    farm::v1::Capabilities caps;
    auto* gpu = caps.add_gpus();
    gpu->set_name("NVIDIA GeForce RTX 5090"), gpu->set_cc_major(12), gpu->set_cc_minor(0);
    ASSERT_OK(
        store_->UpsertWorker({"w-rtx", "rtx-\u00e9", caps.SerializeAsString(),
                              store::WorkerState::kBusy, clock_.NowUnixMs(), clock_.NowUnixMs()}));
    auto leased = store_->AcquireJob("w-rtx", clock_.NowUnixMs(), 60'000, [&](const auto& j) {
      return j.id == validation ? "" : "not this one";
    });
    ASSERT_OK(leased.status());
    ASSERT_TRUE(leased->has_value());
  }
};

TEST_F(JobViewsTest, APendingJobSaysWhyItWaitsAndABuildOfSuchJobsIsBlocked) {
  AddWorker();
  int64_t build_id = 0;
  auto ids = AddBuild(2, "12.8", "2.8", &build_id);  // no worker has CUDA 12.8
  Router r = MakeRouter();
  auto job = Job(r, ids[0]);
  const auto& w = job.at("waiting");
  EXPECT_EQ(w.at("summary").as_string(), "no worker has CUDA 12.8: provision one or drop the cell");
  EXPECT_TRUE(w.at("unplaceable").as_bool());
  ASSERT_EQ(w.at("workers").as_array().size(), 1u);
  EXPECT_EQ(w.at("workers").as_array()[0].at("name").as_string(), "gpu-box");
  EXPECT_EQ(w.at("workers").as_array()[0].at("id").as_string(), "w1");
  auto b = Build(r, build_id);
  EXPECT_TRUE(b.at("blocked").as_bool());
  EXPECT_EQ(b.at("unplaceable_jobs").as_int64(), 2);
  EXPECT_EQ(b.at("blocked_reason").as_string(),
            "no worker has CUDA 12.8: provision one or drop the cell");
  auto list = Json(Get(r, "/api/v1/builds"));
  EXPECT_TRUE(list.at("builds").as_array()[0].at("blocked").as_bool());

  // One placeable job running and one stuck: running, not blocked, the stuck one counted.
  int64_t mixed = 0;
  auto more = AddBuild(1, "13.0", "2.8", &mixed);
  Start(more[0]);
  auto m = Build(r, mixed);
  EXPECT_FALSE(m.at("blocked").as_bool());
  EXPECT_EQ(m.at("jobs").as_array()[0].at("worker_name").as_string(), "gpu-box");
}

TEST_F(JobViewsTest, ABuildPageNamesEachReasonOnceInALargeFleetAndTheJobPageEveryWorker) {
  for (int i = 0; i < 25; ++i) AddWorker("w" + std::to_string(i), "gpu-" + std::to_string(i));
  int64_t build_id = 0;
  auto ids = AddBuild(2, "12.8", "2.8", &build_id);  // no worker has CUDA 12.8
  Router r = MakeRouter();
  auto b = Build(r, build_id);
  for (const auto& job : b.at("jobs").as_array()) {
    const auto& w = job.at("waiting");
    EXPECT_EQ(w.at("workers_total").as_int64(), 25);
    ASSERT_EQ(w.at("workers").as_array().size(), 1u);
    std::string name(w.at("workers").as_array()[0].at("name").as_string());
    EXPECT_NE(name.find(" and 24 other workers"), std::string::npos) << name;
    std::string reason(w.at("workers").as_array()[0].at("reason").as_string());
    EXPECT_EQ(reason.rfind("no CUDA toolkit 12.8", 0), 0u) << reason;
  }
  auto job = Job(r, ids[0]);
  EXPECT_EQ(job.at("waiting").at("workers").as_array().size(), 25u);
  EXPECT_FALSE(job.at("waiting").as_object().contains("workers_total"));
}

TEST_F(JobViewsTest, ABusyFleetIsNoBlockAndAnEmptyOneSaysToStartAWorker) {
  int64_t build_id = 0;
  AddBuild(1, "13.0", "2.8", &build_id);
  Router r = MakeRouter();
  auto empty = Build(r, build_id);
  EXPECT_TRUE(empty.at("blocked").as_bool());
  EXPECT_EQ(empty.at("jobs").as_array()[0].at("waiting").at("summary").as_string(),
            "no worker is registered: start farm-worker on a host that can build it");
  AddWorker("w1", "gpu-box", store::WorkerState::kBusy);
  auto busy = Build(r, build_id);
  EXPECT_FALSE(busy.at("blocked").as_bool());
  EXPECT_EQ(busy.at("jobs").as_array()[0].at("waiting").at("summary").as_string(),
            "waiting for a free worker: gpu-box can build it");
}

TEST_F(JobViewsTest, ARunningJobShowsProgressPeakRssAndTheExpectedTime) {
  AddWorker();
  // An earlier build of the same recipe and cell ran 90 s.
  auto first = AddBuild(1);
  Start(first[0]);
  clock_.Advance(90'000);
  Finish(first[0]);
  int64_t build_id = 0;
  auto ids = AddBuild(1, "13.0", "2.8", &build_id);
  Start(ids[0]);
  auto changed = store_->RecordProgress({ids[0], 1, "w1", 12, 40, int64_t{600} << 20});
  ASSERT_OK(changed.status());
  EXPECT_TRUE(*changed);
  // Another worker's report, or one on a job it does not hold, changes nothing.
  EXPECT_FALSE(*store_->RecordProgress({ids[0], 1, "w2", 39, 40, 1}));
  Router r = MakeRouter();
  auto job = Job(r, ids[0]);
  EXPECT_EQ(job.at("progress").at("units_done").as_int64(), 12);
  EXPECT_EQ(job.at("progress").at("units_total").as_int64(), 40);
  EXPECT_EQ(job.at("progress").at("peak_rss_bytes").as_int64(), int64_t{600} << 20);
  EXPECT_EQ(job.at("expected_ms").as_int64(), 90'000);
  const auto& attempt = job.at("attempts").as_array()[0];
  EXPECT_EQ(attempt.at("worker_name").as_string(), "gpu-box");
  EXPECT_EQ(attempt.at("units_done").as_string(), "12");  // int64 in the proto JSON mapping
  auto cell = Build(r, build_id).at("jobs").as_array()[0];
  EXPECT_EQ(cell.at("progress").at("units_done").as_int64(), 12);
  auto overview = Json(Get(r, "/api/v1/overview"));
  EXPECT_EQ(overview.at("running").as_array()[0].at("expected_ms").as_int64(), 90'000);
  // The peak never falls, and completion keeps the larger figure.
  ASSERT_OK(store_->RecordProgress({ids[0], 1, "w1", 13, 40, 1}).status());
  Finish(ids[0]);
  auto attempts = store_->ListAttempts(ids[0]);
  EXPECT_EQ(attempts->at(0).peak_rss_bytes, int64_t{600} << 20);
  EXPECT_EQ(attempts->at(0).units_done, 13);
}

TEST_F(JobViewsTest, AFailedJobNamesItsPhaseAndTheCompilerError) {
  int64_t build_id = 0;
  auto ids = AddBuild(1, "13.0", "2.8", &build_id);
  Start(ids[0]);
  Log(ids[0], {{3, "farm: creating venv with /usr/bin/python3 (Python 3.11)"},
               {2, "\x1b[1mcsrc/attn.cu(12): error: identifier \"foo\" is undefined\x1b[0m"},
               {2, "      foo();"},
               {2, "      ^"},
               {2, ""},
               {1, "1 error detected in the compilation of \"csrc/attn.cu\"."},
               {2, "ninja: build stopped: subcommand failed."},
               {2, "RuntimeError: Error compiling objects for extension"},
               {3, "farm: attempt ended: CAUSE_BUILD_FAILED"}});
  Finish(ids[0], store::kCauseBuildFailed);
  Router r = MakeRouter();
  auto failure = Job(r, ids[0]).at("failure");
  EXPECT_EQ(failure.at("phase").as_string(), "build");
  const auto& lines = failure.at("lines").as_array();
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0].as_string(), "csrc/attn.cu(12): error: identifier \"foo\" is undefined");
  EXPECT_EQ(lines[1].as_string(), "      foo();");
  EXPECT_EQ(lines.back().as_string(), "RuntimeError: Error compiling objects for extension");
  auto cell = Build(r, build_id).at("jobs").as_array()[0];
  EXPECT_EQ(cell.at("failure").at("lines").as_array()[0], lines[0]);
}

TEST_F(JobViewsTest, AFailedValidationListsItsFailedCasesWithNumbers) {
  auto ids = AddBuild(1);
  Start(ids[0]);
  farm::v1::ValidationReport v;
  v.set_state(farm::v1::VALIDATION_FAILED);
  auto* ok = v.add_cases();
  ok->set_name("b1h8n512"), ok->set_passed(true);
  auto* bad = v.add_cases();
  bad->set_name("causal-bf16"), bad->set_cosine(0.93126), bad->set_relative_l1(0.18);
  bad->set_tops(512);
  ASSERT_OK(store_
                ->InsertArtifact(
                    {0, ids[0], 1, "x-1-py3-none-any.whl", "ab", 1, "", v.SerializeAsString(), 0})
                .status());
  store::CompletionReport report;
  report.job_id = ids[0], report.attempt = 1, report.worker_id = "w1";
  report.cause = store::kCauseValidationFailed, report.detail = "validation failed: 1 of 2 cases";
  ASSERT_OK(store_->CompleteAttempt(report, clock_.NowUnixMs()).status());
  Router r = MakeRouter();
  auto failure = Job(r, ids[0]).at("failure");
  EXPECT_EQ(failure.at("phase").as_string(), "validation");
  EXPECT_EQ(failure.at("summary").as_string(), "validation failed: 1 of 2 cases");
  EXPECT_EQ(failure.at("lines").as_array()[0].as_string(),
            "case causal-bf16 failed: cosine 0.9313 (min 0.99), relative L1 0.1800 (max 0.07), "
            "512.0 TOPS");
}

TEST_F(JobViewsTest, LogLinesCarryLevelAndPhase) {
  auto ids = AddBuild(1);
  Start(ids[0]);
  Log(ids[0], {{2, "Processing /src (pip writes this to stderr)"},
               {3, "farm: validating in a clean venv"},
               {2, "x.c:3:5: error: expected ';'"},
               {1, "warning: deprecated"}});
  Router r = MakeRouter();
  auto page = Json(Get(r, "/api/v1/jobs/" + std::to_string(ids[0]) + "/log"));
  const auto& lines = page.at("lines").as_array();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].at("level").as_string(), "");
  EXPECT_FALSE(lines[0].as_object().contains("phase"));
  EXPECT_EQ(lines[1].at("phase").as_string(), "validation");
  EXPECT_EQ(lines[2].at("level").as_string(), "error");
  EXPECT_EQ(lines[3].at("level").as_string(), "warning");
  EXPECT_GT(lines[0].at("time_ms").as_int64(), 0);
}

TEST_F(JobViewsTest, BuildsFilterByRecipeStateSubmitterAndWorker) {
  AddWorker("w1", "gpu-box");
  AddWorker("w2", "gpu-box");  // two workers may share a name
  AddWorker("w3", "other");
  auto a = AddBuild(1);
  Start(a[0]);
  Finish(a[0], store::kCauseBuildFailed);
  store::BuildRow unicode;
  unicode.recipe_name = "flash-ättention", unicode.submitted_by = "ci ✓";
  unicode.created_ms = clock_.NowUnixMs();
  std::vector<store::JobRow> jobs(1);
  jobs[0].cell = "", jobs[0].created_ms = clock_.NowUnixMs();
  ASSERT_OK(store_->CreateBuild(&unicode, &jobs));
  Router r = MakeRouter();
  auto ids = [&](const std::string& query) {
    std::vector<int64_t> out;
    const json::value page = Json(Get(r, "/api/v1/builds?" + query));  // outlives the loop
    for (const auto& b : page.at("builds").as_array()) {
      out.push_back(b.at("id").as_int64());
    }
    return out;
  };
  int64_t failed_id = 1, unicode_id = unicode.id;
  EXPECT_EQ(ids("state=failed"), std::vector<int64_t>{failed_id});
  EXPECT_EQ(ids("state=BUILD_QUEUED"), std::vector<int64_t>{unicode_id});
  EXPECT_EQ(ids("recipe=flash-%C3%A4ttention"), std::vector<int64_t>{unicode_id});
  EXPECT_EQ(ids("submitter=ci%20%E2%9C%93"), std::vector<int64_t>{unicode_id});
  EXPECT_EQ(ids("worker=gpu-box"), std::vector<int64_t>{failed_id});
  EXPECT_EQ(ids("worker=w1"), std::vector<int64_t>{failed_id});
  EXPECT_TRUE(ids("worker=other").empty());
  EXPECT_TRUE(ids("worker=nobody").empty());
  EXPECT_TRUE(ids("recipe=attn-example&state=queued").empty());
  EXPECT_EQ(Get(r, "/api/v1/builds?state=exploded").status, 400);
  auto all = Json(Get(r, "/api/v1/builds"));
  EXPECT_GE(all.at("builds").as_array()[0].at("duration_ms").as_int64(), 0);
  EXPECT_TRUE(all.as_object().contains("now"));
}

TEST_F(JobViewsTest, TheBuildListsItsWheelsAndPublicationsFailuresFirst) {
  Router r = MakeRouter();
  auto none = Json(Get(r, "/api/v1/publications"));
  EXPECT_TRUE(none.at("publications").as_array().empty());
  int64_t build_id = 0;
  auto ids = AddBuild(1, "13.0", "", &build_id);
  Start(ids[0]);
  farm::v1::ArchManifest m;
  m.add_runs_on("9.0");
  AddWheel(ids[0], "attn_example-0.1.0+cu130-cp311-cp311-linux_x86_64.whl",
           "Metadata-Version: 2.1\nName: attn-example\nVersion: 0.1.0+cu130\n",
           farm::v1::VALIDATION_PASSED, m.SerializeAsString());
  Finish(ids[0]);
  auto artifact = store_->ListArtifacts(ids[0])->at(0);
  store::PublicationRow ok{.build_id = build_id,
                           .artifact_id = artifact.id,
                           .target = "hf",
                           .kind = "file",
                           .repo = "o/r"};
  ok.state = store::PublicationState::kPublished,
  ok.remote_url = "https://example.invalid/o/r/file";
  store::PublicationRow bad = ok;
  bad.target = "github", bad.kind = "asset", bad.state = store::PublicationState::kFailed,
  bad.remote_url = "";
  bad.error = "422 already_exists";
  ASSERT_OK(store_->EnqueuePublications(artifact.id, "queued", {ok, bad}, clock_.NowUnixMs()));
  auto b = Build(r, build_id);
  const auto& wheels = b.at("wheels").as_array();
  ASSERT_EQ(wheels.size(), 1u);
  EXPECT_EQ(wheels[0].at("variant").as_string(), "cu130");
  EXPECT_EQ(wheels[0].at("validation").at("state").as_string(), "VALIDATION_PASSED");
  EXPECT_EQ(wheels[0].at("manifest").at("runs_on").as_array()[0].as_string(), "9.0");
  EXPECT_EQ(wheels[0].at("publications").as_array().size(), 2u);
  auto pubs = Json(Get(r, "/api/v1/publications"));
  const auto& rows = pubs.at("publications").as_array();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("state").as_string(), "failed");  // failures first
  EXPECT_EQ(rows[0].at("recipe_name").as_string(), "attn-example");
  EXPECT_EQ(rows[0].at("build_id").as_int64(), build_id);
  EXPECT_EQ(pubs.at("by_state").at("failed").as_int64(), 1);
  EXPECT_EQ(Json(Get(r, "/api/v1/publications?limit=1")).at("publications").as_array().size(), 1u);
}

TEST_F(JobViewsTest, AValidationJobIsLabelledWithTheJobItValidatesAndWhatItWaitsFor) {
  AddWorker();  // gpu-box: CUDA 13.0, no GPU
  store::BuildRow build{.recipe_name = "attn-example", .submitted_by = "t"};
  std::vector<store::JobRow> jobs(2);
  int64_t validation = 0;
  ASSERT_NO_FATAL_FAILURE(BuildThenQueueValidation(&build, &jobs, &validation));
  Router r = MakeRouter();

  auto job = Job(r, validation);
  EXPECT_EQ(job.at("kind").as_string(), "validation");
  EXPECT_EQ(job.at("target_job_id").as_int64(), jobs[0].id);
  EXPECT_EQ(job.at("target_attempt").as_int64(), 1);
  EXPECT_EQ(job.at("waiting").at("summary").as_string(),
            "no worker with a GPU of cc 12.0 can validate it: add one (its wheels wait for "
            "hardware until then)");
  EXPECT_TRUE(job.at("waiting").at("unplaceable").as_bool());
  EXPECT_TRUE(job.at("artifacts").as_array().empty());
  EXPECT_FALSE(job.as_object().contains("expected_ms"));  // the build's 90 s say nothing of it
  EXPECT_EQ(Job(r, jobs[0].id).at("kind").as_string(), "build");

  // On the build page the pending build job of the same cell keeps its own reason, and
  // the unplaceable validation counts but does not block the build.
  auto b = Build(r, build.id);
  const auto& listed = b.at("jobs").as_array();
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[1].at("kind").as_string(), "build");
  EXPECT_EQ(listed[1].at("waiting").at("summary").as_string(),
            "waiting for a free worker: gpu-box can build it");
  EXPECT_EQ(listed[2].at("kind").as_string(), "validation");
  EXPECT_EQ(listed[2].at("target_job_id").as_int64(), jobs[0].id);
  EXPECT_FALSE(b.at("blocked").as_bool());
  EXPECT_EQ(b.at("unplaceable_jobs").as_int64(), 1);
  EXPECT_EQ(b.at("job_counts").at("validation").as_int64(), 1);
  EXPECT_EQ(b.at("job_counts").at("total").as_int64(), 3);
  auto list = Json(Get(r, "/api/v1/builds")).at("builds").as_array()[0];
  EXPECT_EQ(list.at("jobs").at("validation").as_int64(), 1);
  EXPECT_FALSE(list.at("blocked").as_bool());

  // An RTX worker takes it: the overview and the workers list say it runs a validation.
  ASSERT_NO_FATAL_FAILURE(RtxWorkerTakes(validation));
  auto overview = Json(Get(r, "/api/v1/overview"));
  const auto& running = overview.at("running").as_array();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].at("kind").as_string(), "validation");
  EXPECT_EQ(running[0].at("target_job_id").as_int64(), jobs[0].id);
  EXPECT_EQ(running[0].at("worker_name").as_string(), "rtx-\u00e9");
  auto workers = Json(Get(r, "/api/v1/workers")).at("workers").as_array();
  for (const auto& w : workers) {
    bool rtx = w.at("id").as_string() == "w-rtx";
    EXPECT_EQ(w.at("running_validation_jobs").as_array().size(), rtx ? 1u : 0u);
    if (rtx) {
      EXPECT_EQ(w.at("running_validation_jobs").as_array()[0].as_int64(), validation);
    }
  }

  // Its 5 s are neither a point of the build-duration chart nor the expected time of the
  // next build of the cell.
  clock_.Advance(5'000);
  store::CompletionReport done;
  done.job_id = validation, done.attempt = 1, done.worker_id = "w-rtx";
  ASSERT_OK(store_->CompleteAttempt(done, clock_.NowUnixMs()).status());
  store::BuildRow next{.recipe_name = "attn-example", .submitted_by = "t"};
  std::vector<store::JobRow> again(1);
  again[0].cell = jobs[0].cell, again[0].created_ms = clock_.NowUnixMs();
  ASSERT_OK(store_->CreateBuild(&next, &again));
  EXPECT_EQ(Job(r, again[0].id).at("expected_ms").as_int64(), 90'000);
  auto chart = Json(Get(r, "/api/v1/chart")).at("series").as_array();
  ASSERT_EQ(chart.size(), 1u);
  const auto& points = chart[0].at("points").as_array();
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].at("job_id").as_int64(), jobs[0].id);
}

}  // namespace
}  // namespace farm::http::testing
