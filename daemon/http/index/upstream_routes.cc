#include "daemon/http/index/upstream_routes.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "common/log.h"
#include "common/upstream/simple_index.h"
#include "daemon/auth/token_authority.h"
#include "daemon/mirror/internal_access.h"
#include "daemon/mirror/pull_through.h"

namespace farm::http {
namespace {

constexpr char kJsonType[] = "application/vnd.pypi.simple.v1+json";
constexpr std::string_view kMetadataSuffix = ".metadata";

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

// pip 22.2 to 23.0 read PEP 658 metadata from HTML pages only (a JSON page's
// `core-metadata` is unknown to them, and its old name makes them fail), yet ask for JSON
// first: they are answered HTML, which their Accept header lists too. Debian 12's pip is
// 23.0.1.
bool PipWithoutJsonMetadata(std::string_view user_agent) {
  if (!user_agent.starts_with("pip/")) return false;
  int major = 0, minor = 0;
  if (std::sscanf(std::string(user_agent.substr(4, 16)).c_str(), "%d.%d", &major, &minor) != 2) {
    return false;
  }
  return major < 23 || (major == 23 && minor < 1);
}

// What a caller of these routes may do.
struct UpstreamCaller {
  Status may_read;
  bool may_pull = false;
};

// The caller's credential: farmd's internal secret, or a farm token as a bearer token or
// as the password of HTTP Basic. Workers and admins may pull; any client role reads.
UpstreamCaller CallerOf(const DashboardDeps& deps, bool public_read, const Request& req) {
  if (deps.internal != nullptr && deps.internal->Accepts(req.authorization)) {
    return {Status::Ok(), true};
  }
  std::string bearer = req.authorization;
  if (Result<std::string> password = mirror::BasicAuthPassword(req.authorization); password.ok()) {
    bearer = "Bearer " + *password;
  } else if (password.status().code() != StatusCode::kNotFound) {
    return {Status::Unauthenticated("malformed Basic authorization"), false};
  }
  if (bearer.empty() || deps.auth == nullptr) {
    return {public_read ? Status::Ok() : Status::Unauthenticated("missing bearer token"), false};
  }
  Result<auth::Principal> who = deps.auth->Identify(bearer);
  if (!who.ok()) return {who.status(), false};
  if (who->role == "worker" || who->role == "admin") return {Status::Ok(), true};
  Status reader = auth::TokenAuthority::CheckRole(*who, auth::Need::kViewer);
  return {public_read ? Status::Ok() : reader, false};
}

// What went wrong upstream (unreachable, too slow, bytes that fail their sha256) is a bad
// gateway, with the cause in the body; farmd's own refusals keep their codes. No text
// holds an upstream URL's credentials.
Response Failure(const Status& raw) {
  Status s(raw.code(), log::Redact(raw.message()));
  Response r = ErrorResponse(s);
  switch (s.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kDataLoss:
      r.status = 502;
      log::Warn("pull-through cache: " + s.ToString());
      break;
    case StatusCode::kResourceExhausted:
    case StatusCode::kCancelled:
      r.status = 503;
      r.headers.emplace_back("Retry-After", "5");
      break;
    case StatusCode::kInvalidArgument:
      r.status = 404;  // a path no upstream has
      break;
    default:
      break;
  }
  return r;
}

Response Answer(store::BlobStore* blobs, mirror::MirrorAnswer a) {
  if (a.blob_sha256.empty()) {
    Response r = TextResponse(200, std::move(a.body));
    r.content_type = a.content_type;
    return r;
  }
  auto path = blobs->LocalPath(a.blob_sha256);
  if (!path.ok()) return ErrorResponse(path.status());
  Response r;
  r.kind = BodyKind::kFile;
  r.content_type = a.content_type.empty() ? "application/octet-stream" : a.content_type;
  r.file_path = *path;
  r.hold = std::move(a.hold);
  return r;
}

mirror::AnswerCallback ToReply(store::BlobStore* blobs, Reply reply) {
  return [blobs, reply = std::move(reply)](Result<mirror::MirrorAnswer> a) {
    reply(a.ok() ? Answer(blobs, std::move(a).value()) : Failure(a.status()));
  };
}

void ProjectPage(const DashboardDeps& deps, const Request& req, std::string_view rest,
                 Reply reply) {
  // <index>/simple/<project>/
  size_t slash = rest.find('/');
  std::string_view index = rest.substr(0, slash);
  std::string_view tail = slash == rest.npos ? "" : rest.substr(slash);
  if (!PlainName(index) || !tail.starts_with("/simple/")) {
    return reply(ErrorResponse(Status::NotFound("no such index page")));
  }
  std::string_view project = tail.substr(8);
  if (project.ends_with('/')) project.remove_suffix(1);
  if (!PlainName(project)) {
    return reply(ErrorResponse(Status::NotFound("the farm serves project pages only")));
  }
  // pip (and the worker) ask for index pages with "Cache-Control: max-age=0": the mirror
  // then revalidates its copy upstream (a conditional GET), so a release published a
  // moment ago is listed.
  mirror::PageRequest page{
      .index = std::string(index),
      .project = std::string(project),
      .json = req.accept.find(kJsonType) != std::string::npos &&
              !PipWithoutJsonMetadata(req.user_agent),
      .files_base = std::string(kUpstreamPrefix) + "files/" + std::string(index) + "/",
      .revalidate = req.cache_control.find("max-age=0") != std::string::npos ||
                    req.cache_control.find("no-cache") != std::string::npos};
  deps.mirror->IndexPageAsync(page, ToReply(deps.blobs, std::move(reply)));
}

void File(const DashboardDeps& deps, std::string_view rest, bool may_pull, Reply reply) {
  // <index>/<sha256>/<filename>[.metadata]
  size_t first = rest.find('/');
  size_t second = first == rest.npos ? rest.npos : rest.find('/', first + 1);
  if (second == rest.npos) return reply(ErrorResponse(Status::NotFound("no such file")));
  mirror::FileRequest file{.index = std::string(rest.substr(0, first)),
                           .sha256 = std::string(rest.substr(first + 1, second - first - 1)),
                           .filename = std::string(rest.substr(second + 1)),
                           .may_pull = may_pull};
  if (file.filename.ends_with(kMetadataSuffix)) {
    file.metadata = true;
    file.filename.resize(file.filename.size() - kMetadataSuffix.size());
  }
  if (!PlainName(file.index) || !upstream::IsSha256Hex(file.sha256) ||
      !PlainFileName(file.filename)) {
    return reply(ErrorResponse(Status::NotFound("no such file")));
  }
  deps.mirror->FileAsync(file, ToReply(deps.blobs, std::move(reply)));
}

void TreeFile(const DashboardDeps& deps, std::string_view rest, bool may_pull, Reply reply) {
  size_t slash = rest.find('/');
  std::string_view tree = rest.substr(0, slash);
  if (!PlainName(tree) || slash == rest.npos) {
    return reply(ErrorResponse(Status::NotFound("no such tree")));
  }
  deps.mirror->TreeFileAsync(std::string(tree), std::string(rest.substr(slash + 1)), may_pull,
                             ToReply(deps.blobs, std::move(reply)));
}

}  // namespace

bool IsUpstreamRequest(const Request& req) {
  return std::string_view(req.path).starts_with(kUpstreamPrefix);
}

void HandleUpstreamAsync(const DashboardDeps& deps, bool public_read, const Request& req,
                         Reply reply) {
  std::string_view path = req.path;
  if (!IsRead(req)) return reply(MethodNotAllowed("GET, HEAD"));
  if (deps.mirror == nullptr) {
    return reply(
        ErrorResponse(Status::NotFound("this farm serves no upstreams (farmd --upstream-index)")));
  }
  UpstreamCaller caller = CallerOf(deps, public_read, req);
  if (!caller.may_read.ok()) return reply(ErrorResponse(caller.may_read));
  std::string_view rest = path.substr(std::string_view(kUpstreamPrefix).size());
  if (rest.starts_with("pypi/")) return ProjectPage(deps, req, rest.substr(5), std::move(reply));
  if (rest.starts_with("files/")) {
    return File(deps, rest.substr(6), caller.may_pull, std::move(reply));
  }
  if (rest.starts_with("tree/")) {
    return TreeFile(deps, rest.substr(5), caller.may_pull, std::move(reply));
  }
  reply(ErrorResponse(Status::NotFound("no upstream route " + std::string(path.substr(0, 200)))));
}

}  // namespace farm::http
