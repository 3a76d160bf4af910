#include "cli/export/index_links.h"

#include <gtest/gtest.h>

#include <utility>

namespace farm::cli::exporter {
namespace {

const std::string kSha(64, 'a');
const std::string kOtherSha(64, 'b');
const std::string kWheel =
    "files/" + kSha + "/attn_example-0.1.0+cu130.sm90-cp311-cp311-linux_x86_64.whl";

LinkRewriter Links(const std::string& export_base = "") {
  LinkRewriter links("http://127.0.0.1:8080", export_base);
  for (const char* p : {"simple/", "cu130/simple/", "cu130/sm90/simple/",
                        "cu130/sm90/simple/attn-example/", "style.css", "install"}) {
    links.Add(p);
  }
  links.Add(kWheel);
  links.Add(kWheel + ".metadata");
  return links;
}

TEST(ResolveUrlTest, FollowsRfc3986AndNeverClimbsAboveTheRoot) {
  const std::string page = "http://h:1/cu130/sm90/simple/x/";
  EXPECT_EQ(ResolveUrl(page, "../../../../files/a/b.whl"), "http://h:1/files/a/b.whl");
  EXPECT_EQ(ResolveUrl(page, "../../../../../../../etc/passwd"), "http://h:1/etc/passwd");
  EXPECT_EQ(ResolveUrl(page, "/files/a/../../etc/x"), "http://h:1/etc/x");
  EXPECT_EQ(ResolveUrl(page, "./y/./z"), "http://h:1/cu130/sm90/simple/x/y/z");
  EXPECT_EQ(ResolveUrl(page, "y#sha256=ab"), "http://h:1/cu130/sm90/simple/x/y#sha256=ab");
  EXPECT_EQ(ResolveUrl(page, "?q=1"), "http://h:1/cu130/sm90/simple/x/?q=1");
  EXPECT_EQ(ResolveUrl(page, "//other:2/a/../b"), "http://other:2/b");
  EXPECT_EQ(ResolveUrl(page, "HTTPS://Other/a/./b/.."), "https://Other/a/");
  EXPECT_EQ(ResolveUrl(page, "data:,"), "data:,");
  EXPECT_EQ(ResolveUrl("http://h:1", "simple/"), "http://h:1/simple/");
}

TEST(OriginOfTest, OnlyAbsoluteHierarchicalUrlsHaveOne) {
  constexpr std::pair<const char*, std::string_view> kCases[] = {
      {"HTTP://h:1/x?y", "http://h:1"},
      {"https://h", "https://h"},
      {"/files/x", ""},
      {"data:,", ""},
      {"mailto:a@b", ""},
  };
  for (const auto& [url, origin] : kCases) EXPECT_EQ(OriginOf(url), origin) << url;
}

TEST(SafeExportPathTest, RefusesEverythingThatCouldLeaveTheExport) {
  EXPECT_EQ(SafeExportPath("/cu130/sm90/simple/attn-example/"), "cu130/sm90/simple/attn-example/");
  EXPECT_EQ(SafeExportPath("/files/abc/a_b-1.0+cu130.sm90-cp311-cp311-linux_x86_64.whl"),
            "files/abc/a_b-1.0+cu130.sm90-cp311-cp311-linux_x86_64.whl");
  EXPECT_EQ(SafeExportPath("/"), "");
  for (const char* bad : {"files/a", "/files/../x", "/files/./x", "/a//b", "/.farm-export.json",
                          "/files/%2e%2e/x", "/files/a%2Fb", "/files/a\\b", "/a/b c", "/a/\x01",
                          "/a/\xc3\xa9", "//etc/passwd", "/a/.hidden/b"}) {
    EXPECT_EQ(SafeExportPath(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(SafeExportPath("/" + std::string(256, 'a')), std::nullopt);
  EXPECT_NE(SafeExportPath("/" + std::string(255, 'a')), std::nullopt);
  std::string deep;
  for (int i = 0; i < 17; ++i) deep += "/a";
  EXPECT_EQ(SafeExportPath(deep), std::nullopt);
  EXPECT_NE(SafeExportPath(deep.substr(2)), std::nullopt);
}

TEST(RelativeLinkTest, ClimbsOnlyOutOfWhatThePagesDoNotShare) {
  EXPECT_EQ(RelativeLink("cu130/sm90/simple/x/", "files/a/b.whl"), "../../../../files/a/b.whl");
  EXPECT_EQ(RelativeLink("cu130/simple/", "cu130/simple/x/"), "x/");
  EXPECT_EQ(RelativeLink("cu130/simple/x/", "cu130/simple/"), "../");
  EXPECT_EQ(RelativeLink("ab/", "abc/x"), "../abc/x");
  EXPECT_EQ(RelativeLink("simple/", "simple/"), "./");
  EXPECT_EQ(RelativeLink("", "cu130/sm90/simple/"), "cu130/sm90/simple/");
}

TEST(WheelShaOfTest, OnlyWheelsUnderTheirSha) {
  EXPECT_EQ(WheelShaOf(kWheel), kSha);
  EXPECT_EQ(WheelShaOf(kWheel + ".metadata"), "");
  EXPECT_EQ(WheelShaOf("files/abc/x.whl"), "");
  EXPECT_EQ(WheelShaOf("files/" + kSha + "/sub/x.whl"), "");
}

TEST(LinkRewriterTest, LinksOnTheFarmBecomeRelativeAndKeepTheirFragment) {
  LinkRewriter links = Links();
  const std::string page = "cu130/sm90/simple/attn-example/";
  auto r = links.Rewrite(page, "/" + kWheel + "#sha256=" + kSha);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(**r, "../../../../" + kWheel + "#sha256=" + kSha);
  // Absolute URLs of the farm too; the view's own project link stays short.
  EXPECT_EQ(**links.Rewrite("cu130/sm90/simple/",
                            "http://127.0.0.1:8080/cu130/sm90/simple/attn-example/"),
            "attn-example/");
  EXPECT_EQ(**links.Rewrite("cu130/sm90/simple/", "attn-example/"), "attn-example/");
  // With --base-url: absolute under it.
  LinkRewriter based = Links("https://wheels.example/farm/");
  EXPECT_EQ(**based.Rewrite(page, "/" + kWheel), "https://wheels.example/farm/" + kWheel);
}

TEST(LinkRewriterTest, KeepsForeignLinksAndDropsTheFarmsOthers) {
  LinkRewriter links = Links();
  EXPECT_EQ(**links.Rewrite("simple/", "https://pypi.org/simple/"), "https://pypi.org/simple/");
  EXPECT_EQ(**links.Rewrite("simple/", "data:,"), "data:,");
  EXPECT_EQ(**links.Rewrite("simple/", "#variants"), "#variants");
  // The dashboard's pages are not in the export: such links are dropped.
  for (const char* dashboard : {"/", "/#/builds", "/metrics", "/api/v1/jobs/1", "../../etc/x",
                                "/simple/?page=2", "/a/%2e%2e/b"}) {
    auto r = links.Rewrite("simple/", dashboard);
    ASSERT_TRUE(r.ok()) << dashboard;
    EXPECT_EQ(*r, std::nullopt) << dashboard;
  }
}

TEST(LinkRewriterTest, RefusesAWheelLinkWhoseFragmentOrFileDisagrees) {
  LinkRewriter links = Links();
  auto r = links.Rewrite("simple/attn-example/", "/" + kWheel + "#sha256=" + kOtherSha);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("says sha256=" + kOtherSha), std::string::npos);
  r = links.Rewrite("simple/attn-example/", "/files/" + kOtherSha + "/evil.whl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("a file the export does not hold"), std::string::npos);
}

TEST(LinkRewriterTest, TextSaysTheExportBaseOrThePlaceholder) {
  EXPECT_EQ(
      Links().RewriteText("pip install --index-url http://127.0.0.1:8080/cu130/sm90/simple/ x"),
      "pip install --index-url BASE_URL/cu130/sm90/simple/ x");
  EXPECT_EQ(Links("https://w.example").RewriteText("curl -fsSL http://127.0.0.1:8080/install"),
            "curl -fsSL https://w.example/install");
}

TEST(RewriteHtmlTest, RewritesLinksKeepsDataAttributesAndDropsTheDashboard) {
  const std::string html =
      "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.3\">"
      "<link rel=\"stylesheet\" href=\"/style.css\"><link rel=\"icon\" href=\"data:,\"></head>"
      "<body><!-- <a href=\"/x\"> --><header><a class=\"brand\" href=\"/\">farm</a>"
      "<a href='/#/builds'>Builds</a></header>\n"
      "<a href=\"/" +
      kWheel + "#sha256=" + kSha +
      "\" data-requires-python=\"&gt;=3.8\" "
      "data-core-metadata=\"sha256=" +
      kOtherSha + "\" data-dist-info-metadata=\"sha256=" + kOtherSha +
      "\" data-yanked=\"\">attn</a><br>\n"
      "<p>pip install --index-url http://127.0.0.1:8080/cu130/sm90/simple/ x</p></body></html>\n";
  auto out = RewriteHtml(html, "cu130/sm90/simple/attn-example/", Links());
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_NE(out->find("<link rel=\"stylesheet\" href=\"../../../../style.css\">"),
            std::string::npos)
      << *out;
  EXPECT_NE(out->find("href=\"data:,\""), std::string::npos);
  EXPECT_NE(out->find("<a class=\"brand\" >farm</a><a >Builds</a>"), std::string::npos) << *out;
  EXPECT_NE(out->find("<!-- <a href=\"/x\"> -->"), std::string::npos);  // comments untouched
  EXPECT_NE(out->find("<a href=\"../../../../" + kWheel + "#sha256=" + kSha +
                      "\" data-requires-python=\"&gt;=3.8\" data-core-metadata=\"sha256=" +
                      kOtherSha + "\" data-dist-info-metadata=\"sha256=" + kOtherSha +
                      "\" data-yanked=\"\">attn</a>"),
            std::string::npos)
      << *out;
  EXPECT_NE(out->find("BASE_URL/cu130/sm90/simple/ x"), std::string::npos);
  EXPECT_EQ(out->find("127.0.0.1"), std::string::npos);
}

TEST(RewriteHtmlTest, EscapesWhatItWritesAndRefusesBrokenMarkup) {
  LinkRewriter links = Links();
  auto out =
      RewriteHtml("<a href=\"https://x.example/?a=1&amp;b=&quot;2\">x</a>", "simple/", links);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<a href=\"https://x.example/?a=1&amp;b=&quot;2\">x</a>");
  EXPECT_FALSE(RewriteHtml("<a href=\"/simple/", "simple/", links).ok());
  EXPECT_FALSE(RewriteHtml("<!-- never closed", "simple/", links).ok());
  EXPECT_FALSE(RewriteHtml("<a x =\"\" =\"y\">", "simple/", links).ok());  // a stray '='
  EXPECT_FALSE(RewriteHtml("<a \"x\">", "simple/", links).ok());           // a stray quote
  // An unquoted value, and a link that climbs out: resolved on the farm and dropped.
  out = RewriteHtml("<a href=../../../../../../etc/passwd>x</a>", "simple/", links);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<a >x</a>");
  out = RewriteHtml("<a href=\"/" + kWheel + "#sha256=" + kOtherSha + "\">x</a>", "simple/", links);
  EXPECT_FALSE(out.ok());
}

TEST(RewriteHtmlTest, ARewrittenPageRewritesToItselfOrIsRefused) {
  // Found by tests/fuzz/export_links_fuzz.cc. A quote inside an unquoted value, and a tag
  // name that a dropped link would have let merge with what follows: stable.
  LinkRewriter links = Links();
  for (std::string html : {std::string("<[ hreF=#/simple/x\xd4"
                                       "a-x=\"\xd8</a><li=\"&hyle.css>"),
                           std::string("<\xcf hreF=\"/simple/mp;\"\xde"
                                       "c=1>")}) {
    auto once = RewriteHtml(html, "simple/x/", links);
    ASSERT_TRUE(once.ok()) << once.status().message();
    auto twice = RewriteHtml(*once, "simple/x/", links);
    ASSERT_TRUE(twice.ok()) << twice.status().message();
    EXPECT_EQ(*twice, *once);
  }
  // A stray '=' or quote next to a dropped link would read differently without it: refused.
  for (std::string html : {std::string("<\xcf hreF=\"/simple/mp;\"\xde"
                                       "c\0yeF=\"/simpl>ss<\xcf "
                                       "hreF=\"/simple/mp;\"\xde\0>yc>",
                                       65),
                           std::string("<a \x7f hreF=\" ata\" =\" data-x \">")}) {
    auto once = RewriteHtml(html, "simple/x/", links);
    ASSERT_FALSE(once.ok());
    EXPECT_NE(once.status().message().find("a stray"), std::string::npos)
        << once.status().message();
  }
}

TEST(RewriteJsonTest, RewritesLinkKeysAtAnyDepthAndTheFarmsUrlInText) {
  LinkRewriter links = Links();
  const std::string page = "cu130/sm90/simple/attn-example/";
  auto out = RewriteJson(
      "{\"meta\":{\"api-version\":\"1.3\"},\"files\":[{\"filename\":\"a.whl\",\"url\":\"/" +
          kWheel + "\",\"hashes\":{\"sha256\":\"" + kSha + "\"}}],\"variants-json\":[]," +
          "\"variants\":[{\"index_url\":\"http://127.0.0.1:8080/cu130/sm90/simple/\"," +
          "\"pip\":\"pip install --index-url http://127.0.0.1:8080/cu130/sm90/simple/ x\"}]}",
      page, links);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_NE(out->find("\"url\":\"../../../../" + kWheel + "\""), std::string::npos) << *out;
  EXPECT_NE(out->find("\"index_url\":\"../\""), std::string::npos) << *out;
  EXPECT_NE(out->find("\"pip\":\"pip install --index-url BASE_URL/cu130/sm90/simple/ x\""),
            std::string::npos);
  // A link the export does not hold cannot be written: the page is refused.
  EXPECT_FALSE(RewriteJson("{\"url\":\"/files/" + kOtherSha + "/x.whl\"}", page, links).ok());
  EXPECT_FALSE(RewriteJson("{\"index\":\"/metrics\"}", page, links).ok());
  EXPECT_FALSE(RewriteJson("not json", page, links).ok());
}

}  // namespace
}  // namespace farm::cli::exporter
