#include "common/lock/pip_resolver.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/json.hpp>
#include <mutex>
#include <regex>
#include <sstream>

#include "common/fs.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/upstream/pep508.h"
#include "common/upstream/simple_index.h"
#include "common/wheel/wheel_name.h"

namespace farm::lock {
namespace {

// Starts pip with its marker environment set to the target's (required: a lock must not
// follow the host's markers), and two speed-ups pip 23.0 (Debian 12's) needs, each skipped
// where a pip lacks what it changes: indexes are asked for PEP 503 HTML pages, whose PEP
// 658 metadata pip 23.0 reads (it ignores the JSON form); and a requirement resolved from
// that metadata is reported from its link (its name and version are the wheel file's),
// where pip 23.0 would then download every wheel (gigabytes for torch) before writing a dry
// run's report (written to "report"; a pip the speed-ups do not fit prints it on stdout).
// Its one argument is JSON: {"pip": the pip wheel, "markers": the environment, "report":
// where the report goes, "args": pip's arguments}.
constexpr char kLauncher[] = R"(import json, os, sys
cfg = json.loads(sys.argv[1])
sys.path.insert(0, cfg["pip"])
from pip._vendor.packaging import markers
_target = dict(cfg["markers"])
markers.default_environment = lambda: dict(_target)
try:
    from pip._internal.network.session import PipSession
    _request = PipSession.request
    def _html_pages(self, method, url, *args, **kwargs):
        headers = kwargs.get("headers") or {}
        if "application/vnd.pypi.simple.v1+json" in headers.get("Accept", ""):
            kwargs["headers"] = dict(headers, Accept="application/vnd.pypi.simple.v1+html, text/html;q=0.1")
        return _request(self, method, url, *args, **kwargs)
    PipSession.request = _html_pages
except (ImportError, AttributeError):
    pass
try:
    from pip._internal.operations.prepare import RequirementPreparer
    from pip._internal.utils.direct_url_helpers import direct_url_from_link
    def _from_links(self, reqs, parallel_builds=False):
        for req in reqs:
            if getattr(req, "needs_more_preparation", False) and req.download_info is None:
                req.download_info = direct_url_from_link(req.link)
    RequirementPreparer.prepare_linked_requirements_more = _from_links
    from pip._internal.models.installation_report import InstallationReport
    _to_dict = InstallationReport._install_req_to_dict.__func__
    def _metadata_only(cls, ireq):
        if ireq.local_file_path is None and getattr(ireq, "metadata_directory", None) is None:
            return {"download_info": ireq.download_info.to_dict(), "is_direct": False,
                    "requested": ireq.user_supplied, "metadata": {}}
        return _to_dict(cls, ireq)
    InstallationReport._install_req_to_dict = classmethod(_metadata_only)
    _report = InstallationReport.to_dict
    def _write_and_stop(self):
        # The report is all a dry run is for; what pip would print next needs the wheels.
        # pip turns every exception into a failure, so the process ends here (its scratch
        # folder is the caller's to remove).
        with open(cfg["report"], "w", encoding="utf-8") as f:
            json.dump(_report(self), f)
        sys.stdout.flush()
        os._exit(0)
    InstallationReport.to_dict = _write_and_stop
except (ImportError, AttributeError):
    pass
from pip._internal.cli.main import main
sys.exit(main(cfg["args"]))
)";

// Unpacks the pip wheel argv[1] into the folder argv[2] (through a folder of its own that is
// renamed into place, so a crash leaves no half-unpacked pip in use) and compiles its
// modules there. Its .dist-info is left out: pip run from a folder on sys.path would count
// itself installed in the venv it installs into, and skip installing the farm's pip there.
// Readable by everyone (umask 022): pip runs as the resolver's user. A pip run from the wheel
// itself compiles every module it imports on each run, as a zip holds no bytecode: 1.4 s of
// CPU against 0.4 s for the same pip unpacked (docs/benchmarks.md).
constexpr char kUnpack[] = R"(import compileall, os, shutil, sys, zipfile
os.umask(0o022)
wheel, dest = sys.argv[1], sys.argv[2]
if not os.path.isdir(dest):
    part = "%s.part-%d" % (dest, os.getpid())
    shutil.rmtree(part, ignore_errors=True)
    with zipfile.ZipFile(wheel) as z:
        z.extractall(part)
    for name in os.listdir(part):
        if name.endswith(".dist-info"):
            shutil.rmtree(os.path.join(part, name))
    try:
        os.rename(part, dest)
    except OSError:
        shutil.rmtree(part, ignore_errors=True)
        if not os.path.isdir(dest):
            raise
sys.exit(0 if compileall.compile_dir(dest, quiet=2, workers=1) else 1)
)";

