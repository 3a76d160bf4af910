#include "worker/env/cache_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs.h"
#include "common/sha256.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/test_util.h"
#include "worker/env/downloads.h"
#include "worker/env/tree_ops.h"

namespace farm::env {
namespace {

using farm::testing::FakeClock;
using farm::testing::ScopedTempDir;

std::unique_ptr<CacheStore> OpenStore(const std::string& root, const Clock* clock) {
  auto store = CacheStore::Open(root, clock);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

Status WriteBytes(const std::string& dir, int64_t n) {
  return fs::WriteFileAtomic(dir + "/data", std::string(static_cast<size_t>(n), 'x'));
}

TEST(CacheStoreTest, EnsureBuildsOnceAndReuses) {
  ScopedTempDir tmp;
  FakeClock clock;
  auto store = OpenStore(tmp.path(), &clock);
  int builds = 0;
  auto build = [&](const std::string& dir) {
    ++builds;
    return WriteBytes(dir, 100);
  };
  bool built = false;
  auto first = store->Ensure(kEnvs, "k1", build, &built);
  ASSERT_OK(first.status());
  EXPECT_TRUE(built);
  EXPECT_EQ(*first, tmp.path() + "/envs/k1");
  EXPECT_TRUE(store->IsComplete(kEnvs, "k1"));
  ASSERT_OK(store->Ensure(kEnvs, "k1", build, &built).status());
  EXPECT_FALSE(built);
  EXPECT_EQ(builds, 1);
  auto entries = store->List();
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].bytes, 100);
}

TEST(CacheStoreTest, FailedBuildLeavesNothing) {
  ScopedTempDir tmp;
  FakeClock clock;
  auto store = OpenStore(tmp.path(), &clock);
  auto failed = store->Ensure(kEnvs, "k1", [](const std::string& dir) {
    (void)WriteBytes(dir, 10);
    return Status::DataLoss("checksum mismatch");
  });
  EXPECT_EQ(failed.status().code(), StatusCode::kDataLoss);
  EXPECT_FALSE(fs::Exists(tmp.path() + "/envs/k1"));
  auto leftovers = store->List();
  EXPECT_TRUE(leftovers->empty());
  struct stat st;
  ASSERT_EQ(stat((tmp.path() + "/tmp").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);  // tmp/ is empty again
}

TEST(CacheStoreTest, OpenSweepsWhatACrashLeft) {
  ScopedTempDir tmp;
  FakeClock clock;
  {
    auto store = OpenStore(tmp.path(), &clock);
    ASSERT_OK(store->Ensure(kEnvs, "done", [](const std::string& d) { return WriteBytes(d, 5); })
                  .status());
  }
  // What kill -9 leaves: a half-written scratch folder, and an entry without its marker.
  ASSERT_OK(fs::MakeDirs(tmp.path() + "/tmp/envs-half-123/venv"));
  ASSERT_OK(fs::MakeDirs(tmp.path() + "/toolkits/half/cuda/bin"));
  auto store = OpenStore(tmp.path(), &clock);
  EXPECT_FALSE(fs::Exists(tmp.path() + "/tmp/envs-half-123"));
  EXPECT_FALSE(fs::Exists(tmp.path() + "/toolkits/half"));
  EXPECT_TRUE(store->IsComplete(kEnvs, "done"));
}

TEST(CacheStoreTest, TrimEvictsLeastRecentlyUsedButNeverPinned) {
  ScopedTempDir tmp;
  FakeClock clock;
  auto store = OpenStore(tmp.path(), &clock);
  for (const char* key : {"a", "b", "c"}) {
    ASSERT_OK(store->Ensure(kEnvs, key, [](const std::string& d) { return WriteBytes(d, 1000); })
                  .status());
    clock.Advance(60'000);
  }
  ASSERT_OK(store->Touch(kEnvs, "a"));  // a is now the most recent; b the oldest
  auto pin_b = store->Pin(kEnvs, "b");
  ASSERT_OK(pin_b.status());
  auto freed = store->Trim(2000);
  ASSERT_OK(freed.status());
  EXPECT_EQ(*freed, 1000);
  EXPECT_TRUE(store->IsComplete(kEnvs, "b"));   // pinned, though oldest
  EXPECT_FALSE(store->IsComplete(kEnvs, "c"));  // the oldest unpinned
  EXPECT_TRUE(store->IsComplete(kEnvs, "a"));
  *pin_b = CachePin();  // released
  EXPECT_EQ(*store->Trim(1100), 1000);
  EXPECT_FALSE(store->IsComplete(kEnvs, "b"));
  EXPECT_TRUE(store->IsComplete(kEnvs, "a"));
}

TEST(CacheStoreTest, RefusesNamesThatLeaveTheStore) {
  ScopedTempDir tmp;
  FakeClock clock;
  auto store = OpenStore(tmp.path(), &clock);
  auto noop = [](const std::string&) { return Status::Ok(); };
  for (const char* key : {"..", "../x", "a/b", "", "a b"}) {
    EXPECT_EQ(store->Ensure(kEnvs, key, noop).status().code(), StatusCode::kInvalidArgument) << key;
    EXPECT_FALSE(store->Pin(kEnvs, key).ok()) << key;
  }
}

TEST(TreeOpsTest, CloneLinksFilesAndRewritesTheVenvPath) {
  ScopedTempDir tmp;
  std::string src = tmp.path() + "/snap/venv";
  ASSERT_OK(fs::MakeDirs(src + "/bin"));
  ASSERT_OK(fs::MakeDirs(src + "/lib/site-packages/torch"));
  ASSERT_OK(fs::WriteFileAtomic(src + "/bin/pip", "#!" + src + "/bin/python\nimport pip\n", 0755));
  ASSERT_OK(fs::WriteFileAtomic(src + "/pyvenv.cfg",
                                "home = /opt/py/bin\ncommand = x -m venv " + src + "\n"));
  ASSERT_OK(fs::WriteFileAtomic(src + "/lib/site-packages/torch/__init__.py", "x = 1\n"));
  ASSERT_EQ(symlink("/opt/py/bin/python3", (src + "/bin/python").c_str()), 0);
  ASSERT_OK(SealTree(src));
  std::string dst = tmp.path() + "/job/venv";
  ASSERT_OK(fs::MakeDirs(tmp.path() + "/job"));
  auto stats = CloneTree(src, dst, src, dst);
  ASSERT_OK(stats.status());
  EXPECT_EQ(stats->files, 3);
  EXPECT_EQ(stats->rewritten, 2);
  EXPECT_EQ(stats->linked + stats->reflinked, 1);
  EXPECT_EQ(*fs::ReadFile(dst + "/bin/pip"), "#!" + dst + "/bin/python\nimport pip\n");
  EXPECT_NE(fs::ReadFile(dst + "/pyvenv.cfg")->find("-m venv " + dst), std::string::npos);
  char target[256] = {};
  ASSERT_GT(readlink((dst + "/bin/python").c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "/opt/py/bin/python3");
  struct stat a, b;
  ASSERT_EQ(stat((src + "/lib/site-packages/torch/__init__.py").c_str(), &a), 0);
  ASSERT_EQ(stat((dst + "/lib/site-packages/torch/__init__.py").c_str(), &b), 0);
  if (stats->linked == 1) {
    EXPECT_EQ(a.st_ino, b.st_ino);  // one inode: no data copied
  }
  EXPECT_EQ(b.st_mode & 0222, 0u);  // sealed: writes in place fail
  auto size = MeasureTree(src);
  ASSERT_OK(size.status());
  EXPECT_EQ(size->files, 3);
}

TEST(TreeOpsTest, MergeRefusesOverlappingFiles) {
  ScopedTempDir tmp;
  ASSERT_OK(fs::MakeDirs(tmp.path() + "/a/include/crt"));
  ASSERT_OK(fs::WriteFileAtomic(tmp.path() + "/a/include/crt/x.h", "a"));
  ASSERT_OK(fs::MakeDirs(tmp.path() + "/b/include"));
  ASSERT_OK(fs::WriteFileAtomic(tmp.path() + "/b/include/y.h", "b"));
  ASSERT_OK(MergeTree(tmp.path() + "/a", tmp.path() + "/merged"));
  ASSERT_OK(MergeTree(tmp.path() + "/b", tmp.path() + "/merged"));
  EXPECT_TRUE(fs::Exists(tmp.path() + "/merged/include/crt/x.h"));
  EXPECT_TRUE(fs::Exists(tmp.path() + "/merged/include/y.h"));
  ASSERT_OK(fs::MakeDirs(tmp.path() + "/c/include"));
  ASSERT_OK(fs::WriteFileAtomic(tmp.path() + "/c/include/y.h", "c"));
  EXPECT_EQ(MergeTree(tmp.path() + "/c", tmp.path() + "/merged").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(*fs::ReadFile(tmp.path() + "/merged/include/y.h"), "b");
}

TEST(DownloadsTest, VerifiesAndFetchesOnce) {
  ScopedTempDir tmp;
  FakeClock clock;
  auto store = OpenStore(tmp.path(), &clock);
  farm::testing::FakeFetcher fetcher;
  std::string body(1000, 'w');
  fetcher.Serve("http://h/w.whl", body);
  DownloadRequest req{"http://h/w.whl", Sha256Hex(body), 1000, "w.whl"};
  int64_t last = 0;
  auto path = FetchVerified(*store, fetcher, req, [&](int64_t done, int64_t) { last = done; });
  ASSERT_OK(path.status());
  EXPECT_EQ(*fs::ReadFile(*path), body);
  EXPECT_EQ(last, 1000);
  ASSERT_OK(FetchVerified(*store, fetcher, req, nullptr).status());
  EXPECT_EQ(fetcher.Count("http://h/w.whl"), 1);
}

TEST(DownloadsTest, ADownloadOfUnlistedSizeReportsItsEnd) {
  ScopedTempDir tmp;
  FakeClock clock;
  auto store = OpenStore(tmp.path(), &clock);
  farm::testing::FakeFetcher fetcher;
  std::string body(1000, 'u');
  fetcher.Serve("http://h/u.whl", body);
  DownloadRequest req{"http://h/u.whl", Sha256Hex(body), -1, "u.whl"};  // a page without sizes
  std::vector<std::pair<int64_t, int64_t>> reports;
  ASSERT_OK(FetchVerified(*store, fetcher, req, [&](int64_t done, int64_t total) {
              reports.push_back({done, total});
            }).status());
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back(), (std::pair<int64_t, int64_t>{1000, 1000}));  // done == total: the end
}

TEST(DownloadsTest, MismatchIsRefusedAndNothingCached) {
  ScopedTempDir tmp;
  FakeClock clock;
  auto store = OpenStore(tmp.path(), &clock);
  farm::testing::FakeFetcher fetcher;
  std::string good(100, 'g');
  std::string bad = good;
  bad[50] = 'X';
  fetcher.Serve("http://h/x.whl", bad);
  DownloadRequest req{"http://h/x.whl", Sha256Hex(good), 100, "x.whl"};
  auto r = FetchVerified(*store, fetcher, req, nullptr);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("checksum mismatch for x.whl"), std::string::npos);
  EXPECT_NE(r.status().message().find(Sha256Hex(bad)), std::string::npos);
  EXPECT_TRUE(store->List()->empty());
  // Longer than listed: stopped as soon as it overflows.
  fetcher.Serve("http://h/x.whl", good + "more");
  EXPECT_EQ(FetchVerified(*store, fetcher, req, nullptr).status().code(), StatusCode::kDataLoss);
  req.size = 200;  // shorter than listed
  fetcher.Serve("http://h/x.whl", good);
  EXPECT_EQ(FetchVerified(*store, fetcher, req, nullptr).status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(store->List()->empty());
  req.size = 100;
  EXPECT_OK(FetchVerified(*store, fetcher, req, nullptr).status());
}

TEST(DownloadsTest, UnreachableAndUnpinned) {
  ScopedTempDir tmp;
  FakeClock clock;
  auto store = OpenStore(tmp.path(), &clock);
  farm::testing::FakeFetcher fetcher;
  fetcher.Serve("http://h/y", "y");
  fetcher.Fail("http://h/y", Status::Unavailable("connection refused"));
  DownloadRequest req{"http://h/y", Sha256Hex("y"), 1, "y"};
  EXPECT_EQ(FetchVerified(*store, fetcher, req, nullptr).status().code(), StatusCode::kUnavailable);
  req.sha256 = "";
  EXPECT_EQ(FetchVerified(*store, fetcher, req, nullptr).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(fetcher.Count("http://h/y"), 1);  // an unpinned file is never fetched
}

TEST(DownloadsTest, AddLocalFilePreloads) {
  ScopedTempDir tmp;
  FakeClock clock;
  auto store = OpenStore(tmp.path() + "/cache", &clock);
  ASSERT_OK(fs::WriteFileAtomic(tmp.path() + "/torch.whl", "wheel bytes"));
  auto digest = AddLocalFile(*store, tmp.path() + "/torch.whl");
  ASSERT_OK(digest.status());
  EXPECT_EQ(*digest, Sha256Hex("wheel bytes"));
  farm::testing::FakeFetcher offline;  // serves nothing
  auto path =
      FetchVerified(*store, offline, {"http://h/torch.whl", *digest, 11, "torch.whl"}, nullptr);
  ASSERT_OK(path.status());
  EXPECT_EQ(offline.Total(), 0);
}

}  // namespace
}  // namespace farm::env
