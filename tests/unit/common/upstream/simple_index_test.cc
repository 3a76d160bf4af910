#include "common/upstream/simple_index.h"

#include <gtest/gtest.h>

#include "tests/support/fake_upstream.h"
#include "tests/support/test_util.h"

namespace farm::upstream {
namespace {

const std::string kSha(64, 'a');
const std::string kMeta(64, 'b');

TEST(SimpleIndexTest, ParsesJsonResolvingRelativeUrls) {
  std::string body = R"({"meta": {"api-version": "1.1"}, "name": "torch", "files": [
    {"filename": "torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl",
     "url": "../torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl#frag",
     "hashes": {"sha256": ")" +
                     kSha + R"("}, "size": 1464, "requires-python": ">=3.9",
     "core-metadata": {"sha256": ")" +
                     kMeta + R"("}, "yanked": "bad build"},
    {"filename": "torch-2.8.0.tar.gz", "url": "https://files.example/t.tar.gz", "hashes": {}}
  ]})";
  auto files = ParseProjectJson(body, "http://127.0.0.1:9/whl/cu128/torch/");
  ASSERT_OK(files.status());
  ASSERT_EQ(files->size(), 2u);
  const IndexFile& f = (*files)[0];
  EXPECT_EQ(
      f.url,
      "http://127.0.0.1:9/whl/cu128/torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl");
  EXPECT_EQ(f.sha256, kSha);
  EXPECT_EQ(f.size, 1464);
  EXPECT_EQ(f.requires_python, ">=3.9");
  EXPECT_EQ(f.core_metadata_sha256, kMeta);
  EXPECT_TRUE(f.yanked);
  EXPECT_EQ(f.yanked_reason, "bad build");
  EXPECT_EQ((*files)[1].sha256, "");
  EXPECT_EQ((*files)[1].url, "https://files.example/t.tar.gz");
}

TEST(SimpleIndexTest, ParsesHtmlAnchorsFragmentsEntitiesAndYanked) {
  std::string body =
      "<html><body><A HREF='/whl/cu130/torch-2.9.0%2Bcu130-cp311-cp311-linux_x86_64.whl#sha256=" +
      kSha +
      "' data-requires-python=\"&gt;=3.9\" data-yanked>torch-2.9.0+cu130-cp311-cp311-"
      "linux_x86_64.whl</a><br/>\n<a href=\"x-1.0-py3-none-any.whl#md5=00\" "
      "data-dist-info-metadata=\"sha256=" +
      kMeta +
      "\" data-yanked=\"a &amp; b\">x-1.0-py3-none-any.whl</a>"
      "<abbr>not a link</abbr></body></html>";
  auto files = ParseProjectHtml(body, "http://127.0.0.1:9/whl/cu130/torch/");
  ASSERT_OK(files.status());
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].url,
            "http://127.0.0.1:9/whl/cu130/torch-2.9.0%2Bcu130-cp311-cp311-linux_x86_64.whl");
  EXPECT_EQ((*files)[0].sha256, kSha);
  EXPECT_EQ((*files)[0].requires_python, ">=3.9");
  EXPECT_TRUE((*files)[0].yanked);
  EXPECT_EQ((*files)[1].sha256, "");  // md5 only: never chosen
  EXPECT_EQ((*files)[1].core_metadata_sha256, kMeta);
  EXPECT_EQ((*files)[1].yanked_reason, "a & b");
}

TEST(SimpleIndexTest, RefusesLinksThatAreNotHttp) {
  EXPECT_FALSE(ParseProjectHtml("<a href=\"file:///etc/passwd\">x-1.0-py3-none-any.whl</a>",
                                "http://h/simple/x/")
                   .ok());
  EXPECT_FALSE(ParseProjectJson(R"j({"files": [{"filename": "x", "url": "javascript:alert(1)"}]})j",
                                "http://h/simple/x/")
                   .ok());
  EXPECT_FALSE(ParseProjectJson("[1, 2]", "http://h/simple/x/").ok());
  EXPECT_FALSE(ParseProjectJson(R"({"files": "no"})", "http://h/simple/x/").ok());
  EXPECT_FALSE(ResolveUrl("http://h/simple/", "ftp://h/x").ok());
  EXPECT_EQ(*ResolveUrl("http://h/a/b/c/", "../../x%2By?q=1#frag"), "http://h/a/x%2By?q=1");
  EXPECT_EQ(*ResolveUrl("http://h/a/b/c/", "/../../x"), "http://h/x");
  EXPECT_EQ(*ResolveUrl("https://h:8/a/", "//other/y"), "https://other/y");
  EXPECT_EQ(*ResolveUrl("http://h/a/page", "./z"), "http://h/a/z");
  EXPECT_EQ(*ResolveUrl("http://h", "z"), "http://h/z");
}

