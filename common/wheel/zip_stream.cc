#include "common/wheel/zip_stream.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <optional>
#include <unordered_set>

#include "common/sha256.h"

namespace farm::wheel {
namespace {

constexpr size_t kHeadBytes = 64;
constexpr size_t kChunkBytes = 64 * 1024;

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
  // Aborts on a broken rule; returns whether the scan may go on.
  bool Within(const archives::Violation& v, const std::string& entry) {
    if (!v.ok()) Abort(v.rule, entry, v.detail);
    return v.ok();
  }
  // Returns false when the scan must stop.
  bool VisitEntry(archive_entry* e);
  bool AcceptKind(archive_entry* e, const std::string& name);
  bool ReadFile(const std::string& name);
  void Keep(ZipFile* file, std::string_view chunk, bool* decided, int64_t* keep_bytes);

  const ZipLimits& limits_;
  const KeepPolicy& keep_;
  const FileHandler& handler_;
  std::vector<char> buf_;
  archive* a_ = nullptr;
  std::optional<archives::Budget> budget_;
  std::unordered_set<std::string> seen_;
  ZipScan scan_;
};

Result<ZipScan> Scanner::Run(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::NotFound("cannot open wheel " + path);
  }
  budget_.emplace(limits_, st.st_size);
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
  scan_.entries = budget_->entries();
  scan_.total_bytes = budget_->total_bytes();
  return std::move(scan_);
}

bool Scanner::VisitEntry(archive_entry* e) {
  if (!Within(budget_->CountEntry(), "")) return false;
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
  std::string why = archives::CheckEntryName(key, &rule);
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
           archives::LinkEscapesTree(name, target)
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
  budget_->BeginEntry(archive_filter_bytes(a_, -1));
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
    if (!Within(budget_->CountBytes(file.size, n, archive_filter_bytes(a_, -1)), name)) {
      return false;
    }
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

}  // namespace

Result<ZipScan> ScanZip(const std::string& path, const ZipLimits& limits, const KeepPolicy& keep,
                        const FileHandler& handler) {
  Scanner scanner(limits, keep, handler);
  return scanner.Run(path);
}

}  // namespace farm::wheel
