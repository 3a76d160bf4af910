#include "worker/agent/compile_cache.h"

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <vector>

#include "common/fs.h"
#include "common/log.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

// Compiler names builds call by name: the plain drivers and the target-prefixed ones that
// Debian's Python sysconfig (and so setuptools) uses.
const char* const kMasqueradeCompilers[] = {
    "cc", "c++", "gcc", "g++", "clang", "clang++", "x86_64-linux-gnu-gcc", "x86_64-linux-gnu-g++",
    "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++"};

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

// bin/nvcc of a shadow toolkit. The masquerade directory leaves PATH first, so the host
// compiler nvcc runs for itself is not put through ccache (and counted) a second time.
std::string NvccWrapper(const std::string& ccache, const std::string& nvcc,
                        const std::string& masquerade) {
  return "#!/bin/sh\n"
         "# Written by farm-worker: nvcc through the compile cache.\n"
         "set -f\n"
         "p=\n"
         "IFS=:\n"
         "for d in $PATH; do\n"
         "  [ \"$d\" = " + ShellQuote(masquerade) + " ] || p=\"${p:+$p:}$d\"\n"
         "done\n"
         "unset IFS\n"
         "PATH=$p\n"
         "export PATH\n"
         "# A builder image without ccache at this path compiles uncached.\n"
         "[ -x " + ShellQuote(ccache) + " ] || exec " + ShellQuote(nvcc) + " \"$@\"\n"
         "exec " + ShellQuote(ccache) + " " + ShellQuote(nvcc) + " \"$@\"\n";
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

std::string FindInPath(const std::string& name, const std::string& path) {
  for (const auto& dir : SplitPath(path)) {
    std::string candidate = dir + "/" + name;
    std::error_code ec;
    if (stdfs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
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
  std::string ccache = FindInPath("ccache", path);
  if (ccache.empty()) {
    log::Warn("ccache is not installed (not on PATH); builds run without a "
              "compile cache");
    return std::unique_ptr<CompileCache>(
        new CompileCache(opts, "", "ccache is not installed on this worker"));
  }
  std::unique_ptr<CompileCache> cache(new CompileCache(opts, ccache, ""));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(opts.cache_dir));
  // Rewritten at every start: a toolkit upgraded in place gets a fresh shadow.
  FARM_RETURN_IF_ERROR(fs::RemoveAll(opts.tools_dir));
  FARM_RETURN_IF_ERROR(cache->MakeMasquerade(path));
  log::Info("compile cache in " + opts.cache_dir + " (max " + opts.max_size +
            ") through " + ccache);
  return cache;
}

Status CompileCache::MakeMasquerade(const std::string& path) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(MasqueradeDir()));
  for (const char* name : kMasqueradeCompilers) {
    // Only compilers the worker has: ccache fails when it cannot find the real one.
    if (FindInPath(name, path).empty()) continue;
    FARM_RETURN_IF_ERROR(Symlink(ccache_, stdfs::path(MasqueradeDir()) / name));
  }
  return Status::Ok();
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
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(
      dir + "/bin/nvcc", NvccWrapper(ccache_, cuda_home + "/bin/nvcc", MasqueradeDir()), 0755));
  shadows_[cuda_home] = dir;
  return dir;
}

JobCacheUse CompileCache::PrepareJob(const farm::v1::Recipe& recipe, const std::string& ws,
                                     const std::string& executor, EnvMap& env,
                                     const ExecutableCheck& in_image) {
  std::string why_off = !recipe.ccache() ? "the recipe sets ccache: false"
                        : !available()   ? why_not_
                                         : "";
  const bool on_host = executor == "native" || executor == "sandbox";
  if (why_off.empty() && !on_host && in_image) why_off = ImageWhyOff(executor, in_image);
  std::string cuda_home = env.count("CUDA_HOME") ? env["CUDA_HOME"] : "";
  bool has_nvcc = !cuda_home.empty() && !FindInPath("nvcc", cuda_home + "/bin").empty();
  Result<std::string> shadow = std::string();
  if (why_off.empty() && has_nvcc) {
    shadow = ShadowToolkit(cuda_home);
    if (!shadow.ok()) why_off = shadow.status().message();
  }
  if (!why_off.empty()) return Off(why_off, env);
  const std::string ns = NamespaceDir(recipe);
  if (Status made = fs::MakeDirs(ns); !made.ok()) return Off(made.message(), env);
  JobCacheUse use = UseCache(ws, ns, cuda_home, *shadow, env);
  if (executor != "native") use.mounts = {{ns, false}, {options_.tools_dir, true}};
  if (!on_host) {
    use.note += "; in the " + executor + " container through " + ccache_ +
                (in_image ? " (the image has it)" : " when the image has it there");
  }
  return use;
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

std::string CompileCache::NamespaceDir(const farm::v1::Recipe& recipe) const {
  // Recipe names are [a-z0-9._-]; anything else (a recipe that bypassed the parser) gets a
  // namespace of its own all the same.
  std::string name = recipe.name().empty() ? "unnamed" : recipe.name();
  for (char& c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.';
    if (!ok) c = '_';
  }
  if (name[0] == '.') name.insert(0, "_");  // never "." or ".."
  return options_.cache_dir + "/recipes/" + name;
}

JobCacheUse CompileCache::UseCache(const std::string& ws, const std::string& cache_dir,
                                   const std::string& cuda_home, const std::string& shadow,
                                   EnvMap& env) {
  JobCacheUse use;
  std::string base = Absolute(ws);
  env["CCACHE_DIR"] = cache_dir;
  env["CCACHE_MAXSIZE"] = options_.max_size;
  env["CCACHE_BASEDIR"] = base;
  env["CCACHE_NOHASHDIR"] = "1";
  use.stats_log = base + "/ccache-stats.log";
  env["CCACHE_STATSLOG"] = use.stats_log;
  std::vector<std::string> path = SplitPath(env["PATH"]);
  path.insert(path.begin(), MasqueradeDir());
  std::string nvcc_note = "no nvcc";
  if (!shadow.empty()) {
    for (auto& dir : path) {
      if (dir == cuda_home + "/bin") dir = shadow + "/bin";
    }
    env["CUDA_HOME"] = shadow;
    if (env.count("PYTORCH_NVCC") == 0) env["PYTORCH_NVCC"] = shadow + "/bin/nvcc";
    nvcc_note = "nvcc through CUDA_HOME=" + shadow;
  }
  env["PATH"] = JoinPath(path);
  use.used = true;
  use.note = "compile cache: " + cache_dir + " (max " + options_.max_size + "; " +
             nvcc_note + ")";
  return use;
}

std::optional<farm::v1::CompileCacheStats> CompileCache::FinishJob(const JobCacheUse& use) {
  if (!use.used) return std::nullopt;
  auto text = fs::ReadFile(use.stats_log);
  // No log: nothing was compiled.
  return ParseStatsLog(text.ok() ? *text : "");
}

}  // namespace farm::agent
