// The Publisher against a real SQLite store and blob store, with scripted targets: which
// wheels get rows, relabelling, state transitions, backoff, failures, crash recovery of
// an "uploading" row, and release gating and notes.
#include "daemon/publish/outbox.h"

#include <filesystem>
#include <map>

#include "common/fs.h"
#include "common/log.h"
#include "common/provenance/verify.h"
#include "common/sha256.h"
#include "common/wheel/inspect.h"
#include "daemon/attest/attestor.h"
#include "daemon/publish/outbox_internal.h"
#include "tests/support/one_job_build.h"
#include "tests/support/sqlite_store_test.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::publish {
namespace {

class ScriptedGitHub final : public GitHubTarget {
 public:
  Result<GitHubRelease> GetOrCreateDraftRelease(const ReleaseSpec& spec) override {
    if (!next_error.ok()) return std::exchange(next_error, Status::Ok());
    auto& r = releases[spec.tag];
    if (r.id == 0)
      r = {.id = 100 + static_cast<int64_t>(releases.size()), .tag_name = spec.tag, .draft = true};
    r.immutable = immutable && !r.draft;
    return r;
  }
  Result<AssetResult> UploadAsset(const std::string&, const GitHubRelease& release,
                                  const AssetUpload& upload) override {
    if (!upload_error.ok()) return upload_error;
    if (IsLockedRelease(release)) ++locked_upload_calls;  // the outbox should not get here
    std::string sha = Sha256FileHex(upload.local_path).value();
    EXPECT_EQ(sha, upload.sha256_hex);
    auto& assets = uploads[release.tag_name];
    bool present = assets.count(upload.name) && assets[upload.name] == sha;
    if (!present) ++upload_count;
    assets[upload.name] = sha;
    if (lose_answer) return Status::Unavailable("connection reset after the upload");
    AssetResult out;
    out.asset.id = 7;
    out.asset.browser_download_url = "http://gh/dl/" + release.tag_name + "/" + upload.name;
    out.outcome = present ? AssetOutcome::kAlreadyPresent : AssetOutcome::kUploaded;
    return out;
  }
  Result<std::vector<GitHubAsset>> ListAssets(const std::string&, int64_t id) override {
    std::vector<GitHubAsset> out;
    for (const auto& [tag, r] : releases) {
      if (r.id != id) continue;
      for (const auto& [name, sha] : uploads[tag]) {
        out.push_back({.id = static_cast<int64_t>(out.size()) + 1,
                       .name = name,
                       .state = "uploaded",
                       .digest = "sha256:" + sha,
                       .browser_download_url = "http://gh/dl/" + tag + "/" + name});
      }
    }
    return out;
  }
  Result<GitHubRelease> SetReleaseNotes(const std::string&, int64_t id,
                                        const std::string& body) override {
    notes[id] = body;
    for (auto& [tag, r] : releases) {
      if (r.id == id) r.body = body;
    }
    return GitHubRelease{.id = id};
  }
  Result<GitHubRelease> PublishRelease(const std::string&, int64_t id) override {
    ++publish_count;
    for (auto& [tag, r] : releases) {
      if (r.id == id) r.draft = false;
    }
    return GitHubRelease{.id = id, .html_url = "http://gh/release/" + std::to_string(id)};
  }

  Status next_error;
  Status upload_error;
  bool lose_answer = false;  // the upload lands but its answer is lost
  bool immutable = false;    // published releases are locked
  std::map<std::string, GitHubRelease> releases;
  std::map<std::string, std::map<std::string, std::string>> uploads;  // tag -> name -> sha
  std::map<int64_t, std::string> notes;
  int upload_count = 0;
  int publish_count = 0;
  int locked_upload_calls = 0;
};

class ScriptedHf final : public HfTarget {
 public:
  Status CreateRepo(const std::string&) override { return Status::Ok(); }
  Result<HfUploadResult> UploadFile(const HfUploadRequest& request) override {
    paths.push_back(request.path_in_repo);
    return HfUploadResult{.commit_oid = "c0ffee", .commit_url = "http://hf/commit/c0ffee"};
  }
  std::vector<std::string> paths;
};

class OutboxTest : public testing::SqliteStoreTest {
 protected:
  void SetUpOnStore() override {
    blobs_ = store::BlobStore::Open(dir_.path() + "/blobs").value();
    ASSERT_OK(fs::MakeDirs(dir_.path() + "/work"));
  }

