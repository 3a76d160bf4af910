// A real SQLite store and blob store in a temporary directory, with a fake clock and a
// Router over them, plus helpers to add builds, run jobs and make wheels.
#ifndef FARM_TESTS_UNIT_DAEMON_HTTP_HTTP_FIXTURE_H_
#define FARM_TESTS_UNIT_DAEMON_HTTP_HTTP_FIXTURE_H_

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "daemon/builds/control.h"
#include "daemon/builds/schedule_control.h"
#include "daemon/http/router.h"
#include "tests/support/test_util.h"

namespace farm::http::testing {

class HttpFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  // Creates a build of `n` pending jobs (cuda 13.0, torch 2.8 unless given), submitted by
  // (owned by) the principal "test"; returns job ids.
  std::vector<int64_t> AddBuild(int n, const std::string& cuda = "13.0",
                                const std::string& torch = "2.8", int64_t* build_id = nullptr);
  // Leases the pending job `id` to worker "w1" at the fake clock's time.
  void Start(int64_t id);
  void Finish(int64_t id, int cause = store::kCauseCompleted);
  // Writes a wheel (a zip with <name>.dist-info/METADATA) into the blob store, attaches it
  // to job `id` with the validation state; returns its sha256.
  // `manifest` is a serialized farm.v1.ArchManifest ("" for none).
  std::string AddWheel(int64_t job_id, const std::string& filename, const std::string& metadata,
                       int validation_state, const std::string& manifest = "");
  // A build of one job of (cuda, torch) that ran, made the wheel `filename` (as AddWheel)
  // and finished; returns the wheel's sha256.
  std::string AddFinishedWheel(const std::string& cuda, const std::string& torch,
                               const std::string& filename, const std::string& metadata,
                               int validation_state, const std::string& manifest = "");
  // The same with the wheel's bytes given (a complete wheel, RECORD and all).
  std::string AddFinishedWheelFile(const std::string& cuda, const std::string& torch,
                                   const std::string& filename, const std::string& bytes,
                                   int validation_state, const std::string& manifest = "");
  std::string AddWheelBytes(int64_t job_id, const std::string& filename, const std::string& zip,
                            int validation_state, const std::string& manifest);
  Router MakeRouter(DashboardOptions options = {});
  Response Get(Router& r, const std::string& target, const std::string& accept = "");
  // The file names the PEP 691 page of `project` in `view` lists, in its order, without a
  // GPU view's placeholder; none when it does not answer 200.
  std::vector<std::string> ListedWheels(Router& r, const std::string& view,
                                        const std::string& project);
  static boost::json::value Json(const Response& r);

  farm::testing::ScopedTempDir dir_;
  farm::testing::FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::BlobStore> blobs_;
  std::unique_ptr<auth::TokenAuthority> auth_;
  std::unique_ptr<audit::AuditLog> audit_;
  std::unique_ptr<builds::Control> control_;
  // The schedule use cases MakeRouter hands the router: no runner (run-now answers 503
  // once the caller may run the schedule), no quotas.
  std::unique_ptr<builds::Submitter> schedule_submitter_;
  std::unique_ptr<builds::ScheduleControl> schedule_control_;
};

// A serialized farm.v1.ArchManifest of one sm_90 SASS image that runs on cc 9.0.
std::string Sm90Manifest();

// Builds a zip archive (via libarchive) holding `files` (name, content).
std::string MakeZip(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace farm::http::testing

#endif  // FARM_TESTS_UNIT_DAEMON_HTTP_HTTP_FIXTURE_H_
