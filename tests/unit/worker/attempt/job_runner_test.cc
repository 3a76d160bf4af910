#include "worker/attempt/job_runner.h"

#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include "common/archive/tree_packer.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

// Records what a job reports; every call succeeds like a healthy farmd.
class FakeFarm final : public FarmClient {
 public:
  Result<farm::v1::RegisterResponse> Register(const farm::v1::RegisterRequest&,
                                              const std::string&) override {
    return farm::v1::RegisterResponse();
  }
  void SetToken(const std::string&) override {}
  Result<farm::v1::HeartbeatResponse> Heartbeat(const farm::v1::HeartbeatRequest&) override {
    return farm::v1::HeartbeatResponse();
  }
  Result<farm::v1::AcquireJobResponse> AcquireJob(const farm::v1::AcquireJobRequest&) override {
    return farm::v1::AcquireJobResponse();
  }
  Result<int64_t> UploadLog(int64_t, int32_t,
                            const std::vector<farm::v1::LogLine>& lines) override {
    std::lock_guard lock(mu);
    for (const auto& l : lines) {
      if (l.seq() == static_cast<int64_t>(log.size()) + 1) log.push_back(l);
    }
    return static_cast<int64_t>(log.size());
  }
  Result<farm::v1::Artifact> UploadArtifact(const farm::v1::ArtifactHeader& header,
                                            const std::string& path) override {
    std::lock_guard lock(mu);
    if (upload_failures > 0) {
      --upload_failures;
      return Status::Unavailable("farmd restarting");
    }
    if (!upload_refusal.empty())
      return Status::PermissionDenied("UploadArtifact: " + upload_refusal);
    headers.push_back(header);
    contents.push_back(fs::ReadFile(path).value());
    return farm::v1::Artifact();
  }
  Result<farm::v1::CompleteJobResponse> CompleteJob(
      const farm::v1::CompleteJobRequest& req) override {
    std::lock_guard lock(mu);
    completions.push_back(req);
    return farm::v1::CompleteJobResponse();
  }
  Status DownloadSource(int64_t, int32_t, const farm::v1::SourceArchive&,
                        const std::string& path) override {
    FARM_ASSIGN_OR_RETURN(std::string bytes, fs::ReadFile(archive_file));
    return fs::WriteFileAtomic(path, bytes);
  }
  void CancelWaits() override {}
  void Reconnect() override {}

  std::string LogText() {
    std::lock_guard lock(mu);
    std::string out;
    for (const auto& l : log) out += std::to_string(l.stream()) + " " + l.text() + "\n";
    return out;
  }

  std::mutex mu;
  std::string archive_file;  // what DownloadSource hands out
  int upload_failures = 0;
  std::string upload_refusal;  // farmd's wheel check refuses every upload with this
  std::vector<farm::v1::LogLine> log;
  std::vector<farm::v1::ArtifactHeader> headers;
  std::vector<std::string> contents;
  std::vector<farm::v1::CompleteJobRequest> completions;
};

class FixedProbe final : public CapabilityProbe {
 public:
  farm::v1::Capabilities Probe() override { return {}; }
  int64_t AvailableMemoryBytes() override { return int64_t{16} << 30; }
};

class JobRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.path() + "/src";
    ASSERT_OK(fs::MakeDirs(src_));
    ASSERT_OK(fs::WriteFileAtomic(src_ + "/hello.txt", "hello\n"));
    // The source travels as farmctl packs it; the fake farmd hands the archive out.
    auto plan = archives::PlanTree(src_, {});
    ASSERT_OK(plan.status());
    std::string bytes;
    ASSERT_OK(archives::WriteTreeArchive(*plan, [&bytes](std::string_view piece) {
      bytes.append(piece);
      return Status::Ok();
    }));
    farm_.archive_file = dir_.path() + "/src.tar.zst";
    ASSERT_OK(fs::WriteFileAtomic(farm_.archive_file, bytes));
    archive_.set_sha256(Sha256Hex(bytes));
    archive_.set_size(static_cast<int64_t>(bytes.size()));
    archive_.set_origin("directory src (1 file)");
    auto* py = caps_.add_pythons();
    py->set_path("/usr/bin/python3");
    py->set_version("3.11");
    caps_.set_cpu_cores(2);
  }

  farm::v1::JobAssignment Job(const std::string& build) {
    farm::v1::JobAssignment job;
    job.set_job_id(11);
    job.set_attempt(1);
    job.set_build_id(3);
    job.mutable_recipe()->set_name("t");
    *job.mutable_recipe()->mutable_source()->mutable_archive() = archive_;
    job.mutable_recipe()->set_build_command(build);
    job.mutable_cell()->set_python("3.11");
    job.set_timeout_seconds(60);
    return job;
  }

  Outcome RunJob(const farm::v1::JobAssignment& job,
                 std::shared_ptr<JobControl> control = nullptr) {
    if (!control) control = std::make_shared<JobControl>();
    JobDeps deps{&farm_, &runner_, &executor_, &probe_, &RealClock(), hook_};
    JobSettings settings;
    settings.work_dir = dir_.path() + "/work";
    settings.caps = caps_;
    settings.worker_env = {{"PATH", "/usr/bin:/bin"},
                           {"HOME", dir_.path()},
                           {"FARM_ENROLL_TOKEN", "enroll-token-secret"}};
    settings.secrets = {"enroll-token-secret", "worker-token-secret"};
    return JobRunner(deps, settings, job, control).Run();
  }

  testing::ScopedTempDir dir_;
  std::string src_;
  farm::v1::SourceArchive archive_;
  farm::v1::Capabilities caps_;
  FakeFarm farm_;
  RealProcessRunner runner_;
  NativeExecutor executor_{runner_};
  FixedProbe probe_;
  WheelHook hook_;
};

TEST(DownloadTallyTest, EveryByteCountsAndDownloadsOfUnknownSizeSaySoRarely) {
  DownloadTally tally;
  using Phase = env::ProvisionPhase;
  EXPECT_EQ(tally.Add({Phase::kPackages, "resolving torch==2.8.0 on ..."}),
            std::optional<std::string>(""));
  // An index page without sizes: total unknown (-1), reported every 8 MiB by the
  // provisioner; the log says it at 8, 16, 32... MiB, not 113 times for 900 MB.
  int lines = 0;
  const int64_t mib = int64_t{1} << 20;
  for (int64_t done = mib; done <= 900 * mib; done += 8 * mib) {
    auto said = tally.Add({Phase::kPackages, "downloading torch-2.8.0.whl", done, -1});
    if (said) {
      ++lines;
      EXPECT_NE(said->find(" so far)"), std::string::npos) << *said;
    }
  }
  EXPECT_LE(lines, 9);
  EXPECT_GE(lines, 5);
  EXPECT_EQ(tally.bytes(), 897 * mib);  // the last report: 1 + 8 * 112 MiB
  // With sizes, each report says how far, and the bytes add up once.
  EXPECT_EQ(tally.Add({Phase::kPackages, "downloading pip.whl", 1'000'000, 2'000'000}),
            std::optional<std::string>(" (1.0 MB of 2.0 MB)"));
  tally.Add({Phase::kPackages, "downloading pip.whl", 2'000'000, 2'000'000});
  EXPECT_EQ(tally.bytes(), 897 * mib + 2'000'000);
}

