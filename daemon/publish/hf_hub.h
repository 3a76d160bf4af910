// HfHubClient: uploads one file to a Hugging Face Hub repository the way huggingface_hub
// does without Xet: create repo (exist_ok) → preupload → Git LFS batch (basic or
// multipart) → optional verify → NDJSON commit. docs/publishing.md has the details.
//
// A commit is never repeated blindly, since a repeated commit after a lost response
// would duplicate it: after any failure the branch head is read again
// (GET /api/{type}s/{repo}/revision/{rev}) and the path is looked up with
// POST /api/{type}s/{repo}/paths-info/{rev}; if the file is there with our sha256 the
// commit did land. Retried commits carry parentCommit, so a stale retry is rejected
// (412) rather than applied twice.
//
// The token is registered with farm::log::RegisterSecret and sent only in the
// Authorization header, and only to the configured endpoint (never to presigned storage
// URLs). Error messages pass through farm::log::Redact.
//
// Thread-safety: methods may be called concurrently; concurrent uploads to one branch
// race on parentCommit and are resolved by the retry loop.
#ifndef FARM_DAEMON_PUBLISH_HF_HUB_H_
#define FARM_DAEMON_PUBLISH_HF_HUB_H_

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "common/httpc/retrying_http_client.h"
#include "common/status.h"

namespace farm::publish {

struct HfOptions {
  std::string endpoint = "https://huggingface.co";  // no trailing slash
  std::string token;
  std::string user_agent = "gpu-wheel-farm";
  std::string repo_type = "model";  // model | dataset | space | kernel
  int max_commit_attempts = 3;
  bool verify = true;                    // POST the LFS verify action when offered
  int64_t max_regular_bytes = 10 << 20;  // "regular" files are inlined into the commit
};

// What the Hub holds at a path.
struct HfRepoFile {
  std::string path;
  int64_t size = 0;
  std::string git_oid;     // git blob sha1
  std::string lfs_sha256;  // "" for a regular (non-LFS) file
};

struct HfUploadRequest {
  std::string repo_id;  // "owner/name"
  std::string revision = "main";
  std::string local_path;
  std::string path_in_repo;  // RenderHfPath("build/{variant}/{wheel}", ...)
  std::string sha256_hex;    // empty: hashed from the file
  std::string summary;       // empty: "Upload <path_in_repo>"
  std::string description;
  bool replace = false;  // overwrite a path that holds other bytes
};

enum class HfOutcome { kCommitted, kAlreadyPresent };

struct HfUploadResult {
  HfOutcome outcome = HfOutcome::kCommitted;
  std::string commit_oid;  // the commit that holds the file ("" when already present)
  std::string commit_url;
};

class HfHubClient {
 public:
  // `http` must outlive the client. Registers options.token as a log secret.
  HfHubClient(httpc::RetryingHttpClient& http, HfOptions options);

  // Creates `repo_id` ("owner/name"); OK when it exists already (409).
  Status CreateRepo(const std::string& repo_id, bool private_repo);

  // On success returns the commit sha `revision` points at.
  Result<std::string> GetRevisionSha(const std::string& repo_id, const std::string& revision);

  // On success returns the file at `path`, or std::nullopt when there is none.
  Result<std::optional<HfRepoFile>> GetPathInfo(const std::string& repo_id,
                                                const std::string& revision,
                                                const std::string& path);

  // On success returns the upload mode the Hub wants for the file: "lfs" or "regular".
  Result<std::string> Preupload(const std::string& repo_id, const std::string& revision,
                                const std::string& path_in_repo, const std::string& local_path,
                                int64_t size);

  // Stores the file's bytes as LFS object `sha256_hex` (basic or multipart transfer, as
  // the batch answer says); OK at once when the Hub already has the object.
  Status UploadLfsObject(const std::string& repo_id, const std::string& revision,
                         const std::string& local_path, const std::string& sha256_hex,
                         int64_t size);

  // The whole flow with the check-before-retry commit loop. On success the file is at
  // request.path_in_repo on request.revision with the file's sha256. Fails with
  // AlreadyExists ("conflict") when the path holds other bytes and !request.replace.
  Result<HfUploadResult> UploadFile(const HfUploadRequest& request);

 private:
  struct LocalFile;
  httpc::HttpRequest NewRequest(const std::string& method, const std::string& url,
                                bool with_token) const;
  std::string ApiRepoUrl(const std::string& repo_id) const;
  Result<LocalFile> ResolveLocalFile(const HfUploadRequest& request) const;
  Status PutBasic(const std::string& href, const httpc::HttpHeaders& headers,
                  const std::string& local_path, int64_t size);
  Status PutMultipart(const std::string& href, const boost::json::object& header,
                      const std::string& sha256_hex, const std::string& local_path, int64_t size);
  Status Verify(const boost::json::object& action, const std::string& sha256_hex, int64_t size);
  // One commit attempt, never retried here.
  Result<HfUploadResult> CommitOnce(const HfUploadRequest& request, const LocalFile& file,
                                    const std::string& parent);
  // After a failed commit: OK with the result when the file is there with our digest;
  // otherwise updates *head for the next attempt.
  Result<std::optional<HfUploadResult>> CheckLanded(const HfUploadRequest& request,
                                                    const LocalFile& file, std::string* head);

  httpc::RetryingHttpClient& http_;
  const HfOptions options_;
};

// Fills "{variant}" and "{wheel}" in a path template such as "build/{variant}/{wheel}".
std::string RenderHfPath(const std::string& path_template, const std::string& variant,
                         const std::string& wheel);

// The kernels-hub variant name, "torch28-cxx11-cu128-x86_64-linux", from torch "2.8",
// CUDA "12.8" and platform "linux_x86_64".
std::string HfKernelVariant(const std::string& torch, const std::string& cuda,
                            const std::string& platform);

// The git blob id of `content`: sha1("blob <size>\0" + content), lowercase hex.
std::string GitBlobSha1(const std::string& content);

}  // namespace farm::publish

#endif  // FARM_DAEMON_PUBLISH_HF_HUB_H_
