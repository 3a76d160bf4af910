#include "worker/config/config.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/flags.h"
#include "common/fs.h"
#include "common/lock/pip_resolver.h"
#include "common/strings.h"

namespace farm::agent {
namespace {

std::vector<FlagSpec> Specs() {
  std::vector<FlagSpec> specs = {
      {"config", "FILE", "YAML file of settings named like these flags; flags win"},
      {"server", "HOST:PORT", "farmd's gRPC address"},
      {"server-file", "PATH", "file holding farmd's address (waited for up to 30 s)"},
      {"enroll-token-file", "PATH", "enrollment token (default: $FARM_ENROLL_TOKEN)"},
      {"state-dir", "DIR", "keeps the worker id and token across restarts"},
      {"work-dir", "DIR", "per-job workspaces (default <state-dir>/work)"},
      {"ccache-dir", "DIR", "compile cache shared by all jobs (default <work-dir>/ccache)"},
      {"ccache-max-size", "SIZE", "compile cache size limit in ccache's syntax (default 20G)"},
      {"no-ccache", "", "build without the compile cache"},
      {"name", "NAME", "worker name shown by farmd (default: host name)"},
      {"label", "K=V", "operator label, repeatable"},
      {"max-jobs", "N", "jobs run at once (default 1)"},
      {"log-buffer-mib", "N", "log kept per job while farmd is unreachable (default 64)"},
      {"python", "PATH", "interpreter to offer, repeatable (default: discover)"},
      {"log-json", "", "log one JSON object per line"},
      {"keep-workspaces", "", "keep job workspaces after the job ends"},
      {"no-probe-kernels", "", "do not prove the GPUs with the probe kernels at start"},
      {"probe", "", "print what this host has as JSON, probe kernels included, and exit"},
      {"find-links", "DIR", "wheels for validation's runtime requirements, repeatable"},
      {"verbose", "", "debug logging"},
      {"executor", "KIND", "where builds run: native (default), podman or docker"},
      {"sandbox", "MODE", "native builds in bubblewrap: auto (default), bwrap (required) or off"},
      {"container-image", "IMAGE", "builder image for recipes that name none"},
      {"container-network", "MODE", "fetch (default): network only to fetch sources; none"},
      {"container-engine-args", "ARGS", "engine flags before `run`, space-separated"},
      {"container-run-args", "ARGS", "extra `run` flags (ulimits, mounts), space-separated"},
      {"container-gpus", "MODE", "auto (default: when /dev/nvidiactl exists), all or none"},
      {"container-user", "USER", "auto (default), image or UID:GID"},
      {"build-user", "USER",
       "a root worker's native builds run as: auto (default: farm-build, else nobody), a "
       "user name or UID:GID"},
      {"git-ssh", "", "also clone git sources over ssh (default: https only)"},
      {"git-ca-file", "PEM",
       "certificate authorities for https git servers (default: the system's)"},
      {"git-timeout-s", "N", "longest a git clone may take (default 1800)"},
      {"provision", "", "make each cell's Python, torch and CUDA toolkit (recipe environment:)"},
      {"env-cache-dir", "DIR", "environment cache (default <state-dir>/envs)"},
      {"env-cache-max-gib", "N", "environment cache bound, least recently used out (default 64)"},
      {"provision-index", "URL", "removed: farmd resolves each environment's lock"},
      {"provision-redist", "URL", "NVIDIA's redist folder for CUDA toolkits (default: farmd's)"},
      {"provision-python-release", "URL",
       "folder of relocatable CPython archives with SHA256SUMS (default: farmd's)"},
      {"provision-no-host-python", "", "never build an environment on a host interpreter"},
      {"provision-no-host-toolkit", "",
       "never build an environment on a host CUDA toolkit: fetch it from redist archives"},
      {"provision-glibc", "X.Y", "glibc for manylinux wheel tags (default: this host's)"},
      {"provision-redist-component", "NAME",
       "a redist component of provisioned toolkits, repeatable (default cuda_nvcc, cuda_crt, "
       "libnvvm, cuda_cudart, cuda_cccl)"},
      {"provision-installer", "PIP.whl",
       "the farm's pip wheel that installs environments (default: Debian's python3-pip-whl)"},
      {"provision-installer-sha256", "HEX", "the installer's sha256, checked before each use"},
      {"provision-uv", "auto|off|PATH",
       "install environments' packages with uv instead of pip (default auto: the uv on PATH, "
       "if any)"},
      {"test-fake-gpu", "NAME:CC",
       "TEST ONLY: also report a GPU that is not there, e.g. "
       "\"Fake H100:9.0\" (repeatable; never on a real worker)"},
      {"help", "", "print this help"},
      {"version", "", "print the version and exit"},
  };
  for (const FlagSpec& f : net::ClientTlsFlags()) specs.push_back(f);
  return specs;
}

std::vector<std::string> SplitSpaces(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t b = s.find_first_not_of(" \t", i);
    if (b == std::string::npos) break;
    size_t e = s.find_first_of(" \t", b);
    if (e == std::string::npos) e = s.size();
    out.push_back(s.substr(b, e - b));
    i = e;
  }
  return out;
}

// `path` made absolute against the current directory (unchanged when that is unknown).
std::string Absolute(const std::string& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

Result<std::string> ParseUvFlag(const std::string& value) {
  if (value == "off") return std::string();
  if (value == "auto") return FindInPath("uv");
  if (value.empty() || value[0] != '/' || access(value.c_str(), X_OK) != 0) {
    return Status::InvalidArgument(
        "--provision-uv takes auto, off or the absolute path of an "
        "executable uv, got \"" +
        value + "\"");
  }
  return value;
}

Status ParseProvisionFlags(const Flags& flags, WorkerConfig& c) {
  ProvisionConfig& p = c.provision;
  p.enabled = flags.Has("provision");
  p.cache_dir = Absolute(flags.Get("env-cache-dir", c.state_dir + "/envs"));
  FARM_ASSIGN_OR_RETURN(int64_t gib, flags.GetInt("env-cache-max-gib", 64));
  if (gib < 1 || gib > 1 << 20) return Status::InvalidArgument("--env-cache-max-gib must be >= 1");
  p.max_cache_bytes = gib << 30;
  if (flags.Has("provision-index")) {
    return Status::InvalidArgument(
        "--provision-index is gone: farmd resolves each environment's lock on its "
        "--upstream-index indexes, and the worker fetches exactly the locked files, through "
        "farmd or from the URLs the lock names");
  }
  p.redist = flags.Get("provision-redist");
  p.python_release = flags.Get("provision-python-release");
  p.host_pythons = !flags.Has("provision-no-host-python");
  p.host_toolkits = !flags.Has("provision-no-host-toolkit");
  p.glibc = flags.Get("provision-glibc");
  p.installer = flags.Get("provision-installer", lock::FindPipWheel());
  p.installer_sha256 = flags.Get("provision-installer-sha256");
  if (p.enabled &&
      (p.installer.find("==") != std::string::npos || !p.installer.ends_with(".whl"))) {
    return Status::InvalidArgument(
        "--provision-installer names the farm's pip wheel file (a trusted copy, such as "
        "Debian's in /usr/share/python-wheels), not a pin: the installer never comes from an "
        "index; got \"" +
        p.installer + "\"");
  }
  if (!p.installer.empty()) p.installer = Absolute(p.installer);
  p.build_user = c.build_user;
  p.redist_components = flags.GetAll("provision-redist-component");
  FARM_ASSIGN_OR_RETURN(p.uv, ParseUvFlag(flags.Get("provision-uv", "auto")));
  for (const std::string* url : {&p.redist, &p.python_release}) {
    if (!url->empty() && url->rfind("http://", 0) != 0 && url->rfind("https://", 0) != 0) {
      return Status::InvalidArgument("provisioning sources are http(s) URLs, got \"" + *url + "\"");
    }
  }
  return Status::Ok();
}

Status ParseExecutorFlags(const Flags& flags, WorkerConfig& c) {
  c.executor = flags.Get("executor", c.executor);
  if (c.executor != "native" && c.executor != "podman" && c.executor != "docker") {
    return Status::InvalidArgument("--executor must be native, podman or docker");
  }
  c.sandbox = flags.Get("sandbox", c.sandbox);
  if (c.sandbox != "auto" && c.sandbox != "bwrap" && c.sandbox != "off") {
    return Status::InvalidArgument("--sandbox must be auto, bwrap or off");
  }
  c.container_image = flags.Get("container-image");
  c.container_network = flags.Get("container-network", c.container_network);
  if (c.container_network != "fetch" && c.container_network != "none") {
    return Status::InvalidArgument("--container-network must be fetch or none");
  }
  c.container_engine_args = SplitSpaces(flags.Get("container-engine-args"));
  c.container_run_args = SplitSpaces(flags.Get("container-run-args"));
  c.container_gpus = flags.Get("container-gpus", c.container_gpus);
  c.container_user = flags.Get("container-user", c.container_user);
  FARM_ASSIGN_OR_RETURN(c.build_user,
                        sandbox::ResolveBuildUser(flags.Get("build-user", "auto"), ::geteuid()));
  return Status::Ok();
}

Status ParseGitFlags(const Flags& flags, WorkerConfig& c) {
  c.git.allow_ssh = flags.Has("git-ssh");
  c.git.ca_file = flags.Has("git-ca-file") ? Absolute(flags.Get("git-ca-file")) : "";
  FARM_ASSIGN_OR_RETURN(int64_t timeout_s, flags.GetInt("git-timeout-s", 1800));
  if (timeout_s < 1 || timeout_s > 24 * 3600) {
    return Status::InvalidArgument("--git-timeout-s must be 1..86400");
  }
  c.git.timeout_ms = timeout_s * 1000;
  return Status::Ok();
}

Result<FakeGpu> ParseFakeGpu(const std::string& text) {
  size_t colon = text.rfind(':');
  std::string cc = colon == std::string::npos ? "" : text.substr(colon + 1);
  size_t dot = cc.find('.');
  FakeGpu gpu;
  if (colon == 0 || dot == std::string::npos || dot == 0 || dot + 1 == cc.size() ||
      cc.find_first_not_of("0123456789.") != std::string::npos || cc.size() > 5) {
    return Status::InvalidArgument("--test-fake-gpu needs NAME:MAJOR.MINOR, got \"" + text + "\"");
  }
  gpu.name = text.substr(0, colon);
  gpu.cc_major = std::stoi(cc.substr(0, dot));
  gpu.cc_minor = std::stoi(cc.substr(dot + 1));
  return gpu;
}

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "worker";
  return buf;
}

}  // namespace

