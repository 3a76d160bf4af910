// Upstream watches: their state's text form, what counts as new, upload times, git ref
// listings, a torch axis that follows the index, and the runner's watch schedules over a
// real SQLite store with a scripted poller (the real poller against protocol-faithful
// upstreams is tests/integration/test_release_day.py).
#include <gtest/gtest.h>

#include "daemon/cron/new_schedule.h"
#include "daemon/cron/runner.h"
#include "daemon/cron/torch_follow.h"
#include "daemon/cron/upstream_watch.h"
#include "daemon/cron/watch_state.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/cron/runner_fixture.h"

namespace farm::cron {
namespace {

TEST(WatchStateTest, RoundTripsAndDropsWhatDoesNotParse) {
  WatchState s;
  s.primed = true;
  s.failures = 2;
  s.etags["https://x/whl/cu130/torch/"] = "\"abc\"";
  s.seen = {"torch cu130 2.9.0", "tag v1.0"};
  WatchState back = WatchState::Parse(s.Serialize());
  EXPECT_TRUE(back.primed);
  EXPECT_EQ(back.failures, 2);
  EXPECT_EQ(back.etags, s.etags);
  EXPECT_EQ(back.seen, s.seen);
  WatchState junk = WatchState::Parse("v1\nfailures -7\nbogus line\netag no-tab\nseen a\n");
  EXPECT_FALSE(junk.primed);
  EXPECT_EQ(junk.failures, 0);
  EXPECT_TRUE(junk.etags.empty());
  EXPECT_EQ(junk.seen, std::set<std::string>{"a"});
  // A key with a line break cannot smuggle a record in.
  WatchState evil;
  evil.seen = {"x\nprimed"};
  EXPECT_FALSE(WatchState::Parse(evil.Serialize()).primed);
}

TEST(WatchStateTest, BacksOffExponentiallyWithACap) {
  EXPECT_EQ(NextPollDelayMs(60000, 0), 60000);
  EXPECT_EQ(NextPollDelayMs(60000, 1), 120000);
  EXPECT_EQ(NextPollDelayMs(60000, 3), 480000);
  EXPECT_EQ(NextPollDelayMs(600000, 50), 6LL * 3600 * 1000);
}

TEST(UpstreamWatchTest, NewItemsAreThoseNotSeenAndAfterPollRemembersThem) {
  PollResult poll;
  poll.items = {{.key = "torch cu130 2.9.0"}, {.key = "torch cu130 2.10.0"}};
  poll.etags["u"] = "\"e\"";
  WatchState state;
  state.seen = {"torch cu130 2.9.0"};
  state.failures = 3;
  auto fresh = NewItems(poll, state);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].key, "torch cu130 2.10.0");
  WatchState next = AfterPoll(state, poll);
  EXPECT_TRUE(next.primed);
  EXPECT_EQ(next.failures, 0);
  EXPECT_EQ(next.etags.at("u"), "\"e\"");
  EXPECT_TRUE(NewItems(poll, next).empty());
}

TEST(UpstreamWatchTest, ReadsUploadTimes) {
  EXPECT_EQ(ParseUploadTimeMs("2026-11-27T08:15:02.123456Z"), 1795767302123);
  EXPECT_EQ(ParseUploadTimeMs("2026-11-27T08:15:02Z"), 1795767302000);
  EXPECT_EQ(ParseUploadTimeMs("yesterday"), 0);
  EXPECT_EQ(ParseUploadTimeMs("2026-13-01T00:00:00Z"), 0);
}

