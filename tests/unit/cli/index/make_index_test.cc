// farmctl index make over real wheels written at test time, read back by the farm's own
// index client (the parser workers and farmd provision with).
#include "cli/index/make_index.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/upstream/simple_index.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::cli::index {
namespace {

class MakeIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    wheel::testing::WheelSpec spec;
    spec.metadata =
        "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0.0+cu130\n"
        "Requires-Python: >=3.9\nRequires-Dist: torch\n\nAn example.\n";
    ASSERT_OK(wheel::testing::WriteWheel(dir_.path(), spec).status());
    wheel::testing::WheelSpec pip;
    pip.filename = "pip-23.0.1-py3-none-any.whl";
    pip.dist_info = "pip-23.0.1.dist-info";
    pip.metadata = "Metadata-Version: 2.1\nName: pip\nVersion: 23.0.1\n";
    pip.wheel = "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
    pip.files = {{"pip/__init__.py", "\n"}};
    ASSERT_OK(wheel::testing::WriteWheel(dir_.path(), pip).status());
    ASSERT_OK(fs::WriteFileAtomic(dir_.path() + "/Attn_Example-0.9.tar.gz", "sdist bytes"));
  }

  std::vector<upstream::IndexFile> Html(const std::string& project) {
    auto text = fs::ReadFile(dir_.path() + "/simple/" + project + "/index.html");
    EXPECT_OK(text.status());
    if (!text.ok()) return {};
    auto files = upstream::ParseProjectHtml(*text, "http://127.0.0.1:8000/simple/" + project + "/");
    EXPECT_OK(files.status());
    return files.ok() ? *files : std::vector<upstream::IndexFile>{};
  }

  farm::testing::ScopedTempDir dir_;
};

TEST_F(MakeIndexTest, WheelsAndSdistsAreListedWithHashesAndMetadataBothWays) {
  auto made = MakeIndex(dir_.path(), false);
  ASSERT_OK(made.status());
  EXPECT_EQ(made->projects, 2);
  EXPECT_EQ(made->files, 3);
  EXPECT_EQ(made->wheels_with_metadata, 2);
  std::vector<upstream::IndexFile> html = Html("attn-example");
  ASSERT_EQ(html.size(), 2u);
  const std::string wheel = "attn_example-1.0.0+cu130-cp312-cp312-linux_x86_64.whl";
  const upstream::IndexFile* w = nullptr;
  for (const auto& f : html) w = f.filename == wheel ? &f : w;
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->sha256, Sha256FileHex(dir_.path() + "/" + wheel).value());
  EXPECT_EQ(w->url, "http://127.0.0.1:8000/" + std::string("attn_example-1.0.0%2Bcu130-cp312-"
                                                           "cp312-linux_x86_64.whl"));
  EXPECT_EQ(w->requires_python, ">=3.9");
  // PEP 658: the METADATA beside the wheel, named by its sha256 on the link.
  auto metadata = fs::ReadFile(dir_.path() + "/" + wheel + ".metadata");
  ASSERT_OK(metadata.status());
  EXPECT_NE(metadata->find("Requires-Dist: torch"), std::string::npos);
  EXPECT_EQ(w->core_metadata_sha256, Sha256Hex(*metadata));
  auto page = fs::ReadFile(dir_.path() + "/simple/attn-example/index.html");
  ASSERT_OK(page.status());
  // pip 23.0.1 (Debian 12) reads only data-dist-info-metadata: both names are there.
  EXPECT_NE(page->find("data-dist-info-metadata=\"sha256=" + w->core_metadata_sha256),
            std::string::npos);
  EXPECT_NE(page->find("data-core-metadata=\"sha256=" + w->core_metadata_sha256),
            std::string::npos);
  // The same as PEP 691 JSON.
  auto json = fs::ReadFile(dir_.path() + "/simple/attn-example/index.json");
  ASSERT_OK(json.status());
  auto listed = upstream::ParseProjectJson(*json, "http://127.0.0.1:8000/simple/attn-example/");
  ASSERT_OK(listed.status());
  ASSERT_EQ(listed->size(), 2u);
  for (const auto& f : *listed) EXPECT_EQ(f.sha256.size(), 64u) << f.filename;
  auto root = fs::ReadFile(dir_.path() + "/simple/index.html");
  ASSERT_OK(root.status());
  EXPECT_NE(root->find("<a href=\"pip/\">pip</a>"), std::string::npos) << *root;
  // Again, unchanged: the same pages, nothing refused.
  ASSERT_OK(MakeIndex(dir_.path(), false).status());
  EXPECT_EQ(fs::ReadFile(dir_.path() + "/simple/attn-example/index.html").value(), *page);
}

TEST_F(MakeIndexTest, OddFilesAreSkippedAndNamedAndAForeignSimpleFolderIsKept) {
  ASSERT_OK(fs::WriteFileAtomic(dir_.path() + "/notes.txt", "x"));
  ASSERT_OK(fs::WriteFileAtomic(dir_.path() + "/broken-1.0-py3-none-any.whl", "not a zip"));
  ASSERT_OK(fs::WriteFileAtomic(dir_.path() + "/q\"uote-1.0.tar.gz", "x"));
  ASSERT_EQ(symlink("/etc/passwd", (dir_.path() + "/link-1.0.tar.gz").c_str()), 0);
  auto made = MakeIndex(dir_.path(), false);
  ASSERT_OK(made.status());
  EXPECT_EQ(made->files, 3);
  std::string skipped;
  for (const auto& s : made->skipped) skipped += s + "\n";
  for (const char* name : {"notes.txt: neither", "broken-1.0-py3-none-any.whl: ",
                           "q&quot;uote-1.0.tar.gz: a name no index may carry",
                           "link-1.0.tar.gz: not a regular file"}) {
    EXPECT_NE(skipped.find(name), std::string::npos) << name << "\n" << skipped;
  }
  EXPECT_FALSE(fs::ReadFile(dir_.path() + "/simple/link/index.html").ok());
  // A simple/ folder this command did not write is not replaced without --force.
  farm::testing::ScopedTempDir other;
  ASSERT_OK(
      fs::WriteFileAtomic(other.path() + "/pip-23.0.1-py3-none-any.whl",
                          fs::ReadFile(dir_.path() + "/pip-23.0.1-py3-none-any.whl").value()));
  ASSERT_OK(fs::MakeDirs(other.path() + "/simple"));
  ASSERT_OK(fs::WriteFileAtomic(other.path() + "/simple/mine.txt", "keep me"));
  Status refused = MakeIndex(other.path(), false).status();
  EXPECT_NE(refused.message().find("was not written by farmctl index make"), std::string::npos)
      << refused.message();
  EXPECT_EQ(fs::ReadFile(other.path() + "/simple/mine.txt").value(), "keep me");
  ASSERT_OK(MakeIndex(other.path(), true).status());
  EXPECT_FALSE(fs::ReadFile(other.path() + "/simple/mine.txt").ok());
  // An empty folder is said to be one.
  farm::testing::ScopedTempDir empty;
  EXPECT_EQ(MakeIndex(empty.path(), false).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::cli::index
