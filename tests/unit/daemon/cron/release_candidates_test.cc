// Release candidates (docs/schedules.md, "Release candidates"): a torch watch that reads
// each variant's pre-release index too, the checks a schedule that follows candidates must
// pass, and a followed torch axis that takes a minor only a pre-release index lists as a
// candidate (the final release on a release index always wins). The whole path, from the
// fake test channel to a labelled wheel kept out of the default views, is
// tests/integration/test_release_day.py.
#include <gtest/gtest.h>

#include "daemon/builds/new_torch.h"
#include "daemon/cron/torch_follow.h"
#include "daemon/cron/upstream_watch.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/test_util.h"

namespace farm::cron {
namespace {

const std::string kSha(64, 'a');

// A PEP 503 torch page listing one cp311 wheel per release.
std::string TorchPage(const std::vector<std::string>& releases, const std::string& variant) {
  std::string html;
  for (const std::string& r : releases) {
    std::string file = "torch-" + r + "+" + variant + "-cp311-cp311-manylinux_2_28_x86_64.whl";
    html += "<a href=\"../" + file + "#sha256=" + kSha + "\">" + file + "</a>\n";
  }
  return html;
}

struct Upstream {
  testing::FakeFetcher fetcher;
  WatchUpstreams indexes{.indexes = {{"cu130", "http://127.0.0.1:1/whl/cu130/"},
                                     {"test-cu130", "http://127.0.0.1:1/whl/test/cu130/"}},
                         .trees = {}};
};

farm::v1::UpstreamWatch CandidateWatch() {
  farm::v1::UpstreamWatch w;
  w.mutable_torch()->set_spec(">=2.11");
  w.mutable_torch()->set_release_candidates(true);
  return w;
}

const WatchTarget kFollowing{.cuda = {"13.0"}, .git_url = "", .follows_torch = true};

TEST(ReleaseCandidateWatchTest, ReadsThePrereleaseIndexBesideTheReleaseOne) {
  Upstream up;
  up.fetcher.Serve("http://127.0.0.1:1/whl/cu130/torch/", TorchPage({"2.11.0"}, "cu130"),
                   "text/html");
  // The test channel carries the final numbers of the coming release, and an rc.
  up.fetcher.Serve("http://127.0.0.1:1/whl/test/cu130/torch/",
                   TorchPage({"2.11.0", "2.12.0", "2.13.0rc1", "2.10.0"}, "cu130"), "text/html");
  UpstreamWatchPoller poller(&up.fetcher, nullptr, up.indexes);
  auto poll = poller.Poll(CandidateWatch(), kFollowing, WatchState());
  ASSERT_OK(poll.status());
  std::vector<std::string> keys, labels;
  for (const WatchItem& item : poll->items) keys.push_back(item.key), labels.push_back(item.label);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"torch cu130 2.11.0", "torch test-cu130 2.11.0",
                                      "torch test-cu130 2.12.0", "torch test-cu130 2.13.0rc1"}));
  EXPECT_EQ(labels[2], "torch 2.12.0 release candidate (test-cu130)");
  EXPECT_EQ(DescribeWatch(CandidateWatch()), "torch >=2.11 (release candidates too), every 600 s");
  // Without the option the pre-release index is never read.
  farm::v1::UpstreamWatch plain = CandidateWatch();
  plain.mutable_torch()->set_release_candidates(false);
  ASSERT_OK(poller.Poll(plain, kFollowing, WatchState()).status());
  EXPECT_EQ(up.fetcher.Count("http://127.0.0.1:1/whl/test/cu130/torch/"), 1);
  // A candidate is built, never proven on the stable-ABI wheels: only the final is.
  std::vector<builds::NewTorch> proven = builds::NewTorchesOf(poll->items);
  ASSERT_EQ(proven.size(), 1u);
  EXPECT_EQ(proven[0].variant, "cu130");
}

