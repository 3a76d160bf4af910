// Environments: the worker's side of per-cell provisioned environments. It owns the
// provisioner (worker/env), made on the first job that asks for one, with the sources the
// worker was given (--provision-index, --provision-redist, --provision-python-release) or,
// for any left unset, farmd's pull-through cache (RegisterResponse.upstream_url), and the
// interpreters and toolkits the probe found. It turns a lease's ProvisionSpec into the
// provisioner's EnvSpec (resolving "the newest torch X.Y on cuNNN" on the index) and tells
// farmd what the worker may provision.
//
// Thread-safe: jobs provision concurrently; SetFarmUpstream may be called at any time.
#ifndef FARM_WORKER_JOB_ENVIRONMENTS_H_
#define FARM_WORKER_JOB_ENVIRONMENTS_H_

#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/process.h"
#include "common/status.h"
#include "common/upstream/fetcher.h"
#include "farm/v1/types.pb.h"
#include "worker/agent/config.h"
#include "worker/env/provisioner.h"

namespace farm::agent {

// The provisioner's spec of a lease's environment, with `torch_version` the exact torch
// ("" when the spec names none) already resolved by the caller for torch_newest; the
// spec's torch_requirements of that release join its requirements.
env::EnvSpec ToEnvSpec(const farm::v1::ProvisionSpec& spec, const std::string& torch_version);

// The newest torch release `minor`.* with local label `variant` among `filenames` (wheel
// file names): "2.9.1+cu130". NotFound naming what the index has otherwise.
Result<std::string> NewestTorch(const std::vector<std::string>& filenames, const std::string& minor,
                                const std::string& variant);

class Environments {
 public:
  // `runner` and `clock` must outlive this. `fetcher` null: libcurl.
  Environments(ProvisionConfig config, ProcessRunner* runner, const Clock* clock,
               std::unique_ptr<upstream::Fetcher> fetcher = nullptr);

  // farmd's pull-through cache ("http://host:port"), from its registration reply, and
  // the worker's token, which the fetcher sends to that cache's /upstream/ routes and to
  // nothing else (upstream::ScopedBearer).
  void SetFarmUpstream(const std::string& url, const std::string& token);

  // "from farmd's cache at http://..." or "from https://...": where packages come from.
  std::string SourceText();

  // What the worker advertises (Capabilities.provisioning); the cache size is read here.
  farm::v1::Provisioning Advertise();

  // Makes the environment of `spec` and clones it to job_dir/venv. `caps` are the worker's
  // latest (host interpreters and toolkits it may use). Failures carry failure.h's codes.
  Result<env::ProvisionedEnv> Provision(const farm::v1::ProvisionSpec& spec,
                                        const farm::v1::Capabilities& caps,
                                        const std::string& job_dir,
                                        const env::ProgressSink& progress);

 private:
  Result<env::Provisioner*> Get(const farm::v1::Capabilities& caps);
  std::string IndexTemplate() const;  // under mu_

  const ProvisionConfig config_;
  ProcessRunner* runner_;
  const Clock* clock_;
  std::shared_ptr<upstream::ScopedBearer> bearer_ = std::make_shared<upstream::ScopedBearer>();
  std::unique_ptr<upstream::Fetcher> fetcher_;
  std::mutex mu_;
  std::string farm_upstream_;                      // guarded by mu_
  std::unique_ptr<env::Provisioner> provisioner_;  // made once, under mu_
  std::unique_ptr<env::CacheStore> view_;          // the cache before provisioner_, under mu_
};

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_ENVIRONMENTS_H_