TEST_F(JobRunnerTest, SuccessfulBuildUploadsTheWheelAndReportsCompleted) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  farm_.upload_failures = 1;  // farmd answers UNAVAILABLE once: the upload is retried
  std::vector<std::string> hooked;
  hook_ = [&](const farm::v1::JobAssignment&, const std::string& path, farm::v1::ArtifactHeader*) {
    hooked.push_back(path);
    return Status::Ok();
  };
  auto outcome =
      RunJob(Job("cat hello.txt; echo \"py=$FARM_PYTHON\"; env | sort > $TMPDIR/env.txt; "
                 "grep -c token $TMPDIR/env.txt || true; echo oops >&2; "
                 "printf 'wheel-bytes' > \"$FARM_WHEEL_DIR/t-0.1-py3-none-any.whl\""));
  EXPECT_EQ(outcome.cause, farm::v1::CAUSE_COMPLETED) << outcome.detail << "\n" << farm_.LogText();
  ASSERT_EQ(farm_.headers.size(), 1u);
  EXPECT_EQ(farm_.headers[0].filename(), "t-0.1-py3-none-any.whl");
  EXPECT_EQ(farm_.headers[0].size(), 11);
  EXPECT_EQ(farm_.headers[0].sha256(), Sha256Hex("wheel-bytes"));
  EXPECT_EQ(farm_.contents[0], "wheel-bytes");
  EXPECT_EQ(hooked.size(), 1u);
  ASSERT_EQ(farm_.completions.size(), 1u);
  const auto& done = farm_.completions[0];
  EXPECT_EQ(done.cause(), farm::v1::CAUSE_COMPLETED);
  EXPECT_EQ(done.exit_code(), 0);
  EXPECT_GT(done.peak_rss_bytes(), 0);
  EXPECT_EQ(done.last_log_seq(), static_cast<int64_t>(farm_.log.size()));
  std::string log = farm_.LogText();
  EXPECT_NE(log.find("3 farm: fetching source"), std::string::npos) << log;
  EXPECT_NE(log.find("1 hello"), std::string::npos) << log;
  EXPECT_NE(log.find("/venv/bin/python"), std::string::npos) << log;
  EXPECT_NE(log.find("2 oops"), std::string::npos) << log;
  EXPECT_NE(log.find("1 0\n"), std::string::npos) << "a token reached the build env:\n" << log;
  // The workspace and the worker's copies of its wheels are removed afterwards.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path() + "/work", ec)) {
    EXPECT_EQ(e.path().filename(), "outputs");
    EXPECT_TRUE(std::filesystem::is_empty(e.path(), ec)) << e.path();
  }
}

TEST_F(JobRunnerTest, FailingBuildNoWheelAndMissingPythonHaveTheirCauses) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  auto failed = RunJob(Job("echo compiling; exit 3"));
  EXPECT_EQ(failed.cause, farm::v1::CAUSE_BUILD_FAILED);
  EXPECT_EQ(failed.exit_code, 3);
  auto no_wheel = RunJob(Job("true"));
  EXPECT_EQ(no_wheel.cause, farm::v1::CAUSE_BUILD_FAILED);
  EXPECT_EQ(no_wheel.detail, "build produced no wheel");
  auto job = Job("true");
  job.mutable_cell()->set_python("3.99");
  auto no_python = RunJob(job);
  EXPECT_EQ(no_python.cause, farm::v1::CAUSE_INFRASTRUCTURE);
  EXPECT_NE(no_python.detail.find("no Python 3.99"), std::string::npos) << no_python.detail;
  auto patched = Job("true");
  auto* patch = patched.mutable_recipe()->add_patches();
  patch->set_name("patches/broken.diff");
  patch->set_content("--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-bye\n+x\n");
  auto bad_patch = RunJob(patched);
  EXPECT_EQ(bad_patch.cause, farm::v1::CAUSE_INFRASTRUCTURE);
  EXPECT_NE(bad_patch.detail.find("patches/broken.diff"), std::string::npos) << bad_patch.detail;
  ASSERT_EQ(farm_.completions.size(), 4u);
  EXPECT_EQ(farm_.completions[0].exit_code(), 3);
}

