// Environments: the worker's side of per-cell provisioned environments. It owns the
// provisioner (worker/env), made on the first job that asks for one with the interpreters
// and toolkits the probe found, confined as the builds' user. Each job's sources are those
// the worker was given (--provision-redist, --provision-python-release) or, for any left
// unset, farmd's pull-through cache at the address farmd gave last (registration or
// heartbeat: farmd may come back on another port). It turns a lease's ProvisionSpec, with
// the lock farmd resolved, into the provisioner's EnvSpec and tells farmd what the worker
// may provision.
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
#include "worker/config/config.h"
#include "worker/env/provisioner.h"

namespace farm::agent {

// The provisioner's spec of a lease's environment: its Python, CUDA and platform, and the
// lock farmd resolved (InvalidArgument when it sent none or one that does not parse).
Result<env::EnvSpec> ToEnvSpec(const farm::v1::ProvisionSpec& spec);

class Environments {
 public:
  // `runner` and `clock` must outlive this. `fetcher` null: libcurl.
  Environments(ProvisionConfig config, ProcessRunner* runner, const Clock* clock,
               std::unique_ptr<upstream::Fetcher> fetcher = nullptr);

  // farmd's pull-through cache ("http://host:port"), from its registration reply or a
  // heartbeat (the next provisioning uses it), and the worker's token, which the fetcher
  // sends to that cache's /upstream/ routes and to nothing else (upstream::ScopedBearer).
  void SetFarmUpstream(const std::string& url, const std::string& token);

  // "from farmd's cache at http://..." or "from https://...": where packages come from.
  std::string SourceText();

  // What the worker advertises (Capabilities.provisioning); the cache size is read here.
  farm::v1::Provisioning Advertise();

  // How provisioning runs upstream code ("in a sandbox as nobody (65534:65534)"); "" before
  // the first provisioning.
  std::string Confinement();

  // Makes the environment of `spec` and clones it to job_dir/venv. `caps` are the worker's
  // latest (host interpreters and toolkits it may use). Failures carry failure.h's codes.
  Result<env::ProvisionedEnv> Provision(const farm::v1::ProvisionSpec& spec,
                                        const farm::v1::Capabilities& caps,
                                        const std::string& job_dir,
                                        const env::ProgressSink& progress);

  // Where the next provisioning downloads from: the worker's own sources, else farmd's
  // routes at the address it gave last.
  env::ProvisionSources Sources();

 private:
  Result<env::Provisioner*> Get(const farm::v1::Capabilities& caps);

  const ProvisionConfig config_;
  ProcessRunner* runner_;
  const Clock* clock_;
  std::shared_ptr<upstream::ScopedBearer> bearer_ = std::make_shared<upstream::ScopedBearer>();
  std::unique_ptr<upstream::Fetcher> fetcher_;
  std::mutex mu_;
  std::string farm_upstream_;                      // guarded by mu_
  std::unique_ptr<env::Provisioner> provisioner_;  // made once, under mu_
  std::unique_ptr<env::CacheStore> view_;          // the cache before provisioner_, under mu_
  std::string confinement_;                        // how upstream code runs, under mu_
};

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_ENVIRONMENTS_H_
