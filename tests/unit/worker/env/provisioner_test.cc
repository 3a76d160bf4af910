#include "worker/env/provisioner.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

#include "common/fs.h"
#include "common/sha256.h"
#include "tests/support/fake_upstream.h"
#include "tests/support/test_util.h"
#include "worker/env/failure.h"

namespace farm::env {
namespace {

using farm::testing::FakeClock;
using farm::testing::FakeFetcher;
using farm::testing::FakeRun;
using farm::testing::ScopedTempDir;
using farm::testing::ScriptedRunner;

const char kIndex[] = "http://up/whl/cu128/";
const char kPipWheel[] = "pip-23.0.1-py3-none-any.whl";
const char kTorchWheel[] = "torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl";

// An archive, a zip where `zip` is set and a tar.gz otherwise, of {name, content, mode}.
std::string MakeArchive(bool zip,
                        const std::vector<std::tuple<std::string, std::string, int>>& files) {
  std::string out;
  archive* a = archive_write_new();
  if (zip) {
    archive_write_set_format_zip(a);
  } else {
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_gzip(a);
  }
  archive_write_open(
      a, &out, nullptr,
      [](archive*, void* data, const void* buf, size_t n) -> la_ssize_t {
        static_cast<std::string*>(data)->append(static_cast<const char*>(buf), n);
        return static_cast<la_ssize_t>(n);
      },
      nullptr);
  for (const auto& [name, content, mode] : files) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, mode);
    archive_entry_set_size(e, static_cast<la_int64_t>(content.size()));
    archive_write_header(a, e);
    archive_write_data(a, content.data(), content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

// A tar.gz of {name: (content, mode)}.
std::string MakeTarGz(const std::vector<std::tuple<std::string, std::string, int>>& files) {
  return MakeArchive(false, files);
}

// A wheel (a zip holding NAME-VERSION.dist-info/METADATA and RECORD) of `name` `version`
// whose METADATA requires `requires_dist`.
std::string MakeWheel(const std::string& name, const std::string& version,
                      const std::vector<std::string>& requires_dist = {}) {
  std::string metadata = "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n";
  for (const std::string& r : requires_dist) metadata += "Requires-Dist: " + r + "\n";
  const std::string info = name + "-" + version + ".dist-info/";
  return MakeArchive(
      true, {{info + "METADATA", metadata, 0644}, {info + "RECORD", info + "METADATA,,\n", 0644}});
}

std::string JsonPage(const std::string& filename, const std::string& body) {
  std::string url = filename;
  size_t plus = url.find('+');
  if (plus != std::string::npos) url.replace(plus, 1, "%2B");
  return R"({"meta": {"api-version": "1.1"}, "files": [{"filename": ")" + filename +
         R"(", "url": "../)" + url + R"(", "hashes": {"sha256": ")" + Sha256Hex(body) +
         R"("}, "size": )" + std::to_string(body.size()) + "}]}";
}

// What python -m venv and pip do, on disk, as far as the provisioner can tell.
FakeRun FakeCommands(const ProcessSpec& spec, const std::string& pip_error,
                     const std::string& python_version) {
  const auto& argv = spec.argv;
  if (argv.size() >= 3 && argv[1] == "-c") return {0, python_version + "\n", ""};
  if (argv.size() >= 5 && argv[1] == "-m" && argv[2] == "venv") {
    std::string venv = argv[4];
    (void)fs::MakeDirs(venv + "/bin");
    (void)fs::MakeDirs(venv + "/lib/python3.11/site-packages");
    if (symlink(argv[0].c_str(), (venv + "/bin/python").c_str()) != 0) return {1, "", "symlink"};
    (void)fs::WriteFileAtomic(venv + "/pyvenv.cfg",
                              "home = /usr/bin\ncommand = python -m venv " + venv + "\n");
    return {};
  }
  if (argv.size() >= 3 && argv[2] == "install") {
    if (!pip_error.empty()) return {1, "", pip_error};
    // pip runs as VENV/bin/python PIP install ...; uv as uv pip install --python VENV/bin/python.
    bool uv = argv[1] == "pip";
    if (uv && (argv.size() < 5 || argv[3] != "--python")) return {2, "", "uv: no --python"};
    const std::string& python = uv ? argv[4] : argv[0];
    std::string venv = python.substr(0, python.size() - std::string("/bin/python").size());
    (void)fs::WriteFileAtomic(venv + "/bin/pip", "#!" + venv + "/bin/python\n", 0755);
    for (size_t i = uv ? 12 : 11; i < argv.size(); ++i) {
      (void)fs::WriteFileAtomic(venv + "/lib/python3.11/site-packages/" + argv[i] + ".installed",
                                "x");
    }
    return {};
  }
  return {127, "", "unexpected command " + argv[0]};
}

class ProvisionerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pip_ = MakeWheel("pip", "23.0.1");
    torch_ = MakeWheel("torch", "2.8.0+cu128");
    fetcher_.Serve(std::string(kIndex) + "pip/", JsonPage(kPipWheel, pip_),
                   "application/vnd.pypi.simple.v1+json");
    fetcher_.Serve(std::string(kIndex) + "torch/", JsonPage(kTorchWheel, torch_),
                   "application/vnd.pypi.simple.v1+json");
    fetcher_.Serve(std::string(kIndex) + kPipWheel, pip_);
    fetcher_.Serve(
        std::string(kIndex) + "torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl", torch_);
    options_.cache_dir = tmp_.path() + "/cache";
    options_.indexes = {{"cu128", kIndex}};
    options_.host_pythons = {{"3.11.2", "/usr/bin/python3.11"}};
    options_.host_toolkits = {{"13.0.88", "/usr/local/cuda"}};
    options_.target.glibc = "2.36";
    spec_ = {"3.11", "2.8.0+cu128", {}, "13.0", "linux_x86_64"};
  }

  std::unique_ptr<Provisioner> Make() {
    auto p = Provisioner::Create(options_, &fetcher_, &runner_, &clock_);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::move(p).value();
  }

  std::string JobDir(const std::string& name) {
    std::string dir = tmp_.path() + "/" + name;
    EXPECT_TRUE(fs::MakeDirs(dir).ok());
    return dir;
  }

  ScopedTempDir tmp_;
  FakeClock clock_;
  FakeFetcher fetcher_;
  std::string pip_error_;
  std::string python_version_ = "3.11.2";
  ScriptedRunner runner_{
      [this](const ProcessSpec& s) { return FakeCommands(s, pip_error_, python_version_); }};
  ProvisionerOptions options_;
  EnvSpec spec_;
  std::string pip_, torch_;
};

TEST_F(ProvisionerTest, FirstJobBuildsSecondClonesWithoutNetwork) {
  auto p = Make();
  auto first = p->Provision(spec_, JobDir("job1"), nullptr);
  ASSERT_OK(first.status());
  EXPECT_TRUE(first->snapshot_built);
  EXPECT_EQ(first->base_python, "/usr/bin/python3.11");
  EXPECT_EQ(first->cuda_home, "/usr/local/cuda");
  EXPECT_EQ(first->python, tmp_.path() + "/job1/venv/bin/python");
  EXPECT_TRUE(
      fs::Exists(first->venv_dir + "/lib/python3.11/site-packages/torch==2.8.0+cu128.installed"));
  EXPECT_EQ(*fs::ReadFile(first->venv_dir + "/bin/pip"), "#!" + first->venv_dir + "/bin/python\n");
  auto commands = runner_.commands();
  ASSERT_EQ(commands.size(), 2u);
  const auto& pip = commands[1];
  EXPECT_NE(pip[1].find(kPipWheel), std::string::npos);  // pip runs from its own pinned wheel
  EXPECT_EQ(std::count(pip.begin(), pip.end(), "--no-index"), 1);
  EXPECT_EQ(pip.back(), "torch==2.8.0+cu128");
  int fetched = fetcher_.Total();
  EXPECT_EQ(fetched, 4);  // two pages, two wheels

  auto second = p->Provision(spec_, JobDir("job2"), nullptr);
  ASSERT_OK(second.status());
  EXPECT_FALSE(second->snapshot_built);
  EXPECT_EQ(second->key, first->key);
  EXPECT_EQ(fetcher_.Total(), fetched);      // no network at all
  EXPECT_EQ(runner_.commands().size(), 2u);  // nothing installed again
  EXPECT_EQ(*fs::ReadFile(second->venv_dir + "/bin/pip"),
            "#!" + second->venv_dir + "/bin/python\n");
}

