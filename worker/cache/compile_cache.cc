#include "worker/cache/compile_cache.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <vector>

#include "common/fs.h"
#include "common/log.h"
#include "common/sha256.h"
#include "worker/exec/sandbox_executor.h"
#include "worker/exec/untrusted_dir.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

// A statistics log larger than this is not read (a compile adds about 100 bytes).
constexpr int64_t kMaxStatsLogBytes = int64_t{64} << 20;

// Compiler names builds call by name: the plain drivers and the target-prefixed ones that
// Debian's Python sysconfig (and so setuptools) uses.
// clang-format off
const char* const kMasqueradeCompilers[] = {
    "cc", "c++", "gcc", "g++", "clang", "clang++", "x86_64-linux-gnu-gcc", "x86_64-linux-gnu-g++",
    "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++"};
// clang-format on

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (!dir.empty()) out.push_back(dir);
  }
  return out;
}

std::string JoinPath(const std::vector<std::string>& dirs) {
  std::string out;
  for (const auto& d : dirs) out += (out.empty() ? "" : ":") + d;
  return out;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The job's ccache launcher (<job>/bin/farm-ccache): drops every CCACHE_* variable of the
// build, points ccache at the farm's configuration file, and takes the job's masquerade
// directory off PATH so ccache finds the real compiler (and the host compiler nvcc runs
// for itself is not put through ccache, and counted, a second time). A builder image
// without ccache at this path runs the compiler uncached.
std::string LauncherScript(const std::string& ccache, const std::string& conf,
                           const std::string& bin) {
  std::string s =
      "#!/bin/sh\n# Written by farm-worker: ccache with the farm's configuration only.\n";
  s += "set -f\n";
  s += "for v in $(env | sed -n 's/^\\(CCACHE_[A-Za-z0-9_]*\\)=.*/\\1/p'); do unset \"$v\"; done\n";
  s += "p=\nIFS=:\nfor d in $PATH; do\n";
  s += "  [ \"$d\" = " + ShellQuote(bin) + " ] || p=\"${p:+$p:}$d\"\n";
  s += "done\nunset IFS\nPATH=$p\n";
  s += "CCACHE_CONFIGPATH=" + ShellQuote(conf) + "\n";
  s += "export PATH CCACHE_CONFIGPATH\n";
  s += "[ -x " + ShellQuote(ccache) + " ] || exec \"$@\"\n";
  s += "exec " + ShellQuote(ccache) + " \"$@\"\n";
  return s;
}

// A compiler of the job's masquerade directory: `name` through the job's launcher.
std::string CompilerScript(const std::string& launcher, const std::string& name) {
  return "#!/bin/sh\nexec " + ShellQuote(launcher) + " " + ShellQuote(name) + " \"$@\"\n";
}

// bin/nvcc of a shadow toolkit, shared by every job: nvcc through the launcher of the job
// that runs it (first on its PATH), or nvcc itself outside a cached job.
std::string NvccWrapper(const std::string& nvcc) {
  std::string s = "#!/bin/sh\n";
  s += "# Written by farm-worker: nvcc through the compile cache of the job that runs it.\n";
  s += "if command -v farm-ccache >/dev/null 2>&1; then\n";
  s += "  exec farm-ccache " + ShellQuote(nvcc) + " \"$@\"\n";
  s += "fi\n";
  s += "exec " + ShellQuote(nvcc) + " \"$@\"\n";
  return s;
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  stdfs::path abs = stdfs::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

Status Symlink(const stdfs::path& target, const stdfs::path& link) {
  std::error_code ec;
  stdfs::create_symlink(target, link, ec);
  if (ec) return Status::Internal("linking " + link.string() + ": " + ec.message());
  return Status::Ok();
}

// ccache hashes nvcc's arguments but not NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS, which
// nvcc reads itself: an object compiled with --compress-mode=size would answer a compile
// without it. Flags beyond the worker's own -objtemp therefore get a ccache namespace of
// their own, which ccache adds to every hash. "" when there are none.
std::string NvccFlagsNamespace(const EnvMap& env) {
  auto get = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  std::string append = get("NVCC_APPEND_FLAGS");
  const std::string prepend = get("NVCC_PREPEND_FLAGS");
  for (size_t at; (at = append.find("-objtemp")) != std::string::npos;) append.erase(at, 8);
  if (append.find_first_not_of(' ') == std::string::npos && prepend.empty()) return "";
  return "nvcc-flags-" + Sha256Hex(prepend + "\n" + append).substr(0, 16);
}

}  // namespace

farm::v1::CompileCacheStats ParseStatsLog(const std::string& text) {
  farm::v1::CompileCacheStats stats;
  bool in_call = false, hit = false, miss = false;
  auto close_call = [&] {
    if (!in_call) return;
    if (hit) {
      stats.set_hits(stats.hits() + 1);
    } else if (miss) {
      stats.set_misses(stats.misses() + 1);
    } else {
      stats.set_uncacheable(stats.uncacheable() + 1);
    }
  };
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("#", 0) == 0) {
      close_call();
      in_call = true;
      hit = miss = false;
    } else if (line == "direct_cache_hit" || line == "preprocessed_cache_hit") {
      hit = true;
    } else if (line == "cache_miss") {
      miss = true;
    }
  }
  close_call();
  return stats;
}

