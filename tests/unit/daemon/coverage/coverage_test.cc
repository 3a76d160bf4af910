#include "daemon/coverage/coverage.h"

#include <gtest/gtest.h>

#include "daemon/coverage/events.h"

namespace farm::coverage {
namespace {

farm::v1::MatrixCell MakeCell(const std::string& python, const std::string& arch = "") {
  farm::v1::MatrixCell c;
  c.set_python(python);
  c.set_arch_list(arch);
  return c;
}

store::JobRow Job(int64_t id, int64_t build_id, const farm::v1::MatrixCell& cell,
                  store::JobState state) {
  store::JobRow j;
  j.id = id;
  j.build_id = build_id;
  j.cell = cell.SerializeAsString();
  j.state = state;
  j.attempt = 1;
  j.finished_ms = id * 1000;
  return j;
}

store::ArtifactRow Wheel(int64_t job_id, const std::string& sha, int validation_state) {
  store::ArtifactRow a;
  a.job_id = job_id;
  a.attempt = 1;
  a.filename = "pkg-1.0-" + sha + ".whl";
  a.sha256 = sha;
  a.validation_state = validation_state;
  farm::v1::ValidationReport report;
  report.set_message("report of " + sha);
  a.validation = report.SerializeAsString();
  return a;
}

BuildFacts Build(int64_t id, const std::string& name, std::vector<std::string> pythons) {
  BuildFacts f;
  f.build.id = id;
  f.build.state = store::kBuildSucceeded;
  f.build.finished_ms = id * 1000;
  f.build.recipe_name = name;
  f.recipe.set_name(name);
  f.recipe.set_version("1.0");
  for (const auto& p : pythons) f.recipe.mutable_matrix()->add_python(p);
  return f;
}

const Cell* Find(const std::vector<Cell>& cells, const std::string& package,
                 const std::string& python) {
  for (const Cell& c : cells) {
    if (c.key.package == package && c.key.python == python) return &c;
  }
  return nullptr;
}

TEST(CellStateTest, EveryStateHasOneNameThatParsesBack) {
  std::set<std::string_view> names;
  for (CellState s : AllCellStates()) {
    EXPECT_EQ(ParseCellState(CellStateName(s)), s);
    EXPECT_FALSE(CellStateWords(s).empty());
    names.insert(CellStateName(s));
  }
  EXPECT_EQ(names.size(), AllCellStates().size());
  EXPECT_EQ(ParseCellState("VALIDATED"), std::nullopt);
  EXPECT_EQ(ParseCellState(""), std::nullopt);
}

TEST(ComputeCoverageTest, EachStateFromItsJobAndMissingFromTheNewestMatrix) {
  BuildFacts b = Build(1, "pkg", {"3.10", "3.11", "3.12", "3.13", "3.14", "3.9"});
  b.jobs = {Job(1, 1, MakeCell("3.10"), store::kJobSucceeded),
            Job(2, 1, MakeCell("3.11"), store::kJobSucceeded),
            Job(3, 1, MakeCell("3.12"), store::kJobFailed),
            Job(4, 1, MakeCell("3.13"), store::kJobRunning),
            Job(5, 1, MakeCell("3.14"), store::kJobSucceeded)};
  b.jobs[2].error = "exit code 3";
  b.artifacts[1] = {Wheel(1, "aa", store::kValidationPassed)};
  b.artifacts[2] = {Wheel(2, "bb", store::kValidationPendingHardware)};
  b.artifacts[5] = {Wheel(5, "cc", store::kValidationNotRun)};
  std::vector<Cell> cells = ComputeCoverage({b});
  ASSERT_EQ(cells.size(), 6u);
  EXPECT_EQ(Find(cells, "pkg", "3.10")->state, CellState::kValidated);
  EXPECT_EQ(Find(cells, "pkg", "3.10")->wheel, "pkg-1.0-aa.whl");
  EXPECT_EQ(Find(cells, "pkg", "3.10")->validated_ms, 1000);
  EXPECT_EQ(Find(cells, "pkg", "3.11")->state, CellState::kPendingHardware);
  EXPECT_EQ(Find(cells, "pkg", "3.11")->cause, "report of bb");
  EXPECT_EQ(Find(cells, "pkg", "3.11")->validated_ms, 0);
  EXPECT_EQ(Find(cells, "pkg", "3.12")->state, CellState::kFailed);
  EXPECT_EQ(Find(cells, "pkg", "3.12")->cause, "exit code 3");
  EXPECT_EQ(Find(cells, "pkg", "3.13")->state, CellState::kInProgress);
  EXPECT_EQ(Find(cells, "pkg", "3.14")->state, CellState::kBuilt);
  const Cell* missing = Find(cells, "pkg", "3.9");
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->state, CellState::kMissing);
  EXPECT_EQ(missing->job_id, 0);
  EXPECT_EQ(missing->build_id, 1);
  for (const Cell& c : cells) EXPECT_EQ(c.release_to_wheel_seconds, std::nullopt);
}

TEST(ComputeCoverageTest, TheNewestJobNotCancelledDecidesAndValidationFailureFails) {
  BuildFacts old = Build(1, "pkg", {"3.11"});
  old.jobs = {Job(1, 1, MakeCell("3.11"), store::kJobSucceeded)};
  old.artifacts[1] = {Wheel(1, "aa", store::kValidationPassed)};
  BuildFacts newer = Build(2, "pkg", {"3.11"});
  newer.jobs = {Job(2, 2, MakeCell("3.11"), store::kJobSucceeded),
                Job(3, 2, MakeCell("3.11"), store::kJobCancelled)};
  newer.artifacts[2] = {Wheel(2, "bb", store::kValidationFailed)};
  std::vector<Cell> cells = ComputeCoverage({newer, old});
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].job_id, 2);
  EXPECT_EQ(cells[0].state, CellState::kFailed);
  EXPECT_EQ(cells[0].cause, "validation failed: report of bb");
}

