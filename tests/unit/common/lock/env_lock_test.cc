// The PEP 751 lock: written deterministically, read back exactly, hostile texts refused,
// and what changed between two locks said per package.
#include "common/lock/env_lock.h"

#include "tests/support/test_util.h"

namespace farm::lock {
namespace {

const std::string kSha1(64, 'a');
const std::string kSha2(64, 'b');

LockedPackage Package(const std::string& name, const std::string& version, const std::string& sha,
                      int64_t size = 100) {
  std::string dist = name;
  for (char& c : dist) c = c == '-' ? '_' : c;
  std::string file = dist + "-" + version + "-py3-none-any.whl";
  return {name, version, "https://idx.example/cu130/", file, "https://files.example/" + file,
          sha,  size};
}

EnvLock Torch() {
  EnvLock lock;
  lock.python = "3.12";
  lock.platform = "linux_x86_64";
  lock.index_name = "cu130";
  lock.requirements = {"torch==2.11.0+cu130", "setuptools>=64"};
  lock.packages = {Package("torch", "2.11.0+cu130", kSha1, 900),
                   Package("filelock", "3.20.0", kSha2)};
  return lock;
}

TEST(EnvLockTest, RoundTripsAndSortsItsPackages) {
  std::string text = ToToml(Torch());
  EXPECT_NE(text.find("lock-version = \"1.0\""), std::string::npos);
  EXPECT_NE(text.find("environments = [\"python_version == '3.12' and sys_platform == 'linux' and "
                      "platform_machine == 'x86_64'\"]"),
            std::string::npos)
      << text;
  EXPECT_LT(text.find("name = \"filelock\""), text.find("name = \"torch\""));
  auto back = ParseToml(text);
  ASSERT_OK(back.status());
  EXPECT_EQ(ToToml(*back), text);
  EXPECT_EQ(back->index_name, "cu130");
  EXPECT_EQ(back->requirements, Torch().requirements);
  ASSERT_NE(Find(*back, "Torch"), nullptr);
  EXPECT_EQ(Find(*back, "torch")->size, 900);
  EXPECT_EQ(Find(*back, "torch")->sha256, kSha1);
  EXPECT_EQ(Find(*back, "nothing"), nullptr);
  // The order the resolver listed them in does not change the digest.
  EnvLock reversed = Torch();
  std::swap(reversed.packages[0], reversed.packages[1]);
  EXPECT_EQ(Digest(reversed), Digest(Torch()));
  EXPECT_EQ(Digest(*back), Digest(Torch()));
}

TEST(EnvLockTest, ReadsALockPipOrUvWouldWrite) {
  const std::string text = R"(lock-version = "1.0"
created-by = "uv"
requires-python = ">=3.12"

[[packages]]
name = "Typing_Extensions"
version = "4.15.0"
index = "https://pypi.org/simple"
wheels = [{ name = "typing_extensions-4.15.0-py3-none-any.whl", url = "https://files.example/t.whl", upload-time = 2025-08-25T13:49:24Z, size = 44614, hashes = { sha256 = ")" +
                           std::string(64, 'C') + R"(" } }]
)";
  auto lock = ParseToml(text);
  ASSERT_OK(lock.status());
  ASSERT_EQ(lock->packages.size(), 1u);
  EXPECT_EQ(lock->packages[0].name, "typing-extensions");
  EXPECT_EQ(lock->packages[0].sha256, std::string(64, 'c'));
  EXPECT_EQ(lock->packages[0].size, 44614);
}

TEST(EnvLockTest, RefusesWhatAWorkerCouldNotInstallExactly) {
  const std::string head =
      "lock-version = \"1.0\"\n[[packages]]\nname = \"a\"\nversion = \"1.0\"\n";
  const std::string good_wheel =
      "wheels = [{name = \"a-1.0-py3-none-any.whl\", url = \"https://x/a-1.0-py3-none-any.whl\", "
      "hashes = {sha256 = \"" +
      kSha1 + "\"}}]\n";
  ASSERT_OK(ParseToml(head + good_wheel).status());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"this is [not toml", "pylock.toml:1"},
      {"lock-version = \"2.0\"\n", "lock-version"},
      {head, "no wheel"},
      {head + "sdist = {url = \"https://x/a-1.0.tar.gz\"}\n" + good_wheel, "wheels only"},
      {head + "vcs = {url = \"https://x/a.git\", commit-id = \"1\"}\n" + good_wheel, "wheels only"},
      {head +
           "wheels = [{name = \"a-1.0-py3-none-any.whl\", path = \"/etc/passwd\", hashes = "
           "{sha256 = \"" +
           kSha1 + "\"}}]\n",
       "local path"},
      {head +
           "wheels = [{name = \"a-1.0-py3-none-any.whl\", url = \"file:///etc/passwd\", "
           "hashes = {sha256 = \"" +
           kSha1 + "\"}}]\n",
       "http(s)"},
      {head + "wheels = [{name = \"a-1.0-py3-none-any.whl\", url = \"https://x/a\", hashes = "
              "{md5 = \"00\"}}]\n",
       "sha256"},
      {head +
           "wheels = [{name = \"b-1.0-py3-none-any.whl\", url = \"https://x/b\", hashes = "
           "{sha256 = \"" +
           kSha1 + "\"}}]\n",
       "is not a 1.0"},
      {head +
           "wheels = [{name = \"../a-1.0-py3-none-any.whl\", url = \"https://x/a\", hashes = "
           "{sha256 = \"" +
           kSha1 + "\"}}]\n",
       "not a wheel file name"},
      {head + good_wheel + "[[packages]]\nname = \"A\"\nversion = \"1.0\"\n" + good_wheel,
       "locked twice"},
      {head +
           "wheels = [{name = \"a-1.0-py3-none-any.whl\", url = \"https://x/a\", hashes = "
           "{sha256 = \"" +
           kSha1 +
           "\"}}, {name = \"a-1.0-cp312-cp312-linux_x86_64.whl\", "
           "url = \"https://x/b\", hashes = {sha256 = \"" +
           kSha2 + "\"}}]\n",
       "more than one"},
      {std::string(kMaxLockBytes + 1, ' '), "larger than"},
  };
  for (const auto& [text, why] : bad) {
    Status s = ParseToml(text).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << text.substr(0, 120);
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  }
}

TEST(EnvLockTest, SaysWhatChangedPerPackage) {
  EnvLock before = Torch();
  EnvLock after = Torch();
  EXPECT_TRUE(Diff(before, after).empty());
  after.packages[0] = Package("torch", "2.11.1+cu130", kSha2);
  after.packages.push_back(Package("cuda-bindings", "13.3.1", kSha1));
  before.packages.push_back(Package("nvidia-nvtx", "13.0.85", kSha1));
  after.packages[1].sha256 = kSha1;  // filelock: same version, another file
  std::vector<std::string> diff = Diff(before, after);
  EXPECT_EQ(diff, (std::vector<std::string>{
                      "+ cuda-bindings 13.3.1", "filelock 3.20.0 (another file)",
                      "- nvidia-nvtx 13.0.85", "torch 2.11.0+cu130 -> 2.11.1+cu130"}));
  LockSummary s = Summarize(Torch());
  EXPECT_EQ(s.packages, 2);
  EXPECT_EQ(s.bytes, 1000);
  EXPECT_EQ(DescribeSummary(s), "2 packages, 1000 B");
}

}  // namespace
}  // namespace farm::lock
