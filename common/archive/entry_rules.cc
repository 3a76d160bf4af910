#include "common/archive/entry_rules.h"

#include <algorithm>

namespace farm::archives {

std::vector<std::string_view> PathComponents(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == path.npos) slash = path.size();
    out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

std::string CheckEntryName(std::string_view name, std::string* rule) {
  *rule = "path-invalid";
  if (name.empty()) return "empty entry name";
  if (name.find('\0') != name.npos) return "NUL byte in entry name";
  if (name.find('\\') != name.npos) return "backslash in entry name";
  if (name[0] == '/' || (name.size() >= 2 && name[1] == ':')) {
    *rule = "path-absolute";
    return "absolute path";
  }
  for (std::string_view c : PathComponents(name)) {
    if (c == "..") {
      *rule = "path-dotdot";
      return "'..' component";
    }
    if (c.empty() || c == ".") return "empty or '.' path component";
  }
  rule->clear();
  return "";
}

bool LinkEscapesTree(std::string_view name, std::string_view target) {
  if (target.empty() || target[0] == '/') return true;
  std::vector<std::string_view> parts = PathComponents(name);
  parts.pop_back();  // the link itself
  for (std::string_view c : PathComponents(target)) {
    if (c.empty() || c == ".") continue;
    if (c != "..") {
      parts.push_back(c);
    } else if (parts.empty()) {
      return true;
    } else {
      parts.pop_back();
    }
  }
  return false;
}

Budget::Budget(const Limits& limits, int64_t archive_bytes)
    : limits_(limits), archive_bytes_(std::max<int64_t>(archive_bytes, 1)) {}

Violation Budget::CountEntry() {
  if (++entries_ > limits_.max_entries) {
    return {"too-many-entries", "more than " + std::to_string(limits_.max_entries) + " entries"};
  }
  return {};
}

void Budget::BeginEntry(int64_t consumed) { entry_start_ = consumed; }

// Two ratios, both from bytes actually produced: the whole archive's against its size on
// disk, and the current entry's against the archive bytes consumed for it (which catches
// one bomb entry hidden among large incompressible files).
Violation Budget::CountBytes(int64_t entry_bytes, int64_t n, int64_t consumed) {
  total_bytes_ += n;
  if (entry_bytes + n > limits_.max_entry_bytes) {
    return {"entry-too-large",
            "more than " + std::to_string(limits_.max_entry_bytes) + " bytes uncompressed"};
  }
  if (total_bytes_ > limits_.max_total_bytes) {
    return {"total-too-large",
            "archive expands to more than " + std::to_string(limits_.max_total_bytes) + " bytes"};
  }
  const double limit = limits_.max_ratio;
  const std::string ratio = std::to_string(static_cast<int64_t>(limit));
  if (total_bytes_ > limits_.ratio_grace_bytes &&
      static_cast<double>(total_bytes_) > limit * static_cast<double>(archive_bytes_)) {
    return {"compression-ratio", std::to_string(total_bytes_) + " bytes expanded from a " +
                                     std::to_string(archive_bytes_) +
                                     "-byte archive exceeds ratio " + ratio};
  }
  int64_t entry_total = entry_bytes + n;
  int64_t used = std::max<int64_t>(consumed - entry_start_, 1);
  if (entry_total > limits_.ratio_grace_bytes &&
      static_cast<double>(entry_total) > limit * static_cast<double>(used)) {
    return {"compression-ratio", std::to_string(entry_total) + " bytes expanded from " +
                                     std::to_string(used) + " compressed bytes exceeds ratio " +
                                     ratio};
  }
  return {};
}

}  // namespace farm::archives
