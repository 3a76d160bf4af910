#include "daemon/http/metrics.h"

#include <sstream>

#include "tests/unit/daemon/http/http_fixture.h"

namespace farm::http::testing {
namespace {

class MetricsTest : public HttpFixture {};

// The value of the sample line starting with `series ` ("" when absent).
std::string Sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return line.substr(series.size() + 1);
  }
  return "";
}

TEST_F(MetricsTest, CountsJobsWorkersAndHistograms) {
  auto ids = AddBuild(4);
  clock_.Advance(10'000);  // every job waited 10 s
  Start(ids[0]);
  Start(ids[1]);
  clock_.Advance(90'000);  // ran 90 s
  Finish(ids[0]);
  Finish(ids[1], store::kCauseBuildFailed);
  Router r = MakeRouter();
  Response res = r.Handle(MakeRequest("GET", "/metrics"));
  ASSERT_EQ(res.status, 200);
  EXPECT_EQ(res.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const std::string& m = res.body;
  EXPECT_EQ(Sample(m, "farm_jobs{state=\"pending\"}"), "2");
  EXPECT_EQ(Sample(m, "farm_jobs{state=\"succeeded\"}"), "1");
  EXPECT_EQ(Sample(m, "farm_jobs{state=\"failed\"}"), "1");
  EXPECT_EQ(Sample(m, "farm_workers{state=\"idle\"}"), "0");
  EXPECT_EQ(Sample(m, "farm_job_queue_wait_seconds_bucket{le=\"5\"}"), "0");
  EXPECT_EQ(Sample(m, "farm_job_queue_wait_seconds_bucket{le=\"15\"}"), "2");
  EXPECT_EQ(Sample(m, "farm_job_queue_wait_seconds_count"), "2");
  EXPECT_EQ(Sample(m, "farm_job_queue_wait_seconds_sum"), "20");
  EXPECT_EQ(Sample(m, "farm_job_build_duration_seconds_bucket{le=\"60\"}"), "0");
  EXPECT_EQ(Sample(m, "farm_job_build_duration_seconds_bucket{le=\"120\"}"), "2");
  EXPECT_EQ(Sample(m, "farm_job_build_duration_seconds_bucket{le=\"+Inf\"}"), "2");
  EXPECT_EQ(Sample(m, "farm_publish_failures_total"), "0");
  EXPECT_NE(m.find("# TYPE farm_job_build_duration_seconds histogram"), std::string::npos);
}

}  // namespace
}  // namespace farm::http::testing