TEST_F(ProvisionerTest, InstallsWithUvWhenGivenOneFromTheSameWheelhouseOnly) {
  auto pip_key = Make()->SnapshotKey(spec_);
  ASSERT_OK(pip_key.status());
  options_.uv = "/opt/uv/bin/uv";
  auto p = Make();
  auto made = p->Provision(spec_, JobDir("job1"), nullptr);
  ASSERT_OK(made.status());
  EXPECT_NE(made->key, *pip_key);  // a snapshot says which tool made it
  auto commands = runner_.commands();
  ASSERT_EQ(commands.size(), 2u);
  const auto& uv = commands[1];
  EXPECT_EQ(uv[0], "/opt/uv/bin/uv");
  EXPECT_EQ(uv[3], "--python");
  EXPECT_TRUE(uv[4].size() > 16 && uv[4].substr(uv[4].size() - 16) == "/venv/bin/python") << uv[4];
  for (const char* flag : {"--offline", "--no-index", "--compile-bytecode"}) {
    EXPECT_EQ(std::count(uv.begin(), uv.end(), flag), 1) << flag;
  }
  EXPECT_EQ(uv[uv.size() - 2], "pip==23.0.1");  // pip is still installed: builds run it
  EXPECT_EQ(uv.back(), "torch==2.8.0+cu128");
  EXPECT_TRUE(
      fs::Exists(made->venv_dir + "/lib/python3.11/site-packages/torch==2.8.0+cu128.installed"));
  EXPECT_EQ(fetcher_.Total(), 4);  // the same downloads as with pip
}

TEST_F(ProvisionerTest, UvsUnsatisfiableResolutionIsNotFound) {
  options_.uv = "/opt/uv/bin/uv";
  pip_error_ =
      "  x No solution found when resolving dependencies:\n  `-> Because sympy was not found "
      "in the provided package locations and torch==2.8.0 depends on sympy, ...";
  auto made = Make()->Provision(spec_, JobDir("job1"), nullptr);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kNotFound) << made.status().ToString();
  EXPECT_NE(made.status().message().find("uv pip install failed"), std::string::npos);
}

TEST_F(ProvisionerTest, KeyCoversEveryInput) {
  auto p = Make();
  std::string base = *p->SnapshotKey(spec_);
  EnvSpec other = spec_;
  other.requirements = {"setuptools==66.1.1"};
  EXPECT_NE(*p->SnapshotKey(other), base);
  other = spec_;
  other.torch = "2.9.0+cu130";
  EXPECT_NE(*p->SnapshotKey(other), base);
  other = spec_;
  other.cuda = "12.8";
  EXPECT_NE(*p->SnapshotKey(other), base);
  options_.installer = "pip==24.0";
  EXPECT_NE(*Make()->SnapshotKey(spec_), base);
}

TEST_F(ProvisionerTest, CorruptWheelIsRefusedAndNothingIsCached) {
  fetcher_.Serve(std::string(kIndex) + "torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl",
                 "torch wheel bytez");
  auto p = Make();
  auto r = p->Provision(spec_, JobDir("job"), nullptr);
  EXPECT_EQ(FailureOf(r.status()), ProvisionFailure::kChecksumMismatch);
  EXPECT_NE(r.status().message().find(kTorchWheel), std::string::npos);
  EXPECT_FALSE(p->cache().IsComplete(kEnvs, *p->SnapshotKey(spec_)));
  EXPECT_FALSE(p->cache().IsComplete(kDownloads, Sha256Hex("torch wheel bytez")));
  EXPECT_FALSE(p->cache().IsComplete(kDownloads, Sha256Hex(torch_)));
  EXPECT_FALSE(fs::Exists(tmp_.path() + "/job/venv"));
}

