// How an HTTP error answer becomes a Status: the excerpt of its body that says why, made
// safe to log and show whatever the server sent.
#include "common/upstream/fetcher.h"

#include <gtest/gtest.h>

#include <string>

namespace farm::upstream {
namespace {

TEST(HttpErrorStatusTest, NamesTheCauseFarmdsBodyHolds) {
  Status s = HttpErrorStatus("http://127.0.0.1:9/upstream/pypi/cu128/simple/pip/", 502,
                             "upstream http://127.0.0.1:8/whl/cu128/pip/: Couldn't connect "
                             "to server\n");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "http://127.0.0.1:9/upstream/pypi/cu128/simple/pip/ answered HTTP 502: upstream "
            "http://127.0.0.1:8/whl/cu128/pip/: Couldn't connect to server");
  EXPECT_EQ(HttpErrorStatus("http://h/x", 404, "").code(), StatusCode::kNotFound);
  EXPECT_EQ(HttpErrorStatus("http://h/x", 410, "gone").message(),
            "http://h/x answered HTTP 410: gone");
  EXPECT_EQ(HttpErrorStatus("http://h/x", 503, "").message(), "http://h/x answered HTTP 503");
}

TEST(HttpErrorStatusTest, AHostileBodyIsBoundedAndPlain) {
  // Terminal escapes, NUL, line breaks to forge log lines, HTML, bytes outside ASCII.
  std::string body = std::string("\x1b[31mred\x1b[0m\0nul", 16) +
                     "\r\nfarm: job 1 succeeded\n<html><b>bold</b></html> caf\xc3\xa9";
  std::string excerpt = ErrorExcerpt(body);
  EXPECT_EQ(excerpt, "[31mred [0m nul farm: job 1 succeeded bold caf??");
  for (char c : excerpt) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x20);
    EXPECT_LT(static_cast<unsigned char>(c), 0x7f);
  }
  std::string huge(1 << 20, 'x');
  EXPECT_EQ(ErrorExcerpt(huge).size(), 303u);  // 300 and "..."
  EXPECT_EQ(ErrorExcerpt(huge, 5), "xxxxx...");
  EXPECT_EQ(ErrorExcerpt("   \n\t "), "");
  EXPECT_EQ(ErrorExcerpt(std::string(400, ' ') + "why"), "why");
}

}  // namespace
}  // namespace farm::upstream
