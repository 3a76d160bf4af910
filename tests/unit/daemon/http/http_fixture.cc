#include "tests/unit/daemon/http/http_fixture.h"

#include <archive.h>
#include <archive_entry.h>

#include "common/sha256.h"
#include "farm/v1/types.pb.h"

namespace farm::http::testing {

void HttpFixture::SetUp() {
  auto st = store::OpenSqliteStore(dir_.path() + "/farm.db");
  ASSERT_OK(st.status());
  store_ = std::move(st.value());
  auto blobs = store::BlobStore::Open(dir_.path() + "/blobs");
  ASSERT_OK(blobs.status());
  blobs_ = std::move(blobs.value());
  auth_ = std::make_unique<auth::TokenAuthority>(store_.get(), &clock_);
  audit_ = std::make_unique<audit::AuditLog>(store_.get(), &clock_);
  store::Store* s = store_.get();
  control_ = std::make_unique<builds::Control>(builds::ControlDeps{.builds = s,
                                                                   .control = s,
                                                                   .artifacts = s,
                                                                   .validations = s,
                                                                   .workers = s,
                                                                   .names = s,
                                                                   .clock = &clock_,
                                                                   .audit = audit_.get()});
  schedule_submitter_ = std::make_unique<builds::Submitter>(builds::SubmitDeps{});
  schedule_control_ = std::make_unique<builds::ScheduleControl>(
      builds::ScheduleControlDeps{.schedules = s,
                                  .names = s,
                                  .submitter = schedule_submitter_.get(),
                                  .sources = {s, blobs_.get(), &clock_},
                                  .clock = &clock_,
                                  .audit = audit_.get()});
}

std::vector<int64_t> HttpFixture::AddBuild(int n, const std::string& cuda, const std::string& torch,
                                           int64_t* build_id) {
  store::BuildRow b;
  b.recipe_name = "attn-example";
  b.submitted_by = "test";
  b.created_ms = clock_.NowUnixMs();
  std::vector<store::JobRow> jobs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    farm::v1::MatrixCell c;
    c.set_python("3.11"), c.set_torch(torch), c.set_cuda(cuda);
    c.set_arch_list("9.0a;" + std::to_string(i));
    jobs[static_cast<size_t>(i)].cell = c.SerializeAsString();
    jobs[static_cast<size_t>(i)].created_ms = clock_.NowUnixMs();
  }
  EXPECT_OK(store_->CreateBuild(&b, &jobs));
  if (build_id) *build_id = b.id;
  std::vector<int64_t> ids;
  for (const auto& j : jobs) ids.push_back(j.id);
  return ids;
}

void HttpFixture::Start(int64_t id) {
  auto job = store_->AcquireJob("w1", clock_.NowUnixMs(), 3'600'000,
                                [id](const store::JobRow& j) { return j.id == id ? "" : "no"; });
  ASSERT_OK(job.status());
  ASSERT_TRUE(job->has_value());
}

void HttpFixture::Finish(int64_t id, int cause) {
  store::CompletionReport r;
  r.job_id = id, r.attempt = 1, r.worker_id = "w1", r.cause = cause;
  EXPECT_OK(store_->CompleteAttempt(r, clock_.NowUnixMs()).status());
}

std::string HttpFixture::AddFinishedWheel(const std::string& cuda, const std::string& torch,
                                          const std::string& filename, const std::string& metadata,
                                          int validation_state, const std::string& manifest) {
  auto ids = AddBuild(1, cuda, torch);
  Start(ids[0]);
  std::string sha = AddWheel(ids[0], filename, metadata, validation_state, manifest);
  Finish(ids[0]);
  return sha;
}

std::vector<std::string> HttpFixture::ListedWheels(Router& r, const std::string& view,
                                                   const std::string& project) {
  Response resp = Get(r, view + project + "/", "application/vnd.pypi.simple.v1+json");
  std::vector<std::string> out;
  if (resp.status != 200) return out;
  const boost::json::value page = Json(resp);
  for (const auto& f : page.at("files").as_array()) {
    std::string name(f.at("filename").as_string());
    if (name.find("+no.wheel.for.") == std::string::npos) out.push_back(name);
  }
  return out;
}

std::string Sm90Manifest() {
  farm::v1::ArchManifest m;
  auto* image = m.add_images();
  image->set_arch("sm_90"), image->set_kind("sass"), image->set_module("pkg/_C.so");
  m.add_runs_on("9.0");
  return m.SerializeAsString();
}

std::string MakeZip(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out(1 << 20, '\0');
  size_t used = 0;
  archive* a = archive_write_new();
  archive_write_set_format_zip(a);
  archive_write_open_memory(a, out.data(), out.size(), &used);
  for (const auto& [name, content] : files) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(content.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_write_header(a, e);
    archive_write_data(a, content.data(), content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  out.resize(used);
  return out;
}

std::string HttpFixture::AddWheel(int64_t job_id, const std::string& filename,
                                  const std::string& metadata, int validation_state,
                                  const std::string& manifest) {
  std::string dist = filename.substr(0, filename.find('-', filename.find('-') + 1));
  return AddWheelBytes(
      job_id, filename,
      MakeZip({{"attn_example/__init__.py", "X = 1\n"}, {dist + ".dist-info/METADATA", metadata}}),
      validation_state, manifest);
}

std::string HttpFixture::AddWheelBytes(int64_t job_id, const std::string& filename,
                                       const std::string& zip, int validation_state,
                                       const std::string& manifest) {
  std::string sha = Sha256Hex(zip);
  auto w = blobs_->BeginWrite(static_cast<int64_t>(zip.size()), sha);
  EXPECT_OK(w.status());
  EXPECT_OK(w.value()->Append(zip));
  EXPECT_OK(w.value()->Commit());
  farm::v1::ValidationReport v;
  v.set_state(static_cast<farm::v1::ValidationState>(validation_state));
  EXPECT_OK(store_
                ->InsertArtifact(store::ArtifactRow{0, job_id, 1, filename, sha,
                                                    static_cast<int64_t>(zip.size()), manifest,
                                                    v.SerializeAsString(), clock_.NowUnixMs()})
                .status());
  return sha;
}

std::string HttpFixture::AddFinishedWheelFile(const std::string& cuda, const std::string& torch,
                                              const std::string& filename, const std::string& bytes,
                                              int validation_state, const std::string& manifest) {
  auto ids = AddBuild(1, cuda, torch);
  Start(ids[0]);
  std::string sha = AddWheelBytes(ids[0], filename, bytes, validation_state, manifest);
  Finish(ids[0]);
  return sha;
}

Router HttpFixture::MakeRouter(DashboardOptions options) {
  DashboardDeps deps{store_.get(), blobs_.get(), auth_.get(), &clock_, nullptr, audit_.get()};
  deps.control = control_.get();
  deps.schedule_control = schedule_control_.get();
  return Router(options, deps);
}

Response HttpFixture::Get(Router& r, const std::string& target, const std::string& accept) {
  Request req = MakeRequest("GET", target);
  req.accept = accept;
  return r.Handle(req);
}

boost::json::value HttpFixture::Json(const Response& r) {
  boost::json::error_code ec;
  auto v = boost::json::parse(r.body, ec);
  EXPECT_FALSE(ec) << r.body;
  return v;
}

}  // namespace farm::http::testing
