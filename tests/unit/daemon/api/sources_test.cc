// The source RPCs (FindSource, UploadSource, DownloadSource) and the builds, schedules and
// collection that name uploaded archives, over a real channel with odd but legal data:
// bad digests, lying sizes, hostile archives, unicode origins, offsets at and past the end,
// attempts a worker does not hold.
#include <cstdio>
#include <thread>

#include "common/archive/tree_packer.h"
#include "common/sha256.h"
#include "daemon/api/client/client_service.h"
#include "tests/unit/daemon/api/rpc_fixture.h"

namespace farm::api {
namespace {

class SourceRpcTest : public RpcTest {
 protected:
  // A packed tree with unicode names, as farmctl makes it.
  std::string PackedTree() {
    std::string root = dir_.path() + "/tree";
    EXPECT_OK(fs::MakeDirs(root + "/注意力"));
    EXPECT_OK(fs::WriteFileAtomic(root + "/注意力/kernel 🚀.cu", "__global__ void k() {}\n"));
    EXPECT_OK(fs::WriteFileAtomic(root + "/setup.py", "print('hi')\n"));
    auto plan = archives::PlanTree(root, {});
    EXPECT_OK(plan.status());
    std::string bytes;
    EXPECT_OK(archives::WriteTreeArchive(*plan, [&](std::string_view piece) {
      bytes.append(piece);
      return Status::Ok();
    }));
    return bytes;
  }

  // Uploads `data` announced as `sha256`/`size` in pieces of `piece` bytes.
  grpc::Status Upload(const std::string& data, const std::string& sha256, int64_t size,
                      farm::v1::SourceUploadResponse* resp, const std::string& origin = kUnicode,
                      const std::string& token = "") {
    auto ctx = Ctx(token.empty() ? admin_ : token);
    auto writer = farm_->UploadSource(ctx.get(), resp);
    farm::v1::SourceUpload msg;
    msg.mutable_header()->set_sha256(sha256);
    msg.mutable_header()->set_size(size);
    msg.mutable_header()->set_origin(origin);
    bool open = writer->Write(msg);
    for (size_t at = 0; open && at < data.size(); at += 300000) {
      msg.Clear();
      msg.set_data(data.substr(at, 300000));
      open = writer->Write(msg);
    }
    writer->WritesDone();
    return writer->Finish();
  }

