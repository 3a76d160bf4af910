// CurlFetcher's redirect and credential policy against real HTTP servers on 127.0.0.1 and
// 127.0.0.2 (a host of its own, as an internal address would be): a redirect to another
// host is refused unless allowed, one to file: or another scheme always; a redirect's own
// body never reaches a download; the bearer token goes only to the URLs under its prefix,
// never across a redirect to another host; a URL's userinfo goes only to its own origin;
// and no error repeats a URL's credentials.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/upstream/fetcher.h"
#include "tests/support/test_util.h"

namespace farm::upstream {
namespace {

// One canned answer per path; each request's path and Authorization header recorded.
class CannedServer {
 public:
  struct Answer {
    int status = 200;
    std::string location;
    std::string body;
  };
  explicit CannedServer(const char* address) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    inet_pton(AF_INET, address, &addr.sin_addr);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(fd_, 16);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    base_ = "http://" + std::string(address) + ":" + std::to_string(ntohs(addr.sin_port));
    thread_ = std::thread([this] { Loop(); });
  }
  ~CannedServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  const std::string& base() const { return base_; }
  void Set(const std::string& path, Answer a) {
    std::lock_guard lock(mu_);
    answers_[path] = std::move(a);
  }
  std::vector<std::pair<std::string, std::string>> Seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void Loop() {
    while (!stop_) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = read(c, buf, sizeof(buf));
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      std::string path = head.substr(4, head.find(' ', 4) - 4);
      std::string auth;
      if (size_t at = head.find("\r\nAuthorization: "); at != std::string::npos) {
        at += 17;
        auth = head.substr(at, head.find("\r\n", at) - at);
      }
      Answer a{404, "", "not here"};
      {
        std::lock_guard lock(mu_);
        seen_.emplace_back(path, auth);
        if (auto it = answers_.find(path); it != answers_.end()) a = it->second;
      }
      std::string out = "HTTP/1.1 " + std::to_string(a.status) + " X\r\nConnection: close\r\n" +
                        (a.location.empty() ? "" : "Location: " + a.location + "\r\n") +
                        "Content-Length: " + std::to_string(a.body.size()) + "\r\n\r\n" + a.body;
      (void)!write(c, out.data(), out.size());
      close(c);
    }
  }
  int fd_ = -1;
  std::string base_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, Answer> answers_;
  std::vector<std::pair<std::string, std::string>> seen_;
};

class CurlFetcherTest : public ::testing::Test {
 protected:
  CannedServer up_{"127.0.0.1"};
  CannedServer inside_{"127.0.0.2"};  // another host: an address inside the network
};