std::string DescribeCacheStats(const farm::v1::CompileCacheStats& stats) {
  int64_t cacheable = stats.hits() + stats.misses();
  std::string out = "compile cache: " + std::to_string(stats.hits()) +
                    (stats.hits() == 1 ? " hit, " : " hits, ") + std::to_string(stats.misses()) +
                    (stats.misses() == 1 ? " miss" : " misses");
  // Rounded down, so 100% means that every compile hit.
  if (cacheable > 0) out += " (" + std::to_string(stats.hits() * 100 / cacheable) + "%)";
  if (stats.uncacheable() > 0) {
    out += ", " + std::to_string(stats.uncacheable()) +
           (stats.uncacheable() == 1 ? " uncacheable call" : " uncacheable calls");
  }
  return out;
}

Result<std::unique_ptr<CompileCache>> CompileCache::Create(const CompileCacheOptions& options,
                                                           const EnvMap& worker_env) {
  CompileCacheOptions opts = options;
  opts.cache_dir = Absolute(opts.cache_dir);
  opts.tools_dir = Absolute(opts.tools_dir);
  auto path_it = worker_env.find("PATH");
  std::string path = path_it == worker_env.end() ? "" : path_it->second;
  if (!opts.enabled) {
    return std::unique_ptr<CompileCache>(
        new CompileCache(opts, "", "turned off on this worker (--no-ccache)"));
  }
  std::string ccache = FindInPath("ccache", path.c_str());
  if (ccache.empty()) {
    log::Warn(
        "ccache is not installed (not on PATH); builds run without a "
        "compile cache");
    return std::unique_ptr<CompileCache>(
        new CompileCache(opts, "", "ccache is not installed on this worker"));
  }
  std::unique_ptr<CompileCache> cache(new CompileCache(opts, ccache, ""));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(opts.cache_dir + "/ns"));
  // Namespaces were once named after recipes alone, which any submitter could name:
  // whatever was stored there may be poisoned, and nothing reads it any more.
  if (fs::Exists(opts.cache_dir + "/recipes")) {
    log::Info("removing the compile cache's old per-recipe namespaces " + opts.cache_dir +
              "/recipes");
    FARM_RETURN_IF_ERROR(fs::RemoveAll(opts.cache_dir + "/recipes"));
  }
  // Rewritten at every start: a toolkit upgraded in place gets a fresh shadow.
  FARM_RETURN_IF_ERROR(fs::RemoveAll(opts.tools_dir));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(opts.tools_dir + "/jobs"));
  for (const char* name : kMasqueradeCompilers) {
    // Only compilers the worker has: ccache fails when it cannot find the real one.
    if (!FindInPath(name, path.c_str()).empty()) cache->compilers_.push_back(name);
  }
  log::Info("compile cache in " + opts.cache_dir + " (max " + opts.max_size +
            " per namespace) through " + ccache);
  return cache;
}

