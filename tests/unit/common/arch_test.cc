#include "common/arch.h"

#include <gtest/gtest.h>

#include <utility>

#include "tests/support/test_util.h"

namespace farm::arch {
namespace {

Target T(int major, int minor, char suffix = '\0', bool ptx = false, bool sass = true) {
  return Target{major, minor, suffix, ptx, sass};
}

Target One(std::string_view list) {
  Result<std::vector<Target>> r = ParseArchList(list);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok() || r->size() != 1) return {};
  return r->front();
}

std::string Reason(const Status& s) { return s.ok() ? "OK" : s.message(); }

std::string CcList(const std::vector<Version>& ccs) {
  std::string out;
  for (const Version& v : ccs) out += (out.empty() ? "" : " ") + v.ToString();
  return out;
}

Version V(int major, int minor) { return {major, minor}; }

TEST(ArchParseTest, SemicolonAndSpaceSeparatedLists) {
  Result<std::vector<Target>> r = ParseArchList("9.0;12.0a;12.1a");
  ASSERT_OK(r.status());
  EXPECT_EQ(r.value(), (std::vector<Target>{T(9, 0), T(12, 0, 'a'), T(12, 1, 'a')}));
  r = ParseArchList("  8.0 8.6+PTX\t10.0f ; ");
  ASSERT_OK(r.status());
  EXPECT_EQ(r.value(), (std::vector<Target>{T(8, 0), T(8, 6, '\0', true), T(10, 0, 'f')}));
}

TEST(ArchParseTest, SmAndComputeForms) {
  EXPECT_EQ(One("sm_90a"), T(9, 0, 'a'));
  EXPECT_EQ(One("sm_120"), T(12, 0));
  EXPECT_EQ(One("compute_90"), T(9, 0, '\0', true, false));
  EXPECT_EQ(One("compute_121a"), T(12, 1, 'a', true, false));
  EXPECT_EQ(One("sm_86+PTX"), T(8, 6, '\0', true));
}

TEST(ArchParseTest, DuplicatesMergeIntoOneTarget) {
  Result<std::vector<Target>> r = ParseArchList("sm_90;9.0;compute_90;12.0a");
  ASSERT_OK(r.status());
  EXPECT_EQ(r.value(), (std::vector<Target>{T(9, 0, '\0', true), T(12, 0, 'a')}));
  EXPECT_EQ(FormatArchList(r.value()), "9.0+PTX;12.0a");
}

TEST(ArchParseTest, GarbageIsRejectedWithTheEntry) {
  Result<std::vector<Target>> r = ParseArchList("9.0;9.x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "invalid arch list entry \"9.x\" in \"9.0;9.x\": expected N.M with an optional a or "
            "f suffix and +PTX (\"9.0\", \"12.0a\", \"8.6+PTX\"), sm_NN or compute_NN");
  for (std::string_view bad :
       {"90", "sm_", "sm_9", "9.0b", "9.0+ptx", "compute_9000", "9.00", ".0", "Hopper", "12.1aa"}) {
    EXPECT_FALSE(ParseArchList(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseArchList(" ; ").status().message(), "empty arch list");
  EXPECT_EQ(ParseArchList("").status().message(), "empty arch list");
}

TEST(ArchParseTest, UnknownCcAndBadSuffixesAreRejected) {
  EXPECT_EQ(ParseArchList("9.5").status().message(),
            "unknown compute capability 9.5 in arch list entry \"9.5\" (known: 3.5, 3.7, 5.0, "
            "5.2, 5.3, 6.0, 6.1, 6.2, 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 10.1, 10.3, "
            "11.0, 12.0, 12.1)");
  EXPECT_EQ(ParseArchList("8.6a").status().message(),
            "arch list entry \"8.6a\": the 'a' suffix needs compute capability >= 9.0");
  EXPECT_EQ(ParseArchList("9.0f").status().message(),
            "arch list entry \"9.0f\": the 'f' suffix needs compute capability >= 10.0");
}

TEST(ArchNamesTest, SassComputeAndGencode) {
  EXPECT_EQ(SassName(T(12, 0, 'a')), "sm_120a");
  EXPECT_EQ(ComputeName(T(12, 0, 'a')), "compute_120a");
  EXPECT_EQ(SassName(T(8, 9)), "sm_89");
  EXPECT_EQ(GencodeFlags(T(9, 0, 'a')),
            (std::vector<std::string>{"-gencode=arch=compute_90a,code=sm_90a"}));
  EXPECT_EQ(GencodeFlags(T(8, 6, '\0', true)),
            (std::vector<std::string>{"-gencode=arch=compute_86,code=sm_86",
                                      "-gencode=arch=compute_86,code=compute_86"}));
  EXPECT_EQ(GencodeFlags(One("compute_90")),
            (std::vector<std::string>{"-gencode=arch=compute_90,code=compute_90"}));
  EXPECT_EQ(T(10, 0, 'f').ToString(), "10.0f");
  EXPECT_EQ(One("compute_90").ToString(), "compute_90");
}

TEST(ArchCudaTest, MinimumToolkitTable) {
  EXPECT_EQ(MinCuda(T(7, 5)), V(11, 8));
  EXPECT_EQ(MinCuda(T(8, 0)), V(11, 8));
  EXPECT_EQ(MinCuda(T(8, 6)), V(11, 8));
  EXPECT_EQ(MinCuda(T(8, 7)), V(11, 8));
  EXPECT_EQ(MinCuda(T(8, 9)), V(12, 4));
  EXPECT_EQ(MinCuda(T(9, 0, 'a')), V(12, 3));
  EXPECT_EQ(MinCuda(T(10, 0)), V(12, 8));
  EXPECT_EQ(MinCuda(T(12, 0, 'a')), V(12, 8));
  EXPECT_EQ(MinCuda(T(10, 3)), V(12, 9));
  EXPECT_EQ(MinCuda(T(12, 1, 'a')), V(12, 9));
  EXPECT_EQ(MinCuda(T(10, 0, 'f')), V(12, 9));
  EXPECT_EQ(MinCuda(T(12, 0, 'f')), V(12, 9));
  EXPECT_EQ(MinCuda(T(11, 0)), V(13, 0));
}

TEST(ArchCudaTest, ReasonsNameTheTargetAndTheToolkit) {
  EXPECT_EQ(Reason(CheckCuda(T(12, 1, 'a'), V(12, 8))), "sm_121a needs CUDA >= 12.9");
  EXPECT_EQ(Reason(CheckCuda(T(12, 1, 'a'), V(12, 9))), "OK");
  EXPECT_EQ(Reason(CheckCuda(T(8, 9), V(12, 3))), "sm_89 needs CUDA >= 12.4");
  EXPECT_EQ(Reason(CheckCuda(T(9, 0), V(12, 2))), "sm_90 needs CUDA >= 12.3");
  EXPECT_EQ(Reason(CheckCuda(T(10, 0, 'f'), V(12, 8))), "sm_100f needs CUDA >= 12.9");
  EXPECT_EQ(Reason(CheckCuda(T(11, 0), V(12, 9))), "sm_110 needs CUDA >= 13.0");
  EXPECT_EQ(Reason(CheckCuda(One("compute_121a"), V(12, 8))), "compute_121a needs CUDA >= 12.9");
  EXPECT_EQ(Reason(CheckCuda(T(7, 0), V(13, 0))),
            "sm_70 is not supported by CUDA 13.0 (CUDA 13.0 dropped sm_50..sm_72)");
  EXPECT_EQ(Reason(CheckCuda(T(5, 0), V(13, 1))),
            "sm_50 is not supported by CUDA 13.1 (CUDA 13.0 dropped sm_50..sm_72)");
  EXPECT_EQ(Reason(CheckCuda(T(7, 2), V(12, 9))), "OK");
  EXPECT_EQ(Reason(CheckCuda(T(7, 5), V(13, 0))), "OK");
  EXPECT_EQ(Reason(CheckCuda(T(10, 1), V(13, 0))),
            "sm_101 is not supported by CUDA 13.0 (CUDA 13.0 renamed sm_101 to sm_110)");
  Result<std::vector<Target>> list = ParseArchList("9.0;12.0a;12.1a");
  ASSERT_OK(list.status());
  EXPECT_EQ(Reason(CheckCuda(list.value(), V(12, 8))), "sm_121a needs CUDA >= 12.9");
  EXPECT_EQ(Reason(CheckCuda(list.value(), V(13, 0))), "OK");
}

TEST(ArchLoadTest, ArchSpecificSassLoadsOnlyOnItsOwnCc) {
  Image sm120a{Image::Kind::kSass, 12, 0, 'a'};
  EXPECT_TRUE(CanLoad(sm120a, V(12, 0)));
  EXPECT_FALSE(CanLoad(sm120a, V(12, 1)));  // GB10 cannot run sm_120a
  EXPECT_FALSE(CanLoad({Image::Kind::kSass, 9, 0, 'a'}, V(10, 0)));
}

TEST(ArchLoadTest, PlainAndFamilySassLoadOnLaterMinorsOfTheSameMajor) {
  Image sm120{Image::Kind::kSass, 12, 0, '\0'};
  EXPECT_TRUE(CanLoad(sm120, V(12, 1)));
  EXPECT_FALSE(CanLoad(sm120, V(11, 0)));
  EXPECT_FALSE(CanLoad({Image::Kind::kSass, 9, 0, '\0'}, V(10, 0)));
  EXPECT_FALSE(CanLoad({Image::Kind::kSass, 8, 6, '\0'}, V(8, 0)));
  Image sm100f{Image::Kind::kSass, 10, 0, 'f'};
  EXPECT_TRUE(CanLoad(sm100f, V(10, 0)));
  EXPECT_TRUE(CanLoad(sm100f, V(10, 3)));
  EXPECT_FALSE(CanLoad(sm100f, V(12, 0)));
  EXPECT_FALSE(CanLoad({Image::Kind::kSass, 10, 3, 'f'}, V(10, 0)));
}

TEST(ArchLoadTest, PtxJitsForwardUnlessArchOrFamilySpecific) {
  Image compute90{Image::Kind::kPtx, 9, 0, '\0'};
  EXPECT_TRUE(CanLoad(compute90, V(12, 0)));
  EXPECT_TRUE(CanLoad(compute90, V(9, 0)));
  EXPECT_FALSE(CanLoad(compute90, V(8, 9)));
  EXPECT_FALSE(CanLoad({Image::Kind::kPtx, 12, 0, 'a'}, V(12, 1)));
  EXPECT_TRUE(CanLoad({Image::Kind::kPtx, 12, 0, 'f'}, V(12, 1)));
  EXPECT_FALSE(CanLoad({Image::Kind::kPtx, 10, 0, 'f'}, V(11, 0)));
}

TEST(ArchLoadTest, ParseImageNames) {
  Result<Image> image = ParseImage("sm_121a");
  ASSERT_OK(image.status());
  EXPECT_EQ(image.value(), (Image{Image::Kind::kSass, 12, 1, 'a'}));
  image = ParseImage("compute_120");
  ASSERT_OK(image.status());
  EXPECT_EQ(image.value(), (Image{Image::Kind::kPtx, 12, 0, '\0'}));
  EXPECT_EQ(image->ToString(), "compute_120");
  EXPECT_FALSE(ParseImage("9.0").ok());
  EXPECT_FALSE(ParseImage("sm_x0").ok());
}

TEST(ArchRunsOnTest, KnownCcsAndWhatAListRunsOn) {
  ASSERT_EQ(KnownCcs().size(), 11u);
  EXPECT_EQ(KnownCcs().front().cc, V(7, 5));
  EXPECT_EQ(KnownCcs().back().cc, V(12, 1));
  EXPECT_EQ(GpusOf(V(9, 0)), "H100, H200, GH200");
  EXPECT_EQ(GpusOf(V(9, 5)), "");
  auto runs_on = [](std::string_view list) {
    Result<std::vector<Target>> r = ParseArchList(list);
    return r.ok() ? CcList(RunsOn(r.value())) : r.status().message();
  };
  constexpr std::pair<const char*, std::string_view> kCases[] = {
      {"9.0;12.0a;12.1a", "9.0 12.0 12.1"},
      {"9.0a;12.0a", "9.0 12.0"},
      {"12.0", "12.0 12.1"},
      {"8.0;8.6+PTX", "8.0 8.6 8.7 8.9 9.0 10.0 10.3 11.0 12.0 12.1"},
      {"10.0f", "10.0 10.3"},
      {"compute_90", "9.0 10.0 10.3 11.0 12.0 12.1"},
  };
  for (const auto& [list, ccs] : kCases) EXPECT_EQ(runs_on(list), ccs) << list;
}

TEST(ArchTorchTest, TorchCudaTable) {
  EXPECT_EQ(Reason(CheckTorchCuda("", "13.0")), "OK");
  EXPECT_EQ(Reason(CheckTorchCuda("2.8", "12.9")), "OK");
  EXPECT_EQ(Reason(CheckTorchCuda("2.8.0+cu128", "12.8")), "OK");
  EXPECT_EQ(Reason(CheckTorchCuda("2.11", "13.0")), "OK");
  EXPECT_EQ(Reason(CheckTorchCuda("2.6", "13.0")),
            "torch 2.6 is not released for CUDA 13.0 (torch 2.6 ships for CUDA 11.8, 12.4, 12.6)");
  EXPECT_EQ(Reason(CheckTorchCuda("2.9", "12.9")),
            "torch 2.9 is not released for CUDA 12.9 (torch 2.9 ships for CUDA 12.6, 12.8, 13.0)");
  EXPECT_EQ(Reason(CheckTorchCuda("2.12", "13.0")),
            "torch 2.12 is not in the torch/CUDA table (known: 2.6 .. 2.11)");
  EXPECT_EQ(Reason(CheckTorchCuda("latest", "13.0")),
            "invalid version \"latest\": expected MAJOR.MINOR such as \"12.8\"");
  ASSERT_EQ(TorchReleases().size(), 6u);
}

TEST(ArchVersionTest, ParseAndCompare) {
  Result<Version> v = ParseVersion("12.8.1");
  ASSERT_OK(v.status());
  EXPECT_EQ(v.value(), V(12, 8));
  EXPECT_LT(V(12, 9), V(13, 0));
  EXPECT_LT(V(9, 0), V(12, 0));
  for (std::string_view bad : {"13", "12.", "x.y", "12.8.x", "-1.0", ""}) {
    EXPECT_FALSE(ParseVersion(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace farm::arch
