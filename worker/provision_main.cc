// farm-provision: makes one environment with the worker's provisioner (worker/env/) and
// prints what it made as JSON, for the integration tests, benchmarks and operators
// preparing a worker's cache by hand. The worker itself calls the library.
//
//   farm-provision --cache DIR --job-dir DIR --python 3.11 [--cuda 13.0]
//       (--lock pylock.toml | --resolve 'torch==2.8.0+cu128' --resolve 'setuptools>=64' ...
//        --index URL [--index-name cu128] [--resolve-glibc 2.28] [--save-lock FILE])
//       [--files-base URL] [--redist URL] [--python-release URL]
//       [--host-python 3.11.2=/usr/bin/python3 ...] [--host-toolkit 13.0=/usr/local/cuda ...]
//       [--installer PIP.whl] [--installer-sha256 HEX] [--uv PATH] [--confine auto|off]
//       [--build-user auto|NAME|UID:GID] [--max-cache-bytes N] [--glibc 2.36]
// With --resolve it resolves the lock first with pip's resolver, as farmd does.
// Exit status: 0 made, 2 bad usage, 3 provisioning (or resolving) failed (the JSON names
// the cause).
#include <unistd.h>

#include <boost/json.hpp>
#include <iostream>

#include "common/clock.h"
#include "common/flags.h"
#include "common/fs.h"
#include "common/lock/pip_resolver.h"
#include "common/process.h"
#include "worker/env/failure.h"
#include "worker/env/provisioner.h"

