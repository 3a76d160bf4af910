#include "daemon/http/server/large_file_body.h"

#include <unistd.h>

#include <boost/beast/http/fields.hpp>
#include <string>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::http {
namespace {

namespace bhttp = boost::beast::http;

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  return s;
}

TEST(LargeFileBodyTest, SendsTheWholeFileInQuarterMebibyteChunks) {
  farm::testing::ScopedTempDir dir;
  std::string content = Pattern(LargeFileBody::kChunkBytes * 2 + 12345);
  ASSERT_OK(fs::WriteFileAtomic(dir.path() + "/w.whl", content));
  LargeFileBody::value_type body;
  boost::beast::error_code ec;
  body.open((dir.path() + "/w.whl").c_str(), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(LargeFileBody::size(body), content.size());
  bhttp::header<false, bhttp::fields> head;
  LargeFileBody::writer writer(head, body);
  writer.init(ec);
  std::string sent;
  int chunks = 0;
  for (bool more = true; more && chunks < 10; ++chunks) {
    auto next = writer.get(ec);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(next);
    EXPECT_LE(next->first.size(), LargeFileBody::kChunkBytes);
    sent.append(static_cast<const char*>(next->first.data()), next->first.size());
    more = next->second;
  }
  EXPECT_EQ(chunks, 3);
  EXPECT_TRUE(sent == content);
  EXPECT_FALSE(writer.get(ec));  // nothing after the last chunk
  EXPECT_FALSE(ec);
}

TEST(LargeFileBodyTest, AFileThatShrankIsAShortReadNotAWrongLength) {
  farm::testing::ScopedTempDir dir;
  std::string path = dir.path() + "/w.whl";
  ASSERT_OK(fs::WriteFileAtomic(path, Pattern(LargeFileBody::kChunkBytes + 10)));
  LargeFileBody::value_type body;
  boost::beast::error_code ec;
  body.open(path.c_str(), ec);
  ASSERT_FALSE(ec);
  ASSERT_EQ(truncate(path.c_str(), 100), 0);
  bhttp::header<false, bhttp::fields> head;
  LargeFileBody::writer writer(head, body);
  writer.init(ec);
  auto first = writer.get(ec);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->first.size(), 100u);
  EXPECT_TRUE(first->second);  // the header promised more
  EXPECT_FALSE(writer.get(ec));
  EXPECT_EQ(ec, bhttp::error::short_read);
}

TEST(LargeFileBodyTest, AMissingFileFailsToOpen) {
  LargeFileBody::value_type body;
  boost::beast::error_code ec;
  body.open("/nonexistent/w.whl", ec);
  EXPECT_TRUE(ec);
}

}  // namespace
}  // namespace farm::http
