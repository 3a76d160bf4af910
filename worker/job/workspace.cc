#include "worker/job/workspace.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "common/archive/source_archive.h"
#include "common/fs.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

// Keeps the last non-empty stderr (or stdout) line for error messages.
struct LastOutputLine {
  std::string err, out;
  void Add(OutputStream s, const std::string& line) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) return;
    (s == OutputStream::kStderr ? err : out) = line;
  }
  std::string Best() const { return err.empty() ? out : err; }
};

// A tarball whose entries all sit under one directory ("pkg-1.0/...") is unwrapped.
Status HoistSingleDirectory(const std::string& dest) {
  std::error_code ec;
  std::vector<stdfs::path> entries;
  for (const auto& e : stdfs::directory_iterator(dest, ec)) entries.push_back(e.path());
  if (ec || entries.size() != 1 || !stdfs::is_directory(entries[0]) ||
      stdfs::is_symlink(entries[0])) {
    return Status::Ok();
  }
  stdfs::path tmp = stdfs::path(dest).string() + ".unwrap";
  stdfs::rename(entries[0], tmp, ec);
  if (!ec) stdfs::remove(dest, ec);
  if (!ec) stdfs::rename(tmp, dest, ec);
  if (ec) return Status::Internal("unwrapping " + entries[0].string() + ": " + ec.message());
  return Status::Ok();
}

Status FetchGit(const GitFetch& fetch, const farm::v1::GitSource& git, const std::string& dest) {
  FARM_RETURN_IF_ERROR(git::CheckGitUrl(git.url(), fetch.policy));
  if (git.commit().size() > 64 ||
      !std::all_of(git.commit().begin(), git.commit().end(),
                   [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; })) {
    return Status::InvalidArgument("git commit \"" + git.commit() + "\" is not a commit id");
  }
  if (fetch.steps == nullptr) {
    return Status::FailedPrecondition("this worker cannot clone git sources");
  }
  std::string parent = stdfs::path(dest).parent_path().string();
  std::vector<std::string> clone = {"git"};
  for (const std::string& arg : git::LockedGitArgs(fetch.policy)) clone.push_back(arg);
  std::vector<std::string> checkout = clone;
  clone.insert(clone.end(), {"clone", "--quiet", "--no-recurse-submodules"});
  if (git.commit().empty() && !git.ref().empty()) {
    if (git.ref()[0] == '-') {
      return Status::InvalidArgument("git ref " + git.ref() + " starts with '-'");
    }
    clone.insert(clone.end(), {"--branch", git.ref()});
  }
  clone.insert(clone.end(), {"--", git.url(), dest});
  FARM_RETURN_IF_ERROR(fetch.steps->Run(clone, parent, fetch.policy.timeout_ms)
                           .WithContext("git clone " + git.url()));
  if (git.commit().empty()) return Status::Ok();
  checkout.insert(checkout.end(),
                  {"-c", "advice.detachedHead=false", "checkout", "--quiet", git.commit(), "--"});
  return fetch.steps->Run(checkout, dest, fetch.policy.timeout_ms)
      .WithContext("git checkout " + git.commit());
}

// The uploaded archive, downloaded beside `dest` and unpacked into it (its modification
// times kept: SOURCE_DATE_EPOCH is the newest of them).
Status FetchArchive(const farm::v1::SourceArchive& archive, const std::string& dest,
                    const ArchiveFetcher& fetch) {
  if (!fetch) return Status::FailedPrecondition("this worker cannot fetch source archives");
  std::string file = dest + ".archive";
  Status s = fetch(archive, file);
  if (s.ok()) {
    auto unpacked = archives::ExtractSourceArchive(file, dest, archives::SourceArchiveLimits());
    s = unpacked.status();
  }
  Status removed = fs::RemoveAll(file);
  FARM_RETURN_IF_ERROR(s.WithContext("source archive " + archive.sha256().substr(0, 16)));
  FARM_RETURN_IF_ERROR(removed);
  return archive.unwrap_single_directory() ? HoistSingleDirectory(dest) : Status::Ok();
}

}  // namespace

Status StepRunner::Run(const std::vector<std::string>& argv, const std::string& cwd,
                       int64_t timeout_ms) {
  if (control_ != nullptr && control_->stopped()) return Status::Cancelled(control_->detail());
  ProcessSpec spec;
  spec.argv = argv;
  spec.cwd = cwd;
  spec.env = env_;
  spec.clear_env = true;
  FARM_ASSIGN_OR_RETURN(auto process, runner_.Start(spec));
  if (control_ != nullptr) control_->SetProcess(process.get());
  LastOutputLine last;
  ProcessResult r = process->Wait(
      [&](OutputStream s, const std::string& line) {
        last.Add(s, line);
        if (on_line_) on_line_(s, line);
      },
      timeout_ms);
  if (control_ != nullptr) control_->SetProcess(nullptr);
  if (control_ != nullptr && control_->stopped()) return Status::Cancelled(control_->detail());
  if (r.timed_out) return Status::DeadlineExceeded(argv[0] + " timed out");
  if (r.exit_code != 0) {
    std::string why = last.Best().empty() ? "" : ": " + last.Best();
    return Status::FailedPrecondition(argv[0] + " exited with " + std::to_string(r.exit_code) +
                                      why);
  }
  return Status::Ok();
}

