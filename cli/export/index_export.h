// `farmctl export-index DIR`: farmd's package index as static files that any static file
// server (python3 -m http.server, nginx, an S3 website) serves to pip (docs/index.md,
// "Static export"). Layout under DIR:
//
//   index.json                          the directory of GPU views (farmd's GET / as JSON)
//   <view>/index.html, <view>/index.json   PEP 503 HTML and PEP 691 JSON of each view and
//                                       project page (simple/, cu130/simple/,
//                                       cu130/sm90/simple/, .../<project>/)
//   files/<sha256>/<wheel>              the wheels, each checked against its sha256
//   files/<sha256>/<wheel>.metadata     PEP 658/714 metadata, checked against its sha256
//   files/<sha256>/<wheel>.provenance   PEP 740 provenance (and .intoto.jsonl) where kept
//   files/variants/<project>/...        wheel-variant metadata
//   api/v1/provenance/keys              the farm's public keys, when provenance is kept
//   install                             the install script, pointed at the export
//   style.css                           the pages' style sheet
//   .farm-export.json                   the marker: what the export holds
//
// Links become relative, or absolute under `base_url` when given. Wheels already in the
// previous export with the right sha256 are hard-linked from it, not downloaded again.
#ifndef FARM_CLI_EXPORT_INDEX_EXPORT_H_
#define FARM_CLI_EXPORT_INDEX_EXPORT_H_

#include <cstdint>
#include <string>

#include "cli/export/index_crawl.h"
#include "common/status.h"

namespace farm::cli::exporter {

struct ExportOptions {
  std::string farm_url;  // farmd's HTTP address, "http://farm:8080"
  std::string dir;
  std::string base_url;  // where DIR will be served; "" for relative links
  bool force = false;    // replace a DIR that is not an export
};

struct ExportSummary {
  std::string dir;
  int views = 0;
  int pages = 0;
  int wheels = 0;
  int wheels_downloaded = 0;
  int wheels_reused = 0;
  int64_t bytes_downloaded = 0;  // of wheels
  int64_t bytes_reused = 0;
  int other_files = 0;  // metadata, provenance, variants, keys, install, style
};

// Reads the whole index from `http` and replaces DIR with it atomically (ExportDir).
// Unavailable when farmd cannot be reached; DataLoss when a page or a wheel is not what it
// should be (nothing is renamed into place then).
Result<ExportSummary> ExportIndex(IndexHttp& http, const ExportOptions& options);

// The marker's JSON, and the summary as `farmctl --output json` prints it.
std::string SummaryJson(const ExportSummary& summary, const std::string& base_url);

}  // namespace farm::cli::exporter

#endif  // FARM_CLI_EXPORT_INDEX_EXPORT_H_
