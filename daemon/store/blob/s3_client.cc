#include "daemon/store/blob/s3_client.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>

#include "common/httpc/http_util.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/utf8.h"

namespace farm::s3 {
namespace {

// The text of the first <tag>...</tag> in `xml`, "" when absent. S3's answers are flat
// enough that this needs no XML parser.
std::string Tag(const std::string& xml, const std::string& tag) {
  size_t open = xml.find("<" + tag + ">");
  if (open == std::string::npos) return "";
  open += tag.size() + 2;
  size_t close = xml.find("</" + tag + ">", open);
  return close == std::string::npos ? "" : xml.substr(open, close - open);
}

Result<std::string> Sha256FileRange(const std::string& path, int64_t offset, int64_t length) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(path.c_str(), "rb"), fclose);
  if (!f || fseeko(f.get(), offset, SEEK_SET) != 0) return Status::NotFound("cannot read " + path);
  Sha256 hasher;
  std::string buf(1 << 20, '\0');
  while (length > 0) {
    size_t want = static_cast<size_t>(std::min<int64_t>(length, buf.size()));
    size_t n = fread(buf.data(), 1, want, f.get());
    if (n == 0) return Status::DataLoss(path + " ended early");
    hasher.Update(std::string_view(buf.data(), n));
    length -= static_cast<int64_t>(n);
  }
  return hasher.HexDigest();
}

bool Retryable(const Result<httpc::HttpResponse>& r) {
  if (!r.ok()) {
    return r.status().code() == StatusCode::kUnavailable ||
           r.status().code() == StatusCode::kDeadlineExceeded;
  }
  int s = r->status;
  // A 200 answer to CompleteMultipartUpload may still carry an error (S3's documentation
  // says to retry it then).
  if (s == 200 && r->body.find("<Error>") != std::string::npos) return true;
  return s == 500 || s == 502 || s == 503 || s == 504;
}

std::string HostOf(const std::string& endpoint) {
  size_t start = endpoint.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = endpoint.find('/', start);
  return endpoint.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

std::string S3ErrorText(const std::string& body) {
  std::string code = Tag(body, "Code");
  if (code.empty()) return "no S3 error document";
  std::string message = Tag(body, "Message");
  return message.empty() ? code : code + ": " + message.substr(0, 300);
}

S3Client::S3Client(S3Config config, httpc::HttpClient& http, const Clock& clock,
                   httpc::Sleeper& sleeper, RetryLimits limits)
    : config_(std::move(config)),
      host_(HostOf(config_.endpoint)),
      http_(http),
      clock_(clock),
      sleeper_(sleeper),
      limits_(limits) {
  while (!config_.endpoint.empty() && config_.endpoint.back() == '/') {
    const_cast<std::string&>(config_.endpoint).pop_back();
  }
}

std::string S3Client::Path(const std::string& key) const {
  return key.empty() ? "/" + config_.bucket : "/" + config_.bucket + "/" + key;
}

Result<httpc::HttpResponse> S3Client::Send(const Call& call) {
  const int64_t start = clock_.SteadyMs();
  Result<httpc::HttpResponse> last = Status::Unavailable("not sent");
  for (int attempt = 1;; ++attempt) {
    SignableRequest signable{.method = call.method,
                             .path = Path(call.key),
                             .query = call.query,
                             .headers = call.headers,
                             .payload_sha256 = call.payload_sha256};
    signable.headers.emplace_back("host", host_);
    std::string authorization = SignWithHeader(&signable, config_.credentials, config_.region, "s3",
                                               clock_.NowUnixMs() / 1000);
    httpc::HttpRequest request;
    request.method = call.method;
    request.url = config_.endpoint + UriEncode(signable.path, true);
    std::string query = CanonicalQuery(call.query);
    if (!query.empty()) request.url += "?" + query;
    for (const auto& [name, value] : signable.headers) request.headers.Set(name, value);
    request.headers.Set("Authorization", authorization);
    request.body = call.body;
    request.body_file = call.body_file;
    request.body_offset = call.body_offset;
    request.body_length = call.body_length;
    request.timeout_ms = 0;  // large parts rely on the stall limit
    last = http_.Send(request);
    if (!Retryable(last) || attempt >= limits_.max_attempts) return last;
    int64_t backoff = std::min(limits_.max_backoff_ms, limits_.base_backoff_ms << (attempt - 1));
    // Equal jitter: half the backoff fixed, half random, so a fleet does not retry in step.
    int64_t wait = backoff / 2 + static_cast<int64_t>(std::stoul(RandomHex(3), nullptr, 16) %
                                                      static_cast<uint64_t>(backoff / 2 + 1));
    if (clock_.SteadyMs() - start + wait > limits_.max_total_ms) return last;
    log::Warn("S3 " + call.op + " " + call.key + " answered " +
              (last.ok()
                   ? "HTTP " + std::to_string(last->status) + " (" + S3ErrorText(last->body) + ")"
                   : last.status().message()) +
              "; retrying in " + std::to_string(wait) + " ms");
    sleeper_.SleepMs(wait);
  }
}

Result<httpc::HttpResponse> S3Client::SendOk(const Call& call) {
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse r, Send(call));
  if (r.status / 100 == 2 && r.body.find("<Error>") == std::string::npos) return r;
  std::string what = "S3 " + call.op + " " + config_.bucket + "/" + call.key;
  std::string text = S3ErrorText(r.body);
  StatusCode code = httpc::CodeForHttpStatus(r.status);
  if (text.starts_with("SignatureDoesNotMatch") || text.starts_with("AccessDenied") ||
      text.starts_with("InvalidAccessKeyId")) {
    code = StatusCode::kPermissionDenied;
  } else if (r.status == 409 || r.status == 422) {
    code = StatusCode::kFailedPrecondition;
  } else if (r.status == 200) {
    code = StatusCode::kUnavailable;
  }
  return Status(code, what + ": HTTP " + std::to_string(r.status) + ": " + log::Redact(text));
}