// farmd's own wheel check refusing a wheel (a project another principal owns) fails the
// attempt as a wheel check does, once, with farmd's reason in the log and the detail.
TEST_F(JobRunnerTest, AWheelFarmdRefusesFailsItsCheckWithFarmdsReason) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  farm_.upload_refusal =
      "alib-9.0-py3-none-any.whl: project \"alib\" belongs to alice: only alice or an admin "
      "may publish wheels of it";
  auto outcome =
      RunJob(Job("printf 'wheel-bytes' > \"$FARM_WHEEL_DIR/alib-9.0-py3-none-any.whl\""));
  EXPECT_EQ(outcome.cause, farm::v1::CAUSE_VALIDATION_FAILED) << outcome.detail;
  EXPECT_EQ(outcome.detail, "farmd's wheel check refused " + farm_.upload_refusal);
  EXPECT_NE(farm_.LogText().find("farm: error: farmd's wheel check refused alib-9.0-py3-none-any"
                                 ".whl: project \"alib\" belongs to alice"),
            std::string::npos)
      << farm_.LogText();
  EXPECT_TRUE(farm_.headers.empty());
}

// A build that leaves its wheel folder (or a wheel) as a link to a host path uploads nothing,
// fails as the build's fault, and the host's files are neither read into farmd nor changed.
TEST_F(JobRunnerTest, LinkedWheelOutputsAreRefusedAndTheHostIsUntouched) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  const std::string host = dir_.path() + "/host";
  ASSERT_OK(fs::MakeDirs(host));
  ASSERT_OK(fs::WriteFileAtomic(host + "/t-1.0-py3-none-any.whl", "host-only wheel"));
  auto folder = RunJob(Job("rm -rf \"$FARM_WHEEL_DIR\" && ln -s " + host + " \"$FARM_WHEEL_DIR\""));
  EXPECT_EQ(folder.cause, farm::v1::CAUSE_BUILD_FAILED);
  EXPECT_NE(folder.detail.find("the build's wheels are refused: wheels is a symbolic link"),
            std::string::npos)
      << folder.detail;
  auto wheel = RunJob(Job("ln -s " + host + "/t-1.0-py3-none-any.whl \"$FARM_WHEEL_DIR\"/"));
  EXPECT_EQ(wheel.cause, farm::v1::CAUSE_BUILD_FAILED);
  EXPECT_NE(wheel.detail.find("wheels/t-1.0-py3-none-any.whl is a symbolic link"),
            std::string::npos)
      << wheel.detail;
  auto fifo = RunJob(Job("mkfifo \"$FARM_WHEEL_DIR\"/t-1.0-py3-none-any.whl"));
  EXPECT_EQ(fifo.cause, farm::v1::CAUSE_BUILD_FAILED);
  EXPECT_NE(fifo.detail.find("is a FIFO"), std::string::npos) << fifo.detail;
  EXPECT_TRUE(farm_.headers.empty());
  EXPECT_EQ(*fs::ReadFile(host + "/t-1.0-py3-none-any.whl"), "host-only wheel");
}

TEST_F(JobRunnerTest, CancelAndTimeoutKillTheBuild) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  auto control = std::make_shared<JobControl>();
  std::thread canceller([&] {
    for (int i = 0; i < 600 && control->log_seq.load() < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    control->Stop(farm::v1::CAUSE_CANCELLED, "cancelled by farmd");
  });
  auto t0 = std::chrono::steady_clock::now();
  auto cancelled = RunJob(Job("echo started; sleep 1000 & wait"), control);
  canceller.join();
  EXPECT_EQ(cancelled.cause, farm::v1::CAUSE_CANCELLED) << farm_.LogText();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(40));

  auto job = Job("sleep 1000");
  job.set_timeout_seconds(1);
  auto timed_out = RunJob(job);
  EXPECT_EQ(timed_out.cause, farm::v1::CAUSE_TIMED_OUT);
  EXPECT_NE(timed_out.detail.find("1 s"), std::string::npos);
}

}  // namespace
}  // namespace farm::agent
