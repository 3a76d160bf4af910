#include "common/wheel/wheel_rewrite.h"

#include <archive.h>
#include <archive_entry.h>

#include <filesystem>
#include <memory>
#include <set>
#include <vector>

#include "common/archive/entry_rules.h"
#include "common/sha256.h"
#include "common/wheel/metadata/dist_info.h"

namespace farm::wheel {
namespace {

constexpr size_t kChunk = 256 * 1024;
constexpr int kMaxEntries = 200'000;

using ArchiveHandle = std::unique_ptr<archive, int (*)(archive*)>;

Result<ArchiveHandle> OpenZip(const std::string& path) {
  ArchiveHandle a(archive_read_new(), archive_read_free);
  archive_read_support_format_zip_seekable(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 64 * 1024) != ARCHIVE_OK) {
    return Status::InvalidArgument(
        path + ": not a readable zip archive: " + archive_error_string(a.get()));
  }
  return a;
}

Result<std::string> ReadAll(archive* a, const std::string& name, int64_t limit) {
  std::string out;
  std::vector<char> buf(kChunk);
  for (;;) {
    la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
    if (n < 0) return Status::DataLoss(name + ": " + archive_error_string(a));
    if (n == 0) return out;
    out.append(buf.data(), static_cast<size_t>(n));
    if (static_cast<int64_t>(out.size()) > limit) {
      return Status::InvalidArgument(name + " is larger than " + std::to_string(limit) + " bytes");
    }
  }
}

// Top-level "<stem>.dist-info" of `name`, or "".
std::string DistInfoStem(const std::string& name) {
  constexpr std::string_view kSuffix = ".dist-info";
  size_t slash = name.find('/');
  std::string top = slash == std::string::npos ? name : name.substr(0, slash);
  if (top.size() <= kSuffix.size() || !top.ends_with(kSuffix)) return "";
  return top.substr(0, top.size() - kSuffix.size());
}

std::string CsvField(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Copies one entry (header and data) from `in` to `out` under `name`, with `replacement`
// as its content when non-null.
Status CopyEntry(archive* in, archive_entry* src, archive* out, const std::string& name,
                 const std::string* replacement) {
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(),
                                                             archive_entry_free);
  bool dir = archive_entry_filetype(src) == AE_IFDIR;
  archive_entry_set_pathname(e.get(), name.c_str());
  archive_entry_set_filetype(e.get(), dir ? AE_IFDIR : AE_IFREG);
  mode_t perm = archive_entry_perm(src);
  archive_entry_set_perm(e.get(), perm != 0 ? perm : (dir ? 0755 : 0644));
  archive_entry_set_mtime(e.get(), archive_entry_mtime(src), 0);
  int64_t size = replacement ? static_cast<int64_t>(replacement->size()) : archive_entry_size(src);
  if (!dir && !replacement && !archive_entry_size_is_set(src)) {
    return Status::InvalidArgument(name + ": size unknown");
  }
  if (!dir) archive_entry_set_size(e.get(), size);
  if (archive_write_header(out, e.get()) != ARCHIVE_OK) {
    return Status::Internal(name + ": " + archive_error_string(out));
  }
  if (dir) return Status::Ok();
  if (replacement) {
    if (archive_write_data(out, replacement->data(), replacement->size()) != size) {
      return Status::Internal(name + ": " + archive_error_string(out));
    }
    return Status::Ok();
  }
  std::vector<char> buf(kChunk);
  int64_t copied = 0;
  for (;;) {
    la_ssize_t n = archive_read_data(in, buf.data(), buf.size());
    if (n < 0) return Status::DataLoss(name + ": " + archive_error_string(in));
    if (n == 0) break;
    copied += n;
    if (copied > size) break;
    if (archive_write_data(out, buf.data(), static_cast<size_t>(n)) != n) {
      return Status::Internal(name + ": " + archive_error_string(out));
    }
  }
  if (copied != size) {
    return Status::DataLoss(name + ": header says " + std::to_string(size) + " bytes, data has " +
                            (copied > size ? "more" : std::to_string(copied)));
  }
  return Status::Ok();
}

// A new regular file: mode 0644, the mtime of the entry it is written beside (the output
// stays deterministic).
Status WriteAdded(archive* out, const AddedEntry& added, time_t mtime) {
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(),
                                                             archive_entry_free);
  archive_entry_set_pathname(e.get(), added.name.c_str());
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_perm(e.get(), 0644);
  archive_entry_set_mtime(e.get(), mtime, 0);
  archive_entry_set_size(e.get(), static_cast<int64_t>(added.content.size()));
  if (archive_write_header(out, e.get()) != ARCHIVE_OK ||
      archive_write_data(out, added.content.data(), added.content.size()) !=
          static_cast<la_ssize_t>(added.content.size())) {
    return Status::Internal(added.name + ": " + archive_error_string(out));
  }
  return Status::Ok();
}

