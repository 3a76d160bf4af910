// A client of the Python "simple" repository API (PEP 503 HTML, PEP 691 JSON), as pip
// uses it against PyPI and PyTorch's per-CUDA indexes: it asks for JSON first
// (Accept: application/vnd.pypi.simple.v1+json, HTML as a fallback) and reads whichever
// the index answers, by its Content-Type. Every page is hostile input: sizes are bounded,
// links must resolve to http(s) URLs, and a file without a sha256 can be listed but never
// chosen. Thread-safe when its Fetcher is.
#ifndef FARM_COMMON_UPSTREAM_SIMPLE_INDEX_H_
#define FARM_COMMON_UPSTREAM_SIMPLE_INDEX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/upstream/fetcher.h"

namespace farm::upstream {

struct IndexFile {
  std::string filename;
  std::string url;     // absolute, fragment removed
  std::string sha256;  // lowercase hex, "" when the index gave none
  int64_t size = -1;   // JSON only; -1 when unknown
  std::string requires_python;
  bool yanked = false;
  std::string yanked_reason;
  std::string core_metadata_sha256;  // PEP 658/714, "" when not offered
  std::string upload_time;           // PEP 700 upload-time as the index wrote it; JSON only
};

// True for 64 lowercase hex digits (a sha256 as indexes and manifests write it).
bool IsSha256Hex(const std::string& text);

// The largest project page read (PyTorch's torch page is a few MB).
inline constexpr int64_t kMaxIndexPageBytes = int64_t{32} << 20;

inline constexpr char kAcceptIndex[] =
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.1";

// Parses a PEP 691 project page fetched from `page_url`.
Result<std::vector<IndexFile>> ParseProjectJson(const std::string& body,
                                                const std::string& page_url);

// Parses a PEP 503 project page fetched from `page_url` (anchors, their hash fragment,
// data-requires-python, data-yanked, data-core-metadata / data-dist-info-metadata).
Result<std::vector<IndexFile>> ParseProjectHtml(const std::string& body,
                                                const std::string& page_url);

// Resolves `ref` against `base` (RFC 3986). InvalidArgument unless the result is an
// http(s) URL; the fragment is dropped.
Result<std::string> ResolveUrl(const std::string& base, const std::string& ref);

// Lists a project's files on the index at `index_url` ("https://host/whl/cu128/"): the
// page index_url + normalized name + "/". NotFound when the index has no such project.
Result<std::vector<IndexFile>> ListProjectFiles(Fetcher& fetcher, const std::string& index_url,
                                                const std::string& project);

// The project page URL of `project` on the index at `index_url` (name normalized).
std::string ProjectPageUrl(const std::string& index_url, const std::string& project);

// Parses a fetched project page by its Content-Type (PEP 691 JSON, else PEP 503 HTML);
// InvalidArgument for another type.
Result<std::vector<IndexFile>> ParseProjectPage(const FetchedPage& page);

// What an interpreter installs: CPython "X.Y" on Linux `arch` with glibc `glibc`
// ("2.36"). The tags are ordered best first, as pip orders them.
struct TargetPython {
  std::string version = "3.11";
  std::string arch = "x86_64";
  std::string glibc = "2.17";
};
std::vector<std::string> SupportedTags(const TargetPython& target);

// The wheel of `project` at exactly `version` (PEP 440 local label included) that installs
// on `target`, the best tag winning. Files without sha256 are never chosen. Yanked files
// are chosen (an exact pin may name one, PEP 592) with `*yanked_note` set. NotFound,
// naming the versions the index has, when none fits.
Result<IndexFile> SelectWheel(const std::vector<IndexFile>& files, const std::string& project,
                              const std::string& version, const TargetPython& target,
                              std::string* yanked_note = nullptr);

}  // namespace farm::upstream

#endif  // FARM_COMMON_UPSTREAM_SIMPLE_INDEX_H_