std::string Arch(const std::string& platform) {
  size_t underscore = platform.find('_');
  return underscore == std::string::npos ? platform : platform.substr(underscore + 1);
}

int GlibcMinor(const std::string& glibc) {
  size_t dot = glibc.find('.');
  if (dot == std::string::npos || glibc.substr(0, dot) != "2") return 17;
  try {
    return std::clamp(std::stoi(glibc.substr(dot + 1)), 5, 99);
  } catch (...) {
    return 17;
  }
}

std::string PythonAbi(const std::string& python) {
  std::string mm = python.substr(0, python.find('.', python.find('.') + 1));
  std::string digits;
  for (char c : mm) {
    if (c != '.') digits += c;
  }
  return "cp" + digits;
}

// The text of the last lines of `output` that hold `needle`, trimmed.
std::vector<std::string> LinesWith(const std::string& output, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

std::string Tail(const std::string& text, size_t n) {
  return text.size() > n ? "..." + text.substr(text.size() - n) : text;
}

// The sha256 of a report's download_info: "hashes" (pip >= 23.1) or "hash" ("sha256=...").
std::string ReportSha256(const boost::json::object& archive_info) {
  if (const auto* hashes = archive_info.if_contains("hashes"); hashes && hashes->is_object()) {
    if (const auto* sha = hashes->as_object().if_contains("sha256"); sha && sha->is_string()) {
      return std::string(sha->as_string());
    }
  }
  if (const auto* hash = archive_info.if_contains("hash"); hash && hash->is_string()) {
    std::string text(hash->as_string());
    if (text.rfind("sha256=", 0) == 0) return text.substr(7);
  }
  return "";
}

// `url` without the user and password of its authority: a lock never holds a credential
// (farmd's own pip reads its routes with one).
std::string WithoutUserinfo(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  size_t start = scheme + 3;
  size_t end = url.find_first_of("/?#", start);
  size_t at = url.rfind('@', end == std::string::npos ? url.size() : end);
  if (at == std::string::npos || at < start) return url;
  return url.substr(0, start) + url.substr(at + 1);
}

std::string StringAt(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : "";
}

}  // namespace

std::string DescribeTarget(const ResolveRequest& r) {
  return "Python " + r.python + " on " + r.platform +
         (r.index_name.empty() ? " from " + log::RedactUrlCredentials(r.index_url)
                               : " from the " + r.index_name + " index");
}

std::vector<std::string> PlatformTags(const std::string& platform, const std::string& glibc) {
  const std::string arch = Arch(platform);
  std::vector<std::string> tags;
  for (int minor = GlibcMinor(glibc); minor >= 5; --minor) {
    tags.push_back("manylinux_2_" + std::to_string(minor) + "_" + arch);
    if (minor == 17) tags.push_back("manylinux2014_" + arch);
    if (minor == 12) tags.push_back("manylinux2010_" + arch);
    if (minor == 5) tags.push_back("manylinux1_" + arch);
  }
  tags.push_back("linux_" + arch);
  return tags;
}

std::vector<std::string> PipArguments(const ResolveRequest& r, const std::string& target_dir) {
  std::vector<std::string> args = {
      "install", "--dry-run", "--report", "-", "--quiet", "--no-input",
      "--disable-pip-version-check", "--no-cache-dir", "--retries", "2", "--timeout", "60",
      // The target's wheels, never the host's installed packages:
      // pip allows target options with --target only.
      "--target", target_dir, "--ignore-installed", "--only-binary", ":all:", "--implementation",
      "cp", "--python-version", upstream::LinuxCpythonEnv(r.python, "")["python_version"], "--abi",
      PythonAbi(r.python)};
  // The index comes through PIP_INDEX_URL: its URL may hold a credential (farmd's internal
  // one), and a command line is readable by every user of the host.
  for (const std::string& tag : PlatformTags(r.platform, r.glibc)) {
    args.insert(args.end(), {"--platform", tag});
  }
  args.push_back("--");
  args.insert(args.end(), r.requirements.begin(), r.requirements.end());
  return args;
}