Status WriteEntries(const std::string& in_path, const std::string& out_path,
                    const DistInfoRenamer& rename, const std::string& metadata,
                    const std::string& record, const std::vector<AddedEntry>& added) {
  FARM_ASSIGN_OR_RETURN(ArchiveHandle in, OpenZip(in_path));
  ArchiveHandle out(archive_write_new(), archive_write_free);
  archive_write_set_format_zip(out.get());
  archive_write_set_format_option(out.get(), "zip", "compression", "deflate");
  if (archive_write_open_filename(out.get(), out_path.c_str()) != ARCHIVE_OK) {
    return Status::Internal(out_path + ": " + archive_error_string(out.get()));
  }
  const std::string metadata_path = rename.old_stem + ".dist-info/METADATA";
  const std::string record_path = rename.old_stem + ".dist-info/RECORD";
  archive_entry* e = nullptr;
  for (int i = 0; i < kMaxEntries; ++i) {
    int r = archive_read_next_header(in.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) return Status::DataLoss(in_path + ": " + archive_error_string(in.get()));
    std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    const std::string* replacement = name == metadata_path ? &metadata
                                     : name == record_path ? &record
                                                           : nullptr;
    if (name == record_path) {
      for (const AddedEntry& a : added) {
        FARM_RETURN_IF_ERROR(WriteAdded(out.get(), a, archive_entry_mtime(e)));
      }
    }
    FARM_RETURN_IF_ERROR(CopyEntry(in.get(), e, out.get(), rename(name), replacement));
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) {
    return Status::Internal(out_path + ": " + archive_error_string(out.get()));
  }
  return Status::Ok();
}

}  // namespace

Result<DistInfoText> ReadDistInfoText(const std::string& path) {
  FARM_ASSIGN_OR_RETURN(ArchiveHandle a, OpenZip(path));
  std::set<std::string> stems;
  std::set<std::string> names;
  DistInfoText info;
  bool has_metadata = false;
  bool has_record = false;
  archive_entry* e = nullptr;
  for (int i = 0;; ++i) {
    if (i == kMaxEntries) {
      return Status::InvalidArgument(path + ": more than " + std::to_string(kMaxEntries) +
                                     " entries");
    }
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) return Status::DataLoss(path + ": " + archive_error_string(a.get()));
    std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    if (!names.insert(name).second) {
      return Status::InvalidArgument(path + ": the entry \"" + name.substr(0, 200) +
                                     "\" appears more than once");
    }
    std::string stem = DistInfoStem(name);
    if (!stem.empty()) stems.insert(stem);
    bool is_metadata = !stem.empty() && name == stem + ".dist-info/METADATA";
    bool is_record = !stem.empty() && name == stem + ".dist-info/RECORD";
    if (!is_metadata && !is_record) continue;
    FARM_ASSIGN_OR_RETURN(std::string text, ReadAll(a.get(), name, kMaxDistInfoBytes));
    (is_metadata ? info.metadata : info.record) = std::move(text);
    (is_metadata ? has_metadata : has_record) = true;
  }
  if (stems.size() != 1) {
    return Status::InvalidArgument(path + ": expected one top-level *.dist-info, found " +
                                   std::to_string(stems.size()));
  }
  info.stem = *stems.begin();
  if (!has_metadata || !has_record) {
    return Status::InvalidArgument(path + ": " + info.stem + ".dist-info lacks METADATA or RECORD");
  }
  return info;
}

std::string DistInfoRenamer::operator()(const std::string& name) const {
  for (const char* dir : {".dist-info", ".data"}) {
    std::string from = old_stem + dir;
    if (name == from || name.starts_with(from + "/")) {
      return new_stem + dir + name.substr(from.size());
    }
  }
  return name;
}

Result<std::string> RewriteRecord(const std::string& record, const DistInfoRenamer& rename,
                                  const std::string& new_metadata) {
  FARM_ASSIGN_OR_RETURN(std::vector<RecordRow> rows, ParseRecord(record));
  const std::string metadata_path = rename.old_stem + ".dist-info/METADATA";
  const std::string record_path = rename.old_stem + ".dist-info/RECORD";
  std::string out;
  int metadata_rows = 0;
  for (const RecordRow& row : rows) {
    std::string rule;
    std::string why = archives::CheckEntryName(row.path, &rule);
    if (!why.empty()) {
      return Status::InvalidArgument("RECORD line " + std::to_string(row.line) + " names \"" +
                                     row.path.substr(0, 200) + "\", outside the wheel: " + why);
    }
    std::string hash = row.hash;
    std::string size = row.size;
    if (row.path == metadata_path) {
      ++metadata_rows;
      Sha256 hasher;
      hasher.Update(new_metadata);
      hash = "sha256=" + Base64UrlNoPad(hasher.Digest());
      size = std::to_string(new_metadata.size());
    } else if (row.path == record_path) {
      hash.clear();
      size.clear();
    }
    out += CsvField(rename(row.path)) + "," + CsvField(hash) + "," + CsvField(size) + "\n";
  }
  if (metadata_rows != 1) {
    return Status::InvalidArgument("RECORD lists " + metadata_path + " " +
                                   std::to_string(metadata_rows) + " times; expected once");
  }
  return out;
}

Status WriteRewrittenWheel(const std::string& in_path, const std::string& out_path,
                           const DistInfoRenamer& rename, const std::string& metadata,
                           const std::string& record) {
  return WriteRewrittenWheel(in_path, out_path, rename, metadata, record, {});
}

Status WriteRewrittenWheel(const std::string& in_path, const std::string& out_path,
                           const DistInfoRenamer& rename, const std::string& metadata,
                           const std::string& record, const std::vector<AddedEntry>& added) {
  const std::string tmp = out_path + ".tmp-" + RandomHex(4);
  Status written = WriteEntries(in_path, tmp, rename, metadata, record, added);
  std::error_code ec;
  if (written.ok()) std::filesystem::rename(tmp, out_path, ec);
  if (!written.ok() || ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return written.ok() ? Status::Internal("renaming " + tmp + ": " + ec.message()) : written;
  }
  return Status::Ok();
}

}  // namespace farm::wheel
