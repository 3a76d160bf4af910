#include "daemon/sched/placement.h"

#include <gtest/gtest.h>

namespace farm::sched {
namespace {

farm::v1::Capabilities Worker() {
  farm::v1::Capabilities caps;
  caps.set_platform("linux_x86_64");
  auto* py = caps.add_pythons();
  py->set_version("3.11");
  auto* py12 = caps.add_pythons();
  py12->set_version("3.12");
  py12->set_torch_version("2.8.0+cu128");
  caps.add_toolkits()->set_version("13.0");
  return caps;
}

farm::v1::MatrixCell Cell(std::string python, std::string torch, std::string cuda,
                          std::string platform = "linux_x86_64") {
  farm::v1::MatrixCell c;
  c.set_python(python);
  c.set_torch(torch);
  c.set_cuda(cuda);
  c.set_platform(platform);
  return c;
}

TEST(PlacementTest, MatchingWorkerHasNoMissingRequirement) {
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0"), Worker()), "");
  EXPECT_EQ(MissingRequirement(Cell("3.12", "2.8", ""), Worker()), "");
}

TEST(PlacementTest, NamesTheFirstMissingRequirement) {
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "13.0", "linux_aarch64"), Worker()),
            "platform linux_aarch64 needed (has linux_x86_64)");
  EXPECT_EQ(MissingRequirement(Cell("3.13", "", ""), Worker()),
            "no Python 3.13 (has 3.11, 3.12+torch2.8.0+cu128)");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "2.8", ""), Worker()),
            "no Python 3.11 with torch 2.8 (has 3.11, 3.12+torch2.8.0+cu128)");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", "12.8"), Worker()),
            "no CUDA toolkit 12.8 (has 13.0)");
}

TEST(PlacementTest, QuarantinedWorkerTakesNothing) {
  auto caps = Worker();
  caps.set_probe_error("probe kernel gave wrong results");
  EXPECT_EQ(MissingRequirement(Cell("3.11", "", ""), caps),
            "quarantined: probe kernel gave wrong results");
}

}  // namespace
}  // namespace farm::sched