TEST(ComputeCoverageTest, AValidationJobGivesTheValidatedTimeAndWheelsOfOldAttemptsDoNotCount) {
  BuildFacts b = Build(1, "pkg", {"3.11"});
  store::JobRow job = Job(1, 1, MakeCell("3.11"), store::kJobSucceeded);
  job.attempt = 2;
  store::JobRow validation = Job(7, 1, MakeCell("3.11"), store::kJobSucceeded);
  validation.kind = store::kJobValidate;
  validation.target_job_id = 1;
  validation.finished_ms = 99'000;
  b.jobs = {job, validation};
  store::ArtifactRow stale = Wheel(1, "old", store::kValidationFailed);  // attempt 1
  store::ArtifactRow counted = Wheel(1, "new", store::kValidationPassed);
  counted.attempt = 2;
  b.artifacts[1] = {stale, counted};
  std::vector<Cell> cells = ComputeCoverage({b});
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].state, CellState::kValidated);
  EXPECT_EQ(cells[0].validated_ms, 99'000);
  EXPECT_EQ(cells[0].wheel, "pkg-1.0-new.whl");
}

TEST(ComputeCoverageTest, CellsAreInReleaseOrder) {
  BuildFacts b = Build(1, "pkg", {});
  int64_t id = 1;
  for (const char* torch : {"2.10", "2.8", "2.9"}) {
    farm::v1::MatrixCell c = MakeCell("3.11");
    c.set_torch(torch);
    b.jobs.push_back(Job(++id, 1, c, store::kJobPending));
  }
  std::vector<std::string> order;
  for (const Cell& c : ComputeCoverage({b})) order.push_back(c.key.torch);
  EXPECT_EQ(order, (std::vector<std::string>{"2.8", "2.9", "2.10"}));
}

TEST(ComputeCoverageTest, AWatchFiredBuildsCellsGiveTheTimeFromReleaseToWheel) {
  BuildFacts b = Build(2, "pkg", {"3.11", "3.12"});
  b.upstream_ms = 40'000;  // the release the watch fired for
  store::JobRow made = Job(3, 2, MakeCell("3.11"), store::kJobSucceeded);
  made.finished_ms = 100'000;
  store::JobRow reused = Job(4, 2, MakeCell("3.12"), store::kJobSucceeded);
  reused.reused_from = 1;  // answered from an earlier build: its wheel predates the release
  b.jobs = {made, reused};
  b.artifacts[3] = {Wheel(3, "a", store::kValidationPassed)};
  store::ArtifactRow copy = Wheel(4, "b", store::kValidationPassed);
  copy.attempt = 0;
  b.artifacts[4] = {copy};
  std::vector<Cell> cells = ComputeCoverage({b});
  const Cell* fresh = Find(cells, "pkg", "3.11");
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(fresh->release_to_wheel_seconds, std::optional<int64_t>(60));
  const Cell* old = Find(cells, "pkg", "3.12");
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->state, CellState::kValidated);
  EXPECT_FALSE(old->release_to_wheel_seconds.has_value());
  BuildFacts plain = Build(5, "other", {"3.11"});
  plain.jobs = {Job(6, 5, MakeCell("3.11"), store::kJobSucceeded)};
  plain.artifacts[6] = {Wheel(6, "c", store::kValidationPassed)};
  EXPECT_FALSE(ComputeCoverage({plain})[0].release_to_wheel_seconds.has_value());
}

