#include "cli/format.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace farm::cli {
namespace {

farm::v1::Job RunningJob(int64_t done, int64_t total, int64_t rss) {
  farm::v1::Job j;
  j.set_id(7);
  j.set_state(farm::v1::JOB_RUNNING);
  j.set_attempt(2);
  j.add_attempts()->set_number(1);  // an earlier attempt's figures are not shown
  j.mutable_attempts(0)->set_units_done(99);
  auto* a = j.add_attempts();
  a->set_number(2);
  a->set_units_done(done);
  a->set_units_total(total);
  a->set_peak_rss_bytes(rss);
  return j;
}

TEST(FormatTest, ProgressOfTheRunningAttempt) {
  EXPECT_EQ(FormatProgress(RunningJob(12, 40, int64_t{1536} << 20)),
            "12/40 units (30%), peak RSS 1.5 GiB");
  EXPECT_EQ(FormatProgress(RunningJob(7, 0, 0)), "7 compiles done");
  EXPECT_EQ(FormatProgress(RunningJob(1, 0, 3 << 20)), "1 compile done, peak RSS 3.0 MiB");
  EXPECT_EQ(FormatProgress(RunningJob(0, 0, 0)), "");
  farm::v1::Job done = RunningJob(40, 40, 1);
  done.set_state(farm::v1::JOB_SUCCEEDED);
  EXPECT_EQ(FormatProgress(done), "");
  EXPECT_NE(FormatJob(RunningJob(3, 4, 0)).find("    progress: 3/4 units (75%)\n"),
            std::string::npos);
}

TEST(FormatTest, AJobAnsweredFromTheStoreNamesTheJobWhoseWheelsItGot) {
  farm::v1::Job j;
  j.set_id(9);
  j.set_state(farm::v1::JOB_SUCCEEDED);
  EXPECT_EQ(FormatJob(j).find("answered from the store"), std::string::npos);
  j.set_reused_from(4);
  EXPECT_NE(FormatJob(j).find("    answered from the store: wheels of job 4\n"), std::string::npos);
}

TEST(FormatTest, ABuildOfAFollowingRecipeSaysWhichReleasesItResolved) {
  farm::v1::Build b;
  b.set_id(4);
  EXPECT_EQ(FormatBuild(b).find("resolved to"), std::string::npos);
  farm::v1::Recipe* r = b.mutable_recipe();
  r->mutable_matrix()->mutable_torch_follow()->set_spec(">=2.8");
  for (const char* minor : {"2.10", "2.8"}) r->mutable_matrix()->add_torch(minor);
  (*r->mutable_environment()->mutable_torch())["2.8"] = "2.8.0";
  (*r->mutable_environment()->mutable_torch())["2.10"] = "2.10.1";
  std::string text = FormatBuild(b);
  EXPECT_NE(text.find("  torch \">=2.8\" resolved to 2.8.0, 2.10.1 (what the indexes had when "
                      "it was submitted)\n"),
            std::string::npos)
      << text;
}

TEST(FormatTest, ACancelledJobSaysOnceWhoCancelledIt) {
  farm::v1::Job j;
  j.set_state(farm::v1::JOB_CANCELLED);
  j.set_cancelled_by("alice");
  j.set_error("cancelled by alice");
  std::string text = FormatJob(j);
  EXPECT_NE(text.find("error: cancelled by alice"), std::string::npos) << text;
  EXPECT_EQ(text.find("cancelled by alice", text.find("cancelled by alice") + 1), std::string::npos)
      << text;
  j.set_error("the build timed out");  // another error: who cancelled it is said apart
  EXPECT_NE(FormatJob(j).find("    cancelled by alice\n"), std::string::npos);
}

TEST(FormatTest, AnAttemptWhereNoCommandExitedShowsNoExitCode) {
  farm::v1::Job j;
  j.set_state(farm::v1::JOB_FAILED);
  auto* a = j.add_attempts();
  a->set_number(1);
  a->set_worker_name("prov-1");
  a->set_cause(farm::v1::CAUSE_BUILD_FAILED);
  a->set_exit_code(-1);
  a->set_detail("provisioning failed (invalid-request): the pins are not a lock");
  std::string text = FormatJob(j);
  EXPECT_EQ(text.find("(exit -1)"), std::string::npos) << text;
  EXPECT_NE(text.find("build_failed - provisioning failed (invalid-request)"), std::string::npos)
      << text;
  a->set_exit_code(2);  // the build command's own exit
  EXPECT_NE(FormatJob(j).find("build_failed (exit 2) - provisioning"), std::string::npos);
}

TEST(FormatTest, WhyAPendingJobWaits) {
  farm::v1::Job j;
  j.set_state(farm::v1::JOB_PENDING);
  EXPECT_EQ(FormatWaiting(j), "");
  j.set_waiting_reason("no worker has CUDA 12.8: provision one or drop the cell");
  j.set_unplaceable(true);
  (*j.mutable_unplaceable_reasons())["gpu-1 (w-1)"] = "no CUDA toolkit 12.8 (has 13.0)";
  EXPECT_EQ(FormatWaiting(j),
            "no worker has CUDA 12.8: provision one or drop the cell (no worker can take it)\n"
            "  gpu-1 (w-1): no CUDA toolkit 12.8 (has 13.0)");
  std::string text = FormatJob(j);
  EXPECT_NE(text.find("    waiting: no worker has CUDA 12.8"), std::string::npos) << text;
  EXPECT_NE(text.find("    cannot run on gpu-1 (w-1): no CUDA toolkit 12.8"), std::string::npos);
  j.set_state(farm::v1::JOB_RUNNING);
  EXPECT_EQ(FormatWaiting(j), "");
}

TEST(FormatTest, WorkersHaveAHeaderAndSayWhatTheyProvision) {
  farm::v1::WorkerInfo w;
  w.set_id("w-1");
  w.set_name("prov-1");
  w.set_state("idle");
  const std::string header = WorkersHeader();  // one string: begin and end of the same
  EXPECT_EQ(header.substr(0, 15), "ID\tNAME\tSTATE\tP");
  size_t columns = std::count(header.begin(), header.end(), '\t');
  std::string plain = FormatWorker(w);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), '\t'), columns) << plain;
  EXPECT_NE(plain.find("\tdoes not provision\t"), std::string::npos) << plain;
  auto* p = w.mutable_capabilities()->mutable_provisioning();
  p->set_enabled(true);
  p->set_toolkits_through_farm(true);
  std::string text = FormatWorker(w);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\t'), columns) << text;
  EXPECT_NE(text.find("provisions (fetches no CUDA: farmd serves no redist tree)"),
            std::string::npos)
      << text;
  p->set_fetches_toolkits(true);
  EXPECT_NE(FormatWorker(w).find("provisions (fetches CUDA)"), std::string::npos);
}

