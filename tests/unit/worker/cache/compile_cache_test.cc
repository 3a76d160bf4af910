#include "worker/cache/compile_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/fs.h"
#include "common/process.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

// CCACHE_STATSLOG written by ccache 4.7.5 (Debian 12): nvcc compiling attn_cuda.cu in one
// workspace (miss), the same in a second workspace (direct hit), then after a comment-only
// change (the preprocessed output is unchanged: preprocessed hit).
constexpr char kNvccLog[] = R"(# csrc/attn_cuda.cu
cache_miss
direct_cache_miss
local_storage_miss
local_storage_read_miss
local_storage_read_miss
local_storage_write
local_storage_write
preprocessed_cache_miss
# csrc/attn_cuda.cu
direct_cache_hit
local_storage_hit
local_storage_read_hit
local_storage_read_hit
# csrc/attn_cuda.cu
direct_cache_miss
local_storage_hit
local_storage_read_hit
local_storage_read_miss
local_storage_write
preprocessed_cache_hit
)";

// The same ccache: a miss and a hit of attn_cpu.cc, a link, `nvcc --version` and a
// compile of a missing file. `ccache --show-log-stats` said for it: hits 1 / 2, misses
// 1 / 2, uncacheable calls 3 / 5.
constexpr char kMixedLog[] = R"(# csrc/attn_cpu.cc
cache_miss
direct_cache_miss
local_storage_miss
local_storage_read_miss
local_storage_read_miss
local_storage_write
local_storage_write
preprocessed_cache_miss
# csrc/attn_cpu.cc
direct_cache_hit
local_storage_hit
local_storage_read_hit
local_storage_read_hit
# b/attn_cpu.o
called_for_link
# 
no_input_file
# 
no_input_file
)";

TEST(ParseStatsLogTest, CountsHitsOfBothModesAndMisses) {
  auto stats = ParseStatsLog(kNvccLog);
  EXPECT_EQ(stats.hits(), 2);
  EXPECT_EQ(stats.misses(), 1);
  EXPECT_EQ(stats.uncacheable(), 0);
}

TEST(ParseStatsLogTest, AgreesWithCcacheOnUncacheableCalls) {
  auto stats = ParseStatsLog(kMixedLog);
  EXPECT_EQ(stats.hits(), 1);
  EXPECT_EQ(stats.misses(), 1);
  EXPECT_EQ(stats.uncacheable(), 3);
}

TEST(ParseStatsLogTest, EmptyAndCrlfLogs) {
  auto none = ParseStatsLog("");
  EXPECT_EQ(none.hits() + none.misses() + none.uncacheable(), 0);
  auto crlf = ParseStatsLog("# a.c\r\ndirect_cache_hit\r\n# b.c\r\ncache_miss\r\n");
  EXPECT_EQ(crlf.hits(), 1);
  EXPECT_EQ(crlf.misses(), 1);
}

TEST(DescribeCacheStatsTest, JobLogLine) {
  farm::v1::CompileCacheStats s;
  s.set_hits(12);
  EXPECT_EQ(DescribeCacheStats(s), "compile cache: 12 hits, 0 misses (100%)");
  s.set_hits(2);
  s.set_misses(1);
  s.set_uncacheable(1);
  EXPECT_EQ(DescribeCacheStats(s), "compile cache: 2 hits, 1 miss (66%), 1 uncacheable call");
  s.set_hits(199);
  EXPECT_EQ(DescribeCacheStats(s).substr(0, 42), "compile cache: 199 hits, 1 miss (99%), 1 u");
  EXPECT_EQ(DescribeCacheStats(farm::v1::CompileCacheStats()), "compile cache: 0 hits, 0 misses");
}