Result<std::string> CompileCache::ShadowToolkit(const std::string& cuda_home) {
  std::lock_guard lock(mu_);
  if (auto it = shadows_.find(cuda_home); it != shadows_.end()) return it->second;
  std::string dir = options_.tools_dir + "/cuda-" + std::to_string(shadows_.size());
  FARM_RETURN_IF_ERROR(fs::RemoveAll(dir));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dir + "/bin"));
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(cuda_home, ec)) {
    if (e.path().filename() == "bin") continue;
    FARM_RETURN_IF_ERROR(Symlink(e.path(), stdfs::path(dir) / e.path().filename()));
  }
  for (const auto& e : stdfs::directory_iterator(cuda_home + "/bin", ec)) {
    if (e.path().filename() == "nvcc") continue;
    FARM_RETURN_IF_ERROR(Symlink(e.path(), stdfs::path(dir) / "bin" / e.path().filename()));
  }
  if (ec) return Status::Internal("reading " + cuda_home + ": " + ec.message());
  FARM_RETURN_IF_ERROR(
      fs::WriteFileAtomic(dir + "/bin/nvcc", NvccWrapper(cuda_home + "/bin/nvcc"), 0755));
  shadows_[cuda_home] = dir;
  return dir;
}

JobCacheUse CompileCache::PrepareJob(const farm::v1::Recipe& recipe,
                                     const std::string& namespace_id, const std::string& ws,
                                     const std::string& executor, EnvMap& env,
                                     const ExecutableCheck& in_image) {
  std::string why_off = !recipe.ccache() ? "the recipe sets ccache: false"
                        : !available()   ? why_not_
                        : !IsCacheNamespaceId(namespace_id)
                            ? "farmd named no cache namespace for this job"
                            : "";
  const bool on_host = executor == "native" || executor == "sandbox";
  if (why_off.empty() && !on_host && in_image) why_off = ImageWhyOff(executor, in_image);
  std::string cuda_home = env.count("CUDA_HOME") ? env["CUDA_HOME"] : "";
  bool has_nvcc = !cuda_home.empty() && !FindInPath("nvcc", (cuda_home + "/bin").c_str()).empty();
  Result<std::string> shadow = std::string();
  if (why_off.empty() && has_nvcc) {
    shadow = ShadowToolkit(cuda_home);
    if (!shadow.ok()) why_off = shadow.status().message();
  }
  if (!why_off.empty()) return Off(why_off, env);
  // The id is farmd's; the directory is the worker's: plain hex under the cache root.
  const std::string ns = options_.cache_dir + "/ns/" + namespace_id;
  const std::string job_dir = options_.tools_dir + "/jobs/" + stdfs::path(ws).filename().string();
  // Paths as the build sees them: the sandbox shows the workspace at /farm/job.
  auto seen = [&](const std::string& p) {
    return executor == "sandbox" ? sandbox::ToSandboxPath(p, ws) : p;
  };
  Status made = fs::MakeDirs(ns);
  if (made.ok()) {
    made = WriteJobTools(job_dir, ns, seen(Absolute(ws)), seen(Absolute(ws) + "/" + kStatsLogName),
                         NvccFlagsNamespace(env));
  }
  if (!made.ok()) {
    Status removed = fs::RemoveAll(job_dir);
    (void)removed;
    return Off(made.message(), env);
  }
  JobCacheUse use = UseCache(ws, job_dir, cuda_home, *shadow, env);
  use.namespace_dir = ns;
  use.note = "compile cache: namespace " + namespace_id.substr(0, 12) + " (max " +
             options_.max_size + "; " +
             (shadow->empty() ? "no nvcc" : "nvcc through CUDA_HOME=" + *shadow) + ")";
  if (executor != "native") use.mounts = {{ns, false}, {options_.tools_dir, true}};
  if (!on_host) {
    use.note += "; in the " + executor + " container through " + ccache_ +
                (in_image ? " (the image has it)" : " when the image has it there");
  }
  return use;
}

