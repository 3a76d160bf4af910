#include "worker/job/environments.h"

#include <gnu/libc-version.h>
#include <unistd.h>

namespace farm::agent {

Result<env::EnvSpec> ToEnvSpec(const farm::v1::ProvisionSpec& spec) {
  env::EnvSpec out;
  out.python = spec.python();
  out.cuda = spec.cuda();
  if (!spec.platform().empty()) out.platform = spec.platform();
  if (spec.lock().empty()) {
    return Status::InvalidArgument(
        "farmd sent no lock for this environment (a farmd older than this worker resolves "
        "none): upgrade farmd");
  }
  Result<lock::EnvLock> parsed = lock::ParseToml(spec.lock());
  if (!parsed.ok()) return parsed.status().WithContext("the environment's lock");
  out.lock = std::move(parsed).value();
  return out;
}

Environments::Environments(ProvisionConfig config, ProcessRunner* runner, const Clock* clock,
                           std::unique_ptr<upstream::Fetcher> fetcher)
    : config_(std::move(config)),
      runner_(runner),
      clock_(clock),
      fetcher_(fetcher ? std::move(fetcher) : upstream::MakeCurlFetcher({.bearer = bearer_})) {}

void Environments::SetFarmUpstream(const std::string& url, const std::string& token) {
  std::lock_guard lock(mu_);
  farm_upstream_ = url;
  bearer_->Set(url.empty() ? "" : url + "/upstream/", token);
}

env::ProvisionSources Environments::Sources() {
  std::lock_guard lock(mu_);
  env::ProvisionSources sources;
  const std::string farm = farm_upstream_.empty() ? "" : farm_upstream_ + "/upstream/";
  sources.farm_base = farm_upstream_.empty() ? "" : farm_upstream_ + "/";
  sources.files_base = farm.empty() ? "" : farm + "files/";
  sources.redist_url = !config_.redist.empty() ? config_.redist
                       : farm.empty()          ? ""
                                               : farm + "tree/redist/";
  sources.python_release_url = !config_.python_release.empty() ? config_.python_release
                               : farm.empty()                  ? ""
                                                               : farm + "tree/python/";
  return sources;
}

std::string Environments::SourceText() {
  std::lock_guard lock(mu_);
  return farm_upstream_.empty() ? "from the URLs in each lock" : "from the farm's cache";
}

farm::v1::Provisioning Environments::Advertise() {
  farm::v1::Provisioning p;
  if (!config_.enabled) return p;
  std::lock_guard lock(mu_);
  p.set_enabled(true);
  // From its own folders or, for those unset, through farmd (which the worker learns of
  // only when it registers, after it advertised this).
  p.set_fetches_toolkits(true);
  p.set_toolkits_through_farm(config_.redist.empty());  // farmd judges what it serves
  p.set_fetches_python(true);
  p.set_cache_max_bytes(config_.max_cache_bytes);
  // Before the first job the provisioner does not exist yet: a view of the same folder
  // tells what an earlier run left (opening it also sweeps what a crash left half-made).
  if (!provisioner_ && !view_) {
    if (auto view = env::CacheStore::Open(config_.cache_dir, clock_); view.ok()) {
      view_ = std::move(view).value();
    }
  }
  env::CacheStore* cache = provisioner_ ? &provisioner_->cache() : view_.get();
  if (cache != nullptr) {
    if (auto entries = cache->List(); entries.ok()) {
      int64_t bytes = 0;
      for (const env::CacheEntry& e : *entries) bytes += e.bytes;
      p.set_cache_bytes(bytes);
    }
  }
  return p;
}

Result<env::Provisioner*> Environments::Get(const farm::v1::Capabilities& caps) {
  std::lock_guard lock(mu_);
  if (provisioner_) return provisioner_.get();
  if (!config_.enabled) {
    return Status::FailedPrecondition("this worker does not provision environments (--provision)");
  }
  env::ProvisionerOptions o;
  o.cache_dir = config_.cache_dir;
  o.max_cache_bytes = config_.max_cache_bytes;
  o.installer_wheel = config_.installer;
  o.installer_sha256 = config_.installer_sha256;
  // The host's Debian Python compiles the installer once (not a cell's interpreter, which
  // came from an upstream archive and runs only confined).
  if (::access("/usr/bin/python3", X_OK) == 0) o.installer_python = "/usr/bin/python3";
  if (config_.host_pythons) {
    for (const auto& py : caps.pythons()) o.host_pythons.push_back({py.version(), py.path()});
  }
  if (config_.host_toolkits) {
    for (const auto& tk : caps.toolkits()) o.host_toolkits.push_back({tk.version(), tk.path()});
  }
  o.target.arch = caps.cpu_arch().empty() ? "x86_64" : caps.cpu_arch();
  o.target.glibc = config_.glibc.empty() ? gnu_get_libc_version() : config_.glibc;
  o.redist_components = config_.redist_components;
  o.uv = config_.uv;
  // Nothing from an upstream runs as root: the builds' user, in the sandbox where it works.
  o.confinement = sandbox::Confinement::Detect(*runner_, config_.build_user);
  FARM_ASSIGN_OR_RETURN(provisioner_, env::Provisioner::Create(o, fetcher_.get(), runner_, clock_));
  confinement_ = o.confinement.Describe();
  return provisioner_.get();
}

Result<env::ProvisionedEnv> Environments::Provision(const farm::v1::ProvisionSpec& spec,
                                                    const farm::v1::Capabilities& caps,
                                                    const std::string& job_dir,
                                                    const env::ProgressSink& progress) {
  FARM_ASSIGN_OR_RETURN(env::Provisioner * provisioner, Get(caps));
  FARM_ASSIGN_OR_RETURN(env::EnvSpec env_spec, ToEnvSpec(spec));
  return provisioner->Provision(env_spec, Sources(), job_dir, progress);
}

std::string Environments::Confinement() {
  std::lock_guard lock(mu_);
  return confinement_;
}

}  // namespace farm::agent