Status FetchSource(StepRunner& steps, const GitFetch& git, const farm::v1::Source& source,
                   const std::string& dest, const ArchiveFetcher& fetch) {
  switch (source.kind_case()) {
    case farm::v1::Source::kArchive:
      return FetchArchive(source.archive(), dest, fetch);
    case farm::v1::Source::kGit:
      return FetchGit(git, source.git(), dest);
    case farm::v1::Source::kLocalPath:
    case farm::v1::Source::kTarballPath:
      return Status::FailedPrecondition(
          "the source \"" +
          (source.has_local_path() ? source.local_path() : source.tarball_path()) +
          "\" is a path on the machine that submitted the build; a worker never reads it "
          "(farmctl uploads such sources to farmd)");
    default:
      return Status::InvalidArgument("the recipe has no source");
  }
}

Status ApplyPatches(StepRunner& steps, const std::vector<farm::v1::Patch>& patches,
                    const std::string& src, const std::string& patch_dir) {
  if (patches.empty()) return Status::Ok();
  if (!fs::Exists(src + "/.git")) {
    FARM_RETURN_IF_ERROR(steps.Run({"git", "init", "--quiet"}, src).WithContext("git init"));
  }
  FARM_RETURN_IF_ERROR(fs::MakeDirs(patch_dir));
  for (size_t i = 0; i < patches.size(); ++i) {
    const auto& patch = patches[i];
    std::string name = patch.name().empty() ? "patch-" + std::to_string(i + 1) : patch.name();
    std::string file = patch_dir + "/" + std::to_string(i + 1) + ".diff";
    FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(file, patch.content()));
    Status s = steps.Run({"git", "apply", "--whitespace=nowarn", file}, src);
    if (s.code() == StatusCode::kCancelled) return s;
    if (!s.ok())
      return Status::FailedPrecondition("patch " + name + " does not apply: " + s.message());
  }
  return Status::Ok();
}

// Run by the interpreter the venv was made from, with the new venv's directory.
constexpr const char* kParentVenvProgram =
    "import os, site, sys, sysconfig\n"
    "if sys.prefix != sys.base_prefix:\n"
    "    dest = sysconfig.get_path('purelib', vars={'base': sys.argv[1], 'platbase': "
    "sys.argv[1]})\n"
    "    with open(os.path.join(dest, '_farm_parent_venv.pth'), 'w') as f:\n"
    "        f.write('\\n'.join(site.getsitepackages()) + '\\n')\n"
    "    print('farm: the venv also sees the packages of', sys.prefix)\n";

// Run by the new venv's interpreter: installs what its ensurepip would (pip, and
// setuptools before Python 3.12) by unpacking the same wheels into site-packages, as
// virtualenv seeds. ensurepip itself runs pip to install pip: about 4 s of CPU per venv,
// twice per job. Exit 3: this Python's ensurepip is not one this knows; the caller falls
// back to ensurepip itself.
constexpr const char* kSeedProgram =
    "import contextlib, ensurepip, importlib.resources, os, sys, sysconfig, zipfile\n"
    "wheels = []\n"
    "with contextlib.ExitStack() as stack:\n"
    "    if hasattr(ensurepip, '_get_packages'):\n"
    "        for name, p in ensurepip._get_packages().items():\n"
    "            if p.wheel_path:\n"
    "                wheels.append(p.wheel_path)\n"
    "            else:\n"
    "                res = importlib.resources.files('ensurepip') / '_bundled' / p.wheel_name\n"
    "                wheels.append(stack.enter_context(importlib.resources.as_file(res)))\n"
    "    elif hasattr(ensurepip, '_get_pip_whl_path_ctx'):\n"
    "        wheels.append(stack.enter_context(ensurepip._get_pip_whl_path_ctx()))\n"
    "    else:\n"
    "        sys.exit(3)\n"
    "    dest = sysconfig.get_paths()['purelib']\n"
    "    for wheel in wheels:\n"
    "        with zipfile.ZipFile(wheel) as z:\n"
    "            z.extractall(dest)\n"
    "bindir = os.path.dirname(sys.executable)\n"
    "for name in ('pip', 'pip3', 'pip%d.%d' % sys.version_info[:2]):\n"
    "    path = os.path.join(bindir, name)\n"
    "    with open(path, 'w') as f:\n"
    "        f.write('#!%s\\nimport sys\\nfrom pip._internal.cli.main import main\\n'\n"
    "                'sys.exit(main())\\n' % sys.executable)\n"
    "    os.chmod(path, 0o755)\n";

Status CreateVenv(StepRunner& steps, const std::string& python, bool system_site_packages,
                  const std::string& venv_dir) {
  std::vector<std::string> argv = {python, "-m", "venv", "--without-pip"};
  if (system_site_packages) argv.push_back("--system-site-packages");
  argv.push_back(venv_dir);
  std::string parent = stdfs::path(venv_dir).parent_path().string();
  FARM_RETURN_IF_ERROR(
      steps.Run(argv, parent, 10 * 60 * 1000).WithContext("creating venv with " + python));
  const std::string venv_python = venv_dir + "/bin/python";
  if (!steps.Run({venv_python, "-c", kSeedProgram}, parent, 5 * 60 * 1000).ok()) {
    FARM_RETURN_IF_ERROR(
        steps.Run({venv_python, "-m", "ensurepip", "--default-pip"}, parent, 10 * 60 * 1000)
            .WithContext("installing pip into the venv of " + python));
  }
  if (!system_site_packages) return Status::Ok();
  // --system-site-packages shows the base interpreter's packages only: when `python` is
  // itself a venv's (torch installed there), a .pth file adds that venv's site-packages.
  return steps.Run({python, "-c", kParentVenvProgram, venv_dir}, parent, 60 * 1000)
      .WithContext("linking the packages of " + python);
}

}  // namespace farm::agent