// A fake toolkit and a fake ccache on a PATH of the test's own.
class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_.path();
    ASSERT_OK(fs::MakeDirs(root_ + "/sbin"));
    ASSERT_OK(fs::MakeDirs(root_ + "/cuda/bin"));
    ASSERT_OK(fs::MakeDirs(root_ + "/cuda/include"));
    Exe(root_ + "/sbin/ccache");
    Exe(root_ + "/sbin/g++");
    Exe(root_ + "/cuda/bin/nvcc");
    Exe(root_ + "/cuda/bin/ptxas");
    worker_env_ = {{"PATH", root_ + "/sbin:/nonexistent"}};
    options_.cache_dir = root_ + "/state/ccache";
    options_.tools_dir = root_ + "/state/tools";
    recipe_.set_ccache(true);
  }
  void Exe(const std::string& path) { ASSERT_OK(fs::WriteFileAtomic(path, "#!/bin/sh\n", 0755)); }
  static constexpr char kNs[] = "0123456789abcdef0123456789abcdef";
  EnvMap JobEnv() {
    return {{"PATH", "/ws/venv/bin:" + root_ + "/cuda/bin:/usr/bin"},
            {"CUDA_HOME", root_ + "/cuda"}};
  }

  testing::ScopedTempDir tmp_;
  std::string root_;
  EnvMap worker_env_;
  CompileCacheOptions options_;
  farm::v1::Recipe recipe_;
};

// Runs `argv` with exactly `env`; returns its stdout.
std::string RunWith(const std::vector<std::string>& argv, const EnvMap& env) {
  RealProcessRunner runner;
  ProcessSpec spec;
  spec.argv = argv;
  spec.env = env;
  spec.clear_env = true;
  auto out = RunAndCapture(runner, spec, 30000);
  EXPECT_TRUE(out.ok());
  EXPECT_EQ(out->result.exit_code, 0) << out->err;
  return out.ok() ? out->out : "";
}

TEST_F(CompileCacheTest, JobEnvPutsCompilersAndNvccBehindCcache) {
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  ASSERT_TRUE((*cache)->available());
  EXPECT_EQ((*cache)->ccache_path(), root_ + "/sbin/ccache");
  EnvMap env = JobEnv();
  env["CCACHE_PREFIX"] = "/ws/evil.sh";  // from the recipe's env: dropped
  JobCacheUse use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "native", env);
  ASSERT_TRUE(use.used) << use.note;
  // The namespace farmd named, under the worker's own directory.
  EXPECT_EQ(use.namespace_dir, root_ + "/state/ccache/ns/" + kNs);
  EXPECT_TRUE(stdfs::is_directory(use.namespace_dir));
  const std::string job = root_ + "/state/tools/jobs/ws";
  EXPECT_EQ(use.job_dir, job);
  EXPECT_EQ(env["CCACHE_CONFIGPATH"], job + "/ccache.conf");
  for (const auto& [key, value] : env) {
    EXPECT_TRUE(key.rfind("CCACHE_", 0) != 0 || key == "CCACHE_CONFIGPATH") << key;
  }
  // The farm's configuration: the namespace, the limit, paths in the fresh workspace hit.
  auto conf = fs::ReadFile(job + "/ccache.conf");
  ASSERT_OK(conf.status());
  for (const std::string& line : {"cache_dir = " + use.namespace_dir, std::string("max_size = 20G"),
                                  "base_dir = " + root_ + "/ws", std::string("hash_dir = false"),
                                  "stats_log = " + root_ + "/ws/ccache-stats.log"}) {
    EXPECT_NE(conf->find(line + "\n"), std::string::npos) << line << " in " << *conf;
  }
  std::string shadow = root_ + "/state/tools/cuda-0";
  EXPECT_EQ(env["CUDA_HOME"], shadow);
  EXPECT_EQ(env["PYTORCH_NVCC"], shadow + "/bin/nvcc");
  EXPECT_EQ(env["PATH"], job + "/bin:/ws/venv/bin:" + shadow + "/bin:/usr/bin");
  // Only compilers the worker has are masqueraded, each through the job's launcher.
  EXPECT_TRUE(stdfs::is_regular_file(job + "/bin/g++"));
  EXPECT_FALSE(stdfs::exists(stdfs::symlink_status(job + "/bin/gcc")));
  EXPECT_TRUE(stdfs::is_regular_file(job + "/bin/farm-ccache"));
  // The shadow toolkit: the real entries linked, nvcc a script that runs the launcher.
  EXPECT_EQ(stdfs::read_symlink(shadow + "/include"), root_ + "/cuda/include");
  EXPECT_EQ(stdfs::read_symlink(shadow + "/bin/ptxas"), root_ + "/cuda/bin/ptxas");
  auto script = fs::ReadFile(shadow + "/bin/nvcc");
  ASSERT_OK(script.status());
  EXPECT_NE(script->find("exec farm-ccache '" + root_ + "/cuda/bin/nvcc' \"$@\""),
            std::string::npos)
      << *script;
  struct stat st {};
  ASSERT_EQ(::stat((shadow + "/bin/nvcc").c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR);
  // The job's tools go with the job.
  CompileCache::FinishJob(use);
  EXPECT_FALSE(stdfs::exists(job));
}