std::string WorkerUsage() {
  return "usage: farm-worker (--server HOST:PORT | --server-file PATH) [flags]\n" +
         Flags(Specs()).Usage();
}

Result<WorkerConfig> ParseWorkerFlags(int argc, char** argv, bool* help) {
  Flags flags(Specs());
  FARM_RETURN_IF_ERROR(flags.Parse(argc, argv));
  *help = flags.Has("help");
  if (flags.Has("config")) FARM_RETURN_IF_ERROR(flags.MergeConfigFile(flags.Get("config")));
  if (!flags.positionals().empty()) {
    return Status::InvalidArgument("unexpected argument " + flags.positionals()[0]);
  }
  WorkerConfig c;
  c.server = flags.Get("server");
  c.server_file = flags.Get("server-file");
  FARM_ASSIGN_OR_RETURN(c.tls, net::ClientTlsFromFlags(flags));
  if (!*help && !flags.Has("probe") && c.server.empty() == c.server_file.empty()) {
    return Status::InvalidArgument("give exactly one of --server and --server-file");
  }
  c.enroll_token_file = flags.Get("enroll-token-file");
  // Absolute from here on: builds, nvcc and the probe kernels run in other directories, where
  // a relative path would name something else.
  c.state_dir = Absolute(flags.Get("state-dir", c.state_dir));
  c.work_dir = Absolute(flags.Get("work-dir", c.state_dir + "/work"));
  c.ccache = !flags.Has("no-ccache");
  c.ccache_dir = Absolute(flags.Get("ccache-dir", c.work_dir + "/ccache"));
  c.ccache_max_size = flags.Get("ccache-max-size", c.ccache_max_size);
  if (c.ccache_max_size.empty() || c.ccache_max_size.find_first_of(" \t") != std::string::npos) {
    return Status::InvalidArgument("--ccache-max-size needs a size such as 20G");
  }
  c.name = flags.Get("name", HostName());
  for (const auto& kv : flags.GetAll("label")) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--label needs KEY=VALUE, got \"" + kv + "\"");
    }
    c.labels[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  FARM_ASSIGN_OR_RETURN(int64_t max_jobs, flags.GetInt("max-jobs", 1));
  if (max_jobs < 1 || max_jobs > 64) return Status::InvalidArgument("--max-jobs must be 1..64");
  c.max_jobs = static_cast<int>(max_jobs);
  FARM_ASSIGN_OR_RETURN(int64_t log_mib, flags.GetInt("log-buffer-mib", 64));
  if (log_mib < 1 || log_mib > 4096) {
    return Status::InvalidArgument("--log-buffer-mib must be 1..4096");
  }
  c.log_buffer_bytes = log_mib << 20;
  c.pythons = flags.GetAll("python");
  c.log_json = flags.Has("log-json");
  c.keep_workspaces = flags.Has("keep-workspaces");
  c.probe_kernels = !flags.Has("no-probe-kernels");
  c.probe_only = flags.Has("probe");
  c.find_links = flags.GetAll("find-links");
  c.verbose = flags.Has("verbose");
  FARM_RETURN_IF_ERROR(ParseExecutorFlags(flags, c));
  FARM_RETURN_IF_ERROR(ParseGitFlags(flags, c));
  FARM_RETURN_IF_ERROR(ParseProvisionFlags(flags, c));
  for (const auto& text : flags.GetAll("test-fake-gpu")) {
    FARM_ASSIGN_OR_RETURN(FakeGpu gpu, ParseFakeGpu(text));
    c.test_fake_gpus.push_back(std::move(gpu));
  }
  return c;
}