TEST(ComputeCoverageTest, PackagesAndVersionsAreCellsOfTheirOwn) {
  BuildFacts a = Build(1, "alpha", {"3.11"});
  a.jobs = {Job(1, 1, MakeCell("3.11"), store::kJobRunning)};
  BuildFacts b = Build(2, "beta", {"3.11"});
  b.jobs = {Job(2, 2, MakeCell("3.11"), store::kJobRunning)};
  BuildFacts b2 = Build(3, "beta", {"3.11"});
  b2.recipe.set_version("2.0");
  b2.jobs = {Job(3, 3, MakeCell("3.11"), store::kJobRunning)};
  std::vector<Cell> cells = ComputeCoverage({b2, b, a});
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].key.package, "alpha");
  EXPECT_EQ(cells[1].key.version, "1.0");
  EXPECT_EQ(cells[2].key.version, "2.0");
}

// A build against a torch release candidate decides its cell until the final release's
// build of it exists, whichever ran later; its wheel's event says it is a candidate.
TEST(ComputeCoverageTest, AFinalReleasesBuildReplacesTheCandidatesWhateverTheOrder) {
  auto facts = [](int64_t build, int64_t job, bool candidate, const std::string& sha) {
    BuildFacts b = Build(build, "pkg", {"3.11"});
    farm::v1::MatrixCell cell = MakeCell("3.11");
    cell.set_torch("2.12");
    b.recipe.mutable_matrix()->add_torch("2.12");
    (*b.recipe.mutable_environment()->mutable_torch())["2.12"] = "2.12.0";
    b.jobs = {Job(job, build, cell, store::kJobSucceeded)};
    b.jobs[0].release_candidate = candidate;
    b.artifacts[job] = {Wheel(job, sha, store::kValidationPassed)};
    return b;
  };
  std::vector<Cell> rc = ComputeCoverage({facts(1, 1, true, "aa")});
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_TRUE(rc[0].release_candidate);
  EXPECT_EQ(rc[0].state, CellState::kValidated);
  EXPECT_EQ(rc[0].cause, "release candidate: built against torch 2.12.0 before its final release");
  EXPECT_TRUE(CellProto(rc[0]).release_candidate());
  std::vector<Event> events = EventsOf({facts(1, 1, true, "aa")}, 10);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].release_candidate);
  EXPECT_EQ(EventTitle(events[0]),
            "pkg 1.0: pkg-1.0-aa.whl validated (job 1), a release candidate build for torch 2.12 "
            "(its final release's build replaces it)");

  for (bool final_first : {false, true}) {
    // The final's job is older when the candidate was rebuilt after it: it still decides.
    std::vector<Cell> cells =
        final_first ? ComputeCoverage({facts(1, 1, false, "bb"), facts(2, 2, true, "aa")})
                    : ComputeCoverage({facts(1, 1, true, "aa"), facts(2, 2, false, "bb")});
    ASSERT_EQ(cells.size(), 1u) << final_first;
    EXPECT_FALSE(cells[0].release_candidate) << final_first;
    EXPECT_EQ(cells[0].wheel, "pkg-1.0-bb.whl") << final_first;
    EXPECT_EQ(cells[0].cause, "") << final_first;
  }
}

TEST(CellFilterTest, MatchesAxesStateAndOneArchOfTheList) {
  Cell c{.key = {.package = "pkg",
                 .torch = "2.8",
                 .cuda = "12.8",
                 .python = "3.11",
                 .arch_list = "9.0;12.0a"},
         .state = CellState::kValidated};
  EXPECT_TRUE(CellFilter{}.Matches(c));
  EXPECT_TRUE(CellFilter{.arch = "12.0a"}.Matches(c));
  EXPECT_TRUE(CellFilter{.arch = "9.0"}.Matches(c));
  EXPECT_FALSE(CellFilter{.arch = "9"}.Matches(c));
  EXPECT_FALSE(CellFilter{.package = "other"}.Matches(c));
  EXPECT_TRUE((CellFilter{.torch = "2.8", .cuda = "12.8", .python = "3.11"}.Matches(c)));
  EXPECT_FALSE(CellFilter{.state = CellState::kFailed}.Matches(c));
}

