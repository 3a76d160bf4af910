// Every gRPC method of farmd (FarmService and WorkerService), called over a real channel
// against FarmServer on 127.0.0.1:0 with a real SQLite store, with odd but legal data:
// builds with rejected cells, empty lists, unicode text, extreme sizes and ids, calls on
// jobs a worker does not hold. Each answer has the documented status code (never INTERNAL
// or UNKNOWN) and farmd keeps serving afterwards. The sanitizer build runs it too.
#include "daemon/api/auth.h"
#include "farm/v1/rpc_status.pb.h"
#include "tests/unit/daemon/api/rpc_fixture.h"

namespace farm::api {
namespace {

class OddDataRpcTest : public RpcTest {
 protected:
  // Streams lines 1 to 10,000 of job `job_id`'s first attempt in chunks of 1,000: odd text
  // on both streams, every thousandth line 64 KiB long.
  void UploadTenThousandLines(const std::string& token, int64_t job_id) {
    farm::v1::UploadLogResponse acked;
    auto ctx = Ctx(token);
    auto writer = worker_->UploadLog(ctx.get(), &acked);
    for (int chunk_start = 1; chunk_start <= 10'000; chunk_start += 1000) {
      farm::v1::LogChunk chunk;
      chunk.set_job_id(job_id);
      chunk.set_attempt(1);
      for (int seq = chunk_start; seq < chunk_start + 1000; ++seq) {
        auto* line = chunk.add_lines();
        line->set_seq(seq);
        line->set_stream(seq % 2 ? farm::v1::STDOUT : farm::v1::STDERR);
        line->set_text(seq % 1000 == 0 ? std::string(64 * 1024, 'x')
                                       : kUnicode + std::to_string(seq));
      }
      ASSERT_TRUE(writer->Write(chunk));
    }
    writer->WritesDone();
    ASSERT_TRUE(writer->Finish().ok());
    EXPECT_EQ(acked.acked_seq(), 10'000);
  }
  // Lines for a job the worker does not hold are refused; an empty stream is fine.
  void ExpectLogUploadsRefused(const std::string& token, int64_t job_id) {
    farm::v1::UploadLogResponse resp;
    auto ctx = Ctx(token);
    auto writer = worker_->UploadLog(ctx.get(), &resp);
    farm::v1::LogChunk chunk;
    chunk.set_job_id(job_id);
    chunk.set_attempt(1);
    auto* line = chunk.add_lines();
    line->set_seq(1), line->set_text(kUnicode);
    writer->Write(chunk);
    writer->WritesDone();
    EXPECT_EQ(writer->Finish().error_code(), StatusCode::PERMISSION_DENIED);
    auto ctx2 = Ctx(token);
    auto empty = worker_->UploadLog(ctx2.get(), &resp);
    empty->WritesDone();
    ExpectHandled(empty->Finish(), "UploadLog empty");
  }
  // An artifact for a job the worker does not hold, and a stream without a header.
  void ExpectArtifactUploadsRefused(const std::string& token, int64_t job_id) {
    farm::v1::UploadArtifactResponse resp;
    auto ctx = Ctx(token);
    auto writer = worker_->UploadArtifact(ctx.get(), &resp);
    farm::v1::ArtifactUpload up;
    auto* h = up.mutable_header();
    h->set_job_id(job_id), h->set_attempt(1), h->set_size(0);
    h->set_filename("odd_recipe-0.1.0-cp311-cp311-linux_x86_64.whl");
    writer->Write(up);
    writer->WritesDone();
    auto s = writer->Finish();
    ExpectHandled(s, "UploadArtifact");
    EXPECT_FALSE(s.ok());
    auto ctx2 = Ctx(token);
    auto headless = worker_->UploadArtifact(ctx2.get(), &resp);
    farm::v1::ArtifactUpload data;
    data.set_data(std::string(1000, 'x'));
    headless->Write(data);
    headless->WritesDone();
    EXPECT_EQ(headless->Finish().error_code(), StatusCode::INVALID_ARGUMENT);
  }
};

TEST_F(OddDataRpcTest, BuildsWithRejectedCellsExtremePagesAndUnknownIds) {
  farm::v1::Build build = Submit();
  ASSERT_GT(build.id(), 0);
  EXPECT_EQ(build.jobs_size(), 1);
  ASSERT_EQ(build.rejected_cells_size(), 2);
  EXPECT_NE(build.rejected_cells(0).find("12.0a"), std::string::npos);

  for (int i = 0; i < 3; ++i) {  // a client polling a build with rejected cells
    farm::v1::GetBuildRequest get;
    get.set_build_id(build.id());
    farm::v1::Build got;
    ASSERT_TRUE(farm_->GetBuild(Ctx(admin_).get(), get, &got).ok());
    EXPECT_EQ(got.rejected_cells_size(), 2);
    EXPECT_EQ(got.recipe().env().at("GREETING"), "注意力 🚀");
  }
  for (int64_t id : {int64_t{0}, int64_t{-1}, INT64_MAX}) {
    farm::v1::GetBuildRequest get;
    get.set_build_id(id);
    farm::v1::Build got;
    auto s = farm_->GetBuild(Ctx(admin_).get(), get, &got);
    ExpectHandled(s, "GetBuild " + std::to_string(id));
    EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND) << id;
  }
  for (int size : {0, -1, INT32_MAX}) {
    for (int64_t before : {int64_t{0}, int64_t{-5}, INT64_MAX}) {
      farm::v1::ListBuildsRequest list;
      list.set_page_size(size);
      list.set_before_id(before);
      farm::v1::ListBuildsResponse resp;
      auto s = farm_->ListBuilds(Ctx(admin_).get(), list, &resp);
      ExpectHandled(s, "ListBuilds");
      EXPECT_LE(resp.builds_size(), 1);
    }
  }
  farm::v1::CancelBuildRequest cancel;
  cancel.set_build_id(INT64_MAX);
  farm::v1::Build cancelled;
  EXPECT_EQ(farm_->CancelBuild(Ctx(admin_).get(), cancel, &cancelled).error_code(),
            StatusCode::NOT_FOUND);
  cancel.set_build_id(build.id());
  ASSERT_TRUE(farm_->CancelBuild(Ctx(admin_).get(), cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.state(), farm::v1::BUILD_CANCELLED);

  // Watching an ended build sends it once and ends; an unknown build is NOT_FOUND.
  farm::v1::WatchBuildRequest watch;
  watch.set_build_id(build.id());
  watch.set_include_logs(true);
  auto ctx = Ctx(admin_);
  auto reader = farm_->WatchBuild(ctx.get(), watch);
  farm::v1::BuildEvent ev;
  int events = 0;
  while (events < 100 && reader->Read(&ev)) ++events;
  EXPECT_GE(events, 1);
  ExpectHandled(reader->Finish(), "WatchBuild");
  watch.set_build_id(INT64_MAX);
  auto ctx2 = Ctx(admin_);
  auto missing = farm_->WatchBuild(ctx2.get(), watch);
  while (missing->Read(&ev)) {
  }
  EXPECT_EQ(missing->Finish().error_code(), StatusCode::NOT_FOUND);
}

TEST_F(OddDataRpcTest, EveryAnswerOfFarmdCarriesItsStatusInTheDetails) {
  // farmctl tells farmd's own UNAVAILABLE from a farmd it cannot reach by these details
  // (cli/client.h FromGrpc): gRPC's failures to connect have none.
  farm::v1::GetBuildRequest get;
  get.set_build_id(INT64_MAX);
  farm::v1::Build got;
  grpc::Status s = farm_->GetBuild(Ctx(admin_).get(), get, &got);
  ASSERT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  farm::v1::RpcStatus details;
  ASSERT_TRUE(details.ParseFromString(s.error_details()));
  EXPECT_EQ(details.code(), StatusCode::NOT_FOUND);
  EXPECT_EQ(details.message(), s.error_message());
  EXPECT_EQ(details.details_size(), 0);
  EXPECT_EQ(ToGrpc(Status::Unavailable("cannot read torch's releases")).error_details(), [] {
    farm::v1::RpcStatus d;
    d.set_code(StatusCode::UNAVAILABLE);
    d.set_message("cannot read torch's releases");
    return d.SerializeAsString();
  }());
}

TEST_F(OddDataRpcTest, AJobNoneOfManyWorkersCanTakeNamesEachReasonOnce) {
  // 45 workers that lack everything: one entry with the count, not 45 lines per job.
  for (int i = 0; i < 45; ++i) RegisterWorker();
  farm::v1::Build build = Submit();
  ASSERT_GT(build.jobs_size(), 0);
  for (const auto& job : build.jobs()) {
    ASSERT_EQ(job.unplaceable_reasons_size(), 1) << job.DebugString();
    const auto& [worker, why] = *job.unplaceable_reasons().begin();
    EXPECT_NE(worker.find(" and 44 other workers"), std::string::npos) << worker;
    EXPECT_FALSE(why.empty());
    EXPECT_TRUE(job.unplaceable());
  }
  // One that can build it: the others still share one entry, and it is no longer blocked.
  RegisterBuilder();
  farm::v1::GetBuildRequest get;
  get.set_build_id(build.id());
  farm::v1::Build again;
  ASSERT_TRUE(farm_->GetBuild(Ctx(admin_).get(), get, &again).ok());
  int pending = 0;
  for (const auto& job : again.jobs()) {
    if (job.state() != farm::v1::JOB_PENDING) continue;
    ++pending;
    EXPECT_EQ(job.unplaceable_reasons_size(), 1) << job.DebugString();
    EXPECT_FALSE(job.unplaceable());
  }
  EXPECT_GT(pending, 0) << "the builder polls for nothing, so the jobs stay pending";
}

TEST_F(OddDataRpcTest, JobsLogsRetriesAndArtifactsWithOddIds) {
  farm::v1::Build build = Submit();
  ASSERT_EQ(build.jobs_size(), 1);
  int64_t job_id = build.jobs(0).id();
  farm::v1::GetJobRequest get;
  farm::v1::Job job;
  for (int64_t id : {int64_t{0}, INT64_MAX}) {
    get.set_job_id(id);
    EXPECT_EQ(farm_->GetJob(Ctx(admin_).get(), get, &job).error_code(), StatusCode::NOT_FOUND);
  }
  get.set_job_id(job_id);
  ASSERT_TRUE(farm_->GetJob(Ctx(admin_).get(), get, &job).ok());

  farm::v1::RetryJobRequest retry;
  retry.set_job_id(job_id);  // pending: nothing to retry
  EXPECT_EQ(farm_->RetryJob(Ctx(admin_).get(), retry, &job).error_code(),
            StatusCode::FAILED_PRECONDITION);
  retry.set_job_id(INT64_MAX);
  EXPECT_EQ(farm_->RetryJob(Ctx(admin_).get(), retry, &job).error_code(), StatusCode::NOT_FOUND);

  for (int limit : {0, -1, INT32_MAX}) {
    for (int tail : {0, -1, INT32_MAX}) {
      farm::v1::GetJobLogRequest log;
      log.set_job_id(job_id);
      log.set_limit(limit);
      log.set_tail(tail);
      log.set_after_seq(INT64_MIN);
      log.set_attempt(INT32_MAX);
      farm::v1::GetJobLogResponse resp;
      auto s = farm_->GetJobLog(Ctx(admin_).get(), log, &resp);
      ExpectHandled(s, "GetJobLog");
      EXPECT_EQ(resp.lines_size(), 0);
    }
  }
  farm::v1::GetArtifactRequest art;
  for (int64_t id : {int64_t{0}, INT64_MAX}) {
    art.set_artifact_id(id);
    auto ctx = Ctx(admin_);
    auto reader = farm_->DownloadArtifact(ctx.get(), art);
    farm::v1::ArtifactChunk chunk;
    while (reader->Read(&chunk)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), StatusCode::NOT_FOUND);
  }
}

TEST_F(OddDataRpcTest, WorkerCallsWithUnicodeNamesAndJobsNotHeld) {
  auto [id, token] = RegisterWorker();
  ASSERT_FALSE(token.empty());
  farm::v1::Build build = Submit();
  int64_t job_id = build.jobs(0).id();

  farm::v1::HeartbeatRequest hb;
  hb.set_worker_id(id);
  auto* running = hb.add_running();  // a job it was never given
  running->set_job_id(INT64_MAX);
  running->set_attempt(INT32_MAX);
  farm::v1::HeartbeatResponse hb_resp;
  ExpectHandled(worker_->Heartbeat(Ctx(token).get(), hb, &hb_resp), "Heartbeat");
  hb.set_worker_id("someone-else");
  EXPECT_EQ(worker_->Heartbeat(Ctx(token).get(), hb, &hb_resp).error_code(),
            StatusCode::PERMISSION_DENIED);

  // No capabilities: the job cannot be placed here, so nothing is leased.
  farm::v1::AcquireJobRequest acquire;
  acquire.set_worker_id(id);
  acquire.set_wait_ms(-5);
  farm::v1::AcquireJobResponse acquired;
  ASSERT_TRUE(worker_->AcquireJob(Ctx(token).get(), acquire, &acquired).ok());
  EXPECT_FALSE(acquired.has_job());

  ExpectLogUploadsRefused(token, job_id);
  ExpectArtifactUploadsRefused(token, job_id);
  farm::v1::CompleteJobRequest complete;
  complete.set_job_id(job_id);
  complete.set_attempt(1);
  complete.set_detail(kUnicode);
  complete.set_peak_rss_bytes(INT64_MAX);
  farm::v1::CompleteJobResponse done;
  EXPECT_EQ(worker_->CompleteJob(Ctx(token).get(), complete, &done).error_code(),
            StatusCode::PERMISSION_DENIED);

  farm::v1::ListWorkersResponse workers;
  ASSERT_TRUE(farm_->ListWorkers(Ctx(admin_).get(), {}, &workers).ok());
  ASSERT_EQ(workers.workers_size(), 1);
  EXPECT_EQ(workers.workers(0).name(), kUnicode);
  farm::v1::DrainWorkerRequest drain;
  drain.set_worker_id(std::string(kUnicode) + " (gone)");  // neither an id nor a name
  farm::v1::WorkerInfo info;
  EXPECT_EQ(farm_->DrainWorker(Ctx(admin_).get(), drain, &info).error_code(),
            StatusCode::NOT_FOUND);
  drain.set_worker_id(kUnicode);  // the name every listing shows works as well as the id
  ASSERT_TRUE(farm_->DrainWorker(Ctx(admin_).get(), drain, &info).ok());
  EXPECT_EQ(info.id(), id);
  drain.set_worker_id(id);
  drain.set_undo(true);
  ASSERT_TRUE(farm_->DrainWorker(Ctx(admin_).get(), drain, &info).ok());
  EXPECT_EQ(info.name(), kUnicode);
}

TEST_F(OddDataRpcTest, CapabilitiesAHeartbeatReportsAreStoredAndPlaceTheWaitingJob) {
  auto [id, token] = RegisterWorker();  // no capabilities: nothing can be placed here
  farm::v1::Build build = Submit();
  farm::v1::AcquireJobRequest acquire;
  acquire.set_worker_id(id);
  acquire.set_wait_ms(-5);
  farm::v1::AcquireJobResponse acquired;
  ASSERT_TRUE(worker_->AcquireJob(Ctx(token).get(), acquire, &acquired).ok());
  EXPECT_FALSE(acquired.has_job());

  // The worker's probe found a toolkit and its environment cache grew: it says so once.
  farm::v1::HeartbeatRequest hb;
  hb.set_worker_id(id);
  auto* caps = hb.mutable_capabilities();
  SetBuilderCapabilities(caps);
  caps->mutable_provisioning()->set_cache_bytes(int64_t{5} << 30);
  farm::v1::HeartbeatResponse hb_resp;
  ASSERT_TRUE(worker_->Heartbeat(Ctx(token).get(), hb, &hb_resp).ok());

  farm::v1::ListWorkersResponse workers;
  ASSERT_TRUE(farm_->ListWorkers(Ctx(admin_).get(), {}, &workers).ok());
  ASSERT_EQ(workers.workers_size(), 1);
  EXPECT_EQ(workers.workers(0).capabilities().provisioning().cache_bytes(), int64_t{5} << 30);
  ASSERT_TRUE(worker_->AcquireJob(Ctx(token).get(), acquire, &acquired).ok());
  ASSERT_TRUE(acquired.has_job());
  EXPECT_EQ(acquired.job().job_id(), build.jobs(0).id());
}

TEST_F(OddDataRpcTest, LeasedJobTakesATenThousandLineUnicodeLogAndEnds) {
  farm::v1::RegisterResponse registered = RegisterBuilder();
  const std::string& token = registered.worker_token();
  farm::v1::Build build = Submit();
  ASSERT_EQ(build.jobs_size(), 1);

  farm::v1::AcquireJobRequest acquire;
  acquire.set_worker_id(registered.worker_id());
  acquire.set_wait_ms(INT32_MAX);  // clamped by farmd; a job is there at once
  farm::v1::AcquireJobResponse acquired;
  ASSERT_TRUE(worker_->AcquireJob(Ctx(token).get(), acquire, &acquired).ok());
  ASSERT_TRUE(acquired.has_job());
  const int64_t job_id = acquired.job().job_id();
  EXPECT_EQ(acquired.job().recipe().env().at("GREETING"), "注意力 🚀");

  ASSERT_NO_FATAL_FAILURE(UploadTenThousandLines(token, job_id));

  farm::v1::GetJobLogRequest tail;
  tail.set_job_id(job_id);
  tail.set_tail(INT32_MAX);
  tail.set_limit(INT32_MAX);
  farm::v1::GetJobLogResponse lines;
  ASSERT_TRUE(farm_->GetJobLog(Ctx(admin_).get(), tail, &lines).ok());
  ASSERT_GT(lines.lines_size(), 0);
  EXPECT_EQ(lines.lines(lines.lines_size() - 1).seq(), 10'000);
  tail.set_tail(3);
  ASSERT_TRUE(farm_->GetJobLog(Ctx(admin_).get(), tail, &lines).ok());
  ASSERT_EQ(lines.lines_size(), 3);
  EXPECT_EQ(lines.lines(0).text(), kUnicode + std::string("9998"));

  farm::v1::CompleteJobRequest complete;
  complete.set_job_id(job_id);
  complete.set_attempt(1);
  complete.set_exit_code(INT32_MIN);
  complete.set_cause(farm::v1::CAUSE_BUILD_FAILED);
  complete.set_detail(kUnicode);
  complete.set_peak_rss_bytes(INT64_MAX);
  complete.set_last_log_seq(10'000);
  farm::v1::CompleteJobResponse done;
  ASSERT_TRUE(worker_->CompleteJob(Ctx(token).get(), complete, &done).ok());
  EXPECT_EQ(done.state(), farm::v1::JOB_FAILED);
  // Reporting the same end again is accepted and changes nothing.
  ASSERT_TRUE(worker_->CompleteJob(Ctx(token).get(), complete, &done).ok());
  farm::v1::GetJobRequest get;
  get.set_job_id(job_id);
  farm::v1::Job job;
  ASSERT_TRUE(farm_->GetJob(Ctx(admin_).get(), get, &job).ok());
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_EQ(job.attempts(0).detail(), kUnicode);
  EXPECT_EQ(job.attempts(0).peak_rss_bytes(), INT64_MAX);
  // Workers are named as every listing names them, in a job and in its build.
  EXPECT_EQ(job.attempts(0).worker_name(), "gpu-host-ünï");
  EXPECT_EQ(job.attempts(0).worker_id(), registered.worker_id());
  farm::v1::GetBuildRequest get_build;
  get_build.set_build_id(job.build_id());
  farm::v1::Build shown;
  ASSERT_TRUE(farm_->GetBuild(Ctx(admin_).get(), get_build, &shown).ok());
  ASSERT_EQ(shown.jobs(0).attempts_size(), 1);
  EXPECT_EQ(shown.jobs(0).attempts(0).worker_name(), "gpu-host-ünï");
  farm::v1::RetryJobRequest retry;
  retry.set_job_id(job_id);
  ASSERT_TRUE(farm_->RetryJob(Ctx(admin_).get(), retry, &job).ok());
  EXPECT_EQ(job.state(), farm::v1::JOB_PENDING);
}

TEST_F(OddDataRpcTest, TokensWithOddNamesRolesAndLifetimes) {
  farm::v1::CreateTokenRequest token;
  token.set_name(kUnicode);
  token.set_role("viewer");
  farm::v1::CreateTokenResponse created;
  ASSERT_TRUE(farm_->CreateToken(Ctx(admin_).get(), token, &created).ok());
  EXPECT_EQ(created.name(), kUnicode);
  token.set_role("emperor");
  EXPECT_EQ(farm_->CreateToken(Ctx(admin_).get(), token, &created).error_code(),
            StatusCode::INVALID_ARGUMENT);
  token.set_role("viewer");
  token.set_ttl_seconds(INT64_MAX);
  EXPECT_EQ(farm_->CreateToken(Ctx(admin_).get(), token, &created).error_code(),
            StatusCode::INVALID_ARGUMENT);
  // Listing never shows a token, revoking one stops it at its next call.
  farm::v1::ListTokensResponse tokens;
  ASSERT_TRUE(farm_->ListTokens(Ctx(admin_).get(), {}, &tokens).ok());
  EXPECT_EQ(tokens.tokens_size(), 3);  // admin, enroll, the viewer
  farm::v1::ListBuildsResponse seen;
  ASSERT_TRUE(farm_->ListBuilds(Ctx(created.token()).get(), {}, &seen).ok());
  farm::v1::RevokeTokenRequest revoke;
  revoke.set_id(created.id());
  farm::v1::TokenInfo revoked;
  ASSERT_TRUE(farm_->RevokeToken(Ctx(admin_).get(), revoke, &revoked).ok());
  EXPECT_FALSE(revoked.revoked_at().empty());
  auto refused = farm_->ListBuilds(Ctx(created.token()).get(), {}, &seen);
  EXPECT_EQ(refused.error_code(), StatusCode::UNAUTHENTICATED);
  EXPECT_NE(refused.error_message().find("revoked"), std::string::npos);
  revoke.set_id("not-hex");
  EXPECT_EQ(farm_->RevokeToken(Ctx(admin_).get(), revoke, &revoked).error_code(),
            StatusCode::INVALID_ARGUMENT);
}

TEST_F(OddDataRpcTest, PublicationsAndHostsWithOddData) {
  farm::v1::Build build = Submit();
  farm::v1::PublishBuildRequest publish;
  publish.set_build_id(build.id());
  publish.set_target("");  // both; the recipe publishes nowhere
  farm::v1::PublishBuildResponse published;
  auto s = farm_->PublishBuild(Ctx(admin_).get(), publish, &published);
  ExpectHandled(s, "PublishBuild");
  EXPECT_EQ(published.publications_size(), 0);
  publish.set_target("ftp");
  EXPECT_EQ(farm_->PublishBuild(Ctx(admin_).get(), publish, &published).error_code(),
            StatusCode::INVALID_ARGUMENT);
  farm::v1::ListPublicationsRequest pubs;
  pubs.set_build_id(INT64_MAX);
  farm::v1::ListPublicationsResponse pubs_resp;
  ExpectHandled(farm_->ListPublications(Ctx(admin_).get(), pubs, &pubs_resp), "ListPublications");
  EXPECT_EQ(pubs_resp.publications_size(), 0);

  // Hosts are not served without a playbooks directory: said so, not a crash.
  farm::v1::AddHostRequest host;
  host.set_name(kUnicode);
  farm::v1::Host added;
  ExpectHandled(farm_->AddHost(Ctx(admin_).get(), host, &added), "AddHost");
  farm::v1::ProvisionHostRequest provision;
  provision.set_name(kUnicode);
  ExpectHandled(farm_->ProvisionHost(Ctx(admin_).get(), provision, &added), "ProvisionHost");
  farm::v1::ListHostsResponse hosts;
  ExpectHandled(farm_->ListHosts(Ctx(admin_).get(), {}, &hosts), "ListHosts");
  EXPECT_EQ(hosts.hosts_size(), 0);

  // Still serving after all of it.
  farm::v1::ListBuildsResponse builds;
  ASSERT_TRUE(farm_->ListBuilds(Ctx(admin_).get(), {}, &builds).ok());
  EXPECT_EQ(builds.builds_size(), 1);
}

TEST_F(OddDataRpcTest, SchedulesWithOddData) {
  farm::v1::CreateScheduleRequest sched;
  sched.set_name(kUnicode);
  sched.mutable_build()->set_recipe_yaml(kRecipe);
  sched.set_cron("@nightly");
  sched.set_time_zone("Asia/Kathmandu");  // UTC+05:45
  farm::v1::Schedule schedule;
  ASSERT_TRUE(farm_->CreateSchedule(Ctx(admin_).get(), sched, &schedule).ok());
  EXPECT_EQ(schedule.name(), kUnicode);
  farm::v1::ListSchedulesRequest list;
  list.set_runs(INT32_MAX);
  farm::v1::ListSchedulesResponse schedules;
  ASSERT_TRUE(farm_->ListSchedules(Ctx(admin_).get(), list, &schedules).ok());
  EXPECT_EQ(schedules.schedules_size(), 1);
  farm::v1::ScheduleRef ref;
  ref.set_schedule_id("99999999999999999999");  // not an id: it overflows
  EXPECT_EQ(farm_->PauseSchedule(Ctx(admin_).get(), ref, &schedule).error_code(),
            StatusCode::INVALID_ARGUMENT);
  ref.set_schedule_id("987654");
  EXPECT_EQ(farm_->PauseSchedule(Ctx(admin_).get(), ref, &schedule).error_code(),
            StatusCode::NOT_FOUND);
  ref.set_schedule_id(schedules.schedules(0).id());
  ASSERT_TRUE(farm_->PauseSchedule(Ctx(admin_).get(), ref, &schedule).ok());
  ASSERT_TRUE(farm_->ResumeSchedule(Ctx(admin_).get(), ref, &schedule).ok());
  // Updating makes the schedule build the changed recipe; its name, cron and id stay.
  farm::v1::UpdateScheduleRequest update;
  update.set_schedule_id(ref.schedule_id());
  std::string changed = kRecipe;
  changed.replace(changed.find("timeout: 60"), 11, "timeout: 77");
  update.mutable_build()->set_recipe_yaml(changed);
  ASSERT_TRUE(farm_->UpdateSchedule(Ctx(admin_).get(), update, &schedule).ok());
  EXPECT_EQ(schedule.id(), ref.schedule_id());
  EXPECT_EQ(schedule.name(), kUnicode);
  EXPECT_EQ(schedule.cron(), "@nightly");
  EXPECT_EQ(schedule.request().recipe_yaml(), changed);
  std::string renamed = changed;
  renamed.replace(renamed.find("odd-recipe"), 10, "new-recipe");
  update.mutable_build()->set_recipe_yaml(renamed);
  EXPECT_EQ(farm_->UpdateSchedule(Ctx(admin_).get(), update, &schedule).error_code(),
            StatusCode::INVALID_ARGUMENT);
  update.mutable_build()->set_recipe_yaml("name: [broken");
  EXPECT_EQ(farm_->UpdateSchedule(Ctx(admin_).get(), update, &schedule).error_code(),
            StatusCode::INVALID_ARGUMENT);
  update.set_schedule_id("987654");
  update.mutable_build()->set_recipe_yaml(changed);
  EXPECT_EQ(farm_->UpdateSchedule(Ctx(admin_).get(), update, &schedule).error_code(),
            StatusCode::NOT_FOUND);
  farm::v1::RunScheduleNowRequest now;
  now.set_schedule_id(ref.schedule_id());
  farm::v1::ScheduleRun run;
  ASSERT_TRUE(farm_->RunScheduleNow(Ctx(admin_).get(), now, &run).ok());
  EXPECT_GT(run.build_id(), 0);
  farm::v1::DeleteScheduleResponse deleted;
  ASSERT_TRUE(farm_->DeleteSchedule(Ctx(admin_).get(), ref, &deleted).ok());
  EXPECT_EQ(farm_->DeleteSchedule(Ctx(admin_).get(), ref, &deleted).error_code(),
            StatusCode::NOT_FOUND);

  // Still serving after all of it.
  farm::v1::ListBuildsResponse builds;
  ASSERT_TRUE(farm_->ListBuilds(Ctx(admin_).get(), {}, &builds).ok());
  EXPECT_EQ(builds.builds_size(), 1);
}

// Graph submissions (recipe `requires:`): a requirement the request does not carry, a
// pin the carried recipe does not have, a cell nothing serves and a nested graph are each
// answered by name, nothing is stored for a refused graph, and a graph is stored with its
// dependent held on the required job.
TEST_F(OddDataRpcTest, GraphSubmissionsAreCheckedWholeBeforeAnythingIsStored) {
  const std::string dependent =
      std::string(kRecipe) + "requires:\n  - {recipe: \"dép 🚀\", version: \"0.1.0\"}\n";
  auto submit = [&](const farm::v1::SubmitBuildRequest& req, farm::v1::SubmitBuildResponse* resp) {
    return farm_->SubmitBuild(Ctx(admin_).get(), req, resp);
  };
  farm::v1::SubmitBuildRequest req;
  req.set_recipe_yaml(dependent);
  farm::v1::SubmitBuildResponse resp;
  auto s = submit(req, &resp);  // no recipe carried for the requirement
  ExpectHandled(s, "SubmitBuild without its requirement");
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("requires 1 recipe(s)"), std::string::npos) << s.error_message();

  farm::v1::SubmitBuildRequest* dep = req.add_requirements();
  dep->set_recipe_yaml(
      std::string(kRecipe).replace(std::string(kRecipe).find("odd-recipe"), 10, "dep-recipe"));
  std::string pinned = dep->recipe_yaml();
  dep->set_recipe_yaml(pinned.replace(pinned.find("0.1.0"), 5, "9.9.9"));
  s = submit(req, &resp);  // the carried recipe is another version
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("asks for version 0.1.0"), std::string::npos)
      << s.error_message();

  std::string other_python = dep->recipe_yaml();
  other_python.replace(other_python.find("9.9.9"), 5, "0.1.0");
  dep->set_recipe_yaml(other_python.replace(other_python.find("\"3.11\""), 6, "\"3.12\""));
  s = submit(req, &resp);  // no cell of the requirement serves Python 3.11
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("has no cell"), std::string::npos) << s.error_message();
  farm::v1::ListBuildsRequest list;
  farm::v1::ListBuildsResponse builds;
  ASSERT_TRUE(farm_->ListBuilds(Ctx(admin_).get(), list, &builds).ok());
  EXPECT_EQ(builds.builds_size(), 0) << "a refused graph stored a build";

