// The torch requirement read from METADATA and matched with PEP 440 specifiers.
#include "daemon/http/index/torch_requirement.h"

#include <gtest/gtest.h>

namespace farm::http {
namespace {

upstream::ReleaseVersion V(const char* text) {
  auto v = upstream::ParseReleaseVersion(text);
  EXPECT_TRUE(v.has_value()) << text;
  return v.value_or(upstream::ReleaseVersion{});
}

std::string Md(const std::string& rows) {
  return "Metadata-Version: 2.1\nName: pkg\nVersion: 0.1.0\n" + rows + "\nDescription body\n";
}

TEST(TorchRequirementTest, MinorPinAdmitsEveryReleaseOfThatMinorAndLocalLabels) {
  TorchRequirement r = TorchRequirementOf(Md("Requires-Dist: torch==2.8.*\n"));
  ASSERT_TRUE(r.present && r.valid);
  EXPECT_EQ(r.text, "torch==2.8.*");
  EXPECT_TRUE(AdmitsTorch(r, V("2.8.0")));
  EXPECT_TRUE(AdmitsTorch(r, V("2.8.1+cu128")));
  EXPECT_FALSE(AdmitsTorch(r, V("2.9.0")));
  // Numbers, not strings: 2.80 is not 2.8.x, and 2.10 is not 2.1.
  EXPECT_FALSE(AdmitsTorch(r, V("2.80.0")));
  EXPECT_FALSE(AdmitsTorch(TorchRequirementOf(Md("Requires-Dist: torch==2.1.*\n")), V("2.10.0")));
}

TEST(TorchRequirementTest, FloorAdmitsNewerMinorsNumerically) {
  TorchRequirement r = TorchRequirementOf(Md("Requires-Dist: torch>=2.9\n"));
  EXPECT_EQ(r.text, "torch>=2.9");
  EXPECT_TRUE(AdmitsTorch(r, V("2.9.0")));
  EXPECT_TRUE(AdmitsTorch(r, V("2.10.0+cu130")));
  EXPECT_FALSE(AdmitsTorch(r, V("2.8.1")));
  ASSERT_EQ(r.named.size(), 1u);
  EXPECT_EQ(r.named[0].Public(), "2.9");
}

TEST(TorchRequirementTest, ExactPinsRangesAndSeveralRowsAllMustHold) {
  TorchRequirement exact = TorchRequirementOf(Md("Requires-Dist: torch==2.8.0\n"));
  EXPECT_TRUE(AdmitsTorch(exact, V("2.8.0+cu128")));
  EXPECT_FALSE(AdmitsTorch(exact, V("2.8.1")));
  TorchRequirement range = TorchRequirementOf(Md("Requires-Dist: torch (>=2.8, <2.10)\n"));
  EXPECT_EQ(range.text, "torch>=2.8, <2.10");
  EXPECT_TRUE(AdmitsTorch(range, V("2.9.1")));
  EXPECT_FALSE(AdmitsTorch(range, V("2.10.0")));
  TorchRequirement two =
      TorchRequirementOf(Md("Requires-Dist: Torch[opt]>=2.8\nRequires-Dist: torch!=2.9.*\n"));
  EXPECT_EQ(two.text, "torch>=2.8,!=2.9.*");
  EXPECT_TRUE(AdmitsTorch(two, V("2.8.0")));
  EXPECT_FALSE(AdmitsTorch(two, V("2.9.0")));
  TorchRequirement compat = TorchRequirementOf(Md("Requires-Dist: torch~=2.8.1\n"));
  EXPECT_TRUE(AdmitsTorch(compat, V("2.8.3")));
  EXPECT_FALSE(AdmitsTorch(compat, V("2.9.0")));
}

TEST(TorchRequirementTest, NoTorchRowAdmitsEveryTorch) {
  TorchRequirement r = TorchRequirementOf(
      Md("Requires-Dist: numpy>=1\nRequires-Dist: torchvision==0.23.*\nRequires-Dist: "
         "torch-tensorrt\n"));
  EXPECT_FALSE(r.present);
  EXPECT_TRUE(AdmitsTorch(r, V("2.8.0")));
  // A row only for an extra does not bind a plain install.
  TorchRequirement extra = TorchRequirementOf(Md("Requires-Dist: torch==2.8.*; extra == \"t\"\n"));
  EXPECT_FALSE(extra.present);
  // Other markers apply (the wheel may need that torch where it installs).
  TorchRequirement marker =
      TorchRequirementOf(Md("Requires-Dist: torch==2.8.*; platform_system == \"Linux\"\n"));
  EXPECT_TRUE(marker.present);
  EXPECT_FALSE(AdmitsTorch(marker, V("2.9.0")));
  // "extra" inside a quoted value is not the extra marker.
  TorchRequirement quoted =
      TorchRequirementOf(Md("Requires-Dist: torch==2.8.*; platform_release == \"extra\"\n"));
  EXPECT_TRUE(quoted.present);
}

TEST(TorchRequirementTest, RowsInTheBodyAreNotHeaders) {
  TorchRequirement r = TorchRequirementOf(
      "Metadata-Version: 2.1\r\nName: pkg\r\n\r\nRequires-Dist: torch==2.8.*\r\n");
  EXPECT_FALSE(r.present);
}

TEST(TorchRequirementTest, AnUnparsableRequirementAdmitsNoTorch) {
  for (const char* row : {"torch @ https://example.org/torch.whl", "torch===2.8.0", "torch>=banana",
                          "torch==2.8.0+cu128", "torch (>=2.8", "torch[opt>=2.8", "torch>=2.8,,",
                          "torch~=2", "torch[a b]>=2.8", "torch[a,,b]>=2.8", "torch[<x>]>=2.8"}) {
    TorchRequirement r = TorchRequirementOf(Md(std::string("Requires-Dist: ") + row + "\n"));
    EXPECT_TRUE(r.present) << row;
    EXPECT_FALSE(r.valid) << row;
    EXPECT_FALSE(AdmitsTorch(r, V("2.8.0"))) << row;
  }
  std::string many;
  for (int i = 0; i < 40; ++i) many += "Requires-Dist: torch>=2.0\n";
  EXPECT_FALSE(TorchRequirementOf(Md(many)).valid);
}

TEST(TorchRequirementTest, AnyRowWithoutVersionAdmitsEveryTorch) {
  TorchRequirement r = TorchRequirementOf(Md("Requires-Dist: torch\n"));
  EXPECT_TRUE(r.present && r.valid);
  EXPECT_EQ(r.text, "torch");
  EXPECT_TRUE(AdmitsTorch(r, V("2.10.0")));
}

}  // namespace
}  // namespace farm::http