TEST(EventsTest, AFarmWithoutAGpuAnnouncesItsBuiltWheels) {
  BuildFacts b = Build(1, "pkg", {"3.11"});
  b.upstream_ms = 40'000;  // a watch fired it
  store::JobRow job = Job(2, 1, MakeCell("3.11"), store::kJobSucceeded);
  job.finished_ms = 100'000;
  b.jobs = {job};
  b.artifacts[2] = {Wheel(2, "cc", store::kValidationPendingHardware)};
  std::vector<Event> events = EventsOf({b}, 10);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, EventKind::kWheelBuilt);
  EXPECT_EQ(events[0].time_ms, 100'000);
  // The release's time to a wheel counts to the built one while validation waits.
  std::vector<Cell> cells = ComputeCoverage({b});
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].state, CellState::kPendingHardware);
  EXPECT_EQ(cells[0].release_to_wheel_seconds, std::optional<int64_t>(60));
  // A wheel whose validation failed is no news of its own (its build failed).
  b.artifacts[2] = {Wheel(2, "cc", store::kValidationFailed)};
  EXPECT_TRUE(EventsOf({b}, 10).empty());
  EXPECT_FALSE(ComputeCoverage({b})[0].release_to_wheel_seconds.has_value());
}

TEST(EventsTest, AWheelIsOneEventWhateverCopiesAndFailedBuildsAreNewestFirst) {
  BuildFacts first = Build(1, "pkg", {});
  first.jobs = {Job(1, 1, MakeCell("3.11"), store::kJobSucceeded)};
  first.artifacts[1] = {Wheel(1, "aa", store::kValidationPassed),
                        Wheel(1, "pend", store::kValidationPendingHardware)};
  BuildFacts reused = Build(5, "pkg", {});
  store::JobRow copy = Job(5, 5, MakeCell("3.11"), store::kJobSucceeded);
  copy.reused_from = 1;
  reused.jobs = {copy};
  store::ArtifactRow copied = Wheel(5, "aa", store::kValidationPassed);
  copied.attempt = 0;
  reused.artifacts[5] = {copied};
  BuildFacts failed = Build(3, "pkg", {});
  failed.build.state = store::kBuildFailed;
  failed.schedule_id = 4;
  failed.jobs = {Job(3, 3, MakeCell("3.11"), store::kJobFailed)};
  failed.jobs[0].error = "exit code 1";
  std::vector<Event> events = EventsOf({reused, failed, first}, 10);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].id, "build_failed:3");
  EXPECT_EQ(events[0].cause, "exit code 1");
  EXPECT_EQ(events[0].schedule_id, 4);
  EXPECT_NE(EventTitle(events[0]).find("release-day failure"), std::string::npos);
  // Job 1's two wheels, both finished at 1 s: the validated one, and the one whose
  // validation waits for a GPU, announced as built.
  EXPECT_EQ(events[2].id, "wheel_validated:aa");
  EXPECT_EQ(events[2].job_id, 1);  // the first validation, not the copy's
  EXPECT_EQ(events[1].id, "wheel_built:pend");
  EXPECT_EQ(EventTitle(events[1]),
            "pkg 1.0: pkg-1.0-pend.whl built (job 1); validation waits for a GPU it runs on");
  EXPECT_EQ(EventsOf({reused, failed, first}, 1).size(), 1u);
  EXPECT_EQ(ParseEventKind("build_failed"), EventKind::kBuildFailed);
  EXPECT_EQ(ParseEventKind("wheel_built"), EventKind::kWheelBuilt);
  EXPECT_EQ(ParseEventKind("nope"), std::nullopt);
}

TEST(EventsTest, ARefusedPublicationIsAnEventWithTheRefusal) {
  BuildFacts b = Build(7, "pkg", {});
  store::PublicationRow refused;
  refused.build_id = 7;
  refused.artifact_id = 9;
  refused.target = "github";
  refused.filename = "pkg-1.0+cu130-cp311-cp311-linux_x86_64.whl";
  refused.state = store::PublicationState::kRefused;
  refused.error = "too large for GitHub Releases: ... largest parts: sm_90a in pkg/_C.so 1.1 GiB";
  refused.updated_ms = 99'000;
  b.refused = {refused};
  std::vector<Event> events = EventsOf({b}, 10);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].id, "publication_refused:7:9:github");
  EXPECT_EQ(events[0].kind, EventKind::kPublicationRefused);
  EXPECT_EQ(events[0].cause, refused.error);
  EXPECT_EQ(events[0].time_ms, 99'000);
  EXPECT_EQ(EventTitle(events[0]),
            "pkg 1.0: " + refused.filename + " too large for GitHub Releases (build 7)");
  EXPECT_EQ(ParseEventKind("publication_refused"), EventKind::kPublicationRefused);
}