TEST(FormatTest, WorkersAreNamedAndTheirIdsStandInOnlyWithoutAName) {
  farm::v1::Job j = RunningJob(1, 2, 0);
  j.set_worker_id("w-1f2e"), j.set_worker_name("rtx-1");
  j.mutable_attempts(1)->set_worker_id("w-1f2e"), j.mutable_attempts(1)->set_worker_name("rtx-1");
  j.mutable_attempts(0)->set_worker_id("w-gone");  // a worker no longer registered
  std::string text = FormatJob(j);
  EXPECT_NE(text.find("running  on rtx-1  attempt 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    attempt 2 on rtx-1: running"), std::string::npos) << text;
  EXPECT_NE(text.find("    attempt 1 on w-gone: "), std::string::npos) << text;
  EXPECT_EQ(WorkerLabel("", "w-gone"), "w-gone");
}

TEST(FormatTest, AValidationJobNamesTheJobItValidates) {
  farm::v1::Build b;
  b.set_id(3), b.set_recipe_name("attn-example"), b.set_state(farm::v1::BUILD_SUCCEEDED);
  auto* built = b.add_jobs();
  built->set_id(11), built->set_state(farm::v1::JOB_SUCCEEDED);
  EXPECT_EQ(ValidationLabel(*built), "");
  EXPECT_EQ(FormatBuildList({b}, 0).find("validation"), std::string::npos)
      << FormatBuildList({b}, 0);
  auto* v = b.add_jobs();
  v->set_id(12), v->set_kind(farm::v1::JOB_VALIDATE), v->set_state(farm::v1::JOB_PENDING);
  v->set_target_job_id(11), v->set_target_attempt(2);
  v->set_waiting_reason("no worker with a GPU of cc 12.0 can validate it");
  EXPECT_EQ(ValidationLabel(*v), "validation of job 11 attempt 2");
  EXPECT_NE(FormatBuildList({b}, 0).find("  2 jobs (1 validation): 1 ok, 1 queued  "),
            std::string::npos)
      << FormatBuildList({b}, 0);
  std::string shown = FormatBuild(b);
  EXPECT_NE(shown.find("  job 12  (default)  pending  validation of job 11 attempt 2\n"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("    waiting: no worker with a GPU of cc 12.0 can validate it"),
            std::string::npos)
      << shown;
}

TEST(FormatTest, TheBuildListHasAHeaderCellsDurationsAndSaysBlocked) {
  farm::v1::Build b;
  b.set_id(7), b.set_recipe_name("attn-example"), b.set_state(farm::v1::BUILD_RUNNING);
  b.set_created_at("2025-11-26T16:00:00.000Z"), b.set_owner("alice");
  for (const char* cuda : {"13.0", "12.8"}) {
    auto* j = b.add_jobs();
    j->mutable_cell()->set_python("3.11"), j->mutable_cell()->set_cuda(cuda);
    j->mutable_cell()->set_arch_list("9.0");
    j->set_state(farm::v1::JOB_FAILED);
  }
  b.mutable_jobs(1)->set_state(farm::v1::JOB_PENDING);
  b.mutable_jobs(1)->set_unplaceable(true);
  std::string text = FormatBuildList({b}, 1764172923000);  // 2025-11-26T16:02:03Z
  EXPECT_EQ(
      text,
      "BUILD  RECIPE        OWNER  STATE    JOBS                           CELLS                "
      "       CREATED               DURATION\n"
      "7      attn-example  alice  blocked  2 jobs: 1 no worker, 1 failed  py3.11 cuda13.0,12.8 "
      "[9.0]  2025-11-26T16:00:00Z  for 2m 3s\n");
  b.mutable_jobs(1)->set_unplaceable(false);
  b.set_state(farm::v1::BUILD_FAILED), b.set_finished_at("2025-11-26T16:00:45.500Z");
  text = FormatBuildList({b}, 0);
  EXPECT_NE(text.find("  failed  2 jobs: 1 queued, 1 failed  "), std::string::npos) << text;
  EXPECT_NE(text.find("  45s\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace farm::cli
