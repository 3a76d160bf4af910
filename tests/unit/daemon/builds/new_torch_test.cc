// A new torch proven without a rebuild: which releases a watch's items name, which cells
// of a stable-ABI wheel a release is proven in, and the recipe its environment comes from.
#include "daemon/builds/new_torch.h"

#include <gtest/gtest.h>

namespace farm::builds {
namespace {

farm::v1::MatrixCell TorchCell(const std::string& python, const std::string& torch,
                               const std::string& cuda) {
  farm::v1::MatrixCell c;
  c.set_python(python);
  c.set_torch(torch);
  c.set_cuda(cuda);
  return c;
}

// A stable-ABI build job validated in `torches` x `pythons` (abi3: one group of Pythons).
store::JobRow StableJob(const std::vector<std::string>& torches,
                        const std::vector<std::string>& pythons) {
  farm::v1::JobNeeds needs;
  for (const auto& t : torches) {
    for (const auto& p : pythons) *needs.add_validate_in() = TorchCell(p, t, "13.0");
  }
  store::JobRow job;
  job.id = 7;
  job.cell = TorchCell(pythons.front(), torches.back(), "13.0").SerializeAsString();
  job.needs = needs.SerializeAsString();
  return job;
}

farm::v1::Recipe Stable(const std::string& floor) {
  farm::v1::Recipe r;
  r.set_name("abi");
  r.mutable_torch_abi()->set_stable_floor(floor);
  (*r.mutable_environment()->mutable_torch())["2.10"] = "2.10.0";
  return r;
}

TEST(NewTorchTest, TheReleasesOfTorchItemsOnly) {
  std::vector<NewTorch> got = NewTorchesOf({{.key = "torch cu130 2.12.0", .version = "2.12.0"},
                                            {.key = "tag v1.2", .ref = "v1.2"},
                                            {.key = "cuda 13.1.0", .version = "13.1.0"},
                                            {.key = "torch cu128", .version = "2.12.0"}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].version, "2.12.0");
  EXPECT_EQ(got[0].variant, "cu130");
}

TEST(NewTorchTest, OneCellPerGroupOfTheWheelWithTheNewMinor) {
  store::JobRow job = StableJob({"2.9", "2.10"}, {"3.11", "3.12"});
  auto cells = NewTorchCells(Stable("2.9"), job, {"2.12.0", "cu130"});
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].torch(), "2.12");
  EXPECT_EQ(cells[0].python(), "3.11");
  EXPECT_EQ(cells[1].python(), "3.12");
  EXPECT_EQ(cells[1].cuda(), "13.0");
}

TEST(NewTorchTest, NoCellWhereTheWheelCannotServeOrWasProvenAlready) {
  store::JobRow job = StableJob({"2.9", "2.10"}, {"3.11"});
  EXPECT_TRUE(NewTorchCells(Stable("2.11"), job, {"2.10.1", "cu130"}).empty());  // below floor
  EXPECT_TRUE(NewTorchCells(Stable("2.9"), job, {"2.12.0", "cu128"}).empty());   // other CUDA
  EXPECT_TRUE(NewTorchCells(Stable("2.9"), job, {"2.10.1", "cu130"}).empty());   // its minor
  EXPECT_TRUE(NewTorchCells(Stable(""), job, {"2.12.0", "cu130"}).empty());      // per-torch wheel
  EXPECT_TRUE(NewTorchCells(Stable("2.9"), job, {"not a version", "cu130"}).empty());
  EXPECT_TRUE(
      NewTorchCells(Stable("2.9"), StableJob({"2.9"}, {"3.11"}), {"2.12.0", "cu130"}).size() == 1u);
}

TEST(NewTorchTest, TheEnvironmentMapsTheNewMinorToTheRelease) {
  farm::v1::Recipe r = WithTorchRelease(Stable("2.9"), "2.12.0");
  EXPECT_EQ(r.environment().torch().at("2.12"), "2.12.0");
  EXPECT_EQ(r.environment().torch().at("2.10"), "2.10.0");
  farm::v1::Recipe installed = Stable("2.9");
  installed.clear_environment();  // a recipe without environment: stays without one
  EXPECT_FALSE(WithTorchRelease(installed, "2.12.0").has_environment());
}

}  // namespace
}  // namespace farm::builds
