#include "common/archive/source_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "common/fs.h"

namespace farm::archives {
namespace {

constexpr size_t kChunkBytes = 256 * 1024;
constexpr int kMaxLinkFollows = 40;

Status Broken(const std::string& rule, const std::string& entry, const std::string& detail) {
  return Status::InvalidArgument(rule + ": " + (entry.empty() ? "" : entry + ": ") + detail);
}

// "./a/./b" -> "a/./b": tar -C DIR . stores every name under "./".
std::string DropDotSlash(std::string name) {
  size_t i = 0;
  while (name.compare(i, 2, "./") == 0) i += 2;
  return name.substr(i);
}

// The file handed to libarchive through callbacks, so that every byte read can also go to
// a hasher (the archive's sha256 in the same pass).
struct RawFile {
  FILE* file = nullptr;
  Sha256* raw = nullptr;
  std::vector<char> buf = std::vector<char>(kChunkBytes);
};

la_ssize_t ReadRaw(archive* a, void* data, const void** out) {
  auto* r = static_cast<RawFile*>(data);
  size_t n = fread(r->buf.data(), 1, r->buf.size(), r->file);
  if (n == 0 && ferror(r->file)) {
    archive_set_error(a, EIO, "read error");
    return -1;
  }
  if (r->raw != nullptr && n > 0) r->raw->Update(std::string_view(r->buf.data(), n));
  *out = r->buf.data();
  return static_cast<la_ssize_t>(n);
}

// Only the decompressors built into libarchive: a filter it lacks would run an external
// program on bytes from outside.
void SupportFilters(archive* a) {
  archive_read_support_format_tar(a);
  if (archive_zlib_version() != nullptr) archive_read_support_filter_gzip(a);
  if (archive_bzlib_version() != nullptr) archive_read_support_filter_bzip2(a);
  if (archive_liblzma_version() != nullptr) archive_read_support_filter_xz(a);
  if (archive_libzstd_version() != nullptr) archive_read_support_filter_zstd(a);
}

std::string ErrorOf(archive* a, const char* fallback) {
  const char* err = archive_error_string(a);
  return err != nullptr ? err : fallback;
}

class Reader {
 public:
  // `dest` empty: check only.
  Reader(const Limits& limits, std::string dest) : limits_(limits), dest_(std::move(dest)) {}
  ~Reader() {
    if (in_ != nullptr) archive_read_free(in_);
    if (disk_ != nullptr) archive_write_free(disk_);
    if (raw_.file != nullptr) fclose(raw_.file);
  }

  Result<SourceListing> Run(const std::string& path, Sha256* raw);

 private:
  Status Open(const std::string& path, Sha256* raw);
  Status Visit(archive_entry* e);
  Status Place(const std::string& name, unsigned type);
  Status ReadData(const std::string& name, bool write);
  Status Write(archive_entry* e, const std::string& name);
  Status CheckLinks() const;
  bool Escapes(std::vector<std::string>& at, std::string_view target, int* follows) const;

