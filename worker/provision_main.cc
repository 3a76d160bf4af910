// farm-provision: makes one environment with the worker's provisioner (worker/env/) and
// prints what it made as JSON, for the integration tests, benchmarks and operators
// preparing a worker's cache by hand. The worker itself calls the library.
//
//   farm-provision --cache DIR --job-dir DIR --python 3.11 [--torch 2.8.0+cu128]
//       [--cuda 13.0] [--requirement 'setuptools==66.1.1' ...] [--index cu128=URL ...]
//       [--redist URL] [--python-release URL] [--host-python 3.11.2=/usr/bin/python3 ...]
//       [--host-toolkit 13.0=/usr/local/cuda ...] [--installer pip==23.0.1] [--uv PATH]
//       [--max-cache-bytes N] [--glibc 2.36]
// Exit status: 0 made, 2 bad usage, 3 provisioning failed (the JSON names the cause).
#include <boost/json.hpp>
#include <iostream>

#include "common/clock.h"
#include "common/flags.h"
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

farm::Status FillOptions(const farm::Flags& flags, ProvisionerOptions* o) {
  o->cache_dir = flags.Get("cache");
  for (const std::string& item : flags.GetAll("index")) {
    std::string variant, url;
    if (!SplitPair(item, &variant, &url))
      o->indexes[""] = item;
    else
      o->indexes[variant == "default" ? "" : variant] = url;
  }
  o->redist_url = flags.Get("redist");
  o->python_release_url = flags.Get("python-release");
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
  if (flags.Has("installer")) o->installer = flags.Get("installer");
  o->uv = flags.Get("uv");
  if (flags.Has("glibc")) o->target.glibc = flags.Get("glibc");
  FARM_ASSIGN_OR_RETURN(o->max_cache_bytes, flags.GetInt("max-cache-bytes", o->max_cache_bytes));
  return farm::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  farm::Flags flags({
      {"cache", "DIR", "the provisioning cache"},
      {"job-dir", "DIR", "where the job's venv is cloned (DIR/venv)"},
      {"python", "X.Y[.Z]", "the Python version"},
      {"torch", "VERSION", "the torch version, local label included"},
      {"cuda", "X.Y", "the CUDA toolkit version"},
      {"requirement", "NAME==VERSION", "a build requirement (repeatable)"},
      {"platform", "TAG", "the wheel platform (linux_x86_64)"},
      {"index", "VARIANT=URL", "the package index of a torch CUDA variant; default=URL"},
      {"redist", "URL", "NVIDIA's redist folder"},
      {"redist-component", "NAME", "a redist component to install (repeatable)"},
      {"python-release", "URL", "a python-build-standalone release folder"},
      {"host-python", "VERSION=PATH", "an interpreter this host has (repeatable)"},
      {"host-toolkit", "VERSION=PATH", "a CUDA toolkit this host has (repeatable)"},
      {"installer", "pip==VERSION", "the pinned pip that installs"},
      {"uv", "PATH", "install the packages with this uv instead of pip"},
      {"glibc", "X.Y", "the host's glibc, for manylinux tags"},
      {"max-cache-bytes", "N", "the cache bound (LRU)"},
      {"help", "", "this text"},
  });
  farm::Status parsed = flags.Parse(argc, argv);
  if (!parsed.ok() || flags.Has("help") || !flags.Has("cache") || !flags.Has("job-dir") ||
      !flags.Has("python")) {
    std::cerr << (parsed.ok() ? "" : parsed.message() + "\n") << "usage: farm-provision\n"
              << flags.Usage();
    return 2;
  }
  ProvisionerOptions options;
  farm::Status filled = FillOptions(flags, &options);
  if (!filled.ok()) {
    std::cerr << filled.message() << "\n";
    return 2;
  }
  farm::env::EnvSpec spec;
  spec.python = flags.Get("python");
  spec.torch = flags.Get("torch");
  spec.cuda = flags.Get("cuda");
  spec.platform = flags.Get("platform", "linux_x86_64");
  spec.requirements = flags.GetAll("requirement");

  auto fetcher = farm::upstream::MakeCurlFetcher();
  farm::RealProcessRunner runner;
  boost::json::object out;
  auto provisioner =
      farm::env::Provisioner::Create(options, fetcher.get(), &runner, &farm::RealClock());
  farm::Result<farm::env::ProvisionedEnv> env =
      provisioner.ok()
          ? (*provisioner)
                ->Provision(spec, flags.Get("job-dir"),
                            [](const farm::env::ProvisionProgress& p) {
                              std::cerr << ProvisionPhaseName(p.phase) << ": " << p.message;
                              if (p.done >= 0) std::cerr << " " << p.done << "/" << p.total;
                              std::cerr << "\n";
                            })
          : farm::Result<farm::env::ProvisionedEnv>(provisioner.status());
  if (!env.ok()) {
    out["ok"] = false;
    out["cause"] = farm::env::ProvisionFailureName(farm::env::FailureOf(env.status()));
    out["error"] = env.status().ToString();
    std::cout << boost::json::serialize(out) << "\n";
    return 3;
  }
  out["ok"] = true;
  out["key"] = env->key;
  out["venv"] = env->venv_dir;
  out["python"] = env->python;
  out["base_python"] = env->base_python;
  out["cuda_home"] = env->cuda_home;
  out["python_from_archive"] = env->python_from_archive;
  out["toolkit_from_redist"] = env->toolkit_from_redist;
  out["snapshot_built"] = env->snapshot_built;
  out["python_ms"] = env->times.python_ms;
  out["toolkit_ms"] = env->times.toolkit_ms;
  out["snapshot_ms"] = env->times.snapshot_ms;
  out["clone_ms"] = env->times.clone_ms;
  boost::json::array notes;
  for (const std::string& n : env->notes) notes.push_back(boost::json::value(n));
  out["notes"] = notes;
  std::cout << boost::json::serialize(out) << "\n";
  return 0;
}