TEST_F(ProvisionerTest, FailureCauses) {
  auto p = Make();
  EnvSpec pinned = spec_;
  pinned.requirements = {"torch==2.8.0+cu128 --hash=sha256:" + std::string(64, 'e')};
  EXPECT_EQ(FailureOf(p->Provision(pinned, JobDir("a"), nullptr).status()),
            ProvisionFailure::kChecksumMismatch);
  EnvSpec missing = spec_;
  missing.torch = "2.7.0+cu128";
  EXPECT_EQ(FailureOf(p->Provision(missing, JobDir("b"), nullptr).status()),
            ProvisionFailure::kNotFoundUpstream);
  EnvSpec no_toolkit = spec_;
  no_toolkit.cuda = "12.8";
  EXPECT_EQ(FailureOf(p->Provision(no_toolkit, JobDir("c"), nullptr).status()),
            ProvisionFailure::kNotFoundUpstream);
  fetcher_.Fail(std::string(kIndex) + "torch/", Status::Unavailable("connection refused"));
  EXPECT_EQ(FailureOf(p->Provision(spec_, JobDir("d"), nullptr).status()),
            ProvisionFailure::kUpstreamUnreachable);
  fetcher_.Serve(std::string(kIndex) + "torch/", JsonPage(kTorchWheel, torch_),
                 "application/vnd.pypi.simple.v1+json");
  pip_error_ =
      "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device";
  auto full = p->Provision(spec_, JobDir("e"), nullptr);
  EXPECT_EQ(FailureOf(full.status()), ProvisionFailure::kDiskFull);
  EXPECT_FALSE(p->cache().IsComplete(kEnvs, *p->SnapshotKey(spec_)));
  EnvSpec hostile = spec_;
  hostile.requirements = {"x==1 --extra-index-url http://evil/"};
  EXPECT_EQ(FailureOf(p->Provision(hostile, JobDir("f"), nullptr).status()),
            ProvisionFailure::kInvalidRequest);
}

TEST_F(ProvisionerTest, IndexNamingAFileOutsideTheWheelhouseIsRefused) {
  std::string name = "../../../../tmp/torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl";
  std::string page = R"({"files": [{"filename": ")" + name +
                     R"(", "url": "t.whl", "hashes": {"sha256": ")" + Sha256Hex(torch_) +
                     R"("}}]})";
  fetcher_.Serve(std::string(kIndex) + "torch/", page, "application/vnd.pypi.simple.v1+json");
  fetcher_.Serve(std::string(kIndex) + "torch/t.whl", torch_);
  auto p = Make();
  auto r = p->Provision(spec_, JobDir("job"), nullptr);
  EXPECT_EQ(FailureOf(r.status()), ProvisionFailure::kInvalidRequest);
  EXPECT_NE(r.status().message().find("unsafe file"), std::string::npos);
  EXPECT_EQ(fetcher_.Count(std::string(kIndex) + "torch/t.whl"), 0);
}

