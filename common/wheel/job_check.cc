#include "common/wheel/job_check.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <tuple>
#include <utility>

namespace farm::wheel {
namespace {

constexpr size_t kSummaryProblems = 4;

void AddImages(const ModuleManifest& module, farm::v1::ArchManifest* out) {
  for (const CodeImage& image : module.images) {
    farm::v1::ArchImage* p = out->add_images();
    p->set_module(module.module);
    p->set_kind(image.image.kind == arch::Image::Kind::kSass ? "sass" : "ptx");
    p->set_arch(image.name);
    p->set_compressed(image.compression != Compression::kNone);
    p->set_compressed_bytes(static_cast<int64_t>(image.wheel_bytes));
    p->set_uncompressed_bytes(static_cast<int64_t>(image.payload_bytes));
    p->set_fatbin_bytes(static_cast<int64_t>(image.fatbin_bytes));
  }
}

// Image names ascending by compute capability, SASS before PTX, plain before a/f.
std::vector<std::string> SortedImages(const std::set<std::string>& names) {
  std::vector<std::pair<std::tuple<int, int, int, char>, std::string>> keyed;
  for (const std::string& name : names) {
    auto image = arch::ParseImage(name);
    std::tuple<int, int, int, char> key{999, 0, 0, 0};
    if (image.ok()) {
      key = {image->major, image->minor, image->kind == arch::Image::Kind::kPtx, image->suffix};
    }
    keyed.push_back({key, name});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::string> out;
  for (auto& [key, name] : keyed) out.push_back(std::move(name));
  return out;
}

std::string JoinShort(const std::vector<std::string>& names) {
  constexpr size_t kMaxListed = 8;
  constexpr size_t kEnds = 3;
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names.size() > kMaxListed && i == kEnds) {
      out += ", ...";
      i = names.size() - kEnds - 1;
      continue;
    }
    out += (out.empty() ? "" : ", ") + names[i];
  }
  return out;
}

// The CUDA releases the toolkit info of a module's cubins names (ptxas and nvlink write
// it), ascending; none for a module whose cubins do not say.
std::set<std::string> CompiledWith(const ModuleManifest& module) {
  std::set<std::string> out;
  for (const CodeImage& image : module.images) {
    if (!image.toolkit.empty()) out.insert(image.toolkit);
  }
  return out;
}

}  // namespace

std::vector<Problem> CudaMismatches(const ArchManifest& manifest, const std::string& cuda) {
  std::vector<Problem> out;
  if (cuda.empty()) return out;
  for (const ModuleManifest& module : manifest.modules) {
    std::string others;
    for (const std::string& release : CompiledWith(module)) {
      if (release != cuda) others += (others.empty() ? "" : " and ") + release;
    }
    if (others.empty()) continue;
    out.push_back({"cuda-mismatch", module.module,
                   "compiled with CUDA " + others +
                       " (the toolkit info of its cubins), but the cell is CUDA " + cuda +
                       ": its wheel would be labelled and installed for CUDA " + cuda +
                       ". The build found a toolkit of its own (an nvcc on its PATH, "
                       "CUDA_HOME or /usr/local/cuda); a recipe whose build compiles CUDA "
                       "must not say environment.toolkit: false"});
  }
  return out;
}

std::string ArchListIgnoredMessage(const std::string& arch_list,
                                   const farm::v1::ArchManifest& manifest) {
  if (manifest.unrequested().empty()) return "";
  std::set<std::string> built;
  for (const auto& image : manifest.images()) built.insert(image.arch());
  std::set<std::string> extra(manifest.unrequested().begin(), manifest.unrequested().end());
  return "this package ignored TORCH_CUDA_ARCH_LIST: asked " + arch_list + ", built " +
         JoinShort(SortedImages(built)) + " (not asked for: " + JoinShort(SortedImages(extra)) +
         ")";
}

std::string JobWheelCheck::Summary() const {
  std::string out;
  for (size_t i = 0; i < problems.size() && i < kSummaryProblems; ++i) {
    if (!out.empty()) out += "; ";
    out += problems[i].ToString();
  }
  if (problems.size() > kSummaryProblems) {
    out += "; and " + std::to_string(problems.size() - kSummaryProblems) + " more";
  }
  return out;
}

std::string CpythonTag(const std::string& python_version) {
  size_t dot = python_version.find('.');
  if (dot == std::string::npos || dot == 0) return "";
  std::string major = python_version.substr(0, dot);
  std::string minor = python_version.substr(dot + 1);
  size_t end = minor.find('.');
  if (end != std::string::npos) minor.resize(end);
  for (const std::string& part : {major, minor}) {
    if (part.empty()) return "";
    for (char c : part) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return "";
    }
  }
  return "cp" + major + minor;
}

std::string CellPlatform(const farm::v1::MatrixCell& cell) {
  return cell.platform().empty() ? kDefaultPlatform : cell.platform();
}

farm::v1::ArchManifest ManifestToProto(const ArchManifest& manifest) {
  farm::v1::ArchManifest out;
  for (const ModuleManifest& m : manifest.modules) AddImages(m, &out);
  for (const arch::Version& v : manifest.runs_on) out.add_runs_on(v.ToString());
  for (const MissingImage& miss : manifest.missing) out.add_missing(miss.ToString());
  std::set<std::string> extra;
  for (const UnrequestedImage& image : manifest.unrequested) extra.insert(image.image);
  for (std::string& name : SortedImages(extra)) out.add_unrequested(std::move(name));
  WheelBytesToProto(manifest.bytes, &out);
  return out;
}

InspectOptions JobCheckOptions(const farm::v1::Recipe& recipe) {
  InspectOptions options;
  options.refuse_unrequested = recipe.refuse_unrequested_archs();
  options.size_budget_bytes = recipe.size_budget_bytes();
  return options;
}

Result<JobWheelCheck> CheckJobWheel(const std::string& path, const std::string& filename,
                                    const farm::v1::MatrixCell& cell, const InspectOptions& base) {
  InspectOptions options = base;
  options.filename = filename;
  options.expected_python_tag = CpythonTag(cell.python());
  options.expected_platform = CellPlatform(cell);
  options.build_manifest = true;
  if (!cell.arch_list().empty()) {
    FARM_ASSIGN_OR_RETURN(options.requested_targets, arch::ParseArchList(cell.arch_list()));
  }
  FARM_ASSIGN_OR_RETURN(WheelReport report, InspectWheel(path, options));
  JobWheelCheck check;
  check.manifest = ManifestToProto(report.manifest);
  check.problems = std::move(report.problems);
  for (Problem& p : CudaMismatches(report.manifest, cell.cuda())) {
    check.problems.push_back(std::move(p));
  }
  check.requires_device_code = !options.requested_targets.empty();
  if (options.size_budget_bytes > 0) {
    int64_t size = report.manifest.bytes.known ? report.manifest.bytes.wheel_bytes : 0;
    std::error_code ec;
    if (size == 0) size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
    if (auto over = SizeBudgetProblem(check.manifest, size, options.size_budget_bytes)) {
      check.problems.push_back(std::move(*over));
    }
  }
  return check;
}

}  // namespace farm::wheel
