#include "worker/env/provisioner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <regex>

#include "common/archive/source_archive.h"
#include "common/fs.h"
#include "common/lock/pip_resolver.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/wheel/wheel_name.h"
#include "worker/env/downloads.h"
#include "worker/env/failure.h"
#include "worker/env/redist.h"
#include "worker/env/tree_ops.h"

namespace farm::env {
namespace {

constexpr int64_t kMaxSmallFile = int64_t{8} << 20;  // SHA256SUMS, listings, manifests

bool VersionMatches(const std::string& have, const std::string& wanted) {
  return have == wanted ||
         (have.size() > wanted.size() && have.rfind(wanted, 0) == 0 && have[wanted.size()] == '.');
}

// Unpacks `archive` into `dir`/unpack and returns its single top folder.
Result<std::string> UnpackSingleTop(const std::string& archive, const std::string& dir,
                                    const std::string& what) {
  std::string unpack = dir + "/unpack";
  FARM_RETURN_IF_ERROR(fs::RemoveAll(unpack));
  Result<archives::SourceListing> listing =
      archives::ExtractSourceArchive(archive, unpack, archives::SourceArchiveLimits());
  if (!listing.ok()) {
    // A full disk is the worker's, not the archive's.
    const Status& why = listing.status();
    if (why.code() == StatusCode::kResourceExhausted ||
        why.message().find("No space left on device") != std::string::npos ||
        why.message().find("Disk quota exceeded") != std::string::npos) {
      return Status::ResourceExhausted("unpacking " + what + ": " + why.message());
    }
    return Status::InvalidArgument(what + ": " + why.message());
  }
  std::vector<std::string> tops;
  for (const std::string& name : listing->names) {
    std::string top = name.substr(0, name.find('/'));
    if (std::find(tops.begin(), tops.end(), top) == tops.end()) tops.push_back(top);
  }
  struct stat st;
  if (tops.size() != 1 || stat((unpack + "/" + tops[0]).c_str(), &st) != 0 ||
      !S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(what + ": expected one top folder in the archive");
  }
  return unpack + "/" + tops[0];
}

// Without a sandbox the confined commands see the host's file system as the build user:
// every folder on the way to the cache must let that user pass. FailedPrecondition naming
// the first that does not.
Status CheckReachable(const sandbox::Confinement& confinement, const std::string& cache_dir) {
  if (confinement.kind() != sandbox::Confinement::Kind::kUserOnly) return Status::Ok();
  std::string path;
  for (size_t at = 0; at != std::string::npos;) {
    size_t next = cache_dir.find('/', at + 1);
    path = cache_dir.substr(0, next);
    at = next;
    if (path.empty()) continue;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) break;  // made below, by the worker, 0755
    if ((st.st_mode & S_IXOTH) == 0 && st.st_uid != confinement.user().uid) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
      return Status::FailedPrecondition(
          "provisioning runs as " + confinement.user().name +
          " without a sandbox here, and that user cannot reach the cache " + cache_dir + ": " +
          path + " is mode " + mode +
          "; give --env-cache-dir a folder others may traverse (chmod o+x), or run where "
          "bubblewrap works");
    }
  }
  return Status::Ok();
}

}  // namespace

ProgressFn ThrottledProgress(const ProgressSink& sink, ProvisionPhase phase,
                             const std::string& what) {
  if (!sink) return nullptr;
  // A line when a download starts, at each quarter (or 256 MiB when the size is unknown)
  // and when it ends: a 2 GB wheel is five lines of a job's log, not hundreds.
  auto last = std::make_shared<int64_t>(-1);
  return [sink, phase, what, last](int64_t done, int64_t total) {
    const int64_t step = total > 0 ? std::max<int64_t>(total / 4, 1) : int64_t{256} << 20;
    if (done == total || *last < 0 || done - *last >= step) {
      *last = done;
      sink({phase, "downloading " + what, done, total});
    }
  };
}

const char* ProvisionPhaseName(ProvisionPhase phase) {
  switch (phase) {
    case ProvisionPhase::kPython:
      return "python";
    case ProvisionPhase::kToolkit:
      return "toolkit";
    case ProvisionPhase::kPackages:
      return "packages";
    case ProvisionPhase::kSnapshot:
      return "snapshot";
    case ProvisionPhase::kClone:
      return "clone";
  }
  return "python";
}