TEST_F(ProvisionerTest, ToolkitFromRedistArchives) {
  options_.host_toolkits.clear();
  options_.redist_url = "http://nv/redist/";
  std::string nvcc =
      MakeTarGz({{"cuda_nvcc-linux-x86_64-13.0.88-archive/bin/nvcc", "#!/bin/sh\n", 0755},
                 {"cuda_nvcc-linux-x86_64-13.0.88-archive/LICENSE", "nvcc eula", 0644}});
  std::string cudart =
      MakeTarGz({{"cuda_cudart-linux-x86_64-13.0.96-archive/include/cuda_runtime.h", "h", 0644},
                 {"cuda_cudart-linux-x86_64-13.0.96-archive/lib/libcudart_static.a", "a", 0644},
                 {"cuda_cudart-linux-x86_64-13.0.96-archive/LICENSE", "cudart eula", 0644}});
  auto entry = [](const std::string& c, const std::string& v, const std::string& body) {
    return "\"" + c + "\": {\"version\": \"" + v + "\", \"linux-x86_64\": {\"relative_path\": \"" +
           c + "/linux-x86_64/" + c + ".tar.gz\", \"sha256\": \"" + Sha256Hex(body) +
           "\", \"size\": \"" + std::to_string(body.size()) + "\"}}";
  };
  fetcher_.Serve("http://nv/redist/",
                 "<a href=\"redistrib_12.8.1.json\"></a><a href=\"redistrib_13.0.2.json\"></a>",
                 "text/html");
  fetcher_.Serve("http://nv/redist/redistrib_13.0.2.json",
                 "{\"release_label\": \"13.0.2\", " + entry("cuda_nvcc", "13.0.88", nvcc) + ", " +
                     entry("cuda_cudart", "13.0.96", cudart) + ", " +
                     entry("cuda_cccl", "13.0.85", cudart) + "}");
  fetcher_.Serve("http://nv/redist/cuda_nvcc/linux-x86_64/cuda_nvcc.tar.gz", nvcc);
  fetcher_.Serve("http://nv/redist/cuda_cudart/linux-x86_64/cuda_cudart.tar.gz", cudart);
  options_.redist_components = {"cuda_nvcc", "cuda_cudart"};
  auto p = Make();
  auto env = p->Provision(spec_, JobDir("job1"), nullptr);
  ASSERT_OK(env.status());
  EXPECT_TRUE(env->toolkit_from_redist);
  const std::string& cuda = env->cuda_home;
  EXPECT_TRUE(fs::Exists(cuda + "/bin/nvcc"));
  EXPECT_EQ(access((cuda + "/bin/nvcc").c_str(), X_OK), 0);
  EXPECT_TRUE(fs::Exists(cuda + "/include/cuda_runtime.h"));
  EXPECT_TRUE(fs::Exists(cuda + "/lib64/libcudart_static.a"));  // lib64 -> lib
  EXPECT_EQ(*fs::ReadFile(cuda + "/licenses/cuda_nvcc/LICENSE"), "nvcc eula");
  int fetched = fetcher_.Total();
  ASSERT_OK(p->Provision(spec_, JobDir("job2"), nullptr).status());
  EXPECT_EQ(fetcher_.Total(), fetched);
  EXPECT_EQ(fetcher_.Count("http://nv/redist/cuda_nvcc/linux-x86_64/cuda_nvcc.tar.gz"), 1);
}

TEST_F(ProvisionerTest, HostileRedistArchiveLeavesNoToolkit) {
  options_.host_toolkits.clear();
  options_.redist_url = "http://nv/redist/";
  options_.redist_components = {"cuda_nvcc"};
  std::string evil = MakeTarGz({{"cuda_nvcc-archive/../../../../tmp/evil", "x", 0644}});
  fetcher_.Serve("http://nv/redist/", "<a href=\"redistrib_13.0.2.json\">", "text/html");
  fetcher_.Serve("http://nv/redist/redistrib_13.0.2.json",
                 R"({"release_label": "13.0.2", "cuda_nvcc": {"version": "1", "linux-x86_64": {)"
                 R"("relative_path": "n.tar.gz", "sha256": ")" +
                     Sha256Hex(evil) + R"("}}})");
  fetcher_.Serve("http://nv/redist/n.tar.gz", evil);
  auto p = Make();
  auto r = p->Provision(spec_, JobDir("job"), nullptr);
  EXPECT_EQ(FailureOf(r.status()), ProvisionFailure::kInvalidRequest);
  auto entries = p->cache().List();
  for (const CacheEntry& e : *entries) EXPECT_NE(e.kind, kToolkits);
}