Result<EnvLock> LockFromReport(const std::string& report_json, const ResolveRequest& request,
                               const PipResolverOptions& options) {
  boost::system::error_code ec;
  boost::json::value report = boost::json::parse(report_json, ec);
  if (ec || !report.is_object()) return Status::Internal("pip's report is not JSON");
  const auto* install = report.as_object().if_contains("install");
  if (install == nullptr || !install->is_array()) {
    return Status::Internal("pip's report lists nothing to install");
  }
  EnvLock lock;
  lock.python = upstream::LinuxCpythonEnv(request.python, "")["python_version"];
  lock.platform = request.platform;
  lock.index_name = request.index_name;
  lock.requirements = request.requirements;
  const std::string index =
      options.upstream_index_url.empty() ? request.index_url : options.upstream_index_url;
  for (const boost::json::value& item : install->as_array()) {
    if (!item.is_object()) return Status::Internal("pip's report holds a non-object");
    const boost::json::object& o = item.as_object();
    const auto* download = o.if_contains("download_info");
    if (!download || !download->is_object()) {
      return Status::Internal("pip's report misses download_info");
    }
    LockedPackage p;
    p.index = index;
    std::string url = StringAt(download->as_object(), "url");
    const auto* archive = download->as_object().if_contains("archive_info");
    p.sha256 = archive && archive->is_object() ? ReportSha256(archive->as_object()) : "";
    p.filename = url.substr(url.rfind('/') + 1);
    p.url = WithoutUserinfo(options.upstream_url ? options.upstream_url(url) : url);
    // Page URLs are percent-encoded ("%2B" for the local label's '+').
    for (size_t at = p.filename.find("%2B"); at != std::string::npos; at = p.filename.find("%2B")) {
      p.filename.replace(at, 3, "+");
    }
    Result<wheel::WheelFilename> parsed = wheel::ParseWheelFilename(p.filename);
    if (!parsed.ok() || !upstream::IsSha256Hex(p.sha256)) {
      return Status::InvalidArgument("pip chose " + p.filename.substr(0, 200) +
                                     ", which is not a wheel with a sha256 on the index");
    }
    // What is installed is the file: its name says which distribution and version.
    p.name = wheel::NormalizeProjectName(parsed->name);
    p.version = parsed->version;
    lock.packages.push_back(std::move(p));
  }
  if (lock.packages.empty()) return Status::Internal("pip resolved to nothing");
  // Through ToToml and back: the same checks as any lock a worker reads.
  return ParseToml(ToToml(lock));
}

Status FillSizes(upstream::Fetcher& fetcher, const std::string& index_url, EnvLock* lock) {
  for (LockedPackage& p : lock->packages) {
    Result<std::vector<upstream::IndexFile>> files =
        upstream::ListProjectFiles(fetcher, index_url, p.name);
    if (!files.ok()) continue;
    for (const upstream::IndexFile& f : *files) {
      if (f.filename != p.filename) continue;
      if (!f.sha256.empty() && f.sha256 != p.sha256) {
        return Status::DataLoss("the index lists sha256 " + f.sha256 + " for " + p.filename +
                                ", pip resolved " + p.sha256);
      }
      p.size = f.size;
    }
  }
  return Status::Ok();
}

// The project pip found no version of at all ("from versions: none"), or "". pip skips an
// index page it could not read (a 5xx, a refused connection) at a level --quiet hides, so
// that case reads like a project the index lacks until the page is fetched again.
std::string UnlistedProject(const std::string& output) {
  static const std::regex kNone(
      R"(Could not find a version that satisfies the requirement ([A-Za-z0-9._-]+)[^\n]*\(from versions: none\))");
  std::smatch m;
  return std::regex_search(output, m, kNone) ? m[1].str() : "";
}