Result<int64_t> S3Client::HeadObject(const std::string& key) {
  FARM_ASSIGN_OR_RETURN(
      httpc::HttpResponse r,
      SendOk({.op = "HEAD", .method = "HEAD", .key = key, .payload_sha256 = Sha256Hex("")}));
  auto length = r.headers.Get("Content-Length");
  if (!length) return Status::Internal("S3 HEAD " + key + " answered without Content-Length");
  return std::stoll(*length);
}

Status S3Client::PutObject(const std::string& key, const std::string& file, int64_t size,
                           const std::string& sha256_hex) {
  return SendOk({.op = "PUT",
                 .method = "PUT",
                 .key = key,
                 .headers = {{"content-type", "application/octet-stream"}},
                 .body_file = file,
                 .body_length = size,
                 .payload_sha256 = sha256_hex})
      .status();
}

Result<std::string> S3Client::CreateMultipartUpload(const std::string& key) {
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse r,
                        SendOk({.op = "CreateMultipartUpload",
                                .method = "POST",
                                .key = key,
                                .query = {{"uploads", ""}},
                                .headers = {{"content-type", "application/octet-stream"}},
                                .payload_sha256 = Sha256Hex("")}));
  std::string id = Tag(r.body, "UploadId");
  if (id.empty()) return Status::Internal("S3 CreateMultipartUpload " + key + " gave no UploadId");
  return id;
}

Result<std::string> S3Client::UploadPart(const std::string& key, const std::string& upload_id,
                                         int part, const std::string& file, int64_t offset,
                                         int64_t length) {
  FARM_ASSIGN_OR_RETURN(std::string sha, Sha256FileRange(file, offset, length));
  FARM_ASSIGN_OR_RETURN(
      httpc::HttpResponse r,
      SendOk({.op = "UploadPart",
              .method = "PUT",
              .key = key,
              .query = {{"partNumber", std::to_string(part)}, {"uploadId", upload_id}},
              .body_file = file,
              .body_offset = offset,
              .body_length = length,
              .payload_sha256 = sha}));
  auto etag = r.headers.Get("ETag");
  if (!etag || etag->empty()) return Status::Internal("S3 UploadPart " + key + " gave no ETag");
  return *etag;
}

Status S3Client::CompleteMultipartUpload(const std::string& key, const std::string& upload_id,
                                         const std::vector<std::string>& etags) {
  std::string body = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" +
            EscapeMarkup(etags[i]) + "</ETag></Part>";
  }
  body += "</CompleteMultipartUpload>";
  auto done = SendOk({.op = "CompleteMultipartUpload",
                      .method = "POST",
                      .key = key,
                      .query = {{"uploadId", upload_id}},
                      .headers = {{"content-type", "application/xml"}},
                      .body = body,
                      .payload_sha256 = Sha256Hex(body)});
  if (done.ok()) return Status::Ok();
  // A retry after a lost answer finds the upload gone: the object tells whether it worked.
  if (done.status().code() == StatusCode::kNotFound && HeadObject(key).ok()) return Status::Ok();
  return done.status();
}

