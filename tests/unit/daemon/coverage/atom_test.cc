#include "daemon/coverage/atom.h"

#include <gtest/gtest.h>

namespace farm::coverage {
namespace {

TEST(XmlTextTest, EscapesMarkupAndDropsWhatXmlForbids) {
  EXPECT_EQ(XmlText("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(XmlText(std::string("x\x01y\x1b[31mz\tq\n", 13)), "xy[31mz\tq\n");
  EXPECT_EQ(XmlText(std::string("nul\0end", 7)), "nulend");
  EXPECT_EQ(XmlText("\xef\xbf\xbe\xef\xbf\xbf!"), "!");          // U+FFFE, U+FFFF
  EXPECT_EQ(XmlText("bad \xff byte"), "bad \xef\xbf\xbd byte");  // U+FFFD
  EXPECT_EQ(XmlText("]]></title><script>"), "]]&gt;&lt;/title&gt;&lt;script&gt;");
}

TEST(RenderAtomTest, AFeedWithEntriesInTheGivenOrder) {
  AtomFeed feed{.id = "urn:farm:feed:wheels",
                .title = "farm & co",
                .self_link = "/feeds/wheels.atom",
                .updated_ms = 5};
  feed.entries.push_back({.id = "urn:farm:b",
                          .title = "t<2>",
                          .link = "/#/job/2?a=1&b=2",
                          .summary = "s",
                          .category = "build_failed",
                          .updated_ms = 2000});
  feed.entries.push_back({.id = "urn:farm:a", .title = "t1", .updated_ms = 1000});
  std::string xml = RenderAtom(feed);
  EXPECT_TRUE(
      xml.starts_with("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
                      "<feed xmlns=\"http://www.w3.org/2005/Atom\">\n"));
  EXPECT_NE(xml.find("<title>farm &amp; co</title>"), std::string::npos);
  // The feed's updated time is its newest entry's.
  EXPECT_NE(xml.find("  <updated>1970-01-01T00:00:02.000Z</updated>"), std::string::npos);
  EXPECT_NE(xml.find("<title>t&lt;2&gt;</title>"), std::string::npos);
  EXPECT_NE(xml.find("href=\"/#/job/2?a=1&amp;b=2\""), std::string::npos);
  EXPECT_NE(xml.find("<category term=\"build_failed\"/>"), std::string::npos);
  EXPECT_LT(xml.find("urn:farm:b"), xml.find("urn:farm:a"));
  EXPECT_TRUE(xml.ends_with("</feed>\n"));
}

TEST(EntryOfTest, LinksToTheJobPageUnderTheBaseAndKeepsTheEventId) {
  Event e{.kind = EventKind::kBuildFailed,
          .id = "build_failed:12",
          .package = "pkg",
          .version = "1.0",
          .build_id = 12,
          .job_id = 30,
          .cause = "exit <3>",
          .time_ms = 7};
  AtomEntry entry = EntryOf(e, "https://farm.example/");
  EXPECT_EQ(entry.id, "urn:farm:build_failed:12");
  EXPECT_EQ(entry.link, "https://farm.example/#/job/30");
  EXPECT_EQ(entry.category, "build_failed");
  EXPECT_EQ(entry.updated_ms, 7);
  EXPECT_NE(entry.summary.find("exit <3>"), std::string::npos);  // escaped when rendered
  e.job_id = 0;
  EXPECT_EQ(EntryOf(e, "").link, "/#/build/12");
}

}  // namespace
}  // namespace farm::coverage