TEST_F(ProvisionerTest, PythonFromReleaseArchiveIsCheckedByVersion) {
  options_.host_pythons.clear();
  options_.python_release_url = "http://py/20260101/";
  std::string archive = MakeTarGz(
      {{"python/bin/python3", "#!/bin/sh\n", 0755}, {"python/lib/python3.11/os.py", "", 0644}});
  std::string name = "cpython-3.11.2+20260101-x86_64-unknown-linux-gnu-install_only.tar.gz";
  fetcher_.Serve("http://py/20260101/SHA256SUMS",
                 Sha256Hex("other") +
                     "  cpython-3.12.1+20260101-x86_64-unknown-linux-gnu-install_only.tar.gz\n" +
                     Sha256Hex(archive) + "  " + name + "\n");
  fetcher_.Serve(
      "http://py/20260101/cpython-3.11.2%2B20260101-x86_64-unknown-linux-gnu-install_only.tar.gz",
      archive);
  python_version_ = "3.12.1";  // an archive whose interpreter is not what its name says
  auto p = Make();
  auto relabeled = p->Provision(spec_, JobDir("job0"), nullptr);
  EXPECT_EQ(FailureOf(relabeled.status()), ProvisionFailure::kInvalidRequest);
  EXPECT_NE(relabeled.status().message().find("is Python 3.12.1, not 3.11.2"), std::string::npos);
  python_version_ = "3.11.2";
  auto env = p->Provision(spec_, JobDir("job1"), nullptr);
  ASSERT_OK(env.status());
  EXPECT_TRUE(env->python_from_archive);
  EXPECT_EQ(env->base_python.rfind(options_.cache_dir + "/python/", 0), 0u);
  EXPECT_TRUE(fs::Exists(env->base_python));
}

TEST_F(ProvisionerTest, CacheBoundEvictsOnlyWhatNoJobUses) {
  options_.max_cache_bytes = 1;  // everything unpinned goes
  auto p = Make();
  {
    auto first = p->Provision(spec_, JobDir("job1"), nullptr);
    ASSERT_OK(first.status());
    EXPECT_TRUE(p->cache().IsComplete(kEnvs, first->key));  // pinned by its job
  }
  EnvSpec other = spec_;
  other.requirements = {"pip==23.0.1"};
  auto second = p->Provision(other, JobDir("job2"), nullptr);
  ASSERT_OK(second.status());
  EXPECT_FALSE(p->cache().IsComplete(kEnvs, *p->SnapshotKey(spec_)));  // released, evicted
  EXPECT_TRUE(p->cache().IsComplete(kEnvs, second->key));
  EXPECT_TRUE(fs::Exists(tmp_.path() + "/job1/venv/bin/pip"));  // a job's clone outlives it
}

// A per-variant index that names the variant's torch without its local label (as PyPI and
// its mirrors do for the default CUDA): the unlabelled release is that build, pinned so for
// pip, with a note; an index with neither still fails, naming what it has.
TEST_F(ProvisionerTest, AnUnlabelledReleaseOnTheVariantsIndexIsTheVariantsBuild) {
  const std::string plain = "torch-2.8.0-cp311-cp311-manylinux_2_28_x86_64.whl";
  fetcher_.Serve(std::string(kIndex) + "torch/", JsonPage(plain, torch_),
                 "application/vnd.pypi.simple.v1+json");
  fetcher_.Serve(std::string(kIndex) + plain, torch_);
  auto p = Make();
  auto env = p->Provision(spec_, JobDir("job1"), nullptr);
  ASSERT_OK(env.status());
  EXPECT_EQ(runner_.commands().at(1).back(), "torch==2.8.0");
  ASSERT_EQ(env->notes.size(), 1u);
  EXPECT_NE(env->notes[0].find("named without its local label"), std::string::npos);

  EnvSpec other = spec_;
  other.torch = "2.9.0+cu128";
  auto missing = p->Provision(other, JobDir("job2"), nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("the index has: 2.8.0"), std::string::npos)
      << missing.status().ToString();
}

