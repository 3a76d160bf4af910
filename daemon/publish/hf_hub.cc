#include "daemon/publish/hf_hub.h"

#include <openssl/evp.h>

#include <algorithm>

#include "common/fs.h"
#include "common/httpc/http_util.h"
#include "common/log.h"
#include "common/sha256.h"

namespace farm::publish {

namespace json = boost::json;

struct HfHubClient::LocalFile {
  std::string path;
  std::string sha256_hex;
  int64_t size = 0;
};

namespace {

constexpr int64_t kSampleBytes = 512;
constexpr int kMaxParts = 10'000;

// Git-style URL prefix of the LFS endpoint: models have none.
std::string GitPrefix(const std::string& repo_type) {
  return repo_type == "model" ? "" : repo_type + "s/";
}

Result<std::string> ReadPrefix(const std::string& path, int64_t max_bytes) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(path.c_str(), "rb"), fclose);
  if (!f) return Status::NotFound("cannot open " + path);
  std::string data(static_cast<size_t>(max_bytes), '\0');
  size_t n = fread(data.data(), 1, data.size(), f.get());
  data.resize(n);
  return data;
}

const json::object* ObjectAt(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_object() ? &it->value().as_object() : nullptr;
}

std::string Line(const std::string& key, json::object value) {
  json::object line;
  line["key"] = key;
  line["value"] = std::move(value);
  return json::serialize(line) + "\n";
}

// True when `remote` holds the bytes of the local file: by sha256 for LFS files, by git
// blob id for small regular ones.
Result<bool> SameBytes(const HfRepoFile& remote, const std::string& local_path,
                       const std::string& sha256_hex, int64_t size, int64_t max_regular) {
  if (!remote.lfs_sha256.empty()) return remote.lfs_sha256 == sha256_hex;
  if (remote.size != size || size > max_regular) return false;
  FARM_ASSIGN_OR_RETURN(std::string content, fs::ReadFile(local_path));
  return remote.git_oid == GitBlobSha1(content);
}

json::object LfsBatchBody(const std::string& revision, const std::string& sha256_hex,
                          int64_t size) {
  json::object object;
  object["oid"] = sha256_hex;
  object["size"] = size;
  json::object body;
  body["operation"] = "upload";
  body["transfers"] = json::array{"basic", "multipart"};
  body["objects"] = json::array{object};
  body["hash_algo"] = "sha256";
  body["ref"] = json::object{{"name", revision}};
  return body;
}

// The first object of a batch answer, or an error for a malformed or refused one.
Result<json::object> FirstLfsObject(const json::object& answer, const std::string& oid) {
  auto objects = answer.find("objects");
  if (objects == answer.end() || !objects->value().is_array() ||
      objects->value().as_array().empty() || !objects->value().as_array()[0].is_object()) {
    return Status::InvalidArgument("LFS batch answer without objects");
  }
  const json::object& first = objects->value().as_array()[0].as_object();
  if (const json::object* error = ObjectAt(first, "error")) {
    std::string message = httpc::JsonString(*error, "message");
    std::string text = log::Redact("LFS batch refused " + oid + ": " + message);
    // "Maximum individual file size is 50.0GB": the Hub's per-file limit, final.
    if (message.find("file size") != std::string::npos) {
      return Status(StatusCode::kOutOfRange, "too large for the Hugging Face Hub: " + text);
    }
    return Status::FailedPrecondition(text);
  }
  return first;
}

httpc::HttpHeaders StringHeaders(const json::object* header) {
  httpc::HttpHeaders out;
  if (header == nullptr) return out;
  for (const auto& [k, v] : *header) {
    if (v.is_string()) out.Set(std::string(k), std::string(v.as_string()));
  }
  return out;
}

}  // namespace

std::string RenderHfPath(const std::string& path_template, const std::string& variant,
                         const std::string& wheel) {
  std::string out = path_template;
  for (const auto& [key, value] :
       {std::pair<std::string, std::string>{"{variant}", variant}, {"{wheel}", wheel}}) {
    for (size_t pos = out.find(key); pos != std::string::npos;
         pos = out.find(key, pos + value.size())) {
      out.replace(pos, key.size(), value);
    }
  }
  return out;
}

std::string HfKernelVariant(const std::string& torch, const std::string& cuda,
                            const std::string& platform) {
  auto nodot = [](std::string s) {
    s.erase(std::remove(s.begin(), s.end(), '.'), s.end());
    return s;
  };
  std::string arch = platform;
  if (arch.rfind("linux_", 0) == 0) arch = arch.substr(6);
  return "torch" + nodot(torch) + "-cxx11-cu" + nodot(cuda) + "-" + arch + "-linux";
}