Status ResolutionFailure(const std::string& output, int exit_code, const ResolveRequest& r) {
  static const char* kUnreachable[] = {"Max retries exceeded",
                                       "NewConnectionError",
                                       "Connection refused",
                                       "ConnectTimeoutError",
                                       "ReadTimeoutError",
                                       "Name or service not known",
                                       "Temporary failure in name resolution",
                                       "too many 5",
                                       "ProxyError",
                                       "Connection reset"};
  for (const char* needle : kUnreachable) {
    if (output.find(needle) != std::string::npos) {
      std::vector<std::string> lines = LinesWith(output, needle);
      return Status::Unavailable("the index of " + DescribeTarget(r) +
                                 " could not be read: " + Tail(log::Redact(lines.back()), 300));
    }
  }
  static const std::regex kNoVersion(
      R"(Could not find a version that satisfies the requirement (.+?) \(from versions: (.*)\))");
  std::smatch m;
  if (std::regex_search(output, m, kNoVersion)) {
    std::string have = m[2] == "none" ? "no wheel of it for this target" : m[2].str();
    return Status::InvalidArgument("no wheel satisfies " + m[1].str() + " for " +
                                   DescribeTarget(r) + "; the index has: " + have);
  }
  if (output.find("ResolutionImpossible") != std::string::npos ||
      output.find("conflicting dependencies") != std::string::npos) {
    std::string why;
    for (const std::string& line : LinesWith(output, " depends on ")) why += "\n  " + line;
    return Status::InvalidArgument("the requirements conflict for " + DescribeTarget(r) + ":" +
                                   (why.empty() ? " " + Tail(output, 600) : why));
  }
  if (output.find("Invalid requirement") != std::string::npos) {
    return Status::InvalidArgument(Tail(LinesWith(output, "Invalid requirement").back(), 400));
  }
  return Status::Internal("pip could not resolve for " + DescribeTarget(r) + " (exit " +
                          std::to_string(exit_code) + "): " + Tail(log::Redact(output), 1500));
}

Status ResolutionFailureReadingIndex(upstream::Fetcher& fetcher, const std::string& pip_output,
                                     int exit_code, const ResolveRequest& r) {
  Status failure = ResolutionFailure(pip_output, exit_code, r);
  std::string project = UnlistedProject(pip_output);
  if (failure.code() != StatusCode::kInvalidArgument || project.empty()) return failure;
  Result<std::vector<upstream::IndexFile>> files =
      upstream::ListProjectFiles(fetcher, r.index_url, project);
  if (files.ok() || files.status().code() == StatusCode::kNotFound) return failure;
  return Status::Unavailable("the index of " + DescribeTarget(r) + " could not be read: " +
                             Tail(log::Redact(files.status().message()), 300));
}

std::string FindPipWheel(const std::string& dir) {
  std::string best;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return "";
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind("pip-", 0) == 0 && name.ends_with(".whl") && name > best) best = name;
  }
  ::closedir(d);
  return best.empty() ? "" : dir + "/" + best;
}