Result<std::unique_ptr<Provisioner>> Provisioner::Create(const ProvisionerOptions& options,
                                                         upstream::Fetcher* fetcher,
                                                         ProcessRunner* runner,
                                                         const Clock* clock) {
  if (options.cache_dir.empty()) return Status::InvalidArgument("no provisioning cache folder");
  if (options.installer_wheel.empty() || !wheel::ParseWheelFilename(options.installer_wheel).ok()) {
    return Status::InvalidArgument(
        "no installer: name the farm's pip wheel (Debian's python3-pip-whl has one in "
        "/usr/share/python-wheels)");
  }
  FARM_RETURN_IF_ERROR(CheckReachable(options.confinement, options.cache_dir));
  std::unique_ptr<Provisioner> p(new Provisioner(options, fetcher, runner, clock));
  FARM_ASSIGN_OR_RETURN(p->installer_digest_, Sha256FileHex(options.installer_wheel));
  FARM_RETURN_IF_ERROR(p->CheckInstaller());
  FARM_ASSIGN_OR_RETURN(p->cache_, CacheStore::Open(options.cache_dir, clock));
  p->installer_run_ = options.installer_wheel;
  if (!options.installer_python.empty()) {
    Result<std::string> dir =
        lock::UnpackPip(*runner, options.installer_python, options.installer_wheel,
                        options.cache_dir + "/installer");
    if (dir.ok()) {
      p->installer_run_ = *dir;
    } else {
      log::Warn("pip runs from the installer wheel itself, slower: " + dir.status().message());
    }
  }
  return p;
}

std::string Provisioner::KeyUrl(const std::string& url, const ProvisionSources& sources) {
  if (!sources.farm_base.empty() && url.rfind(sources.farm_base, 0) == 0) {
    return "farm:" + url.substr(sources.farm_base.size());
  }
  return url;
}

Result<Provisioner::PythonChoice> Provisioner::ChoosePython(const std::string& version,
                                                            const ProvisionSources& sources) {
  for (const HostPython& host : options_.host_pythons) {
    if (VersionMatches(host.version, version)) {
      return PythonChoice{"host " + host.path + " " + host.version, host.path, {}};
    }
  }
  for (const PythonArchive& archive : options_.python_archives) {
    if (VersionMatches(archive.version, version)) {
      return PythonChoice{"archive " + archive.sha256, "", archive};
    }
  }
  if (!sources.python_release_url.empty()) {
    return PythonChoice{"release " + KeyUrl(sources.python_release_url, sources) + " " + version,
                        "",
                        {version, "", ""}};
  }
  return Status::NotFound("no Python " + version +
                          " on this worker and no CPython archive source configured");
}

Status Provisioner::CheckPythonVersion(const std::string& python, const std::string& wanted) {
  ProcessSpec spec;
  spec.argv = {python, "-I", "-c", "import platform; print(platform.python_version())"};
  spec.clear_env = true;
  spec.env = {{"PATH", "/usr/bin:/bin"}, {"LANG", "C.UTF-8"}, {"HOME", "/tmp"}};
  std::string prefix = python.substr(0, python.rfind("/bin/"));
  CapturedOutput out;
  Status ran = RunConfined("the interpreter " + python, spec, {{prefix, true}}, &out);
  if (!ran.ok()) {
    if (FailureOf(ran) == ProvisionFailure::kDiskFull) return ran;
    return Status::InvalidArgument("the interpreter " + python + " does not run: " + ran.message());
  }
  std::string have = out.out.substr(0, out.out.find('\n'));
  if (!VersionMatches(have, wanted)) {
    return Status::InvalidArgument("the interpreter " + python + " is Python " + have + ", not " +
                                   wanted);
  }
  return Status::Ok();
}

