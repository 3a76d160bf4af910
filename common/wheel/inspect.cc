#include "common/wheel/inspect.h"

#include <map>
#include <set>

#include "common/sha256.h"
#include "common/wheel/elf/elf_reader.h"
#include "common/wheel/metadata/dist_info.h"
#include "common/wheel/metadata/dist_info_checks.h"
#include "common/wheel/zip_directory.h"

namespace farm::wheel {
namespace {

constexpr std::string_view kDistInfoSuffix = ".dist-info";

// "pkg-1.0.dist-info" when `name` lies directly in a top-level .dist-info directory.
std::string DistInfoDirOf(const std::string& name) {
  size_t slash = name.find('/');
  if (slash == std::string::npos || slash < kDistInfoSuffix.size()) return "";
  std::string top = name.substr(0, slash);
  if (top.compare(top.size() - kDistInfoSuffix.size(), kDistInfoSuffix.size(), kDistInfoSuffix) !=
      0) {
    return "";
  }
  return top;
}

bool IsDistInfoFile(const std::string& name) {
  std::string dir = DistInfoDirOf(name);
  if (dir.empty()) return false;
  std::string leaf = name.substr(dir.size() + 1);
  return leaf == "METADATA" || leaf == "WHEEL" || leaf == "RECORD";
}

class Inspector {
 public:
  Inspector(const InspectOptions& options, WheelReport* report)
      : options_(options), report_(report) {}

  int64_t Keep(const std::string& name, std::string_view head) const {
    if (IsDistInfoFile(name)) return options_.max_metadata_bytes;
    if (options_.build_manifest && IsElf(head)) return options_.max_elf_bytes;
    return 0;
  }

  void OnFile(ZipFile&& file) {
    report_->files.push_back({file.name, file.size, ToHex(file.sha256)});
    files_[file.name] = {file.size, file.sha256};
    std::string dir = DistInfoDirOf(file.name);
    if (!dir.empty()) dist_info_dirs_.insert(dir);
    if (IsDistInfoFile(file.name)) {
      if (file.truncated) {
        Problem("dist-info-too-large", file.name,
                "larger than " + std::to_string(options_.max_metadata_bytes) + " bytes");
      } else {
        texts_[file.name] = std::move(file.content);
      }
      return;
    }
    if (options_.build_manifest && IsElf(file.content)) ReadElf(file);
  }

  // The checks that need the whole archive; run after a complete scan.
  void Finish() {
    if (dist_info_dirs_.size() != 1) {
      std::string found;
      for (const std::string& d : dist_info_dirs_) found += " " + d;
      Problem(dist_info_dirs_.empty() ? "dist-info-missing" : "dist-info-multiple", "",
              "expected exactly one top-level *.dist-info directory; found" +
                  (found.empty() ? std::string(" none") : found));
      return;
    }
    const std::string dir = *dist_info_dirs_.begin();
    report_->dist_info = dir;
    if (report_->filename_ok) CheckDistInfoName(dir, report_->tags, &report_->problems);
    const std::string* record = Text(dir + "/RECORD");
    const std::string* wheel = Text(dir + "/WHEEL");
    const std::string* metadata = Text(dir + "/METADATA");
    if (record != nullptr) CheckRecord(dir + "/RECORD", *record, files_, &report_->problems);
    if (!report_->filename_ok) return;
    if (wheel != nullptr) {
      CheckWheelFile(dir + "/WHEEL", *wheel, report_->tags, &report_->wheel_tags,
                     &report_->problems);
    }
    if (metadata != nullptr) {
      CheckMetadataFile(dir + "/METADATA", *metadata, report_->tags, &report_->metadata_name,
                        &report_->metadata_version, &report_->problems);
      report_->requires_dist = FindHeaders(ParseHeaders(*metadata), "Requires-Dist");
    }
  }

 private:
  void Problem(const std::string& rule, const std::string& entry, const std::string& detail) {
    report_->problems.push_back({rule, entry, detail});
  }