TEST(UpstreamWatchTest, RefusesWatchesItCannotPoll) {
  WatchUpstreams up{.indexes = {{"cu130", "https://x/whl/cu130/"}}, .trees = {}};
  WatchTarget target{.cuda = {"13.0"}, .git_url = ""};
  farm::v1::UpstreamWatch w;
  w.mutable_torch()->set_spec(">=2.9");
  EXPECT_OK(CheckWatch(w, target, up, 60));
  w.set_poll_seconds(5);
  EXPECT_EQ(CheckWatch(w, target, up, 60).code(), StatusCode::kInvalidArgument);
  w.set_poll_seconds(0);
  w.mutable_torch()->add_variants("cu128");
  EXPECT_NE(CheckWatch(w, target, up, 60).message().find("--upstream-index cu128"),
            std::string::npos);
  farm::v1::UpstreamWatch git;
  git.mutable_git()->set_tags("v*");
  EXPECT_NE(CheckWatch(git, target, up, 60).message().find("source is git"), std::string::npos);
  git.mutable_git()->set_branch("main");
  target.git_url = "https://x/repo.git";
  EXPECT_NE(CheckWatch(git, target, up, 60).message().find("either tags"), std::string::npos);
  EXPECT_EQ(CheckWatch(farm::v1::UpstreamWatch(), target, up, 60).code(),
            StatusCode::kInvalidArgument);
}

TEST(SourceResolverTest, ParseRefsPeelsAnnotatedTags) {
  const std::string a(40, 'a'), b(40, 'b'), c(40, 'c');
  auto refs = ParseRefs(a + "\trefs/heads/main\n" + b + "\trefs/tags/v1.0\n" + c +
                        "\trefs/tags/v1.0^{}\nnot-a-sha\trefs/tags/bad\n");
  EXPECT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs.at("refs/heads/main"), a);
  EXPECT_EQ(refs.at("refs/tags/v1.0"), c);
}

// Answers pages from a map by URL; a request carrying the page's ETag gets 304.
class PageFetcher final : public upstream::Fetcher {
 public:
  Result<upstream::FetchedPage> GetPage(const std::string& url, const std::string& accept,
                                        int64_t max_bytes) override {
    return GetPageIfChanged(url, accept, max_bytes, "");
  }
  Result<upstream::FetchedPage> GetPageIfChanged(const std::string& url, const std::string&,
                                                 int64_t, const std::string& etag) override {
    requests.push_back(url + (etag.empty() ? "" : " if-none-match " + etag));
    auto it = pages.find(url);
    if (it == pages.end()) return Status::NotFound(url + " answered HTTP 404");
    upstream::FetchedPage page = it->second;
    page.url = url;
    if (!etag.empty() && etag == page.etag) {
      page.body.clear();
      page.not_modified = true;
    }
    return page;
  }
  Status Download(const std::string&, const upstream::DownloadSink&) override {
    return Status::Unimplemented("pages only");
  }
  std::map<std::string, upstream::FetchedPage> pages;
  std::vector<std::string> requests;
};

TEST(UpstreamWatchPollerTest, ReadsTorchReleasesConditionallyAndSkipsWhatDoesNotMatch) {
  PageFetcher fetcher;
  const std::string url = "https://idx.test/whl/cu130/torch/";
  const std::string sha(64, 'a');
  fetcher.pages[url] = {.url = url,
                        .content_type = "application/vnd.pypi.simple.v1+json",
                        .body = R"({"meta": {"api-version": "1.1"}, "name": "torch", "files": [
        {"filename": "torch-2.9.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl",
         "url": "../torch-2.9.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl",
         "hashes": {"sha256": ")" +
                                sha + R"("}, "upload-time": "2026-10-15T17:00:00.000000Z"},
        {"filename": "torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
         "url": "../torch-2.9.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
         "hashes": {"sha256": ")" +
                                sha + R"("}, "upload-time": "2026-10-15T16:00:00.000000Z"},
        {"filename": "torch-2.10.0rc1+cu130-cp311-cp311-manylinux_2_28_x86_64.whl",
         "url": "../torch-2.10.0rc1+cu130-cp311-cp311-manylinux_2_28_x86_64.whl",
         "hashes": {"sha256": ")" +
                                sha + R"("}},
        {"filename": "torch-2.7.1+cu130-cp311-cp311-manylinux_2_28_x86_64.whl",
         "url": "../torch-2.7.1+cu130-cp311-cp311-manylinux_2_28_x86_64.whl",
         "hashes": {"sha256": ")" +
                                sha + R"("}},
        {"filename": "torch-garbage.whl", "url": "../torch-garbage.whl"}]})",
                        .etag = "\"v1\""};
  UpstreamWatchPoller poller(&fetcher, nullptr,
                             {.indexes = {{"cu130", "https://idx.test/whl/cu130/"}}, .trees = {}});
  farm::v1::UpstreamWatch w;
  w.mutable_torch()->set_spec(">=2.8");
  WatchTarget target{.cuda = {"13.0"}, .git_url = ""};
  auto poll = poller.Poll(w, target, WatchState());
  ASSERT_OK(poll.status());
  ASSERT_EQ(poll->items.size(), 1u);  // one release of two files; no rc, nothing below 2.8
  EXPECT_EQ(poll->items[0].key, "torch cu130 2.9.0");
  EXPECT_EQ(poll->items[0].upstream_ms, ParseUploadTimeMs("2026-10-15T16:00:00Z"));
  EXPECT_EQ(poll->etags.at(url), "\"v1\"");

  WatchState seen = AfterPoll(WatchState(), *poll);
  auto again = poller.Poll(w, target, seen);
  ASSERT_OK(again.status());
  EXPECT_TRUE(again->items.empty());
  EXPECT_EQ(again->unchanged_pages, std::vector<std::string>{url});
  EXPECT_EQ(fetcher.requests.back(), url + " if-none-match \"v1\"");

  w.mutable_torch()->set_prereleases(true);
  auto pre = poller.Poll(w, target, WatchState());
  ASSERT_OK(pre.status());
  EXPECT_EQ(pre->items.size(), 2u);
}

