#include "daemon/http/index/simple_index.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>
#include <set>

#include "common/clock.h"
#include "common/strings.h"
#include "common/wheel/identity.h"
#include "common/wheel/wheel_name.h"
#include "daemon/http/index/gpu_views.h"
#include "daemon/http/index/index_directory.h"
#include "daemon/http/index/provenance_views.h"
#include "daemon/http/index/torch_views.h"
#include "daemon/http/index/wheel_variants.h"

namespace farm::http {

namespace json = boost::json;

namespace {

// 1.3: PEP 740 provenance (every key past 1.1 is optional, PEP 708's included).
constexpr char kApiVersion[] = "1.3";

// The q value of one media range's parameters (1 when absent, 0 when malformed).
double QualityOf(std::string_view params) {
  size_t pos = 0;
  while (pos < params.size()) {
    size_t semi = params.find(';', pos);
    std::string p = TrimSpace(params.substr(pos, semi == params.npos ? params.npos : semi - pos));
    if (p.size() > 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
      try {
        return std::stod(std::string(p.substr(2)));
      } catch (...) {
        return 0;
      }
    }
    if (semi == params.npos) break;
    pos = semi + 1;
  }
  return 1;
}

// Server preference: rank 0 is preferred on equal q.
struct Offer {
  const char* range;
  bool json;
  const char* content_type;
};
constexpr Offer kOffers[] = {
    {kJsonV1, true, kJsonV1},
    {"application/vnd.pypi.simple.latest+json", true, kJsonV1},
    {kHtmlV1, false, kHtmlV1},
    {"application/vnd.pypi.simple.latest+html", false, kHtmlV1},
    {"text/html", false, "text/html; charset=utf-8"},
    {"text/*", false, "text/html; charset=utf-8"},
    {"*/*", false, "text/html; charset=utf-8"},
};

std::string UploadTime(int64_t ms) {
  std::string t = FormatRfc3339(ms);  // "...:00.000Z" -> PEP 700's microseconds
  if (t.size() > 1 && t.back() == 'Z') t.insert(t.size() - 1, "000");
  return t;
}

}  // namespace

Negotiated NegotiateIndexFormat(std::string_view accept) {
  if (TrimSpace(accept).empty()) return {true, false, "text/html; charset=utf-8"};
  double best_q = 0;
  int best_rank = 1000;
  size_t pos = 0;
  for (int guard = 0; pos <= accept.size() && guard < 64; ++guard) {
    size_t comma = accept.find(',', pos);
    std::string_view item = accept.substr(pos, comma == accept.npos ? accept.npos : comma - pos);
    size_t semi = item.find(';');
    std::string type = AsciiLower(TrimSpace(item.substr(0, semi)));
    double q = semi == item.npos ? 1 : QualityOf(item.substr(semi + 1));
    for (int rank = 0; rank < static_cast<int>(std::size(kOffers)); ++rank) {
      if (type != kOffers[rank].range || q <= 0) continue;
      if (q > best_q || (q == best_q && rank < best_rank)) best_q = q, best_rank = rank;
    }
    if (comma == accept.npos) break;
    pos = comma + 1;
  }
  if (best_rank == 1000) return {};
  const Offer& o = kOffers[best_rank];
  return {true, o.json, o.content_type};
}

Response IndexPage(const Negotiated& n, std::string body) {
  Response r;
  r.content_type = n.content_type;
  r.body = std::move(body);
  r.headers.emplace_back("Vary", "Accept");
  return r;
}

namespace {

// The dashboard's header on the index's own pages, so a person who followed the
// dashboard's "Index" link can get back: its links are those of web/index.html's
// navigation bar, in its order. Only on project lists and not-found pages: installers read
// project pages, whose every link must be a file.
std::string IndexHeader() {
  return "<header><a class=\"brand\" href=\"/\">GPU wheel farm</a><nav><a href=\"/#/\">"
         "Overview</a><a href=\"/#/builds\">Builds</a><a href=\"/#/publications\">Publishing"
         "</a><a href=\"/#/schedules\">Schedules</a><a href=\"/#/coverage\">Coverage</a>"
         "<a href=\"/#/workers\">Workers</a>"
         "<a href=\"/#/chart\">Durations</a><a href=\"/simple/\">Index</a>"
         "<a href=\"/metrics\">Metrics</a></nav></header>\n";
}

// A 404 of the index: HTML for a browser (an HTML negotiation that is not PEP 691's own
// type), the JSON error for everything else.
Response IndexNotFound(const Negotiated& n, const std::string& message) {
  if (n.json || n.content_type == kHtmlV1) return ErrorResponse(Status::NotFound(message));
  Response r =
      HtmlResponse(404,
                   "<!DOCTYPE html>\n<html><head><title>Not found</title><link rel=\"stylesheet\" "
                   "href=\"/style.css\"><link rel=\"icon\" href=\"data:,\"></head>"
                   "<body class=\"index-page\">\n" +
                       IndexHeader() + "<h1>Not found</h1>\n<p class=\"error\" id=\"not-found\">" +
                       HtmlEscape(message) +
                       "</p>\n<p><a href=\"/simple/\">Every wheel and the GPU views that list them"
                       "</a></p></body></html>\n");
  r.headers.emplace_back("Vary", "Accept");
  return r;
}

// The project list of a view. The root view (`directory` set) also carries the directory
// of GPU views: a "variants" key in JSON (PEP 691 lets clients ignore unknown keys) and a
// section after the project links in HTML. Other views say how to install from them
// (`view_url`: the view's absolute URL).
Response ProjectList(const Negotiated& n, const std::vector<IndexFile>& files,
                     const std::string& title, const std::vector<GpuView>* directory,
                     const std::string& base, const std::string& view_url = "",
                     const std::vector<TorchView>* torch_views = nullptr) {
  std::set<std::string> projects;
  for (const auto& f : files) projects.insert(f.project);
  if (n.json) {
    json::array arr;
    for (const auto& p : projects) arr.push_back(json::object{{"name", p}});
    json::object o{{"meta", json::object{{"api-version", kApiVersion}}},
                   {"projects", std::move(arr)}};
    if (directory != nullptr) o["variants"] = DirectoryJson(*directory, base);
    if (torch_views != nullptr) o["torch_views"] = TorchDirectoryJson(*torch_views, base);
    return IndexPage(n, json::serialize(o));
  }
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
      "content=\"" +
      std::string(kApiVersion) + "\"><title>" + HtmlEscape(title) +
      "</title><link rel=\"stylesheet\" href=\"/style.css\"><link rel=\"icon\" "
      "href=\"data:,\"></head>"
      "<body class=\"index-page\">\n" +
      IndexHeader() + "<h1>" + HtmlEscape(title) + "</h1>\n";
  if (!view_url.empty()) {
    html += "<p class=\"install\">Install from this view: <code>pip install --index-url " +
            HtmlEscape(view_url) + " " +
            HtmlEscape(projects.empty() ? "PACKAGE" : *projects.begin()) + "</code></p>\n";
  }
  html += "<div class=\"projects\">\n";
  for (const auto& p : projects) {
    html += "<a href=\"" + HtmlEscape(p) + "/\">" + HtmlEscape(p) + "</a><br>\n";
  }
  html += "</div>\n";
  if (directory != nullptr) html += DirectoryHtml(*directory, base);
  return IndexPage(n, html + "</body></html>\n");
}

std::string FileUrl(const IndexFile& f) { return "/files/" + f.sha256 + "/" + f.filename; }

json::object FileJson(const IndexFile& f, const Result<CoreMetadata>& md, bool provenance) {
  json::object o{{"filename", f.filename},
                 {"url", FileUrl(f)},
                 {"hashes", json::object{{"sha256", f.sha256}}},
                 {"size", f.size},
                 {"upload-time", UploadTime(f.created_ms)}};
  if (md.ok()) {
    if (!md->requires_python.empty()) o["requires-python"] = md->requires_python;
    o["core-metadata"] = json::object{{"sha256", md->sha256}};
    // The torch the wheel installs next to (torch_views.h): installers ignore the key.
    if (md->torch.present) o["torch-requirement"] = md->torch.text;
  }
  if (provenance) o["provenance"] = FileUrl(f) + kPep740Suffix;  // PEP 740
  return o;
}

std::string FileAnchor(const IndexFile& f, const Result<CoreMetadata>& md, bool provenance) {
  std::string a = "<a href=\"" + HtmlEscape(FileUrl(f)) + "#sha256=" + f.sha256 + "\"";
  if (md.ok()) {
    if (!md->requires_python.empty()) {
      a += " data-requires-python=\"" + HtmlEscape(md->requires_python) + "\"";
    }
    // PEP 714's name plus PEP 658's for installers that predate it.
    a += " data-core-metadata=\"sha256=" + md->sha256 +
         "\" data-dist-info-metadata=\"sha256=" + md->sha256 + "\"";
    if (md->torch.present) {
      a += " data-torch-requirement=\"" + HtmlEscape(md->torch.text) + "\"";
    }
  }
  if (provenance) a += " data-provenance=\"" + HtmlEscape(FileUrl(f) + kPep740Suffix) + "\"";
  return a + ">" + HtmlEscape(f.filename) + "</a><br>\n";
}

Response ProjectPage(IndexCatalog& catalog, const Negotiated& n, const std::string& project,
                     const std::vector<IndexFile>& files) {
  json::array jfiles;
  std::set<std::string> versions;
  std::string anchors;
  for (const auto& f : files) {
    if (f.project != project) continue;
    auto md = catalog.Metadata(f);
    versions.insert(f.version);
    if (n.json) {
      jfiles.push_back(FileJson(f, md, catalog.deps().attestor != nullptr));
    } else {
      anchors += FileAnchor(f, md, catalog.deps().attestor != nullptr);
    }
  }
  if (versions.empty()) return IndexNotFound(n, "no project " + project);
  if (n.json) {
    json::array jversions;
    for (const auto& v : versions) jversions.push_back(json::value(v));
    // Wheel-variant metadata (wheel_variants.h), under a key installers ignore.
    std::set<std::string> variant_files;
    for (const auto& f : files) {
      if (f.project == project) {
        variant_files.insert("/files/variants/" + project + "/" + VariantsFileName(f));
      }
    }
    json::array jvariants;
    for (const auto& v : variant_files) jvariants.push_back(json::value(v));
    return IndexPage(
        n, json::serialize(json::object{{"meta", json::object{{"api-version", kApiVersion}}},
                                        {"name", project},
                                        {"files", std::move(jfiles)},
                                        {"versions", std::move(jversions)},
                                        {"variants-json", std::move(jvariants)}}));
  }
  return IndexPage(
      n, "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"" +
             std::string(kApiVersion) + "\"><title>Links for " + HtmlEscape(project) +
             "</title><link rel=\"stylesheet\" href=\"/style.css\"><link rel=\"icon\" "
             "href=\"data:,\"></head>"
             "<body class=\"index-page\">\n<h1>Links for " +
             HtmlEscape(project) + "</h1>\n<div class=\"files\">\n" + anchors +
             "</div></body></html>\n");
}

std::optional<Response> HandleFile(IndexCatalog& catalog, std::string_view rest) {
  size_t slash = rest.find('/');
  if (slash == rest.npos) return ErrorResponse(Status::NotFound("no such file"));
  std::string sha(rest.substr(0, slash));
  std::string name(rest.substr(slash + 1));
  for (bool pep740 : {true, false}) {
    std::string_view suffix = pep740 ? kPep740Suffix : kJsonlSuffix;
    if (!name.ends_with(suffix)) continue;
    auto file = catalog.Find(sha, name.substr(0, name.size() - suffix.size()));
    if (!file.ok()) return ErrorResponse(file.status());
    return ProvenanceFileResponse(catalog.deps(), *file, pep740);
  }
  bool metadata = name.ends_with(".metadata");
  if (metadata) name.resize(name.size() - std::strlen(".metadata"));
  auto file = catalog.Find(sha, name);
  if (!file.ok()) return ErrorResponse(file.status());
  if (metadata) {
    auto md = catalog.Metadata(*file);
    if (!md.ok()) return ErrorResponse(md.status());
    Response r = TextResponse(200, md->text);
    r.content_type = "application/octet-stream";
    return r;
  }
  auto source = catalog.Source(*file);
  if (!source.ok()) return ErrorResponse(source.status());
  if (!source->url.empty()) return Redirect(302, source->url);
  Response r;
  r.kind = BodyKind::kFile;
  r.content_type = "application/octet-stream";
  r.file_path = source->path;
  return r;
}

bool ValidVariant(std::string_view v) {
  if (v.empty() || v.size() > 64) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
  });
}