Result<std::string> UnpackPip(ProcessRunner& runner, const std::string& python,
                              const std::string& wheel, const std::string& under) {
  FARM_ASSIGN_OR_RETURN(std::string digest, Sha256FileHex(wheel));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(under));
  const std::string dest = under + "/pip-" + digest.substr(0, 16);
  ProcessSpec spec;
  spec.argv = {python, "-I", "-c", kUnpack, wheel, dest};
  spec.clear_env = true;
  spec.env = {{"PATH", "/usr/bin:/bin"}, {"LANG", "C.UTF-8"}};
  FARM_ASSIGN_OR_RETURN(CapturedOutput out, RunAndCapture(runner, spec, 120'000));
  if (out.result.exit_code != 0 || out.result.timed_out) {
    return Status::Internal("unpacking " + wheel + " into " + dest +
                            " failed: " + Tail(out.err + out.out, 600));
  }
  if (!fs::Exists(dest + "/pip/__main__.py")) {
    return Status::Internal(wheel + " unpacked into " + dest + " holds no pip/__main__.py");
  }
  return dest;
}

std::string PipResolver::Pip() {
  std::lock_guard lock(unpack_mu_);
  if (!unpacked_tried_) {
    unpacked_tried_ = true;
    Result<std::string> dir =
        UnpackPip(*runner_, options_.python, options_.pip_wheel, options_.work_dir);
    if (dir.ok()) {
      unpacked_ = *dir;
    } else {
      log::Warn("resolving from the pip wheel itself, slower: " + dir.status().message());
    }
  }
  return unpacked_.empty() ? options_.pip_wheel : unpacked_;
}

PipResolver::PipResolver(PipResolverOptions options, ProcessRunner* runner,
                         sandbox::Confinement confinement)
    : options_(std::move(options)), runner_(runner), confinement_(std::move(confinement)) {}

Result<EnvLock> PipResolver::Resolve(const ResolveRequest& request) {
  if (request.requirements.empty()) return Status::InvalidArgument("nothing to resolve");
  if (options_.pip_wheel.empty()) {
    return Status::FailedPrecondition(
        "no pip wheel to resolve with (install python3-pip-whl, or name one)");
  }
  if (!options_.pip_sha256.empty()) {
    FARM_ASSIGN_OR_RETURN(std::string digest, Sha256FileHex(options_.pip_wheel));
    if (digest != options_.pip_sha256) {
      return Status::FailedPrecondition("the resolver's pip " + options_.pip_wheel +
                                        " is not the configured one (sha256 " + digest + ")");
    }
  }
  FARM_RETURN_IF_ERROR(fs::MakeDirs(options_.work_dir));
  FARM_ASSIGN_OR_RETURN(std::string dir, fs::MakeTempDir(options_.work_dir, "resolve-"));
  auto done = [&dir](Result<EnvLock> r) {
    (void)fs::RemoveAll(dir);
    return r;
  };
  const std::string report = dir + "/report.json";
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dir + "/target"));
  if (Status given = sandbox::GiveToBuildUser(confinement_.user(), dir, true); !given.ok()) {
    return done(given);
  }
  boost::json::object config;
  const std::string pip = Pip();
  config["pip"] = pip;
  config["report"] = report;
  boost::json::object markers;
  for (const auto& [k, v] : upstream::LinuxCpythonEnv(request.python, Arch(request.platform))) {
    markers[k] = v;
  }
  markers["platform_release"] = "";
  markers["platform_version"] = "";
  config["markers"] = markers;
  boost::json::array args;
  for (const std::string& a : PipArguments(request, dir + "/target")) {
    args.push_back(boost::json::string(a));
  }
  config["args"] = args;
  ProcessSpec spec;
  spec.argv = {options_.python, "-I", "-c", kLauncher, boost::json::serialize(config)};
  spec.clear_env = true;
  spec.env = {{"PATH", "/usr/bin:/bin"},
              {"HOME", dir},
              {"TMPDIR", dir},
              {"LANG", "C.UTF-8"},
              {"PIP_CONFIG_FILE", "/dev/null"},
              {"PYTHONDONTWRITEBYTECODE", "1"},
              {"PIP_INDEX_URL", request.index_url}};
  if (!options_.ca_file.empty()) spec.env["PIP_CERT"] = options_.ca_file;
  std::vector<sandbox::Mount> mounts = {{dir, false}, {pip, true}};
  if (!options_.ca_file.empty()) mounts.push_back({options_.ca_file, true});
  ProcessSpec confined = confinement_.Wrap(spec, mounts, /*network=*/true);
  Result<CapturedOutput> out = RunAndCapture(*runner_, confined, options_.timeout_ms);
  if (!out.ok()) return done(out.status());
  if (out->result.timed_out) {
    return done(Status::DeadlineExceeded("resolving for " + DescribeTarget(request) +
                                         " took longer than " +
                                         std::to_string(options_.timeout_ms / 1000) + " s"));
  }
  if (out->result.exit_code != 0) {
    std::string output = out->err + "\n" + out->out;
    if (options_.fetcher == nullptr) {
      return done(ResolutionFailure(output, out->result.exit_code, request));
    }
    return done(
        ResolutionFailureReadingIndex(*options_.fetcher, output, out->result.exit_code, request));
  }
  Result<std::string> text = fs::ReadFile(report);
  if (!text.ok()) text = out->out;  // a pip the launcher's speed-ups do not fit
  Result<EnvLock> lock = LockFromReport(*text, request, options_);
  if (lock.ok() && options_.fetcher != nullptr) {
    if (Status sized = FillSizes(*options_.fetcher, request.index_url, &*lock); !sized.ok()) {
      return done(sized);
    }
  }
  return done(std::move(lock));
}

}  // namespace farm::lock