  std::unique_ptr<Publisher> MakePublisher(bool pending_ok, GitHubTarget* gh, HfTarget* hf,
                                           int64_t github_max = wheel::kGitHubMaxAssetBytes) {
    PublisherOptions options;
    options.publish_pending_hardware = pending_ok;
    options.work_dir = dir_.path() + "/work";
    options.github_max_asset_bytes = github_max;
    return std::make_unique<Publisher>(PublisherDeps{store_.get(), blobs_.get(), &clock_, gh, hf},
                                       options);
  }

  // A build of one job that succeeded with an unlabelled wheel; returns the build id.
  // `label` is the local version template, `tag` the GitHub tag template, and `hf` says
  // whether the recipe also publishes to the Hub.
  int64_t MakeSucceededBuild(const std::string& validation_blob, bool finish = true,
                             const std::string& label = "cu{cuda_nodot}",
                             const std::string& tag = "", bool hf = true) {
    farm::v1::Recipe recipe;
    recipe.set_name("attn-example");
    recipe.set_version("1.0.0");
    recipe.mutable_publish()->set_github_repo("farm/wheels");
    recipe.mutable_publish()->set_github_tag_template(tag);
    if (hf) recipe.mutable_publish()->set_hf_repo("farm/kernels");
    recipe.mutable_publish()->set_local_version_template(label);
    farm::v1::MatrixCell cell;
    cell.set_python("3.12");
    cell.set_cuda("13.0");
    cell.set_platform("linux_x86_64");
    store::JobRow job = farm::testing::LeaseOneJobBuild(*store_, recipe, cell, "w1", 10, 1).value();
    wheel::testing::WheelSpec spec;
    spec.filename = "attn_example-1.0.0-cp312-cp312-linux_x86_64.whl";
    spec.dist_info = "attn_example-1.0.0.dist-info";
    spec.metadata = "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0.0\n";
    std::string path = wheel::testing::WriteWheel(dir_.path(), spec).value();
    int64_t size = 0;
    std::string sha = Sha256FileHex(path, &size).value();
    auto writer = blobs_->BeginWrite(size, sha).value();
    EXPECT_OK(writer->Append(fs::ReadFile(path).value()));
    EXPECT_OK(writer->Commit());
    EXPECT_OK(store_
                  ->InsertArtifact({.job_id = job.id,
                                    .attempt = job.attempt,
                                    .filename = spec.filename,
                                    .sha256 = sha,
                                    .size = size,
                                    .validation = validation_blob,
                                    .created_ms = 20})
                  .status());
    if (finish) {
      EXPECT_OK(
          store_->CompleteAttempt({.job_id = job.id, .attempt = job.attempt, .worker_id = "w1"}, 30)
              .status());
    }
    return job.build_id;
  }

  std::map<std::string, store::PublicationRow> Rows(int64_t build) {
    std::map<std::string, store::PublicationRow> out;
    auto rows = store_->ListPublications(build);
    EXPECT_OK(rows.status());
    for (auto& r : rows.value()) out[r.target + "/" + r.kind] = r;
    return out;
  }