// Where a request of the index points: a view (every wheel, one variant, or one variant
// for one GPU) and what follows its /simple/.
struct View {
  std::string prefix;   // "/simple/", "/cu130/simple/", "/cu130/sm90/simple/", "/rc/simple/"
  std::string variant;  // "" for the root view; the CUDA segment ("cu128") of a torch view
  std::optional<arch::Version> cc;
  std::optional<arch::Version> cuda;              // a torch view's, of its "cu128"
  std::optional<upstream::ReleaseVersion> torch;  // a torch view's (torch_views.h)
  // Under /rc/: release-candidate wheels too, until their final release's are listed.
  Candidates candidates = Candidates::kLeftOut;
  std::string root() const { return candidates == Candidates::kLeftOut ? "" : "/rc"; }
};

// The views that list release candidates are the default views under this segment.
constexpr std::string_view kCandidateRoot = "/rc/";

// Why a GPU view has no wheel of `project` (or none at all): what the variant does have,
// so a person knows which GPU the wheels were built for.
std::string NoWheelMessage(const std::vector<IndexFile>& variant_files, const View& view,
                           const std::string& project) {
  std::set<std::string> built;
  for (const auto& f : variant_files) {
    if (!project.empty() && f.project != project) continue;
    std::string arch = wheel::ArchLabel(f.images);
    built.insert(arch.empty() ? "no device code" : arch);
  }
  std::string what = project.empty() ? "no wheel" : "no wheel of " + project;
  std::string msg = what + " in " + view.variant + " runs on compute capability " +
                    view.cc->ToString() + " (" + arch::GpusOf(*view.cc) + ")";
  if (!built.empty()) {
    msg += "; built for:";
    for (const auto& b : built) msg += " " + b;
  }
  return msg;
}

