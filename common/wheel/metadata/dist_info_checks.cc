#include "common/wheel/metadata/dist_info_checks.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "common/strings.h"
#include "common/wheel/elf/host_elf.h"
#include "common/wheel/metadata/dist_info.h"

namespace farm::wheel {
namespace {

bool IsSignature(const std::string& path, const std::string& record_path) {
  return path == record_path + ".jws" || path == record_path + ".p7s";
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : " ") + s;
  return out.empty() ? "(none)" : out;
}

void CheckRow(const RecordRow& row, const StreamedFile& file, std::vector<Problem>* out) {
  const std::string line = "RECORD line " + std::to_string(row.line) + ": ";
  if (row.hash.empty()) {
    out->push_back({"record-hash-missing", row.path, line + "no hash"});
  } else if (row.hash.rfind("sha256=", 0) != 0) {
    out->push_back({"record-hash-algorithm", row.path,
                    line + "hash '" + row.hash.substr(0, row.hash.find('=')) + "' is not sha256"});
  } else if (row.hash.find('=', 7) != std::string::npos) {
    out->push_back({"record-hash-format", row.path, line + "digest carries '=' padding"});
  } else if (row.hash.substr(7) != Base64UrlNoPad(file.sha256)) {
    out->push_back(
        {"record-hash-mismatch", row.path,
         line + "RECORD says " + row.hash + ", content is sha256=" + Base64UrlNoPad(file.sha256)});
  }
  if (row.size.empty() || row.size.size() > 19 ||
      !std::all_of(row.size.begin(), row.size.end(),
                   [](unsigned char c) { return std::isdigit(c); })) {
    out->push_back({"record-size-invalid", row.path, line + "size '" + row.size + "'"});
  } else if (std::stoll(row.size) != file.size) {
    out->push_back(
        {"record-size-mismatch", row.path,
         line + "RECORD says " + row.size + " bytes, content has " + std::to_string(file.size)});
  }
}

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 3 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool PythonTagMatches(const WheelFilename& name, const std::string& want) {
  bool abi3 = std::find(name.abi_tags.begin(), name.abi_tags.end(), "abi3") != name.abi_tags.end();
  std::string want_digits = want.size() > 2 ? want.substr(2) : "";
  for (const std::string& py : name.python_tags) {
    if (py == want || py == "py3" || py == "py" + want_digits) return true;
    // An abi3 wheel built for CPython 3.M serves every later CPython 3.N.
    if (abi3 && py.rfind("cp3", 0) == 0 && want.rfind("cp3", 0) == 0 &&
        AllDigits(std::string_view(py).substr(3)) && AllDigits(std::string_view(want).substr(3)) &&
        std::stoi(py.substr(3)) <= std::stoi(want.substr(3))) {
      return true;
    }
  }
  return false;
}

}  // namespace

void CheckRecord(const std::string& record_path, std::string_view record,
                 const std::map<std::string, StreamedFile>& files, std::vector<Problem>* out) {
  Result<std::vector<RecordRow>> rows = ParseRecord(record);
  if (!rows.ok()) {
    out->push_back({"record-parse", record_path, rows.status().message()});
    return;
  }
  std::set<std::string> listed;
  for (const RecordRow& row : *rows) {
    if (!listed.insert(row.path).second) {
      out->push_back({"record-duplicate", row.path,
                      "listed again on RECORD line " + std::to_string(row.line)});
      continue;
    }
    if (row.path == record_path || IsSignature(row.path, record_path)) {
      if (row.path == record_path && (!row.hash.empty() || !row.size.empty())) {
        out->push_back(
            {"record-self-row", row.path, "RECORD's own row must have empty hash and size"});
      }
      continue;
    }
    auto it = files.find(row.path);
    if (it == files.end()) {
      out->push_back({"record-missing-file", row.path, "listed in RECORD but not in the wheel"});
      continue;
    }
    CheckRow(row, it->second, out);
  }
  for (const auto& [path, file] : files) {
    if (listed.count(path) == 0 && path != record_path && !IsSignature(path, record_path)) {
      out->push_back({"record-unlisted-file", path, "in the wheel but not listed in RECORD"});
    }
  }
}