Result<std::string> Provisioner::ProvidePython(const PythonChoice& choice,
                                               const ProvisionSources& sources, ProvisionedEnv* env,
                                               const ProgressSink& progress) {
  if (!choice.host_path.empty()) return choice.host_path;
  env->python_from_archive = true;
  std::string key = Sha256Hex(choice.identity);
  FARM_ASSIGN_OR_RETURN(CachePin pin, cache_->Pin(kPythons, key));
  env->pins.push_back(std::move(pin));
  auto build = [&](const std::string& dir) -> Status {
    PythonArchive archive = choice.archive;
    if (archive.url.empty()) {
      FARM_ASSIGN_OR_RETURN(archive,
                            ResolvePythonRelease(archive.version, sources.python_release_url));
    }
    if (progress)
      progress({ProvisionPhase::kPython, "CPython " + archive.version + " from " + archive.url});
    FARM_ASSIGN_OR_RETURN(CachePin download_pin, cache_->Pin(kDownloads, archive.sha256));
    const bool cached = cache_->IsComplete(kDownloads, archive.sha256);
    FARM_ASSIGN_OR_RETURN(
        std::string blob,
        FetchVerified(*cache_, *fetcher_, {archive.url, archive.sha256, -1, archive.url},
                      ThrottledProgress(progress, ProvisionPhase::kPython, archive.url)));
    struct stat st {};
    if (!cached && ::stat(blob.c_str(), &st) == 0) env->downloaded_bytes += st.st_size;
    FARM_ASSIGN_OR_RETURN(std::string top, UnpackSingleTop(blob, dir, archive.url));
    if (top != dir + "/unpack/python" || !fs::Exists(top + "/bin/python3")) {
      return Status::InvalidArgument(archive.url +
                                     " is not in the install_only layout "
                                     "(python/bin/python3)");
    }
    if (rename(top.c_str(), (dir + "/python").c_str()) != 0) {
      return ErrnoStatus(errno, "cannot move", top);
    }
    FARM_RETURN_IF_ERROR(fs::RemoveAll(dir + "/unpack"));
    return CheckPythonVersion(dir + "/python/bin/python3", archive.version);
  };
  FARM_ASSIGN_OR_RETURN(std::string entry, cache_->Ensure(kPythons, key, build));
  return entry + "/python/bin/python3";
}

Result<PythonArchive> Provisioner::ResolvePythonRelease(const std::string& version,
                                                        const std::string& release_url) {
  std::string base = release_url;
  if (base.back() != '/') base += '/';
  FARM_ASSIGN_OR_RETURN(upstream::FetchedPage sums,
                        fetcher_->GetPage(base + "SHA256SUMS", "", kMaxSmallFile));
  static const std::regex line_re(
      R"(([0-9a-f]{64})\s+\*?(cpython-(\d+\.\d+\.\d+)\+[A-Za-z0-9._-]+-([a-z0-9_]+)-unknown-linux-gnu-install_only\.tar\.gz))");
  PythonArchive best;
  for (auto it = std::sregex_iterator(sums.body.begin(), sums.body.end(), line_re);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    if (m[4] != options_.target.arch || !VersionMatches(m[3], version)) continue;
    std::string name = m[2];
    std::string quoted;
    for (char c : name) quoted += c == '+' ? std::string("%2B") : std::string(1, c);
    FARM_ASSIGN_OR_RETURN(std::string url, upstream::ResolveUrl(base, quoted));
    auto patch = [](const std::string& v) { return std::stoi(v.substr(v.rfind('.') + 1)); };
    if (best.version.empty() || patch(m[3]) > patch(best.version)) {
      best = {m[3], url, m[1]};
    }
  }
  if (best.url.empty()) {
    return Status::NotFound("no CPython " + version + " for " + options_.target.arch + " in " +
                            base + "SHA256SUMS");
  }
  return best;
}

Result<std::string> Provisioner::ProvideToolkit(const std::string& cuda,
                                                const ProvisionSources& sources,
                                                ProvisionedEnv* env, const ProgressSink& progress) {
  for (const HostToolkit& host : options_.host_toolkits) {
    if (VersionMatches(host.version, cuda)) return host.path;
  }
  if (sources.redist_url.empty()) {
    return Status::NotFound("no CUDA " + cuda +
                            " toolkit on this worker and no redist folder "
                            "configured");
  }
  env->toolkit_from_redist = true;
  std::vector<std::string> components = options_.redist_components;
  if (components.empty()) components = DefaultRedistComponents();
  std::string identity = "redist\n" + KeyUrl(sources.redist_url, sources) + "\n" + cuda + "\n" +
                         options_.redist_platform + "\n";
  for (const std::string& c : components) identity += c + "\n";
  std::string key = Sha256Hex(identity);
  FARM_ASSIGN_OR_RETURN(CachePin pin, cache_->Pin(kToolkits, key));
  env->pins.push_back(std::move(pin));
  FARM_ASSIGN_OR_RETURN(std::string entry,
                        cache_->Ensure(kToolkits, key, [&](const std::string& dir) {
                          return BuildToolkit(cuda, components, sources.redist_url, dir, progress);
                        }));
  return entry + "/cuda";
}