// Where the placeholder file of a GPU view without a wheel of a project points. No stored
// file has this path: it always answers 404, with the reason as the status line's phrase.
constexpr std::string_view kNoWheelFiles = "/files/no-wheel/";

// "0+no.wheel.for.sm100": the placeholder's version, older than any real release.
std::string PlaceholderVersion(const View& view) {
  return "0+no.wheel.for.sm" + std::to_string(view.cc->major) + std::to_string(view.cc->minor);
}

// pip prints neither a project page's 404 nor anything in a page, only "from versions:
// none". So an installer (PEP 691 JSON or PEP 503 HTML) asking a GPU view for a project the
// variant has, but not for this GPU, gets a page with one placeholder wheel that installs
// anywhere; fetching it answers 404 whose reason phrase is the explanation, and pip prints
// that ("HTTP error 404 Client Error: no wheel of ... runs on compute capability 10.0").
// The placeholder's version 0 loses to any real release from another index.
Response PlaceholderPage(const Negotiated& n, const View& view, const std::string& project,
                         const std::string& message) {
  std::string dist = project;
  std::replace(dist.begin(), dist.end(), '-', '_');
  std::string version = PlaceholderVersion(view);
  std::string filename = dist + "-" + version + "-py3-none-any.whl";
  std::string gpu = "sm" + std::to_string(view.cc->major) + std::to_string(view.cc->minor);
  std::string url = std::string(kNoWheelFiles) + (view.root().empty() ? "" : "rc/") + view.variant +
                    "/" + gpu + "/" + (view.torch ? TorchSegment(*view.torch) + "/" : "") +
                    filename;
  if (n.json) {
    return IndexPage(
        n, json::serialize(json::object{
               {"meta", json::object{{"api-version", kApiVersion}}},
               {"name", project},
               {"files", json::array{json::object{
                             {"filename", filename}, {"url", url}, {"hashes", json::object{}}}}},
               {"versions", json::array{json::value(version)}}}));
  }
  return IndexPage(
      n, "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"" +
             std::string(kApiVersion) + "\"><title>Links for " + HtmlEscape(project) +
             "</title></head><body>\n<h1>Links for " + HtmlEscape(project) + "</h1>\n<p>" +
             HtmlEscape(message) + "</p>\n<a href=\"" + HtmlEscape(url) + "\">" +
             HtmlEscape(filename) + "</a><br>\n</body></html>\n");
}