Result<std::string> ResolveServerAddress(const WorkerConfig& config, int64_t wait_ms) {
  if (!config.server.empty()) return config.server;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100000; ++i) {
    auto content = fs::ReadFile(config.server_file);
    if (content.ok()) {
      std::string first = TrimSpace(content->substr(0, content->find('\n')));
      if (!first.empty()) return first;
    }
    if (std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(wait_ms)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::Unavailable("server file " + config.server_file + " did not appear within " +
                             std::to_string(wait_ms / 1000) + " s");
}

Result<std::string> LoadEnrollToken(const WorkerConfig& config) {
  if (!config.enroll_token_file.empty()) {
    auto content = fs::ReadFile(config.enroll_token_file);
    if (!content.ok()) return content.status().WithContext("enrollment token");
    std::string token = TrimSpace(*content);
    if (token.empty()) {
      return Status::FailedPrecondition("enrollment token file " + config.enroll_token_file +
                                        " is empty");
    }
    return token;
  }
  const char* env = std::getenv("FARM_ENROLL_TOKEN");
  if (env != nullptr && *env != '\0') return TrimSpace(env);
  return Status::FailedPrecondition(
      "no enrollment token: give --enroll-token-file or set FARM_ENROLL_TOKEN");
}

}  // namespace farm::agent