  const std::string* Text(const std::string& path) {
    auto it = texts_.find(path);
    if (it != texts_.end()) return &it->second;
    if (files_.count(path) == 0) {
      Problem("dist-info-missing-file", path, "required *.dist-info file is absent");
    }
    return nullptr;
  }

  void ReadElf(const ZipFile& file) {
    if (file.truncated) {
      Problem("elf-too-large", file.name,
              "ELF larger than " + std::to_string(options_.max_elf_bytes) +
                  " bytes; its arch manifest was not read");
      return;
    }
    Result<HostElf> host = ReadHostElf(file.content, file.name);
    if (!host.ok()) {
      Problem("elf-unreadable", file.name, host.status().message());
      return;
    }
    report_->host_elves.push_back(std::move(host).value());
    Result<ModuleManifest> module = ReadModuleManifest(
        file.content, file.name, options_.fatbin_limits, options_.measure_wheel_bytes);
    if (!module.ok()) {
      Problem("elf-unreadable", file.name, module.status().message());
      return;
    }
    report_->manifest.modules.push_back(std::move(module).value());
  }

  const InspectOptions& options_;
  WheelReport* report_;
  std::map<std::string, StreamedFile> files_;
  std::map<std::string, std::string> texts_;
  std::set<std::string> dist_info_dirs_;
};

void CheckFilename(const std::string& path, const InspectOptions& options, WheelReport* report) {
  size_t slash = path.rfind('/');
  report->filename = slash == std::string::npos ? path : path.substr(slash + 1);
  Result<WheelFilename> name = ParseWheelFilename(report->filename);
  if (!name.ok()) {
    report->problems.push_back({"filename-invalid", "", name.status().message()});
    return;
  }
  report->filename_ok = true;
  report->tags = std::move(name).value();
  CheckExpectedTags(report->tags, options.expected_python_tag, options.expected_platform,
                    &report->problems);
}

// One "arch-unrequested" problem per module that carries images no requested target names.
void AddUnrequestedProblems(const InspectOptions& options, WheelReport* report) {
  const std::string asked = arch::FormatArchList(options.requested_targets);
  std::string module, images;
  auto flush = [&] {
    if (images.empty()) return;
    report->problems.push_back(
        {"arch-unrequested", module,
         module + " holds " + images + ", which the arch list " + asked + " does not ask for"});
    images.clear();
  };
  for (const UnrequestedImage& extra : report->manifest.unrequested) {
    if (extra.module != module) flush();
    module = extra.module;
    images += (images.empty() ? "" : ", ") + extra.image;
  }
  flush();
}

}  // namespace

Result<WheelReport> InspectWheel(const std::string& path, const InspectOptions& options) {
  WheelReport report;
  CheckFilename(options.filename.empty() ? path : options.filename, options, &report);
  Inspector inspector(options, &report);
  FARM_ASSIGN_OR_RETURN(ZipScan scan,
                        ScanZip(
                            path, options.limits,
                            [&](const std::string& name, std::string_view head) {
                              return inspector.Keep(name, head);
                            },
                            [&](ZipFile&& file) { inspector.OnFile(std::move(file)); }));
  report.total_bytes = scan.total_bytes;
  report.scan_aborted = scan.aborted;
  for (Problem& p : scan.problems) report.problems.push_back(std::move(p));
  if (scan.aborted) return report;  // later checks would only repeat the cut-off
  inspector.Finish();
  if (report.filename_ok) {
    CheckHostElves(report.host_elves, report.tags.platform_tags, &report.problems);
  }
  if (options.build_manifest) {
    FinishManifest(options.requested_targets, &report.manifest);
    for (const MissingImage& miss : report.manifest.missing) {
      report.problems.push_back({"arch-missing", miss.module, miss.ToString()});
    }
    if (options.refuse_unrequested) AddUnrequestedProblems(options, &report);
    // libarchive read the same directory a moment ago, so a failure here leaves the
    // breakdown unknown rather than adding a problem.
    if (options.measure_wheel_bytes) {
      if (auto zip = ReadZipDirectory(path); zip.ok()) AttributeWheelBytes(*zip, &report.manifest);
    }
  }
  return report;
}

}  // namespace farm::wheel
