// S3Client: the few S3 operations the blob store needs (HEAD, PUT, ranged GET, DELETE,
// multipart upload, listings of keys and of unfinished uploads, presigned GET URLs),
// path-style addressed (<endpoint>/<bucket>/<key>), signed with SigV4 and sent through a
// httpc::HttpClient.
//
// Retries: transport failures and 500/502/503/504 answers (S3's 503 SlowDown included)
// are retried with exponential backoff and jitter, bounded by RetryLimits both in count
// and in time; each attempt is signed afresh. Every operation here is idempotent on a
// content-addressed key (a repeated PUT writes the same bytes; a repeated part upload
// replaces the part), so any of them may be repeated after a lost response; a Complete
// whose first answer was lost is answered NoSuchUpload, which CompleteMultipartUpload
// resolves by checking that the object is there.
//
// Errors: NotFound (NoSuchKey, NoSuchUpload), PermissionDenied (AccessDenied,
// SignatureDoesNotMatch), Unavailable (5xx after the retries, transport), InvalidArgument
// (EntityTooSmall and other 4xx); the message names the operation, the key, the HTTP
// status and S3's error code and message, never a credential.
//
// Thread-safety: every method may be called from several threads.
#ifndef FARM_DAEMON_STORE_BLOB_S3_CLIENT_H_
#define FARM_DAEMON_STORE_BLOB_S3_CLIENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/httpc/http_client.h"
#include "common/httpc/retrying_http_client.h"
#include "common/status.h"
#include "daemon/store/blob/sigv4.h"

namespace farm::s3 {

struct S3Config {
  std::string endpoint;  // "https://s3.eu-west-1.amazonaws.com", "http://127.0.0.1:9000"
  std::string region = "us-east-1";
  std::string bucket;
  AwsCredentials credentials;
};

struct RetryLimits {
  int max_attempts = 6;           // tries of one request, the first included
  int64_t base_backoff_ms = 200;  // doubled per retry, up to max_backoff_ms
  int64_t max_backoff_ms = 5'000;
  int64_t max_total_ms = 60'000;  // no retry starts later than this after the first try
};

// Reads S3's <Error><Code>..</Code><Message>..</Message></Error> body: "Code: Message".
std::string S3ErrorText(const std::string& body);

class S3Client {
 public:
  // `http`, `clock` and `sleeper` must outlive the client.
  S3Client(S3Config config, httpc::HttpClient& http, const Clock& clock, httpc::Sleeper& sleeper,
           RetryLimits limits = {});

  // The object's size; NotFound when there is none.
  Result<int64_t> HeadObject(const std::string& key);
  // Uploads `size` bytes of `file` whose sha256 is `sha256_hex` in one request.
  Status PutObject(const std::string& key, const std::string& file, int64_t size,
                   const std::string& sha256_hex);
  // Returns the upload id.
  Result<std::string> CreateMultipartUpload(const std::string& key);
  // Uploads bytes [offset, offset + length) of `file` as part `part` (1-based); returns
  // the part's ETag.
  Result<std::string> UploadPart(const std::string& key, const std::string& upload_id, int part,
                                 const std::string& file, int64_t offset, int64_t length);
  // `etags` in part order (part 1 first).
  Status CompleteMultipartUpload(const std::string& key, const std::string& upload_id,
                                 const std::vector<std::string>& etags);
  Status AbortMultipartUpload(const std::string& key, const std::string& upload_id);
  // Bytes [offset, offset + length) (fewer at the end); `*total` gets the object's size.
  Result<std::string> GetRange(const std::string& key, int64_t offset, int64_t length,
                               int64_t* total);
  // OK also when there was no such object.
  Status DeleteObject(const std::string& key);
  struct PendingUpload {
    std::string key;
    std::string upload_id;
    int64_t initiated_unix_s = 0;
  };
  // One page (at most 1000) of the multipart uploads begun and not completed or aborted
  // under `prefix` (ListMultipartUploads); `*marker` as for ListKeys ("key\nupload id").
  Result<std::vector<PendingUpload>> ListMultipartUploads(const std::string& prefix,
                                                          std::string* marker);
  // One page (at most 1000) of the keys under `prefix` after `*continuation` (ListObjectsV2);
  // `*continuation` becomes the next page's token, "" after the last page.
  Result<std::vector<std::string>> ListKeys(const std::string& prefix, std::string* continuation);
  // A GET URL valid `ttl_s` seconds from now. `overrides` are S3's response-* parameters
  // ("response-content-disposition", ...), signed with the rest.
  std::string PresignedGetUrl(const std::string& key, int64_t ttl_s, const Params& overrides);

 private:
  struct Call {
    std::string op;  // for messages: "PUT", "UploadPart", ...
    std::string method;
    std::string key;
    Params query;
    Params headers;
    std::string body;
    std::string body_file;
    int64_t body_offset = 0;
    int64_t body_length = -1;
    std::string payload_sha256;
  };
  // Signs and sends `call`, retrying as the header says; returns the last answer of any
  // status, or the transport error.
  Result<httpc::HttpResponse> Send(const Call& call);
  // Sends and maps a non-2xx answer to a Status.
  Result<httpc::HttpResponse> SendOk(const Call& call);
  std::string Path(const std::string& key) const;

  const S3Config config_;
  std::string host_;  // host[:port] of the endpoint, the signed Host header
  httpc::HttpClient& http_;
  const Clock& clock_;
  httpc::Sleeper& sleeper_;
  const RetryLimits limits_;
};

}  // namespace farm::s3

#endif  // FARM_DAEMON_STORE_BLOB_S3_CLIENT_H_