TEST(UpstreamWatchPollerTest, ReadsToolkitsFromTheRedistListing) {
  PageFetcher fetcher;
  const std::string url = "https://redist.test/cuda/redist/";
  fetcher.pages[url] = {.url = url,
                        .content_type = "text/html",
                        .body =
                            "<a href='redistrib_12.8.1.json'>x</a> <a href='redistrib_12.9.0.json'>"
                            "</a> <a href='redistrib_11.8.0.json'></a> redistrib_13.0.json "
                            "<a href='redistrib_evil.json'></a>"};
  UpstreamWatchPoller poller(&fetcher, nullptr, {.indexes = {}, .trees = {{"cuda", url}}});
  farm::v1::UpstreamWatch w;
  w.mutable_toolkit()->set_spec(">=12.8");
  auto poll = poller.Poll(w, WatchTarget(), WatchState());
  ASSERT_OK(poll.status());
  std::vector<std::string> keys;
  for (const auto& item : poll->items) keys.push_back(item.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"cuda 12.8.1", "cuda 12.9.0", "cuda 13.0"}));
  farm::v1::UpstreamWatch other;
  other.mutable_toolkit()->set_tree("nvidia");
  EXPECT_EQ(poller.Poll(other, WatchTarget(), WatchState()).status().code(),
            StatusCode::kFailedPrecondition);
}

upstream::ReleaseVersion V(const char* text) { return *upstream::ParseReleaseVersion(text); }