  std::unique_ptr<store::BlobStore> blobs_;
};

TEST_F(OutboxTest, PendingHardwareWheelsWaitUnlessAllowedAndFailedOnesNeverPublish) {
  farm::v1::ValidationReport failed;
  failed.set_state(farm::v1::VALIDATION_FAILED);
  int64_t bad = MakeSucceededBuild(failed.SerializeAsString());
  int64_t pending = MakeSucceededBuild("");
  ScriptedGitHub gh;
  ScriptedHf hf;
  ASSERT_OK(MakePublisher(false, &gh, &hf)->RunOnce().status());
  EXPECT_TRUE(Rows(bad).empty());
  EXPECT_TRUE(Rows(pending).empty());
  ASSERT_OK(MakePublisher(true, &gh, &hf)->RunOnce().status());
  EXPECT_TRUE(Rows(bad).empty());
  EXPECT_EQ(Rows(pending).size(), 3u);
}

TEST_F(OutboxTest, UploadsTheLabelledWheelEverywhereThenPublishesTheReleaseWithNotes) {
  farm::v1::ValidationReport passed;
  passed.set_state(farm::v1::VALIDATION_PASSED);
  passed.set_gpu_name("NVIDIA H100 80GB HBM3");
  auto* c = passed.add_cases();
  c->set_cosine(0.9998);
  c->set_relative_l1(0.012);
  c->set_tops(612);
  int64_t build = MakeSucceededBuild(passed.SerializeAsString());
  ScriptedGitHub gh;
  ScriptedHf hf;
  auto publisher = MakePublisher(false, &gh, &hf);
  ASSERT_OK(publisher->RunOnce().status());
  ASSERT_OK(publisher->RunOnce().status());  // the release row follows its assets
  auto rows = Rows(build);
  const std::string name = "attn_example-1.0.0+cu130-cp312-cp312-linux_x86_64.whl";
  EXPECT_EQ(rows["github/asset"].filename, name);
  EXPECT_EQ(rows["github/asset"].state, store::PublicationState::kPublished);
  EXPECT_EQ(rows["github/asset"].ref, "v1.0.0-build" + std::to_string(build));
  EXPECT_EQ(rows["github/release"].state, store::PublicationState::kPublished);
  EXPECT_EQ(rows["hf/file"].state, store::PublicationState::kPublished);
  EXPECT_EQ(rows["hf/file"].path, "build/cu130-x86_64-linux/" + name);
  ASSERT_EQ(hf.paths.size(), 1u);
  EXPECT_EQ(gh.upload_count, 1);
  EXPECT_EQ(gh.publish_count, 1);
  // The published bytes are a wheel that passes the checks and carries the label.
  const std::string named = dir_.path() + "/" + name;
  auto bytes = fs::ReadFile(blobs_->LocalPath(rows["github/asset"].sha256).value());
  ASSERT_OK(bytes.status());
  ASSERT_OK(fs::WriteFileAtomic(named, bytes.value()));
  auto report = wheel::InspectWheel(named, {});
  ASSERT_OK(report.status());
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(report->metadata_version, "1.0.0+cu130");
  const std::string& notes = gh.notes.begin()->second;
  EXPECT_NE(notes.find(name), std::string::npos) << notes;
  EXPECT_NE(notes.find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(notes.find("cos 0.9998, rel-L1 0.012"), std::string::npos);
  EXPECT_NE(notes.find("| 612 |"), std::string::npos);
  EXPECT_NE(notes.find(rows["github/asset"].sha256), std::string::npos);
  EXPECT_NE(notes.find("pip install http://gh/dl/"), std::string::npos);
}

TEST_F(OutboxTest, EachWheelGoesOutWithItsProvenanceAndSignedChecksums) {
  auto keys = provenance::KeyRing::Open(dir_.path() + "/provenance", clock_).value();
  attest::Attestor attestor(store_.get(), keys.get(), &clock_);
  farm::v1::ValidationReport passed;
  passed.set_state(farm::v1::VALIDATION_PASSED);
  int64_t build = MakeSucceededBuild(passed.SerializeAsString());
  auto jobs = store_->ListJobs(build).value();
  for (const auto& job : jobs) {
    auto artifacts = store_->ListArtifacts(job.id).value();
    for (const auto& a : artifacts) ASSERT_OK(attestor.AttestBuild(a));
  }
  ScriptedGitHub gh;
  ScriptedHf hf;
  PublisherOptions options;
  options.work_dir = dir_.path() + "/work";
  Publisher publisher(PublisherDeps{store_.get(), blobs_.get(), &clock_, &gh, &hf, &attestor},
                      options);
  ASSERT_OK(publisher.RunOnce().status());
  ASSERT_OK(publisher.RunOnce().status());
  auto rows = Rows(build);
  ASSERT_EQ(rows["github/release"].state, store::PublicationState::kPublished)
      << rows["github/release"].error;
  const std::string name = rows["github/asset"].filename;
  const auto& assets = gh.uploads.begin()->second;
  for (const std::string& file :
       {name, name + ".intoto.jsonl", std::string("SHA256SUMS"), std::string("SHA256SUMS.sig")}) {
    EXPECT_TRUE(assets.count(file)) << file;
  }
  const std::string path = rows["hf/file"].path;
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  EXPECT_EQ(hf.paths, (std::vector<std::string>{path, path + ".intoto.jsonl", dir + "SHA256SUMS",
                                                dir + "SHA256SUMS.sig"}));
  // The published wheel was relabelled: its statements are rebound to its own bytes.
  auto envelopes = attestor.Envelopes(rows["github/asset"].sha256).value();
  ASSERT_EQ(envelopes.size(), 1u);
  auto v =
      provenance::VerifyWheel({name, rows["github/asset"].sha256}, envelopes, keys->Keys(), {});
  EXPECT_TRUE(v.ok) << v.problems[0];
  EXPECT_EQ(assets.at(name + ".intoto.jsonl"), Sha256Hex(provenance::EnvelopeLines(envelopes)));
  int left = 0;  // the scratch files are gone
  for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/work")) {
    left += e.path().filename().string().ends_with(".sig") ||
            e.path().filename().string().ends_with(".intoto.jsonl");
  }
  EXPECT_EQ(left, 0);
}

TEST_F(OutboxTest, TheReleaseWaitsForTheBuildToFinish) {
  int64_t build = MakeSucceededBuild("", /*finish=*/false);
  ScriptedGitHub gh;
  auto publisher = MakePublisher(true, &gh, nullptr);
  ASSERT_OK(publisher->RunOnce().status());
  EXPECT_TRUE(Rows(build).empty());  // the job has not succeeded: nothing to publish yet
  EXPECT_EQ(ReleaseWaitReason(store::kBuildRunning, {}, false), "waiting for the build to finish");
  store::PublicationRow asset{
      .target = "github", .kind = "asset", .state = store::PublicationState::kFailed};
  EXPECT_EQ(ReleaseWaitReason(store::kBuildSucceeded, {asset}, false),
            "waiting: 1 asset(s) failed");
  asset.state = store::PublicationState::kUploaded;
  EXPECT_EQ(ReleaseWaitReason(store::kBuildSucceeded, {asset}, true),
            "waiting for wheels to pass validation");
  EXPECT_EQ(ReleaseWaitReason(store::kBuildFailed, {asset}, false), "");
}

TEST_F(OutboxTest, TransientErrorsBackOffPermanentOnesFailRedactedAndMissingTokensSaySo) {
  int64_t build = MakeSucceededBuild("");
  ScriptedGitHub gh;
  log::RegisterSecret("ghp_outboxsecret123456");
  gh.next_error = Status::ResourceExhausted("rate limited");
  auto publisher = MakePublisher(true, &gh, nullptr);
  ASSERT_OK(publisher->RunOnce().status());
  auto rows = Rows(build);
  EXPECT_EQ(rows["github/asset"].state, store::PublicationState::kPending);
  EXPECT_EQ(rows["github/asset"].attempts, 1);
  EXPECT_EQ(rows["github/asset"].not_before_ms, clock_.NowUnixMs() + 2000);
  EXPECT_NE(rows["github/asset"].error.find("rate limited"), std::string::npos);
  EXPECT_EQ(rows["hf/file"].state, store::PublicationState::kFailed);
  EXPECT_NE(rows["hf/file"].error.find("farmd has no HF_TOKEN"), std::string::npos);
  // A fixed secrets file does nothing until farmd restarts: the error says so.
  EXPECT_NE(rows["hf/file"].error.find("then restart farmd, which reads them only at start"),
            std::string::npos)
      << rows["hf/file"].error;
  // Not due before the backoff ends.
  ASSERT_OK(publisher->RunOnce().status());
  EXPECT_EQ(Rows(build)["github/asset"].attempts, 1);
  clock_.Advance(2000);
  gh.upload_error =
      Status::Unauthenticated("upload: HTTP 401: bad credentials ghp_outboxsecret123456");
  ASSERT_OK(publisher->RunOnce().status());
  rows = Rows(build);
  EXPECT_EQ(rows["github/asset"].state, store::PublicationState::kFailed);
  EXPECT_EQ(rows["github/asset"].attempts, 2);
  EXPECT_EQ(rows["github/asset"].error.find("ghp_outboxsecret123456"), std::string::npos);
  EXPECT_NE(rows["github/asset"].error.find("[REDACTED]"), std::string::npos);
  // An operator's re-run starts the rows afresh.
  gh.upload_error = Status::Ok();
  EXPECT_EQ(store_->RequeuePublications(build, "github", false, clock_.NowUnixMs()).value(), 2);
  ASSERT_OK(publisher->RunOnce().status());
  ASSERT_OK(publisher->RunOnce().status());
  EXPECT_EQ(Rows(build)["github/release"].state, store::PublicationState::kPublished);
}

TEST_F(OutboxTest, ARowLeftUploadingByACrashIsWorkedAgainWithoutASecondUpload) {
  int64_t build = MakeSucceededBuild("");
  ScriptedGitHub gh;
  gh.lose_answer = true;
  auto publisher = MakePublisher(true, &gh, nullptr);
  ASSERT_OK(publisher->RunOnce().status());
  EXPECT_EQ(gh.upload_count, 1);
  EXPECT_EQ(Rows(build)["github/release"].state, store::PublicationState::kPending);
  // As if farmd died during the next attempt, before the row said how it ended.
  auto row = Rows(build)["github/asset"];
  ASSERT_EQ(row.state, store::PublicationState::kPending);
  row.state = store::PublicationState::kUploading;
  ASSERT_OK(store_->UpdatePublication(row, clock_.NowUnixMs()));
  gh.lose_answer = false;
  auto restarted = MakePublisher(true, &gh, nullptr);
  ASSERT_OK(restarted->RunOnce().status());
  ASSERT_OK(restarted->RunOnce().status());
  auto rows = Rows(build);
  EXPECT_EQ(rows["github/asset"].state, store::PublicationState::kPublished);
  EXPECT_EQ(rows["github/asset"].attempts, 2);
  EXPECT_EQ(gh.upload_count, 1);
  EXPECT_EQ(gh.publish_count, 1);
}

// Two builds of one version share the tag "v1.0.0"; the second's wheel carries another
// label, as a rebuild or a newly added cell would.
constexpr char kSharedTag[] = "v{version}";
constexpr char kFirstWheel[] = "attn_example-1.0.0+cu130-cp312-cp312-linux_x86_64.whl";
constexpr char kSecondWheel[] = "attn_example-1.0.0+cu130.rebuild-cp312-cp312-linux_x86_64.whl";

TEST_F(OutboxTest, ASecondBuildAddsItsWheelToThePublishedReleaseAndTheNotesKeepTheFirst) {
  ScriptedGitHub gh;
  auto publisher = MakePublisher(true, &gh, nullptr);
  int64_t first = MakeSucceededBuild("", true, "cu{cuda_nodot}", kSharedTag, /*hf=*/false);
  ASSERT_OK(publisher->RunOnce().status());
  ASSERT_OK(publisher->RunOnce().status());
  ASSERT_EQ(Rows(first)["github/release"].state, store::PublicationState::kPublished);
  ASSERT_FALSE(gh.releases["v1.0.0"].draft);
  // A wheel someone attached by hand: the farm knows nothing of it.
  gh.uploads["v1.0.0"]["other-0.1-py3-none-any.whl"] = std::string(64, 'a');
  int64_t second = MakeSucceededBuild("", true, "cu{cuda_nodot}.rebuild", kSharedTag, false);
  ASSERT_OK(publisher->RunOnce().status());
  ASSERT_OK(publisher->RunOnce().status());
  auto rows = Rows(second);
  EXPECT_EQ(rows["github/asset"].filename, kSecondWheel);
  EXPECT_EQ(rows["github/release"].state, store::PublicationState::kPublished)
      << rows["github/release"].error;
  EXPECT_EQ(gh.upload_count, 2);
  EXPECT_EQ(gh.publish_count, 1);  // the published release was not patched to draft and back
  EXPECT_FALSE(gh.releases["v1.0.0"].draft);
  EXPECT_EQ(gh.uploads["v1.0.0"].size(), 3u);
  const std::string& notes = gh.releases["v1.0.0"].body;
  const std::string first_sha = Rows(first)["github/asset"].sha256;
  for (const std::string& text :
       {std::string(kFirstWheel), first_sha, std::string(kSecondWheel), rows["github/asset"].sha256,
        std::string("other-0.1-py3-none-any.whl"), std::string(64, 'a'),
        "(builds " + std::to_string(first) + ", " + std::to_string(second) + ")"}) {
    EXPECT_NE(notes.find(text), std::string::npos) << text << "\n" << notes;
  }
  // The first build's row comes from the store: its cell, not just name and digest.
  size_t line = notes.find("[`" + std::string(kFirstWheel));
  ASSERT_NE(line, std::string::npos);
  EXPECT_NE(notes.substr(line, notes.find('\n', line) - line).find("| 3.12 | — | 13.0 |"),
            std::string::npos)
      << notes;
}

TEST_F(OutboxTest, AnImmutableReleaseFailsTheNewWheelsAtOnceAndAReRunNeedsNoUpload) {
  ScriptedGitHub gh;
  gh.immutable = true;
  auto publisher = MakePublisher(true, &gh, nullptr);
  int64_t first = MakeSucceededBuild("", true, "cu{cuda_nodot}", kSharedTag, /*hf=*/false);
  ASSERT_OK(publisher->RunOnce().status());
  ASSERT_OK(publisher->RunOnce().status());
  ASSERT_EQ(Rows(first)["github/release"].state, store::PublicationState::kPublished);
  int64_t second = MakeSucceededBuild("", true, "cu{cuda_nodot}.rebuild", kSharedTag, false);
  ASSERT_OK(publisher->RunOnce().status());
  auto row = Rows(second)["github/asset"];
  EXPECT_EQ(row.state, store::PublicationState::kFailed);
  EXPECT_EQ(row.attempts, 1);  // no retry can help
  for (const char* text :
       {"farm/wheels", "v1.0.0", kSecondWheel, "immutable", "bump the recipe's version"}) {
    EXPECT_NE(row.error.find(text), std::string::npos) << text << ": " << row.error;
  }
  EXPECT_EQ(row.error.find(kFirstWheel), std::string::npos) << row.error;
  EXPECT_EQ(gh.upload_count, 1);
  EXPECT_EQ(gh.locked_upload_calls, 0);
  // The first build again: everything is there, so it succeeds without an upload.
  ASSERT_EQ(store_->RequeuePublications(first, "github", false, clock_.NowUnixMs()).value(), 2);
  ASSERT_OK(publisher->RunOnce().status());
  ASSERT_OK(publisher->RunOnce().status());
  auto rows = Rows(first);
  EXPECT_EQ(rows["github/asset"].state, store::PublicationState::kPublished)
      << rows["github/asset"].error;
  EXPECT_EQ(rows["github/release"].state, store::PublicationState::kPublished)
      << rows["github/release"].error;
  EXPECT_EQ(rows["github/asset"].remote_url, "http://gh/dl/v1.0.0/" + std::string(kFirstWheel));
  EXPECT_EQ(gh.upload_count, 1);
  EXPECT_EQ(gh.locked_upload_calls, 0);
  EXPECT_EQ(gh.publish_count, 1);
}

}  // namespace
}  // namespace farm::publish