// ccache leaves NVCC_APPEND_FLAGS out of its hash: flags besides the worker's -objtemp get
// a ccache namespace of their own, so a compressed build never hits an uncompressed object.
TEST_F(CompileCacheTest, ExtraNvccFlagsGetACcacheNamespaceOfTheirOwn) {
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  auto conf_with = [&](const std::string& flags) {
    EnvMap env = JobEnv();
    if (!flags.empty()) env["NVCC_APPEND_FLAGS"] = flags;
    JobCacheUse use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "native", env);
    EXPECT_TRUE(use.used) << use.note;
    auto read = fs::ReadFile(use.job_dir + "/ccache.conf");
    std::string conf = read.ok() ? *read : "";
    CompileCache::FinishJob(use);
    size_t at = conf.find("namespace = ");
    return at == std::string::npos ? std::string() : conf.substr(at, conf.find('\n', at) - at);
  };
  EXPECT_EQ(conf_with(""), "");
  EXPECT_EQ(conf_with("-objtemp"), "");
  std::string packed = conf_with("-objtemp --compress-mode=size");
  EXPECT_EQ(packed.find("namespace = nvcc-flags-"), 0u) << packed;
  EXPECT_EQ(packed, conf_with("-objtemp --compress-mode=size"));
  EXPECT_NE(packed, conf_with("-objtemp --compress-mode=speed"));
}

// What the wrappers hand ccache: the farm's configuration file, none of the build's
// CCACHE_* settings, and a PATH on which the real compiler comes first.
TEST_F(CompileCacheTest, TheWrappersIgnoreTheBuildsCcacheSettings) {
  ASSERT_OK(fs::WriteFileAtomic(root_ + "/sbin/ccache",
                                "#!/bin/sh\n"
                                "echo \"config=$CCACHE_CONFIGPATH\"\n"
                                "env | grep '^CCACHE_' | sort\n"
                                "echo \"path=$PATH\"\n"
                                "echo \"args=$*\"\n",
                                0755));
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  EnvMap env = JobEnv();
  JobCacheUse use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "native", env);
  ASSERT_TRUE(use.used);
  // The build sets what it likes, as its own environment allows.
  env["CCACHE_CONFIGPATH"] = root_ + "/ws/evil.conf";
  env["CCACHE_PREFIX"] = root_ + "/ws/evil.sh";
  env["CCACHE_DIR"] = root_ + "/state/ccache/ns/another";
  std::string out = RunWith({use.job_dir + "/bin/g++", "-c", "a.cc"}, env);
  EXPECT_NE(out.find("config=" + use.job_dir + "/ccache.conf\n"), std::string::npos) << out;
  EXPECT_NE(out.find("CCACHE_CONFIGPATH=" + use.job_dir + "/ccache.conf\n"), std::string::npos);
  EXPECT_EQ(out.find("CCACHE_PREFIX"), std::string::npos) << out;
  EXPECT_EQ(out.find("CCACHE_DIR"), std::string::npos) << out;
  EXPECT_EQ(out.find(use.job_dir + "/bin"), std::string::npos) << out;  // off PATH for ccache
  EXPECT_NE(out.find("args=g++ -c a.cc"), std::string::npos) << out;
  // nvcc of the shadow toolkit goes through the same launcher.
  out = RunWith({env["CUDA_HOME"] + "/bin/nvcc", "-c", "k.cu"}, env);
  EXPECT_NE(out.find("config=" + use.job_dir + "/ccache.conf\n"), std::string::npos) << out;
  EXPECT_NE(out.find("args=" + root_ + "/cuda/bin/nvcc -c k.cu"), std::string::npos) << out;
}