std::string GitBlobSha1(const std::string& content) {
  std::string data = "blob " + std::to_string(content.size()) + std::string(1, '\0') + content;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha1(), nullptr);
  return ToHex(std::string_view(reinterpret_cast<const char*>(digest), len));
}

HfHubClient::HfHubClient(httpc::RetryingHttpClient& http, HfOptions options)
    : http_(http), options_(std::move(options)) {
  log::RegisterSecret(options_.token);
}

httpc::HttpRequest HfHubClient::NewRequest(const std::string& method, const std::string& url,
                                           bool with_token) const {
  httpc::HttpRequest r;
  r.method = method;
  r.url = url;
  r.follow_redirects = method == "GET";  // Hub redirects renamed repos
  r.headers.Set("User-Agent", options_.user_agent);
  // The token goes to the Hub endpoint only, never to presigned storage URLs.
  if (with_token && url.rfind(options_.endpoint + "/", 0) == 0) {
    r.headers.Set("Authorization", "Bearer " + options_.token);
  }
  return r;
}

std::string HfHubClient::ApiRepoUrl(const std::string& repo_id) const {
  return options_.endpoint + "/api/" + options_.repo_type + "s/" + repo_id;
}

Status HfHubClient::CreateRepo(const std::string& repo_id, bool private_repo) {
  size_t slash = repo_id.find('/');
  if (slash == std::string::npos) return Status::InvalidArgument("repo id must be owner/name");
  json::object body;
  body["name"] = repo_id.substr(slash + 1);
  body["organization"] = repo_id.substr(0, slash);
  if (options_.repo_type != "model") body["type"] = options_.repo_type;
  body["private"] = private_repo;
  httpc::HttpRequest r = NewRequest("POST", options_.endpoint + "/api/repos/create", true);
  r.headers.Set("Content-Type", "application/json");
  r.body = json::serialize(body);
  // A repeat after a lost response answers 409, which means done: safe to retry.
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp, http_.Send(r, httpc::Idempotency::kIdempotent));
  if (resp.status == 200 || resp.status == 201 || resp.status == 409) return Status::Ok();
  return httpc::HttpError("create repo " + repo_id, resp);
}

Result<std::string> HfHubClient::GetRevisionSha(const std::string& repo_id,
                                                const std::string& revision) {
  std::string url = ApiRepoUrl(repo_id) + "/revision/" + httpc::PercentEncode(revision);
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp,
                        http_.Send(NewRequest("GET", url, true), httpc::Idempotency::kIdempotent));
  if (resp.status != 200)
    return httpc::HttpError("read revision " + revision + " of " + repo_id, resp);
  FARM_ASSIGN_OR_RETURN(json::object o, httpc::ParseObject(resp, "revision info"));
  std::string sha = httpc::JsonString(o, "sha");
  if (sha.empty()) return Status::InvalidArgument("revision info without sha");
  return sha;
}

Result<std::optional<HfRepoFile>> HfHubClient::GetPathInfo(const std::string& repo_id,
                                                           const std::string& revision,
                                                           const std::string& path) {
  json::object body;
  body["paths"] = json::array{json::value(path)};
  body["expand"] = false;
  httpc::HttpRequest r = NewRequest(
      "POST", ApiRepoUrl(repo_id) + "/paths-info/" + httpc::PercentEncode(revision), true);
  r.headers.Set("Content-Type", "application/json");
  r.body = json::serialize(body);
  // A read despite the POST: safe to repeat.
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp, http_.Send(r, httpc::Idempotency::kIdempotent));
  if (resp.status != 200) return httpc::HttpError("paths-info " + path, resp);
  FARM_ASSIGN_OR_RETURN(json::value v, httpc::ParseJson(resp.body, "paths-info"));
  if (!v.is_array()) return Status::InvalidArgument("paths-info is not an array");
  for (const auto& item : v.as_array()) {
    if (!item.is_object()) continue;
    const auto& o = item.as_object();
    if (httpc::JsonString(o, "path") != path || httpc::JsonString(o, "type") != "file") continue;
    HfRepoFile f{path, httpc::JsonInt(o, "size"), httpc::JsonString(o, "oid"), ""};
    if (const json::object* lfs = ObjectAt(o, "lfs")) f.lfs_sha256 = httpc::JsonString(*lfs, "oid");
    if (f.lfs_sha256.rfind("sha256:", 0) == 0) f.lfs_sha256 = f.lfs_sha256.substr(7);
    return std::optional(f);
  }
  return std::optional<HfRepoFile>();
}