// The answer of a GPU view without a wheel of `project` (or of any project, when empty):
// the placeholder page for an installer when the variant has the project, else a 404.
Response NoWheelForGpu(IndexCatalog& catalog, const Negotiated& n,
                       const std::vector<IndexFile>& variant_files, const View& view,
                       const std::string& project) {
  std::string message = view.torch ? NoTorchWheelMessage(catalog, variant_files, project,
                                                         *view.cuda, *view.torch, *view.cc)
                                   : NoWheelMessage(variant_files, view, project);
  bool known =
      !project.empty() && std::any_of(variant_files.begin(), variant_files.end(),
                                      [&](const IndexFile& f) { return f.project == project; });
  if (known && (n.json || n.content_type == kHtmlV1)) {
    return PlaceholderPage(n, view, project, message);
  }
  return IndexNotFound(n, message);
}

Response HandleSimple(IndexCatalog& catalog, const Request& req, const View& view,
                      std::string_view rest) {
  const std::string& prefix = view.prefix;
  const std::string& variant = view.variant;
  Negotiated n = NegotiateIndexFormat(req.accept);
  if (!n.acceptable) {
    Response r = TextResponse(
        406, std::string("acceptable types: ") + kJsonV1 + ", " + kHtmlV1 + ", text/html\n");
    r.headers.emplace_back("Vary", "Accept");
    return r;
  }
  // A torch view draws on every variant (torch_views.h); a variant view on its own.
  auto files = catalog.Files(view.torch ? "" : variant, view.candidates);
  if (!files.ok()) return ErrorResponse(files.status());
  if (!view.torch && !variant.empty() && files->empty()) {
    return IndexNotFound(n, "no variant " + variant);
  }
  std::vector<IndexFile> variant_files;
  if (view.cc) {
    variant_files = std::move(*files);
    *files = FilesForGpu(
        view.torch ? FilesForTorch(catalog, variant_files, *view.cuda, *view.torch) : variant_files,
        *view.cc);
    if (files->empty()) {
      std::string project(rest.substr(0, rest.find('/')));
      return NoWheelForGpu(catalog, n, variant_files, view, wheel::NormalizeProjectName(project));
    }
  }
  if (rest.empty()) {
    if (!variant.empty()) {
      return ProjectList(n, *files, "Simple index " + prefix, nullptr, "", BaseUrl(req) + prefix);
    }
    std::vector<GpuView> directory = ListGpuViews(*files);
    std::vector<TorchView> torch_views;
    if (n.json) torch_views = ListTorchViews(catalog, *files);
    return ProjectList(
        n, *files, view.root().empty() ? "Simple index" : "Simple index with release candidates",
        &directory, BaseUrl(req) + view.root(), "", &torch_views);
  }
  std::string name(rest);
  bool slash = name.ends_with('/');
  if (slash) name.pop_back();
  std::string normalized = wheel::NormalizeProjectName(name);
  if (!slash || normalized != name || name.find('/') != std::string::npos) {
    if (normalized.empty() || normalized.find('/') != std::string::npos) {
      return IndexNotFound(n, "no project " + name);
    }
    return Redirect(301, prefix + normalized + "/");
  }
  if (view.cc && std::none_of(files->begin(), files->end(),
                              [&](const IndexFile& f) { return f.project == normalized; })) {
    return NoWheelForGpu(catalog, n, variant_files, view, normalized);
  }
  return ProjectPage(catalog, n, normalized, *files);
}

