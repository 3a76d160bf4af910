// AWS Signature Version 4 (docs.aws.amazon.com, "Signature Version 4 signing process" and
// the S3 API's "Authenticating Requests"): the canonical request, the string to sign, the
// derived signing key, and the two ways S3 takes a signature: an Authorization header, and
// the query parameters of a presigned URL. Pure functions over plain values; thread-safe.
#ifndef FARM_DAEMON_STORE_BLOB_SIGV4_H_
#define FARM_DAEMON_STORE_BLOB_SIGV4_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace farm::s3 {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // temporary credentials only
};

// The hash S3 accepts in place of a payload's for presigned URLs.
inline constexpr char kUnsignedPayload[] = "UNSIGNED-PAYLOAD";

using Params = std::vector<std::pair<std::string, std::string>>;

// What the signature covers. `path` is the decoded absolute path ("/bucket/a b.whl");
// `query` and `headers` hold decoded names and values; `payload_sha256` is the lowercase
// hex digest of the body or kUnsignedPayload.
struct SignableRequest {
  std::string method;
  std::string path;
  Params query;
  Params headers;  // must include "host"
  std::string payload_sha256;
};

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters stay, everything else
// becomes %XX (upper case); '/' stays when `keep_slash`.
std::string UriEncode(std::string_view text, bool keep_slash);

// "20150830T123600Z" for Unix seconds.
std::string AmzDate(int64_t unix_s);

// "<yyyymmdd>/<region>/<service>/aws4_request".
std::string CredentialScope(std::string_view amz_date, std::string_view region,
                            std::string_view service);

// The canonical query string: encoded names and values, sorted, joined with '&'.
std::string CanonicalQuery(const Params& query);

// The canonical request and the ';'-joined lowercase names of the signed headers.
std::string CanonicalRequest(const SignableRequest& request);
std::string SignedHeaders(const Params& headers);

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);

// Hex HMAC-SHA256 of `string_to_sign` under the key derived from the secret for
// (date, region, service).
std::string Signature(std::string_view secret_access_key, std::string_view amz_date,
                      std::string_view region, std::string_view service,
                      std::string_view string_to_sign);

// Adds x-amz-date, x-amz-content-sha256 (from payload_sha256), x-amz-security-token (with
// a session token) to `request->headers` and returns the Authorization header's value.
std::string SignWithHeader(SignableRequest* request, const AwsCredentials& credentials,
                           std::string_view region, std::string_view service, int64_t unix_s);

// Adds the X-Amz-* parameters of a presigned URL valid `expires_s` seconds to
// `request->query` (host is the only signed header; the payload is unsigned).
void Presign(SignableRequest* request, const AwsCredentials& credentials, std::string_view region,
             std::string_view service, int64_t unix_s, int64_t expires_s);

}  // namespace farm::s3

#endif  // FARM_DAEMON_STORE_BLOB_SIGV4_H_
