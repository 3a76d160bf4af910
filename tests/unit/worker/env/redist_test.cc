#include "worker/env/redist.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"
#include "worker/env/env_spec.h"
#include "worker/env/failure.h"

namespace farm::env {
namespace {

const std::string kSha(64, 'c');

std::string Manifest(const std::string& relative_path, const std::string& size = "\"123\"") {
  return R"({"release_date": "2025-08-04", "release_label": "13.0.2", "release_product": "cuda",
    "cuda_nvcc": {"name": "CUDA NVCC", "license": "CUDA Toolkit", "version": "13.0.88",
      "linux-x86_64": {"relative_path": ")" +
         relative_path + R"(", "sha256": ")" + kSha + R"(", "md5": "00", "size": )" + size + R"(},
      "linux-sbsa": {"relative_path": "cuda_nvcc/linux-sbsa/x.tar.xz", "sha256": ")" +
         kSha + R"(", "size": 5}}})";
}

TEST(RedistTest, ParsesNvidiaManifest) {
  auto m = ParseRedistManifest(
      Manifest("cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-13.0.88-archive.tar.xz"));
  ASSERT_OK(m.status());
  EXPECT_EQ(m->release_label, "13.0.2");
  const RedistArchive& a = m->components.at("cuda_nvcc").at("linux-x86_64");
  EXPECT_EQ(a.version, "13.0.88");
  EXPECT_EQ(a.size, 123);
  EXPECT_EQ(m->components.at("cuda_nvcc").at("linux-sbsa").size, 5);
  auto picked = SelectArchives(*m, {"cuda_nvcc"}, "linux-x86_64");
  ASSERT_OK(picked.status());
  EXPECT_EQ((*picked)[0].sha256, kSha);
  EXPECT_EQ(SelectArchives(*m, {"cuda_cudart"}, "linux-x86_64").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(SelectArchives(*m, {"cuda_nvcc"}, "windows-x86_64").status().code(),
            StatusCode::kNotFound);
}

TEST(RedistTest, RefusesHostileManifests) {
  EXPECT_FALSE(ParseRedistManifest(Manifest("../../etc/passwd")).ok());
  EXPECT_FALSE(ParseRedistManifest(Manifest("/etc/passwd")).ok());
  EXPECT_FALSE(ParseRedistManifest(Manifest("a\\\\b")).ok());
  EXPECT_FALSE(ParseRedistManifest(Manifest("ok/x.tar.xz", "\"-1\"")).ok());
  EXPECT_FALSE(ParseRedistManifest(Manifest("ok/x.tar.xz", "\"12ab\"")).ok());
  EXPECT_FALSE(ParseRedistManifest("{\"release_label\": \"13.0/../x\"}").ok());
  EXPECT_FALSE(ParseRedistManifest("not json").ok());
  std::string bad_sha =
      R"({"release_label": "13.0.2", "c": {"linux-x86_64": {"relative_path": "c/x", "sha256": "xyz"}}})";
  EXPECT_FALSE(ParseRedistManifest(bad_sha).ok());
}

TEST(RedistTest, PicksNewestManifestOnDotBoundaries) {
  std::string listing =
      "<a href=\"redistrib_12.8.1.json\">x</a> <a href='redistrib_13.0.0.json'>"
      "<a href=\"redistrib_13.0.2.json\"> <a href=\"redistrib_13.0.10.json\">"
      "<a href=\"redistrib_13.01.json\"> <a href=\"other.json\">";
  auto versions = ManifestVersionsInListing(listing);
  EXPECT_EQ(versions.size(), 5u);
  EXPECT_EQ(*PickManifestVersion(versions, "13.0"), "13.0.10");
  EXPECT_EQ(*PickManifestVersion(versions, "13.0.2"), "13.0.2");
  EXPECT_EQ(*PickManifestVersion(versions, "12"), "12.8.1");
  EXPECT_EQ(PickManifestVersion(versions, "12.9").status().code(), StatusCode::kNotFound);
}

lock::EnvLock TorchLock() {
  lock::EnvLock l;
  l.python = "3.11";
  l.platform = "linux_x86_64";
  l.packages = {{"torch", "2.8.0+cu128", "https://i/", "torch-2.8.0+cu128-py3-none-any.whl",
                 "https://i/t.whl", kSha, 10}};
  return l;
}

TEST(EnvSpecTest, ValidatesEveryField) {
  EnvSpec good{"3.11", "13.0", "linux_x86_64", TorchLock()};
  EXPECT_OK(Validate(good));
  EnvSpec s = good;
  s.python = "3.11; rm -rf /";
  EXPECT_FALSE(Validate(s).ok());
  s = good;
  s.cuda = "13";
  EXPECT_FALSE(Validate(s).ok());
  s = good;
  s.platform = "linux/x86_64";
  EXPECT_FALSE(Validate(s).ok());
  s = good;
  s.lock.packages.clear();
  EXPECT_FALSE(Validate(s).ok());
  s = good;
  s.lock.python = "3.12";  // a lock made for another Python
  EXPECT_FALSE(Validate(s).ok());
  s = good;
  s.lock.platform = "linux_aarch64";
  EXPECT_FALSE(Validate(s).ok());
}

TEST(EnvSpecTest, TorchAndCanonicalText) {
  EXPECT_EQ(MajorMinor("3.11.2"), "3.11");
  EXPECT_EQ(MajorMinor("3.11"), "3.11");
  EnvSpec a{"3.11", "13.0", "linux_x86_64", TorchLock()};
  EnvSpec b = a;
  EXPECT_EQ(TorchOf(a), "2.8.0+cu128");
  EXPECT_EQ(CanonicalText(a), CanonicalText(b));
  b.cuda = "12.8";
  EXPECT_NE(CanonicalText(a), CanonicalText(b));
  b = a;
  b.lock.packages[0].sha256 = std::string(64, 'f');
  EXPECT_NE(CanonicalText(a), CanonicalText(b));
  EXPECT_EQ(Describe(a), "python 3.11 + torch 2.8.0+cu128 + CUDA 13.0 (locked: 1 package, 10 B)");
}

TEST(FailureTest, CausesByCode) {
  EXPECT_EQ(FailureOf(Status::Unavailable("x")), ProvisionFailure::kUpstreamUnreachable);
  EXPECT_EQ(FailureOf(Status::DeadlineExceeded("x")), ProvisionFailure::kUpstreamUnreachable);
  EXPECT_EQ(FailureOf(Status::DataLoss("x")), ProvisionFailure::kChecksumMismatch);
  EXPECT_EQ(FailureOf(Status::ResourceExhausted("x")), ProvisionFailure::kDiskFull);
  EXPECT_EQ(FailureOf(Status::NotFound("x")), ProvisionFailure::kNotFoundUpstream);
  EXPECT_EQ(FailureOf(Status::InvalidArgument("x")), ProvisionFailure::kInvalidRequest);
  EXPECT_EQ(FailureOf(Status::Ok()), ProvisionFailure::kNone);
  EXPECT_STREQ(ProvisionFailureName(ProvisionFailure::kChecksumMismatch), "checksum-mismatch");
  EXPECT_TRUE(IsInfrastructureFailure(ProvisionFailure::kDiskFull));
  EXPECT_FALSE(IsInfrastructureFailure(ProvisionFailure::kInvalidRequest));
  EXPECT_EQ(ErrnoStatus(ENOSPC, "cannot write", "/x").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoStatus(EACCES, "cannot write", "/x").code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace farm::env