// A PEP 691 page of `files` (filename, wheel bytes); with `metadata` offered as PEP 658
// metadata for the wheels it has an entry for (filename -> METADATA).
std::string JsonPageOf(const std::vector<std::pair<std::string, std::string>>& files,
                       const std::map<std::string, std::string>& metadata = {}) {
  std::string out = R"({"meta": {"api-version": "1.1"}, "files": [)";
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& [filename, body] = files[i];
    std::string url = filename;
    if (size_t plus = url.find('+'); plus != std::string::npos) url.replace(plus, 1, "%2B");
    out += std::string(i ? ", " : "") + R"({"filename": ")" + filename + R"(", "url": "../)" + url +
           R"(", "hashes": {"sha256": ")" + Sha256Hex(body) + R"("})";
    if (auto it = metadata.find(filename); it != metadata.end()) {
      out += R"(, "core-metadata": {"sha256": ")" + Sha256Hex(it->second) + R"("})";
    }
    out += "}";
  }
  return out + "]}";
}

// An index whose torch declares requirements, with PEP 658 metadata for it, and the
// projects those requirements name.
class LockCheckTest : public ProvisionerTest {
 protected:
  void SetUp() override {
    ProvisionerTest::SetUp();
    torch_metadata_ =
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.8.0+cu128\n"
        "Requires-Dist: sympy>=1.13.3\n"
        "Requires-Dist: nvidia-cublas-cu12==12.8.4.1; platform_system == \"Linux\" and "
        "platform_machine == \"x86_64\"\n"
        "Requires-Dist: setuptools; python_version >= \"3.12\"\n"
        "Requires-Dist: pywin32; sys_platform == 'win32'\n"
        "Requires-Dist: optree>=0.13.0; extra == \"optree\"\n";
    fetcher_.Serve(std::string(kIndex) + "torch/",
                   JsonPageOf({{kTorchWheel, torch_}}, {{kTorchWheel, torch_metadata_}}),
                   "application/vnd.pypi.simple.v1+json");
    torch_url_ = std::string(kIndex) + "torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl";
    fetcher_.Serve(torch_url_ + ".metadata", torch_metadata_);
    AddProject("sympy", "1.13.0", {"mpmath<1.4,>=1.1.0"});
    AddProject("sympy", "1.14.0", {"mpmath<1.4,>=1.1.0"});
    AddProject("mpmath", "1.3.0", {"pytest (>=4.6) ; extra == 'develop'"});
    AddProject("nvidia-cublas-cu12", "12.8.4.1", {}, "manylinux_2_27_x86_64");
  }

  // Serves `name` `version` (a py3 wheel, or one for `platform`) next to those served before.
  void AddProject(const std::string& name, const std::string& version,
                  const std::vector<std::string>& requires_dist, const std::string& platform = "") {
    std::string stem = name;
    std::replace(stem.begin(), stem.end(), '-', '_');
    std::string filename =
        stem + "-" + version +
        (platform.empty() ? "-py3-none-any.whl" : "-py3-none-" + platform + ".whl");
    std::string body = MakeWheel(name, version, requires_dist);
    auto& files = projects_[name];
    files.push_back({filename, body});
    fetcher_.Serve(std::string(kIndex) + name + "/", JsonPageOf(files),
                   "application/vnd.pypi.simple.v1+json");
    fetcher_.Serve(std::string(kIndex) + filename, body);
  }

  std::string torch_metadata_, torch_url_;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> projects_;
};