Status Provisioner::BuildToolkit(const std::string& cuda, const std::vector<std::string>& wanted,
                                 const std::string& redist_url, const std::string& dir,
                                 const ProgressSink& progress) {
  std::string base = redist_url;
  if (base.back() != '/') base += '/';
  FARM_ASSIGN_OR_RETURN(upstream::FetchedPage listing,
                        fetcher_->GetPage(base, "text/html", kMaxSmallFile));
  FARM_ASSIGN_OR_RETURN(std::string version,
                        PickManifestVersion(ManifestVersionsInListing(listing.body), cuda));
  std::string manifest_url = base + "redistrib_" + version + ".json";
  FARM_ASSIGN_OR_RETURN(upstream::FetchedPage page,
                        fetcher_->GetPage(manifest_url, "application/json", kMaxSmallFile));
  FARM_ASSIGN_OR_RETURN(RedistManifest manifest, ParseRedistManifest(page.body));
  std::vector<std::string> components;
  for (const std::string& c : wanted) {
    bool optional = options_.redist_components.empty() && (c == "cuda_crt" || c == "libnvvm");
    if (!optional || manifest.components.count(c)) components.push_back(c);  // split out in 13.0
  }
  FARM_ASSIGN_OR_RETURN(std::vector<RedistArchive> archives,
                        SelectArchives(manifest, components, options_.redist_platform));
  std::string root = dir + "/cuda";
  FARM_RETURN_IF_ERROR(fs::MakeDirs(root));
  std::string record = "release_label=" + manifest.release_label + "\n";
  for (const RedistArchive& a : archives) {
    FARM_ASSIGN_OR_RETURN(std::string url, upstream::ResolveUrl(base, a.relative_path));
    if (progress) progress({ProvisionPhase::kToolkit, a.component + " " + a.version});
    FARM_ASSIGN_OR_RETURN(CachePin pin, cache_->Pin(kDownloads, a.sha256));
    FARM_ASSIGN_OR_RETURN(
        std::string blob,
        FetchVerified(*cache_, *fetcher_, {url, a.sha256, a.size, a.relative_path},
                      ThrottledProgress(progress, ProvisionPhase::kToolkit, a.component)));
    FARM_ASSIGN_OR_RETURN(std::string top, UnpackSingleTop(blob, dir, a.relative_path));
    // Each archive carries its own LICENSE at the top: keep them apart.
    for (const char* name : {"LICENSE", "LICENSE.txt", "EULA.txt"}) {
      std::string license = top + "/" + name;
      if (!fs::Exists(license)) continue;
      std::string to = root + "/licenses/" + a.component;
      FARM_RETURN_IF_ERROR(fs::MakeDirs(to));
      if (rename(license.c_str(), (to + "/" + name).c_str()) != 0) {
        return ErrnoStatus(errno, "cannot move", license);
      }
    }
    FARM_RETURN_IF_ERROR(MergeTree(top, root));
    FARM_RETURN_IF_ERROR(fs::RemoveAll(dir + "/unpack"));
    record += a.component + " " + a.version + " sha256=" + a.sha256 + "\n";
  }
  // The redist archives use lib/; builds (torch's cpp_extension among them) look in lib64.
  struct stat st;
  if (lstat((root + "/lib64").c_str(), &st) != 0 && fs::Exists(root + "/lib") &&
      symlink("lib", (root + "/lib64").c_str()) != 0) {
    return ErrnoStatus(errno, "cannot link", root + "/lib64");
  }
  if (std::find(components.begin(), components.end(), "cuda_nvcc") != components.end() &&
      !fs::Exists(root + "/bin/nvcc")) {
    return Status::InvalidArgument("redist " + version + ": cuda_nvcc holds no bin/nvcc");
  }
  return fs::WriteFileAtomic(dir + "/redist.txt", record);
}

Result<std::string> Provisioner::SnapshotKey(const EnvSpec& spec, const ProvisionSources& sources) {
  FARM_RETURN_IF_ERROR(Validate(spec));
  FARM_ASSIGN_OR_RETURN(PythonChoice choice, ChoosePython(spec.python, sources));
  return Sha256Hex("farm-env-v2\n" + CanonicalText(spec) + "python-source=" + choice.identity +
                   "\ninstaller=" + installer_digest_ + "\n" +
                   (options_.uv.empty() ? "" : "install-tool=uv\n"));
}

