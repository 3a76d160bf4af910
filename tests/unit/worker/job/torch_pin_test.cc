#include "worker/job/torch_pin.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/wheel/inspect.h"
#include "common/wheel/metadata/requires_dist.h"
#include "common/wheel/wheel_rewrite.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/wheel_builder.h"
#include "worker/job/wheel_label.h"

namespace farm::agent {
namespace {

farm::v1::Capabilities Caps() {
  farm::v1::Capabilities caps;
  auto* plain = caps.add_pythons();
  plain->set_path("/usr/bin/python3.11");
  plain->set_version("3.11");
  auto* with_torch = caps.add_pythons();
  with_torch->set_path("/opt/torch/bin/python3");
  with_torch->set_version("3.12");
  with_torch->set_torch_version("2.11.0+cu130");
  auto* nightly = caps.add_pythons();
  nightly->set_path("/opt/nightly/bin/python3");
  nightly->set_version("3.13");
  nightly->set_torch_version("2.10.0.dev20250801+cu128");
  return caps;
}

farm::v1::JobAssignment Job(const std::string& python, const std::string& torch) {
  farm::v1::JobAssignment job;
  job.mutable_cell()->set_python(python);
  job.mutable_cell()->set_torch(torch);
  job.mutable_cell()->set_cuda("13.0");
  job.mutable_recipe()->set_name("attn-example");
  return job;
}

TEST(TorchRequirementForJobTest, ComesFromTheTorchTheBuildInterpreterReallyHas) {
  EXPECT_EQ(TorchRequirementForJob(Job("3.12", "2.11"), Caps()).value(), "torch==2.11.*");
  EXPECT_EQ(TorchRequirementForJob(Job("3.13", "2.10"), Caps()).value(),
            "torch==2.10.0.dev20250801");
  farm::v1::JobAssignment exact = Job("3.12", "2.11");
  exact.mutable_recipe()->mutable_torch_abi()->set_exact_pin(true);
  EXPECT_EQ(TorchRequirementForJob(exact, Caps()).value(), "torch==2.11.0");
  // No torch in the cell: the package does not build against torch; nothing is required.
  EXPECT_EQ(TorchRequirementForJob(Job("3.12", ""), Caps()).value(), "");
  farm::v1::JobAssignment stable = Job("3.12", "2.11");
  stable.mutable_recipe()->mutable_torch_abi()->set_stable_floor("2.9");
  EXPECT_EQ(TorchRequirementForJob(stable, Caps()).value(), "torch>=2.9");
  EXPECT_EQ(TorchRequirementForJob(Job("3.12", "2.8"), Caps()).status().code(),
            StatusCode::kNotFound);
}

TEST(TorchRequirementForJobTest, AProvisionedBuildNamesTheTorchOfItsEnvironment) {
  // No interpreter of this worker has Python 3.11 with torch 2.8: the environment has.
  farm::v1::JobAssignment job = Job("3.11", "2.8");
  EXPECT_EQ(TorchRequirementForJob(job, Caps()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(TorchRequirementForJob(job, Caps(), "2.8.0+cu128").value(), "torch==2.8.*");
  job.mutable_recipe()->mutable_torch_abi()->set_exact_pin(true);
  EXPECT_EQ(TorchRequirementForJob(job, Caps(), "2.8.0+cu128").value(), "torch==2.8.0");
}

TEST(LabelWheelForJobTest, PinsTheTorchOfTheBuildAfterTheLabel) {
  farm::testing::ScopedTempDir dir;
  wheel::testing::WheelSpec spec;  // attn_example 1.0.0+cu130 everywhere, no requirement
  auto path = wheel::testing::WriteWheel(dir.path(), spec);
  ASSERT_OK(path.status());
  farm::v1::ArtifactHeader header;
  header.set_filename(std::filesystem::path(*path).filename().string());
  farm::v1::JobAssignment job = Job("3.12", "2.11");
  job.mutable_recipe()->mutable_publish()->set_local_version_template("cu{cuda_nodot}");
  // The label is already there; only the requirement changes the wheel.
  auto labelled = LabelWheelForJob(job, *path, header, dir.path() + "/labelled", "torch==2.11.*");
  ASSERT_OK(labelled.status());
  EXPECT_TRUE(labelled->rewritten);
  EXPECT_EQ(labelled->requirement, "torch==2.11.*");
  EXPECT_EQ(labelled->path, dir.path() + "/labelled/" + header.filename());
  EXPECT_EQ(labelled->header.filename(), header.filename());
  EXPECT_EQ(labelled->header.sha256(), Sha256FileHex(labelled->path).value());
  auto info = wheel::ReadDistInfoText(labelled->path);
  ASSERT_OK(info.status());
  EXPECT_NE(info->metadata.find("Requires-Dist: torch==2.11.*\n"), std::string::npos);
  auto report = wheel::InspectWheel(labelled->path, {});
  ASSERT_OK(report.status());
  EXPECT_TRUE(report->ok()) << report->problems[0].ToString();
  EXPECT_EQ(wheel::RequiresDistFor(report->requires_dist, "torch"),
            std::vector<std::string>{"torch==2.11.*"});

  // A new label and the pin: one wheel carrying both.
  job.mutable_recipe()->mutable_publish()->set_local_version_template("cu{cuda_nodot}torch{torch}");
  auto both = LabelWheelForJob(job, *path, header, dir.path() + "/both", "torch==2.11.*");
  ASSERT_OK(both.status());
  EXPECT_EQ(both->header.filename(),
            "attn_example-1.0.0+cu130torch2.11-cp312-cp312-linux_x86_64.whl");
  auto info2 = wheel::ReadDistInfoText(both->path);
  ASSERT_OK(info2.status());
  EXPECT_NE(info2->metadata.find("Version: 1.0.0+cu130torch2.11\n"), std::string::npos);
  EXPECT_NE(info2->metadata.find("Requires-Dist: torch==2.11.*\n"), std::string::npos);

  // No requirement and the label in place: the wheel is left alone.
  job.mutable_recipe()->mutable_publish()->set_local_version_template("cu{cuda_nodot}");
  auto same = LabelWheelForJob(job, *path, header, dir.path() + "/same", "");
  ASSERT_OK(same.status());
  EXPECT_FALSE(same->rewritten);
  EXPECT_EQ(same->path, *path);
}

TEST(LabelWheelForJobTest, AHostileMetadataFailsTheLabelling) {
  farm::testing::ScopedTempDir dir;
  wheel::testing::WheelSpec spec;
  spec.metadata = "Metadata-Version: 2.1\nName: attn-example\nName: torch\nVersion: 1.0.0+cu130\n";
  auto path = wheel::testing::WriteWheel(dir.path(), spec);
  ASSERT_OK(path.status());
  farm::v1::ArtifactHeader header;
  farm::v1::JobAssignment job = Job("3.12", "2.11");
  job.mutable_recipe()->mutable_publish()->set_local_version_template("cu{cuda_nodot}");
  auto labelled = LabelWheelForJob(job, *path, header, dir.path() + "/out", "torch==2.11.*");
  EXPECT_EQ(labelled.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::agent
