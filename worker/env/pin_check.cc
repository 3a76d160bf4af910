#include "worker/env/pin_check.h"

#include <map>
#include <set>

#include "common/wheel/metadata/dist_info.h"
#include "common/wheel/wheel_name.h"

namespace farm::env {
namespace {

// The version an exact specifier names ("==12.8.4.1", "==13.1.0.3.*" -> "13.1.0.3"); "".
std::string ExactVersion(const std::string& specifier) {
  if (specifier.rfind("==", 0) != 0 || specifier.find(',') != std::string::npos) return "";
  std::string v = specifier.substr(specifier[2] == '=' ? 3 : 2);
  while (!v.empty() && v.front() == ' ') v.erase(0, 1);
  if (v.size() > 2 && v.compare(v.size() - 2, 2, ".*") == 0) v.resize(v.size() - 2);
  return v;
}

}  // namespace

std::vector<PinProblem> CheckPins(const std::vector<PinnedDist>& dists,
                                  const upstream::MarkerEnv& env, const PinSuggester& suggest) {
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < dists.size(); ++i) by_name[wheel::NormalizeProjectName(dists[i].name)] = i;
  std::vector<PinProblem> problems;
  std::set<std::string> reported;  // requirer + requirement, once each
  // Every pinned dist with no extras, then each (dist, extra) some requirement asks for.
  std::vector<std::pair<size_t, std::string>> work;
  std::set<std::pair<size_t, std::string>> queued;
  for (size_t i = 0; i < dists.size(); ++i) {
    work.push_back({i, ""});
    queued.insert({i, ""});
  }
  for (size_t w = 0; w < work.size(); ++w) {
    const auto [index, extra] = work[w];
    const PinnedDist& dist = dists[index];
    const std::string requirer = dist.name + " " + dist.version;
    for (const std::string& text : dist.requires_dist) {
      auto problem = [&](PinProblem p) {
        if (!reported.insert(requirer + "\n" + text).second) return;
        p.requirer = requirer;
        p.requirement = text;
        problems.push_back(std::move(p));
      };
      Result<upstream::DependencySpec> dep = upstream::ParseDependency(text);
      if (!dep.ok()) {
        problem({.why = dep.status().message()});
        continue;
      }
      Result<bool> applies = upstream::EvaluateMarker(dep->marker, env, extra);
      if (!applies.ok()) {
        problem({.why = applies.status().message()});
        continue;
      }
      // A requirement for an extra counts only in that extra's pass; one without any
      // extra marker was already seen in the dist's plain pass.
      if (!*applies || (!extra.empty() && *upstream::EvaluateMarker(dep->marker, env, "")))
        continue;
      auto suggestion = [&] {
        std::string v = suggest ? suggest(*dep) : "";
        if (v.empty()) v = ExactVersion(dep->specifier);
        return v.empty() ? "" : dep->name + "==" + v;
      };
      auto it = by_name.find(wheel::NormalizeProjectName(dep->name));
      if (it == by_name.end()) {
        problem({.line = suggestion()});
        continue;
      }
      const PinnedDist& pin = dists[it->second];
      Result<bool> matches = upstream::SpecifierMatches(dep->specifier, pin.version);
      if (!matches.ok() || !*matches) {
        problem({.pinned = pin.name + "==" + pin.version,
                 .line = suggestion(),
                 .why = matches.ok() ? "" : matches.status().message()});
      }
      for (const std::string& e : dep->extras) {
        if (queued.insert({it->second, e}).second) work.push_back({it->second, e});
      }
    }
  }
  return problems;
}

std::string DescribeProblems(const std::vector<PinProblem>& problems) {
  std::string out;
  for (const PinProblem& p : problems) {
    std::string because = " (" + p.requirer + " requires " + p.requirement + ")";
    if (!p.pinned.empty() && !p.line.empty()) {
      out += "  replace " + p.pinned + " with " + p.line + because;
    } else if (!p.pinned.empty()) {
      out += "  " + p.pinned + " does not satisfy it" + because;
    } else if (!p.line.empty()) {
      out += "  add " + p.line + because;
    } else {
      out += "  pin a release of it" + because;
    }
    if (!p.why.empty()) out += ": " + p.why;
    out += "\n";
  }
  return out;
}

std::vector<std::string> RequiresDistOf(const std::string& metadata) {
  return wheel::FindHeaders(wheel::ParseHeaders(metadata), "Requires-Dist");
}

}  // namespace farm::env