TEST_F(CurlFetcherTest, RedirectsToOtherHostsAreRefusedUnlessAllowed) {
  inside_.Set("/secret", {200, "", "internal"});
  up_.Set("/away", {302, inside_.base() + "/secret", "moved"});
  up_.Set("/file", {302, "file:///etc/passwd", ""});
  up_.Set("/gopher", {301, "gopher://127.0.0.1:70/", ""});
  auto strict = MakeCurlFetcher({.redirects = {.any_host = false}});
  auto page = strict->GetPage(up_.base() + "/away", "", 1 << 20);
  EXPECT_EQ(page.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(page.status().message().find("another host (127.0.0.2)"), std::string::npos)
      << page.status().message();
  EXPECT_TRUE(inside_.Seen().empty());
  for (const char* path : {"/file", "/gopher"}) {
    for (bool any_host : {false, true}) {
      auto f = MakeCurlFetcher({.redirects = {.any_host = any_host}});
      auto got = f->GetPage(up_.base() + path, "", 1 << 20);
      EXPECT_EQ(got.status().code(), StatusCode::kPermissionDenied) << path;
      EXPECT_NE(got.status().message().find("not http(s)"), std::string::npos) << path;
    }
  }
  auto allowed =
      MakeCurlFetcher({.redirects = {.any_host = false, .allowed_hosts = {"127.0.0.2"}}});
  auto followed = allowed->GetPage(up_.base() + "/away", "", 1 << 20);
  ASSERT_OK(followed.status());
  EXPECT_EQ(followed->body, "internal");
  auto worker = MakeCurlFetcher();  // the worker's own sources: any http(s) host
  ASSERT_OK(worker->GetPage(up_.base() + "/away", "", 1 << 20).status());
}

TEST_F(CurlFetcherTest, ARedirectsOwnBodyNeverReachesADownload) {
  up_.Set("/old", {301, "/new", "<html>moved</html>"});
  up_.Set("/new", {200, "", "the bytes"});
  auto f = MakeCurlFetcher({.redirects = {.any_host = false}});
  std::string got;
  ASSERT_OK(f->Download(up_.base() + "/old", [&](std::string_view b) {
    got.append(b);
    return Status::Ok();
  }));
  EXPECT_EQ(got, "the bytes");
}

TEST_F(CurlFetcherTest, TheBearerTokenGoesOnlyUnderItsPrefix) {
  auto bearer = std::make_shared<ScopedBearer>();
  bearer->Set(up_.base() + "/upstream/", "farm_wor_secret0123");
  up_.Set("/upstream/page", {200, "", "ok"});
  up_.Set("/other", {200, "", "ok"});
  up_.Set("/upstream/away", {302, inside_.base() + "/upstream/page", ""});
  inside_.Set("/upstream/page", {200, "", "ok"});
  auto f = MakeCurlFetcher({.bearer = bearer});
  for (const char* path : {"/upstream/page", "/other", "/upstream/../other", "/upstream/away"}) {
    ASSERT_OK(f->GetPage(up_.base() + path, "", 1 << 20).status());
  }
  auto seen = up_.Seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].second, "Bearer farm_wor_secret0123");
  EXPECT_EQ(seen[1].second, "");                                            // another path
  EXPECT_EQ(seen[2], (std::pair<std::string, std::string>{"/other", ""}));  // dot segments
  EXPECT_EQ(seen[3].second, "Bearer farm_wor_secret0123");
  ASSERT_EQ(inside_.Seen().size(), 1u);
  EXPECT_EQ(inside_.Seen()[0].second, "");  // never across a redirect to another host
  // Another port of the same host, another scheme: none.
  EXPECT_EQ(bearer->HeaderFor("http://127.0.0.1:1/upstream/x"), "");
  EXPECT_EQ(bearer->HeaderFor("https" + up_.base().substr(4) + "/upstream/x"), "");
}

TEST_F(CurlFetcherTest, UserinfoStaysWithItsOriginAndOutOfErrors) {
  up_.Set("/idx/a", {302, "/idx/b", ""});
  up_.Set("/idx/b", {302, inside_.base() + "/idx/c", ""});
  inside_.Set("/idx/c", {200, "", "ok"});
  const std::string with_secret = "http://produser:S3CR3TTOKEN@" + up_.base().substr(7);
  auto f = MakeCurlFetcher();
  ASSERT_OK(f->GetPage(with_secret + "/idx/a", "", 1 << 20).status());
  auto seen = up_.Seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen[0].second.starts_with("Basic ")) << seen[0].second;
  EXPECT_EQ(seen[1].second, seen[0].second);  // the same origin keeps it
  EXPECT_EQ(inside_.Seen()[0].second, "");    // another does not get it
  auto missing = f->GetPage(with_secret + "/idx/nonexist/", "", 1 << 20);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message().find("S3CR3TTOKEN"), std::string::npos);
  EXPECT_NE(missing.status().message().find("[REDACTED]@127.0.0.1"), std::string::npos)
      << missing.status().message();
  auto refused = f->GetPage("http://produser:S3CR3TTOKEN@127.0.0.1:1/x", "", 1 << 20);
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(refused.status().message().find("S3CR3TTOKEN"), std::string::npos)
      << refused.status().message();
}

TEST_F(CurlFetcherTest, ACancelledFetcherFetchesNothing) {
  auto cancelled = std::make_shared<std::atomic<bool>>(true);
  auto f = MakeCurlFetcher({.cancelled = cancelled});
  EXPECT_EQ(f->GetPage(up_.base() + "/x", "", 1 << 20).status().code(), StatusCode::kCancelled);
  EXPECT_TRUE(up_.Seen().empty());
  EXPECT_EQ(UrlHost("http://u:p@Example.ORG:8080/x"), "example.org");
  EXPECT_EQ(UrlAddress("https://example.org/x"), "example.org:443");
  EXPECT_EQ(UrlAddress("file:///etc/passwd"), "");
}

}  // namespace
}  // namespace farm::upstream