  bool Stored(const std::string& sha256) {
    farm::v1::FindSourceRequest req;
    req.set_sha256(sha256);
    farm::v1::FindSourceResponse resp;
    auto s = farm_->FindSource(Ctx(admin_).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.stored();
  }

  grpc::Status SubmitSource(const farm::v1::Source& source, farm::v1::Build* build) {
    farm::v1::SubmitBuildRequest req;
    req.set_recipe_yaml(kRecipe);
    *req.mutable_source() = source;
    farm::v1::SubmitBuildResponse resp;
    auto s = farm_->SubmitBuild(Ctx(admin_).get(), req, &resp);
    *build = resp.build();
    return s;
  }

  static farm::v1::Source ArchiveSource(const std::string& sha256) {
    farm::v1::Source source;
    source.mutable_archive()->set_sha256(sha256);
    return source;
  }
};

TEST_F(SourceRpcTest, UploadsAreCheckedStoredOnceAndFoundAgain) {
  farm::v1::FindSourceRequest find;
  farm::v1::FindSourceResponse found;
  for (const std::string& bad : {std::string(), std::string(64, 'A'), std::string(63, 'a'),
                                 std::string("../../etc/passwd"), std::string(kUnicode)}) {
    find.set_sha256(bad);
    auto s = farm_->FindSource(Ctx(admin_).get(), find, &found);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << bad;
  }
  std::string bytes = PackedTree();
  std::string sha = Sha256Hex(bytes);
  EXPECT_FALSE(Stored(sha));

  farm::v1::SourceUploadResponse resp;
  const int64_t size = static_cast<int64_t>(bytes.size());
  for (int64_t lie : {int64_t{-1}, INT64_MAX}) {  // sizes farmd refuses before any byte
    EXPECT_EQ(Upload(bytes, sha, lie, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_EQ(Upload(bytes, sha, size - 1, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Upload(bytes.substr(1), sha, size, &resp).error_code(), StatusCode::DATA_LOSS);
  EXPECT_EQ(Upload(bytes, std::string(64, 'f'), size, &resp).error_code(), StatusCode::DATA_LOSS);
  EXPECT_FALSE(Stored(sha));
  {  // A stream without a header, and a second header.
    auto ctx = Ctx(admin_);
    auto writer = farm_->UploadSource(ctx.get(), &resp);
    farm::v1::SourceUpload data;
    data.set_data("x");
    writer->Write(data);
    writer->WritesDone();
    EXPECT_EQ(writer->Finish().error_code(), StatusCode::INVALID_ARGUMENT);
  }

  std::string long_origin;
  for (int i = 0; i < 100; ++i) long_origin += kUnicode;  // cut to 512 bytes, still UTF-8
  auto s = Upload(bytes, sha, size, &resp, long_origin);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.received_bytes(), size);
  EXPECT_EQ(resp.files(), 2);
  EXPECT_EQ(resp.archive().sha256(), sha);
  EXPECT_LE(resp.archive().origin().size(), 512u);
  EXPECT_TRUE(Stored(sha));
  s = Upload(bytes, sha, size, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.received_bytes(), 0);  // already there: nothing taken

  // An empty tree is a legal (if useless) source.
  ASSERT_OK(fs::MakeDirs(dir_.path() + "/empty"));
  auto plan = archives::PlanTree(dir_.path() + "/empty", {});
  std::string empty;
  ASSERT_OK(archives::WriteTreeArchive(*plan, [&](std::string_view p) {
    empty.append(p);
    return Status::Ok();
  }));
  s = Upload(empty, Sha256Hex(empty), static_cast<int64_t>(empty.size()), &resp, "");
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.files(), 0);

  // A viewer may look but not upload.
  farm::v1::CreateTokenRequest token;
  token.set_role("viewer");
  farm::v1::CreateTokenResponse viewer;
  ASSERT_TRUE(farm_->CreateToken(Ctx(admin_).get(), token, &viewer).ok());
  EXPECT_EQ(Upload(bytes, sha, size, &resp, "", viewer.token()).error_code(),
            StatusCode::PERMISSION_DENIED);
}

TEST_F(SourceRpcTest, AHostileArchiveNeverEntersTheStore) {
  // A tar whose one file is named "../evil.py", made by hand: header, data, end blocks.
  std::string header(512, '\0');
  auto put = [&](size_t at, const std::string& v) { header.replace(at, v.size(), v); };
  put(0, "../evil.py");
  put(100, "0000644");
  put(108, "0000000"), put(116, "0000000");
  put(124, "00000000001");
  put(136, "00000000000");
  put(156, "0");
  put(257, "ustar");
  put(263, "00");
  header.replace(148, 8, "        ");
  unsigned sum = 0;
  for (unsigned char c : header) sum += c;
  char digits[8];
  std::snprintf(digits, sizeof digits, "%06o", sum);
  header.replace(148, 7, std::string(digits, 6) + '\0');
  std::string tar = header + "x" + std::string(511, '\0') + std::string(1024, '\0');
  farm::v1::SourceUploadResponse resp;
  std::string sha = Sha256Hex(tar);
  auto s = Upload(tar, sha, static_cast<int64_t>(tar.size()), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("path-dotdot: ../evil.py"), std::string::npos)
      << s.error_message();
  EXPECT_FALSE(Stored(sha));
  std::string junk = "not an archive at all";
  s = Upload(junk, Sha256Hex(junk), static_cast<int64_t>(junk.size()), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("not a tar archive"), std::string::npos) << s.error_message();
}

TEST_F(SourceRpcTest, BuildsNameUploadedArchivesAndNeverPaths) {
  farm::v1::Build build;
  farm::v1::Source path;
  path.set_local_path("/home/someone/src");
  auto s = SubmitSource(path, &build);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("path on the submitting machine"), std::string::npos);
  path.set_tarball_path("relative/src.tar.gz");
  EXPECT_EQ(SubmitSource(path, &build).error_code(), StatusCode::INVALID_ARGUMENT);
  std::string bytes = PackedTree();
  std::string sha = Sha256Hex(bytes);
  s = SubmitSource(ArchiveSource(sha), &build);
  EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("upload it first"), std::string::npos) << s.error_message();
  EXPECT_EQ(SubmitSource(ArchiveSource("nothex"), &build).error_code(),
            StatusCode::INVALID_ARGUMENT);

  farm::v1::SourceUploadResponse uploaded;
  ASSERT_TRUE(Upload(bytes, sha, static_cast<int64_t>(bytes.size()), &uploaded).ok());
  s = SubmitSource(ArchiveSource(sha), &build);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(build.recipe().source().archive().size(), static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(build.recipe().source().archive().origin(), kUnicode);
  // The same archive again is the same build key: answered by the build in flight.
  farm::v1::Build again;
  ASSERT_TRUE(SubmitSource(ArchiveSource(sha), &again).ok());
  EXPECT_EQ(again.jobs(0).build_key(), build.jobs(0).build_key());
  EXPECT_FALSE(build.jobs(0).build_key().empty());
}

TEST_F(SourceRpcTest, WorkersDownloadOnlyTheSourceOfAnAttemptTheyHold) {
  std::string bytes = PackedTree();
  std::string sha = Sha256Hex(bytes);
  const int64_t size = static_cast<int64_t>(bytes.size());
  farm::v1::SourceUploadResponse uploaded;
  ASSERT_TRUE(Upload(bytes, sha, size, &uploaded).ok());
  farm::v1::Build build;
  ASSERT_TRUE(SubmitSource(ArchiveSource(sha), &build).ok());
  farm::v1::RegisterResponse w = RegisterBuilder();
  farm::v1::AcquireJobRequest acquire;
  acquire.set_worker_id(w.worker_id());
  farm::v1::AcquireJobResponse acquired;
  ASSERT_TRUE(worker_->AcquireJob(Ctx(w.worker_token()).get(), acquire, &acquired).ok());
  ASSERT_TRUE(acquired.has_job());
  EXPECT_EQ(acquired.job().recipe().source().archive().sha256(), sha);

  auto download = [&](int64_t job, const std::string& want, int64_t offset, std::string* out,
                      int64_t* announced) {
    farm::v1::DownloadSourceRequest req;
    req.set_job_id(job);
    req.set_attempt(1);
    req.set_sha256(want);
    req.set_offset(offset);
    auto ctx = Ctx(w.worker_token());
    auto reader = worker_->DownloadSource(ctx.get(), req);
    farm::v1::SourceChunk chunk;
    for (int i = 0; i < 10000 && reader->Read(&chunk); ++i) {
      if (chunk.size() > 0) *announced = chunk.size();
      out->append(chunk.data());
    }
    return reader->Finish();
  };
  const int64_t job = acquired.job().job_id();
  std::string got;
  int64_t announced = 0;
  ASSERT_TRUE(download(job, sha, 0, &got, &announced).ok());
  EXPECT_EQ(got, bytes);
  EXPECT_EQ(announced, size);
  got.clear();
  ASSERT_TRUE(download(job, sha, size - 10, &got, &announced).ok());  // resuming
  EXPECT_EQ(got, bytes.substr(bytes.size() - 10));
  got.clear();
  ASSERT_TRUE(download(job, sha, size, &got, &announced).ok());
  EXPECT_TRUE(got.empty());
  for (int64_t offset : {int64_t{-1}, size + 1, INT64_MAX}) {
    EXPECT_EQ(download(job, sha, offset, &got, &announced).error_code(),
              StatusCode::INVALID_ARGUMENT)
        << offset;
  }
  EXPECT_EQ(download(job, std::string(64, 'e'), 0, &got, &announced).error_code(),
            StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(download(INT64_MAX, sha, 0, &got, &announced).error_code(),
            StatusCode::PERMISSION_DENIED);
  auto [other_id, other_token] = RegisterWorker();
  farm::v1::DownloadSourceRequest req;
  req.set_job_id(job);
  req.set_attempt(1);
  req.set_sha256(sha);
  auto ctx = Ctx(other_token);
  auto reader = worker_->DownloadSource(ctx.get(), req);
  farm::v1::SourceChunk chunk;
  while (reader->Read(&chunk)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), StatusCode::PERMISSION_DENIED);
}

TEST_F(SourceRpcTest, SchedulesKeepTheirArchiveUntilDeletedThenItIsCollected) {
  std::string bytes = PackedTree();
  std::string sha = Sha256Hex(bytes);
  farm::v1::CreateScheduleRequest create;
  create.set_cron("@daily");
  create.mutable_build()->set_recipe_yaml(kRecipe);
  *create.mutable_build()->mutable_source() = ArchiveSource(sha);
  farm::v1::Schedule schedule;
  EXPECT_EQ(farm_->CreateSchedule(Ctx(admin_).get(), create, &schedule).error_code(),
            StatusCode::FAILED_PRECONDITION);  // not uploaded
  create.mutable_build()->mutable_source()->set_local_path("src");
  EXPECT_EQ(farm_->CreateSchedule(Ctx(admin_).get(), create, &schedule).error_code(),
            StatusCode::INVALID_ARGUMENT);
  farm::v1::SourceUploadResponse uploaded;
  ASSERT_TRUE(Upload(bytes, sha, static_cast<int64_t>(bytes.size()), &uploaded).ok());
  *create.mutable_build()->mutable_source() = ArchiveSource(sha);
  ASSERT_TRUE(farm_->CreateSchedule(Ctx(admin_).get(), create, &schedule).ok());
  EXPECT_EQ(schedule.request().source().archive().sha256(), sha);

  const ServiceContext& ctx = *server_->context();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto collected = builds::CollectSources(SourceDepsOf(ctx), /*retention_ms=*/1);  // all is old
  ASSERT_OK(collected.status());
  EXPECT_EQ(*collected, 0);  // the schedule names it
  EXPECT_TRUE(Stored(sha));
  farm::v1::ScheduleRef ref;
  ref.set_schedule_id(schedule.id());
  farm::v1::DeleteScheduleResponse deleted;
  ASSERT_TRUE(farm_->DeleteSchedule(Ctx(admin_).get(), ref, &deleted).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  collected = builds::CollectSources(SourceDepsOf(ctx), 1);
  ASSERT_OK(collected.status());
  EXPECT_EQ(*collected, 1);
  EXPECT_FALSE(Stored(sha));
  EXPECT_FALSE(fs::Exists(dir_.path() + "/data/blobs/" + sha.substr(0, 2) + "/" + sha));
  EXPECT_EQ(*builds::CollectSources(SourceDepsOf(ctx), 0), 0);  // 0: keep forever
}

}  // namespace
}  // namespace farm::api

namespace farm::api {
namespace {

// A git source a client sends beside the recipe (SubmitBuildRequest.source) is held to the
// same rules as one in the recipe: a path or file:// on farmd's host is refused before any
// git runs, and nothing is stored.
TEST_F(SourceRpcTest, AGitSourceSentBesideTheRecipeMustBeRemoteToo) {
  for (const std::string& url : {dir_.path(), "file://" + dir_.path(), std::string("ext::sh"),
                                 std::string("http://example.invalid/x.git")}) {
    farm::v1::SubmitBuildRequest req;
    req.set_recipe_yaml(kRecipe);
    req.mutable_source()->mutable_git()->set_url(url);
    req.mutable_source()->mutable_git()->set_ref("main");
    farm::v1::SubmitBuildResponse resp;
    auto s = farm_->SubmitBuild(Ctx(admin_).get(), req, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << url << ": " << s.error_message();
    EXPECT_NE(s.error_message().find("git sources must be remote https:// URLs"), std::string::npos)
        << s.error_message();
  }
  auto builds = server_->context()->store->ListBuilds(0, 10);
  ASSERT_TRUE(builds.ok());
  EXPECT_TRUE(builds->empty());
}

}  // namespace
}  // namespace farm::api
