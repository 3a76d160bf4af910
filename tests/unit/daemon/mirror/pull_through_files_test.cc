// The pull-through cache's files, as an attacker would use them: an index serves only
// what it listed under the name it listed it as, one index cannot block another's files,
// bytes the farm holds for other reasons are never served on an upstream's word, files
// nobody provisioned are not pulled for strangers, file URLs on other hosts are refused
// unfetched, the downloaded blobs stay under their bound (least recently used first, a
// blob being served and a preloaded one kept), a restart serves what was stored, the
// staging folder of a farmd that died is swept, and wheels get PEP 658 metadata under both
// names. Upstream requests never run on the caller's thread, and each upstream address
// has its own limit.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/fs.h"
#include "common/sha256.h"
#include "daemon/mirror/pull_through.h"
#include "tests/support/pull_through_fixture.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::mirror {
namespace {

const char kFilesUpstream[] = "http://up/whl/cu128/";
const char kEvil[] = "http://evil/idx/";
const char kJson[] = "application/vnd.pypi.simple.v1+json";

std::string Entry(const std::string& filename, const std::string& url, const std::string& sha,
                  const std::string& extra = "") {
  return R"({"filename": ")" + filename + R"(", "url": ")" + url + R"(", "hashes": {"sha256": ")" +
         sha + "\"}" + extra + "}";
}

std::string PageOf(const std::vector<std::string>& entries) {
  std::string files;
  for (const std::string& e : entries) files += (files.empty() ? "" : ", ") + e;
  return R"({"meta": {"api-version": "1.1"}, "files": [)" + files + "]}";
}

bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 2000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

class PullThroughFilesTest : public farm::testing::PullThroughFixture {
 protected:
  void SetUp() override {
    options_.indexes = {{"cu128", kFilesUpstream}, {"evil", kEvil}};
    StartCache();
  }
  // Serves `files` (name -> bytes) on index cu128's page of `project`, at kFilesUpstream + name.
  std::map<std::string, std::string> ServeProject(const std::string& project,
                                                  const std::map<std::string, std::string>& files) {
    std::vector<std::string> entries;
    std::map<std::string, std::string> shas;
    for (const auto& [name, bytes] : files) {
      fetcher_.Serve(std::string(kFilesUpstream) + name, bytes);
      shas[name] = Sha256Hex(bytes);
      entries.push_back(Entry(name, "../" + name, shas[name]));
    }
    fetcher_.Serve(std::string(kFilesUpstream) + project + "/", PageOf(entries), kJson);
    return shas;
  }
};