// The placeholder file of a GPU view (PlaceholderPage), "<variant>/sm<cc>/<file>" (or a
// torch view's "<cu>/sm<cc>/torch<version>/<file>"): 404 with why the view has no wheel of
// the file's project, said again as the reason phrase.
Response NoWheelFile(IndexCatalog& catalog, std::string_view rest) {
  View view;
  if (rest.starts_with(kCandidateRoot.substr(1))) {
    view.candidates = Candidates::kUnlessFinal;
    rest.remove_prefix(kCandidateRoot.size() - 1);
  }
  size_t first = rest.find('/');
  size_t second = first == rest.npos ? rest.npos : rest.find('/', first + 1);
  if (second != rest.npos) {
    view.variant = std::string(rest.substr(0, first));
    view.cc = ParseGpuSegment(rest.substr(first + 1, second - first - 1));
  }
  std::string_view file = second == rest.npos ? "" : rest.substr(second + 1);
  if (size_t third = file.find('/'); third != file.npos) {
    view.torch = ParseTorchSegment(file.substr(0, third));
    view.cuda = ParseCudaSegment(view.variant);
    if (!view.torch || !view.cuda) return ErrorResponse(Status::NotFound("no such file"));
    file = file.substr(third + 1);
  }
  std::string project = wheel::NormalizeProjectName(file.substr(0, file.find('-')));
  if (!ValidVariant(view.variant) || !view.cc || project.empty() || file.find('/') != file.npos) {
    return ErrorResponse(Status::NotFound("no such file"));
  }
  auto files = catalog.Files(view.torch ? "" : view.variant, view.candidates);
  if (!files.ok()) return ErrorResponse(files.status());
  std::vector<IndexFile> for_gpu = FilesForGpu(
      view.torch ? FilesForTorch(catalog, *files, *view.cuda, *view.torch) : *files, *view.cc);
  bool now = std::any_of(for_gpu.begin(), for_gpu.end(),
                         [&](const IndexFile& f) { return f.project == project; });
  std::string message = now          ? "the view has a wheel of " + project + " now: run pip again"
                        : view.torch ? NoTorchWheelMessage(catalog, *files, project, *view.cuda,
                                                           *view.torch, *view.cc)
                                     : NoWheelMessage(*files, view, project);
  Response r = ErrorResponse(Status::NotFound(message));
  r.reason = ReasonPhrase(message);
  return r;
}

}  // namespace