TEST(ReleaseCandidateWatchTest, MalformedConfigurationsAreRefusedWithTheReason) {
  Upstream up;
  EXPECT_OK(CheckWatch(CandidateWatch(), kFollowing, up.indexes, 60));
  auto refused = [&](const farm::v1::UpstreamWatch& w, const WatchTarget& t,
                     const WatchUpstreams& u) {
    Status s = CheckWatch(w, t, u, 60);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    return s.message();
  };
  WatchUpstreams no_test{.indexes = {{"cu130", "http://127.0.0.1:1/whl/cu130/"}}, .trees = {}};
  EXPECT_NE(refused(CandidateWatch(), kFollowing, no_test)
                .find("on index test-cu130, which this farmd does not know (--upstream-index "
                      "test-cu130=URL"),
            std::string::npos);
  WatchTarget fixed = kFollowing;
  fixed.follows_torch = false;
  EXPECT_NE(refused(CandidateWatch(), fixed, up.indexes).find("a torch axis that follows"),
            std::string::npos);
  WatchTarget stable = kFollowing;
  stable.stable_abi = true;
  EXPECT_NE(refused(CandidateWatch(), stable, up.indexes).find("stable-ABI"), std::string::npos);
  // A pre-release index named as a release one would build candidates as finals.
  farm::v1::UpstreamWatch as_release;
  as_release.mutable_torch()->set_spec(">=2.11");
  as_release.mutable_torch()->add_variants("test-cu130");
  EXPECT_NE(refused(as_release, kFollowing, up.indexes).find("is a pre-release index"),
            std::string::npos);
}

upstream::ReleaseVersion Parsed(const char* text) { return *upstream::ParseReleaseVersion(text); }

TEST(ReleaseCandidateFollowTest, AMinorOnlyThePrereleaseIndexListsIsACandidate) {
  farm::v1::Recipe recipe;
  recipe.mutable_matrix()->mutable_torch_follow()->set_spec(">=2.10");
  recipe.mutable_matrix()->mutable_torch_follow()->set_newest(1);
  Releases releases{{"cu128", {Parsed("2.10.0"), Parsed("2.11.0")}},
                    {"cu130", {Parsed("2.10.0"), Parsed("2.11.0")}}};
  // The test channel lists the final 2.11.0 again (the release index wins), the coming
  // 2.12.0 for cu130 only, and an rc of 2.13 (taken: a candidate is what was asked for).
  Releases candidates{{"cu128", {Parsed("2.11.0"), Parsed("2.13.0rc1")}},
                      {"cu130", {Parsed("2.11.0"), Parsed("2.12.0"), Parsed("2.13.0rc1")}}};
  ASSERT_OK(ApplyTorchFollow({"12.8", "13.0"}, releases, candidates, &recipe));
  const auto& m = recipe.matrix();
  // newest: 1 counts the finals; candidates come on top.
  EXPECT_EQ(std::vector<std::string>(m.torch().begin(), m.torch().end()),
            (std::vector<std::string>{"2.11", "2.12", "2.13"}));
  const auto& env = recipe.environment();
  EXPECT_EQ(std::vector<std::string>(env.torch_from_test().begin(), env.torch_from_test().end()),
            (std::vector<std::string>{"2.12", "2.13"}));
  EXPECT_EQ(env.torch().at("2.11"), "2.11.0");
  EXPECT_EQ(env.torch().at("2.12"), "2.12.0");
  EXPECT_EQ(env.torch().at("2.13"), "2.13.0rc1");
  ASSERT_EQ(m.exclude_size(), 1);  // 2.12 is on no index of 12.8
  EXPECT_EQ(m.exclude(0).match().at("torch"), "2.12");
  EXPECT_EQ(m.exclude(0).match().at("cuda"), "12.8");

  // The final release of 2.12 appears: it is no candidate any more.
  releases["cu130"].push_back(Parsed("2.12.0"));
  releases["cu128"].push_back(Parsed("2.12.0"));
  ASSERT_OK(ApplyTorchFollow({"12.8", "13.0"}, releases, candidates, &recipe));
  EXPECT_EQ(std::vector<std::string>(env.torch_from_test().begin(), env.torch_from_test().end()),
            std::vector<std::string>{"2.13"});
}

}  // namespace
}  // namespace farm::cron