TEST_F(CompileCacheTest, NoNamespaceFromFarmdMeansNoCache) {
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  for (const std::string& bad :
       {std::string(), std::string("../../etc"), std::string("ABCDEF0123456789ABCDEF0123456789"),
        std::string("0123456789abcdef"), std::string(kNs) + "/x"}) {
    EnvMap env = JobEnv();
    JobCacheUse use = (*cache)->PrepareJob(recipe_, bad, root_ + "/ws", "native", env);
    EXPECT_FALSE(use.used) << bad;
    EXPECT_EQ(use.note, "compile cache: off (farmd named no cache namespace for this job)");
    EXPECT_EQ(env["CCACHE_DISABLE"], "1");
  }
  EXPECT_FALSE(stdfs::exists(root_ + "/etc"));
}

TEST_F(CompileCacheTest, TheSandboxSeesItsWorkspaceAtFarmJob) {
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  EnvMap env = JobEnv();
  JobCacheUse use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "sandbox", env);
  ASSERT_TRUE(use.used);
  auto conf = fs::ReadFile(use.job_dir + "/ccache.conf");
  ASSERT_OK(conf.status());
  EXPECT_NE(conf->find("base_dir = /farm/job\n"), std::string::npos) << *conf;
  EXPECT_NE(conf->find("stats_log = /farm/job/ccache-stats.log\n"), std::string::npos) << *conf;
  ASSERT_EQ(use.mounts.size(), 2u);
  EXPECT_EQ(use.mounts[0].path, use.namespace_dir);
  EXPECT_FALSE(use.mounts[0].read_only);
  EXPECT_TRUE(use.mounts[1].read_only);
}

TEST_F(CompileCacheTest, OldPerRecipeNamespacesAreRemovedAtStart) {
  ASSERT_OK(fs::MakeDirs(options_.cache_dir + "/recipes/attn-example"));
  ASSERT_OK(fs::WriteFileAtomic(options_.cache_dir + "/recipes/attn-example/ccache.conf",
                                "prefix_command = /tmp/evil.sh\n"));
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  EXPECT_FALSE(stdfs::exists(options_.cache_dir + "/recipes"));
}