Status CompileCache::WriteJobTools(const std::string& job_dir, const std::string& ns,
                                   const std::string& base_dir, const std::string& stats_log,
                                   const std::string& hash_namespace) const {
  FARM_RETURN_IF_ERROR(fs::RemoveAll(job_dir));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(job_dir + "/bin"));
  const std::string conf = job_dir + "/ccache.conf";
  std::string text = "# Written by farm-worker for one job; the build cannot change it.\n";
  text += "cache_dir = " + ns + "\n";
  text += "max_size = " + options_.max_size + "\n";
  text += "base_dir = " + base_dir + "\n";
  text += "hash_dir = false\n";
  text += "stats_log = " + stats_log + "\n";
  if (!hash_namespace.empty()) text += "namespace = " + hash_namespace + "\n";
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(conf, text, 0644));
  const std::string bin = job_dir + "/bin";
  const std::string launcher = bin + "/farm-ccache";
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(launcher, LauncherScript(ccache_, conf, bin), 0755));
  for (const std::string& name : compilers_) {
    FARM_RETURN_IF_ERROR(
        fs::WriteFileAtomic(bin + "/" + name, CompilerScript(launcher, name), 0755));
  }
  return Status::Ok();
}

std::string CompileCache::ImageWhyOff(const std::string& executor,
                                      const ExecutableCheck& in_image) const {
  Result<bool> has = in_image(ccache_);
  if (!has.ok()) {
    return "cannot tell whether the " + executor + " image has " + ccache_ + ": " +
           has.status().message();
  }
  if (*has) return "";
  return "the " + executor + " image has no " + ccache_ +
         ", which the worker's compiler wrappers call";
}

JobCacheUse CompileCache::Off(const std::string& why, EnvMap& env) {
  env["CCACHE_DISABLE"] = "1";
  JobCacheUse use;
  use.note = "compile cache: off (" + why + ")";
  return use;
}

JobCacheUse CompileCache::UseCache(const std::string& ws, const std::string& job_dir,
                                   const std::string& cuda_home, const std::string& shadow,
                                   EnvMap& env) {
  JobCacheUse use;
  use.workspace = Absolute(ws);
  use.job_dir = job_dir;
  // The wrappers set what ccache reads; these only keep a build that calls ccache itself
  // on the job's configuration too (it may change them for its own calls, nobody else's).
  for (auto it = env.begin(); it != env.end();) {
    it = it->first.rfind("CCACHE_", 0) == 0 ? env.erase(it) : std::next(it);
  }
  env["CCACHE_CONFIGPATH"] = job_dir + "/ccache.conf";
  std::vector<std::string> path = SplitPath(env["PATH"]);
  path.insert(path.begin(), job_dir + "/bin");
  if (!shadow.empty()) {
    for (auto& dir : path) {
      if (dir == cuda_home + "/bin") dir = shadow + "/bin";
    }
    env["CUDA_HOME"] = shadow;
    if (env.count("PYTORCH_NVCC") == 0) env["PYTORCH_NVCC"] = shadow + "/bin/nvcc";
  }
  env["PATH"] = JoinPath(path);
  use.used = true;
  return use;
}

bool IsCacheNamespaceId(const std::string& id) {
  return id.size() >= 32 && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Result<std::string> ReadJobStatsLog(const std::string& workspace) {
  FARM_ASSIGN_OR_RETURN(UntrustedDir ws, UntrustedDir::Open(workspace));
  auto text = ws.ReadFile(kStatsLogName, kMaxStatsLogBytes);
  if (text.status().code() == StatusCode::kNotFound) return std::string();
  return text;
}

std::optional<farm::v1::CompileCacheStats> CompileCache::FinishJob(const JobCacheUse& use) {
  if (!use.used) return std::nullopt;
  if (!use.job_dir.empty()) {
    Status removed = fs::RemoveAll(use.job_dir);
    if (!removed.ok())
      log::Warn("removing the job's compile-cache wrappers: " + removed.ToString());
  }
  auto text = ReadJobStatsLog(use.workspace);
  if (!text.ok()) log::Warn("the job's compile-cache statistics: " + text.status().ToString());
  // No log (nothing was compiled) or one the worker does not read: zeros.
  return ParseStatsLog(text.ok() ? *text : "");
}

}  // namespace farm::agent
