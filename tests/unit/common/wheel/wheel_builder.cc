#include "tests/unit/common/wheel/wheel_builder.h"

#include <archive.h>
#include <archive_entry.h>

#include <memory>

#include "common/sha256.h"
#include "common/wheel/metadata/dist_info.h"

namespace farm::wheel::testing {
namespace {

Status WriteEntry(archive* a, const ZipEntrySpec& spec) {
  std::unique_ptr<archive_entry, decltype(&archive_entry_free)> e(archive_entry_new(),
                                                                  &archive_entry_free);
  archive_entry_set_pathname(e.get(), spec.name.c_str());
  archive_entry_set_mtime(e.get(), 1'700'000'000, 0);
  if (spec.type == ZipEntrySpec::Type::kSymlink) {
    archive_entry_set_filetype(e.get(), AE_IFLNK);
    archive_entry_set_perm(e.get(), 0777);
    archive_entry_set_symlink(e.get(), spec.link_target.c_str());
    archive_entry_set_size(e.get(), 0);
  } else if (spec.type == ZipEntrySpec::Type::kDirectory) {
    archive_entry_set_filetype(e.get(), AE_IFDIR);
    archive_entry_set_perm(e.get(), 0755);
    archive_entry_set_size(e.get(), 0);
  } else {
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(spec.content.size()));
  }
  if (archive_write_header(a, e.get()) != ARCHIVE_OK) {
    return Status::Internal("write header " + spec.name + ": " + archive_error_string(a));
  }
  if (spec.type == ZipEntrySpec::Type::kFile && !spec.content.empty() &&
      archive_write_data(a, spec.content.data(), spec.content.size()) < 0) {
    return Status::Internal("write data " + spec.name + ": " + archive_error_string(a));
  }
  return Status::Ok();
}

}  // namespace

Status WriteZip(const std::string& path, const std::vector<ZipEntrySpec>& entries) {
  std::unique_ptr<archive, decltype(&archive_write_free)> a(archive_write_new(),
                                                            &archive_write_free);
  archive_write_set_format_zip(a.get());
  if (archive_write_open_filename(a.get(), path.c_str()) != ARCHIVE_OK) {
    return Status::Internal("open " + path + ": " + archive_error_string(a.get()));
  }
  for (const ZipEntrySpec& spec : entries) FARM_RETURN_IF_ERROR(WriteEntry(a.get(), spec));
  if (archive_write_close(a.get()) != ARCHIVE_OK) {
    return Status::Internal("close " + path + ": " + archive_error_string(a.get()));
  }
  return Status::Ok();
}

std::string RecordHash(const std::string& content) {
  Sha256 h;
  h.Update(content);
  return "sha256=" + Base64UrlNoPad(h.Digest());
}

std::string RecordRow(const std::string& path, const std::string& content) {
  std::string quoted = path;
  if (path.find_first_of(",\"\n") != std::string::npos) {
    quoted = "\"";
    for (char c : path) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    quoted += "\"";
  }
  return quoted + "," + RecordHash(content) + "," + std::to_string(content.size());
}

Result<std::string> WriteWheel(const std::string& dir, const WheelSpec& spec) {
  std::vector<ZipEntrySpec> entries = spec.files;
  entries.push_back({spec.dist_info + "/METADATA", spec.metadata});
  entries.push_back({spec.dist_info + "/WHEEL", spec.wheel});
  std::string record;
  for (const ZipEntrySpec& e : entries) {
    if (e.type == ZipEntrySpec::Type::kFile) record += RecordRow(e.name, e.content) + "\n";
  }
  record += spec.dist_info + "/RECORD,,\n";
  if (spec.edit_record) spec.edit_record(&record);
  entries.push_back({spec.dist_info + "/RECORD", record});
  for (const ZipEntrySpec& e : spec.unlisted) entries.push_back(e);
  std::string path = dir + "/" + spec.filename;
  FARM_RETURN_IF_ERROR(WriteZip(path, entries));
  return path;
}

std::string AllProblems(const WheelReport& r) {
  std::string out;
  for (const Problem& p : r.problems) out += p.ToString() + "\n";
  return out;
}

}  // namespace farm::wheel::testing
