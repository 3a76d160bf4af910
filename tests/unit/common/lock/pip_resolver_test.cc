// pip's resolver as the farm drives it: the command line for a cell's target, its report
// read into a lock, and what a failed run means (the recipe's, or the index's).
#include "common/lock/pip_resolver.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "common/fs.h"
#include "common/upstream/simple_index.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/test_util.h"

namespace farm::lock {
namespace {

const std::string kSha(64, 'a');

ResolveRequest Request() {
  ResolveRequest r;
  r.python = "3.13";
  r.platform = "linux_aarch64";
  r.glibc = "2.28";
  r.index_url = "http://127.0.0.1:7/upstream/pypi/cu130/simple/";
  r.index_name = "cu130";
  r.requirements = {"torch==2.11.0", "setuptools>=64"};
  return r;
}

bool Has(const std::vector<std::string>& v, const std::vector<std::string>& seq) {
  return std::search(v.begin(), v.end(), seq.begin(), seq.end()) != v.end();
}

TEST(PipResolverTest, AsksForTheTargetsWheelsNotTheHosts) {
  std::vector<std::string> args = PipArguments(Request(), "/w/target");
  EXPECT_TRUE(Has(args, {"install", "--dry-run", "--report", "-"}));
  EXPECT_TRUE(Has(args, {"--target", "/w/target", "--ignore-installed"}));
  EXPECT_TRUE(Has(args, {"--only-binary", ":all:"}));
  EXPECT_TRUE(Has(args, {"--python-version", "3.13"}));
  EXPECT_TRUE(Has(args, {"--abi", "cp313"}));
  EXPECT_TRUE(Has(args, {"--platform", "manylinux_2_28_aarch64"}));
  EXPECT_TRUE(Has(args, {"--platform", "linux_aarch64"}));
  EXPECT_FALSE(Has(args, {"--platform", "manylinux_2_29_aarch64"}));
  // The index's URL may hold a credential: never on the command line.
  EXPECT_EQ(std::find(args.begin(), args.end(), Request().index_url), args.end());
  EXPECT_FALSE(Has(args, {"--index-url"}));
  // Requirements come after "--": a hostile one cannot be read as an option.
  EXPECT_TRUE(Has(args, {"--", "torch==2.11.0", "setuptools>=64"}));
  std::vector<std::string> tags = PlatformTags("linux_x86_64", "2.17");
  EXPECT_EQ(tags.front(), "manylinux_2_17_x86_64");
  EXPECT_TRUE(Has(tags, {"manylinux2014_x86_64"}));
  EXPECT_TRUE(Has(tags, {"manylinux1_x86_64"}));
  EXPECT_EQ(tags.back(), "linux_x86_64");
}

// A report as the launcher writes it for a requirement resolved from PEP 658 metadata (no
// metadata of its own: the wheel's file name says what it is).
std::string Report(const std::string& url, const std::string& hash_field) {
  return R"({"version": "1", "install": [{"download_info": {"url": ")" + url +
         R"(", "archive_info": )" + hash_field + R"(}, "requested": true, "metadata": {}}]})";
}

TEST(PipResolverTest, ReadsTheReportIntoALockWithUpstreamsUrls) {
  PipResolverOptions options;
  options.upstream_url = [](const std::string& url) {
    return "https://download.example/whl/cu130/" + url.substr(url.rfind('/') + 1);
  };
  options.upstream_index_url = "https://download.example/whl/cu130/";
  std::string report = Report("http://127.0.0.1:7/upstream/files/cu130/" + kSha +
                                  "/torch-2.11.0%2Bcu130-cp313-cp313-manylinux_2_28_aarch64.whl",
                              R"({"hash": "sha256=)" + kSha + R"("})");
  auto lock = LockFromReport(report, Request(), options);
  ASSERT_OK(lock.status());
  ASSERT_EQ(lock->packages.size(), 1u);
  const LockedPackage& torch = lock->packages[0];
  EXPECT_EQ(torch.filename, "torch-2.11.0+cu130-cp313-cp313-manylinux_2_28_aarch64.whl");
  EXPECT_EQ(torch.url.rfind("https://download.example/", 0), 0u);
  EXPECT_EQ(torch.index, "https://download.example/whl/cu130/");
  EXPECT_EQ(torch.sha256, kSha);
  EXPECT_EQ(lock->python, "3.13");
  EXPECT_EQ(lock->platform, "linux_aarch64");
  EXPECT_EQ(lock->index_name, "cu130");
  // pip >= 23.1 writes "hashes" too.
  ASSERT_OK(LockFromReport(Report("http://x/a-1.0-py3-none-any.whl",
                                  R"({"hashes": {"sha256": ")" + kSha + R"("}})"),
                           Request(), {})
                .status());
  // An sdist, a missing hash or a report that is not one are refused.
  EXPECT_FALSE(
      LockFromReport(Report("http://x/a-1.0.tar.gz", R"({"hash": "sha256=)" + kSha + R"("})"),
                     Request(), {})
          .ok());
  EXPECT_FALSE(LockFromReport(Report("http://x/a-1.0-py3-none-any.whl", "{}"), Request(), {}).ok());
  EXPECT_FALSE(LockFromReport("not json", Request(), {}).ok());
  EXPECT_FALSE(LockFromReport(R"({"install": []})", Request(), {}).ok());
}