TEST_F(PullThroughFilesTest, EachIndexServesOnlyWhatItListedAndCannotBlockAnother) {
  const std::string name = "pkg-1.0-py3-none-any.whl";
  const std::string sha = ServeProject("pkg", {{name, "the wheel"}})[name];
  // A hostile index lists the same digest first, at a URL that serves nothing.
  fetcher_.Serve(std::string(kEvil) + "pkg/", PageOf({Entry("bait.whl", "/dead.whl", sha)}), kJson);
  ASSERT_OK(Page("evil", "pkg").status());
  ASSERT_OK(Page("cu128", "pkg").status());
  auto file = FileOf("cu128", sha, name);
  ASSERT_OK(file.status());  // cu128's own URL, whatever evil listed
  EXPECT_EQ(file->blob_sha256, sha);
  EXPECT_EQ(fetcher_.Count("http://evil/dead.whl"), 0);
  // Not under another name, not for an index that did not list it, not an unlisted digest.
  EXPECT_EQ(FileOf("cu128", sha, "other-1.0-py3-none-any.whl").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(FileOf("evil", sha, name).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FileOf("cu128", std::string(64, 'e'), name).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FileOf("cu999", sha, name).status().code(), StatusCode::kNotFound);
}

TEST_F(PullThroughFilesTest, AnotherIndexListingTheSameBytesSharesTheirDownload) {
  const std::string name = "setuptools-66.1.1-py3-none-any.whl";
  const std::string sha = ServeProject("setuptools", {{name, "the same wheel"}})[name];
  fetcher_.Serve(std::string(kEvil) + "setuptools/", PageOf({Entry(name, "/s.whl", sha)}), kJson);
  ASSERT_OK(Page("cu128", "setuptools").status());
  ASSERT_OK(Page("evil", "setuptools").status());
  ASSERT_OK(FileOf("cu128", sha, name).status());
  auto shared = FileOf("evil", sha, name, /*may_pull=*/false);  // stored: no pull needed
  ASSERT_OK(shared.status());
  EXPECT_EQ(shared->blob_sha256, sha);
  EXPECT_EQ(fetcher_.Count("http://evil/s.whl"), 0);
  EXPECT_EQ(cache_->stats().stored_bytes, 14);  // one blob, counted once
}

TEST_F(PullThroughFilesTest, BytesHeldForOtherReasonsAreNeverServedOnAnUpstreamsWord) {
  // A submitter's source archive: its sha256 is in a public job log.
  const std::string secret = PutBlob("a submitter's private source archive");
  fetcher_.Serve(std::string(kEvil) + "src/", PageOf({Entry("src-1.0.tar.gz", "/s.tgz", secret)}),
                 kJson);
  fetcher_.Serve("http://evil/s.tgz", "whatever the attacker has");
  ASSERT_OK(Page("evil", "src").status());
  auto anonymous = FileOf("evil", secret, "src-1.0.tar.gz", /*may_pull=*/false);
  EXPECT_EQ(anonymous.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(fetcher_.Count("http://evil/s.tgz"), 0);
  // Even for a worker, the index must give the bytes itself.
  auto pulled = FileOf("evil", secret, "src-1.0.tar.gz");
  EXPECT_EQ(pulled.status().code(), StatusCode::kDataLoss) << pulled.status().ToString();
  EXPECT_EQ(fetcher_.Count("http://evil/s.tgz"), 1);
  EXPECT_TRUE(blobs_->Contains(secret));  // untouched
}

TEST_F(PullThroughFilesTest, FilesNobodyProvisionedArePulledOnlyForThoseWhoMayPull) {
  const std::string name = "pkg-1.0-py3-none-any.whl";
  const std::string sha = ServeProject("pkg", {{name, "the wheel"}})[name];
  ASSERT_OK(Page("cu128", "pkg").status());
  auto refused = FileOf("cu128", sha, name, /*may_pull=*/false);
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.status().message().find("workers and admins"), std::string::npos);
  EXPECT_EQ(fetcher_.Count(std::string(kFilesUpstream) + name), 0);
  EXPECT_EQ(cache_->stats().pulls_refused, 1);
  ASSERT_OK(FileOf("cu128", sha, name).status());
  ASSERT_OK(FileOf("cu128", sha, name, /*may_pull=*/false).status());  // stored: anyone reads
  EXPECT_EQ(fetcher_.Count(std::string(kFilesUpstream) + name), 1);
  // Allowed by the farm's configuration.
  options_.anonymous_pulls = true;
  RestartCache();
  const std::string other = "pkg-2.0-py3-none-any.whl";
  const std::string sha2 = ServeProject("pkg", {{other, "another wheel"}})[other];
  ASSERT_OK(Page("cu128", "pkg").status());
  EXPECT_OK(FileOf("cu128", sha2, other, /*may_pull=*/false).status());
}

TEST_F(PullThroughFilesTest, FileUrlsOnOtherHostsAreRefusedWithoutARequest) {
  const std::string sha = Sha256Hex("internal");
  fetcher_.Serve("http://10.0.0.5/admin/x.whl", "internal");
  fetcher_.Serve(std::string(kFilesUpstream) + "pkg/",
                 PageOf({Entry("pkg-1.0-py3-none-any.whl", "http://10.0.0.5/admin/x.whl", sha)}),
                 kJson);
  ASSERT_OK(Page("cu128", "pkg").status());
  auto refused = FileOf("cu128", sha, "pkg-1.0-py3-none-any.whl");
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.status().message().find("10.0.0.5"), std::string::npos);
  EXPECT_EQ(fetcher_.Count("http://10.0.0.5/admin/x.whl"), 0);
  options_.allowed_hosts = {"10.0.0.5"};
  RestartCache();
  ASSERT_OK(Page("cu128", "pkg").status());
  EXPECT_OK(FileOf("cu128", sha, "pkg-1.0-py3-none-any.whl").status());
}

