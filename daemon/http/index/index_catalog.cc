#include "daemon/http/index/index_catalog.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/sha256.h"
#include "common/strings.h"
#include "common/wheel/identity.h"
#include "common/wheel/wheel_name.h"
#include "daemon/http/rest/api.h"
#include "daemon/model/convert.h"
#include "farm/v1/types.pb.h"

namespace farm::http {
namespace {

constexpr int64_t kMaxMetadataBytes = 4 << 20;
constexpr int kMaxIndexArtifacts = 1'000'000;
constexpr size_t kMaxCachedMetadata = 20'000;
constexpr int kMaxRefusedTorches = 100'000;

// True for "<one dir>.dist-info/METADATA" at the top of the archive.
bool IsMetadataEntry(std::string_view name) {
  constexpr std::string_view kSuffix = ".dist-info/METADATA";
  if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return false;
  return name.substr(0, name.size() - kSuffix.size()).find('/') == std::string_view::npos;
}

Result<std::string> ReadEntry(archive* a, std::string_view name) {
  std::string out;
  char buf[64 * 1024];
  for (;;) {
    la_ssize_t n = archive_read_data(a, buf, sizeof(buf));
    if (n < 0)
      return Status::DataLoss(std::string("reading ") + std::string(name) + ": " +
                              archive_error_string(a));
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
    if (static_cast<int64_t>(out.size()) > kMaxMetadataBytes) {
      return Status::ResourceExhausted("METADATA larger than 4 MiB");
    }
  }
}

}  // namespace

bool IndexListable(const std::string& validation_blob, bool include_pending) {
  auto report = model::ParseBlob<farm::v1::ValidationReport>(validation_blob);
  if (report.state() == farm::v1::VALIDATION_PASSED) return true;
  return include_pending && report.state() == farm::v1::VALIDATION_PENDING_HARDWARE;
}

Result<std::pair<std::string, std::string>> WheelNameVersion(std::string_view filename) {
  if (!filename.ends_with(".whl") || filename.find('/') != std::string_view::npos) {
    return Status::InvalidArgument("not a wheel file name: " + std::string(filename));
  }
  std::string_view stem = filename.substr(0, filename.size() - 4);
  std::vector<std::string_view> parts;
  for (size_t pos = 0; parts.size() < 8;) {
    size_t dash = stem.find('-', pos);
    parts.push_back(stem.substr(pos, dash == stem.npos ? stem.npos : dash - pos));
    if (dash == stem.npos) break;
    pos = dash + 1;
  }
  if ((parts.size() != 5 && parts.size() != 6) ||
      std::any_of(parts.begin(), parts.end(), [](auto p) { return p.empty(); })) {
    return Status::InvalidArgument("not a wheel file name: " + std::string(filename));
  }
  return std::make_pair(std::string(parts[0]), std::string(parts[1]));
}

std::string RequiresPython(std::string_view metadata) {
  size_t pos = 0;
  while (pos < metadata.size()) {
    size_t eol = metadata.find('\n', pos);
    std::string_view line = metadata.substr(pos, eol == metadata.npos ? metadata.npos : eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // end of the headers
    constexpr std::string_view kKey = "requires-python:";
    if (line.size() >= kKey.size()) {
      if (AsciiLower(line.substr(0, kKey.size())) == kKey) {
        std::string_view v = line.substr(kKey.size());
        while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
        while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
        return std::string(v);
      }
    }
    if (eol == metadata.npos) break;
    pos = eol + 1;
  }
  return "";
}

Result<std::string> ReadWheelMetadata(const std::string& path) {
  std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), archive_read_free);
  if (!a) return Status::Internal("archive_read_new failed");
  archive_read_support_format_zip(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 64 * 1024) != ARCHIVE_OK) {
    return Status::DataLoss("cannot open wheel " + path + ": " + archive_error_string(a.get()));
  }
  archive_entry* entry = nullptr;
  for (int i = 0; i < 200'000; ++i) {
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      return Status::DataLoss("reading wheel " + path + ": " + archive_error_string(a.get()));
    }
    const char* name = archive_entry_pathname(entry);
    if (name != nullptr && IsMetadataEntry(name)) return ReadEntry(a.get(), name);
  }
  return Status::NotFound("no .dist-info/METADATA in " + path);
}