  std::string served = dep->recipe_yaml();
  dep->set_recipe_yaml(served.replace(served.find("\"3.12\""), 6, "\"3.11\""));
  s = submit(req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.build().jobs_size(), 1);
  const farm::v1::Job& held = resp.build().jobs(0);
  EXPECT_EQ(held.state(), farm::v1::JOB_PENDING);
  EXPECT_TRUE(held.build_key().empty());
  ASSERT_EQ(held.inputs_size(), 1);
  EXPECT_EQ(held.inputs(0).recipe_name(), "dep-recipe");
  EXPECT_TRUE(held.inputs(0).for_build() && held.inputs(0).for_validation());
  EXPECT_NE(held.waiting_reason().find("dep-recipe"), std::string::npos) << held.waiting_reason();
  farm::v1::GetBuildRequest get;
  get.set_build_id(held.inputs(0).build_id());
  farm::v1::Build required;
  ASSERT_TRUE(farm_->GetBuild(Ctx(admin_).get(), get, &required).ok());
  ASSERT_EQ(required.jobs_size(), 1);
  ASSERT_EQ(required.jobs(0).consumers_size(), 1);
  EXPECT_EQ(required.jobs(0).consumers(0).job_id(), held.id());
}

}  // namespace
}  // namespace farm::api