  const Limits& limits_;
  std::string dest_;
  RawFile raw_;
  archive* in_ = nullptr;
  archive* disk_ = nullptr;
  std::optional<Budget> budget_;
  std::vector<char> buf_ = std::vector<char>(kChunkBytes);
  std::set<std::string> dirs_;                // named or implied by a deeper entry
  std::set<std::string> files_;               // regular files: what a hard link may name
  std::map<std::string, std::string> links_;  // symlink -> target
  SourceListing listing_;
};

Status Reader::Open(const std::string& path, Sha256* raw) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::NotFound("cannot open source archive " + path);
  }
  raw_.file = fopen(path.c_str(), "rb");
  if (raw_.file == nullptr) return Status::NotFound("cannot open source archive " + path);
  raw_.raw = raw;
  budget_.emplace(limits_, st.st_size);
  in_ = archive_read_new();
  SupportFilters(in_);
  if (archive_read_open(in_, &raw_, nullptr, ReadRaw, nullptr) != ARCHIVE_OK) {
    return Status::InvalidArgument("not a tar archive (plain, gzip, bzip2, xz or zstd): " +
                                   ErrorOf(in_, "unreadable"));
  }
  if (!dest_.empty()) {
    FARM_RETURN_IF_ERROR(fs::MakeDirs(dest_));
    std::error_code ec;
    // libarchive refuses to extract through symlinks, those of dest's own path included:
    // work below its real path.
    dest_ = std::filesystem::canonical(dest_, ec).string();
    if (ec) return Status::Internal("cannot resolve " + dest_ + ": " + ec.message());
    if (!std::filesystem::is_empty(dest_, ec)) {
      return Status::FailedPrecondition(dest_ + " is not empty");
    }
    disk_ = archive_write_disk_new();
    archive_write_disk_set_options(disk_, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                              ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  }
  return Status::Ok();
}

Result<SourceListing> Reader::Run(const std::string& path, Sha256* raw) {
  FARM_RETURN_IF_ERROR(Open(path, raw));
  for (;;) {
    archive_entry* e = nullptr;
    int rc = archive_read_next_header(in_, &e);
    if (rc == ARCHIVE_EOF) break;
    if (rc < ARCHIVE_WARN) {
      std::string why = ErrorOf(in_, "unreadable entry header");
      if (budget_->entries() == 0) {
        return Status::InvalidArgument("not a tar archive (plain, gzip, bzip2, xz or zstd): " +
                                       why);
      }
      return Broken("archive-corrupt", "", why);
    }
    FARM_RETURN_IF_ERROR(Visit(e));
  }
  FARM_RETURN_IF_ERROR(CheckLinks());
  if (disk_ != nullptr && archive_write_close(disk_) != ARCHIVE_OK) {
    return Status::Internal("finishing the unpacked tree: " + ErrorOf(disk_, "write error"));
  }
  if (raw != nullptr) {  // bytes after the end-of-archive blocks belong to the file too
    for (size_t n; (n = fread(raw_.buf.data(), 1, raw_.buf.size(), raw_.file)) > 0;) {
      raw->Update(std::string_view(raw_.buf.data(), n));
    }
  }
  listing_.entries = budget_->entries();
  listing_.total_bytes = budget_->total_bytes();
  return std::move(listing_);
}

Status Reader::Visit(archive_entry* e) {
  if (Violation v = budget_->CountEntry(); !v.ok()) return Broken(v.rule, "", v.detail);
  const char* raw_name = archive_entry_pathname(e);
  std::string stored = raw_name != nullptr ? raw_name : "";
  std::string name = DropDotSlash(stored);
  unsigned type = archive_entry_filetype(e);
  if (type == AE_IFDIR) {
    while (!name.empty() && name.back() == '/') name.pop_back();
    if (name.empty() || name == ".") return Status::Ok();  // the root itself
  }
  if (static_cast<int64_t>(name.size()) > limits_.max_name_bytes) {
    return Broken("path-invalid", name.substr(0, 64) + "...",
                  "name longer than " + std::to_string(limits_.max_name_bytes) + " bytes");
  }
  std::string rule;
  if (std::string why = CheckEntryName(name, &rule); !why.empty()) {
    return Broken(rule, stored, why);
  }
  const char* hard = archive_entry_hardlink(e);
  if (hard != nullptr) type = AE_IFREG;
  if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
    return Broken("special-file", name, "entry is neither a file, a directory nor a link");
  }
  FARM_RETURN_IF_ERROR(Place(name, type));
  if (hard != nullptr) {
    std::string target = DropDotSlash(hard);
    if (!CheckEntryName(target, &rule).empty() || !files_.contains(target)) {
      return Broken(
          "hardlink", name,
          "hard link to '" + std::string(hard) + "', which is no earlier file of the archive");
    }
    if (disk_ != nullptr) archive_entry_set_hardlink(e, (dest_ + "/" + target).c_str());
  }
  if (type == AE_IFLNK) {
    const char* t = archive_entry_symlink(e);
    std::string target = t != nullptr ? t : "";
    if (LinkEscapesTree(name, target)) {
      return Broken("symlink", name, "symlink to '" + target + "' points out of the tree");
    }
    links_[name] = target;
    listing_.names.push_back(name);
  } else if (type == AE_IFREG) {
    files_.insert(name);
    listing_.files++;
    listing_.names.push_back(name);
  }
  if (disk_ != nullptr) FARM_RETURN_IF_ERROR(Write(e, name));
  if (type == AE_IFREG) return ReadData(name, disk_ != nullptr);
  return Status::Ok();
}

