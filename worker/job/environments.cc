#include "worker/job/environments.h"

#include <gnu/libc-version.h>

#include <algorithm>
#include <set>

#include "common/upstream/simple_index.h"

namespace farm::agent {
namespace {

// "2.9.1" -> {2, 9, 1}; parts that are not numbers end the list ("2.9.0rc1" -> {2, 9}).
std::vector<int> Numbers(const std::string& version) {
  std::vector<int> out;
  size_t i = 0;
  while (i < version.size() && out.size() < 8) {
    size_t j = i;
    while (j < version.size() && std::isdigit(static_cast<unsigned char>(version[j]))) ++j;
    if (j == i || j - i > 6) break;
    out.push_back(std::stoi(version.substr(i, j - i)));
    if (j == version.size() || version[j] != '.') break;
    i = j + 1;
  }
  return out;
}

std::string Join(const std::set<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out.empty() ? "none" : out;
}

}  // namespace

env::EnvSpec ToEnvSpec(const farm::v1::ProvisionSpec& spec, const std::string& torch_version) {
  env::EnvSpec out;
  out.python = spec.python();
  out.torch = torch_version;
  out.requirements.assign(spec.requirements().begin(), spec.requirements().end());
  if (auto it = spec.torch_requirements().find(torch_version);
      it != spec.torch_requirements().end()) {
    out.requirements.insert(out.requirements.end(), it->second.pins().begin(),
                            it->second.pins().end());
  }
  out.cuda = spec.cuda();
  if (!spec.platform().empty()) out.platform = spec.platform();
  return out;
}

Result<std::string> NewestTorch(const std::vector<std::string>& filenames, const std::string& minor,
                                const std::string& variant) {
  std::string best;
  std::vector<int> best_numbers;
  std::set<std::string> seen;
  const std::vector<int> want = Numbers(minor);
  for (const std::string& name : filenames) {
    // torch-2.9.1+cu130-cp311-cp311-manylinux_2_28_x86_64.whl
    if (name.rfind("torch-", 0) != 0 || !name.ends_with(".whl")) continue;
    size_t end = name.find('-', 6);
    if (end == std::string::npos) continue;
    std::string version = name.substr(6, end - 6);
    seen.insert(version);
    size_t plus = version.find('+');
    std::string local = plus == std::string::npos ? "" : version.substr(plus + 1);
    std::vector<int> numbers = Numbers(version.substr(0, plus));
    std::string plain;  // the numbers written back: differs for pre- and post-releases
    for (size_t i = 0; i < numbers.size(); ++i)
      plain += (i ? "." : "") + std::to_string(numbers[i]);
    if (local != variant || numbers.size() < want.size() + 1 || plain != version.substr(0, plus) ||
        !std::equal(want.begin(), want.end(), numbers.begin())) {
      continue;  // another line or variant, or a pre-release
    }
    if (best.empty() || numbers > best_numbers) {
      best = version;
      best_numbers = numbers;
    }
  }
  if (best.empty()) {
    return Status::NotFound("no torch " + minor + ".* for " + variant + " on the index (has " +
                            Join(seen) + ")");
  }
  return best;
}

Environments::Environments(ProvisionConfig config, ProcessRunner* runner, const Clock* clock,
                           std::unique_ptr<upstream::Fetcher> fetcher)
    : config_(std::move(config)),
      runner_(runner),
      clock_(clock),
      fetcher_(fetcher ? std::move(fetcher) : upstream::MakeCurlFetcher()) {}

void Environments::SetFarmUpstream(const std::string& url) {
  std::lock_guard lock(mu_);
  farm_upstream_ = url;
}

std::string Environments::IndexTemplate() const {
  if (!config_.index.empty()) return config_.index;
  if (farm_upstream_.empty()) return "";
  return farm_upstream_ + "/upstream/pypi/{variant}/simple/";
}

std::string Environments::SourceText() {
  std::lock_guard lock(mu_);
  if (config_.index.empty() && !farm_upstream_.empty()) return "from the farm's cache";
  std::string index = IndexTemplate();
  return index.empty() ? "with no index configured" : "from " + index;
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
  std::string index = IndexTemplate();
  if (index.empty()) {
    return Status::FailedPrecondition(
        "no package index to provision from: give --provision-index, or run farmd with "
        "--upstream-index");
  }
  o.indexes[""] = index;
  const std::string farm = farm_upstream_.empty() ? "" : farm_upstream_ + "/upstream/tree/";
  o.redist_url = !config_.redist.empty() ? config_.redist : farm.empty() ? "" : farm + "redist/";
  o.python_release_url = !config_.python_release.empty() ? config_.python_release
                         : farm.empty()                  ? ""
                                                         : farm + "python/";
  if (config_.host_pythons) {
    for (const auto& py : caps.pythons()) o.host_pythons.push_back({py.version(), py.path()});
  }
  if (config_.host_toolkits) {
    for (const auto& tk : caps.toolkits()) o.host_toolkits.push_back({tk.version(), tk.path()});
  }
  o.target.arch = caps.cpu_arch().empty() ? "x86_64" : caps.cpu_arch();
  o.target.glibc = config_.glibc.empty() ? gnu_get_libc_version() : config_.glibc;
  if (!config_.installer.empty()) o.installer = config_.installer;
  o.redist_components = config_.redist_components;
  o.uv = config_.uv;
  FARM_ASSIGN_OR_RETURN(provisioner_, env::Provisioner::Create(o, fetcher_.get(), runner_, clock_));
  return provisioner_.get();
}

Result<env::ProvisionedEnv> Environments::Provision(const farm::v1::ProvisionSpec& spec,
                                                    const farm::v1::Capabilities& caps,
                                                    const std::string& job_dir,
                                                    const env::ProgressSink& progress) {
  FARM_ASSIGN_OR_RETURN(env::Provisioner * provisioner, Get(caps));
  std::string torch;
  if (!spec.torch_minor().empty()) {
    torch = spec.torch_version().empty() ? "" : spec.torch_version() + "+" + spec.torch_variant();
    if (spec.torch_newest()) {
      std::string url;
      {
        std::lock_guard lock(mu_);
        url = env::ExpandVariant(IndexTemplate(), spec.torch_variant());
      }
      FARM_ASSIGN_OR_RETURN(auto files, upstream::ListProjectFiles(*fetcher_, url, "torch"));
      std::vector<std::string> names;
      for (const auto& f : files) {
        if (!f.yanked && !f.sha256.empty()) names.push_back(f.filename);
      }
      FARM_ASSIGN_OR_RETURN(torch, NewestTorch(names, spec.torch_minor(), spec.torch_variant()));
    }
  }
  return provisioner->Provision(ToEnvSpec(spec, torch), job_dir, progress);
}

}  // namespace farm::agent
