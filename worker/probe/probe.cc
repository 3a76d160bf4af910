#include "worker/probe/probe.h"

#include <glob.h>
#include <google/protobuf/util/json_util.h>
#include <sched.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <set>

#include "common/fs.h"
#include "common/log.h"

namespace farm::agent {
namespace {

constexpr int64_t kToolTimeoutMs = 20000;
constexpr int64_t kPythonTimeoutMs = 60000;  // importing torch can take a while

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : "";
}

std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  return out;
}

// python3 or python3.N (not python3-config, python3.11m-config, ...).
bool IsPythonName(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  if (base.rfind("python3", 0) != 0) return false;
  std::string rest = base.substr(7);
  if (rest.empty()) return true;
  return rest[0] == '.' && rest.size() > 1 &&
         std::all_of(rest.begin() + 1, rest.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = std::min(p.find(':', start), p.size());
    std::string c = p.substr(start, end - start) + "/" + name;
    if (::access(c.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::string OsName() {
  auto text = fs::ReadFile("/etc/os-release");
  if (text.ok()) {
    size_t p = text->find("PRETTY_NAME=");
    if (p != std::string::npos) {
      std::string v = text->substr(p + 12, text->find('\n', p) - p - 12);
      v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
      return v;
    }
  }
  return "Linux";
}

int CpuCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
}

}  // namespace

std::vector<std::string> DiscoverPythons(const std::vector<std::string>& configured) {
  if (!configured.empty()) return configured;
  std::vector<std::string> candidates;
  for (const auto& p : Glob("/usr/bin/python3*")) {
    if (IsPythonName(p)) candidates.push_back(p);
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  for (int i = 0; i < 256 && start <= dirs.size(); ++i) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty()) {
      for (const auto& p : Glob(dir + "/python3*")) {
        if (IsPythonName(p) && ::access(p.c_str(), X_OK) == 0) candidates.push_back(p);
      }
    }
    start = end + 1;
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& c : candidates) {
    std::string real = RealPath(c);
    // A pyenv shim is a script; its real path is the shim itself, so it stays distinct.
    if (real.empty() || !seen.insert(real).second) continue;
    out.push_back(c);
  }
  return out;
}

Result<std::string> SystemProbe::RunText(const std::vector<std::string>& argv, int64_t timeout_ms) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.kill_grace_ms = 1000;
  FARM_ASSIGN_OR_RETURN(auto captured, RunAndCapture(runner_, spec, timeout_ms));
  if (captured.result.timed_out) return Status::DeadlineExceeded(argv[0] + " timed out");
  if (captured.result.exit_code != 0) {
    return Status::FailedPrecondition(
        argv[0] + " exited with " + std::to_string(captured.result.exit_code) + ": " +
        captured.err.substr(0, std::min<size_t>(captured.err.find('\n'), 300)));
  }
  return captured.out;
}

std::optional<int64_t> SystemProbe::CgroupLimit() {
  auto cg = fs::ReadFile("/proc/self/cgroup");
  std::string rel = cg.ok() ? ParseCgroupV2Path(*cg) : "";
  for (const std::string& path :
       {"/sys/fs/cgroup" + rel + "/memory.max", std::string("/sys/fs/cgroup/memory.max"),
        std::string("/sys/fs/cgroup/memory/memory.limit_in_bytes")}) {
    auto text = fs::ReadFile(path);
    if (text.ok()) return ParseCgroupMemoryLimit(*text);
  }
  return std::nullopt;
}

int64_t SystemProbe::AvailableMemoryBytes() {
  auto text = fs::ReadFile("/proc/meminfo");
  auto info = text.ok() ? ParseMemInfo(*text) : Result<MemInfo>(text.status());
  int64_t available = info.ok() ? info->available_bytes : 0;
  if (auto limit = CgroupLimit(); limit && (available == 0 || *limit < available)) {
    available = *limit;
  }
  return available;
}

void SystemProbe::ProbeHost(farm::v1::Capabilities* caps) {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  caps->set_hostname(host);
  struct utsname u;
  if (::uname(&u) == 0) {
    caps->set_cpu_arch(u.machine);
    caps->set_platform(PlatformTag(u.machine));
    caps->set_wsl2(KernelReleaseIsWsl2(u.release) || fs::Exists("/usr/lib/wsl"));
  }
  caps->set_os(OsName());
  caps->set_cpu_cores(CpuCores());
  auto text = fs::ReadFile("/proc/meminfo");
  if (auto info = text.ok() ? ParseMemInfo(*text) : Result<MemInfo>(text.status()); info.ok()) {
    int64_t total = info->total_bytes;
    if (auto limit = CgroupLimit(); limit && *limit < total) total = *limit;
    caps->set_ram_bytes(total);
  }
  struct statvfs vfs;
  if (fs::MakeDirs(config_.work_dir).ok() && ::statvfs(config_.work_dir.c_str(), &vfs) == 0) {
    caps->set_free_disk_bytes(static_cast<int64_t>(vfs.f_bavail) * vfs.f_frsize);
  }
  for (const char* rt : {"podman", "docker"}) {
    if (OnPath(rt)) caps->add_container_runtimes(rt);
  }
  for (const auto& [k, v] : config_.labels) (*caps->mutable_labels())[k] = v;
  caps->set_max_concurrent_jobs(config_.max_jobs);
}