std::optional<Response> HandleIndex(IndexCatalog& catalog, const Request& req) {
  std::string_view path = req.path;
  if (path.starts_with(kNoWheelFiles)) {
    if (req.method != "GET") return ErrorResponse(Status::Unimplemented("method not allowed"));
    return NoWheelFile(catalog, path.substr(kNoWheelFiles.size()));
  }
  constexpr std::string_view kVariantFiles = "/files/variants/", kFiles = "/files/",
                             kSimple = "/simple/";
  if (path.starts_with(kVariantFiles)) {
    if (req.method != "GET") return ErrorResponse(Status::Unimplemented("method not allowed"));
    return HandleVariantsFile(catalog, path.substr(kVariantFiles.size()));
  }
  if (path.starts_with(kFiles)) {
    if (req.method != "GET") return ErrorResponse(Status::Unimplemented("method not allowed"));
    return HandleFile(catalog, path.substr(kFiles.size()));
  }
  View view;
  // /rc/<any view>: the same view with release candidates (docs/index.md).
  if (path == "/rc" || path == kCandidateRoot) return Redirect(301, "/rc/simple/");
  if (path.starts_with(kCandidateRoot)) {
    view.candidates = Candidates::kUnlessFinal;
    path.remove_prefix(kCandidateRoot.size() - 1);
  }
  if (path == "/simple") return Redirect(301, view.root() + "/simple/");
  if (path.starts_with(kSimple)) {
    view.prefix = view.root() + "/simple/";
    return HandleSimple(catalog, req, view, path.substr(kSimple.size()));
  }
  // /<variant>/simple[/...] or /<variant>/<gpu>/simple[/...]
  if (path.size() < 2) return std::nullopt;
  size_t slash = path.find('/', 1);
  if (slash == path.npos) return std::nullopt;
  view.variant = std::string(path.substr(1, slash - 1));
  std::string_view rest = path.substr(slash);
  if (!ValidVariant(view.variant) || view.variant == "api" || view.variant == "files" ||
      view.variant == "rc") {
    return std::nullopt;
  }
  view.prefix = view.root() + "/" + view.variant + "/";
  if (size_t next = rest.find('/', 1); next != rest.npos && !rest.starts_with("/simple")) {
    std::string_view segment = rest.substr(1, next - 1);
    view.cc = ParseGpuSegment(segment);
    if (!view.cc) {
      if (!segment.starts_with("sm")) return std::nullopt;
      return ErrorResponse(Status::NotFound("no GPU " + std::string(segment) +
                                            ": GPU views are sm<major><minor> of a known "
                                            "compute capability, e.g. sm90, sm120, sm121"));
    }
    view.prefix += std::string(segment) + "/";
    rest = rest.substr(next);
    if (rest.starts_with("/torch")) {
      size_t end = rest.find('/', 1);
      std::string_view torch = rest.substr(1, end == rest.npos ? rest.npos : end - 1);
      view.torch = ParseTorchSegment(torch);
      view.cuda = ParseCudaSegment(view.variant);
      if (!view.torch || !view.cuda || end == rest.npos) {
        return ErrorResponse(Status::NotFound(
            "no such torch view under /" + view.variant + "/" + std::string(segment) +
            "/: torch views are /cu<CUDA>/sm<cc>/torch<release>/simple/, e.g. "
            "/cu128/sm90/torch2.8.0/simple/ (a PEP 440 release, without +cu128)"));
      }
      view.prefix += std::string(torch) + "/";
      rest = rest.substr(end);
    }
  }
  view.prefix += "simple/";
  if (rest == "/simple") return Redirect(301, view.prefix);
  if (!rest.starts_with("/simple/")) {
    if (view.candidates == Candidates::kLeftOut) return std::nullopt;
    return ErrorResponse(Status::NotFound("no index view " + req.path +
                                          ": /rc/ serves every index view, e.g. /rc/simple/ or "
                                          "/rc/cu130/sm90/torch2.12.0/simple/"));
  }
  return HandleSimple(catalog, req, view, rest.substr(8));
}

}  // namespace farm::http