Result<std::string> HfHubClient::Preupload(const std::string& repo_id, const std::string& revision,
                                           const std::string& path_in_repo,
                                           const std::string& local_path, int64_t size) {
  FARM_ASSIGN_OR_RETURN(std::string sample, ReadPrefix(local_path, kSampleBytes));
  json::object file;
  file["path"] = path_in_repo;
  file["size"] = size;
  file["sample"] = httpc::Base64Encode(sample);
  json::object body;
  body["files"] = json::array{file};
  httpc::HttpRequest r = NewRequest(
      "POST", ApiRepoUrl(repo_id) + "/preupload/" + httpc::PercentEncode(revision), true);
  r.headers.Set("Content-Type", "application/json");
  r.body = json::serialize(body);
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp, http_.Send(r, httpc::Idempotency::kIdempotent));
  if (resp.status != 200) return httpc::HttpError("preupload " + path_in_repo, resp);
  FARM_ASSIGN_OR_RETURN(json::object o, httpc::ParseObject(resp, "preupload answer"));
  auto it = o.find("files");
  if (it != o.end() && it->value().is_array()) {
    for (const auto& f : it->value().as_array()) {
      if (!f.is_object() || httpc::JsonString(f.as_object(), "path") != path_in_repo) continue;
      if (httpc::JsonBool(f.as_object(), "shouldIgnore")) {
        return Status::InvalidArgument(path_in_repo + " is ignored by the repo's .gitignore");
      }
      // Empty files are always regular, as huggingface_hub forces.
      return size == 0 ? std::string("regular") : httpc::JsonString(f.as_object(), "uploadMode");
    }
  }
  return Status::InvalidArgument("preupload answer does not mention " + path_in_repo);
}

Status HfHubClient::UploadLfsObject(const std::string& repo_id, const std::string& revision,
                                    const std::string& local_path, const std::string& sha256_hex,
                                    int64_t size) {
  std::string url = options_.endpoint + "/" + GitPrefix(options_.repo_type) + repo_id +
                    ".git/info/lfs/objects/batch";
  httpc::HttpRequest r = NewRequest("POST", url, true);
  r.headers.Set("Accept", "application/vnd.git-lfs+json");
  r.headers.Set("Content-Type", "application/vnd.git-lfs+json");
  r.body = json::serialize(LfsBatchBody(revision, sha256_hex, size));
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp, http_.Send(r, httpc::Idempotency::kIdempotent));
  if (resp.status != 200) return httpc::HttpError("LFS batch for " + sha256_hex, resp);
  FARM_ASSIGN_OR_RETURN(json::object o, httpc::ParseObject(resp, "LFS batch answer"));
  FARM_ASSIGN_OR_RETURN(json::object answer, FirstLfsObject(o, sha256_hex));
  const json::object* actions = ObjectAt(answer, "actions");
  const json::object* upload = actions ? ObjectAt(*actions, "upload") : nullptr;
  if (upload == nullptr) return Status::Ok();  // the Hub already stores these bytes
  const json::object* header = ObjectAt(*upload, "header");
  std::string href = httpc::JsonString(*upload, "href");
  if (header != nullptr && header->contains("chunk_size")) {
    FARM_RETURN_IF_ERROR(PutMultipart(href, *header, sha256_hex, local_path, size));
  } else {
    FARM_RETURN_IF_ERROR(PutBasic(href, StringHeaders(header), local_path, size));
  }
  const json::object* verify = actions ? ObjectAt(*actions, "verify") : nullptr;
  if (verify != nullptr && options_.verify) return Verify(*verify, sha256_hex, size);
  return Status::Ok();
}

Status HfHubClient::PutBasic(const std::string& href, const httpc::HttpHeaders& headers,
                             const std::string& local_path, int64_t size) {
  httpc::HttpRequest r = NewRequest("PUT", href, false);
  for (const auto& [k, v] : headers.all()) r.headers.Set(k, v);
  r.body_file = local_path;
  r.body_length = size;
  r.timeout_ms = 0;
  // PUT of fixed bytes to a fixed URL: repeating it is harmless.
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp, http_.Send(r, httpc::Idempotency::kIdempotent));
  if (resp.status / 100 != 2) return httpc::HttpError("LFS upload", resp);
  return Status::Ok();
}