// Records `name` in the tree: unique, and below no link and no file.
Status Reader::Place(const std::string& name, unsigned type) {
  for (size_t slash = name.find('/'); slash != std::string::npos;
       slash = name.find('/', slash + 1)) {
    std::string parent = name.substr(0, slash);
    if (links_.contains(parent)) {
      return Broken("path-through-link", name, "'" + parent + "' is a symlink of the archive");
    }
    if (files_.contains(parent)) {
      return Broken("duplicate-entry", name, "'" + parent + "' is a file of the archive");
    }
    dirs_.insert(parent);
  }
  bool taken = files_.contains(name) || links_.contains(name);
  if (type != AE_IFDIR) taken = taken || dirs_.contains(name);
  if (taken) return Broken("duplicate-entry", name, "the name appears more than once");
  if (type == AE_IFDIR) dirs_.insert(name);
  return Status::Ok();
}

// The entry as it goes to disk: below dest, plain permissions, no owner, ACL, xattr or
// file flags.
Status Reader::Write(archive_entry* e, const std::string& name) {
  unsigned type = archive_entry_filetype(e);
  mode_t perm = type == AE_IFDIR                      ? 0755
                : type == AE_IFLNK                    ? 0777
                : (archive_entry_perm(e) & 0111) != 0 ? 0755
                                                      : 0644;
  archive_entry_set_perm(e, perm);
  archive_entry_acl_clear(e);
  archive_entry_xattr_clear(e);
  archive_entry_set_fflags(e, 0, 0);
  archive_entry_set_pathname(e, (dest_ + "/" + name).c_str());
  if (archive_write_header(disk_, e) < ARCHIVE_WARN) {
    return Status::Internal("unpacking " + name + ": " + ErrorOf(disk_, "write error"));
  }
  return Status::Ok();
}

Status Reader::ReadData(const std::string& name, bool write) {
  budget_->BeginEntry(archive_filter_bytes(in_, -1));
  int64_t entry_bytes = 0;
  for (;;) {
    la_ssize_t n = archive_read_data(in_, buf_.data(), buf_.size());
    if (n < 0) return Broken("archive-corrupt", name, ErrorOf(in_, "unreadable entry data"));
    if (n == 0) break;
    Violation v = budget_->CountBytes(entry_bytes, n, archive_filter_bytes(in_, -1));
    if (!v.ok()) return Broken(v.rule, name, v.detail);
    entry_bytes += n;
    if (write && archive_write_data(disk_, buf_.data(), static_cast<size_t>(n)) != n) {
      return Status::Internal("unpacking " + name + ": " + ErrorOf(disk_, "write error"));
    }
  }
  if (write && archive_write_finish_entry(disk_) < ARCHIVE_WARN) {
    return Status::Internal("unpacking " + name + ": " + ErrorOf(disk_, "write error"));
  }
  return Status::Ok();
}

// Follows `target` from directory `at` (components below the root) through the archive's
// own links, as the file system will once the tree is unpacked. True when the walk leaves
// the root or follows more than kMaxLinkFollows links (a loop).
bool Reader::Escapes(std::vector<std::string>& at, std::string_view target, int* follows) const {
  for (std::string_view c : PathComponents(target)) {
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (at.empty()) return true;
      at.pop_back();
      continue;
    }
    at.emplace_back(c);
    std::string joined;
    for (const std::string& part : at) joined += (joined.empty() ? "" : "/") + part;
    auto link = links_.find(joined);
    if (link == links_.end()) continue;
    if (++*follows > kMaxLinkFollows) return true;
    at.pop_back();
    if (Escapes(at, link->second, follows)) return true;
  }
  return false;
}

Status Reader::CheckLinks() const {
  for (const auto& [name, target] : links_) {
    std::vector<std::string> at;
    for (std::string_view c : PathComponents(name)) at.emplace_back(c);
    at.pop_back();
    int follows = 0;
    if (Escapes(at, target, &follows)) {
      return Broken("symlink", name,
                    "symlink to '" + target + "' leads out of the tree through other links" +
                        (follows > kMaxLinkFollows ? " (or loops)" : ""));
    }
  }
  return Status::Ok();
}

}  // namespace

Limits SourceArchiveLimits() {
  Limits limits;
  limits.max_entries = 500'000;
  limits.max_entry_bytes = int64_t{8} << 30;
  limits.max_total_bytes = int64_t{32} << 30;
  return limits;
}

Result<SourceListing> ScanSourceArchive(const std::string& path, const Limits& limits,
                                        Sha256* raw) {
  return Reader(limits, "").Run(path, raw);
}

Result<SourceListing> ExtractSourceArchive(const std::string& path, const std::string& dest,
                                           const Limits& limits) {
  if (dest.empty()) return Status::InvalidArgument("no destination to unpack into");
  return Reader(limits, dest).Run(path, nullptr);
}

}  // namespace farm::archives
