#include "daemon/publish/release_notes.h"

#include <gtest/gtest.h>

#include "daemon/publish/github_releases.h"
#include "daemon/publish/hf_hub.h"

namespace farm::publish {
namespace {

ReleaseNotesInput TwoWheels() {
  ReleaseNotesInput in;
  in.package = "sageattention";
  in.version = "2.2.0+cu128torch2.8";
  in.download_base_url = "https://github.com/o/r/releases/download/v2.2.0-build7";
  WheelNotesRow a;
  a.wheel = "sageattention-2.2.0+cu128torch2.8-cp312-cp312-linux_x86_64.whl";
  a.python = "3.12";
  a.torch = "2.8";
  a.cuda = "12.8";
  a.sass_archs = {"sm_90a", "sm_120a"};
  a.gpus_validated = {"H100 80GB HBM3"};
  a.accuracy = "cos 0.9998 | rel-L1 0.012";
  a.tops = "612";
  a.sha256 = std::string(64, 'a');
  WheelNotesRow b = a;
  b.wheel = "sageattention-2.2.0+cu128torch2.8-cp311-cp311-linux_x86_64.whl";
  b.python = "3.11";
  b.gpus_validated.clear();
  b.tops.clear();
  in.wheels = {a, b};
  return in;
}

TEST(RenderReleaseNotesTest, ListsTheWheelsEachWheelWasBuiltAgainst) {
  ReleaseNotesInput in = TwoWheels();
  EXPECT_EQ(RenderReleaseNotes(in).find("Built and validated against"), std::string::npos);
  in.wheels[0].consumed = {"triton-3.5.0+git4caa0328-cp312-cp312-linux_aarch64.whl sha256 " +
                           std::string(64, 'c') + " (build and validation)"};
  std::string md = RenderReleaseNotes(in);
  size_t list = md.find("Built and validated against");
  ASSERT_NE(list, std::string::npos);
  EXPECT_NE(md.find("- " + in.wheels[0].wheel + ": triton-3.5.0+git4caa0328", list),
            std::string::npos);
  EXPECT_NE(md.find(std::string(64, 'c') + " (build and validation)", list), std::string::npos);
  EXPECT_EQ(md.find("- " + in.wheels[1].wheel + ":", list), std::string::npos);
}

TEST(RenderReleaseNotesTest, TableHasOneRowPerWheelWithEveryColumn) {
  std::string md = RenderReleaseNotes(TwoWheels());
  EXPECT_NE(md.find("## sageattention 2.2.0+cu128torch2.8"), std::string::npos);
  EXPECT_NE(md.find("| Wheel | Python | torch | CUDA | SASS archs | GPUs validated on | "
                    "Accuracy | TOPS | sha256 |"),
            std::string::npos);
  EXPECT_NE(md.find("[`sageattention-2.2.0+cu128torch2.8-cp312-cp312-linux_x86_64.whl`]"
                    "(https://github.com/o/r/releases/download/v2.2.0-build7/"
                    "sageattention-2.2.0+cu128torch2.8-cp312-cp312-linux_x86_64.whl)"),
            std::string::npos);
  EXPECT_NE(md.find("| 3.12 | 2.8 | 12.8 | sm_90a, sm_120a | H100 80GB HBM3 | "),
            std::string::npos);
  // A pipe inside a cell is escaped so the row keeps its nine columns.
  EXPECT_NE(md.find("cos 0.9998 \\| rel-L1 0.012"), std::string::npos);
  EXPECT_NE(md.find("| not validated |"), std::string::npos);
  EXPECT_NE(md.find("| — |"), std::string::npos);  // missing TOPS
  EXPECT_NE(md.find("`" + std::string(64, 'a') + "`"), std::string::npos);
  size_t rows = 0;
  for (size_t pos = md.find("\n| [`"); pos != std::string::npos; pos = md.find("\n| [`", pos + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 2u);
}

TEST(RenderReleaseNotesTest, PipLineInstallsByUrlOrFromFindLinks) {
  ReleaseNotesInput in = TwoWheels();
  std::string md = RenderReleaseNotes(in);
  EXPECT_NE(md.find("```bash\npip install https://github.com/o/r/releases/download/"
                    "v2.2.0-build7/sageattention-2.2.0+cu128torch2.8-cp312-cp312-linux_x86_64"
                    ".whl\n```"),
            std::string::npos);
  in.find_links_url = "https://wheels.example.test/simple/sageattention/";
  md = RenderReleaseNotes(in);
  EXPECT_NE(md.find("pip install \"sageattention==2.2.0+cu128torch2.8\" --find-links "
                    "https://wheels.example.test/simple/sageattention/"),
            std::string::npos);
}

TEST(GitHubNamesTest, SanitizeMirrorsGitHub) {
  EXPECT_EQ(SanitizeAssetName("pkg-2.2.0+cu128torch2.8-cp312-cp312-linux_x86_64.whl"),
            "pkg-2.2.0+cu128torch2.8-cp312-cp312-linux_x86_64.whl");
  EXPECT_EQ(SanitizeAssetName("my file (1).whl"), "my.file.1.whl");
  EXPECT_EQ(SanitizeAssetName("..a..b.."), "default.a.b");
  EXPECT_EQ(
      ExpandUploadUrl("https://u.test/repos/o/r/releases/1/assets{?name,label}", "a+b.whl", ""),
      "https://u.test/repos/o/r/releases/1/assets?name=a%2Bb.whl");
  EXPECT_EQ(ExpandUploadUrl("https://u.test/a{?name,label}", "x", "l 1"),
            "https://u.test/a?name=x&label=l%201");
  EXPECT_EQ(TemporaryAssetName("x.whl", "0123456789abcdef"), "farm-tmp-0123456789ab-x.whl");
}

TEST(HfNamesTest, PathTemplateAndVariant) {
  EXPECT_EQ(HfKernelVariant("2.8", "12.8", "linux_x86_64"), "torch28-cxx11-cu128-x86_64-linux");
  EXPECT_EQ(RenderHfPath("build/{variant}/{wheel}", "torch28-cxx11-cu128-x86_64-linux", "w.whl"),
            "build/torch28-cxx11-cu128-x86_64-linux/w.whl");
  // The well-known id of the empty blob.
  EXPECT_EQ(GitBlobSha1(""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

}  // namespace
}  // namespace farm::publish
