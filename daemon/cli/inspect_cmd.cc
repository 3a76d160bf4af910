// farmctl inspect: checks a wheel (or one shared object) on this machine, without farmd,
// with the same code the worker and farmd run: structure, hostile entries, and the CUDA
// arch manifest, optionally against a requested arch list.
#include <filesystem>

#include "common/arch.h"
#include "common/flags.h"
#include "common/fs.h"
#include "common/wheel/inspect.h"
#include "common/wheel/manifest.h"
#include "common/wheel/requires_dist.h"
#include "daemon/cli/commands.h"

namespace farm::cli {
namespace {

Status InspectSharedObject(const std::string& path, bool cuobjdump_style, std::ostream& out) {
  FARM_ASSIGN_OR_RETURN(std::string bytes, fs::ReadFile(path));
  std::string name = std::filesystem::path(path).filename().string();
  FARM_ASSIGN_OR_RETURN(wheel::ModuleManifest module, wheel::ReadModuleManifest(bytes, name));
  if (cuobjdump_style) {
    out << wheel::FormatCuobjdumpStyle(module);
    return Status::Ok();
  }
  wheel::ArchManifest manifest;
  manifest.modules.push_back(std::move(module));
  wheel::FinishManifest({}, &manifest);
  out << wheel::FormatManifest(manifest);
  return Status::Ok();
}

}  // namespace

Status InspectCommand(const Flags& flags, std::ostream& out) {
  if (flags.positionals().size() < 2) {
    return Status::InvalidArgument("usage: farmctl inspect FILE.whl|FILE.so [--arch-list L] [--cuobjdump]");
  }
  const std::string& path = flags.positionals()[1];
  bool cuobjdump_style = flags.Has("cuobjdump");
  if (path.size() < 4 || path.substr(path.size() - 4) != ".whl") {
    return InspectSharedObject(path, cuobjdump_style, out);
  }
  wheel::InspectOptions options;
  if (flags.Has("arch-list")) {
    FARM_ASSIGN_OR_RETURN(options.requested_targets, arch::ParseArchList(flags.Get("arch-list")));
  }
  FARM_ASSIGN_OR_RETURN(wheel::WheelReport report, wheel::InspectWheel(path, options));
  out << report.filename << ": " << report.files.size() << " files, "
      << report.metadata_name << " " << report.metadata_version << "\n";
  // A wheel built against torch must say which torch it needs (docs/wheel-checks.md).
  std::string torch;
  for (const std::string& r : wheel::RequiresDistFor(report.requires_dist, "torch")) {
    torch += (torch.empty() ? "" : "; ") + r;
  }
  out << "torch requirement: " << (torch.empty() ? "none in METADATA" : torch) << "\n";
  if (cuobjdump_style) {
    for (const auto& m : report.manifest.modules) out << wheel::FormatCuobjdumpStyle(m);
  } else {
    out << wheel::FormatManifest(report.manifest);
  }
  for (const auto& p : report.problems) out << "problem: " << p.ToString() << "\n";
  if (!report.ok()) {
    return Status::FailedPrecondition(std::to_string(report.problems.size()) + " problem(s) in " +
                                      report.filename);
  }
  return Status::Ok();
}

}  // namespace farm::cli