TEST_F(CompileCacheTest, TheShadowToolkitIsMadeOnceAndARecipeNvccIsKept) {
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  EnvMap first = JobEnv();
  (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws1", "native", first);
  EnvMap second = JobEnv();
  second["PYTORCH_NVCC"] = "my-nvcc";
  (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws2", "native", second);
  EXPECT_EQ(first["CUDA_HOME"], second["CUDA_HOME"]);  // same -I paths, same hash
  EXPECT_EQ(second["PYTORCH_NVCC"], "my-nvcc");
  EXPECT_NE(first["CCACHE_CONFIGPATH"], second["CCACHE_CONFIGPATH"]);
}

TEST_F(CompileCacheTest, RecipeAndWorkerTurnItOff) {
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  farm::v1::Recipe off;  // a recipe's `ccache: false`
  EnvMap env = JobEnv();
  JobCacheUse use = (*cache)->PrepareJob(off, kNs, root_ + "/ws", "native", env);
  EXPECT_FALSE(use.used);
  EXPECT_EQ(use.note, "compile cache: off (the recipe sets ccache: false)");
  EXPECT_EQ(env["CCACHE_DISABLE"], "1");
  EXPECT_EQ(env["CUDA_HOME"], root_ + "/cuda");
  EXPECT_EQ(env.count("CCACHE_CONFIGPATH"), 0u);
  EXPECT_FALSE(CompileCache::FinishJob(use).has_value());

  options_.enabled = false;
  auto disabled = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(disabled.status());
  EXPECT_FALSE((*disabled)->available());
  env = JobEnv();
  use = (*disabled)->PrepareJob(recipe_, kNs, root_ + "/ws", "native", env);
  EXPECT_EQ(use.note, "compile cache: off (turned off on this worker (--no-ccache))");
}

TEST_F(CompileCacheTest, WithoutCcacheJobsSaySoAndBuildUncached) {
  auto cache = CompileCache::Create(options_, {{"PATH", root_ + "/cuda/bin"}});
  ASSERT_OK(cache.status());
  EXPECT_FALSE((*cache)->available());
  EnvMap env = JobEnv();
  JobCacheUse use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "native", env);
  EXPECT_FALSE(use.used);
  EXPECT_EQ(use.note, "compile cache: off (ccache is not installed on this worker)");
  EXPECT_EQ(env["PATH"], JobEnv()["PATH"]);
}

TEST_F(CompileCacheTest, FinishJobReadsTheJobsOwnLog) {
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  ASSERT_OK(fs::MakeDirs(root_ + "/ws"));
  EnvMap env = JobEnv();
  JobCacheUse use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "native", env);
  auto nothing = CompileCache::FinishJob(use);  // no compile: no log, zeros
  ASSERT_TRUE(nothing.has_value());
  EXPECT_EQ(nothing->hits() + nothing->misses(), 0);
  ASSERT_OK(fs::WriteFileAtomic(root_ + "/ws/ccache-stats.log", kMixedLog));
  auto stats = CompileCache::FinishJob(use);
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->hits(), 1);
  EXPECT_EQ(stats->misses(), 1);
  // A log the build replaced with a link to a host file is not read: zeros.
  ASSERT_OK(fs::WriteFileAtomic(root_ + "/host.log", kMixedLog));
  ASSERT_OK(fs::RemoveAll(root_ + "/ws/ccache-stats.log"));
  ASSERT_EQ(::symlink((root_ + "/host.log").c_str(), (root_ + "/ws/ccache-stats.log").c_str()), 0);
  stats = CompileCache::FinishJob(use);
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->hits() + stats->misses() + stats->uncacheable(), 0);
}

TEST_F(CompileCacheTest, TheGuardTakesTheWrappersAwayOnEveryExitAndFinishesOnce) {
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  ASSERT_OK(fs::MakeDirs(root_ + "/ws"));
  EnvMap env = JobEnv();
  std::string job_dir;
  {
    // A build that returns early (its executor did not start) never calls Finish.
    JobCacheGuard guard((*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "native", env));
    ASSERT_TRUE(guard.use().used);
    job_dir = guard.use().job_dir;
    ASSERT_TRUE(fs::Exists(job_dir));
  }
  EXPECT_FALSE(fs::Exists(job_dir));
  env = JobEnv();
  JobCacheGuard guard((*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "native", env));
  ASSERT_OK(fs::WriteFileAtomic(root_ + "/ws/ccache-stats.log", kMixedLog));
  auto stats = guard.Finish();
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->hits(), 1);
  EXPECT_FALSE(fs::Exists(guard.use().job_dir));
  EXPECT_FALSE(guard.Finish().has_value());  // read once
}

TEST_F(CompileCacheTest, ContainerJobsMountTheCacheAndTheWrappers) {
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  EnvMap env = JobEnv();
  JobCacheUse use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "podman", env);
  ASSERT_TRUE(use.used) << use.note;
  EXPECT_NE(use.note.find("in the podman container"), std::string::npos) << use.note;
  ASSERT_EQ(use.mounts.size(), 2u);
  EXPECT_EQ(use.mounts[0].path, use.namespace_dir);
  EXPECT_FALSE(use.mounts[0].read_only);
  EXPECT_TRUE(env["CUDA_HOME"].rfind(use.mounts[1].path + "/", 0) == 0) << env["CUDA_HOME"];
  EXPECT_TRUE(use.mounts[1].read_only);
  EXPECT_EQ(env.count("CCACHE_DISABLE"), 0u);

  env = JobEnv();
  EXPECT_TRUE((*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "native", env).mounts.empty());
}

