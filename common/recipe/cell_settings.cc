#include "common/recipe/cell_settings.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/upstream/release_version.h"

namespace farm::recipe {
namespace {

// Whether `value` (a cell's version) is in the range `spec`; "" matches every cell.
bool InRange(const std::string& spec, const std::string& value) {
  if (spec.empty()) return true;
  if (value.empty()) return false;
  std::optional<upstream::ReleaseVersion> version = upstream::ParseReleaseVersion(value);
  Result<upstream::VersionSpec> range = upstream::VersionSpec::Parse(spec);
  return version && range.ok() && range->Matches(*version);
}

bool OneOf(const google::protobuf::RepeatedPtrField<std::string>& values, const std::string& v) {
  return values.empty() || std::find(values.begin(), values.end(), v) != values.end();
}

std::string JoinAlternatives(const google::protobuf::RepeatedPtrField<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : " or ") + v;
  return out;
}

// Longest setting value a description shows.
constexpr size_t kMaxShownValue = 200;

// A recipe's value as one line of a job's log: control characters escaped (a newline in
// an env value must not start a line that reads as the worker's), long values cut.
std::string Shown(const std::string& value) {
  // Cut at a character's start: a split UTF-8 sequence is not a protobuf string.
  size_t n = std::min(value.size(), kMaxShownValue);
  while (n > 0 && n < value.size() && (static_cast<unsigned char>(value[n]) & 0xC0) == 0x80) --n;
  std::string out;
  for (unsigned char c : value.substr(0, n)) {
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return n < value.size() ? out + "..." : out;
}

}  // namespace

bool CellMatches(const farm::v1::CellCondition& when, const farm::v1::MatrixCell& cell) {
  return InRange(when.python(), cell.python()) && InRange(when.torch(), cell.torch()) &&
         InRange(when.cuda(), cell.cuda()) && OneOf(when.platform(), cell.platform()) &&
         OneOf(when.arch_lists(), cell.arch_list());
}

std::string DescribeCondition(const farm::v1::CellCondition& when) {
  std::vector<std::string> parts;
  if (!when.python().empty()) parts.push_back("python " + when.python());
  if (!when.torch().empty()) parts.push_back("torch " + when.torch());
  if (!when.cuda().empty()) parts.push_back("cuda " + when.cuda());
  if (!when.platform().empty()) parts.push_back("platform " + JoinAlternatives(when.platform()));
  if (!when.arch_lists().empty())
    parts.push_back("arch_list " + JoinAlternatives(when.arch_lists()));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string DescribeCellSettings(const farm::v1::CellSettings& entry) {
  std::vector<std::string> parts;
  // Sorted: a protobuf map's order is not stable, and the line is compared across attempts.
  std::map<std::string, std::string> env(entry.env().begin(), entry.env().end());
  for (const auto& [name, value] : env) parts.push_back("env " + name + "=" + Shown(value));
  for (const std::string& r : entry.build_requirements())
    parts.push_back("build requirement " + Shown(r));
  if (!entry.arch_list().empty()) parts.push_back("arch list " + entry.arch_list());
  if (entry.timeout_seconds() > 0) {
    parts.push_back("timeout " + std::to_string(entry.timeout_seconds()) + " s");
  }
  if (!entry.unrequested_archs().empty()) {
    parts.push_back("unrequested_archs " + entry.unrequested_archs());
  }
  std::string out = entry.origin() + " (" + DescribeCondition(entry.when()) + "):";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : " ") + parts[i];
  return out;
}

CellRecipe ApplyCellSettings(const farm::v1::Recipe& recipe, const farm::v1::MatrixCell& cell) {
  CellRecipe out{recipe, {}};
  farm::v1::Recipe& r = out.recipe;
  r.clear_cell_settings();
  for (const farm::v1::CellSettings& entry : recipe.cell_settings()) {
    if (!CellMatches(entry.when(), cell)) continue;
    for (const auto& [name, value] : entry.env()) (*r.mutable_env())[name] = value;
    // The parser refuses build requirements without an environment; a hand-made message
    // with them gets none rather than an environment it never asked for.
    for (const std::string& req : entry.build_requirements()) {
      if (r.has_environment()) *r.mutable_environment()->add_build_requirements() = req;
    }
    if (entry.timeout_seconds() > 0) r.set_timeout_seconds(entry.timeout_seconds());
    if (!entry.unrequested_archs().empty()) {
      r.set_refuse_unrequested_archs(entry.unrequested_archs() == "fail");
    }
    out.applied.push_back(DescribeCellSettings(entry));
  }
  return out;
}

std::vector<std::string> MatchingCellSettings(const farm::v1::Recipe& recipe,
                                              const farm::v1::MatrixCell& cell) {
  std::vector<std::string> out;
  for (const farm::v1::CellSettings& entry : recipe.cell_settings()) {
    if (CellMatches(entry.when(), cell)) out.push_back(DescribeCellSettings(entry));
  }
  return out;
}

std::vector<std::string> CellBuildRequirements(const farm::v1::Recipe& recipe,
                                               const farm::v1::MatrixCell& cell) {
  std::vector<std::string> out;
  for (const farm::v1::CellSettings& entry : recipe.cell_settings()) {
    if (!CellMatches(entry.when(), cell)) continue;
    out.insert(out.end(), entry.build_requirements().begin(), entry.build_requirements().end());
  }
  return out;
}

MatrixExpansion ExpandRecipe(const farm::v1::MatrixAxes& requested,
                             const farm::v1::Recipe& recipe) {
  if (recipe.cell_settings().empty()) return ExpandRequest(requested, recipe.matrix());
  // Before the cell is checked: the change is what makes some cells buildable (CUDA 13
  // compiles none of the arches before Turing).
  auto change = [&recipe](farm::v1::MatrixCell* cell) -> std::string {
    const farm::v1::CellSettings* last = nullptr;
    for (const farm::v1::CellSettings& entry : recipe.cell_settings()) {
      if (!entry.arch_list().empty() && CellMatches(entry.when(), *cell)) last = &entry;
    }
    if (last == nullptr || last->arch_list() == cell->arch_list()) return "";
    cell->set_arch_list(last->arch_list());
    return "arch list " + last->arch_list() + " from " + last->origin();
  };
  return ExpandRequest(requested, recipe.matrix(), change);
}

}  // namespace farm::recipe
