#include "common/wheel/relabel.h"

#include <archive.h>
#include <archive_entry.h>
#include <strings.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <vector>

#include "common/sha256.h"
#include "common/wheel/dist_info.h"
#include "common/wheel/wheel_name.h"

namespace farm::wheel {
namespace {

constexpr int64_t kMaxDistInfoBytes = int64_t{16} << 20;
constexpr size_t kChunk = 256 * 1024;
constexpr int kMaxEntries = 200'000;

std::string NoDot(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c != '.') out += c;
  }
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

using ReadHandle = std::unique_ptr<archive, int (*)(archive*)>;
using WriteHandle = std::unique_ptr<archive, int (*)(archive*)>;

Result<ReadHandle> OpenZip(const std::string& path) {
  ReadHandle a(archive_read_new(), archive_read_free);
  archive_read_support_format_zip_seekable(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 64 * 1024) != ARCHIVE_OK) {
    return Status::InvalidArgument(path + ": not a readable zip archive: " +
                                   archive_error_string(a.get()));
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

// The parts of the wheel the rewrite changes, read in a first pass.
struct DistInfo {
  std::string stem;  // "attn_example-0.1.0": the .dist-info directory without suffix
  std::string metadata;
  std::string record;
  bool has_metadata = false;
  bool has_record = false;
};

// Top-level "<stem>.dist-info" of `name`, or "".
std::string DistInfoStem(const std::string& name) {
  constexpr std::string_view kSuffix = ".dist-info";
  size_t slash = name.find('/');
  std::string top = slash == std::string::npos ? name : name.substr(0, slash);
  if (top.size() <= kSuffix.size() || !top.ends_with(kSuffix)) return "";
  return top.substr(0, top.size() - kSuffix.size());
}

Result<DistInfo> ReadDistInfo(const std::string& path) {
  FARM_ASSIGN_OR_RETURN(ReadHandle a, OpenZip(path));
  std::set<std::string> stems;
  DistInfo info;
  archive_entry* e = nullptr;
  for (int i = 0; i < kMaxEntries; ++i) {
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) return Status::DataLoss(path + ": " + archive_error_string(a.get()));
    std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    std::string stem = DistInfoStem(name);
    if (!stem.empty()) stems.insert(stem);
    bool is_metadata = !stem.empty() && name == stem + ".dist-info/METADATA";
    bool is_record = !stem.empty() && name == stem + ".dist-info/RECORD";
    if (!is_metadata && !is_record) continue;
    FARM_ASSIGN_OR_RETURN(std::string text, ReadAll(a.get(), name, kMaxDistInfoBytes));
    (is_metadata ? info.metadata : info.record) = std::move(text);
    (is_metadata ? info.has_metadata : info.has_record) = true;
  }
  if (stems.size() != 1) {
    return Status::InvalidArgument(path + ": expected one top-level *.dist-info, found " +
                                   std::to_string(stems.size()));
  }
  info.stem = *stems.begin();
  if (!info.has_metadata || !info.has_record) {
    return Status::InvalidArgument(path + ": " + info.stem + ".dist-info lacks METADATA or RECORD");
  }
  return info;
}

// Replaces the value of the first "Version:" header; the body after the blank line and
// every other byte stay as they are.
Result<std::string> SetMetadataVersion(const std::string& metadata, const std::string& version) {
  size_t pos = 0;
  while (pos < metadata.size()) {
    size_t eol = metadata.find('\n', pos);
    size_t end = eol == std::string::npos ? metadata.size() : eol;
    std::string_view line(metadata.data() + pos, end - pos);
    if (line.empty() || line == "\r") break;  // end of the header block
    if (line.size() >= 8 && strncasecmp(line.data(), "Version:", 8) == 0) {
      size_t value_end = line.ends_with('\r') ? end - 1 : end;
      return metadata.substr(0, pos) + "Version: " + version + metadata.substr(value_end);
    }
    pos = end + 1;
  }
  return Status::InvalidArgument("METADATA has no Version header");
}

std::string CsvField(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Renames paths under the old .dist-info/.data directories to the new stem.
struct Renamer {
  std::string old_stem;
  std::string new_stem;
  std::string operator()(const std::string& name) const {
    for (const char* dir : {".dist-info", ".data"}) {
      std::string from = old_stem + dir;
      if (name == from || name.starts_with(from + "/")) {
        return new_stem + dir + name.substr(from.size());
      }
    }
    return name;
  }
};

Result<std::string> RewriteRecord(const std::string& record, const Renamer& rename,
                                  const std::string& metadata_path,
                                  const std::string& new_metadata) {
  FARM_ASSIGN_OR_RETURN(std::vector<RecordRow> rows, ParseRecord(record));
  const std::string record_path = rename.old_stem + ".dist-info/RECORD";
  std::string out;
  for (const RecordRow& row : rows) {
    std::string hash = row.hash;
    std::string size = row.size;
    if (row.path == metadata_path) {
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
  return out;
}

}  // namespace

bool IsValidLocalLabel(const std::string& label) {
  if (label.empty() || label.front() == '.' || label.back() == '.') return false;
  char prev = 0;
  for (char c : label) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.';
    if (!ok || (c == '.' && prev == '.')) return false;
    prev = c;
  }
  return true;
}

std::map<std::string, std::string> CellLabelVars(const std::string& python,
                                                 const std::string& torch,
                                                 const std::string& cuda,
                                                 const std::string& platform) {
  return {{"python", python},        {"python_nodot", NoDot(python)},
          {"torch", torch},          {"torch_nodot", NoDot(torch)},
          {"cuda", cuda},            {"cuda_nodot", NoDot(cuda)},
          {"cuda_major", cuda.substr(0, cuda.find('.'))},
          {"platform", platform}};
}

Result<std::string> RenderLocalLabel(const std::string& label_template,
                                     const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < label_template.size(); ++i) {
    if (label_template[i] != '{') {
      out += label_template[i];
      continue;
    }
    size_t close = label_template.find('}', i);
    if (close == std::string::npos) {
      return Status::InvalidArgument("local version template \"" + label_template +
                                     "\": unterminated '{'");
    }
    std::string key = label_template.substr(i + 1, close - i - 1);
    auto it = vars.find(key);
    if (it == vars.end()) {
      return Status::InvalidArgument("local version template \"" + label_template +
                                     "\": unknown placeholder {" + key + "}");
    }
    out += it->second;
    i = close;
  }
  for (char& c : out) c = (c == '-' || c == '_') ? '.' : c;
  out = Lower(out);
  if (!out.empty() && !IsValidLocalLabel(out)) {
    return Status::InvalidArgument("local version template \"" + label_template + "\" gives \"" +
                                   out + "\", which is not a PEP 440 local label");
  }
  return out;
}

std::string WithLocalLabel(const std::string& version, const std::string& label) {
  std::string public_version = version.substr(0, version.find('+'));
  return label.empty() ? public_version : public_version + "+" + label;
}

namespace {

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

Status WriteRelabelled(const std::string& in_path, const std::string& out_path,
                       const Renamer& rename, const std::string& metadata,
                       const std::string& record) {
  FARM_ASSIGN_OR_RETURN(ReadHandle in, OpenZip(in_path));
  WriteHandle out(archive_write_new(), archive_write_free);
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
    const std::string* replacement =
        name == metadata_path ? &metadata : name == record_path ? &record : nullptr;
    FARM_RETURN_IF_ERROR(CopyEntry(in.get(), e, out.get(), rename(name), replacement));
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) {
    return Status::Internal(out_path + ": " + archive_error_string(out.get()));
  }
  return Status::Ok();
}

}  // namespace