void CheckWheelFile(const std::string& path, std::string_view text, const WheelFilename& name,
                    std::vector<std::string>* tags, std::vector<Problem>* out) {
  std::vector<HeaderField> fields = ParseHeaders(text);
  std::optional<std::string> version = FindHeader(fields, "Wheel-Version");
  if (!version || version->substr(0, version->find('.')) != "1") {
    out->push_back({"wheel-version", path,
                    "Wheel-Version is '" + version.value_or("") + "'; this checker knows 1.x"});
  }
  std::optional<std::string> purelib = FindHeader(fields, "Root-Is-Purelib");
  std::string pure = AsciiLower(purelib.value_or(""));
  if (pure != "true" && pure != "false") {
    out->push_back({"wheel-purelib", path, "Root-Is-Purelib is '" + pure + "'"});
  } else if (pure == "true" && !name.IsPure()) {
    out->push_back(
        {"wheel-purelib", path, "Root-Is-Purelib is true for platform wheel " + name.platform_tag});
  }
  *tags = FindHeaders(fields, "Tag");
  std::sort(tags->begin(), tags->end());
  tags->erase(std::unique(tags->begin(), tags->end()), tags->end());
  std::vector<std::string> expected = name.ExpandedTags();
  if (*tags != expected) {
    out->push_back(
        {"wheel-tag-mismatch", path,
         "WHEEL Tag lines are " + Join(*tags) + "; the file name implies " + Join(expected)});
  }
  std::string build = FindHeader(fields, "Build").value_or("");
  if (build != name.build_tag) {
    out->push_back(
        {"wheel-build-tag", path,
         "WHEEL Build is '" + build + "'; the file name's build tag is '" + name.build_tag + "'"});
  }
}

void CheckMetadataFile(const std::string& path, std::string_view text,
                       const WheelFilename& filename, std::string* name, std::string* version,
                       std::vector<Problem>* out) {
  std::vector<HeaderField> fields = ParseHeaders(text);
  *name = FindHeader(fields, "Name").value_or("");
  *version = FindHeader(fields, "Version").value_or("");
  if (name->empty() || version->empty()) {
    out->push_back({"metadata-missing-field", path, "METADATA lacks Name or Version"});
    return;
  }
  if (NormalizeProjectName(*name) != NormalizeProjectName(filename.name)) {
    out->push_back(
        {"metadata-name-mismatch", path,
         "METADATA Name '" + *name + "' differs from the file name's '" + filename.name + "'"});
  }
  if (NormalizeVersion(*version) != NormalizeVersion(filename.version)) {
    out->push_back({"metadata-version-mismatch", path,
                    "METADATA Version '" + *version + "' differs from the file name's '" +
                        filename.version + "'"});
  }
}

void CheckDistInfoName(const std::string& dir, const WheelFilename& filename,
                       std::vector<Problem>* out) {
  std::string stem = dir.substr(0, dir.size() - std::string(".dist-info").size());
  size_t dash = stem.find('-');
  std::string name = stem.substr(0, dash);
  std::string version = dash == std::string::npos ? "" : stem.substr(dash + 1);
  if (NormalizeProjectName(name) != NormalizeProjectName(filename.name) ||
      NormalizeVersion(version) != NormalizeVersion(filename.version)) {
    out->push_back({"dist-info-name", dir,
                    "expected " + filename.name + "-" + filename.version + ".dist-info"});
  }
}

void CheckExpectedTags(const WheelFilename& name, const std::string& python_tag,
                       const std::string& platform, std::vector<Problem>* out) {
  if (!python_tag.empty() && !PythonTagMatches(name, python_tag)) {
    out->push_back({"tag-python-mismatch", "",
                    "python tag " + name.python_tag + "-" + name.abi_tag +
                        " does not serve the build environment's " + python_tag});
  }
  if (platform.empty()) return;
  const std::string want = PlatformArch(platform);
  bool ok =
      std::any_of(name.platform_tags.begin(), name.platform_tags.end(),
                  [&](const std::string& p) { return p == "any" || PlatformArch(p) == want; });
  if (!ok) {
    out->push_back({"tag-platform-mismatch", "",
                    "platform tag " + name.platform_tag + " is not for " + want +
                        " (build environment " + platform + ")"});
    return;
  }
  std::optional<GlibcVersion> asked = ManylinuxGlibc(platform);
  if (!asked) return;
  bool tagged =
      std::any_of(name.platform_tags.begin(), name.platform_tags.end(), [&](const std::string& p) {
        std::optional<GlibcVersion> glibc = ManylinuxGlibc(p);
        return glibc && *glibc <= *asked && PlatformArch(p) == want;
      });
  if (!tagged) {
    out->push_back({"tag-manylinux-mismatch", "",
                    "the cell asks for " + platform + " but the wheel is tagged " +
                        name.platform_tag + "; tag it (auditwheel repair, bdist_wheel " +
                        "--plat-name) once its .so files need no newer glibc"});
  }
}

}  // namespace farm::wheel