Result<std::string> Provisioner::EnsureSnapshot(const EnvSpec& spec,
                                                const ProvisionSources& sources,
                                                ProvisionedEnv* env, const ProgressSink& progress) {
  auto build = [&](const std::string& dir) {
    return BuildSnapshot(spec, sources, env->base_python, dir, env, progress);
  };
  FARM_ASSIGN_OR_RETURN(std::string entry,
                        cache_->Ensure(kEnvs, env->key, build, &env->snapshot_built));
  Status sealed = CheckSealed(entry);
  if (sealed.ok()) return entry;
  // Something changed the snapshot (its files may no longer be what the lock says): it is
  // never used again; this job gets a new one.
  env->notes.push_back("snapshot " + env->key.substr(0, 12) +
                       " was discarded: " + sealed.message());
  FARM_RETURN_IF_ERROR(cache_->Discard(kEnvs, env->key));
  return cache_->Ensure(kEnvs, env->key, build, &env->snapshot_built);
}

Result<ProvisionedEnv> Provisioner::Provision(const EnvSpec& spec, const ProvisionSources& sources,
                                              const std::string& job_dir,
                                              const ProgressSink& progress) {
  FARM_RETURN_IF_ERROR(Validate(spec));
  FARM_RETURN_IF_ERROR(CheckInstaller());
  ProvisionedEnv env;
  env.torch = TorchOf(spec);
  FARM_ASSIGN_OR_RETURN(PythonChoice choice, ChoosePython(spec.python, sources));
  int64_t start = clock_->SteadyMs();
  FARM_ASSIGN_OR_RETURN(env.base_python, ProvidePython(choice, sources, &env, progress));
  int64_t after_python = clock_->SteadyMs();
  env.times.python_ms = after_python - start;
  if (!spec.cuda.empty()) {
    FARM_ASSIGN_OR_RETURN(env.cuda_home, ProvideToolkit(spec.cuda, sources, &env, progress));
  }
  int64_t after_toolkit = clock_->SteadyMs();
  env.times.toolkit_ms = after_toolkit - after_python;
  FARM_ASSIGN_OR_RETURN(env.key, SnapshotKey(spec, sources));
  FARM_ASSIGN_OR_RETURN(CachePin pin, cache_->Pin(kEnvs, env.key));
  env.pins.push_back(std::move(pin));
  FARM_ASSIGN_OR_RETURN(std::string entry, EnsureSnapshot(spec, sources, &env, progress));
  int64_t after_snapshot = clock_->SteadyMs();
  env.times.snapshot_ms = after_snapshot - after_toolkit;
  if (progress) progress({ProvisionPhase::kClone, "cloning snapshot " + env.key.substr(0, 12)});
  FARM_ASSIGN_OR_RETURN(std::string origin, fs::ReadFile(entry + "/origin"));
  env.venv_dir = job_dir + "/venv";
  Result<CloneStats> cloned = CloneTree(entry + "/venv", env.venv_dir, origin, env.venv_dir);
  if (!cloned.ok()) {
    (void)fs::RemoveAll(env.venv_dir);
    return cloned.status();
  }
  env.python = env.venv_dir + "/bin/python";
  env.times.clone_ms = clock_->SteadyMs() - after_snapshot;
  Result<int64_t> freed = cache_->Trim(options_.max_cache_bytes);
  if (!freed.ok()) return freed.status();
  if (*freed > 0) env.notes.push_back("cache trimmed by " + fs::HumanBytes(*freed));
  return env;
}

Status Provisioner::CheckInstaller() const {
  Result<std::string> digest = Sha256FileHex(options_.installer_wheel);
  if (!digest.ok()) {
    return Status::FailedPrecondition("the installer " + options_.installer_wheel +
                                      " cannot be read: " + digest.status().message());
  }
  const std::string& wanted =
      options_.installer_sha256.empty() ? installer_digest_ : options_.installer_sha256;
  if (*digest != wanted) {
    return Status::FailedPrecondition("the installer " + options_.installer_wheel +
                                      " is not the configured one: sha256 " + *digest + ", not " +
                                      wanted);
  }
  return Status::Ok();
}

}  // namespace farm::env