TEST_F(LockCheckTest, TorchRequiringUnpinnedPackagesIsTheRecipesFailureBeforeAnyWheelIsFetched) {
  auto p = Make();
  auto r = p->Provision(spec_, JobDir("job"), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(FailureOf(r.status()), ProvisionFailure::kInvalidRequest);
  EXPECT_FALSE(IsInfrastructureFailure(FailureOf(r.status())));
  std::string m = r.status().message();  // a copy: status() returns a temporary
  EXPECT_NE(m.find("add sympy==1.14.0 (torch 2.8.0+cu128 requires sympy>=1.13.3)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("add nvidia-cublas-cu12==12.8.4.1 (torch 2.8.0+cu128 requires "
                   "nvidia-cublas-cu12==12.8.4.1; platform_system"),
            std::string::npos)
      << m;
  // Requirements for another Python, platform or an extra nobody asked for do not count.
  for (const char* absent : {"setuptools", "pywin32", "optree", "mpmath"}) {
    EXPECT_EQ(m.find(absent), std::string::npos) << absent << " in " << m;
  }
  // Only torch's metadata was read: no wheel fetched, nothing installed, nothing cached.
  EXPECT_EQ(fetcher_.Count(torch_url_ + ".metadata"), 1);
  EXPECT_EQ(fetcher_.Count(torch_url_), 0);
  EXPECT_EQ(fetcher_.Count(std::string(kIndex) + kPipWheel), 0);
  EXPECT_TRUE(runner_.commands().empty());
  EXPECT_FALSE(p->cache().IsComplete(kEnvs, *p->SnapshotKey(spec_)));
  EXPECT_FALSE(fs::Exists(tmp_.path() + "/job/venv"));
}

TEST_F(LockCheckTest, ARequirementOfAPinnedDependencyAndAMismatchedPinAreNamed) {
  auto p = Make();
  EnvSpec spec = spec_;
  spec.requirements = {"sympy==1.13.0", "nvidia-cublas-cu12==12.8.4.1"};
  auto r = p->Provision(spec, JobDir("a"), nullptr);
  ASSERT_EQ(FailureOf(r.status()), ProvisionFailure::kInvalidRequest) << r.status().ToString();
  EXPECT_NE(r.status().message().find("replace sympy==1.13.0 with sympy==1.14.0 (torch "
                                      "2.8.0+cu128 requires sympy>=1.13.3)"),
            std::string::npos)
      << r.status().message();

  spec.requirements = {"sympy==1.14.0", "nvidia-cublas-cu12==12.8.4.1"};
  r = p->Provision(spec, JobDir("b"), nullptr);
  ASSERT_EQ(FailureOf(r.status()), ProvisionFailure::kInvalidRequest) << r.status().ToString();
  EXPECT_NE(
      r.status().message().find("add mpmath==1.3.0 (sympy 1.14.0 requires mpmath<1.4,>=1.1.0)"),
      std::string::npos)
      << r.status().message();
  EXPECT_TRUE(runner_.commands().empty());
}

TEST_F(LockCheckTest, ACompleteLockProvisions) {
  auto p = Make();
  EnvSpec spec = spec_;
  spec.requirements = {"sympy==1.14.0", "mpmath==1.3.0", "nvidia-cublas-cu12==12.8.4.1"};
  auto r = p->Provision(spec, JobDir("job"), nullptr);
  ASSERT_OK(r.status());
  EXPECT_TRUE(r->snapshot_built);
  for (const char* pin :
       {"torch==2.8.0+cu128", "sympy==1.14.0", "mpmath==1.3.0", "nvidia-cublas-cu12==12.8.4.1"}) {
    EXPECT_TRUE(fs::Exists(r->venv_dir + "/lib/python3.11/site-packages/" + pin + ".installed"))
        << pin;
  }
  EXPECT_EQ(fetcher_.Count(torch_url_), 1);  // the metadata first, then the wheel once
}

TEST_F(LockCheckTest, MetadataNotMatchingItsDigestIsRefused) {
  fetcher_.Serve(torch_url_ + ".metadata", torch_metadata_ + "Requires-Dist: evil\n");
  auto p = Make();
  auto r = p->Provision(spec_, JobDir("job"), nullptr);
  EXPECT_EQ(FailureOf(r.status()), ProvisionFailure::kChecksumMismatch) << r.status().ToString();
  EXPECT_TRUE(runner_.commands().empty());
}

}  // namespace
}  // namespace farm::env