std::optional<farm::v1::CudaToolkit> SystemProbe::ProbeToolkit(const std::string& dir) {
  std::string nvcc = dir + "/bin/nvcc";
  if (::access(nvcc.c_str(), X_OK) != 0) return std::nullopt;
  auto version_text = RunText({nvcc, "--version"}, kToolTimeoutMs);
  auto version = version_text.ok() ? ParseNvccVersion(*version_text)
                                   : Result<std::string>(version_text.status());
  if (!version.ok()) {
    log::Warn("ignoring CUDA toolkit " + dir + ": " + version.status().ToString());
    return std::nullopt;
  }
  farm::v1::CudaToolkit tk;
  tk.set_path(dir);
  tk.set_version(*version);
  std::vector<std::string> codes;
  for (const char* flag : {"--list-gpu-code", "--list-gpu-arch"}) {
    auto listed = RunText({nvcc, flag}, kToolTimeoutMs);
    if (listed.ok()) {
      for (const auto& c : ParseGpuCodeList(*listed)) codes.push_back(c);
    }
  }
  for (const auto& sm : ConfirmVariantCodes(nvcc, CandidateVariantCodes(codes))) {
    codes.push_back(sm);
    codes.push_back("compute_" + sm.substr(3));
  }
  for (const auto& c : codes) tk.add_gpu_codes(c);
  return tk;
}

// nvcc lists only plain codes; the a/f variants are confirmed with a dry run. One dry run
// naming every candidate usually confirms them all at once (each costs nvcc a host
// compiler run, and a worker probes at every start); when it fails, each is tried alone.
std::vector<std::string> SystemProbe::ConfirmVariantCodes(const std::string& nvcc,
                                                          const std::vector<std::string>& sms) {
  auto dry_run = [&](const std::vector<std::string>& some) {
    std::vector<std::string> argv = {nvcc, "--dryrun",  "-x", "cu",
                                     "-c", "/dev/null", "-o", "/dev/null"};
    for (const auto& sm : some) {
      argv.push_back("-gencode");
      argv.push_back("arch=compute_" + sm.substr(3) + ",code=" + sm);
    }
    return RunText(argv, kToolTimeoutMs).ok();
  };
  if (sms.empty() || dry_run(sms)) return sms;
  std::vector<std::string> confirmed;
  for (const auto& sm : sms) {
    if (dry_run({sm})) confirmed.push_back(sm);
  }
  return confirmed;
}

void SystemProbe::ProbeToolkits(farm::v1::Capabilities* caps) {
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) dirs.push_back(home);
  dirs.push_back("/usr/local/cuda");
  for (const auto& d : Glob("/usr/local/cuda-*")) dirs.push_back(d);
  std::set<std::string> seen;
  for (const auto& dir : dirs) {
    std::string real = RealPath(dir);
    if (real.empty() || !seen.insert(real).second) continue;
    if (auto tk = ProbeToolkit(dir)) *caps->add_toolkits() = *tk;
  }
}

void SystemProbe::ProbePythons(farm::v1::Capabilities* caps) {
  for (const auto& path : DiscoverPythons(config_.pythons)) {
    auto out = RunText({path, "-c", PythonProbeScript()}, kPythonTimeoutMs);
    farm::v1::PythonInterpreter py;
    py.set_path(path);
    Status parsed = out.ok() ? ParsePythonProbe(*out, &py) : out.status();
    if (!parsed.ok()) {
      // Discovery meets shims of interpreters that are not installed: only say so loudly
      // for an interpreter the operator named.
      std::string why = "ignoring Python " + path + ": " + parsed.ToString();
      config_.pythons.empty() ? log::Debug(why) : log::Warn(why);
      continue;
    }
    *caps->add_pythons() = py;
  }
}

farm::v1::Capabilities SystemProbe::Probe() {
  farm::v1::Capabilities caps;
  ProbeHost(&caps);
  ProbeGpus(&caps);
  ProbeToolkits(&caps);
  ProbePythons(&caps);
  if (config_.probe_kernels) caps.set_probe_error(KernelVerdict(caps).error);
  for (const FakeGpu& fake : config_.test_fake_gpus) {  // test-only, after the probe kernels
    farm::v1::Gpu* gpu = caps.add_gpus();
    gpu->set_index(caps.gpus_size() - 1);
    gpu->set_name(fake.name);
    gpu->set_cc_major(fake.cc_major);
    gpu->set_cc_minor(fake.cc_minor);
    gpu->set_uuid("fake-" + std::to_string(gpu->index()));
  }
  return caps;
}

// The probe kernels run once, at the first probe; later probes repeat their verdict.
const ProbeKernelVerdict& SystemProbe::KernelVerdict(const farm::v1::Capabilities& caps) {
  std::lock_guard lock(kernel_mu_);
  if (!kernel_verdict_) {
    kernel_verdict_ = RunProbeKernels(runner_, caps, config_.work_dir + "/probe-kernels");
    if (!kernel_verdict_->error.empty()) {
      log::Error("quarantined: " + kernel_verdict_->error);
    } else {
      log::Info("probe kernels: " + kernel_verdict_->summary);
    }
  }
  return *kernel_verdict_;
}

int PrintProbe(const WorkerConfig& config) {
  RealProcessRunner runner;
  SystemProbe probe(config, runner);
  farm::v1::Capabilities caps = probe.Probe();
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(caps, &json, options);
  std::fputs(json.c_str(), stdout);
  if (!caps.gpu_driver_error().empty()) log::Error(caps.gpu_driver_error());
  return caps.probe_error().empty() && caps.gpu_driver_error().empty() ? 0 : 1;
}

}  // namespace farm::agent
