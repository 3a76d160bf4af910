#include "worker/job/build_env.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>

#include "common/arch.h"
#include "common/wheel/fatbin_compression.h"
#include "worker/probe/probe.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

constexpr double kDefaultGbPerJob = 4.0;
constexpr int kMaxNvccThreads = 4;

bool MentionsNvccThreads(const farm::v1::Recipe& recipe) {
  const std::string key = "NVCC_THREADS";
  if (recipe.build_command().find(key) != std::string::npos) return true;
  for (const auto& [k, v] : recipe.env()) {
    if (k == key || v.find(key) != std::string::npos) return true;
  }
  return false;
}

void SetParallelism(const JobEnvInputs& in, EnvMap& env) {
  const auto& recipe = in.job->recipe();
  int slots = ComputeMaxJobs(in.cores, in.available_memory_bytes, recipe.gb_per_compile_job(),
                             in.reserved_bytes);
  bool want_threads = MentionsNvccThreads(recipe) && env.count("NVCC_THREADS") == 0;
  int threads = want_threads ? std::clamp(slots, 1, kMaxNvccThreads) : 1;
  if (want_threads) env["NVCC_THREADS"] = std::to_string(threads);
  // MAX_JOBS x NVCC_THREADS stays within the slots memory and cores allow.
  if (env.count("MAX_JOBS") == 0) env["MAX_JOBS"] = std::to_string(std::max(1, slots / threads));
}

}  // namespace

const std::vector<std::string>& AllowedWorkerEnv() {
  static const std::vector<std::string> kAllowed = {"PATH",     "HOME",      "LANG", "LC_ALL",
                                                    "LC_CTYPE", "TMPDIR",    "USER", "LOGNAME",
                                                    "TZ",       "CCACHE_DIR"};
  return kAllowed;
}