TEST_F(PullThroughFilesTest, TheCacheStaysUnderItsBoundLeastRecentlyUsedFirst) {
  options_.max_bytes = 100'000;
  RestartCache();
  const std::map<std::string, std::string> files = {{"a-1.0.tar.gz", std::string(40'000, 'a')},
                                                    {"b-1.0.tar.gz", std::string(40'000, 'b')},
                                                    {"c-1.0.tar.gz", std::string(40'000, 'c')}};
  std::map<std::string, std::string> sha;
  for (const auto& [name, bytes] : files) {
    std::string project = name.substr(0, 1);
    sha[name] = ServeProject(project, {{name, bytes}})[name];
    ASSERT_OK(Page("cu128", project).status());
  }
  auto get = [&](const std::string& name) {
    clock_.Advance(1000);
    return FileOf("cu128", sha[name], name);
  };
  ASSERT_OK(get("a-1.0.tar.gz").status());
  ASSERT_OK(get("b-1.0.tar.gz").status());
  ASSERT_OK(get("a-1.0.tar.gz").status());  // a used again: b is now the oldest
  ASSERT_OK(get("c-1.0.tar.gz").status());
  EXPECT_TRUE(blobs_->Contains(sha["a-1.0.tar.gz"]));
  EXPECT_FALSE(blobs_->Contains(sha["b-1.0.tar.gz"]));
  EXPECT_TRUE(blobs_->Contains(sha["c-1.0.tar.gz"]));
  EXPECT_EQ(cache_->stats().stored_bytes, 80'000);
  EXPECT_EQ(cache_->stats().evicted, 1);
  {
    // a is the oldest now, but being served: c goes instead.
    auto serving = get("a-1.0.tar.gz");
    ASSERT_OK(serving.status());
    ASSERT_OK(get("c-1.0.tar.gz").status());
    ASSERT_OK(get("b-1.0.tar.gz").status());  // downloaded again
    EXPECT_TRUE(blobs_->Contains(sha["a-1.0.tar.gz"]));
    EXPECT_FALSE(blobs_->Contains(sha["c-1.0.tar.gz"]));
    EXPECT_EQ(fetcher_.Count(std::string(kFilesUpstream) + "b-1.0.tar.gz"), 2);
  }
  // A preloaded file is not counted and never evicted.
  const std::string big = std::string(150'000, 'p');
  const std::string preloaded = PutBlob(big);
  ASSERT_OK(cache_->AddPreloaded("cu128", PreloadKind::kIndexFile, "p-1.0.tar.gz", preloaded,
                                 static_cast<int64_t>(big.size())));
  ASSERT_OK(get("c-1.0.tar.gz").status());
  EXPECT_TRUE(blobs_->Contains(preloaded));
  EXPECT_LE(cache_->stats().stored_bytes, 100'000);
  EXPECT_OK(FileOf("cu128", preloaded, "p-1.0.tar.gz", /*may_pull=*/false).status());
}

TEST_F(PullThroughFilesTest, ARestartServesWhatWasStoredForTheIndexThatListedIt) {
  const std::string name = "pkg-1.0-py3-none-any.whl";
  const std::string sha = ServeProject("pkg", {{name, "the wheel"}})[name];
  ASSERT_OK(Page("cu128", "pkg").status());
  ASSERT_OK(FileOf("cu128", sha, name).status());
  RestartCache();
  fetcher_.Fail(std::string(kFilesUpstream) + "pkg/", Status::Unavailable("no network"));
  EXPECT_OK(FileOf("cu128", sha, name, /*may_pull=*/false).status());  // no page asked first
  auto offline = Page("cu128", "pkg");
  ASSERT_OK(offline.status());
  EXPECT_NE(offline->body.find(sha), std::string::npos) << offline->body;
  EXPECT_EQ(FileOf("evil", sha, name).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fetcher_.Count(std::string(kFilesUpstream) + name), 1);
}

TEST_F(PullThroughFilesTest, WhatADeadFarmdLeftInTheStagingFolderIsSweptAtStart) {
  ASSERT_OK(fs::WriteFileAtomic(options_.staging_dir + "/mirror-0123456789abcdef", "half"));
  ASSERT_OK(fs::WriteFileAtomic(options_.staging_dir + "/notes", "not a download"));
  RestartCache();
  EXPECT_FALSE(fs::Exists(options_.staging_dir + "/mirror-0123456789abcdef"));
  EXPECT_TRUE(fs::Exists(options_.staging_dir + "/notes"));
}

TEST_F(PullThroughFilesTest, WheelsCarryTheirMetadataUnderBothNames) {
  // Upstream offers one wheel's metadata file (checked by its digest)...
  const std::string offered = "Metadata-Version: 2.1\nName: up\nVersion: 1.0\n";
  const std::string up_name = "up-1.0-py3-none-any.whl";
  fetcher_.Serve(std::string(kFilesUpstream) + up_name, "up wheel");
  fetcher_.Serve(std::string(kFilesUpstream) + up_name + ".metadata", offered);
  // ...and not the other's, a real wheel whose METADATA farmd reads once it is stored.
  wheel::testing::WheelSpec spec;
  spec.filename = "own-1.0-py3-none-any.whl";
  spec.dist_info = "own-1.0.dist-info";
  spec.metadata = "Metadata-Version: 2.1\nName: own\nVersion: 1.0\nRequires-Dist: up\n";
  spec.wheel = "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
  auto path = wheel::testing::WriteWheel(tmp_.path(), spec);
  ASSERT_OK(path.status());
  auto own = fs::ReadFile(*path);
  ASSERT_OK(own.status());
  fetcher_.Serve(std::string(kFilesUpstream) + spec.filename, *own);
  const std::string offered_sha = Sha256Hex(offered);
  fetcher_.Serve(std::string(kFilesUpstream) + "mix/",
                 PageOf({Entry(up_name, "../" + up_name, Sha256Hex("up wheel"),
                               R"(, "core-metadata": {"sha256": ")" + offered_sha + "\"}"),
                         Entry(spec.filename, "../" + spec.filename, Sha256Hex(*own))}),
                 kJson);
  auto page = Page("cu128", "mix");
  ASSERT_OK(page.status());
  EXPECT_NE(page->body.find(R"("core-metadata":{"sha256":")" + offered_sha), std::string::npos);
  // Not the old name in JSON: pip 22.3 to 23.0 fail on it (they are answered HTML).
  EXPECT_EQ(page->body.find("dist-info-metadata"), std::string::npos) << page->body;
  auto md = FileOf("cu128", Sha256Hex("up wheel"), up_name, false, /*metadata=*/true);
  ASSERT_OK(md.status());
  EXPECT_EQ(md->body, offered);
  ASSERT_OK(FileOf("cu128", Sha256Hex("up wheel"), up_name, false, true).status());
  EXPECT_EQ(fetcher_.Count(std::string(kFilesUpstream) + up_name + ".metadata"), 1);  // kept
  EXPECT_EQ(fetcher_.Count(std::string(kFilesUpstream) + up_name), 0);  // never the wheel
  // No metadata for the other until its wheel is stored; then its own METADATA.
  EXPECT_EQ(FileOf("cu128", Sha256Hex(*own), spec.filename, false, true).status().code(),
            StatusCode::kNotFound);
  ASSERT_OK(FileOf("cu128", Sha256Hex(*own), spec.filename).status());
  const std::string ours = Sha256Hex(spec.metadata);
  auto html = Page("cu128", "mix", /*json=*/false);
  ASSERT_OK(html.status());
  EXPECT_NE(html->body.find("data-core-metadata=\"sha256=" + ours +
                            "\" data-dist-info-metadata=\"sha256=" + ours + "\""),
            std::string::npos)
      << html->body;
  md = FileOf("cu128", Sha256Hex(*own), spec.filename, false, true);
  ASSERT_OK(md.status());
  EXPECT_EQ(md->body, spec.metadata);
  // Upstream's metadata that fails its digest is refused.
  RestartCache();
  fetcher_.Serve(std::string(kFilesUpstream) + up_name + ".metadata",
                 offered + "Requires-Dist: evil\n");
  ASSERT_OK(Page("cu128", "mix").status());
  EXPECT_EQ(FileOf("cu128", Sha256Hex("up wheel"), up_name, false, true).status().code(),
            StatusCode::kDataLoss);
}

TEST_F(PullThroughFilesTest, UpstreamRequestsRunOnTheCachesThreadsWithALimitPerAddress) {
  options_.limits = {.max_in_flight = 4, .max_per_address = 1};
  options_.indexes["other"] = "http://other/idx/";
  RestartCache();
  for (const char* project : {"a", "b"}) {
    fetcher_.Serve(std::string(kFilesUpstream) + project + "/", PageOf({}), kJson);
    fetcher_.Hold(std::string(kFilesUpstream) + project + "/");
  }
  fetcher_.Serve("http://other/idx/c/", PageOf({}), kJson);
  std::atomic<int> answered{0};
  auto count = [&](Result<MirrorAnswer> r) {
    EXPECT_OK(r.status());
    ++answered;
  };
  PageRequest a{.index = "cu128", .project = "a", .json = true, .files_base = "/f/"};
  PageRequest b = a;
  b.project = "b";
  cache_->IndexPageAsync(a, count);  // returns at once: the upstream holds the request
  cache_->IndexPageAsync(b, count);
  EXPECT_EQ(answered.load(), 0);
  ASSERT_TRUE(WaitFor([&] { return fetcher_.Waiting() == 1; }));
  // One request to up at a time; another upstream is answered meanwhile.
  EXPECT_EQ(cache_->stats().fetches_queued, 1);
  auto other =
      cache_->IndexPage({.index = "other", .project = "c", .json = true, .files_base = "/"});
  EXPECT_OK(other.status());
  EXPECT_EQ(fetcher_.Waiting(), 1);
  EXPECT_EQ(answered.load(), 0);
  fetcher_.Release();
  ASSERT_TRUE(WaitFor([&] { return answered.load() == 2; }));
  // A kept page is answered on the caller's thread, with no request.
  bool at_once = false;
  cache_->IndexPageAsync(a, [&](Result<MirrorAnswer> r) { at_once = r.ok(); });
  EXPECT_TRUE(at_once);
}

}  // namespace
}  // namespace farm::mirror