Status HfHubClient::PutMultipart(const std::string& href, const json::object& header,
                                 const std::string& sha256_hex, const std::string& local_path,
                                 int64_t size) {
  int64_t chunk = 0;
  if (auto it = header.find("chunk_size"); it != header.end()) {
    if (it->value().is_string()) chunk = std::atoll(it->value().as_string().c_str());
    if (it->value().is_int64()) chunk = it->value().as_int64();
  }
  if (chunk <= 0) return Status::InvalidArgument("LFS multipart answer without chunk_size");
  int64_t parts = (size + chunk - 1) / chunk;
  if (parts > kMaxParts || static_cast<int64_t>(header.size()) - 1 != parts) {
    return Status::InvalidArgument("LFS multipart answer offers " +
                                   std::to_string(header.size() - 1) + " part URLs, expected " +
                                   std::to_string(parts));
  }
  json::array etags;
  for (int64_t n = 1; n <= parts; ++n) {
    auto it = header.find(std::to_string(n));
    if (it == header.end() || !it->value().is_string()) {
      return Status::InvalidArgument("LFS multipart answer lacks part " + std::to_string(n));
    }
    httpc::HttpRequest r = NewRequest("PUT", std::string(it->value().as_string()), false);
    r.body_file = local_path;
    r.body_offset = (n - 1) * chunk;
    r.body_length = std::min(chunk, size - r.body_offset);
    r.timeout_ms = 0;
    FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp, http_.Send(r, httpc::Idempotency::kIdempotent));
    if (resp.status / 100 != 2) return httpc::HttpError("LFS part " + std::to_string(n), resp);
    auto etag = resp.headers.Get("etag");
    if (!etag) return Status::InvalidArgument("LFS part " + std::to_string(n) + " without ETag");
    etags.push_back(json::object{{"partNumber", n}, {"etag", *etag}});
  }
  httpc::HttpRequest done = NewRequest("POST", href, false);
  done.headers.Set("Accept", "application/vnd.git-lfs+json");
  done.headers.Set("Content-Type", "application/vnd.git-lfs+json");
  done.body = json::serialize(json::object{{"oid", sha256_hex}, {"parts", etags}});
  // Completing the same parts twice yields the same object.
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp,
                        http_.Send(done, httpc::Idempotency::kIdempotent));
  if (resp.status / 100 != 2) return httpc::HttpError("LFS multipart completion", resp);
  return Status::Ok();
}

Status HfHubClient::Verify(const json::object& action, const std::string& sha256_hex,
                           int64_t size) {
  httpc::HttpRequest r = NewRequest("POST", httpc::JsonString(action, "href"), true);
  httpc::HttpHeaders extra = StringHeaders(ObjectAt(action, "header"));
  for (const auto& [k, v] : extra.all()) r.headers.Set(k, v);
  r.headers.Set("Accept", "application/vnd.git-lfs+json");
  r.headers.Set("Content-Type", "application/vnd.git-lfs+json");
  r.body = json::serialize(json::object{{"oid", sha256_hex}, {"size", size}});
  FARM_ASSIGN_OR_RETURN(httpc::HttpResponse resp, http_.Send(r, httpc::Idempotency::kIdempotent));
  if (resp.status / 100 != 2) return httpc::HttpError("LFS verify " + sha256_hex, resp);
  return Status::Ok();
}

Result<HfHubClient::LocalFile> HfHubClient::ResolveLocalFile(const HfUploadRequest& request) const {
  LocalFile f;
  f.path = request.local_path;
  FARM_ASSIGN_OR_RETURN(f.sha256_hex, Sha256FileHex(request.local_path, &f.size));
  if (!request.sha256_hex.empty() && request.sha256_hex != f.sha256_hex) {
    return Status::DataLoss("file " + request.local_path + " has sha256 " + f.sha256_hex +
                            ", expected " + request.sha256_hex);
  }
  return f;
}