// A stable-ABI wheel proven with a torch released after its build (builds/new_torch.h):
// the new torch's cell is the validation job's, without a rebuild; pending until a GPU
// takes it, then validated or failed with the reason; the feed says the same.
TEST(ComputeCoverageTest, ANewTorchProofDecidesItsCellWithoutARebuild) {
  BuildFacts b = Build(1, "abi", {});
  farm::v1::MatrixCell built = MakeCell("3.11");
  built.set_torch("2.10");
  b.jobs = {Job(1, 1, built, store::kJobSucceeded)};
  b.artifacts[1] = {Wheel(1, "aa", store::kValidationPassed)};
  auto proof = [&](int64_t id, const std::string& torch, store::JobState state) {
    farm::v1::MatrixCell cell = MakeCell("3.11");
    cell.set_torch(torch);
    store::JobRow v = Job(id, 1, cell, state);
    v.kind = store::kJobValidate;
    v.target_job_id = 1;
    v.target_attempt = 1;
    farm::v1::JobNeeds needs;
    needs.set_new_torch(torch + ".0");
    v.needs = needs.SerializeAsString();
    return v;
  };
  store::JobRow waiting = proof(5, "2.11", store::kJobPending);
  waiting.attempt = 0;
  b.jobs.push_back(waiting);
  std::vector<Cell> cells = ComputeCoverage({b});
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[1].key.torch, "2.11");
  EXPECT_EQ(cells[1].state, CellState::kPendingHardware);
  EXPECT_EQ(cells[1].cause, "validation-only job 5 on 2.11.0 waits for a GPU the wheel runs on");

  b.jobs.back() = proof(5, "2.11", store::kJobSucceeded);
  store::JobRow failed = proof(6, "2.12", store::kJobFailed);
  failed.error = "undefined symbol: at::x";
  b.jobs.push_back(failed);
  cells = ComputeCoverage({b});
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[1].state, CellState::kValidated);
  EXPECT_EQ(cells[1].cause, "validated on 2.11.0 without a rebuild (job 5)");
  EXPECT_EQ(cells[1].wheel, "pkg-1.0-aa.whl");
  EXPECT_EQ(cells[1].validated_ms, 5000);
  EXPECT_EQ(cells[2].state, CellState::kFailed);
  EXPECT_EQ(cells[2].cause, "validation on 2.12.0 failed (no rebuild): undefined symbol: at::x");

  std::vector<Event> events = EventsOf({b}, 10);
  std::vector<std::string> titles;
  for (const Event& e : events) {
    if (e.kind == EventKind::kTorchProof) titles.push_back(EventTitle(e));
  }
  EXPECT_EQ(titles,
            (std::vector<std::string>{
                "abi 1.0: pkg-1.0-aa.whl failed on torch 2.12.0 without a rebuild (job 6): "
                "undefined symbol: at::x",
                "abi 1.0: pkg-1.0-aa.whl validated on torch 2.11.0 without a rebuild (job 5)"}));
  EXPECT_EQ(ParseEventKind("torch_proof"), EventKind::kTorchProof);
}

TEST(EventsTest, ARequestsWheelIsAnnouncedOnceWhenItsJobMadeIt) {
  BuildFacts b = Build(1, "pkg", {"3.11"});
  b.jobs = {Job(2, 1, MakeCell("3.11"), store::kJobSucceeded)};
  b.artifacts[2] = {Wheel(2, "cc", store::kValidationPendingHardware)};
  store::RequestRow asked{.id = 7, .package = "pkg", .job_id = 2, .filings = 3};
  store::RequestRow waiting{.id = 8, .package = "pkg", .job_id = 99};  // its job made nothing
  std::vector<Event> events = EventsWithRequests({b}, {asked, waiting}, 10);
  ASSERT_EQ(events.size(), 2u);
  const Event& e = events[0].kind == EventKind::kRequestBuilt ? events[0] : events[1];
  EXPECT_EQ(e.id, "request_built:7");
  EXPECT_EQ(e.wheel, "pkg-1.0-cc.whl");
  EXPECT_EQ(EventTitle(e),
            "pkg 1.0: the requested wheel pkg-1.0-cc.whl is ready (job 2; request 7, asked 3 "
            "time(s))");
  // Validated later: the same event, found again with the same id.
  b.artifacts[2] = {Wheel(2, "cc", store::kValidationPassed)};
  events = EventsWithRequests({b}, {asked}, 10);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(events[0].id == "request_built:7" || events[1].id == "request_built:7");
  EXPECT_EQ(ParseEventKind("request_built"), EventKind::kRequestBuilt);
  EXPECT_EQ(EventsWithRequests({b}, {asked}, 1).size(), 1u);
}

}  // namespace
}  // namespace farm::coverage
