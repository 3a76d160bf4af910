// Reading farmd's package index over HTTP, as a static export needs it: the directory of
// GPU views (GET / as JSON), every view's project list and every project page (PEP 691
// JSON and PEP 503 HTML of each), and the files the pages list. farmd stays the one source
// of the formats: the export copies what it serves and only rewrites links.
//
// Everything read is checked before it names a file of the export: project names are
// normalized names, views are /<variant>/simple/, /<variant>/sm<cc>/simple/ and the torch
// views /cu<CUDA>/sm<cc>/torch<release>/simple/, a file is
// /files/<its sha256>/<its wheel name>. A page that says otherwise fails the crawl.
#ifndef FARM_CLI_EXPORT_INDEX_CRAWL_H_
#define FARM_CLI_EXPORT_INDEX_CRAWL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::cli::exporter {

// farmd's HTTP side as the export reads it; the real one is libcurl, tests use a fake.
class IndexHttp {
 public:
  virtual ~IndexHttp() = default;
  // GETs `url` (Accept: `accept` when not empty) and hands the body to `sink` in blocks.
  // NotFound for a 404; Unavailable when farmd cannot be reached or answers another
  // error; InvalidArgument past `max_bytes`; the sink's first error ends it.
  virtual Status Get(const std::string& url, const std::string& accept, int64_t max_bytes,
                     const std::function<Status(std::string_view)>& sink) = 0;
};

// libcurl, trusting `ca_file` for HTTPS when set; follows redirects (to a blob store).
std::unique_ptr<IndexHttp> MakeCurlIndexHttp(const std::string& ca_file);

// The whole body of `url`, at most `max_bytes`.
Result<std::string> GetAll(IndexHttp& http, const std::string& url, const std::string& accept,
                           int64_t max_bytes);

inline constexpr char kPep691Json[] = "application/vnd.pypi.simple.v1+json";
inline constexpr int64_t kMaxPageBytes = 16 << 20;

// One directory page of the index: its export path ("cu130/sm90/simple/attn-example/").
struct CrawledPage {
  std::string dir;
  std::string json;
  std::string html;
};

// One wheel a project page lists, as the page describes it.
struct CrawledFile {
  std::string path;  // "files/<sha256>/<filename>"
  std::string sha256;
  std::string filename;
  int64_t size = -1;            // -1 when the page does not say
  std::string metadata_sha256;  // PEP 658/714 core metadata, when announced
  bool provenance = false;      // PEP 740, when announced
};

struct Crawl {
  std::string directory_json;  // GET / as JSON
  std::vector<CrawledPage> pages;
  std::map<std::string, CrawledFile> files;  // by path: a wheel is in many views
  std::set<std::string> variants_files;      // "files/variants/<project>/<file>"
  int views = 0;
  int project_pages = 0;
};

// Reads the whole index of farmd at `farm_base` ("http://farm:8080").
Result<Crawl> CrawlIndex(IndexHttp& http, const std::string& farm_base);

// The checks the crawl applies, exposed for tests.
bool IsProjectName(std::string_view name);  // a PEP 503 normalized name
bool IsWheelFileName(std::string_view name);
bool IsSha256Hex(std::string_view hex);

}  // namespace farm::cli::exporter

#endif  // FARM_CLI_EXPORT_INDEX_CRAWL_H_
