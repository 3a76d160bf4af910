// farmctl inspect: checks a wheel (or one shared object) on this machine, without farmd,
// with the same code the worker and farmd run: structure, hostile entries, and the CUDA
// arch manifest, optionally against a requested arch list.
#include <boost/json.hpp>
#include <filesystem>

#include "cli/commands.h"
#include "cli/format.h"
#include "common/arch.h"
#include "common/flags.h"
#include "common/fs.h"
#include "common/wheel/inspect.h"
#include "common/wheel/job_check.h"
#include "common/wheel/manifest.h"
#include "common/wheel/metadata/requires_dist.h"
#include "common/wheel/upload_limits.h"
#include "common/wheel/wheel_bytes.h"

namespace farm::cli {
namespace {

namespace json = boost::json;

// --output json: one document with the file, the manifest (as farmd stores it) and the
// problems found.
json::object ReportJson(const std::string& filename, const wheel::ArchManifest& manifest,
                        const std::vector<wheel::Problem>& problems) {
  json::array found;
  for (const wheel::Problem& p : problems) {
    found.push_back(json::object{{"rule", p.rule}, {"entry", p.entry}, {"detail", p.detail}});
  }
  return json::object{{"filename", filename},
                      {"manifest", json::parse(ToJson(wheel::ManifestToProto(manifest)))},
                      {"problems", std::move(found)},
                      {"ok", problems.empty()}};
}

Status InspectSharedObject(const std::string& path, bool cuobjdump_style, bool as_json,
                           std::ostream& out) {
  FARM_ASSIGN_OR_RETURN(std::string bytes, fs::ReadFile(path));
  std::string name = std::filesystem::path(path).filename().string();
  FARM_ASSIGN_OR_RETURN(wheel::ModuleManifest module, wheel::ReadModuleManifest(bytes, name));
  if (cuobjdump_style && !as_json) {
    out << wheel::FormatCuobjdumpStyle(module);
    return Status::Ok();
  }
  wheel::ArchManifest manifest;
  manifest.modules.push_back(std::move(module));
  wheel::FinishManifest({}, &manifest);
  if (as_json) {
    out << json::serialize(ReportJson(name, manifest, {})) << "\n";
  } else {
    out << wheel::FormatManifest(manifest);
  }
  return Status::Ok();
}

// A wheel built against torch must say which torch it needs (docs/recipes.md, "Torch ABI"): its
// METADATA's torch requirements, "" for none.
std::string TorchRequirement(const wheel::WheelReport& report) {
  std::string torch;
  for (const std::string& r : wheel::RequiresDistFor(report.requires_dist, "torch")) {
    torch += (torch.empty() ? "" : "; ") + r;
  }
  return torch;
}

void PrintReport(const wheel::WheelReport& report, bool cuobjdump_style, std::ostream& out) {
  out << report.filename << ": " << report.files.size() << " files, " << report.metadata_name << " "
      << report.metadata_version << "\n";
  const std::string torch = TorchRequirement(report);
  out << "torch requirement: " << (torch.empty() ? "none in METADATA" : torch) << "\n";
  if (cuobjdump_style) {
    for (const auto& m : report.manifest.modules) out << wheel::FormatCuobjdumpStyle(m);
  } else {
    out << wheel::FormatManifest(report.manifest);
  }
  out << wheel::FormatWheelBytes(wheel::ManifestToProto(report.manifest), "");
  if (report.manifest.bytes.known) {
    out << "fits: "
        << wheel::FitsText(report.manifest.bytes.wheel_bytes, wheel::DefaultUploadLimits()) << "\n";
  }
  for (const auto& p : report.problems) out << "problem: " << p.ToString() << "\n";
}

}  // namespace

Status InspectCommand(const Flags& flags, std::ostream& out) {
  if (flags.positionals().size() < 2) {
    return Status::InvalidArgument(
        "usage: farmctl inspect FILE.whl|FILE.so [--arch-list L] [--cuobjdump]");
  }
  const std::string& path = flags.positionals()[1];
  bool cuobjdump_style = flags.Has("cuobjdump");
  bool as_json = flags.Get("output", "text") == "json";
  if (path.size() < 4 || path.substr(path.size() - 4) != ".whl") {
    return InspectSharedObject(path, cuobjdump_style, as_json, out);
  }
  wheel::InspectOptions options;
  if (flags.Has("arch-list")) {
    FARM_ASSIGN_OR_RETURN(options.requested_targets, arch::ParseArchList(flags.Get("arch-list")));
  }
  FARM_ASSIGN_OR_RETURN(wheel::WheelReport report, wheel::InspectWheel(path, options));
  if (as_json) {
    json::object o = ReportJson(report.filename, report.manifest, report.problems);
    o["files"] = report.files.size();
    o["name"] = report.metadata_name;
    o["version"] = report.metadata_version;
    o["torch_requirement"] = TorchRequirement(report);
    out << json::serialize(o) << "\n";
  } else {
    PrintReport(report, cuobjdump_style, out);
  }
  if (!report.ok()) {
    return Status::FailedPrecondition(std::to_string(report.problems.size()) + " problem(s) in " +
                                      report.filename);
  }
  return Status::Ok();
}

}  // namespace farm::cli
