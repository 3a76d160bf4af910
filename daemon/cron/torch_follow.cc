#include "daemon/cron/torch_follow.h"

#include <algorithm>
#include <set>

#include "common/upstream/simple_index.h"

namespace farm::cron {
namespace {

bool Older(const upstream::ReleaseVersion& a, const upstream::ReleaseVersion& b) {
  return upstream::CompareReleases(a, b) < 0;
}

// Per minor ("2.9"), the newest release of `releases` that `follow` admits.
std::map<std::string, upstream::ReleaseVersion> NewestPerMinor(
    const std::vector<upstream::ReleaseVersion>& releases, const upstream::VersionSpec& spec,
    bool prereleases) {
  std::map<std::string, upstream::ReleaseVersion> out;
  for (const upstream::ReleaseVersion& v : releases) {
    if ((!prereleases && v.IsPrerelease()) || !spec.Matches(v)) continue;
    auto [it, inserted] = out.emplace(v.Minor(), v);
    if (!inserted && Older(it->second, v)) it->second = v;
  }
  return out;
}

using PerMinor = std::map<std::string, upstream::ReleaseVersion>;

// Keeps in `pin` the oldest of the releases of `minor` seen: the one every index has.
void KeepOldest(PerMinor* pin, const std::string& minor, const upstream::ReleaseVersion& v) {
  auto [it, inserted] = pin->emplace(minor, v);
  if (!inserted && Older(v, it->second)) it->second = v;
}

// The minors of `pin`, oldest release first.
std::vector<std::string> ByRelease(const PerMinor& pin) {
  std::vector<std::string> minors;
  for (const auto& [minor, v] : pin) minors.push_back(minor);
  std::sort(minors.begin(), minors.end(), [&pin](const std::string& a, const std::string& b) {
    return Older(pin.at(a), pin.at(b));
  });
  return minors;
}

}  // namespace

std::string CudaVariantName(const std::string& cuda) {
  std::string out = "cu";
  for (char c : cuda) {
    if (c != '.') out += c;
  }
  return out;
}

Result<std::vector<upstream::ReleaseVersion>> ListTorchReleases(upstream::Fetcher& fetcher,
                                                                const std::string& index_url) {
  FARM_ASSIGN_OR_RETURN(auto files, upstream::ListProjectFiles(fetcher, index_url, "torch"));
  std::vector<upstream::ReleaseVersion> out;
  std::set<std::string> seen;
  for (const upstream::IndexFile& f : files) {
    const std::string& name = f.filename;
    size_t first = name.find('-');
    size_t second = first == std::string::npos ? first : name.find('-', first + 1);
    if (second == std::string::npos || name.size() < 4 ||
        name.compare(name.size() - 4, 4, ".whl") != 0 || f.sha256.empty()) {
      continue;
    }
    auto v = upstream::ParseReleaseVersion(name.substr(first + 1, second - first - 1));
    if (v && seen.insert(v->Public()).second) out.push_back(*v);
  }
  return out;
}

IndexCheck CheckUpstreamIndex(upstream::Fetcher& fetcher, const std::string& name,
                              const std::string& url) {
  const std::string head = "upstream index " + name + " (" + url + ")";
  auto releases = ListTorchReleases(fetcher, url);
  if (releases.status().code() == StatusCode::kNotFound) {
    return {false, head + " has no torch page (" + releases.status().message() +
                       "): is it the index's root, the folder with one folder per project "
                       "(PEP 503; `farmctl index make` writes DIR/simple/)? Cells that "
                       "provision torch from it will fail"};
  }
  if (!releases.ok()) {
    return {false, head + " cannot be read now: " + releases.status().message() +
                       "; workers get only what farmd holds of it (fetched before, or "
                       "`farmctl cache add`)"};
  }
  std::sort(releases->begin(), releases->end(),
            [](const auto& a, const auto& b) { return upstream::CompareReleases(a, b) < 0; });
  std::string listed;
  for (size_t i = 0; i < releases->size(); ++i) {
    if (releases->size() > 8 && i == 3) {
      listed += ", ...";
      i = releases->size() - 4;
      continue;
    }
    listed += (listed.empty() ? "" : ", ") + (*releases)[i].Public();
  }
  if (listed.empty()) {
    return {false, head +
                       " lists torch but no wheel of it with a sha256 (farmd serves only "
                       "files whose link carries one)"};
  }
  return {true, head + ": answers, torch " + listed};
}

Status ApplyTorchFollow(const std::vector<std::string>& cuda, const Releases& releases,
                        const Releases& candidates, farm::v1::Recipe* recipe) {
  const farm::v1::TorchFollow& follow = recipe->matrix().torch_follow();
  FARM_ASSIGN_OR_RETURN(upstream::VersionSpec spec, upstream::VersionSpec::Parse(follow.spec()));
  // variant -> minor -> newest release there
  std::map<std::string, std::map<std::string, upstream::ReleaseVersion>> per_variant;
  PerMinor pin;  // minor -> the release every index has
  for (const std::string& c : cuda) {
    std::string variant = CudaVariantName(c);
    auto listed = releases.find(variant);
    if (listed == releases.end()) continue;
    auto newest = NewestPerMinor(listed->second, spec, follow.prereleases());
    for (const auto& [minor, v] : newest) KeepOldest(&pin, minor, v);
    per_variant[variant] = std::move(newest);
  }
  std::vector<std::string> minors = ByRelease(pin);
  if (follow.newest() > 0 && minors.size() > static_cast<size_t>(follow.newest())) {
    minors.erase(minors.begin(), minors.end() - follow.newest());
  }
  // Release candidates: the minors no release index lists, from the pre-release indexes,
  // pre-releases included (the user asked for candidates), on top of the newest finals.
  PerMinor candidate;
  for (const std::string& c : cuda) {
    std::string variant = CudaVariantName(c);
    auto listed = candidates.find(variant);
    if (listed == candidates.end()) continue;
    for (const auto& [minor, v] : NewestPerMinor(listed->second, spec, true)) {
      if (pin.count(minor)) continue;  // the final release wins
      KeepOldest(&candidate, minor, v);
      per_variant[variant].emplace(minor, v);
    }
  }
  for (const std::string& minor : ByRelease(candidate)) {
    minors.push_back(minor);
    pin.emplace(minor, candidate.at(minor));
  }
  if (minors.empty()) {
    std::string indexes;
    for (const std::string& c : cuda) indexes += (indexes.empty() ? "" : ", ") + CudaVariantName(c);
    return Status::FailedPrecondition("no torch release on " + indexes + " matches \"" +
                                      follow.spec() + "\"" +
                                      (follow.prereleases() ? "" : " (pre-releases left out)"));
  }
  farm::v1::MatrixAxes* matrix = recipe->mutable_matrix();
  matrix->clear_torch();
  farm::v1::EnvironmentSpec* env = recipe->mutable_environment();
  env->clear_torch_from_test();
  for (const std::string& minor : minors) {
    matrix->add_torch(minor);
    if (!env->torch().contains(minor)) (*env->mutable_torch())[minor] = pin.at(minor).Public();
    if (candidate.count(minor)) env->add_torch_from_test(minor);
    for (const std::string& c : cuda) {
      auto variant = per_variant.find(CudaVariantName(c));
      if (variant != per_variant.end() && variant->second.count(minor)) continue;
      farm::v1::MatrixRule* rule = matrix->add_exclude();
      (*rule->mutable_match())["torch"] = minor;
      (*rule->mutable_match())["cuda"] = c;
    }
  }
  return Status::Ok();
}

}  // namespace farm::cron
