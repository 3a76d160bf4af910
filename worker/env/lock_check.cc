// Provisioner::CheckLock: reads the pinned wheels' metadata and refuses an environment
// whose pins do not cover what those wheels require (pin_check.h), before the wheels are
// fetched and pip runs with --no-index.
#include <algorithm>
#include <optional>

#include "common/sha256.h"
#include "common/upstream/pep508.h"
#include "common/wheel/wheel_name.h"
#include "common/wheel/wheel_rewrite.h"
#include "worker/env/downloads.h"
#include "worker/env/pin_check.h"
#include "worker/env/provisioner.h"

namespace farm::env {
namespace {

// METADATA of `file`: its PEP 658 metadata file when the index offers one (checked by the
// sha256 the index gave), else read from the wheel, fetched into the verified cache.
Result<std::string> WheelMetadata(CacheStore& cache, upstream::Fetcher& fetcher,
                                  const upstream::IndexFile& file,
                                  std::vector<CachePin>* download_pins,
                                  const ProgressSink& progress) {
  if (!file.core_metadata_sha256.empty()) {
    FARM_ASSIGN_OR_RETURN(upstream::FetchedPage page,
                          fetcher.GetPage(file.url + ".metadata", "", wheel::kMaxDistInfoBytes));
    std::string digest = Sha256Hex(page.body);
    if (digest != file.core_metadata_sha256) {
      return Status::DataLoss("checksum mismatch for " + file.filename +
                              ".metadata: the index "
                              "lists sha256 " +
                              file.core_metadata_sha256 + ", got " + digest);
    }
    return std::move(page.body);
  }
  FARM_ASSIGN_OR_RETURN(CachePin pin, cache.Pin(kDownloads, file.sha256));
  download_pins->push_back(std::move(pin));
  FARM_ASSIGN_OR_RETURN(
      std::string blob,
      FetchVerified(cache, fetcher, {file.url, file.sha256, file.size, file.filename},
                    ThrottledProgress(progress, ProvisionPhase::kPackages, file.filename)));
  Result<wheel::DistInfoText> text = wheel::ReadDistInfoText(blob);
  if (!text.ok()) {
    return Status::InvalidArgument(file.filename +
                                   ": no readable METADATA: " + text.status().message());
  }
  return std::move(text->metadata);
}

// The newest version on `index` that satisfies `dep` and has a wheel for `target`; "".
std::string NewestMatching(upstream::Fetcher& fetcher, const std::string& index,
                           const upstream::TargetPython& target,
                           const upstream::DependencySpec& dep) {
  Result<std::vector<upstream::IndexFile>> files =
      upstream::ListProjectFiles(fetcher, index, dep.name);
  if (!files.ok()) return "";
  std::string best;
  std::optional<upstream::ReleaseVersion> best_version;
  for (const upstream::IndexFile& f : *files) {
    Result<wheel::WheelFilename> name = wheel::ParseWheelFilename(f.filename);
    if (!name.ok() || f.yanked || f.sha256.empty()) continue;
    std::optional<upstream::ReleaseVersion> v = upstream::ParseReleaseVersion(name->version);
    Result<bool> matches = upstream::SpecifierMatches(dep.specifier, name->version);
    if (!v || v->IsPrerelease() || !matches.ok() || !*matches) continue;
    if (best_version && upstream::CompareReleases(*v, *best_version) <= 0) continue;
    if (!upstream::SelectWheel(*files, dep.name, name->version, target).ok()) continue;
    best = name->version;
    best_version = v;
  }
  return best;
}

}  // namespace

Status Provisioner::CheckLock(const EnvSpec& spec, const std::string& index,
                              const upstream::TargetPython& target,
                              const std::vector<Requirement>& pins,
                              const std::vector<upstream::IndexFile>& files,
                              std::vector<CachePin>* download_pins, const ProgressSink& progress) {
  const upstream::MarkerEnv marker_env = upstream::LinuxCpythonEnv(spec.python, target.arch);
  PinSuggester suggest = [&](const upstream::DependencySpec& dep) {
    return NewestMatching(*fetcher_, index, target, dep);
  };
  auto refuse = [&](const std::vector<PinProblem>& problems) {
    return Status::FailedPrecondition(
        "the environment's pins are not a complete lock (its wheels are installed with pip "
        "--no-index, so every requirement they declare must be pinned); pin in the recipe's "
        "environment:\n" +
        DescribeProblems(problems));
  };
  // torch first: its requirements are checked before any other wheel is fetched.
  std::vector<size_t> order(pins.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) {
    return wheel::NormalizeProjectName(pins[i].name) == "torch";
  });
  std::vector<PinnedDist> dists;
  for (const Requirement& r : pins) dists.push_back({r.name, r.version, {}});
  for (size_t n = 0; n < order.size(); ++n) {
    size_t i = order[n];
    if (progress)
      progress({ProvisionPhase::kPackages, "reading the metadata of " + pins[i].Spec()});
    FARM_ASSIGN_OR_RETURN(std::string metadata,
                          WheelMetadata(*cache_, *fetcher_, files[i], download_pins, progress));
    dists[i].requires_dist = RequiresDistOf(metadata);
    if (n == 0 && wheel::NormalizeProjectName(pins[i].name) == "torch") {
      // Only torch's own requirements: the others' metadata is not read yet.
      std::vector<PinnedDist> partial;
      for (size_t j = 0; j < dists.size(); ++j) {
        partial.push_back({dists[j].name, dists[j].version,
                           j == i ? dists[i].requires_dist : std::vector<std::string>{}});
      }
      std::vector<PinProblem> problems = CheckPins(partial, marker_env, suggest);
      if (!problems.empty()) return refuse(problems);
    }
  }
  std::vector<PinProblem> problems = CheckPins(dists, marker_env, suggest);
  if (!problems.empty()) return refuse(problems);
  return Status::Ok();
}

}  // namespace farm::env
