// Provisioner::BuildSnapshot: resolves the pinned packages on the index, fetches them into
// the verified cache and installs them into a fresh venv with pip --no-index.
#include <unistd.h>

#include <cerrno>
#include <map>

#include "common/fs.h"
#include "common/wheel/wheel_name.h"
#include "worker/env/downloads.h"
#include "worker/env/failure.h"
#include "worker/env/provisioner.h"
#include "worker/env/tree_ops.h"

namespace farm::env {
namespace {

// The Status of a failed provisioning command, by what its output says.
Status CommandFailure(const std::string& what, const CapturedOutput& out) {
  std::string text = out.err + "\n" + out.out;
  std::string tail = text.size() > 2000 ? text.substr(text.size() - 2000) : text;
  std::string message =
      what +
      (out.result.timed_out ? " timed out"
                            : " failed (exit " + std::to_string(out.result.exit_code) + ")") +
      ": " + tail;
  if (text.find("No space left on device") != std::string::npos ||
      text.find("Disk quota exceeded") != std::string::npos) {
    return Status::ResourceExhausted(message);
  }
  // pip's and uv's words for a requirement the wheelhouse cannot satisfy.
  if (text.find("No matching distribution found") != std::string::npos ||
      text.find("No solution found when resolving") != std::string::npos) {
    return Status::NotFound(message);
  }
  return Status::Internal(message);
}

// A plain environment for provisioning commands: nothing of the worker's (tokens, proxies,
// pip configuration) reaches them.
std::map<std::string, std::string> CommandEnv(const std::string& home) {
  return {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
          {"HOME", home},
          {"LANG", "C.UTF-8"},
          {"PIP_CONFIG_FILE", "/dev/null"},
          {"PYTHONNOUSERSITE", "1"},
          {"PIP_NO_INPUT", "1"},
          {"TMPDIR", home}};
}

// A file name safe to create in the wheelhouse: one path component, a wheel.
bool SafeWheelName(const std::string& name) {
  return !name.empty() && name[0] != '.' && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos && wheel::ParseWheelFilename(name).ok();
}

// The wheel of `r` on a per-variant index. Such an index may name the variant's build
// without its local label (PyTorch's cu130 index says 2.11.0+cu130; PyPI, whose default
// torch is that build, and mirrors of it say 2.11.0): the index was chosen by the variant,
// so its unlabelled release is taken when the labelled one is not there (and `r` pinned to
// it, for pip), and a note says so.
Result<upstream::IndexFile> ChooseWheel(const std::vector<upstream::IndexFile>& files,
                                        Requirement* r, const upstream::TargetPython& target,
                                        std::string* yanked, ProvisionedEnv* env) {
  Result<upstream::IndexFile> chosen =
      upstream::SelectWheel(files, r->name, r->version, target, yanked);
  size_t plus = r->version.find('+');
  if (chosen.ok() || plus == std::string::npos) return chosen;
  std::string release = r->version.substr(0, plus);
  Result<upstream::IndexFile> plain =
      upstream::SelectWheel(files, r->name, release, target, yanked);
  if (!plain.ok()) return chosen;
  env->notes.push_back(r->name + " " + r->version + " is " + plain->filename +
                       " on this index (named without its local label)");
  r->version = release;
  return plain;
}

// The command that installs `pins` from the wheelhouse `house` into `venv`: pip from its
// own pinned wheel, or `uv` when the worker has it (the same resolution from the same
// files, without index access, several times faster on torch's gigabytes). Either way
// nothing but the wheelhouse is read: no index, no configuration, no user cache.
ProcessSpec InstallCommand(const std::string& uv, const std::string& venv, const std::string& house,
                           const std::string& installer_wheel, const std::vector<Requirement>& pins,
                           const std::string& uv_cache) {
  ProcessSpec install;
  install.clear_env = true;
  install.env = CommandEnv(house);
  if (uv.empty()) {
    install.argv = {venv + "/bin/python",
                    installer_wheel + "/pip",
                    "install",
                    "--no-index",
                    "--find-links",
                    house,
                    "--no-cache-dir",
                    "--disable-pip-version-check",
                    "--no-input",
                    "--only-binary",
                    ":all:"};
  } else {
    install.argv = {uv,
                    "pip",
                    "install",
                    "--python",
                    venv + "/bin/python",
                    "--offline",
                    "--no-index",
                    "--find-links",
                    house,
                    "--only-binary",
                    ":all:",
                    "--compile-bytecode"};  // as pip does: the snapshot is read-only later
    install.env["UV_CACHE_DIR"] = uv_cache;
    install.env["UV_NO_CONFIG"] = "1";
    install.env["UV_PYTHON_DOWNLOADS"] = "never";
    install.env["UV_NO_PROGRESS"] = "1";
  }
  for (const Requirement& r : pins) install.argv.push_back(r.Spec());
  return install;
}

}  // namespace

Result<upstream::IndexFile> Provisioner::ResolvePin(const std::string& index,
                                                    const upstream::TargetPython& target,
                                                    Requirement* r, ProvisionedEnv* env) {
  Result<std::vector<upstream::IndexFile>> files =
      upstream::ListProjectFiles(*fetcher_, index, r->name);
  if (!files.ok()) return files.status().WithContext(r->Spec());
  std::string yanked;
  FARM_ASSIGN_OR_RETURN(upstream::IndexFile chosen, ChooseWheel(*files, r, target, &yanked, env));
  if (!yanked.empty()) env->notes.push_back(yanked);
  if (!r->sha256.empty() && r->sha256 != chosen.sha256) {
    return Status::DataLoss(r->Spec() + " is pinned to sha256 " + r->sha256 +
                            " but the index lists " + chosen.sha256);
  }
  if (!SafeWheelName(chosen.filename)) {
    return Status::InvalidArgument("the index names an unsafe file '" +
                                   chosen.filename.substr(0, 200) + "'");
  }
  return chosen;
}

Status Provisioner::BuildSnapshot(const EnvSpec& spec, const std::string& python,
                                  const std::string& dir, ProvisionedEnv* env,
                                  const ProgressSink& progress) {
  std::string index = IndexFor(spec);
  if (index.empty()) return Status::FailedPrecondition("no package index configured");
  std::vector<Requirement> pins;
  FARM_ASSIGN_OR_RETURN(Requirement installer, ParseRequirement(options_.installer));
  std::map<std::string, size_t> by_name;
  auto add = [&](const Requirement& r) {
    std::string name = wheel::NormalizeProjectName(r.name);
    if (by_name.count(name)) {
      pins[by_name[name]] = r;  // the spec's own pin (e.g. of pip) wins
    } else {
      by_name[name] = pins.size();
      pins.push_back(r);
    }
  };
  add(installer);
  if (!spec.torch.empty()) add({"torch", spec.torch, ""});
  for (const std::string& text : spec.requirements) {
    FARM_ASSIGN_OR_RETURN(Requirement r, ParseRequirement(text));
    add(r);
  }
  upstream::TargetPython target = options_.target;
  target.version = MajorMinor(spec.python);
  std::string platform_arch = wheel::PlatformArch(spec.platform);
  if (platform_arch != target.arch) {
    return Status::FailedPrecondition("this worker provisions " + target.arch + ", not " +
                                      spec.platform);
  }
  // Resolve every pin on the index first (pages only), then check the pins are a complete
  // lock by the wheels' metadata, torch's first, before any other wheel is fetched.
  std::vector<upstream::IndexFile> files;
  for (Requirement& r : pins) {
    if (progress) progress({ProvisionPhase::kPackages, "resolving " + r.Spec() + " on " + index});
    FARM_ASSIGN_OR_RETURN(upstream::IndexFile file, ResolvePin(index, target, &r, env));
    files.push_back(std::move(file));
  }
  std::vector<CachePin> download_pins;
  FARM_RETURN_IF_ERROR(CheckLock(spec, index, target, pins, files, &download_pins, progress));
  FARM_ASSIGN_OR_RETURN(std::string house, cache_->MakeScratch("wheelhouse-"));
  // uv's own cache, beside the wheelhouse (not in it: --find-links lists the house) and
  // gone with it; the venv keeps its installed files, hard links or copies.
  std::string uv_cache = house + ".uv-cache";
  auto cleanup = [&](Status s) {
    (void)fs::RemoveAll(house);
    if (!options_.uv.empty()) (void)fs::RemoveAll(uv_cache);
    return s;
  };
  std::string lock;
  std::string installer_wheel;
  for (size_t i = 0; i < pins.size(); ++i) {
    const upstream::IndexFile& chosen = files[i];
    Result<CachePin> pin = cache_->Pin(kDownloads, chosen.sha256);
    if (!pin.ok()) return cleanup(pin.status());
    download_pins.push_back(std::move(*pin));
    Result<std::string> blob =
        FetchVerified(*cache_, *fetcher_, {chosen.url, chosen.sha256, chosen.size, chosen.filename},
                      ThrottledProgress(progress, ProvisionPhase::kPackages, chosen.filename));
    if (!blob.ok()) return cleanup(blob.status());
    std::string linked = house + "/" + chosen.filename;
    if (link(blob->c_str(), linked.c_str()) != 0) {
      return cleanup(ErrnoStatus(errno, "cannot link", linked));
    }
    if (i == 0) installer_wheel = linked;
    lock += pins[i].Spec() + " " + chosen.filename + " sha256=" + chosen.sha256 + "\n";
  }
  if (progress)
    progress({ProvisionPhase::kSnapshot, "installing " + std::to_string(pins.size()) +
                                             " packages into a new venv with " +
                                             (options_.uv.empty() ? std::string("pip") : "uv")});
  std::string venv = dir + "/venv";
  ProcessSpec make_venv;
  make_venv.argv = {python, "-m", "venv", "--without-pip", venv};
  make_venv.clear_env = true;
  make_venv.env = CommandEnv(house);
  Result<CapturedOutput> made = RunAndCapture(*runner_, make_venv, options_.command_timeout_ms);
  if (!made.ok()) return cleanup(made.status());
  if (made->result.exit_code != 0) return cleanup(CommandFailure("python -m venv", *made));
  ProcessSpec install = InstallCommand(options_.uv, venv, house, installer_wheel, pins, uv_cache);
  Result<CapturedOutput> installed = RunAndCapture(*runner_, install, options_.command_timeout_ms);
  if (!installed.ok()) return cleanup(installed.status());
  if (installed->result.exit_code != 0) {
    return cleanup(
        CommandFailure(options_.uv.empty() ? "pip install" : "uv pip install", *installed));
  }
  FARM_RETURN_IF_ERROR(cleanup(fs::WriteFileAtomic(dir + "/lock.txt", lock)));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(dir + "/origin", venv));
  return SealTree(venv);
}

}  // namespace farm::env