TEST(SimpleIndexTest, SupportedTagsFollowPipOrder) {
  auto tags = SupportedTags({"3.11", "x86_64", "2.36"});
  ASSERT_FALSE(tags.empty());
  EXPECT_EQ(tags.front(), "cp311-cp311-manylinux_2_36_x86_64");
  auto pos = [&](const std::string& t) {
    return std::find(tags.begin(), tags.end(), t) - tags.begin();
  };
  EXPECT_LT(pos("cp311-cp311-manylinux_2_28_x86_64"), pos("cp311-cp311-linux_x86_64"));
  EXPECT_LT(pos("cp311-cp311-linux_x86_64"), pos("cp39-abi3-manylinux_2_17_x86_64"));
  EXPECT_LT(pos("cp39-abi3-linux_x86_64"), pos("py3-none-any"));
  EXPECT_EQ(pos("cp311-cp311-manylinux_2_37_x86_64"), static_cast<long>(tags.size()));
  EXPECT_EQ(pos("cp312-cp312-linux_x86_64"), static_cast<long>(tags.size()));
}

TEST(SimpleIndexTest, SelectsExactVersionBestTagAndNeedsHash) {
  std::vector<IndexFile> files = {
      {"torch-2.8.0+cu128-cp311-cp311-linux_x86_64.whl", "http://h/a", kSha},
      {"torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl", "http://h/b", kSha},
      {"torch-2.8.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl", "http://h/c", kSha},
      {"torch-2.8.0-cp311-cp311-manylinux_2_28_x86_64.whl", "http://h/d", kSha},
      {"torch-2.9.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl", "http://h/e", ""},
  };
  TargetPython py311{"3.11", "x86_64", "2.36"};
  auto chosen = SelectWheel(files, "Torch", "2.8.0+cu128", py311);
  ASSERT_OK(chosen.status());
  EXPECT_EQ(chosen->url, "http://h/b");
  EXPECT_EQ(SelectWheel(files, "torch", "2.8.0", py311)->url, "http://h/d");
  auto no_hash = SelectWheel(files, "torch", "2.9.0+cu128", py311);
  EXPECT_EQ(no_hash.status().code(), StatusCode::kNotFound);
  auto old_glibc = SelectWheel(files, "torch", "2.8.0+cu128", {"3.11", "x86_64", "2.17"});
  EXPECT_EQ(old_glibc->url, "http://h/a");
  auto missing = SelectWheel(files, "torch", "2.7.0+cu128", py311);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("2.8.0+cu128"), std::string::npos);
}

TEST(SimpleIndexTest, YankedPinIsUsedWithANote) {
  IndexFile f{"pip-23.0.1-py3-none-any.whl", "http://h/p", kSha};
  f.yanked = true;
  f.yanked_reason = "regression";
  std::string note;
  auto chosen = SelectWheel({f}, "pip", "23.0.1", {"3.11", "x86_64", "2.36"}, &note);
  ASSERT_OK(chosen.status());
  EXPECT_NE(note.find("yanked (regression)"), std::string::npos);
}

TEST(SimpleIndexTest, ListAsksForJsonAndFallsBackToHtml) {
  farm::testing::FakeFetcher fetcher;
  fetcher.Serve("http://h/whl/cu128/torch/", R"({"files": []})",
                "application/vnd.pypi.simple.v1+json");
  fetcher.Serve(
      "http://h/simple/my-pkg/",
      "<a href=\"my_pkg-1.0-py3-none-any.whl#sha256=" + kSha + "\">my_pkg-1.0-py3-none-any.whl</a>",
      "text/html");
  fetcher.Serve("http://h/odd/x/", "x", "application/xml");
  EXPECT_TRUE(ListProjectFiles(fetcher, "http://h/whl/cu128", "torch")->empty());
  auto html = ListProjectFiles(fetcher, "http://h/simple/", "My_Pkg");
  ASSERT_OK(html.status());
  ASSERT_EQ(html->size(), 1u);
  EXPECT_EQ((*html)[0].url, "http://h/simple/my-pkg/my_pkg-1.0-py3-none-any.whl");
  EXPECT_EQ(ListProjectFiles(fetcher, "http://h/odd/", "x").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ListProjectFiles(fetcher, "http://h/simple/", "nope").status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace farm::upstream