namespace farm::publish {
namespace {

TEST_F(OutboxTest, AWheelOverGitHubsLimitIsRefusedBeforeUploadAndTheHubStillGetsIt) {
  farm::v1::ValidationReport passed;
  passed.set_state(farm::v1::VALIDATION_PASSED);
  int64_t build = MakeSucceededBuild(passed.SerializeAsString());
  ScriptedGitHub gh;
  ScriptedHf hf;
  auto publisher = MakePublisher(false, &gh, &hf, /*github_max=*/100);
  ASSERT_OK(publisher->RunOnce().status());
  ASSERT_OK(publisher->RunOnce().status());
  auto rows = Rows(build);
  const store::PublicationRow& asset = rows["github/asset"];
  EXPECT_EQ(asset.state, store::PublicationState::kRefused);
  EXPECT_EQ(asset.error.find("too large for GitHub Releases: " + asset.filename + " is "), 0u)
      << asset.error;
  EXPECT_NE(asset.error.find("(100 bytes; farmd's --github-max-asset-bytes)"), std::string::npos)
      << asset.error;
  EXPECT_NE(asset.error.find("Nothing was uploaded"), std::string::npos);
  EXPECT_EQ(gh.upload_count, 0);
  EXPECT_TRUE(gh.releases.empty());  // not even the draft was asked for
  EXPECT_EQ(rows["hf/file"].state, store::PublicationState::kPublished);
  // Its only wheel refused, the build makes no release, and says why.
  EXPECT_EQ(rows["github/release"].state, store::PublicationState::kRefused);
  EXPECT_EQ(gh.publish_count, 0);
  // Nothing is retried: another pass changes nothing.
  ASSERT_OK(publisher->RunOnce().status());
  EXPECT_EQ(Rows(build)["github/asset"].attempts, asset.attempts);
}

TEST_F(OutboxTest, TheServicesOwnSizeRefusalIsARefusalToo) {
  farm::v1::ValidationReport passed;
  passed.set_state(farm::v1::VALIDATION_PASSED);
  int64_t build = MakeSucceededBuild(passed.SerializeAsString());
  ScriptedGitHub gh;
  gh.upload_error = Status(StatusCode::kOutOfRange,
                           "too large for GitHub Releases: upload asset x.whl: HTTP 422: size "
                           "must be less than or equal to 2147483648");
  ScriptedHf hf;
  auto publisher = MakePublisher(false, &gh, &hf);
  ASSERT_OK(publisher->RunOnce().status());
  auto rows = Rows(build);
  EXPECT_EQ(rows["github/asset"].state, store::PublicationState::kRefused);
  EXPECT_EQ(rows["github/asset"].attempts, 1);
  EXPECT_NE(rows["github/asset"].error.find("size must be less than"), std::string::npos);
}

TEST(ReleaseWaitReasonTest, ARefusedAssetDoesNotHoldTheRelease) {
  store::PublicationRow fine{
      .target = "github", .kind = "asset", .state = store::PublicationState::kUploaded};
  store::PublicationRow big{
      .target = "github", .kind = "asset", .state = store::PublicationState::kRefused};
  EXPECT_EQ(ReleaseWaitReason(store::kBuildSucceeded, {fine, big}, false), "");
  big.state = store::PublicationState::kFailed;
  EXPECT_EQ(ReleaseWaitReason(store::kBuildSucceeded, {fine, big}, false),
            "waiting: 1 asset(s) failed");
}

}  // namespace
}  // namespace farm::publish