TEST(TorchFollowTest, ResolvesMinorsPinsAndExcludesFromTheIndexes) {
  farm::v1::Recipe recipe;
  recipe.mutable_matrix()->mutable_torch_follow()->set_spec(">=2.8");
  recipe.mutable_matrix()->mutable_torch_follow()->set_newest(2);
  std::map<std::string, std::vector<upstream::ReleaseVersion>> releases{
      {"cu128", {V("2.7.1"), V("2.8.0"), V("2.9.0"), V("2.9.1")}},
      {"cu130", {V("2.9.0"), V("2.10.0"), V("2.11.0rc1")}}};
  ASSERT_OK(ApplyTorchFollow({"12.8", "13.0"}, releases, &recipe));
  const auto& m = recipe.matrix();
  EXPECT_EQ(std::vector<std::string>(m.torch().begin(), m.torch().end()),
            (std::vector<std::string>{"2.9", "2.10"}));
  // 2.9 on both: the release both indexes have; 2.10 only on cu130.
  EXPECT_EQ(recipe.environment().torch().at("2.9"), "2.9.0");
  EXPECT_EQ(recipe.environment().torch().at("2.10"), "2.10.0");
  ASSERT_EQ(m.exclude_size(), 1);
  EXPECT_EQ(m.exclude(0).match().at("torch"), "2.10");
  EXPECT_EQ(m.exclude(0).match().at("cuda"), "12.8");

  farm::v1::Recipe pre;
  pre.mutable_matrix()->mutable_torch_follow()->set_spec(">=2.11.0rc1");
  Status none = ApplyTorchFollow({"13.0"}, releases, &pre);
  EXPECT_EQ(none.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(none.message(),
            "no torch release on cu130 matches \">=2.11.0rc1\" (pre-releases left out)");
  pre.mutable_matrix()->mutable_torch_follow()->set_prereleases(true);
  ASSERT_OK(ApplyTorchFollow({"13.0"}, releases, &pre));
  EXPECT_EQ(pre.environment().torch().at("2.11"), "2.11.0rc1");
}

TEST(TorchFollowTest, AtStartEachIndexIsSaidToAnswerOrWhyNot) {
  testing::FakeFetcher fetcher;
  const std::string sha(64, 'a');
  fetcher.Serve(
      "http://127.0.0.1:8000/simple/torch/",
      "<a href=\"../../torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=" + sha +
          "\">torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl</a>\n"
          "<a href=\"../../torch-2.10.0-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=" +
          sha + "\">torch-2.10.0-cp311-cp311-manylinux_2_28_x86_64.whl</a>\n",
      "text/html");
  IndexCheck good = CheckUpstreamIndex(fetcher, "cu128", "http://127.0.0.1:8000/simple/");
  EXPECT_TRUE(good.ok);
  EXPECT_EQ(good.line,
            "upstream index cu128 (http://127.0.0.1:8000/simple/): answers, torch 2.8.0, 2.10.0");
  // The folder of wheels itself, not its simple/: no torch page there.
  IndexCheck wrong = CheckUpstreamIndex(fetcher, "cu128", "http://127.0.0.1:8000/");
  EXPECT_FALSE(wrong.ok);
  EXPECT_NE(wrong.line.find("has no torch page"), std::string::npos) << wrong.line;
  EXPECT_NE(wrong.line.find("is it the index's root"), std::string::npos) << wrong.line;
  fetcher.Fail("http://127.0.0.1:9/simple/torch/", Status::Unavailable("connection refused"));
  IndexCheck down = CheckUpstreamIndex(fetcher, "cu130", "http://127.0.0.1:9/simple/");
  EXPECT_FALSE(down.ok);
  EXPECT_NE(down.line.find("cannot be read now: connection refused"), std::string::npos)
      << down.line;
}

// Scripted upstream: each Poll answers the next result (or the last one again).
class ScriptedPoller final : public UpstreamPoller {
 public:
  Result<PollResult> Poll(const farm::v1::UpstreamWatch&, const WatchTarget&,
                          const WatchState&) override {
    ++polls;
    if (fail) return Status::Unavailable("index down");
    return result;
  }
  PollResult result;
  bool fail = false;
  int polls = 0;
};

class WatchRunnerTest : public RunnerFixture {
 protected:
  void SetUp() override {
    clock_.Set(1'800'000'000'000);
    Reopen();
  }
  std::unique_ptr<ScheduleRunner> MakeRunner() override {
    return std::make_unique<ScheduleRunner>(store_.get(), &clock_, nullptr, &submitter_,
                                            RunnerOptions{}, &poller_);
  }
  int64_t AddWatch() {
    farm::v1::SubmitBuildRequest req;
    req.set_recipe_yaml(
        "name: demo\nbuild: make\nsource: {git: {url: 'https://x/demo.git', commit: '" +
        std::string(40, 'a') + "'}}\nmatrix: {cuda: ['13.0']}\n");
    farm::v1::UpstreamWatch w;
    w.mutable_torch()->set_spec(">=2.9");
    w.set_poll_seconds(60);
    store::ScheduleRow row{.name = "demo",
                           .recipe_name = "demo",
                           .request = req.SerializeAsString(),
                           .next_fire_ms = clock_.NowUnixMs(),
                           .created_by = "test",
                           .created_ms = clock_.NowUnixMs(),
                           .watch = w.SerializeAsString()};
    EXPECT_OK(store_->InsertSchedule(&row));
    return row.id;
  }
  void Step(int64_t ms) {
    clock_.Advance(ms);
    ASSERT_OK(runner_->Tick().status());
  }

  ScriptedPoller poller_;
};

TEST_F(WatchRunnerTest, FiresOncePerChangeAcrossRestarts) {
  int64_t id = AddWatch();
  poller_.result.items = {{.key = "torch cu130 2.9.0", .label = "torch 2.9.0 (cu130)"}};
  Step(0);
  ASSERT_EQ(Runs(id).size(), 1u);  // the baseline builds nothing
  EXPECT_EQ(Runs(id)[0].outcome, farm::v1::RUN_SKIPPED_UNCHANGED);
  EXPECT_TRUE(submitter_.requests.empty());
  Step(30'000);  // not due yet
  EXPECT_EQ(poller_.polls, 1);
  Step(30'000);  // due, nothing new: no run recorded
  EXPECT_EQ(poller_.polls, 2);
  EXPECT_EQ(Runs(id).size(), 1u);

  poller_.result.items.push_back(
      {.key = "torch cu130 2.10.0", .label = "torch 2.10.0 (cu130)", .upstream_ms = 1234});
  Step(60'000);
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_SUBMITTED);
  EXPECT_EQ(runs[0].trigger, farm::v1::TRIGGER_WATCH);
  EXPECT_EQ(runs[0].upstream_ms, 1234);
  EXPECT_NE(runs[0].detail.find("torch 2.10.0 (cu130)"), std::string::npos) << runs[0].detail;
  EXPECT_EQ(submitter_.requests.size(), 1u);

  Reopen();  // farmd restarts: the change was stored with its run
  Step(60'000);
  Step(60'000);
  EXPECT_EQ(Runs(id).size(), 2u);
  EXPECT_EQ(submitter_.requests.size(), 1u);
}

TEST_F(WatchRunnerTest, AReleaseWithoutAnUploadTimeSaysItsTimeIsTheFirstSighting) {
  int64_t id = AddWatch();
  poller_.result.items = {{.key = "torch cu130 2.9.0", .label = "torch 2.9.0 (cu130)"}};
  Step(0);
  poller_.result.items.push_back({.key = "torch cu130 2.10.0", .label = "torch 2.10.0 (cu130)"});
  Step(60'000);
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].upstream_ms, clock_.NowUnixMs());
  EXPECT_NE(runs[0].detail.find("the upstream gives no upload time: its time is this poll's, "
                                "when the watch first saw it"),
            std::string::npos)
      << runs[0].detail;
}

TEST_F(WatchRunnerTest, AnUpdatedScheduleKeepsWhatItsWatchSawAndBuildsTheNewRecipe) {
  int64_t id = AddWatch();
  poller_.result.items = {{.key = "torch cu130 2.9.0", .label = "torch 2.9.0 (cu130)"}};
  Step(0);  // the baseline: 2.9.0 is seen
  auto row = store_->GetSchedule(id);
  ASSERT_OK(row.status());
  farm::v1::SubmitBuildRequest changed;
  changed.set_recipe_yaml(
      "name: demo\nbuild: make all\nsource: {git: {url: 'https://x/demo.git', commit: '" +
      std::string(40, 'a') + "'}}\nmatrix: {cuda: ['13.0']}\n");
  WatchSettings watches{.upstreams = {.indexes = {{"cu130", "http://127.0.0.1:9/whl/cu130/"}}}};
  auto updated = UpdatedScheduleRow(*row, changed, clock_.NowUnixMs(), watches);
  ASSERT_OK(updated.status());
  EXPECT_EQ(updated->watch_state, row->watch_state);
  EXPECT_EQ(updated->next_fire_ms, row->next_fire_ms);
  ASSERT_OK(store_->SetScheduleRequest(id, updated->request, updated->source_sha256));
  Step(60'000);  // 2.9.0 stays seen: nothing is built (a new schedule would take it as seen
                 // too, and miss nothing only by luck)
  EXPECT_TRUE(submitter_.requests.empty());
  poller_.result.items.push_back({.key = "torch cu130 2.10.0", .label = "torch 2.10.0 (cu130)"});
  Step(60'000);
  ASSERT_EQ(submitter_.requests.size(), 1u);
  EXPECT_NE(submitter_.requests[0].recipe_yaml().find("build: make all"), std::string::npos);
  // A schedule builds one recipe: another name is another schedule.
  changed.set_recipe_yaml(
      "name: other\nbuild: make\nsource: {git: {url: 'https://x/demo.git', "
      "commit: '" +
      std::string(40, 'a') + "'}}\nmatrix: {cuda: ['13.0']}\n");
  EXPECT_EQ(UpdatedScheduleRow(*row, changed, clock_.NowUnixMs(), watches).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(WatchRunnerTest, AFailingUpstreamIsRecordedOnceAndBackedOff) {
  int64_t id = AddWatch();
  Step(0);
  poller_.fail = true;
  Step(60'000);
  Step(120'000);  // second failure: backed off to 2 periods, recorded no new run
  Step(60'000);   // inside the 4-period backoff: not polled
  EXPECT_EQ(poller_.polls, 3);
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_FAILED);
  EXPECT_NE(runs[0].detail.find("index down"), std::string::npos);
  auto row = store_->GetSchedule(id);
  ASSERT_OK(row.status());
  EXPECT_EQ(WatchState::Parse(row->watch_state).failures, 2);
  poller_.fail = false;
  Step(4 * 60'000);
  EXPECT_EQ(WatchState::Parse(store_->GetSchedule(id)->watch_state).failures, 0);
}

TEST_F(WatchRunnerTest, ARefusedSubmitKeepsTheChangeUnseenAndBacksOff) {
  int64_t id = AddWatch();
  Step(0);
  poller_.result.items = {{.key = "k1", .label = "one"}};
  submitter_.refuse = Status::ResourceExhausted("over the quota");
  Step(60'000);
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_FAILED);
  EXPECT_NE(runs[0].detail.find("over the quota"), std::string::npos) << runs[0].detail;
  auto row = store_->GetSchedule(id);
  ASSERT_OK(row.status());
  EXPECT_EQ(WatchState::Parse(row->watch_state).failures, 1);
  EXPECT_FALSE(WatchState::Parse(row->watch_state).seen.count("k1"));
  EXPECT_EQ(row->next_fire_ms, clock_.NowUnixMs() + 120'000);  // backed off
  submitter_.refuse = Status::Ok();
  Step(120'000);
  EXPECT_EQ(submitter_.requests.size(), 1u);
  EXPECT_EQ(Runs(id)[0].outcome, farm::v1::RUN_SUBMITTED);
}

TEST_F(WatchRunnerTest, AChangeNotBuiltBecauseTheLastBuildRunsFiresLater) {
  int64_t id = AddWatch();
  Step(0);
  poller_.result.items = {{.key = "k1", .label = "one"}};
  Step(60'000);
  ASSERT_EQ(submitter_.requests.size(), 1u);
  poller_.result.items.push_back({.key = "k2", .label = "two"});
  Step(60'000);  // build 1 still queued: skipped, k2 stays unseen
  EXPECT_EQ(Runs(id)[0].outcome, farm::v1::RUN_SKIPPED_RUNNING);
  EXPECT_EQ(submitter_.requests.size(), 1u);
  // Build 1 ends; the next poll fires k2.
  for (int i = 0; i < 3; ++i) {
    auto job = store_->AcquireJob("w1", clock_.NowUnixMs(), 60000, nullptr);
    ASSERT_OK(job.status());
    if (!job.value()) break;
    store::CompletionReport r{.job_id = job.value()->id,
                              .attempt = job.value()->attempt,
                              .worker_id = "w1",
                              .cause = 1,
                              .exit_code = 0};
    ASSERT_OK(store_->CompleteAttempt(r, clock_.NowUnixMs()).status());
  }
  Step(60'000);
  EXPECT_EQ(submitter_.requests.size(), 2u);
  EXPECT_NE(Runs(id)[0].detail.find("two"), std::string::npos);
}

// A prover that answers as told, and counts what it was asked.
class ScriptedProver final : public TorchProver {
 public:
  Result<Outcome> ProveNewTorches(const farm::v1::SubmitBuildRequest&,
                                  const std::vector<WatchItem>& torches) override {
    asked.push_back(torches.size());
    if (fail) return Status::Unavailable("index down while locking");
    return outcome;
  }
  Outcome outcome;
  bool fail = false;
  std::vector<size_t> asked;
};

class ProvingWatchTest : public WatchRunnerTest {
 protected:
  std::unique_ptr<ScheduleRunner> MakeRunner() override {
    auto runner = WatchRunnerTest::MakeRunner();
    runner->SetTorchProver(&prover_);
    return runner;
  }
  ScriptedProver prover_;
};

TEST_F(ProvingWatchTest, ReleasesTheWheelsServeAreProvenNotBuiltOnce) {
  int64_t id = AddWatch();
  poller_.result.items = {{.key = "torch cu130 2.9.0", .label = "torch 2.9.0 (cu130)"}};
  Step(0);
  EXPECT_TRUE(prover_.asked.empty());  // the baseline proves nothing
  poller_.result.items.push_back(
      {.key = "torch cu130 2.12.0", .label = "torch 2.12.0 (cu130)", .upstream_ms = 77});
  prover_.outcome = {.job_ids = {41, 42}, .queued = 2, .covers_all = true};
  Step(60'000);
  auto runs = Runs(id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].outcome, farm::v1::RUN_VALIDATION_ONLY);
  EXPECT_EQ(runs[0].build_id, 0);
  EXPECT_EQ(runs[0].upstream_ms, 77);
  EXPECT_NE(runs[0].detail.find("2 validation-only job(s) (41, 42), no build"), std::string::npos)
      << runs[0].detail;
  EXPECT_TRUE(submitter_.requests.empty());
  EXPECT_EQ(prover_.asked, (std::vector<size_t>{1}));
  Reopen();  // seen with its run: never again
  Step(60'000);
  EXPECT_EQ(Runs(id).size(), 2u);
  EXPECT_EQ(prover_.asked.size(), 1u);
}

TEST_F(ProvingWatchTest, AFailedProofKeepsTheReleaseUnseenAndAReleaseWithoutWheelsBuilds) {
  int64_t id = AddWatch();
  poller_.result.items = {{.key = "torch cu130 2.9.0", .label = "torch 2.9.0 (cu130)"}};
  Step(0);
  poller_.result.items.push_back({.key = "torch cu130 2.12.0", .label = "torch 2.12.0 (cu130)"});
  prover_.fail = true;  // as a farmd killed between queueing and recording would leave it
  Step(60'000);
  EXPECT_EQ(Runs(id).size(), 1u);
  EXPECT_TRUE(submitter_.requests.empty());
  prover_.fail = false;
  prover_.outcome = {.job_ids = {41}, .queued = 0, .covers_all = true};  // queued before
  Step(60'000);
  ASSERT_EQ(Runs(id).size(), 2u);
  EXPECT_EQ(Runs(id)[0].outcome, farm::v1::RUN_VALIDATION_ONLY);

  poller_.result.items.push_back({.key = "torch cu130 2.13.0", .label = "torch 2.13.0 (cu130)"});
  prover_.outcome = {};  // no stable-ABI wheel serves it: the schedule builds
  Step(60'000);
  ASSERT_EQ(Runs(id).size(), 3u);
  EXPECT_EQ(Runs(id)[0].outcome, farm::v1::RUN_SUBMITTED);
  EXPECT_EQ(submitter_.requests.size(), 1u);
}

}  // namespace
}  // namespace farm::cron