Result<RelabelResult> RelabelWheel(const std::string& in_path, const std::string& label,
                                   const std::string& out_dir) {
  if (!label.empty() && !IsValidLocalLabel(label)) {
    return Status::InvalidArgument("\"" + label + "\" is not a PEP 440 local label");
  }
  FARM_ASSIGN_OR_RETURN(WheelFilename fn, ParseWheelFilename(in_path));
  FARM_ASSIGN_OR_RETURN(DistInfo info, ReadDistInfo(in_path));
  auto version = FindHeader(ParseHeaders(info.metadata), "Version");
  if (!version) return Status::InvalidArgument(in_path + ": METADATA has no Version");
  const std::string new_version = WithLocalLabel(*version, label);
  RelabelResult result{in_path, std::filesystem::path(in_path).filename().string(), new_version,
                       false};
  if (NormalizeVersion(new_version) == NormalizeVersion(*version) &&
      NormalizeVersion(new_version) == NormalizeVersion(fn.version)) {
    return result;
  }
  const std::string dist = info.stem.substr(0, info.stem.find('-'));
  Renamer rename{info.stem, dist + "-" + new_version};
  FARM_ASSIGN_OR_RETURN(std::string metadata, SetMetadataVersion(info.metadata, new_version));
  FARM_ASSIGN_OR_RETURN(std::string record,
                        RewriteRecord(info.record, rename, info.stem + ".dist-info/METADATA",
                                      metadata));
  result.filename = fn.name + "-" + new_version + (fn.build_tag.empty() ? "" : "-" + fn.build_tag) +
                    "-" + fn.python_tag + "-" + fn.abi_tag + "-" + fn.platform_tag + ".whl";
  result.path = out_dir + "/" + result.filename;
  result.rewritten = true;
  const std::string tmp = result.path + ".tmp-" + RandomHex(4);
  Status written = WriteRelabelled(in_path, tmp, rename, metadata, record);
  std::error_code ec;
  if (written.ok()) std::filesystem::rename(tmp, result.path, ec);
  if (!written.ok() || ec) {
    std::filesystem::remove(tmp, ec);
    return written.ok() ? Status::Internal("renaming " + tmp + ": " + ec.message()) : written;
  }
  return result;
}

}  // namespace farm::wheel