TEST_F(CompileCacheTest, NvccWrapperRunsNvccItselfWhereCcacheIsMissing) {
  // A builder image without ccache at the worker's path: the wrapper must still compile.
  ASSERT_OK(
      fs::WriteFileAtomic(root_ + "/cuda/bin/nvcc", "#!/bin/sh\necho fake nvcc \"$@\"\n", 0755));
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  EnvMap env = JobEnv();
  JobCacheUse use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "podman", env);
  ASSERT_TRUE(use.used);
  auto text = fs::ReadFile(use.job_dir + "/bin/farm-ccache");
  ASSERT_OK(text.status());
  std::string ccache = (*cache)->ccache_path();
  std::string moved = *text;
  for (size_t at = moved.find(ccache); at != std::string::npos; at = moved.find(ccache, at + 1)) {
    moved.replace(at, ccache.size(), root_ + "/no-such-ccache");
  }
  ASSERT_OK(fs::WriteFileAtomic(use.job_dir + "/bin/farm-ccache", moved, 0755));
  std::string out = RunWith({env["CUDA_HOME"] + "/bin/nvcc", "--version"},
                            {{"PATH", use.job_dir + "/bin:/usr/bin:/bin"}});
  EXPECT_NE(out.find("fake nvcc --version"), std::string::npos) << out;
  // Outside a cached job (no launcher on PATH) the shadow nvcc is nvcc itself.
  out = RunWith({env["CUDA_HOME"] + "/bin/nvcc", "--version"}, {{"PATH", "/usr/bin:/bin"}});
  EXPECT_NE(out.find("fake nvcc --version"), std::string::npos) << out;
}

TEST_F(CompileCacheTest, AnImageWithoutCcacheBuildsUncachedAndTheNoteSaysWhy) {
  auto cache = CompileCache::Create(options_, worker_env_);
  ASSERT_OK(cache.status());
  std::vector<std::string> asked;
  EnvMap env = JobEnv();
  JobCacheUse use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "podman", env,
                                         [&asked](const std::string& path) -> Result<bool> {
                                           asked.push_back(path);
                                           return false;
                                         });
  EXPECT_EQ(asked, std::vector<std::string>{(*cache)->ccache_path()});
  EXPECT_FALSE(use.used);
  EXPECT_TRUE(use.mounts.empty());
  EXPECT_EQ(env["CCACHE_DISABLE"], "1");
  EXPECT_NE(use.note.find("compile cache: off (the podman image has no " + (*cache)->ccache_path()),
            std::string::npos)
      << use.note;
  EXPECT_FALSE(CompileCache::FinishJob(use).has_value());

  env = JobEnv();
  use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "podman", env,
                             [](const std::string&) -> Result<bool> {
                               return Status::Unavailable("the engine exited with code 125");
                             });
  EXPECT_FALSE(use.used);
  EXPECT_NE(use.note.find("cannot tell whether the podman image has"), std::string::npos)
      << use.note;
  EXPECT_NE(use.note.find("code 125"), std::string::npos) << use.note;

  env = JobEnv();
  use = (*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "podman", env,
                             [](const std::string&) -> Result<bool> { return true; });
  EXPECT_TRUE(use.used) << use.note;
  EXPECT_EQ(use.mounts.size(), 2u);
  EXPECT_NE(use.note.find("(the image has it)"), std::string::npos) << use.note;

  // Native jobs and recipes that turn the cache off never ask the image.
  asked.clear();
  auto never = [&asked](const std::string& path) -> Result<bool> {
    asked.push_back(path);
    return false;
  };
  env = JobEnv();
  EXPECT_TRUE((*cache)->PrepareJob(recipe_, kNs, root_ + "/ws", "native", env, never).used);
  farm::v1::Recipe off;
  off.set_ccache(false);
  env = JobEnv();
  EXPECT_FALSE((*cache)->PrepareJob(off, kNs, root_ + "/ws", "podman", env, never).used);
  EXPECT_TRUE(asked.empty());
}

}  // namespace
}  // namespace farm::agent
