#include "daemon/mirror/preload.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace farm::mirror {
namespace {

TEST(PreloadTest, DistributionNamesGiveTheirProject) {
  EXPECT_EQ(*ProjectOfDistribution("Torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl"),
            "torch");
  EXPECT_EQ(*ProjectOfDistribution("flash_attn-2.8.3.tar.gz"), "flash-attn");
  EXPECT_EQ(*ProjectOfDistribution("Sage.Attention-2.2.0.zip"), "sage-attention");
  for (const char* bad :
       {"", "torch.whl", "torch-2.8.0.tar.bz2", "torch-.tar.gz", "-1.0.tar.gz", "torch-x.tar.gz",
        "a/b-1.0.tar.gz", "..", ".x-1.0.tar.gz", "to rch-1.0.tar.gz"}) {
    EXPECT_EQ(ProjectOfDistribution(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ProjectOfDistribution(std::string("a\0b-1.0.tar.gz", 14)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckPlainFileName(std::string(256, 'a')).code(), StatusCode::kInvalidArgument);
  EXPECT_OK(CheckPlainFileName(std::string(255, 'a')));
}

TEST(PreloadTest, MagicAndKinds) {
  EXPECT_OK(CheckDistributionMagic("a-1.0-py3-none-any.whl", std::string("PK\x03\x04", 4)));
  EXPECT_OK(CheckDistributionMagic("a-1.0.tar.gz", "\x1f\x8b\x08"));
  EXPECT_EQ(CheckDistributionMagic("a-1.0.tar.gz", "PK").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckDistributionMagic("a-1.0.zip", "").code(), StatusCode::kInvalidArgument);
  for (PreloadKind k : {PreloadKind::kIndexFile, PreloadKind::kManifest, PreloadKind::kArchive}) {
    EXPECT_EQ(*ParsePreloadKind(PreloadKindName(k)), k);
  }
  EXPECT_FALSE(ParsePreloadKind("blob").ok());
}

TEST(PreloadTest, ManifestsListArchivesInsideTheTree) {
  const std::string sha(64, 'a');
  std::string good = R"({"c": {"linux-x86_64": {"relative_path": "c/linux/c-1-archive.tar.xz",
                         "sha256": ")" +
                     sha + R"(", "size": 7}}})";
  EXPECT_OK(CheckManifest(good));
  auto found = FindManifestArchive(good, "c-1-archive.tar.xz");
  ASSERT_OK(found.status());
  EXPECT_EQ(found->relative_path, "c/linux/c-1-archive.tar.xz");
  EXPECT_EQ(found->size, 7);
  EXPECT_EQ(FindManifestArchive(good, "linux/c-1-archive.tar.xz").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(CheckManifest("{").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckManifest("[]").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckManifest(R"({"c": {"relative_path": "/etc/x", "sha256": ")" + sha + "\"}}").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckManifest(R"({"c": {"relative_path": "a/x", "sha256": "zz"}})").code(),
            StatusCode::kInvalidArgument);
  std::string twice = R"({"a": {"relative_path": "a/x.tar.xz", "sha256": ")" + sha +
                      R"("}, "b": {"relative_path": "b/x.tar.xz", "sha256": ")" + sha + "\"}}";
  EXPECT_EQ(FindManifestArchive(twice, "x.tar.xz").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::mirror
