// The pure parts of `farmctl export-index`: which URL of farmd's index may become a file of
// the export (path safety), and how the links of a page are rewritten so that they work
// from the static copy. Pages come over the network: nothing here trusts them.
//
// An export path is relative to the export's root and never starts with "/": a directory
// page is its directory ("cu130/sm90/simple/attn-example/"), a file its name
// ("files/<sha256>/<wheel>"). The root page is "".
#ifndef FARM_CLI_EXPORT_INDEX_LINKS_H_
#define FARM_CLI_EXPORT_INDEX_LINKS_H_

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::cli::exporter {

// "http://host:port" of an absolute http(s) URL (the scheme lower-cased, the authority as
// written), or "" for anything else (a relative reference, data:, mailto:).
std::string OriginOf(std::string_view url);

// `ref` resolved against the absolute URL `base` as RFC 3986 section 5.2 says, with "." and
// ".." segments removed (so "../../x" never climbs above the origin's root).
std::string ResolveUrl(std::string_view base, std::string_view ref);

// The export path of farmd's URL path `url_path` ("/cu130/simple/x/" -> "cu130/simple/x/"),
// or nullopt when it must never be written: a "." or ".." segment, an empty segment, a
// segment starting with "." (the export's marker is one), a byte outside
// [A-Za-z0-9._+!~-] ("%" and "\" included), a segment over 255 bytes, more than 16
// segments or more than 2048 bytes.
std::optional<std::string> SafeExportPath(std::string_view url_path);

// The relative link from the directory page `from_dir` to the export path `to`, both export
// paths: ("cu130/simple/x/", "files/a/b.whl") -> "../../../files/a/b.whl".
std::string RelativeLink(std::string_view from_dir, std::string_view to);

// "files/<64 hex>/<name>.whl": the sha256 of a wheel's export path, else "".
std::string WheelShaOf(std::string_view export_path);

// Rewrites the links of pages fetched from farmd at `farm_base` ("http://farm:8080") into
// links of the export: relative ones, or absolute under `export_base` when set
// (--base-url). Only links to what the export holds (Add) are kept.
class LinkRewriter {
 public:
  LinkRewriter(std::string farm_base, std::string export_base);

  void Add(const std::string& export_path) { exported_.insert(export_path); }
  bool Has(const std::string& export_path) const { return exported_.contains(export_path); }

  // `link` as written in the page at export path `page_dir`:
  //  - a link off the farm (another host, data:, a fragment alone) is kept as it is;
  //  - a link to something on the farm the export holds becomes relative (or absolute
  //    under the export base), its fragment kept;
  //  - a link to something on the farm the export does not hold (the dashboard) is
  //    nullopt: the caller drops it.
  // Fails when a wheel's link says a sha256 other than the one in its path, or when the
  // link names a file under files/ that the export does not hold.
  Result<std::optional<std::string>> Rewrite(std::string_view page_dir,
                                             std::string_view link) const;

  // `text` with every occurrence of the farm's base URL replaced by the export base, or by
  // kBaseUrlPlaceholder when links are relative (the commands a page shows people, such as
  // "pip install --index-url http://farm:8080/cu130/sm90/simple/ attn-example").
  std::string RewriteText(std::string_view text) const;

  const std::string& farm_base() const { return farm_base_; }
  const std::string& export_base() const { return export_base_; }

 private:
  std::string farm_base_;
  std::string export_base_;
  std::set<std::string> exported_;
};

// What commands shown in the pages say instead of the farm's URL when the export has no
// --base-url.
inline constexpr char kBaseUrlPlaceholder[] = "BASE_URL";

// An HTML page of the index with its href, src and data-provenance attributes rewritten
// (dropped where Rewrite says so) and the farm's URL in its text replaced. Other
// attributes (data-core-metadata, data-requires-python, data-yanked...) are kept byte for
// byte. Fails on a tag that never closes or a wheel link whose fragment mismatches.
Result<std::string> RewriteHtml(std::string_view html, std::string_view page_dir,
                                const LinkRewriter& links);

// A PEP 691 JSON page (or the directory of views) with its links rewritten: the values of
// "url", "provenance", "index_url" and "index" and the items of "variants-json", at any
// depth; the farm's URL in every other string replaced as in RewriteText. A link to
// something on the farm the export does not hold fails the rewrite.
Result<std::string> RewriteJson(std::string_view json, std::string_view page_dir,
                                const LinkRewriter& links);

}  // namespace farm::cli::exporter

#endif  // FARM_CLI_EXPORT_INDEX_LINKS_H_