Result<HfUploadResult> HfHubClient::CommitOnce(const HfUploadRequest& request,
                                               const LocalFile& file, const std::string& parent) {
  std::string summary =
      request.summary.empty() ? "Upload " + request.path_in_repo : request.summary;
  std::string body = Line("header", json::object{{"summary", summary},
                                                 {"description", request.description},
                                                 {"parentCommit", parent}});
  FARM_ASSIGN_OR_RETURN(std::string mode, Preupload(request.repo_id, request.revision,
                                                    request.path_in_repo, file.path, file.size));
  if (mode == "lfs") {
    body += Line("lfsFile", json::object{{"path", request.path_in_repo},
                                         {"algo", "sha256"},
                                         {"oid", file.sha256_hex},
                                         {"size", file.size}});
  } else {
    if (file.size > options_.max_regular_bytes) {
      return Status::FailedPrecondition("Hub asked for a regular upload of a large file");
    }
    FARM_ASSIGN_OR_RETURN(std::string content, fs::ReadFile(file.path));
    body += Line("file", json::object{{"path", request.path_in_repo},
                                      {"content", httpc::Base64Encode(content)},
                                      {"encoding", "base64"}});
  }
  if (mode == "lfs") {
    FARM_RETURN_IF_ERROR(
        UploadLfsObject(request.repo_id, request.revision, file.path, file.sha256_hex, file.size));
  }
  httpc::HttpRequest r = NewRequest(
      "POST", ApiRepoUrl(request.repo_id) + "/commit/" + httpc::PercentEncode(request.revision),
      true);
  r.headers.Set("Content-Type", "application/x-ndjson");
  r.body = body;
  auto outcome = http_.Send(r, httpc::Idempotency::kNotIdempotent);
  if (!outcome.ok()) return outcome.status();
  if (outcome.value().status != 200 && outcome.value().status != 201) {
    return httpc::HttpError("commit " + request.path_in_repo, outcome.value());
  }
  FARM_ASSIGN_OR_RETURN(json::object o, httpc::ParseObject(outcome.value(), "commit answer"));
  return HfUploadResult{HfOutcome::kCommitted, httpc::JsonString(o, "commitOid"),
                        httpc::JsonString(o, "commitUrl")};
}

Result<std::optional<HfUploadResult>> HfHubClient::CheckLanded(const HfUploadRequest& request,
                                                               const LocalFile& file,
                                                               std::string* head) {
  FARM_ASSIGN_OR_RETURN(std::string now_head, GetRevisionSha(request.repo_id, request.revision));
  if (now_head == *head) return std::optional<HfUploadResult>();  // nothing landed
  *head = now_head;
  FARM_ASSIGN_OR_RETURN(auto remote, GetPathInfo(request.repo_id, now_head, request.path_in_repo));
  if (!remote) return std::optional<HfUploadResult>();
  FARM_ASSIGN_OR_RETURN(bool same, SameBytes(*remote, file.path, file.sha256_hex, file.size,
                                             options_.max_regular_bytes));
  if (same) return std::optional(HfUploadResult{HfOutcome::kCommitted, now_head, ""});
  return std::optional<HfUploadResult>();
}

Result<HfUploadResult> HfHubClient::UploadFile(const HfUploadRequest& request) {
  FARM_ASSIGN_OR_RETURN(LocalFile file, ResolveLocalFile(request));
  FARM_ASSIGN_OR_RETURN(std::string head, GetRevisionSha(request.repo_id, request.revision));
  FARM_ASSIGN_OR_RETURN(auto remote, GetPathInfo(request.repo_id, head, request.path_in_repo));
  if (remote) {
    FARM_ASSIGN_OR_RETURN(bool same, SameBytes(*remote, file.path, file.sha256_hex, file.size,
                                               options_.max_regular_bytes));
    if (same) return HfUploadResult{HfOutcome::kAlreadyPresent, "", ""};
    if (!request.replace) {
      return Status::AlreadyExists("conflict: " + request.repo_id + ":" + request.path_in_repo +
                                   " already holds other bytes (sha256 " + remote->lfs_sha256 +
                                   "); set replace to overwrite it");
    }
  }
  Status last;
  for (int attempt = 1; attempt <= options_.max_commit_attempts; ++attempt) {
    auto committed = CommitOnce(request, file, head);
    if (committed.ok()) return committed;
    last = committed.status();
    StatusCode code = last.code();
    bool unknown = code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded ||
                   code == StatusCode::kFailedPrecondition ||
                   code == StatusCode::kResourceExhausted;
    if (!unknown) return last;
    log::Warn(log::Redact("commit of " + request.path_in_repo + " failed (" + last.message() +
                          "); checking the branch before retrying"));
    FARM_ASSIGN_OR_RETURN(auto landed, CheckLanded(request, file, &head));
    if (landed) return *landed;
    if (attempt < options_.max_commit_attempts) http_.Backoff(attempt);
  }
  return last;
}

}  // namespace farm::publish