Status IndexCatalog::RefreshLocked() {
  int64_t gen = deps_.store->Generation();
  if (gen == generation_) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(auto rows, deps_.store->ListIndexArtifacts(kMaxIndexArtifacts));
  FARM_ASSIGN_OR_RETURN(auto refusals, deps_.store->ListRefusedTorches(kMaxRefusedTorches));
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> refused;  // by sha256
  for (auto& r : refusals) refused[r.sha256].emplace_back(r.torch, std::move(r.reason));
  std::vector<IndexFile> files;
  // (variant, file name) -> position in `files`: reused copies and rebuilds of one name
  // are one entry, the newest artifact (rows come in id order).
  std::map<std::pair<std::string, std::string>, size_t> seen;
  for (const auto& row : rows) {
    const auto& a = row.artifact;
    if (!IndexListable(a.validation, include_pending_)) continue;
    if (max_wheel_bytes_ > 0 && a.size > max_wheel_bytes_) continue;  // the index's own limit
    auto name = wheel::ParseWheelFilename(a.filename);
    if (!name.ok()) continue;
    if (!deps_.blobs->Contains(a.sha256)) continue;
    auto cell = model::ParseBlob<farm::v1::MatrixCell>(row.cell);
    IndexFile f{wheel::NormalizeProjectName(name->name),
                name->version,
                a.filename,
                a.sha256,
                a.size,
                a.created_ms,
                VariantOf(cell.cuda(), cell.torch()),
                a.job_id,
                cell.cuda(),
                cell.torch(),
                name->python_tag + "-" + name->abi_tag + "-" + name->platform_tag};
    auto manifest = model::ParseBlob<farm::v1::ArchManifest>(a.manifest);
    if (auto images = wheel::ManifestImages(manifest); images.ok()) f.images = std::move(*images);
    for (const auto& cc : manifest.runs_on()) {
      if (auto v = arch::ParseVersion(cc); v.ok()) f.runs_on.push_back(*v);
    }
    if (auto r = refused.find(f.sha256); r != refused.end()) f.refused_torches = r->second;
    f.release_candidate = row.release_candidate;
    auto [it, fresh] = seen.emplace(std::make_pair(f.variant, f.filename), files.size());
    if (fresh) {
      files.push_back(std::move(f));
    } else if (files[it->second].sha256 != f.sha256 &&
               (!f.release_candidate || files[it->second].release_candidate)) {
      // Labels keep a candidate's name apart from the final's; should a template not,
      // the final's bytes still win.
      files[it->second] = std::move(f);
    }
  }
  std::sort(files.begin(), files.end(), [](const IndexFile& x, const IndexFile& y) {
    return std::tie(x.project, x.filename, x.variant) < std::tie(y.project, y.filename, y.variant);
  });
  files_ = std::move(files);
  generation_ = gen;
  return Status::Ok();
}

Result<std::vector<IndexFile>> IndexCatalog::Files(const std::string& variant,
                                                   Candidates candidates) {
  std::lock_guard lock(mu_);
  FARM_RETURN_IF_ERROR(RefreshLocked());
  // What a final release's wheel supersedes: the candidates of its project, public version,
  // tags, CUDA and torch.
  auto key = [](const IndexFile& f) {
    return std::make_tuple(f.project, f.version.substr(0, f.version.find('+')), f.tags, f.cuda,
                           f.torch);
  };
  std::set<decltype(key(files_.front()))> finals;
  if (candidates == Candidates::kUnlessFinal) {
    for (const auto& f : files_) {
      if (!f.release_candidate) finals.insert(key(f));
    }
  }
  std::vector<IndexFile> out;
  std::map<std::string, size_t> names;  // the all-variant view lists a name once, the newest
  for (const auto& f : files_) {
    if (!variant.empty() && f.variant != variant) continue;
    if (f.release_candidate && (candidates == Candidates::kLeftOut || finals.count(key(f)) > 0)) {
      continue;
    }
    auto [it, fresh] = names.emplace(f.filename, out.size());
    if (fresh) {
      out.push_back(f);
    } else if (f.created_ms > out[it->second].created_ms) {
      out[it->second] = f;
    }
  }
  return out;
}

Result<IndexFile> IndexCatalog::Find(const std::string& sha256, const std::string& filename) {
  std::lock_guard lock(mu_);
  FARM_RETURN_IF_ERROR(RefreshLocked());
  for (const auto& f : files_) {
    if (f.sha256 == sha256 && f.filename == filename) return f;
  }
  return Status::NotFound("no listed file " + sha256 + "/" + filename);
}

Result<FileSource> IndexCatalog::Source(const IndexFile& file) {
  FileSource source;
  if (redirect_ttl_s_ > 0) {
    FARM_ASSIGN_OR_RETURN(source.url,
                          deps_.blobs->PresignedUrl(file.sha256, file.filename, redirect_ttl_s_));
  } else {
    FARM_ASSIGN_OR_RETURN(source.path, deps_.blobs->LocalPath(file.sha256));
  }
  return source;
}

Result<CoreMetadata> IndexCatalog::Metadata(const IndexFile& file) {
  {
    std::lock_guard lock(mu_);
    if (auto it = metadata_.find(file.sha256); it != metadata_.end()) return *it->second;
  }
  // Read outside the lock: a large wheel must not stall every other index request.
  FARM_ASSIGN_OR_RETURN(std::string path, deps_.blobs->LocalPath(file.sha256));
  FARM_ASSIGN_OR_RETURN(std::string text, ReadWheelMetadata(path));
  auto md = std::make_shared<CoreMetadata>();
  md->sha256 = Sha256Hex(text);
  md->requires_python = RequiresPython(text);
  md->torch = TorchRequirementOf(text);
  md->text = std::move(text);
  std::lock_guard lock(mu_);
  if (metadata_.size() >= kMaxCachedMetadata) metadata_.clear();
  metadata_[file.sha256] = md;
  return *md;
}

}  // namespace farm::http
