// The webhook outbox against a real SQLite store and a scripted HTTP client.
#include <gtest/gtest.h>

#include <deque>

#include "daemon/notify/webhooks.h"
#include "tests/support/sqlite_store_test.h"
#include "tests/support/test_util.h"

namespace farm::notify {
namespace {

// Answers each POST with the next scripted status (200 when the script is empty) and
// records what it was sent.
class ScriptedHttp final : public httpc::HttpClient {
 public:
  Result<httpc::HttpResponse> Send(const httpc::HttpRequest& request) override {
    sent.push_back(request);
    if (statuses.empty()) return httpc::HttpResponse{.status = 200};
    int status = statuses.front();
    statuses.pop_front();
    if (status == 0) return Status::Unavailable("connection refused to " + request.url);
    return httpc::HttpResponse{.status = status};
  }
  std::deque<int> statuses;
  std::vector<httpc::HttpRequest> sent;
};

constexpr char kUrl[] = "https://hooks.example/T1/secret-part";

class NotifierTest : public testing::SqliteStoreTest {
 protected:
  void SetUpOnStore() override {
    outbox_ = store::AsWebhookStore(store_.get());
    ASSERT_NE(outbox_, nullptr);
  }

  std::unique_ptr<Notifier> Make(std::set<coverage::EventKind> kinds) {
    NotifierOptions options{.max_attempts = 3, .backoff_base_ms = 1000};
    return std::make_unique<Notifier>(
        NotifierDeps{store_.get(), outbox_, &clock_, &http_},
        std::vector<WebhookTarget>{{.name = "ops", .url = kUrl, .events = std::move(kinds)}},
        options);
  }

  // A build of one job that ended now: succeeded with a wheel of `validation_state`, or
  // failed (validation_state 0).
  void MakeBuild(const std::string& sha, int validation_state) {
    farm::v1::Recipe recipe;
    recipe.set_name("pkg");
    recipe.set_version("1.0");
    store::BuildRow b{.recipe_name = "pkg",
                      .recipe = recipe.SerializeAsString(),
                      .submitted_by = "t",
                      .created_ms = clock_.NowUnixMs()};
    std::vector<store::JobRow> jobs(1);
    jobs[0].cell = farm::v1::MatrixCell().SerializeAsString();
    ASSERT_OK(store_->CreateBuild(&b, &jobs));
    auto job = store_->AcquireJob("w1", clock_.NowUnixMs(), 60000, nullptr).value();
    ASSERT_TRUE(job.has_value());
    store::CompletionReport report{.job_id = job->id, .attempt = job->attempt, .worker_id = "w1"};
    if (validation_state == 0) {
      report.cause = store::kCauseBuildFailed;
      report.detail = "exit code 3";
    } else {
      ASSERT_OK(store_
                    ->InsertArtifact({.job_id = job->id,
                                      .attempt = job->attempt,
                                      .filename = "pkg-1.0-py3-none-any.whl",
                                      .sha256 = sha,
                                      .size = 1,
                                      .created_ms = clock_.NowUnixMs()})
                    .status());
      farm::v1::ValidationReport v;
      v.set_state(static_cast<farm::v1::ValidationState>(validation_state));
      report.validation = v.SerializeAsString();
      report.validation_state = validation_state;
    }
    ASSERT_OK(store_->CompleteAttempt(report, clock_.NowUnixMs()).status());
  }

  std::vector<store::WebhookDeliveryRow> Rows() {
    return outbox_->ListWebhookDeliveries(100).value();
  }

