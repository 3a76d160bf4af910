#include "tests/unit/common/archive/tar_builder.h"

#include <archive.h>
#include <archive_entry.h>

namespace farm::testing {

Status WriteTar(const std::string& path, const std::vector<TarEntrySpec>& entries,
                const std::string& filter) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (filter == "gzip") archive_write_add_filter_gzip(a);
  if (filter == "zstd") archive_write_add_filter_zstd(a);
  Status status;
  if (archive_write_open_filename(a, path.c_str()) != ARCHIVE_OK) {
    status = Status::Internal(archive_error_string(a));
  }
  for (const TarEntrySpec& spec : entries) {
    if (!status.ok()) break;
    archive_entry* e = archive_entry_new();
    archive_entry_copy_pathname(e, spec.name.c_str());
    archive_entry_set_mtime(e, spec.mtime, 0);
    archive_entry_set_perm(e, spec.mode);
    switch (spec.kind) {
      case TarEntrySpec::kFile:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(spec.content.size()));
        break;
      case TarEntrySpec::kDirectory:
        archive_entry_set_filetype(e, AE_IFDIR);
        break;
      case TarEntrySpec::kSymlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_copy_symlink(e, spec.target.c_str());
        break;
      case TarEntrySpec::kHardlink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_copy_hardlink(e, spec.target.c_str());
        break;
      case TarEntrySpec::kFifo:
        archive_entry_set_filetype(e, AE_IFIFO);
        break;
    }
    if (archive_write_header(a, e) < ARCHIVE_WARN) {
      status = Status::Internal(std::string("header: ") + archive_error_string(a));
    } else if (spec.kind == TarEntrySpec::kFile && !spec.content.empty() &&
               archive_write_data(a, spec.content.data(), spec.content.size()) < 0) {
      status = Status::Internal(std::string("data: ") + archive_error_string(a));
    }
    archive_entry_free(e);
  }
  if (archive_write_close(a) != ARCHIVE_OK && status.ok()) {
    status = Status::Internal(archive_error_string(a));
  }
  archive_write_free(a);
  return status;
}

}  // namespace farm::testing
