#include "worker/env/provisioner.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

#include "common/fs.h"
#include "common/lock/pip_resolver.h"
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
const char kTorchUrl[] =
    "http://up/whl/cu128/torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl";

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

// What python -m venv, pip and uv do, on disk, as far as the provisioner can tell. The
// installer names wheel files (never requirements to resolve): each becomes a marker.
FakeRun FakeCommands(const ProcessSpec& spec, const std::string& pip_error,
                     const std::string& check_error, const std::string& python_version) {
  const auto& argv = spec.argv;
  if (argv.size() >= 3 && argv[1] == "-I" && argv[2] == "-c") return {0, python_version + "\n", ""};
  if (argv.size() >= 5 && argv[1] == "-m" && argv[2] == "venv") {
    std::string venv = argv[4];
    (void)fs::MakeDirs(venv + "/bin");
    (void)fs::MakeDirs(venv + "/lib/python3.11/site-packages");
    if (symlink(argv[0].c_str(), (venv + "/bin/python").c_str()) != 0) return {1, "", "symlink"};
    (void)fs::WriteFileAtomic(venv + "/pyvenv.cfg",
                              "home = /usr/bin\ncommand = python -m venv " + venv + "\n");
    return {};
  }
  // pip runs as VENV/bin/python PIP.whl/pip VERB ...; uv as uv pip VERB --python VENV/bin/python.
  const bool uv = argv.size() >= 3 && argv[1] == "pip";
  const std::string verb = argv.size() >= 3 ? argv[2] : "";
  if (verb == "check") return check_error.empty() ? FakeRun{} : FakeRun{1, check_error, ""};
  if (verb == "install") {
    if (!pip_error.empty()) return {1, "", pip_error};
    if (uv && (argv.size() < 5 || argv[3] != "--python")) return {2, "", "uv: no --python"};
    const std::string& python = uv ? argv[4] : argv[0];
    std::string venv = python.substr(0, python.size() - std::string("/bin/python").size());
    (void)fs::WriteFileAtomic(venv + "/bin/pip", "#!" + venv + "/bin/python\n", 0755);
    for (const std::string& a : argv) {
      if (!a.ends_with(".whl") || a.ends_with(".whl/pip")) continue;
      (void)fs::WriteFileAtomic(
          venv + "/lib/python3.11/site-packages/" + a.substr(a.rfind('/') + 1) + ".installed", "x");
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
    fetcher_.Serve(kTorchUrl, torch_);
    ASSERT_OK(fs::WriteFileAtomic(tmp_.path() + "/" + kPipWheel, pip_));
    options_.cache_dir = tmp_.path() + "/cache";
    options_.installer_wheel = tmp_.path() + "/" + kPipWheel;
    options_.host_pythons = {{"3.11.2", "/usr/bin/python3.11"}};
    options_.host_toolkits = {{"13.0.88", "/usr/local/cuda"}};
    options_.target.glibc = "2.36";
    spec_.python = "3.11";
    spec_.cuda = "13.0";
    spec_.lock = LockOf({{"torch", "2.8.0+cu128", kTorchWheel, kTorchUrl, torch_}});
  }

  struct Locked {
    std::string name, version, filename, url, body;
  };
  static lock::EnvLock LockOf(const std::vector<Locked>& packages) {
    lock::EnvLock lock;
    lock.python = "3.11";
    lock.platform = "linux_x86_64";
    lock.index_name = "cu128";
    lock.requirements = {"torch==2.8.0"};
    for (const Locked& p : packages) {
      lock.packages.push_back({p.name, p.version, kIndex, p.filename, p.url, Sha256Hex(p.body),
                               static_cast<int64_t>(p.body.size())});
    }
    return lock;
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
  std::string pip_error_, check_error_;
  std::string python_version_ = "3.11.2";
  ScriptedRunner runner_{[this](const ProcessSpec& s) {
    return FakeCommands(s, pip_error_, check_error_, python_version_);
  }};
  ProvisionerOptions options_;
  ProvisionSources sources_;
  EnvSpec spec_;
  std::string pip_, torch_;
};

TEST_F(ProvisionerTest, FirstJobBuildsSecondClonesWithoutNetwork) {
  auto p = Make();
  auto first = p->Provision(spec_, sources_, JobDir("job1"), nullptr);
  ASSERT_OK(first.status());
  EXPECT_TRUE(first->snapshot_built);
  EXPECT_EQ(first->torch, "2.8.0+cu128");
  EXPECT_EQ(first->base_python, "/usr/bin/python3.11");
  EXPECT_EQ(first->cuda_home, "/usr/local/cuda");
  EXPECT_EQ(first->python, tmp_.path() + "/job1/venv/bin/python");
  EXPECT_EQ(first->downloaded_bytes, static_cast<int64_t>(torch_.size()));
  const std::string site = first->venv_dir + "/lib/python3.11/site-packages/";
  EXPECT_TRUE(fs::Exists(site + kTorchWheel + ".installed"));
  EXPECT_TRUE(fs::Exists(site + kPipWheel + ".installed"));  // the farm's pip: builds run it
  EXPECT_EQ(*fs::ReadFile(first->venv_dir + "/bin/pip"), "#!" + first->venv_dir + "/bin/python\n");
  auto commands = runner_.commands();
  ASSERT_EQ(commands.size(), 3u);  // venv, install, check
  const auto& pip = commands[1];
  EXPECT_EQ(pip[1], options_.installer_wheel + "/pip");  // the farm's pip, never the index's
  for (const char* flag : {"--no-deps", "--no-index"}) {
    EXPECT_EQ(std::count(pip.begin(), pip.end(), flag), 1) << flag;
  }
  EXPECT_EQ(commands[2][2], "check");
  EXPECT_EQ(fetcher_.Total(), 1);  // the locked wheel and nothing else: no page, no resolution

  auto second = p->Provision(spec_, sources_, JobDir("job2"), nullptr);
  ASSERT_OK(second.status());
  EXPECT_FALSE(second->snapshot_built);
  EXPECT_EQ(second->key, first->key);
  EXPECT_EQ(second->downloaded_bytes, 0);
  EXPECT_EQ(fetcher_.Total(), 1);            // no network at all
  EXPECT_EQ(runner_.commands().size(), 3u);  // nothing installed again
  EXPECT_EQ(*fs::ReadFile(second->venv_dir + "/bin/pip"),
            "#!" + second->venv_dir + "/bin/python\n");
  EXPECT_EQ(*fs::ReadFile(p->cache().EntryPath(kEnvs, first->key) + "/pylock.toml"),
            lock::ToToml(spec_.lock));
}

TEST_F(ProvisionerTest, AnUnpackedInstallerRunsWhereTheHostCompiledIt) {
  // The host's Python unpacked the installer into the cache (here ahead of the provisioner,
  // whose own unpacking the scripted runner only pretends): pip runs from that copy, read
  // only, and the wheel is still what is installed into the venv.
  const std::string wheel = lock::FindPipWheel();
  if (wheel.empty()) GTEST_SKIP() << "no pip wheel (python3-pip-whl) on this host";
  options_.installer_wheel = wheel;
  options_.installer_python = "/usr/bin/python3";
  RealProcessRunner real;
  auto unpacked =
      lock::UnpackPip(real, "/usr/bin/python3", wheel, options_.cache_dir + "/installer");
  ASSERT_OK(unpacked.status());
  auto env = Make()->Provision(spec_, sources_, JobDir("job1"), nullptr);
  ASSERT_OK(env.status());
  auto commands = runner_.commands();
  ASSERT_EQ(commands.size(), 4u);  // unpack, venv, install, check
  EXPECT_EQ(commands[0][0], "/usr/bin/python3");
  EXPECT_EQ(commands[2][1], *unpacked + "/pip");
  EXPECT_EQ(commands[2].back(), wheel);
  EXPECT_EQ(commands[3][1], *unpacked + "/pip");
  // Where unpacking left no pip (a cache of its own, which the scripted runner leaves
  // empty), the wheel itself runs.
  options_.cache_dir = tmp_.path() + "/other-cache";
  ASSERT_OK(Make()->Provision(spec_, sources_, JobDir("job2"), nullptr).status());
  commands = runner_.commands();
  ASSERT_EQ(commands.size(), 8u);
  EXPECT_EQ(commands[6][1], wheel + "/pip");
  EXPECT_EQ(commands[7][1], wheel + "/pip");
}

TEST_F(ProvisionerTest, LockedFilesComeThroughTheFarmsFilesRouteWhereverFarmdListens) {
  sources_.farm_base = "http://127.0.0.1:1/";
  sources_.files_base = "http://127.0.0.1:1/upstream/files/";
  const std::string route = "http://127.0.0.1:1/upstream/files/cu128/" + Sha256Hex(torch_) +
                            "/torch-2.8.0%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl";
  fetcher_.Serve(route, torch_);
  auto p = Make();
  auto first = p->Provision(spec_, sources_, JobDir("job1"), nullptr);
  ASSERT_OK(first.status());
  EXPECT_EQ(fetcher_.Count(route), 1);
  EXPECT_EQ(fetcher_.Count(kTorchUrl), 0);
  // farmd back on another port: the same snapshot, nothing fetched.
  ProvisionSources moved = sources_;
  moved.farm_base = "http://127.0.0.1:2/";
  moved.files_base = "http://127.0.0.1:2/upstream/files/";
  EXPECT_EQ(*p->SnapshotKey(spec_, moved), first->key);
}

TEST_F(ProvisionerTest, InstallsWithUvWhenGivenOneFromTheSameFilesOnly) {
  auto pip_key = Make()->SnapshotKey(spec_, sources_);
  ASSERT_OK(pip_key.status());
  options_.uv = "/opt/uv/bin/uv";
  auto p = Make();
  auto made = p->Provision(spec_, sources_, JobDir("job1"), nullptr);
  ASSERT_OK(made.status());
  EXPECT_NE(made->key, *pip_key);  // a snapshot says which tool made it
  auto commands = runner_.commands();
  ASSERT_EQ(commands.size(), 3u);
  const auto& uv = commands[1];
  EXPECT_EQ(uv[0], "/opt/uv/bin/uv");
  EXPECT_EQ(uv[3], "--python");
  EXPECT_TRUE(uv[4].ends_with("/venv/bin/python")) << uv[4];
  for (const char* flag : {"--offline", "--no-index", "--no-deps", "--compile-bytecode"}) {
    EXPECT_EQ(std::count(uv.begin(), uv.end(), flag), 1) << flag;
  }
  EXPECT_EQ(commands[2][0], "/opt/uv/bin/uv");
  EXPECT_EQ(commands[2][2], "check");
  EXPECT_TRUE(
      fs::Exists(made->venv_dir + "/lib/python3.11/site-packages/" + kTorchWheel + ".installed"));
}

TEST_F(ProvisionerTest, KeyCoversEveryInput) {
  auto p = Make();
  std::string base = *p->SnapshotKey(spec_, sources_);
  EnvSpec other = spec_;
  other.lock.packages[0].sha256 = std::string(64, 'e');
  EXPECT_NE(*p->SnapshotKey(other, sources_), base);
  other = spec_;
  other.cuda = "12.8";
  EXPECT_NE(*p->SnapshotKey(other, sources_), base);
  ASSERT_OK(fs::WriteFileAtomic(options_.installer_wheel, MakeWheel("pip", "24.0")));
  EXPECT_NE(*Make()->SnapshotKey(spec_, sources_), base);
}

TEST_F(ProvisionerTest, CorruptWheelIsRefusedAndNothingIsCached) {
  fetcher_.Serve(kTorchUrl, "torch wheel bytez");
  auto p = Make();
  auto r = p->Provision(spec_, sources_, JobDir("job"), nullptr);
  EXPECT_EQ(FailureOf(r.status()), ProvisionFailure::kChecksumMismatch);
  EXPECT_NE(r.status().message().find("the locked file " + std::string(kTorchWheel)),
            std::string::npos)
      << r.status().ToString();
  EXPECT_FALSE(p->cache().IsComplete(kEnvs, *p->SnapshotKey(spec_, sources_)));
  EXPECT_FALSE(p->cache().IsComplete(kDownloads, Sha256Hex("torch wheel bytez")));
  EXPECT_FALSE(p->cache().IsComplete(kDownloads, Sha256Hex(torch_)));
  EXPECT_FALSE(fs::Exists(tmp_.path() + "/job/venv"));
}

TEST_F(ProvisionerTest, FailureCauses) {
  auto p = Make();
  fetcher_.Fail(kTorchUrl, Status::Unavailable("connection refused"));
  EXPECT_EQ(FailureOf(p->Provision(spec_, sources_, JobDir("a"), nullptr).status()),
            ProvisionFailure::kUpstreamUnreachable);
  fetcher_.Fail(kTorchUrl, Status::NotFound("answered HTTP 404"));
  auto gone = p->Provision(spec_, sources_, JobDir("b"), nullptr);
  EXPECT_EQ(FailureOf(gone.status()), ProvisionFailure::kNotFoundUpstream);
  EXPECT_NE(gone.status().message().find("the locked file"), std::string::npos);
  fetcher_.Serve(kTorchUrl, torch_);
  EnvSpec no_toolkit = spec_;
  no_toolkit.cuda = "12.8";
  EXPECT_EQ(FailureOf(p->Provision(no_toolkit, sources_, JobDir("c"), nullptr).status()),
            ProvisionFailure::kNotFoundUpstream);
  pip_error_ =
      "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device";
  auto full = p->Provision(spec_, sources_, JobDir("d"), nullptr);
  EXPECT_EQ(FailureOf(full.status()), ProvisionFailure::kDiskFull);
  EXPECT_FALSE(p->cache().IsComplete(kEnvs, *p->SnapshotKey(spec_, sources_)));
  pip_error_.clear();
  // The lock's own problems are the recipe's.
  EnvSpec other_python = spec_;
  other_python.python = "3.12";
  EXPECT_EQ(FailureOf(p->Provision(other_python, sources_, JobDir("e"), nullptr).status()),
            ProvisionFailure::kInvalidRequest);
  EnvSpec arm = spec_;
  arm.lock.packages[0].filename = "torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_aarch64.whl";
  auto wrong_arch = p->Provision(arm, sources_, JobDir("f"), nullptr);
  EXPECT_EQ(FailureOf(wrong_arch.status()), ProvisionFailure::kInvalidRequest);
  EXPECT_NE(wrong_arch.status().message().find("does not install on Python 3.11 x86_64"),
            std::string::npos);
  EnvSpec empty = spec_;
  empty.lock.packages.clear();
  EXPECT_EQ(FailureOf(p->Provision(empty, sources_, JobDir("g"), nullptr).status()),
            ProvisionFailure::kInvalidRequest);
  check_error_ = "torch 2.8.0+cu128 requires sympy, which is not installed.\n";
  auto incomplete = p->Provision(spec_, sources_, JobDir("h"), nullptr);
  EXPECT_EQ(FailureOf(incomplete.status()), ProvisionFailure::kInvalidRequest);
  EXPECT_NE(incomplete.status().message().find("the lock is not complete"), std::string::npos);
  EXPECT_NE(incomplete.status().message().find("requires sympy"), std::string::npos);
  EXPECT_FALSE(p->cache().IsComplete(kEnvs, *p->SnapshotKey(spec_, sources_)));
}

TEST_F(ProvisionerTest, TheInstallerIsTheConfiguredOne) {
  options_.installer_sha256 = std::string(64, '0');
  auto refused = Provisioner::Create(options_, &fetcher_, &runner_, &clock_);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  options_.installer_sha256 = Sha256Hex(pip_);
  auto p = Make();
  ASSERT_OK(p->Provision(spec_, sources_, JobDir("a"), nullptr).status());
  // Replaced on disk after the worker started: no environment is made with it.
  ASSERT_OK(fs::WriteFileAtomic(options_.installer_wheel, "rigged"));
  auto r = p->Provision(spec_, sources_, JobDir("b"), nullptr);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  options_.installer_wheel = "pip==23.0.1";  // a pin is not a file the worker trusts
  EXPECT_EQ(Provisioner::Create(options_, &fetcher_, &runner_, &clock_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(ProvisionerTest, ASnapshotChangedAfterItWasSealedIsNeverUsedAgain) {
  auto p = Make();
  auto first = p->Provision(spec_, sources_, JobDir("job1"), nullptr);
  ASSERT_OK(first.status());
  const std::string installed = p->cache().EntryPath(kEnvs, first->key) +
                                "/venv/lib/python3.11/site-packages/" + kTorchWheel + ".installed";
  ASSERT_EQ(::chmod(installed.c_str(), 0644), 0);  // what a chown or chmod through a clone does
  auto second = p->Provision(spec_, sources_, JobDir("job2"), nullptr);
  ASSERT_OK(second.status());
  EXPECT_TRUE(second->snapshot_built);  // made again from the lock
  ASSERT_EQ(second->notes.size(), 1u);
  EXPECT_NE(second->notes[0].find("was discarded: changed after it was sealed"), std::string::npos)
      << second->notes[0];
  struct stat st {};
  ASSERT_EQ(::stat(installed.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0222, 0u);
}

TEST_F(ProvisionerTest, ToolkitFromRedistArchives) {
  options_.host_toolkits.clear();
  sources_.redist_url = "http://nv/redist/";
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
  auto env = p->Provision(spec_, sources_, JobDir("job1"), nullptr);
  ASSERT_OK(env.status());
  EXPECT_TRUE(env->toolkit_from_redist);
  const std::string& cuda = env->cuda_home;
  EXPECT_TRUE(fs::Exists(cuda + "/bin/nvcc"));
  EXPECT_EQ(access((cuda + "/bin/nvcc").c_str(), X_OK), 0);
  EXPECT_TRUE(fs::Exists(cuda + "/include/cuda_runtime.h"));
  EXPECT_TRUE(fs::Exists(cuda + "/lib64/libcudart_static.a"));  // lib64 -> lib
  EXPECT_EQ(*fs::ReadFile(cuda + "/licenses/cuda_nvcc/LICENSE"), "nvcc eula");
  int fetched = fetcher_.Total();
  ASSERT_OK(p->Provision(spec_, sources_, JobDir("job2"), nullptr).status());
  EXPECT_EQ(fetcher_.Total(), fetched);
  EXPECT_EQ(fetcher_.Count("http://nv/redist/cuda_nvcc/linux-x86_64/cuda_nvcc.tar.gz"), 1);
}

TEST_F(ProvisionerTest, HostileRedistArchiveLeavesNoToolkit) {
  options_.host_toolkits.clear();
  sources_.redist_url = "http://nv/redist/";
  options_.redist_components = {"cuda_nvcc"};
  std::string evil = MakeTarGz({{"cuda_nvcc-archive/../../../../tmp/evil", "x", 0644}});
  fetcher_.Serve("http://nv/redist/", "<a href=\"redistrib_13.0.2.json\">", "text/html");
  fetcher_.Serve("http://nv/redist/redistrib_13.0.2.json",
                 R"({"release_label": "13.0.2", "cuda_nvcc": {"version": "1", "linux-x86_64": {)"
                 R"("relative_path": "n.tar.gz", "sha256": ")" +
                     Sha256Hex(evil) + R"("}}})");
  fetcher_.Serve("http://nv/redist/n.tar.gz", evil);
  auto p = Make();
  auto r = p->Provision(spec_, sources_, JobDir("job"), nullptr);
  EXPECT_EQ(FailureOf(r.status()), ProvisionFailure::kInvalidRequest);
  auto entries = p->cache().List();
  for (const CacheEntry& e : *entries) EXPECT_NE(e.kind, kToolkits);
}

TEST_F(ProvisionerTest, PythonFromReleaseArchiveIsCheckedByVersion) {
  options_.host_pythons.clear();
  sources_.python_release_url = "http://py/20260101/";
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
  auto relabeled = p->Provision(spec_, sources_, JobDir("job0"), nullptr);
  EXPECT_EQ(FailureOf(relabeled.status()), ProvisionFailure::kInvalidRequest);
  EXPECT_NE(relabeled.status().message().find("is Python 3.12.1, not 3.11.2"), std::string::npos);
  python_version_ = "3.11.2";
  auto env = p->Provision(spec_, sources_, JobDir("job1"), nullptr);
  ASSERT_OK(env.status());
  EXPECT_TRUE(env->python_from_archive);
  EXPECT_EQ(env->base_python.rfind(options_.cache_dir + "/python/", 0), 0u);
  EXPECT_TRUE(fs::Exists(env->base_python));
}

TEST_F(ProvisionerTest, CacheBoundEvictsOnlyWhatNoJobUses) {
  options_.max_cache_bytes = 1;  // everything unpinned goes
  auto p = Make();
  {
    auto first = p->Provision(spec_, sources_, JobDir("job1"), nullptr);
    ASSERT_OK(first.status());
    EXPECT_TRUE(p->cache().IsComplete(kEnvs, first->key));  // pinned by its job
  }
  EnvSpec other = spec_;
  other.lock = LockOf({{"pip", "23.0.1", kPipWheel, std::string(kIndex) + kPipWheel, pip_}});
  fetcher_.Serve(std::string(kIndex) + kPipWheel, pip_);
  auto second = p->Provision(other, sources_, JobDir("job2"), nullptr);
  ASSERT_OK(second.status());
  EXPECT_FALSE(p->cache().IsComplete(kEnvs, *p->SnapshotKey(spec_, sources_)));  // evicted
  EXPECT_TRUE(p->cache().IsComplete(kEnvs, second->key));
  EXPECT_TRUE(fs::Exists(tmp_.path() + "/job1/venv/bin/pip"));  // a job's clone outlives it
}

}  // namespace
}  // namespace farm::env