namespace {

using farm::env::ProvisionerOptions;

bool SplitPair(const std::string& text, std::string* key, std::string* value) {
  size_t eq = text.find('=');
  if (eq == std::string::npos) return false;
  *key = text.substr(0, eq);
  *value = text.substr(eq + 1);
  return true;
}

farm::Status FillOptions(const farm::Flags& flags, farm::ProcessRunner& runner,
                         ProvisionerOptions* o, farm::env::ProvisionSources* sources) {
  o->cache_dir = flags.Get("cache");
  sources->files_base = flags.Get("files-base");
  sources->redist_url = flags.Get("redist");
  sources->python_release_url = flags.Get("python-release");
  for (const std::string& item : flags.GetAll("host-python")) {
    farm::env::HostPython host;
    if (!SplitPair(item, &host.version, &host.path)) {
      return farm::Status::InvalidArgument("--host-python wants VERSION=PATH");
    }
    o->host_pythons.push_back(host);
  }
  for (const std::string& item : flags.GetAll("host-toolkit")) {
    farm::env::HostToolkit host;
    if (!SplitPair(item, &host.version, &host.path)) {
      return farm::Status::InvalidArgument("--host-toolkit wants VERSION=PATH");
    }
    o->host_toolkits.push_back(host);
  }
  for (const std::string& c : flags.GetAll("redist-component")) o->redist_components.push_back(c);
  o->installer_wheel = flags.Get("installer", farm::lock::FindPipWheel());
  o->installer_sha256 = flags.Get("installer-sha256");
  o->uv = flags.Get("uv");
  if (flags.Has("glibc")) o->target.glibc = flags.Get("glibc");
  FARM_ASSIGN_OR_RETURN(o->max_cache_bytes, flags.GetInt("max-cache-bytes", o->max_cache_bytes));
  FARM_ASSIGN_OR_RETURN(
      farm::sandbox::BuildUser user,
      farm::sandbox::ResolveBuildUser(flags.Get("build-user", "auto"), ::geteuid()));
  std::string confine = flags.Get("confine", "auto");
  if (confine != "auto" && confine != "off") {
    return farm::Status::InvalidArgument("--confine is auto or off");
  }
  o->confinement = confine == "off" ? farm::sandbox::Confinement::None()
                                    : farm::sandbox::Confinement::Detect(runner, user);
  return farm::Status::Ok();
}

// The lock to install: read from --lock, or resolved from --resolve with pip.
farm::Result<farm::lock::EnvLock> LockFor(const farm::Flags& flags, const ProvisionerOptions& o,
                                          farm::ProcessRunner& runner,
                                          farm::upstream::Fetcher& fetcher) {
  if (flags.Has("lock")) {
    FARM_ASSIGN_OR_RETURN(std::string text, farm::fs::ReadFile(flags.Get("lock")));
    return farm::lock::ParseToml(text);
  }
  farm::lock::ResolveRequest request;
  request.python = flags.Get("python");
  request.platform = flags.Get("platform", "linux_x86_64");
  request.glibc = flags.Get("resolve-glibc", "2.28");
  request.index_url = flags.Get("index");
  request.index_name = flags.Get("index-name");
  request.requirements = flags.GetAll("resolve");
  if (request.index_url.empty())
    return farm::Status::InvalidArgument("--resolve needs --index URL");
  farm::lock::PipResolverOptions resolver;
  resolver.pip_wheel = o.installer_wheel;
  resolver.work_dir = o.cache_dir + "/tmp";
  resolver.fetcher = &fetcher;
  farm::lock::PipResolver pip(resolver, &runner, o.confinement);
  FARM_ASSIGN_OR_RETURN(farm::lock::EnvLock lock, pip.Resolve(request));
  if (flags.Has("save-lock")) {
    FARM_RETURN_IF_ERROR(
        farm::fs::WriteFileAtomic(flags.Get("save-lock"), farm::lock::ToToml(lock)));
  }
  return lock;
}

int Fail(const farm::Status& status, const char* stage) {
  boost::json::object out;
  out["ok"] = false;
  out["stage"] = stage;
  out["cause"] = farm::env::ProvisionFailureName(farm::env::FailureOf(status));
  out["error"] = status.ToString();
  std::cout << boost::json::serialize(out) << "\n";
  return 3;
}

farm::Flags ProvisionFlags() {
  return farm::Flags({
      {"cache", "DIR", "the provisioning cache"},
      {"job-dir", "DIR", "where the job's venv is cloned (DIR/venv)"},
      {"python", "X.Y[.Z]", "the Python version"},
      {"cuda", "X.Y", "the CUDA toolkit version"},
      {"platform", "TAG", "the wheel platform (linux_x86_64)"},
      {"lock", "FILE", "the environment's lock (pylock.toml, PEP 751)"},
      {"resolve", "REQUIREMENT", "resolve the lock from these requirements (repeatable)"},
      {"index", "URL", "the index to resolve on"},
      {"index-name", "NAME", "the farm's name of that index (cu128), recorded in the lock"},
      {"resolve-glibc", "X.Y", "the oldest glibc the lock's wheels must run with"},
      {"save-lock", "FILE", "write the resolved lock there"},
      {"files-base", "URL", "fetch locked wheels from farmd's files route under this URL"},
      {"redist", "URL", "NVIDIA's redist folder"},
      {"redist-component", "NAME", "a redist component to install (repeatable)"},
      {"python-release", "URL", "a python-build-standalone release folder"},
      {"host-python", "VERSION=PATH", "an interpreter this host has (repeatable)"},
      {"host-toolkit", "VERSION=PATH", "a CUDA toolkit this host has (repeatable)"},
      {"installer", "PIP.whl", "the farm's pip wheel (default: Debian's)"},
      {"installer-sha256", "HEX", "the installer's digest, checked before each use"},
      {"uv", "PATH", "install the packages with this uv instead of pip"},
      {"confine", "auto|off", "run upstream code confined (default auto)"},
      {"build-user", "auto|NAME|UID:GID", "who confined commands run as under root"},
      {"glibc", "X.Y", "the host's glibc, for manylinux tags"},
      {"max-cache-bytes", "N", "the cache bound (LRU)"},
      {"help", "", "this text"},
  });
}

// The provisioned environment, as one JSON line on stdout.
int Report(const farm::env::ProvisionedEnv& env, const farm::env::EnvSpec& spec,
           const ProvisionerOptions& options, int64_t resolve_ms) {
  boost::json::object out;
  out["ok"] = true;
  out["key"] = env.key;
  out["venv"] = env.venv_dir;
  out["python"] = env.python;
  out["base_python"] = env.base_python;
  out["cuda_home"] = env.cuda_home;
  out["torch"] = env.torch;
  out["python_from_archive"] = env.python_from_archive;
  out["toolkit_from_redist"] = env.toolkit_from_redist;
  out["snapshot_built"] = env.snapshot_built;
  out["downloaded_bytes"] = env.downloaded_bytes;
  out["resolve_ms"] = resolve_ms;
  out["python_ms"] = env.times.python_ms;
  out["toolkit_ms"] = env.times.toolkit_ms;
  out["snapshot_ms"] = env.times.snapshot_ms;
  out["clone_ms"] = env.times.clone_ms;
  out["lock_digest"] = farm::lock::Digest(spec.lock);
  out["lock_packages"] = static_cast<int64_t>(spec.lock.packages.size());
  out["confinement"] = options.confinement.Describe();
  boost::json::array notes;
  for (const std::string& n : env.notes) notes.push_back(boost::json::value(n));
  out["notes"] = notes;
  std::cout << boost::json::serialize(out) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  farm::Flags flags = ProvisionFlags();
  farm::Status parsed = flags.Parse(argc, argv);
  if (!parsed.ok() || flags.Has("help") || !flags.Has("cache") || !flags.Has("job-dir") ||
      !flags.Has("python") || flags.Has("lock") == flags.Has("resolve")) {
    std::cerr << (parsed.ok() ? "" : parsed.message() + "\n")
              << "usage: farm-provision (give --lock FILE or --resolve REQUIREMENT)\n"
              << flags.Usage();
    return 2;
  }
  farm::RealProcessRunner runner;
  ProvisionerOptions options;
  farm::env::ProvisionSources sources;
  if (farm::Status filled = FillOptions(flags, runner, &options, &sources); !filled.ok()) {
    std::cerr << filled.message() << "\n";
    return 2;
  }
  farm::env::EnvSpec spec;
  spec.python = flags.Get("python");
  spec.cuda = flags.Get("cuda");
  spec.platform = flags.Get("platform", "linux_x86_64");
  auto fetcher = farm::upstream::MakeCurlFetcher();
  const int64_t start = farm::RealClock().SteadyMs();
  farm::Result<farm::lock::EnvLock> lock = LockFor(flags, options, runner, *fetcher);
  if (!lock.ok()) return Fail(lock.status(), "lock");
  const int64_t resolve_ms = farm::RealClock().SteadyMs() - start;
  spec.lock = std::move(lock).value();

  auto provisioner =
      farm::env::Provisioner::Create(options, fetcher.get(), &runner, &farm::RealClock());
  farm::Result<farm::env::ProvisionedEnv> env =
      provisioner.ok()
          ? (*provisioner)
                ->Provision(spec, sources, flags.Get("job-dir"),
                            [](const farm::env::ProvisionProgress& p) {
                              std::cerr << ProvisionPhaseName(p.phase) << ": " << p.message;
                              if (p.done >= 0) std::cerr << " " << p.done << "/" << p.total;
                              std::cerr << "\n";
                            })
          : farm::Result<farm::env::ProvisionedEnv>(provisioner.status());
  if (!env.ok()) return Fail(env.status(), "provision");
  return Report(*env, spec, options, flags.Has("resolve") ? resolve_ms : 0);
}
