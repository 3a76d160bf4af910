// Fuzzes what `farmctl export-index` does with pages read from the network
// (cli/export/index_links.h): URL resolution, the export-path check, and the HTML and
// JSON link rewriting. Properties: an export path never has an empty, "." or ".." segment
// or a leading "/", and checks as itself again; a URL resolved on the farm's origin has no
// "." or ".." segment left; a rewritten HTML page rewrites to itself, so every link in it
// is one the export holds or one off the farm.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/export/index_links.h"
#include "tests/fuzz/fuzz_util.h"

namespace farm::fuzz {
namespace {

constexpr char kFarm[] = "http://127.0.0.1:8080";

void CheckExportPath(std::string_view text) {
  auto path = cli::exporter::SafeExportPath(text);
  if (!path) return;
  Require(!path->starts_with('/'), "an export path is relative", text);
  size_t pos = 0;
  while (pos < path->size()) {
    size_t slash = path->find('/', pos);
    std::string_view seg = std::string_view(*path).substr(
        pos, slash == std::string::npos ? std::string::npos : slash - pos);
    Require(!seg.empty() && seg != "." && seg != ".." && seg.front() != '.',
            "an export path has no empty, dot or dot-dot segment", text);
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  Require(cli::exporter::SafeExportPath("/" + *path) == path, "an export path checks as itself",
          text);
}

void CheckResolve(std::string_view ref) {
  std::string url = cli::exporter::ResolveUrl(std::string(kFarm) + "/simple/x/", ref);
  if (cli::exporter::OriginOf(url) != kFarm) return;
  std::string path = url.substr(sizeof(kFarm) - 1);
  path = path.substr(0, path.find_first_of("?#"));
  Require(path.find("/../") == std::string::npos && path.find("/./") == std::string::npos &&
              !path.ends_with("/..") && !path.ends_with("/."),
          "a resolved URL has no dot segments", std::string(ref) + " -> " + url);
}

int FuzzOne(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  CheckExportPath(text);
  CheckExportPath("/" + text);
  CheckResolve(text);

  cli::exporter::LinkRewriter links(kFarm, "");
  links.Add("simple/");
  links.Add("simple/x/");
  links.Add("style.css");
  auto html = cli::exporter::RewriteHtml(text, "simple/x/", links);
  if (html.ok()) {
    // Rewriting a rewritten page changes nothing: every link it wrote is one the export
    // holds or one off the farm (any other would be dropped or refused the second time).
    auto again = cli::exporter::RewriteHtml(*html, "simple/x/", links);
    Require(again.ok() && *again == *html, "a rewritten page rewrites to itself",
            text + "\n->\n" + *html);
  }
  (void)cli::exporter::RewriteJson(text, "simple/x/", links);
  return 0;
}

}  // namespace
}  // namespace farm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return farm::fuzz::FuzzOne(data, size);
}
