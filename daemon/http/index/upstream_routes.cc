#include "daemon/http/index/upstream_routes.h"

#include <algorithm>
#include <string_view>

#include "common/log.h"
#include "common/upstream/simple_index.h"
#include "daemon/mirror/pull_through.h"

namespace farm::http {
namespace {

constexpr char kFilesBase[] = "/upstream/files/";
constexpr char kJsonType[] = "application/vnd.pypi.simple.v1+json";

// An index or tree name, or a project as a URL names it: letters, digits, '.', '-', '_'.
bool PlainName(std::string_view s) {
  if (s.empty() || s.size() > 128 || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
  });
}

// A file name: no separators, no control bytes, not "." or "..".
bool PlainFileName(std::string_view s) {
  if (s.empty() || s.size() > 255 || s == "." || s == "..") return false;
  return std::none_of(s.begin(), s.end(), [](char c) {
    return c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
  });
}

// What went wrong upstream (unreachable, too slow, bytes that fail their sha256) is a bad
// gateway, with the cause in the body; farmd's own refusals keep their codes.
Response Failure(const Status& s) {
  Response r = ErrorResponse(s);
  if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded ||
      s.code() == StatusCode::kDataLoss) {
    r.status = 502;
    log::Warn("pull-through cache: " + s.ToString());
  }
  if (s.code() == StatusCode::kInvalidArgument) r.status = 404;  // a path no upstream has
  return r;
}

Response Answer(store::BlobStore* blobs, const mirror::MirrorAnswer& a) {
  if (a.blob_sha256.empty()) {
    Response r = TextResponse(200, a.body);
    r.content_type = a.content_type;
    return r;
  }
  auto path = blobs->LocalPath(a.blob_sha256);
  if (!path.ok()) return ErrorResponse(path.status());
  Response r;
  r.kind = BodyKind::kFile;
  r.content_type = a.content_type.empty() ? "application/octet-stream" : a.content_type;
  r.file_path = *path;
  return r;
}

Response ProjectPage(mirror::PullThroughCache& cache, const Request& req, std::string_view rest) {
  // <index>/simple/<project>/
  size_t slash = rest.find('/');
  std::string_view index = rest.substr(0, slash);
  std::string_view tail = slash == rest.npos ? "" : rest.substr(slash);
  if (!PlainName(index) || !tail.starts_with("/simple/")) {
    return ErrorResponse(Status::NotFound("no such index page"));
  }
  std::string_view project = tail.substr(8);
  if (project.ends_with('/')) project.remove_suffix(1);
  if (!PlainName(project)) {
    return ErrorResponse(Status::NotFound("the farm serves project pages only"));
  }
  const bool json = req.accept.find(kJsonType) != std::string::npos;
  // pip (and the worker) ask for index pages with "Cache-Control: max-age=0": the mirror
  // then revalidates its copy upstream (a conditional GET), so a release published a
  // moment ago is listed.
  const bool revalidate = req.cache_control.find("max-age=0") != std::string::npos ||
                          req.cache_control.find("no-cache") != std::string::npos;
  auto page =
      cache.IndexPage(std::string(index), std::string(project), json, kFilesBase, revalidate);
  if (!page.ok()) return Failure(page.status());
  Response r = TextResponse(200, page->body);
  r.content_type = page->content_type;
  return r;
}

Response File(const DashboardDeps& deps, std::string_view rest) {
  size_t slash = rest.find('/');
  if (slash == rest.npos) return ErrorResponse(Status::NotFound("no such file"));
  std::string sha(rest.substr(0, slash));
  if (!upstream::IsSha256Hex(sha) || !PlainFileName(rest.substr(slash + 1))) {
    return ErrorResponse(Status::NotFound("no such file"));
  }
  if (Status s = deps.mirror->EnsureFile(sha); !s.ok()) return Failure(s);
  return Answer(deps.blobs, {"application/octet-stream", "", sha, -1});
}

Response TreeFile(const DashboardDeps& deps, std::string_view rest) {
  size_t slash = rest.find('/');
  std::string_view tree = rest.substr(0, slash);
  if (!PlainName(tree) || slash == rest.npos)
    return ErrorResponse(Status::NotFound("no such tree"));
  auto answer = deps.mirror->TreeFile(std::string(tree), std::string(rest.substr(slash + 1)));
  if (!answer.ok()) return Failure(answer.status());
  return Answer(deps.blobs, *answer);
}

}  // namespace

std::optional<Response> HandleUpstream(const DashboardDeps& deps, const Request& req) {
  std::string_view path = req.path;
  if (!path.starts_with(kUpstreamPrefix)) return std::nullopt;
  if (deps.mirror == nullptr) {
    return ErrorResponse(
        Status::NotFound("this farm serves no upstreams (farmd --upstream-index)"));
  }
  std::string_view rest = path.substr(std::string_view(kUpstreamPrefix).size());
  if (rest.starts_with("pypi/")) return ProjectPage(*deps.mirror, req, rest.substr(5));
  if (rest.starts_with("files/")) return File(deps, rest.substr(6));
  if (rest.starts_with("tree/")) return TreeFile(deps, rest.substr(5));
  return ErrorResponse(Status::NotFound("no upstream route " + std::string(path.substr(0, 200))));
}

}  // namespace farm::http
