// farm-worker's configuration: a plain struct filled from command-line flags, a YAML config
// file of the same names (--config; flags win) and, for TLS, the environment (FARM_CA,
// FARM_CERT, FARM_KEY, ...; common/net/tls.h), plus the start-up helpers that read the
// server address and the enrollment token. No state; safe from any thread.
#ifndef FARM_WORKER_CONFIG_CONFIG_H_
#define FARM_WORKER_CONFIG_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/git_policy.h"
#include "common/net/tls.h"
#include "common/sandbox/build_user.h"
#include "common/status.h"

namespace farm::agent {

// A GPU the probe reports although the machine has none (--test-fake-gpu). Test-only: it
// lets integration tests on machines without a GPU place validation jobs on a worker. The
// probe kernels never run on it.
struct FakeGpu {
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
};

// Per-cell environments (docs/environments.md): whether the worker provisions them and
// from where. An empty index/redist/python source means "through farmd's pull-through
// cache" when farmd serves one (RegisterResponse.upstream_url), else none.
struct ProvisionConfig {
  bool enabled = false;   // --provision
  std::string cache_dir;  // default <state_dir>/envs
  int64_t max_cache_bytes = int64_t{64} << 30;
  std::string redist;             // NVIDIA's redist folder
  std::string python_release;     // a CPython archive folder holding SHA256SUMS
  bool host_pythons = true;       // may use this host's interpreters of the cell's version
  bool host_toolkits = true;      // may use this host's CUDA toolkits of the cell's version
  std::string glibc;              // for manylinux tags; default: this host's
  std::string installer;          // the farm's pip wheel (default: Debian's)
  std::string installer_sha256;   // its digest, checked before each use; "" trusts the file
  sandbox::BuildUser build_user;  // who upstream code runs as (the builds' user)
  std::vector<std::string> redist_components;  // empty: the provisioner's default set
  std::string uv;  // the uv that installs environments' packages; "" for pip (--provision-uv)
};

struct WorkerConfig {
  std::string server;       // HOST:PORT of farmd; empty when server_file is used
  std::string server_file;  // ready file holding "127.0.0.1:PORT" (waited for 30 s)
  // How farmd is reached: TLS verified against tls.ca_file, with a client certificate when
  // farmd requires one; plaintext only to a loopback address or with tls.insecure.
  net::ClientTls tls;
  std::string enroll_token_file;                // empty: FARM_ENROLL_TOKEN from the environment
  std::string state_dir = "farm-worker-state";  // worker id + token (0600 file)
  std::string work_dir;                         // per-job workspaces; default <state_dir>/work
  // The compile cache every build goes through (compile_cache.h); --no-ccache turns it off.
  bool ccache = true;
  std::string ccache_dir;  // default <work_dir>/ccache
  std::string ccache_max_size = "20G";
  std::string name;  // default: the host name
  std::map<std::string, std::string> labels;
  int max_jobs = 1;
  // What a job keeps of its log while farmd does not acknowledge it (log_shipper.h).
  int64_t log_buffer_bytes = int64_t{64} << 20;
  std::vector<std::string> pythons;  // empty: discover
  bool log_json = false;
  bool keep_workspaces = false;
  // Compile and run the probe kernels on every GPU at start (quarantine on failure).
  bool probe_kernels = true;
  // Print the capabilities as JSON and exit (0, or 1 when quarantined).
  bool probe_only = false;
  // Local wheel directories where validation finds a recipe's runtime requirements.
  std::vector<std::string> find_links;
  bool verbose = false;
  // Where build commands run (docs/provisioning.md, "The container executor").
  std::string executor = "native";  // native, podman or docker
  // Native builds run in a bubblewrap sandbox (sandbox_executor.h): auto (when bwrap is
  // installed and works; else with the worker's own rights, said at start), bwrap
  // (required: the worker refuses to start without it) or off.
  std::string sandbox = "auto";
  std::string container_image;                     // builder image when the recipe names none
  std::string container_network = "fetch";         // fetch: sources only; none: no network at all
  std::vector<std::string> container_engine_args;  // before `run`, split on spaces
  std::vector<std::string> container_run_args;     // after `run`, split on spaces
  std::string container_gpus = "auto";             // auto, all or none
  std::string container_user = "auto";             // auto, image or UID:GID
  // Who native builds run as (build_user.h), resolved from --build-user at parse time.
  sandbox::BuildUser build_user;
  // Which git sources the worker clones and how (common/git_policy.h): --git-ssh,
  // --git-ca-file, --git-timeout-s.
  git::GitPolicy git;
  std::vector<FakeGpu> test_fake_gpus;  // test-only (FakeGpu)
  ProvisionConfig provision;
};

// Parses farm-worker's flags. On success returns the config with defaults filled in;
// InvalidArgument naming the flag otherwise. Sets *help when --help was given.
Result<WorkerConfig> ParseWorkerFlags(int argc, char** argv, bool* help);

// Returns the usage text printed by --help.
std::string WorkerUsage();

// Returns the farmd address: `server`, or the first line of `server_file` once it exists
// and is not empty (waiting up to `wait_ms`). Unavailable when it never appears.
Result<std::string> ResolveServerAddress(const WorkerConfig& config, int64_t wait_ms = 30000);

// Returns the enrollment token from the file (trimmed) or FARM_ENROLL_TOKEN.
// FailedPrecondition when neither is there.
Result<std::string> LoadEnrollToken(const WorkerConfig& config);

}  // namespace farm::agent

#endif  // FARM_WORKER_CONFIG_CONFIG_H_