Status S3Client::AbortMultipartUpload(const std::string& key, const std::string& upload_id) {
  auto r = SendOk({.op = "AbortMultipartUpload",
                   .method = "DELETE",
                   .key = key,
                   .query = {{"uploadId", upload_id}},
                   .payload_sha256 = Sha256Hex("")});
  if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
  return Status::Ok();
}

Result<std::string> S3Client::GetRange(const std::string& key, int64_t offset, int64_t length,
                                       int64_t* total) {
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse r,
                        SendOk({.op = "GET",
                                .method = "GET",
                                .key = key,
                                .headers = {{"range", "bytes=" + std::to_string(offset) + "-" +
                                                          std::to_string(offset + length - 1)}},
                                .payload_sha256 = Sha256Hex("")}));
  std::string range = r.headers.GetOr("Content-Range", "");  // "bytes 0-9/1234"
  size_t slash = range.rfind('/');
  if (r.status != 206 || slash == std::string::npos) {
    return Status::Internal("S3 GET " + key + " ignored the byte range");
  }
  *total = std::stoll(range.substr(slash + 1));
  return std::move(r.body);
}

Status S3Client::DeleteObject(const std::string& key) {
  auto r =
      SendOk({.op = "DELETE", .method = "DELETE", .key = key, .payload_sha256 = Sha256Hex("")});
  if (!r.ok() && r.status().code() != StatusCode::kNotFound) return r.status();
  return Status::Ok();
}

Result<std::vector<std::string>> S3Client::ListKeys(const std::string& prefix,
                                                    std::string* continuation) {
  Params query = {{"list-type", "2"}, {"prefix", prefix}};
  if (!continuation->empty()) query.emplace_back("continuation-token", *continuation);
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse r, SendOk({.op = "ListObjectsV2",
                                                       .method = "GET",
                                                       .query = query,
                                                       .payload_sha256 = Sha256Hex("")}));
  std::vector<std::string> keys;
  for (size_t at = r.body.find("<Key>"); at != std::string::npos;
       at = r.body.find("<Key>", at + 1)) {
    keys.push_back(Tag(r.body.substr(at, 2048), "Key"));
  }
  *continuation = Tag(r.body, "IsTruncated") == "true" ? Tag(r.body, "NextContinuationToken") : "";
  return keys;
}

Result<std::vector<S3Client::PendingUpload>> S3Client::ListMultipartUploads(
    const std::string& prefix, std::string* marker) {
  Params query = {{"uploads", ""}, {"prefix", prefix}};
  if (size_t nl = marker->find('\n'); nl != std::string::npos) {
    query.emplace_back("key-marker", marker->substr(0, nl));
    query.emplace_back("upload-id-marker", marker->substr(nl + 1));
  }
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse r, SendOk({.op = "ListMultipartUploads",
                                                       .method = "GET",
                                                       .query = query,
                                                       .payload_sha256 = Sha256Hex("")}));
  std::vector<PendingUpload> uploads;
  for (size_t at = r.body.find("<Upload>"); at != std::string::npos;
       at = r.body.find("<Upload>", at + 1)) {
    std::string item = r.body.substr(at, r.body.find("</Upload>", at) - at);
    struct tm tm_utc = {};
    std::string initiated = Tag(item, "Initiated");  // "2026-11-24T10:00:00.000Z"
    int64_t when = strptime(initiated.c_str(), "%Y-%m-%dT%H:%M:%S", &tm_utc) != nullptr
                       ? static_cast<int64_t>(timegm(&tm_utc))
                       : 0;
    uploads.push_back({Tag(item, "Key"), Tag(item, "UploadId"), when});
  }
  *marker = Tag(r.body, "IsTruncated") == "true"
                ? Tag(r.body, "NextKeyMarker") + "\n" + Tag(r.body, "NextUploadIdMarker")
                : "";
  return uploads;
}

std::string S3Client::PresignedGetUrl(const std::string& key, int64_t ttl_s,
                                      const Params& overrides) {
  SignableRequest signable{
      .method = "GET", .path = Path(key), .query = overrides, .headers = {{"host", host_}}};
  Presign(&signable, config_.credentials, config_.region, "s3", clock_.NowUnixMs() / 1000, ttl_s);
  return config_.endpoint + UriEncode(signable.path, true) + "?" + CanonicalQuery(signable.query);
}

}  // namespace farm::s3
