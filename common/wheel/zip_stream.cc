#include "common/wheel/zip_stream.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <algorithm>
#include <unordered_set>

#include "common/sha256.h"

namespace farm::wheel {
namespace {

constexpr size_t kHeadBytes = 64;
constexpr size_t kChunkBytes = 64 * 1024;

std::vector<std::string_view> Components(std::string_view path) {
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

// Whether a symlink stored at `name` with target `target` resolves outside the archive.
bool EscapesTree(std::string_view name, std::string_view target) {
  if (target.empty() || target[0] == '/') return true;
  std::vector<std::string_view> parts = Components(name);
  parts.pop_back();  // the link itself
  for (std::string_view c : Components(target)) {
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

class Scanner {
 public:
  Scanner(const ZipLimits& limits, const KeepPolicy& keep, const FileHandler& handler)
      : limits_(limits), keep_(keep), handler_(handler), buf_(kChunkBytes) {}
  ~Scanner() {
    if (a_ != nullptr) archive_read_free(a_);
  }

  Result<ZipScan> Run(const std::string& path);

 private:
  void Reject(const std::string& rule, const std::string& entry, const std::string& detail) {
    scan_.problems.push_back({rule, entry, detail});
  }
  void Abort(const std::string& rule, const std::string& entry, const std::string& detail) {
    Reject(rule, entry, detail);
    scan_.aborted = true;
  }
  // Returns false when the scan must stop.
  bool VisitEntry(archive_entry* e);
  bool AcceptKind(archive_entry* e, const std::string& name);
  bool ReadFile(const std::string& name);
  bool CountBytes(const std::string& name, int64_t entry_bytes, int64_t n);
  bool CheckRatio(const std::string& name, int64_t entry_bytes);
  void Keep(ZipFile* file, std::string_view chunk, bool* decided, int64_t* keep_bytes);

  const ZipLimits& limits_;
  const KeepPolicy& keep_;
  const FileHandler& handler_;
  std::vector<char> buf_;
  archive* a_ = nullptr;
  int64_t archive_bytes_ = 0;
  int64_t entry_start_ = 0;  // archive position where the current entry's data begins
  std::unordered_set<std::string> seen_;
  ZipScan scan_;
};

Result<ZipScan> Scanner::Run(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::NotFound("cannot open wheel " + path);
  }
  archive_bytes_ = std::max<int64_t>(st.st_size, 1);
  a_ = archive_read_new();
  archive_read_support_format_zip_seekable(a_);
  if (archive_read_open_filename(a_, path.c_str(), kChunkBytes) != ARCHIVE_OK) {
    const char* err = archive_error_string(a_);
    return Status::InvalidArgument("not a zip archive: " + path + ": " +
                                   (err != nullptr ? err : "unreadable"));
  }
  while (!scan_.aborted) {
    archive_entry* e = nullptr;
    int rc = archive_read_next_header(a_, &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc < ARCHIVE_WARN) {
      const char* err = archive_error_string(a_);
      Abort("zip-corrupt", "", err != nullptr ? err : "unreadable entry header");
      break;
    }
    if (!VisitEntry(e)) break;
  }
  return std::move(scan_);
}

bool Scanner::VisitEntry(archive_entry* e) {
  if (++scan_.entries > limits_.max_entries) {
    Abort("too-many-entries", "", "more than " + std::to_string(limits_.max_entries) +
                                      " entries");
    return false;
  }
  const char* raw = archive_entry_pathname(e);
  std::string name = raw != nullptr ? raw : "";
  if (static_cast<int64_t>(name.size()) > limits_.max_name_bytes) {
    Reject("path-invalid", name.substr(0, 64) + "...",
           "name longer than " + std::to_string(limits_.max_name_bytes) + " bytes");
    return true;
  }
  bool is_dir = archive_entry_filetype(e) == AE_IFDIR;
  std::string key = name;
  if (is_dir && !key.empty() && key.back() == '/') key.pop_back();
  std::string rule;
  std::string why = CheckEntryName(key, &rule);
  if (!why.empty()) {
    Reject(rule, name, why);
    return true;
  }
  if (!seen_.insert(key).second) {
    Reject("duplicate-entry", name, "the name appears more than once in the archive");
    return true;
  }
  if (!AcceptKind(e, name)) return !scan_.aborted;
  if (is_dir) {
    scan_.directories.push_back(key);
    return true;
  }
  return ReadFile(name);
}

bool Scanner::AcceptKind(archive_entry* e, const std::string& name) {
  unsigned type = archive_entry_filetype(e);
  if (type == AE_IFLNK) {
    const char* t = archive_entry_symlink(e);
    std::string target = t != nullptr ? t : "";
    Reject("symlink", name,
           EscapesTree(name, target)
               ? "symlink to '" + target + "' points out of the wheel"
               : "symlink to '" + target + "'; wheels may not contain symlinks");
    return false;
  }
  if (archive_entry_hardlink(e) != nullptr) {
    Reject("hardlink", name, "hard link entries are not allowed");
    return false;
  }
  if (type != AE_IFREG && type != AE_IFDIR) {
    Reject("special-file", name, "entry is neither a file nor a directory");
    return false;
  }
  if (archive_entry_is_encrypted(e)) {
    Reject("encrypted", name, "encrypted entries are not allowed");
    return false;
  }
  if (archive_entry_size_is_set(e) && archive_entry_size(e) > limits_.max_entry_bytes) {
    Abort("entry-too-large", name,
          "declares " + std::to_string(archive_entry_size(e)) + " bytes; limit " +
              std::to_string(limits_.max_entry_bytes));
    return false;
  }
  return true;
}

bool Scanner::ReadFile(const std::string& name) {
  ZipFile file;
  file.name = name;
  Sha256 hasher;
  entry_start_ = archive_filter_bytes(a_, -1);
  bool decided = false;
  int64_t keep_bytes = 0;
  while (true) {
    la_ssize_t n = archive_read_data(a_, buf_.data(), buf_.size());
    if (n < 0) {
      const char* err = archive_error_string(a_);
      Abort("zip-corrupt", name, err != nullptr ? err : "unreadable entry data");
      return false;
    }
    if (n == 0) break;
    if (!CountBytes(name, file.size, n)) return false;
    file.size += n;
    std::string_view chunk(buf_.data(), static_cast<size_t>(n));
    hasher.Update(chunk);
    Keep(&file, chunk, &decided, &keep_bytes);
  }
  if (!decided) Keep(&file, {}, &decided, &keep_bytes);
  file.sha256 = hasher.Digest();
  handler_(std::move(file));
  return true;
}

// Holds bytes until the keep policy has seen the head, then keeps what it asked for.
void Scanner::Keep(ZipFile* file, std::string_view chunk, bool* decided, int64_t* keep_bytes) {
  if (!*decided) {
    file->content.append(chunk);
    if (file->content.size() < kHeadBytes && !chunk.empty()) return;
    *keep_bytes = keep_(file->name, std::string_view(file->content).substr(0, kHeadBytes));
    *decided = true;
    if (static_cast<int64_t>(file->content.size()) > *keep_bytes) {
      file->content.resize(static_cast<size_t>(*keep_bytes));
      file->truncated = true;
    }
    return;
  }
  int64_t room = *keep_bytes - static_cast<int64_t>(file->content.size());
  if (static_cast<int64_t>(chunk.size()) > room) file->truncated = true;
  file->content.append(chunk.substr(0, static_cast<size_t>(std::max<int64_t>(room, 0))));
}

bool Scanner::CountBytes(const std::string& name, int64_t entry_bytes, int64_t n) {
  scan_.total_bytes += n;
  if (entry_bytes + n > limits_.max_entry_bytes) {
    Abort("entry-too-large", name,
          "more than " + std::to_string(limits_.max_entry_bytes) + " bytes uncompressed");
    return false;
  }
  if (scan_.total_bytes > limits_.max_total_bytes) {
    Abort("total-too-large", name,
          "archive expands to more than " + std::to_string(limits_.max_total_bytes) + " bytes");
    return false;
  }
  return CheckRatio(name, entry_bytes + n);
}

// Two ratios, both from bytes actually produced: the whole archive's against its size on
// disk, and the current entry's against the compressed bytes libarchive consumed for it
// (which catches one bomb entry hidden among large incompressible files).
bool Scanner::CheckRatio(const std::string& name, int64_t entry_bytes) {
  const double limit = limits_.max_ratio;
  if (scan_.total_bytes > limits_.ratio_grace_bytes &&
      static_cast<double>(scan_.total_bytes) > limit * archive_bytes_) {
    Abort("compression-ratio", name,
          std::to_string(scan_.total_bytes) + " bytes expanded from a " +
              std::to_string(archive_bytes_) + "-byte archive exceeds ratio " +
              std::to_string(static_cast<int64_t>(limit)));
    return false;
  }
  int64_t consumed = std::max<int64_t>(archive_filter_bytes(a_, -1) - entry_start_, 1);
  if (entry_bytes > limits_.ratio_grace_bytes && static_cast<double>(entry_bytes) > limit * consumed) {
    Abort("compression-ratio", name,
          std::to_string(entry_bytes) + " bytes expanded from " + std::to_string(consumed) +
              " compressed bytes exceeds ratio " + std::to_string(static_cast<int64_t>(limit)));
    return false;
  }
  return true;
}

}  // namespace

std::string CheckEntryName(std::string_view name, std::string* rule) {
  *rule = "path-invalid";
  if (name.empty()) return "empty entry name";
  if (name.find('\0') != name.npos) return "NUL byte in entry name";
  if (name.find('\\') != name.npos) return "backslash in entry name";
  if (name[0] == '/' || (name.size() >= 2 && name[1] == ':')) {
    *rule = "path-absolute";
    return "absolute path";
  }
  for (std::string_view c : Components(name)) {
    if (c == "..") {
      *rule = "path-dotdot";
      return "'..' component";
    }
    if (c.empty() || c == ".") return "empty or '.' path component";
  }
  rule->clear();
  return "";
}

Result<ZipScan> ScanZip(const std::string& path, const ZipLimits& limits,
                        const KeepPolicy& keep, const FileHandler& handler) {
  Scanner scanner(limits, keep, handler);
  return scanner.Run(path);
}

}  // namespace farm::wheel
