#include "cli/export/index_export.h"

#include <boost/json.hpp>

#include "cli/export/export_dir.h"
#include "cli/export/index_links.h"
#include "common/clock.h"

namespace farm::cli::exporter {

namespace json = boost::json;

namespace {

constexpr int64_t kMaxWheelBytes = 16LL << 30;
constexpr int64_t kMaxSmallFileBytes = 4 << 20;  // metadata, provenance, keys, script

// What the install script says in place of the farm's URL when the export has no
// --base-url: the script then asks for --farm (web/install.py).
constexpr char kInstallUrlPlaceholder[] = "@FARM_URL@";

Status CheckBaseUrl(const std::string& url, const std::string& what) {
  std::string origin = OriginOf(url);
  if (origin.empty() || !(origin.starts_with("http://") || origin.starts_with("https://")) ||
      url.find_first_of("?#\"'<> ") != std::string::npos) {
    return Status::InvalidArgument(what + " must be an http(s) URL, got \"" + url + "\"");
  }
  return Status::Ok();
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

class Exporter {
 public:
  Exporter(IndexHttp& http, const ExportOptions& o, ExportDir& dir, const std::string& base)
      : http_(http), options_(o), dir_(dir), base_(base), links_(base, o.base_url) {}

  Result<ExportSummary> Run() {
    FARM_ASSIGN_OR_RETURN(Crawl crawl, CrawlIndex(http_, base_));
    summary_.views = crawl.views;
    summary_.pages = static_cast<int>(crawl.pages.size());
    bool provenance = false;
    for (const auto& [path, file] : crawl.files) {
      FARM_RETURN_IF_ERROR(Wheel(file));
      provenance = provenance || file.provenance;
    }
    for (const std::string& path : crawl.variants_files) {
      FARM_RETURN_IF_ERROR(Small(path, kMaxSmallFileBytes, false));
    }
    if (provenance) FARM_RETURN_IF_ERROR(Small("api/v1/provenance/keys", 1 << 20, false));
    FARM_RETURN_IF_ERROR(Small("style.css", 1 << 20, true));
    FARM_RETURN_IF_ERROR(InstallScript());
    for (const CrawledPage& page : crawl.pages) links_.Add(page.dir);
    for (const CrawledPage& page : crawl.pages) FARM_RETURN_IF_ERROR(Page(page));
    auto directory = RewriteJson(crawl.directory_json, "", links_);
    if (!directory.ok()) return PageError(base_ + "/", directory.status());
    FARM_RETURN_IF_ERROR(dir_.Write("index.json", *directory));
    return summary_;
  }

 private:
  std::string Url(const std::string& path) const { return base_ + "/" + path; }

  static Status PageError(const std::string& url, const Status& s) {
    return Status::DataLoss("farmd's page " + url + ": " + s.message() + ": refusing to export it");
  }

  Status Wheel(const CrawledFile& file) {
    ++summary_.wheels;
    FARM_ASSIGN_OR_RETURN(bool reused, dir_.ReuseFromPrevious(file.path, file.sha256));
    if (reused) {
      ++summary_.wheels_reused;
      summary_.bytes_reused += file.size > 0 ? file.size : 0;
    } else {
      FARM_RETURN_IF_ERROR(Verified(file.path, file.sha256, file.size));
      ++summary_.wheels_downloaded;
      summary_.bytes_downloaded += last_size_;
    }
    links_.Add(file.path);
    if (!file.metadata_sha256.empty()) {
      FARM_RETURN_IF_ERROR(Verified(file.path + ".metadata", file.metadata_sha256, -1));
      ++summary_.other_files;
    }
    if (file.provenance) {
      FARM_RETURN_IF_ERROR(Small(file.path + ".provenance", kMaxSmallFileBytes, false));
      FARM_RETURN_IF_ERROR(Small(file.path + ".intoto.jsonl", kMaxSmallFileBytes, true));
    }
    return Status::Ok();
  }

  // A file checked against the sha256 (and size) a page gave for it.
  Status Verified(const std::string& path, const std::string& sha256, int64_t size) {
    last_size_ = 0;
    int64_t max = size >= 0 ? size : path.ends_with(".whl") ? kMaxWheelBytes : kMaxSmallFileBytes;
    FARM_RETURN_IF_ERROR(dir_.WriteVerified(path, sha256, size, [&](const auto& sink) {
      return http_.Get(Url(path), "", max, [&](std::string_view block) {
        last_size_ += static_cast<int64_t>(block.size());
        return sink(block);
      });
    }));
    links_.Add(path);
    return Status::Ok();
  }

  // A file copied as farmd serves it; a 404 is fine when `optional`.
  Status Small(const std::string& path, int64_t max, bool optional) {
    auto body = GetAll(http_, Url(path), "", max);
    if (optional && body.status().code() == StatusCode::kNotFound) return Status::Ok();
    if (!body.ok()) return body.status();
    FARM_RETURN_IF_ERROR(dir_.Write(path, *body));
    links_.Add(path);
    ++summary_.other_files;
    return Status::Ok();
  }

  // The install script, with the farm's URL replaced by the export's (or by the
  // placeholder that makes it ask for --farm).
  Status InstallScript() {
    auto script = GetAll(http_, Url("install"), "", kMaxSmallFileBytes);
    if (script.status().code() == StatusCode::kNotFound) return Status::Ok();
    if (!script.ok()) return script.status();
    const std::string& to = options_.base_url.empty() ? kInstallUrlPlaceholder : options_.base_url;
    FARM_RETURN_IF_ERROR(dir_.Write("install", Replace(*script, base_, to)));
    links_.Add("install");
    ++summary_.other_files;
    return Status::Ok();
  }

  Status Page(const CrawledPage& page) {
    auto html = RewriteHtml(page.html, page.dir, links_);
    if (!html.ok()) return PageError(Url(page.dir), html.status());
    auto json = RewriteJson(page.json, page.dir, links_);
    if (!json.ok()) return PageError(Url(page.dir), json.status());
    FARM_RETURN_IF_ERROR(dir_.Write(page.dir + "index.html", *html));
    return dir_.Write(page.dir + "index.json", *json);
  }

  IndexHttp& http_;
  const ExportOptions& options_;
  ExportDir& dir_;
  std::string base_;
  LinkRewriter links_;
  ExportSummary summary_;
  int64_t last_size_ = 0;
};

}  // namespace

Result<ExportSummary> ExportIndex(IndexHttp& http, const ExportOptions& options) {
  std::string base = options.farm_url;
  while (base.ends_with('/')) base.pop_back();
  FARM_RETURN_IF_ERROR(CheckBaseUrl(base, "the farm's index URL (--from)"));
  if (base != OriginOf(base)) {
    return Status::InvalidArgument("--from is farmd's HTTP address without a path (" +
                                   OriginOf(base) + "), got " + base);
  }
  if (!options.base_url.empty()) FARM_RETURN_IF_ERROR(CheckBaseUrl(options.base_url, "--base-url"));
  // DIR first: a directory that cannot be written fails before any download.
  FARM_ASSIGN_OR_RETURN(auto dir, ExportDir::Open(options.dir, options.force));
  Exporter exporter(http, options, *dir, base);
  auto summary = exporter.Run();
  if (!summary.ok()) {
    if (summary.status().code() == StatusCode::kUnavailable) {
      return Status::Unavailable(summary.status().message() +
                                 " (is farmd running, and is --from its --http-listen address?)");
    }
    return summary.status();
  }
  summary->dir = options.dir;
  FARM_RETURN_IF_ERROR(dir->Commit(SummaryJson(*summary, options.base_url)));
  return summary;
}

std::string SummaryJson(const ExportSummary& s, const std::string& base_url) {
  json::object o{{"format", 1},
                 {"exported_at", FormatRfc3339(RealClock().NowUnixMs())},
                 {"base_url", base_url},
                 {"views", s.views},
                 {"pages", s.pages},
                 {"wheels", s.wheels},
                 {"wheels_downloaded", s.wheels_downloaded},
                 {"wheels_reused", s.wheels_reused},
                 {"bytes_downloaded", s.bytes_downloaded},
                 {"bytes_reused", s.bytes_reused},
                 {"other_files", s.other_files}};
  return json::serialize(o) + "\n";
}

}  // namespace farm::cli::exporter