TEST(PipResolverTest, SaysWhoseFailureItIs) {
  Status none = ResolutionFailure(
      "ERROR: Could not find a version that satisfies the requirement sympy>=99 (from "
      "versions: 1.13.3, 1.14.0)\nERROR: No matching distribution found for sympy>=99\n",
      1, Request());
  EXPECT_EQ(none.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.message().find("no wheel satisfies sympy>=99 for Python 3.13 on linux_aarch64 "
                                "from the cu130 index; the index has: 1.13.3, 1.14.0"),
            std::string::npos)
      << none.message();
  Status nothing = ResolutionFailure(
      "ERROR: Could not find a version that satisfies the requirement torch==9.0 (from "
      "versions: none)\n",
      1, Request());
  EXPECT_NE(nothing.message().find("no wheel of it for this target"), std::string::npos);
  Status conflict = ResolutionFailure(
      "ERROR: Cannot install a==1.0 and b==2.0 because these package versions have conflicting "
      "dependencies.\nThe conflict is caused by:\n    a 1.0 depends on c<2\n    b 2.0 depends on "
      "c>=2\nERROR: ResolutionImpossible: for help visit ...\n",
      1, Request());
  EXPECT_EQ(conflict.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(conflict.message().find("a 1.0 depends on c<2"), std::string::npos);
  Status down = ResolutionFailure(
      "WARNING: Retrying (Retry(total=1...)) after connection broken by "
      "'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object>: Failed to "
      "establish a new connection: [Errno 111] Connection refused')': /simple/torch/\nERROR: "
      "Could not find a version that satisfies the requirement torch==2.11.0 (from versions: "
      "none)\n",
      1, Request());
  EXPECT_EQ(down.code(), StatusCode::kUnavailable) << down.message();
  EXPECT_EQ(ResolutionFailure("ERROR: Could not install packages due to an OSError: "
                              "HTTPConnectionPool(host='x', port=1): Max retries exceeded with "
                              "url: /simple/torch/ (Caused by ResponseError('too many 502 error "
                              "responses'))\n",
                              1, Request())
                .code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(ResolutionFailure("Traceback: something else\n", 2, Request()).code(),
            StatusCode::kInternal);
}

TEST(PipResolverTest, AProjectPageThatCannotBeReadIsTheIndexsFailure) {
  // pip skips a page that answered 502 quietly and reports "from versions: none".
  const std::string none =
      "ERROR: Could not find a version that satisfies the requirement torch==2.11.0 (from "
      "versions: none)\nERROR: No matching distribution found for torch==2.11.0\n";
  farm::testing::FakeFetcher fetcher;
  std::string page = upstream::ProjectPageUrl(Request().index_url, "torch");
  fetcher.Fail(page, Status::Unavailable("answered HTTP 502: the upstream is down"));
  Status down = ResolutionFailureReadingIndex(fetcher, none, 1, Request());
  EXPECT_EQ(down.code(), StatusCode::kUnavailable) << down.message();
  EXPECT_NE(down.message().find("from the cu130 index could not be read: answered HTTP 502: "
                                "the upstream is down"),
            std::string::npos)
      << down.message();
  // A project the index really lacks stays the recipe's failure.
  fetcher.Fail(page, Status::NotFound("no such project"));
  EXPECT_EQ(ResolutionFailureReadingIndex(fetcher, none, 1, Request()).code(),
            StatusCode::kInvalidArgument);
}

TEST(PipResolverTest, UnpacksItsPipOnceCompiledAndReadableByTheResolversUser) {
  const std::string wheel = FindPipWheel();
  if (wheel.empty()) GTEST_SKIP() << "no pip wheel (python3-pip-whl) on this host";
  farm::testing::ScopedTempDir tmp;
  RealProcessRunner runner;
  Result<std::string> dir = UnpackPip(runner, "/usr/bin/python3", wheel, tmp.path() + "/resolve");
  ASSERT_OK(dir.status());
  EXPECT_TRUE(fs::Exists(*dir + "/pip/__init__.py"));
  // Bytecode next to the modules pip imports, and nothing left half-done.
  EXPECT_TRUE(fs::Exists(*dir + "/pip/_internal/cli/__pycache__"));
  // No distribution of its own: run from here, pip installs pip into a venv all the same.
  DIR* unpacked = ::opendir(dir->c_str());
  ASSERT_NE(unpacked, nullptr);
  while (dirent* e = ::readdir(unpacked)) {
    EXPECT_FALSE(std::string(e->d_name).ends_with(".dist-info")) << e->d_name;
  }
  ::closedir(unpacked);
  struct stat st {};
  ASSERT_EQ(::stat((*dir + "/pip/__init__.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(::stat((*dir + "/pip").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  // The second resolver finds it there: the same folder, nothing unpacked again.
  const int64_t made = st.st_mtime;
  Result<std::string> again = UnpackPip(runner, "/usr/bin/python3", wheel, tmp.path() + "/resolve");
  ASSERT_OK(again.status());
  EXPECT_EQ(*again, *dir);
  ASSERT_EQ(::stat((*dir + "/pip").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtime, made);
  // A file that is not a wheel: said, and no folder is left to be used.
  const std::string bad_wheel = tmp.path() + "/bad/pip-99-py3-none-any.whl";
  ASSERT_OK(fs::MakeDirs(tmp.path() + "/bad"));
  ASSERT_OK(fs::WriteFileAtomic(bad_wheel, "not a zip"));
  Result<std::string> bad = UnpackPip(runner, "/usr/bin/python3", bad_wheel, tmp.path() + "/bad");
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
  EXPECT_NE(bad.status().message().find("BadZipFile"), std::string::npos) << bad.status().message();
  EXPECT_EQ(FindPipWheel(tmp.path() + "/bad"), bad_wheel);  // nothing unpacked beside it
  DIR* d = ::opendir((tmp.path() + "/bad").c_str());
  ASSERT_NE(d, nullptr);
  int entries = 0;
  while (dirent* e = ::readdir(d)) entries += e->d_name[0] != '.';
  ::closedir(d);
  EXPECT_EQ(entries, 1);
}

}  // namespace
}  // namespace farm::lock