  store::WebhookStore* outbox_ = nullptr;
  ScriptedHttp http_;
};

TEST_F(NotifierTest, RetriesWithBackoffAndDeliversEachEventOnceAcrossRestarts) {
  auto notifier = Make({coverage::EventKind::kWheelValidated, coverage::EventKind::kBuildFailed});
  ASSERT_EQ(notifier->RunOnce().value(), 0);  // registers the target: history is not sent
  clock_.Advance(1000);
  MakeBuild("aa", store::kValidationPassed);
  MakeBuild("bb", store::kValidationPendingHardware);  // no event
  http_.statuses = {500, 0};
  EXPECT_EQ(notifier->RunOnce().value(), 1);
  ASSERT_EQ(Rows().size(), 1u);
  EXPECT_EQ(Rows()[0].state, "pending");
  EXPECT_EQ(Rows()[0].attempts, 1);
  EXPECT_EQ(Rows()[0].error, "the receiver answered HTTP 500");
  EXPECT_EQ(notifier->RunOnce().value(), 0);  // waits for its backoff
  clock_.Advance(1000);
  EXPECT_EQ(notifier->RunOnce().value(), 1);  // a transport error: the URL is not kept
  EXPECT_EQ(Rows()[0].error.find("secret-part"), std::string::npos) << Rows()[0].error;
  clock_.Advance(2000);  // doubled
  EXPECT_EQ(notifier->RunOnce().value(), 1);
  EXPECT_EQ(Rows()[0].state, "delivered");
  ASSERT_EQ(http_.sent.size(), 3u);
  for (const auto& r : http_.sent) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.url, kUrl);
    EXPECT_EQ(r.headers.Get("Idempotency-Key"), "wheel_validated:aa");
    EXPECT_EQ(r.body, http_.sent[0].body);
  }
  // A restarted farmd finds the same event and sends nothing again.
  notifier = Make({coverage::EventKind::kWheelValidated, coverage::EventKind::kBuildFailed});
  clock_.Advance(60'000);
  EXPECT_EQ(notifier->RunOnce().value(), 0);
  EXPECT_EQ(http_.sent.size(), 3u);
}

TEST_F(NotifierTest, ARowLeftSendingIsSentAgainWithTheSameKey) {
  auto notifier = Make({coverage::EventKind::kBuildFailed});
  ASSERT_OK(notifier->RunOnce().status());
  clock_.Advance(1000);
  MakeBuild("", 0);
  MakeBuild("cc", store::kValidationPassed);  // not a kind this target wants
  // As if farmd died during the POST: the row is "sending".
  ASSERT_OK(outbox_
                ->EnqueueWebhookDeliveries({{.target = "ops",
                                             .event_id = "build_failed:1",
                                             .kind = "build_failed",
                                             .payload = "{}"}},
                                           clock_.NowUnixMs())
                .status());
  store::WebhookDeliveryRow row = Rows()[0];
  row.state = "sending";
  row.attempts = 1;
  ASSERT_OK(outbox_->UpdateWebhookDelivery(row, clock_.NowUnixMs()));
  notifier = Make({coverage::EventKind::kBuildFailed});
  EXPECT_EQ(notifier->RunOnce().value(), 1);
  ASSERT_EQ(Rows().size(), 1u);
  EXPECT_EQ(Rows()[0].state, "delivered");
  EXPECT_EQ(Rows()[0].attempts, 2);
  ASSERT_EQ(http_.sent.size(), 1u);
  EXPECT_EQ(http_.sent[0].headers.Get("Idempotency-Key"), "build_failed:1");
}

TEST_F(NotifierTest, AClientErrorFailsAtOnceAndServerErrorsStopAtMaxAttempts) {
  auto notifier = Make({coverage::EventKind::kWheelValidated, coverage::EventKind::kBuildFailed});
  ASSERT_OK(notifier->RunOnce().status());
  clock_.Advance(1000);
  MakeBuild("aa", store::kValidationPassed);
  MakeBuild("", 0);
  http_.statuses = {404, 503, 503, 503};
  EXPECT_EQ(notifier->RunOnce().value(), 2);
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(10'000);
    ASSERT_OK(notifier->RunOnce().status());
  }
  std::map<std::string, std::string> states;
  for (const auto& r : Rows()) states[r.event_id] = r.state + "/" + std::to_string(r.attempts);
  EXPECT_EQ(states.size(), 2u);
  for (const auto& [id, state] : states) {
    EXPECT_TRUE(state == "failed/1" || state == "failed/3") << id << " " << state;
  }
  EXPECT_EQ(http_.sent.size(), 4u);
}

}  // namespace
}  // namespace farm::notify