EnvMap BaseEnv(const EnvMap& worker_env) {
  EnvMap out;
  for (const auto& name : AllowedWorkerEnv()) {
    if (auto it = worker_env.find(name); it != worker_env.end()) out[name] = it->second;
  }
  if (out.count("PATH") == 0) out["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  return out;
}

int ComputeMaxJobs(int cores, int64_t available_bytes, double gb_per_job, int64_t reserved_bytes) {
  if (gb_per_job <= 0) gb_per_job = kDefaultGbPerJob;
  double gib = static_cast<double>(available_bytes) / double(int64_t{1} << 30);
  double reserved_gib = static_cast<double>(reserved_bytes) / double(int64_t{1} << 30);
  int64_t by_memory = static_cast<int64_t>(std::floor((0.85 * gib - reserved_gib) / gb_per_job));
  int64_t jobs = std::min<int64_t>(std::max(cores, 1), by_memory);
  return static_cast<int>(std::max<int64_t>(1, jobs));
}

Result<farm::v1::PythonInterpreter> SelectPython(const farm::v1::MatrixCell& cell,
                                                 const farm::v1::Capabilities& caps) {
  std::string have;
  for (const auto& py : caps.pythons()) {
    have += (have.empty() ? "" : ", ") + py.version() + " (" + py.path() + ")";
    if (!cell.python().empty() && py.version() != cell.python()) continue;
    if (!cell.torch().empty() && py.torch_version().rfind(cell.torch(), 0) != 0) continue;
    return py;
  }
  std::string want = "Python " + (cell.python().empty() ? "(any)" : cell.python());
  if (!cell.torch().empty()) want += " with torch " + cell.torch();
  return Status::NotFound("no " + want + " on this worker (has " + (have.empty() ? "none" : have) +
                          ")");
}

Result<farm::v1::CudaToolkit> SelectToolkit(const farm::v1::MatrixCell& cell,
                                            const farm::v1::Capabilities& caps) {
  std::string have;
  for (const auto& tk : caps.toolkits()) {
    if (cell.cuda().empty()) return tk;
    if (tk.version() == cell.cuda() || tk.version().rfind(cell.cuda() + ".", 0) == 0) return tk;
    have += (have.empty() ? "" : ", ") + tk.version();
  }
  if (cell.cuda().empty()) return farm::v1::CudaToolkit();
  return Status::NotFound("no CUDA toolkit " + cell.cuda() + " on this worker (has " +
                          (have.empty() ? "none" : have) + ")");
}

double ValidationReserveGb(const farm::v1::JobAssignment& job, const farm::v1::Capabilities& caps) {
  bool unified = std::any_of(caps.gpus().begin(), caps.gpus().end(),
                             [](const farm::v1::Gpu& g) { return g.unified_memory(); });
  if (!unified || job.recipe().validation().script().empty()) return 0;
  // A cell without arch targets validates on any GPU.
  if (job.cell().arch_list().empty()) return job.recipe().validation().gpu_memory_gb();
  auto targets = arch::ParseArchList(job.cell().arch_list());
  if (!targets.ok()) return 0;
  std::vector<arch::Version> runs_on = arch::RunsOn(*targets);
  for (const farm::v1::Gpu& gpu : caps.gpus()) {
    arch::Version cc{gpu.cc_major(), gpu.cc_minor()};
    if (std::find(runs_on.begin(), runs_on.end(), cc) != runs_on.end()) {
      return job.recipe().validation().gpu_memory_gb();
    }
  }
  return 0;
}

bool TargetsSm121(const farm::v1::MatrixCell& cell) {
  auto targets = arch::ParseArchList(cell.arch_list());
  if (!targets.ok()) return false;
  return std::any_of(targets->begin(), targets->end(),
                     [](const arch::Target& t) { return t.major == 12 && t.minor == 1; });
}

namespace {

// What the host kind needs that the notes found the hard way; a recipe's own values win.
void SetHostNeeds(const JobEnvInputs& in, EnvMap& env) {
  const auto& fixed = in.job->recipe().env();
  auto unset = [&](const std::string& key) {
    return !fixed.contains(key) && !in.job->env().contains(key);
  };
  if (!in.toolkit.path().empty() && TargetsSm121(in.job->cell()) && unset("TRITON_PTXAS_PATH")) {
    env["TRITON_PTXAS_PATH"] = in.toolkit.path() + "/bin/ptxas";
  }
  if (!in.wsl2) return;
  // The driver's directory first: its libcuda is the only one that reaches the GPU.
  std::string runtime = kWslDriverDir;
  if (!in.toolkit.path().empty()) runtime += ":" + in.toolkit.path() + "/lib64";
  for (const auto& [key, dirs] : {std::pair<std::string, std::string>{"LD_LIBRARY_PATH", runtime},
                                  {"LIBRARY_PATH", kWslDriverDir}}) {
    std::string& value = env[key];
    if (value.find(kWslDriverDir) == std::string::npos) {
      value = dirs + (value.empty() ? "" : ":" + value);
    }
  }
  if (unset("PYTORCH_CUDA_ALLOC_CONF")) env["PYTORCH_CUDA_ALLOC_CONF"] = kWsl2AllocConf;
}

// What a deterministic `pip wheel` needs from the environment; a recipe's own values win.
void SetReproducible(const JobEnvInputs& in, EnvMap& env) {
  const auto& recipe_env = in.job->recipe().env();
  if (in.source_date_epoch > 0 && !recipe_env.contains("SOURCE_DATE_EPOCH")) {
    env["SOURCE_DATE_EPOCH"] = std::to_string(in.source_date_epoch);
  }
  if (!recipe_env.contains("PYTHONHASHSEED")) env["PYTHONHASHSEED"] = "0";
  std::string& nvcc = env["NVCC_APPEND_FLAGS"];
  if (nvcc.find("-objtemp") == std::string::npos &&
      nvcc.find("--objdir-as-tempdir") == std::string::npos) {
    nvcc += (nvcc.empty() ? "" : " ") + std::string("-objtemp");
  }
}

// Recipe `fatbin_compression`: nvcc's --compress-mode through NVCC_APPEND_FLAGS, which
// nvcc reads itself, so the package's own flags need not change. Toolkits before 12.8
// have no such flag and keep their default (FatbinCompressionNote says so in the log).
void SetFatbinCompression(const JobEnvInputs& in, EnvMap& env) {
  std::string flag =
      wheel::FatbinCompressionFlag(in.job->recipe().fatbin_compression(), in.toolkit.version());
  if (flag.empty()) return;
  std::string& nvcc = env["NVCC_APPEND_FLAGS"];
  if (nvcc.find("--compress-mode") == std::string::npos) {
    nvcc += (nvcc.empty() ? "" : " ") + flag;
  }
}

}  // namespace

std::string FatbinCompressionNote(const farm::v1::Recipe& recipe,
                                  const farm::v1::CudaToolkit& toolkit) {
  const std::string& mode = recipe.fatbin_compression();
  if (mode.empty()) return "";
  std::string flag = wheel::FatbinCompressionFlag(mode, toolkit.version());
  if (!flag.empty()) return "device code compressed by nvcc (NVCC_APPEND_FLAGS " + flag + ")";
  return "fatbin_compression: " + mode + " needs CUDA 12.8 or later; CUDA " +
         (toolkit.version().empty() ? std::string("(unknown)") : toolkit.version()) +
         " keeps nvcc's default compression";
}

int64_t SourceDateEpoch(ProcessRunner& runner, const std::string& source_dir) {
  std::error_code ec;
  if (stdfs::exists(source_dir + "/.git", ec)) {
    // The source's own .git configuration is all git reads: no system or global one.
    ProcessSpec spec{.argv = {"git", "-C", source_dir, "log", "-1", "--format=%ct"},
                     .env = {{"PATH", "/usr/bin:/bin"},
                             {"HOME", "/nonexistent"},
                             {"GIT_CONFIG_NOSYSTEM", "1"},
                             {"GIT_CONFIG_GLOBAL", "/dev/null"},
                             {"LC_ALL", "C"}},
                     .clear_env = true};
    auto out = RunAndCapture(runner, spec, 30'000);
    if (out.ok() && out->result.exit_code == 0) {
      int64_t t = 0;
      auto [p, err] = std::from_chars(out->out.data(), out->out.data() + out->out.size(), t);
      if (err == std::errc() && t > 0) return t;
    }
  }
  int64_t newest = 0;
  int seen = 0;
  for (auto it = stdfs::recursive_directory_iterator(
           source_dir, stdfs::directory_options::skip_permission_denied, ec);
       !ec && it != stdfs::recursive_directory_iterator() && seen < 200'000;
       it.increment(ec), ++seen) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    newest = std::max<int64_t>(newest, static_cast<int64_t>(st.st_mtime));
  }
  return newest;
}

std::string PathWithoutToolkits(const std::string& path, std::vector<std::string>* dropped) {
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    start = end + 1;
    struct stat st {};
    std::string nvcc = (dir.empty() ? std::string(".") : dir) + "/nvcc";
    if (::stat(nvcc.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0) {
      if (dropped != nullptr) dropped->push_back(dir);
      continue;
    }
    out += (out.empty() ? "" : ":") + dir;
  }
  return out;
}

EnvMap BuildJobEnv(const JobEnvInputs& in) {
  const auto& job = *in.job;
  EnvMap env = BaseEnv(in.worker_env);
  for (const auto& [k, v] : job.recipe().env()) env[k] = v;
  for (const auto& [k, v] : job.env()) env[k] = v;
  std::string path = in.venv_dir + "/bin";
  if (!in.toolkit.path().empty()) {
    path += ":" + in.toolkit.path() + "/bin";
    env["CUDA_HOME"] = in.toolkit.path();
  }
  // A build given no toolkit (`environment.toolkit: false`, a cell without CUDA) finds
  // none of the host's on its PATH either: its wheels are labelled with no CUDA or with
  // the cell's, never with a toolkit the build found by itself.
  std::string rest = in.toolkit.path().empty() ? PathWithoutToolkits(env["PATH"]) : env["PATH"];
  env["PATH"] = path + (rest.empty() ? "" : ":" + rest);
  env["VIRTUAL_ENV"] = in.venv_dir;
  env["FARM_PYTHON"] = in.venv_dir + "/bin/python";
  env["FARM_WHEEL_DIR"] = in.wheel_dir;
  if (!in.tmp_dir.empty()) env["TMPDIR"] = in.tmp_dir;
  env["FARM_JOB_ID"] = std::to_string(job.job_id());
  env["FARM_ATTEMPT"] = std::to_string(job.attempt());
  env["FARM_PYTHON_VERSION"] = in.python_version;
  env["FARM_CUDA_VERSION"] = in.toolkit.version();
  env["FARM_TORCH_VERSION"] = job.cell().torch();
  if (!job.cell().arch_list().empty()) env["TORCH_CUDA_ARCH_LIST"] = job.cell().arch_list();
  SetParallelism(in, env);
  SetHostNeeds(in, env);
  SetReproducible(in, env);
  SetFatbinCompression(in, env);
  for (auto it = env.begin(); it != env.end();) {
    bool leaks = std::any_of(in.secrets.begin(), in.secrets.end(), [&](const std::string& s) {
      return !s.empty() && it->second.find(s) != std::string::npos;
    });
    it = leaks ? env.erase(it) : std::next(it);
  }
  return env;
}

}  // namespace farm::agent
